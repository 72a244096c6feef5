/*
 * test_runner_create.c — a controller killed while it creates the store never leaves the
 * store's path in a state the next launch or resume refuses. A child launching a sweep raises
 * SIGKILL at each step of the store's creation (store_create_hook); then the path holds no
 * file or a whole store (never an empty one), and resume-else-launch, as test_runner_chaos's
 * controllers do, runs the sweep to the end with every run recorded; the dead child's
 * temporary files are gone. Both with renameat2(RENAME_NOREPLACE) and with the link(2)
 * fallback of file systems without it. The same with SIGKILL from outside after delays from 0 to 3
 * ms. Concurrent launches into one new path all end up in one store (none renamed over another's).
 * An empty file a user made is refused by resume and open and left as it was (create makes the
 * store in it, in place: test_runner_manage), a -wal without its store is refused, and only
 * dead creators' temporary files are removed.
 */
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "runner/runner_int.h"
#include "tests/runner/runner_test_util.h"

static int kill_at;

static void kill_hook(int step)
{
    if (step == kill_at)
        raise(SIGKILL);
}

static runner_config *small(const char *name)
{
    return tu_config(name, "--steps, '2'", "budget: {runs: 3}\nparallel: 2\n");
}

/* Launches sweep `name` into `db` and returns at once (the lease is given back). */
static st_status launch_only(const char *db, const char *name, char *em)
{
    runner_config *c = small(name);
    if (!c)
        return ST_EINVAL;
    runner_options o = runner_options_default();
    o.db_path = db;
    runner *r = NULL;
    st_status rc = runner_launch(c, &o, &r, em);
    runner_destroy(r);
    runner_config_destroy(c);
    return rc;
}

/* The number of files in the test directory whose name starts with `prefix`. */
static int count_prefix(const char *prefix)
{
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s", tu_path(""));
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += !strncmp(e->d_name, prefix, strlen(prefix));
    if (d)
        closedir(d);
    return n;
}

/* What a killed creation left at `db`: 0 no file, 1 a whole store, -1 anything else. */
static int state_of(const char *db)
{
    struct stat sb;
    if (stat(db, &sb) != 0)
        return 0;
    if (sb.st_size == 0)
        return -1;
    runner_store *s = NULL;
    char em[ST_ERRMSG_MAX];
    st_status rc = runner_store_open(db, &s, em);
    runner_store_close(s);
    if (rc) {
        fprintf(stderr, "refused after the kill: %s\n", em);
        return -1;
    }
    return tu_query(db, "PRAGMA application_id") == RUNNER_STORE_APP_ID &&
                   tu_query(db, "PRAGMA user_version") == RUNNER_SCHEMA_VERSION
               ? 1
               : -1;
}

/* The chaos test's controller: resume, or launch when the store or the sweep is missing, then
 * run to the end. */
static int resume_or_launch(const char *db, const char *name)
{
    runner_config *c = small(name);
    runner_options o = runner_options_default();
    o.db_path = db;
    o.poll_seconds = 0.005;
    runner *r = NULL;
    char em[ST_ERRMSG_MAX];
    st_status rc = runner_resume(name, &o, &r, em);
    if (rc == ST_ENOTFOUND)
        rc = runner_launch(c, &o, &r, em);
    if (rc)
        fprintf(stderr, "resume/launch: %s\n", em);
    if (!rc && (rc = runner_run(r)))
        fprintf(stderr, "run: %s\n", runner_errmsg(r));
    int fin = !rc && runner_finished(r);
    runner_destroy(r);
    runner_config_destroy(c);
    return fin;
}

/* A child launching into `db`, killed at `step` (store_create_hook), or when step is 0 after
 * `delay_us` microseconds, or (step -1) not at all; returns how it ended (the wait status). */
static int killed_launch(const char *db, int step, long delay_us)
{
    pid_t p = fork();
    if (p == 0) {
        kill_at = step;
        store_create_hook = step ? kill_hook : NULL;
        char em[ST_ERRMSG_MAX];
        _exit(launch_only(db, "k", em) ? 3 : 0);
    }
    if (!step) {
        struct timespec ts = {delay_us / 1000000, delay_us % 1000000 * 1000};
        nanosleep(&ts, NULL);
        kill(p, SIGKILL);
    }
    int st = 0;
    waitpid(p, &st, 0);
    return st;
}

/* link_only: the link(2) fallback (a file system without RENAME_NOREPLACE), else renameat2. */
static void test_kill_at_each_step(int link_only)
{
    store_create_link_only = link_only;
    static const int steps[] = {
        STORE_CREATE_CLEANED,      STORE_CREATE_TEMP_MADE,    STORE_CREATE_MIGRATED + 0,
        STORE_CREATE_MIGRATED + 1, STORE_CREATE_MIGRATED + 2, STORE_CREATE_MIGRATED + 3,
        STORE_CREATE_MIGRATED + 4, STORE_CREATE_CLOSED,       STORE_CREATE_SYNCED,
        STORE_CREATE_LINKED,       STORE_CREATE_RENAMED,      STORE_CREATE_DIR_SYNCED,
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        char name[64];
        snprintf(name, sizeof(name), "step%d-%zu.db", link_only, i);
        const char *db = tu_path(name);
        int st = killed_launch(db, steps[i], 0);
        /* the link(2) fallback is not taken where RENAME_NOREPLACE works: the launch ends */
        int died = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
        CHECK(died || (steps[i] == STORE_CREATE_LINKED && WIFEXITED(st) && WEXITSTATUS(st) == 0));
        int state = state_of(db);
        CHECK(state >= 0);
        /* linked: the store's path holds the whole store, the temporary name too */
        int placed = steps[i] >= STORE_CREATE_LINKED && steps[i] < STORE_CREATE_MIGRATED;
        CHECK(state == placed || !died);
        CHECK(resume_or_launch(db, "k"));
        CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE status IN (2, 3)") == 3);
        CHECK(tu_query(db, "SELECT count(*) FROM observations") == 3);
        snprintf(name, sizeof(name), "step%d-%zu.db.creating-", link_only, i);
        CHECK(count_prefix(name) == 0); /* the dead child's temporary files are gone */
        if (!died)
            printf("create: step %d not reached (the link fallback)\n", steps[i]);
    }
    store_create_link_only = 0;
}

static void test_kill_from_outside(void)
{
    /* how long a launch takes here, fork included: the kills spread over it */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    killed_launch(tu_path("timing.db"), -1, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long delay_us = (t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000;
    int none = 0, whole = 0, recorded = 0;
    for (int i = 0; i < 40; i++) {
        char name[64];
        snprintf(name, sizeof(name), "outside%d.db", i);
        const char *db = tu_path(name);
        killed_launch(db, 0, delay_us * i / 40); /* from at once to a whole launch */
        int state = state_of(db);
        CHECK(state >= 0);
        none += state == 0;
        whole += state == 1;
        /* launch again unless the killed one got as far as recording the sweep */
        long long had = state ? tu_query(db, "SELECT count(*) FROM sweeps WHERE name = 'k'") : 0;
        char em[ST_ERRMSG_MAX];
        CHECK_ST(launch_only(db, "k", em), had ? ST_ESTATE : ST_OK);
        CHECK(tu_query(db, "SELECT count(*) FROM sweeps WHERE name = 'k'") == 1);
        recorded += had == 1;
        snprintf(name, sizeof(name), "outside%d.db.creating-", i);
        CHECK(count_prefix(name) == 0);
    }
    printf("create: a launch takes %ld us; killed from outside, %d left no file, %d a whole "
           "store (%d with the sweep), none anything else\n",
           delay_us, none, whole, recorded);
}

static void test_concurrent(void)
{
    const char *db = tu_path("race.db");
    enum { N = 6 };
    pid_t kids[N];
    for (int i = 0; i < N; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            char name[16], em[ST_ERRMSG_MAX];
            snprintf(name, sizeof(name), "r%d", i);
            st_status rc = launch_only(db, name, em);
            if (rc)
                fprintf(stderr, "race: %s\n", em);
            _exit(rc ? 1 : 0);
        }
    }
    int ok = 0;
    for (int i = 0; i < N; i++) {
        int st = 0;
        waitpid(kids[i], &st, 0);
        ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    CHECK(ok == N);
    CHECK(tu_query(db, "SELECT count(*) FROM sweeps") == N); /* nobody's store replaced */
    CHECK(count_prefix("race.db.creating-") == 0);
}

static void test_user_files(void)
{
    char em[ST_ERRMSG_MAX];
    runner_options o = runner_options_default();
    runner *r = NULL;
    struct stat sb;

    /* a user's empty file: resume and open refuse it and leave it as it was */
    const char *empty = tu_path("user-empty.db");
    fclose(fopen(empty, "w"));
    o.db_path = empty;
    CHECK_ST(runner_resume("k", &o, &r, em), ST_EDB);
    CHECK(r == NULL && strstr(em, "empty file"));
    runner_store *s = NULL;
    CHECK_ST(runner_store_open(empty, &s, em), ST_EDB);
    CHECK(stat(empty, &sb) == 0 && sb.st_size == 0);
    CHECK(count_prefix("user-empty.db") == 1); /* no -wal, -shm, no temporary file */
    /* launch makes the store in it, in place: the same file */
    ino_t ino = sb.st_ino;
    CHECK_ST(launch_only(empty, "k", em), ST_OK);
    CHECK(stat(empty, &sb) == 0 && sb.st_ino == ino && sb.st_size > 0);
    CHECK(tu_query(empty, "SELECT count(*) FROM sweeps") == 1);

    /* a WAL without its store: refused, nothing made, the WAL untouched */
    const char *orphan = tu_path("orphan.db");
    FILE *f = fopen(tu_path("orphan.db-wal"), "w");
    fputs("not yours to replay", f);
    fclose(f);
    CHECK_ST(runner_store_create(orphan, &s, em), ST_EDB);
    CHECK(s == NULL && strstr(em, "wal file") && strstr(em, "orphan.db-wal"));
    CHECK(stat(orphan, &sb) != 0);
    CHECK(stat(tu_path("orphan.db-wal"), &sb) == 0 && sb.st_size == 19);
    CHECK(count_prefix("orphan.db") == 1);

    /* temporary files: a dead creator's go, a live one's, another host's, and files that only
     * look alike stay */
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);
    char host[65] = "localhost";
    gethostname(host, sizeof(host) - 1);
    char names[6][4300];
    const char *d = tu_path("tmp.db.creating-");
    snprintf(names[0], sizeof(names[0]), "%s%ld.1.%s", d, (long)dead, host);
    snprintf(names[1], sizeof(names[1]), "%s%ld.1.%s-wal", d, (long)dead, host);
    snprintf(names[2], sizeof(names[2]), "%s%ld.1.%s", d, (long)getppid(), host);
    snprintf(names[3], sizeof(names[3]), "%s%ld.1.otherhost", d, (long)dead);
    snprintf(names[4], sizeof(names[4]), "%s%ld.1.%s.bak", d, (long)dead, host);
    snprintf(names[5], sizeof(names[5]), "%snotes", d);
    for (int i = 0; i < 6; i++)
        fclose(fopen(names[i], "w"));
    CHECK_ST(runner_store_create(tu_path("tmp.db"), &s, em), ST_OK);
    runner_store_close(s);
    CHECK(access(names[0], F_OK) != 0);
    CHECK(access(names[1], F_OK) != 0);
    for (int i = 2; i < 6; i++)
        CHECK(access(names[i], F_OK) == 0);
}

int main(int argc, char **argv)
{
    (void)argc;
    st_global_init();
    tu_init(argv[0]);
    test_kill_at_each_step(0);
    test_kill_at_each_step(1);
    test_kill_from_outside();
    test_concurrent();
    test_user_files();
    tu_cleanup();
    st_global_cleanup();
    return check_summary("runner.create");
}
