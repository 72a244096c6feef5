/*
 * test_fit_extrapolate_curves.c — curve points in the extrapolation engine
 * (fit_xp_set_curve_points): (1) noise-free runs and points from a law the model represents
 * exactly: the law is recovered and the points sit on it; (2) weight 0: points that weigh
 * nothing change the prediction by not one bit (the bootstrap draws the same runs); (3) points
 * that carry their run's error (correlated: each run's offset repeats in its points) kept with
 * their run give a wider interval than the same points given as independent runs — the engine
 * does not count points from one run as independent; (4) argument checks; (5) points that sit
 * off the law relative to their own run (a curve law that does not describe the trainer's
 * curves) are left out with a warning: the prediction is the one without points, bit for bit;
 * points on the law are kept, without the warning; (6) cooldown branches that kept their run's
 * warmup steps: flagged, the law is recovered; taken as derived points, it is not; (7) the
 * branches' guard judges them by the law fitted with them, derived points by the finals' law.
 */
#include "common/st.h"
#include "fit/extrapolate.h"
#include "tests/check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define A_  400.0
#define B_  2000.0
#define E_  1.8
#define AL_ 0.34
#define BE_ 0.28
#define CU_ 0.02

enum { NR = 60, NF = 2 };
static const double FRAC[NF] = {0.25, 0.5};

typedef struct sweep {
    double x[NR * 3], cost[NR], obj[NR];
    int failed[NR];
    size_t cp_run[NR * NF];
    double cp_D[NR * NF], cp_obj[NR * NF];
    size_t n_cp;
} sweep;

static double law(double N, double D, double u)
{
    return (E_ + A_ * pow(N, -AL_) + B_ * pow(D, -BE_)) * (1 + 0.5 * (1 - exp(-CU_ * u * u / 0.5)));
}

/* NR runs (N, D, lr); each run's objective times exp(sd z_i), and its points at FRAC of its
 * tokens times the same exp(sd z_i) (the run's error, repeated: fully correlated). */
static void make_sweep_span(uint64_t seed, double sd, double d_span, sweep *w);

static void make_sweep(uint64_t seed, double sd, sweep *w)
{
    make_sweep_span(seed, sd, 100.0, w);
}

/* As make_sweep, D spanning d_span from 1e8. */
static void make_sweep_span(uint64_t seed, double sd, double d_span, sweep *w)
{
    st_rng *rng = NULL;
    st_rng_create(seed, &rng);
    w->n_cp = 0;
    for (size_t i = 0; i < NR; i++) {
        double N = exp(log(1e6) + st_rng_uniform(rng) * log(100.0));
        double D = exp(log(1e8) + st_rng_uniform(rng) * log(d_span));
        double lopt = log(0.02) - 0.5 * log(N / 1e7) + 0.3 * log(D / 1e9);
        double u = (st_rng_uniform(rng) - 0.5) * 4;
        double z = st_rng_gaussian(rng), off = exp(sd * z);
        w->x[3 * i] = N;
        w->x[3 * i + 1] = D;
        w->x[3 * i + 2] = exp(lopt + u);
        w->failed[i] = 0;
        w->cost[i] = 6 * N * D;
        w->obj[i] = law(N, D, u) * off;
        for (size_t f = 0; f < NF; f++) {
            w->cp_run[w->n_cp] = i;
            w->cp_D[w->n_cp] = FRAC[f] * D;
            /* the optimum of lr moves with D: the point's u is its distance at FRAC D */
            double uf = u - 0.3 * log(FRAC[f]);
            w->cp_obj[w->n_cp++] = law(N, FRAC[f] * D, uf) * off;
        }
    }
    st_rng_destroy(rng);
}

static void params(fit_xp_param p[3])
{
    fit_xp_param_init(&p[0], "N", FIT_XP_LOG);
    fit_xp_param_init(&p[1], "D", FIT_XP_LOG);
    fit_xp_param_init(&p[2], "lr", FIT_XP_LOG);
}

static fit_xp *engine(size_t n_boot, double prior)
{
    fit_xp *xp = NULL;
    fit_xp_create(&xp);
    fit_xp_options o = fit_xp_options_default();
    o.n_boot = n_boot;
    o.prior_ab_sd = prior;
    o.prior_law_sd = prior;
    fit_xp_set_options(xp, &o);
    return xp;
}

static double largest(const sweep *w)
{
    double c = 0;
    for (size_t i = 0; i < NR; i++)
        c = fmax(c, w->cost[i]);
    return c;
}

/* (1) exact data: the law and the points are recovered; the points count. */
static void test_exact(void)
{
    sweep w;
    make_sweep(11, 0, &w);
    fit_xp_param p[3];
    params(p);
    fit_xp *xp = engine(10, 0);
    CHECK_ST(fit_xp_set_runs(xp, 3, p, NR, w.x, w.cost, w.obj, w.failed, NULL, NULL), ST_OK);
    CHECK_ST(fit_xp_set_curve_points(xp, w.n_cp, w.cp_run, w.cp_D, w.cp_obj, NULL, 1.0), ST_OK);
    CHECK(fit_xp_n_curve_points(xp) == NR * NF);
    CHECK_ST(fit_xp_run(xp, 100 * largest(&w)), ST_OK);
    double nat[5];
    CHECK_ST(fit_xp_chinchilla(xp, nat, NULL), ST_OK);
    CHECK_REL(nat[2], E_, 1e-3);
    CHECK_REL(nat[3], AL_, 1e-3);
    CHECK_REL(nat[4], BE_, 1e-3);
    /* a point's setting predicted at its own D: its objective */
    size_t c = 7, i = w.cp_run[c];
    double y;
    CHECK_ST(fit_xp_predict(xp, &w.x[3 * i], w.x[3 * i], w.cp_D[c], &y, NULL, NULL, NULL), ST_OK);
    CHECK_REL(y, w.cp_obj[c], 1e-3);
    /* fit_xp_set_runs drops the points */
    CHECK_ST(fit_xp_set_runs(xp, 3, p, NR, w.x, w.cost, w.obj, w.failed, NULL, NULL), ST_OK);
    CHECK(fit_xp_n_curve_points(xp) == 0);
    fit_xp_destroy(xp);
}

static void predict_at_target(fit_xp *xp, const sweep *w, double *y, double *lo, double *hi)
{
    fit_xp_result r;
    CHECK_ST(fit_xp_run(xp, 100 * largest(w)), ST_OK);
    fit_xp_get_result(xp, &r);
    CHECK(r.method == FIT_XP_METHOD_MODEL);
    double x[3] = {1e8, 1e10, 0.01};
    CHECK_ST(fit_xp_predict(xp, x, x[0], x[1], y, lo, hi, NULL), ST_OK);
}

/* (2) weight 0: bit for bit the prediction without points. */
static void test_weight_zero(void)
{
    sweep w;
    make_sweep(12, 0.05, &w);
    fit_xp_param p[3];
    params(p);
    double y0, lo0, hi0, y1, lo1, hi1;
    fit_xp *xp = engine(30, 0.05);
    CHECK_ST(fit_xp_set_runs(xp, 3, p, NR, w.x, w.cost, w.obj, w.failed, NULL, NULL), ST_OK);
    predict_at_target(xp, &w, &y0, &lo0, &hi0);
    CHECK_ST(fit_xp_set_curve_points(xp, w.n_cp, w.cp_run, w.cp_D, w.cp_obj, NULL, 0.0), ST_OK);
    predict_at_target(xp, &w, &y1, &lo1, &hi1);
    CHECK(y0 == y1 && lo0 == lo1 && hi0 == hi1);
    fit_xp_destroy(xp);
}

/* (3) correlated points kept with their run: a wider interval than as independent runs. */
static void test_correlated_widens(void)
{
    size_t n_wider = 0, n_seeds = 4;
    for (size_t sd = 0; sd < n_seeds; sd++) {
        sweep w;
        make_sweep(100 + sd, 0.08, &w);
        fit_xp_param p[3];
        params(p);
        double y, lo, hi, yi, loi, hii, yb, lob, hib;
        /* the runs alone */
        fit_xp *xp = engine(60, 0.05);
        CHECK_ST(fit_xp_set_runs(xp, 3, p, NR, w.x, w.cost, w.obj, w.failed, NULL, NULL), ST_OK);
        predict_at_target(xp, &w, &yb, &lob, &hib);
        /* kept with their runs (weight 1: as much as the runs in the point fit) */
        CHECK_ST(fit_xp_set_curve_points(xp, w.n_cp, w.cp_run, w.cp_D, w.cp_obj, NULL, 1.0), ST_OK);
        predict_at_target(xp, &w, &y, &lo, &hi);
        fit_xp_destroy(xp);
        /* the same points as independent runs of their own */
        enum { NT = NR * (1 + NF) };
        static double x[NT * 3], cost[NT], obj[NT];
        static int failed[NT];
        memcpy(x, w.x, sizeof(w.x));
        memcpy(cost, w.cost, sizeof(w.cost));
        memcpy(obj, w.obj, sizeof(w.obj));
        memset(failed, 0, sizeof(failed));
        for (size_t c = 0; c < w.n_cp; c++) {
            size_t i = w.cp_run[c], r = NR + c;
            memcpy(&x[3 * r], &w.x[3 * i], 3 * sizeof(double));
            x[3 * r + 1] = w.cp_D[c];
            cost[r] = 6 * x[3 * r] * w.cp_D[c];
            obj[r] = w.cp_obj[c];
        }
        xp = engine(60, 0.05);
        CHECK_ST(fit_xp_set_runs(xp, 3, p, NT, x, cost, obj, failed, NULL, NULL), ST_OK);
        predict_at_target(xp, &w, &yi, &loi, &hii);
        fit_xp_destroy(xp);
        double wk = log(hi / lo), wi = log(hii / loi), wb = log(hib / lob);
        printf("seed %zu: ln(hi/lo) runs alone %.4f, points kept with their run %.4f, as "
               "independent runs %.4f\n",
               sd, wb, wk, wi);
        n_wider += wk > wi;
    }
    CHECK(n_wider == n_seeds);
}

/* (4) argument checks */
static void test_args(void)
{
    sweep w;
    make_sweep(13, 0, &w);
    fit_xp_param p[3];
    params(p);
    fit_xp *xp = engine(4, 0.05);
    w.failed[3] = 1;
    w.obj[3] = NAN;
    w.cost[3] = NAN;
    CHECK_ST(fit_xp_set_runs(xp, 3, p, NR, w.x, w.cost, w.obj, w.failed, NULL, NULL), ST_OK);
    size_t run = NR;
    double D = 1e6, y = 2;
    CHECK_ST(fit_xp_set_curve_points(xp, 1, &run, &D, &y, NULL, 0.5), ST_EINVAL);
    run = 3; /* failed */
    CHECK_ST(fit_xp_set_curve_points(xp, 1, &run, &D, &y, NULL, 0.5), ST_EINVAL);
    run = 4;
    D = -1;
    CHECK_ST(fit_xp_set_curve_points(xp, 1, &run, &D, &y, NULL, 0.5), ST_EINVAL);
    D = 1e6;
    CHECK_ST(fit_xp_set_curve_points(xp, 1, &run, &D, &y, NULL, 1.5), ST_EINVAL);
    CHECK_ST(fit_xp_set_curve_points(xp, 1, &run, &D, &y, NULL, 0.5), ST_OK);
    CHECK(fit_xp_n_curve_points(xp) == 1);
    CHECK_ST(fit_xp_set_curve_points(xp, 0, NULL, NULL, NULL, NULL, 0.5), ST_OK);
    CHECK(fit_xp_n_curve_points(xp) == 0);
    fit_xp_destroy(xp);
}

/* (5) points off the law by a common factor relative to their run: left out, with the warning;
 * the same points on the law: kept. */
static void test_biased_left_out(void)
{
    sweep w;
    make_sweep(12, 0.02, &w);
    fit_xp_param p[3];
    params(p);
    double y0, lo0, hi0, y1, lo1, hi1;
    fit_xp *xp = engine(30, 0.05);
    CHECK_ST(fit_xp_set_runs(xp, 3, p, NR, w.x, w.cost, w.obj, w.failed, NULL, NULL), ST_OK);
    predict_at_target(xp, &w, &y0, &lo0, &hi0);
    CHECK_ST(fit_xp_set_curve_points(xp, w.n_cp, w.cp_run, w.cp_D, w.cp_obj, NULL, 0.5), ST_OK);
    predict_at_target(xp, &w, &y1, &lo1, &hi1);
    fit_xp_result r;
    fit_xp_get_result(xp, &r);
    CHECK(!(r.warnings & FIT_XP_WARN_CURVES));
    CHECK(y1 != y0); /* kept: they move the fit */
    double biased[NR * NF];
    for (size_t c = 0; c < w.n_cp; c++)
        biased[c] = w.cp_obj[c] * 0.96; /* 4% lower than the law says at their tokens */
    CHECK_ST(fit_xp_set_curve_points(xp, w.n_cp, w.cp_run, w.cp_D, biased, NULL, 0.5), ST_OK);
    predict_at_target(xp, &w, &y1, &lo1, &hi1);
    fit_xp_get_result(xp, &r);
    CHECK(r.warnings & FIT_XP_WARN_CURVES);
    printf("biased points: y %.6f [%.6f, %.6f], without points %.6f [%.6f, %.6f]\n", y1, lo1, hi1,
           y0, lo0, hi0);
    CHECK(y0 == y1 && lo0 == lo1 && hi0 == hi1);
    fit_xp_destroy(xp);
}

/* (6) cooldown branches keep their run's warmup steps. Runs (N, D, lr, warmup as a fraction of
 * the run) whose warmup optimum, as a fraction, falls as D^-WU_SLOPE; each run's branches at FRAC
 * D warmed up for the run's steps, i.e. for w / f of their own. Flagged as branches the points are
 * on the model's law and the law is recovered; the same points taken as derived ones (the run's
 * fraction w at f D) are not, and the law moves. */
#define WU_SLOPE 0.8
#define WU_CU    0.3

static double wu_opt(double D)
{
    return 0.005 * pow(D / 1e9, -WU_SLOPE);
}

static double law_wu(double N, double D, double u_lr, double u_w)
{
    return (E_ + A_ * pow(N, -AL_) + B_ * pow(D, -BE_)) *
           (1 + 0.5 * (1 - exp(-CU_ * u_lr * u_lr / 0.5)) +
            0.5 * (1 - exp(-WU_CU * u_w * u_w / 0.5)));
}

static void make_branch_sweep(double *x, double *cost, double *obj, int *failed, size_t *cp_run,
                              double *cp_D, double *cp_obj, unsigned char *cp_br)
{
    st_rng *rng = NULL;
    st_rng_create(21, &rng);
    size_t n_cp = 0;
    for (size_t i = 0; i < NR; i++) {
        double N = exp(log(1e6) + st_rng_uniform(rng) * log(100.0));
        double D = exp(log(1e8) + st_rng_uniform(rng) * log(100.0));
        double lopt = log(0.02) - 0.5 * log(N / 1e7) + 0.3 * log(D / 1e9);
        double u = (st_rng_uniform(rng) - 0.5) * 4, uw = (st_rng_uniform(rng) - 0.5) * 3;
        double w = wu_opt(D) * exp(uw);
        double *xi = &x[4 * i];
        xi[0] = N, xi[1] = D, xi[2] = exp(lopt + u), xi[3] = w;
        failed[i] = 0;
        cost[i] = 6 * N * D;
        obj[i] = law_wu(N, D, u, uw);
        for (size_t f = 0; f < NF; f++, n_cp++) {
            double Df = FRAC[f] * D, uf = u - 0.3 * log(FRAC[f]);
            cp_run[n_cp] = i, cp_D[n_cp] = Df, cp_br[n_cp] = 1;
            cp_obj[n_cp] = law_wu(N, Df, uf, log(w / FRAC[f] / wu_opt(Df)));
        }
    }
    st_rng_destroy(rng);
}

/* The largest relative error, over the points, of the fitted model's loss at each point's own
 * setting: its run's, at D[c] tokens with a warmup of w / f (the run's warmup steps). */
static double branch_fit_error(const fit_xp_param *p, const double *x, const double *cost,
                               const double *obj, const int *failed, const size_t *cp_run,
                               const double *cp_D, const double *cp_obj, const unsigned char *br)
{
    fit_xp *xp = engine(4, 0);
    CHECK_ST(fit_xp_set_runs(xp, 4, p, NR, x, cost, obj, failed, NULL, NULL), ST_OK);
    CHECK_ST(fit_xp_set_curve_points(xp, NR * NF, cp_run, cp_D, cp_obj, br, 1.0), ST_OK);
    CHECK_ST(fit_xp_run(xp, 1e20), ST_OK);
    fit_xp_result r;
    fit_xp_get_result(xp, &r);
    CHECK(!(r.warnings & FIT_XP_WARN_CURVES));
    double err = 0;
    for (size_t c = 0; c < NR * NF; c++) {
        const double *xi = &x[4 * cp_run[c]];
        double xc[4] = {xi[0], cp_D[c], xi[2], xi[3] * xi[1] / cp_D[c]}, y;
        CHECK_ST(fit_xp_predict(xp, xc, xc[0], xc[1], &y, NULL, NULL, NULL), ST_OK);
        err = fmax(err, fabs(y / cp_obj[c] - 1));
    }
    fit_xp_destroy(xp);
    printf("branches %s: the points' largest relative error %.2e\n",
           br ? "flagged" : "as derived points", err);
    return err;
}

static void test_branch_warmup(void)
{
    static double x[NR * 4], cost[NR], obj[NR], cp_D[NR * NF], cp_obj[NR * NF];
    static int failed[NR];
    static size_t cp_run[NR * NF];
    static unsigned char br[NR * NF];
    make_branch_sweep(x, cost, obj, failed, cp_run, cp_D, cp_obj, br);
    fit_xp_param p[4];
    params(p);
    fit_xp_param_init(&p[3], "warmup", FIT_XP_LOG);
    CHECK(branch_fit_error(p, x, cost, obj, failed, cp_run, cp_D, cp_obj, br) < 1e-3);
    CHECK(branch_fit_error(p, x, cost, obj, failed, cp_run, cp_D, cp_obj, NULL) > 5e-3);
}

/* (7) the two guards. Branches are judged by the law fitted with them: exact ones are kept and
 * move the fit; ones 4% below their runs at every fraction (a loss the model's family cannot
 * describe) are left out with the warning, and the prediction is the one without them. On
 * finals whose D spans a factor 1.5, the alpha - beta prior holds beta near alpha (alpha - beta is
 * 0.06 in truth): the points disagree with the finals' law, and as derived ones are left out; as
 * branches they are kept. */
static void test_branch_guard(void)
{
    sweep w;
    make_sweep(12, 0.02, &w);
    fit_xp_param p[3];
    params(p);
    unsigned char br[NR * NF];
    memset(br, 1, sizeof(br));
    double y0, lo0, hi0, y1, lo1, hi1, biased[NR * NF];
    for (size_t c = 0; c < w.n_cp; c++)
        biased[c] = w.cp_obj[c] * 0.96;
    fit_xp *xp = engine(30, 0.05);
    fit_xp_result r;
    CHECK_ST(fit_xp_set_runs(xp, 3, p, NR, w.x, w.cost, w.obj, w.failed, NULL, NULL), ST_OK);
    predict_at_target(xp, &w, &y0, &lo0, &hi0);
    CHECK_ST(fit_xp_set_curve_points(xp, w.n_cp, w.cp_run, w.cp_D, w.cp_obj, br, 0.5), ST_OK);
    predict_at_target(xp, &w, &y1, &lo1, &hi1);
    fit_xp_get_result(xp, &r);
    CHECK(!(r.warnings & FIT_XP_WARN_CURVES));
    CHECK(y1 != y0);
    CHECK_ST(fit_xp_set_curve_points(xp, w.n_cp, w.cp_run, w.cp_D, biased, br, 0.5), ST_OK);
    predict_at_target(xp, &w, &y1, &lo1, &hi1);
    fit_xp_get_result(xp, &r);
    CHECK(r.warnings & FIT_XP_WARN_CURVES);
    CHECK(strstr(r.warning_text, "cooldown branches left out") != NULL);
    CHECK(y0 == y1 && lo0 == lo1 && hi0 == hi1);
    fit_xp_destroy(xp);

    make_sweep_span(14, 0.002, 1.5, &w);
    double beta_err[2];
    for (int as_branch = 0; as_branch < 2; as_branch++) {
        xp = engine(4, 0.05);
        CHECK_ST(fit_xp_set_runs(xp, 3, p, NR, w.x, w.cost, w.obj, w.failed, NULL, NULL), ST_OK);
        CHECK_ST(fit_xp_set_curve_points(xp, w.n_cp, w.cp_run, w.cp_D, w.cp_obj,
                                         as_branch ? br : NULL, 0.5),
                 ST_OK);
        CHECK_ST(fit_xp_run(xp, 100 * largest(&w)), ST_OK);
        fit_xp_get_result(xp, &r);
        double nat[5] = {0};
        CHECK_ST(fit_xp_chinchilla(xp, nat, NULL), ST_OK);
        beta_err[as_branch] = fabs(nat[4] - BE_);
        printf("points as %s, finals over a D span of 1.5: %s; beta %.4f (%.2f)\n",
               as_branch ? "branches" : "derived points",
               r.warnings & FIT_XP_WARN_CURVES ? "left out" : "kept", nat[4], BE_);
        CHECK((!(r.warnings & FIT_XP_WARN_CURVES)) == as_branch);
        fit_xp_destroy(xp);
    }
    CHECK(beta_err[1] < 0.01 && beta_err[1] < beta_err[0] / 3);
}

int main(void)
{
    st_global_init();
    test_args();
    test_exact();
    test_weight_zero();
    test_correlated_widens();
    test_biased_left_out();
    test_branch_warmup();
    test_branch_guard();
    return check_summary("test_fit_extrapolate_curves");
}
