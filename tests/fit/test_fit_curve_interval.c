/*
 * test_fit_curve_interval.c — intervals of a curve's extrapolation (fit/curve.h): the block
 * bootstrap's coverage on synthetic power-law curves with seeded noise, counted against the known
 * truth at the run's end (near its level, no misfit); a curve with a late second drop the
 * first 30% cannot show: the bootstrap alone misses it (as it must), the default misfit and the
 * errors measured on finished sibling runs (fit_curve_cut_error, fit_curve_misfit) cover it and
 * move the interval down; the cut error of an exact law is 0; the widened range of errors by
 * hand; argument errors.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/st.h"
#include "fit/curve.h"
#include "tests/check.h"

#define NS 1000
#define NP 30 /* points at steps 10, 20, ..., 300: the first 30% of the run */

/* L0 + A s^-alpha, minus a late drop of `drop` centred at step 600 (a second learning phase) */
static double truth(double s, double a_scale, double drop)
{
    return 2.0 + 3.0 * a_scale * pow(s, -0.5) - drop / (1.0 + exp(-(s - 600.0) / 40.0));
}

static fit_curve_options power_opts(void)
{
    fit_curve_options o = fit_curve_options_default();
    o.fix_C = 1; /* lr = 1 and C = 0: the plain power law in steps */
    o.C = 0;
    return o;
}

static void coverage(void)
{
    double lr[NS], y[NP];
    size_t steps[NP];
    for (int i = 0; i < NS; i++)
        lr[i] = 1.0;
    for (int k = 0; k < NP; k++)
        steps[k] = (size_t)(10 * (k + 1));
    fit_curve_options o = power_opts();
    fit_curve_interval_options io = fit_curve_interval_options_default();
    io.n_boot = 100;
    io.err_min = io.err_max = 0;
    st_rng *rng;
    CHECK_ST(st_rng_create(7, &rng), ST_OK);
    int n_rep = 100, inside = 0, narrower = 1;
    double want = truth(NS, 1, 0);
    for (int rep = 0; rep < n_rep; rep++) {
        for (int k = 0; k < NP; k++)
            y[k] = truth((double)steps[k], 1, 0) * (1 + 0.004 * st_rng_gaussian(rng));
        double p, lo, hi, p50, lo50, hi50;
        io.seed = (uint64_t)rep + 1;
        io.level = 0.9;
        CHECK_ST(fit_curve_predict_interval(lr, NS, steps, y, NP, &o, &io, NS, &p, &lo, &hi, NULL),
                 ST_OK);
        inside += lo <= want && want <= hi;
        if (rep < 10) {
            io.level = 0.5;
            CHECK_ST(fit_curve_predict_interval(lr, NS, steps, y, NP, &o, &io, NS, &p50, &lo50,
                                                &hi50, NULL),
                     ST_OK);
            narrower &= hi50 - lo50 <= hi - lo && p50 == p;
        }
    }
    st_rng_destroy(rng);
    printf("coverage of the 90%% bootstrap interval: %d of %d\n", inside, n_rep);
    CHECK(inside >= 75 && inside <= 99);
    CHECK(narrower);
}

static void late_drop(void)
{
    double lr[NS], y[NP];
    size_t steps[NP];
    for (int i = 0; i < NS; i++)
        lr[i] = 1.0;
    for (int k = 0; k < NP; k++) {
        steps[k] = (size_t)(10 * (k + 1));
        y[k] = truth((double)steps[k], 1, 0.25);
    }
    double want = truth(NS, 1, 0.25), p, lo, hi;
    fit_curve_options o = power_opts();
    fit_curve_interval_options io = fit_curve_interval_options_default();
    io.n_boot = 50;
    /* the bootstrap alone sees a clean power law: it claims a narrow interval above the truth */
    io.err_min = io.err_max = 0;
    CHECK_ST(fit_curve_predict_interval(lr, NS, steps, y, NP, &o, &io, NS, &p, &lo, &hi, NULL),
             ST_OK);
    CHECK(lo > want);
    CHECK_REL(p, truth(NS, 1, 0), 1e-3);
    /* the default misfit: wide, and it covers */
    io.err_min = io.err_max = NAN;
    CHECK_ST(fit_curve_predict_interval(lr, NS, steps, y, NP, &o, &io, NS, &p, &lo, &hi, NULL),
             ST_OK);
    CHECK(hi - lo >= 2 * FIT_CURVE_MISFIT_DEFAULT * p);
    CHECK(lo <= want && want <= hi);

    /* finished sibling runs with the same late phase: their miss at the 30% cut is the misfit */
    double err[4], yy[100];
    size_t ss[100];
    for (int j = 0; j < 4; j++) {
        for (int k = 0; k < 100; k++) {
            ss[k] = (size_t)(10 * (k + 1));
            yy[k] = truth((double)ss[k], 0.8 + 0.1 * j, 0.25);
        }
        CHECK_ST(fit_curve_cut_error(lr, NS, ss, yy, 100, 0.3, &o, &err[j], NULL), ST_OK);
        CHECK(err[j] > 0.05); /* the extrapolation overshoots: it cannot see the drop */
    }
    fit_curve_misfit(err, 2, &io.err_min, &io.err_max);
    CHECK(isnan(io.err_min) && isnan(io.err_max));
    fit_curve_misfit(err, 4, &io.err_min, &io.err_max);
    CHECK(io.err_min > 0.0 && io.err_min < err[0] && io.err_max > err[3]);
    double lo_default = lo;
    CHECK_ST(fit_curve_predict_interval(lr, NS, steps, y, NP, &o, &io, NS, &p, &lo, &hi, NULL),
             ST_OK);
    CHECK(lo <= want && want <= hi);
    CHECK(hi < p); /* the siblings always overshoot: the whole interval lies below the law */
    CHECK(hi - lo < 2 * FIT_CURVE_MISFIT_DEFAULT * p && lo > lo_default);
}

static void exact_and_errors(void)
{
    double lr[NS], y[100], e;
    size_t steps[100];
    for (int i = 0; i < NS; i++)
        lr[i] = 1.0;
    for (int k = 0; k < 100; k++) {
        steps[k] = (size_t)(10 * (k + 1));
        y[k] = truth((double)steps[k], 1, 0);
    }
    fit_curve_options o = power_opts();
    CHECK_ST(fit_curve_cut_error(lr, NS, steps, y, 100, 0.3, &o, &e, NULL), ST_OK);
    CHECK_ABS(e, 0.0, 1e-6);
    char err[ST_ERRMSG_MAX];
    CHECK_ST(fit_curve_cut_error(lr, NS, steps, y, 100, 1.5, &o, &e, err), ST_EINVAL);
    CHECK_ST(fit_curve_cut_error(lr, NS, steps, y, 100, 0.005, &o, &e, err), ST_EINVAL);
    fit_curve_interval_options io = fit_curve_interval_options_default();
    double p, lo, hi;
    io.level = 1.0;
    CHECK_ST(fit_curve_predict_interval(lr, NS, steps, y, 30, &o, &io, NS, &p, &lo, &hi, err),
             ST_EINVAL);
    io = fit_curve_interval_options_default();
    io.err_min = 0.1;
    io.err_max = -0.1;
    CHECK_ST(fit_curve_predict_interval(lr, NS, steps, y, 30, &o, &io, NS, &p, &lo, &hi, err),
             ST_EINVAL);
    io.err_min = -1.0;
    io.err_max = 0.1;
    CHECK_ST(fit_curve_predict_interval(lr, NS, steps, y, 30, &o, &io, NS, &p, &lo, &hi, err),
             ST_EINVAL);
    io.err_min = -0.1;
    CHECK_ST(fit_curve_predict_interval(lr, NS, steps, y, 30, &o, &io, NS + 1, &p, &lo, &hi, err),
             ST_EINVAL);
    /* noise-free points: the bootstrap has nothing to resample, the errors are all the width */
    CHECK_ST(fit_curve_predict_interval(lr, NS, steps, y, 30, &o, &io, NS, &p, &lo, &hi, err),
             ST_OK);
    CHECK_REL(lo, p / 1.1, 1e-4);
    CHECK_REL(hi, p / 0.9, 1e-4);
    double errs[3] = {0.02, NAN, -0.05}, a, b;
    fit_curve_misfit(errs, 3, &a, &b); /* two finite: fewer than the minimum */
    CHECK(isnan(a) && isnan(b));
    /* three finite in [-0.05, 0.02]: widened by 0.07 / 3 + 0.005 on each side */
    double errs4[4] = {0.02, NAN, -0.05, 0.01};
    fit_curve_misfit(errs4, 4, &a, &b);
    CHECK_REL(a, -0.05 - 0.07 / 3 - 0.005, 1e-12);
    CHECK_REL(b, 0.02 + 0.07 / 3 + 0.005, 1e-12);
}

int main(void)
{
    st_global_init();
    coverage();
    late_drop();
    exact_and_errors();
    st_global_cleanup();
    return check_summary("test_fit_curve_interval");
}
