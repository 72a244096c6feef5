/*
 * analyze.c — the numbers behind the report: the Pareto front of the fitted runs, the
 * loss-against-cost law y = E + A C^-alpha (fit/'s saturating law) with a bootstrap band over
 * the front's points, each searched parameter's basic coordinate regressed on log10 cost along
 * the front (CARBS' own analysis; GSL least squares) with a bootstrap band, the predictions for
 * runs beyond the fit, and the recommendation at the target compute read off these laws.
 * It draws nothing and writes nothing; it is not the extrapolation engine.
 */
#include <gsl/gsl_fit.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "carbs/carbs.h"
#include "fit/fit.h"
#include "report/report_int.h"

double rp_value_to_basic(int space, double v)
{
    if (space == CARBS_SPACE_LOG)
        return v > 0 ? log10(v) : NAN;
    if (space == CARBS_SPACE_LOGIT)
        return v > 0 && v < 1 ? log10(v / (1 - v)) : NAN;
    return v;
}

double rp_basic_to_value(int space, double b)
{
    if (space == CARBS_SPACE_LOG)
        return pow(10, b);
    if (space == CARBS_SPACE_LOGIT)
        return 1 / (1 + pow(10, -b));
    return b;
}

/* Front order: increasing cost, then better objective first. */
static int by_cost(const report *r, size_t a, size_t b)
{
    const rp_run *x = &r->runs[a], *y = &r->runs[b];
    if (x->cost != y->cost)
        return x->cost < y->cost ? -1 : 1;
    double sx = r->maximize ? -x->objective : x->objective;
    double sy = r->maximize ? -y->objective : y->objective;
    return (sx > sy) - (sx < sy);
}

/* Insertion sort with a context (qsort_r is not in C11); the front holds few runs. */
static void sort_idx(size_t *idx, size_t n, const report *r)
{
    for (size_t i = 1; i < n; i++) {
        size_t v = idx[i], j = i;
        while (j > 0 && by_cost(r, idx[j - 1], v) > 0) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = v;
    }
}

/* Percentiles (1 - level)/2 and (1 + level)/2 of v[0..n-1] (sorted in place; NANs dropped). */
static void band_of(double *v, size_t n, double level, double *lo, double *hi)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(v[i]))
            v[m++] = v[i];
    if (m < 2) {
        *lo = *hi = NAN;
        return;
    }
    gsl_sort(v, 1, m);
    *lo = gsl_stats_quantile_from_sorted_data(v, 1, m, (1 - level) / 2);
    *hi = gsl_stats_quantile_from_sorted_data(v, 1, m, (1 + level) / 2);
}

void rp_loss_at(const report *r, double C, double *y, double *lo, double *hi)
{
    *y = *lo = *hi = NAN;
    if (!r->loss_law.ok || !(C > 0))
        return;
    /* eq.: y = E + A C^-alpha (saturating power law) */
    *y = r->loss_nat[2] + r->loss_nat[0] * pow(C, -r->loss_nat[1]);
    if (r->n_loss_boot < 2)
        return;
    double *v = malloc(r->n_loss_boot * sizeof(double));
    if (!v)
        return;
    for (size_t k = 0; k < r->n_loss_boot; k++) {
        const double *t = &r->loss_boot[3 * k];
        v[k] = t[2] + t[0] * pow(C, -t[1]);
    }
    band_of(v, r->n_loss_boot, r->o.band_level, lo, hi);
    free(v);
}

/* y = E + A C^-alpha on the front; C is divided by the smallest front cost inside the fit so
 * that the law's start grid (ln A in [0, 25]) covers it. */
static st_status fit_loss_law(report *r, const double *grid)
{
    size_t n = r->n_front;
    if (r->maximize) {
        snprintf(r->loss_note, sizeof(r->loss_note), "no loss law: the objective is maximised");
        return ST_OK;
    }
    if (n < 4) {
        snprintf(r->loss_note, sizeof(r->loss_note),
                 "no loss law: %zu point%s on the front (4 needed)", n, n == 1 ? "" : "s");
        return ST_OK;
    }
    double *x = malloc(2 * n * sizeof(double)), *y = x ? x + n : NULL;
    if (!x)
        return ST_ENOMEM;
    double cref = r->runs[r->front[0]].cost;
    for (size_t i = 0; i < n; i++) {
        x[i] = r->runs[r->front[i]].cost / cref;
        y[i] = r->runs[r->front[i]].objective;
        if (!(y[i] > 0)) {
            free(x);
            snprintf(r->loss_note, sizeof(r->loss_note),
                     "no loss law: the objective is not positive on the front");
            return ST_OK;
        }
    }
    fit *f = NULL;
    fit_boot *b = NULL;
    st_status rc = fit_create(fit_law_saturating, &f);
    if (!rc) {
        fit_options fo = fit_options_default();
        fo.n_threads = 1;
        rc = fit_set_options(f, &fo);
    }
    if (!rc)
        rc = fit_set_data(f, n, x, y, NULL);
    if (!rc)
        rc = fit_run(f);
    if (rc == ST_ENOMEM)
        goto done;
    if (rc) {
        snprintf(r->loss_note, sizeof(r->loss_note), "no loss law: the fit failed (%s)",
                 fit_errmsg(f));
        rc = ST_OK;
        goto done;
    }
    const double *nat = fit_params(f); /* (A', alpha, E) with C / cref */
    r->loss_nat[0] = nat[0] * pow(cref, nat[1]);
    r->loss_nat[1] = nat[1];
    r->loss_nat[2] = nat[2];
    r->loss_law.ok = 1;
    for (int k = 0; k < 3; k++)
        r->loss_nat_lo[k] = r->loss_nat_hi[k] = NAN;

    if (r->o.n_boot > 0) {
        fit_boot_options bo = fit_boot_options_default();
        bo.n_rep = r->o.n_boot;
        bo.seed = r->o.seed;
        bo.n_threads = 1;
        rc = fit_bootstrap(f, &bo, &b);
        if (rc == ST_ENOMEM)
            goto done;
        if (!rc) {
            size_t m = fit_boot_n_rep(b);
            r->loss_boot = malloc((3 * m + 1) * sizeof(double));
            double *v = malloc((m + 1) * sizeof(double));
            if (!r->loss_boot || !v) {
                free(v);
                rc = ST_ENOMEM;
                goto done;
            }
            for (size_t k = 0; k < m; k++) {
                const double *t = fit_boot_replicate(b, k);
                if (!isfinite(t[0]) || !isfinite(t[1]) || !isfinite(t[2]))
                    continue;
                double *d = &r->loss_boot[3 * r->n_loss_boot++];
                d[0] = t[0] * pow(cref, t[1]);
                d[1] = t[1];
                d[2] = t[2];
            }
            for (int j = 0; j < 3; j++) {
                for (size_t k = 0; k < r->n_loss_boot; k++)
                    v[k] = r->loss_boot[3 * k + j];
                band_of(v, r->n_loss_boot, r->o.band_level, &r->loss_nat_lo[j], &r->loss_nat_hi[j]);
            }
            free(v);
        }
        rc = ST_OK;
    }
    for (size_t g = 0; g < RP_GRID; g++) {
        r->loss_law.c[g] = grid[g];
        rp_loss_at(r, grid[g], &r->loss_law.y[g], &r->loss_law.lo[g], &r->loss_law.hi[g]);
    }
done:
    fit_boot_destroy(b);
    fit_destroy(f);
    free(x);
    return rc;
}

/* One parameter's basic coordinate b = b0 + b1 log10 C along the front, bootstrapped over
 * the front's points (resampled with replacement, seeded). */
static st_status fit_hp(report *r, rp_hp *h, const double *grid)
{
    size_t n = r->n_front, nb = r->o.n_boot;
    double *X = malloc((4 * n + 2 * nb + RP_GRID * nb + nb + 4) * sizeof(double));
    if (!X)
        return ST_ENOMEM;
    double *B = X + n, *bx = B + n, *by = bx + n, *c0 = by + n, *c1 = c0 + nb;
    double *gv = c1 + nb, *tv = gv + RP_GRID * nb;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const rp_run *u = &r->runs[r->front[i]];
        double b = rp_value_to_basic(h->space, u->x[h->param]);
        if (isfinite(b)) {
            X[m] = log10(u->cost);
            B[m++] = b;
        }
    }
    h->at_target = h->lo = h->hi = h->b1_lo = h->b1_hi = NAN;
    double cov00, cov01, cov11, sumsq;
    if (m < 3 || gsl_fit_linear(X, 1, B, 1, m, &h->b0, &h->b1, &cov00, &cov01, &cov11, &sumsq) ||
        !isfinite(h->b0) || !isfinite(h->b1)) {
        free(X);
        return ST_OK;
    }
    h->ok = h->law.ok = 1;

    size_t nok = 0;
    st_rng *rng = NULL;
    if (nb > 0 && st_rng_create(r->o.seed + 1000003u * (h->param + 1), &rng)) {
        free(X);
        return ST_ENOMEM;
    }
    for (size_t k = 0; k < nb; k++) {
        for (size_t i = 0; i < m; i++) {
            size_t j = st_rng_uniform_int(rng, m);
            bx[i] = X[j];
            by[i] = B[j];
        }
        double a0, a1;
        if (gsl_fit_linear(bx, 1, by, 1, m, &a0, &a1, &cov00, &cov01, &cov11, &sumsq) ||
            !isfinite(a0) || !isfinite(a1))
            continue; /* all resampled costs equal: no slope */
        c0[nok] = a0;
        c1[nok++] = a1;
    }
    st_rng_destroy(rng);
    for (size_t g = 0; g < RP_GRID; g++) {
        double lc = log10(grid[g]);
        h->law.c[g] = grid[g];
        h->law.y[g] = rp_basic_to_value(h->space, h->b0 + h->b1 * lc);
        for (size_t k = 0; k < nok; k++)
            gv[k] = c0[k] + c1[k] * lc;
        double lo, hi;
        band_of(gv, nok, r->o.band_level, &lo, &hi);
        h->law.lo[g] = isfinite(lo) ? rp_basic_to_value(h->space, lo) : NAN;
        h->law.hi[g] = isfinite(hi) ? rp_basic_to_value(h->space, hi) : NAN;
    }
    double lt = log10(r->target), lo, hi;
    h->at_target = rp_basic_to_value(h->space, h->b0 + h->b1 * lt);
    for (size_t k = 0; k < nok; k++)
        tv[k] = c0[k] + c1[k] * lt;
    band_of(tv, nok, r->o.band_level, &lo, &hi);
    h->lo = isfinite(lo) ? rp_basic_to_value(h->space, lo) : NAN;
    h->hi = isfinite(hi) ? rp_basic_to_value(h->space, hi) : NAN;
    memcpy(tv, c1, nok * sizeof(double));
    band_of(tv, nok, r->o.band_level, &h->b1_lo, &h->b1_hi);
    free(X);
    return ST_OK;
}

st_status rp_analyze(report *r)
{
    r->rec_obj = r->rec_lo = r->rec_hi = r->p_diverge = NAN;
    r->rec_source = "laws along the Pareto front (fit/ saturating law for the objective; "
                    "CARBS-style regression of each parameter on log cost)";
    r->cost_lo = INFINITY;
    r->cost_hi = 0;

    /* 1. the Pareto front of the fitted runs: increasing cost, strictly improving objective */
    size_t *idx = malloc((r->n_runs + 1) * sizeof(size_t)), n = 0;
    if (!idx)
        return ST_ENOMEM;
    for (size_t i = 0; i < r->n_runs; i++)
        if (r->runs[i].succeeded && !r->runs[i].beyond)
            idx[n++] = i;
    sort_idx(idx, n, r);
    r->front = idx;
    r->n_front = 0;
    double best = r->maximize ? -INFINITY : INFINITY;
    for (size_t k = 0; k < n; k++) {
        rp_run *u = &r->runs[idx[k]];
        if (u->cost < r->cost_lo)
            r->cost_lo = u->cost;
        if (u->cost > r->cost_hi)
            r->cost_hi = u->cost;
        if (r->maximize ? u->objective > best : u->objective < best) {
            best = u->objective;
            u->on_front = 1;
            r->front[r->n_front++] = idx[k];
        }
    }

    /* 2. the target compute and the grid the laws are drawn on */
    r->target =
        r->o.target_compute > 0 ? r->o.target_compute : (r->cost_hi > 0 ? 10 * r->cost_hi : NAN);
    if (!r->n_front)
        return ST_OK;
    double glo = r->cost_lo, ghi = fmax(r->cost_hi, isfinite(r->target) ? r->target : 0);
    for (size_t i = 0; i < r->n_runs; i++)
        if (r->runs[i].beyond && r->runs[i].cost > ghi)
            ghi = r->runs[i].cost;
    double grid[RP_GRID], l0 = log10(glo) - 0.1, l1 = log10(ghi) + 0.1;
    for (size_t g = 0; g < RP_GRID; g++)
        grid[g] = pow(10, l0 + (l1 - l0) * (double)g / (RP_GRID - 1));

    /* 3. laws */
    st_status rc = fit_loss_law(r, grid);
    if (rc)
        return rc;
    size_t n_searched = 0;
    for (size_t p = 0; p < r->n_params; p++)
        n_searched += r->pspace[p] >= 0;
    r->hp = calloc(n_searched + 1, sizeof(*r->hp));
    if (!r->hp)
        return ST_ENOMEM;
    for (size_t p = 0; p < r->n_params; p++) {
        if (r->pspace[p] < 0)
            continue;
        rp_hp *h = &r->hp[r->n_hp++];
        h->param = p;
        h->space = r->pspace[p];
        rc = fit_hp(r, h, grid);
        if (rc)
            return rc;
    }

    /* 4. runs beyond the fit, the validation record and the recommendation */
    double vcost = -INFINITY;
    for (size_t i = 0; i < r->n_runs; i++) {
        rp_run *u = &r->runs[i];
        if (!u->beyond || !isfinite(u->cost))
            continue;
        rp_loss_at(r, u->cost, &u->pred, &u->pred_lo, &u->pred_hi);
        if (u->succeeded && u->cost > vcost && isfinite(u->pred)) {
            vcost = u->cost;
            r->has_validation = 1;
            r->val_run = u->id;
            r->val_actual = u->objective;
            r->val_pred = u->pred;
            r->val_lo = u->pred_lo;
            r->val_hi = u->pred_hi;
        }
    }
    rp_loss_at(r, r->target, &r->rec_obj, &r->rec_lo, &r->rec_hi);
    return ST_OK;
}
