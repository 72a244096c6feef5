/*
 * early_stop_rule.c — what the early-stopping rules share and the CARBS-mode rule: the interval
 * of a running run's final objective from its eval curve (fit/curve.h's plain power law in
 * steps, a block bootstrap, the misfit measured on the sweep's finished runs at the same
 * fraction), the pure front rule, and the built-in stop check that applies it with the store's
 * Pareto front. Not the controller's side (early_stop.c: patience, minimum fraction, records);
 * not the study mode's rule (study/study_stop.c). Depends on fit/curve.h and the store's reads.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit/curve.h"
#include "runner/runner_int.h"

#define FIRST_FRACTION 0.1 /* points before 10% of the run (warmup, plateaus) are left out */
#define MIN_POINTS     4   /* the law has 3 unknowns: one more for a residual */
#define MAX_SIBLINGS   20  /* the latest succeeded runs the errors are measured on */

void runner_stop_rule_front(double bound, double planned_cost, const double *front_cost,
                            const double *front_obj, size_t n, double margin, int *stop, char *why)
{
    *stop = 0;
    if (why)
        why[0] = '\0';
    if (!n || !isfinite(bound) || !(planned_cost > 0) || !isfinite(planned_cost) ||
        planned_cost < front_cost[0])
        return;
    /* the front at planned_cost: linear in ln cost between its points, its last point beyond */
    double f = front_obj[n - 1];
    for (size_t i = 0; i + 1 < n; i++)
        if (planned_cost < front_cost[i + 1]) {
            double t = log(planned_cost / front_cost[i]) / log(front_cost[i + 1] / front_cost[i]);
            f = front_obj[i] + t * (front_obj[i + 1] - front_obj[i]);
            break;
        }
    double limit = f + margin * fabs(f);
    *stop = bound > limit;
    if (why)
        snprintf(why, 200,
                 "its final objective is at least %.5g, above the front's %.5g at cost "
                 "%.4g (+%.3g%%)",
                 bound, f, planned_cost, 100 * margin);
}

/* The points of a curve at or after FIRST_FRACTION of n_steps (finite loss, step in
 * 1..n_steps), into steps/loss (cap n); their count. */
static size_t usable_points(const double *step, const double *loss, size_t n, double n_steps,
                            size_t *steps_out, double *loss_out)
{
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        double s = round(step[k]);
        if (isfinite(loss[k]) && s >= 1 && s <= n_steps && s >= FIRST_FRACTION * n_steps &&
            (m == 0 || (size_t)s > steps_out[m - 1])) {
            steps_out[m] = (size_t)s;
            loss_out[m++] = loss[k];
        }
    }
    return m;
}

/* ---- the curves of one check, each read once ---------------------------------------------- */

typedef struct es_curve_entry {
    uint64_t id;
    size_t n;
    double *steps, *vals;
} es_curve_entry;

struct es_curves {
    runner_store *s;
    const char *metric;
    es_curve_entry *e;
    size_t n, cap;
};

st_status es_curve(es_curves *cc, uint64_t id, size_t *n, const double **steps, const double **vals)
{
    for (size_t i = 0; i < cc->n; i++)
        if (cc->e[i].id == id) {
            *n = cc->e[i].n, *steps = cc->e[i].steps, *vals = cc->e[i].vals;
            return ST_OK;
        }
    if (cc->n == cc->cap) {
        size_t cap = cc->cap ? 2 * cc->cap : 64;
        es_curve_entry *ne = realloc(cc->e, cap * sizeof(*ne));
        if (!ne)
            return ST_ENOMEM;
        cc->e = ne;
        cc->cap = cap;
    }
    es_curve_entry *e = &cc->e[cc->n];
    double *costs = NULL;
    memset(e, 0, sizeof(*e));
    e->id = id;
    st_status rc =
        runner_store_run_curve(cc->s, id, cc->metric, NULL, &e->n, &e->steps, &e->vals, &costs);
    free(costs);
    if (rc)
        return rc;
    cc->n++;
    *n = e->n, *steps = e->steps, *vals = e->vals;
    return ST_OK;
}

static void curves_free(es_curves *cc)
{
    for (size_t i = 0; i < cc->n; i++) {
        free(cc->e[i].steps);
        free(cc->e[i].vals);
    }
    free(cc->e);
}

/* The relative error at `cut` of one succeeded run (its whole eval curve); NAN if unusable. */
static double sibling_error(es_curves *cc, uint64_t id, double cut)
{
    size_t n = 0;
    const double *st = NULL, *val = NULL;
    double e = NAN;
    if (es_curve(cc, id, &n, &st, &val) || n < 2)
        return NAN;
    double last = round(st[n - 1]);
    size_t *steps = malloc(n * sizeof(size_t));
    double *loss = malloc(n * sizeof(double)), *lr = malloc((size_t)fmax(last, 1) * sizeof(double));
    if (steps && loss && lr && last >= 1) {
        size_t m = usable_points(st, val, n, last, steps, loss);
        for (size_t i = 0; i < (size_t)last; i++)
            lr[i] = 1.0;
        fit_curve_options o = fit_curve_options_default();
        o.fix_C = 1;
        if (m >= MIN_POINTS + 1 &&
            fit_curve_cut_error(lr, (size_t)last, steps, loss, m, cut, &o, &e, NULL) != ST_OK)
            e = NAN;
    }
    free(steps);
    free(loss);
    free(lr);
    return e;
}

/* The store and the sweep as the interval's rules read them: opened once, when one needs them. */
typedef struct sweep_view {
    const runner_config *cfg;
    const char *db_path;
    int read;     /* 1 once view_read has run */
    st_status rc; /* its outcome */
    runner_store *s;
    runner_sweep *w;
    es_curves curves; /* the finished runs' curves, read once for both rules */
    char em[ST_ERRMSG_MAX];
} sweep_view;

static st_status view_read(sweep_view *v)
{
    if (v->read)
        return v->rc;
    v->read = 1;
    v->rc = runner_store_open(v->db_path, &v->s, v->em);
    if (!v->rc)
        v->rc = runner_store_read_sweep(v->s, v->cfg->name, &v->w);
    if (v->rc && v->s)
        snprintf(v->em, sizeof(v->em), "%s", runner_store_errmsg(v->s));
    v->curves.s = v->s;
    v->curves.metric = v->cfg->objective;
    return v->rc;
}

static void view_close(sweep_view *v)
{
    curves_free(&v->curves);
    runner_sweep_free(v->w);
    runner_store_close(v->s);
}

/* The range of the law's errors at `cut` on the latest succeeded runs of the sweep; NAN: too
 * few. */
static st_status sweep_misfit(sweep_view *v, double cut, double *err_min, double *err_max,
                              char *errmsg)
{
    *err_min = *err_max = NAN;
    st_status rc = view_read(v);
    if (rc) {
        snprintf(errmsg, ST_ERRMSG_MAX, "%s", v->em);
        return rc;
    }
    double err[MAX_SIBLINGS];
    size_t k = 0;
    for (size_t i = v->w->n_runs; i-- > 0 && k < MAX_SIBLINGS;)
        if (v->w->runs[i].status == RUNNER_RUN_SUCCEEDED && !v->w->runs[i].parent)
            err[k++] = sibling_error(&v->curves, v->w->runs[i].id, cut);
    fit_curve_misfit(err, k, err_min, err_max);
    return ST_OK;
}

/* The interval by one law: under the schedule (Tissue et al.; C fitted, the default range of
 * errors) when `schedule`, else the power law in steps with the range measured on the sweep's
 * finished runs. steps/loss: the m usable points; lr: scratch of n_steps. */
static st_status interval_by(sweep_view *v, const runner_curve *c, int schedule,
                             const size_t *steps, const double *loss, size_t m, size_t n_steps,
                             double *lr, double *pred, double *lo, double *hi, char *errmsg)
{
    int need = schedule ? MIN_POINTS + 1 : MIN_POINTS; /* C free: one more unknown */
    if (m < (size_t)need)
        return st_errf(errmsg, ST_EINVAL, "curve interval: %zu usable points, %d needed", m, need);
    fit_curve_interval_options io = fit_curve_interval_options_default();
    io.n_boot = 60;
    io.seed = c->run;
    fit_curve_options o = fit_curve_options_default();
    if (schedule) {
        memcpy(lr, c->lr, n_steps * sizeof(double)); /* Tissue et al. under its schedule */
    } else {
        st_status rc = sweep_misfit(v, fmin(c->fraction, 0.95), &io.err_min, &io.err_max, errmsg);
        if (rc)
            return rc;
        for (size_t i = 0; i < n_steps; i++)
            lr[i] = 1.0; /* the schedule is unknown: a power law in steps stands in */
        o.fix_C = 1;
    }
    return fit_curve_predict_interval(lr, n_steps, steps, loss, m, &o, &io, n_steps, pred, lo, hi,
                                      errmsg);
}

/* The borrowed interval (early_stop_borrow.c). */
static st_status borrowed(sweep_view *v, const runner_curve *c, double *pred, double *lo,
                          double *hi)
{
    char em[ST_ERRMSG_MAX];
    st_status rc = view_read(v);
    return rc ? rc : es_borrow_interval(v->cfg, &v->curves, v->w, c, pred, lo, hi, em);
}

st_status runner_curve_interval_law(const runner_config *cfg, const char *db_path,
                                    const runner_curve *c, double *pred, double *lo, double *hi,
                                    int *schedule_used, char *errmsg)
{
    char tmp[ST_ERRMSG_MAX];
    if (!errmsg)
        errmsg = tmp;
    if (schedule_used)
        *schedule_used = 0;
    if (!(c->planned_steps >= 1) || !isfinite(c->planned_steps) || !(c->fraction > 0))
        return st_errf(errmsg, ST_EINVAL, "curve interval: the run's planned steps are unknown");
    size_t n_steps = (size_t)c->planned_steps;
    size_t *steps = malloc((c->n + 1) * sizeof(size_t));
    double *loss = malloc((c->n + 1) * sizeof(double)), *lr = malloc(n_steps * sizeof(double));
    st_status rc = steps && loss && lr ? ST_OK : ST_ENOMEM;
    size_t m = rc ? 0 : usable_points(c->step, c->loss, c->n, (double)n_steps, steps, loss);
    int schedule = c->lr != NULL;
    sweep_view v = {.cfg = cfg, .db_path = db_path};
    if (!rc)
        rc = interval_by(&v, c, schedule, steps, loss, m, n_steps, lr, pred, lo, hi, errmsg);
    if (schedule && rc == ST_ENUMERIC) {
        /* the law under the schedule ran away (not a positive loss): the power law */
        schedule = 0;
        rc = interval_by(&v, c, 0, steps, loss, m, n_steps, lr, pred, lo, hi, errmsg);
    }
    /* the shape of the finished runs, when its errors on them are narrower than the law's */
    double bp, bl, bh;
    if (c->x && rc != ST_ENOMEM && rc != ST_EDB && borrowed(&v, c, &bp, &bl, &bh) == ST_OK &&
        (rc || (bh - bl) / bp < (*hi - *lo) / *pred)) {
        *pred = bp, *lo = bl, *hi = bh;
        rc = ST_OK;
        schedule = RUNNER_CURVE_BORROWED;
    }
    view_close(&v);
    if (!rc && schedule_used)
        *schedule_used = schedule;
    free(steps);
    free(loss);
    free(lr);
    return rc;
}

st_status runner_curve_interval(const runner_config *cfg, const char *db_path,
                                const runner_curve *c, double *pred, double *lo, double *hi,
                                char *errmsg)
{
    return runner_curve_interval_law(cfg, db_path, c, pred, lo, hi, NULL, errmsg);
}

st_status runner_stop_check_front(void *ctx, const runner_config *cfg, const char *db_path,
                                  const runner_curve *c, runner_stop_verdict *v)
{
    (void)ctx;
    char em[ST_ERRMSG_MAX] = "";
    if (cfg->maximize)
        return ST_OK; /* the rule is written for a minimised objective (a loss) */
    double pred, lo, hi;
    int how = 0;
    st_status rc = runner_curve_interval_law(cfg, db_path, c, &pred, &lo, &hi, &how, em);
    if (rc == ST_EINVAL)
        return ST_OK; /* too few points yet: no verdict */
    if (rc)
        return rc;
    runner_store *s = NULL;
    if ((rc = runner_store_open(db_path, &s, em)))
        return rc;
    size_t n = 0;
    double *fc = NULL, *fo = NULL;
    rc = runner_store_pareto(s, cfg->name, 0, &n, NULL, NULL, NULL);
    if (!rc && n) {
        fc = malloc(n * sizeof(double));
        fo = malloc(n * sizeof(double));
        rc = fc && fo ? runner_store_pareto(s, cfg->name, n, &n, NULL, fc, fo) : ST_ENOMEM;
    }
    runner_store_close(s);
    if (!rc) {
        runner_stop_rule_front(lo, c->planned_cost, fc, fo, n, cfg->es_margin, &v->stop, v->reason);
        size_t len = strlen(v->reason);
        if (how == RUNNER_CURVE_BORROWED && len + 40 < sizeof(v->reason))
            snprintf(v->reason + len, sizeof(v->reason) - len, " (the finished runs' curves)");
        v->bound = lo;
        v->final_cost = c->planned_cost;
    }
    free(fc);
    free(fo);
    return rc;
}
