/*
 * test_fit_chinchilla.c — Epoch's 240 Chinchilla points (tests/data/scaling, README there):
 * the 4500-start Huber grid optimum and the Huber-likelihood MLE reproduce the published values
 * within the README's tolerances, the result does not depend on the thread count, the bootstrap
 * standard errors are within 5% of Epoch's, and the compute-optimal split matches the refit.
 */
#include "common/st.h"
#include "fit/fit.h"
#include "tests/check.h"

#include <stdlib.h>
#include <string.h>

#define CSV "tests/data/scaling/chinchilla_svg_extracted_data.csv"

static fit *fit_epoch(size_t n, const double *x, const double *y, fit_objective obj, size_t nt)
{
    fit *f;
    CHECK_ST(fit_create(fit_law_chinchilla, &f), ST_OK);
    fit_options o = fit_options_default();
    o.objective = obj;
    o.n_threads = nt;
    CHECK_ST(fit_set_options(f, &o), ST_OK);
    CHECK_ST(fit_set_data(f, n, x, y, NULL), ST_OK);
    st_status st = fit_run(f);
    CHECK_ST(st, ST_OK);
    if (st)
        fprintf(stderr, "  %s\n", fit_errmsg(f));
    return f;
}

int main(void)
{
    char err[ST_ERRMSG_MAX];
    fit_table *t;
    st_status st = fit_table_read_csv(CSV, "N=Model Size,C=Training FLOP", &t, err);
    CHECK_ST(st, ST_OK);
    if (st) {
        fprintf(stderr, "%s\n", err);
        return check_summary("fit.chinchilla");
    }
    CHECK(fit_table_n_rows(t) == 245);
    CHECK_ST(fit_table_exclude_top_loss(t, 5), ST_OK);
    size_t n = fit_table_n_rows(t);
    CHECK(n == 240);
    CHECK(strstr(fit_table_exclusions(t), "5 highest") != NULL);
    const char *names[] = {"N", "D"};
    double *x = malloc(n * 2 * sizeof(double));
    const double *y = fit_table_column(t, "loss");
    CHECK_ST(fit_table_matrix(t, 2, names, x, err), ST_OK);

    /* 4500-start grid, summed Huber delta = 1e-3 (Epoch's "replicate exactly"). */
    fit *g1 = fit_epoch(n, x, y, FIT_OBJ_HUBER, 1), *g2 = fit_epoch(n, x, y, FIT_OBJ_HUBER, 2);
    const double *p = fit_params(g1);
    fit_diag d;
    fit_get_diag(g1, &d);
    CHECK(d.n_starts == 4500);
    CHECK_ABS(fit_objective_value(g1), 0.0010182740, 1e-9);
    CHECK_REL(p[0], 477.83, 1e-2);
    CHECK_REL(p[1], 2143.4, 1e-2);
    CHECK_REL(p[2], 1.81722, 1e-3);
    CHECK_ABS(p[3], 0.347311, 1e-3);
    CHECK_ABS(p[4], 0.367172, 1e-3);
    CHECK(memcmp(fit_params(g1), fit_params(g2), 5 * sizeof(double)) == 0);
    CHECK(!(fit_warnings(g1) & FIT_WARN_LOSS_SCALE));

    /* Huber-likelihood MLE (Epoch's headline). */
    fit *m = fit_epoch(n, x, y, FIT_OBJ_HUBER_LIK, 2);
    p = fit_params(m);
    CHECK_REL(p[0], 482.01, 1e-2);
    CHECK_REL(p[1], 2085.43, 1e-2);
    CHECK_REL(p[2], 1.8169, 1e-3);
    CHECK_ABS(p[3], 0.3478, 1e-3);
    CHECK_ABS(p[4], 0.3658, 1e-3);
    CHECK_ABS(log(fit_sigma(m)), -12.2666, 0.05);
    CHECK_ABS(fit_loglik(m), 879.77, 0.05);

    /* Compute-optimal split at Chinchilla's budget, from the MLE (spec §6). */
    fit_alloc al;
    CHECK_ST(fit_allocate(p, 5.88e23, &al), ST_OK);
    CHECK_ABS(al.a, 0.513, 2e-3);
    CHECK_REL(al.N_opt, 7.3e10, 0.02);
    CHECK_REL(al.D_opt, 1.34e12, 0.02);
    CHECK_REL(al.tokens_per_param, 18.3, 0.02);
    double C;
    CHECK_ST(fit_compute_for_loss(p, al.L_opt, &C), ST_OK);
    CHECK_REL(C, 5.88e23, 1e-9);

    /* Loss-scale pitfall: an averaged objective is flagged. */
    fit *ms;
    CHECK_ST(fit_create(fit_law_chinchilla, &ms), ST_OK);
    fit_options o = fit_options_default();
    o.mean = 1;
    CHECK_ST(fit_set_options(ms, &o), ST_OK);
    CHECK_ST(fit_set_data(ms, n, x, y, NULL), ST_OK);
    const double hoff[5] = {6.0073404, 6.0179186, 0.5267228, 0.33917084, 0.2849083};
    CHECK_ST(fit_set_starts(ms, 1, hoff), ST_OK);
    CHECK_ST(fit_run(ms), ST_OK);
    CHECK(fit_warnings(ms) & FIT_WARN_LOSS_SCALE);
    CHECK(strstr(fit_warning_text(ms), "averaged") != NULL);
    fit_destroy(ms);

    /* Bootstrap: Epoch's SEs (4000 replicates, seed 42, numpy's index stream) within 5%. */
    int quick = getenv("ST_TEST_QUICK") != NULL;
    fit_boot_options bo = fit_boot_options_default();
    bo.n_rep = quick ? 100 : 4000;
    bo.n_threads = 2;
    fit_boot *b;
    CHECK_ST(fit_bootstrap(m, &bo, &b), ST_OK);
    if (b && !quick) {
        const double se[5] = {124.52, 1293.3, 0.02566, 0.015401, 0.020603};
        for (size_t i = 0; i < 5; i++)
            CHECK_REL(fit_boot_se(b, i), se[i], 0.05);
        double lo, hi;
        fit_boot_interval(b, 3, 0.95, &lo, &hi);
        CHECK_ABS(lo, 0.3168, 0.005);
        CHECK_ABS(hi, 0.3733, 0.005);
        CHECK_ABS(fit_boot_derived_se(b, FIT_DER_A), 0.020, 0.003);
        CHECK_REL(fit_boot_derived_median(b, FIT_DER_TPP), 17.2, 0.05);
        fit_boot_derived_interval(b, FIT_DER_TPP, 0.80, &lo, &hi);
        CHECK_REL(lo, 9.9, 0.05);
        CHECK_REL(hi, 29.0, 0.05);
        printf("bootstrap SE: A %.5g B %.5g E %.5g alpha %.5g beta %.5g\n", fit_boot_se(b, 0),
               fit_boot_se(b, 1), fit_boot_se(b, 2), fit_boot_se(b, 3), fit_boot_se(b, 4));
    }
    /* Same replicates with one thread. */
    fit_boot *b1;
    bo.n_rep = 50;
    bo.n_threads = 1;
    CHECK_ST(fit_bootstrap(m, &bo, &b1), ST_OK);
    if (b && b1)
        CHECK(memcmp(fit_boot_replicate(b, 49), fit_boot_replicate(b1, 49), 5 * sizeof(double)) ==
              0);
    fit_boot_destroy(b);
    fit_boot_destroy(b1);

    fit_destroy(g1);
    fit_destroy(g2);
    fit_destroy(m);
    fit_table_destroy(t);
    free(x);
    return check_summary("fit.chinchilla");
}
