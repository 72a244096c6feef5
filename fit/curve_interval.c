/*
 * curve_interval.c — intervals for a loss curve's extrapolation (fit/curve.h): a block wild
 * bootstrap of the residuals of one run (Shao 2010, "The dependent wild bootstrap"; Wu 1986)
 * widened by the law's errors measured on finished runs of
 * the same sweep at the same cut (or a conservative default). What the early-stopping rules of
 * the runner and of study/ use to say "this run cannot reach the front". Not the fit itself
 * (curve.c). Depends on curve.c and common/ (the RNG).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit/curve.h"

fit_curve_interval_options fit_curve_interval_options_default(void)
{
    fit_curve_interval_options o;
    memset(&o, 0, sizeof(o));
    o.level = 0.9;
    o.n_boot = 200;
    o.block = 0;
    o.seed = 42;
    o.err_min = o.err_max = NAN;
    return o;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Quantile q in [0, 1] of sorted v (n > 0), linear between order statistics. */
static double quantile(const double *v, size_t n, double q)
{
    double h = q * (double)(n - 1);
    size_t i = (size_t)floor(h);
    if (i + 1 >= n)
        return v[n - 1];
    return v[i] + (h - (double)i) * (v[i + 1] - v[i]);
}

/* One resample of the block wild bootstrap: each residual stays at its own point (the noise of
 * a run's early points is larger than of its late ones) and is multiplied by a sign drawn once
 * per block of `block` consecutive points (which keeps their correlation). */
static void resample(st_rng *rng, const double *fitted, const double *resid, size_t n, size_t block,
                     double *y_star)
{
    double w = 1;
    for (size_t k = 0; k < n; k++) {
        if (k % block == 0)
            w = st_rng_uniform(rng) < 0.5 ? -1.0 : 1.0;
        y_star[k] = fitted[k] + w * resid[k];
    }
}

/* The fitted loss at each point (n) and at `step`, from the schedule's areas. */
static st_status fitted_values(const fit_curve_law *law, const double *lr, size_t n_steps,
                               double lambda, const size_t *steps, size_t n, double *fitted,
                               char *err)
{
    double *S = malloc(2 * n_steps * sizeof(double));
    if (!S)
        return st_errf(err, ST_ENOMEM, "curve interval: out of memory");
    st_status s = fit_curve_areas(lr, n_steps, lambda, S, S + n_steps, err);
    for (size_t k = 0; s == ST_OK && k < n; k++)
        fitted[k] = fit_curve_eval(law, S[steps[k] - 1], S[n_steps + steps[k] - 1]);
    free(S);
    return s;
}

static st_status check_interval_args(const fit_curve_interval_options *io, size_t n_steps,
                                     size_t step, char *err)
{
    if (!io || !(io->level > 0 && io->level < 1) || io->n_boot < 10)
        return st_errf(err, ST_EINVAL, "curve interval: level in (0, 1) and n_boot >= 10");
    if (isnan(io->err_min) != isnan(io->err_max) ||
        (!isnan(io->err_min) &&
         !(io->err_min > -1 && io->err_min <= io->err_max && isfinite(io->err_max))))
        return st_errf(err, ST_EINVAL, "curve interval: errors [%g, %g] are not -1 < min <= max",
                       io->err_min, io->err_max);
    if (step < 1 || step > n_steps)
        return st_errf(err, ST_EINVAL, "curve interval: step %zu is outside 1..%zu", step, n_steps);
    return ST_OK;
}

/* The bootstrap's predictions at `step` into boot (n_boot); *n_ok of them succeeded. */
static st_status bootstrap(const double *lr, size_t n_steps, const size_t *steps,
                           const double *fitted, const double *resid, size_t n,
                           const fit_curve_options *opts, const fit_curve_interval_options *io,
                           size_t step, double *boot, size_t *n_ok, char *err)
{
    size_t block = io->block ? io->block : (size_t)fmax(1.0, round(cbrt((double)n)));
    if (block > n)
        block = n;
    double *y = malloc(n * sizeof(double));
    st_rng *rng = NULL;
    if (!y || st_rng_create(io->seed, &rng) != ST_OK) {
        free(y);
        return st_errf(err, ST_ENOMEM, "curve interval: out of memory");
    }
    st_status s = ST_OK;
    *n_ok = 0;
    for (size_t b = 0; b < io->n_boot && s != ST_ENOMEM; b++) {
        resample(rng, fitted, resid, n, block, y);
        fit_curve_law law;
        double p;
        s = fit_curve_fit(lr, n_steps, steps, y, n, opts, &law, NULL, NULL);
        if (s == ST_OK)
            s = fit_curve_predict(&law, lr, n_steps, opts->lambda, step, &p, NULL);
        if (s == ST_OK && isfinite(p))
            boot[(*n_ok)++] = p;
    }
    st_rng_destroy(rng);
    free(y);
    return s == ST_ENOMEM ? st_errf(err, ST_ENOMEM, "curve interval: out of memory") : ST_OK;
}

st_status fit_curve_predict_interval(const double *lr, size_t n_steps, const size_t *steps,
                                     const double *loss, size_t n_points,
                                     const fit_curve_options *opts,
                                     const fit_curve_interval_options *io, size_t step,
                                     double *pred, double *lo, double *hi, char *err)
{
    char tmp[ST_ERRMSG_MAX];
    if (!err)
        err = tmp;
    st_status s = check_interval_args(io, n_steps, step, err);
    if (s != ST_OK)
        return s;
    fit_curve_law law;
    if ((s = fit_curve_fit(lr, n_steps, steps, loss, n_points, opts, &law, NULL, err)) != ST_OK)
        return s;
    double *fitted = malloc((2 * n_points + io->n_boot) * sizeof(double));
    if (!fitted)
        return st_errf(err, ST_ENOMEM, "curve interval: out of memory");
    double *resid = fitted + n_points, *boot = resid + n_points;
    size_t n_ok = 0;
    s = fitted_values(&law, lr, n_steps, opts->lambda, steps, n_points, fitted, err);
    if (s == ST_OK)
        s = fit_curve_predict(&law, lr, n_steps, opts->lambda, step, pred, err);
    for (size_t k = 0; s == ST_OK && k < n_points; k++)
        resid[k] = loss[k] - fitted[k];
    if (s == ST_OK)
        s = bootstrap(lr, n_steps, steps, fitted, resid, n_points, opts, io, step, boot, &n_ok,
                      err);
    if (s == ST_OK && 2 * n_ok < io->n_boot)
        s = st_errf(err, ST_ENUMERIC, "curve interval: %zu of %zu bootstrap refits failed",
                    io->n_boot - n_ok, io->n_boot);
    if (s == ST_OK) {
        qsort(boot, n_ok, sizeof(double), cmp_double);
        int dflt = isnan(io->err_min);
        double e_lo = dflt ? -FIT_CURVE_MISFIT_DEFAULT : io->err_min;
        double e_hi = dflt ? FIT_CURVE_MISFIT_DEFAULT : io->err_max;
        double a = 0.5 * (1.0 - io->level);
        /* the point prediction stays inside even when the bootstrap is skewed away from it;
         * predicted = actual (1 + e): the actual is the prediction / (1 + e) */
        *lo = fmin(quantile(boot, n_ok, a), *pred) / (1 + e_hi);
        *hi = fmax(quantile(boot, n_ok, 1.0 - a), *pred) / (1 + e_lo);
        if (!(*lo > 0)) /* a loss is positive: the annealing term ran away (C free, few points) */
            s = st_errf(err, ST_ENUMERIC,
                        "curve interval: the law extrapolates to %.4g [%.4g, %.4g] at step %zu, "
                        "not a positive loss (its annealing term is not fixed by these points)",
                        *pred, *lo, *hi, step);
    }
    free(fitted);
    return s;
}

st_status fit_curve_cut_error(const double *lr, size_t n_steps, const size_t *steps,
                              const double *loss, size_t n_points, double cut,
                              const fit_curve_options *opts, double *rel_err, char *err)
{
    char tmp[ST_ERRMSG_MAX];
    if (!err)
        err = tmp;
    if (!steps || !loss || n_points < 2 || !(cut > 0 && cut < 1))
        return st_errf(err, ST_EINVAL, "curve cut error: cut %g outside (0, 1) or no points", cut);
    size_t last = steps[n_points - 1], m = 0;
    while (m < n_points - 1 && (double)steps[m] <= cut * (double)last)
        m++;
    fit_curve_law law;
    st_status s = fit_curve_fit(lr, n_steps, steps, loss, m, opts, &law, NULL, err);
    double p;
    if (s == ST_OK)
        s = fit_curve_predict(&law, lr, n_steps, opts->lambda, last, &p, err);
    if (s == ST_OK)
        *rel_err = (p - loss[n_points - 1]) / loss[n_points - 1];
    return s;
}

void fit_curve_misfit(const double *rel_err, size_t n, double *err_min, double *err_max)
{
    size_t k = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++)
        if (isfinite(rel_err[i])) {
            lo = fmin(lo, rel_err[i]);
            hi = fmax(hi, rel_err[i]);
            k++;
        }
    *err_min = *err_max = NAN;
    if (k < FIT_CURVE_MISFIT_MIN_RUNS)
        return;
    double w = (hi - lo) / (double)k + 0.005;
    *err_min = fmax(lo - w, -0.9);
    *err_max = hi + w;
}
