/*
 * test_study_mode_categorical.c — study mode (method: study) with a categorical parameter
 * (optimizer: adamw or lion), a conditional one (beta2, active with adamw only) and a 3-level
 * categorical (norm), against what can be counted by hand:
 *  - the sweep file loads in study mode (method study, or optimizer.goal extrapolate), where it
 *    was refused before ("ordered parameters only"); a conditional parameter that sizes the run
 *    (N) is still refused, by name;
 *  - the phase-1 design through the proposer (study_propose, design indices 0 .. n - 1) for
 *    several n: each level of the 2- and 3-level categoricals n / k times (+-1), each level's
 *    points on both halves of the design's cost range (a design that gave one level the small
 *    runs fails), beta2 NAN exactly where optimizer is lion and inside its bounds elsewhere,
 *    every point under the cap;
 *  - the acquisition (study_plan_make) on 80 runs of a world where lion's ln loss is 0.03 above
 *    adamw's and one run in 4 used lion: its greedy batch of 8 picks holds both optimizers
 *    (none of lion when the candidates keep the first level: checked by hand), each pick's
 *    beta2 set exactly where it is active, under the cap; the proposer past the design gives a
 *    valid setting;
 *  - `scaletune suggest-next --json` on a store of those runs names each pick's levels
 *    ("adamw", "post") and gives beta2 as null exactly where the optimizer is lion.
 */
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "study/study.h"
#include "study/study_int.h"
#include "tests/check.h"

static const char *const yaml_head = "name: catmode\n"
                                     "command: [\"true\"]\n"
                                     "objective: {metric: val_loss}\n"
                                     "cost: {metric: flops}\n"
                                     "budget: {runs: 200, max_cost_per_run: 1.0e17}\n"
                                     "seed: 11\n";

static const char *const yaml_params =
    "parameters:\n"
    "  N:         {space: log, min: 1.0e6, max: 1.0e8, center: 1.0e7}\n"
    "  tokens:    {space: log, min: 1.0e8, max: 1.0e10, center: 1.0e9}\n"
    "  lr:        {space: log, min: 1.0e-5, max: 0.5, center: 3.0e-3}\n"
    "  optimizer: {choices: [adamw, lion]}\n"
    "  beta2:     {space: linear, min: 0.9, max: 0.999, center: 0.95, when: {optimizer: "
    "adamw}}\n"
    "  norm:      {choices: [pre, post, sandwich]}\n";

enum { P_N = 0, P_D, P_LR, P_OPT, P_B2, P_NORM, N_P };

/* The sweep file with `mode` (how it asks for study mode) and `params`. */
static runner_config *load(const char *mode, const char *params, char *em)
{
    char y[4096];
    snprintf(y, sizeof(y), "%s%s%s", yaml_head, mode, params);
    runner_config *cfg = NULL;
    em[0] = '\0';
    if (runner_config_load_string(y, strlen(y), "catmode", &cfg, em))
        return NULL;
    return cfg;
}

static void test_config(void)
{
    static const char *const modes[] = {
        "method: study\noptimizer: {target_factor: 100}\n",
        "optimizer: {goal: extrapolate, target_factor: 100}\n",
    };
    char em[ST_ERRMSG_MAX];
    for (size_t m = 0; m < 2; m++) {
        runner_config *cfg = load(modes[m], yaml_params, em);
        if (!cfg)
            fprintf(stderr, "  %s\n", em);
        CHECK(cfg != NULL);
        CHECK(!strstr(em, "ordered parameters only"));
        CHECK(cfg && cfg->goal == RUNNER_GOAL_EXTRAPOLATE);
        CHECK(cfg && cfg->params[P_OPT].choices && cfg->params[P_B2].p.active_if);
        study_space sp;
        CHECK_ST(cfg ? study_space_init(&sp, cfg, NULL, em) : ST_EINVAL, ST_OK);
        CHECK(cfg && sp.P == N_P && sp.logs[P_OPT] == STUDY_COORD_LEVEL && sp.hi[P_NORM] == 3);
        study_space_clear(&sp);
        runner_config_destroy(cfg);
    }
    /* still refused: a conditional parameter that sizes the run, by name */
    runner_config *cfg = load(modes[0],
                              "parameters:\n"
                              "  optimizer: {choices: [adamw, lion]}\n"
                              "  N:      {space: log, min: 1.0e6, max: 1.0e8, center: 1.0e7, "
                              "when: {optimizer: adamw}}\n"
                              "  tokens: {space: log, min: 1.0e8, max: 1.0e10, center: 1.0e9}\n",
                              em);
    CHECK(cfg != NULL);
    study_space sp;
    em[0] = '\0';
    CHECK_ST(cfg ? study_space_init(&sp, cfg, NULL, em) : ST_OK, ST_EINVAL);
    CHECK(strstr(em, "'N'") && strstr(em, "conditional"));
    study_space_clear(&sp);
    runner_config_destroy(cfg);
}

/* ---- the design ------------------------------------------------------------------------- */

static void check_active(const runner_config *cfg, const double *x)
{
    CHECK(x[P_OPT] == 0 || x[P_OPT] == 1);
    CHECK(x[P_NORM] == 0 || x[P_NORM] == 1 || x[P_NORM] == 2);
    if (x[P_OPT] == 0)
        CHECK(x[P_B2] >= cfg->params[P_B2].p.min && x[P_B2] <= cfg->params[P_B2].p.max);
    else
        CHECK(isnan(x[P_B2]));
}

/* Design points 0 .. n - 1 through the proposer, on a sweep without runs: the level counts
 * (+-1 of n / k) and each level's costs on both sides of the design's median log cost. */
static void check_design(const runner_config *cfg, size_t n)
{
    runner_sweep w = {(runner_config *)cfg, NULL, 0};
    double *x = malloc(n * N_P * sizeof(double)), *lc = malloc(n * sizeof(double));
    char em[ST_ERRMSG_MAX] = "";
    size_t count[2][3] = {{0}}, low[2][3] = {{0}}, high[2][3] = {{0}}, nb = 0, bad = 0;
    double cap = cfg->max_cost_per_run;
    for (size_t i = 0; x && lc && i < n; i++) {
        runner_propose_request rq = {cfg, NULL, "catmode", i, 0, NULL, 0, 1};
        double *xi = &x[i * N_P];
        CHECK_ST(study_propose(&w, &rq, NULL, xi, em), ST_OK);
        check_active(cfg, xi);
        lc[i] = log(6 * xi[P_N] * xi[P_D]);
        bad += !(lc[i] <= log(cap) + 1e-9);
        nb += !isnan(xi[P_B2]);
        count[0][(size_t)xi[P_OPT] & 1]++;
        count[1][(size_t)xi[P_NORM] % 3]++;
    }
    /* both halves of the band (cap / 100 .. cap, in log cost) for each level */
    double mid = log(cap) - 0.5 * log(100.0);
    for (size_t i = 0; x && lc && i < n; i++) {
        size_t o = (size_t)x[i * N_P + P_OPT] & 1, m = (size_t)x[i * N_P + P_NORM] % 3;
        low[0][o] += lc[i] < mid;
        high[0][o] += lc[i] >= mid;
        low[1][m] += lc[i] < mid;
        high[1][m] += lc[i] >= mid;
    }
    printf("design of %zu: adamw %zu lion %zu (beta2 set in %zu); pre %zu post %zu sandwich %zu\n",
           n, count[0][0], count[0][1], nb, count[1][0], count[1][1], count[1][2]);
    CHECK(bad == 0);
    CHECK(nb == count[0][0]);
    for (size_t c = 0; c < 2; c++)
        for (size_t l = 0; l < 2 + c; l++) {
            double want = (double)n / (double)(2 + c);
            CHECK(fabs((double)count[c][l] - want) <= 1);
            /* the blocks fix the counts, not where in the band a level's runs fall: that
             * follows the Sobol cost coordinate, so it is checked where each level has 16 or
             * more runs (with independent halves, one half empty has odds below 2^-15) */
            if (n >= 48)
                CHECK(low[c][l] > 0 && high[c][l] > 0);
        }
    free(x);
    free(lc);
}

static void test_design(void)
{
    char em[ST_ERRMSG_MAX];
    runner_config *cfg = load("method: study\noptimizer: {target_factor: 100}\n", yaml_params, em);
    CHECK(cfg != NULL);
    if (!cfg)
        return;
    cfg->design_initial = 64;
    static const size_t ns[] = {5, 12, 16, 31, 48};
    for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++)
        check_design(cfg, ns[k]);
    /* another seed, another order of the levels */
    double a[N_P], b[N_P];
    runner_sweep w = {cfg, NULL, 0};
    size_t differ = 0;
    for (size_t i = 0; i < 12; i++) {
        runner_propose_request rq = {cfg, NULL, "catmode", i, 0, NULL, 0, 1};
        cfg->seed = 11;
        CHECK_ST(study_propose(&w, &rq, NULL, a, em), ST_OK);
        cfg->seed = 12;
        CHECK_ST(study_propose(&w, &rq, NULL, b, em), ST_OK);
        differ += a[P_OPT] != b[P_OPT] || a[P_NORM] != b[P_NORM];
    }
    CHECK(differ > 0);
    runner_config_destroy(cfg);
}

/* ---- the acquisition -------------------------------------------------------------------- */

static uint64_t rng_state;
static double unif(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* A world: L = (1.7 + 400 N^-0.34 + 1200 D^-0.30) (1 + P_lr + P_beta2) exp(delta), lr's optimum
 * 2e-3 (N / 1e7)^-0.5, beta2's 0.92 (adamw only), delta 0.03 for lion, 0.01 per norm level. */
static double world_loss(const double *x)
{
    size_t opt = (size_t)x[P_OPT];
    double u = log(x[P_LR] / (2e-3 * pow(x[P_N] / 1e7, -0.5)));
    double P = 0.3 * (1 - exp(-0.05 * u * u / 0.3));
    if (opt == 0)
        P += 0.3 * (1 - exp(-20 * (x[P_B2] - 0.92) * (x[P_B2] - 0.92) / 0.3));
    double L = 1.7 + 400 * pow(x[P_N], -0.34) + 1200 * pow(x[P_D], -0.30);
    double z = 0.005 * (2 * unif() - 1);
    return L * (1 + P) * exp((opt ? 0.03 : 0) + 0.01 * x[P_NORM] + z);
}

static runner_sweep *make_sweep(runner_config *cfg, size_t n)
{
    runner_sweep *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->cfg = cfg;
    s->runs = calloc(n, sizeof(*s->runs));
    rng_state = 4242;
    for (size_t k = 0; s->runs && k < n; k++) {
        runner_sweep_run *u = &s->runs[s->n_runs];
        u->id = ++s->n_runs;
        u->x = malloc(N_P * sizeof(double));
        double *x = u->x;
        x[P_N] = exp(log(1e6) + unif() * log(30.0));
        x[P_D] = exp(log(1e8) + unif() * log(30.0));
        x[P_OPT] = (double)(k % 4 == 3);
        x[P_LR] = 2e-3 * pow(x[P_N] / 1e7, -0.5) * exp(1.5 * (2 * unif() - 1));
        x[P_B2] = k % 4 == 3 ? NAN : 0.9 + 0.099 * unif();
        x[P_NORM] = (double)(k % 3);
        u->status = RUNNER_RUN_SUCCEEDED;
        u->failure = RUNNER_FAIL_NONE;
        u->objective = world_loss(x);
        u->cost = 6 * x[P_N] * x[P_D];
        u->predicted_cost = u->final_N = u->final_D = NAN;
    }
    return s;
}

/* make_sweep's sweep (its config is the caller's). */
static void sweep_free(runner_sweep *w)
{
    for (size_t k = 0; w && k < w->n_runs; k++)
        free(w->runs[k].x);
    if (w)
        free(w->runs);
    free(w);
}

static void test_acquisition(void)
{
    char em[ST_ERRMSG_MAX];
    runner_config *cfg = load("method: study\noptimizer: {target_factor: 100}\n", yaml_params, em);
    CHECK(cfg != NULL);
    if (!cfg)
        return;
    runner_sweep *w = make_sweep(cfg, 80);
    study_plan *pl = NULL;
    study_mode_options o = study_mode_options_default();
    o.n_boot = 24;
    st_status rc = study_plan_make(w, w->n_runs, NULL, 0, NAN, 100, 8, 5, &o, &pl, em);
    if (rc)
        fprintf(stderr, "  study_plan_make: %s\n", em);
    CHECK_ST(rc, ST_OK);
    size_t seen[2] = {0, 0}, norm[3] = {0, 0, 0};
    for (size_t i = 0; pl && i < pl->n_picks; i++) {
        const double *x = pl->picks[i].x;
        check_active(cfg, x);
        seen[(size_t)x[P_OPT] & 1]++;
        norm[(size_t)x[P_NORM] % 3]++;
        CHECK(pl->picks[i].cost <= cfg->max_cost_per_run * (1 + 1e-9));
    }
    printf("plan: %zu picks of %zu candidates: adamw %zu lion %zu; pre %zu post %zu sandwich "
           "%zu\n",
           pl ? pl->n_picks : 0, pl ? pl->n_candidates : 0, seen[0], seen[1], norm[0], norm[1],
           norm[2]);
    CHECK(pl && pl->n_picks == 8);
    CHECK(seen[0] > 0 && seen[1] > 0);
    study_plan_free(pl);
    /* the proposer past the design (index 64 >= design_initial 16): a valid setting */
    cfg->design_initial = 16;
    runner_propose_request rq = {cfg, NULL, "catmode", 64, 80, NULL, 0, 99};
    double x[N_P];
    CHECK_ST(study_propose(w, &rq, &o, x, em), ST_OK);
    check_active(cfg, x);
    sweep_free(w);
    runner_config_destroy(cfg);
}

/* ---- suggest-next on a store ------------------------------------------------------------ */

static void test_cli(const char *argv0)
{
    char tmp[4096], cli[4200], dir[256], db[512], y[4096], em[ST_ERRMSG_MAX];
    check_build_path(argv0, "../../scaletune", cli, sizeof(cli));
    if (access(cli, X_OK) != 0) {
        printf("SKIP suggest-next: scaletune not built (run make)\n");
        return;
    }
    snprintf(dir, sizeof(dir), "/tmp/st_studycat_XXXXXX");
    if (!mkdtemp(dir))
        return;
    snprintf(db, sizeof(db), "%s/s.db", dir);
    snprintf(y, sizeof(y), "%smethod: study\noptimizer: {target_factor: 100}\n%s", yaml_head,
             yaml_params);
    CHECK_ST(runner_store_create_sweep(db, y, em), ST_OK);
    runner_config *cfg = load("method: study\noptimizer: {target_factor: 100}\n", yaml_params, em);
    runner_sweep *w = cfg ? make_sweep(cfg, 80) : NULL;
    runner_store *st = NULL;
    CHECK_ST(runner_store_open(db, &st, em), ST_OK);
    for (size_t k = 0; st && w && k < w->n_runs; k++) {
        const runner_sweep_run *u = &w->runs[k];
        char fin[200];
        snprintf(fin, sizeof(fin), "{\"event\":\"final\",\"params\":%.17g,\"tokens\":%.17g}",
                 u->x[P_N], u->x[P_D]);
        CHECK_ST(runner_store_record(st, "catmode", u->x, u->objective, u->cost, 0, fin, NULL),
                 ST_OK);
    }
    runner_store_close(st);
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "'%s' suggest-next --db '%s' --factor 100 -n 6 --json > '%s/o.json'",
             cli, db, dir);
    int rc = system(cmd);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
    snprintf(tmp, sizeof(tmp), "%s/o.json", dir);
    json_t *j = json_load_file(tmp, 0, NULL), *runs = json_object_get(j, "runs");
    size_t n_ok = 0;
    for (size_t k = 0; k < json_array_size(runs); k++) {
        json_t *p = json_object_get(json_array_get(runs, k), "params");
        const char *opt = json_string_value(json_object_get(p, "optimizer"));
        const char *norm = json_string_value(json_object_get(p, "norm"));
        json_t *b2 = json_object_get(p, "beta2");
        int lion = opt && !strcmp(opt, "lion"), adamw = opt && !strcmp(opt, "adamw");
        n_ok += (lion && json_is_null(b2)) || (adamw && json_is_number(b2));
        CHECK(norm && (!strcmp(norm, "pre") || !strcmp(norm, "post") || !strcmp(norm, "sandwich")));
    }
    printf("suggest-next: %zu runs, %zu with the optimizer by name and beta2 set where active\n",
           json_array_size(runs), n_ok);
    CHECK(json_array_size(runs) == 6 && n_ok == 6);
    json_decref(j);
    sweep_free(w);
    runner_config_destroy(cfg);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (!getenv("KEEP_TMP"))
        CHECK(system(cmd) == 0);
}

int main(int argc, char **argv)
{
    (void)argc;
    st_global_init();
    test_config();
    test_design();
    test_acquisition();
    test_cli(argv[0]);
    return check_summary("study.mode_categorical");
}
