/*
 * cmd_fit.c — `scaletune fit`: fit a scaling law to runs in a CSV (multi-start L-BFGS, fixed
 * parameters, row filters, bootstrap intervals, predictions, hold-out and backtest), then print
 * a table or JSON (cmd_fit_out.c); `fit allocate` (cmd_fit_alloc.c), `fit isoflop`
 * (cmd_fit_isoflop.c) and `fit hp` (cmd_fit_hp.c) are subcommands. This file: the options and the
 * fit itself. Uses only the public headers fit/fit.h and common/st.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cmd_fit.h"
#include "common/st.h"

static void usage_fit(FILE *f)
{
    fprintf(
        f, "usage: scaletune fit --data runs.csv --law LAW [options]\n"
           "       scaletune fit --db DB [--sweep NAME] --law LAW [options]\n"
           "       scaletune fit isoflop --data runs.csv [options]   (Approach 2; --help)\n"
           "       scaletune fit hp --data grid.csv [options]        (lr/batch laws; --help)\n"
           "       scaletune fit allocate --fit fit.json --compute C [--json]\n\n"
           "Fits a scaling law to training runs (columns N, D, C, loss by default).\n\n"
           "options:\n"
           "  --data FILE            CSV with a header row (or --db)\n"
           "  --db DB, --sweep NAME  instead of --data: a sweep's succeeded runs, N and D from\n"
           "                         their final records (params, tokens), loss the objective\n"
           "  --law NAME             chinchilla, kaplan, saturating, power1, power2, muennighoff,\n"
           "                         gadre (required)\n"
           "  --columns MAP          map columns: N=\"Model Size\",C=\"Training FLOP\",U=uniq\n"
           "  --inputs A[,B]         columns used as the law's inputs (default: the law's names)\n"
           "  --target COL           column fitted (default loss)\n"
           "  --where COL=VALUE      keep only rows with that value (repeatable)\n"
           "  --fix NAME=VALUE[,..]  hold parameters (natural names A, E, R_D... or theta names\n"
           "                         a, e, ln_RD...) at a value (repeatable)\n"
           "  --m-from ratio|column  Gadre's M: D/N or the file's column M (default: D/N; a file\n"
           "                         whose M differs from D/N is refused until you choose)\n"
           "  --objective NAME       huber (default), huber-lik, mse, mae\n"
           "  --delta X              Huber threshold on log residuals (default 1e-3)\n"
           "  --linear               residuals in linear space instead of log\n"
           "  --drop-top-loss K      drop the K highest-loss rows (Epoch's rule; recorded)\n"
           "  --keep-outliers        fit rows with absurd values (refused by default)\n"
           "  --bootstrap N          bootstrap replicates for intervals (default 200; 0: none)\n"
           "  --seed S               bootstrap seed (default 42)\n"
           "  --level L              interval level (default 0.9)\n"
           "  --predict N=..,D=..    predict the target there, or C=.. for the compute-optimal\n"
           "                         N, D and loss at C; intervals with --bootstrap (repeatable)\n"
           "  --backtest             hold out the largest compute tier (C > C_max/2), fit the\n"
           "                         rest, report each held-out error, interval and coverage\n"
           "  --holdout-above C      the same with rows C > value held out; N=VALUE holds out\n"
           "                         the models larger than VALUE parameters instead\n"
           "  --min-tokens-per-param R  drop under-trained rows, D/N < R (e.g. 20; recorded)\n"
           "  --target-compute C     derived quantities at this compute (default: the largest\n"
           "                         compute in the data)\n"
           "  --threads T            worker threads (default: all CPUs)\n"
           "  --non-embedding        declare N as non-embedding parameters (recorded)\n"
           "  --json                 print JSON instead of a table\n");
}

static int parse_double(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return end != s && *end == 0 && isfinite(*v);
}

/* Appends v to a repeatable option's list; 0 when full. */
static int push(const char **list, size_t *n, const char *v)
{
    if (*n == FIT_CLI_MAX_LIST)
        return 0;
    list[(*n)++] = v;
    return 1;
}

/* An option with a string value; 1 if it was one, -1 on a full list. */
static int parse_string_opt(fit_cli *c, const char *a, const char *v)
{
    int t = fit_cli_table_opt(c, a, v);
    if (t)
        return t;
    if (!strcmp(a, "--holdout-above") && (!strncmp(v, "N=", 2) || !strncmp(v, "C=", 2))) {
        char *end;
        c->holdout = strtod(v + 2, &end);
        snprintf(c->holdout_col, sizeof(c->holdout_col), "%c", v[0]);
        return end != v + 2 && *end == 0 && isfinite(c->holdout) ? 1 : -2;
    }
    if (!strcmp(a, "--law"))
        c->law_name = v;
    else if (!strcmp(a, "--inputs"))
        snprintf(c->inputs_buf, sizeof(c->inputs_buf), "%s", v);
    else if (!strcmp(a, "--m-from"))
        c->m_from = v;
    else if (!strcmp(a, "--fix"))
        return push(c->fix, &c->n_fix, v) ? 1 : -1;
    else if (!strcmp(a, "--predict"))
        return push(c->predict, &c->n_predict, v) ? 1 : -1;
    else
        return 0;
    return 1;
}

/* An option with a numeric value; 1 if it was one with a valid value. */
static int parse_number_opt(fit_cli *c, const char *a, double d)
{
    if (!strcmp(a, "--delta") && d > 0)
        c->o.delta = d;
    else if (!strcmp(a, "--bootstrap") && d >= 0)
        c->n_boot = (size_t)d;
    else if (!strcmp(a, "--seed") && d >= 0)
        c->seed = (unsigned long long)d;
    else if (!strcmp(a, "--level") && d > 0 && d < 1)
        c->level = d;
    else if (!strcmp(a, "--holdout-above"))
        c->holdout = d;
    else if (!strcmp(a, "--min-tokens-per-param") && d > 0)
        c->min_tpp = d;
    else if (!strcmp(a, "--target-compute") && d > 0)
        c->target_C = d, c->target_C_given = 1;
    else if (!strcmp(a, "--threads") && d >= 0)
        c->o.n_threads = (size_t)d;
    else if (!strcmp(a, "--drop-top-loss") && d >= 0)
        c->drop_top = (size_t)d;
    else
        return 0;
    return 1;
}

/* Parses argv into c; returns -1 to go on, else the exit status (0 after --help). */
static int parse_args(fit_cli *c, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double d;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage_fit(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            c->json = 1;
        } else if (!strcmp(a, "--linear")) {
            c->o.linear = 1;
        } else if (!strcmp(a, "--non-embedding")) {
            c->nonemb = 1;
        } else if (!strcmp(a, "--backtest")) {
            c->backtest = 1;
        } else if (!strcmp(a, "--keep-outliers")) {
            c->keep_outliers = 1;
        } else if (!v) {
            cli_error("run 'scaletune fit --help'", "unknown option or missing value: '%s'", a);
            return 2;
        } else if (i++, !strcmp(a, "--objective")) {
            int ob = fit_objective_by_name(v);
            if (ob < 0) {
                cli_error("objectives: huber, huber-lik, mse, mae", "unknown objective '%s'", v);
                return 2;
            }
            c->o.objective = (fit_objective)ob;
        } else {
            int s = parse_string_opt(c, a, v);
            if (s == -2) {
                cli_error("--holdout-above C, --holdout-above C=VALUE or N=VALUE",
                          "--holdout-above '%s': bad value", v);
                return 2;
            }
            if (s < 0) {
                cli_error(NULL, "%s: at most %d times", a, FIT_CLI_MAX_LIST);
                return 2;
            }
            if (s == 0 && !(parse_double(v, &d) && parse_number_opt(c, a, d))) {
                cli_error("run 'scaletune fit --help'", "unknown option or bad value: %s %s", a, v);
                return 2;
            }
        }
    }
    if (c->m_from && strcmp(c->m_from, "ratio") && strcmp(c->m_from, "column")) {
        cli_error("--m-from ratio (M = D/N) or --m-from column (the file's M)",
                  "--m-from: '%s' unknown", c->m_from);
        return 2;
    }
    if (!c->data || !c->law_name) {
        cli_error("run 'scaletune fit --help'", "--law and --data (or --db) are required");
        return 2;
    }
    return -1;
}

/* The law by name, or a usage error listing the known ones. */
static int find_law(fit_cli *c)
{
    c->law = fit_law_by_name(c->law_name);
    if (c->law)
        return 0;
    char known[256] = "";
    for (size_t i = 0; fit_law_list(i); i++)
        snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", i ? ", " : "",
                 fit_law_list(i));
    char hint[300];
    snprintf(hint, sizeof(hint), "known laws: %s", known);
    cli_error(hint, "unknown law '%s'", c->law_name);
    return 2;
}

/* Index of a parameter by natural name (value given naturally) or theta name (value given in
 * the optimiser's coordinates); -1 if neither. */
static long param_index(const fit_law *law, const char *name, int *natural)
{
    for (size_t i = 0; i < fit_law_n_params(law); i++)
        if (!strcmp(name, fit_law_natural_name(law, i))) {
            *natural = 1;
            return (long)i;
        }
    for (size_t i = 0; i < fit_law_n_params(law); i++)
        if (!strcmp(name, fit_law_param_name(law, i))) {
            *natural = 0;
            return (long)i;
        }
    return -1;
}

/* --fix NAME=VALUE: natural values are mapped to theta through fit_law_theta. */
static int apply_fixes(fit_cli *c)
{
    size_t np = fit_law_n_params(c->law);
    for (size_t k = 0; k < c->n_fix; k++) {
        char buf[512];
        const char *keys[16];
        double vals[16];
        snprintf(buf, sizeof(buf), "%s", c->fix[k]);
        int m = fit_cli_pairs(buf, 16, keys, vals);
        if (m <= 0) {
            cli_error("--fix NAME=VALUE[,NAME=VALUE], e.g. --fix E=1.69", "--fix '%s': malformed",
                      c->fix[k]);
            return 2;
        }
        for (int q = 0; q < m; q++) {
            int natural;
            long i = param_index(c->law, keys[q], &natural);
            if (i < 0) {
                char hint[256] = "parameters:";
                for (size_t p = 0; p < np; p++)
                    snprintf(hint + strlen(hint), sizeof(hint) - strlen(hint), " %s (%s)",
                             fit_law_natural_name(c->law, p), fit_law_param_name(c->law, p));
                cli_error(hint, "--fix: law '%s' has no parameter '%s'", c->law_name, keys[q]);
                return 2;
            }
            double nat[16], th[16];
            for (size_t p = 0; p < np; p++)
                nat[p] = 1;
            nat[i] = vals[q];
            double value = vals[q];
            if (natural) {
                if (fit_law_theta(c->law, nat, th) != ST_OK) {
                    cli_error(NULL, "--fix %s=%g: this parameter must be positive", keys[q],
                              vals[q]);
                    return 2;
                }
                value = th[i];
            }
            fit_fix_param(c->f, (size_t)i, value);
        }
    }
    return 0;
}

/* The hold-out cut-off: --holdout-above (on C, or on N), or with --backtest half the largest
 * compute. */
static int holdout_cut(fit_cli *c, const double *C)
{
    c->cut = NAN;
    if (!isfinite(c->holdout) && !c->backtest)
        return 0;
    if (!C) {
        cli_error(
            "--backtest and --holdout-above need C (or N and D), --holdout-above N=.. needs N",
            "%s: no column %s", c->data, c->holdout_col);
        return 1;
    }
    double cmax = 0;
    for (size_t i = 0; i < c->n; i++)
        cmax = fmax(cmax, C[i]);
    c->cut = isfinite(c->holdout) ? c->holdout : cmax / 2 * (1 + 1e-9);
    return 0;
}

/* Fits (with the hold-out if asked), then bootstraps. */
static int run_fit(fit_cli *c)
{
    if (fit_create(c->law, &c->f) != ST_OK || fit_set_options(c->f, &c->o) != ST_OK) {
        cli_error(NULL, "%s", c->f ? fit_errmsg(c->f) : "out of memory");
        return c->f ? 2 : 1;
    }
    int rc = apply_fixes(c);
    const double *C = fit_table_column(c->t, "C");
    const double *cv = fit_table_column(c->t, c->holdout_col);
    if (rc || (rc = holdout_cut(c, cv)))
        return rc;
    st_status st;
    if (isfinite(c->cut)) {
        st = fit_holdout(c->f, c->n, c->x, c->y, NULL, cv, c->cut, c->rel, &c->n_held);
    } else {
        for (size_t i = 0; i < c->n; i++)
            c->rel[i] = NAN;
        st = fit_set_data(c->f, c->n, c->x, c->y, NULL);
        if (st == ST_OK)
            st = fit_run(c->f);
    }
    if (st != ST_OK) {
        cli_error(st == ST_EEMPTY ? "the law needs more points than parameters" : NULL, "%s: %s",
                  c->data, fit_errmsg(c->f));
        return 1;
    }
    c->C_max = NAN;
    for (size_t i = 0; C && i < c->n; i++)
        if (isnan(c->rel[i]))
            c->C_max = isnan(c->C_max) ? C[i] : fmax(c->C_max, C[i]);
    if (!c->target_C_given)
        c->target_C = isfinite(c->C_max) ? c->C_max : 5.88e23;
    fit_boot_options bo = fit_boot_options_default();
    bo.n_rep = c->n_boot;
    bo.seed = c->seed;
    bo.target_C = c->target_C;
    if (c->n_boot && fit_bootstrap(c->f, &bo, &c->b) != ST_OK) {
        cli_error(NULL, "bootstrap: %s", fit_errmsg(c->f));
        return 1;
    }
    return 0;
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
        return fit_cli_allocate(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "isoflop"))
        return fit_cli_isoflop(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "hp"))
        return fit_cli_hp(argc - 1, argv + 1);
    int from_sweep = fit_from_sweep(argc, argv);
    if (from_sweep >= 0)
        return from_sweep;
    fit_cli c;
    memset(&c, 0, sizeof(c));
    c.target = "loss";
    c.o = fit_options_default();
    c.seed = 42;
    c.holdout = NAN;
    snprintf(c.holdout_col, sizeof(c.holdout_col), "C");
    c.n_boot = 200; /* as extrapolate, report */
    c.level = 0.9;
    c.cut = NAN;
    int rc = parse_args(&c, argc, argv);
    if (rc >= 0)
        return rc;
    rc = find_law(&c);
    if (!rc)
        rc = fit_cli_load(&c);
    if (!rc)
        rc = run_fit(&c);
    if (!rc)
        rc = fit_cli_report(&c);
    fit_boot_destroy(c.b);
    fit_destroy(c.f);
    fit_table_destroy(c.t);
    free(c.x);
    free(c.rel);
    return rc;
}
