/*
 * test_fit_synthetic.c — data drawn from known parameters with seeded noise: Chinchilla
 * parameters recovered within their bootstrap intervals; a log-space power law against a direct
 * OLS solve (GSL); hold-out errors; the profile likelihood's Wilks interval brackets the MLE;
 * Approach 2 recovers a = beta/(alpha+beta); hyperparameter laws recover planted exponents;
 * the DeepSeek and StepLaw presets.
 */
#include "common/st.h"
#include "fit/fit.h"
#include "tests/check.h"

#include <gsl/gsl_fit.h>
#include <math.h>
#include <stdlib.h>

int main(void)
{
    st_rng *r;
    CHECK_ST(st_rng_create(2024, &r), ST_OK);
    int quick = getenv("ST_TEST_QUICK") != NULL;

    /* Chinchilla: 8 × 8 grid of (N, D), lognormal noise 1%. */
    const double nat[5] = {480, 2000, 1.8, 0.35, 0.37};
    double x[64 * 2], y[64], th[5];
    fit_law_theta(fit_law_chinchilla, nat, th);
    for (int i = 0; i < 64; i++) {
        x[2 * i] = pow(10, 7 + 3.0 * (i / 8) / 7);
        x[2 * i + 1] = pow(10, 9 + 3.0 * (i % 8) / 7);
        y[i] =
            exp(fit_law_eval(fit_law_chinchilla, th, x + 2 * i, NULL) + 0.01 * st_rng_gaussian(r));
    }
    fit *f;
    CHECK_ST(fit_create(fit_law_chinchilla, &f), ST_OK);
    fit_options o = fit_options_default();
    o.n_threads = 2;
    o.objective = FIT_OBJ_MSE; /* Gaussian noise: least squares on log loss */
    CHECK_ST(fit_set_options(f, &o), ST_OK);
    CHECK_ST(fit_set_data(f, 64, x, y, NULL), ST_OK);
    CHECK_ST(fit_run(f), ST_OK);
    fit_boot_options bo = fit_boot_options_default();
    bo.n_rep = quick ? 50 : 400;
    fit_boot *b;
    CHECK_ST(fit_bootstrap(f, &bo, &b), ST_OK);
    for (int i = 0; b && i < 5; i++) {
        double lo, hi;
        fit_boot_interval(b, (size_t)i, 0.99, &lo, &hi);
        CHECK(lo <= nat[i] && nat[i] <= hi);
        if (!(lo <= nat[i] && nat[i] <= hi))
            fprintf(stderr, "  param %d: %g not in (%g, %g)\n", i, nat[i], lo, hi);
    }
    fit_boot_destroy(b);

    /* Hold-out: fit on C <= median, predict above; errors near the noise level. */
    double cut[64], rel[64];
    size_t nh;
    for (int i = 0; i < 64; i++)
        cut[i] = 6 * x[2 * i] * x[2 * i + 1];
    CHECK_ST(fit_holdout(f, 64, x, y, NULL, cut, 1e19, rel, &nh), ST_OK);
    CHECK(nh > 0 && nh < 64);
    for (int i = 0; i < 64; i++)
        if (cut[i] > 1e19)
            CHECK(fabs(rel[i]) < 0.05);
        else
            CHECK(isnan(rel[i]));
    fit_destroy(f);

    /* Power law in log space with MSE is ordinary least squares: compare with GSL. */
    double px[40], py[40], lx[40], lyv[40];
    for (int i = 0; i < 40; i++) {
        px[i] = pow(10, 17 + 4.0 * i / 39);
        py[i] = 0.3118 * pow(px[i], -0.125) * exp(0.05 * st_rng_gaussian(r));
        lx[i] = log(px[i]);
        lyv[i] = log(py[i]);
    }
    CHECK_ST(fit_create(fit_law_power1, &f), ST_OK);
    CHECK_ST(fit_set_options(f, &o), ST_OK);
    CHECK_ST(fit_set_data(f, 40, px, py, NULL), ST_OK);
    CHECK_ST(fit_run(f), ST_OK);
    double c0, c1, v00, v01, v11, ss;
    gsl_fit_linear(lx, 1, lyv, 1, 40, &c0, &c1, &v00, &v01, &v11, &ss);
    CHECK_REL(fit_theta(f)[0], c0, 1e-6);
    CHECK_REL(fit_theta(f)[1], c1, 1e-6);
    fit_destroy(f);

    /* Profile likelihood of alpha (Huber likelihood): the Wilks interval brackets the MLE. */
    CHECK_ST(fit_create(fit_law_saturating, &f), ST_OK);
    double sx[50], sy[50];
    const double sth[3] = {log(50.0), 0.12, log(1.7)};
    for (int i = 0; i < 50; i++) {
        sx[i] = pow(10, 17 + 5.0 * i / 49);
        sy[i] =
            exp(fit_law_eval(fit_law_saturating, sth, sx + i, NULL) + 0.005 * st_rng_gaussian(r));
    }
    fit_options ol = fit_options_default();
    ol.objective = FIT_OBJ_HUBER_LIK;
    ol.delta = 1.0;
    ol.n_threads = 2;
    CHECK_ST(fit_set_options(f, &ol), ST_OK);
    CHECK_ST(fit_set_data(f, 50, sx, sy, NULL), ST_OK);
    CHECK_ST(fit_run(f), ST_OK);
    double ah = fit_theta(f)[1], vals[41], obj[41], lo, hi;
    for (int k = 0; k < 41; k++)
        vals[k] = ah - 0.03 + 0.0015 * k;
    CHECK_ST(fit_profile(f, 1, 41, vals, obj, &lo, &hi), ST_OK);
    CHECK(lo < ah && ah < hi);
    CHECK(lo < 0.12 && 0.12 < hi);
    CHECK_ABS(obj[20], fit_objective_value(f), 1e-6);
    fit_destroy(f);

    /* Approach 2 on exact IsoFLOP profiles: a = beta/(alpha+beta). */
    double aN[9 * 7], aC[9 * 7], aL[9 * 7];
    const double budgets[9] = {6e18, 1e19, 3e19, 6e19, 1e20, 3e20, 6e20, 1e21, 3e21};
    fit_alloc al;
    int m = 0;
    for (int k = 0; k < 9; k++) {
        fit_allocate(nat, budgets[k], &al);
        for (int j = -3; j <= 3; j++) {
            aN[m] = al.N_opt * pow(2.0, 0.5 * j);
            aC[m] = budgets[k];
            aL[m] = fit_loss_at(nat, aN[m], budgets[k] / (6 * aN[m]));
            m++;
        }
    }
    fit_approach ap;
    char err[ST_ERRMSG_MAX];
    CHECK_ST(fit_approach2((size_t)m, aN, aC, aL, &ap, err), ST_OK);
    CHECK_ABS(ap.a, al.a, 0.01);
    CHECK_ABS(ap.a + ap.b, 1, 1e-9);
    CHECK(ap.n_opt == 9 && !(ap.warnings & FIT_WARN_EDGE));

    /* Hyperparameter laws: planted lr = 2 N^-0.7 D^0.3, batch = 0.6 D^0.57. */
    double hN[6 * 4 * 25], hD[6 * 4 * 25], hlr[6 * 4 * 25], hb[6 * 4 * 25], hl[6 * 4 * 25];
    int h = 0;
    for (int a = 0; a < 6; a++)
        for (int d = 0; d < 4; d++) {
            double N = pow(10, 7 + 0.4 * a), D = pow(10, 9 + 0.5 * d);
            double lr0 = 2 * pow(N, -0.7) * pow(D, 0.3), b0 = 0.6 * pow(D, 0.57);
            for (int i = -2; i <= 2; i++)
                for (int j = -2; j <= 2; j++) {
                    hN[h] = N, hD[h] = D;
                    hlr[h] = lr0 * pow(2.0, i);
                    hb[h] = b0 * pow(2.0, j);
                    double u = log(hlr[h] / lr0), v = log(hb[h] / b0);
                    hl[h] = 3 + 0.02 * (u * u + v * v + 0.3 * u * v);
                    h++;
                }
        }
    fit_hp_result hr;
    CHECK_ST(fit_hp_laws((size_t)h, hN, hD, hlr, hb, hl, FIT_HP_QUADRATIC, 0, FIT_HP_ND, 200, 1,
                         &hr, err),
             ST_OK);
    CHECK_ABS(hr.lr_coef[1], -0.7, 1e-6);
    CHECK_ABS(hr.lr_coef[2], 0.3, 1e-6);
    CHECK_ABS(hr.batch_coef[1], 0.57, 1e-6);
    CHECK_ABS(exp(hr.lr_coef[0]), 2, 1e-5);
    CHECK(hr.n_groups == 24);
    CHECK_ST(
        fit_hp_laws((size_t)h, hN, hD, hlr, hb, hl, FIT_HP_BAND, 1e-9, FIT_HP_ND, 0, 1, &hr, err),
        ST_OK);
    CHECK_ABS(hr.lr_coef[1], -0.7, 1e-6);
    double lr, bt;
    CHECK_ST(fit_hp_preset("deepseek", 0, 0, 1e20, &lr, &bt), ST_OK);
    CHECK_REL(lr, 0.3118 * pow(1e20, -0.125), 1e-12);
    CHECK_ST(fit_hp_preset("steplaw", 1e9, 1e11, 0, &lr, &bt), ST_OK);
    CHECK_REL(bt, 0.58 * pow(1e11, 0.571), 1e-12);
    CHECK_ST(fit_hp_preset("nope", 1, 1, 1, &lr, &bt), ST_ENOTFOUND);
    st_rng_destroy(r);
    return check_summary("fit.synthetic");
}
