/*
 * test_runner_sweep.c — end-to-end sweeps on the fake trainer: successes observed once each,
 * every failure kind classified (crash, signal, hang, diverge, OOM, garbage, no final record,
 * wall timeout, cost cap while running; none before launch with a cost expression), retries with
 * backoff, process-group kills, the metrics file, graceful stop and resume, export, ask/tell, and a
 * sweep with 30% crashing, 10% hanging and 10% diverging runs that still completes its budget.
 * The failure paths run twice: with supervisors forked from the controller (the library's
 * default) and started as scaletune-supervise (the CLI's), whose command line round-trips.
 */
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <jansson.h>

#include "runner/runner_int.h"
#include "tests/runner/runner_test_util.h"

/* A store whose attempts table is gone (found by fuzz/fuzz_store.c: the export's error path
 * freed a run's params twice): the export fails with a status and frees everything once. */
static void export_damaged(const char *db)
{
    sqlite3 *h = NULL;
    CHECK(sqlite3_open(db, &h) == SQLITE_OK);
    CHECK(sqlite3_exec(h, "ALTER TABLE attempts RENAME TO attempts_gone", NULL, NULL, NULL) ==
          SQLITE_OK);
    sqlite3_close(h);
    runner_store *s = NULL;
    char em[ST_ERRMSG_MAX];
    if (runner_store_open(db, &s, em) != ST_OK) {
        CHECK(!"the damaged store still opens");
        return;
    }
    char *js = NULL;
    CHECK(runner_store_export_json(s, NULL, &js) != ST_OK);
    CHECK(js == NULL);
    runner_store_close(s);
}

static void test_success(void)
{
    const char *db = tu_path("ok.db");
    runner_config *c = tu_config("ok", "--steps, '3'",
                                 "budget: {runs: 6}\nparallel: 2\n"
                                 "optimizer: {num_random_samples: 3}\n");
    int fin = 0;
    CHECK_ST(tu_sweep(db, c, NULL, &fin), ST_OK);
    CHECK(fin);
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE status = 2") == 6);
    CHECK(tu_query(db, "SELECT count(*) FROM observations") == 6);
    CHECK(tu_query(db, "SELECT count(*) FROM attempts WHERE state = 'done'") == 6);
    CHECK(tu_query(db, "SELECT count(*) FROM metric_points WHERE event = 3") == 6);
    /* the objective is the trainer's 1 + (x - .5)^2 + (y - .5)^2, recomputed from x */
    runner_store *s = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    char *js = NULL;
    CHECK_ST(runner_store_export_json(s, NULL, &js), ST_OK);
    json_error_t je;
    json_t *root = js ? json_loads(js, 0, &je) : NULL;
    CHECK(root != NULL);
    json_t *runs = json_object_get(root, "runs");
    CHECK(json_array_size(runs) == 6);
    for (size_t i = 0; i < json_array_size(runs); i++) {
        json_t *r = json_array_get(runs, i);
        double x = json_number_value(json_object_get(json_object_get(r, "params"), "x"));
        double y = json_number_value(json_object_get(json_object_get(r, "params"), "y"));
        CHECK_REL(json_number_value(json_object_get(r, "objective")),
                  1 + (x - .5) * (x - .5) + (y - .5) * (y - .5), 1e-12);
        CHECK_REL(json_number_value(json_object_get(r, "cost")), 4, 0);
        CHECK(!strcmp(json_string_value(json_object_get(r, "status")), "succeeded"));
        CHECK(json_integer_value(json_object_get(r, "suggestion_id")) == (json_int_t)i + 1);
        CHECK(json_array_size(json_object_get(r, "attempts")) == 1);
        /* N and D: the fake trainer's final record says params 1000, tokens 20000 */
        CHECK(json_number_value(json_object_get(r, "N")) == 1000);
        CHECK(json_number_value(json_object_get(r, "D")) == 20000);
    }
    json_decref(root);
    st_free(js);
    char *csv = NULL;
    CHECK_ST(runner_store_export_csv(s, "ok", &csv), ST_OK);
    const char *head = "suggestion_id,status,failure,objective,cost,attempts,x,y,N,D,final.";
    CHECK(csv && !strncmp(csv, head, strlen(head)));
    /* every final-record field is a column, and row 1 carries N, D and the cost field */
    CHECK(csv && strstr(csv, ",final.val_loss") && strstr(csv, ",final.flops") &&
          strstr(csv, ",final.params") && strstr(csv, ",final.tokens"));
    CHECK(csv && strstr(csv, "\n1,succeeded,none,") && strstr(csv, ",1000,20000,"));
    st_free(csv);
    runner_status stt;
    CHECK_ST(runner_store_status(s, NULL, &stt), ST_OK);
    CHECK(stt.n_runs == 6 && stt.n_by_status[RUNNER_RUN_SUCCEEDED] == 6 && stt.has_best);
    CHECK_REL(stt.spent_cost, 24, 1e-12);
    CHECK(!stt.controller_alive);
    size_t np = 0;
    CHECK_ST(runner_store_pareto(s, NULL, 0, &np, NULL, NULL, NULL), ST_OK);
    CHECK(np == 1); /* equal costs: only the best is on the front */
    /* launching the same name again is refused */
    runner *r = NULL;
    runner_options o = runner_options_default();
    o.db_path = db;
    CHECK_ST(runner_launch(c, &o, &r, em), ST_ESTATE);
    runner_store_close(s);
    runner_config_destroy(c);
    export_damaged(db);
}

/* One sweep whose every attempt behaves as `args` says; checks the run's final state. */
static void check_kind(const char *name, const char *args, const char *extra,
                       runner_run_status want_status, runner_failure want_failure,
                       long long want_attempts)
{
    char sql[256], full[1024];
    const char *db = tu_path("kinds.db");
    snprintf(full, sizeof(full),
             "budget: {runs: 1, max_cost_per_run: 1000}\nretries: {infrastructure: 1, "
             "backoff_seconds: 0.01}\n%s",
             extra);
    runner_config *c = tu_config(name, args, full);
    CHECK(c != NULL);
    if (!c)
        return;
    CHECK_ST(tu_sweep(db, c, NULL, NULL), ST_OK);
    snprintf(sql, sizeof(sql),
             "SELECT r.status * 1000 + r.failure FROM runs r JOIN sweeps s ON s.id = r.sweep_id "
             "WHERE s.name = '%s'",
             name);
    long long got = tu_query(db, sql);
    if (got != (long long)want_status * 1000 + want_failure)
        fprintf(stderr, "  %s: got status %lld failure %lld\n", name, got / 1000, got % 1000);
    CHECK(got == (long long)want_status * 1000 + want_failure);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM attempts a JOIN runs r ON r.id = a.run_id JOIN sweeps s ON "
             "s.id = r.sweep_id WHERE s.name = '%s'",
             name);
    CHECK(tu_query(db, sql) == want_attempts);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM observations o JOIN sweeps s ON s.id = o.sweep_id WHERE "
             "s.name = '%s'",
             name);
    int observed = want_status == RUNNER_RUN_SUCCEEDED || want_status == RUNNER_RUN_FAILED;
    CHECK(tu_query(db, sql) == observed);
    runner_config_destroy(c);
}

static void test_kinds(void)
{
    check_kind("k_crash", "--mode, crash", "", RUNNER_RUN_INFRA_FAILED, RUNNER_FAIL_EXIT, 2);
    check_kind("k_signal", "--mode, signal", "", RUNNER_RUN_INFRA_FAILED, RUNNER_FAIL_SIGNAL, 2);
    check_kind("k_halfway", "--mode, halfway", "", RUNNER_RUN_INFRA_FAILED, RUNNER_FAIL_SIGNAL, 2);
    check_kind("k_nofinal", "--mode, nofinal", "", RUNNER_RUN_INFRA_FAILED, RUNNER_FAIL_NO_FINAL,
               2);
    check_kind("k_exec", "--bogus-flag", "", RUNNER_RUN_INFRA_FAILED, RUNNER_FAIL_EXIT, 2);
    /* what is valid in a final record is kept: bytes that are not UTF-8, NaN and a negative
     * number in fields nobody reads (issue 21) */
    check_kind("k_badutf8", "--mode, badutf8", "", RUNNER_RUN_SUCCEEDED, RUNNER_FAIL_NONE, 1);
    check_kind("k_oddcost", "--mode, oddcost", "", RUNNER_RUN_SUCCEEDED, RUNNER_FAIL_NONE, 1);
    /* a required field there and invalid is the trainer's configuration error: not retried,
     * not observed, and the event quotes the line */
    check_kind("k_strobj", "--mode, strobjective", "", RUNNER_RUN_INFRA_FAILED,
               RUNNER_FAIL_BAD_FINAL, 1);
    check_kind("k_negcost", "--mode, negcost", "", RUNNER_RUN_INFRA_FAILED, RUNNER_FAIL_BAD_FINAL,
               1);
    CHECK(tu_query(tu_path("kinds.db"),
                   "SELECT count(*) FROM events WHERE message LIKE '%bad_final (''val_loss'' is "
                   "not a number in the final record: {\"event\": \"final\", \"val_loss\": "
                   "\"low\"%'") == 1);
    CHECK(tu_query(tu_path("kinds.db"),
                   "SELECT count(*) FROM events WHERE message LIKE '%bad_final (''flops'' is not "
                   "a positive number in the final record: %\"flops\": -1}%'") == 1);
    /* counted as what it is, a configuration error of the trainer, with the line */
    runner_store *bs = NULL;
    runner_status bst;
    memset(&bst, 0, sizeof(bst));
    CHECK_ST(runner_store_open(tu_path("kinds.db"), &bs, NULL), ST_OK);
    CHECK_ST(bs ? runner_store_status(bs, "k_negcost", &bst) : ST_EINTERNAL, ST_OK);
    CHECK(bst.n_bad_final == 1 && bst.n_by_status[RUNNER_RUN_INFRA_FAILED] == 1);
    CHECK(strstr(bst.bad_final, "bad_final ('flops' is not a positive number in the final "
                                "record: {") != NULL);
    CHECK_ST(bs ? runner_store_status(bs, "k_crash", &bst) : ST_EINTERNAL, ST_OK);
    CHECK(bst.n_bad_final == 0 && bst.bad_final[0] == '\0');
    runner_store_close(bs);
    check_kind("k_hang", "--mode, hang",
               "timeouts: {no_metrics_seconds: 0.3, kill_grace_seconds: 0.2}\n",
               RUNNER_RUN_INFRA_FAILED, RUNNER_FAIL_HANG, 2);
    check_kind("k_diverge", "--mode, diverge", "", RUNNER_RUN_FAILED, RUNNER_FAIL_DIVERGED, 1);
    check_kind("k_divexit", "--mode, divergeexit", "", RUNNER_RUN_FAILED, RUNNER_FAIL_DIVERGED, 1);
    check_kind("k_oom", "--mode, oom", "", RUNNER_RUN_FAILED, RUNNER_FAIL_OOM, 1);
    check_kind("k_nan", "--loss, nan", "", RUNNER_RUN_FAILED, RUNNER_FAIL_DIVERGED, 1);
    check_kind("k_garbage", "--mode, garbage", "", RUNNER_RUN_SUCCEEDED, RUNNER_FAIL_NONE, 1);
    check_kind("k_file", "--metrics-file", "", RUNNER_RUN_SUCCEEDED, RUNNER_FAIL_NONE, 1);
    check_kind("k_wall", "--steps, '100', --sleep-ms, '50'",
               "timeouts: {wall_seconds: 0.4, kill_grace_seconds: 0.2}\n", RUNNER_RUN_FAILED,
               RUNNER_FAIL_WALL_TIMEOUT, 1);
    /* reported cost passes the cap while running: stopped and observed as over budget */
    check_kind("k_costcap", "--steps, '50', --sleep-ms, '20', --cost, '5000'", "",
               RUNNER_RUN_FAILED, RUNNER_FAIL_OVER_BUDGET, 1);
    const char *db = tu_path("kinds.db");
    CHECK(tu_query(db, "SELECT count(*) FROM attempts a JOIN runs r ON r.id = a.run_id JOIN "
                       "sweeps s ON s.id = r.sweep_id WHERE s.name = 'k_garbage' AND "
                       "a.n_garbage = 3") == 1);
    /* the cost cap kill happened early: far fewer than 50 steps were recorded */
    CHECK(tu_query(db, "SELECT count(*) FROM metric_points m JOIN attempts a ON a.id = "
                       "m.attempt_id JOIN runs r ON r.id = a.run_id JOIN sweeps s ON s.id = "
                       "r.sweep_id WHERE s.name = 'k_costcap'") < 30);
}

/* With a cost expression the optimizer never proposes a run above the cap (it checks the
 * expression itself), so nothing is refused and nothing above the cap starts. */
static void test_cost_expr(void)
{
    const char *db = tu_path("expr.db");
    runner_config *c = tu_config("expr", "--steps, '2', --cost, '0.5'",
                                 "budget: {runs: 8, max_cost_per_run: 1.0}\n"
                                 "optimizer: {num_random_samples: 8}\n");
    /* cost.expr cannot be given through tu_config's fixed cost line: patch the text */
    char *t = strdup(c->text);
    char *p = strstr(t, "cost: {metric: flops}");
    char text[4096];
    *p = '\0';
    snprintf(text, sizeof(text), "%scost: {metric: flops, expr: '2^{x}'}%s", t,
             p + strlen("cost: {metric: flops}"));
    free(t);
    runner_config_destroy(c);
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_config_load_string(text, strlen(text), "expr", &c, em), ST_OK);
    CHECK_ST(tu_sweep(db, c, NULL, NULL), ST_OK);
    long long refused = tu_query(db, "SELECT count(*) FROM runs WHERE failure = 3 AND "
                                     "n_attempts = 0");
    long long launched_above =
        tu_query(db, "SELECT count(*) FROM runs WHERE n_attempts > 0 AND predicted_cost > 1.0");
    CHECK(refused == 0);        /* x > 0 was half of 8 random draws around 0 before the cap */
    CHECK(launched_above == 0); /* and nothing above the cap ever started */
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE n_attempts = 1") == 8);
    runner_config_destroy(c);
}

/* Killing a run takes its whole process tree. */
static void test_group_kill(void)
{
    const char *db = tu_path("group.db");
    char env[512];
    snprintf(env, sizeof(env),
             "budget: {runs: 1}\nretries: 0\n"
             "timeouts: {no_metrics_seconds: 0.3, kill_grace_seconds: 0.1}\n"
             "env: {FAKE_CHILD_PIDS: '%s'}\n",
             tu_path("children.txt"));
    runner_config *c = tu_config("group", "--mode, hang, --child", env);
    CHECK_ST(tu_sweep(db, c, NULL, NULL), ST_OK);
    FILE *f = fopen(tu_path("children.txt"), "r");
    long pid = 0;
    CHECK(f && fscanf(f, "%ld", &pid) == 1);
    if (f)
        fclose(f);
    /* the supervisor kills the whole group as the trainer ends; give the kernel a moment */
    int gone = 0;
    for (int i = 0; i < 100 && !gone; i++) {
        gone = pid > 0 && !tu_alive((pid_t)pid);
        if (!gone)
            usleep(10000);
    }
    CHECK(gone);
    runner_config_destroy(c);
}

/* A stop request ends the loop with runs `stopped`; resume relaunches and finishes them. */
static void test_stop_resume(void)
{
    const char *db = tu_path("stop.db");
    runner_config *c = tu_config("stop", "--steps, '40', --sleep-ms, '25'",
                                 "budget: {runs: 3}\nparallel: 2\n"
                                 "timeouts: {kill_grace_seconds: 0.2}\n");
    runner_options o = runner_options_default();
    o.db_path = db;
    o.poll_seconds = 0.005;
    o.supervisor = tu_supervisor;
    volatile sig_atomic_t stop = 0;
    o.stop_flag = &stop;
    runner *r = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_launch(c, &o, &r, em), ST_OK);
    int done = 0;
    for (int i = 0; i < 20 && !done; i++) {
        CHECK_ST(runner_step(r, &done), ST_OK);
        usleep(5000);
    }
    /* a second controller is refused while the first holds the lease */
    pid_t child = fork();
    if (child == 0) {
        runner *r2 = NULL;
        _exit(runner_resume("stop", &o, &r2, em) == ST_EBUSY ? 0 : 1);
    }
    int wst = 0;
    waitpid(child, &wst, 0);
    CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    stop = 1;
    CHECK_ST(runner_run(r), ST_OK);
    CHECK(!runner_finished(r));
    runner_destroy(r);
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE status = 5") == 2);
    CHECK(tu_query(db, "SELECT count(*) FROM observations") == 0);
    int fin = 0;
    CHECK_ST(tu_sweep(db, NULL, "stop", &fin), ST_OK);
    CHECK(fin);
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE status = 2") == 3);
    CHECK(tu_query(db, "SELECT count(*) FROM observations") == 3);
    CHECK(tu_query(db, "SELECT count(*) FROM attempts") == 5);
    /* the resumed controller registered the open runs under their run ids (carbs ids), and the
     * optimizer's next id came after them */
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE id <= 2 AND carbs_id = id") == 2);
    CHECK(tu_query(db, "SELECT carbs_id FROM runs WHERE id = 3") >= 3);
    runner_config_destroy(c);
}

static void test_ask_tell(void)
{
    const char *db = tu_path("ask.db");
    runner_config *c = tu_config("ask", "", "budget: {runs: 3}\n");
    runner_options o = runner_options_default();
    o.db_path = db;
    runner *r = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_launch(c, &o, &r, em), ST_OK);
    runner_destroy(r); /* records the sweep, releases the lease */
    runner_store *s = NULL;
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    uint64_t id1 = 0, id2 = 0;
    double x1[2], x2[2];
    CHECK_ST(runner_store_ask(s, "ask", &id1, x1, 2), ST_OK);
    CHECK_ST(runner_store_ask(s, "ask", &id2, x2, 2), ST_OK);
    CHECK(id1 == 1 && id2 == 2);
    CHECK(x1[0] != x2[0] || x1[1] != x2[1]);
    CHECK_ST(runner_store_tell(s, "ask", id1, 1.5, 2.0, 0), ST_OK);
    CHECK_ST(runner_store_tell(s, "ask", id1, 1.5, 2.0, 0), ST_ESTATE); /* exactly once */
    CHECK_ST(runner_store_tell(s, "ask", id2, NAN, NAN, 1), ST_OK);
    CHECK_ST(runner_store_tell(s, "ask", 99, 1, 1, 0), ST_ENOTFOUND);
    CHECK_ST(runner_store_tell(s, "ask", id2, 1, -1, 0), ST_EINVAL);
    uint64_t id3;
    CHECK_ST(runner_store_ask(s, "ask", &id3, x1, 2), ST_OK);
    CHECK_ST(runner_store_ask(s, "ask", &id3, x1, 2), ST_ERANGE); /* budget of 3 runs */
    CHECK(tu_query(db, "SELECT count(*) FROM observations") == 2);
    runner_store_close(s);
    runner_config_destroy(c);
}

/* 30% crash, 10% hang, 10% diverge (decided per attempt): the budget still completes. */
static void test_flaky(void)
{
    const char *db = tu_path("flaky.db");
    runner_config *c = tu_config("flaky",
                                 "--steps, '2', --chaos, '0.3,0.1,0.1', --chaos-key, "
                                 "'flaky-{_run}-{_attempt}'",
                                 "budget: {runs: 20}\nparallel: 2\n"
                                 "retries: {infrastructure: 4, backoff_seconds: 0.01}\n"
                                 "timeouts: {no_metrics_seconds: 0.3, kill_grace_seconds: 0.1}\n"
                                 "optimizer: {num_random_samples: 20}\n");
    int fin = 0;
    CHECK_ST(tu_sweep(db, c, NULL, &fin), ST_OK);
    CHECK(fin);
    CHECK(tu_query(db, "SELECT count(*) FROM runs") == 20);
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE status IN (0, 1, 5)") == 0);
    long long ok = tu_query(db, "SELECT count(*) FROM runs WHERE status = 2");
    long long div = tu_query(db, "SELECT count(*) FROM runs WHERE status = 3");
    if (!(ok >= 10 && div >= 1))
        fprintf(stderr, "  flaky: %lld succeeded, %lld diverged\n", ok, div);
    CHECK(ok >= 10 && div >= 1);
    CHECK(tu_query(db, "SELECT count(*) FROM attempts WHERE failure IN (6, 8)") >= 5);
    /* infrastructure failures are never observed; every succeeded/failed run exactly once */
    CHECK(tu_query(db, "SELECT count(*) FROM observations") == ok + div);
    CHECK(tu_query(db, "SELECT count(*) FROM observations o JOIN runs r ON r.id = o.run_id "
                       "WHERE r.status NOT IN (2, 3)") == 0);
    runner_config_destroy(c);
}

static int streak_finished; /* runner_finished after streak_sweep */

/* One sweep of 12 runs whose every attempt fails as `args` says; returns runner_run's status
 * and its message in `msg`. */
static st_status streak_sweep(const char *name, const char *args, const char *extra, char *msg)
{
    char full[512];
    snprintf(
        full, sizeof(full),
        "budget: {runs: 12}\nparallel: 2\nretries: {infrastructure: 2, backoff_seconds: 0%s}\n",
        extra);
    runner_config *c = tu_config(name, args, full);
    runner_options o = runner_options_default();
    o.db_path = tu_path("streak.db");
    o.poll_seconds = 0.005;
    runner *r = NULL;
    char em[ST_ERRMSG_MAX];
    st_status rc = c ? runner_launch(c, &o, &r, em) : ST_EINVAL;
    if (!rc)
        rc = runner_run(r);
    snprintf(msg, ST_ERRMSG_MAX, "%s", r ? runner_errmsg(r) : em);
    streak_finished = r ? runner_finished(r) : -1;
    runner_destroy(r);
    runner_config_destroy(c);
    return rc;
}

/* A trainer that can never work stops the sweep after 5 identical failures (not 12 runs x 3
 * attempts), with an error naming the failure; stop_after_identical: 0 turns it off; a sweep in
 * which a run worked is never stopped so (test_flaky: 30% crashes). */
static void test_streak(void)
{
    char msg[ST_ERRMSG_MAX];
    const char *db = tu_path("streak.db");
    CHECK_ST(streak_sweep("exit2", "--mode, 'exit:2'", "", msg), ST_EBACKEND);
    CHECK(strstr(msg, "the last 5 attempts all failed the same way (exit 2)") != NULL);
    CHECK(strstr(msg, "sweep resume") != NULL);
    CHECK(tu_query(db, "SELECT count(*) FROM attempts a JOIN runs r ON r.id = a.run_id JOIN "
                       "sweeps s ON s.id = r.sweep_id WHERE s.name = 'exit2'") <= 6);
    CHECK(tu_query(db, "SELECT count(*) FROM runs r JOIN sweeps s ON s.id = r.sweep_id WHERE "
                       "s.name = 'exit2' AND r.status = 1") == 0); /* nothing left running */
    CHECK_ST(streak_sweep("nofinal", "--mode, 'nofinal'", "", msg), ST_EBACKEND);
    CHECK(strstr(msg, "failed the same way (exit 0 without a final record") != NULL);
    /* exit 127 and a final record without the cost: configuration errors, one attempt per
     * run (not retried), the stderr tail in the run's event; then the streak stops the sweep */
    CHECK_ST(streak_sweep("exit127", "--mode, 'exit:127'", "", msg), ST_EBACKEND);
    CHECK(strstr(msg, "127: the program was not found") != NULL);
    CHECK(!streak_finished); /* stopped with runs left: not finished */
    CHECK(tu_query(db, "SELECT count(*) FROM attempts a JOIN runs r ON r.id = a.run_id JOIN "
                       "sweeps s ON s.id = r.sweep_id WHERE s.name = 'exit127' AND "
                       "r.n_infra > 0") == 0);
    CHECK(tu_query(db, "SELECT count(*) FROM runs r JOIN sweeps s ON s.id = r.sweep_id WHERE "
                       "s.name = 'exit127' AND r.status = 4") >= 4);
    CHECK(tu_query(db, "SELECT count(*) FROM events e JOIN sweeps s ON s.id = e.sweep_id WHERE "
                       "s.name = 'exit127' AND e.message LIKE '%stderr ends: fake_trainer: exit "
                       "127 as asked%'") >= 4);
    CHECK_ST(streak_sweep("nocost", "--mode, 'nocost'", "", msg), ST_EBACKEND);
    CHECK(strstr(msg, "has no 'flops'") != NULL);
    CHECK(tu_query(db, "SELECT count(*) FROM attempts a JOIN runs r ON r.id = a.run_id JOIN "
                       "sweeps s ON s.id = r.sweep_id WHERE s.name = 'nocost' AND "
                       "(r.n_infra > 0 OR a.failure NOT IN (12, 16))") ==
          0); /* 12: stopped by the streak */
    /* off: the whole budget is spent, every run infra_failed, and runner_run is ST_OK */
    CHECK_ST(streak_sweep("off", "--mode, 'exit:2'", ", stop_after_identical: 0", msg), ST_OK);
    CHECK(tu_query(db, "SELECT count(*) FROM runs r JOIN sweeps s ON s.id = r.sweep_id WHERE "
                       "s.name = 'off' AND r.status = 4") == 12);
}

/* scaletune-supervise's command line carries the spec whole, and a bad one is refused. */
static void test_supervise_args(void)
{
    char *argv[] = {"/bin/echo", "--", "--dir", "a b", NULL};
    char *env[] = {"A=1", "B=x=y", NULL};
    runner_job_spec spec = {argv, env, "/w d", "/tmp/at", NULL, NULL}, back;
    char **v = runner_supervise_args("/p/scaletune-supervise", &spec);
    CHECK(v != NULL);
    if (!v)
        return;
    int n = 0;
    while (v[n])
        n++;
    CHECK(n == 14 && !strcmp(v[0], "/p/scaletune-supervise"));
    CHECK(runner_supervise_parse(n, v, &back) == 0);
    CHECK(!strcmp(back.dir, "/tmp/at") && back.workdir && !strcmp(back.workdir, "/w d"));
    CHECK(back.env && back.env[0] && !strcmp(back.env[0], "A=1") && back.env[1] &&
          !strcmp(back.env[1], "B=x=y") && !back.env[2]);
    CHECK(!strcmp(back.argv[0], "/bin/echo") && !strcmp(back.argv[1], "--") &&
          !strcmp(back.argv[2], "--dir") && !strcmp(back.argv[3], "a b") && !back.argv[4]);
    free((void *)back.env);
    free(v);
    spec.workdir = NULL;
    spec.env = NULL;
    v = runner_supervise_args("sv", &spec);
    CHECK(v && runner_supervise_parse(8, v, &back) == 0 && !back.workdir && back.env &&
          !back.env[0]);
    if (v && back.env)
        free((void *)back.env);
    free(v);
    char *no_dir[] = {"sv", "--", "/bin/true", NULL};
    char *no_argv[] = {"sv", "--dir", "d", "--", NULL};
    char *bad_flag[] = {"sv", "--dir", "d", "--what", "x", "--", "/bin/true", NULL};
    CHECK(runner_supervise_parse(3, no_dir, &back) != 0);
    CHECK(runner_supervise_parse(4, no_argv, &back) != 0);
    CHECK(runner_supervise_parse(7, bad_flag, &back) != 0);
}

int main(int argc, char **argv)
{
    (void)argc;
    st_global_init();
    tu_init(argv[0]);
    test_success();
    test_kinds();
    test_cost_expr();
    test_group_kill();
    test_stop_resume();
    test_ask_tell();
    test_flaky();
    test_streak();
    tu_cleanup();

    /* again with the CLI's supervisor program, in a directory of their own */
    test_supervise_args();
    tu_init(argv[0]);
    tu_supervisor = tu_supervise_program;
    test_success();
    test_kinds();
    test_group_kill();
    test_stop_resume();
    test_flaky();
    /* a supervisor program that is not there: each attempt fails to launch, is retried, and
     * the run ends as an infrastructure failure */
    tu_supervisor = "/nonexistent/scaletune-supervise";
    check_kind("k_nosup", "", "", RUNNER_RUN_INFRA_FAILED, RUNNER_FAIL_LAUNCH, 2);
    tu_supervisor = NULL;
    tu_cleanup();
    st_global_cleanup();
    return check_summary("runner.sweep");
}
