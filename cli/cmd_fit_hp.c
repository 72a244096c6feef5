/*
 * cmd_fit_hp.c — `scaletune fit hp`: hyperparameter laws lr_opt(N, D) and batch_opt(D) (StepLaw)
 * or lr_opt(C), batch_opt(C) (DeepSeek) from a grid of runs, through fit_hp_laws: only the
 * near-optimal runs of each (N, D) enter the regression (a band within --tol of the group's best
 * loss, or the vertex of a quadratic), never the raw grid. Group-bootstrap intervals,
 * predictions, and a backtest that holds out the largest-compute groups and reports how much
 * loss the grid run nearest to the predicted setting loses against the group's best.
 * Public headers only (fit/fit.h, jansson).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_fit.h"
#include "common/st.h"

static void usage_hp(FILE *f)
{
    fprintf(f,
            "usage: scaletune fit hp --data grid.csv [options]\n\n"
            "Fits lr_opt = k N^p D^q and batch_opt = k D^q (StepLaw; --regress C: lr_opt(C),\n"
            "batch_opt(C) as DeepSeek) on the near-optimal runs of each (N, D) group of a grid.\n"
            "Columns N, D (or C), lr, batch and loss; map others with --columns.\n\n"
            "options:\n"
            "  --data FILE          CSV with a header row (required)\n"
            "  --columns MAP        e.g. batch=bs,loss=\"smooth loss\"\n"
            "  --target COL         the loss column (default loss)\n"
            "  --where COL=VALUE    keep only rows with that value (repeatable)\n"
            "  --select band|quadratic  near-optimal runs: within --tol of the group's best\n"
            "                       loss (default, StepLaw and DeepSeek), or a quadratic's vertex\n"
            "  --tol X              relative band (default 0.0025)\n"
            "  --regress ND|C       regressors (default ND)\n"
            "  --batch-scale K      tokens per batch unit, e.g. 2048 for a batch in sequences\n"
            "  --bootstrap N        group-bootstrap replicates (default 200)\n"
            "  --seed S             default 42\n"
            "  --predict N=..,D=..  lr_opt and batch_opt there (repeatable)\n"
            "  --backtest           hold out the groups with 6ND > C_max/2, fit the rest\n"
            "  --holdout-above C    hold out the groups with 6ND > C\n"
            "  --json               print JSON\n");
}

typedef struct hp_cli {
    fit_cli c;
    fit_hp_select sel;
    fit_hp_regressor reg;
    double tol, batch_scale;
} hp_cli;

static int parse_hp(hp_cli *s, int argc, char **argv)
{
    fit_cli *c = &s->c;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        double d = v ? strtod(v, &end) : NAN;
        int num = v && end != v && *end == 0 && isfinite(d);
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage_hp(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            c->json = 1;
        } else if (!strcmp(a, "--backtest")) {
            c->backtest = 1;
        } else if (!v) {
            cli_error("run 'scaletune fit hp --help'", "unknown option or missing value: '%s'", a);
            return 2;
        } else if (i++, fit_cli_table_opt(c, a, v) > 0) {
            /* --data, --columns, --target, --where */
        } else if (!strcmp(a, "--predict") && c->n_predict < FIT_CLI_MAX_LIST) {
            c->predict[c->n_predict++] = v;
        } else if (!strcmp(a, "--select") && (!strcmp(v, "band") || !strcmp(v, "quadratic"))) {
            s->sel = !strcmp(v, "band") ? FIT_HP_BAND : FIT_HP_QUADRATIC;
        } else if (!strcmp(a, "--regress") && (!strcmp(v, "ND") || !strcmp(v, "C"))) {
            s->reg = !strcmp(v, "ND") ? FIT_HP_ND : FIT_HP_C;
        } else if (num && !strcmp(a, "--tol") && d > 0) {
            s->tol = d;
        } else if (num && !strcmp(a, "--batch-scale") && d > 0) {
            s->batch_scale = d;
        } else if (num && !strcmp(a, "--bootstrap") && d >= 0) {
            c->n_boot = (size_t)d;
        } else if (num && !strcmp(a, "--seed") && d >= 0) {
            c->seed = (unsigned long long)d;
        } else if (num && !strcmp(a, "--holdout-above") && d > 0) {
            c->holdout = d;
        } else {
            cli_error("run 'scaletune fit hp --help'", "unknown option or bad value: %s %s", a, v);
            return 2;
        }
    }
    if (!c->data) {
        cli_error("run 'scaletune fit hp --help'", "--data is required");
        return 2;
    }
    return -1;
}

/* The laws at (N, D): lr and batch (batch in tokens). */
static void laws_at(const hp_cli *s, const fit_hp_result *r, double N, double D, double *lr,
                    double *batch)
{
    double lN = log(N), lD = log(D), lC = log(6 * N * D);
    if (s->reg == FIT_HP_ND) {
        *lr = exp(r->lr_coef[0] + r->lr_coef[1] * lN + r->lr_coef[2] * lD);
        *batch = exp(r->batch_coef[0] + r->batch_coef[1] * lD);
    } else {
        *lr = exp(r->lr_coef[0] + r->lr_coef[1] * lC);
        *batch = exp(r->batch_coef[0] + r->batch_coef[1] * lC);
    }
}

static json_t *coef_json(const double c[3], const double ci[3][2], size_t k)
{
    json_t *o = json_object();
    static const char *const names[] = {"ln_k", "p1", "p2"};
    for (size_t j = 0; j < k; j++)
        json_object_set_new(o, names[j],
                            json_pack("{s:f,s:[f,f]}", "value", c[j], "ci95", ci[j][0], ci[j][1]));
    return o;
}

static void print_laws(const hp_cli *s, const fit_hp_result *r)
{
    const char *x1 = s->reg == FIT_HP_ND ? "N" : "C";
    printf("%zu (N, D) groups, %zu near-optimal runs (%s)\n", r->n_groups, r->n_points,
           s->sel == FIT_HP_BAND ? "band" : "quadratic vertex");
    printf("  lr_opt    = %.4g %s^%.4f", exp(r->lr_coef[0]), x1, r->lr_coef[1]);
    if (s->reg == FIT_HP_ND)
        printf(" D^%.4f", r->lr_coef[2]);
    printf("   95%% intervals: exponent of %s (%.4f, %.4f)", x1, r->lr_ci[1][0], r->lr_ci[1][1]);
    if (s->reg == FIT_HP_ND)
        printf(", of D (%.4f, %.4f)", r->lr_ci[2][0], r->lr_ci[2][1]);
    printf("\n  batch_opt = %.4g %s^%.4f tokens   95%% interval of the exponent (%.4f, %.4f)\n",
           exp(r->batch_coef[0]), s->reg == FIT_HP_ND ? "D" : "C", r->batch_coef[1],
           r->batch_ci[1][0], r->batch_ci[1][1]);
}

/* Held-out groups: the grid run nearest (in ln lr, ln batch) to the predicted setting, and the
 * loss it loses against the group's best run. */
static void backtest(hp_cli *s, const fit_hp_result *r, const double *N, const double *D,
                     const double *lr, const double *bt, const double *L, json_t *out)
{
    size_t n = fit_table_n_rows(s->c.t);
    json_t *arr = json_array();
    double worst = 0, sum = 0;
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(6 * N[i] * D[i] > s->c.cut))
            continue;
        size_t first = i;
        for (size_t k = 0; k < i; k++)
            if (N[k] == N[i] && D[k] == D[i])
                first = k;
        if (first != i)
            continue; /* group already done */
        double plr, pb, best = INFINITY, dist = INFINITY, near = NAN;
        laws_at(s, r, N[i], D[i], &plr, &pb);
        for (size_t k = 0; k < n; k++) {
            if (N[k] != N[i] || D[k] != D[i])
                continue;
            best = fmin(best, L[k]);
            double dl = log(lr[k] / plr), db = log(bt[k] / pb), d2 = dl * dl + db * db;
            if (d2 < dist)
                dist = d2, near = L[k];
        }
        double ex = near / best - 1;
        worst = fmax(worst, ex);
        sum += ex;
        ng++;
        json_array_append_new(arr,
                              json_pack("{s:f,s:f,s:f,s:f,s:f,s:f}", "N", N[i], "D", D[i], "lr",
                                        plr, "batch", pb, "best_loss", best, "excess", ex));
        if (!s->c.json)
            printf("  N %-9.3g D %-9.3g predicted lr %-9.3g batch %-9.3g: nearest grid run "
                   "loses %.3f%% against the best\n",
                   N[i], D[i], plr, pb, 100 * ex);
    }
    json_object_set_new(out, "backtest",
                        json_pack("{s:f,s:I,s:f,s:f,s:o}", "cutoff", s->c.cut, "groups",
                                  (json_int_t)ng, "mean_excess", ng ? sum / (double)ng : NAN,
                                  "max_excess", worst, "points", arr));
    if (!s->c.json)
        printf("  mean %.3f%%, worst %.3f%% over %zu held-out groups\n",
               ng ? 100 * sum / (double)ng : NAN, 100 * worst, ng);
}

/* Fits on the rows below the cut-off (all without one); then reports. */
static int fit_and_report(hp_cli *s, const double *N, const double *D, const double *lr,
                          const double *bt, const double *L, json_t *out)
{
    size_t n = fit_table_n_rows(s->c.t), m = 0;
    double *v = malloc(5 * n * sizeof(double));
    fit_hp_result r;
    char err[ST_ERRMSG_MAX];
    if (!v) {
        cli_error(NULL, "out of memory");
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        if (!(6 * N[i] * D[i] > s->c.cut))
            v[m] = N[i], v[n + m] = D[i], v[2 * n + m] = lr[i], v[3 * n + m] = bt[i],
            v[4 * n + m++] = L[i];
    st_status st = fit_hp_laws(m, v, v + n, v + 2 * n, v + 3 * n, v + 4 * n, s->sel, s->tol, s->reg,
                               s->c.n_boot, s->c.seed, &r, err);
    free(v);
    if (st != ST_OK) {
        cli_error(NULL, "%s: %s", s->c.data, err);
        return 1;
    }
    size_t k = s->reg == FIT_HP_ND ? 3 : 2;
    json_object_set_new(out, "lr", coef_json(r.lr_coef, r.lr_ci, k));
    json_object_set_new(out, "batch", coef_json(r.batch_coef, r.batch_ci, 2));
    json_object_set_new(out, "groups", json_integer((json_int_t)r.n_groups));
    json_object_set_new(out, "points", json_integer((json_int_t)r.n_points));
    if (!s->c.json)
        print_laws(s, &r);
    json_t *pr = json_array();
    for (size_t q = 0; q < s->c.n_predict; q++) {
        char buf[256];
        const char *keys[2];
        double vals[2], plr, pb;
        snprintf(buf, sizeof(buf), "%s", s->c.predict[q]);
        if (fit_cli_pairs(buf, 2, keys, vals) != 2 || strcmp(keys[0], "N") ||
            strcmp(keys[1], "D")) {
            json_decref(pr);
            cli_error("--predict N=..,D=..", "--predict '%s': malformed", s->c.predict[q]);
            return 2;
        }
        laws_at(s, &r, vals[0], vals[1], &plr, &pb);
        json_array_append_new(
            pr, json_pack("{s:f,s:f,s:f,s:f}", "N", vals[0], "D", vals[1], "lr", plr, "batch", pb));
        if (!s->c.json)
            printf("  at N=%g, D=%g: lr %.4g, batch %.4g tokens\n", vals[0], vals[1], plr, pb);
    }
    json_object_set_new(out, "predictions", pr);
    if (isfinite(s->c.cut))
        backtest(s, &r, N, D, lr, bt, L, out);
    return 0;
}

int fit_cli_hp(int argc, char **argv)
{
    hp_cli s;
    memset(&s, 0, sizeof(s));
    s.c.target = "loss";
    s.c.seed = 42;
    s.c.n_boot = 200;
    s.c.holdout = NAN;
    s.c.cut = NAN;
    s.tol = 0.0025;
    s.batch_scale = 1;
    int rc = parse_hp(&s, argc, argv);
    if (rc >= 0)
        return rc;
    rc = fit_cli_table(&s.c);
    const double *N = NULL, *D = NULL, *lr = NULL, *b = NULL, *L = NULL;
    if (!rc) {
        N = fit_table_column(s.c.t, "N"), D = fit_table_column(s.c.t, "D");
        lr = fit_table_column(s.c.t, "lr"), b = fit_table_column(s.c.t, "batch");
        L = fit_table_column(s.c.t, "loss");
        if (!N || !D || !lr || !b) {
            cli_error("map them with --columns, e.g. --columns batch=bs",
                      "%s:1: fit hp needs columns N, D (or C), lr and batch", s.c.data);
            rc = 1;
        }
    }
    size_t n = rc ? 0 : fit_table_n_rows(s.c.t);
    double *bt = malloc((n ? n : 1) * sizeof(double));
    for (size_t i = 0; bt && i < n; i++)
        bt[i] = b[i] * s.batch_scale;
    double cmax = 0;
    for (size_t i = 0; i < n; i++)
        cmax = fmax(cmax, 6 * N[i] * D[i]);
    s.c.cut = isfinite(s.c.holdout) ? s.c.holdout : s.c.backtest ? cmax / 2 * (1 + 1e-9) : NAN;
    json_t *out = json_pack("{s:s,s:s,s:f,s:s}", "method", "hp laws", "select",
                            s.sel == FIT_HP_BAND ? "band" : "quadratic", "tol", s.tol, "regress",
                            s.reg == FIT_HP_ND ? "ND" : "C");
    if (!rc && !bt) {
        cli_error(NULL, "out of memory");
        rc = 1;
    }
    if (!rc)
        rc = fit_and_report(&s, N, D, lr, bt, L, out);
    json_object_set_new(out, "warnings", json_string(s.c.notes));
    if (!rc && s.c.json) {
        json_dumpf(out, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
        fputc('\n', stdout);
    }
    if (!rc && s.c.notes[0])
        fprintf(s.c.json ? stderr : stdout, "%swarning: %s\n", s.c.json ? "scaletune: " : "",
                s.c.notes);
    json_decref(out);
    free(bt);
    fit_table_destroy(s.c.t);
    return rc;
}
