/*
 * subset.c — which successful runs the GPs condition on when there are more than
 * gp_max_points = M of them (subset of data, Rasmussen & Williams 2006, §8.3.3; Chalupka et
 * al., JMLR 14, 2013, found it competitive with sparse approximations for its cost). An exact
 * GP over n runs costs O(n^3) per suggestion; over M it costs O(M^3) whatever n is.
 * The subset is a function of the runs alone (inputs, outputs, order of observation, Pareto
 * groups), never of the RNG or of earlier suggestions, so an optimizer rebuilt from its saved
 * state or its store suggests what the live one would (issue 20). Not the fitting itself
 * (models.c) nor the hyperparameters' own 128-point subset (gp.c, gp_max_fit_points).
 */
#include <stdlib.h>
#include <string.h>

#include "carbs/carbs_int.h"

#define SUB_SALT 0x5ab5e7c0ffeeULL /* the hash spread's salt: any fixed value */

typedef struct subkey {
    double key; /* smaller first */
    uint64_t h; /* then smaller first */
    size_t k;
} subkey;

static int cmp_subkey(const void *pa, const void *pb)
{
    const subkey *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    if (a->h != b->h)
        return a->h < b->h ? -1 : 1;
    return (a->k > b->k) - (a->k < b->k);
}

typedef struct picker {
    size_t m, n; /* wanted, picked */
    size_t *out;
    unsigned char *taken;
} picker;

static int pick(picker *p, size_t k)
{
    if (p->taken[k] || p->n >= p->m)
        return 0;
    p->taken[k] = 1;
    p->out[p->n++] = k;
    return 1;
}

/* The run not yet picked nearest to origin o (basic units; ties to the earlier run), -1 if
 * none is left. The picks go round the origins, each taking its nearest free run, so that
 * every origin's neighbourhood, where the Bayesian step draws its candidates, is modelled by
 * the runs nearest to it. */
static ptrdiff_t nearest_free(const picker *p, size_t ns, size_t d, const double *Xs,
                              const double *o)
{
    ptrdiff_t best = -1;
    double bd = 0;
    for (size_t k = 0; k < ns; k++) {
        if (p->taken[k])
            continue;
        double s = 0;
        for (size_t i = 0; i < d; i++) {
            double t = Xs[k * d + i] - o[i];
            s += t * t;
        }
        if (best < 0 || s < bd) {
            best = (ptrdiff_t)k;
            bd = s;
        }
    }
    return best;
}

st_status carbs_priv_subset(size_t ns, size_t d, const double *Xs, const double *value,
                            const size_t *obs_idx, size_t n_front, const size_t *front,
                            size_t n_origins, const double *origins, size_t m, size_t *out)
{
    if (m > ns)
        m = ns;
    picker p = {m, 0, out, calloc(ns ? ns : 1, 1)};
    subkey *keys = malloc((ns ? ns : 1) * sizeof(*keys));
    if (!p.taken || !keys) {
        free(p.taken);
        free(keys);
        return ST_ENOMEM;
    }
    size_t q = m / 8, n0;

    /* 1. the Pareto groups' members, cheapest group first: the front the value to beat is
     *    read from, and the origins of the candidates */
    for (size_t j = 0, got = 0; j < n_front && got < q; j++)
        got += (size_t)pick(&p, front[j]);

    /* 2. the best outputs (value: bigger is better), ties to the earlier run */
    for (size_t k = 0; k < ns; k++)
        keys[k] = (subkey){-value[k], 0, k};
    qsort(keys, ns, sizeof(*keys), cmp_subkey);
    n0 = p.n;
    for (size_t j = 0; j < ns && p.n - n0 < q; j++)
        pick(&p, keys[j].k);

    /* 3. the most recent runs: where the search is now */
    n0 = p.n;
    for (size_t k = ns; k-- > 0 && p.n - n0 < q;)
        pick(&p, k);

    /* 4. the runs nearest to each origin, taken in turn, up to 5/8 of the subset */
    while (n_origins > 0 && p.n < 5 * q && p.n < m) {
        size_t before = p.n;
        for (size_t o = 0; o < n_origins && p.n < 5 * q; o++) {
            ptrdiff_t k = nearest_free(&p, ns, d, Xs, origins + o * d);
            if (k >= 0)
                pick(&p, (size_t)k);
        }
        if (p.n == before)
            break;
    }

    /* 5. the rest: a spread over the whole history, ordered by a hash of the run's index
     *    among all observations (so a run keeps its place as later runs arrive) */
    for (size_t k = 0; k < ns; k++)
        keys[k] = (subkey){0, st_mix64((uint64_t)obs_idx[k] ^ SUB_SALT), k};
    qsort(keys, ns, sizeof(*keys), cmp_subkey);
    for (size_t j = 0; j < ns && p.n < m; j++)
        pick(&p, keys[j].k);

    free(keys);
    free(p.taken);
    return ST_OK;
}
