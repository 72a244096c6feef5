/*
 * huber_lse.c — the grid fit's hot path: the summed Huber loss of the Chinchilla log-sum-exp law
 * on log residuals, sum_i w_i Huber_delta(LSE(a - alpha ln N_i, b - beta ln D_i, e) - ln L_i),
 * with its gradient, W = 8 rows at a time in GCC vector extensions (AVX-512 and AVX2 clones are
 * picked at load time on x86-64). exp and log are our own polynomials, within 2 ulp of libm's on
 * the ranges this kernel feeds them (checked on 4 million points); results differ from the generic
 * loop's in the last bits only, and do not depend on the clone or the thread count (no FMA).
 * Not here: other laws and objectives (objective.c's generic loop, law.c). Depends on nothing
 * but the compiler's vector extensions (GCC; Clang has them too).
 */
#include "fit/fit_int.h"

#include <stdint.h>
#include <string.h>

/* The helpers below take and return wide vectors but are always inlined, so no vector
 * crosses a call and GCC's note that the AVX calling convention differs does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"

#define W 8 /* rows per block: one AVX-512 register, two AVX2 ones (more overlap), four SSE2 */
typedef double vd __attribute__((vector_size(8 * W)));
typedef int64_t vl __attribute__((vector_size(8 * W)));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__)
#define FIT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define FIT_CLONES
#endif

#define INLINE static inline __attribute__((always_inline))

INLINE vd sel(vl mask, vd a, vd b) /* mask ? a : b, lane-wise */
{
    return (vd)((mask & (vl)a) | (~mask & (vl)b));
}

INLINE vd vmax(vd a, vd b)
{
    return sel(a > b, a, b);
}

INLINE vd splat(double x)
{
    return (vd){0} + x;
}

INLINE double hsum(vd v) /* a fixed pairwise order, the same for every clone */
{
    for (size_t h = W / 2; h >= 1; h /= 2)
        for (size_t j = 0; j < h; j++)
            v[j] += v[j + h];
    return v[0];
}

/* exp(x) for x <= 700 (LSE's shifted terms). Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2,
 * then the degree-13 Taylor polynomial of exp(r) (truncation < 5e-18 relative) and 2^k built
 * in the exponent bits. x below -708 is raised to -708 (exp ~ 3e-308, negligible next to the
 * largest term, 1); NaN stays NaN. */
INLINE vd vexp(vd x)
{
    const double log2e = 0x1.71547652b82fep+0, ln2_hi = 0x1.62e42p-1,
                 ln2_lo = 0x1.fdf473de6af28p-22, shift = 0x1.8p52;
    x = sel(x < splat(-708.0), splat(-708.0), x);
    vd z = x * log2e + shift; /* round(x / ln2) in the low mantissa bits */
    vd kd = z - shift;
    vd r = (x - kd * ln2_hi) - kd * ln2_lo;
    /* sum_{j<=13} r^j/j! by Estrin's scheme: short dependency chains, so that the
     * exponentials of a row block and of the next block overlap */
    vd r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    vd q0 = 1.0 + r, q1 = 0.5 + r * (1.0 / 6), q2 = 1.0 / 24 + r * (1.0 / 120),
       q3 = 1.0 / 720 + r * (1.0 / 5040), q4 = 1.0 / 40320 + r * (1.0 / 362880),
       q5 = 1.0 / 3628800 + r * (1.0 / 39916800), q6 = 1.0 / 479001600 + r * (1.0 / 6227020800);
    vd u0 = q0 + q1 * r2, u1 = q2 + q3 * r2, u2 = q4 + q5 * r2;
    vd p = (u0 + u1 * r4) + (u2 + q6 * r4) * r8;
    vl k = (vl)z - (vl)splat(shift);
    vd scale = (vd)((k + 1023) << 52);
    return p * scale;
}

/* log(s) for s >= 1 (1 plus the other LSE terms, each scaled by the largest or by exp(e)):
 * s = 2^k m with m in [sqrt(1/2), sqrt(2)) read from the bits, and log m = 2 atanh(f),
 * f = (m - 1)/(m + 1), |f| <= 0.1716, as its series to f^21 (truncation < 1e-18 relative).
 * NaN and infinity give NaN. */
INLINE vd vlog1(vd s)
{
    const double ln2_hi = 0x1.62e42p-1, ln2_lo = 0x1.fdf473de6af28p-22, shift = 0x1.8p52;
    const int64_t mant = ((int64_t)1 << 52) - 1, one = (int64_t)1023 << 52;
    vl bits = (vl)s;
    vl ke = (bits >> 52) - 1023;      /* s >= 1: no sign bit, no subnormals */
    vd m = (vd)((bits & mant) | one); /* [1, 2) */
    vl big = m >= splat(0x1.6a09e667f3bcdp+0);
    m = sel(big, m * 0.5, m);
    vd k = (vd)(ke + (vl)splat(shift)) - shift; /* small integers, exactly */
    k = sel(big, k + 1.0, k);
    vd f = (m - 1.0) / (m + 1.0), z = f * f;
    /* log m = 2f + 2f z P(z), P = sum_{j=1..10} z^(j-1)/(2j+1) by Estrin's scheme; the
     * leading 2f is exact, so the rounding of the tail hardly shows */
    vd z2 = z * z, z4 = z2 * z2, z8 = z4 * z4;
    vd q0 = 1.0 / 3 + z * (1.0 / 5), q1 = 1.0 / 7 + z * (1.0 / 9), q2 = 1.0 / 11 + z * (1.0 / 13),
       q3 = 1.0 / 15 + z * (1.0 / 17), q4 = 1.0 / 19 + z * (1.0 / 21);
    vd u0 = q0 + q1 * z2, u1 = q2 + q3 * z2;
    vd pz = (u0 + u1 * z4) + q4 * z8;
    vd lm = 2 * f + 2 * f * (z * pz);
    return (k * ln2_hi + (k * ln2_lo + lm)) + (s - s); /* s - s: NaN for NaN or inf */
}

FIT_CLONES
double fit_chin_huber_log(const fit_prob *p, const double *th, double *g)
{
    const double a = th[0], b = th[1], e = th[2], al = th[3], be = th[4], dl = p->delta;
    const double *lx = p->lx, *lxt = p->lxt, *ly = p->ly, *w = p->w;
    const size_t *idx = p->idx, n = p->n;
    vd f = splat(0), ws = splat(0), g0 = f, g1 = f, g2 = f, g3 = f, g4 = f;
    for (size_t k = 0; k < n; k += W) {
        /* rows k..k+W-1: contiguous when they can be, else one lane at a time (a bootstrap
         * resample, the last block); past the end, row k again with weight 0 */
        vd ln_n = splat(0), ln_d = ln_n, ln_l = ln_n, wt = ln_n;
        if (!idx && lxt && k + W <= n) {
            memcpy(&ln_n, lxt + k, sizeof(vd));
            memcpy(&ln_d, lxt + n + k, sizeof(vd));
            memcpy(&ln_l, ly + k, sizeof(vd));
            memcpy(&wt, w + k, sizeof(vd));
        } else {
            for (size_t j = 0; j < W; j++) {
                size_t i = k + j < n ? k + j : k;
                i = idx ? idx[i] : i;
                ln_n[j] = lx[2 * i];
                ln_d[j] = lx[2 * i + 1];
                ln_l[j] = ly[i];
                wt[j] = k + j < n ? w[i] : 0;
            }
        }

        /* LSE(t0, t1, t2) = m + log(sum exp(t - m)), with e0..e2 / s the softmax weights
         * (Hoffmann §D.2). Shifting by m = e saves an exponential (exp(e - e) = 1) and is
         * safe while t0 - e and t1 - e stay below 700; otherwise shift each row by its
         * largest term. */
        vd t0 = a - al * ln_n, t1 = b - be * ln_d, t2 = splat(e);
        vd d0 = t0 - t2, d1 = t1 - t2, m, e0, e1, e2;
        vl ok = vmax(d0, d1) <= splat(700.0);
        int64_t all = -1;
        for (size_t j = 0; j < W; j++)
            all &= ok[j];
        if (all) {
            m = t2;
            e0 = vexp(d0);
            e1 = vexp(d1);
            e2 = splat(1.0);
        } else {
            m = vmax(vmax(t0, t1), t2);
            e0 = vexp(t0 - m);
            e1 = vexp(t1 - m);
            e2 = vexp(t2 - m);
        }
        vd s = e0 + e1 + e2, inv = 1.0 / s;
        vd r = (m + vlog1(s)) - ln_l;

        /* Huber_delta(r) = c (r - c/2), Huber' = c = clamp(r, -delta, delta) */
        vd c = sel(r < splat(-dl), splat(-dl), sel(r > splat(dl), splat(dl), r));
        f += wt * (c * (r - 0.5 * c));
        ws += wt;
        vd cw = wt * c * inv;
        g0 += cw * e0;
        g1 += cw * e1;
        g2 += cw * e2;
        g3 -= cw * e0 * ln_n;
        g4 -= cw * e1 * ln_d;
    }
    double wsum = hsum(ws);
    double sc = p->mean && wsum > 0 ? wsum : 1;
    if (g) {
        g[0] = hsum(g0) / sc;
        g[1] = hsum(g1) / sc;
        g[2] = hsum(g2) / sc;
        g[3] = hsum(g3) / sc;
        g[4] = hsum(g4) / sc;
    }
    return hsum(f) / sc;
}
