/*
 * store_attempt.c — the controller's writes and reads of runs and attempts, as named store
 * calls: launching an attempt, recording its metric lines and read offsets, settling it (the
 * attempt, the run, an early stop, the observation and the event in one transaction),
 * abandoning one the backend never took, the next queued run, the stop request. The controller
 * decides what happens (controller.c); these only write it, each transaction fenced by the
 * lease (store_begin). Not the schema or the lease (store.c), not the read side (store_query.c,
 * store_read.c). Depends on SQLite.
 */
#include "runner/runner_int.h"

#include <assert.h>
#include <math.h>
#include <string.h>

/* Binds v to parameter i when it is finite; the parameter stays NULL otherwise. */
static void bind_finite(sqlite3_stmt *st, int i, double v)
{
    if (isfinite(v))
        sqlite3_bind_double(st, i, v);
}

st_status store_launch_attempt(runner_store *s, const store_launch *l, int64_t *attempt_id)
{
    assert(l->run_id > 0 && l->number >= 1);
    st_status rc = store_begin(s);
    if (rc)
        return rc;
    sqlite3_stmt *st = store_stmt(s, "INSERT INTO attempts(run_id, number, state, backend, "
                                     "host, dir, slot, started) VALUES(?1, ?2, 'launching',"
                                     " ?3, ?4, ?5, ?6, ?7)");
    if (!st)
        goto db;
    sqlite3_bind_int64(st, 1, l->run_id);
    sqlite3_bind_int(st, 2, (int)l->number);
    sqlite3_bind_text(st, 3, l->backend, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, l->host, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, l->dir, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)l->slot);
    sqlite3_bind_double(st, 7, l->started);
    if ((rc = store_exec_stmt(s, st, "recording an attempt")))
        goto out;
    *attempt_id = sqlite3_last_insert_rowid(s->db);
    st = store_stmt(s, "UPDATE runs SET status = 1, n_attempts = n_attempts + 1 WHERE id = ?1");
    if (!st)
        goto db;
    sqlite3_bind_int64(st, 1, l->run_id);
    if ((rc = store_exec_stmt(s, st, "marking a run running")))
        goto out;
    return store_commit(s);
db:
    rc = ST_EDB;
out:
    store_rollback(s);
    return rc;
}

st_status store_record_metric(runner_store *s, int64_t attempt_id, int event, int64_t step,
                              double t, const char *line, size_t len)
{
    sqlite3_stmt *st = store_stmt(s, "INSERT INTO metric_points(attempt_id, event, step, t, "
                                     "line) VALUES(?1, ?2, ?3, ?4, ?5)");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, attempt_id);
    sqlite3_bind_int(st, 2, event);
    if (step >= 0)
        sqlite3_bind_int64(st, 3, step);
    sqlite3_bind_double(st, 4, t);
    sqlite3_bind_text(st, 5, line, (int)len, SQLITE_TRANSIENT);
    return store_exec_stmt(s, st, "recording a metric");
}

st_status store_attempt_progress(runner_store *s, const store_progress *p)
{
    assert(p->off[0] >= 0 && p->off[1] >= 0 && p->n_lines >= 0 && p->n_garbage >= 0);
    sqlite3_stmt *st =
        store_stmt(s, "UPDATE attempts SET out_off = ?2, mf_off = ?3, n_lines = ?4, n_garbage = ?5,"
                      " last_metric = ?6, max_cost = ?7, diverged = ?8, final = ?9,"
                      " state = 'running', job_id = ?10 WHERE id = ?1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, p->attempt_id);
    sqlite3_bind_int64(st, 2, p->off[0]);
    sqlite3_bind_int64(st, 3, p->off[1]);
    sqlite3_bind_int64(st, 4, p->n_lines);
    sqlite3_bind_int64(st, 5, p->n_garbage);
    sqlite3_bind_double(st, 6, p->last_metric);
    if (!isnan(p->max_cost))
        sqlite3_bind_double(st, 7, p->max_cost);
    sqlite3_bind_int(st, 8, p->diverged);
    if (p->final_line)
        sqlite3_bind_text(st, 9, p->final_line, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 10, p->job_id, -1, SQLITE_TRANSIENT);
    return store_exec_stmt(s, st, "recording metrics offsets");
}

st_status store_run_infra_count(runner_store *s, int64_t run_id, unsigned *n_infra)
{
    sqlite3_stmt *st = store_stmt(s, "SELECT n_infra FROM runs WHERE id = ?1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, run_id);
    *n_infra = sqlite3_step(st) == SQLITE_ROW ? (unsigned)sqlite3_column_int(st, 0) : 0;
    sqlite3_reset(st);
    return ST_OK;
}

st_status store_settle_attempt(runner_store *s, const store_settlement *o)
{
    /* an observation is of an ended run, with all its parameters */
    assert(!o->observe || (o->to != RUNNER_RUN_PENDING && o->x && o->n_x > 0));
    assert(o->event_kind && o->event_msg);
    st_status rc = store_begin(s);
    if (rc)
        return rc;
    sqlite3_stmt *st = store_stmt(s, "UPDATE attempts SET state = 'done', ended = ?2, "
                                     "exit_code = ?3, signal = ?4, failure = ?5, "
                                     "job_id = coalesce(?6, job_id), "
                                     "host = coalesce(?7, host) WHERE id = ?1");
    if (!st)
        goto db;
    sqlite3_bind_int64(st, 1, o->attempt_id);
    sqlite3_bind_double(st, 2, o->ended);
    if (o->has_exit_code)
        sqlite3_bind_int(st, 3, o->exit_code);
    if (o->has_signal)
        sqlite3_bind_int(st, 4, o->signal);
    sqlite3_bind_int(st, 5, (int)o->kind);
    if (o->job_id && o->job_id[0])
        sqlite3_bind_text(st, 6, o->job_id, -1, SQLITE_TRANSIENT);
    if (o->host && o->host[0])
        sqlite3_bind_text(st, 7, o->host, -1, SQLITE_TRANSIENT);
    if ((rc = store_exec_stmt(s, st, "settling an attempt")))
        goto out;

    st = store_stmt(s, "UPDATE runs SET status = ?2, failure = ?3, objective = ?4, cost = ?5,"
                       " final = ?6, n_infra = n_infra + ?7, not_before = ?8, ended = ?9"
                       " WHERE id = ?1");
    if (!st)
        goto db;
    sqlite3_bind_int64(st, 1, o->run_id);
    sqlite3_bind_int(st, 2, (int)o->to);
    sqlite3_bind_int(st, 3, (int)o->kind);
    bind_finite(st, 4, o->objective);
    bind_finite(st, 5, o->cost);
    if (o->final_line)
        sqlite3_bind_text(st, 6, o->final_line, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 7, o->infra ? 1 : 0);
    sqlite3_bind_double(st, 8, o->not_before);
    bind_finite(st, 9, o->run_ended);
    if ((rc = store_exec_stmt(s, st, "settling a run")))
        goto out;

    if (o->stop_reason) {
        st = store_stmt(s, "UPDATE runs SET stop_reason = ?2, bound_objective = ?3,"
                           " bound_cost = ?4 WHERE id = ?1");
        if (!st)
            goto db;
        sqlite3_bind_int64(st, 1, o->run_id);
        sqlite3_bind_text(st, 2, o->stop_reason, -1, SQLITE_TRANSIENT);
        bind_finite(st, 3, o->bound_objective);
        bind_finite(st, 4, o->bound_cost);
        if ((rc = store_exec_stmt(s, st, "recording an early stop")))
            goto out;
    }

    if (o->observe) {
        st = store_stmt(s, "INSERT INTO observations(sweep_id, run_id, x, output, cost, "
                           "failed, t) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
        if (!st)
            goto db;
        sqlite3_bind_int64(st, 1, o->sweep);
        sqlite3_bind_int64(st, 2, o->run_id);
        sqlite3_bind_blob(st, 3, o->x, (int)(o->n_x * sizeof(double)), SQLITE_TRANSIENT);
        bind_finite(st, 4, o->obs_output);
        bind_finite(st, 5, o->obs_cost);
        sqlite3_bind_int(st, 6, o->obs_failed);
        sqlite3_bind_double(st, 7, o->obs_t);
        if ((rc = store_exec_stmt(s, st, "recording an observation")))
            goto out;
    }
    if ((rc = store_event(s, o->sweep, o->run_id, o->attempt_id, o->event_kind, o->event_msg)))
        goto out;
    if (o->then && (rc = o->then(o->then_ctx)))
        goto out;
    return store_commit(s);
db:
    rc = ST_EDB;
out:
    store_rollback(s);
    return rc;
}

st_status store_requeue_run(runner_store *s, int64_t run_id)
{
    return store_exec_ids(s,
                          "UPDATE runs SET status = 0, n_attempts = n_attempts - 1 WHERE id = ?1",
                          "requeueing a run", 1, &run_id);
}

st_status store_abandon_attempt(runner_store *s, int64_t sweep, int64_t run_id, int64_t attempt_id,
                                double ended, const char *msg)
{
    st_status rc = store_begin(s);
    if (rc)
        return rc;
    sqlite3_stmt *st =
        store_stmt(s, "UPDATE attempts SET state = 'abandoned', ended = ?2 WHERE id = ?1");
    if (!st) {
        store_rollback(s);
        return ST_EDB;
    }
    sqlite3_bind_int64(st, 1, attempt_id);
    sqlite3_bind_double(st, 2, ended);
    rc = store_exec_stmt(s, st, "abandoning an attempt");
    if (!rc)
        rc = store_requeue_run(s, run_id);
    if (!rc)
        rc = store_event(s, sweep, run_id, attempt_id, "backend", msg);
    if (!rc)
        return store_commit(s);
    store_rollback(s);
    return rc;
}

st_status store_next_pending(runner_store *s, int64_t sweep, double now, int64_t generation,
                             size_t n_params, double *x, store_queued *q)
{
    memset(q, 0, sizeof(*q));
    q->predicted = NAN;
    sqlite3_stmt *st = store_stmt(s, "SELECT id, x, carbs_id, generation, predicted_cost, "
                                     "n_attempts, coalesce(parent_run, 0), coalesce(branch_step, "
                                     "0), coalesce(decay_steps, 0) FROM runs WHERE sweep_id = ?1 "
                                     "AND status = 0 "
                                     "AND not_before <= ?2 ORDER BY not_before, id LIMIT 1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, sweep);
    sqlite3_bind_double(st, 2, now);
    st_status rc = ST_OK;
    if (sqlite3_step(st) == SQLITE_ROW) {
        q->found = 1;
        q->run_id = sqlite3_column_int64(st, 0);
        if ((size_t)sqlite3_column_bytes(st, 1) == n_params * sizeof(double))
            memcpy(x, sqlite3_column_blob(st, 1), n_params * sizeof(double));
        else
            rc = st_errf(s->errmsg, ST_EFORMAT, "store: run %lld has bad parameters",
                         (long long)q->run_id);
        /* an optimizer id means something only to the generation that issued it */
        if (sqlite3_column_int64(st, 3) == generation)
            q->carbs_id = (uint64_t)sqlite3_column_int64(st, 2);
        q->predicted =
            sqlite3_column_type(st, 4) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 4);
        q->number = (unsigned)sqlite3_column_int(st, 5) + 1;
        q->parent = sqlite3_column_int64(st, 6);
        q->branch_step = sqlite3_column_int64(st, 7);
        q->decay_steps = sqlite3_column_int64(st, 8);
        if (q->parent)
            q->carbs_id = 0; /* never the optimizer's */
    }
    sqlite3_reset(st);
    if (rc || !q->found)
        return rc;
    /* numbers stay unique: count attempts recorded, including abandoned ones */
    st = store_stmt(s, "SELECT coalesce(max(number), 0) FROM attempts WHERE run_id = ?1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, q->run_id);
    if (sqlite3_step(st) == SQLITE_ROW)
        q->number = (unsigned)sqlite3_column_int(st, 0) + 1;
    sqlite3_reset(st);
    return ST_OK;
}

st_status store_stop_requested(runner_store *s, int64_t sweep, int *stop)
{
    sqlite3_stmt *st = store_stmt(s, "SELECT stop_requested FROM sweeps WHERE id = ?1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, sweep);
    *stop = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0);
    sqlite3_reset(st);
    return ST_OK;
}
