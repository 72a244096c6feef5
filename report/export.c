/*
 * export.c — the report handle (create, destroy, getters), the JSON, CSV and Markdown
 * documents, and the atomic file writer (mkstemp in the target's directory, fsync, rename), so
 * that a reader never sees half a report. JSON is built with jansson; non-finite numbers are
 * written as null.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/report_int.h"

/* ---- a growing string -------------------------------------------------------------------- */

void rp_buf_add(rp_buf *b, const char *s)
{
    size_t l = strlen(s);
    if (b->oom)
        return;
    if (b->n + l + 1 > b->cap) {
        size_t nc = (b->n + l + 1) * 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, l + 1);
    b->n += l;
}

void rp_buf_addf(rp_buf *b, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = 1;
        return;
    }
    if ((size_t)n < sizeof(small)) {
        rp_buf_add(b, small);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->oom = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    rp_buf_add(b, big);
    free(big);
}

void rp_buf_html(rp_buf *b, const char *s)
{
    char one[2] = {0, 0};
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            rp_buf_add(b, "&amp;");
            break;
        case '<':
            rp_buf_add(b, "&lt;");
            break;
        case '>':
            rp_buf_add(b, "&gt;");
            break;
        case '"':
            rp_buf_add(b, "&quot;");
            break;
        default:
            one[0] = *s;
            rp_buf_add(b, one);
        }
    }
}

void rp_fmt(char *buf, size_t cap, double v, int dash)
{
    if (!isfinite(v))
        snprintf(buf, cap, "%s", dash ? "–" : "");
    else
        snprintf(buf, cap, "%.6g", v);
}

void rp_fmt_human(char *buf, size_t cap, double v)
{
    static const char *const si[] = {"", "k", "M", "G", "T", "P"};
    double a = fabs(v);
    if (!isfinite(v)) {
        snprintf(buf, cap, "–");
        return;
    }
    if (a < 1e4 || a >= 1e18) {
        snprintf(buf, cap, "%.4g", v);
        return;
    }
    int e = (int)floor(log10(a) / 3.0);
    double m = v / pow(1e3, e);
    if (fabs(m) >= 999.5 && e < 5) /* 999.7k reads as 1M */
        m /= 1e3, e++;
    snprintf(buf, cap, "%.3g%s", m, si[e]);
}

/* P as a percentage a person reads: "5.0%", "< 0.1%". */
void rp_fmt_percent(char *buf, size_t cap, double p)
{
    if (!isfinite(p))
        snprintf(buf, cap, "unknown");
    else if (p < 0.001)
        snprintf(buf, cap, "< 0.1%%");
    else
        snprintf(buf, cap, "%.1f%%", 100 * p);
}

void rp_fmt_rec(const report *r, const rp_hp *h, double v, char *buf, size_t cap)
{
    const char *lv =
        r->xp && isfinite(v) && v >= 0 ? fit_xp_level_name(r->xp, h->xi, (size_t)v) : NULL;
    if (lv)
        snprintf(buf, cap, "%s", lv);
    else if (r->xp && isnan(v) && isnan(r->res.value[h->xi]))
        snprintf(buf, cap, "inactive");
    else
        rp_fmt_human(buf, cap, v);
}

void rp_what_to_run(const report *r, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (!isfinite(r->rec_obj) || r->n_hp == 0)
        return;
    size_t n = 0;
    char v[64], lo[64], hi[64];
#define ADD(...)                                                                                   \
    do {                                                                                           \
        int k_ = snprintf(buf + n, cap - n, __VA_ARGS__);                                          \
        if (k_ < 0 || (size_t)k_ >= cap - n)                                                       \
            return;                                                                                \
        n += (size_t)k_;                                                                           \
    } while (0)
    ADD("What to run: ");
    for (size_t i = 0; i < r->n_hp; i++) {
        rp_fmt_rec(r, &r->hp[i], r->hp[i].rec, v, sizeof(v));
        ADD("%s%s %s", i ? ", " : "", r->pnames[r->hp[i].param], v);
    }
    rp_fmt_human(v, sizeof(v), r->target);
    ADD(" (%s %s). Expected %s: ", r->cost_metric, v, r->objective);
    rp_fmt_human(v, sizeof(v), r->rec_obj);
    rp_fmt_human(lo, sizeof(lo), r->rec_lo);
    rp_fmt_human(hi, sizeof(hi), r->rec_hi);
    ADD("%s, %.0f%% interval %s to %s", v, 100 * r->o.band_level, lo, hi);
    if (r->rec_obj > 0 && isfinite(r->rec_lo) && isfinite(r->rec_hi))
        ADD(" (%+.1f%% / %+.1f%%)", 100 * (r->rec_lo / r->rec_obj - 1),
            100 * (r->rec_hi / r->rec_obj - 1));
    rp_fmt_percent(v, sizeof(v), r->p_diverge);
    ADD(". Probability that it diverges: %s.", v);
#undef ADD
}

int rp_model_method(const report *r)
{
    return r->xp && r->res.method == FIT_XP_METHOD_MODEL;
}

void rp_front_law_backtest(const report *r, rp_buf *b)
{
    const study_backtest_result *bt = r->xp ? study_get_backtest(r->st) : NULL;
    if (rp_model_method(r) || !bt || !bt->done) {
        rp_buf_add(b, " (no backtest of the front law alone: the engine's backtest is its "
                      "model's)");
        return;
    }
    rp_buf_addf(b, " (backtest: median error %.2f%%, worst %.2f%%, %zu of %zu inside)",
                100 * bt->median_error, 100 * bt->worst_error, bt->n_inside, bt->n_held);
}

static st_status buf_done(rp_buf *b, char **out)
{
    if (b->oom || !b->p) {
        free(b->p);
        return ST_ENOMEM;
    }
    *out = b->p;
    return ST_OK;
}

/* ---- the handle -------------------------------------------------------------------------- */

report_options report_options_default(void)
{
    report_options o;
    memset(&o, 0, sizeof(o));
    o.target_compute = 0;
    o.fit_max_cost = INFINITY;
    o.validate_sweep = NULL;
    o.n_boot = 200;
    o.seed = 42;
    o.band_level = 0.9;
    o.title = NULL;
    o.expect_objective = o.expect_lo = o.expect_hi = NAN;
    o.prior_e = NAN;
    o.prior_e_sd = 0;
    o.far_weight = 0;
    return o;
}

st_status report_create(const char *db_path, const char *sweep, const report_options *o,
                        report **out, char *errmsg)
{
    char tmp[ST_ERRMSG_MAX];
    if (!errmsg)
        errmsg = tmp;
    errmsg[0] = '\0';
    *out = NULL;
    report_options d = o ? *o : report_options_default();
    if (!db_path)
        return st_errf(errmsg, ST_EINVAL, "no store path");
    if (d.target_compute < 0 || !isfinite(d.target_compute))
        return st_errf(errmsg, ST_EINVAL, "target compute must be a positive number");
    if (!(d.band_level > 0 && d.band_level < 1))
        return st_errf(errmsg, ST_EINVAL, "band level must lie in (0, 1)");
    if (d.method < 0 || d.method > 2)
        return st_errf(errmsg, ST_EINVAL, "method must be 0 (auto), 1 (front) or 2 (model)");
    if (!(d.fit_max_cost > 0))
        return st_errf(errmsg, ST_EINVAL, "fit_max_cost must be positive");
    report *r = calloc(1, sizeof(*r));
    if (!r)
        return st_errf(errmsg, ST_ENOMEM, "out of memory");
    r->o = d;
    r->db_path = strdup(db_path);
    r->validate_sweep = d.validate_sweep ? strdup(d.validate_sweep) : NULL;
    r->title = d.title ? strdup(d.title) : NULL;
    r->o.validate_sweep = r->validate_sweep;
    r->o.title = r->title;
    st_status rc = ST_OK;
    if (!r->db_path || (d.validate_sweep && !r->validate_sweep) || (d.title && !r->title))
        rc = ST_ENOMEM;
    if (!rc)
        rc = rp_load(r, db_path, sweep);
    if (!rc && !r->title) {
        size_t n = strlen(r->sweep) + 32;
        r->title = malloc(n);
        if (r->title)
            snprintf(r->title, n, "scaletune report: %s", r->sweep);
        else
            rc = ST_ENOMEM;
        r->o.title = r->title;
    }
    if (rc) {
        if (rc == ST_ENOMEM && !r->errmsg[0])
            st_errf(r->errmsg, rc, "out of memory");
        snprintf(errmsg, ST_ERRMSG_MAX, "%s", r->errmsg);
        report_destroy(r);
        return rc;
    }
    *out = r;
    return ST_OK;
}

void report_destroy(report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_runs; i++) {
        free(r->runs[i].status);
        free(r->runs[i].failure);
        free(r->runs[i].x);
    }
    free(r->runs);
    for (size_t i = 0; i < r->n_curves; i++) {
        free(r->curves[i].x);
        free(r->curves[i].pred_x);
        free(r->curves[i].y);
    }
    free(r->curves);
    for (size_t i = 0; i < r->n_params; i++)
        free(r->pnames[i]);
    free(r->pnames);
    free(r->pspace);
    free(r->pint);
    free(r->pmin);
    free(r->pmax);
    free(r->pround);
    study_destroy(r->st);
    runner_sweep_free(r->sw);
    runner_sweep_free(r->vsw);
    free(r->val_alerts);
    free(r->xp_run);
    free(r->front_cost);
    free(r->front_obj);
    free(r->front_count);
    free(r->front);
    free(r->att);
    free(r->hp);
    free(r->title);
    free(r->validate_sweep);
    free(r->sweep);
    free(r->objective);
    free(r->goal);
    free(r->cost_metric);
    free(r->db_path);
    free(r);
}

const char *report_errmsg(const report *r)
{
    return r ? r->errmsg : "";
}

size_t report_n_runs(const report *r)
{
    size_t n = 0; /* cooldown branches are points of their runs, not runs */
    for (size_t i = 0; i < r->n_sweep_runs; i++)
        n += !r->runs[i].branch;
    return n;
}

size_t report_n_pareto(const report *r)
{
    return r->n_front;
}

size_t report_n_beyond(const report *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_runs; i++)
        n += r->runs[i].beyond;
    return n;
}

int report_validation(const report *r, report_validation_info *v)
{
    if (!r || !r->has_validation)
        return 0;
    memset(v, 0, sizeof(*v));
    v->run = r->val_run;
    v->objective = r->objective;
    v->actual = r->val_actual;
    v->predicted = r->val_pred;
    v->lo = r->val_lo;
    v->hi = r->val_hi;
    v->cost = NAN;
    for (size_t i = 0; i < r->n_runs; i++)
        if (r->runs[i].beyond && r->runs[i].id == r->val_run)
            v->cost = r->runs[i].cost;
    v->largest_fitted_cost = r->cost_hi > 0 ? r->cost_hi : NAN;
    v->expected = r->val_expected;
    return 1;
}

size_t report_n_figures(const report *r)
{
    /* front, one per searched parameter, loss curves, failures; predicted vs actual when a
     * run lies beyond the fit (html.c draws exactly these) */
    return 3 + r->n_hp + (report_n_beyond(r) > 0);
}

/* ---- JSON -------------------------------------------------------------------------------- */

static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *jpair(double lo, double hi)
{
    json_t *a = json_array();
    json_array_append_new(a, jnum(lo));
    json_array_append_new(a, jnum(hi));
    return a;
}

static const char *space_name(int s)
{
    return s == 1 ? "log" : s == 2 ? "logit" : s == 0 ? "linear" : "fixed";
}

/* The study's result as a JSON object, or {compute, method "none", warnings: [why]} when the
 * engine could not run. NULL when out of memory. */
static json_t *study_json(const report *r)
{
    char *text = NULL;
    if (r->xp && study_result_json(r->st, &text) == ST_OK) {
        json_t *j = json_loads(text, 0, NULL);
        st_free(text);
        return j;
    }
    if (r->xp)
        return NULL;
    json_t *rec = json_object(), *warn = json_array();
    json_object_set_new(rec, "compute", jnum(r->target));
    json_object_set_new(rec, "method", json_string("none"));
    json_object_set_new(rec, "safe", json_false());
    json_array_append_new(warn, json_string(r->xp_note));
    json_object_set_new(rec, "warnings", warn);
    return rec;
}

/* one run: its status, parameters, objective, cost, and the prediction when beyond the fit */
static json_t *run_json(const report *r, const rp_run *u)
{
    json_t *j = json_object(), *p = json_object();
    json_object_set_new(j, "id", json_integer((json_int_t)u->id));
    json_object_set_new(j, "status", json_string(u->status));
    json_object_set_new(j, "failure", json_string(u->failure));
    for (size_t k = 0; k < r->n_params; k++)
        json_object_set_new(p, r->pnames[k], jnum(u->x[k]));
    json_object_set_new(j, "params", p);
    json_object_set_new(j, "objective", jnum(u->objective));
    json_object_set_new(j, "cost", jnum(u->cost));
    json_object_set_new(j, "attempts", json_integer((json_int_t)u->n_attempts));
    json_object_set_new(j, "pareto", json_boolean(u->on_front));
    json_object_set_new(j, "beyond_fit", json_boolean(u->beyond));
    if (u->validation)
        json_object_set_new(j, "validation_sweep", json_string(r->validate_sweep));
    if (u->branch) /* a cooldown branch: a point of that run */
        json_object_set_new(j, "parent_run", json_integer((json_int_t)u->branch));
    if (u->beyond) {
        json_t *pr = json_object();
        json_object_set_new(pr, "objective", jnum(u->pred));
        json_object_set_new(pr, "lo", jnum(u->pred_lo));
        json_object_set_new(pr, "hi", jnum(u->pred_hi));
        json_object_set_new(pr, "p_diverge", jnum(u->pred_p));
        json_object_set_new(j, "predicted", pr);
    }
    if (u->n_env) { /* the model at its settings with fewer tokens (rp_run.env_*) */
        json_t *env = json_array();
        for (size_t k = 0; k < u->n_env; k++) {
            json_t *e = json_object();
            json_object_set_new(e, "token_fraction", jnum(u->env_f[k]));
            json_object_set_new(e, "objective", jnum(u->env_y[k]));
            json_object_set_new(e, "lo", jnum(u->env_lo[k]));
            json_object_set_new(e, "hi", jnum(u->env_hi[k]));
            json_array_append_new(env, e);
        }
        json_object_set_new(j, "predicted_curve", env);
    }
    return j;
}

/* the Pareto front's groups: the run that stands for each, its cost, objective and run count */
static json_t *front_json(const report *r)
{
    json_t *front = json_array();
    for (size_t i = 0; i < r->n_front; i++) {
        const rp_run *u = &r->runs[r->front[i]];
        json_t *j = json_object();
        json_object_set_new(j, "id", json_integer((json_int_t)u->id));
        json_object_set_new(j, "cost", jnum(r->front_cost[i]));
        json_object_set_new(j, "objective", jnum(r->front_obj[i]));
        json_object_set_new(j, "runs", json_integer((json_int_t)r->front_count[i]));
        json_array_append_new(front, j);
    }
    return front;
}

/* the front's loss law against cost, with its value at the target, or why there is none */
static json_t *loss_law_json(const report *r)
{
    json_t *loss = json_object();
    json_object_set_new(loss, "law", json_string("saturating: y = E + A C^-alpha"));
    json_object_set_new(loss, "ok", json_boolean(r->loss_law.ok));
    if (r->loss_law.ok) {
        static const char *const nm[] = {"A", "alpha", "E"};
        json_t *par = json_object(), *at = json_object();
        for (int k = 0; k < 3; k++)
            json_object_set_new(par, nm[k], jnum(r->loss_nat[k]));
        json_object_set_new(loss, "params", par);
        json_object_set_new(loss, "n_points", json_integer((json_int_t)r->n_front));
        json_object_set_new(loss, "n_boot", json_integer((json_int_t)r->o.n_boot));
        json_object_set_new(at, "objective", jnum(r->loss_at));
        json_object_set_new(at, "lo", jnum(r->loss_at_lo));
        json_object_set_new(at, "hi", jnum(r->loss_at_hi));
        json_object_set_new(loss, "at_target", at);
    } else {
        json_object_set_new(loss, "note", json_string(r->xp ? r->loss_note : r->xp_note));
    }
    return loss;
}

/* one hyperparameter's front law against cost, with its value at the target */
static json_t *hp_law_json(const report *r, const rp_hp *h)
{
    json_t *j = json_object();
    json_object_set_new(j, "space", json_string(space_name(h->space)));
    if (r->xp)
        json_object_set_new(j, "role",
                            json_string(fit_xp_role_name(fit_xp_param_role(r->xp, h->xi))));
    json_object_set_new(j, "ok", json_boolean(h->ok));
    if (h->ok) {
        json_object_set_new(j, "intercept", jnum(h->b0));
        json_object_set_new(j, "slope", jnum(h->b1));
        json_object_set_new(j, "slope_interval", jpair(h->b1_lo, h->b1_hi));
        json_t *at = json_object();
        json_object_set_new(at, "value", jnum(h->at_target));
        json_object_set_new(at, "lo", jnum(h->lo));
        json_object_set_new(at, "hi", jnum(h->hi));
        json_object_set_new(j, "at_target", at);
    }
    return j;
}

/* the front's laws (loss and each hyperparameter against cost) */
static json_t *front_laws_json(const report *r)
{
    json_t *fits = json_object(), *hps = json_object();
    json_object_set_new(fits, "loss_vs_cost", loss_law_json(r));
    json_object_set_new(fits, "hyperparameter_law",
                        json_string("b = intercept + slope ln C; b = ln v (log space), "
                                    "ln(v / (1 - v)) (logit), v (linear)"));
    for (size_t i = 0; i < r->n_hp; i++)
        json_object_set_new(hps, r->pnames[r->hp[i].param], hp_law_json(r, &r->hp[i]));
    json_object_set_new(fits, "hyperparameters", hps);
    json_object_set_new(fits, "band_level", json_real(r->o.band_level));
    return fits;
}

/* the validation run against the prediction written before it */
static json_t *validation_json(report *r)
{
    json_t *v = json_object();
    json_object_set_new(v, "run", json_integer((json_int_t)r->val_run));
    json_object_set_new(v, "actual", jnum(r->val_actual));
    json_object_set_new(v, "predicted", jnum(r->val_pred));
    json_object_set_new(v, "lo", jnum(r->val_lo));
    json_object_set_new(v, "hi", jnum(r->val_hi));
    json_object_set_new(v, "level", jnum(r->o.band_level));
    json_object_set_new(v, "rel_error", jnum(r->val_actual / r->val_pred - 1));
    json_object_set_new(v, "inside",
                        isfinite(r->val_lo) && isfinite(r->val_hi)
                            ? json_boolean(r->val_actual >= r->val_lo && r->val_actual <= r->val_hi)
                            : json_null());
    json_object_set_new(v, "prediction", json_string(r->val_expected ? "expected" : "model"));
    report_validation_info vi;
    report_validation(r, &vi);
    json_object_set_new(v, "cost", jnum(vi.cost));
    json_object_set_new(v, "largest_fitted_cost", jnum(vi.largest_fitted_cost));
    return v;
}

/* the large run's health alerts */
static json_t *alerts_json(const report *r)
{
    json_t *al = json_array();
    for (size_t i = 0; i < r->n_val_alerts; i++) {
        const runner_alert *a = &r->val_alerts[i];
        json_t *j = json_object();
        json_object_set_new(j, "run", json_integer((json_int_t)a->run));
        json_object_set_new(j, "kind", json_string(a->kind));
        json_object_set_new(j, "step", a->step >= 0 ? json_integer(a->step) : json_null());
        json_object_set_new(j, "message", json_string(a->message));
        json_array_append_new(al, j);
    }
    return al;
}

st_status report_json_dup(report *r, char **out)
{
    *out = NULL;
    r->errmsg[0] = '\0';
    json_t *root = json_object(), *runs = json_array();
    json_object_set_new(root, "sweep", json_string(r->sweep));
    json_object_set_new(root, "objective", json_string(r->objective));
    json_object_set_new(root, "goal", json_string(r->goal));
    json_object_set_new(root, "cost_metric", json_string(r->cost_metric));
    for (size_t i = 0; i < r->n_runs; i++)
        json_array_append_new(runs, run_json(r, &r->runs[i]));
    json_object_set_new(root, "runs", runs);
    json_object_set_new(root, "pareto", front_json(r));
    json_t *fits = front_laws_json(r);
    /* the recommendation and the model's laws: the study's own JSON, written by study/ */
    json_t *rec = study_json(r);
    if (!rec) {
        json_decref(fits);
        json_decref(root);
        return st_errf(r->errmsg, ST_ENOMEM, "out of memory");
    }
    json_t *model = json_object_get(rec, "model");
    if (model) {
        json_object_set_new(model, "law", json_string("L(N, D) = E + A N^-alpha + B D^-beta"));
        json_object_set(fits, "model", model);
    }
    json_object_set_new(root, "fits", fits);
    json_object_set_new(rec, "source", json_string(r->rec_source));
    json_object_set_new(root, "recommendation", rec);
    if (r->has_validation)
        json_object_set_new(root, "validation", validation_json(r));
    if (r->n_val_alerts)
        json_object_set_new(root, "validation_alerts", alerts_json(r));
    char *s = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(root);
    if (!s)
        return st_errf(r->errmsg, ST_ENOMEM, "out of memory");
    *out = s; /* jansson allocates with malloc (its default): st_free releases it */
    return ST_OK;
}

/* ---- CSV --------------------------------------------------------------------------------- */

/* A CSV field: quoted when it holds a comma, quote or newline (RFC 4180). */
static void csv_field(rp_buf *b, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        rp_buf_add(b, s);
        return;
    }
    rp_buf_add(b, "\"");
    for (; *s; s++)
        rp_buf_add(b, *s == '"' ? "\"\"" : (char[2]){*s, 0});
    rp_buf_add(b, "\"");
}

static void csv_num(rp_buf *b, double v)
{
    if (isfinite(v))
        rp_buf_addf(b, "%.17g", v);
}

st_status report_csv_dup(report *r, char **out)
{
    *out = NULL;
    r->errmsg[0] = '\0';
    rp_buf b = {0};
    rp_buf_add(&b, "id,status");
    for (size_t k = 0; k < r->n_params; k++) {
        rp_buf_add(&b, ",");
        csv_field(&b, r->pnames[k]);
    }
    rp_buf_add(&b, ",objective,cost,attempts\n");
    for (size_t i = 0; i < r->n_sweep_runs; i++) {
        const rp_run *u = &r->runs[i];
        if (u->branch)
            continue; /* a point of its parent run (the JSON has it with parent_run) */
        rp_buf_addf(&b, "%lld,", (long long)u->id);
        csv_field(&b, u->status);
        for (size_t k = 0; k < r->n_params; k++) {
            rp_buf_add(&b, ",");
            csv_num(&b, u->x[k]);
        }
        rp_buf_add(&b, ",");
        csv_num(&b, u->objective);
        rp_buf_add(&b, ",");
        csv_num(&b, u->cost);
        rp_buf_addf(&b, ",%zu\n", u->n_attempts);
    }
    st_status rc = buf_done(&b, out);
    return rc ? st_errf(r->errmsg, rc, "out of memory") : ST_OK;
}

/* ---- Markdown ---------------------------------------------------------------------------- */

/* Markdown table cell: '|' escaped. */
static void md_cell(rp_buf *b, const char *s)
{
    for (; *s; s++)
        rp_buf_add(b, *s == '|' ? "\\|" : (char[2]){*s, 0});
}

st_status report_md_dup(report *r, char **out)
{
    *out = NULL;
    r->errmsg[0] = '\0';
    rp_buf b = {0};
    char v1[64], v2[64], v3[64];
    rp_buf_add(&b, "# ");
    md_cell(&b, r->title);
    rp_buf_add(&b, "\n\n| | |\n| --- | --- |\n| sweep | ");
    md_cell(&b, r->sweep);
    rp_buf_add(&b, " |\n| objective | ");
    md_cell(&b, r->objective);
    rp_buf_addf(&b, " (%s) |\n| cost | ", r->goal);
    md_cell(&b, r->cost_metric);
    size_t n_ok = 0, n_att = 0, n_br = 0;
    for (size_t i = 0; i < r->n_sweep_runs; i++)
        n_ok += r->runs[i].succeeded, n_att += r->runs[i].n_attempts, n_br += !!r->runs[i].branch;
    rp_buf_addf(&b,
                " |\n| runs | %zu (%zu succeeded) |\n| attempts | %zu |\n| Pareto runs | %zu |\n",
                r->n_sweep_runs - n_br, n_ok, n_att, r->n_front);

    rp_fmt_human(v1, sizeof(v1), r->target);
    rp_buf_addf(&b, "\n## Recommendation at compute %s (method: %s)\n\n", v1, rp_method_name(r));
    char what[1024];
    rp_what_to_run(r, what, sizeof(what));
    if (what[0]) {
        rp_buf_add(&b, "**");
        md_cell(&b, what);
        rp_buf_add(&b, "**\n\n");
    }
    rp_buf_add(&b, "| parameter | value | lo | hi |\n| --- | --- | --- | --- |\n");
    for (size_t i = 0; i < r->n_hp; i++) {
        const rp_hp *h = &r->hp[i];
        rp_fmt_rec(r, h, h->rec, v1, sizeof(v1));
        rp_fmt_rec(r, h, h->rec_lo, v2, sizeof(v2));
        rp_fmt_rec(r, h, h->rec_hi, v3, sizeof(v3));
        rp_buf_add(&b, "| ");
        md_cell(&b, r->pnames[h->param]);
        rp_buf_addf(&b, " | %s | %s | %s |\n", v1, v2, v3);
    }
    rp_fmt_human(v1, sizeof(v1), r->rec_obj);
    rp_fmt_human(v2, sizeof(v2), r->rec_lo);
    rp_fmt_human(v3, sizeof(v3), r->rec_hi);
    rp_buf_add(&b, "| predicted ");
    md_cell(&b, r->objective);
    rp_buf_addf(&b, " | %s | %s | %s |\n", v1, v2, v3);
    rp_fmt_percent(v1, sizeof(v1), r->p_diverge);
    rp_buf_addf(&b, "| p(diverge) | %s | | |\n\nSource: %s.\n", v1, r->rec_source);
    const char *warn = r->xp ? r->res.warning_text : r->xp_note;
    if (warn && *warn) {
        rp_buf_add(&b, "\nWarnings: ");
        md_cell(&b, warn);
        rp_buf_add(&b, ".\n");
    }

    if (r->has_validation) {
        rp_buf_add(&b, "\n## Validation\n\n| run | actual | predicted | lo | hi |\n"
                       "| --- | --- | --- | --- | --- |\n");
        char v4[64];
        rp_fmt_human(v1, sizeof(v1), r->val_actual);
        rp_fmt_human(v2, sizeof(v2), r->val_pred);
        rp_fmt_human(v3, sizeof(v3), r->val_lo);
        rp_fmt_human(v4, sizeof(v4), r->val_hi);
        rp_buf_addf(&b, "| %lld | %s | %s | %s | %s |\n", (long long)r->val_run, v1, v2, v3, v4);
    }

    rp_buf_add(&b, "\n## Pareto front\n\n| run | cost | objective |\n| --- | --- | --- |\n");
    for (size_t i = 0; i < r->n_front; i++) {
        const rp_run *u = &r->runs[r->front[i]];
        rp_fmt_human(v1, sizeof(v1), r->front_cost[i]);
        rp_fmt_human(v2, sizeof(v2), r->front_obj[i]);
        rp_buf_addf(&b, "| %lld | %s | %s |\n", (long long)u->id, v1, v2);
    }

    rp_buf_add(&b, "\n## Fits\n\n");
    if (r->loss_law.ok) {
        rp_buf_add(&b, "CARBS' analysis (Pareto front law): objective against cost on the front, "
                       "y = E + A C^-alpha");
        rp_front_law_backtest(r, &b);
        rp_buf_add(&b, ":\n\n| parameter | value | lo | hi |\n| --- | --- | --- | --- |\n");
        static const char *const nm[] = {"A", "alpha", "E"};
        for (int k = 0; k < 3; k++) {
            rp_fmt_human(v1, sizeof(v1), r->loss_nat[k]);
            rp_buf_addf(&b, "| %s | %s | | |\n", nm[k], v1);
        }
        if (!rp_model_method(r)) { /* else the one prediction is the model's, above */
            rp_fmt_human(v1, sizeof(v1), r->loss_at);
            rp_fmt_human(v2, sizeof(v2), r->loss_at_lo);
            rp_fmt_human(v3, sizeof(v3), r->loss_at_hi);
            rp_buf_addf(&b, "| y at the target | %s | %s | %s |\n", v1, v2, v3);
        }
    } else {
        rp_buf_addf(&b, "%s.\n", r->xp ? r->loss_note : r->xp_note);
    }
    rp_buf_add(&b, "\nParameters along the front, basic coordinate (ln v for log spaces, "
                   "ln(v / (1 - v)) for logit, v for linear) = intercept + slope ln C:\n\n"
                   "| parameter | space | intercept | slope | slope lo | slope hi |\n"
                   "| --- | --- | --- | --- | --- | --- |\n");
    for (size_t i = 0; i < r->n_hp; i++) {
        const rp_hp *h = &r->hp[i];
        char v4[64];
        rp_fmt(v1, sizeof(v1), h->ok ? h->b0 : NAN, 1);
        rp_fmt(v2, sizeof(v2), h->ok ? h->b1 : NAN, 1);
        rp_fmt(v3, sizeof(v3), h->b1_lo, 1);
        rp_fmt(v4, sizeof(v4), h->b1_hi, 1);
        rp_buf_add(&b, "| ");
        md_cell(&b, r->pnames[h->param]);
        rp_buf_addf(&b, " | %s | %s | %s | %s | %s |\n", space_name(h->space), v1, v2, v3, v4);
    }
    st_status rc = buf_done(&b, out);
    return rc ? st_errf(r->errmsg, rc, "out of memory") : ST_OK;
}

st_status report_html_dup(report *r, char **out)
{
    *out = NULL;
    r->errmsg[0] = '\0';
    return rp_html(r, out);
}

/* ---- atomic files ------------------------------------------------------------------------ */

static st_status write_atomic(report *r, const char *path, const char *text)
{
    size_t n = strlen(path);
    char *tmp = malloc(n + 16);
    if (!tmp)
        return st_errf(r->errmsg, ST_ENOMEM, "out of memory");
    snprintf(tmp, n + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        st_errf(r->errmsg, ST_EIO, "%s: cannot create a file there: %s", path, strerror(errno));
        free(tmp);
        return ST_EIO;
    }
    size_t len = strlen(text), done = 0;
    int err = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            err = errno ? errno : EIO;
            break;
        }
        done += (size_t)w;
    }
    /* readable like any other output file (mkstemp makes it 0600) */
    if (!err && fchmod(fd, 0644) != 0)
        err = errno;
    if (!err && fsync(fd) != 0)
        err = errno;
    if (close(fd) != 0 && !err)
        err = errno;
    if (!err && rename(tmp, path) != 0)
        err = errno;
    if (err) {
        unlink(tmp);
        st_errf(r->errmsg, ST_EIO, "%s: %s", path, strerror(err));
    }
    free(tmp);
    return err ? ST_EIO : ST_OK;
}

typedef st_status (*dup_fn)(report *r, char **out);

static st_status write_doc(report *r, const char *path, dup_fn fn)
{
    r->errmsg[0] = '\0';
    if (!path)
        return st_errf(r->errmsg, ST_EINVAL, "no output path");
    char *s = NULL;
    st_status rc = fn(r, &s);
    if (!rc)
        rc = write_atomic(r, path, s);
    st_free(s);
    return rc;
}

st_status report_write_html(report *r, const char *path)
{
    return write_doc(r, path, report_html_dup);
}

st_status report_write_json(report *r, const char *path)
{
    return write_doc(r, path, report_json_dup);
}

st_status report_write_csv(report *r, const char *path)
{
    return write_doc(r, path, report_csv_dup);
}

st_status report_write_md(report *r, const char *path)
{
    return write_doc(r, path, report_md_dup);
}
