/*
 * gp_int.h — the GP handle's fields and its kernel k, shared by gp.c (kernels, factorisation,
 * fitting), gp_predict.c (the posterior at test points), gp_cross.c (the cross-kernel's loops)
 * and gp_onehot.c (the one-hot input map). Private to carbs/.
 */
#ifndef CARBS_GP_INT_H
#define CARBS_GP_INT_H

#include "carbs/carbs_int.h"

#include <math.h>

/* what this header declares is internal: hidden from libscaletune.so's exports (the static
 * library and the tests still link it); common/scaletune.map exports the public API */
#pragma GCC visibility push(hidden)

struct gp {
    gp_kernel kernel;
    size_t d;        /* input dimension */
    size_t n_theta;  /* d + 3 (LIN_MATERN32) or 3 (RBF) */
    size_t n, cap;   /* points, allocated points */
    double *X;       /* cap*d, row-major */
    double *y;       /* cap */
    double *c;       /* d: linear-kernel centre */
    double *theta;   /* n_theta log hyperparameters */
    double prior_ls; /* log lengthscale the MAP prior is centred on */
    /* factorisation at theta */
    int factored;
    double jit;    /* extra diagonal jitter the last factorisation needed (0 usually) */
    double *L;     /* cap*cap column-major, lower Cholesky factor of K (n x n used) */
    double *alpha; /* cap: K^-1 y */
    double *il;    /* d: inverse lengthscales at theta */
    /* workspaces, grown on demand and kept */
    double *ws;           /* objective: one block holding the following (see ensure_work) */
    double *Kw, *Ew, *Mw; /* n_w x n_w: K then W then M; exponential factors; Matern part */
    double *Xt, *Xc, *Pw; /* d x n_w: scaled inputs, centred inputs, products with W or M */
    double *aw, *qw, *sw; /* n_w: alpha, |xt_a|^2, rowsums of M */
    double *ilw;          /* d inverse lengthscales */
    size_t n_w;           /* capacity of the objective workspace (points) */
    double *pw;           /* predict: one block (see gp_predict.c) */
    size_t n_ks;          /* capacity of pw (training points) */
    double *v;            /* append: cap */
    /* one-hot input map (gp_set_levels): callers give d_in values per point */
    size_t d_in;           /* input dimension callers use (d when levels is NULL) */
    size_t *levels;        /* d_in: 0 for an ordered input, K for a categorical one; NULL: none */
    unsigned char *onehot; /* d: 1 for a one-hot column (its lengthscale starts, and its prior
                              is centred, GP_ONEHOT_LS_FACTOR times longer); NULL: none */
};

#define GP_ONEHOT_LS_FACTOR                                                                        \
    10.0 /* 0.3 -> 3: choices correlated about 0.8 a priori;                                       \
          bench/bench_categorical.py: 7 of 8 seeds to the band,                                    \
          6 with 5, 4 with 1 (the plain default) */

#define GP_JITTER 1e-4  /* CARBS' fixed diagonal jitter added to the noise */
#define GP_R_EPS  1e-12 /* added to r^2 inside the Matern distance */
#define GP_SQRT3  1.7320508075688772

/* Natural hyperparameters for kernel evaluation. */
typedef struct gp_hyp {
    double sl2, sm2, noise; /* RBF: sm2 = s2, sl2 unused */
    const double *il;       /* d inverse lengthscales (RBF: all equal) */
} gp_hyp;

/* gp.c: h from the log hyperparameters theta; il (d values) receives the inverse lengthscales
 * and h->il points to it. */
void gp_hyp_from_theta(const gp *g, const double *theta, double *il, gp_hyp *h);

/* k(x, z) without noise. Inline: the inner loops of gp.c and gp_predict.c call it per entry. */
static inline double gp_kern(const gp *g, const gp_hyp *h, const double *x, const double *z)
{
    size_t d = g->d;
    if (g->kernel == GP_KERNEL_LIN_MATERN32) {
        double lin = 0, r2 = GP_R_EPS;
        for (size_t i = 0; i < d; i++) {
            double u = (x[i] - z[i]) * h->il[i];
            r2 += u * u;
            lin += (x[i] - g->c[i]) * (z[i] - g->c[i]);
        }
        double sr = GP_SQRT3 * sqrt(r2);
        return h->sl2 * lin + h->sm2 * (1 + sr) * exp(-sr);
    }
    double r2 = 0;
    for (size_t i = 0; i < d; i++) {
        double u = (x[i] - z[i]) * h->il[i];
        r2 += u * u;
    }
    return h->sm2 * exp(-0.5 * r2);
}

/* The calls on model inputs (g->d values per point); the public gp_set_data, gp_predict and
 * gp_append (gp_onehot.c) encode the callers' inputs first. gp.c: */
st_status gp_priv_set_data(gp *g, size_t n, const double *X, const double *y);
st_status gp_priv_append(gp *g, const double *x, double y);
st_status gp_priv_extend(gp *g, size_t m, const double *X);
/* gp_predict.c: the mean, with the latent variance or (_bound) an upper bound of it. */
st_status gp_priv_predict(gp *g, size_t m, const double *Xs, double *mean, double *var);
st_status gp_priv_predict_bound(gp *g, size_t m, const double *Xs, double *mean, double *var_ub);

/* gp_cross.c: one column of K* (n entries): the distances (gp_kern's sums), then the kernel from
 * them in place; gp_cross_exp is their exp for x <= 0 (0 below -700), within an ulp of libm's. */
void gp_cross_dist(size_t n, size_t d, const double *XT, const double *XcT, const double *z,
                   const double *zc, const double *il, double r0, double *r2, double *lin);
void gp_cross_matern(size_t n, double *col, const double *lin, double sl2, double sm2);
void gp_cross_rbf(size_t n, double *col, double s2);
void gp_cross_exp(size_t n, const double *x, double *y);

#pragma GCC visibility pop

#endif
