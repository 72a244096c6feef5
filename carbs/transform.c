/*
 * transform.c — the target transforms of the surrogate models (shared specs/carbs.md §4.1):
 * scikit-learn's QuantileTransformer(output_distribution="normal", n_quantiles=floor(sqrt(n)))
 * for the objective, and min-max scaling of log cost onto [-1, 1] for the cost.
 * Reproduces sklearn 1.2's arithmetic (numpy.interp, linear percentiles, the 1e-7 bounds
 * threshold and the clipping of the normal quantile at about +-5.1993).
 */
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "carbs/carbs_int.h"

#define QT_BOUNDS     1e-7
#define DBL_SPACING_1 2.220446049250313e-16 /* numpy.spacing(1) */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double quantile_linear(size_t n, const double *v, double q)
{
    double *s = malloc(n * sizeof(*s));
    if (!s || n == 0) {
        free(s);
        return NAN;
    }
    memcpy(s, v, n * sizeof(*s));
    qsort(s, n, sizeof(*s), cmp_double);
    /* numpy "linear": position q (n - 1) in the sorted data */
    double pos = q * (double)(n - 1);
    size_t i = (size_t)floor(pos);
    if (i >= n - 1) {
        double r = s[n - 1];
        free(s);
        return r;
    }
    double f = pos - (double)i, r = s[i] + f * (s[i + 1] - s[i]);
    free(s);
    return r;
}

/* numpy.interp(x, xp, fp) for non-decreasing xp (n >= 1). */
static double np_interp(double x, size_t n, const double *xp, const double *fp)
{
    if (x < xp[0])
        return fp[0];
    if (x >= xp[n - 1])
        return fp[n - 1];
    /* last j with xp[j] <= x, so xp[j] <= x < xp[j+1] */
    size_t lo = 0, hi = n - 1;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (xp[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    double slope = (fp[lo + 1] - fp[lo]) / (xp[lo + 1] - xp[lo]);
    return slope * (x - xp[lo]) + fp[lo];
}

st_status qt_fit(qt *t, size_t n, const double *y)
{
    memset(t, 0, sizeof(*t));
    if (n == 0)
        return ST_EEMPTY;
    size_t m = (size_t)floor(sqrt((double)n));
    if (m < 1)
        m = 1;
    t->m = m;
    t->q = malloc(m * sizeof(double));
    t->rho = malloc(m * sizeof(double));
    t->nq = malloc(m * sizeof(double));
    t->nr = malloc(m * sizeof(double));
    double *s = malloc(n * sizeof(double));
    if (!t->q || !t->rho || !t->nq || !t->nr || !s) {
        free(s);
        qt_clear(t);
        return ST_ENOMEM;
    }
    memcpy(s, y, n * sizeof(double));
    qsort(s, n, sizeof(double), cmp_double);
    for (size_t k = 0; k < m; k++) {
        t->rho[k] = m > 1 ? (double)k / (double)(m - 1) : 0.0;
        double pos = t->rho[k] * (double)(n - 1);
        size_t i = (size_t)floor(pos);
        t->q[k] = i >= n - 1 ? s[n - 1] : s[i] + (pos - (double)i) * (s[i + 1] - s[i]);
        if (k > 0 && t->q[k] < t->q[k - 1]) /* running maximum, as sklearn does */
            t->q[k] = t->q[k - 1];
    }
    for (size_t k = 0; k < m; k++) { /* the descending copy: -q and -rho reversed */
        t->nq[k] = -t->q[m - 1 - k];
        t->nr[k] = -t->rho[m - 1 - k];
    }
    free(s);
    return ST_OK;
}

st_status qt_fit_rank(qt *t, size_t n, const double *y)
{
    memset(t, 0, sizeof(*t));
    if (n == 0)
        return ST_EEMPTY;
    t->rank = 1;
    t->q = malloc(n * sizeof(double));
    t->rho = malloc(n * sizeof(double));
    if (!t->q || !t->rho) {
        qt_clear(t);
        return ST_ENOMEM;
    }
    memcpy(t->q, y, n * sizeof(double));
    qsort(t->q, n, sizeof(double), cmp_double);
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && t->q[j + 1] == t->q[i])
            j++;
        double mid_rank = 0.5 * (double)(i + j) + 1.0; /* 1-based average rank of the ties */
        t->q[m] = t->q[i];
        t->rho[m] = gsl_cdf_ugaussian_Pinv((mid_rank - 0.5) / (double)n);
        m++;
        i = j + 1;
    }
    t->m = m;
    return ST_OK;
}

/* Piecewise-linear map through (xs, ys) (m knots, xs increasing), linear beyond the ends with
 * the slope of the whole range; constant 0 offset when there is a single knot. */
static double pl_map(double x, size_t m, const double *xs, const double *ys)
{
    if (m == 1)
        return ys[0] + (x - xs[0]);
    double slope = (ys[m - 1] - ys[0]) / (xs[m - 1] - xs[0]);
    if (x <= xs[0])
        return ys[0] + (x - xs[0]) * slope;
    if (x >= xs[m - 1])
        return ys[m - 1] + (x - xs[m - 1]) * slope;
    return np_interp(x, m, xs, ys);
}

double qt_forward(const qt *t, double y)
{
    size_t m = t->m;
    if (t->rank)
        return pl_map(y, m, t->q, t->rho);
    double u;
    if (y - QT_BOUNDS < t->q[0]) {
        u = 0.0;
    } else if (y + QT_BOUNDS > t->q[m - 1]) {
        u = 1.0;
    } else {
        /* average of the ascending and descending interpolation, for tied quantiles */
        u = 0.5 * (np_interp(y, m, t->q, t->rho) - np_interp(-y, m, t->nq, t->nr));
    }
    double clip = gsl_cdf_ugaussian_Pinv(1.0 - (QT_BOUNDS - DBL_SPACING_1));
    double z = u <= 0.0 ? -clip : u >= 1.0 ? clip : gsl_cdf_ugaussian_Pinv(u);
    return z < -clip ? -clip : z > clip ? clip : z;
}

double qt_inverse(const qt *t, double z)
{
    if (t->rank)
        return pl_map(z, t->m, t->rho, t->q);
    double u = gsl_cdf_ugaussian_P(z);
    if (u - QT_BOUNDS < 0.0)
        return t->q[0];
    if (u + QT_BOUNDS > 1.0)
        return t->q[t->m - 1];
    return np_interp(u, t->m, t->rho, t->q);
}

void qt_clear(qt *t)
{
    free(t->q);
    free(t->rho);
    free(t->nq);
    free(t->nr);
    memset(t, 0, sizeof(*t));
}

void logcost_fit(logcost *t, size_t n, const double *cost)
{
    t->lo = INFINITY;
    t->hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double l = log(cost[i]);
        if (l < t->lo)
            t->lo = l;
        if (l > t->hi)
            t->hi = l;
    }
    if (n == 0)
        t->lo = t->hi = 0.0;
}

/* l' = 2 (ln c - lo) / (hi - lo) - 1; a zero range divides by 1 (sklearn's MinMaxScaler). */
double logcost_forward(const logcost *t, double cost)
{
    double range = t->hi - t->lo;
    if (range == 0.0)
        range = 1.0;
    return 2.0 * (log(cost) - t->lo) / range - 1.0;
}

double logcost_inverse(const logcost *t, double l)
{
    double range = t->hi - t->lo;
    if (range == 0.0)
        range = 1.0;
    return exp(t->lo + (l + 1.0) * range / 2.0);
}
