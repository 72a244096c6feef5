/*
 * gpcache.c — the output, cost and success GPs of the Bayesian step, kept between suggestions
 * when they condition on every run (recommended mode, no subset: subset.c). Refitting the
 * hyperparameters and refactorising K at every suggestion cost O(n^3) (docs/benchmarks.md
 * section 10); here a GP over n rows is
 *   - refitted only at the refit points r(n): n itself up to CARBS_GPC_MIN (256) rows, then
 *     at 256 and every growth by 1/GPC_GROWTH (256, 272, 289, ..., 897, 953, 1012, ...): at
 *     most 256 rows, the suggestions are bit for bit those of a refit at every suggestion
 *     (the default's output and cost GPs never have more, gp_max_points; its success GP has
 *     more only with over 256 observations, failures included); above, the hyperparameters are
 *     fitted on the first r rows alone, with targets transformed from those rows alone and a
 *     generator seeded by (seed, r, which GP), and the factor of those r rows is computed afresh;
 *   - then extended by the rows r .. n-1, appended to the factor one at a time in order
 *     (gp_extend, O(n^2) each); the targets of all n rows are today's (O(n^2) solve).
 * So the factor is a function of the rows, the refit point and the options alone: a handle
 * rebuilt or imported from its runs, whose cache is empty, refits at the same point with the
 * same seed and appends the same rows in the same order, bit for bit what the live handle
 * built over many suggestions (issue 20; tests/carbs/test_carbs_gpcache.c). An incrementally
 * extended factor is not bit-identical to a fresh factorisation of all n rows (about 1e-13
 * relative), which is why the live handle never takes one at n: it takes it at r.
 * Fantasies appended during a suggestion are dropped at the next use (gp_truncate).
 * The cost GP's rows are the cost-only observations first, then the successes, so that new
 * successes append; a new cost-only observation moves the refit (its count is in the key).
 */
#include <stdlib.h>
#include <string.h>

#include "carbs/carbs_int.h"

#ifndef GPC_GROWTH    /* (-DGPC_GROWTH=1000000: a refit at every suggestion, for ablations) */
#define GPC_GROWTH 16 /* refit when the rows grew by 1/16 since the last refit point */
#endif
#define GPC_SALT 0x67706361636865ULL

typedef struct gpc_slot {
    gp *g;             /* NULL: empty */
    size_t r, n_fixed; /* refit point (varying rows) and fixed rows fitted on */
    size_t n;          /* rows in the factor (fantasies beyond are dropped) */
} gpc_slot;

struct carbs_gpcache {
    gpc_slot slot[GPC_N];
    double *center;  /* D: the linear-kernel centre the slots were fitted at */
    carbs_options o; /* the options they were fitted with (same_setup) */
    st_rng *rng;     /* the refits' generator */
};

size_t carbs_priv_refit_point(size_t n)
{
    if (n <= CARBS_GPC_MIN)
        return n;
    size_t r = CARBS_GPC_MIN, step = r / GPC_GROWTH ? r / GPC_GROWTH : 1;
    while (r + step <= n) {
        r += step;
        step = r / GPC_GROWTH ? r / GPC_GROWTH : 1;
    }
    return r;
}

static void slot_drop(gpc_slot *s)
{
    gp_destroy(s->g);
    memset(s, 0, sizeof(*s));
}

void carbs_priv_gpcache_free(carbs *c)
{
    carbs_gpcache *k = c->gpc;
    if (!k)
        return;
    for (int i = 0; i < GPC_N; i++)
        slot_drop(&k->slot[i]);
    free(k->center);
    st_rng_destroy(k->rng);
    free(k);
    c->gpc = NULL;
}

/* Whether the slots were fitted with the centre and the options the GPs now depend on. */
static int same_setup(const carbs *c, const carbs_gpcache *k)
{
    const carbs_options *a = &c->o, *b = &k->o;
    return !memcmp(k->center, c->center_b, c->d * sizeof(double)) && a->seed == b->seed &&
           a->mode == b->mode && a->maximize == b->maximize &&
           a->search_radius == b->search_radius && a->gp_restarts == b->gp_restarts &&
           a->gp_max_fit_points == b->gp_max_fit_points &&
           a->output_transform == b->output_transform;
}

/* The cache, created on first use and emptied when the setup changed. */
static st_status cache_ready(carbs *c, carbs_gpcache **out)
{
    carbs_gpcache *k = c->gpc;
    if (k && !same_setup(c, k))
        carbs_priv_gpcache_free(c), k = NULL;
    if (!k) {
        k = calloc(1, sizeof(*k));
        if (!k)
            return ST_ENOMEM;
        k->center = malloc((c->d ? c->d : 1) * sizeof(double));
        if (!k->center || st_rng_create(1, &k->rng) != ST_OK) {
            free(k->center);
            free(k);
            return ST_ENOMEM;
        }
        memcpy(k->center, c->center_b, c->d * sizeof(double));
        k->o = c->o;
        c->gpc = k;
    }
    *out = k;
    return ST_OK;
}

/* The targets of the first n rows as the refit sees them: transformed from those rows alone
 * (the output GP: the output transform times the sign; the cost GP: the log-cost map). */
static st_status prefix_targets(const carbs *c, gpc_kind kind, size_t n, const double *raw,
                                double *y)
{
    if (kind == GPC_SUCC) {
        memcpy(y, raw, n * sizeof(double));
        return ST_OK;
    }
    if (kind == GPC_COST) {
        logcost lc;
        logcost_fit(&lc, n, raw);
        for (size_t i = 0; i < n; i++)
            y[i] = logcost_forward(&lc, raw[i]);
        return ST_OK;
    }
    qt t;
    memset(&t, 0, sizeof(t));
    st_status s = carbs_priv_output_qt(c, n, raw, &t);
    double sg = c->o.maximize ? 1.0 : -1.0;
    for (size_t i = 0; s == ST_OK && i < n; i++)
        y[i] = sg * qt_forward(&t, raw[i]);
    qt_clear(&t);
    return s;
}

/* Fits slot s afresh on the first n_fit rows (see the top). */
static st_status refit(carbs *c, carbs_gpcache *k, gpc_slot *s, gpc_kind kind, size_t n_fit,
                       const double *X, const double *raw)
{
    double *y = malloc((n_fit ? n_fit : 1) * sizeof(double));
    if (!y)
        return ST_ENOMEM;
    gp *g = NULL;
    st_status st = prefix_targets(c, kind, n_fit, raw, y);
    uint64_t key = GPC_SALT ^ ((uint64_t)s->r << 2 | (uint64_t)kind) ^ ((uint64_t)s->n_fixed << 40);
    st_rng_reseed(k->rng, st_mix64(c->o.seed ^ st_mix64(key)));
    if (st == ST_OK)
        st = carbs_priv_fit_gp(c, n_fit, X, y, k->rng, &g);
    free(y);
    gp_destroy(s->g);
    s->g = NULL;
    if (st != ST_OK) {
        gp_destroy(g);
        return st;
    }
    s->g = g;
    s->n = n_fit;
    return ST_OK;
}

st_status carbs_priv_gp_get(carbs *c, gpc_kind kind, size_t n, size_t n_fixed, const double *X,
                            const double *y, const double *raw, gp **out)
{
    carbs_gpcache *k;
    *out = NULL;
    st_status st = cache_ready(c, &k);
    if (st != ST_OK)
        return st;
    gpc_slot *s = &k->slot[kind];
    size_t r = carbs_priv_refit_point(n - n_fixed);
    if (s->g)
        gp_truncate(s->g, s->n);
    if (!s->g || s->r != r || s->n_fixed != n_fixed || s->n > n || !gp_same_points(s->g, s->n, X)) {
        s->r = r;
        s->n_fixed = n_fixed;
        st = refit(c, k, s, kind, n_fixed + r, X, raw);
    }
    if (st == ST_OK && s->n < n)
        st = gp_extend(s->g, n - s->n, X + s->n * c->d);
    if (st == ST_OK)
        st = gp_set_targets(s->g, y);
    if (st != ST_OK) {
        slot_drop(s);
        return st;
    }
    s->n = n;
    *out = s->g;
    return ST_OK;
}
