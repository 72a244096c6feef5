/*
 * test_trainer_model.c — the whole CPU model: its gradient against central differences of the
 * loss along random directions, one tensor at a time and all together; bitwise determinism for a
 * seed and thread count (and agreement across counts); the learning-rate schedules at known
 * points; the FLOP formula against BENCHMARKS.md; options and shape errors.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "trainer/gpt.h"

static void batch(uint8_t *x, uint8_t *y, int n)
{
    const char *s = "the quick brown fox jumps over the lazy dog; pack my box with five dozen jugs";
    size_t len = strlen(s);
    for (int i = 0; i < n; i++) {
        x[i] = (uint8_t)s[(size_t)(i * 7) % len];
        y[i] = (uint8_t)s[(size_t)(i * 7 + 1) % len];
    }
}

/* directional derivative of the loss along u: (L(p + h u) - L(p - h u)) / 2h against g · u */
static void gradcheck(void)
{
    gpt_config cfg = {2, 16, 2, 8, 2};
    gpt *g;
    CHECK_ST(gpt_create(&cfg, 1, &g, NULL), ST_OK);
    CHECK_ST(gpt_init_weights(g, 0.3f, 7), ST_OK);
    size_t P = gpt_num_params(g);
    float *p = gpt_params(g), *p0 = malloc(P * 4), *u = malloc(P * 4);
    /* LayerNorm gains and biases away from 1 and 0 so that their gradients are exercised */
    for (size_t i = 0; i < P; i++)
        p[i] += 0.05f * (float)((i * 2654435761u) % 1000) / 1000.0f;
    memcpy(p0, p, P * 4);
    uint8_t x[16], y[16];
    batch(x, y, 16);
    float loss;
    gpt_forward(g, x, y, 2, 8, &loss);
    gpt_zero_grad(g);
    gpt_backward(g, 1.0f);
    float *grad = malloc(P * 4);
    memcpy(grad, gpt_grads(g), P * 4);

    unsigned s = 12345;
    for (int k = -1; k < gpt_num_tensors(); k++) {
        size_t off = 0, n = P;
        const char *name = "all";
        if (k >= 0)
            gpt_tensor_info(g, k, &name, &off, &n);
        memset(u, 0, P * 4);
        double gu = 0;
        for (size_t i = off; i < off + n; i++) {
            s = s * 1103515245u + 12345u;
            u[i] = (s >> 16) & 1 ? 1.0f : -1.0f;
            gu += (double)grad[i] * u[i];
        }
        /* the step gives a loss change well above fp32 round-off of the loss */
        double h = 2e-2 / sqrt((double)n);
        float lp, lm;
        for (size_t i = 0; i < P; i++)
            p[i] = p0[i] + (float)h * u[i];
        gpt_forward(g, x, y, 2, 8, &lp);
        for (size_t i = 0; i < P; i++)
            p[i] = p0[i] - (float)h * u[i];
        gpt_forward(g, x, y, 2, 8, &lm);
        memcpy(p, p0, P * 4);
        double fd = ((double)lp - lm) / (2 * h);
        double err = fabs(fd - gu) / fmax(fabs(gu), 1e-2);
        if (err > 2e-2)
            fprintf(stderr, "  tensor %s: g.u %.6g, finite difference %.6g\n", name, gu, fd);
        CHECK(err < 2e-2);
    }
    free(p0), free(u), free(grad);
    gpt_destroy(g);
}

static void run_steps(int threads, int steps, float *losses, float *params_out)
{
    gpt_config cfg = {2, 32, 2, 16, 4};
    gpt *g;
    gpt_create(&cfg, threads, &g, NULL);
    gpt_init_weights(g, 0.02f, 99);
    gpt_adamw hp = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    uint8_t x[64], y[64];
    for (int s = 0; s < steps; s++) {
        batch(x, y, 64);
        x[s % 64] = (uint8_t)s; /* vary the batch */
        gpt_zero_grad(g);
        gpt_forward(g, x, y, 4, 16, &losses[s]);
        gpt_backward(g, 1.0f);
        gpt_adamw_step(g, &hp, 3e-3f, NULL);
    }
    memcpy(params_out, gpt_params(g), gpt_num_params(g) * 4);
    gpt_destroy(g);
}

static void determinism(void)
{
    enum { S = 5 };
    size_t P = 256 * 32 + 16 * 32 + 2 * (12 * 32 * 32 + 13 * 32) + 64;
    float la[S], lb[S], lc[S], *pa = malloc(P * 4), *pb = malloc(P * 4), *pc = malloc(P * 4);
    run_steps(2, S, la, pa);
    run_steps(2, S, lb, pb);
    run_steps(1, S, lc, pc);
    CHECK(!memcmp(la, lb, sizeof(la)));
    CHECK(!memcmp(pa, pb, P * 4));
    for (int s = 0; s < S; s++)
        CHECK_REL(lc[s], la[s], 1e-5);
    CHECK(la[S - 1] < la[0]);
    free(pa), free(pb), free(pc);
}

static void schedules(void)
{
    gpt_options o = gpt_options_default();
    o.lr = 1.0;
    o.warmup = 10;
    o.min_lr_ratio = 0.1;
    CHECK_REL(gpt_lr_at(&o, 0, 110), 0.1, 1e-12);
    CHECK_REL(gpt_lr_at(&o, 9, 110), 1.0, 1e-12);
    CHECK_REL(gpt_lr_at(&o, 10, 110), 1.0, 1e-12);
    CHECK_REL(gpt_lr_at(&o, 109, 110), 0.1, 1e-12);
    /* halfway through the cosine: (1 + 0.1) / 2 */
    o.warmup = 0;
    CHECK_REL(gpt_lr_at(&o, 50, 101), 0.55, 1e-12);
    o.warmup = 0.1; /* a fraction: 10 of 100 steps */
    CHECK_REL(gpt_lr_at(&o, 4, 100), 0.5, 1e-12);
    o.schedule = GPT_SCHEDULE_WSD;
    o.decay_frac = 0.2;
    CHECK_REL(gpt_lr_at(&o, 50, 100), 1.0, 1e-12);
    CHECK_REL(gpt_lr_at(&o, 79, 100), 1.0, 1e-12);
    CHECK_REL(gpt_lr_at(&o, 89, 100), 1.0 - 0.9 * 0.5, 1e-12);
    CHECK_REL(gpt_lr_at(&o, 99, 100), 0.1, 1e-12);
}

static void flops(void)
{
    /* BENCHMARKS.md: 6.53 M, 33.6 M and 71.6 M FLOPs per token at T = 256 */
    gpt_config a = {4, 128, 2, 256, 16}, b = {6, 256, 4, 256, 16}, c = {6, 384, 6, 256, 16};
    CHECK_REL(gpt_flops_per_token(&a, 256), 6.53e6, 5e-3);
    CHECK_REL(gpt_flops_per_token(&b, 256), 33.6e6, 5e-3);
    CHECK_REL(gpt_flops_per_token(&c, 256), 71.6e6, 5e-3);
}

static void errors(void)
{
    char err[ST_ERRMSG_MAX];
    gpt *g;
    gpt_config bad = {2, 30, 4, 8, 2};
    CHECK_ST(gpt_create(&bad, 1, &g, err), ST_EINVAL);
    CHECK(g == NULL && strstr(err, "multiple"));
    gpt_destroy(NULL);
    gpt_config ok = {1, 8, 2, 4, 1};
    CHECK_ST(gpt_create(&ok, 1, &g, err), ST_OK);
    uint8_t x[8] = {0};
    CHECK_ST(gpt_backward(g, 1.0f), ST_ESTATE);
    CHECK_ST(gpt_forward(g, x, x, 2, 4, NULL), ST_EINVAL);
    CHECK_ST(gpt_forward(g, x, x, 1, 5, NULL), ST_EINVAL);
    CHECK_ST(gpt_init_weights(g, -1.0f, 1), ST_EINVAL);
    CHECK(strlen(gpt_errmsg(g)) > 0);
    gpt_destroy(g);

    gpt_options o = gpt_options_default();
    CHECK_ST(gpt_options_set(&o, "lr", "3e-4", err), ST_OK);
    CHECK(o.lr == 3e-4);
    CHECK_ST(gpt_options_set(&o, "lr", "fast", err), ST_EINVAL);
    CHECK(strstr(err, "--lr") != NULL);
    CHECK_ST(gpt_options_set(&o, "n-layer", "2.5", err), ST_EINVAL);
    CHECK_ST(gpt_options_set(&o, "batch", "0", err), ST_ERANGE);
    CHECK_ST(gpt_options_set(&o, "schedule", "linear", err), ST_EINVAL);
    CHECK_ST(gpt_options_set(&o, "schedule", "wsd", err), ST_OK);
    CHECK(o.schedule == GPT_SCHEDULE_WSD);
    CHECK_ST(gpt_options_set(&o, "device", "tpu", err), ST_EINVAL);
    CHECK_ST(gpt_options_set(&o, "learning-rate", "1", err), ST_ENOTFOUND);
    CHECK_ST(gpt_options_set(&o, "seed", "-1", err), ST_EINVAL);
    CHECK_ST(gpt_options_set(&o, "d-model", "100", err), ST_OK);
    CHECK_ST(gpt_options_set(&o, "n-head", "3", err), ST_OK);
    CHECK_ST(gpt_options_check(&o, err), ST_EINVAL);
    /* --head-dim: the heads from the width (d_model 96 / 16 = 6), not with --n-head, a divisor */
    o = gpt_options_default();
    CHECK(gpt_options_heads(&o) == 2); /* d_model 128 / 64 */
    CHECK_ST(gpt_options_set(&o, "d-model", "96", err), ST_OK);
    CHECK_ST(gpt_options_set(&o, "head-dim", "16", err), ST_OK);
    CHECK(gpt_options_heads(&o) == 6);
    CHECK_ST(gpt_options_check(&o, err), ST_OK);
    CHECK_ST(gpt_options_set(&o, "head-dim", "20", err), ST_OK);
    CHECK_ST(gpt_options_check(&o, err), ST_EINVAL);
    CHECK(strstr(err, "--head-dim 20") != NULL);
    CHECK_ST(gpt_options_set(&o, "head-dim", "16", err), ST_OK);
    CHECK_ST(gpt_options_set(&o, "n-head", "3", err), ST_OK);
    CHECK(gpt_options_heads(&o) == 3);
    CHECK_ST(gpt_options_check(&o, err), ST_EINVAL);
    CHECK(strstr(err, "not both") != NULL);
    for (size_t i = 0; i < gpt_option_count(); i++)
        CHECK(gpt_option_at(i)->help[0] != 0);
    CHECK(gpt_option_at(gpt_option_count()) == NULL);
}

int main(void)
{
    gradcheck();
    determinism();
    schedules();
    flops();
    errors();
    return check_summary("trainer.model");
}
