/*
 * study_backtest.c — the engine's own leave-largest-group-out backtest: the runs of the largest
 * model sizes (the top BACKTEST_FRACTION by N, or by cost when N is unknown) are held out, the
 * engine is fitted on the rest with the same options, and each held-out successful run is
 * predicted at its own settings (the model at its x, N and D; the front's objective law at its
 * cost when there is no model). Reported: how far beyond the remaining runs the held-out ones
 * lie, the median and worst relative error, and how many fell inside their interval. It tells a
 * user how well the engine extrapolated on this very sweep, one step smaller than the real one.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "study/study_int.h"

/* The share of used runs held out: the largest fifth, at least BACKTEST_MIN_HELD of them. */
#define BACKTEST_FRACTION 0.2
#define BACKTEST_MIN_HELD 3
/* The engine needs this many successful runs left to fit. */
#define BACKTEST_MIN_LEFT 12

/* The size of engine run k for grouping: N when every run has one, else the cost. */
static double size_of(const study *s, size_t k, int by_N)
{
    if (by_N)
        return study_model_size(s, k);
    return s->cost[k];
}

/* The size threshold above which runs are held out; NAN when the split is not possible. */
static double split_threshold(const study *s, int by_N)
{
    double *v = malloc((s->n + 1) * sizeof(double));
    size_t m = 0;
    if (!v)
        return NAN;
    for (size_t k = 0; k < s->n; k++)
        if (!s->failed[k] && isfinite(size_of(s, k, by_N)))
            v[m++] = size_of(s, k, by_N);
    double t = NAN;
    size_t held = (size_t)ceil(BACKTEST_FRACTION * (double)m);
    if (held < BACKTEST_MIN_HELD)
        held = BACKTEST_MIN_HELD;
    if (m >= held + BACKTEST_MIN_LEFT) {
        qsort(v, m, sizeof(double), study_cmp_double);
        t = v[m - held];
    }
    free(v);
    return t;
}

/* Fits the engine on the runs not held out; the fitted handle or NULL. */
static fit_xp *fit_rest(const study *s, const int *held)
{
    size_t n = 0;
    for (size_t k = 0; k < s->n; k++)
        n += !held[k];
    fit_xp *xp = NULL;
    double *x = malloc((n * s->P + 1) * sizeof(double)),
           *buf = malloc((4 * n + 1) * sizeof(double));
    int *failed = malloc((n + 1) * sizeof(int));
    if (!x || !buf || !failed || fit_xp_create(&xp) != ST_OK)
        goto done;
    double *cost = buf, *obj = buf + n, *N = buf + 2 * n, *D = buf + 3 * n;
    size_t m = 0, P = s->P;
    double largest = 0;
    for (size_t k = 0; k < s->n; k++) {
        if (held[k])
            continue;
        memcpy(&x[m * P], &s->x[k * P], P * sizeof(double));
        cost[m] = s->cost[k], obj[m] = s->obj[k], N[m] = s->N[k], D[m] = s->D[k];
        failed[m] = s->failed[k];
        if (!failed[m])
            largest = fmax(largest, cost[m]);
        m++;
    }
    fit_xp_options o = s->o.engine;
    if (fit_xp_set_options(xp, &o) != ST_OK ||
        fit_xp_set_runs(xp, P, s->par, m, x, cost, obj, failed, N, D) != ST_OK ||
        fit_xp_run(xp, s->target) != ST_OK) {
        fit_xp_destroy(xp);
        xp = NULL;
    }
done:
    free(x);
    free(buf);
    free(failed);
    return xp;
}

/* Predicts held-out run k with the engine fitted without it. 1 when it could. */
static int predict_held(const study *s, const fit_xp *xp, size_t k, double *y, double *lo,
                        double *hi)
{
    if (fit_xp_predict(xp, &s->x[k * s->P], s->N[k], s->D[k], y, lo, hi, NULL) == ST_OK)
        return isfinite(*y);
    double C = s->cost[k];
    return fit_xp_front_curve(xp, (size_t)-1, 1, &C, y, lo, hi) == ST_OK && isfinite(*y);
}

void study_backtest(study *s)
{
    study_backtest_result *b = &s->backtest;
    memset(b, 0, sizeof(*b));
    b->median_error = b->worst_error = b->factor = NAN;
    int by_N = 1;
    for (size_t k = 0; k < s->n; k++)
        if (!s->failed[k] && !isfinite(study_model_size(s, k)))
            by_N = 0;
    double thr = split_threshold(s, by_N);
    int *held = calloc(s->n + 1, sizeof(int));
    if (!isfinite(thr) || !held) {
        free(held);
        return;
    }
    double largest_left = 0, held_cost = 0;
    for (size_t k = 0; k < s->n; k++) {
        double z = size_of(s, k, by_N);
        held[k] = isfinite(z) && z >= thr;
        if (!held[k] && !s->failed[k])
            largest_left = fmax(largest_left, s->cost[k]);
    }
    fit_xp *xp = fit_rest(s, held);
    double *err = malloc((s->n + 1) * sizeof(double));
    for (size_t k = 0; xp && err && k < s->n; k++) {
        double y, lo, hi;
        if (!held[k] || s->failed[k] || !predict_held(s, xp, k, &y, &lo, &hi))
            continue;
        err[b->n_held] = fabs(y - s->obj[k]) / s->obj[k];
        b->n_inside += s->obj[k] >= lo && s->obj[k] <= hi;
        b->n_held++;
        held_cost = fmax(held_cost, s->cost[k]);
    }
    if (b->n_held) {
        qsort(err, b->n_held, sizeof(double), study_cmp_double);
        b->median_error = err[b->n_held / 2];
        if (b->n_held % 2 == 0)
            b->median_error = 0.5 * (err[b->n_held / 2 - 1] + err[b->n_held / 2]);
        b->worst_error = err[b->n_held - 1];
        b->factor = held_cost / largest_left;
        b->by_model_size = by_N;
        b->done = 1;
    }
    free(err);
    free(held);
    fit_xp_destroy(xp);
}
