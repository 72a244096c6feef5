/*
 * runner_int.h — interfaces between the files of runner/ (not installed, not public).
 *   metrics.c        the metrics-protocol line parser
 *   config.c         sweep files (libyaml), validation, names of statuses and failure kinds
 *   expr.c           the cost-expression evaluator
 *   template.c       argv/env template substitution
 *   store.c          the SQLite store: schema, migrations, transactions, lease
 *   store_query.c    status, Pareto front, export, ask/tell
 *   store_rebuild.c  an optimizer from the store: observations, open runs, counters
 *   store_manage.c   lease liveness, deleting and renaming a sweep
 *   store_attempt.c  the controller's named store calls: launch, metrics, settle, requeue
 *   backend_local.c  the local backend: supervisor per attempt, process groups
 *   backend_slurm.c  the Slurm backend: job scripts, state mapping, batched polling, adoption
 *                    (backend_slurm_cli.c: the sbatch/squeue/scancel route; backend_slurm_rest.c:
 *                    the slurmrestd one)
 *   controller.c     the loop: launch, poll, parse, observe, retry, stop, resume
 *   suggest.c        new suggestions (carbs/ or a proposer), refusals over the cost cap
 *   release.c        the deterministic release of results in suggestion order
 *                    (these three share controller_int.h)
 *   largerun*.c      the large run (public header runner/largerun.h): restarts and lost time,
 *                    alerts and the watch, health checks; config_largerun.c its config block
 */
#ifndef RUNNER_INT_H
#define RUNNER_INT_H

#include <sqlite3.h>
#include <stdio.h>
#include <sys/types.h>

#include "runner/runner.h"

/* what this header declares is internal: hidden from libscaletune.so's exports (the static
 * library and the tests still link it); common/scaletune.map exports the public API */
#pragma GCC visibility push(hidden)

/* ---- store.c ----------------------------------------------------------------------------- */

#define RUNNER_SCHEMA_VERSION 6
#define STORE_STMT_CACHE      64
/* PRAGMA application_id of a store ("STUN"): how a store is told from other SQLite files */
#define RUNNER_STORE_APP_ID   1398035790
/* store_ballast.c: the reserve a controller keeps next to the store against a full disk, and
 * the WAL size at which SQLite checkpoints (PRAGMA wal_autocheckpoint, pages of 4 KiB, SQLite's
 * default): the pages a checkpoint adds to the database file stay under the reserve. (A
 * checkpoint every 64 pages under a 512 KiB reserve cost the controller 9% more CPU per run in
 * bench-soak: 2.10 against 1.92 ms at 10,000 runs, measured back to back.) */
#define STORE_BALLAST_BYTES   (4 * 1024 * 1024)
#define STORE_WAL_PAGES       1000
#define ST_STR_(x)            #x
#define ST_STR(x)             ST_STR_(x)

struct runner_store {
    sqlite3 *db;
    char errmsg[ST_ERRMSG_MAX];
    char *names;   /* runner_store_list's result */
    char **params; /* runner_store_params' result */
    size_t n_params;
    struct {
        const char *sql; /* a string literal: cached by address */
        sqlite3_stmt *st;
    } cache[STORE_STMT_CACHE];
    size_t n_cache;
    /* the fencing token (store_lease_take sets it, store_lease_release clears it): while set,
     * every transaction store_begin opens first checks that the lease row of fence_sweep still
     * names fence_owner, so a controller whose lease was taken writes nothing */
    int64_t fence_sweep;
    char fence_owner[128];
    int ballast; /* this handle made or reused "<store>-ballast" (store_ballast.c) */
    int full;    /* SQLITE_FULL seen and the WAL not yet truncated since */
    /* the source of a study-mode sweep's asks (runner_store_set_proposer); NULL: none */
    runner_propose_fn propose;
    void *propose_user;
};

/* Opens the SQLite file at `path` as a store (store.c): identifies it (a store, an empty file,
 * or refused), sets WAL and the pragmas and migrates. `create`: the file may be created, or be
 * empty, and becomes a store; otherwise it must exist and be one. Error messages name `shown`
 * (NULL: `path`). runner_store_open is store_open_file(path, 0, NULL, ...). */
st_status store_open_file(const char *path, int create, const char *shown, runner_store **out,
                          char *errmsg);

/* store_create.c: runner_store_create builds a new store under a temporary name next to it,
 * "<store>.creating-<pid>.<seq>.<host>", and renames it into place only when complete, so a
 * kill at any moment leaves either no file at the store's path or a whole store. Tests only:
 * store_create_hook, when set, is called at each step of that (STORE_CREATE_*), e.g. to
 * raise(SIGKILL) there; it is NULL otherwise. */
enum {
    STORE_CREATE_CLEANED = 1,   /* stale temporary files of dead creators removed */
    STORE_CREATE_TEMP_MADE,     /* the temporary file exists, empty */
    STORE_CREATE_CLOSED,        /* built, checkpointed and closed; not yet synced */
    STORE_CREATE_SYNCED,        /* the temporary file fsynced */
    STORE_CREATE_LINKED,        /* link(2) fallback only: both names hold the store */
    STORE_CREATE_RENAMED,       /* in place at the store's path; directory not yet fsynced */
    STORE_CREATE_DIR_SYNCED,    /* the directory fsynced; the store not yet reopened */
    STORE_CREATE_MIGRATED = 100 /* + v: migration v committed (also on opening an old store) */
};
extern void (*store_create_hook)(int step);
/* Tests only: when set, the store is put in place as where the file system has no
 * RENAME_NOREPLACE (NFS): link(2), then unlink of the temporary name. */
extern int store_create_link_only;

/* Wall-clock seconds since the epoch (times in the store outlive processes). */
double runner_now(void);
/* Monotonic seconds (durations inside one process). */
double runner_mono(void);

/* A prepared statement for `sql` (a string literal), reset and unbound; NULL on error with
 * s->errmsg set. Owned by the store. */
sqlite3_stmt *store_stmt(runner_store *s, const char *sql);
/* Column `col` of the current row as text, "" when it is NULL (a damaged or hand-edited store
 * may hold NULL where the schema says NOT NULL; a reader must not crash on it). */
static inline const char *store_col_text(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? (const char *)t : "";
}
/* Maps a SQLite result code to st_status (SQLITE_FULL -> ST_ENOSPC, BUSY -> ST_EBUSY, ...) and
 * formats s->errmsg with `what` and sqlite3_errmsg. */
st_status store_fail(runner_store *s, int src, const char *what);
/* BEGIN IMMEDIATE / COMMIT / ROLLBACK. */
st_status store_begin(runner_store *s);
st_status store_commit(runner_store *s);
void store_rollback(runner_store *s);
/* Runs one statement with no result rows; returns ST_OK or store_fail. */
st_status store_exec_stmt(runner_store *s, sqlite3_stmt *st, const char *what);
/* Prepares `sql` (a string literal), binds ids[0..n-1] to ?1..?n as integers and runs it. */
st_status store_exec_ids(runner_store *s, const char *sql, const char *what, size_t n,
                         const int64_t *ids);
/* Id of sweep `name` (NULL: the only one), with its config text (malloc'd; may be NULL). */
st_status store_find_sweep(runner_store *s, const char *name, int64_t *id, char **config);
/* The sweep's runs' working directory as recorded at launch (absolute) replaces cfg->workdir;
 * a store written before schema 5 has none and leaves it as the sweep file says. */
st_status store_sweep_workdir(runner_store *s, int64_t sweep, runner_config *cfg);

/* The longest workdir a sweep file may give (characters). */
#define RUNNER_WORKDIR_MAX 3800
/* `path` made absolute against `base` (a directory, itself relative to the current directory;
 * NULL: the current directory), with symbolic links and .. resolved when it exists. Returns a
 * string the caller frees, or NULL with errno set (getcwd failed, ENAMETOOLONG, ENOMEM). */
char *runner_path_absolute(const char *base, const char *path);
/* Appends an event row (inside the caller's transaction). */
st_status store_event(runner_store *s, int64_t sweep, int64_t run, int64_t attempt,
                      const char *kind, const char *msg);

/* The lease: one controller per sweep. store_lease_take takes a free, expired or dead (same
 * host, pid gone) lease; ST_EBUSY otherwise. store_lease_beat renews it (ST_EBUSY if lost). */
st_status store_lease_take(runner_store *s, int64_t sweep, const char *owner, double seconds);
st_status store_lease_beat(runner_store *s, int64_t sweep, const char *owner, double seconds);
void store_lease_release(runner_store *s, int64_t sweep, const char *owner);
/* store_manage.c: who holds sweep `sweep` (owner[cap], "" if nobody), its last heartbeat (NAN
 * if no lease) and whether it is live: not expired, and its process exists when on this host. */
st_status store_lease_state(runner_store *s, int64_t sweep, char *owner, size_t cap,
                            double *heartbeat, int *live);
/* "host:pid:token": this process and a token unique to the call (each controller's lease is
 * its own, the fencing token, even between two controllers of one process). */
void runner_owner_id(char *buf, size_t cap);
/* The fencing check inside an open transaction: ST_OK while the lease of the store's fenced
 * sweep names its owner (or no fence is set), ST_EBUSY with a message otherwise. */
st_status store_fence_check(runner_store *s);

/* store_ballast.c. make: allocates (or reuses) "<store>-ballast", STORE_BALLAST_BYTES, best
 * effort (none when there is no room), called on taking a lease. spend: deletes it (on
 * SQLITE_FULL). remove: deletes it on a clean release unless another controller holds a live
 * lease on the store. checkpoint_after_full: after SQLITE_FULL and outside a transaction,
 * folds the WAL into the database and truncates it (PRAGMA wal_checkpoint(TRUNCATE)). */
void store_ballast_make(runner_store *s);
void store_ballast_spend(runner_store *s);
void store_ballast_remove(runner_store *s);
void store_checkpoint_after_full(runner_store *s);

/* Rebuilds an optimizer for `cfg` from the sweep's observations, in order, then registers the
 * sweep's open runs (pending or running) as outstanding under their run ids
 * (carbs_add_outstanding), so later observations of them use that id; with
 * cfg->deterministic, also the ended runs after the last observed one (not released yet).
 * When the sweep's last suggestion recorded the optimizer's counters (store_record_progress)
 * they are restored, with each open run's birth, so the rebuilt optimizer is the live one;
 * otherwise (stores written before schema 3, proposer runs only) `seed_offset` is added to
 * the config's seed. */
st_status store_rebuild_carbs(runner_store *s, int64_t sweep, const runner_config *cfg,
                              uint64_t seed_offset, carbs **out);
/* Records, on run `run`, the optimizer's counters after the suggestion that made it and the
 * number of observations it had then (carbs_progress, carbs_n_observations before the
 * suggestion): what store_rebuild_carbs needs to suggest as the live optimizer would next. */
st_status store_record_progress(runner_store *s, int64_t run, const carbs_progress *p, size_t born);
/* The runs a proposer may use when the release is not deterministic: the ended runs in
 * suggestion order up to the first that has not ended (*n_released), and the runs after it as
 * outstanding (*pending: np values each, at most cap of them, malloc'd; the caller frees it,
 * also on error). The controller's view (release.c) and an ask's (store_asktell.c). */
st_status store_release_view(runner_store *s, int64_t sweep, size_t np, size_t cap,
                             size_t *n_released, double **pending, size_t *n_pending);
/* What a proposer's suggestion `index` draws from: the sweep's seed mixed with the index (the
 * controller's and an ask's proposals alike). */
uint64_t runner_proposal_seed(const runner_config *cfg, size_t index);
/* A proposer's suggestion as it will run: fixed parameters overwritten, each active searched
 * value checked against [min, max] (ST_EINVAL with the message in errmsg, ST_ERRMSG_MAX). */
st_status runner_proposal_finish(const runner_config *cfg, size_t index, double *x_all,
                                 char *errmsg);
/* The optimizer's x (D values) from all parameters (n_params values) and back. */
void runner_x_to_carbs(const runner_config *cfg, const double *all, double *x);
void runner_x_from_carbs(const runner_config *cfg, const double *x, double *all);

/* ---- store_attempt.c: the controller's named store calls --------------------------------- */
/* Each returns ST_OK or a store status (ST_EDB, ST_EBUSY when the lease was taken, ST_ENOSPC,
 * ...) with s->errmsg set; a call that opens its own transaction leaves nothing of it behind
 * on failure. "Inside the caller's transaction" calls open none. */

/* An attempt about to be launched. */
typedef struct store_launch {
    int64_t run_id;
    unsigned number;        /* >= 1, unique per run */
    const char *backend;    /* a static string (the backend's name) */
    const char *host, *dir; /* copied */
    size_t slot;
    double started; /* wall clock */
} store_launch;

/* One transaction: records the attempt as 'launching' (*attempt_id: its id) and the run as
 * running with one more attempt, before anything is started. */
st_status store_launch_attempt(runner_store *s, const store_launch *l, int64_t *attempt_id);

/* Inside the caller's transaction: one protocol line of an attempt (step < 0: none; t: when it
 * was read, wall clock; line: len bytes, copied). */
st_status store_record_metric(runner_store *s, int64_t attempt_id, int event, int64_t step,
                              double t, const char *line, size_t len);

/* What the controller has read of an attempt's files so far. */
typedef struct store_progress {
    int64_t attempt_id;
    int64_t off[2]; /* bytes consumed of stdout.log, metrics.jsonl */
    int64_t n_lines, n_garbage;
    double last_metric, max_cost; /* wall clock; the largest reported cost (NAN: none) */
    int diverged;
    const char *final_line; /* NULL: none yet */
    const char *job_id;
} store_progress;

/* Inside the caller's transaction: the attempt's read offsets and counters; it is running. */
st_status store_attempt_progress(runner_store *s, const store_progress *p);

/* The infrastructure failures recorded on run `run_id` so far (0 when there is no such run). */
st_status store_run_infra_count(runner_store *s, int64_t run_id, unsigned *n_infra);

/* How an attempt ended and what follows for its run (the controller's classification). Values
 * that are NAN (or NULL) are stored as NULL. */
typedef struct store_settlement {
    int64_t sweep, run_id, attempt_id;
    /* the attempt */
    double ended; /* its end, wall clock */
    int has_exit_code, exit_code, has_signal, signal;
    runner_failure kind;
    const char *job_id; /* NULL or "": keep the stored one */
    const char *host;   /* the node it ran on; NULL or "": keep the stored one */
    /* the run */
    runner_run_status to;
    double objective, cost;
    const char *final_line;
    int infra;         /* one more infrastructure failure on the run */
    double not_before; /* wall clock: no relaunch before */
    double run_ended;  /* NAN while the run goes on (requeued) */
    /* an early stop (stop_reason not NULL): why, and the bound the optimizer sees */
    const char *stop_reason;
    double bound_objective, bound_cost;
    /* the observation, when `observe`: x (n_x values, all parameters), output, cost, failed */
    int observe;
    const double *x;
    size_t n_x;
    double obs_output, obs_cost, obs_t;
    int obs_failed;
    /* the event: its kind (a static string) and message */
    const char *event_kind, *event_msg;
    /* NULL, or more to write in the same transaction, last (cooldown branches, branch.c) */
    st_status (*then)(void *ctx);
    void *then_ctx;
} store_settlement;

/* One transaction: the attempt done, the run's new status and outcome, the early stop, the
 * observation and the event. */
st_status store_settle_attempt(runner_store *s, const store_settlement *o);

/* Inside the caller's transaction: puts a run back in the queue after an attempt that never
 * really ran (one attempt fewer). */
st_status store_requeue_run(runner_store *s, int64_t run_id);

/* One transaction: the attempt the backend never took is abandoned (ended: wall clock), its run
 * requeued, and a 'backend' event with msg recorded. */
st_status store_abandon_attempt(runner_store *s, int64_t sweep, int64_t run_id, int64_t attempt_id,
                                double ended, const char *msg);

/* A queued run, as store_next_pending finds it. */
typedef struct store_queued {
    int found;
    int64_t run_id;
    uint64_t carbs_id; /* 0 unless issued by the optimizer of `generation` */
    double predicted;  /* the predicted cost (NAN: none) */
    unsigned number;   /* the next attempt's number: one above every attempt recorded */
    int64_t parent;    /* a cooldown branch: its parent run, checkpoint step and decay steps */
    int64_t branch_step, decay_steps; /* (parent 0: a suggestion) */
} store_queued;

/* The pending run of sweep `sweep` due first at `now` (not_before, then id), its parameters
 * into x (n_params values); q->found = 0 when none is due. ST_EFORMAT when its stored
 * parameters are not n_params values. */
st_status store_next_pending(runner_store *s, int64_t sweep, double now, int64_t generation,
                             size_t n_params, double *x, store_queued *q);

/* Whether a stop was requested for sweep `sweep` ('scaletune sweep stop'). */
st_status store_stop_requested(runner_store *s, int64_t sweep, int *stop);

/* largerun.c: the median of v[0..n-1], sorted in place; NAN when n is 0 (the watch's step
 * windows and the per-node throughput). */
double runner_median_inplace(double *v, size_t n);

/* largerun_health.c: sweep `sweep`'s quarantined nodes as one comma-separated list, oldest
 * first, for a scheduler's exclusion (sbatch --exclude); *out malloc'd, NULL when none. Names
 * with a comma or a space are left out (no scheduler can take them). ST_OK, ST_EDB, ST_ENOMEM. */
st_status store_quarantine_list(runner_store *s, int64_t sweep, char **out);

/* ---- template.c ------------------------------------------------------------------------- */

/* A cooldown branch as its command's templates see it (docs/config.md, "Cooldown branches"):
 * its command is the parent's, with the parent's id for {_run} (so that seeds repeat), its own
 * {_attempt}, {_dir}, {_checkpoint} and {_resume}, and branches.args appended. */
typedef struct runner_branch_ctx {
    uint64_t parent;               /* the parent run's id: {_parent_run}, and {_run} */
    const char *parent_checkpoint; /* the parent's {_checkpoint} path: {_parent_checkpoint} */
    uint64_t step;                 /* the parent's checkpoint step it starts from: {_branch_step} */
    uint64_t decay_steps;          /* its own steps, all decaying: {_decay_steps} */
} runner_branch_ctx;

/* Checks braces and placeholder names of one template. ST_OK or ST_EINVAL (errmsg says why). */
st_status runner_template_check(const runner_config *cfg, const char *t, char *errmsg);
/* The same for branches.args, where the branch placeholders are known too. */
st_status runner_template_check_branch(const runner_config *cfg, const char *t, char *errmsg);
/* Expands a template; values: cfg->n_params values (fixed ones ignored). *out: malloc'd. */
st_status runner_template_expand(const runner_config *cfg, const char *t, const double *values,
                                 uint64_t run, unsigned attempt, const char *dir, char **out);
/* A parameter value as substituted: integers without decimals, doubles round-tripping. */
void runner_format_value(const runner_param_spec *ps, double v, char *buf, size_t cap);
/* method.c: the number of grid values of a parameter (1 for a fixed one). */
#define RUNNER_GRID_DEFAULT 5
size_t runner_grid_count(const runner_param_spec *ps);
/* Expands n templates t into out[0 .. *n_out - 1] (out has n slots), leaving out every template
 * that names a parameter inactive at values (a conditional one whose value is NaN) and, with
 * `flags` (a command), also the argument just before it when that starts with '-' and holds no
 * placeholder ("--beta2", "{beta2}"). ST_OK, ST_ENOMEM, ST_EINVAL. */
st_status runner_command_expand(const runner_config *cfg, char *const *t, size_t n, int flags,
                                const double *values, uint64_t run, unsigned attempt,
                                const char *dir, char **out, size_t *n_out);
/* The same for a cooldown branch's templates (br not NULL: {_run} is br->parent, and the branch
 * placeholders are expanded). */
st_status runner_command_expand_branch(const runner_config *cfg, char *const *t, size_t n,
                                       int flags, const double *values, const runner_branch_ctx *br,
                                       unsigned attempt, const char *dir, char **out,
                                       size_t *n_out);

/* ---- backends (backend_local.c, backend_slurm*.c) ---------------------------------------- */

/* What to launch: everything already expanded. `dir` exists and is the attempt's directory:
 * the backend writes stdout.log and stderr.log there, and the exit status where it can. */
typedef struct runner_job_spec {
    char *const *argv;   /* NULL-terminated */
    char *const *env;    /* NULL-terminated "KEY=VALUE" added to the controller's environment */
    const char *workdir; /* NULL: the controller's */
    const char *dir;
    /* nodes the job must not run on, comma-separated (the sweep's quarantined nodes, read
     * from the store at each submission); NULL or "": none. A scheduler's backend passes it
     * on (Slurm: --exclude); the local backend has one node and ignores it */
    const char *exclude;
    /* the local backend: NULL to fork a supervisor from the controller, else the path of
     * scaletune-supervise, started with posix_spawn (runner_options.supervisor) */
    const char *supervisor;
} runner_job_spec;

/* ---- supervise.c: the local backend's per-attempt supervisor (libc only) ------------------- */

/* Writes `text` to dir/name through a temporary file: link (exclusive: fails with EEXIST if
 * dir/name exists) or rename (replace). 0 or -1 with errno set. */
int runner_write_file_atomic(const char *dir, const char *name, const char *text, int exclusive);
/* Supervises the attempt `spec` (spec->supervisor unused) from a process of its own (forked,
 * or scaletune-supervise): see supervise.c. Never returns; the process ends with _exit. */
void runner_supervise(const runner_job_spec *spec) __attribute__((noreturn));
/* scaletune-supervise's command line for `spec`, argv[0] = program: a malloc'd NULL-terminated
 * array of borrowed strings (free the array only); NULL when out of memory. */
char **runner_supervise_args(const char *program, const runner_job_spec *spec);
/* The reverse: fills *spec from scaletune-supervise's argv (borrowed strings; spec->env is a
 * malloc'd array). 0, or -1 on a bad command line or out of memory. */
int runner_supervise_parse(int argc, char **argv, runner_job_spec *spec);

typedef enum runner_job_state {
    RUNNER_JOB_RUNNING = 0,
    RUNNER_JOB_EXITED = 1,   /* exit_code valid */
    RUNNER_JOB_SIGNALED = 2, /* signal valid */
    RUNNER_JOB_LOST = 3,     /* gone without an exit status */
} runner_job_state;

typedef struct runner_job {
    const char *job_id; /* in */
    const char *dir;    /* in */
    runner_job_state state;
    int exit_code, signal;
    /* out, for a finished job: a failure kind the backend decided (a scheduler's state such as
     * NODE_FAIL or OUT_OF_MEMORY) and why, or RUNNER_FAIL_NONE to classify by exit status; the
     * controller clears both before each poll */
    runner_failure failure;
    char reason[160];
    /* out, for a finished job: when it ended (wall clock) if the backend knows (local: the
     * supervisor's exit file), else NAN (the controller cleared it): the cost in wall seconds
     * is the job's own, not up to when a controller noticed */
    double ended;
    /* out, for a finished job: when it started running (wall clock) if the backend knows
     * (Slurm: the job script's start, after any time in the queue), else NAN: time waiting in
     * a scheduler's queue is not the run's either */
    double started;
    /* out, for a finished job: the node it ran on if the backend knows (Slurm: the job
     * script's record of $SLURMD_NODENAME), else "" (the controller cleared it): stored as the
     * attempt's host in place of the controller's */
    char node[64];
} runner_job;

/*
 * A backend, as GSL's _type objects: the controller only calls these. Statuses: ST_OK,
 * ST_EBACKEND (with errmsg), ST_ENOMEM, and ST_ENETWORK where said.
 *  create  with the sweep's config, which outlives the state.
 *  submit  launches one attempt; writes a job id (opaque text, stored) into job_id[cap].
 *          ST_ENETWORK: the scheduler could not be reached and nothing was submitted (the
 *          controller puts the run back in the queue without charging it and waits).
 *  poll    fills state/exit_code/signal (and failure/reason) of n jobs in one batch (one squeue
 *          call for Slurm). ST_ENETWORK: the scheduler could not be asked; every job is still
 *          filled (from its files where they tell, else RUNNING) and the controller goes on.
 *  cancel  asks a job to stop (SIGTERM or scancel); force: kill now (SIGKILL). ST_EBUSY if
 *          the job cannot be signalled yet (not started): the controller tries again.
 *  adopt   for an attempt recorded as launching by a controller that died: ST_OK and its job
 *          id if it was launched, ST_ENOTFOUND if it never was (and now never will be).
 * poll works from the job id and files alone, so a new controller settles jobs it did not
 * start (the "settle from files" case).
 */
typedef struct runner_backend_type {
    const char *name;
    st_status (*create)(const runner_config *cfg, void **state, char *errmsg);
    void (*destroy)(void *state);
    st_status (*submit)(void *state, const runner_job_spec *spec, char *job_id, size_t cap,
                        char *errmsg);
    st_status (*poll)(void *state, runner_job *jobs, size_t n, char *errmsg);
    st_status (*cancel)(void *state, const char *job_id, const char *dir, int force, char *errmsg);
    st_status (*adopt)(void *state, const char *dir, char *job_id, size_t cap, char *errmsg);
} runner_backend_type;

/* The sweep's eval curves (the objective's points of each run's last attempt,
 * runner_store_run_curve) as one interval check reads them (early_stop_rule.c): each run's once,
 * though both of its rules read the same finished runs. */
typedef struct es_curves es_curves;
/* Run id's curve: *n points, steps and values owned by the cache (valid while it lives); *n 0
 * when the run has none. ST_OK, ST_ENOMEM, ST_EDB. */
st_status es_curve(es_curves *cc, uint64_t id, size_t *n, const double **steps,
                   const double **vals);

/*
 * The interval of running run c's final objective borrowed from the shape of the sweep's latest
 * succeeded runs (w, their curves from cc; early_stop_borrow.c): fit_curve_borrow at c's fraction
 * of its planned steps, [pred / (1 + err_max), pred / (1 + err_min)] from fit_curve_misfit of their
 * leave-one-out errors. ST_EINVAL when it cannot vouch for one (c->x unknown, a maximised
 * objective, fewer than three kin with a measured error, c outside its kin's features),
 * ST_ENOMEM, ST_ENUMERIC.
 */
st_status es_borrow_interval(const runner_config *cfg, es_curves *cc, const runner_sweep *w,
                             const runner_curve *c, double *pred, double *lo, double *hi,
                             char *errmsg);

extern const runner_backend_type *const runner_backend_local;
extern const runner_backend_type *const runner_backend_slurm_cli;
extern const runner_backend_type *const runner_backend_slurm_rest;

#pragma GCC visibility pop

#endif
