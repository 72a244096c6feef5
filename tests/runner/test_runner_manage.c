/*
 * test_runner_manage.c — managing a store's sweeps: opening never creates a file, a SQLite file
 * of another program (or an empty one) is refused and left byte for byte as it was, a store from
 * before the schema marker still opens; delete removes a sweep and everything it recorded (and
 * nothing of another sweep) and is refused while a live controller holds it; rename moves the
 * name in the store and in the stored sweep file (resume works under the new name); a lease
 * whose process is gone is shown as dead at once, with its last heartbeat.
 */
#include <math.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "tests/runner/runner_test_util.h"

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *b = malloc(1 << 20);
    *n = b ? fread(b, 1, 1 << 20, f) : 0;
    fclose(f);
    return b;
}

static void test_foreign_files(void)
{
    runner_store *s = NULL;
    char em[ST_ERRMSG_MAX];
    const char *missing = tu_path("missing.db");
    CHECK_ST(runner_store_open(missing, &s, em), ST_ENOTFOUND);
    CHECK(strstr(em, "no such store: ") && strstr(em, "missing.db"));
    CHECK(access(missing, F_OK) != 0);

    /* somebody else's database: refused by open and by create, not one byte changed */
    const char *other = tu_path("other.db");
    sqlite3 *h = NULL;
    sqlite3_open(other, &h);
    sqlite3_exec(h, "CREATE TABLE notes(t TEXT); INSERT INTO notes VALUES('mine');", NULL, NULL,
                 NULL);
    sqlite3_close(h);
    size_t n0 = 0, n1 = 0;
    char *before = slurp(other, &n0);
    CHECK_ST(runner_store_open(other, &s, em), ST_EDB);
    CHECK(s == NULL && strstr(em, "not a scaletune store") && strstr(em, "other.db"));
    CHECK_ST(runner_store_create(other, &s, em), ST_EDB);
    char *after = slurp(other, &n1);
    CHECK(before && after && n0 == n1 && n0 > 0 && !memcmp(before, after, n0));
    free(before);
    free(after);
    CHECK(tu_query(other, "SELECT count(*) FROM sqlite_master") == 1);
    struct stat sb;
    CHECK(stat(tu_path("other.db-wal"), &sb) != 0);

    /* an empty file is a new store only for create */
    const char *empty = tu_path("empty.db");
    fclose(fopen(empty, "w"));
    CHECK_ST(runner_store_open(empty, &s, em), ST_EDB);
    CHECK(strstr(em, "empty"));
    CHECK_ST(runner_store_create(empty, &s, em), ST_OK);
    runner_store_close(s);
    CHECK(tu_query(empty, "PRAGMA application_id") == 1398035790); /* "STUN" */

    /* a store written before the marker (application_id 0, our tables) still opens */
    sqlite3_open(empty, &h);
    sqlite3_exec(h, "PRAGMA application_id = 0", NULL, NULL, NULL);
    sqlite3_close(h);
    CHECK_ST(runner_store_open(empty, &s, em), ST_OK);
    runner_store_close(s);
}

static long long count_rows(const char *db, const char *table, const char *col)
{
    char q[256];
    snprintf(q, sizeof(q), "SELECT count(*) FROM %s WHERE %s", table, col);
    return tu_query(db, q);
}

static void test_delete(void)
{
    const char *db = tu_path("del.db");
    runner_config *a = tu_config("keep", "", "budget: {runs: 2}\n");
    runner_config *b = tu_config("drop", "", "budget: {runs: 3}\n");
    CHECK_ST(tu_sweep(db, a, NULL, NULL), ST_OK);
    CHECK_ST(tu_sweep(db, b, NULL, NULL), ST_OK);
    CHECK(tu_query(db, "SELECT count(*) FROM runs") == 5);
    CHECK(tu_query(db, "SELECT count(*) FROM metric_points") > 0);
    long long keep_points = tu_query(db, "SELECT count(*) FROM metric_points m JOIN attempts a "
                                         "ON a.id = m.attempt_id JOIN runs r ON r.id = a.run_id "
                                         "JOIN sweeps w ON w.id = r.sweep_id WHERE w.name = "
                                         "'keep'");
    CHECK(keep_points > 0);

    runner_store *s = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    CHECK_ST(runner_store_delete(s, NULL), ST_EINVAL);
    CHECK_ST(runner_store_delete(s, "dro"), ST_ENOTFOUND); /* the exact name, no prefix */
    CHECK_ST(runner_store_delete(s, "drop"), ST_OK);
    CHECK_ST(runner_store_delete(s, "drop"), ST_ENOTFOUND);
    const char *names = NULL;
    CHECK_ST(runner_store_list(s, &names), ST_OK);
    CHECK(names && !strcmp(names, "keep\n"));
    runner_store_close(s);
    CHECK(tu_query(db, "SELECT count(*) FROM runs") == 2);
    CHECK(tu_query(db, "SELECT count(*) FROM metric_points") == keep_points);
    CHECK(count_rows(db, "attempts", "run_id NOT IN (SELECT id FROM runs)") == 0);
    CHECK(count_rows(db, "observations", "sweep_id NOT IN (SELECT id FROM sweeps)") == 0);
    CHECK(count_rows(db, "parameters", "sweep_id NOT IN (SELECT id FROM sweeps)") == 0);
    CHECK(count_rows(db, "events", "sweep_id NOT IN (SELECT id FROM sweeps)") == 0);
    CHECK(tu_query(db, "SELECT count(*) FROM observations") == 2);

    /* a live controller holds the sweep: refused, nothing deleted */
    runner_options o = runner_options_default();
    o.db_path = db;
    runner *r = NULL;
    runner_config *c = tu_config("held", "", "budget: {runs: 1}\n");
    CHECK_ST(runner_launch(c, &o, &r, em), ST_OK);
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    CHECK_ST(runner_store_delete(s, "held"), ST_EBUSY);
    CHECK(strstr(runner_store_errmsg(s), "live controller"));
    CHECK_ST(runner_store_rename(s, "held", "other"), ST_EBUSY);
    runner_destroy(r); /* releases the lease */
    CHECK_ST(runner_store_delete(s, "held"), ST_OK);
    runner_store_close(s);
    runner_config_destroy(a);
    runner_config_destroy(b);
    runner_config_destroy(c);
}

static void test_rename(void)
{
    const char *db = tu_path("ren.db");
    runner_config *a = tu_config("old", "", "budget: {runs: 2}\n");
    runner_config *b = tu_config("taken", "", "budget: {runs: 1}\n");
    CHECK_ST(tu_sweep(db, a, NULL, NULL), ST_OK);
    CHECK_ST(tu_sweep(db, b, NULL, NULL), ST_OK);
    runner_store *s = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    CHECK_ST(runner_store_rename(s, "old", "taken"), ST_ESTATE);
    CHECK_ST(runner_store_rename(s, "old", "bad name"), ST_EINVAL);
    CHECK_ST(runner_store_rename(s, "nope", "fresh"), ST_ENOTFOUND);
    CHECK_ST(runner_store_rename(s, "old", "new-name_1"), ST_OK);
    runner_status st;
    CHECK_ST(runner_store_status(s, "old", &st), ST_ENOTFOUND);
    CHECK_ST(runner_store_status(s, "new-name_1", &st), ST_OK);
    CHECK(!strcmp(st.name, "new-name_1") && st.n_runs == 2);
    runner_sweep *w = NULL;
    CHECK_ST(runner_store_read_sweep(s, "new-name_1", &w), ST_OK);
    CHECK(w && !strcmp(w->cfg->name, "new-name_1") && w->n_runs == 2);
    runner_sweep_free(w);
    runner_store_close(s);

    /* resume under the new name with a larger budget would need a new file; resuming the
     * finished sweep under its new name must work and change nothing */
    int fin = 0;
    CHECK_ST(tu_sweep(db, NULL, "new-name_1", &fin), ST_OK);
    CHECK(fin);
    CHECK(tu_query(db, "SELECT count(*) FROM runs r JOIN sweeps w ON w.id = r.sweep_id WHERE "
                       "w.name = 'new-name_1'") == 2);
    runner_config_destroy(a);
    runner_config_destroy(b);
}

static void test_dead_controller(void)
{
    const char *db = tu_path("dead.db");
    runner_options o = runner_options_default();
    o.db_path = db;
    o.lease_seconds = 3600; /* the lease alone would say "alive" for an hour */
    runner *r = NULL;
    char em[ST_ERRMSG_MAX];
    runner_config *c = tu_config("d", "", "budget: {runs: 1}\n");
    CHECK_ST(runner_launch(c, &o, &r, em), ST_OK);
    runner_store *s = NULL;
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    runner_status st;
    CHECK_ST(runner_store_status(s, NULL, &st), ST_OK);
    CHECK(st.controller_alive && isfinite(st.heartbeat) && isfinite(st.created));
    CHECK(fabs(st.heartbeat - (double)time(NULL)) < 60);
    CHECK(isnan(st.last_ended));

    /* the lease now names a process that is gone (as after kill -9) */
    pid_t p = fork();
    if (p == 0)
        _exit(0);
    waitpid(p, NULL, 0);
    sqlite3 *h = NULL;
    sqlite3_open(db, &h);
    char q[128];
    snprintf(q, sizeof(q), "UPDATE lease SET pid = %ld, heartbeat = heartbeat - 42", (long)p);
    sqlite3_exec(h, q, NULL, NULL, NULL);
    sqlite3_close(h);
    CHECK_ST(runner_store_status(s, NULL, &st), ST_OK);
    CHECK(!st.controller_alive && st.controller[0]);
    CHECK(time(NULL) - st.heartbeat >= 41 && time(NULL) - st.heartbeat < 100);
    CHECK_ST(runner_store_delete(s, "d"), ST_OK); /* a dead holder does not block */
    runner_store_close(s);
    runner_destroy(r);
    runner_config_destroy(c);
}

/* A sweep whose parameters are all fixed (the recommended large run as a one-run sweep): it
 * runs without a dummy searched parameter, with the fixed values substituted; ask/tell on
 * such a sweep hands out the fixed point. */
static void test_all_fixed(void)
{
    char text[8192], em[ST_ERRMSG_MAX];
    snprintf(text, sizeof(text),
             "name: one\ncommand: ['%s', '--x', '{x}', '--x', '{y}']\n"
             "objective: {metric: val_loss}\ncost: {metric: flops}\n"
             "parameters:\n  x: {value: 0.25}\n  y: {value: 1.5}\nbudget: {runs: 1}\n",
             tu_trainer);
    runner_config *c = NULL;
    CHECK_ST(runner_config_load_string(text, strlen(text), "one", &c, em), ST_OK);
    CHECK(c && runner_config_dim(c) == 0);
    const char *db = tu_path("fixed.db");
    int fin = 0;
    CHECK_ST(tu_sweep(db, c, NULL, &fin), ST_OK);
    CHECK(fin);
    runner_store *s = NULL;
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    runner_sweep *w = NULL;
    CHECK_ST(runner_store_read_sweep(s, "one", &w), ST_OK);
    CHECK(w && w->n_runs == 1 && w->runs[0].status == RUNNER_RUN_SUCCEEDED);
    /* the fake trainer's objective: 1 + (x - .5)^2 + (y - .5)^2 at the fixed values */
    CHECK(w && w->n_runs == 1 && fabs(w->runs[0].objective - (1 + 0.0625 + 1.0)) < 1e-12);
    runner_sweep_free(w);
    runner_store_close(s);
    runner_config_destroy(c);

    /* ask/tell: the optimizer is rebuilt with nothing to search */
    const char *db2 = tu_path("fixed2.db");
    snprintf(text, sizeof(text),
             "name: two\ncommand: [/bin/false, '{x}']\nobjective: {metric: val_loss}\n"
             "cost: {metric: flops}\nparameters:\n  x: {value: 4}\nbudget: {runs: 2}\n");
    CHECK_ST(runner_config_load_string(text, strlen(text), "two", &c, em), ST_OK);
    runner_options o = runner_options_default();
    o.db_path = db2;
    runner *r = NULL;
    CHECK_ST(runner_launch(c, &o, &r, em), ST_OK);
    runner_destroy(r);
    CHECK_ST(runner_store_open(db2, &s, em), ST_OK);
    double x[2] = {0, 0};
    uint64_t id = 0;
    CHECK_ST(runner_store_ask(s, "two", &id, x, 2), ST_OK);
    CHECK(id == 1 && x[0] == 4);
    CHECK_ST(runner_store_tell(s, "two", id, 2.5, 10, 0), ST_OK);
    runner_status st;
    CHECK_ST(runner_store_status(s, "two", &st), ST_OK);
    CHECK(st.has_best && st.best_objective == 2.5);
    runner_store_close(s);
    runner_config_destroy(c);
}

int main(int argc, char **argv)
{
    (void)argc;
    st_global_init();
    tu_init(argv[0]);
    test_foreign_files();
    test_delete();
    test_rename();
    test_dead_controller();
    test_all_fixed();
    tu_cleanup();
    st_global_cleanup();
    return check_summary("runner.manage");
}
