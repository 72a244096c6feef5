/*
 * Above option gp_max_points the GPs condition on a subset of the runs (carbs/subset.c):
 * the subset's picks (distinct, the Pareto members, best and most recent first, the same on
 * every call); below it the suggestions are bit for bit those of gp_max_points 0 (every run);
 * above it a handle rebuilt from the runs (observations, cost-only observations, outstanding
 * runs and counters) or imported from a saved state suggests what the live one does, at
 * every step, with failures and runs in flight.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carbs/carbs_int.h"
#include "tests/check.h"

#define D 3

static carbs *make(size_t max_points, uint64_t seed)
{
    carbs_param p[D];
    carbs_param_init(&p[0], "lr", CARBS_SPACE_LOG, 1e-3);
    p[0].min = 1e-5;
    p[0].max = 1.0;
    carbs_param_init(&p[1], "width", CARBS_SPACE_LOG, 128);
    p[1].min = 16;
    p[1].max = 1024;
    p[1].is_integer = 1;
    p[1].rounding = 16;
    carbs_param_init(&p[2], "warmup", CARBS_SPACE_LOGIT, 0.05);
    carbs_options o = carbs_options_default();
    o.seed = seed;
    o.gp_max_points = max_points;
    carbs *c = NULL;
    char msg[ST_ERRMSG_MAX];
    CHECK_ST(carbs_create(p, D, &o, &c, msg), ST_OK);
    return c;
}

/* a smooth toy: optimum near lr 10^-2.5, width 256; cost grows with width; warmup > 0.08 fails */
static double toy(const double *x, double *cost, int *failed)
{
    double a = log10(x[0]) + 2.5, b = log2(x[1] / 256.0), w = x[2] - 0.1;
    *cost = x[1] * x[1] / 1000.0 * (1 + 0.1 * fabs(sin(1e3 * x[0])));
    *failed = x[2] > 0.08; /* warmup: the centre is 0.05 */
    return 1.0 + a * a + 0.3 * b * b + w * w + 2.0 / sqrt(x[1]);
}

/* A copy of `live` rebuilt from what a store keeps: the observations in order, the cost-only
 * observations, the outstanding runs at their birth and the counters. */
static carbs *rebuild(const carbs *live, size_t max_points, const size_t *born)
{
    carbs *r = make(max_points, carbs_get_options(live)->seed);
    double x[D], y, cost;
    int failed;
    for (size_t i = 0; r && i < carbs_n_observations(live); i++) {
        CHECK_ST(carbs_get_observation(live, i, x, &y, &cost, &failed), ST_OK);
        CHECK_ST(carbs_observe(r, 0, x, y, cost, failed), ST_OK);
    }
    for (size_t i = 0; r && i < carbs_n_cost_observations(live); i++) {
        CHECK_ST(carbs_get_cost_observation(live, i, x, &cost), ST_OK);
        CHECK_ST(carbs_observe_cost(r, 0, x, cost), ST_OK);
    }
    for (size_t i = 0; r && i < carbs_n_outstanding(live); i++) {
        uint64_t id;
        int reg = 0;
        CHECK_ST(carbs_get_outstanding(live, i, &id, x), ST_OK);
        CHECK_ST(carbs_add_outstanding_born(r, id, x, born[id], &reg), ST_OK);
    }
    carbs_progress p;
    carbs_get_progress(live, &p);
    if (r)
        carbs_set_progress(r, &p);
    return r;
}

/* Drives `live` for n suggestions, two runs in flight, every 11th run refused for its cost
 * (a cost-only observation). At each step from `check_from` on, a rebuilt handle and an
 * imported one suggest first; *same counts the steps where both equal the live suggestion,
 * *differ those where a rebuild with every run (gp_max_points 0) suggests otherwise. */
static void drive(carbs *live, size_t n, size_t check_from, size_t *same, size_t *differ)
{
    size_t M = carbs_get_options(live)->gp_max_points, born[512] = {0};
    uint64_t open_ids[2] = {0, 0};
    double open_x[2][D];
    *same = *differ = 0;
    for (size_t k = 0; k < n && k + 1 < 512; k++) {
        double xl[D], xr[D], xi[D], xa[D];
        carbs *r = NULL, *im = NULL, *all = NULL;
        if (k >= check_from) {
            void *buf = NULL;
            size_t len = 0;
            char msg[ST_ERRMSG_MAX];
            r = rebuild(live, M, born);
            all = rebuild(live, 0, born);
            CHECK_ST(carbs_export(live, &buf, &len), ST_OK);
            CHECK_ST(carbs_import(buf, len, &im, msg), ST_OK);
            st_free(buf);
        }
        born[k + 1] = carbs_n_observations(live);
        uint64_t id;
        CHECK_ST(carbs_suggest(live, xl, &id), ST_OK);
        if (r && im && all) {
            CHECK_ST(carbs_suggest(r, xr, NULL), ST_OK);
            CHECK_ST(carbs_suggest(im, xi, NULL), ST_OK);
            CHECK_ST(carbs_suggest(all, xa, NULL), ST_OK);
            *same += !memcmp(xl, xr, sizeof(xl)) && !memcmp(xl, xi, sizeof(xl));
            *differ += memcmp(xl, xa, sizeof(xl)) != 0;
        }
        carbs_destroy(r);
        carbs_destroy(im);
        carbs_destroy(all);
        /* the older of the two in flight is told */
        if (open_ids[0]) {
            double cost, y;
            int failed;
            y = toy(open_x[0], &cost, &failed);
            if (open_ids[0] % 11 == 0)
                CHECK_ST(carbs_observe_cost(live, open_ids[0], NULL, cost), ST_OK);
            else
                CHECK_ST(carbs_observe(live, open_ids[0], NULL, y, cost, failed), ST_OK);
        }
        open_ids[0] = open_ids[1];
        memcpy(open_x[0], open_x[1], sizeof(open_x[0]));
        open_ids[1] = id;
        memcpy(open_x[1], xl, sizeof(xl));
    }
}

/* Below gp_max_points nothing changed: the same suggestions, bit for bit, as with every run. */
static void test_below(void)
{
    carbs *a = make(64, 5), *b = make(0, 5);
    size_t same = 0;
    for (int k = 0; a && b && k < 60; k++) { /* 58 observations at most: below 64 */
        double xa[D], xb[D], y, cost;
        uint64_t ia, ib;
        int failed;
        CHECK_ST(carbs_suggest(a, xa, &ia), ST_OK);
        CHECK_ST(carbs_suggest(b, xb, &ib), ST_OK);
        same += !memcmp(xa, xb, sizeof(xa)) && ia == ib;
        y = toy(xa, &cost, &failed);
        CHECK_ST(carbs_observe(a, ia, NULL, y, cost, failed), ST_OK);
        CHECK_ST(carbs_observe(b, ib, NULL, y, cost, failed), ST_OK);
    }
    CHECK(same == 60);
    CHECK(a && carbs_n_observations(a) == 60);
    carbs_destroy(a);
    carbs_destroy(b);
}

/* Above gp_max_points (16 here, with about 70 runs, failures among them): the live handle, a
 * rebuild and an import agree at every step; the subset is in force (differs from every run). */
static void test_above(void)
{
    carbs *live = make(16, 7);
    size_t same = 0, differ = 0;
    drive(live, 72, 24, &same, &differ);
    CHECK(same == 48);
    CHECK(differ > 0);
    CHECK(live && live->n_fail > 0 && live->n_succ > 40 && carbs_n_cost_observations(live) > 0);
    printf("above: %zu of 48 steps the same rebuilt and imported, %zu differ from every run; "
           "%zu successes, %zu failures, %zu cost-only\n",
           same, differ, live ? live->n_succ : 0, live ? live->n_fail : 0,
           live ? carbs_n_cost_observations(live) : 0);
    carbs_destroy(live);
}

/* The subset itself: m distinct runs, the first m/8 Pareto members, the m/8 best and the m/8
 * most recent among them, the same on a second call. */
static void test_pick(void)
{
    enum { NS = 300, M = 64, NF = 20 };
    double *X = malloc(NS * 2 * sizeof(double)), *v = malloc(NS * sizeof(double));
    size_t idx[NS], front[NF], out[M], out2[M];
    unsigned char in[NS] = {0};
    for (size_t k = 0; k < NS; k++) {
        X[2 * k] = sin(0.7 * (double)k);
        X[2 * k + 1] = cos(1.3 * (double)k);
        v[k] = -fabs(sin(0.37 * (double)k * (double)k));
        idx[k] = 3 * k + 1;
    }
    for (size_t j = 0; j < NF; j++)
        front[j] = 7 * j + 2;
    double origins[4] = {0, 0, 0.5, -0.5};
    CHECK_ST(carbs_priv_subset(NS, 2, X, v, idx, NF, front, 2, origins, M, out), ST_OK);
    CHECK_ST(carbs_priv_subset(NS, 2, X, v, idx, NF, front, 2, origins, M, out2), ST_OK);
    CHECK(!memcmp(out, out2, sizeof(out)));
    size_t distinct = 0, best = 0, recent = 0;
    for (size_t j = 0; j < M; j++) {
        distinct += out[j] < NS && !in[out[j]];
        if (out[j] < NS)
            in[out[j]] = 1;
    }
    CHECK(distinct == M);
    for (size_t j = 0; j < M / 8; j++)
        CHECK(in[front[j]]);
    for (size_t k = NS - M / 8; k < NS; k++)
        recent += in[k];
    CHECK(recent == M / 8);
    for (size_t k = 0; k < NS; k++) { /* no run outside the subset beats the M/8-th best */
        size_t better = 0;
        for (size_t j = 0; j < NS; j++)
            better += v[j] > v[k];
        best += better < M / 8 && !in[k];
    }
    CHECK(best == 0);
    /* fewer runs than m: all of them */
    CHECK_ST(carbs_priv_subset(10, 2, X, v, idx, 2, front, 2, origins, M, out), ST_OK);
    memset(in, 0, sizeof(in));
    for (size_t j = 0; j < 10; j++)
        in[out[j] < 10 ? out[j] : 0]++;
    for (size_t j = 0; j < 10; j++)
        CHECK(in[j] == 1);
    free(X);
    free(v);
}

int main(void)
{
    test_pick();
    test_below();
    test_above();
    return check_summary("carbs.subset");
}
