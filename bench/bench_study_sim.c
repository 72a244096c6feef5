/*
 * bench_study_sim.c — study mode offline, in-process (docs/algorithms/study-mode.md, "Measured"):
 * on bench/sim.h's worlds, a sweep whose every suggestion comes from study_propose (the
 * proposer study mode gives the runner, on the runs so far, one at a time) against a random
 * search of the same size under the same cap, each judged as `scaletune extrapolate` judges:
 * the engine's recommendation at 100x the cap, its regret against the oracle at its compute,
 * its predicted interval and error. No runner, no store, no processes: the runs are sim_run's
 * (the simulator llmsim speaks). Not a test; prints a table, and on stderr where each sweep's
 * regret comes from (the oracle's terms against the recommendation's).
 * Environment: STUDY_ONLY / RANDOM_ONLY run one mode; STUDY_COST_POWER, STUDY_PRIORS,
 * STUDY_DECISION, STUDY_COST_FLOOR, STUDY_LR_WINDOW set study_mode_options; STUDY_DESIGN the
 * initial design's size; BENCH_DUMP lists the runs; BENCH_CSV=FILE writes them in
 * tests/data/extrapolate's columns (the last world's last mode); BENCH_TRACE says from which run
 * the acquisition's engine can fit. BENCH_FIT_CSV=FILE runs no sweep: the runs of FILE
 * (BENCH_CSV's columns) are judged in each world of --worlds, so that two engines can be
 * compared on the same stored sweep.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_rng.h>

#include "bench/sim.h"
#include "fit/fit.h"
#include "study/study.h"
#include "study/study_int.h" /* the random baseline uses the study's cube (study_space) */

static const char *const yaml =
    "name: sim\n"
    "command: [\"true\"]\n"
    "objective: {metric: val_loss}\n"
    "cost: {metric: flops, expr: \"6 * {N} * {tokens}\"}\n"
    "parameters:\n"
    "  N:            {space: log, min: 2.0e6, max: 6.0e7, center: 1.0e7}\n"
    "  tokens:       {space: log, min: 4.0e7, max: 2.0e9, center: 2.0e8}\n"
    "  lr:           {space: log, min: 1.0e-4, max: 0.5, center: 3.0e-3}\n"
    "  batch:        {space: log, min: 2.0e3, max: 1.0e6, center: 3.0e4}\n"
    "  warmup:       {space: logit, min: 0.0, max: 0.5, center: 0.02}\n"
    "  weight_decay: {space: log, min: 1.0e-3, max: 1.0, center: 0.1}\n"
    "budget: {runs: 1000, max_cost_per_run: 1.0e16}\n";

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Runs setting x in world `law` and appends it to w. */
static void run_and_add(const sim_law *law, runner_sweep *w, const double *x, uint64_t seed)
{
    runner_sweep_run *u = &w->runs[w->n_runs];
    memset(u, 0, sizeof(*u));
    u->id = ++w->n_runs;
    u->x = malloc(6 * sizeof(double));
    memcpy(u->x, x, 6 * sizeof(double));
    sim_setting s = {x[0], x[1], x[2], x[3], x[4], x[5], 0};
    double obs = NAN, step;
    int div = 0;
    u->predicted_cost = u->final_N = u->final_D = NAN;
    if (sim_run(law, &s, seed, &obs, &div, &step, NULL) != ST_OK || div || !isfinite(obs)) {
        u->status = RUNNER_RUN_FAILED;
        u->failure = RUNNER_FAIL_DIVERGED;
        u->objective = u->cost = NAN;
        return;
    }
    u->status = RUNNER_RUN_SUCCEEDED;
    u->objective = obs;
    u->cost = 6 * x[0] * x[1];
}

typedef struct outcome {
    double regret, halfwidth, error, sweep_cost, seconds;
    size_t n_div, n_runs;
} outcome;

/* The engine at 100x the cap, judged against the truth. */
static void judge(const sim_law *law, const runner_sweep *w, outcome *o)
{
    o->regret = o->halfwidth = o->error = INFINITY;
    study_options so = study_options_default();
    so.compute = 100 * w->cfg->max_cost_per_run;
    so.backtest = 0;
    study *st = NULL;
    char em[ST_ERRMSG_MAX];
    if (study_create(w, &so, &st, em) || study_run(st)) {
        fprintf(stderr, "judge: %s\n", st ? study_errmsg(st) : em);
        study_destroy(st);
        return;
    }
    fit_xp_result r;
    fit_xp_get_result(study_engine(st), &r);
    sim_setting s = {r.value[0], r.value[1], r.value[2], r.value[3], r.value[4], r.value[5], 0};
    sim_terms t;
    sim_setting best;
    double oracle;
    if (sim_eval(law, &s, &t, NULL) == ST_OK &&
        sim_oracle(law, 6 * s.N * s.D, &best, &oracle) == ST_OK) {
        o->regret = t.loss / oracle - 1;
        o->error = r.objective / t.loss - 1;
        sim_terms tb;
        if (sim_eval(law, &best, &tb, NULL) == ST_OK) /* where the regret comes from */
            fprintf(stderr,
                    "regret parts: L(N,D) %+.2f%% (N/N* %.2f) lr/lr* %.2f batch/batch* %.2f "
                    "penalties lr-batch %.2f%% warmup %.2f%% wd %.2f%% (oracle %.2f%% %.2f%% "
                    "%.2f%%) warmup %.3f (oracle %.3f) wd %.3g (oracle %.3g)\n",
                    100 * (t.loss_nd / tb.loss_nd - 1), s.N / best.N, s.lr / t.lr_opt,
                    s.batch / t.batch_opt, 100 * t.pen_lr_bs, 100 * t.pen_warmup, 100 * t.pen_wd,
                    100 * tb.pen_lr_bs, 100 * tb.pen_warmup, 100 * tb.pen_wd, s.warmup, best.warmup,
                    s.weight_decay, best.weight_decay);
    }
    o->halfwidth = 0.5 * (r.objective_hi - r.objective_lo) / r.objective;
    study_destroy(st);
}

/* The runs of a CSV in BENCH_CSV's columns into w (w->runs holds at least cap rows). */
static int read_runs_csv(const char *path, runner_sweep *w, size_t cap)
{
    char em[ST_ERRMSG_MAX];
    fit_table *t = NULL;
    if (fit_table_read_csv(path, NULL, &t, em) != ST_OK) {
        fprintf(stderr, "%s\n", em);
        return -1;
    }
    static const char *const names[6] = {"N", "tokens", "lr", "batch", "warmup", "weight_decay"};
    size_t n = fit_table_n_rows(t);
    double *x = malloc(n * 6 * sizeof(double));
    const double *loss = fit_table_column(t, "loss"), *div = fit_table_column(t, "diverged");
    if (!x || n > cap || !loss || !div || fit_table_matrix(t, 6, names, x, em) != ST_OK) {
        fprintf(stderr,
                "%s: need at most %zu rows of N, tokens, lr, batch, warmup, "
                "weight_decay, loss, diverged\n",
                path, cap);
        free(x);
        fit_table_destroy(t);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        runner_sweep_run *u = &w->runs[w->n_runs];
        memset(u, 0, sizeof(*u));
        u->id = ++w->n_runs;
        u->x = malloc(6 * sizeof(double));
        memcpy(u->x, &x[6 * i], 6 * sizeof(double));
        u->predicted_cost = u->final_N = u->final_D = NAN;
        u->status = div[i] != 0 ? RUNNER_RUN_FAILED : RUNNER_RUN_SUCCEEDED;
        u->failure = div[i] != 0 ? RUNNER_FAIL_DIVERGED : u->failure;
        u->objective = div[i] != 0 ? NAN : loss[i];
        u->cost = div[i] != 0 ? NAN : 6 * x[6 * i] * x[6 * i + 1];
    }
    free(x);
    fit_table_destroy(t);
    return 0;
}

/* BENCH_FIT_CSV: the stored sweep judged in world `law`, as a sweep of the bench would be. */
static int judge_csv(const sim_law *law, runner_config *cfg, const char *path, outcome *o)
{
    size_t cap = 100000;
    runner_sweep w = {cfg, calloc(cap, sizeof(runner_sweep_run)), 0};
    memset(o, 0, sizeof(*o));
    int rc = w.runs ? read_runs_csv(path, &w, cap) : -1;
    if (rc == 0) {
        o->n_runs = w.n_runs;
        for (size_t i = 0; i < w.n_runs; i++) {
            o->sweep_cost += 6 * w.runs[i].x[0] * w.runs[i].x[1];
            o->n_div += w.runs[i].status == RUNNER_RUN_FAILED;
        }
        judge(law, &w, o);
    }
    for (size_t i = 0; i < w.n_runs; i++)
        free(w.runs[i].x);
    free(w.runs);
    return rc;
}

static void sweep(const sim_law *law, runner_config *cfg, int world, int study_mode, size_t n,
                  outcome *o)
{
    runner_sweep w = {cfg, calloc(n, sizeof(runner_sweep_run)), 0};
    study_space sp;
    char em[ST_ERRMSG_MAX];
    study_space_init(&sp, cfg, NULL, em);
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, (unsigned long)world);
    double t0 = now_s(), x[6], u[6];
    for (size_t i = 0; i < n; i++) {
        if (study_mode) {
            runner_propose_request rq = {cfg, NULL, "sim", i,
                                         i,   NULL, 0,     st_mix64(cfg->seed ^ (i + 1))};
            study_mode_options mo = study_mode_options_default();
            if (getenv("STUDY_COST_POWER"))
                mo.cost_power = atof(getenv("STUDY_COST_POWER"));
            if (getenv("STUDY_PRIORS"))
                mo.priors = atoi(getenv("STUDY_PRIORS"));
            if (getenv("STUDY_DECISION"))
                mo.decision = atoi(getenv("STUDY_DECISION"));
            if (getenv("STUDY_COST_FLOOR"))
                mo.cost_floor = atof(getenv("STUDY_COST_FLOOR"));
            if (getenv("STUDY_LR_WINDOW"))
                mo.lr_window = atof(getenv("STUDY_LR_WINDOW"));
            if (study_propose(&w, &rq, &mo, x, em)) {
                fprintf(stderr, "study_propose: %s\n", em);
                break;
            }
        } else { /* random in the cube, redrawn until under the cap (the runner refuses) */
            do {
                for (size_t j = 0; j < 6; j++)
                    u[j] = gsl_rng_uniform(g);
                study_space_from_unit(&sp, u, x);
            } while (6 * x[0] * x[1] > cfg->max_cost_per_run);
        }
        run_and_add(law, &w, x, 1000003ull * (uint64_t)world + i);
    }
    o->seconds = now_s() - t0;
    o->sweep_cost = 0;
    o->n_div = 0;
    for (size_t i = 0; i < w.n_runs; i++) {
        o->sweep_cost += 6 * w.runs[i].x[0] * w.runs[i].x[1];
        o->n_div += w.runs[i].status == RUNNER_RUN_FAILED;
    }
    judge(law, &w, o);
    FILE *csv = getenv("BENCH_CSV") ? fopen(getenv("BENCH_CSV"), "w") : NULL;
    if (csv)
        fprintf(csv, "N,tokens,lr,batch,warmup,weight_decay,loss,diverged\n");
    for (size_t i = 0; csv && i < w.n_runs; i++) {
        const runner_sweep_run *r = &w.runs[i];
        int ok = r->status == RUNNER_RUN_SUCCEEDED;
        fprintf(csv, "%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%d\n", r->x[0], r->x[1], r->x[2],
                r->x[3], r->x[4], r->x[5], ok ? r->objective : 1.0, !ok);
    }
    if (csv)
        fclose(csv);
    for (size_t i = 0; getenv("BENCH_DUMP") && i < w.n_runs; i++) {
        const runner_sweep_run *r = &w.runs[i];
        double lopt = sim_lr_opt(law, r->x[0], r->x[1]);
        /* the weight decay that puts this run's AdamW timescale at the world's optimum */
        double wd_opt = r->x[3] / (r->x[2] * sim_tau_opt(law, r->x[0], r->x[1]) * r->x[1]);
        fprintf(stderr,
                "%s run %2zu: cost %.2e N %.2e D/N %5.1f lr/lr_opt %6.2f batch %.2e warmup %.3f "
                "wd %.3f (wd/wd_opt %.3g) %s %.4f\n",
                study_mode ? "study" : "random", i, 6 * r->x[0] * r->x[1], r->x[0],
                r->x[1] / r->x[0], r->x[2] / lopt, r->x[3], r->x[4], r->x[5], r->x[5] / wd_opt,
                r->status == RUNNER_RUN_SUCCEEDED ? "ok " : "div", r->objective);
    }
    for (size_t nu = 12; getenv("BENCH_TRACE") && nu <= w.n_runs; nu += 2) {
        study_plan *pl = NULL;
        st_status rc = study_plan_make(&w, nu, NULL, 0, 1e18, 100, 1, 1, NULL, &pl, em);
        fprintf(stderr, "plan on the first %zu runs: %s %s\n", nu, st_strerror(rc), rc ? em : "");
        study_plan_free(pl);
    }
    if (getenv("BENCH_DEBUG")) {
        study_plan *pl = NULL;
        st_status rc = study_plan_make(&w, w.n_runs, NULL, 0, 1e18, 100, 1, 1, NULL, &pl, em);
        fprintf(stderr, "plan on the final sweep: %s %s\n", st_strerror(rc), em);
        study_plan_free(pl);
    }
    for (size_t i = 0; i < w.n_runs; i++)
        free(w.runs[i].x);
    free(w.runs);
    study_space_clear(&sp);
    gsl_rng_free(g);
}

#define MAX_WORLDS 1000

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Each mode's regret at 100x over its worlds: median, worst, how many under 1% (a failed judge
 * counts as infinite). */
static void summary(double regrets[2][MAX_WORLDS], const size_t n_out[2])
{
    for (int mode = 1; mode >= 0; mode--) {
        size_t k = n_out[mode], under = 0;
        if (!k)
            continue;
        qsort(regrets[mode], k, sizeof(double), cmp_double);
        for (size_t i = 0; i < k; i++)
            under += regrets[mode][i] < 0.01;
        double med =
            k % 2 ? regrets[mode][k / 2] : 0.5 * (regrets[mode][k / 2 - 1] + regrets[mode][k / 2]);
        printf("\n%s: regret at 100x over %zu worlds: median %.2f%%, worst %.2f%%, under 1%% in "
               "%zu\n",
               mode ? "study" : "random", k, 100 * med, 100 * regrets[mode][k - 1], under);
    }
}

int main(int argc, char **argv)
{
    static double regrets[2][MAX_WORLDS];
    size_t n_out[2] = {0, 0};
    int first = 1, last = 3;
    size_t n = 50;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: bench_study_sim [--worlds A-B] [--runs N]\n"
                   "study mode against random search on bench/sim.h's worlds A-B (default 1-3),\n"
                   "N runs each (default 50); environment variables: see the file's header.\n");
            return 0;
        }
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--worlds"))
            sscanf(argv[i + 1], "%d-%d", &first, &last);
        else if (!strcmp(argv[i], "--runs"))
            n = (size_t)atoi(argv[i + 1]);
    }
    st_global_init();
    printf("| world | mode | runs | diverged | sweep cost | 100x regret | +/- | error | seconds |\n"
           "|---|---|---|---|---|---|---|---|---|\n");
    int only_study = getenv("STUDY_ONLY") != NULL;
    for (int world = first; world <= last; world++) {
        sim_law law;
        sim_law_draw((uint64_t)world, &law);
        char em[ST_ERRMSG_MAX];
        runner_config *cfg = NULL;
        if (runner_config_load_string(yaml, strlen(yaml), "sim", &cfg, em)) {
            fprintf(stderr, "%s\n", em);
            return 1;
        }
        cfg->seed = (uint64_t)world;
        cfg->target_factor = 100;
        cfg->budget_runs = n; /* the initial design: max(8, n / 4), or STUDY_DESIGN */
        if (getenv("STUDY_DESIGN"))
            cfg->design_initial = (size_t)atoi(getenv("STUDY_DESIGN"));
        int first_mode = getenv("RANDOM_ONLY") ? 0 : 1;
        if (getenv("BENCH_FIT_CSV")) { /* no sweep: the stored one, judged here */
            outcome o;
            if (judge_csv(&law, cfg, getenv("BENCH_FIT_CSV"), &o))
                return 1;
            printf("| %d | stored | %zu | %zu | %.3g | %.2f%% | %.2f%% | %+.2f%% | 0 |\n", world,
                   o.n_runs, o.n_div, o.sweep_cost, 100 * o.regret, 100 * o.halfwidth,
                   100 * o.error);
            runner_config_destroy(cfg);
            continue;
        }
        for (int mode = first_mode; mode >= (only_study ? 1 : 0); mode--) {
            outcome o;
            sweep(&law, cfg, world, mode, n, &o);
            if (n_out[mode] < MAX_WORLDS)
                regrets[mode][n_out[mode]++] = o.regret;
            printf("| %d | %s | %zu | %zu | %.3g | %.2f%% | %.2f%% | %+.2f%% | %.0f |\n", world,
                   mode ? "study" : "random", n, o.n_div, o.sweep_cost, 100 * o.regret,
                   100 * o.halfwidth, 100 * o.error, o.seconds);
            fflush(stdout);
        }
        runner_config_destroy(cfg);
    }
    summary(regrets, n_out);
    return 0;
}
