/*
 * test_runner_store.c — the store itself: schema version and migrations, refusal of a newer
 * schema and of a file that is not a store, the lease, and a full disk (a 192 KiB tmpfs; we run
 * as root in CI, otherwise the test is skipped): the controller stops with ST_ENOSPC and a
 * clear message, nothing committed is lost, and after the disk grows the sweep resumes and
 * completes.
 */
#include <errno.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "tests/runner/runner_test_util.h"

static void test_schema(void)
{
    const char *db = tu_path("schema.db");
    runner_store *s = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_store_open(db, &s, em), ST_ENOTFOUND); /* opening never creates */
    CHECK(s == NULL && strstr(em, "no such store") && access(db, F_OK) != 0);
    CHECK_ST(runner_store_create(db, &s, em), ST_OK);
    runner_store_close(s);
    CHECK(tu_query(db, "PRAGMA user_version") == 6);
    sqlite3 *h;
    sqlite3_open(db, &h);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(h, "PRAGMA journal_mode", -1, &st, NULL);
    CHECK(sqlite3_step(st) == SQLITE_ROW &&
          !strcmp((const char *)sqlite3_column_text(st, 0), "wal"));
    sqlite3_finalize(st);
    sqlite3_exec(h, "PRAGMA user_version = 99", NULL, NULL, NULL);
    sqlite3_close(h);
    CHECK_ST(runner_store_open(db, &s, em), ST_EDB);
    CHECK(s == NULL && strstr(em, "newer"));

    /* a v1 store (as the first release wrote it) is migrated to the current version on open */
    const char *db1 = tu_path("v1.db");
    CHECK_ST(runner_store_create(db1, &s, em), ST_OK);
    runner_store_close(s);
    sqlite3_open(db1, &h);
    sqlite3_exec(
        h,
        "DROP INDEX runs_by_status_cost; ALTER TABLE runs DROP COLUMN sg_suggest; "
        "ALTER TABLE runs DROP COLUMN sg_design; ALTER TABLE runs DROP COLUMN "
        "sg_resample; ALTER TABLE runs DROP COLUMN sg_born; ALTER TABLE runs DROP "
        "COLUMN expires; ALTER TABLE runs DROP COLUMN stop_reason; ALTER TABLE runs DROP COLUMN "
        "bound_objective; ALTER TABLE runs DROP COLUMN bound_cost; ALTER TABLE sweeps DROP "
        "COLUMN workdir; ALTER TABLE runs DROP COLUMN parent_run; ALTER TABLE runs DROP COLUMN "
        "branch_step; ALTER TABLE runs DROP COLUMN decay_steps; PRAGMA user_version = 1",
        NULL, NULL, NULL);
    sqlite3_close(h);
    CHECK_ST(runner_store_open(db1, &s, em), ST_OK);
    runner_store_close(s);
    CHECK(tu_query(db1, "PRAGMA user_version") == 6);
    CHECK(tu_query(db1, "SELECT count(*) FROM pragma_table_info('runs') WHERE name IN "
                        "('sg_suggest', 'sg_design', 'sg_resample', 'sg_born', 'expires')") == 5);
    CHECK(tu_query(db1, "SELECT count(*) FROM sqlite_master WHERE name = 'runs_by_status_cost'") ==
          1);

    /* a v3 store (before early stopping) with a run in it opens, gains the stop columns (NULL:
     * not stopped early), and the run reads back as it was */
    const char *db2 = tu_path("v3.db");
    CHECK_ST(runner_store_create(db2, &s, em), ST_OK);
    runner_store_close(s);
    sqlite3_open(db2, &h);
    CHECK(sqlite3_exec(h,
                       "ALTER TABLE runs DROP COLUMN stop_reason; "
                       "ALTER TABLE runs DROP COLUMN bound_objective; "
                       "ALTER TABLE runs DROP COLUMN bound_cost; "
                       "ALTER TABLE sweeps DROP COLUMN workdir; "
                       "ALTER TABLE runs DROP COLUMN parent_run; "
                       "ALTER TABLE runs DROP COLUMN branch_step; "
                       "ALTER TABLE runs DROP COLUMN decay_steps; "
                       "INSERT INTO sweeps(id, name, config, created, log_dir) "
                       "VALUES(1, 'old', 'x', 0, '/tmp'); "
                       "INSERT INTO runs(id, sweep_id, status, x, created, objective) "
                       "VALUES(1, 1, 5, x'00', 0, 1.5); PRAGMA user_version = 3",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    CHECK_ST(runner_store_open(db2, &s, em), ST_OK);
    runner_store_close(s);
    CHECK(tu_query(db2, "PRAGMA user_version") == 6);
    CHECK(tu_query(db2, "SELECT count(*) FROM runs WHERE stop_reason IS NULL AND "
                        "bound_objective IS NULL AND objective = 1.5") == 1);
    /* ...and its sweep has no recorded workdir (NULL: the sweep file's, as before v5) */
    CHECK(tu_query(db2, "SELECT count(*) FROM sweeps WHERE workdir IS NULL") == 1);

    const char *bad = tu_path("bad.db");
    FILE *f = fopen(bad, "w");
    fputs("this is not a database, just text that is long enough to look like one......", f);
    fclose(f);
    CHECK_ST(runner_store_open(bad, &s, em), ST_EDB);
    CHECK(s == NULL && strstr(em, "bad.db"));
    CHECK_ST(runner_store_open("", &s, em), ST_EINVAL);

    /* queries on an empty store */
    CHECK_ST(runner_store_create(tu_path("empty.db"), &s, em), ST_OK);
    runner_status rs;
    CHECK_ST(runner_store_status(s, NULL, &rs), ST_ENOTFOUND);
    CHECK_ST(runner_store_status(s, "nope", &rs), ST_ENOTFOUND);
    CHECK(strstr(runner_store_errmsg(s), "nope") != NULL);
    const char *names = NULL;
    CHECK_ST(runner_store_list(s, &names), ST_OK);
    CHECK(names && !*names);
    runner_store_close(s);
    runner_store_close(NULL);
    runner_destroy(NULL);
    runner_config_destroy(NULL);
}

static void test_several_sweeps(void)
{
    const char *db = tu_path("two.db");
    runner_options o = runner_options_default();
    o.db_path = db;
    char em[ST_ERRMSG_MAX];
    for (int i = 0; i < 2; i++) {
        runner_config *c = tu_config(i ? "second" : "first", "", "budget: {runs: 1}\n");
        runner *r = NULL;
        CHECK_ST(runner_launch(c, &o, &r, em), ST_OK);
        runner_destroy(r);
        runner_config_destroy(c);
    }
    runner_store *s = NULL;
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    runner_status rs;
    CHECK_ST(runner_store_status(s, NULL, &rs), ST_EINVAL);
    CHECK(strstr(runner_store_errmsg(s), "--sweep") != NULL);
    CHECK_ST(runner_store_status(s, "second", &rs), ST_OK);
    CHECK(!strcmp(rs.name, "second") && rs.n_runs == 0);
    const char *names = NULL;
    CHECK_ST(runner_store_list(s, &names), ST_OK);
    CHECK(names && !strcmp(names, "first\nsecond\n"));
    size_t n = 0;
    const char *const *pn = NULL;
    CHECK_ST(runner_store_params(s, "first", &n, &pn), ST_OK);
    CHECK(n == 2 && !strcmp(pn[0], "x") && !strcmp(pn[1], "y"));
    runner_store_close(s);
}

/* A store with damaged pages: runner_store_check says so (and `sweep status` exits non-zero);
 * the same store before the damage checks clean. */
static void test_damaged(void)
{
    const char *db = tu_path("damaged.db");
    runner_config *c = tu_config("dmg", "--steps, '50'", "budget: {runs: 4}\n");
    int fin = 0;
    CHECK_ST(tu_sweep(db, c, NULL, &fin), ST_OK);
    runner_config_destroy(c);
    runner_store *s = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    CHECK_ST(runner_store_check(s), ST_OK);
    runner_store_close(s); /* the last connection: the WAL is checkpointed into the file */
    struct stat sb;
    CHECK(stat(db, &sb) == 0 && sb.st_size >= 3 * 4096);
    FILE *f = fopen(db, "r+b");
    CHECK(f != NULL);
    if (!f)
        return;
    char junk[4096];
    memset(junk, 0xff, sizeof(junk));
    fseek(f, 4096, SEEK_SET); /* every page but the first (the header and the schema) */
    for (long p = 1; p < sb.st_size / 4096; p++)
        fwrite(junk, 1, sizeof(junk), f);
    fclose(f);
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    if (!s)
        return;
    CHECK_ST(runner_store_check(s), ST_EDB);
    CHECK(strstr(runner_store_errmsg(s), "is damaged (") != NULL);
    CHECK(strstr(runner_store_errmsg(s), "damaged.db") != NULL);
    runner_store_close(s);
}

static void test_full_disk(void)
{
    char small[4200];
    snprintf(small, sizeof(small), "%s/small", tu_dir);
    mkdir(small, 0755);
    /* 5 MiB: the controller's reserve (4 MiB, <store>-ballast) and room for a few runs */
    if (mount("tmpfs", small, "tmpfs", 0, "size=5m") != 0) {
        printf("SKIP full disk: cannot mount a tmpfs (%s)\n", strerror(errno));
        return;
    }
    char db[4300], logs[4300];
    snprintf(db, sizeof(db), "%s/sweep.db", small);
    snprintf(logs, sizeof(logs), "%s/logs", tu_dir);
    /* 2000 step lines per run are stored as metric points: the disk fills up in a few runs */
    runner_config *c = tu_config("full", "--steps, '2000'", "budget: {runs: 40}\nparallel: 2\n");
    runner_options o = runner_options_default();
    o.db_path = db;
    o.log_dir = logs;
    o.poll_seconds = 0.005;
    /* on a full disk even releasing the lease fails: a short one lets the resume below (same
     * process, another controller: another lease) take over soon after */
    o.lease_seconds = 0.3;
    runner *r = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_launch(c, &o, &r, em), ST_OK);
    st_status rc = r ? runner_run(r) : ST_EINTERNAL;
    CHECK_ST(rc, ST_ENOSPC);
    if (r) {
        CHECK(strstr(runner_errmsg(r), "disk full") != NULL);
        runner_destroy(r);
    }
    /* what was committed is intact and readable */
    long long obs = tu_query(db, "SELECT count(*) FROM observations");
    long long ok = tu_query(db, "SELECT count(*) FROM runs WHERE status = 2");
    CHECK(tu_query(
              db, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'") == 1);
    CHECK(obs == ok && ok < 40);
    /* the reserve made room for the checkpoint: the WAL was folded into the store and
     * truncated (issue 21: it used to stay as large as the disk let it grow) */
    char wal[4400], ballast[4400];
    struct stat wst;
    snprintf(wal, sizeof(wal), "%s-wal", db);
    snprintf(ballast, sizeof(ballast), "%s-ballast", db);
    int wal_there = stat(wal, &wst) == 0;
    if (wal_there && wst.st_size > 64 * 1024)
        printf("  WAL after the disk-full error: %lld bytes\n", (long long)wst.st_size);
    CHECK(!wal_there || wst.st_size <= 64 * 1024);
    CHECK(access(ballast, F_OK) != 0); /* spent */
    /* more room: resume finishes the sweep without losing or repeating anything */
    CHECK(mount("tmpfs", small, "tmpfs", MS_REMOUNT, "size=32m") == 0);
    usleep(400000);
    int fin = 0;
    CHECK_ST(tu_sweep(db, NULL, "full", &fin), ST_OK);
    CHECK(fin);
    /* the resumed sweep leaves no WAL larger than journal_size_limit (1 MiB) behind, and no
     * reserve: a controller that exits cleanly removes it */
    CHECK(stat(wal, &wst) != 0 || wst.st_size <= (1 << 20));
    CHECK(access(ballast, F_OK) != 0);
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE status = 2") == 40);
    CHECK(tu_query(db, "SELECT count(*) FROM observations") == 40);
    CHECK(tu_query(db, "SELECT count(*) FROM observations WHERE id <= "
                       "(SELECT 0)") == 0);
    umount(small);
    runner_config_destroy(c);
}

int main(int argc, char **argv)
{
    (void)argc;
    st_global_init();
    tu_init(argv[0]);
    test_schema();
    test_several_sweeps();
    test_damaged();
    test_full_disk();
    char small[4200];
    snprintf(small, sizeof(small), "%s/small", tu_dir);
    umount2(small, MNT_DETACH); /* again, in case a check above left early; EINVAL if done */
    tu_cleanup();
    st_global_cleanup();
    return check_summary("runner.store");
}
