/*
 * test_runner_determinism.c — the deterministic release (runner/release.c): two parallel sweeps
 * with the same seed, whose runs sleep for random times (so they finish in different orders),
 * hold the same runs, run for run; so do two with infrastructure failures and retries. The
 * store's observations are in suggestion order. A proposer (runner_set_proposer) gets exactly
 * the runs the release rule allows, and the controller launches exactly what it proposes.
 *
 * ST_TEST_NONDET=1 runs the two comparisons with `deterministic: false` instead: they are then
 * expected to FAIL (the evidence that they can).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/runner/runner_test_util.h"

static const char *mode_line(void)
{
    return getenv("ST_TEST_NONDET") ? "deterministic: false\n" : "";
}

/* Runs of two stores, in suggestion order: the number of runs that differ in parameters,
 * status, failure kind or objective (bit for bit); -1 if they cannot be read. */
static long count_differences(const char *db1, const char *db2, long *n_runs)
{
    sqlite3 *h = NULL;
    if (sqlite3_open_v2(db1, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        return -1;
    char sql[4400];
    snprintf(sql, sizeof(sql), "ATTACH '%s' AS b", db2);
    long diff = -1;
    sqlite3_stmt *st = NULL;
    if (sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h,
                           "SELECT (SELECT count(*) FROM main.runs), (SELECT count(*) FROM b.runs),"
                           " (SELECT count(*) FROM main.runs a JOIN b.runs c ON a.id = c.id WHERE"
                           " a.x IS NOT c.x OR a.status IS NOT c.status OR a.failure IS NOT"
                           " c.failure OR a.objective IS NOT c.objective)",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        long n1 = (long)sqlite3_column_int64(st, 0), n2 = (long)sqlite3_column_int64(st, 1);
        *n_runs = n1;
        diff = (long)sqlite3_column_int64(st, 2) + (n1 > n2 ? n1 - n2 : n2 - n1);
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return diff;
}

/* Observations out of suggestion order (a later row for an earlier run). */
static long long out_of_order(const char *db)
{
    return tu_query(db, "SELECT count(*) FROM observations a JOIN observations b ON a.id < b.id"
                        " AND a.run_id > b.run_id");
}

static long long shuffled; /* pairs of runs that finished out of order, over all comparisons */

static void compare_two(const char *tag, const char *args, const char *extra, long min_runs)
{
    char db[2][64], name[64], text[1024];
    snprintf(name, sizeof(name), "det-%s", tag);
    snprintf(text, sizeof(text), "%s%s", extra, mode_line());
    for (int i = 0; i < 2; i++) {
        snprintf(db[i], sizeof(db[i]), "%s-%d.db", tag, i);
        runner_config *c = tu_config(name, args, text);
        CHECK(c != NULL);
        if (!c)
            return;
        int fin = 0;
        CHECK_ST(tu_sweep(tu_path(db[i]), c, NULL, &fin), ST_OK);
        CHECK(fin);
        runner_config_destroy(c);
    }
    const char *p0 = tu_path(db[0]), *p1 = tu_path(db[1]);
    long n = 0, diff = count_differences(p0, p1, &n);
    if (diff != 0)
        fprintf(stderr, "  %s: %ld of %ld runs differ between two sweeps with the same seed\n", tag,
                diff, n);
    CHECK(diff == 0);
    CHECK(n >= min_runs);
    CHECK(out_of_order(p0) == 0 && out_of_order(p1) == 0);
    /* finish orders did differ (else the comparison proves little): end times, both stores */
    for (int i = 0; i < 2; i++) {
        long long later_first = tu_query(
            i ? p1 : p0, "SELECT count(*) FROM runs a JOIN runs b ON a.id < b.id AND a.ended >"
                         " b.ended AND a.n_attempts > 0 AND b.n_attempts > 0");
        fprintf(stderr, "  %s: %ld runs, %lld pairs finished out of suggestion order\n", tag, n,
                later_first);
        shuffled += later_first > 0 ? later_first : 0;
    }
}

/* 16 runs, 2 slots, the Bayesian phase from the 3rd run, costs 2^x, random step times. */
static void test_same_seed(void)
{
    compare_two("plain", "--steps, '3', --sleep-rand-ms, '40', --cost-pow2, '{x}'",
                "budget: {runs: 16}\nparallel: 2\nseed: 7\n"
                "optimizer: {num_random_samples: 2}\n",
                16);
}

/* The same with crashes (retried with backoff, keeping their place) and a few that exhaust
 * their retries: decided by run and attempt number, the same in both stores. */
static void test_same_seed_retries(void)
{
    compare_two("retry",
                "--steps, '2', --sleep-rand-ms, '30', --cost-pow2, '{x}', --chaos, "
                "'0.3,0,0', --chaos-key, 'r-{_run}-{_attempt}'",
                "budget: {runs: 14}\nparallel: 3\nseed: 11\n"
                "retries: {infrastructure: 1, backoff_seconds: 0.01}\n"
                "optimizer: {num_random_samples: 2}\n",
                14);
}

/* ---- a proposer ------------------------------------------------------------------------- */

#define GRID_N 9

typedef struct grid {
    const char *db;
    size_t k; /* slots */
    double xs[GRID_N], ys[GRID_N];
    size_t n_calls, bad_released, bad_pending, bad_ended, bad_seed;
    uint64_t seeds[GRID_N];
} grid;

static st_status grid_propose(void *user, const runner_propose_request *q, double *x, char *em)
{
    grid *g = user;
    if (q->index >= GRID_N)
        return st_errf(em, ST_ERANGE, "no grid point %zu", q->index);
    /* the rule: suggestion n sees exactly runs 0..n-k, the others pending */
    size_t want = q->index + 1 > g->k ? q->index + 1 - g->k : 0;
    if (q->n_released != want)
        g->bad_released++;
    if (q->n_pending != q->index - q->n_released)
        g->bad_pending++;
    for (size_t i = 0; i < q->n_pending && i + q->n_released < GRID_N; i++) {
        const double *p = q->pending + i * q->cfg->n_params;
        size_t j = q->n_released + i;
        if (p[0] != g->xs[j] || p[1] != g->ys[j] || p[2] != 7)
            g->bad_pending++;
    }
    /* the released runs have all ended, in the store the proposer reads */
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM (SELECT status FROM runs ORDER BY id LIMIT %zu) "
             "WHERE status IN (2, 3, 4)",
             q->n_released);
    if (tu_query(g->db, sql) != (long long)q->n_released)
        g->bad_ended++;
    for (size_t i = 0; i < g->n_calls; i++)
        if (g->seeds[i] == q->seed)
            g->bad_seed++;
    if (g->n_calls < GRID_N)
        g->seeds[g->n_calls] = q->seed;
    g->n_calls++;
    x[0] = g->xs[q->index];
    x[1] = g->ys[q->index];
    x[2] = -1; /* fixed: the controller overwrites it */
    return ST_OK;
}

static void test_proposer(void)
{
    const char *db = tu_path("prop.db");
    char text[8192], em[ST_ERRMSG_MAX];
    snprintf(text, sizeof(text),
             "name: prop\n"
             "command: ['%s', '--x', '{x}', '--x', '{y}', --steps, '2', --sleep-rand-ms, '30',\n"
             "          --cost-pow2, '{x}']\n"
             "env: {Z: '{z}'}\n"
             "objective: {metric: val_loss}\n"
             "cost: {metric: flops, expr: '2^{x}'}\n"
             "parameters:\n"
             "  x: {space: linear, min: -2, max: 3, center: 0}\n"
             "  y: {space: linear, min: -2, max: 3, center: 1}\n"
             "  z: {value: 7}\n"
             "budget: {runs: %d, max_cost_per_run: 5}\n"
             "parallel: 3\nseed: 5\n",
             tu_trainer, GRID_N);
    runner_config *c = NULL;
    CHECK_ST(runner_config_load_string(text, strlen(text), "prop", &c, em), ST_OK);
    if (!c) {
        fprintf(stderr, "%s\n", em);
        return;
    }
    grid g;
    memset(&g, 0, sizeof(g));
    g.db = db;
    g.k = 3;
    /* x = 3 (run 1) and 2.375 (run 4): 2^x above the cap of 5, refused */
    static const int perm[GRID_N] = {0, 8, 1, 2, 7, 3, 4, 5, 6};
    for (size_t i = 0; i < GRID_N; i++) {
        g.xs[i] = -2 + 0.625 * perm[i];
        g.ys[i] = 3 - 0.5 * (double)i;
    }
    runner_options o = runner_options_default();
    o.db_path = db;
    o.poll_seconds = 0.005;
    runner *r = NULL;
    CHECK_ST(runner_launch(c, &o, &r, em), ST_OK);
    if (!r)
        return;
    runner_set_proposer(r, grid_propose, &g);
    CHECK_ST(runner_run(r), ST_OK);
    CHECK(runner_finished(r));
    runner_destroy(r);
    CHECK(g.n_calls == GRID_N);
    CHECK(g.bad_released == 0 && g.bad_pending == 0 && g.bad_ended == 0 && g.bad_seed == 0);
    /* launched exactly what was proposed, fixed parameter overwritten; refusals as today */
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    size_t i = 0, same = 0;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, "SELECT x, status, failure, objective FROM runs ORDER BY id", -1, &st,
                           NULL) == SQLITE_OK)
        for (; sqlite3_step(st) == SQLITE_ROW && i < GRID_N; i++) {
            const double *x = sqlite3_column_blob(st, 0);
            int refused = g.xs[i] > 2.33; /* log2(5) */
            int status = sqlite3_column_int(st, 1), failure = sqlite3_column_int(st, 2);
            double want = 1 + (g.xs[i] - .5) * (g.xs[i] - .5) + (g.ys[i] - .5) * (g.ys[i] - .5);
            same += sqlite3_column_bytes(st, 0) == 3 * sizeof(double) && x[0] == g.xs[i] &&
                    x[1] == g.ys[i] && x[2] == 7 &&
                    (refused ? status == 3 && failure == 3
                             : status == 2 && fabs(sqlite3_column_double(st, 3) - want) < 1e-12);
        }
    sqlite3_finalize(st);
    sqlite3_close(h);
    CHECK(i == GRID_N && same == GRID_N);
    /* every run but the refused ones launched once; all observed once, in suggestion order */
    CHECK(tu_query(db, "SELECT count(*) FROM attempts") == GRID_N - 2);
    CHECK(tu_query(db, "SELECT count(*) FROM observations") == GRID_N);
    CHECK(out_of_order(db) == 0);
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE status = 2 AND carbs_id = id") ==
          GRID_N - 2);
    runner_config_destroy(c);
}

/* Stopped half-way and resumed: every run observed once, still in suggestion order. */
static void test_stop_resume(void)
{
    const char *db = tu_path("detstop.db");
    runner_config *c = tu_config("detstop", "--steps, '3', --sleep-rand-ms, '30'",
                                 "budget: {runs: 10}\nparallel: 3\n"
                                 "optimizer: {num_random_samples: 2}\n"
                                 "timeouts: {kill_grace_seconds: 0.2}\n");
    runner_options o = runner_options_default();
    o.db_path = db;
    o.poll_seconds = 0.005;
    volatile sig_atomic_t stop = 0;
    o.stop_flag = &stop;
    runner *r = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_launch(c, &o, &r, em), ST_OK);
    int done = 0;
    while (!done && tu_query(db, "SELECT count(*) FROM runs WHERE status IN (2, 3)") < 4) {
        CHECK_ST(runner_step(r, &done), ST_OK);
        usleep(5000);
    }
    stop = 1;
    CHECK_ST(runner_run(r), ST_OK);
    runner_destroy(r);
    int fin = 0;
    CHECK_ST(tu_sweep(db, NULL, "detstop", &fin), ST_OK);
    CHECK(fin);
    long long ended = tu_query(db, "SELECT count(*) FROM runs WHERE status IN (2, 3)");
    CHECK(ended == 10);
    CHECK(tu_query(db, "SELECT count(DISTINCT run_id) FROM observations") == ended);
    CHECK(tu_query(db, "SELECT count(*) FROM observations") == ended);
    CHECK(out_of_order(db) == 0);
    runner_config_destroy(c);
}

int main(int argc, char **argv)
{
    (void)argc;
    st_global_init();
    tu_init(argv[0]);
    test_same_seed();
    test_same_seed_retries();
    /* checked over both comparisons: under valgrind one of them may finish in order */
    CHECK(shuffled > 0);
    test_proposer();
    test_stop_resume();
    tu_cleanup();
    st_global_cleanup();
    return check_summary("runner.determinism");
}
