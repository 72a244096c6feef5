/*
 * early_stop_borrow.c — a running run's final objective borrowed from the shape of the sweep's
 * finished runs (fit/curve.h, fit_curve_borrow), with the range of the leave-one-out errors of
 * those runs as its interval: what the stop rules use where no law of one run foresees the
 * curve (a second learning phase, the anneal). Not the law's interval (early_stop_rule.c), which
 * picks the narrower of the two. Depends on fit/curve.h and the store's reads.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit/curve.h"
#include "runner/runner_int.h"

#define MAX_KIN    40   /* the latest succeeded runs borrowed from */
#define BOX_MARGIN 0.25 /* how far outside its kin's features (in searched spans) a run may be */
#define MAX_FEAT   64 /* parameters of a sweep whose runs are borrowed from (fit_curve_borrow's) */

/* Parameter i's value on the scale it was searched on, over its searched span (so that 1 is
 * the span); NAN for a parameter that is no feature (fixed, categorical, without a span). */
static double feature(const runner_param_spec *ps, double v)
{
    const carbs_param *p = &ps->p;
    if (ps->is_fixed || p->space == CARBS_SPACE_CATEGORICAL || !isfinite(v))
        return NAN;
    double t, lo, hi;
    if (p->space == CARBS_SPACE_LOG) {
        if (!(v > 0) || !(p->min > 0))
            return NAN;
        t = log(v), lo = log(p->min), hi = log(p->max);
    } else if (p->space == CARBS_SPACE_LOGIT) {
        if (!(v > 0 && v < 1) || !(p->min > 0 && p->max < 1))
            return NAN;
        t = log(v / (1 - v)), lo = log(p->min / (1 - p->min)), hi = log(p->max / (1 - p->max));
    } else {
        t = v, lo = p->min, hi = p->max;
    }
    return hi > lo && isfinite(hi - lo) ? t / (hi - lo) : NAN;
}

/* A run's features (d of them, the same for every run of the sweep: the numeric searched
 * parameters, scaled; 0 where one is inactive) and its group (its categorical choices and which
 * parameters are inactive: runs of another group are no kin). */
static int features_of(const runner_config *cfg, const double *x, double *f, size_t *d)
{
    unsigned g = 2166136261u; /* FNV-1a over the choices and the inactive flags */
    *d = 0;
    for (size_t i = 0; i < cfg->n_params; i++) {
        const runner_param_spec *ps = &cfg->params[i];
        if (ps->is_fixed)
            continue;
        int key = -1;
        if (ps->p.space == CARBS_SPACE_CATEGORICAL) {
            key = isfinite(x[i]) ? (int)x[i] : -2;
        } else {
            double v = feature(ps, x[i]);
            key = isnan(x[i]) ? -3 : -1;
            f[(*d)++] = isfinite(v) ? v : 0.0;
        }
        g = (g ^ (unsigned)(key + 7)) * 16777619u;
    }
    return (int)(g & 0x7fffffff);
}

/* The loss of a curve (n points, steps increasing; points without a finite step or loss are
 * skipped) at fraction f of its last step, by linear interpolation between the points around
 * it; NAN before its first point. */
static double loss_at_fraction(const double *st, const double *val, size_t n, double f)
{
    double last = NAN;
    for (size_t k = n; k-- > 0 && isnan(last);)
        if (isfinite(st[k]) && isfinite(val[k]))
            last = st[k];
    double s = f * last, ps = NAN, pv = NAN;
    for (size_t k = 0; k < n; k++) {
        if (!isfinite(st[k]) || !isfinite(val[k]))
            continue;
        if (st[k] >= s) {
            if (st[k] == s)
                return val[k];
            return isnan(ps) ? NAN : pv + (s - ps) / (st[k] - ps) * (val[k] - pv);
        }
        ps = st[k], pv = val[k];
    }
    return NAN;
}

/* The running run's loss at its last finite point and that point's step; 0 if none. */
static int own_cut(const runner_curve *c, double *loss, double *step)
{
    for (size_t k = c->n; k-- > 0;)
        if (isfinite(c->loss[k]) && c->step[k] >= 1) {
            *loss = c->loss[k];
            *step = c->step[k];
            return 1;
        }
    return 0;
}

typedef struct kin_buf {
    double xs[MAX_KIN * MAX_FEAT], cut[MAX_KIN], final[MAX_KIN];
    int groups[MAX_KIN];
    size_t n;
} kin_buf;

/* Succeeded run u as kin at fraction f of its steps: its loss there and its objective. */
static st_status add_kin(es_curves *cc, const runner_config *cfg, const runner_sweep_run *u,
                         double f, kin_buf *k)
{
    size_t n = 0, d = 0;
    const double *st = NULL, *val = NULL;
    st_status rc = es_curve(cc, u->id, &n, &st, &val);
    if (rc || n < 2)
        return rc;
    double at = loss_at_fraction(st, val, n, f);
    if (at > 0 && isfinite(at) && u->objective > 0 && isfinite(u->objective)) {
        k->groups[k->n] = features_of(cfg, u->x, k->xs + k->n * MAX_FEAT, &d);
        k->cut[k->n] = at;
        k->final[k->n++] = u->objective;
    }
    return ST_OK;
}

/* 1 if x lies inside its kin's features (same group; packed, d per run), widened by BOX_MARGIN:
 * borrowing interpolates; far outside, a law of the run itself is the better guess. */
static int inside_box(const kin_buf *k, const double *x, int group, size_t d)
{
    for (size_t q = 0; q < d; q++) {
        double lo = INFINITY, hi = -INFINITY;
        for (size_t j = 0; j < k->n; j++)
            if (k->groups[j] == group) {
                lo = fmin(lo, k->xs[j * d + q]);
                hi = fmax(hi, k->xs[j * d + q]);
            }
        if (!(x[q] >= lo - BOX_MARGIN && x[q] <= hi + BOX_MARGIN))
            return 0;
    }
    return 1;
}

st_status es_borrow_interval(const runner_config *cfg, es_curves *cc, const runner_sweep *w,
                             const runner_curve *c, double *pred, double *lo, double *hi,
                             char *errmsg)
{
    double loss, step, x[MAX_FEAT];
    size_t d = 0;
    if (!c->x || !own_cut(c, &loss, &step) || !(c->planned_steps >= step) || cfg->maximize ||
        cfg->n_params > MAX_FEAT)
        return st_errf(errmsg, ST_EINVAL, "borrowed interval: not for this run");
    double f = step / c->planned_steps;
    int group = features_of(cfg, c->x, x, &d);
    kin_buf *k = calloc(1, sizeof(kin_buf));
    if (!k)
        return st_errf(errmsg, ST_ENOMEM, "out of memory");
    st_status rc = ST_OK;
    for (size_t i = w->n_runs; i-- > 0 && k->n < MAX_KIN && !rc;) {
        const runner_sweep_run *u = &w->runs[i];
        if (u->status == RUNNER_RUN_SUCCEEDED && !u->parent && u->id != c->run)
            rc = add_kin(cc, cfg, u, f, k);
    }
    if (rc) {
        free(k);
        return st_errf(errmsg, rc, "borrowed interval: reading the runs' curves");
    }
    /* the features packed to d per run, as fit_curve_kin has them */
    for (size_t j = 0; j < k->n; j++)
        memmove(k->xs + j * d, k->xs + j * MAX_FEAT, d * sizeof(double));
    if (!inside_box(k, x, group, d))
        rc = st_errf(errmsg, ST_EINVAL, "borrowed interval: the run is outside its kin");
    fit_curve_kin kin = {k->n, d, k->xs, k->groups, k->cut, k->final};
    fit_curve_borrow_options o = fit_curve_borrow_options_default();
    double err[MAX_KIN], emin = NAN, emax = NAN;
    if (!rc)
        rc = fit_curve_borrow_loo(&kin, &o, err, errmsg);
    if (!rc) {
        fit_curve_misfit(err, k->n, &emin, &emax);
        if (isnan(emin))
            rc = st_errf(errmsg, ST_EINVAL, "borrowed interval: too few kin to measure its errors");
    }
    if (!rc)
        rc = fit_curve_borrow(&kin, x, group, loss, SIZE_MAX, &o, pred, errmsg);
    if (!rc) {
        *lo = fmin(*pred, *pred / (1 + emax));
        *hi = fmax(*pred, *pred / (1 + emin));
    }
    free(k);
    return rc;
}
