/*
 * models.c — the models of a Bayesian suggestion (shared specs/carbs.md §5.4–5.5): the
 * successes in surrogate space (the output transform), the output, cost and success GPs (over
 * a subset of the runs above gp_max_points, or kept between suggestions: gpcache.c), the Pareto
 * groups and their 1-D model, fantasy outputs at outstanding suggestions, P(success). The
 * candidates and the phases that use them are in suggest.c.
 */
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "carbs/models_int.h"

void carbs_priv_models_clear(models *m)
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
st_status carbs_priv_load_successes(const carbs *c, models *m)
{
    size_t d = c->d, ns = c->n_succ, k = 0;
    m->ns = ns;
    m->agree = -1;
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

/* ---- repeats: is the objective deterministic? ------------------------------------------- */

typedef struct row_key {
    size_t d;
    const double *x;
    double y;
} row_key;

static int cmp_row(const void *pa, const void *pb)
{
    const row_key *a = pa, *b = pb;
    for (size_t i = 0; i < a->d; i++)
        if (a->x[i] != b->x[i])
            return (a->x[i] > b->x[i]) - (a->x[i] < b->x[i]);
    return 0;
}

/* whether repeats exist and all reproduced their objective (carbs_priv_repeats_agree) */
static int compute_agree(const carbs *c, const models *m)
{
    if (faithful(c) || m->ns < 2)
        return 0;
    row_key *k = malloc(m->ns * sizeof(*k));
    if (!k)
        return -1;
    for (size_t j = 0; j < m->ns; j++)
        k[j] = (row_key){c->d, m->Xs + j * c->d, c->obs_y[m->obs_idx[j]]};
    qsort(k, m->ns, sizeof(*k), cmp_row);
    int repeats = 0, agree = 1;
    for (size_t j = 1; j < m->ns && agree; j++)
        if (!cmp_row(&k[j - 1], &k[j])) {
            repeats = 1;
            agree = fabs(k[j].y - k[j - 1].y) <= 1e-12 * fmax(fabs(k[j].y), fabs(k[j - 1].y));
        }
    free(k);
    return repeats && agree;
}

/* computed once per load of the successes: a suggestion asks in the Pareto fit and again for
 * the trust region */
int carbs_priv_repeats_agree(const carbs *c, models *m)
{
    if (m->agree < 0)
        m->agree = compute_agree(c, m);
    return m->agree > 0;
}

/* Groups and the Pareto front of the successes, origins = first member of each front group. */
st_status carbs_priv_fit_pareto(carbs *c, models *m, int conservative)
{
    if (conservative && carbs_priv_repeats_agree(c, m))
        conservative = 0; /* a single run is as sure as a repeated one */
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
    st_status s = carbs_priv_load_successes(c, &m);
    if (s == ST_OK)
        s = carbs_priv_fit_pareto(c, &m, c->o.pareto_conservative);
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
    carbs_priv_models_clear(&m);
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
st_status carbs_priv_models_fit(carbs *c, models *m, int pareto)
{
    memset(m, 0, sizeof(*m));
    size_t ns = c->n_succ;
    if (carbs_priv_load_successes(c, m) != ST_OK)
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
        s = carbs_priv_fit_pareto(c, m, c->o.pareto_conservative);
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
        s = carbs_priv_fit_pareto(c, m, c->o.pareto_conservative);
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
st_status carbs_priv_fantasy_value(carbs *c, gp *g, const double *x, double *f)
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
st_status carbs_priv_add_fantasies(carbs *c, models *m)
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
        s = carbs_priv_fantasy_value(c, m->out, c->out_b + k * d, &f);
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
double carbs_priv_p_success(const carbs *c, double mu, double var)
{
    double scale = faithful(c) ? var : sqrt(var);
    if (!(scale > 1e-12))
        scale = 1e-12;
    return gsl_cdf_ugaussian_P(-mu / scale);
}
