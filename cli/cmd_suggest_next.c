/*
 * cmd_suggest_next.c — `scaletune suggest-next`: for a sweep that is done, the K small runs that
 * would shrink the large run's predicted interval most per unit cost (study mode's acquisition,
 * study/study.h's study_plan_make; docs/cli/suggest-next.md), each with its parameters, cost,
 * P(diverge) and the half-width the interval would have after it and the ones before it.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/st.h"
#include "runner/runner.h"
#include "study/study.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: scaletune suggest-next --db FILE [--sweep NAME] (--factor F | --compute C)\n"
               "                              [-n K] [--json]\n\n"
               "Which K small runs would shrink the large run's predicted interval most per unit\n"
               "cost: each candidate is scored by the expected reduction of the variance of the\n"
               "large run's predicted loss over the engine's bootstrap replicates, divided by its\n"
               "cost; after each pick the others are conditioned on it (docs/algorithms/\n"
               "study-mode.md).\n\n"
               "options:\n"
               "  --db FILE         the sweep store (required)\n"
               "  --sweep NAME      the sweep (default: the only one in the store)\n"
               "  --compute C       the large run's compute in cost units (or --factor)\n"
               "  --factor F        the large run's compute = F x the largest successful run\n"
               "  -n K              runs to suggest (default 4)\n"
               "  --bootstrap R     engine replicates, the ensemble (default 32)\n"
               "  --candidates M    candidate runs scored (default 384)\n"
               "  --seed S          draws the candidates (default 1)\n"
               "  --json            print JSON\n\n"
               "exit status: 0 suggested, 1 the work failed (no store, too few runs to fit),\n"
               "2 bad usage\n");
}

typedef struct args {
    const char *db, *sweep;
    double compute, factor, seed;
    double k;
    int json;
    study_mode_options o;
} args;

static int parse_double(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return end != s && *end == 0 && isfinite(*v);
}

/* One option with a value; 0, or 2 on a bad value. */
static int set_value(args *a, const char *s, const char *v)
{
    double d;
    if (!strcmp(s, "--db"))
        a->db = v;
    else if (!strcmp(s, "--sweep"))
        a->sweep = v;
    else if (!parse_double(v, &d) || d < 0) {
        cli_error("see 'scaletune suggest-next --help'", "%s: '%s' is not a number >= 0", s, v);
        return 2;
    } else if (!strcmp(s, "--compute") || !strcmp(s, "--factor")) {
        if (!(d > 0)) {
            cli_error(NULL, "%s: '%s' is not a positive number", s, v);
            return 2;
        }
        *(s[2] == 'c' ? &a->compute : &a->factor) = d;
    } else if (!strcmp(s, "-n") && d >= 1 && d <= 1000)
        a->k = d;
    else if (!strcmp(s, "--bootstrap") && d >= 2 && d <= 1e4)
        a->o.n_boot = (size_t)d;
    else if (!strcmp(s, "--candidates") && d >= 1 && d <= 1e5)
        a->o.n_candidates = (size_t)d;
    else if (!strcmp(s, "--seed"))
        a->seed = d;
    else {
        cli_error("see 'scaletune suggest-next --help'", "unknown option or bad value: %s %s", s,
                  v);
        return 2;
    }
    return 0;
}

static int parse_args(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof(*a));
    a->compute = a->factor = NAN;
    a->k = 4;
    a->seed = 1;
    a->o = study_mode_options_default();
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(s, "--json")) {
            a->json = 1;
            continue;
        }
        if (i + 1 >= argc) {
            cli_error("see 'scaletune suggest-next --help'", "'%s' needs a value or is unknown", s);
            return 2;
        }
        int rc = set_value(a, s, argv[++i]);
        if (rc)
            return rc;
    }
    if (!a->db) {
        cli_error("scaletune suggest-next --db FILE --factor 100", "--db is required");
        return 2;
    }
    if (isnan(a->compute) == isnan(a->factor)) {
        cli_error("give the large run as --compute C or --factor F",
                  "one of --compute and --factor is required");
        return 2;
    }
    return 0;
}

static void print_text(const runner_sweep *w, const study_plan *pl, const args *a)
{
    const runner_config *cfg = w->cfg;
    printf("sweep %s: %zu runs; the large run at compute %.4g: predicted %s %.5g, 90%% "
           "half-width %.2f%% (%.2f%% from the fit, the rest run noise)\n",
           cfg->name, w->n_runs, pl->compute, cfg->objective, pl->objective, 100 * pl->halfwidth,
           100 * pl->halfwidth_model);
    printf("%zu candidates scored (under the cost cap, P(diverge) <= %.2f); engine fit %.2f s "
           "(%zu replicates), acquisition %.2f s\n\n",
           pl->n_candidates, a->o.max_p_diverge, pl->fit_seconds, a->o.n_boot, pl->acq_seconds);
    printf("%-3s %-11s %-8s %-11s", "#", "cost", "P(div)", "half-width");
    for (size_t i = 0; i < cfg->n_params; i++)
        if (!cfg->params[i].is_fixed)
            printf(" %-11.11s", cfg->params[i].p.name);
    printf("\n");
    for (size_t k = 0; k < pl->n_picks; k++) {
        const study_pick *p = &pl->picks[k];
        printf("%-3zu %-11.4g %-8.3f %9.2f%% ", k + 1, p->cost, p->p_diverge, 100 * p->halfwidth);
        for (size_t i = 0; i < cfg->n_params; i++) {
            if (cfg->params[i].is_fixed)
                continue;
            const char *ch = runner_param_choice(&cfg->params[i], p->x[i]);
            if (ch)
                printf(" %-11.11s", ch);
            else if (isnan(p->x[i])) /* a conditional parameter left inactive */
                printf(" %-11s", "-");
            else
                printf(" %-11.5g", p->x[i]);
        }
        printf("\n");
    }
    if (pl->n_picks < (size_t)a->k)
        printf("(only %zu runs add information)\n", pl->n_picks);
}

static int print_json(const runner_sweep *w, const study_plan *pl, const args *a)
{
    const runner_config *cfg = w->cfg;
    json_t *o = json_object(), *runs = json_array();
    json_object_set_new(o, "sweep", json_string(cfg->name));
    json_object_set_new(o, "compute", json_real(pl->compute));
    json_object_set_new(o, "objective", json_real(pl->objective));
    json_object_set_new(o, "halfwidth", json_real(pl->halfwidth));
    json_object_set_new(o, "halfwidth_model", json_real(pl->halfwidth_model));
    json_object_set_new(o, "sigma", json_real(pl->sigma));
    json_object_set_new(o, "n_candidates", json_integer((json_int_t)pl->n_candidates));
    json_object_set_new(o, "n_boot", json_integer((json_int_t)a->o.n_boot));
    json_object_set_new(o, "fit_seconds", json_real(pl->fit_seconds));
    json_object_set_new(o, "acq_seconds", json_real(pl->acq_seconds));
    for (size_t k = 0; k < pl->n_picks; k++) {
        const study_pick *p = &pl->picks[k];
        json_t *r = json_object(), *params = json_object();
        for (size_t i = 0; i < cfg->n_params; i++) {
            /* a categorical's choice by name, an inactive conditional parameter as null */
            const char *ch = runner_param_choice(&cfg->params[i], p->x[i]);
            json_t *v = ch ? json_string(ch) : isnan(p->x[i]) ? json_null() : json_real(p->x[i]);
            json_object_set_new(params, cfg->params[i].p.name, v);
        }
        json_object_set_new(r, "params", params);
        json_object_set_new(r, "cost", json_real(p->cost));
        json_object_set_new(r, "p_diverge", json_real(p->p_diverge));
        json_object_set_new(r, "variance_reduction", json_real(p->vr));
        json_object_set_new(r, "halfwidth_after", json_real(p->halfwidth));
        json_object_set_new(r, "shrink",
                            json_real(k ? pl->picks[k - 1].halfwidth - p->halfwidth
                                        : pl->halfwidth - p->halfwidth));
        json_array_append_new(runs, r);
    }
    json_object_set_new(o, "runs", runs);
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(o);
    if (!s) {
        cli_error(NULL, "out of memory");
        return 1;
    }
    printf("%s\n", s);
    free(s);
    return 0;
}

int cmd_suggest_next(int argc, char **argv)
{
    args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? 0 : rc;
    char em[ST_ERRMSG_MAX] = "";
    runner_store *s = NULL;
    runner_sweep *w = NULL;
    if (runner_store_open(a.db, &s, em)) {
        cli_error("is --db a sweep store?", "%s", em);
        return 1;
    }
    if (runner_store_read_sweep(s, a.sweep, &w)) {
        cli_error("scaletune sweep status --db FILE lists the sweeps", "%s",
                  runner_store_errmsg(s));
        runner_store_close(s);
        return 1;
    }
    runner_store_close(s);
    study_plan *pl = NULL;
    st_status st = study_plan_make(w, w->n_runs, NULL, 0, a.compute, a.factor, (size_t)a.k,
                                   (uint64_t)a.seed, &a.o, &pl, em);
    if (st) {
        cli_error("the engine needs a model of every run: parameters with roles N, D and lr, and "
                  "enough successful runs",
                  "%s: %s", st_strerror(st), em);
        runner_sweep_free(w);
        return 1;
    }
    rc = a.json ? print_json(w, pl, &a) : (print_text(w, pl, &a), 0);
    study_plan_free(pl);
    runner_sweep_free(w);
    return rc;
}
