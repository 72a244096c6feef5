/*
 * gpt_cuda.cu — the CUDA backend (gpt_backend_cuda): the same model as gpt.c, fp32, with cuBLAS
 * for every matrix product (row-major tensors passed as their column-major transposes) and small
 * kernels for the rest. Built only by `make cuda` (nvcc, sm_75 and newer) into
 * scaletune-train-cuda and the parity test; without a device, create() returns
 * ST_EUNSUPPORTED with a message instead of crashing. Not tuned: no fused attention, no mixed
 * precision; embedding and LayerNorm weight gradients use atomics, so runs are not bitwise
 * reproducible on the GPU. Shapes: B, T, C, V = 256, L, NH, hs (see gpt.h).
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/gpt_int.h"

enum { NT = 16 }; /* tensors, in gpt.c's order */
static const int decay[NT] = {1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0};

typedef struct cuda_gpt {
    gpt_config cfg;
    size_t sizes[NT], offs[NT], P;
    float *params, *grads, *m, *v; /* device */
    float *acts, *encoded, *ln1, *ln1m, *ln1r, *qkv, *atty, *att, *res2, *ln2, *ln2m, *ln2r, *fch,
        *fchg, *res3, *lnf, *lnfm, *lnfr, *logits, *probs, *losses;
    float *dacts, *dres, *dln, *datty, *dqkv, *dfch, *dlogits, *datt, *normbuf;
    uint8_t *inputs, *targets;
    float *h_losses, *h_norm;
    int B, T, have_targets;
    uint64_t t;
    cublasHandle_t blas;
    char errmsg[ST_ERRMSG_MAX];
} cuda_gpt;

#define NORM_BLOCKS 256

/* ---- kernels ------------------------------------------------------------------------------ */

__global__ void k_encoder(float *out, const uint8_t *tok, const float *wte, const float *wpe, int N,
                          int T, int C)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= (size_t)N * C)
        return;
    int r = (int)(i / C), c = (int)(i % C);
    out[i] = wte[(size_t)tok[r] * C + c] + wpe[(size_t)(r % T) * C + c];
}

__global__ void k_encoder_bw(float *dwte, float *dwpe, const float *d, const uint8_t *tok, int N,
                             int T, int C)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= (size_t)N * C)
        return;
    int r = (int)(i / C), c = (int)(i % C);
    atomicAdd(&dwte[(size_t)tok[r] * C + c], d[i]);
    atomicAdd(&dwpe[(size_t)(r % T) * C + c], d[i]);
}

__device__ float warp_sum(float x)
{
    for (int o = 16; o > 0; o >>= 1)
        x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

/* one warp per row */
__global__ void k_layernorm(float *out, float *mean, float *rstd, const float *x, const float *w,
                            const float *b, int N, int C)
{
    int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= N)
        return;
    const float *xr = x + (size_t)r * C;
    float s = 0;
    for (int c = lane; c < C; c += 32)
        s += xr[c];
    float m = warp_sum(s) / C;
    s = 0;
    for (int c = lane; c < C; c += 32)
        s += (xr[c] - m) * (xr[c] - m);
    float rs = rsqrtf(warp_sum(s) / C + 1e-5f);
    for (int c = lane; c < C; c += 32)
        out[(size_t)r * C + c] = (xr[c] - m) * rs * w[c] + b[c];
    if (lane == 0) {
        mean[r] = m;
        rstd[r] = rs;
    }
}

__global__ void k_layernorm_bw(float *dx, float *dw, float *db, const float *dout, const float *x,
                               const float *w, const float *mean, const float *rstd, int N, int C)
{
    int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= N)
        return;
    const float *xr = x + (size_t)r * C, *d = dout + (size_t)r * C;
    float m = mean[r], s = rstd[r], a = 0, bsum = 0;
    for (int c = lane; c < C; c += 32) {
        float n = (xr[c] - m) * s, dn = d[c] * w[c];
        a += dn;
        bsum += dn * n;
    }
    a = warp_sum(a) / C;
    bsum = warp_sum(bsum) / C;
    for (int c = lane; c < C; c += 32) {
        float n = (xr[c] - m) * s;
        atomicAdd(&dw[c], d[c] * n);
        atomicAdd(&db[c], d[c]);
        dx[(size_t)r * C + c] += s * (d[c] * w[c] - a - n * bsum);
    }
}

__global__ void k_bias(float *out, const float *b, int N, int OC)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < (size_t)N * OC)
        out[i] += b[i % OC];
}

/* column sums, one thread per column: fixed order */
__global__ void k_bias_bw(float *db, const float *d, int N, int OC)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= OC)
        return;
    float s = 0;
    for (int r = 0; r < N; r++)
        s += d[(size_t)r * OC + j];
    db[j] += s;
}

#define GK 0.7978845608028654f
__global__ void k_gelu(float *out, const float *x, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = x[i];
    out[i] = 0.5f * v * (1.0f + tanhf(GK * (v + 0.044715f * v * v * v)));
}

__global__ void k_gelu_bw(float *dx, const float *x, const float *d, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = x[i], th = tanhf(GK * (v + 0.044715f * v * v * v));
    float du = GK * (1.0f + 3.0f * 0.044715f * v * v);
    dx[i] = d[i] * (0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * du);
}

/* one warp per row of T scores; row t keeps columns 0..t */
__global__ void k_causal_softmax(float *S, int rows, int T)
{
    int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows)
        return;
    int t = r % T;
    float *row = S + (size_t)r * T;
    float m = -INFINITY;
    for (int j = lane; j <= t; j += 32)
        m = fmaxf(m, row[j]);
    for (int o = 16; o > 0; o >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0;
    for (int j = lane; j <= t; j += 32)
        s += expf(row[j] - m);
    float inv = 1.0f / warp_sum(s);
    for (int j = lane; j < T; j += 32)
        row[j] = j <= t ? expf(row[j] - m) * inv : 0.0f;
}

__global__ void k_causal_softmax_bw(float *dS, const float *P, int rows, int T, float scale)
{
    int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows)
        return;
    int t = r % T;
    float *d = dS + (size_t)r * T;
    const float *p = P + (size_t)r * T;
    float s = 0;
    for (int j = lane; j <= t; j += 32)
        s += p[j] * d[j];
    s = warp_sum(s);
    for (int j = lane; j < T; j += 32)
        d[j] = j <= t ? p[j] * (d[j] - s) * scale : 0.0f;
}

/* one block of 256 threads per row (V = 256) */
__global__ void k_crossentropy(float *probs, float *losses, const float *logits,
                               const uint8_t *targets, int N)
{
    __shared__ float red[256];
    int r = blockIdx.x, j = threadIdx.x;
    float z = logits[(size_t)r * 256 + j];
    red[j] = z;
    __syncthreads();
    for (int o = 128; o > 0; o >>= 1) {
        if (j < o)
            red[j] = fmaxf(red[j], red[j + o]);
        __syncthreads();
    }
    float m = red[0];
    __syncthreads();
    float e = expf(z - m);
    red[j] = e;
    __syncthreads();
    for (int o = 128; o > 0; o >>= 1) {
        if (j < o)
            red[j] += red[j + o];
        __syncthreads();
    }
    float s = red[0];
    probs[(size_t)r * 256 + j] = e / s;
    if (j == targets[r])
        losses[r] = logf(s) - (z - m);
    (void)N;
}

__global__ void k_crossentropy_bw(float *d, const float *probs, const uint8_t *targets,
                                  float dscale, int N)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= (size_t)N * 256)
        return;
    int r = (int)(i / 256), j = (int)(i % 256);
    d[i] = (probs[i] - (j == targets[r] ? 1.0f : 0.0f)) * dscale;
}

__global__ void k_sumsq(float *out, const float *g, size_t n)
{
    __shared__ float red[256];
    float s = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        s += g[i] * g[i];
    red[threadIdx.x] = s;
    __syncthreads();
    for (int o = 128; o > 0; o >>= 1) {
        if (threadIdx.x < o)
            red[threadIdx.x] += red[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = red[0];
}

__global__ void k_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr,
                        float gscale, float b1, float b2, float eps, float wd, float bc1,
                        float bc2_sqrt)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float gi = g[i] * gscale;
    m[i] = b1 * m[i] + (1.0f - b1) * gi;
    v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
    float pi = p[i] * (1.0f - lr * wd);
    p[i] = pi - (lr / bc1) * m[i] / (sqrtf(v[i]) / bc2_sqrt + eps);
}

/* ---- helpers ------------------------------------------------------------------------------ */

static unsigned nblk(size_t n, unsigned t)
{
    return (unsigned)((n + t - 1) / t);
}

/* row-major out (N,OC) = inp (N,C) · wᵀ + beta·out (+ b) */
static void mm_fw(cuda_gpt *g, float *out, const float *inp, const float *w, const float *b, int N,
                  int C, int OC, float beta)
{
    float one = 1.0f;
    cublasSgemm(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, &one, w, C, inp, C, &beta, out, OC);
    if (b)
        k_bias<<<nblk((size_t)N * OC, 256), 256>>>(out, b, N, OC);
}

static void mm_bw(cuda_gpt *g, float *dinp, float *dw, float *db, const float *dout,
                  const float *inp, const float *w, int N, int C, int OC)
{
    float one = 1.0f, zero = 0.0f;
    if (dinp)
        cublasSgemm(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, &one, w, C, dout, OC, &zero, dinp,
                    C);
    cublasSgemm(g->blas, CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, &one, inp, C, dout, OC, &one, dw, C);
    if (db)
        k_bias_bw<<<nblk((size_t)OC, 128), 128>>>(db, dout, N, OC);
}

static void attn_fw(cuda_gpt *g, float *y, float *att, const float *qkv, int B, int T)
{
    int C = g->cfg.d_model, NH = g->cfg.n_head, hs = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs), one = 1.0f, zero = 0.0f;
    for (int b = 0; b < B; b++) {
        const float *q = qkv + (size_t)b * T * C3, *k = q + C, *v = q + 2 * C;
        float *S = att + (size_t)b * NH * T * T, *yb = y + (size_t)b * T * C;
        cublasSgemmStridedBatched(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, &scale, k, C3, hs, q,
                                  C3, hs, &zero, S, T, (long long)T * T, NH);
        k_causal_softmax<<<nblk((size_t)NH * T, 8), 256>>>(S, NH * T, T);
        cublasSgemmStridedBatched(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, &one, v, C3, hs, S,
                                  T, (long long)T * T, &zero, yb, C, hs, NH);
    }
}

static void attn_bw(cuda_gpt *g, float *dqkv, const float *dy, const float *att, const float *qkv,
                    int B, int T)
{
    int C = g->cfg.d_model, NH = g->cfg.n_head, hs = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs), one = 1.0f, zero = 0.0f;
    long long TT = (long long)T * T;
    for (int b = 0; b < B; b++) {
        size_t o3 = (size_t)b * T * C3;
        const float *q = qkv + o3, *k = q + C, *v = q + 2 * C;
        float *dq = dqkv + o3, *dk = dq + C, *dv = dq + 2 * C;
        const float *P = att + (size_t)b * NH * T * T, *dyb = dy + (size_t)b * T * C;
        float *dS = g->datt + (size_t)b * NH * T * T;
        cublasSgemmStridedBatched(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, &one, v, C3, hs, dyb,
                                  C, hs, &zero, dS, T, TT, NH);
        cublasSgemmStridedBatched(g->blas, CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, &one, dyb, C, hs, P,
                                  T, TT, &zero, dv, C3, hs, NH);
        k_causal_softmax_bw<<<nblk((size_t)NH * T, 8), 256>>>(dS, P, NH * T, T, scale);
        cublasSgemmStridedBatched(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, &one, k, C3, hs, dS,
                                  T, TT, &zero, dq, C3, hs, NH);
        cublasSgemmStridedBatched(g->blas, CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, &one, q, C3, hs, dS,
                                  T, TT, &zero, dk, C3, hs, NH);
    }
}

static st_status cuda_check(cuda_gpt *g, const char *what)
{
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        return ST_OK;
    return st_errf(g->errmsg, e == cudaErrorMemoryAllocation ? ST_ENOMEM : ST_EBACKEND,
                   "CUDA error in %s: %s", what, cudaGetErrorString(e));
}

/* ---- backend entry points ------------------------------------------------------------------ */

static void cu_destroy(void *mp)
{
    cuda_gpt *g = (cuda_gpt *)mp;
    if (!g)
        return;
    cudaFree(g->params);
    cudaFree(g->grads);
    cudaFree(g->m);
    cudaFree(g->v);
    cudaFree(g->acts);
    cudaFree(g->dacts);
    cudaFree(g->inputs);
    cudaFree(g->targets);
    if (g->blas)
        cublasDestroy(g->blas);
    free(g->h_losses);
    free(g->h_norm);
    free(g);
}

static st_status cu_create(const gpt_config *cfg, int n_threads, void **out, char *err)
{
    (void)n_threads;
    *out = NULL;
    int n_dev = 0;
    cudaError_t e = cudaGetDeviceCount(&n_dev);
    if (e != cudaSuccess || n_dev == 0) {
        cudaGetLastError();
        return st_errf(err, ST_EUNSUPPORTED, "no CUDA device is available (%s)",
                       e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    }
    if (cfg->d_model % cfg->n_head || cfg->n_layer < 1 || cfg->batch < 1 || cfg->seq_len < 1)
        return st_errf(err, ST_EINVAL, "invalid model shape");
    cuda_gpt *g = (cuda_gpt *)calloc(1, sizeof(*g));
    if (!g)
        return st_errf(err, ST_ENOMEM, "out of memory");
    g->cfg = *cfg;
    size_t C = cfg->d_model, L = cfg->n_layer, Tm = cfg->seq_len, B = cfg->batch, NH = cfg->n_head;
    size_t V = GPT_VOCAB, BT = B * Tm;
    size_t s[NT] = {V * C,         Tm * C, L * C, L * C, L * 3 * C * C, L * 3 * C,
                    L * C * C,     L * C,  L * C, L * C, L * 4 * C * C, L * 4 * C,
                    L * 4 * C * C, L * C,  C,     C};
    for (int i = 0; i < NT; i++) {
        g->sizes[i] = s[i];
        g->offs[i] = g->P;
        g->P += s[i];
    }
    size_t as[GPT_N_ACT];
    gpt_act_sizes(B, Tm, C, L, NH, as);
    float **ap[] = {&g->encoded, &g->ln1,  &g->ln1m, &g->ln1r,   &g->qkv,   &g->atty,  &g->att,
                    &g->res2,    &g->ln2,  &g->ln2m, &g->ln2r,   &g->fch,   &g->fchg,  &g->res3,
                    &g->lnf,     &g->lnfm, &g->lnfr, &g->logits, &g->probs, &g->losses};
    size_t ds[] = {BT * C,     BT * C, BT * C,           BT * 3 * C,
                   BT * 4 * C, BT * V, B * NH * Tm * Tm, NORM_BLOCKS};
    float **dp[] = {&g->dres, &g->dln,     &g->datty, &g->dqkv,
                    &g->dfch, &g->dlogits, &g->datt,  &g->normbuf};
    size_t na = 0, nd = 0;
    for (size_t i = 0; i < sizeof(as) / sizeof(as[0]); i++)
        na += as[i];
    for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++)
        nd += ds[i];
    int ok =
        cudaMalloc(&g->params, g->P * 4) == cudaSuccess &&
        cudaMalloc(&g->grads, g->P * 4) == cudaSuccess &&
        cudaMalloc(&g->m, g->P * 4) == cudaSuccess && cudaMalloc(&g->v, g->P * 4) == cudaSuccess &&
        cudaMalloc(&g->acts, na * 4) == cudaSuccess &&
        cudaMalloc(&g->dacts, nd * 4) == cudaSuccess && cudaMalloc(&g->inputs, BT) == cudaSuccess &&
        cudaMalloc(&g->targets, BT) == cudaSuccess;
    g->h_losses = (float *)malloc(BT * 4);
    g->h_norm = (float *)malloc(NORM_BLOCKS * 4);
    if (!ok || !g->h_losses || !g->h_norm) {
        size_t P = g->P;
        cudaGetLastError();
        cu_destroy(g);
        return st_errf(err, ST_ENOMEM, "out of GPU memory for %zu parameters", P);
    }
    if (cublasCreate(&g->blas) != CUBLAS_STATUS_SUCCESS) {
        g->blas = NULL;
        cu_destroy(g);
        return st_errf(err, ST_EBACKEND, "cublasCreate failed");
    }
    float *p = g->acts;
    for (size_t i = 0; i < sizeof(as) / sizeof(as[0]); i++) {
        *ap[i] = p;
        p += as[i];
    }
    p = g->dacts;
    for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++) {
        *dp[i] = p;
        p += ds[i];
    }
    cudaMemset(g->params, 0, g->P * 4);
    cudaMemset(g->grads, 0, g->P * 4);
    cudaMemset(g->m, 0, g->P * 4);
    cudaMemset(g->v, 0, g->P * 4);
    *out = g;
    return ST_OK;
}

static size_t cu_num_params(const void *mp)
{
    return ((const cuda_gpt *)mp)->P;
}

static st_status cu_set_state(void *mp, const float *params, const float *am, const float *av,
                              uint64_t t)
{
    cuda_gpt *g = (cuda_gpt *)mp;
    if (params)
        cudaMemcpy(g->params, params, g->P * 4, cudaMemcpyHostToDevice);
    if (am)
        cudaMemcpy(g->m, am, g->P * 4, cudaMemcpyHostToDevice);
    if (av)
        cudaMemcpy(g->v, av, g->P * 4, cudaMemcpyHostToDevice);
    g->t = t;
    return cuda_check(g, "set_state");
}

static st_status cu_get_state(void *mp, float *params, float *am, float *av, uint64_t *t)
{
    cuda_gpt *g = (cuda_gpt *)mp;
    if (params)
        cudaMemcpy(params, g->params, g->P * 4, cudaMemcpyDeviceToHost);
    if (am)
        cudaMemcpy(am, g->m, g->P * 4, cudaMemcpyDeviceToHost);
    if (av)
        cudaMemcpy(av, g->v, g->P * 4, cudaMemcpyDeviceToHost);
    if (t)
        *t = g->t;
    return cuda_check(g, "get_state");
}

/* the CPU model draws the initial weights, so both devices start from the same numbers */
static st_status cu_init_weights(void *mp, float init_std, uint64_t seed)
{
    cuda_gpt *g = (cuda_gpt *)mp;
    gpt *h;
    st_status s = gpt_create(&g->cfg, 1, &h, g->errmsg);
    if (s != ST_OK)
        return s;
    s = gpt_init_weights(h, init_std, seed);
    if (s == ST_OK)
        s = cu_set_state(g, gpt_params(h), gpt_adam_m(h), gpt_adam_v(h), 0);
    else
        st_errf(g->errmsg, s, "%s", gpt_errmsg(h));
    gpt_destroy(h);
    return s;
}

static st_status cu_forward(void *mp, const uint8_t *in, const uint8_t *tg, int B, int T,
                            float *loss)
{
    cuda_gpt *g = (cuda_gpt *)mp;
    g->errmsg[0] = 0;
    if (B < 1 || B > g->cfg.batch || T < 1 || T > g->cfg.seq_len)
        return st_errf(g->errmsg, ST_EINVAL, "B=%d T=%d out of range", B, T);
    int C = g->cfg.d_model, L = g->cfg.n_layer, NH = g->cfg.n_head, N = B * T;
    size_t BT = (size_t)N;
    g->B = B;
    g->T = T;
    cudaMemcpy(g->inputs, in, BT, cudaMemcpyHostToDevice);
    g->have_targets = tg != NULL;
    if (tg)
        cudaMemcpy(g->targets, tg, BT, cudaMemcpyHostToDevice);
    float *w[NT];
    for (int i = 0; i < NT; i++)
        w[i] = g->params + g->offs[i];
    unsigned rows_blk = nblk(BT, 8);
    k_encoder<<<nblk(BT * C, 256), 256>>>(g->encoded, g->inputs, w[0], w[1], N, T, C);
    for (int l = 0; l < L; l++) {
        size_t lc = (size_t)l * C;
        const float *res = l == 0 ? g->encoded : g->res3 + (l - 1) * BT * C;
        float *ln1 = g->ln1 + l * BT * C, *qkv = g->qkv + l * BT * 3 * C;
        float *atty = g->atty + l * BT * C, *att = g->att + (size_t)l * B * NH * T * T;
        float *res2 = g->res2 + l * BT * C, *ln2 = g->ln2 + l * BT * C;
        float *fch = g->fch + l * BT * 4 * C, *fchg = g->fchg + l * BT * 4 * C;
        float *res3 = g->res3 + l * BT * C;
        k_layernorm<<<rows_blk, 256>>>(ln1, g->ln1m + l * BT, g->ln1r + l * BT, res, w[2] + lc,
                                       w[3] + lc, N, C);
        mm_fw(g, qkv, ln1, w[4] + lc * 3 * C, w[5] + lc * 3, N, C, 3 * C, 0.0f);
        attn_fw(g, atty, att, qkv, B, T);
        cudaMemcpy(res2, res, BT * C * 4, cudaMemcpyDeviceToDevice);
        mm_fw(g, res2, atty, w[6] + lc * C, w[7] + lc, N, C, C, 1.0f);
        k_layernorm<<<rows_blk, 256>>>(ln2, g->ln2m + l * BT, g->ln2r + l * BT, res2, w[8] + lc,
                                       w[9] + lc, N, C);
        mm_fw(g, fch, ln2, w[10] + lc * 4 * C, w[11] + lc * 4, N, C, 4 * C, 0.0f);
        k_gelu<<<nblk(BT * 4 * C, 256), 256>>>(fchg, fch, BT * 4 * C);
        cudaMemcpy(res3, res2, BT * C * 4, cudaMemcpyDeviceToDevice);
        mm_fw(g, res3, fchg, w[12] + lc * 4 * C, w[13] + lc, N, 4 * C, C, 1.0f);
    }
    k_layernorm<<<rows_blk, 256>>>(g->lnf, g->lnfm, g->lnfr, g->res3 + (L - 1) * BT * C, w[14],
                                   w[15], N, C);
    mm_fw(g, g->logits, g->lnf, w[0], NULL, N, C, GPT_VOCAB, 0.0f);
    if (tg) {
        k_crossentropy<<<N, 256>>>(g->probs, g->losses, g->logits, g->targets, N);
        cudaMemcpy(g->h_losses, g->losses, BT * 4, cudaMemcpyDeviceToHost);
        double s = 0;
        for (size_t i = 0; i < BT; i++)
            s += g->h_losses[i];
        if (loss)
            *loss = (float)(s / (double)BT);
    }
    return cuda_check(g, "forward");
}

static void cu_zero_grad(void *mp)
{
    cuda_gpt *g = (cuda_gpt *)mp;
    cudaMemset(g->grads, 0, g->P * 4);
}

static st_status cu_backward(void *mp, float scale)
{
    cuda_gpt *g = (cuda_gpt *)mp;
    g->errmsg[0] = 0;
    if (!g->have_targets)
        return st_errf(g->errmsg, ST_ESTATE, "backward needs a forward with targets first");
    int B = g->B, T = g->T, C = g->cfg.d_model, L = g->cfg.n_layer, NH = g->cfg.n_head;
    int N = B * T;
    size_t BT = (size_t)N;
    float *w[NT], *d[NT];
    for (int i = 0; i < NT; i++) {
        w[i] = g->params + g->offs[i];
        d[i] = g->grads + g->offs[i];
    }
    unsigned rows_blk = nblk(BT, 8);
    k_crossentropy_bw<<<nblk(BT * 256, 256), 256>>>(g->dlogits, g->probs, g->targets,
                                                    scale / (float)BT, N);
    mm_bw(g, g->dln, d[0], NULL, g->dlogits, g->lnf, w[0], N, C, GPT_VOCAB);
    cudaMemset(g->dres, 0, BT * C * 4);
    k_layernorm_bw<<<rows_blk, 256>>>(g->dres, d[14], d[15], g->dln, g->res3 + (L - 1) * BT * C,
                                      w[14], g->lnfm, g->lnfr, N, C);
    for (int l = L - 1; l >= 0; l--) {
        size_t lc = (size_t)l * C;
        const float *res = l == 0 ? g->encoded : g->res3 + (l - 1) * BT * C;
        mm_bw(g, g->dfch, d[12] + lc * 4 * C, d[13] + lc, g->dres, g->fchg + l * BT * 4 * C,
              w[12] + lc * 4 * C, N, 4 * C, C);
        k_gelu_bw<<<nblk(BT * 4 * C, 256), 256>>>(g->dfch, g->fch + l * BT * 4 * C, g->dfch,
                                                  BT * 4 * C);
        mm_bw(g, g->dln, d[10] + lc * 4 * C, d[11] + lc * 4, g->dfch, g->ln2 + l * BT * C,
              w[10] + lc * 4 * C, N, C, 4 * C);
        k_layernorm_bw<<<rows_blk, 256>>>(g->dres, d[8] + lc, d[9] + lc, g->dln,
                                          g->res2 + l * BT * C, w[8] + lc, g->ln2m + l * BT,
                                          g->ln2r + l * BT, N, C);
        mm_bw(g, g->datty, d[6] + lc * C, d[7] + lc, g->dres, g->atty + l * BT * C, w[6] + lc * C,
              N, C, C);
        attn_bw(g, g->dqkv, g->datty, g->att + (size_t)l * B * NH * T * T, g->qkv + l * BT * 3 * C,
                B, T);
        mm_bw(g, g->dln, d[4] + lc * 3 * C, d[5] + lc * 3, g->dqkv, g->ln1 + l * BT * C,
              w[4] + lc * 3 * C, N, C, 3 * C);
        k_layernorm_bw<<<rows_blk, 256>>>(g->dres, d[2] + lc, d[3] + lc, g->dln, res, w[2] + lc,
                                          g->ln1m + l * BT, g->ln1r + l * BT, N, C);
    }
    k_encoder_bw<<<nblk(BT * C, 256), 256>>>(d[0], d[1], g->dres, g->inputs, N, T, C);
    g->have_targets = 0;
    return cuda_check(g, "backward");
}

static st_status cu_adamw_step(void *mp, const gpt_adamw *hp, float lr, double *grad_norm)
{
    cuda_gpt *g = (cuda_gpt *)mp;
    g->errmsg[0] = 0;
    k_sumsq<<<NORM_BLOCKS, 256>>>(g->normbuf, g->grads, g->P);
    cudaMemcpy(g->h_norm, g->normbuf, NORM_BLOCKS * 4, cudaMemcpyDeviceToHost);
    double s = 0;
    for (int i = 0; i < NORM_BLOCKS; i++)
        s += g->h_norm[i];
    double norm = sqrt(s);
    if (grad_norm)
        *grad_norm = norm;
    float gscale = 1.0f;
    if (hp->clip > 0.0f && hp->clip / (norm + 1e-6) < 1.0)
        gscale = (float)(hp->clip / (norm + 1e-6));
    g->t++;
    float bc1 = 1.0f - powf(hp->beta1, (float)g->t),
          bc2 = sqrtf(1.0f - powf(hp->beta2, (float)g->t));
    for (int k = 0; k < NT; k++)
        k_adamw<<<nblk(g->sizes[k], 256), 256>>>(g->params + g->offs[k], g->grads + g->offs[k],
                                                 g->m + g->offs[k], g->v + g->offs[k], g->sizes[k],
                                                 lr, gscale, hp->beta1, hp->beta2, hp->eps,
                                                 decay[k] ? hp->weight_decay : 0.0f, bc1, bc2);
    return cuda_check(g, "adamw");
}

static st_status cu_get_grads(void *mp, float *grads)
{
    cuda_gpt *g = (cuda_gpt *)mp;
    cudaMemcpy(grads, g->grads, g->P * 4, cudaMemcpyDeviceToHost);
    return cuda_check(g, "get_grads");
}

static st_status cu_get_logits(void *mp, float *logits, size_t n)
{
    cuda_gpt *g = (cuda_gpt *)mp;
    if (n > (size_t)g->B * g->T * GPT_VOCAB)
        return ST_EINVAL;
    cudaMemcpy(logits, g->logits, n * 4, cudaMemcpyDeviceToHost);
    return cuda_check(g, "get_logits");
}

static const char *cu_errmsg(const void *mp)
{
    return mp ? ((const cuda_gpt *)mp)->errmsg : "no model";
}

extern "C" const gpt_backend gpt_backend_cuda = {
    "cuda",       cu_create,    cu_destroy,    cu_init_weights, cu_forward,
    cu_zero_grad, cu_backward,  cu_adamw_step, cu_num_params,   cu_get_state,
    cu_set_state, cu_get_grads, cu_get_logits, cu_errmsg,
};
