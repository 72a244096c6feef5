/*
 * runner_test_util.h — helpers shared by the runner's end-to-end tests: locating the fake
 * trainer next to the test binary, a temporary directory, sweep files from a template, and
 * running a sweep to the end. Header-only test code.
 */
#ifndef RUNNER_TEST_UTIL_H
#define RUNNER_TEST_UTIL_H

#include <libgen.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/runner.h"
#include "tests/check.h"

static char tu_trainer[4096];
static char tu_dir[4096];
/* build/scaletune-supervise, two levels above the test binary (build/tests/runner/) */
static char tu_supervise_program[4096];
/* runner_options.supervisor for tu_sweep (NULL, the library's default: fork supervisors) */
static const char *tu_supervisor;

static inline void tu_init(const char *argv0)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", argv0);
    char *abs = realpath(dirname(tmp), NULL);
    snprintf(tu_trainer, sizeof(tu_trainer), "%s/fake_trainer", abs ? abs : ".");
    snprintf(tu_supervise_program, sizeof(tu_supervise_program), "%s/../../scaletune-supervise",
             abs ? abs : ".");
    free(abs);
    snprintf(tu_dir, sizeof(tu_dir), "/tmp/st-runner-XXXXXX");
    if (!mkdtemp(tu_dir))
        perror("mkdtemp");
}

static inline void tu_cleanup(void)
{
    char cmd[4200];
    if (getenv("ST_TEST_KEEP"))
        return; /* keep the stores and logs for a look */
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tu_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup failed\n");
}

/* A sweep file: `args` is the YAML list tail after the trainer (e.g. "--mode, crash"),
 * `extra` more top-level YAML. */
static inline runner_config *tu_config(const char *name, const char *args, const char *extra)
{
    char text[8192], em[ST_ERRMSG_MAX];
    snprintf(text, sizeof(text),
             "name: %s\n"
             "command: ['%s', '--x', '{x}', '--x', '{y}'%s%s]\n"
             "objective: {metric: val_loss}\n"
             "cost: {metric: flops}\n"
             "parameters:\n"
             "  x: {space: linear, min: -2, max: 3, center: 0}\n"
             "  y: {space: linear, min: -2, max: 3, center: 1}\n"
             "%s",
             name, tu_trainer, args && *args ? ", " : "", args ? args : "", extra);
    runner_config *c = NULL;
    st_status rc = runner_config_load_string(text, strlen(text), name, &c, em);
    if (rc)
        fprintf(stderr, "config: %s\n", em);
    return c;
}

static inline char *tu_path(const char *name)
{
    static char p[4][4200];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof(p[k]), "%s/%s", tu_dir, name);
    return p[k];
}

/* Launches (or resumes, if cfg is NULL) and runs to the end; returns the status. */
static inline st_status tu_sweep(const char *db, runner_config *cfg, const char *name,
                                 int *finished)
{
    runner_options o = runner_options_default();
    o.db_path = db;
    o.poll_seconds = 0.005;
    o.supervisor = tu_supervisor;
    runner *r = NULL;
    char em[ST_ERRMSG_MAX];
    st_status rc = cfg ? runner_launch(cfg, &o, &r, em) : runner_resume(name, &o, &r, em);
    if (rc) {
        fprintf(stderr, "launch/resume: %s\n", em);
        return rc;
    }
    rc = runner_run(r);
    if (rc)
        fprintf(stderr, "run: %s\n", runner_errmsg(r));
    if (finished)
        *finished = runner_finished(r);
    runner_destroy(r);
    return rc;
}

/* Alive and not a zombie (orphans may wait for a reaper that never comes in a container). */
static inline int tu_alive(pid_t pid)
{
    char p[64], buf[512];
    if (kill(pid, 0) != 0)
        return 0;
    snprintf(p, sizeof(p), "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(p, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *rp = strrchr(buf, ')');
    return !(rp && rp[1] == ' ' && rp[2] == 'Z');
}

/* One integer from the store. */
static inline long long tu_query(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    long long v = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        else
            fprintf(stderr, "query failed: %s: %s\n", sql, sqlite3_errmsg(h));
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return v;
}

#endif
