/*
 * study_stop.c — early stopping in study mode (goal: extrapolate): a run is stopped when no
 * outcome in its interval would change the engine's answer much. Kept simple on purpose: the
 * engine's Chinchilla law L(N, D) (fitted on the sweep's finished runs, refitted as more finish)
 * gives the compute-optimal N_opt(C) and loss L_opt(C) at the run's compute C = 6 N D; a run far
 * from that band (N off N_opt by more than STUDY_STOP_BAND times either way) whose final loss is
 * at least above L_opt(C) (the lower end of its interval, runner_curve_interval) cannot move the
 * compute-optimal frontier the recommendation is read from: the runs that pin it down are near
 * it, and this one cannot reveal a better region. Not the controller's rules (patience, minimum
 * fraction: runner/early_stop.c). Depends on runner/ (the hook, the curve's interval), fit/.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "study/study.h"

#define REFIT_EVERY 5 /* succeeded runs between two fits of the engine */
#define FIRST_FIT   8 /* succeeded runs before the first */

struct study_stop {
    int have_law;
    double natural[5]; /* A, B, E, alpha, beta of the last fit */
    size_t n_fitted;   /* succeeded runs at the last fit (or try) */
};

st_status study_stop_create(study_stop **out)
{
    *out = calloc(1, sizeof(**out));
    return *out ? ST_OK : ST_ENOMEM;
}

void study_stop_destroy(study_stop *s)
{
    free(s);
}

void study_stop_rule(const double natural[5], double N, double D, double bound, double margin,
                     int *stop, char *why)
{
    *stop = 0;
    if (why)
        why[0] = '\0';
    fit_alloc al;
    double C = 6 * N * D;
    if (!(N > 0 && D > 0 && isfinite(bound)) || fit_allocate(natural, C, &al) != ST_OK)
        return;
    double off = fabs(log(N / al.N_opt)), limit = al.L_opt + margin * fabs(al.L_opt);
    *stop = off > log(STUDY_STOP_BAND) && bound > limit;
    if (why)
        snprintf(why, 200,
                 "N %.3g is %.2gx the compute-optimal %.3g at C %.3g and its final loss is at "
                 "least %.5g, above the frontier's %.5g (+%.3g%%)",
                 N, N / al.N_opt, al.N_opt, C, bound, al.L_opt, 100 * margin);
}

/* (Re)fits the engine when enough runs have succeeded since the last fit. */
static void refresh_law(study_stop *ss, const runner_config *cfg, const char *db_path)
{
    runner_store *st = NULL;
    runner_status rs;
    if (runner_store_open(db_path, &st, NULL) != ST_OK)
        return;
    st_status rc = runner_store_status(st, cfg->name, &rs);
    runner_store_close(st);
    size_t n = rc ? 0 : rs.n_by_status[RUNNER_RUN_SUCCEEDED];
    if (n < FIRST_FIT || (ss->n_fitted && n < ss->n_fitted + REFIT_EVERY))
        return;
    ss->n_fitted = n;
    study_options o = study_options_default();
    o.engine.n_boot = 20; /* the law's point estimate is what the rule reads */
    o.engine.interval_prior_draw = o.engine.prior_draw;
    o.backtest = 0;
    study *s = NULL;
    if (study_open(db_path, cfg->name, &o, &s, NULL) == ST_OK && study_run(s) == ST_OK) {
        fit_alloc al;
        const fit_xp *xp = study_engine(s);
        ss->have_law = xp && fit_xp_chinchilla(xp, ss->natural, &al) == ST_OK;
    }
    study_destroy(s);
}

/* The run's model size: its parameter whose role is N, NAN when the sweep has none. */
static double run_N(const runner_config *cfg, const double *x)
{
    for (size_t i = 0; i < cfg->n_params; i++)
        if (fit_xp_role_guess(cfg->params[i].p.name) == FIT_XP_N && x[i] > 0)
            return x[i];
    return NAN;
}

st_status study_stop_check(void *ctx, const runner_config *cfg, const char *db_path,
                           const runner_curve *c, runner_stop_verdict *v)
{
    study_stop *ss = ctx;
    if (!ss || cfg->maximize)
        return ST_OK;
    refresh_law(ss, cfg, db_path);
    double N = run_N(cfg, c->x), pred, lo, hi;
    if (!ss->have_law || !(N > 0) || !(c->planned_tokens > 0))
        return ST_OK; /* no law yet, or the run's N and D are unknown: no verdict */
    char em[ST_ERRMSG_MAX] = "";
    st_status rc = runner_curve_interval(cfg, db_path, c, &pred, &lo, &hi, em);
    if (rc == ST_EINVAL)
        return ST_OK; /* too few points yet */
    if (rc)
        return rc;
    study_stop_rule(ss->natural, N, c->planned_tokens, lo, cfg->es_margin, &v->stop, v->reason);
    v->bound = lo;
    v->final_cost = c->planned_cost;
    return ST_OK;
}
