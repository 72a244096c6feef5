/*
 * fit_sweep.c — `scaletune fit --db DB --sweep S`: the sweep's succeeded runs, read through the
 * runner's typed read (runner_store_read_sweep; no second path to the store), become the fit's
 * table: N and D from each final record's "params" and "tokens", loss the sweep's objective.
 * C is left to the fit's C = 6ND convention (the sweep's cost metric may be seconds). The table
 * goes through a private temporary CSV, so the fit reads exactly what `--data` would.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "runner/runner.h"

/* Writes the CSV into dir/<sweep>.csv (path[cap]); the number of rows in *n. 0 or 1. */
static int write_table(const runner_sweep *w, const char *dir, char *path, size_t cap, size_t *n)
{
    snprintf(path, cap, "%s/%s.csv", dir, w->cfg->name);
    FILE *f = fopen(path, "w");
    if (!f) {
        cli_error(NULL, "%s: cannot write", path);
        return 1;
    }
    fprintf(f, "N,D,loss\n");
    *n = 0;
    for (size_t i = 0; i < w->n_runs; i++) {
        const runner_sweep_run *r = &w->runs[i];
        if (r->status != RUNNER_RUN_SUCCEEDED || !(r->final_N > 0) || !(r->final_D > 0) ||
            !(r->objective > 0))
            continue;
        fprintf(f, "%.17g,%.17g,%.17g\n", r->final_N, r->final_D, r->objective);
        (*n)++;
    }
    return fclose(f) != 0;
}

int cli_fit_sweep_table(const char *db, const char *sweep, char *dir, size_t dcap, char *path,
                        size_t cap)
{
    char em[ST_ERRMSG_MAX];
    runner_store *s = NULL;
    st_status rc = runner_store_open(db, &s, em);
    if (rc) {
        cli_error(rc == ST_ENOTFOUND ? "name the store with --db FILE" : NULL, "%s", em);
        return 1;
    }
    runner_sweep *w = NULL;
    if (runner_store_read_sweep(s, sweep, &w)) {
        cli_error(NULL, "%s", runner_store_errmsg(s));
        runner_store_close(s);
        return 1;
    }
    runner_store_close(s);
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, dcap, "%s/scaletune-fit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    size_t n = 0;
    int bad = !mkdtemp(dir);
    if (bad)
        cli_error(NULL, "cannot make a temporary directory under %s", tmp ? tmp : "/tmp");
    else
        bad = write_table(w, dir, path, cap, &n);
    if (!bad && n == 0) {
        cli_error("a trainer reports N and D as \"params\" and \"tokens\" in its final record "
                  "(docs/metrics-protocol.md)",
                  "sweep '%s' has no succeeded run whose final record gives params and tokens",
                  w->cfg->name);
        bad = 1;
    }
    if (!bad)
        fprintf(stderr,
                "scaletune: fitting %zu succeeded runs of sweep '%s' in %s (N, D from "
                "their final records, loss = %s)\n",
                n, w->cfg->name, db, w->cfg->objective);
    runner_sweep_free(w);
    if (bad && dir[0] && access(dir, F_OK) == 0) {
        unlink(path);
        rmdir(dir);
    }
    return bad;
}
