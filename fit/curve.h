/*
 * curve.h — the loss-curve law of one training run: its loss against steps under its learning-rate
 * schedule, after Tissue et al. 2024, "Scaling Law with Learning Rate Annealing" (eq. 1):
 *
 *     L(s) = L0 + A · S1(s)^(-alpha) - C · S2(s)
 *
 * S1(s) = sum_{i=1..s} eta_i, the forward area (the sum of the learning rates of the first s
 * steps), and S2(s) = sum_{i=1..s} m_i with m_i = lambda · m_{i-1} + (eta_{i-1} - eta_i), the
 * annealing area with momentum (m_0 = 0, eta_0 = eta_1; lambda = 0.999 in the paper). Fitting a
 * run's first points gives its loss at any later step, under its own schedule or any other (a
 * cooldown branch, another decay point). This header is the reference manual.
 * Intervals: a block bootstrap of the residuals widened by the law's measured misfit
 * (curve_interval.c), used by the runner's early stopping. Borrowing (curve_borrow.c): a run's
 * final loss from its loss at a cut and the shape of the sweep's finished runs, for curves no
 * law of one run describes. Not here: the engine's use of curves.
 * Depends on GSL (linear least squares, Brent minimisation) and common/st.h.
 * Thread-safety: every function is reentrant; nothing is shared.
 */
#ifndef FIT_CURVE_H
#define FIT_CURVE_H

#include <stddef.h>
#include <stdint.h>

#include "common/st.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The law's parameters (Tissue et al. 2024, eq. 1), in the loss's units (e.g. nats/token). */
typedef struct fit_curve_law {
    double L0;    /* the loss an infinite forward area would reach; >= 0 */
    double A;     /* scale of the power-law term; >= 0 */
    double alpha; /* exponent of the forward area; in [alpha_min, alpha_max] of the options */
    double C;     /* loss drop per unit of annealing area; >= 0 */
} fit_curve_law;

/* How a curve is fitted; fit_curve_options_default() fills the documented defaults. */
typedef struct fit_curve_options {
    double lambda;    /* momentum decay of the annealing area, in [0, 1); default 0.999 (paper) */
    double alpha_min; /* search range of alpha; default 0.02 */
    double alpha_max; /* default 3 */
    int fix_C;        /* 1: C is not fitted but set to `C` (e.g. 0: a plain power law in S1, or a
                         value fitted on finished runs when this run has not annealed yet); def. 0 */
    double C;         /* the fixed C when fix_C; default 0 */
} fit_curve_options;

fit_curve_options fit_curve_options_default(void);

/*
 * The areas of a schedule: lr (n_steps) the learning rate of steps 1..n_steps (lr[0] is step
 * 1's); S1 and S2 (n_steps each, caller-allocated) receive S1(s) and S2(s) after s = k+1 steps
 * at index k. While the learning rate rises (warmup) its increments are not annealing: m_i takes
 * max(0, eta_{i-1} - eta_i) (the paper's formula is for decays; a negative annealing area from a
 * warmup would make a loss rise). Returns ST_OK, or ST_EINVAL (n_steps 0, a learning rate that
 * is negative or not finite, lambda outside [0, 1)); err (ST_ERRMSG_MAX bytes, may be NULL).
 */
st_status fit_curve_areas(const double *lr, size_t n_steps, double lambda, double *S1, double *S2,
                          char *err);

/*
 * Fits the law to a run's points by least squares on the loss: steps (n_points) are step
 * counts s in 1..n_steps, loss (n_points) the loss observed after s steps (training or
 * validation), lr (n_steps) the run's schedule (at least up to its last point). For each alpha
 * the law is linear in (L0, A, C) and solved exactly under L0, A, C >= 0 (all active sets of
 * three unknowns, GSL multifit_linear); alpha is found on a log grid of 48 points in
 * [alpha_min, alpha_max] refined by Brent's method (GSL gsl_min), which makes the fit
 * deterministic without starts. *out receives the law and *rss (may be NULL) the residual sum of
 * squares. Needs n_points >= 3 (4 with C free) distinct steps. Returns ST_OK, ST_EINVAL (bad
 * arguments: steps out of range, S1 = 0 at a point, non-finite loss, options out of range),
 * ST_ENOMEM, or ST_ENUMERIC (no finite fit); err (ST_ERRMSG_MAX bytes, may be NULL).
 */
st_status fit_curve_fit(const double *lr, size_t n_steps, const size_t *steps, const double *loss,
                        size_t n_points, const fit_curve_options *opts, fit_curve_law *out,
                        double *rss, char *err);

/*
 * The law's loss after `step` steps (1..n_steps) of the schedule lr (n_steps): the run's own
 * schedule to extrapolate it, or another one (a cooldown at step s, a longer run) to ask what its
 * loss would have been; the loss at the end of a schedule is step = n_steps. lambda as in the
 * fit. Returns ST_OK, ST_EINVAL (step out of range, bad schedule, S1 = 0) or ST_ENOMEM.
 */
st_status fit_curve_predict(const fit_curve_law *law, const double *lr, size_t n_steps,
                            double lambda, size_t step, double *loss, char *err);

/* The law at given areas: L0 + A·S1^(-alpha) - C·S2 (S1 > 0). Pure. */
double fit_curve_eval(const fit_curve_law *law, double S1, double S2);

/* ---- intervals (curve_interval.c) ------------------------------------------------------------ */

/* The relative misfit (either way) used when a sweep has fewer than FIT_CURVE_MISFIT_MIN_RUNS
 * finished runs to measure it on: 15%, above the 12% median (24% worst) miss of the law
 * extrapolated from 30% of a tiny byte-level GPT run (docs/benchmarks.md, section 6), where curves
 * learn in phases that no law of one run foresees. Conservative on purpose: a stop rule must not
 * trust a curve law more than it has been seen to deserve. */
#define FIT_CURVE_MISFIT_DEFAULT  0.15
#define FIT_CURVE_MISFIT_MIN_RUNS 3

typedef struct fit_curve_interval_options {
    double level;   /* central level of the bootstrap interval, in (0, 1); default 0.9 */
    size_t n_boot;  /* bootstrap replicates; default 200 */
    size_t block;   /* length of the residual blocks; 0 (default): round(n_points^(1/3)) */
    uint64_t seed;  /* of the resampling; default 42 */
    double err_min; /* the range of the law's relative errors (predicted - actual) / actual
                       at this cut, err_min <= err_max, both > -1 (fit_curve_misfit measures
                       it on finished runs); NAN (default): -/+ FIT_CURVE_MISFIT_DEFAULT */
    double err_max;
} fit_curve_interval_options;

fit_curve_interval_options fit_curve_interval_options_default(void);

/*
 * The law's prediction at `step` (1..n_steps of the schedule lr) with an interval that says
 * what the points cannot: *pred from the fit of all points (fit_curve_fit's arguments), and
 * [*lo, *hi] = [min(q_lo, pred) / (1 + err_max), max(q_hi, pred) / (1 + err_min)] where q_lo,
 * q_hi are the (1 ∓ level)/2 quantiles of the predictions of n_boot refits on a block wild
 * bootstrap of the residuals (Shao 2010, "The dependent wild bootstrap": each residual stays at
 * its point, since a run's early points are noisier than its late ones, and is multiplied by a
 * random sign drawn once per block of `block` consecutive points, since consecutive residuals
 * of one run are correlated), and [err_min, err_max] the range of the law's own relative errors at
 * this cut (io; fit_curve_misfit measures it on finished runs of the same sweep: a law that always
 * overshoots there moves the interval down, not only wider). The bootstrap alone covers the
 * noise of the points only: a drop the points have not seen yet (a second learning phase, an
 * anneal the fit cannot separate) is in the errors. Needs at least half of the refits to
 * succeed. A prediction or interval that is not a positive loss is refused with ST_ENUMERIC:
 * with C free, points that have seen little of the schedule's annealing let C·S2 run away (on
 * the first 30% of the reference trainer's cosine runs the law extrapolated to -2.3 and -1.0 for
 * runs that ended at 1.45 and 1.56); callers fall back to the power law in steps (C = 0).
 * Returns ST_OK, ST_EINVAL (as fit_curve_fit; level, step or errors out of range), ST_ENOMEM,
 * ST_ENUMERIC.
 */
st_status fit_curve_predict_interval(const double *lr, size_t n_steps, const size_t *steps,
                                     const double *loss, size_t n_points,
                                     const fit_curve_options *opts,
                                     const fit_curve_interval_options *io, size_t step,
                                     double *pred, double *lo, double *hi, char *err);

/*
 * The relative error of a finished run's extrapolation from its first points: fits the points
 * whose step is <= cut · (the last point's step), cut in (0, 1), predicts the last point and
 * writes (predicted - observed) / observed to *rel_err. Returns ST_OK, or fit_curve_fit's
 * statuses (ST_EINVAL also when fewer points than the law needs lie before the cut).
 */
st_status fit_curve_cut_error(const double *lr, size_t n_steps, const size_t *steps,
                              const double *loss, size_t n_points, double cut,
                              const fit_curve_options *opts, double *rel_err, char *err);

/* The range of the law's errors for the interval, from the relative errors (n) of a sweep's
 * finished runs at one cut (fit_curve_cut_error): [min - w, max + w] with w = (max - min) / k +
 * 0.005 over the k finite errors (k runs see only part of the spread: the next run falls
 * outside their range with probability 2 / (k + 1)); both NAN when k <
 * FIT_CURVE_MISFIT_MIN_RUNS (then the default). The low end is kept above -0.9. Pure. */
void fit_curve_misfit(const double *rel_err, size_t n, double *err_min, double *err_max);

/* ---- borrowing the shape of a sweep's finished runs (curve_borrow.c) --------------------------
 */

/* The fewest kin (finished runs of the same group with a positive weight) a prediction needs. */
#define FIT_CURVE_BORROW_MIN_RUNS 3

typedef struct fit_curve_borrow_options {
    double bandwidth; /* of the Gaussian kinship kernel, in the features' units (the caller scales
                         each feature, e.g. by its searched range); INFINITY: every kin weighs the
                         same; default 0.5 */
    double ridge;     /* ridge on the local slopes, per unit of the kin's total weight: slopes the
                         kin cannot separate (collinear features) shrink to 0; default 0.01 */
} fit_curve_borrow_options;

fit_curve_borrow_options fit_curve_borrow_options_default(void);

/* A sweep's finished runs for borrowing: n runs, d features each (row-major xs, n x d), a group
 * per run (groups, may be NULL: one group; runs of another group are no kin: another schedule,
 * another categorical choice), each run's loss at the cut (the same fraction of its steps as
 * the run to predict) and its final loss. The arrays are the caller's. */
typedef struct fit_curve_kin {
    size_t n, d;
    const double *xs;
    const int *groups;
    const double *cut;
    const double *final;
} fit_curve_kin;

/*
 * The final loss of a running run from its loss at a cut (cut_loss, after a fraction f of its
 * steps) and the shape of the sweep's finished runs at the same fraction: the finished runs'
 * ln(final_j / cut_j) is regressed locally-linearly on their features' differences from the
 * run's (x, d features; group) by weighted least squares (weights: a Gaussian kernel of the
 * scaled distance, the nearest kin weighing 1; a ridge on the slopes; GSL multifit_wlinear),
 * and *pred = cut_loss * exp(intercept). Where a law of one run cannot see what is to come (a
 * second learning phase, the anneal), runs of the sweep that went through it can: on the
 * reference trainer's tiny-GPT curves this predicts the final loss from 30% of the steps with a
 * median error of about 1%, where the law of one run misses by 11-12% (docs/benchmarks.md,
 * section 6). `skip` (SIZE_MAX for none) leaves kin run `skip` out (fit_curve_borrow_loo). Returns
 * ST_OK, ST_EINVAL (bad arguments, a loss that is not positive and finite, fewer than
 * FIT_CURVE_BORROW_MIN_RUNS kin), ST_ENOMEM or ST_ENUMERIC; err (ST_ERRMSG_MAX bytes, may be NULL).
 */
st_status fit_curve_borrow(const fit_curve_kin *kin, const double *x, int group, double cut_loss,
                           size_t skip, const fit_curve_borrow_options *o, double *pred, char *err);

/* Each finished run's relative error (predicted - final) / final when borrowed from the others
 * (leave-one-out), into rel_err (kin->n; NAN where it has too few kin): what fit_curve_misfit
 * turns into the range of the borrowed prediction's errors. Returns ST_OK, or ST_EINVAL/ST_ENOMEM
 * as fit_curve_borrow for arguments every run shares. */
st_status fit_curve_borrow_loo(const fit_curve_kin *kin, const fit_curve_borrow_options *o,
                               double *rel_err, char *err);

#ifdef __cplusplus
}
#endif
#endif /* FIT_CURVE_H */
