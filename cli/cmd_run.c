/*
 * cmd_run.c — `scaletune run`: the large run, guarded (docs/cli/run.md, docs/large-run.md). It
 * launches a one-run sweep file (what `scaletune extrapolate --emit yaml` writes) in the store,
 * or continues it when the store has it already, and drives the controller itself so that a
 * watch can read the run's metrics between steps: alerts (NaN, loss spike, the curve or the
 * final loss outside the predicted interval, straggler) are stored and printed, a straggler is
 * restarted from its checkpoint on request, and the end says what restarts cost. Public headers
 * only.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/run_int.h"
#include "runner/largerun.h"
#include "runner/runner.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    stop_flag = 1;
    signal(sig, SIG_DFL);
}

typedef struct run_args {
    const char *file, *db, *log_dir, *expect_file, *node_opt;
    char node[128];         /* --node, else this machine's host name */
    runner_watch_options w; /* NAN or 0: not given, the file's large_run block decides */
    int restart_on_straggler, json, quiet;
    int changed;               /* the controller reported a state change (progress) */
    size_t n_seen;             /* failed attempts already checked (health) */
    int unhealthy;             /* a health check failed during the run (it was stopped) */
    unsigned quarantine_after; /* the file's large_run.quarantine_after */
} run_args;

static const char usage_text[] =
    "usage: scaletune run FILE [--db FILE] [options]\n\n"
    "Runs a one-run sweep file (scaletune extrapolate --emit yaml) to its end: infrastructure\n"
    "failures are restarted from the last checkpoint (put {_checkpoint} and {_resume} in the\n"
    "command), a diverged run stops, and alerts are stored and shown in 'sweep status'.\n"
    "If the store already holds the sweep, it is continued. The file's large_run block sets\n"
    "health checks and the defaults of the options below (docs/large-run.md).\n\n"
    "  --db FILE                 the store (default scaletune.db)\n"
    "  --log-dir DIR             attempt logs and checkpoints (default <db>.runs)\n"
    "  --expect FILE             extrapolate --json output: its predicted objective and interval\n"
    "  --interval LO,HI          the predicted interval, given directly\n"
    "  --spike-factor F          a step loss above F x the recent median is a spike (1.5; 0 off)\n"
    "  --spike-window N          steps of that median (20)\n"
    "  --straggler-fraction F    tokens/s below F x the run's median... (0.5; 0 off)\n"
    "  --straggler-window N      ...for N step records in a row is a straggler (5)\n"
    "  --restart-on-straggler    restart a straggler from its checkpoint\n"
    "  --node NAME               this node's name for health checks (default: the host name)\n"
    "  --json                    print the summary as JSON\n"
    "  --quiet                   no progress lines\n";

static int bad(const char *opt, const char *v)
{
    cli_error("see 'scaletune run --help'", "%s: bad value '%s'", opt, v ? v : "");
    return 2;
}

static int num(const char *v, double *out)
{
    char *end;
    errno = 0;
    *out = v ? strtod(v, &end) : NAN;
    return v && end != v && !*end && !errno && isfinite(*out);
}

static int parse_interval(const char *v, runner_watch_options *w)
{
    double lo, hi;
    int used = 0;
    if (!v || sscanf(v, "%lf,%lf%n", &lo, &hi, &used) != 2 || v[used] || !(lo <= hi))
        return 0;
    w->expect_lo = lo;
    w->expect_hi = hi;
    w->expect = 0.5 * (lo + hi);
    return 1;
}

/* One option with a value; 0 ok, 2 bad. */
static int take(run_args *a, const char *s, const char *v)
{
    double x;
    if (!strcmp(s, "--db"))
        a->db = v;
    else if (!strcmp(s, "--log-dir"))
        a->log_dir = v;
    else if (!strcmp(s, "--expect"))
        a->expect_file = v;
    else if (!strcmp(s, "--node"))
        a->node_opt = v;
    else if (!strcmp(s, "--interval"))
        return parse_interval(v, &a->w) ? 0 : bad(s, v);
    else if (!strcmp(s, "--spike-factor") && num(v, &x) && x >= 0)
        a->w.spike_factor = x;
    else if (!strcmp(s, "--spike-window") && num(v, &x) && x >= 1 && x == floor(x))
        a->w.spike_window = (size_t)x;
    else if (!strcmp(s, "--straggler-fraction") && num(v, &x) && x >= 0 && x < 1)
        a->w.straggler_fraction = x;
    else if (!strcmp(s, "--straggler-window") && num(v, &x) && x >= 1 && x == floor(x))
        a->w.straggler_window = (size_t)x;
    else
        return bad(s, v);
    return 0;
}

static int parse(int argc, char **argv, run_args *a)
{
    memset(a, 0, sizeof(*a));
    a->db = "scaletune.db";
    a->w = runner_watch_options_default();
    a->w.spike_factor = a->w.straggler_fraction = NAN;
    a->w.spike_window = a->w.straggler_window = 0;
    static const char *const flags[] = {"--db",
                                        "--node",
                                        "--log-dir",
                                        "--expect",
                                        "--interval",
                                        "--spike-factor",
                                        "--spike-window",
                                        "--straggler-fraction",
                                        "--straggler-window"};
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int takes = 0;
        for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++)
            takes |= !strcmp(s, flags[k]);
        if (takes) {
            if (i + 1 >= argc) {
                cli_error("see 'scaletune run --help'", "%s needs a value", s);
                return 2;
            }
            if (take(a, s, argv[++i]))
                return 2;
        } else if (!strcmp(s, "--restart-on-straggler"))
            a->restart_on_straggler = 1;
        else if (!strcmp(s, "--json"))
            a->json = 1;
        else if (!strcmp(s, "--quiet"))
            a->quiet = 1;
        else if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            fputs(usage_text, stdout);
            return -1;
        } else if (s[0] == '-' || a->file) {
            cli_error("see 'scaletune run --help'", "unexpected argument '%s'", s);
            return 2;
        } else
            a->file = s;
    }
    if (!a->file) {
        cli_error("scaletune run large.yaml --db sweep.db", "run needs a sweep file");
        return 2;
    }
    return 0;
}

/* predicted.{objective, lo, hi} of `scaletune extrapolate --json` output. */
static int read_expect(const char *path, runner_watch_options *w)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    json_t *p = json_object_get(j, "predicted");
    double o = json_number_value(json_object_get(p, "objective"));
    json_t *lo = json_object_get(p, "lo"), *hi = json_object_get(p, "hi");
    int ok = json_is_number(lo) && json_is_number(hi);
    if (ok) {
        w->expect = o;
        w->expect_lo = json_number_value(lo);
        w->expect_hi = json_number_value(hi);
        ok = w->expect_lo <= w->expect_hi;
    }
    json_decref(j);
    if (!ok)
        cli_error("write it with 'scaletune extrapolate ... --json --out FILE'",
                  "%s: no predicted interval (predicted.lo, predicted.hi)%s%s", path, j ? "" : ": ",
                  j ? "" : je.text);
    return ok ? 0 : 1;
}

/* 1 if an argument or env template of cfg names `placeholder`. */
static int uses(const runner_config *c, const char *placeholder)
{
    for (size_t i = 0; i < c->argc; i++)
        if (strstr(c->argv[i], placeholder))
            return 1;
    for (size_t i = 0; i < c->n_env; i++)
        if (strstr(c->env[i], placeholder))
            return 1;
    return 0;
}

/* Launches the file's sweep, or resumes it when the store has it. */
static int start(const run_args *a, runner_options *o, runner **r, char *name, size_t cap)
{
    char em[ST_ERRMSG_MAX];
    runner_config *cfg = NULL;
    if (runner_config_load_file(a->file, &cfg, em)) {
        cli_error("docs/config.md describes every field", "%s", em);
        return 1;
    }
    snprintf(name, cap, "%s", cfg->name);
    if (cfg->budget_runs != 1) {
        cli_error("a large run's file has 'budget: {runs: 1}' (scaletune extrapolate --emit yaml "
                  "writes one)",
                  "%s: runs one run; this file's budget is %zu runs", a->file, cfg->budget_runs);
        runner_config_destroy(cfg);
        return 1;
    }
    if (!uses(cfg, "{_resume}"))
        fprintf(stderr, "scaletune: warning: the command has no {_resume}: a restart begins "
                        "from scratch (docs/large-run.md)\n");
    st_status rc = runner_launch(cfg, o, r, em);
    runner_config_destroy(cfg);
    if (rc == ST_ESTATE) {
        fprintf(stderr, "scaletune: the store has sweep '%s' already: continuing it\n", name);
        rc = runner_resume(name, o, r, em);
    }
    if (rc) {
        cli_error(NULL, "%s", em);
        return 1;
    }
    return 0;
}

static void on_progress(const runner_progress *p, void *data)
{
    run_args *a = data;
    a->changed = 1;
    if (p->event && !a->quiet)
        fprintf(stderr, "scaletune run: %s\n", p->event);
}

/* The options not given on the command line from the stored file's large_run block. */
static void merge_options(run_args *a, const runner_config *cfg)
{
    const runner_large_config *l = &cfg->large;
    if (isnan(a->w.spike_factor))
        a->w.spike_factor = l->spike_factor;
    if (!a->w.spike_window)
        a->w.spike_window = l->spike_window;
    if (isnan(a->w.straggler_fraction))
        a->w.straggler_fraction = l->straggler_fraction;
    if (!a->w.straggler_window)
        a->w.straggler_window = l->straggler_window;
    a->restart_on_straggler |= l->restart_on_straggler;
    a->quarantine_after = l->quarantine_after;
}

/* Attempts of the sweep's run that ended in an infrastructure failure so far. */
static size_t failed_so_far(const char *db, const char *name)
{
    runner_store *s = NULL;
    runner_large_summary m;
    size_t n = 0;
    if (!runner_store_open(db, &s, NULL) && !runner_store_large_run(s, name, &m))
        n = m.n_failed;
    runner_store_close(s);
    return n;
}

/* After a state change: this machine's health checks once per attempt that failed; a failing
 * check stops the run (it stays resumable) and is recorded (quarantine at the second). */
static int health_after_failure(run_args *a, runner *r)
{
    runner_store *s = NULL;
    runner_large_summary m;
    const runner_config *cfg = runner_get_config(r);
    a->changed = 0;
    if (!cfg->large.n_health_checks || runner_store_open(a->db, &s, NULL) ||
        runner_store_large_run(s, cfg->name, &m) || m.n_failed <= a->n_seen) {
        runner_store_close(s);
        return 0;
    }
    runner_store_close(s);
    a->n_seen = m.n_failed;
    int q = 0, h = run_health(a->db, a->log_dir, a->node, cfg, "after a failure", &q);
    if (h > 0) {
        a->unhealthy = 1;
        stop_flag = 1; /* no restart on a node that failed its checks */
    }
    return h < 0;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    nanosleep(&ts, NULL);
}

/* Prints the alerts stored after the first *shown and returns them (the caller frees; NULL
 * when none is new), *n_new of them. */
static runner_alert *print_alerts(const char *db, const char *sweep, size_t *shown, size_t *n_new)
{
    runner_store *s = NULL;
    size_t n = 0;
    *n_new = 0;
    if (runner_store_open(db, &s, NULL) || runner_store_alerts(s, sweep, 0, &n, NULL) ||
        n <= *shown) {
        runner_store_close(s);
        return NULL;
    }
    runner_alert *al = malloc(n * sizeof(*al));
    if (al && runner_store_alerts(s, sweep, n, &n, al)) {
        free(al);
        al = NULL;
    }
    runner_store_close(s);
    if (!al)
        return NULL;
    for (size_t i = *shown; i < n; i++) {
        fprintf(stderr, "scaletune run: ALERT %s", al[i].kind);
        if (al[i].step >= 0)
            fprintf(stderr, " at step %lld", (long long)al[i].step);
        fprintf(stderr, ": %s\n", al[i].message);
    }
    memmove(al, al + *shown, (n - *shown) * sizeof(*al));
    *n_new = n - *shown;
    *shown = n;
    return al;
}

/* Silent data corruption makes the node suspect: a failed health check of the node (the
 * trainer rolled back already); a node quarantined by it stops the run. */
static int suspect_node(run_args *a, const char *sweep, const runner_alert *sdc)
{
    runner_health_result h = {0, 1, "sdc replay", 1, ""};
    snprintf(h.why, sizeof(h.why), "step %lld: %s", (long long)sdc->step, sdc->message);
    runner_store *s = NULL;
    size_t nf = 0;
    int q = 0;
    char em[ST_ERRMSG_MAX];
    unsigned after = a->quarantine_after;
    if (runner_store_open(a->db, &s, em) ||
        runner_store_health_record(s, sweep, a->node, &h, after, &nf, &q)) {
        cli_error(NULL, "recording silent data corruption: %s", s ? runner_store_errmsg(s) : em);
        runner_store_close(s);
        return 1;
    }
    runner_store_close(s);
    fprintf(stderr, "scaletune run: node %s is suspect (%zu failure%s)%s\n", a->node, nf,
            nf == 1 ? "" : "s", q ? ": quarantined, the run stops" : "");
    if (q) {
        a->unhealthy = 1;
        stop_flag = 1;
    }
    return 0;
}

/* The watch, and a straggler's restart, between controller steps. */
static int watch_step(run_args *a, runner *r, runner_watch *w, size_t *shown)
{
    runner_watch_state ws;
    if (runner_watch_poll(w, &ws)) {
        cli_error(NULL, "watch: %s", runner_watch_errmsg(w));
        return 1;
    }
    size_t n_al = 0;
    runner_alert *al =
        ws.n_new ? print_alerts(a->db, runner_get_config(r)->name, shown, &n_al) : NULL;
    /* every silent data corruption is a failure of the node, several in one poll included */
    int bad = 0;
    for (size_t i = 0; i < n_al && !bad && !a->unhealthy; i++)
        if (!strcmp(al[i].kind, "sdc"))
            bad = suspect_node(a, runner_get_config(r)->name, &al[i]);
    free(al);
    if (bad)
        return 1;
    if (!ws.straggling || !a->restart_on_straggler)
        return 0;
    /* the straggling attempt only: once it has ended, the next one is not touched */
    st_status rc = runner_restart_run(r, ws.run, ws.attempt);
    if (rc == ST_OK && !a->quiet)
        fprintf(stderr,
                "scaletune run: restarting run %llu (attempt %u straggles) from its "
                "checkpoint\n",
                (unsigned long long)ws.run, ws.attempt);
    if (rc && rc != ST_ENOTFOUND && rc != ST_ESTATE) {
        cli_error(NULL, "restarting the straggler: %s", runner_errmsg(r));
        return 1;
    }
    return 0;
}

/* Steps the controller to its end, the watch every quarter second. */
static int drive(run_args *a, runner *r, runner_watch *w)
{
    size_t shown = 0;
    runner_store *s = NULL;
    size_t n = 0;
    if (!runner_store_open(a->db, &s, NULL))
        runner_store_alerts(s, runner_get_config(r)->name, 0, &n, NULL);
    runner_store_close(s);
    shown = n; /* alerts of an earlier controller were printed then */
    const double poll = 0.02, every = 0.25;
    double since = every;
    for (;;) {
        int done = 0;
        st_status rc = runner_step(r, &done);
        if (rc) {
            cli_error("'scaletune run' with the same file goes on from the store", "%s",
                      runner_errmsg(r));
            return 1;
        }
        if (a->changed && health_after_failure(a, r))
            return 1;
        if ((since += poll) >= every || done) {
            since = 0;
            if (watch_step(a, r, w, &shown))
                return 1;
        }
        if (done)
            return 0;
        sleep_s(poll);
    }
}

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static void print_summary(const run_args *a, const runner_large_summary *m)
{
    if (a->json) {
        json_t *o = json_object();
        json_object_set_new(o, "run", json_integer((json_int_t)m->run));
        json_object_set_new(o, "status", json_string(runner_run_status_name(m->status)));
        json_object_set_new(o, "failure", json_string(runner_failure_name(m->failure)));
        json_object_set_new(o, "attempts", json_integer((json_int_t)m->n_attempts));
        json_object_set_new(o, "restarts", json_integer((json_int_t)m->n_restarts));
        json_object_set_new(o, "lost_seconds", json_real(m->lost_seconds));
        json_object_set_new(o, "lost_work_seconds", json_real(m->lost_work_seconds));
        json_object_set_new(o, "downtime_seconds", json_real(m->downtime_seconds));
        json_object_set_new(o, "lost_steps", json_integer((json_int_t)m->lost_steps));
        json_object_set_new(o, "last_step", json_integer((json_int_t)m->last_step));
        json_object_set_new(o, "objective", num_or_null(m->final_objective));
        json_object_set_new(o, "alerts", json_integer((json_int_t)m->n_alerts));
        char *t = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
        if (t)
            puts(t);
        free(t);
        json_decref(o);
        return;
    }
    printf("run        %llu: %s", (unsigned long long)m->run, runner_run_status_name(m->status));
    if (m->failure != RUNNER_FAIL_NONE)
        printf(" (%s)", runner_failure_name(m->failure));
    if (m->has_final)
        printf(", objective %.9g", m->final_objective);
    printf("\nrestarts   %zu (%zu attempts)\n", m->n_restarts, m->n_attempts);
    printf("lost       %.3f s (%.3f s of work done again, %.3f s down), %lld steps done again\n",
           m->lost_seconds, m->lost_work_seconds, m->downtime_seconds, (long long)m->lost_steps);
    printf("alerts     %zu ('scaletune sweep status' lists them)\n", m->n_alerts);
}

/* The exit status: 0 succeeded (or stopped by the user), 3 a hyperparameter failure, 1 else. */
static int finish(const run_args *a, const char *name, int finished)
{
    runner_store *s = NULL;
    char em[ST_ERRMSG_MAX];
    runner_large_summary m;
    if (runner_store_open(a->db, &s, em) || runner_store_large_run(s, name, &m)) {
        cli_error(NULL, "%s", s ? runner_store_errmsg(s) : em);
        runner_store_close(s);
        return 1;
    }
    runner_store_close(s);
    print_summary(a, &m);
    if (!finished) {
        fprintf(stderr, "scaletune: stopped; 'scaletune run' with the same file goes on\n");
        return a->unhealthy;
    }
    if (m.status == RUNNER_RUN_SUCCEEDED)
        return 0;
    if (runner_failure_is_hyperparameter(m.failure)) {
        cli_error("a hyperparameter failure is not restarted: the settings need a change "
                  "(scaletune extrapolate's interval, a lower lr)",
                  "the large run failed: %s", runner_failure_name(m.failure));
        return 3;
    }
    cli_error("each attempt's stderr.log under the log directory says why",
              "the large run ended %s (%s) after %zu restarts", runner_run_status_name(m.status),
              runner_failure_name(m.failure), m.n_restarts);
    return 1;
}

int cmd_run(int argc, char **argv)
{
    run_args a;
    int prc = parse(argc, argv, &a);
    if (prc)
        return prc < 0 ? 0 : prc;
    if (a.expect_file && read_expect(a.expect_file, &a.w))
        return 1;
    runner_options o = runner_options_default();
    o.db_path = a.db;
    o.log_dir = a.log_dir;
    o.stop_flag = &stop_flag;
    o.progress = on_progress;
    o.progress_data = &a;
    run_node_name(a.node_opt, a.node, sizeof(a.node));
    o.node = a.node; /* the attempts' host: the node of the health checks and quarantine */
    char sv[4096];
    o.supervisor = cli_supervisor(sv, sizeof(sv));
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    runner *r = NULL;
    char name[256], em[ST_ERRMSG_MAX];
    if (start(&a, &o, &r, name, sizeof(name)))
        return 1;
    merge_options(&a, runner_get_config(r));
    /* this node's checks before the run starts here: refused when quarantined or failing */
    int q = 0;
    a.n_seen = failed_so_far(a.db, name);
    if (run_quarantined(a.db, name, a.node) ||
        run_health(a.db, a.log_dir, a.node, runner_get_config(r), "before the start", &q)) {
        runner_destroy(r);
        return 1;
    }
    runner_watch *w = NULL;
    if (runner_watch_create(a.db, name, &a.w, &w, em)) {
        cli_error(NULL, "%s", em);
        runner_destroy(r);
        return 1;
    }
    int rc = drive(&a, r, w);
    int fin = runner_finished(r);
    runner_watch_destroy(w);
    runner_destroy(r);
    return rc ? rc : finish(&a, name, fin);
}
