/*
 * runner.h — scaletune's sweep controller, the manual.
 *
 * A sweep file (YAML, docs/config.md) says what to run and how to search; the controller asks
 * carbs/ for runs, launches them through a backend (the local process pool here; Slurm later
 * behind the same function-pointer struct), reads the metrics protocol (JSON lines,
 * docs/metrics-protocol.md) and records every state change in a SQLite store, the single
 * source of truth: a controller killed at any moment is resumed from the store without losing
 * or duplicating an observation.
 *
 * Conventions (as carbs.h):
 *  - Functions that can fail return st_status; handles keep a message (runner_errmsg,
 *    runner_store_errmsg); functions without a handle take `errmsg` (ST_ERRMSG_MAX bytes, may
 *    be NULL). Every call clears the handle's message.
 *  - The library copies what it keeps; returned pointers are borrowed until the next call on
 *    the same handle, except *_export results, freed with st_free().
 *  - The library never prints or exits. The local backend starts a small supervisor per attempt
 *    (scaletune-supervise when runner_options.supervisor names it, else a forked child, which
 *    leaves with _exit() and never returns into the caller's code).
 *  - Thread-safety: a handle is used by one thread at a time. Different store handles on the
 *    same file are safe, also from different processes (SQLite WAL + busy timeout).
 */
#ifndef RUNNER_H
#define RUNNER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "carbs/carbs.h"
#include "common/st.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- metrics protocol ------------------------------------------------------------------- */

typedef enum runner_event {
    RUNNER_EVENT_NONE = 0,     /* not a protocol line (garbage); ignored and counted */
    RUNNER_EVENT_STEP = 1,     /* {"event":"step","step":S,"loss":L,...} */
    RUNNER_EVENT_EVAL = 2,     /* {"event":"eval","step":S,"val_loss":V,...} */
    RUNNER_EVENT_FINAL = 3,    /* {"event":"final","val_loss":V,"flops":C,...} */
    RUNNER_EVENT_DIVERGED = 4, /* {"event":"diverged","step":S,"reason":"..."} */
    RUNNER_EVENT_OTHER = 5,    /* a JSON object with an unknown "event": kept, not acted on */
} runner_event;

#define RUNNER_METRICS_MAX      32    /* numeric fields kept per line; more are counted */
#define RUNNER_METRIC_NAME_MAX  64    /* longer names are counted as dropped */
#define RUNNER_METRICS_LINE_MAX 65536 /* longer lines are garbage */

typedef struct runner_metric {
    char name[RUNNER_METRIC_NAME_MAX];
    double value; /* NaN/±inf when the trainer wrote NaN, Infinity, -Infinity or null */
} runner_metric;

typedef struct runner_metrics_line {
    runner_event event;
    int64_t step;     /* -1 when absent or not a non-negative integer */
    size_t n_metrics; /* numeric fields other than "event" and "step", in line order */
    runner_metric metrics[RUNNER_METRICS_MAX];
    size_t n_dropped; /* numeric fields beyond RUNNER_METRICS_MAX or with too long names */
    char reason[128]; /* "reason" of a diverged record (truncated), else "" */
} runner_metrics_line;

/*
 * Parses one line (with or without its newline; need not be NUL-terminated) into *out.
 * Non-numeric fields other than "reason" are ignored; so are bytes that are not UTF-8 inside
 * strings (read as U+FFFD: an ignored field with a bad byte does not cost the line). Returns ST_OK
 * for a JSON object with a string "event", ST_EFORMAT for anything else (out->event is then
 * RUNNER_EVENT_NONE), or ST_ENOMEM. Never reads past line[len-1]. Thread-safe.
 */
st_status runner_metrics_parse(const char *line, size_t len, runner_metrics_line *out);

/* 1 and *value (may be NULL) if the line has the numeric field `name`, else 0. */
int runner_metrics_get(const runner_metrics_line *l, const char *name, double *value);
/* 1 if the protocol line has a field `name` of any type (a number, a string, ...), else 0. */
int runner_metrics_has_field(const char *line, size_t len, const char *name);

/* ---- sweep files ------------------------------------------------------------------------- */

typedef struct runner_config runner_config;

/* One parameter: searched (a carbs_param) or fixed (`{value: X}`). A categorical one
 * (`{choices: [adamw, lion]}`) is searched as CARBS_SPACE_CATEGORICAL: its value everywhere
 * (x arrays, the store) is the choice's index, and its choice string is what the command
 * template gets and exports show. A conditional one (`when: {optimizer: adamw}`) has
 * p.active_if/p.active_mask set and the value NaN in runs where it is inactive. */
typedef struct runner_param_spec {
    carbs_param p;      /* p.name (and p.active_if) owned by the config; unused when fixed */
    int is_fixed;       /* 1: `value:` given; not shown to the optimizer */
    char *fixed_text;   /* the scalar as written, substituted as is */
    double fixed_value; /* its numeric value, NaN if not a number */
    char **choices;     /* categorical: p.n_choices strings (owned); NULL otherwise */
    char **when_values; /* conditional: the parent's choices it is active for, n_when items */
    size_t n_when;
    double *grid;  /* method grid: explicit values (`grid: [..]`, n_grid items) or NULL */
    size_t n_grid; /* with grid NULL: `grid: N` points (0: the default, 5) */
} runner_param_spec;

/* The choice string of categorical parameter ps at value v (an index), borrowed; NULL when ps
 * is not categorical or v is not one of its indices. */
const char *runner_param_choice(const runner_param_spec *ps, double v);
/* The value of parameter ps for `text` (as `sweep enqueue` and Sweep.enqueue take it): a
 * categorical's choice (its index), else a number. "" or "none" for a conditional parameter
 * means inactive (NaN). ST_OK or ST_EINVAL (why in errmsg, ST_ERRMSG_MAX bytes, may be NULL). */
st_status runner_param_parse(const runner_param_spec *ps, const char *text, double *out,
                             char *errmsg);
/* 1 if parameter i of cfg is active at x (cfg->n_params values, file order): it has no `when`,
 * or its parent is active and holds one of the choices the `when` names. */
int runner_param_active(const runner_config *cfg, const double *x, size_t i);
/* Checks x[i] for a run not suggested (enqueue, record): fixed as fixed, NaN where inactive,
 * else inside the bounds (not at a log or logit space's edge; a categorical's index a whole
 * number). ST_OK or ST_EINVAL (why in errmsg, ST_ERRMSG_MAX bytes, may be NULL). */
st_status runner_param_check(const runner_config *cfg, const double *x, size_t i, char *errmsg);

/* Where attempts run: `backend: {kind: local | slurm, ...}` (docs/backends/slurm.md). */
typedef enum runner_backend_kind {
    RUNNER_BACKEND_LOCAL = 0, /* a supervised process group per attempt on this machine */
    RUNNER_BACKEND_SLURM = 1, /* one Slurm batch job per attempt */
} runner_backend_kind;

typedef enum runner_slurm_via {
    RUNNER_SLURM_CLI = 0,  /* sbatch --parsable, squeue, scancel */
    RUNNER_SLURM_REST = 1, /* slurmrestd, API v0.0.38, over libcurl */
} runner_slurm_via;

/* What a Slurm state that is neither success nor a plain failure turns into. */
typedef enum runner_slurm_policy {
    RUNNER_SLURM_RETRY = 0, /* an infrastructure failure: retried with backoff, not observed */
    RUNNER_SLURM_FAIL = 1,  /* a hyperparameter failure: observed as failed */
    RUNNER_SLURM_STOP = 2,  /* the run becomes `stopped` (resume relaunches it) */
} runner_slurm_policy;

/* The `backend:` block when kind is slurm. NULL strings and zeros: the cluster's defaults. */
typedef struct runner_slurm_config {
    runner_slurm_via via;
    char *partition, *account, *qos;
    unsigned time_limit_minutes; /* 0: the partition's default */
    char *gres;                  /* e.g. "gpu:1" (per node) */
    unsigned cpus_per_task;
    char **extra; /* more sbatch options, e.g. "--mem=32G" (cli route only), n_extra items */
    size_t n_extra;
    runner_slurm_policy on_timeout;   /* TIMEOUT and DEADLINE: fail (default) or retry */
    runner_slurm_policy on_cancelled; /* CANCELLED by someone else: retry (default) or stop */
    double poll_min_seconds;          /* batched queries: first interval, default 1 */
    double poll_max_seconds;          /* backoff cap while nothing changes, default 30 */
    double files_grace_seconds;       /* wait this long for an ended job's exit file, 30 */
    double command_timeout_seconds;   /* one sbatch/squeue/REST call, default 60 */
    /* rest: exactly one of url and socket; user and a token source for url (JWT) */
    char *rest_url;    /* "http://host:6820" */
    char *rest_socket; /* slurmrestd's unix socket (local authentication, no token) */
    char *rest_user;   /* X-SLURM-USER-NAME; NULL: the controller's user name */
    char *token_env;   /* environment variable holding the JWT, default SLURM_JWT */
    char *token_file;  /* or a file holding it (re-read at each request) */
} runner_slurm_config;

/* How a sweep makes its suggestions (`method:`, docs/config.md). */
typedef enum runner_method {
    RUNNER_METHOD_CARBS = 0,  /* carbs/ (default) */
    RUNNER_METHOD_GRID = 1,   /* the grid of the parameters' `grid:` values (runner_method_point) */
    RUNNER_METHOD_RANDOM = 2, /* uniform in each parameter's space between its bounds */
    RUNNER_METHOD_STUDY = 3,  /* study mode: the same as optimizer.goal: extrapolate */
} runner_method;

/* What the optimizer searches for (`optimizer: {goal: ...}`, docs/config.md). */
typedef enum runner_goal {
    RUNNER_GOAL_BEST = 0,        /* CARBS: the best small run for its cost (default) */
    RUNNER_GOAL_EXTRAPOLATE = 1, /* study mode: the small runs that pin down the large run */
} runner_goal;

/* The `large_run:` block: what `scaletune run` does beyond a sweep (docs/large-run.md). */
typedef struct runner_large_config {
    char **health_checks; /* check commands, n_health_checks (each split at spaces) */
    size_t n_health_checks;
    double health_timeout_seconds; /* one check; default 60 */
    unsigned quarantine_after;     /* failed checks of a node before it is quarantined; 2 */
    int restart_on_straggler;      /* default 0 */
    double straggler_fraction;     /* tokens/s below this fraction of the run's median...; 0.5 */
    size_t straggler_window;       /* ...for this many step records in a row; default 5 */
    double spike_factor;           /* a step loss above factor x the recent median; 1.5, 0 off */
    size_t spike_window;           /* steps of that median; default 20 */
    double slow_node_fraction;     /* a node whose tokens/s is below this fraction of the median
                                      of all nodes is slow (runner_store_node_rates); 0.5, 0 off */
} runner_large_config;

/*
 * A loaded sweep file. Fields are read-only for callers; defaults are those of docs/config.md.
 * Strings and arrays are owned by the config.
 */
typedef struct runner_config {
    char *name;
    char **argv; /* command template, argc items; placeholders {param}, {_run}, {_attempt},
                    {_dir}; "{{" and "}}" are literal braces */
    size_t argc;
    char **env; /* "KEY=VALUE" templates, n_env items */
    size_t n_env;
    char *workdir;     /* the runs' working directory; NULL: the current one. From
                          runner_config_load_file a relative `workdir:` is made absolute against
                          the directory holding the file; from a string it is as written
                          (relative: to the current directory). runner_launch records it
                          absolute (NULL: the current directory) and a resumed controller or
                          runner_store_read_sweep gives the recorded one (schema 5) */
    char *objective;   /* metric of the final record */
    int maximize;      /* goal: maximize */
    char *cost_metric; /* metric the trainer reports, or "wall_seconds" (measured) */
    char *cost_expr;   /* NULL or an arithmetic expression over {param} */
    runner_param_spec *params;
    size_t n_params;         /* all parameters; searched ones keep their order for carbs */
    size_t budget_runs;      /* 0: no limit on runs */
    double budget_cost;      /* +inf: no limit */
    double max_cost_per_run; /* +inf: no cap */
    size_t slots;            /* parallel runs, default 1 */
    int *gpus;               /* n_gpus ids handed out through CUDA_VISIBLE_DEVICES */
    size_t n_gpus;
    unsigned retries;              /* infrastructure retries per run, default 3 */
    double backoff_seconds;        /* first retry delay, doubled each retry, default 5 */
    double backoff_max_seconds;    /* default 300 */
    unsigned stop_after_identical; /* retries.stop_after_identical: the sweep stops when this many
                                      attempts in a row fail the same deterministic way (the
                                      same exit status, no final record, a malformed final, no
                                      launch); default 5, 0 never */
    double wall_seconds;           /* per attempt, +inf: none */
    double no_metrics_seconds;     /* +inf: none */
    double straggler_factor;       /* kill when cost > factor * predicted; default 10, 0 off */
    double kill_grace_seconds;     /* SIGTERM, then SIGKILL after this; default 5 */
    uint64_t seed;
    int deterministic;       /* 1 (default): results reach the optimizer in suggestion order, so a
                                parallel sweep is the same whatever the order runs finish in;
                                0 (`deterministic: false`): as soon as they finish */
    runner_goal goal;        /* optimizer.goal: best (default, CARBS) or extrapolate (study mode) */
    double target_factor;    /* optimizer.target_factor (study mode): the large run's compute as a
                                multiple of max_cost_per_run; NAN when not given */
    double target_compute;   /* optimizer.target_compute (study mode): the large run's compute in
                                the cost metric's unit; NAN when not given (then target_factor) */
    size_t design_initial;   /* optimizer.initial_design (study mode): space-filling runs before
                                the acquisition takes over; 0: the default */
    double design_lr_window; /* optimizer.lr_window (study mode): the design's learning-rate
                                window (study_mode_options.lr_window); NAN: the default */
    char **opt_names;        /* optimizer options, validated with carbs_options_set */
    char **opt_values;
    size_t n_opts;
    int es_enabled;         /* early_stopping.enabled (default 0); the CLI installs a rule */
    size_t es_patience;     /* early_stopping.patience: consecutive evals saying stop, def. 3 */
    double es_min_fraction; /* early_stopping.min_fraction of the planned tokens (or steps)
                               before any stop, in [0, 1); default 0.2 */
    double es_margin;       /* early_stopping.margin: relative, default 0.01 (the rules') */
    double *br_at;          /* branches.at: fractions of a parent's steps where its cooldown
                               branches end, n_br_at of them (0: no branches) */
    size_t n_br_at;
    double br_decay; /* branches.decay_fraction: a branch's share of steps decaying, 0.2 */
    char **br_argv;  /* branches.args: appended to the parent's command, br_argc items;
                        placeholders also {_parent_run}, {_parent_checkpoint},
                        {_branch_step}, {_decay_steps} */
    size_t br_argc;
    char *text; /* the file's text, stored with the sweep so resume needs no file */
    runner_backend_kind backend; /* default local */
    runner_slurm_config slurm;   /* when backend is RUNNER_BACKEND_SLURM */
    runner_method method;        /* method: carbs (default), grid, random, study */
    char **con_names;            /* constraints: `{memory_gb: "<= 80"}`, n_con items: */
    int *con_le;                 /* 1: value <= bound holds; 0: value >= bound holds */
    double *con_bound;
    size_t n_con;
    runner_large_config large; /* the large_run: block (its defaults when absent) */
} runner_config;

/*
 * Whether a final record (a metrics-protocol line) breaks one of cfg's constraints. A
 * constraint's value is read from the record's "constraints" object
 * ({"event":"final",...,"constraints":{"memory_gb":71}}), else from a top-level numeric field
 * of that name; a constraint the record does not report is taken as held. Returns 1 and why
 * (cap bytes, may be NULL) when one is broken (a NaN value breaks it), else 0.
 */
int runner_constraints_broken(const runner_config *cfg, const char *final, char *why, size_t cap);

/*
 * Loads and validates a sweep file. On failure *out is NULL and errmsg says
 * "file:line:col: field: problem". Unknown keys are errors. A relative `workdir` is resolved
 * against the directory holding the file (symbolic links and .. resolved as far as it exists).
 * Returns ST_OK, ST_EIO (cannot read; the current directory unknown for a relative workdir),
 * ST_EFORMAT (YAML syntax), ST_EINVAL (a bad or missing field), ST_ENOMEM.
 */
st_status runner_config_load_file(const char *path, runner_config **out, char *errmsg);
/* The same from memory; `label` names the source in messages (copied). */
st_status runner_config_load_string(const char *text, size_t len, const char *label,
                                    runner_config **out, char *errmsg);
/* NULL is a no-op. */
void runner_config_destroy(runner_config *c);
/* Study mode's initial design: how many suggestions come from the space-filling design before
 * the acquisition takes over: design_initial, else max(8, budget_runs / 4), 16 without a run
 * budget. In a deterministic parallel sweep a design suggestion waits for fewer results than
 * the acquisition's (docs/config.md, "Deterministic parallel sweeps"). */
size_t runner_config_design_size(const runner_config *cfg);

/* A sweep name is a path component of every attempt's log directory: 1 to
 * RUNNER_SWEEP_NAME_MAX characters of [A-Za-z0-9._-], not starting with '.' or '-'. Returns 1
 * if `name` is one, else 0 with why (a sentence, NUL-terminated in why[0..cap-1]). */
#define RUNNER_SWEEP_NAME_MAX 100
int runner_sweep_name_ok(const char *name, char *why, size_t cap);

/* Number of searched (non-fixed) parameters, the optimizer's D. */
size_t runner_config_dim(const runner_config *c);

/*
 * Evaluates an arithmetic expression: numbers (1e6), + - * / ^ (right-associative power),
 * unary minus, parentheses and {name} placeholders looked up in names[0..n-1] (values in the
 * same order). No functions, no variables other than the placeholders, depth-limited.
 * Returns ST_OK, ST_EINVAL (syntax, unknown name; errmsg says where), ST_ERANGE (result not
 * finite). Thread-safe.
 */
st_status runner_expr_eval(const char *expr, size_t n, const char *const *names,
                           const double *values, double *out, char *errmsg);

/* ---- failure kinds and run statuses ------------------------------------------------------ */

typedef enum runner_run_status {
    RUNNER_RUN_PENDING = 0,      /* waiting for a slot (new, retry after backoff, resumed) */
    RUNNER_RUN_RUNNING = 1,      /* an attempt is launched */
    RUNNER_RUN_SUCCEEDED = 2,    /* final record with the objective; observed */
    RUNNER_RUN_FAILED = 3,       /* hyperparameter failure, observed as a failure; or over the
                                    cost cap (over_budget), observed by the cost model only */
    RUNNER_RUN_INFRA_FAILED = 4, /* infrastructure failures exhausted the retries; not observed */
    RUNNER_RUN_STOPPED = 5,      /* stopped by the user (failure `stopped`): relaunched by
                                    resume; or stopped early by the stop rule (failure none, a
                                    stop reason): ended, never relaunched (runner_set_stop_check) */
} runner_run_status;

/* "pending", "running", ... (static). */
const char *runner_run_status_name(runner_run_status s);

typedef enum runner_failure {
    RUNNER_FAIL_NONE = 0,
    /* hyperparameter failures: observed as failures */
    RUNNER_FAIL_DIVERGED = 1, /* exit 3 or a diverged record, or a non-finite objective */
    RUNNER_FAIL_OOM = 2,      /* exit 4 */
    /* refused (cost expr) or killed (reported cost) above budget.max_cost_per_run: not a
     * hyperparameter failure; ended, never retried, and observed by the cost model only */
    RUNNER_FAIL_OVER_BUDGET = 3,
    RUNNER_FAIL_WALL_TIMEOUT = 4, /* ran past timeouts.wall_seconds while making progress */
    RUNNER_FAIL_STRAGGLER = 5,    /* reported cost far above the optimizer's prediction */
    /* infrastructure failures: retried, never observed */
    RUNNER_FAIL_EXIT = 6,     /* another non-zero exit status */
    RUNNER_FAIL_SIGNAL = 7,   /* killed by a signal nobody in the runner sent */
    RUNNER_FAIL_HANG = 8,     /* no metrics line for timeouts.no_metrics_seconds */
    RUNNER_FAIL_NO_FINAL = 9, /* exit 0 without a final record with the objective */
    RUNNER_FAIL_LOST = 10,    /* the supervisor vanished without writing an exit status */
    RUNNER_FAIL_LAUNCH = 11,  /* the backend could not launch it (fork, directory, exec) */
    RUNNER_FAIL_STOPPED = 12, /* stopped by the user (run status `stopped`) */
    /* infrastructure failures reported by a scheduler (Slurm): retried, never observed */
    RUNNER_FAIL_NODE = 13,       /* the node failed or the job was preempted (NODE_FAIL, ...) */
    RUNNER_FAIL_CANCELLED = 14,  /* cancelled outside scaletune (scancel), on_cancelled: retry */
    RUNNER_FAIL_TIME_LIMIT = 15, /* the scheduler's time limit, with on_timeout: retry */
    /* a configuration error of the trainer: exit 0 with a final record whose objective (or
     * reported cost metric) is there but invalid (not a number; a cost that is not a positive
     * finite number). Never retried (it would say the same again), never observed; the run
     * ends infra_failed (without an observation) and its event quotes the line */
    RUNNER_FAIL_BAD_FINAL = 16,
    /* the run finished but its final record breaks one of the sweep's `constraints:` (memory
     * over its limit): a hyperparameter failure, observed as failed so the optimizer learns
     * where the constraint holds (as Optuna's trial.set_constraint); objective and cost kept */
    RUNNER_FAIL_CONSTRAINT = 17,
} runner_failure;

/* Exit statuses a trainer reserves (docs/trainer.md, the reference trainer): a run that exits
 * with one is classified as that hyperparameter failure even without a record saying so. Any
 * other non-zero status is an infrastructure failure (RUNNER_FAIL_EXIT). */
#define RUNNER_EXIT_DIVERGED 3 /* RUNNER_FAIL_DIVERGED */
#define RUNNER_EXIT_OOM      4 /* RUNNER_FAIL_OOM */

/* "diverged", "oom", ... (static). */
const char *runner_failure_name(runner_failure f);
/* 1 for the hyperparameter kinds (observed as failures): diverged, oom, wall_timeout,
 * straggler, constraint; 0 otherwise (over_budget included: it teaches the cost model only). */
int runner_failure_is_hyperparameter(runner_failure f);

/* ---- the store (read-side and ask/tell; no lease needed) --------------------------------- */

typedef struct runner_store runner_store;

/*
 * Opens the existing SQLite store at `path` (migrating it if needed): WAL, busy timeout 10 s,
 * foreign keys. Never creates a file. A SQLite file that is not a store (no scaletune schema
 * marker, PRAGMA application_id, and not a store from before it) is refused before anything is
 * written to it. Returns ST_OK, ST_ENOTFOUND (no file at `path`: "no such store: PATH"),
 * ST_EDB (not a store, another program's database, an empty file, newer schema, locked),
 * ST_ENOSPC, ST_ENOMEM. *out is NULL on failure; errmsg says why.
 */
st_status runner_store_open(const char *path, runner_store **out, char *errmsg);
/* The same, creating the store when `path` does not exist or is an empty file (what
 * runner_launch, `sweep launch` and `sweep create` do). A new store is built whole under a
 * temporary name next to it, "PATH.creating-<pid>.<n>.<host>", and renamed into place
 * (never over a file that appeared there meanwhile), so a kill at any moment leaves either no
 * file at `path` or a complete store, never one that runner_store_open refuses; the temporary
 * files of creators killed on this host are removed by the next call. An empty file at `path`
 * is thus never a half-made store of ours: runner_store_open refuses it, and this function
 * makes the store in it, in place (its first commit is atomic). A "PATH-wal" or
 * "PATH-journal" with content but no PATH is refused (ST_EDB): SQLite would replay it. */
st_status runner_store_create(const char *path, runner_store **out, char *errmsg);
/* NULL is a no-op. */
void runner_store_close(runner_store *s);
const char *runner_store_errmsg(const runner_store *s);

/* The names of sweep `sweep`'s parameters (all of them, fixed ones included, in file order):
 * *n names, borrowed until the next call on the store. ST_OK, ST_ENOTFOUND, ST_EDB. */
st_status runner_store_params(runner_store *s, const char *sweep, size_t *n,
                              const char *const **names);

/* Sweep names, oldest first, as one "\n"-separated list (borrowed). ST_OK or ST_EDB. */
st_status runner_store_list(runner_store *s, const char **names);

typedef struct runner_status {
    char name[128];
    size_t n_runs;         /* suggestions made */
    size_t n_by_status[6]; /* indexed by runner_run_status */
    size_t n_attempts;
    size_t n_retried; /* attempts beyond the first of each run */
    size_t n_garbage; /* non-protocol lines over all attempts */
    int maximize;
    int has_best;
    uint64_t best_run; /* suggestion id of the best succeeded run */
    double best_objective, best_cost;
    double spent_cost; /* sum of the recorded cost of finished runs */
    size_t budget_runs;
    double budget_cost, max_cost_per_run;
    int controller_alive; /* a lease younger than its expiry whose process (when on this host)
                             still exists */
    char controller[128]; /* lease owner "host:pid" or "" */
    int stop_requested;
    double heartbeat;  /* epoch seconds of the lease's last heartbeat; NAN when no lease */
    double created;    /* epoch seconds when the sweep was launched or created */
    double last_ended; /* epoch seconds when its last run ended; NAN when none has */
    /* runs that ended on a malformed final record (failure `bad_final`: a configuration error
     * of the trainer, not of the infrastructure; counted in n_by_status[infra_failed] too, the
     * status such a run ends in) and the event of the last of them, quoting its final record
     * ("run 3 attempt 1: bad_final ('val_loss' is not a number in the final record: {...})");
     * "" when there is none */
    size_t n_bad_final;
    char bad_final[384];
    /* cooldown branches (the `branches:` block) by status: rows of their own, never in n_runs
     * or n_by_status; their cost is in spent_cost */
    size_t n_branches, n_branch_by_status[6];
} runner_status;

/* Status of sweep `sweep` (NULL: the only one). ST_OK, ST_ENOTFOUND, ST_EINVAL (several sweeps
 * and no name), ST_EDB. */
st_status runner_store_status(runner_store *s, const char *sweep, runner_status *st);

/*
 * Pareto front of succeeded runs (cost low and objective good): increasing cost, strictly
 * improving objective. Call with cap 0 to learn *n. run_ids/cost/objective may be NULL.
 */
st_status runner_store_pareto(runner_store *s, const char *sweep, size_t cap, size_t *n,
                              uint64_t *run_ids, double *cost, double *objective);

/*
 * Exports a sweep as JSON (an object: "sweep", "objective", "goal", "cost_metric", and "runs":
 * per run "suggestion_id", "status", "failure", "params", "objective", "cost",
 * "predicted_cost", "final" (every numeric field of the final record), "N" and "D" (the final
 * record's "params" and "tokens", null when absent), "attempts", and for a run stopped early
 * "stop_reason" and "bound_objective") or CSV (one row per run:
 * suggestion_id, status, failure, objective, cost, attempts, one column per parameter, N and D
 * (named final_N and final_D when a parameter is called N or D), then final.<field> for every
 * field any final record has; empty cells where a value is absent). *out is NUL-terminated;
 * free with st_free().
 */
st_status runner_store_export_json(runner_store *s, const char *sweep, char **out);
st_status runner_store_export_csv(runner_store *s, const char *sweep, char **out);

/* ---- the typed read of a sweep (study/ and report/ read a sweep only through this) ------- */

/* One attempt of a run. */
typedef struct runner_sweep_attempt {
    int number;             /* 1, 2, ... */
    char state[16];         /* "running", "done", "failed", ... (the store's text) */
    runner_failure failure; /* RUNNER_FAIL_NONE when it succeeded or is still running */
    double started, ended;  /* epoch seconds; ended NAN while running */
} runner_sweep_attempt;

/* One run (suggestion) of a sweep. */
typedef struct runner_sweep_run {
    uint64_t id; /* suggestion id */
    runner_run_status status;
    runner_failure failure;    /* the run's failure kind (RUNNER_FAIL_NONE if none) */
    double *x;                 /* cfg->n_params values in file order; NAN for a fixed parameter
                                  whose value is not a number */
    double objective, cost;    /* NAN when not recorded */
    double predicted_cost;     /* the optimizer's prediction when suggested, NAN if none */
    double final_N, final_D;   /* the final record's "params" and "tokens", NAN when absent */
    uint64_t parent;           /* a cooldown branch: its parent's id, from the run row when the
                                  controller spawned it (the `branches:` block; then whatever
                                  its status), else the final record's "parent_run" with
                                  "branch":1; 0 when not a branch
                                  (docs/metrics-protocol.md, "Cooldown branches") */
    int stopped_early;         /* status stopped by the stop rule (ended; its curve is kept) */
    double bound_objective;    /* stopped early: the lower end of its final objective's interval,
                                  what the optimizer saw (censored); NAN if it saw nothing */
    double bound_cost;         /* stopped early: the cost it would have had at its end, NAN */
    runner_sweep_attempt *att; /* n_att attempts in order */
    size_t n_att;
} runner_sweep_run;

/* A sweep as stored: its sweep file (parameters with their spaces and bounds, objective, cost
 * metric, budget) and every run, in suggestion order. Read-only for callers. */
typedef struct runner_sweep {
    runner_config *cfg;
    runner_sweep_run *runs;
    size_t n_runs;
} runner_sweep;

/*
 * Reads sweep `sweep` (NULL: the only one) into *out (free with runner_sweep_free). Returns
 * ST_OK, ST_ENOTFOUND, ST_EINVAL (several sweeps and no name), ST_EDB (unreadable or a stored
 * sweep file that no longer loads: the message says which), ST_ENOMEM. Writes nothing.
 */
st_status runner_store_read_sweep(runner_store *s, const char *sweep, runner_sweep **out);
/* NULL is a no-op. */
void runner_sweep_free(runner_sweep *w);

/*
 * The step and eval records of run `run`'s last attempt that carry metric `metric` (e.g. "loss"
 * is in step records, "val_loss" in eval records), in the order they were written: *n points, steps
 * (the record's "step", NAN if absent), values, and the cost metric `cost_metric` of each record
 * (NAN where absent; cost_metric may be NULL). Arrays are malloc'd (free with free()); all NULL
 * when *n is 0. ST_OK, ST_EDB, ST_ENOMEM.
 */
st_status runner_store_run_curve(runner_store *s, uint64_t run, const char *metric,
                                 const char *cost_metric, size_t *n, double **steps,
                                 double **values, double **costs);

/*
 * Deletes sweep `sweep` (its exact name; NULL is refused) and everything recorded for it (runs,
 * attempts, metrics, observations, events); attempt logs on disk are left alone. Returns ST_OK,
 * ST_EINVAL (no name), ST_ENOTFOUND, ST_EBUSY (a live controller holds the sweep: nothing is
 * deleted), ST_EDB.
 */
st_status runner_store_delete(runner_store *s, const char *sweep);
/*
 * Renames sweep `sweep` to `new_name` (runner_sweep_name_ok; the stored sweep file's
 * top-level `name:` line is rewritten to match, so resume and exports use the new name).
 * Returns ST_OK, ST_EINVAL (a bad name), ST_ENOTFOUND, ST_ESTATE (new_name is taken), ST_EBUSY
 * (a live controller holds the sweep), ST_EFORMAT (the stored file has no `name:` line),
 * ST_EDB.
 */
st_status runner_store_rename(runner_store *s, const char *sweep, const char *new_name);

/* SQLite's quick check of the whole store file (every page and index, not the contents' sense):
 * ST_OK, or ST_EDB with the first problems in the message. Linear in the file's size. */
st_status runner_store_check(runner_store *s);

/* Asks the controller that owns the sweep to stop gracefully (it polls the store). */
st_status runner_store_request_stop(runner_store *s, const char *sweep);

/*
 * Ask/tell for shell scripts: asks the optimizer (rebuilt from the store with the counters of
 * the last suggestion: the same suggestions as one optimizer kept alive) for one run, records
 * it as running with no backend, and returns its suggestion id and all parameter values
 * (n_params of the config, fixed ones included, in file order) in x (cap values).
 * ST_EBUSY if a controller holds the sweep, ST_ERANGE if the budget is spent.
 */
st_status runner_store_ask(runner_store *s, const char *sweep, uint64_t *id, double *x, size_t cap);
/*
 * runner_store_ask with an expiry: the run is the worker's for `ttl` seconds (0: forever).
 * Once that has passed without a tell (a worker killed), the run is expired: listed by
 * runner_store_expired, not counted against the budget, and the next ask hands the same run
 * (id and parameters) out again with a new expiry instead of making a new suggestion. A late
 * tell from the first worker is still accepted while the run waits; the second tell of a run
 * is refused (ST_ESTATE). ST_EINVAL for a negative or NaN ttl.
 */
st_status runner_store_ask_ttl(runner_store *s, const char *sweep, double ttl, uint64_t *id,
                               double *x, size_t cap);
/* The asked runs whose expiry has passed, oldest first: ids (cap values, may be NULL), *n all
 * of them. */
st_status runner_store_expired(runner_store *s, const char *sweep, size_t cap, size_t *n,
                               uint64_t *ids);
/* Records the outcome of an asked run: objective and cost (> 0 for a success), or failed
 * (cost then optional). ST_EINVAL for a success without a finite objective and a cost > 0,
 * ST_ENOTFOUND (no such run), ST_ESTATE (not waiting for a result). */
st_status runner_store_tell(runner_store *s, const char *sweep, uint64_t id, double objective,
                            double cost, int failed);
/* runner_store_tell with the run's final record (NULL: none), a metrics-protocol line
 * ({"event":"final","params":N,"tokens":D,...}) kept as a trainer's would be: the model size
 * and tokens the extrapolation engine reads (runner_store_read_sweep's final_N, final_D).
 * ST_EINVAL if it is not a final record. */
st_status runner_store_tell_final(runner_store *s, const char *sweep, uint64_t id, double objective,
                                  double cost, int failed, const char *final);
/* Records a new sweep (YAML text, docs/config.md; a sweep for ask/tell needs no command) in
 * the store at db_path, creating the store if there is none, as `scaletune sweep create`.
 * Returns runner_launch's statuses, with the reason in errmsg. */
st_status runner_store_create_sweep(const char *db_path, const char *yaml, char *errmsg);
/* Records a finished run that was not asked (x: n_params values, fixed ones as fixed, searched
 * ones inside their bounds, else ST_EINVAL): an in-process optimizer's history written into a
 * store. *id (may be NULL) gets the run's id. Later asks see it as any observation. */
st_status runner_store_record(runner_store *s, const char *sweep, const double *x, double objective,
                              double cost, int failed, const char *final, uint64_t *id);

/*
 * Enqueues a known configuration (x: n_params values in file order, checked as
 * runner_param_check does: fixed ones as fixed, NaN where a conditional parameter is inactive,
 * searched ones inside their bounds, a categorical's choice index) as a pending run of the
 * sweep: a controller that resumes the sweep launches pending runs before asking the optimizer
 * for new ones, and the next ask hands it out before making a suggestion; its result is
 * observed like any other run's (the optimizer sees it as in flight until then). It counts on
 * the budget. *id (may be NULL) gets the run's id. Returns ST_OK, ST_EINVAL, ST_ENOTFOUND,
 * ST_EBUSY (a live controller holds the sweep: stop it, enqueue, resume), ST_ERANGE (budget
 * spent), ST_EDB.
 */
st_status runner_store_enqueue(runner_store *s, const char *sweep, const double *x, uint64_t *id);
/* runner_store_enqueue from text, as `scaletune sweep enqueue k=v ...` takes it: n names and
 * values (runner_param_parse: a choice, a number, "none" for an inactive parameter); a
 * parameter not named takes its centre (its fixed value; NaN where inactive). */
st_status runner_store_enqueue_text(runner_store *s, const char *sweep, size_t n,
                                    const char *const *names, const char *const *values,
                                    uint64_t *id);
/* The x (n_params values, file order; cap at least n_params) of n names and text values, as
 * runner_store_enqueue_text reads them (not checked against the bounds). ST_OK, ST_EINVAL
 * (an unknown name, a value that does not parse), ST_ENOTFOUND. */
st_status runner_store_parse_params(runner_store *s, const char *sweep, size_t n,
                                    const char *const *names, const char *const *values, double *x,
                                    size_t cap);
/* x (n_params values) as "name=value\n" lines, the values as commands get them (a choice's
 * string, "" where inactive). *out: free with st_free(). ST_OK, ST_ENOTFOUND, ST_ENOMEM. */
st_status runner_store_format_params(runner_store *s, const char *sweep, const double *x,
                                     char **out);

/* ---- the controller ---------------------------------------------------------------------- */

typedef struct runner runner;

typedef struct runner_progress {
    size_t n_runs, n_running, n_pending, n_done, n_failed, n_infra_failed, n_retried;
    size_t n_branch_running, n_branch_pending, n_branch_done; /* cooldown branches, apart */
    size_t budget_runs;
    double spent_cost, budget_cost;
    int has_best;
    double best_objective;
    const char *event; /* what just happened ("launched run 4 attempt 1", ...) or NULL */
} runner_progress;

typedef struct runner_options {
    const char *db_path;  /* required */
    const char *log_dir;  /* NULL: "<db_path>.runs"; attempt logs go below it */
    double poll_seconds;  /* 0.02 */
    double lease_seconds; /* 15: a heartbeat older than this lets another take over */
    /* Set to non-zero (e.g. from a SIGINT/SIGTERM handler) to stop gracefully: no new
     * launches, running attempts are stopped and their runs marked `stopped`. */
    volatile sig_atomic_t *stop_flag;
    /* Called after every state change (from the controller's thread); may be NULL. */
    void (*progress)(const runner_progress *p, void *data);
    void *progress_data;
    /* For tests of the lease (may be NULL): called at a named point inside a step, where a
     * controller can be stalled. "launch": a run is about to get an attempt recorded and
     * submitted (data: pause_data). */
    void (*pause_hook)(const char *point, void *data);
    void *pause_data;
    /* The node recorded as each attempt's host (per-node throughput, runner_store_node_rates)
     * until a backend that knows better says where the attempt ran (Slurm: at its end). NULL
     * or "": $SCALETUNE_NODE when set (read at each launch), else this machine's host name.
     * Copied. */
    const char *node;
    /* The local backend's supervisor program: the path of the `scaletune-supervise` built and
     * installed next to `scaletune` (copied). NULL (the default): each attempt's supervisor is a
     * fork of this process instead, which costs the controller more CPU the more memory it has
     * (page tables copied, its pages copy-on-write while the attempt runs). Either way the attempt
     * behaves the same; if the program cannot be started, the attempt fails to launch
     * (RUNNER_FAIL_LAUNCH). */
    const char *supervisor;
} runner_options;

runner_options runner_options_default(void);

/*
 * Starts a new sweep: records the config in the store (its name must be new there) with the
 * runs' working directory made absolute (cfg->workdir, else the current directory), takes the
 * lease and rebuilds nothing. Returns ST_OK, ST_EINVAL (bad optimizer option, no db_path),
 * ST_ESTATE (a sweep with that name exists: use resume), ST_EIO (the current directory is
 * unknown), ST_EDB, ST_ENOSPC, ST_ENOMEM.
 */
st_status runner_launch(const runner_config *cfg, const runner_options *opts, runner **out,
                        char *errmsg);

/*
 * Resumes sweep `sweep` (NULL: the only one): takes the lease (ST_EBUSY while another live
 * controller holds it), rebuilds the optimizer from the recorded observations in order
 * (carbs_create + carbs_observe), registers the runs still open (pending or running) as
 * outstanding under their run id (carbs_add_outstanding; observed later with that id), and
 * with cfg->deterministic also the ended runs not released yet (held again, released in
 * order), settles or re-attaches the attempts that were running, and requeues the runs the
 * user stopped (not those stopped early: they have ended).
 * The counters of the last suggestion are restored (schema 3), so a resumed sweep suggests
 * what an uninterrupted one would (docs/config.md, "Deterministic parallel sweeps"). Runs go
 * on in the working directory recorded at launch (schema 5), not the current one.
 */
st_status runner_resume(const char *sweep, const runner_options *opts, runner **out, char *errmsg);

/*
 * Runs the loop until the budget is spent and every run is finished (ST_OK,
 * runner_finished() = 1), or a stop was asked (ST_OK, runner_finished() = 0). Errors: ST_EDB,
 * ST_ENOSPC (the store could not be written; nothing recorded is lost), ST_EBUSY (lease lost),
 * ST_EBACKEND, ST_ENOMEM.
 */
st_status runner_run(runner *r);
/* One iteration of the loop (settle, launch, heartbeat); *done is set when finished. */
st_status runner_step(runner *r, int *done);
int runner_finished(const runner *r);
/* Releases the lease. Attempts still running keep running (resume re-attaches). NULL no-op. */
void runner_destroy(runner *r);
const char *runner_errmsg(const runner *r);

/*
 * Study mode: a proposer other than carbs/ makes the suggestions (runner_set_proposer). The
 * controller asks it for suggestion `index` (0-based, in suggestion order) with what the
 * proposer may use: the sweep's first n_released runs in suggestion order, all terminal (read
 * from the store at db_path through runner_store_read_sweep; later runs must be ignored even
 * if they have finished, so that a parallel sweep is the same whatever the order runs finish
 * in), and the suggestions still outstanding (their values, file order, natural units).
 */
typedef struct runner_propose_request {
    const runner_config *cfg; /* the sweep file */
    const char *db_path;      /* the store (read-only for the proposer) */
    const char *sweep;        /* the sweep's name */
    size_t index;             /* this suggestion's position in the sweep, 0-based */
    size_t n_released;        /* the proposer uses the first n_released runs only */
    const double *pending;    /* n_pending x cfg->n_params values (fixed parameters included) */
    size_t n_pending;
    uint64_t seed; /* cfg->seed mixed with index: the proposer draws from nothing else */
} runner_propose_request;

/* Fills x (cfg->n_params values, file order, natural units; fixed parameters are overwritten
 * by the controller) or returns an error with a message in errmsg (ST_ERRMSG_MAX bytes). */
typedef st_status (*runner_propose_fn)(void *user, const runner_propose_request *req, double *x,
                                       char *errmsg);

/*
 * Suggestion `index` (0-based) of a sweep whose method is grid or random (cfg->n_params values
 * into x, file order; NaN where a conditional parameter is inactive): grid: the product of
 * every searched parameter's grid values (`grid: [values]`, `grid: N` points spread evenly in
 * its space between its bounds, default 5; a categorical's choices), in file order with the
 * last parameter varying fastest, combinations that differ only in an inactive parameter once,
 * and from the start again past the last; random: each parameter uniform in its space between
 * its bounds (log-uniform for log, uniform log-odds for logit, integers rounded, a choice
 * uniformly), from cfg->seed and index alone. ST_OK, ST_EINVAL (another method), ST_ENOMEM.
 * runner_launch and runner_resume install runner_method_proposer for these methods, and
 * runner_store_ask uses the same points.
 */
st_status runner_method_point(const runner_config *cfg, size_t index, double *x, char *errmsg);
st_status runner_method_proposer(void *user, const runner_propose_request *req, double *x,
                                 char *errmsg);

/* Makes fn the source of suggestions for r (fn NULL: carbs/ again). carbs/ still keeps the
 * observations and the cost model (each proposal is outstanding in carbs under its run id),
 * and the cost cap applies to what fn proposes: refused before launch when cost.expr puts it
 * above budget.max_cost_per_run, stopped at the cap otherwise; the one-run-at-a-time start
 * while carbs is blind to the cap does not apply (the proposer answers for its costs). A
 * searched value outside its [min, max] (or NaN) is an error of runner_step (ST_EINVAL). */
void runner_set_proposer(runner *r, runner_propose_fn fn, void *user);
/* The same for the asks of store s (runner_store_ask, _ask_ttl): a sweep in study mode
 * (method study, optimizer.goal extrapolate) gets its new suggestions from fn (study/'s
 * study_proposer), which sees the runs in suggestion order up to the first one not ended and
 * the rest as outstanding; expired and enqueued runs are handed out first as before. Without
 * it an ask of a study-mode sweep is refused (ST_EINVAL: the message says what to install), so
 * that a script never gets CARBS' suggestions for a study-mode sweep. fn NULL: none. */
void runner_store_set_proposer(runner_store *s, runner_propose_fn fn, void *user);

/*
 * Early stopping. A stop check is called at each eval record of a running run (after the store
 * has it) with the run's curve so far; the controller applies the rules that do not depend on
 * the check: never before cfg->es_min_fraction of the run's planned tokens (or, without
 * tokens, steps; never when neither is known), and a stop only after cfg->es_patience
 * consecutive evals that all said stop (a noisy dip does not stop a run). A run stopped early
 * ends `stopped` with failure none and its reason (runs.stop_reason), keeps its curve and its
 * cost so far (counted in the budget), is never observed as a failure and never relaunched by
 * resume. The optimizer sees it censored: observed as a success at `bound` (the lower end of
 * the interval of its final objective: the best it could still have reached) with cost
 * `final_cost` (what it would have cost at its end, so the cost model is not taught that its
 * parameters are cheap); with bound NAN it is forgotten instead (not observed at all).
 */
typedef struct runner_curve {
    uint64_t run;          /* the run's suggestion id */
    const double *x;       /* cfg->n_params values (file order) */
    size_t n;              /* eval records so far */
    const double *step;    /* (n) the record's "step" */
    const double *tokens;  /* (n) tokens seen (the record's, else the last step record's), NAN */
    const double *loss;    /* (n) the objective's metric in the eval record, NAN when absent */
    const double *cost;    /* (n) the cost metric so far (records' running value), NAN */
    double planned_steps;  /* from a {"event":"config","steps":S} record, else tokens; NAN */
    double planned_tokens; /* the run's parameter with role D (tokens, n_tokens, ...); NAN */
    double planned_cost;   /* cost so far / fraction done, else the predicted cost; NAN */
    double fraction;       /* of planned tokens (else steps) done at the last record, NAN */
    const double *lr;      /* (planned_steps) the run's learning rate per step (step k+1 at k,
                              runner_schedule_lr) when its schedule is known; NULL: unknown */
} runner_curve;

typedef struct runner_stop_verdict {
    int stop;          /* 1: this eval says stop */
    char reason[200];  /* why (kept with the run when it stops) */
    double bound;      /* lower end of the final objective's interval; NAN: unknown */
    double final_cost; /* the run's cost at its planned end; NAN: unknown */
} runner_stop_verdict;

/* A stop check. cfg and db_path (the store, read-only for the check) are the controller's.
 * Returns ST_OK with *v filled (v is zeroed, bound and final_cost NAN, before the call); an
 * error is reported as a progress event and counts as "do not stop". */
typedef st_status (*runner_stop_fn)(void *ctx, const runner_config *cfg, const char *db_path,
                                    const runner_curve *c, runner_stop_verdict *v);

/* Installs fn (NULL: no early stopping) on r; ctx is the caller's, kept until r is destroyed or
 * another check is set. */
void runner_set_stop_check(runner *r, runner_stop_fn fn, void *ctx);
/* The sweep file r runs (borrowed, valid until runner_destroy): e.g. its early_stopping block
 * and goal after runner_resume, which reads it from the store. */
const runner_config *runner_get_config(const runner *r);

/*
 * The CARBS-mode rule (pure): stop when the lower end `bound` of the run's final objective is
 * above the Pareto front's objective at the run's planned cost by more than `margin` (relative),
 * the front (n points, cost increasing, objective decreasing; a minimised objective) read at
 * planned_cost by linear interpolation on ln cost, and at its last point beyond it (the front
 * only falls, so that is conservative). Never stops below the front's cheapest point, with no
 * front, or with a bound or cost not finite. *stop and why (may be NULL, 200 bytes).
 */
void runner_stop_rule_front(double bound, double planned_cost, const double *front_cost,
                            const double *front_obj, size_t n, double margin, int *stop, char *why);

/*
 * The interval of a run's final objective from its curve (the CARBS and study rules share it):
 * without c->lr, the plain power law in steps (fit/curve.h with lr = 1, C = 0: the schedule is
 * unknown) fitted on the curve's points from 10% of the planned steps on (at least 4 points),
 * extrapolated to planned_steps with fit_curve_predict_interval (level 0.9, 60 replicates),
 * with the range of the law's errors measured on the sweep's latest 20 succeeded runs at the
 * same fraction (their stored eval curves, fit_curve_cut_error, fit_curve_misfit; -/+
 * FIT_CURVE_MISFIT_DEFAULT when fewer than three). With c->lr (the run's schedule, planned_steps
 * values), the law of Tissue et al. 2024 (fit/curve.h, C fitted: at least 5 points) under that
 * schedule, extrapolated the same way with the default range of errors (the sweep's other runs
 * carry no schedule to measure it on); when that law does not extrapolate to a positive loss
 * (its annealing term ran away: fit_curve_predict_interval's ST_ENUMERIC), the power law as
 * without c->lr. Either is replaced by the interval borrowed from the sweep's finished runs when
 * that one is narrower (runner_curve_interval_law below). ST_OK, ST_EINVAL (too few points,
 * unknown planned steps), ST_ENUMERIC, ST_EDB.
 */
st_status runner_curve_interval(const runner_config *cfg, const char *db_path,
                                const runner_curve *c, double *pred, double *lo, double *hi,
                                char *errmsg);
/* The same, and *schedule_used (may be NULL) 1 when the law under the schedule gave the
 * interval, 0 when the power law in steps did, RUNNER_CURVE_BORROWED when the shape of the
 * sweep's finished runs did. Borrowing (fit/curve.h, fit_curve_borrow, from the latest 40
 * succeeded runs at the same fraction of their steps, c->x needed) replaces the law's interval
 * when it is narrower: its range of errors is measured on those runs (leave-one-out,
 * fit_curve_misfit), and only for a run inside their searched features (a quarter of each
 * span beyond); and it gives one when the law has too few points. */
#define RUNNER_CURVE_BORROWED 2
st_status runner_curve_interval_law(const runner_config *cfg, const char *db_path,
                                    const runner_curve *c, double *pred, double *lo, double *hi,
                                    int *schedule_used, char *errmsg);

/* The built-in CARBS-mode check (ctx NULL): runner_curve_interval's lower end against the
 * sweep's Pareto front (runner_store_pareto) with runner_stop_rule_front and cfg->es_margin. */
st_status runner_stop_check_front(void *ctx, const runner_config *cfg, const char *db_path,
                                  const runner_curve *c, runner_stop_verdict *v);

/* Per-run controller overhead samples in ms (launch + record + parse + observe; suggest
 * excluded), one per finished attempt, borrowed. */
const double *runner_overhead_ms(const runner *r, size_t *n);

#ifdef __cplusplus
}
#endif
#endif /* RUNNER_H */
