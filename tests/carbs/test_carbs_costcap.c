/*
 * The cost cap (max_suggestion_cost) of carbs/: with an exact cost function no suggestion of
 * any phase is over the cap; with the cost GP's quantile a simulated runner that refuses
 * over-cap runs refuses few, against many without the cap; cost-only observations
 * (carbs_observe_cost) change the cost model and leave the success model exactly as it was;
 * they survive export/import, and a version 1 state still imports.
 * The cost is 6 N D (FLOPs) computed here, independently of the library.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carbs/carbs.h"
#include "tests/check.h"

#define D 3

/* N (parameters), T (tokens), lr; the centre costs 6 * 3e7 * 1e9 = 1.8e17 */
static void space(carbs_param *p)
{
    carbs_param_init(&p[0], "N", CARBS_SPACE_LOG, 3e7);
    p[0].min = 1e6;
    p[0].max = 1e9;
    carbs_param_init(&p[1], "T", CARBS_SPACE_LOG, 1e9);
    p[1].min = 1e7;
    p[1].max = 1e11;
    carbs_param_init(&p[2], "lr", CARBS_SPACE_LOG, 1e-3);
    p[2].min = 1e-5;
    p[2].max = 1.0;
}

static double flops(const double *x)
{
    return 6.0 * x[0] * x[1];
}

static double flops_fn(const double *x, void *data)
{
    (void)data;
    return flops(x);
}

/* a Chinchilla-like loss: better with more N and T, best lr near 1e-3; lr > 0.1 diverges */
static double loss(const double *x, int *failed)
{
    double a = log10(x[2]) + 3.0;
    *failed = x[2] > 0.1;
    return 1.7 + 400.0 / pow(x[0], 0.34) + 410.0 / pow(x[1], 0.28) + 0.2 * a * a;
}

static carbs *make(double cap, uint64_t seed)
{
    carbs_param p[D];
    space(p);
    carbs_options o = carbs_options_default();
    o.max_suggestion_cost = cap;
    o.seed = seed;
    carbs *c = NULL;
    char msg[ST_ERRMSG_MAX];
    CHECK_ST(carbs_create(p, D, &o, &c, msg), ST_OK);
    return c;
}

/* Runs n suggestions (batches of `q`); the runner refuses those over `refuse_above` (it
 * teaches the cost model only) and observes the others. Returns the refusals; phases[] counts
 * the phases of all suggestions and *over_exact those over the cap by the true cost. */
static int drive(carbs *c, int n, size_t q, double refuse_above, int *phases)
{
    int refused = 0;
    double x[4 * D];
    uint64_t id[4];
    carbs_suggestion_info info;
    for (int k = 0; k < n; k += (int)q) {
        if (q == 1)
            CHECK_ST(carbs_suggest(c, x, id), ST_OK);
        else
            CHECK_ST(carbs_suggest_batch(c, q, x, id), ST_OK);
        carbs_last_info(c, &info);
        phases[info.phase]++;
        for (size_t j = 0; j < q; j++) {
            const double *xj = x + j * D;
            int failed;
            double y = loss(xj, &failed), cost = flops(xj);
            if (cost > refuse_above) {
                refused++;
                CHECK_ST(carbs_observe_cost(c, id[j], NULL, cost), ST_OK);
            } else {
                CHECK_ST(carbs_observe(c, id[j], NULL, y, cost, failed), ST_OK);
            }
        }
    }
    return refused;
}

/* The cost is a known expression: none of 200 suggestions, in any phase, exceeds the cap,
 * though the search centre itself is 3.6 times over it. */
static void test_exact(void)
{
    const double cap = 5e16;
    int phases[4] = {0};
    carbs *c = make(cap, 3);
    CHECK_ST(carbs_set_cost_function(c, flops_fn, NULL), ST_OK);
    CHECK(!carbs_cap_blind(c));
    int refused = drive(c, 160, 1, cap, phases);
    refused += drive(c, 40, 4, cap, phases); /* batches too */
    CHECK(refused == 0);
    CHECK(phases[CARBS_PHASE_RANDOM] > 0 && phases[CARBS_PHASE_BAYES] > 0 &&
          phases[CARBS_PHASE_RESAMPLE] > 0);
    if (refused)
        fprintf(stderr, "  exact cap: %d of 200 over\n", refused);
    /* the optimizer went near the cap, not to trivially cheap runs */
    double best = 0;
    for (size_t i = 0; i < carbs_n_observations(c); i++) {
        double x[D];
        carbs_get_observation(c, i, x, NULL, NULL, NULL);
        best = fmax(best, flops(x));
    }
    CHECK(best > 0.5 * cap && best <= cap);
    carbs_destroy(c);
}

/* No cost function: the cost GP's quantile holds the cap. Refusals over 4 seeds x 100 runs
 * stay under 4% (the first 2 runs of each are blind), where an optimizer without the cap has
 * its runs refused about half the time (the centre is over the cap). */
static void test_quantile(void)
{
    const double cap = 5e16;
    int with = 0, without = 0, phases[4] = {0};
    for (uint64_t seed = 1; seed <= 4; seed++) {
        carbs *c = make(cap, seed);
        CHECK(carbs_cap_blind(c));
        with += drive(c, 100, 1, cap, phases);
        CHECK(!carbs_cap_blind(c));
        carbs_destroy(c);
        c = make(INFINITY, seed);
        CHECK(!carbs_cap_blind(c));
        without += drive(c, 100, 1, cap, phases);
        carbs_destroy(c);
    }
    printf("quantile cap: %d of 400 refused (without the cap: %d)\n", with, without);
    CHECK(with <= 16);
    CHECK(without >= 100);
}

/* A refused run changes the cost model and leaves the success model as it was. */
static void test_cost_only(void)
{
    carbs *a = make(INFINITY, 5), *b = make(INFINITY, 5);
    int phases[4] = {0};
    drive(a, 12, 1, INFINITY, phases);
    drive(b, 12, 1, INFINITY, phases);
    /* a failure so that the success model exists */
    double xf[D] = {1e8, 1e9, 0.3}, xr[D] = {4e8, 2e10, 1e-3};
    CHECK_ST(carbs_observe(a, 0, xf, NAN, NAN, 1), ST_OK);
    CHECK_ST(carbs_observe(b, 0, xf, NAN, NAN, 1), ST_OK);
    double X[2 * D] = {3e7, 1e9, 1e-3, 4e8, 2e10, 1e-3}, pa[2], pb[2], ca[2], cb[2];
    CHECK_ST(carbs_predict(a, 2, X, NULL, NULL, ca, pa), ST_OK);

    /* b: a suggestion, refused with a cost 100x what a model of successes expects there */
    double x[D];
    uint64_t id;
    CHECK_ST(carbs_suggest(b, x, &id), ST_OK);
    CHECK(carbs_n_outstanding(b) == 1);
    CHECK_ST(carbs_observe_cost(b, id, xr, 100.0 * flops(xr)), ST_OK);
    CHECK(carbs_n_outstanding(b) == 0);
    CHECK(carbs_n_observations(b) == carbs_n_observations(a));
    CHECK(carbs_n_cost_observations(b) == 1);
    double gx[D], gc;
    CHECK_ST(carbs_get_cost_observation(b, 0, gx, &gc), ST_OK);
    CHECK(!memcmp(gx, xr, sizeof(gx)) && gc == 100.0 * flops(xr));
    CHECK_ST(carbs_predict(b, 2, X, NULL, NULL, cb, pb), ST_OK);
    CHECK(pa[0] == pb[0] && pa[1] == pb[1]); /* P(success): bit for bit */
    CHECK(cb[1] > 3.0 * ca[1]);              /* the cost model learnt */

    /* bad input: nothing recorded */
    CHECK_ST(carbs_observe_cost(b, 0, xr, 0.0), ST_EINVAL);
    CHECK_ST(carbs_observe_cost(b, 0, xr, NAN), ST_EINVAL);
    CHECK_ST(carbs_observe_cost(b, 999, xr, 1.0), ST_ENOTFOUND);
    CHECK_ST(carbs_observe_cost(b, 0, NULL, 1.0), ST_EINVAL);
    CHECK(carbs_n_cost_observations(b) == 1);
    carbs_options o = carbs_options_default();
    char msg[ST_ERRMSG_MAX];
    CHECK_ST(carbs_options_set(&o, "cost_cap_quantile", "0.95", msg), ST_OK);
    CHECK(o.cost_cap_quantile == 0.95);
    o.cost_cap_quantile = 1.0;
    CHECK_ST(carbs_set_options(b, &o), ST_EINVAL);
    carbs_destroy(a);
    carbs_destroy(b);
}

/* Cost-only observations survive export/import; a version 1 state (before them) imports. */
/* A version 4 state as version 2 wrote it: without gp_max_points after the options (offset
 * 16 + 21 * 8, version 4) and each parameter's n_choices, active_mask and active_if (24 bytes
 * + the name, after its rounding; version 3). Returns the new length. */
static size_t strip_v3(void *buf, size_t len)
{
    unsigned char *b = buf;
    size_t at = 16 + 21 * 8;
    memmove(b + at, b + at + 8, len - at - 8);
    len -= 8;
    uint64_t d, nl, cl;
    memcpy(&d, b + at, 8);
    at += 8;
    for (uint64_t i = 0; i < d; i++) {
        memcpy(&nl, b + at, 8);
        at += 8 + nl + 8 * 8;
        memcpy(&cl, b + at + 16, 8);
        memmove(b + at, b + at + 24 + cl, len - at - 24 - cl);
        len -= 24 + cl;
    }
    memcpy(b + 8, &(uint32_t){2}, 4);
    return len;
}

static void test_state(void)
{
    carbs *c = make(5e16, 9);
    int phases[4] = {0};
    drive(c, 10, 1, 5e16, phases);
    void *buf;
    size_t len;
    CHECK_ST(carbs_export(c, &buf, &len), ST_OK);
    carbs *r = NULL;
    char msg[ST_ERRMSG_MAX];
    CHECK_ST(carbs_import(buf, len, &r, msg), ST_OK);
    CHECK(r && carbs_n_cost_observations(r) == carbs_n_cost_observations(c));
    CHECK(r && carbs_n_cost_observations(r) > 0); /* the blind start was refused here */
    double xa[D], xb[D];
    uint64_t ia, ib;
    CHECK_ST(carbs_suggest(c, xa, &ia), ST_OK);
    CHECK_ST(carbs_suggest(r, xb, &ib), ST_OK);
    CHECK(!memcmp(xa, xb, sizeof(xa)) && ia == ib);
    st_free(buf);
    carbs_destroy(r);
    carbs_destroy(c);

    /* version 1: no cost_cap_quantile after the options (offset 16 + 20 * 8) and no count of
     * cost-only observations at the end */
    c = make(INFINITY, 9);
    drive(c, 6, 1, INFINITY, phases);
    CHECK_ST(carbs_export(c, &buf, &len), ST_OK);
    len = strip_v3(buf, len);
    unsigned char *v1 = malloc(len);
    size_t at = 16 + 20 * 8;
    memcpy(v1, buf, at);
    memcpy(v1 + at, (unsigned char *)buf + at + 8, len - at - 16);
    uint32_t one = 1;
    memcpy(v1 + 8, &one, 4);
    CHECK_ST(carbs_import(v1, len - 16, &r, msg), ST_OK);
    CHECK(r && carbs_get_options(r)->cost_cap_quantile == 0.9);
    CHECK(r && carbs_n_observations(r) == 6);
    CHECK_ST(carbs_suggest(c, xa, &ia), ST_OK);
    CHECK_ST(carbs_suggest(r, xb, &ib), ST_OK);
    CHECK(!memcmp(xa, xb, sizeof(xa)) && ia == ib);
    memcpy(v1 + 8, &(uint32_t){5}, 4);
    carbs_destroy(r);
    CHECK_ST(carbs_import(v1, len - 16, &r, msg), ST_EFORMAT);
    free(v1);
    st_free(buf);
    carbs_destroy(c);
}

/* The seed-17 sweep of bench-extrapolate: six parameters, the cost (6 N T) depends on two. */
#define D6 6
static void space6(carbs_param *p)
{
    static const char *name[D6] = {"N", "tokens", "lr", "batch", "warmup", "weight_decay"};
    static const double lo[D6] = {2e6, 4e7, 1e-4, 2e3, 0.0, 1e-3};
    static const double hi[D6] = {6e7, 2e9, 0.5, 1e6, 0.5, 1.0};
    static const double ctr[D6] = {1e7, 2e8, 3e-3, 3e4, 0.05, 0.1};
    for (int i = 0; i < D6; i++) {
        carbs_param_init(&p[i], name[i], i == 4 ? CARBS_SPACE_LINEAR : CARBS_SPACE_LOG, ctr[i]);
        p[i].min = lo[i];
        p[i].max = hi[i];
    }
}

/* basic units of space6 (base 10 logs, scale 1) */
static double basic6(int i, double v)
{
    return i == 4 ? v : log10(v);
}

/* Two blind runs over the cap, refused (their cost taught), then every run diverges (nothing
 * more learnt): the cost model has two points in six dimensions, where a least-squares plane
 * tilts along whatever else differed between them. The suggestions must stay where the random
 * phase draws them (around the centre, sd = search radius in basic units) in the parameters
 * the cost does not depend on, and not pile up in a corner; before the fix, the way down moved
 * lr to 0.07-0.13 (1.4 decades over its centre) and warmup to its bound. */
static void test_underdetermined(void)
{
    carbs_param p[D6];
    space6(p);
    carbs_options o = carbs_options_default();
    o.max_suggestion_cost = 1e16;
    o.seed = 17;
    carbs *c = NULL;
    char msg[ST_ERRMSG_MAX];
    CHECK_ST(carbs_create(p, D6, &o, &c, msg), ST_OK);
    /* the two blind runs of that sweep */
    double x0[2][D6] = {
        {4.3609791e7, 7.6652794e7, 2.5034380e-3, 2.2748694e4, 0.19901318, 0.0843660},
        {1.5501785e7, 3.1344386e8, 1.6636433e-3, 1.6837031e4, 0.16148072, 0.0732199}};
    for (int k = 0; k < 2; k++)
        CHECK_ST(carbs_observe_cost(c, 0, x0[k], 6.0 * x0[k][0] * x0[k][1]), ST_OK);
    const int K = 40;
    double dev[D6] = {0}, worst[D6] = {0};
    int under = 0, cornered = 0;
    for (int k = 0; k < K; k++) {
        double x[D6];
        uint64_t id;
        CHECK_ST(carbs_suggest(c, x, &id), ST_OK);
        for (int i = 0; i < D6; i++) {
            double e = fabs(basic6(i, x[i]) - basic6(i, p[i].center));
            dev[i] += e / K;
            worst[i] = fmax(worst[i], e);
        }
        under += 6.0 * x[0] * x[1] <= 1e16;
        cornered += x[1] < 1.01 * p[1].min && x[0] > 0.99 * p[0].max;
        CHECK_ST(carbs_observe(c, id, NULL, NAN, NAN, 1), ST_OK);
    }
    printf("underdetermined: mean |b - centre| lr %.3f batch %.3f warmup %.3f wd %.3f (worst %.3f "
           "%.3f %.3f %.3f); %d of %d under the cap, %d in the corner\n",
           dev[2], dev[3], dev[4], dev[5], worst[2], worst[3], worst[4], worst[5], under, K,
           cornered);
    for (int i = 2; i < D6; i++) {
        CHECK(dev[i] <= o.search_radius);         /* a normal with sd r: 0.8 r */
        CHECK(worst[i] <= 4.0 * o.search_radius); /* draws truncated by the design */
    }
    CHECK(cornered == 0);
    CHECK(under >= K / 2); /* the way down still lowers the true cost, along N and tokens */
    carbs_destroy(c);
}

int main(void)
{
    st_global_init();
    test_exact();
    test_quantile();
    test_cost_only();
    test_state();
    test_underdetermined();
    return check_summary("carbs.costcap");
}
