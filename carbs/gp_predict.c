/*
 * gp_predict.c — the GP's posterior at test points (spec carbs.md §4.2), from gp.c's factor L
 * and alpha = K^-1 y: the mean by BLAS in blocks of GP_PRED_BLOCK points (the cross-kernel's
 * entries in gp_cross.c), with the latent variance (gp_priv_predict, a triangular solve) or
 * instead an upper bound of it from each point's GP_NB_PTS nearest training points
 * (gp_priv_predict_bound: O(s^3) per point for s <= GP_NB_PTS, against the solve's O(n^2)).
 * Not here: the kernels and the factorisation (gp.c), the public gp_predict calls on callers'
 * inputs (gp_onehot.c).
 */
#include "carbs/gp_int.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>

#define GP_PRED_BLOCK  256  /* test points per BLAS block in gp_predict */
#define GP_NB_PTS      8    /* nearest points behind gp_predict_bound's variance bound */
#define GP_BOUND_SLACK 1e-6 /* its allowance for rounding, relative to k(x,x) */

/* The m points X (row-major m x d) as d rows of m: XT, and centred (x - c): XcT. */
static void transpose_points(const gp *g, size_t m, const double *X, double *XT, double *XcT)
{
    size_t d = g->d;
    for (size_t a = 0; a < m; a++)
        for (size_t i = 0; i < d; i++) {
            XT[i * m + a] = X[a * d + i];
            XcT[i * m + a] = X[a * d + i] - g->c[i];
        }
}

/* The GP_NB_PTS nearest training points of one test point (smallest scaled r^2), kept while
 * its column of K* is built: idx/r2 hold cnt <= GP_NB_PTS entries, r2[worst] the largest. */
typedef struct nearest {
    size_t idx[GP_NB_PTS];
    double r2[GP_NB_PTS];
    size_t cnt, worst;
} nearest;

static void nearest_add(nearest *nb, size_t i, double r2)
{
    if (nb->cnt < GP_NB_PTS) {
        nb->idx[nb->cnt] = i;
        nb->r2[nb->cnt] = r2;
        if (r2 > nb->r2[nb->worst])
            nb->worst = nb->cnt;
        nb->cnt++;
        return;
    }
    if (!(r2 < nb->r2[nb->worst]))
        return;
    nb->idx[nb->worst] = i;
    nb->r2[nb->worst] = r2;
    for (size_t t = 0; t < GP_NB_PTS; t++)
        if (nb->r2[t] > nb->r2[nb->worst])
            nb->worst = t;
}

/*
 * An upper bound of the latent variance gp_priv_predict returns at x: the posterior variance
 * given only the points nb (at the same theta, noise and jitter), since conditioning on more
 * observations never raises a Gaussian's variance (Rasmussen & Williams 2006, eq. 2.26: the
 * full variance is this one minus a Schur complement's quadratic form, >= 0), plus
 * GP_BOUND_SLACK k(x,x) for the rounding of the full solve (at most about n eps cond(L)
 * relative to k(x,x): < 1e-9 for n = 1000 and the smallest noise + jitter, 1e-4). O(s^3) for s
 * = nb->cnt points, against the full solve's O(n^2). The prior k(x,x) when the s x s matrix
 * does not factorise. A: s*s + s doubles of workspace.
 */
static double var_bound(const gp *g, const gp_hyp *h, const nearest *nb, const double *x, double *A)
{
    size_t s = nb->cnt, d = g->d;
    double kxx = gp_kern(g, h, x, x), *b = A + s * s, q = 0;
    /* A = L_S, the Cholesky factor of K_SS + (noise + 1e-4 + jit) I, row by row (s <= GP_NB_PTS, so
     * plain loops), and b = L_S^-1 k(X_S, x) alongside: q = |b|^2 */
    for (size_t a = 0; a < s; a++) {
        const double *xa = g->X + nb->idx[a] * d;
        double ba = gp_kern(g, h, xa, x);
        for (size_t c = 0; c <= a; c++) {
            double v = gp_kern(g, h, xa, g->X + nb->idx[c] * d);
            if (c == a)
                v += h->noise + GP_JITTER + g->jit;
            for (size_t t = 0; t < c; t++)
                v -= A[a * s + t] * A[c * s + t];
            if (c < a) {
                A[a * s + c] = v / A[c * s + c];
            } else {
                if (!(v > 0))
                    return kxx + GP_BOUND_SLACK * kxx;
                A[a * s + a] = sqrt(v);
            }
        }
        for (size_t t = 0; t < a; t++)
            ba -= A[a * s + t] * b[t];
        b[a] = ba / A[a * s + a];
        q += b[a] * b[a];
    }
    double v = kxx - q;
    return (v > 0 ? v : 0) + GP_BOUND_SLACK * kxx;
}

/* Mean at m points; with var the latent variance (the full solve), with var_ub (and var NULL)
 * var_bound's upper bound of it instead. */
static st_status predict(gp *g, size_t m, const double *Xs, double *mean, double *var,
                         double *var_ub)
{
    if (!g->factored)
        return ST_ESTATE;
    size_t n = g->n, d = g->d, mb = GP_PRED_BLOCK;
    int mat = g->kernel == GP_KERNEL_LIN_MATERN32;
    if (n > g->n_ks || !g->pw) {
        /* room for 1/8 more points: a kept GP (gpcache.c) grows by a point or two per
         * suggestion, and a fresh 4 MB block each time costs its page faults */
        size_t nn = n > g->n_ks ? n + n / 8 : g->n_ks;
        size_t nbw = GP_NB_PTS * (GP_NB_PTS + 1);
        double *w =
            malloc((2 * nn * mb + 2 * nn * d + nn + 2 * d * mb + mb + nbw) * sizeof(double));
        if (!w)
            return ST_ENOMEM;
        free(g->pw);
        g->pw = w;
        g->n_ks = nn;
    }
    double *Ks = g->pw, *Ls = Ks + n * mb, *XT = Ls + n * mb, *XcT = XT + n * d;
    double *zc = XcT + n * d, *Aw = zc + d;
    int ni = (int)n, bi;
    gp_hyp h;
    gp_hyp_from_theta(g, g->theta, g->il, &h);
    transpose_points(g, n, g->X, XT, XcT);
    for (size_t j0 = 0; j0 < m; j0 += mb) {
        size_t bm = m - j0 < mb ? m - j0 : mb;
        const double *xb = Xs + j0 * d;
        bi = (int)bm;
        if (n == 0) {
            for (size_t j = 0; j < bm; j++) {
                mean[j0 + j] = 0;
                if (var)
                    var[j0 + j] = gp_kern(g, &h, xb + j * d, xb + j * d);
                if (var_ub)
                    var_ub[j0 + j] = gp_kern(g, &h, xb + j * d, xb + j * d);
            }
            continue;
        }
        /* K* (n x bm, column-major), column j = k(X, x*_j): kern's arithmetic, entry for entry,
         * in gp_cross.c's vectorised loops (only its exp differs from libm's, by an ulp) */
        for (size_t j = 0; j < bm; j++) {
            double *col = Ks + j * n, *lin = mat ? Ls + j * n : NULL;
            const double *z = xb + j * d;
            for (size_t i = 0; i < d; i++)
                zc[i] = z[i] - g->c[i];
            gp_cross_dist(n, d, XT, XcT, z, zc, h.il, mat ? GP_R_EPS : 0.0, col, lin);
            if (var_ub) {
                nearest nb = {.cnt = 0, .worst = 0};
                for (size_t i = 0; i < n; i++)
                    nearest_add(&nb, i, col[i]);
                var_ub[j0 + j] = var_bound(g, &h, &nb, z, Aw);
            }
            if (mat)
                gp_cross_matern(n, col, lin, h.sl2, h.sm2);
            else
                gp_cross_rbf(n, col, h.sm2);
        }
        /* mean = K*^T alpha */
        cblas_dgemv(CblasColMajor, CblasTrans, ni, bi, 1.0, Ks, ni, g->alpha, 1, 0.0, mean + j0, 1);
        if (!var)
            continue;
        /* V = L^-1 K*; var_j = k(x*_j, x*_j) - |V_j|^2, clamped at 0 */
        cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, ni, bi, 1.0,
                    g->L, (int)g->cap, Ks, ni);
        for (size_t j = 0; j < bm; j++) {
            const double *col = Ks + j * n;
            double q = cblas_ddot(ni, col, 1, col, 1);
            double v = gp_kern(g, &h, xb + j * d, xb + j * d) - q;
            var[j0 + j] = v > 0 ? v : 0;
        }
    }
    return ST_OK;
}

st_status gp_priv_predict(gp *g, size_t m, const double *Xs, double *mean, double *var)
{
    return predict(g, m, Xs, mean, var, NULL);
}

st_status gp_priv_predict_bound(gp *g, size_t m, const double *Xs, double *mean, double *var_ub)
{
    return predict(g, m, Xs, mean, NULL, var_ub);
}
