/*
 * bench_trainer.c — `make bench-trainer`: tokens/s and GFLOP/s of the CPU trainer (forward,
 * backward and AdamW on B = 16 sequences of T = 256) for d_model 128/4 layers, 256/6 and 384/6,
 * with 1 and 2 threads, next to the sgemm ceiling measured in the same run (median GFLOP/s over
 * GPT-shaped products) and the PyTorch tokens/s of BENCHMARKS.md (torch cannot run here).
 * Prints `BENCH trainer.<what> model=... threads=N value` lines. Not a unit test: no asserts.
 * Usage: bench_trainer [steps per measurement, default 3]
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trainer/gpt.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median GFLOP/s over the products of one training step of d384 (N = B*T rows) */
static double sgemm_ceiling(int threads)
{
    openblas_set_num_threads(threads);
    const int N = 4096, C = 384;
    const int shapes[][3] = {{N, 3 * C, C}, {N, C, C},     {N, 4 * C, C},
                             {N, C, 4 * C}, {N, 256, C},   {3 * C, C, N},
                             {4 * C, C, N}, {C, 4 * C, N}, {N, C, 3 * C}};
    enum { NS = sizeof(shapes) / sizeof(shapes[0]) };
    float *a = calloc((size_t)N * 4 * C, 4), *b = calloc((size_t)N * 4 * C, 4),
          *c = calloc((size_t)N * 4 * C, 4);
    for (size_t i = 0; i < (size_t)N * 4 * C; i++)
        a[i] = b[i] = (float)(i % 7) * 0.1f;
    double g[NS];
    for (int s = 0; s < NS; s++) {
        int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        double best = 0;
        for (int rep = 0; rep < 5; rep++) {
            double t0 = now_s();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, k, b, k, 0.0f, c,
                        n);
            double gf = 2.0 * m * n * k / (now_s() - t0) / 1e9;
            best = gf > best ? gf : best;
        }
        g[s] = best;
    }
    free(a), free(b), free(c);
    qsort(g, NS, sizeof(double), cmp_d);
    return g[NS / 2];
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 3;
    if (steps < 1)
        steps = 1;
    const struct {
        const char *name;
        int C, L;
        double torch_tps; /* BENCHMARKS.md, midpoint of the 2-thread range */
        double target;
    } models[] = {
        {"d128l4", 128, 4, 3950, 1.5}, {"d256l6", 256, 6, 1610, 1.5}, {"d384l6", 384, 6, 902, 1.3}};
    const int B = 16, T = 256;
    double ceil_gf[3];
    for (int th = 1; th <= 2; th++) {
        ceil_gf[th] = sgemm_ceiling(th);
        printf("BENCH trainer.sgemm_gflops threads=%d %.1f\n", th, ceil_gf[th]);
    }
    uint8_t *x = malloc((size_t)B * T), *y = malloc((size_t)B * T);
    for (int i = 0; i < B * T; i++) {
        x[i] = (uint8_t)("In the beginning God created the heaven and the earth. "[i % 55]);
        y[i] = (uint8_t)("In the beginning God created the heaven and the earth. "[(i + 1) % 55]);
    }
    gpt_adamw hp = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    for (size_t mi = 0; mi < sizeof(models) / sizeof(models[0]); mi++)
        for (int th = 1; th <= 2; th++) {
            gpt_config cfg = {models[mi].L, models[mi].C, models[mi].C / 64, T, B};
            gpt *g;
            char err[ST_ERRMSG_MAX];
            if (gpt_create(&cfg, th, &g, err) != ST_OK) {
                fprintf(stderr, "bench_trainer: %s\n", err);
                return 1;
            }
            gpt_init_weights(g, 0.02f, 1);
            double best = 1e30;
            for (int s = 0; s <= steps; s++) { /* step 0 warms up */
                float loss;
                double t0 = now_s();
                gpt_zero_grad(g);
                gpt_forward(g, x, y, B, T, &loss);
                gpt_backward(g, 1.0f);
                gpt_adamw_step(g, &hp, 1e-4f, NULL);
                double dt = now_s() - t0;
                if (s > 0 && dt < best)
                    best = dt;
            }
            gpt_destroy(g);
            double tps = B * T / best, fpt = gpt_flops_per_token(&cfg, T);
            double gf = tps * fpt / 1e9;
            printf("BENCH trainer.tokens_per_s model=%s threads=%d %.0f\n", models[mi].name, th,
                   tps);
            printf("BENCH trainer.gflops model=%s threads=%d %.1f\n", models[mi].name, th, gf);
            printf("BENCH trainer.ceiling_share model=%s threads=%d %.3f\n", models[mi].name, th,
                   gf / ceil_gf[th]);
            if (th == 2)
                printf("BENCH trainer.vs_pytorch model=%s threads=2 %.2f (target %.1f; PyTorch "
                       "%.0f tokens/s from BENCHMARKS.md, not measured here)\n",
                       models[mi].name, tps / models[mi].torch_tps, models[mi].target,
                       models[mi].torch_tps);
            fflush(stdout);
        }
    free(x), free(y);
    return 0;
}
