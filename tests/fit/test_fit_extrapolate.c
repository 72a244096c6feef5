/*
 * test_fit_extrapolate.c — fit/extrapolate.h: role names, the Pareto front and its OLS laws on
 * hand-made runs (closed forms), the model's recovery of known laws from noise-free runs it can
 * represent exactly, and the study on bench/'s simulator (known truth, sim_oracle): a random
 * search sweep run in-process, the recommendation at 100x the largest run, its regret against
 * the oracle (< 1%) and its predicted divergence probability (< 5%); the front method's regret
 * is printed beside it; the analytic gradients of the model's two objectives (private,
 * fit/extrapolate_int.h) against central finite differences, and ln L against its formula.
 * ST_TEST_QUICK: one seed and fewer replicates.
 */
#include "bench/sim.h"
#include "common/st.h"
#include "fit/extrapolate.h"
#include "fit/extrapolate_int.h" /* the model's objectives (private): their gradients */
#include "fit/fit.h"
#include "tests/check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_roles(void)
{
    CHECK(fit_xp_role_guess("lr") == FIT_XP_LR);
    CHECK(fit_xp_role_guess("Learning_Rate") == FIT_XP_LR);
    CHECK(fit_xp_role_guess("tokens") == FIT_XP_D);
    CHECK(fit_xp_role_guess("N") == FIT_XP_N);
    CHECK(fit_xp_role_guess("d_model") == FIT_XP_SIZE);
    CHECK(fit_xp_role_guess("batch_size") == FIT_XP_BATCH);
    CHECK(fit_xp_role_guess("warmup") == FIT_XP_OTHER);
    CHECK(fit_xp_role_guess("max_iters") == FIT_XP_STEPS);
    CHECK(fit_xp_role_guess("Max_Steps") == FIT_XP_STEPS);
    CHECK(!strcmp(fit_xp_role_name(FIT_XP_LR), "lr"));
    CHECK(!strcmp(fit_xp_role_name(FIT_XP_STEPS), "steps"));
    CHECK(fit_xp_warmup_unit("warmup") == FIT_XP_WU_FRACTION);
    CHECK(fit_xp_warmup_unit("warmup_iters") == FIT_XP_WU_STEPS);
    CHECK(fit_xp_warmup_unit("num_warmup_steps") == FIT_XP_WU_STEPS);
    CHECK(fit_xp_warmup_unit("warmup_tokens") == FIT_XP_WU_TOKENS);
}

/* The engine (default options, 10 replicates) on n runs of P parameters, run at 100x the
 * costliest; N and D from the runs' records (NULL: none). NULL on failure (checked). */
static fit_xp *engine_at_100x(const fit_xp_param *p, size_t P, size_t n, const double *x,
                              const double *cost, const double *obj, const double *N,
                              const double *D)
{
    fit_xp *xp = NULL;
    fit_xp_create(&xp);
    fit_xp_options o = fit_xp_options_default();
    o.n_boot = 10;
    fit_xp_set_options(xp, &o);
    CHECK_ST(fit_xp_set_runs(xp, P, p, n, x, cost, obj, NULL, N, D), ST_OK);
    double Cmax = 0;
    for (size_t i = 0; i < n; i++)
        Cmax = fmax(Cmax, cost[i]);
    st_status rc = fit_xp_run(xp, 100 * Cmax);
    CHECK_ST(rc, ST_OK);
    if (rc) {
        fit_xp_destroy(xp);
        return NULL;
    }
    return xp;
}

/* A sweep that sets its tokens as steps x batch (nanoGPT's max_iters; the trainer's records give
 * N and D): exact law runs, max_iters on a linear integer scale, the batch's optimum moving as
 * D^0.5. The recommendation's max_iters x batch is the D it predicts for (the tokens
 * regression is exact in logs, whatever the spaces), the run costs the target compute, and
 * max_iters goes past every value tried (a role OTHER parameter would have stayed inside).
 * Before the STEPS role the engine took max_iters for a hyperparameter with an optimum: the
 * command then trained other tokens than the prediction's (20% fewer at 1000x on a
 * nanoGPT-style llmsim sweep). */
static void test_steps_tokens(void)
{
    const double A = 400, B = 2000, E = 1.8, al = 0.34, be = 0.30;
    fit_xp_param p[4];
    fit_xp_param_init(&p[0], "N", FIT_XP_LOG);
    fit_xp_param_init(&p[1], "max_iters", FIT_XP_LINEAR);
    fit_xp_param_init(&p[2], "batch_size", FIT_XP_LOG);
    fit_xp_param_init(&p[3], "lr", FIT_XP_LOG);
    p[1].is_integer = 1;
    enum { n = 160 };
    double x[n * 4], cost[n], obj[n], Nv[n], Dv[n], it_max = 0;
    st_rng *rng = NULL;
    st_rng_create(11, &rng);
    for (size_t i = 0; i < n; i++) {
        double N = exp(log(1e6) + st_rng_uniform(rng) * log(30.0));
        double iters = round(500 + st_rng_uniform(rng) * 19500);
        double bs = exp(log(8192) + st_rng_uniform(rng) * log(32.0));
        double D = iters * bs;
        double ub = log(bs) - (log(3e4) + 0.5 * log(D / 1e9));
        double ul = st_rng_uniform(rng) * 3 - 1.5;
        double lr = exp(log(0.01) - 0.5 * log(N / 1e7) + ul);
        x[4 * i] = N, x[4 * i + 1] = iters, x[4 * i + 2] = bs, x[4 * i + 3] = lr;
        Nv[i] = N, Dv[i] = D;
        cost[i] = 6 * N * D;
        obj[i] = (E + A * pow(N, -al) + B * pow(D, -be)) * (1 + 0.02 * ub * ub + 0.02 * ul * ul);
        it_max = fmax(it_max, iters);
    }
    st_rng_destroy(rng);
    fit_xp *xp = engine_at_100x(p, 4, n, x, cost, obj, Nv, Dv);
    if (!xp)
        return;
    fit_xp_result r;
    fit_xp_get_result(xp, &r);
    CHECK(r.method == FIT_XP_METHOD_MODEL);
    CHECK(fit_xp_param_role(xp, 1) == FIT_XP_STEPS);
    CHECK(r.value[1] == round(r.value[1]));
    CHECK_REL(r.value[1] * r.value[2], r.D, 1e-9);
    CHECK_REL(6 * r.N * r.D, r.compute, 1e-3);
    CHECK(r.value[1] > it_max);
    /* the interval of max_iters holds the recommendation */
    CHECK(r.lo[1] <= r.value[1] && r.value[1] <= r.hi[1]);
    fit_xp_destroy(xp);
}

/* The recommended warmup at 100x of a sweep crowded in D (a factor 1.2: the runs do not place
 * the warmup's D slope) whose warmup optimum is a fixed 200 steps, with the parameter named `name`
 * (counted in steps in both cases). */
static double warmup_at_100x(const char *name)
{
    const double A = 400, B = 2000, E = 1.8, al = 0.34, be = 0.30;
    fit_xp_param p[5];
    fit_xp_param_init(&p[0], "N", FIT_XP_LOG);
    fit_xp_param_init(&p[1], "D", FIT_XP_LOG);
    fit_xp_param_init(&p[2], "lr", FIT_XP_LOG);
    fit_xp_param_init(&p[3], "batch", FIT_XP_LOG);
    fit_xp_param_init(&p[4], name, FIT_XP_LOG);
    enum { n = 120 };
    double x[n * 5], cost[n], obj[n];
    st_rng *rng = NULL;
    st_rng_create(5, &rng);
    for (size_t i = 0; i < n; i++) {
        double N = exp(log(2e6) + st_rng_uniform(rng) * log(3.0));
        double D = exp(log(1e8) + st_rng_uniform(rng) * log(1.2));
        double bs = exp(log(2e4) + st_rng_uniform(rng) * log(8.0));
        double ws = exp(log(20) + st_rng_uniform(rng) * log(100.0));
        double ul = st_rng_uniform(rng) * 3 - 1.5, q = log(ws / 200);
        double lr = exp(log(0.01) - 0.5 * log(N / 1e7) + ul);
        double noise = 1 + 0.01 * (st_rng_uniform(rng) - 0.5);
        x[5 * i] = N, x[5 * i + 1] = D, x[5 * i + 2] = lr, x[5 * i + 3] = bs, x[5 * i + 4] = ws;
        cost[i] = 6 * N * D;
        obj[i] =
            (E + A * pow(N, -al) + B * pow(D, -be)) * (1 + 0.02 * ul * ul + 0.02 * q * q) * noise;
    }
    st_rng_destroy(rng);
    fit_xp *xp = engine_at_100x(p, 5, n, x, cost, obj, NULL, NULL);
    if (!xp)
        return NAN;
    fit_xp_result r;
    fit_xp_get_result(xp, &r);
    double v = r.value[4], coef[3];
    if (fit_xp_hp_law(xp, 4, coef, NULL, NULL) == ST_OK)
        printf("  %s: law slopes N %.3f D %.3f; N %.3g D %.3g\n", name, coef[1], coef[2], r.N, r.D);
    fit_xp_destroy(xp);
    return v;
}

/* A warmup counted in steps (warmup_iters) gets the fixed-steps prior in its own unit (D slope
 * 0, no coupling to the batch) and stays near its 200 steps at 100x; read as a fraction of the
 * run (a parameter named plain `warmup`), the same runs' warmup would shrink as D grows. */
static void test_warmup_in_steps(void)
{
    double steps = warmup_at_100x("warmup_iters"), frac = warmup_at_100x("warmup");
    printf("warmup at 100x, optimum 200 steps: as steps %.4g, read as a fraction %.4g\n", steps,
           frac);
    CHECK(steps > 100 && steps < 400);
    CHECK(frac < 0.6 * steps);
}

/* Front: runs on an exact law lr = 0.5 C^-0.25 with objective 2 + 10 C^-0.3, plus dominated
 * runs and failures; OLS along the front gives the law exactly. */
static void test_front(void)
{
    fit_xp_param p[2];
    fit_xp_param_init(&p[0], "lr", FIT_XP_LOG);
    fit_xp_param_init(&p[1], "warmup", FIT_XP_LINEAR);
    enum { n = 16 };
    double x[n * 2], cost[n], obj[n];
    int failed[n] = {0};
    for (size_t i = 0; i < 8; i++) {
        double C = pow(10, 12 + 0.5 * (double)i);
        cost[i] = C;
        x[2 * i] = 0.5 * pow(C, -0.25);
        x[2 * i + 1] = 0.1 + 0.01 * log(C); /* linear in ln C */
        obj[i] = 2 + 10 * pow(C, -0.3);
    }
    for (size_t i = 8; i < 14; i++) { /* dominated: more cost, worse objective */
        cost[i] = cost[i - 8] * 1.5;
        x[2 * i] = 0.01 * (double)(i + 1);
        x[2 * i + 1] = 0.5;
        obj[i] = obj[i - 8] * 1.2;
    }
    for (size_t i = 14; i < n; i++) {
        cost[i] = NAN;
        x[2 * i] = 1;
        x[2 * i + 1] = 0.5;
        obj[i] = NAN;
        failed[i] = 1;
    }
    fit_xp *xp = NULL;
    CHECK_ST(fit_xp_create(&xp), ST_OK);
    fit_xp_options o = fit_xp_options_default();
    o.n_boot = 50;
    CHECK_ST(fit_xp_set_options(xp, &o), ST_OK);
    CHECK_ST(fit_xp_set_runs(xp, 2, p, n, x, cost, obj, failed, NULL, NULL), ST_OK);
    CHECK_ST(fit_xp_run(xp, 1e17), ST_OK);
    CHECK(fit_xp_front_n(xp) == 8);
    double coef[2], ci[2];
    CHECK_ST(fit_xp_front_law(xp, 0, coef, ci), ST_OK);
    CHECK_ABS(coef[0], log(0.5), 1e-9);
    CHECK_ABS(coef[1], -0.25, 1e-12);
    CHECK_ABS(ci[0], -0.25, 1e-9); /* exact data: every replicate gives the same slope */
    CHECK_ST(fit_xp_front_law(xp, 1, coef, NULL), ST_OK);
    CHECK_ABS(coef[1], 0.01, 1e-12);
    fit_xp_result r;
    CHECK_ST(fit_xp_get_result(xp, &r), ST_OK);
    CHECK(r.method == FIT_XP_METHOD_FRONT); /* no N, D: the front */
    CHECK_REL(r.value[0], 0.5 * pow(1e17, -0.25), 1e-9);
    CHECK_REL(r.objective, 2 + 10 * pow(1e17, -0.3), 1e-3);
    CHECK(r.warnings & FIT_XP_WARN_FAR);
    double nat[3];
    CHECK_ST(fit_xp_front_loss_law(xp, nat), ST_OK);
    CHECK_REL(nat[1], 0.3, 2e-2);
    CHECK_REL(nat[2], 2.0, 1e-2);
    CHECK(!strstr(r.warning_text, "clamped"));
    /* warmup's law gives 0.49 at 1e17: above a bound of 0.45, clamped, and the warning says
     * which value */
    p[1].max = 0.45;
    CHECK_ST(fit_xp_set_runs(xp, 2, p, n, x, cost, obj, failed, NULL, NULL), ST_OK);
    CHECK_ST(fit_xp_run(xp, 1e17), ST_OK);
    CHECK_ST(fit_xp_get_result(xp, &r), ST_OK);
    CHECK(r.value[1] == 0.45);
    CHECK(r.warnings & FIT_XP_WARN_BOUND);
    CHECK(strstr(r.warning_text, "clamped to its bound: warmup (to its max 0.45)") != NULL);
    CHECK(!strstr(r.warning_text, "lr ("));
    /* errors */
    CHECK_ST(fit_xp_run(xp, -1), ST_EINVAL);
    CHECK_ST(fit_xp_get_result(xp, &r), ST_ESTATE);
    double bad[2] = {-1, 0};
    CHECK_ST(fit_xp_set_runs(xp, 2, p, 1, bad, cost, obj, NULL, NULL, NULL), ST_EINVAL);
    CHECK(strstr(fit_xp_errmsg(xp), "lr") != NULL);
    CHECK_ST(fit_xp_set_runs(xp, 2, p, 2, x, cost, obj, NULL, NULL, NULL), ST_EEMPTY);
    fit_xp_destroy(xp);
}

/* The model recovers a world it can represent: ln L = Chinchilla + ln(1 + c u^2) exactly, with
 * lr_opt = 0.02 (N/1e7)^-0.5 (D/1e9)^0.3; runs with lr far above lr_max(N) fail. */
static void test_model_recovery(void)
{
    const double A = 400, B = 2000, E = 1.8, al = 0.34, be = 0.28, c = 0.02;
    fit_xp_param p[3];
    fit_xp_param_init(&p[0], "N", FIT_XP_LOG);
    fit_xp_param_init(&p[1], "D", FIT_XP_LOG);
    fit_xp_param_init(&p[2], "lr", FIT_XP_LOG);
    enum { n = 200 };
    double x[n * 3], cost[n], obj[n];
    int failed[n];
    st_rng *rng = NULL;
    st_rng_create(7, &rng);
    for (size_t i = 0; i < n; i++) {
        double N = exp(log(1e6) + st_rng_uniform(rng) * log(100.0));
        double D = exp(log(1e8) + st_rng_uniform(rng) * log(100.0));
        double lopt = log(0.02) - 0.5 * log(N / 1e7) + 0.3 * log(D / 1e9);
        double u = (st_rng_uniform(rng) - 0.5) * 6;
        double lr = exp(lopt + u);
        x[3 * i] = N;
        x[3 * i + 1] = D;
        x[3 * i + 2] = lr;
        failed[i] = log(lr) > log(0.2) - 0.4 * log(N / 1e7);
        cost[i] = failed[i] ? NAN : 6 * N * D;
        obj[i] = failed[i] ? NAN
                           : (E + A * pow(N, -al) + B * pow(D, -be)) *
                                 (1 + 0.5 * (1 - exp(-c * u * u / 0.5)));
    }
    st_rng_destroy(rng);
    fit_xp *xp = NULL;
    fit_xp_create(&xp);
    fit_xp_options o = fit_xp_options_default();
    o.n_boot = 20;
    o.prior_ab_sd = 0; /* exact data: no prior, exact recovery */
    o.prior_law_sd = 0;
    /* the interval from the replicates fit_xp_predict_replicates gives (rebuilt below) */
    o.interval_prior_draw = o.prior_draw;
    fit_xp_set_options(xp, &o);
    CHECK_ST(fit_xp_set_runs(xp, 3, p, n, x, cost, obj, failed, NULL, NULL), ST_OK);
    double Cmax = 0;
    for (size_t i = 0; i < n; i++)
        if (!failed[i] && cost[i] > Cmax)
            Cmax = cost[i];
    CHECK_ST(fit_xp_run(xp, 100 * Cmax), ST_OK);
    fit_xp_result r;
    fit_xp_get_result(xp, &r);
    CHECK(r.method == FIT_XP_METHOD_MODEL);
    double nat[5], coef[3], curv, sat, k;
    CHECK_ST(fit_xp_chinchilla(xp, nat, NULL), ST_OK);
    CHECK_REL(nat[2], E, 1e-3);
    CHECK_REL(nat[3], al, 1e-3);
    CHECK_REL(nat[4], be, 1e-3);
    CHECK_ST(fit_xp_hp_law(xp, 2, coef, &curv, &sat), ST_OK);
    CHECK_ABS(coef[1], -0.5, 1e-3);
    CHECK_ABS(coef[2], 0.3, 1e-3);
    CHECK_ABS(coef[0], log(0.02) + 0.5 * log(1e7) - 0.3 * log(1e9), 1e-2);
    CHECK_REL(curv, c, 1e-2);
    CHECK_ST(fit_xp_cost_model(xp, &k), ST_OK);
    CHECK_ABS(k, log(6.0), 1e-12);
    double g[4];
    CHECK_ST(fit_xp_divergence(xp, g), ST_OK);
    /* boundary ln lr = ln 0.2 - 0.4 ln(N/1e7): slope ratio -g2/g1 near -0.4 */
    CHECK(g[1] > 2);
    CHECK_ABS(-g[2] / g[1], -0.4, 0.15);
    /* allocation: the recommended N matches Chinchilla's closed form (eq. 4) on the truth */
    double a = be / (al + be), G = pow(al * A / (be * B), 1 / (al + be));
    double Nopt = G * pow(100 * Cmax / 6, a);
    /* the law's optimum (1.3e4 tokens per parameter) lies just beyond the runs' largest D/N
     * times 1.25, where the ratio guard holds the recommendation (test_ratio_guard) */
    CHECK(r.warnings & FIT_XP_WARN_RATIO);
    CHECK_REL(r.N, Nopt, 0.15);
    CHECK(r.p_diverge < 0.05);
    CHECK(r.objective_lo <= r.objective && r.objective <= r.objective_hi);
    /* predict at a training run: close to its observed objective */
    double pr, lo, hi, pd;
    size_t i0 = 0;
    while (failed[i0])
        i0++;
    CHECK_ST(fit_xp_predict(xp, &x[3 * i0], NAN, NAN, &pr, &lo, &hi, &pd), ST_OK);
    CHECK_REL(pr, obj[i0], 1e-3);
    /* the replicates one by one: each close to the truth on exact data, exp of their median
     * is fit_xp_predict's objective, their mean P(diverge) its p_diverge, and its upper end is
     * exp(median + z sd) with sd^2 = their variance + sigma^2 (the interval rebuilt by hand) */
    size_t R = fit_xp_n_replicates(xp);
    CHECK(R == 20);
    double ll[20], pdr[20], sig = NAN, mean = 0, var = 0, pm = 0;
    CHECK_ST(fit_xp_predict_replicates(xp, &x[3 * i0], NAN, NAN, ll, pdr, &sig), ST_OK);
    for (size_t q = 0; q < R; q++) {
        CHECK_ABS(ll[q], log(obj[i0]), 5e-3);
        mean += ll[q] / (double)R;
        pm += pdr[q] / (double)R;
    }
    for (size_t q = 0; q < R; q++)
        var += (ll[q] - mean) * (ll[q] - mean) / (double)(R - 1);
    double med[20];
    memcpy(med, ll, sizeof(med));
    for (size_t a1 = 0; a1 < R; a1++) /* insertion sort: the median by hand */
        for (size_t b1 = a1; b1 > 0 && med[b1 - 1] > med[b1]; b1--) {
            double t = med[b1];
            med[b1] = med[b1 - 1];
            med[b1 - 1] = t;
        }
    double m50 = 0.5 * (med[9] + med[10]);
    CHECK_REL(exp(m50), pr, 1e-12);
    CHECK_ABS(pm, pd, 1e-12);
    CHECK(sig >= 0);
    CHECK_REL(hi, exp(m50 + 1.6448536269514722 * sqrt(var + sig * sig)), 1e-9);
    CHECK_ST(fit_xp_predict_replicates(xp, NULL, NAN, NAN, ll, NULL, NULL), ST_EINVAL);
    fit_xp_destroy(xp);

    /* the same runs with the default prior on alpha - beta (sd 0.05, residual sd floor 1%): the
     * fitted gap alpha - beta = 0.06 shrinks toward 0 but stays positive, alpha and beta move by
     * a few percent, and the allocation stays within 15% of the truth's */
    fit_xp_create(&xp);
    o = fit_xp_options_default();
    o.n_boot = 5;
    fit_xp_set_options(xp, &o);
    CHECK_ST(fit_xp_set_runs(xp, 3, p, n, x, cost, obj, failed, NULL, NULL), ST_OK);
    CHECK_ST(fit_xp_run(xp, 100 * Cmax), ST_OK);
    fit_xp_get_result(xp, &r);
    double nat2[5];
    CHECK_ST(fit_xp_chinchilla(xp, nat2, NULL), ST_OK);
    CHECK(nat2[3] - nat2[4] < al - be - 0.005);
    CHECK(nat2[3] - nat2[4] > 0);
    CHECK_REL(nat2[3], al, 0.05);
    CHECK_REL(nat2[4], be, 0.05);
    CHECK_REL(r.N, Nopt, 0.15);
    fit_xp_destroy(xp);
    /* a bad prior is refused */
    fit_xp_create(&xp);
    o = fit_xp_options_default();
    o.prior_ab_sd = -1;
    CHECK_ST(fit_xp_set_options(xp, &o), ST_EINVAL);
    o.prior_ab_sd = INFINITY;
    CHECK_ST(fit_xp_set_options(xp, &o), ST_EINVAL);
    fit_xp_destroy(xp);
}

/* Runs of the law (400 N^-0.34 + 2000 D^-0.28 + 1.8) x an lr penalty with D/N log-uniform in
 * [rlo, rhi]; the recommendation at 100x the largest run into *r (its warnings included). */
static void ratio_sweep(double rlo, double rhi, fit_xp_result *r, double *Nopt)
{
    const double A = 400, B = 2000, E = 1.8, al = 0.34, be = 0.28;
    fit_xp_param p[3];
    fit_xp_param_init(&p[0], "N", FIT_XP_LOG);
    fit_xp_param_init(&p[1], "D", FIT_XP_LOG);
    fit_xp_param_init(&p[2], "lr", FIT_XP_LOG);
    enum { n = 150 };
    double x[n * 3], cost[n], obj[n], Cmax = 0;
    int failed[n] = {0};
    st_rng *rng = NULL;
    st_rng_create(11, &rng);
    for (size_t i = 0; i < n; i++) {
        double N = exp(log(1e6) + st_rng_uniform(rng) * log(100.0));
        double D = N * exp(log(rlo) + st_rng_uniform(rng) * log(rhi / rlo));
        double u = (st_rng_uniform(rng) - 0.5) * 4;
        x[3 * i] = N;
        x[3 * i + 1] = D;
        x[3 * i + 2] = exp(log(0.01) + u);
        cost[i] = 6 * N * D;
        Cmax = fmax(Cmax, cost[i]);
        obj[i] = (E + A * pow(N, -al) + B * pow(D, -be)) * (1 + 0.5 * (1 - exp(-0.04 * u * u)));
    }
    st_rng_destroy(rng);
    fit_xp *xp = NULL;
    fit_xp_create(&xp);
    fit_xp_options o = fit_xp_options_default();
    o.n_boot = 5;
    o.prior_ab_sd = 0;
    o.prior_law_sd = 0;
    fit_xp_set_options(xp, &o);
    CHECK_ST(fit_xp_set_runs(xp, 3, p, n, x, cost, obj, failed, NULL, NULL), ST_OK);
    CHECK_ST(fit_xp_run(xp, 100 * Cmax), ST_OK);
    fit_xp_get_result(xp, r);
    fit_xp_destroy(xp);
    /* Chinchilla's closed form (eq. 4) on the truth */
    double a = be / (al + be), G = pow(al * A / (be * B), 1 / (al + be));
    *Nopt = G * pow(100 * Cmax / 6, a);
}

/* The recommendation's tokens per parameter stays within the runs' range (widened 1.25x) with a
 * warning when the law's optimum lies outside it, and is the law's optimum when inside. */
static void test_ratio_guard(void)
{
    fit_xp_result r;
    double Nopt;
    ratio_sweep(100, 1e5, &r, &Nopt); /* the optimum (~1.4e4 tokens per parameter) inside */
    CHECK(!(r.warnings & FIT_XP_WARN_RATIO));
    CHECK_REL(r.N, Nopt, 0.1);
    ratio_sweep(1, 8, &r, &Nopt); /* every run at <= 8 tokens per parameter */
    CHECK(r.warnings & FIT_XP_WARN_RATIO);
    CHECK(r.D / r.N <= 8 * 1.25 * 1.001);
    CHECK(r.D / r.N >= 8 * 1.25 / 1.25); /* at the edge nearest the optimum */
    CHECK(r.N > 2 * Nopt); /* fewer tokens per parameter than the law's optimum: a larger N */
}

/* ---- the model's objectives: analytic gradients against finite differences --------------- */

static double unif(st_rng *rng, double lo, double hi)
{
    return lo + (hi - lo) * st_rng_uniform(rng);
}

/*
 * The largest error of an objective's gradient at x (n) against central differences with step
 * h = 1e-5 max(1, |x_j|), relative to |fd_j| + 1e-6 (1 + |f|). Here |f| < 200: rounding leaves
 * under 1e-8 of absolute error in fd, the truncation (h^2 / 6 times the third derivative) about
 * 1e-10 per unit of it; measured worst 2.7e-7 (1e-6 gives 3.4e-6, 1e-4 6.5e-6).
 */
static double grad_error(double (*f)(unsigned, const double *, double *, void *), void *data,
                         const double *x, unsigned n)
{
    double g[XP_NTH], xh[XP_NTH], worst = 0;
    double f0 = f(n, x, g, data);
    CHECK_REL(f(n, x, NULL, data), f0, 1e-15); /* the value does not depend on asking for g */
    for (unsigned j = 0; j < n; j++) {
        double h = 1e-5 * fmax(1, fabs(x[j]));
        memcpy(xh, x, n * sizeof(double));
        xh[j] = x[j] + h;
        double fp = f(n, xh, NULL, data);
        xh[j] = x[j] - h;
        double fm = f(n, xh, NULL, data);
        double fd = (fp - fm) / (2 * h);
        worst = fmax(worst, fabs(g[j] - fd) / (fabs(fd) + 1e-6 * (1 + fabs(f0))));
    }
    return worst;
}

/* A random model point: a Chinchilla part near published fits, hyper laws with slopes within
 * +-slope (beyond SLOPE_MAX = 1 the wall acts), penalties from flat to sharp, couplings. */
static void random_theta(st_rng *rng, size_t n_hp, double slope, double *th)
{
    th[XP_TH_A] = unif(rng, 4, 8);
    th[XP_TH_B] = unif(rng, 5, 9);
    th[XP_TH_E] = unif(rng, 0.2, 1.2);
    th[XP_TH_ALPHA] = unif(rng, 0.2, 0.6);
    th[XP_TH_BETA] = unif(rng, 0.2, 0.6);
    for (size_t k = 0; k < n_hp; k++) {
        double *h = &th[XP_HP_OFF(k)];
        h[XP_HP_ICPT] = unif(rng, -0.5, 0.5);
        h[XP_HP_SLOPE_N] = unif(rng, -slope, slope);
        h[XP_HP_SLOPE_D] = unif(rng, -slope, slope);
        h[XP_HP_LN_CURV] = log(unif(rng, 0.01, 2));
        h[XP_HP_LN_SAT] = log(unif(rng, 0.03, 1));
        for (size_t j = 0; j < k; j++)
            h[XP_HP_COUPLING + j] = unif(rng, -0.8, 0.8);
    }
}

/* ln L by its formula, independently of xp_jm_eval's stable LSE and shared optimum code. */
static double lnL_formula(const double *th, size_t n_hp, double lN, double lD, double lN0,
                          double lD0, const double *bh)
{
    double L = exp(th[XP_TH_A] - th[XP_TH_ALPHA] * lN) + exp(th[XP_TH_B] - th[XP_TH_BETA] * lD) +
               exp(th[XP_TH_E]);
    double pen = 0;
    for (size_t k = 0; k < n_hp; k++) {
        const double *h = &th[XP_HP_OFF(k)];
        double opt = h[XP_HP_ICPT] + h[XP_HP_SLOPE_N] * (lN - lN0) + h[XP_HP_SLOPE_D] * (lD - lD0);
        for (size_t j = 0; j < k; j++)
            opt += h[XP_HP_COUPLING + j] * bh[j];
        double c = exp(h[XP_HP_LN_CURV]), kap = exp(h[XP_HP_LN_SAT]), u = bh[k] - opt;
        pen += kap * (1 - exp(-c * u * u / kap));
    }
    return log(L) + log(1 + pen);
}

/* The worst gradient error of xp_jm_objective (d: n_th set) at 8 random points with slopes
 * within +-slope, all parameters free and then every third held (the free ones mapped through
 * free_idx); *worst_lnL: the worst relative error of xp_jm_eval against the formula on d's rows. */
static double jm_worst(xp_jm_data *d, st_rng *rng, double slope, double *worst_lnL)
{
    double worst = 0;
    for (int pt = 0; pt < 8; pt++) {
        double th[XP_NTH], xf[XP_NTH];
        random_theta(rng, d->n_hp, slope, th);
        memcpy(d->full, th, d->n_th * sizeof(double));
        d->n_free = d->n_th;
        for (size_t j = 0; j < d->n_th; j++)
            d->free_idx[j] = j;
        worst = fmax(worst, grad_error(xp_jm_objective, d, th, (unsigned)d->n_free));
        d->n_free = 0;
        for (size_t j = 0; j < d->n_th; j++)
            if (j % 3 != 1) {
                xf[d->n_free] = th[j];
                d->free_idx[d->n_free++] = j;
            }
        worst = fmax(worst, grad_error(xp_jm_objective, d, xf, (unsigned)d->n_free));
        for (size_t t = 0; t < d->n; t++) {
            size_t i = d->rows[t];
            const double *bh = &d->bh[i * d->n_hp];
            double v = xp_jm_eval(th, d->n_hp, d->lN[i], d->lD[i], d->lN0, d->lD0, bh, NULL);
            double want = lnL_formula(th, d->n_hp, d->lN[i], d->lD[i], d->lN0, d->lD0, bh);
            *worst_lnL = fmax(*worst_lnL, fabs(v - want) / fabs(want));
        }
    }
    return worst;
}

/*
 * xp_jm_objective on 3 hypers (couplings included): its gradient against central differences
 * (a) on 25 random runs with the alpha - beta prior, the prior on ln E, Gaussian priors on every
 * hyper slot, the ridges and the slopes' wall; (b) without runs, the priors (heavier), ridges and
 * wall alone; (c) the ridges alone (slopes inside the wall), whose gradients are too small to show
 * in (a) and (b). xp_jm_eval against the formula of ln L on (a)'s runs.
 */
static void test_jm_gradient(void)
{
    enum { n = 25, n_hp = 3 };
    double lN[n], lD[n], ly[n], bh[n * n_hp];
    size_t rows[n];
    st_rng *rng = NULL;
    st_rng_create(41, &rng);
    for (size_t i = 0; i < n; i++) {
        lN[i] = unif(rng, log(1e6), log(1e8));
        lD[i] = unif(rng, log(1e8), log(1e10));
        ly[i] = unif(rng, 0.9, 1.6);
        for (size_t k = 0; k < n_hp; k++)
            bh[i * n_hp + k] = unif(rng, -2, 2);
        rows[i] = i;
    }
    xp_jm_data d;
    memset(&d, 0, sizeof(d));
    d.n_hp = n_hp;
    d.n = n;
    d.rows = rows;
    d.lN = lN;
    d.lD = lD;
    d.ly = ly;
    d.bh = bh;
    d.lN0 = log(1e7);
    d.lD0 = log(1e9);
    d.n_th = XP_HP_OFF(n_hp);
    d.w_ab = 0.3;
    d.w_e = 0.2;
    d.mu_e = 0.4;
    for (size_t j = XP_TH_CHIN; j < d.n_th; j++) {
        d.pw[j] = unif(rng, 0.01, 0.5);
        d.pmu[j] = unif(rng, -1, 1);
    }
    double worst_lnL = 0, worst[3];
    worst[0] = jm_worst(&d, rng, 1.5, &worst_lnL);
    d.n = 0;
    d.w_ab = 2;
    d.w_e = 1.5;
    for (size_t j = XP_TH_CHIN; j < d.n_th; j++)
        d.pw[j] = unif(rng, 0.5, 2);
    worst[1] = jm_worst(&d, rng, 1.5, &worst_lnL);
    d.w_ab = d.w_e = 0;
    memset(d.pw, 0, sizeof(d.pw));
    worst[2] = jm_worst(&d, rng, 0.9, &worst_lnL);
    st_rng_destroy(rng);
    printf("joint objective: gradient vs central differences, worst relative error %.2g (runs), "
           "%.2g (priors, ridges, wall), %.2g (ridges); ln L vs its formula %.2g\n",
           worst[0], worst[1], worst[2], worst_lnL);
    for (int c = 0; c < 3; c++)
        CHECK(worst[c] < 1e-5);
    CHECK(worst_lnL < 1e-12);
}

/* xp_lg_objective on 40 random runs (a third failed), with and without the warmup covariate
 * and the slope tie: its gradient against central differences at 8 random points each. */
static void test_lg_gradient(void)
{
    enum { n = 40 };
    double z[n * XP_NZ];
    int y[n];
    size_t rows[n];
    st_rng *rng = NULL;
    st_rng_create(43, &rng);
    for (size_t i = 0; i < n; i++) {
        for (size_t q = 0; q < XP_NZ; q++)
            z[XP_NZ * i + q] = unif(rng, -2, 2);
        y[i] = st_rng_uniform(rng) < 1.0 / 3;
        rows[i] = i;
    }
    xp_lg_data L = {n, rows, z, y, 0, 0, 0};
    double worst = 0;
    for (int use_w = 0; use_w <= 1; use_w++) {
        L.use_w = use_w;
        for (int pt = 0; pt < 8; pt++) {
            L.tie_w = pt % 2 ? unif(rng, 0.5, 20) : 0; /* with and without the slope tie */
            L.tie_slope = unif(rng, -1, 0.5);
            double g[XP_NG];
            for (size_t j = 0; j < XP_NG; j++)
                g[j] = unif(rng, -3, 3);
            worst = fmax(worst, grad_error(xp_lg_objective, &L, g, use_w ? XP_NG : XP_NG - 1));
        }
    }
    st_rng_destroy(rng);
    printf("boundary objective: gradient vs central differences, worst relative error %.2g\n",
           worst);
    CHECK(worst < 1e-5);
}

/* ---- the simulator study ---------------------------------------------------------------- */

typedef struct study {
    double regret_model, regret_front, p_div, pred_err;
    int div_model, div_front, in_interval;
    double ratio_lr;  /* recommended lr / oracle lr */
    double ratio_tau; /* AdamW timescale of the recommendation / its optimum at the same N, D */
    double value[6];  /* the recommendation */
    double iv_width;  /* (hi - lo) / objective of the predicted loss */
} study;

static double true_loss(const sim_law *w, const double *v)
{
    sim_setting s = {v[0], v[1], v[2], v[3], v[4], v[5], 0};
    if (s.batch > s.D)
        s.batch = s.D;
    if (!(s.warmup >= 0 && s.warmup < 1))
        s.warmup = 0.01;
    sim_terms t;
    if (sim_eval(w, &s, &t, NULL) != ST_OK)
        return INFINITY;
    return t.diverged ? INFINITY : t.loss;
}

/* The scale of the hyperparameter laws' literature priors in run_study (the option's default 1;
 * test_wd_prior isolates the weight decay's own prior with 0). */
static double study_prior_law_sd = 1.0;
static double study_prior_draw = 0.5;
static double study_interval_draw = 1.0;

static void run_study(uint64_t seed, size_t n, size_t n_boot, double prior_wd_sd, study *out)
{
    sim_law w = sim_law_default();
    const char *names[6] = {"N", "D", "lr", "batch", "warmup", "weight_decay"};
    fit_xp_space sp[6] = {FIT_XP_LOG, FIT_XP_LOG, FIT_XP_LOG, FIT_XP_LOG, FIT_XP_LOGIT, FIT_XP_LOG};
    /* the search box (random search, log-uniform; warmup uniform in logit) */
    const double lo[6] = {2e6, 4e7, 1e-4, 2e3, 0.002, 1e-3};
    const double hi[6] = {6e7, 2e9, 0.5, 1e6, 0.3, 1.0};
    fit_xp_param p[6];
    for (size_t j = 0; j < 6; j++)
        fit_xp_param_init(&p[j], names[j], sp[j]);
    p[4].min = 1e-4;
    p[4].max = 0.5;
    double *x = malloc(n * 6 * sizeof(double)), *cost = malloc(n * sizeof(double));
    double *obj = malloc(n * sizeof(double));
    int *failed = malloc(n * sizeof(int));
    st_rng *rng = NULL;
    st_rng_create(seed, &rng);
    double Cmax = 0;
    for (size_t i = 0; i < n; i++) {
        double *v = &x[6 * i];
        for (size_t j = 0; j < 6; j++) {
            double u = st_rng_uniform(rng);
            if (sp[j] == FIT_XP_LOGIT) {
                double a = log(lo[j] / (1 - lo[j])), b = log(hi[j] / (1 - hi[j]));
                v[j] = 1 / (1 + exp(-(a + u * (b - a))));
            } else {
                v[j] = exp(log(lo[j]) + u * log(hi[j] / lo[j]));
            }
        }
        if (v[3] > v[1])
            v[3] = v[1];
        sim_setting s = {v[0], v[1], v[2], v[3], v[4], v[5], 0};
        double o, ds;
        int dv;
        sim_run(&w, &s, seed * 100003 + i, &o, &dv, &ds, NULL);
        failed[i] = dv;
        obj[i] = dv ? NAN : o;
        cost[i] = dv ? NAN : 6 * v[0] * v[1];
        if (!dv && cost[i] > Cmax)
            Cmax = cost[i];
    }
    st_rng_destroy(rng);
    double C = 100 * Cmax;
    sim_setting opt;
    double L_opt;
    sim_oracle(&w, C, &opt, &L_opt);

    fit_xp *xp = NULL;
    fit_xp_create(&xp);
    fit_xp_options o = fit_xp_options_default();
    o.n_boot = n_boot;
    o.seed = seed;
    o.prior_wd_sd = prior_wd_sd;
    o.prior_law_sd = study_prior_law_sd;
    o.prior_draw = study_prior_draw;
    o.interval_prior_draw = study_interval_draw;
    fit_xp_set_options(xp, &o);
    CHECK_ST(fit_xp_set_runs(xp, 6, p, n, x, cost, obj, failed, NULL, NULL), ST_OK);
    st_status s = fit_xp_run(xp, C);
    CHECK_ST(s, ST_OK);
    if (s != ST_OK)
        fprintf(stderr, "  %s\n", fit_xp_errmsg(xp));
    fit_xp_result r;
    memset(out, 0, sizeof(*out));
    if (fit_xp_get_result(xp, &r) == ST_OK) {
        CHECK(r.method == FIT_XP_METHOD_MODEL);
        double L = true_loss(&w, r.value);
        out->regret_model = (L - L_opt) / L_opt;
        out->div_model = isinf(L);
        out->p_div = r.p_diverge;
        out->pred_err = (r.objective - L) / L;
        out->in_interval = r.objective_lo <= L && L <= r.objective_hi;
        out->ratio_lr = r.value[2] / opt.lr;
        memcpy(out->value, r.value, sizeof(out->value));
        out->iv_width = (r.objective_hi - r.objective_lo) / r.objective;
        out->ratio_tau = r.value[3] / (r.value[2] * r.value[5] * r.value[1]) /
                         sim_tau_opt(&w, r.value[0], r.value[1]);
        double fv[6];
        fit_xp_front_recommend(xp, fv);
        double Lf = true_loss(&w, fv);
        out->regret_front = (Lf - L_opt) / L_opt;
        out->div_front = isinf(Lf);
        printf("seed %llu: C %.3g (100x), oracle N %.3g D %.3g lr %.3g loss %.5f\n",
               (unsigned long long)seed, C, opt.N, opt.D, opt.lr, L_opt);
        printf("  model: N %.3g D %.3g lr %.3g batch %.3g warmup %.4f wd %.3g -> true %.5f, "
               "predicted %.5f [%.5f, %.5f], p_diverge %.3f\n",
               r.value[0], r.value[1], r.value[2], r.value[3], r.value[4], r.value[5], L,
               r.objective, r.objective_lo, r.objective_hi, r.p_diverge);
        printf("  front: N %.3g D %.3g lr %.3g -> true %.5f%s\n", fv[0], fv[1], fv[2], Lf,
               isinf(Lf) ? " (diverges)" : "");
        if (r.warning_text[0])
            printf("  warnings: %s\n", r.warning_text);
    }
    fit_xp_destroy(xp);
    free(x);
    free(cost);
    free(obj);
    free(failed);
}

static void test_simulator(void)
{
    int quick = getenv("ST_TEST_QUICK") != NULL;
    size_t n_seeds = quick ? 1 : 3, n_runs = quick ? 200 : 300, n_boot = quick ? 20 : 100;
    double worst = 0, worst_p = 0;
    for (size_t k = 0; k < n_seeds; k++) {
        study st;
        run_study(1 + k, n_runs, n_boot, 0.25, &st);
        printf("  regret model %.3f%%  front %.3f%%%s  p_diverge %.3f  lr/lr_opt %.2f  "
               "prediction error %+.2f%%  in interval %d\n",
               100 * st.regret_model, 100 * st.regret_front, st.div_front ? " (diverged)" : "",
               st.p_div, st.ratio_lr, 100 * st.pred_err, st.in_interval);
        CHECK(!st.div_model);
        CHECK(st.regret_model < 0.01);
        CHECK(st.p_div < 0.05);
        CHECK(fabs(st.pred_err) < 0.02);
        worst = fmax(worst, st.regret_model);
        worst_p = fmax(worst_p, st.p_div);
    }
    printf("simulator: worst regret at 100x %.3f%% (target < 1%%), worst p_diverge %.3f "
           "(target < 0.05), %zu seeds x %zu runs\n",
           100 * worst, worst_p, n_seeds, n_runs);
}

/*
 * The weight decay's timescale prior on a sweep of 60 random runs, too few for the hyperparameter
 * couplings to be free without it: with the prior the recommended weight decay keeps the AdamW
 * timescale B / (lr lambda D) within a factor 1.65 of the simulator's optimum at the recommended
 * N, D (a penalty below 0.2%); without it the weight decay's optimum cannot move with lr, batch
 * and D, and the timescale lands further off. Replicates that draw the prior's centre (the
 * default prior_draw) choose the weight decay over a wider spread: on this sweep the timescale
 * lands 2.8x off but the regret falls (1.22% against 1.50%); checked against the sweep without
 * the prior.
 */
static void test_wd_prior(void)
{
    study on, off, drawn;
    study_prior_law_sd = 0; /* the weight decay's prior alone, on the point fit */
    study_prior_draw = 0;
    run_study(11, 60, 20, 0.25, &on);
    run_study(11, 60, 20, 0, &off);
    study_prior_draw = 0.5; /* and with replicates drawing its centre (the default) */
    run_study(11, 60, 20, 0.25, &drawn);
    study_prior_law_sd = 1;
    printf("weight decay prior: tau / tau_opt %.3f with the prior, %.3f without; regret %.3f%% "
           "and %.3f%%; replicates drawing its centre: tau / tau_opt %.3f, regret %.3f%%\n",
           on.ratio_tau, off.ratio_tau, 100 * on.regret_model, 100 * off.regret_model,
           drawn.ratio_tau, 100 * drawn.regret_model);
    CHECK(fabs(log(on.ratio_tau)) < 0.5);
    CHECK(fabs(log(on.ratio_tau)) < fabs(log(off.ratio_tau)));
    CHECK(drawn.regret_model < off.regret_model);
    /* a bad sd is refused */
    fit_xp *xp = NULL;
    fit_xp_create(&xp);
    fit_xp_options o = fit_xp_options_default();
    o.prior_wd_sd = -0.1;
    CHECK_ST(fit_xp_set_options(xp, &o), ST_EINVAL);
    o.prior_wd_sd = NAN;
    CHECK_ST(fit_xp_set_options(xp, &o), ST_EINVAL);
    fit_xp_destroy(xp);
}

/*
 * The interval's own replicates (fit_xp_options.interval_prior_draw): on a sweep of 60 random
 * runs, 40 replicates, the recommendation and P(diverge) are the same bit for bit whether the
 * interval comes from the recommendation's replicates (interval_prior_draw = prior_draw = 0.5) or
 * from 20 of its own drawing the priors with their full sds (1, the default), and the interval
 * of the latter is wider: the laws the runs cannot place are doubted at their full sds. A
 * negative value is refused.
 */
static void test_interval_replicates(void)
{
    study same, own;
    study_interval_draw = 0.5;
    run_study(3, 60, 40, 0.25, &same);
    study_interval_draw = 1.0;
    run_study(3, 60, 40, 0.25, &own);
    printf("interval replicates: width %.4f from the recommendation's (K = 0.5), %.4f from its own "
           "(K = 1); P(diverge) %.4g and %.4g\n",
           same.iv_width, own.iv_width, same.p_div, own.p_div);
    CHECK(!memcmp(same.value, own.value, sizeof(same.value)));
    CHECK(same.p_div == own.p_div);
    CHECK(own.iv_width > same.iv_width);
    fit_xp *xp = NULL;
    fit_xp_create(&xp);
    fit_xp_options o = fit_xp_options_default();
    CHECK(o.interval_prior_draw == 1.0);
    o.interval_prior_draw = -1;
    CHECK_ST(fit_xp_set_options(xp, &o), ST_EINVAL);
    fit_xp_destroy(xp);
}

/*
 * A sweep of 120 runs without a failure, fitted with 10 replicates and run at 10x its largest
 * cost: N in [1e6, 3e7], D in [1e8, 3e9], lr = 0.003 (N / 1e6)^lr_slope e^u with u uniform in
 * [-spread/2, spread/2]. *lrmax: the largest learning rate tried.
 */
static fit_xp *no_failure_sweep(uint64_t seed, double lr_slope, double spread, double *lrmax)
{
    fit_xp_param p[3];
    fit_xp_param_init(&p[0], "N", FIT_XP_LOG);
    fit_xp_param_init(&p[1], "D", FIT_XP_LOG);
    fit_xp_param_init(&p[2], "lr", FIT_XP_LOG);
    enum { n = 120 };
    double x[n * 3], cost[n], obj[n], Cmax = 0;
    int failed[n] = {0};
    *lrmax = 0;
    st_rng *rng = NULL;
    st_rng_create(seed, &rng);
    for (size_t i = 0; i < n; i++) {
        double N = exp(log(1e6) + st_rng_uniform(rng) * log(30.0));
        double D = exp(log(1e8) + st_rng_uniform(rng) * log(30.0));
        double u = (st_rng_uniform(rng) - 0.5) * spread;
        double lr = 0.003 * pow(N / 1e6, lr_slope) * exp(u);
        x[3 * i] = N;
        x[3 * i + 1] = D;
        x[3 * i + 2] = lr;
        cost[i] = 6 * N * D;
        obj[i] = (1.8 + 400 * pow(N, -0.34) + 2000 * pow(D, -0.28)) * (1 + 0.02 * u * u) *
                 (1 + 0.003 * (st_rng_uniform(rng) - 0.5));
        *lrmax = fmax(*lrmax, lr);
        Cmax = fmax(Cmax, cost[i]);
    }
    st_rng_destroy(rng);
    fit_xp *xp = NULL;
    fit_xp_create(&xp);
    fit_xp_options o = fit_xp_options_default();
    o.n_boot = 10;
    fit_xp_set_options(xp, &o);
    CHECK_ST(fit_xp_set_runs(xp, 3, p, n, x, cost, obj, failed, NULL, NULL), ST_OK);
    CHECK_ST(fit_xp_run(xp, 10 * Cmax), ST_OK);
    return xp;
}

/* No run failed: P(diverge) comes from the prior (pseudo-runs at 1.65x the largest learning rate
 * that succeeded in each size group fail), so a learning rate far above every one tried is risky
 * and one inside the tried range is not; the warning says the boundary is a prior. */
static void test_boundary_prior(void)
{
    double lrmax;
    fit_xp *xp = no_failure_sweep(11, 0, 3, &lrmax);
    fit_xp_result r;
    fit_xp_get_result(xp, &r);
    CHECK(r.method == FIT_XP_METHOD_MODEL);
    CHECK((r.warnings & FIT_XP_WARN_FEW_FAILED) != 0);
    CHECK(r.p_diverge < 0.05);
    double v[3] = {3e6, 1e9, 20 * lrmax}, obj1, lo, hi, pd_hi, pd_lo;
    CHECK_ST(fit_xp_predict(xp, v, NAN, NAN, &obj1, &lo, &hi, &pd_hi), ST_OK);
    v[2] = 0.003;
    CHECK_ST(fit_xp_predict(xp, v, NAN, NAN, &obj1, &lo, &hi, &pd_lo), ST_OK);
    CHECK(pd_hi > 0.3);
    CHECK(pd_lo < 0.01);
    fit_xp_destroy(xp);
}

/* The prior boundary moves with N as the largest learning rates tried do: a sweep whose learning
 * rates fall as N^-0.7 (near each size's optimum) and never failed. Beyond the largest N, the
 * largest learning rate tried (by the smallest runs) is risky; the envelope's own extrapolation
 * divided by e is safe. A single pseudo-run at the overall largest learning rate made the first
 * safe too. */
static void test_boundary_prior_moves_with_n(void)
{
    double lrmax;
    fit_xp *xp = no_failure_sweep(12, -0.7, 2, &lrmax);
    double v[3] = {1e8, 2e9, lrmax}, obj1, lo, hi, pd_hi, pd_lo;
    CHECK_ST(fit_xp_predict(xp, v, NAN, NAN, &obj1, &lo, &hi, &pd_hi), ST_OK);
    v[2] = 0.003 * pow(100.0, -0.7);
    CHECK_ST(fit_xp_predict(xp, v, NAN, NAN, &obj1, &lo, &hi, &pd_lo), ST_OK);
    printf("boundary prior at N 1e8: p_diverge %.3g at the largest lr tried, %.3g at the "
           "envelope's lr / e\n",
           pd_hi, pd_lo);
    CHECK(pd_hi > 0.3);
    CHECK(pd_lo < 0.01);
    fit_xp_destroy(xp);
}

/* The boundary's slope tie on a constructed sweep whose failures cannot place the boundary's N
 * slope: lr_opt = 0.02 (N/1e7)^-0.3 (no D slope), runs fail above lr_max = 3 lr_opt, and only the
 * 40 runs at N = 1e6 try learning rates that high (u = ln(lr / lr_opt) up to 1.6); the other 120
 * (N up to 1e8) stay at u <= 0.3, far below the boundary. Every failure is at one size, so the
 * data say nothing of the slope but "not below about -0.4", and the untied fit moves the boundary
 * away from the larger runs' successes; tied, its ln N slope -g_LN / g_LR follows the fitted
 * optimum's (-0.3, the truth). */
static fit_xp *tie_sweep(double prior_law_sd)
{
    fit_xp_param p[3];
    fit_xp_param_init(&p[0], "N", FIT_XP_LOG);
    fit_xp_param_init(&p[1], "D", FIT_XP_LOG);
    fit_xp_param_init(&p[2], "lr", FIT_XP_LOG);
    enum { n = 160 };
    double x[n * 3], cost[n], obj[n], Cmax = 0;
    int failed[n];
    st_rng *rng = NULL;
    st_rng_create(17, &rng);
    for (size_t i = 0; i < n; i++) {
        int probe = i < 40; /* the runs at N = 1e6 that probe the boundary */
        double N = probe ? 1e6 : exp(log(1e6) + st_rng_uniform(rng) * log(100.0));
        double D = exp(log(1e8) + st_rng_uniform(rng) * log(100.0));
        double u = probe ? unif(rng, -1.5, 1.6) : unif(rng, -1.5, 0.3);
        x[3 * i] = N;
        x[3 * i + 1] = D;
        x[3 * i + 2] = 0.02 * pow(N / 1e7, -0.3) * exp(u);
        failed[i] = u > log(3.0);
        cost[i] = failed[i] ? NAN : 6 * N * D;
        obj[i] = failed[i] ? NAN
                           : (1.8 + 400 * pow(N, -0.34) + 2000 * pow(D, -0.28)) *
                                 (1 + 0.5 * (1 - exp(-0.02 * u * u / 0.5)));
        if (!failed[i])
            Cmax = fmax(Cmax, cost[i]);
    }
    st_rng_destroy(rng);
    fit_xp *xp = NULL;
    fit_xp_create(&xp);
    fit_xp_options o = fit_xp_options_default();
    o.n_boot = 10;
    o.prior_law_sd = prior_law_sd; /* 0: no literature priors, no tie */
    fit_xp_set_options(xp, &o);
    CHECK_ST(fit_xp_set_runs(xp, 3, p, n, x, cost, obj, failed, NULL, NULL), ST_OK);
    CHECK_ST(fit_xp_run(xp, 100 * Cmax), ST_OK);
    return xp;
}

static void test_boundary_tie(void)
{
    double g_free[4], g_tied[4], coef[3], curv, sat;
    fit_xp *xp = tie_sweep(0);
    CHECK_ST(fit_xp_divergence(xp, g_free), ST_OK);
    fit_xp_destroy(xp);
    xp = tie_sweep(1);
    CHECK_ST(fit_xp_divergence(xp, g_tied), ST_OK);
    CHECK_ST(fit_xp_hp_law(xp, 2, coef, &curv, &sat), ST_OK);
    fit_xp_destroy(xp);
    double s_free = -g_free[2] / g_free[1], s_tied = -g_tied[2] / g_tied[1];
    printf("boundary tie: ln N slope of the boundary %.3f untied, %.3f tied (truth -0.3; the "
           "lr optimum's fitted %.3f)\n",
           s_free, s_tied, coef[1]);
    CHECK_ABS(coef[1], -0.3, 0.02);
    CHECK(g_free[1] > 0 && g_tied[1] > 0);
    CHECK(fabs(s_free + 0.3) > 0.15); /* the case discriminates */
    CHECK_ABS(s_tied, -0.3, 0.05);
}

int main(void)
{
    st_global_init();
    test_roles();
    test_jm_gradient();
    test_lg_gradient();
    test_front();
    test_model_recovery();
    test_ratio_guard();
    test_steps_tokens();
    test_warmup_in_steps();
    test_boundary_prior();
    test_boundary_prior_moves_with_n();
    test_boundary_tie();
    test_wd_prior();
    test_interval_replicates();
    test_simulator();
    st_global_cleanup();
    return check_summary("fit.extrapolate");
}
