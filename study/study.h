/*
 * study.h — the one route from a stored sweep to the large run, the manual.
 *
 * A study reads a sweep through the runner's typed read (runner_store_read_sweep), applies the
 * single input policy — which parameters, their roles, spaces and bounds, which runs and which
 * kinds of failure — calls fit/'s extrapolation engine once and writes its result as JSON once.
 * `scaletune extrapolate`, `scaletune report` and bench/ all go through here; nothing else reads
 * a store's tables to feed the engine.
 *
 * The input policy (docs/algorithms/extrapolation.md, "What goes in"):
 *  - Parameters: the searched parameters of the sweep file stored with the sweep (or of an
 *    override file), with their spaces, integer rounding and bounds. Fixed numeric parameters
 *    are not fitted; they are copied into the recommendation so it is a complete setting.
 *  - Roles: from the name (fit_xp_role_guess) unless overridden.
 *  - Bounds of the recommendation: model size and tokens (roles N, D, size, steps) are what is
 *    extrapolated, so their searched bounds do not apply (an integer keeps its lower bound).
 *    The learning rate follows its law below its searched range (never above its largest
 *    tried value: the stability boundary is unknown there), the batch above it (never below
 *    its smallest); a warning then names the parameter. Every other parameter stays inside its
 *    searched bounds. Integers are integral.
 *  - Runs: succeeded runs with a finite objective and a cost > 0; failed runs whose failure is
 *    `diverged` (the only kind that teaches the stability boundary). Runs refused or killed
 *    over the cost cap, runs out of memory, timed out, stragglers, infrastructure failures,
 *    stopped, cancelled, pending and running runs never reach the engine; they are counted by
 *    kind in the result.
 *  - Runs whose cost is above fit_max_cost are left out of the fit (report/'s validation).
 *
 * Conventions as fit/ and runner/: functions return st_status, the handle keeps a message
 * (study_errmsg), NULL destroy is a no-op. The library never prints or exits.
 */
#ifndef STUDY_H
#define STUDY_H

#include <stddef.h>
#include <stdint.h>

#include "common/st.h"
#include "fit/extrapolate.h"
#include "runner/runner.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STUDY_MAX_ROLES 32

typedef struct study_options {
    fit_xp_options engine; /* method, level, replicates, seed, P(diverge) limit, priors */
    double compute;        /* target compute in cost units; NAN: factor x the largest run */
    double factor;         /* used when compute is NAN; default 10 */
    double fit_max_cost;   /* runs above this cost stay out of the fit; default +inf */
    /* another sweep file whose spaces, bounds and rounding override the stored one's
     * (matched by parameter name); NULL: the stored sweep file (borrowed) */
    const runner_config *config_override;
    int backtest; /* 1 (default): study_run also runs the leave-largest-group-out backtest */
    /* curve points (study_curves.c, docs/algorithms/extrapolation.md "Curve points"): 1: each
     * successful run's training-loss curve, read from the store by study_open, says what its
     * objective would have been at curve_fractions of its tokens, and those points go to the
     * engine with fit_xp_set_curve_points (weight curve_weight); 0 (default): final values only */
    int curves;
    double curve_weight;       /* in [0, 1]; default 0.5 */
    size_t n_curve_fractions;  /* default 2: 0.25 and 0.5 */
    double curve_fractions[8]; /* each in (0, 1) */
    /* 1 (default): cooldown branches are points of their parents (study_branches_load); 0:
     * left out and counted unused */
    int branches;
    size_t n_roles; /* role overrides: parameter role_name[k] has role[k] */
    const char *role_name[STUDY_MAX_ROLES];
    fit_xp_role role[STUDY_MAX_ROLES];
} study_options;

/* Engine defaults, compute NAN, factor 10, fit_max_cost +inf, backtest on, no overrides. */
study_options study_options_default(void);

/* Why runs of the sweep did not reach the engine. */
typedef struct study_counts {
    size_t n_runs;        /* runs in the sweep */
    size_t n_used;        /* given to the engine: n_succeeded + n_diverged */
    size_t n_succeeded;   /* succeeded with objective and cost */
    size_t n_diverged;    /* failed with kind `diverged`: the stability boundary */
    size_t n_over_budget; /* refused or killed over the cost cap */
    size_t n_resource;    /* out of memory, wall timeout, straggler */
    size_t n_infra;       /* infrastructure failures (retries exhausted) */
    size_t n_unfinished;  /* pending, running or stopped by the user */
    /* stopped early by the stop rule (docs/config.md, "Early stopping"): ended without a final
     * objective, so left out */
    size_t n_stopped_early;
    size_t n_unusable; /* finished but without objective/cost, or values outside the space */
    size_t n_beyond;   /* cost above fit_max_cost (left out of the fit) */
    /* a malformed final record (failure bad_final): a configuration error of the trainer,
     * neither infrastructure nor the stability boundary */
    size_t n_bad_final;
    /* cooldown branches (a final with "branch":1 and "parent_run"): never independent runs,
     * in none of the counts above; points of their parent, or unused (not succeeded, parent
     * not a successful run of the fit, no objective or tokens) */
    size_t n_branch_points;
    size_t n_branch_unused;
} study_counts;

typedef struct study study;

/*
 * Makes a study of sweep `w` (borrowed: it must outlive the study) with options `o` (copied;
 * NULL: defaults). Applies the input policy; does not fit yet. Returns ST_OK, ST_EINVAL (bad
 * option, unknown role override), ST_ENOMEM. *out is NULL on failure; errmsg says why.
 */
st_status study_create(const runner_sweep *w, const study_options *o, study **out, char *errmsg);
/* The same from a store: reads the sweep (NULL: the only one) and owns it. Adds ST_ENOTFOUND,
 * ST_EDB. */
st_status study_open(const char *db_path, const char *sweep, const study_options *o, study **out,
                     char *errmsg);
/* NULL is a no-op. */
void study_destroy(study *s);
/* Curve points derived by study_open (options.curves), 0 without: their count, and point c's
 * engine run, tokens and objective (any output may be NULL). ST_EINVAL for c out of range. */
size_t study_n_curve_points(const study *s);
st_status study_curve_point(const study *s, size_t c, size_t *engine_run, double *D,
                            double *objective);
const char *study_errmsg(const study *s);

/*
 * Runs the engine at the target compute (options compute, or factor x the largest used run).
 * Returns ST_OK (see study_safe), ST_EEMPTY (too few runs; the message says which runs were
 * left out and why), ST_ENUMERIC, ST_ENOMEM.
 */
st_status study_run(study *s);

/* After study_run: 1 when the engine vouches for the recommendation (P(diverge) at or below
 * the limit), 0 when it does not; then study_unsafe_reason says why and which small runs would
 * resolve it. */
int study_safe(const study *s);
const char *study_unsafe_reason(const study *s);

/* The sweep, the counts, the engine (borrowed; NULL before study_run or after it failed), and
 * engine run k's index in the sweep's runs. */
const runner_sweep *study_sweep(const study *s);
const study_counts *study_get_counts(const study *s);
const fit_xp *study_engine(const study *s);
size_t study_n_engine_runs(const study *s);
size_t study_engine_run(const study *s, size_t k);
/* The engine's parameter j is the sweep file's parameter study_engine_param(s, j). */
size_t study_engine_param(const study *s, size_t j);
/* The target compute of the last study_run (NAN before). */
double study_target(const study *s);
/* The study's warnings beyond the engine's ("; "-separated, "" if none). */
const char *study_warnings(const study *s);

/*
 * The engine's own backtest on this sweep (study_options.backtest): the largest fifth of the
 * runs by model size (by cost when N is unknown) held out, the engine fitted on the rest, each
 * held-out run predicted at its own settings. done is 0 when the sweep is too small to split
 * (fewer than 15 successful runs) or the engine failed on the rest.
 */
typedef struct study_backtest_result {
    int done;
    int by_model_size;   /* 1: held out by N; 0: by cost */
    size_t n_held;       /* held-out successful runs predicted */
    size_t n_inside;     /* of them, inside their interval at the engine's level */
    double factor;       /* the largest held-out run's cost / the largest run left in */
    double median_error; /* |predicted - actual| / actual over the held-out runs */
    double worst_error;
} study_backtest_result;

const study_backtest_result *study_get_backtest(const study *s);

/*
 * The result as one JSON document (docs/cli/extrapolate.md lists the fields), NUL-terminated,
 * freed with st_free(). ST_OK, ST_ESTATE (before a successful study_run), ST_ENOMEM.
 */
st_status study_result_json(const study *s, char **out);

/*
 * The whole route in one call, for bindings: opens the store, runs the study of sweep `sweep`
 * (NULL: the only one) at `compute` (NAN: `factor` x the largest run) with `n_boot` replicates
 * and the other defaults, and returns its JSON in *out (free with st_free). An unsafe
 * recommendation is ST_OK with "safe": false in the JSON. Errors as study_open and study_run;
 * errmsg says why.
 */
st_status study_extrapolate_json(const char *db_path, const char *sweep, double compute,
                                 double factor, size_t n_boot, char **out, char *errmsg);

/* ---- study mode: sweeps designed for the large run (docs/algorithms/study-mode.md) ---------- */

typedef struct study_mode_options {
    size_t n_boot;        /* engine replicates in the acquisition (the ensemble), default 32 */
    size_t n_candidates;  /* candidate runs scored per suggestion, default 384 */
    double max_p_diverge; /* candidates predicted to diverge more often are skipped, 0.25 */
    double band;          /* the design spreads log cost over cap / band .. cap, default 100 */
    double ratio_lo;      /* ... and tokens per parameter over ratio_lo .. ratio_hi, */
    double ratio_hi;      /*     default 5 .. 80 (Chinchilla's optimum is about 20) */
    double noise_floor;   /* a small run's result is taken as observed with at least this sd
                             of ln loss (seed noise) in the acquisition, default 0.005 */
    double cost_power;    /* score = weight VR / cost^cost_power, default 1 (per unit cost) */
    int priors;           /* 1 (default): the acquisition's engine keeps its priors (alpha -
                             beta, E, the hyperparameter laws, weight decay); 0: off, so that the
                             replicates' spread is the data's alone */
    int decision;         /* the acquisition's target: 0 (default) the variance of the large
                             run's predicted ln loss; 1 the recommendation's expected regret
                             (the slopes of ln loss there, each weighted by its bowl's
                             1 / (2 curvature)); 2 the loss at each replicate's own optimum */
    double cost_floor;    /* a candidate is charged at least cost_floor x the cap in the score
                             (0: its own cost), default 0 */
    double lr_window;     /* once the engine can fit the released runs' learning-rate law, a
                             design point's learning rate spreads over its fitted optimum at
                             the point's N and D / .. x lr_window (not the whole searched
                             range); default 0: the whole range (the sweep file's
                             optimizer.lr_window sets it) */
} study_mode_options;

study_mode_options study_mode_options_default(void);

/*
 * Study mode's proposer, a runner_propose_fn (runner/runner.h): user is a study_mode_options *
 * (NULL: defaults), borrowed. Reads the sweep at req->db_path (read-only) and uses its first
 * req->n_released runs only. Suggestions with index < the initial design's size (the sweep
 * file's optimizer.initial_design, else max(8, budget_runs / 4), 16 without a run budget) are a
 * scrambled Sobol design over the compute-optimal band under the cost cap (a categorical's
 * levels balanced over it, a conditional parameter NaN where inactive); later ones the
 * acquisition: the candidate with the largest expected reduction of the variance of the large
 * run's predicted loss per unit cost, the pending suggestions conditioned on as fantasies; the
 * design again while the engine cannot fit the runs. The large run's compute: target_compute,
 * else target_factor x max_cost_per_run, else 100 x the largest successful run. Deterministic:
 * draws only from req->seed and the sweep's seed. Fills x (cfg->n_params, file order, natural
 * units). ST_OK, ST_EINVAL (a searched parameter without usable bounds, or a conditional one
 * that sizes the run), ST_EDB, ST_ENOTFOUND, ST_ENOMEM; errmsg says why.
 */
st_status study_proposer(void *user, const runner_propose_request *req, double *x, char *errmsg);

/* The same on a sweep already read (w: its runs in suggestion order; req->db_path unused),
 * for in-process drivers and benchmarks. opts NULL: defaults. */
st_status study_propose(const runner_sweep *w, const runner_propose_request *req,
                        const study_mode_options *opts, double *x, char *errmsg);

/* One run of a plan: its setting and what it would buy. */
typedef struct study_pick {
    double *x;        /* cfg->n_params values, file order (owned by the plan) */
    double cost;      /* its cost (cost expr, else exp(k) N D with the engine's k) */
    double p_diverge; /* the engine's mean P(diverge) for it */
    double vr;        /* expected reduction of var(ln loss at the target) when it runs */
    double halfwidth; /* the large run's predicted relative half-width after this pick and
                         the ones before it (the engine's level, run noise included) */
} study_pick;

/* The runs that would shrink the large run's interval most per cost (study_plan_make). */
typedef struct study_plan {
    size_t n_params;        /* values per pick */
    size_t n_picks;         /* <= k: fewer when no candidate adds information */
    study_pick *picks;      /* in order of choice */
    double compute;         /* the large run's compute */
    double objective;       /* its predicted objective (the engine's recommendation) */
    double halfwidth;       /* its relative half-width now: z sqrt(var + sigma^2) */
    double halfwidth_model; /* the part the small runs can shrink: z sqrt(var) */
    double sigma;           /* run noise, sd of ln loss */
    size_t n_candidates;    /* candidates scored (under the cap, P(diverge) small) */
    double fit_seconds;     /* the engine's fit */
    double acq_seconds;     /* predictions and the greedy batch */
    double *x_all;          /* the picks' values (private) */
} study_plan;

/*
 * Fits the engine (o->n_boot replicates, no backtest) on the first n_use runs of sweep w (its
 * suggestions, in order, with the cooldown branches of those wherever their rows are) at
 * compute C (NAN: factor x the largest successful run), and chooses up to k runs greedily,
 * conditioning on the n_pending settings in pending (cfg->n_params each) first. seed draws the
 * candidates. *out: free with study_plan_free. ST_OK; ST_EEMPTY or ST_ENOTFOUND when the engine
 * cannot fit a model of every run yet (too few runs, no N, D or learning rate); ST_EINVAL,
 * ST_ENUMERIC, ST_ENOMEM; errmsg says why.
 */
st_status study_plan_make(const runner_sweep *w, size_t n_use, const double *pending,
                          size_t n_pending, double compute, double factor, size_t k, uint64_t seed,
                          const study_mode_options *o, study_plan **out, char *errmsg);
/* NULL is a no-op. */
void study_plan_free(study_plan *p);
/* ---- early stopping in study mode (study_stop.c) ------------------------------------------ */

/* How far from the compute-optimal N a run must be (either way, as a factor) to be stopped. */
#define STUDY_STOP_BAND 3.0

/*
 * The study-mode rule (pure): natural = the engine's Chinchilla (A, B, E, alpha, beta); a run of
 * N parameters planned for D tokens (C = 6 N D) whose final loss is at least `bound` is stopped
 * when N is more than STUDY_STOP_BAND times off the compute-optimal N_opt(C) (fit_allocate)
 * either way and bound > L_opt(C) (1 + margin): far from the band the recommendation is read
 * from, and unable to reveal a better region, its outcome would not change the engine's answer
 * much. *stop; why (may be NULL; 200 bytes) says so with the numbers.
 */
void study_stop_rule(const double natural[5], double N, double D, double bound, double margin,
                     int *stop, char *why);

/* The state of the study-mode stop check: the engine's law, refitted (study_open + study_run,
 * 20 replicates, no backtest) once 8 runs have succeeded and again every 5 more. */
typedef struct study_stop study_stop;
st_status study_stop_create(study_stop **out);
/* NULL is a no-op. */
void study_stop_destroy(study_stop *s);

/*
 * A runner_stop_fn (ctx: a study_stop): study_stop_rule with the run's N (its parameter with
 * role N), its planned tokens, the lower end of runner_curve_interval and cfg->es_margin. No
 * verdict (ST_OK, stop 0) before the engine has a law, when N or D is unknown, or with too few
 * points; errors of the curve interval are returned (the controller does not stop then).
 */
st_status study_stop_check(void *ctx, const runner_config *cfg, const char *db_path,
                           const runner_curve *c, runner_stop_verdict *v);

#ifdef __cplusplus
}
#endif
#endif /* STUDY_H */
