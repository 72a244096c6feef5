/*
 * compare.c — optimizers side by side: scaletune's carbs/ (recommended and CARBS-faithful
 * modes), random search, and Optuna's TPE and CMA-ES (through bench/optuna_driver.py, when
 * python3-optuna is importable), on the LLM-training simulator (bench/sim.c) and on Branin and
 * Hartmann-6 with a cost dimension; 20 seeds each. Figures: cost to reach the 1% band, objective at
 * fixed budgets and, on the simulator, the regret at 100x the sweep's largest run of two
 * extrapolations of the same sweep: CARBS' Pareto regression and scaletune's engine
 * (fit/extrapolate.h: every run, failures included; predicted p_diverge). Writes one JSON file;
 * compare_report.c turns it into tables.
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

#include "bench/sim.h"
#include "bench/testfuncs.h"
#include "carbs/carbs.h"
#include "fit/extrapolate.h"
#include "runner/runner.h"
#include "study/study.h"

#define MAX_DIM  8
#define N_BUDGET 3

/* ---- problems ------------------------------------------------------------------------------ */

typedef struct problem problem;
struct problem {
    const char *name;
    size_t dim;
    carbs_param par[MAX_DIM];
    /* evaluates x: observed (noisy) and true objective, cost spent, failure flag */
    void (*eval)(const problem *p, const double *x, uint64_t noise_seed, double *obs, double *truth,
                 double *cost, int *failed);
    double f_best; /* best achievable true objective inside the box */
    /* best achievable true objective at cost c inside the box (the true cost-objective front) */
    double (*front)(const problem *p, double c);
    double unit_cost;             /* cost of the most expensive run the box allows */
    double budget_units;          /* total cost per optimizer run, in unit_cost */
    size_t max_evals;             /* and at most this many runs */
    double budget_frac[N_BUDGET]; /* fixed budgets for "objective at budget", fractions */
    sim_law law;                  /* the simulator's world (sim only) */
};

static void set_par(carbs_param *p, const char *name, carbs_space_kind k, double lo, double hi,
                    double center, double scale)
{
    carbs_param_init(p, name, k, center);
    p->min = lo;
    p->max = hi;
    p->scale = scale;
}

/* The simulator: x = (N, tokens, lr, batch, warmup, weight decay); cost = FLOPs actually spent
 * (6 N D, or up to the divergence step). */
static void eval_sim(const problem *p, const double *x, uint64_t noise_seed, double *obs,
                     double *truth, double *cost, int *failed)
{
    sim_setting s = {x[0], x[1], x[2], fmin(x[3], x[1]), x[4], fmax(0.0, x[5]), 0};
    sim_terms t;
    double step;
    int div;
    if (sim_eval(&p->law, &s, &t, NULL) != ST_OK ||
        sim_run(&p->law, &s, noise_seed, obs, &div, &step, NULL) != ST_OK) {
        *obs = *truth = NAN;
        *cost = 6.0 * s.N * s.batch;
        *failed = 1;
        return;
    }
    *failed = div;
    *truth = div ? NAN : t.loss;
    *cost = div ? 6.0 * s.N * fmin(s.D, step * s.batch) : t.flops;
}

static void eval_branin(const problem *p, const double *x, uint64_t noise_seed, double *obs,
                        double *truth, double *cost, int *failed)
{
    (void)p;
    (void)noise_seed;
    *truth = *obs = tf_branin(x) + 1.0 / sqrt(x[2]);
    *cost = x[2];
    *failed = 0;
}

static void eval_hartmann6(const problem *p, const double *x, uint64_t noise_seed, double *obs,
                           double *truth, double *cost, int *failed)
{
    (void)p;
    (void)noise_seed;
    *truth = *obs = tf_hartmann6(x) + 1.0 / sqrt(x[6]);
    *cost = x[6];
    *failed = 0;
}

static double front_sim(const problem *p, double c)
{
    sim_setting s;
    double loss;
    if (sim_oracle_box(&p->law, c, p->par[0].min, p->par[0].max, p->par[1].min, p->par[1].max, &s,
                       &loss) != ST_OK)
        return NAN;
    return loss;
}

/* f(x) + c^-1/2 is best at the minimiser of f, whatever c */
static double front_branin(const problem *p, double c)
{
    (void)p;
    return 0.397887357729738 + 1.0 / sqrt(c);
}

static double front_hartmann6(const problem *p, double c)
{
    (void)p;
    return -3.32236801141551 + 1.0 / sqrt(c);
}

static int make_problem(const char *name, int quick, problem *p)
{
    memset(p, 0, sizeof(*p));
    p->budget_frac[0] = 0.25;
    p->budget_frac[1] = 0.5;
    p->budget_frac[2] = 1.0;
    if (!strcmp(name, "sim")) {
        /* A sweep at small compute: N 1e6..3.2e7, tokens 2e7..6.3e8 (runs up to 1.2e17 FLOPs);
         * the optimal hyperparameters of every (N, D) in the box lie inside the box. */
        p->name = "sim";
        p->dim = 6;
        p->law = sim_law_default();
        set_par(&p->par[0], "params", CARBS_SPACE_LOG, 1e6, pow(10, 7.5), 5e6, 1);
        set_par(&p->par[1], "tokens", CARBS_SPACE_LOG, 2e7, pow(10, 8.8), 1e8, 1);
        set_par(&p->par[2], "lr", CARBS_SPACE_LOG, 1e-4, 0.1, 3e-3, 1);
        set_par(&p->par[3], "batch", CARBS_SPACE_LOG, 1024, 524288, 16384, 1);
        /* warmup and weight decay act on a log scale (sim.h), so they are searched on one */
        set_par(&p->par[4], "warmup", CARBS_SPACE_LOG, 1e-3, 0.3, 0.02, 1);
        set_par(&p->par[5], "weight_decay", CARBS_SPACE_LOG, 1e-3, 1.0, 0.1, 1);
        p->eval = eval_sim;
        p->front = front_sim;
        double N = p->par[0].max, D = p->par[1].max;
        sim_setting s;
        sim_best_hypers(&p->law, N, D, &s, &p->f_best);
        p->unit_cost = 6 * N * D;
        p->budget_units = quick ? 4 : 10;
        p->max_evals = quick ? 40 : 100;
    } else if (!strcmp(name, "branin")) {
        p->name = "branin";
        p->dim = 3;
        set_par(&p->par[0], "x1", CARBS_SPACE_LINEAR, -5, 10, 2.5, 5);
        set_par(&p->par[1], "x2", CARBS_SPACE_LINEAR, 0, 15, 7.5, 5);
        set_par(&p->par[2], "cost", CARBS_SPACE_LOG, 1, 100, 10, 1);
        p->eval = eval_branin;
        p->front = front_branin;
        p->f_best = 0.397887357729738 + 0.1;
        p->unit_cost = 100;
        p->budget_units = quick ? 5 : 20;
        p->max_evals = quick ? 40 : 100;
    } else if (!strcmp(name, "hartmann6")) {
        p->name = "hartmann6";
        p->dim = 7;
        for (int j = 0; j < 6; j++) {
            static const char *nm[6] = {"x1", "x2", "x3", "x4", "x5", "x6"};
            set_par(&p->par[j], nm[j], CARBS_SPACE_LINEAR, 0, 1, 0.5, 0.33);
        }
        set_par(&p->par[6], "cost", CARBS_SPACE_LOG, 1, 100, 10, 1);
        p->eval = eval_hartmann6;
        p->front = front_hartmann6;
        p->f_best = -3.32236801141551 + 0.1;
        p->unit_cost = 100;
        p->budget_units = quick ? 5 : 20;
        p->max_evals = quick ? 40 : 100;
    } else {
        return -1;
    }
    return 0;
}

/* The noise seed of run i of optimizer seed s: the same for every optimizer. */
static uint64_t noise_seed(uint64_t seed, size_t i)
{
    return (seed + 1) * 1000003u + i;
}

/* ---- traces of one optimizer run ----------------------------------------------------------- */

typedef struct trace {
    size_t n;
    double x[128][MAX_DIM];
    double obs[128], truth[128], cost[128];
    int failed[128];
    double wall_s, suggest_s;
    int error;
} trace;

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
    p->eval(p, x, noise_seed(seed, i), &t->obs[i], &t->truth[i], &t->cost[i], &t->failed[i]);
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

typedef struct figures {
    double cost_to_1pct;        /* cumulative cost at the first run within 1% of the best
                                   objective achievable at its own cost; inf if none */
    double cost_to_1pct_global; /* the same for the best objective achievable in the box */
    double at_budget[N_BUDGET]; /* true objective of the incumbent (lowest observed) at budget */
    double best;                /* the same at the end */
    double regret_100x;         /* relative; inf if the recommendation diverges; NaN if none */
    double lr_ratio_100x;       /* recommended lr / optimal lr at the target */
    /* the same with scaletune's extrapolation engine (fit/extrapolate.h, every run, failures
     * included, expected loss with divergence charged); NaN when it gave no recommendation */
    double regret_engine;     /* relative; inf if the recommendation diverges in truth */
    double lr_ratio_engine;   /* recommended lr / optimal lr at the target */
    double p_div_engine;      /* the engine's predicted probability of divergence */
    double div_engine;        /* 1 if the recommendation diverges in truth, 0 if not */
    double pred_err_engine;   /* (predicted - true loss) / true loss of the recommendation */
    double cost_ratio_engine; /* 6 N D of the recommendation / C */
    double model_engine;      /* 1 when the engine used its model (METHOD_MODEL), 0 the front */
    double no_failed_engine;  /* 1 when the sweep had no diverged run (FIT_XP_WARN_FEW_FAILED:
                                 the stability boundary is unknown to the engine) */
    double n_runs, n_failed;
    double spent; /* total cost of the trace */
} figures;

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

/* ---- statistics ---------------------------------------------------------------------------- */

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Quantile with linear interpolation (type 7) over the non-NaN values; +inf sorts last. */
static double quantile(const double *v, size_t n, double q)
{
    double s[256];
    size_t m = 0;
    for (size_t i = 0; i < n && m < 256; i++)
        if (!isnan(v[i]))
            s[m++] = v[i];
    if (m == 0)
        return NAN;
    qsort(s, m, sizeof(double), cmp_dbl);
    double h = (m - 1) * q;
    size_t lo = (size_t)floor(h);
    double d = h - lo;
    if (d == 0 || lo + 1 >= m)
        return s[lo];
    if (isinf(s[lo + 1]))
        return INFINITY;
    return s[lo] + d * (s[lo + 1] - s[lo]);
}

static json_t *jnum(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *summary(const double *v, size_t n)
{
    json_t *o = json_object();
    json_object_set_new(o, "median", jnum(quantile(v, n, 0.5)));
    json_object_set_new(o, "q25", jnum(quantile(v, n, 0.25)));
    json_object_set_new(o, "q75", jnum(quantile(v, n, 0.75)));
    size_t fin = 0, inf = 0;
    for (size_t i = 0; i < n; i++) {
        fin += isfinite(v[i]) != 0;
        inf += isinf(v[i]) != 0;
    }
    json_object_set_new(o, "finite", json_integer((json_int_t)fin));
    json_object_set_new(o, "infinite", json_integer((json_int_t)inf));
    json_object_set_new(o, "n", json_integer((json_int_t)n));
    return o;
}

/* ---- the work list ------------------------------------------------------------------------- */

enum { OPT_SCALETUNE, OPT_FAITHFUL, OPT_STUDY, OPT_RANDOM, OPT_TPE, OPT_CMAES, N_OPT };
static const char *const opt_names[N_OPT] = {"scaletune", "carbs_faithful", "scaletune_study",
                                             "random",    "optuna_tpe",     "optuna_cmaes"};

/* scaletune_study is a sweep design for the simulator's scaling study only */
static int runs_on(int o, const problem *p)
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
                now_s() - pl->t0, pl->done, pl->n, j->p->name, opt_names[j->opt],
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

/* ---- serve mode: one evaluation per input line --------------------------------------------- */

static int serve(const char *name)
{
    problem p;
    if (make_problem(name, 0, &p)) {
        fprintf(stderr, "compare: unknown problem '%s'\n", name);
        return 2;
    }
    /* first line: the problem's description, for the driver */
    printf("{\"problem\":\"%s\",\"dim\":%zu,\"unit_cost\":%.17g,\"f_best\":%.17g,\"params\":[",
           p.name, p.dim, p.unit_cost, p.f_best);
    for (size_t j = 0; j < p.dim; j++)
        printf("%s{\"name\":\"%s\",\"log\":%d,\"min\":%.17g,\"max\":%.17g}", j ? "," : "",
               p.par[j].name, p.par[j].space == CARBS_SPACE_LOG, p.par[j].min, p.par[j].max);
    printf("]}\n");
    fflush(stdout);
    char line[4096];
    while (fgets(line, sizeof(line), stdin)) {
        char *s = line, *end;
        unsigned long long ns = strtoull(s, &end, 10);
        double x[MAX_DIM];
        size_t j;
        for (j = 0; j < p.dim; j++) {
            s = end;
            x[j] = strtod(s, &end);
            if (end == s)
                break;
        }
        if (j < p.dim) {
            printf("error: need a noise seed and %zu numbers\n", p.dim);
        } else {
            double obs, truth, cost;
            int failed;
            p.eval(&p, x, ns, &obs, &truth, &cost, &failed);
            printf("%.17g %.17g %.17g %d\n", obs, truth, cost, failed);
        }
        fflush(stdout);
    }
    return 0;
}

/* ---- main ---------------------------------------------------------------------------------- */

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

int main(int argc, char **argv)
{
    const char *problems = "sim,branin,hartmann6";
    const char *optimizers =
        "scaletune,carbs_faithful,scaletune_study,random,optuna_tpe,optuna_cmaes";
    const char *out = "build/bench/compare.json", *python = "/usr/bin/python3";
    const char *driver = "bench/optuna_driver.py";
    long n_seeds = 20, n_threads = 2, engine_boot = 100;
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--serve") && v)
            return serve(v);
        else if (!strcmp(a, "--problems") && v)
            problems = argv[++i];
        else if (!strcmp(a, "--optimizers") && v)
            optimizers = argv[++i];
        else if (!strcmp(a, "--seeds") && v)
            n_seeds = strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--threads") && v)
            n_threads = strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--out") && v)
            out = argv[++i];
        else if (!strcmp(a, "--python") && v)
            python = argv[++i];
        else if (!strcmp(a, "--driver") && v)
            driver = argv[++i];
        else if (!strcmp(a, "--engine-boot") && v)
            engine_boot = strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--quick"))
            quick = 1;
        else {
            usage(!strcmp(a, "-h") || !strcmp(a, "--help") ? stdout : stderr);
            return strcmp(a, "-h") && strcmp(a, "--help") ? 2 : 0;
        }
    }
    if (n_seeds < 1 || n_seeds > 256 || n_threads < 1 || n_threads > 64 || engine_boot < 0 ||
        engine_boot > 10000) {
        fprintf(
            stderr,
            "compare: --seeds in [1, 256], --threads in [1, 64], --engine-boot in [0, 10000]\n");
        return 2;
    }
    st_global_init();

    static const char *const all_problems[] = {"sim", "branin", "hartmann6"};
    problem probs[3];
    size_t n_prob = 0;
    for (size_t k = 0; k < 3; k++)
        if (has(problems, all_problems[k]))
            make_problem(all_problems[k], quick, &probs[n_prob++]);
    int use[N_OPT];
    for (int o = 0; o < N_OPT; o++)
        use[o] = has(optimizers, opt_names[o]);
    int have_optuna = (use[OPT_TPE] || use[OPT_CMAES]) && optuna_available(python);
    if ((use[OPT_TPE] || use[OPT_CMAES]) && !have_optuna)
        fprintf(stderr,
                "compare: optuna is not importable by %s (Debian: apt-get install "
                "python3-optuna); Optuna TPE and CMA-ES are left out\n",
                python);

    /* traces[problem][optimizer][seed] */
    size_t n_tr = n_prob * N_OPT * (size_t)n_seeds;
    trace *traces = calloc(n_tr, sizeof(trace));
    job *jobs = calloc(n_tr, sizeof(job));
    if (!traces || !jobs) {
        fprintf(stderr, "compare: out of memory\n");
        return 1;
    }
#define TR(pi, o, s) (&traces[((pi)*N_OPT + (o)) * (size_t)n_seeds + (s)])
    double t0 = now_s();

    /* Optuna first, in the background (one process per sampler), while the C jobs run. */
    char tmpl[N_OPT][3][512];
    char cmd[8192] = "";
    if (have_optuna) {
        size_t len = 0;
        for (size_t pi = 0; pi < n_prob; pi++)
            for (int o = OPT_TPE; o <= OPT_CMAES; o++) {
                if (!use[o])
                    continue;
                snprintf(tmpl[o][pi], sizeof(tmpl[o][pi]), "%s.%s.%s.jsonl", out, probs[pi].name,
                         opt_names[o]);
                len +=
                    (size_t)snprintf(cmd + len, sizeof(cmd) - len,
                                     "%s %s --problem %s --sampler %s --seeds %ld --max-evals %zu "
                                     "--budget-units %g --evaluator '%s --serve %s' > '%s' && ",
                                     python, driver, probs[pi].name, o == OPT_TPE ? "tpe" : "cmaes",
                                     n_seeds, probs[pi].max_evals, probs[pi].budget_units, argv[0],
                                     probs[pi].name, tmpl[o][pi]);
            }
        snprintf(cmd + len, sizeof(cmd) - len, "true");
    }
    /* The Python work (a few seconds per sampler) runs alongside the C jobs. */
    FILE *py = NULL;
    if (have_optuna) {
        fprintf(stderr, "compare: Optuna driver running in the background\n");
        py = popen(cmd, "r");
    }

    size_t nj = 0;
    for (long s = 0; s < n_seeds; s++)
        for (size_t pi = 0; pi < n_prob; pi++)
            for (int o = OPT_SCALETUNE; o <= OPT_RANDOM; o++)
                if (use[o] && runs_on(o, &probs[pi]))
                    jobs[nj++] = (job){&probs[pi], o, (uint64_t)s, TR(pi, o, s)};
    pool pl = {jobs, nj, 0, 0, PTHREAD_MUTEX_INITIALIZER, t0};
    pthread_t th[64];
    for (long k = 0; k < n_threads; k++)
        pthread_create(&th[k], NULL, worker, &pl);
    for (long k = 0; k < n_threads; k++)
        pthread_join(th[k], NULL);
    double c_wall = now_s() - t0;

    int py_rc = 0;
    if (py) {
        char buf[512];
        while (fgets(buf, sizeof(buf), py))
            fputs(buf, stderr);
        py_rc = pclose(py);
        fprintf(stderr, "[compare %6.1fs] Optuna driver finished (status %d)\n", now_s() - t0,
                py_rc);
        for (size_t pi = 0; pi < n_prob; pi++)
            for (int o = OPT_TPE; o <= OPT_CMAES; o++)
                if (use[o] &&
                    read_driver(tmpl[o][pi], &probs[pi], TR(pi, o, 0), (size_t)n_seeds) <= 0) {
                    fprintf(stderr, "compare: no results from %s\n", tmpl[o][pi]);
                    use[o] = 0;
                }
    } else {
        use[OPT_TPE] = use[OPT_CMAES] = 0;
    }

    /* ---- figures (in parallel: the extrapolation engine fits each simulator sweep) ---- */
    figures *figs = calloc(n_tr, sizeof(figures));
    fig_job *fjobs = calloc(n_tr, sizeof(fig_job));
    if (!figs || !fjobs) {
        fprintf(stderr, "compare: out of memory\n");
        return 1;
    }
#define FG(pi, o, s) (&figs[((pi)*N_OPT + (o)) * (size_t)n_seeds + (s)])
    size_t nfj = 0;
    for (size_t pi = 0; pi < n_prob; pi++)
        for (int o = 0; o < N_OPT; o++)
            for (long s = 0; use[o] && runs_on(o, &probs[pi]) && s < n_seeds; s++)
                fjobs[nfj++] = (fig_job){&probs[pi], TR(pi, o, s), FG(pi, o, s)};
    double tf0 = now_s();
    fig_pool fpl = {fjobs, nfj, 0, (size_t)engine_boot, PTHREAD_MUTEX_INITIALIZER};
    for (long k = 0; k < n_threads; k++)
        pthread_create(&th[k], NULL, fig_worker, &fpl);
    for (long k = 0; k < n_threads; k++)
        pthread_join(th[k], NULL);
    fprintf(stderr,
            "[compare %6.1fs] figures of %zu sweeps (extrapolation engine: %ld replicates) "
            "in %.1fs\n",
            now_s() - t0, nfj, engine_boot, now_s() - tf0);

    /* ---- medians, ratios ---- */
    json_t *root = json_object(), *jp = json_object(), *ratios = json_object();
    json_t *notes = json_object();
    json_t *cfg = json_object();
    json_object_set_new(cfg, "seeds", json_integer(n_seeds));
    json_object_set_new(cfg, "quick", json_boolean(quick));
    json_object_set_new(cfg, "optuna", json_boolean(have_optuna));
    json_object_set_new(cfg, "wall_s", json_real(now_s() - t0));
    json_object_set_new(cfg, "c_wall_s", json_real(c_wall));
    json_object_set_new(cfg, "engine_boot", json_integer(engine_boot));
    json_object_set_new(cfg, "figures_wall_s", json_real(now_s() - tf0));
    json_object_set_new(root, "config", cfg);
    for (size_t pi = 0; pi < n_prob; pi++) {
        const problem *p = &probs[pi];
        json_t *po = json_object(), *oo = json_object();
        json_object_set_new(po, "f_best", json_real(p->f_best));
        json_object_set_new(po, "band", json_real(0.01 * fabs(p->f_best)));
        json_object_set_new(po, "unit_cost", json_real(p->unit_cost));
        json_object_set_new(po, "budget", json_real(p->budget_units * p->unit_cost));
        json_object_set_new(po, "max_evals", json_integer((json_int_t)p->max_evals));
        /* med_cost_lb: the median with never-reached seeds counted at their total spend, a lower
         * bound on the true median (cost to the band is censored at the spend) */
        double med_cost[N_OPT], med_cost_lb[N_OPT], med_regret[N_OPT], med_best[N_OPT];
        double med_reg_eng[N_OPT];
        for (int o = 0; o < N_OPT; o++) {
            med_cost[o] = med_cost_lb[o] = med_regret[o] = med_best[o] = med_reg_eng[o] = NAN;
            if (!use[o] || !runs_on(o, p))
                continue;
            double c1[256], c1lb[256], c1g[256], bud[N_BUDGET][256], best[256], rg[256], lrr[256],
                fails[256], runs[256], wall[256], sug[256], erg[256], elr[256], epd[256], edv[256],
                eer[256], ecr[256], emd[256], enf[256];
            for (long s = 0; s < n_seeds; s++) {
                const figures f = *FG(pi, o, s);
                const trace *t = TR(pi, o, s);
                erg[s] = f.regret_engine;
                elr[s] = f.lr_ratio_engine;
                epd[s] = f.p_div_engine;
                edv[s] = f.div_engine;
                eer[s] = f.pred_err_engine;
                ecr[s] = f.cost_ratio_engine;
                emd[s] = f.model_engine;
                enf[s] = f.no_failed_engine;
                c1[s] = f.cost_to_1pct / p->unit_cost;
                c1lb[s] = isinf(c1[s]) ? f.spent / p->unit_cost : c1[s];
                c1g[s] = f.cost_to_1pct_global / p->unit_cost;
                for (int k = 0; k < N_BUDGET; k++)
                    bud[k][s] = f.at_budget[k];
                best[s] = f.best;
                rg[s] = f.regret_100x;
                lrr[s] = f.lr_ratio_100x;
                fails[s] = f.n_failed;
                runs[s] = f.n_runs;
                wall[s] = t->wall_s;
                sug[s] = t->n ? t->suggest_s / t->n : NAN;
            }
            json_t *r = json_object();
            json_object_set_new(r, "cost_to_1pct_units", summary(c1, (size_t)n_seeds));
            json_object_set_new(r, "cost_to_1pct_global_units", summary(c1g, (size_t)n_seeds));
            json_t *ab = json_array();
            for (int k = 0; k < N_BUDGET; k++) {
                json_t *b = summary(bud[k], (size_t)n_seeds);
                json_object_set_new(b, "budget_units",
                                    json_real(p->budget_frac[k] * p->budget_units));
                json_array_append_new(ab, b);
            }
            json_object_set_new(r, "objective_at_budget", ab);
            json_object_set_new(r, "best", summary(best, (size_t)n_seeds));
            json_object_set_new(r, "runs", summary(runs, (size_t)n_seeds));
            json_object_set_new(r, "failed_runs", summary(fails, (size_t)n_seeds));
            json_object_set_new(r, "wall_s", summary(wall, (size_t)n_seeds));
            if (o <= OPT_STUDY)
                json_object_set_new(r, "suggest_s", summary(sug, (size_t)n_seeds));
            if (!strcmp(p->name, "sim")) {
                json_object_set_new(r, "regret_100x", summary(rg, (size_t)n_seeds));
                json_object_set_new(r, "lr_ratio_100x", summary(lrr, (size_t)n_seeds));
                med_regret[o] = quantile(rg, (size_t)n_seeds, 0.5);
                if (engine_boot > 0) {
                    /* the engine's recommendation, scored the same way */
                    json_t *e = json_object();
                    json_object_set_new(e, "regret_100x", summary(erg, (size_t)n_seeds));
                    json_object_set_new(e, "lr_ratio_100x", summary(elr, (size_t)n_seeds));
                    json_object_set_new(e, "p_diverge", summary(epd, (size_t)n_seeds));
                    json_object_set_new(e, "diverged", summary(edv, (size_t)n_seeds));
                    json_object_set_new(e, "prediction_error", summary(eer, (size_t)n_seeds));
                    json_object_set_new(e, "cost_ratio", summary(ecr, (size_t)n_seeds));
                    json_object_set_new(e, "used_model", summary(emd, (size_t)n_seeds));
                    size_t nd = 0, nok = 0, nbelow = 0, npd = 0, nnf = 0;
                    for (long s = 0; s < n_seeds; s++) {
                        nd += edv[s] == 1;
                        nok += !isnan(erg[s]);
                        nbelow += erg[s] < 0.01;
                        npd += epd[s] < 0.05;
                        nnf += enf[s] == 1;
                    }
                    json_object_set_new(e, "seeds_scored", json_integer((json_int_t)nok));
                    json_object_set_new(e, "seeds_diverged", json_integer((json_int_t)nd));
                    json_object_set_new(e, "seeds_regret_below_1pct",
                                        json_integer((json_int_t)nbelow));
                    json_object_set_new(e, "seeds_p_diverge_below_5pct",
                                        json_integer((json_int_t)npd));
                    json_object_set_new(e, "seeds_without_failed_runs",
                                        json_integer((json_int_t)nnf));
                    json_object_set_new(r, "engine", e);
                    med_reg_eng[o] = quantile(erg, (size_t)n_seeds, 0.5);
                    /* engine against CARBS' front method on the same sweeps */
                    char key[160];
                    snprintf(key, sizeof(key), "regret_100x_engine_vs_front_method%s%s",
                             o == OPT_SCALETUNE ? "" : "_", o == OPT_SCALETUNE ? "" : opt_names[o]);
                    double a = med_reg_eng[o], b = med_regret[o];
                    json_object_set_new(ratios, key,
                                        isfinite(a) && isfinite(b) && b > 0 ? jnum(a / b)
                                                                            : json_null());
                    if (!(isfinite(a) && isfinite(b)))
                        json_object_set_new(notes, key,
                                            json_string("a median recommendation diverged"));
                }
            }
            med_cost[o] = quantile(c1, (size_t)n_seeds, 0.5);
            med_cost_lb[o] = quantile(c1lb, (size_t)n_seeds, 0.5);
            med_best[o] = quantile(best, (size_t)n_seeds, 0.5);
            json_object_set_new(oo, opt_names[o], r);
        }
        json_object_set_new(po, "optimizers", oo);
        json_object_set_new(jp, p->name, po);

        /* ratios of scaletune's medians to each baseline's: < 1 means scaletune is better */
        for (int o = OPT_FAITHFUL; o < N_OPT; o++) {
            if (!use[o] || !use[OPT_SCALETUNE] || o == OPT_STUDY)
                continue;
            char key[128];
            const char *sfx = strcmp(p->name, "sim") ? p->name : NULL;
            snprintf(key, sizeof(key), "cost_to_1pct_vs_%s%s%s", opt_names[o], sfx ? "_" : "",
                     sfx ? sfx : "");
            double a = med_cost[OPT_SCALETUNE], b = med_cost[o];
            if (isfinite(a) && isfinite(b)) {
                json_object_set_new(ratios, key, jnum(a / b));
            } else if (isfinite(a)) {
                json_object_set_new(ratios, key, jnum(a / med_cost_lb[o]));
                json_object_set_new(notes, key,
                                    json_string("upper bound: the baseline's median seed never "
                                                "reached the band; its spend is a lower bound"));
            } else if (isfinite(b)) {
                json_object_set_new(ratios, key, jnum(med_cost_lb[OPT_SCALETUNE] / b));
                json_object_set_new(notes, key,
                                    json_string("lower bound: scaletune's median seed never "
                                                "reached the band; its spend is a lower bound"));
            } else {
                json_object_set_new(ratios, key, json_null());
                json_object_set_new(notes, key,
                                    json_string("neither median seed reached the band"));
            }
            if (!sfx && engine_boot > 0) {
                /* scaletune's sweep through the engine against the baseline's sweep through
                 * CARBS' front method (what a CARBS user would get) */
                snprintf(key, sizeof(key), "regret_100x_engine_vs_%s_front_method", opt_names[o]);
                a = med_reg_eng[OPT_SCALETUNE];
                b = med_regret[o];
                json_object_set_new(
                    ratios, key, isfinite(a) && isfinite(b) && b > 0 ? jnum(a / b) : json_null());
                if (!(isfinite(a) && isfinite(b)))
                    json_object_set_new(notes, key,
                                        json_string("a median recommendation diverged"));
            }
            if (!sfx) {
                snprintf(key, sizeof(key), "regret_100x_vs_%s", opt_names[o]);
                a = med_regret[OPT_SCALETUNE];
                b = med_regret[o];
                json_object_set_new(
                    ratios, key, isfinite(a) && isfinite(b) && b > 0 ? jnum(a / b) : json_null());
                if (!(isfinite(a) && isfinite(b)))
                    json_object_set_new(notes, key,
                                        json_string("a median recommendation diverged"));
            }
            /* gap to the best achievable objective, at the end of the budget */
            snprintf(key, sizeof(key), "final_gap_vs_%s%s%s", opt_names[o], sfx ? "_" : "",
                     sfx ? sfx : "");
            json_object_set_new(
                ratios, key,
                jnum((med_best[OPT_SCALETUNE] - p->f_best) / (med_best[o] - p->f_best)));
        }
    }
    json_object_set_new(root, "problems", jp);
    json_object_set_new(root, "ratios", ratios);
    json_object_set_new(root, "ratio_notes", notes);
    if (json_dump_file(root, out, JSON_INDENT(1) | JSON_REAL_PRECISION(6)) != 0) {
        fprintf(stderr, "compare: cannot write %s: %s\n", out, strerror(errno));
        return 1;
    }
    fprintf(stderr, "[compare %6.1fs] wrote %s\n", now_s() - t0, out);
    json_decref(root);
    free(traces);
    free(jobs);
    free(figs);
    free(fjobs);
    st_global_cleanup();
    return py_rc ? 1 : 0;
}
