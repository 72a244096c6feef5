/*
 * approach.c — Chinchilla Approaches 1 and 2 (Hoffmann et al. 2022 §3.1–3.2) on final-loss runs:
 * the minimum-loss envelope over compute, and per-budget parabolas of loss in ln N (IsoFLOP
 * profiles) whose vertices give N*(C); then power laws N_opt ∝ C^a, D_opt ∝ C^b by OLS in log
 * space (GSL). Flags minima at a budget's edge (a known source of bias, Open-Athena 2026).
 * Not here: loss curves (Approach 1 proper interpolates training curves). Depends on GSL.
 */
#include "fit/fit_int.h"

#include <gsl/gsl_fit.h>
#include <gsl/gsl_multifit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kv {
    double k;
    size_t i;
} kv;

static int cmp_kv(const void *a, const void *b)
{
    const kv *x = a, *y = b;
    if (x->k != y->k)
        return x->k < y->k ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* OLS of ln N and ln D on ln C over m optima. */
static st_status power_laws(size_t m, const double *lc, const double *ln, const double *ld,
                            fit_approach *out, char *err)
{
    double c0, c1, v00, v01, v11, ss;
    if (m < 2)
        return st_errf(err, ST_EEMPTY, "only %zu optima: need at least 2 for the power laws", m);
    gsl_fit_linear(lc, 1, ln, 1, m, &c0, &c1, &v00, &v01, &v11, &ss);
    out->log_kN = c0;
    out->a = c1;
    gsl_fit_linear(lc, 1, ld, 1, m, &c0, &c1, &v00, &v01, &v11, &ss);
    out->log_kD = c0;
    out->b = c1;
    out->n_opt = m;
    return ST_OK;
}

st_status fit_approach1(size_t n, const double *N, const double *D, const double *C,
                        const double *loss, fit_approach *out, char *err)
{
    memset(out, 0, sizeof(*out));
    err[0] = 0;
    kv *o = malloc((n ? n : 1) * sizeof(kv));
    double *buf = malloc((n ? n : 1) * 3 * sizeof(double));
    if (!o || !buf) {
        free(o), free(buf);
        return st_errf(err, ST_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        o[i] = (kv){C[i], i};
    qsort(o, n, sizeof(kv), cmp_kv);
    /* The envelope: runs with lower loss than every run of smaller or equal compute. */
    double best = INFINITY;
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        size_t i = o[k].i;
        if (loss[i] < best) {
            best = loss[i];
            buf[m] = log(C[i]);
            buf[n + m] = log(N[i]);
            buf[2 * n + m] = log(D[i]);
            m++;
        }
    }
    st_status st = power_laws(m, buf, buf + n, buf + 2 * n, out, err);
    free(o), free(buf);
    return st;
}

st_status fit_approach2(size_t n, const double *N, const double *C, const double *loss,
                        fit_approach *out, char *err)
{
    memset(out, 0, sizeof(*out));
    err[0] = 0;
    kv *o = malloc((n ? n : 1) * sizeof(kv));
    double *lc = malloc((n ? n : 1) * 3 * sizeof(double));
    if (!o || !lc) {
        free(o), free(lc);
        return st_errf(err, ST_ENOMEM, "out of memory");
    }
    double *ln = lc + n, *ld = lc + 2 * n;
    for (size_t i = 0; i < n; i++)
        o[i] = (kv){C[i], i};
    qsort(o, n, sizeof(kv), cmp_kv);
    size_t m = 0, k = 0;
    st_status st = ST_OK;
    while (k < n) {
        /* a budget: C within 5% of its first run */
        size_t j = k;
        while (j < n && C[o[j].i] <= C[o[k].i] * 1.05)
            j++;
        size_t g = j - k;
        if (g >= 3) {
            gsl_matrix *X = gsl_matrix_alloc(g, 3), *cov = gsl_matrix_alloc(3, 3);
            gsl_vector *y = gsl_vector_alloc(g), *c = gsl_vector_alloc(3);
            gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(g, 3);
            if (!X || !cov || !y || !c || !ws) {
                st = st_errf(err, ST_ENOMEM, "out of memory");
            } else {
                /* loss = c0 + c1 u + c2 u^2, u = ln N - mean ln N (centred for conditioning) */
                double mu = 0, cs = 0, lmin = INFINITY, umin = 0, umin_obs = INFINITY,
                       umax_obs = -INFINITY;
                for (size_t q = k; q < j; q++)
                    mu += log(N[o[q].i]) / (double)g;
                for (size_t q = k; q < j; q++) {
                    size_t i = o[q].i;
                    double u = log(N[i]) - mu;
                    gsl_matrix_set(X, q - k, 0, 1);
                    gsl_matrix_set(X, q - k, 1, u);
                    gsl_matrix_set(X, q - k, 2, u * u);
                    gsl_vector_set(y, q - k, loss[i]);
                    cs += C[i] / (double)g;
                    if (loss[i] < lmin) {
                        lmin = loss[i];
                        umin = u;
                    }
                    umin_obs = fmin(umin_obs, u);
                    umax_obs = fmax(umax_obs, u);
                }
                double chisq;
                int rc = gsl_multifit_linear(X, y, c, cov, &chisq, ws);
                double c1 = gsl_vector_get(c, 1), c2 = gsl_vector_get(c, 2);
                if (rc == 0 && c2 > 0) {
                    double us = -c1 / (2 * c2);
                    lc[m] = log(cs);
                    ln[m] = us + mu;
                    ld[m] = log(cs / 6) - ln[m];
                    m++;
                    if (umin == umin_obs || umin == umax_obs || us < umin_obs || us > umax_obs) {
                        size_t len = strlen(out->warning_text);
                        out->warnings |= FIT_WARN_EDGE;
                        snprintf(out->warning_text + len, sizeof(out->warning_text) - len,
                                 "%sbudget %.3g: minimum at the edge of its model sizes",
                                 len ? "; " : "", cs);
                    }
                }
            }
            gsl_matrix_free(X);
            gsl_matrix_free(cov);
            gsl_vector_free(y);
            gsl_vector_free(c);
            gsl_multifit_linear_free(ws);
            if (st != ST_OK)
                break;
        }
        k = j;
    }
    if (st == ST_OK)
        st = power_laws(m, lc, ln, ld, out, err);
    free(o), free(lc);
    return st;
}
