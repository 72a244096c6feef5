/*
 * study_acq.c — study mode's acquisition on an ensemble (docs/algorithms/study-mode.md): the
 * engine's bootstrap replicates are an ensemble of predictions of ln loss for m variables (the
 * candidate runs, the pending runs and the large run at the target); a run is worth its expected
 * reduction of the variance of the large run's predicted ln loss, VR = cov(f, g)^2 / (var(f) +
 * sigma^2), per unit cost; an observed (or pending, fantasised) run conditions the ensemble's
 * covariance by the rank-1 update of the ensemble Kalman filter. Pure arithmetic on arrays: no
 * engine, no store, no allocation.
 */
#include <math.h>
#include <string.h>

#include "study/study_int.h"

void study_ens_cov(size_t m, size_t R, const double *ens, double *cov)
{
    /* ens: m x R (row i: variable i under each replicate); cov: m x m sample covariance */
    double den = R > 1 ? (double)(R - 1) : 1;
    for (size_t i = 0; i < m; i++) {
        double mi = 0;
        for (size_t r = 0; r < R; r++)
            mi += ens[i * R + r] / (double)R;
        for (size_t j = 0; j <= i; j++) {
            double mj = 0, c = 0;
            for (size_t r = 0; r < R; r++)
                mj += ens[j * R + r] / (double)R;
            for (size_t r = 0; r < R; r++)
                c += (ens[i * R + r] - mi) * (ens[j * R + r] - mj);
            cov[i * m + j] = cov[j * m + i] = c / den;
        }
    }
}

double study_acq_vr(size_t m, const double *cov, size_t i, size_t t, double s2)
{
    double c = cov[i * m + t], v = cov[i * m + i];
    double d = v + s2;
    return d > 0 ? c * c / d : 0;
}

void study_acq_condition(size_t m, double *cov, size_t p, double *col, double s2)
{
    /* cov'(a, b) = cov(a, b) - cov(a, p) cov(b, p) / (var(p) + s2) (the Kalman update of a
     * Gaussian on a noisy observation of variable p); col: m doubles of scratch */
    double d = cov[p * m + p] + s2;
    if (!(d > 0))
        return;
    for (size_t a = 0; a < m; a++)
        col[a] = cov[a * m + p];
    for (size_t a = 0; a < m; a++)
        for (size_t b = 0; b < m; b++)
            cov[a * m + b] -= col[a] * col[b] / d;
}

double study_acq_vr_multi(size_t m, const double *cov, size_t i, size_t nt, const size_t *tg,
                          const double *tw, double s2)
{
    double d = cov[i * m + i] + s2, v = 0;
    if (!(d > 0))
        return 0;
    for (size_t j = 0; j < nt; j++) {
        double c = cov[i * m + tg[j]];
        v += (tw ? tw[j] : 1) * c * c / d;
    }
    return v;
}

size_t study_acq_pick_multi(size_t m, const double *cov, size_t nt, const size_t *tg,
                            const double *tw, double s2, const double *cost, const double *weight,
                            const unsigned char *taken, double *score)
{
    size_t best = STUDY_NONE;
    double bs = 0;
    for (size_t i = 0; i < m; i++) {
        int is_target = 0;
        for (size_t j = 0; j < nt; j++)
            is_target |= i == tg[j];
        if (is_target || (taken && taken[i]) || !(cost[i] > 0) || !isfinite(cost[i]))
            continue;
        double w = weight ? weight[i] : 1;
        if (!(w > 0))
            continue;
        double sc = w * study_acq_vr_multi(m, cov, i, nt, tg, tw, s2) / cost[i];
        if (sc > bs) {
            bs = sc;
            best = i;
        }
    }
    if (score)
        *score = bs;
    return best;
}

size_t study_acq_pick(size_t m, const double *cov, size_t t, double s2, const double *cost,
                      const double *weight, const unsigned char *taken, double *score)
{
    return study_acq_pick_multi(m, cov, 1, &t, NULL, s2, cost, weight, taken, score);
}

size_t study_acq_batch_multi(size_t m, double *cov, size_t nt, const size_t *tg, const double *tw,
                             double s2, const double *cost, const double *weight,
                             unsigned char *taken, size_t k, size_t *chosen, double *vr,
                             double *var_t, double *col)
{
    size_t n = 0;
    while (n < k) {
        size_t p = study_acq_pick_multi(m, cov, nt, tg, tw, s2, cost, weight, taken, NULL);
        if (p == STUDY_NONE)
            break;
        if (vr)
            vr[n] = study_acq_vr(m, cov, p, tg[0], s2);
        chosen[n] = p;
        taken[p] = 1; /* a repeat adds only run noise's averaging: never twice in a batch */
        study_acq_condition(m, cov, p, col, s2);
        if (var_t)
            var_t[n] = cov[tg[0] * m + tg[0]];
        n++;
    }
    return n;
}

size_t study_acq_batch(size_t m, double *cov, size_t t, double s2, const double *cost,
                       const double *weight, unsigned char *taken, size_t k, size_t *chosen,
                       double *vr, double *var_t, double *col)
{
    return study_acq_batch_multi(m, cov, 1, &t, NULL, s2, cost, weight, taken, k, chosen, vr, var_t,
                                 col);
}
