/*
 * compare_json.c — bench/compare's results as JSON: per problem and optimizer, the medians and
 * quartiles of each figure over the seeds (cost to the 1% band, objective at fixed budgets, the
 * regret at 100x of CARBS' front method and of the extrapolation engine), and the ratios of
 * scaletune's medians to each baseline's (compare_report.c turns them into tables).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/compare.h"

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Quantile with linear interpolation (type 7) over the non-NaN values; +inf sorts last. */
static double quantile(const double *v, size_t n, double q)
{
    double s[256];
    size_t m = 0;
    for (size_t i = 0; i < n && m < 256; i++)
        if (!isnan(v[i]))
            s[m++] = v[i];
    if (m == 0)
        return NAN;
    qsort(s, m, sizeof(double), cmp_dbl);
    double h = (m - 1) * q;
    size_t lo = (size_t)floor(h);
    double d = h - lo;
    if (d == 0 || lo + 1 >= m)
        return s[lo];
    if (isinf(s[lo + 1]))
        return INFINITY;
    return s[lo] + d * (s[lo + 1] - s[lo]);
}

static json_t *jnum(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *summary(const double *v, size_t n)
{
    json_t *o = json_object();
    json_object_set_new(o, "median", jnum(quantile(v, n, 0.5)));
    json_object_set_new(o, "q25", jnum(quantile(v, n, 0.25)));
    json_object_set_new(o, "q75", jnum(quantile(v, n, 0.75)));
    size_t fin = 0, inf = 0;
    for (size_t i = 0; i < n; i++) {
        fin += isfinite(v[i]) != 0;
        inf += isinf(v[i]) != 0;
    }
    json_object_set_new(o, "finite", json_integer((json_int_t)fin));
    json_object_set_new(o, "infinite", json_integer((json_int_t)inf));
    json_object_set_new(o, "n", json_integer((json_int_t)n));
    return o;
}

/* each optimizer's medians on one problem, for the ratios (NaN where it did not run) */
typedef struct medians {
    double cost[N_OPT];    /* cost to the 1% band, in unit costs */
    double cost_lb[N_OPT]; /* the same with never-reached seeds at their total spend: a lower
                              bound on the true median (cost to the band is censored) */
    double regret[N_OPT];  /* CARBS' front method at 100x */
    double best[N_OPT];    /* the incumbent's true objective at the end */
    double engine[N_OPT];  /* the extrapolation engine at 100x */
} medians;

/* the figures of one (problem, optimizer) over the seeds, as columns */
typedef struct columns {
    double c1[256], c1lb[256], c1g[256], bud[N_BUDGET][256], best[256], rg[256], lrr[256],
        fails[256], runs[256], wall[256], sug[256];
    double erg[256], elr[256], epd[256], edv[256], eer[256], ecr[256], emd[256], enf[256];
} columns;

static void fill_columns(const compare_set *cs, size_t pi, int o, columns *c)
{
    const problem *p = &cs->probs[pi];
    for (size_t s = 0; s < cs->n_seeds; s++) {
        const figures f = cs->figs[compare_index(cs, pi, o, s)];
        const trace *t = &cs->traces[compare_index(cs, pi, o, s)];
        c->erg[s] = f.regret_engine;
        c->elr[s] = f.lr_ratio_engine;
        c->epd[s] = f.p_div_engine;
        c->edv[s] = f.div_engine;
        c->eer[s] = f.pred_err_engine;
        c->ecr[s] = f.cost_ratio_engine;
        c->emd[s] = f.model_engine;
        c->enf[s] = f.no_failed_engine;
        c->c1[s] = f.cost_to_1pct / p->unit_cost;
        c->c1lb[s] = isinf(c->c1[s]) ? f.spent / p->unit_cost : c->c1[s];
        c->c1g[s] = f.cost_to_1pct_global / p->unit_cost;
        for (int k = 0; k < N_BUDGET; k++)
            c->bud[k][s] = f.at_budget[k];
        c->best[s] = f.best;
        c->rg[s] = f.regret_100x;
        c->lrr[s] = f.lr_ratio_100x;
        c->fails[s] = f.n_failed;
        c->runs[s] = f.n_runs;
        c->wall[s] = t->wall_s;
        c->sug[s] = t->n ? t->suggest_s / t->n : NAN;
    }
}

/* the extrapolation engine's recommendation on the simulator, scored like the front method's */
static json_t *engine_json(const columns *c, size_t n)
{
    json_t *e = json_object();
    json_object_set_new(e, "regret_100x", summary(c->erg, n));
    json_object_set_new(e, "lr_ratio_100x", summary(c->elr, n));
    json_object_set_new(e, "p_diverge", summary(c->epd, n));
    json_object_set_new(e, "diverged", summary(c->edv, n));
    json_object_set_new(e, "prediction_error", summary(c->eer, n));
    json_object_set_new(e, "cost_ratio", summary(c->ecr, n));
    json_object_set_new(e, "used_model", summary(c->emd, n));
    size_t nd = 0, nok = 0, nbelow = 0, npd = 0, nnf = 0;
    for (size_t s = 0; s < n; s++) {
        nd += c->edv[s] == 1;
        nok += !isnan(c->erg[s]);
        nbelow += c->erg[s] < 0.01;
        npd += c->epd[s] < 0.05;
        nnf += c->enf[s] == 1;
    }
    json_object_set_new(e, "seeds_scored", json_integer((json_int_t)nok));
    json_object_set_new(e, "seeds_diverged", json_integer((json_int_t)nd));
    json_object_set_new(e, "seeds_regret_below_1pct", json_integer((json_int_t)nbelow));
    json_object_set_new(e, "seeds_p_diverge_below_5pct", json_integer((json_int_t)npd));
    json_object_set_new(e, "seeds_without_failed_runs", json_integer((json_int_t)nnf));
    return e;
}

/* ratios[key] = a / b, or null with a note when either median recommendation diverged */
static void regret_ratio(json_t *ratios, json_t *notes, const char *key, double a, double b)
{
    json_object_set_new(ratios, key,
                        isfinite(a) && isfinite(b) && b > 0 ? jnum(a / b) : json_null());
    if (!(isfinite(a) && isfinite(b)))
        json_object_set_new(notes, key, json_string("a median recommendation diverged"));
}

/* one optimizer on one problem: its figures' summaries; its medians into m */
static json_t *optimizer_json(const compare_set *cs, size_t pi, int o, long engine_boot, medians *m,
                              json_t *ratios, json_t *notes)
{
    const problem *p = &cs->probs[pi];
    size_t n = cs->n_seeds;
    columns *c = calloc(1, sizeof(columns));
    if (!c)
        return NULL;
    fill_columns(cs, pi, o, c);
    json_t *r = json_object();
    json_object_set_new(r, "cost_to_1pct_units", summary(c->c1, n));
    json_object_set_new(r, "cost_to_1pct_global_units", summary(c->c1g, n));
    json_t *ab = json_array();
    for (int k = 0; k < N_BUDGET; k++) {
        json_t *b = summary(c->bud[k], n);
        json_object_set_new(b, "budget_units", json_real(p->budget_frac[k] * p->budget_units));
        json_array_append_new(ab, b);
    }
    json_object_set_new(r, "objective_at_budget", ab);
    json_object_set_new(r, "best", summary(c->best, n));
    json_object_set_new(r, "runs", summary(c->runs, n));
    json_object_set_new(r, "failed_runs", summary(c->fails, n));
    json_object_set_new(r, "wall_s", summary(c->wall, n));
    if (o <= OPT_STUDY)
        json_object_set_new(r, "suggest_s", summary(c->sug, n));
    if (!strcmp(p->name, "sim")) {
        json_object_set_new(r, "regret_100x", summary(c->rg, n));
        json_object_set_new(r, "lr_ratio_100x", summary(c->lrr, n));
        m->regret[o] = quantile(c->rg, n, 0.5);
        if (engine_boot > 0) {
            json_object_set_new(r, "engine", engine_json(c, n));
            m->engine[o] = quantile(c->erg, n, 0.5);
            /* engine against CARBS' front method on the same sweeps */
            char key[160];
            snprintf(key, sizeof(key), "regret_100x_engine_vs_front_method%s%s",
                     o == OPT_SCALETUNE ? "" : "_", o == OPT_SCALETUNE ? "" : compare_opt_names[o]);
            regret_ratio(ratios, notes, key, m->engine[o], m->regret[o]);
        }
    }
    m->cost[o] = quantile(c->c1, n, 0.5);
    m->cost_lb[o] = quantile(c->c1lb, n, 0.5);
    m->best[o] = quantile(c->best, n, 0.5);
    free(c);
    return r;
}

/* cost to the band, scaletune against baseline o; a bound with a note when a median seed never
 * reached the band */
static void cost_ratio(const medians *m, int o, const char *key, json_t *ratios, json_t *notes)
{
    double a = m->cost[OPT_SCALETUNE], b = m->cost[o];
    if (isfinite(a) && isfinite(b)) {
        json_object_set_new(ratios, key, jnum(a / b));
    } else if (isfinite(a)) {
        json_object_set_new(ratios, key, jnum(a / m->cost_lb[o]));
        json_object_set_new(notes, key,
                            json_string("upper bound: the baseline's median seed never "
                                        "reached the band; its spend is a lower bound"));
    } else if (isfinite(b)) {
        json_object_set_new(ratios, key, jnum(m->cost_lb[OPT_SCALETUNE] / b));
        json_object_set_new(notes, key,
                            json_string("lower bound: scaletune's median seed never "
                                        "reached the band; its spend is a lower bound"));
    } else {
        json_object_set_new(ratios, key, json_null());
        json_object_set_new(notes, key, json_string("neither median seed reached the band"));
    }
}

/* ratios of scaletune's medians to each baseline's on one problem: < 1 means scaletune is
 * better */
static void baseline_ratios(const compare_set *cs, const problem *p, const medians *m,
                            long engine_boot, json_t *ratios, json_t *notes)
{
    for (int o = OPT_FAITHFUL; o < N_OPT; o++) {
        if (!cs->use[o] || !cs->use[OPT_SCALETUNE] || o == OPT_STUDY)
            continue;
        char key[128];
        const char *sfx = strcmp(p->name, "sim") ? p->name : NULL;
        snprintf(key, sizeof(key), "cost_to_1pct_vs_%s%s%s", compare_opt_names[o], sfx ? "_" : "",
                 sfx ? sfx : "");
        cost_ratio(m, o, key, ratios, notes);
        if (!sfx && engine_boot > 0) {
            /* scaletune's sweep through the engine against the baseline's sweep through
             * CARBS' front method (what a CARBS user would get) */
            snprintf(key, sizeof(key), "regret_100x_engine_vs_%s_front_method",
                     compare_opt_names[o]);
            regret_ratio(ratios, notes, key, m->engine[OPT_SCALETUNE], m->regret[o]);
        }
        if (!sfx) {
            snprintf(key, sizeof(key), "regret_100x_vs_%s", compare_opt_names[o]);
            regret_ratio(ratios, notes, key, m->regret[OPT_SCALETUNE], m->regret[o]);
        }
        /* gap to the best achievable objective, at the end of the budget */
        snprintf(key, sizeof(key), "final_gap_vs_%s%s%s", compare_opt_names[o], sfx ? "_" : "",
                 sfx ? sfx : "");
        json_object_set_new(ratios, key,
                            jnum((m->best[OPT_SCALETUNE] - p->f_best) / (m->best[o] - p->f_best)));
    }
}

json_t *compare_problems_json(const compare_set *cs, long engine_boot, json_t *ratios,
                              json_t *notes)
{
    json_t *jp = json_object();
    for (size_t pi = 0; pi < cs->n_prob; pi++) {
        const problem *p = &cs->probs[pi];
        json_t *po = json_object(), *oo = json_object();
        json_object_set_new(po, "f_best", json_real(p->f_best));
        json_object_set_new(po, "band", json_real(0.01 * fabs(p->f_best)));
        json_object_set_new(po, "unit_cost", json_real(p->unit_cost));
        json_object_set_new(po, "budget", json_real(p->budget_units * p->unit_cost));
        json_object_set_new(po, "max_evals", json_integer((json_int_t)p->max_evals));
        medians m;
        for (int o = 0; o < N_OPT; o++)
            m.cost[o] = m.cost_lb[o] = m.regret[o] = m.best[o] = m.engine[o] = NAN;
        for (int o = 0; o < N_OPT; o++)
            if (cs->use[o] && compare_runs_on(o, p))
                json_object_set_new(oo, compare_opt_names[o],
                                    optimizer_json(cs, pi, o, engine_boot, &m, ratios, notes));
        json_object_set_new(po, "optimizers", oo);
        json_object_set_new(jp, p->name, po);
        baseline_ratios(cs, p, &m, engine_boot, ratios, notes);
    }
    return jp;
}
