/*
 * release.c — the deterministic release (sweep files' `deterministic: true`, the default):
 * results reach the optimizer in suggestion order, so that with a fixed seed a parallel sweep
 * is the same whatever the order its runs finish in.
 *
 * The rule, with k = parallel slots: suggestion n (0-based) is made only when every run with
 * index <= n-k has ended, and the optimizer has then observed exactly the runs 0..n-k, in
 * order; runs n-k+1..n-1 are outstanding (carbs fantasises at them). Study mode's design
 * suggestions wait for 2k fewer (design_lag). While carbs is blind to the cost cap
 * (carbs_cap_blind) suggestion n waits for all runs before it instead. A run that
 * ends early is held; a run retried after an infrastructure failure keeps its place; a refusal
 * over the cost cap has ended at once. Releasing a run writes its observations row (so the
 * store's observations are exactly what the optimizer saw, in its order: resume replays them)
 * and shows it to carbs; an infrastructure-failed run is forgotten; a run stopped early is shown
 * censored (its bound at its planned cost, runner.h) or, without a bound, forgotten.
 */
#include "runner/controller_int.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int ctl_can_suggest(const runner *r)
{
    return !r->stopping && ctl_budget_left(r);
}

int ctl_budget_left(const runner *r)
{
    if (r->cfg->budget_runs && r->n_runs >= r->cfg->budget_runs)
        return 0;
    /* deterministic mode: what has been released, not what happened to finish first */
    return (r->det ? r->rel_spent : r->spent) < r->cfg->budget_cost;
}

/* Study mode's design suggestions use the results only to keep within the cost cap
 * (study_space_calibrate) and below learning rates that diverged; each waits for DESIGN_LAG_SLOTS
 * x k fewer runs than the acquisition's, so that a long run does not idle the other slots (the
 * design's runs differ in cost by 100x). A function of n alone: the sweep stays deterministic. */
#define DESIGN_LAG_SLOTS 2

static size_t design_lag(const runner *r, size_t n)
{
    const runner_config *cfg = r->cfg;
    if (!r->propose || cfg->goal != RUNNER_GOAL_EXTRAPOLATE || n >= runner_config_design_size(cfg))
        return 0;
    return DESIGN_LAG_SLOTS * cfg->slots;
}

st_status ctl_may_suggest(runner *r, int *ok)
{
    *ok = 0;
    int blind = !r->propose && carbs_cap_blind(r->cb);
    if (!r->det) {
        /* no cost known yet and no cost expression: every suggestion is blind to the cap, so
         * start one run at a time until the optimizer can check it */
        *ok = ctl_can_suggest(r) && !(blind && r->n_act > 0);
        return ST_OK;
    }
    if (!ctl_can_suggest(r))
        return ST_OK; /* stopping or out of runs: the cost part is checked after the release */
    size_t n = r->n_runs, k = r->cfg->slots, wait = k + design_lag(r, n);
    int reached = 0;
    st_status rc = ctl_release_upto(r, n + 1 > wait ? n + 1 - wait : 0, &reached);
    if (rc || !reached)
        return rc;
    if (!r->propose && carbs_cap_blind(r->cb)) {
        if ((rc = ctl_release_upto(r, n, &reached)) || !reached)
            return rc;
    }
    *ok = ctl_can_suggest(r);
    return ST_OK;
}

/* A released run as the store has it. */
typedef struct held {
    int64_t id;
    int status, failure, n_attempts;
    uint64_t cid; /* its suggestion id in this controller's optimizer, 0 if none */
    double objective, cost, predicted;
    int early;                /* stopped early by the stop rule (ended) */
    double bound, bound_cost; /* what the optimizer sees of it (censored); NAN: nothing */
    double *x_all;
} held;

static double col_num(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

/* The sweep's first run after the one with store id `after` (suggestion order: ids grow);
 * *found 0 if there is none. A range on the primary key: O(log n), where OFFSET was O(n).
 * `+sweep_id` keeps the planner off the (sweep_id, ...) indexes, through which it would read
 * and sort every run of the sweep (EXPLAIN QUERY PLAN: "USE TEMP B-TREE FOR ORDER BY"). */
static st_status read_run(runner *r, int64_t after, held *h, int *found)
{
    sqlite3_stmt *st = store_stmt(r->st, "SELECT id, status, failure, n_attempts, carbs_id, "
                                         "generation, objective, cost, predicted_cost, x, "
                                         "stop_reason IS NOT NULL, bound_objective, bound_cost"
                                         " FROM runs WHERE +sweep_id = ?1 AND id > ?2"
                                         " AND parent_run IS NULL ORDER BY id LIMIT 1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, r->sweep);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)after);
    int src = sqlite3_step(st);
    *found = src == SQLITE_ROW;
    st_status rc = ST_OK;
    if (*found) {
        h->id = sqlite3_column_int64(st, 0);
        h->status = sqlite3_column_int(st, 1);
        h->failure = sqlite3_column_int(st, 2);
        h->n_attempts = sqlite3_column_int(st, 3);
        h->cid = sqlite3_column_int64(st, 5) == r->generation
                     ? (uint64_t)sqlite3_column_int64(st, 4)
                     : 0;
        h->objective = col_num(st, 6);
        h->cost = col_num(st, 7);
        h->predicted = col_num(st, 8);
        h->early = h->status == RUNNER_RUN_STOPPED && sqlite3_column_int(st, 10);
        h->bound = col_num(st, 11);
        h->bound_cost = col_num(st, 12);
        if ((size_t)sqlite3_column_bytes(st, 9) != r->cfg->n_params * sizeof(double))
            rc = st_errf(r->errmsg, ST_EFORMAT, "store: run %lld has bad parameters",
                         (long long)h->id);
        else
            memcpy(h->x_all, sqlite3_column_blob(st, 9), r->cfg->n_params * sizeof(double));
    } else if (src != SQLITE_DONE) {
        rc = store_fail(r->st, src, "reading a run to release");
    }
    sqlite3_reset(st);
    return rc;
}

/* The observations row of a released run, in its own transaction, with a succeeded run's
 * cooldown branches (*n_new, *planned: branch.c). A refusal (over budget, never launched) keeps
 * no cost of its own: its predicted cost stands in, as on replay. */
static st_status write_observation(runner *r, const held *h, double cost, size_t *n_new,
                                   double *planned)
{
    *n_new = 0;
    *planned = 0;
    st_status rc = store_begin(r->st);
    if (rc)
        return rc;
    sqlite3_stmt *st = store_stmt(r->st, "INSERT INTO observations(sweep_id, run_id, x, output, "
                                         "cost, failed, t) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    if (!st) {
        store_rollback(r->st);
        return ST_EDB;
    }
    sqlite3_bind_int64(st, 1, r->sweep);
    sqlite3_bind_int64(st, 2, h->id);
    sqlite3_bind_blob(st, 3, h->x_all, (int)(r->cfg->n_params * sizeof(double)), SQLITE_TRANSIENT);
    if (h->status == RUNNER_RUN_SUCCEEDED && isfinite(h->objective))
        sqlite3_bind_double(st, 4, h->objective);
    if (h->early) /* censored: its bound (release_one releases only finite ones) */
        sqlite3_bind_double(st, 4, h->bound);
    if (isfinite(cost) && cost > 0)
        sqlite3_bind_double(st, 5, cost);
    sqlite3_bind_int(st, 6, h->status == RUNNER_RUN_FAILED);
    sqlite3_bind_double(st, 7, runner_now());
    rc = store_exec_stmt(r->st, st, "releasing an observation");
    if (!rc && h->status == RUNNER_RUN_SUCCEEDED)
        rc = ctl_branches_spawn(r, h->id, h->x_all, h->cost, n_new, planned);
    if (!rc)
        return store_commit(r->st);
    store_rollback(r->st);
    return rc;
}

/* Shows a released run to carbs (the store already has it). */
static st_status observe(runner *r, const held *h, double cost)
{
    if (h->failure == RUNNER_FAIL_OVER_BUDGET)
        return ctl_observe_cost(r, h->cid, h->x_all, cost);
    size_t d = carbs_dim(r->cb);
    double xs[256], *x = xs;
    if (d > 256 && !(x = malloc(d * sizeof(double))))
        return ST_ENOMEM;
    runner_x_to_carbs(r->cfg, h->x_all, x);
    int ok = h->status == RUNNER_RUN_SUCCEEDED || h->early;
    double y = h->early ? h->bound : ok ? h->objective : NAN;
    st_status rc = carbs_observe(r->cb, h->cid, x, y, cost, !ok);
    if (rc == ST_ENOTFOUND) /* not issued by this optimizer, or forgotten as too old */
        rc = carbs_observe(r->cb, 0, x, y, cost, !ok);
    if (x != xs)
        free(x);
    if (rc)
        return st_errf(r->errmsg, rc, "optimizer: %s", carbs_errmsg(r->cb));
    return ST_OK;
}

static st_status release_one(runner *r, const held *h)
{
    if (h->status == RUNNER_RUN_INFRA_FAILED || (h->early && !isfinite(h->bound))) {
        if (h->cid)
            carbs_forget(r->cb, h->cid); /* ST_ENOTFOUND is fine: nothing to forget */
        if (h->early && isfinite(h->cost))
            r->rel_spent += h->cost; /* stopped early: what it spent counts */
        return ST_OK;
    }
    double cost = h->early ? h->bound_cost : h->cost;
    if (isnan(cost) && h->failure == RUNNER_FAIL_OVER_BUDGET && h->n_attempts == 0)
        cost = h->predicted; /* a refusal: the cost expression's value */
    size_t n_new = 0;
    double planned = 0;
    st_status rc = write_observation(r, h, cost, &n_new, &planned);
    if (!rc)
        ctl_branches_made(r, h->id, n_new, planned);
    if (!rc)
        rc = observe(r, h, cost);
    if (!rc && isfinite(h->cost))
        r->rel_spent += h->cost;
    return rc;
}

st_status ctl_release_upto(runner *r, size_t target, int *reached)
{
    *reached = 1;
    if (!r->det)
        return ST_OK;
    held h;
    memset(&h, 0, sizeof(h));
    h.x_all = malloc(r->cfg->n_params * sizeof(double));
    if (!h.x_all)
        return ST_ENOMEM;
    st_status rc = ST_OK;
    while (r->released < target) {
        int found = 0;
        if ((rc = read_run(r, r->released_id, &h, &found)) || !found)
            break;
        assert(h.id > r->released_id); /* released in suggestion (id) order, each once */
        if (h.status != RUNNER_RUN_SUCCEEDED && h.status != RUNNER_RUN_FAILED &&
            h.status != RUNNER_RUN_INFRA_FAILED && !h.early)
            break; /* not ended: everything after it waits */
        if ((rc = release_one(r, &h)))
            break;
        r->released++;
        r->released_id = h.id;
    }
    free(h.x_all);
    *reached = r->released >= target;
    return rc;
}

st_status ctl_release_load(runner *r)
{
    r->released = 0;
    r->released_id = 0;
    r->rel_spent = 0;
    if (!r->det)
        return ST_OK;
    /* released: the runs up to the last one observed (an infrastructure failure after it is
     * counted as held: it is forgotten again at the next release, before any suggestion) */
    /* the branches of released runs count at their planned cost, as release_one charged them
     * (runner/branch.c) */
    sqlite3_stmt *st = store_stmt(r->st, "WITH last(id) AS (SELECT coalesce(max(run_id), 0) FROM "
                                         "observations WHERE sweep_id = ?1) "
                                         "SELECT count(*), coalesce(sum(cost), 0) + (SELECT "
                                         "coalesce(sum(predicted_cost), 0) FROM runs WHERE "
                                         "sweep_id = ?1 AND parent_run <= (SELECT id FROM last)),"
                                         " coalesce(max(id), 0) FROM runs WHERE sweep_id = ?1 "
                                         "AND parent_run IS NULL AND id <= (SELECT id FROM last)");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, r->sweep);
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW) {
        r->released = (size_t)sqlite3_column_int64(st, 0);
        r->rel_spent = sqlite3_column_double(st, 1);
        r->released_id = sqlite3_column_int64(st, 2);
    }
    sqlite3_reset(st);
    return src == SQLITE_ROW ? ST_OK : store_fail(r->st, src, "reading the release");
}

st_status ctl_release_view(runner *r, size_t *n_released, double **pending, size_t *n_pending)
{
    *pending = NULL;
    *n_pending = 0;
    *n_released = r->released;
    size_t np = r->cfg->n_params;
    if (!r->det) { /* the prefix of ended runs; the rest outstanding (an ask's view too) */
        st_status rc =
            store_release_view(r->st, r->sweep, np, r->n_runs, n_released, pending, n_pending);
        if (rc) {
            free(*pending);
            *pending = NULL;
            *n_pending = 0;
        }
        return rc;
    }
    if (*n_released >= r->n_runs)
        return ST_OK;
    size_t m = r->n_runs - *n_released;
    double *p = malloc(m * np * sizeof(double));
    if (!p)
        return ST_ENOMEM;
    /* the runs after the last released one, by id */
    sqlite3_stmt *st =
        store_stmt(r->st, "SELECT x FROM runs WHERE +sweep_id = ?1 AND id > ?2 AND parent_run "
                          "IS NULL ORDER BY id");
    if (!st) {
        free(p);
        return ST_EDB;
    }
    sqlite3_bind_int64(st, 1, r->sweep);
    sqlite3_bind_int64(st, 2, r->released_id);
    size_t i = 0;
    int src;
    while (i < m && (src = sqlite3_step(st)) == SQLITE_ROW)
        if ((size_t)sqlite3_column_bytes(st, 0) == np * sizeof(double))
            memcpy(p + np * i++, sqlite3_column_blob(st, 0), np * sizeof(double));
    sqlite3_reset(st);
    *pending = p;
    *n_pending = i;
    return ST_OK;
}
