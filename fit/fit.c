/*
 * fit.c — the fitter handle: options, data, the multi-start L-BFGS driver (a grid of starts
 * spread over threads, then a tight polish of the best few), diagnostics and the loss-scale
 * warning, predictions and the objective for tests. Deterministic: every start is independent
 * and the best is chosen by (objective, start index), so the thread count does not matter.
 * Not here: bootstrap (bootstrap.c), profiles and hold-out (validate.c). Depends on NLopt.
 */
#include "fit/fit_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fit {
    const fit_law *law;
    fit_options opt;
    char err[ST_ERRMSG_MAX];
    char warn[ST_ERRMSG_MAX];
    size_t n;
    double *x, *lx, *lxt, *y, *ly, *w;
    size_t n_user_starts;
    double *user_starts;
    double fixed[FIT_MAX_PAR];
    int fitted;
    double theta[FIT_MAX_PAR + 1];
    double nat[FIT_MAX_PAR];
    double fval, sigma, loglik;
    unsigned warnings;
    fit_diag diag;
};

fit_options fit_options_default(void)
{
    fit_options o;
    o.objective = FIT_OBJ_HUBER;
    o.delta = 1e-3;
    o.linear = 0;
    o.mean = 0;
    o.n_threads = 0;
    o.max_eval = 2000;
    o.ftol_rel = 1e-5;
    o.xtol_rel = 1e-5;
    o.n_polish = 16;
    return o;
}

static const char *const obj_names[] = {"huber", "huber-lik", "mse", "mae"};

const char *fit_objective_name(fit_objective o)
{
    return (unsigned)o < 4 ? obj_names[o] : "unknown";
}

int fit_objective_by_name(const char *name)
{
    for (int i = 0; name && i < 4; i++)
        if (!strcmp(obj_names[i], name))
            return i;
    return -1;
}

st_status fit_create(const fit_law *law, fit **out)
{
    *out = NULL;
    if (!law)
        return ST_EINVAL;
    fit *f = calloc(1, sizeof(*f));
    if (!f)
        return ST_ENOMEM;
    f->law = law;
    f->opt = fit_options_default();
    for (size_t i = 0; i < FIT_MAX_PAR; i++)
        f->fixed[i] = NAN;
    f->fval = f->sigma = f->loglik = NAN;
    *out = f;
    return ST_OK;
}

static void free_data(fit *f)
{
    free(f->x);
    free(f->lx);
    free(f->lxt);
    free(f->y);
    free(f->ly);
    free(f->w);
    f->x = f->lx = f->lxt = f->y = f->ly = f->w = NULL;
    f->n = 0;
}

void fit_destroy(fit *f)
{
    if (!f)
        return;
    free_data(f);
    free(f->user_starts);
    free(f);
}

const char *fit_errmsg(const fit *f)
{
    return f ? f->err : "";
}

const fit_law *fit_get_law(const fit *f)
{
    return f->law;
}

st_status fit_set_options(fit *f, const fit_options *o)
{
    f->err[0] = 0;
    if (!(o->delta > 0) || !isfinite(o->delta))
        return st_errf(f->err, ST_EINVAL, "delta must be positive and finite (got %g)", o->delta);
    if (o->max_eval == 0 || (unsigned)o->objective > FIT_OBJ_MAE)
        return st_errf(f->err, ST_EINVAL, "max_eval must be > 0 and the objective known");
    if (!(o->ftol_rel >= 0) || !(o->xtol_rel >= 0))
        return st_errf(f->err, ST_EINVAL, "tolerances must be >= 0");
    f->opt = *o;
    f->fitted = 0;
    return ST_OK;
}

const fit_options *fit_get_options(const fit *f)
{
    return &f->opt;
}

static size_t min_points(const fit *f)
{
    return f->law->n_par + 1 + (f->opt.objective == FIT_OBJ_HUBER_LIK);
}

st_status fit_set_data(fit *f, size_t n, const double *x, const double *y, const double *w)
{
    f->err[0] = 0;
    size_t nin = f->law->n_in;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < nin; j++)
            if (!(x[i * nin + j] > 0) || !isfinite(x[i * nin + j]))
                return st_errf(f->err, ST_EINVAL,
                               "row %zu, input '%s': value %g must be finite and > 0", i,
                               f->law->in_names[j], x[i * nin + j]);
        if (!(y[i] > 0) || !isfinite(y[i]))
            return st_errf(f->err, ST_EINVAL, "row %zu, target: value %g must be finite and > 0", i,
                           y[i]);
        if (w && (!(w[i] >= 0) || !isfinite(w[i])))
            return st_errf(f->err, ST_EINVAL, "row %zu, weight: value %g must be finite and >= 0",
                           i, w[i]);
    }
    if (n < min_points(f))
        return st_errf(f->err, ST_EEMPTY, "%zu points are too few for law '%s' (needs %zu)", n,
                       f->law->name, min_points(f));
    free_data(f);
    f->fitted = 0;
    f->x = malloc(n * nin * sizeof(double));
    f->lx = malloc(n * nin * sizeof(double));
    f->lxt = malloc(n * nin * sizeof(double));
    f->y = malloc(n * sizeof(double));
    f->ly = malloc(n * sizeof(double));
    f->w = malloc(n * sizeof(double));
    if (!f->x || !f->lx || !f->lxt || !f->y || !f->ly || !f->w) {
        free_data(f);
        return st_errf(f->err, ST_ENOMEM, "out of memory for %zu points", n);
    }
    for (size_t i = 0; i < n * nin; i++) {
        f->x[i] = x[i];
        f->lx[i] = log(x[i]);
        f->lxt[(i % nin) * n + i / nin] = f->lx[i];
    }
    for (size_t i = 0; i < n; i++) {
        f->y[i] = y[i];
        f->ly[i] = log(y[i]);
        f->w[i] = w ? w[i] : 1.0;
    }
    f->n = n;
    return ST_OK;
}

st_status fit_set_starts(fit *f, size_t n_starts, const double *starts)
{
    f->err[0] = 0;
    size_t np = f->law->n_par;
    for (size_t i = 0; i < n_starts * np; i++)
        if (!isfinite(starts[i]))
            return st_errf(f->err, ST_EINVAL, "start %zu, parameter '%s' is not finite", i / np,
                           f->law->par_names[i % np]);
    double *s = NULL;
    if (n_starts) {
        s = malloc(n_starts * np * sizeof(double));
        if (!s)
            return st_errf(f->err, ST_ENOMEM, "out of memory for %zu starts", n_starts);
        memcpy(s, starts, n_starts * np * sizeof(double));
    }
    free(f->user_starts);
    f->user_starts = s;
    f->n_user_starts = n_starts;
    return ST_OK;
}

st_status fit_fix_param(fit *f, size_t i, double value)
{
    f->err[0] = 0;
    if (i >= f->law->n_par)
        return st_errf(f->err, ST_EINVAL, "parameter index %zu out of range (law '%s' has %zu)", i,
                       f->law->name, f->law->n_par);
    f->fixed[i] = value;
    f->fitted = 0;
    return ST_OK;
}

/* Problem view of f's data for objective `obj`. */
static void make_prob(const fit *f, fit_objective obj, fit_prob *p)
{
    p->law = f->law;
    p->n = f->n;
    p->x = f->x;
    p->lx = f->lx;
    p->lxt = f->lxt;
    p->y = f->y;
    p->ly = f->ly;
    p->w = f->w;
    p->idx = NULL;
    p->obj = obj;
    p->delta = f->opt.delta;
    p->linear = f->opt.linear;
    p->mean = f->opt.mean;
    p->log_z = obj == FIT_OBJ_HUBER_LIK ? fit_huber_log_z(f->opt.delta) : 0;
}

/* The law's default grid: the cartesian product of its per-parameter candidates, the last
 * parameter varying fastest. */
static double *default_starts(const fit_law *law, size_t *n_out)
{
    size_t n = 1, np = law->n_par;
    for (size_t j = 0; j < np; j++)
        n *= law->grid_len[j];
    double *s = malloc(n * np * sizeof(double));
    if (!s)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        size_t r = i;
        for (size_t j = np; j-- > 0;) {
            s[i * np + j] = law->grid[j][r % law->grid_len[j]];
            r /= law->grid_len[j];
        }
    }
    *n_out = n;
    return s;
}

/* ---- the multi-start driver -------------------------------------------------------------- */

typedef struct run_ctx {
    fit_local *loc; /* one per worker */
    size_t np;      /* coordinates optimised (n_par, + 1 for log sigma in the polish) */
    double *x;      /* n_items × np: start in, result out */
    double *fv;
    int *code;
    size_t *evals;
} run_ctx;

static void run_job(void *c, size_t worker, size_t item)
{
    run_ctx *r = c;
    fit_local *L = &r->loc[worker];
    size_t before = L->n_evals;
    r->code[item] = fit_local_run(L, r->x + item * r->np, &r->fv[item]);
    r->evals[item] = L->n_evals - before;
}

/* Runs n_items local minimisations on `prob` from x (n_items × np). */
static st_status run_many(fit *f, const fit_prob *prob, size_t np, size_t n_items, double ftol,
                          double xtol, size_t max_eval, run_ctx *r)
{
    size_t nt = f->opt.n_threads ? f->opt.n_threads : fit_default_threads();
    if (nt > n_items)
        nt = n_items;
    if (nt == 0)
        nt = 1;
    double fixed[FIT_MAX_PAR + 1];
    for (size_t i = 0; i < np; i++)
        fixed[i] = i < f->law->n_par ? f->fixed[i] : NAN;
    r->loc = calloc(nt, sizeof(fit_local));
    if (!r->loc)
        return ST_ENOMEM;
    r->np = np;
    st_status st = ST_OK;
    for (size_t t = 0; t < nt && st == ST_OK; t++)
        st = fit_local_init(&r->loc[t], prob, np, fixed, ftol, xtol, max_eval);
    if (st == ST_OK)
        st = fit_pool_run(nt, n_items, run_job, r);
    for (size_t t = 0; t < nt; t++)
        fit_local_clear(&r->loc[t]);
    free(r->loc);
    r->loc = NULL;
    return st;
}

static double inf_norm(const double *g, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(g[i]));
    return m;
}

typedef struct rank {
    double fv;
    size_t i;
} rank;

static int cmp_rank(const void *a, const void *b)
{
    const rank *x = a, *y = b;
    if (x->fv != y->fv)
        return x->fv < y->fv ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static void add_warning(fit *f, unsigned bit, const char *text)
{
    f->warnings |= bit;
    size_t len = strlen(f->warn);
    snprintf(f->warn + len, sizeof(f->warn) - len, "%s%s", len ? "; " : "", text);
}

/* Stage 1's working set: the starts (moved to their local optima), their objective values,
 * NLopt codes and evaluation counts, their ranking, and a copy of the starts as given. */
typedef struct starts {
    size_t n;
    double *x, *fv, *x0;
    int *code;
    size_t *evals;
    rank *rk;
} starts;

static void starts_free(starts *s)
{
    free(s->x);
    free(s->fv);
    free(s->code);
    free(s->evals);
    free(s->rk);
    free(s->x0);
}

/* the user's starts or the law's default grid, fixed parameters set in each */
static st_status starts_make(fit *f, starts *s)
{
    size_t np = f->law->n_par;
    memset(s, 0, sizeof(*s));
    s->x = f->n_user_starts ? malloc(f->n_user_starts * np * sizeof(double))
                            : default_starts(f->law, &s->n);
    if (f->n_user_starts && s->x) {
        s->n = f->n_user_starts;
        memcpy(s->x, f->user_starts, s->n * np * sizeof(double));
    }
    s->fv = malloc(s->n * sizeof(double));
    s->code = malloc(s->n * sizeof(int));
    s->evals = malloc(s->n * sizeof(size_t));
    s->rk = malloc(s->n * sizeof(rank));
    s->x0 = malloc(s->n * np * sizeof(double));
    if (!s->x || !s->fv || !s->code || !s->evals || !s->rk || !s->x0)
        return st_errf(f->err, ST_ENOMEM, "out of memory for %zu starts", s->n);
    for (size_t i = 0; i < s->n; i++)
        for (size_t j = 0; j < np; j++)
            if (!isnan(f->fixed[j]))
                s->x[i * np + j] = f->fixed[j];
    memcpy(s->x0, s->x, s->n * np * sizeof(double));
    return ST_OK;
}

/* Stage 1: every start to moderate tolerance on pg, then ranked by objective; n_fin receives the
 * number that reached a finite value, tot_ev the evaluations spent. */
static st_status stage_starts(fit *f, const fit_prob *pg, starts *s, size_t *n_fin, size_t *tot_ev)
{
    size_t np = f->law->n_par;
    run_ctx r = {NULL, np, s->x, s->fv, s->code, s->evals};
    st_status st = run_many(f, pg, np, s->n, f->opt.ftol_rel, f->opt.xtol_rel, f->opt.max_eval, &r);
    if (st != ST_OK)
        return st_errf(f->err, st, "could not start the optimiser");
    *n_fin = *tot_ev = 0;
    for (size_t i = 0; i < s->n; i++) {
        s->rk[i].fv = s->fv[i];
        s->rk[i].i = i;
        *n_fin += isfinite(s->fv[i]) && s->fv[i] < HUGE_VAL;
        *tot_ev += s->evals[i];
    }
    if (!*n_fin)
        return st_errf(f->err, ST_ENUMERIC, "no start gave a finite objective (law '%s')",
                       f->law->name);
    qsort(s->rk, s->n, sizeof(rank), cmp_rank);
    return ST_OK;
}

/* Stage 2's working set: the best few starts polished (with log sigma appended for the
 * likelihood), their values, codes and evaluations. */
typedef struct polish {
    size_t n, np; /* starts polished; coordinates each */
    double *x, *fv;
    int *code;
    size_t *evals;
} polish;

static void polish_free(polish *p)
{
    free(p->x);
    free(p->fv);
    free(p->code);
    free(p->evals);
}

/* Stage 2: the best npol starts polished with tight tolerances on the requested objective pf. */
static st_status stage_polish(fit *f, const fit_prob *pf, const starts *s, size_t n_fin, polish *p)
{
    size_t np = f->law->n_par;
    int lik = f->opt.objective == FIT_OBJ_HUBER_LIK;
    p->n = f->opt.n_polish ? f->opt.n_polish : 1;
    if (p->n > n_fin)
        p->n = n_fin;
    p->np = np + (size_t)lik;
    p->x = malloc(p->n * p->np * sizeof(double));
    p->fv = malloc(p->n * sizeof(double));
    p->code = malloc(p->n * sizeof(int));
    p->evals = malloc(p->n * sizeof(size_t));
    if (!p->x || !p->fv || !p->code || !p->evals)
        return st_errf(f->err, ST_ENOMEM, "out of memory");
    for (size_t k = 0; k < p->n; k++) {
        memcpy(p->x + k * p->np, s->x + s->rk[k].i * np, np * sizeof(double));
        if (lik)
            p->x[k * p->np + np] = fit_prob_sigma_start(pf, p->x + k * p->np);
    }
    run_ctx r = {NULL, p->np, p->x, p->fv, p->code, p->evals};
    st_status st = run_many(f, pf, p->np, p->n, 1e-15, 1e-13, 20 * f->opt.max_eval, &r);
    return st != ST_OK ? st_errf(f->err, st, "could not start the optimiser") : ST_OK;
}

/* the infinity norm of prob's gradient at x over the free parameters (the first n) */
static double free_grad_norm(const fit *f, const fit_prob *prob, const double *x, size_t n)
{
    double g[FIT_MAX_PAR + 1];
    fit_prob_eval(prob, x, g);
    for (size_t j = 0; j < f->law->n_par; j++)
        if (!isnan(f->fixed[j]))
            g[j] = 0;
    return inf_norm(g, n);
}

/* the warnings of a finished fit: an objective too small to move L-BFGS, an averaged
 * objective, no convergence, an optimum reached from one start only (n_same starts agree) */
static void warn_run(fit *f, const starts *s, const polish *p, size_t best, size_t n_same)
{
    size_t evals = s->evals[s->rk[best].i];
    if (f->diag.start_grad < 1e-5 || evals <= 3) {
        char msg[200];
        snprintf(msg, sizeof(msg),
                 "loss scale: the best start's gradient is %.3g and L-BFGS stopped after %zu "
                 "evaluations; an averaged or tiny objective stops early (use the summed loss)",
                 f->diag.start_grad, evals);
        add_warning(f, FIT_WARN_LOSS_SCALE, msg);
    }
    if (f->opt.mean)
        add_warning(f, FIT_WARN_LOSS_SCALE,
                    "the objective is averaged over points: gradients shrink by 1/n");
    if (p->code[best] == NLOPT_MAXEVAL_REACHED || p->code[best] == NLOPT_FAILURE)
        add_warning(f, FIT_WARN_NOT_CONVERGED, "the final L-BFGS polish did not converge");
    if (n_same < 2 && p->n >= 2 && f->opt.objective != FIT_OBJ_HUBER_LIK)
        add_warning(f, FIT_WARN_SPREAD, "the optimum was reached from one start only");
}

/* The best polished start becomes the fit: its parameters, objective, sigma and log
 * likelihood, and the diagnostics (how many polished starts agree, the others' spread). */
static void record_best(fit *f, const fit_prob *pg, const fit_prob *pf, const starts *s,
                        const polish *p, size_t n_fin, size_t tot_ev)
{
    size_t np = f->law->n_par, best = 0, n_same = 0;
    int lik = f->opt.objective == FIT_OBJ_HUBER_LIK;
    for (size_t k = 0; k < p->n; k++) {
        tot_ev += p->evals[k];
        if (p->fv[k] < p->fv[best])
            best = k;
    }
    double spread = 0;
    for (size_t k = 0; k < p->n; k++) {
        double rel = fabs(p->fv[k] - p->fv[best]) / fmax(fabs(p->fv[best]), 1e-300);
        if (rel <= 1e-6)
            n_same++;
        else if (isfinite(rel))
            spread = fmax(spread, rel);
    }
    memcpy(f->theta, p->x + best * p->np, p->np * sizeof(double));
    f->fval = p->fv[best];
    fit_law_natural(f->law, f->theta, f->nat);
    f->sigma = lik ? exp(f->theta[np]) : NAN;
    f->loglik = lik && !f->opt.mean ? -f->fval : NAN;
    memset(&f->diag, 0, sizeof(f->diag));
    f->diag.n_starts = s->n;
    f->diag.n_finite = n_fin;
    f->diag.best_start = s->rk[best].i;
    f->diag.n_evals = tot_ev;
    f->diag.grad_norm = free_grad_norm(f, pf, f->theta, p->np);
    f->diag.nlopt_code = p->code[best];
    f->diag.spread = spread;
    f->diag.start_grad = free_grad_norm(f, pg, s->x0 + s->rk[best].i * np, np);
    warn_run(f, s, p, best, n_same);
}

st_status fit_run(fit *f)
{
    f->err[0] = 0;
    f->warn[0] = 0;
    f->warnings = 0;
    f->fitted = 0;
    if (!f->n)
        return st_errf(f->err, ST_ESTATE, "no data: call fit_set_data first");
    int lik = f->opt.objective == FIT_OBJ_HUBER_LIK;
    /* stage 1 fits the plain Huber objective when the likelihood was asked for (its minimiser
     * in theta is a Huber fit at threshold delta sigma) */
    fit_prob pg, pf;
    make_prob(f, lik ? FIT_OBJ_HUBER : f->opt.objective, &pg);
    make_prob(f, f->opt.objective, &pf);
    starts s;
    polish p = {0};
    size_t n_fin = 0, tot_ev = 0;
    st_status st = starts_make(f, &s);
    if (!st)
        st = stage_starts(f, &pg, &s, &n_fin, &tot_ev);
    if (!st)
        st = stage_polish(f, &pf, &s, n_fin, &p);
    if (!st) {
        record_best(f, &pg, &pf, &s, &p, n_fin, tot_ev);
        f->fitted = 1;
    }
    polish_free(&p);
    starts_free(&s);
    return st;
}

const double *fit_theta(const fit *f)
{
    return f->fitted ? f->theta : NULL;
}

const double *fit_params(const fit *f)
{
    return f->fitted ? f->nat : NULL;
}

double fit_objective_value(const fit *f)
{
    return f->fitted ? f->fval : NAN;
}

double fit_sigma(const fit *f)
{
    return f->fitted ? f->sigma : NAN;
}

double fit_loglik(const fit *f)
{
    return f->fitted ? f->loglik : NAN;
}

unsigned fit_warnings(const fit *f)
{
    return f->warnings;
}

const char *fit_warning_text(const fit *f)
{
    return f->warn;
}

void fit_get_diag(const fit *f, fit_diag *d)
{
    *d = f->diag;
}

double fit_objective_eval(const fit *f, const double *theta, double *grad)
{
    if (!f->n)
        return NAN;
    fit_prob p;
    make_prob(f, f->opt.objective, &p);
    return fit_prob_eval(&p, theta, grad);
}

st_status fit_predict(const fit *f, size_t n, const double *x, double *yhat)
{
    if (!f->fitted)
        return ST_ESTATE;
    for (size_t i = 0; i < n; i++)
        yhat[i] = exp(fit_law_eval(f->law, f->theta, x + i * f->law->n_in, NULL));
    return ST_OK;
}

/* ---- internal access for bootstrap.c and validate.c ------------------------------------- */

void fit_int_prob(const fit *f, fit_objective obj, fit_prob *p)
{
    make_prob(f, obj, p);
}

const double *fit_int_fixed(const fit *f)
{
    return f->fixed;
}

size_t fit_int_n(const fit *f)
{
    return f->n;
}

char *fit_int_err(fit *f)
{
    return f->err;
}
