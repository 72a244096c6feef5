/*
 * study.c — the single input policy from a stored sweep to fit/'s extrapolation engine
 * (study.h says what it is), the engine call, whether the engine vouches for its
 * recommendation and, when it does not, which small runs would resolve it.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carbs/carbs.h"
#include "study/study_int.h"

study_options study_options_default(void)
{
    study_options o;
    memset(&o, 0, sizeof(o));
    o.engine = fit_xp_options_default();
    o.compute = NAN;
    o.factor = 10;
    o.fit_max_cost = INFINITY;
    o.backtest = 1;
    o.branches = 1;
    o.curve_weight = 0.5;
    o.n_curve_fractions = 2;
    o.curve_fractions[0] = 0.25;
    o.curve_fractions[1] = 0.5;
    return o;
}

void study_add_warning(study *s, const char *fmt, ...)
{
    size_t len = strlen(s->warn);
    if (len + 3 >= sizeof(s->warn))
        return;
    if (len) {
        memcpy(s->warn + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->warn + len, sizeof(s->warn) - len, fmt, ap);
    va_end(ap);
}

/* A parameter searched on a linear scale whose values are all positive and span more than this
 * factor is fitted on a log scale: the engine's laws are power laws in N and D, and a
 * hyperparameter tried over decades (a warmup fraction from 0.001 to 0.5) acts on a log scale.
 * Its searched bounds still bound the recommendation. A warmup (named like one) with positive
 * values is fitted on a log scale whatever its span: its optimum is a fixed number of steps, a
 * fraction of the run that is a power law of B / D (fit/'s warmup prior). On a linear scale its
 * law is a straight line in N and D that a 100x extrapolation runs through zero: on
 * bench-extrapolate's world 13 (warmups tried 0.022-0.127, a span of 5.7) the engine recommended
 * warmup 0, which halves the stable learning rate, and the run diverged. So is a weight decay
 * (fit_xp_is_weight_decay): its optimum is a power law (the AdamW timescale prior), and on a
 * linear scale from 0 (Hugging Face's weight_decay in [0, 0.3]) its law ran to the bound 0. */
#define LOG_SPAN 10.0

/* ---- the input policy: parameters ------------------------------------------------------- */

static fit_xp_space xp_space(carbs_space_kind k)
{
    return k == CARBS_SPACE_LOG     ? FIT_XP_LOG
           : k == CARBS_SPACE_LOGIT ? FIT_XP_LOGIT
                                    : FIT_XP_LINEAR;
}

/* The spec of parameter `name` in the override file, else the stored one. */
static const runner_param_spec *spec_of(const study *s, size_t stored)
{
    const runner_param_spec *ps = &s->w->cfg->params[stored];
    const runner_config *ov = s->o.config_override;
    for (size_t k = 0; ov && k < ov->n_params; k++)
        if (!strcmp(ov->params[k].p.name, ps->p.name) && !ov->params[k].is_fixed)
            return &ov->params[k];
    return ps;
}

static fit_xp_role role_of(const study *s, const char *name)
{
    for (size_t k = 0; k < s->o.n_roles; k++)
        if (!strcmp(s->o.role_name[k], name))
            return s->o.role[k];
    return fit_xp_role_guess(name);
}

/* The bounds of the recommendation: study.h, "Bounds of the recommendation". */
static void set_bounds(study *s, size_t j, const runner_param_spec *ps)
{
    fit_xp_param *p = &s->par[j];
    s->search_lo[j] = ps->p.min;
    s->search_hi[j] = ps->p.max;
    p->min = ps->p.min;
    p->max = ps->p.max;
    fit_xp_role role = p->role == FIT_XP_AUTO ? fit_xp_role_guess(p->name) : p->role;
    if (role == FIT_XP_N || role == FIT_XP_D || role == FIT_XP_SIZE || role == FIT_XP_STEPS) {
        /* extrapolated: no upper bound; an integer keeps its lower bound (rounding) */
        p->max = INFINITY;
        if (!p->is_integer)
            p->min = -INFINITY;
    } else if (role == FIT_XP_LR) {
        /* follows its law down as N grows (to the space's domain), never above what was tried:
         * the stability boundary is unknown there */
        p->min = p->space == FIT_XP_LINEAR ? -INFINITY : 0;
    } else if (role == FIT_XP_BATCH) {
        /* follows its law up as D grows, never below what was tried */
        p->max = p->space == FIT_XP_LOGIT ? 1 : INFINITY;
    }
    if (!(p->min <= p->max)) /* a sweep file without bounds */
        p->min = -INFINITY, p->max = INFINITY;
}

/* A conditional parameter's parent: the engine's index of its `when` parameter (searched,
 * earlier in the file) and the mask of the parent's choices it is active for. */
static st_status set_parent(study *s, size_t j, const runner_param_spec *ps)
{
    if (!ps->p.active_if)
        return ST_OK;
    for (size_t k = 0; k < j; k++)
        if (!strcmp(s->par[k].name, ps->p.active_if)) {
            s->par[j].parent = k;
            s->par[j].active_mask = ps->p.active_mask;
            return ST_OK;
        }
    return st_errf(s->errmsg, ST_EINVAL,
                   "parameter '%s': its parent '%s' is not a searched parameter before it",
                   ps->p.name, ps->p.active_if);
}

/* The engine's parameters: every searched parameter of the sweep file, in file order;
 * categorical ones as levels, conditional ones with their parent. */
static st_status describe(study *s)
{
    const runner_config *cfg = s->w->cfg;
    s->pidx = calloc(cfg->n_params + 1, sizeof(size_t));
    s->par = calloc(cfg->n_params + 1, sizeof(fit_xp_param));
    s->search_lo = calloc(cfg->n_params + 1, sizeof(double));
    s->search_hi = calloc(cfg->n_params + 1, sizeof(double));
    if (!s->pidx || !s->par || !s->search_lo || !s->search_hi)
        return st_errf(s->errmsg, ST_ENOMEM, "out of memory");
    for (size_t i = 0; i < cfg->n_params; i++) {
        if (cfg->params[i].is_fixed)
            continue;
        const runner_param_spec *ps = spec_of(s, i);
        size_t j = s->P++;
        fit_xp_param *p = &s->par[j];
        s->pidx[j] = i;
        if (cfg->params[i].choices) { /* a discrete factor of the engine's model */
            fit_xp_param_init(p, cfg->params[i].p.name, FIT_XP_LINEAR);
            p->n_levels = cfg->params[i].p.n_choices;
            p->level_names = (const char *const *)cfg->params[i].choices;
        } else {
            fit_xp_param_init(p, cfg->params[i].p.name, xp_space(ps->p.space));
            p->role = role_of(s, p->name);
            p->is_integer = ps->p.is_integer;
            p->rounding = ps->p.rounding > 0 ? ps->p.rounding : 1;
            set_bounds(s, j, ps);
        }
        st_status rc = set_parent(s, j, &cfg->params[i]);
        if (rc)
            return rc;
    }
    for (size_t k = 0; k < s->o.n_roles; k++) {
        size_t j = 0;
        while (j < s->P && strcmp(s->par[j].name, s->o.role_name[k]))
            j++;
        if (j == s->P)
            return st_errf(s->errmsg, ST_EINVAL,
                           "role override: '%s' is not a searched parameter of sweep '%s'",
                           s->o.role_name[k], cfg->name);
    }
    return ST_OK;
}

/* ---- the input policy: runs -------------------------------------------------------------- */

typedef enum run_use { USE_SUCCESS, USE_DIVERGED, USE_NOT } run_use;

/* Which runs reach the engine (study.h, "Runs"); counts the others by kind. */
static run_use classify(study *s, const runner_sweep_run *u)
{
    study_counts *c = &s->counts;
    switch (u->status) {
    case RUNNER_RUN_SUCCEEDED:
        if (!(isfinite(u->objective) && isfinite(u->cost) && u->cost > 0)) {
            c->n_unusable++;
            return USE_NOT;
        }
        if (u->cost > s->o.fit_max_cost) {
            c->n_beyond++;
            return USE_NOT;
        }
        return USE_SUCCESS;
    case RUNNER_RUN_FAILED:
        if (u->failure == RUNNER_FAIL_DIVERGED)
            return USE_DIVERGED;
        if (u->failure == RUNNER_FAIL_OVER_BUDGET)
            c->n_over_budget++;
        else if (runner_failure_is_hyperparameter(u->failure))
            c->n_resource++;
        else
            c->n_infra++;
        return USE_NOT;
    case RUNNER_RUN_INFRA_FAILED:
        if (u->failure == RUNNER_FAIL_BAD_FINAL)
            c->n_bad_final++;
        else
            c->n_infra++;
        return USE_NOT;
    default:
        if (u->status == RUNNER_RUN_STOPPED && u->stopped_early)
            c->n_stopped_early++;
        else
            c->n_unfinished++;
        return USE_NOT;
    }
}

/* 1 when every searched value of u is finite and inside its space's domain (NAN exactly where a
 * conditional parameter is inactive). */
static int values_usable(const study *s, const runner_sweep_run *u)
{
    for (size_t j = 0; j < s->P; j++) {
        double v = u->x[s->pidx[j]];
        fit_xp_space sp = s->par[j].space;
        int active = runner_param_active(s->w->cfg, u->x, s->pidx[j]);
        if (!active && isnan(v))
            continue;
        if (!active ||
            (s->par[j].n_levels && !runner_param_choice(&s->w->cfg->params[s->pidx[j]], v)))
            return 0;
        if (!isfinite(v) || (sp == FIT_XP_LOG && !(v > 0)) ||
            (sp == FIT_XP_LOGIT && !(v > 0 && v < 1)))
            return 0;
    }
    return 1;
}

static st_status gather(study *s)
{
    size_t nr = s->w->n_runs, P = s->P;
    s->run_idx = malloc((nr + 1) * sizeof(size_t));
    s->x = malloc((nr * P + 1) * sizeof(double));
    s->cost = malloc((nr + 1) * sizeof(double));
    s->obj = malloc((nr + 1) * sizeof(double));
    s->N = malloc((nr + 1) * sizeof(double));
    s->D = malloc((nr + 1) * sizeof(double));
    s->failed = malloc((nr + 1) * sizeof(int));
    if (!s->run_idx || !s->x || !s->cost || !s->obj || !s->N || !s->D || !s->failed)
        return st_errf(s->errmsg, ST_ENOMEM, "out of memory");
    s->counts.n_runs = nr;
    for (size_t i = 0; i < nr; i++) {
        const runner_sweep_run *u = &s->w->runs[i];
        if (u->parent)
            continue; /* a cooldown branch: a point of its parent (study_branches_load) */
        run_use use = classify(s, u);
        if (use == USE_NOT)
            continue;
        if (!values_usable(s, u)) {
            s->counts.n_unusable++;
            continue;
        }
        size_t k = s->n++;
        for (size_t j = 0; j < P; j++)
            s->x[k * P + j] = u->x[s->pidx[j]];
        s->failed[k] = use == USE_DIVERGED;
        s->cost[k] = use == USE_SUCCESS ? u->cost : NAN;
        s->obj[k] = use == USE_SUCCESS ? u->objective : NAN;
        s->N[k] = u->final_N;
        s->D[k] = u->final_D;
        s->run_idx[k] = i;
        if (use == USE_SUCCESS)
            s->counts.n_succeeded++;
        else
            s->counts.n_diverged++;
    }
    s->counts.n_used = s->n;
    return ST_OK;
}

/* A log space whose values are not all positive, or a logit space with values outside (0, 1),
 * is read as linear (a sweep file edited after the runs). */
static void settle_spaces(study *s)
{
    for (size_t j = 0; j < s->P; j++) {
        double lo = INFINITY, hi = -INFINITY;
        for (size_t i = 0; i < s->w->n_runs; i++) {
            double v = s->w->runs[i].x[s->pidx[j]];
            if (isfinite(v))
                lo = fmin(lo, v), hi = fmax(hi, v);
        }
        fit_xp_param *p = &s->par[j];
        if (p->n_levels)
            continue; /* levels, not a scale */
        if ((p->space == FIT_XP_LOG && !(lo > 0)) ||
            (p->space == FIT_XP_LOGIT && !(lo > 0 && hi < 1)))
            p->space = FIT_XP_LINEAR;
        else if (p->space == FIT_XP_LINEAR && lo > 0 &&
                 (hi > LOG_SPAN * lo || fit_xp_is_warmup(p->name) ||
                  fit_xp_is_weight_decay(p->name)))
            p->space = FIT_XP_LOG; /* laws are power laws: see LOG_SPAN */
    }
}

/* ---- shared by the study's files -------------------------------------------------------- */

int study_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double study_model_size(const study *s, size_t k)
{
    for (size_t j = 0; j < s->P; j++) {
        fit_xp_role r =
            s->par[j].role == FIT_XP_AUTO ? fit_xp_role_guess(s->par[j].name) : s->par[j].role;
        if (r == FIT_XP_N)
            return s->x[k * s->P + j];
    }
    return s->N[k];
}

double study_run_tokens(const study *s, size_t k)
{
    if (s->D[k] > 0 && isfinite(s->D[k]))
        return s->D[k];
    for (size_t j = 0; j < s->P; j++) {
        fit_xp_role r =
            s->par[j].role == FIT_XP_AUTO ? fit_xp_role_guess(s->par[j].name) : s->par[j].role;
        if (r == FIT_XP_D)
            return s->x[k * s->P + j];
    }
    return NAN;
}

/* ---- lifecycle --------------------------------------------------------------------------- */

st_status study_create(const runner_sweep *w, const study_options *o, study **out, char *errmsg)
{
    *out = NULL;
    if (!w || !w->cfg) {
        if (errmsg)
            snprintf(errmsg, ST_ERRMSG_MAX, "no sweep");
        return ST_EINVAL;
    }
    study *s = calloc(1, sizeof(*s));
    if (!s) {
        if (errmsg)
            snprintf(errmsg, ST_ERRMSG_MAX, "out of memory");
        return ST_ENOMEM;
    }
    s->o = o ? *o : study_options_default();
    s->w = w;
    s->target = NAN;
    if (s->o.n_roles > STUDY_MAX_ROLES)
        s->o.n_roles = STUDY_MAX_ROLES;
    st_status rc = describe(s);
    if (!rc) {
        settle_spaces(s);
        rc = gather(s);
    }
    if (!rc)
        rc = study_branches_load(s);
    if (rc) {
        if (errmsg)
            snprintf(errmsg, ST_ERRMSG_MAX, "%s", s->errmsg);
        study_destroy(s);
        return rc;
    }
    *out = s;
    return ST_OK;
}

st_status study_open(const char *db_path, const char *sweep, const study_options *o, study **out,
                     char *errmsg)
{
    *out = NULL;
    runner_store *st = NULL;
    st_status rc = runner_store_open(db_path, &st, errmsg);
    if (rc)
        return rc;
    runner_sweep *w = NULL;
    rc = runner_store_read_sweep(st, sweep, &w);
    if (rc) {
        if (errmsg)
            snprintf(errmsg, ST_ERRMSG_MAX, "%s", runner_store_errmsg(st));
        runner_store_close(st);
        return rc;
    }
    rc = study_create(w, o, out, errmsg);
    if (rc) {
        runner_store_close(st);
        runner_sweep_free(w);
        return rc;
    }
    (*out)->owned = w;
    if ((*out)->o.curves)
        rc = study_curves_load(*out, st);
    runner_store_close(st);
    if (rc) {
        if (errmsg)
            snprintf(errmsg, ST_ERRMSG_MAX, "%s", (*out)->errmsg);
        study_destroy(*out);
        *out = NULL;
    }
    return rc;
}

void study_destroy(study *s)
{
    if (!s)
        return;
    fit_xp_destroy(s->xp);
    free(s->pidx);
    free(s->par);
    free(s->search_lo);
    free(s->search_hi);
    free(s->run_idx);
    free(s->x);
    free(s->cost);
    free(s->obj);
    free(s->N);
    free(s->D);
    free(s->failed);
    free(s->cp_run);
    free(s->cp_D);
    free(s->cp_obj);
    free(s->cp_branch);
    runner_sweep_free(s->owned);
    free(s);
}

const char *study_errmsg(const study *s)
{
    return s ? s->errmsg : "";
}

/* ---- the engine -------------------------------------------------------------------------- */

static double largest_used_cost(const study *s)
{
    double largest = 0;
    for (size_t k = 0; k < s->n; k++)
        if (!s->failed[k] && s->cost[k] > largest)
            largest = s->cost[k];
    return largest;
}

/* What was left out, for a message: "refused over the cost cap 22, infrastructure 1". */
static void left_out_text(const study *s, char *buf, size_t cap)
{
    const study_counts *c = &s->counts;
    snprintf(buf, cap,
             "%zu runs: %zu succeeded, %zu diverged; left out: %zu over the cost cap, %zu out "
             "of memory or timed out, %zu infrastructure, %zu unfinished, %zu stopped early, %zu "
             "unusable, %zu malformed final records",
             c->n_runs, c->n_succeeded, c->n_diverged, c->n_over_budget, c->n_resource, c->n_infra,
             c->n_unfinished, c->n_stopped_early, c->n_unusable, c->n_bad_final);
}

/* Warns for each law-following parameter recommended outside its searched range. */
static void warn_outside_search(study *s)
{
    for (size_t j = 0; j < s->P; j++) {
        double v = s->res.value[j];
        fit_xp_role role = fit_xp_param_role(s->xp, j);
        if (!isfinite(v) || (v >= s->search_lo[j] && v <= s->search_hi[j]) ||
            !(role == FIT_XP_LR || role == FIT_XP_BATCH))
            continue;
        study_add_warning(s,
                          "%s = %.4g is outside its searched range [%.4g, %.4g]: its law in N and "
                          "D puts it there, where no run of the sweep went",
                          s->par[j].name, v, s->search_lo[j], s->search_hi[j]);
    }
}

/* A recommended N or D this many times beyond every successful run's is an extrapolation on
 * that axis, and the warning says how to avoid it. */
#define BEYOND_FACTOR 2.0

/* The searched upper bound of the first parameter of role r (or r2), NAN if none; its name. */
static double searched_max(const study *s, fit_xp_role r, fit_xp_role r2, const char **name)
{
    for (size_t j = 0; j < s->P; j++) {
        fit_xp_role ro = fit_xp_param_role(s->xp, j);
        if (ro == r || ro == r2) {
            *name = s->par[j].name;
            return s->search_hi[j];
        }
    }
    *name = NULL;
    return NAN;
}

/* Warns where the recommended tokens (or model size) lie beyond BEYOND_FACTOR times the most any
 * successful run had: the additive law L = E + A/N^a + B/D^b learns its D term from every model
 * size, so runs of the small models at the large run's tokens turn the D extrapolation into an
 * interpolation (and large models at few tokens the N one). */
static void warn_beyond_sweep(study *s)
{
    double mN = 0, mD = 0;
    for (size_t k = 0; k < s->n; k++)
        if (!s->failed[k] && isfinite(s->obj[k])) {
            mN = fmax(mN, study_model_size(s, k));
            mD = fmax(mD, study_run_tokens(s, k));
        }
    const char *name = NULL;
    if (mD > 0 && s->res.D > BEYOND_FACTOR * mD) {
        double hi = searched_max(s, FIT_XP_D, FIT_XP_STEPS, &name);
        char bound[160] = "";
        if (name)
            snprintf(bound, sizeof(bound), " (%s is searched up to %.3g)", name, hi);
        study_add_warning(s,
                          "the large run's tokens (%.3g) are %.1fx the most any run trained "
                          "(%.3g): the loss is extrapolated in D. The law's D term is learnt from "
                          "every model size, so runs of the smallest models at about %.3g tokens "
                          "would make it an interpolation%s",
                          s->res.D, s->res.D / mD, mD, s->res.D, bound);
    }
    if (mN > 0 && s->res.N > BEYOND_FACTOR * mN)
        study_add_warning(s,
                          "the large run's model size (%.3g) is %.1fx the largest run's (%.3g): "
                          "the loss is extrapolated in N. Runs of that size at few tokens "
                          "would make it an interpolation",
                          s->res.N, s->res.N / mN, mN);
}

/* A run whose objective is worse than the model's prediction by more than MISFIT_Z robust sds
 * (1.4826 x the median absolute ln ratio) and MISFIT_MIN in ln objective is named in a warning:
 * on the tiny-GPT demo these are the runs stuck on a loss plateau (docs/results.md). */
#define MISFIT_Z   3.0
#define MISFIT_MIN 0.05
#define MISFIT_IDS 8 /* ids named at most */

static int cmp_abs(const void *a, const void *b)
{
    double x = fabs(*(const double *)a), y = fabs(*(const double *)b);
    return (x > y) - (x < y);
}

/* ln(objective / prediction) of each successful engine run into r (NAN where none); worse runs
 * positive (the sign flipped for a maximised objective). */
static void misfit_ratios(const study *s, double *r)
{
    for (size_t k = 0; k < s->n; k++) {
        double p = NAN;
        r[k] = NAN;
        if (s->failed[k] || !(s->obj[k] > 0) ||
            fit_xp_predict(s->xp, &s->x[k * s->P], s->N[k], s->D[k], &p, NULL, NULL, NULL) !=
                ST_OK ||
            !(p > 0))
            continue;
        r[k] = log(s->obj[k] / p) * (s->w->cfg->maximize ? -1 : 1);
    }
}

/* Warns of the runs far worse than the model predicts at their own settings (MISFIT_Z). */
static st_status warn_misfit(study *s)
{
    double *r = malloc(2 * (s->n + 1) * sizeof(double));
    if (!r)
        return ST_ENOMEM;
    double *a = r + s->n + 1;
    misfit_ratios(s, r);
    size_t na = 0;
    for (size_t k = 0; k < s->n; k++)
        if (isfinite(r[k]))
            a[na++] = r[k];
    qsort(a, na, sizeof(double), cmp_abs);
    double rsd = na >= 8 ? 1.4826 * fabs(a[na / 2]) : NAN, thr = fmax(MISFIT_Z * rsd, MISFIT_MIN);
    char ids[160] = "";
    size_t n_bad = 0, len = 0;
    for (size_t k = 0; isfinite(thr) && k < s->n; k++) {
        if (!(r[k] > thr))
            continue;
        if (n_bad++ < MISFIT_IDS && len < sizeof(ids))
            len += (size_t)snprintf(ids + len, sizeof(ids) - len, "%s%llu", len ? ", " : "",
                                    (unsigned long long)s->w->runs[s->run_idx[k]].id);
    }
    if (n_bad)
        study_add_warning(s,
                          "%zu run%s (%s%s) ended more than %.2g%% worse than the model predicts "
                          "at %s own settings (%g robust sds): a loss plateau, a spike or an "
                          "instability the law does not describe (%s)",
                          n_bad, n_bad > 1 ? "s" : "", ids, n_bad > MISFIT_IDS ? ", ..." : "",
                          100 * (exp(thr) - 1), n_bad > 1 ? "their" : "its", MISFIT_Z,
                          n_bad > 1 ? "their curves say which" : "its curve says which");
    free(r);
    return ST_OK;
}

st_status study_run(study *s)
{
    fit_xp_destroy(s->xp);
    s->xp = NULL;
    s->warn[0] = s->unsafe_reason[0] = s->errmsg[0] = '\0';
    s->safe = 0;
    memset(&s->backtest, 0, sizeof(s->backtest));
    double largest = largest_used_cost(s);
    s->target = isfinite(s->o.compute) ? s->o.compute : s->o.factor * largest;
    if (!(s->target > 0) || !isfinite(s->target)) {
        char lo[ST_ERRMSG_MAX / 2];
        left_out_text(s, lo, sizeof(lo));
        return st_errf(s->errmsg, ST_EEMPTY, "no successful run to scale from (%s)", lo);
    }
    s->o.engine.maximize = s->w->cfg->maximize;
    st_status rc = fit_xp_create(&s->xp);
    if (!rc)
        rc = fit_xp_set_options(s->xp, &s->o.engine);
    if (!rc)
        rc = fit_xp_set_runs(s->xp, s->P, s->par, s->n, s->x, s->cost, s->obj, s->failed, s->N,
                             s->D);
    if (!rc && s->n_cp)
        rc = fit_xp_set_curve_points(s->xp, s->n_cp, s->cp_run, s->cp_D, s->cp_obj, s->cp_branch,
                                     s->o.curve_weight);
    if (!rc)
        rc = fit_xp_run(s->xp, s->target);
    if (rc) {
        char lo[ST_ERRMSG_MAX / 2];
        left_out_text(s, lo, sizeof(lo));
        st_errf(s->errmsg, rc, "%s (%s)", s->xp ? fit_xp_errmsg(s->xp) : "out of memory", lo);
        fit_xp_destroy(s->xp);
        s->xp = NULL;
        return rc;
    }
    fit_xp_get_result(s->xp, &s->res);
    warn_outside_search(s);
    warn_beyond_sweep(s);
    if (warn_misfit(s) == ST_ENOMEM)
        study_add_warning(s, "out of memory: the runs far off the model were not looked for");
    if (s->counts.n_over_budget)
        study_add_warning(s,
                          "%zu runs refused or stopped over the cost cap were left out (they say "
                          "nothing about the hyperparameters)",
                          s->counts.n_over_budget);
    s->safe = study_judge_safety(s);
    if (s->o.backtest)
        study_backtest(s);
    return ST_OK;
}

const study_backtest_result *study_get_backtest(const study *s)
{
    return &s->backtest;
}

int study_safe(const study *s)
{
    return s && s->xp && s->safe;
}

const char *study_unsafe_reason(const study *s)
{
    return s ? s->unsafe_reason : "";
}

const runner_sweep *study_sweep(const study *s)
{
    return s->w;
}

const study_counts *study_get_counts(const study *s)
{
    return &s->counts;
}

const fit_xp *study_engine(const study *s)
{
    return s ? s->xp : NULL;
}

size_t study_n_engine_runs(const study *s)
{
    return s->n;
}

size_t study_engine_run(const study *s, size_t k)
{
    return s->run_idx[k];
}

size_t study_engine_param(const study *s, size_t j)
{
    return s->pidx[j];
}

double study_target(const study *s)
{
    return s->target;
}

const char *study_warnings(const study *s)
{
    return s->warn;
}
