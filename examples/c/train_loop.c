/*
 * train_loop.c — drive scaletune's optimizer from a C training program (ask/tell in-process),
 * the C twin of examples/python/train_loop.py: the same toy objective, the same search space.
 * Uses only the public header carbs/carbs.h. Built by `make` as build/examples/c/train_loop;
 * against an installed scaletune:  cc train_loop.c $(pkg-config --cflags --libs scaletune)
 * Usage: train_loop [runs] [seed]   (defaults 30 and 1)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "carbs/carbs.h"

#define LAYERS 4
#define TOKENS 1048576.0 /* 2^20 */

/* The toy "training run" of examples/python/toy.py: lr*(W) = 3e-3 * 256/W,
 * L(lr, W) = 2 + 60/W + 0.5 (log10 lr - log10 lr*(W))^2; lr > 8 lr*(W) diverges (NaN). */
static double toy_train(double lr, double width)
{
    double lr_opt = 3e-3 * 256.0 / width;
    if (lr > 8.0 * lr_opt)
        return NAN;
    double d = log10(lr) - log10(lr_opt);
    return 2.0 + 60.0 / width + 0.5 * d * d;
}

/* Training FLOP 6 N D with N = 12 L W^2 parameters. */
static double toy_flops(double width)
{
    return 6.0 * 12.0 * LAYERS * width * width * TOKENS;
}

static int fail(const char *what, st_status s, const char *msg)
{
    fprintf(stderr, "train_loop: %s: %s (%s)\n", what, msg, st_strerror(s));
    return 1;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 30;
    unsigned long long seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    if (runs < 1)
        runs = 1;
    if (st_global_init() != ST_OK)
        return fail("init", ST_EINTERNAL, "st_global_init failed");

    carbs_param p[2];
    carbs_param_init(&p[0], "lr", CARBS_SPACE_LOG, 1e-3);
    p[0].min = 1e-5;
    p[0].max = 1.0;
    carbs_param_init(&p[1], "width", CARBS_SPACE_LOG, 128);
    p[1].min = 32;
    p[1].max = 1024;
    p[1].is_integer = 1;
    p[1].rounding = 16;

    carbs_options o = carbs_options_default();
    char err[ST_ERRMSG_MAX];
    st_status s;
    if ((s = carbs_options_set(&o, "num_random_samples", "6", err)) != ST_OK)
        return fail("option", s, err);
    o.seed = seed;
    carbs *c = NULL;
    if ((s = carbs_create(p, 2, &o, &c, err)) != ST_OK)
        return fail("carbs_create", s, err);

    double best = INFINITY, best_x[2] = {NAN, NAN};
    for (int r = 0; r < runs; r++) {
        double x[2];
        uint64_t id;
        if ((s = carbs_suggest(c, x, &id)) != ST_OK)
            break;
        double loss = toy_train(x[0], x[1]), cost = toy_flops(x[1]);
        int failed = !isfinite(loss);
        if ((s = carbs_observe(c, id, NULL, loss, cost, failed)) != ST_OK)
            break;
        if (failed)
            printf("run %3llu  lr=%.3e width=%4.0f  diverged  cost=%.3g\n", (unsigned long long)id,
                   x[0], x[1], cost);
        else
            printf("run %3llu  lr=%.3e width=%4.0f  val_loss=%.4f  cost=%.3g\n",
                   (unsigned long long)id, x[0], x[1], loss, cost);
        if (!failed && loss < best) {
            best = loss;
            best_x[0] = x[0];
            best_x[1] = x[1];
        }
    }
    if (s != ST_OK) {
        int rc = fail("optimizer", s, carbs_errmsg(c));
        carbs_destroy(c);
        return rc;
    }
    printf("best: val_loss=%.4f lr=%.3e width=%.0f\n", best, best_x[0], best_x[1]);

    /* the cost/objective Pareto front: ask for its size, then fill */
    size_t n = 0;
    if (carbs_pareto(c, 1, 0, &n, NULL, NULL, NULL, NULL) == ST_OK && n > 0) {
        double *pc = malloc(n * sizeof *pc), *py = malloc(n * sizeof *py);
        if (pc && py && carbs_pareto(c, 1, n, &n, pc, py, NULL, NULL) == ST_OK) {
            printf("pareto front (cost, val_loss):\n");
            for (size_t i = 0; i < n; i++)
                printf("  %.3g  %.4f\n", pc[i], py[i]);
        }
        free(pc);
        free(py);
    }
    carbs_destroy(c);
    st_global_cleanup();
    return 0;
}
