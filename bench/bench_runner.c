/*
 * bench_runner.c — `make bench-runner`: the controller's own cost.
 *  1. overhead per run: a 1000-run sweep of a no-op trainer (the fake trainer printing one
 *     step and its final record); the controller times what it spends per run (launch,
 *     record, parse, observe; suggest excluded) and we print the median. Baseline measured in
 *     the same run: fork + exec + wait of the same trainer, without any bookkeeping.
 *  2. `sweep status` (status + Pareto front) on a store of 10,000 runs; baseline: one
 *     `SELECT count(*)` over the same table.
 * Usage: bench_runner PATH_TO_FAKE_TRAINER [N_RUNS]
 */
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner/runner.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof(double), cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double spawn_baseline_ms(const char *trainer, int n)
{
    double *t = malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++) {
        double t0 = now();
        pid_t p = fork();
        if (p == 0) {
            int fd = open("/dev/null", O_WRONLY);
            dup2(fd, 1);
            execl(trainer, trainer, "--steps", "1", (char *)NULL);
            _exit(127);
        }
        waitpid(p, NULL, 0);
        t[i] = (now() - t0) * 1e3;
    }
    double m = median(t, (size_t)n);
    free(t);
    return m;
}

static int bench_overhead(const char *trainer, const char *dir, int n_runs)
{
    char text[8192], db[1100], em[ST_ERRMSG_MAX];
    snprintf(db, sizeof(db), "%s/overhead.db", dir);
    snprintf(text, sizeof(text),
             "name: overhead\ncommand: ['%s', '--steps', '1', '--x', '{x}']\n"
             "objective: {metric: val_loss}\ncost: {metric: flops}\n"
             "parameters:\n  x: {space: linear, min: -1, max: 1, center: 0}\n"
             "budget: {runs: %d}\nparallel: 2\n"
             "optimizer: {num_random_samples: 1000000}\n",
             trainer, n_runs);
    runner_config *cfg = NULL;
    if (runner_config_load_string(text, strlen(text), "bench", &cfg, em)) {
        fprintf(stderr, "%s\n", em);
        return 1;
    }
    runner_options o = runner_options_default();
    o.db_path = db;
    o.poll_seconds = 0.002;
    runner *r = NULL;
    if (runner_launch(cfg, &o, &r, em)) {
        fprintf(stderr, "%s\n", em);
        return 1;
    }
    double t0 = now();
    if (runner_run(r)) {
        fprintf(stderr, "%s\n", runner_errmsg(r));
        return 1;
    }
    double wall = now() - t0;
    size_t n;
    const double *ov = runner_overhead_ms(r, &n);
    double *v = malloc(n * sizeof(double));
    memcpy(v, ov, n * sizeof(double));
    double med = median(v, n), p90 = v[(size_t)(0.9 * (double)(n - 1))];
    double base = spawn_baseline_ms(trainer, 200);
    printf("runs %zu in %.2f s wall (2 slots); controller overhead per run: median %.3f ms, "
           "p90 %.3f ms\n",
           n, wall, med, p90);
    printf("baseline fork+exec+wait of the same trainer: median %.3f ms; overhead / baseline "
           "= %.2f\n",
           base, med / base);
    printf("BENCH runner.overhead_ms %.3f\n", med);
    free(v);
    runner_destroy(r);
    runner_config_destroy(cfg);
    return 0;
}

static int bench_status(const char *dir, const char *trainer)
{
    const int N = 10000;
    char text[8192], db[1100], em[ST_ERRMSG_MAX];
    snprintf(db, sizeof(db), "%s/status.db", dir);
    snprintf(text, sizeof(text),
             "name: big\ncommand: ['%s']\nobjective: {metric: val_loss}\ncost: {metric: flops}\n"
             "parameters:\n  x: {space: linear, min: -1, max: 1, center: 0}\n"
             "  y: {space: log, min: 1, max: 100, center: 10}\nbudget: {runs: %d}\n",
             trainer, N);
    runner_config *cfg = NULL;
    runner *r = NULL;
    runner_options o = runner_options_default();
    o.db_path = db;
    if (runner_config_load_string(text, strlen(text), "bench", &cfg, em) ||
        runner_launch(cfg, &o, &r, em)) {
        fprintf(stderr, "%s\n", em);
        return 1;
    }
    runner_destroy(r);
    runner_config_destroy(cfg);

    /* fill the store as a finished 10,000-run sweep would (runs, attempts, observations) */
    sqlite3 *h;
    sqlite3_open(db, &h);
    sqlite3_exec(h, "BEGIN", NULL, NULL, NULL);
    sqlite3_stmt *ir, *ia, *io;
    sqlite3_prepare_v2(h,
                       "INSERT INTO runs(sweep_id, status, failure, x, objective, cost, "
                       "n_attempts, n_infra, created, ended) VALUES(1, ?1, ?2, ?3, ?4, ?5, ?6, "
                       "?7, 0, 1)",
                       -1, &ir, NULL);
    sqlite3_prepare_v2(h,
                       "INSERT INTO attempts(run_id, number, state, backend, dir, slot, started,"
                       " ended, exit_code, failure, n_lines, n_garbage) VALUES(?1, ?2, 'done', "
                       "'local', '/tmp/x', 0, 0, 1, 0, 0, 10, ?3)",
                       -1, &ia, NULL);
    sqlite3_prepare_v2(h,
                       "INSERT INTO observations(sweep_id, run_id, x, output, cost, failed, t) "
                       "VALUES(1, ?1, ?2, ?3, ?4, ?5, 0)",
                       -1, &io, NULL);
    unsigned s = 12345;
    for (int i = 1; i <= N; i++) {
        s = s * 1103515245u + 12345u;
        double u = (double)(s >> 8) / 16777216.0;
        double x[2] = {2 * u - 1, 1 + 99 * u * u};
        int status = i % 10 == 0 ? 3 : i % 25 == 0 ? 4 : 2;
        s = s * 1103515245u + 12345u;
        double u2 = (double)(s >> 8) / 16777216.0;
        double cost = 1 + 1000 * u, obj = 1 + 1 / sqrt(cost) + 0.3 * u2; /* noisy front */
        int attempts = i % 7 == 0 ? 2 : 1;
        sqlite3_bind_int(ir, 1, status);
        sqlite3_bind_int(ir, 2, status == 3 ? 1 : status == 4 ? 6 : 0);
        sqlite3_bind_blob(ir, 3, x, sizeof(x), SQLITE_TRANSIENT);
        if (status == 2)
            sqlite3_bind_double(ir, 4, obj);
        else
            sqlite3_bind_null(ir, 4);
        sqlite3_bind_double(ir, 5, cost);
        sqlite3_bind_int(ir, 6, attempts);
        sqlite3_bind_int(ir, 7, attempts - 1);
        sqlite3_step(ir);
        sqlite3_reset(ir);
        for (int a = 1; a <= attempts; a++) {
            sqlite3_bind_int(ia, 1, i);
            sqlite3_bind_int(ia, 2, a);
            sqlite3_bind_int(ia, 3, i % 3);
            sqlite3_step(ia);
            sqlite3_reset(ia);
        }
        if (status != 4) {
            sqlite3_bind_int(io, 1, i);
            sqlite3_bind_blob(io, 2, x, sizeof(x), SQLITE_TRANSIENT);
            sqlite3_bind_double(io, 3, obj);
            sqlite3_bind_double(io, 4, cost);
            sqlite3_bind_int(io, 5, status == 3);
            sqlite3_step(io);
            sqlite3_reset(io);
        }
    }
    sqlite3_finalize(ir);
    sqlite3_finalize(ia);
    sqlite3_finalize(io);
    sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);

    enum { REPS = 21 };
    double ts[REPS], tb[REPS];
    size_t front = 0;
    for (int k = 0; k < REPS; k++) {
        /* what `scaletune sweep status` does: open, status, Pareto size, Pareto rows, close */
        double t0 = now();
        runner_store *st = NULL;
        runner_status rs;
        if (runner_store_open(db, &st, em) || runner_store_status(st, NULL, &rs)) {
            fprintf(stderr, "%s %s\n", em, runner_store_errmsg(st));
            return 1;
        }
        uint64_t ids[512];
        double c[512], ob[512];
        runner_store_pareto(st, NULL, 512, &front, ids, c, ob);
        runner_store_close(st);
        ts[k] = (now() - t0) * 1e3;
        if (k == 0 && rs.n_runs != (size_t)N) {
            fprintf(stderr, "status saw %zu runs\n", rs.n_runs);
            return 1;
        }
        t0 = now();
        sqlite3_stmt *q;
        sqlite3_prepare_v2(h, "SELECT count(*), sum(cost) FROM runs", -1, &q, NULL);
        sqlite3_step(q);
        sqlite3_finalize(q);
        tb[k] = (now() - t0) * 1e3;
    }
    sqlite3_close(h);
    double ms = median(ts, REPS), base = median(tb, REPS);
    printf("status on %d runs (Pareto front %zu runs): median %.3f ms; baseline one "
           "count(*)+sum scan: %.3f ms; ratio %.2f\n",
           N, front, ms, base, ms / base);
    printf("BENCH runner.status_ms runs=%d %.3f\n", N, ms);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_runner FAKE_TRAINER [N_RUNS]\n");
        return 2;
    }
    st_global_init();
    char dir[] = "/tmp/st-bench-runner-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char trainer[4096];
    if (!realpath(argv[1], trainer))
        return 1;
    int n = argc > 2 ? atoi(argv[2]) : 1000;
    int rc = bench_overhead(trainer, dir, n);
    if (!rc)
        rc = bench_status(dir, trainer);
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (!getenv("ST_BENCH_KEEP") && system(cmd) != 0)
        rc = 1;
    st_global_cleanup();
    return rc;
}
