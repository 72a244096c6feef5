/*
 * bench_carbs_toys — sample efficiency of carbs/ on three toys, for ablations of its options:
 * the cost toy 0.5 (x - 1.5)^2 + 2 / sqrt(epochs) (cost = epochs; optimum 0.0632 at cost 1000),
 * Branin (0.3979) and Hartmann-6 (-3.3224), 40 evaluations each, seeds 0..7. Prints the best
 * objective per seed and the median, one line per problem:
 *   BENCH carbs.toys <problem> median=<m> seeds=<v0> ... <v7>
 * Usage: bench_carbs_toys [--evals N] [--at K]... [--problem NAME] [--opt name=value]...
 * (options: carbs_options_set); each --at K (K < N) also prints the medians after K
 * evaluations, as BENCH carbs.toys <problem>@K seeds=... median=<m>; --problem runs one of
 * cost_toy, branin, hartmann6 (to run them in parallel).
 * Baseline in the same run: uniform random search with the same number of evaluations.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/testfuncs.h"
#include "carbs/carbs.h"

static double toy(const double *x, double *cost)
{
    *cost = x[1];
    return 0.5 * (x[0] - 1.5) * (x[0] - 1.5) + 2 / sqrt(x[1]);
}

static double branin(const double *x, double *cost)
{
    *cost = 1;
    return tf_branin(x);
}

static double hartmann6(const double *x, double *cost)
{
    *cost = 1;
    return tf_hartmann6(x);
}

int main(int argc, char **argv)
{
    int evals = 40, n_opt = 0, n_at = 0, at[8];
    const char *opts[32], *only = NULL;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--evals") && a + 1 < argc)
            evals = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--problem") && a + 1 < argc)
            only = argv[++a];
        else if (!strcmp(argv[a], "--at") && a + 1 < argc && n_at < 8)
            at[n_at++] = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--opt") && a + 1 < argc && n_opt < 32)
            opts[n_opt++] = argv[++a];
        else {
            fprintf(stderr, "usage: bench_carbs_toys [--evals N] [--at K]... [--problem NAME] "
                            "[--opt name=value]...\n");
            return 2;
        }
    }
    st_global_init();
    static const char *names[] = {"cost_toy", "branin", "hartmann6"};
    for (int w = 0; w < 3; w++) {
        if (only && strcmp(only, names[w]))
            continue;
        double best[8], rnd[8], best_at[8][8];
        for (int seed = 0; seed < 8; seed++) {
            carbs_param p[6];
            size_t d;
            double (*f)(const double *, double *);
            if (w == 0) {
                d = 2;
                f = toy;
                carbs_param_init(&p[0], "x", CARBS_SPACE_LINEAR, 0.0);
                p[0].min = -5;
                p[0].max = 5;
                carbs_param_init(&p[1], "epochs", CARBS_SPACE_LOG, 10);
                p[1].min = 1;
                p[1].max = 1000;
                p[1].is_integer = 1;
            } else if (w == 1) {
                d = 2;
                f = branin;
                carbs_param_init(&p[0], "x0", CARBS_SPACE_LINEAR, 2.5);
                p[0].min = -5;
                p[0].max = 10;
                p[0].scale = 5;
                carbs_param_init(&p[1], "x1", CARBS_SPACE_LINEAR, 7.5);
                p[1].min = 0;
                p[1].max = 15;
                p[1].scale = 5;
            } else {
                static const char *nm[6] = {"a", "b", "c", "d", "e", "f"};
                d = 6;
                f = hartmann6;
                for (int i = 0; i < 6; i++) {
                    carbs_param_init(&p[i], nm[i], CARBS_SPACE_LINEAR, 0.5);
                    p[i].min = 0;
                    p[i].max = 1;
                    p[i].scale = 0.5;
                }
            }
            carbs_options o = carbs_options_default();
            o.seed = (uint64_t)seed;
            o.resample_frequency = w == 0 ? 0 : 5;
            for (int k = 0; k < n_opt; k++) {
                char name[64];
                const char *eq = strchr(opts[k], '=');
                snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - opts[k]) : 0, opts[k]);
                if (!eq || carbs_options_set(&o, name, eq + 1, NULL) != ST_OK) {
                    fprintf(stderr, "bench_carbs_toys: bad --opt %s\n", opts[k]);
                    return 2;
                }
            }
            carbs *c = NULL;
            if (carbs_create(p, d, &o, &c, NULL) != ST_OK)
                return 1;
            double x[6], cost;
            best[seed] = INFINITY;
            for (int e = 0; e < evals; e++) {
                uint64_t id;
                if (carbs_suggest(c, x, &id) != ST_OK)
                    return 1;
                double y = f(x, &cost);
                best[seed] = y < best[seed] ? y : best[seed];
                carbs_observe(c, id, x, y, cost, 0);
                for (int k = 0; k < n_at; k++)
                    if (e + 1 == at[k])
                        best_at[k][seed] = best[seed];
            }
            /* baseline: uniform random search over the same box (log-uniform epochs) */
            st_rng *r;
            st_rng_create((uint64_t)seed + 1000, &r);
            rnd[seed] = INFINITY;
            for (int e = 0; e < evals; e++) {
                for (size_t i = 0; i < d; i++) {
                    double u = st_rng_uniform(r);
                    x[i] = (w == 0 && i == 1) ? round(pow(10, 3 * u))
                                              : p[i].min + u * (p[i].max - p[i].min);
                }
                double y = f(x, &cost);
                rnd[seed] = y < rnd[seed] ? y : rnd[seed];
            }
            st_rng_destroy(r);
            carbs_destroy(c);
        }
        for (int k = 0; k < n_at; k++) {
            if (at[k] < 1 || at[k] >= evals)
                continue;
            printf("BENCH carbs.toys %s@%d seeds=", names[w], at[k]);
            for (int s = 0; s < 8; s++)
                printf("%s%.4f", s ? "," : "", best_at[k][s]);
            qsort(best_at[k], 8, sizeof(double), tf_cmp_double);
            printf(" median=%.4f\n", 0.5 * (best_at[k][3] + best_at[k][4]));
        }
        printf("BENCH carbs.toys %s seeds=", names[w]);
        for (int s = 0; s < 8; s++)
            printf("%s%.4f", s ? "," : "", best[s]);
        qsort(best, 8, sizeof(double), tf_cmp_double);
        qsort(rnd, 8, sizeof(double), tf_cmp_double);
        printf(" median=%.4f random_median=%.4f\n", 0.5 * (best[3] + best[4]),
               0.5 * (rnd[3] + rnd[4]));
    }
    return 0;
}
