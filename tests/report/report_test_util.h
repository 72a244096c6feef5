/*
 * report_test_util.h — helpers for the report tests: a temporary directory, and a small store
 * made by running a real sweep of bench/'s simulated trainer (llmsim, built next to the tests
 * under build/bench/llmsim/) through the runner API: model size, tokens and learning rate
 * searched, some runs diverging and every fourth run's first attempt crashing (retried).
 * Header-only test code.
 */
#ifndef REPORT_TEST_UTIL_H
#define REPORT_TEST_UTIL_H

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/runner.h"
#include "tests/check.h"

static char rt_sim[4096];
static char rt_dir[4096];

/* argv0 is build[/asan]/tests/report/test_x: llmsim is build[/asan]/bench/llmsim/llmsim. */
static inline void rt_init(const char *argv0)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", argv0);
    char *abs = realpath(dirname(tmp), NULL);
    snprintf(rt_sim, sizeof(rt_sim), "%s/../../bench/llmsim/llmsim", abs ? abs : ".");
    free(abs);
    snprintf(rt_dir, sizeof(rt_dir), "/tmp/st-report-XXXXXX");
    if (!mkdtemp(rt_dir))
        perror("mkdtemp");
}

static inline void rt_cleanup(void)
{
    char cmd[4200];
    if (getenv("ST_TEST_KEEP")) {
        fprintf(stderr, "kept %s\n", rt_dir);
        return;
    }
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", rt_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup failed\n");
}

static inline char *rt_path(const char *name)
{
    static char p[4][4200];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof(p[k]), "%s/%s", rt_dir, name);
    return p[k];
}

/* Runs sweep `name` of `runs` simulated runs into store `db`. ST_OK or the runner's status. */
/* A sweep of `runs` llmsim runs, each reporting `k_report` step and eval records. */
static inline st_status rt_sweep_k(const char *db, const char *name, size_t runs, int k_report)
{
    char text[10240], em[ST_ERRMSG_MAX];
    snprintf(text, sizeof(text),
             "name: %s\n"
             /* every 4th run's first attempt crashes (exit 1): an infrastructure failure */
             "command: ['/bin/sh', '-c', 'if [ \"$1\" = 1 ] && [ $(($2 %% 4)) = 0 ]; then exit "
             "1; fi; shift 2; exec \"$@\"', sh, '{_attempt}', '{_run}', '%s', '--N', '{N}', "
             "'--tokens', '{tokens}', '--lr', '{lr}', '--batch', '{batch}', '--seed', '{_run}', "
             "'--steps-to-report', '%d']\n"
             "objective: {metric: val_loss}\n"
             "cost: {metric: flops}\n"
             "parameters:\n"
             "  N: {space: log, min: 1.0e6, max: 1.0e8, center: 5.0e6, integer: true}\n"
             "  tokens: {space: log, min: 2.0e7, max: 4.0e9, center: 1.0e8, integer: true}\n"
             "  lr: {space: log, min: 1.0e-4, max: 0.3, center: 8.0e-3}\n"
             "  batch: {value: 65536}\n"
             "budget: {runs: %zu}\n"
             "parallel: 2\n"
             "retries: {infrastructure: 2, backoff_seconds: 0.01}\n"
             "seed: 3\n"
             "optimizer: {num_random_samples: 8}\n",
             name, rt_sim, k_report, runs);
    runner_config *c = NULL;
    st_status rc = runner_config_load_string(text, strlen(text), name, &c, em);
    if (rc) {
        fprintf(stderr, "config: %s\n", em);
        return rc;
    }
    runner_options o = runner_options_default();
    o.db_path = db;
    o.poll_seconds = 0.005;
    runner *r = NULL;
    rc = runner_launch(c, &o, &r, em);
    if (!rc) {
        rc = runner_run(r);
        if (rc)
            fprintf(stderr, "run: %s\n", runner_errmsg(r));
    } else {
        fprintf(stderr, "launch: %s\n", em);
    }
    runner_destroy(r);
    runner_config_destroy(c);
    return rc;
}

static inline st_status rt_sweep(const char *db, const char *name, size_t runs)
{
    return rt_sweep_k(db, name, runs, 6);
}

/* Reads a whole file (malloc'd, NUL-terminated) or NULL. */
static inline char *rt_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = '\0';
    fclose(f);
    return s;
}

/* Occurrences of `needle` in `s`. */
static inline size_t rt_count(const char *s, const char *needle)
{
    size_t n = 0, l = strlen(needle);
    for (const char *p = s; (p = strstr(p, needle)); p += l)
        n++;
    return n;
}

#endif
