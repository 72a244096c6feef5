/*
 * suggest.c — the controller's new suggestions: from carbs/ (CARBS mode) or from a proposer
 * installed with runner_set_proposer (study mode), checked against the cost expression's cap
 * (a refusal is recorded at once as a failed, over_budget run), and recorded in the store as a
 * pending run before anything launches it. carbs/ sees a proposer's suggestion as outstanding
 * under the run's id, so its cost model and a resume work as in CARBS mode.
 */
#include "runner/controller_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void runner_set_proposer(runner *r, runner_propose_fn fn, void *user)
{
    r->propose = fn;
    r->propose_user = fn ? user : NULL;
}

st_status ctl_observe_cost(runner *r, uint64_t cid, const double *x_all, double cost)
{
    size_t d = carbs_dim(r->cb);
    double xs[256], *x = xs;
    if (d > 256 && !(x = malloc(d * sizeof(double))))
        return ST_ENOMEM;
    runner_x_to_carbs(r->cfg, x_all, x);
    st_status rc = ST_OK;
    if (!(cost > 0) || !isfinite(cost)) {
        if (cid)
            carbs_forget(r->cb, cid); /* ST_ENOTFOUND is fine: nothing to forget */
    } else {
        rc = cid ? carbs_observe_cost(r->cb, cid, x, cost) : ST_ENOTFOUND;
        if (rc == ST_ENOTFOUND) /* not issued by this optimizer, or expired */
            rc = carbs_observe_cost(r->cb, 0, x, cost);
    }
    if (x != xs)
        free(x);
    if (rc)
        return st_errf(r->errmsg, rc, "optimizer: %s", carbs_errmsg(r->cb));
    return ST_OK;
}

/* carbs_suggest: x_all (all parameters), its id (outstanding in carbs) and prediction. */
static st_status from_carbs(runner *r, double *x_all, uint64_t *cid, double *predicted)
{
    size_t d = carbs_dim(r->cb);
    double xs[256], *x = xs;
    if (d > 256 && !(x = malloc(d * sizeof(double))))
        return ST_ENOMEM;
    uint64_t id = 0;
    st_status rc = carbs_suggest(r->cb, x, &id);
    if (!rc) {
        carbs_suggestion_info info;
        carbs_last_info(r->cb, &info);
        runner_x_from_carbs(r->cfg, x, x_all);
        *predicted = info.predicted_cost;
        *cid = id;
        r->next_bound = info.cap_cost; /* what the optimizer held under its cap */
        r->next_phase = (int)info.phase;
    }
    if (x != xs)
        free(x);
    if (rc)
        return st_errf(r->errmsg, rc, "optimizer: %s", carbs_errmsg(r->cb));
    return ST_OK;
}

uint64_t runner_proposal_seed(const runner_config *cfg, size_t index)
{
    return st_mix64(cfg->seed + 0x9e3779b97f4a7c15ull * ((uint64_t)index + 1));
}

st_status runner_proposal_finish(const runner_config *cfg, size_t index, double *x_all,
                                 char *errmsg)
{
    for (size_t i = 0; i < cfg->n_params; i++) {
        const runner_param_spec *ps = &cfg->params[i];
        if (ps->is_fixed)
            x_all[i] = ps->fixed_value;
        else if (!(x_all[i] >= ps->p.min && x_all[i] <= ps->p.max) &&
                 runner_param_active(cfg, x_all, i))
            return st_errf(errmsg, ST_EINVAL,
                           "proposer (suggestion %zu): %s = %g is outside [%g, %g]", index,
                           ps->p.name, x_all[i], ps->p.min, ps->p.max);
    }
    return ST_OK;
}

/* The proposer's suggestion number r->n_runs, with what the release rule lets it see; fixed
 * parameters overwritten, searched ones checked against their ranges. The predicted cost is
 * carbs' cost model's (NaN until it has a model). */
static st_status from_proposer(runner *r, double *x_all, double *predicted)
{
    runner_propose_request q;
    memset(&q, 0, sizeof(q));
    double *pending = NULL;
    st_status rc = ctl_release_view(r, &q.n_released, &pending, &q.n_pending);
    if (rc)
        return rc;
    q.cfg = r->cfg;
    q.db_path = r->opts.db_path;
    q.sweep = r->cfg->name;
    q.index = r->n_runs;
    q.pending = pending;
    q.seed = runner_proposal_seed(r->cfg, q.index);
    char em[ST_ERRMSG_MAX] = "";
    for (size_t i = 0; i < r->cfg->n_params; i++)
        x_all[i] = NAN;
    rc = r->propose(r->propose_user, &q, x_all, em);
    free(pending);
    if (rc)
        return st_errf(r->errmsg, rc, "proposer (suggestion %zu): %s", q.index,
                       em[0] ? em : st_strerror(rc));
    if ((rc = runner_proposal_finish(r->cfg, q.index, x_all, r->errmsg)))
        return rc;
    size_t d = carbs_dim(r->cb);
    double xs[256], *x = xs, cost = NAN;
    if (d > 256 && !(x = malloc(d * sizeof(double))))
        return ST_ENOMEM;
    runner_x_to_carbs(r->cfg, x_all, x);
    if (carbs_predict(r->cb, 1, x, NULL, NULL, &cost, NULL) != ST_OK)
        cost = NAN; /* no model yet (fewer than 2 successes) */
    if (x != xs)
        free(x);
    *predicted = cost;
    return ST_OK;
}

/* 1 if the cost expression puts x_all above the cap (or does not evaluate to a finite
 * value); *expr_cost and, when it evaluates, *predicted get its value. */
static int expr_refuses(const runner *r, const double *x_all, double *expr_cost, double *predicted)
{
    *expr_cost = NAN;
    if (!r->cfg->cost_expr)
        return 0;
    const char *names[256];
    size_t n = r->cfg->n_params < 256 ? r->cfg->n_params : 256;
    for (size_t i = 0; i < n; i++)
        names[i] = r->cfg->params[i].p.name;
    char em[ST_ERRMSG_MAX];
    st_status er = runner_expr_eval(r->cfg->cost_expr, n, names, x_all, expr_cost, em);
    if (er == ST_OK)
        *predicted = *expr_cost;
    return er == ST_ERANGE || (er == ST_OK && *expr_cost > r->cfg->max_cost_per_run);
}

/* The refusal's observation row (inside the caller's transaction): its predicted cost is kept
 * as its cost, so resume shows it to the cost model again (store_rebuild_carbs). */
static st_status record_refusal(runner *r, int64_t run_id, const double *x_all, double expr_cost,
                                double now, const char *msg)
{
    sqlite3_stmt *st = store_stmt(r->st, "INSERT INTO observations(sweep_id, run_id, x, output, "
                                         "cost, failed, t) VALUES(?1, ?2, ?3, NULL, ?5, 1, ?4)");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, r->sweep);
    sqlite3_bind_int64(st, 2, run_id);
    sqlite3_bind_blob(st, 3, x_all, (int)(r->cfg->n_params * sizeof(double)), SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 4, now);
    if (isfinite(expr_cost) && expr_cost > 0)
        sqlite3_bind_double(st, 5, expr_cost);
    st_status rc = store_exec_stmt(r->st, st, "recording a refusal");
    return rc ? rc : store_event(r->st, r->sweep, run_id, 0, "refused", msg);
}

/* Records the suggestion as a run in one transaction; *run_id gets its id. A proposer's run
 * keeps its own id as its suggestion id (registered with carbs after the commit). */
static st_status record(runner *r, const double *x_all, uint64_t cid, double predicted, int refused,
                        double expr_cost, int64_t *run_id)
{
    double now = runner_now();
    st_status rc = store_begin(r->st);
    if (rc)
        return rc;
    sqlite3_stmt *st = store_stmt(r->st, "INSERT INTO runs(sweep_id, status, failure, x, carbs_id,"
                                         " generation, predicted_cost, created, ended) VALUES(?1,"
                                         " ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    if (!st) {
        store_rollback(r->st);
        return ST_EDB;
    }
    sqlite3_bind_int64(st, 1, r->sweep);
    sqlite3_bind_int(st, 2, refused ? RUNNER_RUN_FAILED : RUNNER_RUN_PENDING);
    sqlite3_bind_int(st, 3, refused ? RUNNER_FAIL_OVER_BUDGET : RUNNER_FAIL_NONE);
    sqlite3_bind_blob(st, 4, x_all, (int)(r->cfg->n_params * sizeof(double)), SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)cid);
    sqlite3_bind_int64(st, 6, r->generation);
    if (isfinite(predicted))
        sqlite3_bind_double(st, 7, predicted);
    sqlite3_bind_double(st, 8, now);
    if (refused)
        sqlite3_bind_double(st, 9, now);
    rc = store_exec_stmt(r->st, st, "recording a suggestion");
    *run_id = sqlite3_last_insert_rowid(r->st->db);
    if (!rc && !r->propose) { /* what a rebuilt optimizer needs to go on as this one does */
        carbs_progress p;
        carbs_get_progress(r->cb, &p);
        rc = store_record_progress(r->st, *run_id, &p, carbs_n_observations(r->cb));
    }
    if (!rc && r->propose && !refused)
        rc = store_exec_ids(r->st, "UPDATE runs SET carbs_id = id WHERE id = ?1",
                            "recording a suggestion id", 1, run_id);
    char msg[240];
    snprintf(msg, sizeof(msg),
             "run %lld: predicted cost %.4g (cost.expr) above the cap %.4g (the optimizer's "
             "bound: %.4g): refused",
             (long long)*run_id, expr_cost, r->cfg->max_cost_per_run, r->next_bound);
    /* deterministic mode: the refusal's observation waits for its turn (release.c) */
    if (!rc && refused && !r->det)
        rc = record_refusal(r, *run_id, x_all, expr_cost, now, msg);
    else if (!rc && refused)
        rc = store_event(r->st, r->sweep, *run_id, 0, "refused", msg);
    if (!rc)
        rc = store_commit(r->st);
    else
        store_rollback(r->st);
    if (!rc && refused)
        ctl_progress(r, "%s", msg);
    return rc;
}

st_status ctl_new_suggestion(runner *r, double *x_all, int64_t *run_id, uint64_t *cid,
                             double *predicted)
{
    *cid = 0;
    *predicted = NAN;
    st_status rc =
        r->propose ? from_proposer(r, x_all, predicted) : from_carbs(r, x_all, cid, predicted);
    if (rc)
        return rc;
    double expr_cost;
    int refused = expr_refuses(r, x_all, &expr_cost, predicted);
    if ((rc = record(r, x_all, *cid, *predicted, refused, expr_cost, run_id)))
        return rc;
    r->n_runs++;
    r->n_status[refused ? RUNNER_RUN_FAILED : RUNNER_RUN_PENDING]++;
    if (r->propose && !refused) {
        /* carbs fantasises at it and observes it later under the run's id */
        size_t d = carbs_dim(r->cb);
        double xs[256], *x = xs;
        if (d > 256 && !(x = malloc(d * sizeof(double))))
            return ST_ENOMEM;
        runner_x_to_carbs(r->cfg, x_all, x);
        rc = carbs_add_outstanding(r->cb, (uint64_t)*run_id, x);
        if (x != xs)
            free(x);
        if (rc == ST_ENOMEM)
            return rc;
        *cid = rc ? 0 : (uint64_t)*run_id; /* ST_EINVAL: observed later with id 0 */
        rc = ST_OK;
    }
    if (refused) {
        if (!r->det)
            rc = ctl_observe_cost(r, *cid, x_all, expr_cost);
        *run_id = 0;
    }
    return rc;
}
