/*
 * test_runner_downtime.c — cost truth (issue 21): with `cost: wall_seconds` a run that ends
 * while no controller is alive is charged its own time, read from the supervisor's exit file,
 * not up to when the next controller noticed. The controller is SIGKILLed while the run runs,
 * the run finishes, the resume comes DOWNTIME seconds later; the reference is the exit file's
 * end time minus the attempt's recorded start, and the trainer's own sleeps bound it below.
 * The Slurm backend charges the job script's own start to end: not the time in the queue.
 */
#include <math.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "tests/runner/runner_test_util.h"

#define STEPS    4
#define STEP_MS  150 /* the trainer runs at least STEPS * STEP_MS */
#define DOWNTIME 2.0 /* seconds between the run's end and the resume */

static double query_double(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    double v = NAN;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
            v = sqlite3_column_double(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return v;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int wait_for_file(const char *path, double seconds)
{
    struct stat sb;
    for (double t = 0; t < seconds; t += 0.01) {
        if (stat(path, &sb) == 0)
            return 1;
        usleep(10000);
    }
    return 0;
}

static void test_cost_excludes_downtime(void)
{
    const char *db = tu_path("down.db");
    char text[8192], em[ST_ERRMSG_MAX];
    snprintf(text, sizeof(text),
             "name: down\n"
             "command: ['%s', '--x', '{x}', '--steps', '%d', '--sleep-ms', '%d']\n"
             "objective: {metric: val_loss}\n"
             "cost: {metric: wall_seconds}\n"
             "parameters:\n"
             "  x: {space: linear, min: -2, max: 3, center: 0}\n"
             "budget: {runs: 1}\n",
             tu_trainer, STEPS, STEP_MS);
    runner_config *c = NULL;
    CHECK_ST(runner_config_load_string(text, strlen(text), "down", &c, em), ST_OK);
    if (!c)
        return;
    pid_t child = fork();
    if (child == 0) {
        runner_options o = runner_options_default();
        o.db_path = db;
        o.poll_seconds = 0.005;
        runner *r = NULL;
        if (runner_launch(c, &o, &r, em))
            _exit(2);
        runner_run(r);
        _exit(3); /* killed long before */
    }
    /* the trainer is running: its pid file exists; then the controller dies (kill -9) */
    char pidf[4300], exitf[4300];
    snprintf(pidf, sizeof(pidf), "%s.runs/down/run-1/attempt-1/pid", db);
    snprintf(exitf, sizeof(exitf), "%s.runs/down/run-1/attempt-1/exit", db);
    CHECK(wait_for_file(pidf, 10));
    kill(child, SIGKILL);
    int wst = 0;
    waitpid(child, &wst, 0);
    CHECK(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL);
    CHECK(access(exitf, F_OK) != 0); /* it ended after the controller died */
    /* the run ends with no controller alive; the next comes DOWNTIME seconds later */
    CHECK(wait_for_file(exitf, 10));
    double ended_seen = wall_now();
    usleep((useconds_t)(DOWNTIME * 1e6));
    int fin = 0;
    CHECK_ST(tu_sweep(db, NULL, "down", &fin), ST_OK);
    CHECK(fin);

    /* the reference: the exit file's end time minus the attempt's recorded start */
    FILE *f = fopen(exitf, "r");
    int code = -1;
    double t_end = NAN;
    CHECK(f && fscanf(f, "exit %d %lf", &code, &t_end) == 2 && code == 0);
    if (f)
        fclose(f);
    double started = query_double(db, "SELECT started FROM attempts WHERE run_id = 1");
    double cost = query_double(db, "SELECT cost FROM runs WHERE id = 1");
    double a_end = query_double(db, "SELECT ended FROM attempts WHERE run_id = 1");
    double r_end = query_double(db, "SELECT ended FROM runs WHERE id = 1");
    CHECK(tu_query(db, "SELECT status FROM runs WHERE id = 1") == 2);
    CHECK(fabs(cost - (t_end - started)) < 1e-5);
    CHECK(fabs(a_end - t_end) < 1e-5 && fabs(r_end - t_end) < 1e-5);
    /* at least the trainer's own sleeps, and none of the downtime */
    CHECK(cost >= STEPS * STEP_MS * 1e-3);
    CHECK(t_end <= ended_seen + 1e-3);
    CHECK(cost < STEPS * STEP_MS * 1e-3 + DOWNTIME / 2);
    double obs = query_double(db, "SELECT cost FROM observations WHERE run_id = 1");
    CHECK(fabs(obs - cost) < 1e-9);
    runner_config_destroy(c);
}

/* Writes an executable shell script. */
static int write_script(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    fclose(f);
    return chmod(path, 0755);
}

/* The Slurm backend (via: cli) against a fake sbatch that keeps each job QUEUE seconds in its
 * "queue" before running the job script, and a fake squeue that says RUNNING: the cost in wall
 * seconds is the trainer's own start to end, from the job script's exit file, without the time
 * in the queue (nor, since the end comes from the file too, the time until a controller saw it). */
#define QUEUE 1.5 /* the fake sbatch's "sleep 1.5" */
static void test_slurm_cost_excludes_queue(void)
{
    char bin[4300], path[8600], f[4400];
    snprintf(bin, sizeof(bin), "%s", tu_path("bin"));
    CHECK(mkdir(bin, 0755) == 0);
    snprintf(f, sizeof(f), "%s/sbatch", bin);
    CHECK(write_script(f, "#!/bin/sh\n"
                          "for a in \"$@\"; do s=$a; done\n"
                          "id=$$\n"
                          "(sleep 1.5; SLURM_JOB_ID=$id exec bash \"$s\") </dev/null >/dev/null "
                          "2>&1 &\n"
                          "echo $id\n") == 0);
    snprintf(f, sizeof(f), "%s/squeue", bin);
    CHECK(write_script(f,
                       "#!/bin/sh\n"
                       "while [ $# -gt 0 ]; do\n"
                       "  [ \"$1\" = -j ] && echo \"$2\" | tr , '\\n' | sed 's/$/|RUNNING|None/'\n"
                       "  shift\n"
                       "done\n"
                       "exit 0\n") == 0);
    const char *old = getenv("PATH");
    snprintf(path, sizeof(path), "%s:%s", bin, old ? old : "/usr/bin:/bin");
    setenv("PATH", path, 1);

    const char *db = tu_path("queue.db");
    char text[8192], em[ST_ERRMSG_MAX];
    snprintf(text, sizeof(text),
             "name: queue\n"
             "command: ['%s', '--x', '{x}', '--steps', '%d', '--sleep-ms', '%d']\n"
             "objective: {metric: val_loss}\n"
             "cost: {metric: wall_seconds}\n"
             "parameters:\n"
             "  x: {space: linear, min: -2, max: 3, center: 0}\n"
             "budget: {runs: 1}\n"
             "backend: {kind: slurm, poll_seconds: 0.2}\n",
             tu_trainer, STEPS, STEP_MS);
    runner_config *c = NULL;
    CHECK_ST(runner_config_load_string(text, strlen(text), "queue", &c, em), ST_OK);
    if (!c)
        return;
    int fin = 0;
    CHECK_ST(tu_sweep(db, c, NULL, &fin), ST_OK);
    CHECK(fin);
    if (old)
        setenv("PATH", old, 1);

    char exitf[4300];
    snprintf(exitf, sizeof(exitf), "%s.runs/queue/run-1/attempt-1/exit", db);
    FILE *ef = fopen(exitf, "r");
    int code = -1;
    double t1 = NAN, t0 = NAN;
    CHECK(ef && fscanf(ef, "exit %d %lf %lf", &code, &t1, &t0) == 3 && code == 0);
    if (ef)
        fclose(ef);
    double started = query_double(db, "SELECT started FROM attempts WHERE run_id = 1");
    double cost = query_double(db, "SELECT cost FROM runs WHERE id = 1");
    CHECK(tu_query(db, "SELECT status FROM runs WHERE id = 1") == 2);
    CHECK(t0 >= started + QUEUE - 0.1); /* it did wait in the queue */
    CHECK(fabs(cost - (t1 - t0)) < 1e-5);
    CHECK(cost >= STEPS * STEP_MS * 1e-3);
    CHECK(cost < STEPS * STEP_MS * 1e-3 + QUEUE / 2);
    double obs = query_double(db, "SELECT cost FROM observations WHERE run_id = 1");
    CHECK(fabs(obs - cost) < 1e-9);
    runner_config_destroy(c);
}

int main(int argc, char **argv)
{
    (void)argc;
    st_global_init();
    tu_init(argv[0]);
    test_cost_excludes_downtime();
    test_slurm_cost_excludes_queue();
    tu_cleanup();
    st_global_cleanup();
    return check_summary("runner.downtime");
}
