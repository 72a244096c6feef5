/*
 * backend_local.c — the local process backend. Each attempt gets a small supervisor: a forked
 * child that starts a new session, forks the trainer into its own process group (so a kill
 * takes the whole tree), records "supervisor_pid trainer_pid" in <dir>/pid, waits, and writes
 * the exit status and the wall-clock time the trainer ended to <dir>/exit ("exit N T" or
 * "signal N T", atomically, by rename). Because everything lives in files, a
 * controller that did not start an attempt (after a crash) can still settle it. The trainer
 * only execs once the pid file exists, and a new controller can claim an unlaunched attempt's
 * pid file first, so an attempt is never launched twice. No threads; Linux (/proc) assumed.
 */
#define _GNU_SOURCE
#include "runner/runner_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct local {
    pid_t *children; /* supervisors this process forked and has not reaped */
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

/* Reaps the supervisors that have exited (they are our children only if we forked them). */
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

static int write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Writes `text` to dir/name through dir/name.tmp: link (exclusive) or rename (replace). */
static int write_file_atomic(const char *dir, const char *name, const char *text, int exclusive)
{
    char tmp[4096], dst[4096];
    snprintf(tmp, sizeof(tmp), "%s/%s.%ld.tmp", dir, name, (long)getpid());
    path_in(dst, sizeof(dst), dir, name);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    /* no fsync: these files must survive the death of processes, not of the machine */
    int rc = write_all(fd, text, strlen(text));
    close(fd);
    if (!rc)
        rc = exclusive ? link(tmp, dst) : rename(tmp, dst);
    unlink(tmp);
    return rc;
}

static void close_from(int lowfd)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lowfd, ~0u, 0) == 0)
        return;
#endif
    for (int fd = lowfd; fd < 4096; fd++)
        close(fd);
}

/* The trainer: its own process group, logs in dir, waits for the supervisor's go. Never
 * returns. */
static void run_trainer(const runner_job_spec *spec, int go_fd)
{
    char p[4096];
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    int in = open("/dev/null", O_RDONLY);
    path_in(p, sizeof(p), spec->dir, "stdout.log");
    int out = open(p, O_WRONLY | O_CREAT | O_APPEND, 0644);
    path_in(p, sizeof(p), spec->dir, "stderr.log");
    int err = open(p, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in < 0 || out < 0 || err < 0)
        _exit(126);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    char go;
    ssize_t r;
    do
        r = read(go_fd, &go, 1);
    while (r < 0 && errno == EINTR);
    if (r != 1)
        _exit(125); /* the supervisor gave up: never exec */
    close_from(3);
    for (char *const *e = spec->env; e && *e; e++) {
        char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        *eq = '\0';
        setenv(*e, eq + 1, 1);
        *eq = '=';
    }
    if (spec->workdir && chdir(spec->workdir) != 0) {
        dprintf(2, "scaletune: cannot enter workdir %s: %s\n", spec->workdir, strerror(errno));
        _exit(127);
    }
    execvp(spec->argv[0], spec->argv);
    dprintf(2, "scaletune: cannot run %s: %s\n", spec->argv[0], strerror(errno));
    _exit(127);
}

/* The supervisor (already forked). Never returns. */
static void run_supervisor(const runner_job_spec *spec)
{
    setsid();
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    close_from(3);
    int go[2];
    if (pipe(go) != 0)
        _exit(1);
    pid_t t = fork();
    if (t < 0)
        _exit(1);
    if (t == 0) {
        close(go[1]);
        run_trainer(spec, go[0]);
    }
    close(go[0]);
    setpgid(t, t);
    char text[128];
    snprintf(text, sizeof(text), "%ld %ld\n", (long)getpid(), (long)t);
    if (write_file_atomic(spec->dir, "pid", text, 1) != 0) {
        /* a new controller claimed this attempt as never launched: do not run it */
        kill(t, SIGKILL);
        waitpid(t, NULL, 0);
        _exit(1);
    }
    (void)write_all(go[1], "g", 1);
    close(go[1]);
    int status;
    while (waitpid(t, &status, 0) < 0)
        if (errno != EINTR)
            _exit(1);
    double end = runner_now(); /* the attempt's own end, whoever reads the file and when */
    if (WIFEXITED(status))
        snprintf(text, sizeof(text), "exit %d %.6f\n", WEXITSTATUS(status), end);
    else
        snprintf(text, sizeof(text), "signal %d %.6f\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0,
                 end);
    /* the trainer's group may have left children behind: they go with it */
    kill(-t, SIGKILL);
    write_file_atomic(spec->dir, "exit", text, 0);
    _exit(0);
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
    pid_t s = fork();
    if (s < 0)
        return st_errf(errmsg, ST_EBACKEND, "fork: %s", strerror(errno));
    if (s == 0)
        run_supervisor(spec);
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
        if (write_file_atomic(dir, "pid", "abandoned\n", 1) == 0)
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
