/*
 * sweep_watch.c — `scaletune sweep watch`: follows a sweep from another terminal (or an agent's
 * loop) by reading its store every --interval seconds (default 2): one line each time
 * something changed, with runs/min and the ETA over the time watched, until nothing can change
 * any more: no live controller and no run running (asked runs of an ask/tell sweep count as
 * running). Exits 0 when the sweep finished its budget, 1 when it stopped with runs left (the
 * controller stopped or died: 'sweep resume' goes on), 1 on a store error.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/sweep_int.h"

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t ended_runs(const runner_status *st)
{
    return st->n_by_status[RUNNER_RUN_SUCCEEDED] + st->n_by_status[RUNNER_RUN_FAILED] +
           st->n_by_status[RUNNER_RUN_INFRA_FAILED];
}

/* " | 12.3 runs/min, ETA 4m10s" over the watched period; "" until two runs ended in it. */
static void rate_eta(const runner_status *st, size_t ended0, double t0, char *out, size_t cap)
{
    size_t ended = ended_runs(st), n = ended > ended0 ? ended - ended0 : 0;
    double dt = mono() - t0;
    out[0] = '\0';
    if (n < 2 || !(dt > 0))
        return;
    int k = snprintf(out, cap, " | %.3g runs/min", 60.0 * (double)n / dt);
    if (k <= 0 || (size_t)k >= cap || !st->budget_runs || ended >= st->budget_runs)
        return;
    long s = lround((double)(st->budget_runs - ended) * dt / (double)n);
    snprintf(out + k, cap - (size_t)k, ", ETA %ldm%02lds", s / 60, s % 60);
}

static void print_line(const runner_status *st, const char *rate)
{
    char clock[16], best[48] = "-", budget[32] = "";
    time_t now = time(NULL);
    strftime(clock, sizeof(clock), "%H:%M:%S", localtime(&now));
    if (st->has_best)
        snprintf(best, sizeof(best), "%.6g", st->best_objective);
    if (st->budget_runs)
        snprintf(budget, sizeof(budget), "/%zu", st->budget_runs);
    printf("%s %s: runs %zu%s: %zu running, %zu pending, %zu ok, %zu failed, %zu infra, %zu "
           "stopped | best %s | cost %.4g | controller %s%s\n",
           clock, st->name, st->n_runs, budget, st->n_by_status[RUNNER_RUN_RUNNING],
           st->n_by_status[RUNNER_RUN_PENDING], st->n_by_status[RUNNER_RUN_SUCCEEDED],
           st->n_by_status[RUNNER_RUN_FAILED], st->n_by_status[RUNNER_RUN_INFRA_FAILED],
           st->n_by_status[RUNNER_RUN_STOPPED], best, st->spent_cost,
           st->controller_alive ? "running" : "not running", rate);
    fflush(stdout);
}

/* What changes the printed line (the clock aside). */
static int same(const runner_status *a, const runner_status *b)
{
    return a->n_runs == b->n_runs &&
           !memcmp(a->n_by_status, b->n_by_status, sizeof(a->n_by_status)) &&
           a->controller_alive == b->controller_alive && a->has_best == b->has_best &&
           (!a->has_best || a->best_objective == b->best_objective);
}

int sweep_do_watch(const sweep_args *a)
{
    double every = a->interval > 0 ? a->interval : 2.0;
    runner_status last;
    memset(&last, 0, sizeof(last));
    int first = 1;
    size_t ended0 = 0;
    double t0 = mono();
    for (;;) {
        runner_store *s = sweep_open_store(a);
        if (!s)
            return 1;
        runner_status st;
        if (runner_store_status(s, a->sweep, &st))
            return sweep_store_error(s);
        st.n_by_status[RUNNER_RUN_RUNNING] = sweep_running_now(s, &st, NULL);
        runner_store_close(s);
        if (first)
            ended0 = ended_runs(&st);
        char rate[64];
        rate_eta(&st, ended0, t0, rate, sizeof(rate));
        if (first || !same(&st, &last))
            print_line(&st, rate);
        first = 0;
        last = st;
        if (!st.controller_alive && st.n_by_status[RUNNER_RUN_RUNNING] == 0) {
            int done = st.budget_runs && st.n_runs >= st.budget_runs &&
                       st.n_by_status[RUNNER_RUN_PENDING] == 0 &&
                       st.n_by_status[RUNNER_RUN_STOPPED] == 0 &&
                       st.n_branch_by_status[RUNNER_RUN_PENDING] == 0 &&
                       st.n_branch_by_status[RUNNER_RUN_STOPPED] == 0;
            if (done) {
                printf("sweep '%s' finished\n", st.name);
                return 0;
            }
            cli_error("'scaletune sweep resume' goes on from the store",
                      "sweep '%s' is not running: no live controller and no run running (%zu of "
                      "%zu runs ended)",
                      st.name, ended_runs(&st), st.budget_runs ? st.budget_runs : st.n_runs);
            return 1;
        }
        struct timespec ts = {(time_t)every, (long)((every - floor(every)) * 1e9)};
        nanosleep(&ts, NULL);
    }
}
