/*
 * controller.c — the sweep loop: suggest -> record -> launch -> poll -> parse -> observe, with
 * retries and backoff for infrastructure failures, timeouts, straggler and cost-cap kills, a
 * graceful stop, and resume after a crash. Every state change is one store transaction made
 * before the matching in-memory change, so a controller killed between any two statements is
 * resumed from the store without a lost or duplicated observation or a second launch.
 * Not a backend (backend_local.c) and not a query tool (store_query.c); new suggestions are
 * suggest.c's, their results' release in suggestion order release.c's, launch/resume/destroy
 * controller_open.c's.
 */
#include "runner/controller_int.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_REFUSALS_ROW  100
#define HEARTBEAT_SECONDS 1.0

static const char *const metric_files[2] = {"stdout.log", "metrics.jsonl"};

runner_options runner_options_default(void)
{
    runner_options o;
    memset(&o, 0, sizeof(o));
    o.poll_seconds = 0.02;
    o.lease_seconds = 15;
    return o;
}

const char *runner_errmsg(const runner *r)
{
    return r ? r->errmsg : "no runner";
}

int runner_finished(const runner *r)
{
    return r->finished;
}

const double *runner_overhead_ms(const runner *r, size_t *n)
{
    *n = r->n_ov;
    return r->ov;
}

static st_status fail_store(runner *r, st_status rc)
{
    if (rc && !r->errmsg[0])
        snprintf(r->errmsg, sizeof(r->errmsg), "%s", r->st->errmsg);
    return rc;
}

void ctl_progress(runner *r, const char *fmt, ...)
{
    if (!r->opts.progress)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->event, sizeof(r->event), fmt, ap);
    va_end(ap);
    runner_progress p;
    memset(&p, 0, sizeof(p));
    p.n_runs = r->n_runs;
    const size_t *all = r->n_status, *br = r->n_branch_status; /* runs: all rows but branches */
    p.n_running = all[RUNNER_RUN_RUNNING] - br[RUNNER_RUN_RUNNING];
    p.n_pending = all[RUNNER_RUN_PENDING] - br[RUNNER_RUN_PENDING];
    p.n_done = all[RUNNER_RUN_SUCCEEDED] - br[RUNNER_RUN_SUCCEEDED];
    p.n_failed = all[RUNNER_RUN_FAILED] - br[RUNNER_RUN_FAILED];
    p.n_infra_failed = all[RUNNER_RUN_INFRA_FAILED] - br[RUNNER_RUN_INFRA_FAILED];
    p.n_branch_running = br[RUNNER_RUN_RUNNING];
    p.n_branch_pending = br[RUNNER_RUN_PENDING];
    p.n_branch_done = br[RUNNER_RUN_SUCCEEDED];
    p.n_retried = r->n_retried;
    p.budget_runs = r->cfg->budget_runs;
    p.spent_cost = r->spent;
    p.budget_cost = r->cfg->budget_cost;
    p.has_best = r->has_best;
    p.best_objective = r->best;
    p.event = r->event;
    r->opts.progress(&p, r->opts.progress_data);
}

void ctl_set_status_count(runner *r, runner_run_status from, runner_run_status to, int branch)
{
    if (r->n_status[from])
        r->n_status[from]--;
    r->n_status[to]++;
    if (branch) {
        if (r->n_branch_status[from])
            r->n_branch_status[from]--;
        r->n_branch_status[to]++;
    }
}

/* From the leaf up: an attempt's parents usually exist (a new run's directory is the one
 * missing), so this costs one or three mkdir calls rather than one per component of the path. */
static int mkdir_p(const char *path)
{
    if (mkdir(path, 0755) == 0 || errno == EEXIST)
        return 0;
    if (errno != ENOENT)
        return -1;
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", path);
    char *end = tmp + strlen(tmp);
    /* up to the deepest ancestor that exists or could be made, cutting the path at each '/' */
    for (;;) {
        char *slash = strrchr(tmp, '/');
        if (!slash || slash == tmp)
            return -1;
        *slash = '\0';
        if (mkdir(tmp, 0755) == 0 || errno == EEXIST)
            break;
        if (errno != ENOENT)
            return -1;
    }
    /* and down again, one cut at a time */
    for (char *p = tmp + strlen(tmp); p < end; p++)
        if (*p == '\0') {
            *p = '/';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return -1;
        }
    return 0;
}

/* ---- metrics ----------------------------------------------------------------------------- */

/* Handles one protocol line inside the caller's transaction. */
static st_status handle_line(runner *r, active *a, const char *line, size_t len, double now)
{
    runner_metrics_line l;
    st_status rc = runner_metrics_parse(line, len, &l);
    if (rc == ST_ENOMEM)
        return rc;
    if (rc) {
        a->n_garbage++;
        return ST_OK;
    }
    a->n_lines++;
    a->last_metric = now;
    if ((rc = es_note_line(r, a, &l)))
        return rc;
    double c;
    if (!ctl_cost_is_wall(r) && runner_metrics_get(&l, r->cfg->cost_metric, &c) && isfinite(c) &&
        !(c <= a->max_cost))
        a->max_cost = c;
    if (l.event == RUNNER_EVENT_DIVERGED)
        a->diverged = 1;
    if (l.event == RUNNER_EVENT_FINAL) {
        char *f = malloc(len + 1);
        if (!f)
            return ST_ENOMEM;
        memcpy(f, line, len);
        f[len] = '\0';
        free(a->final_line);
        a->final_line = f;
    }
    return store_record_metric(r->st, a->attempt_id, (int)l.event, l.step, now, line, len);
}

/* Reads what the attempt's files gained since the last call; records lines and offsets in one
 * transaction (so each line is stored exactly once, across restarts too). */
static st_status tail(runner *r, active *a)
{
    double now = runner_now();
    int in_txn = 0;
    st_status rc = ST_OK;
    for (int f = 0; f < 2 && !rc; f++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", a->dir, metric_files[f]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct stat sb;
        while (!rc && fstat(fd, &sb) == 0 && sb.st_size > a->off[f]) {
            ssize_t n = pread(fd, r->buf, READ_CHUNK, a->off[f]);
            if (n <= 0)
                break;
            if (!in_txn) {
                if ((rc = store_begin(r->st)))
                    break;
                in_txn = 1;
            }
            size_t start = 0, consumed = 0;
            for (size_t i = 0; i < (size_t)n && !rc; i++) {
                if (r->buf[i] != '\n')
                    continue;
                if (!a->skip[f])
                    rc = handle_line(r, a, r->buf + start, i - start, now);
                else
                    a->skip[f] = 0; /* the tail of an over-long line */
                start = consumed = i + 1;
            }
            if (consumed == 0) {
                if ((size_t)n < READ_CHUNK)
                    break; /* an incomplete line: wait for the rest */
                /* a line longer than the chunk: garbage, skip to its end */
                if (!a->skip[f])
                    a->n_garbage++;
                a->skip[f] = 1;
                consumed = (size_t)n;
            }
            assert(consumed <= (size_t)n); /* offsets only move over bytes read */
            a->off[f] += (int64_t)consumed;
        }
        close(fd);
    }
    if (!in_txn)
        return rc;
    if (!rc) {
        store_progress p = {a->attempt_id, {a->off[0], a->off[1]}, a->n_lines,
                            a->n_garbage,  a->last_metric,         a->max_cost,
                            a->diverged,   a->final_line,          a->job_id};
        rc = store_attempt_progress(r->st, &p);
    }
    if (!rc)
        return store_commit(r->st);
    /* the in-memory offsets are ahead of the store now; the controller stops on this error */
    store_rollback(r->st);
    return rc;
}

/* ---- settling ---------------------------------------------------------------------------- */

static double backoff(const runner *r, unsigned n_infra)
{
    double b = r->cfg->backoff_seconds * pow(2.0, (double)(n_infra > 0 ? n_infra - 1 : 0));
    return b < r->cfg->backoff_max_seconds ? b : r->cfg->backoff_max_seconds;
}

static void record_overhead(runner *r, double seconds)
{
    if (r->n_ov == r->cap_ov) {
        size_t nc = r->cap_ov ? 2 * r->cap_ov : 256;
        double *n = realloc(r->ov, nc * sizeof(double));
        if (!n)
            return; /* a statistic, not state */
        r->ov = n;
        r->cap_ov = nc;
    }
    r->ov[r->n_ov++] = seconds * 1e3;
}

/* What a failure kind does to its run (ARCHITECTURE.md, "Failures have kinds"). */
typedef enum outcome {
    OUT_RETRY = 0, /* infrastructure: pending again after a backoff, infra_failed past the
                      retries; never observed (a kind missing below is one) */
    OUT_SUCCEEDED, /* observed */
    OUT_FAILED,    /* a hyperparameter failure: observed as failed */
    OUT_COST_ONLY, /* over the cost cap: failed, never retried, shown to the cost model only */
    OUT_ENDED,     /* infra_failed at once: a trainer that would say the same again */
    OUT_STOPPED,   /* stopped by the user: resume relaunches it */
} outcome;

static const outcome outcome_of_kind[] = {
    [RUNNER_FAIL_NONE] = OUT_SUCCEEDED,      [RUNNER_FAIL_DIVERGED] = OUT_FAILED,
    [RUNNER_FAIL_OOM] = OUT_FAILED,          [RUNNER_FAIL_OVER_BUDGET] = OUT_COST_ONLY,
    [RUNNER_FAIL_WALL_TIMEOUT] = OUT_FAILED, [RUNNER_FAIL_STRAGGLER] = OUT_FAILED,
    [RUNNER_FAIL_EXIT] = OUT_RETRY,          [RUNNER_FAIL_SIGNAL] = OUT_RETRY,
    [RUNNER_FAIL_HANG] = OUT_RETRY,          [RUNNER_FAIL_NO_FINAL] = OUT_RETRY,
    [RUNNER_FAIL_LOST] = OUT_RETRY,          [RUNNER_FAIL_LAUNCH] = OUT_RETRY,
    [RUNNER_FAIL_STOPPED] = OUT_STOPPED,     [RUNNER_FAIL_NODE] = OUT_RETRY,
    [RUNNER_FAIL_CANCELLED] = OUT_RETRY,     [RUNNER_FAIL_TIME_LIMIT] = OUT_RETRY,
    [RUNNER_FAIL_BAD_FINAL] = OUT_ENDED,     [RUNNER_FAIL_CONSTRAINT] = OUT_FAILED,
};

static outcome outcome_of(runner_failure kind)
{
    size_t n = sizeof(outcome_of_kind) / sizeof(outcome_of_kind[0]);
    outcome o = (size_t)kind < n ? outcome_of_kind[kind] : OUT_RETRY;
    /* the optimizer sees as failures exactly the kinds runner.h calls hyperparameter ones */
    assert((o == OUT_FAILED) == (runner_failure_is_hyperparameter(kind) != 0));
    return o;
}

/* Hands a settled attempt's result to the optimizer (the store has it already: a controller
 * dying here rebuilds the optimizer from it). */
static st_status observe_settled(runner *r, const active *a, runner_run_status to, outcome out,
                                 int early, int censored, double y, double obs_cost, double cost)
{
    int observed = to == RUNNER_RUN_SUCCEEDED || to == RUNNER_RUN_FAILED || early;
    if (r->det || a->parent)
        return ST_OK; /* released in suggestion order by release.c; a branch is never shown */
    if (observed && out == OUT_COST_ONLY)
        return ctl_observe_cost(r, a->carbs_id, a->x_all, cost);
    if (observed && (!early || censored)) {
        double x[256], *xp = x;
        size_t d = carbs_dim(r->cb);
        if (d > 256 && !(xp = malloc(d * sizeof(double))))
            return ST_ENOMEM;
        runner_x_to_carbs(r->cfg, a->x_all, xp);
        int failed = to == RUNNER_RUN_FAILED;
        st_status rc = carbs_observe(r->cb, a->carbs_id, xp, y, obs_cost, failed);
        if (rc == ST_ENOTFOUND) /* forgotten as too old by the optimizer itself */
            rc = carbs_observe(r->cb, 0, xp, y, obs_cost, failed);
        if (xp != x)
            free(xp);
        if (rc)
            return st_errf(r->errmsg, rc, "optimizer: %s", carbs_errmsg(r->cb));
    } else if (a->carbs_id && to != RUNNER_RUN_PENDING) {
        carbs_forget(r->cb, a->carbs_id); /* ST_ENOTFOUND is fine: nothing to forget */
    }
    return ST_OK;
}

/* Frees attempt r->act[idx] and its slot; the last attempt takes its place. */
static void drop_active(runner *r, size_t idx)
{
    active *a = &r->act[idx];
    r->slot_busy[a->slot] = 0;
    free(a->dir);
    free(a->final_line);
    free(a->x_all);
    es_free(a);
    r->act[idx] = r->act[--r->n_act];
}

/* What the outcome makes of the attempt's run: *to, and for a retry the infrastructure failures
 * it has had with this one (*n_infra, from the store) and when it may run again (*not_before). */
static st_status run_status_after(runner *r, const active *a, outcome out, double now,
                                  runner_run_status *to, double *not_before, unsigned *n_infra)
{
    switch (out) {
    case OUT_SUCCEEDED:
        *to = RUNNER_RUN_SUCCEEDED;
        break;
    case OUT_FAILED:
    case OUT_COST_ONLY:
        *to = RUNNER_RUN_FAILED;
        break;
    case OUT_ENDED:
        *to = RUNNER_RUN_INFRA_FAILED; /* ended, not observed, not retried */
        break;
    case OUT_STOPPED:
        *to = RUNNER_RUN_STOPPED;
        break;
    case OUT_RETRY: {
        st_status rc = store_run_infra_count(r->st, a->run_id, n_infra);
        if (rc)
            return rc;
        ++*n_infra;
        *to = *n_infra > r->cfg->retries ? RUNNER_RUN_INFRA_FAILED : RUNNER_RUN_PENDING;
        *not_before = now + backoff(r, *n_infra);
        break;
    }
    }
    return ST_OK;
}

/* The settlement's fields that come from the attempt itself (the rest is settle's verdict). */
static void settlement_of_attempt(const runner *r, const active *a, const runner_job *job,
                                  store_settlement *o)
{
    memset(o, 0, sizeof(*o));
    o->sweep = r->sweep;
    o->run_id = a->run_id;
    o->attempt_id = a->attempt_id;
    o->has_exit_code = job->state == RUNNER_JOB_EXITED;
    o->exit_code = job->exit_code;
    o->has_signal = job->state == RUNNER_JOB_SIGNALED;
    o->signal = job->signal;
    o->job_id = a->job_id;
    o->final_line = a->final_line;
    o->x = a->x_all;
    o->n_x = r->cfg->n_params;
}

/* A succeeded run's cooldown branches, made in its settlement's transaction (not in
 * deterministic mode: there they are made when it is released, release.c). */
typedef struct spawn {
    runner *r;
    const active *a;
    double cost;
    size_t n_new;
    double planned;
} spawn;

static st_status spawn_branches(void *ctx)
{
    spawn *sp = ctx;
    return ctl_branches_spawn(sp->r, sp->a->run_id, sp->a->x_all, sp->cost, &sp->n_new,
                              &sp->planned);
}

/* The best objective so far, of runs (a cooldown branch's is of a shorter run). */
static void note_best(runner *r, const active *a, runner_run_status to, double objective)
{
    if (to == RUNNER_RUN_SUCCEEDED && !a->parent &&
        (!r->has_best || (r->cfg->maximize ? objective > r->best : objective < r->best))) {
        r->has_best = 1;
        r->best = objective;
    }
}

/* Classifies a finished attempt (ctl_classify, outcome_of_kind) and records the outcome in one
 * transaction (store_settle_attempt), then tells the optimizer. */
static st_status settle(runner *r, size_t idx, const runner_job *job)
{
    active *a = &r->act[idx];
    assert(idx < r->n_act && r->slot_busy[a->slot]);
    double t0 = runner_mono();
    st_status rc = tail(r, a);
    if (rc)
        return rc;
    double now = runner_now();
    /* the attempt's own end when the backend knows it: time no controller was alive to see it
     * end is not the run's */
    double end =
        isfinite(job->ended) && job->ended >= a->started && job->ended <= now ? job->ended : now;
    /* and its own start when the backend knows it (Slurm): time in the queue is not the run's */
    double begin = isfinite(job->started) && job->started >= a->started && job->started <= end
                       ? job->started
                       : a->started;
    double objective = NAN, cost = ctl_cost_is_wall(r) ? end - begin : a->max_cost;
    char why[256] = "";
    if (a->kill_reason == RUNNER_FAIL_STOPPED && !r->stopping && a->final_line &&
        job->state == RUNNER_JOB_EXITED && job->exit_code == 0)
        a->kill_reason = RUNNER_FAIL_NONE; /* it finished before the early stop took effect */
    runner_failure kind = ctl_classify(r, a, job, &objective, &cost, why, sizeof(why));
    if (!(cost > 0) || !isfinite(cost))
        cost = NAN;
    /* stopped by the stop rule: ended, censored for the optimizer (runner.h, early stopping) */
    double bound = NAN, bound_cost = NAN;
    const char *stop_reason = NULL;
    int early = kind == RUNNER_FAIL_STOPPED && es_stopped(a, &bound, &bound_cost, &stop_reason);
    if (early)
        kind = RUNNER_FAIL_NONE;
    int code = job->state == RUNNER_JOB_EXITED ? job->exit_code : 0;
    int config_error = ctl_config_error(r, kind, code); /* before this outcome counts */
    ctl_note_outcome(r, kind, code, why, a->dir);
    if (config_error)
        ctl_config_why(kind, code, a->dir, why, sizeof(why));

    /* a configuration error (streak.c: also exit 126/127 while no run has worked) ends the run */
    outcome out = config_error ? OUT_ENDED : outcome_of(kind);
    runner_run_status to = RUNNER_RUN_PENDING;
    double not_before = 0;
    unsigned n_infra = 0;
    if ((rc = run_status_after(r, a, early ? OUT_STOPPED : out, now, &to, &not_before, &n_infra)))
        return rc;
    int observed = to == RUNNER_RUN_SUCCEEDED || to == RUNNER_RUN_FAILED || early;
    int censored = early && isfinite(bound); /* else forgotten, as an infrastructure failure */
    double obs_y = censored ? bound : objective, obs_cost = censored ? bound_cost : cost;
    /* an early stop is a stop of ours with the rule's reason; a success has a finite objective */
    assert(!early || stop_reason);
    assert(to != RUNNER_RUN_SUCCEEDED || isfinite(objective));

    char msg[512];
    snprintf(msg, sizeof(msg), "run %lld attempt %u: %s%s%s%s", (long long)a->run_id, a->number,
             early                      ? "stopped early"
             : kind == RUNNER_FAIL_NONE ? "succeeded"
                                        : runner_failure_name(kind),
             why[0] ? " (" : "", why, why[0] ? ")" : "");
    store_settlement o;
    settlement_of_attempt(r, a, job, &o);
    o.host = job->node;
    o.ended = end;
    o.kind = kind;
    o.to = to;
    o.objective = objective;
    o.cost = observed ? cost : NAN;
    o.infra = n_infra > 0;
    o.not_before = not_before;
    o.run_ended = to != RUNNER_RUN_PENDING ? end : NAN;
    o.stop_reason = early ? stop_reason : NULL;
    o.bound_objective = bound;
    o.bound_cost = bound_cost > 0 ? bound_cost : NAN;
    /* deterministic mode: the observation waits for its turn (release.c); a branch has none */
    o.observe = observed && !r->det && (!early || censored) && !a->parent;
    o.obs_output = to == RUNNER_RUN_SUCCEEDED || censored ? obs_y : NAN;
    o.obs_cost = obs_cost;
    o.obs_failed = to == RUNNER_RUN_FAILED;
    o.obs_t = now;
    o.event_kind = to == RUNNER_RUN_PENDING ? "retry" : runner_run_status_name(to);
    o.event_msg = msg;
    spawn sp = {r, a, cost, 0, 0};
    int spawns = to == RUNNER_RUN_SUCCEEDED && !a->parent && !r->det;
    o.then = spawns ? spawn_branches : NULL;
    o.then_ctx = &sp;
    if ((rc = store_settle_attempt(r->st, &o)))
        return rc;

    /* the store has it; now the optimizer (rebuilt from the store if we die right here) */
    double y = to == RUNNER_RUN_SUCCEEDED || censored ? obs_y : NAN;
    if ((rc = observe_settled(r, a, to, out, early, censored, y, obs_cost, cost)))
        return rc;
    if (observed && isfinite(cost))
        r->spent += cost;
    note_best(r, a, to, objective);
    ctl_set_status_count(r, RUNNER_RUN_RUNNING, to, a->parent != 0);
    a->overhead += runner_mono() - t0;
    record_overhead(r, a->overhead);
    ctl_progress(r, "%s", msg);
    ctl_branches_made(r, a->run_id, sp.n_new, sp.planned);

    drop_active(r, idx);
    return ST_OK;
}

/* ---- launching --------------------------------------------------------------------------- */

/* The environment of attempt a (br: a cooldown branch's templates, else NULL). */
static st_status build_env(runner *r, const active *a, const runner_branch_ctx *br, char ***envp)
{
    size_t n = r->cfg->n_env + 6;
    char **env = calloc(n, sizeof(char *));
    if (!env)
        return ST_ENOMEM;
    size_t k = 0;
    st_status rc = ST_OK;
    rc = br ? runner_command_expand_branch(r->cfg, r->cfg->env, r->cfg->n_env, 0, a->x_all, br,
                                           a->number, a->dir, env, &k)
            : runner_command_expand(r->cfg, r->cfg->env, r->cfg->n_env, 0, a->x_all,
                                    (uint64_t)a->run_id, a->number, a->dir, env, &k);
    char buf[4200];
    const char *fixed[4];
    char run[64], att[64], gpus[1024] = "";
    snprintf(buf, sizeof(buf), "SCALETUNE_METRICS_FILE=%s/metrics.jsonl", a->dir);
    snprintf(run, sizeof(run), "SCALETUNE_RUN_ID=%lld", (long long)a->run_id);
    snprintf(att, sizeof(att), "SCALETUNE_ATTEMPT=%u", a->number);
    fixed[0] = buf;
    fixed[1] = run;
    fixed[2] = att;
    fixed[3] = NULL;
    if (r->cfg->n_gpus) {
        /* slot s gets the s-th equal share of the GPU list */
        size_t per = r->cfg->n_gpus / r->cfg->slots, o = 0;
        o += (size_t)snprintf(gpus, sizeof(gpus), "CUDA_VISIBLE_DEVICES=");
        for (size_t g = 0; g < per && o < sizeof(gpus) - 16; g++)
            o += (size_t)snprintf(gpus + o, sizeof(gpus) - o, "%s%d", g ? "," : "",
                                  r->cfg->gpus[a->slot * per + g]);
        fixed[3] = gpus;
    }
    for (size_t i = 0; i < 4 && !rc && fixed[i]; i++)
        if (!(env[k++] = strdup(fixed[i])))
            rc = ST_ENOMEM;
    char rd[4200];
    snprintf(rd, sizeof(rd), "SCALETUNE_RUN_DIR=%s", a->dir);
    if (!rc && !(env[k++] = strdup(rd)))
        rc = ST_ENOMEM;
    *envp = env;
    return rc;
}

static void free_strv(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

/* The backend could not be reached and submitted nothing: the newest attempt is abandoned
 * without charging the run (back to pending, as if never launched), and launching pauses for a
 * while that doubles while the backend stays away. */
static st_status unlaunch(runner *r, const char *why)
{
    assert(r->n_act > 0); /* the attempt just recorded by launch_run */
    active *a = &r->act[r->n_act - 1];
    double b = r->launch_pause > 0 ? 2 * r->launch_pause : r->cfg->backoff_seconds;
    if (b > r->cfg->backoff_max_seconds)
        b = r->cfg->backoff_max_seconds;
    if (b < 0.1)
        b = 0.1;
    r->launch_pause = b;
    r->launch_pause_until = runner_mono() + b;
    char msg[ST_ERRMSG_MAX + 96];
    snprintf(msg, sizeof(msg), "run %lld attempt %u not submitted (%s); launching again in %gs",
             (long long)a->run_id, a->number, why, b);
    st_status rc =
        store_abandon_attempt(r->st, r->sweep, a->run_id, a->attempt_id, runner_now(), msg);
    if (rc)
        return rc;
    ctl_set_status_count(r, RUNNER_RUN_RUNNING, RUNNER_RUN_PENDING, a->parent != 0);
    if (a->number > 1 && r->n_retried)
        r->n_retried--;
    drop_active(r, r->n_act - 1);
    ctl_progress(r, "%s", msg);
    return ST_OK;
}

/* A cooldown branch's templates (NULL for a suggestion): its parent, the parent's {_checkpoint}
 * (template.c's path for the parent's run directory, into ck), its checkpoint and decay steps. */
static runner_branch_ctx *branch_ctx(const runner *r, const active *a, const store_queued *q,
                                     char *ck, size_t cap, runner_branch_ctx *bc)
{
    if (!a->parent)
        return NULL;
    snprintf(ck, cap, "%s/%s/run-%lld/checkpoint", r->log_dir, r->cfg->name, (long long)a->parent);
    *bc = (runner_branch_ctx){(uint64_t)a->parent, ck, (uint64_t)q->branch_step,
                              (uint64_t)q->decay_steps};
    return bc;
}

/* The command of attempt a into argv (cfg->argc + cfg->br_argc + 1 slots): the sweep's, and for
 * a cooldown branch (br not NULL) the parent's with branches.args appended. */
static st_status build_argv(runner *r, const active *a, const runner_branch_ctx *br, char **argv)
{
    const runner_config *cfg = r->cfg;
    size_t n = 0, m = 0;
    if (!br)
        return runner_command_expand(cfg, cfg->argv, cfg->argc, 1, a->x_all, (uint64_t)a->run_id,
                                     a->number, a->dir, argv, &n);
    st_status rc = runner_command_expand_branch(cfg, cfg->argv, cfg->argc, 1, a->x_all, br,
                                                a->number, a->dir, argv, &n);
    if (!rc)
        rc = runner_command_expand_branch(cfg, cfg->br_argv, cfg->br_argc, 1, a->x_all, br,
                                          a->number, a->dir, argv + n, &m);
    return rc;
}

/* The attempt's node until the backend says where it ran (Slurm, at its end). */
static void attempt_host(const runner *r, char *host, size_t cap)
{
    const char *node = r->node[0] ? r->node : getenv("SCALETUNE_NODE");
    if (node && *node)
        snprintf(host, cap, "%s", node);
    else
        gethostname(host, cap - 1);
}

/* Launches run `run_id` (x_all copied) in a free slot: one transaction records the attempt as
 * launching before anything starts, a second one its job id. q: the queued run (a cooldown
 * branch when q->parent), NULL for a new suggestion. */
static st_status launch_run(runner *r, int64_t run_id, const double *x_all, double predicted,
                            uint64_t carbs_id, unsigned number, runner_run_status from,
                            const store_queued *q)
{
    if (r->opts.pause_hook)
        r->opts.pause_hook("launch", r->opts.pause_data);
    double t0 = runner_mono();
    /* launch_some fills free slots only: one is free, and the search stays inside slot_busy */
    assert(r->n_act < r->cfg->slots);
    size_t slot = 0;
    while (r->slot_busy[slot])
        slot++;
    assert(slot < r->cfg->slots);
    active *a = &r->act[r->n_act];
    memset(a, 0, sizeof(*a));
    a->run_id = run_id;
    a->number = number;
    a->slot = slot;
    a->predicted_cost = predicted;
    a->bound = r->next_bound;
    a->phase = r->next_phase;
    r->next_bound = NAN;
    r->next_phase = -1;
    a->carbs_id = carbs_id;
    a->parent = q ? q->parent : 0;
    a->max_cost = NAN;
    a->x_all = malloc(r->cfg->n_params * sizeof(double));
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/%s/run-%lld/attempt-%u", r->log_dir, r->cfg->name,
             (long long)run_id, number);
    a->dir = strdup(dir);
    if (!a->x_all || !a->dir) {
        free(a->x_all);
        free(a->dir);
        return ST_ENOMEM;
    }
    memcpy(a->x_all, x_all, r->cfg->n_params * sizeof(double));
    a->started = a->last_metric = runner_now();

    char host[64] = "";
    attempt_host(r, host, sizeof(host));
    store_launch l = {run_id, number, r->be->name, host, dir, slot, a->started};
    /* the quarantined nodes as the store has them now: a node quarantined a moment ago, or
     * under an earlier controller of this sweep, is excluded from this job on */
    char *exclude = NULL;
    st_status rc = store_quarantine_list(r->st, r->sweep, &exclude);
    if (!rc)
        rc = store_launch_attempt(r->st, &l, &a->attempt_id);
    if (rc) {
        free(exclude);
        free(a->x_all);
        free(a->dir);
        return rc;
    }
    ctl_set_status_count(r, from, RUNNER_RUN_RUNNING, a->parent != 0);
    if (number > 1)
        r->n_retried++;
    r->slot_busy[slot] = 1;
    r->n_act++;

    /* from here the attempt is in the store: any failure is the attempt's, not ours */
    char **argv = calloc(r->cfg->argc + r->cfg->br_argc + 1, sizeof(char *)), **env = NULL;
    char em[ST_ERRMSG_MAX] = "", parent_ck[4200];
    runner_branch_ctx bc, *br = branch_ctx(r, a, q, parent_ck, sizeof(parent_ck), &bc);
    rc = argv ? ST_OK : ST_ENOMEM;
    if (!rc)
        rc = build_argv(r, a, br, argv);
    if (!rc)
        rc = build_env(r, a, br, &env);
    if (!rc && mkdir_p(dir) != 0)
        rc = st_errf(em, ST_EBACKEND, "cannot create %s: %s", dir, strerror(errno));
    if (!rc) {
        runner_job_spec spec = {argv, env, r->cfg->workdir, dir, exclude, r->opts.supervisor};
        rc = r->be->submit(r->be_state, &spec, a->job_id, sizeof(a->job_id), em);
    }
    free(exclude);
    free_strv(argv);
    free_strv(env);
    if (rc == ST_ENOMEM)
        return rc;
    if (rc == ST_ENETWORK)
        return unlaunch(r, em);
    r->launch_pause = 0;
    if (rc) {
        /* the run could not start: settle it as a launch failure (retried with backoff) */
        runner_job job;
        memset(&job, 0, sizeof(job));
        job.job_id = a->job_id;
        job.dir = a->dir;
        job.state = RUNNER_JOB_LOST;
        job.ended = job.started = NAN;
        snprintf(job.reason, sizeof(job.reason), "%s", em);
        a->kill_reason = RUNNER_FAIL_LAUNCH;
        snprintf(r->errmsg, sizeof(r->errmsg), "%s", em);
        rc = settle(r, r->n_act - 1, &job);
        r->errmsg[0] = '\0';
        return rc;
    }
    /* the job id reaches the store with the attempt's next write (metrics or its end); a
     * controller dying before that finds the attempt 'launching' and adopts it from files */
    a->overhead += runner_mono() - t0;
    ctl_progress(r, "launched run %lld attempt %u", (long long)run_id, number);
    return ST_OK;
}

/* Fills free slots: retries and resumed runs first, then new suggestions. */
static st_status launch_some(runner *r, int *changed)
{
    double *x_all = malloc(r->cfg->n_params * sizeof(double));
    if (!x_all)
        return ST_ENOMEM;
    st_status rc = ST_OK;
    while (!rc && !r->stopping && r->n_act < r->cfg->slots &&
           runner_mono() >= r->launch_pause_until) {
        int64_t run_id = 0;
        uint64_t cid = 0;
        double predicted = NAN;
        unsigned number = 1;
        int from_queue = 0;
        store_queued q;
        r->next_bound = NAN; /* known only for a new suggestion */
        r->next_phase = -1;
        if (r->n_status[RUNNER_RUN_PENDING] > 0) {
            if ((rc = store_next_pending(r->st, r->sweep, runner_now(), r->generation,
                                         r->cfg->n_params, x_all, &q)))
                break;
            if (q.found) {
                run_id = q.run_id;
                cid = q.carbs_id;
                predicted = q.predicted;
                number = q.number;
                from_queue = 1;
            }
        }
        if (!from_queue) {
            int ok = 0;
            if ((rc = ctl_may_suggest(r, &ok)) || !ok)
                break;
            rc = ctl_new_suggestion(r, x_all, &run_id, &cid, &predicted);
            if (rc)
                break;
            *changed = 1;
            if (!run_id) {
                if (++r->refusals >= MAX_REFUSALS_ROW)
                    rc = st_errf(r->errmsg, ST_ESTATE,
                                 "%d suggestions in a row were above budget.max_cost_per_run; "
                                 "move the parameters' centres towards cheaper runs",
                                 MAX_REFUSALS_ROW);
                continue;
            }
            r->refusals = 0;
        }
        rc = launch_run(r, run_id, x_all, predicted, cid, number, RUNNER_RUN_PENDING,
                        from_queue ? &q : NULL);
        *changed = 1;
    }
    free(x_all);
    return rc;
}

/* ---- the loop ---------------------------------------------------------------------------- */

static void kill_attempt(runner *r, active *a, runner_failure why, double now)
{
    if (a->kill_stage)
        return;
    if (store_fence_check(r->st))
        return; /* the lease is another controller's now: so is this attempt */
    char em[ST_ERRMSG_MAX];
    if (r->be->cancel(r->be_state, a->job_id, a->dir, r->cfg->kill_grace_seconds <= 0, em))
        return; /* not signalable yet: the next poll tries again */
    a->kill_reason = why;
    a->kill_stage = 1;
    a->kill_at = now + r->cfg->kill_grace_seconds;
}

static void check_limits(runner *r, active *a, double now)
{
    if (a->kill_stage) {
        if (a->kill_stage == 1 && now >= a->kill_at && !store_fence_check(r->st)) {
            char em[ST_ERRMSG_MAX];
            if (!r->be->cancel(r->be_state, a->job_id, a->dir, 1, em))
                a->kill_stage = 2;
        }
        return;
    }
    double elapsed = now - a->started;
    double cost = ctl_cost_is_wall(r) ? elapsed : a->max_cost;
    if (r->stopping)
        kill_attempt(r, a, RUNNER_FAIL_STOPPED, now);
    else if (cost > r->cfg->max_cost_per_run)
        kill_attempt(r, a, RUNNER_FAIL_OVER_BUDGET, now);
    else if (r->cfg->straggler_factor > 0 && isfinite(a->predicted_cost) && a->predicted_cost > 0 &&
             cost > r->cfg->straggler_factor * a->predicted_cost)
        kill_attempt(r, a, RUNNER_FAIL_STRAGGLER, now);
    else if (elapsed > r->cfg->wall_seconds)
        kill_attempt(r, a, RUNNER_FAIL_WALL_TIMEOUT, now);
    else if (now - a->last_metric > r->cfg->no_metrics_seconds)
        kill_attempt(r, a, RUNNER_FAIL_HANG, now);
}

static st_status heartbeat(runner *r)
{
    double m = runner_mono();
    double every = r->opts.lease_seconds / 3 < HEARTBEAT_SECONDS ? r->opts.lease_seconds / 3
                                                                 : HEARTBEAT_SECONDS;
    if (m - r->last_beat < every)
        return ST_OK;
    r->last_beat = m;
    st_status rc = store_lease_beat(r->st, r->sweep, r->owner, r->opts.lease_seconds);
    if (rc)
        return rc;
    int stop = 0;
    if ((rc = store_stop_requested(r->st, r->sweep, &stop)))
        return rc;
    if (stop)
        r->stopping = 1;
    return ST_OK;
}

static st_status step(runner *r, int *done, int *changed)
{
    st_status rc;
    *done = 0;
    r->errmsg[0] = '\0';
    r->st->errmsg[0] = '\0';
    if (r->opts.stop_flag && *r->opts.stop_flag && !r->stopping) {
        r->stopping = 1;
        ctl_progress(r, "stopping: no new runs; running attempts are stopped");
    }
    if ((rc = heartbeat(r)))
        return fail_store(r, rc);

    /* poll every attempt in one batch, then settle the finished ones */
    if (r->n_act) {
        for (size_t i = 0; i < r->n_act; i++) {
            r->jobs[i].job_id = r->act[i].job_id;
            r->jobs[i].dir = r->act[i].dir;
        }
        for (size_t i = 0; i < r->n_act; i++) {
            r->jobs[i].failure = RUNNER_FAIL_NONE;
            r->jobs[i].ended = NAN;
            r->jobs[i].started = NAN;
            r->jobs[i].node[0] = '\0';
            r->jobs[i].reason[0] = '\0';
        }
        char em[ST_ERRMSG_MAX] = "";
        rc = r->be->poll(r->be_state, r->jobs, r->n_act, em);
        if (rc == ST_ENETWORK) {
            /* the scheduler is away (restarting, unreachable): jobs keep running, files still
             * settle the finished ones; say so once per outage */
            if (!r->backend_down)
                ctl_progress(r, "backend unreachable, waiting: %s", em);
            r->backend_down = 1;
        } else if (rc) {
            snprintf(r->errmsg, sizeof(r->errmsg), "%s", em);
            return rc;
        } else if (r->backend_down) {
            r->backend_down = 0;
            ctl_progress(r, "backend reachable again");
        }
        double now = runner_now();
        /* walk backwards: settle() moves the last attempt into the freed place */
        for (size_t i = r->n_act; i-- > 0;) {
            runner_job job = r->jobs[i];
            active *a = &r->act[i];
            if (job.state != RUNNER_JOB_RUNNING) {
                rc = settle(r, i, &job);
                *changed = 1;
            } else {
                double t0 = runner_mono();
                int stop = 0;
                rc = tail(r, a);
                if (!rc)
                    rc = es_check(r, a, &stop);
                a->overhead += runner_mono() - t0;
                if (!rc)
                    check_limits(r, a, now);
                if (!rc && stop && !a->final_line) /* a finished run is not stopped */
                    kill_attempt(r, a, RUNNER_FAIL_STOPPED, now);
            }
            if (rc)
                return fail_store(r, rc);
        }
    }
    if ((rc = launch_some(r, changed)))
        return fail_store(r, rc);
    if (r->n_act == 0 &&
        (r->stopping || (r->n_status[RUNNER_RUN_PENDING] == 0 && !ctl_can_suggest(r)))) {
        int all = 0; /* the sweep is over: what is still held reaches the optimizer and store */
        if (!r->stopping && (rc = ctl_release_upto(r, r->n_runs, &all)))
            return fail_store(r, rc);
        if (!r->stopping && r->n_status[RUNNER_RUN_PENDING] > 0)
            return ST_OK; /* the release queued cooldown branches: they run first */
        r->finished = !r->stopping || (r->n_status[RUNNER_RUN_PENDING] == 0 &&
                                       r->n_status[RUNNER_RUN_STOPPED] == 0 && !ctl_budget_left(r));
        *done = 1;
        ctl_progress(r, r->finished ? "sweep finished"
                                    : "sweep stopped; 'scaletune sweep resume' "
                                      "goes on");
        if (r->streak_stop) /* stopped because the trainer cannot work: an error (streak.c) */
            return st_errf(r->errmsg, ST_EBACKEND, "%s", r->streak_msg);
    }
    return ST_OK;
}

st_status runner_step(runner *r, int *done)
{
    int changed = 0;
    return step(r, done, &changed);
}

st_status runner_run(runner *r)
{
    for (;;) {
        int done = 0, changed = 0;
        st_status rc = step(r, &done, &changed);
        if (rc || done)
            return rc;
        if (!changed) {
            double s = r->opts.poll_seconds;
            struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
            nanosleep(&ts, NULL);
        }
    }
}
