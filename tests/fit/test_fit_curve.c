/*
 * test_fit_curve.c — the loss-curve law (fit/curve.h): the areas S1, S2 of a step schedule against
 * their closed forms (a geometric sum for the momentum); the prediction at a step against
 * L0 + A (eta s)^-alpha - C S2 worked out by hand; parameters recovered from synthetic curves
 * (WSD and cosine, exact and with seeded noise); a cooled-down schedule predicted from a fit of
 * another; the plain power law as the special case C = 0, lr = 1; argument errors.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/st.h"
#include "fit/curve.h"
#include "tests/check.h"

#define NS 1000

static void areas(void)
{
    /* lr 1e-3 for 400 steps, then 5e-4: m_{400+j} = 5e-4 lambda^(j-1), S2 a geometric sum */
    double lr[NS], S1[NS], S2[NS], lam = 0.99;
    for (int i = 0; i < NS; i++)
        lr[i] = i < 400 ? 1e-3 : 5e-4;
    CHECK_ST(fit_curve_areas(lr, NS, lam, S1, S2, NULL), ST_OK);
    CHECK_REL(S1[399], 0.4, 1e-12);
    CHECK(S2[399] == 0.0);
    for (int J = 1; J <= 600; J *= 5) {
        CHECK_REL(S1[399 + J], 0.4 + J * 5e-4, 1e-12);
        CHECK_REL(S2[399 + J], 5e-4 * (1 - pow(lam, J)) / (1 - lam), 1e-10);
    }
    /* a warmup (rising lr) is not annealing */
    for (int i = 0; i < 10; i++)
        lr[i] = 1e-4 * (i + 1);
    CHECK_ST(fit_curve_areas(lr, NS, lam, S1, S2, NULL), ST_OK);
    CHECK(S2[9] == 0.0 && S2[399] == 0.0);
    CHECK_REL(S1[9], 1e-4 * 55, 1e-12);
    char err[ST_ERRMSG_MAX];
    CHECK_ST(fit_curve_areas(lr, NS, 1.0, S1, S2, err), ST_EINVAL);
    CHECK(strstr(err, "lambda") != NULL);
    lr[5] = -1;
    CHECK_ST(fit_curve_areas(lr, NS, lam, S1, S2, err), ST_EINVAL);
}

static void predict(void)
{
    double lr[NS];
    fit_curve_law law = {.L0 = 1.5, .A = 0.8, .alpha = 0.5, .C = 2.0};
    for (int i = 0; i < NS; i++)
        lr[i] = 4e-3;
    double y;
    /* constant lr: L0 + A (eta s)^-alpha = 1.5 + 0.8 / sqrt(4e-3 * 100) */
    CHECK_ST(fit_curve_predict(&law, lr, NS, 0.999, 100, &y, NULL), ST_OK);
    CHECK_REL(y, 1.5 + 0.8 / sqrt(0.4), 1e-12);
    /* halved at step 600: 400 steps later, S1 = 2.4 + 0.8, S2 = 2e-3 (1 - 0.9^400) / 0.1 */
    for (int i = 600; i < NS; i++)
        lr[i] = 2e-3;
    CHECK_ST(fit_curve_predict(&law, lr, NS, 0.9, NS, &y, NULL), ST_OK);
    CHECK_REL(y, 1.5 + 0.8 / sqrt(3.2) - 2.0 * 2e-3 * (1 - pow(0.9, 400)) / 0.1, 1e-10);
    CHECK_ST(fit_curve_predict(&law, lr, NS, 0.9, NS + 1, &y, NULL), ST_EINVAL);
    CHECK_ST(fit_curve_predict(&law, lr, NS, 0.9, 0, &y, NULL), ST_EINVAL);
}

/* a schedule of NS steps: warmup 20, then cosine to 0.1 (cos = 1) or WSD with the last 20%
 * decaying linearly (cos = 0); decay_at < NS moves WSD's decay to [decay_at, decay_at + 200) */
static void schedule(double *lr, int cos_, int decay_at)
{
    for (int i = 0; i < NS; i++) {
        double peak = 3e-3, p;
        if (i < 20)
            lr[i] = peak * (i + 1) / 20.0;
        else if (cos_)
            p = (i - 20.0) / (NS - 21.0), lr[i] = peak * (0.1 + 0.9 * 0.5 * (1 + cos(M_PI * p)));
        else if (i < decay_at)
            lr[i] = peak;
        else
            p = fmin(1.0, (i - decay_at + 1.0) / 200.0), lr[i] = peak * (1 - 0.9 * p);
    }
}

/* n points every NS/n steps from the true law, plus N(0, sigma^2) noise (Box-Muller, seeded) */
static void synth(const fit_curve_law *t, const double *lr, double sigma, size_t n, size_t *steps,
                  double *loss)
{
    double S1[NS], S2[NS];
    fit_curve_areas(lr, NS, 0.999, S1, S2, NULL);
    st_rng *r;
    st_rng_create(42, &r);
    for (size_t k = 0; k < n; k++) {
        steps[k] = (k + 1) * NS / n;
        double u1 = st_rng_uniform(r), u2 = st_rng_uniform(r);
        double z = sqrt(-2 * log(u1 + 1e-300)) * cos(2 * M_PI * u2);
        loss[k] = fit_curve_eval(t, S1[steps[k] - 1], S2[steps[k] - 1]) + sigma * z;
    }
    st_rng_destroy(r);
}

static void recover(void)
{
    fit_curve_law truth = {.L0 = 1.8, .A = 0.9, .alpha = 0.45, .C = 1.2}, got;
    fit_curve_options o = fit_curve_options_default();
    double lr[NS], loss[100], rss;
    size_t steps[100];
    for (int cos_ = 0; cos_ <= 1; cos_++) {
        schedule(lr, cos_, 800);
        synth(&truth, lr, 0.0, 100, steps, loss);
        CHECK_ST(fit_curve_fit(lr, NS, steps, loss, 100, &o, &got, &rss, NULL), ST_OK);
        CHECK_REL(got.L0, truth.L0, 1e-5);
        CHECK_REL(got.A, truth.A, 1e-5);
        CHECK_REL(got.alpha, truth.alpha, 1e-5);
        CHECK_REL(got.C, truth.C, 1e-4);
        CHECK(rss < 1e-12);
        /* noise of sd 0.002 (a tenth of a percent of the loss): within 1% (L0) and 5% (alpha, C) */
        synth(&truth, lr, 0.002, 100, steps, loss);
        CHECK_ST(fit_curve_fit(lr, NS, steps, loss, 100, &o, &got, &rss, NULL), ST_OK);
        fprintf(stderr, "  %s, noise 0.002: L0 %.4f A %.4f alpha %.4f C %.4f\n",
                cos_ ? "cosine" : "wsd", got.L0, got.A, got.alpha, got.C);
        CHECK_REL(got.L0, truth.L0, 0.01);
        CHECK_REL(got.alpha, truth.alpha, 0.05);
        CHECK_REL(got.C, truth.C, 0.05);
        CHECK_REL(rss / 100, 0.002 * 0.002, 0.5); /* the residual variance is the noise's */
    }
}

/* fit a WSD run that decays at step 800; predict the same model cooled down at step 500 */
static void other_schedule(void)
{
    fit_curve_law truth = {.L0 = 1.8, .A = 0.9, .alpha = 0.45, .C = 1.2}, got;
    fit_curve_options o = fit_curve_options_default();
    double lr[NS], lr2[NS], loss[100], want, y;
    size_t steps[100];
    schedule(lr, 0, 800);
    synth(&truth, lr, 0.001, 100, steps, loss);
    CHECK_ST(fit_curve_fit(lr, NS, steps, loss, 100, &o, &got, NULL, NULL), ST_OK);
    schedule(lr2, 0, 500);
    CHECK_ST(fit_curve_predict(&truth, lr2, NS, 0.999, 700, &want, NULL), ST_OK);
    CHECK_ST(fit_curve_predict(&got, lr2, NS, 0.999, 700, &y, NULL), ST_OK);
    CHECK_REL(y, want, 2e-3);
}

static void power_law(void)
{
    /* L = E + A s^-a as the law with lr = 1 and C fixed at 0 */
    double one[NS], loss[40];
    size_t steps[40];
    for (int i = 0; i < NS; i++)
        one[i] = 1.0;
    for (int k = 0; k < 40; k++)
        steps[k] = (size_t)(k + 1) * 7, loss[k] = 2.1 + 3.0 * pow((double)steps[k], -0.6);
    fit_curve_options o = fit_curve_options_default();
    o.fix_C = 1;
    fit_curve_law got;
    CHECK_ST(fit_curve_fit(one, NS, steps, loss, 40, &o, &got, NULL, NULL), ST_OK);
    CHECK_REL(got.L0, 2.1, 1e-6);
    CHECK_REL(got.A, 3.0, 1e-6);
    CHECK_REL(got.alpha, 0.6, 1e-6);
    CHECK(got.C == 0.0);
}

static void errors(void)
{
    double lr[NS], loss[4] = {3, 2.9, 2.8, 2.7};
    size_t steps[4] = {10, 20, 30, NS + 1};
    for (int i = 0; i < NS; i++)
        lr[i] = 1e-3;
    fit_curve_options o = fit_curve_options_default();
    fit_curve_law law;
    char err[ST_ERRMSG_MAX];
    CHECK_ST(fit_curve_fit(lr, NS, steps, loss, 4, &o, &law, NULL, err), ST_EINVAL);
    CHECK(strstr(err, "outside") != NULL);
    CHECK_ST(fit_curve_fit(lr, NS, steps, loss, 3, &o, &law, NULL, err), ST_EINVAL);
    CHECK(strstr(err, "needs at least 4") != NULL);
    steps[3] = 40;
    lr[0] = lr[1] = lr[2] = 0.0;
    steps[0] = 2;
    CHECK_ST(fit_curve_fit(lr, NS, steps, loss, 4, &o, &law, NULL, err), ST_EINVAL);
    CHECK(strstr(err, "forward area") != NULL);
    steps[0] = 10;
    o.alpha_min = 0;
    CHECK_ST(fit_curve_fit(lr, NS, steps, loss, 4, &o, &law, NULL, err), ST_EINVAL);
}

int main(void)
{
    areas();
    predict();
    recover();
    other_schedule();
    power_law();
    errors();
    return check_summary("fit.curve");
}
