/*
 * cmd_sweep_manage.c — `scaletune sweep status` (text and --json), `list`, `delete` and
 * `rename`, over the public runner.h API only: the status and the typed read of a sweep (for
 * the best run's parameters), never the store's tables. Controller liveness comes from the
 * lease's heartbeat and, on the controller's host, from its process.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/sweep_int.h"
#include "runner/largerun.h"

runner_store *sweep_open_store(const sweep_args *a)
{
    char em[ST_ERRMSG_MAX];
    runner_store *s = NULL;
    st_status rc = runner_store_open(a->db, &s, em);
    if (rc) {
        cli_error(rc == ST_ENOTFOUND ? "name the store with --db FILE ('scaletune sweep launch' "
                                       "makes one)"
                                     : NULL,
                  "%s", em);
        return NULL;
    }
    return s;
}

int sweep_store_error(runner_store *s)
{
    char msg[ST_ERRMSG_MAX];
    snprintf(msg, sizeof(msg), "%s", runner_store_errmsg(s));
    const char *names = NULL;
    char hint[1024] = "";
    if (strstr(msg, "--sweep") && runner_store_list(s, &names) == ST_OK && names) {
        int n = snprintf(hint, sizeof(hint), "add --sweep NAME; the store holds:");
        for (const char *p = names; *p && n > 0 && (size_t)n < sizeof(hint) - 4;) {
            const char *e = strchr(p, '\n');
            size_t l = e ? (size_t)(e - p) : strlen(p);
            n += snprintf(hint + n, sizeof(hint) - (size_t)n, " %.*s", (int)l, p);
            p += l + (e ? 1 : 0);
        }
    }
    cli_error(hint[0] ? hint : NULL, "%s", msg);
    runner_store_close(s);
    return 1;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds as "42 s", "3 min 5 s", "2 h 4 min". */
static void fmt_duration(double sec, char *buf, size_t cap)
{
    long s = sec > 0 ? (long)(sec + 0.5) : 0;
    if (s < 60)
        snprintf(buf, cap, "%ld s", s);
    else if (s < 3600)
        snprintf(buf, cap, "%ld min %ld s", s / 60, s % 60);
    else
        snprintf(buf, cap, "%ld h %ld min", s / 3600, (s % 3600) / 60);
}

/* Wall time the sweep has run: to now while a controller is live, else to its last sign of
 * life (the last heartbeat or the last run's end). */
static double elapsed_of(const runner_status *st, double now)
{
    double end = st->controller_alive ? now : st->created;
    if (!st->controller_alive && isfinite(st->heartbeat) && st->heartbeat > end)
        end = st->heartbeat;
    if (!st->controller_alive && isfinite(st->last_ended) && st->last_ended > end)
        end = st->last_ended;
    return isfinite(st->created) ? end - st->created : NAN;
}

static void controller_text(const runner_status *st, double now, char *buf, size_t cap)
{
    char ago[48];
    fmt_duration(now - st->heartbeat, ago, sizeof(ago));
    if (st->controller_alive)
        snprintf(buf, cap, "running (%s, heartbeat %s ago)", st->controller, ago);
    else if (st->controller[0])
        snprintf(buf, cap, "not running (last heartbeat %s ago; %s is gone)", ago, st->controller);
    else
        snprintf(buf, cap, "not running");
}

/* The best run of the typed read, or NULL. */
static const runner_sweep_run *best_run(const runner_sweep *w, const runner_status *st)
{
    for (size_t i = 0; w && st->has_best && i < w->n_runs; i++)
        if (w->runs[i].id == st->best_run)
            return &w->runs[i];
    return NULL;
}

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *params_json(const runner_config *cfg, const double *x)
{
    json_t *o = json_object();
    for (size_t i = 0; i < cfg->n_params; i++) {
        const runner_param_spec *p = &cfg->params[i];
        if (p->is_fixed && !isfinite(x[i]))
            json_object_set_new(o, p->p.name, json_string(p->fixed_text));
        else if (runner_param_choice(p, x[i]))
            json_object_set_new(o, p->p.name, json_string(runner_param_choice(p, x[i])));
        else
            json_object_set_new(o, p->p.name, num_or_null(x[i])); /* null: inactive */
    }
    return o;
}

/* Alerts of the large run's watch (scaletune run; docs/large-run.md): the last 10 in text. */
static void print_alerts(runner_store *s, const runner_status *st)
{
    runner_alert al[256];
    size_t n = 0;
    if (runner_store_alerts(s, st->name, 256, &n, al) || n == 0)
        return;
    printf("alerts     %zu\n", n);
    size_t m = n < 256 ? n : 256;
    for (size_t i = m > 10 ? m - 10 : 0; i < m; i++) {
        printf("  run %llu %s", (unsigned long long)al[i].run, al[i].kind);
        if (al[i].step >= 0)
            printf(" at step %lld", (long long)al[i].step);
        printf(": %s\n", al[i].message);
    }
}

/* Nodes quarantined by scaletune run's health checks, with why. */
static void print_quarantined(runner_store *s, const runner_status *st)
{
    runner_quarantine q[32];
    size_t n = 0;
    if (runner_store_quarantined(s, st->name, 32, &n, q) || n == 0)
        return;
    printf("quarantined %zu node%s\n", n, n == 1 ? "" : "s");
    for (size_t i = 0; i < n && i < 32; i++)
        printf("  %s: %s\n", q[i].node, q[i].why);
}

static json_t *quarantined_json(runner_store *s, const runner_status *st)
{
    runner_quarantine q[32];
    size_t n = 0;
    json_t *arr = json_array();
    if (runner_store_quarantined(s, st->name, 32, &n, q))
        return arr;
    for (size_t i = 0; i < n && i < 32; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "node", json_string(q[i].node));
        json_object_set_new(o, "t", json_real(q[i].t));
        json_object_set_new(o, "why", json_string(q[i].why));
        json_array_append_new(arr, o);
    }
    return arr;
}

/* Throughput per node (tokens/s of the step records, by the node each attempt ran on) and the
 * slow nodes: below large_run.slow_node_fraction of the median of all nodes. */
#define NODES_MAX 64
static void print_nodes(runner_store *s, const runner_status *st, const runner_sweep *w)
{
    runner_node_rate nr[NODES_MAX];
    size_t n = 0;
    double all = NAN;
    double frac = w->cfg->large.slow_node_fraction;
    if (runner_store_node_rates(s, st->name, frac, NODES_MAX, &n, nr, &all) || n == 0)
        return;
    printf("nodes      %zu, median %.4g tokens/s\n", n, all);
    for (size_t i = 0; i < n && i < NODES_MAX; i++) {
        printf("  %s: %.4g tokens/s (%zu attempt%s)", nr[i].node, nr[i].tokens_per_s,
               nr[i].n_attempts, nr[i].n_attempts == 1 ? "" : "s");
        if (nr[i].slow)
            printf(" slow: below %g x the median", frac);
        printf("\n");
    }
}

static void nodes_json(json_t *o, runner_store *s, const runner_status *st, const runner_sweep *w)
{
    runner_node_rate nr[NODES_MAX];
    size_t n = 0;
    double all = NAN;
    json_t *arr = json_array(), *slow = json_array();
    if (runner_store_node_rates(s, st->name, w->cfg->large.slow_node_fraction, NODES_MAX, &n, nr,
                                &all))
        n = 0;
    for (size_t i = 0; i < n && i < NODES_MAX; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "node", json_string(nr[i].node));
        json_object_set_new(e, "tokens_per_s", num_or_null(nr[i].tokens_per_s));
        json_object_set_new(e, "attempts", json_integer((json_int_t)nr[i].n_attempts));
        json_object_set_new(e, "slow", json_boolean(nr[i].slow));
        json_array_append_new(arr, e);
        if (nr[i].slow)
            json_array_append_new(slow, json_string(nr[i].node));
    }
    json_object_set_new(o, "nodes", arr);
    json_object_set_new(o, "nodes_median_tokens_per_s", num_or_null(all));
    json_object_set_new(o, "slow_nodes", slow);
}

static json_t *alerts_json(runner_store *s, const runner_status *st)
{
    runner_alert al[256];
    size_t n = 0;
    json_t *arr = json_array();
    if (runner_store_alerts(s, st->name, 256, &n, al))
        return arr;
    for (size_t i = 0; i < n && i < 256; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "run", json_integer((json_int_t)al[i].run));
        json_object_set_new(o, "kind", json_string(al[i].kind));
        json_object_set_new(o, "step", al[i].step >= 0 ? json_integer(al[i].step) : json_null());
        json_object_set_new(o, "t", json_real(al[i].t));
        json_object_set_new(o, "message", json_string(al[i].message));
        json_array_append_new(arr, o);
    }
    return arr;
}

/* The rate, ETA, running runs' step and loss, and expired asked runs (cli/sweep_live.c). */
static void live_json(json_t *o, json_t *runs, const sweep_live *l)
{
    json_object_set_new(runs, "running", json_integer((json_int_t)l->n_running));
    json_object_set_new(runs, "expired", json_integer((json_int_t)l->n_expired));
    json_object_set_new(o, "rate_runs_per_min", num_or_null(l->rate_per_min));
    json_object_set_new(o, "eta_seconds", num_or_null(l->eta_seconds));
    json_t *ex = json_array(), *run = json_array();
    for (size_t i = 0; i < l->n_expired && i < SWEEP_LIVE_MAX; i++)
        json_array_append_new(ex, json_integer((json_int_t)l->expired[i]));
    for (size_t i = 0; i < l->n_runs; i++) {
        const sweep_live_run *r = &l->runs[i];
        json_t *j = json_object();
        json_object_set_new(j, "suggestion_id", json_integer((json_int_t)r->id));
        json_object_set_new(j, "attempt", json_integer(r->attempt));
        json_object_set_new(j, "seconds", num_or_null(r->seconds));
        json_object_set_new(j, "step",
                            isfinite(r->step) ? json_integer((json_int_t)r->step) : json_null());
        json_object_set_new(j, "loss", num_or_null(r->loss));
        json_object_set_new(j, "metric", json_string(r->metric));
        json_array_append_new(run, j);
    }
    json_object_set_new(o, "expired", ex);
    json_object_set_new(o, "running", run);
}

static int status_json(runner_store *s, const sweep_args *a, const runner_status *st,
                       const runner_sweep *w, const sweep_live *l, double now)
{
    static const char *const keys[6] = {"pending", "running",      "succeeded",
                                        "failed",  "infra_failed", "stopped"};
    json_t *o = json_object(), *runs = json_object(), *c = json_object();
    json_object_set_new(o, "sweep", json_string(st->name));
    json_object_set_new(runs, "total", json_integer((json_int_t)st->n_runs));
    for (int k = 0; k < 6; k++)
        json_object_set_new(runs, keys[k], json_integer((json_int_t)st->n_by_status[k]));
    /* of infra_failed: a malformed final record, a configuration error of the trainer */
    json_object_set_new(runs, "bad_final", json_integer((json_int_t)st->n_bad_final));
    json_object_set_new(runs, "budget",
                        st->budget_runs ? json_integer((json_int_t)st->budget_runs) : json_null());
    live_json(o, runs, l);
    json_object_set_new(o, "runs", runs);
    json_t *br = json_object(); /* cooldown branches (the branches: block), not runs */
    json_object_set_new(br, "total", json_integer((json_int_t)st->n_branches));
    for (int k = 0; k < 6; k++)
        json_object_set_new(br, keys[k], json_integer((json_int_t)st->n_branch_by_status[k]));
    json_object_set_new(o, "branches", br);
    json_object_set_new(o, "attempts", json_integer((json_int_t)st->n_attempts));
    json_object_set_new(o, "retried", json_integer((json_int_t)st->n_retried));
    json_object_set_new(o, "garbage_lines", json_integer((json_int_t)st->n_garbage));
    json_object_set_new(o, "spent_cost", json_real(st->spent_cost));
    json_object_set_new(o, "budget_cost", num_or_null(st->budget_cost));
    json_object_set_new(o, "max_cost_per_run", num_or_null(st->max_cost_per_run));
    json_object_set_new(o, "goal", json_string(st->maximize ? "maximize" : "minimize"));
    json_object_set_new(o, "created", num_or_null(st->created));
    json_object_set_new(o, "elapsed_seconds", num_or_null(elapsed_of(st, now)));
    json_object_set_new(c, "running", json_boolean(st->controller_alive));
    json_object_set_new(c, "owner", st->controller[0] ? json_string(st->controller) : json_null());
    json_object_set_new(c, "last_heartbeat", num_or_null(st->heartbeat));
    json_object_set_new(c, "heartbeat_age_seconds",
                        isfinite(st->heartbeat) ? json_real(now - st->heartbeat) : json_null());
    json_object_set_new(o, "controller", c);
    json_object_set_new(o, "stop_requested", json_boolean(st->stop_requested));
    const runner_sweep_run *b = best_run(w, st);
    if (b) {
        json_t *bj = json_object();
        json_object_set_new(bj, "suggestion_id", json_integer((json_int_t)b->id));
        json_object_set_new(bj, "objective", num_or_null(b->objective));
        json_object_set_new(bj, "cost", num_or_null(b->cost));
        json_object_set_new(bj, "params", params_json(w->cfg, b->x));
        json_object_set_new(o, "best", bj);
    } else {
        json_object_set_new(o, "best", json_null());
    }
    size_t n = 0;
    json_t *front = json_array();
    if (runner_store_pareto(s, a->sweep, 0, &n, NULL, NULL, NULL) == ST_OK && n) {
        uint64_t *ids = malloc(n * sizeof(*ids));
        double *co = malloc(n * sizeof(double)), *ob = malloc(n * sizeof(double));
        if (ids && co && ob && !runner_store_pareto(s, a->sweep, n, &n, ids, co, ob))
            for (size_t i = 0; i < n; i++) {
                json_t *p = json_object();
                json_object_set_new(p, "suggestion_id", json_integer((json_int_t)ids[i]));
                json_object_set_new(p, "cost", json_real(co[i]));
                json_object_set_new(p, "objective", json_real(ob[i]));
                json_array_append_new(front, p);
            }
        free(ids);
        free(co);
        free(ob);
    }
    json_object_set_new(o, "pareto", front);
    json_object_set_new(o, "alerts", alerts_json(s, st));
    json_object_set_new(o, "quarantined", quarantined_json(s, st));
    nodes_json(o, s, st, w);
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    json_decref(o);
    if (!text) {
        cli_error(NULL, "formatting the status failed");
        return 1;
    }
    puts(text);
    free(text);
    return 0;
}

static void print_best(const runner_status *st, const runner_sweep *w)
{
    if (!st->has_best) {
        printf("best       none yet\n");
        return;
    }
    printf("best       run %llu: objective %.10g at cost %.6g (%s)\n",
           (unsigned long long)st->best_run, st->best_objective, st->best_cost,
           st->maximize ? "maximize" : "minimize");
    const runner_sweep_run *b = best_run(w, st);
    if (!b)
        return;
    printf("  params  ");
    for (size_t i = 0; i < w->cfg->n_params; i++) {
        const runner_param_spec *p = &w->cfg->params[i];
        if (p->is_fixed && !isfinite(b->x[i]))
            printf(" %s=%s", p->p.name, p->fixed_text);
        else if (runner_param_choice(p, b->x[i]))
            printf(" %s=%s", p->p.name, runner_param_choice(p, b->x[i]));
        else if (isnan(b->x[i]) && p->p.active_if)
            printf(" %s=(inactive)", p->p.name);
        else
            printf(" %s=%.6g", p->p.name, b->x[i]);
    }
    printf("\n");
}

static void print_pareto(runner_store *s, const sweep_args *a)
{
    size_t n = 0;
    if (runner_store_pareto(s, a->sweep, 0, &n, NULL, NULL, NULL) || !n)
        return;
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

/* Asked runs whose --ttl passed without a tell: the next ask hands them out again. */
static void print_expired(const sweep_live *l)
{
    if (l->n_expired == 0)
        return;
    size_t n = l->n_expired;
    printf("expired: %zu asked run%s without a tell in time (the next ask hands %s out again):", n,
           n == 1 ? "" : "s", n == 1 ? "it" : "them");
    for (size_t i = 0; i < n && i < SWEEP_LIVE_MAX; i++)
        printf(" %llu", (unsigned long long)l->expired[i]);
    printf("%s\n", n > SWEEP_LIVE_MAX ? " ..." : "");
}

/* "rate       3.2 runs/min (last 20 runs ended), ETA 4 min 10 s", then each running run's
 * last step and loss. */
static void print_live(const sweep_live *l)
{
    char eta[48];
    if (isfinite(l->rate_per_min)) {
        printf("rate       %.3g runs/min (the last runs that ended)", l->rate_per_min);
        if (isfinite(l->eta_seconds)) {
            fmt_duration(l->eta_seconds, eta, sizeof(eta));
            printf(", ETA %s", eta);
        }
        printf("\n");
    }
    for (size_t i = 0; i < l->n_runs; i++) {
        const sweep_live_run *r = &l->runs[i];
        char age[48] = "";
        if (isfinite(r->seconds))
            fmt_duration(r->seconds, age, sizeof(age));
        printf("%s run %llu (attempt %d, %s): ", i ? "          " : "running   ",
               (unsigned long long)r->id, r->attempt, age[0] ? age : "-");
        if (isfinite(r->step) && isfinite(r->loss))
            printf("step %.0f, %s %.6g\n", r->step, r->metric, r->loss);
        else if (isfinite(r->loss))
            printf("%s %.6g\n", r->metric, r->loss);
        else
            printf("no metrics yet\n");
    }
}

static void status_text(runner_store *s, const sweep_args *a, const runner_status *st,
                        const runner_sweep *w, const sweep_live *l, double now)
{
    char ctl[320], el[48];
    controller_text(st, now, ctl, sizeof(ctl));
    fmt_duration(elapsed_of(st, now), el, sizeof(el));
    printf("sweep      %s\n", st->name);
    printf("controller %s\n", ctl);
    printf("elapsed    %s\n", el);
    printf("runs       %zu", st->n_runs);
    if (st->budget_runs)
        printf(" of %zu", st->budget_runs);
    printf(": %zu succeeded, %zu failed, %zu infra_failed, %zu running, %zu pending, %zu "
           "stopped",
           st->n_by_status[RUNNER_RUN_SUCCEEDED], st->n_by_status[RUNNER_RUN_FAILED],
           st->n_by_status[RUNNER_RUN_INFRA_FAILED], l->n_running,
           st->n_by_status[RUNNER_RUN_PENDING], st->n_by_status[RUNNER_RUN_STOPPED]);
    if (l->n_expired)
        printf(", %zu expired", l->n_expired);
    printf("\n");
    if (st->n_bad_final)
        printf("           %zu of the infra_failed printed a malformed final record (a "
               "configuration error of the trainer): %s\n",
               st->n_bad_final, st->bad_final);
    if (st->n_branches)
        printf("branches   %zu cooldown branches: %zu succeeded, %zu failed, %zu infra_failed, "
               "%zu running, %zu pending\n",
               st->n_branches, st->n_branch_by_status[RUNNER_RUN_SUCCEEDED],
               st->n_branch_by_status[RUNNER_RUN_FAILED],
               st->n_branch_by_status[RUNNER_RUN_INFRA_FAILED],
               st->n_branch_by_status[RUNNER_RUN_RUNNING],
               st->n_branch_by_status[RUNNER_RUN_PENDING]);
    printf("attempts   %zu (%zu retries), %zu garbage lines\n", st->n_attempts, st->n_retried,
           st->n_garbage);
    printf("spend      %.6g", st->spent_cost);
    if (isfinite(st->budget_cost))
        printf(" of %.6g (%.1f%%)", st->budget_cost, 100 * st->spent_cost / st->budget_cost);
    if (isfinite(st->max_cost_per_run))
        printf(", at most %.6g per run", st->max_cost_per_run);
    printf("\n");
    print_live(l);
    print_best(st, w);
    print_pareto(s, a);
    print_expired(l);
    print_alerts(s, st);
    print_quarantined(s, st);
    print_nodes(s, st, w);
    if (st->stop_requested)
        printf("a stop was requested\n");
}

int sweep_do_status(const sweep_args *a)
{
    runner_store *s = sweep_open_store(a);
    if (!s)
        return 1;
    runner_status st;
    if (runner_store_check(s) || runner_store_status(s, a->sweep, &st))
        return sweep_store_error(s);
    runner_sweep *w = NULL;
    if (runner_store_read_sweep(s, st.name, &w))
        return sweep_store_error(s);
    double now = now_seconds();
    sweep_live l;
    if (sweep_live_read(s, &st, w, now, &l)) {
        runner_sweep_free(w);
        return sweep_store_error(s);
    }
    int rc = 0;
    if (a->json)
        rc = status_json(s, a, &st, w, &l, now);
    else
        status_text(s, a, &st, w, &l, now);
    runner_sweep_free(w);
    runner_store_close(s);
    return rc;
}

int sweep_do_list(const sweep_args *a)
{
    runner_store *s = sweep_open_store(a);
    if (!s)
        return 1;
    const char *names = NULL;
    if (runner_store_list(s, &names))
        return sweep_store_error(s);
    char *copy = strdup(names);
    if (!copy) {
        runner_store_close(s);
        return 1;
    }
    double now = now_seconds();
    if (!*copy && !a->json)
        printf("no sweeps in %s\n", a->db);
    else if (!a->json)
        printf("%-24s %6s %6s %6s %7s  %s\n", "sweep", "runs", "ok", "failed", "running",
               "controller");
    json_t *arr = json_array();
    int rc = 0;
    for (char *p = copy, *e; *p; p = e + 1) {
        e = strchr(p, '\n');
        *e = '\0';
        runner_status st;
        if (runner_store_status(s, p, &st)) {
            rc = sweep_store_error(s);
            s = NULL;
            break;
        }
        size_t failed = st.n_by_status[RUNNER_RUN_FAILED] + st.n_by_status[RUNNER_RUN_INFRA_FAILED];
        size_t n_exp = 0, running = sweep_running_now(s, &st, &n_exp);
        if (a->json) {
            json_t *o = json_object();
            json_object_set_new(o, "sweep", json_string(st.name));
            json_object_set_new(o, "runs", json_integer((json_int_t)st.n_runs));
            json_object_set_new(o, "succeeded",
                                json_integer((json_int_t)st.n_by_status[RUNNER_RUN_SUCCEEDED]));
            json_object_set_new(o, "failed", json_integer((json_int_t)failed));
            json_object_set_new(o, "running", json_integer((json_int_t)running));
            json_object_set_new(o, "expired", json_integer((json_int_t)n_exp));
            json_object_set_new(o, "controller_running", json_boolean(st.controller_alive));
            json_object_set_new(o, "created", num_or_null(st.created));
            json_array_append_new(arr, o);
        } else {
            char ctl[320];
            controller_text(&st, now, ctl, sizeof(ctl));
            printf("%-24s %6zu %6zu %6zu %7zu  %s\n", st.name, st.n_runs,
                   st.n_by_status[RUNNER_RUN_SUCCEEDED], failed, running, ctl);
        }
    }
    if (!rc && a->json) {
        char *t = json_dumps(arr, JSON_INDENT(2));
        if (t)
            puts(t);
        free(t);
    }
    json_decref(arr);
    free(copy);
    runner_store_close(s);
    return rc;
}

int sweep_do_delete(const sweep_args *a)
{
    const char *name = a->file ? a->file : a->sweep;
    if (!name || (a->file && a->sweep && strcmp(a->file, a->sweep))) {
        cli_error("scaletune sweep delete NAME [--db FILE]   ('sweep list' shows the names)",
                  "delete needs the sweep's exact name");
        return 2;
    }
    runner_store *s = sweep_open_store(a);
    if (!s)
        return 1;
    if (runner_store_delete(s, name))
        return sweep_store_error(s);
    runner_store_close(s);
    printf("deleted sweep '%s' from %s (attempt logs on disk were left in place)\n", name, a->db);
    return 0;
}

int sweep_do_rename(const sweep_args *a)
{
    if (!a->file || !a->file2) {
        cli_error("scaletune sweep rename OLD NEW [--db FILE]", "rename needs two names");
        return 2;
    }
    runner_store *s = sweep_open_store(a);
    if (!s)
        return 1;
    if (runner_store_rename(s, a->file, a->file2))
        return sweep_store_error(s);
    runner_store_close(s);
    printf("renamed sweep '%s' to '%s'\n", a->file, a->file2);
    return 0;
}

int sweep_do_enqueue(const sweep_args *a)
{
    const char *use = "scaletune sweep enqueue NAME=VALUE ... [--db FILE] [--sweep NAME]";
    if (a->file) {
        cli_error(use, "unexpected argument '%s' (give NAME=VALUE pairs)", a->file);
        return 2;
    }
    const char *names[SWEEP_KV_MAX], *values[SWEEP_KV_MAX];
    char buf[SWEEP_KV_MAX][128];
    for (size_t i = 0; i < a->n_kv; i++) {
        const char *eq = strchr(a->kv[i], '=');
        size_t l = (size_t)(eq - a->kv[i]);
        if (l == 0 || l >= sizeof(buf[i])) {
            cli_error(use, "'%s': expected NAME=VALUE", a->kv[i]);
            return 2;
        }
        memcpy(buf[i], a->kv[i], l);
        buf[i][l] = '\0';
        names[i] = buf[i];
        values[i] = eq + 1;
    }
    runner_store *s = sweep_open_store(a);
    if (!s)
        return 1;
    uint64_t id = 0;
    if (runner_store_enqueue_text(s, a->sweep, a->n_kv, names, values, &id))
        return sweep_store_error(s);
    runner_store_close(s);
    printf("enqueued run %llu\n", (unsigned long long)id);
    return 0;
}
