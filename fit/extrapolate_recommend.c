/*
 * extrapolate_recommend.c — the model's recommendation at compute C (xp_model_recommend): the
 * setting that minimises the expected loss over the bootstrap replicates with failed runs charged
 * fail_loss, subject to P(fail) <= max_p_diverge, rounded as it will run, with its prediction and
 * the intervals of each replicate's own optimum; the model's predictions at a setting
 * (fit_xp_predict, fit_xp_predict_replicates). The model is in extrapolate_model.c, its fit in
 * extrapolate_model_fit.c, the accessors of its laws in extrapolate_access.c;
 * docs/algorithms/extrapolation.md.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

#include "fit/extrapolate_int.h"
#include "fit/fit_int.h"

#define NONE ((size_t)-1)

/* The compute-optimal allocation of a replicate: ln N on a grid of ALLOC_STEP either side of
 * ln(N D) / 2, ALLOC_STEPS steps each way (N / D within e^-12 .. e^12). */
#define ALLOC_STEPS    200
#define ALLOC_STEP     0.03
/* The recommendation's search: ln N within SEARCH_N_STEPS steps of SEARCH_STEP of the point fit's
 * compute-optimal ln N (a factor e^-1 .. e^1), the learning rate's basic coordinate shifted
 * from its law's value by SHIFT_LO_STEPS .. SHIFT_HI_STEPS steps (x e^-1.5 .. e^0.5 on a log
 * scale; mostly downwards, away from the stability boundary above). */
#define SEARCH_STEP    0.05
#define SEARCH_N_STEPS 20
#define SHIFT_LO_STEPS (-30)
#define SHIFT_HI_STEPS 10
/* refine_hypers: REFINE_PASSES passes of REFINE_STEPS + 1 candidates per hyperparameter, the
 * learning rate and batch within REFINE_WINDOW (ln) of the law's value, the others in the range
 * the successful runs tried widened by REFINE_WIDEN of it on each side. */
#define REFINE_PASSES  2
#define REFINE_STEPS   60
#define REFINE_WINDOW  1.5
#define REFINE_WIDEN   0.25
/* Rounding the size moved ln N by more than this: the tokens take up the difference. */
#define ROUND_TOL      1e-12
/* The recommendation's tokens per parameter stays within the successful runs' range, widened by
 * this factor on each side: a law fitted on D/N in [a, b] says little about the loss far outside
 * it (tiny models saturate; the fitted exponents trade against each other), so the compute is
 * extrapolated along ratios the sweep tried (docs/algorithms/extrapolation.md). */
#define RATIO_WIDEN    1.25

/* ---- the model at a setting ------------------------------------------------------------- */

/* The centred coordinates bh of the hypers in the full basic row b (NAN where inactive); the
 * model th with the learning rate's optimum moved by b's levels into tl (XP_HP_OFF(n_hp)
 * slots), their offset of ln L into *delta. */
static void model_at_levels(const fit_xp *xp, const double *th, const double *b, double *bh,
                            double *tl, double *delta)
{
    const xp_model *m = &xp->m;
    double shift;
    xp_level_terms(xp, th, b, delta, &shift);
    for (size_t k = 0; k < m->n_hp; k++)
        bh[k] = b[m->hp_param[k]] - m->hp_mean[k];
    memcpy(tl, th, XP_HP_OFF(m->n_hp) * sizeof(double));
    if (m->k_lr != NONE)
        tl[XP_HP_OFF(m->k_lr) + XP_HP_ICPT] += shift;
}

/* ln L of model th at lN, lD and the basic coordinates of a full parameter row b (P). */
static double model_lnL(const fit_xp *xp, const double *th, double lN, double lD, const double *b)
{
    const xp_model *m = &xp->m;
    double bh[XP_MAX_HP], tl[XP_NTH], delta;
    model_at_levels(xp, th, b, bh, tl, &delta);
    return xp_jm_eval(tl, m->n_hp, lN, lD, m->lN0, m->lD0, bh, NULL) + delta;
}

/* The boundary's centred covariates z (XP_NZ) of the setting b at (lN, lD), as the fit's of a
 * run: the same for every replicate, so computed once per setting. */
static void model_boundary_z(const fit_xp *xp, double lN, double lD, const double *b, double *z)
{
    const xp_model *m = &xp->m;
    double delta, shift; /* the learning rate from its level's optimum (the point fit's) */
    xp_level_terms(xp, m->th, b, &delta, &shift);
    z[XP_Z_LR] = b[m->lr_param] - shift - m->m_lr;
    z[XP_Z_LN] = lN - m->lN0;
    z[XP_Z_W] = m->wu_param != NONE ? xp_boundary_w(xp, lN, lD, b) - m->m_w : 0;
}

/* P(diverge) under the boundary's coefficients g at the covariates z (model_boundary_z). */
static double model_pdiv(const xp_model *m, const double *g, const double *z)
{
    if (!m->has_div)
        return 0;
    double eta =
        g[XP_G_ICPT] + g[XP_G_LR] * z[XP_Z_LR] + g[XP_G_LN] * z[XP_Z_LN] + g[XP_G_W] * z[XP_Z_W];
    return 1 / (1 + exp(-eta));
}

/* Basic coordinate of hyper k's optimum under th at (lN, lD), given the earlier hypers and the
 * levels in the full basic row b (the learning rate's moved by its level's shift). */
static double hp_opt(const fit_xp *xp, const double *th, size_t k, double lN, double lD,
                     const double *b)
{
    const xp_model *m = &xp->m;
    double bh[XP_MAX_HP], tl[XP_NTH], delta;
    model_at_levels(xp, th, b, bh, tl, &delta);
    return xp_hp_optimum(&tl[XP_HP_OFF(k)], k, lN - m->lN0, lD - m->lD0, bh) + m->hp_mean[k];
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
    xp_settle_active(xp, b);
    for (size_t k = 0; k < m->n_hp; k++) {
        size_t j = m->hp_param[k];
        if (!isnan(b[j])) /* an inactive conditional hyper stays NAN */
            b[j] = hp_opt(xp, th, k, lN, lD, b) + (j == m->lr_param ? s : 0);
    }
}

/* The SIZE parameter solved for (index into m->size_param, NONE if none) set in b so that the
 * SIZE regression gives ln N = lN. */
static void solve_size(const fit_xp *xp, size_t solve, double lN, double *b)
{
    const xp_model *m = &xp->m;
    if (solve == NONE)
        return;
    size_t j = m->size_param[solve];
    double acc = m->size_c[0];
    for (size_t s = 0; s < m->n_size; s++) {
        size_t i = m->size_param[s];
        if (s != solve)
            acc += m->size_c[1 + s] *
                   (m->size_log ? log(xp_from_basic(xp->par[i].space, b[i])) : b[i]);
    }
    double r = (lN - acc) / m->size_c[1 + solve];
    if (!m->size_log)
        b[j] = r;
    else if (isfinite(exp(r)) && exp(r) > 0)
        b[j] = xp_to_basic(xp->par[j].space, exp(r));
}

/* The STEPS parameter solved for (m->tok_solve) set in the basic row b so that the tokens
 * regression, with b's batch, gives ln D = lD (nothing when the sweep has no such parameter). */
static void solve_tokens(const fit_xp *xp, double lD, double *b)
{
    const xp_model *m = &xp->m;
    if (!m->n_tok || m->tok_solve == NONE)
        return;
    double acc = m->tok_c[0];
    for (size_t q = 0; q < m->n_tok; q++) {
        size_t j = m->tok_param[q];
        if (q != m->tok_solve)
            acc += m->tok_c[1 + q] * log(xp_from_basic(xp->par[j].space, b[j]));
    }
    size_t j = m->tok_param[m->tok_solve];
    double v = exp((lD - acc) / m->tok_c[1 + m->tok_solve]);
    if (isfinite(v) && v > 0)
        b[j] = xp_to_basic(xp->par[j].space, v);
}

/* ln N fixed by the levels in the basic row b when a categorical sets the model size
 * (m->size_fac), else NAN: the recommendation can only train its levels' sizes. */
static double level_lN(const fit_xp *xp, const double *b)
{
    const xp_model *m = &xp->m;
    if (m->size_fac == NONE)
        return NAN;
    size_t j = m->fac_param[m->size_fac];
    double l = b[j];
    return l >= 0 && l < (double)xp->par[j].n_levels ? m->size_fac_lN[(size_t)l] : NAN;
}

/* The compute-optimal ln N of replicate th at ln(N D) = lND (its Chinchilla part on a grid). */
static double best_lN(const double *th, double lND)
{
    double best = INFINITY, arg = 0.5 * lND;
    for (int t = -ALLOC_STEPS; t <= ALLOC_STEPS; t++) {
        double lN = 0.5 * lND + ALLOC_STEP * t, lD = lND - lN;
        double tN = th[XP_TH_A] - th[XP_TH_ALPHA] * lN, tD = th[XP_TH_B] - th[XP_TH_BETA] * lD;
        double v = exp(tN) + exp(tD);
        if (v < best) {
            best = v;
            arg = lN;
        }
    }
    return arg;
}

/* Scratch values predict_reps needs: one per replicate of either set. */
static size_t reps_scratch(const xp_model *m)
{
    return m->n_rep > m->n_iv ? m->n_rep : m->n_iv;
}

/*
 * The prediction at the setting b (basic coordinates) at (lN, lD): the median over the interval's
 * replicates (m->th_iv) of ln L with the interval exp(median +- z sqrt(var_r ln L + sigma^2)) at
 * the options' level, and the mean P(diverge) over the recommendation's. v: reps_scratch values.
 */
static void predict_reps(const fit_xp *xp, double lN, double lD, const double *b, double *v,
                         double *objective, double *lo, double *hi, double *p_diverge)
{
    const xp_model *m = &xp->m;
    size_t R = m->n_iv;
    double mean = 0, var = 0, pm = 0, zb[XP_NZ];
    model_boundary_z(xp, lN, lD, b, zb);
    for (size_t r = 0; r < m->n_rep; r++)
        pm += model_pdiv(m, &m->g_rep[r * XP_NG], zb) / (double)m->n_rep;
    for (size_t r = 0; r < R; r++) {
        v[r] = model_lnL(xp, &m->th_iv[r * XP_NTH], lN, lD, b);
        mean += v[r] / (double)R;
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
    double E = 0, P = 0, z[XP_NZ];
    model_boundary_z(xp, lN, lD, b, z);
    for (size_t r = 0; r < m->n_rep; r++) {
        double L = exp(model_lnL(xp, &m->th_rep[r * XP_NTH], lN, lD, b));
        double p = model_pdiv(m, &m->g_rep[r * XP_NG], z);
        E += (1 - p) * L + p * m->fail_loss;
        P += p;
    }
    *pm = P / (double)m->n_rep;
    return E / (double)m->n_rep;
}

/* ---- the recommendation ----------------------------------------------------------------- */

/* The candidates of hyper k in refine_hypers: [*lo, *hi] in basic coordinates; law: its value at
 * the start. */
static void refine_range(const fit_xp *xp, size_t k, double law, double *lo, double *hi)
{
    size_t P = xp->P, j = xp->m.hp_param[k];
    if (xp->role[j] != FIT_XP_OTHER) {
        *lo = law - REFINE_WINDOW;
        *hi = law + REFINE_WINDOW;
        return;
    }
    double l = INFINITY, h = -INFINITY;
    for (size_t i = 0; i < xp->n; i++)
        if (!xp->failed[i] && !isnan(xp->x[i * P + j])) {
            l = fmin(l, xp->b[i * P + j]);
            h = fmax(h, xp->b[i * P + j]);
        }
    double w = h - l;
    *lo = l - REFINE_WIDEN * w;
    *hi = h + REFINE_WIDEN * w;
}

/*
 * Coordinate descent on each modelled hyperparameter: the value minimising the expected loss
 * over the replicates with P(diverge) <= the limit (never raising P(diverge) above it or above
 * the start's). Replicates that disagree on an optimum pull the choice to where most of them
 * agree instead of following the point fit's law. Candidates: the learning rate and the batch
 * near the law's value; other hyperparameters (whose optima the sweep does not show moving in a
 * known way) within the range the successful runs tried, widened (refine_range).
 */
static void refine_hypers(fit_xp *xp, double lN, double lD, double *b)
{
    const xp_model *m = &xp->m;
    double pm0, E0 = expected_loss(xp, lN, lD, b, &pm0);
    double plim = fmax(xp->o.max_p_diverge, pm0);
    double law[XP_MAX_HP]; /* the start's values: the second pass may not walk further from them */
    for (size_t k = 0; k < m->n_hp; k++)
        law[k] = b[m->hp_param[k]];
    for (int pass = 0; pass < REFINE_PASSES; pass++)
        for (size_t k = 0; k < m->n_hp; k++) {
            size_t j = m->hp_param[k];
            double lo, hi;
            if (isnan(b[j]))
                continue; /* inactive at the recommended levels */
            refine_range(xp, k, law[k], &lo, &hi);
            double best = b[j];
            for (int t = 0; t <= REFINE_STEPS; t++) {
                double v = xp_finish_value(
                    xp, j,
                    xp_from_basic(xp->par[j].space, lo + (hi - lo) * t / (double)REFINE_STEPS),
                    NULL);
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

/* Scratch of the recommendation, one allocation. */
typedef struct rec_work {
    double *base; /* P: the basic row of the parameters the model does not set */
    double *b;    /* P: the recommendation's basic row */
    double *bq;   /* P: a replicate's */
    double *vals; /* R + 1 */
    double *repv; /* R × P: each replicate's optimum */
    double *repN, *repD;
    double *keep; /* P: a setting kept aside */
    size_t solve; /* the SIZE parameter solved for ln N (index into m->size_param), NONE */
    int use_off;  /* rec_search's settings: the laws' values plus off[k] (research_refined) */
    double off[XP_MAX_HP];
} rec_work;

static st_status rec_alloc(rec_work *w, size_t P, size_t R)
{
    double *p = malloc((4 * P + (R + 1) + R * P + 2 * R) * sizeof(double));
    if (!p)
        return ST_ENOMEM;
    w->use_off = 0;
    w->base = p;
    w->b = w->base + P;
    w->bq = w->b + P;
    w->keep = w->bq + P;
    w->vals = w->keep + P;
    w->repv = w->vals + R + 1;
    w->repN = w->repv + R * P;
    w->repD = w->repN + R;
    return ST_OK;
}

/* FIT_XP_WARN_SHAPE for SIZE parameter j (not the one solved for N) when every front run has
 * the same value of it and that value is a bound of its range: the front law is flat because
 * the front never left the bound, and the model (which sees j only through N) cannot say what
 * another value would be worth at the target. */
static void warn_shape(fit_xp *xp, size_t j)
{
    const fit_xp_param *p = &xp->par[j];
    double v0 = NAN;
    for (size_t g = 0; g < xp->n_front; g++) {
        double v = xp->x[xp->front_run[g] * xp->P + j];
        if (isnan(v0))
            v0 = v;
        else if (!(fabs(v - v0) <= 1e-9 * fmax(1.0, fabs(v0))))
            return;
    }
    double tol = 1e-9 * fmax(1.0, fabs(v0));
    const char *side = fabs(v0 - p->min) <= tol   ? "lowest"
                       : fabs(v0 - p->max) <= tol ? "highest"
                                                  : NULL;
    if (!side || xp->n_front < 2)
        return;
    char msg[512];
    snprintf(msg, sizeof(msg),
             "%s is %.6g, the %s searched, on every run of the Pareto front: the loss law sees it "
             "only through N, so the sweep cannot say whether another %s would do better at the "
             "target (runs of other %s values near the target's N would)",
             p->name, v0, side, p->name, p->name);
    xp_add_warning(xp, FIT_XP_WARN_SHAPE, msg);
}

/* The base row: the best front group's values; the SIZE parameter to solve for (the one ln N
 * depends on most); the other SIZE parameters from the front law at C. */
static void rec_base(fit_xp *xp, double C, rec_work *w)
{
    const xp_model *m = &xp->m;
    size_t P = xp->P, best_run = xp->front_run[xp->n_front - 1];
    for (size_t j = 0; j < P; j++)
        w->base[j] = xp->b[best_run * P + j];
    double cmax = 0;
    w->solve = NONE;
    for (size_t s = 0; s < m->n_size; s++)
        if (fabs(m->size_c[1 + s]) > cmax) {
            cmax = fabs(m->size_c[1 + s]);
            w->solve = s;
        }
    for (size_t s = 0; s < m->n_size; s++) {
        size_t j = m->size_param[s];
        if (s == w->solve || !xp->front_law_ok[j])
            continue;
        warn_shape(xp, j);
        double v = xp_from_basic(xp->par[j].space,
                                 xp->front_coef[2 * j] + xp->front_coef[2 * j + 1] * log(C));
        w->base[j] = xp_to_basic(xp->par[j].space, xp_finish_value(xp, j, v, NULL));
    }
}

/* The range of ln N at ln(N D) = lND whose tokens per parameter lie within the successful runs'
 * (widened by RATIO_WIDEN): [*lo, *hi]; the whole line when no run gives both N and D. */
static void ratio_range(const fit_xp *xp, double lND, double *lo, double *hi)
{
    double rmin = INFINITY, rmax = -INFINITY;
    for (size_t i = 0; i < xp->n; i++) {
        if (!isfinite(xp->obj[i]) || !(xp->N[i] > 0) || !(xp->D[i] > 0))
            continue;
        double r = log(xp->D[i] / xp->N[i]);
        rmin = fmin(rmin, r);
        rmax = fmax(rmax, r);
    }
    *lo = -INFINITY;
    *hi = INFINITY;
    if (!(rmax >= rmin))
        return;
    double wden = log(RATIO_WIDEN);
    /* ln D - ln N = lND - 2 ln N in [rmin - w, rmax + w] */
    *lo = 0.5 * (lND - (rmax + wden));
    *hi = 0.5 * (lND - (rmin - wden));
}

/* setting_basic into w->b, plus w->off on every hyper but the learning rate when w->use_off. */
static void setting_at(const fit_xp *xp, double lN, double lD, double s, rec_work *w)
{
    const xp_model *m = &xp->m;
    setting_basic(xp, m->th, lN, lD, s, w->base, w->b);
    for (size_t k = 0; w->use_off && k < m->n_hp; k++) {
        size_t j = m->hp_param[k];
        if (j != m->lr_param && !isnan(w->b[j]))
            w->b[j] += w->off[k];
    }
}

/* (ln N, lr shift) minimising the expected loss over the replicates with P(fail) <=
 * max_p_diverge, around the point fit's compute-optimal ln N (kept within the sweep's tokens
 * per parameter, ratio_range; warn: say so when the law's optimum lies outside it); the safest
 * candidate if none qualifies. Returns the expected loss of the choice, INFINITY when none
 * qualified. */
static double rec_search(fit_xp *xp, double lND, rec_work *w, int warn, double *lN_out,
                         double *s_out)
{
    const xp_model *m = &xp->m;
    double lN_lo, lN_hi, lN_pt = best_lN(m->th, lND), fixed = level_lN(xp, w->base);
    ratio_range(xp, lND, &lN_lo, &lN_hi);
    if (isfinite(fixed)) { /* a level's size: the tokens alone take the compute */
        if ((fixed < lN_lo || fixed > lN_hi) && warn) {
            char msg[240];
            snprintf(msg, sizeof(msg),
                     "the recommended level's model size (%.3g) puts the large run at %.3g tokens "
                     "per parameter, outside the sweep's range [%.3g, %.3g]: the loss law is "
                     "extrapolated there",
                     exp(fixed), exp(lND - 2 * fixed), exp(lND - 2 * lN_hi) * RATIO_WIDEN,
                     exp(lND - 2 * lN_lo) / RATIO_WIDEN);
            xp_add_warning(xp, FIT_XP_WARN_RATIO, msg);
        }
        lN_lo = lN_hi = lN_pt = fixed;
    }
    if ((lN_pt < lN_lo || lN_pt > lN_hi) && warn) {
        char msg[200];
        snprintf(msg, sizeof(msg),
                 "the fitted law's compute-optimal split (%.3g tokens per parameter) lies outside "
                 "the sweep's range [%.3g, %.3g]: the recommendation stays inside it",
                 exp(lND - 2 * lN_pt), exp(lND - 2 * lN_hi) * RATIO_WIDEN,
                 exp(lND - 2 * lN_lo) / RATIO_WIDEN);
        xp_add_warning(xp, FIT_XP_WARN_RATIO, msg);
    }
    lN_pt = fmin(fmax(lN_pt, lN_lo), lN_hi);
    double best_E = INFINITY, best_lN_v = lN_pt, best_s = 0, minp = INFINITY;
    double minp_lN = lN_pt, minp_s = 0;
    for (int it = -SEARCH_N_STEPS; it <= SEARCH_N_STEPS; it++) {
        double lN = lN_pt + SEARCH_STEP * it, lD = lND - lN;
        if (lN < lN_lo || lN > lN_hi)
            continue;
        for (int is = SHIFT_LO_STEPS; is <= SHIFT_HI_STEPS; is++) {
            double s = SEARCH_STEP * is;
            setting_at(xp, lN, lD, s, w);
            double pm, E = expected_loss(xp, lN, lD, w->b, &pm);
            if (pm < minp) {
                minp = pm;
                minp_lN = lN;
                minp_s = s;
            }
            if (pm <= xp->o.max_p_diverge && E < best_E) {
                best_E = E;
                best_lN_v = lN;
                best_s = s;
            }
        }
    }
    if (!isfinite(best_E)) {
        best_lN_v = minp_lN;
        best_s = minp_s;
    }
    *lN_out = best_lN_v;
    *s_out = best_s;
    return best_E;
}

/* The setting w->b (at lN, lD = lND - lN) as it will run: clamped and rounded into xp->rec; its
 * N, D (the tokens take up the size's rounding, so the run costs C), prediction and P(diverge)
 * into xp->res. */
static void rec_finish(fit_xp *xp, double lN, double lND, rec_work *w)
{
    size_t P = xp->P;
    double lD = lND - lN;
    xp_clamp_reset(xp);
    for (size_t j = 0; j < P; j++)
        xp->rec[j] = xp_finish_rec(xp, j, xp_from_basic(xp->par[j].space, w->b[j]));
    xp_clamp_warn(xp);
    double lNr = xp_model_lnN(xp, xp->rec), lDr = xp_model_lnD(xp, xp->rec);
    if (isfinite(lNr) && isfinite(lDr) && fabs(lNr - lN) > ROUND_TOL) {
        for (size_t j = 0; j < P; j++)
            if (xp->role[j] == FIT_XP_D) {
                xp->rec[j] = xp_finish_value(xp, j, exp(lND - lNr), NULL);
                lDr = log(xp->rec[j]);
            }
        if (xp->m.n_tok && xp->m.tok_solve != NONE) { /* the steps take it up */
            size_t j = xp->m.tok_param[xp->m.tok_solve];
            solve_tokens(xp, lND - lNr, w->b);
            xp->rec[j] = xp_finish_value(xp, j, xp_from_basic(xp->par[j].space, w->b[j]), NULL);
            lDr = xp_model_lnD(xp, xp->rec);
        }
    }
    if (!isfinite(lNr))
        lNr = lN;
    if (!isfinite(lDr))
        lDr = lD;
    for (size_t j = 0; j < P; j++)
        w->b[j] = xp_to_basic(xp->par[j].space, xp->rec[j]);
    predict_reps(xp, lNr, lDr, w->b, w->vals, &xp->res.objective, &xp->res.objective_lo,
                 &xp->res.objective_hi, &xp->res.p_diverge);
    xp->res.N = exp(lNr);
    xp->res.D = exp(lDr);
}

/* Intervals: each replicate's own optimum (its allocation and laws, the same lr shift s), the
 * options' level, each widened to contain the recommendation. */
static void rec_intervals(fit_xp *xp, double lND, double s, rec_work *w)
{
    const xp_model *m = &xp->m;
    size_t P = xp->P, R = m->n_rep;
    double fixed = level_lN(xp, w->base);
    for (size_t r = 0; r < R; r++) {
        const double *th = &m->th_rep[r * XP_NTH];
        double lNq = isfinite(fixed) ? fixed : best_lN(th, lND), lDq = lND - lNq;
        setting_basic(xp, th, lNq, lDq, s, w->base, w->bq);
        solve_size(xp, w->solve, lNq, w->bq);
        solve_tokens(xp, lDq, w->bq);
        for (size_t j = 0; j < P; j++)
            w->repv[r * P + j] = xp_from_basic(xp->par[j].space, w->bq[j]);
        w->repN[r] = exp(lNq);
        w->repD[r] = exp(lDq);
    }
    double a = (1 - xp->o.level) / 2;
    for (size_t j = 0; j < P; j++) {
        if (isnan(xp->rec[j])) { /* inactive at the recommended levels */
            xp->rec_lo[j] = xp->rec_hi[j] = NAN;
            continue;
        }
        for (size_t r = 0; r < R; r++)
            w->vals[r] = w->repv[r * P + j];
        fit_sort_doubles(w->vals, R);
        double lo = fit_quantile_sorted(w->vals, R, a);
        double hi = fit_quantile_sorted(w->vals, R, 1 - a);
        xp->rec_lo[j] = xp_finish_value(xp, j, fmin(lo, xp->rec[j]), NULL);
        xp->rec_hi[j] = xp_finish_value(xp, j, fmax(hi, xp->rec[j]), NULL);
    }
    fit_sort_doubles(w->repN, R);
    fit_sort_doubles(w->repD, R);
    xp->res.N_lo = fmin(fit_quantile_sorted(w->repN, R, a), xp->res.N);
    xp->res.N_hi = fmax(fit_quantile_sorted(w->repN, R, 1 - a), xp->res.N);
    xp->res.D_lo = fmin(fit_quantile_sorted(w->repD, R, a), xp->res.D);
    xp->res.D_hi = fmax(fit_quantile_sorted(w->repD, R, 1 - a), xp->res.D);
}

/* 1 when every level of the combination c (mixed radix over the factors) had at least
 * min_level_ok successful runs; the levels into w->base. */
static int combo_set(fit_xp *xp, size_t c, rec_work *w)
{
    const xp_model *m = &xp->m;
    int ok = 1;
    for (size_t f = 0; f < m->n_fac; f++) {
        size_t j = m->fac_param[f], nl = xp->par[j].n_levels, l = c % nl;
        c /= nl;
        w->base[j] = (double)l;
        if (m->fac_n_ok[f][l] < xp->o.min_level_ok || !m->fac_n_ok[f][l])
            ok = 0;
    }
    return ok;
}

/* The warning for the levels too few runs kept out of the recommendation. */
static void warn_few_levels(fit_xp *xp)
{
    const xp_model *m = &xp->m;
    char msg[400] = "";
    size_t len = 0;
    for (size_t f = 0; f < m->n_fac; f++) {
        size_t j = m->fac_param[f];
        for (size_t l = 0; l < xp->par[j].n_levels; l++)
            if ((m->fac_n_ok[f][l] < xp->o.min_level_ok || !m->fac_n_ok[f][l]) &&
                len + 80 < sizeof(msg))
                len += (size_t)snprintf(msg + len, sizeof(msg) - len, "%s%s = %s (%zu)",
                                        len ? ", " : "", xp->par[j].name, xp->lv_names[j][l],
                                        m->fac_n_ok[f][l]);
    }
    if (!len)
        return;
    char text[512];
    snprintf(text, sizeof(text),
             "levels with fewer than %zu successful runs are not recommended: %s",
             xp->o.min_level_ok > 1 ? xp->o.min_level_ok : 1, msg);
    xp_add_warning(xp, FIT_XP_WARN_FEW_LEVEL, text);
}

/* The levels of the recommendation into w->base: of the combinations of levels each with
 * enough successful runs, the one whose best setting (rec_search, refine_hypers) has the lowest
 * expected loss with P(diverge) within the limit; the first allowed one when none is; the
 * reference levels (the most runs) when no combination is allowed (the warning says so). */
static void rec_levels(fit_xp *xp, double lND, rec_work *w)
{
    const xp_model *m = &xp->m;
    size_t n_combo = 1, best_c = (size_t)-1, first_ok = (size_t)-1;
    for (size_t f = 0; f < m->n_fac; f++)
        n_combo *= xp->par[m->fac_param[f]].n_levels;
    double best_E = INFINITY;
    for (size_t c = 0; c < n_combo; c++) {
        if (!combo_set(xp, c, w))
            continue;
        if (first_ok == (size_t)-1)
            first_ok = c;
        double lN, s, pm;
        double E = rec_search(xp, lND, w, 0, &lN, &s);
        if (!isfinite(E))
            continue;
        setting_basic(xp, m->th, lN, lND - lN, s, w->base, w->b);
        if (xp->o.robust)
            refine_hypers(xp, lN, lND - lN, w->b);
        E = expected_loss(xp, lN, lND - lN, w->b, &pm);
        if (E < best_E) {
            best_E = E;
            best_c = c;
        }
    }
    warn_few_levels(xp);
    if (best_c == (size_t)-1 && first_ok != (size_t)-1)
        best_c = first_ok;
    if (best_c != (size_t)-1) {
        combo_set(xp, best_c, w);
        return;
    }
    for (size_t f = 0; f < m->n_fac; f++) /* no level allowed: the best-measured ones */
        w->base[m->fac_param[f]] = (double)m->fac_ref[f];
}

/* P(diverge) of the setting w->b at lN as it will run (the sizes solved, rec_finish's rounding)
 * without side effects: w->b, the warnings and their text stay as they were (w->bq is used). */
static double trial_p(fit_xp *xp, double lN, double lND, rec_work *w)
{
    unsigned bits = xp->res.warnings;
    char text[sizeof(xp->warn_text)];
    memcpy(text, xp->warn_text, sizeof(text));
    memcpy(w->bq, w->b, xp->P * sizeof(double));
    solve_size(xp, w->solve, lN, w->b);
    solve_tokens(xp, lND - lN, w->b);
    rec_finish(xp, lN, lND, w);
    double p = xp->res.p_diverge;
    memcpy(w->b, w->bq, xp->P * sizeof(double));
    memcpy(xp->warn_text, text, sizeof(text));
    xp->res.warnings = bits;
    return p;
}

/* The search again, each hyperparameter but the learning rate offset from its law as
 * refine_hypers moved it in w->b at (lN, s) (w->off), then refined from its choice into w->b.
 * Returns 1 and the new (lN, s) when the search finds a setting under the limit; 0 otherwise
 * (w->b then undefined). w->keep is used. */
static int research_refined(fit_xp *xp, double lND, rec_work *w, double *lN, double *s)
{
    const xp_model *m = &xp->m;
    setting_basic(xp, m->th, *lN, lND - *lN, *s, w->base, w->bq);
    for (size_t k = 0; k < m->n_hp; k++) {
        size_t j = m->hp_param[k];
        double d = w->b[j] - w->bq[j];
        w->off[k] = isfinite(d) ? d : 0;
    }
    w->use_off = 1;
    double lN2, s2;
    int ok = isfinite(rec_search(xp, lND, w, 0, &lN2, &s2));
    w->use_off = 0;
    if (!ok)
        return 0;
    setting_at(xp, lN2, lND - lN2, s2, w);
    refine_hypers(xp, lN2, lND - lN2, w->b);
    *lN = lN2;
    *s = s2;
    return 1;
}

/*
 * When no setting of the search (each hyperparameter at its law, the learning rate shifted) is
 * under the P(diverge) limit, refine_hypers may still find one by moving the others (a longer
 * warmup raises the stability boundary), but only around the search's safest candidate A, at
 * the smallest N it tried (bench-extrapolate's Hugging Face-style world 25: N 0.31x the optimum,
 * P(diverge) 0.011 after the refinement, 7.4% regret, and yet refused as "above the limit").
 * So the search runs again from the refinement's offsets (research_refined), giving B. Of A
 * and B as they will run (trial_p): B when under the limit, else A when under it, else the one
 * with the lower P(diverge). On return w->b, *lN and *s hold the choice; returns 1 when it is
 * under the limit.
 */
static int choose_refined(fit_xp *xp, double lND, rec_work *w, double *lN, double *s)
{
    size_t P = xp->P;
    double lim = xp->o.max_p_diverge, lNa = *lN, sa = *s;
    double pA = trial_p(xp, lNa, lND, w);
    memcpy(w->keep, w->b, P * sizeof(double));
    double pB = research_refined(xp, lND, w, lN, s) ? trial_p(xp, *lN, lND, w) : INFINITY;
    if (pB <= lim)
        return 1;
    if (pA <= pB) { /* A under the limit, or the safer of two above it */
        memcpy(w->b, w->keep, P * sizeof(double));
        *lN = lNa;
        *s = sa;
    }
    return fmin(pA, pB) <= lim;
}

/* The setting of the recommendation into w->b, *lN and *s under the limit o.max_p_diverge: the
 * search (warn: its warnings given), the refinement and, when no candidate of the search is
 * under the limit, choose_refined. Returns 1 when a setting under the limit was found. */
static int rec_setting(fit_xp *xp, double lND, rec_work *w, int warn, double *lN, double *s)
{
    int safe_found = isfinite(rec_search(xp, lND, w, warn, lN, s));
    setting_at(xp, *lN, lND - *lN, *s, w);
    if (xp->o.robust)
        refine_hypers(xp, *lN, lND - *lN, w->b);
    if (!safe_found && xp->o.robust)
        safe_found = choose_refined(xp, lND, w, lN, s);
    return safe_found;
}

/* A setting under the limit can leave it once rounded (integers, d_model's rounding, the tokens
 * taking up N's): bench-extrapolate's sweeps had 8 refusals at P(diverge) 0.051-0.055 after
 * rounding, 2026-11-28. Then the setting is sought again under the limit tightened by each
 * factor of ROUND_TIGHTEN in turn, and the first whose run (trial_p) is under the real limit is
 * taken; when none is, the first setting stays (and is refused). */
static const double ROUND_TIGHTEN[] = {0.8, 0.6, 0.4};
#define N_ROUND_TIGHTEN (sizeof(ROUND_TIGHTEN) / sizeof(ROUND_TIGHTEN[0]))

static void tighten_for_rounding(fit_xp *xp, double lND, rec_work *w, double *lN, double *s)
{
    double lim = xp->o.max_p_diverge, lN0 = *lN, s0 = *s;
    if (!(trial_p(xp, *lN, lND, w) > lim))
        return;
    double *first = malloc(xp->P * sizeof(double));
    if (!first)
        return;
    memcpy(first, w->b, xp->P * sizeof(double));
    int ok = 0;
    for (size_t t = 0; t < N_ROUND_TIGHTEN && !ok; t++) {
        xp->o.max_p_diverge = lim * ROUND_TIGHTEN[t];
        ok = rec_setting(xp, lND, w, 0, lN, s);
        xp->o.max_p_diverge = lim;
        ok = ok && trial_p(xp, *lN, lND, w) <= lim;
    }
    if (!ok) {
        memcpy(w->b, first, xp->P * sizeof(double));
        *lN = lN0;
        *s = s0;
    }
    free(first);
}

st_status xp_model_recommend(fit_xp *xp, double C)
{
    xp_model *m = &xp->m;
    double lND = log(C) - m->cost_k;
    rec_work w;
    if (rec_alloc(&w, xp->P, reps_scratch(m)) != ST_OK)
        return ST_ENOMEM;
    rec_base(xp, C, &w);
    if (!isfinite(xp->o.fail_loss)) {
        /* a diverged run burns compute: charged as the compute-optimal run at C/2 */
        double lNh = best_lN(m->th, lND - M_LN2), lDh = lND - M_LN2 - lNh;
        setting_basic(xp, m->th, lNh, lDh, 0, w.base, w.b);
        m->fail_loss = exp(model_lnL(xp, m->th, lNh, lDh, w.b));
    }
    if (m->n_fac)
        rec_levels(xp, lND, &w);
    double lN, s;
    int safe_found = rec_setting(xp, lND, &w, 1, &lN, &s);
    if (safe_found)
        tighten_for_rounding(xp, lND, &w, &lN, &s);
    solve_size(xp, w.solve, lN, w.b);
    solve_tokens(xp, lND - lN, w.b);
    rec_finish(xp, lN, lND, &w);
    rec_intervals(xp, lND, s, &w);
    xp->res.method = FIT_XP_METHOD_MODEL;
    if (xp->res.p_diverge > xp->o.max_p_diverge) /* the run as it will train decides */
        xp_add_warning(xp, FIT_XP_WARN_P_DIVERGE,
                       safe_found ? "after rounding, P(diverge) is above the limit"
                                  : "every candidate has P(diverge) above the limit: the safest "
                                    "one is given");
    free(w.base);
    return ST_OK;
}

/* ---- predictions at a setting ---------------------------------------------------------- */

st_status fit_xp_predict(const fit_xp *xp, const double *x, double N, double D, double *objective,
                         double *lo, double *hi, double *p_diverge)
{
    if (!xp || !x)
        return ST_EINVAL;
    if (!xp->has_model)
        return ST_ENOTFOUND;
    const xp_model *m = &xp->m;
    size_t P = xp->P, R = reps_scratch(m);
    double lN = isfinite(N) && N > 0 ? log(N) : xp_model_lnN(xp, x);
    double lD = isfinite(D) && D > 0 ? log(D) : xp_model_lnD(xp, x);
    if (!isfinite(lN) || !isfinite(lD))
        return ST_EINVAL;
    double *b = malloc((P + R) * sizeof(double));
    if (!b)
        return ST_ENOMEM;
    double *v = b + P;
    for (size_t j = 0; j < P; j++)
        b[j] = xp_to_basic(xp->par[j].space, x[j]);
    xp_settle_active(xp, b);
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

size_t fit_xp_n_replicates(const fit_xp *xp)
{
    return xp && xp->has_model ? xp->m.n_rep : 0;
}

st_status fit_xp_predict_replicates(const fit_xp *xp, const double *x, double N, double D,
                                    double *ln_loss, double *p_diverge, double *sigma)
{
    if (!xp || !x)
        return ST_EINVAL;
    if (!xp->has_model)
        return ST_ENOTFOUND;
    const xp_model *m = &xp->m;
    double lN = isfinite(N) && N > 0 ? log(N) : xp_model_lnN(xp, x);
    double lD = isfinite(D) && D > 0 ? log(D) : xp_model_lnD(xp, x);
    if (!isfinite(lN) || !isfinite(lD))
        return ST_EINVAL;
    double *b = malloc((xp->P + 1) * sizeof(double));
    if (!b)
        return ST_ENOMEM;
    for (size_t j = 0; j < xp->P; j++)
        b[j] = xp_to_basic(xp->par[j].space, x[j]);
    xp_settle_active(xp, b);
    double z[XP_NZ];
    model_boundary_z(xp, lN, lD, b, z);
    for (size_t r = 0; r < m->n_rep; r++) {
        /* the same per-replicate terms as predict_reps */
        if (ln_loss)
            ln_loss[r] = model_lnL(xp, &m->th_rep[r * XP_NTH], lN, lD, b);
        if (p_diverge)
            p_diverge[r] = model_pdiv(m, &m->g_rep[r * XP_NG], z);
    }
    if (sigma)
        *sigma = m->sigma;
    free(b);
    return ST_OK;
}
