/*
 * slurm_test_util.h — helpers for the Slurm tests (tests/slurm/, run by `make test-slurm`
 * against the one-node cluster of scripts/slurm-localhost): where the cluster's REST endpoints
 * and token are (environment from `scripts/slurm-localhost env`), sweep files with a backend
 * block, the fake trainer's path, a temporary directory, store queries. Header-only test code.
 */
#ifndef SLURM_TEST_UTIL_H
#define SLURM_TEST_UTIL_H

#include <libgen.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runner/runner_int.h"
#include "tests/check.h"

static char su_trainer[4096];
static char su_dir[4096];

/* 0 when the cluster's environment is missing (the test then fails loudly). */
static inline int su_init(const char *argv0)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", argv0);
    char *abs = realpath(dirname(tmp), NULL);
    snprintf(su_trainer, sizeof(su_trainer), "%s/../runner/fake_trainer", abs ? abs : ".");
    free(abs);
    /* under the cluster's directory tree is not needed: one node shares this filesystem */
    snprintf(su_dir, sizeof(su_dir), "/tmp/st-slurm-XXXXXX");
    if (!mkdtemp(su_dir))
        perror("mkdtemp");
    if (!getenv("SLURM_CONF") || !getenv("ST_SLURM_REST_URL") || !getenv("ST_SLURM_REST_SOCKET") ||
        !getenv("ST_SLURM_TOKEN_FILE")) {
        fprintf(stderr, "no cluster: run through `make test-slurm` (scripts/slurm-localhost)\n");
        return 0;
    }
    return 1;
}

static inline void su_cleanup(void)
{
    char cmd[4200];
    if (getenv("ST_TEST_KEEP"))
        return;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", su_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup failed\n");
}

static inline char *su_path(const char *name)
{
    static char p[4][4200];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof(p[k]), "%s/%s", su_dir, name);
    return p[k];
}

/* The backend block for a route: "cli", "rest" (JWT over TCP) or "socket" (REST, local auth);
 * `more`: further backend keys ("key: value, ..."), may be "". */
static inline void su_backend(char *buf, size_t cap, const char *route, const char *more)
{
    const char *sep = more && *more ? ", " : "";
    if (!strcmp(route, "cli"))
        snprintf(buf, cap,
                 "backend: {kind: slurm, via: cli, poll_seconds: 0.2, "
                 "poll_max_seconds: 1, files_grace_seconds: 1%s%s}\n",
                 sep, more);
    else if (!strcmp(route, "rest"))
        snprintf(buf, cap,
                 "backend: {kind: slurm, via: rest, poll_seconds: 0.2, poll_max_seconds: 1, "
                 "files_grace_seconds: 1, command_timeout_seconds: 10, rest: {url: '%s', user: "
                 "root, token_file: '%s'}%s%s}\n",
                 getenv("ST_SLURM_REST_URL"), getenv("ST_SLURM_TOKEN_FILE"), sep, more);
    else
        snprintf(buf, cap,
                 "backend: {kind: slurm, via: rest, poll_seconds: 0.2, poll_max_seconds: 1, "
                 "files_grace_seconds: 1, command_timeout_seconds: 10, rest: {socket: '%s'}%s%s}\n",
                 getenv("ST_SLURM_REST_SOCKET"), sep, more);
}

/* A sweep of the fake trainer (loss from x and y) on Slurm. */
static inline runner_config *su_config(const char *name, const char *route, const char *args,
                                       const char *extra)
{
    char text[8192], be[2048], em[ST_ERRMSG_MAX];
    su_backend(be, sizeof(be), route, "");
    snprintf(text, sizeof(text),
             "name: %s\n"
             "command: ['%s', '--x', '{x}', '--x', '{y}'%s%s]\n"
             "objective: {metric: val_loss}\n"
             "cost: {metric: flops}\n"
             "parameters:\n"
             "  x: {space: linear, min: -2, max: 3, center: 0}\n"
             "  y: {space: linear, min: -2, max: 3, center: 1}\n"
             "retries: {infrastructure: 3, backoff_seconds: 0.2}\n"
             "%s%s",
             name, su_trainer, args && *args ? ", " : "", args ? args : "", be, extra);
    runner_config *c = NULL;
    if (runner_config_load_string(text, strlen(text), name, &c, em))
        fprintf(stderr, "config: %s\n", em);
    return c;
}

static inline long long su_query(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    long long v = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(h, 5000);
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

static inline double su_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline void su_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* Runs scripts/slurm-localhost with one action (stop-ctld, start-ctld, stop-rest, ...). */
static inline int su_cluster(const char *action)
{
    char cmd[512];
    const char *script = getenv("ST_SLURM_SCRIPT");
    snprintf(cmd, sizeof(cmd), "%s %s 2>/dev/null", script ? script : "scripts/slurm-localhost",
             action);
    return system(cmd);
}

#endif
