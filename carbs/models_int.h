/*
 * carbs/models_int.h — the fitted models of one suggestion (carbs/models.c): the successes in
 * surrogate space, the output, cost, success and Pareto GPs, the fantasies at outstanding
 * suggestions and P(success). Private to carbs/ (suggest.c uses them); not installed.
 */
#ifndef SCALETUNE_CARBS_MODELS_INT_H
#define SCALETUNE_CARBS_MODELS_INT_H

#include <math.h>

#include "carbs/carbs_int.h"

/* not exported from libscaletune (tests/python/test_exports.py) */
#pragma GCC visibility push(hidden)

static inline int faithful(const carbs *c)
{
    return c->o.mode == CARBS_MODE_FAITHFUL;
}

/* xi of EI: the option, or by mode when it is NaN ("auto"). Measured on Branin, Hartmann-6 and
 * the cost toy (docs/algorithms/carbs.md): with the tail-keeping output transform, xi = 0 was
 * best in recommended mode; CARBS uses 1. */
static inline double xi_of(const carbs *c)
{
    if (!isnan(c->o.exploration_bias))
        return c->o.exploration_bias;
    return faithful(c) ? 1.0 : 0.0;
}

static inline double sign_of(const carbs *c)
{
    return c->o.maximize ? 1.0 : -1.0; /* CARBS' better_direction_sign */
}

typedef struct models {
    size_t ns;       /* successes */
    double *Xs;      /* ns*D basic inputs of the successes */
    double *ys;      /* ns surrogate outputs: sign * QT(y), bigger is better */
    double *ls;      /* ns scaled log costs l' */
    double *cs;      /* ns costs */
    size_t *obs_idx; /* ns: index of each success among all observations */
    qt qt;
    logcost lc;
    gp *out, *cost, *succ, *par;
    pgroup *groups;
    size_t *sel, n_groups, n_sel;
    double *origins; /* n_sel*D */
    double par_lmin, par_lmax;
    size_t *sub;     /* n_sub successes the GPs condition on, in increasing order (subset.c);
                        NULL: all of them */
    size_t *sub_pri; /* the same, in subset.c's priority order */
    size_t n_sub;
    unsigned borrowed; /* BORROW_*: out, cost, succ are the cache's (gpcache.c) */
    int agree;         /* carbs_priv_repeats_agree's answer for these successes; -1: not yet */
} models;

#define BORROW_OUT  1u
#define BORROW_COST 2u
#define BORROW_SUCC 4u

void carbs_priv_models_clear(models *m);
/* The successes, in observation order: basic inputs, costs and their observation indices. */
st_status carbs_priv_load_successes(const carbs *c, models *m);
/* Recommended mode: whether some successes were run at the same inputs and every such repeat
 * reproduced its objective (to 1e-12 relative): a deterministic objective, which resampling
 * cannot teach anything and whose single runs the conservative Pareto rule need not doubt. */
int carbs_priv_repeats_agree(const carbs *c, models *m);
/* Groups and the Pareto front of the successes, origins = first member of each front group. */
st_status carbs_priv_fit_pareto(carbs *c, models *m, int conservative);
/* The successes in surrogate space and the output, cost and success models (and, with
 * `pareto`, the Pareto groups and the 1-D Pareto model). */
st_status carbs_priv_models_fit(carbs *c, models *m, int pareto);
/* A fantasy output at x from the current output model (Thompson draw or posterior mean). */
st_status carbs_priv_fantasy_value(carbs *c, gp *g, const double *x, double *f);
/* Outstanding suggestions enter the output model with fantasy outputs, one at a time. In
 * faithful mode a fresh model is then refitted on the union, as CARBS does; in recommended mode
 * the fitted hyperparameters are kept and only the factorisation grows. */
st_status carbs_priv_add_fantasies(carbs *c, models *m);
/* P(success) from the success model: Phi(-mu / sd) (recommended) or CARBS' Phi(-mu / var). */
double carbs_priv_p_success(const carbs *c, double mu, double var);

#pragma GCC visibility pop

#endif
