/*
 * curve.c — the loss-curve law of one run (Tissue et al. 2024, "Scaling Law with Learning Rate
 * Annealing", eq. 1): L(s) = L0 + A·S1^(-alpha) - C·S2 with the forward area S1 and the
 * annealing area with momentum S2 of the run's schedule. Fitted by variable projection: for a
 * fixed alpha the law is linear in (L0, A, C), solved exactly under non-negativity by trying
 * every active set (three unknowns: eight sets), and alpha is searched on a log grid refined by
 * Brent's method. Not a general nonlinear fitter (fit.c is); not the engine's use of curves.
 * Depends on GSL (multifit_linear, gsl_min).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_min.h>
#include <gsl/gsl_multifit.h>

#include "fit/curve.h"

#define N_GRID 48
#define MAX_K  3 /* unknowns of the linear part: L0, A, C */

fit_curve_options fit_curve_options_default(void)
{
    fit_curve_options o;
    memset(&o, 0, sizeof(o));
    o.lambda = 0.999;
    o.alpha_min = 0.02;
    o.alpha_max = 3.0;
    return o;
}

double fit_curve_eval(const fit_curve_law *law, double S1, double S2)
{
    return law->L0 + law->A * pow(S1, -law->alpha) - law->C * S2;
}

st_status fit_curve_areas(const double *lr, size_t n_steps, double lambda, double *S1, double *S2,
                          char *err)
{
    char tmp[ST_ERRMSG_MAX];
    if (!err)
        err = tmp;
    if (!lr || !S1 || !S2 || n_steps == 0)
        return st_errf(err, ST_EINVAL, "curve areas: empty schedule");
    if (!(lambda >= 0.0 && lambda < 1.0))
        return st_errf(err, ST_EINVAL, "curve areas: lambda %g is outside [0, 1)", lambda);
    /* Tissue et al. 2024 eq. 1: S1 = sum eta_i; S2 = sum m_i, m_i = lambda m_{i-1} +
     * (eta_{i-1} - eta_i), with eta_0 = eta_1 (no annealing before the first step) and rises
     * (warmup) counted as 0 */
    double s1 = 0.0, s2 = 0.0, m = 0.0, prev = lr[0];
    for (size_t i = 0; i < n_steps; i++) {
        if (!(lr[i] >= 0.0) || !isfinite(lr[i]))
            return st_errf(err, ST_EINVAL, "curve areas: learning rate %g at step %zu", lr[i],
                           i + 1);
        double drop = prev - lr[i];
        m = lambda * m + (drop > 0.0 ? drop : 0.0);
        s1 += lr[i];
        s2 += m;
        S1[i] = s1;
        S2[i] = s2;
        prev = lr[i];
    }
    return ST_OK;
}

/* ---- the linear part: (L0, A, C) for a fixed alpha ------------------------------------------ */

typedef struct curve_prob {
    size_t n;
    const double *s1, *s2, *y; /* n each: areas at the points, and the losses */
    int fix_C;
    double C;
    gsl_multifit_linear_workspace *ws[MAX_K + 1]; /* by number of free unknowns */
    gsl_matrix *X[MAX_K + 1];
    gsl_vector *b, *c[MAX_K + 1];
    gsl_matrix *cov[MAX_K + 1];
} curve_prob;

/* value of unknown j (0: L0, 1: A, 2: C) in the design row of point i */
static double column(const curve_prob *p, int j, size_t i, double alpha)
{
    return j == 0 ? 1.0 : (j == 1 ? pow(p->s1[i], -alpha) : -p->s2[i]);
}

/* least squares on the unknowns in `set` (a bit mask), the others 0 (C: its fixed value when
 * fix_C); returns the RSS, or HUGE_VAL when the solution is infeasible (a negative unknown) */
static double solve_set(curve_prob *p, unsigned set, double alpha, double beta[MAX_K])
{
    int cols[MAX_K], k = 0;
    for (int j = 0; j < MAX_K; j++)
        if (set & (1u << j))
            cols[k++] = j;
    double cfix = p->fix_C ? p->C : 0.0;
    for (size_t i = 0; i < p->n; i++) {
        gsl_vector_set(p->b, i, p->y[i] + cfix * p->s2[i]);
        for (int q = 0; q < k; q++)
            gsl_matrix_set(p->X[k], i, (size_t)q, column(p, cols[q], i, alpha));
    }
    beta[0] = beta[1] = 0.0;
    beta[2] = cfix;
    double rss = 0.0;
    if (k > 0) {
        if (gsl_multifit_linear(p->X[k], p->b, p->c[k], p->cov[k], &rss, p->ws[k]) != GSL_SUCCESS)
            return HUGE_VAL;
        for (int q = 0; q < k; q++) {
            beta[cols[q]] = gsl_vector_get(p->c[k], (size_t)q);
            if (!(beta[cols[q]] >= 0.0))
                return HUGE_VAL;
        }
    } else {
        for (size_t i = 0; i < p->n; i++)
            rss += gsl_vector_get(p->b, i) * gsl_vector_get(p->b, i);
    }
    return isfinite(rss) ? rss : HUGE_VAL;
}

/* the non-negative least-squares solution: the best feasible active set (exact for NNLS) */
static double solve_alpha(curve_prob *p, double alpha, double beta[MAX_K])
{
    double best = HUGE_VAL, b[MAX_K];
    unsigned all = p->fix_C ? 3u : 7u;
    for (unsigned set = 0; set <= all; set++) {
        if (set & ~all)
            continue;
        double r = solve_set(p, set, alpha, b);
        if (r < best) {
            best = r;
            memcpy(beta, b, sizeof(b));
        }
    }
    return best;
}

static double rss_of_alpha(double alpha, void *data)
{
    double beta[MAX_K];
    double r = solve_alpha(data, alpha, beta);
    return isfinite(r) ? r : 1e300;
}

static void prob_free(curve_prob *p)
{
    for (int k = 1; k <= MAX_K; k++) {
        if (p->ws[k])
            gsl_multifit_linear_free(p->ws[k]);
        gsl_matrix_free(p->X[k]);
        gsl_vector_free(p->c[k]);
        gsl_matrix_free(p->cov[k]);
    }
    gsl_vector_free(p->b);
}

static int prob_alloc(curve_prob *p)
{
    p->b = gsl_vector_alloc(p->n);
    int ok = p->b != NULL;
    for (int k = 1; k <= MAX_K; k++) {
        p->ws[k] = gsl_multifit_linear_alloc(p->n, (size_t)k);
        p->X[k] = gsl_matrix_alloc(p->n, (size_t)k);
        p->c[k] = gsl_vector_alloc((size_t)k);
        p->cov[k] = gsl_matrix_alloc((size_t)k, (size_t)k);
        ok = ok && p->ws[k] && p->X[k] && p->c[k] && p->cov[k];
    }
    return ok;
}

/* ---- alpha: log grid, then Brent inside the best grid point's bracket ----------------------- */

static double search_alpha(curve_prob *p, const fit_curve_options *o)
{
    double grid[N_GRID], f[N_GRID];
    size_t best = 0;
    for (size_t g = 0; g < N_GRID; g++) {
        grid[g] = o->alpha_min * pow(o->alpha_max / o->alpha_min, (double)g / (N_GRID - 1));
        f[g] = rss_of_alpha(grid[g], p);
        if (f[g] < f[best])
            best = g;
    }
    if (best == 0 || best == N_GRID - 1 || !(f[best] < f[best - 1] && f[best] < f[best + 1]))
        return grid[best];
    gsl_min_fminimizer *m = gsl_min_fminimizer_alloc(gsl_min_fminimizer_brent);
    if (!m)
        return grid[best];
    gsl_function fn = {rss_of_alpha, p};
    double a = grid[best];
    if (gsl_min_fminimizer_set_with_values(m, &fn, a, f[best], grid[best - 1], f[best - 1],
                                           grid[best + 1], f[best + 1]) == GSL_SUCCESS) {
        for (int it = 0; it < 100; it++) {
            if (gsl_min_fminimizer_iterate(m) != GSL_SUCCESS)
                break;
            double lo = gsl_min_fminimizer_x_lower(m), hi = gsl_min_fminimizer_x_upper(m);
            if (gsl_min_test_interval(lo, hi, 1e-10, 1e-8) == GSL_SUCCESS)
                break;
        }
        if (gsl_min_fminimizer_f_minimum(m) <= f[best])
            a = gsl_min_fminimizer_x_minimum(m);
    }
    gsl_min_fminimizer_free(m);
    return a;
}

static st_status check_fit_args(const double *lr, size_t n_steps, const size_t *steps,
                                const double *loss, size_t n_points, const fit_curve_options *o,
                                char *err)
{
    if (!lr || !steps || !loss || !o || n_steps == 0)
        return st_errf(err, ST_EINVAL, "curve fit: missing schedule or points");
    size_t need = o->fix_C ? 3 : 4;
    if (n_points < need)
        return st_errf(err, ST_EINVAL, "curve fit: %zu points, the law needs at least %zu",
                       n_points, need);
    if (!(o->alpha_min > 0 && o->alpha_max > o->alpha_min && isfinite(o->alpha_max)))
        return st_errf(err, ST_EINVAL, "curve fit: alpha range [%g, %g] is not 0 < min < max",
                       o->alpha_min, o->alpha_max);
    if (o->fix_C && !(o->C >= 0 && isfinite(o->C)))
        return st_errf(err, ST_EINVAL, "curve fit: the fixed C %g is not >= 0", o->C);
    for (size_t k = 0; k < n_points; k++) {
        if (steps[k] < 1 || steps[k] > n_steps)
            return st_errf(err, ST_EINVAL, "curve fit: point %zu is at step %zu, outside 1..%zu", k,
                           steps[k], n_steps);
        if (!isfinite(loss[k]))
            return st_errf(err, ST_EINVAL, "curve fit: loss %g at step %zu", loss[k], steps[k]);
    }
    return ST_OK;
}

st_status fit_curve_fit(const double *lr, size_t n_steps, const size_t *steps, const double *loss,
                        size_t n_points, const fit_curve_options *opts, fit_curve_law *out,
                        double *rss, char *err)
{
    char tmp[ST_ERRMSG_MAX];
    if (!err)
        err = tmp;
    st_status s = check_fit_args(lr, n_steps, steps, loss, n_points, opts, err);
    if (s != ST_OK)
        return s;
    double *S1 = malloc(n_steps * sizeof(double)), *S2 = malloc(n_steps * sizeof(double));
    double *ps = malloc(2 * n_points * sizeof(double));
    curve_prob p = {0};
    p.n = n_points;
    if (!S1 || !S2 || !ps || !prob_alloc(&p)) {
        s = st_errf(err, ST_ENOMEM, "curve fit: out of memory");
        goto out;
    }
    s = fit_curve_areas(lr, n_steps, opts->lambda, S1, S2, err);
    if (s != ST_OK)
        goto out;
    for (size_t k = 0; k < n_points; k++) {
        ps[k] = S1[steps[k] - 1];
        ps[n_points + k] = S2[steps[k] - 1];
        if (!(ps[k] > 0)) {
            s = st_errf(err, ST_EINVAL, "curve fit: no forward area at step %zu (lr 0 so far)",
                        steps[k]);
            goto out;
        }
    }
    p.s1 = ps;
    p.s2 = ps + n_points;
    p.y = loss;
    p.fix_C = opts->fix_C;
    p.C = opts->C;
    double alpha = search_alpha(&p, opts), beta[MAX_K];
    double r = solve_alpha(&p, alpha, beta);
    if (!isfinite(r)) {
        s = st_errf(err, ST_ENUMERIC, "curve fit: no finite least-squares solution");
        goto out;
    }
    out->L0 = beta[0];
    out->A = beta[1];
    out->C = beta[2];
    out->alpha = alpha;
    if (rss)
        *rss = r;
out:
    prob_free(&p);
    free(S1);
    free(S2);
    free(ps);
    return s;
}

st_status fit_curve_predict(const fit_curve_law *law, const double *lr, size_t n_steps,
                            double lambda, size_t step, double *loss, char *err)
{
    char tmp[ST_ERRMSG_MAX];
    if (!err)
        err = tmp;
    if (!law || !loss || step < 1 || step > n_steps)
        return st_errf(err, ST_EINVAL, "curve predict: step %zu is outside 1..%zu", step, n_steps);
    double *S1 = malloc(2 * n_steps * sizeof(double));
    if (!S1)
        return st_errf(err, ST_ENOMEM, "curve predict: out of memory");
    st_status s = fit_curve_areas(lr, n_steps, lambda, S1, S1 + n_steps, err);
    if (s == ST_OK && !(S1[step - 1] > 0))
        s = st_errf(err, ST_EINVAL, "curve predict: no forward area at step %zu", step);
    if (s == ST_OK)
        *loss = fit_curve_eval(law, S1[step - 1], S1[n_steps + step - 1]);
    free(S1);
    return s;
}
