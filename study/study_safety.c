/*
 * study_safety.c — whether the engine vouches for its recommendation, and when it does not,
 * why and which small runs would resolve it: learning rates around the edge of what trained at
 * the largest model size (or cost) of the sweep, where the stability boundary matters most.
 * And whether the recommendation can run at all when a categorical parameter sets the model
 * size or the tokens (model: {choices: [small, medium, large]}): its levels are the only sizes
 * the command can train.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "study/study_int.h"

/* Runs at or above this quantile of model size (or cost when N is unknown) are "the largest"
 * for the advice: the top quarter of the sweep. */
#define LARGE_QUANTILE 0.75

/* Size of engine run k: its model size N when known, else its cost (NAN for failures). */
static double run_size(const study *s, size_t k)
{
    double N = study_model_size(s, k);
    return isfinite(N) ? N : s->cost[k];
}

/* The size at LARGE_QUANTILE of the used runs, or NAN. */
static double large_threshold(const study *s)
{
    double *v = malloc((s->n + 1) * sizeof(double));
    size_t m = 0;
    if (!v)
        return NAN;
    for (size_t k = 0; k < s->n; k++)
        if (isfinite(run_size(s, k)))
            v[m++] = run_size(s, k);
    double t = NAN;
    if (m) {
        qsort(v, m, sizeof(double), study_cmp_double);
        t = v[(size_t)floor(LARGE_QUANTILE * (double)(m - 1))];
    }
    free(v);
    return t;
}

/* Which small runs would resolve it: learning rates between the largest that trained and the
 * smallest that diverged among the largest runs (or around the recommendation when the sweep
 * has no such pair). */
static void advise(study *s, char *buf, size_t cap)
{
    size_t lr = s->P;
    for (size_t j = 0; j < s->P; j++)
        if (fit_xp_param_role(s->xp, j) == FIT_XP_LR)
            lr = j;
    if (lr == s->P) {
        snprintf(buf, cap, "the sweep has no learning rate to locate a stability boundary in");
        return;
    }
    double thr = large_threshold(s), ok_hi = -INFINITY, bad_lo = INFINITY, size_hi = 0;
    for (size_t k = 0; k < s->n; k++) {
        double v = s->x[k * s->P + lr], z = run_size(s, k);
        if (isfinite(z) && !(z >= thr))
            continue;
        if (isfinite(z))
            size_hi = fmax(size_hi, z);
        if (s->failed[k])
            bad_lo = fmin(bad_lo, v);
        else
            ok_hi = fmax(ok_hi, v);
    }
    double rec = s->res.value[lr];
    double from = isfinite(ok_hi) ? fmin(ok_hi, rec) : rec / 3;
    double to = isfinite(bad_lo) ? bad_lo : 3 * fmax(rec, isfinite(ok_hi) ? ok_hi : rec);
    const char *what = isfinite(s->res.N) ? "model size" : "cost";
    snprintf(buf, cap,
             "runs at the sweep's largest %s (about %.3g) with %s between %.3g and %.3g would "
             "locate the stability boundary where it matters",
             what, size_hi > 0 ? size_hi : s->target, s->par[lr].name, from, to);
}

/* The recommendation's N (or D) must lie this close to its level's to be runnable when a
 * categorical sets it (fit_xp_level_sets). */
#define LEVEL_MATCH log(1.1)

/* 0 with the reason in s->unsafe_reason when a categorical parameter sets the model size (or
 * the tokens) and the recommended level's is not the recommendation's: the command would train
 * another run than the one predicted. */
static int levels_runnable(study *s)
{
    for (size_t j = 0; j < s->P; j++) {
        size_t L = s->par[j].n_levels;
        if (!L || L > FIT_XP_MAX_LEVELS || !isfinite(s->res.value[j]))
            continue;
        for (int d = 0; d < 2; d++) {
            double lq[FIT_XP_MAX_LEVELS], want = d ? s->res.D : s->res.N;
            if (!(want > 0) || !fit_xp_level_sets(s->xp, j, d, lq))
                continue;
            size_t rec = (size_t)s->res.value[j];
            if (rec < L && isfinite(lq[rec]) && fabs(log(want) - lq[rec]) <= LEVEL_MATCH)
                continue;
            char have[256] = "";
            size_t at = 0;
            for (size_t l = 0; l < L && at < sizeof(have); l++)
                if (isfinite(lq[l]))
                    at += (size_t)snprintf(have + at, sizeof(have) - at, "%s%.3g", at ? ", " : "",
                                           exp(lq[l]));
            const char *what = d ? "tokens" : "model size";
            snprintf(
                s->unsafe_reason, sizeof(s->unsafe_reason),
                "'%s' (a categorical) sets the %s: its levels ran at %s = %s; the large run "
                "at compute %.4g needs %s about %.3g, which none of them gives; search the "
                "%s as a number (%s) or add a level near %.3g",
                s->par[j].name, what, d ? "D" : "N", have, s->target, d ? "D" : "N", want, what,
                d ? "a parameter tokens or max_steps" : "a parameter N, or d_model and n_layer",
                want);
            return 0;
        }
    }
    return 1;
}

int study_judge_safety(study *s)
{
    if (!levels_runnable(s))
        return 0;
    double p = s->res.p_diverge, lim = s->o.engine.max_p_diverge;
    /* the engine's verdict; P(diverge) is checked again because the setting it reports is
     * rounded after the search */
    int unsafe = !s->res.safe || (isfinite(p) && p > lim);
    if (!unsafe)
        return 1;
    if (s->res.unsafe_reason && s->res.unsafe_reason[0]) {
        /* the engine says why and which runs would resolve it */
        snprintf(s->unsafe_reason, sizeof(s->unsafe_reason), "%s", s->res.unsafe_reason);
        return 0;
    }
    char adv[ST_ERRMSG_MAX / 2];
    advise(s, adv, sizeof(adv));
    snprintf(s->unsafe_reason, sizeof(s->unsafe_reason),
             "no setting at compute %.4g keeps P(diverge) at or below %.3g (the recommendation's "
             "is %.3g): the sweep does not place the stability boundary there; %s",
             s->target, lim, p, adv);
    return 0;
}
