/*
 * layers.c — the CPU layers of the GPT, each a forward/backward pair on a contiguous slice of
 * rows (llm.c's structure, written afresh): embedding, LayerNorm, linear (OpenBLAS sgemm),
 * tanh-GELU, causal attention (sgemm per head), softmax cross-entropy. No allocation, no threads:
 * gpt.c gives each pool thread its own rows and its own gradient buffer.
 * Element loops are written to vectorise (gpt_expf instead of libm's tanhf/expf, eight partial
 * sums for reductions) and get an AVX2 clone through GPT_VEC.
 */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "trainer/gpt_int.h"

/* Sum of n floats with eight partial sums (vectorises, fixed order, so reproducible). */
static inline float sum8(const float *x, int n)
{
    float acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            acc[k] += x[i + k];
    float s = 0.0f;
    for (; i < n; i++)
        s += x[i];
    return s + ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

static inline float dot8(const float *x, const float *y, int n)
{
    float acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            acc[k] += x[i + k] * y[i + k];
    float s = 0.0f;
    for (; i < n; i++)
        s += x[i] * y[i];
    return s + ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

static inline float max_f(const float *x, int n)
{
    float m = x[0];
    for (int i = 1; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

/* ---- embedding: out[r] = wte[tok[r]] + wpe[r % T] ---------------------------------------- */

void gpt_encoder_forward(float *out, const uint8_t *tok, const float *wte, const float *wpe, int N,
                         int T, int C)
{
    for (int r = 0; r < N; r++) {
        const float *e = wte + (size_t)tok[r] * C, *p = wpe + (size_t)(r % T) * C;
        float *o = out + (size_t)r * C;
        for (int c = 0; c < C; c++)
            o[c] = e[c] + p[c];
    }
}

void gpt_encoder_backward(float *dwte, float *dwpe, const float *dout, const uint8_t *tok, int N,
                          int T, int C)
{
    for (int r = 0; r < N; r++) {
        float *e = dwte + (size_t)tok[r] * C, *p = dwpe + (size_t)(r % T) * C;
        const float *d = dout + (size_t)r * C;
        for (int c = 0; c < C; c++) {
            e[c] += d[c];
            p[c] += d[c];
        }
    }
}

/* ---- LayerNorm (Ba et al. 2016): y = (x - μ) / sqrt(σ² + ε) · w + b ------------------------- */

GPT_VEC
void gpt_layernorm_forward(float *out, float *mean, float *rstd, const float *x, const float *w,
                           const float *b, int N, int C)
{
    for (int r = 0; r < N; r++) {
        const float *xr = x + (size_t)r * C;
        float *o = out + (size_t)r * C;
        float m = sum8(xr, C) / (float)C;
        for (int c = 0; c < C; c++)
            o[c] = xr[c] - m; /* centred, reused below */
        float var = dot8(o, o, C) / (float)C;
        float s = 1.0f / sqrtf(var + GPT_LN_EPS);
        for (int c = 0; c < C; c++)
            o[c] = o[c] * s * w[c] + b[c];
        mean[r] = m;
        rstd[r] = s;
    }
}

/* dx = rstd · (dn - mean(dn) - n · mean(dn · n)), dn = dout · w, n = normalised x */
GPT_VEC
void gpt_layernorm_backward(float *dx, float *dw, float *db, const float *dout, const float *x,
                            const float *w, const float *mean, const float *rstd, int N, int C)
{
    for (int r = 0; r < N; r++) {
        const float *xr = x + (size_t)r * C, *d = dout + (size_t)r * C;
        float *dxr = dx + (size_t)r * C;
        float m = mean[r], s = rstd[r];
        float a0[8] = {0}, a1[8] = {0};
        int c = 0;
        for (; c + 8 <= C; c += 8)
            for (int k = 0; k < 8; k++) {
                float n = (xr[c + k] - m) * s, dn = d[c + k] * w[c + k];
                a0[k] += dn;
                a1[k] += dn * n;
            }
        float mdn = 0.0f, mdnn = 0.0f;
        for (; c < C; c++) {
            float n = (xr[c] - m) * s, dn = d[c] * w[c];
            mdn += dn;
            mdnn += dn * n;
        }
        for (int k = 0; k < 8; k++) {
            mdn += a0[k];
            mdnn += a1[k];
        }
        mdn /= (float)C;
        mdnn /= (float)C;
        for (c = 0; c < C; c++) {
            float n = (xr[c] - m) * s;
            dw[c] += d[c] * n;
            db[c] += d[c];
            dxr[c] += s * (d[c] * w[c] - mdn - n * mdnn);
        }
    }
}

/* ---- linear: out = inp · wᵀ + b ------------------------------------------------------------ */

void gpt_matmul_forward(float *out, const float *inp, const float *w, const float *b, int N, int C,
                        int OC, float beta)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, 1.0f, inp, C, w, C, beta, out,
                OC);
    if (b)
        for (int r = 0; r < N; r++) {
            float *o = out + (size_t)r * OC;
            for (int j = 0; j < OC; j++)
                o[j] += b[j];
        }
}

void gpt_matmul_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                         const float *w, int N, int C, int OC)
{
    if (dinp) /* dinp (N,C) = dout (N,OC) · w (OC,C) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, 1.0f, dout, OC, w, C, 0.0f,
                    dinp, C);
    /* dw (OC,C) += doutᵀ (OC,N) · inp (N,C) */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dw,
                C);
    if (db)
        for (int r = 0; r < N; r++) {
            const float *d = dout + (size_t)r * OC;
            for (int j = 0; j < OC; j++)
                db[j] += d[j];
        }
}

/* ---- GELU, tanh form: 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))) --------------------------- */

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

/* tanh(u) = 1 - 2 / (1 + e^{2u}); gpt_expf saturates cleanly at both ends */
static inline float fast_tanh(float u)
{
    return 1.0f - 2.0f / (1.0f + gpt_expf(2.0f * u));
}

GPT_VEC
void gpt_gelu_forward(float *out, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        float u = GELU_K * (v + 0.044715f * v * v * v);
        out[i] = 0.5f * v * (1.0f + fast_tanh(u));
    }
}

GPT_VEC
void gpt_gelu_backward(float *dx, const float *x, const float *dout, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        float u = GELU_K * (v + 0.044715f * v * v * v);
        float th = fast_tanh(u);
        float du = GELU_K * (1.0f + 3.0f * 0.044715f * v * v);
        dx[i] = dout[i] * (0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * du);
    }
}

/* ---- causal self-attention (Vaswani et al. 2017, eq. 1), one sgemm pair per head --------- */

/* p[0..t] = softmax(s[0..t]); p[t+1..T) = 0, in place */
GPT_VEC
static void causal_softmax_rows(float *S, int T)
{
    for (int t = 0; t < T; t++) {
        float *row = S + (size_t)t * T;
        int n = t + 1;
        float m = max_f(row, n);
        for (int j = 0; j < n; j++)
            row[j] = gpt_expf(row[j] - m);
        float inv = 1.0f / sum8(row, n);
        for (int j = 0; j < n; j++)
            row[j] *= inv;
        memset(row + n, 0, sizeof(float) * (size_t)(T - n));
    }
}

void gpt_attention_forward(float *out, float *att, const float *qkv, int nb, int T, int C, int NH)
{
    int hs = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < nb; b++)
        for (int h = 0; h < NH; h++) {
            const float *q = qkv + (size_t)b * T * C3 + (size_t)h * hs;
            const float *k = q + C, *v = q + 2 * C;
            float *S = att + ((size_t)b * NH + h) * T * T;
            float *y = out + (size_t)b * T * C + (size_t)h * hs;
            /* S (T,T) = scale · q kᵀ; the upper triangle is computed and then masked */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, q, C3, k, C3,
                        0.0f, S, T);
            causal_softmax_rows(S, T);
            /* y (T,hs) = P v */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, S, T, v, C3,
                        0.0f, y, C);
        }
}

/* dS = P ⊙ (dP - rowsum(P ⊙ dP)) · scale, in place in dP (rows up to the diagonal) */
GPT_VEC
static void causal_softmax_backward_rows(float *dP, const float *P, int T, float scale)
{
    for (int t = 0; t < T; t++) {
        float *d = dP + (size_t)t * T;
        const float *p = P + (size_t)t * T;
        int n = t + 1;
        float s = dot8(p, d, n);
        for (int j = 0; j < n; j++)
            d[j] = p[j] * (d[j] - s) * scale;
        memset(d + n, 0, sizeof(float) * (size_t)(T - n));
    }
}

void gpt_attention_backward(float *dqkv, float *scratch, const float *dout, const float *att,
                            const float *qkv, int nb, int T, int C, int NH)
{
    int hs = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < nb; b++)
        for (int h = 0; h < NH; h++) {
            size_t off = (size_t)b * T * C3 + (size_t)h * hs;
            const float *q = qkv + off, *k = q + C, *v = q + 2 * C;
            float *dq = dqkv + off, *dk = dq + C, *dv = dq + 2 * C;
            const float *P = att + ((size_t)b * NH + h) * T * T;
            const float *dy = dout + (size_t)b * T * C + (size_t)h * hs;
            /* dP (T,T) = dy vᵀ;  dv (T,hs) = Pᵀ dy */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, dy, C, v, C3, 0.0f,
                        scratch, T);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, P, T, dy, C, 0.0f,
                        dv, C3);
            causal_softmax_backward_rows(scratch, P, T, scale);
            /* dq = dS k;  dk = dSᵀ q */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, scratch, T, k,
                        C3, 0.0f, dq, C3);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, scratch, T, q, C3,
                        0.0f, dk, C3);
        }
}

/* ---- softmax cross-entropy ------------------------------------------------------------------ */

GPT_VEC
void gpt_crossentropy_forward(float *probs, float *losses, const float *logits,
                              const uint8_t *targets, int N, int V)
{
    for (int r = 0; r < N; r++) {
        const float *z = logits + (size_t)r * V;
        float *p = probs + (size_t)r * V;
        float m = max_f(z, V);
        for (int j = 0; j < V; j++)
            p[j] = gpt_expf(z[j] - m);
        float s = sum8(p, V), inv = 1.0f / s;
        for (int j = 0; j < V; j++)
            p[j] *= inv;
        /* -log p[y] = log s - (z[y] - m), without the rounding of the normalised probability */
        if (losses)
            losses[r] = logf(s) - (z[targets[r]] - m);
    }
}

void gpt_crossentropy_backward(float *dlogits, const float *probs, const uint8_t *targets,
                               float dscale, int N, int V)
{
    for (int r = 0; r < N; r++) {
        const float *p = probs + (size_t)r * V;
        float *d = dlogits + (size_t)r * V;
        for (int j = 0; j < V; j++)
            d[j] = p[j] * dscale;
        d[targets[r]] -= dscale;
    }
}
