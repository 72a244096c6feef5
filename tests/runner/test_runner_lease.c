/*
 * test_runner_lease.c — the lease as a fencing token (issue 21): a controller stalled inside a
 * step past its lease (runner_options.pause_hook, as a slow sbatch or a paused VM would) while
 * another controller takes the sweep over and finishes it writes nothing when it wakes, kills
 * nothing, launches nothing and stops with ST_EBUSY and a message that says why.
 */
#include <sys/wait.h>

#include "tests/runner/runner_test_util.h"

#define LEASE_A 0.5 /* the stalled controller's lease, seconds */

static const char *const tables[] = {"runs",   "attempts",      "observations",
                                     "events", "metric_points", "lease"};
#define N_TABLES (sizeof(tables) / sizeof(tables[0]))

typedef struct stall {
    const char *db;
    int n_launch, stall_at;
    st_status b_rc;
    int b_finished;
    long long counts[N_TABLES]; /* after the other controller finished */
} stall;

static void count_rows(const char *db, long long *out)
{
    for (size_t i = 0; i < N_TABLES; i++) {
        char q[128];
        snprintf(q, sizeof(q), "SELECT count(*) FROM %s", tables[i]);
        out[i] = tu_query(db, q);
    }
}

/* At the chosen launch: sleep past the lease, let a second controller resume the sweep and run
 * it to its end, then return into the first controller's step. */
static void stall_hook(const char *point, void *data)
{
    stall *s = data;
    if (strcmp(point, "launch") || ++s->n_launch != s->stall_at)
        return;
    usleep((useconds_t)((LEASE_A + 0.3) * 1e6));
    s->b_rc = tu_sweep(s->db, NULL, "fence", &s->b_finished);
    count_rows(s->db, s->counts);
}

static void test_stalled_controller_writes_nothing(void)
{
    const char *db = tu_path("fence.db");
    runner_config *c = tu_config("fence", "--sleep-ms, 20", "budget: {runs: 4}\nparallel: 2\n");
    CHECK(c != NULL);
    stall s = {db, 0, 3, ST_EDB, 0, {0}};
    runner_options o = runner_options_default();
    o.db_path = db;
    o.poll_seconds = 0.005;
    o.lease_seconds = LEASE_A;
    o.pause_hook = stall_hook;
    o.pause_data = &s;
    runner *r = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_launch(c, &o, &r, em), ST_OK);
    st_status rc = runner_run(r);
    CHECK_ST(rc, ST_EBUSY);
    CHECK(strstr(runner_errmsg(r), "lost the sweep's lease to another controller") != NULL);
    runner_destroy(r);

    /* the other controller finished the sweep on its budget */
    CHECK(s.n_launch >= s.stall_at);
    CHECK_ST(s.b_rc, ST_OK);
    CHECK(s.b_finished);
    /* and the stalled one wrote nothing after it woke: not a row in any table */
    long long now[N_TABLES];
    count_rows(db, now);
    for (size_t i = 0; i < N_TABLES; i++)
        if (now[i] != s.counts[i]) {
            fprintf(stderr, "  %s: %lld rows after the takeover, %lld now\n", tables[i],
                    s.counts[i], now[i]);
            CHECK(now[i] == s.counts[i]);
        }
    CHECK(tu_query(db, "SELECT count(*) FROM runs") == 4);
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE status NOT IN (2, 3, 4)") == 0);
    CHECK(tu_query(db, "SELECT count(*) FROM attempts WHERE state IN ('launching', 'running')") ==
          0);
    CHECK(tu_query(db, "SELECT count(*) FROM observations") == 4);
    CHECK(tu_query(db, "SELECT count(*) FROM lease") == 0);
    runner_config_destroy(c);
}

/* Two controllers of one process hold different leases: the second is refused while the first
 * is alive and its lease current (the owner id is no longer just host:pid). */
static void test_same_process_refused(void)
{
    const char *db = tu_path("same.db");
    runner_config *c = tu_config("same", "", "budget: {runs: 2}\n");
    runner_options o = runner_options_default();
    o.db_path = db;
    runner *r = NULL, *r2 = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_launch(c, &o, &r, em), ST_OK);
    CHECK_ST(runner_resume("same", &o, &r2, em), ST_EBUSY);
    CHECK(r2 == NULL && strstr(em, "owned by a live controller"));
    runner_destroy(r);
    CHECK_ST(runner_resume("same", &o, &r2, em), ST_OK);
    runner_destroy(r2);
    runner_config_destroy(c);
}

int main(int argc, char **argv)
{
    (void)argc;
    st_global_init();
    tu_init(argv[0]);
    test_stalled_controller_writes_nothing();
    test_same_process_refused();
    tu_cleanup();
    st_global_cleanup();
    return check_summary("runner.lease");
}
