/*
 * isoflop.c — Approach 2 as Porian et al. 2024 do it (arXiv:2406.19146; their analysis.py,
 * interp_flop and vectorized_interp_with_seed_noise): per budget the minimum loss over runs of
 * equal N, an Akima spline of ln loss in ln N on a fine grid, its argmin N*; budgets whose
 * minimum is at an end dropped; a bootstrap that adds Gaussian seed noise to every loss; then
 * weighted least squares of ln N* on ln C with weights 1/sd(ln N*)^2.
 * Not here: the parabola variant (approach.c), reading runs (csv.c). Depends on GSL.
 */
#include "fit/fit_int.h"

#include <gsl/gsl_fit.h>
#include <gsl/gsl_interp.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_SIZES 5 /* gsl_interp_akima's minimum number of points */

fit_isoflop_options fit_isoflop_options_default(void)
{
    fit_isoflop_options o = {1000, 42, 0.002, 25, 0.33, 0.95};
    return o;
}

/* Scratch for one budget: sizes (ln N, min loss), the grid, the spline. */
typedef struct iso_ws {
    double *ln, *loss, *ll; /* m: ln N ascending, min loss, ln loss (noised in replicates) */
    double *grid;           /* G: ln N grid */
    size_t m, G;
    gsl_interp *sp;
    gsl_interp_accel *acc;
} iso_ws;

typedef struct pt {
    double ln, loss, c;
} pt;

static int cmp_pt(const void *a, const void *b)
{
    const pt *x = a, *y = b;
    if (x->ln != y->ln)
        return x->ln < y->ln ? -1 : 1;
    return (x->loss > y->loss) - (x->loss < y->loss);
}

static int cmp_c(const void *a, const void *b)
{
    const pt *x = a, *y = b;
    return (x->c > y->c) - (x->c < y->c);
}

/* Argmin over the grid of the spline through (ws->ln, ws->ll); -1 if it is at an end or the
 * spline cannot be built. */
static long spline_argmin(iso_ws *ws, double *lmin)
{
    if (gsl_interp_init(ws->sp, ws->ln, ws->ll, ws->m) != 0)
        return -1;
    gsl_interp_accel_reset(ws->acc);
    size_t best = 0;
    double vbest = INFINITY;
    for (size_t k = 0; k < ws->G; k++) {
        double v = gsl_interp_eval(ws->sp, ws->ln, ws->ll, ws->grid[k], ws->acc);
        if (v < vbest) {
            vbest = v;
            best = k;
        }
    }
    if (lmin)
        *lmin = exp(vbest);
    return best == 0 || best + 1 == ws->G || !isfinite(vbest) ? -1 : (long)best;
}

/* Collapses the budget's points p (sorted by ln N) to the minimum loss per size. */
static size_t min_per_size(const pt *p, size_t g, iso_ws *ws)
{
    size_t m = 0;
    for (size_t q = 0; q < g; q++) {
        if (m && fabs(p[q].ln - ws->ln[m - 1]) <= 1e-9) {
            ws->loss[m - 1] = fmin(ws->loss[m - 1], p[q].loss);
            continue;
        }
        ws->ln[m] = p[q].ln;
        ws->loss[m++] = p[q].loss;
    }
    return m;
}

static void median_sd(double *v, size_t n, double *med, double *sd)
{
    double s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    s /= (double)n;
    for (size_t i = 0; i < n; i++)
        s2 += (v[i] - s) * (v[i] - s);
    *sd = sqrt(s2 / (double)n); /* numpy's np.std (ddof 0), as Porian et al. */
    fit_sort_doubles(v, n);
    *med = fit_quantile_sorted(v, n, 0.5);
}

/* One budget: point argmin, replicates (valid ln N* into reps), observation and sd. */
static st_status one_budget(const pt *p, size_t g, const fit_isoflop_options *o, st_rng *rng,
                            iso_ws *ws, fit_isoflop_budget *bg, double *reps)
{
    memset(bg, 0, sizeof(*bg));
    for (size_t q = 0; q < g; q++)
        bg->C += p[q].c / (double)g;
    ws->m = min_per_size(p, g, ws);
    bg->n_sizes = ws->m;
    bg->N_min = exp(ws->ln[0]);
    bg->N_max = exp(ws->ln[ws->m - 1]);
    bg->N_point = bg->N_star = bg->sd_ln_N = bg->L_star = NAN;
    if (ws->m < MIN_SIZES) {
        bg->use = FIT_ISO_FEW;
        return ST_OK;
    }
    ws->G = (ws->m - 1) * o->grid_per_gap;
    double lo = ws->ln[0], step = (ws->ln[ws->m - 1] - lo) / (double)(ws->G - 1);
    for (size_t k = 0; k < ws->G; k++)
        ws->grid[k] = lo + step * (double)k;
    ws->sp = gsl_interp_alloc(gsl_interp_akima, ws->m);
    if (!ws->sp)
        return ST_ENOMEM;
    for (size_t i = 0; i < ws->m; i++)
        ws->ll[i] = log(ws->loss[i]);
    long k0 = spline_argmin(ws, &bg->L_star);
    if (k0 < 0) {
        bg->use = FIT_ISO_EDGE;
        return ST_OK;
    }
    bg->N_point = exp(ws->grid[k0]);

    /* Replicates: Gaussian seed noise on each loss (Porian: loss + sd z), argmin again. */
    for (size_t r = 0; r < o->n_boot; r++) {
        for (size_t i = 0; i < ws->m; i++) {
            double noisy = ws->loss[i] + o->noise_sd * st_rng_gaussian(rng);
            ws->ll[i] = noisy > 0 ? log(noisy) : -INFINITY;
        }
        long k = spline_argmin(ws, NULL);
        if (k >= 0)
            reps[bg->n_valid++] = ws->grid[k];
    }
    if (2 * bg->n_valid < o->n_boot || bg->n_valid == 0) {
        bg->use = FIT_ISO_UNSTABLE;
        return ST_OK;
    }
    double med, sd, *tmp = malloc(bg->n_valid * sizeof(double));
    if (!tmp)
        return ST_ENOMEM;
    memcpy(tmp, reps, bg->n_valid * sizeof(double));
    median_sd(tmp, bg->n_valid, &med, &sd);
    free(tmp);
    double floor_sd = o->min_std_factor * (double)o->grid_per_gap * step;
    bg->sd_ln_N = fmax(sd, floor_sd) * (double)o->n_boot / (double)bg->n_valid;
    bg->N_star = exp(med);
    bg->use = FIT_ISO_USED;
    return ST_OK;
}

/* Weighted least squares of y on ln C over the used budgets; slope and intercept. */
static void wls(const fit_isoflop_result *r, const double *y, double *lc, double *w, double *yy,
                double *slope, double *icpt)
{
    size_t m = 0;
    for (size_t j = 0; j < r->n_budgets; j++) {
        if (r->budget[j].use != FIT_ISO_USED)
            continue;
        lc[m] = log(r->budget[j].C);
        w[m] = 1 / (r->budget[j].sd_ln_N * r->budget[j].sd_ln_N);
        yy[m++] = y[j];
    }
    double c0, c1, v00, v01, v11, chisq;
    gsl_fit_wlinear(lc, 1, w, 1, yy, 1, m, &c0, &c1, &v00, &v01, &v11, &chisq);
    *slope = c1;
    *icpt = c0;
}

/* Notes a dropped budget in the warning text. */
static void note_drop(fit_isoflop_result *r, const fit_isoflop_budget *bg)
{
    static const char *const why[] = {"", "fewer than 5 model sizes",
                                      "its minimum is at the edge of its model sizes",
                                      "fewer than half the replicates have an interior minimum"};
    size_t len = strlen(r->warning_text);
    r->warnings |= FIT_WARN_EDGE;
    if (len + 1 < sizeof(r->warning_text))
        snprintf(r->warning_text + len, sizeof(r->warning_text) - len,
                 "%sbudget %.3g dropped: %s (N %.3g to %.3g)", len ? "; " : "", bg->C, why[bg->use],
                 bg->N_min, bg->N_max);
}

/* The interval of a: replicate i pairs the i-th valid N* of every used budget. */
static st_status slope_interval(fit_isoflop_result *r, const double *reps, size_t n_boot,
                                double level, double *buf)
{
    size_t nb = r->n_budgets, n_rep = SIZE_MAX;
    for (size_t j = 0; j < nb; j++)
        if (r->budget[j].use == FIT_ISO_USED && r->budget[j].n_valid < n_rep)
            n_rep = r->budget[j].n_valid;
    if (n_rep == SIZE_MAX || n_rep == 0)
        return ST_OK; /* no used budget: the caller already refused */
    double *slopes = malloc(n_rep * sizeof(double));
    if (!slopes)
        return ST_ENOMEM;
    double *y = buf, *lc = buf + nb, *w = buf + 2 * nb, *yy = buf + 3 * nb, icpt, s = 0, s2 = 0;
    for (size_t i = 0; i < n_rep; i++) {
        for (size_t j = 0; j < nb; j++)
            y[j] = reps[j * n_boot + i];
        wls(r, y, lc, w, yy, &slopes[i], &icpt);
        s += slopes[i] / (double)n_rep;
    }
    for (size_t i = 0; i < n_rep; i++)
        s2 += (slopes[i] - s) * (slopes[i] - s);
    r->a_se = n_rep > 1 ? sqrt(s2 / (double)(n_rep - 1)) : NAN;
    fit_sort_doubles(slopes, n_rep);
    r->a_lo = fit_quantile_sorted(slopes, n_rep, (1 - level) / 2);
    r->a_hi = fit_quantile_sorted(slopes, n_rep, (1 + level) / 2);
    r->n_rep = n_rep;
    free(slopes);
    return ST_OK;
}

/* Checks options and data; ST_OK or ST_EINVAL with the message. */
static st_status iso_check(size_t n, const double *N, const double *C, const double *loss,
                           const fit_isoflop_options *o, char *err)
{
    if (o->n_boot < 2 || o->grid_per_gap < 2 || !(o->noise_sd >= 0) || !(o->level > 0) ||
        !(o->level < 1) || !(o->min_std_factor >= 0))
        return st_errf(err, ST_EINVAL,
                       "isoflop: options need n_boot >= 2, grid_per_gap >= 2, noise_sd >= 0, "
                       "0 < level < 1");
    for (size_t i = 0; i < n; i++)
        if (!(N[i] > 0) || !(C[i] > 0) || !(loss[i] > 0) || !isfinite(N[i] + C[i] + loss[i]))
            return st_errf(err, ST_EINVAL, "isoflop: run %zu: N, C and loss must be positive", i);
    return ST_OK;
}

st_status fit_isoflop(size_t n, const double *N, const double *C, const double *loss,
                      const fit_isoflop_options *o, fit_isoflop_result *out, char *err)
{
    memset(out, 0, sizeof(*out));
    err[0] = 0;
    out->a = out->log_k = out->a_lo = out->a_hi = out->a_se = out->b = NAN;
    st_status st = iso_check(n, N, C, loss, o, err);
    if (st != ST_OK)
        return st;
    size_t nn = n ? n : 1;
    size_t gmax = nn * o->grid_per_gap;
    pt *p = malloc(nn * sizeof(pt));
    double *work = malloc((4 * nn + gmax + 4 * FIT_ISO_MAX_BUDGETS) * sizeof(double));
    double *reps = malloc(FIT_ISO_MAX_BUDGETS * o->n_boot * sizeof(double));
    iso_ws ws = {0};
    st_rng *rng = NULL;
    if (!p || !work || !reps || !(ws.acc = gsl_interp_accel_alloc()) ||
        st_rng_create(o->seed, &rng) != ST_OK) {
        st = st_errf(err, ST_ENOMEM, "isoflop: out of memory");
        goto done;
    }
    ws.ln = work, ws.loss = work + nn, ws.ll = work + 2 * nn, ws.grid = work + 4 * nn;
    for (size_t i = 0; i < n; i++)
        p[i] = (pt){log(N[i]), loss[i], C[i]};
    qsort(p, n, sizeof(pt), cmp_c);

    /* Budgets: C within 5% of the first run of the group. */
    for (size_t k = 0, j; k < n && st == ST_OK; k = j) {
        for (j = k; j < n && p[j].c <= p[k].c * 1.05;)
            j++;
        if (out->n_budgets == FIT_ISO_MAX_BUDGETS) {
            st = st_errf(err, ST_ERANGE, "isoflop: more than %d budgets", FIT_ISO_MAX_BUDGETS);
            break;
        }
        qsort(p + k, j - k, sizeof(pt), cmp_pt);
        fit_isoflop_budget *bg = &out->budget[out->n_budgets];
        st = one_budget(p + k, j - k, o, rng, &ws, bg, reps + out->n_budgets * o->n_boot);
        gsl_interp_free(ws.sp);
        ws.sp = NULL;
        if (st == ST_ENOMEM)
            st = st_errf(err, ST_ENOMEM, "isoflop: out of memory");
        out->n_used += bg->use == FIT_ISO_USED;
        if (bg->use != FIT_ISO_USED)
            note_drop(out, bg);
        out->n_budgets++;
    }
    if (st == ST_OK && out->n_used < 2)
        st = st_errf(err, ST_EEMPTY, "isoflop: %zu budgets usable of %zu: need at least 2%s%s",
                     out->n_used, out->n_budgets, out->warning_text[0] ? " (" : "",
                     out->warning_text[0] ? "see the warnings)" : "");
    if (st != ST_OK)
        goto done;

    /* The fit on the observations, then its interval over the replicates. */
    double *y = work, *buf = work + FIT_ISO_MAX_BUDGETS;
    for (size_t j = 0; j < out->n_budgets; j++)
        y[j] = log(out->budget[j].N_star);
    wls(out, y, buf, buf + FIT_ISO_MAX_BUDGETS, buf + 2 * FIT_ISO_MAX_BUDGETS, &out->a,
        &out->log_k);
    out->b = 1 - out->a;
    st = slope_interval(out, reps, o->n_boot, o->level, work);
    if (st == ST_ENOMEM)
        st_errf(err, ST_ENOMEM, "isoflop: out of memory");
done:
    gsl_interp_accel_free(ws.acc);
    st_rng_destroy(rng);
    free(p);
    free(work);
    free(reps);
    return st;
}
