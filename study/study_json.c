/*
 * study_json.c — the result of a study as JSON, written here and nowhere else: the
 * recommendation with intervals and roles, the prediction, P(diverge), whether it is safe and
 * why not, which runs went in, the warnings, CARBS' front analysis and the model's laws.
 * Fields: docs/cli/extrapolate.md.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "study/study_int.h"

static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *jpair(double a, double b)
{
    json_t *p = json_array();
    json_array_append_new(p, jnum(a));
    json_array_append_new(p, jnum(b));
    return p;
}

/* "a; b; c" -> ["a", "b", "c"], appended to arr. */
static void add_split(json_t *arr, const char *w)
{
    while (w && *w) {
        const char *e = strstr(w, "; ");
        size_t len = e ? (size_t)(e - w) : strlen(w);
        json_array_append_new(arr, json_stringn(w, len));
        w = e ? e + 2 : NULL;
    }
}

/* Engine parameter j's value v: a categorical's choice string, null where inactive (NAN). */
static json_t *jvalue(const study *s, size_t j, double v)
{
    const char *c = runner_param_choice(&s->w->cfg->params[s->pidx[j]], v);
    return s->par[j].n_levels && c ? json_string(c) : jnum(v);
}

/* recommended, intervals, roles; fixed numeric parameters copied so the setting is complete */
static void add_recommendation(const study *s, json_t *o)
{
    const fit_xp_result *r = &s->res;
    int banded = s->o.engine.n_boot > 0; /* no replicates: no intervals */
    json_t *rec = json_object(), *iv = json_object(), *roles = json_object();
    for (size_t j = 0; j < s->P; j++) {
        json_object_set_new(rec, s->par[j].name, jvalue(s, j, r->value[j]));
        json_object_set_new(iv, s->par[j].name,
                            banded ? jpair(r->lo[j], r->hi[j]) : jpair(NAN, NAN));
        json_object_set_new(roles, s->par[j].name,
                            json_string(fit_xp_role_name(fit_xp_param_role(s->xp, j))));
    }
    const runner_config *cfg = s->w->cfg;
    json_t *fixed = json_object();
    for (size_t i = 0; i < cfg->n_params; i++) {
        const runner_param_spec *ps = &cfg->params[i];
        if (ps->is_fixed)
            json_object_set_new(fixed, ps->p.name,
                                isnan(ps->fixed_value) ? json_string(ps->fixed_text)
                                                       : json_real(ps->fixed_value));
    }
    json_object_set_new(o, "recommended", rec);
    json_object_set_new(o, "fixed", fixed);
    json_object_set_new(o, "intervals", iv);
    json_object_set_new(o, "roles", roles);
    json_t *pred = json_object();
    json_object_set_new(pred, "objective", jnum(r->objective));
    json_object_set_new(pred, "lo", jnum(banded ? r->objective_lo : NAN));
    json_object_set_new(pred, "hi", jnum(banded ? r->objective_hi : NAN));
    json_object_set_new(pred, "level", jnum(s->o.engine.level));
    json_object_set_new(o, "predicted", pred);
    json_object_set_new(o, "p_diverge", jnum(r->p_diverge));
    json_object_set_new(o, "safe", json_boolean(s->safe));
    json_object_set_new(o, "unsafe_reason", s->safe ? json_null() : json_string(s->unsafe_reason));
    json_t *nd = json_object();
    json_object_set_new(nd, "N", jnum(r->N));
    json_object_set_new(nd, "N_interval", jpair(r->N_lo, r->N_hi));
    json_object_set_new(nd, "D_interval", jpair(r->D_lo, r->D_hi));
    json_object_set_new(nd, "N_lo", jnum(r->N_lo));
    json_object_set_new(nd, "N_hi", jnum(r->N_hi));
    json_object_set_new(nd, "D", jnum(r->D));
    json_object_set_new(nd, "D_lo", jnum(r->D_lo));
    json_object_set_new(nd, "D_hi", jnum(r->D_hi));
    json_object_set_new(o, "size", nd);
}

static void add_counts(const study *s, json_t *o)
{
    const study_counts *c = &s->counts;
    json_t *j = json_object();
    json_object_set_new(j, "total", json_integer((json_int_t)c->n_runs));
    json_object_set_new(j, "used", json_integer((json_int_t)c->n_used));
    json_object_set_new(j, "succeeded", json_integer((json_int_t)c->n_succeeded));
    json_object_set_new(j, "diverged", json_integer((json_int_t)c->n_diverged));
    json_object_set_new(j, "over_budget", json_integer((json_int_t)c->n_over_budget));
    json_object_set_new(j, "resource", json_integer((json_int_t)c->n_resource));
    json_object_set_new(j, "infrastructure", json_integer((json_int_t)c->n_infra));
    json_object_set_new(j, "bad_final", json_integer((json_int_t)c->n_bad_final));
    json_object_set_new(j, "unfinished", json_integer((json_int_t)c->n_unfinished));
    json_object_set_new(j, "stopped_early", json_integer((json_int_t)c->n_stopped_early));
    json_object_set_new(j, "unusable", json_integer((json_int_t)c->n_unusable));
    json_object_set_new(j, "beyond_fit", json_integer((json_int_t)c->n_beyond));
    json_object_set_new(j, "branch_points", json_integer((json_int_t)c->n_branch_points));
    json_object_set_new(j, "branch_unused", json_integer((json_int_t)c->n_branch_unused));
    json_object_set_new(o, "runs", j);
    json_object_set_new(o, "n_runs", json_integer((json_int_t)c->n_used));
    json_object_set_new(o, "n_failed", json_integer((json_int_t)c->n_diverged));
}

static void add_backtest(const study *s, json_t *o)
{
    const study_backtest_result *b = &s->backtest;
    if (!b->done) {
        json_object_set_new(o, "backtest", json_null());
        return;
    }
    json_t *j = json_object();
    json_object_set_new(j, "held_out_by", json_string(b->by_model_size ? "N" : "cost"));
    json_object_set_new(j, "n_held", json_integer((json_int_t)b->n_held));
    json_object_set_new(j, "n_inside", json_integer((json_int_t)b->n_inside));
    json_object_set_new(j, "level", jnum(s->o.engine.level));
    json_object_set_new(j, "factor", jnum(b->factor));
    json_object_set_new(j, "median_error", jnum(b->median_error));
    json_object_set_new(j, "worst_error", jnum(b->worst_error));
    json_object_set_new(o, "backtest", j);
}

/* CARBS' analysis: the front, each parameter's law along it, the objective's law. */
static json_t *front_json(const study *s)
{
    const fit_xp *xp = s->xp;
    json_t *front = json_object(), *pts = json_array(), *laws = json_object();
    for (size_t k = 0; k < fit_xp_front_n(xp); k++) {
        size_t run, cnt;
        double c, y;
        fit_xp_front_get(xp, k, &run, &c, &y, &cnt);
        json_t *pt = json_object();
        json_object_set_new(pt, "cost", jnum(c));
        json_object_set_new(pt, "objective", jnum(y));
        json_object_set_new(pt, "count", json_integer((json_int_t)cnt));
        json_array_append_new(pts, pt);
    }
    for (size_t j = 0; j < s->P; j++) {
        double coef[2], ci[2];
        if (fit_xp_front_law(xp, j, coef, ci) != ST_OK)
            continue;
        json_t *l = json_object();
        json_object_set_new(l, "intercept", jnum(coef[0]));
        json_object_set_new(l, "slope", jnum(coef[1]));
        json_object_set_new(l, "slope_interval", jpair(ci[0], ci[1]));
        json_object_set_new(laws, s->par[j].name, l);
    }
    json_object_set_new(front, "points", pts);
    json_object_set_new(front, "laws", laws);
    double nat[3];
    if (fit_xp_front_loss_law(xp, nat) == ST_OK) {
        json_t *l = json_object();
        json_object_set_new(l, "A", jnum(nat[0]));
        json_object_set_new(l, "alpha", jnum(nat[1]));
        json_object_set_new(l, "E", jnum(nat[2]));
        json_object_set_new(front, "objective_law", l);
    }
    double *fv = malloc((s->P + 1) * sizeof(double));
    if (fv && fit_xp_front_recommend(xp, fv) == ST_OK) {
        json_t *fr = json_object();
        for (size_t j = 0; j < s->P; j++)
            json_object_set_new(fr, s->par[j].name, jnum(fv[j]));
        json_object_set_new(front, "recommended", fr);
    }
    free(fv);
    return front;
}

static json_t *hp_laws_json(const study *s)
{
    json_t *hp = json_object();
    for (size_t j = 0; j < s->P; j++) {
        double coef[3], curv, sat;
        if (fit_xp_hp_law(s->xp, j, coef, &curv, &sat) != ST_OK)
            continue;
        json_t *l = json_object();
        json_object_set_new(l, "intercept", jnum(coef[0]));
        json_object_set_new(l, "slope_lnN", jnum(coef[1]));
        json_object_set_new(l, "slope_lnD", jnum(coef[2]));
        json_object_set_new(l, "curvature", jnum(curv));
        json_object_set_new(l, "saturation", jnum(sat));
        json_t *cp = json_object();
        for (size_t q = 0; q < s->P; q++) {
            double t;
            if (fit_xp_hp_coupling(s->xp, j, q, &t) == ST_OK)
                json_object_set_new(cp, s->par[q].name, jnum(t));
        }
        json_object_set_new(l, "couplings", cp);
        json_object_set_new(hp, s->par[j].name, l);
    }
    return hp;
}

/* A categorical's factor (MODEL): per level its offset in ln loss and lr shift with their
 * intervals against the reference level, its successful runs, whether it may be recommended. */
static json_t *factor_json(const study *s, size_t j)
{
    json_t *f = json_object(), *lv = json_object();
    size_t ref = 0;
    for (size_t l = 0; l < s->par[j].n_levels; l++) {
        double off[3], sh[3];
        size_t n_ok = 0;
        if (fit_xp_level_effect(s->xp, j, l, off, sh, &ref, &n_ok) != ST_OK)
            continue;
        json_t *e = json_object();
        json_object_set_new(e, "ln_loss_offset", jnum(off[0]));
        json_object_set_new(e, "ln_loss_offset_interval", jpair(off[1], off[2]));
        json_object_set_new(e, "lr_shift", jnum(sh[0]));
        json_object_set_new(e, "lr_shift_interval", jpair(sh[1], sh[2]));
        json_object_set_new(e, "succeeded", json_integer((json_int_t)n_ok));
        json_object_set_new(e, "recommendable",
                            json_boolean(n_ok && n_ok >= s->o.engine.min_level_ok));
        json_object_set_new(lv, fit_xp_level_name(s->xp, j, l), e);
    }
    json_object_set_new(f, "reference", json_string(fit_xp_level_name(s->xp, j, ref)));
    json_object_set_new(f, "recommended", jvalue(s, j, s->res.value[j]));
    json_object_set_new(f, "levels", lv);
    return f;
}

/* The model of every run, or NULL when it was not fitted. */
static json_t *model_json(const study *s)
{
    double ch[5], k, g[4];
    fit_alloc al;
    if (fit_xp_chinchilla(s->xp, ch, &al) != ST_OK)
        return NULL;
    json_t *m = json_object(), *c = json_object(), *a = json_object();
    const char *cn[5] = {"A", "B", "E", "alpha", "beta"};
    for (size_t i = 0; i < 5; i++)
        json_object_set_new(c, cn[i], jnum(ch[i]));
    json_object_set_new(m, "chinchilla", c);
    json_object_set_new(a, "N_opt", jnum(al.N_opt));
    json_object_set_new(a, "D_opt", jnum(al.D_opt));
    json_object_set_new(a, "tokens_per_param", jnum(al.tokens_per_param));
    json_object_set_new(a, "L_opt", jnum(al.L_opt));
    json_object_set_new(m, "allocation", a);
    if (fit_xp_cost_model(s->xp, &k) == ST_OK)
        json_object_set_new(m, "cost_ln_k", jnum(k));
    json_object_set_new(m, "hyperparameter_laws", hp_laws_json(s));
    json_t *fac = json_object();
    for (size_t j = 0; j < s->P; j++)
        if (s->par[j].n_levels)
            json_object_set_new(fac, s->par[j].name, factor_json(s, j));
    json_object_set_new(m, "categorical", fac);
    if (fit_xp_divergence(s->xp, g) == ST_OK) {
        json_t *d = json_array();
        for (size_t i = 0; i < 4; i++)
            json_array_append_new(d, jnum(g[i]));
        json_object_set_new(m, "divergence_logit", d);
    }
    return m;
}

st_status study_result_json(const study *s, char **out)
{
    *out = NULL;
    if (!s || !s->xp)
        return ST_ESTATE;
    const fit_xp_result *r = &s->res;
    json_t *o = json_object();
    json_object_set_new(o, "sweep", json_string(s->w->cfg->name));
    json_object_set_new(o, "objective_name", json_string(s->w->cfg->objective));
    json_object_set_new(o, "compute", jnum(r->compute));
    json_object_set_new(o, "largest_cost", jnum(r->largest_cost));
    json_object_set_new(o, "factor", jnum(r->compute / r->largest_cost));
    json_object_set_new(o, "method",
                        json_string(r->method == FIT_XP_METHOD_MODEL ? "model" : "front"));
    json_object_set_new(o, "level", jnum(s->o.engine.level));
    add_recommendation(s, o);
    json_t *warn = json_array();
    add_split(warn, r->warning_text);
    add_split(warn, s->warn);
    json_object_set_new(o, "warnings", warn);
    add_counts(s, o);
    add_backtest(s, o);
    json_object_set_new(o, "front", front_json(s));
    json_t *m = model_json(s);
    if (m)
        json_object_set_new(o, "model", m);
    *out = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    json_decref(o);
    return *out ? ST_OK : ST_ENOMEM;
}

st_status study_extrapolate_json(const char *db_path, const char *sweep, double compute,
                                 double factor, size_t n_boot, char **out, char *errmsg)
{
    *out = NULL;
    study_options o = study_options_default();
    o.compute = compute;
    if (isfinite(factor) && factor > 0)
        o.factor = factor;
    o.engine.n_boot = n_boot;
    study *s = NULL;
    st_status rc = study_open(db_path, sweep, &o, &s, errmsg);
    if (rc)
        return rc;
    rc = study_run(s);
    if (!rc)
        rc = study_result_json(s, out);
    if (rc && errmsg)
        snprintf(errmsg, ST_ERRMSG_MAX, "%s", study_errmsg(s));
    study_destroy(s);
    return rc;
}
