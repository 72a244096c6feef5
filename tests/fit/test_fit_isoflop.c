/*
 * test_fit_isoflop.c — Approach 2 as Porian et al. 2024 (fit_isoflop): synthetic IsoFLOP
 * profiles with a known N*(C) = k C^a (recovered; a budget whose minimum is at its edge and one
 * with 4 sizes dropped and named; repeated runs of one size reduced to their minimum; the same
 * seed gives the same result), then Porian et al.'s own RefinedWeb runs
 * (tests/data/scaling/porian2024_isoflop_rw.csv, README there): for each of the five
 * configurations of their Figure 1, a lies inside the published 95% interval read from
 * porian2024_published_fits.json.
 */
#include "fit/fit.h"
#include "tests/check.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DIR "tests/data/scaling/"

#define A_TRUE 0.6
#define K_TRUE 0.05 /* N* = K C^A: 1.25e16 -> 1.3e8 ... */

/* Synthetic budgets: loss = 2 + 40 C^-0.1 + 0.08 (ln N - ln N*)^2, sizes every 0.35 in ln N
 * from an offset of the optimum (so N* falls between sizes). */
static size_t synth(double *N, double *C, double *L, int with_extras)
{
    size_t n = 0;
    for (int b = 0; b < 8; b++) {
        double c = 1.25e16 * pow(4, b), lnstar = log(K_TRUE) + A_TRUE * log(c);
        double lmin = 2 + 40 * pow(c, -0.1), off = 0.13 * (b % 3);
        for (int s = -4; s <= 4; s++) {
            double ln = lnstar + off + 0.35 * s;
            N[n] = exp(ln), C[n] = c;
            L[n++] = lmin + 0.08 * (ln - lnstar) * (ln - lnstar);
        }
    }
    if (!with_extras)
        return n;
    /* a budget whose sizes all lie above N*: its minimum is at the edge */
    double c = 1.25e16 * pow(4, 8), lnstar = log(K_TRUE) + A_TRUE * log(c);
    for (int s = 1; s <= 7; s++) {
        double ln = lnstar + 0.35 * s;
        N[n] = exp(ln), C[n] = c, L[n++] = 2.3 + 0.08 * (ln - lnstar) * (ln - lnstar);
    }
    /* a budget with 4 sizes */
    c = 1e15;
    for (int s = -2; s <= 1; s++)
        N[n] = exp(log(K_TRUE) + A_TRUE * log(c) + 0.4 * s), C[n] = c, L[n++] = 4 + 0.01 * s * s;
    return n;
}

static void test_synthetic(void)
{
    static double N[128], C[128], L[128];
    size_t n = synth(N, C, L, 1);
    fit_isoflop_options o = fit_isoflop_options_default();
    o.noise_sd = 1e-4;
    o.n_boot = 200;
    fit_isoflop_result r, r2;
    char err[ST_ERRMSG_MAX];
    CHECK_ST(fit_isoflop(n, N, C, L, &o, &r, err), ST_OK);
    CHECK(r.n_budgets == 10 && r.n_used == 8);
    CHECK_ABS(r.a, A_TRUE, 0.01);
    CHECK(r.a_lo <= A_TRUE && A_TRUE <= r.a_hi);
    CHECK_ABS(r.b, 1 - r.a, 1e-15);
    CHECK_ABS(r.log_k, log(K_TRUE), 0.4);
    /* the grid step is 0.35/25 in ln N: each N* within two steps of the truth */
    for (size_t j = 0; j < r.n_budgets; j++) {
        const fit_isoflop_budget *bg = &r.budget[j];
        if (bg->use != FIT_ISO_USED)
            continue;
        CHECK_ABS(log(bg->N_point), log(K_TRUE) + A_TRUE * log(bg->C), 0.03);
        CHECK(bg->n_valid == o.n_boot && bg->sd_ln_N > 0);
    }
    CHECK(r.budget[0].use == FIT_ISO_FEW && r.budget[0].n_sizes == 4);
    CHECK(r.budget[9].use == FIT_ISO_EDGE);
    CHECK(r.warnings & FIT_WARN_EDGE);
    CHECK(strstr(r.warning_text, "at the edge") && strstr(r.warning_text, "fewer than 5"));

    /* a repeated, worse run of one size changes nothing (the minimum over equal N is used) */
    N[n] = N[3], C[n] = C[3], L[n] = L[3] + 0.5;
    CHECK_ST(fit_isoflop(n + 1, N, C, L, &o, &r2, err), ST_OK);
    CHECK(r2.a == r.a && r2.a_lo == r.a_lo && r2.a_hi == r.a_hi);
    /* runs within 5% of a budget's compute belong to it */
    for (size_t i = 0; i < n; i += 2)
        C[i] *= 1.01;
    CHECK_ST(fit_isoflop(n, N, C, L, &o, &r2, err), ST_OK);
    CHECK(r2.n_budgets == r.n_budgets && r2.n_used == r.n_used);
    CHECK_ABS(r2.a, r.a, 2e-3);
    for (size_t i = 0; i < n; i += 2)
        C[i] /= 1.01;
    /* another seed: another interval, the same point estimate up to the noise */
    o.seed = 7;
    CHECK_ST(fit_isoflop(n, N, C, L, &o, &r2, err), ST_OK);
    CHECK(r2.a_lo != r.a_lo);
    CHECK_ABS(r2.a, r.a, 0.005);

    /* errors: one usable budget; bad options; bad values */
    size_t n1 = 9;
    CHECK_ST(fit_isoflop(n1, N, C, L, &o, &r2, err), ST_EEMPTY);
    CHECK(strstr(err, "need at least 2") != NULL);
    o.n_boot = 1;
    CHECK_ST(fit_isoflop(n, N, C, L, &o, &r2, err), ST_EINVAL);
    o.n_boot = 100;
    L[2] = -1;
    CHECK_ST(fit_isoflop(n, N, C, L, &o, &r2, err), ST_EINVAL);
}

/* The rows of one configuration of Porian's file. */
static size_t select_config(fit_table *t, const char *const cfg[6], double *N, double *C, double *L)
{
    static const char *const cols[] = {"dataset", "hparams",     "warmup",
                                       "decay",   "param_count", "val"};
    const double *n = fit_table_column(t, "N"), *c = fit_table_column(t, "flops"),
                 *l = fit_table_column(t, "loss");
    size_t m = 0;
    for (size_t i = 0; i < fit_table_n_rows(t); i++) {
        int ok = 1;
        for (int k = 0; k < 6; k++)
            ok &= !strcmp(fit_table_text(t, cols[k], i), cfg[k]);
        if (ok)
            N[m] = n[i], C[m] = c[i], L[m++] = l[i];
    }
    return m;
}

static void test_porian(void)
{
    char err[ST_ERRMSG_MAX];
    fit_table *t;
    json_error_t je;
    json_t *pub = json_load_file(DIR "porian2024_published_fits.json", 0, &je);
    CHECK(pub != NULL);
    CHECK_ST(fit_table_read_csv(DIR "porian2024_isoflop_rw.csv", NULL, &t, err), ST_OK);
    if (!pub || !t)
        return;
    size_t nr = fit_table_n_rows(t), n_checked = 0;
    double *N = malloc(3 * nr * sizeof(double));
    fit_isoflop_options o = fit_isoflop_options_default(); /* 1000 replicates, sd 0.002 */
    fit_isoflop_result *r = malloc(sizeof(*r));
    for (size_t k = 0; k < json_array_size(pub); k++) {
        json_t *e = json_array_get(pub, k), *cfg = json_object_get(e, "config");
        if (strcmp(json_string_value(json_object_get(e, "file")), "summary_df"))
            continue;
        const char *c[6];
        for (int q = 0; q < 6; q++)
            c[q] = json_string_value(json_array_get(cfg, (size_t)q));
        size_t m = select_config(t, c, N, N + nr, N + 2 * nr);
        CHECK(m > 80);
        CHECK_ST(fit_isoflop(m, N, N + nr, N + 2 * nr, &o, r, err), ST_OK);
        double lo = json_number_value(json_array_get(json_object_get(e, "a_ci95"), 0));
        double hi = json_number_value(json_array_get(json_object_get(e, "a_ci95"), 1));
        double a_pub = json_number_value(json_object_get(e, "a_bs_median_weighted"));
        printf("  %s/%s/%s/%s/%s/%s: a %.4f (%.4f, %.4f); published %.4f (%.4f, %.4f)\n", c[0],
               c[1], c[2], c[3], c[4], c[5], r->a, r->a_lo, r->a_hi, a_pub, lo, hi);
        CHECK(r->a >= lo && r->a <= hi);
        CHECK_ABS(r->a, a_pub, 0.003);
        /* our interval and theirs overlap by most of their width */
        CHECK(fmin(r->a_hi, hi) - fmax(r->a_lo, lo) > 0.7 * (hi - lo));
        n_checked++;
    }
    CHECK(n_checked == 5);
    free(r);
    free(N);
    fit_table_destroy(t);
    json_decref(pub);
}

int main(void)
{
    test_synthetic();
    test_porian();
    return check_summary("fit.isoflop");
}
