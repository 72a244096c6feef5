/*
 * test_study_mode.c — study mode (study/study_mode.c, study_acq.c, study_design.c) against
 * constructed cases with known answers:
 *  - the acquisition prefers the run that separates two candidate laws over one where both
 *    laws predict the same loss, and its score is the closed form cov^2 / (var + s2) / cost
 *    computed here from the two laws;
 *  - the decision's target: a run that tells two candidate optima of the large run's learning
 *    rate apart beats one that only pins its level, by the closed form, where the variance of
 *    the predicted loss prefers the other;
 *  - the fantasy update is the Gaussian conditioning formula on a 3-variable case (numbers by
 *    hand), and a greedy batch never picks the same point twice: with a duplicate of the best
 *    candidate, the second pick is the other candidate the closed form prefers;
 *  - the phase-1 design: every point under the cost cap, most in the compute-optimal band (cost
 *    cap/100 .. cap, tokens per parameter 5 .. 80), spread (min pairwise distance in the cube
 *    above a bound that iid uniform points miss), the same per seed, different across seeds;
 *  - the proposer on a stored sweep (ask/tell runs of a known world): a valid setting inside
 *    the searched bounds and under the cap, the same twice; suggest-next's plan: distinct picks,
 *    a half-width that never grows; `scaletune suggest-next --json` prints K runs inside the
 *    bounds, and exits 2 on bad usage;
 *  - `scaletune sweep launch` of a sweep file with `optimizer: {goal: extrapolate}` on llmsim
 *    runs study mode: its first runs are the design's points for the sweep's seed, in order,
 *    each learning rate kept below those of the runs released to it that diverged.
 */
#include <jansson.h>
#include <libgen.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "study/study.h"
#include "study/study_int.h"
#include "tests/check.h"

/* ---- the acquisition on two candidate laws ---------------------------------------------- */

/* ln L of law (A, alpha) at N, E = 1.7: L = E + A N^-alpha. */
static double law(double A, double alpha, double N)
{
    return log(1.7 + A * pow(N, -alpha));
}

static void test_separates_laws(void)
{
    /* two laws that agree at N = 1e6 and part beyond: law B's A chosen so that A_B 1e6^-0.30
     * = A_A 1e6^-0.34 */
    double AA = 400, aA = 0.34, aB = 0.30, AB = AA * pow(1e6, aB - aA);
    CHECK_REL(law(AA, aA, 1e6), law(AB, aB, 1e6), 1e-12);
    /* ensemble: R = 10 replicates, five of each law; variables: 0 a run at N = 1e6 (both laws
     * alike), 1 a run at N = 3e7 (they differ), 2 the large run at N = 1e10 */
    enum { R = 10, M = 3 };
    double Ns[M] = {1e6, 3e7, 1e10}, ens[M * R], cov[M * M], cost[M] = {1, 1, 1};
    for (size_t i = 0; i < M; i++)
        for (size_t r = 0; r < R; r++)
            ens[i * R + r] = r < R / 2 ? law(AA, aA, Ns[i]) : law(AB, aB, Ns[i]);
    study_ens_cov(M, R, ens, cov);
    double s2 = 1e-4, score;
    size_t p = study_acq_pick(M, cov, 2, s2, cost, NULL, NULL, &score);
    printf("two laws: pick %zu (want 1), score %.3g\n", p, score);
    CHECK(p == 1);
    /* closed form for a 50/50 two-point ensemble: var = d^2 R / (4 (R - 1)) with d the laws'
     * difference, cov = d_f d_g R / (4 (R - 1)) */
    double c = (double)R / (4.0 * (R - 1));
    double df = law(AA, aA, 3e7) - law(AB, aB, 3e7), dg = law(AA, aA, 1e10) - law(AB, aB, 1e10);
    double want = (c * df * dg) * (c * df * dg) / (c * df * df + s2);
    CHECK_REL(study_acq_vr(M, cov, 1, 2, s2), want, 1e-9);
    CHECK_REL(score, want, 1e-9);
    CHECK_ABS(study_acq_vr(M, cov, 0, 2, s2), 0, 1e-20);
    /* per unit cost: the separating run at 1000x the cost of a run that separates 10x less in
     * VR loses to it only when the closed form says so */
    double ens2[4 * R], cov2[16], cost2[4] = {1, 1000, 0, 0};
    for (size_t r = 0; r < R; r++) {
        ens2[0 * R + r] = ens[1 * R + r] * 0.1 + 0.9 * law(AA, aA, 3e7); /* damped copy */
        ens2[1 * R + r] = ens[1 * R + r];
        ens2[2 * R + r] = ens[2 * R + r];
        ens2[3 * R + r] = 0;
    }
    study_ens_cov(4, R, ens2, cov2);
    double v0 = study_acq_vr(4, cov2, 0, 2, s2), v1 = study_acq_vr(4, cov2, 1, 2, s2);
    size_t want_p = v0 / cost2[0] > v1 / cost2[1] ? 0 : 1;
    CHECK(study_acq_pick(4, cov2, 2, s2, cost2, NULL, NULL, NULL) == want_p);
    CHECK(want_p == 0);
}

/* ---- the decision's targets ---------------------------------------------------------------- */

static void test_decision_target(void)
{
    /* replicate b's large-run ln loss along u = ln lr: g_b(u) = L0_b + c (u - mu_b)^2, with
     * L0_b = +-0.02 and mu_b = +-0.3 varying independently over R = 8 replicates; the
     * recommendation u* = 0 (the mean optimum). Candidate A observes the level (f = L0_b), B a
     * small run at a high lr, f = c (0.8 - mu_b)^2 (it tells the optima apart). g_b(0) = L0_b +
     * 0.09 c: the loss's variance is the level's, so the variance target picks A; the decision's
     * target is the slope d_b = g_b'(0) = -2 c mu_b with weight 1 / (2 curvature) = 1 / (4 c)
     * (the bowl's expected regret sum var(d) / (2 curvature)), which A does not inform: it picks
     * B, with score w cov(B, d)^2 / (var(B) + s2) / cost by the closed form. */
    enum { R = 8, M = 4 }; /* rows: A, B, g, d */
    double c = 0.05, ens[M * R], cov[M * M], cost[M] = {1, 1, 0, 0}, s2 = 1e-6;
    for (size_t r = 0; r < R; r++) {
        double L0 = (r & 1) ? 0.02 : -0.02, mu = (r & 2) ? 0.3 : -0.3;
        ens[0 * R + r] = L0;
        ens[1 * R + r] = c * (0.8 - mu) * (0.8 - mu);
        ens[2 * R + r] = L0 + c * mu * mu;
        ens[3 * R + r] = -2 * c * mu;
    }
    study_ens_cov(M, R, ens, cov);
    size_t tg_var[1] = {2}, tg_dec[2] = {2, 3};
    double tw_dec[2] = {0, 1 / (4 * c)}, score;
    CHECK(study_acq_pick_multi(M, cov, 1, tg_var, NULL, s2, cost, NULL, NULL, NULL) == 0);
    CHECK(study_acq_pick(M, cov, 2, s2, cost, NULL, NULL, NULL) == 0);
    size_t p = study_acq_pick_multi(M, cov, 2, tg_dec, tw_dec, s2, cost, NULL, NULL, &score);
    printf("decision target: pick %zu (want 1), score %.4g\n", p, score);
    CHECK(p == 1);
    /* closed form: B = c (0.8 - mu)^2 takes two values 0.0125 and 0.0605 (mu = +-0.3), half
     * the replicates each, as d = -+0.03: sample cov over R with the R - 1 denominator */
    double k = (double)R / (4.0 * (R - 1)), dB = c * 0.25 - c * 1.21, dd = -0.03 - 0.03;
    double want = tw_dec[1] * (k * dB * dd) * (k * dB * dd) / (k * dB * dB + s2);
    CHECK_REL(score, want, 1e-9);
    CHECK_ABS(study_acq_vr_multi(M, cov, 0, 2, tg_dec, tw_dec, s2), 0, 1e-20);
}

/* ---- the fantasy update -------------------------------------------------------------------- */

static void test_fantasy(void)
{
    /* Sigma on (a, b, t), s2 = 0.25; after observing a:
     * var(b) = 1 - 0.5^2 / 1.25 = 0.8, cov(b, t) = 0.4 - 0.5 * 0.8 / 1.25 = 0.08,
     * var(t) = 1 - 0.8^2 / 1.25 = 0.488 */
    double cov[9] = {1, 0.5, 0.8, 0.5, 1, 0.4, 0.8, 0.4, 1}, col[3];
    study_acq_condition(3, cov, 0, col, 0.25);
    CHECK_ABS(cov[1 * 3 + 1], 0.8, 1e-15);
    CHECK_ABS(cov[1 * 3 + 2], 0.08, 1e-15);
    CHECK_ABS(cov[2 * 3 + 1], 0.08, 1e-15);
    CHECK_ABS(cov[2 * 3 + 2], 0.488, 1e-15);
    CHECK_ABS(cov[0 * 3 + 0], 1 - 1 / 1.25, 1e-15);

    /* A (cov with t 0.8), its duplicate A', B (0.5, independent of A); var 1 each, s2 0.25.
     * VR: A 0.512, A' 0.512, B 0.2. After A: A' has cov 0.16, var 0.2: VR 0.0569 < B's 0.2 */
    double S[16] = {1, 1, 0, 0.8, 1, 1, 0, 0.8, 0, 0, 1, 0.5, 0.8, 0.8, 0.5, 1};
    double cost[4] = {1, 1, 1, 0}, vr[3], vt[3], c4[4];
    size_t ch[3];
    unsigned char taken[4] = {0};
    size_t n = study_acq_batch(4, S, 3, 0.25, cost, NULL, taken, 3, ch, vr, vt, c4);
    printf("batch on A, A', B: picks %zu %zu %zu\n", ch[0], n > 1 ? ch[1] : 9, n > 2 ? ch[2] : 9);
    CHECK(n == 3);
    CHECK(ch[0] == 0 || ch[0] == 1);
    CHECK(ch[1] == 2);
    CHECK(ch[0] != ch[2] && ch[1] != ch[2] && ch[0] != ch[1]);
    CHECK_ABS(vr[0], 0.512, 1e-12);
    CHECK_ABS(vr[1], 0.2, 1e-12);
    CHECK_ABS(vt[0], 1 - 0.512, 1e-12);
    CHECK(vt[2] <= vt[1] && vt[1] <= vt[0]);
}

/* ---- the design ------------------------------------------------------------------------------ */

static const char *const yaml_fmt =
    "name: world\n"
    "command: [\"true\"]\n"
    "objective: {metric: val_loss}\n"
    "cost: {metric: flops%s}\n"
    "budget: {runs: 60, max_cost_per_run: 1.0e16}\n"
    "seed: %d\n"
    "parameters:\n"
    "  N:       {space: log, min: 2.0e6, max: 6.0e7, center: 1.0e7}\n"
    "  tokens:  {space: log, min: 4.0e7, max: 2.0e9, center: 2.0e8}\n"
    "  lr:      {space: log, min: 1.0e-4, max: 0.3, center: 3.0e-3}\n"
    "  batch:   {space: log, min: 16, max: 1024, center: 64, integer: true, rounding: 8}\n"
    "  warmup:  {space: logit, min: 0.0, max: 0.5, center: 0.02}\n"
    "  seq_len: {value: 256}\n";

static runner_config *load(int expr, int seed)
{
    char y[2048], em[ST_ERRMSG_MAX];
    snprintf(y, sizeof(y), yaml_fmt, expr ? ", expr: \"6 * {N} * {tokens}\"" : "", seed);
    runner_config *cfg = NULL;
    if (runner_config_load_string(y, strlen(y), "world", &cfg, em))
        fprintf(stderr, "%s\n", em);
    return cfg;
}

/* The design's first n points for a sweep with seed `seed`: x (n x 6), u (n x 5). */
static void design(int expr, int seed, size_t n, double *x, double *u)
{
    runner_config *cfg = load(expr, seed);
    study_space sp;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(study_space_init(&sp, cfg, NULL, em), ST_OK);
    CHECK_ST(study_design_units(sp.P, cfg->seed, 0, n, u), ST_OK);
    for (size_t i = 0; i < n; i++)
        study_design_point(&sp, &u[i * sp.P], &x[i * 6]);
    study_space_clear(&sp);
    runner_config_destroy(cfg);
}

static double min_dist(size_t n, size_t P, const double *u)
{
    double best = INFINITY;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++) {
            double d = 0;
            for (size_t k = 0; k < P; k++)
                d += (u[i * P + k] - u[j * P + k]) * (u[i * P + k] - u[j * P + k]);
            best = fmin(best, sqrt(d));
        }
    return best;
}

/* The design space of load(1, 7) into sp and its first n units (n x 5) into U; the config. */
static runner_config *design_setup(study_space *sp, size_t n, double *U)
{
    runner_config *cfg = load(1, 7);
    char em[ST_ERRMSG_MAX];
    CHECK_ST(study_space_init(sp, cfg, NULL, em), ST_OK);
    CHECK_ST(study_design_units(sp->P, cfg->seed, 0, n, U), ST_OK);
    return cfg;
}

/* A run that diverged at N = 3e6 with lr 0.01: every design point with N >= 3e6 keeps its
 * learning rate below 0.01 / 1.5; smaller ones are untouched; the points otherwise the same. */
static void test_design_below_divergence(void)
{
    enum { n = 16 };
    study_space sp;
    double U[n * 5], x0[6], x1[6], dN = 3e6, dlr = 0.01;
    runner_config *cfg = design_setup(&sp, n, U);
    size_t n_moved = 0;
    for (size_t i = 0; i < n; i++) {
        sp.n_div = 0;
        study_design_point(&sp, &U[i * sp.P], x0);
        sp.n_div = 1;
        sp.div_N = &dN;
        sp.div_lr = &dlr;
        study_design_point(&sp, &U[i * sp.P], x1);
        if (x1[0] >= 3e6)
            CHECK(x1[2] <= 0.01 / 1.5 * (1 + 1e-12));
        else
            CHECK(x1[2] == x0[2]);
        n_moved += x1[2] != x0[2];
        for (size_t j = 0; j < 6; j++)
            if (j != 2)
                CHECK(x1[j] == x0[j]);
    }
    printf("design below a divergence: %zu of %d learning rates moved\n", n_moved, n);
    CHECK(n_moved > 0);
    study_space_clear(&sp);
    runner_config_destroy(cfg);
}

/* The learning-rate window: with a law ln lr* = ln 2e-3 - 0.5 ln(N / 1e7) and a half-width of
 * ln 5, every design point's learning rate lies in lr*(N) / 5 .. x 5 (slid inside the searched
 * range 1e-4 .. 0.3 where the window crosses it, keeping its width), in the order of the
 * points' coordinates; a divergence at 3e-3 caps it as before; without the window some points
 * lie outside it (the whole range). */
static void test_design_lr_window(void)
{
    enum { n = 24 };
    study_space sp;
    char em[ST_ERRMSG_MAX];
    double U[n * 5], x[6], dN = 0, dlr = 3e-3;
    runner_config *cfg = design_setup(&sp, n, U);
    size_t n_out = 0;
    for (size_t i = 0; i < n; i++) {
        study_design_point(&sp, &U[i * sp.P], x);
        double opt = 2e-3 * pow(x[0] / 1e7, -0.5);
        n_out += x[2] < opt / 5 || x[2] > opt * 5;
    }
    /* the law as given, and 100x above and below it (the window slid inside 1e-4 .. 0.3) */
    const double shift[3] = {1, 100, 0.01};
    for (int k = 0; k < 3; k++) {
        sp.lrw_c[0] = log(2e-3 * shift[k]) + 0.5 * log(1e7);
        sp.lrw_c[1] = -0.5;
        sp.lrw_c[2] = 0;
        sp.lrw_half = log(5);
        for (size_t i = 0; i < n; i++) {
            study_design_point(&sp, &U[i * sp.P], x);
            double opt = 2e-3 * shift[k] * pow(x[0] / 1e7, -0.5), e = 1e-9;
            double lo = fmax(1e-4, fmin(opt, 0.3 / 5) / 5), hi = fmin(0.3, fmax(opt, 5e-4) * 5);
            CHECK_ABS(log(hi / lo), log(25), 1e-9);
            CHECK(x[2] >= lo * (1 - e) && x[2] <= hi * (1 + e));
            CHECK_ABS(log(x[2]), log(lo) + U[i * sp.P + 2] * log(hi / lo), 1e-9);
            sp.n_div = 1; /* a divergence at any size: at most 3e-3 / 1.5 */
            sp.div_N = &dN;
            sp.div_lr = &dlr;
            study_design_point(&sp, &U[i * sp.P], x);
            CHECK(x[2] <= 3e-3 / 1.5 * (1 + e) && x[2] >= 1e-4 * (1 - e));
            sp.n_div = 0;
        }
    }
    printf("design's learning-rate window: %zu of %d points outside it without\n", n_out, n);
    CHECK(n_out >= n / 4);
    CHECK(sp.o.lr_window == 0); /* off by default */
    study_space_clear(&sp);
    /* the sweep file's optimizer.lr_window overrides the options' (0: off, the whole range) */
    study_mode_options o = study_mode_options_default();
    o.lr_window = 7;
    cfg->design_lr_window = 0;
    CHECK_ST(study_space_init(&sp, cfg, &o, em), ST_OK);
    CHECK(sp.o.lr_window == 0);
    study_space_clear(&sp);
    cfg->design_lr_window = NAN;
    CHECK_ST(study_space_init(&sp, cfg, &o, em), ST_OK);
    CHECK(sp.o.lr_window == 7);
    study_space_clear(&sp);
    runner_config_destroy(cfg);
}

static void test_design(void)
{
    enum { n = 16 };
    for (int expr = 0; expr < 2; expr++) {
        double x[n * 6], u[n * 5], x2[n * 6], u2[n * 5], x3[n * 6], u3[n * 5];
        design(expr, 7, n, x, u);
        design(expr, 7, n, x2, u2);
        design(expr, 8, n, x3, u3);
        size_t in_band = 0;
        for (size_t i = 0; i < n; i++) {
            const double *v = &x[i * 6];
            double cost = 6 * v[0] * v[1], ratio = v[1] / v[0];
            CHECK(cost <= 1e16 * (1 + 1e-12));
            CHECK(v[0] >= 2e6 && v[0] <= 6e7 && v[1] >= 4e7 && v[1] <= 2e9);
            CHECK(v[2] >= 1e-4 && v[2] <= 0.3);
            CHECK(v[3] >= 16 && v[3] <= 1024 && fmod(v[3], 8) == 0);
            CHECK(v[4] > 0 && v[4] <= 0.5);
            CHECK(v[5] == 256);
            in_band +=
                cost >= 1e14 * (1 - 1e-9) && ratio >= 5 * (1 - 1e-9) && ratio <= 80 * (1 + 1e-9);
        }
        printf("design (cost %s): %zu of %d points in the band, min distance %.3f\n",
               expr ? "expr" : "6ND", in_band, n, min_dist(n, 5, u));
        CHECK(in_band >= 12);
        CHECK(!memcmp(x, x2, sizeof(x)));
        CHECK(memcmp(x, x3, sizeof(x)) != 0);
        /* 16 iid uniform points in [0, 1]^5 have a median min distance near 0.25 (simulated
         * offline: 0.26); the scrambled Sobol points keep at least 0.3 */
        CHECK(min_dist(n, 5, u) > 0.3);
        CHECK(min_dist(n, 5, u3) > 0.3);
    }
}

/* The tiny-GPT demo's sweep shape (d_model, n_layer, tokens, lr and one more parameter, the
 * cost expr of its run.sh) with this budget line and box: its config into *cfg and its search
 * cube into sp, and n design points' cube coordinates into U (n x sp->P). 0 if it did not load. */
static int shape_box(const char *budget, const char *box, size_t n, runner_config **cfg,
                     study_space *sp, double *U)
{
    char y[1024];
    snprintf(y, sizeof(y),
             "name: shape\n"
             "command: [\"true\"]\n"
             "objective: {metric: val_loss}\n"
             "cost: {metric: flops, expr: \"6 * (12 * {n_layer} * {d_model}^2 + 256 * "
             "{d_model}) * {tokens}\"}\n"
             "%s\n"
             "seed: 3\n"
             "parameters:\n%s",
             budget, box);
    char em[ST_ERRMSG_MAX];
    *cfg = NULL;
    CHECK_ST(runner_config_load_string(y, strlen(y), "shape", cfg, em), ST_OK);
    if (!*cfg)
        return 0;
    CHECK_ST(study_space_init(sp, *cfg, NULL, em), ST_OK);
    CHECK_ST(study_design_units(sp->P, (*cfg)->seed, 0, n, U), ST_OK);
    return 1;
}

/* A sweep that sets the size through shape parameters (the tiny-GPT demo's box): the design
 * still spreads cost over the band below the cap and tokens per parameter (N from the cost expr,
 * 12 n_layer d^2 + 256 d) over 5..80 where the bounds allow, instead of piling up at the box's
 * low corner: the band's floor is the smallest model's cost (study_design.c, band_cost). */
static void test_design_shape(void)
{
    enum { n = 24, P = 4, NP = 5 };
    const char *box = "  d_model: {space: log, min: 32, max: 128, center: 64, integer: true, "
                      "rounding: 16}\n"
                      "  n_layer: {space: linear, min: 1, max: 2, center: 1, integer: true}\n"
                      "  tokens:  {space: log, min: 1.0e5, max: 2.0e6, center: 4.0e5}\n"
                      "  lr:      {space: log, min: 1.0e-4, max: 0.3, center: 3.0e-3}\n"
                      "  warmup:  {value: 0.05}\n";
    runner_config *cfg = NULL;
    study_space sp;
    double U[n * P], x[NP], cmin = INFINITY, cmax = 0;
    if (!shape_box("budget: {runs: 60, max_cost_per_run: 8.0e11}", box, n, &cfg, &sp, U))
        return;
    size_t at_min = 0, in_ratio = 0;
    for (size_t i = 0; i < n; i++) {
        study_design_point(&sp, &U[i * sp.P], x);
        double N = 12 * x[1] * x[0] * x[0] + 256 * x[0], cost = 6 * N * x[2];
        CHECK(cost <= 8e11 * (1 + 1e-9));
        CHECK(x[0] >= 32 && x[0] <= 128 && fmod(x[0], 16) == 0);
        CHECK(x[2] >= 1e5 && x[2] <= 2e6);
        cmin = fmin(cmin, cost);
        cmax = fmax(cmax, cost);
        at_min += x[0] == 32;
        /* d_model 32 only where the band asks for less than its N (20,480 at one layer) can
         * give: a cost below 6 N32 (80 N32) with a rounding margin */
        if (x[0] == 32 && x[1] == 1)
            CHECK(cost <= 6 * 20480.0 * 80 * 20480.0 * 1.5);
        in_ratio += x[2] / N >= 5 / 1.5 && x[2] / N <= 80 * 1.5;
    }
    printf("shape design: cost %.3g .. %.3g, %zu of %d at d_model 32, %zu with D/N in 5..80 "
           "(x1.5)\n",
           cmin, cmax, at_min, n, in_ratio);
    CHECK(cmax >= 4e11); /* the band reaches the cap */
    CHECK(cmin <= 4e10); /* and spreads down toward cap / 100 */
    /* the band's floor at the smallest model's cost: 17 of 24 at the box's low corner before */
    CHECK(at_min <= n / 2);
    CHECK(in_ratio >= 20); /* 15 of 24 before the shape band */
    study_space_clear(&sp);
    runner_config_destroy(cfg);
}

/* A run of a stored sweep as runner_store_read_sweep gives it: id, status, failure kind, its
 * parameter values x and its measured cost; no attempts, no branch. */
static runner_sweep_run ended_run(uint64_t id, runner_run_status status, runner_failure failure,
                                  double *x, double cost)
{
    runner_sweep_run r = {.id = id, .status = status, .failure = failure, .x = x, .cost = cost};
    return r;
}

/* make demo-quick's box: tokens 2e4-1.5e5 allow d_model 16 (7,168 parameters) at most 21 tokens
 * per parameter, and the cap 3e10 allows d_model 48 only below 5. The band's ratios are lowered
 * to the box's reach (band_ratio), so that the design does not leave every point at d_model 16
 * (1 of 16 above it before; make demo-quick's stored sweep then held 23 runs at d_model 16 and its
 * fitted law could not see N). */
static void test_design_small_box(void)
{
    enum { n = 16, NP = 5 };
    const char *box = "  d_model: {space: log, min: 16, max: 48, center: 32, integer: true, "
                      "rounding: 16}\n"
                      "  n_layer: {space: linear, min: 1, max: 2, center: 1, integer: true}\n"
                      "  tokens:  {space: log, min: 2e4, max: 1.5e5, center: 5.477e4}\n"
                      "  lr:      {space: log, min: 1.0e-4, max: 0.3, center: 3.0e-3}\n"
                      "  weight_decay: {space: log, min: 1.0e-3, max: 0.5, center: 0.05}\n";
    runner_config *cfg = NULL;
    study_space sp;
    double U[n * NP], x[NP], Nmin = INFINITY, Nmax = 0;
    if (!shape_box("budget: {runs: 24, max_cost_per_run: 3e10}", box, n, &cfg, &sp, U))
        return;
    size_t above = 0, clipped = 0;
    for (size_t i = 0; i < n; i++) {
        study_design_point(&sp, &U[i * sp.P], x);
        double N = 12 * x[1] * x[0] * x[0] + 256 * x[0];
        CHECK(6 * N * x[2] <= 3e10 * (1 + 1e-9));
        above += x[0] > 16;
        clipped += x[0] == 16 && x[2] >= 1.5e5;
        Nmin = fmin(Nmin, N);
        Nmax = fmax(Nmax, N);
    }
    printf("small box design: %zu of %d above d_model 16, %zu at d_model 16 with tokens at the "
           "box's top, N %.0f .. %.0f\n",
           above, n, clipped, Nmin, Nmax);
    CHECK(above >= 3); /* 1 before */
    /* a trainer that reports 1.25x the expr's FLOPs (the tiny-GPT trainer's: 1.23-1.45x): once
     * a run says so, the design keeps 1.25 x expr under the cap (two of demo-quick's 24 runs
     * were stopped over the cap before) */
    double xr[NP] = {32, 2, 1e5, 1e-3, 0.01};
    double expr_c = 6 * (12 * 2 * 32.0 * 32 + 256 * 32) * 1e5;
    runner_sweep_run run = ended_run(1, RUNNER_RUN_SUCCEEDED, RUNNER_FAIL_NONE, xr, 1.25 * expr_c);
    /* before any run has measured it, a margin of 1.5 (the first of make demo's suggestions at
     * the cap by the expr was stopped over it); a run stopped over the cap says at least
     * cap / expr */
    runner_sweep none = {cfg, NULL, 0};
    study_space_calibrate(&sp, &none);
    CHECK_REL(sp.expr_scale, 1.5, 1e-12);
    runner_sweep_attempt att;
    memset(&att, 0, sizeof(att));
    double xo[NP] = {32, 2, 9e4, 1e-3, 0.01}; /* expr 1.77e10: stopped at 3e10, 1.70x */
    double expr_o = 6 * (12 * 2 * 32.0 * 32 + 256 * 32) * 9e4;
    runner_sweep_run stopped =
        ended_run(2, RUNNER_RUN_FAILED, RUNNER_FAIL_OVER_BUDGET, xo, NAN); /* cost not kept */
    stopped.att = &att;
    stopped.n_att = 1;
    runner_sweep w_stop = {cfg, &stopped, 1};
    study_space_calibrate(&sp, &w_stop);
    CHECK_REL(sp.expr_scale, 3e10 / expr_o, 1e-12);
    stopped.n_att = 0; /* refused without an attempt: says nothing */
    study_space_calibrate(&sp, &w_stop);
    CHECK_REL(sp.expr_scale, 1.5, 1e-12);
    runner_sweep w = {cfg, &run, 1};
    study_space_calibrate(&sp, &w);
    CHECK_REL(sp.expr_scale, 1.25, 1e-12);
    CHECK_REL(study_space_cost(&sp, xr), 1.25 * expr_c, 1e-12);
    size_t over = 0;
    for (size_t i = 0; i < n; i++) {
        study_design_point(&sp, &U[i * sp.P], x);
        double N = 12 * x[1] * x[0] * x[0] + 256 * x[0];
        over += 1.25 * 6 * N * x[2] > 3e10 * (1 + 1e-9);
    }
    CHECK(over == 0);
    study_space_clear(&sp);
    runner_config_destroy(cfg);
}

/* ---- the proposer on a stored sweep ------------------------------------------------------- */

static double world_loss(double N, double D, double lr, double batch)
{
    double lopt = 2e-3 * pow(N / 1e7, -0.5), bopt = 64 * pow(D / 1e8, 0.5);
    if (lr > 4 * lopt)
        return INFINITY;
    double u = log(lr / lopt), v = log(batch / bopt);
    return (1.7 + 400 * pow(N, -0.34) + 1200 * pow(D, -0.30)) * (1 + 0.03 * u * u + 0.01 * v * v);
}

static void check_inside(const runner_config *cfg, const double *x)
{
    for (size_t i = 0; i < cfg->n_params; i++) {
        const runner_param_spec *ps = &cfg->params[i];
        if (ps->is_fixed)
            continue;
        CHECK(isfinite(x[i]) && x[i] >= ps->p.min && x[i] <= ps->p.max);
    }
    CHECK(6 * x[0] * x[1] <= cfg->max_cost_per_run * (1 + 1e-9));
}

static char dir[256], cli_path[4200], sim_path[4200];

/* `scaletune suggest-next ARGS` with stdout in dir/out.json; its exit status. */
static int cli(const char *args)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "'%s' suggest-next %s > '%s/out.json' 2> '%s/err.log'", cli_path,
             args, dir, dir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_cli(const char *db, const runner_config *cfg)
{
    if (access(cli_path, X_OK) != 0) {
        printf("SKIP the CLI part: scaletune not built (run make)\n");
        return;
    }
    char args[1024], path[512];
    snprintf(args, sizeof(args), "--db '%s' --factor 100 -n 2 --json", db);
    CHECK(cli(args) == 0);
    snprintf(path, sizeof(path), "%s/out.json", dir);
    json_t *j = json_load_file(path, 0, NULL);
    json_t *runs = json_object_get(j, "runs");
    CHECK(json_array_size(runs) == 2);
    for (size_t k = 0; k < json_array_size(runs); k++) {
        json_t *p = json_object_get(json_array_get(runs, k), "params");
        double x[6];
        for (size_t i = 0; i < 6; i++)
            x[i] = json_number_value(json_object_get(p, cfg->params[i].p.name));
        check_inside(cfg, x);
    }
    CHECK(json_number_value(json_object_get(j, "halfwidth")) > 0);
    json_decref(j);
    snprintf(args, sizeof(args), "--db '%s' -n 2", db); /* no target */
    CHECK(cli(args) == 2);
    snprintf(args, sizeof(args), "--db '%s' --factor 100 -n 0", db);
    CHECK(cli(args) == 2);
}

static int write_store(const char *db)
{
    char path[512], em[ST_ERRMSG_MAX], y[2048];
    snprintf(path, sizeof(path), "%s/world.yaml", dir);
    snprintf(y, sizeof(y), yaml_fmt, ", expr: \"6 * {N} * {tokens}\"", 3);
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    fputs(y, f);
    fclose(f);
    runner_config *cfg = NULL;
    runner *r = NULL;
    runner_options ro = runner_options_default();
    ro.db_path = db;
    if (runner_config_load_file(path, &cfg, em) || runner_launch(cfg, &ro, &r, em))
        return fprintf(stderr, "%s\n", em), 1;
    runner_destroy(r);
    runner_config_destroy(cfg);
    runner_store *s = NULL;
    if (runner_store_open(db, &s, em))
        return 1;
    for (int i = 0; i < 40; i++) {
        uint64_t id;
        double x[6];
        if (runner_store_ask(s, "world", &id, x, 6))
            break;
        double y2 = world_loss(x[0], x[1], x[2], x[3]);
        runner_store_tell(s, "world", id, isfinite(y2) ? y2 : NAN, 6 * x[0] * x[1], !isfinite(y2));
    }
    runner_store_close(s);
    return 0;
}

static void test_proposer(void)
{
    snprintf(dir, sizeof(dir), "/tmp/st_studymode_XXXXXX");
    if (!mkdtemp(dir))
        return;
    char db[512];
    snprintf(db, sizeof(db), "%s/s.db", dir);
    CHECK(write_store(db) == 0);
    runner_config *cfg = load(1, 3);
    cfg->design_initial = 10;
    cfg->target_factor = 100;
    double pend[6] = {1e7, 2e8, 2e-3, 64, 0.02, 256};
    runner_propose_request rq = {cfg, db, "world", 40, 40, pend, 1, 12345};
    double x[6], x2[6], xd[6];
    char em[ST_ERRMSG_MAX] = "";
    st_status rc = study_proposer(NULL, &rq, x, em);
    if (rc)
        fprintf(stderr, "study_proposer: %s\n", em);
    CHECK_ST(rc, ST_OK);
    check_inside(cfg, x);
    CHECK_ST(study_proposer(NULL, &rq, x2, em), ST_OK);
    CHECK(!memcmp(x, x2, sizeof(x)));
    printf("proposer (acquisition): N %.3g tokens %.3g lr %.3g batch %g warmup %.3g\n", x[0], x[1],
           x[2], x[3], x[4]);
    /* the acquisition's pick: the plan's first on the same 40 runs, pending run, target
     * (100 x the cap) and seed, and not the design's point 40 */
    {
        runner_store *s0 = NULL;
        runner_sweep *w0 = NULL;
        study_plan *p0 = NULL;
        CHECK_ST(runner_store_open(db, &s0, em), ST_OK);
        CHECK_ST(runner_store_read_sweep(s0, "world", &w0), ST_OK);
        runner_store_close(s0);
        CHECK_ST(study_plan_make(w0, 40, pend, 1, 100 * cfg->max_cost_per_run, 100, 1, 12345, NULL,
                                 &p0, em),
                 ST_OK);
        CHECK(p0 && p0->n_picks == 1 && !memcmp(x, p0->picks[0].x, sizeof(x)));
        study_plan_free(p0);
        runner_sweep_free(w0);
        double xs41[41 * 6], us41[41 * 5];
        design(1, 3, 41, xs41, us41);
        CHECK(memcmp(x, &xs41[40 * 6], sizeof(x)) != 0);
    }
    rq.index = 3; /* the design, before 12 runs have succeeded: the same point as the design's
                   * 4th */
    rq.n_released = 11;
    CHECK_ST(study_proposer(NULL, &rq, xd, em), ST_OK);
    check_inside(cfg, xd);
    double xs[10 * 6], us[10 * 5];
    design(1, 3, 10, xs, us);
    CHECK(!memcmp(xd, &xs[3 * 6], sizeof(xd)));
    /* after 40 runs, by default (no window): still the design's point */
    rq.n_released = 40;
    CHECK_ST(study_proposer(NULL, &rq, xd, em), ST_OK);
    CHECK(!memcmp(xd, &xs[3 * 6], sizeof(xd)));
    /* with optimizer.lr_window 5: every learning rate within 10x the world's optimum at its N
     * (the window is 5x around the fitted law), where the design without it strays further */
    cfg->design_lr_window = 5;
    size_t n_far = 0, n_far_before = 0;
    for (size_t i = 0; i < 10; i += 3) {
        rq.index = i;
        CHECK_ST(study_proposer(NULL, &rq, xd, em), ST_OK);
        check_inside(cfg, xd);
        double opt = 2e-3 * pow(xd[0] / 1e7, -0.5), opt0 = 2e-3 * pow(xs[i * 6] / 1e7, -0.5);
        n_far += fabs(log(xd[2] / opt)) > log(10);
        n_far_before += fabs(log(xs[i * 6 + 2] / opt0)) > log(10);
        printf("design point %zu after 40 runs: lr %.3g at N %.3g (optimum %.3g; without the "
               "window %.3g)\n",
               i, xd[2], xd[0], opt, xs[i * 6 + 2]);
    }
    CHECK(n_far == 0);
    CHECK(n_far_before > 0);
    cfg->design_lr_window = NAN;

    /* suggest-next's plan: 3 distinct picks, the half-width never grows */
    runner_store *s = NULL;
    runner_sweep *w = NULL;
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    CHECK_ST(runner_store_read_sweep(s, "world", &w), ST_OK);
    runner_store_close(s);
    study_plan *pl = NULL;
    rc = study_plan_make(w, w->n_runs, NULL, 0, NAN, 100, 3, 7, NULL, &pl, em);
    if (rc)
        fprintf(stderr, "study_plan_make: %s\n", em);
    CHECK_ST(rc, ST_OK);
    if (pl) {
        printf("plan: %zu picks of %zu candidates, half-width %.4f -> %.4f, fit %.2f s\n",
               pl->n_picks, pl->n_candidates, pl->halfwidth,
               pl->n_picks ? pl->picks[pl->n_picks - 1].halfwidth : NAN, pl->fit_seconds);
        CHECK(pl->n_picks == 3);
        double prev = pl->halfwidth;
        for (size_t i = 0; i < pl->n_picks; i++) {
            check_inside(cfg, pl->picks[i].x);
            CHECK(pl->picks[i].halfwidth <= prev + 1e-15);
            prev = pl->picks[i].halfwidth;
            for (size_t j = 0; j < i; j++)
                CHECK(memcmp(pl->picks[i].x, pl->picks[j].x, 6 * sizeof(double)) != 0);
        }
    }
    study_plan_free(pl);
    /* the decision's targets (1: the slopes at the recommendation, 2: each replicate's
     * optimum): 3 distinct picks under the cap, the same plan twice */
    for (int dec = 1; dec <= 2; dec++) {
        study_mode_options o = study_mode_options_default();
        o.decision = dec;
        study_plan *d1 = NULL, *d2 = NULL;
        CHECK_ST(study_plan_make(w, w->n_runs, NULL, 0, NAN, 100, 3, 7, &o, &d1, em), ST_OK);
        CHECK_ST(study_plan_make(w, w->n_runs, NULL, 0, NAN, 100, 3, 7, &o, &d2, em), ST_OK);
        CHECK(d1 && d2 && d1->n_picks == 3 && d2->n_picks == 3);
        for (size_t i = 0; d1 && d2 && i < d1->n_picks && i < d2->n_picks; i++) {
            CHECK(!memcmp(d1->picks[i].x, d2->picks[i].x, 6 * sizeof(double)));
            CHECK(d1->picks[i].cost <= cfg->max_cost_per_run * (1 + 1e-9));
            for (size_t j = 0; j < i; j++)
                CHECK(memcmp(d1->picks[i].x, d1->picks[j].x, 6 * sizeof(double)) != 0);
        }
        study_plan_free(d1);
        study_plan_free(d2);
    }
    /* too few runs to fit: the plan says so, the proposer falls back to the design */
    CHECK(study_plan_make(w, 2, NULL, 0, NAN, 100, 1, 7, NULL, &pl, em) != ST_OK);
    CHECK(pl == NULL);
    rq.index = 40;
    rq.n_released = 2;
    CHECK_ST(study_proposer(NULL, &rq, x, em), ST_OK);
    double xs40[41 * 6], us40[41 * 5];
    design(1, 3, 41, xs40, us40);
    CHECK(!memcmp(x, &xs40[40 * 6], sizeof(x)));
    test_cli(db, cfg);
    runner_sweep_free(w);
    runner_config_destroy(cfg);
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (!getenv("KEEP_TMP"))
        CHECK(system(cmd) == 0);
}

/* ---- the wiring: scaletune sweep launch in study mode ------------------------------------ */

static void test_sweep_launch(void)
{
    if (access(cli_path, X_OK) != 0 || access(sim_path, X_OK) != 0) {
        printf("SKIP the sweep: scaletune or llmsim not built (run make)\n");
        return;
    }
    snprintf(dir, sizeof(dir), "/tmp/st_studysweep_XXXXXX");
    if (!mkdtemp(dir))
        return;
    char y[8192], path[512], db[512], cmd[8192];
    snprintf(
        y, sizeof(y),
        "name: world\n"
        "command: [\"%s\", \"--N\", \"{N}\", \"--tokens\", \"{tokens}\", \"--lr\", \"{lr}\",\n"
        "          \"--batch\", \"{batch}\", \"--warmup\", \"{warmup}\", \"--seed\", \"{_run}\"]\n"
        "objective: {metric: val_loss}\n"
        "cost: {metric: flops, expr: \"6 * {N} * {tokens}\"}\n"
        "budget: {runs: 10, max_cost_per_run: 1.0e16}\n"
        "parallel: 2\n"
        "seed: 3\n"
        "optimizer: {goal: extrapolate, target_factor: 100, initial_design: 10}\n"
        "parameters:\n"
        "  N:       {space: log, min: 2.0e6, max: 6.0e7, center: 1.0e7}\n"
        "  tokens:  {space: log, min: 4.0e7, max: 2.0e9, center: 2.0e8}\n"
        "  lr:      {space: log, min: 1.0e-4, max: 0.3, center: 3.0e-3}\n"
        "  batch:   {space: log, min: 2000, max: 1.0e6, center: 3.0e4}\n"
        "  warmup:  {space: logit, min: 0.0, max: 0.5, center: 0.02}\n",
        sim_path);
    snprintf(path, sizeof(path), "%s/world.yaml", dir);
    snprintf(db, sizeof(db), "%s/s.db", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fputs(y, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "'%s' sweep launch '%s' --db '%s' > '%s/sweep.log' 2>&1", cli_path,
             path, db, dir);
    CHECK(system(cmd) == 0);
    runner_config *cfg = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_config_load_file(path, &cfg, em), ST_OK);
    runner_store *s = NULL;
    runner_sweep *w = NULL;
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    CHECK_ST(runner_store_read_sweep(s, "world", &w), ST_OK);
    runner_store_close(s);
    study_space sp;
    CHECK_ST(study_space_init(&sp, cfg, NULL, em), ST_OK);
    enum { n_runs = 10, lag = 2 + 4 }; /* parallel 2, and the design waits for 2 x 2 fewer */
    double U[n_runs * 5], x[5];
    CHECK_ST(study_design_units(sp.P, cfg->seed, 0, n_runs, U), ST_OK);
    CHECK(w && w->n_runs == n_runs);
    double dN[n_runs], dlr[n_runs];
    sp.div_N = dN;
    sp.div_lr = dlr;
    for (size_t i = 0; w && i < w->n_runs; i++) {
        /* parallel 2, deterministic, a design suggestion: suggestion i sees runs 0 .. i - 6
         * (docs/config.md); its cost is calibrated on them (a margin of 1.5 before the first)
         * and its learning rate stays below those that diverged at a model size no larger */
        size_t seen = i >= lag ? i - lag + 1 : 0;
        runner_sweep view = {cfg, w->runs, seen};
        study_space_calibrate(&sp, &view);
        sp.n_div = 0;
        for (size_t q = 0; q < seen; q++)
            if (w->runs[q].failure == RUNNER_FAIL_DIVERGED) {
                dN[sp.n_div] = w->runs[q].x[0];
                dlr[sp.n_div++] = w->runs[q].x[2];
            }
        study_design_point(&sp, &U[i * sp.P], x);
        for (size_t j = 0; j < 5; j++)
            CHECK_REL(w->runs[i].x[j], x[j], 1e-12);
    }
    study_space_clear(&sp);
    runner_sweep_free(w);
    runner_config_destroy(cfg);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (!getenv("KEEP_TMP"))
        CHECK(system(cmd) == 0);
}

/* The proposer's view of a sweep with cooldown branches: suggestions 1, 2, 3 (rows 1, 2, 5),
 * branches of 1 (row 3), of 2 (row 6, made after suggestion 3's row) and of 3 (row 7); with
 * two suggestions released it sees rows 1, 2, 3 and 6, nothing of suggestion 3. */
static void test_released_view(void)
{
    runner_sweep_run runs[6];
    memset(runs, 0, sizeof(runs));
    const uint64_t ids[6] = {1, 2, 3, 5, 6, 7}, parents[6] = {0, 0, 1, 0, 2, 5};
    for (size_t i = 0; i < 6; i++) {
        runs[i].id = ids[i];
        runs[i].parent = parents[i];
    }
    runner_sweep w;
    memset(&w, 0, sizeof(w));
    w.runs = runs;
    w.n_runs = 6;
    runner_sweep v;
    CHECK_ST(study_released_view(&w, 2, &v), ST_OK);
    CHECK(v.n_runs == 4 && v.runs[0].id == 1 && v.runs[1].id == 2 && v.runs[2].id == 3 &&
          v.runs[3].id == 6);
    free(v.runs);
    CHECK_ST(study_released_view(&w, 0, &v), ST_OK);
    CHECK(v.n_runs == 0);
    free(v.runs);
    CHECK_ST(study_released_view(&w, 99, &v), ST_OK); /* everything */
    CHECK(v.n_runs == 6);
    free(v.runs);
}

int main(int argc, char **argv)
{
    (void)argc;
    check_build_path(argv[0], "../../scaletune", cli_path, sizeof(cli_path));
    check_build_path(argv[0], "../../bench/llmsim/llmsim", sim_path, sizeof(sim_path));
    st_global_init();
    test_separates_laws();
    test_decision_target();
    test_fantasy();
    test_design();
    test_design_shape();
    test_design_small_box();
    test_design_below_divergence();
    test_design_lr_window();
    test_proposer();
    test_released_view();
    test_sweep_launch();
    return check_summary("study.mode");
}
