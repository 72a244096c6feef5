/*
 * cmd_fit_out.c — what `scaletune fit` reports: parameters with bootstrap intervals, derived
 * quantities (said where they are evaluated, and warned when far beyond the data), the
 * objective (for mse: the mean squared residual, not the minimised half sum), predictions
 * (--predict) and the backtest, each with bootstrap intervals, and the warnings (parameters at
 * a limit, mixed datasets, extrapolation). A table or one JSON object. Public headers only.
 *
 * Intervals: the confidence interval of the law is the percentile interval of the bootstrap
 * replicates' predictions; the prediction interval for one new run adds to each replicate one
 * residual of the fit drawn at random (seeded), so it covers the scatter of single runs too.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_fit.h"
#include "common/st.h"

#define FAR_BEYOND 100.0 /* derived numbers beyond this factor of the largest compute: warn */

typedef struct interval {
    double est, ci_lo, ci_hi, pi_lo, pi_hi;
} interval;

/* Residuals of the training rows, log(y/yhat) (or y - yhat with --linear). */
typedef struct resid {
    double *e;
    size_t n;
    double sse; /* sum of squared residuals as the objective defines them (yhat - y) */
} resid;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Percentile (type 7) of v (n > 0), sorted in place. */
static double quantile(double *v, size_t n, double q)
{
    double h = (double)(n - 1) * q;
    size_t lo = (size_t)floor(h);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (h - (double)lo) * (v[hi] - v[lo]);
}

/* The law's prediction at x from natural parameters nat; NAN if they have no theta. */
static double law_at(const fit_law *law, const double *nat, const double *x)
{
    double th[16];
    if (fit_law_theta(law, nat, th) != ST_OK)
        return NAN;
    return exp(fit_law_eval(law, th, x, NULL));
}

static int training_residuals(fit_cli *c, resid *r)
{
    double *yhat = malloc(c->n * sizeof(double));
    r->e = malloc(c->n * sizeof(double));
    r->n = 0;
    r->sse = 0;
    if (!yhat || !r->e || fit_predict(c->f, c->n, c->x, yhat) != ST_OK) {
        free(yhat);
        return 0;
    }
    for (size_t i = 0; i < c->n; i++) {
        if (!isnan(c->rel[i]))
            continue;
        double e = c->o.linear ? c->y[i] - yhat[i] : log(c->y[i] / yhat[i]);
        r->e[r->n++] = e;
        r->sse += e * e;
    }
    free(yhat);
    return 1;
}

/* Confidence and prediction intervals at x from the bootstrap replicates. */
static void interval_at(const fit_cli *c, const resid *r, const double *x, interval *out)
{
    out->est = law_at(c->law, fit_params(c->f), x);
    out->ci_lo = out->ci_hi = out->pi_lo = out->pi_hi = NAN;
    size_t nr = c->b ? fit_boot_n_rep(c->b) : 0;
    double *ci = malloc((nr ? nr : 1) * sizeof(double)),
           *pi = malloc((nr ? nr : 1) * sizeof(double));
    st_rng *rng = NULL;
    if (!nr || !r->n || !ci || !pi || st_rng_create(c->seed + 1, &rng) != ST_OK) {
        free(ci);
        free(pi);
        return;
    }
    size_t m = 0;
    for (size_t k = 0; k < nr; k++) {
        double v = law_at(c->law, fit_boot_replicate(c->b, k), x);
        double e = r->e[st_rng_uniform_int(rng, r->n)];
        if (!isfinite(v))
            continue;
        ci[m] = v;
        pi[m++] = c->o.linear ? v + e : v * exp(e);
    }
    if (m) {
        double a = (1 - c->level) / 2;
        qsort(ci, m, sizeof(double), cmp_double);
        qsort(pi, m, sizeof(double), cmp_double);
        out->ci_lo = quantile(ci, m, a);
        out->ci_hi = quantile(ci, m, 1 - a);
        out->pi_lo = quantile(pi, m, a);
        out->pi_hi = quantile(pi, m, 1 - a);
    }
    st_rng_destroy(rng);
    free(ci);
    free(pi);
}

static json_t *pair(double lo, double hi)
{
    return isfinite(lo) ? json_pack("[f,f]", lo, hi) : json_null();
}

/* Warns when compute C lies far beyond the largest compute of the data. */
static void warn_far(fit_cli *c, const char *what, double C)
{
    if (isfinite(c->C_max) && C > FAR_BEYOND * c->C_max)
        fit_cli_warn(c,
                     "%s at C = %.3g FLOP is %.0fx the largest compute in the data (%.3g): an "
                     "extrapolation over %.1f orders of magnitude",
                     what, C, C / c->C_max, c->C_max, log10(C / c->C_max));
}

/* Allocation at C (--predict C=..) with intervals over the replicates; JSON object. */
static json_t *predict_alloc(fit_cli *c, double C)
{
    fit_alloc al;
    if (fit_allocate(fit_params(c->f), C, &al) != ST_OK)
        return NULL;
    warn_far(c, "the prediction", C);
    json_t *o = json_pack("{s:{s:f},s:f,s:f,s:f,s:f}", "at", "C", C, "N_opt", al.N_opt, "D_opt",
                          al.D_opt, "tokens_per_param", al.tokens_per_param, "L_opt", al.L_opt);
    size_t nr = c->b ? fit_boot_n_rep(c->b) : 0;
    double *v = malloc((4 * nr + 1) * sizeof(double));
    size_t m = 0;
    for (size_t k = 0; v && k < nr; k++) {
        fit_alloc ar;
        if (fit_allocate(fit_boot_replicate(c->b, k), C, &ar) == ST_OK) {
            v[m] = ar.N_opt, v[nr + m] = ar.D_opt, v[2 * nr + m] = ar.tokens_per_param;
            v[3 * nr + m++] = ar.L_opt;
        }
    }
    const char *names[] = {"N_opt", "D_opt", "tokens_per_param", "L_opt"};
    double est[] = {al.N_opt, al.D_opt, al.tokens_per_param, al.L_opt};
    if (!c->json)
        printf("  at C = %.4g FLOP:\n", C);
    for (int q = 0; q < 4; q++) {
        double lo = NAN, hi = NAN, a = (1 - c->level) / 2;
        if (m) {
            qsort(v + q * nr, m, sizeof(double), cmp_double);
            lo = quantile(v + q * nr, m, a);
            hi = quantile(v + q * nr, m, 1 - a);
        }
        json_object_set_new(o,
                            q == 0   ? "N_opt_ci"
                            : q == 1 ? "D_opt_ci"
                            : q == 2 ? "tpp_ci"
                                     : "L_opt_ci",
                            pair(lo, hi));
        if (!c->json)
            printf("    %-18s %-12.5g%s", names[q], est[q], m ? "" : "\n");
        if (!c->json && m)
            printf(" %.0f%% CI (%.5g, %.5g)\n", 100 * c->level, lo, hi);
    }
    free(v);
    return o;
}

/* One --predict: the law's inputs (Gadre also takes N and D), or C alone for the allocation. */
static int predict_one(fit_cli *c, const resid *r, const char *spec, json_t *arr)
{
    char buf[512];
    const char *keys[4];
    double vals[4], x[3];
    snprintf(buf, sizeof(buf), "%s", spec);
    int m = fit_cli_pairs(buf, 4, keys, vals);
    int chin = !strcmp(c->law_name, "chinchilla") || !strcmp(c->law_name, "muennighoff");
    if (m == 1 && !strcmp(keys[0], "C") && chin) {
        json_t *o = predict_alloc(c, vals[0]);
        if (o)
            json_array_append_new(arr, o);
        return 0;
    }
    size_t found = 0;
    for (size_t j = 0; m > 0 && j < c->nin; j++)
        for (int q = 0; q < m; q++)
            if (!strcmp(keys[q], c->in_names[j]))
                x[j] = vals[q], found++;
    if (!strcmp(c->law_name, "gadre") && m == 2 && found == 0 && !strcmp(keys[0], "N") &&
        !strcmp(keys[1], "D")) {
        x[0] = 6 * vals[0] * vals[1];
        x[1] = vals[1] / vals[0];
        found = 2;
    }
    if (m <= 0 || found != c->nin || (size_t)m != c->nin || !(x[0] > 0) ||
        (c->nin > 1 && !(x[1] > 0)) || (c->nin > 2 && !(x[2] > 0))) {
        char hint[200] = "give the law's inputs:";
        for (size_t j = 0; j < c->nin; j++)
            snprintf(hint + strlen(hint), sizeof(hint) - strlen(hint), "%s%s=..", j ? "," : " ",
                     c->in_names[j]);
        if (chin)
            snprintf(hint + strlen(hint), sizeof(hint) - strlen(hint), " (or C=.. alone)");
        cli_error(hint, "--predict '%s': not a point of law '%s'", spec, c->law_name);
        return 2;
    }
    double Cp = !strcmp(c->in_names[0], "C") ? x[0]
                : (c->nin >= 2 && !strcmp(c->in_names[0], "N") && !strcmp(c->in_names[1], "D"))
                    ? 6 * x[0] * x[1]
                    : NAN;
    if (isfinite(Cp))
        warn_far(c, "the prediction", Cp);
    interval iv;
    interval_at(c, r, x, &iv);
    json_t *at = json_object();
    for (size_t j = 0; j < c->nin; j++)
        json_object_set_new(at, c->in_names[j], json_real(x[j]));
    json_array_append_new(arr, json_pack("{s:o,s:f,s:o,s:o}", "at", at, "value", iv.est, "ci",
                                         pair(iv.ci_lo, iv.ci_hi), "pi", pair(iv.pi_lo, iv.pi_hi)));
    if (!c->json) {
        printf("  at %s: %s %.6g", spec, c->target, iv.est);
        if (isfinite(iv.ci_lo))
            printf("   %.0f%% CI (%.6g, %.6g), prediction interval (%.6g, %.6g)", 100 * c->level,
                   iv.ci_lo, iv.ci_hi, iv.pi_lo, iv.pi_hi);
        printf("\n");
    }
    return 0;
}

static int report_predictions(fit_cli *c, const resid *r, json_t *out)
{
    if (!c->n_predict)
        return 0;
    json_t *arr = json_array();
    json_object_set_new(out, "predictions", arr);
    if (!c->json)
        printf("\npredictions%s:\n", c->b ? "" : " (add --bootstrap N for intervals)");
    for (size_t k = 0; k < c->n_predict; k++) {
        int rc = predict_one(c, r, c->predict[k], arr);
        if (rc)
            return rc;
    }
    return 0;
}

/* The held-out rows: errors, prediction intervals, coverage. */
static void report_backtest(fit_cli *c, const resid *r, json_t *out)
{
    if (!isfinite(c->cut))
        return;
    json_t *pts = json_array();
    double maxe = 0, sume = 0;
    size_t n_in = 0, n_iv = 0;
    if (!c->json)
        printf("\n%s: fitted on %s <= %.4g, %zu rows held out above it\n",
               c->backtest && !isfinite(c->holdout) ? "backtest (largest compute tier)"
                                                    : "hold-out",
               c->holdout_col, c->cut, c->n_held);
    for (size_t i = 0; i < c->n; i++) {
        if (isnan(c->rel[i]))
            continue;
        interval iv;
        interval_at(c, r, c->x + i * c->nin, &iv);
        int inside = isfinite(iv.pi_lo) && c->y[i] >= iv.pi_lo && c->y[i] <= iv.pi_hi;
        n_iv += isfinite(iv.pi_lo);
        n_in += inside;
        maxe = fmax(maxe, fabs(c->rel[i]));
        sume += fabs(c->rel[i]);
        json_t *pt = json_object();
        for (size_t j = 0; j < c->nin; j++)
            json_object_set_new(pt, c->in_names[j], json_real(c->x[i * c->nin + j]));
        json_object_set_new(pt, "line", json_integer((json_int_t)fit_table_line(c->t, i)));
        json_object_set_new(pt, "loss", json_real(c->y[i]));
        json_object_set_new(pt, "predicted", json_real(iv.est));
        json_object_set_new(pt, "rel_err", json_real(c->rel[i]));
        json_object_set_new(pt, "pi", pair(iv.pi_lo, iv.pi_hi));
        json_object_set_new(pt, "inside", isfinite(iv.pi_lo) ? json_boolean(inside) : json_null());
        json_array_append_new(pts, pt);
        if (!c->json) {
            printf("  line %-5zu %s %-10.5g predicted %-10.5g rel err %+.4f%%",
                   fit_table_line(c->t, i), c->target, c->y[i], iv.est, 100 * c->rel[i]);
            if (isfinite(iv.pi_lo))
                printf("  interval (%.5g, %.5g) %s", iv.pi_lo, iv.pi_hi, inside ? "in" : "OUT");
            printf("\n");
        }
    }
    double mean = c->n_held ? sume / (double)c->n_held : NAN;
    double cov = n_iv ? (double)n_in / (double)n_iv : NAN;
    json_object_set_new(out, "holdout",
                        json_pack("{s:f,s:s,s:I,s:f,s:f,s:o,s:f,s:o}", "cutoff", c->cut,
                                  "cutoff_column", c->holdout_col, "n_held", (json_int_t)c->n_held,
                                  "max_abs_rel_err", maxe, "mean_abs_rel_err", mean, "coverage",
                                  n_iv ? json_real(cov) : json_null(), "level", c->level, "points",
                                  pts));
    if (!c->json) {
        printf("  mean |rel err| %.4f%%, max %.4f%%", 100 * mean, 100 * maxe);
        if (n_iv)
            printf(", %zu of %zu inside their %.0f%% prediction interval (coverage %.2f)", n_in,
                   n_iv, 100 * c->level, cov);
        else
            printf(" (add --bootstrap N for intervals and coverage)");
        printf("\n");
    }
}

/* Parameters (and their intervals) into the JSON object and the table. */
static void report_params(fit_cli *c, json_t *out)
{
    const double *p = fit_params(c->f);
    json_t *jp = json_object(), *ji = json_object(), *jd = json_object();
    size_t np = fit_law_n_params(c->law);
    fit_boot_options bo = fit_boot_options_default();
    bo.target_C = c->target_C;
    double der[FIT_DER_COUNT];
    fit_derived(c->law, p, &bo, der);
    if (!c->json) {
        printf("\n  %-18s %-22s", "parameter", "estimate");
        if (c->b)
            printf(" %-12s %.0f%% interval", "bootstrap SE", 100 * c->level);
        printf("\n");
    }
    for (size_t i = 0; i < np + FIT_DER_COUNT; i++) {
        int is_par = i < np;
        size_t k = i - np;
        const char *name = is_par ? fit_law_natural_name(c->law, i) : fit_derived_name(k);
        double v = is_par ? p[i] : der[k], lo = NAN, hi = NAN, se = NAN;
        if (!isfinite(v) && !is_par)
            continue;
        json_object_set_new(is_par ? jp : jd, name, json_real(v));
        if (c->b) {
            if (is_par)
                fit_boot_interval(c->b, i, c->level, &lo, &hi), se = fit_boot_se(c->b, i);
            else
                fit_boot_derived_interval(c->b, k, c->level, &lo, &hi),
                    se = fit_boot_derived_se(c->b, k);
            json_object_set_new(ji, name, json_pack("{s:f,s:f,s:f}", "lo", lo, "hi", hi, "se", se));
        }
        if (!c->json) {
            printf("  %-18s %-22.10g", name, v);
            if (c->b)
                printf(" %-12.4g (%.6g, %.6g)", se, lo, hi);
            printf("\n");
        }
    }
    json_object_set_new(out, "params", jp);
    json_object_set_new(out, "intervals", ji);
    json_object_set_new(out, "derived", jd);
    if (isfinite(der[FIT_DER_NOPT])) {
        if (!c->json)
            printf("  (derived at C = %.4g FLOP, %s)\n", c->target_C,
                   c->target_C_given ? "--target-compute" : "the largest compute in the data");
        warn_far(c, "the derived allocation", c->target_C);
    }
}

/* The objective as minimised, and for mse the mean squared residual the name promises. */
static void report_objective(fit_cli *c, const resid *r, json_t *out)
{
    double v = fit_objective_value(c->f);
    int mse = c->o.objective == FIT_OBJ_MSE;
    double mean_sq = r->n ? r->sse / (double)r->n : NAN;
    json_t *jo = json_pack("{s:s,s:f,s:b,s:f,s:f,s:f}", "name", fit_objective_name(c->o.objective),
                           "delta", c->o.delta, "linear", c->o.linear, "value", mse ? mean_sq : v,
                           "minimised", v, "sum_squares", r->sse);
    if (c->o.objective == FIT_OBJ_HUBER_LIK) {
        json_object_set_new(jo, "sigma", json_real(fit_sigma(c->f)));
        json_object_set_new(jo, "loglik", json_real(fit_loglik(c->f)));
    }
    json_object_set_new(out, "objective", jo);
    if (c->json)
        return;
    if (mse)
        printf("\nobjective mse %.12g (mean squared %s residual over %zu rows; sum of squares "
               "%.12g; minimised as half the sum, %.12g)",
               mean_sq, c->o.linear ? "linear" : "log", r->n, r->sse, v);
    else
        printf("\nobjective %.12g", v);
    if (c->o.objective == FIT_OBJ_HUBER_LIK)
        printf(", sigma %.6g, log-likelihood %.6f", fit_sigma(c->f), fit_loglik(c->f));
    fit_diag dg;
    fit_get_diag(c->f, &dg);
    printf("\n%zu starts, best #%zu, %zu evaluations, |grad| %.3g\n", dg.n_starts, dg.best_start,
           dg.n_evals, dg.grad_norm);
}

/* Header lines and the data description. */
static void report_head(fit_cli *c, json_t *out)
{
    fit_n_convention nc;
    fit_c_convention cc;
    fit_table_get_conventions(c->t, &nc, &cc);
    size_t n_fit = c->n - c->n_held;
    json_object_set_new(out, "law", json_string(c->law_name));
    json_t *jd =
        json_pack("{s:s,s:I,s:I,s:s,s:s,s:s,s:s}", "file", c->data, "rows", (json_int_t)c->n,
                  "fitted_rows", (json_int_t)n_fit, "target", c->target, "exclusions",
                  fit_table_exclusions(c->t), "N_convention",
                  nc == FIT_N_NONEMBEDDING ? "non-embedding" : "total", "C_convention", "6ND");
    if (c->m_note[0])
        json_object_set_new(jd, "M", json_string(c->m_note));
    json_object_set_new(out, "data", jd);
    json_object_set_new(out, "target_compute", json_real(c->target_C));
    json_t *jf = json_array();
    for (size_t k = 0; k < c->n_fix; k++)
        json_array_append_new(jf, json_string(c->fix[k]));
    json_object_set_new(out, "fixed", jf);
    if (c->json)
        return;
    printf("law %s, objective %s (delta %g, %s residuals), %zu rows from %s, target %s\n",
           c->law_name, fit_objective_name(c->o.objective), c->o.delta,
           c->o.linear ? "linear" : "log", n_fit, c->data, c->target);
    if (fit_table_exclusions(c->t)[0])
        printf("rows: %s\n", fit_table_exclusions(c->t));
    if (c->m_note[0])
        printf("inputs: %s\n", c->m_note);
    for (size_t k = 0; k < c->n_fix; k++)
        printf("fixed: %s\n", c->fix[k]);
}

int fit_cli_report(fit_cli *c)
{
    resid r = {0};
    json_t *out = json_object();
    if (!training_residuals(c, &r)) {
        cli_error(NULL, "out of memory");
        free(r.e);
        json_decref(out);
        return 1;
    }
    char lim[1024];
    if (fit_limit_check(c->f, lim, sizeof(lim)))
        fit_cli_warn(c, "parameters at a limit: %s", lim);
    if (fit_warning_text(c->f)[0])
        fit_cli_warn(c, "%s", fit_warning_text(c->f));
    report_head(c, out);
    report_params(c, out);
    report_objective(c, &r, out);
    int rc = report_predictions(c, &r, out);
    report_backtest(c, &r, out);
    if (c->b)
        json_object_set_new(out, "bootstrap",
                            json_pack("{s:I,s:I,s:f}", "replicates", (json_int_t)c->n_boot, "seed",
                                      (json_int_t)c->seed, "level", c->level));
    fit_diag dg;
    fit_get_diag(c->f, &dg);
    json_object_set_new(out, "diagnostics",
                        json_pack("{s:I,s:I,s:I,s:f,s:i}", "starts", (json_int_t)dg.n_starts,
                                  "best_start", (json_int_t)dg.best_start, "evaluations",
                                  (json_int_t)dg.n_evals, "grad_norm", dg.grad_norm, "nlopt_code",
                                  dg.nlopt_code));
    json_object_set_new(out, "warnings", json_string(c->notes));
    if (!rc && c->json) {
        json_dumpf(out, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
        fputc('\n', stdout);
        if (c->notes[0])
            fprintf(stderr, "scaletune: warning: %s\n", c->notes);
    } else if (!rc && c->notes[0]) {
        printf("\nwarning: %s\n", c->notes);
    }
    json_decref(out);
    free(r.e);
    return rc;
}
