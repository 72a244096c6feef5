/*
 * costcap.c — the cost cap (option max_suggestion_cost) held in every phase of a suggestion:
 * what a point's cost is checked against (the exact cost function when one is installed, else
 * the cost_cap_quantile of the cost GP, or nothing before the cost model has 2 observations),
 * the redraw loop of the single-point phases and the descent toward lower cost when no draw is
 * admissible, with a log-linear fit of cost to show the way down where the GP knows none. Not
 * the Bayesian candidate generation (suggest.c calls cap_cost on its
 * candidates). Pure: the cost GP fitted here draws from its own generator, so a cap does not
 * move the draws of the phase that asked.
 */
#include <gsl/gsl_cdf.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "carbs/carbs_int.h"

#define DESCENT_ITERS 200  /* coordinate moves of the descent, at most */
#define BISECT_ITERS  8    /* halvings of the last move, back toward the wanted point */
#define PATH_POINTS   64   /* points tried along the log-linear way down */
#define PATH_SPAN     4.0  /* ... up to this many times where the plane alone meets the cap */
#define PLANE_P       0.01 /* significance a further parameter of the plane must reach */

st_status cap_cost_data(const carbs *c, size_t *n, double **X, double **cost)
{
    size_t d = c->d, m = c->n_succ + c->n_cobs, k = 0;
    *X = malloc((m ? m : 1) * d * sizeof(double));
    *cost = malloc((m ? m : 1) * sizeof(double));
    if (!*X || !*cost) {
        free(*X);
        free(*cost);
        *X = *cost = NULL;
        return ST_ENOMEM;
    }
    for (size_t i = 0; i < c->n_obs; i++) {
        if (c->obs_fail[i])
            continue;
        memcpy(*X + k * d, c->obs_b + i * d, d * sizeof(double));
        (*cost)[k++] = c->obs_c[i];
    }
    if (c->n_cobs > 0) { /* the arrays are NULL before the first one */
        memcpy(*X + k * d, c->cobs_b, c->n_cobs * d * sizeof(double));
        memcpy(*cost + k, c->cobs_c, c->n_cobs * sizeof(double));
    }
    *n = k + c->n_cobs;
    return ST_OK;
}

static void cap_base(const carbs *c, capm *cm)
{
    memset(cm, 0, sizeof(*cm));
    cm->cap = c->o.max_suggestion_cost;
    cm->z = gsl_cdf_ugaussian_Pinv(c->o.cost_cap_quantile);
    cm->kind = !isfinite(cm->cap) ? CAP_NONE : c->cost_fn ? CAP_EXACT : CAP_BLIND;
}

/* How much the GP's predictive sd must grow to match its leave-one-out errors (>= 1). */
static double gp_inflation(const gp *g)
{
    double z2;
    if (gp_loo_z2(g, &z2) != ST_OK || !(z2 > 1))
        return 1.0;
    return sqrt(z2);
}

/* The noise variance of a fitted GP (its last log-hyperparameter) plus gp_factor's 1e-4. */
static double gp_noise(const gp *g)
{
    size_t nt = gp_n_theta(g);
    double th[64];
    if (nt > 64)
        return 1e-4;
    gp_get_theta(g, th);
    return exp(th[nt - 1]) + 1e-4;
}

static st_status lin_fit(const carbs *c, const capm *cm, double *xbar, double *y0, double *g,
                         double *sig);

/* The GP's noise and inflation, and the plane (lin_fit; none if it cannot be fitted). */
static st_status gp_finish(const carbs *c, capm *cm)
{
    size_t d = c->d;
    cm->kind = CAP_GP;
    cm->noise = gp_noise(cm->g);
    cm->infl = gp_inflation(cm->g);
    cm->plane = malloc((3 * d + 1) * sizeof(double));
    if (!cm->plane)
        return ST_ENOMEM;
    st_status s =
        lin_fit(c, cm, cm->plane, cm->plane + 2 * d, cm->plane + d, cm->plane + 2 * d + 1);
    if (s == ST_ENUMERIC) {
        free(cm->plane);
        cm->plane = NULL;
        s = ST_OK;
    }
    return s;
}

st_status cap_borrow(const carbs *c, capm *cm, gp *g, const logcost *lc)
{
    cap_base(c, cm);
    if (cm->kind != CAP_BLIND || !g)
        return ST_OK;
    cm->g = g;
    cm->lc = *lc;
    return gp_finish(c, cm);
}

st_status cap_init(carbs *c, capm *cm)
{
    cap_base(c, cm);
    if (cm->kind != CAP_BLIND)
        return ST_OK;
    size_t n;
    double *X, *cost;
    if (carbs_priv_cost_data(c, &n, &X, &cost) != ST_OK) /* the subset above gp_max_points */
        return ST_ENOMEM;
    st_status s = ST_OK;
    st_rng *rng = NULL;
    if (n >= CAP_MIN_COST_OBS) {
        logcost_fit(&cm->lc, n, cost);
        for (size_t i = 0; i < n; i++)
            cost[i] = logcost_forward(&cm->lc, cost[i]);
        s = st_rng_create(st_mix64(c->o.seed ^ st_mix64(c->n_suggest + 0xc05c4u)), &rng);
        if (s == ST_OK)
            s = carbs_priv_fit_gp(c, n, X, cost, rng, &cm->g);
        if (s == ST_OK) {
            cm->own = 1;
            s = gp_finish(c, cm);
        } else {
            gp_destroy(cm->g);
            cm->g = NULL;
            if (s == ST_ENUMERIC) /* no model: as before the data came */
                s = ST_OK;
        }
    }
    st_rng_destroy(rng);
    free(X);
    free(cost);
    return s;
}

void cap_clear(capm *cm)
{
    if (cm->own)
        gp_destroy(cm->g);
    free(cm->plane);
    memset(cm, 0, sizeof(*cm));
}

/* The plane's scaled log cost at b (basic). */
static double plane_at(const carbs *c, const capm *cm, const double *b)
{
    size_t d = c->d;
    double l = cm->plane[2 * d];
    for (size_t i = 0; i < d; i++)
        l += cm->plane[d + i] * (b[i] - cm->plane[i]);
    return l;
}

st_status cap_cost(const carbs *c, const capm *cm, size_t m, const double *B, double *out)
{
    size_t d = c->d;
    if (cm->kind == CAP_NONE || cm->kind == CAP_BLIND) {
        for (size_t j = 0; j < m; j++)
            out[j] = NAN;
        return ST_OK;
    }
    if (cm->kind == CAP_EXACT) {
        double *x = malloc(d * sizeof(double));
        if (!x)
            return ST_ENOMEM;
        for (size_t j = 0; j < m; j++) {
            carbs_priv_to_params(c, B + j * d, x);
            double v = c->cost_fn(x, c->cost_data);
            out[j] = v > 0 && isfinite(v) ? v : INFINITY; /* not a cost: never admissible */
        }
        free(x);
        return ST_OK;
    }
    /* CAP_GP: the quantile of the predictive distribution of the scaled log cost, whose
     * variance is the latent variance plus the noise (a run's cost is one noisy draw) */
    double *var = malloc((m ? m : 1) * sizeof(double));
    if (!var)
        return ST_ENOMEM;
    st_status s = gp_predict(cm->g, m, B, out, var);
    for (size_t j = 0; s == ST_OK && j < m; j++) {
        double sd = cm->infl * sqrt((var[j] > 0 ? var[j] : 0) + cm->noise);
        double l = out[j];
        if (cm->plane) /* the larger of the GP's mean and the plane's (see capm) */
            l = fmax(l, plane_at(c, cm, B + j * d));
        out[j] = logcost_inverse(&cm->lc, l + cm->z * sd);
    }
    free(var);
    return s;
}

int cap_ok(const capm *cm, double v)
{
    if (cm->kind == CAP_NONE || cm->kind == CAP_BLIND)
        return 1;
    return v <= cm->cap;
}

/* How far the descent may move coordinate i from where it started: anywhere under an exact
 * cost (a parameter it does not depend on never lowers it); under the cost GP, not at all for a
 * parameter the plane gives no slope (when there is a plane), anywhere for one whose slope is
 * significant (lin_fit's sig), else at most the search radius, so that a cost model fitted on
 * a few runs, which cannot tell which parameter the cost depends on, does not carry a
 * parameter far from where the phase drew it. */
static double move_limit(const carbs *c, const capm *cm, size_t i)
{
    if (cm->kind != CAP_GP)
        return INFINITY;
    if (!cm->plane)
        return c->o.search_radius;
    if (cm->plane[c->d + i] == 0)
        return 0;
    return cm->plane[2 * c->d + 1 + i] ? INFINITY : c->o.search_radius;
}

static int may_move(const carbs *c, const capm *cm, const double *start, size_t i, double t)
{
    return fabs(t - start[i]) <= move_limit(c, cm, i) * (1 + 1e-9);
}

/* One coordinate move of size `step` from b: the neighbour of lowest checked cost (2D tried,
 * each kept inside the bounds and rounded, and allowed by may_move). Returns 1 and writes
 * nb/nv if one is cheaper. */
static int best_move(carbs *c, const capm *cm, const double *start, const double *b, double v,
                     double step, double *nb, double *nv, double *trial, st_status *err)
{
    size_t d = c->d;
    int found = 0;
    for (size_t i = 0; i < d && *err == ST_OK; i++)
        for (int sgn = -1; sgn <= 1; sgn += 2) {
            memcpy(trial, b, d * sizeof(double));
            double t = b[i] + sgn * step;
            if (!(t > c->lo_b[i])) /* halfway to the bound instead of past it */
                t = 0.5 * (b[i] + c->lo_b[i]);
            if (!(t < c->hi_b[i]))
                t = 0.5 * (b[i] + c->hi_b[i]);
            if (!may_move(c, cm, start, i, t))
                continue;
            trial[i] = t;
            if (!carbs_priv_round(c, trial) || trial[i] == b[i])
                continue;
            double tv;
            if ((*err = cap_cost(c, cm, 1, trial, &tv)) != ST_OK)
                return 0;
            if (tv < (found ? *nv : v)) {
                memcpy(nb, trial, d * sizeof(double));
                *nv = tv;
                found = 1;
            }
        }
    return found;
}

/* The admissible point nearest `from` (not admissible) on the segment to `to` (admissible):
 * bisection, so the descent stops close to the cap instead of one whole step past it. */
static st_status bisect_back(carbs *c, const capm *cm, const double *from, double *to, double *v,
                             double *trial)
{
    size_t d = c->d;
    double lo = 0, hi = 1; /* t = 0: from, t = 1: to */
    double *b0 = trial + d;
    memcpy(b0, to, d * sizeof(double));
    for (int it = 0; it < BISECT_ITERS; it++) {
        double t = 0.5 * (lo + hi), tv;
        for (size_t i = 0; i < d; i++)
            trial[i] = from[i] + t * (b0[i] - from[i]);
        if (!carbs_priv_round(c, trial)) {
            lo = t;
            continue;
        }
        st_status s = cap_cost(c, cm, 1, trial, &tv);
        if (s != ST_OK)
            return s;
        if (cap_ok(cm, tv)) {
            hi = t;
            memcpy(to, trial, d * sizeof(double));
            *v = tv;
        } else {
            lo = t;
        }
    }
    return ST_OK;
}

/* Least squares of yc (n, centred) on the columns `sel` (k of them) of Xc (n*D, centred), with
 * a 1e-6 relative ridge; slopes in g (D, zero off sel). Returns the residual sum of squares, or
 * -1 if the system could not be solved (or memory ran out). */
static double subset_fit(size_t n, size_t d, const double *Xc, const double *yc, const size_t *sel,
                         size_t k, double *g)
{
    double *A = calloc(k * k + k, sizeof(double)), tr = 0;
    if (!A)
        return -1;
    double *r = A + k * k;
    for (size_t a = 0; a < k; a++) {
        for (size_t t = 0; t < n; t++) {
            r[a] += Xc[t * d + sel[a]] * yc[t];
            for (size_t b = 0; b <= a; b++)
                A[a * k + b] += Xc[t * d + sel[a]] * Xc[t * d + sel[b]];
        }
        tr += A[a * k + a];
    }
    for (size_t a = 0; a < k; a++)
        A[a * k + a] += 1e-6 * tr / (double)k + 1e-12;
    double rss = -1;
    if (k == 0 ||
        LAPACKE_dposv(LAPACK_ROW_MAJOR, 'L', (lapack_int)k, 1, A, (lapack_int)k, r, 1) == 0) {
        for (size_t i = 0; i < d; i++)
            g[i] = 0;
        for (size_t a = 0; a < k; a++)
            g[sel[a]] = r[a];
        rss = 0;
        for (size_t t = 0; t < n; t++) {
            double e = yc[t];
            for (size_t a = 0; a < k; a++)
                e -= Xc[t * d + sel[a]] * r[a];
            rss += e * e;
        }
    }
    free(A);
    return rss;
}

/* Forward selection: the columns of the sparsest plane the data support. The first column is
 * the one whose plane leaves the least residual (ties: the widest spread, the smallest slope
 * that explains the data); each further one only if its F statistic is significant at PLANE_P
 * with at least one residual degree of freedom left, so that a parameter whose slope is not
 * clearly nonzero gets none. *first_sig: whether the first one passed that test too (never
 * with 2 points, where every column fits exactly). Returns the number of columns, sel: their
 * indices; -1: no memory. */
static long plane_select(size_t n, size_t d, const double *Xc, const double *yc, size_t *sel,
                         double *g, int *first_sig)
{
    *first_sig = 0;
    double tss = 0, rss;
    for (size_t t = 0; t < n; t++)
        tss += yc[t] * yc[t];
    size_t k = 0;
    rss = tss;
    while (k < d && k + 1 < n && rss > 1e-12 * tss) {
        size_t best = d;
        double brss = INFINITY, bss = 0;
        for (size_t j = 0; j < d; j++) {
            int in = 0;
            for (size_t a = 0; a < k; a++)
                in |= sel[a] == j;
            double ss = 0;
            for (size_t t = 0; t < n; t++)
                ss += Xc[t * d + j] * Xc[t * d + j];
            if (in || !(ss > 0))
                continue;
            sel[k] = j;
            double r = subset_fit(n, d, Xc, yc, sel, k + 1, g);
            if (r < 0)
                continue;
            if (r < brss - 1e-9 * tss || (r <= brss + 1e-9 * tss && ss > bss)) {
                best = j;
                brss = r;
                bss = ss;
            }
        }
        if (best == d)
            break;
        /* F test of the new column, with dof residual degrees of freedom after it */
        double dof = (double)n - (double)k - 2.0;
        int sig = dof >= 1 && (brss <= 1e-12 * tss || (rss - brss) / (brss / dof) >=
                                                          gsl_cdf_fdist_Qinv(PLANE_P, 1.0, dof));
        if (k > 0 && !sig) /* a further column must earn its place */
            break;
        if (k == 0)
            *first_sig = sig;
        sel[k++] = best;
        rss = brss;
    }
    return subset_fit(n, d, Xc, yc, sel, k, g) < 0 ? -1 : (long)k;
}

/* The plane of scaled log cost over the basic coordinates: y ~ y0 + g.(b - xbar), the
 * log-linear law that FLOPs (6 N D) and run times follow, fitted on the cost data by forward
 * selection (plane_select), so that a parameter the data do not show cost depends on has slope
 * 0: with fewer points than dimensions a full least-squares plane would tilt along whatever
 * else differed between the runs (a learning rate, a warmup) and the way down would move them.
 * xbar, g: D values; sig: D values, 1 where the slope is significant (plane_select), else 0.
 * ST_OK, ST_ENUMERIC (fewer than 2 points), ST_ENOMEM. */
static st_status lin_fit(const carbs *c, const capm *cm, double *xbar, double *y0, double *g,
                         double *sig)
{
    size_t n, d = c->d;
    double *X, *y;
    if (cap_cost_data(c, &n, &X, &y) != ST_OK)
        return ST_ENOMEM;
    size_t *sel = calloc(d, sizeof(size_t));
    st_status s = sel && n >= 2 ? ST_OK : sel ? ST_ENUMERIC : ST_ENOMEM;
    double ybar = 0;
    int first_sig = 0;
    for (size_t i = 0; s == ST_OK && i < d; i++) {
        xbar[i] = 0;
        for (size_t k = 0; k < n; k++)
            xbar[i] += X[k * d + i] / (double)n;
    }
    for (size_t k = 0; s == ST_OK && k < n; k++) {
        y[k] = logcost_forward(&cm->lc, y[k]);
        ybar += y[k] / (double)n;
    }
    for (size_t k = 0; s == ST_OK && k < n; k++) { /* centre in place */
        y[k] -= ybar;
        for (size_t i = 0; i < d; i++)
            X[k * d + i] -= xbar[i];
    }
    long k = s == ST_OK ? plane_select(n, d, X, y, sel, g, &first_sig) : 0;
    if (k < 0)
        s = ST_ENOMEM;
    for (size_t i = 0; s == ST_OK && i < d; i++)
        sig[i] = 0;
    for (long a = 0; s == ST_OK && a < k; a++)
        sig[sel[a]] = a > 0 || first_sig;
    *y0 = ybar;
    free(sel);
    free(X);
    free(y);
    return s;
}

/* The point t along the plane's way down from b0: b0 - t g, each coordinate stopped short of
 * its bound and its move_limit from b0 (a projected path), rounded; 0 if
 * rounding left the bounds. */
static int path_point(const carbs *c, const capm *cm, const double *b0, const double *g, double t,
                      double *b)
{
    for (size_t i = 0; i < c->d; i++) {
        double r = move_limit(c, cm, i);
        double lo = fmax(c->lo_b[i], b0[i] - r), hi = fmin(c->hi_b[i], b0[i] + r);
        double x = b0[i] - t * g[i];
        double pad = isfinite(hi - lo) ? 1e-3 * (hi - lo) : 1e-3;
        b[i] = x < lo + pad ? fmin(b0[i], lo + pad) : x > hi - pad ? fmax(b0[i], hi - pad) : x;
    }
    return carbs_priv_round(c, b);
}

/* Moves b down the fitted plane (lin_fit) to the first point where the plane plus z times the
 * GP's predictive sd (which grows away from the data, so the margin is honest about an
 * extrapolation) is under the cap: PATH_POINTS steps from b to PATH_SPAN times the distance at
 * which the plane alone reaches the cap. *v: that checked cost. ST_OK, ST_ERANGE (no point on
 * the path is admissible: b is the cheapest one), ST_ENOMEM. */
static st_status lin_descend(carbs *c, const capm *cm, double *b, double *v)
{
    size_t d = c->d, P = PATH_POINTS;
    if (!cm->plane)
        return ST_ERANGE; /* a plane that could not be fitted shows no way down */
    double *b0 = malloc((d + P * d + 2 * P) * sizeof(double));
    if (!b0)
        return ST_ENOMEM;
    double *B = b0 + d, *mu = B + P * d, *var = mu + P;
    const double *g = cm->plane + d;
    memcpy(b0, b, d * sizeof(double));
    double capl = logcost_forward(&cm->lc, cm->cap), gg = 0;
    for (size_t i = 0; i < d; i++)
        gg += g[i] * g[i];
    st_status s = gg > 1e-12 ? ST_OK : ST_ERANGE; /* a flat plane shows no way down */
    double t_cap = s == ST_OK ? fmax(plane_at(c, cm, b0) - capl, 0.0) / gg : 0;
    size_t n = 0;
    for (size_t k = 1; s == ST_OK && k <= P; k++)
        n += path_point(c, cm, b0, g, t_cap * PATH_SPAN * (double)k / (double)P, B + n * d);
    if (s == ST_OK && n > 0)
        s = gp_predict(cm->g, n, B, mu, var);
    double best = INFINITY;
    for (size_t k = 0; s == ST_OK && k < n; k++) {
        double sd = cm->infl * sqrt((var[k] > 0 ? var[k] : 0) + cm->noise);
        double vk = logcost_inverse(&cm->lc, plane_at(c, cm, B + k * d) + cm->z * sd);
        if (vk < best) { /* the first admissible one, else the cheapest */
            best = vk;
            memcpy(b, B + k * d, d * sizeof(double));
        }
        if (cap_ok(cm, vk))
            break;
    }
    *v = best;
    free(b0);
    if (s == ST_OK && !cap_ok(cm, best))
        return ST_ERANGE;
    return s;
}

/* The observed point (success or cost-only) of lowest checked cost; if it is admissible, b
 * becomes the admissible point nearest `from` on the segment between them and *ok = 1. */
static st_status toward_anchor(carbs *c, const capm *cm, const double *from, double *b, double *v,
                               double *trial, int *ok)
{
    size_t n, d = c->d, best = 0;
    double *X, *cost;
    if (cap_cost_data(c, &n, &X, &cost) != ST_OK)
        return ST_ENOMEM;
    st_status s = n > 0 ? cap_cost(c, cm, n, X, cost) : ST_OK;
    for (size_t i = 1; s == ST_OK && i < n; i++)
        if (cost[i] < cost[best])
            best = i;
    if (s == ST_OK && n > 0 && cap_ok(cm, cost[best])) {
        memcpy(b, X + best * d, d * sizeof(double));
        *v = cost[best];
        *ok = 1;
        s = bisect_back(c, cm, from, b, v, trial);
    }
    free(X);
    free(cost);
    return s;
}

st_status cap_descend(carbs *c, const capm *cm, double *b, double *v)
{
    size_t d = c->d;
    if (cm->kind == CAP_NONE || cm->kind == CAP_BLIND) {
        *v = NAN;
        return ST_OK;
    }
    st_status s = cap_cost(c, cm, 1, b, v);
    if (s != ST_OK || cap_ok(cm, *v))
        return s;
    double *nb = malloc(5 * d * sizeof(double)), nv = 0;
    if (!nb)
        return ST_ENOMEM;
    double *prev = nb + d, *trial = nb + 2 * d, *start = nb + 4 * d;
    memcpy(start, b, d * sizeof(double));
    double step = c->o.search_radius;
    int ok = 0;
    for (int it = 0; it < DESCENT_ITERS && s == ST_OK && !ok && step > 1e-4; it++) {
        if (!best_move(c, cm, start, b, *v, step, nb, &nv, trial, &s)) {
            step *= 0.5;
            continue;
        }
        memcpy(prev, b, d * sizeof(double));
        memcpy(b, nb, d * sizeof(double));
        *v = nv;
        ok = cap_ok(cm, *v);
    }
    if (s == ST_OK && ok)
        s = bisect_back(c, cm, prev, b, v, trial);
    if (s == ST_OK && !ok)
        s = toward_anchor(c, cm, start, b, v, trial, &ok);
    /* the GP's mean reverts to its data away from them: when every cost it saw is above the
     * cap (a search centre over the cap) it shows no way down, and the plane does */
    if (s == ST_OK && !ok && cm->kind == CAP_GP) {
        memcpy(b, start, d * sizeof(double));
        s = lin_descend(c, cm, b, v);
        ok = s == ST_OK;
        if (s == ST_ERANGE)
            s = ST_OK;
    }
    free(nb);
    if (s != ST_OK)
        return s;
    return ok ? ST_OK : ST_ERANGE;
}

st_status cap_enforce(carbs *c, const capm *cm, double *b, cap_draw_fn draw, void *ctx,
                      size_t tries, double *v)
{
    size_t d = c->d;
    if (cm->kind == CAP_NONE || cm->kind == CAP_BLIND) {
        *v = NAN;
        return ST_OK;
    }
    st_status s = cap_cost(c, cm, 1, b, v);
    if (s != ST_OK || cap_ok(cm, *v))
        return s;

    /* redraw; start the descent from the cheapest draw if none is admissible */
    double *cheap = malloc(d * sizeof(double)), cv = *v;
    if (!cheap)
        return ST_ENOMEM;
    memcpy(cheap, b, d * sizeof(double));
    for (size_t t = 0; t < tries && s == ST_OK; t++) {
        draw(c, ctx, b);
        s = cap_cost(c, cm, 1, b, v);
        if (s != ST_OK || cap_ok(cm, *v))
            break;
        if (*v < cv) {
            cv = *v;
            memcpy(cheap, b, d * sizeof(double));
        }
    }
    if (s == ST_OK && !cap_ok(cm, *v)) {
        memcpy(b, cheap, d * sizeof(double));
        s = cap_descend(c, cm, b, v);
    }
    free(cheap);
    return s;
}

int carbs_cap_blind(const carbs *c)
{
    return isfinite(c->o.max_suggestion_cost) && !c->cost_fn &&
           c->n_succ + c->n_cobs < CAP_MIN_COST_OBS;
}
