/*
 * largerun.h — the large run, guarded (docs/large-run.md): what the store says about a one-run
 * sweep that was restarted from its checkpoints (restarts, lost time), the alerts raised while
 * it ran, and the watch that raises them (a loss spike, NaN, the loss curve leaving the
 * interval `scaletune extrapolate` predicted, a straggling attempt).
 *
 * Conventions as runner.h: st_status returns, messages in the handle (or errmsg, ST_ERRMSG_MAX
 * bytes), nothing printed. The restarts themselves are the controller's infrastructure retries;
 * the {_checkpoint} and {_resume} placeholders (docs/config.md) make them resume.
 */
#ifndef RUNNER_LARGERUN_H
#define RUNNER_LARGERUN_H

#include <stddef.h>
#include <stdint.h>

#include "runner/runner.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a one-run sweep cost in restarts. Times are wall seconds from the store's attempt rows
 * and metric points (a point's time is when the controller read it: within its poll). */
typedef struct runner_large_summary {
    uint64_t run;             /* the sweep's last run (a large run's sweep has one) */
    runner_run_status status; /* of that run */
    runner_failure failure;   /* why it ended, when it failed */
    size_t n_attempts;
    size_t n_restarts;        /* attempts after the first */
    size_t n_failed;          /* attempts that ended in an infrastructure failure (or a stop) */
    double lost_work_seconds; /* per ended, failed attempt: its end minus its last checkpoint
                                 record (or its start when it wrote none): work done again */
    double downtime_seconds;  /* per restart: the next attempt's start minus the failed end */
    double lost_seconds;      /* the sum of both */
    int64_t lost_steps;       /* per failed attempt: its last step minus the step the next
                                 attempt resumed from (the one before its first step record;
                                 without one yet: the later of its own start and its last
                                 checkpoint record): steps done again */
    int64_t last_step;        /* the highest step record of the run, -1 if none */
    int has_final;            /* 1 when the run succeeded: final_objective is its objective */
    double final_objective;
    size_t n_alerts; /* alerts stored for the sweep (runner_store_alerts) */
} runner_large_summary;

/* Fills *out for sweep `sweep` (NULL: the only one). ST_OK, ST_ENOTFOUND (no sweep, or a sweep
 * without runs), ST_EDB, ST_ENOMEM. */
st_status runner_store_large_run(runner_store *s, const char *sweep, runner_large_summary *out);

/* One alert: something about a run that a person should look at, kept in the store. */
typedef struct runner_alert {
    uint64_t run;
    double t;          /* wall clock, epoch seconds */
    int64_t step;      /* the step it is about, -1 if none */
    char kind[24];     /* "nan", "spike", "diverged", "curve_outside", "final_outside",
                          "straggler", "sdc" */
    char message[232]; /* what was seen against what was expected */
} runner_alert;

/* Records an alert for the sweep (its own transaction; no lease needed: a watch may run beside
 * the controller), unless one of the same run, kind and step (kind "sdc": the same run and whole
 * message) is stored already: *added (may be NULL) says which. Kept as an event row of kind
 * "alert:KIND". ST_OK, ST_ENOTFOUND, ST_EDB. */
st_status runner_store_add_alert(runner_store *s, const char *sweep, const runner_alert *a,
                                 int *added);
/* The sweep's alerts, oldest first: the first cap into out (may be NULL), *n all of them. */
st_status runner_store_alerts(runner_store *s, const char *sweep, size_t cap, size_t *n,
                              runner_alert *out);

/*
 * Stops attempt number `attempt` of run `run` of controller r (0: whichever is running) as an
 * infrastructure failure (kind `node`: SIGTERM, SIGKILL after timeouts.kill_grace_seconds), so
 * the controller retries it, resumed from its checkpoint when the command uses {_resume}; the
 * retry counts against retries.infrastructure. What `scaletune run --restart-on-straggler`
 * does to a straggler. ST_OK (also when that attempt is already being stopped), ST_ESTATE (it
 * cannot be signalled yet: ask again), ST_ENOTFOUND (that attempt is not running: it ended, or
 * another one runs), ST_EBUSY (the lease is lost), ST_EBACKEND.
 */
st_status runner_restart_run(runner *r, uint64_t run, unsigned attempt);

/* ---- health checks and quarantine -------------------------------------------------------- */

/* The outcome of a node's health checks. */
typedef struct runner_health_result {
    int ok;          /* 1: every check passed (or there is none) */
    size_t n_run;    /* checks run (they stop at the first failure) */
    char check[256]; /* the failing check's command, "" when ok */
    int status;      /* its exit status; 128+N killed by signal N; -1 past its time limit;
                        127: it could not be started */
    char why[256];   /* its last line of output (stdout and stderr), or what happened */
} runner_health_result;

/*
 * Runs cfg->large.health_checks in order on this machine, each as a program (the command split
 * at spaces, never through a shell; a relative path is from cfg->workdir, else the current
 * directory) with SCALETUNE_NODE=node, SCALETUNE_SWEEP=cfg->name and SCALETUNE_HEALTH_DIR=
 * state_dir (created; a check keeps what it has seen on this node there, e.g. dmesg lines) in
 * its environment, each within cfg->large.health_timeout_seconds (then killed, with its process
 * group). A check passes when it exits 0. Stops at the first failure. ST_OK (with *out filled,
 * failures included), ST_EINVAL, ST_ENOMEM, ST_EIO (state_dir cannot be created).
 */
st_status runner_health_run(const runner_config *cfg, const char *node, const char *state_dir,
                            runner_health_result *out, char *errmsg);

/*
 * Records a failed health check of `node` for the sweep (event "health:fail"); once the node
 * has failed `quarantine_after` times, it is quarantined (event "quarantine" with why). A
 * passing result records nothing. *n_failures (may be NULL): the node's failures so far;
 * *quarantined (may be NULL): whether it is quarantined now. ST_OK, ST_ENOTFOUND, ST_EDB.
 */
st_status runner_store_health_record(runner_store *s, const char *sweep, const char *node,
                                     const runner_health_result *r, unsigned quarantine_after,
                                     size_t *n_failures, int *quarantined);

typedef struct runner_quarantine {
    char node[128];
    double t;      /* when, epoch seconds */
    char why[384]; /* the failures that put it there */
} runner_quarantine;

/* The sweep's quarantined nodes, oldest first: cap into out (may be NULL), *n all of them. */
st_status runner_store_quarantined(runner_store *s, const char *sweep, size_t cap, size_t *n,
                                   runner_quarantine *out);

/* ---- throughput per node ----------------------------------------------------------------- */

/* One node's throughput, from the tokens_per_s of its attempts' step records. */
typedef struct runner_node_rate {
    char node[128];      /* the attempts' host: runner_options.node, $SCALETUNE_NODE or the
                            controller's host name; on Slurm the node the job ran on, known
                            at the attempt's end */
    size_t n_attempts;   /* its attempts with tokens_per_s */
    double tokens_per_s; /* the median over its latest 20 of those attempts of each attempt's
                            median tokens_per_s (over its latest 200 step records) */
    int slow;            /* below slow_fraction x the median of all nodes' tokens_per_s */
} runner_node_rate;

/*
 * The sweep's throughput per node, ordered by node name: the first cap into out (may be NULL),
 * *n all of them; *median_all (may be NULL): the median over the nodes (NAN when none). A node
 * is slow below slow_fraction (in [0, 1); 0: none is) x that median (with two nodes, below
 * slow_fraction / (2 - slow_fraction) of the other). Attempts without a host or without
 * tokens_per_s records are left out. ST_OK, ST_EINVAL (slow_fraction), ST_ENOTFOUND, ST_EDB,
 * ST_ENOMEM.
 */
st_status runner_store_node_rates(runner_store *s, const char *sweep, double slow_fraction,
                                  size_t cap, size_t *n, runner_node_rate *out, double *median_all);

/* ---- the run's learning-rate schedule (schedule.c) ----------------------------------------- */

typedef enum runner_schedule_kind {
    RUNNER_SCHEDULE_UNKNOWN = 0, /* the record does not say (or says what cannot be rebuilt) */
    RUNNER_SCHEDULE_CONSTANT = 1,
    RUNNER_SCHEDULE_COSINE = 2, /* cosine from the end of the warmup to the last step */
    RUNNER_SCHEDULE_WSD = 3     /* warmup, stable, then a decay over the last decay_steps */
} runner_schedule_kind;

/* A run's schedule as its {"event":"config"} record states it (docs/metrics-protocol.md):
 * "schedule" ("constant", "cosine", "wsd"), "steps", "lr", "warmup_steps", "min_lr_ratio",
 * "decay_steps" and "decay_shape" ("linear", "1-sqrt"; WSD). */
typedef struct runner_schedule {
    runner_schedule_kind kind;
    double steps;        /* planned steps S (>= 1) */
    double lr;           /* peak learning rate (default 1: only the shape matters to the law) */
    double warmup_steps; /* W: linear warmup, step i (1-based) i/W·lr for i <= W; default 0 */
    double min_lr_ratio; /* the decay ends at lr · min_lr_ratio, in [0, 1]; default 0 */
    double decay_steps;  /* WSD: the last decay_steps steps decay; default 0 (no decay) */
    int decay_sqrt;      /* WSD: 1 for the "1-sqrt" shape, 0 for "linear" */
} runner_schedule;

/* Reads a config record (one JSON line) into *out; kind UNKNOWN when it names no schedule, an
 * unknown one, a WSD without decay_shape, or fields out of range. ST_OK, or ST_EINVAL (line NULL,
 * not JSON, not a config record: *out is then UNKNOWN too). Reentrant. */
st_status runner_schedule_parse(const char *line, runner_schedule *out);

/* The learning rate of steps 1..n_steps (lr[k]: step k+1's), as the reference trainer's
 * gpt_lr_at() computes them (docs/metrics-protocol.md gives the formulas). ST_OK, ST_EINVAL
 * (kind UNKNOWN, n_steps 0). Pure. */
st_status runner_schedule_lr(const runner_schedule *s, size_t n_steps, double *lr);

/* "unknown", "constant", "cosine", "wsd": static strings. */
const char *runner_schedule_name(runner_schedule_kind k);

/* ---- the watch --------------------------------------------------------------------------- */

typedef struct runner_watch_options {
    /* the final objective `scaletune extrapolate` predicted, with its interval; NAN: none (no
     * interval alerts) */
    double expect, expect_lo, expect_hi;
    double spike_factor;       /* a step loss above factor x the median of the previous
                                  spike_window step losses is a spike; 0: off. Default 1.5 */
    size_t spike_window;       /* default 20 (alerts only once that many are known) */
    double straggler_fraction; /* tokens_per_s below this fraction of the run's own median...
                                  (0: off; default 0.5) */
    size_t straggler_window;   /* ...for this many step records in a row is a straggler; 5 */
    double curve_min_fraction; /* the curve's extrapolation is judged from this fraction of
                                  the planned steps on (a config record's "steps"); 0.3 */
} runner_watch_options;

runner_watch_options runner_watch_options_default(void);

typedef struct runner_watch runner_watch;

/* A watch over sweep `sweep` of the store at db_path (its own connection; opts copied). ST_OK,
 * ST_EINVAL (options), and runner_store_open's statuses; errmsg says why. */
st_status runner_watch_create(const char *db_path, const char *sweep,
                              const runner_watch_options *opts, runner_watch **out, char *errmsg);
/* What one poll found. */
typedef struct runner_watch_state {
    size_t n_new;     /* alerts this poll stored */
    int straggling;   /* 1 while the latest attempt read is a straggler (from the alert until
                         its throughput recovers) */
    uint64_t run;     /* the run of the latest point read (0: none yet) */
    unsigned attempt; /* and its attempt number */
} runner_watch_state;

/* Reads the metric points stored since the last call (all of them the first time, so a watch
 * restarted with its controller sees the whole run again; alerts already stored for the same
 * run, kind and step are not added again) and stores the alerts they raise. *out may be NULL.
 * ST_OK, ST_EDB, ST_ENOMEM. */
st_status runner_watch_poll(runner_watch *w, runner_watch_state *out);
const char *runner_watch_errmsg(const runner_watch *w);
/* NULL is a no-op. */
void runner_watch_destroy(runner_watch *w);

#ifdef __cplusplus
}
#endif
#endif /* RUNNER_LARGERUN_H */
