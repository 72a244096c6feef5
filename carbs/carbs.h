/*
 * carbs.h — scaletune's cost-aware Bayesian optimizer (after Imbue's CARBS), the manual.
 *
 * An optimizer handle keeps observations (parameters x, an objective output, a cost > 0, and
 * whether the run failed) and outstanding suggestions. carbs_suggest() proposes the run that
 * promises the most improvement over the cost/objective Pareto front at its own predicted cost:
 * Gaussian processes model output, cost and failure; candidates are drawn around Pareto points.
 * Algorithm and the differences from CARBS: docs/algorithms/carbs.md and shared specs/carbs.md.
 *
 * Conventions:
 *  - Parameter vectors are `double[D]` in parameter units (the user's values), in the order the
 *    parameters were given to carbs_create(). Suggested integers are already rounded.
 *  - Every function that can fail returns st_status and, on failure, leaves a message that
 *    carbs_errmsg() returns until the next call on the same handle. Every call clears it.
 *  - The library copies what it keeps. Pointers it returns are borrowed (valid until the next
 *    call on the handle) unless the function is named *_export (free with st_free()).
 *  - Pure: no I/O except carbs_save_file/carbs_load_file, no globals, no clock. The same
 *    observations, outstanding suggestions, options and seed give the same suggestion.
 *  - Thread-safety: a handle must not be used by two threads at once; different handles are
 *    independent. Call st_global_init() once before use (GSL error handler). Suggest is
 *    fastest with one BLAS thread (OPENBLAS_NUM_THREADS=1): docs/algorithms/carbs.md.
 */
#ifndef CARBS_H
#define CARBS_H

#include <stddef.h>
#include <stdint.h>

#include "common/st.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct carbs carbs;

/* ---- parameter spaces -------------------------------------------------------------------- */

typedef enum carbs_space_kind {
    CARBS_SPACE_LINEAR = 0, /* basic b = v / scale */
    CARBS_SPACE_LOG = 1,    /* basic b = log_base(v) / scale */
    CARBS_SPACE_LOGIT = 2,  /* basic b = log10(v / (1 - v)) / scale */
    /* one of n_choices unordered choices; the value is the choice's index 0 .. n_choices - 1
     * (a double holding an integer). The GPs see it one-hot encoded, with a lengthscale per
     * choice (docs/algorithms/carbs.md, "Categorical and conditional parameters") */
    CARBS_SPACE_CATEGORICAL = 3,
} carbs_space_kind;

#define CARBS_CHOICES_MAX 64 /* choices of a categorical parameter (active_mask has 64 bits) */

/*
 * One search dimension. Fill with carbs_param_init() and then change fields.
 *  name        copied by carbs_create; unique, non-empty.
 *  min, max    bounds in parameter units; -INFINITY/+INFINITY for none. Defaults per space:
 *              linear (-inf, +inf), log (0, +inf), logit (0, 1). Bounds are exclusive in the
 *              basic space; for integers the bound used is min - 0.1 and max + 0.1 so that the
 *              end values are admissible (CARBS).
 *  center      search centre in parameter units: where the random phase looks. Must lie strictly
 *              inside the bounds (an integer may sit on its bound).
 *  scale       > 0; divides the basic coordinate, so a larger scale makes the same search radius
 *              cover more of the space. Default NAN, "auto": a linear space with both bounds
 *              finite gets (max - min) / 4 (at least 2 * rounding for an integer), so that
 *              its range spans 4 basic units as four decades of a log space do; every other
 *              space, and every space in faithful mode, gets CARBS' 1. carbs_get_param gives
 *              the scale in force.
 *  base        log base (> 1) for CARBS_SPACE_LOG. Default 10.
 *  is_integer  round suggested values to a multiple of `rounding` (linear and log spaces).
 *  rounding    > 0, default 1 (e.g. 16 for model widths).
 *  n_choices   CARBS_SPACE_CATEGORICAL: 2 .. CARBS_CHOICES_MAX. min, max, scale, base,
 *              is_integer and rounding are then ignored (the bounds become 0 and n_choices - 1);
 *              center is the index of the choice the search starts from. Default 0.
 *  active_if   NULL (default): always active. Else the name of a categorical parameter that
 *              comes earlier in the list; this parameter is active only when that one is
 *              active and its choice index k has bit k set in active_mask (beta2 only when
 *              optimizer == adamw). An inactive parameter's value is NaN in every suggestion,
 *              any value (NaN included) is accepted for it by observe, and the models see it
 *              at its search centre (imputation, as in Levesque et al. 2017, "Bayesian
 *              optimization for conditional hyperparameter spaces").
 *  active_mask bit k: active when active_if's choice is k; non-zero when active_if is set.
 */
typedef struct carbs_param {
    const char *name;
    carbs_space_kind space;
    double min, max;
    double center;
    double scale;
    double base;
    int is_integer;
    double rounding;
    size_t n_choices;
    const char *active_if;
    uint64_t active_mask;
} carbs_param;

/* Sets the defaults above for `space`, with the given name (not copied here) and centre. For
 * CARBS_SPACE_CATEGORICAL set n_choices afterwards. */
void carbs_param_init(carbs_param *p, const char *name, carbs_space_kind space, double center);

/* ---- options ----------------------------------------------------------------------------- */

typedef enum carbs_mode {
    /* MAP-fitted GP hyperparameters (L-BFGS, analytic gradients, restarts), quasi-random
     * initial design, linear kernel centred at the search centre, Phi(-mu/sigma) success. */
    CARBS_MODE_RECOMMENDED = 0,
    /* CARBS' behaviour: fixed initial hyperparameters moved by 1000 Adam steps at lr 1e-4,
     * noise drawn from its prior, Gaussian initial design, variance used as the scale of the
     * success probability. For benchmarks against CARBS itself. */
    CARBS_MODE_FAITHFUL = 1,
} carbs_mode;

typedef enum carbs_fantasy {
    CARBS_FANTASY_THOMPSON = 0, /* sample f ~ posterior at outstanding points, sequentially */
    CARBS_FANTASY_MEAN = 1,     /* posterior mean ("kriging believer") */
} carbs_fantasy;

typedef enum carbs_design {
    CARBS_DESIGN_AUTO = 0,     /* recommended mode: HALTON; faithful mode: GAUSSIAN */
    CARBS_DESIGN_HALTON = 1,   /* scrambled Halton through the normal inverse CDF */
    CARBS_DESIGN_SOBOL = 2,    /* Sobol (randomly shifted) through the normal inverse CDF */
    CARBS_DESIGN_GAUSSIAN = 3, /* i.i.d. Gaussian around the centre (CARBS) */
} carbs_design;

typedef enum carbs_transform {
    CARBS_TRANSFORM_AUTO = 0,     /* recommended mode: RANK; faithful mode: QUANTILE */
    CARBS_TRANSFORM_QUANTILE = 1, /* sklearn QuantileTransformer, sqrt(n) quantiles (CARBS) */
    CARBS_TRANSFORM_RANK = 2,     /* rank-Gaussian with linear tails */
} carbs_transform;

/*
 * Options, filled by carbs_options_default(); names in brackets are the carbs_set_option() keys.
 * Defaults are CARBS' own unless stated.
 */
typedef struct carbs_options {
    carbs_mode mode;                  /* [mode] recommended */
    int maximize;                     /* [maximize] 0: minimise the output (default) */
    uint64_t seed;                    /* [seed] 0 */
    size_t num_random_samples;        /* [num_random_samples] 4; initial design size */
    int failures_count_as_random;     /* [failures_count_as_random] -1 auto: yes in recommended
                                         mode, no in faithful mode (CARBS counts successes) */
    carbs_design design;              /* [design] auto */
    double search_radius;             /* [search_radius] 0.3 (basic units) */
    double exploration_bias;          /* [exploration_bias] NaN = auto: xi of EI in normal
                                         quantiles; 0 in recommended mode, 1 (CARBS) faithful */
    size_t candidates_per_dim;        /* [candidates_per_dim] 100 */
    size_t resample_frequency;        /* [resample_frequency] 5; 0 disables resampling */
    double max_suggestion_cost;       /* [max_suggestion_cost] +inf: no cap. A hard cap held in
                                         every phase (random, resample, Bayes, fallback): see
                                         "The cost cap" below */
    double min_pareto_cost_fraction;  /* [min_pareto_cost_fraction] 0.2 */
    int pareto_conservative;          /* [pareto_conservative] 1 */
    int ei_clamp;                     /* [ei_clamp] 1: random-cost clamp of the Pareto value */
    int ei_always_max;                /* [ei_always_max] 0: ablation, compare with best output */
    carbs_fantasy fantasy;            /* [fantasy] thompson */
    size_t max_outstanding_age;       /* [max_outstanding_age] 0: never expire; else an
                                         outstanding suggestion is forgotten once this many
                                         observations arrived after it */
    carbs_transform output_transform; /* [output_transform] auto: objective -> surrogate map */
    size_t gp_restarts;               /* [gp_restarts] 1: extra L-BFGS starts (recommended) */
    size_t gp_max_fit_points;         /* [gp_max_fit_points] 128: hyperparameters are fitted on
                                         at most this many points (a seeded subset); the
                                         posterior always uses all of them (recommended) */
    double cost_cap_quantile;         /* [cost_cap_quantile] 0.9: without a cost function, a
                                         point is admissible under max_suggestion_cost when
                                         this quantile of its predicted cost is (in (0, 1)) */
    size_t gp_max_points;             /* [gp_max_points] 256: with more successful runs than
                                         this, the output and cost GPs (and the success GP, over
                                         all runs) condition on this many of them, chosen from
                                         the runs alone: the Pareto groups, the best, the most
                                         recent, the nearest to the front, then a spread by a
                                         hash of the run's index (recommended mode; 0: all, as
                                         faithful mode always does; else at least 16) */
} carbs_options;

carbs_options carbs_options_default(void);

/*
 * Sets one option by name from a string ("faithful", "1e14", "true"), for config files and the
 * CLI. On a live handle only options that do not change the space may be set; the next suggest
 * uses them. Returns ST_OK, ST_ENOTFOUND (unknown name) or ST_EINVAL (bad value).
 */
st_status carbs_options_set(carbs_options *o, const char *name, const char *value, char *errmsg);

/* The option table: for i = 0, 1, ... until NULL; name, type word and help text (borrowed). */
const char *carbs_option_name(size_t i, const char **type, const char **help);

/* ---- lifecycle --------------------------------------------------------------------------- */

/*
 * Creates an optimizer over `n_params` dimensions (copied) with `opts` (copied; NULL for the
 * defaults). *out is NULL on failure. `errmsg` (ST_ERRMSG_MAX bytes, may be NULL) receives the
 * reason on failure: which parameter and which field.
 * n_params 0 (params may then be NULL) is a space with nothing to search, such as a one-run
 * sweep whose parameters are all fixed: every suggestion is the same empty point (x_out gets
 * no values; pass any non-NULL buffer), ids, observations and the best are kept as usual.
 * Returns ST_OK, ST_EINVAL (NaN or inverted bounds, centre outside bounds,
 * duplicate or empty name, scale/base/rounding out of range, bad option), ST_ENOMEM.
 */
st_status carbs_create(const carbs_param *params, size_t n_params, const carbs_options *opts,
                       carbs **out, char *errmsg);

/* Frees everything; NULL is a no-op. */
void carbs_destroy(carbs *c);

/* The last error message on this handle ("" if none); borrowed. */
const char *carbs_errmsg(const carbs *c);

/* Number of parameters D. */
size_t carbs_dim(const carbs *c);
/* Parameter i (borrowed; name valid while the handle lives); NULL if i >= D. */
const carbs_param *carbs_get_param(const carbs *c, size_t i);
/* Index of the named parameter. Returns ST_OK or ST_ENOTFOUND. */
st_status carbs_param_index(const carbs *c, const char *name, size_t *index);
/* The options in force (borrowed). */
const carbs_options *carbs_get_options(const carbs *c);
/* Replaces the options (validated as in carbs_create). ST_OK or ST_EINVAL. */
st_status carbs_set_options(carbs *c, const carbs_options *opts);

/* ---- ask and tell ------------------------------------------------------------------------ */

typedef enum carbs_phase {
    CARBS_PHASE_RANDOM = 0,   /* initial design around the search centre */
    CARBS_PHASE_RESAMPLE = 1, /* re-run of a Pareto point to de-noise the front */
    CARBS_PHASE_BAYES = 2,    /* expected improvement over the Pareto front */
    CARBS_PHASE_FALLBACK = 3, /* the Bayesian step found no candidate: random near the front */
} carbs_phase;

/* What the optimizer predicted for its last suggestion (NaN where a phase has no model). */
typedef struct carbs_suggestion_info {
    carbs_phase phase;
    double predicted_output;     /* posterior mean, output units */
    double predicted_output_sd;  /* approximate, output units */
    double predicted_cost;       /* cost units */
    double pareto_value;         /* front output at the predicted cost, output units */
    double expected_improvement; /* in the surrogate (normal-quantile) space */
    double p_success;
    double locality; /* CARBS' locality weight */
    /* the cost the cap was checked against (cost units): the cost function's value, or the
     * cost_cap_quantile of the cost model; NaN where nothing was checked (no cap, or no cost
     * function and fewer than 2 cost observations: the "blind" start) */
    double cap_cost;
} carbs_suggestion_info;

/*
 * Proposes one run. Writes D parameter values to x_out and a new suggestion id (> 0, unique in
 * this handle, kept by save/load) to *id (may be NULL: then the suggestion is not remembered as
 * outstanding). Never fails for want of a model: if the Bayesian step has no admissible
 * candidate, a random point near the front is returned (phase FALLBACK).
 * Returns ST_OK, ST_ENOMEM.
 */
st_status carbs_suggest(carbs *c, double *x_out, uint64_t *id);

/*
 * Proposes q distinct runs from one fitted model: after each pick, a fantasy value (option
 * `fantasy`) is placed at it and the acquisition recomputed. x_out: q*D values, row-major;
 * ids: q ids. Phases other than BAYES fill the batch one suggestion at a time.
 * Returns ST_OK, ST_EINVAL (q == 0), ST_ENOMEM.
 */
st_status carbs_suggest_batch(carbs *c, size_t q, double *x_out, uint64_t *ids);

/* Prediction details of the last suggestion (of the last one in a batch). */
void carbs_last_info(const carbs *c, carbs_suggestion_info *info);

/*
 * Records a finished run.
 *  id      the suggestion's id, or 0 for a run that was not suggested (warm starts, user runs);
 *          the suggestion stops being outstanding.
 *  x       D parameter values; NULL to use the suggestion's own values (id must be known).
 *  output  the objective; NaN or infinite is recorded as a failure.
 *  cost    > 0 and finite for a success; ignored (may be NaN) for a failure.
 *  failed  non-zero if the run failed because of its hyperparameters (diverged, out of memory).
 *          Infrastructure failures should be retried or forgotten, not observed.
 * Returns ST_OK, ST_ENOTFOUND (unknown id), ST_EINVAL (x has NaN or lies outside the bounds
 * [min, max] (integers: 0.1 beyond them, as a rounded suggestion may), cost <= 0 or not
 * finite for a success, x NULL without id), ST_ENOMEM. On error nothing is recorded.
 */
st_status carbs_observe(carbs *c, uint64_t id, const double *x, double output, double cost,
                        int failed);

/*
 * Records what a run cost without saying anything about its output or whether it succeeded:
 * for a suggestion the caller refused, or killed, because it was over its cost cap. The
 * observation enters the cost model only (not the output, success or Pareto models, not the
 * count of the initial design), so P(success) and the front stay as they were.
 *  id    the suggestion's id (it stops being outstanding), or 0 for a point not suggested.
 *  x     D parameter values; NULL to use the suggestion's own values (id must be known).
 *  cost  > 0 and finite, cost units: the predicted cost of a refused run, or the cost a
 *        killed run had reached when it was killed. The latter is a lower bound of what the
 *        run would have cost; it is recorded as it is (it already lies above the cap, which
 *        is what the cap needs to learn; the model's slope there is underestimated).
 * Returns ST_OK, ST_ENOTFOUND (unknown id), ST_EINVAL (x invalid, cost <= 0 or not finite,
 * x NULL without id), ST_ENOMEM. On error nothing is recorded.
 */
st_status carbs_observe_cost(carbs *c, uint64_t id, const double *x, double cost);

/* Cost-only observations (carbs_observe_cost), in order. ST_ERANGE if i is out of range. */
size_t carbs_n_cost_observations(const carbs *c);
st_status carbs_get_cost_observation(const carbs *c, size_t i, double *x, double *cost);

/*
 * The exact cost of a run at x (D parameter values): cost units, > 0; NaN or infinite for a
 * point that must not be suggested. Must be deterministic and free of I/O (carbs stays pure).
 */
typedef double (*carbs_cost_fn)(const double *x, void *data);

/*
 * Installs an exact cost function (NULL removes it). With one, the cap max_suggestion_cost is
 * checked on the function's value at every candidate of every phase; without one, on the
 * cost_cap_quantile of the cost model (a GP on log cost over the successes and the cost-only
 * observations), once it has 2 cost observations. `data` is borrowed and must outlive the
 * handle. Not saved by carbs_export: install it again after carbs_import.
 *
 * The cost cap: a point whose checked cost is above the cap is rejected and redrawn (the next
 * design point, another draw near the origins; bounded); if no draw is admissible, the point
 * moves in the direction of lower cost (a coordinate search on the checked cost) until it is.
 * Only a search space with no admissible point at all yields a suggestion above the cap, and
 * then info.cap_cost says so. Returns ST_OK.
 */
st_status carbs_set_cost_function(carbs *c, carbs_cost_fn fn, void *data);

/*
 * 1 when a cap is set but cannot be checked yet: no cost function and fewer than 2 cost
 * observations (successes and cost-only ones). A controller that runs several suggestions at
 * once should launch one at a time while this holds: each blind suggestion may be over the cap.
 */
int carbs_cap_blind(const carbs *c);

/* Drops an outstanding suggestion (a run lost to infrastructure). ST_OK or ST_ENOTFOUND. */
st_status carbs_forget(carbs *c, uint64_t id);

/*
 * Registers a run that is in flight under a known id with parameters x (D values), as if
 * carbs_suggest had returned it: for a controller that rebuilds the optimizer from its store
 * after a restart. Later ids handed out are larger than `id`.
 * Returns ST_OK, ST_EINVAL (id 0 or already outstanding, invalid x), ST_ENOMEM.
 */
st_status carbs_add_outstanding(carbs *c, uint64_t id, const double *x);

/*
 * The counters that, besides the observations and the outstanding suggestions, decide the
 * next suggestion. Suggestion k (0-based, counted over the handle's life) draws all its random
 * numbers from (seed, k); the initial design is walked by its own index, and CARBS' resample
 * rule by the number of resamples made. A store that keeps these after each suggestion rebuilds
 * an optimizer that suggests what the live one would have (runner/store.c does).
 */
typedef struct carbs_progress {
    uint64_t n_suggest;  /* suggestions made, including carbs_add_outstanding's */
    uint64_t n_design;   /* initial-design points drawn (the next one's index) */
    uint64_t n_resample; /* resamples made */
} carbs_progress;

void carbs_get_progress(const carbs *c, carbs_progress *p);
/* Sets the counters (a rebuild, after its observations and outstanding runs). */
void carbs_set_progress(carbs *c, const carbs_progress *p);

/*
 * carbs_add_outstanding for a rebuild that knows when the suggestion was made: `born` is the
 * number of observations the handle had then (carbs_n_observations), which the expiry of
 * option max_outstanding_age counts from, and nothing is counted (carbs_set_progress follows).
 * A suggestion already expired at the current number of observations is not registered
 * (*registered 0; it is observed later with id 0, as the live handle would). born must not
 * exceed the current number of observations.
 * Returns ST_OK, ST_EINVAL (as carbs_add_outstanding, or born too large), ST_ENOMEM.
 */
st_status carbs_add_outstanding_born(carbs *c, uint64_t id, const double *x, size_t born,
                                     int *registered);

/*
 * Adds many observations (rows of X, n*D) and then moves the search centre to the best
 * successful one (CARBS' initialize_from_observations). `failed` may be NULL (all successes).
 * Returns as carbs_observe; on error, observations before the bad row are kept and the message
 * names the row.
 */
st_status carbs_observe_many(carbs *c, size_t n, const double *X, const double *output,
                             const double *cost, const int *failed);

/* Moves the search centre (D values, parameter units). ST_OK or ST_EINVAL (outside bounds). */
st_status carbs_set_search_center(carbs *c, const double *center);
/* Copies the search centre (D values, parameter units). */
void carbs_get_search_center(const carbs *c, double *center);

/*
 * Warm start: replays `prev`'s observations into `c`, matching parameters by name. Parameters
 * of `c` that `prev` lacks take the value from `fill` (D(c) values, parameter units; entries for
 * parameters that prev has are ignored; NULL uses c's search centre), and the search centre of
 * such parameters is set to that value. Parameters of prev that c lacks are an error.
 * Returns ST_OK, ST_ENOTFOUND (a parameter of prev missing in c), ST_ENOMEM.
 */
st_status carbs_warm_start(carbs *c, const carbs *prev, const double *fill);

/* ---- inspection -------------------------------------------------------------------------- */

/* Observations in the order observed. ST_ERANGE if i is out of range. x: D values or NULL. */
size_t carbs_n_observations(const carbs *c);
st_status carbs_get_observation(const carbs *c, size_t i, double *x, double *output, double *cost,
                                int *failed);
/* Outstanding suggestions, oldest first. */
size_t carbs_n_outstanding(const carbs *c);
st_status carbs_get_outstanding(const carbs *c, size_t i, uint64_t *id, double *x);

/*
 * The Pareto front of successful observations grouped by identical inputs: groups in
 * increasing mean cost, each with mean cost, mean output, member count and parameters.
 * `conservative` picks CARBS' conservative rule. Call with cap = 0 to learn *n.
 * cost, output, count, x (cap*D) may each be NULL. Returns ST_OK, ST_ENOMEM.
 */
st_status carbs_pareto(carbs *c, int conservative, size_t cap, size_t *n, double *cost,
                       double *output, size_t *count, double *x);

/*
 * Fits the models to the current observations and predicts at m points X (m*D, parameter
 * units): output mean and sd (output units), cost (cost units), probability of success. Any
 * output pointer may be NULL. Returns ST_OK, ST_EEMPTY (fewer than 2 successes), ST_ENUMERIC,
 * ST_ENOMEM.
 */
st_status carbs_predict(carbs *c, size_t m, const double *X, double *mean, double *sd, double *cost,
                        double *p_success);

/* Sum of the costs of successful observations (CARBS' cumulative_cost). */
double carbs_cumulative_cost(const carbs *c);

/* ---- in-process driver ------------------------------------------------------------------- */

/*
 * Objective for carbs_minimize: evaluates x (D values), writes the output and the cost, and
 * returns 0 for success, 1 for a failed run (hyperparameter failure), anything else to stop.
 */
typedef int (*carbs_objective)(const double *x, double *output, double *cost, void *data);

/*
 * Suggest-evaluate-observe loop until `max_evals` runs or the summed cost of all runs reaches
 * `max_cost` (+INFINITY for none). Returns ST_OK, or ST_ESTATE if the objective asked to stop,
 * or an error of carbs_suggest/carbs_observe.
 */
st_status carbs_minimize(carbs *c, carbs_objective f, void *data, size_t max_evals,
                         double max_cost);

/* ---- persistence ------------------------------------------------------------------------- */

/*
 * Serialises the whole state (options, parameters, search centre, observations, outstanding
 * suggestions and counters; the RNG is reseeded from the seed and the counters at each
 * suggestion) into a new buffer, "CARBSST1" magic + version.
 * Free *buf with st_free(). A loaded handle gives the same next suggestion as the saved one.
 * Returns ST_OK or ST_ENOMEM.
 */
st_status carbs_export(const carbs *c, void **buf, size_t *len);
/* Rebuilds a handle from carbs_export's bytes. ST_EFORMAT (bad magic/version/truncated, with
 * a message in errmsg), ST_EINVAL, ST_ENOMEM. */
st_status carbs_import(const void *buf, size_t len, carbs **out, char *errmsg);
/* The same through a file (written to path.tmp and renamed). ST_EIO on file errors. */
st_status carbs_save_file(const carbs *c, const char *path, char *errmsg);
st_status carbs_load_file(const char *path, carbs **out, char *errmsg);

#ifdef __cplusplus
}
#endif
#endif /* CARBS_H */
