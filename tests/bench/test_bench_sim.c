/*
 * test_bench_sim.c — the benchmark simulator (bench/sim.c) against hand-computed values.
 *
 * References: the formulas evaluated independently in Python (values pasted with 15 digits),
 * Chinchilla's closed-form allocation for the oracle, local perturbation of the oracle's optimum
 * in every coordinate, the divergence boundary on both sides, seeded noise (same seed, same
 * value; the sample sd over many seeds), and the metrics protocol as sim_emit writes it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/sim.h"
#include "tests/check.h"

/* Independent values (python3, float64) for the default law. */
static void test_formulas(const sim_law *law)
{
    CHECK_REL(sim_loss_nd(law, 1e7, 2e8), 5.50371532560138, 1e-13);
    CHECK_REL(sim_lr_opt(law, 1e7, 2e8), 0.00646054624666413, 1e-13);
    CHECK_REL(sim_batch_opt(law, 2e8), 31865.1612916846, 1e-13);
    CHECK_REL(sim_lr_max(law, 1e7, 1.0, 1.0), 0.0387632774799848, 1e-13);
    /* half the optimal warmup lowers the boundary by a quarter */
    CHECK_REL(sim_lr_max(law, 1e7, 0.01, 0.02), 0.75 * 0.0387632774799848, 1e-13);

    /* all four penalties at once: lr 2x, batch / 2, warmup 0.05, weight decay 0.05 */
    double lr_opt = 0.00646054624666413, bs_opt = 31865.1612916846;
    sim_setting s = {1e7, 2e8, 2 * lr_opt, bs_opt / 2, 0.05, 0.05};
    sim_terms t;
    CHECK_ST(sim_eval(law, &s, &t, NULL), ST_OK);
    CHECK(!t.diverged);
    CHECK_REL(t.warmup_opt, 0.015932580645842305, 1e-12);
    CHECK_REL(t.pen_lr_bs, 0.014647490790304515, 1e-12);
    CHECK_REL(t.pen_warmup, 0.008652248740634872, 1e-12);
    CHECK_REL(t.pen_wd, 0.003315336080483221, 1e-12);
    CHECK_REL(t.loss, 5.65019712513601, 1e-13);
    CHECK_REL(t.flops, 6 * 1e7 * 2e8, 1e-15);

    /* no weight decay: the full wd penalty */
    s.weight_decay = 0;
    CHECK_ST(sim_eval(law, &s, &t, NULL), ST_OK);
    CHECK_REL(t.pen_wd, law->wd_kappa, 1e-15);
}

static void test_invalid(const sim_law *law)
{
    sim_terms t;
    char err[ST_ERRMSG_MAX];
    sim_setting ok = {1e7, 2e8, 1e-3, 1e4, 0.02, 0.1};
    sim_setting s = ok;
    s.N = -1;
    CHECK_ST(sim_eval(law, &s, &t, err), ST_EINVAL);
    CHECK(strstr(err, "N =") != NULL);
    s = ok;
    s.batch = 3e8; /* more than the tokens */
    CHECK_ST(sim_eval(law, &s, &t, err), ST_EINVAL);
    s = ok;
    s.warmup = 1.0;
    CHECK_ST(sim_eval(law, &s, &t, err), ST_EINVAL);
    s = ok;
    s.lr = NAN;
    CHECK_ST(sim_eval(law, &s, &t, err), ST_EINVAL);
    sim_setting o;
    double loss;
    CHECK_ST(sim_oracle(law, -1.0, &o, &loss), ST_EINVAL);
}

/* The loss of the setting after scaling coordinate k by f (N moves with D = C/(6N)). */
static double perturbed(const sim_law *law, const sim_setting *o, int k, double f)
{
    sim_setting s = *o;
    switch (k) {
    case 0:
        s.N *= f;
        s.D /= f;
        break;
    case 1:
        s.lr *= f;
        break;
    case 2:
        s.batch *= f;
        break;
    case 3:
        s.warmup *= f;
        break;
    default:
        s.weight_decay *= f;
        break;
    }
    sim_terms t;
    if (sim_eval(law, &s, &t, NULL) != ST_OK)
        return NAN;
    return t.loss;
}

static void check_local_optimum(const sim_law *law, const sim_setting *o, double loss)
{
    const double f[] = {1.001, 0.999, 1.01, 0.99, 1.1, 0.9};
    for (int k = 0; k < 5; k++)
        for (size_t j = 0; j < sizeof(f) / sizeof(f[0]); j++) {
            double l = perturbed(law, o, k, f[j]);
            int ok = !(l < loss - 1e-12 * loss);
            if (!ok)
                fprintf(stderr, "  coordinate %d x %g: %.15g < optimum %.15g\n", k, f[j], l, loss);
            CHECK(ok);
        }
}

static void test_oracle(const sim_law *law)
{
    /* Below the boundary the oracle is Chinchilla's closed form (python, float64). */
    sim_setting o;
    double loss;
    CHECK_ST(sim_oracle(law, 1e18, &o, &loss), ST_OK);
    CHECK_REL(o.N, 80622542.2136133, 1e-6);
    CHECK_REL(o.D, 2067246480.83008, 1e-6);
    CHECK_REL(loss, 3.48899717229273, 1e-12);
    CHECK_REL(6 * o.N * o.D, 1e18, 1e-12);
    check_local_optimum(law, &o, loss);

    /* every penalty is zero at the optimum: loss == L(N, D) */
    sim_terms t;
    CHECK_ST(sim_eval(law, &o, &t, NULL), ST_OK);
    CHECK_ABS(t.pen_lr_bs + t.pen_warmup + t.pen_wd, 0.0, 1e-14);
    CHECK_REL(t.lr_opt, o.lr, 1e-12);

    /* a range of computes: the optimum is local in every coordinate, loss falls with C */
    double prev = INFINITY;
    for (double C = 1e15; C <= 1e24; C *= 10) {
        CHECK_ST(sim_oracle(law, C, &o, &loss), ST_OK);
        check_local_optimum(law, &o, loss);
        CHECK(loss < prev);
        prev = loss;
    }

    /* A world whose boundary sits below the lr optimum: the oracle lands on the boundary and is
     * still a local optimum (larger lr diverges, smaller is worse). */
    sim_law tight = *law;
    tight.div_kappa = 0.5;
    CHECK_ST(sim_oracle(&tight, 1e18, &o, &loss), ST_OK);
    CHECK_ST(sim_eval(&tight, &o, &t, NULL), ST_OK);
    CHECK(!t.diverged);
    CHECK_REL(o.lr, t.lr_max, 1e-12);
    CHECK(o.lr < t.lr_opt);
    check_local_optimum(&tight, &o, loss);
    /* and a brute-force grid over N finds nothing better */
    double best = INFINITY;
    for (double x = log(o.N) - 3; x <= log(o.N) + 3; x += 0.01) {
        sim_setting g;
        double l;
        CHECK_ST(sim_best_hypers(&tight, exp(x), 1e18 / (6 * exp(x)), &g, &l), ST_OK);
        best = fmin(best, l);
    }
    CHECK(loss <= best + 1e-12);
}

/* The box-constrained oracle: the same optimum when the box holds it; on the box's edge (and
 * no worse than a brute-force scan of the slice 6 N D = C) when it does not. */
static void test_oracle_box(const sim_law *law)
{
    sim_setting o, b;
    double loss, lb;
    CHECK_ST(sim_oracle(law, 1e18, &o, &loss), ST_OK);
    CHECK_ST(sim_oracle_box(law, 1e18, 1e6, 1e9, 1e7, 1e11, &b, &lb), ST_OK);
    CHECK_REL(lb, loss, 1e-12);
    CHECK_REL(b.N, o.N, 1e-6);

    /* N capped at 3e7 (the optimum is 8.06e7): the best run sits on N = 3e7 */
    CHECK_ST(sim_oracle_box(law, 1e18, 1e6, 3e7, 1e7, 1e11, &b, &lb), ST_OK);
    CHECK_REL(b.N, 3e7, 1e-12);
    CHECK(lb > loss);
    double best = INFINITY;
    for (double x = log(3e7); x >= log(1e18 / (6 * 1e11)); x -= 0.001) {
        sim_setting g;
        double l;
        if (sim_best_hypers(law, exp(x), 1e18 / (6 * exp(x)), &g, &l) == ST_OK)
            best = fmin(best, l);
    }
    CHECK(lb <= best + 1e-12);
    CHECK_REL(lb, best, 1e-6);

    /* no (N, D) of the box costs 1e25 */
    CHECK_ST(sim_oracle_box(law, 1e25, 1e6, 3e7, 1e7, 1e9, &b, &lb), ST_ERANGE);
}

static void test_divergence(const sim_law *law)
{
    sim_setting s = {1e7, 2e8, 0, 31865.0, 0.05, 0.1};
    double lr_max = sim_lr_max(law, 1e7, 1.0, 1.0); /* warmup 0.05 > warmup_opt */
    sim_terms t;
    s.lr = lr_max * 0.999;
    CHECK_ST(sim_eval(law, &s, &t, NULL), ST_OK);
    CHECK(!t.diverged && isfinite(t.loss));
    s.lr = lr_max * 1.001;
    CHECK_ST(sim_eval(law, &s, &t, NULL), ST_OK);
    CHECK(t.diverged && isinf(t.loss));

    /* the run diverges during warmup, at the step where the ramp passes lr_max */
    double obs, step;
    int div;
    s.lr = 2 * lr_max;
    CHECK_ST(sim_run(law, &s, 7, &obs, &div, &step, NULL), ST_OK);
    CHECK(div && isnan(obs));
    double W = 0.05 * 2e8 / 31865.0;
    CHECK_ABS(step, floor(W / 2) + 1, 0.0);

    /* the boundary falls as N grows (StepLaw: lr_opt ~ N^-0.713 (20N)^0.307) */
    CHECK(sim_lr_max(law, 1e8, 1, 1) < sim_lr_max(law, 1e7, 1, 1));
    CHECK_REL(sim_lr_max(law, 1e8, 1, 1) / sim_lr_max(law, 1e7, 1, 1), pow(10, -0.713 + 0.307),
              1e-12);
}

static void test_noise(const sim_law *law)
{
    sim_setting s = {1e7, 2e8, 0.006, 32000, 0.02, 0.1};
    sim_terms t;
    CHECK_ST(sim_eval(law, &s, &t, NULL), ST_OK);
    double a, b, step;
    int div;
    CHECK_ST(sim_run(law, &s, 42, &a, &div, &step, NULL), ST_OK);
    CHECK_ST(sim_run(law, &s, 42, &b, &div, &step, NULL), ST_OK);
    CHECK(a == b);
    CHECK_ST(sim_run(law, &s, 43, &b, &div, &step, NULL), ST_OK);
    CHECK(a != b);

    /* relative sd over seeds ~ noise_sd; mean ~ true loss */
    int n = getenv("ST_TEST_QUICK") ? 500 : 4000;
    double m = 0, m2 = 0;
    for (int i = 0; i < n; i++) {
        double o;
        CHECK_ST(sim_run(law, &s, (uint64_t)i + 1000, &o, &div, &step, NULL), ST_OK);
        double z = o / t.loss - 1.0;
        m += z;
        m2 += z * z;
    }
    m /= n;
    double sd = sqrt(m2 / n - m * m);
    CHECK_REL(sd, law->noise_sd, 0.1);
    CHECK_ABS(m, 0.0, 4 * law->noise_sd / sqrt(n));
}

/* Reads back what sim_emit wrote and checks the protocol: the last eval equals the final. */
static void test_emit(const sim_law *law)
{
    sim_setting s = {1e7, 2e8, 0.006, 32000, 0.02, 0.1};
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f)
        return;
    int code = -1;
    CHECK_ST(sim_emit(law, &s, 5, 4, f, &code, NULL), ST_OK);
    CHECK(code == 0);
    rewind(f);
    char line[512];
    int n_step = 0, n_eval = 0, n_final = 0;
    double last_eval = NAN, final = NAN, flops = NAN;
    while (fgets(line, sizeof(line), f)) {
        const char *v;
        if (strstr(line, "\"event\":\"step\""))
            n_step++;
        if (strstr(line, "\"event\":\"eval\"") && (v = strstr(line, "\"val_loss\":"))) {
            n_eval++;
            last_eval = strtod(v + 11, NULL);
        }
        if (strstr(line, "\"event\":\"final\"") && (v = strstr(line, "\"val_loss\":"))) {
            n_final++;
            final = strtod(v + 11, NULL);
            flops = strtod(strstr(line, "\"flops\":") + 8, NULL);
        }
    }
    fclose(f);
    CHECK(n_step == 4 && n_eval == 4 && n_final == 1);
    CHECK(last_eval == final);
    CHECK_REL(flops, 6 * 1e7 * 2e8, 1e-15);
    double obs, step;
    int div;
    CHECK_ST(sim_run(law, &s, 5, &obs, &div, &step, NULL), ST_OK);
    CHECK_REL(final, obs, 1e-15);

    /* a diverged run: a diverged line and exit code 3 */
    s.lr = 1.0;
    f = tmpfile();
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK_ST(sim_emit(law, &s, 5, 4, f, &code, NULL), ST_OK);
    CHECK(code == 3);
    rewind(f);
    int n_div = 0;
    while (fgets(line, sizeof(line), f))
        n_div += strstr(line, "\"event\":\"diverged\"") != NULL;
    fclose(f);
    CHECK(n_div == 1);
}

int main(void)
{
    st_global_init();
    sim_law law = sim_law_default();
    test_formulas(&law);
    test_invalid(&law);
    test_oracle(&law);
    test_oracle_box(&law);
    test_divergence(&law);
    test_noise(&law);
    test_emit(&law);
    st_global_cleanup();
    return check_summary("bench.sim");
}
