/*
 * csv.c — run tables read from CSV: a header row, comma-separated fields (double quotes allowed),
 * canonical columns N, D, C and loss found by name or through a mapping (other mapped names are
 * aliases, e.g. U=U_unique_tokens), C or D derived under C = 6ND, declared N and C conventions,
 * recorded exclusion rules and row filters (text cells are kept for --where), and a range check
 * that names file:line. Not a general CSV library: no embedded newlines in fields.
 * Depends on libc only.
 */
#include "fit/fit_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const canon[] = {"N", "D", "C", "loss"};
#define N_CANON   4
#define MAX_ALIAS 8

struct fit_table {
    size_t n_rows, n_cols;
    char **names;           /* header names, n_cols */
    double **cols;          /* n_cols columns of n_rows values; NULL if the column is not numeric */
    int canon_col[N_CANON]; /* column holding N, D, C, loss (-1: absent) */
    double *derived[N_CANON]; /* derived canonical columns */
    char ***text;             /* n_cols columns of n_rows cell strings (for --where) */
    size_t *line;             /* n_rows: the file line of each row */
    char *path;               /* the file, for file:line messages */
    size_t n_alias;
    char alias[MAX_ALIAS][64]; /* alias names from the mapping */
    int alias_col[MAX_ALIAS];  /* their columns */
    fit_n_convention nconv;
    fit_c_convention cconv;
    char excl[1024];
};

void fit_table_destroy(fit_table *t)
{
    if (!t)
        return;
    for (size_t j = 0; j < t->n_cols; j++) {
        free(t->names[j]);
        free(t->cols[j]);
        if (t->text && t->text[j]) {
            for (size_t i = 0; i < t->n_rows; i++)
                free(t->text[j][i]);
            free(t->text[j]);
        }
    }
    for (int k = 0; k < N_CANON; k++)
        free(t->derived[k]);
    free(t->names);
    free(t->cols);
    free(t->text);
    free(t->line);
    free(t->path);
    free(t);
}

/* Splits line (modified in place) into at most max fields; returns the count or -1 on an
 * unterminated quote. Quoted fields lose their quotes; "" inside quotes is one quote. */
static long split_fields(char *line, char **fields, size_t max)
{
    size_t n = 0;
    char *p = line;
    for (;;) {
        char *out = p, *start = p;
        if (*p == '"') {
            p++;
            for (;;) {
                if (!*p)
                    return -1;
                if (*p == '"' && p[1] == '"') {
                    *out++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *out++ = *p++;
                }
            }
            while (*p && *p != ',')
                p++;
        } else {
            while (*p && *p != ',')
                p++;
            out = p;
        }
        int last = *p == 0;
        *out = 0;
        if (n < max)
            fields[n] = start;
        n++;
        if (last)
            break;
        p++;
    }
    return (long)n;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = 0;
    return s;
}

static int parse_num(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    if (end == s)
        return 0;
    while (*end == ' ' || *end == '\t')
        end++;
    return *end == 0;
}

/* Parses "N=Model Size,C=Training FLOP,U=U_unique_tokens" into header names for the canonical
 * columns; other names become aliases (t->alias, header name in amap). */
static st_status parse_mapping(const char *mapping, char map[N_CANON][256], fit_table *t,
                               char amap[MAX_ALIAS][256], char *err)
{
    for (int k = 0; k < N_CANON; k++)
        snprintf(map[k], 256, "%s", canon[k]);
    if (!mapping || !*mapping)
        return ST_OK;
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", mapping);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return st_errf(err, ST_EINVAL, "column mapping '%s': expected NAME=\"Header\"", tok);
        *eq = 0;
        char *key = trim(tok), *val = trim(eq + 1);
        size_t vl = strlen(val);
        if (vl >= 2 && val[0] == '"' && val[vl - 1] == '"') {
            val[vl - 1] = 0;
            val++;
        }
        int k;
        for (k = 0; k < N_CANON; k++)
            if (!strcmp(key, canon[k]))
                break;
        if (k < N_CANON) {
            snprintf(map[k], 256, "%s", val);
            continue;
        }
        if (!*key || t->n_alias == MAX_ALIAS)
            return st_errf(err, ST_EINVAL, "column mapping '%s': %s", key,
                           *key ? "too many names (at most 8 besides N, D, C, loss)"
                                : "empty name");
        snprintf(t->alias[t->n_alias], sizeof(t->alias[0]), "%s", key);
        snprintf(amap[t->n_alias++], 256, "%s", val);
    }
    return ST_OK;
}

/* Is column j one the fit uses (canonical or aliased)? Its values must then be positive. */
static int is_used(const fit_table *t, size_t j)
{
    for (int k = 0; k < N_CANON; k++)
        if (t->canon_col[k] == (int)j)
            return 1;
    for (size_t a = 0; a < t->n_alias; a++)
        if (t->alias_col[a] == (int)j)
            return 1;
    return 0;
}

/* The header row: names, canonical and alias columns. */
static st_status read_header(fit_table *t, FILE *fp, char **line, size_t *cap, size_t *lineno,
                             char map[N_CANON][256], char amap[MAX_ALIAS][256], char *err)
{
    ssize_t len;
    while ((len = getline(line, cap, fp)) >= 0) {
        (*lineno)++;
        if (*trim(*line))
            break;
    }
    if (len < 0)
        return st_errf(err, ST_EFORMAT, "%s: empty file (no header row)", t->path);
    size_t maxf = strlen(*line) + 2;
    char **fields = malloc(maxf * sizeof(char *));
    if (!fields)
        return st_errf(err, ST_ENOMEM, "%s: out of memory", t->path);
    long nf = split_fields(trim(*line), fields, maxf);
    if (nf <= 0) {
        free(fields);
        return st_errf(err, ST_EFORMAT, "%s:%zu: unterminated quote in the header", t->path,
                       *lineno);
    }
    t->n_cols = (size_t)nf;
    t->names = calloc(t->n_cols, sizeof(char *));
    t->cols = calloc(t->n_cols, sizeof(double *));
    t->text = calloc(t->n_cols, sizeof(char **));
    if (!t->names || !t->cols || !t->text) {
        free(fields);
        return st_errf(err, ST_ENOMEM, "%s: out of memory", t->path);
    }
    for (size_t j = 0; j < t->n_cols; j++) {
        t->names[j] = strdup(trim(fields[j]));
        if (!t->names[j]) {
            free(fields);
            return st_errf(err, ST_ENOMEM, "%s: out of memory", t->path);
        }
        for (int k = 0; k < N_CANON; k++)
            if (!strcmp(t->names[j], map[k]) && t->canon_col[k] < 0)
                t->canon_col[k] = (int)j;
        for (size_t a = 0; a < t->n_alias; a++)
            if (!strcmp(t->names[j], amap[a]) && t->alias_col[a] < 0)
                t->alias_col[a] = (int)j;
    }
    free(fields);
    if (t->canon_col[3] < 0)
        return st_errf(err, ST_ENOTFOUND, "%s:%zu: column '%s' (the loss) not found in the header",
                       t->path, *lineno, map[3]);
    for (int k = 0; k < N_CANON; k++)
        if (strcmp(map[k], canon[k]) && t->canon_col[k] < 0)
            return st_errf(err, ST_ENOTFOUND, "%s:%zu: mapped column '%s' (for %s) not found",
                           t->path, *lineno, map[k], canon[k]);
    for (size_t a = 0; a < t->n_alias; a++)
        if (t->alias_col[a] < 0)
            return st_errf(err, ST_ENOTFOUND, "%s:%zu: mapped column '%s' (for %s) not found",
                           t->path, *lineno, amap[a], t->alias[a]);
    return ST_OK;
}

/* Grows every column to hold cap rows. */
static int grow(fit_table *t, size_t cap)
{
    size_t *ln = realloc(t->line, cap * sizeof(size_t));
    if (!ln)
        return 0;
    t->line = ln;
    for (size_t j = 0; j < t->n_cols; j++) {
        double *c = realloc(t->cols[j], cap * sizeof(double));
        if (c)
            t->cols[j] = c;
        char **s = realloc(t->text[j], cap * sizeof(char *));
        if (s)
            t->text[j] = s;
        if (!c || !s)
            return 0;
    }
    return 1;
}

/* One data row (fields already split): numbers, texts, the used-column checks. */
static st_status read_row(fit_table *t, char **fields, size_t lineno, int *numeric, char *err)
{
    for (size_t j = 0; j < t->n_cols; j++) {
        double v;
        char *fs = trim(fields[j]);
        int ok = parse_num(fs, &v);
        if (is_used(t, j) && (!ok || !isfinite(v) || !(v > 0)))
            return st_errf(err, ST_EFORMAT, "%s:%zu: column '%s': value '%s' is %s", t->path,
                           lineno, t->names[j], fs,
                           !ok            ? "not a number"
                           : !isfinite(v) ? "not finite"
                                          : "not positive");
        if (!ok)
            numeric[j] = 0;
        t->cols[j][t->n_rows] = ok ? v : NAN;
    }
    for (size_t j = 0; j < t->n_cols; j++) {
        t->text[j][t->n_rows] = strdup(fields[j]);
        if (!t->text[j][t->n_rows]) {
            for (size_t q = 0; q < j; q++)
                free(t->text[q][t->n_rows]);
            return st_errf(err, ST_ENOMEM, "%s: out of memory", t->path);
        }
    }
    t->line[t->n_rows++] = lineno;
    return ST_OK;
}

/* The data rows after the header. */
static st_status read_rows(fit_table *t, FILE *fp, char **line, size_t *cap, size_t *lineno,
                           int *numeric, char *err)
{
    char **fields = NULL;
    size_t row_cap = 0;
    st_status st = ST_OK;
    while (st == ST_OK && getline(line, cap, fp) >= 0) {
        (*lineno)++;
        char *s = trim(*line);
        if (!*s)
            continue;
        size_t mf = strlen(s) + 2;
        char **fl = realloc(fields, mf * sizeof(char *));
        if (!fl) {
            st = st_errf(err, ST_ENOMEM, "%s: out of memory", t->path);
            break;
        }
        fields = fl;
        long nf = split_fields(s, fields, mf);
        if (nf != (long)t->n_cols) {
            if (nf < 0)
                st = st_errf(err, ST_EFORMAT, "%s:%zu: unterminated quote", t->path, *lineno);
            else
                st = st_errf(err, ST_EFORMAT, "%s:%zu: %ld fields, the header has %zu", t->path,
                             *lineno, nf, t->n_cols);
            break;
        }
        if (t->n_rows == row_cap) {
            row_cap = row_cap ? 2 * row_cap : 256;
            if (!grow(t, row_cap)) {
                st = st_errf(err, ST_ENOMEM, "%s: out of memory", t->path);
                break;
            }
        }
        st = read_row(t, fields, *lineno, numeric, err);
    }
    free(fields);
    return st;
}

/* Derived columns under C = 6 N D. */
static int derive(fit_table *t)
{
    const double *Nc = t->canon_col[0] >= 0 ? t->cols[t->canon_col[0]] : NULL;
    const double *Dc = t->canon_col[1] >= 0 ? t->cols[t->canon_col[1]] : NULL;
    const double *Cc = t->canon_col[2] >= 0 ? t->cols[t->canon_col[2]] : NULL;
    if (Nc && Dc && !Cc) {
        if (!(t->derived[2] = malloc(t->n_rows * sizeof(double))))
            return 0;
        for (size_t i = 0; i < t->n_rows; i++)
            t->derived[2][i] = 6 * Nc[i] * Dc[i];
    } else if (Nc && Cc && !Dc) {
        if (!(t->derived[1] = malloc(t->n_rows * sizeof(double))))
            return 0;
        for (size_t i = 0; i < t->n_rows; i++)
            t->derived[1][i] = Cc[i] / (6 * Nc[i]);
    }
    return 1;
}

st_status fit_table_read_csv(const char *path, const char *mapping, fit_table **out, char *err)
{
    *out = NULL;
    err[0] = 0;
    char map[N_CANON][256], amap[MAX_ALIAS][256];
    fit_table *t = calloc(1, sizeof(*t));
    if (!t || !(t->path = strdup(path))) {
        free(t);
        return st_errf(err, ST_ENOMEM, "out of memory");
    }
    for (int k = 0; k < N_CANON; k++)
        t->canon_col[k] = -1;
    for (size_t a = 0; a < MAX_ALIAS; a++)
        t->alias_col[a] = -1;
    st_status st = parse_mapping(mapping, map, t, amap, err);
    if (st != ST_OK) {
        fit_table_destroy(t);
        return st;
    }
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fit_table_destroy(t);
        return st_errf(err, ST_EIO, "%s: cannot open: %s", path, strerror(errno));
    }
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    int *numeric = NULL;
    st = read_header(t, fp, &line, &cap, &lineno, map, amap, err);
    if (st == ST_OK && !(numeric = malloc(t->n_cols * sizeof(int))))
        st = st_errf(err, ST_ENOMEM, "%s: out of memory", path);
    if (st == ST_OK) {
        for (size_t j = 0; j < t->n_cols; j++)
            numeric[j] = 1;
        st = read_rows(t, fp, &line, &cap, &lineno, numeric, err);
    }
    if (st == ST_OK && t->n_rows == 0)
        st = st_errf(err, ST_EEMPTY, "%s: no data rows after the header", path);
    if (st == ST_OK) {
        for (size_t j = 0; j < t->n_cols; j++)
            if (!numeric[j]) {
                free(t->cols[j]);
                t->cols[j] = NULL;
            }
        if (!derive(t))
            st = st_errf(err, ST_ENOMEM, "%s: out of memory", path);
    }
    free(numeric);
    free(line);
    fclose(fp);
    if (st != ST_OK) {
        fit_table_destroy(t);
        return st;
    }
    *out = t;
    return ST_OK;
}

size_t fit_table_n_rows(const fit_table *t)
{
    return t->n_rows;
}

const double *fit_table_column(const fit_table *t, const char *name)
{
    for (int k = 0; k < N_CANON; k++)
        if (!strcmp(name, canon[k])) {
            if (t->canon_col[k] >= 0)
                return t->cols[t->canon_col[k]];
            return t->derived[k];
        }
    for (size_t a = 0; a < t->n_alias; a++)
        if (!strcmp(name, t->alias[a]))
            return t->cols[t->alias_col[a]];
    for (size_t j = 0; j < t->n_cols; j++)
        if (!strcmp(name, t->names[j]))
            return t->cols[j];
    return NULL;
}

/* Column index by canonical, alias or header name; -1 if absent (or a derived column). */
static int col_index(const fit_table *t, const char *name)
{
    for (int k = 0; k < N_CANON; k++)
        if (!strcmp(name, canon[k]))
            return t->canon_col[k];
    for (size_t a = 0; a < t->n_alias; a++)
        if (!strcmp(name, t->alias[a]))
            return t->alias_col[a];
    for (size_t j = 0; j < t->n_cols; j++)
        if (!strcmp(name, t->names[j]))
            return (int)j;
    return -1;
}

const char *fit_table_text(const fit_table *t, const char *column, size_t row)
{
    int j = col_index(t, column);
    return j >= 0 && row < t->n_rows ? t->text[j][row] : NULL;
}

size_t fit_table_line(const fit_table *t, size_t row)
{
    return row < t->n_rows ? t->line[row] : 0;
}

const char *fit_table_path(const fit_table *t)
{
    return t->path;
}

void fit_table_set_conventions(fit_table *t, fit_n_convention n, fit_c_convention c)
{
    t->nconv = n;
    t->cconv = c;
}

void fit_table_get_conventions(const fit_table *t, fit_n_convention *n, fit_c_convention *c)
{
    *n = t->nconv;
    *c = t->cconv;
}

/* Keeps rows with keep[i] set, in order. */
static void compact(fit_table *t, const unsigned char *keep)
{
    size_t m = 0;
    for (size_t i = 0; i < t->n_rows; i++) {
        if (!keep[i]) {
            for (size_t j = 0; j < t->n_cols; j++)
                free(t->text[j][i]);
            continue;
        }
        for (size_t j = 0; j < t->n_cols; j++)
            if (t->cols[j])
                t->cols[j][m] = t->cols[j][i];
        for (size_t j = 0; j < t->n_cols; j++)
            t->text[j][m] = t->text[j][i];
        t->line[m] = t->line[i];
        for (int k = 0; k < N_CANON; k++)
            if (t->derived[k])
                t->derived[k][m] = t->derived[k][i];
        m++;
    }
    t->n_rows = m;
}

static void note_exclusion(fit_table *t, const char *rule, size_t dropped)
{
    size_t len = strlen(t->excl);
    snprintf(t->excl + len, sizeof(t->excl) - len, "%s%s (%zu rows dropped)", len ? "; " : "", rule,
             dropped);
}

/* Keeps the rows keep[] marks, records rule with how many went, and frees keep. */
static void keep_rows(fit_table *t, unsigned char *keep, const char *rule)
{
    size_t n0 = t->n_rows;
    compact(t, keep);
    note_exclusion(t, rule, n0 - t->n_rows);
    free(keep);
}

st_status fit_table_exclude_top_loss(fit_table *t, size_t k)
{
    if (k == 0)
        return ST_OK;
    if (k > t->n_rows)
        return ST_EINVAL;
    const double *loss = fit_table_column(t, "loss");
    double *s = malloc(t->n_rows * sizeof(double));
    unsigned char *keep = malloc(t->n_rows);
    if (!s || !keep) {
        free(s);
        free(keep);
        return ST_ENOMEM;
    }
    memcpy(s, loss, t->n_rows * sizeof(double));
    fit_sort_doubles(s, t->n_rows);
    /* Epoch: keep loss < sorted(loss)[-k] */
    double thr = s[t->n_rows - k];
    for (size_t i = 0; i < t->n_rows; i++)
        keep[i] = loss[i] < thr;
    char rule[128];
    snprintf(rule, sizeof(rule), "drop the %zu highest losses (keep loss < %.9g)", k, thr);
    keep_rows(t, keep, rule);
    free(s);
    return ST_OK;
}

st_status fit_table_exclude_above(fit_table *t, const char *column, double value)
{
    const double *c = fit_table_column(t, column);
    if (!c)
        return ST_ENOTFOUND;
    unsigned char *keep = malloc(t->n_rows ? t->n_rows : 1);
    if (!keep)
        return ST_ENOMEM;
    for (size_t i = 0; i < t->n_rows; i++)
        keep[i] = !(c[i] > value);
    char rule[160];
    snprintf(rule, sizeof(rule), "drop rows with %s > %.9g", column, value);
    keep_rows(t, keep, rule);
    return ST_OK;
}

st_status fit_table_exclude_undertrained(fit_table *t, double min_ratio)
{
    const double *N = fit_table_column(t, "N"), *D = fit_table_column(t, "D");
    if (!N || !D)
        return ST_ENOTFOUND;
    if (!(min_ratio > 0))
        return ST_EINVAL;
    unsigned char *keep = malloc(t->n_rows ? t->n_rows : 1);
    if (!keep)
        return ST_ENOMEM;
    for (size_t i = 0; i < t->n_rows; i++)
        keep[i] = D[i] >= min_ratio * N[i] * (1 - 1e-9);
    char rule[160];
    snprintf(rule, sizeof(rule), "drop under-trained rows, D/N < %.9g", min_ratio);
    keep_rows(t, keep, rule);
    return ST_OK;
}

const char *fit_table_exclusions(const fit_table *t)
{
    return t->excl;
}

st_status fit_table_matrix(const fit_table *t, size_t k, const char *const *names, double *x,
                           char *err)
{
    for (size_t j = 0; j < k; j++) {
        const double *c = fit_table_column(t, names[j]);
        if (!c)
            return st_errf(err, ST_ENOTFOUND,
                           "column '%s' not found (name it in the header or map it with "
                           "--columns %s=\"Header\")",
                           names[j], names[j]);
        for (size_t i = 0; i < t->n_rows; i++)
            x[i * k + j] = c[i];
    }
    return ST_OK;
}

/* Does cell (j, i) equal value: numerically when both parse as numbers, else as text. */
static int cell_equals(const fit_table *t, int j, size_t i, const char *value)
{
    double a, b;
    if (parse_num(t->text[j][i], &a) && parse_num(value, &b))
        return a == b || fabs(a - b) <= 1e-12 * fabs(b);
    return !strcmp(t->text[j][i], value);
}

st_status fit_table_keep_equal(fit_table *t, const char *column, const char *value, char *err)
{
    err[0] = 0;
    int j = col_index(t, column);
    if (j < 0)
        return st_errf(err, ST_ENOTFOUND, "%s:1: --where: column '%s' not found", t->path, column);
    unsigned char *keep = malloc(t->n_rows ? t->n_rows : 1);
    if (!keep)
        return st_errf(err, ST_ENOMEM, "out of memory");
    size_t n_keep = 0;
    for (size_t i = 0; i < t->n_rows; i++)
        n_keep += keep[i] = (unsigned char)cell_equals(t, j, i, value);
    if (n_keep == 0) {
        free(keep);
        return st_errf(err, ST_EEMPTY, "%s: --where %s=%s: no row has that value", t->path, column,
                       value);
    }
    char rule[320];
    snprintf(rule, sizeof(rule), "where %s = %s", column, value);
    keep_rows(t, keep, rule);
    return ST_OK;
}

size_t fit_table_n_distinct(const fit_table *t, const char *column)
{
    int j = col_index(t, column);
    if (j < 0)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < t->n_rows; i++) {
        size_t q = 0;
        while (q < i && strcmp(t->text[j][q], t->text[j][i]))
            q++;
        n += q == i;
    }
    return n;
}

/* Median of the logs of c (n > 0) in scratch s. */
static double log_median(const double *c, size_t n, double *s)
{
    for (size_t i = 0; i < n; i++)
        s[i] = log(c[i]);
    fit_sort_doubles(s, n);
    return fit_quantile_sorted(s, n, 0.5);
}

size_t fit_table_check_range(const fit_table *t, const char *column, double decades, char *err,
                             size_t err_len)
{
    const double *c = fit_table_column(t, column);
    if (err_len)
        err[0] = 0;
    if (!c || t->n_rows == 0)
        return 0;
    double *s = malloc(t->n_rows * sizeof(double));
    if (!s)
        return 0;
    double med = log_median(c, t->n_rows, s);
    free(s);
    size_t n_bad = 0;
    for (size_t i = 0; i < t->n_rows; i++) {
        double dist = fabs(log(c[i]) - med) / log(10);
        if (!(c[i] > 0) || !isfinite(dist) || dist > decades) {
            size_t len = strlen(err);
            if (n_bad < 3 && len + 1 < err_len)
                snprintf(err + len, err_len - len,
                         "%s%s:%zu: column '%s': value %g is %.1f orders of magnitude from the "
                         "median %.4g",
                         len ? "; " : "", t->path, t->line[i], column, c[i], dist, exp(med));
            n_bad++;
        }
    }
    return n_bad;
}

size_t fit_table_n_cols(const fit_table *t)
{
    return t->n_cols;
}

const char *fit_table_col_name(const fit_table *t, size_t j)
{
    return j < t->n_cols ? t->names[j] : NULL;
}
