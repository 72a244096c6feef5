/*
 * test_study_categorical.c — a stored sweep with a categorical parameter (optimizer: adamw or
 * lion) and a conditional one (beta2, active with adamw only) through study/ to the engine's
 * discrete factor and out of `scaletune extrapolate`, against a world with known truth:
 *   L = (1.7 + 400 N^-0.34 + 1200 D^-0.30) (1 + P_lr + P_beta2) exp(delta_opt + noise),
 * lr's optimum 2e-3 (N/1e7)^-0.5 times shift_opt, runs diverging above 6x it; beta2's optimum
 * 0.92, its penalty only with adamw.
 *  - world 1, lion's ln loss +0.05 over adamw: study_run recovers the offset inside its
 *    interval and recommends adamw with beta2 near 0.92;
 *  - world 2, lion -0.05 with its lr optimum at 0.3x: recommends lion at about 0.3x adamw's
 *    lr, beta2 inactive (NAN);
 *  - `scaletune extrapolate` on world 2's store (written through runner_store_record): the JSON
 *    says "optimizer": "lion", beta2 null, and the factor's levels; --emit yaml writes
 *    `optimizer: {value: "lion"}`, leaves beta2 and its `--beta2 {beta2}` arguments out; the
 *    HTML report says what to run with the level by name and tabulates the levels.
 */
#include <jansson.h>
#include <libgen.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "study/study.h"
#include "tests/check.h"

static const char *const sweep_yaml =
    "name: cat\n"
    "command: [\"true\", \"--opt\", \"{optimizer}\", \"--beta2\", \"{beta2}\", \"--lr={lr}\"]\n"
    "objective: {metric: val_loss}\n"
    "cost: {metric: flops}\n"
    "budget: {runs: 400}\n"
    "parameters:\n"
    "  N:         {space: log, min: 1.0e6, max: 1.0e8, center: 1.0e7}\n"
    "  tokens:    {space: log, min: 1.0e8, max: 1.0e10, center: 1.0e9}\n"
    "  lr:        {space: log, min: 1.0e-5, max: 0.5, center: 3.0e-3}\n"
    "  optimizer: {choices: [adamw, lion]}\n"
    "  beta2:     {space: linear, min: 0.9, max: 0.999, center: 0.95, when: {optimizer: "
    "adamw}}\n";

enum { P_N = 0, P_D, P_LR, P_OPT, P_B2, N_P };

typedef struct world {
    double delta_lion, shift_lion;
} world;

static double lr_opt(double N, size_t opt, const world *w)
{
    return 2e-3 * pow(N / 1e7, -0.5) * (opt ? exp(w->shift_lion) : 1);
}

/* The loss of setting x (NAN: diverged), noise z in ln loss. */
static double world_loss(const world *w, const double *x, double z)
{
    size_t opt = (size_t)x[P_OPT];
    double u = log(x[P_LR] / lr_opt(x[P_N], opt, w));
    if (u > log(6.0))
        return NAN;
    double P = 0.3 * (1 - exp(-0.05 * u * u / 0.3));
    if (opt == 0)
        P += 0.3 * (1 - exp(-20 * (x[P_B2] - 0.92) * (x[P_B2] - 0.92) / 0.3));
    double L = 1.7 + 400 * pow(x[P_N], -0.34) + 1200 * pow(x[P_D], -0.30);
    return L * (1 + P) * exp((opt ? w->delta_lion : 0) + z);
}

static uint64_t rng_state;
static double unif(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}
static double gauss(void)
{
    double u = unif() + 1e-300, v = unif();
    return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* Run k of world w (x: N_P values, file order), its objective (NAN: diverged) and cost. */
static double world_run(const world *w, size_t k, double *x, double *cost)
{
    x[P_N] = exp(log(1e6) + unif() * log(100.0));
    x[P_D] = exp(log(1e8) + unif() * log(100.0));
    x[P_OPT] = (double)(k % 2);
    x[P_LR] = lr_opt(x[P_N], k % 2, w) * exp(3 * (2 * unif() - 1));
    x[P_LR] = fmin(fmax(x[P_LR], 1.1e-5), 0.49);
    x[P_B2] = k % 2 ? NAN : 0.9 + 0.099 * unif();
    *cost = 6 * x[P_N] * x[P_D];
    return world_loss(w, x, 0.005 * gauss());
}

static runner_sweep *make_sweep(const world *w, size_t n)
{
    runner_sweep *s = calloc(1, sizeof(*s));
    char em[ST_ERRMSG_MAX];
    if (runner_config_load_string(sweep_yaml, strlen(sweep_yaml), "cat", &s->cfg, em)) {
        fprintf(stderr, "%s\n", em);
        exit(1);
    }
    s->runs = calloc(n, sizeof(*s->runs));
    rng_state = 777;
    for (size_t k = 0; k < n; k++) {
        runner_sweep_run *u = &s->runs[s->n_runs];
        u->id = ++s->n_runs;
        u->x = malloc(N_P * sizeof(double));
        double cost, y = world_run(w, k, u->x, &cost);
        u->status = isfinite(y) ? RUNNER_RUN_SUCCEEDED : RUNNER_RUN_FAILED;
        u->failure = isfinite(y) ? RUNNER_FAIL_NONE : RUNNER_FAIL_DIVERGED;
        u->objective = y;
        u->cost = isfinite(y) ? cost : NAN;
        u->predicted_cost = u->final_N = u->final_D = NAN;
    }
    return s;
}

static study *run_world(const world *w, runner_sweep **sw)
{
    *sw = make_sweep(w, 160);
    study_options o = study_options_default();
    o.factor = 100;
    o.engine.n_boot = 40;
    o.backtest = 0;
    study *s = NULL;
    char em[ST_ERRMSG_MAX] = "";
    CHECK_ST(study_create(*sw, &o, &s, em), ST_OK);
    CHECK_ST(study_run(s), ST_OK);
    if (study_errmsg(s)[0])
        fprintf(stderr, "%s\n", study_errmsg(s));
    return s;
}

static void test_lion_worse(void)
{
    world w = {0.05, 0};
    runner_sweep *sw;
    study *s = run_world(&w, &sw);
    const fit_xp *xp = study_engine(s);
    fit_xp_result r;
    CHECK_ST(fit_xp_get_result(xp, &r), ST_OK);
    double off[3];
    size_t ref = 9;
    CHECK_ST(fit_xp_level_effect(xp, P_OPT, 1, off, NULL, &ref, NULL), ST_OK);
    if (ref == 1) /* lion is the reference: adamw's effect, negated */
        CHECK_ST(fit_xp_level_effect(xp, P_OPT, 0, off, NULL, &ref, NULL), ST_OK);
    double sg = ref == 0 ? 1 : -1;
    printf("world 1: lion's ln loss offset %+.4f [%+.4f, %+.4f] (truth +0.05); recommended %s, "
           "beta2 %.4f (truth 0.92)\n",
           sg * off[0], sg * off[sg > 0 ? 1 : 2], sg * off[sg > 0 ? 2 : 1],
           fit_xp_level_name(xp, P_OPT, (size_t)r.value[P_OPT]), r.value[P_B2]);
    CHECK_ABS(sg * off[0], 0.05, 0.01);
    CHECK(off[1] <= sg * 0.05 && sg * 0.05 <= off[2]);
    CHECK(r.method == FIT_XP_METHOD_MODEL);
    CHECK(r.value[P_OPT] == 0);
    CHECK_ABS(r.value[P_B2], 0.92, 0.02);
    CHECK(study_safe(s));
    study_destroy(s);
    runner_sweep_free(sw);
}

static void test_lion_better(void)
{
    world w = {-0.05, log(0.3)};
    runner_sweep *sw;
    study *s = run_world(&w, &sw);
    fit_xp_result r;
    CHECK_ST(fit_xp_get_result(study_engine(s), &r), ST_OK);
    double ratio = r.value[P_LR] / lr_opt(r.N, 0, &w);
    printf("world 2: recommended %s at lr %.3gx adamw's optimum (truth 0.3x), beta2 %g\n",
           r.value[P_OPT] == 1 ? "lion" : "adamw", ratio, r.value[P_B2]);
    CHECK(r.value[P_OPT] == 1);
    CHECK(ratio > 0.15 && ratio < 0.45);
    CHECK(isnan(r.value[P_B2]));
    study_destroy(s);
    runner_sweep_free(sw);
}

/* ---- the CLI on a store ------------------------------------------------------------------ */

static char dir[256], cli_path[4200];

static int sh(const char *args, const char *out)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "'%s' extrapolate %s > '%s/%s' 2> '%s/err.log'", cli_path, args, dir,
             out, dir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int write_store(const char *db, const world *w)
{
    char em[ST_ERRMSG_MAX];
    if (runner_store_create_sweep(db, sweep_yaml, em))
        return fprintf(stderr, "%s\n", em), 1;
    runner_store *s = NULL;
    if (runner_store_open(db, &s, em))
        return 1;
    rng_state = 777;
    for (size_t k = 0; k < 160; k++) {
        double x[N_P], cost, y = world_run(w, k, x, &cost);
        char fin[200];
        snprintf(fin, sizeof(fin), "{\"event\":\"final\",\"params\":%.17g,\"tokens\":%.17g}",
                 x[P_N], x[P_D]);
        if (runner_store_record(s, "cat", x, y, isfinite(y) ? cost : NAN, !isfinite(y), fin,
                                NULL)) {
            fprintf(stderr, "%s\n", runner_store_errmsg(s));
            runner_store_close(s);
            return 1;
        }
    }
    runner_store_close(s);
    return 0;
}

static char *slurp(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *b = calloc(1, 1 << 22);
    fread(b, 1, (1 << 22) - 1, f);
    fclose(f);
    return b;
}

static void test_cli(const char *argv0)
{
    check_build_path(argv0, "../../scaletune", cli_path, sizeof(cli_path));
    if (access(cli_path, X_OK) != 0) {
        printf("SKIP the CLI part: scaletune not built (run make)\n");
        return;
    }
    snprintf(dir, sizeof(dir), "/tmp/st_studycat_XXXXXX");
    if (!mkdtemp(dir))
        return;
    char db[512], args[2048], tmp[4096];
    snprintf(db, sizeof(db), "%s/s.db", dir);
    world w = {-0.05, log(0.3)};
    CHECK(write_store(db, &w) == 0);
    snprintf(args, sizeof(args), "--db '%s' --factor 100 --bootstrap 20 --no-backtest --json", db);
    CHECK(sh(args, "out.json") == 0);
    snprintf(tmp, sizeof(tmp), "%s/out.json", dir);
    json_t *j = json_load_file(tmp, 0, NULL);
    json_t *rec = json_object_get(j, "recommended");
    const char *opt = json_string_value(json_object_get(rec, "optimizer"));
    printf("scaletune extrapolate on the store: optimizer %s, beta2 %s\n", opt ? opt : "(none)",
           json_is_null(json_object_get(rec, "beta2")) ? "null" : "a value");
    CHECK(opt && !strcmp(opt, "lion"));
    CHECK(json_is_null(json_object_get(rec, "beta2")));
    json_t *fac =
        json_object_get(json_object_get(json_object_get(j, "model"), "categorical"), "optimizer");
    CHECK(fac && !strcmp(json_string_value(json_object_get(fac, "recommended")), "lion"));
    json_t *lv = json_object_get(json_object_get(fac, "levels"), "lion");
    CHECK(lv && json_integer_value(json_object_get(lv, "succeeded")) >= 3);
    CHECK(lv && json_is_true(json_object_get(lv, "recommendable")));
    json_decref(j);
    /* the text shows the level and the factor */
    snprintf(args, sizeof(args), "--db '%s' --factor 100 --bootstrap 20 --no-backtest", db);
    CHECK(sh(args, "out.txt") == 0);
    char *t = slurp("out.txt");
    CHECK(t && strstr(t, "optimizer        lion"));
    CHECK(t && strstr(t, "optimizer: each level against"));
    free(t);
    /* the emitted run: lion, no beta2, no --beta2 argument */
    snprintf(args, sizeof(args), "--db '%s' --factor 100 --bootstrap 20 --no-backtest --emit yaml",
             db);
    CHECK(sh(args, "large.yaml") == 0);
    t = slurp("large.yaml");
    CHECK(t && strstr(t, "optimizer: {value: \"lion\"}"));
    CHECK(t && !strstr(t, "beta2: {value"));
    CHECK(t && !strstr(t, "--beta2"));
    CHECK(t && strstr(t, "\"--opt\", \"{optimizer}\", \"--lr={lr}\""));
    free(t);
    snprintf(args, sizeof(args),
             "--db '%s' --factor 100 --bootstrap 20 --no-backtest --emit command", db);
    CHECK(sh(args, "cmd.txt") == 0);
    t = slurp("cmd.txt");
    CHECK(t && strstr(t, "true --opt lion --lr="));
    free(t);
    /* the report says what to run, the level by name */
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "'%s' report --db '%s' --bootstrap 20 --out '%s/r.html' > /dev/null",
             cli_path, db, dir);
    CHECK(system(cmd) == 0);
    t = slurp("r.html");
    CHECK(t && strstr(t, "optimizer lion, beta2 inactive"));
    CHECK(t && strstr(t, "<td class=\"l\">optimizer</td><td>lion</td>"));
    CHECK(t && strstr(t, "(reference)"));
    free(t);
    if (!getenv("KEEP_TMP")) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    st_global_init();
    test_lion_worse();
    test_lion_better();
    test_cli(argv[0]);
    return check_summary("study.categorical");
}
