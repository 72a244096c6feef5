/*
 * fit.h — the scaling-law fitter: law forms as strategy objects with analytic gradients, robust
 * objectives on log residuals, multi-start L-BFGS (NLopt) spread over threads, bootstrap
 * intervals, compute-optimal allocation, Approaches 1 and 2, hyperparameter laws, validation by
 * compute cut-off and profile likelihood. This header is the reference manual.
 * Not here: plotting (report/), reading a sweep's SQLite store (runner/ calls fit_set_data).
 * Depends on NLopt, GSL and common/st.h. Methods: docs/algorithms/scaling-laws.md.
 *
 * Thread-safety: handles are not shared between threads; distinct handles are independent.
 * fit_run() and fit_bootstrap() start their own worker threads internally.
 */
#ifndef FIT_H
#define FIT_H

#include <stddef.h>
#include <stdint.h>

#include "common/st.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- law forms (strategy objects, GSL `_type` style) -------------------------------------- */

/*
 * A law maps inputs x (n_inputs positive numbers, e.g. N and D) and parameters theta to a
 * positive prediction y. Every law is evaluated as log y and its gradient d(log y)/d(theta).
 * theta is the law's internal (optimisation) parametrisation, e.g. LSE coordinates
 * (a = ln A, b = ln B, e = ln E, alpha, beta) for Chinchilla; fit_law_natural() maps theta to
 * the published parametrisation (A, B, E, alpha, beta).
 */
typedef struct fit_law fit_law;

/* Chinchilla Approach 3 (Hoffmann et al. 2022 eq. 2, LSE form):
 * inputs (N, D); theta (a, b, e, alpha, beta); natural (A, B, E, alpha, beta);
 * log L = LSE(a - alpha ln N, b - beta ln D, e). Default starts: Hoffmann's 4500-point grid. */
extern const fit_law *const fit_law_chinchilla;
/* Kaplan et al. 2020 eq. 1.5: L = [(Nc/N)^(aN/aD) + Dc/D]^aD. inputs (N, D);
 * theta (ln Nc, ln Dc, alpha_N, alpha_D); natural (Nc, Dc, alpha_N, alpha_D). */
extern const fit_law *const fit_law_kaplan;
/* Saturating power law y = E + A x^-alpha (loss against compute, the Pareto front), LSE form:
 * inputs (C); theta (a, alpha, e); natural (A, alpha, E). */
extern const fit_law *const fit_law_saturating;
/* Product power law y = k x1^p1 (one input) or y = k x1^p1 x2^p2 (two inputs), fitted in log
 * space (hyperparameter laws): theta (ln k, p1[, p2]); natural (k, p1[, p2]). */
extern const fit_law *const fit_law_power1;
extern const fit_law *const fit_law_power2;
/* Muennighoff et al. 2023 data-constrained law: inputs (N, D, U_D) with U_D the unique tokens;
 * theta (a, b, e, alpha, beta, ln R_D*, ln R_N*); natural (A, B, E, alpha, beta, R_D*, R_N*).
 * D' = U_D + U_D R_D* (1 - exp(-R_D/R_D*)), R_D = D/U_D - 1; U_N = min(N, N_opt(U_D)) with
 * N_opt(U_D) = (alpha A/(beta B))^(1/alpha) U_D^(beta/alpha); N' likewise with R_N*. */
extern const fit_law *const fit_law_muennighoff;
/* Gadre et al. 2024: L(C, M) = E + (a M^eta + b M^-eta) C^-eta, M = D/N. inputs (C, M);
 * theta (e, ln a, ln b, eta); natural (E, a, b, eta). */
extern const fit_law *const fit_law_gadre;

/* Law by name ("chinchilla", "kaplan", "saturating", "power1", "power2", "muennighoff",
 * "gadre"); NULL if unknown. */
const fit_law *fit_law_by_name(const char *name);
/* Name of the i-th law (i = 0, 1, ...); NULL past the end. */
const char *fit_law_list(size_t i);
const char *fit_law_name(const fit_law *law);
size_t fit_law_n_params(const fit_law *law);
size_t fit_law_n_inputs(const fit_law *law);
/* Names of theta[i], of the natural parameter i, of input i (static strings; NULL past end). */
const char *fit_law_param_name(const fit_law *law, size_t i);
const char *fit_law_natural_name(const fit_law *law, size_t i);
const char *fit_law_input_name(const fit_law *law, size_t i);
/* theta -> natural parameters (n_params each). */
void fit_law_natural(const fit_law *law, const double *theta, double *natural);
/* natural -> theta. Returns ST_EINVAL if a parameter that must be positive is not. */
st_status fit_law_theta(const fit_law *law, const double *natural, double *theta);
/*
 * Evaluates log y at one input x (n_inputs values, all > 0). grad (n_params) receives
 * d(log y)/d(theta) when not NULL. Pure, thread-safe.
 */
double fit_law_eval(const fit_law *law, const double *theta, const double *x, double *grad);

/* ---- objectives and options -------------------------------------------------------------- */

typedef enum fit_objective {
    FIT_OBJ_HUBER = 0,     /* sum_i w_i Huber_delta(r_i), r = log yhat - log y (Hoffmann) */
    FIT_OBJ_HUBER_LIK = 1, /* Epoch's Huber likelihood: minus the log-likelihood of r with
                              density exp(-Huber_delta(r/sigma))/(sigma Z(delta)); sigma is
                              estimated jointly (fit_sigma()) */
    FIT_OBJ_MSE = 2,       /* sum_i w_i r_i^2 / 2 */
    FIT_OBJ_MAE = 3,       /* sum_i w_i |r_i| (subgradient; L-BFGS may stop early) */
} fit_objective;

typedef struct fit_options {
    fit_objective objective; /* default FIT_OBJ_HUBER */
    double delta;            /* Huber threshold on the residual, default 1e-3 */
    int linear;              /* 1: residuals in linear space r = yhat - y; default 0 (log) */
    int mean;                /* 1: average instead of sum (the loss-scale pitfall; default 0) */
    size_t n_threads;        /* worker threads for starts and replicates; 0 = online CPUs */
    size_t max_eval;         /* objective evaluations per start, default 2000 */
    double ftol_rel;         /* per-start relative objective tolerance, default 1e-5 (the best
                                starts are polished to 1e-15 afterwards) */
    double xtol_rel;         /* per-start relative step tolerance, default 1e-5 */
    size_t n_polish;         /* the best n_polish distinct starts are re-run with tight
                                tolerances; default 16 */
} fit_options;

/* The defaults above. */
fit_options fit_options_default(void);
/* Name of an objective ("huber", "huber-lik", "mse", "mae"), and the reverse (returns -1 if
 * unknown). */
const char *fit_objective_name(fit_objective o);
int fit_objective_by_name(const char *name);

/* Diagnostic flags of a fit (bitmask, fit_warnings()). */
#define FIT_WARN_LOSS_SCALE                                                                        \
    1u                            /* gradient below 1e-5 at the start, or stop within 2 steps: an  \
                                     averaged / tiny objective stops L-BFGS early (Epoch) */
#define FIT_WARN_NOT_CONVERGED 2u /* the best start hit max_eval or NLopt failed */
#define FIT_WARN_SPREAD        4u /* the best polished starts disagree (> 1e-6 relative) */
#define FIT_WARN_EDGE          8u /* Approach 2: a budget's minimum lies at its grid's edge */

/* ---- the fitter handle ------------------------------------------------------------------- */

typedef struct fit fit;

/* Creates a fitter for `law` with default options. Returns ST_OK, ST_EINVAL (NULL law) or
 * ST_ENOMEM. */
st_status fit_create(const fit_law *law, fit **out);
/* NULL is a no-op. */
void fit_destroy(fit *f);
/* Message for the last failing call on f (or ""); owned by f, valid until the next call. */
const char *fit_errmsg(const fit *f);
const fit_law *fit_get_law(const fit *f);

/* Copies *o. ST_EINVAL for delta <= 0, max_eval 0 or an unknown objective. */
st_status fit_set_options(fit *f, const fit_options *o);
const fit_options *fit_get_options(const fit *f);
/*
 * Copies the data: x (n × n_inputs, row-major, each value finite and > 0), y (n, finite, > 0),
 * w (n per-point weights >= 0, or NULL for 1). Clears any earlier result.
 * ST_EINVAL names the first bad row and column; ST_EEMPTY if n < n_params + 1 (+1 more for
 * FIT_OBJ_HUBER_LIK).
 */
st_status fit_set_data(fit *f, size_t n, const double *x, const double *y, const double *w);
/*
 * Replaces the law's default start grid by n_starts starts (n_starts × n_params theta values,
 * row-major); n_starts 0 restores the default. Copies. ST_EINVAL for non-finite values.
 */
st_status fit_set_starts(fit *f, size_t n_starts, const double *starts);
/* Holds theta[i] at value during fit_run (value NAN releases it). ST_EINVAL for i out of range. */
st_status fit_fix_param(fit *f, size_t i, double value);

/*
 * Runs the multi-start L-BFGS (NLopt LD_LBFGS), each thread with its own NLopt object; the
 * result does not depend on the thread count (ties go to the lower start index). For
 * FIT_OBJ_HUBER_LIK the grid stage uses the plain Huber objective and the polish stage the
 * likelihood. Returns ST_OK (check fit_warnings()), ST_ESTATE (no data), ST_ENUMERIC (no start
 * gave a finite objective) or ST_ENOMEM.
 */
st_status fit_run(fit *f);

/* Results, valid after fit_run() returned ST_OK (NULL / NAN otherwise). Borrowed pointers. */
const double *fit_theta(const fit *f);      /* n_params, internal parametrisation */
const double *fit_params(const fit *f);     /* n_params, natural parametrisation */
double fit_objective_value(const fit *f);   /* at the optimum, as minimised */
double fit_sigma(const fit *f);             /* FIT_OBJ_HUBER_LIK: the scale sigma; else NAN */
double fit_loglik(const fit *f);            /* FIT_OBJ_HUBER_LIK: the log-likelihood; else NAN */
unsigned fit_warnings(const fit *f);        /* FIT_WARN_* bits */
const char *fit_warning_text(const fit *f); /* human-readable warnings, "" if none */

typedef struct fit_diag {
    size_t n_starts;   /* starts tried */
    size_t n_finite;   /* starts that ended with a finite objective */
    size_t best_start; /* index of the start that led to the optimum */
    size_t n_evals;    /* objective evaluations summed over all starts */
    double grad_norm;  /* infinity norm of the objective gradient at the optimum */
    double start_grad; /* infinity norm of the gradient at the best start's initial point */
    int nlopt_code;    /* NLopt result of the final polish */
    double spread;     /* max relative objective difference among the polished starts */
} fit_diag;
/* Copies the diagnostics of the last fit_run(). */
void fit_get_diag(const fit *f, fit_diag *d);

/* Objective and gradient (n_params [+1 for log sigma]) at theta on the current data; for
 * tests and profiles. grad may be NULL. Returns NAN without data. */
double fit_objective_eval(const fit *f, const double *theta, double *grad);

/* Predictions yhat (n) at x (n × n_inputs) from the fitted parameters. ST_ESTATE without a fit. */
st_status fit_predict(const fit *f, size_t n, const double *x, double *yhat);

/* ---- compute-optimal allocation (Chinchilla eq. 4, C = 6 N D) ----------------------------- */

typedef struct fit_alloc {
    double a, b;  /* N_opt ∝ C^a, D_opt ∝ C^b; a = beta/(alpha+beta) */
    double G;     /* (alpha A / (beta B))^(1/(alpha+beta)) */
    double N_opt; /* parameters at compute C */
    double D_opt; /* tokens at compute C */
    double tokens_per_param;
    double L_opt; /* L*(C) on the frontier */
} fit_alloc;
/*
 * natural = (A, B, E, alpha, beta) as from a Chinchilla fit (the first five natural parameters
 * of the Muennighoff law work too). C in FLOP (> 0). ST_EINVAL for non-positive inputs.
 */
st_status fit_allocate(const double *natural, double C, fit_alloc *out);
/* Compute C (FLOP) at which L*(C) = target; ST_ERANGE if target <= E. */
st_status fit_compute_for_loss(const double *natural, double target, double *C);
/* Loss of a model with N parameters trained on D tokens (C = 6 N D): the over-training case. */
double fit_loss_at(const double *natural, double N, double D);

/* ---- bootstrap ------------------------------------------------------------------------------ */

typedef struct fit_boot fit_boot;

typedef struct fit_boot_options {
    size_t n_rep;              /* replicates, default 1000 */
    uint64_t seed;             /* default 42 */
    size_t n_threads;          /* 0 = the fitter's n_threads */
    const size_t *cluster;     /* NULL (resample points) or n cluster ids (resample clusters) */
    double target_C;           /* derived quantities at this compute (default 5.88e23) */
    double target_N, target_D; /* prediction L(target_N, target_D) (0 = skip) */
} fit_boot_options;
fit_boot_options fit_boot_options_default(void);

/* Derived quantities reported for Chinchilla-type laws (index into fit_boot_derived()). */
enum {
    FIT_DER_A = 0,    /* a = beta/(alpha+beta) */
    FIT_DER_NOPT = 1, /* N_opt(target_C) */
    FIT_DER_DOPT = 2, /* D_opt(target_C) */
    FIT_DER_TPP = 3,  /* D_opt/N_opt at target_C */
    FIT_DER_LOPT = 4, /* L*(target_C) */
    FIT_DER_PRED = 5, /* L(target_N, target_D), NAN if not asked */
    FIT_DER_COUNT = 6
};
const char *fit_derived_name(size_t i);

/*
 * Nonparametric bootstrap of a fitted f: each replicate resamples the points (or clusters)
 * with replacement and minimises f's objective by L-BFGS from f's optimum (plain Huber for
 * FIT_OBJ_HUBER_LIK, as Epoch does). The index draws use the raw 32-bit MT19937 stream of
 * st_rng seeded with `seed`, masked to the next power of two minus one with rejection — the
 * same sequence numpy's RandomState(seed).choice(n, n) gives — so index sets can be matched.
 * Replicates are spread over threads; the result does not depend on the thread count.
 * Returns ST_OK, ST_ESTATE (f not fitted), ST_EINVAL (bad options) or ST_ENOMEM; *out owned by
 * the caller (fit_boot_destroy).
 */
st_status fit_bootstrap(fit *f, const fit_boot_options *o, fit_boot **out);
void fit_boot_destroy(fit_boot *b);
size_t fit_boot_n_rep(const fit_boot *b);
/* Natural parameters of replicate r (n_params); borrowed. */
const double *fit_boot_replicate(const fit_boot *b, size_t r);
/* Standard deviation over replicates of natural parameter i. */
double fit_boot_se(const fit_boot *b, size_t i);
/* Percentile interval of natural parameter i at `level` (e.g. 0.95). */
void fit_boot_interval(const fit_boot *b, size_t i, double level, double *lo, double *hi);
/* The same for derived quantity k (FIT_DER_*); NAN when the law has no such quantity. */
double fit_boot_derived_se(const fit_boot *b, size_t k);
void fit_boot_derived_interval(const fit_boot *b, size_t k, double level, double *lo, double *hi);
double fit_boot_derived_median(const fit_boot *b, size_t k);
/* Derived quantities (FIT_DER_COUNT) at natural parameters of law (NAN where not defined). */
void fit_derived(const fit_law *law, const double *natural, const fit_boot_options *o, double *out);

/* ---- profile likelihood ----------------------------------------------------------------- */

/*
 * Profiles theta[i] of a fitted f over n values (ascending): for each value the other
 * parameters are re-minimised from f's optimum; obj (n) receives the minimised objective.
 * With FIT_OBJ_HUBER_LIK, *lo and *hi (may be NULL) receive the Wilks 95% interval where
 * 2 (obj - obj_min) <= 3.841 (linear interpolation; NAN if the grid does not bracket it).
 * Returns ST_OK, ST_ESTATE, ST_EINVAL.
 */
st_status fit_profile(fit *f, size_t i, size_t n, const double *values, double *obj, double *lo,
                      double *hi);

/* ---- parameters at their limits ---------------------------------------------------------- */

/*
 * Checks a fitted f for parameters that ran to a limit of their parametrisation, which means
 * the data do not determine them: an irreducible loss E below 1e-3 of the smallest target
 * (E -> 0), an exponent (alpha, beta, eta, alpha_N, alpha_D) below 1e-3 or above 5, a
 * repetition constant R_D* or R_N* above 1e4 (no repetition penalty left), any other
 * log-parametrised constant below 1e-10 or above 1e30. Writes "NAME = V runs to ..." clauses,
 * "; "-separated, into msg (len bytes; "" if none) and returns their count (0 without a fit).
 */
size_t fit_limit_check(const fit *f, char *msg, size_t len);

/* ---- validation by compute cut-off ------------------------------------------------------- */

/*
 * Fits f on the rows with cut_value[i] <= cutoff, predicts the others. rel_err (n) receives
 * (yhat - y)/y for held-out rows and NAN for training rows; *n_held the count. f keeps the fit
 * of the training rows. Returns fit_run's statuses, ST_EEMPTY if either side is too small.
 */
st_status fit_holdout(fit *f, size_t n, const double *x, const double *y, const double *w,
                      const double *cut_value, double cutoff, double *rel_err, size_t *n_held);

/* ---- Approaches 1 and 2 (Hoffmann et al. 2022 §3.1, §3.2) --------------------------------- */

typedef struct fit_approach {
    double a, log_kN;  /* N_opt = exp(log_kN) C^a (OLS in log space) */
    double b, log_kD;  /* D_opt = exp(log_kD) C^b */
    size_t n_opt;      /* number of optima the power laws went through */
    unsigned warnings; /* FIT_WARN_EDGE */
    char warning_text[ST_ERRMSG_MAX];
} fit_approach;
/*
 * Approach 1 on final-loss runs: the runs on the minimum-loss envelope (each has lower loss
 * than every run of smaller or equal compute) give (C, N, D) optima. N, D, C, loss: n each.
 * Approach 2: runs are grouped by budget (C equal within 5% relative); per budget a parabola of
 * loss in ln N is fitted (>= 3 points) and its vertex gives N*(C); D* = C / (6 N*). Minima at a
 * budget's edge are flagged. ST_EEMPTY with fewer than 2 optima; errmsg in err (ST_ERRMSG_MAX).
 */
st_status fit_approach1(size_t n, const double *N, const double *D, const double *C,
                        const double *loss, fit_approach *out, char *err);
st_status fit_approach2(size_t n, const double *N, const double *C, const double *loss,
                        fit_approach *out, char *err);

/* ---- Approach 2 by Porian et al. 2024 (IsoFLOP profiles with seed-noise bootstrap) -------- */

#define FIT_ISO_MAX_BUDGETS 64

typedef struct fit_isoflop_options {
    size_t n_boot;         /* seed-noise replicates, default 1000 */
    uint64_t seed;         /* default 42 */
    double noise_sd;       /* sd of the Gaussian seed noise added to each loss (loss units),
                              default 0.002 (Porian's RefinedWeb value; 0.01 for OpenWebText2) */
    size_t grid_per_gap;   /* interpolation points per gap between model sizes, default 25 */
    double min_std_factor; /* floor on sd(ln N*) as a fraction of the mean gap in ln N between
                              model sizes, default 0.33 */
    double level;          /* level of the interval on a, default 0.95 */
} fit_isoflop_options;
fit_isoflop_options fit_isoflop_options_default(void);

typedef enum fit_isoflop_use {
    FIT_ISO_USED = 0,     /* in the regression */
    FIT_ISO_FEW = 1,      /* fewer than 5 model sizes (GSL's Akima spline needs 5) */
    FIT_ISO_EDGE = 2,     /* the minimum of the spline through the data is at an end */
    FIT_ISO_UNSTABLE = 3, /* fewer than half the replicates have an interior minimum */
} fit_isoflop_use;

typedef struct fit_isoflop_budget {
    double C;            /* the budget (mean C of its runs), FLOP */
    size_t n_sizes;      /* distinct model sizes (the minimum loss over runs of equal N) */
    double N_min, N_max; /* range of model sizes */
    double N_point;      /* argmin of the spline through the data (no noise) */
    double N_star;       /* median over the valid replicates: the observation regressed */
    double sd_ln_N;      /* bootstrap sd of ln N*, floored and inflated (Porian) */
    double L_star;       /* spline minimum of the loss at N_point */
    size_t n_valid;      /* replicates with an interior minimum */
    fit_isoflop_use use;
} fit_isoflop_budget;

typedef struct fit_isoflop_result {
    double a, log_k;   /* N* = exp(log_k) C^a: weighted least squares of ln N* on ln C,
                          weights 1/sd_ln_N^2 */
    double a_lo, a_hi; /* percentile interval of a over the replicates (each replicate's
                          N* per budget, the same weights) */
    double a_se;       /* sd of a over the replicates */
    double b;          /* D* ∝ C^b with b = 1 - a (C = 6 N D) */
    size_t n_budgets, n_used, n_rep;
    fit_isoflop_budget budget[FIT_ISO_MAX_BUDGETS];
    unsigned warnings; /* FIT_WARN_EDGE when a budget was dropped */
    char warning_text[ST_ERRMSG_MAX];
} fit_isoflop_result;

/*
 * Approach 2 as Porian et al. 2024 (arXiv:2406.19146, github formll/resolving-scaling-law-
 * discrepancies, analysis.py interp_flop) do it. Runs (N, C, loss; n each, all > 0) are grouped
 * into budgets (C within 5% relative). Per budget: the minimum loss over runs of equal N; an
 * Akima spline of ln loss against ln N (GSL gsl_interp_akima) evaluated on (sizes - 1) *
 * grid_per_gap points evenly spaced in ln N; its argmin is N*. A budget whose argmin is at an
 * end of the grid is dropped (FIT_ISO_EDGE). n_boot replicates add Gaussian noise of sd noise_sd
 * to every loss and redo the argmin; ends are invalid; a budget with fewer than half valid is
 * dropped. sd(ln N*) over the valid replicates is floored at min_std_factor times the mean gap
 * in ln N and multiplied by n_boot / n_valid; the median of the valid N* is the observation.
 * Then weighted least squares of ln N* on ln C. Deterministic given the seed.
 * Returns ST_OK, ST_EINVAL (bad options or values), ST_EEMPTY (fewer than 2 budgets used; the
 * result still lists every budget), ST_ERANGE (more than FIT_ISO_MAX_BUDGETS budgets) or
 * ST_ENOMEM; err (ST_ERRMSG_MAX bytes) says why.
 */
st_status fit_isoflop(size_t n, const double *N, const double *C, const double *loss,
                      const fit_isoflop_options *o, fit_isoflop_result *out, char *err);

/* ---- hyperparameter laws ------------------------------------------------------------------ */

typedef enum fit_hp_select {
    FIT_HP_BAND = 0,      /* all runs within tol of the group's best loss (DeepSeek, StepLaw) */
    FIT_HP_QUADRATIC = 1, /* vertex of a quadratic in (ln lr, ln batch) per group */
} fit_hp_select;

typedef struct fit_hp_result {
    /* lr_opt = exp(lr_coef[0]) * X1^lr_coef[1] * X2^lr_coef[2] (X1, X2 as chosen) */
    double lr_coef[3];
    double batch_coef[3];
    double lr_ci[3][2], batch_ci[3][2]; /* 95% bootstrap (over groups) percentile intervals */
    size_t n_groups, n_points;          /* groups used, points in the regression */
} fit_hp_result;

typedef enum fit_hp_regressor {
    FIT_HP_ND = 0, /* lr_opt(N, D), batch_opt(D) (StepLaw) */
    FIT_HP_C = 1,  /* lr_opt(C), batch_opt(C) (DeepSeek) */
} fit_hp_regressor;

/*
 * From runs (N, D, lr, batch, loss; n each) finds the near-optimal settings per (N, D) group
 * (runs with equal N and D within 1e-9 relative) and regresses ln lr_opt and ln batch_opt on
 * the logs of the regressors; C = 6 N D. tol is the relative band (e.g. 0.0025). n_boot group
 * bootstrap replicates (seeded) give the intervals (0 = none). ST_EEMPTY with too few groups.
 */
st_status fit_hp_laws(size_t n, const double *N, const double *D, const double *lr,
                      const double *batch, const double *loss, fit_hp_select sel, double tol,
                      fit_hp_regressor reg, size_t n_boot, uint64_t seed, fit_hp_result *out,
                      char *err);

/* Published presets: DeepSeek LLM 2024 (lr = 0.3118 C^-0.125, batch = 0.2920 C^0.3271, C in
 * FLOP with their M D) and StepLaw 2025 (lr = 1.79 N^-0.713 D^0.307, batch = 0.58 D^0.571).
 * Returns the predicted lr and batch (tokens); ST_ENOTFOUND for an unknown preset name
 * ("deepseek", "steplaw"). */
st_status fit_hp_preset(const char *name, double N, double D, double C, double *lr, double *batch);

/* ---- CSV data ------------------------------------------------------------------------------ */

typedef struct fit_table fit_table;

typedef enum fit_n_convention { FIT_N_TOTAL = 0, FIT_N_NONEMBEDDING = 1 } fit_n_convention;
typedef enum fit_c_convention { FIT_C_6ND = 0, FIT_C_COUNTED = 1 } fit_c_convention;

/*
 * Reads a CSV with a header row. Canonical columns N, D, C and loss are found by these names
 * unless `mapping` says otherwise: "N=Model Size,C=Training FLOP" (canonical=header name,
 * comma-separated; NULL for none). Any other name in the mapping is an alias: "U=U_unique_tokens"
 * makes that column readable as "U" (at most 8 aliases). Mapped and canonical columns are
 * "used": each value must be a finite positive number. Missing C is derived as 6 N D, missing D
 * as C / (6 N) (the C = 6ND convention). Other columns are kept by header name if numeric; every
 * cell is also kept as text (fit_table_text, fit_table_keep_equal). Empty lines are skipped.
 * On failure returns ST_EIO (cannot open), ST_EINVAL (bad mapping), ST_EFORMAT (syntax,
 * non-numeric, non-finite or non-positive value in a used column), ST_ENOTFOUND (missing
 * column), ST_EEMPTY (no data rows) and writes "file:line: column 'X': ..." into err
 * (ST_ERRMSG_MAX bytes).
 */
st_status fit_table_read_csv(const char *path, const char *mapping, fit_table **out, char *err);
void fit_table_destroy(fit_table *t);
size_t fit_table_n_rows(const fit_table *t);
/* The column by canonical or header name; NULL if absent. Borrowed. */
const double *fit_table_column(const fit_table *t, const char *name);
/* Declared conventions (default FIT_N_TOTAL, FIT_C_6ND; C derived => 6ND). */
void fit_table_set_conventions(fit_table *t, fit_n_convention n, fit_c_convention c);
void fit_table_get_conventions(const fit_table *t, fit_n_convention *n, fit_c_convention *c);
/* Drops the k rows of largest loss (Epoch's rule keeps loss < the k-th largest, so ties at the
 * threshold go too). Recorded in fit_table_exclusions(). */
st_status fit_table_exclude_top_loss(fit_table *t, size_t k);
/* Drops rows whose `column` is above `value`. ST_ENOTFOUND for an unknown column. */
st_status fit_table_exclude_above(fit_table *t, const char *column, double value);
/* Drops the under-trained rows: fewer than min_ratio tokens per parameter (D/N < min_ratio,
 * e.g. 20, Chinchilla's compute-optimal ratio). Recorded in fit_table_exclusions().
 * ST_ENOTFOUND without N or D, ST_EINVAL for min_ratio <= 0. */
st_status fit_table_exclude_undertrained(fit_table *t, double min_ratio);
/* The exclusion rules applied so far, "; "-separated ("" if none). Borrowed. */
const char *fit_table_exclusions(const fit_table *t);
/* Fills x (n_rows × k, row-major) with the named columns; ST_ENOTFOUND names the missing one
 * in err. */
st_status fit_table_matrix(const fit_table *t, size_t k, const char *const *names, double *x,
                           char *err);
/* The cell of `column` (canonical, alias or header name) in row `row` as text (trimmed, quotes
 * removed); NULL for an unknown column, a derived column or a row out of range. Borrowed. */
const char *fit_table_text(const fit_table *t, const char *column, size_t row);
/* The file line of data row `row` (1-based line numbers; 0 out of range), and the file name
 * (borrowed), for file:line messages. Rows keep their line through exclusions and filters. */
size_t fit_table_line(const fit_table *t, size_t row);
const char *fit_table_path(const fit_table *t);
/* Keeps only the rows whose `column` equals `value` (numerically when both are numbers, to
 * 1e-12 relative, else as text); recorded in fit_table_exclusions() as "where COL = VALUE".
 * ST_ENOTFOUND for an unknown column, ST_EEMPTY (table unchanged) if no row matches; err
 * (ST_ERRMSG_MAX bytes) says which. */
st_status fit_table_keep_equal(fit_table *t, const char *column, const char *value, char *err);
/* Number of header columns, and the header name of column j (NULL past the end; borrowed). */
size_t fit_table_n_cols(const fit_table *t);
const char *fit_table_col_name(const fit_table *t, size_t j);
/* Number of distinct text values in `column` (0 for an unknown column). */
size_t fit_table_n_distinct(const fit_table *t, const char *column);
/*
 * Range check: counts the rows whose value in `column` lies more than `decades` orders of
 * magnitude from the column's median (on a log scale), e.g. a loss of 1e308 among losses near
 * 3. err (err_len bytes) receives "file:line: column 'X': value V is K orders of magnitude from
 * the median M" for the first three. 0 for an unknown column.
 */
size_t fit_table_check_range(const fit_table *t, const char *column, double decades, char *err,
                             size_t err_len);

#ifdef __cplusplus
}
#endif
#endif /* FIT_H */
