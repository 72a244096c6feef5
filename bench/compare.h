/*
 * compare.h — the parts of bench/compare (docs/benchmarks.md sections 2-4): the problems and
 * serve mode (compare_problems.c), one optimizer run's trace and its figures (compare.c), and
 * the JSON of medians and ratios (compare_json.c). Bench code, not part of the library.
 */
#ifndef ST_BENCH_COMPARE_H
#define ST_BENCH_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "bench/sim.h"
#include "carbs/carbs.h"

#define MAX_DIM  8
#define N_BUDGET 3

/* ---- problems (compare_problems.c) --------------------------------------------------------- */

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

/* Sets up problem `name` (sim, branin, hartmann6; `quick`: smaller budgets); -1 if unknown. */
int compare_make_problem(const char *name, int quick, problem *p);
/* The noise seed of run i of optimizer seed s: the same for every optimizer. */
uint64_t compare_noise_seed(uint64_t seed, size_t i);
/* `compare --serve PROBLEM`: evaluates 'noise_seed x...' lines from stdin for the Python driver
 * (one truth); returns the exit status. */
int compare_serve(const char *name);

/* ---- one optimizer run and its figures (compare.c) ----------------------------------------- */

typedef struct trace {
    size_t n;
    double x[128][MAX_DIM];
    double obs[128], truth[128], cost[128];
    int failed[128];
    double wall_s, suggest_s;
    int error;
} trace;

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

enum { OPT_SCALETUNE, OPT_FAITHFUL, OPT_STUDY, OPT_RANDOM, OPT_TPE, OPT_CMAES, N_OPT };
extern const char *const compare_opt_names[N_OPT];
/* scaletune_study is a sweep design for the simulator's scaling study only */
int compare_runs_on(int o, const problem *p);

/* Every trace and its figures, indexed [problem][optimizer][seed]. */
typedef struct compare_set {
    const problem *probs;
    size_t n_prob;
    int use[N_OPT];
    size_t n_seeds;
    trace *traces;
    figures *figs;
} compare_set;

static inline size_t compare_index(const compare_set *cs, size_t pi, int o, size_t s)
{
    return (pi * N_OPT + (size_t)o) * cs->n_seeds + s;
}

/* ---- the JSON (compare_json.c) -------------------------------------------------------------- */

/* The "problems" object (per problem, per optimizer: the figures' medians and quartiles) and,
 * into `ratios` and `notes`, scaletune's medians against each baseline's; engine_boot > 0 adds
 * the extrapolation engine's figures on the simulator. */
json_t *compare_problems_json(const compare_set *cs, long engine_boot, json_t *ratios,
                              json_t *notes);

#endif
