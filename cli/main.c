/*
 * main.c — the `scaletune` command: global set-up, the subcommand table, --help and --version.
 * Each subcommand is a cli/cmd_<name>.c built only on the public headers.
 */
#include <cblas.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/st.h"

static int cmd_version(int argc, char **argv);

static const struct {
    const char *name;
    cli_cmd_fn fn;
    const char *help;
} commands[] = {
    {"version", cmd_version, "print the version"},
    {"fit", cmd_fit, "fit a scaling law to runs (CSV); 'fit allocate' for N_opt, D_opt"},
    {"sweep", cmd_sweep, "run a sweep: launch, resume, status, list, stop, export, ask, tell, ..."},
    {"extrapolate", cmd_extrapolate, "settings of a large run from a sweep, with intervals"},
    {"suggest-next", cmd_suggest_next, "the small runs that would shrink the large run's interval"},
    {"report", cmd_report, "write a sweep's HTML report (and JSON, CSV, Markdown)"},
    {"run", cmd_run, "run the large run: restarts from checkpoints, alerts, lost time"},
};

void cli_error(const char *hint, const char *fmt, ...)
{
    va_list ap;
    fputs("scaletune: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (hint)
        fprintf(stderr, "hint: %s\n", hint);
}

static int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("scaletune %s\n", st_version());
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: scaletune <command> [options]\n\n"
               "scaletune finds the settings of a large training run from many small runs.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\n'scaletune <command> --help' describes a command. Docs: docs/.\n");
}

static void unknown_command(const char *word)
{
    const char *names[sizeof(commands) / sizeof(commands[0])];
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        names[i] = commands[i].name;
    const char *near = cli_nearest(word, names, sizeof(names) / sizeof(names[0]));
    char hint[128];
    snprintf(hint, sizeof(hint), "did you mean 'scaletune %s'?", near ? near : "");
    cli_error(near ? hint : "run 'scaletune --help' for the list of commands",
              "unknown command '%s'", word);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("scaletune %s\n", st_version());
        return 0;
    }
    /* The optimizer's matrices (n <= a few thousand) run faster on one BLAS thread than on
     * OpenBLAS threads that spin against the sweep's own runs (bench-carbs: 2-3x at n = 1000
     * on 2 cores). A user's OPENBLAS_NUM_THREADS wins. */
    if (!getenv("OPENBLAS_NUM_THREADS"))
        openblas_set_num_threads(1);
    if (st_global_init() != ST_OK) {
        cli_error(NULL, "global initialisation failed");
        return 1;
    }
    int rc = 2;
    size_t i;
    for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (!strcmp(argv[1], commands[i].name))
            break;
    if (i < sizeof(commands) / sizeof(commands[0]))
        rc = commands[i].fn(argc - 1, argv + 1);
    else
        unknown_command(argv[1]);
    st_global_cleanup();
    return rc;
}
