/*
 * study_mode.c — study mode (docs/algorithms/study-mode.md): the proposer the runner calls for
 * each suggestion of a sweep whose goal is the large run, and the plan behind it and behind
 * `scaletune suggest-next`: fit the engine on the released runs, score a few hundred candidate
 * runs by the expected reduction of the variance of the large run's predicted loss per unit
 * cost over the bootstrap replicates (or, with the option `decision`, of the recommendation's
 * expected regret), condition on the pending runs, pick greedily. Depends on
 * study.c (the input policy and the engine call), study_design.c and study_acq.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "study/study_int.h"

/* Perturbations of the recommendation scaled down to small costs: ln N and ln D jittered by
 * JITTER_ND (sd), each hyperparameter's basic coordinate around its law by JITTER_HP. */
#define JITTER_ND 0.35
#define JITTER_HP 0.3
/* The step (basic coordinate; ln N and ln D) of the decision targets' central differences. */
#define DEC_STEP  0.25

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double to_basic(fit_xp_space s, double v)
{
    return s == FIT_XP_LOG ? log(v) : s == FIT_XP_LOGIT ? log(v / (1 - v)) : v;
}

static double from_basic(fit_xp_space s, double b)
{
    return s == FIT_XP_LOG ? exp(b) : s == FIT_XP_LOGIT ? 1 / (1 + exp(-b)) : b;
}

/* ---- the plan's work ------------------------------------------------------------------ */

typedef struct plan_work {
    study_space sp;
    study *st;
    const fit_xp *xp;
    fit_xp_result res;
    size_t R, np, m, n_cand; /* replicates; values per setting; variables; candidates */
    size_t t;                /* the large run's row (after the candidates and the pending) */
    size_t nt, *tg;          /* the acquisition's targets (tg[0] = t) and their weights */
    double *tw;
    double sigma;
    double *set;    /* m x np settings (candidates, then pending; the target's row unused) */
    double *ens;    /* m x R ln loss */
    double *cost;   /* m */
    double *weight; /* m: 1 - P(diverge) */
    double *xe;     /* P: a setting in the engine's order */
    gsl_rng *g;
} plan_work;

static void work_clear(plan_work *k)
{
    study_space_clear(&k->sp);
    study_destroy(k->st);
    free(k->set);
    free(k->ens);
    free(k->cost);
    free(k->weight);
    free(k->xe);
    free(k->tg);
    free(k->tw);
    gsl_rng_free(k->g);
}

/* Fits the engine on the first n_use runs (a view of w; the study borrows it). */
static st_status work_fit(plan_work *k, const runner_sweep *view, double compute, double factor,
                          char *errmsg)
{
    study_options so = study_options_default();
    so.engine.n_boot = k->sp.o.n_boot;
    /* the plan reads the recommendation's replicates only: no replicates for the interval */
    so.engine.interval_prior_draw = so.engine.prior_draw;
    so.backtest = 0;
    so.compute = compute;
    so.factor = factor;
    if (!k->sp.o.priors)
        so.engine.prior_ab_sd = so.engine.prior_e_sd = so.engine.prior_law_sd =
            so.engine.prior_wd_sd = 0;
    st_status rc = study_create(view, &so, &k->st, errmsg);
    if (rc)
        return rc;
    rc = study_run(k->st);
    if (rc)
        return st_errf(errmsg, rc, "%s", study_errmsg(k->st));
    k->xp = study_engine(k->st);
    k->R = fit_xp_n_replicates(k->xp);
    fit_xp_get_result(k->xp, &k->res);
    if (k->R < 2)
        return st_errf(errmsg, ST_ENOTFOUND,
                       "the engine fitted no model of every run (it needs N, D and a learning "
                       "rate): nothing to score candidates with (engine: %.300s)",
                       k->res.warning_text);
    double ck;
    if (!k->sp.cfg->cost_expr && fit_xp_cost_model(k->xp, &ck) == ST_OK)
        k->sp.cost_k = ck;
    return ST_OK;
}

/* Row i's ensemble, mean P(diverge) and cost from setting x (np values, file order). */
static int work_predict(plan_work *k, size_t i, const double *x)
{
    for (size_t j = 0; j < k->sp.P; j++)
        k->xe[j] = x[k->sp.pidx[j]];
    double *pd = malloc(k->R * sizeof(double));
    if (!pd)
        return 0;
    st_status rc =
        fit_xp_predict_replicates(k->xp, k->xe, NAN, NAN, &k->ens[i * k->R], pd, &k->sigma);
    double pm = 0;
    for (size_t r = 0; rc == ST_OK && r < k->R; r++)
        pm += pd[r] / (double)k->R;
    free(pd);
    for (size_t r = 0; rc == ST_OK && r < k->R; r++)
        if (!isfinite(k->ens[i * k->R + r]))
            rc = ST_ENUMERIC;
    k->weight[i] = rc == ST_OK ? 1 - pm : 0;
    k->cost[i] = study_space_cost(&k->sp, x);
    return rc == ST_OK;
}

/* A perturbation of the recommendation scaled down to a small cost along the fitted laws:
 * N and D along the compute-optimal allocation (N ~ C^a, a = beta / (alpha + beta)), each
 * hyperparameter along its law in N and D, then jittered. x: np values, file order. */
static void rec_scaled(plan_work *k, double a, double *x)
{
    const study_space *sp = &k->sp;
    const runner_config *cfg = sp->cfg;
    double lc = log(sp->cap) - gsl_rng_uniform(k->g) * log(sp->o.band);
    double dl = lc - log(k->res.compute);
    double dN = a * dl + gsl_ran_gaussian(k->g, JITTER_ND);
    double dD = (1 - a) * dl + gsl_ran_gaussian(k->g, JITTER_ND);
    for (size_t i = 0; i < cfg->n_params; i++)
        x[i] = cfg->params[i].is_fixed ? cfg->params[i].fixed_value : NAN;
    for (size_t j = 0; j < sp->P; j++) {
        fit_xp_space s = k->st->par[j].space;
        double b = to_basic(s, k->res.value[j]), coef[3];
        if (sp->logs[j] == STUDY_COORD_LEVEL) { /* every level, not only the recommended one */
            x[sp->pidx[j]] = (double)gsl_rng_uniform_int(k->g, (unsigned long)sp->hi[j]);
            continue;
        }
        if (j == sp->jN)
            b = log(k->res.N) + dN;
        else if (j == sp->jD)
            b = log(k->res.D) + dD;
        else if (fit_xp_hp_law(k->xp, j, coef, NULL, NULL) == ST_OK)
            b += coef[1] * dN + coef[2] * dD + gsl_ran_gaussian(k->g, JITTER_HP);
        x[sp->pidx[j]] = from_basic(s, b);
    }
    /* back inside the searched box, rounded, under the cap (through the cube) */
    double *u = malloc(sp->P * sizeof(double));
    if (!u)
        return;
    study_space_to_unit(sp, x, u);
    for (size_t j = 0; j < sp->P; j++) {
        if (isfinite(u[j]))
            u[j] = fmin(1, fmax(0, u[j]));
        else /* a conditional parameter the recommendation leaves inactive: anywhere */
            u[j] = cfg->params[sp->pidx[j]].p.active_if ? gsl_rng_uniform(k->g) : 0.5;
    }
    study_space_from_unit(sp, u, x);
    study_space_under_cap(sp, x);
    free(u);
}

/* The largest learning rate (role lr, parameter units) of a successful run the engine saw;
 * +inf when the sweep has none. */
static double lr_tried(const plan_work *k, size_t *jlr)
{
    const study *st = k->st;
    double hi = -INFINITY;
    *jlr = STUDY_NONE;
    for (size_t j = 0; j < k->sp.P && *jlr == STUDY_NONE; j++)
        if (k->sp.role[j] == FIT_XP_LR)
            *jlr = j;
    for (size_t i = 0; *jlr != STUDY_NONE && i < st->n; i++)
        if (!st->failed[i])
            hi = fmax(hi, st->x[i * st->P + *jlr]);
    return *jlr == STUDY_NONE || !isfinite(hi) ? INFINITY : hi;
}

/* The design's learning-rate window (lr_window_fit, below) from a fitted engine. */
static void lr_window_set(study_space *sp, const fit_xp *xp)
{
    double c[3];
    if (sp->o.lr_window > 1 && sp->jLR != STUDY_NONE && sp->logs[sp->jLR] == 1 &&
        fit_xp_hp_law(xp, sp->jLR, c, NULL, NULL) == ST_OK && isfinite(c[0]) && isfinite(c[1]) &&
        isfinite(c[2])) {
        memcpy(sp->lrw_c, c, sizeof(c));
        sp->lrw_half = log(sp->o.lr_window);
    }
}

/* The candidates: half a scrambled Sobol design over the band (its categorical levels balanced
 * as the initial design's), half perturbations of the recommendation (when N and D are
 * parameters; each at a level drawn uniformly); those over the cap, likely to diverge, or
 * with a learning rate above every successful run's (the stability boundary is unknown there,
 * as for the recommendation: study.h) get weight 0. Fills rows 0 .. n_cand - 1. */
static st_status work_candidates(plan_work *k, uint64_t seed)
{
    study_space *sp = &k->sp;
    size_t jlr;
    double lr_hi = lr_tried(k, &jlr);
    size_t nc = k->n_cand, n_pert = 0;
    double nat[5], a = 0.5;
    if (sp->jN != STUDY_NONE && sp->jD != STUDY_NONE && isfinite(sp->cap) &&
        fit_xp_chinchilla(k->xp, nat, NULL) == ST_OK && nat[3] + nat[4] > 0) {
        n_pert = nc / 2;
        a = nat[4] / (nat[3] + nat[4]);
    }
    size_t n_sob = nc - n_pert;
    double *U = malloc((n_sob + 1) * sp->P * sizeof(double));
    if (!U)
        return ST_ENOMEM;
    st_status rc = study_design_units(sp->P, seed, 0, n_sob, U);
    for (size_t i = 0; rc == ST_OK && i < nc; i++) {
        double *x = &k->set[i * k->np];
        if (i < n_sob) {
            study_design_levels(sp, seed, i, &U[i * sp->P]);
            study_design_point(sp, &U[i * sp->P], x);
        } else
            rec_scaled(k, a, x);
        if (!work_predict(k, i, x) || !(k->cost[i] <= sp->cap * (1 + 1e-9)) ||
            1 - k->weight[i] > sp->o.max_p_diverge ||
            (jlr != STUDY_NONE && x[sp->pidx[jlr]] > lr_hi))
            k->weight[i] = 0;
    }
    free(U);
    return rc;
}

static st_status work_alloc(plan_work *k, size_t n_pending)
{
    /* rows: candidates, pending, the large run, then up to P + 1 decision targets */
    k->t = k->n_cand + n_pending;
    k->m = k->t + 1 + k->sp.P + 1;
    k->set = calloc(k->m * k->np + 1, sizeof(double));
    k->ens = calloc(k->m * k->R + 1, sizeof(double));
    k->cost = calloc(k->m, sizeof(double));
    k->weight = calloc(k->m, sizeof(double));
    k->xe = calloc(k->sp.P + 1, sizeof(double));
    k->tg = calloc(k->sp.P + 2, sizeof(size_t));
    k->tw = calloc(k->sp.P + 2, sizeof(double));
    return k->set && k->ens && k->cost && k->weight && k->xe && k->tg && k->tw ? ST_OK : ST_ENOMEM;
}

/* The large run's setting moved by h along direction j in the engine's order: basic
 * coordinate j by h, or (j == jN with D a parameter) ln N up and ln D down by h, at fixed
 * compute. Fills k->xe, *N, *D. */
static void target_moved(plan_work *k, size_t j, double h, double *N, double *D)
{
    for (size_t i = 0; i < k->sp.P; i++)
        k->xe[i] = k->res.value[i];
    *N = k->res.N;
    *D = k->res.D;
    if (j == k->sp.jN) {
        *N *= exp(h);
        *D *= exp(-h);
        k->xe[k->sp.jN] = *N;
        k->xe[k->sp.jD] = *D;
        return;
    }
    fit_xp_space s = k->st->par[j].space;
    k->xe[j] = from_basic(s, to_basic(s, k->res.value[j]) + h);
}

/* Replicate r's slope of ln loss along direction j (central differences, step DEC_STEP) into
 * row `row`, and the ensemble's mean curvature; 0 when the direction does not apply. */
static double dec_slope(plan_work *k, size_t j, size_t row, double *gp, double *gm)
{
    double N, D, h = DEC_STEP, c = 0;
    const double *g0 = &k->ens[k->t * k->R];
    target_moved(k, j, h, &N, &D);
    if (fit_xp_predict_replicates(k->xp, k->xe, N, D, gp, NULL, NULL) != ST_OK)
        return 0;
    target_moved(k, j, -h, &N, &D);
    if (fit_xp_predict_replicates(k->xp, k->xe, N, D, gm, NULL, NULL) != ST_OK)
        return 0;
    for (size_t r = 0; r < k->R; r++) {
        if (!isfinite(gp[r]) || !isfinite(gm[r]))
            return 0;
        k->ens[row * k->R + r] = (gp[r] - gm[r]) / (2 * h);
        c += (gp[r] - 2 * g0[r] + gm[r]) / (h * h) / (double)k->R;
    }
    return c;
}

/* The acquisition's targets (docs/algorithms/study-mode.md, "the decision"): decision 0, the
 * large run's ln loss g; 1, the slopes d_j of ln loss at the recommendation along each
 * direction j, weighted 1 / (2 c_j) (a quadratic bowl of curvature c_j: the recommendation's
 * expected regret is sum_j var(d_j) / (2 c_j), and observing a run cuts it by sum_j
 * VR(d_j) / (2 c_j)); 2, each replicate's loss at its own optimum, g - sum_j d_j^2 / (2 c_j).
 * g stays target 0 (weight 0 unless decision 0) for the interval the plan reports. */
static st_status work_decision(plan_work *k)
{
    size_t R = k->R, t = k->t, P = k->sp.P, nd = 0;
    int dec = k->sp.o.decision;
    k->nt = 1;
    k->tg[0] = t;
    k->tw[0] = dec == 0 ? 1 : 0;
    k->m = t + 1;
    if (dec == 0)
        return ST_OK;
    double *gp = malloc(2 * R * sizeof(double)), *c = malloc((P + 1) * sizeof(double));
    if (!gp || !c) {
        free(gp), free(c);
        return ST_ENOMEM;
    }
    int nd_pair = k->sp.jN != STUDY_NONE && k->sp.jD != STUDY_NONE && isfinite(k->res.N) &&
                  isfinite(k->res.D);
    for (size_t j = 0; j < P; j++) {
        if (k->sp.logs[j] == STUDY_COORD_LEVEL || !isfinite(k->res.value[j]))
            continue; /* a level has no slope; a parameter inactive there, none either */
        fit_xp_role ro = fit_xp_param_role(k->xp, j);
        if (j == k->sp.jD || ro == FIT_XP_SIZE || ro == FIT_XP_STEPS ||
            (j == k->sp.jN && !nd_pair) || (ro == FIT_XP_N || ro == FIT_XP_D) != (j == k->sp.jN))
            continue;
        double cj = dec_slope(k, j, t + 1 + nd, gp, gp + R);
        if (!(cj > 1e-6))
            continue;
        c[nd] = cj;
        if (dec == 1) {
            k->tg[k->nt] = t + 1 + nd;
            k->tw[k->nt++] = 1 / (2 * cj);
        }
        nd++;
    }
    if (dec == 2) { /* one row after the slopes: the loss at each replicate's optimum */
        size_t row = t + 1 + nd;
        for (size_t r = 0; r < R; r++) {
            double h = k->ens[t * R + r];
            for (size_t i = 0; i < nd; i++) {
                double d = k->ens[(t + 1 + i) * R + r];
                h -= d * d / (2 * c[i]);
            }
            k->ens[row * R + r] = h;
        }
        k->tg[k->nt] = row;
        k->tw[k->nt++] = 1;
        nd++;
    }
    k->m = t + 1 + nd;
    free(gp), free(c);
    return ST_OK;
}

/* The greedy batch on the covariance; fills the plan's picks. */
static st_status work_choose(plan_work *k, size_t n_pending, size_t kk, study_plan *pl)
{
    size_t m = k->m, t = k->t;
    double *cov = malloc(m * m * sizeof(double));
    double *col = malloc(m * sizeof(double)), *vr = malloc((kk + 1) * sizeof(double));
    double *vt = malloc((kk + 1) * sizeof(double));
    size_t *ch = malloc((kk + 1) * sizeof(size_t));
    unsigned char *taken = calloc(m, 1);
    pl->picks = calloc(kk + 1, sizeof(study_pick));
    pl->x_all = malloc((kk + 1) * k->np * sizeof(double));
    if (!cov || !col || !vr || !vt || !ch || !taken || !pl->picks || !pl->x_all) {
        free(cov), free(col), free(vr), free(vt), free(ch), free(taken);
        return ST_ENOMEM;
    }
    /* s2: a small run's observation noise (at least the floor: a fit to few runs can report
     * a residual sd near 0, and a noise-free observation would explain the whole ensemble
     * direction); sg2: the large run's own noise in its interval, the engine's */
    double sn = fmax(k->sigma, k->sp.o.noise_floor), s2 = sn * sn, sg2 = k->sigma * k->sigma;
    double z = gsl_cdf_ugaussian_Pinv(0.5 + 0.9 / 2);
    study_ens_cov(m, k->R, k->ens, cov);
    pl->halfwidth_model = z * sqrt(cov[t * m + t]);
    pl->halfwidth = z * sqrt(cov[t * m + t] + sg2);
    /* the pending runs first: fantasies, as if already observed */
    for (size_t q = 0; q < n_pending; q++) {
        size_t p = k->n_cand + q;
        taken[p] = 1;
        if (k->weight[p] > 0)
            study_acq_condition(m, cov, p, col, s2);
    }
    for (size_t i = k->n_cand; i < m; i++)
        taken[i] = 1;
    /* the score's denominator: cost^cost_power (the costs themselves are reported) */
    double *cp = malloc(m * sizeof(double));
    if (!cp) {
        free(cov), free(col), free(vr), free(vt), free(ch), free(taken);
        return ST_ENOMEM;
    }
    double floor_c = isfinite(k->sp.cap) ? k->sp.o.cost_floor * k->sp.cap : 0;
    for (size_t i = 0; i < m; i++)
        cp[i] = k->cost[i] > 0 ? pow(fmax(k->cost[i], floor_c), k->sp.o.cost_power) : k->cost[i];
    size_t n = study_acq_batch_multi(m, cov, k->nt, k->tg, k->tw, s2, cp, k->weight, taken, kk, ch,
                                     vr, vt, col);
    free(cp);
    for (size_t i = 0; i < n; i++) {
        study_pick *pk = &pl->picks[i];
        pk->x = &pl->x_all[i * k->np];
        memcpy(pk->x, &k->set[ch[i] * k->np], k->np * sizeof(double));
        pk->cost = k->cost[ch[i]];
        pk->p_diverge = 1 - k->weight[ch[i]];
        pk->vr = vr[i];
        pk->halfwidth = z * sqrt(fmax(vt[i], 0) + sg2);
    }
    pl->n_picks = n;
    free(cov), free(col), free(vr), free(vt), free(ch), free(taken);
    return ST_OK;
}

st_status study_released_view(const runner_sweep *w, size_t n_use, runner_sweep *view)
{
    *view = *w;
    view->runs = malloc((w->n_runs ? w->n_runs : 1) * sizeof(*view->runs));
    if (!view->runs)
        return ST_ENOMEM;
    uint64_t cut = 0; /* the id of the last suggestion used */
    for (size_t i = 0, k = 0; i < w->n_runs && k < n_use; i++)
        if (!w->runs[i].parent) {
            cut = w->runs[i].id;
            k++;
        }
    view->n_runs = 0;
    for (size_t i = 0; i < w->n_runs; i++) {
        const runner_sweep_run *u = &w->runs[i];
        if (u->parent ? u->parent <= cut : u->id <= cut)
            view->runs[view->n_runs++] = *u;
    }
    return ST_OK;
}

st_status study_plan_make(const runner_sweep *w, size_t n_use, const double *pending,
                          size_t n_pending, double compute, double factor, size_t kk, uint64_t seed,
                          const study_mode_options *o, study_plan **out, char *errmsg)
{
    char local[ST_ERRMSG_MAX];
    if (!errmsg)
        errmsg = local;
    errmsg[0] = '\0';
    *out = NULL;
    plan_work k;
    memset(&k, 0, sizeof(k));
    st_status rc = study_space_init(&k.sp, w->cfg, o, errmsg);
    if (rc) {
        study_space_clear(&k.sp);
        return rc;
    }
    runner_sweep view;
    if ((rc = study_released_view(w, n_use, &view))) {
        study_space_clear(&k.sp);
        return st_errf(errmsg, rc, "out of memory");
    }
    study_space_calibrate(&k.sp, &view);
    double t0 = now_seconds();
    rc = work_fit(&k, &view, compute, factor, errmsg);
    if (!rc) /* the Sobol half of the candidates in the design's window */
        lr_window_set(&k.sp, k.xp);
    double t1 = now_seconds();
    study_plan *pl = calloc(1, sizeof(*pl));
    k.np = w->cfg->n_params;
    k.n_cand = k.sp.o.n_candidates;
    k.g = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rc && (!pl || !k.g || work_alloc(&k, n_pending)))
        rc = st_errf(errmsg, ST_ENOMEM, "out of memory");
    if (!rc) {
        gsl_rng_set(k.g, (unsigned long)(seed ^ (seed >> 32)));
        rc = work_candidates(&k, seed);
        for (size_t q = 0; !rc && q < n_pending; q++) {
            memcpy(&k.set[(k.n_cand + q) * k.np], &pending[q * k.np], k.np * sizeof(double));
            work_predict(&k, k.n_cand + q, &pending[q * k.np]);
        }
        for (size_t j = 0; !rc && j < k.sp.P; j++)
            k.xe[j] = k.res.value[j];
        if (!rc)
            rc = fit_xp_predict_replicates(k.xp, k.xe, k.res.N, k.res.D, &k.ens[k.t * k.R], NULL,
                                           &k.sigma);
        if (!rc)
            rc = work_decision(&k);
        if (rc && errmsg && !errmsg[0])
            st_errf(errmsg, rc, "the engine could not predict the large run");
    }
    if (!rc) {
        pl->n_params = k.np;
        pl->compute = k.res.compute;
        pl->objective = k.res.objective;
        pl->sigma = k.sigma;
        for (size_t i = 0; i < k.n_cand; i++)
            pl->n_candidates += k.weight[i] > 0;
        rc = work_choose(&k, n_pending, kk, pl);
        pl->fit_seconds = t1 - t0;
        pl->acq_seconds = now_seconds() - t1;
    }
    work_clear(&k);
    free(view.runs);
    if (rc) {
        study_plan_free(pl);
        return rc;
    }
    *out = pl;
    return ST_OK;
}

void study_plan_free(study_plan *p)
{
    if (!p)
        return;
    free(p->picks);
    free(p->x_all);
    free(p);
}

/* ---- the proposer ----------------------------------------------------------------------- */

/* Without a cost expr, exp(k) N D in the cost metric's unit: k from the released successful
 * runs (their median ln(cost / (N D))), ln 6 (FLOPs) before any. w: the released view (a
 * cooldown branch's cost is of its own steps only: not a run's N D). */
static void cost_k_from_runs(study_space *sp, const runner_sweep *w)
{
    if (sp->cfg->cost_expr || sp->jN == STUDY_NONE || sp->jD == STUDY_NONE)
        return;
    double *v = malloc((w->n_runs + 1) * sizeof(double));
    size_t n = 0;
    for (size_t i = 0; v && i < w->n_runs; i++) {
        const runner_sweep_run *u = &w->runs[i];
        if (u->parent)
            continue;
        double N = u->x[sp->pidx[sp->jN]], D = u->x[sp->pidx[sp->jD]];
        if (u->status == RUNNER_RUN_SUCCEEDED && u->cost > 0 && N > 0 && D > 0)
            v[n++] = log(u->cost / (N * D));
    }
    if (n) {
        qsort(v, n, sizeof(double), study_cmp_double);
        sp->cost_k = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    }
    free(v);
}

/* The large run's compute and factor of a sweep file (NAN compute: factor x the largest run). */
static void target_of(const runner_config *cfg, double *C, double *f)
{
    /* not given: NAN (or 0 from a parser that leaves it unset) */
    *C = cfg->target_compute > 0 && isfinite(cfg->target_compute) ? cfg->target_compute : NAN;
    *f = cfg->target_factor > 0 && isfinite(cfg->target_factor) ? cfg->target_factor : 100;
    if (isnan(*C) && isfinite(cfg->max_cost_per_run))
        *C = *f * cfg->max_cost_per_run;
}

/*
 * The design's learning-rate window (study_space.lrw_*, docs/algorithms/study-mode.md "Phase
 * 1"): once LRW_MIN_RUNS released runs have succeeded, the engine's point fit (no replicates)
 * on them gives the learning rate's law ln lr* = c0 + c1 ln N + c2 ln D, and the design's later
 * points spread their learning rates over lr* / o.lr_window .. x o.lr_window at their own N and
 * D instead of the whole searched range. Without it 26 of the 60 runs of one `make demo` (seed
 * 4; searched range 1e-4 .. 0.3) lay outside 0.0007 .. 0.04, on the byte-level plateau or far
 * below the optimum. No window when the engine fits no such law (no N, D or learning rate).
 */
#define LRW_MIN_RUNS 12
static st_status lr_window_fit(study_space *sp, const runner_sweep *w)
{
    /* the window needs the point's N: an N parameter, or shape parameters and a cost expr */
    if (!(sp->o.lr_window > 1) || sp->jLR == STUDY_NONE || sp->logs[sp->jLR] != 1 ||
        sp->jD == STUDY_NONE || (sp->jN == STUDY_NONE && !sp->cfg->cost_expr))
        return ST_OK;
    size_t n_ok = 0;
    for (size_t i = 0; i < w->n_runs; i++)
        n_ok += !w->runs[i].parent && w->runs[i].status == RUNNER_RUN_SUCCEEDED;
    if (n_ok < LRW_MIN_RUNS)
        return ST_OK;
    study_options so = study_options_default();
    so.engine.n_boot = 0;
    so.engine.interval_prior_draw = so.engine.prior_draw;
    so.backtest = 0;
    target_of(w->cfg, &so.compute, &so.factor);
    study *st = NULL;
    char em[ST_ERRMSG_MAX];
    st_status rc = study_create(w, &so, &st, em);
    if (!rc)
        rc = study_run(st);
    if (!rc)
        lr_window_set(sp, study_engine(st));
    study_destroy(st);
    /* an engine that cannot fit yet leaves the whole range; only memory is an error */
    return rc == ST_ENOMEM ? rc : ST_OK;
}

/* A design point; w: the released view (study_released_view). */
static st_status design_x(const runner_config *cfg, const runner_sweep *w,
                          const study_mode_options *o, size_t index, double *x, char *errmsg)
{
    size_t n_use = w->n_runs;
    study_space sp;
    st_status rc = study_space_init(&sp, cfg, o, errmsg);
    double *u = rc ? NULL : malloc(sp.P * sizeof(double));
    if (!rc && !u)
        rc = st_errf(errmsg, ST_ENOMEM, "out of memory");
    double *dN = rc ? NULL : malloc(2 * (n_use + 1) * sizeof(double));
    if (!rc && !dN)
        rc = st_errf(errmsg, ST_ENOMEM, "out of memory");
    if (!rc && sp.jLR != STUDY_NONE) { /* the released runs that diverged */
        sp.div_N = dN;
        sp.div_lr = dN + n_use + 1;
        for (size_t i = 0; i < n_use; i++) {
            const runner_sweep_run *r = &w->runs[i];
            if (r->parent || r->status != RUNNER_RUN_FAILED || r->failure != RUNNER_FAIL_DIVERGED)
                continue;
            dN[sp.n_div] = sp.jN != STUDY_NONE ? r->x[sp.pidx[sp.jN]] : r->final_N;
            dN[n_use + 1 + sp.n_div++] = r->x[sp.pidx[sp.jLR]];
        }
    }
    if (!rc) {
        cost_k_from_runs(&sp, w);
        study_space_calibrate(&sp, w);
        if ((rc = lr_window_fit(&sp, w)))
            st_errf(errmsg, rc, "out of memory");
    }
    if (!rc) {
        if (!cfg->cost_expr && !isfinite(cfg->max_cost_per_run)) {
            /* the box's largest setting under the cost just learned */
            for (size_t j = 0; j < sp.P; j++)
                u[j] = 1;
            study_space_from_unit(&sp, u, x);
            double c = study_space_cost(&sp, x);
            sp.cap = c > 0 ? c : INFINITY;
        }
        rc = study_design_units(sp.P, cfg->seed, index, 1, u);
    }
    if (!rc)
        study_design_levels(&sp, cfg->seed, index, u);
    if (!rc)
        study_design_point(&sp, u, x);
    free(u);
    free(dN);
    study_space_clear(&sp);
    return rc;
}

st_status study_propose(const runner_sweep *w, const runner_propose_request *req,
                        const study_mode_options *opts, double *x, char *errmsg)
{
    char local[ST_ERRMSG_MAX];
    if (!errmsg)
        errmsg = local;
    study_mode_options o = opts ? *opts : study_mode_options_default();
    const runner_config *cfg = req->cfg;
    size_t n_use = req->n_released; /* suggestions: study_released_view adds their branches */
    if (req->index >= runner_config_design_size(cfg)) {
        double C, f;
        target_of(cfg, &C, &f);
        study_plan *pl = NULL;
        char em[ST_ERRMSG_MAX] = "";
        st_status rc = study_plan_make(w, n_use, req->pending, req->n_pending, C, f, 1, req->seed,
                                       &o, &pl, em);
        int planned = !rc && pl->n_picks;
        if (planned)
            memcpy(x, pl->picks[0].x, cfg->n_params * sizeof(double));
        study_plan_free(pl);
        if (rc == ST_ENOMEM)
            return st_errf(errmsg, rc, "%s", em);
        if (planned)
            return ST_OK;
        /* the engine cannot fit yet, or nothing adds information: the design goes on */
    }
    runner_sweep view;
    if (study_released_view(w, n_use, &view))
        return st_errf(errmsg, ST_ENOMEM, "out of memory");
    st_status rc = design_x(cfg, &view, &o, req->index, x, errmsg);
    free(view.runs);
    return rc;
}

st_status study_proposer(void *user, const runner_propose_request *req, double *x, char *errmsg)
{
    char local[ST_ERRMSG_MAX];
    if (!errmsg)
        errmsg = local;
    runner_store *store = NULL;
    runner_sweep *w = NULL;
    st_status rc = runner_store_open(req->db_path, &store, errmsg);
    if (rc)
        return rc;
    rc = runner_store_read_sweep(store, req->sweep, &w);
    if (rc)
        st_errf(errmsg, rc, "%s", runner_store_errmsg(store));
    runner_store_close(store);
    if (rc)
        return rc;
    rc = study_propose(w, req, (const study_mode_options *)user, x, errmsg);
    runner_sweep_free(w);
    return rc;
}
