/*
 * extrapolate_front_boundary.c — the stability boundary that the FRONT recommendation is held to:
 * a logistic model of P(failed) in the learning rate's basic coordinate and ln cost, fitted on
 * every run (hyperparameter failures only; the caller filters) and a prior of pseudo-failures
 * just above the largest learning rate that succeeded, bootstrapped over the runs. It lowers the
 * recommended learning rate until P(diverge) <= max_p_diverge, reports P(diverge) and says when
 * the engine cannot vouch for the result (res.safe). Not here: the front and its laws
 * (extrapolate_front.c), the MODEL's own boundary (extrapolate_model.c).
 * Method: docs/algorithms/extrapolation.md section 1.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_multifit.h>

#include "fit/extrapolate_int.h"

#define FB_PRIOR_LR   0.5  /* pseudo-failure at e^0.5 (1.65x) the largest lr that succeeded */
#define FB_PRIOR_BINS 4    /* ... in each of up to 4 groups of runs by ln cost */
#define FB_RIDGE      0.1  /* Gaussian prior on the two slopes: 0.5 FB_RIDGE g^2 */
#define FB_LOWER_SAFE 1.0  /* lowering the lr more than e^1 below the law: cannot vouch */
#define FB_SCAN       9.21 /* the lowering searches down to e^-9.21 (1e-4) x the law's lr */
#define FB_STEP       0.01 /* ... in steps of 1% */

/* Rows of the logistic: covariates z = (b_lr - m_lr, ln cost - m_lc), label y, weight w. */
typedef struct fb_rows {
    size_t n;
    double *z1, *z2, *w;
    int *y;
} fb_rows;

static double sigmoid(double eta)
{
    return eta >= 0 ? 1 / (1 + exp(-eta)) : exp(eta) / (1 + exp(eta));
}

/* Penalised negative log-likelihood of g on rows (weights w). */
static double fb_nll(const fb_rows *r, const double g[3])
{
    double f = 0.5 * FB_RIDGE * (g[1] * g[1] + g[2] * g[2]) + 0.5e-4 * g[0] * g[0];
    for (size_t t = 0; t < r->n; t++) {
        if (r->w[t] == 0)
            continue;
        double eta = g[0] + g[1] * r->z1[t] + g[2] * r->z2[t];
        double sp = eta > 0 ? eta + log1p(exp(-eta)) : log1p(exp(eta)); /* -ln(1 - p) */
        f += r->w[t] * (sp - (r->y[t] ? eta : 0));
    }
    return f;
}

/* Solves H d = G (k × k, k <= 3, positive definite) by Cholesky. Returns 0 if not definite. */
static int solve_spd(int k, double H[3][3], const double G[3], double d[3])
{
    double L[3][3] = {{0}}, y[3];
    for (int a = 0; a < k; a++)
        for (int b = 0; b <= a; b++) {
            double s = H[a][b];
            for (int m = 0; m < b; m++)
                s -= L[a][m] * L[b][m];
            if (a == b) {
                if (!(s > 0))
                    return 0;
                L[a][a] = sqrt(s);
            } else {
                L[a][b] = s / L[b][b];
            }
        }
    for (int a = 0; a < k; a++) {
        double s = G[a];
        for (int m = 0; m < a; m++)
            s -= L[a][m] * y[m];
        y[a] = s / L[a][a];
    }
    for (int a = k - 1; a >= 0; a--) {
        double s = y[a];
        for (int m = a + 1; m < k; m++)
            s -= L[m][a] * d[m];
        d[a] = s / L[a][a];
    }
    return 1;
}

/* Newton's method with step halving on fb_nll (convex: a unique minimum) over g[0..k-1], the
 * others held. g: start in, fit out. Returns 1 on convergence. */
static int fb_newton(const fb_rows *r, double g[3], int k)
{
    double f = fb_nll(r, g);
    for (int it = 0; it < 100; it++) {
        double G[3] = {1e-4 * g[0], FB_RIDGE * g[1], FB_RIDGE * g[2]};
        double H[3][3] = {{1e-4, 0, 0}, {0, FB_RIDGE, 0}, {0, 0, FB_RIDGE}}, d[3] = {0};
        for (size_t t = 0; t < r->n; t++) {
            if (r->w[t] == 0)
                continue;
            double x[3] = {1, r->z1[t], r->z2[t]};
            double p = sigmoid(g[0] + g[1] * x[1] + g[2] * x[2]);
            double e = r->w[t] * (p - (r->y[t] ? 1 : 0)), h = r->w[t] * p * (1 - p);
            for (int a = 0; a < 3; a++) {
                G[a] += e * x[a];
                for (int b = 0; b < 3; b++)
                    H[a][b] += h * x[a] * x[b];
            }
        }
        if (!solve_spd(k, H, G, d))
            return 0;
        double step = 1, gn[3], fn = f;
        for (int h = 0; h < 40; h++, step *= 0.5) {
            for (int a = 0; a < 3; a++)
                gn[a] = g[a] - step * d[a];
            fn = fb_nll(r, gn);
            if (fn <= f)
                break;
        }
        if (!(fn <= f))
            return isfinite(f); /* no descent left: at the minimum within roundoff */
        double dec = f - fn;
        memcpy(g, gn, 3 * sizeof(double));
        f = fn;
        if (dec < 1e-12 * (1 + fabs(f)))
            return 1;
    }
    return isfinite(f);
}

/* The boundary's fit: g2 (the slope in ln cost) is constrained to >= 0, a larger run does not
 * tolerate a larger learning rate than a smaller one. The objective is convex, so the constrained
 * minimum is the free one when its g2 >= 0, else the minimum with g2 = 0. */
static int fb_fit(const fb_rows *r, double g[3])
{
    double g0[3];
    memcpy(g0, g, sizeof(g0));
    if (fb_newton(r, g, 3) && g[2] >= 0)
        return 1;
    memcpy(g, g0, sizeof(g0));
    g[2] = 0;
    return fb_newton(r, g, 2);
}

/* ln cost of every run into lc (n). A successful run's is its own; a failed run's recorded cost
 * is partial (it stopped when it diverged), so it is predicted from its parameters other than the
 * learning rate by least squares on the successful runs (GSL multifit), kept within e^±2.3 of
 * their range; with too few runs for that, its recorded cost, else the successes' mean. */
static st_status fb_lncost(fit_xp *xp, double *lc)
{
    size_t n = xp->n, P = xp->P, n_ok = 0, cols[64], nc = 0;
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        lc[i] = xp->failed[i] ? NAN : log(xp->cost[i]);
        if (!xp->failed[i]) {
            n_ok++;
            sum += lc[i];
            lo = fmin(lo, lc[i]);
            hi = fmax(hi, lc[i]);
        }
    }
    /* columns: the parameters (not the lr) that vary among the successful runs */
    for (size_t j = 0; j < P; j++) {
        double bmin = INFINITY, bmax = -INFINITY;
        for (size_t i = 0; i < n; i++)
            if (!xp->failed[i]) {
                bmin = fmin(bmin, xp->b[i * P + j]);
                bmax = fmax(bmax, xp->b[i * P + j]);
            }
        if (j != xp->fb_lr && bmax > bmin)
            cols[nc++] = j;
    }
    double coef[65];
    int have_reg = 0;
    if (nc && n_ok >= nc + 3) {
        gsl_matrix *X = gsl_matrix_alloc(n_ok, nc + 1);
        gsl_vector *y = gsl_vector_alloc(n_ok), *c = gsl_vector_alloc(nc + 1);
        gsl_matrix *cov = gsl_matrix_alloc(nc + 1, nc + 1);
        gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(n_ok, nc + 1);
        if (!X || !y || !c || !cov || !ws) {
            gsl_matrix_free(X);
            gsl_vector_free(y);
            gsl_vector_free(c);
            gsl_matrix_free(cov);
            gsl_multifit_linear_free(ws);
            return xp_fail(xp, ST_ENOMEM, "out of memory");
        }
        size_t r = 0;
        for (size_t i = 0; i < n; i++) {
            if (xp->failed[i])
                continue;
            gsl_matrix_set(X, r, 0, 1);
            for (size_t k = 0; k < nc; k++)
                gsl_matrix_set(X, r, k + 1, xp->b[i * P + cols[k]]);
            gsl_vector_set(y, r, lc[i]);
            r++;
        }
        double chisq;
        if (gsl_multifit_linear(X, y, c, cov, &chisq, ws) == 0) {
            have_reg = 1;
            for (size_t k = 0; k <= nc; k++)
                coef[k] = gsl_vector_get(c, k);
        }
        gsl_matrix_free(X);
        gsl_vector_free(y);
        gsl_vector_free(c);
        gsl_matrix_free(cov);
        gsl_multifit_linear_free(ws);
    } else if (!nc && n_ok) {
        have_reg = 1; /* nothing varies but the lr: every run costs about the same */
        coef[0] = sum / (double)n_ok;
    }
    for (size_t i = 0; i < n; i++) {
        if (!xp->failed[i])
            continue;
        double v = NAN;
        if (have_reg) {
            v = coef[0];
            for (size_t k = 0; k < nc; k++)
                v += coef[k + 1] * xp->b[i * P + cols[k]];
            v = fmin(fmax(v, lo - 2.3), hi + 2.3);
        }
        if (!isfinite(v) && isfinite(xp->cost[i]) && xp->cost[i] > 0)
            v = log(xp->cost[i]);
        if (!isfinite(v))
            v = sum / (double)n_ok;
        lc[i] = v;
    }
    return ST_OK;
}

static int cmp_key(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return x[0] < y[0] ? -1 : (x[0] > y[0]) ? 1 : (x[1] > y[1]) - (x[1] < y[1]);
}

/* The prior: the successful runs sorted by ln cost are split into up to FB_PRIOR_BINS groups of
 * equal size; in each, a pseudo-run at e^FB_PRIOR_LR times the largest learning rate that
 * succeeded in it or in a costlier group (a costlier run that trained says a cheaper one would
 * too, as the fit assumes), at the group's median ln cost, counts as failed. Appends to rows
 * (absolute covariates, centred later); returns how many were added. */
static size_t fb_prior_rows(const fit_xp *xp, const double *lc, fb_rows *rows, double *key)
{
    size_t n = xp->n, P = xp->P, m = 0, added = 0;
    const fit_xp_param *par = &xp->par[xp->fb_lr];
    for (size_t i = 0; i < n; i++)
        if (!xp->failed[i]) {
            key[2 * m] = lc[i];
            key[2 * m + 1] = (double)i;
            m++;
        }
    qsort(key, m, 2 * sizeof(double), cmp_key);
    size_t bins = m / 3 < FB_PRIOR_BINS ? m / 3 : FB_PRIOR_BINS;
    if (bins < 1)
        bins = 1;
    double b_env = -INFINITY; /* largest lr coordinate that succeeded in this group or above */
    for (size_t k = bins; k-- > 0;) {
        size_t a = k * m / bins, e = (k + 1) * m / bins;
        for (size_t t = a; t < e; t++)
            b_env = fmax(b_env, xp->b[(size_t)key[2 * t + 1] * P + xp->fb_lr]);
        double v = xp_from_basic(par->space, b_env) * exp(FB_PRIOR_LR);
        double bv = xp_to_basic(par->space, v);
        if (!isfinite(bv) || e == a)
            continue;
        size_t t = rows->n++;
        rows->z1[t] = bv;
        rows->z2[t] = key[2 * ((a + e) / 2)];
        rows->y[t] = 1;
        rows->w[t] = 1;
        added++;
    }
    return added;
}

void xp_front_boundary_clear(fit_xp *xp)
{
    free(xp->fb_g_rep);
    xp->fb_g_rep = NULL;
    xp->fb_n_rep = xp->fb_n_fail = xp->fb_n_prior = 0;
    xp->fb_ok = 0;
    xp->fb_lr = (size_t)-1;
}

/* Fits the boundary on rows (covariates centred here) and its run-bootstrap replicates. */
static st_status fb_fit_all(fit_xp *xp, fb_rows *rows, size_t n_real)
{
    double s1 = 0, s2 = 0;
    for (size_t t = 0; t < n_real; t++) {
        s1 += rows->z1[t];
        s2 += rows->z2[t];
    }
    xp->fb_m_lr = s1 / (double)n_real;
    xp->fb_m_lc = s2 / (double)n_real;
    for (size_t t = 0; t < rows->n; t++) {
        rows->z1[t] -= xp->fb_m_lr;
        rows->z2[t] -= xp->fb_m_lc;
    }
    size_t n_fail = xp->fb_n_fail + xp->fb_n_prior;
    double g[3] = {log((double)n_fail / (double)(rows->n - n_fail + 1)), 1, 0};
    if (!fb_fit(rows, g))
        return ST_OK; /* fb_ok stays 0: reported as unsafe */
    memcpy(xp->fb_g, g, sizeof(g));
    xp->fb_ok = 1;

    /* bootstrap: resample the real runs (multiplicities as weights), the prior's rows fixed */
    size_t R = xp->o.n_boot;
    xp->fb_g_rep = malloc((R ? R : 1) * 3 * sizeof(double));
    st_rng *rng = NULL;
    if (!xp->fb_g_rep || st_rng_create(xp->o.seed + 2, &rng) != ST_OK)
        return xp_fail(xp, ST_ENOMEM, "out of memory");
    for (size_t r = 0; r < R; r++) {
        for (size_t t = 0; t < n_real; t++)
            rows->w[t] = 0;
        for (size_t t = 0; t < n_real; t++)
            rows->w[st_rng_uniform_int(rng, n_real)] += 1;
        double gr[3];
        memcpy(gr, xp->fb_g, sizeof(gr));
        if (fb_fit(rows, gr))
            memcpy(&xp->fb_g_rep[3 * xp->fb_n_rep++], gr, sizeof(gr));
    }
    st_rng_destroy(rng);
    if (!xp->fb_n_rep) {
        memcpy(xp->fb_g_rep, xp->fb_g, sizeof(xp->fb_g));
        xp->fb_n_rep = 1;
    }
    return ST_OK;
}

st_status xp_front_boundary_fit(fit_xp *xp)
{
    xp_front_boundary_clear(xp);
    for (size_t j = 0; j < xp->P && xp->fb_lr == (size_t)-1; j++)
        if (xp->role[j] == FIT_XP_LR)
            xp->fb_lr = j;
    for (size_t i = 0; i < xp->n; i++)
        xp->fb_n_fail += (size_t)(xp->failed[i] != 0);
    if (xp->fb_lr == (size_t)-1)
        return ST_OK;
    size_t n = xp->n, cap = n + FB_PRIOR_BINS;
    fb_rows rows = {0, malloc(cap * sizeof(double)), malloc(cap * sizeof(double)),
                    malloc(cap * sizeof(double)), malloc(cap * sizeof(int))};
    double *lc = malloc(n * sizeof(double)), *key = malloc(2 * n * sizeof(double));
    st_status s = ST_OK;
    if (!rows.z1 || !rows.z2 || !rows.w || !rows.y || !lc || !key)
        s = xp_fail(xp, ST_ENOMEM, "out of memory");
    if (s == ST_OK)
        s = fb_lncost(xp, lc);
    if (s == ST_OK) {
        for (size_t i = 0; i < n; i++) {
            rows.z1[i] = xp->b[i * xp->P + xp->fb_lr];
            rows.z2[i] = lc[i];
            rows.y[i] = xp->failed[i] != 0;
            rows.w[i] = 1;
        }
        rows.n = n;
        xp->fb_n_prior = fb_prior_rows(xp, lc, &rows, key);
        s = fb_fit_all(xp, &rows, n);
    }
    free(rows.z1);
    free(rows.z2);
    free(rows.w);
    free(rows.y);
    free(lc);
    free(key);
    return s;
}

/* P(diverge) at learning-rate coordinate b and ln cost lc: the mean over the replicates. */
static double fb_p(const fit_xp *xp, double b, double lc)
{
    double s = 0;
    for (size_t r = 0; r < xp->fb_n_rep; r++) {
        const double *g = &xp->fb_g_rep[3 * r];
        s += sigmoid(g[0] + g[1] * (b - xp->fb_m_lr) + g[2] * (lc - xp->fb_m_lc));
    }
    return s / (double)xp->fb_n_rep;
}

/* The largest shift s in [-FB_SCAN, 0] (steps of FB_STEP, not below b_min - b) with
 * P(b + s, lc) <= pmax; *found = 0 and the shift of the smallest P when there is none. */
static double fb_lower(const fit_xp *xp, double b, double lc, double b_min, int *found)
{
    double best_s = 0, best_p = INFINITY;
    *found = 0;
    for (double s = 0; s >= -FB_SCAN && b + s >= b_min; s -= FB_STEP) {
        double p = fb_p(xp, b + s, lc);
        if (p <= xp->o.max_p_diverge) {
            *found = 1;
            return s;
        }
        if (p < best_p) {
            best_p = p;
            best_s = s;
        }
    }
    return best_s;
}

/* The runs that would resolve an unsafe result: learning rates around where the front's law and
 * the boundary put them at the largest successful run's cost. */
static void fb_unsafe_runs(fit_xp *xp, const char *why)
{
    size_t j = xp->fb_lr;
    const fit_xp_param *par = &xp->par[j];
    double lcL = log(xp->res.largest_cost);
    double b_law = xp->front_law_ok[j] ? xp->front_coef[2 * j] + xp->front_coef[2 * j + 1] * lcL
                                       : xp->b[xp->front_run[xp->n_front - 1] * xp->P + j];
    double b_top = b_law;
    for (size_t i = 0; i < xp->n; i++)
        b_top = fmax(b_top, xp->b[i * xp->P + j]);
    int found;
    double b_bnd = b_top + FB_PRIOR_LR + fb_lower(xp, b_top + FB_PRIOR_LR, lcL, -INFINITY, &found);
    double lo = xp_from_basic(par->space, fmin(b_law, b_bnd) - 0.5);
    double hi = xp_from_basic(par->space, fmax(b_law, b_bnd) + 0.5);
    snprintf(xp->unsafe_text, sizeof(xp->unsafe_text),
             "%s; to resolve it, run %s between %.3g and %.3g at the largest run's cost (%.3g), "
             "other parameters as in the front's largest run",
             why, par->name, fmin(lo, hi), fmax(lo, hi), xp->res.largest_cost);
}

/* No learning rate: P(diverge) is unknown; safe only when no run failed. */
static void fb_no_lr(fit_xp *xp)
{
    xp->res.p_diverge = NAN;
    xp->res.safe = xp->fb_n_fail == 0;
    if (!xp->res.safe) {
        snprintf(xp->unsafe_text, sizeof(xp->unsafe_text),
                 "%zu runs failed and no parameter is a learning rate (role lr): the engine cannot "
                 "tell which settings diverge; give the learning rate's parameter the role lr",
                 xp->fb_n_fail);
        xp_add_warning(xp, 0, xp->unsafe_text);
    }
}

st_status xp_front_boundary_apply(fit_xp *xp, double C)
{
    xp->unsafe_text[0] = '\0';
    xp->res.unsafe_reason = xp->unsafe_text;
    if (xp->fb_lr == (size_t)-1) {
        fb_no_lr(xp);
        return ST_OK;
    }
    size_t j = xp->fb_lr;
    const fit_xp_param *par = &xp->par[j];
    char msg[512];
    if (!xp->fb_ok || !isfinite(xp_to_basic(par->space, xp->rec[j]))) {
        xp->res.p_diverge = NAN;
        xp->res.safe = 0;
        fb_unsafe_runs(xp, "the front's stability boundary could not be fitted");
        xp_add_warning(xp, 0, xp->unsafe_text);
        return ST_OK;
    }
    double lc = log(C), b0 = xp_to_basic(par->space, xp->rec[j]);
    double b_min = isfinite(par->min) ? xp_to_basic(par->space, par->min) : -INFINITY;
    if (isnan(b_min))
        b_min = -INFINITY;
    double p0 = fb_p(xp, b0, lc), s = 0;
    int found = 1;
    if (p0 > xp->o.max_p_diverge) {
        s = fb_lower(xp, b0, lc, b_min, &found);
        double v0 = xp->rec[j];
        xp->rec[j] = xp_finish_value(xp, j, xp_from_basic(par->space, b0 + s), NULL);
        xp->rec_lo[j] = xp_finish_value(
            xp, j, xp_from_basic(par->space, xp_to_basic(par->space, xp->rec_lo[j]) + s), NULL);
        xp->rec_hi[j] = xp_finish_value(
            xp, j, xp_from_basic(par->space, xp_to_basic(par->space, xp->rec_hi[j]) + s), NULL);
        snprintf(msg, sizeof(msg),
                 "%s lowered from the front's law %.3g to %.3g: P(diverge) there was %.3f, above "
                 "max_p_diverge %.3g",
                 par->name, v0, xp->rec[j], p0, xp->o.max_p_diverge);
        xp_add_warning(xp, 0, msg);
    }
    double p = fb_p(xp, xp_to_basic(par->space, xp->rec[j]), lc);
    xp->res.p_diverge = p;
    xp->res.safe = 1;
    if (xp->fb_n_fail == 0)
        xp_add_warning(xp, FIT_XP_WARN_FEW_FAILED,
                       "no failed run: p_diverge comes from a prior (runs at 1.65x the largest "
                       "learning rate that succeeded at their cost are assumed to diverge)");
    if (!found || p > xp->o.max_p_diverge) {
        xp->res.safe = 0;
        xp->res.warnings |= FIT_XP_WARN_P_DIVERGE;
        snprintf(msg, sizeof(msg),
                 "P(diverge) %.3f above max_p_diverge %.3g even at %s = %.3g, the lowest allowed",
                 p, xp->o.max_p_diverge, par->name, xp->rec[j]);
    } else if (s < -FB_LOWER_SAFE) {
        xp->res.safe = 0;
        snprintf(msg, sizeof(msg),
                 "the stability boundary holds %s %.1fx below the front's law at compute %.3g: "
                 "the two disagree, so the engine cannot vouch for either",
                 par->name, exp(-s), C);
    }
    if (!xp->res.safe) {
        fb_unsafe_runs(xp, msg);
        xp_add_warning(xp, 0, xp->unsafe_text);
    }
    return ST_OK;
}
