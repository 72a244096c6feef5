/*
 * cmd_fit_data.c — the data side of `scaletune fit`: the CSV read with the column mapping and
 * --target, row filters (--where), the warning for a file that mixes datasets, Epoch's
 * --drop-top-loss, the law's inputs (Gadre's M = D/N or the file's M, said explicitly) and the
 * range check that refuses absurd values (1e308) by file:line. Public headers only.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "cli/cmd_fit.h"
#include "common/st.h"

#define RANGE_DECADES 6.0 /* values this many orders of magnitude from the median are refused */

void fit_cli_warn(fit_cli *c, const char *fmt, ...)
{
    size_t len = strlen(c->notes);
    if (len + 3 >= sizeof(c->notes))
        return;
    if (len) {
        memcpy(c->notes + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->notes + len, sizeof(c->notes) - len, fmt, ap);
    va_end(ap);
}

int fit_cli_pairs(char *buf, size_t max, const char **keys, double *vals)
{
    size_t n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '='), *end;
        if (!eq || eq == tok || n == max)
            return -1;
        *eq = 0;
        vals[n] = strtod(eq + 1, &end);
        if (end == eq + 1 || *end || !isfinite(vals[n]))
            return -1;
        keys[n++] = tok;
    }
    return (int)n;
}

/* The mapping passed to the CSV reader: --columns plus loss=TARGET when --target names another
 * column (so the target need not be called `loss`, and is checked like one). */
static void build_mapping(const fit_cli *c, char *map, size_t len)
{
    snprintf(map, len, "%s", c->columns ? c->columns : "");
    int has_loss = !strncmp(map, "loss=", 5) || strstr(map, ",loss=") != NULL;
    if (strcmp(c->target, "loss") && !has_loss) {
        size_t used = strlen(map);
        snprintf(map + used, len - used, "%sloss=%s", used ? "," : "", c->target);
    }
}

/* Does a header name look like a dataset label (dataset, source, corpus)? */
static int dataset_like(const char *name)
{
    static const char *const words[] = {"dataset", "source", "corpus"};
    char low[128];
    size_t k = 0;
    for (; name[k] && k + 1 < sizeof(low); k++)
        low[k] = (char)tolower((unsigned char)name[k]);
    low[k] = 0;
    for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++)
        if (strstr(low, words[w]))
            return 1;
    return 0;
}

/* --where filters, then the warning for dataset-like columns that still hold several values. */
static int apply_where(fit_cli *c)
{
    char err[ST_ERRMSG_MAX];
    for (size_t k = 0; k < c->n_where; k++) {
        char buf[512];
        snprintf(buf, sizeof(buf), "%s", c->where[k]);
        char *eq = strchr(buf, '=');
        if (!eq || eq == buf) {
            cli_error("--where COLUMN=VALUE, e.g. --where dataset=rw", "--where '%s': no '='",
                      c->where[k]);
            return 2;
        }
        *eq = 0;
        st_status st = fit_table_keep_equal(c->t, buf, eq + 1, err);
        if (st != ST_OK) {
            cli_error(st == ST_ENOTFOUND ? "--where names a header column" : NULL, "%s", err);
            return 1;
        }
    }
    for (size_t j = 0; j < fit_table_n_cols(c->t); j++) {
        const char *name = fit_table_col_name(c->t, j);
        size_t nd = fit_table_n_distinct(c->t, name);
        if (dataset_like(name) && nd > 1 && !(c->by && strstr(c->by, name)))
            fit_cli_warn(c,
                         "column '%s' holds %zu different values (e.g. '%s'): they are fitted as "
                         "one set; choose one with --where %s=VALUE",
                         name, nd, fit_table_text(c->t, name, 0), name);
    }
    return 0;
}

/* Gadre's M: D/N, or the file's own M column, never one silently for the other. */
static int input_m(fit_cli *c, size_t j)
{
    const double *Mc = fit_table_column(c->t, "M"), *N = fit_table_column(c->t, "N"),
                 *D = fit_table_column(c->t, "D");
    const char *path = c->data;
    int ratio = c->m_from ? !strcmp(c->m_from, "ratio") : !Mc;
    if (ratio && !(N && D)) {
        cli_error("M = D/N needs columns N and D (or C and N)", "%s:1: no N and D for M", path);
        return 1;
    }
    if (!ratio && !Mc) {
        cli_error("--m-from column needs a column M (map one with --columns M=\"Header\")",
                  "%s:1: no column M", path);
        return 1;
    }
    for (size_t i = 0; i < c->n; i++) {
        double r = N && D ? D[i] / N[i] : NAN;
        if (!c->m_from && Mc && N && D && fabs(Mc[i] - r) > 1e-6 * r) {
            cli_error("Gadre's M is D/N: choose --m-from ratio (D/N) or --m-from column (the "
                      "file's M)",
                      "%s:%zu: column 'M' is %g but D/N is %g", path, fit_table_line(c->t, i),
                      Mc[i], r);
            return 1;
        }
        c->x[i * c->nin + j] = ratio ? r : Mc[i];
    }
    snprintf(c->m_note, sizeof(c->m_note), "%s",
             ratio       ? "M = D/N (tokens per parameter, Gadre et al.)"
             : c->m_from ? "M from the file's column M (--m-from column)"
             : N && D    ? "M from the file's column M (equal to D/N)"
                         : "M from the file's column M");
    return 0;
}

/* The range check of one column: refused (or, with --keep-outliers, warned). */
static int check_range(fit_cli *c, const char *name)
{
    char msg[1024];
    size_t bad = fit_table_check_range(c->t, name, RANGE_DECADES, msg, sizeof(msg));
    if (!bad)
        return 0;
    if (c->keep_outliers) {
        fit_cli_warn(c, "%zu rows kept with absurd values: %s", bad, msg);
        return 0;
    }
    cli_error("drop or fix those rows (--keep-outliers fits them anyway)",
              "%zu rows with absurd values: %s", bad, msg);
    return 1;
}

/* The law's inputs into c->x. */
static int build_inputs(fit_cli *c)
{
    c->nin = fit_law_n_inputs(c->law);
    for (size_t j = 0; j < c->nin; j++)
        c->in_names[j] = fit_law_input_name(c->law, j);
    if (c->inputs_buf[0]) {
        size_t k = 0;
        for (char *s = strtok(c->inputs_buf, ","); s && k < 3; s = strtok(NULL, ","))
            c->in_names[k++] = s;
        if (k != c->nin) {
            cli_error(NULL, "--inputs: law '%s' takes %zu inputs", c->law_name, c->nin);
            return 2;
        }
    }
    c->x = malloc(c->n * c->nin * sizeof(double));
    c->rel = malloc(c->n * sizeof(double));
    if (!c->x || !c->rel) {
        cli_error(NULL, "out of memory");
        return 1;
    }
    for (size_t j = 0; j < c->nin; j++) {
        const char *name = c->in_names[j];
        if (!strcmp(name, "M")) {
            int rc = input_m(c, j);
            if (rc)
                return rc;
            continue;
        }
        const double *col = fit_table_column(c->t, name);
        if (!col) {
            char hint[200];
            snprintf(hint, sizeof(hint),
                     "name it in the header, map it with --columns %s=\"Header\" or choose "
                     "--inputs",
                     name);
            cli_error(hint, "%s:1: column '%s' (input of law '%s') not found", c->data, name,
                      c->law_name);
            return 1;
        }
        if (check_range(c, name))
            return 1;
        for (size_t i = 0; i < c->n; i++) {
            if (!(col[i] > 0) || !isfinite(col[i])) {
                cli_error(NULL, "%s:%zu: column '%s': value %g is not positive", c->data,
                          fit_table_line(c->t, i), name, col[i]);
                return 1;
            }
            c->x[i * c->nin + j] = col[i];
        }
    }
    return 0;
}

/* --min-tokens-per-param: drops the rows with D/N below it (needs N and D, or N and C). */
static int exclude_undertrained(fit_cli *c)
{
    st_status st = fit_table_exclude_undertrained(c->t, c->min_tpp);
    if (st == ST_ENOTFOUND) {
        cli_error("--min-tokens-per-param needs N and D (or N and C) columns",
                  "%s: no column N or D", c->data);
        return 1;
    }
    if (st == ST_OK && fit_table_n_rows(c->t) == 0) {
        cli_error(NULL, "%s: no row has D/N >= %g", c->data, c->min_tpp);
        return 1;
    }
    return st == ST_OK ? 0 : 1;
}

int fit_cli_table(fit_cli *c)
{
    char err[ST_ERRMSG_MAX], map[1024];
    build_mapping(c, map, sizeof(map));
    if (fit_table_read_csv(c->data, map, &c->t, err) != ST_OK) {
        cli_error(strstr(err, "(the loss)")
                      ? "the target column is 'loss' unless --target names another"
                      : "columns are N, D, C and loss by default; map others with --columns "
                        "NAME=\"Header\" (N, D, C, loss, or any input name such as U or M)",
                  "%s", err);
        return 1;
    }
    fit_table_set_conventions(c->t, c->nonemb ? FIT_N_NONEMBEDDING : FIT_N_TOTAL, FIT_C_6ND);
    int rc = apply_where(c);
    if (rc)
        return rc;
    if (c->min_tpp > 0 && (rc = exclude_undertrained(c)))
        return rc;
    if (c->drop_top && fit_table_exclude_top_loss(c->t, c->drop_top) != ST_OK) {
        cli_error(NULL, "--drop-top-loss %zu: the file has only %zu rows", c->drop_top,
                  fit_table_n_rows(c->t));
        return 1;
    }
    c->n = fit_table_n_rows(c->t);
    c->y = fit_table_column(c->t, "loss");
    return check_range(c, c->target);
}

/* Is the target a hyperparameter (lr, learning rate, batch)? */
static int hp_like(const char *name)
{
    static const char *const words[] = {"lr", "learning", "batch", "bs"};
    for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++)
        if (!strncasecmp(name, words[w], strlen(words[w])))
            return 1;
    return 0;
}

/* A law of lr or batch fitted to every run of a grid (several runs per input point) is
 * meaningless: the optimum is what scales. Warn and point to `fit hp`. */
static void warn_raw_grid(fit_cli *c)
{
    if (!hp_like(c->target))
        return;
    for (size_t i = 0; i < c->n; i++)
        for (size_t k = 0; k < i; k++)
            if (!memcmp(c->x + i * c->nin, c->x + k * c->nin, c->nin * sizeof(double))) {
                fit_cli_warn(c,
                             "lines %zu and %zu have the same inputs: '%s' is fitted over every "
                             "run of a grid, not over the near-optimal runs; use 'scaletune fit "
                             "hp' (a band or a quadratic per (N, D), as StepLaw and DeepSeek do)",
                             fit_table_line(c->t, k), fit_table_line(c->t, i), c->target);
                return;
            }
}

int fit_cli_load(fit_cli *c)
{
    int rc = fit_cli_table(c);
    if (!rc)
        rc = build_inputs(c);
    if (!rc)
        warn_raw_grid(c);
    return rc;
}

int fit_cli_table_opt(fit_cli *c, const char *a, const char *v)
{
    if (!strcmp(a, "--data"))
        c->data = v;
    else if (!strcmp(a, "--columns"))
        c->columns = v;
    else if (!strcmp(a, "--target"))
        c->target = v;
    else if (!strcmp(a, "--where")) {
        if (c->n_where == FIT_CLI_MAX_LIST)
            return -1;
        c->where[c->n_where++] = v;
    } else
        return 0;
    return 1;
}
