/*
 * schedule.c — a run's learning-rate schedule as its config record states it
 * (docs/metrics-protocol.md, runner/largerun.h): the record's fields read into a
 * runner_schedule, and the per-step learning rates rebuilt from it, so that the large run's watch
 * can fit the loss-curve law of Tissue et al. 2024 (fit/curve.h) under the run's own schedule.
 * Not a schedule the runner imposes: the trainer runs its own; this only describes it.
 * Depends on jansson.
 */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "runner/largerun.h"

static double num_or(const json_t *o, const char *key, double dflt)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

st_status runner_schedule_parse(const char *line, runner_schedule *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = RUNNER_SCHEDULE_UNKNOWN;
    out->steps = NAN;
    if (!line)
        return ST_EINVAL;
    json_t *j = json_loads(line, 0, NULL);
    const char *ev = json_string_value(json_object_get(j, "event"));
    if (!json_is_object(j) || !ev || strcmp(ev, "config")) {
        json_decref(j);
        return ST_EINVAL;
    }
    const char *kind = json_string_value(json_object_get(j, "schedule"));
    const char *shape = json_string_value(json_object_get(j, "decay_shape"));
    out->steps = num_or(j, "steps", NAN);
    out->lr = num_or(j, "lr", 1.0);
    out->warmup_steps = num_or(j, "warmup_steps", 0.0);
    out->min_lr_ratio = num_or(j, "min_lr_ratio", 0.0);
    out->decay_steps = num_or(j, "decay_steps", 0.0);
    out->decay_sqrt = shape && !strcmp(shape, "1-sqrt");
    if (kind && !strcmp(kind, "constant"))
        out->kind = RUNNER_SCHEDULE_CONSTANT;
    else if (kind && !strcmp(kind, "cosine"))
        out->kind = RUNNER_SCHEDULE_COSINE;
    else if (kind && !strcmp(kind, "wsd"))
        out->kind = RUNNER_SCHEDULE_WSD;
    /* a schedule the rebuild cannot follow is unknown, never guessed */
    int bad_shape = shape && strcmp(shape, "linear") && strcmp(shape, "1-sqrt");
    if (bad_shape || !(out->steps >= 1) || !isfinite(out->steps) || !(out->lr > 0) ||
        !isfinite(out->lr) || !(out->warmup_steps >= 0) || !(out->min_lr_ratio >= 0) ||
        !(out->min_lr_ratio <= 1) || !(out->decay_steps >= 0) || !isfinite(out->warmup_steps) ||
        !isfinite(out->decay_steps) || (out->kind == RUNNER_SCHEDULE_WSD && !shape))
        out->kind = RUNNER_SCHEDULE_UNKNOWN;
    json_decref(j);
    return ST_OK;
}

const char *runner_schedule_name(runner_schedule_kind k)
{
    switch (k) {
    case RUNNER_SCHEDULE_UNKNOWN:
        return "unknown";
    case RUNNER_SCHEDULE_CONSTANT:
        return "constant";
    case RUNNER_SCHEDULE_COSINE:
        return "cosine";
    case RUNNER_SCHEDULE_WSD:
        return "wsd";
    }
    return "unknown";
}

st_status runner_schedule_lr(const runner_schedule *s, size_t n_steps, double *lr)
{
    if (s->kind == RUNNER_SCHEDULE_UNKNOWN || !n_steps || !(s->steps >= 1))
        return ST_EINVAL;
    double S = floor(s->steps), W = floor(s->warmup_steps), r = s->min_lr_ratio;
    if (W > S)
        W = S;
    double D = floor(s->decay_steps), start = S - D < W ? W : S - D;
    for (size_t k = 0; k < n_steps; k++) {
        double i = (double)k, v = s->lr;
        if (i < W) {
            v = s->lr * (i + 1) / W; /* linear warmup, the peak at step W */
        } else if (s->kind == RUNNER_SCHEDULE_COSINE) {
            double span = S - W, p = span > 1 ? (i - W) / (span - 1) : 1;
            /* cosine annealing (Loshchilov & Hutter 2017, eq. 5) down to lr · min_lr_ratio */
            v = s->lr * (r + (1 - r) * 0.5 * (1 + cos(M_PI * (p > 1 ? 1 : p))));
        } else if (s->kind == RUNNER_SCHEDULE_WSD && D >= 1 && i >= start) {
            double p = (i - start + 1) / (S - start);
            p = p > 1 ? 1 : p;
            v = s->lr * (1 - (1 - r) * (s->decay_sqrt ? sqrt(p) : p)); /* Hägele et al. 2024 */
        }
        lr[k] = v;
    }
    return ST_OK;
}
