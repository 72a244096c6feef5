/*
 * load.c — reads one sweep for the report: runs and attempts from the store's JSON export
 * (runner_store_export_json, with each run's final record: model size and tokens), parameter
 * spaces, bounds and rounding from the stored sweep file (runner_config), and
 * the step records of the Pareto runs from the store's metric_points table, which the store API
 * does not export: that table is read through a separate read-only SQLite connection (schema
 * v2, docs/metrics-protocol.md for the line format). Nothing is written to the store.
 */
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_int.h"
#include "runner/runner.h"

static double jdouble(json_t *v)
{
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static char *dupstr(const char *s)
{
    return strdup(s ? s : "");
}

/* 0 success, 1 hyperparameter failure, 2 infrastructure failure, 3 unfinished or stopped. */
static int attempt_kind(const char *state, const char *failure)
{
    if (!failure || !strcmp(failure, "none"))
        return state && !strcmp(state, "done") ? 0 : 3;
    for (int f = 0; f <= RUNNER_FAIL_STOPPED; f++)
        if (!strcmp(failure, runner_failure_name((runner_failure)f))) {
            if (f == RUNNER_FAIL_STOPPED)
                return 3;
            return runner_failure_is_hyperparameter((runner_failure)f) ? 1 : 2;
        }
    return 2;
}

/* Appends the runs and attempts of one exported sweep (JSON text). */
static st_status add_runs(report *r, const char *js, int validation)
{
    json_error_t je;
    json_t *root = json_loads(js, 0, &je);
    if (!root)
        return st_errf(r->errmsg, ST_EDB, "store export is not JSON: %s", je.text);
    st_status rc = ST_OK;
    if (!validation) {
        r->sweep = dupstr(json_string_value(json_object_get(root, "sweep")));
        r->objective = dupstr(json_string_value(json_object_get(root, "objective")));
        r->goal = dupstr(json_string_value(json_object_get(root, "goal")));
        r->cost_metric = dupstr(json_string_value(json_object_get(root, "cost_metric")));
        if (!r->sweep || !r->objective || !r->goal || !r->cost_metric) {
            rc = ST_ENOMEM;
            goto done;
        }
        r->maximize = !strcmp(r->goal, "maximize");
    }
    json_t *runs = json_object_get(root, "runs");
    size_t n = json_array_size(runs), n_att = 0;
    for (size_t i = 0; i < n; i++)
        n_att += json_array_size(json_object_get(json_array_get(runs, i), "attempts"));
    rp_run *nr = realloc(r->runs, (r->n_runs + n + 1) * sizeof(*nr));
    if (!nr) {
        rc = ST_ENOMEM;
        goto done;
    }
    r->runs = nr;
    rp_attempt *na = realloc(r->att, (r->n_att + n_att + 1) * sizeof(*na));
    if (!na) {
        rc = ST_ENOMEM;
        goto done;
    }
    r->att = na;
    for (size_t i = 0; i < n; i++) {
        json_t *j = json_array_get(runs, i), *params = json_object_get(j, "params");
        rp_run *u = &r->runs[r->n_runs];
        memset(u, 0, sizeof(*u));
        u->id = (int64_t)json_integer_value(json_object_get(j, "suggestion_id"));
        u->status = dupstr(json_string_value(json_object_get(j, "status")));
        u->failure = dupstr(json_string_value(json_object_get(j, "failure")));
        u->x = malloc((r->n_params + 1) * sizeof(double));
        r->n_runs++; /* counted now so that destroy frees what was allocated */
        if (!u->status || !u->failure || !u->x) {
            rc = ST_ENOMEM;
            goto done;
        }
        for (size_t p = 0; p < r->n_params; p++)
            u->x[p] = jdouble(json_object_get(params, r->pnames[p]));
        u->objective = jdouble(json_object_get(j, "objective"));
        u->cost = jdouble(json_object_get(j, "cost"));
        json_t *fin = json_object_get(j, "final"); /* the final record: model size, tokens */
        u->N = jdouble(json_object_get(fin, "params"));
        u->D = jdouble(json_object_get(fin, "tokens"));
        json_t *atts = json_object_get(j, "attempts");
        u->n_attempts = json_array_size(atts);
        u->succeeded = !strcmp(u->status, "succeeded") && isfinite(u->objective) &&
                       isfinite(u->cost) && u->cost > 0;
        u->validation = validation;
        u->beyond = validation || (isfinite(u->cost) && u->cost > r->o.fit_max_cost);
        u->pred = u->pred_lo = u->pred_hi = u->pred_p = NAN;
        for (size_t k = 0; k < u->n_attempts; k++) {
            json_t *a = json_array_get(atts, k);
            rp_attempt *t = &r->att[r->n_att++];
            t->run = u->id;
            t->number = (int)json_integer_value(json_object_get(a, "number"));
            t->started = jdouble(json_object_get(a, "started"));
            t->ended = jdouble(json_object_get(a, "ended"));
            t->kind = attempt_kind(json_string_value(json_object_get(a, "state")),
                                   json_string_value(json_object_get(a, "failure")));
        }
    }
done:
    json_decref(root);
    return rc;
}

/* Parameter names (file order) and spaces from the stored sweep file. */
static st_status load_params(report *r, sqlite3 *db, const char *sweep)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT config FROM sweeps WHERE name = ?1", -1, &st, NULL))
        return st_errf(r->errmsg, ST_EDB, "%s: %s", r->db_path, sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, sweep, -1, SQLITE_STATIC);
    st_status rc = ST_OK;
    int src = sqlite3_step(st);
    if (src != SQLITE_ROW) {
        rc = src == SQLITE_DONE ? st_errf(r->errmsg, ST_ENOTFOUND, "no sweep '%s'", sweep)
                                : st_errf(r->errmsg, ST_EDB, "%s", sqlite3_errmsg(db));
        sqlite3_finalize(st);
        return rc;
    }
    const char *text = (const char *)sqlite3_column_text(st, 0);
    runner_config *cfg = NULL;
    char em[ST_ERRMSG_MAX];
    rc = runner_config_load_string(text ? text : "", text ? strlen(text) : 0, sweep, &cfg, em);
    sqlite3_finalize(st);
    if (rc)
        return st_errf(r->errmsg, rc == ST_ENOMEM ? ST_ENOMEM : ST_EDB,
                       "stored sweep file of '%s': %s", sweep, em);
    r->pnames = calloc(cfg->n_params + 1, sizeof(char *));
    r->pspace = calloc(cfg->n_params + 1, sizeof(int));
    r->pint = calloc(cfg->n_params + 1, sizeof(int));
    r->pmin = calloc(cfg->n_params + 1, sizeof(double));
    r->pmax = calloc(cfg->n_params + 1, sizeof(double));
    r->pround = calloc(cfg->n_params + 1, sizeof(double));
    if (!r->pnames || !r->pspace || !r->pint || !r->pmin || !r->pmax || !r->pround) {
        runner_config_destroy(cfg);
        return ST_ENOMEM;
    }
    for (size_t i = 0; i < cfg->n_params; i++) {
        r->pnames[i] = dupstr(cfg->params[i].p.name);
        r->n_params = i + 1;
        if (!r->pnames[i]) {
            runner_config_destroy(cfg);
            return ST_ENOMEM;
        }
        r->pspace[i] = cfg->params[i].is_fixed ? -1 : (int)cfg->params[i].p.space;
        r->pint[i] = cfg->params[i].p.is_integer;
        r->pmin[i] = cfg->params[i].p.min;
        r->pmax[i] = cfg->params[i].p.max;
        r->pround[i] = cfg->params[i].p.rounding > 0 ? cfg->params[i].p.rounding : 1;
    }
    runner_config_destroy(cfg);
    return ST_OK;
}

/* Step records ("loss") of the last attempt of each Pareto run. */
static st_status load_curves(report *r, sqlite3 *db)
{
    if (!r->n_front)
        return ST_OK;
    r->curves = calloc(r->n_front, sizeof(*r->curves));
    if (!r->curves)
        return ST_ENOMEM;
    for (size_t i = 0; i < r->n_front; i++)
        r->curves[i].run = r->runs[r->front[i]].id;
    r->n_curves = r->n_front;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT m.line FROM metric_points m JOIN attempts a ON a.id = "
                           "m.attempt_id WHERE a.run_id = ?1 AND m.event = 1 AND a.number = "
                           "(SELECT max(number) FROM attempts WHERE run_id = ?1) ORDER BY m.rowid",
                           -1, &st, NULL))
        return st_errf(r->errmsg, ST_EDB, "reading metric points: %s", sqlite3_errmsg(db));
    st_status rc = ST_OK;
    runner_metrics_line *l = malloc(sizeof(*l));
    if (!l) {
        sqlite3_finalize(st);
        return ST_ENOMEM;
    }
    for (size_t i = 0; i < r->n_curves && !rc; i++) {
        rp_curve *c = &r->curves[i];
        double *steps = NULL;
        size_t cap = 0;
        int all_cost = 1, src;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, c->run);
        while ((src = sqlite3_step(st)) == SQLITE_ROW) {
            const char *line = (const char *)sqlite3_column_text(st, 0);
            double y, cost;
            if (!line || runner_metrics_parse(line, strlen(line), l) != ST_OK ||
                !runner_metrics_get(l, "loss", &y) || !isfinite(y))
                continue;
            if (!runner_metrics_get(l, r->cost_metric, &cost) || !(cost > 0))
                all_cost = 0;
            if (c->n == cap) {
                cap = cap ? 2 * cap : 64;
                double *nx = realloc(c->x, cap * sizeof(double));
                if (nx)
                    c->x = nx;
                double *ny = realloc(c->y, cap * sizeof(double));
                if (ny)
                    c->y = ny;
                double *ns = realloc(steps, cap * sizeof(double));
                if (ns)
                    steps = ns;
                if (!nx || !ny || !ns) {
                    rc = ST_ENOMEM;
                    break;
                }
            }
            c->x[c->n] = cost;
            steps[c->n] = (double)l->step;
            c->y[c->n++] = y;
        }
        if (!rc && src != SQLITE_DONE)
            rc = st_errf(r->errmsg, ST_EDB, "reading metric points: %s", sqlite3_errmsg(db));
        /* the cost axis only when every record carries the cost metric */
        c->x_is_cost = all_cost && c->n > 0;
        if (!c->x_is_cost && c->n)
            memcpy(c->x, steps, c->n * sizeof(double));
        free(steps);
    }
    free(l);
    sqlite3_finalize(st);
    return rc;
}

st_status rp_load(report *r, const char *db_path, const char *sweep)
{
    char em[ST_ERRMSG_MAX];
    runner_store *s = NULL;
    sqlite3 *db = NULL;
    char *js = NULL;
    st_status rc = runner_store_open(db_path, &s, em);
    if (rc)
        return st_errf(r->errmsg, rc, "%s", em);

    /* the export first: it resolves a NULL sweep name and says "not found" */
    rc = runner_store_export_json(s, sweep, &js);
    if (rc) {
        st_errf(r->errmsg, rc, "%s", runner_store_errmsg(s));
        goto done;
    }
    {
        json_t *root = json_loads(js, 0, NULL);
        const char *name = json_string_value(json_object_get(root, "sweep"));
        r->sweep = dupstr(name);
        json_decref(root);
        if (!r->sweep) {
            rc = ST_ENOMEM;
            goto done;
        }
    }
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        rc = st_errf(r->errmsg, ST_EDB, "%s: %s", db_path, db ? sqlite3_errmsg(db) : "open");
        goto done;
    }
    sqlite3_busy_timeout(db, 10000);
    rc = load_params(r, db, r->sweep);
    if (rc)
        goto done;
    free(r->sweep);
    r->sweep = NULL;
    rc = add_runs(r, js, 0);
    if (rc)
        goto done;
    r->n_sweep_runs = r->n_runs;
    if (r->validate_sweep) {
        st_free(js);
        js = NULL;
        rc = runner_store_export_json(s, r->validate_sweep, &js);
        if (rc) {
            st_errf(r->errmsg, rc, "validation sweep: %s", runner_store_errmsg(s));
            goto done;
        }
        rc = add_runs(r, js, 1);
        if (rc)
            goto done;
    }

    /* the front of the fitted runs (the store's front covers every run of the sweep) */
    rc = rp_analyze(r);
    if (rc)
        goto done;
    rc = load_curves(r, db);
done:
    st_free(js);
    sqlite3_close(db);
    runner_store_close(s);
    return rc;
}
