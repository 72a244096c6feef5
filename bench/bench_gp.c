/*
 * bench_gp.c — timings of carbs/gp.c and gp_predict.c: gp_fit (recommended: MAP by L-BFGS, 3
 * starts, subset of 256 points) at a few (n, D), gp_factor alone as the same-run baseline, and
 * gp_predict of 1000 points at n = 1000, D = 10 with and without the variance. Prints ms and ratios
 * to gp_factor. Build: make build/bench/bench_gp (linked with the static library).
 */
#include "carbs/carbs_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static void data(st_rng *r, size_t n, size_t d, double *X, double *y)
{
    for (size_t i = 0; i < n * d; i++)
        X[i] = 2 * st_rng_uniform(r) - 1;
    for (size_t i = 0; i < n; i++)
        y[i] = sin(3 * X[i * d]) + 0.3 * X[i * d + d - 1] + 0.1 * st_rng_gaussian(r);
}

static void bench_fit(size_t n, size_t d, int reps)
{
    st_rng *r;
    gp *g;
    double *X = malloc(n * d * sizeof(double)), *y = malloc(n * sizeof(double));
    if (st_rng_create(1, &r) != ST_OK || gp_create(GP_KERNEL_LIN_MATERN32, d, &g) != ST_OK)
        exit(1);
    data(r, n, d, X, y);
    gp_set_data(g, n, X, y);
    gp_fit_opts o = gp_fit_opts_default();
    double t0 = now_ms();
    for (int k = 0; k < reps; k++)
        if (gp_fit(g, &o, r) != ST_OK)
            exit(1);
    double t_fit = (now_ms() - t0) / reps;
    t0 = now_ms();
    for (int k = 0; k < reps; k++) {
        double th[32];
        gp_get_theta(g, th);
        gp_set_theta(g, th);
        gp_factor(g);
    }
    double t_fac = (now_ms() - t0) / reps;
    printf("gp_fit  n=%4zu D=%2zu: %9.2f ms   (gp_factor %7.2f ms, ratio %6.1f)\n", n, d, t_fit,
           t_fac, t_fit / t_fac);
    gp_destroy(g);
    st_rng_destroy(r);
    free(X);
    free(y);
}

static void bench_predict(size_t n, size_t d, size_t m, int reps)
{
    st_rng *r;
    gp *g;
    double *X = malloc(n * d * sizeof(double)), *y = malloc(n * sizeof(double));
    double *Xs = malloc(m * d * sizeof(double)), *mu = malloc(m * sizeof(double));
    double *var = malloc(m * sizeof(double));
    if (st_rng_create(2, &r) != ST_OK || gp_create(GP_KERNEL_LIN_MATERN32, d, &g) != ST_OK)
        exit(1);
    data(r, n, d, X, y);
    data(r, m, d, Xs, mu);
    gp_set_data(g, n, X, y);
    if (gp_factor(g) != ST_OK)
        exit(1);
    gp_predict(g, m, Xs, mu, var); /* warm-up: workspace allocation */
    double t0 = now_ms();
    for (int k = 0; k < reps; k++)
        gp_predict(g, m, Xs, mu, NULL);
    double t_mean = (now_ms() - t0) / reps;
    t0 = now_ms();
    for (int k = 0; k < reps; k++)
        gp_predict(g, m, Xs, mu, var);
    double t_var = (now_ms() - t0) / reps;
    printf("gp_predict m=%zu n=%zu D=%zu: mean only %.2f ms, mean+var %.2f ms (ratio %.1f)\n", m, n,
           d, t_mean, t_var, t_var / t_mean);
    gp_destroy(g);
    st_rng_destroy(r);
    free(X);
    free(y);
    free(Xs);
    free(mu);
    free(var);
}

int main(void)
{
    bench_fit(30, 2, 20);
    bench_fit(300, 10, 3);
    bench_fit(1000, 10, 2);
    bench_predict(1000, 10, 1000, 10);
    return 0;
}
