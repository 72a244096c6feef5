/*
 * slurm_int.h — between the three files of the Slurm backend (not installed, not public).
 *   backend_slurm.c       what both routes share (job scripts, Slurm states -> failure kinds,
 *                         settling from files, batched polling with backoff, adoption)
 *   backend_slurm_cli.c   the command-line route (sbatch --parsable, squeue, sacct, scontrol,
 *                         scancel) and slurm_run_cmd, which runs those commands
 *   backend_slurm_rest.c  the slurmrestd route: API v0.0.38 over libcurl, JSON with jansson
 * A route is a small table of transport functions; the shared part never knows which it has.
 */
#ifndef SLURM_INT_H
#define SLURM_INT_H

#include "runner/runner_int.h"

/* what this header declares is internal: hidden from libscaletune.so's exports (the static
 * library and the tests still link it); common/scaletune.map exports the public API */
#pragma GCC visibility push(hidden)

/* What the scheduler says about one job. */
typedef struct slurm_info {
    int known;       /* 0: Slurm does not know the job (purged after MinJobAge, or never was) */
    char state[32];  /* "PENDING", "RUNNING", "COMPLETED", "NODE_FAIL", ... */
    char reason[64]; /* Slurm's reason ("None", "NonZeroExitCode", ...) */
    int has_exit;    /* exit_status is valid */
    int exit_status; /* a wait(2) status: (code << 8) | signal, as slurmctld keeps it */
} slurm_info;

typedef struct slurm slurm;

/* One route. Statuses: ST_OK, ST_EBACKEND (Slurm refused; errmsg says why), ST_ENETWORK (the
 * scheduler could not be reached: for submit, nothing was submitted), ST_ENOMEM. */
typedef struct slurm_route {
    /* Submits `script` (the job's whole batch script) for the attempt in spec->dir; writes the
     * job id. */
    st_status (*submit)(slurm *s, const char *script, const char *job_name,
                        const runner_job_spec *spec, char *job_id, size_t cap, char *errmsg);
    /* One request for all n jobs: fills info[i] (known = 0 for jobs Slurm does not know). */
    st_status (*query)(slurm *s, const char *const *ids, size_t n, slurm_info *info, char *errmsg);
    /* Exit status of one ended job, for a route whose query lacks it; NULL if query has it. */
    st_status (*exit_status)(slurm *s, const char *id, slurm_info *info, char *errmsg);
    /* Signals a job: SIGTERM (Slurm's grace, then SIGKILL) or, with force, SIGKILL now. */
    st_status (*cancel)(slurm *s, const char *id, int force, char *errmsg);
    /* The id of the job named `job_name`, or ST_ENOTFOUND. */
    st_status (*find)(slurm *s, const char *job_name, char *job_id, size_t cap, char *errmsg);
    void (*destroy)(slurm *s);
} slurm_route;

/* One cached answer of the scheduler, per job id. */
typedef struct slurm_cached {
    char id[64];
    slurm_info info;
    double ended_seen; /* monotonic time Slurm first said the job ended, 0 before */
    double lost_seen;  /* monotonic time Slurm first did not know the job, 0 before */
    int seen;          /* answered by the last query */
} slurm_cached;

struct slurm {
    const runner_config *cfg; /* the sweep's, outlives the backend */
    const runner_slurm_config *sc;
    const slurm_route *route;
    void *route_state; /* the REST route's curl handle and buffers */
    slurm_cached *cache;
    size_t n_cache, cap_cache;
    double next_query;   /* monotonic */
    double interval;     /* current query interval (backoff while nothing changes) */
    unsigned n_failures; /* queries failed in a row */
    int no_sacct;        /* sacct said accounting is off (or is missing): do not ask again */
    char down_msg[ST_ERRMSG_MAX];
};

/* backend_slurm_cli.c: runs argv (argv[0] through PATH, stdin /dev/null, env_drop left out of
 * the environment), collecting stdout in out[cap] and stderr in err[cap] (truncated,
 * NUL-terminated), killed after timeout seconds. *code: exit status, or -1 when killed or not
 * started. ST_OK (it ran, whatever its exit status), ST_ETIMEOUT, ST_EBACKEND (could not start it),
 * ST_ENOMEM. */
st_status slurm_run_cmd(const char *const *argv, const char *const *env_drop, double timeout,
                        char *out, size_t out_cap, char *err, size_t err_cap, int *code);

/* Single-quotes s for bash ('it'\''s'); appends to *buf (malloc'd, grown). 0 or -1 (ENOMEM). */
int slurm_shell_quote(char **buf, size_t *len, size_t *cap, const char *s);

/* The batch script of an attempt: claims the attempt directory, records the job id, exports
 * spec->env, enters the workdir, runs argv with its logs in the directory and writes the exit
 * file ("exit N END START" or "signal N END START": the trainer's wall-clock end and start)
 * atomically. *out: malloc'd. */
st_status slurm_job_script(const runner_job_spec *spec, char **out);

/* "st-" and 16 hex digits of a hash of the attempt directory: the job's name in Slurm. */
void slurm_job_name(const char *dir, char *buf, size_t cap);

/* 1 if Slurm refused a submission for a passing reason (nodes not registered yet after a
 * slurmctld restart, "temporarily unable to accept"): the submission is then treated as not
 * made, and launching waits (ST_ENETWORK), instead of failing the attempt. */
int slurm_refusal_is_transient(const char *msg);

/* Environment variables never passed to jobs or sbatch: tokens. NULL-terminated, from sc. */
void slurm_secret_vars(const runner_slurm_config *sc, const char *out[4]);

/* The command-line route (backend_slurm_cli.c). */
extern const slurm_route slurm_route_cli;
extern const slurm_route slurm_route_rest;
/* Creates the REST route's state (curl handle) in s->route_state. */
st_status slurm_rest_create(slurm *s, char *errmsg);

#pragma GCC visibility pop

#endif
