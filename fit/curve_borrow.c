/*
 * curve_borrow.c — a run's final loss from its loss at a cut and the shape of the sweep's
 * finished runs (fit/curve.h, "borrowing"): a kernel-weighted local-linear regression of the
 * finished runs' ln(final / loss at the cut) on their features (Cleveland and Devlin 1988's local
 * regression, with a ridge on the slopes), and its leave-one-out errors for the interval. Not
 * the law of one run (curve.c) nor its bootstrap (curve_interval.c). Depends on GSL.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>

#include "fit/curve.h"

fit_curve_borrow_options fit_curve_borrow_options_default(void)
{
    fit_curve_borrow_options o;
    memset(&o, 0, sizeof(o));
    o.bandwidth = 0.5;
    o.ridge = 0.01;
    return o;
}

static int positive(double v)
{
    return v > 0 && isfinite(v);
}

static st_status check_kin(const fit_curve_kin *kin, const fit_curve_borrow_options *o, char *err)
{
    if (!kin || !o || (kin->n && (!kin->cut || !kin->final || (kin->d && !kin->xs))))
        return st_errf(err, ST_EINVAL, "curve borrow: missing arguments");
    if (kin->d > 64)
        return st_errf(err, ST_EINVAL, "curve borrow: %zu features, at most 64", kin->d);
    if (!(o->bandwidth > 0) || !(o->ridge >= 0) || !isfinite(o->ridge))
        return st_errf(err, ST_EINVAL, "curve borrow: bandwidth must be > 0 and ridge >= 0");
    for (size_t j = 0; j < kin->n; j++) {
        if (!positive(kin->cut[j]) || !positive(kin->final[j]))
            return st_errf(err, ST_EINVAL,
                           "curve borrow: run %zu: losses must be positive and finite (%g, %g)", j,
                           kin->cut[j], kin->final[j]);
        for (size_t q = 0; q < kin->d; q++)
            if (!isfinite(kin->xs[j * kin->d + q]))
                return st_errf(err, ST_EINVAL, "curve borrow: run %zu: feature %zu is not finite",
                               j, q);
    }
    return ST_OK;
}

/* Squared scaled distance of kin run j from x; INFINITY when it is no kin (group, skip). */
static double distance2(const fit_curve_kin *kin, size_t j, const double *x, int group, size_t skip,
                        double bandwidth)
{
    if (j == skip || (kin->groups && kin->groups[j] != group))
        return INFINITY;
    double d2 = 0;
    for (size_t q = 0; q < kin->d && isfinite(bandwidth); q++) {
        double u = (kin->xs[j * kin->d + q] - x[q]) / bandwidth;
        d2 += u * u;
    }
    return d2;
}

/* The design of the local fit: one row per kin (1, x_j - x), its weight and ln(final/cut), then
 * one pseudo-observation per slope (the ridge); the number of kin rows into *m_kin. */
static size_t design(const fit_curve_kin *kin, const double *x, int group, size_t skip,
                     const fit_curve_borrow_options *o, gsl_matrix *X, gsl_vector *y, gsl_vector *w,
                     size_t *m_kin)
{
    size_t d = kin->d, m = 0;
    double d2min = INFINITY, sw = 0;
    for (size_t j = 0; j < kin->n; j++)
        d2min = fmin(d2min, distance2(kin, j, x, group, skip, o->bandwidth));
    for (size_t j = 0; j < kin->n && isfinite(d2min); j++) {
        double wj = exp(-0.5 * (distance2(kin, j, x, group, skip, o->bandwidth) - d2min));
        if (!(wj > 1e-12))
            continue; /* no kin, or too far to matter: the nearest weighs 1 */
        gsl_matrix_set(X, m, 0, 1.0);
        for (size_t q = 0; q < d; q++)
            gsl_matrix_set(X, m, q + 1, kin->xs[j * d + q] - x[q]);
        gsl_vector_set(y, m, log(kin->final[j] / kin->cut[j]));
        gsl_vector_set(w, m++, wj);
        sw += wj;
    }
    *m_kin = m;
    for (size_t q = 0; q < d; q++, m++) {
        for (size_t c = 0; c <= d; c++)
            gsl_matrix_set(X, m, c, c == q + 1 ? 1.0 : 0.0);
        gsl_vector_set(y, m, 0.0);
        /* a zero ridge still needs a row of positive weight; a tiny one changes nothing */
        gsl_vector_set(w, m, fmax(o->ridge * sw, 1e-12 * sw));
    }
    return m;
}

/* The local fit's intercept: ln(final / cut) at x. */
static st_status intercept(const fit_curve_kin *kin, const double *x, int group, size_t skip,
                           const fit_curve_borrow_options *o, double *b0, char *err)
{
    size_t rows = kin->n + kin->d, p = kin->d + 1, m_kin = 0;
    gsl_matrix *X = gsl_matrix_alloc(rows, p), *cov = gsl_matrix_alloc(p, p);
    gsl_vector *y = gsl_vector_alloc(rows), *w = gsl_vector_alloc(rows), *c = gsl_vector_alloc(p);
    st_status rc = X && cov && y && w && c ? ST_OK : ST_ENOMEM;
    if (rc) {
        st_errf(err, rc, "curve borrow: out of memory");
        goto out;
    }
    size_t m = design(kin, x, group, skip, o, X, y, w, &m_kin);
    if (m_kin < FIT_CURVE_BORROW_MIN_RUNS) {
        rc = st_errf(err, ST_EINVAL, "curve borrow: %zu finished runs are kin, %d needed", m_kin,
                     FIT_CURVE_BORROW_MIN_RUNS);
        goto out;
    }
    gsl_matrix_view Xv = gsl_matrix_submatrix(X, 0, 0, m, p);
    gsl_vector_view yv = gsl_vector_subvector(y, 0, m), wv = gsl_vector_subvector(w, 0, m);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(m, p);
    if (!ws) {
        rc = st_errf(err, ST_ENOMEM, "curve borrow: out of memory");
        goto out;
    }
    double chisq;
    gsl_error_handler_t *h = gsl_set_error_handler_off();
    int g = gsl_multifit_wlinear(&Xv.matrix, &wv.vector, &yv.vector, c, cov, &chisq, ws);
    gsl_set_error_handler(h);
    gsl_multifit_linear_free(ws);
    *b0 = gsl_vector_get(c, 0);
    if (g || !isfinite(*b0))
        rc = st_errf(err, ST_ENUMERIC, "curve borrow: the local fit failed (%s)",
                     g ? gsl_strerror(g) : "not finite");
out:
    gsl_matrix_free(X);
    gsl_matrix_free(cov);
    gsl_vector_free(y);
    gsl_vector_free(w);
    gsl_vector_free(c);
    return rc;
}

st_status fit_curve_borrow(const fit_curve_kin *kin, const double *x, int group, double cut_loss,
                           size_t skip, const fit_curve_borrow_options *o, double *pred, char *err)
{
    char tmp[ST_ERRMSG_MAX];
    if (!err)
        err = tmp;
    st_status rc = check_kin(kin, o, err);
    if (rc)
        return rc;
    if (!pred || (kin->d && !x) || !positive(cut_loss))
        return st_errf(err, ST_EINVAL, "curve borrow: the run's loss at the cut must be positive");
    for (size_t q = 0; q < kin->d; q++)
        if (!isfinite(x[q]))
            return st_errf(err, ST_EINVAL, "curve borrow: the run's feature %zu is not finite", q);
    double b0 = NAN;
    if ((rc = intercept(kin, x, group, skip, o, &b0, err)))
        return rc;
    *pred = cut_loss * exp(b0);
    return ST_OK;
}

st_status fit_curve_borrow_loo(const fit_curve_kin *kin, const fit_curve_borrow_options *o,
                               double *rel_err, char *err)
{
    char tmp[ST_ERRMSG_MAX];
    if (!err)
        err = tmp;
    st_status rc = check_kin(kin, o, err);
    if (rc)
        return rc;
    if (!rel_err)
        return st_errf(err, ST_EINVAL, "curve borrow: missing arguments");
    for (size_t j = 0; j < kin->n; j++) {
        double b0 = NAN; /* run j's own features, validated with the kin above */
        const double *xj = kin->d ? kin->xs + j * kin->d : NULL;
        int g = kin->groups ? kin->groups[j] : 0;
        rc = intercept(kin, xj, g, j, o, &b0, err);
        if (rc == ST_ENOMEM)
            return rc;
        rel_err[j] = rc ? NAN : (kin->cut[j] * exp(b0) - kin->final[j]) / kin->final[j];
    }
    return ST_OK;
}
