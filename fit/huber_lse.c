/*
 * huber_lse.c — the grid fit's hot path: the summed Huber loss of the Chinchilla log-sum-exp law
 * on log residuals, sum_i w_i Huber_delta(LSE(a - alpha ln N_i, b - beta ln D_i, e) - ln L_i),
 * with its gradient, four rows at a time in GCC vector extensions (an AVX2 clone is picked at
 * load time on x86-64). exp and log are our own polynomials, within 2 ulp of libm's on the
 * ranges this kernel feeds them (checked on 4 million points); results differ from the generic
 * loop's in the last bits only, and do not depend on the clone or the thread count (no FMA).
 * Not here: other laws and objectives (objective.c's generic loop, law.c). Depends on nothing
 * but the compiler's vector extensions (GCC; Clang has them too).
 */
#include "fit/fit_int.h"

#include <stdint.h>

/* The helpers below take and return 32-byte vectors but are always inlined, so no vector
 * crosses a call and GCC's note that the AVX calling convention differs does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"

typedef double v4 __attribute__((vector_size(32)));
typedef int64_t v4l __attribute__((vector_size(32)));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__)
#define FIT_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FIT_CLONES
#endif

#define INLINE static inline __attribute__((always_inline))

INLINE v4 sel(v4l mask, v4 a, v4 b) /* mask ? a : b, lane-wise */
{
    return (v4)((mask & (v4l)a) | (~mask & (v4l)b));
}

INLINE v4 vmax(v4 a, v4 b)
{
    return sel(a > b, a, b);
}

INLINE v4 splat(double x)
{
    return (v4){x, x, x, x};
}

/* exp(x) for x <= 700 (LSE's shifted terms). Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2,
 * then the degree-13 Taylor polynomial of exp(r) (truncation < 5e-18 relative) and 2^k built
 * in the exponent bits. x below -708 is raised to -708 (exp ~ 3e-308, negligible next to the
 * largest term, 1); NaN stays NaN. */
INLINE v4 vexp(v4 x)
{
    const double log2e = 0x1.71547652b82fep+0, ln2_hi = 0x1.62e42p-1,
                 ln2_lo = 0x1.fdf473de6af28p-22, shift = 0x1.8p52;
    x = sel(x < splat(-708.0), splat(-708.0), x);
    v4 z = x * log2e + shift; /* round(x / ln2) in the low mantissa bits */
    v4 kd = z - shift;
    v4 r = (x - kd * ln2_hi) - kd * ln2_lo;
    /* sum_{j<=13} r^j/j! by Estrin's scheme: short dependency chains, so that the
     * exponentials of a row block and of the next block overlap */
    v4 r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    v4 q0 = 1.0 + r, q1 = 0.5 + r * (1.0 / 6), q2 = 1.0 / 24 + r * (1.0 / 120),
       q3 = 1.0 / 720 + r * (1.0 / 5040), q4 = 1.0 / 40320 + r * (1.0 / 362880),
       q5 = 1.0 / 3628800 + r * (1.0 / 39916800), q6 = 1.0 / 479001600 + r * (1.0 / 6227020800);
    v4 u0 = q0 + q1 * r2, u1 = q2 + q3 * r2, u2 = q4 + q5 * r2;
    v4 p = (u0 + u1 * r4) + (u2 + q6 * r4) * r8;
    v4l k = (v4l)z - (v4l)splat(shift);
    v4 scale = (v4)((k + 1023) << 52);
    return p * scale;
}

/* log(s) for s >= 1 (1 plus the other LSE terms, each scaled by the largest or by exp(e)):
 * s = 2^k m with m in [sqrt(1/2), sqrt(2)) read from the bits, and log m = 2 atanh(f),
 * f = (m - 1)/(m + 1), |f| <= 0.1716, as its series to f^21 (truncation < 1e-18 relative).
 * NaN and infinity give NaN. */
INLINE v4 vlog1(v4 s)
{
    const double ln2_hi = 0x1.62e42p-1, ln2_lo = 0x1.fdf473de6af28p-22, shift = 0x1.8p52;
    const int64_t mant = ((int64_t)1 << 52) - 1, one = (int64_t)1023 << 52;
    v4l bits = (v4l)s;
    v4l ke = (bits >> 52) - 1023;     /* s >= 1: no sign bit, no subnormals */
    v4 m = (v4)((bits & mant) | one); /* [1, 2) */
    v4l big = m >= splat(0x1.6a09e667f3bcdp+0);
    m = sel(big, m * 0.5, m);
    v4 k = (v4)(ke + (v4l)splat(shift)) - shift; /* small integers, exactly */
    k = sel(big, k + 1.0, k);
    v4 f = (m - 1.0) / (m + 1.0), z = f * f;
    /* log m = 2f + 2f z P(z), P = sum_{j=1..10} z^(j-1)/(2j+1) by Estrin's scheme; the
     * leading 2f is exact, so the rounding of the tail hardly shows */
    v4 z2 = z * z, z4 = z2 * z2, z8 = z4 * z4;
    v4 q0 = 1.0 / 3 + z * (1.0 / 5), q1 = 1.0 / 7 + z * (1.0 / 9), q2 = 1.0 / 11 + z * (1.0 / 13),
       q3 = 1.0 / 15 + z * (1.0 / 17), q4 = 1.0 / 19 + z * (1.0 / 21);
    v4 u0 = q0 + q1 * z2, u1 = q2 + q3 * z2;
    v4 pz = (u0 + u1 * z4) + q4 * z8;
    v4 lm = 2 * f + 2 * f * (z * pz);
    return (k * ln2_hi + (k * ln2_lo + lm)) + (s - s); /* s - s: NaN for NaN or inf */
}

FIT_CLONES
double fit_chin_huber_log(const fit_prob *p, const double *th, double *g)
{
    const double a = th[0], b = th[1], e = th[2], al = th[3], be = th[4], dl = p->delta;
    const double *lx = p->lx, *ly = p->ly, *w = p->w;
    const size_t *idx = p->idx, n = p->n;
    v4 f = splat(0), ws = splat(0), g0 = f, g1 = f, g2 = f, g3 = f, g4 = f;
    for (size_t k = 0; k < n; k += 4) {
        /* rows k..k+3; past the end, row k again with weight 0 */
        size_t i0 = k, i1 = k + 1 < n ? k + 1 : k, i2 = k + 2 < n ? k + 2 : k,
               i3 = k + 3 < n ? k + 3 : k;
        if (idx) {
            i0 = idx[i0], i1 = idx[i1], i2 = idx[i2], i3 = idx[i3];
        }
        v4 ln_n = {lx[2 * i0], lx[2 * i1], lx[2 * i2], lx[2 * i3]};
        v4 ln_d = {lx[2 * i0 + 1], lx[2 * i1 + 1], lx[2 * i2 + 1], lx[2 * i3 + 1]};
        v4 ln_l = {ly[i0], ly[i1], ly[i2], ly[i3]};
        v4 wt = {w[i0], k + 1 < n ? w[i1] : 0, k + 2 < n ? w[i2] : 0, k + 3 < n ? w[i3] : 0};

        /* LSE(t0, t1, t2) = m + log(sum exp(t - m)), with e0..e2 / s the softmax weights
         * (Hoffmann §D.2). Shifting by m = e saves an exponential (exp(e - e) = 1) and is
         * safe while t0 - e and t1 - e stay below 700; otherwise shift each row by its
         * largest term. */
        v4 t0 = a - al * ln_n, t1 = b - be * ln_d, t2 = splat(e);
        v4 d0 = t0 - t2, d1 = t1 - t2, m, e0, e1, e2;
        v4l ok = vmax(d0, d1) <= splat(700.0);
        if (ok[0] & ok[1] & ok[2] & ok[3]) {
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
        v4 s = e0 + e1 + e2, inv = 1.0 / s;
        v4 r = (m + vlog1(s)) - ln_l;

        /* Huber_delta(r) = c (r - c/2), Huber' = c = clamp(r, -delta, delta) */
        v4 c = sel(r < splat(-dl), splat(-dl), sel(r > splat(dl), splat(dl), r));
        f += wt * (c * (r - 0.5 * c));
        ws += wt;
        v4 cw = wt * c * inv;
        g0 += cw * e0;
        g1 += cw * e1;
        g2 += cw * e2;
        g3 -= cw * e0 * ln_n;
        g4 -= cw * e1 * ln_d;
    }
    double wsum = (ws[0] + ws[1]) + (ws[2] + ws[3]);
    double sc = p->mean && wsum > 0 ? wsum : 1;
    if (g) {
        g[0] = ((g0[0] + g0[1]) + (g0[2] + g0[3])) / sc;
        g[1] = ((g1[0] + g1[1]) + (g1[2] + g1[3])) / sc;
        g[2] = ((g2[0] + g2[1]) + (g2[2] + g2[3])) / sc;
        g[3] = ((g3[0] + g3[1]) + (g3[2] + g3[3])) / sc;
        g[4] = ((g4[0] + g4[1]) + (g4[2] + g4[3])) / sc;
    }
    return ((f[0] + f[1]) + (f[2] + f[3])) / sc;
}
