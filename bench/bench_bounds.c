/*
 * bench_bounds — issue 22 item 6: how often carbs' Bayesian suggestions sit at a bound of the
 * box (a coordinate within 1% of the range from min or max) on the bench problems, whose
 * optima are all inside: Branin, Hartmann-6, a 4-d quadratic (optimum at 0.3) and the LLM
 * simulator's box of bench/compare.c (sim: only lr, batch, warmup and weight decay are counted,
 * whose optima lie inside for every N and D of the box; N and tokens are cost, and the cheap
 * end of the front is a bound by design). Default options and default scales (the auto scale of
 * bounded linear spaces), seeds 0..S-1, N runs; a diverged sim run is observed as failed.
 * Prints per problem the share of Bayesian suggestions with any coordinate at a bound, next to
 * what uniform random points would give (1 - 0.98^D), and the same within 5% of the range:
 *   BENCH carbs.at_bound problem=<name> within=1% <share> (of N Bayesian suggestions, ...)
 * Usage: bench_bounds [--evals N] [--seeds S]. Not here: a fix (docs/algorithms/carbs.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/sim.h"
#include "bench/testfuncs.h"
#include "carbs/carbs.h"

static double quad4(const double *x)
{
    double s = 0;
    for (int i = 0; i < 4; i++)
        s += (x[i] - 0.3) * (x[i] - 0.3);
    return s;
}

int main(int argc, char **argv)
{
    int evals = 60, seeds = 4;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--evals") && a + 1 < argc)
            evals = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--seeds") && a + 1 < argc)
            seeds = atoi(argv[++a]);
        else {
            fprintf(stderr, "usage: bench_bounds [--evals N] [--seeds S]\n");
            return 2;
        }
    }
    st_global_init();
    static const char *names[] = {"branin", "hartmann6", "quad4", "sim"};
    sim_law law = sim_law_default();
    for (int w = 0; w < 4; w++) {
        size_t d = w == 0   ? 2
                   : w == 1 ? 6
                   : w == 2 ? 4
                            : 6,
               n_bayes = 0, n_any = 0, n_coord = 0, n_any5 = 0, i0 = w == 3 ? 2 : 0, n_size = 0;
        carbs_param p[6];
        static const char *nm[6] = {"a", "b", "c", "d", "e", "f"};
        for (size_t i = 0; i < d; i++) {
            carbs_param_init(&p[i], nm[i], CARBS_SPACE_LINEAR, 0.5);
            p[i].min = 0;
            p[i].max = 1;
        }
        if (w == 0) {
            p[0].min = -5, p[0].max = 10, p[0].center = 2.5;
            p[1].min = 0, p[1].max = 15, p[1].center = 7.5;
        }
        if (w == 3) { /* bench/compare.c's box */
            static const char *sn[6] = {"params", "tokens", "lr", "batch", "warmup", "wd"};
            static const double lo[6] = {1e6, 2e7, 1e-4, 1024, 1e-3, 1e-3};
            static const double hi[6] = {3.16227766e7, 6.30957344e8, 0.1, 524288, 0.3, 1.0};
            static const double ce[6] = {5e6, 1e8, 3e-3, 16384, 0.02, 0.1};
            for (size_t i = 0; i < d; i++) {
                carbs_param_init(&p[i], sn[i], CARBS_SPACE_LOG, ce[i]);
                p[i].min = lo[i];
                p[i].max = hi[i];
            }
        }
        for (int seed = 0; seed < seeds; seed++) {
            carbs_options o = carbs_options_default();
            o.seed = (uint64_t)seed;
            carbs *c = NULL;
            if (carbs_create(p, d, &o, &c, NULL) != ST_OK)
                return 1;
            double x[6];
            for (int e = 0; e < evals; e++) {
                uint64_t id;
                carbs_suggestion_info info;
                if (carbs_suggest(c, x, &id) != ST_OK)
                    return 1;
                carbs_last_info(c, &info);
                if (info.phase == CARBS_PHASE_BAYES) {
                    size_t at = 0, at5 = 0;
                    for (size_t i = 0; i < d; i++) {
                        int lg = p[i].space == CARBS_SPACE_LOG;
                        double v = lg ? log(x[i]) : x[i], a = lg ? log(p[i].min) : p[i].min;
                        double b = lg ? log(p[i].max) : p[i].max, r = b - a;
                        int b1 = v <= a + 0.01 * r || v >= b - 0.01 * r;
                        if (i < i0) {
                            n_size += b1;
                            continue;
                        }
                        at += b1;
                        at5 += v <= a + 0.05 * r || v >= b - 0.05 * r;
                    }
                    n_any5 += at5 > 0;
                    n_bayes++;
                    n_any += at > 0;
                    n_coord += at;
                }
                double y, cost = 1.0;
                int failed = 0;
                if (w == 3) {
                    sim_setting st = {x[0], x[1], x[2], fmin(x[3], x[1]), x[4], x[5], 0};
                    sim_terms t;
                    double step;
                    if (sim_eval(&law, &st, &t, NULL) != ST_OK ||
                        sim_run(&law, &st, (uint64_t)(seed * 1000 + e), &y, &failed, &step, NULL) !=
                            ST_OK)
                        return 1;
                    cost =
                        failed ? 6.0 * st.N * fmax(st.batch, fmin(st.D, step * st.batch)) : t.flops;
                } else {
                    y = w == 0 ? tf_branin(x) : w == 1 ? tf_hartmann6(x) : quad4(x);
                }
                carbs_observe(c, id, x, failed ? NAN : y, cost, failed);
            }
            carbs_destroy(c);
        }
        for (int k = 0; k < 2; k++) {
            double share = n_bayes ? (double)(k ? n_any5 : n_any) / (double)n_bayes : NAN;
            printf(
                "BENCH carbs.at_bound problem=%s within=%d%% %.3f (of %zu Bayesian suggestions, a "
                "coordinate within %d%% of the range from a bound; uniform points %.3f",
                names[w], k ? 5 : 1, share, n_bayes, k ? 5 : 1,
                1 - pow(k ? 0.9 : 0.98, (double)(d - i0)));
            if (!k)
                printf("; coordinates at a bound %.3f",
                       n_bayes ? (double)n_coord / (double)(n_bayes * (d - i0)) : NAN);
            if (!k && i0)
                printf("; N or tokens at a bound %.3f of coordinates",
                       n_bayes ? (double)n_size / (double)(n_bayes * i0) : NAN);
            printf(")\n");
        }
    }
    return 0;
}
