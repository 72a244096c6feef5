/*
 * test_fit_curve_borrow.c — a run's final loss borrowed from the shape of finished runs
 * (fit/curve.h, fit_curve_borrow): recovers an exact log-linear ratio law off the runs' grid
 * (closed form); with equal weights and an infinite ridge it is the geometric mean of the ratios;
 * runs of another group change nothing; a narrow kernel follows a curved ratio that a global line
 * misses; collinear features do not break it; leave-one-out errors are 0 on an exact law and
 * single out an odd run; argument errors.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/st.h"
#include "fit/curve.h"
#include "tests/check.h"

#define NK 12

/* ln(final / cut) of the exact law: 0.1 - 0.3 x1 + 0.2 x2 */
static double ln_ratio(const double *x)
{
    return 0.1 - 0.3 * x[0] + 0.2 * x[1];
}

/* NK runs on a scattered 2-d design in [0, 1]^2, cut losses between 2 and 3 */
static void design(double *xs, double *cut, double *final, double (*law)(const double *))
{
    for (int j = 0; j < NK; j++) {
        xs[2 * j] = fmod(0.37 * j + 0.11, 1.0);
        xs[2 * j + 1] = fmod(0.61 * j + 0.29, 1.0);
        cut[j] = 2.0 + fmod(0.43 * j, 1.0);
        final[j] = cut[j] * exp(law(xs + 2 * j));
    }
}

static void exact_law(void)
{
    double xs[2 * NK], cut[NK], final[NK], p;
    design(xs, cut, final, ln_ratio);
    fit_curve_kin kin = {NK, 2, xs, NULL, cut, final};
    fit_curve_borrow_options o = fit_curve_borrow_options_default();
    o.ridge = 0;
    double x[2] = {0.45, 0.8}; /* not one of the runs */
    CHECK_ST(fit_curve_borrow(&kin, x, 0, 2.5, SIZE_MAX, &o, &p, NULL), ST_OK);
    CHECK_REL(p, 2.5 * exp(ln_ratio(x)), 1e-9);
    /* outside the runs' box too: the law is linear */
    double far[2] = {1.3, -0.2};
    CHECK_ST(fit_curve_borrow(&kin, far, 0, 2.0, SIZE_MAX, &o, &p, NULL), ST_OK);
    CHECK_REL(p, 2.0 * exp(ln_ratio(far)), 1e-9);
    /* leave-one-out on an exact law: every error is 0 */
    double e[NK];
    CHECK_ST(fit_curve_borrow_loo(&kin, &o, e, NULL), ST_OK);
    for (int j = 0; j < NK; j++)
        CHECK_ABS(e[j], 0, 1e-9);
}

static void geometric_mean_and_groups(void)
{
    double xs[2 * NK], cut[NK], final[NK], p, q;
    design(xs, cut, final, ln_ratio);
    fit_curve_borrow_options o = fit_curve_borrow_options_default();
    o.bandwidth = INFINITY;
    o.ridge = 1e12; /* slopes held at 0: the mean of ln ratios, equally weighted */
    fit_curve_kin kin = {NK, 2, xs, NULL, cut, final};
    double x[2] = {0.5, 0.5}, mean = 0;
    for (int j = 0; j < NK; j++)
        mean += log(final[j] / cut[j]) / NK;
    CHECK_ST(fit_curve_borrow(&kin, x, 0, 3.0, SIZE_MAX, &o, &p, NULL), ST_OK);
    CHECK_REL(p, 3.0 * exp(mean), 1e-6);
    /* the same runs plus NK of another group with ratios 10x: no change */
    double xs2[4 * NK], cut2[2 * NK], final2[2 * NK];
    int groups[2 * NK];
    for (int j = 0; j < 2 * NK; j++) {
        int s = j % NK;
        xs2[2 * j] = xs[2 * s], xs2[2 * j + 1] = xs[2 * s + 1];
        cut2[j] = cut[s];
        final2[j] = j < NK ? final[s] : 10 * final[s];
        groups[j] = j < NK ? 4 : 7;
    }
    fit_curve_kin kin2 = {2 * NK, 2, xs2, groups, cut2, final2};
    o = fit_curve_borrow_options_default();
    CHECK_ST(fit_curve_borrow(&kin, x, 0, 3.0, SIZE_MAX, &o, &p, NULL), ST_OK);
    CHECK_ST(fit_curve_borrow(&kin2, x, 4, 3.0, SIZE_MAX, &o, &q, NULL), ST_OK);
    CHECK_REL(q, p, 1e-12);
    CHECK_ST(fit_curve_borrow(&kin2, x, 7, 3.0, SIZE_MAX, &o, &q, NULL), ST_OK);
    CHECK_REL(q, 10 * p, 1e-9);
}

/* a ratio that bends: ln r = 0.5 (x1 - 0.5)^2 along x1 */
static double bent(const double *x)
{
    return 0.5 * (x[0] - 0.5) * (x[0] - 0.5);
}

static void local_beats_global(void)
{
    enum { N1 = 21 };
    double xs[N1], cut[N1], final[N1], p_local, p_global;
    for (int j = 0; j < N1; j++) {
        xs[j] = j / (N1 - 1.0);
        cut[j] = 2.0;
        final[j] = 2.0 * exp(bent(xs + j));
    }
    fit_curve_kin kin = {N1, 1, xs, NULL, cut, final};
    fit_curve_borrow_options o = fit_curve_borrow_options_default();
    o.bandwidth = 0.1;
    o.ridge = 0;
    double x = 0.93, want = 2.0 * exp(bent(&x));
    CHECK_ST(fit_curve_borrow(&kin, &x, 0, 2.0, SIZE_MAX, &o, &p_local, NULL), ST_OK);
    o.bandwidth = INFINITY;
    CHECK_ST(fit_curve_borrow(&kin, &x, 0, 2.0, SIZE_MAX, &o, &p_global, NULL), ST_OK);
    /* a global line through a symmetric bowl is flat: it misses by the bowl's height */
    CHECK(fabs(p_local - want) < 0.2 * fabs(p_global - want));
    CHECK(fabs(p_local / want - 1) < 0.005);
}

static void collinear_and_odd_run(void)
{
    double xs[2 * NK], cut[NK], final[NK], p, e[NK];
    for (int j = 0; j < NK; j++) {
        xs[2 * j] = xs[2 * j + 1] = j / (NK - 1.0); /* two features that always agree */
        cut[j] = 2.0;
        final[j] = 2.0 * exp(-0.2 * xs[2 * j] - 0.2 * xs[2 * j + 1]);
    }
    fit_curve_kin kin = {NK, 2, xs, NULL, cut, final};
    fit_curve_borrow_options o = fit_curve_borrow_options_default();
    double x[2] = {0.5, 0.5};
    CHECK_ST(fit_curve_borrow(&kin, x, 0, 2.0, SIZE_MAX, &o, &p, NULL), ST_OK);
    CHECK_REL(p, 2.0 * exp(-0.2), 2e-3);
    final[5] *= 1.1; /* one run that ended 10% above its kin's shape */
    CHECK_ST(fit_curve_borrow_loo(&kin, &o, e, NULL), ST_OK);
    double worst_other = 0;
    for (int j = 0; j < NK; j++)
        if (j != 5)
            worst_other = fmax(worst_other, fabs(e[j]));
    CHECK(e[5] < -0.07);
    CHECK(worst_other < 0.5 * fabs(e[5]));
}

static void errors(void)
{
    double xs[6] = {0, 0.5, 1, 0, 0.5, 1}, cut[3] = {2, 2, 2}, final[3] = {1.8, 1.7, 1.6}, p;
    char err[ST_ERRMSG_MAX];
    fit_curve_borrow_options o = fit_curve_borrow_options_default();
    fit_curve_kin kin = {3, 1, xs, NULL, cut, final};
    double x = 0.25;
    CHECK_ST(fit_curve_borrow(&kin, &x, 0, 2.0, SIZE_MAX, &o, &p, err), ST_OK);
    CHECK_ST(fit_curve_borrow(&kin, &x, 0, 2.0, 1, &o, &p, err), ST_EINVAL); /* 2 kin left */
    CHECK(strstr(err, "2 finished runs are kin, 3 needed") != NULL);
    CHECK_ST(fit_curve_borrow(&kin, &x, 0, -1.0, SIZE_MAX, &o, &p, err), ST_EINVAL);
    double bad = NAN;
    CHECK_ST(fit_curve_borrow(&kin, &bad, 0, 2.0, SIZE_MAX, &o, &p, err), ST_EINVAL);
    final[1] = 0;
    CHECK_ST(fit_curve_borrow(&kin, &x, 0, 2.0, SIZE_MAX, &o, &p, err), ST_EINVAL);
    CHECK(strstr(err, "run 1") != NULL);
    final[1] = 1.7;
    o.bandwidth = 0;
    CHECK_ST(fit_curve_borrow(&kin, &x, 0, 2.0, SIZE_MAX, &o, &p, err), ST_EINVAL);
    o = fit_curve_borrow_options_default();
    double e[3];
    CHECK_ST(fit_curve_borrow_loo(&kin, &o, e, err), ST_OK); /* each has 2 kin: all NAN */
    CHECK(isnan(e[0]) && isnan(e[1]) && isnan(e[2]));
    CHECK_ST(fit_curve_borrow_loo(NULL, &o, e, err), ST_EINVAL);
    /* every error path with err NULL: the message has nowhere to go, the status still does */
    CHECK_ST(fit_curve_borrow(&kin, &x, 0, 2.0, 1, &o, &p, NULL), ST_EINVAL);
    CHECK_ST(fit_curve_borrow(&kin, &x, 0, -1.0, SIZE_MAX, &o, &p, NULL), ST_EINVAL);
    CHECK_ST(fit_curve_borrow(NULL, &x, 0, 2.0, SIZE_MAX, &o, &p, NULL), ST_EINVAL);
    CHECK_ST(fit_curve_borrow_loo(&kin, &o, e, NULL), ST_OK);
    CHECK_ST(fit_curve_borrow_loo(NULL, &o, e, NULL), ST_EINVAL);
}

int main(void)
{
    st_global_init();
    exact_law();
    geometric_mean_and_groups();
    local_beats_global();
    collinear_and_odd_run();
    errors();
    st_global_cleanup();
    return check_summary("test_fit_curve_borrow");
}
