/*
 * extrapolate_front.c — CARBS' front analysis: the Pareto front of objective against cost (groups
 * of runs with identical parameters), each parameter's basic coordinate regressed on ln cost along
 * it by OLS, a saturating power law of the objective, a bootstrap over Pareto groups, and the
 * FRONT recommendation. Not here: the stability boundary that the recommendation is held to
 * (extrapolate_front_boundary.c), the handle and the choice of method (extrapolate.c).
 * Method and references: docs/algorithms/extrapolation.md section 1.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_fit.h>

#include "fit/extrapolate_int.h"
#include "fit/fit_int.h"

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

st_status xp_front(fit_xp *xp)
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
        /* a group at the same cost as the last point and better dominates it: it replaces it
         * (ties in cost, such as a sweep whose runs all cost the same, keep only the best) */
        if (nf > 0 && g[k].cost == xp->front_cost[nf - 1])
            nf--;
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

st_status xp_front_laws(fit_xp *xp)
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
st_status xp_front_recommend_fill(fit_xp *xp, double C)
{
    size_t P = xp->P;
    xp_clamp_reset(xp);
    double *tmp = malloc(3 * sizeof(double));
    if (!tmp)
        return xp_fail(xp, ST_ENOMEM, "out of memory");
    for (size_t j = 0; j < P; j++) {
        if (xp->front_law_ok[j] &&
            fit_xp_front_curve(xp, j, 1, &C, &tmp[0], &tmp[1], &tmp[2]) == ST_OK) {
            xp->rec[j] = xp_finish_rec(xp, j, tmp[0]);
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
    if (xp->clamp_names[0])
        xp->res.warnings |= FIT_XP_WARN_BOUND;
    return ST_OK;
}
