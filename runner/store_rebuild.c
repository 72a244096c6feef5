/*
 * store_rebuild.c — an optimizer from the store: the sweep's observations replayed in their
 * order, its open runs registered as outstanding, and the counters of its last suggestion
 * restored (store_record_progress keeps them with every run), so that the rebuilt optimizer is
 * the one that made the suggestions: ask per call, a resumed controller and an uninterrupted
 * sweep suggest the same runs in the same order.
 */
#include "runner/runner_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void runner_x_to_carbs(const runner_config *cfg, const double *all, double *x)
{
    size_t j = 0;
    for (size_t i = 0; i < cfg->n_params; i++)
        if (!cfg->params[i].is_fixed)
            x[j++] = all[i];
}

void runner_x_from_carbs(const runner_config *cfg, const double *x, double *all)
{
    size_t j = 0;
    for (size_t i = 0; i < cfg->n_params; i++)
        all[i] = cfg->params[i].is_fixed ? cfg->params[i].fixed_value : x[j++];
}

/* carbs' exact cost (carbs_cost_fn): the sweep's cost expression at x (the searched
 * parameters, in carbs' order) with the fixed ones filled in; NaN where it does not evaluate
 * (the controller refuses those). */
static double expr_cost(const double *x, void *data)
{
    const runner_config *cfg = data;
    double vbuf[256], *vals = vbuf, out = NAN;
    const char *nbuf[256], **names = nbuf;
    if (cfg->n_params > 256) {
        vals = malloc(cfg->n_params * sizeof(double));
        names = malloc(cfg->n_params * sizeof(char *));
    }
    if (vals && names) {
        runner_x_from_carbs(cfg, x, vals);
        for (size_t i = 0; i < cfg->n_params; i++)
            names[i] = cfg->params[i].p.name;
        if (runner_expr_eval(cfg->cost_expr, cfg->n_params, names, vals, &out, NULL) != ST_OK)
            out = NAN;
    }
    if (vals != vbuf)
        free(vals);
    if (names != nbuf)
        free((void *)names);
    return out;
}

st_status store_record_progress(runner_store *s, int64_t run, const carbs_progress *p, size_t born)
{
    sqlite3_stmt *st = store_stmt(s, "UPDATE runs SET sg_suggest = ?2, sg_design = ?3, "
                                     "sg_resample = ?4, sg_born = ?5 WHERE id = ?1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)p->n_suggest);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)p->n_design);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)p->n_resample);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)born);
    return store_exec_stmt(s, st, "recording the optimizer's counters");
}

/* The counters after the sweep's last suggestion that recorded them; *found 0 if none. */
static st_status last_progress(runner_store *s, int64_t sweep, carbs_progress *p, int *found)
{
    *found = 0;
    sqlite3_stmt *st = store_stmt(s, "SELECT sg_suggest, sg_design, sg_resample FROM runs "
                                     "WHERE sweep_id = ?1 AND sg_suggest IS NOT NULL "
                                     "ORDER BY id DESC LIMIT 1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, sweep);
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW) {
        p->n_suggest = (uint64_t)sqlite3_column_int64(st, 0);
        p->n_design = (uint64_t)sqlite3_column_int64(st, 1);
        p->n_resample = (uint64_t)sqlite3_column_int64(st, 2);
        *found = 1;
    }
    sqlite3_reset(st);
    return src == SQLITE_ROW || src == SQLITE_DONE ? ST_OK : store_fail(s, src, "reading counters");
}

/* Replays one stored observation. A run refused or killed over the cost cap teaches the cost
 * model only: its cost (the predicted cost of a refusal, the cost reached at the kill) is a
 * cost-only observation; older stores left a refusal's cost empty and kept it in the run's
 * predicted_cost. */
static st_status replay(carbs *c, const double *x, double output, double cost, int failed,
                        int failure, double predicted)
{
    if (failure != RUNNER_FAIL_OVER_BUDGET)
        return carbs_observe(c, 0, x, output, cost, failed);
    if (!(cost > 0) || !isfinite(cost))
        cost = predicted;
    if (!(cost > 0) || !isfinite(cost))
        return ST_OK; /* nothing to learn */
    return carbs_observe_cost(c, 0, x, cost);
}

static double col_num(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

/* Column i of st (a blob of all n_params values) as carbs' x; 0 if it has the wrong size. */
static int column_x(sqlite3_stmt *st, int i, const runner_config *cfg, double *all, double *x)
{
    if ((size_t)sqlite3_column_bytes(st, i) != cfg->n_params * sizeof(double))
        return 0;
    memcpy(all, sqlite3_column_blob(st, i), cfg->n_params * sizeof(double));
    runner_x_to_carbs(cfg, all, x);
    return 1;
}

static st_status replay_observations(runner_store *s, int64_t sweep, const runner_config *cfg,
                                     carbs *c, double *all, double *x)
{
    sqlite3_stmt *st = store_stmt(s, "SELECT o.x, o.output, o.cost, o.failed, r.failure, "
                                     "r.predicted_cost FROM observations o JOIN runs r ON "
                                     "r.id = o.run_id WHERE o.sweep_id = ?1 ORDER BY o.id");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, sweep);
    int src = SQLITE_DONE;
    st_status rc = ST_OK;
    while (!rc && (src = sqlite3_step(st)) == SQLITE_ROW) {
        if (!column_x(st, 0, cfg, all, x)) {
            rc = st_errf(s->errmsg, ST_EFORMAT, "store: an observation has the wrong size");
            break;
        }
        rc = replay(c, x, col_num(st, 1), col_num(st, 2), sqlite3_column_int(st, 3),
                    sqlite3_column_int(st, 4), col_num(st, 5));
        if (rc)
            st_errf(s->errmsg, rc, "optimizer: replaying an observation: %s", carbs_errmsg(c));
    }
    sqlite3_reset(st);
    if (!rc && src != SQLITE_DONE)
        rc = store_fail(s, src, "reading observations");
    return rc;
}

/* Runs still open (pending, launched, running, asked and not told) are in flight: the
 * optimizer fantasises at them under their suggestion id (the run's id) instead of suggesting
 * next to them, and they are observed later under that id. In deterministic mode, so are the
 * ended runs after the last observed one: the controller had not released them yet
 * (release.c) and observes them later, in order. With `timed` (counters restored), each is
 * registered at its birth, so that option max_outstanding_age expires it as the live
 * optimizer did. */
static st_status register_open(runner_store *s, int64_t sweep, const runner_config *cfg, carbs *c,
                               int timed, double *all, double *x)
{
    sqlite3_stmt *st =
        store_stmt(s, "SELECT id, x, sg_born FROM runs WHERE sweep_id = ?1 AND "
                      "parent_run IS NULL AND (status IN (0, 1) OR (?2 AND (status IN (2, 3, 4) OR "
                      "stop_reason IS NOT NULL) AND id > (SELECT "
                      "coalesce(max(run_id), 0) FROM observations WHERE "
                      "sweep_id = ?1))) ORDER BY id");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, sweep);
    sqlite3_bind_int(st, 2, cfg->deterministic);
    int src = SQLITE_DONE;
    st_status rc = ST_OK;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        if (!column_x(st, 1, cfg, all, x))
            continue; /* settled as bad parameters when launched */
        uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
        sqlite3_int64 born = sqlite3_column_int64(st, 2);
        int reg;
        if (timed && sqlite3_column_type(st, 2) != SQLITE_NULL && born >= 0 &&
            (size_t)born <= carbs_n_observations(c))
            rc = carbs_add_outstanding_born(c, id, x, (size_t)born, &reg);
        else
            rc = carbs_add_outstanding(c, id, x);
        if (rc == ST_ENOMEM)
            break;
        rc = ST_OK; /* ST_EINVAL (x outside the space): not registered; observed with id 0 */
    }
    sqlite3_reset(st);
    if (!rc && src != SQLITE_DONE)
        rc = store_fail(s, src, "reading open runs");
    return rc;
}

/* A fresh optimizer for cfg with its options, the sweep's cost cap and cost expression. */
static st_status create_carbs(runner_store *s, const runner_config *cfg, uint64_t seed, carbs **out)
{
    size_t d = runner_config_dim(cfg);
    carbs_param *ps = calloc(d ? d : 1, sizeof(*ps));
    if (!ps)
        return ST_ENOMEM;
    for (size_t i = 0, j = 0; i < cfg->n_params; i++)
        if (!cfg->params[i].is_fixed)
            ps[j++] = cfg->params[i].p;
    carbs_options o = carbs_options_default();
    char em[ST_ERRMSG_MAX] = "";
    st_status rc = ST_OK;
    for (size_t i = 0; i < cfg->n_opts && !rc; i++)
        if ((rc = carbs_options_set(&o, cfg->opt_names[i], cfg->opt_values[i], em)))
            st_errf(s->errmsg, ST_EINVAL, "optimizer.%s: %s", cfg->opt_names[i], em);
    o.maximize = cfg->maximize;
    o.seed = seed;
    /* the optimizer proposes nothing the controller would refuse: its cap is the smaller of
     * its own option and the sweep's, checked on the cost expression when there is one */
    if (cfg->max_cost_per_run < o.max_suggestion_cost)
        o.max_suggestion_cost = cfg->max_cost_per_run;
    if (!rc && (rc = carbs_create(ps, d, &o, out, em)))
        st_errf(s->errmsg, rc, "optimizer: %s", em);
    if (!rc && cfg->cost_expr)
        carbs_set_cost_function(*out, expr_cost, (void *)cfg);
    free(ps);
    return rc;
}

st_status store_rebuild_carbs(runner_store *s, int64_t sweep, const runner_config *cfg,
                              uint64_t seed_offset, carbs **out)
{
    *out = NULL;
    carbs_progress p;
    int timed = 0;
    st_status rc = last_progress(s, sweep, &p, &timed);
    if (rc)
        return rc;
    size_t d = runner_config_dim(cfg);
    double *x = malloc((d ? d : 1) * sizeof(double));
    double *all = malloc((cfg->n_params ? cfg->n_params : 1) * sizeof(double));
    carbs *c = NULL;
    if (!x || !all)
        rc = ST_ENOMEM;
    /* with the counters of the last suggestion the random stream continues where it was;
     * without (an older store) it restarts from a seed moved past the runs so far */
    if (!rc)
        rc = create_carbs(s, cfg, cfg->seed + (timed ? 0 : seed_offset), &c);
    if (!rc)
        rc = replay_observations(s, sweep, cfg, c, all, x);
    if (!rc)
        rc = register_open(s, sweep, cfg, c, timed, all, x);
    if (!rc && timed)
        carbs_set_progress(c, &p);
    if (!rc) {
        *out = c;
        c = NULL;
    }
    carbs_destroy(c);
    free(x);
    free(all);
    return rc;
}
