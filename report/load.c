/*
 * load.c — reads one sweep for the report through the runner's typed read
 * (runner_store_read_sweep: the stored sweep file with its parameter spaces, bounds and
 * rounding, and every run with its attempts and final record) and the step records of the
 * Pareto runs (runner_store_run_curve). Nothing is written to the store, and no table is read
 * here directly.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit/curve.h"
#include "report/report_int.h"
#include "runner/runner.h"

static char *dupstr(const char *s)
{
    return strdup(s ? s : "");
}

/* 0 success, 1 hyperparameter failure, 2 infrastructure failure, 3 unfinished or stopped (by
 * the user or the cost cap). */
static int attempt_kind(const runner_sweep_attempt *a)
{
    if (a->failure == RUNNER_FAIL_NONE)
        return !strcmp(a->state, "done") ? 0 : 3;
    if (a->failure == RUNNER_FAIL_STOPPED || a->failure == RUNNER_FAIL_OVER_BUDGET)
        return 3; /* stopped by the user or by the cost cap: neither kind of failure */
    return runner_failure_is_hyperparameter(a->failure) ? 1 : 2;
}

static void fill_run(report *r, rp_run *u, const runner_sweep_run *w, int validation)
{
    u->id = (int64_t)w->id;
    for (size_t p = 0; p < r->n_params; p++)
        u->x[p] = w->x[p];
    u->objective = w->objective;
    u->cost = w->cost;
    u->N = w->final_N;
    u->D = w->final_D;
    u->n_attempts = w->n_att;
    u->branch = (int64_t)w->parent;
    u->succeeded = w->status == RUNNER_RUN_SUCCEEDED && isfinite(u->objective) &&
                   isfinite(u->cost) && u->cost > 0 && !u->branch;
    u->validation = validation;
    u->beyond = validation || (isfinite(u->cost) && u->cost > r->o.fit_max_cost);
    u->pred = u->pred_lo = u->pred_hi = u->pred_p = NAN;
    for (size_t k = 0; k < w->n_att; k++) {
        rp_attempt *t = &r->att[r->n_att++];
        t->run = u->id;
        t->number = w->att[k].number;
        t->started = w->att[k].started;
        t->ended = w->att[k].ended;
        t->kind = attempt_kind(&w->att[k]);
    }
}

/* Appends the runs and attempts of one sweep (the validation sweep's values are matched to the
 * report's parameters by name), in the sweep's order (the engine's run indices are into it). */
static st_status add_runs(report *r, const runner_sweep *w, int validation)
{
    size_t n = w->n_runs, n_att = 0;
    for (size_t i = 0; i < n; i++)
        n_att += w->runs[i].n_att;
    rp_run *nr = realloc(r->runs, (r->n_runs + n + 1) * sizeof(*nr));
    if (!nr)
        return ST_ENOMEM;
    r->runs = nr;
    rp_attempt *na = realloc(r->att, (r->n_att + n_att + 1) * sizeof(*na));
    if (!na)
        return ST_ENOMEM;
    r->att = na;
    double *x = malloc((r->n_params + 1) * sizeof(double));
    if (!x)
        return ST_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const runner_sweep_run *wr = &w->runs[i];
        rp_run *u = &r->runs[r->n_runs];
        memset(u, 0, sizeof(*u));
        u->status = dupstr(runner_run_status_name(wr->status));
        u->failure = dupstr(runner_failure_name(wr->failure));
        u->x = malloc((r->n_params + 1) * sizeof(double));
        r->n_runs++; /* counted now so that destroy frees what was allocated */
        if (!u->status || !u->failure || !u->x) {
            free(x);
            return ST_ENOMEM;
        }
        for (size_t p = 0; p < r->n_params; p++) {
            x[p] = NAN;
            for (size_t q = 0; q < w->cfg->n_params; q++)
                if (!strcmp(w->cfg->params[q].p.name, r->pnames[p]))
                    x[p] = wr->x[q];
        }
        runner_sweep_run copy = *wr;
        copy.x = x;
        fill_run(r, u, &copy, validation);
    }
    free(x);
    return ST_OK;
}

/* Names, spaces, bounds and rounding of the parameters, from the stored sweep file. */
static st_status load_params(report *r, const runner_config *cfg)
{
    r->sweep = dupstr(cfg->name);
    r->objective = dupstr(cfg->objective);
    r->goal = dupstr(cfg->maximize ? "maximize" : "minimize");
    r->cost_metric = dupstr(cfg->cost_metric);
    r->maximize = cfg->maximize;
    r->pnames = calloc(cfg->n_params + 1, sizeof(char *));
    r->pspace = calloc(cfg->n_params + 1, sizeof(int));
    r->pint = calloc(cfg->n_params + 1, sizeof(int));
    r->pmin = calloc(cfg->n_params + 1, sizeof(double));
    r->pmax = calloc(cfg->n_params + 1, sizeof(double));
    r->pround = calloc(cfg->n_params + 1, sizeof(double));
    if (!r->sweep || !r->objective || !r->goal || !r->cost_metric || !r->pnames || !r->pspace ||
        !r->pint || !r->pmin || !r->pmax || !r->pround)
        return ST_ENOMEM;
    for (size_t i = 0; i < cfg->n_params; i++) {
        r->pnames[i] = dupstr(cfg->params[i].p.name);
        r->n_params = i + 1;
        if (!r->pnames[i])
            return ST_ENOMEM;
        r->pspace[i] = cfg->params[i].is_fixed ? -1 : (int)cfg->params[i].p.space;
        r->pint[i] = cfg->params[i].p.is_integer;
        r->pmin[i] = cfg->params[i].p.min;
        r->pmax[i] = cfg->params[i].p.max;
        r->pround[i] = cfg->params[i].p.rounding > 0 ? cfg->params[i].p.rounding : 1;
    }
    return ST_OK;
}

#define PRED_FIRST 0.1 /* the predicted curve is fitted on the steps in [10%, 30%] of the run */
#define PRED_LAST  0.3 /* (the watch judges the curve from 30% on, docs/large-run.md) */
#define PRED_GRID  16  /* records the prediction is drawn at */

/* The learning rate of steps 1..n_steps from the run's step records ("lr"), into lr; 1 when
 * every step has one. */
static int read_lr(runner_store *s, int64_t id, size_t n_steps, double *lr)
{
    size_t n = 0, got = 0;
    double *st = NULL, *v = NULL, *co = NULL;
    if (runner_store_run_curve(s, (uint64_t)id, "lr", NULL, &n, &st, &v, &co) == ST_OK)
        for (size_t k = 0; k < n_steps; k++)
            lr[k] = NAN;
    for (size_t i = 0; i < n; i++) {
        double k = round(st[i]);
        if (k >= 1 && k <= (double)n_steps && v[i] > 0 && isnan(lr[(size_t)k - 1])) {
            lr[(size_t)k - 1] = v[i];
            got++;
        }
    }
    free(st);
    free(v);
    free(co);
    return n > 0 && got == n_steps;
}

/* The law fitted on the m points (ps, loss) extrapolated to PRED_GRID of the records after
 * first_after (x, steps), into blk (4 PRED_GRID: x, prediction, lo, hi); the count, or -1 when
 * the law did not extrapolate to a positive loss at one of them (fit_curve_predict_interval's
 * ST_ENUMERIC: C ran away). */
static long predict_grid(const rp_curve *c, const double *steps, size_t first_after,
                         const double *lr, size_t n_steps, const size_t *ps, const double *loss,
                         size_t m, const fit_curve_options *o, double *blk)
{
    fit_curve_interval_options io = fit_curve_interval_options_default();
    io.n_boot = 60;
    io.seed = (uint64_t)c->run;
    size_t n_after = c->n - first_after, k_out = 0;
    for (size_t g = 0; g < PRED_GRID; g++) {
        size_t i = first_after + g * (n_after - 1) / (PRED_GRID - 1);
        if (k_out && blk[k_out - 1] == c->x[i])
            continue;
        double p, lo, hi, k = round(steps[i]);
        if (!(k >= 1 && k <= (double)n_steps))
            continue;
        st_status st = fit_curve_predict_interval(lr, n_steps, ps, loss, m, o, &io, (size_t)k, &p,
                                                  &lo, &hi, NULL);
        if (st == ST_ENUMERIC && !o->fix_C)
            return -1;
        if (st != ST_OK)
            continue;
        blk[k_out] = c->x[i];
        blk[PRED_GRID + k_out] = p;
        blk[2 * PRED_GRID + k_out] = lo;
        blk[3 * PRED_GRID + k_out++] = hi;
    }
    return (long)k_out;
}

/* A validation run's curve predicted from its own early points: the law (Tissue et al. 2024
 * under the lr its step records carry, else, or when that law does not extrapolate to a positive
 * loss, the power law in steps) fitted on its records in [PRED_FIRST, PRED_LAST] of its last
 * step, extrapolated to PRED_GRID of its later records with fit_curve_predict_interval's
 * interval. Leaves n_pred 0 when it cannot (too few points, a failed fit): the figure then shows
 * the curve alone. */
static st_status predict_curve(runner_store *s, rp_curve *c, const double *steps)
{
    double last = c->n ? round(steps[c->n - 1]) : 0;
    if (!(last >= 10) || last > 1e8)
        return ST_OK;
    size_t n_steps = (size_t)last, m = 0, first_after = c->n;
    double *lr = malloc(n_steps * sizeof(double)), *loss = malloc(c->n * sizeof(double));
    size_t *ps = malloc(c->n * sizeof(size_t));
    double *blk = malloc(4 * PRED_GRID * sizeof(double));
    st_status rc = lr && loss && ps && blk ? ST_OK : ST_ENOMEM;
    for (size_t i = 0; !rc && i < c->n; i++) {
        double k = round(steps[i]);
        if (k > PRED_LAST * last && first_after == c->n)
            first_after = i;
        if (isfinite(c->y[i]) && k >= PRED_FIRST * last && k <= PRED_LAST * last &&
            (!m || (size_t)k > ps[m - 1])) {
            ps[m] = (size_t)k;
            loss[m++] = c->y[i];
        }
    }
    fit_curve_options o = fit_curve_options_default();
    int tissue = !rc && read_lr(s, c->run, n_steps, lr);
    long k_out = 0;
    for (int pass = 0; pass < 2 && !rc && m >= 6 && c->n - first_after >= 2; pass++) {
        if (!tissue) {
            for (size_t k = 0; k < n_steps; k++)
                lr[k] = 1.0;
            o.fix_C = 1;
        }
        k_out = predict_grid(c, steps, first_after, lr, n_steps, ps, loss, m, &o, blk);
        if (k_out >= 0)
            break;
        tissue = 0; /* the law under the schedule ran away: the power law */
    }
    if (k_out >= 2) {
        c->pred_x = blk;
        c->pred_y = blk + PRED_GRID;
        c->pred_lo = blk + 2 * PRED_GRID;
        c->pred_hi = blk + 3 * PRED_GRID;
        c->n_pred = (size_t)k_out;
        c->pred_law = tissue ? "Tissue" : "power";
        c->pred_from = (double)ps[m - 1];
        blk = NULL;
    }
    free(blk);
    free(lr);
    free(loss);
    free(ps);
    return rc;
}

/* The step records ("loss") of run `id`'s last attempt: against the cost metric when every
 * record carries it, else against the step; a validation run's (predict) with its predicted
 * curve. */
static st_status load_curve(report *r, runner_store *s, int64_t id, rp_curve *c, int predict)
{
    c->run = id;
    double *steps = NULL, *costs = NULL;
    st_status rc = runner_store_run_curve(s, (uint64_t)id, "loss", r->cost_metric, &c->n, &steps,
                                          &c->y, &costs);
    if (rc)
        return st_errf(r->errmsg, rc, "reading metric points: %s", runner_store_errmsg(s));
    int all_cost = c->n > 0;
    for (size_t k = 0; k < c->n; k++)
        all_cost &= costs[k] > 0;
    c->x_is_cost = all_cost;
    c->x = all_cost ? costs : steps;
    rc = predict ? predict_curve(s, c, steps) : ST_OK;
    free(all_cost ? steps : costs);
    return rc;
}

/* The succeeded cooldown branches of curve c's run (r->sw's rows whose parent it is): each at
 * the run's last x scaled by its tokens over the run's. */
static void load_branches(report *r, rp_curve *c)
{
    const runner_sweep_run *p = NULL;
    for (size_t i = 0; i < r->sw->n_runs && !p; i++)
        if (r->sw->runs[i].id == (uint64_t)c->run)
            p = &r->sw->runs[i];
    if (!p || !c->n || !(p->final_D > 0))
        return;
    for (size_t i = 0; i < r->sw->n_runs && c->n_br < RP_MAX_BRANCHES; i++) {
        const runner_sweep_run *b = &r->sw->runs[i];
        if (b->parent != (uint64_t)c->run || b->status != RUNNER_RUN_SUCCEEDED ||
            !(b->final_D > 0) || !isfinite(b->objective))
            continue;
        c->br_x[c->n_br] = c->x[c->n - 1] * b->final_D / p->final_D;
        c->br_y[c->n_br++] = b->objective;
    }
}

/* The curves of the Pareto runs (with their cooldown branches), then of the validation sweep's
 * runs (drawn against their prediction). */
static st_status load_curves(report *r, runner_store *s)
{
    size_t n_val = 0;
    for (size_t i = 0; i < r->n_runs; i++)
        n_val += r->runs[i].validation != 0;
    if (!r->n_front && !n_val)
        return ST_OK;
    r->curves = calloc(r->n_front + n_val, sizeof(*r->curves));
    if (!r->curves)
        return ST_ENOMEM;
    for (size_t i = 0; i < r->n_front; i++) {
        st_status rc = load_curve(r, s, r->runs[r->front[i]].id, &r->curves[r->n_curves], 0);
        if (rc)
            return rc;
        load_branches(r, &r->curves[r->n_curves]);
        r->n_curves++;
    }
    for (size_t i = 0; i < r->n_runs; i++) {
        if (!r->runs[i].validation)
            continue;
        rp_curve *c = &r->curves[r->n_curves];
        st_status rc = load_curve(r, s, r->runs[i].id, c, 1);
        if (rc)
            return rc;
        c->val_run = i + 1;
        r->n_curves++;
    }
    return ST_OK;
}

/* The validation sweep's alerts: what `scaletune run` saw while the large run ran. */
static st_status load_alerts(report *r, runner_store *s)
{
    size_t n = 0;
    st_status rc = runner_store_alerts(s, r->validate_sweep, 0, &n, NULL);
    if (!rc && n) {
        r->val_alerts = malloc(n * sizeof(runner_alert));
        rc = r->val_alerts ? runner_store_alerts(s, r->validate_sweep, n, &n, r->val_alerts)
                           : ST_ENOMEM;
        r->n_val_alerts = rc ? 0 : n;
    }
    return rc ? st_errf(r->errmsg, rc, "validation sweep's alerts: %s", runner_store_errmsg(s))
              : ST_OK;
}

st_status rp_load(report *r, const char *db_path, const char *sweep)
{
    char em[ST_ERRMSG_MAX];
    runner_store *s = NULL;
    st_status rc = runner_store_open(db_path, &s, em);
    if (rc)
        return st_errf(r->errmsg, rc, "%s", em);
    rc = runner_store_read_sweep(s, sweep, &r->sw);
    if (rc) {
        st_errf(r->errmsg, rc, "%s", runner_store_errmsg(s));
        goto done;
    }
    rc = load_params(r, r->sw->cfg);
    if (!rc)
        rc = add_runs(r, r->sw, 0);
    if (rc)
        goto done;
    r->n_sweep_runs = r->n_runs;
    if (r->validate_sweep) {
        rc = runner_store_read_sweep(s, r->validate_sweep, &r->vsw);
        if (rc) {
            st_errf(r->errmsg, rc, "validation sweep: %s", runner_store_errmsg(s));
            goto done;
        }
        rc = add_runs(r, r->vsw, 1);
        if (!rc)
            rc = load_alerts(r, s);
        if (rc)
            goto done;
    }
    rc = rp_analyze(r);
    if (!rc)
        rc = load_curves(r, s);
done:
    runner_store_close(s);
    return rc;
}
