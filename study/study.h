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
 *  - Bounds of the recommendation: model size and tokens (roles N, D, size) are what is
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
    int backtest;   /* 1 (default): study_run also runs the leave-largest-group-out backtest */
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
    size_t n_unfinished;  /* pending, running or stopped */
    size_t n_unusable;    /* finished but without objective/cost, or values outside the space */
    size_t n_beyond;      /* cost above fit_max_cost (left out of the fit) */
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

#ifdef __cplusplus
}
#endif
#endif /* STUDY_H */
