/*
 * test_runner_asktell.c — a rebuilt optimizer is the live one: 64 asks through the store
 * (runner_store_ask/tell, each rebuilding the optimizer) give the same suggestions, bit for
 * bit and in the same order, as one carbs handle kept alive in process (the independent
 * reference), serially and with three runs in flight; and a controller killed with SIGKILL at
 * random points and resumed until done leaves the same runs in its store as an uninterrupted
 * sweep, with one slot and with two (deterministic release).
 */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "carbs/carbs.h"
#include "runner/runner.h"
#include "tests/runner/runner_test_util.h"

#define N_ASKS 64

#define ASK_YAML                                                                                   \
    "name: %s\n"                                                                                   \
    "command: ['true']\n"                                                                          \
    "objective: {metric: loss}\n"                                                                  \
    "cost: {metric: flops}\n"                                                                      \
    "parameters:\n"                                                                                \
    "  x: {space: linear, min: -2, max: 3, center: 0}\n"                                           \
    "  k: {value: 7}\n"                                                                            \
    "  y: {space: log, min: 0.01, max: 100, center: 1}\n"                                          \
    "seed: 11\n"                                                                                   \
    "budget: {runs: 1000}\n"                                                                       \
    "optimizer: {num_random_samples: 5, resample_frequency: 4}\n"

/* The objective of the ask/tell tests: a bowl in (x, log10 y), failed for x > 2.4; the cost
 * grows with x. */
static int evaluate(const double *all, double *out, double *cost)
{
    double x = all[0], ly = log10(all[2]);
    *out = 1 + (x - 0.7) * (x - 0.7) + (ly + 0.4) * (ly + 0.4);
    *cost = 1 + exp(x);
    return x > 2.4;
}

/* The reference: one carbs handle with the sweep's options, kept alive. */
static carbs *reference(const runner_config *cfg)
{
    carbs_param ps[2];
    size_t d = 0;
    for (size_t i = 0; i < cfg->n_params; i++)
        if (!cfg->params[i].is_fixed)
            ps[d++] = cfg->params[i].p;
    carbs_options o = carbs_options_default();
    char em[ST_ERRMSG_MAX];
    for (size_t i = 0; i < cfg->n_opts; i++)
        CHECK_ST(carbs_options_set(&o, cfg->opt_names[i], cfg->opt_values[i], em), ST_OK);
    o.seed = cfg->seed;
    carbs *c = NULL;
    CHECK_ST(carbs_create(ps, d, &o, &c, em), ST_OK);
    return c;
}

static runner_config *ask_sweep(const char *db, const char *name)
{
    char text[2048], em[ST_ERRMSG_MAX];
    snprintf(text, sizeof(text), ASK_YAML, name);
    runner_config *cfg = NULL;
    st_status rc = runner_config_load_string(text, strlen(text), name, &cfg, em);
    CHECK_ST(rc, ST_OK);
    if (rc)
        printf("config: %s\n", em);
    if (rc)
        return NULL;
    runner_options o = runner_options_default();
    o.db_path = db;
    runner *r = NULL;
    CHECK_ST(runner_launch(cfg, &o, &r, em), ST_OK); /* as `scaletune sweep create` */
    runner_destroy(r);
    return cfg;
}

/* N_ASKS asks with `inflight` runs open at a time (told oldest first), in process and through
 * the store; returns the number of suggestions that were the same. *repeats: suggestions the
 * reference made at a point already suggested (its resamples), *resamples its RESAMPLE phases. */
static size_t compare(size_t inflight, size_t *repeats, size_t *resamples)
{
    char name[32];
    snprintf(name, sizeof(name), "ask%zu", inflight);
    const char *db = tu_path(inflight == 1 ? "ask1.db" : "askn.db");
    runner_config *cfg = ask_sweep(db, name);
    carbs *c = cfg ? reference(cfg) : NULL;
    runner_store *s = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    if (!c || !s) {
        carbs_destroy(c);
        runner_store_close(s);
        runner_config_destroy(cfg);
        return 0;
    }
    double xs[N_ASKS][3], xr[N_ASKS][3];
    uint64_t sid[N_ASKS], cid[N_ASKS];
    size_t same = 0, told = 0;
    *repeats = *resamples = 0;
    for (size_t k = 0; k < N_ASKS; k++) {
        double x2[2];
        CHECK_ST(carbs_suggest(c, x2, &cid[k]), ST_OK);
        carbs_suggestion_info info;
        carbs_last_info(c, &info);
        *resamples += info.phase == CARBS_PHASE_RESAMPLE;
        xr[k][0] = x2[0], xr[k][1] = 7, xr[k][2] = x2[1];
        st_status rc = runner_store_ask(s, name, &sid[k], xs[k], 3);
        CHECK_ST(rc, ST_OK);
        if (rc)
            break;
        same += !memcmp(xs[k], xr[k], sizeof(xr[k]));
        for (size_t j = 0; j < k; j++)
            if (!memcmp(xr[j], xr[k], sizeof(xr[k]))) {
                ++*repeats;
                break;
            }
        while (told + inflight <= k + 1 && told <= k) {
            double out, cost;
            int failed = evaluate(xs[told], &out, &cost);
            out += 1e-3 * sin((double)told); /* noisy: repeats differ, resampling goes on */
            CHECK_ST(carbs_observe(c, cid[told], NULL, out, cost, failed), ST_OK);
            CHECK_ST(runner_store_tell(s, name, sid[told], failed ? NAN : out, cost, failed),
                     ST_OK);
            told++;
        }
    }
    carbs_destroy(c);
    runner_store_close(s);
    runner_config_destroy(cfg);
    return same;
}

static void test_ask_equals_live(void)
{
    size_t rep, res;
    size_t same = compare(1, &rep, &res);
    printf("serial: %zu of %d asks as in process, %zu resamples, %zu repeated points\n", same,
           N_ASKS, res, rep);
    CHECK(same == N_ASKS);
    CHECK(res >= 5); /* the resample rule was exercised (the old rebuild lost its counter) */
    CHECK(rep <= res);
    same = compare(3, &rep, &res);
    printf("3 in flight: %zu of %d asks as in process, %zu resamples\n", same, N_ASKS, res);
    CHECK(same == N_ASKS);
    CHECK(res >= 3);
}

/* ---- a controller killed and resumed ------------------------------------------------------ */

static runner_config *kill_config(const char *name, int slots)
{
    char extra[512];
    snprintf(extra, sizeof(extra),
             "budget: {runs: 18}\nparallel: %d\nseed: 5\n"
             "optimizer: {num_random_samples: 4, resample_frequency: 3}\n",
             slots);
    return tu_config(name, "--cost-pow2, '{x}', --steps, '3', --sleep-rand-ms, '20'", extra);
}

/* Whether the store at `db` holds sweep `name` (a launch killed before it recorded the sweep
 * leaves no store, or one without it: launch again, as a user would). */
static int store_has_sweep(const char *db, const char *name)
{
    sqlite3 *h = NULL;
    int has = 0;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(h, "SELECT count(*) FROM sweeps WHERE name = ?1", -1, &st, NULL) ==
            SQLITE_OK) {
            sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
            has = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return has;
}

/* Runs the sweep in a child (launch, or resume when the store has it) and kills it with
 * SIGKILL after a random delay; until a child finishes. Returns the number of kills. */
static int run_with_kills(const char *db, const char *name, int slots, unsigned *seed)
{
    int kills = 0;
    for (int round = 0; round < 200; round++) {
        int resume = store_has_sweep(db, name);
        pid_t pid = fork();
        if (pid == 0) {
            runner_config *c = kill_config(name, slots);
            if (!c)
                _exit(4);
            runner_options o = runner_options_default();
            o.db_path = db;
            o.poll_seconds = 0.005;
            runner *r = NULL;
            char em[ST_ERRMSG_MAX];
            st_status rc = resume ? runner_resume(name, &o, &r, em) : runner_launch(c, &o, &r, em);
            if (!rc)
                rc = runner_run(r);
            int fin = !rc && runner_finished(r);
            if (rc)
                fprintf(stderr, "child: %s\n", r ? runner_errmsg(r) : em);
            runner_destroy(r);
            runner_config_destroy(c);
            _exit(fin ? 0 : 3);
        }
        if (pid < 0)
            return -1;
        /* 30-430 ms, the window widened by one more such span every 25 kills, so that a
         * controller on a loaded machine, whose start alone can take longer than the first
         * window, still gets to finish (the kills before it are the test) */
        long ms = (30 + rand_r(seed) % 400) * (1 + round / 25);
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        int status = 0;
        nanosleep(&ts, NULL);
        if (waitpid(pid, &status, WNOHANG) == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            kills++;
            continue;
        }
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        return kills;
    }
    return kills;
}

/* Whether two stores hold the same runs (parameters, status, objective) in the same order and
 * the same observations in the same order. */
static int same_store(const char *a, const char *b)
{
    sqlite3 *h = NULL;
    int same = 0;
    if (sqlite3_open_v2(a, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        char att[4400];
        snprintf(att, sizeof(att), "ATTACH '%s' AS o", b);
        sqlite3_stmt *st = NULL;
        const char *sql = "SELECT (SELECT count(*) FROM main.runs) = (SELECT count(*) FROM o.runs)"
                          " AND NOT EXISTS (SELECT id, x, status, objective FROM main.runs "
                          "EXCEPT SELECT id, x, status, objective FROM o.runs) AND "
                          "(SELECT count(*) FROM main.observations) = (SELECT count(*) FROM "
                          "o.observations) AND NOT EXISTS (SELECT id, run_id, x, output, cost "
                          "FROM main.observations EXCEPT SELECT id, run_id, x, output, cost FROM "
                          "o.observations)";
        if (sqlite3_exec(h, att, NULL, NULL, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            same = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return same;
}

static void test_kill_resume(int slots, unsigned seed)
{
    char name[16], dbu[32], dbk[32];
    snprintf(name, sizeof(name), "kill%d", slots);
    snprintf(dbu, sizeof(dbu), "kill%d-whole.db", slots);
    snprintf(dbk, sizeof(dbk), "kill%d-killed.db", slots);
    const char *whole = tu_path(dbu);
    runner_config *c = kill_config(name, slots);
    int fin = 0;
    CHECK_ST(tu_sweep(whole, c, name, &fin), ST_OK);
    CHECK(fin);
    runner_config_destroy(c);
    const char *killed = tu_path(dbk);
    int kills = run_with_kills(killed, name, slots, &seed);
    printf("parallel %d: killed %d times\n", slots, kills);
    CHECK(kills >= 2);
    CHECK(tu_query(killed, "SELECT count(*) FROM runs") == 18);
    CHECK(tu_query(whole, "SELECT count(*) FROM runs WHERE status = 2") >= 16);
    CHECK(same_store(whole, killed));
}

int main(int argc, char **argv)
{
    (void)argc;
    st_global_init();
    tu_init(argv[0]);
    test_ask_equals_live();
    test_kill_resume(1, 7);
    test_kill_resume(2, 8);
    tu_cleanup();
    st_global_cleanup();
    return check_summary("runner.asktell");
}
