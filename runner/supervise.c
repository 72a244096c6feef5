/*
 * supervise.c — the local backend's per-attempt supervisor, and the argument list that starts
 * it as its own small program (runner/supervise_main.c, `scaletune-supervise`). The supervisor
 * starts a new session, forks the trainer into its own process group, records
 * "supervisor_pid trainer_pid" in <dir>/pid (exclusively: a new controller may have claimed the
 * attempt first), lets the trainer exec, waits, and writes "exit N T" or "signal N T" to
 * <dir>/exit by rename. It is not the backend's bookkeeping (backend_local.c). It depends on
 * libc only, so the program that links this file alone starts in a fraction of a millisecond.
 */
#define _GNU_SOURCE
#include "runner/runner_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

int runner_write_file_atomic(const char *dir, const char *name, const char *text, int exclusive)
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
    int saved = errno;
    unlink(tmp);
    errno = saved;
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

/* Wall-clock seconds, as runner_now() (kept here so that this file needs libc only). */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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

void runner_supervise(const runner_job_spec *spec)
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
    if (runner_write_file_atomic(spec->dir, "pid", text, 1) != 0) {
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
    double end = now(); /* the attempt's own end, whoever reads the file and when */
    if (WIFEXITED(status))
        snprintf(text, sizeof(text), "exit %d %.6f\n", WEXITSTATUS(status), end);
    else
        snprintf(text, sizeof(text), "signal %d %.6f\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0,
                 end);
    /* the trainer's group may have left children behind: they go with it */
    kill(-t, SIGKILL);
    runner_write_file_atomic(spec->dir, "exit", text, 0);
    _exit(0);
}

/* The program's command line: PROGRAM --dir DIR [--workdir W] [--env K=V]... -- ARGV... */
char **runner_supervise_args(const char *program, const runner_job_spec *spec)
{
    size_t n_env = 0, n_argv = 0;
    while (spec->env && spec->env[n_env])
        n_env++;
    while (spec->argv[n_argv])
        n_argv++;
    char **v = malloc((6 + 2 * n_env + n_argv + 1) * sizeof(char *));
    if (!v)
        return NULL;
    size_t k = 0;
    v[k++] = (char *)program;
    v[k++] = "--dir";
    v[k++] = (char *)spec->dir;
    if (spec->workdir) {
        v[k++] = "--workdir";
        v[k++] = (char *)spec->workdir;
    }
    for (size_t i = 0; i < n_env; i++) {
        v[k++] = "--env";
        v[k++] = spec->env[i];
    }
    v[k++] = "--";
    for (size_t i = 0; i < n_argv; i++)
        v[k++] = spec->argv[i];
    v[k] = NULL;
    return v;
}

int runner_supervise_parse(int argc, char **argv, runner_job_spec *spec)
{
    memset(spec, 0, sizeof(*spec));
    /* the --env values, in argv order; at most one per two arguments */
    char **env = calloc((size_t)argc / 2 + 1, sizeof(char *));
    if (!env)
        return -1;
    int i = 1, n_env = 0;
    for (; i + 1 < argc && strcmp(argv[i], "--"); i += 2) {
        if (!strcmp(argv[i], "--dir"))
            spec->dir = argv[i + 1];
        else if (!strcmp(argv[i], "--workdir"))
            spec->workdir = argv[i + 1];
        else if (!strcmp(argv[i], "--env"))
            env[n_env++] = argv[i + 1];
        else
            break;
    }
    if (!spec->dir || i + 1 >= argc || strcmp(argv[i], "--")) {
        free(env);
        return -1;
    }
    spec->env = env;
    spec->argv = argv + i + 1;
    return 0;
}
