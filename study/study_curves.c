/*
 * study_curves.c — curve points: what each successful run of a sweep would have reached at fewer
 * tokens, from its own learning curve (issue 17; docs/algorithms/extrapolation.md, "Curve
 * points"). A run's training-loss records and their learning rates (runner_store_run_curve)
 * fit the loss-curve law with learning-rate annealing (fit/curve.h, Tissue et al. 2024) under
 * the run's own schedule; the same law under the schedule compressed to a fraction f of the steps
 * (warmup and decay scaled with it, as a trainer does for a shorter run) gives the loss of that
 * shorter run. The point's objective is the run's own objective times the law's ratio
 * L(f S steps, compressed schedule) / L(S steps, own schedule), so the training/validation gap
 * and the law's offset cancel; its tokens are f D. The engine keeps the points with their run
 * (fit_xp_set_curve_points). Reads the store only; never writes.
 *
 * Cooldown branches (docs/metrics-protocol.md) are points of the same kind, measured instead of
 * derived: a succeeded run whose final record says "branch":1 and "parent_run":P is the loss of
 * run P's setting trained to the branch's tokens, so it joins P's points (study_branches_load)
 * and is never an independent run.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit/curve.h"
#include "study/study_int.h"

#define CURVE_MIN_STEPS 40   /* a run or a point shorter than this many steps gives none */
#define CURVE_SKIP_FRAC 0.05 /* the law is fitted from this fraction of the steps on */
#define CURVE_MAX_FIT   400  /* points fitted (evenly thinned beyond), for speed */

/* The schedule lr[0 .. S-1] of steps 1..S from the records: a step without a record takes the
 * rate interpolated linearly between the records around it, and before the first record that
 * record's rate (a trainer that reports every k steps leaves the start unknown; its warmup is
 * then counted at the first reported rate). 0 when no record holds a finite rate. */
static int fill_schedule(const double *steps, const double *rate, size_t n, size_t S, double *lr)
{
    for (size_t s = 0; s < S; s++)
        lr[s] = NAN;
    for (size_t k = 0; k < n; k++) {
        double st = steps[k];
        if (isfinite(st) && st >= 1 && st <= (double)S && isfinite(rate[k]) && rate[k] >= 0)
            lr[(size_t)st - 1] = rate[k];
    }
    size_t prev = S; /* the last step with a rate, S before the first */
    for (size_t s = 0; s < S; s++) {
        if (!isfinite(lr[s]))
            continue;
        if (prev == S)
            for (size_t t = 0; t < s; t++)
                lr[t] = lr[s];
        else
            for (size_t t = prev + 1; t < s; t++)
                lr[t] = lr[prev] + (lr[s] - lr[prev]) * (double)(t - prev) / (double)(s - prev);
        prev = s;
    }
    if (prev == S)
        return 0;
    for (size_t t = prev + 1; t < S; t++)
        lr[t] = lr[prev];
    return 1;
}

/* The run's schedule compressed to Sf steps (Sf >= 2): step j of it takes the rate at position
 * 1 + (j - 1)(S - 1)/(Sf - 1) of the run's, linearly interpolated (a schedule defined on the
 * fraction of the run done, as warmup and cosine are, maps onto itself). */
static void compress(const double *lr, size_t S, size_t Sf, double *out)
{
    for (size_t j = 1; j <= Sf; j++) {
        double pos = 1 + (double)(j - 1) * (double)(S - 1) / (double)(Sf - 1);
        size_t lo = (size_t)floor(pos);
        if (lo >= S) {
            out[j - 1] = lr[S - 1];
            continue;
        }
        double t = pos - (double)lo;
        out[j - 1] = (1 - t) * lr[lo - 1] + t * lr[lo];
    }
}

/* The points of one run (objective y, tokens D) appended at s->cp_* (room for the fractions). */
static st_status run_points(study *s, size_t k, const double *steps, const double *loss,
                            const double *rate, size_t n)
{
    double D = study_run_tokens(s, k);
    double last = n ? steps[n - 1] : NAN;
    if (!(last >= CURVE_MIN_STEPS) || !(D > 0 && isfinite(D)))
        return ST_OK;
    size_t S = (size_t)last, m = 0, skip = (size_t)(CURVE_SKIP_FRAC * (double)S);
    double *lr = malloc(2 * S * sizeof(double)), *ls = malloc(n * sizeof(double));
    size_t *ps = malloc(n * sizeof(size_t));
    st_status rc = lr && ls && ps ? ST_OK : ST_ENOMEM;
    if (rc || !fill_schedule(steps, rate, n, S, lr))
        goto out;
    size_t stride = n / CURVE_MAX_FIT + 1;
    for (size_t i = 0; i < n; i += stride)
        if (isfinite(steps[i]) && steps[i] > (double)skip && steps[i] <= (double)S &&
            isfinite(loss[i]) && (m == 0 || (size_t)steps[i] > ps[m - 1])) {
            ps[m] = (size_t)steps[i];
            ls[m++] = loss[i];
        }
    fit_curve_options o = fit_curve_options_default();
    fit_curve_law law;
    double full;
    if (m < 8 || fit_curve_fit(lr, S, ps, ls, m, &o, &law, NULL, NULL) != ST_OK ||
        fit_curve_predict(&law, lr, S, o.lambda, S, &full, NULL) != ST_OK || !(full > 0))
        goto out;
    for (size_t q = 0; q < s->o.n_curve_fractions; q++) {
        double f = s->o.curve_fractions[q], Lf;
        size_t Sf = (size_t)floor(f * (double)S + 0.5);
        if (Sf < CURVE_MIN_STEPS || Sf >= S)
            continue;
        compress(lr, S, Sf, &lr[S]);
        if (fit_curve_predict(&law, &lr[S], Sf, o.lambda, Sf, &Lf, NULL) != ST_OK ||
            !(Lf >= full) || !isfinite(Lf))
            continue; /* a shorter run that ends lower than the whole: the law is not trusted */
        s->cp_run[s->n_cp] = k;
        s->cp_D[s->n_cp] = D * (double)Sf / (double)S;
        s->cp_branch[s->n_cp] = 0;
        s->cp_obj[s->n_cp++] = s->obj[k] * Lf / full;
    }
out:
    free(lr);
    free(ls);
    free(ps);
    return rc;
}

/* Room for `extra` more points after the n_cp there are. */
static st_status points_reserve(study *s, size_t extra)
{
    size_t cap = s->n_cp + extra + 1;
    size_t *run = realloc(s->cp_run, cap * sizeof(size_t));
    if (run)
        s->cp_run = run;
    double *D = realloc(s->cp_D, cap * sizeof(double));
    if (D)
        s->cp_D = D;
    double *obj = realloc(s->cp_obj, cap * sizeof(double));
    if (obj)
        s->cp_obj = obj;
    unsigned char *br = realloc(s->cp_branch, cap);
    if (br)
        s->cp_branch = br;
    return run && D && obj && br ? ST_OK : st_errf(s->errmsg, ST_ENOMEM, "out of memory");
}

/* The engine run whose store id is `id` and that succeeded; s->n when there is none. A binary
 * search: the sweep's runs are in id order (runner_store_read_sweep) and run_idx grows with k. */
static size_t engine_run_of(const study *s, uint64_t id)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->w->runs[s->run_idx[mid]].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == s->n || s->w->runs[s->run_idx[lo]].id != id)
        return s->n;
    return s->failed[lo] || !(s->obj[lo] > 0) ? s->n : lo;
}

st_status study_branches_load(study *s)
{
    size_t n_br = 0;
    for (size_t i = 0; i < s->w->n_runs; i++)
        n_br += s->w->runs[i].parent != 0;
    if (!n_br)
        return ST_OK;
    st_status rc = points_reserve(s, n_br);
    for (size_t i = 0; !rc && i < s->w->n_runs; i++) {
        const runner_sweep_run *u = &s->w->runs[i];
        if (!u->parent)
            continue;
        size_t k = engine_run_of(s, u->parent);
        if (!s->o.branches || k == s->n || u->status != RUNNER_RUN_SUCCEEDED ||
            !(u->objective > 0 && isfinite(u->objective)) ||
            !(u->final_D > 0 && isfinite(u->final_D))) {
            s->counts.n_branch_unused++;
            continue;
        }
        s->cp_run[s->n_cp] = k;
        s->cp_D[s->n_cp] = u->final_D;
        s->cp_branch[s->n_cp] = 1;
        s->cp_obj[s->n_cp++] = u->objective;
        s->counts.n_branch_points++;
    }
    return rc;
}

st_status study_curves_load(study *s, runner_store *st)
{
    if (s->o.n_curve_fractions > 8 || !(s->o.curve_weight >= 0 && s->o.curve_weight <= 1))
        return st_errf(s->errmsg, ST_EINVAL, "curves: %zu fractions (at most 8), weight %g",
                       s->o.n_curve_fractions, s->o.curve_weight);
    for (size_t q = 0; q < s->o.n_curve_fractions; q++)
        if (!(s->o.curve_fractions[q] > 0 && s->o.curve_fractions[q] < 1))
            return st_errf(s->errmsg, ST_EINVAL, "curves: fraction %g is not in (0, 1)",
                           s->o.curve_fractions[q]);
    if (points_reserve(s, s->n * s->o.n_curve_fractions))
        return ST_ENOMEM;
    for (size_t k = 0; k < s->n; k++) {
        if (s->failed[k] || !(s->obj[k] > 0))
            continue;
        size_t n = 0;
        double *steps = NULL, *loss = NULL, *rate = NULL;
        st_status rc = runner_store_run_curve(st, s->w->runs[s->run_idx[k]].id, "loss", "lr", &n,
                                              &steps, &loss, &rate);
        if (!rc)
            rc = run_points(s, k, steps, loss, rate, n);
        free(steps);
        free(loss);
        free(rate);
        if (rc == ST_ENOMEM)
            return st_errf(s->errmsg, rc, "out of memory");
        if (rc)
            return st_errf(s->errmsg, rc, "curves: %s", runner_store_errmsg(st));
    }
    return ST_OK;
}

size_t study_n_curve_points(const study *s)
{
    return s ? s->n_cp : 0;
}

st_status study_curve_point(const study *s, size_t c, size_t *engine_run, double *D,
                            double *objective)
{
    if (!s || c >= s->n_cp)
        return ST_EINVAL;
    if (engine_run)
        *engine_run = s->cp_run[c];
    if (D)
        *D = s->cp_D[c];
    if (objective)
        *objective = s->cp_obj[c];
    return ST_OK;
}
