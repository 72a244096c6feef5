/*
 * gpt.c — the CPU model: parameter layout, the forward and backward passes over the layers of
 * layers.c, AdamW, gradient norm and clipping, and the CPU entry of gpt_backend.
 * Parameters, gradients, AdamW moments, activations and activation gradients are each one block
 * with named views (llm.c's layout). Parallelism: the pool splits the batch, each thread runs the
 * whole forward/backward on its sequences with OpenBLAS single-threaded, and writes parameter
 * gradients into its own buffer; the buffers are summed in thread order afterwards, so results
 * depend on the thread count but are otherwise bitwise reproducible. Not a graph engine.
 * Shapes: B, T, C, V = 256, L, NH, hs = C/NH (see gpt.h).
 */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/gpt_int.h"

enum {
    P_WTE,
    P_WPE,
    P_LN1W,
    P_LN1B,
    P_QKVW,
    P_QKVB,
    P_ATTPROJW,
    P_ATTPROJB,
    P_LN2W,
    P_LN2B,
    P_FCW,
    P_FCB,
    P_FCPROJW,
    P_FCPROJB,
    P_LNFW,
    P_LNFB,
    N_TENSORS
};

static const char *const tensor_names[N_TENSORS] = {
    "wte",  "wpe",  "ln1w", "ln1b", "qkvw",    "qkvb",    "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw",  "fcb",  "fcprojw", "fcprojb", "lnfw",     "lnfb",
};
/* which tensors get weight decay: matrices and embeddings */
static const int tensor_decay[N_TENSORS] = {1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0};

/* views into one parameter-shaped block */
typedef struct views {
    float *t[N_TENSORS];
} views;

struct gpt {
    gpt_config cfg;
    int n_threads;
    gpt_pool *pool;
    size_t sizes[N_TENSORS], offsets[N_TENSORS], n_params;
    float *params, *grads, *m, *v, *tgrads; /* tgrads: (n_threads-1) extra gradient blocks */
    uint64_t t;

    /* activations, sized for cfg.batch x cfg.seq_len, indexed with the current B, T */
    float *acts;
    float *encoded, *ln1, *ln1_mean, *ln1_rstd, *qkv, *atty, *att, *res2, *ln2, *ln2_mean,
        *ln2_rstd, *fch, *fchg, *res3, *lnf, *lnf_mean, *lnf_rstd, *logits, *probs, *losses;
    /* activation gradients (reused across layers) and per-thread attention scratch */
    float *dacts;
    float *dres, *dln, *datty, *dqkv, *dfch, *dlogits, *scratch;
    uint8_t *inputs, *targets;
    int B, T, have_targets;
    float bw_scale;
    /* per-thread partial sums of the gradient norm */
    double *norm_parts;
    char errmsg[ST_ERRMSG_MAX];
};

static void fill_sizes(const gpt_config *c, size_t *s)
{
    size_t V = GPT_VOCAB, C = (size_t)c->d_model, L = (size_t)c->n_layer, Tm = (size_t)c->seq_len;
    s[P_WTE] = V * C;
    s[P_WPE] = Tm * C;
    s[P_LN1W] = s[P_LN1B] = s[P_LN2W] = s[P_LN2B] = L * C;
    s[P_QKVW] = L * 3 * C * C;
    s[P_QKVB] = L * 3 * C;
    s[P_ATTPROJW] = L * C * C;
    s[P_ATTPROJB] = L * C;
    s[P_FCW] = L * 4 * C * C;
    s[P_FCB] = L * 4 * C;
    s[P_FCPROJW] = L * 4 * C * C;
    s[P_FCPROJB] = L * C;
    s[P_LNFW] = s[P_LNFB] = C;
}

static views make_views(const gpt *g, float *base)
{
    views v;
    for (int i = 0; i < N_TENSORS; i++)
        v.t[i] = base + g->offsets[i];
    return v;
}

double gpt_flops_per_token(const gpt_config *cfg, int T)
{
    double C = cfg->d_model, L = cfg->n_layer;
    double n = GPT_VOCAB * C + L * (12.0 * C * C + 13.0 * C) + 2.0 * C; /* without wpe */
    return 6.0 * n + 12.0 * L * C * T;
}

st_status gpt_create(const gpt_config *cfg, int n_threads, gpt **out, char *err)
{
    char dummy[ST_ERRMSG_MAX];
    if (!err)
        err = dummy;
    *out = NULL;
    if (!cfg || cfg->n_layer < 1 || cfg->d_model < 1 || cfg->n_head < 1 || cfg->seq_len < 1 ||
        cfg->batch < 1)
        return st_errf(err, ST_EINVAL, "model shape must be positive");
    if (cfg->d_model % cfg->n_head)
        return st_errf(err, ST_EINVAL, "d_model %d is not a multiple of n_head %d", cfg->d_model,
                       cfg->n_head);
    if (n_threads < 1 || n_threads > 256)
        return st_errf(err, ST_EINVAL, "threads must be in 1..256 (got %d)", n_threads);
    gpt *g = calloc(1, sizeof(*g));
    if (!g)
        return st_errf(err, ST_ENOMEM, "out of memory");
    g->cfg = *cfg;
    g->n_threads = n_threads;
    fill_sizes(cfg, g->sizes);
    for (int i = 0; i < N_TENSORS; i++) {
        g->offsets[i] = g->n_params;
        g->n_params += g->sizes[i];
    }
    size_t P = g->n_params;
    size_t B = (size_t)cfg->batch, T = (size_t)cfg->seq_len, C = (size_t)cfg->d_model;
    size_t L = (size_t)cfg->n_layer, NH = (size_t)cfg->n_head, V = GPT_VOCAB, BT = B * T;

    /* activations: one block, carved below in this order */
    size_t act_sizes[GPT_N_ACT];
    gpt_act_sizes(B, T, C, L, NH, act_sizes);
    float **act_ptrs[] = {&g->encoded,  &g->ln1,      &g->ln1_mean, &g->ln1_rstd, &g->qkv,
                          &g->atty,     &g->att,      &g->res2,     &g->ln2,      &g->ln2_mean,
                          &g->ln2_rstd, &g->fch,      &g->fchg,     &g->res3,     &g->lnf,
                          &g->lnf_mean, &g->lnf_rstd, &g->logits,   &g->probs,    &g->losses};
    size_t dact_sizes[] = {
        BT * C, BT * C, BT * C, BT * 3 * C, BT * 4 * C, BT * V, (size_t)n_threads * T * T};
    float **dact_ptrs[] = {&g->dres, &g->dln,     &g->datty,  &g->dqkv,
                           &g->dfch, &g->dlogits, &g->scratch};
    size_t n_act = 0, n_dact = 0;
    for (size_t i = 0; i < sizeof(act_sizes) / sizeof(act_sizes[0]); i++)
        n_act += act_sizes[i];
    for (size_t i = 0; i < sizeof(dact_sizes) / sizeof(dact_sizes[0]); i++)
        n_dact += dact_sizes[i];

    g->params = calloc(P, sizeof(float));
    g->grads = calloc(P, sizeof(float));
    g->m = calloc(P, sizeof(float));
    g->v = calloc(P, sizeof(float));
    g->tgrads = n_threads > 1 ? calloc(P * (size_t)(n_threads - 1), sizeof(float)) : NULL;
    g->acts = calloc(n_act, sizeof(float));
    g->dacts = calloc(n_dact, sizeof(float));
    g->inputs = calloc(BT, 1);
    g->targets = calloc(BT, 1);
    g->norm_parts = calloc((size_t)n_threads, sizeof(double));
    if (!g->params || !g->grads || !g->m || !g->v || (n_threads > 1 && !g->tgrads) || !g->acts ||
        !g->dacts || !g->inputs || !g->targets || !g->norm_parts) {
        gpt_destroy(g);
        return st_errf(err, ST_ENOMEM, "out of memory allocating a model of %zu parameters", P);
    }
    float *p = g->acts;
    for (size_t i = 0; i < sizeof(act_sizes) / sizeof(act_sizes[0]); i++) {
        *act_ptrs[i] = p;
        p += act_sizes[i];
    }
    p = g->dacts;
    for (size_t i = 0; i < sizeof(dact_sizes) / sizeof(dact_sizes[0]); i++) {
        *dact_ptrs[i] = p;
        p += dact_sizes[i];
    }
    if (gpt_pool_create(n_threads, &g->pool) != ST_OK) {
        gpt_destroy(g);
        return st_errf(err, ST_ENOMEM, "could not start %d threads", n_threads);
    }
    /* our pool owns the parallelism; OpenBLAS threads inside it would oversubscribe the cores */
    openblas_set_num_threads(1);
    /* LayerNorm gains start at 1 so that an uninitialised model is still well-defined */
    for (int i = 0; i < N_TENSORS; i++)
        if (i == P_LN1W || i == P_LN2W || i == P_LNFW)
            for (size_t k = 0; k < g->sizes[i]; k++)
                g->params[g->offsets[i] + k] = 1.0f;
    *out = g;
    return ST_OK;
}

void gpt_destroy(gpt *g)
{
    if (!g)
        return;
    gpt_pool_destroy(g->pool);
    free(g->params);
    free(g->grads);
    free(g->m);
    free(g->v);
    free(g->tgrads);
    free(g->acts);
    free(g->dacts);
    free(g->inputs);
    free(g->targets);
    free(g->norm_parts);
    free(g);
}

const char *gpt_errmsg(const gpt *g)
{
    return g ? g->errmsg : "no model";
}

st_status gpt_init_weights(gpt *g, float init_std, uint64_t seed)
{
    g->errmsg[0] = 0;
    if (!(init_std > 0.0f) || !isfinite(init_std))
        return st_errf(g->errmsg, ST_EINVAL, "init_std must be positive (got %g)",
                       (double)init_std);
    st_rng *rng;
    if (st_rng_create(seed, &rng) != ST_OK)
        return st_errf(g->errmsg, ST_ENOMEM, "out of memory");
    float proj_std = init_std / sqrtf(2.0f * (float)g->cfg.n_layer);
    for (int i = 0; i < N_TENSORS; i++) {
        float *w = g->params + g->offsets[i];
        float std = (i == P_ATTPROJW || i == P_FCPROJW) ? proj_std : init_std;
        int is_gain = i == P_LN1W || i == P_LN2W || i == P_LNFW;
        for (size_t k = 0; k < g->sizes[i]; k++)
            w[k] = tensor_decay[i] ? (float)(std * st_rng_gaussian(rng)) : (is_gain ? 1.0f : 0.0f);
    }
    st_rng_destroy(rng);
    memset(g->m, 0, g->n_params * sizeof(float));
    memset(g->v, 0, g->n_params * sizeof(float));
    g->t = 0;
    return ST_OK;
}

size_t gpt_num_params(const gpt *g)
{
    return g->n_params;
}
float *gpt_params(gpt *g)
{
    return g->params;
}
float *gpt_grads(gpt *g)
{
    return g->grads;
}
float *gpt_adam_m(gpt *g)
{
    return g->m;
}
float *gpt_adam_v(gpt *g)
{
    return g->v;
}
uint64_t *gpt_adam_t(gpt *g)
{
    return &g->t;
}
const float *gpt_logits(const gpt *g)
{
    return g->logits;
}

int gpt_num_tensors(void)
{
    return N_TENSORS;
}

st_status gpt_tensor_info(const gpt *g, int i, const char **name, size_t *offset, size_t *size)
{
    if (i < 0 || i >= N_TENSORS)
        return ST_EINVAL;
    if (name)
        *name = tensor_names[i];
    if (offset)
        *offset = g->offsets[i];
    if (size)
        *size = g->sizes[i];
    return ST_OK;
}

/* sequences [b0, b1) of B for thread tid of n */
static void slice(int B, int tid, int n, int *b0, int *b1)
{
    *b0 = (int)((long)B * tid / n);
    *b1 = (int)((long)B * (tid + 1) / n);
}

/* ---- forward --------------------------------------------------------------------------- */

static void forward_task(void *ctx, int tid, int nth)
{
    gpt *g = ctx;
    int b0, b1;
    slice(g->B, tid, nth, &b0, &b1);
    if (b0 == b1)
        return;
    int T = g->T, C = g->cfg.d_model, NH = g->cfg.n_head, L = g->cfg.n_layer, V = GPT_VOCAB;
    int nb = b1 - b0, N = nb * T;
    size_t BT = (size_t)g->B * T, r0 = (size_t)b0 * T;
    views w = make_views(g, g->params);
#define ROW(base, l, width) ((base) + ((size_t)(l)*BT + r0) * (size_t)(width))
#define STAT(base, l)       ((base) + (size_t)(l)*BT + r0)

    gpt_encoder_forward(ROW(g->encoded, 0, C), g->inputs + r0, w.t[P_WTE], w.t[P_WPE], N, T, C);
    for (int l = 0; l < L; l++) {
        const float *res = l == 0 ? ROW(g->encoded, 0, C) : ROW(g->res3, l - 1, C);
        size_t lc = (size_t)l * C;
        float *ln1 = ROW(g->ln1, l, C), *qkv = ROW(g->qkv, l, 3 * C), *atty = ROW(g->atty, l, C);
        float *att = g->att + ((size_t)l * g->B + b0) * NH * T * T;
        float *res2 = ROW(g->res2, l, C), *ln2 = ROW(g->ln2, l, C), *fch = ROW(g->fch, l, 4 * C);
        float *fchg = ROW(g->fchg, l, 4 * C), *res3 = ROW(g->res3, l, C);

        gpt_layernorm_forward(ln1, STAT(g->ln1_mean, l), STAT(g->ln1_rstd, l), res,
                              w.t[P_LN1W] + lc, w.t[P_LN1B] + lc, N, C);
        gpt_matmul_forward(qkv, ln1, w.t[P_QKVW] + lc * 3 * C, w.t[P_QKVB] + lc * 3, N, C, 3 * C,
                           0.0f);
        gpt_attention_forward(atty, att, qkv, nb, T, C, NH);
        /* res2 = res + atty · Wᵀ + b: the sgemm adds onto a copy of the residual stream */
        memcpy(res2, res, sizeof(float) * (size_t)N * C);
        gpt_matmul_forward(res2, atty, w.t[P_ATTPROJW] + lc * C, w.t[P_ATTPROJB] + lc, N, C, C,
                           1.0f);
        gpt_layernorm_forward(ln2, STAT(g->ln2_mean, l), STAT(g->ln2_rstd, l), res2,
                              w.t[P_LN2W] + lc, w.t[P_LN2B] + lc, N, C);
        gpt_matmul_forward(fch, ln2, w.t[P_FCW] + lc * 4 * C, w.t[P_FCB] + lc * 4, N, C, 4 * C,
                           0.0f);
        gpt_gelu_forward(fchg, fch, (size_t)N * 4 * C);
        memcpy(res3, res2, sizeof(float) * (size_t)N * C);
        gpt_matmul_forward(res3, fchg, w.t[P_FCPROJW] + lc * 4 * C, w.t[P_FCPROJB] + lc, N, 4 * C,
                           C, 1.0f);
    }
    float *lnf = ROW(g->lnf, 0, C);
    gpt_layernorm_forward(lnf, STAT(g->lnf_mean, 0), STAT(g->lnf_rstd, 0), ROW(g->res3, L - 1, C),
                          w.t[P_LNFW], w.t[P_LNFB], N, C);
    /* logits (N,V) = lnf · wteᵀ: the output layer shares the token embedding */
    gpt_matmul_forward(ROW(g->logits, 0, V), lnf, w.t[P_WTE], NULL, N, C, V, 0.0f);
    if (g->have_targets)
        gpt_crossentropy_forward(ROW(g->probs, 0, V), STAT(g->losses, 0), ROW(g->logits, 0, V),
                                 g->targets + r0, N, V);
}

st_status gpt_forward(gpt *g, const uint8_t *inputs, const uint8_t *targets, int B, int T,
                      float *loss)
{
    g->errmsg[0] = 0;
    if (B < 1 || B > g->cfg.batch || T < 1 || T > g->cfg.seq_len)
        return st_errf(g->errmsg, ST_EINVAL, "B=%d T=%d outside 1..%d, 1..%d", B, T, g->cfg.batch,
                       g->cfg.seq_len);
    g->B = B;
    g->T = T;
    memcpy(g->inputs, inputs, (size_t)B * T);
    g->have_targets = targets != NULL;
    if (targets)
        memcpy(g->targets, targets, (size_t)B * T);
    gpt_pool_run(g->pool, forward_task, g);
    if (targets) {
        double s = 0.0;
        for (size_t i = 0; i < (size_t)B * T; i++)
            s += g->losses[i];
        if (loss)
            *loss = (float)(s / ((double)B * T));
    }
    return ST_OK;
}

/* ---- backward -------------------------------------------------------------------------- */

static void backward_task(void *ctx, int tid, int nth)
{
    gpt *g = ctx;
    int b0, b1;
    slice(g->B, tid, nth, &b0, &b1);
    if (b0 == b1)
        return;
    int T = g->T, C = g->cfg.d_model, NH = g->cfg.n_head, L = g->cfg.n_layer, V = GPT_VOCAB;
    int nb = b1 - b0, N = nb * T;
    size_t BT = (size_t)g->B * T, r0 = (size_t)b0 * T;
    views w = make_views(g, g->params);
    views d = make_views(g, tid == 0 ? g->grads : g->tgrads + (size_t)(tid - 1) * g->n_params);
    float *dres = ROW(g->dres, 0, C), *dln = ROW(g->dln, 0, C), *datty = ROW(g->datty, 0, C);
    float *dqkv = ROW(g->dqkv, 0, 3 * C), *dfch = ROW(g->dfch, 0, 4 * C);
    float *dlogits = ROW(g->dlogits, 0, V), *scratch = g->scratch + (size_t)tid * T * T;

    /* loss = scale · mean over B·T positions of -log p[target] */
    gpt_crossentropy_backward(dlogits, ROW(g->probs, 0, V), g->targets + r0,
                              g->bw_scale / (float)BT, N, V);
    gpt_matmul_backward(dln, d.t[P_WTE], NULL, dlogits, ROW(g->lnf, 0, C), w.t[P_WTE], N, C, V);
    memset(dres, 0, sizeof(float) * (size_t)N * C);
    gpt_layernorm_backward(dres, d.t[P_LNFW], d.t[P_LNFB], dln, ROW(g->res3, L - 1, C), w.t[P_LNFW],
                           STAT(g->lnf_mean, 0), STAT(g->lnf_rstd, 0), N, C);
    for (int l = L - 1; l >= 0; l--) {
        const float *res = l == 0 ? ROW(g->encoded, 0, C) : ROW(g->res3, l - 1, C);
        size_t lc = (size_t)l * C;
        const float *att = g->att + ((size_t)l * g->B + b0) * NH * T * T;

        /* dres is d/d res3 here; the residual passes it to res2 unchanged */
        gpt_matmul_backward(dfch, d.t[P_FCPROJW] + lc * 4 * C, d.t[P_FCPROJB] + lc, dres,
                            ROW(g->fchg, l, 4 * C), w.t[P_FCPROJW] + lc * 4 * C, N, 4 * C, C);
        gpt_gelu_backward(dfch, ROW(g->fch, l, 4 * C), dfch, (size_t)N * 4 * C);
        gpt_matmul_backward(dln, d.t[P_FCW] + lc * 4 * C, d.t[P_FCB] + lc * 4, dfch,
                            ROW(g->ln2, l, C), w.t[P_FCW] + lc * 4 * C, N, C, 4 * C);
        gpt_layernorm_backward(dres, d.t[P_LN2W] + lc, d.t[P_LN2B] + lc, dln, ROW(g->res2, l, C),
                               w.t[P_LN2W] + lc, STAT(g->ln2_mean, l), STAT(g->ln2_rstd, l), N, C);
        /* dres is d/d res2 now */
        gpt_matmul_backward(datty, d.t[P_ATTPROJW] + lc * C, d.t[P_ATTPROJB] + lc, dres,
                            ROW(g->atty, l, C), w.t[P_ATTPROJW] + lc * C, N, C, C);
        gpt_attention_backward(dqkv, scratch, datty, att, ROW(g->qkv, l, 3 * C), nb, T, C, NH);
        gpt_matmul_backward(dln, d.t[P_QKVW] + lc * 3 * C, d.t[P_QKVB] + lc * 3, dqkv,
                            ROW(g->ln1, l, C), w.t[P_QKVW] + lc * 3 * C, N, C, 3 * C);
        gpt_layernorm_backward(dres, d.t[P_LN1W] + lc, d.t[P_LN1B] + lc, dln, res, w.t[P_LN1W] + lc,
                               STAT(g->ln1_mean, l), STAT(g->ln1_rstd, l), N, C);
    }
    gpt_encoder_backward(d.t[P_WTE], d.t[P_WPE], dres, g->inputs + r0, N, T, C);
#undef ROW
#undef STAT
}

/* parameter range [i0, i1) of thread tid */
static void prange(size_t n, int tid, int nth, size_t *i0, size_t *i1)
{
    *i0 = n * (size_t)tid / (size_t)nth;
    *i1 = n * (size_t)(tid + 1) / (size_t)nth;
}

/* grads += thread buffers 1..n-1 in order; the buffers are zeroed for the next backward */
static void reduce_task(void *ctx, int tid, int nth)
{
    gpt *g = ctx;
    size_t i0, i1;
    prange(g->n_params, tid, nth, &i0, &i1);
    for (int k = 1; k < nth; k++) {
        float *src = g->tgrads + (size_t)(k - 1) * g->n_params;
        for (size_t i = i0; i < i1; i++)
            g->grads[i] += src[i];
        memset(src + i0, 0, (i1 - i0) * sizeof(float));
    }
}

st_status gpt_backward(gpt *g, float scale)
{
    g->errmsg[0] = 0;
    if (!g->have_targets)
        return st_errf(g->errmsg, ST_ESTATE, "backward needs a forward with targets first");
    g->bw_scale = scale;
    gpt_pool_run(g->pool, backward_task, g);
    if (g->n_threads > 1)
        gpt_pool_run(g->pool, reduce_task, g);
    g->have_targets = 0;
    return ST_OK;
}

void gpt_zero_grad(gpt *g)
{
    memset(g->grads, 0, g->n_params * sizeof(float));
}

/* ---- gradient norm and AdamW --------------------------------------------------------------- */

static void norm_task(void *ctx, int tid, int nth)
{
    gpt *g = ctx;
    size_t i0, i1;
    prange(g->n_params, tid, nth, &i0, &i1);
    double s = 0.0;
    for (size_t i = i0; i < i1; i++)
        s += (double)g->grads[i] * g->grads[i];
    g->norm_parts[tid] = s;
}

double gpt_grad_norm(gpt *g)
{
    gpt_pool_run(g->pool, norm_task, g);
    double s = 0.0;
    for (int k = 0; k < g->n_threads; k++)
        s += g->norm_parts[k];
    return sqrt(s);
}

struct adam_ctx {
    gpt *g;
    const gpt_adamw *hp;
    float lr, gscale, bc1, bc2_sqrt;
};

GPT_VEC
static void adam_range(float *p, const float *gr, float *m, float *v, size_t n, float lr,
                       float gscale, float b1, float b2, float eps, float decay, float bc1,
                       float bc2_sqrt)
{
    /* torch.optim.AdamW: p *= 1 - lr·λ; p -= lr/bc1 · m / (sqrt(v)/sqrt(bc2) + ε) */
    float step = lr / bc1;
    for (size_t i = 0; i < n; i++) {
        float gi = gr[i] * gscale;
        m[i] = b1 * m[i] + (1.0f - b1) * gi;
        v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
        float pi = p[i] * (1.0f - lr * decay);
        p[i] = pi - step * m[i] / (sqrtf(v[i]) / bc2_sqrt + eps);
    }
}

static void adam_task(void *ctx, int tid, int nth)
{
    struct adam_ctx *a = ctx;
    gpt *g = a->g;
    size_t i0, i1;
    prange(g->n_params, tid, nth, &i0, &i1);
    for (int k = 0; k < N_TENSORS; k++) {
        size_t lo = g->offsets[k], hi = lo + g->sizes[k];
        lo = lo > i0 ? lo : i0;
        hi = hi < i1 ? hi : i1;
        if (lo >= hi)
            continue;
        adam_range(g->params + lo, g->grads + lo, g->m + lo, g->v + lo, hi - lo, a->lr, a->gscale,
                   a->hp->beta1, a->hp->beta2, a->hp->eps,
                   tensor_decay[k] ? a->hp->weight_decay : 0.0f, a->bc1, a->bc2_sqrt);
    }
}

st_status gpt_adamw_step(gpt *g, const gpt_adamw *hp, float lr, double *grad_norm)
{
    g->errmsg[0] = 0;
    if (!(hp->beta1 >= 0.0f && hp->beta1 < 1.0f && hp->beta2 >= 0.0f && hp->beta2 < 1.0f &&
          hp->eps > 0.0f && hp->weight_decay >= 0.0f && isfinite(lr)))
        return st_errf(g->errmsg, ST_EINVAL, "invalid AdamW settings");
    double norm = gpt_grad_norm(g);
    if (grad_norm)
        *grad_norm = norm;
    float gscale = 1.0f;
    /* clip_grad_norm_: scale by clip / (norm + 1e-6) when that is below 1 */
    if (hp->clip > 0.0f) {
        double c = hp->clip / (norm + 1e-6);
        if (c < 1.0)
            gscale = (float)c;
    }
    g->t++;
    struct adam_ctx a = {g,
                         hp,
                         lr,
                         gscale,
                         1.0f - powf(hp->beta1, (float)g->t),
                         sqrtf(1.0f - powf(hp->beta2, (float)g->t))};
    gpt_pool_run(g->pool, adam_task, &a);
    return ST_OK;
}

/* ---- the CPU backend ------------------------------------------------------------------------ */

static st_status cpu_create(const gpt_config *cfg, int n_threads, void **out, char *err)
{
    gpt *g;
    st_status s = gpt_create(cfg, n_threads, &g, err);
    *out = g;
    return s;
}
static void cpu_destroy(void *m)
{
    gpt_destroy(m);
}
static st_status cpu_init_weights(void *m, float init_std, uint64_t seed)
{
    return gpt_init_weights(m, init_std, seed);
}
static st_status cpu_forward(void *m, const uint8_t *in, const uint8_t *tg, int B, int T,
                             float *loss)
{
    return gpt_forward(m, in, tg, B, T, loss);
}
static void cpu_zero_grad(void *m)
{
    gpt_zero_grad(m);
}
static st_status cpu_backward(void *m, float scale)
{
    return gpt_backward(m, scale);
}
static st_status cpu_adamw_step(void *m, const gpt_adamw *hp, float lr, double *norm)
{
    return gpt_adamw_step(m, hp, lr, norm);
}
static size_t cpu_num_params(const void *m)
{
    return gpt_num_params(m);
}
static st_status cpu_get_state(void *m, float *params, float *am, float *av, uint64_t *t)
{
    gpt *g = m;
    size_t n = g->n_params * sizeof(float);
    if (params)
        memcpy(params, g->params, n);
    if (am)
        memcpy(am, g->m, n);
    if (av)
        memcpy(av, g->v, n);
    if (t)
        *t = g->t;
    return ST_OK;
}
static st_status cpu_set_state(void *m, const float *params, const float *am, const float *av,
                               uint64_t t)
{
    gpt *g = m;
    size_t n = g->n_params * sizeof(float);
    if (params)
        memcpy(g->params, params, n);
    if (am)
        memcpy(g->m, am, n);
    if (av)
        memcpy(g->v, av, n);
    g->t = t;
    return ST_OK;
}
static st_status cpu_get_grads(void *m, float *grads)
{
    gpt *g = m;
    memcpy(grads, g->grads, g->n_params * sizeof(float));
    return ST_OK;
}
static st_status cpu_get_logits(void *m, float *logits, size_t n)
{
    gpt *g = m;
    size_t have = (size_t)g->B * g->T * GPT_VOCAB;
    if (n > have)
        return ST_EINVAL;
    memcpy(logits, g->logits, n * sizeof(float));
    return ST_OK;
}
static const char *cpu_errmsg(const void *m)
{
    return gpt_errmsg(m);
}

const gpt_backend gpt_backend_cpu = {
    "cpu",         cpu_create,    cpu_destroy,    cpu_init_weights, cpu_forward,
    cpu_zero_grad, cpu_backward,  cpu_adamw_step, cpu_num_params,   cpu_get_state,
    cpu_set_state, cpu_get_grads, cpu_get_logits, cpu_errmsg,
};
