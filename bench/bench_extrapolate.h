/*
 * bench_extrapolate.h — the types bench_extrapolate.c and bench_extrapolate_sweep.c share: the
 * bench's settings (bench_cfg), one seed's sweep and its extrapolations (seed_result, xp_eval).
 */
#ifndef BENCH_EXTRAPOLATE_H
#define BENCH_EXTRAPOLATE_H

#include <stddef.h>

#include "bench/sim.h"

#define N_FACTOR   2
#define N_PAR      6
#define RUN_SEED   1000000 /* the noisy large run of seed s uses llmsim --seed RUN_SEED + s */
#define MAX_SEEDS  256
#define ERR_MAX    200
#define PATH_CHARS 4096

extern const double factors[N_FACTOR]; /* the factors judged: 100 and 1000 */
/* sweep parameter names, and the llmsim flag each one feeds */
extern const char *const par_name[N_PAR];
extern const char *const par_flag[N_PAR];

/* One extrapolation of one sweep, and its truth. */
typedef struct xp_eval {
    int rc;      /* extrapolate's exit status (0 recommends, 3 refused as unsafe); -1 not run */
    int safe;    /* the JSON's "safe": 1, 0, or -1 when absent */
    int refused; /* rc == 3 or safe == 0 */
    int has_rec; /* a recommendation and an interval were read */
    double compute, rec[N_PAR], pred, lo, hi, p_diverge;
    int rec_opt;  /* --optimizer-choice: the recommended optimizer, 0 adamw, 1 lion, -1 none */
    int invalid;  /* llmsim rejected the recommended setting (e.g. warmup >= 1) */
    int diverged; /* the recommendation diverges in truth */
    double true_loss, oracle_loss, regret, observed;
    int covered, covered_true; /* observed / true loss within [lo, hi] */
    char err[ERR_MAX];
    char reason[ERR_MAX]; /* the JSON's "unsafe_reason", when refused */
} xp_eval;

typedef struct seed_result {
    int seed, done, sweep_rc, expr, linear_warmup;
    size_t n_runs, n_over_budget, n_failed, n_stopped, n_branches;
    double sweep_cost; /* the sum of the sweep's run costs (what the sweep spent) */
    double seconds;
    sim_law law;
    xp_eval f[N_FACTOR];
} seed_result;

typedef struct bench_cfg {
    char scaletune[PATH_CHARS], llmsim[PATH_CHARS], work[PATH_CHARS];
    const char *out;
    long n_seeds, jobs;
    long first_seed;      /* worlds first_seed .. first_seed + n_seeds - 1 (--first-seed) */
    int pass_config;      /* give extrapolate the sweep file too (--config) */
    const char *xp_flags; /* appended to each extrapolate command (--xp-flags) */
    const char *mode;     /* best (no optimizer block), random, or study (goal: extrapolate) */
    long runs;            /* budget.runs of each sweep */
    double budget_cost;   /* budget.cost of each sweep (FLOPs); 0: none */
    int reuse;            /* keep a finished sweep in WORK/seed-S and only extrapolate again */
    int early_stop;       /* early_stopping: {enabled: true} */
    int paced;            /* llmsim --steps-to-report 20 --sleep-ms 150: runs that take time */
    long reports;         /* llmsim --steps-to-report K (no pause): curves to store, 0 = 1 */
    int opt_choice;       /* optimizer: {choices: [adamw, lion]} in each sweep (issue 22) */
    const char *branches; /* --branches F1,F2: the controller's cooldown branches at these
                           * fractions (llmsim --checkpoints, --branch-step); NULL: none */
    int style;            /* --style: STYLE_CHINCHILLA, STYLE_NANOGPT or STYLE_HF (write_styled) */
} bench_cfg;

/* How the sweep file names and sets the run (--style): N and tokens as parameters; nanoGPT's
 * shape, max_iters and warmup_iters; Hugging Face Trainer's hidden_size, num_hidden_layers,
 * max_steps, per_device_train_batch_size (sequences of 1024 tokens), warmup_ratio. */
enum { STYLE_CHINCHILLA = 0, STYLE_NANOGPT, STYLE_HF };

/* Writes seed r's sweep file at path in cfg->style (sets r->expr and r->linear_warmup); -1 when
 * the file cannot be written. */
int bx_write_sweep(const bench_cfg *cfg, seed_result *r, const char *path);

/* Adds the exported sweep at path to r's counts (runs, failed, stopped, over budget, branches)
 * and cost; -1 when it cannot be read. */
int bx_read_export(const char *path, seed_result *r);

#endif
