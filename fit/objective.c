/*
 * objective.c — the objectives (summed or averaged Huber, Epoch's Huber likelihood, MSE, MAE;
 * log or linear residuals; per-point weights), the NLopt L-BFGS wrapper that minimises them over
 * the free coordinates, and the small pthread pool that spreads starts and replicates.
 * Not here: the multi-start logic (fit.c). Depends on NLopt, GSL (normal tail), pthreads.
 */
#include "fit/fit_int.h"

#include <gsl/gsl_cdf.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

double fit_huber_log_z(double delta)
{
    /* Z(delta) = sqrt(2 pi) (1 - 2 Q(delta)) + 2 exp(-delta^2 / 2) / delta (Epoch 2024 §A) */
    double z =
        sqrt(2 * M_PI) * (1 - 2 * gsl_cdf_ugaussian_Q(delta)) + 2 * exp(-delta * delta / 2) / delta;
    return log(z);
}

/* Huber_delta(u) = u^2/2 for |u| <= delta, delta (|u| - delta/2) beyond (scipy.special.huber);
 * *d receives its derivative. */
static inline double huber(double u, double delta, double *d)
{
    /* branch-free: with c = clamp(u, -delta, delta), Huber = c (u - c/2) and Huber' = c */
    double c = fmin(fmax(u, -delta), delta);
    *d = c;
    return c * (u - 0.5 * c);
}

double fit_prob_eval(const fit_prob *p, const double *th, double *g)
{
    const fit_law *law = p->law;
    size_t np = law->n_par, nin = law->n_in;
    int lik = p->obj == FIT_OBJ_HUBER_LIK;
    double ls = lik ? th[np] : 0, sig = exp(ls);
    double f = 0, wsum = 0, gs = 0, gi[FIT_MAX_PAR];
    if (law->huber_log && p->obj == FIT_OBJ_HUBER && !p->linear)
        return law->huber_log(p, th, g);
    if (g)
        memset(g, 0, (np + (size_t)lik) * sizeof(double));
    for (size_t k = 0; k < p->n; k++) {
        size_t i = p->idx ? p->idx[k] : k;
        double w = p->w[i];
        double lyh = law->eval(th, p->x + i * nin, p->lx + i * nin, g ? gi : NULL);
        double r, scale = 1, d;
        if (p->linear) {
            double yh = exp(lyh);
            r = yh - p->y[i];
            scale = yh; /* d yhat / d theta = yhat d log yhat / d theta */
        } else {
            r = lyh - p->ly[i];
        }
        switch (p->obj) {
        case FIT_OBJ_HUBER:
            f += w * huber(r, p->delta, &d);
            break;
        case FIT_OBJ_HUBER_LIK: {
            /* -log density = Huber(r/sigma) + log sigma + log Z */
            double u = r / sig, du;
            f += w * (huber(u, p->delta, &du) + ls + p->log_z);
            d = du / sig;
            gs += w * (1 - du * u);
            break;
        }
        case FIT_OBJ_MSE:
            f += w * 0.5 * r * r;
            d = r;
            break;
        case FIT_OBJ_MAE:
        default:
            f += w * fabs(r);
            d = r > 0 ? 1 : (r < 0 ? -1 : 0);
            break;
        }
        wsum += w;
        if (g) {
            double c = w * d * scale;
            for (size_t j = 0; j < np; j++)
                g[j] += c * gi[j];
        }
    }
    if (g && lik)
        g[np] = gs;
    if (p->mean && wsum > 0) {
        f /= wsum;
        if (g)
            for (size_t j = 0; j < np + (size_t)lik; j++)
                g[j] /= wsum;
    }
    return f;
}

double fit_prob_sigma_start(const fit_prob *p, const double *th)
{
    /* The two regimes of the Huber likelihood: sigma = delta mean|r| (linear part dominates)
     * and sigma = rms(r) (quadratic part); keep whichever gives the lower objective. */
    const fit_law *law = p->law;
    double sa = 0, s2 = 0, sw = 0;
    for (size_t k = 0; k < p->n; k++) {
        size_t i = p->idx ? p->idx[k] : k;
        double lyh = law->eval(th, p->x + i * law->n_in, p->lx + i * law->n_in, NULL);
        double r = p->linear ? exp(lyh) - p->y[i] : lyh - p->ly[i];
        sa += p->w[i] * fabs(r);
        s2 += p->w[i] * r * r;
        sw += p->w[i];
    }
    if (!(sw > 0))
        return 0;
    double c1 = log(fmax(p->delta * sa / sw, 1e-300)), c2 = log(fmax(sqrt(s2 / sw), 1e-300));
    double t[FIT_MAX_PAR + 1];
    memcpy(t, th, law->n_par * sizeof(double));
    t[law->n_par] = c1;
    double f1 = fit_prob_eval(p, t, NULL);
    t[law->n_par] = c2;
    double f2 = fit_prob_eval(p, t, NULL);
    return f1 <= f2 ? c1 : c2;
}

/* ---- NLopt L-BFGS over the free coordinates --------------------------------------------- */

static double local_obj(unsigned n, const double *x, double *grad, void *data)
{
    fit_local *L = data;
    for (unsigned j = 0; j < n; j++)
        L->full[L->free_idx[j]] = x[j];
    L->n_evals++;
    double f = fit_prob_eval(L->prob, L->full, grad ? L->gfull : NULL);
    if (grad)
        for (unsigned j = 0; j < n; j++)
            grad[j] = L->gfull[L->free_idx[j]];
    return isfinite(f) ? f : HUGE_VAL;
}

st_status fit_local_init(fit_local *L, const fit_prob *p, size_t n_full, const double *fixed,
                         double ftol_rel, double xtol_rel, size_t max_eval)
{
    memset(L, 0, sizeof(*L));
    L->prob = p;
    L->n_full = n_full;
    L->fixed = fixed;
    for (size_t i = 0; i < n_full; i++)
        if (!fixed || isnan(fixed[i]))
            L->free_idx[L->n_free++] = i;
    if (L->n_free == 0)
        return ST_OK;
    L->opt = nlopt_create(NLOPT_LD_LBFGS, (unsigned)L->n_free);
    if (!L->opt)
        return ST_ENOMEM;
    nlopt_set_min_objective(L->opt, local_obj, L);
    nlopt_set_ftol_rel(L->opt, ftol_rel);
    nlopt_set_xtol_rel(L->opt, xtol_rel);
    nlopt_set_maxeval(L->opt, (int)max_eval);
    return ST_OK;
}

void fit_local_clear(fit_local *L)
{
    if (L->opt)
        nlopt_destroy(L->opt);
    L->opt = NULL;
}

int fit_local_run(fit_local *L, double *x, double *fval)
{
    double xf[FIT_MAX_PAR];
    for (size_t i = 0; i < L->n_full; i++) {
        if (L->fixed && !isnan(L->fixed[i]))
            x[i] = L->fixed[i];
        L->full[i] = x[i];
    }
    if (L->n_free == 0) {
        *fval = fit_prob_eval(L->prob, x, NULL);
        return NLOPT_SUCCESS;
    }
    for (size_t j = 0; j < L->n_free; j++)
        xf[j] = x[L->free_idx[j]];
    double f = HUGE_VAL;
    int rc = nlopt_optimize(L->opt, xf, &f);
    for (size_t j = 0; j < L->n_free; j++)
        x[L->free_idx[j]] = xf[j];
    /* NLopt keeps the best point found even when it reports a failure; re-evaluate there so
     * the value always belongs to x. */
    if (rc < 0 || !isfinite(f)) {
        for (size_t i = 0; i < L->n_full; i++)
            L->full[i] = x[i];
        f = fit_prob_eval(L->prob, L->full, NULL);
    }
    *fval = isfinite(f) ? f : HUGE_VAL;
    return rc;
}

/* ---- the pool ------------------------------------------------------------------------------ */

typedef struct pool {
    atomic_size_t next;
    size_t n_items;
    void (*job)(void *, size_t, size_t);
    void *ctx;
} pool;

typedef struct pool_arg {
    pool *p;
    size_t worker;
} pool_arg;

static void *pool_main(void *arg)
{
    pool_arg *a = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&a->p->next, 1);
        if (i >= a->p->n_items)
            break;
        a->p->job(a->p->ctx, a->worker, i);
    }
    return NULL;
}

size_t fit_default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (size_t)n : 1;
}

st_status fit_pool_run(size_t n_threads, size_t n_items, void (*job)(void *, size_t, size_t),
                       void *ctx)
{
    pool p;
    atomic_init(&p.next, 0);
    p.n_items = n_items;
    p.job = job;
    p.ctx = ctx;
    if (n_threads > n_items)
        n_threads = n_items ? n_items : 1;
    st_status st = ST_OK;
    pthread_t *tid = n_threads > 1 ? malloc((n_threads - 1) * sizeof(*tid)) : NULL;
    pool_arg *args = malloc(n_threads * sizeof(*args));
    if (!args || (n_threads > 1 && !tid)) {
        free(tid);
        free(args);
        return ST_ENOMEM;
    }
    size_t started = 0;
    for (size_t t = 0; t < n_threads; t++) {
        args[t].p = &p;
        args[t].worker = t;
    }
    for (size_t t = 1; t < n_threads; t++) {
        if (pthread_create(&tid[t - 1], NULL, pool_main, &args[t]) != 0) {
            st = ST_ENOMEM;
            break;
        }
        started++;
    }
    pool_main(&args[0]);
    for (size_t t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    free(tid);
    free(args);
    /* work that threads which failed to start would have done already ran on this thread */
    (void)st;
    return ST_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double fit_quantile_sorted(const double *v, size_t n, double q)
{
    if (n == 0)
        return NAN;
    double h = (double)(n - 1) * q;
    size_t lo = (size_t)floor(h);
    if (lo >= n - 1)
        return v[n - 1];
    return v[lo] + (h - (double)lo) * (v[lo + 1] - v[lo]);
}

void fit_sort_doubles(double *v, size_t n)
{
    qsort(v, n, sizeof(double), cmp_double);
}
