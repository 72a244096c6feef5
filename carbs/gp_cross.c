/*
 * gp_cross.c — the per-entry step of a GP's cross-kernel K* (gp_predict.c, predict): from the
 * scaled squared distances r^2 (one column, n entries) to Matern-3/2 (+ linear) or RBF kernel
 * values, in loops the compiler vectorises (built with -O3 -fno-math-errno, and cloned for AVX2,
 * where the same IEEE operations give the same bits: no FMA contraction under -std=c11). The
 * exponential is cross_exp's own (Cody-Waite reduction and a degree-13 Taylor polynomial,
 * within 1e-15 relative of libm's exp), since libm's is a scalar call; the rest is the scalar
 * formula of gp_kern (gp_int.h) operation for operation. Not here: the kernels of K itself.
 */
#include "carbs/gp_int.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define CX_SQRT3   1.7320508075688772
#define CX_R_EPS   1e-12                      /* gp_int.h's GP_R_EPS */
#define CX_INV_LN2 1.4426950408889634         /* 1 / ln 2 */
#define CX_LN2_HI  6.93147180369123816490e-01 /* ln 2, 32 significant bits: k LN2_HI is exact */
#define CX_LN2_LO  1.90821492927058770002e-10 /* ln 2 - LN2_HI */
#define CX_SHIFT   0x1.8p52 /* adding it rounds to an integer, held in the low bits */
#define CX_X_MIN   (-700.0) /* below: 0 (libm: < 1e-304, subnormal from -708) */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__)
#define CX_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CX_CLONES
#endif

/* exp(x) for x <= 0: x = k ln2 + r, |r| <= ln2 / 2, exp(r) by Horner on its Taylor series to
 * r^13 (truncation < 5e-18 relative), times 2^k built in the exponent bits (-1010 <= k <= 0). */
static inline double cross_exp(double x)
{
    double xc = x < CX_X_MIN ? CX_X_MIN : x;
    double kd = xc * CX_INV_LN2 + CX_SHIFT;
    uint64_t ki;
    memcpy(&ki, &kd, sizeof(ki));
    kd -= CX_SHIFT;
    double r = (xc - kd * CX_LN2_HI) - kd * CX_LN2_LO;
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    uint64_t sb = (ki << 52) + ((uint64_t)1023 << 52);
    double sc;
    memcpy(&sc, &sb, sizeof(sc));
    return x < CX_X_MIN ? 0.0 : sc * p;
}

CX_CLONES void gp_cross_exp(size_t n, const double *restrict x, double *restrict y)
{
    for (size_t i = 0; i < n; i++)
        y[i] = cross_exp(x[i]);
}

/* r2 = r0 + sum_i ((x_i - z_i) il_i)^2 and lin = sum_i (x_i - c_i)(z_i - c_i) for the n
 * points XT, XcT (d rows of n: x and x - c) against one point z (zc = z - c); lin may be NULL.
 * The sums run over i in gp_kern's order from its starting values, so they are gp_kern's bits. */
CX_CLONES void gp_cross_dist(size_t n, size_t d, const double *restrict XT,
                             const double *restrict XcT, const double *z, const double *zc,
                             const double *il, double r0, double *restrict r2, double *restrict lin)
{
    for (size_t a = 0; a < n; a++)
        r2[a] = r0;
    for (size_t i = 0; i < d; i++) {
        const double *x = XT + i * n;
        double zi = z[i], li = il[i];
        for (size_t a = 0; a < n; a++) {
            double u = (x[a] - zi) * li;
            r2[a] += u * u;
        }
    }
    if (!lin)
        return;
    for (size_t a = 0; a < n; a++)
        lin[a] = 0;
    for (size_t i = 0; i < d; i++) {
        const double *x = XcT + i * n;
        double w = zc[i];
        for (size_t a = 0; a < n; a++)
            lin[a] += x[a] * w;
    }
}

/* col: r^2 (with gp_kern's 1e-12) in, k = sl2 lin + sm2 (1 + sr) e^-sr out, sr = sqrt3 r */
CX_CLONES void gp_cross_matern(size_t n, double *restrict col, const double *restrict lin,
                               double sl2, double sm2)
{
    for (size_t i = 0; i < n; i++) {
        double sr = CX_SQRT3 * sqrt(col[i]);
        col[i] = sl2 * lin[i] + sm2 * (1 + sr) * cross_exp(-sr);
    }
}

/* col: r^2 in, k = s2 e^(-r^2/2) out */
CX_CLONES void gp_cross_rbf(size_t n, double *col, double s2)
{
    for (size_t i = 0; i < n; i++)
        col[i] = s2 * cross_exp(-0.5 * col[i]);
}
