/*
 * The trust region and the repeats rule of recommended mode (docs/algorithms/carbs.md, "Trust
 * region and deterministic objectives"), on constructed histories whose answers are counted by
 * hand: the stall count (successes since the last one no earlier success dominated) and the
 * radius it gives (0.3 halved every 3 stalls, to 0.0375, then 0.3 again); a batch of Bayesian
 * suggestions after 9 stalls lies within 5 of those radii of the best point when a repeat
 * reproduced its objective (deterministic), and reaches further when it did not; integer
 * coordinates keep search_radius (draws and locality); a repeat that
 * reproduced its objective ends resampling, one that did not, or faithful mode, keeps it.
 */
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "carbs/carbs_int.h"
#include "tests/check.h"

#define D 2

static carbs *make(carbs_mode mode, int maximize, size_t resample_frequency)
{
    carbs_param p[D];
    carbs_param_init(&p[0], "x1", CARBS_SPACE_LINEAR, 5.0);
    carbs_param_init(&p[1], "x2", CARBS_SPACE_LINEAR, 5.0);
    for (size_t i = 0; i < D; i++) {
        p[i].min = 0.0;
        p[i].max = 10.0; /* scale left out: (max - min) / 4 = 2.5 per basic unit */
    }
    carbs_options o = carbs_options_default();
    o.mode = mode;
    o.maximize = maximize;
    o.seed = 5;
    o.num_random_samples = 4;
    o.resample_frequency = resample_frequency;
    carbs *c = NULL;
    char msg[ST_ERRMSG_MAX];
    CHECK_ST(carbs_create(p, D, &o, &c, msg), ST_OK);
    return c;
}

static void observe(carbs *c, double x1, double x2, double y, double cost, int failed)
{
    double x[D] = {x1, x2};
    CHECK_ST(carbs_observe(c, 0, x, failed ? NAN : y, cost, failed), ST_OK);
}

/* The radius after `stalls` stalls, counted by hand: 0.3 / 2^((stalls / 3) mod 4). */
static double want_radius(size_t stalls)
{
    static const double r[4] = {0.3, 0.15, 0.075, 0.0375};
    return r[stalls / 3 % 4];
}

static void test_stalls(void)
{
    carbs *c = make(CARBS_MODE_RECOMMENDED, 0, 0);
    if (!c)
        return;
    observe(c, 2, 2, 5.0, 1.0, 0);
    CHECK(carbs_priv_stall_count(c) == 0); /* the first success improves on nothing: 0 */
    observe(c, 8, 8, 4.0, 1.0, 0);
    observe(c, 5, 5, 1.0, 1.0, 0); /* the best */
    CHECK(carbs_priv_stall_count(c) == 0);
    CHECK_ABS(carbs_priv_trust_radius(c), 0.3, 0);
    for (size_t k = 1; k <= 13; k++) {
        /* worse, or equal (k = 4: a tie does not improve), at the same cost */
        observe(c, 1 + 0.5 * (double)k, 9 - 0.5 * (double)k, k == 4 ? 1.0 : 2.0 + (double)k, 1.0,
                0);
        CHECK(carbs_priv_stall_count(c) == k);
        CHECK_ABS(carbs_priv_trust_radius(c), want_radius(k), 0);
    }
    observe(c, 3, 3, NAN, 1.0, 1); /* a failure is not a success: no change */
    CHECK(carbs_priv_stall_count(c) == 13);
    observe(c, 4, 6, 7.0, 0.5, 0); /* worse but cheaper than every run: on the front */
    CHECK(carbs_priv_stall_count(c) == 0);
    observe(c, 6, 4, 6.5, 0.5, 0); /* better at that cost */
    CHECK(carbs_priv_stall_count(c) == 0);
    observe(c, 6, 6, 8.0, 0.5, 0);
    CHECK(carbs_priv_stall_count(c) == 1);
    carbs_destroy(c);

    /* maximising: larger is better */
    c = make(CARBS_MODE_RECOMMENDED, 1, 0);
    observe(c, 2, 2, 1.0, 1.0, 0);
    observe(c, 8, 8, 3.0, 1.0, 0);
    CHECK(carbs_priv_stall_count(c) == 0);
    observe(c, 5, 5, 2.0, 1.0, 0);
    CHECK(carbs_priv_stall_count(c) == 1);
    carbs_destroy(c);

    /* faithful mode keeps CARBS' radius */
    c = make(CARBS_MODE_FAITHFUL, 0, 0);
    observe(c, 5, 5, 1.0, 1.0, 0);
    for (size_t k = 1; k <= 6; k++)
        observe(c, 1 + (double)k, 2, 2.0 + (double)k, 1.0, 0);
    CHECK(carbs_priv_stall_count(c) == 6);
    CHECK_ABS(carbs_priv_trust_radius(c), 0.3, 0);
    carbs_destroy(c);
}

/* After 9 stalls the candidates are drawn at radius 0.0375 basic units (0.09375 here) around
 * the best point, the only origin: a batch of 20 suggestions (fantasies push them apart over
 * the candidates) stays within 5 of those radii of it. At radius 0.3 (the trust region off) the
 * same batch reached 0.55-1.6 from it over seeds 1-8, here 0.76. */
static double batch_reach(double repeat_y)
{
    carbs *c = make(CARBS_MODE_RECOMMENDED, 0, 0);
    if (!c)
        return NAN;
    observe(c, 2, 2, 5.0, 1.0, 0);
    observe(c, 8, 8, 4.0, 1.0, 0);
    observe(c, 5, 5, 1.0, 1.0, 0);
    observe(c, 5, 5, repeat_y, 1.0, 0); /* a repeat: it decides whether the region applies */
    for (size_t k = 1; k <= 8; k++)
        observe(c, 1 + 0.8 * (double)k, 9 - 0.7 * (double)k, 2.0 + (double)k, 1.0, 0);
    CHECK_ABS(carbs_priv_trust_radius(c), 0.0375, 0);
    double x[20 * D], far = 0;
    CHECK_ST(carbs_suggest_batch(c, 20, x, NULL), ST_OK);
    carbs_suggestion_info info;
    carbs_last_info(c, &info);
    CHECK(info.phase == CARBS_PHASE_BAYES);
    for (size_t j = 0; j < 20 * D; j++)
        far = fmax(far, fabs(x[j] - 5));
    carbs_destroy(c);
    return far;
}

/* The region holds only where the objective is deterministic: the same history with a repeat of
 * the best point that reproduced its objective stays inside, one whose repeat differed (noise:
 * stalls say little) is drawn at search_radius and reaches further. */
static void test_batch_in_region(void)
{
    double in = batch_reach(1.0), out = batch_reach(1.01);
    printf("batch reach: repeat agreed %.3f, repeat differed %.3f (region bound %.3f)\n", in, out,
           5 * 0.0375 * 2.5);
    CHECK(in > 0 && in <= 5 * 0.0375 * 2.5);
    CHECK(out > 5 * 0.0375 * 2.5);
}

/* Inside the trust region a continuous coordinate is drawn at the region's radius, an
 * integer one at search_radius: at u = Phi(1) the draw is the origin plus one radius (the
 * bounds, 2 basic units away, truncate nothing at 1e-9). The locality weight measures the
 * integer coordinate at 0.3 too: phi_r at distance r is exp(-1/2) / (r sqrt(2 pi)). */
static void test_integer_radius(void)
{
    carbs_param p[D];
    carbs_param_init(&p[0], "x", CARBS_SPACE_LINEAR, 5.0);
    p[0].min = 0.0;
    p[0].max = 10.0;
    carbs_param_init(&p[1], "n", CARBS_SPACE_LINEAR, 50.0);
    p[1].min = 0.0;
    p[1].max = 100.0;
    p[1].is_integer = 1; /* scale 25: 4 basic units, as x */
    carbs_options o = carbs_options_default();
    carbs *c = NULL;
    char msg[ST_ERRMSG_MAX];
    CHECK_ST(carbs_create(p, D, &o, &c, msg), ST_OK);
    if (!c)
        return;
    double u = gsl_cdf_ugaussian_P(1.0);
    c->radius = 0.0375; /* as make_cands sets it after 9 stalls */
    CHECK_ABS(carbs_priv_draw_coord(c, 0, 2.0, u), 2.0375, 1e-9);
    CHECK_ABS(carbs_priv_draw_coord(c, 1, 2.0, u), 2.3, 1e-9);
    double tmp[2 * D], origin[D] = {2.0, 2.0};
    double at_x[D] = {2.0375, 2.0}, at_n[D] = {2.0, 2.3};
    double w = exp(-0.5) / (0.0375 * sqrt(2 * M_PI));
    CHECK_ABS(carbs_priv_locality(c, at_x, 1, origin, tmp), w, 1e-9 * w);
    CHECK_ABS(carbs_priv_locality(c, at_n, 1, origin, tmp), w, 1e-9 * w);
    c->radius = 0; /* outside make_cands: search_radius for both */
    CHECK_ABS(carbs_priv_draw_coord(c, 0, 2.0, u), 2.3, 1e-9);
    carbs_destroy(c);
}

/* Resampling is due (5 successes > (0 + 1) x 2) once the design is done. After a repeat of
 * (5, 5): the next phase is a resample unless the repeat reproduced its objective in
 * recommended mode. */
static carbs_phase phase_after_repeat(carbs_mode mode, double repeat_y)
{
    carbs *c = make(mode, 0, 2);
    if (!c)
        return CARBS_PHASE_RANDOM;
    observe(c, 2, 2, 5.0, 1.0, 0);
    observe(c, 8, 8, 4.0, 1.0, 0);
    observe(c, 5, 5, 1.0, 1.0, 0);
    observe(c, 2, 8, 3.0, 1.0, 0);
    observe(c, 5, 5, repeat_y, 1.0, 0);
    double x[D];
    uint64_t id;
    CHECK_ST(carbs_suggest(c, x, &id), ST_OK);
    carbs_suggestion_info info;
    carbs_last_info(c, &info);
    carbs_destroy(c);
    return info.phase;
}

static void test_repeats(void)
{
    CHECK(phase_after_repeat(CARBS_MODE_RECOMMENDED, 1.0) == CARBS_PHASE_BAYES);
    CHECK(phase_after_repeat(CARBS_MODE_RECOMMENDED, 1.01) == CARBS_PHASE_RESAMPLE);
    CHECK(phase_after_repeat(CARBS_MODE_FAITHFUL, 1.0) == CARBS_PHASE_RESAMPLE);
}

int main(void)
{
    st_global_init();
    test_stalls();
    test_batch_in_region();
    test_integer_radius();
    test_repeats();
    return check_summary("carbs.trust");
}
