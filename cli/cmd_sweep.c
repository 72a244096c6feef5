/*
 * cmd_sweep.c — `scaletune sweep`: launch, resume, status, stop, export, ask, tell, over the
 * public runner.h (and study.h) API only. SIGINT/SIGTERM ask the controller to stop gracefully (a
 * second one is left to the default action); a live progress line on a terminal, plain lines when
 * piped. A sweep whose optimizer.goal is extrapolate gets study/'s proposer (study mode).
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/sweep_int.h"
#include "runner/runner.h"
#include "study/study.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    stop_flag = 1;
    signal(sig, SIG_DFL); /* a second Ctrl-C kills at once; resume picks up from the store */
}

typedef sweep_args args;

/* One subcommand: its synopsis and what it does (the general and the per-command help). */
typedef struct sweep_cmd {
    const char *name;
    int (*fn)(const args *a);
    const char *synopsis;
    const char *help;
} sweep_cmd;

static int do_launch_run(const args *a);
static int do_create(const args *a);
static int do_resume(const args *a);
static int do_stop(const args *a);
static int do_export(const args *a);
static int do_ask(const args *a);
static int do_tell(const args *a);

static const sweep_cmd sweep_cmds[] = {
    {"launch", do_launch_run, "launch FILE [--db FILE] [--log-dir DIR]",
     "start the sweep described by FILE (YAML, docs/config.md) and run it in the foreground;\n"
     "the command is checked first (its program exists and is executable)"},
    {"create", do_create, "create FILE [--db FILE]",
     "record the sweep without running it (for ask/tell, or 'resume' later)"},
    {"resume", do_resume, "resume [--db FILE] [--sweep NAME]",
     "go on with a stopped or crashed sweep"},
    {"status", sweep_do_status, "status [--db FILE] [--sweep NAME] [--json]",
     "runs done, running, failed, retried; the best run and its parameters; the Pareto front;\n"
     "spend; elapsed time; whether its controller is running (from the lease's heartbeat)"},
    {"watch", sweep_do_watch, "watch [--db FILE] [--sweep NAME] [--interval SECONDS]",
     "follow a sweep live from another terminal: a line whenever it changes (runs, best,\n"
     "controller), with runs/min and the ETA; ends with the sweep (exit 0 when it finished,\n"
     "1 when it stopped with runs left)"},
    {"list", sweep_do_list, "list [--db FILE] [--json]",
     "the sweeps in the store, with their runs and controller"},
    {"delete", sweep_do_delete, "delete NAME [--db FILE]",
     "delete sweep NAME (its exact name) and all it recorded; refused while its controller runs"},
    {"rename", sweep_do_rename, "rename OLD NEW [--db FILE]",
     "rename sweep OLD to NEW; refused while its controller runs"},
    {"stop", do_stop, "stop [--db FILE] [--sweep NAME]",
     "ask the controller that owns the sweep to stop gracefully"},
    {"export", do_export, "export --csv|--json [--out FILE] [--db FILE] [--sweep NAME]",
     "every run with parameters, objective, cost, N and D, the final record and attempts"},
    {"ask", do_ask, "ask [--db FILE] [--sweep NAME] [--ttl SECONDS]",
     "print a suggestion for a script: SUGGESTION_ID and NAME=VALUE lines; with --ttl the run\n"
     "expires if no tell comes in time, and the next ask hands it out again"},
    {"tell", do_tell, "tell ID --objective V --cost C | tell ID --failed",
     "record the outcome of an asked run"},
    {"enqueue", sweep_do_enqueue, "enqueue NAME=VALUE ... [--db FILE] [--sweep NAME]",
     "add a known configuration (a baseline, a colleague's settings) as a pending run: the\n"
     "next resume launches it before new suggestions, the next ask hands it out; parameters\n"
     "not named take their centre, a categorical takes a choice, 'none' an inactive one"},
};
#define N_SWEEP_CMDS (sizeof(sweep_cmds) / sizeof(sweep_cmds[0]))

static const char options_text[] =
    "options:\n"
    "  --db FILE          the SQLite store (default: scaletune.db); only launch and create\n"
    "                     make a new one\n"
    "  --sweep NAME       which sweep, when the store holds several\n"
    "  --log-dir DIR      launch: where attempt logs go (default: FILE.runs next to the db)\n"
    "  --out FILE         export: write to FILE instead of stdout\n"
    "  --ttl SECONDS      ask: the run expires after SECONDS without a tell (a dead worker):\n"
    "                     the next ask hands it out again, and it does not count on the budget\n"
    "  --interval SECONDS watch: how often the store is read (default 2)\n"
    "  --json             status, list: JSON for scripts\n"
    "  -h, --help         this text; docs/cli/sweep.md has more\n";

static void usage(FILE *f)
{
    fputs("usage: scaletune sweep <command> [options]\n\ncommands:\n", f);
    for (size_t i = 0; i < N_SWEEP_CMDS; i++)
        fprintf(f, "  %s\n", sweep_cmds[i].synopsis);
    fprintf(f, "\n%s", options_text);
}

static void command_usage(const sweep_cmd *c)
{
    printf("usage: scaletune sweep %s\n\n%s\n\n%s", c->synopsis, c->help, options_text);
}

static int parse_double(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return end != s && !*end && errno == 0;
}

static int parse_args(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof(*a));
    a->db = "scaletune.db";
    for (int i = 2; i < argc; i++) {
        const char *s = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = !strcmp(s, "--db") || !strcmp(s, "--sweep") || !strcmp(s, "--log-dir") ||
                    !strcmp(s, "--out") || !strcmp(s, "--objective") || !strcmp(s, "--cost") ||
                    !strcmp(s, "--ttl") || !strcmp(s, "--interval");
        if (takes && !v) {
            cli_error("see 'scaletune sweep --help'", "%s needs a value", s);
            return 2;
        }
        if (!strcmp(s, "--db"))
            a->db = v;
        else if (!strcmp(s, "--sweep"))
            a->sweep = v;
        else if (!strcmp(s, "--log-dir"))
            a->log_dir = v;
        else if (!strcmp(s, "--out"))
            a->out = v;
        else if (!strcmp(s, "--csv"))
            a->csv = 1;
        else if (!strcmp(s, "--json"))
            a->json = 1;
        else if (!strcmp(s, "--failed"))
            a->failed = 1;
        else if (!strcmp(s, "--objective")) {
            if (!parse_double(v, &a->objective)) {
                cli_error(NULL, "--objective: '%s' is not a number", v);
                return 2;
            }
            a->has_objective = 1;
        } else if (!strcmp(s, "--cost")) {
            if (!parse_double(v, &a->cost)) {
                cli_error(NULL, "--cost: '%s' is not a number", v);
                return 2;
            }
            a->has_cost = 1;
        } else if (!strcmp(s, "--ttl")) {
            if (!parse_double(v, &a->ttl) || !(a->ttl > 0) || !isfinite(a->ttl)) {
                cli_error(NULL, "--ttl: '%s' is not a positive number of seconds", v);
                return 2;
            }
        } else if (!strcmp(s, "--interval")) {
            if (!parse_double(v, &a->interval) || !(a->interval > 0) || !isfinite(a->interval)) {
                cli_error(NULL, "--interval: '%s' is not a positive number of seconds", v);
                return 2;
            }
        } else if (s[0] == '-' && s[1]) {
            cli_error("see 'scaletune sweep --help'", "unknown option '%s'", s);
            return 2;
        } else if (!strcmp(argv[1], "enqueue") && strchr(s, '=') && a->n_kv < SWEEP_KV_MAX) {
            a->kv[a->n_kv++] = s;
        } else if (!a->file && !a->has_id) {
            char *end;
            a->file = s;
            a->id = strtoull(s, &end, 10);
            a->has_id = end != s && !*end;
        } else if (!a->file2) {
            a->file2 = s;
        } else {
            cli_error("see 'scaletune sweep --help'", "unexpected argument '%s'", s);
            return 2;
        }
        if (takes)
            i++;
    }
    return 0;
}

typedef struct progress_state {
    int tty;
    int pipe_closed; /* stdout's reader went away (`launch ... | head`): stopped gracefully */
    size_t last_len;
    double t0;     /* monotonic seconds at the first report of this controller */
    size_t ended0; /* runs ended by then (a resumed sweep's earlier runs are not its rate) */
    int started;
    char supervisor[4096]; /* runner_options.supervisor's buffer, for as long as the options */
} progress_state;

static double mono_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* " | 12.3 runs/min, ETA 4m10s" from the runs this controller has seen end; "" until two have
 * (or without a run budget, the rate alone). */
static void rate_eta(progress_state *ps, const runner_progress *p, char *out, size_t cap)
{
    size_t ended = p->n_done + p->n_failed + p->n_infra_failed;
    double now = mono_seconds();
    out[0] = '\0';
    if (!ps->started) {
        ps->started = 1;
        ps->t0 = now;
        ps->ended0 = ended;
        return;
    }
    double dt = now - ps->t0;
    size_t n = ended > ps->ended0 ? ended - ps->ended0 : 0;
    if (n < 2 || !(dt > 0))
        return;
    double per_min = 60.0 * (double)n / dt;
    int k = snprintf(out, cap, " | %.3g runs/min", per_min);
    if (k <= 0 || (size_t)k >= cap || !p->budget_runs || ended >= p->budget_runs)
        return;
    double eta = (double)(p->budget_runs - ended) * dt / (double)n;
    long s = lround(eta);
    if (s >= 3600)
        snprintf(out + k, cap - (size_t)k, ", ETA %ldh%02ldm", s / 3600, s % 3600 / 60);
    else
        snprintf(out + k, cap - (size_t)k, ", ETA %ldm%02lds", s / 60, s % 60);
}

static void on_progress(const runner_progress *p, void *data)
{
    progress_state *ps = data;
    char best[48] = "-";
    if (p->has_best)
        snprintf(best, sizeof(best), "%.6g", p->best_objective);
    char budget[48] = "";
    if (p->budget_runs)
        snprintf(budget, sizeof(budget), "/%zu", p->budget_runs);
    char line[512];
    int n = snprintf(line, sizeof(line),
                     "runs %zu%s: %zu running, %zu pending, %zu ok, %zu failed, %zu infra, "
                     "%zu retried | best %s | cost %.4g",
                     p->n_runs, budget, p->n_running, p->n_pending, p->n_done, p->n_failed,
                     p->n_infra_failed, p->n_retried, best, p->spent_cost);
    if (isfinite(p->budget_cost) && n > 0 && (size_t)n < sizeof(line))
        n += snprintf(line + n, sizeof(line) - (size_t)n, "/%.4g", p->budget_cost);
    if (p->n_branch_running + p->n_branch_pending + p->n_branch_done && n > 0 &&
        (size_t)n < sizeof(line))
        n += snprintf(line + n, sizeof(line) - (size_t)n,
                      " | branches: %zu running, %zu pending, %zu ok", p->n_branch_running,
                      p->n_branch_pending, p->n_branch_done);
    char rate[64];
    rate_eta(ps, p, rate, sizeof(rate));
    if (n > 0 && (size_t)n < sizeof(line))
        snprintf(line + n, sizeof(line) - (size_t)n, "%s", rate);
    if (ps->tty) {
        size_t l = strlen(line);
        fprintf(stderr, "\r%s%*s", line, ps->last_len > l ? (int)(ps->last_len - l) : 0, "");
        ps->last_len = l;
    } else if (!ps->pipe_closed) {
        errno = 0;
        int bad = printf("%s | %s\n", p->event ? p->event : "", line) < 0;
        bad |= fflush(stdout) != 0;
        if (bad && errno == EPIPE) {
            /* SIGPIPE is ignored: stop as Ctrl-C does, so nothing is left half-done */
            ps->pipe_closed = 1;
            stop_flag = 1;
        }
    }
}

/* A finished sweep with runs that printed a malformed final record (failure bad_final) is a
 * configuration error of the trainer, and one in which no run succeeded a failure of the work:
 * exit 1 with why. */
static int check_successes(const char *db, const char *sweep)
{
    runner_store *s = NULL;
    runner_status st;
    if (runner_store_open(db, &s, NULL) || runner_store_status(s, sweep, &st)) {
        runner_store_close(s);
        return 0; /* the sweep itself ended well; the check is best effort */
    }
    runner_store_close(s);
    if (st.n_bad_final) {
        cli_error("the trainer's final record must hold the objective as a number and a cost "
                  "metric as a positive number (docs/metrics-protocol.md); such runs are not "
                  "retried or rerun: fix the trainer, then launch again",
                  "sweep '%s': %zu of %zu run%s printed a malformed final record (a configuration "
                  "error of the trainer, not infrastructure): %s",
                  st.name, st.n_bad_final, st.n_runs, st.n_runs == 1 ? "" : "s", st.bad_final);
        return 1;
    }
    if (st.n_runs == 0 || st.n_by_status[RUNNER_RUN_SUCCEEDED] > 0)
        return 0;
    cli_error("each attempt's stderr.log (under the log directory) says why; 'scaletune sweep "
              "export --json' lists the failure kinds",
              "sweep '%s' finished with 0 successful runs of %zu (%zu failed, %zu infrastructure "
              "failures)",
              st.name, st.n_runs, st.n_by_status[RUNNER_RUN_FAILED],
              st.n_by_status[RUNNER_RUN_INFRA_FAILED]);
    return 1;
}

/* Study mode (`optimizer.goal: extrapolate`): study/'s proposer makes the suggestions
 * (docs/algorithms/study-mode.md); CARBS mode keeps carbs/'s. */
static void set_goal(runner *r, runner_goal goal)
{
    if (goal == RUNNER_GOAL_EXTRAPOLATE)
        runner_set_proposer(r, study_proposer, NULL);
}

/* The goal of the stored sweep (resume reads its sweep file from the store). */
static runner_goal stored_goal(const args *a)
{
    char em[ST_ERRMSG_MAX];
    runner_store *s = NULL;
    runner_sweep *w = NULL;
    runner_goal g = RUNNER_GOAL_BEST;
    if (runner_store_open(a->db, &s, em) == ST_OK &&
        runner_store_read_sweep(s, a->sweep, &w) == ST_OK)
        g = w->cfg->goal;
    runner_sweep_free(w);
    runner_store_close(s);
    return g;
}

/* early_stopping.enabled: the study mode's rule (study/study_stop.c) for goal: extrapolate,
 * else CARBS' rule against the Pareto front (runner_stop_check_front). */
static st_status install_stop_check(runner *r, study_stop **ss)
{
    const runner_config *cfg = runner_get_config(r);
    *ss = NULL;
    if (!cfg->es_enabled)
        return ST_OK;
    if (cfg->goal != RUNNER_GOAL_EXTRAPOLATE) {
        runner_set_stop_check(r, runner_stop_check_front, NULL);
        return ST_OK;
    }
    st_status rc = study_stop_create(ss);
    if (!rc)
        runner_set_stop_check(r, study_stop_check, *ss);
    return rc;
}

static int run_controller(runner *r, progress_state *ps, const args *a, const char *name)
{
    study_stop *ss = NULL;
    st_status rc = install_stop_check(r, &ss);
    if (rc) {
        cli_error(NULL, "early stopping: %s", st_strerror(rc));
        runner_destroy(r);
        return 1;
    }
    rc = runner_run(r);
    if (ps->tty)
        fputc('\n', stderr);
    if (rc) {
        cli_error(rc == ST_ENOSPC ? "free some disk space, then 'scaletune sweep resume'"
                                  : "'scaletune sweep resume' goes on from the store",
                  "%s", runner_errmsg(r));
        runner_destroy(r);
        study_stop_destroy(ss);
        return 1;
    }
    int fin = runner_finished(r);
    runner_destroy(r);
    study_stop_destroy(ss);
    if (!fin)
        fprintf(stderr, "scaletune: sweep stopped%s; 'scaletune sweep resume' goes on\n",
                ps->pipe_closed ? " (the output pipe was closed)" : "");
    return fin ? check_successes(a->db, name) : 0;
}

static void setup(runner_options *o, const args *a, progress_state *ps)
{
    *o = runner_options_default();
    o->db_path = a->db;
    o->log_dir = a->log_dir;
    o->stop_flag = &stop_flag;
    o->progress = on_progress;
    o->progress_data = ps;
    o->supervisor = cli_supervisor(ps->supervisor, sizeof(ps->supervisor));
    ps->tty = isatty(2);
    ps->pipe_closed = 0;
    ps->last_len = 0;
    ps->started = 0;
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
}

static int do_launch(const args *a, int run)
{
    if (!a->file) {
        cli_error("scaletune sweep launch sweep.yaml [--db FILE]", "launch needs a sweep file");
        return 2;
    }
    char em[ST_ERRMSG_MAX];
    runner_config *cfg = NULL;
    st_status rc = runner_config_load_file(a->file, &cfg, em);
    if (rc) {
        cli_error("docs/config.md describes every field", "%s", em);
        return 1;
    }
    if (run && sweep_preflight(cfg, a->file)) {
        runner_config_destroy(cfg);
        return 1;
    }
    runner_options o;
    progress_state ps;
    setup(&o, a, &ps);
    runner *r = NULL;
    char name[256];
    snprintf(name, sizeof(name), "%s", cfg->name);
    rc = runner_launch(cfg, &o, &r, em);
    runner_goal goal = cfg->goal;
    runner_config_destroy(cfg);
    if (rc) {
        cli_error(rc == ST_ESTATE ? "use 'scaletune sweep resume', or change 'name'" : NULL, "%s",
                  em);
        return 1;
    }
    if (!run) {
        runner_destroy(r);
        return 0;
    }
    set_goal(r, goal);
    return run_controller(r, &ps, a, name);
}

static int do_launch_run(const args *a)
{
    return do_launch(a, 1);
}

static int do_create(const args *a)
{
    return do_launch(a, 0);
}

static int do_resume(const args *a)
{
    runner_options o;
    progress_state ps;
    setup(&o, a, &ps);
    runner *r = NULL;
    char em[ST_ERRMSG_MAX];
    st_status rc = runner_resume(a->sweep, &o, &r, em);
    if (rc) {
        cli_error(rc == ST_EBUSY ? "'scaletune sweep stop' asks it to stop" : NULL, "%s", em);
        return 1;
    }
    set_goal(r, stored_goal(a));
    return run_controller(r, &ps, a, a->sweep);
}

static int do_stop(const args *a)
{
    runner_store *s = sweep_open_store(a);
    if (!s)
        return 1;
    if (runner_store_request_stop(s, a->sweep))
        return sweep_store_error(s);
    runner_store_close(s);
    printf("stop requested; the controller stops within a few seconds\n");
    return 0;
}

static int do_export(const args *a)
{
    if (a->csv == a->json) {
        cli_error("scaletune sweep export --csv|--json", "choose one of --csv and --json");
        return 2;
    }
    runner_store *s = sweep_open_store(a);
    if (!s)
        return 1;
    char *text = NULL;
    st_status rc = a->csv ? runner_store_export_csv(s, a->sweep, &text)
                          : runner_store_export_json(s, a->sweep, &text);
    if (rc)
        return sweep_store_error(s);
    runner_store_close(s);
    FILE *f = a->out ? fopen(a->out, "w") : stdout;
    if (!f) {
        cli_error(NULL, "%s: %s", a->out, strerror(errno));
        st_free(text);
        return 1;
    }
    int bad = fputs(text, f) < 0 || (!a->csv && fputc('\n', f) < 0);
    if (a->out)
        bad |= fclose(f) != 0;
    st_free(text);
    if (bad) {
        cli_error(NULL, "writing the export failed");
        return 1;
    }
    return 0;
}

static int do_ask(const args *a)
{
    runner_store *s = sweep_open_store(a);
    if (!s)
        return 1;
    runner_store_set_proposer(s, study_proposer, NULL); /* a study-mode sweep's asks */
    double x[256];
    uint64_t id = 0;
    size_t n = 0;
    const char *const *names = NULL;
    if (runner_store_ask_ttl(s, a->sweep, a->ttl, &id, x, 256) ||
        runner_store_params(s, a->sweep, &n, &names))
        return sweep_store_error(s);
    char *text = NULL;
    if (runner_store_format_params(s, a->sweep, x, &text))
        return sweep_store_error(s);
    printf("SUGGESTION_ID=%llu\n", (unsigned long long)id);
    /* numbers as before (%.17g); a categorical's choice and "" where inactive as formatted */
    char *line = text;
    for (size_t i = 0; i < n && i < 256 && line && *line; i++) {
        char *nl = strchr(line, '\n'), *eq = strchr(line, '=');
        if (nl)
            *nl = '\0';
        char *end;
        const char *v = eq ? eq + 1 : "";
        strtod(v, &end);
        if (!isnan(x[i]) && *v && !*end)
            printf("%s=%.17g\n", names[i], x[i]);
        else
            printf("%s=%s\n", names[i], v);
        line = nl ? nl + 1 : NULL;
    }
    st_free(text);
    runner_store_close(s);
    return 0;
}

static int do_tell(const args *a)
{
    const char *use = "scaletune sweep tell ID --objective V --cost C   (or: tell ID --failed)";
    if (!a->has_id) {
        cli_error(use, "tell needs the suggestion id that 'ask' printed (SUGGESTION_ID)");
        return 2;
    }
    if (!a->failed && !a->has_objective && !a->has_cost) {
        cli_error(use, "tell needs an outcome: --objective and --cost, or --failed");
        return 2;
    }
    if (!a->failed && (!a->has_objective || !a->has_cost)) {
        cli_error(use,
                  "tell %llu: %s is missing (a success is recorded with its objective and "
                  "its cost)",
                  a->id, a->has_objective ? "--cost" : "--objective");
        return 2;
    }
    runner_store *s = sweep_open_store(a);
    if (!s)
        return 1;
    if (runner_store_tell(s, a->sweep, a->id, a->failed ? NAN : a->objective,
                          a->has_cost ? a->cost : NAN, a->failed))
        return sweep_store_error(s);
    runner_store_close(s);
    return 0;
}

int cmd_sweep(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const sweep_cmd *c = NULL;
    const char *names[N_SWEEP_CMDS];
    for (size_t i = 0; i < N_SWEEP_CMDS; i++) {
        names[i] = sweep_cmds[i].name;
        if (!strcmp(argv[1], sweep_cmds[i].name))
            c = &sweep_cmds[i];
    }
    if (!c) {
        const char *near = cli_nearest(argv[1], names, N_SWEEP_CMDS);
        char hint[128];
        snprintf(hint, sizeof(hint), "did you mean 'scaletune sweep %s'?", near ? near : "");
        cli_error(near ? hint : "see 'scaletune sweep --help'", "unknown sweep command '%s'",
                  argv[1]);
        return 2;
    }
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            command_usage(c);
            return 0;
        }
    args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    if (a.file2 && strcmp(c->name, "rename")) {
        cli_error("see 'scaletune sweep --help'", "unexpected argument '%s'", a.file2);
        return 2;
    }
    return c->fn(&a);
}
