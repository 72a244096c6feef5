/*
 * bench_carbs — suggest and observe latency of carbs/ (recommended mode) at n observations and
 * D dimensions, one line each: "BENCH carbs.suggest_ms n=<n> d=<d> <median ms>". The baseline
 * measured in the same run is the CARBS-faithful mode (1000 Adam steps per GP, as CARBS does)
 * at n = 30, D = 2; CARBS' own Python takes 9.1-9.8 s there (shared BENCHMARKS.md).
 * Usage: bench_carbs [--quick] [--opt name=value]... (optimizer options, carbs_options_set)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/testfuncs.h"
#include "carbs/carbs.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double median(double *v, int n)
{
    return tf_median(v, n);
}

static const char *extra_opts[16]; /* "name=value" from --opt */
static int n_extra;

static carbs *filled(size_t d, size_t n, carbs_mode mode, unsigned seed)
{
    carbs_param *p = calloc(d, sizeof(*p));
    char(*names)[24] = calloc(d, 24);
    for (size_t i = 0; i < d; i++) {
        snprintf(names[i], 24, "p%zu", i);
        carbs_param_init(&p[i], names[i], i % 2 ? CARBS_SPACE_LOG : CARBS_SPACE_LINEAR,
                         i % 2 ? 1.0 : 0.0);
        if (i % 2) {
            p[i].min = 1e-3;
            p[i].max = 1e3;
        }
    }
    carbs_options o = carbs_options_default();
    o.mode = mode;
    o.seed = seed;
    o.resample_frequency = 0; /* time the Bayesian step, not re-runs */
    for (int k = 0; k < n_extra; k++) {
        char name[64];
        const char *eq = strchr(extra_opts[k], '=');
        snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - extra_opts[k]) : 0, extra_opts[k]);
        if (!eq || carbs_options_set(&o, name, eq + 1, NULL) != ST_OK) {
            fprintf(stderr, "bench_carbs: bad --opt %s\n", extra_opts[k]);
            exit(2);
        }
    }
    carbs *c = NULL;
    if (carbs_create(p, d, &o, &c, NULL) != ST_OK)
        exit(1);
    double *x = malloc(d * sizeof(double));
    srand(seed);
    for (size_t k = 0; k < n; k++) {
        double y = 0, cost = 1;
        for (size_t i = 0; i < d; i++) {
            double u = (rand() + 0.5) / ((double)RAND_MAX + 1), g = 0.6 * (u - 0.5);
            x[i] = i % 2 ? pow(10, g) : g;
            y += (g - 0.05 * i) * (g - 0.05 * i);
            if (i == 1)
                cost = x[i] * 10;
        }
        y += 0.01 * ((rand() + 0.5) / ((double)RAND_MAX + 1) - 0.5);
        carbs_observe(c, 0, x, y, cost, 0);
    }
    free(x);
    free(p);
    free(names);
    return c;
}

static double time_suggest(carbs *c, int reps)
{
    double *t = malloc(reps * sizeof(double)), *x = malloc(carbs_dim(c) * sizeof(double));
    for (int r = 0; r < reps; r++) {
        double t0 = now_ms();
        if (carbs_suggest(c, x, NULL) != ST_OK) {
            fprintf(stderr, "suggest: %s\n", carbs_errmsg(c));
            exit(1);
        }
        t[r] = now_ms() - t0;
    }
    double m = median(t, reps);
    free(t);
    free(x);
    return m;
}

int main(int argc, char **argv)
{
    int quick = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--quick"))
            quick = 1;
        else if (!strcmp(argv[a], "--opt") && a + 1 < argc && n_extra < 16)
            extra_opts[n_extra++] = argv[++a];
        else {
            fprintf(stderr, "usage: bench_carbs [--quick] [--opt name=value]...\n");
            return 2;
        }
    }
    st_global_init();
    const size_t ns[] = {30, 100, 300, 1000}, ds[] = {2, 10, 20};
    double at_30_2 = NAN, at_1000_10 = NAN;
    for (size_t a = 0; a < 4; a++)
        for (size_t b = 0; b < 3; b++) {
            size_t n = ns[a], d = ds[b];
            if (quick && n > 300)
                continue;
            carbs *c = filled(d, n, CARBS_MODE_RECOMMENDED, 1);
            int reps = n >= 1000 ? 5 : n >= 300 ? 7 : 15;
            double ms = time_suggest(c, reps);
            printf("BENCH carbs.suggest_ms n=%zu d=%zu %.3f\n", n, d, ms);
            fflush(stdout);
            if (n == 30 && d == 2)
                at_30_2 = ms;
            if (n == 1000 && d == 10)
                at_1000_10 = ms;
            carbs_destroy(c);
        }

    /* observe latency at n = 1000, D = 10 */
    carbs *c = filled(10, 1000, CARBS_MODE_RECOMMENDED, 2);
    double x[10], t[200];
    for (int r = 0; r < 200; r++) {
        for (int i = 0; i < 10; i++)
            x[i] = i % 2 ? 1.5 : 0.1 * r / 200.0;
        double t0 = now_ms();
        carbs_observe(c, 0, x, 1.0 + r * 1e-3, 2.0, 0);
        t[r] = now_ms() - t0;
    }
    printf("BENCH carbs.observe_ms n=1000 d=10 %.4f\n", median(t, 200));
    carbs_destroy(c);

    /* baseline in the same run: the CARBS-faithful GP fitting (1000 Adam steps) */
    c = filled(2, 30, CARBS_MODE_FAITHFUL, 1);
    double faithful = time_suggest(c, 7);
    carbs_destroy(c);
    printf("BENCH carbs.suggest_ms_faithful n=30 d=2 %.3f\n", faithful);
    printf("BENCH carbs.suggest_speedup_vs_faithful n=30 d=2 %.1f\n", faithful / at_30_2);
    printf("BENCH carbs.suggest_speedup_vs_carbs n=30 d=2 %.0f (CARBS Python 9100-9800 ms, "
           "BENCHMARKS.md; lower end used)\n",
           9100.0 / at_30_2);
    printf("targets: n=30 d=2 <= 5 ms: %s; n=1000 d=10 <= 100 ms: %s\n",
           at_30_2 <= 5 ? "met" : "MISSED",
           isnan(at_1000_10)   ? "not run"
           : at_1000_10 <= 100 ? "met"
                               : "MISSED");
    return 0;
}
