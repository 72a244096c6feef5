/*
 * extrapolate_access.c — read-only accessors of the fitted model (xp_model, extrapolate_int.h):
 * the Chinchilla law and its allocation, each hyperparameter's law and couplings, the stability
 * boundary, the cost model and the categorical levels' effects with their bootstrap intervals.
 * Predictions at a setting are in extrapolate_recommend.c (fit_xp_predict).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit/extrapolate_int.h"
#include "fit/fit_int.h"

#define NONE ((size_t)-1)

st_status fit_xp_chinchilla(const fit_xp *xp, double natural[5], fit_alloc *alloc)
{
    if (!xp || !xp->has_model)
        return ST_ENOTFOUND;
    const double *th = xp->m.th;
    double nat[5] = {exp(th[XP_TH_A]), exp(th[XP_TH_B]), exp(th[XP_TH_E]), th[XP_TH_ALPHA],
                     th[XP_TH_BETA]};
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
        double sN = h[XP_HP_SLOPE_N], sD = h[XP_HP_SLOPE_D];
        if (coef) { /* uncentred: b* = coef0 + coef1 ln N + coef2 ln D (+ couplings) */
            coef[0] = h[XP_HP_ICPT] + m->hp_mean[k] - sN * m->lN0 - sD * m->lD0;
            coef[1] = sN;
            coef[2] = sD;
        }
        if (curv)
            *curv = exp(h[XP_HP_LN_CURV]);
        if (sat)
            *sat = exp(h[XP_HP_LN_SAT]);
        return ST_OK;
    }
    return ST_ENOTFOUND;
}

st_status fit_xp_hp_coupling(const fit_xp *xp, size_t i, size_t j, double *t)
{
    if (!xp || !xp->has_model || !t)
        return ST_ENOTFOUND;
    const xp_model *m = &xp->m;
    size_t ki = NONE, kj = NONE;
    for (size_t k = 0; k < m->n_hp; k++) {
        if (m->hp_param[k] == i)
            ki = k;
        if (m->hp_param[k] == j)
            kj = k;
    }
    if (ki == NONE || kj == NONE || kj >= ki)
        return ST_ENOTFOUND;
    *t = m->th[XP_HP_OFF(ki) + XP_HP_COUPLING + kj];
    return ST_OK;
}

st_status fit_xp_divergence(const fit_xp *xp, double g[4])
{
    if (!xp || !xp->has_model || !xp->m.has_div)
        return ST_ENOTFOUND;
    const xp_model *m = &xp->m;
    const double *c = m->g;
    /* uncentred: eta = g0 + g1 ln lr + g2 ln N + g3 w */
    g[0] = c[XP_G_ICPT] - c[XP_G_LR] * m->m_lr - c[XP_G_LN] * m->lN0 - c[XP_G_W] * m->m_w;
    g[1] = c[XP_G_LR];
    g[2] = c[XP_G_LN];
    g[3] = c[XP_G_W];
    return ST_OK;
}

st_status fit_xp_cost_model(const fit_xp *xp, double *k)
{
    if (!xp || !xp->has_model)
        return ST_ENOTFOUND;
    *k = xp->m.cost_k;
    return ST_OK;
}

st_status fit_xp_level_effect(const fit_xp *xp, size_t i, size_t level, double offset[3],
                              double lr_shift[3], size_t *ref_level, size_t *n_ok)
{
    if (!xp || !xp->has_model)
        return ST_ENOTFOUND;
    const xp_model *m = &xp->m;
    size_t f = 0;
    while (f < m->n_fac && m->fac_param[f] != i)
        f++;
    if (f == m->n_fac)
        return ST_ENOTFOUND;
    if (level >= xp->par[i].n_levels)
        return ST_EINVAL;
    if (ref_level)
        *ref_level = m->fac_ref[f];
    if (n_ok)
        *n_ok = m->fac_n_ok[f][level];
    size_t q = xp_level_slot(m, f, level), R = m->n_rep;
    double *v = malloc((R ? R : 1) * sizeof(double)), a = (1 - xp->o.level) / 2;
    if (!v)
        return ST_ENOMEM;
    for (int e = 0; e < XP_LV_LEN; e++) {
        double *out = e == XP_LV_DELTA ? offset : lr_shift;
        if (!out)
            continue;
        size_t o = q == NONE ? 0 : XP_LV_OFF(m->n_hp, q) + (size_t)e;
        for (size_t r = 0; r < R; r++)
            v[r] = q == NONE ? 0 : m->th_rep[r * XP_NTH + o];
        fit_sort_doubles(v, R);
        out[0] = q == NONE ? 0 : m->th[o];
        out[1] = fit_quantile_sorted(v, R, a);
        out[2] = fit_quantile_sorted(v, R, 1 - a);
    }
    free(v);
    return ST_OK;
}

const char *fit_xp_level_name(const fit_xp *xp, size_t i, size_t level)
{
    if (!xp || i >= xp->P || !xp->lv_names || !xp->lv_names[i] || level >= xp->par[i].n_levels)
        return NULL;
    return xp->lv_names[i][level];
}
