/*
 * store_asktell.c — ask/tell against the store, for scripts and the Python binding: ask
 * rebuilds the optimizer (store_rebuild.c) and records the run it suggests as running, with an
 * optional expiry; tell records the outcome (and a final record: model size, tokens); record
 * adds a run that was not asked (an in-process optimizer's history written into a store).
 */
#include "runner/runner_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void clear(runner_store *s)
{
    s->errmsg[0] = '\0';
}

/* ---- ask / tell -------------------------------------------------------------------------- */

static st_status not_owned(runner_store *s, int64_t id)
{
    sqlite3_stmt *st = store_stmt(s, "SELECT owner FROM lease WHERE sweep_id = ?1 AND "
                                     "expires > ?2");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_double(st, 2, runner_now());
    st_status rc = ST_OK;
    if (sqlite3_step(st) == SQLITE_ROW)
        rc = st_errf(s->errmsg, ST_EBUSY, "a controller (%s) owns this sweep: stop it first",
                     sqlite3_column_text(st, 0));
    sqlite3_reset(st);
    return rc;
}

static st_status load_cfg(runner_store *s, const char *sweep, int64_t *id, runner_config **cfg)
{
    char *text = NULL, em[ST_ERRMSG_MAX];
    st_status rc = store_find_sweep(s, sweep, id, &text);
    if (!rc && (rc = runner_config_load_string(text, strlen(text), "stored config", cfg, em)))
        st_errf(s->errmsg, rc, "%s", em);
    free(text);
    return rc;
}

/* An asked run whose expiry has passed (its worker is presumed dead), the oldest, is handed
 * out again under its id with a new expiry: *found 1 and all (n_params values) its x. */
static st_status reissue_expired(runner_store *s, int64_t sweep, const runner_config *cfg,
                                 double ttl, uint64_t *run, double *all, int *found)
{
    *found = 0;
    double now = runner_now();
    sqlite3_stmt *st = store_stmt(s, "SELECT id, x FROM runs WHERE sweep_id = ?1 AND status = 1 "
                                     "AND expires IS NOT NULL AND expires <= ?2 ORDER BY id "
                                     "LIMIT 1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, sweep);
    sqlite3_bind_double(st, 2, now);
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW &&
        (size_t)sqlite3_column_bytes(st, 1) == cfg->n_params * sizeof(double)) {
        *run = (uint64_t)sqlite3_column_int64(st, 0);
        memcpy(all, sqlite3_column_blob(st, 1), cfg->n_params * sizeof(double));
        *found = 1;
    }
    sqlite3_reset(st);
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        return store_fail(s, src, "reading expired runs");
    if (!*found)
        return ST_OK;
    st = store_stmt(s, "UPDATE runs SET expires = ?2 WHERE id = ?1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, (int64_t)*run);
    if (ttl > 0 && isfinite(ttl))
        sqlite3_bind_double(st, 2, now + ttl);
    st_status rc = store_exec_stmt(s, st, "renewing an expired run");
    return rc ? rc : store_event(s, sweep, (int64_t)*run, 0, "reask", "expired: handed out again");
}

/* The oldest enqueued run not launched yet (runner_store_enqueue), handed out as this ask's
 * run: *found 1 and all (n_params values) its x. */
static st_status take_enqueued(runner_store *s, int64_t sweep, const runner_config *cfg, double ttl,
                               uint64_t *run, double *all, int *found)
{
    *found = 0;
    sqlite3_stmt *st = store_stmt(s, "SELECT id, x FROM runs WHERE sweep_id = ?1 AND status = 0 "
                                     "AND n_attempts = 0 AND parent_run IS NULL ORDER BY id "
                                     "LIMIT 1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, sweep);
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW &&
        (size_t)sqlite3_column_bytes(st, 1) == cfg->n_params * sizeof(double)) {
        *run = (uint64_t)sqlite3_column_int64(st, 0);
        memcpy(all, sqlite3_column_blob(st, 1), cfg->n_params * sizeof(double));
        *found = 1;
    }
    sqlite3_reset(st);
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        return store_fail(s, src, "reading enqueued runs");
    if (!*found)
        return ST_OK;
    st = store_stmt(s, "UPDATE runs SET status = 1, expires = ?2 WHERE id = ?1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, (int64_t)*run);
    if (ttl > 0 && isfinite(ttl))
        sqlite3_bind_double(st, 2, runner_now() + ttl);
    st_status rc = store_exec_stmt(s, st, "handing out an enqueued run");
    return rc ? rc : store_event(s, sweep, (int64_t)*run, 0, "ask", "an enqueued run");
}

/* Refuses an ask beyond the budget: the runs and the cost recorded (none of them expired:
 * an expired run is handed out again before a new one is made). */
static st_status check_budget(runner_store *s, int64_t sweep, const runner_config *cfg,
                              size_t *n_runs)
{
    sqlite3_stmt *st = store_stmt(s, "SELECT (SELECT count(*) FROM runs WHERE sweep_id = ?1 AND "
                                     "parent_run IS NULL),"
                                     " (SELECT coalesce(sum(cost), 0) FROM runs WHERE sweep_id ="
                                     " ?1) FROM sweeps WHERE id = ?1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, sweep);
    double spent = 0;
    *n_runs = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        *n_runs = (size_t)sqlite3_column_int64(st, 0);
        spent = sqlite3_column_double(st, 1);
    }
    sqlite3_reset(st);
    if ((cfg->budget_runs && *n_runs >= cfg->budget_runs) || spent >= cfg->budget_cost)
        return st_errf(s->errmsg, ST_ERANGE, "the sweep's budget is spent (%zu runs, cost %g)",
                       *n_runs, spent);
    return ST_OK;
}

st_status store_release_view(runner_store *s, int64_t sweep, size_t np, size_t cap,
                             size_t *n_released, double **pending, size_t *n_pending)
{
    *n_released = *n_pending = 0;
    if (!(*pending = malloc((cap ? cap : 1) * np * sizeof(double))))
        return ST_ENOMEM;
    sqlite3_stmt *st = store_stmt(s, "SELECT status, stop_reason IS NOT NULL, x FROM runs "
                                     "WHERE sweep_id = ?1 AND parent_run IS NULL ORDER BY id");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, sweep);
    int src, prefix = 1;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        int status = sqlite3_column_int(st, 0);
        int ended = status == RUNNER_RUN_SUCCEEDED || status == RUNNER_RUN_FAILED ||
                    status == RUNNER_RUN_INFRA_FAILED || sqlite3_column_int(st, 1);
        if (prefix && ended) {
            (*n_released)++;
            continue;
        }
        prefix = 0;
        if (*n_pending < cap && (size_t)sqlite3_column_bytes(st, 2) == np * sizeof(double))
            memcpy(*pending + np * (*n_pending)++, sqlite3_column_blob(st, 2), np * sizeof(double));
    }
    sqlite3_reset(st);
    return src == SQLITE_DONE ? ST_OK : store_fail(s, src, "reading runs");
}

/* Suggestion n_runs of a study-mode sweep from the store's proposer into all (n_params). */
static st_status ask_proposer(runner_store *s, int64_t sweep, const runner_config *cfg,
                              size_t n_runs, double *all)
{
    if (!s->propose)
        return st_errf(s->errmsg, ST_EINVAL,
                       "sweep '%s' is in study mode (optimizer.goal extrapolate): its "
                       "suggestions come from study/'s proposer, which this ask was not given "
                       "(C: runner_store_set_proposer(store, study_proposer, NULL); the CLI and "
                       "the Python binding install it)",
                       cfg->name);
    runner_propose_request q;
    memset(&q, 0, sizeof(q));
    double *pending = NULL;
    st_status rc =
        store_release_view(s, sweep, cfg->n_params, n_runs, &q.n_released, &pending, &q.n_pending);
    if (!rc) {
        q.cfg = cfg;
        q.db_path = sqlite3_db_filename(s->db, "main");
        q.sweep = cfg->name;
        q.index = n_runs;
        q.pending = pending;
        q.seed = runner_proposal_seed(cfg, n_runs);
        char em[ST_ERRMSG_MAX] = "";
        for (size_t i = 0; i < cfg->n_params; i++)
            all[i] = NAN;
        if ((rc = s->propose(s->propose_user, &q, all, em)))
            st_errf(s->errmsg, rc, "proposer (suggestion %zu): %s", n_runs,
                    em[0] ? em : st_strerror(rc));
        else
            rc = runner_proposal_finish(cfg, n_runs, all, s->errmsg);
    }
    free(pending);
    return rc;
}

/* Records the suggestion `all` as a running run asked for (inside the caller's transaction);
 * *run gets its id. */
static st_status record_ask(runner_store *s, int64_t sweep, const runner_config *cfg, double ttl,
                            uint64_t *run, const double *all)
{
    sqlite3_stmt *st = store_stmt(s, "INSERT INTO runs(sweep_id, status, x, created, expires) "
                                     "VALUES(?1, 1, ?2, ?3, ?4)");
    if (!st)
        return ST_EDB;
    double now = runner_now();
    sqlite3_bind_int64(st, 1, sweep);
    sqlite3_bind_blob(st, 2, all, (int)(cfg->n_params * sizeof(double)), SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 3, now);
    if (ttl > 0 && isfinite(ttl))
        sqlite3_bind_double(st, 4, now + ttl);
    st_status rc = store_exec_stmt(s, st, "recording an ask");
    if (rc)
        return rc;
    *run = (uint64_t)sqlite3_last_insert_rowid(s->db);
    int64_t ids[1] = {sweep};
    rc = store_exec_ids(s, "UPDATE sweeps SET n_asks = n_asks + 1 WHERE id = ?1", "counting asks",
                        1, ids);
    return rc ? rc : store_event(s, sweep, (int64_t)*run, 0, "ask", NULL);
}

/* A new suggestion recorded as a running run (inside the caller's transaction): from the
 * store's proposer in study mode, else from the rebuilt optimizer (or the grid or random
 * method's point). */
static st_status new_run(runner_store *s, int64_t sweep, const runner_config *cfg, size_t n_runs,
                         double ttl, uint64_t *run, double *all)
{
    if (cfg->goal == RUNNER_GOAL_EXTRAPOLATE) {
        st_status rc = ask_proposer(s, sweep, cfg, n_runs, all);
        return rc ? rc : record_ask(s, sweep, cfg, ttl, run, all);
    }
    carbs *cb = NULL;
    /* the runs already handed out and still open are outstanding in the rebuilt optimizer
     * (its model fantasises at them), and the counters of the last suggestion are restored:
     * it suggests what one optimizer kept alive across the asks would (the seed offset only
     * serves stores written before the counters were kept) */
    st_status rc = store_rebuild_carbs(s, sweep, cfg, n_runs, &cb);
    if (rc)
        return rc;
    double *x = malloc((carbs_dim(cb) ? carbs_dim(cb) : 1) * sizeof(double));
    size_t born = carbs_n_observations(cb);
    if (!x)
        rc = ST_ENOMEM;
    else if (cfg->method == RUNNER_METHOD_GRID || cfg->method == RUNNER_METHOD_RANDOM)
        rc = runner_method_point(cfg, n_runs, all, s->errmsg); /* the same points as launch */
    else if ((rc = carbs_suggest(cb, x, NULL)))
        st_errf(s->errmsg, rc, "optimizer: %s", carbs_errmsg(cb));
    else
        runner_x_from_carbs(cfg, x, all);
    if (!rc)
        rc = record_ask(s, sweep, cfg, ttl, run, all);
    if (!rc) {
        carbs_progress prog;
        carbs_get_progress(cb, &prog);
        rc = store_record_progress(s, (int64_t)*run, &prog, born);
    }
    free(x);
    carbs_destroy(cb);
    return rc;
}

void runner_store_set_proposer(runner_store *s, runner_propose_fn fn, void *user)
{
    if (!s)
        return;
    s->propose = fn;
    s->propose_user = fn ? user : NULL;
}

st_status runner_store_ask_ttl(runner_store *s, const char *sweep, double ttl, uint64_t *out_id,
                               double *x_out, size_t cap)
{
    clear(s);
    int64_t id;
    runner_config *cfg = NULL;
    st_status rc = load_cfg(s, sweep, &id, &cfg);
    if (rc)
        return rc;
    double *all = malloc((cfg->n_params ? cfg->n_params : 1) * sizeof(double));
    if (!all)
        rc = ST_ENOMEM;
    else if (cap < cfg->n_params)
        rc = st_errf(s->errmsg, ST_EINVAL, "ask: room for %zu values, %zu needed", cap,
                     cfg->n_params);
    else if (isnan(ttl) || ttl < 0)
        rc = st_errf(s->errmsg, ST_EINVAL, "ask: ttl must be >= 0 seconds (0: never expires)");
    if (!rc && !(rc = store_begin(s))) {
        int found = 0;
        size_t n_runs = 0;
        uint64_t run = 0;
        rc = not_owned(s, id);
        if (!rc)
            rc = reissue_expired(s, id, cfg, ttl, &run, all, &found);
        if (!rc && !found)
            rc = take_enqueued(s, id, cfg, ttl, &run, all, &found);
        if (!rc && !found && !(rc = check_budget(s, id, cfg, &n_runs)))
            rc = new_run(s, id, cfg, n_runs, ttl, &run, all);
        if (!rc)
            rc = store_commit(s);
        else
            store_rollback(s);
        if (!rc) {
            *out_id = run;
            memcpy(x_out, all, cfg->n_params * sizeof(double));
        }
    }
    free(all);
    runner_config_destroy(cfg);
    return rc;
}

st_status runner_store_ask(runner_store *s, const char *sweep, uint64_t *out_id, double *x_out,
                           size_t cap)
{
    return runner_store_ask_ttl(s, sweep, 0, out_id, x_out, cap);
}

st_status runner_store_expired(runner_store *s, const char *sweep, size_t cap, size_t *n,
                               uint64_t *ids)
{
    clear(s);
    int64_t id;
    *n = 0;
    st_status rc = store_find_sweep(s, sweep, &id, NULL);
    if (rc)
        return rc;
    sqlite3_stmt *st = store_stmt(s, "SELECT id FROM runs WHERE sweep_id = ?1 AND status = 1 AND "
                                     "expires IS NOT NULL AND expires <= ?2 ORDER BY id");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_double(st, 2, runner_now());
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n < cap && ids)
            ids[*n] = (uint64_t)sqlite3_column_int64(st, 0);
        ++*n;
    }
    sqlite3_reset(st);
    return src == SQLITE_DONE ? ST_OK : store_fail(s, src, "listing expired runs");
}

/* A final record, as the metrics protocol has it: a JSON object with "event": "final". */
static st_status check_final(runner_store *s, const char *final)
{
    if (!final)
        return ST_OK;
    runner_metrics_line *l = malloc(sizeof(*l));
    if (!l)
        return ST_ENOMEM;
    st_status rc = runner_metrics_parse(final, strlen(final), l);
    if (rc == ST_OK && l->event != RUNNER_EVENT_FINAL)
        rc = ST_EFORMAT;
    free(l);
    if (rc == ST_EFORMAT)
        return st_errf(s->errmsg, ST_EINVAL,
                       "the final record must be a JSON object with \"event\": \"final\" "
                       "(docs/metrics-protocol.md), not '%.80s'",
                       final);
    return rc;
}

/* Settles run `run` (running, parameters x) with its outcome and writes its observation. */
static st_status settle(runner_store *s, int64_t sweep, uint64_t run, const void *x, int x_len,
                        double objective, double cost, int failed, const char *final, int broken)
{
    /* a final record breaking a constraint: failed for the optimizer, the objective kept */
    int keep = !failed || broken;
    failed |= broken;
    sqlite3_stmt *st = store_stmt(s, "UPDATE runs SET status = ?2, failure = ?3, objective = ?4,"
                                     " cost = ?5, ended = ?6, final = ?7, expires = NULL "
                                     "WHERE id = ?1");
    if (!st)
        return ST_EDB;
    double now = runner_now();
    sqlite3_bind_int64(st, 1, (int64_t)run);
    sqlite3_bind_int(st, 2, failed ? RUNNER_RUN_FAILED : RUNNER_RUN_SUCCEEDED);
    sqlite3_bind_int(st, 3,
                     broken   ? RUNNER_FAIL_CONSTRAINT
                     : failed ? RUNNER_FAIL_DIVERGED
                              : RUNNER_FAIL_NONE);
    if (keep)
        sqlite3_bind_double(st, 4, objective);
    if (isfinite(cost) && cost > 0)
        sqlite3_bind_double(st, 5, cost);
    sqlite3_bind_double(st, 6, now);
    if (final)
        sqlite3_bind_text(st, 7, final, -1, SQLITE_TRANSIENT);
    st_status rc = store_exec_stmt(s, st, "recording a tell");
    if (rc)
        return rc;
    st = store_stmt(s, "INSERT INTO observations(sweep_id, run_id, x, output, cost, failed, "
                       "t) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, sweep);
    sqlite3_bind_int64(st, 2, (int64_t)run);
    sqlite3_bind_blob(st, 3, x, x_len, SQLITE_TRANSIENT);
    if (!failed)
        sqlite3_bind_double(st, 4, objective);
    if (isfinite(cost) && cost > 0)
        sqlite3_bind_double(st, 5, cost);
    sqlite3_bind_int(st, 6, failed ? 1 : 0);
    sqlite3_bind_double(st, 7, now);
    rc = store_exec_stmt(s, st, "recording an observation");
    return rc ? rc
              : store_event(s, sweep, (int64_t)run, 0, "tell", failed ? "failed" : "succeeded");
}

/* The outcome's own checks: a success has a finite objective and a cost > 0. */
static st_status check_outcome(runner_store *s, double objective, double cost, int failed)
{
    if (!failed && (!isfinite(objective) || !(cost > 0) || !isfinite(cost)))
        return st_errf(s->errmsg, ST_EINVAL,
                       "a success needs a finite objective and a cost > 0 (or --failed); got "
                       "objective %g, cost %g",
                       objective, cost);
    return ST_OK;
}

st_status runner_store_tell_final(runner_store *s, const char *sweep, uint64_t run,
                                  double objective, double cost, int failed, const char *final)
{
    clear(s);
    int64_t id;
    runner_config *cfg = NULL;
    st_status rc = load_cfg(s, sweep, &id, &cfg);
    int broken = !rc && !failed && runner_constraints_broken(cfg, final, NULL, 0);
    runner_config_destroy(cfg);
    if (!rc)
        rc = check_outcome(s, objective, cost, failed);
    if (!rc)
        rc = check_final(s, final);
    if (rc || (rc = store_begin(s)))
        return rc;
    sqlite3_stmt *st = store_stmt(s, "SELECT status, x FROM runs WHERE id = ?1 AND sweep_id = ?2");
    if (!st) {
        store_rollback(s);
        return ST_EDB;
    }
    sqlite3_bind_int64(st, 1, (int64_t)run);
    sqlite3_bind_int64(st, 2, id);
    void *x = NULL;
    int x_len = 0, status = -1;
    if (sqlite3_step(st) == SQLITE_ROW) {
        status = sqlite3_column_int(st, 0);
        x_len = sqlite3_column_bytes(st, 1);
        x = malloc(x_len > 0 ? (size_t)x_len : 1);
        if (x)
            memcpy(x, sqlite3_column_blob(st, 1), (size_t)x_len);
    }
    sqlite3_reset(st);
    if (status < 0)
        rc = st_errf(s->errmsg, ST_ENOTFOUND, "no run %llu in this sweep", (unsigned long long)run);
    else if (status != RUNNER_RUN_RUNNING)
        rc = st_errf(s->errmsg, ST_ESTATE, "run %llu is %s, not waiting for a result",
                     (unsigned long long)run, runner_run_status_name(status));
    else if (!x)
        rc = ST_ENOMEM;
    if (!rc)
        rc = settle(s, id, run, x, x_len, objective, cost, failed, final, broken);
    free(x);
    if (rc) {
        store_rollback(s);
        return rc;
    }
    return store_commit(s);
}

st_status runner_store_tell(runner_store *s, const char *sweep, uint64_t run, double objective,
                            double cost, int failed)
{
    return runner_store_tell_final(s, sweep, run, objective, cost, failed, NULL);
}

/* Parameters of a run not asked: every searched one inside its bounds, fixed ones as fixed. */
static st_status check_params(runner_store *s, const runner_config *cfg, const double *x)
{
    for (size_t i = 0; i < cfg->n_params; i++)
        if (runner_param_check(cfg, x, i, s->errmsg) != ST_OK)
            return ST_EINVAL;
    return ST_OK;
}

st_status runner_store_record(runner_store *s, const char *sweep, const double *x, double objective,
                              double cost, int failed, const char *final, uint64_t *out_id)
{
    clear(s);
    int64_t id;
    runner_config *cfg = NULL;
    st_status rc = load_cfg(s, sweep, &id, &cfg);
    if (!rc)
        rc = check_params(s, cfg, x);
    if (!rc)
        rc = check_outcome(s, objective, cost, failed);
    if (!rc)
        rc = check_final(s, final);
    if (!rc && !(rc = store_begin(s))) {
        int len = (int)(cfg->n_params * sizeof(double));
        sqlite3_stmt *st = NULL;
        if (!(rc = not_owned(s, id)))
            rc = (st = store_stmt(s, "INSERT INTO runs(sweep_id, status, x, created) "
                                     "VALUES(?1, 1, ?2, ?3)"))
                     ? ST_OK
                     : ST_EDB;
        if (!rc) {
            sqlite3_bind_int64(st, 1, id);
            sqlite3_bind_blob(st, 2, x, len, SQLITE_TRANSIENT);
            sqlite3_bind_double(st, 3, runner_now());
            rc = store_exec_stmt(s, st, "recording a run");
        }
        uint64_t run = (uint64_t)sqlite3_last_insert_rowid(s->db);
        if (!rc)
            rc = settle(s, id, run, x, len, objective, cost, failed, final,
                        !failed && runner_constraints_broken(cfg, final, NULL, 0));
        if (!rc && !(rc = store_commit(s)) && out_id)
            *out_id = run;
        else if (rc)
            store_rollback(s);
    }
    runner_config_destroy(cfg);
    return rc;
}

st_status runner_store_create_sweep(const char *db_path, const char *yaml, char *errmsg)
{
    char scratch[ST_ERRMSG_MAX];
    char *em = errmsg ? errmsg : scratch;
    em[0] = 0;
    if (!db_path || !yaml)
        return st_errf(em, ST_EINVAL, "create: a store path and a sweep description are needed");
    runner_config *cfg = NULL;
    st_status rc = runner_config_load_string(yaml, strlen(yaml), "sweep", &cfg, em);
    if (rc)
        return rc;
    runner_options o = runner_options_default();
    o.db_path = db_path;
    runner *r = NULL;
    rc = runner_launch(cfg, &o, &r, em); /* records it and takes the lease... */
    runner_destroy(r);                   /* ...which is given back at once */
    runner_config_destroy(cfg);
    return rc;
}

/* ---- enqueue ------------------------------------------------------------------------------ */

st_status runner_store_enqueue(runner_store *s, const char *sweep, const double *x,
                               uint64_t *out_id)
{
    clear(s);
    int64_t id;
    runner_config *cfg = NULL;
    st_status rc = load_cfg(s, sweep, &id, &cfg);
    for (size_t i = 0; !rc && i < cfg->n_params; i++)
        rc = runner_param_check(cfg, x, i, s->errmsg);
    if (!rc && !(rc = store_begin(s))) {
        size_t n_runs = 0;
        sqlite3_stmt *st = NULL;
        if (!(rc = not_owned(s, id)) && !(rc = check_budget(s, id, cfg, &n_runs)))
            rc = (st = store_stmt(s, "INSERT INTO runs(sweep_id, status, x, created) "
                                     "VALUES(?1, 0, ?2, ?3)"))
                     ? ST_OK
                     : ST_EDB;
        if (!rc) {
            sqlite3_bind_int64(st, 1, id);
            sqlite3_bind_blob(st, 2, x, (int)(cfg->n_params * sizeof(double)), SQLITE_TRANSIENT);
            sqlite3_bind_double(st, 3, runner_now());
            rc = store_exec_stmt(s, st, "enqueueing a run");
        }
        uint64_t run = (uint64_t)sqlite3_last_insert_rowid(s->db);
        if (!rc)
            rc = store_event(s, id, (int64_t)run, 0, "enqueue", NULL);
        if (!rc && !(rc = store_commit(s)) && out_id)
            *out_id = run;
        else if (rc)
            store_rollback(s);
    }
    runner_config_destroy(cfg);
    return rc;
}

/* x for enqueue_text: the named values, then the centre (or fixed value) of the others, NaN
 * where a conditional parameter is inactive (parents come first). */
static st_status text_to_x(runner_store *s, const runner_config *cfg, size_t n,
                           const char *const *names, const char *const *values, double *x)
{
    for (size_t j = 0; j < n; j++) {
        size_t i = 0;
        while (i < cfg->n_params && strcmp(cfg->params[i].p.name, names[j]))
            i++;
        if (i == cfg->n_params)
            return st_errf(s->errmsg, ST_EINVAL, "enqueue: the sweep has no parameter '%s'",
                           names[j]);
    }
    for (size_t i = 0; i < cfg->n_params; i++) {
        const runner_param_spec *ps = &cfg->params[i];
        size_t j = 0;
        while (j < n && strcmp(ps->p.name, names[j]))
            j++;
        if (j < n) {
            st_status rc = runner_param_parse(ps, values[j], &x[i], s->errmsg);
            if (rc)
                return rc;
        } else {
            x[i] = ps->is_fixed ? ps->fixed_value : ps->p.center;
            if (!ps->is_fixed && !runner_param_active(cfg, x, i))
                x[i] = NAN;
        }
    }
    return ST_OK;
}

st_status runner_store_parse_params(runner_store *s, const char *sweep, size_t n,
                                    const char *const *names, const char *const *values, double *x,
                                    size_t cap)
{
    clear(s);
    int64_t id;
    runner_config *cfg = NULL;
    st_status rc = load_cfg(s, sweep, &id, &cfg);
    if (rc)
        return rc;
    if (cap < cfg->n_params)
        rc = st_errf(s->errmsg, ST_EINVAL, "room for %zu values, %zu needed", cap, cfg->n_params);
    else
        rc = text_to_x(s, cfg, n, names, values, x);
    runner_config_destroy(cfg);
    return rc;
}

st_status runner_store_enqueue_text(runner_store *s, const char *sweep, size_t n,
                                    const char *const *names, const char *const *values,
                                    uint64_t *out_id)
{
    const char *const *pn = NULL;
    size_t np = 0;
    st_status rc = runner_store_params(s, sweep, &np, &pn);
    if (rc)
        return rc;
    double *x = malloc((np ? np : 1) * sizeof(double));
    rc = x ? runner_store_parse_params(s, sweep, n, names, values, x, np) : ST_ENOMEM;
    if (!rc)
        rc = runner_store_enqueue(s, sweep, x, out_id);
    free(x);
    return rc;
}

st_status runner_store_format_params(runner_store *s, const char *sweep, const double *x,
                                     char **out)
{
    clear(s);
    *out = NULL;
    int64_t id;
    runner_config *cfg = NULL;
    st_status rc = load_cfg(s, sweep, &id, &cfg);
    if (rc)
        return rc;
    size_t cap = 1;
    for (size_t i = 0; i < cfg->n_params; i++)
        cap += strlen(cfg->params[i].p.name) + 4 +
               (cfg->params[i].fixed_text ? strlen(cfg->params[i].fixed_text) : 0) + 64;
    for (size_t i = 0; i < cfg->n_params; i++)
        for (size_t k = 0; cfg->params[i].choices && k < cfg->params[i].p.n_choices; k++)
            cap += strlen(cfg->params[i].choices[k]);
    char *t = malloc(cap);
    if (!t) {
        runner_config_destroy(cfg);
        return ST_ENOMEM;
    }
    size_t o = 0;
    for (size_t i = 0; i < cfg->n_params; i++) {
        char v[64];
        const runner_param_spec *ps = &cfg->params[i];
        const char *text = ps->is_fixed ? ps->fixed_text : runner_param_choice(ps, x[i]);
        if (!text) {
            runner_format_value(ps, x[i], v, sizeof(v));
            text = v;
        }
        o += (size_t)snprintf(t + o, cap - o, "%s=%s\n", ps->p.name, text);
    }
    *out = t;
    runner_config_destroy(cfg);
    return ST_OK;
}
