/*
 * largerun_health.c — a node's health checks (runner/largerun.h): programs listed in the sweep
 * file's large_run.health_checks, run one after another with a time limit in their own process
 * group, their exit status the verdict and their last output line the reason; failures and
 * quarantines kept as event rows ("health:fail", "quarantine"; message "NODE<TAB>text"): no
 * schema change. It does not decide what a failure stops: `scaletune run` does.
 */
#define _GNU_SOURCE
#include "runner/largerun.h"
#include "runner/runner_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ARGS 32
#define OUT_KEEP 4096 /* bytes of a check's output kept (its tail) */

typedef struct check_env {
    const char *node, *sweep, *state_dir, *workdir;
} check_env;

/* The child: its own process group, output into the pipe, the environment, exec. */
static void exec_check(char **argv, int out_fd, const check_env *e)
{
    setpgid(0, 0);
    dup2(out_fd, 1);
    dup2(out_fd, 2);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
        dup2(devnull, 0);
    if (e->workdir && chdir(e->workdir) != 0)
        _exit(127);
    setenv("SCALETUNE_NODE", e->node, 1);
    setenv("SCALETUNE_SWEEP", e->sweep, 1);
    setenv("SCALETUNE_HEALTH_DIR", e->state_dir, 1);
    execvp(argv[0], argv);
    dprintf(1, "cannot start %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* The last non-empty line of buf[0..n-1] into why. */
static void last_line(const char *buf, size_t n, char *why, size_t cap)
{
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        n--;
    size_t b = n;
    while (b > 0 && buf[b - 1] != '\n')
        b--;
    snprintf(why, cap, "%.*s", (int)(n - b), buf + b);
}

/* Reads the check's output until it closes or the deadline (monotonic) passes; keeps the tail.
 * Returns 0, or -1 when the deadline passed. */
static int read_output(int fd, double deadline, char *buf, size_t *n)
{
    for (;;) {
        double left = deadline - runner_mono();
        if (left <= 0)
            return -1;
        struct pollfd p = {fd, POLLIN, 0};
        int pr = poll(&p, 1, (int)fmin(left * 1e3 + 1, 200));
        if (pr < 0 && errno != EINTR)
            return 0;
        if (pr <= 0)
            continue;
        char chunk[1024];
        ssize_t got = read(fd, chunk, sizeof(chunk));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return 0; /* closed: the check (and whatever it started) is done writing */
        if (*n + (size_t)got > OUT_KEEP) {
            size_t drop = *n + (size_t)got - OUT_KEEP;
            drop = drop > *n ? *n : drop;
            memmove(buf, buf + drop, *n - drop);
            *n -= drop;
        }
        size_t take = (size_t)got > OUT_KEEP ? OUT_KEEP : (size_t)got;
        memcpy(buf + *n, chunk + (size_t)got - take, take);
        *n += take;
    }
}

/* Runs one check; *status as runner_health_result.status, why its last output line. */
static st_status run_check(char **argv, const check_env *e, double timeout, int *status, char *why,
                           size_t cap)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return ST_EIO;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return ST_EIO;
    }
    if (pid == 0)
        exec_check(argv, fds[1], e);
    close(fds[1]);
    setpgid(pid, pid); /* as the child does: no race on who runs first */
    char *buf = malloc(OUT_KEEP);
    size_t n = 0;
    int late = buf ? read_output(fds[0], runner_mono() + timeout, buf, &n) : 0;
    close(fds[0]);
    if (late)
        kill(-pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (late) {
        *status = -1;
        snprintf(why, cap, "did not finish within %g s (killed)", timeout);
    } else {
        *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        last_line(buf ? buf : "", n, why, cap);
    }
    free(buf);
    return buf ? ST_OK : ST_ENOMEM;
}

static int mkdir_p(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

st_status runner_health_run(const runner_config *cfg, const char *node, const char *state_dir,
                            runner_health_result *out, char *errmsg)
{
    memset(out, 0, sizeof(*out));
    out->ok = 1;
    if (!cfg || !node || !state_dir)
        return st_errf(errmsg, ST_EINVAL, "health checks need a config, a node and a directory");
    if (cfg->large.n_health_checks && mkdir_p(state_dir) != 0)
        return st_errf(errmsg, ST_EIO, "cannot create %s: %s", state_dir, strerror(errno));
    check_env e = {node, cfg->name, state_dir, cfg->workdir};
    for (size_t i = 0; i < cfg->large.n_health_checks; i++) {
        char cmd[1024], *argv[MAX_ARGS + 1];
        size_t argc = 0;
        snprintf(cmd, sizeof(cmd), "%s", cfg->large.health_checks[i]);
        for (char *save = NULL, *t = strtok_r(cmd, " \t", &save); t && argc < MAX_ARGS;
             t = strtok_r(NULL, " \t", &save))
            argv[argc++] = t;
        argv[argc] = NULL;
        if (!argc)
            continue;
        int status = 0;
        char why[256];
        st_status rc =
            run_check(argv, &e, cfg->large.health_timeout_seconds, &status, why, sizeof(why));
        if (rc)
            return st_errf(errmsg, rc, "running health check '%s' failed",
                           cfg->large.health_checks[i]);
        out->n_run++;
        if (status != 0) {
            out->ok = 0;
            out->status = status;
            snprintf(out->check, sizeof(out->check), "%s", cfg->large.health_checks[i]);
            snprintf(out->why, sizeof(out->why), "%s", why[0] ? why : "(no output)");
            return ST_OK;
        }
    }
    return ST_OK;
}

/* ---- the record --------------------------------------------------------------------------- */

/* Rows of `kind` for `node` (the message starts "NODE\t"). */
static st_status count_node(runner_store *s, int64_t sweep, const char *kind, const char *node,
                            size_t *n)
{
    sqlite3_stmt *st = store_stmt(s, "SELECT count(*) FROM events WHERE sweep_id = ?1 AND"
                                     " kind = ?2 AND substr(message, 1, length(?3) + 1) = ?3 ||"
                                     " char(9)");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, sweep);
    sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, node, -1, SQLITE_TRANSIENT);
    int src = sqlite3_step(st);
    *n = src == SQLITE_ROW ? (size_t)sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    return src == SQLITE_ROW ? ST_OK : store_fail(s, src, "counting health events");
}

static st_status record_in_txn(runner_store *s, int64_t id, const char *node,
                               const runner_health_result *r, unsigned after, size_t *n_fail,
                               int *quarantined)
{
    char msg[800];
    snprintf(msg, sizeof(msg), "%s\t%s: exit %d: %s", node, r->check, r->status, r->why);
    size_t n_q = 0;
    st_status rc = store_event(s, id, 0, 0, "health:fail", msg);
    if (!rc)
        rc = count_node(s, id, "health:fail", node, n_fail);
    if (!rc)
        rc = count_node(s, id, "quarantine", node, &n_q);
    if (!rc && !n_q && *n_fail >= after) {
        snprintf(msg, sizeof(msg), "%s\t%zu failed health checks; the last: %s: exit %d: %s", node,
                 *n_fail, r->check, r->status, r->why);
        rc = store_event(s, id, 0, 0, "quarantine", msg);
        n_q = 1;
    }
    *quarantined = n_q > 0;
    return rc;
}

st_status runner_store_health_record(runner_store *s, const char *sweep, const char *node,
                                     const runner_health_result *r, unsigned quarantine_after,
                                     size_t *n_failures, int *quarantined)
{
    s->errmsg[0] = '\0';
    size_t nf = 0;
    int q = 0;
    int64_t id;
    st_status rc = store_find_sweep(s, sweep, &id, NULL);
    if (!rc && r->ok) {
        rc = count_node(s, id, "health:fail", node, &nf);
        size_t nq = 0;
        if (!rc)
            rc = count_node(s, id, "quarantine", node, &nq);
        q = nq > 0;
    } else if (!rc && !(rc = store_begin(s))) {
        rc = record_in_txn(s, id, node, r, quarantine_after ? quarantine_after : 1, &nf, &q);
        if (rc)
            store_rollback(s);
        else
            rc = store_commit(s);
    }
    if (n_failures)
        *n_failures = nf;
    if (quarantined)
        *quarantined = q;
    return rc;
}

st_status runner_store_quarantined(runner_store *s, const char *sweep, size_t cap, size_t *n,
                                   runner_quarantine *out)
{
    s->errmsg[0] = '\0';
    *n = 0;
    int64_t id;
    st_status rc = store_find_sweep(s, sweep, &id, NULL);
    if (rc)
        return rc;
    sqlite3_stmt *st = store_stmt(s, "SELECT t, message FROM events WHERE sweep_id = ?1 AND"
                                     " kind = 'quarantine' ORDER BY id");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, id);
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        if (out && *n < cap) {
            runner_quarantine *q = &out[*n];
            const char *m = (const char *)sqlite3_column_text(st, 1);
            const char *tab = m ? strchr(m, '\t') : NULL;
            q->t = sqlite3_column_double(st, 0);
            snprintf(q->node, sizeof(q->node), "%.*s", tab ? (int)(tab - m) : 0, m ? m : "");
            snprintf(q->why, sizeof(q->why), "%s", tab ? tab + 1 : "");
        }
        (*n)++;
    }
    sqlite3_reset(st);
    return src == SQLITE_DONE ? ST_OK : store_fail(s, src, "reading quarantined nodes");
}

st_status store_quarantine_list(runner_store *s, int64_t sweep, char **out)
{
    *out = NULL;
    sqlite3_stmt *st = store_stmt(s, "SELECT message FROM events WHERE sweep_id = ?1 AND"
                                     " kind = 'quarantine' ORDER BY id");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, sweep);
    char *b = NULL;
    size_t len = 0;
    st_status rc = ST_OK;
    int src = SQLITE_DONE;
    while (!rc && (src = sqlite3_step(st)) == SQLITE_ROW) {
        const char *m = (const char *)sqlite3_column_text(st, 0);
        size_t l = m ? strcspn(m, "\t") : 0;
        if (!l || !m[l] || strcspn(m, ", ") < l)
            continue; /* no node, or one no scheduler can take */
        char *nb = realloc(b, len + l + 2);
        if (!nb) {
            rc = ST_ENOMEM;
            break;
        }
        b = nb;
        if (len)
            b[len++] = ',';
        memcpy(b + len, m, l);
        len += l;
        b[len] = '\0';
    }
    sqlite3_reset(st);
    if (!rc && src != SQLITE_DONE)
        rc = store_fail(s, src, "reading quarantined nodes");
    if (rc)
        free(b);
    else
        *out = b;
    return rc;
}
