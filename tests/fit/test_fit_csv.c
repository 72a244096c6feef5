/*
 * test_fit_csv.c — the CSV loader: mapping, derived C and D, exclusion rules, and the bad-CSV
 * cases (missing column, non-numeric, non-positive and non-finite values, wrong field count,
 * too few points for the law, unknown law), each naming file, line and column; aliases
 * (U=...), row filters (--where) with their file lines, and the range check (1e308 rows).
 */
#include "fit/fit.h"
#include "tests/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64];

static void write_csv(const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static st_status load(const char *text, const char *map, fit_table **t, char *err)
{
    write_csv(text);
    return fit_table_read_csv(path, map, t, err);
}

int main(void)
{
    snprintf(path, sizeof(path), "/tmp/st_fit_csv_%ld.csv", (long)getpid());
    char err[ST_ERRMSG_MAX], want[128];
    fit_table *t;

    /* Good file, D derived from C under C = 6ND, quoted header with a space. */
    CHECK_ST(load("\"Model Size\",C,loss,tag\n1e8,6e18,3.1,a\n2e8,1.2e19,3.0,b\n\n", "N=Model Size",
                  &t, err),
             ST_OK);
    CHECK(fit_table_n_rows(t) == 2);
    CHECK_REL(fit_table_column(t, "D")[0], 1e10, 1e-12);
    CHECK(fit_table_column(t, "tag") == NULL); /* not numeric */
    CHECK(fit_table_column(t, "Model Size") == fit_table_column(t, "N"));
    CHECK_ST(fit_table_exclude_above(t, "C", 1e19), ST_OK);
    CHECK(fit_table_n_rows(t) == 1);
    CHECK(strstr(fit_table_exclusions(t), "C > 1e+19") != NULL);
    fit_table_destroy(t);

    /* Under-trained rows (D/N < 20) dropped; D/N = 20 exactly is kept; recorded. */
    CHECK_ST(load("N,D,loss\n1e8,1.9e9,3.3\n1e8,2e9,3.2\n1e8,8e9,3.0\n", NULL, &t, err), ST_OK);
    CHECK_ST(fit_table_exclude_undertrained(t, 0), ST_EINVAL);
    CHECK_ST(fit_table_exclude_undertrained(t, 20), ST_OK);
    CHECK(fit_table_n_rows(t) == 2);
    CHECK_REL(fit_table_column(t, "D")[0], 2e9, 1e-12);
    CHECK(fit_table_line(t, 0) == 3);
    CHECK(strstr(fit_table_exclusions(t), "D/N < 20 (1 rows dropped)") != NULL);
    fit_table_destroy(t);
    CHECK_ST(load("C,loss\n6e18,3.1\n", NULL, &t, err), ST_OK);
    CHECK_ST(fit_table_exclude_undertrained(t, 20), ST_ENOTFOUND);
    fit_table_destroy(t);

    /* C derived from N and D. */
    CHECK_ST(load("N,D,loss\n1e8,1e10,3.1\n", NULL, &t, err), ST_OK);
    CHECK_REL(fit_table_column(t, "C")[0], 6e18, 1e-12);
    const char *nm[] = {"N", "U"};
    double x[2];
    CHECK_ST(fit_table_matrix(t, 2, nm, x, err), ST_ENOTFOUND);
    CHECK(strstr(err, "'U'") != NULL);
    fit_table_destroy(t);

    /* Missing loss column. */
    CHECK_ST(load("N,D\n1,2\n", NULL, &t, err), ST_ENOTFOUND);
    snprintf(want, sizeof(want), "%s:1: column 'loss'", path);
    CHECK(strstr(err, want) != NULL);
    /* Mapped column absent. */
    CHECK_ST(load("N,D,loss\n1,2,3\n", "C=Training FLOP", &t, err), ST_ENOTFOUND);
    CHECK(strstr(err, "'Training FLOP'") != NULL);
    /* Non-positive value, line 3. */
    CHECK_ST(load("N,D,loss\n1e8,1e10,3\n1e8,1e10,-1\n", NULL, &t, err), ST_EFORMAT);
    snprintf(want, sizeof(want), "%s:3: column 'loss': value '-1' is not positive", path);
    CHECK(strstr(err, want) != NULL);
    /* Non-finite value. */
    CHECK_ST(load("N,D,loss\n1e8,inf,3\n", NULL, &t, err), ST_EFORMAT);
    CHECK(strstr(err, ":2: column 'D'") && strstr(err, "not finite"));
    CHECK_ST(load("N,D,loss\nnan,1e10,3\n", NULL, &t, err), ST_EFORMAT);
    CHECK(strstr(err, "column 'N'") != NULL);
    /* Non-numeric value. */
    CHECK_ST(load("N,D,loss\n1e8,abc,3\n", NULL, &t, err), ST_EFORMAT);
    CHECK(strstr(err, "'abc' is not a number") != NULL);
    /* Field count. */
    CHECK_ST(load("N,D,loss\n1e8,1e10\n", NULL, &t, err), ST_EFORMAT);
    CHECK(strstr(err, ":2: 2 fields, the header has 3") != NULL);
    /* Empty file and missing file. */
    CHECK_ST(load("", NULL, &t, err), ST_EFORMAT);
    CHECK_ST(fit_table_read_csv("/nonexistent/x.csv", NULL, &t, err), ST_EIO);
    /* Bad mapping: no '='; an alias to a column the header lacks. */
    CHECK_ST(load("N,D,loss\n1,2,3\n", "Qfoo", &t, err), ST_EINVAL);
    CHECK_ST(load("N,D,loss\n1,2,3\n", "Q=foo", &t, err), ST_ENOTFOUND);
    CHECK(strstr(err, "'foo' (for Q)") != NULL);

    /* An alias (U for the Muennighoff law) is read by its name and checked like N, D, C. */
    CHECK_ST(load("N,D,uniq,loss\n1e8,1e10,5e9,3\n", "U=uniq", &t, err), ST_OK);
    CHECK(fit_table_column(t, "U") == fit_table_column(t, "uniq"));
    CHECK_REL(fit_table_column(t, "U")[0], 5e9, 0);
    fit_table_destroy(t);
    CHECK_ST(load("N,D,uniq,loss\n1e8,1e10,5e9,3\n1e8,1e10,0,3\n", "U=uniq", &t, err), ST_EFORMAT);
    CHECK(strstr(err, ":3: column 'uniq': value '0' is not positive") != NULL);

    /* The loss may be another column (--target): mapping loss=val_loss. */
    CHECK_ST(load("N,D,val_loss\n1e8,1e10,3\n", "loss=val_loss", &t, err), ST_OK);
    CHECK_REL(fit_table_column(t, "loss")[0], 3, 0);
    fit_table_destroy(t);

    /* Row filters keep text cells and file lines; a blank line shifts the line numbers. */
    CHECK_ST(load("N,D,loss,dataset\n1e8,1e10,3.1,rw\n\n2e8,1e10,3.0,owt2\n3e8,1e10,2.9,rw\n", NULL,
                  &t, err),
             ST_OK);
    CHECK(fit_table_n_distinct(t, "dataset") == 2);
    CHECK(fit_table_n_distinct(t, "nope") == 0);
    CHECK(strcmp(fit_table_text(t, "dataset", 1), "owt2") == 0);
    CHECK(fit_table_line(t, 1) == 4);
    CHECK_ST(fit_table_keep_equal(t, "dataset", "c4", err), ST_EEMPTY);
    CHECK(fit_table_n_rows(t) == 3);
    CHECK_ST(fit_table_keep_equal(t, "nope", "rw", err), ST_ENOTFOUND);
    CHECK_ST(fit_table_keep_equal(t, "dataset", "rw", err), ST_OK);
    CHECK(fit_table_n_rows(t) == 2);
    CHECK(fit_table_line(t, 1) == 5);
    CHECK_REL(fit_table_column(t, "N")[1], 3e8, 0);
    CHECK(strstr(fit_table_exclusions(t), "where dataset = rw (1 rows dropped)") != NULL);
    CHECK_ST(fit_table_keep_equal(t, "N", "3.0e8", err), ST_OK); /* numeric equality */
    CHECK(fit_table_n_rows(t) == 1 && fit_table_line(t, 0) == 5);
    fit_table_destroy(t);

    /* Range check: a loss of 1e308 among losses near 3 is named by file:line. */
    CHECK_ST(
        load("N,D,loss\n1e8,1e10,3.1\n2e8,1e10,3.0\n3e8,1e10,1e308\n4e8,1e10,2.9\n", NULL, &t, err),
        ST_OK);
    char rng[512];
    CHECK(fit_table_check_range(t, "loss", 6, rng, sizeof(rng)) == 1);
    snprintf(want, sizeof(want), "%s:4: column 'loss': value 1e+308", path);
    CHECK(strstr(rng, want) != NULL);
    CHECK(fit_table_check_range(t, "N", 6, rng, sizeof(rng)) == 0 && rng[0] == 0);
    fit_table_destroy(t);

    /* Too few points for the law; unknown law. */
    CHECK_ST(load("N,D,loss\n1e8,1e10,3\n2e8,1e10,2.9\n", NULL, &t, err), ST_OK);
    fit *f;
    CHECK_ST(fit_create(fit_law_chinchilla, &f), ST_OK);
    double xx[4];
    const char *nd[] = {"N", "D"};
    CHECK_ST(fit_table_matrix(t, 2, nd, xx, err), ST_OK);
    CHECK_ST(fit_set_data(f, 2, xx, fit_table_column(t, "loss"), NULL), ST_EEMPTY);
    CHECK(strstr(fit_errmsg(f), "too few") != NULL);
    CHECK_ST(fit_run(f), ST_ESTATE);
    fit_destroy(f);
    fit_table_destroy(t);
    CHECK(fit_law_by_name("chinchila") == NULL);
    CHECK_ST(fit_create(NULL, &f), ST_EINVAL);
    unlink(path);
    return check_summary("fit.csv");
}
