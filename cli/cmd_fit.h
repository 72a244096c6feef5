/*
 * cmd_fit.h — private to the `scaletune fit` command files (cli/cmd_fit*.c): the parsed options
 * and the state of one run of the command (table, inputs, fit, bootstrap, notes), shared by the
 * data loading (cmd_fit_data.c), the fit (cmd_fit.c) and the report (cmd_fit_out.c).
 * Not a library header: uses fit/fit.h only, as every CLI file does.
 */
#ifndef ST_CMD_FIT_H
#define ST_CMD_FIT_H

#include <stddef.h>
#include <stdio.h>

#include "fit/fit.h"

#define FIT_CLI_MAX_LIST 16
#define FIT_CLI_NOTES    4096

typedef struct fit_cli {
    /* options */
    const char *data, *law_name, *columns, *target, *m_from;
    const char *by; /* fit isoflop --by: grouping columns (no mixed-dataset warning for them) */
    char inputs_buf[256];
    const char *where[FIT_CLI_MAX_LIST];
    size_t n_where;
    const char *fix[FIT_CLI_MAX_LIST];
    size_t n_fix;
    const char *predict[FIT_CLI_MAX_LIST];
    size_t n_predict;
    fit_options o;
    size_t n_boot, drop_top;
    unsigned long long seed;
    double holdout, level, target_C;
    double min_tpp;      /* --min-tokens-per-param (0: keep every row) */
    char holdout_col[8]; /* column of --holdout-above: "C" (default) or "N" */
    int json, nonemb, backtest, keep_outliers, target_C_given;

    /* state */
    const fit_law *law;
    fit_table *t;
    size_t n, nin;
    const char *in_names[3];
    double *x;       /* n × nin inputs */
    const double *y; /* n targets (the table's loss column, mapped to --target) */
    double *rel;     /* n: held-out relative errors (NAN for training rows) */
    double cut;      /* hold-out cut-off on C (NAN: no hold-out) */
    size_t n_held;
    double C_max; /* largest C among the training rows (NAN without C) */
    fit *f;
    fit_boot *b;
    char m_note[256];          /* where M came from (Gadre's law) */
    char notes[FIT_CLI_NOTES]; /* warnings of the command, "; "-separated */
} fit_cli;

/* Appends a warning to c->notes. */
void fit_cli_warn(fit_cli *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* cmd_fit_data.c: the table alone (read, --where, the mixed-dataset warning, --drop-top-loss,
 * the range check of the target); 0 or the exit status. */
int fit_cli_table(fit_cli *c);

/* cmd_fit_data.c: reads the CSV (mapping, --target, --where, --drop-top-loss), warns about mixed
 * datasets, builds the inputs (M = D/N or the file's M, explicitly) and checks value ranges.
 * Returns 0 or the exit status (1 bad data, 2 bad usage) after printing the error. */
int fit_cli_load(fit_cli *c);

/* cmd_fit_data.c: the options every `fit` subcommand reads its table with (--data, --columns,
 * --target, --where): 1 if `a` was one (value v), -1 when --where's list is full, 0 otherwise. */
int fit_cli_table_opt(fit_cli *c, const char *a, const char *v);

/* cmd_fit_data.c: parses "K=V,K=V" (at most max pairs) into keys (pointers into buf) and
 * values; returns the count or -1 on a malformed pair or a bad number. */
int fit_cli_pairs(char *buf, size_t max, const char **keys, double *vals);

/* cmd_fit_out.c: prints the table or the JSON object (parameters, intervals, derived values,
 * predictions, the backtest, warnings). Returns 0 or the exit status after an error. */
int fit_cli_report(fit_cli *c);

/* cmd_fit_alloc.c: `scaletune fit allocate`. */
int fit_cli_allocate(int argc, char **argv);

/* cmd_fit_hp.c: `scaletune fit hp` (lr and batch laws from a grid, StepLaw / DeepSeek). */
int fit_cli_hp(int argc, char **argv);

/* cmd_fit_isoflop.c: `scaletune fit isoflop` (Approach 2, Porian et al. 2024). */
int fit_cli_isoflop(int argc, char **argv);

#endif
