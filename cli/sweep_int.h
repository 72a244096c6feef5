/*
 * sweep_int.h — what the files of `scaletune sweep` share (cli/cmd_sweep.c: parsing, launch,
 * resume, stop, export, ask, tell; cli/cmd_sweep_manage.c: status, list, delete, rename;
 * cli/sweep_preflight.c: checks before a launch). Not a library header: CLI code only.
 */
#ifndef ST_CLI_SWEEP_INT_H
#define ST_CLI_SWEEP_INT_H

#include "runner/runner.h"

#define SWEEP_KV_MAX 256

typedef struct sweep_args {
    const char *db, *sweep, *log_dir, *out, *file, *file2;
    int csv, json, failed, has_objective, has_cost;
    double ttl;      /* ask --ttl: seconds, 0 none */
    double interval; /* watch --interval: seconds, 0 the default (2) */
    double objective, cost;
    unsigned long long id;
    int has_id;
    const char *kv[SWEEP_KV_MAX]; /* enqueue: NAME=VALUE arguments */
    size_t n_kv;
} sweep_args;

/* Opens the existing store a->db; on failure prints the message (and a hint) and returns NULL. */
runner_store *sweep_open_store(const sweep_args *a);
/* Prints the store's message with a hint that fits it (the sweeps to name, ...), closes the
 * store and returns 1. */
int sweep_store_error(runner_store *s);

/* cli/sweep_preflight.c: 0 when the command's program can run (local backend), else prints a
 * configuration error naming `file`'s line and the program and returns 1. */
int sweep_preflight(const runner_config *c, const char *file);

int sweep_do_status(const sweep_args *a);
int sweep_do_list(const sweep_args *a);
int sweep_do_delete(const sweep_args *a);
int sweep_do_rename(const sweep_args *a);
int sweep_do_enqueue(const sweep_args *a);
/* cli/sweep_watch.c */
int sweep_do_watch(const sweep_args *a);

/* cli/sweep_live.c: what moves in a sweep, for `sweep status` */
#define SWEEP_LIVE_MAX    64 /* running runs and expired ids listed */
#define SWEEP_RATE_WINDOW 20 /* the rate is over the last this many runs that ended */

typedef struct sweep_live_run {
    uint64_t id;
    int attempt;        /* the last attempt's number */
    double seconds;     /* since it started */
    double step, loss;  /* its last stored point of `metric`; NAN when none yet */
    const char *metric; /* "loss", or the objective when the trainer reports no loss */
} sweep_live_run;

typedef struct sweep_live {
    size_t n_running; /* running, expired asked runs left out */
    size_t n_expired; /* asked runs past their --ttl without a tell */
    uint64_t expired[SWEEP_LIVE_MAX];
    sweep_live_run runs[SWEEP_LIVE_MAX];
    size_t n_runs;
    double rate_per_min; /* NAN until two runs ended at different times */
    double eta_seconds;  /* to the run budget at that rate; NAN without a budget, a rate, or a
                            controller or running run */
} sweep_live;

/* Fills *l from the store, the status and the typed read w at epoch seconds `now`; 0, or 1 on a
 * store error (the store's message says why). */
int sweep_live_read(runner_store *s, const runner_status *st, const runner_sweep *w, double now,
                    sweep_live *l);
/* The sweep's running runs less the asked runs past their --ttl (expired, not running), as
 * status, list and watch count them; the expired ones into *n_expired (may be NULL). */
size_t sweep_running_now(runner_store *s, const runner_status *st, size_t *n_expired);

#endif
