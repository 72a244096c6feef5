/*
 * bootstrap.c — nonparametric bootstrap over points or clusters: index sets drawn up front from
 * one seeded MT19937 stream (numpy's RandomState(seed).choice sequence), replicates minimised by
 * L-BFGS from the full-data optimum on worker threads, percentile intervals and standard errors
 * for the parameters and for derived quantities (a, N_opt, D_opt, D/N, L*, a prediction).
 * Not here: the multi-start fit itself (fit.c). Depends on NLopt, common/st.h's RNG.
 */
#include "fit/fit_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct fit_boot {
    size_t n_rep, np;
    double *rep; /* n_rep × np natural parameters */
    double *der; /* n_rep × FIT_DER_COUNT */
};

fit_boot_options fit_boot_options_default(void)
{
    fit_boot_options o;
    memset(&o, 0, sizeof(o));
    o.n_rep = 1000;
    o.seed = 42;
    o.target_C = 5.88e23;
    return o;
}

static const char *const der_names[] = {"a",     "N_opt",     "D_opt", "tokens_per_param",
                                        "L_opt", "prediction"};

const char *fit_derived_name(size_t i)
{
    return i < FIT_DER_COUNT ? der_names[i] : NULL;
}

void fit_derived(const fit_law *law, const double *nat, const fit_boot_options *o, double *out)
{
    for (size_t k = 0; k < FIT_DER_COUNT; k++)
        out[k] = NAN;
    if (!law->chinchilla_like)
        return;
    fit_alloc al;
    if (fit_allocate(nat, o->target_C, &al) != ST_OK)
        return;
    out[FIT_DER_A] = al.a;
    out[FIT_DER_NOPT] = al.N_opt;
    out[FIT_DER_DOPT] = al.D_opt;
    out[FIT_DER_TPP] = al.tokens_per_param;
    out[FIT_DER_LOPT] = al.L_opt;
    if (o->target_N > 0 && o->target_D > 0)
        out[FIT_DER_PRED] = fit_loss_at(nat, o->target_N, o->target_D);
}

/* numpy's legacy bounded draw: the next 32-bit output masked to 2^k - 1, rejected above n-1. */
static size_t draw_index(st_rng *r, size_t n)
{
    uint32_t mask = (uint32_t)(n - 1);
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    for (;;) {
        uint32_t v = st_rng_u32(r) & mask;
        if (v <= n - 1)
            return v;
    }
}

typedef struct boot_ctx {
    const fit_prob *base;
    fit_local *loc;
    const size_t *idx, *off; /* replicate r uses idx[off[r] .. off[r+1]) */
    const double *theta0;
    const fit_law *law;
    const fit_boot_options *o;
    fit_boot *b;
} boot_ctx;

static void boot_job(void *c, size_t worker, size_t r)
{
    boot_ctx *bc = c;
    fit_prob p = *bc->base;
    p.idx = bc->idx + bc->off[r];
    p.n = bc->off[r + 1] - bc->off[r];
    fit_local *L = &bc->loc[worker];
    L->prob = &p;
    double th[FIT_MAX_PAR], fv;
    memcpy(th, bc->theta0, bc->law->n_par * sizeof(double));
    fit_local_run(L, th, &fv);
    double *nat = bc->b->rep + r * bc->b->np;
    fit_law_natural(bc->law, th, nat);
    if (!isfinite(fv))
        for (size_t j = 0; j < bc->b->np; j++)
            nat[j] = NAN;
    fit_derived(bc->law, nat, bc->o, bc->b->der + r * FIT_DER_COUNT);
}

st_status fit_bootstrap(fit *f, const fit_boot_options *o, fit_boot **out)
{
    *out = NULL;
    char *err = fit_int_err(f);
    err[0] = 0;
    const double *theta = fit_theta(f);
    if (!theta)
        return st_errf(err, ST_ESTATE, "bootstrap needs a fitted model: call fit_run first");
    if (o->n_rep == 0)
        return st_errf(err, ST_EINVAL, "bootstrap needs n_rep > 0");
    const fit_law *law = fit_get_law(f);
    const fit_options *fo = fit_get_options(f);
    size_t n = fit_int_n(f), np = law->n_par;
    fit_boot *b = calloc(1, sizeof(*b));
    size_t *off = malloc((o->n_rep + 1) * sizeof(size_t)), *idx = NULL, *cl_start = NULL,
           *cl_rows = NULL, n_cl = 0;
    st_rng *rng = NULL;
    fit_local *loc = NULL;
    st_status st = ST_OK;
    if (!b || !off)
        goto oom;
    b->n_rep = o->n_rep;
    b->np = np;
    b->rep = malloc(o->n_rep * np * sizeof(double));
    b->der = malloc(o->n_rep * FIT_DER_COUNT * sizeof(double));
    if (!b->rep || !b->der || st_rng_create(o->seed, &rng) != ST_OK)
        goto oom;

    /* Index sets. Clusters: rows grouped by id (in order of first appearance). */
    if (o->cluster) {
        cl_start = malloc((n + 1) * sizeof(size_t));
        cl_rows = malloc(n * sizeof(size_t));
        size_t *ids = malloc(n * sizeof(size_t));
        if (!cl_start || !cl_rows || !ids) {
            free(ids);
            goto oom;
        }
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            size_t k;
            for (k = 0; k < n_cl; k++)
                if (ids[k] == o->cluster[i])
                    break;
            if (k == n_cl)
                ids[n_cl++] = o->cluster[i];
        }
        for (size_t k = 0; k < n_cl; k++) {
            cl_start[k] = m;
            for (size_t i = 0; i < n; i++)
                if (o->cluster[i] == ids[k])
                    cl_rows[m++] = i;
        }
        cl_start[n_cl] = m;
        free(ids);
    }
    size_t cap = o->n_rep * n, used = 0;
    idx = malloc(cap * sizeof(size_t));
    if (!idx)
        goto oom;
    for (size_t r = 0; r < o->n_rep; r++) {
        off[r] = used;
        if (!o->cluster) {
            for (size_t k = 0; k < n; k++)
                idx[used++] = draw_index(rng, n);
            continue;
        }
        for (size_t k = 0; k < n_cl; k++) {
            size_t c = draw_index(rng, n_cl), len = cl_start[c + 1] - cl_start[c];
            if (used + len > cap) {
                size_t *ni = realloc(idx, 2 * (cap + len) * sizeof(size_t));
                if (!ni)
                    goto oom;
                idx = ni;
                cap = 2 * (cap + len);
            }
            memcpy(idx + used, cl_rows + cl_start[c], len * sizeof(size_t));
            used += len;
        }
    }
    off[o->n_rep] = used;

    /* Replicates on threads; plain Huber for the likelihood, as Epoch does. */
    fit_prob base;
    fit_int_prob(f, fo->objective == FIT_OBJ_HUBER_LIK ? FIT_OBJ_HUBER : fo->objective, &base);
    size_t nt =
        o->n_threads ? o->n_threads : (fo->n_threads ? fo->n_threads : fit_default_threads());
    if (nt > o->n_rep)
        nt = o->n_rep;
    loc = calloc(nt, sizeof(fit_local));
    if (!loc)
        goto oom;
    for (size_t t = 0; t < nt && st == ST_OK; t++)
        st = fit_local_init(&loc[t], &base, np, fit_int_fixed(f), 1e-10, 1e-8, 5 * fo->max_eval);
    if (st == ST_OK) {
        boot_ctx bc = {&base, loc, idx, off, theta, law, o, b};
        st = fit_pool_run(nt, o->n_rep, boot_job, &bc);
    }
    for (size_t t = 0; t < nt; t++)
        fit_local_clear(&loc[t]);
    if (st != ST_OK) {
        st_errf(err, st, "bootstrap: could not start the optimiser");
        goto fail;
    }
    goto done;
oom:
    st = st_errf(err, ST_ENOMEM, "bootstrap: out of memory");
fail:
    fit_boot_destroy(b);
    b = NULL;
done:
    free(loc);
    free(off);
    free(idx);
    free(cl_start);
    free(cl_rows);
    st_rng_destroy(rng);
    *out = b;
    return st;
}

void fit_boot_destroy(fit_boot *b)
{
    if (!b)
        return;
    free(b->rep);
    free(b->der);
    free(b);
}

size_t fit_boot_n_rep(const fit_boot *b)
{
    return b->n_rep;
}

const double *fit_boot_replicate(const fit_boot *b, size_t r)
{
    return r < b->n_rep ? b->rep + r * b->np : NULL;
}

/* Column j of an n_rep × stride matrix without NaNs, sorted; returns the count. */
static size_t column(const fit_boot *b, const double *m, size_t stride, size_t j, double *v)
{
    size_t k = 0;
    for (size_t r = 0; r < b->n_rep; r++)
        if (isfinite(m[r * stride + j]))
            v[k++] = m[r * stride + j];
    fit_sort_doubles(v, k);
    return k;
}

static double col_se(const fit_boot *b, const double *m, size_t stride, size_t j)
{
    double s = 0, s2 = 0;
    size_t k = 0;
    for (size_t r = 0; r < b->n_rep; r++) {
        double v = m[r * stride + j];
        if (isfinite(v)) {
            s += v;
            k++;
        }
    }
    if (k < 2)
        return NAN;
    double mean = s / (double)k;
    for (size_t r = 0; r < b->n_rep; r++) {
        double v = m[r * stride + j];
        if (isfinite(v))
            s2 += (v - mean) * (v - mean);
    }
    return sqrt(s2 / (double)(k - 1));
}

static void col_interval(const fit_boot *b, const double *m, size_t stride, size_t j, double level,
                         double *lo, double *hi)
{
    double *v = malloc(b->n_rep * sizeof(double));
    *lo = *hi = NAN;
    if (!v)
        return;
    size_t k = column(b, m, stride, j, v);
    if (k) {
        *lo = fit_quantile_sorted(v, k, (1 - level) / 2);
        *hi = fit_quantile_sorted(v, k, (1 + level) / 2);
    }
    free(v);
}

double fit_boot_se(const fit_boot *b, size_t i)
{
    return i < b->np ? col_se(b, b->rep, b->np, i) : NAN;
}

void fit_boot_interval(const fit_boot *b, size_t i, double level, double *lo, double *hi)
{
    if (i >= b->np) {
        *lo = *hi = NAN;
        return;
    }
    col_interval(b, b->rep, b->np, i, level, lo, hi);
}

double fit_boot_derived_se(const fit_boot *b, size_t k)
{
    return k < FIT_DER_COUNT ? col_se(b, b->der, FIT_DER_COUNT, k) : NAN;
}

void fit_boot_derived_interval(const fit_boot *b, size_t k, double level, double *lo, double *hi)
{
    if (k >= FIT_DER_COUNT) {
        *lo = *hi = NAN;
        return;
    }
    col_interval(b, b->der, FIT_DER_COUNT, k, level, lo, hi);
}

double fit_boot_derived_median(const fit_boot *b, size_t k)
{
    double lo, hi;
    if (k >= FIT_DER_COUNT)
        return NAN;
    col_interval(b, b->der, FIT_DER_COUNT, k, 0.0, &lo, &hi);
    return lo;
}
