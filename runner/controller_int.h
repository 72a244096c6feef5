/*
 * controller_int.h — what the controller's files share (not installed, not public):
 *   controller.c  the loop: launch, poll, parse, settle, retry, stop
 *   classify.c    why a finished attempt ended: kills, the scheduler, exit statuses, the final
 *                 record (settle maps the kind to what happens to the run)
 *   controller_open.c  runner_launch, runner_resume (rebuild, adopt), runner_destroy
 *   suggest.c     new suggestions: from carbs/ or a proposer (runner_set_proposer), the cost
 *                 expression's refusal, the record of a suggestion in the store
 *   release.c     the deterministic release: results reach the optimizer in suggestion order
 *   early_stop.c  early stopping: each attempt's curve, the stop check, patience, the record
 *   branch.c      cooldown branches spawned off succeeded runs (the `branches:` block)
 */
#ifndef RUNNER_CONTROLLER_INT_H
#define RUNNER_CONTROLLER_INT_H

#include "runner/runner_int.h"

/* what this header declares is internal: hidden from libscaletune.so's exports (the static
 * library and the tests still link it); common/scaletune.map exports the public API */
#pragma GCC visibility push(hidden)

#define READ_CHUNK 65536 /* bytes of an attempt's files read at a time (r->buf) */

/* One attempt in flight. */
typedef struct active {
    int64_t run_id, attempt_id;
    unsigned number;
    size_t slot;
    char job_id[64];
    char *dir;
    double started, last_metric; /* wall clock: they outlive this process */
    double kill_at;
    int kill_stage; /* 0 none, 1 SIGTERM sent, 2 SIGKILL sent */
    runner_failure kill_reason;
    int64_t off[2]; /* stdout.log, metrics.jsonl: bytes consumed (whole lines) */
    int skip[2];    /* inside a line longer than the limit */
    int diverged;
    char *final_line;
    double max_cost;
    int64_t n_lines, n_garbage;
    double *x_all;
    double predicted_cost;
    double bound;      /* the cost the optimizer held under its cap (NaN: unknown) */
    int phase;         /* the optimizer's phase (carbs_phase; -1: unknown) */
    uint64_t carbs_id; /* valid only if issued by this controller's optimizer */
    int64_t parent;    /* a cooldown branch: its parent run (0: a suggestion) */
    double overhead;   /* seconds spent by the controller on this attempt */
    struct es_run *es; /* early_stop.c: its curve so far (NULL until its first line) */
} active;

struct runner {
    runner_store *st;
    runner_config *cfg;
    carbs *cb;
    const runner_backend_type *be;
    void *be_state;
    int64_t sweep, generation;
    char node[64]; /* opts.node, copied; "" when not given */
    char owner[128];
    char *log_dir;
    char *supervisor; /* opts.supervisor's copy (NULL: supervisors are forked) */
    runner_options opts;
    active *act;
    size_t n_act;
    unsigned char *slot_busy;
    runner_job *jobs;
    char *buf;
    size_t n_runs, n_status[6], n_retried, refusals;
    size_t n_branch_status[6]; /* the cooldown branches among n_status (branch.c) */
    double spent;
    int has_best;
    double best;
    int finished, stopping;
    double last_beat;
    double launch_pause_until; /* monotonic: the backend was unreachable, no launch before */
    double launch_pause;       /* the current pause, doubled while the backend stays away */
    int backend_down;          /* the last poll could not ask the scheduler */
    double *ov;
    size_t n_ov, cap_ov;
    double next_bound; /* of the suggestion launch_run starts next (ctl_new_suggestion) */
    int next_phase;
    /* deterministic release (release.c): results reach the optimizer in suggestion order */
    int det;             /* cfg->deterministic */
    size_t released;     /* runs 0..released-1 (suggestion order) are released to the optimizer */
    int64_t released_id; /* the store id of run released-1 (0: none): the next is found by id,
                            not by OFFSET, which SQLite walks row by row */
    double rel_spent;    /* their cost: what the budget check sees in deterministic mode */
    runner_propose_fn propose; /* study mode: suggestions from here instead of carbs_suggest */
    void *propose_user;
    runner_stop_fn stop_fn; /* early stopping (runner_set_stop_check); NULL: off */
    void *stop_ctx;
    /* attempts in a row that failed the same deterministic way (streak.c) */
    runner_failure streak_kind;
    int streak_code;
    size_t streak_n;
    int streak_stop; /* the streak reached cfg->stop_after_identical: stopping, an error */
    char streak_msg[ST_ERRMSG_MAX];
    char errmsg[ST_ERRMSG_MAX];
    char event[256];
};

/* classify.c: 1 when the sweep's cost is the wall clock (no cost metric read). */
int ctl_cost_is_wall(const runner *r);
/* Why a finished attempt ended (kill, scheduler, lost, divergence or a reserved exit status,
 * signal, exit status, and for exit 0 its final record): RUNNER_FAIL_NONE (*objective written
 * and *cost, in the wall seconds or the largest reported cost, out the run's cost), or the
 * failure with `why` (of `cap` bytes) written where there is something to say. */
runner_failure ctl_classify(const runner *r, const active *a, const runner_job *job,
                            double *objective, double *cost, char *why, size_t cap);

/* 1 when a failed attempt is a configuration error, ended at once and never retried (streak.c):
 * a malformed final record, or exit 126/127 (cannot execute, not found) while no run of the
 * sweep has worked. */
int ctl_config_error(const runner *r, runner_failure kind, int exit_code);
/* Appends to `why` (of `cap` bytes) what exit 126/127 means and the tail of DIR/stderr.log. */
void ctl_config_why(runner_failure kind, int exit_code, const char *dir, char *why, size_t cap);

/* Counts attempts that fail the same deterministic way in a row (exit status, no final, a
 * malformed final, launch failure) and stops the sweep when cfg->stop_after_identical is
 * reached (streak.c); any other outcome ends the streak. `dir` is the attempt's log directory
 * (its stderr.log's tail goes into the message). */
void ctl_note_outcome(runner *r, runner_failure kind, int exit_code, const char *why,
                      const char *dir);

/* Reports an event to the progress callback (if any). */
void ctl_progress(runner *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Moves one run (a cooldown branch when `branch`) between the in-memory status counts. */
void ctl_set_status_count(runner *r, runner_run_status from, runner_run_status to, int branch);

/* ---- suggest.c ----------------------------------------------------------------------------- */

/* Records a new suggestion (pending) or, if its cost expression is above the cap, a refused
 * run (failed, over_budget; terminal at once). Sets *run_id to 0 for a refusal. x_all:
 * cfg->n_params values out. */
st_status ctl_new_suggestion(runner *r, double *x_all, int64_t *run_id, uint64_t *cid,
                             double *predicted);
/* Shows a run refused or killed over the cost cap to the optimizer's cost model (cid: its
 * suggestion id, 0 if unknown; x_all: all parameters); without a cost it is only forgotten. */
st_status ctl_observe_cost(runner *r, uint64_t cid, const double *x_all, double cost);

/* ---- release.c ----------------------------------------------------------------------------- */

/* Whether suggestion number r->n_runs may be made now: in deterministic mode it releases the
 * runs before it that the rule says it must have seen (all of them while the optimizer is blind
 * to the cost cap) and sets *ok to 0 while one of those is not terminal; then applies the
 * budget. In the other mode: the budget only. */
st_status ctl_may_suggest(runner *r, int *ok);
/* The budget check (runs, cost; not stopping) for the next suggestion. */
int ctl_can_suggest(const runner *r);
/* 1 while the budget (runs, cost) has room for another run, stopping or not: a stopped sweep
 * with room left is not finished. */
int ctl_budget_left(const runner *r);
/* Releases, in suggestion order, the terminal runs up to count `target` (stops at the first
 * run not terminal); *reached: whether r->released >= target after. No-op unless det. */
st_status ctl_release_upto(runner *r, size_t target, int *reached);
/* After resume (deterministic mode): where the release stands, from the store. */
st_status ctl_release_load(runner *r);
/* For a proposer: the runs it may use (r->released, or in the other mode the prefix of runs
 * that are terminal) and the values of the rest (n x n_params, malloc'd; NULL when n is 0). */
st_status ctl_release_view(runner *r, size_t *n_released, double **pending, size_t *n_pending);

/* ---- branch.c ------------------------------------------------------------------------------ */

/* Inside the caller's transaction: the cooldown branches of succeeded run `parent` (x_all: its
 * parameters; parent_cost: its cost, NAN if unknown) as pending runs, unless it has some
 * already; *n_new how many, *planned their planned cost. A no-op without branches.at. */
st_status ctl_branches_spawn(runner *r, int64_t parent, const double *x_all, double parent_cost,
                             size_t *n_new, double *planned);
/* After that transaction committed: the counts (pending; in deterministic mode the released
 * cost) and a progress line. */
void ctl_branches_made(runner *r, int64_t parent, size_t n_new, double planned);

/* ---- early_stop.c -------------------------------------------------------------------------- */

/* Notes a parsed protocol line of attempt a before it is stored: an eval point, a config
 * record's planned steps, the last tokens and cost seen. The first call for an attempt also
 * reads the lines a previous controller stored (resume). ST_OK, ST_ENOMEM, ST_EDB. */
st_status es_note_line(runner *r, active *a, const runner_metrics_line *l);
/* After the attempt's new lines are stored: the stop check at each new eval point, with the
 * minimum fraction and the patience; *stop is set when the run must be stopped now. */
st_status es_check(runner *r, active *a, int *stop);
/* 1 when the stop rule decided to stop a (and then *bound, *final_cost: what the optimizer
 * sees, NAN when unknown; *reason: why, owned by a, for its run row). */
int es_stopped(const active *a, double *bound, double *final_cost, const char **reason);
void es_free(active *a);

#pragma GCC visibility pop

#endif
