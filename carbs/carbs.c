/*
 * carbs.c — the optimizer handle: creation and validation, observations, outstanding
 * suggestions, warm start, inspection and the in-process driver. The suggestion logic lives in
 * suggest.c (candidates, phases) and models.c (the GPs it fits), the option table in options.c,
 * persistence in state.c.
 * Pure: no I/O, no clock, no globals; all randomness from the handle's RNG (carbs_int.h).
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "carbs/carbs_int.h"

const char *carbs_errmsg(const carbs *c)
{
    return c ? c->errmsg : "no optimizer handle";
}

size_t carbs_dim(const carbs *c)
{
    return c->d;
}

const carbs_param *carbs_get_param(const carbs *c, size_t i)
{
    return i < c->d ? &c->params[i] : NULL;
}

st_status carbs_param_index(const carbs *c, const char *name, size_t *index)
{
    for (size_t i = 0; i < c->d; i++)
        if (name && !strcmp(c->params[i].name, name)) {
            *index = i;
            return ST_OK;
        }
    return ST_ENOTFOUND;
}

const carbs_options *carbs_get_options(const carbs *c)
{
    return &c->o;
}

static st_status validate_options(const carbs_options *o, char *msg)
{
    if (o->mode != CARBS_MODE_RECOMMENDED && o->mode != CARBS_MODE_FAITHFUL)
        return st_errf(msg, ST_EINVAL, "option mode: unknown value %d", (int)o->mode);
    if (!(o->search_radius > 0) || !isfinite(o->search_radius))
        return st_errf(msg, ST_EINVAL, "option search_radius must be positive (got %g)",
                       o->search_radius);
    if (isinf(o->exploration_bias))
        return st_errf(msg, ST_EINVAL, "option exploration_bias must be finite (NaN: auto)");
    if (o->candidates_per_dim == 0 || o->candidates_per_dim > 100000)
        return st_errf(msg, ST_EINVAL, "option candidates_per_dim must be in [1, 100000]");
    if (!(o->max_suggestion_cost > 0))
        return st_errf(msg, ST_EINVAL, "option max_suggestion_cost must be positive (got %g)",
                       o->max_suggestion_cost);
    if (!(o->cost_cap_quantile > 0 && o->cost_cap_quantile < 1))
        return st_errf(msg, ST_EINVAL, "option cost_cap_quantile must be in (0, 1) (got %g)",
                       o->cost_cap_quantile);
    if (!(o->min_pareto_cost_fraction >= 0 && o->min_pareto_cost_fraction <= 1))
        return st_errf(msg, ST_EINVAL, "option min_pareto_cost_fraction must be in [0, 1]");
    if (o->gp_restarts > 64)
        return st_errf(msg, ST_EINVAL, "option gp_restarts must be at most 64 (got %zu)",
                       o->gp_restarts);
    if (o->gp_max_points > 0 && o->gp_max_points < 16)
        return st_errf(msg, ST_EINVAL,
                       "option gp_max_points must be 0 (all) or at least 16 (got %zu)",
                       o->gp_max_points);
    if (o->design > CARBS_DESIGN_GAUSSIAN)
        return st_errf(msg, ST_EINVAL, "option design: unknown value %d", (int)o->design);
    if (o->output_transform > CARBS_TRANSFORM_RANK)
        return st_errf(msg, ST_EINVAL, "option output_transform: unknown value %d",
                       (int)o->output_transform);
    if (o->fantasy != CARBS_FANTASY_THOMPSON && o->fantasy != CARBS_FANTASY_MEAN)
        return st_errf(msg, ST_EINVAL, "option fantasy: unknown value %d", (int)o->fantasy);
    return ST_OK;
}

st_status carbs_set_options(carbs *c, const carbs_options *opts)
{
    c->errmsg[0] = 0;
    st_status s = validate_options(opts, c->errmsg);
    if (s == ST_OK)
        c->o = *opts;
    return s;
}

void carbs_destroy(carbs *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->d && c->params; i++) {
        free((char *)c->params[i].name);
        free((char *)c->params[i].active_if);
    }
    free(c->params);
    carbs_priv_qrng_free(c);
    carbs_priv_gpcache_free(c);
    free(c->parent);
    free(c->center_b);
    free(c->lo_b);
    free(c->hi_b);
    free(c->obs_x);
    free(c->obs_b);
    free(c->obs_y);
    free(c->obs_c);
    free(c->obs_fail);
    free(c->cobs_x);
    free(c->cobs_b);
    free(c->cobs_c);
    free(c->out_id);
    free(c->out_x);
    free(c->out_b);
    free(c->out_born);
    st_rng_destroy(c->rng);
    free(c);
}

/* active_if of parameter i names an earlier categorical parameter, and the mask only its
 * choices (parents first: no cycles, and activity is decided in one pass). */
static st_status check_condition(const carbs_param *params, size_t i, char *msg)
{
    const carbs_param *p = &params[i];
    for (size_t j = 0; j < i; j++) {
        if (strcmp(params[j].name, p->active_if))
            continue;
        if (params[j].space != CARBS_SPACE_CATEGORICAL)
            return st_errf(msg, ST_EINVAL, "parameter '%s': active_if '%s' is not categorical",
                           p->name, p->active_if);
        size_t k = params[j].n_choices;
        if (k < 64 && (p->active_mask >> k))
            return st_errf(msg, ST_EINVAL,
                           "parameter '%s': active_mask names a choice beyond the %zu of '%s'",
                           p->name, k, p->active_if);
        return ST_OK;
    }
    return st_errf(msg, ST_EINVAL,
                   "parameter '%s': active_if '%s' is not a parameter given before it", p->name,
                   p->active_if);
}

/* Copies parameter p into c's slot i: owned strings, a categorical's fixed bounds. */
static st_status copy_param(carbs *c, size_t i, const carbs_param *p)
{
    c->params[i] = *p;
    c->params[i].name = NULL;
    c->params[i].active_if = NULL;
    c->parent[i] = SIZE_MAX;
    if (p->space == CARBS_SPACE_CATEGORICAL) {
        c->params[i].min = 0.0;
        c->params[i].max = (double)(p->n_choices - 1);
        c->params[i].scale = 1.0;
        c->params[i].is_integer = 0;
    }
    c->params[i].name = strdup(p->name);
    if (!c->params[i].name)
        return ST_ENOMEM;
    if (p->active_if) {
        c->params[i].active_if = strdup(p->active_if);
        if (!c->params[i].active_if)
            return ST_ENOMEM;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(c->params[j].name, p->active_if))
                c->parent[i] = j;
    }
    return ST_OK;
}

st_status carbs_create(const carbs_param *params, size_t n_params, const carbs_options *opts,
                       carbs **out, char *errmsg)
{
    char scratch[ST_ERRMSG_MAX];
    char *msg = errmsg ? errmsg : scratch;
    msg[0] = 0;
    *out = NULL;
    carbs_options o = opts ? *opts : carbs_options_default();
    if (n_params > 0 && !params)
        return st_errf(msg, ST_EINVAL, "the search space has no parameters");
    st_status s = validate_options(&o, msg);
    if (s != ST_OK)
        return s;
    for (size_t i = 0; i < n_params; i++) {
        carbs_param q = params[i];
        q.scale = space_scale(&q, o.mode == CARBS_MODE_FAITHFUL);
        s = space_validate(&q, msg);
        if (s != ST_OK)
            return s;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(params[i].name, params[j].name))
                return st_errf(msg, ST_EINVAL, "parameter '%s' is given twice", params[i].name);
        if (params[i].active_if && (s = check_condition(params, i, msg)) != ST_OK)
            return s;
    }

    carbs *c = calloc(1, sizeof(*c));
    if (!c)
        return st_errf(msg, ST_ENOMEM, "out of memory");
    c->d = n_params;
    c->o = o;
    c->next_id = 1;
    /* n_params 0: a space with nothing to search (every run is the same fixed point); the
     * blocks still exist so that no pointer is NULL */
    c->params = calloc(n_params ? n_params : 1, sizeof(*c->params));
    c->center_b = malloc((n_params ? n_params : 1) * sizeof(double));
    c->lo_b = malloc((n_params ? n_params : 1) * sizeof(double));
    c->hi_b = malloc((n_params ? n_params : 1) * sizeof(double));
    c->parent = malloc((n_params ? n_params : 1) * sizeof(size_t));
    if (!c->params || !c->center_b || !c->lo_b || !c->hi_b || !c->parent)
        goto oom;
    for (size_t i = 0; i < n_params; i++) {
        c->d = i; /* what carbs_destroy frees on the way out */
        if (copy_param(c, i, &params[i]) != ST_OK) {
            c->d = i + 1;
            goto oom;
        }
        if (params[i].space != CARBS_SPACE_CATEGORICAL)
            c->params[i].scale = space_scale(&params[i], o.mode == CARBS_MODE_FAITHFUL);
        c->center_b[i] = space_to_basic(&c->params[i], params[i].center);
        space_bounds_basic(&c->params[i], &c->lo_b[i], &c->hi_b[i]);
    }
    c->d = n_params;
    if (st_rng_create(o.seed, &c->rng) != ST_OK)
        goto oom;
    *out = c;
    return ST_OK;
oom:
    carbs_destroy(c);
    return st_errf(msg, ST_ENOMEM, "out of memory");
}

/* ---- observations ------------------------------------------------------------------------ */

int carbs_priv_active(const carbs *c, const double *v, size_t i)
{
    /* parents come first, so their own activity is decided before */
    for (size_t j = c->parent[i]; j != SIZE_MAX; i = j, j = c->parent[j]) {
        double k = v[j];
        if (!(k >= 0 && k < 64) || !((c->params[i].active_mask >> (unsigned)nearbyint(k)) & 1u))
            return 0;
    }
    return 1;
}

void carbs_priv_to_basic(const carbs *c, const double *x, double *b, double *x_copy)
{
    for (size_t i = 0; i < c->d; i++) {
        int on = carbs_priv_active(c, x, i);
        b[i] = on ? space_to_basic(&c->params[i], x[i]) : c->center_b[i];
        if (x_copy)
            x_copy[i] = on ? x[i] : NAN;
    }
}

static st_status grow(void **p, size_t elem, size_t cap)
{
    size_t bytes = elem * cap;
    void *q = realloc(*p, bytes > 0 ? bytes : 1); /* d = 0: no values, still a block */
    if (!q)
        return ST_ENOMEM;
    *p = q;
    return ST_OK;
}

static st_status reserve_obs(carbs *c, size_t need)
{
    if (need <= c->cap_obs)
        return ST_OK;
    size_t cap = c->cap_obs ? c->cap_obs * 2 : 64;
    while (cap < need)
        cap *= 2;
    size_t d = c->d;
    if (grow((void **)&c->obs_x, d * sizeof(double), cap) ||
        grow((void **)&c->obs_b, d * sizeof(double), cap) ||
        grow((void **)&c->obs_y, sizeof(double), cap) ||
        grow((void **)&c->obs_c, sizeof(double), cap) ||
        grow((void **)&c->obs_fail, sizeof(int), cap))
        return ST_ENOMEM;
    c->cap_obs = cap;
    return ST_OK;
}

st_status carbs_priv_reserve_outstanding(carbs *c, size_t need)
{
    if (need <= c->cap_out)
        return ST_OK;
    size_t cap = c->cap_out ? c->cap_out * 2 : 16;
    while (cap < need)
        cap *= 2;
    size_t d = c->d;
    if (grow((void **)&c->out_id, sizeof(uint64_t), cap) ||
        grow((void **)&c->out_x, d * sizeof(double), cap) ||
        grow((void **)&c->out_b, d * sizeof(double), cap) ||
        grow((void **)&c->out_born, sizeof(size_t), cap))
        return ST_ENOMEM;
    c->cap_out = cap;
    return ST_OK;
}

static ptrdiff_t find_outstanding(const carbs *c, uint64_t id)
{
    for (size_t k = 0; k < c->n_out; k++)
        if (c->out_id[k] == id)
            return (ptrdiff_t)k;
    return -1;
}

static void remove_outstanding(carbs *c, size_t k)
{
    assert(k < c->n_out);
    size_t d = c->d, tail = c->n_out - k - 1;
    memmove(c->out_id + k, c->out_id + k + 1, tail * sizeof(uint64_t));
    memmove(c->out_x + k * d, c->out_x + (k + 1) * d, tail * d * sizeof(double));
    memmove(c->out_b + k * d, c->out_b + (k + 1) * d, tail * d * sizeof(double));
    memmove(c->out_born + k, c->out_born + k + 1, tail * sizeof(size_t));
    c->n_out--;
}

/* Appends one validated observation (x in parameter units). */
static st_status add_observation(carbs *c, const double *x, double output, double cost, int failed)
{
    if (reserve_obs(c, c->n_obs + 1) != ST_OK)
        return st_errf(c->errmsg, ST_ENOMEM, "out of memory");
    assert(c->n_obs < c->cap_obs);
    size_t n = c->n_obs, d = c->d;
    carbs_priv_to_basic(c, x, c->obs_b + n * d, c->obs_x + n * d);
    c->obs_y[n] = output;
    c->obs_c[n] = cost;
    c->obs_fail[n] = failed;
    c->n_obs++;
    if (failed)
        c->n_fail++;
    else
        c->n_succ++;
    return ST_OK;
}

/* Checks D parameter values: not NaN, not on the edge of their space. */
static st_status check_x(carbs *c, const double *x)
{
    for (size_t i = 0; i < c->d; i++) {
        if (!carbs_priv_active(c, x, i))
            continue;
        double b = space_to_basic(&c->params[i], x[i]);
        if (c->params[i].space == CARBS_SPACE_CATEGORICAL &&
            (x[i] != floor(x[i]) || x[i] < 0 || x[i] > c->params[i].max))
            return st_errf(c->errmsg, ST_EINVAL,
                           "parameter '%s': value %g is not a choice index 0 .. %g",
                           c->params[i].name, x[i], c->params[i].max);
        if (isnan(x[i]) || isnan(b))
            return st_errf(c->errmsg, ST_EINVAL, "parameter '%s': value %g is not valid",
                           c->params[i].name, x[i]);
        if (isinf(b))
            return st_errf(c->errmsg, ST_EINVAL,
                           "parameter '%s': value %g lies at the edge of its space",
                           c->params[i].name, x[i]);
    }
    return ST_OK;
}

/* Whether x (D values, parameter units) lies within the bounds (integers: the padded ones a
 * rounded suggestion may reach). */
static st_status check_bounds(carbs *c, const double *x)
{
    for (size_t i = 0; i < c->d; i++) {
        const carbs_param *p = &c->params[i];
        double pad = p->is_integer ? 0.1 : 0.0;
        if (carbs_priv_active(c, x, i) && (x[i] < p->min - pad || x[i] > p->max + pad))
            return st_errf(c->errmsg, ST_EINVAL,
                           "parameter '%s': value %g is outside its bounds [%g, %g]: an "
                           "observation outside the search space is refused",
                           p->name, x[i], p->min, p->max);
    }
    return ST_OK;
}

st_status carbs_observe(carbs *c, uint64_t id, const double *x, double output, double cost,
                        int failed)
{
    c->errmsg[0] = 0;
    if (x && check_bounds(c, x) != ST_OK)
        return ST_EINVAL;
    return carbs_priv_observe(c, id, x, output, cost, failed);
}

st_status carbs_priv_observe(carbs *c, uint64_t id, const double *x, double output, double cost,
                             int failed)
{
    c->errmsg[0] = 0;
    ptrdiff_t k = -1;
    if (id != 0) {
        k = find_outstanding(c, id);
        if (k < 0)
            return st_errf(c->errmsg, ST_ENOTFOUND,
                           "suggestion %llu is not outstanding (already observed, forgotten, "
                           "expired or never made)",
                           (unsigned long long)id);
    }
    if (!x) {
        if (k < 0)
            return st_errf(c->errmsg, ST_EINVAL,
                           "observe without parameters needs a suggestion id");
        x = c->out_x + (size_t)k * c->d;
    }
    st_status s = check_x(c, x);
    if (s != ST_OK)
        return s;
    if (!isfinite(output))
        failed = 1; /* a NaN or infinite objective is a failed run */
    if (!failed && (!(cost > 0) || !isfinite(cost)))
        return st_errf(c->errmsg, ST_EINVAL, "cost %g must be positive and finite", cost);
    if (k >= 0) {
        /* copy before removal: x may point into the outstanding array */
        double *tmp = malloc(c->d * sizeof(double));
        if (!tmp)
            return st_errf(c->errmsg, ST_ENOMEM, "out of memory");
        memcpy(tmp, x, c->d * sizeof(double));
        s = add_observation(c, tmp, output, failed ? NAN : cost, failed != 0);
        free(tmp);
        if (s != ST_OK)
            return s;
        remove_outstanding(c, (size_t)k);
    } else {
        s = add_observation(c, x, output, failed ? NAN : cost, failed != 0);
        if (s != ST_OK)
            return s;
    }

    /* Expire stale outstanding suggestions (a crashed run must not leave a fantasy forever). */
    if (c->o.max_outstanding_age > 0)
        for (size_t j = c->n_out; j-- > 0;)
            if (c->n_obs - c->out_born[j] >= c->o.max_outstanding_age)
                remove_outstanding(c, j);
    return ST_OK;
}

static st_status reserve_cobs(carbs *c, size_t need)
{
    if (need <= c->cap_cobs)
        return ST_OK;
    size_t cap = c->cap_cobs ? c->cap_cobs * 2 : 16;
    while (cap < need)
        cap *= 2;
    size_t d = c->d;
    if (grow((void **)&c->cobs_x, d * sizeof(double), cap) ||
        grow((void **)&c->cobs_b, d * sizeof(double), cap) ||
        grow((void **)&c->cobs_c, sizeof(double), cap))
        return ST_ENOMEM;
    c->cap_cobs = cap;
    return ST_OK;
}

st_status carbs_observe_cost(carbs *c, uint64_t id, const double *x, double cost)
{
    c->errmsg[0] = 0;
    ptrdiff_t k = -1;
    if (id != 0 && (k = find_outstanding(c, id)) < 0)
        return st_errf(c->errmsg, ST_ENOTFOUND, "suggestion %llu is not outstanding",
                       (unsigned long long)id);
    if (!x && k < 0)
        return st_errf(c->errmsg, ST_EINVAL, "observe_cost without parameters needs an id");
    if (!x)
        x = c->out_x + (size_t)k * c->d;
    st_status s = check_x(c, x);
    if (s != ST_OK)
        return s;
    if (!(cost > 0) || !isfinite(cost))
        return st_errf(c->errmsg, ST_EINVAL, "cost %g must be positive and finite", cost);
    if (reserve_cobs(c, c->n_cobs + 1) != ST_OK)
        return st_errf(c->errmsg, ST_ENOMEM, "out of memory");
    size_t n = c->n_cobs, d = c->d;
    carbs_priv_to_basic(c, x, c->cobs_b + n * d, c->cobs_x + n * d);
    c->cobs_c[n] = cost;
    c->n_cobs++;
    if (k >= 0) /* after the copy: x may point into the outstanding array */
        remove_outstanding(c, (size_t)k);
    return ST_OK;
}

size_t carbs_n_cost_observations(const carbs *c)
{
    return c->n_cobs;
}

st_status carbs_get_cost_observation(const carbs *c, size_t i, double *x, double *cost)
{
    if (i >= c->n_cobs)
        return ST_ERANGE;
    if (x)
        memcpy(x, c->cobs_x + i * c->d, c->d * sizeof(double));
    if (cost)
        *cost = c->cobs_c[i];
    return ST_OK;
}

st_status carbs_set_cost_function(carbs *c, carbs_cost_fn fn, void *data)
{
    c->errmsg[0] = 0;
    c->cost_fn = fn;
    c->cost_data = fn ? data : NULL;
    return ST_OK;
}

st_status carbs_forget(carbs *c, uint64_t id)
{
    c->errmsg[0] = 0;
    ptrdiff_t k = find_outstanding(c, id);
    if (k < 0)
        return st_errf(c->errmsg, ST_ENOTFOUND, "suggestion %llu is not outstanding",
                       (unsigned long long)id);
    remove_outstanding(c, (size_t)k);
    return ST_OK;
}

st_status carbs_add_outstanding(carbs *c, uint64_t id, const double *x)
{
    c->errmsg[0] = 0;
    if (id == 0)
        return st_errf(c->errmsg, ST_EINVAL, "suggestion id 0 is reserved");
    if (find_outstanding(c, id) >= 0)
        return st_errf(c->errmsg, ST_EINVAL, "suggestion %llu is already outstanding",
                       (unsigned long long)id);
    for (size_t i = 0; i < c->d; i++) {
        double b = space_to_basic(&c->params[i], x[i]);
        if (!isfinite(b) && carbs_priv_active(c, x, i))
            return st_errf(c->errmsg, ST_EINVAL, "parameter '%s': value %g is not valid",
                           c->params[i].name, x[i]);
    }
    if (carbs_priv_reserve_outstanding(c, c->n_out + 1) != ST_OK)
        return st_errf(c->errmsg, ST_ENOMEM, "out of memory");
    assert(c->n_out < c->cap_out);
    size_t k = c->n_out++, d = c->d;
    c->out_id[k] = id;
    c->out_born[k] = c->n_obs;
    carbs_priv_to_basic(c, x, c->out_b + k * d, c->out_x + k * d);
    if (id >= c->next_id)
        c->next_id = id + 1;
    /* the run stands for a suggestion that was made: count it, so that a rebuilt optimizer
     * moves on to the next design point and the next seed instead of repeating them */
    c->n_suggest++;
    if (carbs_priv_random_phase(c))
        c->n_design++;
    return ST_OK;
}

void carbs_get_progress(const carbs *c, carbs_progress *p)
{
    p->n_suggest = c->n_suggest;
    p->n_design = c->n_design;
    p->n_resample = c->resample_count;
}

void carbs_set_progress(carbs *c, const carbs_progress *p)
{
    c->n_suggest = p->n_suggest;
    c->n_design = (size_t)p->n_design;
    c->resample_count = (size_t)p->n_resample;
}

st_status carbs_add_outstanding_born(carbs *c, uint64_t id, const double *x, size_t born,
                                     int *registered)
{
    c->errmsg[0] = 0;
    *registered = 0;
    if (born > c->n_obs)
        return st_errf(c->errmsg, ST_EINVAL,
                       "suggestion %llu: made after %zu observations, but there are %zu",
                       (unsigned long long)id, born, c->n_obs);
    if (c->o.max_outstanding_age > 0 && c->n_obs - born >= c->o.max_outstanding_age)
        return ST_OK; /* the live handle expired it already */
    carbs_progress keep;
    carbs_get_progress(c, &keep);
    st_status s = carbs_add_outstanding(c, id, x);
    carbs_set_progress(c, &keep);
    if (s != ST_OK)
        return s;
    c->out_born[c->n_out - 1] = born;
    *registered = 1;
    return ST_OK;
}

st_status carbs_observe_many(carbs *c, size_t n, const double *X, const double *output,
                             const double *cost, const int *failed)
{
    c->errmsg[0] = 0;
    for (size_t r = 0; r < n; r++) {
        st_status s = carbs_observe(c, 0, X + r * c->d, output[r], cost ? cost[r] : 1.0,
                                    failed ? failed[r] : 0);
        if (s != ST_OK) {
            char tmp[ST_ERRMSG_MAX];
            memcpy(tmp, c->errmsg, sizeof(tmp));
            return st_errf(c->errmsg, s, "observation row %zu: %s", r, tmp);
        }
    }
    /* CARBS' initialize_from_observations: the centre moves to the best successful input */
    ptrdiff_t best = -1;
    double sign = c->o.maximize ? 1.0 : -1.0;
    for (size_t i = 0; i < c->n_obs; i++)
        if (!c->obs_fail[i] && (best < 0 || sign * c->obs_y[i] > sign * c->obs_y[best]))
            best = (ptrdiff_t)i;
    if (best >= 0)
        memcpy(c->center_b, c->obs_b + (size_t)best * c->d, c->d * sizeof(double));
    return ST_OK;
}

st_status carbs_set_search_center(carbs *c, const double *center)
{
    c->errmsg[0] = 0;
    for (size_t i = 0; i < c->d; i++) {
        double b = space_to_basic(&c->params[i], center[i]);
        if (!(b > c->lo_b[i] && b < c->hi_b[i]))
            return st_errf(c->errmsg, ST_EINVAL, "parameter '%s': centre %g is outside (%g, %g)",
                           c->params[i].name, center[i], c->params[i].min, c->params[i].max);
    }
    for (size_t i = 0; i < c->d; i++)
        c->center_b[i] = space_to_basic(&c->params[i], center[i]);
    return ST_OK;
}

void carbs_get_search_center(const carbs *c, double *center)
{
    for (size_t i = 0; i < c->d; i++)
        center[i] = space_from_basic(&c->params[i], c->center_b[i]);
}

st_status carbs_warm_start(carbs *c, const carbs *prev, const double *fill)
{
    c->errmsg[0] = 0;
    size_t d = c->d, *map = malloc(d * sizeof(size_t));
    double *x = malloc(d * sizeof(double));
    if (!map || !x) {
        free(map);
        free(x);
        return st_errf(c->errmsg, ST_ENOMEM, "out of memory");
    }
    st_status s = ST_OK;
    for (size_t j = 0; j < prev->d; j++) {
        size_t i;
        if (carbs_param_index(c, prev->params[j].name, &i) != ST_OK) {
            s = st_errf(c->errmsg, ST_ENOTFOUND,
                        "parameter '%s' of the previous optimizer is not in this one",
                        prev->params[j].name);
            goto done;
        }
    }
    for (size_t i = 0; i < d; i++) {
        size_t j;
        map[i] = carbs_param_index(prev, c->params[i].name, &j) == ST_OK ? j : SIZE_MAX;
        if (map[i] == SIZE_MAX) {
            double v = fill ? fill[i] : space_from_basic(&c->params[i], c->center_b[i]);
            double b = space_to_basic(&c->params[i], v);
            if (!(b > c->lo_b[i] && b < c->hi_b[i])) {
                s = st_errf(c->errmsg, ST_EINVAL,
                            "parameter '%s': fill value %g is outside "
                            "its bounds",
                            c->params[i].name, v);
                goto done;
            }
            c->center_b[i] = b;
        }
    }
    for (size_t r = 0; r < prev->n_obs; r++) {
        for (size_t i = 0; i < d; i++)
            x[i] = map[i] == SIZE_MAX ? space_from_basic(&c->params[i], c->center_b[i])
                                      : prev->obs_x[r * prev->d + map[i]];
        s = carbs_priv_observe(c, 0, x, prev->obs_y[r], prev->obs_c[r], prev->obs_fail[r]);
        if (s != ST_OK)
            goto done;
    }
    for (size_t r = 0; r < prev->n_cobs; r++) {
        for (size_t i = 0; i < d; i++)
            x[i] = map[i] == SIZE_MAX ? space_from_basic(&c->params[i], c->center_b[i])
                                      : prev->cobs_x[r * prev->d + map[i]];
        s = carbs_observe_cost(c, 0, x, prev->cobs_c[r]);
        if (s != ST_OK)
            goto done;
    }
    c->resample_count = prev->resample_count;
done:
    free(map);
    free(x);
    return s;
}

/* ---- inspection -------------------------------------------------------------------------- */

size_t carbs_n_observations(const carbs *c)
{
    return c->n_obs;
}

st_status carbs_get_observation(const carbs *c, size_t i, double *x, double *output, double *cost,
                                int *failed)
{
    if (i >= c->n_obs)
        return ST_ERANGE;
    if (x)
        memcpy(x, c->obs_x + i * c->d, c->d * sizeof(double));
    if (output)
        *output = c->obs_y[i];
    if (cost)
        *cost = c->obs_c[i];
    if (failed)
        *failed = c->obs_fail[i];
    return ST_OK;
}

size_t carbs_n_outstanding(const carbs *c)
{
    return c->n_out;
}

st_status carbs_get_outstanding(const carbs *c, size_t i, uint64_t *id, double *x)
{
    if (i >= c->n_out)
        return ST_ERANGE;
    if (id)
        *id = c->out_id[i];
    if (x)
        memcpy(x, c->out_x + i * c->d, c->d * sizeof(double));
    return ST_OK;
}

double carbs_cumulative_cost(const carbs *c)
{
    double s = 0;
    for (size_t i = 0; i < c->n_obs; i++)
        if (!c->obs_fail[i])
            s += c->obs_c[i];
    return s;
}

void carbs_last_info(const carbs *c, carbs_suggestion_info *info)
{
    *info = c->info;
}

/* ---- in-process driver ------------------------------------------------------------------- */

st_status carbs_minimize(carbs *c, carbs_objective f, void *data, size_t max_evals, double max_cost)
{
    c->errmsg[0] = 0;
    double *x = malloc(c->d * sizeof(double)), spent = 0;
    if (!x)
        return st_errf(c->errmsg, ST_ENOMEM, "out of memory");
    st_status s = ST_OK;
    for (size_t e = 0; e < max_evals && spent < max_cost; e++) {
        uint64_t id;
        s = carbs_suggest(c, x, &id);
        if (s != ST_OK)
            break;
        double out = NAN, cost = NAN;
        int r = f(x, &out, &cost, data);
        if (r != 0 && r != 1) {
            carbs_forget(c, id);
            s = st_errf(c->errmsg, ST_ESTATE, "the objective asked to stop (returned %d)", r);
            break;
        }
        if (isfinite(cost) && cost > 0)
            spent += cost;
        s = carbs_observe(c, id, x, out, cost, r == 1);
        if (s != ST_OK)
            break;
    }
    free(x);
    return s;
}
