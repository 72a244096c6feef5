/*
 * gp.c — exact Gaussian-process regression for CARBS' surrogates (spec carbs.md §4.2-4.3):
 * Linear + ARD Matern-3/2 and RBF kernels (k itself: gp_kern in gp_int.h), Cholesky of
 * K = k(X,X) + (noise + 1e-4) I with a jitter-retry loop, the negative log marginal likelihood
 * with its analytic gradient, MAP fitting by NLopt L-BFGS with restarts (recommended) or CARBS'
 * 1000 Adam steps (faithful), and O(n^2) rank-one appends. Not here: the posterior mean and
 * variance, and the variance's upper bound from each point's nearest rows (gp_predict.c); the
 * one-hot input map and the public calls on callers' inputs (gp_onehot.c).
 * Storage: every n x n matrix is column-major (LAPACK's native order, no LAPACKE transposes);
 * the factor L lives in a cap x cap buffer (leading dimension cap) so rows can be appended.
 */
#include "carbs/gp_int.h"

#include <assert.h>
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <nlopt.h>
#include <stdlib.h>
#include <string.h>

#define GP_LOG2PI       1.8378770664093453
#define GP_NOISE_MU     (-4.605170185988091) /* ln 0.01: noise prior LogNormal(mu, s) */
#define GP_NOISE_S      0.5
#define GP_JITTER_TRIES 6 /* extra jitter 1e-6 .. 1e-1 times the mean diagonal */

/* Weak MAP priors (recommended mode, map = 1), on the log hyperparameters:
 *   log variance (sl2, sm2 or s2) ~ Normal(0, 3^2): 1 sd = a factor e^3 = 20;
 *   log lengthscale ~ Normal(log l0, 2^2), l0 = init_lengthscale of the last gp_fit
 *   (0.3 until then; RBF: 1): 1 sd = a factor 7.4, so ARD can still switch a dimension off. */
#define GP_PRIOR_VAR_SD 3.0
#define GP_PRIOR_LS_SD  2.0

/* Box for L-BFGS on theta (recommended mode). */
#define GP_LOG_VAR_LO   (-12.0)
#define GP_LOG_VAR_HI   12.0
#define GP_LOG_LS_LO    (-6.907755278982137)  /* log 1e-3 */
#define GP_LOG_LS_HI    6.907755278982137     /* log 1e3 */
#define GP_LOG_NOISE_LO (-13.815510557964274) /* log 1e-6 */
#define GP_LOG_NOISE_HI 2.302585092994046     /* log 10 */

/* ---- kernels ------------------------------------------------------------------------------ */

void gp_hyp_from_theta(const gp *g, const double *theta, double *il, gp_hyp *h)
{
    if (g->kernel == GP_KERNEL_LIN_MATERN32) {
        h->sl2 = exp(theta[0]);
        h->sm2 = exp(theta[1]);
        for (size_t i = 0; i < g->d; i++)
            il[i] = exp(-theta[2 + i]);
        h->noise = exp(theta[g->d + 2]);
    } else {
        h->sl2 = 0;
        h->sm2 = exp(theta[0]);
        double v = exp(-theta[1]);
        for (size_t i = 0; i < g->d; i++)
            il[i] = v;
        h->noise = exp(theta[2]);
    }
    h->il = il;
}

/* Lower triangle of k(X, X) + diag_add I into K (n x n, column-major, leading dimension ld). */
static void build_K(const gp *g, const gp_hyp *h, size_t n, const double *X, double diag_add,
                    double *K, size_t ld)
{
    size_t d = g->d;
    for (size_t b = 0; b < n; b++) {
        double *col = K + b * ld;
        col[b] = gp_kern(g, h, X + b * d, X + b * d) + diag_add;
        for (size_t a = b + 1; a < n; a++)
            col[a] = gp_kern(g, h, X + a * d, X + b * d);
    }
}

/* ---- handle ------------------------------------------------------------------------------- */

gp_fit_opts gp_fit_opts_default(void)
{
    gp_fit_opts o = {.faithful = 0,
                     .init_lengthscale = 0.3,
                     .restarts = 2,
                     .max_fit_points = 256,
                     .adam_steps = 1000,
                     .adam_lr = 1e-4};
    return o;
}

st_status gp_create(gp_kernel kernel, size_t d, gp **out)
{
    *out = NULL;
    if (d == 0 || (kernel != GP_KERNEL_LIN_MATERN32 && kernel != GP_KERNEL_RBF))
        return ST_EINVAL;
    gp *g = calloc(1, sizeof(*g));
    if (!g)
        return ST_ENOMEM;
    g->kernel = kernel;
    g->d = d;
    g->d_in = d;
    g->n_theta = kernel == GP_KERNEL_LIN_MATERN32 ? d + 3 : 3;
    g->c = calloc(d, sizeof(double));
    g->theta = malloc(g->n_theta * sizeof(double));
    g->il = malloc(d * sizeof(double));
    g->ilw = malloc(d * sizeof(double));
    if (!g->c || !g->theta || !g->il || !g->ilw) {
        gp_destroy(g);
        return ST_ENOMEM;
    }
    g->prior_ls = kernel == GP_KERNEL_LIN_MATERN32 ? log(0.3) : 0.0;
    gp_default_theta(g, 0.3, g->theta);
    *out = g;
    return ST_OK;
}

void gp_destroy(gp *g)
{
    if (!g)
        return;
    free(g->X);
    free(g->y);
    free(g->c);
    free(g->theta);
    free(g->L);
    free(g->alpha);
    free(g->il);
    free(g->ws);
    free(g->ilw);
    free(g->pw);
    free(g->v);
    free(g->levels);
    free(g->onehot);
    free(g);
}

size_t gp_n(const gp *g)
{
    return g->n;
}

st_status gp_loo_z2(const gp *g, double *z2)
{
    size_t n = g->n, ld = g->cap;
    if (!g->factored)
        return ST_ESTATE;
    if (n < 2)
        return ST_EEMPTY;
    double *Ki = malloc(n * n * sizeof(double));
    if (!Ki)
        return ST_ENOMEM;
    for (size_t j = 0; j < n; j++)
        memcpy(Ki + j * n, g->L + j * ld, n * sizeof(double));
    /* (K^-1)_ii from the Cholesky factor; z_i = (K^-1 y)_i / sqrt((K^-1)_ii) (Rasmussen &
     * Williams 2006, eq. 5.12: the leave-one-out residual over its predictive sd) */
    lapack_int info = LAPACKE_dpotri_work(LAPACK_COL_MAJOR, 'L', (lapack_int)n, Ki, (lapack_int)n);
    double sum = 0;
    for (size_t i = 0; info == 0 && i < n; i++) {
        double kii = Ki[i + i * n];
        if (!(kii > 0)) {
            info = -1;
            break;
        }
        sum += g->alpha[i] * g->alpha[i] / kii;
    }
    free(Ki);
    if (info != 0)
        return ST_ENUMERIC;
    *z2 = sum / (double)n;
    return ST_OK;
}

size_t gp_n_theta(const gp *g)
{
    return g->n_theta;
}

void gp_get_theta(const gp *g, double *theta)
{
    memcpy(theta, g->theta, g->n_theta * sizeof(double));
}

void gp_set_theta(gp *g, const double *theta)
{
    memcpy(g->theta, theta, g->n_theta * sizeof(double));
    g->factored = 0;
}

void gp_default_theta(const gp *g, double init_lengthscale, double *theta)
{
    if (g->kernel == GP_KERNEL_LIN_MATERN32) {
        theta[0] = 0;
        theta[1] = 0;
        for (size_t i = 0; i < g->d; i++)
            theta[2 + i] = log(init_lengthscale) +
                           (g->onehot && g->onehot[i] ? log(GP_ONEHOT_LS_FACTOR) : 0.0);
        theta[g->d + 2] = GP_NOISE_MU;
    } else {
        theta[0] = 0;
        theta[1] = 0;
        theta[2] = GP_NOISE_MU;
    }
}

/* Grows the point storage to hold `want` points, keeping X, y and the factor L (n x n). */
static st_status grow(gp *g, size_t want)
{
    if (want <= g->cap)
        return ST_OK;
    /* 1/8 more than asked: a kept GP (gpcache.c) appends a point or two per suggestion, and a
     * doubled n x n factor would hold 4x the memory it uses */
    size_t cap = want + want / 8 + 8;
    double *X = realloc(g->X, cap * g->d * sizeof(double));
    if (!X)
        return ST_ENOMEM;
    g->X = X;
    double *y = realloc(g->y, cap * sizeof(double));
    if (!y)
        return ST_ENOMEM;
    g->y = y;
    double *a = realloc(g->alpha, cap * sizeof(double));
    if (!a)
        return ST_ENOMEM;
    g->alpha = a;
    double *v = realloc(g->v, cap * sizeof(double));
    if (!v)
        return ST_ENOMEM;
    g->v = v;
    double *L = malloc(cap * cap * sizeof(double));
    if (!L)
        return ST_ENOMEM;
    if (g->factored && g->L)
        for (size_t j = 0; j < g->n; j++)
            memcpy(L + j * cap, g->L + j * g->cap, g->n * sizeof(double));
    free(g->L);
    g->L = L;
    g->cap = cap;
    return ST_OK;
}

st_status gp_priv_set_data(gp *g, size_t n, const double *X, const double *y)
{
    for (size_t i = 0; i < n * g->d; i++)
        if (!isfinite(X[i]))
            return ST_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(y[i]))
            return ST_EINVAL;
    g->factored = 0;
    st_status s = grow(g, n);
    if (s != ST_OK)
        return s;
    assert(n <= g->cap);
    if (n) {
        memcpy(g->X, X, n * g->d * sizeof(double));
        memcpy(g->y, y, n * sizeof(double));
    }
    g->n = n;
    return ST_OK;
}

/* ---- factorisation ------------------------------------------------------------------------ */

st_status gp_factor(gp *g)
{
    g->factored = 0;
    for (size_t j = 0; j < g->n_theta; j++)
        if (!isfinite(g->theta[j]))
            return ST_ENUMERIC;
    gp_hyp h;
    gp_hyp_from_theta(g, g->theta, g->il, &h);
    size_t n = g->n, ld = g->cap;
    if (n == 0) {
        g->jit = 0;
        g->factored = 1;
        return ST_OK;
    }
    double base = h.noise + GP_JITTER, jit = 0, mean_diag = 0;
    for (int t = 0; t <= GP_JITTER_TRIES; t++) {
        build_K(g, &h, n, g->X, base + jit, g->L, ld);
        if (t == 0) {
            for (size_t i = 0; i < n; i++)
                mean_diag += g->L[i + i * ld];
            mean_diag /= (double)n;
            if (!isfinite(mean_diag))
                return ST_ENUMERIC;
        }
        lapack_int info =
            LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', (lapack_int)n, g->L, (lapack_int)ld);
        if (info == 0 && isfinite(g->L[(n - 1) * (ld + 1)])) {
            g->jit = jit;
            memcpy(g->alpha, g->y, n * sizeof(double));
            info = LAPACKE_dpotrs_work(LAPACK_COL_MAJOR, 'L', (lapack_int)n, 1, g->L,
                                       (lapack_int)ld, g->alpha, (lapack_int)n);
            if (info != 0)
                return ST_ENUMERIC;
            g->factored = 1;
            return ST_OK;
        }
        jit = jit == 0 ? 1e-6 * mean_diag : jit * 10;
    }
    return ST_ENUMERIC;
}

/* Appends model input x as row n of the factor at theta (h), its target 0: the new row of L
 * is l = L^-1 k(X, x), l_nn = sqrt(k(x,x) + noise + 1e-4 + jit - |l|^2), O(n^2). Room for it
 * is there (grow). ST_ENUMERIC (and nothing changed) when x does not factorise. */
static st_status append_row(gp *g, const gp_hyp *h, const double *x)
{
    size_t d = g->d, n = g->n, ld = g->cap;
    double *l = g->v;
    for (size_t i = 0; i < n; i++)
        l[i] = gp_kern(g, h, g->X + i * d, x);
    if (n)
        cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, (int)n, g->L, (int)ld, l,
                    1);
    double q = n ? cblas_ddot((int)n, l, 1, l, 1) : 0;
    double dd = gp_kern(g, h, x, x) + h->noise + GP_JITTER + g->jit - q;
    if (!(dd > 0) || !isfinite(dd))
        return ST_ENUMERIC;
    for (size_t j = 0; j < n; j++)
        g->L[n + j * ld] = l[j];
    g->L[n + n * ld] = sqrt(dd);
    memcpy(g->X + n * d, x, d * sizeof(double));
    g->y[n] = 0;
    g->n = n + 1;
    return ST_OK;
}

/* alpha = K^-1 y from the factor: L^-1 then L^-T, two triangular solves with one right-hand
 * side (dtrsv; dpotrs' dtrsm packs L for a single column, 2-3x slower here at n = 1000). */
static st_status solve_alpha(gp *g)
{
    size_t n = g->n;
    memcpy(g->alpha, g->y, n * sizeof(double));
    if (!n)
        return ST_OK;
    cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, (int)n, g->L, (int)g->cap,
                g->alpha, 1);
    cblas_dtrsv(CblasColMajor, CblasLower, CblasTrans, CblasNonUnit, (int)n, g->L, (int)g->cap,
                g->alpha, 1);
    return ST_OK;
}

static int finite_row(size_t d, const double *x)
{
    for (size_t i = 0; i < d; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

st_status gp_priv_append(gp *g, const double *x, double y)
{
    if (!finite_row(g->d, x) || !isfinite(y))
        return ST_EINVAL;
    st_status s = grow(g, g->n + 1);
    if (s != ST_OK)
        return s;
    size_t n = g->n;
    if (!g->factored) {
        memcpy(g->X + n * g->d, x, g->d * sizeof(double));
        g->y[n] = y;
        g->n = n + 1;
        return gp_factor(g);
    }
    gp_hyp h;
    gp_hyp_from_theta(g, g->theta, g->il, &h);
    s = append_row(g, &h, x);
    if (s != ST_OK)
        return s;
    g->y[n] = y;
    return solve_alpha(g);
}

st_status gp_priv_extend(gp *g, size_t m, const double *X)
{
    if (!g->factored)
        return ST_ESTATE;
    for (size_t j = 0; j < m; j++)
        if (!finite_row(g->d, X + j * g->d))
            return ST_EINVAL;
    st_status s = grow(g, g->n + m);
    if (s != ST_OK)
        return s;
    gp_hyp h;
    gp_hyp_from_theta(g, g->theta, g->il, &h);
    for (size_t j = 0; j < m && s == ST_OK; j++) {
        const double *x = X + j * g->d;
        s = append_row(g, &h, x);
        if (s == ST_ENUMERIC) { /* the rows so far afresh, at theta, with gp_factor's jitter */
            memcpy(g->X + g->n * g->d, x, g->d * sizeof(double));
            g->y[g->n++] = 0;
            s = gp_factor(g);
        }
    }
    g->factored = s == ST_OK; /* alpha waits for gp_set_targets */
    return s;
}

st_status gp_set_targets(gp *g, const double *y)
{
    if (!g->factored)
        return ST_ESTATE;
    for (size_t i = 0; i < g->n; i++)
        if (!isfinite(y[i]))
            return ST_EINVAL;
    memcpy(g->y, y, g->n * sizeof(double));
    return solve_alpha(g);
}

void gp_truncate(gp *g, size_t n)
{
    if (n < g->n)
        g->n = n;
}

/* ---- objective ---------------------------------------------------------------------------- */

/* -log Normal(x; mu, sd^2) and its derivative in x. */
static double neg_log_normal(double x, double mu, double sd, double *dx)
{
    double z = (x - mu) / sd;
    *dx = z / sd;
    return 0.5 * z * z + log(sd) + 0.5 * GP_LOG2PI;
}

/* Negative log prior at theta (+= its gradient into grad if non-NULL).
 * Noise (both modes), as pyro's loss: -log LogNormal(noise; ln 0.01, 0.5) evaluated at the
 * noise variance itself, with no Jacobian for optimising its log:
 *   log noise + log s + log(2 pi)/2 + (log noise - mu)^2 / (2 s^2);  d/d log noise = 1 + z/s.
 * map = 1 adds the weak Normal priors on log variances and log lengthscales (see top). */
static double neg_log_prior(const gp *g, const double *theta, double *grad, int map)
{
    size_t nt = g->n_theta;
    double eta = theta[nt - 1], dz;
    double f = eta + neg_log_normal(eta, GP_NOISE_MU, GP_NOISE_S, &dz);
    if (grad)
        grad[nt - 1] += 1 + dz;
    if (!map)
        return f;
    size_t n_var = g->kernel == GP_KERNEL_LIN_MATERN32 ? 2 : 1;
    for (size_t j = 0; j < nt - 1; j++) {
        double dj;
        if (j < n_var)
            f += neg_log_normal(theta[j], 0.0, GP_PRIOR_VAR_SD, &dj);
        else
            f += neg_log_normal(
                theta[j],
                g->prior_ls + (g->onehot && g->onehot[j - n_var] ? log(GP_ONEHOT_LS_FACTOR) : 0.0),
                GP_PRIOR_LS_SD, &dj);
        if (grad)
            grad[j] += dj;
    }
    return f;
}

/* Objective workspace for n points: three n x n matrices, three d x n, three n-vectors, one
 * block, kept between calls. */
static st_status ensure_work(gp *g, size_t n)
{
    if (n <= g->n_w)
        return ST_OK;
    size_t d = g->d;
    double *w = malloc((3 * n * n + 3 * n * d + 3 * n) * sizeof(double));
    if (!w)
        return ST_ENOMEM;
    free(g->ws);
    g->ws = w;
    g->Kw = w;
    g->Ew = w + n * n;
    g->Mw = w + 2 * n * n;
    g->Xt = w + 3 * n * n;
    g->Xc = g->Xt + n * d;
    g->Pw = g->Xc + n * d;
    g->aw = g->Pw + n * d;
    g->qw = g->aw + n;
    g->sw = g->qw + n;
    g->n_w = n;
    return ST_OK;
}

/*
 * NLML + prior on (X, y) (n points) at theta; gradient into grad (n_theta) if non-NULL.
 *   NLML = 1/2 y^T K^-1 y + sum log L_ii + n/2 log 2 pi                  (R&W eq. 5.8)
 *   dNLML/dtheta_j = 1/2 sum_ab W_ab dK_ab/dtheta_j, W = K^-1 - alpha alpha^T  (R&W eq. 5.9)
 * With scaled inputs xt_a = x_a / l (d x n) and centred inputs xc_a = x_a - c:
 *   r_ab^2 = |xt_a|^2 + |xt_b|^2 - 2 xt_a.xt_b  (dsyrk; clamped >= 0, + 1e-12 for Matern),
 *   lin_ab = xc_a.xc_b (dsyrk), e = exp(-sqrt3 r), m = (1 + sqrt3 r) e,
 *   dk/dlog sl2 = sl2 lin,  dk/dlog sm2 = sm2 m,  dk/dlog l_i = 3 sm2 e u_i^2  (u = xt_a - xt_b);
 *   RBF: e = exp(-r^2/2), dk/dlog s2 = s2 e, dk/dlog l = s2 e r^2;  dK/dlog noise = noise I.
 * The lengthscale sums use M = c W o E (c = 3 sm2, RBF: s2), rowsums s = M 1 and P = xt M:
 *   1/2 sum_ab M_ab (xt_ai - xt_bi)^2 = sum_a xt_ai^2 s_a - sum_a xt_ai P_ia.
 * Returns +INFINITY when K is not positive definite, NAN on allocation failure.
 */
static double obj_eval(gp *g, size_t n, const double *X, const double *y, const double *theta,
                       double *grad, int map)
{
    size_t nt = g->n_theta, d = g->d;
    int mat = g->kernel == GP_KERNEL_LIN_MATERN32;
    for (size_t j = 0; j < nt; j++)
        if (!isfinite(theta[j]))
            return INFINITY;
    if (ensure_work(g, n) != ST_OK)
        return NAN;
    if (grad)
        memset(grad, 0, nt * sizeof(double));
    double f = neg_log_prior(g, theta, grad, map);
    if (n == 0)
        return f;
    gp_hyp h;
    gp_hyp_from_theta(g, theta, g->ilw, &h);
    double *K = g->Kw, *E = g->Ew, *Mt = g->Mw, *al = g->aw, *q = g->qw, *s = g->sw;
    double *Xt = g->Xt, *Xc = g->Xc, *P = g->Pw;
    int ni = (int)n, di = (int)d;
    for (size_t a = 0; a < n; a++) {
        double qa = 0;
        for (size_t i = 0; i < d; i++) {
            double u = X[a * d + i] * h.il[i];
            Xt[a * d + i] = u;
            Xc[a * d + i] = X[a * d + i] - g->c[i];
            qa += u * u;
        }
        q[a] = qa;
    }
    /* K <- xt^T xt (lower), Mt <- xc^T xc (Matern's linear part) */
    cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, ni, di, 1.0, Xt, di, 0.0, K, ni);
    if (mat)
        cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, ni, di, 1.0, Xc, di, 0.0, Mt, ni);
    /* lower triangle of K = k(X,X) + (noise + 1e-4) I; E = e, Mt = m (Matern) per pair */
    const double sr0 = GP_SQRT3 * sqrt(GP_R_EPS), m0 = (1 + sr0) * exp(-sr0);
    for (size_t b = 0; b < n; b++) {
        double *Kb = K + b * n, *Eb = E + b * n, *Mb = Mt + b * n;
        if (mat) {
            Kb[b] = h.sl2 * Mb[b] + h.sm2 * m0 + h.noise + GP_JITTER;
            Eb[b] = exp(-sr0);
            Mb[b] = m0;
        } else {
            Kb[b] = h.sm2 + h.noise + GP_JITTER;
            Eb[b] = 1;
        }
        for (size_t a = b + 1; a < n; a++) {
            double r2 = q[a] + q[b] - 2 * Kb[a];
            r2 = r2 > 0 ? r2 : 0;
            if (mat) {
                double sr = GP_SQRT3 * sqrt(r2 + GP_R_EPS), e = exp(-sr), m = (1 + sr) * e;
                Kb[a] = h.sl2 * Mb[a] + h.sm2 * m;
                Eb[a] = e;
                Mb[a] = m;
            } else {
                double e = exp(-0.5 * r2);
                Kb[a] = h.sm2 * e;
                Eb[a] = e;
            }
        }
    }
    lapack_int info = LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', (lapack_int)n, K, (lapack_int)n);
    if (info != 0)
        return INFINITY;
    double logdet = 0;
    for (size_t i = 0; i < n; i++)
        logdet += log(K[i + i * n]);
    memcpy(al, y, n * sizeof(double));
    LAPACKE_dpotrs_work(LAPACK_COL_MAJOR, 'L', (lapack_int)n, 1, K, (lapack_int)n, al,
                        (lapack_int)n);
    f += 0.5 * cblas_ddot(ni, y, 1, al, 1) + logdet + 0.5 * (double)n * GP_LOG2PI;
    if (!isfinite(f))
        return INFINITY;
    if (!grad)
        return f;
    /* W = K^-1 - alpha alpha^T (lower triangle, in place) */
    info = LAPACKE_dpotri_work(LAPACK_COL_MAJOR, 'L', (lapack_int)n, K, (lapack_int)n);
    if (info != 0)
        return INFINITY;
    for (size_t b = 0; b < n; b++)
        for (size_t a = b; a < n; a++)
            K[a + b * n] -= al[a] * al[b];
    double g_noise = 0;
    for (size_t a = 0; a < n; a++)
        g_noise += 0.5 * K[a + a * n] * h.noise;
    grad[nt - 1] += g_noise;
    double *g_l = grad + (mat ? 2 : 1);
    if (mat) {
        /* 1/2 sum_ab W_ab sl2 lin_ab = 1/2 sl2 sum_a xc_a . (xc W)_a */
        cblas_dsymm(CblasColMajor, CblasRight, CblasLower, di, ni, 1.0, K, ni, Xc, di, 0.0, P, di);
        grad[0] += 0.5 * h.sl2 * cblas_ddot(ni * di, Xc, 1, P, 1);
    }
    /* variance term; then K <- M = c W o E (zero diagonal), s = M 1 */
    double cm = mat ? 3 * h.sm2 : h.sm2, g_s = 0;
    const double *Vm = mat ? Mt : E; /* dk/dlog variance = variance * Vm */
    memset(s, 0, n * sizeof(double));
    for (size_t b = 0; b < n; b++) {
        double *Kb = K + b * n;
        const double *Eb = E + b * n, *Vb = Vm + b * n;
        g_s += 0.5 * Kb[b] * Vb[b];
        Kb[b] = 0;
        double sb = 0;
        for (size_t a = b + 1; a < n; a++) {
            double w = Kb[a];
            g_s += w * Vb[a];
            double mab = cm * w * Eb[a];
            Kb[a] = mab;
            sb += mab;
            s[a] += mab;
        }
        s[b] += sb;
    }
    grad[mat ? 1 : 0] += h.sm2 * g_s;
    /* lengthscales: P = xt M (d x n) */
    cblas_dsymm(CblasColMajor, CblasRight, CblasLower, di, ni, 1.0, K, ni, Xt, di, 0.0, P, di);
    for (size_t a = 0; a < n; a++)
        for (size_t i = 0; i < d; i++) {
            double xt = Xt[a * d + i], gi = xt * xt * s[a] - xt * P[a * d + i];
            g_l[mat ? i : 0] += gi;
        }
    return f;
}

double gp_objective(gp *g, const double *theta, double *grad, int map)
{
    return obj_eval(g, g->n, g->X, g->y, theta, grad, map);
}

/* ---- fitting ------------------------------------------------------------------------------ */

typedef struct fit_ctx {
    gp *g;
    size_t n;
    const double *X, *y;
    double best_f;
    double *best; /* n_theta: best finite point seen by any start */
} fit_ctx;

static double nlopt_obj(unsigned nt, const double *x, double *grad, void *data)
{
    fit_ctx *c = data;
    double f = obj_eval(c->g, c->n, c->X, c->y, x, grad, 1);
    if (!isfinite(f)) {
        if (grad)
            memset(grad, 0, nt * sizeof(double));
        return HUGE_VAL;
    }
    if (f < c->best_f) {
        c->best_f = f;
        memcpy(c->best, x, nt * sizeof(double));
    }
    return f;
}

static void theta_bounds(const gp *g, double *lo, double *hi)
{
    size_t nt = g->n_theta, n_var = g->kernel == GP_KERNEL_LIN_MATERN32 ? 2 : 1;
    for (size_t j = 0; j < nt; j++) {
        if (j < n_var) {
            lo[j] = GP_LOG_VAR_LO;
            hi[j] = GP_LOG_VAR_HI;
        } else if (j < nt - 1) {
            lo[j] = GP_LOG_LS_LO;
            hi[j] = GP_LOG_LS_HI;
        } else {
            lo[j] = GP_LOG_NOISE_LO;
            hi[j] = GP_LOG_NOISE_HI;
        }
    }
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Recommended mode: MAP by L-BFGS from the defaults and o->restarts perturbed starts. */
static st_status fit_map(gp *g, const gp_fit_opts *o, st_rng *rng, const double *theta0)
{
    size_t nt = g->n_theta, d = g->d, n = g->n;
    size_t nf = (o->max_fit_points > 0 && n > o->max_fit_points) ? o->max_fit_points : n;
    st_status s = ST_ENOMEM;
    double *buf = malloc((5 * nt) * sizeof(double));
    double *Xf = NULL, *yf = NULL;
    size_t *idx = NULL;
    nlopt_opt opt = NULL;
    if (!buf)
        goto done;
    double *lo = buf, *hi = buf + nt, *x = buf + 2 * nt, *best = buf + 3 * nt, *sd = buf + 4 * nt;
    fit_ctx ctx = {.g = g, .n = n, .X = g->X, .y = g->y, .best_f = INFINITY, .best = best};
    if (nf < n) {
        /* seeded subset: partial Fisher-Yates, then sorted for a stable order */
        idx = malloc(n * sizeof(size_t));
        Xf = malloc(nf * d * sizeof(double));
        yf = malloc(nf * sizeof(double));
        if (!idx || !Xf || !yf)
            goto done;
        for (size_t i = 0; i < n; i++)
            idx[i] = i;
        for (size_t i = 0; i < nf; i++) {
            size_t j = i + st_rng_uniform_int(rng, n - i), t = idx[i];
            idx[i] = idx[j];
            idx[j] = t;
        }
        qsort(idx, nf, sizeof(size_t), cmp_size);
        for (size_t i = 0; i < nf; i++) {
            memcpy(Xf + i * d, g->X + idx[i] * d, d * sizeof(double));
            yf[i] = g->y[idx[i]];
        }
        ctx.n = nf;
        ctx.X = Xf;
        ctx.y = yf;
    }
    if (ensure_work(g, nf) != ST_OK)
        goto done;
    theta_bounds(g, lo, hi);
    for (size_t j = 0; j < nt; j++)
        sd[j] = j == nt - 1 ? GP_NOISE_S : 1.0;
    opt = nlopt_create(NLOPT_LD_LBFGS, (unsigned)nt);
    if (!opt)
        goto done;
    nlopt_set_lower_bounds(opt, lo);
    nlopt_set_upper_bounds(opt, hi);
    nlopt_set_min_objective(opt, nlopt_obj, &ctx);
    nlopt_set_maxeval(opt, 100);
    nlopt_set_ftol_rel(opt, 1e-6);
    nlopt_set_xtol_rel(opt, 1e-6);
    for (size_t r = 0; r <= o->restarts; r++) {
        for (size_t j = 0; j < nt; j++) {
            double v = theta0[j] + (r ? sd[j] * st_rng_gaussian(rng) : 0.0);
            x[j] = v < lo[j] ? lo[j] : v > hi[j] ? hi[j] : v;
        }
        double f;
        nlopt_optimize(opt, x, &f); /* any outcome: ctx keeps the best point seen */
    }
    if (isfinite(ctx.best_f))
        memcpy(g->theta, best, nt * sizeof(double));
    else
        memcpy(g->theta, theta0, nt * sizeof(double));
    s = ST_OK;
done:
    nlopt_destroy(opt);
    free(buf);
    free(Xf);
    free(yf);
    free(idx);
    return s;
}

/* Faithful mode: CARBS/pyro's Adam (torch defaults), on all points, map = 0. */
static st_status fit_adam(gp *g, const gp_fit_opts *o)
{
    size_t nt = g->n_theta;
    double *buf = calloc(5 * nt, sizeof(double));
    if (!buf)
        return ST_ENOMEM;
    double *th = buf, *gr = buf + nt, *m = buf + 2 * nt, *v = buf + 3 * nt, *last = buf + 4 * nt;
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    memcpy(th, g->theta, nt * sizeof(double));
    double p1 = 1, p2 = 1;
    const double *res = th;
    for (size_t t = 0; t < o->adam_steps; t++) {
        double f = obj_eval(g, g->n, g->X, g->y, th, gr, 0);
        if (isnan(f)) {
            free(buf);
            return ST_ENOMEM;
        }
        if (!isfinite(f)) {
            res = last; /* keep the last point whose objective was finite */
            break;
        }
        memcpy(last, th, nt * sizeof(double));
        p1 *= b1;
        p2 *= b2;
        for (size_t j = 0; j < nt; j++) {
            m[j] = b1 * m[j] + (1 - b1) * gr[j];
            v[j] = b2 * v[j] + (1 - b2) * gr[j] * gr[j];
            double mh = m[j] / (1 - p1), vh = v[j] / (1 - p2);
            th[j] -= o->adam_lr * mh / (sqrt(vh) + eps);
        }
    }
    memcpy(g->theta, res, nt * sizeof(double));
    free(buf);
    return ST_OK;
}

st_status gp_fit(gp *g, const gp_fit_opts *o, st_rng *rng)
{
    if (g->n == 0)
        return ST_EEMPTY;
    if (!(o->init_lengthscale > 0) || !isfinite(o->init_lengthscale) || !(o->adam_lr >= 0))
        return ST_EINVAL;
    size_t nt = g->n_theta;
    double *theta0 = malloc(nt * sizeof(double));
    if (!theta0)
        return ST_ENOMEM;
    double lsi = g->kernel == GP_KERNEL_LIN_MATERN32 ? o->init_lengthscale : 1.0;
    gp_default_theta(g, lsi, theta0);
    if (g->kernel == GP_KERNEL_LIN_MATERN32)
        g->prior_ls = log(o->init_lengthscale);
    g->factored = 0;
    st_status s;
    if (o->faithful) {
        theta0[nt - 1] = GP_NOISE_MU + GP_NOISE_S * st_rng_gaussian(rng);
        memcpy(g->theta, theta0, nt * sizeof(double));
        s = fit_adam(g, o);
    } else {
        s = fit_map(g, o, rng, theta0);
    }
    if (s == ST_OK) {
        s = gp_factor(g);
        if (s == ST_ENUMERIC) {
            /* the fitted point does not factorise on all points: fall back to the start */
            memcpy(g->theta, theta0, nt * sizeof(double));
            s = gp_factor(g);
        }
    }
    free(theta0);
    return s;
}
