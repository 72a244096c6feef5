/*
 * sample.c — where points come from (shared specs/carbs.md §5.4): truncated-normal draws
 * around an origin in the basic space (a categorical keeps or redraws its choice), rounding
 * with the inactive parameters of conditional spaces put at their centre, CARBS' locality
 * weight, and the initial design (scrambled Halton or Sobol through the normal inverse CDF, or
 * i.i.d. Gaussian in faithful mode). Not here: the models (models.c) and the acquisition
 * (suggest.c).
 */
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_qrng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "carbs/carbs_int.h"

static int faithful(const carbs *c)
{
    return c->o.mode == CARBS_MODE_FAITHFUL;
}

static int inside(const carbs *c, const double *b)
{
    for (size_t i = 0; i < c->d; i++)
        if (!(b[i] > c->lo_b[i] && b[i] < c->hi_b[i]))
            return 0;
    return 1;
}

/* The radius of the draws and of the locality weight: the trust region's while the Bayesian
 * candidates are drawn (suggest.c sets c->radius), else the option's. */
static double radius(const carbs *c)
{
    return c->radius > 0 ? c->radius : c->o.search_radius;
}

/* Coordinate i's radius: an integer keeps search_radius (a narrower one can hardly reach the
 * next value: bench_categorical.py's integer-coded factor needed a median 201 runs with the trust
 * region on every coordinate, 56 with integers left out). */
static double coord_radius(const carbs *c, size_t i)
{
    return c->params[i].is_integer ? c->o.search_radius : radius(c);
}

/* One coordinate from N(o, r^2) truncated to (lo, hi), by the inverse CDF at u in (0, 1).
 * The origin is first moved inside the bounds so the interval always has mass. */
static double trunc_normal(double o, double r, double lo, double hi, double u)
{
    if (isfinite(lo) && o <= lo)
        o = isfinite(hi) ? lo + 1e-3 * (hi - lo) : lo + 1e-3 * r;
    if (isfinite(hi) && o >= hi)
        o = isfinite(lo) ? hi - 1e-3 * (hi - lo) : hi - 1e-3 * r;
    double pa = isfinite(lo) ? gsl_cdf_ugaussian_P((lo - o) / r) : 0.0;
    double pb = isfinite(hi) ? gsl_cdf_ugaussian_P((hi - o) / r) : 1.0;
    double p = pa + u * (pb - pa);
    double x = o + r * gsl_cdf_ugaussian_Pinv(p);
    if (!(x > lo))
        x = isfinite(hi) ? lo + 1e-9 * (hi - lo) : lo + 1e-9;
    if (!(x < hi))
        x = isfinite(lo) ? hi - 1e-9 * (hi - lo) : hi - 1e-9;
    return x;
}

int carbs_priv_round(const carbs *c, double *b)
{
    for (size_t i = 0; i < c->d; i++)
        b[i] = space_round_basic(&c->params[i], b[i]);
    /* an inactive parameter sits at its centre, as the observations impute it (parents
     * first, so each parent is already final) */
    for (size_t i = 0; i < c->d; i++)
        if (c->parent[i] != SIZE_MAX && !carbs_priv_active(c, b, i))
            b[i] = c->center_b[i];
    return inside(c, b);
}

void carbs_priv_to_params(const carbs *c, const double *b, double *x)
{
    for (size_t i = 0; i < c->d; i++)
        x[i] = carbs_priv_active(c, b, i) ? space_param_value(&c->params[i], b[i]) : NAN;
}

/* Coordinate i of a point drawn near origin o from u in (0, 1): N(o, r^2) truncated to the
 * bounds; a categorical keeps the origin's choice for u < 1/2 and else takes any choice
 * uniformly (the GP, not the distance, then says which choice is good). */
double carbs_priv_draw_coord(const carbs *c, size_t i, double o, double u)
{
    if (c->params[i].space == CARBS_SPACE_CATEGORICAL) {
        double k = (double)c->params[i].n_choices;
        return u < 0.5 ? o : floor(fmin((u - 0.5) * 2.0 * k, k - 1));
    }
    return trunc_normal(o, coord_radius(c, i), c->lo_b[i], c->hi_b[i], u);
}

/* CARBS' locality weight over the ordered coordinates: a categorical coordinate has no
 * distance (every choice is one step from every other) and is left out; an integer one is
 * measured at its own radius (coord_radius) by scaling its distance. */
double carbs_priv_locality(const carbs *c, const double *b, size_t n_origins, const double *origins,
                           double *tmp)
{
    size_t d = c->d;
    int any = 0;
    double r = radius(c);
    for (size_t i = 0; i < d; i++)
        any |= c->params[i].space == CARBS_SPACE_CATEGORICAL || coord_radius(c, i) != r;
    if (!any)
        return acq_locality(d, b, n_origins, origins, r);
    /* copy the point and the origins, categorical coordinates zeroed, the others scaled by
     * r / their radius */
    double best = 0;
    for (size_t o = 0; o < n_origins; o++) {
        for (size_t i = 0; i < d; i++) {
            double f = c->params[i].space == CARBS_SPACE_CATEGORICAL ? 0.0 : r / coord_radius(c, i);
            tmp[i] = f * b[i];
            tmp[d + i] = f * origins[o * d + i];
        }
        double w = acq_locality(d, tmp, 1, tmp + d, r);
        best = w > best ? w : best;
    }
    return best;
}

/* ---- trust region (recommended mode) ----------------------------------------------------- */

size_t carbs_priv_stall_count(const carbs *c)
{
    size_t n = 0;
    double sg = c->o.maximize ? -1.0 : 1.0;
    for (size_t j = c->n_obs; j-- > 0;) {
        if (c->obs_fail[j])
            continue;
        int dominated = 0;
        for (size_t i = 0; i < j && !dominated; i++)
            dominated = !c->obs_fail[i] && c->obs_c[i] <= c->obs_c[j] &&
                        sg * c->obs_y[i] <= sg * c->obs_y[j];
        if (!dominated)
            return n;
        n++;
    }
    return n;
}

double carbs_priv_trust_radius(const carbs *c)
{
    if (faithful(c))
        return c->o.search_radius;
    size_t level = carbs_priv_stall_count(c) / TRUST_STALL % (TRUST_LEVELS + 1);
    return ldexp(c->o.search_radius, -(int)level);
}

/* A point near one of the origins (n_origins rows of D), rounded and inside the bounds. */
void carbs_priv_draw_near(carbs *c, size_t n_origins, const double *origins, double *b)
{
    for (int attempt = 0; attempt < 64; attempt++) {
        const double *o = origins + st_rng_uniform_int(c->rng, n_origins) * c->d;
        for (size_t i = 0; i < c->d; i++)
            b[i] = carbs_priv_draw_coord(c, i, o[i], st_rng_uniform_pos(c->rng));
        if (carbs_priv_round(c, b))
            return;
    }
    /* Rounding kept throwing the point out (an integer range narrower than its rounding): fall
     * back to the centre, which was validated at creation. */
    memcpy(b, c->center_b, c->d * sizeof(double));
    carbs_priv_round(c, b);
}

/* ---- random phase ------------------------------------------------------------------------ */

int carbs_priv_random_phase(const carbs *c)
{
    int count_fail =
        c->o.failures_count_as_random < 0 ? !faithful(c) : c->o.failures_count_as_random;
    size_t n = c->n_succ + (count_fail ? c->n_fail : 0);
    if (n < c->o.num_random_samples)
        return 1;
    /* a model needs data: CARBS needs >= 1 success; we ask for 2 in recommended mode */
    return c->n_succ < (faithful(c) ? 1u : 2u);
}

/* Design point n_design: a scrambled low-discrepancy point u in (0,1)^D (GSL's reverse-Halton
 * digit permutation, or Sobol, with a Cranley-Patterson random shift drawn from the seed),
 * mapped through the normal inverse CDF truncated to the bounds around the centre; or, in
 * faithful mode, i.i.d. Gaussian draws around the centre as CARBS does. */
void carbs_priv_qrng_free(carbs *c)
{
    if (c->qrng)
        gsl_qrng_free(c->qrng);
    c->qrng = NULL;
    c->qrng_drawn = 0;
}

/* Point k (from 0) of the design's QMC sequence into u (d values). The generator is kept in
 * the handle: the usual next point costs one step, where drawing k + 1 points from the start
 * each time made a sweep's random phase quadratic in its length (2026-11-25: 31% of a
 * controller's CPU at 10,000 runs). Any other k (a rewind) starts the sequence again. */
static st_status qmc_point(carbs *c, carbs_design dsg, size_t k, double *u)
{
    if (c->qrng && (c->qrng_kind != (int)dsg || k < c->qrng_drawn))
        carbs_priv_qrng_free(c);
    if (!c->qrng) {
        c->qrng = gsl_qrng_alloc(
            dsg == CARBS_DESIGN_SOBOL ? gsl_qrng_sobol : gsl_qrng_reversehalton, (unsigned)c->d);
        if (!c->qrng)
            return ST_ENOMEM;
        c->qrng_kind = (int)dsg;
        c->qrng_drawn = 0;
    }
    while (c->qrng_drawn <= k) {
        gsl_qrng_get(c->qrng, u);
        c->qrng_drawn++;
    }
    return ST_OK;
}

void carbs_priv_random_point(carbs *c, double *b)
{
    carbs_design dsg = c->o.design;
    if (dsg == CARBS_DESIGN_AUTO)
        dsg = faithful(c) ? CARBS_DESIGN_GAUSSIAN : CARBS_DESIGN_HALTON;
    if (dsg == CARBS_DESIGN_SOBOL && c->d > 40) /* GSL's Sobol stops at 40 dimensions */
        dsg = CARBS_DESIGN_HALTON;
    if (dsg == CARBS_DESIGN_HALTON && c->d > 1229)
        dsg = CARBS_DESIGN_GAUSSIAN;
    if (dsg == CARBS_DESIGN_GAUSSIAN) {
        carbs_priv_draw_near(c, 1, c->center_b, b);
        return;
    }

    size_t d = c->d, k = c->n_design % 65536; /* the design repeats after 65536 points */
    double *u = b;                            /* the unit point is built in place */
    if (qmc_point(c, dsg, k, u) != ST_OK) {
        carbs_priv_draw_near(c, 1, c->center_b, b);
        return;
    }

    /* the shift depends on the seed only, so every design point shares it */
    st_rng *shift_rng;
    if (st_rng_create(st_mix64(c->o.seed ^ 0x5ca1e7u), &shift_rng) != ST_OK) {
        carbs_priv_draw_near(c, 1, c->center_b, b);
        return;
    }
    for (size_t i = 0; i < d; i++) {
        double v = u[i] + st_rng_uniform(shift_rng);
        v -= floor(v);
        if (v <= 0.0)
            v = 0x1p-33;
        if (c->params[i].space == CARBS_SPACE_CATEGORICAL) /* every choice equally */
            b[i] = floor(fmin(v * (double)c->params[i].n_choices, c->hi_b[i] - 0.5));
        else
            b[i] = trunc_normal(c->center_b[i], c->o.search_radius, c->lo_b[i], c->hi_b[i], v);
    }
    st_rng_destroy(shift_rng);
    if (!carbs_priv_round(c, b))
        carbs_priv_draw_near(c, 1, c->center_b, b);
}
