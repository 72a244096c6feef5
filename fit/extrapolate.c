/*
 * extrapolate.c — the extrapolator handle, its runs, CARBS' front analysis (the Pareto front of
 * objective against cost, each parameter's basic coordinate regressed on ln cost along it by
 * OLS, a saturating power law of the objective, bootstrap over Pareto groups), the choice of
 * method and the results. The model of every run is in extrapolate_model.c.
 * Method and references: docs/algorithms/extrapolation.md.
 */
#include "fit/extrapolate.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gsl/gsl_fit.h>

#include "fit/extrapolate_int.h"
#include "fit/fit_int.h"

/* ---- small helpers ----------------------------------------------------------------------- */

double xp_to_basic(fit_xp_space s, double v)
{
    switch (s) {
    case FIT_XP_LOG:
        return v > 0 ? log(v) : NAN;
    case FIT_XP_LOGIT:
        return (v > 0 && v < 1) ? log(v / (1 - v)) : NAN;
    case FIT_XP_LINEAR:
        return v;
    }
    return NAN;
}

double xp_from_basic(fit_xp_space s, double b)
{
    switch (s) {
    case FIT_XP_LOG:
        return exp(b);
    case FIT_XP_LOGIT:
        return 1.0 / (1.0 + exp(-b));
    case FIT_XP_LINEAR:
        return b;
    }
    return NAN;
}

double xp_finish_value(const fit_xp *xp, size_t i, double v, int *clamped)
{
    const fit_xp_param *p = &xp->par[i];
    if (!isfinite(v))
        return v;
    if (p->is_integer && p->rounding > 0) {
        double r = round(v / p->rounding) * p->rounding;
        if (r <= 0 && p->space == FIT_XP_LOG)
            r = p->rounding;
        v = r;
    }
    if (v < p->min) {
        v = p->min;
        if (clamped)
            *clamped = 1;
    }
    if (v > p->max) {
        v = p->max;
        if (clamped)
            *clamped = 1;
    }
    return v;
}

static void xp_clear_err(fit_xp *xp)
{
    xp->err[0] = '\0';
}

static st_status xp_fail(fit_xp *xp, st_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(xp->err, sizeof(xp->err), fmt, ap);
    va_end(ap);
    return s;
}

/* ---- roles -------------------------------------------------------------------------------- */

static int name_in(const char *name, const char *const *list)
{
    for (size_t i = 0; list[i]; i++)
        if (!strcasecmp(name, list[i]))
            return 1;
    return 0;
}

fit_xp_role fit_xp_role_guess(const char *name)
{
    static const char *const n_names[] = {"n",          "params",     "n_params",
                                          "model_size", "num_params", NULL};
    static const char *const d_names[] = {"d",    "tokens",     "n_tokens", "train_tokens",
                                          "data", "num_tokens", NULL};
    static const char *const s_names[] = {"d_model", "n_embd", "width",   "n_layer", "n_layers",
                                          "depth",   "n_head", "n_heads", "d_ff",    NULL};
    static const char *const lr_names[] = {"lr", "learning_rate", "eta", "peak_lr", NULL};
    static const char *const b_names[] = {"batch", "batch_size", "bs", "batch_tokens", NULL};
    if (!name)
        return FIT_XP_OTHER;
    if (name_in(name, n_names))
        return FIT_XP_N;
    if (name_in(name, d_names))
        return FIT_XP_D;
    if (name_in(name, s_names))
        return FIT_XP_SIZE;
    if (name_in(name, lr_names))
        return FIT_XP_LR;
    if (name_in(name, b_names))
        return FIT_XP_BATCH;
    return FIT_XP_OTHER;
}

const char *fit_xp_role_name(fit_xp_role r)
{
    switch (r) {
    case FIT_XP_AUTO:
        return "auto";
    case FIT_XP_OTHER:
        return "other";
    case FIT_XP_N:
        return "N";
    case FIT_XP_D:
        return "D";
    case FIT_XP_SIZE:
        return "size";
    case FIT_XP_LR:
        return "lr";
    case FIT_XP_BATCH:
        return "batch";
    }
    return "?";
}

void fit_xp_param_init(fit_xp_param *p, const char *name, fit_xp_space space)
{
    memset(p, 0, sizeof(*p));
    p->name = name;
    p->space = space;
    p->role = FIT_XP_AUTO;
    p->min = -INFINITY;
    p->max = INFINITY;
    p->rounding = 1;
}

/* ---- lifecycle ----------------------------------------------------------------------------- */

fit_xp_options fit_xp_options_default(void)
{
    fit_xp_options o;
    memset(&o, 0, sizeof(o));
    o.method = FIT_XP_METHOD_AUTO;
    o.level = 0.9;
    o.n_boot = 200;
    o.seed = 42;
    o.n_threads = 0;
    o.max_p_diverge = 0.05;
    o.fail_loss = NAN;
    o.far_factor = 10;
    o.robust = 1;
    o.prior_ab_sd = 0.05;
    o.prior_wd_sd = 0.25;
    return o;
}

st_status fit_xp_create(fit_xp **out)
{
    if (!out)
        return ST_EINVAL;
    *out = calloc(1, sizeof(fit_xp));
    if (!*out)
        return ST_ENOMEM;
    (*out)->o = fit_xp_options_default();
    return ST_OK;
}

static void xp_free_results(fit_xp *xp)
{
    free(xp->front_run);
    free(xp->front_count);
    free(xp->front_cost);
    free(xp->front_obj);
    free(xp->front_law_ok);
    free(xp->front_coef);
    free(xp->front_rep);
    free(xp->front_slope_ci);
    free(xp->loss_rep);
    free(xp->rec);
    free(xp->rec_lo);
    free(xp->rec_hi);
    xp->front_run = xp->front_count = NULL;
    xp->front_cost = xp->front_obj = xp->front_coef = xp->front_rep = NULL;
    xp->front_slope_ci = xp->loss_rep = NULL;
    xp->front_law_ok = NULL;
    xp->rec = xp->rec_lo = xp->rec_hi = NULL;
    xp->n_front = xp->n_front_rep = 0;
    xp->loss_law_ok = 0;
    xp_model_clear(&xp->m);
    xp->has_model = 0;
    xp->done = 0;
}

static void xp_free_runs(fit_xp *xp)
{
    for (size_t i = 0; xp->par && i < xp->P; i++)
        free((char *)xp->par[i].name);
    free(xp->par);
    free(xp->role);
    free(xp->x);
    free(xp->b);
    free(xp->cost);
    free(xp->obj);
    free(xp->N);
    free(xp->D);
    free(xp->failed);
    xp->par = NULL;
    xp->role = NULL;
    xp->x = xp->b = xp->cost = xp->obj = xp->N = xp->D = NULL;
    xp->failed = NULL;
    xp->P = xp->n = xp->n_ok = 0;
}

void fit_xp_destroy(fit_xp *xp)
{
    if (!xp)
        return;
    xp_free_results(xp);
    xp_free_runs(xp);
    free(xp);
}

const char *fit_xp_errmsg(const fit_xp *xp)
{
    return xp ? xp->err : "no handle";
}

st_status fit_xp_set_options(fit_xp *xp, const fit_xp_options *o)
{
    if (!xp || !o)
        return ST_EINVAL;
    xp_clear_err(xp);
    if (!(o->level > 0 && o->level < 1))
        return xp_fail(xp, ST_EINVAL, "level %g is not in (0, 1)", o->level);
    if (!(o->max_p_diverge > 0 && o->max_p_diverge <= 1))
        return xp_fail(xp, ST_EINVAL, "max_p_diverge %g is not in (0, 1]", o->max_p_diverge);
    if ((int)o->method < 0 || o->method > FIT_XP_METHOD_MODEL)
        return xp_fail(xp, ST_EINVAL, "unknown method %d", (int)o->method);
    if (!(o->prior_ab_sd >= 0) || isinf(o->prior_ab_sd))
        return xp_fail(xp, ST_EINVAL, "prior_ab_sd %g is not a finite value >= 0", o->prior_ab_sd);
    if (!(o->prior_wd_sd >= 0) || isinf(o->prior_wd_sd))
        return xp_fail(xp, ST_EINVAL, "prior_wd_sd %g is not a finite value >= 0", o->prior_wd_sd);
    if (!(o->far_factor >= 1))
        return xp_fail(xp, ST_EINVAL, "far_factor %g is below 1", o->far_factor);
    xp->o = *o;
    xp_free_results(xp);
    return ST_OK;
}

st_status fit_xp_set_runs(fit_xp *xp, size_t n_params, const fit_xp_param *params, size_t n,
                          const double *x, const double *cost, const double *objective,
                          const int *failed, const double *N, const double *D)
{
    if (!xp)
        return ST_EINVAL;
    xp_clear_err(xp);
    xp_free_results(xp);
    xp_free_runs(xp);
    if (n_params == 0 || !params || (n && (!x || !objective || !cost)))
        return xp_fail(xp, ST_EINVAL, "no parameters, or a NULL array");
    if (n_params > 64)
        return xp_fail(xp, ST_EINVAL, "%zu parameters (at most 64)", n_params);
    for (size_t j = 0; j < n_params; j++) {
        if (!params[j].name || !params[j].name[0])
            return xp_fail(xp, ST_EINVAL, "parameter %zu has no name", j);
        if ((int)params[j].space < 0 || params[j].space > FIT_XP_LOGIT)
            return xp_fail(xp, ST_EINVAL, "parameter '%s': unknown space", params[j].name);
        if (params[j].is_integer && !(params[j].rounding > 0))
            return xp_fail(xp, ST_EINVAL, "parameter '%s': rounding must be > 0", params[j].name);
        if (isnan(params[j].min) || isnan(params[j].max) || params[j].min > params[j].max)
            return xp_fail(xp, ST_EINVAL, "parameter '%s': bad bounds", params[j].name);
    }
    size_t P = n_params;
    xp->par = calloc(P, sizeof(*xp->par));
    xp->role = calloc(P, sizeof(*xp->role));
    xp->x = malloc((n ? n : 1) * P * sizeof(double));
    xp->b = malloc((n ? n : 1) * P * sizeof(double));
    xp->cost = malloc((n ? n : 1) * sizeof(double));
    xp->obj = malloc((n ? n : 1) * sizeof(double));
    xp->N = malloc((n ? n : 1) * sizeof(double));
    xp->D = malloc((n ? n : 1) * sizeof(double));
    xp->failed = malloc((n ? n : 1) * sizeof(int));
    if (!xp->par || !xp->role || !xp->x || !xp->b || !xp->cost || !xp->obj || !xp->N || !xp->D ||
        !xp->failed) {
        xp_free_runs(xp);
        return xp_fail(xp, ST_ENOMEM, "out of memory for %zu runs", n);
    }
    xp->P = P;
    for (size_t j = 0; j < P; j++) {
        xp->par[j] = params[j];
        xp->par[j].name = NULL;
        size_t len = strlen(params[j].name);
        char *s = malloc(len + 1);
        if (!s) {
            xp_free_runs(xp);
            return xp_fail(xp, ST_ENOMEM, "out of memory");
        }
        memcpy(s, params[j].name, len + 1);
        xp->par[j].name = s;
        xp->role[j] = params[j].role == FIT_XP_AUTO ? fit_xp_role_guess(s) : params[j].role;
    }
    xp->n = n;
    size_t n_ok = 0;
    for (size_t i = 0; i < n; i++) {
        int fl = failed ? failed[i] != 0 : 0;
        if (!isfinite(objective[i]))
            fl = 1;
        if (!fl && !(isfinite(cost[i]) && cost[i] > 0)) {
            xp_free_runs(xp);
            return xp_fail(xp, ST_EINVAL, "run %zu: cost %g is not positive and finite", i,
                           cost[i]);
        }
        for (size_t j = 0; j < P; j++) {
            double v = x[i * P + j];
            double bv = xp_to_basic(params[j].space, v);
            if (!isfinite(bv)) {
                char nm[64];
                snprintf(nm, sizeof(nm), "%s", params[j].name);
                xp_free_runs(xp);
                return xp_fail(xp, ST_EINVAL, "run %zu, parameter '%s': value %g outside its space",
                               i, nm, v);
            }
            xp->x[i * P + j] = v;
            xp->b[i * P + j] = bv;
        }
        xp->failed[i] = fl;
        xp->cost[i] = cost[i];
        xp->obj[i] = fl ? NAN : objective[i];
        double Ni = N ? N[i] : NAN, Di = D ? D[i] : NAN;
        for (size_t j = 0; j < P; j++) {
            if (xp->role[j] == FIT_XP_N)
                Ni = x[i * P + j];
            if (xp->role[j] == FIT_XP_D)
                Di = x[i * P + j];
        }
        xp->N[i] = (isfinite(Ni) && Ni > 0) ? Ni : NAN;
        xp->D[i] = (isfinite(Di) && Di > 0) ? Di : NAN;
        if (!fl)
            n_ok++;
    }
    xp->n_ok = n_ok;
    if (n_ok < 3) {
        size_t keep = n_ok;
        xp_free_runs(xp);
        return xp_fail(xp, ST_EEMPTY, "%zu successful runs (at least 3 are needed)", keep);
    }
    return ST_OK;
}

/* ---- the Pareto front ------------------------------------------------------------------------ */

typedef struct xp_group {
    size_t first, count;
    double cost, obj;
} xp_group;

static int group_cmp(const void *a, const void *b)
{
    const xp_group *ga = a, *gb = b;
    if (ga->cost < gb->cost)
        return -1;
    if (ga->cost > gb->cost)
        return 1;
    return ga->first < gb->first ? -1 : (ga->first > gb->first);
}

static st_status xp_front(fit_xp *xp)
{
    size_t n = xp->n, P = xp->P;
    xp_group *g = malloc(n * sizeof(*g));
    if (!g)
        return xp_fail(xp, ST_ENOMEM, "out of memory");
    size_t ng = 0;
    /* group successful runs with identical parameters (O(n^2), sweeps are small) */
    for (size_t i = 0; i < n; i++) {
        if (xp->failed[i])
            continue;
        size_t k;
        for (k = 0; k < ng; k++)
            if (!memcmp(&xp->x[g[k].first * P], &xp->x[i * P], P * sizeof(double)))
                break;
        if (k == ng) {
            g[ng].first = i;
            g[ng].count = 0;
            g[ng].cost = g[ng].obj = 0;
            ng++;
        }
        g[k].count++;
        g[k].cost += xp->cost[i];
        g[k].obj += xp->obj[i];
    }
    for (size_t k = 0; k < ng; k++) {
        g[k].cost /= (double)g[k].count;
        g[k].obj /= (double)g[k].count;
    }
    qsort(g, ng, sizeof(*g), group_cmp);
    xp->front_run = malloc(ng * sizeof(size_t));
    xp->front_count = malloc(ng * sizeof(size_t));
    xp->front_cost = malloc(ng * sizeof(double));
    xp->front_obj = malloc(ng * sizeof(double));
    if (!xp->front_run || !xp->front_count || !xp->front_cost || !xp->front_obj) {
        free(g);
        return xp_fail(xp, ST_ENOMEM, "out of memory");
    }
    double best = xp->o.maximize ? -INFINITY : INFINITY;
    size_t nf = 0;
    for (size_t k = 0; k < ng; k++) {
        int better = xp->o.maximize ? g[k].obj > best : g[k].obj < best;
        if (!better)
            continue;
        best = g[k].obj;
        xp->front_run[nf] = g[k].first;
        xp->front_count[nf] = g[k].count;
        xp->front_cost[nf] = g[k].cost;
        xp->front_obj[nf] = g[k].obj;
        nf++;
    }
    xp->n_front = nf;
    free(g);
    return ST_OK;
}

/* OLS of y on ln cost over front groups idx[0..m-1]: coef (intercept, slope); 0 if degenerate. */
static int front_ols(const fit_xp *xp, size_t j, const size_t *idx, size_t m, double coef[2])
{
    double lc[256], y[256];
    if (m < 2 || m > 256)
        return 0;
    double ymin = INFINITY, ymax = -INFINITY, cmin = INFINITY, cmax = -INFINITY;
    for (size_t k = 0; k < m; k++) {
        lc[k] = log(xp->front_cost[idx[k]]);
        y[k] = j == (size_t)-1 ? xp->front_obj[idx[k]] : xp->b[xp->front_run[idx[k]] * xp->P + j];
        ymin = fmin(ymin, y[k]);
        ymax = fmax(ymax, y[k]);
        cmin = fmin(cmin, lc[k]);
        cmax = fmax(cmax, lc[k]);
    }
    if (cmax - cmin < 1e-12) {
        coef[0] = y[0];
        coef[1] = 0;
        return 1;
    }
    if (ymax - ymin == 0) {
        coef[0] = y[0];
        coef[1] = 0;
        return 1;
    }
    double c00, c01, c11, sumsq;
    gsl_fit_linear(lc, 1, y, 1, m, &coef[0], &coef[1], &c00, &c01, &c11, &sumsq);
    return isfinite(coef[0]) && isfinite(coef[1]);
}

static st_status xp_front_laws(fit_xp *xp)
{
    size_t P = xp->P, nf = xp->n_front, R = xp->o.n_boot;
    xp->front_law_ok = calloc(P, sizeof(int));
    xp->front_coef = calloc(P * 2, sizeof(double));
    xp->front_slope_ci = calloc(P * 2, sizeof(double));
    xp->front_rep = calloc((R ? R : 1) * P * 2, sizeof(double));
    size_t *all = malloc((nf ? nf : 1) * sizeof(size_t)),
           *idx = malloc((nf ? nf : 1) * sizeof(size_t));
    double *slopes = malloc((R ? R : 1) * sizeof(double));
    st_rng *rng = NULL;
    if (!xp->front_law_ok || !xp->front_coef || !xp->front_slope_ci || !xp->front_rep || !all ||
        !idx || !slopes || st_rng_create(xp->o.seed, &rng) != ST_OK) {
        free(all);
        free(idx);
        free(slopes);
        st_rng_destroy(rng);
        return xp_fail(xp, ST_ENOMEM, "out of memory");
    }
    for (size_t k = 0; k < nf; k++)
        all[k] = k;
    for (size_t j = 0; j < P; j++)
        xp->front_law_ok[j] = nf >= 2 && front_ols(xp, j, all, nf, &xp->front_coef[2 * j]);
    /* group bootstrap: resample Pareto groups with replacement, refit every law */
    size_t n_rep = 0;
    for (size_t r = 0; r < R && nf >= 2; r++) {
        for (size_t k = 0; k < nf; k++)
            idx[k] = st_rng_uniform_int(rng, nf);
        for (size_t j = 0; j < P; j++) {
            double *c = &xp->front_rep[(n_rep * P + j) * 2];
            if (!xp->front_law_ok[j] || !front_ols(xp, j, idx, nf, c)) {
                c[0] = xp->front_coef[2 * j];
                c[1] = xp->front_coef[2 * j + 1];
            }
        }
        n_rep++;
    }
    xp->n_front_rep = n_rep;
    double a = (1 - xp->o.level) / 2;
    for (size_t j = 0; j < P; j++) {
        if (!n_rep) {
            xp->front_slope_ci[2 * j] = xp->front_slope_ci[2 * j + 1] = xp->front_coef[2 * j + 1];
            continue;
        }
        for (size_t r = 0; r < n_rep; r++)
            slopes[r] = xp->front_rep[(r * P + j) * 2 + 1];
        fit_sort_doubles(slopes, n_rep);
        xp->front_slope_ci[2 * j] = fit_quantile_sorted(slopes, n_rep, a);
        xp->front_slope_ci[2 * j + 1] = fit_quantile_sorted(slopes, n_rep, 1 - a);
    }
    free(all);
    free(idx);
    free(slopes);
    st_rng_destroy(rng);

    /* the saturating law y = E + A C^-alpha along the front (positive, minimised objectives) */
    xp->loss_law_ok = 0;
    int positive = 1;
    for (size_t k = 0; k < nf; k++)
        if (!(xp->front_obj[k] > 0))
            positive = 0;
    if (xp->o.maximize || !positive || nf < 4)
        return ST_OK;
    fit *f = NULL;
    fit_boot *bt = NULL;
    double *cx = malloc(nf * sizeof(double));
    if (!cx)
        return xp_fail(xp, ST_ENOMEM, "out of memory");
    for (size_t k = 0; k < nf; k++)
        cx[k] = xp->front_cost[k];
    st_status s = fit_create(fit_law_saturating, &f);
    if (s == ST_OK) {
        fit_options fo = fit_options_default();
        fo.n_threads = xp->o.n_threads ? xp->o.n_threads : 1;
        fo.objective = FIT_OBJ_MSE;
        fit_set_options(f, &fo);
        /* starts: E below the smallest objective, alpha over a grid, a from the first point */
        double ymin = xp->front_obj[nf - 1], starts[5 * 4 * 3];
        size_t ns = 0;
        const double alphas[5] = {0.05, 0.1, 0.2, 0.35, 0.6};
        const double efrac[4] = {0.3, 0.6, 0.85, 0.97};
        for (size_t ia = 0; ia < 5; ia++)
            for (size_t ie = 0; ie < 4; ie++) {
                double E = efrac[ie] * ymin;
                double A = fmax(xp->front_obj[0] - E, 1e-6 * ymin) * pow(cx[0], alphas[ia]);
                starts[3 * ns] = log(A);
                starts[3 * ns + 1] = alphas[ia];
                starts[3 * ns + 2] = log(E);
                ns++;
            }
        s = fit_set_data(f, nf, cx, xp->front_obj, NULL);
        if (s == ST_OK)
            s = fit_set_starts(f, ns, starts);
        if (s == ST_OK)
            s = fit_run(f);
        if (s == ST_OK) {
            memcpy(xp->loss_nat, fit_params(f), 3 * sizeof(double));
            xp->loss_law_ok = 1;
            if (R) {
                fit_boot_options bo = fit_boot_options_default();
                bo.n_rep = R;
                bo.seed = xp->o.seed;
                bo.n_threads = fo.n_threads;
                if (fit_bootstrap(f, &bo, &bt) == ST_OK) {
                    xp->loss_rep = malloc(R * 3 * sizeof(double));
                    if (xp->loss_rep)
                        for (size_t r = 0; r < R; r++)
                            memcpy(&xp->loss_rep[3 * r], fit_boot_replicate(bt, r),
                                   3 * sizeof(double));
                }
            }
        }
    }
    fit_boot_destroy(bt);
    fit_destroy(f);
    free(cx);
    return ST_OK;
}

size_t fit_xp_front_n(const fit_xp *xp)
{
    return xp ? xp->n_front : 0;
}

void fit_xp_front_get(const fit_xp *xp, size_t k, size_t *run, double *cost, double *objective,
                      size_t *count)
{
    if (!xp || k >= xp->n_front)
        return;
    if (run)
        *run = xp->front_run[k];
    if (cost)
        *cost = xp->front_cost[k];
    if (objective)
        *objective = xp->front_obj[k];
    if (count)
        *count = xp->front_count[k];
}

st_status fit_xp_front_law(const fit_xp *xp, size_t i, double coef[2], double slope_ci[2])
{
    if (!xp || !xp->front_law_ok || i >= xp->P || !xp->front_law_ok[i])
        return ST_ENOTFOUND;
    if (coef) {
        coef[0] = xp->front_coef[2 * i];
        coef[1] = xp->front_coef[2 * i + 1];
    }
    if (slope_ci) {
        slope_ci[0] = xp->front_slope_ci[2 * i];
        slope_ci[1] = xp->front_slope_ci[2 * i + 1];
    }
    return ST_OK;
}

st_status fit_xp_front_loss_law(const fit_xp *xp, double natural[3])
{
    if (!xp || !xp->loss_law_ok)
        return ST_ENOTFOUND;
    memcpy(natural, xp->loss_nat, 3 * sizeof(double));
    return ST_OK;
}

static double sat_eval(const double *nat, double C)
{
    return nat[2] + nat[0] * pow(C, -nat[1]);
}

st_status fit_xp_front_curve(const fit_xp *xp, size_t i, size_t m, const double *C, double *mid,
                             double *lo, double *hi)
{
    if (!xp || !C)
        return ST_EINVAL;
    int is_obj = i == (size_t)-1;
    if (is_obj ? !xp->loss_law_ok : (!xp->front_law_ok || i >= xp->P || !xp->front_law_ok[i]))
        return ST_ENOTFOUND;
    size_t R = is_obj ? (xp->loss_rep ? xp->o.n_boot : 0) : xp->n_front_rep;
    double *v = malloc((R ? R : 1) * sizeof(double));
    if (!v)
        return ST_ENOMEM;
    double a = (1 - xp->o.level) / 2;
    for (size_t t = 0; t < m; t++) {
        double lc = log(C[t]), fitv;
        if (is_obj)
            fitv = sat_eval(xp->loss_nat, C[t]);
        else
            fitv = xp_from_basic(xp->par[i].space,
                                 xp->front_coef[2 * i] + xp->front_coef[2 * i + 1] * lc);
        size_t nv = 0;
        for (size_t r = 0; r < R; r++) {
            double y = is_obj ? sat_eval(&xp->loss_rep[3 * r], C[t])
                              : xp_from_basic(xp->par[i].space,
                                              xp->front_rep[(r * xp->P + i) * 2] +
                                                  xp->front_rep[(r * xp->P + i) * 2 + 1] * lc);
            if (isfinite(y))
                v[nv++] = y;
        }
        if (nv) {
            fit_sort_doubles(v, nv);
            if (mid)
                mid[t] = fitv;
            if (lo)
                lo[t] = fit_quantile_sorted(v, nv, a);
            if (hi)
                hi[t] = fit_quantile_sorted(v, nv, 1 - a);
        } else {
            if (mid)
                mid[t] = fitv;
            if (lo)
                lo[t] = fitv;
            if (hi)
                hi[t] = fitv;
        }
    }
    free(v);
    return ST_OK;
}

st_status fit_xp_front_recommend(const fit_xp *xp, double *value)
{
    if (!xp || !xp->done || !value)
        return ST_ESTATE;
    double C = xp->res.compute;
    for (size_t j = 0; j < xp->P; j++) {
        double v;
        if (xp->front_law_ok[j])
            v = xp_from_basic(xp->par[j].space,
                              xp->front_coef[2 * j] + xp->front_coef[2 * j + 1] * log(C));
        else
            v = xp->x[xp->front_run[xp->n_front - 1] * xp->P + j];
        value[j] = xp_finish_value(xp, j, v, NULL);
    }
    return ST_OK;
}

/* The FRONT recommendation into xp->rec*, xp->res. */
static st_status xp_front_recommend_fill(fit_xp *xp, double C)
{
    size_t P = xp->P;
    int clamped = 0;
    double *tmp = malloc(3 * sizeof(double));
    if (!tmp)
        return xp_fail(xp, ST_ENOMEM, "out of memory");
    for (size_t j = 0; j < P; j++) {
        if (xp->front_law_ok[j] &&
            fit_xp_front_curve(xp, j, 1, &C, &tmp[0], &tmp[1], &tmp[2]) == ST_OK) {
            xp->rec[j] = xp_finish_value(xp, j, tmp[0], &clamped);
            xp->rec_lo[j] = xp_finish_value(xp, j, fmin(tmp[1], tmp[0]), NULL);
            xp->rec_hi[j] = xp_finish_value(xp, j, fmax(tmp[2], tmp[0]), NULL);
        } else {
            double v = xp->x[xp->front_run[xp->n_front - 1] * P + j];
            xp->rec[j] = xp->rec_lo[j] = xp->rec_hi[j] = v;
        }
    }
    if (xp->loss_law_ok &&
        fit_xp_front_curve(xp, (size_t)-1, 1, &C, &tmp[0], &tmp[1], &tmp[2]) == ST_OK) {
        xp->res.objective = tmp[0];
        xp->res.objective_lo = fmin(tmp[1], tmp[0]);
        xp->res.objective_hi = fmax(tmp[2], tmp[0]);
    } else {
        double c[2];
        size_t all[256] = {0}, m = xp->n_front < 256 ? xp->n_front : 256;
        for (size_t k = 0; k < m; k++)
            all[k] = k;
        if (front_ols(xp, (size_t)-1, all, m, c))
            xp->res.objective = c[0] + c[1] * log(C);
        else
            xp->res.objective = xp->front_obj[xp->n_front - 1];
        xp->res.objective_lo = xp->res.objective_hi = xp->res.objective;
    }
    free(tmp);
    xp->res.p_diverge = NAN;
    xp->res.N = xp->res.D = xp->res.N_lo = xp->res.N_hi = xp->res.D_lo = xp->res.D_hi = NAN;
    for (size_t j = 0; j < P; j++) {
        if (xp->role[j] == FIT_XP_N) {
            xp->res.N = xp->rec[j];
            xp->res.N_lo = xp->rec_lo[j];
            xp->res.N_hi = xp->rec_hi[j];
        }
        if (xp->role[j] == FIT_XP_D) {
            xp->res.D = xp->rec[j];
            xp->res.D_lo = xp->rec_lo[j];
            xp->res.D_hi = xp->rec_hi[j];
        }
    }
    xp->res.method = FIT_XP_METHOD_FRONT;
    if (clamped)
        xp->res.warnings |= FIT_XP_WARN_BOUND;
    return ST_OK;
}

/* ---- the run ----------------------------------------------------------------------------- */

static void add_warning(fit_xp *xp, unsigned bit, const char *fmt, ...)
{
    xp->res.warnings |= bit;
    size_t len = strlen(xp->warn_text);
    if (len + 3 >= sizeof(xp->warn_text))
        return;
    if (len) {
        memcpy(xp->warn_text + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(xp->warn_text + len, sizeof(xp->warn_text) - len, fmt, ap);
    va_end(ap);
}

static int model_possible(const fit_xp *xp)
{
    if (xp->o.maximize)
        return 0;
    size_t n_nd = 0;
    int has_lr = 0;
    for (size_t j = 0; j < xp->P; j++)
        if (xp->role[j] == FIT_XP_LR)
            has_lr = 1;
    for (size_t i = 0; i < xp->n; i++)
        if (!xp->failed[i] && isfinite(xp->N[i]) && isfinite(xp->D[i]) && xp->obj[i] > 0)
            n_nd++;
    return has_lr && n_nd >= 12;
}

st_status fit_xp_run(fit_xp *xp, double C)
{
    if (!xp)
        return ST_EINVAL;
    xp_clear_err(xp);
    xp_free_results(xp);
    if (!xp->n)
        return xp_fail(xp, ST_ESTATE, "no runs: call fit_xp_set_runs first");
    if (!(isfinite(C) && C > 0))
        return xp_fail(xp, ST_EINVAL, "compute %g is not positive and finite", C);
    memset(&xp->res, 0, sizeof(xp->res));
    xp->warn_text[0] = '\0';
    size_t P = xp->P;
    xp->rec = calloc(P, sizeof(double));
    xp->rec_lo = calloc(P, sizeof(double));
    xp->rec_hi = calloc(P, sizeof(double));
    if (!xp->rec || !xp->rec_lo || !xp->rec_hi)
        return xp_fail(xp, ST_ENOMEM, "out of memory");
    st_status s = xp_front(xp);
    if (s != ST_OK)
        return s;
    if (xp->n_front == 0)
        return xp_fail(xp, ST_EEMPTY, "no Pareto front (no successful run)");
    s = xp_front_laws(xp);
    if (s != ST_OK)
        return s;
    double largest = 0;
    for (size_t i = 0; i < xp->n; i++)
        if (!xp->failed[i] && xp->cost[i] > largest)
            largest = xp->cost[i];
    xp->res.compute = C;
    xp->res.largest_cost = largest;
    double ratio = C / largest;
    if (ratio > 1000)
        add_warning(xp, FIT_XP_WARN_VERY_FAR | FIT_XP_WARN_FAR,
                    "compute %.3g is %.0fx the largest run: far beyond the data, treat the "
                    "intervals as optimistic",
                    C, ratio);
    else if (ratio > xp->o.far_factor)
        add_warning(xp, FIT_XP_WARN_FAR, "compute %.3g is %.0fx the largest run (%.3g)", C, ratio,
                    largest);
    else if (ratio < 1)
        add_warning(xp, FIT_XP_WARN_BELOW,
                    "compute %.3g is below the largest run (%.3g): an interpolation", C, largest);
    if (xp->n_front < 4)
        add_warning(xp, FIT_XP_WARN_FEW_FRONT, "only %zu Pareto groups: the front laws are weak",
                    xp->n_front);

    fit_xp_method want = xp->o.method;
    if (want == FIT_XP_METHOD_AUTO)
        want = model_possible(xp) ? FIT_XP_METHOD_MODEL : FIT_XP_METHOD_FRONT;
    if (want == FIT_XP_METHOD_MODEL) {
        if (!model_possible(xp)) {
            add_warning(xp, FIT_XP_WARN_NO_MODEL,
                        "the model needs a learning rate, a minimised positive objective and 12 "
                        "successful runs with N and D: used the front");
            want = FIT_XP_METHOD_FRONT;
        } else {
            s = xp_model_fit(xp);
            if (s == ST_OK) {
                xp->has_model = 1;
                s = xp_model_recommend(xp, C);
            }
            if (s == ST_ENOMEM)
                return s;
            if (s != ST_OK) {
                add_warning(xp, FIT_XP_WARN_NO_MODEL, "the model failed (%s): used the front",
                            xp->err);
                xp_clear_err(xp);
                want = FIT_XP_METHOD_FRONT;
            }
        }
    }
    if (want == FIT_XP_METHOD_FRONT) {
        s = xp_front_recommend_fill(xp, C);
        if (s != ST_OK)
            return s;
        if (xp->res.warnings & FIT_XP_WARN_BOUND)
            add_warning(xp, 0, "a recommended value was clamped to its bound");
    }
    xp->res.value = xp->rec;
    xp->res.lo = xp->rec_lo;
    xp->res.hi = xp->rec_hi;
    xp->res.warning_text = xp->warn_text;
    xp->done = 1;
    return ST_OK;
}

void xp_add_warning(fit_xp *xp, unsigned bit, const char *text)
{
    add_warning(xp, bit, "%s", text);
}

st_status fit_xp_get_result(const fit_xp *xp, fit_xp_result *r)
{
    if (!xp || !r)
        return ST_EINVAL;
    if (!xp->done)
        return ST_ESTATE;
    *r = xp->res;
    return ST_OK;
}

size_t fit_xp_n_params(const fit_xp *xp)
{
    return xp ? xp->P : 0;
}
const char *fit_xp_param_name(const fit_xp *xp, size_t i)
{
    return xp && i < xp->P ? xp->par[i].name : NULL;
}
fit_xp_role fit_xp_param_role(const fit_xp *xp, size_t i)
{
    return xp && i < xp->P ? xp->role[i] : FIT_XP_OTHER;
}
