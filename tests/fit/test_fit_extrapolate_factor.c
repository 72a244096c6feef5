/*
 * test_fit_extrapolate_factor.c — the MODEL with a categorical parameter as a discrete factor
 * (docs/algorithms/extrapolation.md, "Categorical parameters"), against known truth:
 *  - the joint objective's gradient with level slots and an inactive conditional hyper, against
 *    central differences;
 *  - a synthetic world the model can represent (Chinchilla x lr penalty x a penalty in beta2,
 *    which is active only with optimizer a), with optimizer b's ln loss +0.05 over a: the
 *    fitted offset recovers +0.05 inside its interval and the recommendation is a; the same
 *    world with b at -0.05 and its lr optimum and stability boundary at 0.3x: the shift
 *    recovers ln 0.3 and the recommendation is b at about 0.3x a's lr, beta2 inactive;
 *  - beta2's penalty touches only the runs where it is active: its optimum 0.92 (away from the
 *    runs' mean) is recovered, and b's offset would be off by ~0.02 were b's runs penalised at
 *    the imputed mean;
 *  - a level with 2 successful runs is not recommended (a warning) unless min_level_ok allows.
 */
#include "common/st.h"
#include "fit/extrapolate.h"
#include "fit/extrapolate_int.h" /* the joint objective (private): its gradient */
#include "tests/check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- gradient ------------------------------------------------------------------------------ */

static double unif(st_rng *rng, double lo, double hi)
{
    return lo + (hi - lo) * st_rng_uniform(rng);
}

/* The largest error of f's gradient at x against central differences (as in
 * test_fit_extrapolate.c). */
static double grad_error(xp_jm_data *d, const double *x, unsigned n)
{
    double g[XP_NTH], xh[XP_NTH], worst = 0;
    double f0 = xp_jm_objective(n, x, g, d);
    for (unsigned j = 0; j < n; j++) {
        double h = 1e-5 * fmax(1, fabs(x[j]));
        memcpy(xh, x, n * sizeof(double));
        xh[j] = x[j] + h;
        double fp = xp_jm_objective(n, xh, NULL, d);
        xh[j] = x[j] - h;
        double fm = xp_jm_objective(n, xh, NULL, d);
        double fd = (fp - fm) / (2 * h);
        worst = fmax(worst, fabs(g[j] - fd) / (fabs(fd) + 1e-6 * (1 + fabs(f0))));
    }
    return worst;
}

/* 30 runs, 3 hypers (the learning rate second, so the third couples to it), one factor of 3
 * levels (slots 0, 1; reference -1), hyper 2 inactive in a third of the runs. */
static void test_factor_gradient(void)
{
    enum { n = 30, n_hp = 3, n_lv = 2 };
    double lN[n], lD[n], ly[n], bh[n * n_hp];
    size_t rows[n], fq[n];
    st_rng *rng = NULL;
    st_rng_create(43, &rng);
    for (size_t i = 0; i < n; i++) {
        lN[i] = unif(rng, log(1e6), log(1e8));
        lD[i] = unif(rng, log(1e8), log(1e10));
        ly[i] = unif(rng, 0.9, 1.6);
        for (size_t k = 0; k < n_hp; k++)
            bh[i * n_hp + k] = unif(rng, -2, 2);
        if (i % 3 == 0)
            bh[i * n_hp + 2] = NAN;
        fq[i] = i % 3 == 1 ? (size_t)-1 : i % 3 == 0 ? 0 : 1;
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
    d.n_th = XP_LV_OFF(n_hp, n_lv);
    d.n_fac = 1;
    d.fq = fq;
    d.k_lr = 1;
    for (size_t j = XP_TH_CHIN; j < d.n_th; j++) {
        d.pw[j] = unif(rng, 0.01, 0.5);
        d.pmu[j] = unif(rng, -1, 1);
    }
    double worst = 0;
    for (int pt = 0; pt < 8; pt++) {
        double th[XP_NTH];
        th[XP_TH_A] = unif(rng, 4, 8);
        th[XP_TH_B] = unif(rng, 5, 9);
        th[XP_TH_E] = unif(rng, 0.2, 1.2);
        th[XP_TH_ALPHA] = unif(rng, 0.2, 0.6);
        th[XP_TH_BETA] = unif(rng, 0.2, 0.6);
        for (size_t k = 0; k < n_hp; k++) {
            double *h = &th[XP_HP_OFF(k)];
            h[XP_HP_ICPT] = unif(rng, -0.5, 0.5);
            h[XP_HP_SLOPE_N] = unif(rng, -0.9, 0.9);
            h[XP_HP_SLOPE_D] = unif(rng, -0.9, 0.9);
            h[XP_HP_LN_CURV] = log(unif(rng, 0.01, 2));
            h[XP_HP_LN_SAT] = log(unif(rng, 0.03, 1));
            for (size_t j = 0; j < k; j++)
                h[XP_HP_COUPLING + j] = unif(rng, -0.8, 0.8);
        }
        for (size_t q = 0; q < n_lv; q++) {
            th[XP_LV_OFF(n_hp, q) + XP_LV_DELTA] = unif(rng, -0.2, 0.2);
            th[XP_LV_OFF(n_hp, q) + XP_LV_LRSHIFT] = unif(rng, -1.5, 1.5);
        }
        memcpy(d.full, th, d.n_th * sizeof(double));
        d.n_free = d.n_th;
        for (size_t j = 0; j < d.n_th; j++)
            d.free_idx[j] = j;
        worst = fmax(worst, grad_error(&d, th, (unsigned)d.n_free));
        /* ln L of a reference-level run with hyper 2 inactive: as if hyper 2 were not there */
        /* run 3 (level slot 0, hyper 2 inactive): as if hyper 2 were not there, the learning
         * rate's optimum moved by the level's shift, plus its offset */
        double tl[XP_NTH];
        memcpy(tl, th, sizeof(tl));
        tl[XP_HP_OFF(1) + XP_HP_ICPT] += th[XP_LV_OFF(n_hp, 0) + XP_LV_LRSHIFT];
        CHECK(fq[3] == 0 && isnan(bh[3 * n_hp + 2]));
        double want = xp_jm_eval(tl, 2, lN[3], lD[3], d.lN0, d.lD0, &bh[3 * n_hp], NULL);
        CHECK_ABS(xp_jm_row_eval(&d, th, 3, NULL), want + th[XP_LV_OFF(n_hp, 0)], 1e-14);
        /* run 5 (slot 1, hyper 2 active): hyper 2's optimum couples to the raw learning rate */
        memcpy(tl, th, sizeof(tl));
        tl[XP_HP_OFF(1) + XP_HP_ICPT] += th[XP_LV_OFF(n_hp, 1) + XP_LV_LRSHIFT];
        CHECK(fq[5] == 1);
        want = xp_jm_eval(tl, 3, lN[5], lD[5], d.lN0, d.lD0, &bh[5 * n_hp], NULL);
        CHECK_ABS(xp_jm_row_eval(&d, th, 5, NULL), want + th[XP_LV_OFF(n_hp, 1)], 1e-14);
    }
    st_rng_destroy(rng);
    printf("joint objective with levels and an inactive hyper: gradient worst relative error "
           "%.2g\n",
           worst);
    CHECK(worst < 1e-5);
}

/* ---- the synthetic world ------------------------------------------------------------------ */

/* Truth: L = (1.8 + 400 N^-0.34 + 2000 D^-0.28) (1 + P_lr + P_b2) exp(delta_level + noise),
 * P_lr = 0.5 (1 - exp(-0.02 u^2 / 0.5)), u = ln lr - ln lr_opt(N, D) - shift_level,
 * lr_opt = 0.02 (N/1e7)^-0.5 (D/1e9)^0.3; P_b2 = 0.5 (1 - exp(-20 v^2 / 0.5)), v = beta2 - 0.92,
 * for optimizer a only (beta2 is NAN for the others); a run diverges when ln lr > ln 0.2 -
 * 0.4 ln(N/1e7) + shift_level. */
typedef struct world {
    double delta[3], shift[3]; /* per level (a, b, c) */
    size_t n_c;                /* runs of level c (the rest alternate a, b) */
    double noise;              /* sd of the ln loss noise */
} world;

enum { W_N = 0, W_D, W_LR, W_OPT, W_B2, W_P };
#define LR_OPT(N, D) (log(0.02) - 0.5 * log((N) / 1e7) + 0.3 * log((D) / 1e9))

static double world_loss(const world *w, double N, double D, double lr, size_t lv, double b2)
{
    double u = log(lr) - LR_OPT(N, D) - w->shift[lv];
    double P = 0.5 * (1 - exp(-0.02 * u * u / 0.5));
    if (lv == 0)
        P += 0.5 * (1 - exp(-20 * (b2 - 0.92) * (b2 - 0.92) / 0.5));
    return (1.8 + 400 * pow(N, -0.34) + 2000 * pow(D, -0.28)) * (1 + P) * exp(w->delta[lv]);
}

static const char *const LEVELS[3] = {"a", "b", "c"};

static void world_params(fit_xp_param *p, size_t n_levels)
{
    fit_xp_param_init(&p[W_N], "N", FIT_XP_LOG);
    fit_xp_param_init(&p[W_D], "D", FIT_XP_LOG);
    fit_xp_param_init(&p[W_LR], "lr", FIT_XP_LOG);
    fit_xp_param_init(&p[W_OPT], "optimizer", FIT_XP_LINEAR);
    p[W_OPT].n_levels = n_levels;
    p[W_OPT].level_names = LEVELS;
    fit_xp_param_init(&p[W_B2], "beta2", FIT_XP_LINEAR);
    p[W_B2].parent = W_OPT;
    p[W_B2].active_mask = 1u; /* active with optimizer a */
}

/* n runs of world w into a new extrapolator (options o); *Cmax the largest successful cost. */
static fit_xp *world_sweep(const world *w, size_t n, uint64_t seed, const fit_xp_options *o,
                           double *Cmax)
{
    fit_xp_param p[W_P];
    world_params(p, w->n_c ? 3 : 2);
    double *x = malloc(n * W_P * sizeof(double)), *cost = malloc(n * sizeof(double));
    double *obj = malloc(n * sizeof(double));
    int *failed = malloc(n * sizeof(int));
    st_rng *rng = NULL;
    st_rng_create(seed, &rng);
    *Cmax = 0;
    for (size_t i = 0; i < n; i++) {
        double *xi = &x[i * W_P];
        size_t lv = i < w->n_c ? 2 : i % 2;
        xi[W_N] = exp(unif(rng, log(1e6), log(1e8)));
        xi[W_D] = exp(unif(rng, log(1e8), log(1e10)));
        xi[W_LR] = exp(LR_OPT(xi[W_N], xi[W_D]) + w->shift[lv] + unif(rng, -3, 3));
        xi[W_OPT] = (double)lv;
        xi[W_B2] = lv == 0 ? unif(rng, 0.9, 0.999) : NAN;
        failed[i] = log(xi[W_LR]) > log(0.2) - 0.4 * log(xi[W_N] / 1e7) + w->shift[lv];
        double z = st_rng_gaussian(rng);
        cost[i] = failed[i] ? NAN : 6 * xi[W_N] * xi[W_D];
        obj[i] = failed[i]
                     ? NAN
                     : world_loss(w, xi[W_N], xi[W_D], xi[W_LR], lv, xi[W_B2]) * exp(w->noise * z);
        if (!failed[i])
            *Cmax = fmax(*Cmax, cost[i]);
    }
    st_rng_destroy(rng);
    fit_xp *xp = NULL;
    fit_xp_create(&xp);
    fit_xp_set_options(xp, o);
    CHECK_ST(fit_xp_set_runs(xp, W_P, p, n, x, cost, obj, failed, NULL, NULL), ST_OK);
    free(x);
    free(cost);
    free(obj);
    free(failed);
    return xp;
}

static fit_xp_options quick_options(void)
{
    fit_xp_options o = fit_xp_options_default();
    o.n_boot = getenv("ST_TEST_QUICK") ? 20 : 50;
    return o;
}

/* b's ln loss +0.05 over a, the same lr optimum: the offset recovered inside its interval, the
 * recommendation a with beta2 near its optimum 0.92. */
static void test_offset_recovered(void)
{
    world w = {{0, 0.05, 0}, {0, 0, 0}, 0, 0.005};
    fit_xp_options o = quick_options();
    double Cmax;
    fit_xp *xp = world_sweep(&w, 160, 11, &o, &Cmax);
    CHECK_ST(fit_xp_run(xp, 100 * Cmax), ST_OK);
    fit_xp_result r;
    fit_xp_get_result(xp, &r);
    CHECK(r.method == FIT_XP_METHOD_MODEL);
    double off[3], sh[3];
    size_t ref = 9, n_ok = 0;
    CHECK_ST(fit_xp_level_effect(xp, W_OPT, 1, off, sh, &ref, &n_ok), ST_OK);
    if (ref == 1) /* b is the reference: a's effect, negated below */
        CHECK_ST(fit_xp_level_effect(xp, W_OPT, 0, off, sh, &ref, NULL), ST_OK);
    double sgn = ref == 0 ? 1 : -1; /* b's effect relative to a */
    printf("b relative to a: offset %+.4f [%+.4f, %+.4f] (truth +0.05), lr shift %+.3f "
           "[%+.3f, %+.3f] (truth 0); reference level %s, %zu runs of b succeeded\n",
           sgn * off[0], sgn * off[sgn > 0 ? 1 : 2], sgn * off[sgn > 0 ? 2 : 1], sgn * sh[0],
           sgn * sh[sgn > 0 ? 1 : 2], sgn * sh[sgn > 0 ? 2 : 1], fit_xp_level_name(xp, W_OPT, ref),
           n_ok);
    /* the reference is the level with more successes: the effect is b's minus a's */
    CHECK_ABS(sgn * off[0], 0.05, 0.01);
    CHECK(off[1] <= sgn * 0.05 && sgn * 0.05 <= off[2]); /* the truth inside its interval */
    CHECK_ABS(sh[0], 0, 0.15);
    CHECK(r.value[W_OPT] == 0); /* a */
    CHECK_ABS(r.value[W_B2], 0.92, 0.02);
    CHECK(r.p_diverge <= 0.05);
    CHECK(!strcmp(fit_xp_level_name(xp, W_OPT, 0), "a"));
    CHECK(fit_xp_level_name(xp, W_LR, 0) == NULL);
    CHECK_ST(fit_xp_level_effect(xp, W_LR, 0, off, sh, NULL, NULL), ST_ENOTFOUND);
    CHECK_ST(fit_xp_level_effect(xp, W_OPT, 2, off, sh, NULL, NULL), ST_EINVAL);
    /* beta2's penalty law: its optimum at the centre of the sweep near 0.92 */
    double coef[3], curv;
    CHECK_ST(fit_xp_hp_law(xp, W_B2, coef, &curv, NULL), ST_OK);
    double b2 = coef[0] + coef[1] * log(1e7) + coef[2] * log(1e9);
    printf("beta2 optimum %.4f (truth 0.92), curvature %.3g (truth 20)\n", b2, curv);
    CHECK_ABS(b2, 0.92, 0.01);
    CHECK_REL(curv, 20, 0.3);
    /* a prediction for b ignores beta2 (inactive there) */
    double xb[W_P] = {1e7, 1e9, 0.02, 1, 0.999}, xn[W_P] = {1e7, 1e9, 0.02, 1, NAN};
    double pb, pn;
    CHECK_ST(fit_xp_predict(xp, xb, NAN, NAN, &pb, NULL, NULL, NULL), ST_OK);
    CHECK_ST(fit_xp_predict(xp, xn, NAN, NAN, &pn, NULL, NULL, NULL), ST_OK);
    CHECK(pb == pn);
    fit_xp_destroy(xp);
}

/* b at -0.05 with its lr optimum and boundary at 0.3x: the shift recovers ln 0.3, the
 * recommendation is b at about 0.3x a's optimum, beta2 inactive (NAN). */
static void test_shift_recovered(void)
{
    world w = {{0, -0.05, 0}, {0, log(0.3), 0}, 0, 0.005};
    fit_xp_options o = quick_options();
    double Cmax;
    fit_xp *xp = world_sweep(&w, 160, 12, &o, &Cmax);
    CHECK_ST(fit_xp_run(xp, 100 * Cmax), ST_OK);
    fit_xp_result r;
    fit_xp_get_result(xp, &r);
    double off[3], sh[3];
    size_t ref = 9;
    CHECK_ST(fit_xp_level_effect(xp, W_OPT, 1, off, sh, &ref, NULL), ST_OK);
    if (ref == 1) /* b is the reference: a's effect, negated below */
        CHECK_ST(fit_xp_level_effect(xp, W_OPT, 0, off, sh, &ref, NULL), ST_OK);
    double sgn = ref == 0 ? 1 : -1; /* b's effect relative to a */
    printf("b relative to a: offset %+.4f [%+.4f, %+.4f] (truth -0.05), lr shift %+.3f "
           "[%+.3f, %+.3f] (truth %+.3f)\n",
           sgn * off[0], sgn * off[sgn > 0 ? 1 : 2], sgn * off[sgn > 0 ? 2 : 1], sgn * sh[0],
           sgn * sh[sgn > 0 ? 1 : 2], sgn * sh[sgn > 0 ? 2 : 1], log(0.3));
    CHECK_ABS(sgn * off[0], -0.05, 0.01);
    CHECK_ABS(sgn * sh[0], log(0.3), 0.1);
    CHECK(off[1] <= off[0] && off[0] <= off[2]);
    CHECK(r.value[W_OPT] == 1); /* b */
    CHECK(isnan(r.value[W_B2]) && isnan(r.lo[W_B2]));
    double lr_a = exp(LR_OPT(r.N, r.D)), ratio = r.value[W_LR] / lr_a;
    printf("recommended b at lr %.4g = %.3fx a's optimum (truth 0.3x), P(diverge) %.3f\n",
           r.value[W_LR], ratio, r.p_diverge);
    CHECK(ratio > 0.3 / 2 && ratio < 0.3 * 1.5);
    CHECK(r.p_diverge <= 0.05);
    double true_b = world_loss(&w, r.N, r.D, r.value[W_LR], 1, NAN);
    double best_b = world_loss(&w, r.N, r.D, 0.3 * lr_a, 1, NAN);
    CHECK(true_b / best_b - 1 < 0.01);
    fit_xp_destroy(xp);
}

/* Level c, the best by far (-0.1), with 2 runs (1 succeeded): not recommended (a warning naming
 * it) by default; recommended when min_level_ok is 1. */
static void test_few_level_runs(void)
{
    world w = {{0, 0.05, -0.1}, {0, 0, 0}, 2, 0.005};
    fit_xp_options o = quick_options();
    o.n_boot = 10;
    double Cmax;
    fit_xp *xp = world_sweep(&w, 120, 13, &o, &Cmax);
    CHECK_ST(fit_xp_run(xp, 100 * Cmax), ST_OK);
    fit_xp_result r;
    fit_xp_get_result(xp, &r);
    CHECK(r.warnings & FIT_XP_WARN_FEW_LEVEL);
    size_t n_c = 9;
    CHECK_ST(fit_xp_level_effect(xp, W_OPT, 2, NULL, NULL, NULL, &n_c), ST_OK);
    char want[64];
    snprintf(want, sizeof(want), "optimizer = c (%zu)", n_c);
    CHECK(n_c >= 1 && n_c < 3); /* 2 runs of c, one at a diverging lr */
    CHECK(strstr(r.warning_text, want) != NULL);
    CHECK(r.value[W_OPT] == 0);
    fit_xp_destroy(xp);
    o.min_level_ok = 1;
    xp = world_sweep(&w, 120, 13, &o, &Cmax);
    CHECK_ST(fit_xp_run(xp, 100 * Cmax), ST_OK);
    fit_xp_get_result(xp, &r);
    CHECK(!(r.warnings & FIT_XP_WARN_FEW_LEVEL));
    CHECK(r.value[W_OPT] == 2);
    CHECK(isnan(r.value[W_B2]));
    fit_xp_destroy(xp);
}

/* Bad descriptions and values are refused with the parameter's name. */
static void test_refusals(void)
{
    fit_xp_param p[W_P];
    world_params(p, 2);
    double x[W_P] = {1e7, 1e9, 0.01, 2, NAN}, cost = 1, obj = 1;
    fit_xp *xp = NULL;
    fit_xp_create(&xp);
    CHECK_ST(fit_xp_set_runs(xp, W_P, p, 1, x, &cost, &obj, NULL, NULL, NULL), ST_EINVAL);
    CHECK(strstr(fit_xp_errmsg(xp), "optimizer") != NULL);
    x[W_OPT] = 0; /* active beta2 must be finite */
    CHECK_ST(fit_xp_set_runs(xp, W_P, p, 1, x, &cost, &obj, NULL, NULL, NULL), ST_EINVAL);
    CHECK(strstr(fit_xp_errmsg(xp), "beta2") != NULL);
    p[W_B2].parent = W_LR; /* a parent must be categorical */
    CHECK_ST(fit_xp_set_runs(xp, W_P, p, 1, x, &cost, &obj, NULL, NULL, NULL), ST_EINVAL);
    world_params(p, 1);
    CHECK_ST(fit_xp_set_runs(xp, W_P, p, 1, x, &cost, &obj, NULL, NULL, NULL), ST_EINVAL);
    fit_xp_destroy(xp);
}

int main(void)
{
    test_factor_gradient();
    test_refusals();
    test_offset_recovered();
    test_shift_recovered();
    test_few_level_runs();
    return check_summary("fit.extrapolate_factor");
}
