/*
 * test_fit_cli.c — `scaletune fit` as a user runs it, against constructed data with known
 * answers: --target on a file without `loss`; --columns U=... for the Muennighoff law; Gadre's M
 * (a file whose M is not D/N is refused until --m-from says which); the mse objective prints the
 * mean squared residual (a design whose least-squares residuals are exactly +-0.01); 1e308 rows
 * refused by file:line; --where and the mixed-dataset warning; --fix (a Chinchilla grid with E
 * frozen at its true value recovers the rest); --predict against the closed form; the backtest
 * on noiseless data; the warning for a parameter at its limit (E of a law without E); `fit
 * isoflop` on Porian et al.'s runs; `fit hp` on a grid around a known optimum (and the warning
 * for a law fitted to a raw grid); Muennighoff's frozen base law (tests/data/scaling); the
 * over-training backtest on Gadre et al.'s runs (--min-tokens-per-param, --holdout-above N=) and
 * their own five-run law's published errors. Needs
 * build/scaletune (made by `make`); prints SKIP when it is absent.
 */
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/check.h"

static char cli_path[PATH_MAX + 32], dir[64], out_path[128], err_path[128], csv_path[128];

/* Runs `scaletune fit ARGS`, stdout to out_path, stderr to err_path; the exit status. */
static int run(const char *args)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "'%s' fit %s > '%s' 2> '%s'", cli_path, args, out_path, err_path);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = calloc(1, 1 << 20);
    if (buf)
        fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    return buf;
}

/* The JSON object in out_path (NULL if it does not parse). */
static json_t *out_json(void)
{
    json_error_t je;
    return json_load_file(out_path, 0, &je);
}

/* Does stdout or stderr of the last run contain s? */
static int out_has(const char *s)
{
    char *o = slurp(out_path), *e = slurp(err_path);
    int r = (o && strstr(o, s)) || (e && strstr(e, s));
    if (!r)
        fprintf(stderr, "  output lacks '%s':\n%s%s\n", s, o ? o : "", e ? e : "");
    free(o);
    free(e);
    return r;
}

static void write_file(const char *text)
{
    FILE *f = fopen(csv_path, "w");
    fputs(text, f);
    fclose(f);
}

static double jnum(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    return json_number_value(b ? json_object_get(v, b) : v);
}

/* Hoffmann's law: E + A/N^alpha + B/D^beta. */
static double chin(double N, double D)
{
    return 1.69 + 406.4 / pow(N, 0.34) + 410.7 / pow(D, 0.28);
}

/* A 7 x 7 Chinchilla grid, optional extra column. */
static void write_chin_grid(int bad_row)
{
    FILE *f = fopen(csv_path, "w");
    fprintf(f, "N,D,val\n");
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < 7; j++) {
            double N = pow(10, 7 + 0.5 * i), D = pow(10, 8 + 0.5 * j);
            fprintf(f, "%.17g,%.17g,%.17g\n", N, D,
                    bad_row && i == 3 && j == 3 ? 1e308 : chin(N, D));
        }
    fclose(f);
}

static void test_target_fix_predict(void)
{
    char a[1024];
    write_chin_grid(0);
    /* --target on a file without `loss`; E frozen at the truth; the rest recovered */
    snprintf(a, sizeof(a),
             "--data %s --law chinchilla --target val --fix E=1.69 --threads 2 --json "
             "--predict N=3e9,D=6e10 --predict C=1e22",
             csv_path);
    CHECK(run(a) == 0);
    json_t *j = out_json();
    CHECK(j != NULL);
    CHECK_REL(jnum(j, "params", "E"), 1.69, 1e-12);
    CHECK_REL(jnum(j, "params", "A"), 406.4, 1e-4);
    CHECK_REL(jnum(j, "params", "beta"), 0.28, 1e-5);
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(j, "data"), "target")), "val"));
    json_t *pr = json_object_get(j, "predictions");
    CHECK(json_array_size(pr) == 2);
    CHECK_REL(jnum(json_array_get(pr, 0), "value", NULL), chin(3e9, 6e10), 1e-5);
    /* C alone: the allocation, Chinchilla eq. 4 with the true parameters */
    double G = pow(0.34 * 406.4 / (0.28 * 410.7), 1 / 0.62), Nopt = G * pow(1e22 / 6, 0.28 / 0.62);
    CHECK_REL(jnum(json_array_get(pr, 1), "N_opt", NULL), Nopt, 2e-3);
    /* derived values at the largest compute of the data, not at 5.88e23 */
    CHECK_REL(jnum(j, "target_compute", NULL), 6 * 1e10 * 1e11, 1e-12);
    json_decref(j);
    /* far beyond the data: said */
    snprintf(a, sizeof(a),
             "--data %s --law chinchilla --target val --threads 2 --target-compute 1e25", csv_path);
    CHECK(run(a) == 0);
    CHECK(out_has("orders of magnitude"));
    /* unknown --fix name, --target missing */
    snprintf(a, sizeof(a), "--data %s --law chinchilla --target val --fix Q=1", csv_path);
    CHECK(run(a) == 2 && out_has("no parameter 'Q'"));
    snprintf(a, sizeof(a), "--data %s --law chinchilla", csv_path);
    CHECK(run(a) == 1 && out_has("--target"));

    /* backtest on noiseless data: held-out errors ~0 */
    snprintf(a, sizeof(a), "--data %s --law chinchilla --target val --threads 2 --backtest --json",
             csv_path);
    CHECK(run(a) == 0);
    j = out_json();
    json_t *h = json_object_get(j, "holdout");
    CHECK(jnum(h, "n_held", NULL) == 1); /* the top tier of this grid: one run */
    CHECK(jnum(h, "max_abs_rel_err", NULL) < 1e-5);
    json_decref(j);

    /* 1e308: refused by file:line, or kept and warned */
    write_chin_grid(1);
    snprintf(a, sizeof(a), "--data %s --law chinchilla --target val --threads 2", csv_path);
    CHECK(run(a) == 1);
    char want[256];
    snprintf(want, sizeof(want), "%s:26: column 'val': value 1e+308", csv_path);
    CHECK(out_has(want));
    snprintf(a, sizeof(a), "--data %s --law chinchilla --target val --threads 2 --keep-outliers",
             csv_path);
    CHECK(run(a) == 0 && out_has("kept with absurd values"));
}

static void test_mse_limits_where(void)
{
    char a[1024];
    /* y = 2 x^0.5 exp(e), e = (+1, -1, -1, +1) 0.01 at x = 1, 2, 4, 8: e sums to 0 and is
     * orthogonal to ln x, so least squares gives k = 2, p = 0.5 and residuals e exactly */
    write_file("x,loss\n1,2.0201003341683359\n2,2.8002838046266034\n4,3.9601993349966724\n"
               "8,5.7137065798705642\n");
    snprintf(a, sizeof(a), "--data %s --law power1 --inputs x --objective mse --json --threads 1",
             csv_path);
    CHECK(run(a) == 0);
    json_t *j = out_json();
    CHECK_REL(jnum(j, "params", "k"), 2, 1e-6);
    CHECK_REL(jnum(j, "objective", "value"), 1e-4, 1e-4);       /* mean r^2 */
    CHECK_REL(jnum(j, "objective", "sum_squares"), 4e-4, 1e-4); /* sum r^2 */
    CHECK_REL(jnum(j, "objective", "minimised"), 2e-4, 1e-4);   /* half the sum */
    json_decref(j);

    /* a law with E fitted to data without an irreducible loss: E runs to 0, said */
    FILE *f = fopen(csv_path, "w");
    fprintf(f, "C,loss,dataset\n");
    for (int i = 0; i < 12; i++) {
        double C = pow(10, 15 + 0.5 * i);
        fprintf(f, "%g,%.17g,%s\n", C, 30 * pow(C, -0.05), i % 2 ? "a" : "b");
    }
    fclose(f);
    snprintf(a, sizeof(a), "--data %s --law saturating --threads 1", csv_path);
    CHECK(run(a) == 0);
    CHECK(out_has("E = ") && out_has("runs to 0"));
    CHECK(out_has("column 'dataset' holds 2 different values"));
    snprintf(a, sizeof(a), "--data %s --law saturating --threads 1 --where dataset=a --json",
             csv_path);
    CHECK(run(a) == 0);
    j = out_json();
    CHECK(jnum(j, "data", "fitted_rows") == 6);
    CHECK(strstr(json_string_value(json_object_get(j, "warnings")), "holds 2") == NULL);
    json_decref(j);
    snprintf(a, sizeof(a), "--data %s --law saturating --where dataset=zz", csv_path);
    CHECK(run(a) == 1 && out_has("no row has that value"));
}

static void test_gadre_m(void)
{
    char a[1024];
    FILE *f = fopen(csv_path, "w");
    fprintf(f, "N,D,M,loss\n");
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double N = pow(10, 7 + i), M = 20 * pow(4, j), D = M * N, C = 6 * N * D;
            double L = 1.8 + (2 * pow(M, 0.05) + 3 * pow(M, -0.05)) * pow(C, -0.05);
            fprintf(f, "%g,%g,%g,%.17g\n", N, D, i == 2 && j == 1 ? 2 * M : M, L);
        }
    fclose(f);
    snprintf(a, sizeof(a), "--data %s --law gadre --threads 1", csv_path);
    CHECK(run(a) == 1);
    char want[256];
    snprintf(want, sizeof(want), "%s:11: column 'M' is 160 but D/N is 80", csv_path);
    CHECK(out_has(want) && out_has("--m-from"));
    snprintf(a, sizeof(a), "--data %s --law gadre --threads 1 --m-from ratio --json", csv_path);
    CHECK(run(a) == 0);
    json_t *j = out_json();
    CHECK_REL(jnum(j, "params", "eta"), 0.05, 1e-3);
    CHECK(strstr(json_string_value(json_object_get(json_object_get(j, "data"), "M")), "D/N"));
    json_decref(j);
    snprintf(a, sizeof(a), "--data %s --law gadre --m-from column", csv_path);
    CHECK(run(a) == 0 && out_has("M from the file's column M"));
}

/* A grid of (lr, batch) runs per (N, D) around a known optimum lr* = 2 N^-0.7 D^0.3,
 * batch* = 0.5 D^0.6 (in units of 4 tokens), the loss quadratic in (ln lr, ln batch). */
static void write_hp_grid(void)
{
    FILE *f = fopen(csv_path, "w");
    fprintf(f, "N,D,lr,bs,loss\n");
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double N = 1e8 * pow(3, i), D = 1e10 * pow(3, j);
            double lr0 = 2 * pow(N, -0.7) * pow(D, 0.3), b0 = 0.5 * pow(D, 0.6) / 4;
            for (int k = -2; k <= 2; k++)
                for (int q = -2; q <= 2; q++)
                    fprintf(f, "%.17g,%.17g,%.17g,%.17g,%.17g\n", N, D, lr0 * exp(0.3 * k),
                            b0 * exp(0.3 * q), 2 + 0.05 * 0.09 * (k * k + q * q));
        }
    fclose(f);
}

static void test_hp(void)
{
    char a[1024];
    write_hp_grid();
    static const char *const sel[] = {"band", "quadratic"};
    for (int s = 0; s < 2; s++) {
        snprintf(a, sizeof(a),
                 "hp --data %s --columns batch=bs --batch-scale 4 --select %s --bootstrap 50 "
                 "--backtest --predict N=1e10,D=1e12 --json",
                 csv_path, sel[s]);
        CHECK(run(a) == 0);
        json_t *j = out_json();
        json_t *lr = json_object_get(j, "lr"), *bt = json_object_get(j, "batch");
        CHECK_ABS(jnum(lr, "p1", "value"), -0.7, 1e-6);
        CHECK_ABS(jnum(lr, "p2", "value"), 0.3, 1e-6);
        CHECK_ABS(jnum(bt, "p1", "value"), 0.6, 1e-6);
        CHECK_REL(exp(jnum(lr, "ln_k", "value")), 2, 1e-5);
        json_t *p = json_array_get(json_object_get(j, "predictions"), 0);
        CHECK_REL(jnum(p, "lr", NULL), 2 * pow(1e10, -0.7) * pow(1e12, 0.3), 1e-5);
        CHECK_REL(jnum(p, "batch", NULL), 0.5 * pow(1e12, 0.6), 1e-5);
        /* the held-out group (the largest N and D): its optimum is a grid run, excess 0 */
        json_t *b = json_object_get(j, "backtest");
        CHECK(jnum(b, "groups", NULL) == 1);
        CHECK_ABS(jnum(b, "max_excess", NULL), 0, 1e-12);
        json_decref(j);
    }
    /* a law fitted to every run of the grid is flagged */
    snprintf(a, sizeof(a), "--data %s --law power2 --inputs N,D --target lr --threads 1", csv_path);
    CHECK(run(a) == 0 && out_has("scaletune fit hp"));
    snprintf(a, sizeof(a), "hp --data %s", csv_path);
    CHECK(run(a) == 1 && out_has("--columns"));
}

static void test_published(void)
{
    /* Muennighoff et al.: the frozen C4 base law, U mapped with --columns */
    const char *base = "--data tests/data/scaling/muennighoff2023_runs.csv --law muennighoff "
                       "--columns N=N_params,D=D_tokens,U=U_unique_tokens --target val_loss "
                       "--fix a=6.255414,b=7.3049974,e=0.6254804,alpha=0.3526596,beta=0.3526596 "
                       "--threads 2 --json";
    char a[1024];
    snprintf(a, sizeof(a), "%s --fix R_N=5.309743", base);
    CHECK(run(a) == 0);
    json_t *j = out_json();
    CHECK_REL(jnum(j, "params", "R_D"), 15.39, 0.01);
    CHECK_REL(jnum(j, "objective", "value"), 0.0158259, 1e-5); /* their published objective */
    json_decref(j);
    snprintf(a, sizeof(a), "%s --fix R_D=15.387756", base);
    CHECK(run(a) == 0);
    j = out_json();
    CHECK_REL(jnum(j, "params", "R_N"), 5.31, 0.01);
    json_decref(j);
    /* free: lower objective further along the ridge (the published point is not a minimum) */
    CHECK(run(base) == 0);
    j = out_json();
    CHECK(jnum(j, "objective", "value") < 0.0158259);
    json_decref(j);
    snprintf(a, sizeof(a),
             "--data tests/data/scaling/muennighoff2023_runs.csv --law muennighoff --target "
             "val_loss --columns N=N_params,D=D_tokens");
    CHECK(run(a) == 1 && out_has("--columns U=\"Header\""));

    /* Porian et al.: one command, five configurations, each a in the published interval */
    CHECK(run("isoflop --data tests/data/scaling/porian2024_isoflop_rw.csv --columns C=flops "
              "--by dataset,hparams,warmup,decay,param_count,val --json") == 0);
    j = out_json();
    json_t *g = json_object_get(j, "groups");
    CHECK(json_array_size(g) == 5);
    static const double lo[] = {0.8235, 0.6915, 0.5914, 0.5598, 0.4907};
    static const double hi[] = {0.8460, 0.7169, 0.6173, 0.5885, 0.5045};
    for (size_t k = 0; k < 5 && k < json_array_size(g); k++) {
        double av = jnum(json_array_get(g, k), "a", NULL);
        CHECK(av > lo[k] && av < hi[k]);
    }
    json_decref(j);
    CHECK(run("isoflop --data tests/data/scaling/porian2024_isoflop_rw.csv --columns C=flops "
              "--where hparams=tuned --bootstrap 200 --json") == 0);
    j = out_json();
    g = json_object_get(j, "groups");
    CHECK(json_array_size(g) == 1);
    CHECK_ABS(jnum(json_array_get(g, 0), "a", NULL), 0.497, 0.004);
    json_decref(j);
}

#define GADRE "--data tests/data/scaling/gadre2024_c4_val.csv --target loss_c4_val --threads 2 "

/* One hold-out run on Gadre et al.'s set: n_held, the mean and worst |error| (to 5e-4 and 1e-3)
 * and the coverage of the 95% intervals (NAN: no bootstrap) as documented. Returns the mean and
 * worst through *mean_out, *max_out for the target checks. */
static void check_holdout(const char *args, int n_held, double mean, double max, double cov,
                          double *mean_out, double *max_out)
{
    char a[1024];
    snprintf(a, sizeof(a), GADRE "--level 0.95 --json %s", args);
    CHECK(run(a) == 0);
    json_t *j = out_json();
    json_t *h = json_object_get(j, "holdout");
    CHECK(jnum(h, "n_held", NULL) == n_held);
    *mean_out = jnum(h, "mean_abs_rel_err", NULL);
    *max_out = jnum(h, "max_abs_rel_err", NULL);
    CHECK_ABS(*mean_out, mean, 5e-4);
    CHECK_ABS(*max_out, max, 1e-3);
    if (isnan(cov))
        CHECK(json_is_null(json_object_get(h, "coverage")));
    else
        CHECK_ABS(jnum(h, "coverage", NULL), cov, 1e-9);
    json_decref(j);
}

/* Issue 18's target: mean |error| below 1% and worst below 2%. */
static int meets_target(double mean, double max)
{
    return mean < 0.01 && max < 0.02;
}

/*
 * The over-training backtest of docs/algorithms/scaling-laws.md on Gadre et al.'s runs
 * (tests/data/scaling/gadre2024_c4_val.csv), held out above 1e20 FLOP, with the numbers the
 * document gives. Chinchilla's law on every run (RedPajama): 1.14% / 2.38%, target not met.
 * Gadre's protocol (their law, runs with D/N >= 20): met on RedPajama and RefinedWeb, not on C4,
 * whose 6.9B run the law misses by 2.7% even when that run is in the fit.
 */
static void test_overtraining_backtest(void)
{
    double m, x;
    check_holdout("--law chinchilla --where dataset=rpj --bootstrap 200 --holdout-above 1e20", 6,
                  0.0114, 0.0238, 1, &m, &x);
    CHECK(!meets_target(m, x));
    static const char *const ds[] = {"rpj", "rw_original", "c4_original"};
    static const int nh[] = {6, 6, 5};
    static const double mean[] = {0.0062, 0.0093, 0.0204}, max[] = {0.0164, 0.0185, 0.0601};
    static const double cov[] = {1, 1, 0.8};
    for (int k = 0; k < 3; k++) {
        char a[256];
        snprintf(a, sizeof(a),
                 "--law gadre --min-tokens-per-param 20 --where dataset=%s --bootstrap 200 "
                 "--holdout-above 1e20",
                 ds[k]);
        check_holdout(a, nh[k], mean[k], max[k], cov[k], &m, &x);
        CHECK(meets_target(m, x) == (k < 2));
    }
    /* The paper's split: the 1.4B and 6.9B models held out (N > 1e9). */
    check_holdout("--law gadre --min-tokens-per-param 20 --where dataset=rpj --bootstrap 0 "
                  "--holdout-above N=1e9",
                  3, 0.0077, 0.0109, NAN, &m, &x);
    CHECK(meets_target(m, x));
    CHECK(out_has("\"cutoff_column\": \"N\""));
    /* C4's 6.9B run (2.3822) with every C4 run with D/N >= 20 in the fit: 2.3189 (-2.66%). */
    CHECK(run(GADRE "--law gadre --min-tokens-per-param 20 --where dataset=c4_original "
                    "--bootstrap 0 --predict N=6889410560,D=137788211200 --json") == 0);
    json_t *j = out_json();
    double p = jnum(json_array_get(json_object_get(j, "predictions"), 0), "value", NULL);
    CHECK_ABS(p / 2.3822204228774595 - 1, -0.0266, 5e-4);
    json_decref(j);
}

/*
 * Gadre et al.'s own loss law for RedPajama (their scaling_explorer.ipynb, Table 2 defaults):
 * least squares on the loss of five runs (11M-411M at M = 20, 11M at M = 320); their notebook
 * prints relative errors of 0.7103% (1.4B, M = 640) and 0.7320% (6.9B, M = 20).
 */
static void test_gadre_published(void)
{
    static const char *const keep[] = {"dataset,",
                                       "rpj-d=96_l=8_h=4-1.0,",
                                       "rpj-d=512_l=8_h=4-1.0,",
                                       "rpj-d=576_l=24_h=8-1.0,",
                                       "rpj-d=1024_l=24_h=8-1.0,",
                                       "rpj-d=96_l=8_h=4-16.0,",
                                       "rpj-open_lm_1b-32.0,",
                                       "rpj-open_lm_7b-1.0,"};
    FILE *in = fopen("tests/data/scaling/gadre2024_c4_val.csv", "r"), *o = fopen(csv_path, "w");
    CHECK(in && o);
    char line[512];
    while (in && o && fgets(line, sizeof(line), in))
        for (size_t k = 0; k < sizeof(keep) / sizeof(keep[0]); k++)
            if (strstr(line, keep[k]))
                fputs(line, o);
    if (in)
        fclose(in);
    if (o)
        fclose(o);
    char a[512];
    snprintf(a, sizeof(a),
             "--data %s --target loss_c4_val --law gadre --objective mse --linear --bootstrap 0 "
             "--holdout-above 1e20 --threads 2 --json",
             csv_path);
    CHECK(run(a) == 0);
    json_t *j = out_json();
    json_t *pts = json_object_get(json_object_get(j, "holdout"), "points");
    CHECK(json_array_size(pts) == 2);
    CHECK_ABS(jnum(json_array_get(pts, 0), "rel_err", NULL), 0.007103, 5e-7);
    CHECK_ABS(jnum(json_array_get(pts, 1), "rel_err", NULL), 0.007320, 5e-7);
    json_decref(j);
}

int main(int argc, char **argv)
{
    (void)argc;
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s", argv[0]);
    char *abs = realpath(dirname(tmp), NULL);
    snprintf(cli_path, sizeof(cli_path), "%s/../../scaletune", abs ? abs : ".");
    free(abs);
    if (access(cli_path, X_OK) != 0) {
        printf("SKIP scaletune not built (run make)\n");
        return check_summary("fit.cli");
    }
    snprintf(dir, sizeof(dir), "/tmp/st_fit_cli_%ld", (long)getpid());
    mkdir(dir, 0700);
    snprintf(out_path, sizeof(out_path), "%s/out", dir);
    snprintf(err_path, sizeof(err_path), "%s/err", dir);
    snprintf(csv_path, sizeof(csv_path), "%s/runs.csv", dir);
    test_target_fix_predict();
    test_mse_limits_where();
    test_gadre_m();
    test_hp();
    test_published();
    test_overtraining_backtest();
    test_gadre_published();
    unlink(out_path);
    unlink(err_path);
    unlink(csv_path);
    rmdir(dir);
    return check_summary("fit.cli");
}
