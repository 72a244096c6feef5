/*
 * train.c — the training run around a model: byte data (any file; KJV by default), seeded batch
 * sampling, the learning-rate schedule (warmup, then cosine or warmup-stable-decay), gradient
 * accumulation, divergence detection, evaluation on fixed validation batches, atomic
 * checkpoints from which a run continues bit-identically, and cooldown branches (a short decay
 * resumed from a parent's checkpoint, counting only its own FLOPs). The model itself sits behind a
 * gpt_backend (CPU or CUDA). Not an output format: train_main.c writes the metrics protocol.
 * Shapes: B sequences of T bytes per micro-batch; targets are the inputs shifted by one.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "trainer/gpt.h"

#define CKPT_MAGIC   "STGPTCK1"
#define CKPT_VERSION 1u

typedef struct text {
    uint8_t *bytes;
    size_t n;
} text;

struct gpt_trainer {
    gpt_options o;
    const gpt_backend *be;
    void *model;
    text train, val;
    st_rng *rng;
    uint64_t step, total_steps;
    int is_branch;                      /* a cooldown branch (opts.branch_from) */
    uint64_t branch_step, parent_total; /* branch: the parent's step and total steps */
    double first_loss, seconds;
    uint8_t *inputs, *targets; /* B*T each */
    char errmsg[ST_ERRMSG_MAX];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static st_status read_file(const char *path, text *t, char *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return st_errf(err, ST_EIO, "cannot open data file '%s'", path);
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return st_errf(err, ST_EIO, "cannot read data file '%s'", path);
    }
    t->bytes = malloc(n > 0 ? (size_t)n : 1);
    if (!t->bytes) {
        fclose(f);
        return st_errf(err, ST_ENOMEM, "out of memory reading '%s'", path);
    }
    t->n = fread(t->bytes, 1, (size_t)n, f);
    int bad = t->n != (size_t)n;
    fclose(f);
    if (bad)
        return st_errf(err, ST_EIO, "short read from '%s'", path);
    return ST_OK;
}

/* 1 - (1 - r)·g(p), g(p) = p or sqrt(p), p clamped to [0, 1]: the factor that takes a decay's
 * start lr to r = min_lr_ratio times it at p = 1 (WSD: Hägele et al. 2024, linear and 1-sqrt) */
static double decay_factor(const gpt_options *o, double p)
{
    p = p > 1.0 ? 1.0 : (p < 0.0 ? 0.0 : p);
    double g = o->decay_shape == GPT_DECAY_1SQRT ? sqrt(p) : p;
    return 1.0 - (1.0 - o->min_lr_ratio) * g;
}

double gpt_lr_at(const gpt_options *o, uint64_t s, uint64_t total)
{
    double W = o->warmup < 1.0 ? floor(o->warmup * (double)total + 0.5) : floor(o->warmup);
    if (W > (double)total)
        W = (double)total;
    double step = (double)s, lo = o->min_lr_ratio;
    if (step < W) /* linear warmup reaching the peak at step W-1 */
        return o->lr * (step + 1.0) / W;
    if (o->schedule == GPT_SCHEDULE_WSD) {
        double D = floor(o->decay_frac * (double)total + 0.5);
        double start = (double)total - D;
        if (start < W)
            start = W;
        if (step < start || D < 1.0)
            return o->lr;
        return o->lr * decay_factor(o, (step - start + 1.0) / ((double)total - start));
    }
    double span = (double)total - W;
    double p = span > 1.0 ? (step - W) / (span - 1.0) : 1.0; /* 0 at the first, 1 at the last */
    /* cosine annealing (Loshchilov & Hutter 2017, eq. 5) down to lr · min_lr_ratio */
    return o->lr * (lo + (1.0 - lo) * 0.5 * (1.0 + cos(M_PI * (p > 1.0 ? 1.0 : p))));
}

double gpt_lr_branch_at(const gpt_options *o, uint64_t s, uint64_t parent_total,
                        uint64_t branch_step)
{
    if (s < branch_step)
        return gpt_lr_at(o, s, parent_total);
    double from = gpt_lr_at(o, branch_step, parent_total);
    double K = o->decay_steps > 0 ? (double)o->decay_steps : 1.0;
    return from * decay_factor(o, ((double)(s - branch_step) + 1.0) / K);
}

/* ---- checkpoints ---------------------------------------------------------------------------- */

/* the fields that must agree for a resumed run to continue the same run */
typedef struct ckpt_header {
    char magic[8];
    uint32_t version, header_size;
    int32_t n_layer, d_model, n_head, seq_len, batch, grad_accum, schedule;
    int32_t decay_shape; /* was padding (0) before decay shapes: 0 is linear */
    double tokens, lr, warmup, min_lr_ratio, decay_frac, init_std;
    float beta1, beta2, eps, weight_decay, clip, pad2;
    uint64_t seed, step, total_steps, adam_t, n_params, rng_size;
    double first_loss, seconds;
} ckpt_header;

static void fill_header(const gpt_trainer *tr, ckpt_header *h)
{
    memset(h, 0, sizeof(*h));
    memcpy(h->magic, CKPT_MAGIC, 8);
    h->version = CKPT_VERSION;
    h->header_size = sizeof(*h);
    const gpt_options *o = &tr->o;
    h->n_layer = o->model.n_layer;
    h->d_model = o->model.d_model;
    h->n_head = o->model.n_head;
    h->seq_len = o->model.seq_len;
    h->batch = o->model.batch;
    h->grad_accum = o->grad_accum;
    h->schedule = (int32_t)o->schedule;
    h->decay_shape = (int32_t)o->decay_shape;
    h->tokens = o->tokens;
    h->lr = o->lr;
    h->warmup = o->warmup;
    h->min_lr_ratio = o->min_lr_ratio;
    h->decay_frac = o->decay_frac;
    h->init_std = o->init_std;
    h->beta1 = o->adamw.beta1;
    h->beta2 = o->adamw.beta2;
    h->eps = o->adamw.eps;
    h->weight_decay = o->adamw.weight_decay;
    h->clip = o->adamw.clip;
    h->seed = o->seed;
    h->step = tr->step;
    h->total_steps = tr->total_steps;
    h->n_params = tr->be->num_params(tr->model);
    h->rng_size = st_rng_state_size(tr->rng);
    h->first_loss = tr->first_loss;
    h->seconds = tr->seconds;
}

st_status gpt_trainer_save(gpt_trainer *tr, const char *path)
{
    tr->errmsg[0] = 0;
    ckpt_header h;
    fill_header(tr, &h);
    size_t P = (size_t)h.n_params;
    float *buf = malloc(3 * P * sizeof(float));
    void *rs = malloc(h.rng_size);
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    st_status s = ST_OK;
    if (!buf || !rs || !tmp) {
        s = st_errf(tr->errmsg, ST_ENOMEM, "out of memory writing a checkpoint");
        goto out;
    }
    s = tr->be->get_state(tr->model, buf, buf + P, buf + 2 * P, &h.adam_t);
    if (s != ST_OK) {
        st_errf(tr->errmsg, s, "%s", tr->be->errmsg(tr->model));
        goto out;
    }
    st_rng_state_get(tr->rng, rs);
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        s = st_errf(tr->errmsg, ST_EIO, "cannot create checkpoint '%s'", tmp);
        goto out;
    }
    int ok = fwrite(&h, sizeof(h), 1, f) == 1 && fwrite(rs, 1, h.rng_size, f) == h.rng_size &&
             fwrite(buf, sizeof(float), 3 * P, f) == 3 * P;
    ok = fflush(f) == 0 && ok;
    ok = fsync(fileno(f)) == 0 && ok;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        s = st_errf(tr->errmsg, ST_EIO, "writing checkpoint '%s' failed", path);
    }
out:
    free(buf);
    free(rs);
    free(tmp);
    return s;
}

/* Restores tr from `path`. A branch may change the decay shape; every other setting must agree. */
static st_status load_checkpoint(gpt_trainer *tr, const char *path, int branch, char *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return st_errf(err, ST_EIO, "cannot open checkpoint '%s'", path);
    ckpt_header h, want;
    fill_header(tr, &want);
    st_status s = ST_OK;
    float *buf = NULL;
    void *rs = NULL;
    if (fread(&h, sizeof(h), 1, f) != 1 || memcmp(h.magic, CKPT_MAGIC, 8)) {
        s = st_errf(err, ST_EFORMAT, "'%s' is not a scaletune-train checkpoint (bad magic)", path);
        goto out;
    }
    if (h.version != CKPT_VERSION || h.header_size != sizeof(h)) {
        s = st_errf(err, ST_EFORMAT, "checkpoint '%s' has version %u, this build reads %u", path,
                    h.version, CKPT_VERSION);
        goto out;
    }
    if (h.n_layer != want.n_layer || h.d_model != want.d_model || h.n_head != want.n_head ||
        h.seq_len != want.seq_len || h.batch != want.batch || h.n_params != want.n_params) {
        s = st_errf(err, ST_EINVAL,
                    "checkpoint '%s' is for d_model %d, n_layer %d, n_head %d, seq_len %d, "
                    "batch %d; the flags ask for %d, %d, %d, %d, %d",
                    path, h.d_model, h.n_layer, h.n_head, h.seq_len, h.batch, want.d_model,
                    want.n_layer, want.n_head, want.seq_len, want.batch);
        goto out;
    }
    if (h.grad_accum != want.grad_accum || h.schedule != want.schedule || h.tokens != want.tokens ||
        h.lr != want.lr || h.warmup != want.warmup || h.min_lr_ratio != want.min_lr_ratio ||
        h.decay_frac != want.decay_frac || h.beta1 != want.beta1 || h.beta2 != want.beta2 ||
        h.eps != want.eps || h.weight_decay != want.weight_decay || h.clip != want.clip ||
        h.seed != want.seed || (!branch && h.decay_shape != want.decay_shape)) {
        s = st_errf(err, ST_EINVAL,
                    "checkpoint '%s' was written with other training settings (lr, schedule, "
                    "tokens, AdamW, seed or grad-accum): %s with the original flags",
                    path, branch ? "branch" : "resume");
        goto out;
    }
    size_t P = (size_t)h.n_params;
    buf = malloc(3 * P * sizeof(float));
    rs = malloc(h.rng_size ? h.rng_size : 1);
    if (!buf || !rs) {
        s = st_errf(err, ST_ENOMEM, "out of memory reading a checkpoint");
        goto out;
    }
    if (fread(rs, 1, h.rng_size, f) != h.rng_size || fread(buf, sizeof(float), 3 * P, f) != 3 * P) {
        s = st_errf(err, ST_EFORMAT, "checkpoint '%s' is truncated", path);
        goto out;
    }
    if (st_rng_state_set(tr->rng, rs, h.rng_size) != ST_OK) {
        s = st_errf(err, ST_EFORMAT, "checkpoint '%s': RNG state does not fit", path);
        goto out;
    }
    s = tr->be->set_state(tr->model, buf, buf + P, buf + 2 * P, h.adam_t);
    if (s != ST_OK) {
        st_errf(err, s, "%s", tr->be->errmsg(tr->model));
        goto out;
    }
    tr->step = h.step;
    tr->first_loss = h.first_loss;
    tr->seconds = h.seconds;
out:
    free(buf);
    free(rs);
    fclose(f);
    return s;
}

/* ---- create / destroy ------------------------------------------------------------------------ */

st_status gpt_trainer_create(const gpt_options *opts, const gpt_backend *backend, gpt_trainer **out,
                             char *err)
{
    *out = NULL;
    st_status s = gpt_options_check(opts, err);
    if (s != ST_OK)
        return s;
    if (!backend)
        return st_errf(err, ST_EUNSUPPORTED,
                       "--device %s is not available in this build (CUDA needs `make cuda` and "
                       "build/scaletune-train-cuda)",
                       opts->device);
    gpt_trainer *tr = calloc(1, sizeof(*tr));
    if (!tr)
        return st_errf(err, ST_ENOMEM, "out of memory");
    tr->o = *opts;
    gpt_config *m = &tr->o.model;
    m->n_head = gpt_options_heads(&tr->o);
    tr->be = backend;
    size_t BT = (size_t)m->batch * (size_t)m->seq_len;
    double per_step = (double)BT * tr->o.grad_accum;
    tr->total_steps = (uint64_t)ceil(tr->o.tokens / per_step);

    s = read_file(tr->o.data, &tr->train, err);
    if (s == ST_OK && tr->o.val_data[0])
        s = read_file(tr->o.val_data, &tr->val, err);
    if (s != ST_OK)
        goto fail;
    if (!tr->o.val_data[0]) { /* hold out the last 10% of the training text */
        size_t nv = tr->train.n / 10;
        tr->val.bytes = malloc(nv ? nv : 1);
        if (!tr->val.bytes) {
            s = st_errf(err, ST_ENOMEM, "out of memory");
            goto fail;
        }
        memcpy(tr->val.bytes, tr->train.bytes + tr->train.n - nv, nv);
        tr->val.n = nv;
        tr->train.n -= nv;
    }
    if (tr->train.n < (size_t)m->seq_len + 1 || tr->val.n < (size_t)m->seq_len + 1) {
        s = st_errf(err, ST_EINVAL,
                    "data too short: %zu training and %zu validation bytes for "
                    "sequences of %d",
                    tr->train.n, tr->val.n, m->seq_len);
        goto fail;
    }
    tr->inputs = malloc(BT);
    tr->targets = malloc(BT);
    if (!tr->inputs || !tr->targets || st_rng_create(tr->o.seed, &tr->rng) != ST_OK) {
        s = st_errf(err, ST_ENOMEM, "out of memory");
        goto fail;
    }
    s = backend->create(m, tr->o.threads, &tr->model, err);
    if (s != ST_OK)
        goto fail;
    if (tr->o.resume[0]) {
        s = load_checkpoint(tr, tr->o.resume, 0, err);
    } else if (tr->o.branch_from[0]) {
        s = load_checkpoint(tr, tr->o.branch_from, 1, err);
        /* the branch: K more steps; its cost (FLOPs, seconds) counts from here */
        tr->is_branch = 1;
        tr->branch_step = tr->step;
        tr->parent_total = tr->total_steps;
        tr->total_steps = tr->step + (uint64_t)tr->o.decay_steps;
        tr->seconds = 0.0;
    } else {
        s = backend->init_weights(tr->model, (float)tr->o.init_std, st_mix64(tr->o.seed));
        if (s != ST_OK)
            st_errf(err, s, "%s", backend->errmsg(tr->model));
    }
    if (s != ST_OK)
        goto fail;
    *out = tr;
    return ST_OK;
fail:
    gpt_trainer_destroy(tr);
    return s;
}

void gpt_trainer_destroy(gpt_trainer *tr)
{
    if (!tr)
        return;
    if (tr->model)
        tr->be->destroy(tr->model);
    free(tr->train.bytes);
    free(tr->val.bytes);
    free(tr->inputs);
    free(tr->targets);
    st_rng_destroy(tr->rng);
    free(tr);
}

const char *gpt_trainer_errmsg(const gpt_trainer *tr)
{
    return tr ? tr->errmsg : "no trainer";
}
uint64_t gpt_trainer_total_steps(const gpt_trainer *tr)
{
    return tr->total_steps;
}
int gpt_trainer_is_branch(const gpt_trainer *tr, uint64_t *parent_step)
{
    if (parent_step)
        *parent_step = tr->is_branch ? tr->branch_step : 0;
    return tr->is_branch;
}
uint64_t gpt_trainer_step_index(const gpt_trainer *tr)
{
    return tr->step;
}
size_t gpt_trainer_num_params(const gpt_trainer *tr)
{
    return tr->be->num_params(tr->model);
}
double gpt_trainer_flops_per_token(const gpt_trainer *tr)
{
    return gpt_flops_per_token(&tr->o.model, tr->o.model.seq_len);
}
double gpt_trainer_peak_flops(const gpt_trainer *tr)
{
    if (tr->o.peak_flops > 0)
        return tr->o.peak_flops;
    /* BENCHMARKS.md: ~68 GFLOP/s single-thread sgemm (Haswell kernels); H100 fp32 ~67 TFLOP/s */
    return strcmp(tr->be->name, "cpu") ? 67e12 : 68e9 * tr->o.threads;
}

/* ---- steps and evaluation -------------------------------------------------------------------- */

/* B random windows of T+1 bytes from the training text */
static void sample_batch(gpt_trainer *tr)
{
    int B = tr->o.model.batch, T = tr->o.model.seq_len;
    for (int b = 0; b < B; b++) {
        size_t off = st_rng_uniform_int(tr->rng, tr->train.n - (size_t)T);
        memcpy(tr->inputs + (size_t)b * T, tr->train.bytes + off, (size_t)T);
        memcpy(tr->targets + (size_t)b * T, tr->train.bytes + off + 1, (size_t)T);
    }
}

st_status gpt_trainer_step(gpt_trainer *tr, gpt_step_info *info)
{
    tr->errmsg[0] = 0;
    memset(info, 0, sizeof(*info));
    if (tr->step >= tr->total_steps)
        return st_errf(tr->errmsg, ST_ESTATE, "the run has finished (%llu steps)",
                       (unsigned long long)tr->total_steps);
    double t0 = now_s();
    int B = tr->o.model.batch, T = tr->o.model.seq_len, A = tr->o.grad_accum;
    double lr = tr->is_branch
                    ? gpt_lr_branch_at(&tr->o, tr->step, tr->parent_total, tr->branch_step)
                    : gpt_lr_at(&tr->o, tr->step, tr->total_steps);
    double loss_sum = 0.0;
    st_status s;
    tr->be->zero_grad(tr->model);
    for (int a = 0; a < A; a++) {
        float loss;
        sample_batch(tr);
        s = tr->be->forward(tr->model, tr->inputs, tr->targets, B, T, &loss);
        if (s == ST_OK)
            s = tr->be->backward(tr->model, 1.0f / (float)A);
        if (s != ST_OK)
            return st_errf(tr->errmsg, s, "%s", tr->be->errmsg(tr->model));
        loss_sum += loss;
    }
    double loss = loss_sum / A, norm = 0.0;
    info->step = tr->step;
    info->loss = loss;
    info->lr = lr;
    if (!isfinite(loss))
        return st_errf(tr->errmsg, ST_ENUMERIC, "loss is %g", loss);
    if (tr->step > 0 && loss > tr->o.diverge_ratio * tr->first_loss)
        return st_errf(tr->errmsg, ST_ENUMERIC, "loss %.4g is above %g x the first loss %.4g", loss,
                       tr->o.diverge_ratio, tr->first_loss);
    s = tr->be->adamw_step(tr->model, &tr->o.adamw, (float)lr, &norm);
    if (s != ST_OK)
        return st_errf(tr->errmsg, s, "%s", tr->be->errmsg(tr->model));
    info->grad_norm = norm;
    if (!isfinite(norm))
        return st_errf(tr->errmsg, ST_ENUMERIC, "gradient norm is %g", norm);
    if (tr->step == 0)
        tr->first_loss = loss;
    tr->step++;
    double dt = now_s() - t0;
    tr->seconds += dt;
    double tokens = (double)tr->step * B * T * A;
    info->tokens = tokens;
    /* a branch's cost is its own: the parent paid for the steps before branch_step */
    double own_tokens = (double)(tr->step - tr->branch_step) * B * T * A;
    info->flops = own_tokens * gpt_trainer_flops_per_token(tr);
    info->seconds = tr->seconds;
    info->step_seconds = dt;
    return ST_OK;
}

st_status gpt_trainer_eval(gpt_trainer *tr, double *val_loss)
{
    tr->errmsg[0] = 0;
    int B = tr->o.model.batch, T = tr->o.model.seq_len;
    size_t windows = (tr->val.n - 1) / (size_t)T; /* disjoint windows of T+1 bytes */
    double sum = 0.0;
    for (int k = 0; k < tr->o.eval_batches; k++) {
        for (int b = 0; b < B; b++) {
            size_t off = (((size_t)k * B + b) % windows) * (size_t)T;
            memcpy(tr->inputs + (size_t)b * T, tr->val.bytes + off, (size_t)T);
            memcpy(tr->targets + (size_t)b * T, tr->val.bytes + off + 1, (size_t)T);
        }
        float loss;
        st_status s = tr->be->forward(tr->model, tr->inputs, tr->targets, B, T, &loss);
        if (s != ST_OK)
            return st_errf(tr->errmsg, s, "%s", tr->be->errmsg(tr->model));
        sum += loss;
    }
    *val_loss = sum / tr->o.eval_batches;
    return ST_OK;
}

/* ---- snapshots (silent data corruption) ------------------------------------------------------ */

struct gpt_snapshot {
    size_t P;
    float *state; /* params, adam m, adam v: 3P floats */
    uint64_t adam_t, step;
    double first_loss;
    void *rng;
    size_t rng_size;
};

void gpt_snapshot_destroy(gpt_snapshot *snap)
{
    if (!snap)
        return;
    free(snap->state);
    free(snap->rng);
    free(snap);
}

st_status gpt_trainer_snapshot(gpt_trainer *tr, gpt_snapshot **snap)
{
    tr->errmsg[0] = 0;
    gpt_snapshot *s = *snap;
    if (!s) {
        s = calloc(1, sizeof(*s));
        if (s) {
            s->P = tr->be->num_params(tr->model);
            s->rng_size = st_rng_state_size(tr->rng);
            s->state = malloc(3 * s->P * sizeof(float));
            s->rng = malloc(s->rng_size ? s->rng_size : 1);
        }
        if (!s || !s->state || !s->rng) {
            gpt_snapshot_destroy(s);
            return st_errf(tr->errmsg, ST_ENOMEM, "out of memory taking a snapshot");
        }
        *snap = s;
    }
    st_status rc =
        tr->be->get_state(tr->model, s->state, s->state + s->P, s->state + 2 * s->P, &s->adam_t);
    if (rc != ST_OK)
        return st_errf(tr->errmsg, rc, "%s", tr->be->errmsg(tr->model));
    st_rng_state_get(tr->rng, s->rng);
    s->step = tr->step;
    s->first_loss = tr->first_loss;
    return ST_OK;
}

st_status gpt_trainer_restore(gpt_trainer *tr, const gpt_snapshot *s)
{
    tr->errmsg[0] = 0;
    st_status rc =
        tr->be->set_state(tr->model, s->state, s->state + s->P, s->state + 2 * s->P, s->adam_t);
    if (rc == ST_OK)
        rc = st_rng_state_set(tr->rng, s->rng, s->rng_size);
    if (rc != ST_OK)
        return st_errf(tr->errmsg, rc, "restoring a snapshot: %s", tr->be->errmsg(tr->model));
    tr->step = s->step;
    tr->first_loss = s->first_loss;
    return ST_OK;
}

uint64_t gpt_snapshot_step(const gpt_snapshot *s)
{
    return s->step;
}

uint64_t gpt_snapshot_hash(const gpt_snapshot *s)
{
    /* FNV-1a 64 (Fowler, Noll, Vo) over the bytes of the 3P floats, then the step count */
    uint64_t h = 1469598103934665603ull;
    const unsigned char *b = (const unsigned char *)s->state;
    for (size_t i = 0; i < 3 * s->P * sizeof(float); i++)
        h = (h ^ b[i]) * 1099511628211ull;
    for (int k = 0; k < 8; k++)
        h = (h ^ ((s->adam_t >> (8 * k)) & 0xff)) * 1099511628211ull;
    return h;
}

st_status gpt_trainer_flip_bit(gpt_trainer *tr, size_t index, int bit)
{
    tr->errmsg[0] = 0;
    size_t P = tr->be->num_params(tr->model);
    if (index >= P || bit < 0 || bit > 31)
        return st_errf(tr->errmsg, ST_ERANGE, "no bit %d of weight %zu (%zu weights)", bit, index,
                       P);
    float *w = malloc(P * sizeof(float));
    if (!w)
        return st_errf(tr->errmsg, ST_ENOMEM, "out of memory");
    uint64_t t;
    st_status rc = tr->be->get_state(tr->model, w, NULL, NULL, &t);
    if (rc == ST_OK) {
        uint32_t u;
        memcpy(&u, &w[index], sizeof(u));
        u ^= 1u << bit;
        memcpy(&w[index], &u, sizeof(u));
        rc = tr->be->set_state(tr->model, w, NULL, NULL, t);
    }
    free(w);
    return rc == ST_OK ? ST_OK : st_errf(tr->errmsg, rc, "%s", tr->be->errmsg(tr->model));
}
