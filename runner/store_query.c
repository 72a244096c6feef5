/*
 * store_query.c — what reads a sweep's store without owning it: status, the Pareto front,
 * JSON/CSV export (jansson for JSON), a stop request, and ask/tell for shell scripts (which
 * rebuild the optimizer from the store on every call). Depends on SQLite, jansson, carbs/.
 */
#include "runner/runner_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void clear(runner_store *s)
{
    s->errmsg[0] = '\0';
}

static double col_double(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

/* The runs that ended on a malformed final record (a configuration error of the trainer) and
 * the event of the last one, which quotes the record (runner.h, runner_status). */
static st_status status_bad_final(runner_store *s, int64_t id, runner_status *out)
{
    static const char *const q[2] = {
        "SELECT count(*) FROM runs WHERE sweep_id = ?1 AND status = ?2 AND failure = ?3",
        /* only when there is one: events has no index by run */
        "SELECT e.message FROM runs q JOIN events e ON e.run_id = q.id WHERE q.sweep_id = ?1 "
        "AND q.status = ?2 AND q.failure = ?3 AND e.kind = 'infra_failed' ORDER BY e.id DESC "
        "LIMIT 1",
    };
    for (int i = 0; i < 2 && (i == 0 || out->n_bad_final); i++) {
        sqlite3_stmt *st = store_stmt(s, q[i]);
        if (!st)
            return ST_EDB;
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int(st, 2, RUNNER_RUN_INFRA_FAILED);
        sqlite3_bind_int(st, 3, RUNNER_FAIL_BAD_FINAL);
        int src = sqlite3_step(st);
        if (src == SQLITE_ROW && i == 0)
            out->n_bad_final = (size_t)sqlite3_column_int64(st, 0);
        if (src == SQLITE_ROW && i == 1)
            snprintf(out->bad_final, sizeof(out->bad_final), "%s", store_col_text(st, 0));
        sqlite3_reset(st);
        if (src != SQLITE_ROW && src != SQLITE_DONE)
            return store_fail(s, src, "status");
    }
    return ST_OK;
}

st_status runner_store_status(runner_store *s, const char *sweep, runner_status *out)
{
    clear(s);
    memset(out, 0, sizeof(*out));
    int64_t id;
    char *text = NULL;
    st_status rc = store_find_sweep(s, sweep, &id, &text);
    if (rc)
        return rc;
    runner_config *cfg = NULL;
    char em[ST_ERRMSG_MAX];
    rc = runner_config_load_string(text, strlen(text), "stored config", &cfg, em);
    free(text);
    if (rc)
        return st_errf(s->errmsg, rc, "%s", em);
    snprintf(out->name, sizeof(out->name), "%s", cfg->name);
    out->maximize = cfg->maximize;
    out->budget_runs = cfg->budget_runs;
    out->budget_cost = cfg->budget_cost;
    out->max_cost_per_run = cfg->max_cost_per_run;
    runner_config_destroy(cfg);

    sqlite3_stmt *st = store_stmt(s, "SELECT status, count(*), sum(n_attempts), sum(cost), "
                                     "parent_run IS NOT NULL FROM runs WHERE sweep_id = ?1 "
                                     "GROUP BY status, parent_run IS NOT NULL");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, id);
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        int k = sqlite3_column_int(st, 0), branch = sqlite3_column_int(st, 4);
        size_t n = (size_t)sqlite3_column_int64(st, 1), a = (size_t)sqlite3_column_int64(st, 2);
        if (k >= 0 && k < 6)
            (branch ? out->n_branch_by_status : out->n_by_status)[k] = n;
        *(branch ? &out->n_branches : &out->n_runs) += n;
        out->n_attempts += a;
        out->n_retried += a > n ? a - n : 0;
        if (sqlite3_column_type(st, 3) != SQLITE_NULL)
            out->spent_cost += sqlite3_column_double(st, 3);
    }
    sqlite3_reset(st);
    if (src != SQLITE_DONE)
        return store_fail(s, src, "status");
    st = store_stmt(s, out->maximize
                           ? "SELECT id, objective, cost FROM runs WHERE sweep_id = ?1 AND "
                             "status = 2 AND parent_run IS NULL ORDER BY objective DESC, cost "
                             "LIMIT 1"
                           : "SELECT id, objective, cost FROM runs WHERE sweep_id = ?1 AND "
                             "status = 2 AND parent_run IS NULL ORDER BY objective ASC, cost "
                             "LIMIT 1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) == SQLITE_ROW) {
        out->has_best = 1;
        out->best_run = (uint64_t)sqlite3_column_int64(st, 0);
        out->best_objective = col_double(st, 1);
        out->best_cost = col_double(st, 2);
    }
    sqlite3_reset(st);
    st = store_stmt(s, "SELECT coalesce(sum(a.n_garbage), 0) FROM attempts a JOIN runs r "
                       "ON r.id = a.run_id WHERE r.sweep_id = ?1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) == SQLITE_ROW)
        out->n_garbage = (size_t)sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    st = store_stmt(s, "SELECT w.stop_requested, w.created, (SELECT max(ended) FROM runs "
                       "WHERE sweep_id = w.id) FROM sweeps w WHERE w.id = ?1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, id);
    out->created = out->last_ended = NAN;
    if (sqlite3_step(st) == SQLITE_ROW) {
        out->stop_requested = sqlite3_column_int(st, 0);
        out->created = col_double(st, 1);
        out->last_ended = col_double(st, 2);
    }
    sqlite3_reset(st);
    if ((rc = status_bad_final(s, id, out)))
        return rc;
    return store_lease_state(s, id, out->controller, sizeof(out->controller), &out->heartbeat,
                             &out->controller_alive);
}

st_status runner_store_pareto(runner_store *s, const char *sweep, size_t cap, size_t *n,
                              uint64_t *run_ids, double *cost, double *objective)
{
    clear(s);
    *n = 0;
    int64_t id;
    char *text = NULL;
    st_status rc = store_find_sweep(s, sweep, &id, &text);
    if (rc)
        return rc;
    int maximize = strstr(text, "maximize") != NULL; /* refined below from the config */
    runner_config *cfg = NULL;
    if (runner_config_load_string(text, strlen(text), "stored config", &cfg, NULL) == ST_OK)
        maximize = cfg->maximize;
    runner_config_destroy(cfg);
    free(text);
    /* by cost, and among equal costs the best first, so that ties add one point */
    sqlite3_stmt *st = store_stmt(s, maximize ? "SELECT id, cost, objective FROM runs WHERE "
                                                "sweep_id = ?1 AND status = 2 AND cost IS NOT "
                                                "NULL AND parent_run IS NULL ORDER BY cost, "
                                                "objective DESC, id"
                                              : "SELECT id, cost, objective FROM runs WHERE "
                                                "sweep_id = ?1 AND status = 2 AND cost IS NOT "
                                                "NULL AND parent_run IS NULL ORDER BY cost, "
                                                "objective, id");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, id);
    int have = 0, src;
    double best = 0;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        double o = col_double(st, 2);
        if (isnan(o) || (have && (maximize ? o <= best : o >= best)))
            continue;
        have = 1;
        best = o;
        if (*n < cap) {
            if (run_ids)
                run_ids[*n] = (uint64_t)sqlite3_column_int64(st, 0);
            if (cost)
                cost[*n] = sqlite3_column_double(st, 1);
            if (objective)
                objective[*n] = o;
        }
        (*n)++;
    }
    sqlite3_reset(st);
    return src == SQLITE_DONE ? ST_OK : store_fail(s, src, "pareto");
}

st_status runner_store_request_stop(runner_store *s, const char *sweep)
{
    clear(s);
    int64_t id;
    st_status rc = store_find_sweep(s, sweep, &id, NULL);
    if (rc)
        return rc;
    if ((rc = store_begin(s)))
        return rc;
    sqlite3_stmt *st = store_stmt(s, "UPDATE sweeps SET stop_requested = 1 WHERE id = ?1");
    if (!st) {
        store_rollback(s);
        return ST_EDB;
    }
    sqlite3_bind_int64(st, 1, id);
    rc = store_exec_stmt(s, st, "requesting a stop");
    if (!rc)
        rc = store_event(s, id, 0, 0, "stop", "stop requested");
    if (rc) {
        store_rollback(s);
        return rc;
    }
    return store_commit(s);
}

/* ---- export ------------------------------------------------------------------------------ */

typedef struct export_ctx {
    runner_store *s;
    int64_t sweep;
    runner_config *cfg;
} export_ctx;

static st_status export_open(runner_store *s, const char *sweep, export_ctx *e)
{
    clear(s);
    memset(e, 0, sizeof(*e));
    e->s = s;
    char *text = NULL;
    st_status rc = store_find_sweep(s, sweep, &e->sweep, &text);
    if (rc)
        return rc;
    char em[ST_ERRMSG_MAX];
    rc = runner_config_load_string(text, strlen(text), "stored config", &e->cfg, em);
    free(text);
    return rc ? st_errf(s->errmsg, rc, "%s", em) : ST_OK;
}

static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static const char *const runs_sql =
    "SELECT id, status, failure, x, objective, cost, final, n_attempts, predicted_cost, "
    "stop_reason, bound_objective, parent_run, branch_step, decay_steps FROM runs "
    "WHERE sweep_id = ?1 ORDER BY id";

st_status runner_store_export_json(runner_store *s, const char *sweep, char **out)
{
    export_ctx e;
    *out = NULL;
    st_status rc = export_open(s, sweep, &e);
    if (rc)
        return rc;
    json_t *root = json_object(), *runs = json_array();
    json_object_set_new(root, "sweep", json_string(e.cfg->name));
    json_object_set_new(root, "objective", json_string(e.cfg->objective));
    json_object_set_new(root, "goal", json_string(e.cfg->maximize ? "maximize" : "minimize"));
    json_object_set_new(root, "cost_metric", json_string(e.cfg->cost_metric));
    json_object_set_new(root, "runs", runs);
    sqlite3_stmt *st = store_stmt(s, runs_sql);
    sqlite3_stmt *at = NULL;
    int src = SQLITE_ERROR;
    if (!st)
        goto done;
    sqlite3_bind_int64(st, 1, e.sweep);
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *run = json_object(), *params = json_object(), *atts = json_array();
        int64_t rid = sqlite3_column_int64(st, 0);
        json_object_set_new(run, "suggestion_id", json_integer(rid));
        json_object_set_new(run, "status",
                            json_string(runner_run_status_name(sqlite3_column_int(st, 1))));
        json_object_set_new(run, "failure",
                            json_string(runner_failure_name(sqlite3_column_int(st, 2))));
        const double *x = sqlite3_column_blob(st, 3);
        if ((size_t)sqlite3_column_bytes(st, 3) == e.cfg->n_params * sizeof(double))
            for (size_t i = 0; i < e.cfg->n_params; i++) {
                const runner_param_spec *ps = &e.cfg->params[i];
                double v;
                memcpy(&v, (const char *)x + i * sizeof(double), sizeof(double));
                const char *ch = runner_param_choice(ps, v);
                json_object_set_new(params, ps->p.name,
                                    ch ? json_string(ch)
                                    : ps->is_fixed && isnan(ps->fixed_value)
                                        ? json_string(ps->fixed_text)
                                        : (ps->p.is_integer && !ps->is_fixed && isfinite(v)
                                               ? json_integer((json_int_t)llround(v))
                                               : jnum(v)));
            }
        json_object_set_new(run, "params", params);
        json_object_set_new(run, "objective", jnum(col_double(st, 4)));
        json_object_set_new(run, "cost", jnum(col_double(st, 5)));
        json_object_set_new(run, "predicted_cost", jnum(col_double(st, 8)));
        if (sqlite3_column_type(st, 9) != SQLITE_NULL) { /* stopped early */
            json_object_set_new(run, "stop_reason",
                                json_string((const char *)sqlite3_column_text(st, 9)));
            json_object_set_new(run, "bound_objective", jnum(col_double(st, 10)));
        }
        if (sqlite3_column_type(st, 11) != SQLITE_NULL) { /* a cooldown branch */
            json_object_set_new(run, "parent_run", json_integer(sqlite3_column_int64(st, 11)));
            json_object_set_new(run, "branch_step", json_integer(sqlite3_column_int64(st, 12)));
            json_object_set_new(run, "decay_steps", json_integer(sqlite3_column_int64(st, 13)));
        }
        double N = NAN, D = NAN;
        if (sqlite3_column_type(st, 6) != SQLITE_NULL) {
            runner_metrics_line fl;
            const char *f = (const char *)sqlite3_column_text(st, 6);
            json_t *fin = json_object();
            if (runner_metrics_parse(f, strlen(f), &fl) == ST_OK) {
                for (size_t i = 0; i < fl.n_metrics; i++)
                    json_object_set_new(fin, fl.metrics[i].name, jnum(fl.metrics[i].value));
                runner_metrics_get(&fl, "params", &N);
                runner_metrics_get(&fl, "tokens", &D);
            }
            json_object_set_new(run, "final", fin);
        }
        /* the model size and tokens of the final record, as scaletune fit reads them */
        json_object_set_new(run, "N", jnum(N));
        json_object_set_new(run, "D", jnum(D));
        at = store_stmt(s, "SELECT number, state, backend, job_id, host, dir, started, ended, "
                           "exit_code, signal, failure, n_lines, n_garbage FROM attempts "
                           "WHERE run_id = ?1 ORDER BY number");
        if (!at) { /* run owns params (set_new took the reference); atts is not in it yet */
            json_decref(run);
            json_decref(atts);
            src = SQLITE_ERROR;
            break;
        }
        sqlite3_bind_int64(at, 1, rid);
        while (sqlite3_step(at) == SQLITE_ROW) {
            json_t *a = json_object();
            json_object_set_new(a, "number", json_integer(sqlite3_column_int(at, 0)));
            json_object_set_new(a, "state", json_string((const char *)sqlite3_column_text(at, 1)));
            json_object_set_new(a, "backend",
                                json_string((const char *)sqlite3_column_text(at, 2)));
            if (sqlite3_column_type(at, 3) != SQLITE_NULL)
                json_object_set_new(a, "job_id",
                                    json_string((const char *)sqlite3_column_text(at, 3)));
            if (sqlite3_column_type(at, 4) != SQLITE_NULL)
                json_object_set_new(a, "host",
                                    json_string((const char *)sqlite3_column_text(at, 4)));
            json_object_set_new(a, "dir", json_string((const char *)sqlite3_column_text(at, 5)));
            json_object_set_new(a, "started", jnum(col_double(at, 6)));
            json_object_set_new(a, "ended", jnum(col_double(at, 7)));
            if (sqlite3_column_type(at, 8) != SQLITE_NULL)
                json_object_set_new(a, "exit_code", json_integer(sqlite3_column_int(at, 8)));
            if (sqlite3_column_type(at, 9) != SQLITE_NULL)
                json_object_set_new(a, "signal", json_integer(sqlite3_column_int(at, 9)));
            json_object_set_new(a, "failure",
                                json_string(runner_failure_name(sqlite3_column_int(at, 10))));
            json_object_set_new(a, "metric_lines", json_integer(sqlite3_column_int64(at, 11)));
            json_object_set_new(a, "garbage_lines", json_integer(sqlite3_column_int64(at, 12)));
            json_array_append_new(atts, a);
        }
        sqlite3_reset(at);
        json_object_set_new(run, "attempts", atts);
        json_array_append_new(runs, run);
    }
    sqlite3_reset(st);
done:
    if (src == SQLITE_DONE) {
        *out = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        rc = *out ? ST_OK : ST_ENOMEM;
    } else {
        rc = st ? store_fail(s, src, "export") : ST_EDB;
    }
    json_decref(root);
    runner_config_destroy(e.cfg);
    return rc;
}

/* A growing string. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_add(sbuf *b, const char *s)
{
    size_t l = strlen(s);
    if (b->oom)
        return;
    if (b->n + l + 1 > b->cap) {
        size_t nc = (b->n + l + 1) * 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, l + 1);
    b->n += l;
}

static void sb_num(sbuf *b, double v)
{
    char t[40] = "";
    if (isfinite(v))
        snprintf(t, sizeof(t), "%.17g", v);
    sb_add(b, t);
}

/* The names of the fields of every final record of the sweep, in first-seen order (a "\n"-
 * separated list in *names, n of them). */
static st_status final_fields(runner_store *s, int64_t sweep, sbuf *names, size_t *n)
{
    *n = 0;
    sqlite3_stmt *st = store_stmt(s, "SELECT final FROM runs WHERE sweep_id = ?1 AND final IS "
                                     "NOT NULL ORDER BY id");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, sweep);
    int src;
    sb_add(names, "\n");
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        runner_metrics_line fl;
        const char *f = store_col_text(st, 0);
        if (runner_metrics_parse(f, strlen(f), &fl) != ST_OK)
            continue;
        for (size_t i = 0; i < fl.n_metrics; i++) {
            char key[RUNNER_METRIC_NAME_MAX + 2];
            snprintf(key, sizeof(key), "\n%s\n", fl.metrics[i].name);
            if (names->oom || strstr(names->p, key))
                continue;
            sb_add(names, key + 1);
            (*n)++;
        }
    }
    sqlite3_reset(st);
    if (names->oom)
        return ST_ENOMEM;
    return src == SQLITE_DONE ? ST_OK : store_fail(s, src, "export");
}

/* The header: fixed columns, parameters, N and D (final_N/final_D when a parameter already has
 * that name), then final.<field> for every final-record field. */
static void csv_header(sbuf *b, const runner_config *cfg, const char *fields, int *nd_clash)
{
    sb_add(b, "suggestion_id,status,failure,objective,cost,attempts");
    *nd_clash = 0;
    for (size_t i = 0; i < cfg->n_params; i++) {
        sb_add(b, ",");
        sb_add(b, cfg->params[i].p.name);
        *nd_clash |= !strcmp(cfg->params[i].p.name, "N") || !strcmp(cfg->params[i].p.name, "D");
    }
    sb_add(b, *nd_clash ? ",final_N,final_D" : ",N,D");
    for (const char *p = fields + 1; *p;) {
        const char *e = strchr(p, '\n');
        char name[RUNNER_METRIC_NAME_MAX + 8];
        snprintf(name, sizeof(name), ",final.%.*s", (int)(e - p), p);
        sb_add(b, name);
        p = e + 1;
    }
    sb_add(b, "\n");
}

/* One row's N, D and final fields (empty cells where absent). */
static void csv_final(sbuf *b, const char *final, const char *fields)
{
    runner_metrics_line fl;
    int ok = final && runner_metrics_parse(final, strlen(final), &fl) == ST_OK;
    double v = NAN;
    sb_add(b, ",");
    if (ok && runner_metrics_get(&fl, "params", &v))
        sb_num(b, v);
    sb_add(b, ",");
    if (ok && runner_metrics_get(&fl, "tokens", &v))
        sb_num(b, v);
    for (const char *p = fields + 1; *p;) {
        const char *e = strchr(p, '\n');
        char name[RUNNER_METRIC_NAME_MAX];
        snprintf(name, sizeof(name), "%.*s", (int)(e - p), p);
        sb_add(b, ",");
        if (ok && runner_metrics_get(&fl, name, &v))
            sb_num(b, v);
        p = e + 1;
    }
}

st_status runner_store_export_csv(runner_store *s, const char *sweep, char **out)
{
    export_ctx e;
    *out = NULL;
    st_status rc = export_open(s, sweep, &e);
    if (rc)
        return rc;
    sbuf b = {0}, fields = {0};
    size_t n_fields = 0;
    int clash = 0;
    rc = final_fields(s, e.sweep, &fields, &n_fields);
    if (rc) {
        free(fields.p);
        runner_config_destroy(e.cfg);
        return rc;
    }
    csv_header(&b, e.cfg, fields.p, &clash);
    sqlite3_stmt *st = store_stmt(s, runs_sql);
    int src = SQLITE_ERROR;
    if (st) {
        sqlite3_bind_int64(st, 1, e.sweep);
        while ((src = sqlite3_step(st)) == SQLITE_ROW) {
            char t[64];
            snprintf(t, sizeof(t), "%lld,", (long long)sqlite3_column_int64(st, 0));
            sb_add(&b, t);
            sb_add(&b, runner_run_status_name(sqlite3_column_int(st, 1)));
            sb_add(&b, ",");
            sb_add(&b, runner_failure_name(sqlite3_column_int(st, 2)));
            sb_add(&b, ",");
            sb_num(&b, col_double(st, 4));
            sb_add(&b, ",");
            sb_num(&b, col_double(st, 5));
            snprintf(t, sizeof(t), ",%d", sqlite3_column_int(st, 7));
            sb_add(&b, t);
            const char *x = sqlite3_column_blob(st, 3);
            int ok = (size_t)sqlite3_column_bytes(st, 3) == e.cfg->n_params * sizeof(double);
            for (size_t i = 0; i < e.cfg->n_params; i++) {
                double v = NAN;
                if (ok)
                    memcpy(&v, x + i * sizeof(double), sizeof(double));
                sb_add(&b, ",");
                if (e.cfg->params[i].is_fixed && isnan(e.cfg->params[i].fixed_value))
                    sb_add(&b, e.cfg->params[i].fixed_text);
                else if (runner_param_choice(&e.cfg->params[i], v))
                    sb_add(&b, runner_param_choice(&e.cfg->params[i], v));
                else
                    sb_num(&b, v);
            }
            csv_final(&b, (const char *)sqlite3_column_text(st, 6), fields.p);
            sb_add(&b, "\n");
        }
        sqlite3_reset(st);
    }
    free(fields.p);
    runner_config_destroy(e.cfg);
    if (src != SQLITE_DONE || b.oom) {
        free(b.p);
        return b.oom ? ST_ENOMEM : st ? store_fail(s, src, "export") : ST_EDB;
    }
    *out = b.p;
    return ST_OK;
}
