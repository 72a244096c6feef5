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
 * Not here: the correlation of points from one run in the engine, early stopping (later work).
 * Depends on GSL (linear least squares, Brent minimisation) and common/st.h.
 * Thread-safety: every function is reentrant; nothing is shared.
 */
#ifndef FIT_CURVE_H
#define FIT_CURVE_H

#include <stddef.h>

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

#ifdef __cplusplus
}
#endif
#endif /* FIT_CURVE_H */
