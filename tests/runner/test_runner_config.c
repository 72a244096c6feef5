/*
 * test_runner_config.c — the sweep-file loader: the example loads with the values
 * written in it, defaults are those of docs/config.md, and every kind of mistake is refused
 * with file, line, column and field in the message. Also argv template expansion.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner/runner.h"
#include "runner/runner_int.h"
#include "tests/check.h"

static runner_config *load(const char *text, st_status want, const char *want_msg)
{
    char em[ST_ERRMSG_MAX] = "";
    runner_config *c = NULL;
    st_status rc = runner_config_load_string(text, strlen(text), "t.yaml", &c, em);
    CHECK_ST(rc, want);
    if (rc != want)
        fprintf(stderr, "  message: %s\n", em);
    if (want_msg && !strstr(em, want_msg)) {
        fprintf(stderr, "  message '%s' lacks '%s'\n", em, want_msg);
        CHECK(0);
    }
    if (rc == ST_OK)
        CHECK(c != NULL);
    else
        CHECK(c == NULL);
    return c;
}

#define BASE_TAIL                                                                                  \
    "command: [prog, '{x}']\nobjective: {metric: loss}\n"                                          \
    "parameters:\n  x: {space: linear, min: 0, max: 1, center: 0.5}\nbudget: {runs: 3}\n"

#define BASE                                                                                       \
    "name: s\ncommand: [prog, '{x}']\nobjective: {metric: loss}\n"                                 \
    "parameters:\n  x: {space: linear, min: 0, max: 1, center: 0.5}\nbudget: {runs: 3}\n"

static void test_example(void)
{
    char em[ST_ERRMSG_MAX];
    runner_config *c = NULL;
    CHECK_ST(runner_config_load_file("examples/gpt-gpu.yaml", &c, em), ST_OK);
    if (!c) {
        fprintf(stderr, "%s\n", em);
        return;
    }
    CHECK(!strcmp(c->name, "gpt-gpu"));
    CHECK(c->argc == 15 && !strcmp(c->argv[0], "build/scaletune-train-cuda") &&
          !strcmp(c->argv[8], "{tokens}"));
    CHECK(!strcmp(c->objective, "val_loss") && !c->maximize);
    CHECK(!strcmp(c->cost_metric, "flops") && c->cost_expr);
    CHECK(c->n_params == 6 && runner_config_dim(c) == 5);
    CHECK(!strcmp(c->params[1].p.name, "d_model") && c->params[1].p.space == CARBS_SPACE_LOG);
    CHECK(c->params[1].p.is_integer && c->params[1].p.rounding == 16);
    CHECK(c->params[2].p.scale == 4 && c->params[2].p.space == CARBS_SPACE_LINEAR);
    CHECK(c->params[4].p.space == CARBS_SPACE_LOGIT && c->params[4].p.center == 0.05);
    CHECK(c->params[5].is_fixed && !strcmp(c->params[5].fixed_text, "256"));
    CHECK(c->params[5].fixed_value == 256);
    CHECK(c->budget_runs == 200 && c->budget_cost == 1e16 && c->max_cost_per_run == 1e14);
    CHECK(c->slots == 1 && c->n_gpus == 1 && c->gpus[0] == 0 && c->retries == 3);
    CHECK(c->wall_seconds == 3600 && c->no_metrics_seconds == 300 && c->seed == 0);

    /* template expansion: whole values, integers without decimals, fixed text as written */
    double v[6] = {3e-3, 128, 4, 1e6, 0.05, 0};
    char *s = NULL;
    CHECK_ST(runner_template_expand(c, "{d_model}", v, 7, 2, "/d", &s), ST_OK);
    CHECK(s && !strcmp(s, "128"));
    free(s);
    CHECK_ST(runner_template_expand(c, "--lr={lr} {{x}} {seq_len} {_run}/{_attempt} {_dir}", v, 7,
                                    2, "/d", &s),
             ST_OK);
    CHECK(s && !strcmp(s, "--lr=0.003 {x} 256 7/2 /d"));
    free(s);
    char em2[ST_ERRMSG_MAX];
    CHECK_ST(runner_template_check(c, "{nope}", em2), ST_EINVAL);
    CHECK_ST(runner_template_check(c, "a}b", em2), ST_EINVAL);
    runner_config_destroy(c);
    CHECK_ST(runner_config_load_file("examples/fake-trainer.yaml", &c, em), ST_OK);
    runner_config_destroy(c);
    /* the README's small sweep: 32 runs on the CPU trainer, a corpus in the repository */
    CHECK_ST(runner_config_load_file("examples/tiny-gpt.yaml", &c, em), ST_OK);
    CHECK(c && !strcmp(c->name, "tiny-gpt") && !strcmp(c->argv[0], "build/scaletune-train"));
    CHECK(c && c->budget_runs == 32 && c->slots == 2 && c->n_params == 6);
    CHECK(access("examples/data/genesis.txt", R_OK) == 0);
    runner_config_destroy(c);
}

static void test_defaults(void)
{
    runner_config *c = load(BASE, ST_OK, NULL);
    if (!c)
        return;
    CHECK(!strcmp(c->cost_metric, "wall_seconds") && !c->cost_expr);
    CHECK(c->slots == 1 && c->retries == 3 && c->backoff_seconds == 5);
    CHECK(isinf(c->wall_seconds) && isinf(c->no_metrics_seconds) && isinf(c->budget_cost));
    CHECK(c->straggler_factor == 10 && c->kill_grace_seconds == 5 && !c->workdir);
    runner_config_destroy(c);
    c = load(BASE "parallel: {slots: 2, gpus: [0, 1, 2, 3]}\nretries: 0\n"
                  "env: {A: '1', B: '{x}'}\noptimizer: {num_random_samples: 8, mode: faithful}\n",
             ST_OK, NULL);
    if (!c)
        return;
    CHECK(c->slots == 2 && c->n_gpus == 4 && c->gpus[3] == 3 && c->retries == 0);
    CHECK(c->n_env == 2 && !strcmp(c->env[1], "B={x}"));
    CHECK(c->n_opts == 2 && !strcmp(c->opt_values[1], "faithful"));
    runner_config_destroy(c);
}

static void test_errors(void)
{
    load("name: [", ST_EFORMAT, "t.yaml:2:1: YAML syntax");
    load("", ST_EINVAL, "empty");
    load(BASE "bogus: 1\n", ST_EINVAL, "t.yaml:7:1: bogus: unknown key");
    load(BASE "name: t\n", ST_EINVAL, "given twice");
    load("name: s\ncommand: prog {x}\nobjective: {metric: loss}\n"
         "parameters:\n  x: {space: linear, min: 0, max: 1, center: 0.5}\nbudget: {runs: 3}\n",
         ST_EINVAL, "t.yaml:2:10: command: expected a list");
    load("name: s\ncommand: [prog, '{y}']\nobjective: {metric: loss}\n"
         "parameters:\n  x: {space: linear, min: 0, max: 1, center: 0.5}\nbudget: {runs: 3}\n",
         ST_EINVAL, "unknown placeholder {y}");
    load("name: s\ncommand: [prog]\nobjective: {metric: loss}\n"
         "parameters:\n  x: {space: linear, min: 0, max: one, center: 0.5}\nbudget: {runs: 3}\n",
         ST_EINVAL, "t.yaml:5:35: parameters.x.max: expected a number, got 'one'");
    load("name: s\ncommand: [prog]\nobjective: {metric: loss}\n"
         "parameters:\n  x: {space: linear, min: 0, max: 1, center: 2}\nbudget: {runs: 3}\n",
         ST_EINVAL, "parameters.x: center 2 is not inside");
    load("name: s\ncommand: [prog]\nobjective: {metric: loss}\n"
         "parameters:\n  x: {space: cubic, min: 0, max: 1, center: 0.5}\nbudget: {runs: 3}\n",
         ST_EINVAL, "parameters.x.space: expected linear, log or logit");
    load("name: s\ncommand: [prog]\nobjective: {metric: loss}\n"
         "parameters:\n  x: {space: linear, min: 0, max: 1, centre: 0.5, step: 2}\n"
         "budget: {runs: 3}\n",
         ST_EINVAL, "unknown key 'step'");
    /* all parameters fixed: a one-run sweep, nothing to search */
    runner_config *fixed = load("name: s\ncommand: [prog, '{x}']\nobjective: {metric: loss}\n"
                                "parameters:\n  x: {value: 3}\nbudget: {runs: 1}\n",
                                ST_OK, NULL);
    CHECK(fixed && runner_config_dim(fixed) == 0 && fixed->n_params == 1);
    runner_config_destroy(fixed);
    load("name: s\ncommand: [prog]\nobjective: {metric: loss}\n"
         "parameters:\n  x: {space: linear, min: 0, max: 1, center: 0.5}\nbudget: "
         "{max_cost_per_run: 3}\n",
         ST_EINVAL, "budget: needs 'runs' or 'cost'");
    load(BASE "objective2: 1\n", ST_EINVAL, "unknown key");
    load(BASE "cost: {metric: flops, expr: '6*{x}*{z}'}\nbudget2: 1\n", ST_EINVAL, NULL);
    load(BASE "cost: {metric: flops, expr: '6*{x}*{z}'}\n", ST_EINVAL, "is used to refuse");
    load("name: s\ncommand: [prog]\nobjective: {metric: loss}\ncost: {metric: flops, expr: "
         "'6*{x}*{z}'}\nparameters:\n  x: {space: linear, min: 0, max: 1, center: 0.5}\n"
         "budget: {runs: 3, max_cost_per_run: 10}\n",
         ST_EINVAL, "t.yaml:4:7: cost.expr: '6*{x}*{z}' at column 7: unknown parameter");
    load(BASE "parallel: {slots: 4, gpus: [0, 1]}\n", ST_EINVAL, "4 slots need");
    load(BASE "parallel: 0\n", ST_EINVAL, "parallel: expected an integer");
    load(BASE "timeouts: {wall_seconds: -1}\n", ST_EINVAL, "timeouts.wall_seconds: must be >= 0");
    load(BASE "timeouts: {wall: 3}\n", ST_EINVAL, "unknown key 'wall'");
    load(BASE "optimizer: {no_such_option: 3}\n", ST_EINVAL, "optimizer.no_such_option");
    load(BASE "optimizer: {seed: 3}\n", ST_EINVAL, "top-level 'seed'");
    load(BASE "objective: {metric: loss, goal: lowest}\n", ST_EINVAL, "given twice");
    load("name: s\ncommand: [prog]\nobjective: {metric: loss, goal: lowest}\n"
         "parameters:\n  x: {space: linear, min: 0, max: 1, center: 0.5}\nbudget: {runs: 3}\n",
         ST_EINVAL, "t.yaml:3:33: objective.goal: expected minimize or maximize");
    load("- a\n- b\n", ST_EINVAL, "expected a mapping");
    char em[ST_ERRMSG_MAX];
    runner_config *c = NULL;
    CHECK_ST(runner_config_load_file("/nonexistent/x.yaml", &c, em), ST_EIO);
    CHECK(c == NULL && strstr(em, "/nonexistent/x.yaml"));
}

#define BASE_NB                                                                                    \
    "name: s\ncommand: [prog, '{x}']\nobjective: {metric: loss}\n"                                 \
    "parameters:\n  x: {space: linear, min: 0, max: 1, center: 0.5}\n"

/* The optimizer's study-mode fields and the top-level `deterministic`: values, defaults, and
 * mistakes named with file:line:col and field; none of them reaches carbs/ as an option. */
static void test_study(void)
{
    runner_config *c = load(BASE, ST_OK, NULL);
    if (c) {
        CHECK(c->goal == RUNNER_GOAL_BEST && isnan(c->target_factor));
        CHECK(isnan(c->target_compute) && c->design_initial == 0 && c->deterministic == 1);
        CHECK(isnan(c->design_lr_window));
        runner_config_destroy(c);
    }
    c = load(BASE_NB "budget: {runs: 3, max_cost_per_run: 1e9}\ndeterministic: false\n"
                     "optimizer: {goal: extrapolate, target_factor: 100, initial_design: 12,\n"
                     "            num_random_samples: 4}\n",
             ST_OK, NULL);
    if (c) {
        CHECK(c->goal == RUNNER_GOAL_EXTRAPOLATE && c->target_factor == 100);
        CHECK(isnan(c->target_compute) && c->design_initial == 12 && c->deterministic == 0);
        CHECK(c->n_opts == 1 && !strcmp(c->opt_names[0], "num_random_samples"));
        runner_config_destroy(c);
    }
    c = load(BASE "optimizer: {goal: extrapolate, target_compute: 1e18}\n", ST_OK, NULL);
    if (c) {
        CHECK(c->goal == RUNNER_GOAL_EXTRAPOLATE && c->target_compute == 1e18);
        CHECK(isnan(c->target_factor) && c->n_opts == 0);
        runner_config_destroy(c);
    }
    c = load(BASE "optimizer: {goal: extrapolate, target_compute: 1e18, lr_window: 0}\n", ST_OK,
             NULL);
    if (c) {
        CHECK(c->design_lr_window == 0);
        runner_config_destroy(c);
    }
    c = load(BASE "optimizer: {goal: extrapolate, target_compute: 1e18, lr_window: 3}\n", ST_OK,
             NULL);
    if (c) {
        CHECK(c->design_lr_window == 3);
        runner_config_destroy(c);
    }
    c = load(BASE "optimizer: {goal: best}\n", ST_OK, NULL);
    if (c) {
        CHECK(c->goal == RUNNER_GOAL_BEST && c->n_opts == 0);
        runner_config_destroy(c);
    }
    load(BASE "optimizer: {goal: extrapolate}\n", ST_EINVAL,
         "t.yaml:7:19: optimizer.goal: extrapolate needs target_factor");
    load(BASE "optimizer: {goal: extrapolate, target_factor: 10, target_compute: 1e18}\n",
         ST_EINVAL, "t.yaml:7:67: optimizer.target_compute: give target_factor or target_compute");
    load(BASE "optimizer: {goal: extrapolate, target_factor: 100}\n", ST_EINVAL,
         "t.yaml:7:47: optimizer.target_factor: is a multiple of budget.max_cost_per_run");
    load(BASE "optimizer: {target_factor: 100}\n", ST_EINVAL,
         "t.yaml:7:28: optimizer.target_factor: only with goal: extrapolate");
    load(BASE "optimizer: {goal: best, target_compute: 1e18}\n", ST_EINVAL,
         "t.yaml:7:41: optimizer.target_compute: only with goal: extrapolate");
    load(BASE "optimizer: {initial_design: 5}\n", ST_EINVAL,
         "optimizer.initial_design: only with goal: extrapolate");
    load(BASE "optimizer: {goal: worst}\n", ST_EINVAL,
         "t.yaml:7:19: optimizer.goal: expected best or extrapolate");
    load(BASE "optimizer: {goal: extrapolate, target_factor: 1}\n", ST_EINVAL,
         "optimizer.target_factor: must be a finite number > 1");
    load(BASE "optimizer: {goal: extrapolate, target_compute: 0}\n", ST_EINVAL,
         "optimizer.target_compute: must be a finite number > 0");
    load(BASE "optimizer: {goal: extrapolate, target_compute: 1e18, initial_design: 2.5}\n",
         ST_EINVAL, "optimizer.initial_design: expected an integer");
    load(BASE "optimizer: {goal: extrapolate, target_compute: 1e18, lr_window: 0.5}\n", ST_EINVAL,
         "t.yaml:7:65: optimizer.lr_window: must be 0 (off) or a finite number >= 1");
    load(BASE "optimizer: {lr_window: 5}\n", ST_EINVAL,
         "t.yaml:7:24: optimizer.lr_window: only with goal: extrapolate");
    load(BASE "deterministic: maybe\n", ST_EINVAL, "t.yaml:7:16: deterministic: expected true");
}

/* The backend block (docs/backends/slurm.md): values, defaults, time formats, mistakes. */
static void test_backend(void)
{
    runner_config *c = load(BASE, ST_OK, NULL);
    if (c)
        CHECK(c->backend == RUNNER_BACKEND_LOCAL);
    runner_config_destroy(c);
    c = load(BASE "backend: {kind: slurm, partition: gpu, account: ml, qos: high, "
                  "time_limit: '1-02:03:04', gres: 'gpu:1', cpus_per_task: 8, "
                  "extra: ['--mem=32G', '--constraint=a100'], on_timeout: retry, "
                  "on_cancelled: stop}\n",
             ST_OK, NULL);
    if (c) {
        const runner_slurm_config *s = &c->slurm;
        CHECK(c->backend == RUNNER_BACKEND_SLURM && s->via == RUNNER_SLURM_CLI);
        CHECK(!strcmp(s->partition, "gpu") && !strcmp(s->account, "ml") && !strcmp(s->qos, "high"));
        CHECK(s->time_limit_minutes == 1440 + 2 * 60 + 3 + 1); /* seconds round up */
        CHECK(!strcmp(s->gres, "gpu:1") && s->cpus_per_task == 8);
        CHECK(s->n_extra == 2 && !strcmp(s->extra[1], "--constraint=a100"));
        CHECK(s->on_timeout == RUNNER_SLURM_RETRY && s->on_cancelled == RUNNER_SLURM_STOP);
        CHECK(s->poll_min_seconds == 1 && s->poll_max_seconds == 30);
    }
    runner_config_destroy(c);
    c = load(BASE "backend: {kind: slurm, via: rest, time_limit: 90, rest: {url: "
                  "'http://head:6820/', user: alice}}\n",
             ST_OK, NULL);
    if (c) {
        const runner_slurm_config *s = &c->slurm;
        CHECK(s->via == RUNNER_SLURM_REST && s->time_limit_minutes == 90);
        CHECK(!strcmp(s->rest_url, "http://head:6820") && !strcmp(s->rest_user, "alice"));
        CHECK(!strcmp(s->token_env, "SLURM_JWT") && !s->token_file); /* the default source */
        CHECK(s->on_timeout == RUNNER_SLURM_FAIL && s->on_cancelled == RUNNER_SLURM_RETRY);
    }
    runner_config_destroy(c);
    const char *times[][2] = {
        {"30", "30"}, {"2:30", "3"}, {"1:00:00", "60"}, {"2-0", "2880"}, {"2-1:30", "2970"}};
    for (size_t i = 0; i < 5; i++) {
        char text[1024];
        snprintf(text, sizeof(text), BASE "backend: {kind: slurm, time_limit: '%s'}\n",
                 times[i][0]);
        c = load(text, ST_OK, NULL);
        CHECK(c && c->slurm.time_limit_minutes == (unsigned)atoi(times[i][1]));
        runner_config_destroy(c);
    }
    load(BASE "backend: {kind: pbs}\n", ST_EINVAL, "backend.kind: expected local or slurm");
    load(BASE "backend: {via: cli}\n", ST_EINVAL, "needs 'kind'");
    load(BASE "backend: {kind: local, partition: x}\n", ST_EINVAL, "needs kind: slurm");
    load(BASE "backend: {kind: slurm, via: rest}\n", ST_EINVAL, "via: rest needs");
    load(BASE "backend: {kind: slurm, via: rest, rest: {url: 'http://h', socket: /s}}\n", ST_EINVAL,
         "exactly one of");
    load(BASE "backend: {kind: slurm, via: rest, rest: {socket: /s, token_file: /t}}\n", ST_EINVAL,
         "no token");
    load(BASE "backend: {kind: slurm, via: rest, rest: {url: 'ftp://h'}}\n", ST_EINVAL,
         "backend.rest.url");
    load(BASE "backend: {kind: slurm, rest: {socket: /s}}\n", ST_EINVAL, "only with via: rest");
    load(BASE "backend: {kind: slurm, via: rest, extra: ['--mem=1G'], rest: {socket: /s}}\n",
         ST_EINVAL, "via: cli only");
    load(BASE "backend: {kind: slurm, extra: [mem]}\n", ST_EINVAL, "is not an option");
    load(BASE "backend: {kind: slurm, time_limit: '1:xx'}\n", ST_EINVAL, "backend.time_limit");
    load(BASE "backend: {kind: slurm, on_timeout: stop}\n", ST_EINVAL, "expected fail or retry");
    load(BASE "backend: {kind: slurm, on_cancelled: fail}\n", ST_EINVAL, "expected retry or stop");
    load(BASE "backend: {kind: slurm, poll_seconds: 5, poll_max_seconds: 1}\n", ST_EINVAL,
         "at least poll_seconds");
    load(BASE "backend: {kind: slurm, queue: x}\n", ST_EINVAL, "unknown key 'queue'");
    load(BASE "parallel: {slots: 1, gpus: [0]}\nbackend: {kind: slurm}\n", ST_EINVAL,
         "backend.gres");
    CHECK(!strcmp(runner_failure_name(RUNNER_FAIL_CANCELLED), "cancelled"));
    CHECK(!runner_failure_is_hyperparameter(RUNNER_FAIL_NODE));
    CHECK(!runner_failure_is_hyperparameter(RUNNER_FAIL_TIME_LIMIT));
}

#define REST                                                                                       \
    "command: [prog, '{x}']\nobjective: {metric: loss}\n"                                          \
    "parameters:\n  x: {space: linear, min: 0, max: 1, center: 0.5}\nbudget: {runs: 3}\n"

/* Sweep names are path components: [A-Za-z0-9._-], 1 to 100, not starting with '.' or '-';
 * anything else is refused at load with file:line:col (the name's value is on line 2). */
static void test_names(void)
{
    const char *bad[] = {"'../../escaped'", "'a/b'", "'.hidden'",     "'-rf'",
                         "'a b'",           "''",    "'caf\xc3\xa9'", "'x\\y'"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[512];
        snprintf(text, sizeof(text),
                 "command: [prog, '{x}']\nname: %s\nobjective: {metric: loss}\n"
                 "parameters:\n  x: {space: linear, min: 0, max: 1, center: 0.5}\n",
                 bad[i]);
        load(text, ST_EINVAL, "t.yaml:2:7: name: ");
    }
    /* the longest name, and one character more; a 10 MiB name is refused, not stored */
    size_t big = 10u << 20;
    char *text = malloc(big + 512);
    char *name = malloc(big + 1);
    if (!text || !name) {
        free(text);
        free(name);
        CHECK(0);
        return;
    }
    memset(name, 'a', big);
    for (size_t n = 99; n <= 101; n++) {
        name[n] = '\0';
        snprintf(text, big + 512, "name: %s\n" REST, name);
        runner_config *c = load(text, n <= 100 ? ST_OK : ST_EINVAL,
                                n <= 100 ? NULL : "t.yaml:1:7: name: is longer than 100");
        CHECK(n > 100 || (c && strlen(c->name) == n));
        runner_config_destroy(c);
        name[n] = 'a';
    }
    name[big] = '\0';
    snprintf(text, big + 512, "name: %s\n" REST, name);
    load(text, ST_EINVAL, "longer than 100 characters");
    free(text);
    free(name);
    runner_config_destroy(load("name: A-z_0.9-\n" REST, ST_OK, NULL));
    /* the checker itself */
    char why[200];
    CHECK(runner_sweep_name_ok("ok.name_1-2", why, sizeof(why)));
    CHECK(!runner_sweep_name_ok(NULL, why, sizeof(why)) && strstr(why, "is empty"));
    CHECK(!runner_sweep_name_ok("..", why, sizeof(why)) && strstr(why, "starts with"));
}

/* Writes `text` to path (0: done). */
static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

/* The directory sweep `name` in the store at db records for its runs (strdup'd), or NULL. */
static char *recorded_workdir(const char *db, const char *name)
{
    runner_store *s = NULL;
    runner_sweep *w = NULL;
    char em[ST_ERRMSG_MAX], *wd = NULL;
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    if (s && runner_store_read_sweep(s, name, &w) == ST_OK && w->cfg->workdir)
        wd = strdup(w->cfg->workdir);
    runner_sweep_free(w);
    runner_store_close(s);
    return wd;
}

/* `workdir`: mistakes named with file:line:col and field; from a string it stays as written,
 * from a file a relative one is resolved against the file's directory (not the current one);
 * launch records it, absolute (or the current directory when the file has none), and the
 * typed read gives the recorded one back whatever the reader's current directory. */
static void test_workdir(void)
{
    load(BASE "workdir: [a, b]\n", ST_EINVAL, "t.yaml:7:10: workdir: expected a string");
    load(BASE "workdir: ''\n", ST_EINVAL, "t.yaml:7:10: workdir: must not be empty");
    load(BASE "workdir: 'runs/{x}'\n", ST_EINVAL, "t.yaml:7:10: workdir: placeholders are not");
    load(BASE "workdir: /a\nworkdir: /b\n", ST_EINVAL, "t.yaml:8:1: workdir: given twice");
    runner_config *c = load(BASE "workdir: ../data\n", ST_OK, NULL);
    CHECK(c && !strcmp(c->workdir, "../data"));
    runner_config_destroy(c);

    char tmpl[] = "/tmp/st-workdir-XXXXXX", home[4096], top[4096], want[8400], path[8400];
    char em[ST_ERRMSG_MAX];
    CHECK(getcwd(home, sizeof(home)) != NULL);
    if (!mkdtemp(tmpl) || !realpath(tmpl, top)) {
        CHECK(0);
        return;
    }
    snprintf(path, sizeof(path), "%s/proj", top);
    CHECK(mkdir(path, 0755) == 0);
    snprintf(path, sizeof(path), "%s/proj/sweeps", top);
    CHECK(mkdir(path, 0755) == 0);
    snprintf(path, sizeof(path), "%s/elsewhere", top);
    CHECK(mkdir(path, 0755) == 0);
    snprintf(path, sizeof(path), "%s/proj/sweeps/up.yaml", top);
    CHECK(write_file(path, "name: up\n" BASE_TAIL "workdir: ..\n") == 0);
    snprintf(path, sizeof(path), "%s/proj/sweeps/missing.yaml", top);
    CHECK(write_file(path, "name: missing\n" BASE_TAIL "workdir: not/yet\n") == 0);
    snprintf(path, sizeof(path), "%s/proj/sweeps/abs.yaml", top);
    CHECK(write_file(path, "name: abs\n" BASE_TAIL "workdir: /nonexistent/../x\n") == 0);
    snprintf(path, sizeof(path), "%s/proj/sweeps/none.yaml", top);
    CHECK(write_file(path, "name: none\n" BASE_TAIL) == 0);

    /* loaded from another directory, by a relative path */
    CHECK(chdir(top) == 0);
    CHECK_ST(runner_config_load_file("proj/sweeps/up.yaml", &c, em), ST_OK);
    snprintf(want, sizeof(want), "%s/proj", top);
    CHECK(c && c->workdir && !strcmp(c->workdir, want));
    runner_config_destroy(c);
    CHECK(chdir("proj/sweeps") == 0); /* a bare file name: the current directory is its own */
    CHECK_ST(runner_config_load_file("up.yaml", &c, em), ST_OK);
    CHECK(c && c->workdir && !strcmp(c->workdir, want));
    runner_config_destroy(c);
    CHECK(chdir(top) == 0);
    CHECK_ST(runner_config_load_file("proj/sweeps/missing.yaml", &c, em), ST_OK);
    snprintf(want, sizeof(want), "%s/proj/sweeps/not/yet", top); /* for preflight to refuse */
    CHECK(c && c->workdir && !strcmp(c->workdir, want));
    runner_config_destroy(c);
    CHECK_ST(runner_config_load_file("proj/sweeps/abs.yaml", &c, em), ST_OK);
    CHECK(c && c->workdir && !strcmp(c->workdir, "/nonexistent/../x")); /* as written */
    runner_config_destroy(c);

    /* launch records it; a file without workdir records the directory launch ran in */
    char db[8400];
    snprintf(db, sizeof(db), "%s/s.db", top);
    runner_options o = runner_options_default();
    o.db_path = db;
    const char *names[2] = {"up", "none"};
    for (int i = 0; i < 2; i++) {
        runner *r = NULL;
        snprintf(path, sizeof(path), "%s/proj/sweeps/%s.yaml", top, names[i]);
        CHECK_ST(runner_config_load_file(path, &c, em), ST_OK);
        if (c)
            CHECK_ST(runner_launch(c, &o, &r, em), ST_OK);
        runner_destroy(r);
        runner_config_destroy(c);
    }
    CHECK(chdir("elsewhere") == 0);
    char *wd = recorded_workdir(db, "up");
    snprintf(want, sizeof(want), "%s/proj", top);
    CHECK(wd && !strcmp(wd, want));
    free(wd);
    wd = recorded_workdir(db, "none");
    CHECK(wd && !strcmp(wd, top));
    free(wd);

    /* the repository's examples name the repository root */
    CHECK(chdir(home) == 0);
    CHECK_ST(runner_config_load_file("examples/tiny-gpt.yaml", &c, em), ST_OK);
    CHECK(c && c->workdir && realpath(".", want) && !strcmp(c->workdir, want));
    runner_config_destroy(c);
    CHECK_ST(runner_config_load_file("examples/python/toy-sweep.yaml", &c, em), ST_OK);
    CHECK(c && c->workdir && !strcmp(c->workdir, want));
    runner_config_destroy(c);
    snprintf(path, sizeof(path), "rm -rf '%s'", top);
    if (!getenv("ST_TEST_KEEP") && system(path) != 0)
        fprintf(stderr, "cleanup of %s failed\n", top);
}

int main(void)
{
    test_example();
    test_names();
    test_defaults();
    test_errors();
    test_backend();
    test_study();
    test_workdir();
    return check_summary("runner.config");
}
