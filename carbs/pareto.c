/*
 * pareto.c — grouping of successful observations with identical inputs and the cost/objective
 * Pareto groups, plain and conservative (shared specs/carbs.md §5.2–5.3, CARBS utils.py).
 * Fixes CARBS issue #6: when no group's mean cost lies at or below the cost quantile (duplicate
 * inputs observed at different costs), the cheapest groups form the low set instead of crashing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "carbs/carbs_int.h"

/* numpy.isclose(a, b) with rtol 1e-5, atol 1e-8, elementwise over d coordinates */
static int isclose_vec(size_t d, const double *a, const double *b)
{
    for (size_t i = 0; i < d; i++)
        if (!(fabs(a[i] - b[i]) <= 1e-8 + 1e-5 * fabs(b[i])))
            return 0;
    return 1;
}

typedef struct sort_ctx {
    size_t d;
    const double *X;
    size_t idx;
} sort_ctx;

static int cmp_lex(const void *pa, const void *pb)
{
    const sort_ctx *a = pa, *b = pb;
    const double *xa = a->X + a->idx * a->d, *xb = b->X + b->idx * b->d;
    for (size_t i = 0; i < a->d; i++) {
        if (xa[i] < xb[i])
            return -1;
        if (xa[i] > xb[i])
            return 1;
    }
    return (a->idx > b->idx) - (a->idx < b->idx); /* stable */
}

/* Sorted by mean cost ascending, ties kept in group order (a stable sort by index). */
typedef struct cost_key {
    double cost;
    size_t g;
} cost_key;

static int cmp_cost(const void *pa, const void *pb)
{
    const cost_key *a = pa, *b = pb;
    if (a->cost < b->cost)
        return -1;
    if (a->cost > b->cost)
        return 1;
    return (a->g > b->g) - (a->g < b->g);
}

void pareto_free(pgroup *groups, size_t n_groups, size_t *sel)
{
    if (groups && n_groups > 0)
        free(groups[0].members); /* one block for all members */
    free(groups);
    free(sel);
}

st_status pareto_groups(size_t n, size_t d, const double *X, const double *value,
                        const double *cost, double min_cost_fraction, int conservative,
                        pgroup **groups_out, size_t **sel_out, size_t *n_groups_out,
                        size_t *n_sel_out)
{
    *groups_out = NULL;
    *sel_out = NULL;
    *n_groups_out = *n_sel_out = 0;
    if (n == 0)
        return ST_OK;

    sort_ctx *order = malloc(n * sizeof(*order));
    size_t *members = malloc(n * sizeof(*members));
    unsigned char *taken = calloc(n, 1);
    pgroup *groups = malloc(n * sizeof(*groups));
    cost_key *high = malloc(n * sizeof(*high));
    size_t *sel = malloc(n * sizeof(*sel));
    if (!order || !members || !taken || !groups || !high || !sel) {
        free(order);
        free(members);
        free(taken);
        free(groups);
        free(high);
        free(sel);
        return ST_ENOMEM;
    }

    /* Group: sort lexicographically, then repeatedly take the last remaining observation and pull
     * every remaining one that is isclose to it. The reference member comes first. */
    for (size_t i = 0; i < n; i++)
        order[i] = (sort_ctx){d, X, i};
    qsort(order, n, sizeof(*order), cmp_lex);
    size_t n_groups = 0, n_members = 0;
    for (size_t k = n; k-- > 0;) {
        size_t ref = order[k].idx;
        if (taken[ref])
            continue;
        pgroup *g = &groups[n_groups++];
        g->members = members + n_members;
        g->n = 0;
        for (size_t j = k + 1; j-- > 0;) {
            size_t o = order[j].idx;
            if (!taken[o] && isclose_vec(d, X + o * d, X + ref * d)) {
                taken[o] = 1;
                g->members[g->n++] = o;
            }
        }
        /* put the reference first: it was found first (j = k) so it already is */
        double sc = 0, sv = 0, mv = -INFINITY;
        for (size_t m = 0; m < g->n; m++) {
            sc += cost[g->members[m]];
            sv += value[g->members[m]];
            if (value[g->members[m]] > mv)
                mv = value[g->members[m]];
        }
        g->cost = sc / (double)g->n;
        g->value = sv / (double)g->n;
        g->max_value = mv;
        n_members += g->n;
    }
    free(order);
    free(taken);
    /* members of group 0 start the block, so pareto_free can release it through groups[0] */

    /* Low set: groups with mean cost <= the cost quantile of the individual observations. */
    double c_min = quantile_linear(n, cost, min_cost_fraction);
    size_t n_high = 0;
    int any_low = 0;
    for (size_t g = 0; g < n_groups; g++)
        any_low |= groups[g].cost <= c_min;
    if (!any_low) { /* CARBS issue #6: take the cheapest groups as the low set */
        c_min = INFINITY;
        for (size_t g = 0; g < n_groups; g++)
            if (groups[g].cost < c_min)
                c_min = groups[g].cost;
    }

    /* First Pareto group: the best low-set group (conservative: among multi-member ones, if any).
     */
    int low_multi = 0;
    if (conservative)
        for (size_t g = 0; g < n_groups; g++)
            low_multi |= groups[g].cost <= c_min && groups[g].n >= 2;
    size_t first = n_groups;
    for (size_t g = 0; g < n_groups; g++) {
        if (groups[g].cost > c_min) {
            high[n_high++] = (cost_key){groups[g].cost, g};
            continue;
        }
        if (low_multi && groups[g].n < 2)
            continue;
        if (first == n_groups || groups[g].value > groups[first].value)
            first = g;
    }
    size_t n_sel = 0;
    sel[n_sel++] = first;
    double best = groups[first].value, best_max = groups[first].max_value;

    /* Walk the high set by increasing cost, appending groups that improve on the front. */
    qsort(high, n_high, sizeof(*high), cmp_cost);
    for (size_t h = 0; h < n_high; h++) {
        const pgroup *g = &groups[high[h].g];
        int better;
        if (!conservative)
            better = g->value > best;
        else if (g->n >= 2)
            better = g->value > best;
        else
            better = g->value > best_max; /* a single lucky sample must beat every member */
        if (better) {
            /* the same cost as the last point and better: it dominates it and replaces it
             * (ties in cost keep only the best group) */
            if (n_sel > 1 && groups[sel[n_sel - 1]].cost == g->cost)
                n_sel--;
            sel[n_sel++] = high[h].g;
            best = g->value;
            best_max = g->max_value;
        }
    }
    free(high);
    /* In the conservative rule best_max is the largest value of the last appended group, and a
     * multi-member group is compared by its mean; the plain rule uses means only. */

    *groups_out = groups;
    *sel_out = sel;
    *n_groups_out = n_groups;
    *n_sel_out = n_sel;
    return ST_OK;
}
