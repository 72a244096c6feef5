/*
 * gp_onehot.c — the GP's input map for categorical inputs: a choice index k of K becomes K
 * one-hot columns (gp_set_levels), so the kernels of gp.c stay the same and every column gets
 * its own lengthscale. Also the public calls that take the callers' inputs (gp_set_data,
 * gp_predict, gp_append, gp_set_linear_center) and encode them. Not here: the kernels.
 */
#include "carbs/gp_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

st_status gp_set_levels(gp *g, const size_t *levels)
{
    if (g->cap || g->levels || g->kernel != GP_KERNEL_LIN_MATERN32)
        return ST_ESTATE;
    size_t de = 0, any = 0;
    for (size_t i = 0; i < g->d; i++) {
        de += levels[i] ? levels[i] : 1;
        any |= levels[i];
    }
    if (!any)
        return ST_OK;
    size_t *lv = malloc(g->d * sizeof(size_t));
    double *c = calloc(de, sizeof(double)), *theta = malloc((de + 3) * sizeof(double));
    double *il = malloc(de * sizeof(double)), *ilw = malloc(de * sizeof(double));
    unsigned char *oh = calloc(de, 1);
    if (!lv || !c || !theta || !il || !ilw || !oh) {
        free(oh);
        free(lv);
        free(c);
        free(theta);
        free(il);
        free(ilw);
        return ST_ENOMEM;
    }
    memcpy(lv, levels, g->d * sizeof(size_t));
    free(g->c);
    free(g->theta);
    free(g->il);
    free(g->ilw);
    for (size_t i = 0, o = 0; i < g->d; o += levels[i] ? levels[i] : 1, i++)
        for (size_t j = 0; levels[i] && j < levels[i]; j++)
            oh[o + j] = 1;
    g->onehot = oh;
    g->levels = lv;
    g->c = c;
    g->theta = theta;
    g->il = il;
    g->ilw = ilw;
    g->d_in = g->d;
    g->d = de;
    g->n_theta = de + 3;
    gp_default_theta(g, 0.3, g->theta);
    return ST_OK;
}

/* One point of d_in inputs into g->d model inputs: a categorical input k of K becomes K
 * columns, 1 at column k and 0 elsewhere (all 0 for an index outside 0 .. K-1). */
static void encode_row(const gp *g, const double *x, double *out)
{
    for (size_t i = 0; i < g->d_in; i++) {
        size_t K = g->levels[i];
        if (!K) {
            *out++ = x[i];
            continue;
        }
        double k = nearbyint(x[i]);
        for (size_t j = 0; j < K; j++)
            *out++ = (k == (double)j) ? 1.0 : 0.0;
    }
}

/* X (m points of d_in) as model inputs: X itself without levels, else a malloc'd copy in
 * *buf (free it); NULL when out of memory. */
static const double *encode(const gp *g, size_t m, const double *X, double **buf)
{
    *buf = NULL;
    if (!g->levels)
        return X;
    *buf = malloc((m ? m : 1) * g->d * sizeof(double));
    if (!*buf)
        return NULL;
    for (size_t j = 0; j < m; j++)
        encode_row(g, X + j * g->d_in, *buf + j * g->d);
    return *buf;
}

void gp_set_linear_center(gp *g, const double *c)
{
    if (g->levels) {
        encode_row(g, c, g->c);
        /* the linear kernel over one-hot columns centred at 0: sl2 [same choice] */
        for (size_t i = 0, o = 0; i < g->d_in; o += g->levels[i] ? g->levels[i] : 1, i++)
            for (size_t j = 0; g->levels[i] && j < g->levels[i]; j++)
                g->c[o + j] = 0.0;
    } else {
        memcpy(g->c, c, g->d * sizeof(double));
    }
    g->factored = 0;
}

st_status gp_set_data(gp *g, size_t n, const double *X, const double *y)
{
    double *buf;
    const double *E = encode(g, n, X, &buf);
    if (!E && g->levels)
        return ST_ENOMEM;
    st_status s = gp_priv_set_data(g, n, E, y);
    free(buf);
    return s;
}

typedef st_status (*predict_fn)(gp *g, size_t m, const double *Xs, double *mean, double *var);

/* a prediction at m points Xs, one-hot encoded first when g has categorical inputs */
static st_status predict_encoded(gp *g, size_t m, const double *Xs, double *mean, double *var,
                                 predict_fn fn)
{
    if (!g->factored)
        return ST_ESTATE;
    double *buf;
    const double *E = encode(g, m, Xs, &buf);
    if (!E && g->levels)
        return ST_ENOMEM;
    st_status s = fn(g, m, E, mean, var);
    free(buf);
    return s;
}

st_status gp_predict(gp *g, size_t m, const double *Xs, double *mean, double *var)
{
    return predict_encoded(g, m, Xs, mean, var, gp_priv_predict);
}

st_status gp_predict_bound(gp *g, size_t m, const double *Xs, double *mean, double *var_ub)
{
    return predict_encoded(g, m, Xs, mean, var_ub, gp_priv_predict_bound);
}

st_status gp_append(gp *g, const double *x, double y)
{
    double *buf;
    const double *E = encode(g, 1, x, &buf);
    if (!E && g->levels)
        return ST_ENOMEM;
    st_status s = gp_priv_append(g, E, y);
    free(buf);
    return s;
}

st_status gp_extend(gp *g, size_t m, const double *X)
{
    double *buf;
    const double *E = encode(g, m, X, &buf);
    if (!E && g->levels)
        return ST_ENOMEM;
    st_status s = gp_priv_extend(g, m, E);
    free(buf);
    return s;
}

int gp_same_points(const gp *g, size_t n, const double *X)
{
    if (n > g->n)
        return 0;
    if (!g->levels)
        return !n || !memcmp(g->X, X, n * g->d * sizeof(double));
    double *row = malloc(g->d * sizeof(double));
    int same = row != NULL;
    for (size_t j = 0; same && j < n; j++) {
        encode_row(g, X + j * g->d_in, row);
        same = !memcmp(row, g->X + j * g->d, g->d * sizeof(double));
    }
    free(row);
    return same;
}
