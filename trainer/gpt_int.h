/*
 * gpt_int.h — private to trainer/: the CPU layers (forward/backward pairs, llm.c-style, on a
 * contiguous slice of rows), the thread pool and the vectorisable maths they share. The tests
 * include it to check each layer against float64 finite differences.
 * Shapes: N rows (= B*T of one thread's slice), C channels, OC output channels, T time, hs head
 * size, NH heads, V vocabulary. Row-major everywhere.
 */
#ifndef GPT_INT_H
#define GPT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "trainer/gpt.h"

/* what this header declares is internal: hidden from libscaletune.so's exports (the static
 * library and the tests still link it); common/scaletune.map exports the public API */
#pragma GCC visibility push(hidden)

/* Hot loops get an AVX2+FMA clone picked at load time; the default clone runs anywhere. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define GPT_VEC __attribute__((target_clones("arch=haswell", "default")))
#else
#define GPT_VEC
#endif

/* ---- the activation layout, shared by the CPU and CUDA paths ------------------------------ */

/* Sizes (floats) of the activation tensors, in the order both paths carve their one block:
 * encoded, ln1, ln1 mean, ln1 rstd, qkv, atty, att, res2, ln2, ln2 mean, ln2 rstd, fch, fch_gelu,
 * res3, lnf, lnf mean, lnf rstd, logits, probs, losses. */
#define GPT_N_ACT 20
static inline void gpt_act_sizes(size_t B, size_t T, size_t C, size_t L, size_t NH,
                                 size_t out[GPT_N_ACT])
{
    size_t BT = B * T, V = GPT_VOCAB;
    size_t s[GPT_N_ACT] = {BT * C,
                           L * BT * C,
                           L * BT,
                           L * BT,
                           L * BT * 3 * C,
                           L * BT * C,
                           L * B * NH * T * T,
                           L * BT * C,
                           L * BT * C,
                           L * BT,
                           L * BT,
                           L * BT * 4 * C,
                           L * BT * 4 * C,
                           L * BT * C,
                           BT * C,
                           BT,
                           BT,
                           BT * V,
                           BT * V,
                           BT};
    for (int i = 0; i < GPT_N_ACT; i++)
        out[i] = s[i];
}

/* ---- thread pool (pool.c) --------------------------------------------------------------- */

typedef struct gpt_pool gpt_pool;
typedef void (*gpt_task_fn)(void *ctx, int tid, int n_threads);
/* Starts n_threads-1 workers (the caller is thread 0). ST_OK, ST_EINVAL or ST_ENOMEM. */
st_status gpt_pool_create(int n_threads, gpt_pool **out);
void gpt_pool_destroy(gpt_pool *p);
int gpt_pool_size(const gpt_pool *p);
/* Runs fn(ctx, tid, n) on every thread, the caller included, and returns when all are done. */
void gpt_pool_run(gpt_pool *p, gpt_task_fn fn, void *ctx);

/* ---- layers (layers.c) -------------------------------------------------------------------- */

#define GPT_LN_EPS 1e-5f

/* out (N,C) = wte[tok] + wpe[t], row r at position r % T. */
void gpt_encoder_forward(float *out, const uint8_t *tok, const float *wte, const float *wpe, int N,
                         int T, int C);
/* dwte, dwpe += the scatter of dout (N,C). */
void gpt_encoder_backward(float *dwte, float *dwpe, const float *dout, const uint8_t *tok, int N,
                          int T, int C);
/* out (N,C) = (x - mean) * rstd * w + b; mean, rstd (N) kept for the backward. */
void gpt_layernorm_forward(float *out, float *mean, float *rstd, const float *x, const float *w,
                           const float *b, int N, int C);
/* dx += ..., dw += ..., db += ... */
void gpt_layernorm_backward(float *dx, float *dw, float *db, const float *dout, const float *x,
                            const float *w, const float *mean, const float *rstd, int N, int C);
/* out (N,OC) = inp (N,C) · wᵀ (w: OC,C) + b (OC, may be NULL) + beta * out. */
void gpt_matmul_forward(float *out, const float *inp, const float *w, const float *b, int N, int C,
                        int OC, float beta);
/* dinp (N,C) = dout · w (overwritten; NULL skips), dw += doutᵀ · inp, db += column sums. */
void gpt_matmul_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                         const float *w, int N, int C, int OC);
/* tanh-GELU (Hendrycks & Gimpel 2016, eq. for the tanh approximation), n elements. */
void gpt_gelu_forward(float *out, const float *x, size_t n);
/* dx = dout * GELU'(x) (dx may alias dout). */
void gpt_gelu_backward(float *dx, const float *x, const float *dout, size_t n);
/*
 * Causal self-attention for nb sequences: qkv (nb,T,3C) → out (nb,T,C); att (nb,NH,T,T) keeps
 * the probabilities (zero above the diagonal). Scores scaled by 1/sqrt(hs).
 */
void gpt_attention_forward(float *out, float *att, const float *qkv, int nb, int T, int C, int NH);
/* dqkv (nb,T,3C) overwritten; scratch: T*T floats. */
void gpt_attention_backward(float *dqkv, float *scratch, const float *dout, const float *att,
                            const float *qkv, int nb, int T, int C, int NH);
/*
 * Softmax cross-entropy: probs (N,V) from logits (N,V); losses (N) = -log p[target].
 */
void gpt_crossentropy_forward(float *probs, float *losses, const float *logits,
                              const uint8_t *targets, int N, int V);
/* dlogits (N,V) = (probs - onehot(target)) * dscale. */
void gpt_crossentropy_backward(float *dlogits, const float *probs, const uint8_t *targets,
                               float dscale, int N, int V);

/* exp(x) for x in float range, about 2 ulp, branch-free so loops over it vectorise. */
static inline float gpt_expf(float x)
{
    x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    float z = x * 1.44269504088896341f;
    int n = (int)(z + 126.5f) - 126; /* round(z); the argument is positive, so truncation floors */
    float r = x - (float)n * 0.693145751953125f - (float)n * 1.42860682030941723212e-6f;
    /* e^r on |r| <= 0.35: Taylor series to degree 7 (error < 3e-9 relative) */
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    union {
        uint32_t u;
        float f;
    } s;
    s.u = (uint32_t)(n + 127) << 23;
    return p * s.f;
}

#pragma GCC visibility pop

#endif /* GPT_INT_H */
