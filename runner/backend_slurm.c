/*
 * backend_slurm.c — the Slurm backend: one batch job per attempt. The job script (generated,
 * argv single-quoted, never re-parsed by a shell) claims the attempt directory, records its job
 * id, runs the trainer with its logs there and writes the exit status to <dir>/exit, as the
 * local supervisor does; so finished jobs settle from files on the shared filesystem, also when
 * slurmctld is away or has forgotten them. The scheduler is asked in one batched query (squeue,
 * or one REST call) for the jobs whose files do not tell, at an interval that backs off while
 * nothing changes; its states map to failure kinds (docs/backends/slurm.md). Not here: the
 * routes that talk to Slurm, the command-line one (sbatch --parsable, squeue, sacct, scontrol,
 * scancel: backend_slurm_cli.c) and the slurmrestd one (backend_slurm_rest.c). Linux, POSIX
 * processes; no threads.
 */
#define _GNU_SOURCE
#include "runner/slurm_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
    s->route = rest ? &slurm_route_rest : &slurm_route_cli;
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
