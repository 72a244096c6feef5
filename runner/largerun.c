/*
 * largerun.c — the large run in the store (runner/largerun.h): restarts and lost time read from
 * the attempt rows and metric points (the trainer's {"event":"checkpoint","step":S} records say
 * where each attempt could have been resumed from), and alerts kept as event rows of kind
 * "alert:KIND" with the step in the message ("step S: ..."): no schema change; and
 * runner_restart_run, which stops an attempt as an infrastructure failure so that the
 * controller's retry resumes it (through {_resume}) from its checkpoint.
 */
#include "runner/largerun.h"
#include "runner/controller_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct att {
    int64_t id;
    double started, ended; /* ended NAN while running */
    int failure;
    int64_t first, last; /* its first and last step records, -1 when none */
    int64_t ck;          /* its last checkpoint record's step, -1 when none */
    double t_ck;         /* when that record was read, NAN when none */
} att;

static double col_or_nan(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

/* 1 if `line` is a checkpoint record ({"event":"checkpoint",...}). */
static int is_checkpoint(const char *line)
{
    json_t *j = json_loads(line, 0, NULL);
    const char *ev = json_string_value(json_object_get(j, "event"));
    int yes = ev && !strcmp(ev, "checkpoint");
    json_decref(j);
    return yes;
}

/* The last checkpoint record of attempt `id`: its step and time (-1, NAN: none). */
static st_status last_checkpoint(runner_store *s, int64_t id, int64_t *step, double *t)
{
    *step = -1;
    *t = NAN;
    sqlite3_stmt *st = store_stmt(s, "SELECT step, t, line FROM metric_points WHERE attempt_id = ?1"
                                     " AND event = 5 AND line LIKE '%checkpoint%' AND step >= 0"
                                     " ORDER BY rowid DESC");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, id);
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW)
        if (is_checkpoint((const char *)sqlite3_column_text(st, 2))) {
            *step = sqlite3_column_int64(st, 0);
            *t = sqlite3_column_double(st, 1);
            break;
        }
    sqlite3_reset(st);
    return src == SQLITE_ROW || src == SQLITE_DONE ? ST_OK
                                                   : store_fail(s, src, "reading checkpoints");
}

/* The first and last step records of attempt `id` (-1 when it has none). */
static st_status step_range(runner_store *s, int64_t id, int64_t *first, int64_t *last)
{
    *first = *last = -1;
    sqlite3_stmt *st = store_stmt(s, "SELECT min(step), max(step) FROM metric_points"
                                     " WHERE attempt_id = ?1 AND event = 1 AND step >= 0");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, id);
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        *first = sqlite3_column_int64(st, 0);
        *last = sqlite3_column_int64(st, 1);
    }
    sqlite3_reset(st);
    return src == SQLITE_ROW ? ST_OK : store_fail(s, src, "reading steps");
}

static st_status read_attempts(runner_store *s, int64_t run, att **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = store_stmt(s, "SELECT id, started, ended, failure FROM attempts"
                                     " WHERE run_id = ?1 ORDER BY number");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, run);
    size_t cap = 0;
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            att *na = realloc(*out, cap * sizeof(att));
            if (!na) {
                sqlite3_reset(st);
                return ST_ENOMEM;
            }
            *out = na;
        }
        att *a = &(*out)[(*n)++];
        a->id = sqlite3_column_int64(st, 0);
        a->started = sqlite3_column_double(st, 1);
        a->ended = col_or_nan(st, 2);
        a->failure = sqlite3_column_int(st, 3);
    }
    sqlite3_reset(st);
    return src == SQLITE_DONE ? ST_OK : store_fail(s, src, "reading attempts");
}

/* The step the first attempt after i with step records resumed from (the one before its first
 * step record), -1 when none has any: what was really kept of attempt i, even when it was
 * killed between writing a checkpoint and printing its record. */
static int64_t resumed_after(const att *a, size_t n, size_t i)
{
    for (size_t j = i + 1; j < n; j++)
        if (a[j].first > 0)
            return a[j].first - 1;
    return -1;
}

/* Lost work, lost steps and downtime of the attempts a[0..n-1] of one run, in order. */
static st_status add_losses(runner_store *s, att *a, size_t n, runner_large_summary *o)
{
    for (size_t i = 0; i < n; i++) {
        st_status rc = step_range(s, a[i].id, &a[i].first, &a[i].last);
        if (!rc)
            rc = last_checkpoint(s, a[i].id, &a[i].ck, &a[i].t_ck);
        if (rc)
            return rc;
        if (a[i].last > o->last_step)
            o->last_step = a[i].last;
    }
    for (size_t i = 0; i < n; i++) {
        runner_failure f = (runner_failure)a[i].failure;
        if (f == RUNNER_FAIL_NONE || runner_failure_is_hyperparameter(f) ||
            f == RUNNER_FAIL_OVER_BUDGET || isnan(a[i].ended))
            continue; /* finished, ended the run (not restarted), or still running */
        o->n_failed++;
        double from = isnan(a[i].t_ck) || a[i].t_ck < a[i].started ? a[i].started : a[i].t_ck;
        if (a[i].ended > from)
            o->lost_work_seconds += a[i].ended - from;
        int64_t kept = resumed_after(a, n, i);
        if (kept < 0) /* no later steps (yet): its own start or last checkpoint record */
            kept = a[i].ck > a[i].first - 1 ? a[i].ck : a[i].first - 1;
        if (a[i].last > kept)
            o->lost_steps += a[i].last - kept;
        if (i + 1 < n && a[i + 1].started > a[i].ended)
            o->downtime_seconds += a[i + 1].started - a[i].ended;
    }
    o->lost_seconds = o->lost_work_seconds + o->downtime_seconds;
    return ST_OK;
}

st_status runner_store_large_run(runner_store *s, const char *sweep, runner_large_summary *out)
{
    s->errmsg[0] = '\0';
    memset(out, 0, sizeof(*out));
    out->last_step = -1;
    out->final_objective = NAN;
    int64_t id;
    st_status rc = store_find_sweep(s, sweep, &id, NULL);
    if (rc)
        return rc;
    sqlite3_stmt *st = store_stmt(s, "SELECT id, status, failure, objective FROM runs"
                                     " WHERE sweep_id = ?1 ORDER BY id DESC LIMIT 1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, id);
    int src = sqlite3_step(st);
    if (src != SQLITE_ROW) {
        sqlite3_reset(st);
        return src == SQLITE_DONE ? st_errf(s->errmsg, ST_ENOTFOUND, "the sweep has no run yet")
                                  : store_fail(s, src, "reading the run");
    }
    int64_t run = sqlite3_column_int64(st, 0);
    out->run = (uint64_t)run;
    out->status = (runner_run_status)sqlite3_column_int(st, 1);
    out->failure = (runner_failure)sqlite3_column_int(st, 2);
    out->has_final = out->status == RUNNER_RUN_SUCCEEDED;
    if (out->has_final)
        out->final_objective = col_or_nan(st, 3);
    sqlite3_reset(st);

    att *a = NULL;
    size_t n = 0;
    rc = read_attempts(s, run, &a, &n);
    if (!rc) {
        out->n_attempts = n;
        out->n_restarts = n > 0 ? n - 1 : 0;
        rc = add_losses(s, a, n, out);
    }
    free(a);
    if (!rc)
        rc = runner_store_alerts(s, sweep, 0, &out->n_alerts, NULL);
    return rc;
}

/* ---- alerts ------------------------------------------------------------------------------ */

static void alert_message(const runner_alert *a, char *buf, size_t cap)
{
    if (a->step >= 0)
        snprintf(buf, cap, "step %lld: %s", (long long)a->step, a->message);
    else
        snprintf(buf, cap, "%s", a->message);
}

/* 1 when an alert of a's run, kind and step is stored already (inside the caller's txn); one of
 * no step (-1) is not the same as one of a step (a NaN objective after a NaN step loss). An sdc
 * alert is the same only with the same whole message (msg): each one the trainer reports is a
 * failure of the node, even at the step of an earlier one. */
static st_status alert_exists(runner_store *s, int64_t sweep, const runner_alert *a,
                              const char *kind, const char *msg, int *yes)
{
    char prefix[300];
    int exact = !strcmp(a->kind, "sdc");
    if (exact)
        snprintf(prefix, sizeof(prefix), "%s", msg);
    else
        snprintf(prefix, sizeof(prefix), "step %lld: ", (long long)a->step);
    sqlite3_stmt *st = store_stmt(s, "SELECT count(*) FROM events WHERE sweep_id = ?1 AND"
                                     " kind = ?2 AND run_id = ?3 AND CASE WHEN ?6 THEN message = ?5"
                                     " WHEN ?4 < 0 THEN substr(message, 1, 5) <> 'step '"
                                     " ELSE substr(message, 1, length(?5)) = ?5 END");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, sweep);
    sqlite3_bind_text(st, 2, kind, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)a->run);
    sqlite3_bind_int64(st, 4, a->step);
    sqlite3_bind_text(st, 5, prefix, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 6, exact);
    int src = sqlite3_step(st);
    *yes = src == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0;
    sqlite3_reset(st);
    return src == SQLITE_ROW ? ST_OK : store_fail(s, src, "reading alerts");
}

st_status runner_store_add_alert(runner_store *s, const char *sweep, const runner_alert *a,
                                 int *added)
{
    s->errmsg[0] = '\0';
    if (added)
        *added = 0;
    int64_t id;
    st_status rc = store_find_sweep(s, sweep, &id, NULL);
    if (rc)
        return rc;
    char kind[40], msg[300];
    snprintf(kind, sizeof(kind), "alert:%s", a->kind);
    alert_message(a, msg, sizeof(msg));
    if ((rc = store_begin(s)))
        return rc;
    int yes = 0;
    rc = alert_exists(s, id, a, kind, msg, &yes);
    if (!rc && !yes)
        rc = store_event(s, id, (int64_t)a->run, 0, kind, msg);
    if (rc) {
        store_rollback(s);
        return rc;
    }
    if ((rc = store_commit(s)))
        return rc;
    if (added)
        *added = !yes;
    return ST_OK;
}

/* An event row back into an alert: the kind after "alert:", the step from "step S: ". */
static void alert_from_row(sqlite3_stmt *st, runner_alert *a)
{
    memset(a, 0, sizeof(*a));
    a->t = sqlite3_column_double(st, 0);
    a->run = (uint64_t)sqlite3_column_int64(st, 2);
    const char *k = (const char *)sqlite3_column_text(st, 1);
    const char *m = (const char *)sqlite3_column_text(st, 3);
    snprintf(a->kind, sizeof(a->kind), "%s", k && strlen(k) > 6 ? k + 6 : "");
    long long step;
    int used = 0;
    a->step = -1;
    if (m && sscanf(m, "step %lld: %n", &step, &used) == 1 && used > 0) {
        a->step = step;
        m += used;
    }
    snprintf(a->message, sizeof(a->message), "%s", m ? m : "");
}

st_status runner_store_alerts(runner_store *s, const char *sweep, size_t cap, size_t *n,
                              runner_alert *out)
{
    s->errmsg[0] = '\0';
    *n = 0;
    int64_t id;
    st_status rc = store_find_sweep(s, sweep, &id, NULL);
    if (rc)
        return rc;
    sqlite3_stmt *st = store_stmt(s, "SELECT t, kind, run_id, message FROM events"
                                     " WHERE sweep_id = ?1 AND kind LIKE 'alert:%' ORDER BY id");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, id);
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        if (out && *n < cap)
            alert_from_row(st, &out[*n]);
        (*n)++;
    }
    sqlite3_reset(st);
    return src == SQLITE_DONE ? ST_OK : store_fail(s, src, "reading alerts");
}

/* ---- restarting an attempt -------------------------------------------------------------- */

st_status runner_restart_run(runner *r, uint64_t run, unsigned attempt)
{
    r->errmsg[0] = '\0';
    for (size_t i = 0; i < r->n_act; i++) {
        active *a = &r->act[i];
        if ((uint64_t)a->run_id != run || (attempt && a->number != attempt))
            continue;
        if (a->kill_stage)
            return ST_OK; /* already on its way out */
        if (store_fence_check(r->st))
            return st_errf(r->errmsg, ST_EBUSY, "%s", runner_store_errmsg(r->st));
        char em[ST_ERRMSG_MAX];
        st_status rc =
            r->be->cancel(r->be_state, a->job_id, a->dir, r->cfg->kill_grace_seconds <= 0, em);
        if (rc == ST_EBUSY)
            return st_errf(r->errmsg, ST_ESTATE, "run %llu attempt %u cannot be signalled yet",
                           (unsigned long long)run, a->number);
        if (rc)
            return st_errf(r->errmsg, rc, "%s", em);
        /* as the controller's own kills (check_limits): SIGTERM now, SIGKILL after the grace */
        a->kill_reason = RUNNER_FAIL_NODE;
        a->kill_stage = 1;
        a->kill_at = runner_now() + r->cfg->kill_grace_seconds;
        return ST_OK;
    }
    return st_errf(r->errmsg, ST_ENOTFOUND, "run %llu has no attempt %u running",
                   (unsigned long long)run, attempt);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double runner_median_inplace(double *v, size_t n)
{
    if (!n)
        return NAN;
    qsort(v, n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
