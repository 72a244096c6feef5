/*
 * extrapolate_priors.c — the engine's priors (xp_model_fit weights them by the first fit's
 * residual variance): the literature priors on the hyperparameter laws' slopes, couplings and
 * intercepts, the weight decay's AdamW timescale prior, the categorical levels' priors; and the
 * bootstrap's draws of their centres (fit_xp_options.prior_draw). The alpha - beta prior and the
 * boundary's slope tie are set in extrapolate_model_fit.c. docs/algorithms/extrapolation.md.
 */
#include <math.h>
#include <string.h>

#include "common/st.h"
#include "fit/extrapolate_int.h"

#define NONE ((size_t)-1)

/* The weight decay's timescale prior: the centres of its law in ln lambda = ln B - ln lr - ln D +
 * const (no N slope; other hypers 0). */
#define WD_SLOPE_N  0.0
#define WD_SLOPE_D  (-1.0)
#define WD_ON_BATCH 1.0
#define WD_ON_LR    (-1.0)
#define WD_ON_OTHER 0.0

/* Literature priors on the N and D slopes of the learning rate's and the batch's optima (both on
 * log scales), each sd scaled by o.prior_law_sd (0 disables them), weighted sigma^2 / (2 sd^2) as
 * the alpha - beta prior. A sweep of tens of runs crowded under a cost cap spans N and D by a
 * factor of a few and cannot place these slopes; unconstrained they ran into the slope wall
 * (lr_opt rising as N^0.6 D^0.9 on bench-extrapolate's sweeps). Published exponents:
 *  lr:    StepLaw (Li et al. 2025) N^-0.71 D^0.31; DeepSeek LLM (2024) C^-0.125, i.e. N^-0.125
 *         D^-0.125; Porian et al. (2024) and muP-style width scaling near N^-0.5 at fixed data.
 *  batch: StepLaw D^0.57 (no N); DeepSeek LLM C^0.33 (N^0.33 D^0.33); Bergsma et al. (2025,
 *         "Power Lines") D^0.4-0.5 near fixed tokens per parameter.
 * The means sit inside these, the sds cover them at about 1.5 sd. The lr's N slope is centred
 * on muP's width scaling, -0.5 (it was -0.4, a compromise towards DeepSeek's shallow law: on
 * crowded CARBS sweeps, whose N spans a factor 2-5, the prior's centre still pulls the fit, and
 * -0.4 left the fitted slope shallower than the truth in 15 of 20 simulated worlds, the lr at
 * 1000x up to 3.8x its optimum; docs/benchmarks.md section 5, 2026-11-27 later). */
#define LR_PRIOR_SLOPE_N     (-0.5)
#define LR_PRIOR_SLOPE_N_SD  0.3
#define LR_PRIOR_SLOPE_D     0.05
#define LR_PRIOR_SLOPE_D_SD  0.25
/* The learning rate's coupling to a log-scaled batch (d ln lr_opt / d ln B at fixed N and D): for
 * Adam the square-root rule (Malladi et al. 2022, "On the SDEs and scaling rules for adaptive
 * gradient algorithms"), up to linear below the critical batch (Goyal et al. 2017 for SGD) and
 * falling past the "surge" peak (Li et al. 2024, "Surge phenomenon in optimal learning rate and
 * batch size scaling"): mean 0.5, sd 0.5. Unconstrained, the coupling took the N and D slopes'
 * place on sweeps crowded under a cost cap: -1.59 on bench-extrapolate's world 13, which made the
 * learning rate's path slope -1.24 (the world's: -0.52), pulled the stability boundary down with
 * it through the slope tie, and held the recommended lr at 0.13x its optimum (6.4% regret). */
#define LR_PRIOR_ON_BATCH    0.5
#define LR_PRIOR_ON_BATCH_SD 0.5
#define BS_PRIOR_SLOPE_N     0.1
#define BS_PRIOR_SLOPE_N_SD  0.25
#define BS_PRIOR_SLOPE_D     0.4
#define BS_PRIOR_SLOPE_D_SD  0.2

/* Other hyperparameters (a weight decay under its timescale prior and a warmup aside): their
 * optima move with N or D only as far as the data says, a prior of mean 0 and this sd on both
 * slopes. A warmup gets none: published practice disagrees on whether it is a fixed fraction of
 * the run (slopes 0) or a fixed number of steps (slope -1 in D at fixed batch), and a prior at
 * either would decide it for the data. */
#define OTHER_PRIOR_SLOPE_SD   0.5
/* A warmup (a parameter named like one, on a log scale, with a log-scaled batch modelled before
 * it): a prior that its optimum is a fixed number of optimizer steps, i.e. a fraction of the run
 * proportional to B / D: slope -1 on ln D, coupling +1 to ln B, no N slope, each with this sd.
 * Most published large-model recipes warm up for a fixed number of steps or tokens whatever the
 * run's length (GPT-3: 375M tokens; LLaMA, DeepSeek LLM: 2000 steps); others use a fraction of the
 * run (Pythia: 1%). The sd leaves the data room to say which; bench/'s simulator assumes fixed
 * steps, so on its sweeps this prior agrees with the truth by construction. */
#define WU_PRIOR_SLOPE_N       0.0
#define WU_PRIOR_SLOPE_D       (-1.0)
#define WU_PRIOR_ON_BATCH      1.0
#define WU_PRIOR_SD            0.5
/* The same fixed number of steps when the warmup is counted in steps (nanoGPT's warmup_iters,
 * warmup_steps: D slope 0, coupling 0) or in tokens (warmup_tokens: D slope 0, coupling +1 to
 * ln B). A fraction's prior on a count in steps sent warmup_iters to its searched minimum on a
 * nanoGPT-style sweep of llmsim (1/10 of its optimum at 100x). */
#define WU_STEPS_SLOPE_D       0.0
#define WU_STEPS_ON_BATCH      0.0
#define WU_TOKENS_ON_BATCH     1.0
/* Every hyperparameter: its optimum at the sweep's centre lies in the range the successful runs
 * tried, a prior on the law's intercept centred mid-range with sd = this x the half-range. A
 * user centres a sweep on plausible values; a hyperparameter whose effect the runs barely show
 * (the batch on a sweep crowded under a cost cap) otherwise drifts to an optimum far outside
 * every run (batch 3000x its optimum on bench-extrapolate's world 1). */
#define ICPT_PRIOR_HALF_RANGES 1.0

static void prior_set(xp_jm_data *d, size_t k, size_t slot, double mean, double sd, double sigma)
{
    d->pw[XP_HP_OFF(k) + slot] = sigma * sigma / (2 * sd * sd);
    d->pmu[XP_HP_OFF(k) + slot] = mean;
    d->psd[XP_HP_OFF(k) + slot] = sd;
}

/* The intercept prior of hyper k (ICPT_PRIOR_HALF_RANGES), in the centred coordinates of the fit.
 */
static void icpt_prior_set(const fit_xp *xp, xp_jm_data *d, size_t k, double scale, double sigma)
{
    size_t P = xp->P, j = xp->m.hp_param[k];
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < xp->n; i++)
        if (!xp->failed[i] && isfinite(xp->b[i * P + j])) {
            lo = fmin(lo, xp->b[i * P + j]);
            hi = fmax(hi, xp->b[i * P + j]);
        }
    if (!(hi > lo))
        return;
    prior_set(d, k, XP_HP_ICPT, 0.5 * (lo + hi) - xp->m.hp_mean[k],
              scale * ICPT_PRIOR_HALF_RANGES * 0.5 * (hi - lo), sigma);
}

/* The hyper before hyper k that is a log-scaled batch, NONE if none. */
static size_t log_batch_before(const fit_xp *xp, size_t k)
{
    const xp_model *m = &xp->m;
    size_t kb = NONE;
    for (size_t q = 0; q < k; q++)
        if (xp->role[m->hp_param[q]] == FIT_XP_BATCH && xp->par[m->hp_param[q]].space == FIT_XP_LOG)
            kb = q;
    return kb;
}

/* The warmup prior on hyper k, in the warmup's unit (fit_xp_warmup_unit: a fraction of the
 * run, steps or tokens), when a log-scaled batch is modelled before it. */
static void wu_prior_set(const fit_xp *xp, xp_jm_data *d, size_t k, double sd, double sigma)
{
    size_t kb = log_batch_before(xp, k);
    if (kb == NONE)
        return;
    fit_xp_wu_unit u = fit_xp_warmup_unit(xp->par[xp->m.hp_param[k]].name);
    double slope_d = u == FIT_XP_WU_FRACTION ? WU_PRIOR_SLOPE_D : WU_STEPS_SLOPE_D;
    double on_b = u == FIT_XP_WU_FRACTION ? WU_PRIOR_ON_BATCH
                  : u == FIT_XP_WU_STEPS  ? WU_STEPS_ON_BATCH
                                          : WU_TOKENS_ON_BATCH;
    prior_set(d, k, XP_HP_SLOPE_N, WU_PRIOR_SLOPE_N, sd, sigma);
    prior_set(d, k, XP_HP_SLOPE_D, slope_d, sd, sigma);
    prior_set(d, k, XP_HP_COUPLING + kb, on_b, sd, sigma);
}

/* The literature priors of the hyperparameter laws, each sd scaled by o.prior_law_sd: slopes of
 * the learning rate and batch (log-scaled ones), the warmup's fixed-steps prior, slopes of the
 * other hyperparameters except k_wd (under its own prior), the intercept of every one. */
void xp_law_priors_set(const fit_xp *xp, xp_jm_data *d, size_t k_wd, double sigma)
{
    const xp_model *m = &xp->m;
    double sc = xp->o.prior_law_sd;
    if (!(sc > 0))
        return;
    for (size_t k = 0; k < m->n_hp; k++) {
        size_t j = m->hp_param[k];
        fit_xp_role r = xp->role[j];
        int lg = xp->par[j].space == FIT_XP_LOG;
        icpt_prior_set(xp, d, k, sc, sigma);
        if (r == FIT_XP_LR && lg) {
            prior_set(d, k, XP_HP_SLOPE_N, LR_PRIOR_SLOPE_N, sc * LR_PRIOR_SLOPE_N_SD, sigma);
            prior_set(d, k, XP_HP_SLOPE_D, LR_PRIOR_SLOPE_D, sc * LR_PRIOR_SLOPE_D_SD, sigma);
            size_t kb = log_batch_before(xp, k);
            if (kb != NONE)
                prior_set(d, k, XP_HP_COUPLING + kb, LR_PRIOR_ON_BATCH, sc * LR_PRIOR_ON_BATCH_SD,
                          sigma);
        } else if (r == FIT_XP_BATCH && lg) {
            prior_set(d, k, XP_HP_SLOPE_N, BS_PRIOR_SLOPE_N, sc * BS_PRIOR_SLOPE_N_SD, sigma);
            prior_set(d, k, XP_HP_SLOPE_D, BS_PRIOR_SLOPE_D, sc * BS_PRIOR_SLOPE_D_SD, sigma);
        } else if (j == m->wu_param && (lg || xp->par[j].space == FIT_XP_LOGIT)) {
            wu_prior_set(xp, d, k, sc * WU_PRIOR_SD, sigma);
        } else if (r == FIT_XP_OTHER && k != k_wd && j != m->wu_param) {
            prior_set(d, k, XP_HP_SLOPE_N, 0, sc * OTHER_PRIOR_SLOPE_SD, sigma);
            prior_set(d, k, XP_HP_SLOPE_D, 0, sc * OTHER_PRIOR_SLOPE_SD, sigma);
        }
    }
}

/* The weak priors of the categorical levels (always on: a level with few runs, or none, stays
 * near its reference): each offset in ln loss towards 0 with sd LV_DELTA_PRIOR_SD, each shift
 * of the learning rate's optimum towards 0 with sd LV_SHIFT_PRIOR_SD (in its basic coordinate;
 * ln lr on a log scale), weighted sigma^2 / (2 sd^2) as the others. */
#define LV_DELTA_PRIOR_SD 0.1
#define LV_SHIFT_PRIOR_SD 1.0
void xp_level_priors_set(const fit_xp *xp, xp_jm_data *d, double sigma)
{
    for (size_t q = 0; q < xp->m.n_lv; q++) {
        size_t o = XP_LV_OFF(xp->m.n_hp, q);
        d->pw[o + XP_LV_DELTA] = sigma * sigma / (2 * LV_DELTA_PRIOR_SD * LV_DELTA_PRIOR_SD);
        d->pw[o + XP_LV_LRSHIFT] = sigma * sigma / (2 * LV_SHIFT_PRIOR_SD * LV_SHIFT_PRIOR_SD);
        d->pmu[o + XP_LV_DELTA] = d->pmu[o + XP_LV_LRSHIFT] = 0;
    }
}

/* Is this the name of a weight decay? */
int fit_xp_is_weight_decay(const char *name)
{
    return name && (strstr(name, "weight_decay") || strstr(name, "weight-decay") ||
                    strstr(name, "weightdecay") || !strcmp(name, "wd"));
}

/*
 * The hyper index of a weight decay that gets the AdamW timescale prior, NONE if none.
 * AdamW's decoupled decay (per-step lr * lambda) averages the weights over tau = B / (lr lambda D)
 * of the run; its optimum is close to a fixed fraction of the run (Wang & Aitchison 2024; Bergsma
 * et al. 2025 "Power Lines": a weak power of tokens per parameter), so ln lambda_opt ~ ln B -
 * ln lr - ln D + const. Needs the weight decay, learning rate and batch modelled on log scales.
 */
size_t xp_wd_prior_hyper(const fit_xp *xp)
{
    const xp_model *m = &xp->m;
    if (!(xp->o.prior_wd_sd > 0))
        return NONE;
    size_t k_wd = NONE;
    int lr = 0, bs = 0;
    for (size_t k = 0; k < m->n_hp; k++) {
        size_t j = m->hp_param[k];
        int lg = xp->par[j].space == FIT_XP_LOG;
        if (xp->role[j] == FIT_XP_LR)
            lr = lg;
        else if (xp->role[j] == FIT_XP_BATCH)
            bs = lg;
        else if (xp->role[j] == FIT_XP_OTHER && lg && fit_xp_is_weight_decay(xp->par[j].name) &&
                 k_wd == NONE)
            k_wd = k;
    }
    return lr && bs ? k_wd : NONE;
}

/* The timescale prior on hyper k_wd's slopes and couplings, weighted sigma^2 / (2 sd^2) as the
 * alpha - beta prior. */
void xp_wd_prior_set(const fit_xp *xp, xp_jm_data *d, size_t k_wd, double sigma)
{
    const xp_model *m = &xp->m;
    double sd = xp->o.prior_wd_sd, wgt = sigma * sigma / (2 * sd * sd);
    double *pw = &d->pw[XP_HP_OFF(k_wd)], *pmu = &d->pmu[XP_HP_OFF(k_wd)];
    double *psd = &d->psd[XP_HP_OFF(k_wd)];
    pw[XP_HP_SLOPE_N] = pw[XP_HP_SLOPE_D] = wgt;
    psd[XP_HP_SLOPE_N] = psd[XP_HP_SLOPE_D] = sd;
    pmu[XP_HP_SLOPE_N] = WD_SLOPE_N;
    pmu[XP_HP_SLOPE_D] = WD_SLOPE_D;
    for (size_t j = 0; j < k_wd; j++) {
        fit_xp_role r = xp->role[m->hp_param[j]];
        pw[XP_HP_COUPLING + j] = wgt;
        psd[XP_HP_COUPLING + j] = sd;
        pmu[XP_HP_COUPLING + j] = r == FIT_XP_BATCH ? WD_ON_BATCH
                                  : r == FIT_XP_LR  ? WD_ON_LR
                                                    : WD_ON_OTHER;
    }
}

void xp_prior_centres_save(const xp_jm_data *d, const xp_lg_data *L, xp_prior_centres *c)
{
    memcpy(c->pmu, d->pmu, sizeof(c->pmu));
    c->mu_ab = d->mu_ab;
    c->mu_e = d->mu_e;
    c->tie_slope = L->tie_slope;
    c->tie_w = L->tie_w;
}

void xp_prior_centres_restore(xp_jm_data *d, xp_lg_data *L, const xp_prior_centres *c)
{
    memcpy(d->pmu, c->pmu, sizeof(c->pmu));
    d->mu_ab = c->mu_ab;
    d->mu_e = c->mu_e;
    L->tie_slope = c->tie_slope;
    L->tie_w = c->tie_w;
}

/*
 * A replicate's prior centres, each drawn from its prior (centre + sd z): randomised priors
 * ("randomise then optimise"; for a linear model with Gaussian noise and priors, resampled data
 * and perturbed centres give draws from the posterior). Resampling the runs alone leaves every
 * replicate under the same prior, so a slope the runs cannot place (the lr's N slope on a sweep
 * crowded under a cost cap) comes out the same in every replicate, and the interval and
 * P(diverge) at the target do not see its doubt.
 */
void xp_prior_centres_draw(xp_jm_data *d, const xp_prior_centres *c, st_rng *rng, double kap)
{
    for (size_t j = XP_TH_CHIN; j < d->n_th; j++)
        if (d->pw[j] > 0)
            d->pmu[j] = c->pmu[j] + kap * d->psd[j] * st_rng_gaussian(rng);
    if (d->w_ab > 0)
        d->mu_ab = c->mu_ab + kap * d->sd_ab * st_rng_gaussian(rng);
    if (d->w_e > 0)
        d->mu_e = c->mu_e + kap * d->sd_e * st_rng_gaussian(rng);
}
