/*
 * extrapolate.c — the extrapolator handle, its runs, the choice of method and the results.
 * CARBS' front analysis is in extrapolate_front.c, the stability boundary the front's
 * recommendation is held to in extrapolate_front_boundary.c, the model of every run in
 * extrapolate_model.c. Method and references: docs/algorithms/extrapolation.md.
 */
#include "fit/extrapolate.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fit/extrapolate_int.h"

/* ---- small helpers ----------------------------------------------------------------------- */

double xp_to_basic(fit_xp_space s, double v)
{
    switch (s) {
    case FIT_XP_LOG:
        return v > 0 ? log(v) : NAN;
    case FIT_XP_LOGIT:
        return (v > 0 && v < 1) ? log(v / (1 - v)) : NAN;
    case FIT_XP_LINEAR:
        return v;
    }
    return NAN;
}

double xp_from_basic(fit_xp_space s, double b)
{
    switch (s) {
    case FIT_XP_LOG:
        return exp(b);
    case FIT_XP_LOGIT:
        return 1.0 / (1.0 + exp(-b));
    case FIT_XP_LINEAR:
        return b;
    }
    return NAN;
}

double xp_finish_value(const fit_xp *xp, size_t i, double v, int *clamped)
{
    const fit_xp_param *p = &xp->par[i];
    if (!isfinite(v))
        return v;
    if (p->is_integer && p->rounding > 0) {
        double r = round(v / p->rounding) * p->rounding;
        if (r <= 0 && p->space == FIT_XP_LOG)
            r = p->rounding;
        v = r;
    }
    if (v < p->min) {
        v = p->min;
        if (clamped)
            *clamped = 1;
    }
    if (v > p->max) {
        v = p->max;
        if (clamped)
            *clamped = 1;
    }
    return v;
}

void xp_clamp_reset(fit_xp *xp)
{
    xp->clamp_names[0] = '\0';
}

double xp_finish_rec(fit_xp *xp, size_t i, double v)
{
    int clamped = 0;
    double r = xp_finish_value(xp, i, v, &clamped);
    size_t len = strlen(xp->clamp_names), cap = sizeof(xp->clamp_names);
    if (clamped && !strstr(xp->clamp_names, xp->par[i].name) && len + 8 < cap)
        snprintf(xp->clamp_names + len, cap - len, "%s%s (to its %s %.4g)", len ? ", " : "",
                 xp->par[i].name, v < r ? "min" : "max", r);
    return r;
}

static void xp_clear_err(fit_xp *xp)
{
    xp->err[0] = '\0';
}

st_status xp_fail(fit_xp *xp, st_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(xp->err, sizeof(xp->err), fmt, ap);
    va_end(ap);
    return s;
}

/* ---- roles -------------------------------------------------------------------------------- */

static int name_in(const char *name, const char *const *list)
{
    for (size_t i = 0; list[i]; i++)
        if (!strcasecmp(name, list[i]))
            return 1;
    return 0;
}

fit_xp_role fit_xp_role_guess(const char *name)
{
    static const char *const n_names[] = {"n",          "params",     "n_params",
                                          "model_size", "num_params", NULL};
    static const char *const d_names[] = {"d",    "tokens",     "n_tokens", "train_tokens",
                                          "data", "num_tokens", NULL};
    static const char *const s_names[] = {"d_model",
                                          "n_embd",
                                          "n_embed",
                                          "width",
                                          "n_layer",
                                          "n_layers",
                                          "num_layers",
                                          "depth",
                                          "n_head",
                                          "n_heads",
                                          "d_ff",
                                          "dim",
                                          "embed_dim",
                                          "hidden_size",
                                          "num_hidden_layers",
                                          "num_heads",
                                          "intermediate_size",
                                          "num_attention_heads",
                                          NULL};
    static const char *const lr_names[] = {"lr", "learning_rate", "eta", "peak_lr", NULL};
    static const char *const b_names[] = {"batch",
                                          "batch_size",
                                          "bs",
                                          "batch_tokens",
                                          "global_batch_size",
                                          "train_batch_size",
                                          "total_batch_size",
                                          "per_device_train_batch_size",
                                          NULL};
    static const char *const t_names[] = {
        "steps",       "max_steps",        "max_iters",  "iters",       "num_steps", "train_steps",
        "total_steps", "n_steps",          "iterations", "train_iters", "num_iters", "epochs",
        "num_epochs",  "num_train_epochs", NULL};
    if (!name)
        return FIT_XP_OTHER;
    if (name_in(name, n_names))
        return FIT_XP_N;
    if (name_in(name, d_names))
        return FIT_XP_D;
    if (name_in(name, s_names))
        return FIT_XP_SIZE;
    if (name_in(name, lr_names))
        return FIT_XP_LR;
    if (name_in(name, b_names))
        return FIT_XP_BATCH;
    if (name_in(name, t_names))
        return FIT_XP_STEPS;
    return FIT_XP_OTHER;
}

const char *fit_xp_role_name(fit_xp_role r)
{
    switch (r) {
    case FIT_XP_AUTO:
        return "auto";
    case FIT_XP_OTHER:
        return "other";
    case FIT_XP_N:
        return "N";
    case FIT_XP_D:
        return "D";
    case FIT_XP_SIZE:
        return "size";
    case FIT_XP_LR:
        return "lr";
    case FIT_XP_BATCH:
        return "batch";
    case FIT_XP_STEPS:
        return "steps";
    }
    return "?";
}

int fit_xp_is_warmup(const char *name)
{
    return name && strstr(name, "warmup") != NULL;
}

fit_xp_wu_unit fit_xp_warmup_unit(const char *name)
{
    if (!name)
        return FIT_XP_WU_FRACTION;
    if (strstr(name, "iter") || strstr(name, "step") || strstr(name, "update"))
        return FIT_XP_WU_STEPS;
    if (strstr(name, "token"))
        return FIT_XP_WU_TOKENS;
    return FIT_XP_WU_FRACTION;
}

void fit_xp_param_init(fit_xp_param *p, const char *name, fit_xp_space space)
{
    memset(p, 0, sizeof(*p));
    p->name = name;
    p->space = space;
    p->role = FIT_XP_AUTO;
    p->min = -INFINITY;
    p->max = INFINITY;
    p->rounding = 1;
}

/* ---- lifecycle ----------------------------------------------------------------------------- */

fit_xp_options fit_xp_options_default(void)
{
    fit_xp_options o;
    memset(&o, 0, sizeof(o));
    o.method = FIT_XP_METHOD_AUTO;
    o.level = 0.9;
    o.n_boot = 200;
    o.seed = 42;
    o.n_threads = 0;
    o.max_p_diverge = 0.05;
    o.fail_loss = NAN;
    o.far_factor = 10;
    o.robust = 1;
    o.prior_ab_sd = 0.05;
    o.prior_e_sd = 0;
    o.far_weight = 0;
    o.prior_e = NAN;
    o.prior_wd_sd = 0.25;
    o.prior_law_sd = 1.0;
    o.prior_draw = 0.5;
    o.min_level_ok = 3;
    o.interval_prior_draw = 1.0;
    return o;
}

st_status fit_xp_create(fit_xp **out)
{
    if (!out)
        return ST_EINVAL;
    *out = calloc(1, sizeof(fit_xp));
    if (!*out)
        return ST_ENOMEM;
    (*out)->o = fit_xp_options_default();
    return ST_OK;
}

static void xp_free_results(fit_xp *xp)
{
    free(xp->front_run);
    free(xp->front_count);
    free(xp->front_cost);
    free(xp->front_obj);
    free(xp->front_law_ok);
    free(xp->front_coef);
    free(xp->front_rep);
    free(xp->front_slope_ci);
    free(xp->loss_rep);
    free(xp->rec);
    free(xp->rec_lo);
    free(xp->rec_hi);
    xp->front_run = xp->front_count = NULL;
    xp->front_cost = xp->front_obj = xp->front_coef = xp->front_rep = NULL;
    xp->front_slope_ci = xp->loss_rep = NULL;
    xp->front_law_ok = NULL;
    xp->rec = xp->rec_lo = xp->rec_hi = NULL;
    xp->n_front = xp->n_front_rep = 0;
    xp->loss_law_ok = 0;
    xp_model_clear(&xp->m);
    xp_front_boundary_clear(xp);
    xp->has_model = 0;
    xp->done = 0;
}

static void free_level_names(fit_xp *xp)
{
    for (size_t j = 0; xp->lv_names && j < xp->P; j++) {
        for (size_t l = 0; xp->lv_names[j] && l < xp->par[j].n_levels; l++)
            free(xp->lv_names[j][l]);
        free(xp->lv_names[j]);
    }
    free(xp->lv_names);
    xp->lv_names = NULL;
}

static void xp_free_runs(fit_xp *xp)
{
    free_level_names(xp);
    for (size_t i = 0; xp->par && i < xp->P; i++)
        free((char *)xp->par[i].name);
    free(xp->par);
    free(xp->role);
    free(xp->x);
    free(xp->b);
    free(xp->cost);
    free(xp->obj);
    free(xp->N);
    free(xp->D);
    free(xp->failed);
    xp->par = NULL;
    xp->role = NULL;
    xp->x = xp->b = xp->cost = xp->obj = xp->N = xp->D = NULL;
    xp->failed = NULL;
    xp->P = xp->n = xp->n_ok = 0;
    xp_curves_free(xp);
}

void fit_xp_destroy(fit_xp *xp)
{
    if (!xp)
        return;
    xp_free_results(xp);
    xp_free_runs(xp);
    free(xp);
}

const char *fit_xp_errmsg(const fit_xp *xp)
{
    return xp ? xp->err : "no handle";
}

st_status fit_xp_set_options(fit_xp *xp, const fit_xp_options *o)
{
    if (!xp || !o)
        return ST_EINVAL;
    xp_clear_err(xp);
    if (!(o->level > 0 && o->level < 1))
        return xp_fail(xp, ST_EINVAL, "level %g is not in (0, 1)", o->level);
    if (!(o->max_p_diverge > 0 && o->max_p_diverge <= 1))
        return xp_fail(xp, ST_EINVAL, "max_p_diverge %g is not in (0, 1]", o->max_p_diverge);
    if ((int)o->method < 0 || o->method > FIT_XP_METHOD_MODEL)
        return xp_fail(xp, ST_EINVAL, "unknown method %d", (int)o->method);
    if (!(o->prior_ab_sd >= 0) || isinf(o->prior_ab_sd))
        return xp_fail(xp, ST_EINVAL, "prior_ab_sd %g is not a finite value >= 0", o->prior_ab_sd);
    if (!(o->far_weight >= 0) || isinf(o->far_weight))
        return xp_fail(xp, ST_EINVAL, "far_weight %g is not a finite value >= 0", o->far_weight);
    if (!(o->prior_e_sd >= 0) || isinf(o->prior_e_sd))
        return xp_fail(xp, ST_EINVAL, "prior_e_sd %g is not a finite value >= 0", o->prior_e_sd);
    if (!isnan(o->prior_e) && !(o->prior_e > 0 && isfinite(o->prior_e)))
        return xp_fail(xp, ST_EINVAL, "prior_e %g is not a finite value > 0 (or NAN)", o->prior_e);
    if (!(o->prior_law_sd >= 0) || isinf(o->prior_law_sd))
        return xp_fail(xp, ST_EINVAL, "prior_law_sd %g is not a finite value >= 0",
                       o->prior_law_sd);
    if (!(o->prior_draw >= 0) || isinf(o->prior_draw))
        return xp_fail(xp, ST_EINVAL, "prior_draw %g is not a finite value >= 0", o->prior_draw);
    if (!(o->interval_prior_draw >= 0) || isinf(o->interval_prior_draw))
        return xp_fail(xp, ST_EINVAL, "interval_prior_draw %g is not a finite value >= 0",
                       o->interval_prior_draw);
    if (!(o->prior_wd_sd >= 0) || isinf(o->prior_wd_sd))
        return xp_fail(xp, ST_EINVAL, "prior_wd_sd %g is not a finite value >= 0", o->prior_wd_sd);
    if (!(o->far_factor >= 1))
        return xp_fail(xp, ST_EINVAL, "far_factor %g is below 1", o->far_factor);
    xp->o = *o;
    xp_free_results(xp);
    return ST_OK;
}

/* A categorical's level count and a conditional's parent (an earlier categorical). */
static st_status check_levels(fit_xp *xp, const fit_xp_param *params, size_t j)
{
    const fit_xp_param *p = &params[j];
    if (p->n_levels == 1 || p->n_levels > FIT_XP_MAX_LEVELS)
        return xp_fail(xp, ST_EINVAL, "parameter '%s': %zu levels (2 to %d)", p->name, p->n_levels,
                       FIT_XP_MAX_LEVELS);
    if (p->n_levels && p->space != FIT_XP_LINEAR)
        return xp_fail(xp, ST_EINVAL, "parameter '%s': a categorical's space must be linear",
                       p->name);
    if (p->active_mask && (p->parent >= j || !params[p->parent].n_levels))
        return xp_fail(xp, ST_EINVAL,
                       "parameter '%s': its parent must be an earlier categorical parameter",
                       p->name);
    return ST_OK;
}

int xp_param_active(const fit_xp *xp, size_t j, const double *x)
{
    while (xp->par[j].active_mask) {
        size_t pa = xp->par[j].parent;
        double l = x[pa];
        if (!(l >= 0 && l < 64) || !((xp->par[j].active_mask >> (unsigned)l) & 1u))
            return 0;
        j = pa;
    }
    return 1;
}

void xp_settle_active(const fit_xp *xp, double *x)
{
    for (size_t j = 0; j < xp->P; j++)
        if (!xp_param_active(xp, j, x))
            x[j] = NAN;
}

/* The level names of the categoricals (copies; "level k" when none were given). */
static st_status copy_level_names(fit_xp *xp, const fit_xp_param *params)
{
    xp->lv_names = calloc(xp->P, sizeof(char **));
    if (!xp->lv_names)
        return ST_ENOMEM;
    for (size_t j = 0; j < xp->P; j++) {
        size_t nl = params[j].n_levels;
        if (!nl)
            continue;
        xp->lv_names[j] = calloc(nl, sizeof(char *));
        if (!xp->lv_names[j])
            return ST_ENOMEM;
        for (size_t l = 0; l < nl; l++) {
            char buf[32];
            const char *nm = params[j].level_names ? params[j].level_names[l] : NULL;
            if (!nm) {
                snprintf(buf, sizeof(buf), "level %zu", l);
                nm = buf;
            }
            xp->lv_names[j][l] = malloc(strlen(nm) + 1);
            if (!xp->lv_names[j][l])
                return ST_ENOMEM;
            strcpy(xp->lv_names[j][l], nm);
        }
    }
    return ST_OK;
}

/* Run i's value of parameter j into x and b: a categorical an integer level, a conditional NAN
 * where inactive (b imputed later). ST_EINVAL otherwise outside its space. */
static st_status store_value(fit_xp *xp, size_t i, size_t j, const double *xi)
{
    const fit_xp_param *p = &xp->par[j];
    size_t P = xp->P;
    double v = xi[j], bv = xp_to_basic(p->space, v);
    int active = xp_param_active(xp, j, xi);
    if (!active)
        v = bv = NAN;
    else if (!isfinite(bv) ||
             (p->n_levels && !(v >= 0 && v < (double)p->n_levels && v == floor(v))))
        return xp_fail(xp, ST_EINVAL, "run %zu, parameter '%s': value %g outside its space", i,
                       p->name, v);
    xp->x[i * P + j] = v;
    xp->b[i * P + j] = bv;
    return ST_OK;
}

/* An inactive conditional value's basic coordinate: the mean of the active ones (the front's
 * regressions see it at its centre, as carbs/ imputes it); the model reads x's NAN instead. */
static void impute_inactive(fit_xp *xp)
{
    size_t P = xp->P;
    for (size_t j = 0; j < P; j++) {
        double acc = 0;
        size_t na = 0;
        for (size_t i = 0; i < xp->n; i++)
            if (!isnan(xp->x[i * P + j]))
                acc += xp->b[i * P + j], na++;
        for (size_t i = 0; i < xp->n; i++)
            if (isnan(xp->x[i * P + j]))
                xp->b[i * P + j] = na ? acc / (double)na : 0;
    }
}

st_status fit_xp_set_runs(fit_xp *xp, size_t n_params, const fit_xp_param *params, size_t n,
                          const double *x, const double *cost, const double *objective,
                          const int *failed, const double *N, const double *D)
{
    if (!xp)
        return ST_EINVAL;
    xp_clear_err(xp);
    xp_free_results(xp);
    xp_free_runs(xp);
    if (n_params == 0 || !params || (n && (!x || !objective || !cost)))
        return xp_fail(xp, ST_EINVAL, "no parameters, or a NULL array");
    if (n_params > 64)
        return xp_fail(xp, ST_EINVAL, "%zu parameters (at most 64)", n_params);
    for (size_t j = 0; j < n_params; j++) {
        if (!params[j].name || !params[j].name[0])
            return xp_fail(xp, ST_EINVAL, "parameter %zu has no name", j);
        if ((int)params[j].space < 0 || params[j].space > FIT_XP_LOGIT)
            return xp_fail(xp, ST_EINVAL, "parameter '%s': unknown space", params[j].name);
        if (params[j].is_integer && !(params[j].rounding > 0))
            return xp_fail(xp, ST_EINVAL, "parameter '%s': rounding must be > 0", params[j].name);
        if (isnan(params[j].min) || isnan(params[j].max) || params[j].min > params[j].max)
            return xp_fail(xp, ST_EINVAL, "parameter '%s': bad bounds", params[j].name);
        st_status sc = check_levels(xp, params, j);
        if (sc != ST_OK)
            return sc;
    }
    size_t P = n_params;
    xp->par = calloc(P, sizeof(*xp->par));
    xp->role = calloc(P, sizeof(*xp->role));
    xp->x = malloc((n ? n : 1) * P * sizeof(double));
    xp->b = malloc((n ? n : 1) * P * sizeof(double));
    xp->cost = malloc((n ? n : 1) * sizeof(double));
    xp->obj = malloc((n ? n : 1) * sizeof(double));
    xp->N = malloc((n ? n : 1) * sizeof(double));
    xp->D = malloc((n ? n : 1) * sizeof(double));
    xp->failed = malloc((n ? n : 1) * sizeof(int));
    if (!xp->par || !xp->role || !xp->x || !xp->b || !xp->cost || !xp->obj || !xp->N || !xp->D ||
        !xp->failed) {
        xp_free_runs(xp);
        return xp_fail(xp, ST_ENOMEM, "out of memory for %zu runs", n);
    }
    xp->P = P;
    for (size_t j = 0; j < P; j++) {
        xp->par[j] = params[j];
        xp->par[j].name = NULL;
        size_t len = strlen(params[j].name);
        char *s = malloc(len + 1);
        if (!s) {
            xp_free_runs(xp);
            return xp_fail(xp, ST_ENOMEM, "out of memory");
        }
        memcpy(s, params[j].name, len + 1);
        xp->par[j].name = s;
        xp->par[j].level_names = NULL;
        xp->role[j] = params[j].role == FIT_XP_AUTO ? fit_xp_role_guess(s) : params[j].role;
        if (params[j].n_levels) { /* a level index: rounded, within the levels */
            xp->role[j] = FIT_XP_OTHER;
            xp->par[j].is_integer = 1;
            xp->par[j].rounding = 1;
            xp->par[j].min = 0;
            xp->par[j].max = (double)params[j].n_levels - 1;
        }
    }
    if (copy_level_names(xp, params) != ST_OK) {
        xp_free_runs(xp);
        return xp_fail(xp, ST_ENOMEM, "out of memory");
    }
    xp->n = n;
    size_t n_ok = 0;
    for (size_t i = 0; i < n; i++) {
        int fl = failed ? failed[i] != 0 : 0;
        if (!isfinite(objective[i]))
            fl = 1;
        if (!fl && !(isfinite(cost[i]) && cost[i] > 0)) {
            xp_free_runs(xp);
            return xp_fail(xp, ST_EINVAL, "run %zu: cost %g is not positive and finite", i,
                           cost[i]);
        }
        for (size_t j = 0; j < P; j++)
            if (store_value(xp, i, j, &x[i * P]) != ST_OK) {
                xp_free_runs(xp); /* xp->err already names the run and parameter */
                return ST_EINVAL;
            }
        xp->failed[i] = fl;
        xp->cost[i] = cost[i];
        xp->obj[i] = fl ? NAN : objective[i];
        double Ni = N ? N[i] : NAN, Di = D ? D[i] : NAN;
        for (size_t j = 0; j < P; j++) {
            if (xp->role[j] == FIT_XP_N)
                Ni = x[i * P + j];
            if (xp->role[j] == FIT_XP_D)
                Di = x[i * P + j];
        }
        xp->N[i] = (isfinite(Ni) && Ni > 0) ? Ni : NAN;
        xp->D[i] = (isfinite(Di) && Di > 0) ? Di : NAN;
        if (!fl)
            n_ok++;
    }
    xp->n_ok = n_ok;
    impute_inactive(xp);
    if (n_ok < 3) {
        size_t keep = n_ok;
        xp_free_runs(xp);
        return xp_fail(xp, ST_EEMPTY, "%zu successful runs (at least 3 are needed)", keep);
    }
    return ST_OK;
}

/* ---- the run ----------------------------------------------------------------------------- */

static void add_warning(fit_xp *xp, unsigned bit, const char *fmt, ...)
{
    xp->res.warnings |= bit;
    size_t len = strlen(xp->warn_text);
    if (len + 3 >= sizeof(xp->warn_text))
        return;
    if (len) {
        memcpy(xp->warn_text + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(xp->warn_text + len, sizeof(xp->warn_text) - len, fmt, ap);
    va_end(ap);
}

static int model_possible(const fit_xp *xp)
{
    if (xp->o.maximize)
        return 0;
    size_t n_nd = 0;
    int has_lr = 0;
    for (size_t j = 0; j < xp->P; j++)
        if (xp->role[j] == FIT_XP_LR)
            has_lr = 1;
    for (size_t i = 0; i < xp->n; i++)
        if (!xp->failed[i] && isfinite(xp->N[i]) && isfinite(xp->D[i]) && xp->obj[i] > 0)
            n_nd++;
    return has_lr && n_nd >= 12;
}

/* MODEL: safe unless P(diverge) stays above the limit at the lowest learning rate searched. */
static void model_safety(fit_xp *xp)
{
    xp->unsafe_text[0] = '\0';
    xp->res.unsafe_reason = xp->unsafe_text;
    xp->res.safe = !(xp->res.warnings & FIT_XP_WARN_P_DIVERGE);
    if (xp->res.safe)
        return;
    size_t lr = 0;
    for (size_t j = 0; j < xp->P; j++)
        if (xp->role[j] == FIT_XP_LR) {
            lr = j;
            break;
        }
    double N_max = 0;
    for (size_t i = 0; i < xp->n; i++)
        if (!xp->failed[i] && isfinite(xp->N[i]))
            N_max = fmax(N_max, xp->N[i]);
    snprintf(xp->unsafe_text, sizeof(xp->unsafe_text),
             "P(diverge) %.3g above max_p_diverge %.3g even at the lowest learning rate the model "
             "searched (%s = %.3g); to resolve it, run %s below %.3g at the largest N tried "
             "(%.3g) to find where runs of that size still train",
             xp->res.p_diverge, xp->o.max_p_diverge, xp->par[lr].name, xp->rec[lr],
             xp->par[lr].name, xp->rec[lr], N_max);
}

/* FRONT: a categorical takes the best front group's level (a law along the front means
 * nothing for it); a conditional parameter that level leaves inactive is NAN. */
static void front_levels(fit_xp *xp)
{
    size_t P = xp->P, best = xp->front_run[xp->n_front - 1];
    for (size_t j = 0; j < P; j++)
        if (xp->par[j].n_levels)
            xp->rec[j] = xp->rec_lo[j] = xp->rec_hi[j] = xp->x[best * P + j];
    for (size_t j = 0; j < P; j++)
        if (!xp_param_active(xp, j, xp->rec))
            xp->rec[j] = xp->rec_lo[j] = xp->rec_hi[j] = NAN;
}

st_status fit_xp_run(fit_xp *xp, double C)
{
    if (!xp)
        return ST_EINVAL;
    xp_clear_err(xp);
    xp_free_results(xp);
    if (!xp->n)
        return xp_fail(xp, ST_ESTATE, "no runs: call fit_xp_set_runs first");
    if (!(isfinite(C) && C > 0))
        return xp_fail(xp, ST_EINVAL, "compute %g is not positive and finite", C);
    memset(&xp->res, 0, sizeof(xp->res));
    xp->warn_text[0] = '\0';
    size_t P = xp->P;
    xp->rec = calloc(P, sizeof(double));
    xp->rec_lo = calloc(P, sizeof(double));
    xp->rec_hi = calloc(P, sizeof(double));
    if (!xp->rec || !xp->rec_lo || !xp->rec_hi)
        return xp_fail(xp, ST_ENOMEM, "out of memory");
    st_status s = xp_front(xp);
    if (s != ST_OK)
        return s;
    if (xp->n_front == 0)
        return xp_fail(xp, ST_EEMPTY, "no Pareto front (no successful run)");
    s = xp_front_laws(xp);
    if (s != ST_OK)
        return s;
    double largest = 0;
    for (size_t i = 0; i < xp->n; i++)
        if (!xp->failed[i] && xp->cost[i] > largest)
            largest = xp->cost[i];
    xp->res.compute = C;
    xp->res.largest_cost = largest;
    double ratio = C / largest;
    if (ratio > 1000)
        add_warning(xp, FIT_XP_WARN_VERY_FAR | FIT_XP_WARN_FAR,
                    "compute %.3g is %.0fx the largest run: far beyond the data, treat the "
                    "intervals as optimistic",
                    C, ratio);
    else if (ratio > xp->o.far_factor)
        add_warning(xp, FIT_XP_WARN_FAR, "compute %.3g is %.0fx the largest run (%.3g)", C, ratio,
                    largest);
    else if (ratio < 1)
        add_warning(xp, FIT_XP_WARN_BELOW,
                    "compute %.3g is below the largest run (%.3g): an interpolation", C, largest);
    if (xp->n_front < 4)
        add_warning(xp, FIT_XP_WARN_FEW_FRONT, "only %zu Pareto groups: the front laws are weak",
                    xp->n_front);

    fit_xp_method want = xp->o.method;
    if (want == FIT_XP_METHOD_AUTO)
        want = model_possible(xp) ? FIT_XP_METHOD_MODEL : FIT_XP_METHOD_FRONT;
    if (want == FIT_XP_METHOD_MODEL) {
        if (!model_possible(xp)) {
            add_warning(xp, FIT_XP_WARN_NO_MODEL,
                        "the model needs a learning rate, a minimised positive objective and 12 "
                        "successful runs with N and D: used the front");
            want = FIT_XP_METHOD_FRONT;
        } else {
            s = xp_model_fit(xp);
            if (s == ST_OK) {
                xp->has_model = 1;
                s = xp_model_recommend(xp, C);
            }
            if (s == ST_ENOMEM)
                return s;
            if (s != ST_OK) {
                add_warning(xp, FIT_XP_WARN_NO_MODEL, "the model failed (%s): used the front",
                            xp->err);
                xp_clear_err(xp);
                want = FIT_XP_METHOD_FRONT;
            }
        }
    }
    if (want == FIT_XP_METHOD_FRONT) {
        s = xp_front_boundary_fit(xp);
        if (s == ST_OK)
            s = xp_front_recommend_fill(xp, C);
        if (s == ST_OK)
            front_levels(xp);
        if (s != ST_OK)
            return s;
        if (xp->res.warnings & FIT_XP_WARN_BOUND)
            add_warning(xp, 0, "a recommended value was clamped to its bound: %s",
                        xp->clamp_names[0] ? xp->clamp_names : "(unnamed)");
        s = xp_front_boundary_apply(xp, C);
        if (s != ST_OK)
            return s;
    } else {
        model_safety(xp);
    }
    xp->res.value = xp->rec;
    xp->res.lo = xp->rec_lo;
    xp->res.hi = xp->rec_hi;
    xp->res.warning_text = xp->warn_text;
    xp->done = 1;
    return ST_OK;
}

void xp_add_warning(fit_xp *xp, unsigned bit, const char *text)
{
    add_warning(xp, bit, "%s", text);
}

void xp_clamp_warn(fit_xp *xp)
{
    if (xp->clamp_names[0])
        add_warning(xp, FIT_XP_WARN_BOUND, "a recommended value was clamped to its bound: %s",
                    xp->clamp_names);
}

st_status fit_xp_get_result(const fit_xp *xp, fit_xp_result *r)
{
    if (!xp || !r)
        return ST_EINVAL;
    if (!xp->done)
        return ST_ESTATE;
    *r = xp->res;
    return ST_OK;
}

size_t fit_xp_n_params(const fit_xp *xp)
{
    return xp ? xp->P : 0;
}
const char *fit_xp_param_name(const fit_xp *xp, size_t i)
{
    return xp && i < xp->P ? xp->par[i].name : NULL;
}
fit_xp_role fit_xp_param_role(const fit_xp *xp, size_t i)
{
    return xp && i < xp->P ? xp->role[i] : FIT_XP_OTHER;
}

fit_xp_space fit_xp_param_space(const fit_xp *xp, size_t i)
{
    return xp && i < xp->P ? xp->par[i].space : FIT_XP_LINEAR;
}
