/*
 * extrapolate.h — from a sweep of small runs to the settings of a large run (the main job).
 * Works on plain arrays (parameter values with their spaces, cost, objective, failed flag,
 * optional model size N and tokens D per run), so fit/ does not depend on runner/ or carbs/.
 * Two analyses: (1) CARBS' own: the Pareto front of objective against cost, each parameter's
 * basic coordinate regressed on ln cost along it, a saturating power law of the objective
 * against cost, bootstrap over Pareto groups; (2) the model: every run, failures included, fits
 * L(N, D) (Chinchilla) times hyperparameter penalties around laws in N and D, a logistic
 * stability boundary from the diverged runs, bootstrap replicates of both; the recommendation
 * minimises the expected loss at the target compute with divergence charged.
 * Method: docs/algorithms/extrapolation.md. Not here: reading the store (cli/cmd_extrapolate.c).
 */
#ifndef FIT_EXTRAPOLATE_H
#define FIT_EXTRAPOLATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/st.h"
#include "fit/fit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Search space of a parameter: its basic coordinate b (the axis of the laws). */
typedef enum fit_xp_space {
    FIT_XP_LINEAR = 0, /* b = v */
    FIT_XP_LOG = 1,    /* b = ln v (laws are power laws) */
    FIT_XP_LOGIT = 2,  /* b = ln(v / (1 - v)) */
} fit_xp_space;

/* What a parameter means to the model. FIT_XP_AUTO guesses from the name (fit_xp_role_guess). */
typedef enum fit_xp_role {
    FIT_XP_AUTO = -1,
    FIT_XP_OTHER = 0, /* a hyperparameter with an optimum that may move with N and D (warmup,
                         weight decay, ...) */
    FIT_XP_N = 1,     /* the model size itself (parameters) */
    FIT_XP_D = 2,     /* the training tokens themselves */
    FIT_XP_SIZE = 3,  /* sets the model size with others (d_model, n_layer); N comes from runs */
    FIT_XP_LR = 4,    /* the (peak) learning rate: also the axis of the stability boundary */
    FIT_XP_BATCH = 5, /* the batch size */
    FIT_XP_STEPS = 6, /* sets the training tokens with the batch (max_steps, max_iters); D comes
                         from runs */
} fit_xp_role;

/* Names: "N": n, params, n_params, model_size, num_params; "D": d, tokens, n_tokens,
 * train_tokens, data, num_tokens; "SIZE": d_model, n_embd, n_embed, width, n_layer(s),
 * num_layers, depth, n_head(s), num_heads, d_ff, dim, embed_dim, and Hugging Face's hidden_size,
 * num_hidden_layers, num_attention_heads, intermediate_size; "LR": lr, learning_rate, eta,
 * peak_lr; "BATCH": batch, batch_size, bs, batch_tokens, global_batch_size, train_batch_size,
 * total_batch_size, per_device_train_batch_size; "STEPS": steps, max_steps, max_iters, iters,
 * num_steps, train_steps, total_steps, n_steps, iterations, train_iters, num_iters, epochs,
 * num_epochs, num_train_epochs; anything else OTHER. Case-insensitive, whole names. */
fit_xp_role fit_xp_role_guess(const char *name);
/* 1 when the name is a warmup's (it contains "warmup"): the engine's fixed-steps prior and
 * study/'s log-scale policy apply to it. */
int fit_xp_is_warmup(const char *name);
/* 1 when the name is a weight decay's (weight_decay, weight-decay, weightdecay, wd): the
 * engine's AdamW-timescale prior and study/'s log-scale policy apply to it. */
int fit_xp_is_weight_decay(const char *name);
/* The unit of a warmup parameter, from its name: steps ("iter", "step" or "update" in it:
 * warmup_iters, warmup_steps), tokens ("token"), else a fraction of the run. */
typedef enum fit_xp_wu_unit {
    FIT_XP_WU_FRACTION,
    FIT_XP_WU_STEPS,
    FIT_XP_WU_TOKENS
} fit_xp_wu_unit;
fit_xp_wu_unit fit_xp_warmup_unit(const char *name);
/* "auto", "other", "N", "D", "size", "lr", "batch", "steps" (static). */
const char *fit_xp_role_name(fit_xp_role r);

/* One parameter of the sweep, in the sweep's order. */
typedef struct fit_xp_param {
    const char *name; /* copied by fit_xp_set_runs */
    fit_xp_space space;
    fit_xp_role role; /* FIT_XP_AUTO: from the name */
    double min, max;  /* bounds of the recommendation, parameter units (±INFINITY: none) */
    int is_integer;   /* round the recommendation to a multiple of `rounding` (> 0) */
    double rounding;
    /* A categorical parameter (n_levels >= 2, at most FIT_XP_MAX_LEVELS): its values are level
     * indices 0 .. n_levels - 1, space linear, role ignored. The MODEL treats it as a discrete
     * factor: each level but a reference one gets an offset in ln loss and a shift of the
     * learning rate's optimum (docs/algorithms/extrapolation.md, "Categorical parameters").
     * level_names: n_levels names for messages, or NULL ("level 0", ...); copied. */
    size_t n_levels;
    const char *const *level_names;
    /* A conditional parameter (active_mask != 0): active only in runs where parameter `parent`
     * (an earlier categorical, itself active) holds a level k with bit k of active_mask set; its
     * value is NAN elsewhere. Its penalty in the MODEL applies only to the runs where it is
     * active; the recommendation gives NAN when its level makes it inactive. */
    size_t parent;
    uint64_t active_mask;
} fit_xp_param;

#define FIT_XP_MAX_LEVELS 64

/* Defaults: linear space, role AUTO, no bounds, not integer, rounding 1, ordered (n_levels 0),
 * always active (active_mask 0). */
void fit_xp_param_init(fit_xp_param *p, const char *name, fit_xp_space space);

typedef enum fit_xp_method {
    FIT_XP_METHOD_AUTO = 0,  /* MODEL when N, D and a learning rate are known, else FRONT */
    FIT_XP_METHOD_FRONT = 1, /* CARBS' analysis: the front laws extrapolated to C */
    FIT_XP_METHOD_MODEL = 2, /* every run: L(N, D) x penalties, stability, expected loss */
} fit_xp_method;

typedef struct fit_xp_options {
    fit_xp_method method; /* default AUTO */
    int maximize;         /* 1: the objective is maximised (then only FRONT applies) */
    double level;         /* central interval level, default 0.9 */
    size_t n_boot;        /* bootstrap replicates, default 200 */
    uint64_t seed;        /* default 42 */
    size_t n_threads;     /* for fit/'s fitters, 0 = 1 */
    double max_p_diverge; /* the recommendation keeps p_diverge <= this, default 0.05 */
    double fail_loss;     /* loss charged to a diverged run in the expected loss; NAN (default)
                             = the model's compute-optimal loss at C/2: the run burned
                             compute (MODEL method) */
    double far_factor;    /* warn when C > far_factor x the largest run's cost, default 10 */
    int robust;           /* 1 (default): each hyperparameter of the recommendation minimises the
                             expected loss over the replicates (MODEL method); 0: the point
                             fit's laws */
    double prior_ab_sd;   /* sd of a Gaussian prior on alpha - beta of the MODEL's L(N, D)
                             (docs/algorithms/extrapolation.md), default 0.05; 0 disables it */
    double far_weight;    /* a run whose first fit puts its hyperparameters' penalty at P (a
                             fraction of its loss) weighs 1 / (1 + (P / far_weight)^2) in the
                             refit and the replicates (docs/algorithms/extrapolation.md, "Runs
                             far from their optimum"); default 0: every run weighs 1 */
    double prior_e_sd;    /* sd in ln E of a Gaussian prior on the MODEL's irreducible loss E
                             (docs/algorithms/extrapolation.md, "The irreducible loss"), default
                             0: off */
    double prior_e;       /* its centre in the objective's units; NAN (default): half the best
                             successful run's objective */
    double prior_law_sd;  /* scale of the sds of literature priors on the N and D slopes of the
                             learning rate's and the batch's optima and of the
                             stability boundary's tie to the learning rate's (docs/algorithms/
                             extrapolation.md), default 1; 0 disables them */
    double prior_wd_sd;   /* sd of Gaussian priors that keep a weight decay's optimum near a
                             fixed AdamW timescale B / (lr lambda D) (docs/algorithms/
                             extrapolation.md), default 0.25; 0 disables them */
    double prior_draw;    /* each bootstrap replicate draws the priors' centres (the above and
                             the boundary tie's) from Gaussians of this x their sds, and ties its
                             boundary to its own learning-rate law (docs/algorithms/
                             extrapolation.md, "Replicates draw their priors"); default 0.5;
                             0: every replicate under the point fit's priors */
    size_t min_level_ok;  /* a level of a categorical parameter with fewer successful runs is
                             not recommended (a warning names it; MODEL), default 3; 0 or 1:
                             any level with a successful run */
    double interval_prior_draw; /* the predicted loss's interval comes from replicates of their
                             own (half as many) that draw the priors' centres with this x their
                             sds (MODEL; docs/algorithms/extrapolation.md, "The interval's own
                             replicates"); default 1; equal to prior_draw: the recommendation's
                             replicates give it */
} fit_xp_options;

fit_xp_options fit_xp_options_default(void);

/* Warning bits (fit_xp_result.warnings). */
#define FIT_XP_WARN_FAR        1u   /* C far beyond the largest run (> far_factor) */
#define FIT_XP_WARN_VERY_FAR   2u   /* C more than 1000x beyond the largest run */
#define FIT_XP_WARN_BELOW      4u   /* C below the largest run: interpolation, not a forecast */
#define FIT_XP_WARN_FEW_FRONT  8u   /* fewer than 4 Pareto groups: front laws are weak */
#define FIT_XP_WARN_NO_MODEL   16u  /* MODEL asked/possible but its fit failed: FRONT used */
#define FIT_XP_WARN_BOUND      32u  /* a recommended value was clamped to its bound */
#define FIT_XP_WARN_P_DIVERGE  64u  /* p_diverge above max_p_diverge even at the lowest lr */
#define FIT_XP_WARN_FEW_FAILED 128u /* no diverged run: the stability boundary is unknown */
#define FIT_XP_WARN_NARROW_ND  256u /* N or D spans less than a factor 4: Chinchilla weak */
#define FIT_XP_WARN_RATIO      512u /* the law's optimal D/N lies outside the runs' D/N range */
#define FIT_XP_WARN_FEW_LEVEL                                                                      \
    1024u                        /* a categorical's level had too few successful runs to be        \
                                    recommended (fit_xp_options.min_level_ok) */
#define FIT_XP_WARN_CURVES 2048u /* the curve points disagreed with the runs' finals: left out */
#define FIT_XP_WARN_FLAT                                                                           \
    4096u /* a hyperparameter's runs showed no bowl: its value is the best                         \
              runs', not a fitted optimum */
#define FIT_XP_WARN_EXP_LIMIT                                                                      \
    8192u /* the L(N, D) law's alpha or beta sits at its search limit: the runs show no power law  \
              to extrapolate (a plateau, or too narrow a range) */
#define FIT_XP_WARN_SHAPE                                                                          \
    16384u /* a SIZE parameter not solved for N has one value, at its bound, on every front run:   \
              the model sees it only through N, so the sweep cannot say what another value is      \
              worth at the target */

typedef struct fit_xp fit_xp;

/* Creates an empty extrapolator with default options. ST_OK or ST_ENOMEM. */
st_status fit_xp_create(fit_xp **out);
/* NULL is a no-op. */
void fit_xp_destroy(fit_xp *xp);
/* Message of the last failing call ("" if none); owned by xp. */
const char *fit_xp_errmsg(const fit_xp *xp);
/* Copies *o. ST_EINVAL for level outside (0, 1), max_p_diverge outside (0, 1]. */
st_status fit_xp_set_options(fit_xp *xp, const fit_xp_options *o);

/*
 * Copies the runs. params: n_params descriptions; x: n × n_params values (row-major, parameter
 * units, the sweep's order); cost and objective: n each (NAN allowed where failed); failed: n
 * flags or NULL (a run with a non-finite objective counts as failed); N and D: n each or NULL
 * (model size and tokens from the runs' records; NAN where unknown; a parameter with role N or D
 * takes precedence). Clears earlier results. ST_EINVAL names the bad run and parameter;
 * ST_EEMPTY with fewer than 3 successful runs.
 */
st_status fit_xp_set_runs(fit_xp *xp, size_t n_params, const fit_xp_param *params, size_t n,
                          const double *x, const double *cost, const double *objective,
                          const int *failed, const double *N, const double *D);

/*
 * Curve points (extrapolate_curves.c; docs/algorithms/extrapolation.md, "Curve points"): what
 * successful runs would have reached at fewer tokens, from their learning curves (study/ derives
 * them with fit/curve.h). Point c belongs to run run[c] (an index of fit_xp_set_runs' runs) and
 * says: the same setting trained on D[c] tokens (a complete schedule) would have ended at
 * objective[c]. They enter the MODEL's loss fit only (not the front, the stability boundary or
 * the cost model), as correlated with their run: run i's k_i points weigh weight / k_i each in
 * the point fit (weight in [0, 1]: a run's curve counts as at most one more run), the bootstrap
 * resamples a run together with all its points, and the run noise (the residual sd) is measured
 * on the runs' own objectives only. So points from one run never count as independent runs.
 * branch[c] != 0 marks a cooldown branch's final (NULL: none): the branch kept its run's warmup
 * steps, so a warmup given as a fraction of the run (fit_xp_warmup_unit) is, for that point, the
 * run's fraction times the run's D over D[c] (at most 0.95); a derived point's
 * schedule shrinks with the run and keeps the run's fraction.
 * Call after fit_xp_set_runs (which drops them); n_pts 0 removes them. ST_OK, ST_EINVAL (a run
 * index out of range or of a failed run, D or objective not positive and finite, weight outside
 * [0, 1]), ST_ENOMEM. Clears earlier results.
 */
st_status fit_xp_set_curve_points(fit_xp *xp, size_t n_pts, const size_t *run, const double *D,
                                  const double *objective, const unsigned char *branch,
                                  double weight);
/* Curve points held (0 without). */
size_t fit_xp_n_curve_points(const fit_xp *xp);

/*
 * Runs both analyses and recommends settings at compute C (cost units, > 0).
 * Returns ST_OK (check the result's warnings), ST_ESTATE (no runs), ST_EINVAL (C), ST_EEMPTY
 * (no usable front), ST_ENUMERIC, ST_ENOMEM.
 */
st_status fit_xp_run(fit_xp *xp, double C);

/* ---- results (valid after fit_xp_run returned ST_OK; borrowed) ------------------------- */

typedef struct fit_xp_result {
    double compute;                    /* C */
    double largest_cost;               /* the largest successful run's cost */
    fit_xp_method method;              /* the method that gave the recommendation */
    const double *value;               /* n_params recommended values (parameter units; a
                                          categorical's level index; NAN for a conditional
                                          parameter the recommended level leaves inactive) */
    const double *lo, *hi;             /* n_params interval ends at `level` */
    double objective;                  /* predicted objective of the recommended run */
    double objective_lo, objective_hi; /* its interval (model and run noise) */
    double p_diverge;                  /* predicted probability that the run diverges: mean over the
                                          replicates of the stability boundary (both methods); NAN only when
                                          the sweep has no learning rate (role lr) */
    double N, D;                       /* recommended model size and tokens (NAN when unknown) */
    double N_lo, N_hi, D_lo, D_hi;
    unsigned warnings;        /* FIT_XP_WARN_* */
    const char *warning_text; /* human-readable, "; "-separated, "" if none */
    int safe; /* 1: the engine vouches for the recommendation (p_diverge <= max_p_diverge there,
                 and for FRONT the front's learning-rate law and the stability boundary agree
                 within a factor e (2.7)); 0: do not launch it (see unsafe_reason). MODEL: 0 exactly
                 when FIT_XP_WARN_P_DIVERGE is set. FRONT: 0 when p_diverge > max_p_diverge at
                 the lowest learning rate allowed, when the learning rate had to be lowered more
                 than e below the front's law to meet the limit, or when runs failed and no
                 parameter is a learning rate (docs/algorithms/extrapolation.md section 1) */
    const char *unsafe_reason; /* "" when safe; else why, and which small runs would resolve it
                                  (e.g. "run lr between X and Y at cost Z") */
} fit_xp_result;

/* Fills *r. ST_ESTATE before a successful fit_xp_run. */
st_status fit_xp_get_result(const fit_xp *xp, fit_xp_result *r);
size_t fit_xp_n_params(const fit_xp *xp);
const char *fit_xp_param_name(const fit_xp *xp, size_t i);
fit_xp_role fit_xp_param_role(const fit_xp *xp, size_t i);   /* resolved (never AUTO) */
fit_xp_space fit_xp_param_space(const fit_xp *xp, size_t i); /* as fitted */
/* 1 when categorical parameter i sets the model size (tokens 0) or the tokens (tokens 1): each
 * level's successful runs at one value (within 2%), two levels 5% apart or more; the levels'
 * ln N (or ln D) into lq (n_levels values, NAN for a level no run gave). Needs the runs set. */
int fit_xp_level_sets(const fit_xp *xp, size_t i, int tokens, double *lq);

/* The Pareto front: groups of runs with identical parameters, increasing mean cost, strictly
 * improving mean objective. run: index of the group's first run. */
size_t fit_xp_front_n(const fit_xp *xp);
void fit_xp_front_get(const fit_xp *xp, size_t k, size_t *run, double *cost, double *objective,
                      size_t *count);

/* Law of parameter i along the front: b = coef[0] + coef[1] ln cost (b basic coordinate);
 * slope_ci: interval of coef[1] over the group bootstrap. ST_ENOTFOUND when not fitted. */
st_status fit_xp_front_law(const fit_xp *xp, size_t i, double coef[2], double slope_ci[2]);
/* The saturating law of the objective along the front, natural (A, alpha, E):
 * y = E + A cost^-alpha. ST_ENOTFOUND when not fitted (too few groups, maximised objective). */
st_status fit_xp_front_loss_law(const fit_xp *xp, double natural[3]);
/*
 * Curves with bands for plots: for m costs C[], the front law of parameter i (parameter units)
 * or, with i == (size_t)-1, of the objective: mid (median over replicates, or the fit), lo, hi
 * at `level`. Any of mid/lo/hi may be NULL. ST_ENOTFOUND when that law was not fitted.
 */
st_status fit_xp_front_curve(const fit_xp *xp, size_t i, size_t m, const double *C, double *mid,
                             double *lo, double *hi);
/* CARBS' recommendation at the target compute: the front laws evaluated there (n_params), before
 * the FRONT method holds the learning rate to the stability boundary (fit_xp_result.value). */
st_status fit_xp_front_recommend(const fit_xp *xp, double *value);

/* The model (METHOD_MODEL), ST_ENOTFOUND when it was not fitted. */
/* Chinchilla natural parameters (A, B, E, alpha, beta) of L(N, D) and the allocation at C. */
st_status fit_xp_chinchilla(const fit_xp *xp, double natural[5], fit_alloc *alloc);
/* Law of hyperparameter i (roles LR, BATCH, OTHER): b_opt = coef[0] + coef[1] ln N +
 * coef[2] ln D with the hyperparameters it is coupled to (those before it: batch, then lr) at
 * their sweep means; curv, sat: the penalty k (1 - exp(-curv u^2 / k)), k = sat, u = b - b_opt. */
st_status fit_xp_hp_law(const fit_xp *xp, size_t i, double coef[3], double *curv, double *sat);
/* Coupling of hyperparameter i's optimum to hyperparameter j (both parameter indices): d b_i* /
 * d b_j in basic coordinates, j modelled before i (batch, then lr, then the others).
 * ST_ENOTFOUND when either is not modelled or j does not come before i. */
st_status fit_xp_hp_coupling(const fit_xp *xp, size_t i, size_t j, double *t);
/* Stability boundary: P(diverge) = 1 / (1 + exp(-(g[0] + g[1] ln lr + g[2] ln N + g[3] w))),
 * w the warmup-like parameter's basic coordinate less its law's optimum at the run's N, D and
 * earlier hyperparameters, capped at 0, when that law is modelled, else the coordinate itself (0
 * when there is no warmup). ST_ENOTFOUND without a learning rate. */
st_status fit_xp_divergence(const fit_xp *xp, double g[4]);
/*
 * The factor of categorical parameter i (MODEL): for its level `level`, the fitted offset in ln
 * loss and the shift of the learning rate's optimum (ln lr when the learning rate is on a log
 * scale) relative to the reference level: {point fit, interval lo, hi} at the options' level
 * over the bootstrap replicates (either may be NULL). *ref_level: the reference level (the one
 * with the most successful runs), whose offset and shift are 0 by definition; *n_ok: the
 * level's successful runs. ST_ENOTFOUND without a model or when i is not categorical; ST_EINVAL
 * for a level out of range.
 */
st_status fit_xp_level_effect(const fit_xp *xp, size_t i, size_t level, double offset[3],
                              double lr_shift[3], size_t *ref_level, size_t *n_ok);
/* The name of level `level` of parameter i ("level 3" when none was given; NULL when i is not
 * categorical or level out of range). Owned by xp. */
const char *fit_xp_level_name(const fit_xp *xp, size_t i, size_t level);
/* Cost model: cost = exp(k) N D (k fitted on the successful runs). */
st_status fit_xp_cost_model(const fit_xp *xp, double *k);

/*
 * Prediction of the model for one setting x (n_params values; N and D given, or NAN to take
 * them from x's N/D parameters): objective (median over the interval's replicates,
 * interval_prior_draw) and interval at `level` including run noise, and p_diverge (the mean over
 * the recommendation's replicates). Any output may be NULL. ST_ENOTFOUND without a model.
 */
st_status fit_xp_predict(const fit_xp *xp, const double *x, double N, double D, double *objective,
                         double *lo, double *hi, double *p_diverge);

/* Bootstrap replicates of the model (0 without a model): the R of fit_xp_predict_replicates. */
size_t fit_xp_n_replicates(const fit_xp *xp);

/*
 * Each replicate's prediction for one setting x (n_params values; N and D as fit_xp_predict):
 * ln_loss[r] = ln of replicate r's predicted objective, p_diverge[r] its stability boundary's
 * P(diverge) (0 when no boundary was fitted), r < fit_xp_n_replicates(xp): the
 * recommendation's replicates (prior_draw). fit_xp_predict's objective is exp of their median
 * when interval_prior_draw equals prior_draw (else of the interval's own replicates', which this
 * does not give). *sigma: the model's residual sd of ln loss (run noise).
 * Any output may be NULL. ST_OK, ST_EINVAL (x NULL, N or D unknown), ST_ENOTFOUND (no model).
 * For study mode's acquisition (docs/algorithms/study-mode.md): the replicates as an ensemble.
 */
st_status fit_xp_predict_replicates(const fit_xp *xp, const double *x, double N, double D,
                                    double *ln_loss, double *p_diverge, double *sigma);

#ifdef __cplusplus
}
#endif
#endif /* FIT_EXTRAPOLATE_H */
