/*
 * backend_slurm_cli.c — the Slurm backend's command-line route: sbatch --parsable submits,
 * squeue (then sacct, for the jobs squeue has forgotten) answers for all polled jobs in one
 * call, scontrol gives an ended job's exit code, scancel signals, squeue --name finds a job by
 * name; and slurm_run_cmd, which runs those commands with a timeout and without the token
 * variables in their environment. Not here: the job script, polling, settling from files and
 * adoption (backend_slurm.c), the slurmrestd route (backend_slurm_rest.c).
 */
#define _GNU_SOURCE
#include "runner/slurm_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

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

/* sbatch's command line as it is built: argv, and the options formatted for it */
typedef struct sbatch_line {
    const char *argv[32 + 64];
    size_t n;
    char opt[10][600];
    size_t k;
} sbatch_line;

static void sbatch_opt(sbatch_line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sbatch_opt(sbatch_line *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->opt[l->k], sizeof(l->opt[l->k]), fmt, ap);
    va_end(ap);
    l->argv[l->n++] = l->opt[l->k++];
}

static st_status cli_submit(slurm *s, const char *script, const char *job_name,
                            const runner_job_spec *spec, char *job_id, size_t cap, char *errmsg)
{
    (void)script; /* written to <dir>/job.sh by the caller */
    const runner_slurm_config *sc = s->sc;
    sbatch_line line;
    const char **argv = line.argv;
    line.n = line.k = 0;
    argv[line.n++] = "sbatch";
    argv[line.n++] = "--parsable";
    /* our retries make a fresh attempt; the script refuses reruns */
    argv[line.n++] = "--no-requeue";
    argv[line.n++] = "--export=ALL";
    sbatch_opt(&line, "--job-name=%s", job_name);
    sbatch_opt(&line, "--output=%s/slurm-%%j.out", spec->dir);
    sbatch_opt(&line, "--chdir=%s", spec->dir);
    if (sc->partition)
        sbatch_opt(&line, "--partition=%s", sc->partition);
    if (sc->account)
        sbatch_opt(&line, "--account=%s", sc->account);
    if (sc->qos)
        sbatch_opt(&line, "--qos=%s", sc->qos);
    if (sc->time_limit_minutes)
        sbatch_opt(&line, "--time=%u", sc->time_limit_minutes);
    if (sc->gres)
        sbatch_opt(&line, "--gres=%s", sc->gres);
    if (sc->cpus_per_task)
        sbatch_opt(&line, "--cpus-per-task=%u", sc->cpus_per_task);
    size_t n = line.n;
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

const slurm_route slurm_route_cli = {
    cli_submit, cli_query, cli_exit_status, cli_cancel, cli_find, NULL,
};
