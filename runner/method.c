/*
 * method.c — the baselines a sweep file may ask for instead of CARBS (`method: grid | random`):
 * point `index` of a grid (the product of every searched parameter's grid values, in file
 * order, the last parameter varying fastest; combinations that differ only in an inactive
 * conditional parameter counted once) or of a random search (each parameter uniform in its
 * space between its bounds: log-uniform for a log space, uniform in log-odds for logit, a
 * choice uniformly), as a proposer for the controller and for ask. A pure function of the
 * sweep file, the index and the seed. Not here: CARBS (carbs/), study mode (study/).
 */
#include "runner/runner_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Grid value g (0 .. n-1) of parameter ps in parameter units. */
static double grid_value(const runner_param_spec *ps, size_t g, size_t n)
{
    if (ps->grid)
        return ps->grid[g];
    if (ps->choices)
        return (double)g;
    double t = n > 1 ? (double)g / (double)(n - 1) : 0.5, lo = ps->p.min, hi = ps->p.max, v;
    if (t == 0 || t == 1)
        v = t == 0 ? lo : hi; /* the bounds exactly */
    else if (ps->p.space == CARBS_SPACE_LOG)
        v = exp(log(lo) + t * (log(hi) - log(lo)));
    else if (ps->p.space == CARBS_SPACE_LOGIT) {
        double a = log(lo / (1 - lo)), b = log(hi / (1 - hi));
        v = 1 / (1 + exp(-(a + t * (b - a))));
    } else
        v = lo + t * (hi - lo);
    if (ps->p.is_integer)
        v = fmin(fmax(nearbyint(v / ps->p.rounding) * ps->p.rounding, lo), hi);
    return v;
}

size_t runner_grid_count(const runner_param_spec *ps)
{
    if (ps->is_fixed)
        return 1;
    if (ps->grid)
        return ps->n_grid;
    if (ps->choices)
        return ps->p.n_choices;
    return ps->n_grid ? ps->n_grid : RUNNER_GRID_DEFAULT;
}

/* Combination k of the full product into x; 0 if an inactive parameter is off its first value
 * (the same run as another combination). */
static int combination(const runner_config *cfg, size_t k, double *x)
{
    size_t rest = k;
    for (size_t i = cfg->n_params; i-- > 0;) {
        size_t n = runner_grid_count(&cfg->params[i]);
        size_t g = rest % n;
        rest /= n;
        x[i] = cfg->params[i].is_fixed ? cfg->params[i].fixed_value
                                       : grid_value(&cfg->params[i], g, n);
        x[cfg->n_params + i] = (double)g;
    }
    for (size_t i = 0; i < cfg->n_params; i++)
        if (!cfg->params[i].is_fixed && !runner_param_active(cfg, x, i)) {
            if (x[cfg->n_params + i] != 0)
                return 0;
            x[i] = NAN;
        }
    return 1;
}

static st_status grid_point(const runner_config *cfg, size_t index, double *x, char *errmsg)
{
    size_t total = 1;
    for (size_t i = 0; i < cfg->n_params; i++) {
        size_t n = runner_grid_count(&cfg->params[i]);
        if (total > ((size_t)1 << 40) / n)
            return st_errf(errmsg, ST_EINVAL, "the grid has more than 2^40 points");
        total *= n;
    }
    double *w = malloc(2 * (cfg->n_params ? cfg->n_params : 1) * sizeof(double));
    if (!w)
        return ST_ENOMEM;
    /* the distinct combinations, walked in order; past the last, the grid starts again */
    size_t distinct = 0;
    for (size_t k = 0; k < total; k++)
        distinct += (size_t)combination(cfg, k, w);
    if (distinct == 0) {
        free(w);
        return st_errf(errmsg, ST_EINVAL, "the grid has no valid combination of values");
    }
    size_t want = index % distinct, seen = 0;
    for (size_t k = 0; k < total; k++)
        if (combination(cfg, k, w) && seen++ == want)
            break;
    memcpy(x, w, cfg->n_params * sizeof(double));
    free(w);
    return ST_OK;
}

static double random_value(const runner_param_spec *ps, st_rng *g)
{
    if (ps->choices)
        return (double)st_rng_uniform_int(g, ps->p.n_choices);
    double u = st_rng_uniform(g), lo = ps->p.min, hi = ps->p.max, v;
    if (ps->p.space == CARBS_SPACE_LOG)
        v = exp(log(lo) + u * (log(hi) - log(lo)));
    else if (ps->p.space == CARBS_SPACE_LOGIT) {
        double a = log(lo / (1 - lo)), b = log(hi / (1 - hi));
        v = 1 / (1 + exp(-(a + u * (b - a))));
    } else
        v = lo + u * (hi - lo);
    if (ps->p.is_integer)
        v = fmin(fmax(nearbyint(v / ps->p.rounding) * ps->p.rounding, lo), hi);
    return v;
}

static st_status random_point(const runner_config *cfg, size_t index, double *x)
{
    st_rng *g = NULL;
    if (st_rng_create(st_mix64(cfg->seed ^ (0x6a09e667f3bcc909ull * ((uint64_t)index + 1))), &g) !=
        ST_OK)
        return ST_ENOMEM;
    for (size_t i = 0; i < cfg->n_params; i++) {
        const runner_param_spec *ps = &cfg->params[i];
        double v = ps->is_fixed ? ps->fixed_value : random_value(ps, g); /* always drawn */
        x[i] = v;
    }
    for (size_t i = 0; i < cfg->n_params; i++)
        if (!cfg->params[i].is_fixed && !runner_param_active(cfg, x, i))
            x[i] = NAN;
    st_rng_destroy(g);
    return ST_OK;
}

st_status runner_method_point(const runner_config *cfg, size_t index, double *x, char *errmsg)
{
    char scratch[ST_ERRMSG_MAX];
    errmsg = errmsg ? errmsg : scratch;
    if (cfg->method == RUNNER_METHOD_GRID)
        return grid_point(cfg, index, x, errmsg);
    if (cfg->method == RUNNER_METHOD_RANDOM)
        return random_point(cfg, index, x);
    return st_errf(errmsg, ST_EINVAL, "the sweep's method is not grid or random");
}

st_status runner_method_proposer(void *user, const runner_propose_request *req, double *x,
                                 char *errmsg)
{
    (void)user;
    return runner_method_point(req->cfg, req->index, x, errmsg);
}
