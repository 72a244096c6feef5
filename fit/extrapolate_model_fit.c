/*
 * extrapolate_model_fit.c — the fit of the model of every run (extrapolate_model.c) on a sweep,
 * in stages (xp_model_fit): choose the hyperparameters to model and how the parameters set N and
 * D (extrapolate_sizes.c); assemble
 * the runs (ln N, ln D, ln loss, centred coordinates); choose the free parameters; a multi-start
 * first fit; the priors weighted by its residual variance and a refit; the hyperparameter laws
 * the runs cannot place settled (extrapolate_hyper_fit.c); the logistic stability
 * boundary (with prior pseudo-runs when no run failed); run bootstrap replicates of both.
 * docs/algorithms/extrapolation.md.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit/extrapolate_fit_int.h"
#include "fit/fit_int.h"

#define NONE ((size_t)-1)

/* A hyperparameter is modelled when its basic coordinate varies by more than this among the
 * successful runs (a constant one has no optimum to find). */
#define HP_MIN_SPREAD    1e-9
/* A sweep needs at least n_th / 2 + MIN_RUNS_SLACK usable runs (many of the n_th parameters are
 * held or tied by priors and ridges). */
#define MIN_RUNS_SLACK   3
/* N or D spanning less than this factor: the L(N, D) law is weak (a warning). */
#define NARROW_SPAN      4.0
/* With fewer usable runs the couplings and the N/D slopes of OTHER hyperparameters are held at
 * their start, the prior's centre or 0 (first_fit; the weight decay's under its timescale prior
 * stay free). */
#define SMALL_SWEEP_RUNS 40
/* ln N (ln D) spans below this: the hyperparameters' slopes on it are held at their start (the
 * prior's centre, else 0: first_fit). */
#define FLAT_SPAN        1e-6

/* Starts of the first fit: each hyper's optimum at the mean of the best START_BEST_Q of the runs
 * (by loss), curvature START_CURV and saturation XP_SAT_CENTRE; on the Chinchilla part a grid of
 * E = START_E_FRAC x the best loss and alpha, beta in START_EXP, the two power-law terms sharing
 * the rest of the mean loss (at least START_REST_MIN of it). */
#define START_REST_MIN 0.05
static const double START_E_FRAC[] = {0.5, 0.85};
static const double START_EXP[] = {0.2, 0.35, 0.6};
#define N_START_E   (sizeof(START_E_FRAC) / sizeof(START_E_FRAC[0]))
#define N_START_EXP (sizeof(START_EXP) / sizeof(START_EXP[0]))

/* Evaluations of L-BFGS: each start, the polish and refit, each bootstrap replicate. */
#define MAXEVAL_START 3000

/* A Gaussian prior on alpha - beta with sd o.prior_ab_sd (0.05). Published fits put alpha and beta
 * close (Hoffmann et al. 0.34 and 0.28, Besiroglu et al. 0.35 and 0.37), i.e. N_opt close to C^0.5;
 * a sweep near the front cannot tell N from D apart and would otherwise extrapolate either without
 * bound. The objective is 0.5 sum r^2 (ln loss), so the prior's weight is sigma^2 / (2 sd^2) with
 * sigma the residual sd of a fit without it, at least PRIOR_SIGMA_MIN. */
/* The floor of sigma in every prior's weight. It lies above the residual sds of typical sweeps
 * (0.23-0.87% on bench-extrapolate's 20 default worlds), so it sets the priors' strength there;
 * 0.002 doubled the median regret at 100x (docs/algorithms/extrapolation.md, "The N/D split"). */
#define PRIOR_SIGMA_MIN 0.01
/* The centre of the prior on E, as a fraction of the best usable run's loss (e_prior_set). */
#define E_PRIOR_FRAC    0.5

/* The boundary: fitted on at least BOUNDARY_MIN_RUNS runs, from an intercept at the log of the
 * failed fraction and a slope LG_START_LR on ln lr. Without a failed run, prior pseudo-runs: up
 * to PRIOR_BINS size groups of at least PRIOR_BIN_RUNS runs each. */
#define BOUNDARY_MIN_RUNS 5
#define LG_START_LR       1.0
#define PRIOR_DIV_LR      0.5 /* ln of the factor above the largest successful lr (no failed run) */
#define PRIOR_BINS        4   /* size groups that each get a prior row (no failed run) */
#define PRIOR_BIN_RUNS    5
/* The boundary's slope tie: the largest stable learning rate and the optimal one move alike with
 * the model's size (docs/algorithms/extrapolation.md section 2, "Boundary slope tie"), so a
 * Gaussian prior of this sd (times o.prior_law_sd; 0 disables it) on the difference between the
 * boundary's ln N slope -g_LN / g_LR and the fitted optimum's slope along the compute-optimal path.
 */
#define BOUNDARY_TIE_SD   0.1
/* Curve points are left out when, under the fit on the runs' finals alone, they sit off the law
 * relative to their own run's final (the mean over runs of the points' mean residual minus the
 * run's) by more than CURVE_BIAS_Z standard errors and CURVE_BIAS_SIGMA residual sds: a
 * trainer whose curves the curve law does not describe would otherwise move the laws and
 * narrow the interval with points that are wrong together. */
#define CURVE_BIAS_Z      3.0
#define CURVE_BIAS_SIGMA  0.25

/* ---- choosing what to model ----------------------------------------------------------------- */

/* The learning rate and warmup-like parameters, and the hyperparameters that vary among the
 * successful runs, in the order batch, learning rate (its optimum moves with the batch), others;
 * their centres. */
static void choose_hypers(fit_xp *xp)
{
    xp_model *m = &xp->m;
    size_t n = xp->n, P = xp->P;
    m->lr_param = m->wu_param = NONE;
    for (size_t j = 0; j < P; j++) {
        if (xp->par[j].active_mask || xp->par[j].n_levels)
            continue; /* the boundary's covariates are there in every run */
        if (xp->role[j] == FIT_XP_LR && m->lr_param == NONE)
            m->lr_param = j;
        if (m->wu_param == NONE && fit_xp_is_warmup(xp->par[j].name))
            m->wu_param = j;
    }
    m->n_hp = 0;
    const fit_xp_role order[3] = {FIT_XP_BATCH, FIT_XP_LR, FIT_XP_OTHER};
    for (size_t pass = 0; pass < 3; pass++)
        for (size_t j = 0; j < P; j++) {
            if (xp->role[j] != order[pass] || xp->par[j].n_levels)
                continue;
            double lo = INFINITY, hi = -INFINITY;
            for (size_t i = 0; i < n; i++)
                if (!xp->failed[i]) {
                    lo = fmin(lo, xp->b[i * P + j]);
                    hi = fmax(hi, xp->b[i * P + j]);
                }
            if (hi - lo > HP_MIN_SPREAD && m->n_hp < XP_MAX_HP)
                m->hp_param[m->n_hp++] = j;
        }
    m->k_lr = m->k_wu = NONE;
    for (size_t k = 0; k < m->n_hp; k++) {
        double acc = 0;
        size_t na = 0;
        for (size_t i = 0; i < n; i++)
            if (!xp->failed[i] && !isnan(xp->x[i * P + m->hp_param[k]]))
                acc += xp->b[i * P + m->hp_param[k]], na++;
        m->hp_mean[k] = na ? acc / (double)na : 0;
        if (m->hp_param[k] == m->lr_param)
            m->k_lr = k;
        if (m->hp_param[k] == m->wu_param)
            m->k_wu = k;
    }
}

/* The categorical factors: each level's successful runs, the reference level (the one with the
 * most; the first of those on a tie), the slots of the others. ST_EINVAL beyond XP_MAX_FAC
 * factors or XP_MAX_LV levels. Sets m->n_th. */
static st_status choose_factors(fit_xp *xp)
{
    xp_model *m = &xp->m;
    size_t P = xp->P;
    m->n_fac = m->n_lv = 0;
    for (size_t j = 0; j < P; j++) {
        size_t nl = xp->par[j].n_levels;
        if (!nl)
            continue;
        if (m->n_fac == XP_MAX_FAC || m->n_lv + nl - 1 > XP_MAX_LV)
            return xp_fail(xp, ST_EINVAL,
                           "the model takes at most %d categorical parameters with %d levels "
                           "beyond their reference levels",
                           XP_MAX_FAC, XP_MAX_LV);
        size_t f = m->n_fac++, *cnt = m->fac_n_ok[f];
        memset(cnt, 0, sizeof(m->fac_n_ok[f]));
        for (size_t i = 0; i < xp->n; i++)
            if (!xp->failed[i] && !isnan(xp->x[i * P + j]))
                cnt[(size_t)xp->x[i * P + j]]++;
        size_t ref = 0;
        for (size_t l = 1; l < nl; l++)
            if (cnt[l] > cnt[ref])
                ref = l;
        m->fac_param[f] = j;
        m->fac_ref[f] = ref;
        m->fac_q0[f] = m->n_lv;
        m->n_lv += nl - 1;
    }
    m->n_th = XP_LV_OFF(m->n_hp, m->n_lv);
    return ST_OK;
}

size_t xp_level_slot(const xp_model *m, size_t f, size_t l)
{
    if (l == m->fac_ref[f])
        return NONE;
    return m->fac_q0[f] + l - (l > m->fac_ref[f]);
}

void xp_level_terms(const fit_xp *xp, const double *th, const double *b, double *delta,
                    double *lr_shift)
{
    const xp_model *m = &xp->m;
    *delta = *lr_shift = 0;
    for (size_t f = 0; f < m->n_fac; f++) {
        double l = b[m->fac_param[f]];
        if (!(l >= 0 && l < (double)xp->par[m->fac_param[f]].n_levels))
            continue; /* inactive (NAN), or no level: counted as the reference */
        size_t q = xp_level_slot(m, f, (size_t)l);
        if (q == NONE)
            continue;
        *delta += th[XP_LV_OFF(m->n_hp, q) + XP_LV_DELTA];
        *lr_shift += th[XP_LV_OFF(m->n_hp, q) + XP_LV_LRSHIFT];
    }
}

void xp_model_clear(xp_model *m)
{
    if (m->th_iv != m->th_rep)
        free(m->th_iv);
    free(m->th_rep);
    free(m->g_rep);
    memset(m, 0, sizeof(*m));
}

/* ---- the runs' data --------------------------------------------------------------------- */

/* n runs, n_cp curve points, at most cp_max of them per run */
static st_status work_alloc(fit_work *w, size_t n, size_t n_cp, size_t cp_max, size_t nh,
                            size_t n_fac)
{
    size_t na = n + n_cp;
    w->nh = nh;
    w->fq = malloc((na * n_fac + 1) * sizeof(size_t));
    w->lN = malloc(na * sizeof(double));
    w->lD = malloc(na * sizeof(double));
    w->ly = malloc(na * sizeof(double));
    w->bh = malloc(na * nh * sizeof(double));
    w->wt = malloc(na * sizeof(double));
    w->usable = calloc(n ? n : 1, sizeof(int));
    w->fit_rows = malloc(na * sizeof(size_t));
    w->z = malloc((n + PRIOR_BINS) * XP_NZ * sizeof(double));
    w->y = malloc((n + PRIOR_BINS) * sizeof(int));
    w->key = malloc(2 * n * sizeof(double));
    w->sorted = malloc(n * sizeof(double));
    w->ok_rows = malloc(n * sizeof(size_t));
    w->rows = malloc(n * (1 + cp_max) * sizeof(size_t)); /* a resample brings points along */
    w->lg_rows = malloc((n + PRIOR_BINS) * sizeof(size_t));
    w->lg_boot = malloc((n + PRIOR_BINS) * sizeof(size_t));
    if (!w->lN || !w->lD || !w->ly || !w->bh || !w->z || !w->y || !w->key || !w->sorted ||
        !w->ok_rows || !w->rows || !w->lg_rows || !w->lg_boot || !w->wt || !w->usable ||
        !w->fit_rows || !w->fq)
        return ST_ENOMEM;
    return ST_OK;
}

static void work_free(fit_work *w)
{
    free(w->lN);
    free(w->lD);
    free(w->ly);
    free(w->bh);
    free(w->z);
    free(w->y);
    free(w->key);
    free(w->sorted);
    free(w->ok_rows);
    free(w->rows);
    free(w->lg_rows);
    free(w->lg_boot);
    free(w->wt);
    free(w->usable);
    free(w->fit_rows);
    free(w->fq);
}

/* Per run ln N, ln D, ln loss and the hypers' centred coordinates; the usable runs, the
 * centres of their ln N and ln D, the cost model. ST_EEMPTY with too few usable runs. */
static st_status assemble_runs(fit_xp *xp, fit_work *w)
{
    xp_model *m = &xp->m;
    size_t n = xp->n, P = xp->P, nh = w->nh;
    double sN = 0, sD = 0, minN = INFINITY, maxN = -INFINITY, minD = INFINITY, maxD = -INFINITY;
    double sk = 0;
    w->n_okr = 0;
    for (size_t i = 0; i < n; i++) {
        double lN = isfinite(xp->N[i]) ? log(xp->N[i]) : xp_model_lnN(xp, &xp->x[i * P]);
        double lD = isfinite(xp->D[i]) ? log(xp->D[i]) : xp_model_lnD(xp, &xp->x[i * P]);
        w->lN[i] = lN;
        w->lD[i] = lD;
        w->ly[i] = xp->failed[i] ? NAN : log(xp->obj[i]);
        for (size_t k = 0; k < m->n_hp; k++) /* NAN where a conditional hyper is inactive */
            w->bh[i * nh + k] = isnan(xp->x[i * P + m->hp_param[k]])
                                    ? NAN
                                    : xp->b[i * P + m->hp_param[k]] - m->hp_mean[k];
        for (size_t f = 0; f < m->n_fac; f++) {
            double l = xp->x[i * P + m->fac_param[f]];
            w->fq[i * m->n_fac + f] = isnan(l) ? NONE : xp_level_slot(m, f, (size_t)l);
        }
        w->y[i] = xp->failed[i];
        if (!xp->failed[i] && isfinite(lN) && isfinite(lD) && xp->obj[i] > 0) {
            w->ok_rows[w->n_okr++] = i;
            w->usable[i] = 1;
            sN += lN;
            sD += lD;
            minN = fmin(minN, lN);
            maxN = fmax(maxN, lN);
            minD = fmin(minD, lD);
            maxD = fmax(maxD, lD);
            sk += log(xp->cost[i]) - lN - lD;
        }
    }
    if (w->n_okr < m->n_th / 2 + MIN_RUNS_SLACK) {
        snprintf(xp->err, sizeof(xp->err), "%zu usable runs for %zu model parameters", w->n_okr,
                 m->n_th);
        return ST_EEMPTY;
    }
    memcpy(w->fit_rows, w->ok_rows, w->n_okr * sizeof(size_t));
    w->n_fit = w->n_okr + xp_curves_rows(xp, w->usable, nh, w->lN, w->lD, w->ly, w->bh, w->wt,
                                         &w->fit_rows[w->n_okr]);
    for (size_t i = 0; xp->cp_off && i < n; i++) /* a curve point has its run's levels */
        for (size_t c = xp->cp_off[i]; c < xp->cp_off[i + 1]; c++)
            memcpy(&w->fq[(n + c) * m->n_fac], &w->fq[i * m->n_fac], m->n_fac * sizeof(size_t));
    m->lN0 = sN / (double)w->n_okr;
    m->lD0 = sD / (double)w->n_okr;
    m->cost_k = sk / (double)w->n_okr;
    m->fail_loss = xp->o.fail_loss; /* NAN: set at the target compute (xp_model_recommend) */
    w->lN_span = maxN - minN;
    w->lD_span = maxD - minD;
    if (w->lN_span < log(NARROW_SPAN) || w->lD_span < log(NARROW_SPAN))
        xp_add_warning(xp, FIT_XP_WARN_NARROW_ND,
                       "N or D spans less than a factor 4: the L(N, D) law is weak");
    return ST_OK;
}

/* ---- the joint fit ---------------------------------------------------------------------- */

/* Is slot q of hyper k held at its start (first_fit: its prior's centre, else 0)? The N/D slopes
 * of OTHER hypers and all couplings in a small sweep (except under the timescale prior), a slope
 * on ln N or ln D where it is flat. */
static int hp_slot_held(const fit_xp *xp, const fit_work *w, size_t k, size_t q, size_t k_wd)
{
    int small = w->n_okr < SMALL_SWEEP_RUNS && k != k_wd;
    int slope = q == XP_HP_SLOPE_N || q == XP_HP_SLOPE_D;
    if (slope && small && xp->role[xp->m.hp_param[k]] == FIT_XP_OTHER)
        return 1;
    if (q >= XP_HP_COUPLING && small)
        return 1;
    if (q == XP_HP_SLOPE_N && w->lN_span < FLAT_SPAN)
        return 1;
    if (q == XP_HP_SLOPE_D && w->lD_span < FLAT_SPAN)
        return 1;
    return 0;
}

/* The joint fit's data on the usable runs and its free parameters. */
static void jm_setup(const fit_xp *xp, const fit_work *w, size_t k_wd, xp_jm_data *d)
{
    const xp_model *m = &xp->m;
    memset(d, 0, sizeof(*d));
    d->n_hp = m->n_hp;
    d->lN = w->lN;
    d->lD = w->lD;
    d->ly = w->ly;
    d->bh = w->bh;
    d->lN0 = m->lN0;
    d->lD0 = m->lD0;
    d->n_th = m->n_th;
    for (size_t j = 0; j < XP_TH_CHIN; j++)
        d->free_idx[d->n_free++] = j;
    for (size_t k = 0; k < m->n_hp; k++)
        for (size_t q = 0; q < XP_HP_LEN(k); q++)
            if (!hp_slot_held(xp, w, k, q, k_wd))
                d->free_idx[d->n_free++] = XP_HP_OFF(k) + q;
    for (size_t q = 0; q < m->n_lv; q++) { /* a shift only with a learning rate modelled */
        d->free_idx[d->n_free++] = XP_LV_OFF(m->n_hp, q) + XP_LV_DELTA;
        if (m->k_lr != NONE)
            d->free_idx[d->n_free++] = XP_LV_OFF(m->n_hp, q) + XP_LV_LRSHIFT;
    }
    d->n_fac = m->n_fac;
    d->fq = w->fq;
    d->k_lr = m->k_lr;
    d->n = w->n_fit;
    d->rows = w->fit_rows;
    d->wt = w->wt;
}

/* The hyper blocks of the start th0 (its Chinchilla part left alone): each optimum at the mean
 * centred coordinate of the best START_BEST_Q of the usable runs, no slopes or couplings. */
static void hyper_starts(const fit_xp *xp, fit_work *w, double *th0)
{
    const xp_model *m = &xp->m;
    if (!m->n_hp)
        return;
    for (size_t t = 0; t < w->n_okr; t++)
        w->sorted[t] = xp->obj[w->ok_rows[t]];
    fit_sort_doubles(w->sorted, w->n_okr);
    double cut = fit_quantile_sorted(w->sorted, w->n_okr, START_BEST_Q);
    for (size_t k = 0; k < m->n_hp; k++) {
        double acc = 0;
        size_t na = 0;
        for (size_t t = 0; t < w->n_okr; t++)
            if (xp->obj[w->ok_rows[t]] <= cut && !isnan(w->bh[w->ok_rows[t] * w->nh + k])) {
                acc += w->bh[w->ok_rows[t] * w->nh + k];
                na++;
            }
        double *h = &th0[XP_HP_OFF(k)];
        h[XP_HP_ICPT] = na ? acc / (double)na : 0;
        h[XP_HP_SLOPE_N] = h[XP_HP_SLOPE_D] = 0;
        h[XP_HP_LN_CURV] = log(START_CURV);
        h[XP_HP_LN_SAT] = log(XP_SAT_CENTRE);
    }
}

/* The grid of starts on the Chinchilla part from th0 (its hyper blocks as given): each start
 * minimised, the best kept in th and *best_f when it beats *best_f. */
static void start_grid(const fit_xp *xp, const fit_work *w, xp_jm_data *d, const double *th0,
                       double *th, double *best_f)
{
    const xp_model *m = &xp->m;
    double ymin = INFINITY, ymean = 0;
    for (size_t t = 0; t < w->n_okr; t++) {
        ymin = fmin(ymin, xp->obj[w->ok_rows[t]]);
        ymean += xp->obj[w->ok_rows[t]] / (double)w->n_okr;
    }
    for (size_t ie = 0; ie < N_START_E; ie++)
        for (size_t ia = 0; ia < N_START_EXP; ia++)
            for (size_t ib = 0; ib < N_START_EXP; ib++) {
                double t[XP_NTH];
                memcpy(t, th0, sizeof(t));
                double E = START_E_FRAC[ie] * ymin;
                double rest = fmax(ymean - E, START_REST_MIN * ymean) / 2;
                t[XP_TH_E] = log(E);
                t[XP_TH_ALPHA] = START_EXP[ia];
                t[XP_TH_BETA] = START_EXP[ib];
                t[XP_TH_A] = log(rest) + START_EXP[ia] * m->lN0;
                t[XP_TH_B] = log(rest) + START_EXP[ib] * m->lD0;
                double f = xp_jm_minimise(d, t, MAXEVAL_START);
                if (f < *best_f) {
                    *best_f = f;
                    memcpy(th, t, sizeof(t));
                }
            }
}

/* The first fit into th: the best of the starts on the grid of the Chinchilla part, polished.
 * The hyper laws start twice. Once with every slope and coupling under a prior (the literature's,
 * the warmup's, the weight decay's timescale; weighted with the residual floor until sigma is
 * known) at the prior's centre: a law the runs leave flat exerts no pull on them, and from 0 the
 * minimiser stopped before the weak prior moved them (a random sweep's warmup: slopes 0 where the
 * prior says -1 on ln D and +1 on ln B, so its runs showed no bowl, its law came out flat and the
 * warmup was recommended at 117x its optimum; test_flat_warmup_random). A slot held at its start
 * (hp_slot_held) stays at the centre, the prior's most likely value. Once with the free slopes
 * and couplings at 0, except the weight decay's under its timescale prior (the fit is not convex:
 * on a random sweep of world 4's neighbour, world 5, only this start found the weight decay's
 * bowl). ST_ENUMERIC if no start reaches a finite optimum. */
static st_status first_fit(fit_xp *xp, fit_work *w, xp_jm_data *d, size_t k_wd, double *th)
{
    const xp_model *m = &xp->m;
    double th0[XP_NTH] = {0};
    hyper_starts(xp, w, th0);
    xp_law_priors_set(xp, d, k_wd, PRIOR_SIGMA_MIN);
    xp_level_priors_set(xp, d, PRIOR_SIGMA_MIN);
    if (k_wd != NONE)
        xp_wd_prior_set(xp, d, k_wd, PRIOR_SIGMA_MIN);
    for (size_t k = 0; k < m->n_hp; k++)
        for (size_t q = XP_HP_SLOPE_N; q < XP_HP_LEN(k); q++) {
            size_t j = XP_HP_OFF(k) + q;
            if (d->pw[j] > 0)
                th0[j] = d->pmu[j];
        }
    double best_f = INFINITY;
    start_grid(xp, w, d, th0, th, &best_f);
    int is_free[XP_NTH] = {0}, moved = 0;
    for (size_t i = 0; i < d->n_free; i++)
        is_free[d->free_idx[i]] = 1;
    for (size_t k = 0; k < m->n_hp; k++)
        for (size_t q = XP_HP_SLOPE_N; k != k_wd && q < XP_HP_LEN(k); q++) {
            size_t j = XP_HP_OFF(k) + q;
            if (q != XP_HP_LN_CURV && q != XP_HP_LN_SAT && is_free[j] && th0[j] != 0) {
                th0[j] = 0;
                moved = 1;
            }
        }
    if (moved) /* else the second start is the first */
        start_grid(xp, w, d, th0, th, &best_f);
    if (!isfinite(best_f)) {
        snprintf(xp->err, sizeof(xp->err), "the model fit found no finite optimum");
        return ST_ENUMERIC;
    }
    best_f = xp_jm_minimise(d, th, MAXEVAL_POLISH);
    xp_hyper_flat_restarts(xp, w, d, th, best_f);
    xp_hyper_spikes_flatten(xp, w, d, th);
    return ST_OK;
}

/* Residual sd of ln loss of model th over the usable runs, dof degrees of freedom. */
static double residual_sd(const xp_jm_data *d, const fit_work *w, const double *th, double dof)
{
    double ss = 0;
    for (size_t t = 0; t < w->n_okr; t++) {
        size_t i = w->ok_rows[t];
        double r = xp_jm_row_eval(d, th, i, NULL) - w->ly[i];
        ss += r * r;
    }
    return sqrt(ss / (dof > 1 ? dof : 1));
}

/* The prior on e = ln E (o.prior_e_sd; off by default), centred on ln o.prior_e or, without
 * it, on ln(E_PRIOR_FRAC x the best usable run's loss), weighted as the alpha - beta prior. A sweep
 * of small runs places the sum E + A/N^alpha + B/D^beta better than its parts: on 15 stored
 * make demo sweeps E came out anywhere from e^-10 (the box's floor) to 1.3, and a centre the user
 * can know (0.69 nats per byte, about one bit per character of English) took the median error
 * of the large runs' predicted loss from 9.2% to 3.8%. On llmsim's worlds, whose E is a third of
 * the best run's loss, the fallback centre of one half biased the level by 5% at 100x
 * (docs/algorithms/extrapolation.md, "The irreducible loss"): a prior for what the user knows. */
static void e_prior_set(const fit_xp *xp, const fit_work *w, xp_jm_data *d, double sg)
{
    double sd = xp->o.prior_e_sd, lmin = INFINITY;
    d->w_e = 0;
    if (!(sd > 0))
        return;
    for (size_t t = 0; t < w->n_okr; t++)
        lmin = fmin(lmin, w->ly[w->ok_rows[t]]);
    if (!isfinite(lmin))
        return;
    d->mu_e = xp->o.prior_e > 0 ? log(xp->o.prior_e) : lmin + log(E_PRIOR_FRAC);
    d->sd_e = sd;
    d->w_e = sg * sg / (2 * sd * sd);
}

/* Each usable run's weight in the refit (refit_with_priors) and the replicates (w->wt, 1 before):
 * 1 / (1 + (P / o.far_weight)^2), P its hyperparameters' penalty under the first fit th (off at
 * 0, the default). The penalty's form (a saturating quadratic in each hyperparameter's log) is
 * assumed, and a run far from its optimum carries the form's misfit into E, A and B: on make
 * demo's stored sweeps, refitted without the runs whose learning rate lay outside 1e-3 .. 0.05,
 * the large run's predicted loss moved from -8.5% to -1.7% (seed 3) and from -5.2% to +0.4%
 * (seed 6) of the truth. At 0.2 a run 20% worse than at its optimum weighs 1/2, 60% worse 1/10;
 * the runs still place the bowl. Curve points keep their own weights. Off by default: on a
 * Hugging Face-style simulated sweep it moved the learning rate over the stability boundary
 * (docs/algorithms/extrapolation.md, "Runs far from their optimum"). */
static void far_runs_weigh(const fit_xp *xp, fit_work *w, const xp_jm_data *d, const double *th)
{
    double tau = xp->o.far_weight;
    if (!(tau > 0))
        return;
    for (size_t t = 0; t < w->n_okr; t++) {
        size_t i = w->ok_rows[t];
        /* ln L(N, D) alone: the model without its hyperparameters */
        double lse = xp_jm_eval(th, 0, w->lN[i], w->lD[i], d->lN0, d->lD0, NULL, NULL);
        double delta = 0; /* a categorical level's offset is not a penalty */
        for (size_t f = 0; f < d->n_fac; f++)
            if (d->fq[i * d->n_fac + f] != (size_t)-1)
                delta += th[XP_LV_OFF(d->n_hp, d->fq[i * d->n_fac + f]) + XP_LV_DELTA];
        double P = fmax(exp(xp_jm_row_eval(d, th, i, NULL) - delta - lse) - 1, 0);
        w->wt[i] = 1 / (1 + (P / tau) * (P / tau));
    }
}

/* m->sigma of the first fit th; with a prior on or the far runs weighed (far_runs_weigh), the
 * priors weighted by it (at least PRIOR_SIGMA_MIN), a refit from th and m->sigma of the refit. */
static void refit_with_priors(fit_xp *xp, const fit_work *w, xp_jm_data *d, size_t k_wd, double *th)
{
    xp_model *m = &xp->m;
    double dof = (double)w->n_okr - (double)d->n_free;
    m->sigma = residual_sd(d, w, th, dof);
    double sg = fmax(m->sigma, PRIOR_SIGMA_MIN), sd = xp->o.prior_ab_sd;
    if (k_wd != NONE)
        xp_wd_prior_set(xp, d, k_wd, sg);
    xp_law_priors_set(xp, d, k_wd, sg);
    xp_level_priors_set(xp, d, sg);
    if (sd > 0) {
        d->w_ab = sg * sg / (2 * sd * sd);
        d->sd_ab = sd;
    }
    e_prior_set(xp, w, d, sg);
    if (!(sd > 0) && !(d->w_e > 0) && k_wd == NONE && !(xp->o.prior_law_sd > 0) && !xp->m.n_lv &&
        !(xp->o.far_weight > 0))
        return;
    xp_jm_minimise(d, th, MAXEVAL_POLISH);
    m->sigma = residual_sd(d, w, th, dof);
}

/* ---- the stability boundary ------------------------------------------------------------- */

static int cmp_lnN(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* The boundary's prior rows (see boundary_fit): rows n, n+1, ... of w->z, w->y, appended to
 * w->lg_rows after the n_real real ones (whose z is set). Returns how many were added. */
static size_t add_prior_rows(fit_work *w, size_t n, size_t n_real)
{
    size_t bins = n_real / PRIOR_BIN_RUNS < PRIOR_BINS ? n_real / PRIOR_BIN_RUNS : PRIOR_BINS;
    if (bins < 1)
        bins = 1;
    double *key = w->key;
    for (size_t t = 0; t < n_real; t++) {
        key[2 * t] = w->z[XP_NZ * w->lg_rows[t] + XP_Z_LN];
        key[2 * t + 1] = (double)w->lg_rows[t];
    }
    qsort(key, n_real, 2 * sizeof(double), cmp_lnN);
    for (size_t q = 0; q < bins; q++) {
        size_t a = q * n_real / bins, e = (q + 1) * n_real / bins;
        size_t imax = (size_t)key[2 * a + 1];
        for (size_t t = a; t < e; t++)
            if (w->z[XP_NZ * (size_t)key[2 * t + 1] + XP_Z_LR] > w->z[XP_NZ * imax + XP_Z_LR])
                imax = (size_t)key[2 * t + 1];
        const double *zi = &w->z[XP_NZ * imax];
        double *zr = &w->z[XP_NZ * (n + q)];
        zr[XP_Z_LR] = zi[XP_Z_LR] + PRIOR_DIV_LR;
        zr[XP_Z_LN] = zi[XP_Z_LN];
        zr[XP_Z_W] = zi[XP_Z_W];
        w->y[n + q] = 1;
        w->lg_rows[w->n_lgr++] = n + q;
    }
    return bins;
}

/* The boundary's covariates of the runs in w->lg_rows and their centres m_lr, m_w. The warmup's
 * is how far it falls short of its law's optimum (xp_boundary_w): a warmup counted as a fraction
 * of the run shrinks as the runs grow (a fixed number of steps is a smaller fraction of a longer
 * run), and in its absolute coordinate the boundary read the large run's optimal warmup, shorter
 * than any the sweep tried, as a risk of divergence (docs/algorithms/extrapolation.md,
 * "Stability boundary"). */
static void boundary_covariates(fit_xp *xp, fit_work *w, double slr)
{
    xp_model *m = &xp->m;
    size_t P = xp->P, n_real = w->n_lg_real;
    double sw = 0;
    m->m_lr = slr / (double)n_real;
    for (size_t t = 0; t < n_real; t++) {
        size_t i = w->lg_rows[t];
        double *z = &w->z[XP_NZ * i];
        double dl, sh; /* the learning rate from its level's optimum (the point fit's shift) */
        xp_level_terms(xp, m->th, &xp->x[i * P], &dl, &sh);
        z[XP_Z_LR] = xp->b[i * P + m->lr_param] - sh - m->m_lr;
        z[XP_Z_LN] = w->lN[i] - m->lN0;
        z[XP_Z_W] = xp_boundary_w(xp, w->lN[i], w->lD[i], &xp->b[i * P]);
        sw += z[XP_Z_W];
    }
    m->m_w = sw / (double)n_real;
    for (size_t t = 0; t < n_real; t++)
        w->z[XP_NZ * w->lg_rows[t] + XP_Z_W] -= m->m_w;
}

/* d b_lr* / d ln N of the learning rate's optimum law in th along the compute-optimal path (ln D
 * moving alpha / beta as fast as ln N) at a fixed batch: sN + (alpha / beta) sD, without its
 * couplings to the hypers before it (the batch). The boundary has no batch covariate, and that a
 * larger batch raises the largest stable learning rate as it raises the optimal one is not
 * assumed: the batch's growth along the path, through a coupling the sweep barely places (its
 * prior is 0.5 +- 0.5), made the tied boundary fall too slowly with N and the large run diverge
 * (tests/fit: world 39; tests/study: world 25). NAN when the learning rate is not modelled. */
static double lr_path_slope(const xp_model *m, const double *th)
{
    double r = th[XP_TH_ALPHA] / th[XP_TH_BETA];
    if (m->k_lr == NONE)
        return NAN;
    const double *h = &th[XP_HP_OFF(m->k_lr)];
    double slope = h[XP_HP_SLOPE_N] + r * h[XP_HP_SLOPE_D];
    return isfinite(slope) ? slope : NAN;
}

/* The slope tie into L (see BOUNDARY_TIE_SD), linearised at the untied fit's g; refits g. */
static void boundary_tie(fit_xp *xp, xp_lg_data *L, double *g)
{
    double sd = BOUNDARY_TIE_SD * xp->o.prior_law_sd, s = lr_path_slope(&xp->m, xp->m.th);
    if (!(sd > 0) || !isfinite(s) || !(g[XP_G_LR] > 0))
        return;
    L->tie_slope = s;
    L->tie_w = 1 / (2 * sd * sd * g[XP_G_LR] * g[XP_G_LR]);
    double gt[XP_NG];
    memcpy(gt, g, sizeof(gt));
    if (xp_lg_minimise(L, gt))
        memcpy(g, gt, sizeof(gt));
    else
        L->tie_w = 0;
}

/*
 * The stability boundary on every run whose ln N is known, into m->g (m->has_div) and L.
 * No failed run: a prior instead of "never diverges". The runs are split by ln N into up to
 * PRIOR_BINS groups of equal size; in each, a pseudo-run at e^PRIOR_DIV_LR times the largest
 * learning rate that succeeded (at that run's N and warmup) counts as failed. A recommendation
 * above every learning rate tried carries a divergence risk, and the boundary moves with N as
 * the largest learning rates tried do (a sweep near the front tries them near each size's
 * optimum), not flat from the small runs' large learning rates.
 */
static void boundary_fit(fit_xp *xp, fit_work *w, xp_lg_data *L)
{
    xp_model *m = &xp->m;
    size_t n = xp->n, P = xp->P, n_fail = 0;
    double slr = 0;
    w->n_lgr = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(w->lN[i]))
            continue;
        w->lg_rows[w->n_lgr++] = i;
        slr += xp->b[i * P + m->lr_param];
        n_fail += (size_t)xp->failed[i];
    }
    m->has_div = 0;
    memset(L, 0, sizeof(*L));
    size_t n_real = w->n_lg_real = w->n_lgr;
    int enough = n_real >= BOUNDARY_MIN_RUNS;
    int prior_row = n_fail == 0 && enough && xp->par[m->lr_param].space == FIT_XP_LOG;
    if ((n_fail > 0 || prior_row) && enough) {
        boundary_covariates(xp, w, slr);
        if (prior_row)
            n_fail = add_prior_rows(w, n, n_real);
        L->n = w->n_lgr;
        L->rows = w->lg_rows;
        L->z = w->z;
        L->y = w->y;
        L->use_w = m->wu_param != NONE;
        double g[XP_NG] = {log((double)n_fail / (double)w->n_lgr), LG_START_LR, 0, 0};
        if (xp_lg_minimise(L, g)) {
            boundary_tie(xp, L, g);
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
}

/* ---- bootstrap -------------------------------------------------------------------------- */

/* A resample of the usable runs into w->rows, each drawn run with its curve points (rows
 * n + c): a run's points are correlated with it and go where it goes. Returns the rows. */
static size_t resample_runs(const fit_xp *xp, fit_work *w, st_rng *rng)
{
    size_t m = 0;
    for (size_t t = 0; t < w->n_okr; t++) {
        size_t i = w->ok_rows[st_rng_uniform_int(rng, w->n_okr)];
        w->rows[m++] = i;
        for (size_t c = xp->cp_off ? xp->cp_off[i] : 0; xp->cp_off && c < xp->cp_off[i + 1]; c++)
            w->rows[m++] = xp->n + c;
    }
    return m;
}

/* A replicate's boundary tie: to its own learning-rate law's path slope (th), the tie's sd drawn
 * as the other priors' are; the weight as the point fit's. */
static void boundary_tie_draw(const fit_xp *xp, xp_lg_data *L, const xp_prior_centres *c,
                              const double *th, st_rng *rng)
{
    double s = lr_path_slope(&xp->m, th);
    if (!isfinite(s))
        s = c->tie_slope;
    L->tie_slope = s + BOUNDARY_TIE_SD * xp->o.prior_law_sd * st_rng_gaussian(rng);
    L->tie_w = c->tie_w;
}

/* The replicates of the predicted loss's interval (o.interval_prior_draw; none when it equals
 * prior_draw or there are no replicates: then m->th_iv is m->th_rep): half as many as R, each a
 * resample of the runs under prior centres drawn with their full sds (K = 1 by default), the
 * loss model only. The recommendation's replicates draw them at K = 0.5 (docs/algorithms/
 * extrapolation.md, "Replicates draw their priors"), which leaves the doubt of the laws the
 * runs cannot place half seen: on the controller's branch sweeps of bench-extrapolate the
 * interval at 100x then covered 16 of 20 worlds, at K = 1 18 of 20. Runs after the
 * recommendation's replicates on the same stream, so those are unchanged. */
static st_status interval_replicates(fit_xp *xp, fit_work *w, xp_jm_data *d, xp_lg_data *L,
                                     const xp_prior_centres *c0, st_rng *rng)
{
    xp_model *m = &xp->m;
    double kap = xp->o.interval_prior_draw;
    size_t R = (xp->o.n_boot + 1) / 2;
    m->th_iv = m->th_rep;
    m->n_iv = m->n_rep;
    if (kap == xp->o.prior_draw || R == 0)
        return ST_OK;
    double *iv = malloc(R * XP_NTH * sizeof(double));
    if (!iv)
        return ST_ENOMEM;
    size_t n_iv = 0;
    xp_prior_centres_restore(d, L, c0); /* K = 0: every replicate under the point fit's */
    for (size_t r = 0; r < R; r++) {
        double th[XP_NTH];
        memcpy(th, m->th, sizeof(th));
        d->n = resample_runs(xp, w, rng);
        if (kap > 0)
            xp_prior_centres_draw(d, c0, rng, kap);
        double f = xp_jm_minimise(d, th, MAXEVAL_BOOT);
        if (isfinite(f))
            f = xp_hyper_spikes_hold(xp, w, d, th, f);
        if (!isfinite(f))
            continue;
        xp_hyper_flat_anchor(xp, w, w->rows, d->n, th);
        memcpy(&iv[n_iv++ * XP_NTH], th, sizeof(th));
    }
    if (n_iv < 2) { /* too few to say: the recommendation's replicates give the interval */
        free(iv);
        return ST_OK;
    }
    m->th_iv = iv;
    m->n_iv = n_iv;
    return ST_OK;
}

/* R replicates into m->th_rep, m->g_rep: resample the usable runs (and the boundary's runs,
 * keeping its prior rows), refit both models from the point fit. A replicate whose joint fit
 * fails is dropped; one whose boundary fit fails keeps the point boundary. No allocation in the
 * loop: the resamples go to w->rows and w->lg_boot. */
static st_status bootstrap(fit_xp *xp, fit_work *w, xp_jm_data *d, xp_lg_data *L)
{
    xp_model *m = &xp->m;
    size_t R = xp->o.n_boot, n = xp->n, n_real = w->n_lg_real, n_prior = w->n_lgr - n_real;
    m->n_rep = 0;
    m->th_rep = malloc((R ? R : 1) * XP_NTH * sizeof(double));
    m->g_rep = malloc((R ? R : 1) * XP_NG * sizeof(double));
    if (!m->th_rep || !m->g_rep)
        return ST_ENOMEM;
    st_rng *rng = NULL;
    if (st_rng_create(xp->o.seed + 1, &rng) != ST_OK)
        return ST_ENOMEM;
    d->rows = w->rows;
    xp_prior_centres c0;
    xp_prior_centres_save(d, L, &c0);
    double kap = xp->o.prior_draw;
    int rand_priors = kap > 0;
    for (size_t r = 0; r < R; r++) {
        double th[XP_NTH], g[XP_NG];
        memcpy(th, m->th, sizeof(th));
        d->n = resample_runs(xp, w, rng);
        if (rand_priors)
            xp_prior_centres_draw(d, &c0, rng, kap);
        double f = xp_jm_minimise(d, th, MAXEVAL_BOOT);
        if (isfinite(f))
            f = xp_hyper_spikes_hold(xp, w, d, th, f);
        memcpy(g, m->g, sizeof(g));
        if (m->has_div) {
            for (size_t t = 0; t < n_real; t++)
                w->lg_boot[t] = w->lg_rows[st_rng_uniform_int(rng, n_real)];
            for (size_t t = 0; t < n_prior; t++)
                w->lg_boot[n_real + t] = n + t;
            L->rows = w->lg_boot;
            if (rand_priors && c0.tie_w > 0 && isfinite(f))
                boundary_tie_draw(xp, L, &c0, th, rng);
            if (!xp_lg_minimise(L, g))
                memcpy(g, m->g, sizeof(g));
        }
        if (!isfinite(f))
            continue;
        xp_hyper_flat_anchor(xp, w, w->rows, d->n, th);
        memcpy(&m->th_rep[m->n_rep * XP_NTH], th, sizeof(th));
        memcpy(&m->g_rep[m->n_rep * XP_NG], g, sizeof(g));
        m->n_rep++;
    }
    if (m->n_rep == 0) { /* no replicates: the point fit stands alone */
        memcpy(m->th_rep, m->th, sizeof(m->th));
        memcpy(m->g_rep, m->g, sizeof(m->g));
        m->n_rep = 1;
    }
    st_status s = interval_replicates(xp, w, d, L, &c0, rng);
    st_rng_destroy(rng);
    xp_prior_centres_restore(d, L, &c0);
    return s;
}

/* ---- curve points against the finals ----------------------------------------------------- */

/* Which curve points a helper acts on: those study/ derived from a curve, the cooldown branches'
 * measured finals (fit_xp_set_curve_points' branch flags), or both. */
typedef enum { PTS_DERIVED, PTS_BRANCH, PTS_ALL } pts_kind;

static int pts_is(const fit_xp *xp, size_t c, pts_kind k)
{
    return k == PTS_ALL || (xp->cp_branch[c] != 0) == (k == PTS_BRANCH);
}

static size_t pts_count(const fit_xp *xp, pts_kind k)
{
    size_t n = 0;
    for (size_t c = 0; c < xp->n_cp; c++)
        n += pts_is(xp, c, k);
    return n;
}

/* The weights of the curve points' rows (n .. n + n_cp - 1) of kind k set to 0, so that a fit
 * leaves them out; curve_weights_restore puts back the ones saved in keep. */
static void curve_weights_zero(const fit_xp *xp, fit_work *w, pts_kind k)
{
    for (size_t c = 0; c < xp->n_cp; c++)
        if (pts_is(xp, c, k))
            w->wt[xp->n + c] = 0;
}

static void curve_weights_restore(const fit_xp *xp, fit_work *w, const double *keep, pts_kind k)
{
    for (size_t c = 0; c < xp->n_cp; c++)
        if (pts_is(xp, c, k))
            w->wt[xp->n + c] = keep[c];
}

/* Under th: the mean over usable runs with points of kind k of (those points' mean residual in
 * ln loss - the run's own residual), its standard error, and how many runs. */
static size_t curve_bias(const fit_xp *xp, const fit_work *w, const xp_jm_data *d, const double *th,
                         pts_kind kind, double *bias, double *se)
{
    double s = 0, ss = 0;
    size_t m = 0;
    for (size_t t = 0; t < w->n_okr; t++) {
        size_t i = w->ok_rows[t], k = 0;
        double rc = 0;
        for (size_t c = xp->cp_off[i]; c < xp->cp_off[i + 1]; c++)
            if (pts_is(xp, c, kind)) {
                rc += w->ly[xp->n + c] - xp_jm_row_eval(d, th, xp->n + c, NULL);
                k++;
            }
        if (!k)
            continue;
        double ri = w->ly[i] - xp_jm_row_eval(d, th, i, NULL);
        rc = rc / (double)k - ri;
        s += rc;
        ss += rc * rc;
        m++;
    }
    *bias = m ? s / (double)m : 0;
    double var = m > 1 ? (ss - (double)m * *bias * *bias) / (double)(m - 1) : INFINITY;
    *se = sqrt(fmax(var, 0) / (double)(m ? m : 1));
    return m;
}

/* 1 (with the warning `what`) when, under th, the points of kind k lie off the law relative to
 * their own runs' finals by more than CURVE_BIAS_Z standard errors and CURVE_BIAS_SIGMA residual
 * sds. */
static int curve_points_off(fit_xp *xp, const fit_work *w, const xp_jm_data *d, const double *th,
                            pts_kind k, const char *what)
{
    double bias, se, dof = (double)w->n_okr - (double)d->n_free;
    double sigma = residual_sd(d, w, th, dof);
    size_t m = curve_bias(xp, w, d, th, k, &bias, &se);
    if (!(m && fabs(bias) > CURVE_BIAS_Z * se && fabs(bias) > CURVE_BIAS_SIGMA * sigma))
        return 0;
    char msg[360];
    snprintf(msg, sizeof(msg),
             "%s left out: on %zu runs they lie %+.2f%% off the law %s, "
             "relative to their own run's final (%.1f standard errors): %s",
             k == PTS_BRANCH ? "cooldown branches" : "curve points", m, 100 * (exp(bias) - 1),
             k == PTS_BRANCH ? "fitted with them" : "fitted on the finals",
             fabs(bias) / fmax(se, 1e-300), what);
    xp_add_warning(xp, FIT_XP_WARN_CURVES, msg);
    return 1;
}

/* With curve points, two tests (docs/algorithms/extrapolation.md, "Curve points"):
 *  - derived points are judged by the law fitted on the finals alone: they stay out (weight 0 in
 *    every fit after, the bootstrap's too) when they disagree with it (the curve law does not
 *    describe the trainer's curves; points wrong together would move the laws);
 *  - cooldown branches are measured finals, and where they disagree with the finals' law they
 *    carry what the finals cannot say (the loss at fewer tokens of the same setting: beta, the
 *    hypers' D slopes). They are judged by the law fitted with them: they stay out only when even
 *    that law leaves them off (a loss the model's family cannot describe).
 * Without points: the first fit. */
static st_status first_fit_curves(fit_xp *xp, fit_work *w, xp_jm_data *d, size_t k_wd, double *th)
{
    if (!xp->n_cp)
        return first_fit(xp, w, d, k_wd, th);
    double *keep = malloc(xp->n_cp * sizeof(double));
    if (!keep)
        return ST_ENOMEM;
    memcpy(keep, &w->wt[xp->n], xp->n_cp * sizeof(double));
    curve_weights_zero(xp, w, PTS_ALL);
    st_status s = first_fit(xp, w, d, k_wd, th);
    int refit = 0;
    if (s == ST_OK && pts_count(xp, PTS_DERIVED) &&
        !curve_points_off(xp, w, d, th, PTS_DERIVED,
                          "the curve law does not describe these runs' curves")) {
        curve_weights_restore(xp, w, keep, PTS_DERIVED);
        refit = 1;
    }
    if (s == ST_OK && pts_count(xp, PTS_BRANCH)) {
        curve_weights_restore(xp, w, keep, PTS_BRANCH);
        s = first_fit(xp, w, d, k_wd, th);
        refit = s == ST_OK && curve_points_off(xp, w, d, th, PTS_BRANCH,
                                               "the model cannot describe these branches' losses");
        if (refit)
            curve_weights_zero(xp, w, PTS_BRANCH);
    }
    if (s == ST_OK && refit)
        s = first_fit(xp, w, d, k_wd, th);
    free(keep);
    return s;
}

/* ---- the stages ------------------------------------------------------------------------- */

/* Fits everything from the runs into xp->m (its point fit and R replicates). */
static st_status model_fit(fit_xp *xp, fit_work *w)
{
    xp_model *m = &xp->m;
    choose_hypers(xp);
    st_status s = choose_factors(xp);
    if (s == ST_OK)
        s = xp_sizes_fit(xp);
    if (s == ST_OK)
        s = work_alloc(w, xp->n, xp->n_cp, xp->cp_max, m->n_hp ? m->n_hp : 1, m->n_fac);
    if (s == ST_OK)
        s = assemble_runs(xp, w);
    if (s != ST_OK)
        return s;
    size_t k_wd = xp_wd_prior_hyper(xp);
    xp_jm_data d;
    jm_setup(xp, w, k_wd, &d);
    double th[XP_NTH];
    s = first_fit_curves(xp, w, &d, k_wd, th);
    if (s != ST_OK)
        return s;
    far_runs_weigh(xp, w, &d, th);
    refit_with_priors(xp, w, &d, k_wd, th);
    xp_hyper_spikes_flatten(xp, w, &d, th); /* the priors' weights may have made one */
    xp_hyper_flat_anchor(xp, w, w->ok_rows, w->n_okr, th);
    xp_hyper_flat_warn(xp, w, th);
    xp_exp_limit_warn(xp, th);
    memcpy(m->th, th, sizeof(th));
    xp_lg_data L;
    boundary_fit(xp, w, &L);
    return bootstrap(xp, w, &d, &L);
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
