/*
 * demo_predict.c — the demo's prediction taken apart on a stored study (docs/results.md): the
 * engine (study/) on the sweep, then its prediction at the settings the large run was actually
 * trained with (the second sweep of the store: examples/tiny-gpt-scaling/run.sh's large run),
 * against that run's objective. Separates the law's error (prediction at the trained settings)
 * from a recommendation that moved. Usage:
 *   build/bench/demo_predict --db DIR/study.db [--sweep tiny-gpt-scaling]
 *       [--large tiny-gpt-scaling-large] [--compute 8e12] [--boot 200] [--curves]
 *       [--residuals] [--prior-e E] [--prior-e-sd S] [--far-weight T]
 * Prints the replicates' sd of ln loss and the run noise at the trained run, then the
 * recommendation's prediction and interval, the prediction at the trained
 * run's own settings with its interval, the actual objective and the error. --residuals also
 * prints, per succeeded small run, its N, D, hyperparameters, objective, the model's prediction
 * at its settings and ln(objective / prediction): where the model misfits the sweep.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit/extrapolate.h"
#include "runner/runner.h"
#include "study/study.h"

typedef struct args {
    const char *db, *sweep, *large;
    double compute, prior_e_sd, prior_e, far_weight;
    size_t boot;
    int curves, residuals;
} args;

static int parse(int argc, char **argv, args *a)
{
    *a = (args){NULL, "tiny-gpt-scaling", "tiny-gpt-scaling-large", 8e12, NAN, NAN, 0, 200, 0, 0};
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--curves"))
            a->curves = 1;
        else if (!strcmp(s, "--residuals"))
            a->residuals = 1;
        else if (v && !strcmp(s, "--db"))
            a->db = argv[++i];
        else if (v && !strcmp(s, "--sweep"))
            a->sweep = argv[++i];
        else if (v && !strcmp(s, "--large"))
            a->large = argv[++i];
        else if (v && !strcmp(s, "--compute"))
            a->compute = atof(argv[++i]);
        else if (v && !strcmp(s, "--prior-e"))
            a->prior_e = atof(argv[++i]);
        else if (v && !strcmp(s, "--far-weight"))
            a->far_weight = atof(argv[++i]);
        else if (v && !strcmp(s, "--prior-e-sd"))
            a->prior_e_sd = atof(argv[++i]);
        else if (v && !strcmp(s, "--boot"))
            a->boot = (size_t)atol(argv[++i]);
        else
            return fprintf(stderr, "demo_predict: unknown or incomplete option '%s'\n", s), 2;
    }
    return a->db ? 0 : (fprintf(stderr, "demo_predict: --db is required\n"), 2);
}

/* Run u's setting in the engine's parameter order (by name). */
static void setting_of(const fit_xp *xp, const runner_sweep *w, const runner_sweep_run *u,
                       double *x)
{
    for (size_t j = 0; j < fit_xp_n_params(xp); j++) {
        x[j] = NAN;
        for (size_t q = 0; q < w->cfg->n_params; q++) {
            const runner_param_spec *ps = &w->cfg->params[q];
            if (!strcmp(ps->p.name, fit_xp_param_name(xp, j)))
                x[j] = ps->is_fixed ? ps->fixed_value : u->x[q];
        }
    }
}

static runner_sweep *read_sweep(const char *db, const char *name)
{
    char em[ST_ERRMSG_MAX];
    runner_store *s = NULL;
    runner_sweep *w = NULL;
    if (runner_store_open(db, &s, em) == ST_OK && runner_store_read_sweep(s, name, &w) != ST_OK)
        w = NULL;
    runner_store_close(s);
    return w;
}

/* The large run's setting in the engine's parameter order (by name), N and D, objective. */
static int large_run(const args *a, const study *st, double *x, double *N, double *D, double *y)
{
    runner_sweep *w = read_sweep(a->db, a->large);
    if (!w)
        return fprintf(stderr, "demo_predict: no sweep '%s' in %s\n", a->large, a->db), 1;
    const runner_sweep_run *u = w->n_runs ? &w->runs[0] : NULL;
    if (!u || !isfinite(u->objective)) {
        runner_sweep_free(w);
        return fprintf(stderr, "demo_predict: the large run has no objective\n"), 1;
    }
    setting_of(study_engine(st), w, u, x);
    *N = u->final_N;
    *D = u->final_D;
    *y = u->objective;
    runner_sweep_free(w);
    return 0;
}

/* Per succeeded small run: id N D hyperparameters objective prediction ln(objective/prediction),
 * then the residuals' sd. */
static void residuals(const study *st)
{
    const fit_xp *xp = study_engine(st);
    const runner_sweep *w = study_sweep(st); /* the small runs as the study read them */
    printf("id N D");
    for (size_t j = 0; j < fit_xp_n_params(xp); j++)
        printf(" %s", fit_xp_param_name(xp, j));
    printf(" objective predicted ln_ratio\n");
    double x[64], ss = 0;
    size_t n = 0;
    for (size_t i = 0; i < w->n_runs; i++) {
        const runner_sweep_run *u = &w->runs[i];
        double p = NAN;
        if (u->status != RUNNER_RUN_SUCCEEDED || !isfinite(u->objective))
            continue;
        setting_of(xp, w, u, x);
        if (fit_xp_predict(xp, x, u->final_N, u->final_D, &p, NULL, NULL, NULL) != ST_OK)
            continue;
        printf("%llu %.6g %.6g", (unsigned long long)u->id, u->final_N, u->final_D);
        for (size_t j = 0; j < fit_xp_n_params(xp); j++)
            printf(" %.6g", x[j]);
        double r = log(u->objective / p);
        printf(" %.6g %.6g %+.4f\n", u->objective, p, r);
        ss += r * r;
        n++;
    }
    printf("residuals: %zu runs, rms ln ratio %.4f\n", n, n ? sqrt(ss / (double)n) : NAN);
}

int main(int argc, char **argv)
{
    args a;
    int rc = parse(argc, argv, &a);
    if (rc)
        return rc;
    study_options o = study_options_default();
    o.compute = a.compute;
    o.engine.n_boot = a.boot;
    o.engine.prior_e = a.prior_e;
    if (!isnan(a.prior_e))
        o.engine.prior_e_sd = 0.5; /* as scaletune extrapolate's --prior-e */
    if (!isnan(a.prior_e_sd))
        o.engine.prior_e_sd = a.prior_e_sd;
    o.engine.far_weight = a.far_weight;
    o.backtest = 0;
    o.curves = a.curves;
    char em[ST_ERRMSG_MAX];
    study *st = NULL;
    if (study_open(a.db, a.sweep, &o, &st, em) || study_run(st))
        return fprintf(stderr, "demo_predict: %s\n", st ? study_errmsg(st) : em), 1;
    fit_xp_result r;
    fit_xp_get_result(study_engine(st), &r);
    double x[64], N = NAN, D = NAN, y = NAN, p = NAN, lo = NAN, hi = NAN;
    rc = large_run(&a, st, x, &N, &D, &y);
    if (!rc && fit_xp_predict(study_engine(st), x, N, D, &p, &lo, &hi, NULL) != ST_OK)
        rc = fprintf(stderr, "demo_predict: no prediction at the large run's settings\n") > 0;
    double sigma = NAN, rsd = NAN;
    size_t R = fit_xp_n_replicates(study_engine(st));
    double *lr = R ? malloc(R * sizeof(double)) : NULL;
    if (!rc && lr &&
        fit_xp_predict_replicates(study_engine(st), x, N, D, lr, NULL, &sigma) == ST_OK) {
        double m = 0, v = 0;
        for (size_t k = 0; k < R; k++)
            m += lr[k] / (double)R;
        for (size_t k = 0; k < R; k++)
            v += (lr[k] - m) * (lr[k] - m) / (double)(R > 1 ? R - 1 : 1);
        rsd = sqrt(v);
    }
    free(lr);
    if (!rc)
        printf("sd of ln loss at the trained run: replicates %.4f, run noise (sigma) %.4f\n", rsd,
               sigma);
    if (!rc)
        printf("curves %d (%zu points): recommended %.4f [%+.1f%%, %+.1f%%]; at the trained run "
               "(N %.4g, D %.4g) %.4f [%+.1f%%, %+.1f%%]; actual %.4f; error %+.2f%%\n",
               a.curves, study_n_curve_points(st), r.objective,
               100 * (r.objective_lo / r.objective - 1), 100 * (r.objective_hi / r.objective - 1),
               N, D, p, 100 * (lo / p - 1), 100 * (hi / p - 1), y, 100 * (y / p - 1));
    double law[5];
    if (!rc && fit_xp_chinchilla(study_engine(st), law, NULL) == ST_OK)
        printf("law: A %.4g B %.4g E %.4g alpha %.3f beta %.3f\n", law[0], law[1], law[2], law[3],
               law[4]);
    if (!rc && *study_warnings(st))
        printf("warnings: %s\n", study_warnings(st));
    if (!rc && a.residuals)
        residuals(st);
    study_destroy(st);
    return rc;
}
