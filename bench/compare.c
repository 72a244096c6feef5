/*
 * compare.c — optimizers side by side: scaletune's carbs/ (recommended and CARBS-faithful
 * modes), random search, and Optuna's TPE and CMA-ES (through bench/optuna_driver.py, when
 * python3-optuna is importable), on the LLM-training simulator (bench/sim.c) and on Branin and
 * Hartmann-6 with a cost dimension; 20 seeds each. Figures: cost to reach the 1% band, objective at
 * fixed budgets and, on the simulator, the regret at 100x the sweep's largest run of two
 * extrapolations of the same sweep: CARBS' Pareto regression and scaletune's engine
 * (fit/extrapolate.h: every run, failures included; predicted p_diverge). Writes one JSON file;
 * compare_report.c turns it into tables. The problems are in compare_problems.c, the JSON
 * of medians and ratios in compare_json.c.
 * `compare --serve PROBLEM` evaluates lines of parameters for the Python driver (one truth).
 */
#include <errno.h>
#include <gsl/gsl_fit.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "bench/compare.h"
#include "fit/extrapolate.h"
#include "runner/runner.h"
#include "study/study.h"

/* ---- traces of one optimizer run ----------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int budget_left(const problem *p, const trace *t, double spent)
{
    return t->n < p->max_evals && t->n < 128 && spent < p->budget_units * p->unit_cost;
}

static void record(const problem *p, trace *t, const double *x, uint64_t seed, double *spent)
{
    size_t i = t->n;
    memcpy(t->x[i], x, p->dim * sizeof(double));
    p->eval(p, x, compare_noise_seed(seed, i), &t->obs[i], &t->truth[i], &t->cost[i],
            &t->failed[i]);
    *spent += t->cost[i];
    t->n++;
}

/* as_study: a scaling study's sweep (docs/benchmarks.md): no run may cost more than a hundredth
 * of the budget, so the budget buys about a hundred runs spread over N and D for the laws. */
static void run_carbs(const problem *p, carbs_mode mode, int as_study, uint64_t seed, trace *t)
{
    carbs_options o = carbs_options_default();
    o.mode = mode;
    o.seed = seed;
    if (as_study)
        o.max_suggestion_cost = p->budget_units * p->unit_cost / 100.0;
    carbs *c;
    char err[ST_ERRMSG_MAX];
    if (carbs_create(p->par, p->dim, &o, &c, err) != ST_OK) {
        fprintf(stderr, "compare: carbs_create: %s\n", err);
        t->error = 1;
        return;
    }
    double spent = 0, t0 = now_s();
    while (budget_left(p, t, spent)) {
        double x[MAX_DIM], ts = now_s();
        uint64_t id;
        if (carbs_suggest(c, x, &id) != ST_OK) {
            fprintf(stderr, "compare: carbs_suggest: %s\n", carbs_errmsg(c));
            t->error = 1;
            break;
        }
        t->suggest_s += now_s() - ts;
        record(p, t, x, seed, &spent);
        size_t i = t->n - 1;
        if (carbs_observe(c, id, x, t->failed[i] ? NAN : t->obs[i], t->cost[i], t->failed[i]) !=
            ST_OK) {
            fprintf(stderr, "compare: carbs_observe: %s\n", carbs_errmsg(c));
            t->error = 1;
            break;
        }
    }
    t->wall_s = now_s() - t0;
    carbs_destroy(c);
}

/* Uniform in each parameter's own space (log-uniform for log parameters). */
static void run_random(const problem *p, uint64_t seed, trace *t)
{
    st_rng *r;
    if (st_rng_create(seed + 77, &r) != ST_OK) {
        t->error = 1;
        return;
    }
    double spent = 0, t0 = now_s();
    while (budget_left(p, t, spent)) {
        double x[MAX_DIM];
        for (size_t j = 0; j < p->dim; j++) {
            const carbs_param *q = &p->par[j];
            double u = st_rng_uniform(r);
            x[j] = q->space == CARBS_SPACE_LOG ? exp(log(q->min) + u * log(q->max / q->min))
                                               : q->min + u * (q->max - q->min);
        }
        record(p, t, x, seed, &spent);
    }
    t->wall_s = now_s() - t0;
    st_rng_destroy(r);
}

/* ---- figures of one trace ------------------------------------------------------------------ */

static int in_band(double truth, double best)
{
    return isfinite(truth) && isfinite(best) && truth <= best + 0.01 * fabs(best);
}

/*
 * CARBS' extrapolation (Fetterman et al. 2023, sec. 4): the Pareto front of successful runs
 * (each one cheaper than the next and with a lower observed loss than all cheaper runs), each
 * parameter's basic coordinate (log for log parameters) regressed on log cost by least squares,
 * evaluated at 100x the largest run's cost. N comes from its law and D = C / (6 N), so the
 * recommended run spends exactly C. Regret = (true loss - optimal loss at C) / optimal loss.
 */
static void extrapolate(const problem *p, const trace *t, figures *f)
{
    size_t idx[128], n = 0;
    double cmax = 0;
    for (size_t i = 0; i < t->n; i++)
        if (!t->failed[i]) {
            idx[n++] = i;
            cmax = fmax(cmax, t->cost[i]);
        }
    /* sort successes by cost (insertion sort: n <= 128) */
    for (size_t a = 1; a < n; a++)
        for (size_t b = a; b > 0 && t->cost[idx[b]] < t->cost[idx[b - 1]]; b--) {
            size_t tmp = idx[b];
            idx[b] = idx[b - 1];
            idx[b - 1] = tmp;
        }
    size_t front[128], nf = 0;
    double best = INFINITY;
    for (size_t a = 0; a < n; a++)
        if (t->obs[idx[a]] < best) {
            best = t->obs[idx[a]];
            front[nf++] = idx[a];
        }
    if (nf < 3) {
        f->regret_100x = f->lr_ratio_100x = NAN;
        return;
    }
    double C = 100.0 * cmax, lc[128], y[128], rec[MAX_DIM];
    for (size_t a = 0; a < nf; a++)
        lc[a] = log(t->cost[front[a]]);
    for (size_t j = 0; j < p->dim; j++) {
        int lg = p->par[j].space == CARBS_SPACE_LOG;
        for (size_t a = 0; a < nf; a++)
            y[a] = lg ? log(t->x[front[a]][j]) : t->x[front[a]][j];
        double c0, c1, cov00, cov01, cov11, ss;
        gsl_fit_linear(lc, 1, y, 1, nf, &c0, &c1, &cov00, &cov01, &cov11, &ss);
        double v = c0 + c1 * log(C);
        rec[j] = lg ? exp(v) : v;
    }
    sim_setting s = {rec[0], C / (6.0 * rec[0]), rec[2], rec[3], rec[4], rec[5], 0};
    s.batch = fmin(s.D, fmax(1.0, s.batch));
    s.warmup = fmin(0.99, fmax(0.0, s.warmup));
    s.weight_decay = fmax(0.0, s.weight_decay);
    sim_setting opt;
    double lstar;
    sim_terms tt;
    if (sim_oracle(&p->law, C, &opt, &lstar) != ST_OK || sim_eval(&p->law, &s, &tt, NULL)) {
        f->regret_100x = f->lr_ratio_100x = NAN;
        return;
    }
    f->regret_100x = tt.diverged ? INFINITY : (tt.loss - lstar) / lstar;
    f->lr_ratio_100x = s.lr / opt.lr;
}

/*
 * scaletune's extrapolation engine on the same sweep, through study/ (the one route from a
 * sweep to the engine, with its input policy: spaces and bounds of the sweep's box, roles from
 * the names, only diverged runs as failures). The trace becomes a sweep as the runner would
 * store it (sweep_of_trace). The recommended setting at C = 100x the largest successful run's
 * cost is scored with the simulator's true loss against sim_oracle's optimum at C, as
 * extrapolate() does.
 */
static runner_sweep *sweep_of_trace(const problem *p, const trace *t)
{
    char yaml[4096];
    int len = snprintf(yaml, sizeof(yaml),
                       "name: compare\ncommand: [\"true\"]\nobjective: {metric: loss}\n"
                       "cost: {metric: flops}\nbudget: {runs: 1000}\nparameters:\n");
    for (size_t j = 0; j < p->dim; j++) {
        const carbs_param *q = &p->par[j];
        len += snprintf(yaml + len, sizeof(yaml) - (size_t)len,
                        "  %s: {space: %s, min: %.17g, max: %.17g, center: %.17g}\n", q->name,
                        q->space == CARBS_SPACE_LOG ? "log" : "linear", q->min, q->max, q->center);
    }
    runner_sweep *w = calloc(1, sizeof(*w));
    char em[ST_ERRMSG_MAX];
    if (!w || runner_config_load_string(yaml, strlen(yaml), "compare", &w->cfg, em) != ST_OK ||
        !(w->runs = calloc(t->n + 1, sizeof(*w->runs)))) {
        fprintf(stderr, "compare: the sweep of a trace: %s\n", w ? em : "out of memory");
        runner_sweep_free(w);
        return NULL;
    }
    for (size_t i = 0; i < t->n; i++) {
        runner_sweep_run *u = &w->runs[w->n_runs++];
        int failed = t->failed[i] || !isfinite(t->obs[i]);
        u->id = i + 1;
        u->status = failed ? RUNNER_RUN_FAILED : RUNNER_RUN_SUCCEEDED;
        u->failure = failed ? RUNNER_FAIL_DIVERGED : RUNNER_FAIL_NONE;
        u->x = malloc(p->dim * sizeof(double));
        if (!u->x) {
            runner_sweep_free(w);
            return NULL;
        }
        memcpy(u->x, t->x[i], p->dim * sizeof(double));
        u->objective = failed ? NAN : t->obs[i];
        u->cost = failed ? NAN : t->cost[i];
        u->predicted_cost = u->final_N = u->final_D = NAN;
    }
    return w;
}

static void extrapolate_engine(const problem *p, const trace *t, size_t n_boot, figures *f)
{
    f->regret_engine = f->lr_ratio_engine = f->p_div_engine = f->div_engine = NAN;
    f->pred_err_engine = f->cost_ratio_engine = f->model_engine = f->no_failed_engine = NAN;
    runner_sweep *w = sweep_of_trace(p, t);
    if (!w)
        return;
    study_options so = study_options_default();
    so.factor = 100;
    so.backtest = 0;
    so.engine.n_boot = n_boot;
    so.engine.seed = 42;
    if (getenv("COMPARE_ENGINE_POINT"))
        so.engine.robust = 0;
    if (getenv("COMPARE_WD_SD"))
        so.engine.prior_wd_sd = atof(getenv("COMPARE_WD_SD"));
    study *st = NULL;
    char em[ST_ERRMSG_MAX] = "";
    fit_xp_result r;
    st_status rc = study_create(w, &so, &st, em);
    if (rc == ST_OK)
        rc = study_run(st);
    if (rc == ST_OK)
        rc = fit_xp_get_result(study_engine(st), &r);
    if (rc != ST_OK) {
        fprintf(stderr, "compare: extrapolation engine: %s\n", st ? study_errmsg(st) : em);
        study_destroy(st);
        runner_sweep_free(w);
        return;
    }
    double C = study_target(st);
    const double *v = r.value;
    sim_setting s = {
        v[0], v[1], v[2], fmin(v[3], v[1]), fmin(0.99, fmax(0.0, v[4])), fmax(0.0, v[5]), 0};
    sim_setting opt;
    double lstar;
    sim_terms tt;
    if (sim_oracle(&p->law, C, &opt, &lstar) == ST_OK &&
        sim_eval(&p->law, &s, &tt, NULL) == ST_OK) {
        f->div_engine = tt.diverged;
        f->regret_engine = tt.diverged ? INFINITY : (tt.loss - lstar) / lstar;
        f->pred_err_engine = tt.diverged ? NAN : (r.objective - tt.loss) / tt.loss;
        f->lr_ratio_engine = s.lr / opt.lr;
        f->p_div_engine = r.p_diverge;
        f->cost_ratio_engine = 6.0 * s.N * s.D / C;
        f->model_engine = r.method == FIT_XP_METHOD_MODEL;
        f->no_failed_engine = (r.warnings & FIT_XP_WARN_FEW_FAILED) != 0;
        if (getenv("COMPARE_DEBUG")) {
            sim_terms to;
            sim_eval(&p->law, &opt, &to, NULL);
            fprintf(
                stderr,
                "engine n=%zu fail=%d regret=%.4f pred_err=%+.4f p_div=%.3g | N %.3g/%.3g D "
                "%.3g/%.3g "
                "lr %.3g/%.3g bs %.3g/%.3g wu %.3g/%.3g wd %.3g/%.3g | Lnd %.4f/%.4f pen lrbs %.4f "
                "wu %.4f wd %.4f lrmax %.3g\n",
                t->n, (int)!f->no_failed_engine, f->regret_engine, f->pred_err_engine, r.p_diverge,
                s.N, opt.N, s.D, opt.D, s.lr, opt.lr, s.batch, opt.batch, s.warmup, opt.warmup,
                s.weight_decay, opt.weight_decay, tt.loss_nd, to.loss_nd, tt.pen_lr_bs,
                tt.pen_warmup, tt.pen_wd, tt.lr_max);
        }
    }
    study_destroy(st);
    runner_sweep_free(w);
}

static void compute_figures(const problem *p, const trace *t, size_t n_boot, figures *f)
{
    memset(f, 0, sizeof(*f));
    f->cost_to_1pct = f->cost_to_1pct_global = INFINITY;
    double spent = 0, inc_obs = INFINITY, inc_truth = NAN;
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++) {
        spent += t->cost[i];
        /* budgets crossed before this run finished see the incumbent so far */
        while (k < N_BUDGET && spent > p->budget_frac[k] * p->budget_units * p->unit_cost)
            f->at_budget[k++] = inc_truth;
        if (!t->failed[i] && t->obs[i] < inc_obs) {
            inc_obs = t->obs[i];
            inc_truth = t->truth[i];
        }
        if (!t->failed[i] && isinf(f->cost_to_1pct) &&
            in_band(t->truth[i], p->front(p, t->cost[i])))
            f->cost_to_1pct = spent;
        if (!t->failed[i] && isinf(f->cost_to_1pct_global) && in_band(t->truth[i], p->f_best))
            f->cost_to_1pct_global = spent;
        f->n_failed += t->failed[i];
    }
    while (k < N_BUDGET)
        f->at_budget[k++] = inc_truth;
    f->best = inc_truth;
    f->spent = spent;
    f->n_runs = (double)t->n;
    f->regret_100x = f->lr_ratio_100x = NAN;
    f->regret_engine = f->lr_ratio_engine = f->p_div_engine = f->div_engine = NAN;
    f->pred_err_engine = f->cost_ratio_engine = f->model_engine = f->no_failed_engine = NAN;
    if (!strcmp(p->name, "sim")) {
        extrapolate(p, t, f);
        if (n_boot > 0)
            extrapolate_engine(p, t, n_boot, f);
    }
}

/* ---- the work list ------------------------------------------------------------------------- */

const char *const compare_opt_names[N_OPT] = {"scaletune", "carbs_faithful", "scaletune_study",
                                              "random",    "optuna_tpe",     "optuna_cmaes"};

int compare_runs_on(int o, const problem *p)
{
    return o != OPT_STUDY || !strcmp(p->name, "sim");
}

typedef struct job {
    const problem *p;
    int opt;
    uint64_t seed;
    trace *t;
} job;

typedef struct pool {
    job *jobs;
    size_t n, next, done;
    pthread_mutex_t mu;
    double t0;
} pool;

static void *worker(void *arg)
{
    pool *pl = arg;
    for (;;) {
        pthread_mutex_lock(&pl->mu);
        size_t i = pl->next < pl->n ? pl->next++ : pl->n;
        pthread_mutex_unlock(&pl->mu);
        if (i >= pl->n)
            return NULL;
        job *j = &pl->jobs[i];
        if (j->opt == OPT_RANDOM)
            run_random(j->p, j->seed, j->t);
        else
            run_carbs(j->p, j->opt == OPT_FAITHFUL ? CARBS_MODE_FAITHFUL : CARBS_MODE_RECOMMENDED,
                      j->opt == OPT_STUDY, j->seed, j->t);
        pthread_mutex_lock(&pl->mu);
        pl->done++;
        fprintf(stderr, "[compare %6.1fs] %zu/%zu %s %s seed %llu: %zu runs, %.2fs\n",
                now_s() - pl->t0, pl->done, pl->n, j->p->name, compare_opt_names[j->opt],
                (unsigned long long)j->seed, j->t->n, j->t->wall_s);
        pthread_mutex_unlock(&pl->mu);
    }
}

/* The figures of every trace, in parallel (the extrapolation engine takes a while per sweep). */
typedef struct fig_job {
    const problem *p;
    const trace *t;
    figures *f;
} fig_job;

typedef struct fig_pool {
    fig_job *jobs;
    size_t n, next, n_boot;
    pthread_mutex_t mu;
} fig_pool;

static void *fig_worker(void *arg)
{
    fig_pool *pl = arg;
    for (;;) {
        pthread_mutex_lock(&pl->mu);
        size_t i = pl->next < pl->n ? pl->next++ : pl->n;
        pthread_mutex_unlock(&pl->mu);
        if (i >= pl->n)
            return NULL;
        compute_figures(pl->jobs[i].p, pl->jobs[i].t, pl->n_boot, pl->jobs[i].f);
    }
}

/* ---- Optuna through the Python driver ------------------------------------------------------ */

/* Reads the driver's JSON lines {"seed":s,"i":i,"x":[...],"obs":..,"truth":..,"cost":..,
 * "failed":0} into traces[seed]. Returns the number of lines read, -1 on a missing file. */
static long read_driver(const char *path, const problem *p, trace *traces, size_t n_seeds)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[4096];
    long n = 0;
    while (fgets(line, sizeof(line), f)) {
        json_error_t e;
        json_t *o = json_loads(line, 0, &e);
        if (!o)
            continue;
        json_int_t s = json_integer_value(json_object_get(o, "seed"));
        json_t *x = json_object_get(o, "x");
        if (s >= 0 && (size_t)s < n_seeds && json_array_size(x) == p->dim && traces[s].n < 128) {
            trace *t = &traces[s];
            size_t i = t->n++;
            for (size_t j = 0; j < p->dim; j++)
                t->x[i][j] = json_number_value(json_array_get(x, j));
            json_t *v;
            t->obs[i] =
                (v = json_object_get(o, "obs")) && json_is_number(v) ? json_number_value(v) : NAN;
            t->truth[i] =
                (v = json_object_get(o, "truth")) && json_is_number(v) ? json_number_value(v) : NAN;
            t->cost[i] = json_number_value(json_object_get(o, "cost"));
            t->failed[i] = (int)json_integer_value(json_object_get(o, "failed"));
            t->wall_s = json_number_value(json_object_get(o, "wall_s"));
            n++;
        }
        json_decref(o);
    }
    fclose(f);
    return n;
}

static int optuna_available(const char *python)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s -c 'import optuna' >/dev/null 2>&1", python);
    return system(cmd) == 0;
}

/* ---- main ---------------------------------------------------------------------------------- */

typedef struct options {
    const char *problems, *optimizers, *out, *python, *driver;
    long n_seeds, n_threads, engine_boot;
    int quick;
} options;

static void usage(FILE *f)
{
    fputs(
        "usage: compare [--problems sim,branin,hartmann6] [--seeds 20] [--threads 2]\n"
        "               [--optimizers scaletune,carbs_faithful,scaletune_study,random,optuna_tpe,\n"
        "                             optuna_cmaes]\n"
        "               [--quick] [--out FILE] [--python PY] [--driver bench/optuna_driver.py]\n"
        "               [--engine-boot 100]   (bootstrap replicates of the extrapolation\n"
        "                                      engine on the simulator; 0 leaves it out)\n"
        "       compare --serve PROBLEM   (evaluates 'noise_seed x...' lines from stdin)\n",
        f);
}

static int has(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *s = list; (s = strstr(s, name)); s += n)
        if ((s == list || s[-1] == ',') && (s[n] == ',' || s[n] == '\0'))
            return 1;
    return 0;
}

/* Reads the options into o; returns -1 to go on, else the exit status (help, an error, or
 * --serve's). */
static int parse_args(int argc, char **argv, options *o)
{
    *o = (options){"sim,branin,hartmann6",
                   "scaletune,carbs_faithful,scaletune_study,random,optuna_tpe,optuna_cmaes",
                   "build/bench/compare.json",
                   "/usr/bin/python3",
                   "bench/optuna_driver.py",
                   20,
                   2,
                   100,
                   0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--serve") && v)
            return compare_serve(v);
        else if (!strcmp(a, "--problems") && v)
            o->problems = argv[++i];
        else if (!strcmp(a, "--optimizers") && v)
            o->optimizers = argv[++i];
        else if (!strcmp(a, "--seeds") && v)
            o->n_seeds = strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--threads") && v)
            o->n_threads = strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--out") && v)
            o->out = argv[++i];
        else if (!strcmp(a, "--python") && v)
            o->python = argv[++i];
        else if (!strcmp(a, "--driver") && v)
            o->driver = argv[++i];
        else if (!strcmp(a, "--engine-boot") && v)
            o->engine_boot = strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--quick"))
            o->quick = 1;
        else {
            usage(!strcmp(a, "-h") || !strcmp(a, "--help") ? stdout : stderr);
            return strcmp(a, "-h") && strcmp(a, "--help") ? 2 : 0;
        }
    }
    if (o->n_seeds < 1 || o->n_seeds > 256 || o->n_threads < 1 || o->n_threads > 64 ||
        o->engine_boot < 0 || o->engine_boot > 10000) {
        fprintf(
            stderr,
            "compare: --seeds in [1, 256], --threads in [1, 64], --engine-boot in [0, 10000]\n");
        return 2;
    }
    return -1;
}

/* Optuna's samplers through the Python driver, one process per (problem, sampler) in sequence,
 * in the background while the C jobs run; each writes paths[o][pi]. NULL when none runs. */
static FILE *start_optuna(const options *opt, const compare_set *cs, const char *self,
                          char paths[N_OPT][3][512])
{
    char cmd[8192] = "";
    size_t len = 0;
    for (size_t pi = 0; pi < cs->n_prob; pi++)
        for (int o = OPT_TPE; o <= OPT_CMAES; o++) {
            if (!cs->use[o])
                continue;
            const problem *p = &cs->probs[pi];
            snprintf(paths[o][pi], sizeof(paths[o][pi]), "%s.%s.%s.jsonl", opt->out, p->name,
                     compare_opt_names[o]);
            len += (size_t)snprintf(cmd + len, sizeof(cmd) - len,
                                    "%s %s --problem %s --sampler %s --seeds %ld --max-evals %zu "
                                    "--budget-units %g --evaluator '%s --serve %s' > '%s' && ",
                                    opt->python, opt->driver, p->name,
                                    o == OPT_TPE ? "tpe" : "cmaes", opt->n_seeds, p->max_evals,
                                    p->budget_units, self, p->name, paths[o][pi]);
        }
    snprintf(cmd + len, sizeof(cmd) - len, "true");
    fprintf(stderr, "compare: Optuna driver running in the background\n");
    return popen(cmd, "r");
}

/* Waits for the driver and reads its traces; a sampler without results is left out. Returns
 * the driver's status. */
static int collect_optuna(FILE *py, compare_set *cs, char paths[N_OPT][3][512], double t0)
{
    char buf[512];
    while (fgets(buf, sizeof(buf), py))
        fputs(buf, stderr);
    int rc = pclose(py);
    fprintf(stderr, "[compare %6.1fs] Optuna driver finished (status %d)\n", now_s() - t0, rc);
    for (size_t pi = 0; pi < cs->n_prob; pi++)
        for (int o = OPT_TPE; o <= OPT_CMAES; o++)
            if (cs->use[o] &&
                read_driver(paths[o][pi], &cs->probs[pi], &cs->traces[compare_index(cs, pi, o, 0)],
                            cs->n_seeds) <= 0) {
                fprintf(stderr, "compare: no results from %s\n", paths[o][pi]);
                cs->use[o] = 0;
            }
    return rc;
}

/* scaletune's optimizers and random search on every problem and seed, on n_threads threads */
static int run_c_jobs(const compare_set *cs, long n_threads, double t0)
{
    job *jobs = calloc(cs->n_prob * N_OPT * cs->n_seeds, sizeof(job));
    if (!jobs)
        return -1;
    size_t nj = 0;
    for (size_t s = 0; s < cs->n_seeds; s++)
        for (size_t pi = 0; pi < cs->n_prob; pi++)
            for (int o = OPT_SCALETUNE; o <= OPT_RANDOM; o++)
                if (cs->use[o] && compare_runs_on(o, &cs->probs[pi]))
                    jobs[nj++] = (job){&cs->probs[pi], o, (uint64_t)s,
                                       &cs->traces[compare_index(cs, pi, o, s)]};
    pool pl = {jobs, nj, 0, 0, PTHREAD_MUTEX_INITIALIZER, t0};
    pthread_t th[64];
    for (long k = 0; k < n_threads; k++)
        pthread_create(&th[k], NULL, worker, &pl);
    for (long k = 0; k < n_threads; k++)
        pthread_join(th[k], NULL);
    free(jobs);
    return 0;
}

/* the figures of every trace, in parallel (the extrapolation engine fits each simulator sweep) */
static int compute_all_figures(const compare_set *cs, long n_threads, long engine_boot)
{
    fig_job *fjobs = calloc(cs->n_prob * N_OPT * cs->n_seeds, sizeof(fig_job));
    if (!fjobs)
        return -1;
    size_t nfj = 0;
    for (size_t pi = 0; pi < cs->n_prob; pi++)
        for (int o = 0; o < N_OPT; o++)
            for (size_t s = 0; cs->use[o] && compare_runs_on(o, &cs->probs[pi]) && s < cs->n_seeds;
                 s++) {
                size_t k = compare_index(cs, pi, o, s);
                fjobs[nfj++] = (fig_job){&cs->probs[pi], &cs->traces[k], &cs->figs[k]};
            }
    fig_pool fpl = {fjobs, nfj, 0, (size_t)engine_boot, PTHREAD_MUTEX_INITIALIZER};
    pthread_t th[64];
    for (long k = 0; k < n_threads; k++)
        pthread_create(&th[k], NULL, fig_worker, &fpl);
    for (long k = 0; k < n_threads; k++)
        pthread_join(th[k], NULL);
    free(fjobs);
    return (int)nfj;
}

/* the configuration, the problems and the ratios, to o->out */
static int write_json(const options *o, const compare_set *cs, int have_optuna, double t0,
                      double c_wall, double tf0)
{
    json_t *root = json_object(), *ratios = json_object(), *notes = json_object();
    json_t *cfg = json_object();
    json_object_set_new(cfg, "seeds", json_integer(o->n_seeds));
    json_object_set_new(cfg, "quick", json_boolean(o->quick));
    json_object_set_new(cfg, "optuna", json_boolean(have_optuna));
    json_object_set_new(cfg, "wall_s", json_real(now_s() - t0));
    json_object_set_new(cfg, "c_wall_s", json_real(c_wall));
    json_object_set_new(cfg, "engine_boot", json_integer(o->engine_boot));
    json_object_set_new(cfg, "figures_wall_s", json_real(now_s() - tf0));
    json_object_set_new(root, "config", cfg);
    json_object_set_new(root, "problems", compare_problems_json(cs, o->engine_boot, ratios, notes));
    json_object_set_new(root, "ratios", ratios);
    json_object_set_new(root, "ratio_notes", notes);
    int rc = json_dump_file(root, o->out, JSON_INDENT(1) | JSON_REAL_PRECISION(6));
    if (rc != 0)
        fprintf(stderr, "compare: cannot write %s: %s\n", o->out, strerror(errno));
    else
        fprintf(stderr, "[compare %6.1fs] wrote %s\n", now_s() - t0, o->out);
    json_decref(root);
    return rc;
}

int main(int argc, char **argv)
{
    options opt;
    int rc = parse_args(argc, argv, &opt);
    if (rc >= 0)
        return rc;
    st_global_init();
    static const char *const all_problems[] = {"sim", "branin", "hartmann6"};
    problem probs[3];
    compare_set cs = {probs, 0, {0}, (size_t)opt.n_seeds, NULL, NULL};
    for (size_t k = 0; k < 3; k++)
        if (has(opt.problems, all_problems[k]))
            compare_make_problem(all_problems[k], opt.quick, &probs[cs.n_prob++]);
    for (int o = 0; o < N_OPT; o++)
        cs.use[o] = has(opt.optimizers, compare_opt_names[o]);
    int want_optuna = cs.use[OPT_TPE] || cs.use[OPT_CMAES];
    int have_optuna = want_optuna && optuna_available(opt.python);
    if (want_optuna && !have_optuna)
        fprintf(stderr,
                "compare: optuna is not importable by %s (Debian: apt-get install "
                "python3-optuna); Optuna TPE and CMA-ES are left out\n",
                opt.python);
    size_t n_tr = cs.n_prob * N_OPT * cs.n_seeds;
    cs.traces = calloc(n_tr, sizeof(trace));
    cs.figs = calloc(n_tr, sizeof(figures));
    if (!cs.traces || !cs.figs) {
        fprintf(stderr, "compare: out of memory\n");
        return 1;
    }
    double t0 = now_s();
    char paths[N_OPT][3][512];
    FILE *py = have_optuna ? start_optuna(&opt, &cs, argv[0], paths) : NULL;
    if (run_c_jobs(&cs, opt.n_threads, t0) != 0) {
        fprintf(stderr, "compare: out of memory\n");
        return 1;
    }
    double c_wall = now_s() - t0;
    int py_rc = 0;
    if (py)
        py_rc = collect_optuna(py, &cs, paths, t0);
    else
        cs.use[OPT_TPE] = cs.use[OPT_CMAES] = 0;
    double tf0 = now_s();
    int nfj = compute_all_figures(&cs, opt.n_threads, opt.engine_boot);
    if (nfj < 0) {
        fprintf(stderr, "compare: out of memory\n");
        return 1;
    }
    fprintf(stderr,
            "[compare %6.1fs] figures of %d sweeps (extrapolation engine: %ld replicates) "
            "in %.1fs\n",
            now_s() - t0, nfj, opt.engine_boot, now_s() - tf0);
    rc = write_json(&opt, &cs, have_optuna, t0, c_wall, tf0);
    free(cs.traces);
    free(cs.figs);
    st_global_cleanup();
    return rc ? 1 : py_rc ? 1 : 0;
}
