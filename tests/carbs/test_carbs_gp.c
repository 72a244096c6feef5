/*
 * test_carbs_gp.c — carbs/gp.c against independent references: a straightforward kernel and a
 * GSL Cholesky direct solve for the posterior and the marginal likelihood, closed forms for
 * n = 1 and 2, central finite differences for the gradient, ARD recovery by the recommended
 * fit, CARBS' small Adam moves in faithful mode, rank-one appends vs a full refactorisation,
 * the jitter / NaN paths, gp_predict_bound's variance bound against a GSL solve on the nearest
 * points, and the cross-kernel's exp against libm's.
 */
#include "carbs/gp_int.h"
#include "tests/check.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <math.h>
#include <stdlib.h>

#define LOG2PI 1.8378770664093453
#define NT_MAX 16

/* ---- independent reference ---------------------------------------------------------------- */

static double ref_k(gp_kernel kern, size_t d, const double *th, const double *c, const double *x,
                    const double *z)
{
    if (kern == GP_KERNEL_RBF) {
        double s2 = exp(th[0]), l = exp(th[1]), q = 0;
        for (size_t i = 0; i < d; i++)
            q += (x[i] - z[i]) * (x[i] - z[i]);
        return s2 * exp(-q / (2 * l * l));
    }
    double sl2 = exp(th[0]), sm2 = exp(th[1]), q = 0, lin = 0;
    for (size_t i = 0; i < d; i++) {
        double l = exp(th[2 + i]);
        q += (x[i] - z[i]) * (x[i] - z[i]) / (l * l);
        lin += (x[i] - c[i]) * (z[i] - c[i]);
    }
    double r = sqrt(q + 1e-12);
    return sl2 * lin + sm2 * (1 + sqrt(3.0) * r) * exp(-sqrt(3.0) * r);
}

static size_t ref_nt(gp_kernel kern, size_t d)
{
    return kern == GP_KERNEL_RBF ? 3 : d + 3;
}

/* Cholesky of K + (noise + 1e-4) I by GSL; returns the matrix (caller frees). */
static gsl_matrix *ref_chol(gp_kernel kern, size_t d, const double *th, const double *c, size_t n,
                            const double *X)
{
    double noise = exp(th[ref_nt(kern, d) - 1]);
    gsl_matrix *K = gsl_matrix_alloc(n, n);
    for (size_t a = 0; a < n; a++)
        for (size_t b = 0; b < n; b++)
            gsl_matrix_set(
                K, a, b, ref_k(kern, d, th, c, X + a * d, X + b * d) + (a == b ? noise + 1e-4 : 0));
    int rc = gsl_linalg_cholesky_decomp1(K);
    CHECK(rc == 0);
    return K;
}

/* -log N(y; 0, K) - log LogNormal(noise; ln 0.01, 0.5) */
static double ref_nll(gp_kernel kern, size_t d, const double *th, const double *c, size_t n,
                      const double *X, const double *y)
{
    gsl_matrix *L = ref_chol(kern, d, th, c, n, X);
    gsl_vector_const_view yv = gsl_vector_const_view_array(y, n);
    gsl_vector *al = gsl_vector_alloc(n);
    gsl_linalg_cholesky_solve(L, &yv.vector, al);
    double q = 0, ld = 0;
    for (size_t i = 0; i < n; i++) {
        q += y[i] * gsl_vector_get(al, i);
        ld += 2 * log(gsl_matrix_get(L, i, i));
    }
    gsl_matrix_free(L);
    gsl_vector_free(al);
    double eta = th[ref_nt(kern, d) - 1], mu = log(0.01), s = 0.5;
    double prior = eta + log(s) + 0.5 * LOG2PI + (eta - mu) * (eta - mu) / (2 * s * s);
    return 0.5 * q + 0.5 * ld + 0.5 * (double)n * LOG2PI + prior;
}

static void rand_data(st_rng *r, size_t n, size_t d, double *X, double *y)
{
    for (size_t i = 0; i < n * d; i++)
        X[i] = 2 * st_rng_uniform(r) - 1;
    for (size_t i = 0; i < n; i++)
        y[i] = sin(3 * X[i * d]) + 0.5 * X[i * d + d - 1] + 0.1 * st_rng_gaussian(r);
}

static void rand_theta(st_rng *r, gp_kernel kern, size_t d, double *th)
{
    size_t nt = ref_nt(kern, d);
    for (size_t j = 0; j < nt; j++)
        th[j] = 0.5 * st_rng_gaussian(r);
    th[nt - 1] = log(0.01) + 0.5 * st_rng_gaussian(r);
    if (kern == GP_KERNEL_LIN_MATERN32)
        for (size_t i = 0; i < d; i++)
            th[2 + i] += log(0.5);
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_posterior(gp_kernel kern, st_rng *r)
{
    const size_t n = 20, d = kern == GP_KERNEL_RBF ? 1 : 3, m = 7;
    double X[20 * 3], y[20], Xs[7 * 3], th[NT_MAX], c[3] = {0.1, -0.2, 0.3}, mean[7], var[7];
    rand_data(r, n, d, X, y);
    for (size_t i = 0; i < m * d; i++)
        Xs[i] = 2 * st_rng_uniform(r) - 1;
    memcpy(Xs, X + 2 * d, d * sizeof(double)); /* one test point on a training point */
    rand_theta(r, kern, d, th);
    if (kern == GP_KERNEL_RBF)
        c[0] = 0;
    gp *g;
    CHECK_ST(gp_create(kern, d, &g), ST_OK);
    CHECK_ST(gp_predict(g, m, Xs, mean, var), ST_ESTATE);
    if (kern == GP_KERNEL_LIN_MATERN32)
        gp_set_linear_center(g, c);
    CHECK_ST(gp_set_data(g, n, X, y), ST_OK);
    gp_set_theta(g, th);
    CHECK_ST(gp_factor(g), ST_OK);
    CHECK_ST(gp_predict(g, m, Xs, mean, var), ST_OK);

    gsl_matrix *L = ref_chol(kern, d, th, c, n, X);
    gsl_vector_const_view yv = gsl_vector_const_view_array(y, n);
    gsl_vector *al = gsl_vector_alloc(n), *ks = gsl_vector_alloc(n), *v = gsl_vector_alloc(n);
    gsl_linalg_cholesky_solve(L, &yv.vector, al);
    for (size_t j = 0; j < m; j++) {
        for (size_t i = 0; i < n; i++)
            gsl_vector_set(ks, i, ref_k(kern, d, th, c, X + i * d, Xs + j * d));
        double mu, q;
        gsl_blas_ddot(ks, al, &mu);
        gsl_linalg_cholesky_solve(L, ks, v);
        gsl_blas_ddot(ks, v, &q);
        double vr = ref_k(kern, d, th, c, Xs + j * d, Xs + j * d) - q;
        CHECK_REL(mean[j], mu, 1e-9);
        CHECK_ABS(var[j], vr, 1e-9 * ref_k(kern, d, th, c, Xs + j * d, Xs + j * d));
        CHECK(var[j] >= 0);
    }
    /* mean only */
    double mean2[7];
    CHECK_ST(gp_predict(g, m, Xs, mean2, NULL), ST_OK);
    CHECK(memcmp(mean, mean2, sizeof(mean)) == 0);
    gsl_matrix_free(L);
    gsl_vector_free(al);
    gsl_vector_free(ks);
    gsl_vector_free(v);
    gp_destroy(g);
}

/* gp_cross_exp (the cross-kernel's vectorised exp) against libm's exp on [-700, 0]: within
 * 1e-15 relative (measured: 2.2e-16, one ulp); exactly 1 at 0 and 0 below -700. */
static void test_cross_exp(st_rng *r)
{
    enum { N = 20000 };
    static double x[N], y[N];
    for (size_t i = 0; i < N; i++) {
        double u = st_rng_uniform(r);
        x[i] = i % 2 ? -700 * u : -2 * u; /* the whole range, and densely where kernels live */
    }
    x[0] = 0;
    x[1] = -700;
    x[2] = -700.5;
    x[3] = -1e300;
    x[4] = -0.5 * 0.6931471805599453; /* the reduction's edges, r = +-ln2/2 */
    x[5] = -1.5 * 0.6931471805599453;
    gp_cross_exp(N, x, y);
    CHECK(y[0] == 1.0);
    CHECK(y[2] == 0.0 && y[3] == 0.0);
    for (size_t i = 0; i < N; i++)
        if (x[i] >= -700)
            CHECK_REL(y[i], exp(x[i]), 1e-15);
}

/* The 8 points of X (n) nearest to x in the kernel's scaled distance, by a full sort. */
static size_t ref_nearest(gp_kernel kern, size_t d, const double *th, size_t n, const double *X,
                          const double *x, size_t *idx)
{
    double r2[400];
    size_t s = n < 8 ? n : 8;
    for (size_t a = 0; a < n; a++) {
        r2[a] = 0;
        for (size_t i = 0; i < d; i++) {
            double l = exp(th[kern == GP_KERNEL_RBF ? 1 : 2 + i]), u = (X[a * d + i] - x[i]) / l;
            r2[a] += u * u;
        }
        idx[a] = a;
    }
    for (size_t t = 0; t < s; t++)
        for (size_t a = t + 1; a < n; a++)
            if (r2[idx[a]] < r2[idx[t]]) {
                size_t w = idx[t];
                idx[t] = idx[a];
                idx[a] = w;
            }
    return s;
}

/* gp_predict_bound: the mean is gp_predict's bit for bit; the bound is the posterior variance
 * given the 8 nearest points alone (a GSL solve on that subset) plus 1e-6 k(x,x), and never
 * below the full posterior variance; n = 0 gives the prior itself. Two blocks of test points. */
static void test_variance_bound(gp_kernel kern, st_rng *r, size_t n)
{
    const size_t d = kern == GP_KERNEL_RBF ? 1 : 3, m = 300;
    double *X = malloc(n * d * sizeof(double) + 1), *y = malloc(n * sizeof(double) + 1);
    double *Xs = malloc(m * d * sizeof(double)), *buf = malloc(4 * m * sizeof(double));
    double *mean = buf, *var = buf + m, *mb = buf + 2 * m, *ub = buf + 3 * m;
    double th[NT_MAX], c[3] = {0.1, -0.2, 0.3}, XS[8 * 3];
    size_t idx[400];
    rand_data(r, n, d, X, y);
    for (size_t i = 0; i < m * d; i++)
        Xs[i] = 3 * st_rng_uniform(r) - 1.5; /* some outside the data */
    if (n)
        memcpy(Xs, X, d * sizeof(double)); /* one on a training point */
    rand_theta(r, kern, d, th);
    if (kern == GP_KERNEL_RBF)
        c[0] = 0;
    gp *g;
    CHECK_ST(gp_create(kern, d, &g), ST_OK);
    CHECK_ST(gp_predict_bound(g, m, Xs, mb, ub), ST_ESTATE);
    if (kern == GP_KERNEL_LIN_MATERN32)
        gp_set_linear_center(g, c);
    CHECK_ST(gp_set_data(g, n, X, y), ST_OK);
    gp_set_theta(g, th);
    CHECK_ST(gp_factor(g), ST_OK);
    CHECK_ST(gp_predict(g, m, Xs, mean, var), ST_OK);
    CHECK_ST(gp_predict_bound(g, m, Xs, mb, ub), ST_OK);
    CHECK(memcmp(mean, mb, m * sizeof(double)) == 0);
    for (size_t j = 0; j < m; j++) {
        const double *x = Xs + j * d;
        double kxx = ref_k(kern, d, th, c, x, x), vs = kxx;
        size_t s = ref_nearest(kern, d, th, n, X, x, idx);
        if (s) {
            for (size_t a = 0; a < s; a++)
                memcpy(XS + a * d, X + idx[a] * d, d * sizeof(double));
            gsl_matrix *L = ref_chol(kern, d, th, c, s, XS);
            gsl_vector *ks = gsl_vector_alloc(s), *v = gsl_vector_alloc(s);
            for (size_t a = 0; a < s; a++)
                gsl_vector_set(ks, a, ref_k(kern, d, th, c, XS + a * d, x));
            double q;
            gsl_linalg_cholesky_solve(L, ks, v);
            gsl_blas_ddot(ks, v, &q);
            vs = kxx - q;
            gsl_matrix_free(L);
            gsl_vector_free(ks);
            gsl_vector_free(v);
        }
        CHECK_ABS(ub[j], n ? vs + 1e-6 * kxx : kxx, 1e-9 * kxx);
        CHECK(ub[j] >= var[j]);
        if (n && n <= 8)
            CHECK_ABS(ub[j], var[j] + 1e-6 * kxx, 1e-9 * kxx);
    }
    free(X);
    free(y);
    free(Xs);
    free(buf);
    gp_destroy(g);
}

/* Kernel values at hand-computed points, read through the prior variance (n = 0) and the
 * one-point posterior mean k(x,z) y / (k(z,z) + noise + 1e-4). */
static void test_kernel_values(void)
{
    gp *g;
    CHECK_ST(gp_create(GP_KERNEL_LIN_MATERN32, 2, &g), ST_OK);
    double c[2] = {0.05, 0.0};
    double th[5] = {log(2.0), log(0.5), log(0.3), log(0.5), log(0.01)};
    gp_set_linear_center(g, c);
    gp_set_theta(g, th);
    CHECK_ST(gp_set_data(g, 0, NULL, NULL), ST_OK);
    CHECK_ST(gp_factor(g), ST_OK);
    double x[2] = {0.1, 0.2}, mean, var;
    CHECK_ST(gp_predict(g, 1, x, &mean, &var), ST_OK);
    /* r ~ 1e-6: sm2 (1 + sqrt3 r) e^{-sqrt3 r} = sm2 (1 - 1.5e-12 + ...) */
    double want = 0.5 + 2.0 * (0.05 * 0.05 + 0.2 * 0.2);
    CHECK_REL(var, want, 1e-11);
    CHECK(mean == 0);
    /* two points: z = (0.4, -0.2): u = (-0.3/0.3, 0.4/0.5) = (-1, 0.8), r = sqrt(1.64) */
    double z[2] = {0.4, -0.2}, yz = 1.5;
    CHECK_ST(gp_set_data(g, 1, z, &yz), ST_OK);
    CHECK_ST(gp_factor(g), ST_OK);
    CHECK_ST(gp_predict(g, 1, x, &mean, &var), ST_OK);
    double r = sqrt(1.64 + 1e-12), s3 = sqrt(3.0);
    double kxz = 2.0 * (0.05 * 0.35 + 0.2 * -0.2) + 0.5 * (1 + s3 * r) * exp(-s3 * r);
    double kzz = 2.0 * (0.35 * 0.35 + 0.2 * 0.2) + 0.5 * (1 + s3 * 1e-6) * exp(-s3 * 1e-6);
    CHECK_REL(mean, kxz * yz / (kzz + 0.01 + 1e-4), 1e-12);
    gp_destroy(g);

    CHECK_ST(gp_create(GP_KERNEL_RBF, 1, &g), ST_OK);
    double thr[3] = {log(1.7), log(0.4), log(0.02)}, xr = 0.3, zr = -0.1;
    gp_set_theta(g, thr);
    CHECK_ST(gp_set_data(g, 1, &zr, &yz), ST_OK);
    CHECK_ST(gp_factor(g), ST_OK);
    CHECK_ST(gp_predict(g, 1, &xr, &mean, &var), ST_OK);
    double k = 1.7 * exp(-0.16 / (2 * 0.16));
    CHECK_REL(mean, k * yz / (1.7 + 0.02 + 1e-4), 1e-12);
    CHECK_REL(var, 1.7 - k * k / (1.7 + 0.02 + 1e-4), 1e-12);
    gp_destroy(g);
}

static void test_objective(gp_kernel kern, st_rng *r)
{
    const size_t d = kern == GP_KERNEL_RBF ? 1 : 3;
    const size_t nt = ref_nt(kern, d);
    double X[20 * 3], y[20], th[NT_MAX], c[3] = {0, 0, 0}, grad[NT_MAX];
    rand_data(r, 20, d, X, y);
    rand_theta(r, kern, d, th);
    gp *g;
    CHECK_ST(gp_create(kern, d, &g), ST_OK);

    /* n = 1 closed form: K = k(x,x) + noise + 1e-4 */
    CHECK_ST(gp_set_data(g, 1, X, y), ST_OK);
    double noise = exp(th[nt - 1]), eta = th[nt - 1];
    double s = ref_k(kern, d, th, c, X, X) + noise + 1e-4;
    double prior = eta + log(0.5) + 0.5 * LOG2PI + 2 * (eta - log(0.01)) * (eta - log(0.01));
    double want1 = 0.5 * y[0] * y[0] / s + 0.5 * log(s) + 0.5 * LOG2PI + prior;
    CHECK_REL(gp_objective(g, th, NULL, 0), want1, 1e-12);
    /* n = 2 closed form: 2x2 determinant and inverse */
    CHECK_ST(gp_set_data(g, 2, X, y), ST_OK);
    double a = ref_k(kern, d, th, c, X, X) + noise + 1e-4;
    double b = ref_k(kern, d, th, c, X, X + d);
    double e = ref_k(kern, d, th, c, X + d, X + d) + noise + 1e-4, det = a * e - b * b;
    double q = (e * y[0] * y[0] - 2 * b * y[0] * y[1] + a * y[1] * y[1]) / det;
    CHECK_REL(gp_objective(g, th, NULL, 0), 0.5 * q + 0.5 * log(det) + LOG2PI + prior, 1e-12);

    /* n = 20 against the GSL direct computation; value with and without the gradient */
    CHECK_ST(gp_set_data(g, 20, X, y), ST_OK);
    double want = ref_nll(kern, d, th, c, 20, X, y);
    CHECK_REL(gp_objective(g, th, NULL, 0), want, 1e-10);
    CHECK_REL(gp_objective(g, th, grad, 0), want, 1e-10);
    /* the map priors: Normal(0, 3^2) on log variances, Normal(log 0.3, 2^2) on log lengthscales
     * (RBF: Normal(0, 2^2)) */
    double pm = 0;
    size_t n_var = kern == GP_KERNEL_RBF ? 1 : 2;
    for (size_t j = 0; j + 1 < nt; j++) {
        double mu = j < n_var ? 0 : (kern == GP_KERNEL_RBF ? 0 : log(0.3));
        double sd = j < n_var ? 3 : 2;
        pm += 0.5 * (th[j] - mu) * (th[j] - mu) / (sd * sd) + log(sd) + 0.5 * LOG2PI;
    }
    CHECK_REL(gp_objective(g, th, NULL, 1), want + pm, 1e-10);

    /* gradient vs central differences, both modes */
    for (int map = 0; map <= 1; map++) {
        CHECK(isfinite(gp_objective(g, th, grad, map)));
        for (size_t j = 0; j < nt; j++) {
            double tp[NT_MAX], tm[NT_MAX], h = 1e-5;
            memcpy(tp, th, sizeof(tp));
            memcpy(tm, th, sizeof(tm));
            tp[j] += h;
            tm[j] -= h;
            double fd = (gp_objective(g, tp, NULL, map) - gp_objective(g, tm, NULL, map)) / (2 * h);
            CHECK_ABS(grad[j], fd, 1e-6 * (1 + fabs(fd)));
        }
    }
    /* not positive definite / invalid theta */
    double bad[NT_MAX];
    memcpy(bad, th, sizeof(bad));
    bad[0] = NAN;
    CHECK(gp_objective(g, bad, grad, 0) == INFINITY);
    gp_destroy(g);
}

/* ARD: y depends only on x_0; the fitted lengthscale of x_0 must be much shorter. */
static void test_fit_ard(st_rng *r)
{
    const size_t n = 60, d = 3;
    double X[60 * 3], y[60], th[6], th0[6];
    for (size_t i = 0; i < n * d; i++)
        X[i] = 2 * st_rng_uniform(r) - 1;
    for (size_t i = 0; i < n; i++)
        y[i] = sin(4 * X[i * d]) + 0.05 * st_rng_gaussian(r);
    gp *g;
    CHECK_ST(gp_create(GP_KERNEL_LIN_MATERN32, d, &g), ST_OK);
    CHECK_ST(gp_set_data(g, n, X, y), ST_OK);
    gp_fit_opts o = gp_fit_opts_default();
    gp_default_theta(g, o.init_lengthscale, th0);
    double f0 = gp_objective(g, th0, NULL, 1);
    CHECK_ST(gp_fit(g, &o, r), ST_OK);
    gp_get_theta(g, th);
    double f1 = gp_objective(g, th, NULL, 1);
    CHECK(f1 <= f0);
    CHECK(f1 < f0 - 1);
    CHECK(th[2] + log(5.0) < th[3]);
    CHECK(th[2] + log(5.0) < th[4]);
    if (getenv("GP_TEST_VERBOSE"))
        printf("ard: f0 %.4f f1 %.4f theta %.3f %.3f | %.3f %.3f %.3f | %.3f\n", f0, f1, th[0],
               th[1], th[2], th[3], th[4], th[5]);
    /* the fitted model predicts held-out points well */
    double xs[3] = {0.3, -0.7, 0.9}, mean, var;
    CHECK_ST(gp_predict(g, 1, xs, &mean, &var), ST_OK);
    CHECK_ABS(mean, sin(1.2), 0.1);
    gp_destroy(g);
}

/* Subset fitting: deterministic for a given rng state; the posterior uses all points. */
static void test_fit_subset(void)
{
    size_t n = getenv("ST_TEST_QUICK") ? 120 : 400, d = 2;
    double *X = malloc(n * d * sizeof(double)), *y = malloc(n * sizeof(double));
    st_rng *r;
    CHECK_ST(st_rng_create(7, &r), ST_OK);
    rand_data(r, n, d, X, y);
    double th[2][5];
    for (int k = 0; k < 2; k++) {
        st_rng *rf;
        CHECK_ST(st_rng_create(11, &rf), ST_OK);
        gp *g;
        CHECK_ST(gp_create(GP_KERNEL_LIN_MATERN32, d, &g), ST_OK);
        CHECK_ST(gp_set_data(g, n, X, y), ST_OK);
        gp_fit_opts o = gp_fit_opts_default();
        o.max_fit_points = n / 4;
        CHECK_ST(gp_fit(g, &o, rf), ST_OK);
        gp_get_theta(g, th[k]);
        CHECK(gp_n(g) == n);
        double mean;
        CHECK_ST(gp_predict(g, 1, X + 5 * d, &mean, NULL), ST_OK);
        CHECK_ABS(mean, y[5], 0.5);
        gp_destroy(g);
        st_rng_destroy(rf);
    }
    CHECK(memcmp(th[0], th[1], sizeof(th[0])) == 0);
    st_rng_destroy(r);
    free(X);
    free(y);
}

/* Faithful: noise start from the prior, 1000 Adam steps at lr 1e-4 move each log value <~0.1;
 * the same seed gives bit-identical theta. */
static void test_fit_faithful(gp_kernel kern)
{
    const size_t n = 25, d = kern == GP_KERNEL_RBF ? 1 : 2, nt = ref_nt(kern, d);
    double X[25 * 2], y[25], th[2][NT_MAX];
    st_rng *r;
    CHECK_ST(st_rng_create(3, &r), ST_OK);
    rand_data(r, n, d, X, y);
    st_rng_destroy(r);
    gp_fit_opts o = gp_fit_opts_default();
    o.faithful = 1;
    if (getenv("ST_TEST_QUICK"))
        o.adam_steps = 200;
    double max_move = 0;
    for (int k = 0; k < 2; k++) {
        st_rng *rf, *rn;
        CHECK_ST(st_rng_create(99, &rf), ST_OK);
        CHECK_ST(st_rng_create(99, &rn), ST_OK);
        double noise0 = log(0.01) + 0.5 * st_rng_gaussian(rn); /* the start gp_fit draws */
        gp *g;
        CHECK_ST(gp_create(kern, d, &g), ST_OK);
        CHECK_ST(gp_set_data(g, n, X, y), ST_OK);
        double th0[NT_MAX];
        gp_default_theta(g, o.init_lengthscale, th0);
        if (kern == GP_KERNEL_RBF)
            CHECK(th0[1] == 0);
        th0[nt - 1] = noise0;
        double f0 = gp_objective(g, th0, NULL, 0);
        CHECK_ST(gp_fit(g, &o, rf), ST_OK);
        gp_get_theta(g, th[k]);
        CHECK(gp_objective(g, th[k], NULL, 0) < f0);
        for (size_t j = 0; j < nt; j++) {
            double mv = fabs(th[k][j] - th0[j]);
            CHECK(mv <= 0.105 * (double)o.adam_steps / 1000); /* Adam: ~lr per step */
            if (getenv("GP_TEST_VERBOSE"))
                printf("faithful kern %d theta[%zu] moved %.5f\n", (int)kern, j, mv);
            max_move = mv > max_move ? mv : max_move;
        }
        double mean;
        CHECK_ST(gp_predict(g, 1, X, &mean, NULL), ST_OK);
        gp_destroy(g);
        st_rng_destroy(rf);
        st_rng_destroy(rn);
    }
    CHECK(max_move > 0.05 * (double)o.adam_steps / 1000); /* it does move */
    CHECK(memcmp(th[0], th[1], nt * sizeof(double)) == 0);
}

/* gp_append == set_data + gp_factor on the extended set with the same theta. */
static void test_append(gp_kernel kern, st_rng *r)
{
    const size_t n = 30, d = kern == GP_KERNEL_RBF ? 1 : 3, m = 9;
    double X[40 * 3], y[40], Xs[9 * 3], th[NT_MAX], m1[9], v1[9], m2[9], v2[9];
    rand_data(r, 40, d, X, y);
    for (size_t i = 0; i < m * d; i++)
        Xs[i] = 2 * st_rng_uniform(r) - 1;
    rand_theta(r, kern, d, th);
    gp *a, *b;
    CHECK_ST(gp_create(kern, d, &a), ST_OK);
    CHECK_ST(gp_create(kern, d, &b), ST_OK);
    gp_set_theta(a, th);
    gp_set_theta(b, th);
    /* start from a small set so appends cross the storage capacity */
    CHECK_ST(gp_set_data(a, 3, X, y), ST_OK);
    CHECK_ST(gp_factor(a), ST_OK);
    for (size_t i = 3; i < n; i++)
        CHECK_ST(gp_append(a, X + i * d, y[i]), ST_OK);
    /* a duplicate of an existing point (fantasy at a repeated suggestion) */
    CHECK_ST(gp_append(a, X + 4 * d, 0.3), ST_OK);
    memcpy(X + n * d, X + 4 * d, d * sizeof(double));
    y[n] = 0.3;
    CHECK(gp_n(a) == n + 1);
    CHECK_ST(gp_set_data(b, n + 1, X, y), ST_OK);
    CHECK_ST(gp_factor(b), ST_OK);
    CHECK_ST(gp_predict(a, m, Xs, m1, v1), ST_OK);
    CHECK_ST(gp_predict(b, m, Xs, m2, v2), ST_OK);
    for (size_t j = 0; j < m; j++) {
        CHECK_ABS(m1[j], m2[j], 1e-9 * (1 + fabs(m2[j])));
        CHECK_ABS(v1[j], v2[j], 1e-9);
    }
    /* append to an empty, factorised GP; and to an unfactorised one */
    gp_destroy(a);
    CHECK_ST(gp_create(kern, d, &a), ST_OK);
    gp_set_theta(a, th);
    CHECK_ST(gp_set_data(a, 0, NULL, NULL), ST_OK);
    CHECK_ST(gp_factor(a), ST_OK);
    CHECK_ST(gp_append(a, X, y[0]), ST_OK);
    CHECK_ST(gp_append(a, X + d, y[1]), ST_OK);
    gp_set_theta(a, th); /* invalidates: append then refactorises */
    CHECK_ST(gp_append(a, X + 2 * d, y[2]), ST_OK);
    CHECK_ST(gp_set_data(b, 3, X, y), ST_OK);
    CHECK_ST(gp_factor(b), ST_OK);
    CHECK_ST(gp_predict(a, m, Xs, m1, v1), ST_OK);
    CHECK_ST(gp_predict(b, m, Xs, m2, v2), ST_OK);
    for (size_t j = 0; j < m; j++) {
        CHECK_ABS(m1[j], m2[j], 1e-9 * (1 + fabs(m2[j])));
        CHECK_ABS(v1[j], v2[j], 1e-9);
    }
    double nan_x[3] = {NAN, 0, 0};
    CHECK_ST(gp_append(a, nan_x, 1.0), ST_EINVAL);
    CHECK(gp_n(a) == 3);
    gp_destroy(a);
    gp_destroy(b);
}

static void test_jitter_and_errors(void)
{
    gp *g;
    const size_t n = 40, d = 2;
    double X[40 * 2], y[40];
    for (size_t i = 0; i < n; i++) {
        X[2 * i] = 0.25; /* all inputs identical */
        X[2 * i + 1] = -0.5;
        y[i] = 0.1 * (double)(i % 3);
    }
    CHECK_ST(gp_create(GP_KERNEL_LIN_MATERN32, d, &g), ST_OK);
    CHECK_ST(gp_set_data(g, n, X, y), ST_OK);
    double th[5] = {12, 12, log(1e-3), log(1e-3), log(1e-6)}; /* huge variances, tiny noise */
    gp_set_theta(g, th);
    CHECK_ST(gp_factor(g), ST_OK);
    double mean, var;
    CHECK_ST(gp_predict(g, 1, X, &mean, &var), ST_OK);
    CHECK(isfinite(mean) && var >= 0);
    CHECK_REL(mean, 0.0975, 1e-3); /* the mean of the repeated targets (14 x 0, 13 x .1, .2) */
    /* the recommended and faithful fits also cope with duplicates */
    st_rng *r;
    CHECK_ST(st_rng_create(5, &r), ST_OK);
    gp_fit_opts o = gp_fit_opts_default();
    CHECK_ST(gp_fit(g, &o, r), ST_OK);
    CHECK_ST(gp_predict(g, 1, X, &mean, &var), ST_OK);
    CHECK(isfinite(mean) && isfinite(var));
    o.faithful = 1;
    o.adam_steps = 20;
    CHECK_ST(gp_fit(g, &o, r), ST_OK);

    /* NaN / inf data are refused; NaN theta does not factorise */
    y[3] = NAN;
    CHECK_ST(gp_set_data(g, n, X, y), ST_EINVAL);
    y[3] = 0;
    X[5] = INFINITY;
    CHECK_ST(gp_set_data(g, n, X, y), ST_EINVAL);
    X[5] = 0.25;
    CHECK_ST(gp_set_data(g, n, X, y), ST_OK);
    th[1] = NAN;
    gp_set_theta(g, th);
    CHECK_ST(gp_factor(g), ST_ENUMERIC);
    CHECK_ST(gp_predict(g, 1, X, &mean, &var), ST_ESTATE);
    /* empty fit */
    CHECK_ST(gp_set_data(g, 0, NULL, NULL), ST_OK);
    o.faithful = 0;
    CHECK_ST(gp_fit(g, &o, r), ST_EEMPTY);
    gp_destroy(g);
    gp_destroy(NULL);
    st_rng_destroy(r);

    gp *bad;
    CHECK_ST(gp_create(GP_KERNEL_RBF, 0, &bad), ST_EINVAL);
    CHECK(bad == NULL);
}

static void test_defaults(void)
{
    gp_fit_opts o = gp_fit_opts_default();
    CHECK(o.faithful == 0 && o.init_lengthscale == 0.3 && o.restarts == 2);
    CHECK(o.max_fit_points == 256 && o.adam_steps == 1000 && o.adam_lr == 1e-4);
    gp *g;
    CHECK_ST(gp_create(GP_KERNEL_LIN_MATERN32, 4, &g), ST_OK);
    CHECK(gp_n_theta(g) == 7 && gp_n(g) == 0);
    double th[7];
    gp_default_theta(g, 0.3, th);
    CHECK(th[0] == 0 && th[1] == 0 && th[2] == log(0.3) && th[5] == log(0.3));
    CHECK_REL(th[6], log(0.01), 1e-15);
    gp_destroy(g);
    CHECK_ST(gp_create(GP_KERNEL_RBF, 1, &g), ST_OK);
    CHECK(gp_n_theta(g) == 3);
    gp_default_theta(g, 0.3, th);
    CHECK(th[0] == 0 && th[1] == 0);
    gp_destroy(g);
}

int main(void)
{
    gsl_set_error_handler_off();
    st_rng *r;
    if (st_rng_create(12345, &r) != ST_OK)
        return 1;
    test_defaults();
    test_kernel_values();
    for (int k = 0; k < 2; k++) {
        gp_kernel kern = k ? GP_KERNEL_RBF : GP_KERNEL_LIN_MATERN32;
        test_posterior(kern, r);
        test_objective(kern, r);
        test_append(kern, r);
        test_fit_faithful(kern);
        test_variance_bound(kern, r, 0);
        test_variance_bound(kern, r, 5);
        test_variance_bound(kern, r, 10);
        test_variance_bound(kern, r, 400);
    }
    test_cross_exp(r);
    test_fit_ard(r);
    test_fit_subset();
    test_jitter_and_errors();
    st_rng_destroy(r);
    return check_summary("carbs.gp");
}
