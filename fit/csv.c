/*
 * csv.c — run tables read from CSV: a header row, comma-separated fields (double quotes allowed),
 * canonical columns N, D, C and loss found by name or through a mapping, C or D derived under
 * C = 6ND, declared N and C conventions, and recorded exclusion rules. Errors name the file, the
 * line and the column. Not a general CSV library: no embedded newlines in fields.
 * Depends on libc only.
 */
#include "fit/fit_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const canon[] = {"N", "D", "C", "loss"};
#define N_CANON 4

struct fit_table {
    size_t n_rows, n_cols;
    char **names;           /* header names, n_cols */
    double **cols;          /* n_cols columns of n_rows values; NULL if the column is not numeric */
    int canon_col[N_CANON]; /* column holding N, D, C, loss (-1: absent) */
    double *derived[N_CANON]; /* derived canonical columns */
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
    }
    for (int k = 0; k < N_CANON; k++)
        free(t->derived[k]);
    free(t->names);
    free(t->cols);
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

/* Parses "N=Model Size,C=Training FLOP" into header names for the canonical columns. */
static st_status parse_mapping(const char *mapping, char map[N_CANON][256], char *err)
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
        if (k == N_CANON)
            return st_errf(err, ST_EINVAL, "column mapping: '%s' is not one of N, D, C, loss", key);
        snprintf(map[k], 256, "%s", val);
    }
    return ST_OK;
}

st_status fit_table_read_csv(const char *path, const char *mapping, fit_table **out, char *err)
{
    *out = NULL;
    err[0] = 0;
    char map[N_CANON][256];
    st_status st = parse_mapping(mapping, map, err);
    if (st != ST_OK)
        return st;
    FILE *fp = fopen(path, "r");
    if (!fp)
        return st_errf(err, ST_EIO, "%s: cannot open: %s", path, strerror(errno));
    fit_table *t = calloc(1, sizeof(*t));
    char *line = NULL, **fields = NULL;
    size_t cap = 0, row_cap = 0, lineno = 0;
    if (!t) {
        fclose(fp);
        return st_errf(err, ST_ENOMEM, "out of memory");
    }
    for (int k = 0; k < N_CANON; k++)
        t->canon_col[k] = -1;

    /* Header. */
    ssize_t len;
    while ((len = getline(&line, &cap, fp)) >= 0) {
        lineno++;
        if (*trim(line))
            break;
    }
    if (len < 0) {
        st = st_errf(err, ST_EFORMAT, "%s: empty file (no header row)", path);
        goto fail;
    }
    size_t maxf = strlen(line) + 2;
    fields = malloc(maxf * sizeof(char *));
    if (!fields)
        goto oom;
    long nf = split_fields(trim(line), fields, maxf);
    if (nf <= 0) {
        st = st_errf(err, ST_EFORMAT, "%s:%zu: unterminated quote in the header", path, lineno);
        goto fail;
    }
    t->n_cols = (size_t)nf;
    t->names = calloc(t->n_cols, sizeof(char *));
    t->cols = calloc(t->n_cols, sizeof(double *));
    if (!t->names || !t->cols)
        goto oom;
    for (size_t j = 0; j < t->n_cols; j++) {
        t->names[j] = strdup(trim(fields[j]));
        if (!t->names[j])
            goto oom;
        for (int k = 0; k < N_CANON; k++)
            if (!strcmp(t->names[j], map[k]) && t->canon_col[k] < 0)
                t->canon_col[k] = (int)j;
    }
    free(fields);
    fields = NULL;
    if (t->canon_col[3] < 0) {
        st = st_errf(err, ST_ENOTFOUND, "%s:%zu: column '%s' (the loss) not found in the header",
                     path, lineno, map[3]);
        goto fail;
    }
    for (int k = 0; k < N_CANON; k++)
        if (strcmp(map[k], canon[k]) && t->canon_col[k] < 0) {
            st = st_errf(err, ST_ENOTFOUND, "%s:%zu: mapped column '%s' (for %s) not found", path,
                         lineno, map[k], canon[k]);
            goto fail;
        }
    int *numeric = malloc(t->n_cols * sizeof(int));
    if (!numeric)
        goto oom;
    for (size_t j = 0; j < t->n_cols; j++)
        numeric[j] = 1;

    /* Rows. */
    while ((len = getline(&line, &cap, fp)) >= 0) {
        lineno++;
        char *s = trim(line);
        if (!*s)
            continue;
        size_t mf = strlen(s) + 2;
        char **fl = realloc(fields, mf * sizeof(char *));
        if (!fl) {
            free(numeric);
            goto oom;
        }
        fields = fl;
        nf = split_fields(s, fields, mf);
        if (nf != (long)t->n_cols) {
            free(numeric);
            if (nf < 0)
                st = st_errf(err, ST_EFORMAT, "%s:%zu: unterminated quote", path, lineno);
            else
                st = st_errf(err, ST_EFORMAT, "%s:%zu: %ld fields, the header has %zu", path,
                             lineno, nf, t->n_cols);
            goto fail;
        }
        if (t->n_rows == row_cap) {
            row_cap = row_cap ? 2 * row_cap : 256;
            for (size_t j = 0; j < t->n_cols; j++) {
                double *c = realloc(t->cols[j], row_cap * sizeof(double));
                if (!c) {
                    free(numeric);
                    goto oom;
                }
                t->cols[j] = c;
            }
        }
        for (size_t j = 0; j < t->n_cols; j++) {
            double v;
            char *fs = trim(fields[j]);
            int ok = parse_num(fs, &v);
            int is_canon = 0;
            for (int k = 0; k < N_CANON; k++)
                is_canon |= t->canon_col[k] == (int)j;
            if (is_canon && (!ok || !isfinite(v) || !(v > 0))) {
                free(numeric);
                st = st_errf(err, ST_EFORMAT, "%s:%zu: column '%s': value '%s' is %s", path, lineno,
                             t->names[j], fs,
                             !ok            ? "not a number"
                             : !isfinite(v) ? "not finite"
                                            : "not positive");
                goto fail;
            }
            if (!ok)
                numeric[j] = 0;
            t->cols[j][t->n_rows] = ok ? v : NAN;
        }
        t->n_rows++;
    }
    for (size_t j = 0; j < t->n_cols; j++)
        if (!numeric[j]) {
            free(t->cols[j]);
            t->cols[j] = NULL;
        }
    free(numeric);
    if (t->n_rows == 0) {
        st = st_errf(err, ST_EEMPTY, "%s: no data rows after the header", path);
        goto fail;
    }

    /* Derived columns under C = 6 N D. */
    const double *Nc = t->canon_col[0] >= 0 ? t->cols[t->canon_col[0]] : NULL;
    const double *Dc = t->canon_col[1] >= 0 ? t->cols[t->canon_col[1]] : NULL;
    const double *Cc = t->canon_col[2] >= 0 ? t->cols[t->canon_col[2]] : NULL;
    if (Nc && Dc && !Cc) {
        if (!(t->derived[2] = malloc(t->n_rows * sizeof(double))))
            goto oom;
        for (size_t i = 0; i < t->n_rows; i++)
            t->derived[2][i] = 6 * Nc[i] * Dc[i];
    } else if (Nc && Cc && !Dc) {
        if (!(t->derived[1] = malloc(t->n_rows * sizeof(double))))
            goto oom;
        for (size_t i = 0; i < t->n_rows; i++)
            t->derived[1][i] = Cc[i] / (6 * Nc[i]);
    }
    free(line);
    free(fields);
    fclose(fp);
    *out = t;
    return ST_OK;
oom:
    st = st_errf(err, ST_ENOMEM, "%s: out of memory", path);
fail:
    free(line);
    free(fields);
    fclose(fp);
    fit_table_destroy(t);
    return st;
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
    for (size_t j = 0; j < t->n_cols; j++)
        if (!strcmp(name, t->names[j]))
            return t->cols[j];
    return NULL;
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
        if (!keep[i])
            continue;
        for (size_t j = 0; j < t->n_cols; j++)
            if (t->cols[j])
                t->cols[j][m] = t->cols[j][i];
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
    size_t n0 = t->n_rows;
    for (size_t i = 0; i < t->n_rows; i++)
        keep[i] = loss[i] < thr;
    compact(t, keep);
    char rule[128];
    snprintf(rule, sizeof(rule), "drop the %zu highest losses (keep loss < %.9g)", k, thr);
    note_exclusion(t, rule, n0 - t->n_rows);
    free(s);
    free(keep);
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
    size_t n0 = t->n_rows;
    for (size_t i = 0; i < t->n_rows; i++)
        keep[i] = !(c[i] > value);
    compact(t, keep);
    char rule[160];
    snprintf(rule, sizeof(rule), "drop rows with %s > %.9g", column, value);
    note_exclusion(t, rule, n0 - t->n_rows);
    free(keep);
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
