/*
 * test_runner_branches.c — cooldown branches the controller spawns (the `branches:` block,
 * runner/branch.c), black-box with the fake trainer: it writes a checkpoint file per step and,
 * given --branch-from, runs K steps from one and ends at loss + 1/(s + K), its cost its K steps'
 * share only. Checked: each succeeded run gets one branch per fraction, at the checkpoint and
 * decay steps the rule gives (closed form); a branch runs its parent's command with the parent's
 * id as {_run}; its objective and cost are its own; the optimizer, the budget's runs, the best
 * run and the front never see branches; a deterministic sweep with branches is the same twice
 * whatever the finish order; a controller stopped and resumed makes no branch twice; a branch
 * that fails, or a parent without checkpoints, never stops the sweep; the sweep-file errors.
 */
#include "tests/runner/runner_test_util.h"

#include <math.h>
#include <time.h>

#include "runner/runner_int.h"

#define STEPS "10" /* each run's planned steps (the fake's config record) */

/* The fake trainer's arguments for a run that can be branched: 10 steps, a config record, a
 * checkpoint per step in its run directory, and run 1 (by {_run}) 0.5 worse: a branch that got
 * its own id as {_run} would miss that. */
#define PARENT_ARGS                                                                                \
    "--steps, '" STEPS "', --eval-every, '5', --checkpoint, '{_checkpoint}-{{step}}', "            \
    "--add-if, '{_run}', '1', '0.5'"

static const char *branches_block(const char *at, const char *ck)
{
    static char b[512];
    snprintf(b, sizeof(b),
             "branches:\n"
             "  at: %s\n"
             "  decay_fraction: 0.2\n"
             "  args: [--branch-from, '%s', --decay-steps, '{_decay_steps}', --parent-run, "
             "'{_parent_run}']\n",
             at, ck);
    return b;
}

static runner_config *config(const char *name, const char *args, const char *more)
{
    char extra[1024];
    snprintf(extra, sizeof(extra), "%s%s",
             branches_block("[0.5, 0.9]", "{_parent_checkpoint}-{_branch_step}"), more);
    return tu_config(name, args, extra);
}

/* The rule of runner/branch.c in closed form for S = 10 and d = 0.2: f = 0.5 ends at
 * floor(0.8 * 0.5 * 10) = 4 + round(4 * 0.25) = 1 step; f = 0.9 at 7 + round(1.75) = 2. */
static void check_branch_rows(const char *db, long long n_parents)
{
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE parent_run IS NOT NULL") == 2 * n_parents);
    CHECK(tu_query(db, "SELECT count(*) FROM runs b JOIN runs p ON p.id = b.parent_run WHERE "
                       "NOT ((b.branch_step = 4 AND b.decay_steps = 1) OR (b.branch_step = 7 AND "
                       "b.decay_steps = 2)) OR p.status != 2 OR p.parent_run IS NOT NULL") == 0);
    /* one of each per parent */
    CHECK(tu_query(db, "SELECT count(*) FROM (SELECT parent_run FROM runs WHERE parent_run IS "
                       "NOT NULL GROUP BY parent_run HAVING count(*) != 2 OR count(DISTINCT "
                       "branch_step) != 2)") == 0);
    /* its own loss at s + K steps: the parent's (the fake's final, 0.5 more for run 1 in both)
     * plus 1/(s + K); its own cost, K of the parent's 10 steps; the parent's x */
    CHECK(tu_query(db, "SELECT count(*) FROM runs b JOIN runs p ON p.id = b.parent_run WHERE "
                       "b.status = 2 AND abs(b.objective - p.objective - 1.0 / (b.branch_step + "
                       "b.decay_steps)) < 1e-12 AND abs(b.cost - p.cost * b.decay_steps / 10.0) < "
                       "1e-12 AND b.x = p.x") == 2 * n_parents);
    /* the final record names its parent ({_parent_run}) */
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE parent_run IS NOT NULL AND "
                       "json_extract(final, '$.parent_run') = parent_run AND "
                       "json_extract(final, '$.branch') = 1") == 2 * n_parents);
    /* never the optimizer's: no observation of a branch */
    CHECK(tu_query(db, "SELECT count(*) FROM observations o JOIN runs r ON r.id = o.run_id "
                       "WHERE r.parent_run IS NOT NULL") == 0);
}

static void test_sweep(int det)
{
    char name[32], db[32], more[128];
    snprintf(name, sizeof(name), "br-%d", det);
    snprintf(db, sizeof(db), "br-%d.db", det);
    snprintf(more, sizeof(more), "budget: {runs: 6}\nparallel: 2\nseed: 3\n%s",
             det ? "" : "deterministic: false\n");
    runner_config *c = config(name, PARENT_ARGS, more);
    CHECK(c != NULL);
    if (!c)
        return;
    CHECK(c->n_br_at == 2 && c->br_at[1] == 0.9 && c->br_decay == 0.2 && c->br_argc == 6);
    int fin = 0;
    const char *p = tu_path(db);
    CHECK_ST(tu_sweep(p, c, NULL, &fin), ST_OK);
    CHECK(fin);
    runner_config_destroy(c);
    CHECK(tu_query(p, "SELECT count(*) FROM runs WHERE parent_run IS NULL") == 6);
    long long n_ok = tu_query(p, "SELECT count(*) FROM runs WHERE parent_run IS NULL AND "
                                 "status = 2");
    CHECK(n_ok == 6);
    check_branch_rows(p, n_ok);
    CHECK(tu_query(p, "SELECT count(*) FROM observations") == 6);

    /* status: branches apart; the best run is a run, though a branch's loss is lower */
    runner_store *s = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_store_open(p, &s, em), ST_OK);
    runner_status st;
    CHECK_ST(runner_store_status(s, name, &st), ST_OK);
    CHECK(st.n_runs == 6 && st.n_by_status[RUNNER_RUN_SUCCEEDED] == 6);
    CHECK(st.n_branches == 12 && st.n_branch_by_status[RUNNER_RUN_SUCCEEDED] == 12);
    CHECK(st.has_best && tu_query(p, "SELECT count(*) FROM runs WHERE parent_run IS NULL") > 0);
    char q[160];
    snprintf(q, sizeof(q), "SELECT parent_run IS NULL FROM runs WHERE id = %llu",
             (unsigned long long)st.best_run);
    CHECK(tu_query(p, q) == 1);
    /* the total cost: the runs' and the branches' own */
    CHECK(fabs(st.spent_cost - 6 * 11.0 - 6 * 11.0 * 3 / 10) < 1e-9);
    size_t n_front = 0;
    uint64_t ids[32];
    CHECK_ST(runner_store_pareto(s, name, 32, &n_front, ids, NULL, NULL), ST_OK);
    for (size_t i = 0; i < n_front; i++) {
        snprintf(q, sizeof(q), "SELECT parent_run IS NULL FROM runs WHERE id = %llu",
                 (unsigned long long)ids[i]);
        CHECK(tu_query(p, q) == 1);
    }
    /* the typed read names each branch's parent from its row */
    runner_sweep *w = NULL;
    CHECK_ST(runner_store_read_sweep(s, name, &w), ST_OK);
    size_t n_br = 0;
    for (size_t i = 0; w && i < w->n_runs; i++)
        n_br += w->runs[i].parent != 0;
    CHECK(n_br == 12);
    runner_sweep_free(w);
    char *json = NULL;
    CHECK_ST(runner_store_export_json(s, name, &json), ST_OK);
    CHECK(json && strstr(json, "\"parent_run\"") && strstr(json, "\"decay_steps\""));
    free(json);
    runner_store_close(s);
}

/* Two deterministic sweeps with branches, random step times: the same store, row for row. */
static void test_deterministic(void)
{
    const char *dbs[2] = {"det-a.db", "det-b.db"};
    for (int i = 0; i < 2; i++) {
        runner_config *c = config("br-det", PARENT_ARGS ", --sleep-rand-ms, '20'",
                                  "budget: {runs: 8}\nparallel: 2\nseed: 5\n"
                                  "optimizer: {num_random_samples: 2}\n");
        CHECK(c != NULL);
        if (!c)
            return;
        int fin = 0;
        CHECK_ST(tu_sweep(tu_path(dbs[i]), c, NULL, &fin), ST_OK);
        CHECK(fin);
        runner_config_destroy(c);
    }
    char sql[4400];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM runs a LEFT JOIN b.runs c ON a.id = c.id WHERE c.id IS NULL OR "
             "a.x IS NOT c.x OR a.status IS NOT c.status OR a.objective IS NOT c.objective OR "
             "a.parent_run IS NOT c.parent_run OR a.branch_step IS NOT c.branch_step");
    sqlite3 *h = NULL;
    long long diff = -1, n = -1;
    if (sqlite3_open_v2(tu_path(dbs[0]), &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        char at[4300];
        snprintf(at, sizeof(at), "ATTACH '%s' AS b", tu_path(dbs[1]));
        sqlite3_stmt *st = NULL;
        if (sqlite3_exec(h, at, NULL, NULL, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            diff = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        if (sqlite3_prepare_v2(h,
                               "SELECT (SELECT count(*) FROM runs) - (SELECT count(*) FROM "
                               "b.runs)",
                               -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    if (diff != 0 || n != 0)
        fprintf(stderr, "  deterministic with branches: %lld rows differ, %lld more rows\n", diff,
                n);
    CHECK(diff == 0 && n == 0);
    check_branch_rows(tu_path(dbs[0]), 8);
    /* observations in suggestion order, of runs only */
    CHECK(tu_query(tu_path(dbs[0]), "SELECT count(*) FROM observations a JOIN observations b ON "
                                    "a.id < b.id AND a.run_id > b.run_id") == 0);
}

/* A controller that goes away mid-sweep: the next one makes no branch twice (both release
 * modes). */
static void test_resume(int det)
{
    char name[32], dbn[32];
    snprintf(name, sizeof(name), "br-resume-%d", det);
    snprintf(dbn, sizeof(dbn), "resume-%d.db", det);
    runner_config *c = config(name, PARENT_ARGS ", --sleep-ms, '20'",
                              det ? "budget: {runs: 6}\nparallel: 2\n"
                                  : "budget: {runs: 6}\nparallel: 2\ndeterministic: false\n");
    CHECK(c != NULL);
    if (!c)
        return;
    const char *db = tu_path(dbn);
    runner_options o = runner_options_default();
    o.db_path = db;
    o.poll_seconds = 0.005;
    runner *r = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_launch(c, &o, &r, em), ST_OK);
    int done = 0;
    for (int i = 0; i < 200000 && !done &&
                    tu_query(db, "SELECT count(*) FROM runs WHERE parent_run IS NOT NULL") < 2;
         i++) {
        CHECK_ST(runner_step(r, &done), ST_OK);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    CHECK(!done);
    runner_destroy(r); /* its attempts run on; the next controller adopts them */
    runner_config_destroy(c);
    int fin = 0;
    CHECK_ST(tu_sweep(db, NULL, name, &fin), ST_OK);
    CHECK(fin);
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE parent_run IS NULL AND status = 2") == 6);
    check_branch_rows(db, 6);
}

/* A branch whose checkpoint is not there fails (not retried past the rule, never observed) and
 * the sweep ends; a parent without checkpoint records gets no branch. */
static void test_failures(void)
{
    char extra[1024];
    snprintf(extra, sizeof(extra), "%sbudget: {runs: 3}\nretries: {infrastructure: 0}\n",
             branches_block("[0.5]", "{_parent_checkpoint}-missing"));
    runner_config *c = tu_config("br-fail", PARENT_ARGS, extra);
    CHECK(c != NULL);
    int fin = 0;
    const char *db = tu_path("fail.db");
    if (c)
        CHECK_ST(tu_sweep(db, c, NULL, &fin), ST_OK);
    CHECK(fin);
    runner_config_destroy(c);
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE parent_run IS NULL AND status = 2") == 3);
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE parent_run IS NOT NULL AND status = 4") ==
          3);
    CHECK(tu_query(db, "SELECT count(*) FROM observations") == 3);

    snprintf(extra, sizeof(extra), "%sbudget: {runs: 2}\n",
             branches_block("[0.5]", "{_parent_checkpoint}-{_branch_step}"));
    c = tu_config("br-nock", "--steps, '10', --eval-every, '5'", extra);
    CHECK(c != NULL);
    db = tu_path("nock.db");
    fin = 0;
    if (c)
        CHECK_ST(tu_sweep(db, c, NULL, &fin), ST_OK);
    CHECK(fin);
    runner_config_destroy(c);
    CHECK(tu_query(db, "SELECT count(*) FROM runs") == 2);
}

static void config_fails(const char *block, const char *args, const char *want)
{
    char em[ST_ERRMSG_MAX], text[2048];
    snprintf(
        text, sizeof(text),
        "name: bad\ncommand: [t, '--x', '{x}'%s]\nobjective: {metric: loss}\n"
        "budget: {runs: 3}\nparameters:\n  x: {space: linear, min: 0, max: 1, center: 0.5}\n%s",
        args, block);
    runner_config *c = NULL;
    CHECK_ST(runner_config_load_string(text, strlen(text), "bad.yaml", &c, em), ST_EINVAL);
    if (!strstr(em, want))
        fprintf(stderr, "  want '%s' in: %s\n", want, em);
    CHECK(c == NULL && strstr(em, want) && strstr(em, "bad.yaml:"));
}

static void test_config_errors(void)
{
    config_fails("branches: {at: [0.5, 1.2], args: [--b]}\n", "", "branches.at");
    config_fails("branches: {at: [], args: [--b]}\n", "", "branches.at");
    config_fails("branches: {args: [--b]}\n", "", "branches.at: missing");
    config_fails("branches: {at: [0.5]}\n", "", "branches.args: missing");
    config_fails("branches: {at: [0.5], args: [--b], decay_fraction: 1}\n", "",
                 "branches.decay_fraction");
    config_fails("branches: {at: [0.5], args: [--b], every: 3}\n", "", "unknown key 'every'");
    config_fails("branches: {at: [0.5], args: ['{_nope}']}\n", "", "unknown placeholder");
    config_fails("", ", '{_branch_step}'", "only in branches.args");
    /* a branch placeholder names a parameter declared after the block: fine */
    char em[ST_ERRMSG_MAX];
    const char *ok = "name: ok\ncommand: [t]\nobjective: {metric: loss}\nbudget: {runs: 3}\n"
                     "branches: {at: [0.25], args: ['--from={_parent_checkpoint}-{_branch_step}',"
                     " '--k={_decay_steps}', '--x={x}']}\n"
                     "parameters:\n  x: {space: linear, min: 0, max: 1, center: 0.5}\n";
    runner_config *c = NULL;
    CHECK_ST(runner_config_load_string(ok, strlen(ok), "ok.yaml", &c, em), ST_OK);
    if (c) {
        /* the branch's expansion: {_run} is the parent's id, the branch's fields */
        double x[1] = {0.25};
        char *out[3] = {NULL, NULL, NULL};
        size_t n = 0;
        runner_branch_ctx br = {7, "/logs/ok/run-7/checkpoint", 40, 10};
        CHECK_ST(
            runner_command_expand_branch(c, c->br_argv, c->br_argc, 1, x, &br, 2, "/d", out, &n),
            ST_OK);
        CHECK(n == 3 && out[0] && !strcmp(out[0], "--from=/logs/ok/run-7/checkpoint-40") &&
              out[1] && !strcmp(out[1], "--k=10") && out[2] && !strcmp(out[2], "--x=0.25"));
        for (size_t i = 0; i < 3; i++)
            free(out[i]);
        char *r = NULL;
        CHECK_ST(runner_command_expand_branch(c, (char *[]){"{_run}/{_parent_run}/{_attempt}"}, 1,
                                              0, x, &br, 2, "/d", &r, &n),
                 ST_OK);
        CHECK(r && !strcmp(r, "7/7/2"));
        free(r);
        /* outside a branch its placeholders cannot expand */
        CHECK_ST(runner_template_expand(c, "{_branch_step}", x, 3, 1, "/d", &r), ST_EINVAL);
    }
    runner_config_destroy(c);
    config_fails("command: [t]\n", "", "given twice"); /* sanity of the helper */
}

int main(int argc, char **argv)
{
    (void)argc;
    st_global_init();
    tu_init(argv[0]);
    test_config_errors();
    test_sweep(0);
    test_sweep(1);
    test_deterministic();
    test_resume(0);
    test_resume(1);
    test_failures();
    tu_cleanup();
    st_global_cleanup();
    return check_summary("runner.branches");
}
