/*
 * bench_release.c — `make bench-release`: what the deterministic release costs in idle slots.
 * A sweep of N_RUNS runs (default 40) on 2 slots of the fake trainer, whose runs last a random
 * time (STEPS steps, default 4, of uniform [0, 400/STEPS] ms each, drawn per process: mean
 * 200 ms; 1 step is the widest spread, sd 115 ms; 4 steps sd 58 ms), with
 * `deterministic: true` (the default) and `deterministic: false`, alternated REPEATS times
 * (default 3). Printed per sweep: wall time, slot utilisation (the attempts' summed durations
 * over slots x wall time). The durations are random: one sample is one sample.
 * Usage: bench_release PATH_TO_FAKE_TRAINER [REPEATS] [N_RUNS] [STEPS]
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runner/runner.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sum of the attempts' durations in the store (seconds). */
static double busy_seconds(const char *db)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    double busy = NAN;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, "SELECT sum(ended - started) FROM attempts", -1, &st, NULL) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        busy = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return busy;
}

/* One sweep; *wall and *util out. Returns 0 on success. */
static int one_sweep(const char *trainer, const char *dir, int det, int rep, int n_runs, int steps,
                     double *wall, double *util)
{
    char text[4096], db[4200], em[ST_ERRMSG_MAX];
    snprintf(text, sizeof(text),
             "name: rel\n"
             "command: ['%s', '--x', '{x}', '--x', '{y}', --steps, '%d', --sleep-rand-ms, '%d',"
             " --cost-pow2, '{x}']\n"
             "objective: {metric: val_loss}\n"
             "cost: {metric: flops}\n"
             "parameters:\n"
             "  x: {space: linear, min: -2, max: 3, center: 0}\n"
             "  y: {space: linear, min: -2, max: 3, center: 1}\n"
             "budget: {runs: %d}\nparallel: 2\nseed: 3\ndeterministic: %s\n"
             "optimizer: {num_random_samples: 4}\n",
             trainer, steps, 400 / steps, n_runs, det ? "true" : "false");
    snprintf(db, sizeof(db), "%s/rel-%d-%d.db", dir, det, rep);
    runner_config *c = NULL;
    if (runner_config_load_string(text, strlen(text), "bench", &c, em)) {
        fprintf(stderr, "config: %s\n", em);
        return 1;
    }
    runner_options o = runner_options_default();
    o.db_path = db;
    o.poll_seconds = 0.005;
    runner *r = NULL;
    double t0 = now();
    st_status rc = runner_launch(c, &o, &r, em);
    if (!rc)
        rc = runner_run(r);
    *wall = now() - t0;
    if (rc)
        fprintf(stderr, "sweep: %s\n", r ? runner_errmsg(r) : em);
    runner_destroy(r);
    runner_config_destroy(c);
    *util = busy_seconds(db) / (2 * *wall);
    return rc != ST_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_release PATH_TO_FAKE_TRAINER [REPEATS] [N_RUNS] [STEPS]\n");
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 3, n_runs = argc > 3 ? atoi(argv[3]) : 40;
    int steps = argc > 4 ? atoi(argv[4]) : 4;
    if (steps < 1 || steps > 400 || n_runs < 1) {
        fprintf(stderr, "bench_release: STEPS in [1, 400], N_RUNS >= 1\n");
        return 2;
    }
    char dir[] = "/tmp/st-bench-release-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    st_global_init();
    double sum[2][2] = {{0, 0}, {0, 0}};
    int bad = 0;
    printf("release: %d runs, 2 slots, run length %d x U[0, %d] ms (fake trainer)\n", n_runs, steps,
           400 / steps);
    for (int rep = 0; rep < reps && !bad; rep++)
        for (int det = 1; det >= 0 && !bad; det--) {
            double wall = NAN, util = NAN;
            bad = one_sweep(argv[1], dir, det, rep, n_runs, steps, &wall, &util);
            printf("release: repeat %d deterministic=%-5s wall %6.2f s, slot utilisation %5.1f%%\n",
                   rep + 1, det ? "true" : "false", wall, 100 * util);
            sum[det][0] += wall;
            sum[det][1] += util;
        }
    if (!bad && reps > 0)
        printf("release: mean over %d: deterministic wall %.2f s (utilisation %.1f%%), "
               "free release %.2f s (%.1f%%): %+.1f%% wall time\n",
               reps, sum[1][0] / reps, 100 * sum[1][1] / reps, sum[0][0] / reps,
               100 * sum[0][1] / reps, 100 * (sum[1][0] / sum[0][0] - 1));
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup failed\n");
    st_global_cleanup();
    return bad;
}
