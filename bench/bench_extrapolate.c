/*
 * bench_extrapolate.c — `make bench-extrapolate`: `scaletune extrapolate` on sweeps written the
 * way users write them, over a family of simulated worlds with known truth (issue 15).
 *
 * For each seed s: a sweep file over bench/llmsim in world s (bench/sim.h, sim_law_draw) with
 * wide ranges and no optimizer block, `scaletune sweep launch`, then `scaletune extrapolate
 * --factor F --json` for F = 100 and 1000. Each recommendation is run in truth (`llmsim --true`),
 * against the optimum at the same compute (`llmsim --oracle C`), and once with noise (a fixed run
 * seed) to check the predicted interval. Seeds run --jobs at a time, each in a child process that
 * writes its numbers into shared memory. Prints a Markdown table and PASS/FAIL per target; writes
 * every per-seed number to --out. Targets never change the exit status (0 unless the bench itself
 * could not run). Docs: docs/benchmarks.md, "Extrapolation on users' sweeps".
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/bench_extrapolate.h"

/* ---- running programs --------------------------------------------------------------------- */

/* Runs a shell command; its exit status, or -1 when it did not exit normally. */
static int run_status(const char *cmd)
{
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

/* Runs cmd and parses the last line of its standard output that starts with '{'. */
static json_t *run_json_line(const char *cmd, int *rc)
{
    FILE *p = popen(cmd, "r");
    if (!p) {
        *rc = -1;
        return NULL;
    }
    char line[8192], last[8192] = "";
    while (fgets(line, sizeof(line), p))
        if (line[0] == '{')
            memcpy(last, line, sizeof(last));
    int st = pclose(p);
    *rc = st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return last[0] ? json_loads(last, 0, NULL) : NULL;
}

static double jnum(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* ---- one extrapolation --------------------------------------------------------------------- */

/* A --style nanogpt or hf recommendation as llmsim's settings (par_name's order): N = 12 x
 * depth x width^2, tokens = steps x batch, warmup as a fraction. */
static int read_styled_rec(const json_t *rec, int style, double *v)
{
    int hf = style == STYLE_HF;
    double L = jnum(rec, hf ? "num_hidden_layers" : "n_layer");
    double d = jnum(rec, hf ? "hidden_size" : "d_model");
    double it = jnum(rec, hf ? "max_steps" : "max_iters");
    double bs = hf ? 1024 * jnum(rec, "per_device_train_batch_size") : jnum(rec, "batch_size");
    v[0] = 12 * L * d * d;
    v[1] = it * bs;
    v[2] = jnum(rec, "learning_rate");
    v[3] = bs;
    v[4] = hf ? jnum(rec, "warmup_ratio") : jnum(rec, "warmup_iters") / it;
    v[5] = jnum(rec, "weight_decay");
    int ok = 1;
    for (int k = 0; k < N_PAR; k++)
        ok = ok && isfinite(v[k]);
    return ok;
}

/* Reads extrapolate's JSON: the recommendation, the interval and "safe" (absent: -1). */
static int read_xp(const char *path, int style, xp_eval *e)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root) {
        snprintf(e->err, ERR_MAX, "%.40s: %.150s", path, jerr.text);
        return -1;
    }
    const json_t *safe = json_object_get(root, "safe");
    e->safe = json_is_boolean(safe) ? json_is_true(safe) : -1;
    const char *why = json_string_value(json_object_get(root, "unsafe_reason"));
    snprintf(e->reason, ERR_MAX, "%s", why ? why : "");
    e->compute = jnum(root, "compute");
    e->p_diverge = jnum(root, "p_diverge");
    const json_t *rec = json_object_get(root, "recommended");
    const json_t *pred = json_object_get(root, "predicted");
    e->pred = jnum(pred, "objective");
    e->lo = jnum(pred, "lo");
    e->hi = jnum(pred, "hi");
    int ok = isfinite(e->compute) && isfinite(e->lo) && isfinite(e->hi);
    if (style != STYLE_CHINCHILLA)
        ok = ok && read_styled_rec(rec, style, e->rec);
    for (int k = 0; k < N_PAR && style == STYLE_CHINCHILLA; k++) {
        e->rec[k] = jnum(rec, par_name[k]);
        ok = ok && isfinite(e->rec[k]);
    }
    const char *opt = json_string_value(json_object_get(rec, "optimizer"));
    e->rec_opt = !opt ? -1 : !strcmp(opt, "lion") ? 1 : 0;
    json_decref(root);
    if (!ok)
        snprintf(e->err, ERR_MAX, "%.40s: no complete recommendation", path);
    return ok ? 0 : -1;
}

/* The llmsim command for the recommended setting in world `seed`, plus `tail`. */
static void rec_cmd(const bench_cfg *cfg, int seed, const xp_eval *e, const char *tail, char *buf,
                    size_t n)
{
    size_t at = (size_t)snprintf(buf, n, "'%s' --world %d", cfg->llmsim, seed);
    for (int k = 0; k < N_PAR && at < n; k++)
        at += (size_t)snprintf(buf + at, n - at, " %s %.17g", par_flag[k], e->rec[k]);
    if (e->rec_opt == 1 && at < n)
        at += (size_t)snprintf(buf + at, n - at, " --optimizer lion");
    if (at < n)
        snprintf(buf + at, n - at, " %s", tail);
}

/* The recommendation in truth, the oracle at its compute, and one noisy run of it. */
static void judge_xp(const bench_cfg *cfg, int seed, xp_eval *e)
{
    char cmd[2 * PATH_CHARS];
    int rc;
    rec_cmd(cfg, seed, e, "--true 2>/dev/null", cmd, sizeof(cmd));
    json_t *t = run_json_line(cmd, &rc);
    e->invalid = rc != 0 || !t;
    e->diverged = !e->invalid && jnum(t, "diverged") != 0;
    e->true_loss = e->invalid || e->diverged ? INFINITY : jnum(t, "loss");
    json_decref(t);

    /* the optimum over the optimizers the sweep offers */
    e->oracle_loss = INFINITY;
    for (int o = 0; o <= cfg->opt_choice; o++) {
        snprintf(cmd, sizeof(cmd), "'%s' --world %d --oracle %.17g --optimizer %s", cfg->llmsim,
                 seed, e->compute, o ? "lion" : "adamw");
        t = run_json_line(cmd, &rc);
        e->oracle_loss = fmin(e->oracle_loss, rc == 0 ? jnum(t, "val_loss") : NAN);
        json_decref(t);
    }
    e->regret = e->true_loss / e->oracle_loss - 1.0;

    char tail[64];
    snprintf(tail, sizeof(tail), "--seed %d --steps-to-report 1 2>/dev/null", RUN_SEED + seed);
    rec_cmd(cfg, seed, e, tail, cmd, sizeof(cmd));
    t = run_json_line(cmd, &rc);
    const char *ev = json_string_value(json_object_get(t, "event"));
    e->observed = rc == 0 && ev && !strcmp(ev, "final") ? jnum(t, "val_loss") : NAN;
    json_decref(t);
    e->covered = e->observed >= e->lo && e->observed <= e->hi;
    e->covered_true = e->true_loss >= e->lo && e->true_loss <= e->hi;
}

/* One extrapolation of the sweep in the current directory (the seed's). */
static void run_xp(const bench_cfg *cfg, int seed, double factor, xp_eval *e)
{
    char out[64], cmd[PATH_CHARS + 256];
    snprintf(out, sizeof(out), "x%.0f.json", factor);
    remove(out);
    snprintf(
        cmd, sizeof(cmd),
        "'%s' extrapolate --db sweep.db --factor %g --json --out %s%s %s >/dev/null 2>x%.0f.err",
        cfg->scaletune, factor, out, cfg->pass_config ? " --config sweep.yaml" : "", cfg->xp_flags,
        factor);
    e->rc = run_status(cmd);
    if (e->rc != 0 && e->rc != 3) {
        snprintf(e->err, ERR_MAX, "extrapolate exited %d (see seed-%d/x%.0f.err)", e->rc, seed,
                 factor);
        return;
    }
    int ok = read_xp(out, cfg->style, e) == 0;
    e->refused = e->rc == 3 || e->safe == 0;
    if (!ok)
        return;
    e->has_rec = 1;
    judge_xp(cfg, seed, e);
}

/*
 * Everything for one seed, in a child process working in WORK/seed-S (emptied first): the
 * sweep file, the sweep, its export, both extrapolations.
 */
static void run_seed(const bench_cfg *cfg, seed_result *r)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char dir[32], cmd[2 * PATH_CHARS + 256];
    snprintf(dir, sizeof(dir), "seed-%d", r->seed);
    if (cfg->reuse)
        snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s'", cfg->work, dir);
    else
        snprintf(cmd, sizeof(cmd), "rm -rf '%s/%s' && mkdir -p '%s/%s'", cfg->work, dir, cfg->work,
                 dir);
    sim_law_draw((uint64_t)r->seed, &r->law);
    for (int k = 0; k < N_FACTOR; k++)
        r->f[k].rc = -1;
    r->sweep_rc = -1;
    if (run_status(cmd) != 0 || chdir(cfg->work) != 0 || chdir(dir) != 0)
        return;
    if (cfg->reuse && access("sweep.db", R_OK) == 0) {
        /* as bx_write_sweep, which wrote the stored file */
        int plain = cfg->style == STYLE_CHINCHILLA;
        r->expr = plain && r->seed % 2 == 0;
        r->linear_warmup = plain ? r->seed % 4 == 1 || r->seed % 4 == 2 : cfg->style == STYLE_HF;
        r->sweep_rc = 0;
    } else {
        if (bx_write_sweep(cfg, r, "sweep.yaml") != 0)
            return;
        snprintf(cmd, sizeof(cmd), "'%s' sweep launch sweep.yaml --db sweep.db >sweep.log 2>&1",
                 cfg->scaletune);
        r->sweep_rc = run_status(cmd);
    }
    snprintf(cmd, sizeof(cmd), "'%s' sweep export --db sweep.db --json --out export.json",
             cfg->scaletune);
    if (run_status(cmd) == 0)
        bx_read_export("export.json", r);
    for (int k = 0; k < N_FACTOR; k++)
        run_xp(cfg, r->seed, factors[k], &r->f[k]);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r->seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    r->done = 1;
}

/* Runs every seed, cfg->jobs child processes at a time; results land in shared memory. */
static int run_all(const bench_cfg *cfg, seed_result *res)
{
    long next = 0, running = 0, finished = 0;
    while (finished < cfg->n_seeds) {
        while (running < cfg->jobs && next < cfg->n_seeds) {
            fflush(NULL);
            pid_t pid = fork();
            if (pid < 0)
                return -1;
            if (pid == 0) {
                run_seed(cfg, &res[next]);
                _exit(0);
            }
            next++;
            running++;
        }
        int st;
        if (wait(&st) < 0)
            return -1;
        running--;
        finished++;
        fprintf(stderr, "bench-extrapolate: %ld of %ld seeds done\n", finished, cfg->n_seeds);
    }
    return 0;
}

/* ---- summary ------------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Over the seeds, for one factor. Regret statistics are over the recommendations that were not
 * refused (a diverged or invalid one has regret +inf). */
typedef struct xp_summary {
    long n_seeds, n_rec, n_accepted, n_refused, n_diverged, n_invalid, n_refused_would_diverge;
    long n_regret_lt1, n_regret_lt2, n_covered, n_covered_true, n_failed;
    double median, worst;
    double half_width_median; /* of the predicted interval, relative, over recommendations */
    double sweep_cost_median; /* what the sweeps spent */
} xp_summary;

static double median_of(double *v, long m);

static xp_summary summarise(const seed_result *res, long n, int k)
{
    xp_summary s;
    memset(&s, 0, sizeof(s));
    s.n_seeds = n;
    double reg[MAX_SEEDS], hw[MAX_SEEDS], cost[MAX_SEEDS];
    long n_hw = 0;
    for (long i = 0; i < n; i++)
        cost[i] = res[i].sweep_cost;
    s.sweep_cost_median = median_of(cost, n);
    for (long i = 0; i < n; i++) {
        const xp_eval *e = &res[i].f[k];
        if (e->has_rec)
            hw[n_hw++] = 0.5 * (e->hi - e->lo) / e->pred;
        if (!e->has_rec && !e->refused) {
            s.n_failed++;
            continue;
        }
        s.n_rec += e->has_rec;
        s.n_covered += e->has_rec && e->covered;
        s.n_covered_true += e->has_rec && e->covered_true;
        if (e->refused) {
            s.n_refused++;
            s.n_refused_would_diverge += e->has_rec && e->diverged;
            continue;
        }
        reg[s.n_accepted++] = e->regret;
        s.n_diverged += e->diverged;
        s.n_invalid += e->invalid;
        s.n_regret_lt1 += e->regret < 0.01;
        s.n_regret_lt2 += e->regret < 0.02;
    }
    s.half_width_median = median_of(hw, n_hw);
    long m = s.n_accepted;
    s.median = median_of(reg, m);
    s.worst = m == 0 ? NAN : reg[m - 1]; /* median_of sorted reg */
    return s;
}

/* Sorts v[0..m-1] and returns its median (NAN when m is 0). */
static double median_of(double *v, long m)
{
    qsort(v, (size_t)m, sizeof(double), cmp_double);
    return m == 0 ? NAN : m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

static const char *pct(double x, char *buf)
{
    if (isnan(x))
        return "-";
    if (isinf(x))
        return "inf";
    snprintf(buf, 32, "%.2f%%", 100.0 * x);
    return buf;
}

/* The predicted interval's half-width relative to the prediction. */
static double half_width(const xp_eval *e)
{
    return 0.5 * (e->hi - e->lo) / e->pred;
}

/* --optimizer-choice: the optimizer each extrapolation recommended (the better one is Lion in
 * every world, bench/sim.h). */
static void print_optimizers(const seed_result *res, long n)
{
    printf("\n| seed | 100x optimizer | 1000x optimizer |\n|---|---|---|\n");
    for (long i = 0; i < n; i++) {
        const char *o[N_FACTOR];
        for (int k = 0; k < N_FACTOR; k++)
            o[k] = !res[i].f[k].has_rec       ? "-"
                   : res[i].f[k].rec_opt == 1 ? "lion"
                   : res[i].f[k].rec_opt == 0 ? "adamw"
                                              : "none";
        printf("| %d | %s | %s |\n", res[i].seed, o[0], o[1]);
    }
}

static void print_per_seed(const seed_result *res, long n)
{
    char b1[32], b2[32];
    printf(
        "\n| seed | expr | warmup space | runs | over budget | sweep cost | 100x regret | 100x | "
        "100x +/- | 1000x regret | 1000x | seconds |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (long i = 0; i < n; i++) {
        const seed_result *r = &res[i];
        const char *tag[N_FACTOR];
        for (int k = 0; k < N_FACTOR; k++) {
            const xp_eval *e = &r->f[k];
            tag[k] = e->refused    ? (e->diverged ? "refused (would diverge)" : "refused")
                     : !e->has_rec ? "failed"
                     : e->invalid  ? "invalid setting"
                     : e->diverged ? "DIVERGES"
                     : e->covered  ? "covered"
                                   : "not covered";
        }
        char b3[32];
        printf("| %d | %s | %s | %zu | %zu | %.3g | %s | %s | %s | %s | %s | %.0f |\n", r->seed,
               r->expr ? "yes" : "no", r->linear_warmup ? "linear" : "logit", r->n_runs,
               r->n_over_budget, r->sweep_cost, r->f[0].has_rec ? pct(r->f[0].regret, b1) : "-",
               tag[0], r->f[0].has_rec ? pct(half_width(&r->f[0]), b3) : "-",
               r->f[1].has_rec ? pct(r->f[1].regret, b2) : "-", tag[1], r->seconds);
    }
}

/* The table over the seeds and a PASS/FAIL line per target (issue 15, scaled to n seeds). */
static void print_summary(const seed_result *res, long n, const xp_summary *s, double refusal)
{
    char b1[32], b2[32];
    print_per_seed(res, n);
    printf("\n| over %ld seeds | 100x | 1000x |\n|---|---|---|\n", n);
    printf("| regret median (accepted) | %s | %s |\n", pct(s[0].median, b1), pct(s[1].median, b2));
    printf("| regret worst (accepted) | %s | %s |\n", pct(s[0].worst, b1), pct(s[1].worst, b2));
    printf("| interval half-width, median | %s | %s |\n", pct(s[0].half_width_median, b1),
           pct(s[1].half_width_median, b2));
    printf("| sweep cost, median | %.3g | |\n", s[0].sweep_cost_median);
    size_t n_stopped = 0, n_all = 0;
    for (long i = 0; i < n; i++)
        n_stopped += res[i].n_stopped, n_all += res[i].n_runs;
    printf("| runs stopped early | %zu of %zu | |\n", n_stopped, n_all);
    printf("| regret < 1%% | %ld | %ld |\n", s[0].n_regret_lt1, s[1].n_regret_lt1);
    printf("| regret < 2%% | %ld | %ld |\n", s[0].n_regret_lt2, s[1].n_regret_lt2);
    printf("| diverge in truth (accepted) | %ld | %ld |\n", s[0].n_diverged, s[1].n_diverged);
    printf("| invalid setting (accepted) | %ld | %ld |\n", s[0].n_invalid, s[1].n_invalid);
    printf("| refused as unsafe (of them would diverge) | %ld (%ld) | %ld (%ld) |\n",
           s[0].n_refused, s[0].n_refused_would_diverge, s[1].n_refused,
           s[1].n_refused_would_diverge);
    printf("| no recommendation (error) | %ld | %ld |\n", s[0].n_failed, s[1].n_failed);
    printf("| observed loss in [lo, hi] | %ld of %ld | %ld of %ld |\n", s[0].n_covered, n,
           s[1].n_covered, n);
    printf("| true loss in [lo, hi] | %ld of %ld | %ld of %ld |\n", s[0].n_covered_true, n,
           s[1].n_covered_true, n);
    printf("\nrefusals per sweep (over_budget / runs, all sweeps): %.2f%%\n\n", 100.0 * refusal);

    long need1 = (long)ceil(0.95 * (double)n);
    long cov_lo = lround(0.85 * (double)n), cov_hi = lround(0.95 * (double)n);
    char w1[96], wc[2][96];
    snprintf(w1, sizeof(w1), "100x: regret < 1%% in >= %ld of %ld seeds (19 of 20)", need1, n);
    for (int k = 0; k < N_FACTOR; k++)
        snprintf(wc[k], sizeof(wc[k]),
                 "%.0fx: observed loss covered in %ld-%ld of %ld (17-19 of 20)", factors[k], cov_lo,
                 cov_hi, n);
    struct {
        int pass;
        const char *what;
    } t[] = {
        {s[0].n_regret_lt1 >= need1, w1},
        {s[0].n_diverged == 0 && s[0].n_invalid == 0, "100x: 0 recommendations diverge"},
        {s[1].median < 0.02, "1000x: median regret < 2%"},
        {s[1].n_diverged == 0 && s[1].n_invalid == 0, "1000x: 0 recommendations diverge"},
        {s[0].n_covered >= cov_lo && s[0].n_covered <= cov_hi, wc[0]},
        {s[1].n_covered >= cov_lo && s[1].n_covered <= cov_hi, wc[1]},
        {refusal < 0.02, "refusals per sweep < 2%"},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        printf("%s  %s\n", t[i].pass ? "PASS" : "FAIL", t[i].what);
}

/* ---- JSON out ------------------------------------------------------------------------------ */

static json_t *jreal(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

/* A loss or regret: "inf" for a diverged or invalid recommendation, null when undefined. */
static json_t *jloss(double x)
{
    return isinf(x) && x > 0 ? json_string("inf") : jreal(x);
}

static json_t *xp_json(const xp_eval *e)
{
    json_t *o = json_object(), *rec = json_object();
    for (int k = 0; k < N_PAR && e->has_rec; k++)
        json_object_set_new(rec, par_name[k], jreal(e->rec[k]));
    json_object_set_new(o, "exit", json_integer(e->rc));
    json_object_set_new(o, "safe", e->safe < 0 ? json_null() : json_boolean(e->safe));
    json_object_set_new(o, "refused", json_boolean(e->refused));
    json_object_set_new(o, "unsafe_reason", e->reason[0] ? json_string(e->reason) : json_null());
    json_object_set_new(o, "has_recommendation", json_boolean(e->has_rec));
    json_object_set_new(o, "error", e->err[0] ? json_string(e->err) : json_null());
    if (!e->has_rec)
        return json_decref(rec), o;
    json_object_set_new(o, "compute", jreal(e->compute));
    if (e->rec_opt >= 0)
        json_object_set_new(rec, "optimizer", json_string(e->rec_opt ? "lion" : "adamw"));
    json_object_set_new(o, "recommended", rec);
    json_object_set_new(o, "recommended_cost", jreal(6.0 * e->rec[0] * e->rec[1]));
    json_object_set_new(o, "predicted", jreal(e->pred));
    json_object_set_new(o, "lo", jreal(e->lo));
    json_object_set_new(o, "hi", jreal(e->hi));
    json_object_set_new(o, "p_diverge", jreal(e->p_diverge));
    json_object_set_new(o, "invalid", json_boolean(e->invalid));
    json_object_set_new(o, "diverged", json_boolean(e->diverged));
    json_object_set_new(o, "true_loss", jloss(e->true_loss));
    json_object_set_new(o, "oracle_loss", jreal(e->oracle_loss));
    json_object_set_new(o, "regret", jloss(e->regret));
    json_object_set_new(o, "observed_loss", jreal(e->observed));
    json_object_set_new(o, "covered", json_boolean(e->covered));
    json_object_set_new(o, "covered_true", json_boolean(e->covered_true));
    return o;
}

static json_t *law_json(const sim_law *w)
{
    return json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "E", w->E,
                     "A", w->A, "B", w->B, "alpha", w->alpha, "beta", w->beta, "c_lr", w->c_lr,
                     "lr_pN", w->lr_pN, "lr_pD", w->lr_pD, "c_bs", w->c_bs, "bs_pD", w->bs_pD,
                     "wu_steps", w->wu_steps, "wu_min", w->wu_min, "wu_max", w->wu_max, "div_kappa",
                     w->div_kappa, "noise_sd", w->noise_sd);
}

static json_t *summary_json(const xp_summary *s)
{
    json_t *o = json_pack(
        "{s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "regret_median", jloss(s->median),
        "regret_worst", jloss(s->worst), "n_regret_lt_1pct", (json_int_t)s->n_regret_lt1,
        "n_regret_lt_2pct", (json_int_t)s->n_regret_lt2, "n_accepted", (json_int_t)s->n_accepted,
        "n_diverged", (json_int_t)s->n_diverged, "n_invalid", (json_int_t)s->n_invalid, "n_refused",
        (json_int_t)s->n_refused, "n_refused_would_diverge", (json_int_t)s->n_refused_would_diverge,
        "n_covered", (json_int_t)s->n_covered, "n_covered_true", (json_int_t)s->n_covered_true,
        "n_failed", (json_int_t)s->n_failed);
    json_object_set_new(o, "half_width_median", jreal(s->half_width_median));
    json_object_set_new(o, "sweep_cost_median", jreal(s->sweep_cost_median));
    return o;
}

static int write_json(const bench_cfg *cfg, const seed_result *res, const xp_summary *s,
                      double refusal)
{
    json_t *root = json_object(), *seeds = json_array(), *sum = json_object();
    for (long i = 0; i < cfg->n_seeds; i++) {
        const seed_result *r = &res[i];
        json_t *o =
            json_pack("{s:i,s:b,s:b,s:i,s:I,s:I,s:I,s:I,s:f,s:o}", "seed", r->seed, "expr", r->expr,
                      "linear_warmup", r->linear_warmup, "sweep_exit", r->sweep_rc, "runs",
                      (json_int_t)r->n_runs, "branches", (json_int_t)r->n_branches, "failed",
                      (json_int_t)r->n_failed, "over_budget", (json_int_t)r->n_over_budget,
                      "seconds", r->seconds, "law", law_json(&r->law));
        json_object_set_new(o, "sweep_cost", jreal(r->sweep_cost));
        json_object_set_new(o, "stopped_early", json_integer((json_int_t)r->n_stopped));
        for (int k = 0; k < N_FACTOR; k++) {
            char key[32];
            snprintf(key, sizeof(key), "x%.0f", factors[k]);
            json_object_set_new(o, key, xp_json(&r->f[k]));
        }
        json_array_append_new(seeds, o);
    }
    for (int k = 0; k < N_FACTOR; k++) {
        char key[32];
        snprintf(key, sizeof(key), "x%.0f", factors[k]);
        json_object_set_new(sum, key, summary_json(&s[k]));
    }
    json_object_set_new(sum, "refusals_per_sweep", json_real(refusal));
    json_object_set_new(root, "seeds", seeds);
    json_object_set_new(root, "summary", sum);
    json_object_set_new(root, "run_seed_base", json_integer(RUN_SEED));
    json_object_set_new(root, "pass_config", json_boolean(cfg->pass_config));
    json_object_set_new(root, "xp_flags", json_string(cfg->xp_flags));
    json_object_set_new(root, "first_seed", json_integer(cfg->first_seed));
    json_object_set_new(root, "mode", json_string(cfg->mode));
    json_object_set_new(root, "runs", json_integer(cfg->runs));
    json_object_set_new(root, "budget_cost", json_real(cfg->budget_cost));
    int rc = json_dump_file(root, cfg->out, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    json_decref(root);
    return rc;
}

/* ---- main ---------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fputs("usage: bench_extrapolate [--seeds N] [--jobs J] [--scaletune PATH] [--llmsim PATH]\n"
          "                         [--work DIR] [--out FILE] [--pass-config]\n"
          "                         [--mode best|random|study] [--runs N] [--budget-cost C]\n"
          "                         [--reuse]\n"
          "                         [--early-stop] [--paced] [--reports K] [--xp-flags FLAGS]\n"
          "                         [--first-seed K] [--optimizer-choice] [--branches F1,F2]\n"
          "                         [--style chinchilla|nanogpt|hf]\n"
          "  --seeds N       seeds (worlds) 1..N (default 20)\n"
          "  --first-seed K  seeds K..K+N-1 instead (a held-out set of worlds, e.g. 21)\n"
          "  --jobs J        seeds run at once (default 2)\n"
          "  --scaletune P   the CLI (default build/scaletune)\n"
          "  --llmsim P      the simulated trainer (default build/bench/llmsim/llmsim)\n"
          "  --work DIR      sweep files, stores and logs (default build/bench/extrapolate)\n"
          "  --out FILE      every per-seed number (default build/bench/extrapolate.json)\n"
          "  --pass-config   also give extrapolate the sweep file (--config; default: not,\n"
          "                  as `scaletune extrapolate --db DB --factor F` is run by users)\n"
          "  --mode M        the sweep's optimizer: best (no optimizer block, default), random\n"
          "                  (num_random_samples = runs), study (goal: extrapolate at 100x)\n"
          "  --runs N        budget.runs of each sweep (default 100)\n"
          "  --budget-cost C budget.cost of each sweep in FLOPs as well (default: none): the\n"
          "                  sweep ends at N runs or at C spent, whichever comes first, so that\n"
          "                  modes can be compared at equal sweep cost (bench/study.sh)\n"
          "  --reuse         keep each seed's stored sweep when there is one; extrapolate again\n"
          "  --early-stop    early_stopping: {enabled: true} in each sweep\n"
          "  --paced         llmsim --steps-to-report 20 --sleep-ms 150: a run takes 3 s, so that\n"
          "                  it can be stopped part-way (its final loss does not change)\n"
          "  --reports K     llmsim --steps-to-report K without the pause: each run stores a\n"
          "                  curve of K points (for extrapolate's --curves, via --xp-flags)\n"
          "  --branches F    cooldown branches the controller spawns off each succeeded run at\n"
          "                  these fractions of its steps (e.g. 0.3,0.6; decay_fraction 0.2;\n"
          "                  llmsim --checkpoints at each of its reports, --branch-step)\n"
          "  --optimizer-choice  a categorical optimizer: {choices: [adamw, lion]} in each sweep\n"
          "                  (llmsim's Lion: lr optimum and boundary 0.3x, loss 0.99x); the\n"
          "                  regret is against the better optimizer's optimum\n"
          "  --style S       chinchilla (default): parameters N, tokens, lr, batch, warmup,\n"
          "                  weight_decay; nanogpt: n_layer, d_model, max_iters, batch_size\n"
          "                  (tokens), learning_rate, warmup_iters, weight_decay, as a nanoGPT\n"
          "                  user writes them (no cost expression); hf: hidden_size,\n"
          "                  num_hidden_layers, max_steps, per_device_train_batch_size\n"
          "                  (sequences), learning_rate, warmup_ratio and weight_decay (linear\n"
          "                  from 0), as for Hugging Face's Trainer\n"
          "  --xp-flags F    appended to each `scaletune extrapolate` command, e.g. with --reuse\n"
          "                  '--bootstrap 100 --no-backtest' to score an engine change quickly\n",
          f);
}

static int resolve(const char *in, char *out, const char *what)
{
    if (!realpath(in, out)) {
        fprintf(stderr, "bench_extrapolate: %s '%s': %s\n", what, in, strerror(errno));
        return -1;
    }
    return 0;
}

static int parse_args(int argc, char **argv, bench_cfg *cfg)
{
    const char *st = "build/scaletune", *sim = "build/bench/llmsim/llmsim";
    const char *work = "build/bench/extrapolate";
    cfg->out = "build/bench/extrapolate.json";
    cfg->n_seeds = 20;
    cfg->first_seed = 1;
    cfg->jobs = 2;
    cfg->pass_config = 0;
    cfg->xp_flags = "";
    cfg->mode = "best";
    cfg->runs = 100;
    cfg->budget_cost = 0;
    cfg->reuse = 0;
    cfg->early_stop = 0;
    cfg->branches = NULL;
    cfg->paced = 0;
    cfg->reports = 0;
    cfg->style = STYLE_CHINCHILLA;
    cfg->opt_choice = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            return usage(stdout), 1;
        if (!strcmp(a, "--pass-config")) {
            cfg->pass_config = 1;
            continue;
        }
        if (!strcmp(a, "--reuse")) {
            cfg->reuse = 1;
            continue;
        }
        if (!strcmp(a, "--early-stop")) {
            cfg->early_stop = 1;
            continue;
        }
        if (!strcmp(a, "--paced")) {
            cfg->paced = 1;
            continue;
        }
        if (!strcmp(a, "--optimizer-choice")) {
            cfg->opt_choice = 1;
            continue;
        }
        if (!v)
            return usage(stderr), -1;
        if (!strcmp(a, "--seeds"))
            cfg->n_seeds = strtol(v, NULL, 10);
        else if (!strcmp(a, "--jobs"))
            cfg->jobs = strtol(v, NULL, 10);
        else if (!strcmp(a, "--scaletune"))
            st = v;
        else if (!strcmp(a, "--llmsim"))
            sim = v;
        else if (!strcmp(a, "--work"))
            work = v;
        else if (!strcmp(a, "--out"))
            cfg->out = v;
        else if (!strcmp(a, "--mode"))
            cfg->mode = v;
        else if (!strcmp(a, "--runs"))
            cfg->runs = strtol(v, NULL, 10);
        else if (!strcmp(a, "--budget-cost"))
            cfg->budget_cost = strtod(v, NULL);
        else if (!strcmp(a, "--reports"))
            cfg->reports = strtol(v, NULL, 10);
        else if (!strcmp(a, "--first-seed"))
            cfg->first_seed = strtol(v, NULL, 10);
        else if (!strcmp(a, "--xp-flags"))
            cfg->xp_flags = v;
        else if (!strcmp(a, "--branches") && strspn(v, "0123456789., ") == strlen(v) && *v)
            cfg->branches = v;
        else if (!strcmp(a, "--style") && !strcmp(v, "chinchilla"))
            cfg->style = STYLE_CHINCHILLA;
        else if (!strcmp(a, "--style") && !strcmp(v, "nanogpt"))
            cfg->style = STYLE_NANOGPT;
        else if (!strcmp(a, "--style") && !strcmp(v, "hf"))
            cfg->style = STYLE_HF;
        else
            return usage(stderr), -1;
        i++;
    }
    if (strcmp(cfg->mode, "best") && strcmp(cfg->mode, "random") && strcmp(cfg->mode, "study")) {
        fprintf(stderr, "bench_extrapolate: --mode is best, random or study, not '%s'\n",
                cfg->mode);
        return -1;
    }
    if (cfg->style != STYLE_CHINCHILLA && (cfg->opt_choice || cfg->paced || cfg->branches)) {
        fprintf(stderr, "bench_extrapolate: --style nanogpt or hf has no --optimizer-choice, "
                        "--paced or --branches\n");
        return -1;
    }
    if (cfg->runs < 2 || cfg->runs > 100000) {
        fprintf(stderr, "bench_extrapolate: --runs in [2, 100000]\n");
        return -1;
    }
    if (cfg->reports < 0 || cfg->reports > 1000) {
        fprintf(stderr, "bench_extrapolate: --reports in [0, 1000]\n");
        return -1;
    }
    if (!(cfg->budget_cost >= 0) || !isfinite(cfg->budget_cost)) {
        fprintf(stderr, "bench_extrapolate: --budget-cost is a finite cost >= 0 (FLOPs)\n");
        return -1;
    }
    if (cfg->n_seeds < 1 || cfg->n_seeds > MAX_SEEDS || cfg->jobs < 1 || cfg->jobs > 64 ||
        cfg->first_seed < 1 || cfg->first_seed > 1000000) {
        fprintf(stderr,
                "bench_extrapolate: --seeds in [1, %d], --jobs in [1, 64], --first-seed in "
                "[1, 1000000]\n",
                MAX_SEEDS);
        return -1;
    }
    if (mkdir(work, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "bench_extrapolate: cannot create %s: %s\n", work, strerror(errno));
        return -1;
    }
    if (resolve(st, cfg->scaletune, "--scaletune") || resolve(sim, cfg->llmsim, "--llmsim") ||
        resolve(work, cfg->work, "--work"))
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    bench_cfg cfg;
    int a = parse_args(argc, argv, &cfg);
    if (a != 0)
        return a > 0 ? 0 : 2;
    size_t bytes = MAX_SEEDS * sizeof(seed_result);
    seed_result *res = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (res == MAP_FAILED) {
        perror("bench_extrapolate: mmap");
        return 1;
    }
    memset(res, 0, bytes);
    for (long i = 0; i < cfg.n_seeds; i++)
        res[i].seed = (int)(cfg.first_seed + i);
    fprintf(stderr, "bench-extrapolate: %ld seeds, %ld at a time; work in %s\n", cfg.n_seeds,
            cfg.jobs, cfg.work);
    if (run_all(&cfg, res) != 0) {
        perror("bench_extrapolate: fork/wait");
        return 1;
    }
    xp_summary s[N_FACTOR];
    size_t runs = 0, over = 0;
    for (long i = 0; i < cfg.n_seeds; i++) {
        runs += res[i].n_runs;
        over += res[i].n_over_budget;
    }
    double refusal = runs ? (double)over / (double)runs : NAN;
    for (int k = 0; k < N_FACTOR; k++)
        s[k] = summarise(res, cfg.n_seeds, k);
    print_summary(res, cfg.n_seeds, s, refusal);
    if (cfg.opt_choice)
        print_optimizers(res, cfg.n_seeds);
    if (write_json(&cfg, res, s, refusal) != 0) {
        fprintf(stderr, "bench_extrapolate: cannot write %s\n", cfg.out);
        return 1;
    }
    printf("\nper-seed numbers: %s; sweeps, stores and logs: %s\n", cfg.out, cfg.work);
    return 0;
}
