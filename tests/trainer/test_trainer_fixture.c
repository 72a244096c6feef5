/*
 * test_trainer_fixture.c — the CPU model against PyTorch (llm.c's test_gpt2 method, with a
 * failing exit code): tests/data/trainer/gpt_tiny.bin, made once by make_fixture.py with Debian's
 * torch 1.13, holds the weights, a batch, the logits, the loss, every gradient and the losses of
 * ten AdamW steps (clipping active) for L=2, C=32, NH=4, T=16, B=2. Run with 1 and 2 threads.
 * Tolerances per tensor, relative to the tensor's largest entry (fp32 round-off differs).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/check.h"
#include "trainer/gpt.h"

#define FIXTURE "tests/data/trainer/gpt_tiny.bin"

typedef struct fixture {
    int32_t hdr[8];
    float hp[8];
    float *params, *logits, *grads, *losses, loss;
    uint8_t *x, *y;
    size_t P, BT;
} fixture;

static int read_fixture(fixture *f)
{
    FILE *fp = fopen(FIXTURE, "rb");
    if (!fp)
        return 0;
    int ok = fread(f->hdr, 4, 8, fp) == 8 && fread(f->hp, 4, 8, fp) == 8 &&
             f->hdr[0] == 0x53544658 && f->hdr[1] == 1;
    if (!ok) {
        fclose(fp);
        return 0;
    }
    int L = f->hdr[2], C = f->hdr[3], T = f->hdr[5], B = f->hdr[6], S = f->hdr[7];
    f->P = (size_t)256 * C + (size_t)T * C + (size_t)L * (12 * C * C + 13 * C) + 2 * C;
    f->BT = (size_t)B * T;
    f->params = malloc(f->P * 4);
    f->grads = malloc(f->P * 4);
    f->logits = malloc(f->BT * 256 * 4);
    f->losses = malloc((size_t)S * 4);
    f->x = malloc(f->BT);
    f->y = malloc(f->BT);
    int32_t *tmp = malloc(f->BT * 4);
    ok = fread(f->params, 4, f->P, fp) == f->P;
    ok = ok && fread(tmp, 4, f->BT, fp) == f->BT;
    for (size_t i = 0; ok && i < f->BT; i++)
        f->x[i] = (uint8_t)tmp[i];
    ok = ok && fread(tmp, 4, f->BT, fp) == f->BT;
    for (size_t i = 0; ok && i < f->BT; i++)
        f->y[i] = (uint8_t)tmp[i];
    ok = ok && fread(f->logits, 4, f->BT * 256, fp) == f->BT * 256;
    ok = ok && fread(&f->loss, 4, 1, fp) == 1;
    ok = ok && fread(f->grads, 4, f->P, fp) == f->P;
    ok = ok && fread(f->losses, 4, (size_t)S, fp) == (size_t)S;
    free(tmp);
    fclose(fp);
    return ok;
}

static double rel_maxdiff(const float *a, const float *b, size_t n)
{
    double d = 0, s = 1e-12;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        s = fmax(s, fabs((double)b[i]));
    }
    return d / s;
}

static void run(const fixture *f, int threads)
{
    gpt_config cfg = {f->hdr[2], f->hdr[3], f->hdr[4], f->hdr[5], f->hdr[6]};
    int B = f->hdr[6], T = f->hdr[5];
    gpt *g;
    CHECK_ST(gpt_create(&cfg, threads, &g, NULL), ST_OK);
    if (!g)
        return;
    CHECK(gpt_num_params(g) == f->P);
    memcpy(gpt_params(g), f->params, f->P * 4);

    float loss;
    CHECK_ST(gpt_forward(g, f->x, f->y, B, T, &loss), ST_OK);
    CHECK(rel_maxdiff(gpt_logits(g), f->logits, f->BT * 256) < 1e-5);
    CHECK_REL(loss, f->loss, 1e-5);
    gpt_zero_grad(g);
    CHECK_ST(gpt_backward(g, 1.0f), ST_OK);
    for (int i = 0; i < gpt_num_tensors(); i++) {
        const char *name;
        size_t off, n;
        gpt_tensor_info(g, i, &name, &off, &n);
        double e = rel_maxdiff(gpt_grads(g) + off, f->grads + off, n);
        if (e > 1e-4)
            fprintf(stderr, "  gradient %s: max deviation %.3g of its largest entry\n", name, e);
        CHECK(e < 1e-4);
    }

    /* ten AdamW steps on the same batch; step 0's loss is the one above */
    gpt_adamw hp = {f->hp[1], f->hp[2], f->hp[3], f->hp[4], f->hp[5]};
    gpt_zero_grad(g);
    for (int s = 0; s < f->hdr[7]; s++) {
        gpt_zero_grad(g);
        gpt_forward(g, f->x, f->y, B, T, &loss);
        gpt_backward(g, 1.0f);
        double norm;
        gpt_adamw_step(g, &hp, f->hp[0], &norm);
        if (fabs(loss - f->losses[s]) > 1e-4 * f->losses[s])
            fprintf(stderr, "  step %d: loss %.7f, PyTorch %.7f\n", s, loss, f->losses[s]);
        CHECK_REL(loss, f->losses[s], 1e-4);
    }
    CHECK(*gpt_adam_t(g) == (uint64_t)f->hdr[7]);
    gpt_destroy(g);
}

int main(void)
{
    fixture f;
    memset(&f, 0, sizeof(f));
    CHECK(read_fixture(&f));
    if (f.params) {
        run(&f, 1);
        run(&f, 2);
    }
    free(f.params), free(f.grads), free(f.logits), free(f.losses), free(f.x), free(f.y);
    return check_summary("trainer.fixture");
}
