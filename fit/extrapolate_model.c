/*
 * extrapolate_model.c — the model of every run behind `scaletune extrapolate`:
 *   ln L = LSE(a - alpha ln N, b - beta ln D, e)              (Chinchilla, Hoffmann eq. 2)
 *        + ln(1 + sum_k kap_k (1 - exp(-c_k u_k^2 / kap_k))), u_k = b_k - (a_k + sN_k lNc + sD_k
 * lDc) (each hyperparameter's optimum a power law in N and D, a penalty quadratic near it that
 * saturates far from it), fitted by least squares on ln loss (NLopt L-BFGS, analytic gradient);
 * a logistic stability boundary P(fail) = sigma(g0 + g1 ln lr + g2 lNc + g3 w) fitted on every
 * run with a ridge on the slopes (separable data); run bootstrap replicates of both; and the
 * recommendation at compute C that minimises the expected loss over the replicates with failed
 * runs charged fail_loss, subject to P(fail) <= max_p_diverge. docs/algorithms/extrapolation.md.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_multifit.h>
#include <nlopt.h>

#include "fit/extrapolate_int.h"
#include "fit/fit_int.h"

#define RIDGE_SLOPE     1e-6 /* on sN, sD: keeps them identifiable when N or D hardly vary */
#define RIDGE_KAP       1e-6 /* on ln kap - ln 0.1 */
#define RIDGE_LOGIT     1e-2 /* on the logistic slopes: finite boundary for separable data */
/* |d b_k* / d ln N| and |d b_k* / d ln D| beyond SLOPE_MAX pay WALL (excess)^2 */
#define SLOPE_MAX       1.0
/* A Gaussian prior on alpha - beta with sd o.prior_ab_sd (0.05). Published fits put alpha and beta
 * close (Hoffmann et al. 0.34 and 0.28, Besiroglu et al. 0.35 and 0.37), i.e. N_opt close to C^0.5;
 * a sweep near the front cannot tell N from D apart and would otherwise extrapolate either without
 * bound. The objective is 0.5 sum r^2 (ln loss), so the prior's weight is sigma^2 / (2 sd^2) with
 * sigma the residual sd of a fit without it, at least PRIOR_SIGMA_MIN. */
#define PRIOR_SIGMA_MIN 0.01 /* residual sd floor for the prior's weight (runs are never exact) */
#define PRIOR_DIV_LR    0.5  /* ln of the factor above the largest successful lr (no failed run) */
#define PRIOR_BINS      4    /* size groups that each get a prior row (no failed run) */
#define WALL            10.0

/* ---- the joint model ------------------------------------------------------------------- */

typedef struct jm_data {
    size_t n_hp;
    size_t n;                   /* rows */
    const size_t *rows;         /* n indices into the arrays below */
    const double *lN, *lD, *ly; /* per run (all runs) */
    const double *bh;           /* runs × n_hp basic coordinates of the modelled hyperparameters */
    double lN0, lD0;
    size_t n_th, n_free;
    size_t free_idx[XP_NTH];
    double full[XP_NTH];
    double w_ab; /* weight of the prior on alpha - beta */
    /* Gaussian priors on single model parameters: weight pw[j] (0: none) towards pmu[j] */
    double pw[XP_NTH], pmu[XP_NTH];
} jm_data;

/* ln L at one run and, if g != NULL, d ln L / d th (n_th). bh: the hypers' basic coordinates
 * minus their centres bm (n_hp). */
static double jm_eval1(const double *th, size_t n_hp, double lN, double lD, double lN0, double lD0,
                       const double *bh, double *g)
{
    double t1 = th[0] - th[3] * lN, t2 = th[1] - th[4] * lD, t3 = th[2];
    double m = fmax(t1, fmax(t2, t3));
    double e1 = exp(t1 - m), e2 = exp(t2 - m), e3 = exp(t3 - m), se = e1 + e2 + e3;
    double lse = m + log(se);
    double P = 0;
    double dPdu[XP_MAX_HP], Ek[XP_MAX_HP], uk[XP_MAX_HP];
    for (size_t k = 0; k < n_hp; k++) {
        const double *h = &th[XP_HP_OFF(k)];
        double c = exp(h[3]), kap = exp(h[4]);
        double opt = h[0] + h[1] * (lN - lN0) + h[2] * (lD - lD0);
        for (size_t j = 0; j < k; j++)
            opt += h[5 + j] * bh[j];
        double u = bh[k] - opt;
        double E = exp(-c * u * u / kap);
        P += kap * (1 - E);
        dPdu[k] = 2 * c * u * E;
        Ek[k] = E;
        uk[k] = u;
    }
    if (g) {
        g[0] = e1 / se;
        g[1] = e2 / se;
        g[2] = e3 / se;
        g[3] = -lN * e1 / se;
        g[4] = -lD * e2 / se;
        double q = 1 / (1 + P);
        for (size_t k = 0; k < n_hp; k++) {
            const double *h = &th[XP_HP_OFF(k)];
            double c = exp(h[3]), kap = exp(h[4]), u = uk[k], E = Ek[k];
            double *gk = &g[XP_HP_OFF(k)];
            gk[0] = -q * dPdu[k];
            gk[1] = -q * dPdu[k] * (lN - lN0);
            gk[2] = -q * dPdu[k] * (lD - lD0);
            gk[3] = q * c * E * u * u;
            gk[4] = q * (kap * (1 - E) - E * c * u * u);
            for (size_t j = 0; j < k; j++)
                gk[5 + j] = -q * dPdu[k] * bh[j];
        }
    }
    return lse + log1p(P);
}

static double jm_objective(unsigned nf, const double *xf, double *gf, void *data)
{
    jm_data *d = data;
    double th[XP_NTH], g[XP_NTH] = {0}, G[XP_NTH];
    memcpy(th, d->full, d->n_th * sizeof(double));
    for (unsigned i = 0; i < nf; i++)
        th[d->free_idx[i]] = xf[i];
    memset(G, 0, d->n_th * sizeof(double));
    double f = 0;
    for (size_t t = 0; t < d->n; t++) {
        size_t i = d->rows[t];
        double r = jm_eval1(th, d->n_hp, d->lN[i], d->lD[i], d->lN0, d->lD0, &d->bh[i * d->n_hp],
                            gf ? g : NULL) -
                   d->ly[i];
        f += 0.5 * r * r;
        if (gf)
            for (size_t j = 0; j < d->n_th; j++)
                G[j] += r * g[j];
    }
    {
        double dab = th[3] - th[4];
        f += d->w_ab * dab * dab;
        G[3] += 2 * d->w_ab * dab;
        G[4] -= 2 * d->w_ab * dab;
    }
    for (size_t j = 5; j < d->n_th; j++)
        if (d->pw[j] > 0) {
            double e = th[j] - d->pmu[j];
            f += d->pw[j] * e * e;
            G[j] += 2 * d->pw[j] * e;
        }
    for (size_t k = 0; k < d->n_hp; k++) {
        size_t o = XP_HP_OFF(k);
        const double *h = &th[o];
        double dk = h[4] - log(0.1);
        f += RIDGE_SLOPE * (h[1] * h[1] + h[2] * h[2]) + RIDGE_KAP * dk * dk;
        G[o + 1] += 2 * RIDGE_SLOPE * h[1];
        G[o + 2] += 2 * RIDGE_SLOPE * h[2];
        for (int q = 1; q <= 2; q++) {
            double ex = fabs(h[q]) - SLOPE_MAX;
            if (ex > 0) {
                f += WALL * ex * ex;
                G[o + q] += 2 * WALL * ex * (h[q] > 0 ? 1 : -1);
            }
        }
        G[o + 4] += 2 * RIDGE_KAP * dk;
        for (size_t j = 0; j < k; j++) {
            f += RIDGE_SLOPE * h[5 + j] * h[5 + j];
            G[o + 5 + j] += 2 * RIDGE_SLOPE * h[5 + j];
        }
    }
    if (gf)
        for (unsigned i = 0; i < nf; i++)
            gf[i] = G[d->free_idx[i]];
    return f;
}

/* Slot of model parameter j >= 5 within its hyper's block (0 a, 1 sN, 2 sD, 3 ln c, 4 ln kap,
 * 5 + i coupling to hyper i); the hyper's index in *k. */
static size_t hp_slot(size_t j, size_t *k)
{
    size_t kk = 0;
    while (XP_HP_OFF(kk + 1) <= j)
        kk++;
    if (k)
        *k = kk;
    return j - XP_HP_OFF(kk);
}

/* Minimises from th (n_th, updated); returns the objective (INFINITY on failure). */
static double jm_minimise(jm_data *d, double *th, size_t max_eval)
{
    size_t nf = d->n_free;
    double lb[XP_NTH], ub[XP_NTH], xf[XP_NTH];
    memcpy(d->full, th, d->n_th * sizeof(double));
    for (size_t i = 0; i < nf; i++) {
        size_t j = d->free_idx[i];
        lb[i] = -HUGE_VAL;
        ub[i] = HUGE_VAL;
        if (j == 3 || j == 4) { /* alpha, beta */
            lb[i] = 0.02;
            ub[i] = 2.0;
        } else if (j >= 5) {
            size_t q = hp_slot(j, NULL);
            if (q == 1 || q == 2 || q >= 5) {
                lb[i] = -3;
                ub[i] = 3;
            } else if (q == 3) {
                lb[i] = log(1e-6);
                ub[i] = log(100.0);
            } else if (q == 4) {
                lb[i] = log(1e-3);
                ub[i] = log(20.0);
            }
        } else if (j == 2) {
            lb[i] = -10;
            ub[i] = 20;
        }
        xf[i] = fmin(fmax(th[j], lb[i]), ub[i]);
    }
    nlopt_opt opt = nlopt_create(NLOPT_LD_LBFGS, (unsigned)nf);
    if (!opt)
        return INFINITY;
    nlopt_set_min_objective(opt, jm_objective, d);
    nlopt_set_lower_bounds(opt, lb);
    nlopt_set_upper_bounds(opt, ub);
    nlopt_set_ftol_rel(opt, 1e-12);
    nlopt_set_xtol_rel(opt, 1e-10);
    nlopt_set_maxeval(opt, (int)max_eval);
    double f = INFINITY;
    nlopt_result rc = nlopt_optimize(opt, xf, &f);
    nlopt_destroy(opt);
    if (rc < 0 && rc != NLOPT_ROUNDOFF_LIMITED)
        return INFINITY;
    if (!isfinite(f))
        return INFINITY;
    for (size_t i = 0; i < nf; i++)
        th[d->free_idx[i]] = xf[i];
    return f;
}

/* ---- the logistic stability boundary ---------------------------------------------------- */

typedef struct lg_data {
    size_t n;
    const size_t *rows;
    const double *z; /* runs × 3 centred covariates (ln lr, lNc, w) */
    const int *y;    /* failed */
    int use_w;
} lg_data;

static double lg_objective(unsigned nv, const double *g, double *grad, void *data)
{
    const lg_data *d = data;
    double f = 0, G[XP_NG] = {0};
    for (size_t t = 0; t < d->n; t++) {
        size_t i = d->rows[t];
        const double *z = &d->z[3 * i];
        double eta = g[0] + g[1] * z[0] + g[2] * z[1] + (d->use_w ? g[3] * z[2] : 0);
        /* -log p(y): softplus(eta) - y eta */
        double sp = eta > 0 ? eta + log1p(exp(-eta)) : log1p(exp(eta));
        f += sp - (d->y[i] ? eta : 0);
        double pr = 1 / (1 + exp(-eta)) - (d->y[i] ? 1 : 0);
        G[0] += pr;
        G[1] += pr * z[0];
        G[2] += pr * z[1];
        G[3] += pr * z[2];
    }
    for (unsigned j = 1; j < nv; j++) {
        f += RIDGE_LOGIT * g[j] * g[j];
        G[j] += 2 * RIDGE_LOGIT * g[j];
    }
    if (grad)
        for (unsigned j = 0; j < nv; j++)
            grad[j] = G[j];
    return f;
}

static int lg_minimise(lg_data *d, double *g)
{
    unsigned nv = d->use_w ? 4 : 3;
    nlopt_opt opt = nlopt_create(NLOPT_LD_LBFGS, nv);
    if (!opt)
        return 0;
    nlopt_set_min_objective(opt, lg_objective, d);
    nlopt_set_ftol_rel(opt, 1e-12);
    nlopt_set_maxeval(opt, 2000);
    double f;
    nlopt_result rc = nlopt_optimize(opt, g, &f);
    nlopt_destroy(opt);
    if (!d->use_w)
        g[3] = 0;
    return (rc > 0 || rc == NLOPT_ROUNDOFF_LIMITED) && isfinite(f);
}

/* ---- fitting --------------------------------------------------------------------------- */

/* Is this the name of a weight decay? */
static int is_weight_decay(const char *name)
{
    return strstr(name, "weight_decay") || strstr(name, "weight-decay") ||
           strstr(name, "weightdecay") || !strcmp(name, "wd");
}

/*
 * The hyper index of a weight decay that gets the AdamW timescale prior, (size_t)-1 if none.
 * AdamW's decoupled decay (per-step lr * lambda) averages the weights over tau = B / (lr lambda D)
 * of the run; its optimum is close to a fixed fraction of the run (Wang & Aitchison 2024; Bergsma
 * et al. 2025 "Power Lines": a weak power of tokens per parameter), so ln lambda_opt ~ ln B -
 * ln lr - ln D + const. Needs the weight decay, learning rate and batch modelled on log scales.
 */
static size_t wd_prior_hyper(const fit_xp *xp)
{
    const xp_model *m = &xp->m;
    if (!(xp->o.prior_wd_sd > 0))
        return (size_t)-1;
    size_t k_wd = (size_t)-1;
    int lr = 0, bs = 0;
    for (size_t k = 0; k < m->n_hp; k++) {
        size_t j = m->hp_param[k];
        int lg = xp->par[j].space == FIT_XP_LOG;
        if (xp->role[j] == FIT_XP_LR)
            lr = lg;
        else if (xp->role[j] == FIT_XP_BATCH)
            bs = lg;
        else if (xp->role[j] == FIT_XP_OTHER && lg && is_weight_decay(xp->par[j].name) &&
                 k_wd == (size_t)-1)
            k_wd = k;
    }
    return lr && bs ? k_wd : (size_t)-1;
}

/* The timescale prior on hyper k_wd's slopes and couplings (centres: sN 0, sD -1, batch +1,
 * lr -1, other hypers 0), weighted sigma^2 / (2 sd^2) as the alpha - beta prior. */
static void wd_prior_set(const fit_xp *xp, jm_data *d, size_t k_wd, double sigma)
{
    const xp_model *m = &xp->m;
    double sd = xp->o.prior_wd_sd, wgt = sigma * sigma / (2 * sd * sd);
    size_t o = XP_HP_OFF(k_wd);
    d->pw[o + 1] = d->pw[o + 2] = wgt;
    d->pmu[o + 1] = 0;
    d->pmu[o + 2] = -1;
    for (size_t j = 0; j < k_wd; j++) {
        fit_xp_role r = xp->role[m->hp_param[j]];
        d->pw[o + 5 + j] = wgt;
        d->pmu[o + 5 + j] = r == FIT_XP_BATCH ? 1 : r == FIT_XP_LR ? -1 : 0;
    }
}

void xp_model_clear(xp_model *m)
{
    free(m->th_rep);
    free(m->g_rep);
    memset(m, 0, sizeof(*m));
}

double xp_model_lnN(const fit_xp *xp, const double *x)
{
    const xp_model *m = &xp->m;
    for (size_t j = 0; j < xp->P; j++)
        if (xp->role[j] == FIT_XP_N)
            return log(x[j]);
    if (!m->n_size)
        return NAN;
    double l = m->size_c[0];
    for (size_t s = 0; s < m->n_size; s++) {
        size_t j = m->size_param[s];
        l += m->size_c[1 + s] * xp_to_basic(xp->par[j].space, x[j]);
    }
    return l;
}

static double lnD_of(const fit_xp *xp, const double *x)
{
    for (size_t j = 0; j < xp->P; j++)
        if (xp->role[j] == FIT_XP_D)
            return log(x[j]);
    return NAN;
}

/* ln N on the SIZE parameters' basic coordinates by OLS (GSL) over runs with N known. */
static st_status fit_size_regression(fit_xp *xp)
{
    xp_model *m = &xp->m;
    m->n_size = 0;
    for (size_t j = 0; j < xp->P && m->n_size < XP_MAX_HP; j++)
        if (xp->role[j] == FIT_XP_SIZE)
            m->size_param[m->n_size++] = j;
    if (!m->n_size)
        return ST_OK;
    size_t n = 0, p = 1 + m->n_size;
    for (size_t i = 0; i < xp->n; i++)
        if (isfinite(xp->N[i]))
            n++;
    if (n < p + 1) {
        m->n_size = 0;
        return ST_OK;
    }
    gsl_matrix *X = gsl_matrix_alloc(n, p), *cov = gsl_matrix_alloc(p, p);
    gsl_vector *y = gsl_vector_alloc(n), *c = gsl_vector_alloc(p);
    gsl_multifit_linear_workspace *w = gsl_multifit_linear_alloc(n, p);
    st_status s = ST_OK;
    if (!X || !cov || !y || !c || !w) {
        s = ST_ENOMEM;
    } else {
        size_t r = 0;
        for (size_t i = 0; i < xp->n; i++) {
            if (!isfinite(xp->N[i]))
                continue;
            gsl_matrix_set(X, r, 0, 1.0);
            for (size_t k = 0; k < m->n_size; k++)
                gsl_matrix_set(X, r, 1 + k, xp->b[i * xp->P + m->size_param[k]]);
            gsl_vector_set(y, r, log(xp->N[i]));
            r++;
        }
        double chisq;
        if (gsl_multifit_linear(X, y, c, cov, &chisq, w) != 0)
            m->n_size = 0;
        else
            for (size_t k = 0; k < p; k++)
                m->size_c[k] = gsl_vector_get(c, k);
    }
    gsl_matrix_free(X);
    gsl_matrix_free(cov);
    gsl_vector_free(y);
    gsl_vector_free(c);
    gsl_multifit_linear_free(w);
    return s;
}

typedef struct fit_work {
    double *lN, *lD, *ly, *bh, *z;
    double *key; /* 2 per run: sort keys of the boundary's prior rows */
    int *y;
    size_t *ok_rows, *lg_rows, *rows;
    size_t n_okr, n_lgr;
} fit_work;

static void work_free(fit_work *w)
{
    free(w->lN);
    free(w->lD);
    free(w->ly);
    free(w->bh);
    free(w->z);
    free(w->key);
    free(w->y);
    free(w->ok_rows);
    free(w->lg_rows);
    free(w->rows);
}

static int cmp_lnN(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* The boundary's prior rows (see model_fit): rows n, n+1, ... of w->z, w->y, appended to
 * w->lg_rows after the n_real real ones (whose z is set). Returns how many were added. */
static size_t add_prior_rows(fit_work *w, size_t n, size_t n_real)
{
    size_t bins = n_real / 5 < PRIOR_BINS ? n_real / 5 : PRIOR_BINS;
    if (bins < 1)
        bins = 1;
    double *key = w->key;
    for (size_t t = 0; t < n_real; t++) {
        key[2 * t] = w->z[3 * w->lg_rows[t] + 1];
        key[2 * t + 1] = (double)w->lg_rows[t];
    }
    qsort(key, n_real, 2 * sizeof(double), cmp_lnN);
    for (size_t q = 0; q < bins; q++) {
        size_t a = q * n_real / bins, e = (q + 1) * n_real / bins;
        size_t imax = (size_t)key[2 * a + 1];
        for (size_t t = a; t < e; t++)
            if (w->z[3 * (size_t)key[2 * t + 1]] > w->z[3 * imax])
                imax = (size_t)key[2 * t + 1];
        size_t r = n + q;
        w->z[3 * r] = w->z[3 * imax] + PRIOR_DIV_LR;
        w->z[3 * r + 1] = w->z[3 * imax + 1];
        w->z[3 * r + 2] = w->z[3 * imax + 2];
        w->y[r] = 1;
        w->lg_rows[w->n_lgr++] = r;
    }
    return bins;
}

/* Fits everything from the runs into xp->m (its point fit and R replicates). */
static st_status model_fit(fit_xp *xp, fit_work *w)
{
    xp_model *m = &xp->m;
    size_t n = xp->n, P = xp->P, R = xp->o.n_boot;
    m->lr_param = m->wu_param = (size_t)-1;
    for (size_t j = 0; j < P; j++) {
        if (xp->role[j] == FIT_XP_LR && m->lr_param == (size_t)-1)
            m->lr_param = j;
        if (m->wu_param == (size_t)-1 && strstr(xp->par[j].name, "warmup"))
            m->wu_param = j;
    }
    /* hyperparameters that vary among the successful runs */
    m->n_hp = 0;
    /* order: batch, then learning rate (its optimum moves with the batch), then the others */
    const fit_xp_role order[3] = {FIT_XP_BATCH, FIT_XP_LR, FIT_XP_OTHER};
    for (size_t pass = 0; pass < 3; pass++)
        for (size_t j = 0; j < P; j++) {
            fit_xp_role r = xp->role[j];
            if (r != order[pass])
                continue;
            double lo = INFINITY, hi = -INFINITY;
            for (size_t i = 0; i < n; i++)
                if (!xp->failed[i]) {
                    lo = fmin(lo, xp->b[i * P + j]);
                    hi = fmax(hi, xp->b[i * P + j]);
                }
            if (hi - lo > 1e-9 && m->n_hp < XP_MAX_HP)
                m->hp_param[m->n_hp++] = j;
        }
    m->n_th = XP_HP_OFF(m->n_hp);
    st_status s = fit_size_regression(xp);
    if (s != ST_OK)
        return s;
    for (size_t k = 0; k < m->n_hp; k++) {
        double acc = 0;
        for (size_t i = 0; i < n; i++)
            if (!xp->failed[i])
                acc += xp->b[i * P + m->hp_param[k]];
        m->hp_mean[k] = acc / (double)xp->n_ok;
    }
    size_t nh = m->n_hp ? m->n_hp : 1;
    w->lN = malloc(n * sizeof(double));
    w->lD = malloc(n * sizeof(double));
    w->ly = malloc(n * sizeof(double));
    w->bh = malloc(n * nh * sizeof(double));
    w->z = malloc((n + PRIOR_BINS) * 3 * sizeof(double)); /* + prior rows for the boundary */
    w->y = malloc((n + PRIOR_BINS) * sizeof(int));
    w->key = malloc(2 * n * sizeof(double));
    w->ok_rows = malloc(n * sizeof(size_t));
    w->lg_rows = malloc((n + PRIOR_BINS) * sizeof(size_t));
    w->rows = malloc(n * sizeof(size_t));
    if (!w->lN || !w->lD || !w->ly || !w->bh || !w->z || !w->y || !w->key || !w->ok_rows ||
        !w->lg_rows || !w->rows)
        return ST_ENOMEM;
    double sN = 0, sD = 0, minN = INFINITY, maxN = -INFINITY, minD = INFINITY, maxD = -INFINITY;
    double sk = 0;
    w->n_okr = 0;
    for (size_t i = 0; i < n; i++) {
        double lN = isfinite(xp->N[i]) ? log(xp->N[i]) : xp_model_lnN(xp, &xp->x[i * P]);
        double lD = isfinite(xp->D[i]) ? log(xp->D[i]) : NAN;
        w->lN[i] = lN;
        w->lD[i] = lD;
        w->ly[i] = xp->failed[i] ? NAN : log(xp->obj[i]);
        for (size_t k = 0; k < m->n_hp; k++)
            w->bh[i * nh + k] = xp->b[i * P + m->hp_param[k]] - m->hp_mean[k];
        w->y[i] = xp->failed[i];
        if (!xp->failed[i] && isfinite(lN) && isfinite(lD) && xp->obj[i] > 0) {
            w->ok_rows[w->n_okr++] = i;
            sN += lN;
            sD += lD;
            minN = fmin(minN, lN);
            maxN = fmax(maxN, lN);
            minD = fmin(minD, lD);
            maxD = fmax(maxD, lD);
            sk += log(xp->cost[i]) - lN - lD;
        }
    }
    if (w->n_okr < m->n_th / 2 + 3) {
        snprintf(xp->err, sizeof(xp->err), "%zu usable runs for %zu model parameters", w->n_okr,
                 m->n_th);
        return ST_EEMPTY;
    }
    m->lN0 = sN / (double)w->n_okr;
    m->lD0 = sD / (double)w->n_okr;
    m->cost_k = sk / (double)w->n_okr;
    m->fail_loss = xp->o.fail_loss; /* NAN: set at the target compute (xp_model_recommend) */
    if (maxN - minN < log(4.0) || maxD - minD < log(4.0))
        xp_add_warning(xp, FIT_XP_WARN_NARROW_ND,
                       "N or D spans less than a factor 4: the L(N, D) law is weak");

    /* free parameters: all, except the N/D slopes of OTHER hyperparameters in small sweeps */
    jm_data d;
    memset(&d, 0, sizeof(d));
    d.n_hp = m->n_hp;
    d.lN = w->lN;
    d.lD = w->lD;
    d.ly = w->ly;
    d.bh = w->bh;
    d.lN0 = m->lN0;
    d.lD0 = m->lD0;
    d.n_th = m->n_th;
    size_t k_wd = wd_prior_hyper(xp);
    for (size_t j = 0; j < m->n_th; j++) {
        if (j >= 5) {
            size_t k, q = hp_slot(j, &k);
            int other = xp->role[m->hp_param[k]] == FIT_XP_OTHER;
            /* a small sweep holds these at 0, except where the timescale prior speaks */
            if ((q == 1 || q == 2) && other && w->n_okr < 40 && k != k_wd)
                continue;
            if (q >= 5 && w->n_okr < 40 && k != k_wd)
                continue;
            if (q == 1 && maxN - minN < 1e-6)
                continue;
            if (q == 2 && maxD - minD < 1e-6)
                continue;
        }
        d.free_idx[d.n_free++] = j;
    }
    d.n = w->n_okr;
    d.rows = w->ok_rows;

    /* starts: a small grid on the Chinchilla part; hyper optima at the best runs' mean */
    double ymin = INFINITY, ymean = 0;
    for (size_t t = 0; t < w->n_okr; t++) {
        ymin = fmin(ymin, xp->obj[w->ok_rows[t]]);
        ymean += xp->obj[w->ok_rows[t]] / (double)w->n_okr;
    }
    double th0[XP_NTH] = {0};
    for (size_t k = 0; k < m->n_hp; k++) {
        /* mean basic coordinate of the best fifth of the runs (by loss) */
        double thr[2048];
        size_t cnt = 0;
        for (size_t t = 0; t < w->n_okr && cnt < 2048; t++)
            thr[cnt++] = xp->obj[w->ok_rows[t]];
        fit_sort_doubles(thr, cnt);
        double cut = fit_quantile_sorted(thr, cnt, 0.2), acc = 0;
        size_t na = 0;
        for (size_t t = 0; t < w->n_okr; t++)
            if (xp->obj[w->ok_rows[t]] <= cut) {
                acc += w->bh[w->ok_rows[t] * nh + k];
                na++;
            }
        double *h = &th0[XP_HP_OFF(k)];
        h[0] = na ? acc / (double)na : 0;
        h[1] = h[2] = 0;
        h[3] = log(0.01);
        h[4] = log(0.1);
    }
    double best_f = INFINITY, best_th[XP_NTH];
    if (k_wd != (size_t)-1) {
        /* start at the prior's centre, weighted with the residual floor until sigma is known */
        wd_prior_set(xp, &d, k_wd, PRIOR_SIGMA_MIN);
        for (size_t j = XP_HP_OFF(k_wd) + 1; j < XP_HP_OFF(k_wd + 1); j++)
            if (d.pw[j] > 0)
                th0[j] = d.pmu[j];
    }
    const double efr[2] = {0.5, 0.85}, ab[3] = {0.2, 0.35, 0.6};
    for (size_t ie = 0; ie < 2; ie++)
        for (size_t ia = 0; ia < 3; ia++)
            for (size_t ib = 0; ib < 3; ib++) {
                double th[XP_NTH];
                memcpy(th, th0, sizeof(th));
                double E = efr[ie] * ymin, rest = fmax(ymean - E, 0.05 * ymean) / 2;
                th[2] = log(E);
                th[3] = ab[ia];
                th[4] = ab[ib];
                th[0] = log(rest) + ab[ia] * m->lN0;
                th[1] = log(rest) + ab[ib] * m->lD0;
                double f = jm_minimise(&d, th, 3000);
                if (f < best_f) {
                    best_f = f;
                    memcpy(best_th, th, sizeof(th));
                }
            }
    if (!isfinite(best_f)) {
        snprintf(xp->err, sizeof(xp->err), "the model fit found no finite optimum");
        return ST_ENUMERIC;
    }
    jm_minimise(&d, best_th, 5000); /* polish */
    double dof = (double)w->n_okr - (double)d.n_free;
    for (int stage = 0; stage < 2; stage++) {
        double ss = 0;
        for (size_t t = 0; t < w->n_okr; t++) {
            size_t i = w->ok_rows[t];
            double r = jm_eval1(best_th, m->n_hp, w->lN[i], w->lD[i], m->lN0, m->lD0,
                                &w->bh[i * nh], NULL) -
                       w->ly[i];
            ss += r * r;
        }
        m->sigma = sqrt(ss / (dof > 1 ? dof : 1));
        if (stage == 1)
            break;
        /* the prior on alpha - beta, weighted by the residual variance; refit from here */
        double sg = fmax(m->sigma, PRIOR_SIGMA_MIN), sd = xp->o.prior_ab_sd;
        if (k_wd != (size_t)-1)
            wd_prior_set(xp, &d, k_wd, sg);
        if (sd > 0)
            d.w_ab = sg * sg / (2 * sd * sd);
        if (!(sd > 0) && k_wd == (size_t)-1)
            break;
        jm_minimise(&d, best_th, 5000);
    }
    memcpy(m->th, best_th, sizeof(best_th));

    /* the stability boundary, on every run whose ln N is known */
    size_t n_fail = 0;
    w->n_lgr = 0;
    double slr = 0, sw = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(w->lN[i]))
            continue;
        w->lg_rows[w->n_lgr++] = i;
        slr += xp->b[i * P + m->lr_param] * (xp->par[m->lr_param].space == FIT_XP_LOG ? 1 : 1);
        sw += m->wu_param != (size_t)-1 ? xp->b[i * P + m->wu_param] : 0;
        n_fail += (size_t)xp->failed[i];
    }
    m->has_div = 0;
    lg_data L;
    memset(&L, 0, sizeof(L));
    size_t n_real = w->n_lgr, n_prior = 0;
    /* No failed run: a prior instead of "never diverges". The runs are split by ln N into up to
     * PRIOR_BINS groups of equal size; in each, a pseudo-run at e^PRIOR_DIV_LR times the largest
     * learning rate that succeeded (at that run's N and warmup) counts as failed. A
     * recommendation above every learning rate tried carries a divergence risk, and the boundary
     * moves with N as the largest learning rates tried do (a sweep near the front tries them near
     * each size's optimum), not flat from the small runs' large learning rates. */
    int prior_row = n_fail == 0 && n_real > 4 && xp->par[m->lr_param].space == FIT_XP_LOG;
    if ((n_fail > 0 || prior_row) && n_real > 4) {
        m->m_lr = slr / (double)n_real;
        m->m_w = sw / (double)n_real;
        for (size_t t = 0; t < n_real; t++) {
            size_t i = w->lg_rows[t];
            w->z[3 * i] = xp->b[i * P + m->lr_param] - m->m_lr;
            w->z[3 * i + 1] = w->lN[i] - m->lN0;
            w->z[3 * i + 2] = m->wu_param != (size_t)-1 ? xp->b[i * P + m->wu_param] - m->m_w : 0;
        }
        if (prior_row) {
            n_prior = add_prior_rows(w, n, n_real);
            n_fail = n_prior;
        }
        L.n = w->n_lgr;
        L.rows = w->lg_rows;
        L.z = w->z;
        L.y = w->y;
        L.use_w = m->wu_param != (size_t)-1;
        double g[XP_NG] = {log((double)n_fail / (double)w->n_lgr), 1, 0, 0};
        if (lg_minimise(&L, g)) {
            memcpy(m->g, g, sizeof(g));
            m->has_div = 1;
        }
    }
    if (!m->has_div)
        xp_add_warning(xp, FIT_XP_WARN_FEW_FAILED,
                       n_fail ? "the stability boundary could not be fitted: p_diverge 0"
                              : "no failed run: the stability boundary is unknown (p_diverge "
                                "reported as 0)");
    else if (prior_row)
        xp_add_warning(xp, FIT_XP_WARN_FEW_FAILED,
                       "no failed run: p_diverge comes from a prior (runs at 1.65x the largest "
                       "learning rate that succeeded at their size are assumed to diverge)");

    /* bootstrap: resample the runs, refit both models from the point fit */
    m->n_rep = 0;
    m->th_rep = malloc((R ? R : 1) * XP_NTH * sizeof(double));
    m->g_rep = malloc((R ? R : 1) * XP_NG * sizeof(double));
    if (!m->th_rep || !m->g_rep)
        return ST_ENOMEM;
    st_rng *rng = NULL;
    if (st_rng_create(xp->o.seed + 1, &rng) != ST_OK)
        return ST_ENOMEM;
    for (size_t r = 0; r < R; r++) {
        double th[XP_NTH];
        memcpy(th, m->th, sizeof(th));
        for (size_t t = 0; t < w->n_okr; t++)
            w->rows[t] = w->ok_rows[st_rng_uniform_int(rng, w->n_okr)];
        d.rows = w->rows;
        d.n = w->n_okr;
        double f = jm_minimise(&d, th, 2000);
        double g[XP_NG];
        memcpy(g, m->g, sizeof(g));
        if (m->has_div) {
            size_t *lr_rows = malloc(w->n_lgr * sizeof(size_t));
            if (!lr_rows) {
                st_rng_destroy(rng);
                return ST_ENOMEM;
            }
            for (size_t t = 0; t < n_real; t++)
                lr_rows[t] = w->lg_rows[st_rng_uniform_int(rng, n_real)];
            for (size_t t = 0; t < n_prior; t++)
                lr_rows[n_real + t] = n + t;
            L.rows = lr_rows;
            if (!lg_minimise(&L, g))
                memcpy(g, m->g, sizeof(g));
            free(lr_rows);
        }
        if (!isfinite(f))
            continue;
        memcpy(&m->th_rep[m->n_rep * XP_NTH], th, sizeof(th));
        memcpy(&m->g_rep[m->n_rep * XP_NG], g, sizeof(g));
        m->n_rep++;
    }
    st_rng_destroy(rng);
    if (m->n_rep == 0) { /* no replicates: the point fit stands alone */
        memcpy(m->th_rep, m->th, sizeof(m->th));
        memcpy(m->g_rep, m->g, sizeof(m->g));
        m->n_rep = 1;
    }
    return ST_OK;
}

st_status xp_model_fit(fit_xp *xp)
{
    fit_work w;
    memset(&w, 0, sizeof(w));
    xp_model_clear(&xp->m);
    st_status s = model_fit(xp, &w);
    work_free(&w);
    if (s == ST_ENOMEM)
        snprintf(xp->err, sizeof(xp->err), "out of memory in the model fit");
    return s;
}

/* ---- prediction and the recommendation ------------------------------------------------- */

/* ln L of model th at lN, lD and the basic coordinates of a full parameter row b (P). */
static double model_lnL(const fit_xp *xp, const double *th, double lN, double lD, const double *b)
{
    const xp_model *m = &xp->m;
    double bh[XP_MAX_HP];
    for (size_t k = 0; k < m->n_hp; k++)
        bh[k] = b[m->hp_param[k]] - m->hp_mean[k];
    return jm_eval1(th, m->n_hp, lN, lD, m->lN0, m->lD0, bh, NULL);
}

static double model_pdiv(const fit_xp *xp, const double *g, double lN, const double *b)
{
    const xp_model *m = &xp->m;
    if (!m->has_div)
        return 0;
    double eta = g[0] + g[1] * (b[m->lr_param] - m->m_lr) + g[2] * (lN - m->lN0);
    if (m->wu_param != (size_t)-1)
        eta += g[3] * (b[m->wu_param] - m->m_w);
    return 1 / (1 + exp(-eta));
}

/* Basic coordinate of hyper k's optimum under th at (lN, lD), given the earlier hypers in the
 * full basic row b. */
static double hp_opt(const xp_model *m, const double *th, size_t k, double lN, double lD,
                     const double *b)
{
    const double *h = &th[XP_HP_OFF(k)];
    double opt = h[0] + h[1] * (lN - m->lN0) + h[2] * (lD - m->lD0);
    for (size_t j = 0; j < k; j++)
        opt += h[5 + j] * (b[m->hp_param[j]] - m->hp_mean[j]);
    return opt + m->hp_mean[k];
}

/* Fills a full basic row b (P) for (lN, lD) under th with lr shifted by s; starts from base. */
static void setting_basic(const fit_xp *xp, const double *th, double lN, double lD, double s,
                          const double *base, double *b)
{
    const xp_model *m = &xp->m;
    memcpy(b, base, xp->P * sizeof(double));
    for (size_t j = 0; j < xp->P; j++) {
        if (xp->role[j] == FIT_XP_N)
            b[j] = xp_to_basic(xp->par[j].space, exp(lN));
        if (xp->role[j] == FIT_XP_D)
            b[j] = xp_to_basic(xp->par[j].space, exp(lD));
    }
    for (size_t k = 0; k < m->n_hp; k++) {
        size_t j = m->hp_param[k];
        b[j] = hp_opt(m, th, k, lN, lD, b) + (j == m->lr_param ? s : 0);
    }
}

/* The compute-optimal ln N of replicate th at ln(N D) = lND: a grid then a parabola refit. */
static double best_lN(const double *th, double lND)
{
    double best = INFINITY, arg = 0.5 * lND;
    for (int t = -200; t <= 200; t++) {
        double lN = 0.5 * lND + 0.03 * t, lD = lND - lN;
        double t1 = th[0] - th[3] * lN, t2 = th[1] - th[4] * lD;
        double v = exp(t1) + exp(t2);
        if (v < best) {
            best = v;
            arg = lN;
        }
    }
    return arg;
}

/*
 * The prediction at the setting b (basic coordinates) at (lN, lD): the median over the replicates
 * of ln L with the interval exp(median +- z sqrt(var_r ln L + sigma^2)) at the options' level, and
 * the mean P(diverge). v: R values of scratch.
 */
static void predict_reps(const fit_xp *xp, double lN, double lD, const double *b, double *v,
                         double *objective, double *lo, double *hi, double *p_diverge)
{
    const xp_model *m = &xp->m;
    size_t R = m->n_rep;
    double mean = 0, var = 0, pm = 0;
    for (size_t r = 0; r < R; r++) {
        v[r] = model_lnL(xp, &m->th_rep[r * XP_NTH], lN, lD, b);
        mean += v[r] / (double)R;
        pm += model_pdiv(xp, &m->g_rep[r * XP_NG], lN, b) / (double)R;
    }
    for (size_t r = 0; r < R; r++)
        var += (v[r] - mean) * (v[r] - mean) / (double)(R > 1 ? R - 1 : 1);
    fit_sort_doubles(v, R);
    double med = fit_quantile_sorted(v, R, 0.5);
    double z = gsl_cdf_ugaussian_Pinv(0.5 + xp->o.level / 2);
    double sd = sqrt(var + m->sigma * m->sigma);
    *objective = exp(med);
    *lo = exp(med - z * sd);
    *hi = exp(med + z * sd);
    *p_diverge = pm;
}

/* The expected loss over the replicates of the setting b at (lN, lD), a diverged run charged
 * fail_loss; the mean P(diverge) in *pm. */
static double expected_loss(const fit_xp *xp, double lN, double lD, const double *b, double *pm)
{
    const xp_model *m = &xp->m;
    double E = 0, P = 0;
    for (size_t r = 0; r < m->n_rep; r++) {
        double L = exp(model_lnL(xp, &m->th_rep[r * XP_NTH], lN, lD, b));
        double p = model_pdiv(xp, &m->g_rep[r * XP_NG], lN, b);
        E += (1 - p) * L + p * m->fail_loss;
        P += p;
    }
    *pm = P / (double)m->n_rep;
    return E / (double)m->n_rep;
}

/*
 * Coordinate descent on each modelled hyperparameter: the value minimising the expected loss
 * over the replicates with P(diverge) <= the limit (never raising P(diverge) above it or above
 * the start's). Replicates that disagree on an optimum pull the choice to where most of them
 * agree instead of following the point fit's law. Candidates: the learning rate and the batch
 * within a factor e^1.5 of the current value; other hyperparameters (whose optima the sweep
 * does not show moving in a known way) within the range the successful runs tried, widened by a
 * quarter of it on each side.
 */
static void refine_hypers(fit_xp *xp, double lN, double lD, double *b)
{
    const xp_model *m = &xp->m;
    size_t P = xp->P;
    double pm0, E0 = expected_loss(xp, lN, lD, b, &pm0);
    double plim = fmax(xp->o.max_p_diverge, pm0);
    double law[XP_MAX_HP]; /* the start's values: the second pass may not walk further from them */
    for (size_t k = 0; k < m->n_hp; k++)
        law[k] = b[m->hp_param[k]];
    for (int pass = 0; pass < 2; pass++)
        for (size_t k = 0; k < m->n_hp; k++) {
            size_t j = m->hp_param[k];
            double lo, hi;
            if (xp->role[j] == FIT_XP_OTHER) {
                lo = INFINITY;
                hi = -INFINITY;
                for (size_t i = 0; i < xp->n; i++)
                    if (!xp->failed[i]) {
                        lo = fmin(lo, xp->b[i * P + j]);
                        hi = fmax(hi, xp->b[i * P + j]);
                    }
                double w = hi - lo;
                lo -= 0.25 * w;
                hi += 0.25 * w;
            } else {
                lo = law[k] - 1.5;
                hi = law[k] + 1.5;
            }
            double best = b[j];
            for (int t = 0; t <= 60; t++) {
                double v = xp_finish_value(
                    xp, j, xp_from_basic(xp->par[j].space, lo + (hi - lo) * t / 60.0), NULL);
                b[j] = xp_to_basic(xp->par[j].space, v);
                if (!isfinite(b[j]))
                    continue;
                double pm, E = expected_loss(xp, lN, lD, b, &pm);
                if (pm <= plim && E < E0) {
                    E0 = E;
                    best = b[j];
                }
            }
            b[j] = best;
        }
}

st_status xp_model_recommend(fit_xp *xp, double C)
{
    xp_model *m = &xp->m;
    size_t P = xp->P, R = m->n_rep;
    double lND = log(C) - m->cost_k;
    double *base = malloc(P * sizeof(double)), *b = malloc(P * sizeof(double));
    double *vals = malloc((R + 1) * sizeof(double)), *repv = malloc(R * P * sizeof(double));
    double *repN = malloc(R * sizeof(double)), *repD = malloc(R * sizeof(double));
    if (!base || !b || !vals || !repv || !repN || !repD) {
        free(base);
        free(b);
        free(vals);
        free(repv);
        free(repN);
        free(repD);
        return ST_ENOMEM;
    }
    /* parameters the model does not set: the cheapest... the best front group's values */
    size_t best_run = xp->front_run[xp->n_front - 1];
    for (size_t j = 0; j < P; j++)
        base[j] = xp->b[best_run * P + j];
    /* SIZE parameters other than the one solved for: the front law at C */
    size_t solve = (size_t)-1;
    double cmax = 0;
    for (size_t s = 0; s < m->n_size; s++)
        if (fabs(m->size_c[1 + s]) > cmax) {
            cmax = fabs(m->size_c[1 + s]);
            solve = s;
        }
    for (size_t s = 0; s < m->n_size; s++) {
        size_t j = m->size_param[s];
        if (s == solve || !xp->front_law_ok[j])
            continue;
        double v = xp_from_basic(xp->par[j].space,
                                 xp->front_coef[2 * j] + xp->front_coef[2 * j + 1] * log(C));
        base[j] = xp_to_basic(xp->par[j].space, xp_finish_value(xp, j, v, NULL));
    }

    /* choose (ln N, lr shift s) minimising the expected loss over the replicates, with
     * P(fail) <= max_p_diverge */
    double lN_pt = best_lN(m->th, lND);
    if (!isfinite(xp->o.fail_loss)) {
        /* a diverged run burns compute: charged as the compute-optimal run at C/2 */
        double lNh = best_lN(m->th, lND - M_LN2), lDh = lND - M_LN2 - lNh;
        setting_basic(xp, m->th, lNh, lDh, 0, base, b);
        m->fail_loss = exp(model_lnL(xp, m->th, lNh, lDh, b));
    }
    double best_E = INFINITY, best_lNv = lN_pt, best_s = 0, minp = INFINITY;
    double minp_lN = lN_pt, minp_s = 0;
    for (int it = -20; it <= 20; it++) {
        double lN = lN_pt + 0.05 * it, lD = lND - lN;
        for (int is = -30; is <= 10; is++) {
            double s = 0.05 * is;
            setting_basic(xp, m->th, lN, lD, s, base, b);
            double pm, E = expected_loss(xp, lN, lD, b, &pm);
            if (pm < minp) {
                minp = pm;
                minp_lN = lN;
                minp_s = s;
            }
            if (pm <= xp->o.max_p_diverge && E < best_E) {
                best_E = E;
                best_lNv = lN;
                best_s = s;
            }
        }
    }
    if (!isfinite(best_E)) {
        best_lNv = minp_lN;
        best_s = minp_s;
        xp_add_warning(xp, FIT_XP_WARN_P_DIVERGE,
                       "every candidate has P(diverge) above the limit: the safest one is given");
    }
    double lN = best_lNv, lD = lND - lN;
    setting_basic(xp, m->th, lN, lD, best_s, base, b);
    if (xp->o.robust)
        refine_hypers(xp, lN, lD, b);
    if (solve != (size_t)-1) {
        size_t j = m->size_param[solve];
        double acc = m->size_c[0];
        for (size_t s = 0; s < m->n_size; s++)
            if (s != solve)
                acc += m->size_c[1 + s] * b[m->size_param[s]];
        b[j] = (lN - acc) / m->size_c[1 + solve];
    }
    int clamped = 0;
    for (size_t j = 0; j < P; j++)
        xp->rec[j] = xp_finish_value(xp, j, xp_from_basic(xp->par[j].space, b[j]), &clamped);
    if (clamped)
        xp_add_warning(xp, FIT_XP_WARN_BOUND, "a recommended value was clamped to its bound");
    /* the setting as it will run (rounded): its N, D, predicted loss and P(diverge) */
    double lNr = xp_model_lnN(xp, xp->rec), lDr = lnD_of(xp, xp->rec);
    /* rounding the size moved N: the tokens take up the difference, so the run costs C */
    if (isfinite(lNr) && isfinite(lDr) && fabs(lNr - lN) > 1e-12)
        for (size_t j = 0; j < P; j++)
            if (xp->role[j] == FIT_XP_D) {
                xp->rec[j] = xp_finish_value(xp, j, exp(lND - lNr), &clamped);
                lDr = log(xp->rec[j]);
            }
    if (!isfinite(lNr))
        lNr = lN;
    if (!isfinite(lDr))
        lDr = lD;
    for (size_t j = 0; j < P; j++)
        b[j] = xp_to_basic(xp->par[j].space, xp->rec[j]);
    predict_reps(xp, lNr, lDr, b, vals, &xp->res.objective, &xp->res.objective_lo,
                 &xp->res.objective_hi, &xp->res.p_diverge);
    xp->res.N = exp(lNr);
    xp->res.D = exp(lDr);

    /* intervals: each replicate's own optimum (its allocation and laws, the same lr shift) */
    for (size_t r = 0; r < R; r++) {
        const double *th = &m->th_rep[r * XP_NTH];
        double lNq = best_lN(th, lND), lDq = lND - lNq;
        double bq[64];
        setting_basic(xp, th, lNq, lDq, best_s, base, bq);
        if (solve != (size_t)-1) {
            size_t j = m->size_param[solve];
            double acc = m->size_c[0];
            for (size_t s = 0; s < m->n_size; s++)
                if (s != solve)
                    acc += m->size_c[1 + s] * bq[m->size_param[s]];
            bq[j] = (lNq - acc) / m->size_c[1 + solve];
        }
        for (size_t j = 0; j < P; j++)
            repv[r * P + j] = xp_from_basic(xp->par[j].space, bq[j]);
        repN[r] = exp(lNq);
        repD[r] = exp(lDq);
    }
    double a = (1 - xp->o.level) / 2;
    for (size_t j = 0; j < P; j++) {
        for (size_t r = 0; r < R; r++)
            vals[r] = repv[r * P + j];
        fit_sort_doubles(vals, R);
        double lo = fit_quantile_sorted(vals, R, a), hi = fit_quantile_sorted(vals, R, 1 - a);
        xp->rec_lo[j] = xp_finish_value(xp, j, fmin(lo, xp->rec[j]), NULL);
        xp->rec_hi[j] = xp_finish_value(xp, j, fmax(hi, xp->rec[j]), NULL);
    }
    fit_sort_doubles(repN, R);
    fit_sort_doubles(repD, R);
    xp->res.N_lo = fmin(fit_quantile_sorted(repN, R, a), xp->res.N);
    xp->res.N_hi = fmax(fit_quantile_sorted(repN, R, 1 - a), xp->res.N);
    xp->res.D_lo = fmin(fit_quantile_sorted(repD, R, a), xp->res.D);
    xp->res.D_hi = fmax(fit_quantile_sorted(repD, R, 1 - a), xp->res.D);
    xp->res.method = FIT_XP_METHOD_MODEL;
    if (xp->res.p_diverge > xp->o.max_p_diverge && !(xp->res.warnings & FIT_XP_WARN_P_DIVERGE))
        xp_add_warning(xp, FIT_XP_WARN_P_DIVERGE, "after rounding, P(diverge) is above the limit");
    free(base);
    free(b);
    free(vals);
    free(repv);
    free(repN);
    free(repD);
    return ST_OK;
}

/* ---- accessors ------------------------------------------------------------------------- */

st_status fit_xp_chinchilla(const fit_xp *xp, double natural[5], fit_alloc *alloc)
{
    if (!xp || !xp->has_model)
        return ST_ENOTFOUND;
    const double *th = xp->m.th;
    double nat[5] = {exp(th[0]), exp(th[1]), exp(th[2]), th[3], th[4]};
    if (natural)
        memcpy(natural, nat, sizeof(nat));
    if (alloc) {
        /* the C = 6 N D convention of fit_allocate: C_flop = 6 N D = 6 C / exp(cost_k) */
        double Cf = 6 * (xp->done ? xp->res.compute : 1) / exp(xp->m.cost_k);
        return fit_allocate(nat, Cf, alloc);
    }
    return ST_OK;
}

st_status fit_xp_hp_law(const fit_xp *xp, size_t i, double coef[3], double *curv, double *sat)
{
    if (!xp || !xp->has_model)
        return ST_ENOTFOUND;
    const xp_model *m = &xp->m;
    for (size_t k = 0; k < m->n_hp; k++) {
        if (m->hp_param[k] != i)
            continue;
        const double *h = &m->th[XP_HP_OFF(k)];
        if (coef) {
            coef[0] = h[0] + m->hp_mean[k] - h[1] * m->lN0 - h[2] * m->lD0;
            coef[1] = h[1];
            coef[2] = h[2];
        }
        if (curv)
            *curv = exp(h[3]);
        if (sat)
            *sat = exp(h[4]);
        return ST_OK;
    }
    return ST_ENOTFOUND;
}

st_status fit_xp_divergence(const fit_xp *xp, double g[4])
{
    if (!xp || !xp->has_model || !xp->m.has_div)
        return ST_ENOTFOUND;
    const xp_model *m = &xp->m;
    g[0] = m->g[0] - m->g[1] * m->m_lr - m->g[2] * m->lN0 - m->g[3] * m->m_w;
    g[1] = m->g[1];
    g[2] = m->g[2];
    g[3] = m->g[3];
    return ST_OK;
}

st_status fit_xp_cost_model(const fit_xp *xp, double *k)
{
    if (!xp || !xp->has_model)
        return ST_ENOTFOUND;
    *k = xp->m.cost_k;
    return ST_OK;
}

st_status fit_xp_predict(const fit_xp *xp, const double *x, double N, double D, double *objective,
                         double *lo, double *hi, double *p_diverge)
{
    if (!xp || !x)
        return ST_EINVAL;
    if (!xp->has_model)
        return ST_ENOTFOUND;
    const xp_model *m = &xp->m;
    size_t P = xp->P, R = m->n_rep;
    double lN = isfinite(N) && N > 0 ? log(N) : xp_model_lnN(xp, x);
    double lD = isfinite(D) && D > 0 ? log(D) : lnD_of(xp, x);
    if (!isfinite(lN) || !isfinite(lD))
        return ST_EINVAL;
    double *b = malloc((P + R) * sizeof(double));
    if (!b)
        return ST_ENOMEM;
    double *v = b + P;
    for (size_t j = 0; j < P; j++)
        b[j] = xp_to_basic(xp->par[j].space, x[j]);
    double o, l, h, p;
    predict_reps(xp, lN, lD, b, v, &o, &l, &h, &p);
    if (objective)
        *objective = o;
    if (lo)
        *lo = l;
    if (hi)
        *hi = h;
    if (p_diverge)
        *p_diverge = p;
    free(b);
    return ST_OK;
}
