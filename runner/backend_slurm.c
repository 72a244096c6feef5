/*
 * backend_slurm.c — the Slurm backend: one batch job per attempt. The job script (generated,
 * argv single-quoted, never re-parsed by a shell) claims the attempt directory, records its job
 * id, runs the trainer with its logs there and writes the exit status to <dir>/exit, as the
 * local supervisor does; so finished jobs settle from files on the shared filesystem, also when
 * slurmctld is away or has forgotten them. The scheduler is asked in one batched query (squeue,
 * or one REST call) for the jobs whose files do not tell, at an interval that backs off while
 * nothing changes; its states map to failure kinds (docs/backends/slurm.md). This file also
 * holds the command-line route (sbatch --parsable, squeue, scontrol, scancel); the slurmrestd
 * route is backend_slurm_rest.c. Linux, POSIX processes; no threads.
 */
#define _GNU_SOURCE
#include "runner/slurm_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- small helpers ----------------------------------------------------------------------- */

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    nanosleep(&ts, NULL);
}

/* Reads a small file into buf (NUL-terminated). Length read, or -1. */
static ssize_t read_small(const char *dir, const char *name, char *buf, size_t cap)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return n;
}

int slurm_shell_quote(char **buf, size_t *len, size_t *cap, const char *s)
{
    size_t need = *len + 4 * strlen(s) + 3;
    if (need > *cap) {
        size_t nc = *cap ? *cap : 1024;
        while (nc < need)
            nc *= 2;
        char *nb = realloc(*buf, nc);
        if (!nb)
            return -1;
        *buf = nb;
        *cap = nc;
    }
    char *o = *buf + *len;
    *o++ = '\'';
    for (; *s; s++) {
        if (*s == '\'') { /* close, an escaped quote, reopen */
            memcpy(o, "'\\''", 4);
            o += 4;
        } else {
            *o++ = *s;
        }
    }
    *o++ = '\'';
    *o = '\0';
    *len = (size_t)(o - *buf);
    return 0;
}

/* Appends plain text. 0 or -1. */
static int append(char **buf, size_t *len, size_t *cap, const char *s)
{
    size_t l = strlen(s);
    if (*len + l + 1 > *cap) {
        size_t nc = *cap ? *cap : 1024;
        while (nc < *len + l + 1)
            nc *= 2;
        char *nb = realloc(*buf, nc);
        if (!nb)
            return -1;
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, s, l + 1);
    *len += l;
    return 0;
}

void slurm_job_name(const char *dir, char *buf, size_t cap)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a, 64 bits */
    for (const unsigned char *p = (const unsigned char *)dir; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    snprintf(buf, cap, "st-%016llx", (unsigned long long)h);
}

int slurm_refusal_is_transient(const char *msg)
{
    return strstr(msg, "Required node not available") ||
           strstr(msg, "temporarily unable to accept") ||
           strstr(msg, "Resource temporarily unavailable");
}

void slurm_secret_vars(const runner_slurm_config *sc, const char *out[4])
{
    size_t k = 0;
    out[k++] = "SLURM_JWT";
    if (sc->token_env && strcmp(sc->token_env, "SLURM_JWT"))
        out[k++] = sc->token_env;
    out[k] = NULL;
}

/* ---- the job script ---------------------------------------------------------------------- */

st_status slurm_job_script(const runner_job_spec *spec, char **out)
{
    char *b = NULL;
    size_t len = 0, cap = 0;
    int e = 0;
    *out = NULL;
    e |= append(&b, &len, &cap,
                "#!/bin/bash\n"
                "# scaletune: one attempt of a sweep, generated for Slurm. Resubmitting it is "
                "safe:\n"
                "# a second start (a requeue, or an attempt a restarted controller gave up) runs "
                "nothing.\n"
                "d=");
    e |= slurm_shell_quote(&b, &len, &cap, spec->dir);
    e |= append(&b, &len, &cap,
                "\n"
                "mkdir \"$d/.claim\" 2>/dev/null || exit 0\n"
                "echo \"$SLURM_JOB_ID\" > \"$d/job_id.tmp\" && mv -f \"$d/job_id.tmp\" "
                "\"$d/job_id\"\n"
                "echo \"${SLURMD_NODENAME:-$(hostname -s)}\" > \"$d/node.tmp\" && mv -f "
                "\"$d/node.tmp\" \"$d/node\"\n"
                "finish() { echo \"$1\" > \"$d/exit.tmp\" && mv -f \"$d/exit.tmp\" \"$d/exit\"; "
                "}\n");
    for (char *const *v = spec->env; v && *v; v++) {
        e |= append(&b, &len, &cap, "export ");
        e |= slurm_shell_quote(&b, &len, &cap, *v);
        e |= append(&b, &len, &cap, "\n");
    }
    if (spec->workdir) {
        e |= append(&b, &len, &cap, "cd ");
        e |= slurm_shell_quote(&b, &len, &cap, spec->workdir);
        e |= append(&b, &len, &cap,
                    " || { echo \"scaletune: cannot enter the workdir\" >> \"$d/stderr.log\"; "
                    "finish \"exit 127\"; exit 127; }\n");
    } else {
        e |= append(&b, &len, &cap, "cd \"$d\" || exit 127\n");
    }
    e |= append(&b, &len, &cap, "t0=$(date +%s.%N)\n");
    for (char *const *a = spec->argv; *a; a++) {
        e |= slurm_shell_quote(&b, &len, &cap, *a);
        e |= append(&b, &len, &cap, " ");
    }
    /* bash reports a child killed by signal N as 128 + N */
    /* the exit file carries the trainer's own end and start (wall clock): the cost in wall
     * seconds is neither the time in the queue nor the time no controller was there to see */
    e |= append(
        &b, &len, &cap,
        "< /dev/null >> \"$d/stdout.log\" 2>> \"$d/stderr.log\"\n"
        "rc=$?\n"
        "t1=$(date +%s.%N)\n"
        "if [ $rc -gt 128 ] && [ $rc -le 192 ]; then finish \"signal $((rc - 128)) $t1 $t0\"; "
        "else finish \"exit $rc $t1 $t0\"; fi\n"
        "exit $rc\n");
    if (e) {
        free(b);
        return ST_ENOMEM;
    }
    *out = b;
    return ST_OK;
}

/* ---- running the Slurm commands ---------------------------------------------------------- */

static int dropped(const char *kv, const char *const *drop)
{
    for (; drop && *drop; drop++) {
        size_t l = strlen(*drop);
        if (!strncmp(kv, *drop, l) && kv[l] == '=')
            return 1;
    }
    return 0;
}

/* Reads what is there from fd into buf (keeps the first cap-1 bytes). 0 at EOF. */
static int drain(int fd, char *buf, size_t cap, size_t *len)
{
    char tmp[4096];
    ssize_t n = read(fd, tmp, sizeof(tmp));
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 1 : 0;
    if (n == 0)
        return 0;
    size_t k = (size_t)n;
    if (*len + k > cap - 1)
        k = cap - 1 - *len;
    memcpy(buf + *len, tmp, k);
    *len += k;
    buf[*len] = '\0';
    return 1;
}

st_status slurm_run_cmd(const char *const *argv, const char *const *env_drop, double timeout,
                        char *out, size_t out_cap, char *err, size_t err_cap, int *code)
{
    *code = -1;
    out[0] = err[0] = '\0';
    size_t n_env = 0;
    while (environ && environ[n_env])
        n_env++;
    char **env = malloc((n_env + 1) * sizeof(char *));
    if (!env)
        return ST_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++)
        if (!dropped(environ[i], env_drop))
            env[k++] = environ[i];
    env[k] = NULL;
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) != 0) {
        free(env);
        return st_errf(err, ST_EBACKEND, "pipe: %s", strerror(errno));
    }
    if (pipe2(pe, O_CLOEXEC) != 0) {
        close(po[0]);
        close(po[1]);
        free(env);
        return st_errf(err, ST_EBACKEND, "pipe: %s", strerror(errno));
    }
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0); /* a timeout kills the command and whatever it started */
        int in = open("/dev/null", O_RDONLY);
        if (in < 0 || dup2(in, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0)
            _exit(126);
        execvpe(argv[0], (char *const *)argv, env);
        dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    free(env);
    close(po[1]);
    close(pe[1]);
    if (pid < 0) {
        close(po[0]);
        close(pe[0]);
        return st_errf(err, ST_EBACKEND, "fork: %s", strerror(errno));
    }
    size_t lo = 0, le = 0;
    int open_o = 1, open_e = 1, timed_out = 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (open_o || open_e) {
        struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        double left = timeout - ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9);
        if (left <= 0) {
            timed_out = 1;
            kill(-pid, SIGKILL);
            break;
        }
        fds[0].fd = open_o ? po[0] : -1;
        fds[1].fd = open_e ? pe[0] : -1;
        int r = poll(fds, 2, (int)(left * 1000) + 1);
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0)
            continue;
        if (open_o && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
            open_o = drain(po[0], out, out_cap, &lo);
        if (open_e && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
            open_e = drain(pe[0], err, err_cap, &le);
    }
    close(po[0]);
    close(pe[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return st_errf(err, ST_EBACKEND, "waitpid: %s", strerror(errno));
    if (timed_out)
        return st_errf(err, ST_ETIMEOUT, "%s did not answer within %g s", argv[0], timeout);
    *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return ST_OK;
}

/* Last line of a command's stderr without "sbatch: error: " noise, for messages. */
static const char *clean_err(char *e)
{
    size_t l = strlen(e);
    while (l && (e[l - 1] == '\n' || e[l - 1] == ' '))
        e[--l] = '\0';
    char *nl = strrchr(e, '\n');
    char *m = nl ? nl + 1 : e;
    char *p = strstr(m, "error: ");
    return p ? p + 7 : m;
}

/* slurmctld could not be reached: the calls' own words for it. */
static int unreachable(const char *e)
{
    return strstr(e, "Unable to contact slurm controller") || strstr(e, "Connection refused") ||
           strstr(e, "Unable to establish") || strstr(e, "Socket timed out") ||
           strstr(e, "Communication connection failure");
}

typedef struct cmdbuf {
    char out[16384], err[2048];
} cmdbuf;

static st_status cli_run(slurm *s, const char *const *argv, cmdbuf *b, int *code, char *errmsg)
{
    const char *drop[4];
    slurm_secret_vars(s->sc, drop);
    st_status rc = slurm_run_cmd(argv, drop, s->sc->command_timeout_seconds, b->out, sizeof(b->out),
                                 b->err, sizeof(b->err), code);
    if (rc == ST_ETIMEOUT)
        return st_errf(errmsg, ST_ENETWORK, "%s", b->err);
    if (rc)
        return st_errf(errmsg, rc, "%s", b->err);
    if (*code == 127 && strstr(b->err, "cannot run"))
        return st_errf(errmsg, ST_EBACKEND, "%s (is Slurm's client installed?)", clean_err(b->err));
    return ST_OK;
}

/* ---- the command-line route -------------------------------------------------------------- */

static st_status cli_submit(slurm *s, const char *script, const char *job_name,
                            const runner_job_spec *spec, char *job_id, size_t cap, char *errmsg)
{
    (void)script; /* written to <dir>/job.sh by the caller */
    const runner_slurm_config *sc = s->sc;
    char opt[10][600];
    const char *argv[32 + 64];
    size_t n = 0, k = 0;
    argv[n++] = "sbatch";
    argv[n++] = "--parsable";
    argv[n++] = "--no-requeue"; /* our retries make a fresh attempt; the script refuses reruns */
    argv[n++] = "--export=ALL";
    snprintf(opt[k], sizeof(opt[k]), "--job-name=%s", job_name);
    argv[n++] = opt[k++];
    snprintf(opt[k], sizeof(opt[k]), "--output=%s/slurm-%%j.out", spec->dir);
    argv[n++] = opt[k++];
    snprintf(opt[k], sizeof(opt[k]), "--chdir=%s", spec->dir);
    argv[n++] = opt[k++];
    if (sc->partition) {
        snprintf(opt[k], sizeof(opt[k]), "--partition=%s", sc->partition);
        argv[n++] = opt[k++];
    }
    if (sc->account) {
        snprintf(opt[k], sizeof(opt[k]), "--account=%s", sc->account);
        argv[n++] = opt[k++];
    }
    if (sc->qos) {
        snprintf(opt[k], sizeof(opt[k]), "--qos=%s", sc->qos);
        argv[n++] = opt[k++];
    }
    if (sc->time_limit_minutes) {
        snprintf(opt[k], sizeof(opt[k]), "--time=%u", sc->time_limit_minutes);
        argv[n++] = opt[k++];
    }
    if (sc->gres) {
        snprintf(opt[k], sizeof(opt[k]), "--gres=%s", sc->gres);
        argv[n++] = opt[k++];
    }
    if (sc->cpus_per_task) {
        snprintf(opt[k], sizeof(opt[k]), "--cpus-per-task=%u", sc->cpus_per_task);
        argv[n++] = opt[k++];
    }
    /* the quarantined nodes, merged with an --exclude of the file's extra arguments (sbatch
     * keeps only the last one given) */
    int ours = spec->exclude && *spec->exclude;
    const char *x = "--exclude=";
    size_t lx = strlen(x), lex = ours ? lx + strlen(spec->exclude) + 1 : 0;
    for (size_t i = 0; ours && i < sc->n_extra; i++)
        if (!strncmp(sc->extra[i], x, lx))
            lex += strlen(sc->extra[i]) - lx + 1;
    char *exclude = ours ? malloc(lex) : NULL;
    if (ours && !exclude)
        return ST_ENOMEM;
    if (ours)
        snprintf(exclude, lex, "%s%s", x, spec->exclude);
    for (size_t i = 0; i < sc->n_extra && n < 32 + 61; i++) {
        if (ours && !strncmp(sc->extra[i], x, lx)) {
            if (sc->extra[i][lx]) {
                strcat(exclude, ",");
                strcat(exclude, sc->extra[i] + lx);
            }
            continue;
        }
        argv[n++] = sc->extra[i];
    }
    if (ours)
        argv[n++] = exclude;
    char path[4200];
    snprintf(path, sizeof(path), "%s/job.sh", spec->dir);
    argv[n++] = path;
    argv[n] = NULL;

    cmdbuf *b = malloc(sizeof(*b));
    if (!b) {
        free(exclude);
        return ST_ENOMEM;
    }
    int code;
    st_status rc = cli_run(s, argv, b, &code, errmsg);
    if (rc == ST_ENETWORK) /* sbatch was killed: it may have submitted; let the attempt fail */
        rc = ST_EBACKEND;
    if (!rc && code != 0)
        rc = st_errf(errmsg, unreachable(b->err) ? ST_ENETWORK : ST_EBACKEND, "sbatch: %s",
                     clean_err(b->err));
    if (!rc) {
        /* --parsable: "id" or "id;cluster" */
        char *p = b->out;
        size_t l = strspn(p, "0123456789");
        if (l == 0 || l >= cap)
            rc = st_errf(errmsg, ST_EBACKEND, "sbatch printed no job id: '%.100s'", p);
        else {
            memcpy(job_id, p, l);
            job_id[l] = '\0';
        }
    }
    free(exclude);
    free(b);
    return rc;
}

static st_status cli_query(slurm *s, const char *const *ids, size_t n, slurm_info *info,
                           char *errmsg)
{
    size_t cap = 64, len = 0;
    for (size_t i = 0; i < n; i++)
        cap += strlen(ids[i]) + 1;
    char *list = malloc(cap);
    cmdbuf *b = malloc(sizeof(*b));
    if (!list || !b) {
        free(list);
        free(b);
        return ST_ENOMEM;
    }
    list[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        memset(&info[i], 0, sizeof(info[i]));
        len += (size_t)snprintf(list + len, cap - len, "%s%s", i ? "," : "", ids[i]);
    }
    const char *argv[] = {"squeue", "-h", "-t", "all", "-j", list, "-o", "%i|%T|%r", NULL};
    int code;
    st_status rc = cli_run(s, argv, b, &code, errmsg);
    if (!rc && code != 0) {
        /* with a single job id squeue fails for an unknown job; that is an answer */
        if (!strstr(b->err, "Invalid job id"))
            rc = st_errf(errmsg, ST_ENETWORK, "squeue: %s", clean_err(b->err));
        b->out[0] = '\0';
    }
    for (char *line = b->out; !rc && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *f1 = strchr(line, '|'), *f2 = f1 ? strchr(f1 + 1, '|') : NULL;
        if (f2) {
            *f1 = *f2 = '\0';
            for (size_t i = 0; i < n; i++)
                if (!strcmp(ids[i], line)) {
                    info[i].known = 1;
                    snprintf(info[i].state, sizeof(info[i].state), "%s", f1 + 1);
                    snprintf(info[i].reason, sizeof(info[i].reason), "%s", f2 + 1);
                }
        }
        if (!nl)
            break;
        line = nl + 1;
    }
    /* jobs squeue has forgotten (MinJobAge): accounting remembers them, where there is one */
    size_t n_unknown = 0;
    len = 0;
    list[0] = '\0';
    for (size_t i = 0; !rc && i < n; i++)
        if (!info[i].known) {
            len += (size_t)snprintf(list + len, cap - len, "%s%s", n_unknown ? "," : "", ids[i]);
            n_unknown++;
        }
    if (!rc && n_unknown && !s->no_sacct) {
        const char *sacct[] = {"sacct", "-n", "-P", "-X", "-j", list, "-o", "JobID,State,ExitCode",
                               NULL};
        char em[ST_ERRMSG_MAX];
        if (cli_run(s, sacct, b, &code, em) != ST_OK || code != 0) {
            /* "Slurm accounting storage is disabled", or no sacct: settle from files */
            if (strstr(b->err, "disabled") || strstr(b->err, "cannot run"))
                s->no_sacct = 1;
            b->out[0] = '\0';
        }
        for (char *line = b->out; *line;) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            char *f1 = strchr(line, '|'), *f2 = f1 ? strchr(f1 + 1, '|') : NULL;
            if (f2) {
                *f1 = *f2 = '\0';
                char *sp = strchr(f1 + 1, ' '); /* "CANCELLED by 1000" */
                if (sp)
                    *sp = '\0';
                int c, sig;
                for (size_t i = 0; i < n; i++)
                    if (!info[i].known && !strcmp(ids[i], line)) {
                        info[i].known = 1;
                        snprintf(info[i].state, sizeof(info[i].state), "%s", f1 + 1);
                        snprintf(info[i].reason, sizeof(info[i].reason), "sacct");
                        if (sscanf(f2 + 1, "%d:%d", &c, &sig) == 2) {
                            info[i].has_exit = 1;
                            info[i].exit_status = sig ? sig : (c & 0xff) << 8;
                        }
                    }
            }
            if (!nl)
                break;
            line = nl + 1;
        }
    }
    free(list);
    free(b);
    return rc;
}

static st_status cli_exit_status(slurm *s, const char *id, slurm_info *info, char *errmsg)
{
    cmdbuf *b = malloc(sizeof(*b));
    if (!b)
        return ST_ENOMEM;
    const char *argv[] = {"scontrol", "-o", "show", "job", id, NULL};
    int code;
    st_status rc = cli_run(s, argv, b, &code, errmsg);
    if (!rc && code != 0) {
        if (strstr(b->err, "Invalid job id"))
            info->known = 0;
        else
            rc = st_errf(errmsg, ST_ENETWORK, "scontrol: %s", clean_err(b->err));
    } else if (!rc) {
        const char *e = strstr(b->out, " ExitCode=");
        int c, sig;
        if (e && sscanf(e, " ExitCode=%d:%d", &c, &sig) == 2) {
            info->has_exit = 1;
            info->exit_status = sig ? sig : (c & 0xff) << 8;
        }
    }
    free(b);
    return rc;
}

static st_status cli_cancel(slurm *s, const char *id, int force, char *errmsg)
{
    cmdbuf *b = malloc(sizeof(*b));
    if (!b)
        return ST_ENOMEM;
    /* plain scancel: SIGTERM, Slurm's KillWait, SIGKILL; force: SIGKILL to every process */
    const char *soft[] = {"scancel", id, NULL};
    const char *hard[] = {"scancel", "--full", "--signal=KILL", id, NULL};
    int code;
    st_status rc = cli_run(s, force ? hard : soft, b, &code, errmsg);
    if (!rc && code != 0 && !strstr(b->err, "Invalid job id") &&
        !strstr(b->err, "already completing or completed"))
        rc = st_errf(errmsg, unreachable(b->err) ? ST_ENETWORK : ST_EBACKEND, "scancel %s: %s", id,
                     clean_err(b->err));
    free(b);
    return rc;
}

static st_status cli_find(slurm *s, const char *job_name, char *job_id, size_t cap, char *errmsg)
{
    cmdbuf *b = malloc(sizeof(*b));
    if (!b)
        return ST_ENOMEM;
    char name[128];
    snprintf(name, sizeof(name), "--name=%s", job_name);
    const char *argv[] = {"squeue", "-h", "-t", "all", name, "-o", "%i", NULL};
    int code;
    st_status rc = cli_run(s, argv, b, &code, errmsg);
    if (!rc && code != 0)
        rc = st_errf(errmsg, ST_ENETWORK, "squeue: %s", clean_err(b->err));
    if (!rc) {
        size_t l = strspn(b->out, "0123456789");
        if (l == 0 || l >= cap)
            rc = ST_ENOTFOUND;
        else {
            memcpy(job_id, b->out, l);
            job_id[l] = '\0';
        }
    }
    free(b);
    return rc;
}

static const slurm_route route_cli = {
    cli_submit, cli_query, cli_exit_status, cli_cancel, cli_find, NULL,
};

/* ---- the backend ------------------------------------------------------------------------- */

static double mono(void)
{
    return runner_mono();
}

static st_status slurm_create_common(const runner_config *cfg, int rest, void **state, char *errmsg)
{
    slurm *s = calloc(1, sizeof(*s));
    if (!s)
        return ST_ENOMEM;
    s->cfg = cfg;
    s->sc = &cfg->slurm;
    s->interval = s->sc->poll_min_seconds;
    s->route = rest ? &slurm_route_rest : &route_cli;
    if (rest) {
        st_status rc = slurm_rest_create(s, errmsg);
        if (rc) {
            free(s);
            return rc;
        }
    }
    *state = s;
    return ST_OK;
}

static st_status slurm_create_cli(const runner_config *cfg, void **state, char *errmsg)
{
    return slurm_create_common(cfg, 0, state, errmsg);
}

static st_status slurm_create_rest(const runner_config *cfg, void **state, char *errmsg)
{
    return slurm_create_common(cfg, 1, state, errmsg);
}

static void slurm_destroy(void *state)
{
    slurm *s = state;
    if (!s)
        return;
    if (s->route->destroy)
        s->route->destroy(s);
    free(s->cache);
    free(s);
}

static st_status slurm_submit(void *state, const runner_job_spec *spec, char *job_id, size_t cap,
                              char *errmsg)
{
    slurm *s = state;
    char *script = NULL;
    st_status rc = slurm_job_script(spec, &script);
    if (rc)
        return rc;
    char p[4200];
    snprintf(p, sizeof(p), "%s/job.sh", spec->dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    size_t l = strlen(script);
    if (fd < 0 || write(fd, script, l) != (ssize_t)l) {
        rc = st_errf(errmsg, ST_EBACKEND, "cannot write %s: %s", p, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(script);
        return rc;
    }
    close(fd);
    char name[64];
    slurm_job_name(spec->dir, name, sizeof(name));
    rc = s->route->submit(s, script, name, spec, job_id, cap, errmsg);
    free(script);
    if (rc == ST_EBACKEND && slurm_refusal_is_transient(errmsg))
        rc = ST_ENETWORK;
    return rc;
}

static slurm_cached *cache_get(slurm *s, const char *id, int create)
{
    for (size_t i = 0; i < s->n_cache; i++)
        if (!strcmp(s->cache[i].id, id))
            return &s->cache[i];
    if (!create)
        return NULL;
    if (s->n_cache == s->cap_cache) {
        size_t nc = s->cap_cache ? 2 * s->cap_cache : 16;
        slurm_cached *n = realloc(s->cache, nc * sizeof(*n));
        if (!n)
            return NULL;
        s->cache = n;
        s->cap_cache = nc;
    }
    slurm_cached *c = &s->cache[s->n_cache++];
    memset(c, 0, sizeof(*c));
    snprintf(c->id, sizeof(c->id), "%s", id);
    return c;
}

/* The exit file: 1 "exit N END START", 2 "signal N END START", 0 none yet. The job script's
 * times (wall clock) go to j->ended and j->started when both are there. */
static int read_exit(const char *dir, int *v, runner_job *j)
{
    char buf[128];
    double t1 = NAN, t0 = NAN;
    int kind = 0;
    if (read_small(dir, "exit", buf, sizeof(buf)) <= 0)
        return 0;
    if (sscanf(buf, "exit %d %lf %lf", v, &t1, &t0) >= 1)
        kind = 1;
    else if (sscanf(buf, "signal %d %lf %lf", v, &t1, &t0) >= 1)
        kind = 2;
    if (kind && isfinite(t1) && isfinite(t0) && t0 <= t1) {
        j->ended = t1;
        j->started = t0;
    }
    return kind;
}

static int state_is(const char *st, const char *const *names)
{
    for (; *names; names++)
        if (!strcmp(st, *names))
            return 1;
    return 0;
}

static const char *const active_states[] = {
    "PENDING",      "RUNNING",  "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_FED",
    "REQUEUE_HOLD", "RESIZING", "SIGNALING",   "STAGE_OUT",  "STOPPED",   NULL};

/* A job Slurm says has ended and whose files gave no "exit N": its verdict. */
static void classify_ended(slurm *s, slurm_cached *c, runner_job *j, int file_kind, int file_v,
                           double now)
{
    const runner_slurm_config *sc = s->sc;
    const char *st = c->info.state;
    j->state = RUNNER_JOB_LOST;
    if (!strcmp(st, "CANCELLED")) {
        j->failure =
            sc->on_cancelled == RUNNER_SLURM_STOP ? RUNNER_FAIL_STOPPED : RUNNER_FAIL_CANCELLED;
        snprintf(j->reason, sizeof(j->reason), "Slurm job %s CANCELLED outside scaletune", c->id);
    } else if (!strcmp(st, "TIMEOUT") || !strcmp(st, "DEADLINE")) {
        j->failure = sc->on_timeout == RUNNER_SLURM_RETRY ? RUNNER_FAIL_TIME_LIMIT
                                                          : RUNNER_FAIL_WALL_TIMEOUT;
        snprintf(j->reason, sizeof(j->reason), "Slurm job %s %s (time limit)", c->id, st);
    } else if (!strcmp(st, "NODE_FAIL") || !strcmp(st, "BOOT_FAIL") || !strcmp(st, "PREEMPTED")) {
        j->failure = RUNNER_FAIL_NODE;
        snprintf(j->reason, sizeof(j->reason), "Slurm job %s %s", c->id, st);
    } else if (!strcmp(st, "OUT_OF_MEMORY")) {
        j->failure = RUNNER_FAIL_OOM;
        snprintf(j->reason, sizeof(j->reason), "Slurm job %s OUT_OF_MEMORY", c->id);
    } else if (!strcmp(st, "COMPLETED") || !strcmp(st, "FAILED")) {
        if (file_kind == 2) {
            j->state = RUNNER_JOB_SIGNALED;
            j->signal = file_v;
            return;
        }
        if (now - c->ended_seen < sc->files_grace_seconds) {
            j->state = RUNNER_JOB_RUNNING; /* the exit file may still be on its way (NFS) */
            return;
        }
        /* the script ended without writing it: Slurm's exit status of the batch script */
        if (!c->info.has_exit && s->route->exit_status) {
            char em[ST_ERRMSG_MAX];
            if (s->route->exit_status(s, c->id, &c->info, em) != ST_OK) {
                j->state = RUNNER_JOB_RUNNING; /* ask again at the next poll */
                return;
            }
        }
        if (c->info.has_exit && WIFSIGNALED(c->info.exit_status)) {
            j->state = RUNNER_JOB_SIGNALED;
            j->signal = WTERMSIG(c->info.exit_status);
        } else if (c->info.has_exit && WEXITSTATUS(c->info.exit_status) != 0) {
            j->state = RUNNER_JOB_EXITED;
            j->exit_code = WEXITSTATUS(c->info.exit_status);
        } else {
            snprintf(j->reason, sizeof(j->reason), "Slurm job %s %s without an exit file", c->id,
                     st);
        }
    } else {
        snprintf(j->reason, sizeof(j->reason), "Slurm job %.40s ended as %.32s (%.40s)", c->id, st,
                 c->info.reason);
    }
}

/* The scratch of one poll: the jobs still asked about (ids[0..m-1], their indices in jobs
 * idx), Slurm's answers (info) and each job's exit file (kind, val: read_exit). */
typedef struct poll_work {
    const char **ids;
    slurm_info *info;
    int *kind, *val;
    size_t *idx, m;
} poll_work;

/* 1. The files: an "exit N" settles a job whatever Slurm says; the others with a job id are
 * left to ask about. */
static void poll_files(runner_job *jobs, size_t n, poll_work *w)
{
    w->m = 0;
    for (size_t i = 0; i < n; i++) {
        runner_job *j = &jobs[i];
        j->state = RUNNER_JOB_RUNNING;
        j->exit_code = j->signal = 0;
        w->kind[i] = read_exit(j->dir, &w->val[i], j);
        if (w->kind[i] == 1) {
            j->state = RUNNER_JOB_EXITED;
            j->exit_code = w->val[i];
            continue;
        }
        if (!j->job_id[0])
            continue;
        w->idx[w->m] = i;
        w->ids[w->m++] = j->job_id;
    }
}

/* Slurm's answer about one job into its cache entry (created if new); 1 when its state is
 * news, 0 when not, -1 when out of memory. An exit status learnt from scontrol is kept. */
static int record_answer(slurm *s, const char *id, const slurm_info *info, double now)
{
    slurm_cached *c = cache_get(s, id, 1);
    if (!c)
        return -1;
    int changed = !c->seen || c->info.known != info->known || strcmp(c->info.state, info->state);
    c->seen = 1;
    int had_exit = c->info.has_exit;
    slurm_info keep = c->info;
    c->info = *info;
    if (had_exit && !info->has_exit) { /* from scontrol: keep it */
        c->info.has_exit = 1;
        c->info.exit_status = keep.exit_status;
    }
    int ended = info->known && !state_is(info->state, active_states);
    if (ended && c->ended_seen == 0)
        c->ended_seen = now;
    if (!info->known && c->lost_seen == 0)
        c->lost_seen = now;
    if (info->known)
        c->lost_seen = 0;
    return changed;
}

/* 2. One query for the jobs left, when due: its answers into the cache and the next query's
 * time (sooner after news, later when nothing changed, backing off while Slurm fails). Returns
 * ST_OK (also when Slurm did not answer: s->n_failures counts it) or ST_ENOMEM. */
static st_status poll_query(slurm *s, poll_work *w, double now)
{
    const runner_slurm_config *sc = s->sc;
    if (!w->m || now < s->next_query)
        return ST_OK;
    char em[ST_ERRMSG_MAX] = "";
    st_status q = s->route->query(s, w->ids, w->m, w->info, em);
    if (q == ST_ENOMEM)
        return q;
    if (q) {
        s->n_failures++;
        double b = sc->poll_min_seconds * pow(2.0, (double)s->n_failures);
        s->next_query = now + (b < sc->poll_max_seconds ? b : sc->poll_max_seconds);
        snprintf(s->down_msg, sizeof(s->down_msg), "%s", em);
        return ST_OK;
    }
    int changed = 0;
    s->n_failures = 0;
    for (size_t k = 0; k < w->m; k++) {
        int r = record_answer(s, w->ids[k], &w->info[k], now);
        if (r < 0)
            return ST_ENOMEM;
        changed |= r;
    }
    s->interval = changed ? sc->poll_min_seconds : s->interval * 1.5;
    if (s->interval > sc->poll_max_seconds)
        s->interval = sc->poll_max_seconds;
    s->next_query = now + s->interval;
    return ST_OK;
}

/* 3. The verdicts, from the files and the last answer. */
static void poll_verdicts(slurm *s, runner_job *jobs, const poll_work *w, double now)
{
    const runner_slurm_config *sc = s->sc;
    for (size_t k = 0; k < w->m; k++) {
        size_t i = w->idx[k];
        runner_job *j = &jobs[i];
        slurm_cached *c = cache_get(s, j->job_id, 0);
        if (!c || !c->seen)
            continue; /* not asked yet: running */
        if (!c->info.known) {
            if (now - c->lost_seen < sc->files_grace_seconds)
                continue;
            if (w->kind[i] == 2) {
                j->state = RUNNER_JOB_SIGNALED;
                j->signal = w->val[i];
            } else {
                j->state = RUNNER_JOB_LOST;
                snprintf(j->reason, sizeof(j->reason),
                         "Slurm does not know job %s and it left no exit file", c->id);
            }
            continue;
        }
        if (state_is(c->info.state, active_states))
            continue;
        classify_ended(s, c, j, w->kind[i], w->val[i], now);
    }
}

/* 4. The node each ended job ran on, as its script recorded it. */
static void poll_nodes(runner_job *jobs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        runner_job *j = &jobs[i];
        char buf[sizeof(j->node)];
        if (j->state != RUNNER_JOB_RUNNING && read_small(j->dir, "node", buf, sizeof(buf)) > 0) {
            buf[strcspn(buf, "\n")] = '\0';
            snprintf(j->node, sizeof(j->node), "%s", buf);
        }
    }
}

/* 5. Forget the jobs nobody asks about any more. */
static void cache_forget(slurm *s, const runner_job *jobs, size_t n)
{
    for (size_t c = 0; c < s->n_cache;) {
        int used = 0;
        for (size_t i = 0; i < n && !used; i++)
            used = !strcmp(jobs[i].job_id, s->cache[c].id);
        if (used)
            c++;
        else
            s->cache[c] = s->cache[--s->n_cache];
    }
}

static st_status slurm_poll(void *state, runner_job *jobs, size_t n, char *errmsg)
{
    slurm *s = state;
    double now = mono();
    size_t cap = n ? n : 1;
    poll_work w = {malloc(cap * sizeof(char *)), calloc(cap, sizeof(slurm_info)),
                   calloc(cap, sizeof(int)),     calloc(cap, sizeof(int)),
                   malloc(cap * sizeof(size_t)), 0};
    st_status rc = ST_OK;
    if (!w.ids || !w.info || !w.kind || !w.val || !w.idx)
        rc = ST_ENOMEM;
    if (!rc) {
        poll_files(jobs, n, &w);
        rc = poll_query(s, &w, now);
    }
    if (!rc) {
        poll_verdicts(s, jobs, &w, now);
        poll_nodes(jobs, n);
        cache_forget(s, jobs, n);
        if (s->n_failures)
            rc = st_errf(errmsg, ST_ENETWORK, "%s", s->down_msg);
    }
    free(w.ids);
    free(w.info);
    free(w.kind);
    free(w.val);
    free(w.idx);
    return rc;
}

static st_status slurm_cancel(void *state, const char *job_id, const char *dir, int force,
                              char *errmsg)
{
    slurm *s = state;
    (void)dir;
    if (!job_id[0])
        return st_errf(errmsg, ST_EBUSY, "no job id yet");
    return s->route->cancel(s, job_id, force, errmsg);
}

static st_status slurm_adopt(void *state, const char *dir, char *job_id, size_t cap, char *errmsg)
{
    slurm *s = state;
    char buf[64], p[4200];
    struct stat sb;
    if (read_small(dir, "job_id", buf, sizeof(buf)) > 0 && buf[0] >= '0' && buf[0] <= '9') {
        snprintf(job_id, cap, "%.*s", (int)strspn(buf, "0123456789"), buf);
        return ST_OK;
    }
    if (stat(dir, &sb) != 0)
        return ST_ENOTFOUND; /* no directory: nothing was submitted */
    char name[64];
    slurm_job_name(dir, name, sizeof(name));
    st_status rc = s->route->find(s, name, job_id, cap, errmsg);
    if (rc != ST_ENOTFOUND)
        return rc;
    /* claim it: if a submission of the dead controller is still on its way, its script now
     * runs nothing */
    snprintf(p, sizeof(p), "%s/.claim", dir);
    if (mkdir(p, 0755) == 0)
        return ST_ENOTFOUND;
    if (errno != EEXIST)
        return st_errf(errmsg, ST_EBACKEND, "%s: %s", p, strerror(errno));
    for (int i = 0; i < 50; i++) { /* the script claimed it and writes its id right after */
        if (read_small(dir, "job_id", buf, sizeof(buf)) > 0 && buf[0] >= '0' && buf[0] <= '9') {
            snprintf(job_id, cap, "%.*s", (int)strspn(buf, "0123456789"), buf);
            return ST_OK;
        }
        sleep_s(0.1);
    }
    return st_errf(errmsg, ST_EBACKEND, "%s: claimed by a job that never wrote its id", dir);
}

static const runner_backend_type slurm_cli_type = {
    "slurm-cli", slurm_create_cli, slurm_destroy, slurm_submit,
    slurm_poll,  slurm_cancel,     slurm_adopt,
};

static const runner_backend_type slurm_rest_type = {
    "slurm-rest", slurm_create_rest, slurm_destroy, slurm_submit,
    slurm_poll,   slurm_cancel,      slurm_adopt,
};

const runner_backend_type *const runner_backend_slurm_cli = &slurm_cli_type;
const runner_backend_type *const runner_backend_slurm_rest = &slurm_rest_type;
