/*
 * test_runner_categorical.c — categorical and conditional parameters through the sweep file:
 * what the reader accepts and refuses (with the field in the message), the command template
 * (a choice substituted as its string; "--x {b2}" left out where b2 is inactive), and a
 * parallel sweep of the fake trainer whose loss depends on the choice through --add-if: every
 * run's objective equals the loss computed here from its exported parameters (so each value
 * reached the trainer as written), the export holds choice strings and null where inactive,
 * and two sweeps with the same seed hold the same runs. Also `method: grid | random`: the
 * points against a grid written out by hand and the moments of a log-uniform draw, through
 * the controller and through ask.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner_int.h"
#include "tests/runner/runner_test_util.h"

static const char *params_extra = "  opt: {choices: [adamw, lion, sgd], center: lion}\n"
                                  "  b2: {space: linear, min: 0, max: 1, center: 0.3, "
                                  "when: {opt: adamw}}\n";

static void load_bad(const char *params, const char *want)
{
    char text[2048], em[ST_ERRMSG_MAX] = "";
    snprintf(text, sizeof(text),
             "name: bad\nobjective: {metric: loss}\nbudget: {runs: 2}\nparameters:\n%s", params);
    runner_config *c = NULL;
    CHECK_ST(runner_config_load_string(text, strlen(text), "bad.yaml", &c, em), ST_EINVAL);
    if (!strstr(em, want))
        fprintf(stderr, "  message '%s' lacks '%s'\n", em, want);
    CHECK(strstr(em, want) != NULL);
    runner_config_destroy(c);
}

static void test_config(void)
{
    runner_config *c = tu_config("cat", "",
                                 "  opt: {choices: [adamw, lion, sgd], center: lion}\n"
                                 "  b2: {space: linear, min: 0, max: 1, center: 0.3, "
                                 "when: {opt: adamw}}\nbudget: {runs: 2}\n");
    CHECK(c != NULL);
    if (!c)
        return;
    CHECK(c->n_params == 4 && runner_config_dim(c) == 4);
    const runner_param_spec *o = &c->params[2], *b = &c->params[3];
    CHECK(o->p.space == CARBS_SPACE_CATEGORICAL && o->p.n_choices == 3 && o->p.center == 1);
    CHECK(!strcmp(runner_param_choice(o, 2), "sgd") && !runner_param_choice(o, 3));
    CHECK(b->p.active_if && !strcmp(b->p.active_if, "opt") && b->p.active_mask == 1);
    double x[4] = {0, 1, 0, 0.5}, v;
    CHECK(runner_param_active(c, x, 3));
    x[2] = 1;
    CHECK(!runner_param_active(c, x, 3));
    CHECK_ST(runner_param_parse(o, "sgd", &v, NULL), ST_OK);
    CHECK(v == 2);
    CHECK_ST(runner_param_parse(o, "adam", &v, NULL), ST_EINVAL);
    CHECK_ST(runner_param_parse(b, "none", &v, NULL), ST_OK);
    CHECK(isnan(v));
    CHECK_ST(runner_param_parse(b, "0.25", &v, NULL), ST_OK);
    CHECK(v == 0.25);
    x[3] = 0.5; /* inactive but given */
    CHECK_ST(runner_param_check(c, x, 3, NULL), ST_EINVAL);
    x[3] = NAN;
    CHECK_ST(runner_param_check(c, x, 3, NULL), ST_OK);
    x[2] = 0.5; /* not an index */
    CHECK_ST(runner_param_check(c, x, 2, NULL), ST_EINVAL);

    /* the command: choice strings; the flag and value of an inactive parameter left out */
    char *t[6] = {"run", "--opt={opt}", "--b2", "{b2}", "--beta={b2}", "{_run}"};
    char *out[6] = {0};
    size_t n = 0;
    double xa[4] = {0, 1, 2, NAN};
    CHECK_ST(runner_command_expand(c, t, 6, 1, xa, 7, 1, "/d", out, &n), ST_OK);
    CHECK(n == 3 && !strcmp(out[0], "run") && !strcmp(out[1], "--opt=sgd") && !strcmp(out[2], "7"));
    for (size_t i = 0; i < 6; i++)
        free(out[i]);
    memset(out, 0, sizeof(out));
    double xb[4] = {0, 1, 0, 0.25};
    CHECK_ST(runner_command_expand(c, t, 6, 1, xb, 7, 1, "/d", out, &n), ST_OK);
    CHECK(n == 6 && !strcmp(out[1], "--opt=adamw") && !strcmp(out[3], "0.25") &&
          !strcmp(out[4], "--beta=0.25"));
    for (size_t i = 0; i < 6; i++)
        free(out[i]);
    runner_config_destroy(c);

    load_bad("  o: {choices: [a]}\n", "2 to 64 choices");
    load_bad("  o: {choices: [a, a]}\n", "given twice");
    load_bad("  o: {choices: [a, b], center: c}\n", "not one of the choices");
    load_bad("  o: {choices: [a, b], min: 1}\n", "unknown key 'min'");
    load_bad("  o: {choices: [a, b], space: log}\n", "categorical");
    load_bad("  o: {choices: [a, b]}\n  x: {space: linear, min: 0, max: 1, center: 0.5, "
             "when: {o: c}}\n",
             "'c' is not a choice of 'o'");
    load_bad("  x: {space: linear, min: 0, max: 1, center: 0.5, when: {o: a}}\n"
             "  o: {choices: [a, b]}\n",
             "not a parameter given before");
    load_bad("  y: {space: linear, min: 0, max: 1, center: 0.5}\n"
             "  x: {space: linear, min: 0, max: 1, center: 0.5, when: {y: a}}\n",
             "not a searched categorical");
}

/* The fake trainer's loss for one exported run: 1 + (x-.5)^2 + (y-.5)^2 [+ (b2-.5)^2 with
 * adamw] + 0.5 with lion + 1 with sgd. */
static double want_loss(json_t *p, int *bad)
{
    double x = json_number_value(json_object_get(p, "x"));
    double y = json_number_value(json_object_get(p, "y"));
    const char *o = json_string_value(json_object_get(p, "opt"));
    json_t *b2 = json_object_get(p, "b2");
    if (!o) {
        (*bad)++;
        return NAN;
    }
    double l = 1 + (x - .5) * (x - .5) + (y - .5) * (y - .5);
    if (!strcmp(o, "adamw")) {
        *bad += !json_is_number(b2);
        double b = json_number_value(b2);
        l += (b - .5) * (b - .5);
    } else {
        *bad += !json_is_null(b2);
    }
    return l + (!strcmp(o, "lion") ? 0.5 : !strcmp(o, "sgd") ? 1.0 : 0.0);
}

static char *sweep_export(const char *db, int *n_ok, int *bad, int *seen)
{
    const char *args = "'--add-if', '{opt}', 'lion', '0.5', '--add-if', '{opt}', 'sgd', '1', "
                       "'--x', '{b2}'";
    char extra[1024];
    snprintf(extra, sizeof(extra), "%sbudget: {runs: 16}\nparallel: 2\nseed: 4\n", params_extra);
    runner_config *c = tu_config("cat-sweep", args, extra);
    int fin = 0;
    CHECK(c != NULL);
    if (!c)
        return NULL;
    CHECK_ST(tu_sweep(db, c, NULL, &fin), ST_OK);
    CHECK(fin);
    runner_config_destroy(c);
    runner_store *s = NULL;
    char *js = NULL;
    CHECK_ST(runner_store_open(db, &s, NULL), ST_OK);
    CHECK_ST(runner_store_export_json(s, NULL, &js), ST_OK);
    runner_store_close(s);
    json_t *root = js ? json_loads(js, 0, NULL) : NULL;
    json_t *runs = json_object_get(root, "runs"), *r, *sig = json_array();
    size_t i;
    json_array_foreach(runs, i, r)
    {
        /* what must be the same in two sweeps with one seed (not times, pids, dirs) */
        json_array_append_new(sig, json_pack("{sOsOsO}", "params", json_object_get(r, "params"),
                                             "objective", json_object_get(r, "objective"), "status",
                                             json_object_get(r, "status")));
        if (strcmp(json_string_value(json_object_get(r, "status")), "succeeded"))
            continue;
        json_t *p = json_object_get(r, "params");
        double want = want_loss(p, bad), got = json_number_value(json_object_get(r, "objective"));
        CHECK_ABS(got, want, 1e-9);
        const char *o = json_string_value(json_object_get(p, "opt"));
        for (int k = 0; o && k < 3; k++)
            seen[k] += !strcmp(o, (const char *[]){"adamw", "lion", "sgd"}[k]);
        (*n_ok)++;
    }
    json_decref(root);
    st_free(js);
    char *out = json_dumps(sig, JSON_COMPACT);
    json_decref(sig);
    return out;
}

static void test_sweep(void)
{
    int n_ok = 0, bad = 0, seen[3] = {0, 0, 0}, n2 = 0, bad2 = 0, seen2[3] = {0, 0, 0};
    char *a = sweep_export(tu_path("cat-a.db"), &n_ok, &bad, seen);
    char *b = sweep_export(tu_path("cat-b.db"), &n2, &bad2, seen2);
    CHECK(n_ok == 16 && bad == 0);
    CHECK(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
    printf("categorical sweep: %d runs, adamw %d, lion %d, sgd %d\n", n_ok, seen[0], seen[1],
           seen[2]);
    CHECK(a && b && !strcmp(a, b)); /* same seed, parallel 2: the same runs */
    if (a && b && strcmp(a, b) && getenv("ST_TEST_KEEP"))
        fprintf(stderr, "%s\n----\n%s\n", a, b);
    free(a);
    free(b);
}

static runner_config *load_ok(const char *text)
{
    char em[ST_ERRMSG_MAX] = "";
    runner_config *c = NULL;
    CHECK_ST(runner_config_load_string(text, strlen(text), "m.yaml", &c, em), ST_OK);
    if (!c)
        fprintf(stderr, "  %s\n", em);
    return c;
}

/* method grid: 3 x values times (a with 2 b2 values, or b with b2 inactive) = 9 distinct runs,
 * in order, then again; method random: inside the bounds, log-uniform, a function of seed and
 * index; the refusals. */
static void test_method_points(void)
{
    runner_config *c = load_ok("name: g\nobjective: {metric: l}\nbudget: {runs: 9}\n"
                               "method: grid\nparameters:\n"
                               "  x: {space: linear, min: 0, max: 1, center: 0.5, grid: 3}\n"
                               "  o: {choices: [a, b]}\n"
                               "  b2: {space: linear, min: 0, max: 1, center: 0.5, "
                               "grid: [0.2, 0.8], when: {o: a}}\n");
    if (!c)
        return;
    double want[9][3] = {{0, 0, .2},   {0, 0, .8}, {0, 1, NAN}, {.5, 0, .2}, {.5, 0, .8},
                         {.5, 1, NAN}, {1, 0, .2}, {1, 0, .8},  {1, 1, NAN}};
    int bad = 0;
    for (size_t k = 0; k < 10; k++) {
        double x[3];
        CHECK_ST(runner_method_point(c, k, x, NULL), ST_OK);
        for (int i = 0; i < 3; i++) {
            double w = want[k % 9][i];
            bad += !(x[i] == w || (isnan(x[i]) && isnan(w)));
        }
    }
    CHECK(bad == 0);
    runner_config_destroy(c);

    c = load_ok("name: r\nobjective: {metric: l}\nbudget: {runs: 9}\nmethod: random\n"
                "seed: 3\nparameters:\n"
                "  lr: {space: log, min: 1.0e-4, max: 0.1, center: 0.001}\n"
                "  n: {space: linear, min: 2, max: 40, center: 10, integer: true}\n"
                "  o: {choices: [a, b, c]}\n");
    if (!c)
        return;
    double sum = 0, x[3], y[3];
    int out = 0, seen[3] = {0, 0, 0};
    for (size_t k = 0; k < 400; k++) {
        CHECK_ST(runner_method_point(c, k, x, NULL), ST_OK);
        out += !(x[0] >= 1e-4 && x[0] <= 0.1) || !(x[1] >= 2 && x[1] <= 40) || x[1] != floor(x[1]);
        sum += log10(x[0]);
        seen[(int)x[2]]++;
    }
    CHECK(out == 0);
    CHECK_ABS(sum / 400, -2.5, 0.15); /* log-uniform: the mean of log10 is the midpoint */
    CHECK(seen[0] > 100 && seen[1] > 100 && seen[2] > 100);
    CHECK_ST(runner_method_point(c, 17, x, NULL), ST_OK);
    CHECK_ST(runner_method_point(c, 17, y, NULL), ST_OK);
    CHECK(!memcmp(x, y, sizeof(x)));
    runner_config_destroy(c);

    load_bad("  x: {space: linear, center: 0}\nmethod: random\n", "needs its min and max");
    load_bad("  x: {space: linear, min: 0, max: 1, center: 0.5, grid: [2]}\nmethod: grid\n",
             "outside");
    { /* the study mode takes categorical parameters (tests/study/test_study_mode_categorical) */
        const char *t = "name: st\nobjective: {metric: loss}\nbudget: {runs: 2}\nparameters:\n"
                        "  o: {choices: [a, b]}\nmethod: study\n"
                        "optimizer: {target_compute: 1.0e20}\n";
        char em[ST_ERRMSG_MAX] = "";
        runner_config *s = NULL;
        CHECK_ST(runner_config_load_string(t, strlen(t), "st.yaml", &s, em), ST_OK);
        if (em[0])
            fprintf(stderr, "  %s\n", em);
        CHECK(s && s->method == RUNNER_METHOD_STUDY);
        runner_config_destroy(s);
    }
    load_bad("  x: {space: linear, min: 0, max: 1, center: 0.5}\nmethod: grid\n"
             "optimizer: {goal: extrapolate, target_compute: 10}\n",
             "method study");
    load_bad("  x: {space: linear, min: 0, max: 1, center: 0.5}\nmethod: tpe\n",
             "carbs, grid, random or study");
}

/* method random through the controller (parallel 2) and grid through ask: the runs are the
 * method's points, in order. */
static void test_method_sweeps(void)
{
    runner_config *c = tu_config("rnd", "",
                                 "method: random\nbudget: {runs: 6}\nparallel: 2\n"
                                 "seed: 9\n");
    int fin = 0;
    CHECK(c != NULL);
    if (!c)
        return;
    const char *db = tu_path("rnd.db");
    CHECK_ST(tu_sweep(db, c, NULL, &fin), ST_OK);
    runner_store *s = NULL;
    runner_sweep *w = NULL;
    CHECK_ST(runner_store_open(db, &s, NULL), ST_OK);
    CHECK_ST(runner_store_read_sweep(s, NULL, &w), ST_OK);
    int bad = 0;
    for (size_t k = 0; w && k < w->n_runs; k++) {
        double x[2];
        CHECK_ST(runner_method_point(c, k, x, NULL), ST_OK);
        bad += memcmp(x, w->runs[k].x, sizeof(x)) != 0;
    }
    CHECK(w && w->n_runs == 6 && bad == 0);
    runner_sweep_free(w);
    runner_store_close(s);
    runner_config_destroy(c);

    const char *yaml = "name: gask\nobjective: {metric: l}\nbudget: {runs: 4}\nmethod: grid\n"
                       "parameters:\n  x: {space: log, min: 1, max: 100, center: 10, grid: 3}\n";
    const char *db2 = tu_path("gask.db");
    CHECK_ST(runner_store_create_sweep(db2, yaml, NULL), ST_OK);
    CHECK_ST(runner_store_open(db2, &s, NULL), ST_OK);
    double want[4] = {1, 10, 100, 1};
    for (int k = 0; k < 4; k++) {
        uint64_t id;
        double x[1];
        CHECK_ST(runner_store_ask(s, NULL, &id, x, 1), ST_OK);
        CHECK_REL(x[0], want[k], 1e-12);
        CHECK_ST(runner_store_tell(s, NULL, id, x[0], 1, 0), ST_OK);
    }
    runner_store_close(s);
}

/* examples/fake-trainer.yaml's steps (linear in [2, 40], centre 10, integer): with CARBS' scale
 * 1 all 24 runs had steps 10; with the default scale the sweep explores it. */
static void test_steps_explored(void)
{
    runner_config *c = tu_config("steps", "'--steps', '{steps}'",
                                 "  steps: {space: linear, min: 2, max: 40, center: 10, "
                                 "integer: true}\nbudget: {runs: 24}\nseed: 1\n"
                                 "optimizer: {num_random_samples: 6}\n");
    int fin = 0;
    CHECK(c != NULL);
    if (!c)
        return;
    const char *db = tu_path("steps.db");
    CHECK_ST(tu_sweep(db, c, NULL, &fin), ST_OK);
    long long distinct =
        tu_query(db, "SELECT count(DISTINCT substr(x, 17, 8)) FROM runs"); /* the 3rd double */
    printf("fake-trainer steps: %lld distinct values in 24 runs\n", distinct);
    CHECK(distinct >= 5);
    runner_config_destroy(c);
}

/* One sweep of the fake trainer reporting memory_gb = 40 x (x in [-2, 3], the loss's optimum at
 * x = 0.5), with or without `constraints: {memory_gb: "<= 12"}` (x <= 0.3): the runs over the
 * limit in the last 10 of 20; with the constraint, every run over it failed as `constraint`
 * with its objective kept (*wrong counts the others). */
static int con_sweep(const char *tag, int with, int *wrong, int *n_broken)
{
    char extra[256];
    snprintf(extra, sizeof(extra),
             "%sbudget: {runs: 20}\nseed: 2\n"
             "optimizer: {num_random_samples: 6}\n",
             with ? "constraints: {memory_gb: \"<= 12\"}\n" : "");
    runner_config *c = tu_config(tag, "'--memory', '{x}'", extra);
    int fin = 0, late = 0;
    CHECK(c != NULL);
    if (!c)
        return -1;
    const char *db = tu_path(tag);
    CHECK_ST(tu_sweep(db, c, NULL, &fin), ST_OK);
    runner_store *s = NULL;
    runner_sweep *w = NULL;
    CHECK_ST(runner_store_open(db, &s, NULL), ST_OK);
    CHECK_ST(runner_store_read_sweep(s, NULL, &w), ST_OK);
    for (size_t k = 0; w && k < w->n_runs; k++) {
        const runner_sweep_run *r = &w->runs[k];
        int over = 40 * r->x[0] > 12, got = r->failure == RUNNER_FAIL_CONSTRAINT;
        if (with)
            *wrong += over != got || (got && !isfinite(r->objective));
        *n_broken += over;
        late += over && k >= 10;
    }
    runner_sweep_free(w);
    runner_store_close(s);
    runner_config_destroy(c);
    return late;
}

/* constraints learned like failures: fewer runs over the limit late in the sweep than when the
 * optimizer is not told; the parsing; the same through tell with a flat field (Python). */
static void test_constraints(void)
{
    runner_config *c = tu_config("con", "",
                                 "constraints: {memory_gb: \"<= 12\"}\n"
                                 "budget: {runs: 2}\n");
    CHECK(c && c->n_con == 1 && c->con_le[0] && c->con_bound[0] == 12);
    if (c) {
        CHECK(runner_constraints_broken(
            c, "{\"event\":\"final\",\"constraints\":{\"memory_gb\":13}}", NULL, 0));
        CHECK(!runner_constraints_broken(c, "{\"event\":\"final\",\"memory_gb\":12}", NULL, 0));
        CHECK(!runner_constraints_broken(c, "{\"event\":\"final\"}", NULL, 0)); /* unreported */
    }
    runner_config_destroy(c);
    int wrong = 0, nb_with = 0, nb_without = 0;
    int late_with = con_sweep("con-with.db", 1, &wrong, &nb_with);
    int late_without = con_sweep("con-without.db", 0, &wrong, &nb_without);
    printf("constraints: runs over memory_gb <= 12: %d of 20 (%d of the last 10) told, %d (%d) "
           "not told\n",
           nb_with, late_with, nb_without, late_without);
    CHECK(wrong == 0 && nb_with > 0);
    CHECK(late_with < late_without);
    load_bad("  x: {space: linear, min: 0, max: 1, center: 0.5}\nconstraints: {m: \"< 3\"}\n",
             "<= NUMBER");
}

int main(int argc, char **argv)
{
    (void)argc;
    st_global_init();
    tu_init(argv[0]);
    test_config();
    test_sweep();
    test_method_points();
    test_method_sweeps();
    test_steps_explored();
    test_constraints();
    tu_cleanup();
    return check_summary("test_runner_categorical");
}
