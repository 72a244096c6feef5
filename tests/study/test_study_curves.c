/*
 * test_study_curves.c — study/study_curves.c: curve points from a run's stored step records.
 * A run's training loss is written step by step from a known loss-curve law (Tissue et al.
 * 2024: L0 + A S1^-alpha - C S2, computed here by its own loop) under a cosine schedule; the
 * study must say that the same run trained to 1/4 and 1/2 of its steps (the cosine over fewer
 * steps) ends at its objective times the law's ratio L(short) / L(whole), at 1/4 and 1/2 of its
 * tokens. A run without records gives no point; curves off gives none. A run that reports every
 * 20th step only (from step 20, as a trainer that logs every k steps does) gives the same two
 * points, its schedule interpolated between the records.
 * Cooldown branches (check_branches): a run whose final says "branch":1 and "parent_run":P is a
 * point of run P at its own tokens and objective, never an independent run; one whose parent is
 * not a successful run, or whose "parent_run" is not a run id, is not a point.
 */
#include "common/st.h"
#include "runner/runner.h"
#include "study/study.h"
#include "tests/check.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const double L0 = 1.5, A = 0.5, ALPHA = 0.5, CC = 0.3, PEAK = 1e-3, RMIN = 0.1;
static const double LAMBDA = 0.999; /* fit_curve_options_default's */
enum { S = 400 };

/* cosine from PEAK at step 1 to RMIN PEAK at step n */
static double eta(size_t s, size_t n)
{
    double p = (double)(s - 1) / (double)(n - 1);
    return PEAK * (RMIN + (1 - RMIN) * 0.5 * (1 + cos(M_PI * p)));
}

/* the law after `upto` steps of the n-step cosine (the paper's areas, eta_0 = eta_1) */
static double law_at(size_t upto, size_t n)
{
    double S1 = 0, S2 = 0, m = 0, prev = eta(1, n);
    for (size_t s = 1; s <= upto; s++) {
        double e = eta(s, n);
        m = LAMBDA * m + fmax(0, prev - e);
        S1 += e;
        S2 += m;
        prev = e;
    }
    return L0 + A * pow(S1, -ALPHA) - CC * S2;
}

static const char *const yaml =
    "name: curves\n"
    "objective: {metric: val_loss}\n"
    "cost: {metric: flops}\n"
    "budget: {runs: 10}\n"
    "parameters:\n"
    "  N:      {space: log, min: 1.0e4, max: 1.0e6, center: 1.0e5}\n"
    "  tokens: {space: log, min: 1.0e5, max: 1.0e7, center: 1.0e6}\n"
    "  lr:     {space: log, min: 1.0e-4, max: 1.0e-2, center: 1.0e-3}\n";

/* the run's step records (every `every`-th step, from step `every`) into the store's tables, as
 * the controller writes them */
static void write_curve(const char *db, uint64_t run, size_t every)
{
    sqlite3 *h = NULL;
    CHECK(sqlite3_open(db, &h) == SQLITE_OK);
    char sql[512];
    snprintf(sql, sizeof(sql),
             "INSERT INTO attempts(run_id, number, state, backend, dir, slot, started) "
             "VALUES(%llu, 1, 'succeeded', 'local', '/tmp', 0, 0)",
             (unsigned long long)run);
    CHECK(sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK);
    long long att = sqlite3_last_insert_rowid(h);
    sqlite3_exec(h, "BEGIN", NULL, NULL, NULL);
    for (size_t s = every; s <= S; s += every) {
        snprintf(sql, sizeof(sql),
                 "INSERT INTO metric_points(attempt_id, event, step, t, line) VALUES(%lld, 1, "
                 "%zu, 0, '{\"event\":\"step\",\"step\":%zu,\"loss\":%.17g,\"lr\":%.17g}')",
                 att, s, s, law_at(s, S), eta(s, S));
        sqlite3_exec(h, sql, NULL, NULL, NULL);
    }
    sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(h);
}

/* A new store in a new directory `dir` (a mkdtemp template) holding the sweep of `yaml`, at
 * `db` (of 256 bytes), opened. */
static runner_store *store_new(char *dir, char *db)
{
    char em[ST_ERRMSG_MAX];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(db, 256, "%s/s.db", dir);
    CHECK_ST(runner_store_create_sweep(db, yaml, em), ST_OK);
    runner_store *st = NULL;
    CHECK_ST(runner_store_open(db, &st, em), ST_OK);
    return st;
}

/* Removes the store `db` and its directory `dir`. */
static void store_remove(const char *dir, const char *db)
{
    unlink(db);
    char more[300];
    snprintf(more, sizeof(more), "rm -rf '%s'", dir);
    CHECK(system(more) == 0);
}

/* A store with two runs told `val` at D tokens, the first with step records every `every`
 * steps; the study's curve points (o.curves on) are checked against the law's ratio to `tol`. */
static void check_points(size_t every, double tol)
{
    char dir[] = "/tmp/st_curves_XXXXXX", db[256], em[ST_ERRMSG_MAX];
    runner_store *st = store_new(dir, db);
    uint64_t id[2];
    double x[3], val = 1.1 * law_at(S, S), D = 409600;
    for (int r = 0; r < 2; r++) {
        CHECK_ST(runner_store_ask(st, "curves", &id[r], x, 3), ST_OK);
        char fin[256];
        snprintf(fin, sizeof(fin), "{\"event\":\"final\",\"params\":%g,\"tokens\":%g}", x[0], D);
        CHECK_ST(runner_store_tell_final(st, "curves", id[r], val, 6 * x[0] * D, 0, fin), ST_OK);
    }
    runner_store_close(st);
    write_curve(db, id[0], every); /* the second run has no records: no point */

    study_options o = study_options_default();
    study *s = NULL;
    CHECK_ST(study_open(db, "curves", &o, &s, em), ST_OK);
    CHECK(study_n_curve_points(s) == 0); /* off by default */
    study_destroy(s);
    o.curves = 1;
    CHECK_ST(study_open(db, "curves", &o, &s, em), ST_OK);
    CHECK(study_n_curve_points(s) == 2);
    for (size_t c = 0; c < study_n_curve_points(s); c++) {
        size_t k;
        double Dc, y;
        CHECK_ST(study_curve_point(s, c, &k, &Dc, &y), ST_OK);
        double f = c == 0 ? 0.25 : 0.5;
        size_t Sf = (size_t)(f * S);
        double want = val * law_at(Sf, Sf) / law_at(S, S);
        printf("every %zu: point %zu: run %zu, D %g (want %g), objective %.5f (want %.5f, whole "
               "run %.5f)\n",
               every, c, k, Dc, f * D, y, want, val);
        CHECK(k == 0);
        CHECK_REL(Dc, f * D, 1e-12);
        CHECK_REL(y, want, tol);
        CHECK(y > val);
    }
    CHECK_ST(study_curve_point(s, 2, NULL, NULL, NULL), ST_EINVAL);
    study_destroy(s);
    store_remove(dir, db);
}

/* Tells run `id` of sweep "curves" with objective `val` and the final record `fin` (a format
 * with %g for N and D, then the rest). */
static void tell(runner_store *st, uint64_t id, double N, double D, double val, int failed,
                 const char *extra)
{
    char fin[256];
    snprintf(fin, sizeof(fin), "{\"event\":\"final\",\"params\":%.17g,\"tokens\":%.17g%s}", N, D,
             extra);
    CHECK_ST(runner_store_tell_final(st, "curves", id, val, 6 * N * D, failed, fin), ST_OK);
}

/* Runs 1-3 ordinary (run 3 told failed: diverged); then branches: of run 1 at 0.3 D (a point), of
 * run 3 (failed parent: unused), of run 99 (no such run: unused), and a final with "parent_run" 1.5
 * (not an id: an ordinary run). */
static void check_branches(void)
{
    char dir[] = "/tmp/st_branches_XXXXXX", db[256], em[ST_ERRMSG_MAX];
    runner_store *st = store_new(dir, db);
    uint64_t id[7];
    double x[3], D = 409600;
    for (int r = 0; r < 7; r++)
        CHECK_ST(runner_store_ask(st, "curves", &id[r], x, 3), ST_OK);
    tell(st, id[0], 1e5, D, 2.0, 0, "");
    tell(st, id[1], 2e5, D, 1.9, 0, "");
    tell(st, id[2], 3e5, D, NAN, 1, "");
    char br[128];
    snprintf(br, sizeof(br), ",\"branch\":1,\"parent_run\":%llu", (unsigned long long)id[0]);
    tell(st, id[3], 1e5, 0.3 * D, 2.4, 0, br);
    snprintf(br, sizeof(br), ",\"branch\":1,\"parent_run\":%llu", (unsigned long long)id[2]);
    tell(st, id[4], 3e5, 0.3 * D, 2.2, 0, br);
    tell(st, id[5], 1e5, 0.6 * D, 2.1, 0, ",\"branch\":1,\"parent_run\":99");
    tell(st, id[6], 1.5e5, D, 1.95, 0, ",\"branch\":1,\"parent_run\":1.5");
    runner_store_close(st);

    study_options o = study_options_default();
    study *s = NULL;
    CHECK_ST(study_open(db, "curves", &o, &s, em), ST_OK);
    const study_counts *c = study_get_counts(s);
    printf("branches: %zu runs, %zu used, %zu branch points, %zu unused\n", c->n_runs, c->n_used,
           c->n_branch_points, c->n_branch_unused);
    CHECK(c->n_runs == 7);
    CHECK(c->n_used == 4);      /* runs 1-3 and the one whose parent_run is not an id */
    CHECK(c->n_succeeded == 3); /* run 3 failed: told failed, it diverged */
    CHECK(c->n_diverged == 1);
    CHECK(c->n_branch_points == 1);
    CHECK(c->n_branch_unused == 2);
    CHECK(study_n_curve_points(s) == 1);
    size_t k;
    double Dc, y;
    CHECK_ST(study_curve_point(s, 0, &k, &Dc, &y), ST_OK);
    CHECK(k == 0); /* engine run 0 is run 1 */
    CHECK_REL(Dc, 0.3 * D, 1e-12);
    CHECK_REL(y, 2.4, 1e-12);
    study_destroy(s);
    /* extrapolate --no-branches: every branch unused, no point */
    o.branches = 0;
    CHECK_ST(study_open(db, "curves", &o, &s, em), ST_OK);
    c = study_get_counts(s);
    CHECK(c->n_branch_points == 0 && c->n_branch_unused == 3 && c->n_used == 4);
    CHECK(study_n_curve_points(s) == 0);
    study_destroy(s);
    store_remove(dir, db);
}

int main(void)
{
    st_global_init();
    check_branches();
    check_points(1, 5e-4);
    check_points(20, 5e-3);
    return check_summary("test_study_curves");
}
