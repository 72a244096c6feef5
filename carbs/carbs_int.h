/*
 * carbs_int.h — interfaces between the files of carbs/ (not installed, not public).
 *   space.c      parameter <-> basic transforms, rounding, bounds
 *   gp.c         exact GP regression: kernels, Cholesky with jitter, marginal likelihood
 *                with analytic gradient, MAP by L-BFGS, CARBS' Adam
 *   gp_predict.c the posterior at new points, and its nearest-points variance bound
 *   gp_cross.c   the cross-kernel columns of a prediction, vectorised
 *   gp_onehot.c  categorical inputs as one-hot columns; the calls that encode them
 *   gpcache.c    a fitted GP kept between suggestions
 *   transform.c  quantile-normal output transform, min-max log-cost transform
 *   pareto.c     grouping of identical inputs, plain and conservative Pareto groups
 *   acq.c        expected improvement, locality weight, candidate sampling, initial design
 *   carbs.c      the handle: options, suggest/observe/forget, batch, warm start
 *   state.c      export/import of the whole state
 *   costcap.c    the cost cap: the cost a point is checked against, redraws and the descent
 *                toward lower cost
 */
#ifndef CARBS_INT_H
#define CARBS_INT_H

#include "carbs/carbs.h"

/* what this header declares is internal: hidden from libscaletune.so's exports (the static
 * library and the tests still link it); common/scaletune.map exports the public API */
#pragma GCC visibility push(hidden)

/* ---- gp.c -------------------------------------------------------------------------------- */

typedef enum gp_kernel {
    /* k(x,z) = sl2 (x-c).(z-c) + sm2 (1 + sqrt3 r) exp(-sqrt3 r),
     * r = sqrt(sum_i ((x_i - z_i)/l_i)^2 + 1e-12); c = linear-kernel centre (default 0).
     * theta (log) = [log sl2, log sm2, log l_1 .. log l_D, log noise]   (D + 3 values) */
    GP_KERNEL_LIN_MATERN32 = 0,
    /* k(x,z) = s2 exp(-|x-z|^2 / (2 l^2)); theta = [log s2, log l, log noise] (3 values) */
    GP_KERNEL_RBF = 1,
} gp_kernel;

typedef struct gp gp;
typedef struct carbs_gpcache carbs_gpcache;

/* How gp_fit chooses hyperparameters. */
typedef struct gp_fit_opts {
    int faithful;            /* 1: CARBS: start at init values, adam_steps of Adam at adam_lr,
                                noise start drawn from its LogNormal(ln 0.01, 0.5) prior */
    double init_lengthscale; /* initial Matern lengthscale (the search radius, 0.3) */
    size_t restarts;         /* recommended: extra L-BFGS starts drawn around the defaults */
    size_t max_fit_points;   /* recommended: fit hyperparameters on a seeded subset of at most
                                this many points (0 = all); the posterior uses all points */
    size_t adam_steps;       /* faithful: 1000 */
    double adam_lr;          /* faithful: 1e-4 */
} gp_fit_opts;

/* Defaults: faithful 0, lengthscale 0.3, restarts 2, max_fit_points 256, Adam 1000 x 1e-4. */
gp_fit_opts gp_fit_opts_default(void);

/* A GP over d-dimensional inputs (d = 1 for RBF). */
st_status gp_create(gp_kernel kernel, size_t d, gp **out);
void gp_destroy(gp *g);
/* Declares categorical inputs (LIN_MATERN32 only, before any data): levels[i] (d values) is 0
 * for an ordered input and K for one holding a choice index 0 .. K-1, which the GP sees as K
 * one-hot columns, each with its own lengthscale (one-hot encoding: Garrido-Merchan and
 * Hernandez-Lobato 2020, "Dealing with categorical and integer-valued variables in Bayesian
 * optimization with Gaussian processes"); the one-hot columns' lengthscales start, and their
 * MAP prior is centred, GP_ONEHOT_LS_FACTOR (gp_int.h) times longer. Every input, centre and
 * point of the calls below
 * keeps its d values; theta grows to (sum of columns) + 3. ST_OK, ST_ESTATE, ST_ENOMEM. */
st_status gp_set_levels(gp *g, const size_t *levels);
/* Linear-kernel centre c (d values, copied); default all zeros. One-hot columns: 0. */
void gp_set_linear_center(gp *g, const double *c);
/* Training data X (n*d row-major) and targets y (n), copied. Invalidates the factorisation. */
st_status gp_set_data(gp *g, size_t n, const double *X, const double *y);
size_t gp_n_theta(const gp *g);
/* Log-hyperparameters (gp_n_theta values). set_theta invalidates the factorisation. */
void gp_get_theta(const gp *g, double *theta);
void gp_set_theta(gp *g, const double *theta);
/* The default initial theta: variances 1, lengthscales init_lengthscale (RBF: 1), noise 0.01. */
void gp_default_theta(const gp *g, double init_lengthscale, double *theta);

/* Fits the hyperparameters (see gp_fit_opts) and factorises. rng: the handle's generator.
 * Returns ST_OK, ST_EEMPTY (n == 0), ST_ENUMERIC (no factorisation even with jitter), ST_ENOMEM. */
st_status gp_fit(gp *g, const gp_fit_opts *o, st_rng *rng);
/* Factorises K + (noise + 1e-4) I at the current theta, retrying with growing jitter.
 * Returns ST_OK, ST_ENUMERIC, ST_ENOMEM. */
st_status gp_factor(gp *g);

/* Negative log marginal likelihood plus negative log prior at theta (the quantity fitted),
 * and its gradient (gp_n_theta values, may be NULL). `map` selects the recommended priors
 * (weak priors on variances and lengthscales) in addition to the noise prior used by both.
 * Uses all points. Returns +INFINITY if K is not positive definite. */
double gp_objective(gp *g, const double *theta, double *grad, int map);

/* Posterior at m points Xs (m*d): mean (m) and latent variance (m, >= 0; may be NULL).
 * Requires a successful factorisation. Returns ST_OK, ST_ESTATE, ST_ENOMEM. */
st_status gp_predict(gp *g, size_t m, const double *Xs, double *mean, double *var);

/* As gp_predict, with an upper bound of the latent variance in place of the variance: the
 * variance given only each point's 8 nearest training points (in the scaled distance), which
 * conditioning on the others can only lower, plus 1e-6 k(x,x) for rounding; >= what gp_predict
 * returns at the same point. O(m n) instead of the full solve's O(m n^2); the mean is gp_predict's,
 * bit for bit. Returns ST_OK, ST_ESTATE, ST_ENOMEM. */
st_status gp_predict_bound(gp *g, size_t m, const double *Xs, double *mean, double *var_ub);

/* Appends one point (x, y) to the training set and updates the factorisation without refitting
 * the hyperparameters (fantasies). Returns ST_OK, ST_ENUMERIC, ST_ENOMEM. */
st_status gp_append(gp *g, const double *x, double y);
/* Appends m points X (m*d) to the factorisation at the current theta, one row at a time in
 * order (O(n^2) each, the same arithmetic as gp_append), without their targets: call
 * gp_set_targets before predicting. A row that does not factorise refactorises every point so
 * far (gp_factor, with its jitter) and the rows after it are appended to that. The factor of
 * (X, theta) built this way is a function of the points, theta and where the appends started,
 * not of when they were made. Requires a factorisation. ST_OK, ST_ESTATE, ST_EINVAL,
 * ST_ENUMERIC, ST_ENOMEM. */
st_status gp_extend(gp *g, size_t m, const double *X);
/* Replaces the n targets and solves for the posterior (O(n^2)). ST_OK, ST_ESTATE, ST_EINVAL,
 * ST_ENUMERIC. */
st_status gp_set_targets(gp *g, const double *y);
/* Keeps the first n points and their factor (drops fantasies); gp_set_targets then. */
void gp_truncate(gp *g, size_t n);
/* Whether the GP's first n points are X (n*d, as given to gp_set_data), bit for bit. */
int gp_same_points(const gp *g, size_t n, const double *X);
size_t gp_n(const gp *g);
/* Mean over the training points of the squared standardized leave-one-out residual,
 * ((y_i - mu_-i) / sd_-i)^2, at the current theta (closed form from the factorisation; about 1
 * for a calibrated model, larger for an overconfident one). ST_OK, ST_ESTATE (not factored),
 * ST_EEMPTY (n < 2), ST_ENUMERIC, ST_ENOMEM. */
st_status gp_loo_z2(const gp *g, double *z2);

/* ---- space.c ----------------------------------------------------------------------------- */

/* The scale in force: p->scale, or for NaN (auto, the default): CARBS' 1 in faithful mode and
 * for log, logit and unbounded spaces; a bounded linear space's (max - min) / 4 (the range
 * spans 4 basic units, as four decades of a log space do), at least 2 roundings for an
 * integer. */
#define CARBS_AUTO_SCALE_SPAN 4.0
double space_scale(const carbs_param *p, int faithful);
/* Validates p (fills msg naming the parameter and field). ST_OK or ST_EINVAL. */
st_status space_validate(const carbs_param *p, char *msg);
double space_to_basic(const carbs_param *p, double v);
double space_from_basic(const carbs_param *p, double b);
/* Rounds an integer dimension in basic space (identity otherwise). */
double space_round_basic(const carbs_param *p, double b);
/* Parameter value as suggested: from_basic then integer rounding. */
double space_param_value(const carbs_param *p, double b);
/* Basic bounds (exclusive); integers padded by 0.1 parameter units. */
void space_bounds_basic(const carbs_param *p, double *lo, double *hi);

/* ---- transform.c ------------------------------------------------------------------------- */

/* sklearn QuantileTransformer(output_distribution="normal", n_quantiles = floor(sqrt(n))). */
typedef struct qt {
    size_t m;    /* number of quantiles */
    double *q;   /* quantiles (m), non-decreasing */
    double *rho; /* references k/(m-1) (m) */
    double *nq;  /* -q reversed (m), for the descending interpolation */
    double *nr;  /* -rho reversed (m) */
    int rank;    /* 1: qt_fit_rank's map; rho then holds the z of each knot */
} qt;
st_status qt_fit(qt *t, size_t n, const double *y);
/* Recommended mode: a rank-Gaussian map that keeps the tails. Knots at the distinct observed
 * values, z_k = Phi^-1((mid-rank_k - 0.5) / n) (Hazen plotting positions, ties averaged), linear
 * in between and linear beyond the data with the overall slope, so the best run sits near
 * Phi^-1(1 - 1/(2n)) instead of being pinned at 5.2, and predictions may leave the range. */
st_status qt_fit_rank(qt *t, size_t n, const double *y);
double qt_forward(const qt *t, double y);
double qt_inverse(const qt *t, double z);
void qt_clear(qt *t);

/* Min-max of log cost onto [-1, 1]. */
typedef struct logcost {
    double lo, hi;
} logcost;
void logcost_fit(logcost *t, size_t n, const double *cost);
double logcost_forward(const logcost *t, double cost);
double logcost_inverse(const logcost *t, double l);

/* ---- pareto.c ---------------------------------------------------------------------------- */

/* A group of successful observations with identical inputs (isclose, CARBS' tolerances). */
typedef struct pgroup {
    size_t n;         /* members */
    size_t *members;  /* indices into the observation arrays (borrowed from the workspace) */
    double cost;      /* mean cost */
    double value;     /* mean of s*output, bigger is better */
    double max_value; /* largest member value */
} pgroup;

/* Groups n observations (X n*d basic, value = s*output, cost) and selects the Pareto groups
 * (conservative or plain) with the low-set fix for CARBS issue #6. Writes the indices of the
 * chosen groups (increasing mean cost) into sel/n_sel; groups and their members are allocated
 * in *groups / *n_groups (free with pareto_free). */
st_status pareto_groups(size_t n, size_t d, const double *X, const double *value,
                        const double *cost, double min_cost_fraction, int conservative,
                        pgroup **groups, size_t **sel, size_t *n_groups, size_t *n_sel);
void pareto_free(pgroup *groups, size_t n_groups, size_t *sel);
/* numpy.quantile with linear interpolation, q in [0,1]; sorts a copy. */
double quantile_linear(size_t n, const double *v, double q);

/* ---- acq.c ------------------------------------------------------------------------------- */

/* EI = sigma [phi(z) + z Phi(z)], z = (mu - v - xi) / sigma; 0 when sigma == 0 and mu <= v+xi. */
double acq_ei(double mu, double sigma, double v, double xi);
/* CARBS' locality weight: max over origins of phi_r(|x - o|), 1-D normal pdf at the distance. */
double acq_locality(size_t d, const double *x, size_t n_origins, const double *origins, double r);

/* ---- the handle (carbs.c, suggest.c, options.c, state.c) ------------------------------- */

struct carbs {
    size_t d;            /* number of parameters D */
    carbs_param *params; /* D, names owned */
    carbs_options o;
    double *center_b;    /* D: search centre, basic */
    double *lo_b, *hi_b; /* D: exclusive basic bounds */
    size_t *parent;      /* D: index of the parameter's active_if, SIZE_MAX for none */

    /* observations, in the order observed */
    size_t n_obs, cap_obs, n_succ, n_fail;
    double *obs_x; /* n_obs*D parameter units, as given */
    double *obs_b; /* n_obs*D basic */
    double *obs_y; /* n_obs objective (any value for failures) */
    double *obs_c; /* n_obs cost (NaN for failures) */
    int *obs_fail; /* n_obs */

    /* cost-only observations (carbs_observe_cost): the cost model's, nobody else's */
    size_t n_cobs, cap_cobs;
    double *cobs_x;        /* n_cobs*D parameter units */
    double *cobs_b;        /* n_cobs*D basic */
    double *cobs_c;        /* n_cobs cost */
    carbs_cost_fn cost_fn; /* NULL: none (not saved) */
    void *cost_data;

    /* outstanding suggestions, oldest first */
    size_t n_out, cap_out;
    uint64_t *out_id;
    double *out_x;    /* n_out*D parameter units, as suggested (rounded) */
    double *out_b;    /* n_out*D basic of out_x */
    size_t *out_born; /* n_obs when suggested (expiry) */

    uint64_t next_id;      /* ids handed out are 1, 2, ... */
    uint64_t n_suggest;    /* suggestions made (seeds the RNG of the next one) */
    size_t resample_count; /* CARBS' resample counter */
    size_t n_design;       /* random-phase points drawn so far (index into the QMC sequence) */
    /* the QMC generator of the random phase, kept between suggestions (sample.c): design
     * point k is the k-th point of the sequence, drawn once instead of from the start each
     * time; qrng_drawn points have been drawn from it (a cache: not state) */
    void *qrng;
    int qrng_kind;
    size_t qrng_drawn;
    struct carbs_gpcache *gpc; /* the GPs kept between suggestions (gpcache.c): a cache, not
                                  state; NULL until the first use */
    st_rng *rng;               /* reseeded from (seed, next_id) at each suggestion: a suggestion
                                  is a function of the state, whoever rebuilt it */
    carbs_suggestion_info info;
    double radius; /* the radius of the Bayesian candidates being drawn (sample.c's trust
                      region); 0 otherwise: search_radius */
    char errmsg[ST_ERRMSG_MAX];
};

st_status carbs_priv_reserve_outstanding(carbs *c, size_t need);
/* carbs_observe without the bounds check: for a saved state and a warm start, whose
 * observations were accepted before (a warm start's space may be narrower). */
st_status carbs_priv_observe(carbs *c, uint64_t id, const double *x, double output, double cost,
                             int failed);
/* A Linear+Matern GP on (X n*D basic, y n), fitted with the handle's options and `rng`. */
st_status carbs_priv_fit_gp(carbs *c, size_t n, const double *X, const double *y, st_rng *rng,
                            gp **out);
/* Whether parameter i is active at v (D values, parameter units or basic: a categorical's
 * basic coordinate is its index). */
int carbs_priv_active(const carbs *c, const double *v, size_t i);
/* Basic coordinates b of x (D values, parameter units); inactive parameters get the search
 * centre. x_copy (may be NULL): x with NaN at the inactive parameters. */
void carbs_priv_to_basic(const carbs *c, const double *x, double *b, double *x_copy);
/* Parameter values of a basic point (integers rounded; NaN where inactive). */
void carbs_priv_to_params(const carbs *c, const double *b, double *x);
/* Rounds integer dimensions in place; 0 if the rounded point left the bounds. */
int carbs_priv_round(const carbs *c, double *b);

/* ---- subset.c ---------------------------------------------------------------------------- */

/* The m successes (or all ns, if fewer) the GPs condition on above gp_max_points, written to
 * out (m indices into the ns successes, in priority order: up to m/8 members of the Pareto
 * groups (front, n_front indices, cheapest group first), m/8 of the best values (value: ns,
 * bigger is better), m/8 of the most recent, the nearest to the n_origins origins (basic,
 * n_origins*D) in turn up to 5m/8, then a spread ordered by st_mix64 of obs_idx (each
 * success's index among all observations)). Xs: ns*d basic. A function of its arguments
 * alone. ST_OK or ST_ENOMEM. */
st_status carbs_priv_subset(size_t ns, size_t d, const double *Xs, const double *value,
                            const size_t *obs_idx, size_t n_front, const size_t *front,
                            size_t n_origins, const double *origins, size_t m, size_t *out);
/* The cost model's data as the Bayesian step fits it: cap_cost_data's, restricted above
 * gp_max_points to the same subset of the successes (models.c) and to the gp_max_points / 4
 * most recent cost-only observations. ST_OK or ST_ENOMEM. */
st_status carbs_priv_cost_data(carbs *c, size_t *n, double **X, double **cost);

/* ---- gpcache.c --------------------------------------------------------------------------- */

#define CARBS_GPC_MIN 256 /* GPs over at most this many rows are refitted at every suggestion */

/* The GPs kept between suggestions (gpcache.c), the slot of each. */
typedef enum gpc_kind { GPC_OUT = 0, GPC_COST = 1, GPC_SUCC = 2, GPC_N = 3 } gpc_kind;
/* The refit point of a GP over n rows: n up to CARBS_GPC_MIN, then the largest point of
 * CARBS_GPC_MIN, and each growth by 1/16 after it, not above n. */
size_t carbs_priv_refit_point(size_t n);
/* The GP `kind` (a Linear+Matern GP with the handle's options) over n rows X (n*D basic; the
 * first n_fixed rows do not count toward the refit point) with targets y (n), its
 * hyperparameters those fitted at the refit point (on the first n_fixed + r rows, targets
 * transformed from `raw` of those rows alone), its factor built from there by appends. The GP
 * is the cache's: borrowed until the next call for the same kind (fantasies may be appended;
 * do not destroy it). A function of the arguments and the options alone. ST_OK, ST_ENUMERIC,
 * ST_ENOMEM. */
st_status carbs_priv_gp_get(carbs *c, gpc_kind kind, size_t n, size_t n_fixed, const double *X,
                            const double *y, const double *raw, gp **out);
void carbs_priv_gpcache_free(carbs *c);
/* models.c: the output transform in force fitted to n outputs (raw, not signed). */
st_status carbs_priv_output_qt(const carbs *c, size_t n, const double *yraw, qt *t);

/* ---- costcap.c --------------------------------------------------------------------------- */

#define CAP_MIN_COST_OBS 2 /* cost observations before the cost GP checks the cap */

typedef enum cap_kind {
    CAP_NONE = 0,  /* no cap (max_suggestion_cost infinite): everything is admissible */
    CAP_BLIND = 1, /* a cap, but no cost function and fewer than 2 cost observations */
    CAP_EXACT = 2, /* the cost function */
    CAP_GP = 3,    /* the cost_cap_quantile of the GP on scaled log cost */
} cap_kind;

/* What a point's cost is checked against, for one suggestion. */
typedef struct capm {
    cap_kind kind;
    double cap; /* max_suggestion_cost, cost units */
    double z;   /* Phi^-1(cost_cap_quantile) */
    gp *g;      /* CAP_GP: the cost GP (owned when own) */
    int own;
    logcost lc;    /* CAP_GP: scaled log cost <-> cost */
    double noise;  /* CAP_GP: the GP's noise variance, scaled log-cost units */
    double *plane; /* CAP_GP: a plane of scaled log cost over the basic coordinates, fitted by
                      forward selection (xbar D, slope D, value at xbar, then D flags: 1 where
                      the slope is significant), or NULL. The checked value is
                      the larger of the GP's mean and the plane's, plus z sd: the GP's mean
                      reverts to its data away from them, where the plane keeps the trend that
                      costs (6 N D, times) follow, so neither under-predicts an extrapolation */
    double infl;   /* CAP_GP: sd inflation, sqrt of the mean squared standardized leave-one-out
                      residual when above 1 (an overconfident GP, typically with few points) */
} capm;

/* The cost model's data: the successes (in observation order), then the cost-only
 * observations. *X (n*D basic) and *cost (n) are malloc'd; free both. ST_OK or ST_ENOMEM. */
st_status cap_cost_data(const carbs *c, size_t *n, double **X, double **cost);
/* The cap model for a phase without fitted models: fits its own cost GP (with its own
 * generator, so that the phase's draws do not move) when it needs one. */
st_status cap_init(carbs *c, capm *cm);
/* The cap model over an already fitted cost GP and its log-cost map (borrowed). */
st_status cap_borrow(const carbs *c, capm *cm, gp *g, const logcost *lc);
void cap_clear(capm *cm);
/* The checked cost at m basic points B (m*D): cost units; NaN for CAP_NONE and CAP_BLIND. */
st_status cap_cost(const carbs *c, const capm *cm, size_t m, const double *B, double *out);
/* Whether a point with checked cost v is admissible. */
int cap_ok(const capm *cm, double v);
/* Moves b (basic, rounded, inside) toward lower checked cost until it is admissible: a
 * coordinate search from b. Writes the final checked cost to *v. Returns ST_OK (b admissible),
 * ST_ERANGE (no admissible point found: b is the cheapest one met), ST_ENOMEM. */
st_status cap_descend(carbs *c, const capm *cm, double *b, double *v);
/* Redraw loop for the single-point phases: b is checked; while it is not admissible it is
 * redrawn with draw(c, ctx, b) up to `tries` times, then descended. *v: its checked cost. */
typedef void (*cap_draw_fn)(carbs *c, void *ctx, double *b);
st_status cap_enforce(carbs *c, const capm *cm, double *b, cap_draw_fn draw, void *ctx,
                      size_t tries, double *v);
/* sample.c: coordinate i of a point drawn near origin o from u in (0, 1); the locality weight
 * of basic point b (tmp: 2*D doubles); a rounded point inside the bounds near one of n
 * origins; design point n_design (the random phase). */
/* Frees the random phase's cached QMC generator (carbs_destroy). */
void carbs_priv_qrng_free(carbs *c);
double carbs_priv_draw_coord(const carbs *c, size_t i, double o, double u);
double carbs_priv_locality(const carbs *c, const double *b, size_t n_origins, const double *origins,
                           double *tmp);
void carbs_priv_draw_near(carbs *c, size_t n_origins, const double *origins, double *b);
void carbs_priv_random_point(carbs *c, double *b);
/* sample.c, the trust region of the Bayesian candidates (recommended mode). */
#define TRUST_STALL  3 /* stalled successes per halving of the candidates' radius */
#define TRUST_LEVELS 3 /* halvings before the radius is search_radius again */
/* Successful observations since the last one that no earlier success dominated (at most its
 * cost and at least as good): 0 when the latest success improved the front. */
size_t carbs_priv_stall_count(const carbs *c);
/* The radius of the Bayesian candidates: search_radius, halved after every TRUST_STALL
 * successive stalls down to search_radius / 2^TRUST_LEVELS, then back to search_radius;
 * search_radius in faithful mode. */
double carbs_priv_trust_radius(const carbs *c);
/* Whether the next suggestion comes from the initial design (sample.c). */
int carbs_priv_random_phase(const carbs *c);

#pragma GCC visibility pop

#endif
