/*
 * early_stop.c — early stopping in the controller: each running attempt's curve (its eval
 * points, planned steps, tokens and cost), the stop check installed with runner_set_stop_check
 * called at each new eval point, and the rules that do not depend on the check: nothing before
 * cfg->es_min_fraction of the planned tokens (or steps), a stop only after cfg->es_patience
 * consecutive evals that all said stop. The run row keeps the reason and what the optimizer saw
 * (runs.stop_reason, bound_objective, bound_cost). Not the rules themselves (early_stop_rule.c,
 * study/study_stop.c). Depends on the controller's files (controller_int.h) and fit/ (roles).
 */
#include "runner/controller_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit/extrapolate.h"

typedef struct es_run {
    double *step, *tokens, *loss, *cost; /* eval points, n of cap */
    size_t n, cap;
    double last_tokens, last_cost; /* of the last record of any kind that had them */
    double planned_steps;          /* a config record's "steps"; NAN */
    size_t n_checked;              /* eval points the check has seen */
    size_t streak;                 /* consecutive evals that said stop */
    int stop;                      /* the rule decided: stop this run */
    char reason[256];
    double bound, final_cost;
} es_run;

void runner_set_stop_check(runner *r, runner_stop_fn fn, void *ctx)
{
    r->stop_fn = fn;
    r->stop_ctx = ctx;
}

const runner_config *runner_get_config(const runner *r)
{
    return r->cfg;
}

void es_free(active *a)
{
    if (!a->es)
        return;
    free(a->es->step);
    free(a->es);
    a->es = NULL;
}

static es_run *es_new(void)
{
    es_run *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->last_tokens = e->last_cost = e->planned_steps = NAN;
    e->bound = e->final_cost = NAN;
    return e;
}

static st_status push_point(es_run *e, double step, double loss)
{
    if (e->n == e->cap) {
        size_t nc = e->cap ? 2 * e->cap : 32;
        double *b = malloc(4 * nc * sizeof(double));
        if (!b)
            return ST_ENOMEM;
        for (int k = 0; k < 4 && e->n; k++)
            memcpy(b + k * nc, e->step + k * e->cap, e->n * sizeof(double));
        free(e->step);
        e->step = b;
        e->tokens = b + nc;
        e->loss = b + 2 * nc;
        e->cost = b + 3 * nc;
        e->cap = nc;
    }
    e->step[e->n] = step;
    e->tokens[e->n] = e->last_tokens;
    e->loss[e->n] = loss;
    e->cost[e->n] = e->last_cost;
    e->n++;
    return ST_OK;
}

static st_status note(const runner *r, es_run *e, const runner_metrics_line *l)
{
    double v;
    if (runner_metrics_get(l, "tokens", &v) && isfinite(v))
        e->last_tokens = v;
    if (runner_metrics_get(l, r->cfg->cost_metric, &v) && isfinite(v))
        e->last_cost = v;
    if (l->event == RUNNER_EVENT_OTHER && runner_metrics_get(l, "steps", &v) && v > 0)
        e->planned_steps = v;
    if (l->event != RUNNER_EVENT_EVAL || l->step < 0)
        return ST_OK;
    double loss = NAN;
    runner_metrics_get(l, r->cfg->objective, &loss);
    return push_point(e, (double)l->step, loss);
}

/* The lines a previous controller stored for this attempt (a resumed attempt's curve). */
static st_status load_stored(runner *r, active *a)
{
    sqlite3_stmt *st = store_stmt(r->st, "SELECT line FROM metric_points WHERE attempt_id = ?1 "
                                         "AND event IN (1, 2, 5) ORDER BY rowid");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, a->attempt_id);
    st_status rc = ST_OK;
    int src;
    while (!rc && (src = sqlite3_step(st)) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        runner_metrics_line l;
        if (t && runner_metrics_parse(t, strlen(t), &l) == ST_OK)
            rc = note(r, a->es, &l);
    }
    sqlite3_reset(st);
    return rc;
}

st_status es_note_line(runner *r, active *a, const runner_metrics_line *l)
{
    if (!r->stop_fn)
        return ST_OK;
    if (!a->es) {
        if (!(a->es = es_new()))
            return ST_ENOMEM;
        st_status rc = load_stored(r, a);
        if (rc)
            return rc;
    }
    return note(r, a->es, l);
}

/* The planned tokens: the value of the run's parameter whose role is D (tokens, ...). */
static double planned_tokens(const runner *r, const double *x_all)
{
    for (size_t i = 0; i < r->cfg->n_params; i++)
        if (fit_xp_role_guess(r->cfg->params[i].p.name) == FIT_XP_D && x_all[i] > 0)
            return x_all[i];
    return NAN;
}

/* The curve up to eval point k (inclusive), with what is planned and the fraction done. */
static void curve_at(const runner *r, const active *a, size_t k, runner_curve *c)
{
    const es_run *e = a->es;
    memset(c, 0, sizeof(*c));
    c->run = (uint64_t)a->run_id;
    c->x = a->x_all;
    c->n = k + 1;
    c->step = e->step;
    c->tokens = e->tokens;
    c->loss = e->loss;
    c->cost = e->cost;
    c->planned_tokens = planned_tokens(r, a->x_all);
    c->planned_steps = e->planned_steps;
    double s = e->step[k], t = e->tokens[k];
    if (isnan(c->planned_steps) && c->planned_tokens > 0 && t > 0 && s > 0)
        c->planned_steps = round(s * c->planned_tokens / t);
    c->fraction = c->planned_tokens > 0 && t > 0 ? t / c->planned_tokens
                  : c->planned_steps > 0         ? s / c->planned_steps
                                                 : NAN;
    c->planned_cost = e->cost[k] > 0 && c->fraction > 0 ? e->cost[k] / fmin(1.0, c->fraction)
                      : a->predicted_cost > 0           ? a->predicted_cost
                                                        : NAN;
}

/* One eval point through the check; the streak and, at the patience, the decision. */
static void check_point(runner *r, active *a, size_t k)
{
    es_run *e = a->es;
    runner_curve c;
    curve_at(r, a, k, &c);
    if (!(c.fraction >= r->cfg->es_min_fraction) || isnan(e->loss[k])) {
        e->streak = 0; /* too early (or unknown): no stop, and no streak carried over */
        return;
    }
    runner_stop_verdict v;
    memset(&v, 0, sizeof(v));
    v.bound = v.final_cost = NAN;
    st_status rc = r->stop_fn(r->stop_ctx, r->cfg, r->opts.db_path, &c, &v);
    if (rc) {
        ctl_progress(r, "run %lld: the stop check failed (%s); not stopping", (long long)a->run_id,
                     st_strerror(rc));
        e->streak = 0;
        return;
    }
    e->streak = v.stop ? e->streak + 1 : 0;
    if (e->streak < r->cfg->es_patience)
        return;
    e->stop = 1;
    e->bound = v.bound;
    e->final_cost = v.final_cost;
    snprintf(e->reason, sizeof(e->reason), "at %.0f%% of its %s after %zu evals saying stop: %s",
             100 * c.fraction, c.planned_tokens > 0 ? "tokens" : "steps", e->streak, v.reason);
}

st_status es_check(runner *r, active *a, int *stop)
{
    *stop = 0;
    if (!r->stop_fn || !a->es || a->kill_stage || a->parent) /* a branch is short: it runs on */
        return ST_OK;
    es_run *e = a->es;
    while (!e->stop && e->n_checked < e->n)
        check_point(r, a, e->n_checked++);
    if (e->stop) {
        *stop = 1;
        ctl_progress(r, "run %lld: stopping early (%s)", (long long)a->run_id, e->reason);
    }
    return ST_OK;
}

int es_stopped(const active *a, double *bound, double *final_cost, const char **reason)
{
    if (!a->es || !a->es->stop)
        return 0;
    *bound = a->es->bound;
    *final_cost = a->es->final_cost;
    *reason = a->es->reason;
    return 1;
}
