/*
 * backend_local.c — the local process backend. Each attempt gets a small supervisor
 * (supervise.c): scaletune-supervise started with posix_spawn when the controller knows its
 * path (runner_options.supervisor), else a forked child of the controller. It starts a new
 * session, forks the trainer into its own process group (so a kill takes the whole tree),
 * records "supervisor_pid trainer_pid" in <dir>/pid, waits, and writes the exit status and the
 * wall-clock time the trainer ended to <dir>/exit ("exit N T" or "signal N T", atomically, by
 * rename). Because everything lives in files, a controller that did not start an attempt
 * (after a crash) can still settle it. The trainer only execs once the pid file exists, and a
 * new controller can claim an unlaunched attempt's pid file first, so an attempt is never
 * launched twice. No threads; Linux (/proc) assumed.
 */
#define _GNU_SOURCE
#include "runner/runner_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct local {
    pid_t *children; /* supervisors this process started and has not reaped */
    size_t n_children, cap_children;
} local;

static st_status local_create(const runner_config *cfg, void **state, char *errmsg)
{
    (void)cfg;
    (void)errmsg;
    *state = calloc(1, sizeof(local));
    return *state ? ST_OK : ST_ENOMEM;
}

static void local_destroy(void *state)
{
    local *l = state;
    if (!l)
        return;
    free(l->children);
    free(l);
}

/* Reaps the supervisors that have exited (they are our children only if we started them). */
static void reap(local *l)
{
    for (size_t i = 0; i < l->n_children;) {
        int status;
        pid_t r = waitpid(l->children[i], &status, WNOHANG);
        if (r == l->children[i] || (r < 0 && errno == ECHILD))
            l->children[i] = l->children[--l->n_children];
        else
            i++;
    }
}

static void path_in(char *buf, size_t cap, const char *dir, const char *name)
{
    snprintf(buf, cap, "%s/%s", dir, name);
}

static st_status local_submit(void *state, const runner_job_spec *spec, char *job_id, size_t cap,
                              char *errmsg)
{
    local *l = state;
    reap(l);
    if (l->n_children == l->cap_children) {
        size_t nc = l->cap_children ? 2 * l->cap_children : 16;
        pid_t *np = realloc(l->children, nc * sizeof(pid_t));
        if (!np)
            return ST_ENOMEM;
        l->children = np;
        l->cap_children = nc;
    }
    /* no waiting for the supervisor: its pid is the job id, the trainer's pid is read from
     * <dir>/pid when needed; a supervisor that fails early is seen by poll as LOST */
    pid_t s;
    if (spec->supervisor) {
        /* posix_spawn: glibc's clone(CLONE_VM | CLONE_VFORK) copies no page tables, and the
         * controller's memory does not turn copy-on-write for the attempt's lifetime */
        char **sv = runner_supervise_args(spec->supervisor, spec);
        if (!sv)
            return ST_ENOMEM;
        int e = posix_spawn(&s, spec->supervisor, NULL, NULL, sv, environ);
        free(sv);
        if (e)
            return st_errf(errmsg, ST_EBACKEND, "cannot start the supervisor %s: %s",
                           spec->supervisor, strerror(e));
    } else {
        s = fork();
        if (s < 0)
            return st_errf(errmsg, ST_EBACKEND, "fork: %s", strerror(errno));
        if (s == 0)
            runner_supervise(spec);
    }
    l->children[l->n_children++] = s;
    snprintf(job_id, cap, "%ld", (long)s);
    return ST_OK;
}

/* The supervisor's pid from a job id; the trainer's from <dir>/pid (0 if not written yet). */
static int parse_job(const char *job_id, const char *dir, pid_t *sup, pid_t *trainer)
{
    long a;
    if (sscanf(job_id, "%ld", &a) != 1 || a <= 1)
        return -1;
    *sup = (pid_t)a;
    *trainer = 0;
    if (!dir)
        return 0;
    char p[4096], buf[128];
    path_in(p, sizeof(p), dir, "pid");
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    long x, t;
    buf[n > 0 ? n : 0] = '\0';
    if (sscanf(buf, "%ld %ld", &x, &t) == 2 && x == a && t > 1)
        *trainer = (pid_t)t;
    return 0;
}

/* Alive and not a zombie (an orphaned supervisor may wait for a reaper that never comes). */
static int alive(pid_t pid)
{
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 0;
    char p[64], buf[512];
    snprintf(p, sizeof(p), "/proc/%ld/stat", (long)pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1; /* no /proc: trust kill() */
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 1;
    buf[n] = '\0';
    char *rp = strrchr(buf, ')');
    return !(rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'));
}

static int read_exit(const char *dir, runner_job *j)
{
    char p[4096], buf[64];
    path_in(p, sizeof(p), dir, "exit");
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    int v;
    double end = NAN; /* "exit N END" or "signal N END"; files from before the time: NAN */
    if (sscanf(buf, "exit %d %lf", &v, &end) >= 1) {
        j->state = RUNNER_JOB_EXITED;
        j->exit_code = v;
    } else if (sscanf(buf, "signal %d %lf", &v, &end) >= 1) {
        j->state = RUNNER_JOB_SIGNALED;
        j->signal = v;
    } else {
        return 0;
    }
    j->ended = end;
    return 1;
}

static st_status local_poll(void *state, runner_job *jobs, size_t n, char *errmsg)
{
    (void)errmsg;
    reap(state);
    for (size_t i = 0; i < n; i++) {
        runner_job *j = &jobs[i];
        pid_t sup, tr;
        j->state = RUNNER_JOB_RUNNING;
        j->exit_code = j->signal = 0;
        if (read_exit(j->dir, j))
            continue;
        if (parse_job(j->job_id, NULL, &sup, &tr) != 0 || !alive(sup)) {
            /* the supervisor may have written the file between the two checks */
            if (!read_exit(j->dir, j)) {
                j->state = RUNNER_JOB_LOST;
                if (parse_job(j->job_id, j->dir, &sup, &tr) == 0 && tr > 1)
                    kill(-tr, SIGKILL); /* nobody watches it any more */
            }
        }
    }
    return ST_OK;
}

static st_status local_cancel(void *state, const char *job_id, const char *dir, int force,
                              char *errmsg)
{
    (void)state;
    pid_t sup, tr;
    if (parse_job(job_id, dir, &sup, &tr) != 0)
        return st_errf(errmsg, ST_EBACKEND, "bad local job id '%s'", job_id);
    if (tr <= 1)
        return st_errf(errmsg, ST_EBUSY, "the run in %s has not started yet", dir);
    if (kill(-tr, force ? SIGKILL : SIGTERM) != 0 && errno != ESRCH)
        return st_errf(errmsg, ST_EBACKEND, "kill %ld: %s", (long)tr, strerror(errno));
    return ST_OK;
}

static st_status local_adopt(void *state, const char *dir, char *job_id, size_t cap, char *errmsg)
{
    (void)state;
    char p[4096], buf[128];
    path_in(p, sizeof(p), dir, "pid");
    for (int tries = 0; tries < 2; tries++) {
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t n = read(fd, buf, sizeof(buf) - 1);
            close(fd);
            long a, b;
            buf[n > 0 ? n : 0] = '\0';
            if (sscanf(buf, "%ld %ld", &a, &b) == 2) {
                snprintf(job_id, cap, "%ld", a);
                return ST_OK;
            }
            return ST_ENOTFOUND; /* "abandoned" */
        }
        /* claim it: if this wins, the supervisor's exclusive link fails and it never execs */
        struct stat sb;
        if (stat(dir, &sb) != 0)
            return ST_ENOTFOUND; /* the directory was never made: nothing was launched */
        if (runner_write_file_atomic(dir, "pid", "abandoned\n", 1) == 0)
            return ST_ENOTFOUND;
        if (errno != EEXIST)
            return st_errf(errmsg, ST_EBACKEND, "%s: %s", p, strerror(errno));
    }
    return st_errf(errmsg, ST_EBACKEND, "%s: unreadable", p);
}

static const runner_backend_type local_type = {
    "local", local_create, local_destroy, local_submit, local_poll, local_cancel, local_adopt,
};

const runner_backend_type *const runner_backend_local = &local_type;
