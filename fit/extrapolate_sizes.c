/*
 * extrapolate_sizes.c — how a sweep's parameters set the model size N and the tokens D when
 * neither is a parameter itself (docs/algorithms/extrapolation.md, "Model size from shape",
 * "Tokens from steps", and study/'s "Sizes from a categorical"): ln N regressed on the shape
 * parameters (d_model, n_layer), ln D on the steps and batch parameters (max_iters x
 * batch_size), and a categorical whose levels are model sizes. The recommendation solves these
 * for the large run's N and D (extrapolate_recommend.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_multifit.h>

#include "fit/extrapolate_int.h"

#define NONE ((size_t)-1)

/* Residual sums of squares of ln N below this count as exact fits (a tie between the size
 * regression's forms goes to the basic coordinates). */
#define SIZE_RSS_FLOOR 1e-10

/* A level's model size is one value within this log spread, and the levels' sizes differ by
 * more than this, when a factor sets the model size. */
#define LEVEL_SIZE_SPREAD log(1.02)
#define LEVEL_SIZE_APART  log(1.05)

int fit_xp_level_sets(const fit_xp *xp, size_t j, int tokens, double *lq)
{
    size_t P = xp ? xp->P : 0, nl = j < P ? xp->par[j].n_levels : 0;
    if (!nl || nl > FIT_XP_MAX_LEVELS)
        return 0;
    const double *q = tokens ? xp->D : xp->N;
    double lo[FIT_XP_MAX_LEVELS], hi[FIT_XP_MAX_LEVELS], all_lo = INFINITY, all_hi = -INFINITY;
    int one_each = 1;
    for (size_t l = 0; l < nl; l++)
        lo[l] = INFINITY, hi[l] = -INFINITY;
    for (size_t i = 0; i < xp->n; i++) {
        double v = xp->x[i * P + j];
        if (xp->failed[i] || !(q[i] > 0) || !(v >= 0 && v < (double)nl))
            continue;
        lo[(size_t)v] = fmin(lo[(size_t)v], log(q[i]));
        hi[(size_t)v] = fmax(hi[(size_t)v], log(q[i]));
    }
    for (size_t l = 0; l < nl; l++) {
        lq[l] = hi[l] >= lo[l] ? 0.5 * (lo[l] + hi[l]) : NAN;
        if (hi[l] >= lo[l]) {
            one_each = one_each && hi[l] - lo[l] <= LEVEL_SIZE_SPREAD;
            all_lo = fmin(all_lo, lq[l]);
            all_hi = fmax(all_hi, lq[l]);
        }
    }
    return one_each && all_hi - all_lo > LEVEL_SIZE_APART;
}

/* m->size_fac: the factor whose levels set N (fit_xp_level_sets), when no N parameter or SIZE
 * regression gives N; its levels' ln N. */
static void find_size_factor(fit_xp *xp)
{
    xp_model *m = &xp->m;
    m->size_fac = NONE;
    for (size_t j = 0; j < xp->P; j++)
        if (xp->role[j] == FIT_XP_N)
            return;
    if (m->n_size)
        return;
    for (size_t f = 0; f < m->n_fac && m->size_fac == NONE; f++)
        if (fit_xp_level_sets(xp, m->fac_param[f], 0, m->size_fac_lN))
            m->size_fac = f;
}

/* Regressor q of run i: the basic coordinate of parameter idx[q], or with ln_values the log of
 * its value (NAN when not positive). */
static double regressor(const fit_xp *xp, size_t i, size_t j, int ln_values)
{
    double x = xp->x[i * xp->P + j];
    return ln_values ? (x > 0 ? log(x) : NAN) : xp->b[i * xp->P + j];
}

/* OLS (GSL) of ln v[i], over the runs where v and every regressor are known, on the parameters
 * idx[0..k-1] (regressor()): c[0] + sum_j c[1+j] r_j, its residual sum of squares into *rss
 * (may be NULL). *ok = 0 when there are too few such runs or the fit fails. */
static st_status log_regression(const fit_xp *xp, const double *v, const size_t *idx, size_t k,
                                int ln_values, double *c, double *rss, int *ok)
{
    size_t n = 0, p = 1 + k;
    *ok = 0;
    for (size_t i = 0; i < xp->n; i++) {
        int use = isfinite(v[i]) && v[i] > 0;
        for (size_t q = 0; use && q < k; q++)
            use = isfinite(regressor(xp, i, idx[q], ln_values));
        n += use;
    }
    if (n < p + 1)
        return ST_OK;
    gsl_matrix *X = gsl_matrix_alloc(n, p), *cov = gsl_matrix_alloc(p, p);
    gsl_vector *y = gsl_vector_alloc(n), *cv = gsl_vector_alloc(p);
    gsl_multifit_linear_workspace *w = gsl_multifit_linear_alloc(n, p);
    st_status s = ST_OK;
    if (!X || !cov || !y || !cv || !w) {
        s = ST_ENOMEM;
    } else {
        size_t r = 0;
        for (size_t i = 0; i < xp->n && r < n; i++) {
            int use = isfinite(v[i]) && v[i] > 0;
            for (size_t q = 0; use && q < k; q++)
                use = isfinite(regressor(xp, i, idx[q], ln_values));
            if (!use)
                continue;
            gsl_matrix_set(X, r, 0, 1.0);
            for (size_t q = 0; q < k; q++)
                gsl_matrix_set(X, r, 1 + q, regressor(xp, i, idx[q], ln_values));
            gsl_vector_set(y, r, log(v[i]));
            r++;
        }
        double chisq = NAN;
        *ok = gsl_multifit_linear(X, y, cv, cov, &chisq, w) == 0;
        if (rss)
            *rss = chisq;
        for (size_t q = 0; *ok && q < p; q++)
            *ok = isfinite(c[q] = gsl_vector_get(cv, q));
    }
    gsl_matrix_free(X);
    gsl_matrix_free(cov);
    gsl_vector_free(y);
    gsl_vector_free(cv);
    gsl_multifit_linear_free(w);
    return s;
}

/* 1 when parameter j took more than one value (its log, with ln_values) among the runs where v
 * is known: a constant regressor would only split the intercept. */
static int varies(const fit_xp *xp, const double *v, size_t j, int ln_values)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < xp->n; i++) {
        double r = regressor(xp, i, j, ln_values);
        if (isfinite(v[i]) && v[i] > 0 && isfinite(r))
            lo = fmin(lo, r), hi = fmax(hi, r);
    }
    return hi - lo > 1e-9;
}

/* ln N on the SIZE parameters over runs with N known: on the logs of their values (exact for
 * N ~ n_layer d_model^2, whatever their spaces: n_layer is often linear) when that fits the runs'
 * N clearly better (half the residual sum of squares), else on their basic coordinates. Not the
 * log form always: in tiny models the embeddings are most of N, and on `make demo-quick`'s
 * sweep (n_layer 1 or 2, d_model 16 in every run: both forms exact) it put the large run at 74
 * layers and 5x the target compute (docs/algorithms/extrapolation.md, "Model size from shape"). */
static st_status fit_size_regression(fit_xp *xp)
{
    xp_model *m = &xp->m;
    m->n_size = 0;
    m->size_log = 0;
    for (size_t j = 0; j < xp->P && m->n_size < XP_MAX_HP; j++)
        if (xp->role[j] == FIT_XP_SIZE)
            m->size_param[m->n_size++] = j;
    if (!m->n_size)
        return ST_OK;
    int ok, ok_log;
    double rss = NAN, rss_log = NAN, c_log[1 + XP_MAX_HP];
    st_status s = log_regression(xp, xp->N, m->size_param, m->n_size, 0, m->size_c, &rss, &ok);
    if (s == ST_OK)
        s = log_regression(xp, xp->N, m->size_param, m->n_size, 1, c_log, &rss_log, &ok_log);
    if (s == ST_OK && ok_log && (!ok || rss_log + SIZE_RSS_FLOOR < 0.5 * rss)) {
        memcpy(m->size_c, c_log, (1 + m->n_size) * sizeof(double));
        m->size_log = ok = 1;
    }
    if (!ok)
        m->n_size = 0;
    return s;
}

/* ln D on the logs of the STEPS and BATCH parameters' values over runs with D known (a sweep
 * that sets its tokens as steps x batch: nanoGPT's max_iters, a trainer's max_steps; exact
 * whatever their spaces). Without a D parameter only; the STEPS parameter with the largest
 * coefficient is the one solved for. */
static st_status fit_tokens_regression(fit_xp *xp)
{
    xp_model *m = &xp->m;
    size_t n_steps = 0;
    m->n_tok = 0;
    m->tok_solve = NONE;
    for (size_t j = 0; j < xp->P; j++)
        if (xp->role[j] == FIT_XP_D)
            return ST_OK;
    for (size_t j = 0; j < xp->P && m->n_tok < XP_MAX_HP; j++)
        if ((xp->role[j] == FIT_XP_STEPS || xp->role[j] == FIT_XP_BATCH) && !xp->par[j].n_levels &&
            varies(xp, xp->D, j, 1)) {
            n_steps += xp->role[j] == FIT_XP_STEPS;
            m->tok_param[m->n_tok++] = j;
        }
    if (!n_steps) {
        m->n_tok = 0;
        return ST_OK;
    }
    int ok;
    st_status s = log_regression(xp, xp->D, m->tok_param, m->n_tok, 1, m->tok_c, NULL, &ok);
    double cmax = 0;
    for (size_t q = 0; ok && q < m->n_tok; q++)
        if (xp->role[m->tok_param[q]] == FIT_XP_STEPS && fabs(m->tok_c[1 + q]) > cmax) {
            cmax = fabs(m->tok_c[1 + q]);
            m->tok_solve = q;
        }
    if (!ok || !(cmax > 1e-6)) { /* no STEPS parameter moves the tokens */
        m->n_tok = 0;
        m->tok_solve = NONE;
    }
    return s;
}

st_status xp_sizes_fit(fit_xp *xp)
{
    st_status s = fit_size_regression(xp);
    if (s == ST_OK)
        s = fit_tokens_regression(xp);
    if (s == ST_OK)
        find_size_factor(xp);
    return s;
}

double xp_model_lnD(const fit_xp *xp, const double *x)
{
    const xp_model *m = &xp->m;
    for (size_t j = 0; j < xp->P; j++)
        if (xp->role[j] == FIT_XP_D)
            return log(x[j]);
    if (!m->n_tok)
        return NAN;
    double l = m->tok_c[0];
    for (size_t q = 0; q < m->n_tok; q++)
        l += m->tok_c[1 + q] * (x[m->tok_param[q]] > 0 ? log(x[m->tok_param[q]]) : NAN);
    return l;
}

double xp_model_lnN(const fit_xp *xp, const double *x)
{
    const xp_model *m = &xp->m;
    for (size_t j = 0; j < xp->P; j++)
        if (xp->role[j] == FIT_XP_N)
            return log(x[j]);
    if (!m->n_size)
        return NAN;
    double l = m->size_c[0];
    for (size_t s = 0; s < m->n_size; s++) {
        size_t j = m->size_param[s];
        l += m->size_c[1 + s] * (!m->size_log ? xp_to_basic(xp->par[j].space, x[j])
                                 : x[j] > 0   ? log(x[j])
                                              : NAN);
    }
    return l;
}
