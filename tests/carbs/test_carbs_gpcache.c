/*
 * The GPs kept between suggestions (carbs/gpcache.c): a factor extended by appends equals a
 * fresh Cholesky of all the points (GSL's, an independent reference) to 1e-10 relative, and
 * does not depend on how the appends were grouped (bit for bit); the refit points; and with
 * every run in the GPs (gp_max_points 0), a handle rebuilt from the runs or imported from a
 * saved state suggests bit for bit what the live one does at every step across several
 * refit points, with failures, cost-only observations and runs in flight, and after the
 * search centre moves; and the imported handle's models predict the same bits.
 */
#include <gsl/gsl_linalg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carbs/gp_int.h"
#include "tests/check.h"

#define D 3

/* ---- the factor --------------------------------------------------------------------------- */

/* Linear + Matern-3/2 with centre 0, written out from the definition. */
static double ref_k(size_t d, const double *th, const double *x, const double *z)
{
    double q = 0, lin = 0;
    for (size_t i = 0; i < d; i++) {
        double l = exp(th[2 + i]);
        q += (x[i] - z[i]) * (x[i] - z[i]) / (l * l);
        lin += x[i] * z[i];
    }
    double r = sqrt(q + 1e-12);
    return exp(th[0]) * lin + exp(th[1]) * (1 + sqrt(3.0) * r) * exp(-sqrt(3.0) * r);
}

static void points(size_t n, size_t d, double *X, double *y)
{
    for (size_t a = 0; a < n; a++) {
        for (size_t i = 0; i < d; i++)
            X[a * d + i] = sin(0.37 * (double)(a * d + i) + 0.1 * (double)i);
        y[a] = cos(1.7 * X[a * d]) + X[a * d + 1];
    }
}

/* gp_extend from r of n points: L equals GSL's Cholesky of all n to 1e-10 relative (of the
 * largest entry), and extending in one call, in two or one point at a time gives the same
 * bits; the posterior mean equals a fresh gp_factor's. */
static void test_extend(void)
{
    enum { N = 120, R = 64, DD = 2 };
    double X[N * DD], y[N], th[DD + 3] = {-1.0, 0.3, log(0.4), log(0.7), log(1e-3)};
    points(N, DD, X, y);
    gp *g[3] = {NULL, NULL, NULL}, *f = NULL;
    for (int k = 0; k < 3; k++) {
        CHECK_ST(gp_create(GP_KERNEL_LIN_MATERN32, DD, &g[k]), ST_OK);
        CHECK_ST(gp_set_data(g[k], R, X, y), ST_OK);
        gp_set_theta(g[k], th);
        CHECK_ST(gp_factor(g[k]), ST_OK);
    }
    CHECK_ST(gp_extend(g[0], N - R, X + R * DD), ST_OK);
    CHECK_ST(gp_extend(g[1], 17, X + R * DD), ST_OK);
    CHECK_ST(gp_extend(g[1], N - R - 17, X + (R + 17) * DD), ST_OK);
    for (size_t a = R; a < N; a++)
        CHECK_ST(gp_extend(g[2], 1, X + a * DD), ST_OK);
    CHECK(gp_n(g[0]) == N && gp_n(g[1]) == N && gp_n(g[2]) == N);
    double Xm[N * DD]; /* the same points but the last coordinate moved */
    memcpy(Xm, X, sizeof(Xm));
    Xm[N * DD - 1] += 1;
    CHECK(gp_same_points(g[0], N, X) && !gp_same_points(g[0], N, Xm));

    gsl_matrix *K = gsl_matrix_alloc(N, N);
    for (size_t a = 0; a < N; a++)
        for (size_t b = 0; b < N; b++)
            gsl_matrix_set(K, a, b,
                           ref_k(DD, th, X + a * DD, X + b * DD) +
                               (a == b ? exp(th[DD + 2]) + 1e-4 : 0));
    CHECK(gsl_linalg_cholesky_decomp1(K) == 0);
    double big = 0, err = 0;
    size_t same = 0, ld = g[0]->cap;
    for (size_t b = 0; b < N; b++)
        for (size_t a = b; a < N; a++) {
            double want = gsl_matrix_get(K, a, b), got = g[0]->L[a + b * ld];
            big = fabs(want) > big ? fabs(want) : big;
            err = fabs(got - want) > err ? fabs(got - want) : err;
            same += got == g[1]->L[a + b * g[1]->cap] && got == g[2]->L[a + b * g[2]->cap];
        }
    gsl_matrix_free(K);
    CHECK(err <= 1e-10 * big);
    CHECK(same == N * (N + 1) / 2);
    printf("extend: max |L - GSL's Cholesky| %.2g of %.3g\n", err, big);

    /* the posterior from the extended factor and a fresh one */
    CHECK_ST(gp_create(GP_KERNEL_LIN_MATERN32, DD, &f), ST_OK);
    CHECK_ST(gp_set_data(f, N, X, y), ST_OK);
    gp_set_theta(f, th);
    CHECK_ST(gp_factor(f), ST_OK);
    CHECK_ST(gp_set_targets(g[0], y), ST_OK);
    double xs[DD] = {0.2, -0.3}, m0, v0, m1, v1;
    CHECK_ST(gp_predict(g[0], 1, xs, &m0, &v0), ST_OK);
    CHECK_ST(gp_predict(f, 1, xs, &m1, &v1), ST_OK);
    CHECK_REL(m0, m1, 1e-9);
    CHECK_REL(v0, v1, 1e-6);
    /* truncating drops the last points and keeps the leading factor */
    gp_truncate(g[0], R);
    CHECK(gp_n(g[0]) == R && gp_same_points(g[0], R, X));
    for (int k = 0; k < 3; k++)
        gp_destroy(g[k]);
    gp_destroy(f);
}

/* The refit points: every n up to 256, then 256 and each growth by 1/16. */
static void test_points(void)
{
    CHECK(carbs_priv_refit_point(5) == 5 && carbs_priv_refit_point(256) == 256);
    CHECK(carbs_priv_refit_point(271) == 256 && carbs_priv_refit_point(272) == 272);
    CHECK(carbs_priv_refit_point(306) == 289 && carbs_priv_refit_point(307) == 307);
    CHECK(carbs_priv_refit_point(1000) == 953 && carbs_priv_refit_point(1012) == 1012);
    size_t r = 256, changes = 0;
    for (size_t n = 257; n <= 1000; n++) {
        size_t p = carbs_priv_refit_point(n);
        CHECK(p <= n && p >= r && (p == r || p == n) && (n - p) * 16 < p + 16);
        changes += p != r;
        r = p;
    }
    printf("refit points: %zu from 257 to 1000 runs\n", changes);
    CHECK(changes == 22);
}

/* ---- suggestions -------------------------------------------------------------------------- */

static carbs *make(uint64_t seed)
{
    carbs_param p[D];
    carbs_param_init(&p[0], "lr", CARBS_SPACE_LOG, 1e-3);
    p[0].min = 1e-5;
    p[0].max = 1.0;
    carbs_param_init(&p[1], "width", CARBS_SPACE_LOG, 128);
    p[1].min = 16;
    p[1].max = 1024;
    p[1].is_integer = 1;
    p[1].rounding = 16;
    carbs_param_init(&p[2], "warmup", CARBS_SPACE_LOGIT, 0.05);
    carbs_options o = carbs_options_default();
    o.seed = seed;
    o.gp_max_points = 0;
    /* cheaper suggestions (400 of them here), the same code paths */
    o.candidates_per_dim = 20;
    o.gp_max_fit_points = 48;
    o.gp_restarts = 0;
    carbs *c = NULL;
    char msg[ST_ERRMSG_MAX];
    CHECK_ST(carbs_create(p, D, &o, &c, msg), ST_OK);
    return c;
}

/* a smooth toy: optimum near lr 10^-2.5, width 256; warmup > 0.08 fails */
static double toy(const double *x, double *cost, int *failed)
{
    double a = log10(x[0]) + 2.5, b = log2(x[1] / 256.0), w = x[2] - 0.1;
    *cost = x[1] * x[1] / 1000.0 * (1 + 0.1 * fabs(sin(1e3 * x[0])));
    *failed = x[2] > 0.08;
    return 1.0 + a * a + 0.3 * b * b + w * w + 2.0 / sqrt(x[1]);
}

/* `live` rebuilt from what a store keeps (as test_carbs_subset.c's rebuild). */
static carbs *rebuild(const carbs *live, const size_t *born)
{
    carbs *r = make(carbs_get_options(live)->seed);
    double x[D], y, cost, ctr[D];
    int failed;
    for (size_t i = 0; r && i < carbs_n_observations(live); i++) {
        CHECK_ST(carbs_get_observation(live, i, x, &y, &cost, &failed), ST_OK);
        CHECK_ST(carbs_observe(r, 0, x, y, cost, failed), ST_OK);
    }
    for (size_t i = 0; r && i < carbs_n_cost_observations(live); i++) {
        CHECK_ST(carbs_get_cost_observation(live, i, x, &cost), ST_OK);
        CHECK_ST(carbs_observe_cost(r, 0, x, cost), ST_OK);
    }
    for (size_t i = 0; r && i < carbs_n_outstanding(live); i++) {
        uint64_t id;
        int reg = 0;
        CHECK_ST(carbs_get_outstanding(live, i, &id, x), ST_OK);
        CHECK_ST(carbs_add_outstanding_born(r, id, x, born[id], &reg), ST_OK);
    }
    carbs_progress p;
    carbs_get_progress(live, &p);
    carbs_get_search_center(live, ctr);
    if (r) {
        carbs_set_progress(r, &p);
        CHECK_ST(carbs_set_search_center(r, ctr), ST_OK);
    }
    return r;
}

/* Whether two handles' models predict the same bits (mean, sd, cost, P(success)) at a few
 * points: the suggestions alone would hide small differences in the models. (Only for an
 * import: a rebuild's inputs went through the parameter transforms again, so its models
 * differ in the last bits, before the cache as after it.) */
static int same_predictions(carbs *a, carbs *b)
{
    enum { M = 4 };
    double X[M * D] = {1e-3, 128, 0.05, 1e-2, 512, 0.03, 3e-4, 64, 0.07, 5e-2, 1000, 0.02};
    double out[2][4][M];
    carbs *h[2] = {a, b};
    for (int k = 0; k < 2; k++)
        if (carbs_predict(h[k], M, X, out[k][0], out[k][1], out[k][2], out[k][3]) != ST_OK)
            return 0;
    return !memcmp(out[0], out[1], sizeof(out[0]));
}

/* n suggestions on `live`, two runs in flight, every 11th run refused for its cost; from step
 * check_from on, every `every` steps, a rebuilt and an imported handle suggest first.
 * *same: the checks where both equal the live suggestion; *same_pred: where the imported
 * one's predictions are the live one's; *bayes: Bayesian suggestions among *same. */
static void drive(carbs *live, size_t n, size_t check_from, size_t every, size_t *born,
                  size_t *same, size_t *same_pred, size_t *checks, size_t *bayes)
{
    static uint64_t open_ids[2];
    static double open_x[2][D];
    for (size_t k = 0; k < n; k++) {
        double xl[D], xr[D], xi[D];
        carbs *r = NULL, *im = NULL;
        size_t step = live->n_suggest;
        if (step >= check_from && step % every == 0) {
            void *buf = NULL;
            size_t len = 0;
            char msg[ST_ERRMSG_MAX];
            r = rebuild(live, born);
            CHECK_ST(carbs_export(live, &buf, &len), ST_OK);
            CHECK_ST(carbs_import(buf, len, &im, msg), ST_OK);
            st_free(buf);
        }
        if (r && im)
            *same_pred += same_predictions(live, im);
        born[step + 1] = carbs_n_observations(live);
        uint64_t id;
        CHECK_ST(carbs_suggest(live, xl, &id), ST_OK);
        if (r && im) {
            CHECK_ST(carbs_suggest(r, xr, NULL), ST_OK);
            CHECK_ST(carbs_suggest(im, xi, NULL), ST_OK);
            int ok = !memcmp(xl, xr, sizeof(xl)) && !memcmp(xl, xi, sizeof(xl));
            *same += ok;
            *checks += 1;
            carbs_suggestion_info info;
            carbs_last_info(live, &info);
            *bayes += ok && info.phase == CARBS_PHASE_BAYES;
        }
        carbs_destroy(r);
        carbs_destroy(im);
        if (open_ids[0]) {
            double cost, y;
            int failed;
            y = toy(open_x[0], &cost, &failed);
            if (open_ids[0] % 11 == 0)
                CHECK_ST(carbs_observe_cost(live, open_ids[0], NULL, cost), ST_OK);
            else
                CHECK_ST(carbs_observe(live, open_ids[0], NULL, y, cost, failed), ST_OK);
        }
        open_ids[0] = open_ids[1];
        memcpy(open_x[0], open_x[1], sizeof(open_x[0]));
        open_ids[1] = id;
        memcpy(open_x[1], xl, sizeof(xl));
    }
}

/* From about 250 to 310 successes (refit points 256, 272, 289, 307 of the output GP), then
 * after the centre moved: the live handle, a rebuild and an import agree at every checked
 * step. */
static void test_rebuilt(void)
{
    carbs *live = make(11);
    size_t born[512] = {0}, same = 0, same_pred = 0, checks = 0, bayes = 0;
    drive(live, 400, 320, 2, born, &same, &same_pred, &checks, &bayes);
    CHECK(live && live->gpc != NULL);
    CHECK(live && live->n_succ > 290 && live->n_fail > 0);
    CHECK(live && carbs_n_cost_observations(live) > 0);
    /* the centre moves: the cache is refitted around it */
    double ctr[D] = {3e-3, 256, 0.04};
    CHECK_ST(carbs_set_search_center(live, ctr), ST_OK);
    drive(live, 8, 0, 1, born, &same, &same_pred, &checks, &bayes);
    CHECK(checks == 40 + 8);
    CHECK(same == checks);
    CHECK(same_pred == checks);
    CHECK(bayes > checks / 2);
    printf("rebuilt: %zu of %zu checks the same rebuilt and imported (%zu Bayesian), %zu with "
           "the same predictions imported; %zu successes, %zu failures, %zu cost-only\n",
           same, checks, bayes, same_pred, live ? live->n_succ : 0, live ? live->n_fail : 0,
           live ? carbs_n_cost_observations(live) : 0);
    carbs_destroy(live);
}

int main(void)
{
    st_global_init();
    test_extend();
    test_points();
    test_rebuilt();
    return check_summary("carbs.gpcache");
}
