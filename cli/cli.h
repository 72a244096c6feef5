/*
 * cli.h — the subcommands of the `scaletune` CLI. Each lives in cli/cmd_<name>.c, takes the
 * arguments after its name (argv[0] is the subcommand) and returns the process exit status:
 * 0 success, 1 failure of the work, 2 bad usage. Only public headers are used here (curl's rule).
 */
#ifndef ST_CLI_H
#define ST_CLI_H

#include <stddef.h>
#include <stdio.h>

typedef int (*cli_cmd_fn)(int argc, char **argv);

/* Prints "scaletune: <msg>" and an optional "hint: ..." line to stderr. */
void cli_error(const char *hint, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* cli/suggest.c: the word of known[0..n-1] closest to `word` (a typo: at most 2 edits), or
 * NULL when none is close. */
const char *cli_nearest(const char *word, const char *const *known, size_t n);

/* cli/supervisor.c: the path of the scaletune-supervise next to this program, written to
 * buf[cap], for runner_options.supervisor; NULL when there is none (the library then forks
 * its supervisors). */
const char *cli_supervisor(char *buf, size_t cap);

/* cli/fit_sweep.c: writes sweep `sweep` of store `db` (NULL: its only sweep) as the fit's CSV
 * (N, D, loss) into a new temporary directory dir[dcap], at path[cap]; prints what it read.
 * 0, or 1 after printing the error (nothing is left behind then). */
int cli_fit_sweep_table(const char *db, const char *sweep, char *dir, size_t dcap, char *path,
                        size_t cap);

/* cli/emit_run.c: the recommended run of a study that has run, as a one-run sweep file (what
 * "yaml") or a shell command line ("command"), on f. o: the sweep file's name (NULL:
 * "<sweep>-large"), "NAME=VALUE" overrides of parameters (NAME must be a parameter of the
 * sweep: cli_emit_check), the significant digits of non-integer values (0: 8). 0, or 1 when
 * writing failed. */
#define CLI_EMIT_MAX_SET 32
typedef struct cli_emit_options {
    const char *name;
    const char *set[CLI_EMIT_MAX_SET];
    size_t n_set;
    int digits;
} cli_emit_options;
struct study;
int cli_emit_run(const struct study *st, const char *what, const cli_emit_options *o, FILE *f);
/* 0, or 2 after printing the error when a --set override names no parameter of the sweep. */
int cli_emit_check(const struct study *st, const cli_emit_options *o);

/* cli/cmd_fit.c: `scaletune fit` and `scaletune fit allocate`. */
int cmd_fit(int argc, char **argv);

/* cli/cmd_sweep.c: `scaletune sweep launch|create|resume|status|list|delete|rename|stop|export|
 * ask|tell`. */
int cmd_sweep(int argc, char **argv);

/* The sd in ln E of --prior-e's prior (extrapolate, report) when --prior-e-sd is not given: a
 * factor 1.65 at one sd (docs/algorithms/extrapolation.md, "Priors"). */
#define CLI_PRIOR_E_SD 0.5

/* cli/cmd_report.c: `scaletune report` (HTML, JSON, CSV and Markdown of a sweep). */
int cmd_report(int argc, char **argv);

/* cli/cmd_extrapolate.c: `scaletune extrapolate` (settings of a large run from a sweep). */
int cmd_extrapolate(int argc, char **argv);

/* cli/cmd_suggest_next.c: `scaletune suggest-next` (the runs that would shrink the large run's
 * interval most per cost). */
int cmd_suggest_next(int argc, char **argv);

/* cli/cmd_run.c: `scaletune run` (the large run: restarts from checkpoints, alerts). */
int cmd_run(int argc, char **argv);

#endif
