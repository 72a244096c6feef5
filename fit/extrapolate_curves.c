/*
 * extrapolate_curves.c — curve points in the model's loss fit: what a run would have reached at
 * fewer tokens (study/study_curves.c derives them from the run's learning curve), kept with
 * their run so that they are never counted as independent runs (extrapolate.h,
 * fit_xp_set_curve_points; docs/algorithms/extrapolation.md, "Curve points"). The model fit
 * (extrapolate_model_fit.c) asks for their rows with xp_curves_rows and resamples them with
 * their run.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit/extrapolate_int.h"

#define NONE              ((size_t)-1)
/* A branch's warmup fraction is held below 1 (a branch off a checkpoint inside its run's warmup
 * would have a warmup longer than itself; bench/xp_branches.py holds it at the same value). */
#define BRANCH_WARMUP_MAX 0.95

void xp_curves_free(fit_xp *xp)
{
    free(xp->cp_off);
    free(xp->cp_D);
    free(xp->cp_obj);
    free(xp->cp_branch);
    xp->cp_off = NULL;
    xp->cp_D = xp->cp_obj = NULL;
    xp->cp_branch = NULL;
    xp->n_cp = xp->cp_max = 0;
    xp->cp_weight = 0;
}

/* ST_OK when every point names a successful run and has D, objective > 0 and finite. */
static st_status check_points(fit_xp *xp, size_t n_pts, const size_t *run, const double *D,
                              const double *objective, double weight)
{
    if (!(weight >= 0 && weight <= 1))
        return xp_fail(xp, ST_EINVAL, "curve points: weight %g is not in [0, 1]", weight);
    if (n_pts && (!run || !D || !objective))
        return xp_fail(xp, ST_EINVAL, "curve points: a NULL array");
    for (size_t c = 0; c < n_pts; c++) {
        if (run[c] >= xp->n)
            return xp_fail(xp, ST_EINVAL, "curve point %zu: run %zu of %zu", c, run[c], xp->n);
        if (xp->failed[run[c]])
            return xp_fail(xp, ST_EINVAL, "curve point %zu: run %zu failed", c, run[c]);
        if (!(D[c] > 0 && isfinite(D[c]) && objective[c] > 0 && isfinite(objective[c])))
            return xp_fail(xp, ST_EINVAL, "curve point %zu: D %g, objective %g", c, D[c],
                           objective[c]);
    }
    return ST_OK;
}

st_status fit_xp_set_curve_points(fit_xp *xp, size_t n_pts, const size_t *run, const double *D,
                                  const double *objective, const unsigned char *branch,
                                  double weight)
{
    if (!xp)
        return ST_EINVAL;
    xp->err[0] = '\0';
    xp->done = 0;
    xp_curves_free(xp);
    st_status s = check_points(xp, n_pts, run, D, objective, weight);
    if (s != ST_OK || n_pts == 0)
        return s;
    xp->cp_off = calloc(xp->n + 1, sizeof(size_t));
    xp->cp_D = malloc(n_pts * sizeof(double));
    xp->cp_obj = malloc(n_pts * sizeof(double));
    xp->cp_branch = calloc(n_pts, 1);
    if (!xp->cp_off || !xp->cp_D || !xp->cp_obj || !xp->cp_branch) {
        xp_curves_free(xp);
        return xp_fail(xp, ST_ENOMEM, "out of memory for %zu curve points", n_pts);
    }
    /* counting sort by run: offsets, then the points in run order (stable within a run) */
    for (size_t c = 0; c < n_pts; c++)
        xp->cp_off[run[c] + 1]++;
    for (size_t i = 0; i < xp->n; i++) {
        if (xp->cp_off[i + 1] > xp->cp_max)
            xp->cp_max = xp->cp_off[i + 1];
        xp->cp_off[i + 1] += xp->cp_off[i];
    }
    size_t *fill = calloc(xp->n, sizeof(size_t));
    if (!fill) {
        xp_curves_free(xp);
        return xp_fail(xp, ST_ENOMEM, "out of memory");
    }
    for (size_t c = 0; c < n_pts; c++) {
        size_t at = xp->cp_off[run[c]] + fill[run[c]]++;
        xp->cp_D[at] = D[c];
        xp->cp_obj[at] = objective[c];
        xp->cp_branch[at] = branch && branch[c];
    }
    free(fill);
    xp->n_cp = n_pts;
    xp->cp_weight = weight;
    return ST_OK;
}

size_t fit_xp_n_curve_points(const fit_xp *xp)
{
    return xp ? xp->n_cp : 0;
}

/* The hyper index of a warmup given as a fraction of the run, NONE when there is none. */
static size_t fraction_warmup_hyper(const fit_xp *xp)
{
    const xp_model *m = &xp->m;
    if (m->wu_param == NONE || fit_xp_warmup_unit(xp->par[m->wu_param].name) != FIT_XP_WU_FRACTION)
        return NONE;
    for (size_t k = 0; k < m->n_hp; k++)
        if (m->hp_param[k] == m->wu_param)
            return k;
    return NONE;
}

/* A branch's warmup (hyper k) in the point's row r: run i's warmup steps over the branch's
 * shorter run, i.e. its fraction times D_i / D_point. */
static void branch_warmup(const fit_xp *xp, size_t i, size_t k, double lD_run, double lD_pt,
                          double *bh_r)
{
    size_t j = xp->m.hp_param[k];
    double w = xp->x[i * xp->P + j];
    if (!(w > 0))
        return;
    w = fmin(w * exp(lD_run - lD_pt), BRANCH_WARMUP_MAX);
    bh_r[k] = xp_to_basic(xp->par[j].space, w) - xp->m.hp_mean[k];
}

size_t xp_curves_rows(const fit_xp *xp, const int *usable, size_t nh, double *lN, double *lD,
                      double *ly, double *bh, double *wt, size_t *rows)
{
    size_t n = xp->n, m = 0, k_wu = fraction_warmup_hyper(xp);
    for (size_t i = 0; i < n; i++)
        wt[i] = 1;
    for (size_t i = 0; xp->cp_off && i < n; i++) {
        size_t k = xp->cp_off[i + 1] - xp->cp_off[i];
        for (size_t c = xp->cp_off[i]; c < xp->cp_off[i + 1]; c++) {
            size_t r = n + c;
            lN[r] = lN[i];
            lD[r] = log(xp->cp_D[c]);
            ly[r] = log(xp->cp_obj[c]);
            memcpy(&bh[r * nh], &bh[i * nh], nh * sizeof(double));
            if (xp->cp_branch[c] && k_wu != NONE && isfinite(bh[i * nh + k_wu]))
                branch_warmup(xp, i, k_wu, lD[i], lD[r], &bh[r * nh]);
            wt[r] = usable[i] ? xp->cp_weight / (double)k : 0;
            if (usable[i])
                rows[m++] = r;
        }
    }
    return m;
}
