/*
 * extrapolate_hyper_fit.c — hyperparameter laws the runs cannot place, settled after the joint
 * fit (extrapolate_model_fit.c): a flat law restarted from the edges of what the runs tried, a
 * bowl narrower than the runs can show held flat, a flat law's optimum placed at the best runs
 * and a warning that says so (docs/algorithms/extrapolation.md, "Fit").
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fit/extrapolate_fit_int.h"
#include "fit/fit_int.h"

/* The values hyper k's runs tried, each moved to the law's reference point (its optimum's
 * slopes and couplings taken out, intercept kept), into w->sorted, sorted. Returns how many. */
static size_t law_offsets(const fit_xp *xp, fit_work *w, const double *th, size_t k)
{
    const xp_model *m = &xp->m;
    const double *h = &th[XP_HP_OFF(k)];
    size_t na = 0;
    for (size_t t = 0; t < w->n_okr; t++) {
        size_t i = w->ok_rows[t];
        const double *bh = &w->bh[i * w->nh];
        if (!isnan(bh[k])) /* the runs where it is active */
            w->sorted[na++] = bh[k] -
                              xp_hp_optimum(h, k, w->lN[i] - m->lN0, w->lD[i] - m->lD0, bh) +
                              h[XP_HP_ICPT];
    }
    fit_sort_doubles(w->sorted, na);
    return na;
}

/* A hyper law the first fit left flat (xp_hp_flat: no bowl in the runs) may have
 * stalled where its optimum sits among the runs while the runs show a bowl whose bottom lies at
 * an edge of what they tried (bench-extrapolate's world 9: every weight decay but one below its
 * optimum, the penalty falling 1.4% towards the largest). Restarted with its optimum at each
 * FLAT_RESTART_Q quantile of the tried values and START_CURV; the best fit is kept. */
static const double FLAT_RESTART_Q[] = {0.0, 0.02, 0.98, 1.0};
#define N_FLAT_RESTART (sizeof(FLAT_RESTART_Q) / sizeof(FLAT_RESTART_Q[0]))

double xp_hyper_flat_restarts(const fit_xp *xp, fit_work *w, xp_jm_data *d, double *th, double f)
{
    for (size_t k = 0; k < xp->m.n_hp; k++) {
        if (!xp_hp_flat(th, k) || w->n_okr < 2)
            continue;
        size_t na = law_offsets(xp, w, th, k);
        for (size_t r = 0; na >= 2 && r < N_FLAT_RESTART; r++) {
            double t[XP_NTH];
            memcpy(t, th, sizeof(t));
            t[XP_HP_OFF(k) + XP_HP_ICPT] = fit_quantile_sorted(w->sorted, na, FLAT_RESTART_Q[r]);
            t[XP_HP_OFF(k) + XP_HP_LN_CURV] = log(START_CURV);
            double ft = xp_jm_minimise(d, t, MAXEVAL_POLISH);
            if (ft < f) {
                f = ft;
                memcpy(th, t, sizeof(t));
            }
        }
    }
    return f;
}

/* A bowl narrower than the runs can show: fewer than SPIKE_MIN_RUNS and SPIKE_MIN_FRAC of the
 * runs where hyper k is active lie within its half-width (where the penalty reaches half its
 * saturation). Such a law fits a run or two's noise, and its optimum is wherever they happened
 * to be (bench-extrapolate's Hugging Face-style world 7: a weight decay's law at the box's
 * curvature 100 with no run inside it, a timescale 5.3x its optimum recommended). */
#define SPIKE_MIN_RUNS 5
#define SPIKE_MIN_FRAC 0.1
#define CURV_FLAT      1e-6

static int is_spike(const fit_xp *xp, fit_work *w, const double *th, size_t k)
{
    const double *h = &th[XP_HP_OFF(k)];
    double c = exp(h[XP_HP_LN_CURV]), kap = exp(h[XP_HP_LN_SAT]);
    double half = sqrt(M_LN2 * kap / c), opt = h[XP_HP_ICPT];
    size_t na = law_offsets(xp, w, th, k), inside = 0;
    for (size_t t = 0; t < na; t++)
        inside += fabs(w->sorted[t] - opt) < half;
    return na >= 2 * SPIKE_MIN_RUNS && inside < SPIKE_MIN_RUNS &&
           (double)inside < SPIKE_MIN_FRAC * (double)na;
}

/* A spike is first restarted as a bowl of START_CURV and XP_SAT_CENTRE with its optimum at each
 * SPIKE_RESTART_Q quantile of the values the runs tried (law_offsets, under the spike's slopes and
 * couplings): the first fit may have fallen into the spike while a wide bowl lies among the runs.
 * The best restart that is no spike (and not flat) is kept when it fits at least as well as the
 * law held flat. Study mode's sweeps of bench/sim.h's worlds 4 and 9, most of whose runs lie far
 * below their optimal weight decay: held flat, the recommended AdamW timescale was 36x and 22x
 * the world's optimum; restarted, 1.03x and 1.1x (test_spike_restart). Otherwise the law is held
 * flat (its curvature capped at CURV_FLAT in every fit after, the bootstrap's too) and the rest
 * refitted; xp_hyper_flat_anchor places its optimum. */
static const double SPIKE_RESTART_Q[] = {0.1, 0.3, 0.5, 0.7, 0.9};
#define N_SPIKE_RESTART (sizeof(SPIKE_RESTART_Q) / sizeof(SPIKE_RESTART_Q[0]))

void xp_hyper_spikes_flatten(const fit_xp *xp, fit_work *w, xp_jm_data *d, double *th)
{
    for (size_t k = 0; k < xp->m.n_hp; k++) {
        if (!is_spike(xp, w, th, k))
            continue;
        double spike[XP_NTH], best[XP_NTH];
        memcpy(spike, th, sizeof(spike));
        d->curv_cap[k] = CURV_FLAT;
        th[XP_HP_OFF(k) + XP_HP_LN_CURV] = log(CURV_FLAT);
        double f_flat = xp_jm_minimise(d, th, MAXEVAL_POLISH), f_best = f_flat;
        d->curv_cap[k] = 0;
        size_t na = law_offsets(xp, w, spike, k);
        int won = 0;
        for (size_t r = 0; na >= 2 && r < N_SPIKE_RESTART; r++) {
            double t[XP_NTH];
            memcpy(t, spike, sizeof(t));
            t[XP_HP_OFF(k) + XP_HP_ICPT] = fit_quantile_sorted(w->sorted, na, SPIKE_RESTART_Q[r]);
            t[XP_HP_OFF(k) + XP_HP_LN_CURV] = log(START_CURV);
            t[XP_HP_OFF(k) + XP_HP_LN_SAT] = log(XP_SAT_CENTRE);
            double ft = xp_jm_minimise(d, t, MAXEVAL_POLISH);
            if (ft <= f_best && !xp_hp_flat(t, k) && !is_spike(xp, w, t, k)) {
                f_best = ft;
                memcpy(best, t, sizeof(best));
                won = 1;
            }
            na = law_offsets(xp, w, spike, k); /* is_spike overwrote w->sorted */
        }
        if (won)
            memcpy(th, best, sizeof(best));
        else
            d->curv_cap[k] = CURV_FLAT;
    }
}

/* The replicates resample the runs, and a resample can leave a bowl's flanks without runs: its
 * curvature then runs to the box's cap of 100 and its saturation, which every run outside the
 * spike pays, trades against E, A and B under the priors (a demo's sweep,
 * tests/data/extrapolate/demo_seed3_2to3_layers.csv: 34 of 49 interval replicates put the weight
 * decay's curvature at the cap and charged the large run a median 36%, where the point fit
 * charged 8.7%; docs/results.md, 2026-11-30 twenty-third session). Such a
 * replicate is refitted with the spike's curvature and saturation held at the point fit's (the
 * position of the optimum and its slopes stay free). The point fit has no spike: it went
 * through xp_hyper_spikes_flatten last, which leaves a bowl that is none or a flat law whose
 * curvature cap holds in the replicates too. */
double xp_hyper_spikes_hold(const fit_xp *xp, fit_work *w, xp_jm_data *d, double *th, double f)
{
    const double *pt = xp->m.th;
    for (size_t k = 0; k < xp->m.n_hp; k++) {
        if (!is_spike(xp, w, th, k))
            continue;
        size_t o = XP_HP_OFF(k), keep[XP_NTH], nk = d->n_free, nf = 0;
        memcpy(keep, d->free_idx, nk * sizeof(size_t));
        for (size_t i = 0; i < nk; i++)
            if (keep[i] != o + XP_HP_LN_CURV && keep[i] != o + XP_HP_LN_SAT)
                d->free_idx[nf++] = keep[i];
        d->n_free = nf;
        th[o + XP_HP_LN_CURV] = pt[o + XP_HP_LN_CURV];
        th[o + XP_HP_LN_SAT] = pt[o + XP_HP_LN_SAT];
        f = xp_jm_minimise(d, th, MAXEVAL_BOOT);
        d->n_free = nk;
        memcpy(d->free_idx, keep, nk * sizeof(size_t));
    }
    return f;
}

/* A hyper law still flat after the restarts (xp_hp_flat) says its value does not
 * matter among the runs, so its optimum's place is unidentified and drifts wherever the minimiser
 * left it: bench-extrapolate's Hugging Face-style sweeps ended with a weight decay 0.01-0.1x the
 * value of their best runs. Its intercept is set so that its optimum lies at the mean of the
 * best START_BEST_Q of the runs in rows[0..nr) (run rows < xp->n only), under the law's own
 * slopes and couplings: the loss predictions barely move, the recommendation keeps what worked. */
void xp_hyper_flat_anchor(const fit_xp *xp, fit_work *w, const size_t *rows, size_t nr, double *th)
{
    const xp_model *m = &xp->m;
    for (size_t k = 0; k < m->n_hp; k++) {
        double *h = &th[XP_HP_OFF(k)];
        if (!xp_hp_flat(th, k))
            continue;
        size_t na = 0;
        for (size_t t = 0; t < nr; t++)
            if (rows[t] < xp->n && !isnan(w->bh[rows[t] * w->nh + k]))
                w->sorted[na++] = xp->obj[rows[t]];
        if (na < 2)
            continue;
        fit_sort_doubles(w->sorted, na);
        double cut = fit_quantile_sorted(w->sorted, na, START_BEST_Q), acc = 0;
        size_t nb = 0;
        for (size_t t = 0; t < nr; t++) {
            size_t i = rows[t];
            const double *bh = &w->bh[i * w->nh];
            if (i >= xp->n || isnan(bh[k]) || xp->obj[i] > cut)
                continue;
            acc += bh[k] - xp_hp_optimum(h, k, w->lN[i] - m->lN0, w->lD[i] - m->lD0, bh) +
                   h[XP_HP_ICPT];
            nb++;
        }
        if (nb)
            h[XP_HP_ICPT] = acc / (double)nb;
    }
}

/* A warning for each hyper whose law is flat in the point fit th (xp_hyper_flat_anchor placed its
 * optimum): its value is the best runs', and the runs' range of it, which the sweep should widen
 * for the law to find a bowl. */
void xp_hyper_flat_warn(fit_xp *xp, const fit_work *w, const double *th)
{
    const xp_model *m = &xp->m;
    for (size_t k = 0; k < m->n_hp; k++) {
        if (!xp_hp_flat(th, k))
            continue;
        size_t j = m->hp_param[k];
        double lo = INFINITY, hi = -INFINITY;
        for (size_t t = 0; t < w->n_okr; t++) {
            double v = xp->x[w->ok_rows[t] * xp->P + j];
            if (isfinite(v)) {
                lo = fmin(lo, v);
                hi = fmax(hi, v);
            }
        }
        char msg[320];
        snprintf(msg, sizeof(msg),
                 "%s: its runs (%.3g to %.3g) show no optimum, only noise or a plateau, so the "
                 "recommended value is where the best runs were (moved by its law), not a fitted "
                 "optimum: search a wider range of it to place one",
                 xp->par[j].name, lo, hi);
        xp_add_warning(xp, FIT_XP_WARN_FLAT, msg);
    }
}
