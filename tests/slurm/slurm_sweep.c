/*
 * slurm_sweep.c — whole sweeps of the fake trainer on the one-node cluster: one through each
 * route (sbatch, REST with a JWT, REST over the unix socket); a job scancelled from outside
 * mid-sweep (retried); slurmctld stopped and started again mid-sweep (the sweep waits and goes
 * on); slurmrestd stopped mid-sweep (a clear message, then the sweep goes on once it is back);
 * and a controller killed mid-sweep whose successor re-attaches to the jobs by id.
 * Needs scripts/slurm-localhost's cluster (make test-slurm).
 */
#include <signal.h>
#include <sys/wait.h>

#include "tests/slurm/slurm_test_util.h"

static char events[64][300];
static size_t n_events;

static void on_progress(const runner_progress *p, void *data)
{
    (void)data;
    if (p->event && n_events < 64)
        snprintf(events[n_events++], sizeof(events[0]), "%s", p->event);
}

static int saw(const char *needle)
{
    for (size_t i = 0; i < n_events; i++)
        if (strstr(events[i], needle))
            return 1;
    return 0;
}

static runner *start(const char *db, runner_config *c, const char *name)
{
    runner_options o = runner_options_default();
    o.db_path = db;
    o.poll_seconds = 0.02;
    o.progress = on_progress;
    runner *r = NULL;
    char em[ST_ERRMSG_MAX];
    n_events = 0;
    st_status rc = c ? runner_launch(c, &o, &r, em) : runner_resume(name, &o, &r, em);
    if (rc)
        fprintf(stderr, "launch/resume: %s\n", em);
    return r;
}

/* Steps the controller for `seconds` (or until done). */
static st_status step_for(runner *r, double seconds, int *done)
{
    double t0 = su_now();
    st_status rc = ST_OK;
    *done = 0;
    while (!rc && !*done && su_now() - t0 < seconds) {
        rc = runner_step(r, done);
        su_sleep(0.02);
    }
    if (rc)
        fprintf(stderr, "step: %s\n", runner_errmsg(r));
    return rc;
}

static void test_sweep(const char *route)
{
    char name[64], db[4300];
    snprintf(name, sizeof(name), "sw-%s", route);
    snprintf(db, sizeof(db), "%s/%s.db", su_dir, name);
    runner_config *c = su_config(name, route, "--steps, '3'", "budget: {runs: 4}\nparallel: 2\n");
    CHECK(c != NULL);
    if (!c)
        return;
    runner *r = start(db, c, NULL);
    CHECK(r != NULL);
    if (r) {
        CHECK_ST(runner_run(r), ST_OK);
        CHECK(runner_finished(r));
        runner_destroy(r);
    }
    CHECK(su_query(db, "SELECT count(*) FROM runs WHERE status = 2") == 4);
    CHECK(su_query(db, "SELECT count(*) FROM observations") == 4);
    CHECK(su_query(db, "SELECT count(*) FROM attempts") == 4);
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM attempts WHERE backend = 'slurm-%s' AND CAST(job_id AS "
             "INTEGER) > 0",
             strcmp(route, "cli") ? "rest" : "cli");
    CHECK(su_query(db, sql) == 4);
    runner_config_destroy(c);
}

/* A job cancelled with scancel by someone else: the run is retried and succeeds. */
static void test_scancel_retried(const char *route)
{
    char name[64], db[4300];
    snprintf(name, sizeof(name), "cancel-%s", route);
    snprintf(db, sizeof(db), "%s/%s.db", su_dir, name);
    runner_config *c =
        su_config(name, route, "--steps, '20', --sleep-ms, '100'", "budget: {runs: 2}\n");
    CHECK(c != NULL);
    runner *r = c ? start(db, c, NULL) : NULL;
    CHECK(r != NULL);
    if (!r) {
        runner_config_destroy(c);
        return;
    }
    /* wait until the first attempt's job id reached the store (with its first metrics) */
    int done = 0;
    double t0 = su_now();
    long long id = -1;
    while (!done && su_now() - t0 < 60) {
        CHECK_ST(runner_step(r, &done), ST_OK);
        id = su_query(db, "SELECT coalesce(max(CAST(job_id AS INTEGER)), -1) FROM attempts "
                          "WHERE state = 'running' AND n_lines > 0");
        if (id > 0)
            break;
        su_sleep(0.05);
    }
    CHECK(id > 0);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "scancel %lld", id);
    CHECK(system(cmd) == 0);
    CHECK_ST(runner_run(r), ST_OK);
    CHECK(runner_finished(r));
    runner_destroy(r);
    CHECK(su_query(db, "SELECT count(*) FROM runs WHERE status = 2") == 2);
    CHECK(su_query(db, "SELECT count(*) FROM observations") == 2);
    CHECK(su_query(db, "SELECT count(*) FROM attempts WHERE failure = 14") == 1); /* cancelled */
    CHECK(su_query(db, "SELECT count(*) FROM attempts") == 3);
    CHECK(su_query(db, "SELECT sum(n_infra) FROM runs") == 1);
    runner_config_destroy(c);
}

/* slurmctld goes away mid-sweep: running jobs finish (their files settle them), launches wait
 * without using up retries, and the sweep goes on when slurmctld is back. */
static void test_ctld_restart(const char *route)
{
    char name[64], db[4300];
    snprintf(name, sizeof(name), "ctld-%s", route);
    snprintf(db, sizeof(db), "%s/%s.db", su_dir, name);
    runner_config *c = su_config(name, route, "--steps, '10', --sleep-ms, '100'",
                                 "budget: {runs: 4}\nparallel: 2\n");
    CHECK(c != NULL);
    runner *r = c ? start(db, c, NULL) : NULL;
    CHECK(r != NULL);
    if (!r) {
        runner_config_destroy(c);
        return;
    }
    int done = 0;
    double t0 = su_now();
    while (!done && su_now() - t0 < 60 &&
           su_query(db, "SELECT count(*) FROM attempts WHERE n_lines > 0") < 2) {
        CHECK_ST(runner_step(r, &done), ST_OK);
        su_sleep(0.05);
    }
    CHECK(su_cluster("stop-ctld") == 0);
    /* the two running jobs end meanwhile; new submissions fail and wait */
    CHECK_ST(step_for(r, 12, &done), ST_OK);
    CHECK(!done);
    CHECK(su_query(db, "SELECT count(*) FROM runs WHERE status = 2") == 2);
    CHECK(saw("not submitted") || saw("unreachable"));
    CHECK(su_cluster("start-ctld") == 0);
    CHECK_ST(runner_run(r), ST_OK);
    CHECK(runner_finished(r));
    runner_destroy(r);
    CHECK(su_query(db, "SELECT count(*) FROM runs WHERE status = 2") == 4);
    CHECK(su_query(db, "SELECT count(*) FROM observations") == 4);
    CHECK(su_query(db, "SELECT sum(n_infra) FROM runs") == 0);
    runner_config_destroy(c);
}

/* slurmrestd goes away mid-sweep: a clear message, and the sweep goes on once it is back. */
static void test_rest_down(void)
{
    const char *name = "restdown";
    char db[4300];
    snprintf(db, sizeof(db), "%s/%s.db", su_dir, name);
    runner_config *c = su_config(name, "rest", "--steps, '10', --sleep-ms, '100'",
                                 "budget: {runs: 4}\nparallel: 2\n");
    CHECK(c != NULL);
    runner *r = c ? start(db, c, NULL) : NULL;
    CHECK(r != NULL);
    if (!r) {
        runner_config_destroy(c);
        return;
    }
    int done = 0;
    double t0 = su_now();
    while (!done && su_now() - t0 < 60 &&
           su_query(db, "SELECT count(*) FROM attempts WHERE n_lines > 0") < 2) {
        CHECK_ST(runner_step(r, &done), ST_OK);
        su_sleep(0.05);
    }
    CHECK(su_cluster("stop-rest") == 0);
    CHECK_ST(step_for(r, 6, &done), ST_OK);
    CHECK(!done);
    CHECK(saw("unreachable"));
    for (size_t i = 0; i < n_events; i++)
        if (strstr(events[i], "unreachable")) {
            printf("# %s\n", events[i]);
            break;
        }
    CHECK(su_query(db, "SELECT count(*) FROM runs WHERE status = 2") == 2);
    CHECK(su_cluster("start-rest") == 0);
    CHECK_ST(runner_run(r), ST_OK);
    CHECK(runner_finished(r));
    runner_destroy(r);
    CHECK(su_query(db, "SELECT count(*) FROM runs WHERE status = 2") == 4);
    CHECK(su_query(db, "SELECT sum(n_infra) FROM runs") == 0);
    runner_config_destroy(c);
}

/* The controller dies (SIGKILL) with jobs running; a new one re-attaches by job id. */
static void test_resume_reattach(const char *route)
{
    char name[64], db[4300];
    snprintf(name, sizeof(name), "resume-%s", route);
    snprintf(db, sizeof(db), "%s/%s.db", su_dir, name);
    runner_config *c = su_config(name, route, "--steps, '20', --sleep-ms, '100'",
                                 "budget: {runs: 3}\nparallel: 2\n");
    CHECK(c != NULL);
    if (!c)
        return;
    pid_t child = fork();
    if (child == 0) {
        runner *r = start(db, c, NULL);
        int done = 0;
        while (r && !done && runner_step(r, &done) == ST_OK)
            su_sleep(0.02);
        _exit(0);
    }
    double t0 = su_now();
    while (su_now() - t0 < 60 &&
           su_query(db, "SELECT count(*) FROM attempts WHERE n_lines > 0") < 2)
        su_sleep(0.1);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    long long running = su_query(db, "SELECT count(*) FROM attempts WHERE state = 'running'");
    CHECK(running == 2);
    runner *r = start(db, NULL, name);
    CHECK(r != NULL);
    if (r) {
        CHECK_ST(runner_run(r), ST_OK);
        CHECK(runner_finished(r));
        runner_destroy(r);
    }
    CHECK(su_query(db, "SELECT count(*) FROM runs WHERE status = 2") == 3);
    CHECK(su_query(db, "SELECT count(*) FROM observations") == 3);
    CHECK(su_query(db, "SELECT count(*) FROM attempts") == 3); /* re-attached, not relaunched */
    runner_config_destroy(c);
}

int main(int argc, char **argv)
{
    (void)argc;
    st_global_init();
    if (!su_init(argv[0])) {
        CHECK(0);
        return check_summary("slurm.sweep");
    }
    test_sweep("cli");
    test_sweep("rest");
    test_sweep("socket");
    test_scancel_retried("cli");
    test_scancel_retried("rest");
    test_resume_reattach("cli");
    test_resume_reattach("rest");
    test_ctld_restart("cli");
    test_ctld_restart("rest");
    test_rest_down();
    su_cleanup();
    st_global_cleanup();
    return check_summary("slurm.sweep");
}
