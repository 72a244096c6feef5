/*
 * suggest.c — one suggestion (shared specs/carbs.md §5.4–5.7, §6): the random phase (a
 * quasi-random or Gaussian design around the search centre), the resample phase (re-run the
 * least-sampled Pareto group), and the Bayesian step: GP models of output, cost, failure and the
 * Pareto front, candidates drawn around Pareto origins from per-dimension truncated normals
 * (no rejection, no 2^D over-generation), scored by expected improvement over the front at the
 * candidate's predicted cost x locality x P(success) x cost cap. Batches place fantasies at the
 * picks of one fitted model. Never fails for want of a model: a fallback draws near the front.
 */
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_qrng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "carbs/carbs_int.h"

#define CAND_ROUNDS  4  /* rounds of Bayesian candidates drawn again in place of over-cap ones */
#define REDRAW_TRIES 32 /* redraws of a single-point phase before the descent */

/* ---- small helpers ----------------------------------------------------------------------- */

static int faithful(const carbs *c)
{
    return c->o.mode == CARBS_MODE_FAITHFUL;
}

/* xi of EI: the option, or by mode when it is NaN ("auto"). Measured on Branin, Hartmann-6 and
 * the cost toy (docs/algorithms/carbs.md): with the tail-keeping output transform, xi = 0 was
 * best in recommended mode; CARBS uses 1. */
static double xi_of(const carbs *c)
{
    if (!isnan(c->o.exploration_bias))
        return c->o.exploration_bias;
    return faithful(c) ? 1.0 : 0.0;
}

static double sign_of(const carbs *c)
{
    return c->o.maximize ? 1.0 : -1.0; /* CARBS' better_direction_sign */
}

/* ---- the models -------------------------------------------------------------------------- */

typedef struct models {
    size_t ns;       /* successes */
    double *Xs;      /* ns*D basic inputs of the successes */
    double *ys;      /* ns surrogate outputs: sign * QT(y), bigger is better */
    double *ls;      /* ns scaled log costs l' */
    double *cs;      /* ns costs */
    size_t *obs_idx; /* ns: index of each success among all observations */
    qt qt;
    logcost lc;
    gp *out, *cost, *succ, *par;
    pgroup *groups;
    size_t *sel, n_groups, n_sel;
    double *origins; /* n_sel*D */
    double par_lmin, par_lmax;
    size_t *sub;     /* n_sub successes the GPs condition on, in increasing order (subset.c);
                        NULL: all of them */
    size_t *sub_pri; /* the same, in subset.c's priority order */
    size_t n_sub;
    unsigned borrowed; /* BORROW_*: out, cost, succ are the cache's (gpcache.c) */
} models;

#define BORROW_OUT  1u
#define BORROW_COST 2u
#define BORROW_SUCC 4u

static void models_clear(models *m)
{
    free(m->Xs);
    free(m->ys);
    free(m->ls);
    free(m->cs);
    free(m->obs_idx);
    qt_clear(&m->qt);
    if (!(m->borrowed & BORROW_OUT))
        gp_destroy(m->out);
    if (!(m->borrowed & BORROW_COST))
        gp_destroy(m->cost);
    if (!(m->borrowed & BORROW_SUCC))
        gp_destroy(m->succ);
    gp_destroy(m->par);
    pareto_free(m->groups, m->n_groups, m->sel);
    free(m->origins);
    free(m->sub);
    free(m->sub_pri);
    memset(m, 0, sizeof(*m));
}

/* The successes, in observation order: basic inputs, costs and their observation indices. */
static st_status load_successes(const carbs *c, models *m)
{
    size_t d = c->d, ns = c->n_succ, k = 0;
    m->ns = ns;
    m->Xs = malloc((ns ? ns : 1) * d * sizeof(double));
    m->cs = malloc((ns ? ns : 1) * sizeof(double));
    m->obs_idx = malloc((ns ? ns : 1) * sizeof(size_t));
    if (!m->Xs || !m->cs || !m->obs_idx)
        return ST_ENOMEM;
    for (size_t i = 0; i < c->n_obs; i++) {
        if (c->obs_fail[i])
            continue;
        memcpy(m->Xs + k * d, c->obs_b + i * d, d * sizeof(double));
        m->cs[k] = c->obs_c[i];
        m->obs_idx[k++] = i;
    }
    return ST_OK;
}

/* Whether the GPs condition on a subset of the successes: above gp_max_points, in
 * recommended mode (faithful mode conditions on every run, as CARBS does). */
static int subsetting(const carbs *c)
{
    return !faithful(c) && c->o.gp_max_points > 0 && c->n_succ > c->o.gp_max_points;
}

/* Whether a GP over n rows (n_fixed of them not counted) comes from the cache (gpcache.c):
 * recommended mode over every run, above CARBS_GPC_MIN counted rows. */
static int cached(const carbs *c, size_t n, size_t n_fixed)
{
    return !faithful(c) && !subsetting(c) && n - n_fixed > CARBS_GPC_MIN;
}

static gp_fit_opts fit_opts(const carbs *c)
{
    gp_fit_opts f = gp_fit_opts_default();
    f.faithful = faithful(c);
    f.init_lengthscale = c->o.search_radius;
    f.restarts = c->o.gp_restarts;
    f.max_fit_points = c->o.gp_max_fit_points;
    /* above gp_max_points the MAP fits were most of a suggestion's time (docs/benchmarks.md
     * section 10): one L-BFGS start, from the defaults, instead of 1 + gp_restarts, on at most
     * gp_max_points / 4 of the subset's points */
    if (subsetting(c)) {
        size_t nf = c->o.gp_max_points / 4;
        f.restarts = 0;
        if (f.max_fit_points == 0 || f.max_fit_points > nf)
            f.max_fit_points = nf;
    }
    return f;
}

st_status carbs_priv_fit_gp(carbs *c, size_t n, const double *X, const double *y, st_rng *rng,
                            gp **out)
{
    gp_fit_opts f = fit_opts(c);
    st_status s = gp_create(GP_KERNEL_LIN_MATERN32, c->d, out);
    if (s != ST_OK)
        return s;
    size_t *lv = malloc((c->d ? c->d : 1) * sizeof(size_t));
    if (!lv)
        return ST_ENOMEM;
    for (size_t i = 0; i < c->d; i++)
        lv[i] = c->params[i].space == CARBS_SPACE_CATEGORICAL ? c->params[i].n_choices : 0;
    s = gp_set_levels(*out, lv);
    free(lv);
    if (s != ST_OK)
        return s;
    if (!faithful(c)) /* centre the linear kernel at the search centre (spec §2, note) */
        gp_set_linear_center(*out, c->center_b);
    s = gp_set_data(*out, n, X, y);
    if (s == ST_OK)
        s = gp_fit(*out, &f, rng);
    return s;
}

/* Groups and the Pareto front of the successes, origins = first member of each front group. */
static st_status fit_pareto(carbs *c, models *m, int conservative)
{
    double sg = sign_of(c);
    double *value = malloc(m->ns * sizeof(double));
    if (!value)
        return ST_ENOMEM;
    for (size_t k = 0; k < m->ns; k++)
        value[k] = sg * c->obs_y[m->obs_idx[k]];
    st_status s = pareto_groups(m->ns, c->d, m->Xs, value, m->cs, c->o.min_pareto_cost_fraction,
                                conservative, &m->groups, &m->sel, &m->n_groups, &m->n_sel);
    free(value);
    if (s != ST_OK)
        return s;
    m->origins = malloc(m->n_sel * c->d * sizeof(double));
    if (!m->origins)
        return ST_ENOMEM;
    for (size_t g = 0; g < m->n_sel; g++)
        memcpy(m->origins + g * c->d, m->Xs + m->groups[m->sel[g]].members[0] * c->d,
               c->d * sizeof(double));
    return ST_OK;
}

static int cmp_size(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    return (a > b) - (a < b);
}

/* m->sub: the successes the GPs condition on (subset.c), from the successes and the Pareto
 * groups of fit_pareto (the origins and their members). Only when subsetting(c). */
static st_status choose_subset(const carbs *c, models *m)
{
    size_t M = c->o.gp_max_points, nf = 0;
    for (size_t g = 0; g < m->n_sel; g++)
        nf += m->groups[m->sel[g]].n;
    double *value = malloc(m->ns * sizeof(double));
    size_t *front = malloc((nf ? nf : 1) * sizeof(size_t));
    m->sub = malloc(M * sizeof(size_t));
    m->sub_pri = malloc(M * sizeof(size_t));
    st_status s = value && front && m->sub && m->sub_pri ? ST_OK : ST_ENOMEM;
    if (s == ST_OK) {
        nf = 0;
        for (size_t g = 0; g < m->n_sel; g++)
            for (size_t j = 0; j < m->groups[m->sel[g]].n; j++)
                front[nf++] = m->groups[m->sel[g]].members[j];
        for (size_t k = 0; k < m->ns; k++)
            value[k] = sign_of(c) * c->obs_y[m->obs_idx[k]];
        s = carbs_priv_subset(m->ns, c->d, m->Xs, value, m->obs_idx, nf, front, m->n_sel,
                              m->origins, M, m->sub_pri);
    }
    if (s == ST_OK) {
        m->n_sub = M < m->ns ? M : m->ns;
        memcpy(m->sub, m->sub_pri, m->n_sub * sizeof(size_t));
        qsort(m->sub, m->n_sub, sizeof(size_t), cmp_size);
    }
    free(value);
    free(front);
    return s;
}

/* Rows `rows` (n_rows, increasing) of X (.. x d) and y into fresh arrays. */
static st_status gather(size_t d, size_t n_rows, const size_t *rows, const double *X,
                        const double *y, double **Xo, double **yo)
{
    *Xo = malloc((n_rows ? n_rows : 1) * d * sizeof(double));
    *yo = malloc((n_rows ? n_rows : 1) * sizeof(double));
    if (!*Xo || !*yo) {
        free(*Xo);
        free(*yo);
        *Xo = *yo = NULL;
        return ST_ENOMEM;
    }
    for (size_t r = 0; r < n_rows; r++) {
        memcpy(*Xo + r * d, X + rows[r] * d, d * sizeof(double));
        (*yo)[r] = y[rows[r]];
    }
    return ST_OK;
}

/* The cost model's rows within cap_cost_data's (n_all: the ns successes, then the cost-only
 * observations): every row, or with a subset its successes and the gp_max_points / 4 most
 * recent cost-only observations. *rows is malloc'd (NULL: every row). */
static st_status cost_rows(const carbs *c, const models *m, size_t n_all, size_t **rows,
                           size_t *n_rows)
{
    *rows = NULL;
    *n_rows = n_all;
    if (!m->sub)
        return ST_OK;
    size_t nc = n_all - m->ns, q = c->o.gp_max_points / 4;
    if (nc > q)
        nc = q;
    *rows = malloc((m->n_sub + nc) * sizeof(size_t));
    if (!*rows)
        return ST_ENOMEM;
    memcpy(*rows, m->sub, m->n_sub * sizeof(size_t));
    for (size_t j = 0; j < nc; j++)
        (*rows)[m->n_sub + j] = n_all - nc + j;
    *n_rows = m->n_sub + nc;
    return ST_OK;
}

static st_status fit_cost_cached(carbs *c, models *m);

/* The cost model: a GP on scaled log cost over the successes and the cost-only observations
 * (runs refused or killed over the cap), or over their subset; the scaled log cost is fitted
 * on all of them, and m->ls holds the successes' scaled log costs. */
static st_status fit_cost(carbs *c, models *m)
{
    if (cached(c, m->ns + c->n_cobs, c->n_cobs))
        return fit_cost_cached(c, m);
    size_t n, *rows = NULL, n_rows;
    double *X, *cost;
    if (cap_cost_data(c, &n, &X, &cost) != ST_OK)
        return ST_ENOMEM;
    logcost_fit(&m->lc, n, cost);
    for (size_t i = 0; i < n; i++)
        cost[i] = logcost_forward(&m->lc, cost[i]);
    memcpy(m->ls, cost, m->ns * sizeof(double)); /* the successes come first */
    st_status s = cost_rows(c, m, n, &rows, &n_rows);
    if (s == ST_OK && rows) {
        double *Xr, *cr;
        s = gather(c->d, n_rows, rows, X, cost, &Xr, &cr);
        if (s == ST_OK) {
            free(X);
            free(cost);
            X = Xr;
            cost = cr;
            n = n_rows;
        }
    }
    if (s == ST_OK)
        s = carbs_priv_fit_gp(c, n, X, cost, c->rng, &m->cost);
    free(rows);
    free(X);
    free(cost);
    return s;
}

/* fit_cost from the cache: the rows are the cost-only observations, then the successes (so
 * that successes append); the map is fitted on all of them, as fit_cost's. */
static st_status fit_cost_cached(carbs *c, models *m)
{
    size_t d = c->d, nc = c->n_cobs, ns = m->ns, n = nc + ns;
    double *X = malloc(n * d * sizeof(double)), *raw = malloc(n * sizeof(double)),
           *y = malloc(n * sizeof(double));
    st_status s = X && raw && y ? ST_OK : ST_ENOMEM;
    if (s == ST_OK) {
        if (nc) { /* the arrays are NULL before the first one */
            memcpy(X, c->cobs_b, nc * d * sizeof(double));
            memcpy(raw, c->cobs_c, nc * sizeof(double));
        }
        memcpy(X + nc * d, m->Xs, ns * d * sizeof(double));
        memcpy(raw + nc, m->cs, ns * sizeof(double));
        logcost_fit(&m->lc, n, raw);
        for (size_t i = 0; i < n; i++)
            y[i] = logcost_forward(&m->lc, raw[i]);
        memcpy(m->ls, y + nc, ns * sizeof(double));
        s = carbs_priv_gp_get(c, GPC_COST, n, nc, X, y, raw, &m->cost);
        m->borrowed |= BORROW_COST;
    }
    free(X);
    free(raw);
    free(y);
    return s;
}

st_status carbs_priv_cost_data(carbs *c, size_t *n, double **X, double **cost)
{
    if (!subsetting(c))
        return cap_cost_data(c, n, X, cost);
    models m;
    memset(&m, 0, sizeof(m));
    size_t *rows = NULL, n_rows, n_all;
    *X = *cost = NULL;
    st_status s = load_successes(c, &m);
    if (s == ST_OK)
        s = fit_pareto(c, &m, c->o.pareto_conservative);
    if (s == ST_OK)
        s = choose_subset(c, &m);
    double *Xa = NULL, *ca = NULL;
    if (s == ST_OK)
        s = cap_cost_data(c, &n_all, &Xa, &ca);
    if (s == ST_OK)
        s = cost_rows(c, &m, n_all, &rows, &n_rows);
    if (s == ST_OK)
        s = gather(c->d, n_rows, rows, Xa, ca, X, cost);
    if (s == ST_OK)
        *n = n_rows;
    free(rows);
    free(Xa);
    free(ca);
    models_clear(&m);
    return s == ST_OK ? ST_OK : ST_ENOMEM;
}

/* The success model's rows among all observations: every one, or with a subset the
 * gp_max_points / 2 most recent failures, then the subset's successes in its priority order
 * up to gp_max_points, in increasing order. *rows is malloc'd (NULL: every row). */
static st_status succ_rows(const carbs *c, const models *m, size_t **rows, size_t *n_rows)
{
    size_t M = c->o.gp_max_points, n = 0;
    *rows = NULL;
    *n_rows = c->n_obs;
    if (!m->sub || c->n_obs <= M)
        return ST_OK;
    *rows = malloc(M * sizeof(size_t));
    if (!*rows)
        return ST_ENOMEM;
    for (size_t i = c->n_obs; i-- > 0 && n < M / 2;)
        if (c->obs_fail[i])
            (*rows)[n++] = i;
    for (size_t j = 0; j < m->n_sub && n < M; j++)
        (*rows)[n++] = m->obs_idx[m->sub_pri[j]];
    qsort(*rows, n, sizeof(size_t), cmp_size);
    *n_rows = n;
    return ST_OK;
}

st_status carbs_priv_output_qt(const carbs *c, size_t n, const double *yraw, qt *t)
{
    carbs_transform tr = c->o.output_transform;
    if (tr == CARBS_TRANSFORM_AUTO)
        tr = faithful(c) ? CARBS_TRANSFORM_QUANTILE : CARBS_TRANSFORM_RANK;
    return tr == CARBS_TRANSFORM_QUANTILE ? qt_fit(t, n, yraw) : qt_fit_rank(t, n, yraw);
}

/* The successes in surrogate space and the output, cost and success models (and, with
 * `pareto`, the Pareto groups and the 1-D Pareto model). */
static st_status models_fit(carbs *c, models *m, int pareto)
{
    memset(m, 0, sizeof(*m));
    size_t ns = c->n_succ;
    if (load_successes(c, m) != ST_OK)
        return ST_ENOMEM;
    m->ys = malloc((ns ? ns : 1) * sizeof(double));
    m->ls = malloc((ns ? ns : 1) * sizeof(double));
    double *yraw = malloc((ns ? ns : 1) * sizeof(double));
    if (!m->ys || !m->ls || !yraw) {
        free(yraw);
        return ST_ENOMEM;
    }
    for (size_t k = 0; k < ns; k++)
        yraw[k] = c->obs_y[m->obs_idx[k]];
    st_status s = carbs_priv_output_qt(c, ns, yraw, &m->qt);
    if (s == ST_OK)
        for (size_t i = 0; i < ns; i++)
            m->ys[i] = sign_of(c) * qt_forward(&m->qt, yraw[i]);

    /* above gp_max_points the GPs condition on a subset chosen near the Pareto groups, which
     * are fitted first for it (they draw nothing from the RNG) */
    int sub = subsetting(c);
    if (s == ST_OK && sub)
        s = fit_pareto(c, m, c->o.pareto_conservative);
    if (s == ST_OK && sub)
        s = choose_subset(c, m);
    if (s == ST_OK && m->sub) {
        double *Xr, *yr;
        s = gather(c->d, m->n_sub, m->sub, m->Xs, m->ys, &Xr, &yr);
        if (s == ST_OK)
            s = carbs_priv_fit_gp(c, m->n_sub, Xr, yr, c->rng, &m->out);
        free(Xr);
        free(yr);
    } else if (s == ST_OK && cached(c, ns, 0)) {
        s = carbs_priv_gp_get(c, GPC_OUT, ns, 0, m->Xs, m->ys, yraw, &m->out);
        m->borrowed |= BORROW_OUT;
    } else if (s == ST_OK) {
        s = carbs_priv_fit_gp(c, ns, m->Xs, m->ys, c->rng, &m->out);
    }
    free(yraw);
    if (s == ST_OK)
        s = fit_cost(c, m);

    /* success model: regression on -1 (success) / +1 (failure) labels over all observations
     * (or the failures and the subset's successes) */
    if (s == ST_OK && c->n_fail > 0) {
        size_t *rows = NULL, n_rows;
        double *lab = malloc(c->n_obs * sizeof(double)), *Xr = NULL, *lr = NULL;
        if (!lab)
            return ST_ENOMEM;
        for (size_t i = 0; i < c->n_obs; i++)
            lab[i] = c->obs_fail[i] ? 1.0 : -1.0;
        s = succ_rows(c, m, &rows, &n_rows);
        if (s == ST_OK && rows)
            s = gather(c->d, n_rows, rows, c->obs_b, lab, &Xr, &lr);
        if (s == ST_OK && !rows && cached(c, n_rows, 0)) {
            s = carbs_priv_gp_get(c, GPC_SUCC, n_rows, 0, c->obs_b, lab, lab, &m->succ);
            m->borrowed |= BORROW_SUCC;
        } else if (s == ST_OK) {
            s = carbs_priv_fit_gp(c, n_rows, rows ? Xr : c->obs_b, rows ? lr : lab, c->rng,
                                  &m->succ);
        }
        free(rows);
        free(Xr);
        free(lr);
        free(lab);
    }
    if (s != ST_OK || !pareto)
        return s;

    if (!sub)
        s = fit_pareto(c, m, c->o.pareto_conservative);
    if (s != ST_OK)
        return s;
    /* Pareto model: 1-D RBF GP over l' of every member of the front groups */
    size_t np = 0;
    for (size_t g = 0; g < m->n_sel; g++)
        np += m->groups[m->sel[g]].n;
    double *px = malloc(np * sizeof(double)), *py = malloc(np * sizeof(double));
    if (!px || !py) {
        free(px);
        free(py);
        return ST_ENOMEM;
    }
    np = 0;
    m->par_lmin = INFINITY;
    m->par_lmax = -INFINITY;
    for (size_t g = 0; g < m->n_sel; g++) {
        const pgroup *G = &m->groups[m->sel[g]];
        for (size_t j = 0; j < G->n; j++) {
            px[np] = m->ls[G->members[j]];
            py[np] = m->ys[G->members[j]];
            if (px[np] < m->par_lmin)
                m->par_lmin = px[np];
            if (px[np] > m->par_lmax)
                m->par_lmax = px[np];
            np++;
        }
    }
    gp_fit_opts f = fit_opts(c);
    s = gp_create(GP_KERNEL_RBF, 1, &m->par);
    if (s == ST_OK)
        s = gp_set_data(m->par, np, px, py);
    if (s == ST_OK)
        s = gp_fit(m->par, &f, c->rng);
    free(px);
    free(py);
    return s;
}

/* A fantasy output at x from the current output model (Thompson draw or posterior mean). */
static st_status fantasy_value(carbs *c, gp *g, const double *x, double *f)
{
    double mu, var;
    st_status s = gp_predict(g, 1, x, &mu, &var);
    if (s != ST_OK)
        return s;
    *f = c->o.fantasy == CARBS_FANTASY_MEAN ? mu : mu + sqrt(var) * st_rng_gaussian(c->rng);
    return ST_OK;
}

/* Outstanding suggestions enter the output model with fantasy outputs, one at a time. In
 * faithful mode a fresh model is then refitted on the union, as CARBS does; in recommended mode
 * the fitted hyperparameters are kept and only the factorisation grows. */
static st_status add_fantasies(carbs *c, models *m)
{
    if (c->n_out == 0)
        return ST_OK;
    size_t d = c->d, n = m->ns + c->n_out;
    double *X = NULL, *y = NULL;
    if (faithful(c)) {
        X = malloc(n * d * sizeof(double));
        y = malloc(n * sizeof(double));
        if (!X || !y) {
            free(X);
            free(y);
            return ST_ENOMEM;
        }
        memcpy(X, m->Xs, m->ns * d * sizeof(double));
        memcpy(y, m->ys, m->ns * sizeof(double));
    }
    st_status s = ST_OK;
    for (size_t k = 0; k < c->n_out && s == ST_OK; k++) {
        double f;
        s = fantasy_value(c, m->out, c->out_b + k * d, &f);
        if (s == ST_OK)
            s = gp_append(m->out, c->out_b + k * d, f);
        if (s == ST_ENUMERIC) /* a duplicate point: conditioning on it adds nothing */
            s = ST_OK;
        if (X) {
            memcpy(X + (m->ns + k) * d, c->out_b + k * d, d * sizeof(double));
            y[m->ns + k] = f;
        }
    }
    if (s == ST_OK && X) {
        gp *g2 = NULL;
        s = carbs_priv_fit_gp(c, n, X, y, c->rng, &g2);
        if (s == ST_OK) {
            gp_destroy(m->out);
            m->out = g2;
        } else {
            gp_destroy(g2);
        }
    }
    free(X);
    free(y);
    return s;
}

/* P(success) from the success model: Phi(-mu / sd) (recommended) or CARBS' Phi(-mu / var). */
static double p_success(const carbs *c, double mu, double var)
{
    double scale = faithful(c) ? var : sqrt(var);
    if (!(scale > 1e-12))
        scale = 1e-12;
    return gsl_cdf_ugaussian_P(-mu / scale);
}

/* ---- candidates and scores --------------------------------------------------------------- */

typedef struct cands {
    size_t n;
    double *X;    /* n*D basic, rounded */
    double *w;    /* locality */
    double *ps;   /* P(success) */
    double *v;    /* Pareto value to beat (surrogate units) */
    double *chat; /* predicted cost (posterior mean) */
    double *capv; /* the cost checked against the cap (costcap.c) */
    int *ok;      /* not yet picked (every candidate kept is under the cap) */
    double *mu, *var;
    double *score;
    double *ltmp; /* 2*D: locality()'s workspace */
} cands;

static void cands_clear(cands *k)
{
    free(k->X);
    free(k->w);
    free(k->ps);
    free(k->v);
    free(k->chat);
    free(k->capv);
    free(k->ok);
    free(k->mu);
    free(k->var);
    free(k->score);
    free(k->ltmp);
    memset(k, 0, sizeof(*k));
}

/* log EI, finite even where EI underflows: EI ~ sigma phi(z) / z^2 as z -> -inf. */
static double log_ei(double mu, double sigma, double v, double xi)
{
    double ei = acq_ei(mu, sigma, v, xi);
    if (ei > 1e-300)
        return log(ei);
    if (!(sigma > 0))
        return -INFINITY;
    double z = (mu - v - xi) / sigma;
    if (z >= 0)
        return -INFINITY; /* unreachable: EI > 0 there */
    return log(sigma) - 0.5 * z * z - 0.5 * log(2 * M_PI) - 2 * log(-z);
}

static st_status score_cands(carbs *c, const models *m, cands *k)
{
    st_status s = gp_predict(m->out, k->n, k->X, k->mu, k->var);
    if (s != ST_OK)
        return s;
    (void)m;
    for (size_t j = 0; j < k->n; j++) {
        double sd = sqrt(k->var[j] > 0 ? k->var[j] : 0);
        if (!k->ok[j]) {
            k->score[j] = -INFINITY;
        } else if (faithful(c)) {
            k->score[j] = acq_ei(k->mu[j], sd, k->v[j], xi_of(c)) * k->w[j] * k->ps[j];
        } else {
            k->score[j] = log_ei(k->mu[j], sd, k->v[j], xi_of(c)) + log(k->w[j]) +
                          log(k->ps[j] > 1e-300 ? k->ps[j] : 1e-300);
        }
    }
    return ST_OK;
}

static ptrdiff_t argmax(const cands *k)
{
    ptrdiff_t best = -1;
    for (size_t j = 0; j < k->n; j++)
        if (k->ok[j] && (best < 0 || k->score[j] > k->score[best]))
            best = (ptrdiff_t)j;
    return best;
}

/* The level switches: each Pareto origin with one categorical coordinate set to each of its
 * other choices, the ordered coordinates kept (locality 1), so that every choice is scored at
 * the best points found so far and not only at points that also moved. None without a
 * categorical parameter (the candidates and the random stream are then as before). Returns the
 * number written at the start of k->X, at most N. */
static size_t level_switches(carbs *c, const models *m, cands *k, size_t N)
{
    size_t d = c->d, n = 0;
    for (size_t g = 0; g < m->n_sel; g++)
        for (size_t i = 0; i < d; i++) {
            if (c->params[i].space != CARBS_SPACE_CATEGORICAL)
                continue;
            const double *o = m->origins + g * d;
            for (size_t ch = 0; ch < (size_t)c->params[i].n_choices && n < N; ch++) {
                if ((double)ch == o[i])
                    continue;
                double *b = k->X + n * d;
                memcpy(b, o, d * sizeof(double));
                b[i] = (double)ch;
                k->w[n] = carbs_priv_locality(c, b, m->n_sel, m->origins, k->ltmp);
                if (carbs_priv_round(c, b))
                    n++;
            }
        }
    return n;
}

/* Candidates: origin uniform, each coordinate N(o_i, r^2) truncated to the bounds; the locality
 * weight is taken before rounding (CARBS); rounded points must stay inside. Under a cost cap
 * the candidates whose checked cost is over it are dropped and their places drawn again, for
 * CAND_ROUNDS rounds at most; k->n may end below N (0: none admissible). */
static st_status draw_cands(carbs *c, const models *m, cands *k, size_t N)
{
    size_t d = c->d, n = 0;
    capm cm;
    st_status s = cap_borrow(c, &cm, m->cost, &m->lc);
    int rounds = cm.kind == CAP_NONE ? 1 : CAND_ROUNDS;
    for (int round = 0; round < rounds && n < N && s == ST_OK; round++) {
        size_t n0 = n;
        if (round == 0)
            n = level_switches(c, m, k, N);
        for (size_t tries = 0; n < N && tries < 4 * N; tries++) {
            double *b = k->X + n * d;
            const double *o = m->origins + st_rng_uniform_int(c->rng, m->n_sel) * d;
            for (size_t i = 0; i < d; i++)
                b[i] = carbs_priv_draw_coord(c, i, o[i], st_rng_uniform_pos(c->rng));
            k->w[n] = carbs_priv_locality(c, b, m->n_sel, m->origins, k->ltmp);
            if (carbs_priv_round(c, b))
                n++;
        }
        s = cap_cost(c, &cm, n - n0, k->X + n0 * d, k->capv + n0);
        size_t kept = n0;
        for (size_t j = n0; s == ST_OK && j < n; j++)
            if (cap_ok(&cm, k->capv[j])) {
                memmove(k->X + kept * d, k->X + j * d, d * sizeof(double));
                k->w[kept] = k->w[j];
                k->capv[kept++] = k->capv[j];
            }
        n = kept;
    }
    k->n = n;
    cap_clear(&cm);
    return s;
}

/* Draws the candidates around the Pareto origins and computes everything that does not change
 * when fantasies are added: locality, P(success), predicted cost, the Pareto value, the mask. */
static st_status make_cands(carbs *c, models *m, cands *k)
{
    size_t d = c->d, N = c->o.candidates_per_dim * d;
    memset(k, 0, sizeof(*k));
    k->X = malloc(N * d * sizeof(double));
    k->w = malloc(N * sizeof(double));
    k->ps = malloc(N * sizeof(double));
    k->v = malloc(N * sizeof(double));
    k->chat = malloc(N * sizeof(double));
    k->capv = malloc(N * sizeof(double));
    k->ok = malloc(N * sizeof(int));
    k->mu = malloc(N * sizeof(double));
    k->var = malloc(N * sizeof(double));
    k->score = malloc(N * sizeof(double));
    k->ltmp = malloc(2 * d * sizeof(double));
    double *tmp = malloc(2 * N * sizeof(double));
    if (!k->X || !k->w || !k->ps || !k->v || !k->chat || !k->capv || !k->ok || !k->mu || !k->var ||
        !k->score || !k->ltmp || !tmp) {
        free(tmp);
        return ST_ENOMEM;
    }

    /* 1. samples around the origins, those over the cost cap dropped and redrawn */
    st_status s = draw_cands(c, m, k, N);
    size_t n = k->n;
    if (s == ST_OK && n == 0)
        s = ST_EEMPTY;
    if (s != ST_OK) {
        free(tmp);
        return s;
    }

    /* 2. cost, Pareto value and success at each candidate */
    double *muc = tmp, *vs = tmp + N;
    s = gp_predict(m->cost, n, k->X, muc, NULL);
    if (s != ST_OK) {
        free(tmp);
        return s;
    }
    for (size_t j = 0; j < n; j++) {
        k->chat[j] = logcost_inverse(&m->lc, muc[j]);
        double l = muc[j] < m->par_lmin ? m->par_lmin : muc[j] > m->par_lmax ? m->par_lmax : muc[j];
        muc[j] = l; /* the clamped query */
        k->ok[j] = 1;
    }
    s = gp_predict(m->par, n, muc, k->v, NULL);
    if (s == ST_OK && m->succ)
        s = gp_predict(m->succ, n, k->X, muc, vs);
    if (s != ST_OK) {
        free(tmp);
        return s;
    }
    for (size_t j = 0; j < n; j++)
        k->ps[j] = m->succ ? p_success(c, muc[j], vs[j]) : 1.0;
    free(tmp);

    /* 3. the value to beat: the front at the candidate's cost, clamped from below by the front
     *    at a random cost between the cheapest and the dearest front group (spec §5.6) */
    const pgroup *first = &m->groups[m->sel[0]], *last = &m->groups[m->sel[m->n_sel - 1]];
    if (c->o.ei_always_max) {
        double mean_out = sign_of(c) * last->value;
        double vmax = sign_of(c) * qt_forward(&m->qt, mean_out);
        for (size_t j = 0; j < n; j++)
            k->v[j] = vmax;
    } else if (c->o.ei_clamp) {
        double clo = first->cost, chi = last->cost;
        if (chi > c->o.max_suggestion_cost)
            chi = c->o.max_suggestion_cost;
        double cstar = exp(log(clo) + st_rng_uniform(c->rng) * (log(chi) - log(clo)));
        double l = logcost_forward(&m->lc, cstar), vstar;
        l = l < m->par_lmin ? m->par_lmin : l > m->par_lmax ? m->par_lmax : l;
        s = gp_predict(m->par, 1, &l, &vstar, NULL);
        if (s != ST_OK)
            return s;
        for (size_t j = 0; j < n; j++)
            if (k->v[j] < vstar)
                k->v[j] = vstar;
    }
    return ST_OK;
}

/* Fills the info of a Bayesian pick j. */
static void bayes_info(carbs *c, const models *m, const cands *k, size_t j)
{
    double sg = sign_of(c), sd = sqrt(k->var[j] > 0 ? k->var[j] : 0);
    c->info.phase = CARBS_PHASE_BAYES;
    c->info.predicted_output = qt_inverse(&m->qt, sg * k->mu[j]);
    c->info.predicted_output_sd = 0.5 * fabs(qt_inverse(&m->qt, sg * (k->mu[j] + sd)) -
                                             qt_inverse(&m->qt, sg * (k->mu[j] - sd)));
    c->info.predicted_cost = k->chat[j];
    c->info.pareto_value = qt_inverse(&m->qt, sg * k->v[j]);
    c->info.expected_improvement = acq_ei(k->mu[j], sd, k->v[j], xi_of(c));
    c->info.p_success = k->ps[j];
    c->info.locality = k->w[j];
    c->info.cap_cost = k->capv[j];
}

/* ---- the phases -------------------------------------------------------------------------- */

static void info_none(carbs *c, carbs_phase ph)
{
    c->info = (carbs_suggestion_info){ph, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
}

/* Resample: the cheapest plain Pareto group with the fewest runs (members + outstanding),
 * among the groups whose point is under the cost cap; none: no resample. */
static int try_resample(carbs *c, double *x)
{
    if (c->o.resample_frequency == 0 ||
        !(c->n_succ > (c->resample_count + 1) * c->o.resample_frequency))
        return 0;
    models m;
    memset(&m, 0, sizeof(m));
    capm cm;
    int done = 0;
    if (cap_init(c, &cm) != ST_OK)
        return 0;
    if (load_successes(c, &m) == ST_OK) {
        if (fit_pareto(c, &m, 0) == ST_OK && m.n_sel > 0) {
            size_t best = 0, best_count = SIZE_MAX;
            double best_v = NAN;
            for (size_t g = 0; g < m.n_sel; g++) {
                const pgroup *G = &m.groups[m.sel[g]];
                size_t count = G->n;
                const double *ref = m.Xs + G->members[0] * c->d;
                double v;
                if (cap_cost(c, &cm, 1, ref, &v) != ST_OK || !cap_ok(&cm, v))
                    continue;
                for (size_t o = 0; o < c->n_out; o++) {
                    int close = 1;
                    for (size_t i = 0; i < c->d && close; i++)
                        close = fabs(c->out_b[o * c->d + i] - ref[i]) <= 1e-8 + 1e-5 * fabs(ref[i]);
                    count += close;
                }
                if (count < best_count) {
                    best_count = count;
                    best = g;
                    best_v = v;
                }
            }
            if (best_count < SIZE_MAX) {
                size_t i = m.obs_idx[m.groups[m.sel[best]].members[0]];
                memcpy(x, c->obs_x + i * c->d, c->d * sizeof(double));
                c->resample_count++;
                info_none(c, CARBS_PHASE_RESAMPLE);
                c->info.cap_cost = best_v;
                done = 1;
            }
        }
    }
    models_clear(&m);
    cap_clear(&cm);
    return done;
}

typedef struct near_ctx {
    size_t n;
    const double *origins;
} near_ctx;

static void redraw_near(carbs *c, void *ctx, double *b)
{
    const near_ctx *o = ctx;
    carbs_priv_draw_near(c, o->n, o->origins, b);
}

static void redraw_design(carbs *c, void *ctx, double *b)
{
    (void)ctx;
    carbs_priv_random_point(c, b);
    c->n_design++;
}

/* Fallback: a point near the (conservative) Pareto origins, or the centre without successes,
 * redrawn while over the cost cap. ST_OK or ST_ENOMEM. */
static st_status fallback(carbs *c, double *b)
{
    models m;
    memset(&m, 0, sizeof(m));
    capm cm;
    near_ctx o = {1, c->center_b};
    st_status s = load_successes(c, &m);
    if (s == ST_OK && m.ns > 0 && fit_pareto(c, &m, c->o.pareto_conservative) == ST_OK &&
        m.n_sel > 0)
        o = (near_ctx){m.n_sel, m.origins};
    carbs_priv_draw_near(c, o.n, o.origins, b);
    double v = NAN;
    s = cap_init(c, &cm);
    if (s == ST_OK)
        s = cap_enforce(c, &cm, b, redraw_near, &o, REDRAW_TRIES, &v);
    cap_clear(&cm);
    models_clear(&m);
    info_none(c, CARBS_PHASE_FALLBACK);
    c->info.cap_cost = v;
    return s == ST_ERANGE ? ST_OK : s; /* the cheapest point met: info.cap_cost says so */
}

/* Random phase: the next design point; under a cost cap, design points over it are skipped
 * (bounded) and the last resort descends toward lower cost. ST_OK or ST_ENOMEM. */
static st_status random_capped(carbs *c, double *b)
{
    capm cm;
    carbs_priv_random_point(c, b);
    c->n_design++;
    double v = NAN;
    st_status s = cap_init(c, &cm);
    if (s == ST_OK)
        s = cap_enforce(c, &cm, b, redraw_design, NULL, REDRAW_TRIES, &v);
    cap_clear(&cm);
    info_none(c, CARBS_PHASE_RANDOM);
    c->info.cap_cost = v;
    return s == ST_ERANGE ? ST_OK : s;
}

/* Registers x (parameter units) as an outstanding suggestion with a new id. */
static st_status remember(carbs *c, const double *x, uint64_t *id)
{
    if (!id)
        return ST_OK;
    if (carbs_priv_reserve_outstanding(c, c->n_out + 1) != ST_OK)
        return st_errf(c->errmsg, ST_ENOMEM, "out of memory");
    size_t k = c->n_out++, d = c->d;
    c->out_id[k] = c->next_id;
    c->out_born[k] = c->n_obs;
    carbs_priv_to_basic(c, x, c->out_b + k * d, c->out_x + k * d);
    *id = c->next_id++;
    return ST_OK;
}

/* Bayesian step for q picks (q >= 1). Returns the number of picks written (0: use fallback). */
static size_t bayes(carbs *c, size_t q, double *x_out, uint64_t *ids, st_status *err)
{
    models m;
    cands k;
    memset(&k, 0, sizeof(k));
    size_t picked = 0;
    *err = ST_OK;
    st_status s = models_fit(c, &m, 1);
    if (s == ST_OK)
        s = add_fantasies(c, &m);
    if (s == ST_OK)
        s = make_cands(c, &m, &k);
    while (s == ST_OK && picked < q) {
        s = score_cands(c, &m, &k);
        if (s != ST_OK)
            break;
        ptrdiff_t j = argmax(&k);
        if (j < 0 || (faithful(c) && !(k.score[j] > 0) && picked > 0))
            break;
        bayes_info(c, &m, &k, (size_t)j);
        double *x = x_out + picked * c->d;
        carbs_priv_to_params(c, k.X + (size_t)j * c->d, x);
        s = remember(c, x, ids ? ids + picked : NULL);
        if (s != ST_OK) {
            *err = s;
            break;
        }
        picked++;
        /* exclude this point (and identical rounded ones), then fantasise an output there */
        for (size_t t = 0; t < k.n; t++)
            if (!memcmp(k.X + t * c->d, k.X + (size_t)j * c->d, c->d * sizeof(double)))
                k.ok[t] = 0;
        if (picked < q) {
            double f;
            s = fantasy_value(c, m.out, k.X + (size_t)j * c->d, &f);
            if (s == ST_OK)
                s = gp_append(m.out, k.X + (size_t)j * c->d, f);
            if (s == ST_ENUMERIC)
                s = ST_OK;
        }
    }
    if (s == ST_ENOMEM)
        *err = s;
    cands_clear(&k);
    models_clear(&m);
    return picked;
}

static void reseed(carbs *c)
{
    st_rng_reseed(c->rng, st_mix64(c->o.seed ^ st_mix64(c->n_suggest + 0x51ed)));
    c->n_suggest++;
}

/* One non-batch suggestion: random, resample, Bayes or fallback. */
static st_status suggest_one(carbs *c, double *x, uint64_t *id)
{
    size_t d = c->d;
    if (d == 0) /* nothing to search: every suggestion is the (empty) fixed point */
        return remember(c, x, id);
    double *b = malloc(d * sizeof(double));
    if (!b)
        return st_errf(c->errmsg, ST_ENOMEM, "out of memory");
    reseed(c);
    st_status s = ST_OK;
    if (carbs_priv_random_phase(c)) {
        s = random_capped(c, b);
        carbs_priv_to_params(c, b, x);
    } else if (try_resample(c, x)) {
        /* try_resample filled the info */
    } else {
        size_t got = bayes(c, 1, x, id, &s);
        if (got == 1) {
            free(b);
            return ST_OK; /* bayes() registered it */
        }
        if (s != ST_OK) {
            free(b);
            return st_errf(c->errmsg, s, "suggest: %s", st_strerror(s));
        }
        s = fallback(c, b);
        carbs_priv_to_params(c, b, x);
    }
    free(b);
    if (s != ST_OK)
        return st_errf(c->errmsg, s, "suggest: %s", st_strerror(s));
    return remember(c, x, id);
}

st_status carbs_suggest(carbs *c, double *x_out, uint64_t *id)
{
    c->errmsg[0] = 0;
    return suggest_one(c, x_out, id);
}

st_status carbs_suggest_batch(carbs *c, size_t q, double *x_out, uint64_t *ids)
{
    c->errmsg[0] = 0;
    if (q == 0)
        return st_errf(c->errmsg, ST_EINVAL, "a batch needs at least one suggestion");
    size_t done = 0;
    st_status s = ST_OK;
    while (done < q && s == ST_OK) {
        if (c->d == 0 || carbs_priv_random_phase(c) ||
            (c->o.resample_frequency > 0 &&
             c->n_succ > (c->resample_count + 1) * c->o.resample_frequency)) {
            s = suggest_one(c, x_out + done * c->d, ids ? ids + done : NULL);
            done += s == ST_OK;
            continue;
        }
        reseed(c);
        size_t got = bayes(c, q - done, x_out + done * c->d, ids ? ids + done : NULL, &s);
        done += got;
        if (s != ST_OK)
            return st_errf(c->errmsg, s, "suggest: %s", st_strerror(s));
        if (got == 0) /* no admissible candidate: one fallback, then try again */
            s = suggest_one(c, x_out + done * c->d, ids ? ids + done : NULL), done += s == ST_OK;
    }
    return s;
}

st_status carbs_predict(carbs *c, size_t m_pts, const double *X, double *mean, double *sd,
                        double *cost, double *p_succ)
{
    c->errmsg[0] = 0;
    if (c->n_succ < 2)
        return st_errf(c->errmsg, ST_EEMPTY,
                       "predictions need at least 2 successful runs (have "
                       "%zu)",
                       c->n_succ);
    size_t d = c->d;
    double *B = malloc(m_pts * d * sizeof(double)), *mu = malloc(m_pts * sizeof(double)),
           *var = malloc(m_pts * sizeof(double));
    models m;
    memset(&m, 0, sizeof(m));
    st_status s = (!B || !mu || !var) ? ST_ENOMEM : ST_OK;
    for (size_t j = 0; s == ST_OK && j < m_pts; j++) {
        carbs_priv_to_basic(c, X + j * d, B + j * d, NULL);
        for (size_t i = 0; i < d; i++) {
            if (!isfinite(B[j * d + i]))
                s = st_errf(c->errmsg, ST_EINVAL,
                            "point %zu: parameter '%s' value %g is not "
                            "valid",
                            j, c->params[i].name, X[j * d + i]);
        }
    }
    st_rng_reseed(c->rng, st_mix64(c->o.seed ^ 0x9e3779b9u));
    if (s == ST_OK)
        s = models_fit(c, &m, 0);
    if (s == ST_OK)
        s = gp_predict(m.out, m_pts, B, mu, var);
    double sg = sign_of(c);
    for (size_t j = 0; s == ST_OK && j < m_pts; j++) {
        double sdv = sqrt(var[j] > 0 ? var[j] : 0);
        if (mean)
            mean[j] = qt_inverse(&m.qt, sg * mu[j]);
        if (sd)
            sd[j] = 0.5 * fabs(qt_inverse(&m.qt, sg * (mu[j] + sdv)) -
                               qt_inverse(&m.qt, sg * (mu[j] - sdv)));
    }
    if (s == ST_OK && cost) {
        s = gp_predict(m.cost, m_pts, B, mu, NULL);
        for (size_t j = 0; s == ST_OK && j < m_pts; j++)
            cost[j] = logcost_inverse(&m.lc, mu[j]);
    }
    if (s == ST_OK && p_succ) {
        if (m.succ)
            s = gp_predict(m.succ, m_pts, B, mu, var);
        for (size_t j = 0; s == ST_OK && j < m_pts; j++)
            p_succ[j] = m.succ ? p_success(c, mu[j], var[j]) : 1.0;
    }
    if (s != ST_OK && !c->errmsg[0])
        st_errf(c->errmsg, s, "predict: %s", st_strerror(s));
    models_clear(&m);
    free(B);
    free(mu);
    free(var);
    return s;
}

st_status carbs_pareto(carbs *c, int conservative, size_t cap, size_t *n, double *cost,
                       double *output, size_t *count, double *x)
{
    c->errmsg[0] = 0;
    *n = 0;
    if (c->n_succ == 0)
        return ST_OK;
    models m;
    memset(&m, 0, sizeof(m));
    st_status s = load_successes(c, &m);
    if (s == ST_OK)
        s = fit_pareto(c, &m, conservative);
    if (s == ST_OK) {
        *n = m.n_sel;
        for (size_t g = 0; g < m.n_sel && g < cap; g++) {
            const pgroup *G = &m.groups[m.sel[g]];
            if (cost)
                cost[g] = G->cost;
            if (output)
                output[g] = sign_of(c) * G->value;
            if (count)
                count[g] = G->n;
            if (x)
                memcpy(x + g * c->d, c->obs_x + m.obs_idx[G->members[0]] * c->d,
                       c->d * sizeof(double));
        }
    } else {
        st_errf(c->errmsg, s, "pareto: %s", st_strerror(s));
    }
    models_clear(&m);
    return s;
}
