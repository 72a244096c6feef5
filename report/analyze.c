/*
 * analyze.c — the numbers behind the report, all from the extrapolation engine
 * (fit/extrapolate.h): the fitted runs (finished or failed, not beyond the fit) go in with
 * their parameter spaces, bounds and final model size and tokens; out come the Pareto front,
 * the objective's saturating law along it and each searched parameter's law on ln cost with
 * their bootstrap bands, the recommendation at the target compute (intervals, predicted
 * objective, P(diverge)) and the predictions for runs beyond the fit. It fits nothing itself.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carbs/carbs.h"
#include "report/report_int.h"

const char *rp_method_name(const report *r)
{
    if (!r->xp)
        return "none";
    return r->res.method == FIT_XP_METHOD_MODEL ? "model" : "front";
}

/* A run the model can predict: every searched value finite and inside its space. */
static int usable(const report *r, const rp_run *u)
{
    for (size_t p = 0; p < r->n_params; p++) {
        int s = r->pspace[p];
        double v = u->x[p];
        if (s < 0)
            continue;
        if (!isfinite(v) || (s == CARBS_SPACE_LOG && !(v > 0)) ||
            (s == CARBS_SPACE_LOGIT && !(v > 0 && v < 1)))
            return 0;
    }
    return 1;
}

/* The study of the sweep (study/study.h: the one input policy, the engine at the target);
 * the report's runs are the sweep's, in the same order. */
static st_status feed(report *r)
{
    study_options so = study_options_default();
    so.engine.method = (fit_xp_method)r->o.method;
    so.engine.level = r->o.band_level;
    so.engine.n_boot = r->o.n_boot;
    so.engine.seed = r->o.seed;
    so.engine.n_threads = 1;
    so.engine.prior_e = r->o.prior_e;
    so.engine.prior_e_sd = r->o.prior_e_sd;
    so.engine.far_weight = r->o.far_weight;
    so.compute = r->target;
    so.fit_max_cost = r->o.fit_max_cost;
    char em[ST_ERRMSG_MAX];
    st_status rc = study_create(r->sw, &so, &r->st, em);
    if (rc)
        return st_errf(r->errmsg, rc, "%s", em);
    rc = study_run(r->st);
    if (rc == ST_ENOMEM)
        return rc;
    if (rc) {
        snprintf(r->xp_note, sizeof(r->xp_note), "no laws and no recommendation: %s",
                 study_errmsg(r->st));
        return ST_OK;
    }
    r->xp = study_engine(r->st);
    r->n_xp_runs = study_n_engine_runs(r->st);
    r->xp_run = malloc((r->n_xp_runs + 1) * sizeof(size_t));
    if (!r->xp_run)
        return ST_ENOMEM;
    for (size_t k = 0; k < r->n_xp_runs; k++)
        r->xp_run[k] = study_engine_run(r->st, k);
    return ST_OK;
}

/* Front groups: runs with identical searched values; their mean cost and objective. */
static st_status read_front(report *r)
{
    size_t nf = fit_xp_front_n(r->xp), P = r->n_hp;
    r->front = malloc((nf + 1) * sizeof(size_t));
    r->front_cost = malloc((nf + 1) * sizeof(double));
    r->front_obj = malloc((nf + 1) * sizeof(double));
    r->front_count = malloc((nf + 1) * sizeof(size_t));
    if (!r->front || !r->front_cost || !r->front_obj || !r->front_count)
        return ST_ENOMEM;
    for (size_t k = 0; k < nf; k++) {
        size_t run;
        fit_xp_front_get(r->xp, k, &run, &r->front_cost[k], &r->front_obj[k], &r->front_count[k]);
        size_t i0 = r->xp_run[run];
        r->front[k] = i0;
        for (size_t m = 0; m < r->n_xp_runs; m++) {
            rp_run *u = &r->runs[r->xp_run[m]];
            int same = u->succeeded;
            for (size_t j = 0; j < P && same; j++)
                same = u->x[r->hp[j].param] == r->runs[i0].x[r->hp[j].param];
            u->on_front |= same;
        }
    }
    r->n_front = nf;
    return ST_OK;
}

/* A law of the engine (i: parameter, or (size_t)-1: the objective) on the grid and at C. */
static st_status curve(report *r, size_t i, const double *grid, rp_curve_band *law, double *at,
                       double *lo, double *hi)
{
    double C = r->target;
    st_status rc = fit_xp_front_curve(r->xp, i, RP_GRID, grid, law->y, law->lo, law->hi);
    if (!rc)
        rc = fit_xp_front_curve(r->xp, i, 1, &C, at, lo, hi);
    if (rc == ST_ENOTFOUND)
        return ST_OK;
    if (rc)
        return rc;
    law->ok = 1;
    memcpy(law->c, grid, sizeof(law->c));
    if (r->o.n_boot == 0) { /* no replicates: the engine returns the fit as its own band */
        for (size_t g = 0; g < RP_GRID; g++)
            law->lo[g] = law->hi[g] = NAN;
        *lo = *hi = NAN;
    }
    return ST_OK;
}

/* A validation run's predicted curve: the model at its settings (engine coordinates x) and
 * model size, at fractions 0.1 .. 1 of its tokens (log-spaced). */
static void predict_envelope(report *r, rp_run *u, const double *x)
{
    u->n_env = 0;
    for (size_t k = 0; k < RP_ENV; k++) {
        double f = pow(10.0, -1.0 + (double)k / (RP_ENV - 1));
        double y, lo, hi;
        if (fit_xp_predict(r->xp, x, u->N, u->D * f, &y, &lo, &hi, NULL) != ST_OK)
            continue;
        u->env_f[u->n_env] = f;
        u->env_y[u->n_env] = y;
        u->env_lo[u->n_env] = lo;
        u->env_hi[u->n_env++] = hi;
    }
}

/* Predictions for runs beyond the fit: the model at the run's settings (its own model size and
 * tokens), else the objective's front law at its cost. */
static void predict_beyond(report *r)
{
    double x[64], vcost = -INFINITY;
    for (size_t i = 0; i < r->n_runs; i++) {
        rp_run *u = &r->runs[i];
        if (!u->beyond || !isfinite(u->cost))
            continue;
        int ok = 0;
        if (r->res.method == FIT_XP_METHOD_MODEL && usable(r, u)) {
            for (size_t j = 0; j < r->n_hp; j++)
                x[j] = u->x[r->hp[j].param];
            ok = fit_xp_predict(r->xp, x, u->N, u->D, &u->pred, &u->pred_lo, &u->pred_hi,
                                &u->pred_p) == ST_OK;
            if (ok && u->validation)
                predict_envelope(r, u, x);
        }
        if (!ok && r->loss_law.ok) {
            double C = u->cost;
            if (fit_xp_front_curve(r->xp, (size_t)-1, 1, &C, &u->pred, &u->pred_lo, &u->pred_hi) ==
                    ST_OK &&
                r->o.n_boot == 0)
                u->pred_lo = u->pred_hi = NAN;
        }
        int expect = u->validation && isfinite(r->o.expect_objective);
        if (u->succeeded && u->cost > vcost && (isfinite(u->pred) || expect)) {
            vcost = u->cost;
            r->has_validation = 1;
            r->val_run = u->id;
            r->val_actual = u->objective;
            r->val_pred = u->pred;
            r->val_lo = u->pred_lo;
            r->val_hi = u->pred_hi;
            r->val_expected = expect;
        }
    }
    /* held to the prediction written before it ran: the tables and figures show that one */
    for (size_t i = 0; r->val_expected && i < r->n_runs; i++) {
        rp_run *u = &r->runs[i];
        if (u->validation && u->id == r->val_run) {
            u->pred = r->val_pred = r->o.expect_objective;
            u->pred_lo = r->val_lo = r->o.expect_lo;
            u->pred_hi = r->val_hi = r->o.expect_hi;
        }
    }
}

st_status rp_analyze(report *r)
{
    r->rec_obj = r->rec_lo = r->rec_hi = r->p_diverge = NAN;
    r->loss_at = r->loss_at_lo = r->loss_at_hi = NAN;
    r->rec_source = "no recommendation";
    r->cost_lo = INFINITY;
    r->cost_hi = 0;
    for (size_t i = 0; i < r->n_runs; i++) {
        const rp_run *u = &r->runs[i];
        if (u->succeeded && !u->beyond) {
            r->cost_lo = fmin(r->cost_lo, u->cost);
            r->cost_hi = fmax(r->cost_hi, u->cost);
        }
    }
    r->target =
        r->o.target_compute > 0 ? r->o.target_compute : (r->cost_hi > 0 ? 10 * r->cost_hi : NAN);

    /* the searched parameters */
    r->hp = calloc(r->n_params + 1, sizeof(*r->hp));
    if (!r->hp)
        return ST_ENOMEM;
    for (size_t p = 0; p < r->n_params; p++) {
        if (r->pspace[p] < 0)
            continue;
        rp_hp *h = &r->hp[r->n_hp];
        h->param = p;
        h->xi = r->n_hp++;
        h->space = r->pspace[p];
        h->b0 = h->b1 = h->b1_lo = h->b1_hi = NAN;
        h->at_target = h->lo = h->hi = h->rec = h->rec_lo = h->rec_hi = NAN;
    }
    if (!isfinite(r->target)) {
        snprintf(r->xp_note, sizeof(r->xp_note),
                 "no laws and no recommendation: no finished "
                 "run");
        return ST_OK;
    }
    if (r->n_hp == 0) {
        snprintf(r->xp_note, sizeof(r->xp_note),
                 "no laws and no recommendation: no searched "
                 "parameter");
        return ST_OK;
    }
    st_status rc = feed(r);
    if (rc || !r->xp)
        return rc;
    rc = read_front(r);
    if (rc)
        return rc;

    /* the grid the laws are drawn on: the fitted costs to the target and the beyond runs */
    double glo = r->cost_lo, ghi = fmax(r->cost_hi, r->target);
    for (size_t i = 0; i < r->n_runs; i++)
        if (r->runs[i].beyond && r->runs[i].cost > ghi)
            ghi = r->runs[i].cost;
    double grid[RP_GRID], l0 = log10(glo) - 0.1, l1 = log10(ghi) + 0.1;
    for (size_t g = 0; g < RP_GRID; g++)
        grid[g] = pow(10, l0 + (l1 - l0) * (double)g / (RP_GRID - 1));

    /* the objective's law along the front */
    if (fit_xp_front_loss_law(r->xp, r->loss_nat) == ST_OK) {
        rc = curve(r, (size_t)-1, grid, &r->loss_law, &r->loss_at, &r->loss_at_lo, &r->loss_at_hi);
        if (rc)
            return rc;
    } else {
        snprintf(r->loss_note, sizeof(r->loss_note), "no loss law: %s",
                 r->maximize      ? "the objective is maximised"
                 : r->n_front < 4 ? "fewer than 4 groups on the front"
                                  : "the objective is not positive on the front, or the fit "
                                    "failed");
    }
    /* each parameter's law along the front */
    for (size_t k = 0; k < r->n_hp; k++) {
        rp_hp *h = &r->hp[k];
        double coef[2], ci[2];
        if (fit_xp_front_law(r->xp, h->xi, coef, ci) != ST_OK)
            continue;
        h->ok = 1;
        h->b0 = coef[0];
        h->b1 = coef[1];
        if (r->o.n_boot > 0)
            h->b1_lo = ci[0], h->b1_hi = ci[1];
        rc = curve(r, h->xi, grid, &h->law, &h->at_target, &h->lo, &h->hi);
        if (rc)
            return rc;
    }

    /* the recommendation */
    fit_xp_get_result(r->xp, &r->res);
    for (size_t k = 0; k < r->n_hp; k++) {
        rp_hp *h = &r->hp[k];
        h->rec = r->res.value[h->xi];
        h->rec_lo = r->res.lo[h->xi];
        h->rec_hi = r->res.hi[h->xi];
    }
    r->rec_obj = r->res.objective;
    r->rec_lo = r->res.objective_lo;
    r->rec_hi = r->res.objective_hi;
    r->p_diverge = r->res.p_diverge;
    if (r->o.n_boot == 0) { /* "no bands": no replicates behind the intervals */
        for (size_t k = 0; k < r->n_hp; k++)
            r->hp[k].rec_lo = r->hp[k].rec_hi = NAN;
        r->rec_lo = r->rec_hi = NAN;
    }
    r->rec_source =
        r->res.method == FIT_XP_METHOD_MODEL
            ? "the model of every run (fit/extrapolate.h): L(N, D) times hyperparameter "
              "penalties, a logistic stability boundary from the failed runs, the expected loss "
              "minimised at the target compute with P(diverge) bounded; intervals over its "
              "bootstrap replicates, with run noise for the objective"
            : "the laws along the Pareto front (fit/extrapolate.h, CARBS' analysis): each "
              "parameter regressed on ln cost, the saturating law for the objective; intervals "
              "over a bootstrap of the front's groups";
    predict_beyond(r);
    return ST_OK;
}
