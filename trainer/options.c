/*
 * options.c — the trainer's option table: one row per tunable setting (name, kind, default,
 * help) that drives gpt_options_set(), the flags and --help of scaletune-train, and
 * docs/trainer.md. Values are parsed strictly (the whole text must be a number in range).
 * Not a command-line parser: train_main.c splits argv and calls gpt_options_set().
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/gpt.h"

gpt_options gpt_options_default(void)
{
    gpt_options o;
    memset(&o, 0, sizeof(o));
    o.model.n_layer = 4;
    o.model.d_model = 128;
    o.model.n_head = 0; /* 0: d_model / head_dim, or d_model / 64 (at least 1) */
    o.model.seq_len = 256;
    o.model.batch = 16;
    o.grad_accum = 1;
    o.tokens = 1e6;
    o.lr = 1e-3;
    o.warmup = 0.05;
    o.schedule = GPT_SCHEDULE_COSINE;
    o.min_lr_ratio = 0.1;
    o.decay_frac = 0.2;
    o.adamw.beta1 = 0.9f;
    o.adamw.beta2 = 0.95f;
    o.adamw.eps = 1e-8f;
    o.adamw.weight_decay = 0.1f;
    o.adamw.clip = 1.0f;
    o.init_std = 0.02;
    o.seed = 1337;
    o.threads = 1;
    strcpy(o.data, "data/kjv/train.txt");
    strcpy(o.val_data, "data/kjv/val.txt");
    o.eval_every = 0;
    o.eval_batches = 8;
    o.checkpoint_every = 0;
    o.diverge_ratio = 2.0;
    strcpy(o.device, "cpu");
    return o;
}

enum kind { K_INT, K_FLOAT, K_FLOAT32, K_U64, K_TEXT, K_SCHED, K_SHAPE, K_DEVICE };

static const struct row {
    gpt_option_info info;
    enum kind kind;
    size_t off, size;
    double lo, hi;
} table[] = {
#define F(field) offsetof(gpt_options, field), sizeof(((gpt_options *)0)->field)
    {{"d-model", "int", "128", "model width C (a multiple of n-head)"},
     K_INT,
     F(model.d_model),
     1,
     65536},
    {{"n-layer", "int", "4", "transformer blocks L"}, K_INT, F(model.n_layer), 1, 1024},
    {{"n-head", "int", "0",
      "attention heads NH; 0 = d_model / head-dim, or d_model/64 (at least 1)"},
     K_INT,
     F(model.n_head),
     0,
     4096},
    {{"head-dim", "int", "0",
      "width of each head: NH = d_model / head-dim (with --n-head 0; 0: unset)"},
     K_INT,
     F(head_dim),
     0,
     65536},
    {{"seq-len", "int", "256", "context length T in bytes"}, K_INT, F(model.seq_len), 1, 65536},
    {{"batch", "int", "16", "sequences per micro-batch B"}, K_INT, F(model.batch), 1, 1 << 20},
    {{"grad-accum", "int", "1", "micro-batches per optimizer step"},
     K_INT,
     F(grad_accum),
     1,
     1 << 20},
    {{"tokens", "float", "1e6", "training length in tokens (rounded up to whole steps)"},
     K_FLOAT,
     F(tokens),
     1,
     1e18},
    {{"lr", "float", "1e-3", "peak learning rate"}, K_FLOAT, F(lr), 0, 1e3},
    {{"warmup", "float", "0.05", "linear warmup: < 1 a fraction of the steps, >= 1 steps"},
     K_FLOAT,
     F(warmup),
     0,
     1e18},
    {{"schedule", "cosine|wsd", "cosine",
      "after warmup: cosine to min-lr, or warmup-stable-decay (see --decay-shape)"},
     K_SCHED,
     F(schedule),
     0,
     0},
    {{"min-lr-ratio", "float", "0.1", "final lr as a fraction of the peak"},
     K_FLOAT,
     F(min_lr_ratio),
     0,
     1},
    {{"decay-frac", "float", "0.2", "wsd: share of the steps spent decaying"},
     K_FLOAT,
     F(decay_frac),
     0,
     1},
    {{"decay-shape", "linear|1-sqrt", "linear",
      "shape of the decay (wsd, and a branch's cooldown): lr falls as 1-p or 1-sqrt(p)"},
     K_SHAPE,
     F(decay_shape),
     0,
     0},
    {{"branch-from", "path", "",
      "cooldown branch: resume this checkpoint (same flags) and run only --decay-steps steps"},
     K_TEXT,
     F(branch_from),
     0,
     0},
    {{"decay-steps", "int", "0", "cooldown branch: steps K of its decay (needs --branch-from)"},
     K_INT,
     F(decay_steps),
     0,
     1 << 30},
    {{"parent-run", "int", "0",
      "cooldown branch: the parent's run id, printed as parent_run (extrapolate joins them)"},
     K_INT,
     F(parent_run),
     0,
     1 << 30},
    {{"beta1", "float", "0.9", "AdamW beta1"}, K_FLOAT32, F(adamw.beta1), 0, 0.999999},
    {{"beta2", "float", "0.95", "AdamW beta2"}, K_FLOAT32, F(adamw.beta2), 0, 0.999999999},
    {{"eps", "float", "1e-8", "AdamW epsilon"}, K_FLOAT32, F(adamw.eps), 1e-30, 1},
    {{"weight-decay", "float", "0.1", "AdamW decoupled weight decay (matrices, embeddings)"},
     K_FLOAT32,
     F(adamw.weight_decay),
     0,
     10},
    {{"clip", "float", "1.0", "global gradient-norm clip; 0 disables"},
     K_FLOAT32,
     F(adamw.clip),
     0,
     1e30},
    {{"init-std", "float", "0.02", "std of the initial weights (output projections / sqrt(2L))"},
     K_FLOAT,
     F(init_std),
     1e-12,
     10},
    {{"seed", "int", "1337", "seed of the weights and of the batch order"}, K_U64, F(seed), 0, 0},
    {{"threads", "int", "1", "threads of the CPU path (results are reproducible per count)"},
     K_INT,
     F(threads),
     1,
     256},
    {{"data", "path", "data/kjv/train.txt", "training text (any file of bytes)"},
     K_TEXT,
     F(data),
     0,
     0},
    {{"val-data", "path", "data/kjv/val.txt",
      "validation text; empty: the last 10% of --data is held out"},
     K_TEXT,
     F(val_data),
     0,
     0},
    {{"eval-every", "int", "0", "steps between evaluations (0: only at the end)"},
     K_INT,
     F(eval_every),
     0,
     1 << 30},
    {{"eval-batches", "int", "8", "batches of B sequences per evaluation"},
     K_INT,
     F(eval_batches),
     1,
     1 << 20},
    {{"checkpoint", "path", "",
      "checkpoint file (written atomically); {step} in it: one file per step"},
     K_TEXT,
     F(checkpoint),
     0,
     0},
    {{"checkpoint-every", "int", "0", "steps between checkpoints (0: only at the end)"},
     K_INT,
     F(checkpoint_every),
     0,
     1 << 30},
    {{"resume", "path", "", "continue from this checkpoint, bit-identically"},
     K_TEXT,
     F(resume),
     0,
     0},
    {{"sdc-every", "int", "0",
      "replay every K steps from the last verified state and compare hashes (silent data "
      "corruption; CPU only; 0: off)"},
     K_INT,
     F(sdc_every),
     0,
     1 << 30},
    {{"peak-flops", "float", "0", "peak FLOP/s for MFU; 0: 68e9 x threads (cpu), 67e12 (cuda)"},
     K_FLOAT,
     F(peak_flops),
     0,
     1e30},
    {{"diverge-ratio", "float", "2", "loss above this multiple of the first loss is divergence"},
     K_FLOAT,
     F(diverge_ratio),
     1,
     1e30},
    {{"device", "cpu|cuda", "cpu", "where to train"}, K_DEVICE, F(device), 0, 0},
#undef F
};

#define N_ROWS (sizeof(table) / sizeof(table[0]))

size_t gpt_option_count(void)
{
    return N_ROWS;
}

const gpt_option_info *gpt_option_at(size_t i)
{
    return i < N_ROWS ? &table[i].info : NULL;
}

st_status gpt_options_set(gpt_options *o, const char *name, const char *value, char *err)
{
    const struct row *r = NULL;
    for (size_t i = 0; i < N_ROWS; i++)
        if (!strcmp(table[i].info.name, name))
            r = &table[i];
    if (!r)
        return st_errf(err, ST_ENOTFOUND, "unknown option '%s'", name);
    char *dst = (char *)o + r->off;
    char *end;
    errno = 0;
    switch (r->kind) {
    case K_INT:
    case K_FLOAT:
    case K_FLOAT32: {
        double x = strtod(value, &end);
        if (end == value || *end || errno || !isfinite(x))
            return st_errf(err, ST_EINVAL, "--%s: '%s' is not a number", name, value);
        if (x < r->lo || x > r->hi)
            return st_errf(err, ST_ERANGE, "--%s: %s is outside [%g, %g]", name, value, r->lo,
                           r->hi);
        if (r->kind == K_INT) {
            if (x != floor(x))
                return st_errf(err, ST_EINVAL, "--%s: '%s' is not an integer", name, value);
            *(int *)dst = (int)x;
        } else if (r->kind == K_FLOAT) {
            *(double *)dst = x;
        } else {
            *(float *)dst = (float)x;
        }
        return ST_OK;
    }
    case K_U64: {
        unsigned long long u = strtoull(value, &end, 10);
        if (end == value || *end || errno || value[0] == '-')
            return st_errf(err, ST_EINVAL, "--%s: '%s' is not a non-negative integer", name, value);
        *(uint64_t *)dst = (uint64_t)u;
        return ST_OK;
    }
    case K_TEXT:
        if (strlen(value) >= r->size)
            return st_errf(err, ST_ERANGE, "--%s: path longer than %zu bytes", name, r->size - 1);
        strcpy(dst, value);
        return ST_OK;
    case K_SCHED:
        if (!strcmp(value, "cosine"))
            o->schedule = GPT_SCHEDULE_COSINE;
        else if (!strcmp(value, "wsd"))
            o->schedule = GPT_SCHEDULE_WSD;
        else
            return st_errf(err, ST_EINVAL, "--schedule: '%s' is not cosine or wsd", value);
        return ST_OK;
    case K_SHAPE:
        if (!strcmp(value, "linear"))
            o->decay_shape = GPT_DECAY_LINEAR;
        else if (!strcmp(value, "1-sqrt"))
            o->decay_shape = GPT_DECAY_1SQRT;
        else
            return st_errf(err, ST_EINVAL, "--decay-shape: '%s' is not linear or 1-sqrt", value);
        return ST_OK;
    case K_DEVICE:
        if (strcmp(value, "cpu") && strcmp(value, "cuda"))
            return st_errf(err, ST_EINVAL, "--device: '%s' is not cpu or cuda", value);
        strcpy(dst, value);
        return ST_OK;
    }
    return st_errf(err, ST_EINTERNAL, "option kind not handled");
}

int gpt_options_heads(const gpt_options *o)
{
    const gpt_config *m = &o->model;
    if (m->n_head > 0)
        return m->n_head;
    if (o->head_dim > 0)
        return m->d_model / o->head_dim > 0 ? m->d_model / o->head_dim : 1;
    return m->d_model / 64 > 0 ? m->d_model / 64 : 1;
}

st_status gpt_options_check(const gpt_options *o, char *err)
{
    const gpt_config *m = &o->model;
    int nh = gpt_options_heads(o);
    if (m->d_model < 1 || m->n_layer < 1 || m->seq_len < 1 || m->batch < 1)
        return st_errf(err, ST_EINVAL, "model shape must be positive");
    if (m->n_head > 0 && o->head_dim > 0)
        return st_errf(err, ST_EINVAL, "give --n-head or --head-dim, not both");
    if (o->head_dim > 0 && m->d_model % o->head_dim)
        return st_errf(err, ST_EINVAL, "--d-model %d is not a multiple of --head-dim %d",
                       m->d_model, o->head_dim);
    if (m->d_model % nh)
        return st_errf(err, ST_EINVAL, "--d-model %d is not a multiple of --n-head %d", m->d_model,
                       nh);
    if (o->grad_accum < 1 || o->threads < 1 || o->eval_batches < 1)
        return st_errf(err, ST_EINVAL, "--grad-accum, --threads, --eval-batches must be >= 1");
    if (!(o->tokens >= 1) || !(o->lr >= 0) || !(o->warmup >= 0))
        return st_errf(err, ST_EINVAL, "--tokens, --lr and --warmup must be non-negative");
    if (!(o->adamw.beta1 >= 0 && o->adamw.beta1 < 1 && o->adamw.beta2 >= 0 && o->adamw.beta2 < 1 &&
          o->adamw.eps > 0))
        return st_errf(err, ST_EINVAL, "AdamW needs 0 <= beta < 1 and eps > 0");
    if (!o->data[0])
        return st_errf(err, ST_EINVAL, "--data is empty");
    if (o->branch_from[0] && o->decay_steps < 1)
        return st_errf(err, ST_EINVAL, "--branch-from needs --decay-steps K >= 1");
    if (!o->branch_from[0] && o->decay_steps != 0)
        return st_errf(err, ST_EINVAL, "--decay-steps is for a branch: give --branch-from too");
    if (!o->branch_from[0] && o->parent_run != 0)
        return st_errf(err, ST_EINVAL, "--parent-run is for a branch: give --branch-from too");
    /* the replay compares hashes bit for bit: the CUDA path has no deterministic mode (atomicAdd
     * in the embedding and LayerNorm weight gradients), so every check would report corruption */
    if (o->sdc_every > 0 && !strcmp(o->device, "cuda"))
        return st_errf(err, ST_EINVAL,
                       "--sdc-every needs a bitwise-deterministic device, and --device cuda is "
                       "not (atomics in weight gradients; docs/trainer.md): check on the CPU "
                       "path, or drop --sdc-every");
    if (o->sdc_every > 0 && o->checkpoint_every % o->sdc_every)
        return st_errf(err, ST_EINVAL,
                       "--checkpoint-every %d is not a multiple of --sdc-every %d: checkpoints are "
                       "written of verified states only",
                       o->checkpoint_every, o->sdc_every);
    if (o->branch_from[0] && o->resume[0])
        return st_errf(err, ST_EINVAL,
                       "--branch-from and --resume together: a branch restarts from its "
                       "parent's checkpoint (it is short); drop --resume");
    return ST_OK;
}
