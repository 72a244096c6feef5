/*
 * validate.c — profile likelihood of one parameter (the others re-minimised by L-BFGS from the
 * optimum, Wilks 95% interval for the Huber likelihood) and validation by compute cut-off
 * (fit below, relative errors above; Gadre et al. 2024, DeepSeek 2024), and the check for
 * parameters that ran to a limit of their parametrisation.
 * Not here: the multi-start fit (fit.c). Depends on NLopt.
 */
#include "fit/fit_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHI2_1_95 3.841458820694124 /* 95% quantile of chi-square with 1 degree of freedom */

/* Crossing of level between (x0, y0) and (x1, y1). */
static double cross(double x0, double y0, double x1, double y1, double level)
{
    return x0 + (level - y0) * (x1 - x0) / (y1 - y0);
}

st_status fit_profile(fit *f, size_t i, size_t n, const double *values, double *obj, double *lo,
                      double *hi)
{
    char *err = fit_int_err(f);
    err[0] = 0;
    const double *theta = fit_theta(f);
    const fit_law *law = fit_get_law(f);
    if (!theta)
        return st_errf(err, ST_ESTATE, "profile needs a fitted model: call fit_run first");
    if (i >= law->n_par || n == 0)
        return st_errf(err, ST_EINVAL, "profile: parameter %zu out of range or no values", i);
    const fit_options *fo = fit_get_options(f);
    int lik = fo->objective == FIT_OBJ_HUBER_LIK;
    size_t np = law->n_par + (size_t)lik;
    fit_prob p;
    fit_int_prob(f, fo->objective, &p);
    double fixed[FIT_MAX_PAR + 1];
    memcpy(fixed, fit_int_fixed(f), law->n_par * sizeof(double));
    fixed[law->n_par] = NAN;
    fit_local L;
    for (size_t k = 0; k < n; k++) {
        fixed[i] = values[k];
        if (fit_local_init(&L, &p, np, fixed, 1e-14, 1e-12, 20 * fo->max_eval) != ST_OK)
            return st_errf(err, ST_ENOMEM, "profile: out of memory");
        double x[FIT_MAX_PAR + 1];
        memcpy(x, theta, np * sizeof(double));
        fit_local_run(&L, x, &obj[k]);
        fit_local_clear(&L);
    }
    if (lo)
        *lo = NAN;
    if (hi)
        *hi = NAN;
    if (lik && !fo->mean) {
        double fmin = fit_objective_value(f);
        size_t kmin = 0;
        for (size_t k = 0; k < n; k++) {
            fmin = fmin < obj[k] ? fmin : obj[k];
            if (obj[k] < obj[kmin])
                kmin = k;
        }
        double lev = fmin + CHI2_1_95 / 2;
        for (size_t k = kmin; k > 0 && lo; k--)
            if (obj[k - 1] > lev && obj[k] <= lev) {
                *lo = cross(values[k - 1], obj[k - 1], values[k], obj[k], lev);
                break;
            }
        for (size_t k = kmin; k + 1 < n && hi; k++)
            if (obj[k] <= lev && obj[k + 1] > lev) {
                *hi = cross(values[k], obj[k], values[k + 1], obj[k + 1], lev);
                break;
            }
    }
    return ST_OK;
}

st_status fit_holdout(fit *f, size_t n, const double *x, const double *y, const double *w,
                      const double *cut_value, double cutoff, double *rel_err, size_t *n_held)
{
    char *err = fit_int_err(f);
    const fit_law *law = fit_get_law(f);
    size_t nin = law->n_in, nt = 0;
    *n_held = 0;
    for (size_t i = 0; i < n; i++)
        nt += cut_value[i] <= cutoff;
    if (nt == n || nt == 0)
        return st_errf(err, ST_EEMPTY, "hold-out at %g leaves %zu training and %zu held-out rows",
                       cutoff, nt, n - nt);
    double *tx = malloc(nt * nin * sizeof(double)), *ty = malloc(nt * sizeof(double));
    double *tw = w ? malloc(nt * sizeof(double)) : NULL;
    if (!tx || !ty || (w && !tw)) {
        free(tx), free(ty), free(tw);
        return st_errf(err, ST_ENOMEM, "hold-out: out of memory");
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (cut_value[i] <= cutoff) {
            memcpy(tx + m * nin, x + i * nin, nin * sizeof(double));
            ty[m] = y[i];
            if (tw)
                tw[m] = w[i];
            m++;
        }
    st_status st = fit_set_data(f, nt, tx, ty, tw);
    free(tx), free(ty), free(tw);
    if (st == ST_OK)
        st = fit_run(f);
    if (st != ST_OK)
        return st;
    for (size_t i = 0; i < n; i++) {
        rel_err[i] = NAN;
        if (cut_value[i] > cutoff) {
            double yh;
            fit_predict(f, 1, x + i * nin, &yh);
            rel_err[i] = (yh - y[i]) / y[i];
            (*n_held)++;
        }
    }
    return ST_OK;
}

/* Appends one clause to msg. */
static void limit_note(char *msg, size_t len, size_t *n, const char *name, double v,
                       const char *why)
{
    size_t used = strlen(msg);
    if (used + 1 < len)
        snprintf(msg + used, len - used, "%s%s = %.4g %s", used ? "; " : "", name, v, why);
    (*n)++;
}

static int is_exponent(const char *name)
{
    static const char *const ex[] = {"alpha", "beta", "eta", "alpha_N", "alpha_D"};
    for (size_t k = 0; k < sizeof(ex) / sizeof(ex[0]); k++)
        if (!strcmp(name, ex[k]))
            return 1;
    return 0;
}

size_t fit_limit_check(const fit *f, char *msg, size_t len)
{
    if (len)
        msg[0] = 0;
    const double *nat = fit_params(f);
    if (!nat)
        return 0;
    const fit_law *law = fit_get_law(f);
    fit_prob p;
    fit_int_prob(f, fit_get_options(f)->objective, &p);
    double ymin = INFINITY;
    for (size_t i = 0; i < p.n; i++)
        ymin = fmin(ymin, p.y[i]);
    size_t n = 0;
    for (size_t i = 0; i < law->n_par; i++) {
        const char *name = law->nat_names[i];
        double v = nat[i];
        if (!strcmp(name, "E")) {
            if (v < 1e-3 * ymin)
                limit_note(msg, len, &n, name, v, "runs to 0 (no irreducible loss found)");
        } else if (is_exponent(name)) {
            if (v < 1e-3 || v > 5)
                limit_note(msg, len, &n, name, v, v < 1e-3 ? "runs to 0" : "runs to infinity");
        } else if (!strcmp(name, "R_D") || !strcmp(name, "R_N")) {
            if (v > 1e4)
                limit_note(msg, len, &n, name, v,
                           "runs to infinity (no repetition penalty: the data do not fix it)");
        } else if (law->is_log[i] && (v < 1e-10 || v > 1e30)) {
            limit_note(msg, len, &n, name, v, v < 1e-10 ? "runs to 0" : "runs to infinity");
        }
    }
    return n;
}
