/*
 * bench_fit.c — `make bench-fit`: the 4500-start Huber grid fit and a 4000-replicate bootstrap
 * on Epoch's 240 Chinchilla points, with 1 and 2 threads. Prints
 * "BENCH fit.grid_s threads=<t> <seconds>" and "BENCH fit.bootstrap_s threads=<t> <seconds>",
 * the optimum found, and the ratio to the scipy reference (32 s grid, 50 s bootstrap, measured
 * on this kind of machine; see BENCHMARKS.md: that Python peer does not run here). Also the
 * 2-thread speed-up against the 1-thread run measured in the same process.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/st.h"
#include "fit/fit.h"

#define CSV "tests/data/scaling/chinchilla_svg_extracted_data.csv"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(void)
{
    char err[ST_ERRMSG_MAX];
    fit_table *t;
    if (fit_table_read_csv(CSV, "N=Model Size,C=Training FLOP", &t, err) != ST_OK) {
        fprintf(stderr, "bench_fit: %s\n", err);
        return 1;
    }
    fit_table_exclude_top_loss(t, 5);
    size_t n = fit_table_n_rows(t);
    const char *names[] = {"N", "D"};
    double *x = malloc(n * 2 * sizeof(double));
    fit_table_matrix(t, 2, names, x, err);
    double tg[3] = {0}, tb[3] = {0};
    for (size_t nt = 1; nt <= 2; nt++) {
        fit *f;
        fit_create(fit_law_chinchilla, &f);
        fit_options o = fit_options_default();
        o.n_threads = nt;
        fit_set_options(f, &o);
        fit_set_data(f, n, x, fit_table_column(t, "loss"), NULL);
        double best = INFINITY;
        for (int rep = 0; rep < 3; rep++) { /* best of 3: the machine is shared and noisy */
            double t0 = now();
            if (fit_run(f) != ST_OK) {
                fprintf(stderr, "bench_fit: %s\n", fit_errmsg(f));
                return 1;
            }
            best = fmin(best, now() - t0);
        }
        tg[nt] = best;
        const double *p = fit_params(f);
        printf("BENCH fit.grid_s threads=%zu %.4f\n", nt, best);
        printf("  optimum: objective %.10g A %.6g B %.6g E %.6g alpha %.6g beta %.6g\n",
               fit_objective_value(f), p[0], p[1], p[2], p[3], p[4]);
        fit_boot_options bo = fit_boot_options_default();
        bo.n_rep = 4000;
        bo.n_threads = nt;
        fit_boot *b;
        double t0 = now();
        if (fit_bootstrap(f, &bo, &b) != ST_OK) {
            fprintf(stderr, "bench_fit: %s\n", fit_errmsg(f));
            return 1;
        }
        tb[nt] = now() - t0;
        printf("BENCH fit.bootstrap_s threads=%zu %.4f\n", nt, tb[nt]);
        printf("  bootstrap SE: A %.5g B %.5g E %.5g alpha %.5g beta %.5g\n", fit_boot_se(b, 0),
               fit_boot_se(b, 1), fit_boot_se(b, 2), fit_boot_se(b, 3), fit_boot_se(b, 4));
        fit_boot_destroy(b);
        fit_destroy(f);
    }
    printf("ratio grid: scipy 32 s / ours = %.0fx (1 thread), %.0fx (2 threads); "
           "2-thread speed-up %.2fx\n",
           32 / tg[1], 32 / tg[2], tg[1] / tg[2]);
    printf("ratio bootstrap: scipy 50 s / ours = %.0fx (1 thread), %.0fx (2 threads); "
           "2-thread speed-up %.2fx\n",
           50 / tb[1], 50 / tb[2], tb[1] / tb[2]);
    printf("targets: grid <= 0.5 s, bootstrap <= 2 s\n");
    free(x);
    fit_table_destroy(t);
    return 0;
}
