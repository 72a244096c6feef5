/*
 * study_int.h — interfaces between the files of study/ (not installed, not public).
 *   study.c       the input policy, the engine call, safety and what would resolve it
 *   study_safety.c  whether the recommendation is safe; which runs would resolve it if not
 *   study_backtest.c  the leave-largest-group-out backtest
 *   study_json.c  the result as JSON (written here only)
 *   study_acq.c   study mode's acquisition on the replicates as an ensemble (pure arithmetic)
 *   study_design.c  study mode's search cube, cost, and space-filling design
 *   study_mode.c  study mode: the proposer and the batch of suggest-next
 *   study_stop.c  the study mode's early-stopping rule and stop check (study.h)
 */
#ifndef STUDY_INT_H
#define STUDY_INT_H

#include "study/study.h"

/* what this header declares is internal: hidden from libscaletune.so's exports (the static
 * library and the tests still link it); common/scaletune.map exports the public API */
#pragma GCC visibility push(hidden)

struct study {
    char errmsg[ST_ERRMSG_MAX];
    study_options o;
    const runner_sweep *w;
    runner_sweep *owned; /* study_open's read of the store, or NULL */
    study_counts counts;

    /* the engine's parameters: the searched ones of the sweep file, in file order */
    size_t P;
    size_t *pidx;      /* engine parameter j is w->cfg->params[pidx[j]] */
    fit_xp_param *par; /* spaces, roles, bounds of the recommendation */
    double *search_lo; /* the searched bounds (parameter units), for the warnings */
    double *search_hi;

    /* the runs given to the engine */
    size_t n;
    size_t *run_idx; /* engine run k is w->runs[run_idx[k]] */
    double *x, *cost, *obj, *N, *D;
    int *failed;

    /* curve points (study_curves.c): n_cp of them, by engine run */
    size_t n_cp;
    size_t *cp_run;
    double *cp_D, *cp_obj;
    unsigned char *cp_branch; /* 1: a cooldown branch's final (fit_xp_set_curve_points) */

    fit_xp *xp; /* after a successful study_run */
    fit_xp_result res;
    double target;
    int safe;
    char unsafe_reason[ST_ERRMSG_MAX];
    char warn[ST_ERRMSG_MAX];
    study_backtest_result backtest;
};

/* study.c: appends "; "-separated text to s->warn. */
void study_add_warning(study *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* study_safety.c: whether the engine vouches for its recommendation; fills s->unsafe_reason
 * with why not and which small runs would resolve it. */
int study_judge_safety(study *s);

/* study_curves.c: the curve points of the engine's successful runs from the store st
 * (s->o.curves), into s->cp_*. A run whose curve is missing, too short or not fitted gives none. */
st_status study_curves_load(study *s, runner_store *st);
/* Cooldown branches: each succeeded run of s->w whose final names a parent (runner_sweep_run
 * .parent) that is a successful engine run becomes one of that run's points, at the branch's
 * tokens (its final's "tokens") and objective; counted in counts.n_branch_points, or
 * n_branch_unused (parent not a successful run here, no objective or tokens). */
st_status study_branches_load(study *s);

/* study_backtest.c: fills s->backtest (after the engine ran on every run). */
void study_backtest(study *s);

/* study.c: qsort's comparison of doubles; the model size N of engine run k (its N parameter
 * when the sweep has one, else its final record's N; NAN when unknown). */
int study_cmp_double(const void *a, const void *b);
double study_model_size(const study *s, size_t k);
/* study.c: run k's tokens: its final record's, else its parameter with role D; NAN when
 * unknown. */
double study_run_tokens(const study *s, size_t k);

/* ---- study mode (docs/algorithms/study-mode.md) ------------------------------------------ */

#define STUDY_NONE        ((size_t)-1)
#define STUDY_COORD_LEVEL 3

/* study_acq.c. ens: m x R ensemble (row i: variable i's ln loss under each replicate); cov: the
 * m x m sample covariance (filled). */
void study_ens_cov(size_t m, size_t R, const double *ens, double *cov);
/* Expected reduction of var(t) from a noisy (variance s2) observation of variable i:
 * cov(i, t)^2 / (var(i) + s2). */
double study_acq_vr(size_t m, const double *cov, size_t i, size_t t, double s2);
/* The rank-1 update after observing variable p with noise s2 (col: m doubles of scratch). */
void study_acq_condition(size_t m, double *cov, size_t p, double *col, double s2);
/* The variable (not t, not taken, cost finite > 0, weight > 0; weight may be NULL: 1) with the
 * largest weight x VR / cost; STUDY_NONE when none scores above 0. *score may be NULL. */
size_t study_acq_pick(size_t m, const double *cov, size_t t, double s2, const double *cost,
                      const double *weight, const unsigned char *taken, double *score);
/* Greedy batch of up to k picks: each conditions cov (updated in place) and is marked taken.
 * chosen: the picks; vr[n] (may be NULL): pick n's VR when chosen; var_t[n] (may be NULL):
 * var(t) after pick n. Returns the number of picks. */
size_t study_acq_batch(size_t m, double *cov, size_t t, double s2, const double *cost,
                       const double *weight, unsigned char *taken, size_t k, size_t *chosen,
                       double *vr, double *var_t, double *col);

/* Several targets at once: the score of variable i is sum_j tw[j] VR(i, tg[j]) (tw NULL: all
 * 1), e.g. the slopes of the large run's loss along each hyperparameter weighted by their
 * regret per unit variance (docs/algorithms/study-mode.md). The targets are never picked;
 * vr and var_t report VR(p, tg[0]) and var(tg[0]) (the large run's ln loss in study mode). */
double study_acq_vr_multi(size_t m, const double *cov, size_t i, size_t nt, const size_t *tg,
                          const double *tw, double s2);
size_t study_acq_pick_multi(size_t m, const double *cov, size_t nt, const size_t *tg,
                            const double *tw, double s2, const double *cost, const double *weight,
                            const unsigned char *taken, double *score);
size_t study_acq_batch_multi(size_t m, double *cov, size_t nt, const size_t *tg, const double *tw,
                             double s2, const double *cost, const double *weight,
                             unsigned char *taken, size_t k, size_t *chosen, double *vr,
                             double *var_t, double *col);

/* study_design.c: the searched parameters as a unit cube (every searched parameter, in file
 * order, the engine's order: a categorical's coordinate picks its level, a conditional
 * parameter is NAN where its parent leaves it inactive), the cost of a setting, the design. */
typedef struct study_space {
    const runner_config *cfg;
    study_mode_options o;
    size_t P;           /* searched parameters */
    size_t *pidx;       /* searched j is cfg->params[pidx[j]] */
    fit_xp_role *role;  /* from the name (fit_xp_role_guess) */
    int *logs;          /* 1: the design's coordinate is ln v, 2: logit v, 0: v,
                           STUDY_COORD_LEVEL: a categorical's level, floor(u k) of k = hi */
    double *lo, *hi;    /* the coordinate's bounds */
    size_t jN, jD;      /* searched indices of the parameters with roles N and D, or NONE */
    const char **names; /* every parameter's name (the cost expr's placeholders) */
    double cost_k;      /* without a cost expr: cost = exp(cost_k) N D (ln 6: FLOPs) */
    double expr_scale;  /* with a cost expr: the cost is expr x this (1 until
                           study_space_calibrate sets it) */
    double cap;         /* the design's cost cap (+inf: none known) */
    size_t jLR;         /* searched index of the learning rate (role lr), or NONE */
    /* released runs that diverged (set by the proposer; none: 0 and NULL): the design keeps a
     * point's learning rate below the lowest that diverged at a model size no larger */
    size_t n_div;
    const double *div_N, *div_lr; /* n_div each: their N (NAN when unknown) and learning rate */
    /* the design's learning-rate window (set by the proposer from the released runs' fitted
     * law; lrw_half 0: none): a point's ln lr spreads over lrw_c[0] + lrw_c[1] ln N +
     * lrw_c[2] ln D +- lrw_half, inside the searched range and below the divergences */
    double lrw_c[3], lrw_half;
} study_space;

/* ST_OK, ST_EINVAL (no searched parameter, a bound the design cannot use, a conditional
 * parameter with role N, D or size), ST_ENOMEM. */
st_status study_space_init(study_space *sp, const runner_config *cfg, const study_mode_options *o,
                           char *errmsg);
void study_space_clear(study_space *sp);
/* The cost of setting x (cfg->n_params, file order); NAN when unknown. */
double study_space_cost(const study_space *sp, const double *x);
/* With a cost expr: expr_scale = the largest measured cost / expr over w's successful runs (not
 * branches) and, as lower bounds, cap / expr of its runs stopped over the cap, so that settings
 * the design puts at the cap are not stopped over it when the trainer's metric counts more than
 * the expr; at least STUDY_EXPR_MARGIN (1.5) until a successful run has measured it. */
void study_space_calibrate(study_space *sp, const runner_sweep *w);
/* The model size of setting x: its N parameter, else the N its cost expr implies at its D
 * (cost / (exp(cost_k) D)); NAN when neither is known. */
double study_space_N(const study_space *sp, const double *x);
/* u (P coordinates in [0, 1]) to a setting x (cfg->n_params): fixed values, rounding, bounds. */
void study_space_from_unit(const study_space *sp, const double *u, double *x);
/* The setting x's coordinates in the cube (P, may lie outside [0, 1] beyond the bounds). */
void study_space_to_unit(const study_space *sp, const double *x, double *u);
/* Brings x under the cap: N and D (or, without them, every size-like parameter) scaled down
 * together in the cube; x unchanged when already under it or when the cost is unknown. */
void study_space_under_cap(const study_space *sp, double *x);
/* The design's point for cube point u: the compute-optimal band (log cost uniform in cap/band
 * .. cap, tokens per parameter in ratio_lo .. ratio_hi) when N and D are parameters, the cube
 * otherwise, under the cap. */
void study_design_point(const study_space *sp, const double *u, double *x);
/* Points first .. first + n - 1 (0-based) of the Sobol sequence (Halton above 40 dimensions)
 * in P dimensions, rotated by a shift drawn from `seed` (Cranley-Patterson), into U (n x P).
 * ST_OK or ST_ENOMEM. */
st_status study_design_units(size_t P, uint64_t seed, size_t first, size_t n, double *U);
/* Sets the categorical coordinates of u (P, design point `index`) so that the design's levels
 * are balanced: points b k .. b k + k - 1 hold each of a k-level parameter's levels once, in an
 * order drawn from `seed`, b and the parameter. The ordered coordinates are left as they are. */
void study_design_levels(const study_space *sp, uint64_t seed, size_t index, double *u);
/* study_mode.c: the runs a proposal may use: the first n_use suggestions of w (rows without a
 * parent, in id order) and the cooldown branches of those, wherever their rows are (a branch's
 * row is made when its parent is released, after the rows of later suggestions). *view is w
 * with view->runs malloc'd shallow copies (the rows' arrays stay w's; free view->runs only).
 * ST_OK or ST_ENOMEM. */
st_status study_released_view(const runner_sweep *w, size_t n_use, runner_sweep *view);

#pragma GCC visibility pop

#endif
