/*
 * cmd_fit.c — `scaletune fit`: fit a scaling law to runs in a CSV (multi-start L-BFGS, optional
 * bootstrap intervals and hold-out validation), print a table or JSON; `scaletune fit allocate`
 * turns a saved fit (JSON) into the compute-optimal N, D and loss at a budget.
 * Uses only the public headers fit/fit.h and common/st.h, and jansson for JSON.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/st.h"
#include "fit/fit.h"

static void usage_fit(FILE *f)
{
    fprintf(
        f, "usage: scaletune fit --data runs.csv --law LAW [options]\n"
           "       scaletune fit --db DB [--sweep NAME] --law LAW [options]\n"
           "       scaletune fit allocate --fit fit.json --compute C [--json]\n\n"
           "Fits a scaling law to training runs (columns N, D, C, loss by default).\n\n"
           "options:\n"
           "  --data FILE            CSV with a header row (or --db)\n"
           "  --db DB, --sweep NAME  instead of --data: a sweep's succeeded runs, N and D from\n"
           "                         their final records (params, tokens), loss the objective\n"
           "  --law NAME             chinchilla, kaplan, saturating, power1, power2, muennighoff,\n"
           "                         gadre (required)\n"
           "  --columns MAP          map canonical columns: N=\"Model Size\",C=\"Training FLOP\"\n"
           "  --inputs A[,B]         columns used as the law's inputs (default: the law's names)\n"
           "  --target COL           column fitted (default loss)\n"
           "  --objective NAME       huber (default), huber-lik, mse, mae\n"
           "  --delta X              Huber threshold on log residuals (default 1e-3)\n"
           "  --linear               residuals in linear space instead of log\n"
           "  --drop-top-loss K      drop the K highest-loss rows (Epoch's rule; recorded)\n"
           "  --bootstrap N          bootstrap replicates for intervals (default 0 = none)\n"
           "  --seed S               bootstrap seed (default 42)\n"
           "  --level L              interval level (default 0.95)\n"
           "  --holdout-above C      fit on rows with C <= value, report errors above it\n"
           "  --target-compute C     derived quantities at this compute (default 5.88e23)\n"
           "  --threads T            worker threads (default: all CPUs)\n"
           "  --non-embedding        declare N as non-embedding parameters (recorded)\n"
           "  --json                 print JSON instead of a table\n");
}

static void usage_alloc(FILE *f)
{
    fprintf(f, "usage: scaletune fit allocate --fit fit.json --compute C [--json]\n\n"
               "Compute-optimal allocation (C = 6ND) from a saved Chinchilla-type fit:\n"
               "N_opt(C), D_opt(C), tokens per parameter and the frontier loss L*(C).\n\n"
               "  --fit FILE     JSON written by 'scaletune fit --json'\n"
               "  --compute C    training FLOP budget (required)\n"
               "  --loss L       also print the compute needed to reach loss L\n"
               "  --json         print JSON\n");
}

static int parse_double(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return end != s && *end == 0 && isfinite(*v);
}

static int cmd_allocate(int argc, char **argv)
{
    const char *path = NULL;
    double C = NAN, target = NAN;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage_alloc(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--fit") && i + 1 < argc) {
            path = argv[++i];
        } else if (!strcmp(argv[i], "--compute") && i + 1 < argc) {
            if (!parse_double(argv[++i], &C) || !(C > 0)) {
                cli_error(NULL, "--compute: '%s' is not a positive number", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--loss") && i + 1 < argc) {
            if (!parse_double(argv[++i], &target)) {
                cli_error(NULL, "--loss: '%s' is not a number", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else {
            cli_error("run 'scaletune fit allocate --help'", "unknown option '%s'", argv[i]);
            return 2;
        }
    }
    if (!path || !(C > 0)) {
        cli_error("run 'scaletune fit allocate --help'", "--fit and --compute are required");
        return 2;
    }
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        cli_error(NULL, "%s:%d: %s", path, je.line, je.text);
        return 1;
    }
    const char *law_name = json_string_value(json_object_get(root, "law"));
    const fit_law *law = fit_law_by_name(law_name);
    json_t *params = json_object_get(root, "params");
    int rc = 1;
    if (!law || !params || (strcmp(law_name, "chinchilla") && strcmp(law_name, "muennighoff"))) {
        cli_error("allocation needs a chinchilla or muennighoff fit", "%s: law '%s' unusable", path,
                  law_name ? law_name : "(missing)");
        goto done;
    }
    double nat[16];
    for (size_t i = 0; i < fit_law_n_params(law); i++) {
        json_t *v = json_object_get(params, fit_law_natural_name(law, i));
        if (!json_is_number(v)) {
            cli_error(NULL, "%s: params.%s missing or not a number", path,
                      fit_law_natural_name(law, i));
            goto done;
        }
        nat[i] = json_number_value(v);
    }
    fit_alloc al;
    if (fit_allocate(nat, C, &al) != ST_OK) {
        cli_error(NULL, "%s: parameters do not allow an allocation (A, B, alpha, beta > 0)", path);
        goto done;
    }
    double Ct = NAN;
    if (isfinite(target) && fit_compute_for_loss(nat, target, &Ct) != ST_OK)
        cli_error(NULL, "loss %g is at or below the irreducible loss E = %g", target, nat[2]);
    if (json) {
        json_t *o = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "compute", C, "N_opt", al.N_opt,
                              "D_opt", al.D_opt, "tokens_per_param", al.tokens_per_param, "L_opt",
                              al.L_opt, "a", al.a, "b", al.b, "G", al.G);
        if (isfinite(Ct))
            json_object_set_new(o, "compute_for_loss",
                                json_pack("{s:f,s:f}", "loss", target, "compute", Ct));
        json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
        fputc('\n', stdout);
        json_decref(o);
    } else {
        printf("compute            %.4g FLOP\n", C);
        printf("N_opt              %.4g parameters   (N_opt ∝ C^%.4f)\n", al.N_opt, al.a);
        printf("D_opt              %.4g tokens       (D_opt ∝ C^%.4f)\n", al.D_opt, al.b);
        printf("tokens per param   %.2f\n", al.tokens_per_param);
        printf("L*(C)              %.5f\n", al.L_opt);
        if (isfinite(Ct))
            printf("compute for L=%.4g  %.4g FLOP\n", target, Ct);
    }
    rc = 0;
done:
    json_decref(root);
    return rc;
}

/* Splits "a,b" into at most 3 names (in buf). */
static size_t split_names(char *buf, const char **out)
{
    size_t n = 0;
    for (char *s = strtok(buf, ","); s && n < 3; s = strtok(NULL, ","))
        out[n++] = s;
    return n;
}

/* `fit --db DB [--sweep S] ...`: the same fit on the sweep's table (cli/fit_sweep.c). -1 when
 * no --db was given. */
static int fit_from_sweep(int argc, char **argv)
{
    const char *db = NULL, *sweep = NULL;
    int has_data = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--data"))
            has_data = 1;
        if ((!strcmp(argv[i], "--db") || !strcmp(argv[i], "--sweep")) && i + 1 < argc) {
            *(!strcmp(argv[i], "--db") ? &db : &sweep) = argv[i + 1];
            i++;
        } else if (!strcmp(argv[i], "--sweep") || !strcmp(argv[i], "--db")) {
            cli_error("run 'scaletune fit --help'", "%s needs a value", argv[i]);
            return 2;
        }
    }
    if (!db && !sweep)
        return -1;
    if (!db || has_data) {
        cli_error("scaletune fit --db DB [--sweep NAME] --law LAW   or   fit --data runs.csv",
                  has_data ? "--data and --db are alternatives" : "--sweep needs --db");
        return 2;
    }
    char dir[4096] = "", path[4400];
    if (cli_fit_sweep_table(db, sweep, dir, sizeof(dir), path, sizeof(path)))
        return 1;
    char **av = calloc((size_t)argc + 3, sizeof(char *));
    int n = 0, rc = 1;
    if (av) {
        for (int i = 0; i < argc; i++) {
            if (i > 0 && (!strcmp(argv[i], "--db") || !strcmp(argv[i], "--sweep"))) {
                i++;
                continue;
            }
            av[n++] = argv[i];
        }
        av[n++] = "--data";
        av[n++] = path;
        rc = cmd_fit(n, av);
        free(av);
    }
    unlink(path);
    rmdir(dir);
    return rc;
}

int cmd_fit(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "allocate"))
        return cmd_allocate(argc - 1, argv + 1);
    int from_sweep = fit_from_sweep(argc, argv);
    if (from_sweep >= 0)
        return from_sweep;
    const char *data = NULL, *law_name = NULL, *columns = NULL, *target = "loss";
    char inputs_buf[256] = "";
    fit_options o = fit_options_default();
    size_t n_boot = 0, drop_top = 0;
    unsigned long long seed = 42;
    double holdout = NAN, level = 0.95, target_C = 5.88e23;
    int json = 0, nonemb = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double d;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage_fit(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--linear")) {
            o.linear = 1;
        } else if (!strcmp(a, "--non-embedding")) {
            nonemb = 1;
        } else if (!v) {
            cli_error("run 'scaletune fit --help'", "unknown option or missing value: '%s'", a);
            return 2;
        } else if (i++, !strcmp(a, "--data")) {
            data = v;
        } else if (!strcmp(a, "--law")) {
            law_name = v;
        } else if (!strcmp(a, "--columns")) {
            columns = v;
        } else if (!strcmp(a, "--inputs")) {
            snprintf(inputs_buf, sizeof(inputs_buf), "%s", v);
        } else if (!strcmp(a, "--target")) {
            target = v;
        } else if (!strcmp(a, "--objective")) {
            int ob = fit_objective_by_name(v);
            if (ob < 0) {
                cli_error("objectives: huber, huber-lik, mse, mae", "unknown objective '%s'", v);
                return 2;
            }
            o.objective = (fit_objective)ob;
        } else if (parse_double(v, &d)) {
            if (!strcmp(a, "--delta"))
                o.delta = d;
            else if (!strcmp(a, "--bootstrap") && d >= 0)
                n_boot = (size_t)d;
            else if (!strcmp(a, "--seed") && d >= 0)
                seed = (unsigned long long)d;
            else if (!strcmp(a, "--level") && d > 0 && d < 1)
                level = d;
            else if (!strcmp(a, "--holdout-above"))
                holdout = d;
            else if (!strcmp(a, "--target-compute") && d > 0)
                target_C = d;
            else if (!strcmp(a, "--threads") && d >= 0)
                o.n_threads = (size_t)d;
            else if (!strcmp(a, "--drop-top-loss") && d >= 0)
                drop_top = (size_t)d;
            else {
                cli_error("run 'scaletune fit --help'", "unknown option or bad value: %s %s", a, v);
                return 2;
            }
        } else {
            cli_error("run 'scaletune fit --help'", "unknown option or bad value: %s %s", a, v);
            return 2;
        }
    }
    if (!data || !law_name) {
        cli_error("run 'scaletune fit --help'", "--law and --data (or --db) are required");
        return 2;
    }
    const fit_law *law = fit_law_by_name(law_name);
    if (!law) {
        char known[256] = "";
        for (size_t i = 0; fit_law_list(i); i++)
            snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", i ? ", " : "",
                     fit_law_list(i));
        char hint[300];
        snprintf(hint, sizeof(hint), "known laws: %s", known);
        cli_error(hint, "unknown law '%s'", law_name);
        return 2;
    }

    /* Data. */
    char err[ST_ERRMSG_MAX];
    fit_table *t = NULL;
    fit *f = NULL;
    fit_boot *b = NULL;
    double *x = NULL, *rel = NULL;
    json_t *out = NULL;
    int rc = 1;
    if (fit_table_read_csv(data, columns, &t, err) != ST_OK) {
        cli_error("columns are N, D, C and loss by default; map others with --columns", "%s", err);
        return 1;
    }
    fit_table_set_conventions(t, nonemb ? FIT_N_NONEMBEDDING : FIT_N_TOTAL, FIT_C_6ND);
    if (drop_top && fit_table_exclude_top_loss(t, drop_top) != ST_OK) {
        cli_error(NULL, "--drop-top-loss %zu: the file has only %zu rows", drop_top,
                  fit_table_n_rows(t));
        goto done;
    }
    size_t n = fit_table_n_rows(t), nin = fit_law_n_inputs(law);
    const char *in_names[3];
    for (size_t j = 0; j < nin; j++)
        in_names[j] = fit_law_input_name(law, j);
    if (inputs_buf[0] && split_names(inputs_buf, in_names) != nin) {
        cli_error(NULL, "--inputs: law '%s' takes %zu inputs", law_name, nin);
        goto done;
    }
    x = malloc(n * nin * sizeof(double));
    rel = malloc(n * sizeof(double));
    const double *y = fit_table_column(t, target);
    double *mcol = NULL;
    if (!x || !rel) {
        cli_error(NULL, "out of memory");
        goto done;
    }
    if (!y) {
        cli_error(NULL, "%s:1: column '%s' (the target) not found", data, target);
        goto done;
    }
    for (size_t j = 0; j < nin; j++) {
        const double *c = fit_table_column(t, in_names[j]);
        if (!c && !strcmp(in_names[j], "M") && fit_table_column(t, "N") &&
            fit_table_column(t, "D")) {
            /* Gadre's token multiplier M = D / N */
            for (size_t i = 0; i < n; i++)
                x[i * nin + j] = fit_table_column(t, "D")[i] / fit_table_column(t, "N")[i];
            continue;
        }
        if (!c) {
            cli_error("name it in the header, map it with --columns or choose --inputs",
                      "%s:1: column '%s' (input of law '%s') not found", data, in_names[j],
                      law_name);
            goto done;
        }
        for (size_t i = 0; i < n; i++) {
            if (!(c[i] > 0) || !isfinite(c[i])) {
                cli_error(NULL, "%s: data row %zu: column '%s': value %g is not positive", data,
                          i + 1, in_names[j], c[i]);
                goto done;
            }
            x[i * nin + j] = c[i];
        }
    }
    (void)mcol;

    /* Fit. */
    if (fit_create(law, &f) != ST_OK || fit_set_options(f, &o) != ST_OK) {
        cli_error(NULL, "%s", f ? fit_errmsg(f) : "out of memory");
        goto done;
    }
    size_t n_held = 0;
    st_status st;
    if (isfinite(holdout)) {
        const double *C = fit_table_column(t, "C");
        if (!C) {
            cli_error("--holdout-above needs C (or N and D)", "%s: no column C", data);
            goto done;
        }
        st = fit_holdout(f, n, x, y, NULL, C, holdout, rel, &n_held);
    } else {
        st = fit_set_data(f, n, x, y, NULL);
        if (st == ST_OK)
            st = fit_run(f);
    }
    if (st != ST_OK) {
        cli_error(st == ST_EEMPTY ? "the law needs more points than parameters" : NULL, "%s: %s",
                  data, fit_errmsg(f));
        goto done;
    }
    fit_boot_options bo = fit_boot_options_default();
    bo.n_rep = n_boot;
    bo.seed = seed;
    bo.target_C = target_C;
    if (n_boot && fit_bootstrap(f, &bo, &b) != ST_OK) {
        cli_error(NULL, "bootstrap: %s", fit_errmsg(f));
        goto done;
    }

    /* Report. */
    const double *p = fit_params(f);
    size_t np = fit_law_n_params(law);
    fit_diag dg;
    fit_get_diag(f, &dg);
    double der[FIT_DER_COUNT];
    fit_derived(law, p, &bo, der);
    fit_n_convention nc;
    fit_c_convention cc;
    fit_table_get_conventions(t, &nc, &cc);
    out = json_object();
    json_object_set_new(out, "law", json_string(law_name));
    json_t *jp = json_object(), *ji = json_object(), *jd = json_object();
    for (size_t i = 0; i < np; i++) {
        json_object_set_new(jp, fit_law_natural_name(law, i), json_real(p[i]));
        if (b) {
            double lo, hi;
            fit_boot_interval(b, i, level, &lo, &hi);
            json_object_set_new(
                ji, fit_law_natural_name(law, i),
                json_pack("{s:f,s:f,s:f}", "lo", lo, "hi", hi, "se", fit_boot_se(b, i)));
        }
    }
    for (size_t k = 0; k < FIT_DER_COUNT; k++) {
        if (!isfinite(der[k]))
            continue;
        json_object_set_new(jd, fit_derived_name(k), json_real(der[k]));
        if (b) {
            double lo, hi;
            fit_boot_derived_interval(b, k, level, &lo, &hi);
            json_object_set_new(
                ji, fit_derived_name(k),
                json_pack("{s:f,s:f,s:f}", "lo", lo, "hi", hi, "se", fit_boot_derived_se(b, k)));
        }
    }
    json_object_set_new(out, "params", jp);
    json_t *jo = json_pack("{s:s,s:f,s:b,s:f}", "name", fit_objective_name(o.objective), "delta",
                           o.delta, "linear", o.linear, "value", fit_objective_value(f));
    if (o.objective == FIT_OBJ_HUBER_LIK) {
        json_object_set_new(jo, "sigma", json_real(fit_sigma(f)));
        json_object_set_new(jo, "loglik", json_real(fit_loglik(f)));
    }
    json_object_set_new(out, "objective", jo);
    json_object_set_new(out, "intervals", ji);
    if (b)
        json_object_set_new(out, "bootstrap",
                            json_pack("{s:I,s:I,s:f}", "replicates", (json_int_t)n_boot, "seed",
                                      (json_int_t)seed, "level", level));
    json_object_set_new(out, "derived", jd);
    json_object_set_new(out, "target_compute", json_real(target_C));
    json_object_set_new(out, "data",
                        json_pack("{s:s,s:I,s:s,s:s,s:s}", "file", data, "rows", (json_int_t)n,
                                  "exclusions", fit_table_exclusions(t), "N_convention",
                                  nc == FIT_N_NONEMBEDDING ? "non-embedding" : "total",
                                  "C_convention", "6ND"));
    json_object_set_new(out, "diagnostics",
                        json_pack("{s:I,s:I,s:I,s:f,s:i}", "starts", (json_int_t)dg.n_starts,
                                  "best_start", (json_int_t)dg.best_start, "evaluations",
                                  (json_int_t)dg.n_evals, "grad_norm", dg.grad_norm, "nlopt_code",
                                  dg.nlopt_code));
    json_object_set_new(out, "warnings", json_string(fit_warning_text(f)));
    if (isfinite(holdout)) {
        json_t *pts = json_array();
        double maxe = 0;
        for (size_t i = 0; i < n; i++)
            if (isfinite(rel[i])) {
                json_t *pt = json_object();
                for (size_t j = 0; j < nin; j++)
                    json_object_set_new(pt, in_names[j], json_real(x[i * nin + j]));
                json_object_set_new(pt, "loss", json_real(y[i]));
                json_object_set_new(pt, "rel_err", json_real(rel[i]));
                json_array_append_new(pts, pt);
                maxe = fmax(maxe, fabs(rel[i]));
            }
        json_object_set_new(out, "holdout",
                            json_pack("{s:f,s:I,s:f,s:o}", "cutoff", holdout, "n_held",
                                      (json_int_t)n_held, "max_abs_rel_err", maxe, "points", pts));
    }
    if (json) {
        json_dumpf(out, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
        fputc('\n', stdout);
    } else {
        printf("law %s, objective %s (delta %g, %s residuals), %zu rows from %s\n", law_name,
               fit_objective_name(o.objective), o.delta, o.linear ? "linear" : "log", n, data);
        if (fit_table_exclusions(t)[0])
            printf("exclusions: %s\n", fit_table_exclusions(t));
        printf("\n  %-18s %-22s", "parameter", "estimate");
        if (b)
            printf(" %-12s %.0f%% interval", "bootstrap SE", 100 * level);
        printf("\n");
        for (size_t i = 0; i < np; i++) {
            printf("  %-18s %-22.10g", fit_law_natural_name(law, i), p[i]);
            if (b) {
                double lo, hi;
                fit_boot_interval(b, i, level, &lo, &hi);
                printf(" %-12.4g (%.6g, %.6g)", fit_boot_se(b, i), lo, hi);
            }
            printf("\n");
        }
        for (size_t k = 0; k < FIT_DER_COUNT; k++) {
            if (!isfinite(der[k]))
                continue;
            printf("  %-18s %-22.6g", fit_derived_name(k), der[k]);
            if (b) {
                double lo, hi;
                fit_boot_derived_interval(b, k, level, &lo, &hi);
                printf(" %-12.4g (%.6g, %.6g)", fit_boot_derived_se(b, k), lo, hi);
            }
            printf("\n");
        }
        if (law == fit_law_chinchilla || law == fit_law_muennighoff)
            printf("  (derived at C = %.4g FLOP)\n", target_C);
        printf("\nobjective %.12g", fit_objective_value(f));
        if (o.objective == FIT_OBJ_HUBER_LIK)
            printf(", sigma %.6g, log-likelihood %.6f", fit_sigma(f), fit_loglik(f));
        printf("\n%zu starts, best #%zu, %zu evaluations, |grad| %.3g\n", dg.n_starts,
               dg.best_start, dg.n_evals, dg.grad_norm);
        if (isfinite(holdout)) {
            printf("\nhold-out above C = %g: %zu points\n", holdout, n_held);
            for (size_t i = 0; i < n; i++)
                if (isfinite(rel[i]))
                    printf("  row %-5zu loss %-10.5g rel err %+.4f%%\n", i + 1, y[i], 100 * rel[i]);
        }
        if (fit_warning_text(f)[0])
            printf("\nwarning: %s\n", fit_warning_text(f));
    }
    rc = 0;
done:
    json_decref(out);
    fit_boot_destroy(b);
    fit_destroy(f);
    fit_table_destroy(t);
    free(x);
    free(rel);
    return rc;
}
