/*
 * gpt.h — scaletune's reference GPT trainer: a byte-level decoder-only transformer (pre-LayerNorm,
 * causal self-attention, tanh-GELU MLP, tied input/output embedding) with AdamW, in C.
 * Two layers of API: the model (gpt_*: forward, backward, optimizer step on one set of weights)
 * and the trainer (gpt_trainer_*: data, schedule, evaluation, divergence, checkpoints), which
 * `scaletune-train` (trainer/train_main.c) drives. Backends sit behind gpt_backend: the CPU one
 * (OpenBLAS + our own thread pool) is always built; the CUDA one comes with `make cuda`.
 * Not a general deep-learning library: one architecture, fp32, one process.
 *
 * Shape letters used throughout: B batch (sequences), T time (tokens), C channels (d_model),
 * V vocabulary (256 bytes), L layers, NH heads, hs = C/NH head size.
 * Thread-safety: a handle is used by one thread at a time; different handles are independent,
 * except that gpt_create() sets OpenBLAS to one thread for the whole process (see there).
 */
#ifndef GPT_H
#define GPT_H

#include <stddef.h>
#include <stdint.h>

#include "common/st.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPT_VOCAB 256

/* Shape of a model and of the largest micro-batch it will see. Caller-allocated. */
typedef struct gpt_config {
    int n_layer; /* L >= 1 */
    int d_model; /* C >= 1, a multiple of n_head */
    int n_head;  /* NH >= 1 */
    int seq_len; /* largest T (also the size of the position embedding) */
    int batch;   /* largest B of one forward/backward (the micro-batch) */
} gpt_config;

/* AdamW settings (Loshchilov & Hutter 2019, PyTorch's torch.optim.AdamW update order). */
typedef struct gpt_adamw {
    float beta1, beta2, eps;
    float weight_decay; /* applied to matrices and embeddings only, never to biases or LayerNorm */
    float clip;         /* global gradient-norm clip; <= 0 disables it */
} gpt_adamw;

/* ---- model ------------------------------------------------------------------------------ */

typedef struct gpt gpt;

/*
 * Creates a CPU model of shape `cfg` whose forward and backward run on `n_threads` threads (our
 * own pool; each thread takes a contiguous share of the batch). Parameters, gradients, AdamW
 * moments and activations are each one allocation, made here. Weights start at zero: call
 * gpt_init_weights() or write gpt_params(). Because the pool calls OpenBLAS from several
 * threads, this sets OpenBLAS to one thread for the process (openblas_set_num_threads(1)).
 * Results are bitwise reproducible for a given seed and n_threads.
 * Returns ST_OK, ST_EINVAL (bad shape; message in *err if err is not NULL, ST_ERRMSG_MAX bytes)
 * or ST_ENOMEM. *out is NULL on failure.
 */
st_status gpt_create(const gpt_config *cfg, int n_threads, gpt **out, char *err);
void gpt_destroy(gpt *g); /* NULL is a no-op */
const char *gpt_errmsg(const gpt *g);

/*
 * GPT-2 initialisation: every matrix and embedding ~ N(0, init_std²), the two residual output
 * projections of each block ~ N(0, (init_std/sqrt(2L))²), biases 0, LayerNorm gains 1. The draws
 * come from a generator seeded with `seed` in parameter order. Returns ST_OK or ST_EINVAL.
 */
st_status gpt_init_weights(gpt *g, float init_std, uint64_t seed);

/* Parameter count (all tensors, position embedding included) and the flat blocks (borrowed). */
size_t gpt_num_params(const gpt *g);
float *gpt_params(gpt *g);
float *gpt_grads(gpt *g);
/* AdamW moments m and v (num_params floats each; borrowed) and the step count t. */
float *gpt_adam_m(gpt *g);
float *gpt_adam_v(gpt *g);
uint64_t *gpt_adam_t(gpt *g);

/* Number of named parameter tensors (16) and the i-th one's name, offset and size in floats. */
int gpt_num_tensors(void);
st_status gpt_tensor_info(const gpt *g, int i, const char **name, size_t *offset, size_t *size);

/*
 * Forward pass on `inputs` (B*T bytes, B <= cfg.batch, T <= cfg.seq_len). With `targets` (B*T
 * bytes) the mean cross-entropy over the B*T positions is written to *loss (nats) and the pass
 * is kept for gpt_backward(); with targets NULL only logits are computed.
 * Returns ST_OK or ST_EINVAL.
 */
st_status gpt_forward(gpt *g, const uint8_t *inputs, const uint8_t *targets, int B, int T,
                      float *loss);
/* Logits of the last forward, (B, T, V) floats; borrowed until the next forward. */
const float *gpt_logits(const gpt *g);
/* Sets every gradient to 0. */
void gpt_zero_grad(gpt *g);
/*
 * Backward pass of the last forward with targets: ADDS d(scale * loss)/dθ to the gradients, so
 * micro-batches of a gradient-accumulation step each call it with scale = 1/n_micro.
 * Returns ST_OK or ST_ESTATE (no forward with targets since the last backward).
 */
st_status gpt_backward(gpt *g, float scale);
/* Global L2 norm of the gradients (accumulated in double, fixed order). */
double gpt_grad_norm(gpt *g);
/*
 * One AdamW step with learning rate `lr` on the current gradients: clips them to hp->clip in
 * global norm first (torch.nn.utils.clip_grad_norm_ semantics), writes the norm before clipping
 * to *grad_norm (may be NULL). Increments the step count t. Returns ST_OK or ST_EINVAL.
 */
st_status gpt_adamw_step(gpt *g, const gpt_adamw *hp, float lr, double *grad_norm);

/* FLOPs of one token's forward+backward: 6·N' + 12·L·C·T, N' = parameters without the position
 * embedding (PaLM appendix B; the matrix products and attention we execute). */
double gpt_flops_per_token(const gpt_config *cfg, int T);

/* ---- backends ---------------------------------------------------------------------------- */

/*
 * What the trainer needs from a device. The CPU backend is gpt_backend_cpu; the CUDA backend
 * (gpt_backend_cuda, in trainer/gpt_cuda.cu) exists only in binaries built by `make cuda`.
 * `params`/`set_params` copy the flat parameter block (and AdamW state) in the CPU layout.
 */
typedef struct gpt_backend {
    const char *name;
    st_status (*create)(const gpt_config *cfg, int n_threads, void **out, char *err);
    void (*destroy)(void *m);
    st_status (*init_weights)(void *m, float init_std, uint64_t seed);
    st_status (*forward)(void *m, const uint8_t *inputs, const uint8_t *targets, int B, int T,
                         float *loss);
    void (*zero_grad)(void *m);
    st_status (*backward)(void *m, float scale);
    st_status (*adamw_step)(void *m, const gpt_adamw *hp, float lr, double *grad_norm);
    size_t (*num_params)(const void *m);
    /* copy out / in: params, m, v (num_params floats each; any may be NULL) and the step t */
    st_status (*get_state)(void *m, float *params, float *adam_m, float *adam_v, uint64_t *t);
    st_status (*set_state)(void *m, const float *params, const float *adam_m, const float *adam_v,
                           uint64_t t);
    /* copy out gradients and logits of the last forward (B*T*V floats) */
    st_status (*get_grads)(void *m, float *grads);
    st_status (*get_logits)(void *m, float *logits, size_t n);
    const char *(*errmsg)(const void *m);
} gpt_backend;

extern const gpt_backend gpt_backend_cpu;

/* ---- trainer ------------------------------------------------------------------------------ */

typedef enum gpt_schedule { GPT_SCHEDULE_COSINE = 0, GPT_SCHEDULE_WSD = 1 } gpt_schedule;

/* Shape of a decay (WSD's last phase, and a cooldown branch): the lr falls from its start value
 * by the factor 1 - (1 - min_lr_ratio)·g(p), p = share of the decay done (1 at its last step),
 * g(p) = p (linear) or sqrt(p) (the "1-sqrt" cooldown of Hägele et al. 2024, "Scaling Laws and
 * Compute-Optimal Training Beyond Fixed Training Durations"). */
typedef enum gpt_decay_shape { GPT_DECAY_LINEAR = 0, GPT_DECAY_1SQRT = 1 } gpt_decay_shape;

/* Every tunable setting of a run; gpt_options_default() fills the documented defaults. */
typedef struct gpt_options {
    gpt_config model; /* batch = micro-batch B */
    int head_dim;     /* > 0 with model.n_head 0: n_head = d_model / head_dim (gpt_options_heads) */
    int grad_accum;   /* micro-batches per optimizer step */
    double tokens;    /* training length in tokens (steps = ceil(tokens / (B*T*grad_accum))) */
    double lr;        /* peak learning rate */
    double warmup;    /* < 1: fraction of the steps; >= 1: a number of steps */
    gpt_schedule schedule;
    double min_lr_ratio; /* final lr = lr * min_lr_ratio */
    double decay_frac;   /* WSD: the last decay_frac of the steps decay */
    gpt_decay_shape decay_shape;
    char branch_from[1024]; /* cooldown branch: the parent's checkpoint ("" = no branch) */
    int decay_steps;        /* cooldown branch: its number of steps K (>= 1 with branch_from) */
    int parent_run; /* cooldown branch: the parent's run id for its final record (0: none) */
    gpt_adamw adamw;
    double init_std;
    uint64_t seed;
    int threads;
    char data[1024];     /* training text (bytes) */
    char val_data[1024]; /* validation text; "" = the last 10% of `data` */
    int eval_every;      /* steps between evaluations (0: only at the end) */
    int eval_batches;    /* batches of B sequences per evaluation */
    char checkpoint[1024];
    int checkpoint_every; /* steps between checkpoints (0: only at the end, if a path is set) */
    char resume[1024];
    double peak_flops;    /* for MFU; 0 = the device's default (see docs/trainer.md) */
    double diverge_ratio; /* loss > diverge_ratio * first loss counts as divergence */
    char device[16];      /* "cpu" or "cuda" */
    int sdc_every;        /* steps between replays that check for silent data corruption (0:
                             off; docs/large-run.md); a multiple of it must be checkpoint_every */
} gpt_options;

/* The attention heads o trains with: model.n_head when set, else d_model / head_dim when
 * head_dim is set, else d_model / 64 (at least 1). */
int gpt_options_heads(const gpt_options *o);

gpt_options gpt_options_default(void);

/* Option table entry: name as a flag without "--", kind, default as text, one-line help. */
typedef struct gpt_option_info {
    const char *name;
    const char *kind; /* "int", "float", "text", "cosine|wsd", ... */
    const char *def;
    const char *help;
} gpt_option_info;

size_t gpt_option_count(void);
const gpt_option_info *gpt_option_at(size_t i);
/*
 * Sets option `name` (no leading dashes) from text. Returns ST_OK, ST_ENOTFOUND (unknown name)
 * or ST_EINVAL/ST_ERANGE (bad value); the message goes to err (ST_ERRMSG_MAX bytes).
 */
st_status gpt_options_set(gpt_options *o, const char *name, const char *value, char *err);
/* Checks the options together (shapes, ranges). Returns ST_OK or ST_EINVAL with err set. */
st_status gpt_options_check(const gpt_options *o, char *err);

typedef struct gpt_trainer gpt_trainer;

/* One optimizer step's report. */
typedef struct gpt_step_info {
    uint64_t step; /* 0-based index of the step just taken */
    double loss;   /* mean training loss over its micro-batches */
    double lr, grad_norm;
    double tokens;  /* tokens seen so far */
    double flops;   /* FLOPs spent so far (gpt_flops_per_token * tokens; a branch: its own only) */
    double seconds; /* wall seconds spent training so far (carried across resumes; a branch:
                       its own only) */
    double step_seconds;
} gpt_step_info;

/*
 * Creates a trainer: checks the options, loads the data, creates the model on `backend`
 * (gpt_backend_cpu or gpt_backend_cuda), initialises the weights from the seed, or restores
 * everything from opts->resume when it is set. With opts->branch_from it restores the parent's
 * checkpoint (written with the same flags, the decay shape aside) and becomes a cooldown branch:
 * it runs only opts->decay_steps steps under gpt_lr_branch_at(); its step reports count tokens
 * in total (parent's and branch's) but FLOPs and seconds of the branch only. Returns ST_OK,
 * ST_EINVAL, ST_EIO (data or checkpoint unreadable), ST_EFORMAT (bad checkpoint), ST_EUNSUPPORTED
 * (no device) or ST_ENOMEM; the message goes to err (ST_ERRMSG_MAX bytes).
 */
st_status gpt_trainer_create(const gpt_options *opts, const gpt_backend *backend, gpt_trainer **out,
                             char *err);
void gpt_trainer_destroy(gpt_trainer *tr);
const char *gpt_trainer_errmsg(const gpt_trainer *tr);

uint64_t gpt_trainer_total_steps(const gpt_trainer *tr); /* a branch: parent's steps + K */
/* 1 when the trainer is a cooldown branch, with its parent's step in *parent_step (may be NULL) */
int gpt_trainer_is_branch(const gpt_trainer *tr, uint64_t *parent_step);
uint64_t gpt_trainer_step_index(const gpt_trainer *tr); /* steps taken so far */
size_t gpt_trainer_num_params(const gpt_trainer *tr);
double gpt_trainer_flops_per_token(const gpt_trainer *tr);
double gpt_trainer_peak_flops(const gpt_trainer *tr);
/* Learning rate at step s (0-based) under the options' schedule. */
double gpt_lr_at(const gpt_options *o, uint64_t s, uint64_t total_steps);
/*
 * Learning rate at step s of a cooldown branch taken at step `branch_step` (the step its
 * parent's checkpoint holds: the steps 0..branch_step-1 were the parent's) of a parent run of
 * `parent_total` steps: the parent's gpt_lr_at() before branch_step; from there on o->decay_steps
 * steps that decay from the parent's lr at branch_step, L, to L·min_lr_ratio in o->decay_shape
 * (step branch_step + j has p = (j+1)/decay_steps). Branching a WSD run in its stable phase at
 * step b with K decay steps gives the same lrs as a WSD run of b + K steps whose decay is its
 * last K steps (and the same warmup in steps).
 */
double gpt_lr_branch_at(const gpt_options *o, uint64_t s, uint64_t parent_total,
                        uint64_t branch_step);

/*
 * Takes one optimizer step. Returns ST_OK, ST_ESTATE (already finished), or ST_ENUMERIC when the
 * run diverged (non-finite loss or gradient norm, or loss > diverge_ratio × the first loss); the
 * reason is in gpt_trainer_errmsg() and *info is filled.
 */
st_status gpt_trainer_step(gpt_trainer *tr, gpt_step_info *info);
/* Mean validation loss over eval_batches fixed batches (the same ones every time). */
st_status gpt_trainer_eval(gpt_trainer *tr, double *val_loss);
/*
 * Atomic checkpoint: magic "STGPTCK1", version, config, step, RNG and AdamW state, parameters;
 * written to path + ".tmp", flushed, then renamed over `path`. Returns ST_OK or ST_EIO.
 */
st_status gpt_trainer_save(gpt_trainer *tr, const char *path);

/* ---- silent data corruption: state in memory, its hash, a fault for tests --------------------
 * A snapshot holds what a checkpoint holds (weights, AdamW moments and step count, the step, the
 * data RNG, the first loss) in memory; restoring it and taking the same steps again gives the
 * same bits on the CPU path for the same thread count, so a replay whose state hash differs from
 * the live one found corruption in one of them (docs/large-run.md). */
typedef struct gpt_snapshot gpt_snapshot;

/* Copies tr's state into *snap, allocating it when *snap is NULL (reused after). ST_OK,
 * ST_ENOMEM, or the backend's error (message in gpt_trainer_errmsg). */
st_status gpt_trainer_snapshot(gpt_trainer *tr, gpt_snapshot **snap);
/* Puts snap's state back into tr; the training seconds go on counting. ST_OK or the backend's
 * error. */
st_status gpt_trainer_restore(gpt_trainer *tr, const gpt_snapshot *snap);
/* The step a snapshot was taken at (steps done). */
uint64_t gpt_snapshot_step(const gpt_snapshot *snap);
/* FNV-1a (64-bit) over the bits of the weights, both AdamW moments and the AdamW step count:
 * equal for bit-identical states (different ones collide with probability ~2^-64). */
uint64_t gpt_snapshot_hash(const gpt_snapshot *snap);
/* NULL is a no-op. */
void gpt_snapshot_destroy(gpt_snapshot *snap);
/* Flips bit `bit` (0..31) of weight number `index`: the fault that the trainer's test-only
 * switch SCALETUNE_TRAIN_FLIP injects. ST_OK, ST_ERANGE, ST_ENOMEM or the backend's error. */
st_status gpt_trainer_flip_bit(gpt_trainer *tr, size_t index, int bit);

#ifdef __cplusplus
}
#endif
#endif /* GPT_H */
