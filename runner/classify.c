/*
 * classify.c — why a finished attempt ended, as a failure kind (runner.h) with a one-line why:
 * a kill of ours, the scheduler's verdict, a lost job, divergence or a reserved exit status
 * (reserved_exits[]), a signal, another exit status, and for a clean exit its final record: a
 * success, a hyperparameter failure (non-finite objective, a broken constraint), over the cost
 * cap, or a trainer that does not speak the protocol (no final record; a malformed one, or one
 * without the cost metric: configuration errors, never retried). controller.c's settle() maps
 * the kind to what happens to the run (its outcome table) and records it; nothing here touches
 * the store.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runner/controller_int.h"

int ctl_cost_is_wall(const runner *r)
{
    return !strcmp(r->cfg->cost_metric, "wall_seconds");
}

static const char *phase_name(int phase)
{
    switch (phase) {
    case CARBS_PHASE_RANDOM:
        return "random";
    case CARBS_PHASE_RESAMPLE:
        return "resample";
    case CARBS_PHASE_BAYES:
        return "bayes";
    case CARBS_PHASE_FALLBACK:
        return "fallback";
    }
    return "unknown";
}

/* Why a run is over budget, for its event and progress line: its cost against the cap and
 * what was predicted at suggestion (the cost expression, or the optimizer's mean). */
static void over_budget_why(const runner *r, const active *a, double cost, const char *when,
                            char *why, size_t cap)
{
    snprintf(why, cap,
             "cost %s %.4g, above the cap %.4g; predicted %.4g, the optimizer's bound "
             "%.4g (%s phase)",
             when, cost, r->cfg->max_cost_per_run, a->predicted_cost, a->bound,
             phase_name(a->phase));
}

/* Exit statuses a trainer reserves for hyperparameter failures (runner.h): classified as such
 * even without a record saying so. Any other non-zero status is an infrastructure failure. */
static const struct {
    int exit_code;
    runner_failure kind;
} reserved_exits[] = {
    {RUNNER_EXIT_DIVERGED, RUNNER_FAIL_DIVERGED},
    {RUNNER_EXIT_OOM, RUNNER_FAIL_OOM},
};

/* A clean exit: the final record decides (objective, reported cost, cap, constraints). cost:
 * in, the wall seconds (wall-clock cost) or the largest reported cost; out, the run's cost. */
static runner_failure classify_final(const runner *r, const active *a, double *objective,
                                     double *cost, char *why, size_t cap)
{
    runner_metrics_line fl;
    double c = NAN;
    const char *fline = a->final_line;
    size_t flen = fline ? strlen(fline) : 0;
    int wall = ctl_cost_is_wall(r);
    int parsed = fline && runner_metrics_parse(fline, flen, &fl) == ST_OK;
    int ok = parsed && runner_metrics_get(&fl, r->cfg->objective, objective);
    int has_cost = parsed && !wall && runner_metrics_get(&fl, r->cfg->cost_metric, &c);
    if (!ok && parsed && runner_metrics_has_field(fline, flen, r->cfg->objective)) {
        /* there, and not a number: the trainer's error, the same on every retry */
        snprintf(why, cap, "'%s' is not a number in the final record: %.100s%s", r->cfg->objective,
                 fline, flen > 100 ? "..." : "");
        return RUNNER_FAIL_BAD_FINAL;
    }
    if (!ok) {
        snprintf(why, cap, "exit 0 without a final record holding '%s'", r->cfg->objective);
        return RUNNER_FAIL_NO_FINAL;
    }
    if (!isfinite(*objective)) {
        snprintf(why, cap, "non-finite objective");
        return RUNNER_FAIL_DIVERGED;
    }
    if (!wall && (has_cost || runner_metrics_has_field(fline, flen, r->cfg->cost_metric)) &&
        !(has_cost && isfinite(c) && c > 0)) {
        snprintf(why, cap, "'%s' is not a positive number in the final record: %.100s%s",
                 r->cfg->cost_metric, fline, flen > 100 ? "..." : "");
        return RUNNER_FAIL_BAD_FINAL;
    }
    if (!wall && !has_cost) {
        /* a final record without the cost metric: the trainer says the same on every retry */
        snprintf(why, cap, "the final record has no '%s' (the sweep's cost metric): %.100s%s",
                 r->cfg->cost_metric, fline, flen > 100 ? "..." : "");
        return RUNNER_FAIL_BAD_FINAL;
    }
    if (!wall)
        *cost = c;
    if (*cost > r->cfg->max_cost_per_run) {
        over_budget_why(r, a, *cost, "finished at", why, cap);
        return RUNNER_FAIL_OVER_BUDGET;
    }
    if (runner_constraints_broken(r->cfg, fline, why, cap))
        return RUNNER_FAIL_CONSTRAINT; /* observed as failed, objective kept */
    return RUNNER_FAIL_NONE;
}

runner_failure ctl_classify(const runner *r, const active *a, const runner_job *job,
                            double *objective, double *cost, char *why, size_t cap)
{
    if (a->kill_reason != RUNNER_FAIL_NONE) {
        if (a->kill_reason == RUNNER_FAIL_LAUNCH) /* the backend's message */
            snprintf(why, cap, "%s", job->reason);
        if (a->kill_reason == RUNNER_FAIL_OVER_BUDGET)
            over_budget_why(r, a, *cost, "killed at", why, cap);
        return a->kill_reason;
    }
    if (job->failure != RUNNER_FAIL_NONE || job->state == RUNNER_JOB_LOST) {
        snprintf(why, cap, "%s", job->reason); /* the scheduler's verdict (Slurm states) */
        return job->failure != RUNNER_FAIL_NONE ? job->failure : RUNNER_FAIL_LOST;
    }
    if (a->diverged)
        return RUNNER_FAIL_DIVERGED;
    if (job->state == RUNNER_JOB_EXITED)
        for (size_t i = 0; i < sizeof(reserved_exits) / sizeof(reserved_exits[0]); i++)
            if (job->exit_code == reserved_exits[i].exit_code)
                return reserved_exits[i].kind;
    if (job->state == RUNNER_JOB_SIGNALED) {
        snprintf(why, cap, "signal %d", job->signal);
        return RUNNER_FAIL_SIGNAL;
    }
    assert(job->state == RUNNER_JOB_EXITED);
    if (job->exit_code != 0) {
        snprintf(why, cap, "exit %d", job->exit_code);
        return RUNNER_FAIL_EXIT;
    }
    return classify_final(r, a, objective, cost, why, cap);
}
