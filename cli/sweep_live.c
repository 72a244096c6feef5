/*
 * sweep_live.c — what moves in `scaletune sweep status`: the rate (runs/min over the last runs
 * that ended), the ETA to the run budget, each running run's last step and loss (its last
 * attempt's stored metric points), and the asked runs whose --ttl passed without a tell, which
 * are counted as expired instead of running. Reads the store through runner.h only; does not
 * keep a watch (`sweep watch`, cli/sweep_watch.c) and prints nothing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/sweep_int.h"

static size_t ended_runs(const runner_status *st)
{
    return st->n_by_status[RUNNER_RUN_SUCCEEDED] + st->n_by_status[RUNNER_RUN_FAILED] +
           st->n_by_status[RUNNER_RUN_INFRA_FAILED];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int is_ended(runner_run_status s)
{
    return s == RUNNER_RUN_SUCCEEDED || s == RUNNER_RUN_FAILED || s == RUNNER_RUN_INFRA_FAILED;
}

/* Runs/min over the last SWEEP_RATE_WINDOW runs that ended: (k - 1) / (t_k - t_1), the same
 * count as the launch line's (ended runs over the time they took). NAN until two have ended
 * at different times. */
static double rate_of(const runner_sweep *w)
{
    double *t = malloc((w->n_runs ? w->n_runs : 1) * sizeof(double));
    size_t n = 0;
    for (size_t i = 0; t && i < w->n_runs; i++) {
        const runner_sweep_run *r = &w->runs[i];
        if (is_ended(r->status) && r->n_att && isfinite(r->att[r->n_att - 1].ended))
            t[n++] = r->att[r->n_att - 1].ended;
    }
    double rate = NAN;
    if (n >= 2) {
        qsort(t, n, sizeof(double), cmp_double);
        size_t first = n > SWEEP_RATE_WINDOW ? n - SWEEP_RATE_WINDOW : 0;
        double dt = t[n - 1] - t[first];
        if (dt > 0)
            rate = 60.0 * (double)(n - 1 - first) / dt;
    }
    free(t);
    return rate;
}

static int expired_id(const sweep_live *l, uint64_t id)
{
    for (size_t i = 0; i < l->n_expired && i < SWEEP_LIVE_MAX; i++)
        if (l->expired[i] == id)
            return 1;
    return 0;
}

/* The last stored point of `metric` in run r's last attempt: *step, *value (NAN when none). */
static void last_point(runner_store *s, uint64_t run, const char *metric, double *step,
                       double *value)
{
    size_t n = 0;
    double *steps = NULL, *vals = NULL, *costs = NULL;
    *step = *value = NAN;
    if (runner_store_run_curve(s, run, metric, NULL, &n, &steps, &vals, &costs) == ST_OK && n) {
        *step = steps[n - 1];
        *value = vals[n - 1];
    }
    free(steps);
    free(vals);
    free(costs);
}

size_t sweep_running_now(runner_store *s, const runner_status *st, size_t *n_expired)
{
    size_t n_exp = 0, running = st->n_by_status[RUNNER_RUN_RUNNING];
    if (runner_store_expired(s, st->name, 0, &n_exp, NULL) != ST_OK)
        n_exp = 0;
    if (n_expired)
        *n_expired = n_exp;
    return running > n_exp ? running - n_exp : 0;
}

int sweep_live_read(runner_store *s, const runner_status *st, const runner_sweep *w, double now,
                    sweep_live *l)
{
    memset(l, 0, sizeof(*l));
    if (runner_store_expired(s, st->name, SWEEP_LIVE_MAX, &l->n_expired, l->expired))
        return 1;
    size_t running = st->n_by_status[RUNNER_RUN_RUNNING];
    l->n_running = running > l->n_expired ? running - l->n_expired : 0;

    /* the running runs (not expired): their last attempt's last step and loss */
    for (size_t i = 0; w && i < w->n_runs && l->n_runs < SWEEP_LIVE_MAX; i++) {
        const runner_sweep_run *r = &w->runs[i];
        if (r->status != RUNNER_RUN_RUNNING || expired_id(l, r->id))
            continue;
        sweep_live_run *o = &l->runs[l->n_runs++];
        o->id = r->id;
        o->attempt = r->n_att ? r->att[r->n_att - 1].number : 0;
        o->seconds = r->n_att ? now - r->att[r->n_att - 1].started : NAN;
        last_point(s, r->id, "loss", &o->step, &o->loss);
        o->metric = "loss";
        if (isnan(o->loss) && w->cfg->objective) {
            last_point(s, r->id, w->cfg->objective, &o->step, &o->loss);
            o->metric = w->cfg->objective;
        }
    }

    /* the rate, and the ETA while something runs the sweep */
    l->rate_per_min = w ? rate_of(w) : NAN;
    l->eta_seconds = NAN;
    size_t ended = ended_runs(st);
    int moving = st->controller_alive || l->n_running > 0;
    if (moving && st->budget_runs && isfinite(l->rate_per_min) && l->rate_per_min > 0)
        l->eta_seconds = ended >= st->budget_runs
                             ? 0
                             : 60.0 * (double)(st->budget_runs - ended) / l->rate_per_min;
    return 0;
}
