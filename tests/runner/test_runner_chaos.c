/*
 * test_runner_chaos.c — the controller is SIGKILLed at 25 random moments of one sweep (seeded)
 * and resumed each time. Afterwards: every run is finished, every succeeded or failed run was
 * observed exactly once, infrastructure failures never, and no attempt was launched twice (the
 * fake trainer appends "run attempt pid" to a launch log with O_APPEND; each line must be
 * unique and match exactly one attempt the store says was launched). Twice: supervisors forked
 * from the controller, then started as the program scaletune-supervise.
 */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "tests/runner/runner_test_util.h"

#define N_KILLS 25

static void msleep(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Reaps orphaned supervisors (we are their subreaper) and, if it ended, the controller. */
static int reap_all(pid_t controller, int *controller_status)
{
    int st, got = 0;
    pid_t p;
    while ((p = waitpid(-1, &st, WNOHANG)) > 0)
        if (p == controller) {
            *controller_status = st;
            got = 1;
        }
    return got;
}

static pid_t start_controller(const char *db, runner_config *cfg)
{
    pid_t p = fork();
    if (p != 0)
        return p;
    runner_options o = runner_options_default();
    o.db_path = db;
    o.poll_seconds = 0.005;
    o.supervisor = tu_supervisor;
    runner *r = NULL;
    char em[ST_ERRMSG_MAX];
    /* resume, or launch if an earlier controller died before recording the sweep */
    st_status rc = runner_resume("chaos", &o, &r, em);
    if (rc == ST_ENOTFOUND)
        rc = runner_launch(cfg, &o, &r, em);
    if (rc) {
        fprintf(stderr, "controller: %s\n", em);
        _exit(3);
    }
    rc = runner_run(r);
    if (rc)
        fprintf(stderr, "controller: %s\n", runner_errmsg(r));
    int fin = runner_finished(r);
    runner_destroy(r);
    _exit(rc ? 2 : fin ? 0 : 1);
}

/* One sweep killed N_KILLS times, in tu_dir; supervisors as tu_supervisor says. */
static void chaos(void)
{
    const char *db = tu_path("chaos.db");
    char extra[1024];
    snprintf(extra, sizeof(extra),
             "budget: {runs: 40}\nparallel: 3\n"
             "retries: {infrastructure: 6, backoff_seconds: 0.01}\n"
             "env: {FAKE_LAUNCH_LOG: '%s'}\n"
             "optimizer: {num_random_samples: 40}\n",
             tu_path("launches.txt"));
    runner_config *cfg = tu_config("chaos",
                                   "--steps, '4', --sleep-ms, '40', --chaos, '0.15,0,0.1', "
                                   "--chaos-key, 'c-{_run}-{_attempt}'",
                                   extra);
    CHECK(cfg != NULL);
    st_rng *rng = NULL;
    st_rng_create(getenv("CHAOS_SEED") ? strtoull(getenv("CHAOS_SEED"), NULL, 10) : 42, &rng);

    int kills = 0, status = 0, finished = 0, starts = 0;
    for (; starts < 200 && !finished; starts++) {
        pid_t c = start_controller(db, cfg);
        long ms = kills < N_KILLS ? 5 + (long)st_rng_uniform_int(rng, 100) : 100000;
        int ended = 0;
        for (long t = 0; t < ms && !ended; t += 5) {
            msleep(5);
            ended = reap_all(c, &status);
        }
        if (!ended) {
            kill(c, SIGKILL);
            while (!reap_all(c, &status))
                msleep(1);
            kills++;
            continue;
        }
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            finished = 1;
        else {
            fprintf(stderr, "controller exited with %d\n",
                    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            break;
        }
    }
    printf("chaos (%s): %d kills, %d controllers\n", tu_supervisor ? "scaletune-supervise" : "fork",
           kills, starts);
    CHECK(kills >= 20);
    CHECK(finished);

    /* let supervisors of the last moments finish writing (none should be left) */
    for (int i = 0; i < 50; i++) {
        int dummy;
        reap_all(0, &dummy);
        msleep(2);
    }

    CHECK(tu_query(db, "SELECT count(*) FROM runs") == 40);
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE status NOT IN (2, 3, 4)") == 0);
    long long observed = tu_query(db, "SELECT count(*) FROM runs WHERE status IN (2, 3)");
    CHECK(tu_query(db, "SELECT count(*) FROM observations") == observed);
    CHECK(tu_query(db, "SELECT count(DISTINCT run_id) FROM observations") == observed);
    CHECK(tu_query(db, "SELECT count(*) FROM observations o JOIN runs r ON r.id = o.run_id "
                       "WHERE r.status NOT IN (2, 3)") == 0);
    CHECK(tu_query(db, "SELECT count(*) FROM attempts WHERE state NOT IN ('done', "
                       "'abandoned')") == 0);

    /* the launch log against the store */
    FILE *f = fopen(tu_path("launches.txt"), "r");
    CHECK(f != NULL);
    long long lines = 0, dup = 0, unknown = 0;
    long runs_seen[4096][2];
    size_t n_seen = 0;
    long run, att, pid;
    char sql[256];
    while (f && fscanf(f, "%ld %ld %ld", &run, &att, &pid) == 3) {
        lines++;
        for (size_t i = 0; i < n_seen; i++)
            if (runs_seen[i][0] == run && runs_seen[i][1] == att)
                dup++;
        if (n_seen < 4096) {
            runs_seen[n_seen][0] = run;
            runs_seen[n_seen][1] = att;
            n_seen++;
        }
        snprintf(sql, sizeof(sql),
                 "SELECT count(*) FROM attempts WHERE run_id = %ld AND number = %ld AND "
                 "state = 'done'",
                 run, att);
        if (tu_query(db, sql) != 1)
            unknown++;
    }
    if (f)
        fclose(f);
    long long done = tu_query(db, "SELECT count(*) FROM attempts WHERE state = 'done'");
    printf("chaos: %lld launches, %lld attempts done, %lld abandoned, %lld observed\n", lines, done,
           tu_query(db, "SELECT count(*) FROM attempts WHERE state = 'abandoned'"), observed);
    CHECK(dup == 0);     /* no attempt launched twice */
    CHECK(unknown == 0); /* every launch is a recorded, settled attempt */
    CHECK(lines == done);

    st_rng_destroy(rng);
    runner_config_destroy(cfg);
}

int main(int argc, char **argv)
{
    (void)argc;
    st_global_init();
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    /* supervisors forked from the controller (the library's default), then started as
     * scaletune-supervise (the CLI's way) */
    tu_init(argv[0]);
    chaos();
    tu_cleanup();
    tu_init(argv[0]);
    tu_supervisor = tu_supervise_program;
    chaos();
    tu_cleanup();
    st_global_cleanup();
    return check_summary("runner.chaos");
}
