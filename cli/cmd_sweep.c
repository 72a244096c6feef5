/*
 * cmd_sweep.c — `scaletune sweep`: launch, resume, status, stop, export, ask, tell, over the
 * public runner.h API only. SIGINT/SIGTERM ask the controller to stop gracefully (a second one
 * is left to the default action); a live progress line on a terminal, plain lines when piped.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "runner/runner.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    stop_flag = 1;
    signal(sig, SIG_DFL); /* a second Ctrl-C kills at once; resume picks up from the store */
}

static const char usage_text[] =
    "usage: scaletune sweep <command> [options]\n"
    "\n"
    "commands:\n"
    "  launch FILE        start the sweep described by FILE (YAML, docs/config.md)\n"
    "  create FILE        record the sweep without running it (for ask/tell)\n"
    "  resume             go on with a stopped or crashed sweep\n"
    "  status             runs done, running, failed, retried; best; Pareto front; spend\n"
    "  stop               ask the controller that owns the sweep to stop gracefully\n"
    "  export --csv|--json  every run with parameters, objective, cost and attempts\n"
    "  ask                print a suggestion for a script: id and NAME=VALUE lines\n"
    "  tell ID --objective V --cost C | tell ID --failed\n"
    "                     record the outcome of an asked run\n"
    "\n"
    "options:\n"
    "  --db FILE          the SQLite store (default: scaletune.db)\n"
    "  --sweep NAME       which sweep, when the store holds several\n"
    "  --log-dir DIR      launch: where attempt logs go (default: FILE.runs next to the db)\n"
    "  --out FILE         export: write to FILE instead of stdout\n"
    "  -h, --help         this text; docs/cli/sweep.md has more\n";

typedef struct args {
    const char *db, *sweep, *log_dir, *out, *file;
    int csv, json, failed, has_objective, has_cost;
    double objective, cost;
    unsigned long long id;
    int has_id;
} args;

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
                    !strcmp(s, "--out") || !strcmp(s, "--objective") || !strcmp(s, "--cost");
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
        } else if (s[0] == '-' && s[1]) {
            cli_error("see 'scaletune sweep --help'", "unknown option '%s'", s);
            return 2;
        } else if (!a->file && !a->has_id) {
            char *end;
            a->file = s;
            a->id = strtoull(s, &end, 10);
            a->has_id = end != s && !*end;
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
    size_t last_len;
} progress_state;

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
        snprintf(line + n, sizeof(line) - (size_t)n, "/%.4g", p->budget_cost);
    if (ps->tty) {
        size_t l = strlen(line);
        fprintf(stderr, "\r%s%*s", line, ps->last_len > l ? (int)(ps->last_len - l) : 0, "");
        ps->last_len = l;
    } else {
        printf("%s | %s\n", p->event ? p->event : "", line);
        fflush(stdout);
    }
}

static int run_controller(runner *r, progress_state *ps)
{
    st_status rc = runner_run(r);
    if (ps->tty)
        fputc('\n', stderr);
    if (rc) {
        cli_error(rc == ST_ENOSPC ? "free some disk space, then 'scaletune sweep resume'"
                                  : "'scaletune sweep resume' goes on from the store",
                  "%s", runner_errmsg(r));
        runner_destroy(r);
        return 1;
    }
    int fin = runner_finished(r);
    runner_destroy(r);
    if (!fin)
        fprintf(stderr, "scaletune: sweep stopped; 'scaletune sweep resume' goes on\n");
    return 0;
}

static void setup(runner_options *o, const args *a, progress_state *ps)
{
    *o = runner_options_default();
    o->db_path = a->db;
    o->log_dir = a->log_dir;
    o->stop_flag = &stop_flag;
    o->progress = on_progress;
    o->progress_data = ps;
    ps->tty = isatty(2);
    ps->last_len = 0;
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
    runner_options o;
    progress_state ps;
    setup(&o, a, &ps);
    runner *r = NULL;
    rc = runner_launch(cfg, &o, &r, em);
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
    return run_controller(r, &ps);
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
    return run_controller(r, &ps);
}

static runner_store *open_store(const args *a)
{
    char em[ST_ERRMSG_MAX];
    runner_store *s = NULL;
    if (access(a->db, F_OK) != 0) {
        cli_error("name the store with --db FILE", "no store at %s", a->db);
        return NULL;
    }
    if (runner_store_open(a->db, &s, em)) {
        cli_error(NULL, "%s", em);
        return NULL;
    }
    return s;
}

static int store_error(runner_store *s)
{
    cli_error(NULL, "%s", runner_store_errmsg(s));
    runner_store_close(s);
    return 1;
}

static int do_status(const args *a)
{
    runner_store *s = open_store(a);
    if (!s)
        return 1;
    runner_status st;
    if (runner_store_status(s, a->sweep, &st))
        return store_error(s);
    printf("sweep      %s\n", st.name);
    printf("controller %s\n", st.controller_alive ? st.controller
                              : st.controller[0]  ? "none (lease expired)"
                                                  : "none");
    printf("runs       %zu", st.n_runs);
    if (st.budget_runs)
        printf(" of %zu", st.budget_runs);
    printf(": %zu succeeded, %zu failed, %zu infra_failed, %zu running, %zu pending, %zu "
           "stopped\n",
           st.n_by_status[RUNNER_RUN_SUCCEEDED], st.n_by_status[RUNNER_RUN_FAILED],
           st.n_by_status[RUNNER_RUN_INFRA_FAILED], st.n_by_status[RUNNER_RUN_RUNNING],
           st.n_by_status[RUNNER_RUN_PENDING], st.n_by_status[RUNNER_RUN_STOPPED]);
    printf("attempts   %zu (%zu retries), %zu garbage lines\n", st.n_attempts, st.n_retried,
           st.n_garbage);
    printf("spend      %.6g", st.spent_cost);
    if (isfinite(st.budget_cost))
        printf(" of %.6g (%.1f%%)", st.budget_cost, 100 * st.spent_cost / st.budget_cost);
    if (isfinite(st.max_cost_per_run))
        printf(", at most %.6g per run", st.max_cost_per_run);
    printf("\n");
    if (st.has_best)
        printf("best       run %llu: objective %.10g at cost %.6g (%s)\n",
               (unsigned long long)st.best_run, st.best_objective, st.best_cost,
               st.maximize ? "maximize" : "minimize");
    else
        printf("best       none yet\n");
    size_t n = 0;
    if (runner_store_pareto(s, a->sweep, 0, &n, NULL, NULL, NULL))
        return store_error(s);
    if (n) {
        uint64_t *ids = malloc(n * sizeof(*ids));
        double *c = malloc(n * sizeof(double)), *o = malloc(n * sizeof(double));
        if (ids && c && o && !runner_store_pareto(s, a->sweep, n, &n, ids, c, o)) {
            printf("pareto     %zu runs (cost -> objective)\n", n);
            for (size_t i = 0; i < n; i++)
                printf("  run %-6llu %12.6g  %.10g\n", (unsigned long long)ids[i], c[i], o[i]);
        }
        free(ids);
        free(c);
        free(o);
    }
    if (st.stop_requested)
        printf("a stop was requested\n");
    runner_store_close(s);
    return 0;
}

static int do_stop(const args *a)
{
    runner_store *s = open_store(a);
    if (!s)
        return 1;
    if (runner_store_request_stop(s, a->sweep))
        return store_error(s);
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
    runner_store *s = open_store(a);
    if (!s)
        return 1;
    char *text = NULL;
    st_status rc = a->csv ? runner_store_export_csv(s, a->sweep, &text)
                          : runner_store_export_json(s, a->sweep, &text);
    if (rc)
        return store_error(s);
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
    runner_store *s = open_store(a);
    if (!s)
        return 1;
    double x[256];
    uint64_t id = 0;
    size_t n = 0;
    const char *const *names = NULL;
    if (runner_store_ask(s, a->sweep, &id, x, 256) || runner_store_params(s, a->sweep, &n, &names))
        return store_error(s);
    printf("SUGGESTION_ID=%llu\n", (unsigned long long)id);
    for (size_t i = 0; i < n && i < 256; i++)
        printf("%s=%.17g\n", names[i], x[i]);
    runner_store_close(s);
    return 0;
}

static int do_tell(const args *a)
{
    if (!a->has_id || (!a->failed && (!a->has_objective || !a->has_cost))) {
        cli_error("scaletune sweep tell ID --objective V --cost C   (or: tell ID --failed)",
                  "tell needs a suggestion id and an outcome");
        return 2;
    }
    runner_store *s = open_store(a);
    if (!s)
        return 1;
    if (runner_store_tell(s, a->sweep, a->id, a->failed ? NAN : a->objective,
                          a->has_cost ? a->cost : NAN, a->failed))
        return store_error(s);
    runner_store_close(s);
    return 0;
}

int cmd_sweep(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        fputs(usage_text, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_text, stdout);
            return 0;
        }
    args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    const char *c = argv[1];
    if (!strcmp(c, "launch"))
        return do_launch(&a, 1);
    if (!strcmp(c, "create"))
        return do_launch(&a, 0);
    if (!strcmp(c, "resume"))
        return do_resume(&a);
    if (!strcmp(c, "status"))
        return do_status(&a);
    if (!strcmp(c, "stop"))
        return do_stop(&a);
    if (!strcmp(c, "export"))
        return do_export(&a);
    if (!strcmp(c, "ask"))
        return do_ask(&a);
    if (!strcmp(c, "tell"))
        return do_tell(&a);
    cli_error("see 'scaletune sweep --help'", "unknown sweep command '%s'", c);
    return 2;
}
