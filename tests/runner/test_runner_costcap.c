/*
 * test_runner_costcap.c — the controller and the optimizer's cost cap: the optimizer gets
 * budget.max_cost_per_run as its cap (and the cost expression as its exact cost); a run over
 * the cap (failure over_budget) is ended without retry and shown to the optimizer's cost model
 * only, in the live loop and in the optimizer rebuilt from the store (resume, ask), also from
 * an older store that kept a refusal's cost only as the run's predicted cost; the first runs,
 * blind to the cap, start one at a time; each over-budget run is logged with its cost and the
 * cap; over_budget is not a hyperparameter failure kind.
 */
#include <math.h>
#include <sqlite3.h>

#include "runner/runner_int.h"
#include "tests/runner/runner_test_util.h"

/* The optimizer rebuilt from the store, as resume and ask build it. */
static carbs *rebuild(const char *db, const char *name)
{
    runner_store *s = NULL;
    runner_config *cfg = NULL;
    carbs *cb = NULL;
    char em[ST_ERRMSG_MAX], *text = NULL;
    int64_t id = 0;
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    CHECK_ST(store_find_sweep(s, name, &id, &text), ST_OK);
    CHECK_ST(runner_config_load_string(text, strlen(text), name, &cfg, em), ST_OK);
    if (cfg)
        CHECK_ST(store_rebuild_carbs(s, id, cfg, 0, &cb), ST_OK);
    free(text);
    runner_config_destroy(cfg); /* no cost expression here: nothing keeps it */
    runner_store_close(s);
    return cb;
}

static void exec_sql(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    CHECK(sqlite3_open(db, &h) == SQLITE_OK);
    CHECK(sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
}

/* The trainer reports cost 2^y; the centre y = 1 costs 2, over the cap of 1. */
static void test_over_budget_cost_only(void)
{
    const char *db = tu_path("cap.db");
    runner_config *c = tu_config("cap", "--cost-pow2, '{y}'",
                                 "budget: {runs: 12, max_cost_per_run: 1.0}\nparallel: 2\n");
    CHECK(c != NULL);
    if (!c)
        return;
    CHECK_ST(tu_sweep(db, c, NULL, NULL), ST_OK);
    runner_config_destroy(c);
    long long over = tu_query(db, "SELECT count(*) FROM runs WHERE failure = 3");
    long long obs = tu_query(db, "SELECT count(*) FROM runs WHERE status = 2");
    CHECK(tu_query(db, "SELECT count(*) FROM runs") == 12);
    CHECK(over >= 1 && over <= 4); /* the blind first run(s), then under the cap */
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE failure = 3 AND status = 3 AND "
                       "n_attempts = 1") == over); /* ended, never retried */
    CHECK(tu_query(db, "SELECT count(*) FROM observations o JOIN runs r ON r.id = o.run_id "
                       "WHERE r.failure = 3 AND o.failed = 1 AND o.cost > 1.0") == over);
    /* each one logged with its cost against the cap */
    CHECK(tu_query(db, "SELECT count(*) FROM events WHERE message LIKE '%over_budget (cost %"
                       "above the cap 1;%'") == over);
    /* blind to the cap, the first run ran alone: the second started after it ended */
    CHECK(tu_query(db, "SELECT (SELECT started FROM attempts WHERE run_id = 2) >= "
                       "(SELECT ended FROM attempts WHERE run_id = 1)") == 1);

    /* rebuilt from the store: the cap, and the over-budget runs as cost-only observations */
    carbs *cb = rebuild(db, "cap");
    CHECK(cb != NULL);
    if (!cb)
        return;
    CHECK(carbs_get_options(cb)->max_suggestion_cost == 1.0);
    CHECK((long long)carbs_n_cost_observations(cb) == over);
    CHECK((long long)carbs_n_observations(cb) == obs);
    int any_failed = 0;
    for (size_t i = 0; i < carbs_n_observations(cb); i++) {
        int f = 0;
        carbs_get_observation(cb, i, NULL, NULL, NULL, &f);
        any_failed |= f;
    }
    CHECK(!any_failed); /* none became a failure for the success model */
    for (size_t i = 0; i < carbs_n_cost_observations(cb); i++) {
        double x[2], cost;
        CHECK_ST(carbs_get_cost_observation(cb, i, x, &cost), ST_OK);
        /* the reported cost: the whole run's, or a step record's when it was stopped before
         * its end (a slower machine), above the cap either way */
        CHECK(cost > 1.0 && cost <= pow(2.0, x[1]) * (1 + 1e-12));
    }
    carbs_destroy(cb);

    /* an older store kept a refusal's cost only as the run's predicted cost */
    exec_sql(db, "UPDATE observations SET cost = NULL WHERE run_id IN (SELECT id FROM runs "
                 "WHERE failure = 3); UPDATE runs SET predicted_cost = 4.0 WHERE failure = 3");
    cb = rebuild(db, "cap");
    CHECK(cb && (long long)carbs_n_cost_observations(cb) == over);
    for (size_t i = 0; cb && i < carbs_n_cost_observations(cb); i++) {
        double cost;
        carbs_get_cost_observation(cb, i, NULL, &cost);
        CHECK(cost == 4.0);
    }
    carbs_destroy(cb);
}

/* With a cost expression the optimizer holds the cap itself: nothing is refused, nothing
 * launched above it, though the centre (x = 0, 2^0 = 1) sits on the cap. */
static void test_expr_never_refused(void)
{
    const char *db = tu_path("capexpr.db");
    runner_config *c = tu_config("capexpr", "--steps, '2', --cost, '0.5'",
                                 "budget: {runs: 10, max_cost_per_run: 1.0}\nparallel: 2\n");
    char *t = c ? strdup(c->text) : NULL;
    char *p = t ? strstr(t, "cost: {metric: flops}") : NULL;
    char text[4096];
    CHECK(p != NULL);
    if (!p)
        return;
    *p = '\0';
    snprintf(text, sizeof(text), "%scost: {metric: flops, expr: '2^{x}'}%s", t,
             p + strlen("cost: {metric: flops}"));
    free(t);
    runner_config_destroy(c);
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_config_load_string(text, strlen(text), "capexpr", &c, em), ST_OK);
    CHECK_ST(tu_sweep(db, c, NULL, NULL), ST_OK);
    runner_config_destroy(c);
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE failure = 3") == 0);
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE n_attempts = 1") == 10);
    /* x from the blob: no run launched with 2^x above 1, i.e. x > 0 */
    sqlite3 *h = NULL;
    CHECK(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    sqlite3_stmt *st = NULL;
    int above = 0, n = 0;
    if (sqlite3_prepare_v2(h, "SELECT x FROM runs", -1, &st, NULL) == SQLITE_OK)
        while (sqlite3_step(st) == SQLITE_ROW) {
            const double *x = sqlite3_column_blob(st, 0);
            above += pow(2.0, x[0]) > 1.0;
            n++;
        }
    sqlite3_finalize(st);
    sqlite3_close(h);
    CHECK(n == 10 && above == 0);
}

static void test_kinds(void)
{
    CHECK(!runner_failure_is_hyperparameter(RUNNER_FAIL_OVER_BUDGET));
    CHECK(runner_failure_is_hyperparameter(RUNNER_FAIL_DIVERGED));
    CHECK(runner_failure_is_hyperparameter(RUNNER_FAIL_OOM));
}

int main(int argc, char **argv)
{
    (void)argc;
    st_global_init();
    tu_init(argv[0]);
    test_kinds();
    test_over_budget_cost_only();
    test_expr_never_refused();
    tu_cleanup();
    st_global_cleanup();
    return check_summary("runner.costcap");
}
