/*
 * hp.c — hyperparameter laws: near-optimal settings per (N, D) group (a band within tol of the
 * group's best loss, as DeepSeek 2024 and StepLaw 2025 do, or the vertex of a quadratic in
 * (ln lr, ln batch)), then OLS of ln lr_opt and ln batch_opt on ln N, ln D or ln C (GSL), with
 * group-bootstrap intervals; the published DeepSeek and StepLaw laws as presets.
 * Not here: the runs' losses come from the caller (CSV or runner/). Depends on GSL.
 */
#include "fit/fit_int.h"

#include <gsl/gsl_linalg.h>
#include <gsl/gsl_multifit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

st_status fit_hp_preset(const char *name, double N, double D, double C, double *lr, double *batch)
{
    if (name && !strcmp(name, "deepseek")) {
        /* DeepSeek LLM 2024 eq. 1: eta_opt = 0.3118 C^-0.1250, B_opt = 0.2920 C^0.3271 */
        *lr = 0.3118 * pow(C, -0.1250);
        *batch = 0.2920 * pow(C, 0.3271);
        return ST_OK;
    }
    if (name && !strcmp(name, "steplaw")) {
        /* StepLaw (Li et al. 2025): eta_opt = 1.79 N^-0.713 D^0.307, B_opt = 0.58 D^0.571 */
        *lr = 1.79 * pow(N, -0.713) * pow(D, 0.307);
        *batch = 0.58 * pow(D, 0.571);
        return ST_OK;
    }
    return ST_ENOTFOUND;
}

/* One regression point: logs of lr, batch and of the regressors. */
typedef struct hp_pt {
    double llr, lb, lN, lD;
    size_t group;
} hp_pt;

/* OLS of y on [1, x1 (, x2)] over the points of the chosen groups; coef[3]. */
static int ols(const hp_pt *p, size_t np, const size_t *gsel, size_t ng, size_t n_groups, int is_lr,
               fit_hp_regressor reg, double *coef)
{
    size_t k = (is_lr && reg == FIT_HP_ND) ? 3 : 2, m = 0;
    size_t *mult = calloc(n_groups, sizeof(size_t));
    if (!mult)
        return -1;
    for (size_t g = 0; g < ng; g++)
        mult[gsel[g]]++;
    for (size_t i = 0; i < np; i++)
        m += mult[p[i].group];
    if (m <= k) {
        free(mult);
        return -1;
    }
    gsl_matrix *X = gsl_matrix_alloc(m, k), *cov = gsl_matrix_alloc(k, k);
    gsl_vector *y = gsl_vector_alloc(m), *c = gsl_vector_alloc(k);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(m, k);
    int rc = -1;
    if (X && cov && y && c && ws) {
        size_t r = 0;
        for (size_t i = 0; i < np; i++)
            for (size_t t = 0; t < mult[p[i].group]; t++, r++) {
                double lC = log(6.0) + p[i].lN + p[i].lD;
                gsl_matrix_set(X, r, 0, 1);
                if (reg == FIT_HP_C) {
                    gsl_matrix_set(X, r, 1, lC);
                } else if (is_lr) {
                    gsl_matrix_set(X, r, 1, p[i].lN);
                    gsl_matrix_set(X, r, 2, p[i].lD);
                } else {
                    gsl_matrix_set(X, r, 1, p[i].lD);
                }
                gsl_vector_set(y, r, is_lr ? p[i].llr : p[i].lb);
            }
        double chisq;
        rc = gsl_multifit_linear(X, y, c, cov, &chisq, ws);
        coef[0] = coef[1] = coef[2] = 0;
        for (size_t j = 0; j < k; j++)
            coef[j] = gsl_vector_get(c, j);
    }
    gsl_matrix_free(X);
    gsl_matrix_free(cov);
    gsl_vector_free(y);
    gsl_vector_free(c);
    gsl_multifit_linear_free(ws);
    free(mult);
    return rc;
}

/* Vertex of z = q0 + q1 u + q2 v + q3 u^2 + q4 v^2 + q5 u v over a group; 0 on success. */
static int quad_vertex(const double *u, const double *v, const double *z, size_t m, double *us,
                       double *vs)
{
    if (m < 6)
        return -1;
    gsl_matrix *X = gsl_matrix_alloc(m, 6), *cov = gsl_matrix_alloc(6, 6);
    gsl_vector *y = gsl_vector_alloc(m), *c = gsl_vector_alloc(6);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(m, 6);
    int rc = -1;
    if (X && cov && y && c && ws) {
        for (size_t i = 0; i < m; i++) {
            double row[6] = {1, u[i], v[i], u[i] * u[i], v[i] * v[i], u[i] * v[i]};
            for (size_t j = 0; j < 6; j++)
                gsl_matrix_set(X, i, j, row[j]);
            gsl_vector_set(y, i, z[i]);
        }
        double chisq;
        if (gsl_multifit_linear(X, y, c, cov, &chisq, ws) == 0) {
            double q1 = gsl_vector_get(c, 1), q2 = gsl_vector_get(c, 2), q3 = gsl_vector_get(c, 3),
                   q4 = gsl_vector_get(c, 4), q5 = gsl_vector_get(c, 5);
            /* gradient zero: [2 q3, q5; q5, 2 q4] [u; v] = -[q1; q2], Hessian positive definite */
            double det = 4 * q3 * q4 - q5 * q5;
            if (q3 > 0 && det > 0) {
                *us = (-q1 * 2 * q4 + q2 * q5) / det;
                *vs = (-q2 * 2 * q3 + q1 * q5) / det;
                rc = 0;
            }
        }
    }
    gsl_matrix_free(X);
    gsl_matrix_free(cov);
    gsl_vector_free(y);
    gsl_vector_free(c);
    gsl_multifit_linear_free(ws);
    return rc;
}

typedef struct kv2 {
    double a, b;
    size_t i;
} kv2;

static int cmp_kv2(const void *x, const void *y)
{
    const kv2 *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    if (p->b != q->b)
        return p->b < q->b ? -1 : 1;
    return (p->i > q->i) - (p->i < q->i);
}

st_status fit_hp_laws(size_t n, const double *N, const double *D, const double *lr,
                      const double *batch, const double *loss, fit_hp_select sel, double tol,
                      fit_hp_regressor reg, size_t n_boot, uint64_t seed, fit_hp_result *out,
                      char *err)
{
    memset(out, 0, sizeof(*out));
    err[0] = 0;
    for (size_t i = 0; i < n; i++)
        if (!(N[i] > 0 && D[i] > 0 && lr[i] > 0 && batch[i] > 0 && isfinite(loss[i])))
            return st_errf(err, ST_EINVAL, "run %zu: N, D, lr, batch must be > 0, loss finite", i);
    kv2 *o = malloc((n ? n : 1) * sizeof(kv2));
    hp_pt *pt = malloc((n ? n : 1) * sizeof(hp_pt));
    double *tu = malloc((n ? n : 1) * 3 * sizeof(double));
    size_t *gsel = malloc((n ? n : 1) * sizeof(size_t));
    double *bc = NULL;
    st_rng *rng = NULL;
    st_status st = ST_OK;
    if (!o || !pt || !tu || !gsel) {
        st = st_errf(err, ST_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        o[i] = (kv2){N[i], D[i], i};
    qsort(o, n, sizeof(kv2), cmp_kv2);
    size_t ng = 0, m = 0, k = 0;
    while (k < n) {
        size_t j = k;
        while (j < n && fabs(o[j].a - o[k].a) <= 1e-9 * o[k].a &&
               fabs(o[j].b - o[k].b) <= 1e-9 * o[k].b)
            j++;
        double best = INFINITY;
        for (size_t q = k; q < j; q++)
            best = fmin(best, loss[o[q].i]);
        size_t added = 0;
        if (sel == FIT_HP_QUADRATIC) {
            size_t g = j - k;
            for (size_t q = k; q < j; q++) {
                tu[q - k] = log(lr[o[q].i]);
                tu[n + q - k] = log(batch[o[q].i]);
                tu[2 * n + q - k] = loss[o[q].i];
            }
            double us, vs;
            if (quad_vertex(tu, tu + n, tu + 2 * n, g, &us, &vs) == 0) {
                pt[m++] = (hp_pt){us, vs, log(o[k].a), log(o[k].b), ng};
                added = 1;
            }
        } else {
            for (size_t q = k; q < j; q++)
                if (loss[o[q].i] <= best * (1 + tol)) {
                    size_t i = o[q].i;
                    pt[m++] = (hp_pt){log(lr[i]), log(batch[i]), log(N[i]), log(D[i]), ng};
                    added = 1;
                }
        }
        if (added)
            ng++;
        k = j;
    }
    out->n_groups = ng;
    out->n_points = m;
    for (size_t g = 0; g < ng; g++)
        gsel[g] = g;
    if (ng < 2 || ols(pt, m, gsel, ng, ng, 1, reg, out->lr_coef) != 0 ||
        ols(pt, m, gsel, ng, ng, 0, reg, out->batch_coef) != 0) {
        st = st_errf(err, ST_EEMPTY,
                     "%zu usable (N, D) groups with %zu points: too few for the "
                     "regression",
                     ng, m);
        goto done;
    }
    for (size_t j = 0; j < 3; j++) {
        out->lr_ci[j][0] = out->lr_ci[j][1] = out->lr_coef[j];
        out->batch_ci[j][0] = out->batch_ci[j][1] = out->batch_coef[j];
    }
    if (n_boot == 0)
        goto done;
    /* Group bootstrap: resample (N, D) groups with replacement. */
    bc = malloc(n_boot * 6 * sizeof(double));
    if (!bc || st_rng_create(seed, &rng) != ST_OK) {
        st = st_errf(err, ST_ENOMEM, "out of memory");
        goto done;
    }
    size_t nb = 0;
    for (size_t r = 0; r < n_boot; r++) {
        for (size_t g = 0; g < ng; g++)
            gsel[g] = st_rng_uniform_int(rng, ng);
        if (ols(pt, m, gsel, ng, ng, 1, reg, bc + nb * 6) == 0 &&
            ols(pt, m, gsel, ng, ng, 0, reg, bc + nb * 6 + 3) == 0)
            nb++;
    }
    double *v = tu; /* reuse: n_boot may exceed n, so allocate if needed */
    double *vb = nb > 3 * n ? malloc(nb * sizeof(double)) : v;
    if (!vb) {
        st = st_errf(err, ST_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t j = 0; j < 6 && nb; j++) {
        for (size_t r = 0; r < nb; r++)
            vb[r] = bc[r * 6 + j];
        fit_sort_doubles(vb, nb);
        double *ci = j < 3 ? out->lr_ci[j] : out->batch_ci[j - 3];
        ci[0] = fit_quantile_sorted(vb, nb, 0.025);
        ci[1] = fit_quantile_sorted(vb, nb, 0.975);
    }
    if (vb != v)
        free(vb);
done:
    free(o);
    free(pt);
    free(tu);
    free(gsel);
    free(bc);
    st_rng_destroy(rng);
    return st;
}
