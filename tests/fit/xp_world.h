/*
 * xp_world.h — a synthetic sweep for the engine's tests (fit/extrapolate.h): runs of (N, D, lr)
 * drawn log-uniformly, the loss L = 1.8 + 400 N^-0.34 + 2000 D^-0.28 times a learning-rate
 * penalty (the model's own saturating bowl, or a cliff above the optimum it does not have) times
 * exp(noise z), and the world's compute-optimal setting at a target (Hoffmann et al. eq. 4), and
 * the engine's prediction there. Used by test_fit_extrapolate_prior_e.c and
 * test_fit_extrapolate_far.c.
 */
#ifndef ST_TESTS_XP_WORLD_H
#define ST_TESTS_XP_WORLD_H

#include "common/st.h"
#include "fit/extrapolate.h"

#include <math.h>

#define XW_A  400.0
#define XW_B  2000.0
#define XW_E  1.8
#define XW_AL 0.34
#define XW_BE 0.28
#define XW_LR 0.01 /* the learning rate's optimum, whatever N and D */

enum { XW_MAX_RUNS = 100 };

typedef struct xp_world {
    size_t n;
    double x[XW_MAX_RUNS * 3], cost[XW_MAX_RUNS], obj[XW_MAX_RUNS], Cmax, best;
    int failed[XW_MAX_RUNS];
} xp_world;

/* The draw: n runs, N in [n_lo, n_lo n_span], D in [d_lo, d_lo d_span], ln(lr / XW_LR) uniform
 * over u_span, the penalty a cliff or the model's bowl, noise the sd of ln loss. */
typedef struct xp_world_spec {
    uint64_t seed;
    size_t n;
    double n_lo, n_span, d_lo, d_span, u_span;
    int cliff;
    double noise;
} xp_world_spec;

static inline double xw_law(double N, double D)
{
    return XW_E + XW_A * pow(N, -XW_AL) + XW_B * pow(D, -XW_BE);
}

/* The learning rate's penalty at u = ln(lr / XW_LR), a fraction of the loss. */
static inline double xw_penalty(double u, int cliff)
{
    if (!cliff)
        return 0.5 * (1 - exp(-0.04 * u * u));
    return u > 0 ? 2 * (1 - exp(-u * u)) : 0.3 * (1 - exp(-0.05 * u * u));
}

static inline void xw_make(const xp_world_spec *s, xp_world *w)
{
    st_rng *rng = NULL;
    st_rng_create(s->seed, &rng);
    w->n = s->n < XW_MAX_RUNS ? s->n : XW_MAX_RUNS;
    w->Cmax = 0;
    w->best = INFINITY;
    for (size_t i = 0; i < w->n; i++) {
        double N = exp(log(s->n_lo) + st_rng_uniform(rng) * log(s->n_span));
        double D = exp(log(s->d_lo) + st_rng_uniform(rng) * log(s->d_span));
        double u = (st_rng_uniform(rng) - 0.5) * s->u_span;
        w->x[3 * i] = N;
        w->x[3 * i + 1] = D;
        w->x[3 * i + 2] = XW_LR * exp(u);
        w->cost[i] = 6 * N * D;
        w->failed[i] = 0;
        w->obj[i] =
            xw_law(N, D) * (1 + xw_penalty(u, s->cliff)) * exp(s->noise * st_rng_gaussian(rng));
        w->Cmax = fmax(w->Cmax, w->cost[i]);
        w->best = fmin(w->best, w->obj[i]);
    }
    st_rng_destroy(rng);
}

/* The world's compute-optimal N and D at compute C (Hoffmann et al. eq. 4 on its law). */
static inline void xw_optimum(double C, double *N, double *D)
{
    double a = XW_BE / (XW_AL + XW_BE), G = pow(XW_AL * XW_A / (XW_BE * XW_B), 1 / (XW_AL + XW_BE));
    *N = G * pow(C / 6, a);
    *D = C / (6 * *N);
}

/* The engine with options o on w's runs (N, D, lr on log scales) at 100x the largest run: the
 * fitted (A, B, E, alpha, beta) into nat and ln(predicted / true loss) at the world's
 * compute-optimal setting there (lr at its optimum) into *ln_err. */
static inline st_status xw_fit(const xp_world *w, const fit_xp_options *o, double nat[5],
                               double *ln_err)
{
    fit_xp_param p[3];
    fit_xp_param_init(&p[0], "N", FIT_XP_LOG);
    fit_xp_param_init(&p[1], "D", FIT_XP_LOG);
    fit_xp_param_init(&p[2], "lr", FIT_XP_LOG);
    fit_xp *xp = NULL;
    st_status s = fit_xp_create(&xp);
    double N, D, pred = NAN;
    xw_optimum(100 * w->Cmax, &N, &D);
    double x[3] = {N, D, XW_LR};
    if (s == ST_OK)
        s = fit_xp_set_options(xp, o);
    if (s == ST_OK)
        s = fit_xp_set_runs(xp, 3, p, w->n, w->x, w->cost, w->obj, w->failed, NULL, NULL);
    if (s == ST_OK)
        s = fit_xp_run(xp, 100 * w->Cmax);
    if (s == ST_OK)
        s = fit_xp_chinchilla(xp, nat, NULL);
    if (s == ST_OK)
        s = fit_xp_predict(xp, x, N, D, &pred, NULL, NULL, NULL);
    *ln_err = log(pred / xw_law(N, D));
    fit_xp_destroy(xp);
    return s;
}

#endif
