/*
 * classify.c — what an attempt that exited 0 amounts to, from its final record: a success, a
 * hyperparameter failure (non-finite objective, a broken constraint), over the cost cap, or a
 * trainer that does not speak the protocol (no final record; a malformed one, or one without
 * the cost metric: configuration errors, never retried). Split from
 * controller.c's settle(), which classifies exits, signals and kills itself and records the
 * outcome; nothing here touches the store.
 */
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
void ctl_over_budget_why(const runner *r, const active *a, double cost, const char *when, char *why,
                         size_t cap)
{
    snprintf(why, cap,
             "cost %s %.4g, above the cap %.4g; predicted %.4g, the optimizer's bound "
             "%.4g (%s phase)",
             when, cost, r->cfg->max_cost_per_run, a->predicted_cost, a->bound,
             phase_name(a->phase));
}

runner_failure ctl_classify_final(const runner *r, const active *a, double *objective, double *cost,
                                  char *why, size_t cap)
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
        ctl_over_budget_why(r, a, *cost, "finished at", why, cap);
        return RUNNER_FAIL_OVER_BUDGET;
    }
    if (runner_constraints_broken(r->cfg, fline, why, cap))
        return RUNNER_FAIL_CONSTRAINT; /* observed as failed, objective kept */
    return RUNNER_FAIL_NONE;
}
