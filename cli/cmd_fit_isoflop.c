/*
 * cmd_fit_isoflop.c — `scaletune fit isoflop`: Approach 2 (IsoFLOP profiles) with Porian et al.
 * 2024's method (fit_isoflop: Akima spline per budget, edge budgets dropped, seed-noise
 * bootstrap, weighted least squares of ln N* on ln C), on one set of runs or on each group of
 * --by columns. A table or JSON. Public headers only (fit/fit.h, jansson).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_fit.h"
#include "common/st.h"

#define MAX_BY 8

static void usage_isoflop(FILE *f)
{
    fprintf(f,
            "usage: scaletune fit isoflop --data runs.csv [options]\n\n"
            "Approach 2 (IsoFLOP profiles) as Porian et al. 2024: per budget C the minimum loss\n"
            "over runs of equal N, an Akima spline of ln loss in ln N, its argmin N*; budgets\n"
            "whose minimum is at an edge are dropped with a warning; a bootstrap adds Gaussian\n"
            "seed noise to each loss; a = slope of the weighted least squares of ln N* on ln C\n"
            "(weights 1/sd(ln N*)^2). Columns N, C and loss (C within 5%% is one budget).\n\n"
            "options:\n"
            "  --data FILE          CSV with a header row (required)\n"
            "  --columns MAP        map columns: N=params,C=flops\n"
            "  --target COL         the loss column (default loss)\n"
            "  --where COL=VALUE    keep only rows with that value (repeatable)\n"
            "  --by COL[,COL..]     one fit per distinct combination of these columns\n"
            "  --bootstrap N        seed-noise replicates (default 1000)\n"
            "  --noise SD           seed noise sd in loss units (default 0.002, Porian's value\n"
            "                       for RefinedWeb; they use 0.01 for OpenWebText2)\n"
            "  --grid-per-gap K     spline grid points per gap between sizes (default 25)\n"
            "  --seed S             default 42\n"
            "  --level L            interval level for a (default 0.95)\n"
            "  --budgets            print each budget's N*, sd(ln N*) and whether it was used\n"
            "  --json               print JSON\n");
}

typedef struct iso_cli {
    fit_cli c;
    fit_isoflop_options o;
    int budgets;
    char by_buf[512];
    const char *by[MAX_BY];
    size_t n_by;
} iso_cli;

static int parse_iso(iso_cli *s, int argc, char **argv)
{
    fit_cli *c = &s->c;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        double d = v ? strtod(v, &end) : NAN;
        int num = v && end != v && *end == 0 && isfinite(d);
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage_isoflop(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            c->json = 1;
        } else if (!strcmp(a, "--budgets")) {
            s->budgets = 1;
        } else if (!v) {
            cli_error("run 'scaletune fit isoflop --help'", "unknown option or missing value: '%s'",
                      a);
            return 2;
        } else if (i++, fit_cli_table_opt(c, a, v) > 0) {
            /* --data, --columns, --target, --where */
        } else if (!strcmp(a, "--by")) {
            snprintf(s->by_buf, sizeof(s->by_buf), "%s", v);
            c->by = v;
        } else if (num && !strcmp(a, "--bootstrap") && d >= 2) {
            s->o.n_boot = (size_t)d;
        } else if (num && !strcmp(a, "--noise") && d >= 0) {
            s->o.noise_sd = d;
        } else if (num && !strcmp(a, "--grid-per-gap") && d >= 2) {
            s->o.grid_per_gap = (size_t)d;
        } else if (num && !strcmp(a, "--seed") && d >= 0) {
            s->o.seed = (uint64_t)d;
        } else if (num && !strcmp(a, "--level") && d > 0 && d < 1) {
            s->o.level = d;
        } else {
            cli_error("run 'scaletune fit isoflop --help'", "unknown option or bad value: %s %s", a,
                      v);
            return 2;
        }
    }
    if (!c->data) {
        cli_error("run 'scaletune fit isoflop --help'", "--data is required");
        return 2;
    }
    for (char *t = strtok(s->by_buf, ","); t && s->n_by < MAX_BY; t = strtok(NULL, ","))
        s->by[s->n_by++] = t;
    return -1;
}

/* Do rows i and k agree on every --by column? */
static int same_group(const iso_cli *s, size_t i, size_t k)
{
    for (size_t b = 0; b < s->n_by; b++)
        if (strcmp(fit_table_text(s->c.t, s->by[b], i), fit_table_text(s->c.t, s->by[b], k)))
            return 0;
    return 1;
}

static void print_budgets(const fit_isoflop_result *r)
{
    static const char *const use[] = {"used", "dropped: < 5 sizes", "dropped: edge",
                                      "dropped: unstable"};
    printf("    %-10s %5s %-11s %-11s %-10s %-8s %s\n", "C", "sizes", "N*(spline)", "N*(median)",
           "sd(ln N*)", "valid", "");
    for (size_t j = 0; j < r->n_budgets; j++) {
        const fit_isoflop_budget *bg = &r->budget[j];
        printf("    %-10.4g %5zu %-11.4g %-11.4g %-10.4g %-8zu %s\n", bg->C, bg->n_sizes,
               bg->N_point, bg->N_star, bg->sd_ln_N, bg->n_valid, use[bg->use]);
    }
}

static json_t *budgets_json(const fit_isoflop_result *r)
{
    static const char *const use[] = {"used", "few_sizes", "edge", "unstable"};
    json_t *arr = json_array();
    for (size_t j = 0; j < r->n_budgets; j++) {
        const fit_isoflop_budget *bg = &r->budget[j];
        json_t *o = json_pack("{s:f,s:I,s:f,s:f,s:I,s:s}", "C", bg->C, "sizes",
                              (json_int_t)bg->n_sizes, "N_min", bg->N_min, "N_max", bg->N_max,
                              "valid", (json_int_t)bg->n_valid, "use", use[bg->use]);
        if (isfinite(bg->N_star)) {
            json_object_set_new(o, "N_star", json_real(bg->N_star));
            json_object_set_new(o, "sd_ln_N", json_real(bg->sd_ln_N));
        }
        if (isfinite(bg->N_point))
            json_object_set_new(o, "N_spline", json_real(bg->N_point));
        json_array_append_new(arr, o);
    }
    return arr;
}

/* Fits the rows in idx (m of them); adds to arr (JSON) or prints. 0 or 1. */
static int fit_group(iso_cli *s, const size_t *idx, size_t m, json_t *arr)
{
    const double *N = fit_table_column(s->c.t, "N"), *C = fit_table_column(s->c.t, "C"),
                 *L = fit_table_column(s->c.t, "loss");
    double *v = malloc(3 * (m ? m : 1) * sizeof(double));
    fit_isoflop_result *r = malloc(sizeof(*r));
    char err[ST_ERRMSG_MAX], label[512] = "";
    if (!v || !r) {
        free(v), free(r);
        cli_error(NULL, "out of memory");
        return 1;
    }
    for (size_t q = 0; q < m; q++)
        v[q] = N[idx[q]], v[m + q] = C[idx[q]], v[2 * m + q] = L[idx[q]];
    for (size_t b = 0; b < s->n_by; b++)
        snprintf(label + strlen(label), sizeof(label) - strlen(label), "%s%s=%s", b ? "," : "",
                 s->by[b], fit_table_text(s->c.t, s->by[b], idx[0]));
    st_status st = fit_isoflop(m, v, v + m, v + 2 * m, &s->o, r, err);
    json_t *g = json_pack("{s:s,s:I,s:I,s:I}", "group", label, "rows", (json_int_t)m, "budgets",
                          (json_int_t)r->n_budgets, "used", (json_int_t)r->n_used);
    if (st == ST_OK) {
        json_object_set_new(g, "a", json_real(r->a));
        json_object_set_new(g, "a_ci", json_pack("[f,f]", r->a_lo, r->a_hi));
        json_object_set_new(g, "a_se", json_real(r->a_se));
        json_object_set_new(g, "b", json_real(r->b));
        json_object_set_new(g, "k", json_real(exp(r->log_k)));
        json_object_set_new(g, "replicates", json_integer((json_int_t)r->n_rep));
    } else {
        json_object_set_new(g, "error", json_string(err));
    }
    json_object_set_new(g, "warnings", json_string(r->warning_text));
    json_object_set_new(g, "budget_detail", budgets_json(r));
    json_array_append_new(arr, g);
    if (!s->c.json) {
        if (st == ST_OK)
            printf("%s%sa = %.4f   %.0f%% interval (%.4f, %.4f)   N* = %.4g C^a, D* ∝ C^%.4f   "
                   "%zu of %zu budgets\n",
                   label, label[0] ? "  " : "", r->a, 100 * s->o.level, r->a_lo, r->a_hi,
                   exp(r->log_k), r->b, r->n_used, r->n_budgets);
        else
            printf("%s%sno fit: %s\n", label, label[0] ? "  " : "", err);
        if (s->budgets)
            print_budgets(r);
        if (r->warning_text[0])
            printf("  warning: %s\n", r->warning_text);
    }
    free(v);
    free(r);
    return st == ST_OK || st == ST_EEMPTY ? 0 : 1;
}

/* Groups the rows by the --by columns (first appearance order) and fits each. */
static int fit_groups(iso_cli *s, json_t *arr)
{
    size_t n = fit_table_n_rows(s->c.t);
    size_t *grp = malloc(n * sizeof(size_t)), *idx = malloc(n * sizeof(size_t));
    unsigned char *done = calloc(n ? n : 1, 1);
    int rc = 0;
    if (!grp || !idx || !done) {
        cli_error(NULL, "out of memory");
        rc = 1;
    }
    for (size_t i = 0; !rc && i < n; i++) {
        if (done[i])
            continue;
        size_t m = 0;
        for (size_t k = i; k < n; k++)
            if (!done[k] && same_group(s, i, k))
                idx[m++] = k, done[k] = 1;
        rc = fit_group(s, idx, m, arr);
    }
    free(grp);
    free(idx);
    free(done);
    return rc;
}

int fit_cli_isoflop(int argc, char **argv)
{
    iso_cli s;
    memset(&s, 0, sizeof(s));
    s.c.target = "loss";
    s.o = fit_isoflop_options_default();
    int rc = parse_iso(&s, argc, argv);
    if (rc >= 0)
        return rc;
    rc = fit_cli_table(&s.c);
    for (size_t b = 0; !rc && b < s.n_by; b++)
        if (!fit_table_text(s.c.t, s.by[b], 0)) {
            cli_error("--by names header columns", "%s:1: --by: column '%s' not found", s.c.data,
                      s.by[b]);
            rc = 1;
        }
    if (!rc && (!fit_table_column(s.c.t, "N") || !fit_table_column(s.c.t, "C"))) {
        cli_error("map them with --columns N=\"Header\",C=\"Header\"",
                  "%s:1: isoflop needs columns N and C (or N and D)", s.c.data);
        rc = 1;
    }
    json_t *out = json_pack(
        "{s:s,s:{s:I,s:f,s:I,s:f,s:I},s:[]}", "method", "isoflop (Porian et al. 2024)", "options",
        "replicates", (json_int_t)s.o.n_boot, "noise_sd", s.o.noise_sd, "grid_per_gap",
        (json_int_t)s.o.grid_per_gap, "level", s.o.level, "seed", (json_int_t)s.o.seed, "groups");
    if (!rc && !s.c.json)
        printf("isoflop (Porian et al. 2024) on %zu rows of %s: %zu seed-noise replicates, sd "
               "%g\n%s%s%s",
               fit_table_n_rows(s.c.t), s.c.data, s.o.n_boot, s.o.noise_sd,
               fit_table_exclusions(s.c.t)[0] ? "rows: " : "", fit_table_exclusions(s.c.t),
               fit_table_exclusions(s.c.t)[0] ? "\n" : "");
    if (!rc)
        rc = fit_groups(&s, json_object_get(out, "groups"));
    json_object_set_new(out, "warnings", json_string(s.c.notes));
    if (!rc && s.c.json) {
        json_dumpf(out, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
        fputc('\n', stdout);
    }
    if (!rc && s.c.notes[0])
        fprintf(s.c.json ? stderr : stdout, "%swarning: %s\n", s.c.json ? "scaletune: " : "",
                s.c.notes);
    json_decref(out);
    fit_table_destroy(s.c.t);
    return rc;
}
