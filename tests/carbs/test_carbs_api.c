/*
 * The public API of carbs/: bad input gets a status and a message naming the culprit (never a
 * crash), ids and outstanding suggestions, forget and expiry, batches of distinct points,
 * determinism, save/load giving the same next suggestion, warm start with an added parameter,
 * failures (explicit and non-finite) and the phases, the option table.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "carbs/carbs.h"
#include "tests/check.h"

#define D 3

static void space3(carbs_param *p)
{
    carbs_param_init(&p[0], "lr", CARBS_SPACE_LOG, 1e-3);
    p[0].min = 1e-5;
    p[0].max = 1.0;
    carbs_param_init(&p[1], "width", CARBS_SPACE_LOG, 128);
    p[1].min = 16;
    p[1].max = 1024;
    p[1].is_integer = 1;
    p[1].rounding = 16;
    carbs_param_init(&p[2], "warmup", CARBS_SPACE_LOGIT, 0.05);
}

/* a smooth toy: optimum near lr 1e-2.5, width 256; cost grows with width */
static double toy(const double *x, double *cost)
{
    double a = log10(x[0]) + 2.5, b = log2(x[1] / 256.0), w = x[2] - 0.1;
    *cost = x[1] * x[1] / 1000.0;
    return 1.0 + a * a + 0.3 * b * b + w * w + 2.0 / sqrt(x[1]);
}

static carbs *make(const carbs_options *o)
{
    carbs_param p[D];
    space3(p);
    carbs *c = NULL;
    char msg[ST_ERRMSG_MAX];
    CHECK_ST(carbs_create(p, D, o, &c, msg), ST_OK);
    return c;
}

static void run(carbs *c, int n)
{
    for (int i = 0; i < n; i++) {
        double x[D], cost;
        uint64_t id;
        CHECK_ST(carbs_suggest(c, x, &id), ST_OK);
        double y = toy(x, &cost);
        CHECK_ST(carbs_observe(c, id, NULL, y, cost, 0), ST_OK);
    }
}

static void test_bad_input(void)
{
    carbs_param p[D];
    carbs *c = (carbs *)1;
    char msg[ST_ERRMSG_MAX];
    space3(p);
    CHECK_ST(carbs_create(NULL, 1, NULL, &c, msg), ST_EINVAL);
    CHECK(c == NULL && strstr(msg, "no parameters"));
    p[0].min = NAN;
    CHECK_ST(carbs_create(p, D, NULL, &c, msg), ST_EINVAL);
    CHECK(strstr(msg, "lr") && strstr(msg, "NaN"));
    space3(p);
    p[1].min = 2000; /* inverted */
    CHECK_ST(carbs_create(p, D, NULL, &c, msg), ST_EINVAL);
    CHECK(strstr(msg, "width") != NULL);
    space3(p);
    p[2].center = 1.5; /* outside (0, 1) */
    CHECK_ST(carbs_create(p, D, NULL, &c, msg), ST_EINVAL);
    CHECK(strstr(msg, "warmup") && strstr(msg, "centre"));
    space3(p);
    p[2].name = "lr";
    CHECK_ST(carbs_create(p, D, NULL, &c, msg), ST_EINVAL);
    CHECK(strstr(msg, "twice") != NULL);
    space3(p);
    carbs_options o = carbs_options_default();
    o.search_radius = -1;
    CHECK_ST(carbs_create(p, D, &o, &c, msg), ST_EINVAL);
    CHECK(strstr(msg, "search_radius") != NULL);
    CHECK_ST(carbs_create(p, D, NULL, &c, NULL), ST_OK); /* errmsg may be NULL */

    size_t idx;
    CHECK_ST(carbs_param_index(c, "nope", &idx), ST_ENOTFOUND);
    CHECK_ST(carbs_param_index(c, "width", &idx), ST_OK);
    CHECK(idx == 1);
    double x[D] = {1e-3, 128, 0.1};
    CHECK_ST(carbs_observe(c, 0, x, 1.0, 0.0, 0), ST_EINVAL); /* cost 0 */
    CHECK(strstr(carbs_errmsg(c), "cost") != NULL);
    CHECK_ST(carbs_observe(c, 0, x, 1.0, -3, 0), ST_EINVAL);
    CHECK_ST(carbs_observe(c, 0, x, 1.0, INFINITY, 0), ST_EINVAL);
    CHECK_ST(carbs_observe(c, 42, x, 1.0, 1.0, 0), ST_ENOTFOUND); /* unknown id */
    CHECK(strstr(carbs_errmsg(c), "42") != NULL);
    CHECK_ST(carbs_observe(c, 0, NULL, 1.0, 1.0, 0), ST_EINVAL);
    x[0] = NAN;
    CHECK_ST(carbs_observe(c, 0, x, 1.0, 1.0, 0), ST_EINVAL);
    CHECK(strstr(carbs_errmsg(c), "lr") != NULL);
    x[0] = -1; /* log of a negative number */
    CHECK_ST(carbs_observe(c, 0, x, 1.0, 1.0, 0), ST_EINVAL);
    CHECK(carbs_n_observations(c) == 0); /* nothing recorded on error */
    CHECK_ST(carbs_forget(c, 7), ST_ENOTFOUND);
    double ctr[D] = {1e-3, 2048, 0.5};
    CHECK_ST(carbs_set_search_center(c, ctr), ST_EINVAL);
    CHECK(strstr(carbs_errmsg(c), "width") != NULL);
    CHECK_ST(carbs_suggest_batch(c, 0, x, NULL), ST_EINVAL);
    CHECK_ST(carbs_predict(c, 1, ctr, NULL, NULL, NULL, NULL), ST_EEMPTY);
    carbs_destroy(c);
    carbs_destroy(NULL);

    /* options by name */
    o = carbs_options_default();
    CHECK_ST(carbs_options_set(&o, "mode", "faithful", msg), ST_OK);
    CHECK(o.mode == CARBS_MODE_FAITHFUL);
    CHECK_ST(carbs_options_set(&o, "max_suggestion_cost", "1e14", msg), ST_OK);
    CHECK(o.max_suggestion_cost == 1e14);
    CHECK_ST(carbs_options_set(&o, "resample_frequency", "-1", msg), ST_EINVAL);
    CHECK_ST(carbs_options_set(&o, "maximize", "maybe", msg), ST_EINVAL);
    CHECK(strstr(msg, "maximize") != NULL);
    CHECK_ST(carbs_options_set(&o, "colour", "red", msg), ST_ENOTFOUND);
    size_t n_opt = 0;
    const char *type, *help;
    while (carbs_option_name(n_opt, &type, &help))
        n_opt++;
    CHECK(n_opt >= 19);
}

static void test_ids_outstanding(void)
{
    carbs_options o = carbs_options_default();
    o.max_outstanding_age = 3;
    carbs *c = make(&o);
    double x[4 * D];
    uint64_t ids[4];
    CHECK_ST(carbs_suggest_batch(c, 4, x, ids), ST_OK);
    CHECK(ids[0] == 1 && ids[1] == 2 && ids[2] == 3 && ids[3] == 4);
    CHECK(carbs_n_outstanding(c) == 4);
    for (int i = 0; i < 4; i++) /* the random design gives distinct points inside the bounds */
        for (int j = 0; j < i; j++)
            CHECK(memcmp(x + i * D, x + j * D, sizeof(double) * D) != 0);
    for (int i = 0; i < 4; i++) {
        CHECK(x[i * D] > 1e-5 && x[i * D] < 1 && x[i * D + 2] > 0 && x[i * D + 2] < 1);
        CHECK(fmod(x[i * D + 1], 16.0) == 0 && x[i * D + 1] >= 16 && x[i * D + 1] <= 1024);
    }
    CHECK_ST(carbs_forget(c, 2), ST_OK);
    CHECK(carbs_n_outstanding(c) == 3);
    CHECK_ST(carbs_observe(c, 2, NULL, 1.0, 1.0, 0), ST_ENOTFOUND); /* forgotten */
    double cost;
    double y1 = toy(x, &cost);
    CHECK_ST(carbs_observe(c, 1, NULL, y1, cost, 0), ST_OK);
    CHECK_ST(carbs_observe(c, 1, NULL, 1.0, 1.0, 0), ST_ENOTFOUND); /* twice */
    /* expiry: ids 3 and 4 were made at 0 observations; after 3 observations they are gone */
    double y[D] = {1e-3, 64, 0.2};
    CHECK_ST(carbs_observe(c, 0, y, 2.0, 5.0, 0), ST_OK);
    CHECK(carbs_n_outstanding(c) == 2);
    CHECK_ST(carbs_observe(c, 0, y, 2.1, 5.0, 0), ST_OK);
    CHECK(carbs_n_outstanding(c) == 0);

    /* observe with the suggestion's own values; an observation reads back as given */
    uint64_t id;
    double z[D], back[D], out, cst;
    int failed;
    CHECK_ST(carbs_suggest(c, z, &id), ST_OK);
    CHECK(id == 5);
    CHECK_ST(carbs_observe(c, id, NULL, 3.0, 7.0, 0), ST_OK);
    CHECK_ST(carbs_get_observation(c, 3, back, &out, &cst, &failed), ST_OK);
    CHECK(!memcmp(back, z, sizeof(z)) && out == 3.0 && cst == 7.0 && !failed);
    CHECK_ST(carbs_get_observation(c, 4, back, &out, &cst, &failed), ST_ERANGE);

    /* a suggestion without an id is not remembered */
    CHECK_ST(carbs_suggest(c, z, NULL), ST_OK);
    CHECK(carbs_n_outstanding(c) == 0);
    /* a rebuilt optimizer that re-registers the runs in flight moves past their design points */
    {
        carbs *f1 = make(NULL), *f2 = make(NULL);
        double a[D], b2[D], c2[D];
        uint64_t ia, ib;
        CHECK_ST(carbs_suggest(f1, a, &ia), ST_OK);
        CHECK_ST(carbs_suggest(f1, b2, &ib), ST_OK); /* the second design point */
        CHECK_ST(carbs_add_outstanding(f2, ia, a), ST_OK);
        CHECK_ST(carbs_suggest(f2, c2, &ib), ST_OK);
        CHECK(!memcmp(b2, c2, sizeof(c2)) && ib == 2);
        carbs_destroy(f1);
        carbs_destroy(f2);
    }
    /* re-registering a run in flight (a controller that restarted) */
    CHECK_ST(carbs_add_outstanding(c, 40, z), ST_OK);
    CHECK_ST(carbs_add_outstanding(c, 40, z), ST_EINVAL);
    CHECK_ST(carbs_suggest(c, z, &id), ST_OK);
    CHECK(id == 41);
    carbs_destroy(c);
}

static void test_failures_and_phases(void)
{
    double y;
    carbs_options o = carbs_options_default();
    o.num_random_samples = 3;
    carbs *c = make(&o);
    double x[D], cost;
    uint64_t id;
    carbs_suggestion_info info;
    /* recommended mode: failures count toward the design */
    CHECK_ST(carbs_suggest(c, x, &id), ST_OK);
    carbs_last_info(c, &info);
    CHECK(info.phase == CARBS_PHASE_RANDOM);
    CHECK_ST(carbs_observe(c, id, NULL, NAN, NAN, 0), ST_OK); /* NaN output = failure */
    CHECK_ST(carbs_suggest(c, x, &id), ST_OK);
    CHECK_ST(carbs_observe(c, id, NULL, 5.0, NAN, 1), ST_OK); /* explicit failure, no cost */
    int failed;
    CHECK_ST(carbs_get_observation(c, 0, NULL, NULL, NULL, &failed), ST_OK);
    CHECK(failed == 1);
    CHECK_ST(carbs_suggest(c, x, &id), ST_OK);
    y = toy(x, &cost);
    CHECK_ST(carbs_observe(c, id, NULL, y, cost, 0), ST_OK);
    CHECK_ST(carbs_suggest(c, x, &id), ST_OK); /* 3 counted but one success: still random */
    carbs_last_info(c, &info);
    CHECK(info.phase == CARBS_PHASE_RANDOM);
    y = toy(x, &cost);
    CHECK_ST(carbs_observe(c, id, NULL, y, cost, 0), ST_OK);
    CHECK_ST(carbs_suggest(c, x, &id), ST_OK);
    carbs_last_info(c, &info);
    CHECK(info.phase == CARBS_PHASE_BAYES);
    CHECK(info.p_success > 0 && info.p_success <= 1 && isfinite(info.predicted_cost));
    y = toy(x, &cost);
    CHECK_ST(carbs_observe(c, id, NULL, y, cost, 0), ST_OK);
    run(c, 8);
    double pm[1], psd[1], pc[1], ps[1];
    CHECK_ST(carbs_predict(c, 1, x, pm, psd, pc, ps), ST_OK);
    CHECK(isfinite(pm[0]) && psd[0] >= 0 && pc[0] > 0 && ps[0] >= 0 && ps[0] <= 1);
    carbs_destroy(c);

    /* faithful mode counts successes only (CARBS) */
    o.mode = CARBS_MODE_FAITHFUL;
    c = make(&o);
    for (int i = 0; i < 4; i++) {
        CHECK_ST(carbs_suggest(c, x, &id), ST_OK);
        carbs_last_info(c, &info);
        CHECK(info.phase == CARBS_PHASE_RANDOM);
        CHECK_ST(carbs_observe(c, id, NULL, NAN, 1.0, 0), ST_OK);
    }
    carbs_destroy(c);

    /* resample phase: with frequency 2, the 3rd success triggers a re-run of a Pareto point */
    o = carbs_options_default();
    o.num_random_samples = 2;
    o.resample_frequency = 2;
    c = make(&o);
    run(c, 3);
    CHECK_ST(carbs_suggest(c, x, &id), ST_OK);
    carbs_last_info(c, &info);
    CHECK(info.phase == CARBS_PHASE_RESAMPLE);
    int found = 0;
    for (size_t i = 0; i < carbs_n_observations(c); i++) {
        double xo[D];
        carbs_get_observation(c, i, xo, NULL, NULL, NULL);
        found |= !memcmp(xo, x, sizeof(xo));
    }
    CHECK(found); /* exactly an observed point */
    carbs_destroy(c);

    /* cost cap: nothing predicted at or above it is suggested in the Bayesian phase */
    o = carbs_options_default();
    o.max_suggestion_cost = 30.0; /* width^2/1000 < 30: width < 173 */
    c = make(&o);
    run(c, 6);
    int over = 0;
    for (int i = 0; i < 10; i++) {
        CHECK_ST(carbs_suggest(c, x, &id), ST_OK);
        carbs_last_info(c, &info);
        if (info.phase == CARBS_PHASE_BAYES)
            over += !(info.predicted_cost < 30.0);
        y = toy(x, &cost);
        CHECK_ST(carbs_observe(c, id, NULL, y, cost, 0), ST_OK);
    }
    CHECK(over == 0);
    carbs_destroy(c);
}

static void test_determinism_and_state(void)
{
    carbs_options o = carbs_options_default();
    o.seed = 7;
    carbs *a = make(&o), *b = make(&o);
    run(a, 12);
    run(b, 12);
    double xa[D], xb[D];
    uint64_t ia, ib;
    CHECK_ST(carbs_suggest(a, xa, &ia), ST_OK);
    CHECK_ST(carbs_suggest(b, xb, &ib), ST_OK);
    CHECK(!memcmp(xa, xb, sizeof(xa)) && ia == ib);

    /* export -> import -> the same next suggestion, the same state */
    void *buf;
    size_t len;
    CHECK_ST(carbs_export(a, &buf, &len), ST_OK);
    carbs *r = NULL;
    char msg[ST_ERRMSG_MAX];
    CHECK_ST(carbs_import(buf, len, &r, msg), ST_OK);
    CHECK(carbs_n_observations(r) == 12 && carbs_n_outstanding(r) == 1);
    double x1[D], x2[D];
    uint64_t i1, i2;
    CHECK_ST(carbs_suggest(a, x1, &i1), ST_OK);
    CHECK_ST(carbs_suggest(r, x2, &i2), ST_OK);
    CHECK(!memcmp(x1, x2, sizeof(x1)) && i1 == i2);
    /* corrupt and truncated bytes: clear errors */
    carbs *bad_t = NULL;
    CHECK_ST(carbs_import(buf, len - 3, &bad_t, msg), ST_EFORMAT);
    CHECK(strstr(msg, "truncated") != NULL);
    ((unsigned char *)buf)[0] = 'X';
    carbs *bad = (carbs *)1;
    CHECK_ST(carbs_import(buf, len, &bad, msg), ST_EFORMAT);
    CHECK(bad == NULL && strstr(msg, "magic"));
    ((unsigned char *)buf)[0] = 'C';
    ((unsigned char *)buf)[8] = 99; /* version */
    CHECK_ST(carbs_import(buf, len, &bad, msg), ST_EFORMAT);
    CHECK(strstr(msg, "version") != NULL);
    CHECK_ST(carbs_import(buf, 5, &bad, msg), ST_EFORMAT);
    st_free(buf);

    /* through a file */
    char path[] = "/tmp/st_carbs_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    CHECK_ST(carbs_save_file(a, path, msg), ST_OK);
    carbs *f = NULL;
    CHECK_ST(carbs_load_file(path, &f, msg), ST_OK);
    CHECK_ST(carbs_suggest(a, x1, &i1), ST_OK);
    CHECK_ST(carbs_suggest(f, x2, &i2), ST_OK);
    CHECK(!memcmp(x1, x2, sizeof(x1)) && i1 == i2);
    remove(path);
    CHECK_ST(carbs_load_file("/nonexistent/dir/state", &bad, msg), ST_EIO);
    CHECK(strstr(msg, "/nonexistent/dir/state") != NULL);
    CHECK_ST(carbs_save_file(a, "/nonexistent/dir/state", msg), ST_EIO);
    carbs_destroy(f);
    carbs_destroy(r);
    carbs_destroy(a);
    carbs_destroy(b);
}

static void test_warm_start_and_batch(void)
{
    carbs_options o = carbs_options_default();
    carbs_param p[D + 1];
    space3(p);
    carbs *prev = NULL, *c = NULL;
    CHECK_ST(carbs_create(p, 2, &o, &prev, NULL), ST_OK); /* lr and width only */
    double x[2] = {1e-3, 64};
    CHECK_ST(carbs_observe(prev, 0, x, 2.0, 4.0, 0), ST_OK);
    x[1] = 128;
    CHECK_ST(carbs_observe(prev, 0, x, 1.5, 16.0, 0), ST_OK);
    CHECK_ST(carbs_create(p, D, &o, &c, NULL), ST_OK);
    double fill[D] = {NAN, NAN, 0.2};
    CHECK_ST(carbs_warm_start(c, prev, fill), ST_OK);
    CHECK(carbs_n_observations(c) == 2);
    double back[D], ctr[D];
    carbs_get_observation(c, 1, back, NULL, NULL, NULL);
    CHECK(back[0] == 1e-3 && back[1] == 128 && fabs(back[2] - 0.2) < 1e-12);
    carbs_get_search_center(c, ctr);
    CHECK_ABS(ctr[2], 0.2, 1e-12);
    /* the other way round: a parameter of prev missing here */
    CHECK_ST(carbs_warm_start(prev, c, NULL), ST_ENOTFOUND);
    CHECK(strstr(carbs_errmsg(prev), "warmup") != NULL);
    carbs_destroy(prev);

    /* batch from one model: q distinct points */
    run(c, 8);
    double xb[5 * D];
    uint64_t ids[5];
    CHECK_ST(carbs_suggest_batch(c, 5, xb, ids), ST_OK);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < i; j++) {
            CHECK(ids[i] != ids[j]);
            CHECK(memcmp(xb + i * D, xb + j * D, sizeof(double) * D) != 0);
        }
    CHECK(carbs_n_outstanding(c) == 5);

    /* observe_many moves the centre to the best successful input */
    double X[2 * D] = {1e-2, 256, 0.1, 1e-4, 32, 0.3}, y[2] = {0.5, 9}, cs[2] = {1, 1};
    CHECK_ST(carbs_observe_many(c, 2, X, y, cs, NULL), ST_OK);
    carbs_get_search_center(c, ctr);
    CHECK_REL(ctr[0], 1e-2, 1e-12);
    CHECK_REL(ctr[1], 256, 1e-12);
    X[3] = NAN;
    CHECK_ST(carbs_observe_many(c, 2, X, y, cs, NULL), ST_EINVAL);
    CHECK(strstr(carbs_errmsg(c), "row 1") != NULL);
    carbs_destroy(c);
}

/* carbs_import is a parser of untrusted bytes: random corruptions and truncations of a valid
 * state must give ST_OK or a format error, never a crash (run under ASan in CI); a state that
 * imports must still suggest. */
static void test_import_corruption(void)
{
    carbs_options o = carbs_options_default();
    o.num_random_samples = 2;
    carbs *c = make(&o);
    run(c, 6);
    double x[D];
    uint64_t id;
    CHECK_ST(carbs_suggest(c, x, &id), ST_OK);
    void *buf;
    size_t len;
    CHECK_ST(carbs_export(c, &buf, &len), ST_OK);
    carbs_destroy(c);
    unsigned char *m = malloc(len);
    st_rng *r;
    st_rng_create(3, &r);
    int n = getenv("ST_TEST_QUICK") ? 60 : 600, bad_status = 0, suggest_fail = 0;
    for (int t = 0; t < n; t++) {
        memcpy(m, buf, len);
        size_t l = len;
        if (t % 3 == 0) {
            l = st_rng_uniform_int(r, len);
        } else {
            int flips = 1 + (int)st_rng_uniform_int(r, 4);
            for (int f = 0; f < flips; f++)
                m[st_rng_uniform_int(r, len)] ^= (unsigned char)(1u << st_rng_uniform_int(r, 8));
        }
        carbs *g = NULL;
        char msg[ST_ERRMSG_MAX];
        st_status s = carbs_import(m, l, &g, msg);
        bad_status += !(s == ST_OK || s == ST_EFORMAT || s == ST_ENOMEM);
        if (s == ST_OK) {
            st_status s2 = carbs_suggest(g, x, &id);
            suggest_fail += !(s2 == ST_OK || s2 == ST_ENOMEM);
        } else {
            CHECK(g == NULL && msg[0] != 0);
        }
        carbs_destroy(g);
    }
    CHECK(bad_status == 0);
    CHECK(suggest_fail == 0);
    st_rng_destroy(r);
    free(m);
    st_free(buf);
}

/* A space with nothing to search (a one-run sweep whose parameters are all fixed): suggestions
 * are the empty point with fresh ids, through the random and the Bayesian phase and in
 * batches; observations, the outstanding list and export/import work as with D > 0. */
static void test_empty_space(void)
{
    carbs *c = NULL;
    char msg[ST_ERRMSG_MAX];
    carbs_options o = carbs_options_default();
    o.num_random_samples = 2;
    CHECK_ST(carbs_create(NULL, 0, &o, &c, msg), ST_OK);
    CHECK(c && carbs_dim(c) == 0);
    double x[1] = {42}, xb[3] = {7, 7, 7};
    uint64_t id = 0, ids[3] = {0};
    for (uint64_t k = 1; k <= 6; k++) {
        CHECK_ST(carbs_suggest(c, x, &id), ST_OK);
        CHECK(id == k && x[0] == 42); /* nothing written */
        CHECK(carbs_n_outstanding(c) == 1);
        CHECK_ST(carbs_observe(c, id, x, 3.0 - (double)k * 0.1, 1e9, k == 3), ST_OK);
        CHECK(carbs_n_outstanding(c) == 0);
    }
    CHECK(carbs_n_observations(c) == 6);
    double out = 0;
    CHECK_ST(carbs_get_observation(c, 5, NULL, &out, NULL, NULL), ST_OK);
    CHECK_REL(out, 2.4, 1e-15);
    CHECK_ST(carbs_suggest_batch(c, 3, xb, ids), ST_OK);
    CHECK(ids[0] == 7 && ids[1] == 8 && ids[2] == 9 && xb[0] == 7);
    void *buf = NULL;
    size_t len = 0;
    carbs *d = NULL;
    CHECK_ST(carbs_export(c, &buf, &len), ST_OK);
    CHECK_ST(carbs_import(buf, len, &d, msg), ST_OK);
    CHECK(d && carbs_dim(d) == 0 && carbs_n_observations(d) == 6);
    st_free(buf);
    carbs_destroy(d);
    carbs_destroy(c);
}

/* A handle rebuilt from the live one's observations (in order), its outstanding suggestions at
 * their birth and its counters (carbs_get_progress / carbs_set_progress) suggests what the
 * live one suggests next, at every step of 30, through resamples and with two in flight; an
 * outstanding suggestion born too long ago is expired as the live handle expired it. */
static void test_rebuild_progress(void)
{
    carbs_options o = carbs_options_default();
    o.seed = 21;
    o.num_random_samples = 4;
    o.resample_frequency = 3;
    o.max_outstanding_age = 3;
    carbs *live = make(&o);
    size_t born[64] = {0}, same = 0, resamples = 0, stale = 0;
    uint64_t open_ids[2] = {0, 0};
    for (int k = 0; live && k < 30; k++) {
        carbs *r = make(&o);
        double x[D], xl[D], y, cost;
        int failed;
        for (size_t i = 0; r && i < carbs_n_observations(live); i++) {
            CHECK_ST(carbs_get_observation(live, i, x, &y, &cost, &failed), ST_OK);
            CHECK_ST(carbs_observe(r, 0, x, y, cost, failed), ST_OK);
        }
        for (size_t i = 0; r && i < carbs_n_outstanding(live); i++) {
            uint64_t id;
            int reg = 0;
            CHECK_ST(carbs_get_outstanding(live, i, &id, x), ST_OK);
            CHECK_ST(carbs_add_outstanding_born(r, id, x, born[id], &reg), ST_OK);
            CHECK(reg == 1);
        }
        carbs_progress p;
        carbs_get_progress(live, &p);
        if (r)
            carbs_set_progress(r, &p);
        born[k + 1] = carbs_n_observations(live); /* ids are 1, 2, ... */
        uint64_t id;
        CHECK_ST(carbs_suggest(live, xl, &id), ST_OK);
        CHECK(id == (uint64_t)k + 1);
        carbs_suggestion_info info;
        carbs_last_info(live, &info);
        resamples += info.phase == CARBS_PHASE_RESAMPLE;
        if (r && carbs_suggest(r, x, NULL) == ST_OK)
            same += !memcmp(x, xl, sizeof(x));
        carbs_destroy(r);
        /* two in flight: the older one is told; every fifth run is lost and never told */
        if (open_ids[0]) {
            double ox[D];
            uint64_t oid = open_ids[0];
            size_t n_out = carbs_n_outstanding(live);
            int found = 0;
            for (size_t i = 0; i < n_out; i++) {
                uint64_t j;
                carbs_get_outstanding(live, i, &j, ox);
                if (j == oid) {
                    found = 1;
                    break;
                }
            }
            if (found && oid % 5 != 0) {
                /* noisy, so that repeats differ and resampling goes on (a deterministic
                 * objective stops it once a repeat agrees) */
                y = toy(ox, &cost) + 1e-3 * sin((double)oid);
                CHECK_ST(carbs_observe(live, oid, NULL, y, cost, 0), ST_OK);
            }
        }
        open_ids[0] = open_ids[1];
        open_ids[1] = id;
    }
    CHECK(same == 30);
    CHECK(resamples >= 3);
    for (size_t i = 0; live && i < carbs_n_outstanding(live); i++) {
        uint64_t j;
        double ox[D];
        carbs_get_outstanding(live, i, &j, ox);
        stale += j < 26; /* a lost run older than 3 observations is still outstanding */
    }
    CHECK(stale == 0);
    /* born after the observations there are: refused; born long ago: expired, not registered */
    carbs *r = make(&o);
    double z[D] = {1e-3, 128, 0.05};
    int reg = 1;
    CHECK_ST(carbs_add_outstanding_born(r, 7, z, 1, &reg), ST_EINVAL);
    for (int i = 0; i < 3; i++)
        CHECK_ST(carbs_observe(r, 0, z, 2.0, 1.0, 0), ST_OK);
    CHECK_ST(carbs_add_outstanding_born(r, 7, z, 0, &reg), ST_OK);
    CHECK(reg == 0 && carbs_n_outstanding(r) == 0);
    CHECK_ST(carbs_add_outstanding_born(r, 8, z, 1, &reg), ST_OK);
    CHECK(reg == 1 && carbs_n_outstanding(r) == 1);
    carbs_progress p0;
    carbs_get_progress(r, &p0);
    CHECK(p0.n_suggest == 0); /* nothing counted */
    carbs_destroy(r);
    carbs_destroy(live);
}

/* Out-of-bounds observations are refused with the parameter named; a front with ties in cost
 * lists one group per cost, the best (observed worse first and better first). */
static void test_bounds_and_pareto_ties(void)
{
    carbs_options o = carbs_options_default();
    o.min_pareto_cost_fraction = 0.0;
    carbs *c = make(&o);
    if (!c)
        return;
    double out[D] = {2.0, 128, 0.05};
    CHECK_ST(carbs_observe(c, 0, out, 1.0, 1.0, 0), ST_EINVAL);
    CHECK(strstr(carbs_errmsg(c), "'lr'") && strstr(carbs_errmsg(c), "outside its bounds"));
    double wide[D] = {1e-3, 1040, 0.05}; /* 1024 + rounding: outside even padded */
    CHECK_ST(carbs_observe(c, 0, wide, 1.0, 1.0, 0), ST_EINVAL);
    CHECK(carbs_n_observations(c) == 0);
    for (int order = 0; order < 2; order++) {
        carbs *p = make(&o);
        /* (cost, output): (1, 5), (3, 4) and (3, 3) in either order, (5, 2); minimise */
        double pts[4][D] = {
            {1e-3, 64, 0.05}, {2e-3, 128, 0.05}, {3e-3, 256, 0.05}, {4e-3, 512, 0.05}};
        double cost[4] = {1, 3, 3, 5}, y[4] = {5, order ? 3 : 4, order ? 4 : 3, 2};
        for (int i = 0; p && i < 4; i++)
            CHECK_ST(carbs_observe(p, 0, pts[i], y[i], cost[i], 0), ST_OK);
        size_t n = 0;
        double fc[8], fy[8];
        if (p)
            CHECK_ST(carbs_pareto(p, 0, 8, &n, fc, fy, NULL, NULL), ST_OK);
        CHECK(n == 3);
        if (n == 3)
            CHECK(fc[0] == 1 && fy[0] == 5 && fc[1] == 3 && fy[1] == 3 && fc[2] == 5 && fy[2] == 2);
        carbs_destroy(p);
    }
    carbs_destroy(c);
}

int main(void)
{
    st_global_init();
    test_bad_input();
    test_empty_space();
    test_ids_outstanding();
    test_failures_and_phases();
    test_determinism_and_state();
    test_warm_start_and_batch();
    test_import_corruption();
    test_rebuild_progress();
    test_bounds_and_pareto_ties();
    return check_summary("carbs.api");
}
