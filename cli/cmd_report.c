/*
 * cmd_report.c — `scaletune report`: one sweep of a store turned into a self-contained HTML
 * page, and optionally the same numbers as JSON, CSV and Markdown. A thin layer over
 * report/report.h (public header only): parse flags, create the report, write the files.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/st.h"
#include "report/report.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: scaletune report --db FILE [--sweep NAME] --out report.html\n"
            "                        [--json F] [--csv F] [--md F] [options]\n\n"
            "Writes a self-contained HTML report of a sweep (figures drawn with PLplot, no\n"
            "network needed to view it), and the same numbers as JSON, CSV and Markdown.\n\n"
            "options:\n"
            "  --db FILE             the sweep store (required)\n"
            "  --sweep NAME          the sweep (default: the only one in the store)\n"
            "  --out FILE            the HTML page (required)\n"
            "  --json FILE           runs, Pareto front, fits, recommendation, validation\n"
            "  --csv FILE            one row per run: id, status, parameters, objective, cost,\n"
            "                        attempts\n"
            "  --md FILE             summary tables in Markdown\n"
            "  --compute C           target compute of the recommendation, in cost units\n"
            "                        (default: 10x the largest run)\n"
            "  --fit-max-cost C      runs costing more are left out of the fits and shown as\n"
            "                        predicted against actual\n"
            "  --validate-sweep NAME a sweep of the same store whose runs are all beyond the fit\n"
            "  --expect XP.json      scaletune extrapolate --json output: the validation run is\n"
            "                        held to its predicted objective and interval, and its\n"
            "                        compute is the default --compute\n"
            "  --bootstrap N         bootstrap replicates for the bands (default 200; 0: none)\n"
            "  --seed S              bootstrap seed (default 42)\n"
            "  --level L             central probability of the bands (default 0.9)\n"
            "  --method M            recommendation: auto (default: the model of every run when\n"
            "                        model size, tokens and a learning rate are known), front\n"
            "                        (CARBS' laws along the Pareto front), model\n"
            "  --far-weight T        the engine's weighting of runs far from their\n"
            "                        optimum, as scaletune extrapolate's (default 0: none)\n"
            "  --prior-e E           the engine's prior on the law's irreducible loss, as\n"
            "                        scaletune extrapolate's (default: none)\n"
            "  --prior-e-sd S        its sd in ln E (default 0: off, or 0.5 with --prior-e)\n"
            "  --title TEXT          page title\n"
            "Docs: docs/cli/report.md\n");
}

static int parse_pos(const char *flag, const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    if (end == s || *end || !isfinite(*v) || !(*v > 0)) {
        cli_error(NULL, "%s: '%s' is not a positive number", flag, s);
        return 0;
    }
    return 1;
}

static int parse_count(const char *flag, const char *s, unsigned long long *v)
{
    char *end;
    if (*s == '-') {
        cli_error(NULL, "%s: '%s' is not a non-negative integer", flag, s);
        return 0;
    }
    *v = strtoull(s, &end, 10);
    if (end == s || *end) {
        cli_error(NULL, "%s: '%s' is not a non-negative integer", flag, s);
        return 0;
    }
    return 1;
}

/* predicted.{objective, lo, hi} and compute of `scaletune extrapolate --json` output. */
static int read_expect(const char *path, report_options *o, double *compute)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    json_t *p = json_object_get(j, "predicted");
    json_t *ob = json_object_get(p, "objective"), *lo = json_object_get(p, "lo"),
           *hi = json_object_get(p, "hi"), *c = json_object_get(j, "compute");
    int ok = json_is_number(ob) && json_is_number(lo) && json_is_number(hi);
    if (ok) {
        o->expect_objective = json_number_value(ob);
        o->expect_lo = json_number_value(lo);
        o->expect_hi = json_number_value(hi);
        ok = o->expect_lo <= o->expect_objective && o->expect_objective <= o->expect_hi;
        *compute = json_is_number(c) ? json_number_value(c) : 0;
    }
    if (!ok)
        cli_error("write it with 'scaletune extrapolate ... --out FILE'",
                  "%s: no predicted objective and interval (predicted.objective, .lo, .hi)%s%s",
                  path, j ? "" : ": ", j ? "" : je.text);
    json_decref(j);
    return ok;
}

/* The validation run against its prediction, one line on stdout. */
static void print_validation(const report *r, double level)
{
    report_validation_info v;
    if (!report_validation(r, &v))
        return;
    printf("validation: run %lld", (long long)v.run);
    if (isfinite(v.cost) && isfinite(v.largest_fitted_cost))
        printf(" (cost %.4g, %.2fx the costliest fitted run)", v.cost,
               v.cost / v.largest_fitted_cost);
    printf(": %s %.4f, predicted %.4f", v.objective, v.actual, v.predicted);
    if (isfinite(v.lo) && isfinite(v.hi))
        printf(" [%.4f, %.4f] (%.0f%%)", v.lo, v.hi, 100 * level);
    printf(" %s: error %+.2f%%", v.expected ? "before it ran (--expect)" : "at its own settings",
           100 * (v.actual / v.predicted - 1));
    if (isfinite(v.lo) && isfinite(v.hi))
        printf(", %s the interval", v.actual >= v.lo && v.actual <= v.hi ? "inside" : "OUTSIDE");
    printf("\n");
}

static int write_one(report *r, const char *what, const char *path,
                     st_status (*fn)(report *, const char *))
{
    if (!path)
        return 0;
    st_status rc = fn(r, path);
    if (rc) {
        cli_error(rc == ST_EIO ? "check that the directory exists and is writable" : NULL,
                  "writing the %s: %s", what, report_errmsg(r));
        return 1;
    }
    printf("wrote %s (%s)\n", path, what);
    return 0;
}

int cmd_report(int argc, char **argv)
{
    const char *db = NULL, *sweep = NULL, *out = NULL, *json = NULL, *csv = NULL, *md = NULL,
               *expect = NULL;
    report_options o = report_options_default();
    int prior_e_sd_set = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double d;
        unsigned long long u;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!v) {
            cli_error("run 'scaletune report --help'", "%s: missing value or unknown option", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--db")) {
            db = v;
        } else if (!strcmp(a, "--sweep")) {
            sweep = v;
        } else if (!strcmp(a, "--out")) {
            out = v;
        } else if (!strcmp(a, "--json")) {
            json = v;
        } else if (!strcmp(a, "--csv")) {
            csv = v;
        } else if (!strcmp(a, "--md")) {
            md = v;
        } else if (!strcmp(a, "--compute")) {
            if (!parse_pos(a, v, &d))
                return 2;
            o.target_compute = d;
        } else if (!strcmp(a, "--fit-max-cost")) {
            if (!parse_pos(a, v, &d))
                return 2;
            o.fit_max_cost = d;
        } else if (!strcmp(a, "--validate-sweep")) {
            o.validate_sweep = v;
        } else if (!strcmp(a, "--expect")) {
            expect = v;
        } else if (!strcmp(a, "--bootstrap")) {
            if (!parse_count(a, v, &u))
                return 2;
            o.n_boot = (size_t)u;
        } else if (!strcmp(a, "--seed")) {
            if (!parse_count(a, v, &u))
                return 2;
            o.seed = (uint64_t)u;
        } else if (!strcmp(a, "--level")) {
            if (!parse_pos(a, v, &d) || !(d < 1)) {
                cli_error(NULL, "--level: '%s' must lie in (0, 1)", v);
                return 2;
            }
            o.band_level = d;
        } else if (!strcmp(a, "--prior-e")) {
            if (!parse_pos(a, v, &d))
                return 2;
            o.prior_e = d;
            if (!prior_e_sd_set)
                o.prior_e_sd = CLI_PRIOR_E_SD;
        } else if (!strcmp(a, "--far-weight") || !strcmp(a, "--prior-e-sd")) {
            char *end;
            d = strtod(v, &end);
            if (end == v || *end || !isfinite(d) || d < 0) {
                cli_error(NULL, "%s: '%s' is not a number >= 0", a, v);
                return 2;
            }
            if (!strcmp(a, "--far-weight")) {
                o.far_weight = d;
            } else {
                o.prior_e_sd = d;
                prior_e_sd_set = 1;
            }
        } else if (!strcmp(a, "--title")) {
            o.title = v;
        } else if (!strcmp(a, "--method")) {
            if (!strcmp(v, "auto"))
                o.method = 0;
            else if (!strcmp(v, "front"))
                o.method = 1;
            else if (!strcmp(v, "model"))
                o.method = 2;
            else {
                cli_error("methods: auto, front, model", "--method: unknown method '%s'", v);
                return 2;
            }
        } else {
            cli_error("run 'scaletune report --help'", "unknown option '%s'", a);
            return 2;
        }
    }
    if (!db || !out) {
        cli_error("scaletune report --db sweeps.db --sweep NAME --out report.html",
                  "--db and --out are required");
        return 2;
    }
    double xp_compute = 0;
    if (expect && !read_expect(expect, &o, &xp_compute))
        return 1;
    if (o.target_compute == 0 && xp_compute > 0 && isfinite(xp_compute))
        o.target_compute = xp_compute;
    report *r = NULL;
    char em[ST_ERRMSG_MAX];
    st_status rc = report_create(db, sweep, &o, &r, em);
    if (rc) {
        cli_error(rc == ST_ENOTFOUND ? "'scaletune sweep status --db FILE' lists the sweeps" : NULL,
                  "%s", em[0] ? em : st_strerror(rc));
        return 1;
    }
    int bad = write_one(r, "HTML report", out, report_write_html);
    bad |= write_one(r, "JSON", json, report_write_json);
    bad |= write_one(r, "CSV", csv, report_write_csv);
    bad |= write_one(r, "Markdown", md, report_write_md);
    if (!bad)
        printf("%zu runs, %zu on the Pareto front, %zu beyond the fit, %zu figures\n",
               report_n_runs(r), report_n_pareto(r), report_n_beyond(r), report_n_figures(r));
    if (!bad)
        print_validation(r, o.band_level);
    report_destroy(r);
    return bad ? 1 : 0;
}
