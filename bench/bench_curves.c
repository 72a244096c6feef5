/*
 * bench_curves.c — `make bench-curves`: how well one run's first 30% of steps predicts its final
 * validation loss. Trains a set of tiny GPTs with the reference trainer (trainer/, in-process, one
 * thread; cosine and warmup-stable-decay schedules, a few widths and learning rates) and stores
 * their curves (every step's lr and training loss, the validation loss every ~1/40 of the run)
 * in a TSV file, reused when it exists (--retrain trains again). For each run it fits, on the
 * validation points of the first 30% of steps:
 *   law     the loss-curve law of fit/curve.h (Tissue et al. 2024), C fitted on those points;
 *   law+C   the same law with C fixed to the median C of the other runs' whole-curve fits (a
 *           sweep has finished runs; a run's first 30% seldom shows any annealing);
 *   power   the peer: a plain power law in steps, L = E + A s^-a (the same fitter, lr = 1, C = 0);
 * and from the run's loss at the cut and the other runs' whole curves (leave-one-out: as if the
 * other 17 had finished, the best case of a sweep):
 *   borrow  fit_curve_borrow (fit/curve.h): the others' ln(final / loss at the same fraction)
 *           regressed locally-linearly on ln lr, ln (d_model^2 n_layer) and ln tokens (each over
 *           its range; the schedule as the group), --bandwidth and --ridge its options;
 *   borrow0 the same with the slopes held at 0: a kernel-weighted mean of the ratios;
 * then borrow_seq: borrow as a sweep meets it, the runs finishing in 50 random orders and each
 * borrowing only from the runs before it;
 * and prints each one's error on the final validation loss, then the median and worst relative
 * error per method ("BENCH curves.<method>.median_rel_err <value>", ... .worst_rel_err).
 * --seq-len and --batch change the runs' shape (default 64 x 4), --tokens-scale X multiplies every
 * run's tokens (default 1: 3e5-5e5 tokens; longer runs leave the byte-level plateaus of their first
 * part sooner, docs/benchmarks.md section 6). Not a timing benchmark. Needs
 * data/kjv (scripts/prepare-data).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fit/curve.h"
#include "trainer/gpt.h"

#define MAX_RUNS 64

typedef struct run_cfg {
    int d_model, n_layer;
    double lr;
    gpt_schedule schedule;
    double tokens;
} run_cfg;

/* tokens per step: batch 4 x seq_len 64 = 256, so that runs have 1000-2000 steps and the early
 * transient (warmup, the byte-unigram plateau near 3.1 nats) is over by ~10% of them */
#define RUN3(d, L, tok)                                                                            \
    {d, L, 1e-3, GPT_SCHEDULE_COSINE, tok}, {d, L, 1e-3, GPT_SCHEDULE_WSD, tok},                   \
        {d, L, 2e-3, GPT_SCHEDULE_COSINE, tok}, {d, L, 2e-3, GPT_SCHEDULE_WSD, tok},               \
        {d, L, 4e-3, GPT_SCHEDULE_COSINE, tok},                                                    \
    {                                                                                              \
        d, L, 4e-3, GPT_SCHEDULE_WSD, tok                                                          \
    }
static const run_cfg RUNS[] = {RUN3(32, 1, 5e5), RUN3(48, 1, 4e5), RUN3(64, 2, 3e5)};
#define N_RUNS (sizeof(RUNS) / sizeof(RUNS[0]))

/* one run's curve: lr and training loss of steps 1..n_steps; val[s-1] NAN where no eval */
typedef struct curve {
    run_cfg cfg;
    size_t n_steps;
    double *lr, *train, *val;
} curve;

static void curve_free(curve *c)
{
    free(c->lr);
    free(c->train);
    free(c->val);
}

static int curve_alloc(curve *c, size_t n)
{
    c->n_steps = n;
    c->lr = malloc(n * sizeof(double));
    c->train = malloc(n * sizeof(double));
    c->val = malloc(n * sizeof(double));
    for (size_t i = 0; c->val && i < n; i++)
        c->val[i] = NAN;
    return c->lr && c->train && c->val;
}

/* ---- training --------------------------------------------------------------------------- */

static int train_one(const run_cfg *r, const char *data_dir, int seq_len, int batch, double warmup,
                     curve *c)
{
    gpt_options o = gpt_options_default();
    o.model = (gpt_config){r->n_layer, r->d_model, 0, seq_len, batch};
    o.tokens = r->tokens;
    o.lr = r->lr;
    o.schedule = r->schedule;
    o.warmup = warmup;
    o.eval_batches = 16;
    o.seed = 7;
    snprintf(o.data, sizeof(o.data), "%s/train.txt", data_dir);
    snprintf(o.val_data, sizeof(o.val_data), "%s/val.txt", data_dir);
    char err[ST_ERRMSG_MAX];
    gpt_trainer *tr;
    if (gpt_trainer_create(&o, &gpt_backend_cpu, &tr, err) != ST_OK) {
        fprintf(stderr, "bench_curves: %s\n", err);
        return -1;
    }
    size_t n = gpt_trainer_total_steps(tr), every = n / 40 > 0 ? n / 40 : 1;
    int rc = curve_alloc(c, n) ? 0 : -1;
    c->cfg = *r;
    gpt_step_info info;
    for (size_t s = 1; rc == 0 && s <= n; s++) {
        if (gpt_trainer_step(tr, &info) != ST_OK) {
            fprintf(stderr, "bench_curves: step %zu: %s\n", s, gpt_trainer_errmsg(tr));
            rc = -1;
            break;
        }
        c->lr[s - 1] = info.lr;
        c->train[s - 1] = info.loss;
        if ((s % every == 0 || s == n) && gpt_trainer_eval(tr, &c->val[s - 1]) != ST_OK)
            rc = -1;
    }
    gpt_trainer_destroy(tr);
    return rc;
}

static int write_curves(const char *path, const curve *cs, size_t n)
{
    char tmp[1100];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fprintf(f,
            "# run\td_model\tn_layer\tpeak_lr\tschedule\ttokens\tstep\tlr\ttrain_loss\tval_loss\n");
    for (size_t k = 0; k < n; k++) {
        const run_cfg *r = &cs[k].cfg;
        for (size_t s = 0; s < cs[k].n_steps; s++)
            fprintf(f, "%zu\t%d\t%d\t%.9g\t%s\t%.9g\t%zu\t%.9g\t%.9g\t%.9g\n", k, r->d_model,
                    r->n_layer, r->lr, r->schedule == GPT_SCHEDULE_WSD ? "wsd" : "cosine",
                    r->tokens, s + 1, cs[k].lr[s], cs[k].train[s], cs[k].val[s]);
    }
    int ok = fclose(f) == 0;
    return ok && rename(tmp, path) == 0 ? 0 : -1;
}

/* one data line of the TSV: run index, config, step and its values; 0 if not one */
static int parse_line(const char *line, size_t *k, run_cfg *r, size_t *s, double v[3])
{
    char sched[16];
    if (line[0] == '#' ||
        sscanf(line, "%zu %d %d %lf %15s %lf %zu %lf %lf %lf", k, &r->d_model, &r->n_layer, &r->lr,
               sched, &r->tokens, s, &v[0], &v[1], &v[2]) != 10)
        return 0;
    r->schedule = strcmp(sched, "wsd") ? GPT_SCHEDULE_COSINE : GPT_SCHEDULE_WSD;
    return *k < MAX_RUNS && *s >= 1;
}

/* reads the TSV written above (two passes: sizes, then values); returns the number of runs or -1 */
static int read_curves(const char *path, curve *cs)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[512];
    size_t n_steps[MAX_RUNS] = {0}, k, s;
    int n = 0;
    run_cfg r;
    double v[3];
    while (fgets(line, sizeof(line), f))
        if (parse_line(line, &k, &r, &s, v)) {
            n = (int)k + 1 > n ? (int)k + 1 : n;
            n_steps[k] = s > n_steps[k] ? s : n_steps[k];
            cs[k].cfg = r;
        }
    for (int i = 0; i < n; i++)
        if (!n_steps[i] || !curve_alloc(&cs[i], n_steps[i]))
            n = -1;
    rewind(f);
    while (n > 0 && fgets(line, sizeof(line), f))
        if (parse_line(line, &k, &r, &s, v) && k < (size_t)n && s <= cs[k].n_steps) {
            cs[k].lr[s - 1] = v[0];
            cs[k].train[s - 1] = v[1];
            cs[k].val[s - 1] = v[2];
        }
    fclose(f);
    return n;
}

/* ---- predictions ------------------------------------------------------------------------ */

enum { M_LAW, M_LAW_C, M_POWER, M_BORROW0, M_BORROW, N_METHODS };
static const char *const METHOD[N_METHODS] = {"law", "law+C", "power", "borrow0", "borrow"};
#define N_OWN M_BORROW0 /* the methods that use the run's own points only */

/* the validation points of steps from..upto; returns their number */
static size_t val_points(const curve *c, size_t from, size_t upto, size_t *steps, double *loss)
{
    size_t k = 0;
    for (size_t s = from > 0 ? from : 1; s <= upto && s <= c->n_steps; s++)
        if (isfinite(c->val[s - 1])) {
            steps[k] = s;
            loss[k++] = c->val[s - 1];
        }
    return k;
}

/* fits `method` on the validation points of steps from..upto and predicts the loss at the last
 * step; law_out and rms (may be NULL) receive the law and its RMS residual. Returns 0, or -1
 * when the fit fails. */
static int predict(const curve *c, int method, double C_pooled, size_t from, size_t upto,
                   double *pred, fit_curve_law *law_out, double *rms)
{
    size_t n = c->n_steps, *steps = malloc(n * sizeof(size_t));
    double *loss = malloc(n * sizeof(double)), *ones = malloc(n * sizeof(double));
    int rc = -1;
    if (!steps || !loss || !ones)
        goto out;
    for (size_t i = 0; i < n; i++)
        ones[i] = 1.0;
    size_t k = val_points(c, from, upto, steps, loss);
    fit_curve_options o = fit_curve_options_default();
    o.fix_C = method != M_LAW;
    o.C = method == M_LAW_C ? C_pooled : 0.0;
    const double *lr = method == M_POWER ? ones : c->lr;
    fit_curve_law law;
    char err[ST_ERRMSG_MAX];
    double rss;
    if (fit_curve_fit(lr, n, steps, loss, k, &o, &law, &rss, err) != ST_OK ||
        fit_curve_predict(&law, lr, n, o.lambda, n, pred, err) != ST_OK) {
        fprintf(stderr, "bench_curves: %s\n", err);
        goto out;
    }
    if (law_out)
        *law_out = law;
    if (rms)
        *rms = sqrt(rss / (double)k);
    rc = 0;
out:
    free(steps);
    free(loss);
    free(ones);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *x, size_t n)
{
    qsort(x, n, sizeof(double), cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* ---- borrowing the shape of the sweep's other runs (fit_curve_borrow) ----------------------- */

static fit_curve_borrow_options g_borrow; /* --bandwidth, --ridge */

/* the loss of the last validation point at or before step upto: the run's loss at the cut */
static double loss_at(const curve *c, size_t upto)
{
    for (size_t s = upto < c->n_steps ? upto : c->n_steps; s >= 1; s--)
        if (isfinite(c->val[s - 1]))
            return c->val[s - 1];
    return NAN;
}

/* A run's features as a sweep of these runs would have them: ln lr, ln (d_model^2 n_layer) and ln
 * tokens, each divided by its range over the runs (so that 1 is the searched span); the schedule
 * is the group. */
static void kin_of(const curve *cs, size_t n, double *xs, int *groups, double *final)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t k = 0; k < n; k++) {
        const run_cfg *r = &cs[k].cfg;
        double *f = xs + 3 * k;
        f[0] = log(r->lr);
        f[1] = log((double)r->d_model * r->d_model * r->n_layer);
        f[2] = log(r->tokens);
        for (int q = 0; q < 3; q++)
            lo[q] = fmin(lo[q], f[q]), hi[q] = fmax(hi[q], f[q]);
        groups[k] = (int)r->schedule;
        final[k] = cs[k].val[cs[k].n_steps - 1];
    }
    for (size_t k = 0; k < n; k++)
        for (int q = 0; q < 3; q++)
            xs[3 * k + q] /= hi[q] > lo[q] ? hi[q] - lo[q] : 1.0;
}

/* run k's final loss borrowed from the runs j with use[j] (the finished runs of its sweep; k
 * itself never), from its loss at the cut own[k] and theirs; ridge 1e9 holds the slopes at 0
 * (a kernel-weighted mean of the ratios); NAN if it cannot be */
static double borrow(const curve *cs, size_t n, size_t k, const double *own, const int *use,
                     double ridge)
{
    static double xall[3 * MAX_RUNS], fall[MAX_RUNS], xs[3 * MAX_RUNS], final[MAX_RUNS],
        cut[MAX_RUNS];
    static int gall[MAX_RUNS], groups[MAX_RUNS];
    kin_of(cs, n, xall, gall, fall);
    size_t m = 0;
    for (size_t j = 0; j < n; j++)
        if (j != k && use[j] && isfinite(own[j])) {
            memcpy(xs + 3 * m, xall + 3 * j, 3 * sizeof(double));
            groups[m] = gall[j], final[m] = fall[j], cut[m++] = own[j];
        }
    fit_curve_kin kin = {m, 3, xs, groups, cut, final};
    fit_curve_borrow_options o = g_borrow;
    o.ridge = ridge;
    double p = NAN;
    return fit_curve_borrow(&kin, xall + 3 * k, gall[k], own[k], SIZE_MAX, &o, &p, NULL) == ST_OK
               ? p
               : NAN;
}

/* As a sweep meets it: the runs finish in a random order, and run perm[q] borrows from
 * perm[0..q-1] only. Over `n_perm` orders, the median and worst |error| of the predictions that
 * could be made (enough kin of its schedule before it) and their share. */
static void evaluate_sequential(const curve *cs, size_t n, const double *at_cut, size_t n_perm)
{
    static double err[64 * MAX_RUNS];
    size_t n_err = 0, n_tried = 0, perm[MAX_RUNS];
    int use[MAX_RUNS];
    uint64_t rng = 12345;
    for (size_t t = 0; t < n_perm; t++) {
        for (size_t i = 0; i < n; i++)
            perm[i] = i;
        for (size_t i = n; i > 1; i--) { /* Fisher-Yates with a 64-bit LCG */
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            size_t j = (size_t)((rng >> 33) % i), tmp = perm[i - 1];
            perm[i - 1] = perm[j], perm[j] = tmp;
        }
        for (size_t q = 0; q < n; q++) {
            memset(use, 0, sizeof(use));
            for (size_t r = 0; r < q; r++)
                use[perm[r]] = 1;
            size_t k = perm[q];
            double p = borrow(cs, n, k, at_cut, use, g_borrow.ridge),
                   final = cs[k].val[cs[k].n_steps - 1];
            n_tried++;
            if (isfinite(p) && n_err < sizeof(err) / sizeof(err[0]))
                err[n_err++] = fabs(p - final) / final;
        }
    }
    if (!n_err)
        return;
    double worst = 0;
    for (size_t i = 0; i < n_err; i++)
        worst = fmax(worst, err[i]);
    printf("BENCH curves.borrow_seq.median_rel_err %.5f\n", median(err, n_err));
    printf("BENCH curves.borrow_seq.worst_rel_err %.5f\n", worst);
    printf("BENCH curves.borrow_seq.predicted %zu of %zu (runs in %zu random orders, each "
           "borrowing from the runs before it)\n",
           n_err, n_tried, n_perm);
}

/* every run: the predictions from the first `frac` of its steps; the summary lines */
static int evaluate(const curve *cs, size_t n, double skip, double frac)
{
    double C_full[MAX_RUNS], err[N_METHODS][MAX_RUNS], tmp[MAX_RUNS], rms[MAX_RUNS];
    size_t n_ok[N_METHODS] = {0}, n_rms = 0;
    for (size_t k = 0; k < n; k++) {
        /* the law on the whole curve: how well it describes these runs at all */
        fit_curve_law law = {0};
        double p, r;
        size_t from = (size_t)ceil(skip * (double)cs[k].n_steps);
        int ok = predict(&cs[k], M_LAW, 0, from, cs[k].n_steps, &p, &law, &r) == 0;
        if (ok)
            rms[n_rms++] = r / cs[k].val[cs[k].n_steps - 1];
        /* C is identified where a run anneals hard: WSD's decay (cosine's is spread out) */
        C_full[k] = ok && cs[k].cfg.schedule == GPT_SCHEDULE_WSD ? law.C : NAN;
    }
    /* each run's own loss at the cut, for the borrowing methods */
    double at_cut[MAX_RUNS];
    int all[MAX_RUNS];
    for (size_t k = 0; k < n; k++) {
        at_cut[k] = loss_at(&cs[k], (size_t)floor(frac * (double)cs[k].n_steps));
        all[k] = 1;
    }
    printf("%-4s %-3s %-2s %-7s %-6s %-6s %-8s %-17s %-17s %-17s %-17s %-17s\n", "run", "d", "L",
           "lr", "sched", "steps", "final", "law (err)", "law+C (err)", "power (err)",
           "borrow0 (err)", "borrow (err)");
    for (size_t k = 0; k < n; k++) {
        const curve *c = &cs[k];
        size_t m = 0;
        for (size_t j = 0; j < n; j++)
            if (j != k && isfinite(C_full[j]))
                tmp[m++] = C_full[j];
        double C_pool = m ? median(tmp, m) : 0.0, final = c->val[c->n_steps - 1];
        size_t upto = (size_t)floor(frac * (double)c->n_steps);
        size_t from = (size_t)ceil(skip * (double)c->n_steps);
        printf("%-4zu %-3d %-2d %-7.0e %-6s %-6zu %-8.4f", k, c->cfg.d_model, c->cfg.n_layer,
               c->cfg.lr, c->cfg.schedule == GPT_SCHEDULE_WSD ? "wsd" : "cosine", c->n_steps,
               final);
        for (int mth = 0; mth < N_METHODS; mth++) {
            double p = mth == M_BORROW0  ? borrow(cs, n, k, at_cut, all, 1e9)
                       : mth == M_BORROW ? borrow(cs, n, k, at_cut, all, g_borrow.ridge)
                                         : NAN;
            if (mth < N_OWN && predict(c, mth, C_pool, from, upto, &p, NULL, NULL) != 0)
                p = NAN;
            if (!isfinite(p)) {
                printf(" %-17s", "failed");
                continue;
            }
            err[mth][n_ok[mth]++] = fabs(p - final) / final;
            printf(" %.4f (%+.2f%%)", p, 100 * (p - final) / final);
        }
        printf("   C %.3g\n", m ? C_pool : 0.0);
    }
    for (int mth = 0; mth < N_METHODS; mth++) {
        if (!n_ok[mth])
            continue;
        double worst = 0;
        for (size_t i = 0; i < n_ok[mth]; i++)
            worst = fmax(worst, err[mth][i]);
        printf("BENCH curves.%s.median_rel_err %.5f\n", METHOD[mth], median(err[mth], n_ok[mth]));
        printf("BENCH curves.%s.worst_rel_err %.5f\n", METHOD[mth], worst);
        printf("BENCH curves.%s.runs %zu of %zu\n", METHOD[mth], n_ok[mth], n);
    }
    if (n_rms)
        printf("BENCH curves.law.whole_curve_rel_rms %.5f (median over runs: the law fitted on "
               "all points from the skip on)\n",
               median(rms, n_rms));
    evaluate_sequential(cs, n, at_cut, 50);
    return 0;
}

int main(int argc, char **argv)
{
    const char *out = "build/bench/curves.tsv", *data = "data/kjv";
    int retrain = 0, seq_len = 64, batch = 4;
    double frac = 0.3, skip = 0.1, tokens_scale = 1.0, warmup = gpt_options_default().warmup;
    g_borrow = fit_curve_borrow_options_default();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--retrain"))
            retrain = 1;
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--data") && i + 1 < argc)
            data = argv[++i];
        else if (!strcmp(argv[i], "--frac") && i + 1 < argc)
            frac = atof(argv[++i]);
        else if (!strcmp(argv[i], "--skip") && i + 1 < argc)
            skip = atof(argv[++i]);
        else if (!strcmp(argv[i], "--seq-len") && i + 1 < argc)
            seq_len = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
            warmup = atof(argv[++i]);
        else if (!strcmp(argv[i], "--tokens-scale") && i + 1 < argc)
            tokens_scale = atof(argv[++i]);
        else if (!strcmp(argv[i], "--bandwidth") && i + 1 < argc)
            g_borrow.bandwidth = atof(argv[++i]);
        else if (!strcmp(argv[i], "--ridge") && i + 1 < argc)
            g_borrow.ridge = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_curves [--out FILE] [--data DIR] [--frac F] [--skip F]\n"
                            "                    [--seq-len T] [--batch B] [--warmup W]\n"
                            "                    [--tokens-scale X] [--bandwidth H] [--ridge R]\n"
                            "                    [--retrain]\n");
            return 2;
        }
    }
    if (!(tokens_scale > 0) || !isfinite(tokens_scale)) {
        fprintf(stderr, "bench_curves: --tokens-scale must be a positive number\n");
        return 2;
    }
    if (!(warmup >= 0) || !isfinite(warmup)) {
        fprintf(stderr,
                "bench_curves: --warmup must be a fraction in [0, 1) or a number of steps\n");
        return 2;
    }
    static curve cs[MAX_RUNS];
    int n = retrain ? -1 : read_curves(out, cs);
    if (n <= 0) {
        char probe[1100];
        snprintf(probe, sizeof(probe), "%s/train.txt", data);
        if (access(probe, R_OK)) {
            fprintf(stderr, "bench_curves: %s is missing\nhint: run scripts/prepare-data\n", probe);
            return 1;
        }
        for (size_t k = 0; k < N_RUNS; k++) {
            curve_free(&cs[k]);
            memset(&cs[k], 0, sizeof(cs[k]));
            fprintf(stderr, "bench_curves: training run %zu of %zu\n", k + 1, N_RUNS);
            run_cfg r = RUNS[k];
            r.tokens *= tokens_scale;
            if (train_one(&r, data, seq_len, batch, warmup, &cs[k]) != 0)
                return 1;
        }
        n = (int)N_RUNS;
        if (write_curves(out, cs, N_RUNS) != 0)
            fprintf(stderr, "bench_curves: cannot write %s (continuing)\n", out);
    } else {
        printf("curves from %s (%d runs; --retrain to train again)\n", out, n);
    }
    printf("fit on the validation points of steps %.0f%%..%.0f%% of each run, predict the last\n",
           100 * skip, 100 * frac);
    int rc = evaluate(cs, (size_t)n, skip, frac);
    for (int k = 0; k < n; k++)
        curve_free(&cs[k]);
    return rc;
}
