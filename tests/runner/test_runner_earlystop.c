/*
 * test_runner_earlystop.c — early stopping in the controller (runner_set_stop_check), black-box
 * with the fake trainer's eval curves: a run whose curve is clearly losing is stopped after the
 * minimum fraction and not before, with its reason; a noisy dip (two evals above the line, one
 * short of the patience) does not stop a run; a stopped run is `stopped` with failure none, its
 * metrics and cost so far kept, and the optimizer sees it censored (its bound at its planned
 * cost) in both release modes; resume does not relaunch it. The built-in CARBS-mode check stops
 * a losing run against the front of the runs before it. The front rule against a constructed
 * front (log-cost interpolation by hand); the `early_stopping:` block of a sweep file. The
 * interval borrowed from the finished runs' curves (a second learning phase the run's own
 * points cannot show) replaces the power law's for a run among them, not for one far outside.
 */
#include "tests/runner/runner_test_util.h"

#include <math.h>

#define STEPS 40 /* each run: 40 steps, an eval every 2, 15 ms a step */

/* A test check: says stop when the last eval is above 5, and remembers what it was shown. */
typedef struct probe {
    size_t n_calls;
    double min_fraction; /* the smallest fraction it was called at */
    double planned_cost; /* of the last call */
} probe;

static st_status probe_check(void *ctx, const runner_config *cfg, const char *db_path,
                             const runner_curve *c, runner_stop_verdict *v)
{
    probe *p = ctx;
    (void)cfg;
    (void)db_path;
    p->n_calls++;
    if (!(c->fraction >= p->min_fraction))
        p->min_fraction = c->fraction;
    p->planned_cost = c->planned_cost;
    v->stop = c->loss[c->n - 1] > 5;
    snprintf(v->reason, sizeof(v->reason), "probe saw %.3g", c->loss[c->n - 1]);
    v->bound = 6.5;
    v->final_cost = 41;
    return ST_OK;
}

static st_status sweep_with(const char *db, runner_config *cfg, const char *name, runner_stop_fn fn,
                            void *ctx)
{
    runner_options o = runner_options_default();
    o.db_path = db;
    o.poll_seconds = 0.005;
    runner *r = NULL;
    char em[ST_ERRMSG_MAX];
    st_status rc = cfg ? runner_launch(cfg, &o, &r, em) : runner_resume(name, &o, &r, em);
    if (rc) {
        fprintf(stderr, "launch/resume: %s\n", em);
        return rc;
    }
    runner_set_stop_check(r, fn, ctx);
    rc = runner_run(r);
    if (rc)
        fprintf(stderr, "run: %s\n", runner_errmsg(r));
    runner_destroy(r);
    return rc;
}

static void check_stopped_run(const char *db, const char *name, int det)
{
    /* run 2 (clearly losing from its first eval) is stopped at 20% + two more evals (patience
     * 3): 30% of its steps, with failure none and its reason */
    CHECK(tu_query(db, "SELECT status FROM runs WHERE id = 2") == RUNNER_RUN_STOPPED);
    CHECK(tu_query(db, "SELECT failure FROM runs WHERE id = 2") == RUNNER_FAIL_NONE);
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE id = 2 AND stop_reason LIKE "
                       "'at 30% of its steps after 3 evals saying stop: probe saw 7.08%'") == 1);
    /* its curve and its cost so far are kept: above 30% of the full cost, below all of it */
    CHECK(tu_query(db, "SELECT count(*) FROM metric_points m JOIN attempts a ON a.id = "
                       "m.attempt_id WHERE a.run_id = 2 AND m.event = 2") >= 6);
    CHECK(tu_query(db, "SELECT cost > 0.3 * 41 AND cost < 41 FROM runs WHERE id = 2") == 1);
    /* censored: observed as a success at its bound with its planned cost, never a failure */
    CHECK(tu_query(db, "SELECT count(*) FROM observations WHERE run_id = 2 AND output = 6.5 "
                       "AND cost = 41 AND failed = 0") == 1);
    /* the dip (run 3: two evals above the line, one short of the patience) ran to the end */
    CHECK(tu_query(db, "SELECT status FROM runs WHERE id = 3") == RUNNER_RUN_SUCCEEDED);
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE status = 2") == 3);
    runner_store *s = NULL;
    CHECK_ST(runner_store_open(db, &s, NULL), ST_OK);
    runner_status st;
    CHECK_ST(runner_store_status(s, name, &st), ST_OK);
    CHECK(st.n_by_status[RUNNER_RUN_STOPPED] == 1 && st.n_by_status[RUNNER_RUN_FAILED] == 0);
    runner_sweep *w = NULL;
    CHECK_ST(runner_store_read_sweep(s, name, &w), ST_OK);
    CHECK(w && w->n_runs == 4 && w->runs[1].stopped_early && !w->runs[0].stopped_early);
    CHECK(w && w->runs[1].bound_objective == 6.5 && w->runs[1].bound_cost == 41);
    runner_sweep_free(w);
    char *js = NULL;
    CHECK_ST(runner_store_export_json(s, name, &js), ST_OK);
    CHECK(js && strstr(js, "\"stop_reason\": \"at 30% of its steps") &&
          strstr(js, "\"bound_objective\": 6.5"));
    st_free(js);
    runner_store_close(s);
    (void)det;
}

static void stops_losing_run(int det)
{
    char name[32], db[64], extra[256];
    snprintf(name, sizeof(name), "es%d", det);
    snprintf(db, sizeof(db), "es%d.db", det);
    const char *dbp = tu_path(db);
    snprintf(extra, sizeof(extra),
             "budget: {runs: 4}\nseed: 3\ndeterministic: %s\n"
             "early_stopping: {enabled: true}\n",
             det ? "true" : "false");
    runner_config *cfg =
        tu_config(name,
                  "--loss, 2, --steps, 40, --eval-every, 2, --sleep-ms, 15, --bad-runs, 2, "
                  "--spike-runs, '3', --spikes, '12,14'",
                  extra);
    CHECK(cfg != NULL);
    if (!cfg)
        return;
    probe p = {0, INFINITY, NAN};
    CHECK_ST(sweep_with(dbp, cfg, NULL, probe_check, &p), ST_OK);
    runner_config_destroy(cfg);
    CHECK(p.n_calls > 0);
    CHECK(p.min_fraction >= 0.2);        /* never asked before 20% of the run */
    CHECK_REL(p.planned_cost, 41, 1e-9); /* cost so far / fraction: 1 + steps */
    check_stopped_run(dbp, name, det);

    /* resume: the run stopped early has ended and stays; a run the user stopped (as `sweep
     * stop` leaves it: stopped, failure `stopped`, no reason) is relaunched */
    sqlite3 *h = NULL;
    sqlite3_open(dbp, &h);
    CHECK(sqlite3_exec(h,
                       "UPDATE runs SET status = 5, failure = 12 WHERE id = 4; DELETE FROM "
                       "observations WHERE run_id = 4",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    CHECK_ST(sweep_with(dbp, NULL, name, probe_check, &p), ST_OK);
    CHECK(tu_query(dbp, "SELECT count(*) FROM attempts WHERE run_id = 2") == 1);
    CHECK(tu_query(dbp, "SELECT status FROM runs WHERE id = 2") == RUNNER_RUN_STOPPED);
    CHECK(tu_query(dbp, "SELECT count(*) FROM attempts WHERE run_id = 4") == 2);
    CHECK(tu_query(dbp, "SELECT status FROM runs WHERE id = 4") == RUNNER_RUN_SUCCEEDED);
    CHECK(tu_query(dbp, "SELECT count(*) FROM runs") == 4);
}

static void front_check_stops(void)
{
    const char *db = tu_path("front.db");
    runner_config *cfg =
        tu_config("front", "--loss, 2, --steps, 40, --eval-every, 2, --sleep-ms, 15, --bad-runs, 3",
                  "budget: {runs: 3}\nseed: 5\nearly_stopping: {enabled: true}\n");
    CHECK(cfg != NULL);
    if (!cfg)
        return;
    CHECK_ST(sweep_with(db, cfg, NULL, runner_stop_check_front, NULL), ST_OK);
    runner_config_destroy(cfg);
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE status = 2") == 2);
    CHECK(tu_query(db, "SELECT status FROM runs WHERE id = 3") == RUNNER_RUN_STOPPED);
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE id = 3 AND stop_reason LIKE "
                       "'%above the front%'") == 1);
    /* its bound: below its true 7, far above the front's 2 (the default misfit, 15%) */
    CHECK(tu_query(db, "SELECT bound_objective > 5 AND bound_objective < 7 FROM runs "
                       "WHERE id = 3") == 1);
    CHECK(tu_query(db, "SELECT count(*) FROM observations WHERE run_id = 3 AND failed = 0") == 1);
}

static void front_rule(void)
{
    double fc[3] = {1, 10, 100}, fo[3] = {3.0, 2.0, 1.5};
    int stop = -1;
    char why[200];
    /* at cost sqrt(10) the front is halfway on ln cost: 2.5; with 1% margin the line is 2.525 */
    runner_stop_rule_front(2.53, sqrt(10), fc, fo, 3, 0.01, &stop, why);
    CHECK(stop == 1 && strstr(why, "2.5"));
    runner_stop_rule_front(2.52, sqrt(10), fc, fo, 3, 0.01, &stop, why);
    CHECK(stop == 0);
    runner_stop_rule_front(2.4, sqrt(10), fc, fo, 3, 0.0, &stop, NULL);
    CHECK(stop == 0);
    /* beyond the front: its last point; below its cheapest point: never */
    runner_stop_rule_front(1.6, 1000, fc, fo, 3, 0.01, &stop, why);
    CHECK(stop == 1);
    runner_stop_rule_front(100, 0.5, fc, fo, 3, 0.01, &stop, why);
    CHECK(stop == 0);
    runner_stop_rule_front(100, 5, fc, fo, 0, 0.01, &stop, why);
    CHECK(stop == 0);
    runner_stop_rule_front(NAN, 5, fc, fo, 3, 0.01, &stop, why);
    CHECK(stop == 0);
}

static void config_block(void)
{
    runner_config *c = tu_config("cfg", "", "budget: {runs: 1}\n");
    CHECK(c && !c->es_enabled && c->es_patience == 3 && c->es_min_fraction == 0.2 &&
          c->es_margin == 0.01);
    runner_config_destroy(c);
    c = tu_config("cfg", "",
                  "budget: {runs: 1}\nearly_stopping: {enabled: true, patience: 5, "
                  "min_fraction: 0.3, margin: 0.02}\n");
    CHECK(c && c->es_enabled && c->es_patience == 5 && c->es_min_fraction == 0.3 &&
          c->es_margin == 0.02);
    runner_config_destroy(c);
    const char *bad[3] = {"early_stopping: {enabled: true, min_fraction: 1.5}\n",
                          "early_stopping: {patience: 0}\n", "early_stopping: {wait: 3}\n"};
    for (int i = 0; i < 3; i++) {
        char text[1024], em[ST_ERRMSG_MAX] = "";
        snprintf(text, sizeof(text),
                 "name: b\ncommand: [x]\nobjective: {metric: val_loss}\nparameters:\n"
                 "  x: {space: linear, min: 0, max: 1, center: 0.5}\nbudget: {runs: 1}\n%s",
                 bad[i]);
        c = NULL;
        CHECK_ST(runner_config_load_string(text, strlen(text), "b", &c, em), ST_EINVAL);
        CHECK(c == NULL && strstr(em, "early_stopping"));
    }
}

/* ---- the interval borrowed from the finished runs' curves ---------------------------------- */

#define BS 1000 /* steps of each run; an eval every 50 */

/* A curve with a second learning phase at 60% of the run whose depth grows with ln lr: the
 * power law of the first 30% cannot see it, the finished runs went through it. */
static double phased(double lr, double s, double deep)
{
    double drop = deep * (0.2 + 0.1 * log(lr / 1e-3));
    return 2.0 + 3.0 / sqrt(s) - drop / (1.0 + exp(-(s - 600.0) / 40.0));
}

/* A sweep of n finished runs at lr log-spaced over [lo, hi], each with its eval curve; with
 * `sched`, a categorical second parameter alternating between its two choices, and the second
 * choice's runs drop twice as deep (another shape: no kin of the first's). */
static const char *borrow_store(const char *file, double lo, double hi, int n, int sched)
{
    const char *db = tu_path(file);
    char em[ST_ERRMSG_MAX] = "", yaml[512];
    snprintf(yaml, sizeof(yaml),
             "name: bw\nobjective: {metric: val_loss}\ncost: {metric: flops}\nparameters:\n"
             "  lr: {space: log, min: 1e-4, max: 1e-2, center: 1e-3}\n%sbudget: {runs: 40}\n",
             sched ? "  sched: {choices: [cosine, wsd]}\n" : "");
    CHECK_ST(runner_store_create_sweep(db, yaml, em), ST_OK);
    if (em[0])
        fprintf(stderr, "create: %s\n", em);
    runner_store *s = NULL;
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    sqlite3 *h = NULL;
    sqlite3_open(db, &h);
    for (int j = 0; j < n; j++) {
        double x[2] = {lo * pow(hi / lo, j / (n - 1.0)), j % 2}, deep = sched && j % 2 ? 2 : 1;
        uint64_t id = 0;
        CHECK_ST(runner_store_record(s, "bw", x, phased(x[0], BS, deep), 1.0, 0, NULL, &id), ST_OK);
        char sql[256];
        snprintf(sql, sizeof(sql),
                 "INSERT INTO attempts(id, run_id, number, state, backend, dir, slot, started) "
                 "VALUES (%llu, %llu, 1, 'exited', 'test', '/tmp', 0, 0)",
                 (unsigned long long)id, (unsigned long long)id);
        CHECK(sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK);
        for (int k = 50; k <= BS; k += 50) {
            snprintf(sql, sizeof(sql),
                     "INSERT INTO metric_points(attempt_id, event, step, t, line) VALUES (%llu, 2, "
                     "%d, 0, '{\"event\":\"eval\",\"step\":%d,\"val_loss\":%.10g}')",
                     (unsigned long long)id, k, k, phased(x[0], k, deep));
            CHECK(sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK);
        }
    }
    sqlite3_close(h);
    runner_store_close(s);
    return db;
}

/* runner_curve_interval_law for a run at lr (x NULL when !with_x) cut at 30% of its steps */
static st_status borrow_interval(const char *db, double lr, int with_x, double deep, double *pred,
                                 double *lo, double *hi, int *how)
{
    runner_store *s = NULL;
    runner_sweep *w = NULL;
    CHECK_ST(runner_store_open(db, &s, NULL), ST_OK);
    CHECK_ST(runner_store_read_sweep(s, "bw", &w), ST_OK);
    double step[6], loss[6];
    for (int k = 0; k < 6; k++) {
        step[k] = 50.0 * (k + 1);
        loss[k] = phased(lr, step[k], deep);
    }
    double x[2] = {lr, deep > 1};
    runner_curve c;
    memset(&c, 0, sizeof(c));
    c.run = 999;
    c.x = with_x ? x : NULL;
    c.n = 6;
    c.step = step;
    c.loss = loss;
    c.planned_steps = BS;
    c.planned_tokens = c.planned_cost = NAN;
    c.fraction = 0.3;
    char em[ST_ERRMSG_MAX] = "";
    st_status rc = w ? runner_curve_interval_law(w->cfg, db, &c, pred, lo, hi, how, em) : ST_EDB;
    if (rc)
        fprintf(stderr, "borrow interval: %s\n", em);
    runner_sweep_free(w);
    runner_store_close(s);
    return rc;
}

static void borrowed_interval(void)
{
    const char *db = borrow_store("borrow.db", 1e-4, 1e-2, 12, 0);
    double lr = 2e-3, want = phased(lr, BS, 1), p, lo, hi, pp, plo, phi;
    int how = -1;
    CHECK_ST(borrow_interval(db, lr, 1, 1, &p, &lo, &hi, &how), ST_OK);
    CHECK(how == RUNNER_CURVE_BORROWED);
    CHECK(fabs(p / want - 1) < 0.005 && lo <= want && want <= hi);
    /* without the run's parameters: the power law of its own points, which misses the drop */
    CHECK_ST(borrow_interval(db, lr, 0, 1, &pp, &plo, &phi, &how), ST_OK);
    CHECK(how == 0 && pp / want - 1 > 0.05 && (phi - plo) / pp > (hi - lo) / p);
    printf("borrowed: final %.4f, borrowed %.4f [%.4f, %.4f], power law %.4f [%.4f, %.4f]\n", want,
           p, lo, hi, pp, plo, phi);
    /* a run far outside its kin's learning rates is the law's: kin at 1e-4..1e-3, run at 1e-2 */
    const char *db2 = borrow_store("borrow2.db", 1e-4, 1e-3, 8, 0);
    CHECK_ST(borrow_interval(db2, 1e-2, 1, 1, &p, &lo, &hi, &how), ST_OK);
    CHECK(how == 0);
    CHECK_ST(borrow_interval(db2, 5e-4, 1, 1, &p, &lo, &hi, &how), ST_OK);
    want = phased(5e-4, BS, 1);
    CHECK(how == RUNNER_CURVE_BORROWED && fabs(p / want - 1) < 0.01 && lo <= want && want <= hi);
    /* a categorical choice: each run borrows from the runs of its own choice only */
    const char *db3 = borrow_store("borrow3.db", 1e-4, 1e-2, 24, 1);
    for (int deep = 1; deep <= 2; deep++) {
        want = phased(lr, BS, deep);
        CHECK_ST(borrow_interval(db3, lr, 1, deep, &p, &lo, &hi, &how), ST_OK);
        CHECK(how == RUNNER_CURVE_BORROWED && fabs(p / want - 1) < 0.01 && lo <= want &&
              want <= hi);
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    tu_init(argv[0]);
    st_global_init();
    config_block();
    front_rule();
    stops_losing_run(0);
    stops_losing_run(1);
    front_check_stops();
    borrowed_interval();
    st_global_cleanup();
    tu_cleanup();
    return check_summary("test_runner_earlystop");
}
