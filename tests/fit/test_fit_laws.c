/*
 * test_fit_laws.c — every law's analytic gradient of log y against central finite differences at
 * seeded random points, theta <-> natural round trips, the registry, and the objectives'
 * gradients (Huber, Huber likelihood with log sigma, MSE; log and linear residuals), and the
 * Chinchilla Huber kernel (fit/huber_lse.c: own exp and log, 4 rows at a time) against the same
 * sum written out here with libm, at grid starts and random points, for 61 rows (a partial block).
 */
#include "common/st.h"
#include "fit/fit.h"
#include "tests/check.h"

#include <math.h>
#include <string.h>

typedef struct law_case {
    const char *name;
    double theta[8];
    double lo[3], hi[3]; /* log10 ranges of the inputs */
} law_case;

static const law_case cases[] = {
    {"chinchilla", {6.18, 7.64, 0.597, 0.348, 0.366}, {7, 8}, {10, 11.5}},
    {"kaplan", {31.79, 30.52, 0.076, 0.103}, {7, 8}, {10, 11.5}},
    {"saturating", {5, 0.1, 0.5}, {18}, {22}},
    {"power1", {0.3, -0.12}, {17}, {21}},
    {"power2", {0.58, -0.7, 0.3}, {7, 9}, {10, 12}},
    {"muennighoff", {6.26, 7.3, 0.626, 0.353, 0.353, 2.734, 1.67}, {7, 9, 8}, {10, 11, 9}},
    {"gadre", {0.6, 5, 8, 0.1}, {18, 0.7}, {22, 2.8}},
};

static double fd(const fit_law *law, const double *th, const double *x, size_t j)
{
    double t[8], h = 1e-6 * (1 + fabs(th[j]));
    memcpy(t, th, sizeof(t));
    t[j] = th[j] + h;
    double fp = fit_law_eval(law, t, x, NULL);
    t[j] = th[j] - h;
    double fm = fit_law_eval(law, t, x, NULL);
    return (fp - fm) / (2 * h);
}

int main(void)
{
    st_rng *r;
    CHECK_ST(st_rng_create(7, &r), ST_OK);
    size_t n_laws = 0;
    while (fit_law_list(n_laws))
        n_laws++;
    CHECK(n_laws == sizeof(cases) / sizeof(cases[0]));
    CHECK(fit_law_by_name("nope") == NULL);

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const fit_law *law = fit_law_by_name(cases[c].name);
        CHECK(law != NULL);
        if (!law)
            continue;
        size_t np = fit_law_n_params(law), nin = fit_law_n_inputs(law);
        CHECK(!strcmp(fit_law_name(law), cases[c].name));
        for (int k = 0; k < 20; k++) {
            double x[3], th[8], g[8];
            for (size_t j = 0; j < nin; j++)
                x[j] =
                    pow(10, cases[c].lo[j] + (cases[c].hi[j] - cases[c].lo[j]) * st_rng_uniform(r));
            if (!strcmp(cases[c].name, "muennighoff"))
                x[1] = x[2] * (1 + 40 * st_rng_uniform(r)); /* D >= U_D: repeated data */
            for (size_t j = 0; j < np; j++)
                th[j] = cases[c].theta[j] * (1 + 0.1 * (st_rng_uniform(r) - 0.5));
            fit_law_eval(law, th, x, g);
            for (size_t j = 0; j < np; j++) {
                double want = fd(law, th, x, j);
                CHECK_ABS(g[j], want, 1e-6 * (1 + fabs(want)));
            }
            double nat[8], back[8];
            fit_law_natural(law, th, nat);
            CHECK_ST(fit_law_theta(law, nat, back), ST_OK);
            for (size_t j = 0; j < np; j++)
                CHECK_ABS(back[j], th[j], 1e-12 * (1 + fabs(th[j])));
        }
    }

    /* Objective gradients on synthetic Chinchilla data, every smooth objective. */
    double x[60 * 2], y[60], w[60];
    const double th0[5] = {6.18, 7.64, 0.597, 0.348, 0.366};
    for (size_t i = 0; i < 60; i++) {
        x[2 * i] = pow(10, 7 + 3 * st_rng_uniform(r));
        x[2 * i + 1] = pow(10, 9 + 3 * st_rng_uniform(r));
        y[i] =
            exp(fit_law_eval(fit_law_chinchilla, th0, x + 2 * i, NULL) + 0.01 * st_rng_gaussian(r));
        w[i] = 0.5 + st_rng_uniform(r);
    }
    fit_objective objs[] = {FIT_OBJ_HUBER, FIT_OBJ_HUBER_LIK, FIT_OBJ_MSE};
    for (size_t oi = 0; oi < 3; oi++)
        for (int lin = 0; lin < 2; lin++) {
            fit *f;
            CHECK_ST(fit_create(fit_law_chinchilla, &f), ST_OK);
            fit_options o = fit_options_default();
            o.objective = objs[oi];
            o.linear = lin;
            o.delta = objs[oi] == FIT_OBJ_HUBER_LIK ? 1.0 : 1e-2;
            CHECK_ST(fit_set_options(f, &o), ST_OK);
            CHECK_ST(fit_set_data(f, 60, x, y, w), ST_OK);
            double th[6] = {6.1, 7.5, 0.6, 0.34, 0.37, log(0.02)}, g[6];
            size_t np = 5 + (objs[oi] == FIT_OBJ_HUBER_LIK);
            fit_objective_eval(f, th, g);
            for (size_t j = 0; j < np; j++) {
                double t[6], h = 1e-6 * (1 + fabs(th[j]));
                memcpy(t, th, sizeof(t));
                t[j] += h;
                double fp = fit_objective_eval(f, t, NULL);
                t[j] -= 2 * h;
                double fm = fit_objective_eval(f, t, NULL);
                double want = (fp - fm) / (2 * h);
                CHECK_ABS(g[j], want, 1e-5 * (1 + fabs(want)));
            }
            fit_destroy(f);
        }

    /* The fused Chinchilla Huber kernel against the sum written out with libm. */
    double xk[61 * 2], yk[61], wk[61];
    for (size_t i = 0; i < 61; i++) {
        xk[2 * i] = pow(10, 7 + 3 * st_rng_uniform(r));
        xk[2 * i + 1] = pow(10, 9 + 3 * st_rng_uniform(r));
        yk[i] = 1.8 + 3 * st_rng_uniform(r);
        wk[i] = i % 7 == 3 ? 0 : 0.5 + st_rng_uniform(r);
    }
    for (int mean = 0; mean < 2; mean++) {
        fit *f;
        CHECK_ST(fit_create(fit_law_chinchilla, &f), ST_OK);
        fit_options o = fit_options_default();
        o.mean = mean;
        CHECK_ST(fit_set_options(f, &o), ST_OK);
        CHECK_ST(fit_set_data(f, 61, xk, yk, wk), ST_OK);
        for (int k = 0; k < 200; k++) {
            double th[5] = {25 * st_rng_uniform(r), 25 * st_rng_uniform(r),
                            2 * st_rng_uniform(r) - 1, 2 * st_rng_uniform(r),
                            2 * st_rng_uniform(r)};
            if (k % 2) /* near the optimum, where the Huber loss is quadratic for most rows */
                for (size_t j = 0; j < 5; j++)
                    th[j] = th0[j] + 0.01 * (st_rng_uniform(r) - 0.5);
            if (k % 10 == 4) /* a - alpha ln N - e > 700: the kernel's per-row shift */
                th[3] = -40 - st_rng_uniform(r);
            double want = 0, wg[5] = {0}, ws = 0, g[5];
            for (size_t i = 0; i < 61; i++) {
                double t[3] = {th[0] - th[3] * log(xk[2 * i]), th[1] - th[4] * log(xk[2 * i + 1]),
                               th[2]};
                double m = fmax(fmax(t[0], t[1]), t[2]), s = 0, q[3];
                for (int j = 0; j < 3; j++)
                    s += exp(t[j] - m);
                for (int j = 0; j < 3; j++)
                    q[j] = exp(t[j] - m) / s;
                double res = m + log(s) - log(yk[i]), c = fmin(fmax(res, -1e-3), 1e-3);
                want += wk[i] * c * (res - c / 2);
                ws += wk[i];
                double gi[5] = {q[0], q[1], q[2], -q[0] * log(xk[2 * i]),
                                -q[1] * log(xk[2 * i + 1])};
                for (int j = 0; j < 5; j++)
                    wg[j] += wk[i] * c * gi[j];
            }
            double sc = mean ? ws : 1, gmax = 0;
            for (int j = 0; j < 5; j++)
                gmax = fmax(gmax, fabs(wg[j] / sc));
            CHECK_REL(fit_objective_eval(f, th, g), want / sc, 1e-13);
            for (int j = 0; j < 5; j++)
                CHECK_ABS(g[j], wg[j] / sc, 1e-11 * gmax);
        }
        fit_destroy(f);
    }
    fit_destroy(NULL);
    st_rng_destroy(r);
    return check_summary("fit.laws");
}
