/*
 * largerun_watch.c — the watch over a running large run (runner/largerun.h): it reads the metric
 * points the controller stores, in order, and stores alerts: a step loss that is NaN or far
 * above the recent median (a spike), an eval or final objective that is NaN, a diverged record, the
 * loss curve's extrapolation to the planned end (runner_curve_interval: the law of Tissue et al.
 * 2024 under the run's schedule when its config record states it, else the power law in steps
 * early stopping uses) or the final objective outside the interval `scaletune extrapolate`
 * predicted, and
 * a straggler (tokens_per_s below a fraction of the run's own median for a window of step records),
 * and the trainer's report of silent data corruption (an {"event":"sdc"} record). It reads and
 * alerts; it neither kills nor restarts (the CLI decides that). Its own store connection, no lease.
 */
#include "runner/largerun.h"
#include "runner/runner_int.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TPS_BASE 200 /* the run's own median is that of its last TPS_BASE step records */

typedef struct series {
    double *step, *val;
    size_t n, cap;
} series;

struct runner_watch {
    runner_store *s;
    runner_sweep *w; /* the sweep file (objective, maximize) */
    char *db_path, *sweep;
    runner_watch_options o;
    int64_t last_rowid, attempt; /* attempt: the row id of the latest point's attempt */
    uint64_t run;
    unsigned number; /* that attempt's number */
    series loss, eval, tps;
    double planned_steps;
    runner_schedule sched; /* from the run's config record; kind UNKNOWN: not stated */
    double *lr;            /* (n_lr) the schedule's learning rates, rebuilt per config record */
    size_t n_lr;
    int in_spike, curve_out, slow;
    size_t n_slow;
    double *scratch; /* TPS_BASE or spike_window values */
    char errmsg[ST_ERRMSG_MAX];
};

runner_watch_options runner_watch_options_default(void)
{
    runner_watch_options o = {NAN, NAN, NAN, 1.5, 20, 0.5, 5, 0.3};
    return o;
}

static int push(series *s, double step, double val)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 256;
        double *a = realloc(s->step, nc * sizeof(double)), *b;
        if (!a)
            return -1;
        s->step = a;
        if (!(b = realloc(s->val, nc * sizeof(double))))
            return -1;
        s->val = b;
        s->cap = nc;
    }
    s->step[s->n] = step;
    s->val[s->n++] = val;
    return 0;
}

/* A restart goes back to its checkpoint: forget the points at or after `step`. */
static void cut(series *s, double step)
{
    while (s->n > 0 && s->step[s->n - 1] >= step)
        s->n--;
}

/* Median of v[lo..hi-1] (finite values only; NAN if none), sorted in w->scratch. */
static double median_of(runner_watch *w, const double *v, size_t lo, size_t hi)
{
    size_t m = 0;
    for (size_t i = lo; i < hi; i++)
        if (isfinite(v[i]))
            w->scratch[m++] = v[i];
    return runner_median_inplace(w->scratch, m);
}

static st_status alert(runner_watch *w, int64_t step, const char *kind, size_t *n_new,
                       const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static st_status alert(runner_watch *w, int64_t step, const char *kind, size_t *n_new,
                       const char *fmt, ...)
{
    runner_alert a;
    memset(&a, 0, sizeof(a));
    a.run = w->run;
    a.t = runner_now();
    a.step = step;
    snprintf(a.kind, sizeof(a.kind), "%s", kind);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a.message, sizeof(a.message), fmt, ap);
    va_end(ap);
    int added = 0;
    st_status rc = runner_store_add_alert(w->s, w->sweep, &a, &added);
    if (rc)
        return st_errf(w->errmsg, rc, "%s", runner_store_errmsg(w->s));
    *n_new += (size_t)added;
    return ST_OK;
}

/* A step record: NaN, spike, straggler. */
static st_status on_step(runner_watch *w, const runner_metrics_line *l, size_t *n_new)
{
    double loss = NAN, tps = NAN, step = (double)l->step;
    st_status rc = ST_OK;
    cut(&w->loss, step);
    if (runner_metrics_get(l, "loss", &loss) && !isfinite(loss))
        rc = alert(w, l->step, "nan", n_new, "the training loss is %g", loss);
    size_t k = w->o.spike_window;
    if (!rc && isfinite(loss) && w->o.spike_factor > 0 && k > 0 && w->loss.n >= k) {
        double med = median_of(w, w->loss.val, w->loss.n - k, w->loss.n);
        int spike = loss > w->o.spike_factor * med;
        if (spike && !w->in_spike)
            rc = alert(w, l->step, "spike", n_new,
                       "loss %.6g is %.3gx the median %.6g of the previous %zu steps", loss,
                       loss / med, med, k);
        w->in_spike = spike;
    }
    if (push(&w->loss, step, loss))
        return ST_ENOMEM;
    if (rc || !runner_metrics_get(l, "tokens_per_s", &tps) || !(tps > 0) ||
        !(w->o.straggler_fraction > 0) || !w->o.straggler_window)
        return rc;
    size_t base_end = w->tps.n - w->n_slow, base_lo = base_end > TPS_BASE ? base_end - TPS_BASE : 0;
    double med =
        base_end >= 2 * w->o.straggler_window ? median_of(w, w->tps.val, base_lo, base_end) : NAN;
    if (push(&w->tps, step, tps))
        return ST_ENOMEM;
    if (!(tps < w->o.straggler_fraction * med)) {
        w->n_slow = 0;
        w->slow = 0;
        return ST_OK;
    }
    if (++w->n_slow == w->o.straggler_window) {
        w->slow = 1;
        rc = alert(w, l->step, "straggler", n_new,
                   "%zu steps in a row below %.3g of the run's median throughput (%.6g tokens/s "
                   "now, median %.6g)",
                   w->n_slow, w->o.straggler_fraction, tps, med);
    }
    return rc;
}

/* An eval record: the curve's extrapolation to the planned end against the prediction. */
static st_status on_eval(runner_watch *w, const runner_metrics_line *l, size_t *n_new)
{
    double v = NAN, step = (double)l->step;
    const runner_config *cfg = w->w->cfg;
    if (!runner_metrics_get(l, cfg->objective, &v))
        return ST_OK;
    cut(&w->eval, step);
    if (!isfinite(v))
        return alert(w, l->step, "nan", n_new, "%s is %g", cfg->objective, v);
    if (push(&w->eval, step, v))
        return ST_ENOMEM;
    double frac = step / w->planned_steps;
    if (isnan(w->o.expect_lo) || !(frac >= w->o.curve_min_fraction) || frac >= 1)
        return ST_OK;
    runner_curve c = {.run = w->run,
                      .n = w->eval.n,
                      .step = w->eval.step,
                      .loss = w->eval.val,
                      .planned_steps = w->planned_steps,
                      .planned_tokens = NAN,
                      .planned_cost = NAN,
                      .fraction = frac};
    /* the schedule, when the config record stated it for these planned steps: Tissue et al. */
    if (w->lr && w->n_lr == (size_t)w->planned_steps)
        c.lr = w->lr;
    double pred, lo, hi;
    char em[ST_ERRMSG_MAX];
    int by_schedule = 0;
    if (runner_curve_interval_law(cfg, w->db_path, &c, &pred, &lo, &hi, &by_schedule, em) != ST_OK)
        return ST_OK; /* too few points yet: no verdict */
    int out = hi < w->o.expect_lo || lo > w->o.expect_hi;
    st_status rc = ST_OK;
    if (out && !w->curve_out)
        rc = alert(w, l->step, "curve_outside", n_new,
                   "the curve extrapolates to %s %.5g [%.5g, %.5g] at step %.0f, outside the "
                   "predicted [%.5g, %.5g] (%s%s)",
                   cfg->objective, pred, lo, hi, w->planned_steps, w->o.expect_lo, w->o.expect_hi,
                   by_schedule ? "Tissue law, schedule "
                   : c.lr      ? "power law in steps: the law under the schedule ran away"
                               : "power law in steps: schedule unknown",
                   by_schedule ? runner_schedule_name(w->sched.kind) : "");
    w->curve_out = out;
    return rc;
}

/* A config record: the run's schedule, its learning rates rebuilt for the curve's law (a
 * record without one, or one the rebuild cannot follow, leaves the power law). */
static st_status on_schedule(runner_watch *w, const char *line)
{
    runner_schedule_parse(line, &w->sched);
    if (w->sched.kind == RUNNER_SCHEDULE_UNKNOWN || !(w->sched.steps == w->planned_steps) ||
        w->sched.steps > 1e8) {
        w->n_lr = 0;
        return ST_OK;
    }
    size_t n = (size_t)w->sched.steps;
    if (n != w->n_lr) {
        double *a = realloc(w->lr, n * sizeof(double));
        if (!a)
            return ST_ENOMEM;
        w->lr = a;
    }
    w->n_lr = n;
    return runner_schedule_lr(&w->sched, n, w->lr);
}

/* The "event" of a record the parser keeps as other (config, checkpoint, sdc, ...). */
static int other_event(const char *line, const char *name)
{
    json_t *j = json_loads(line, 0, NULL);
    const char *ev = json_string_value(json_object_get(j, "event"));
    int yes = ev && !strcmp(ev, name);
    json_decref(j);
    return yes;
}

static st_status on_line(runner_watch *w, const char *line, size_t *n_new)
{
    runner_metrics_line l;
    if (runner_metrics_parse(line, strlen(line), &l) != ST_OK)
        return ST_OK;
    double v;
    if (l.event == RUNNER_EVENT_OTHER && strstr(line, "config") && other_event(line, "config") &&
        runner_metrics_get(&l, "steps", &v) && v >= 1) {
        w->planned_steps = v;
        st_status rc = on_schedule(w, line);
        if (rc)
            return rc;
    }
    /* the trainer's replay found corruption and rolled back (docs/large-run.md). Every record
     * is its own event (a fault that repeats at the same step is a second failure of the node):
     * the attempt and the record's count (its how-manieth in that window) tell them apart, and
     * the store de-duplicates sdc alerts by the whole message (a record read again is not new). */
    if (l.event == RUNNER_EVENT_OTHER && strstr(line, "sdc") && other_event(line, "sdc")) {
        double count = 1;
        runner_metrics_get(&l, "count", &count);
        return alert(w, l.step, "sdc", n_new, "silent data corruption (attempt %u, #%.0f): %s",
                     w->number, count, l.reason);
    }
    if (l.event == RUNNER_EVENT_STEP && l.step >= 0)
        return on_step(w, &l, n_new);
    if (l.event == RUNNER_EVENT_EVAL && l.step >= 0)
        return on_eval(w, &l, n_new);
    if (l.event == RUNNER_EVENT_DIVERGED)
        return alert(w, l.step, "diverged", n_new, "the trainer reports divergence: %s", l.reason);
    if (l.event != RUNNER_EVENT_FINAL || !runner_metrics_get(&l, w->w->cfg->objective, &v))
        return ST_OK;
    if (!isfinite(v)) /* a NaN objective without a divergence record (docs/large-run.md) */
        return alert(w, -1, "nan", n_new, "the final %s is %g", w->w->cfg->objective, v);
    if (!isnan(w->o.expect_lo) && !(v >= w->o.expect_lo && v <= w->o.expect_hi))
        return alert(w, -1, "final_outside", n_new,
                     "final %s %.6g is outside the predicted [%.5g, %.5g] (predicted %.5g)",
                     w->w->cfg->objective, v, w->o.expect_lo, w->o.expect_hi, w->o.expect);
    return ST_OK;
}

/* A point of another attempt: a restart (the same run) keeps the run's history, cut at the
 * step it resumes from as its records arrive; another run starts afresh. */
static void switch_attempt(runner_watch *w, int64_t attempt, uint64_t run)
{
    if (run != w->run) {
        w->loss.n = w->eval.n = w->tps.n = 0;
        w->planned_steps = NAN;
        w->n_lr = 0;
        w->in_spike = w->curve_out = 0;
    }
    w->run = run;
    w->attempt = attempt;
    w->n_slow = 0;
    w->slow = 0;
}

st_status runner_watch_poll(runner_watch *w, runner_watch_state *out)
{
    w->errmsg[0] = '\0';
    size_t added = 0;
    sqlite3_stmt *st = store_stmt(
        w->s, "SELECT mp.rowid, mp.attempt_id, a.run_id, a.number, mp.line FROM metric_points mp"
              " JOIN attempts a ON a.id = mp.attempt_id JOIN runs r ON r.id = a.run_id"
              " JOIN sweeps s ON s.id = r.sweep_id WHERE s.name = ?1 AND mp.rowid > ?2"
              " ORDER BY mp.rowid LIMIT 4096");
    if (!st)
        return st_errf(w->errmsg, ST_EDB, "%s", runner_store_errmsg(w->s));
    sqlite3_bind_text(st, 1, w->sweep, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, w->last_rowid);
    int src = SQLITE_DONE;
    st_status rc = ST_OK;
    while (!rc && (src = sqlite3_step(st)) == SQLITE_ROW) {
        w->last_rowid = sqlite3_column_int64(st, 0);
        int64_t att = sqlite3_column_int64(st, 1);
        if (att != w->attempt)
            switch_attempt(w, att, (uint64_t)sqlite3_column_int64(st, 2));
        w->number = (unsigned)sqlite3_column_int(st, 3);
        rc = on_line(w, (const char *)sqlite3_column_text(st, 4), &added);
    }
    sqlite3_reset(st);
    if (!rc && src != SQLITE_DONE && src != SQLITE_ROW)
        rc = st_errf(w->errmsg, store_fail(w->s, src, "reading metric points"), "%s",
                     runner_store_errmsg(w->s));
    if (out) {
        out->n_new = added;
        out->straggling = w->slow;
        out->run = w->run;
        out->attempt = w->number;
    }
    return rc;
}

st_status runner_watch_create(const char *db_path, const char *sweep,
                              const runner_watch_options *opts, runner_watch **out, char *errmsg)
{
    *out = NULL;
    runner_watch_options o = opts ? *opts : runner_watch_options_default();
    if (!sweep || o.spike_factor < 0 || !(o.straggler_fraction >= 0) || o.straggler_fraction >= 1 ||
        (!isnan(o.expect_lo) && !(o.expect_lo <= o.expect_hi)))
        return st_errf(errmsg, ST_EINVAL,
                       "watch: a sweep name, spike_factor >= 0, straggler_fraction in [0, 1) "
                       "and expect_lo <= expect_hi are needed");
    runner_watch *w = calloc(1, sizeof(*w));
    if (!w)
        return ST_ENOMEM;
    w->o = o;
    w->planned_steps = NAN;
    w->attempt = -1;
    size_t ns = o.spike_window > TPS_BASE ? o.spike_window : TPS_BASE;
    w->db_path = strdup(db_path);
    w->sweep = strdup(sweep);
    w->scratch = malloc(ns * sizeof(double));
    st_status rc = w->db_path && w->sweep && w->scratch ? ST_OK : ST_ENOMEM;
    if (!rc)
        rc = runner_store_open(db_path, &w->s, errmsg);
    if (!rc && (rc = runner_store_read_sweep(w->s, sweep, &w->w)))
        st_errf(errmsg, rc, "%s", runner_store_errmsg(w->s));
    if (rc) {
        runner_watch_destroy(w);
        return rc;
    }
    *out = w;
    return ST_OK;
}

const char *runner_watch_errmsg(const runner_watch *w)
{
    return w->errmsg;
}

void runner_watch_destroy(runner_watch *w)
{
    if (!w)
        return;
    runner_sweep_free(w->w);
    runner_store_close(w->s);
    free(w->loss.step);
    free(w->loss.val);
    free(w->eval.step);
    free(w->eval.val);
    free(w->tps.step);
    free(w->tps.val);
    free(w->lr);
    free(w->scratch);
    free(w->db_path);
    free(w->sweep);
    free(w);
}
