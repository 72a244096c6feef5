/*
 * store_read.c — the typed read of a sweep: its stored sweep file, every run with its status,
 * failure kind, parameter values, objective, cost, final record's model size and tokens, and
 * attempts; and the step records of one run. study/ and report/ read a sweep only through
 * this, never through the tables or the JSON export. Writes nothing.
 */
#include "runner/runner_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double col_double(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

void runner_sweep_free(runner_sweep *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n_runs; i++) {
        free(w->runs[i].x);
        free(w->runs[i].att);
    }
    free(w->runs);
    runner_config_destroy(w->cfg);
    free(w);
}

/* The final record's model size ("params") and tokens ("tokens"), NAN when absent, and a
 * branch's parent ("branch":1 with a positive integral "parent_run"; else 0). */
static void read_final(sqlite3_stmt *st, int col, runner_sweep_run *u)
{
    u->final_N = u->final_D = NAN;
    u->parent = 0;
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return;
    const char *f = (const char *)sqlite3_column_text(st, col);
    runner_metrics_line fl;
    if (!f || runner_metrics_parse(f, strlen(f), &fl) != ST_OK)
        return;
    runner_metrics_get(&fl, "params", &u->final_N);
    runner_metrics_get(&fl, "tokens", &u->final_D);
    double branch = NAN, parent = NAN;
    runner_metrics_get(&fl, "branch", &branch);
    runner_metrics_get(&fl, "parent_run", &parent);
    if (branch == 1 && parent >= 1 && parent < 9e15 && parent == floor(parent))
        u->parent = (uint64_t)parent;
}

/* The parameter values of a run: the stored vector, or NAN where it does not fit the config. */
static void read_x(sqlite3_stmt *st, int col, const runner_config *cfg, double *x)
{
    const char *blob = sqlite3_column_blob(st, col);
    int ok = blob && (size_t)sqlite3_column_bytes(st, col) == cfg->n_params * sizeof(double);
    for (size_t i = 0; i < cfg->n_params; i++) {
        x[i] = NAN;
        if (ok)
            memcpy(&x[i], blob + i * sizeof(double), sizeof(double));
    }
}

static st_status read_attempts(runner_store *s, runner_sweep_run *u)
{
    sqlite3_stmt *st = store_stmt(s, "SELECT number, state, failure, started, ended FROM "
                                     "attempts WHERE run_id = ?1 ORDER BY number");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, (int64_t)u->id);
    size_t cap = 0;
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        if (u->n_att == cap) {
            cap = cap ? 2 * cap : 4;
            runner_sweep_attempt *na = realloc(u->att, cap * sizeof(*na));
            if (!na) {
                sqlite3_reset(st);
                return ST_ENOMEM;
            }
            u->att = na;
        }
        runner_sweep_attempt *a = &u->att[u->n_att++];
        a->number = sqlite3_column_int(st, 0);
        const char *state = (const char *)sqlite3_column_text(st, 1);
        snprintf(a->state, sizeof(a->state), "%s", state ? state : "");
        a->failure = (runner_failure)sqlite3_column_int(st, 2);
        a->started = col_double(st, 3);
        a->ended = col_double(st, 4);
    }
    sqlite3_reset(st);
    return src == SQLITE_DONE ? ST_OK : store_fail(s, src, "reading attempts");
}

static const char *const read_runs_sql =
    "SELECT id, status, failure, x, objective, cost, final, predicted_cost, "
    "stop_reason IS NOT NULL, bound_objective, bound_cost, parent_run FROM runs "
    "WHERE sweep_id = ?1 ORDER BY id";

static st_status read_runs(runner_store *s, int64_t sweep, runner_sweep *w)
{
    sqlite3_stmt *st = store_stmt(s, read_runs_sql);
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, sweep);
    size_t cap = 0;
    st_status rc = ST_OK;
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        if (w->n_runs == cap) {
            cap = cap ? 2 * cap : 64;
            runner_sweep_run *nr = realloc(w->runs, cap * sizeof(*nr));
            if (!nr) {
                rc = ST_ENOMEM;
                break;
            }
            w->runs = nr;
        }
        runner_sweep_run *u = &w->runs[w->n_runs];
        memset(u, 0, sizeof(*u));
        u->x = malloc((w->cfg->n_params + 1) * sizeof(double));
        w->n_runs++; /* counted now so that runner_sweep_free frees it */
        if (!u->x) {
            rc = ST_ENOMEM;
            break;
        }
        u->id = (uint64_t)sqlite3_column_int64(st, 0);
        u->status = (runner_run_status)sqlite3_column_int(st, 1);
        u->failure = (runner_failure)sqlite3_column_int(st, 2);
        read_x(st, 3, w->cfg, u->x);
        u->objective = col_double(st, 4);
        u->cost = col_double(st, 5);
        read_final(st, 6, u);
        u->predicted_cost = col_double(st, 7);
        u->stopped_early = u->status == RUNNER_RUN_STOPPED && sqlite3_column_int(st, 8);
        u->bound_objective = col_double(st, 9);
        u->bound_cost = col_double(st, 10);
        if (sqlite3_column_type(st, 11) != SQLITE_NULL) /* a branch the controller spawned */
            u->parent = (uint64_t)sqlite3_column_int64(st, 11);
    }
    if (!rc && src != SQLITE_DONE)
        rc = store_fail(s, src, "reading runs");
    sqlite3_reset(st);
    for (size_t i = 0; i < w->n_runs && !rc; i++)
        rc = read_attempts(s, &w->runs[i]);
    return rc;
}

st_status runner_store_read_sweep(runner_store *s, const char *sweep, runner_sweep **out)
{
    if (!s || !out)
        return ST_EINVAL;
    *out = NULL;
    s->errmsg[0] = '\0';
    int64_t id;
    char *text = NULL;
    st_status rc = store_find_sweep(s, sweep, &id, &text);
    if (rc)
        return rc;
    runner_sweep *w = calloc(1, sizeof(*w));
    if (!w) {
        free(text);
        return ST_ENOMEM;
    }
    char em[ST_ERRMSG_MAX];
    rc = runner_config_load_string(text, strlen(text), "stored sweep file", &w->cfg, em);
    free(text);
    if (rc) {
        runner_sweep_free(w);
        return rc == ST_ENOMEM ? ST_ENOMEM : st_errf(s->errmsg, ST_EDB, "%s", em);
    }
    rc = store_sweep_workdir(s, id, w->cfg);
    if (!rc)
        rc = read_runs(s, id, w);
    if (rc) {
        runner_sweep_free(w);
        return rc == ST_ENOMEM ? st_errf(s->errmsg, rc, "out of memory reading the sweep") : rc;
    }
    *out = w;
    return ST_OK;
}

/* Grows the three curve arrays to hold `cap` points. */
static int curve_grow(size_t cap, double **steps, double **values, double **costs)
{
    double *a = realloc(*steps, cap * sizeof(double));
    if (a)
        *steps = a;
    double *b = realloc(*values, cap * sizeof(double));
    if (b)
        *values = b;
    double *c = realloc(*costs, cap * sizeof(double));
    if (c)
        *costs = c;
    return a && b && c;
}

st_status runner_store_run_curve(runner_store *s, uint64_t run, const char *metric,
                                 const char *cost_metric, size_t *n, double **steps,
                                 double **values, double **costs)
{
    *n = 0;
    *steps = *values = *costs = NULL;
    sqlite3_stmt *st =
        store_stmt(s, "SELECT m.line FROM metric_points m JOIN attempts a ON a.id = "
                      "m.attempt_id WHERE a.run_id = ?1 AND m.event IN (1, 2) AND a.number = "
                      "(SELECT max(number) FROM attempts WHERE run_id = ?1) ORDER BY m.rowid");
    if (!st)
        return ST_EDB;
    runner_metrics_line *l = malloc(sizeof(*l));
    if (!l)
        return ST_ENOMEM;
    sqlite3_bind_int64(st, 1, (int64_t)run);
    size_t cap = 0;
    st_status rc = ST_OK;
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        const char *line = (const char *)sqlite3_column_text(st, 0);
        double y, c = NAN;
        if (!line || runner_metrics_parse(line, strlen(line), l) != ST_OK ||
            !runner_metrics_get(l, metric, &y) || !isfinite(y))
            continue;
        if (cost_metric && !runner_metrics_get(l, cost_metric, &c))
            c = NAN;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            if (!curve_grow(cap, steps, values, costs)) {
                rc = ST_ENOMEM;
                break;
            }
        }
        (*steps)[*n] = l->step >= 0 ? (double)l->step : NAN;
        (*values)[*n] = y;
        (*costs)[(*n)++] = c;
    }
    if (!rc && src != SQLITE_ROW && src != SQLITE_DONE)
        rc = store_fail(s, src, "reading metric points");
    sqlite3_reset(st);
    free(l);
    if (rc || *n == 0) {
        free(*steps);
        free(*values);
        free(*costs);
        *steps = *values = *costs = NULL;
        *n = 0;
    }
    return rc;
}
