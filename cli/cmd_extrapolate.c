/*
 * cmd_extrapolate.c — `scaletune extrapolate`: gathers a sweep's runs from the store (through
 * runner.h's JSON export: parameters, objective, cost, failure, the final record's `params` and
 * `tokens`), hands them to fit/extrapolate.h and prints the recommended settings at a compute
 * budget with intervals, the predicted objective, P(diverge), the laws and warnings, or JSON.
 * Parameter spaces come from the sweep file (--config) or, without it, from the values.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/st.h"
#include "fit/extrapolate.h"
#include "runner/runner.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: scaletune extrapolate --db FILE --sweep NAME --compute C [options]\n\n"
               "Recommends the settings of a run at compute C (the sweep's cost units) from the\n"
               "sweep's runs, with intervals, the predicted objective and P(diverge).\n\n"
               "options:\n"
               "  --db FILE             the sweep store (required)\n"
               "  --sweep NAME          the sweep (default: the only one in the store)\n"
               "  --compute C           target compute in cost units (required; or --factor)\n"
               "  --factor F            target compute = F x the largest successful run\n"
               "  --config FILE         the sweep file: parameter spaces, bounds, rounding\n"
               "                        (default: log space for positive values spanning > 3x)\n"
               "  --role NAME=ROLE      what a parameter is: N, D, size, lr, batch, other\n"
               "                        (default: from its name; repeatable)\n"
               "  --method M            auto (default), front (CARBS' Pareto laws), model\n"
               "  --bootstrap R         replicates (default 200)\n"
               "  --seed S              bootstrap seed (default 42)\n"
               "  --level L             interval level (default 0.9)\n"
               "  --max-p-diverge P     largest accepted P(diverge) (default 0.05)\n"
               "  --json                print JSON\n"
               "  --out FILE            also write the JSON to FILE\n");
}

typedef struct args {
    const char *db, *sweep, *config, *out;
    double compute, factor;
    int json;
    fit_xp_options o;
    const char *role_name[32];
    fit_xp_role role[32];
    size_t n_roles;
} args;

static int parse_double(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return end != s && *end == 0 && isfinite(*v);
}

static int parse_role(const char *s, fit_xp_role *r)
{
    static const struct {
        const char *name;
        fit_xp_role role;
    } t[] = {{"N", FIT_XP_N},      {"D", FIT_XP_D},         {"size", FIT_XP_SIZE},
             {"lr", FIT_XP_LR},    {"batch", FIT_XP_BATCH}, {"other", FIT_XP_OTHER},
             {"auto", FIT_XP_AUTO}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (!strcasecmp(s, t[i].name)) {
            *r = t[i].role;
            return 1;
        }
    return 0;
}

static int parse_args(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof(*a));
    a->compute = NAN;
    a->factor = NAN;
    a->o = fit_xp_options_default();
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
            cli_error("see 'scaletune extrapolate --help'", "'%s' needs a value or is unknown", s);
            return 2;
        }
        const char *v = argv[++i];
        double d;
        if (!strcmp(s, "--db"))
            a->db = v;
        else if (!strcmp(s, "--sweep"))
            a->sweep = v;
        else if (!strcmp(s, "--config"))
            a->config = v;
        else if (!strcmp(s, "--out"))
            a->out = v;
        else if (!strcmp(s, "--compute") || !strcmp(s, "--factor")) {
            if (!parse_double(v, &d) || !(d > 0)) {
                cli_error(NULL, "%s: '%s' is not a positive number", s, v);
                return 2;
            }
            if (s[2] == 'c')
                a->compute = d;
            else
                a->factor = d;
        } else if (!strcmp(s, "--bootstrap")) {
            if (!parse_double(v, &d) || d < 0 || d > 1e5) {
                cli_error(NULL, "--bootstrap: '%s' is not a count", v);
                return 2;
            }
            a->o.n_boot = (size_t)d;
        } else if (!strcmp(s, "--seed")) {
            if (!parse_double(v, &d) || d < 0) {
                cli_error(NULL, "--seed: '%s' is not a non-negative integer", v);
                return 2;
            }
            a->o.seed = (uint64_t)d;
        } else if (!strcmp(s, "--level")) {
            if (!parse_double(v, &d) || !(d > 0 && d < 1)) {
                cli_error(NULL, "--level: '%s' is not in (0, 1)", v);
                return 2;
            }
            a->o.level = d;
        } else if (!strcmp(s, "--max-p-diverge")) {
            if (!parse_double(v, &d) || !(d > 0 && d <= 1)) {
                cli_error(NULL, "--max-p-diverge: '%s' is not in (0, 1]", v);
                return 2;
            }
            a->o.max_p_diverge = d;
        } else if (!strcmp(s, "--method")) {
            if (!strcmp(v, "auto"))
                a->o.method = FIT_XP_METHOD_AUTO;
            else if (!strcmp(v, "front"))
                a->o.method = FIT_XP_METHOD_FRONT;
            else if (!strcmp(v, "model"))
                a->o.method = FIT_XP_METHOD_MODEL;
            else {
                cli_error("auto, front or model", "--method: unknown method '%s'", v);
                return 2;
            }
        } else if (!strcmp(s, "--role")) {
            const char *eq = strchr(v, '=');
            fit_xp_role r;
            if (!eq || eq == v || !parse_role(eq + 1, &r) || a->n_roles >= 32) {
                cli_error("e.g. --role d_model=size (roles: N, D, size, lr, batch, other)",
                          "--role: cannot read '%s'", v);
                return 2;
            }
            a->role_name[a->n_roles] = v;
            a->role[a->n_roles++] = r;
        } else {
            cli_error("see 'scaletune extrapolate --help'", "unknown option '%s'", s);
            return 2;
        }
    }
    if (!a->db) {
        cli_error("scaletune extrapolate --db FILE --sweep NAME --compute C", "--db is required");
        return 2;
    }
    if (isnan(a->compute) == isnan(a->factor)) {
        cli_error("give the target as --compute C or --factor F", "one of --compute and --factor "
                                                                  "is required");
        return 2;
    }
    return 0;
}

/* The runs of a sweep, as arrays for fit_xp_set_runs. */
typedef struct runs {
    size_t P, n, n_failed;
    char **names;
    fit_xp_param *par;
    double *x, *cost, *obj, *N, *D;
    int *failed;
    int maximize;
    char objective_name[64];
} runs;

static void runs_free(runs *r)
{
    for (size_t j = 0; r->names && j < r->P; j++)
        free(r->names[j]);
    free(r->names);
    free(r->par);
    free(r->x);
    free(r->cost);
    free(r->obj);
    free(r->N);
    free(r->D);
    free(r->failed);
}

static double jnumber(json_t *v)
{
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Reads the exported JSON into r: every parameter with numeric values; runs that succeeded or
 * failed for their hyperparameters. */
static int gather(const char *text, runs *r, char *err)
{
    json_error_t je;
    json_t *root = json_loads(text, 0, &je);
    if (!root) {
        snprintf(err, ST_ERRMSG_MAX, "cannot read the store's export: %s", je.text);
        return 1;
    }
    const char *goal = json_string_value(json_object_get(root, "goal"));
    r->maximize = goal && !strcmp(goal, "maximize");
    const char *on = json_string_value(json_object_get(root, "objective"));
    snprintf(r->objective_name, sizeof(r->objective_name), "%s", on ? on : "objective");
    json_t *jr = json_object_get(root, "runs");
    size_t nr = json_array_size(jr);
    /* parameters: those of the first run, numeric in every used run */
    json_t *p0 = nr ? json_object_get(json_array_get(jr, 0), "params") : NULL;
    size_t P = json_object_size(p0);
    r->names = calloc(P ? P : 1, sizeof(char *));
    r->x = malloc((nr ? nr : 1) * (P ? P : 1) * sizeof(double));
    r->cost = malloc((nr ? nr : 1) * sizeof(double));
    r->obj = malloc((nr ? nr : 1) * sizeof(double));
    r->N = malloc((nr ? nr : 1) * sizeof(double));
    r->D = malloc((nr ? nr : 1) * sizeof(double));
    r->failed = malloc((nr ? nr : 1) * sizeof(int));
    if (!r->names || !r->x || !r->cost || !r->obj || !r->N || !r->D || !r->failed) {
        json_decref(root);
        snprintf(err, ST_ERRMSG_MAX, "out of memory");
        return 1;
    }
    const char *key;
    json_t *val;
    size_t P_ok = 0;
    json_object_foreach(p0, key, val)
    {
        int numeric = 1;
        for (size_t i = 0; i < nr && numeric; i++) {
            json_t *pv = json_object_get(json_object_get(json_array_get(jr, i), "params"), key);
            numeric = json_is_number(pv);
        }
        if (numeric)
            r->names[P_ok++] = strdup(key);
    }
    r->P = P_ok;
    size_t n = 0;
    for (size_t i = 0; i < nr; i++) {
        json_t *run = json_array_get(jr, i);
        const char *st = json_string_value(json_object_get(run, "status"));
        int ok = st && !strcmp(st, "succeeded"), fl = st && !strcmp(st, "failed");
        if (!ok && !fl)
            continue;
        json_t *params = json_object_get(run, "params");
        for (size_t j = 0; j < P_ok; j++)
            r->x[n * P_ok + j] = jnumber(json_object_get(params, r->names[j]));
        r->failed[n] = fl;
        r->obj[n] = fl ? NAN : jnumber(json_object_get(run, "objective"));
        r->cost[n] = fl ? NAN : jnumber(json_object_get(run, "cost"));
        json_t *fin = json_object_get(run, "final");
        r->N[n] = jnumber(json_object_get(fin, "params"));
        r->D[n] = jnumber(json_object_get(fin, "tokens"));
        if (!fl && !(isfinite(r->obj[n]) && isfinite(r->cost[n]) && r->cost[n] > 0))
            continue; /* a success without objective or cost cannot be used */
        r->n_failed += (size_t)fl;
        n++;
    }
    r->n = n;
    json_decref(root);
    return 0;
}

/* Spaces and bounds: from the sweep file, else log space for positive values spanning > 3x. */
static int describe(runs *r, const args *a, char *err)
{
    runner_config *cfg = NULL;
    if (a->config && runner_config_load_file(a->config, &cfg, err) != ST_OK)
        return 1;
    r->par = calloc(r->P ? r->P : 1, sizeof(fit_xp_param));
    if (!r->par) {
        runner_config_destroy(cfg);
        snprintf(err, ST_ERRMSG_MAX, "out of memory");
        return 1;
    }
    for (size_t j = 0; j < r->P; j++) {
        fit_xp_param *p = &r->par[j];
        double lo = INFINITY, hi = -INFINITY;
        for (size_t i = 0; i < r->n; i++) {
            lo = fmin(lo, r->x[i * r->P + j]);
            hi = fmax(hi, r->x[i * r->P + j]);
        }
        fit_xp_param_init(p, r->names[j], (lo > 0 && hi > 3 * lo) ? FIT_XP_LOG : FIT_XP_LINEAR);
        for (size_t k = 0; cfg && k < cfg->n_params; k++) {
            const runner_param_spec *ps = &cfg->params[k];
            if (strcmp(ps->p.name, r->names[j]) || ps->is_fixed)
                continue;
            p->space = ps->p.space == CARBS_SPACE_LOG     ? FIT_XP_LOG
                       : ps->p.space == CARBS_SPACE_LOGIT ? FIT_XP_LOGIT
                                                          : FIT_XP_LINEAR;
            p->is_integer = ps->p.is_integer;
            p->rounding = ps->p.rounding > 0 ? ps->p.rounding : 1;
            p->min = ps->p.min;
            p->max = ps->p.max;
        }
        for (size_t k = 0; k < a->n_roles; k++) {
            size_t len = (size_t)(strchr(a->role_name[k], '=') - a->role_name[k]);
            if (strlen(r->names[j]) == len && !strncmp(a->role_name[k], r->names[j], len))
                p->role = a->role[k];
        }
        /* model size and tokens are what we extrapolate: their search bounds do not apply
         * (an integer keeps its lower bound, so that rounding stays admissible) */
        fit_xp_role role = p->role == FIT_XP_AUTO ? fit_xp_role_guess(p->name) : p->role;
        if (role == FIT_XP_N || role == FIT_XP_D || role == FIT_XP_SIZE) {
            p->max = INFINITY;
            if (!p->is_integer)
                p->min = -INFINITY;
        }
        if (p->space == FIT_XP_LOG && !(lo > 0))
            p->space = FIT_XP_LINEAR;
        if (p->space == FIT_XP_LOGIT && !(lo > 0 && hi < 1))
            p->space = FIT_XP_LINEAR;
    }
    runner_config_destroy(cfg);
    return 0;
}

static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *result_json(const fit_xp *xp, const runs *r, const fit_xp_result *res)
{
    json_t *o = json_object();
    size_t P = r->P;
    const char *mname = res->method == FIT_XP_METHOD_MODEL ? "model" : "front";
    json_object_set_new(o, "compute", jnum(res->compute));
    json_object_set_new(o, "largest_cost", jnum(res->largest_cost));
    json_object_set_new(o, "factor", jnum(res->compute / res->largest_cost));
    json_object_set_new(o, "method", json_string(mname));
    json_object_set_new(o, "objective_name", json_string(r->objective_name));
    json_t *rec = json_object(), *iv = json_object(), *roles = json_object();
    for (size_t j = 0; j < P; j++) {
        json_object_set_new(rec, r->names[j], jnum(res->value[j]));
        json_t *pair = json_array();
        json_array_append_new(pair, jnum(res->lo[j]));
        json_array_append_new(pair, jnum(res->hi[j]));
        json_object_set_new(iv, r->names[j], pair);
        json_object_set_new(roles, r->names[j],
                            json_string(fit_xp_role_name(fit_xp_param_role(xp, j))));
    }
    json_object_set_new(o, "recommended", rec);
    json_object_set_new(o, "intervals", iv);
    json_object_set_new(o, "roles", roles);
    json_t *pred = json_object();
    json_object_set_new(pred, "objective", jnum(res->objective));
    json_object_set_new(pred, "lo", jnum(res->objective_lo));
    json_object_set_new(pred, "hi", jnum(res->objective_hi));
    json_object_set_new(pred, "level", jnum(fit_xp_options_default().level));
    json_object_set_new(o, "predicted", pred);
    json_object_set_new(o, "p_diverge", jnum(res->p_diverge));
    json_t *nd = json_object();
    json_object_set_new(nd, "N", jnum(res->N));
    json_object_set_new(nd, "N_lo", jnum(res->N_lo));
    json_object_set_new(nd, "N_hi", jnum(res->N_hi));
    json_object_set_new(nd, "D", jnum(res->D));
    json_object_set_new(nd, "D_lo", jnum(res->D_lo));
    json_object_set_new(nd, "D_hi", jnum(res->D_hi));
    json_object_set_new(o, "size", nd);
    json_t *warn = json_array();
    const char *w = res->warning_text;
    while (w && *w) {
        const char *e = strstr(w, "; ");
        size_t len = e ? (size_t)(e - w) : strlen(w);
        json_array_append_new(warn, json_stringn(w, len));
        w = e ? e + 2 : NULL;
    }
    json_object_set_new(o, "warnings", warn);
    json_object_set_new(o, "n_runs", json_integer((json_int_t)r->n));
    json_object_set_new(o, "n_failed", json_integer((json_int_t)r->n_failed));

    /* CARBS' analysis: the front and its laws */
    json_t *front = json_object(), *pts = json_array(), *laws = json_object();
    for (size_t k = 0; k < fit_xp_front_n(xp); k++) {
        size_t run, cnt;
        double c, y;
        fit_xp_front_get(xp, k, &run, &c, &y, &cnt);
        json_t *pt = json_object();
        json_object_set_new(pt, "cost", jnum(c));
        json_object_set_new(pt, "objective", jnum(y));
        json_object_set_new(pt, "count", json_integer((json_int_t)cnt));
        json_array_append_new(pts, pt);
    }
    for (size_t j = 0; j < P; j++) {
        double coef[2], ci[2];
        if (fit_xp_front_law(xp, j, coef, ci) != ST_OK)
            continue;
        json_t *l = json_object();
        json_object_set_new(l, "intercept", jnum(coef[0]));
        json_object_set_new(l, "slope", jnum(coef[1]));
        json_t *c = json_array();
        json_array_append_new(c, jnum(ci[0]));
        json_array_append_new(c, jnum(ci[1]));
        json_object_set_new(l, "slope_interval", c);
        json_object_set_new(laws, r->names[j], l);
    }
    json_object_set_new(front, "points", pts);
    json_object_set_new(front, "laws", laws);
    double nat[3];
    if (fit_xp_front_loss_law(xp, nat) == ST_OK) {
        json_t *l = json_object();
        json_object_set_new(l, "A", jnum(nat[0]));
        json_object_set_new(l, "alpha", jnum(nat[1]));
        json_object_set_new(l, "E", jnum(nat[2]));
        json_object_set_new(front, "objective_law", l);
    }
    double *fv = malloc(P * sizeof(double));
    if (fv && fit_xp_front_recommend(xp, fv) == ST_OK) {
        json_t *fr = json_object();
        for (size_t j = 0; j < P; j++)
            json_object_set_new(fr, r->names[j], jnum(fv[j]));
        json_object_set_new(front, "recommended", fr);
    }
    free(fv);
    json_object_set_new(o, "front", front);

    /* the model of every run */
    double ch[5], k, g[4];
    fit_alloc al;
    if (fit_xp_chinchilla(xp, ch, &al) == ST_OK) {
        json_t *m = json_object(), *c = json_object(), *hp = json_object();
        const char *cn[5] = {"A", "B", "E", "alpha", "beta"};
        for (size_t i = 0; i < 5; i++)
            json_object_set_new(c, cn[i], jnum(ch[i]));
        json_object_set_new(m, "chinchilla", c);
        json_t *a = json_object();
        json_object_set_new(a, "N_opt", jnum(al.N_opt));
        json_object_set_new(a, "D_opt", jnum(al.D_opt));
        json_object_set_new(a, "tokens_per_param", jnum(al.tokens_per_param));
        json_object_set_new(a, "L_opt", jnum(al.L_opt));
        json_object_set_new(m, "allocation", a);
        if (fit_xp_cost_model(xp, &k) == ST_OK)
            json_object_set_new(m, "cost_ln_k", jnum(k));
        for (size_t j = 0; j < P; j++) {
            double coef[3], curv, sat;
            if (fit_xp_hp_law(xp, j, coef, &curv, &sat) != ST_OK)
                continue;
            json_t *l = json_object();
            json_object_set_new(l, "intercept", jnum(coef[0]));
            json_object_set_new(l, "slope_lnN", jnum(coef[1]));
            json_object_set_new(l, "slope_lnD", jnum(coef[2]));
            json_object_set_new(l, "curvature", jnum(curv));
            json_object_set_new(l, "saturation", jnum(sat));
            json_object_set_new(hp, r->names[j], l);
        }
        json_object_set_new(m, "hyperparameter_laws", hp);
        if (fit_xp_divergence(xp, g) == ST_OK) {
            json_t *d = json_array();
            for (size_t i = 0; i < 4; i++)
                json_array_append_new(d, jnum(g[i]));
            json_object_set_new(m, "divergence_logit", d);
        }
        json_object_set_new(o, "model", m);
    }
    return o;
}

static void print_text(const fit_xp *xp, const runs *r, const fit_xp_result *res, const args *a)
{
    size_t P = r->P;
    printf("%zu runs (%zu failed), Pareto front of %zu groups, largest run cost %.4g\n", r->n,
           r->n_failed, fit_xp_front_n(xp), res->largest_cost);
    printf("target compute %.4g (%.3gx the largest run); method: %s\n", res->compute,
           res->compute / res->largest_cost,
           res->method == FIT_XP_METHOD_MODEL
               ? "model (every run: L(N, D) x hyperparameter penalties, stability boundary)"
               : "front (each parameter regressed on log cost along the Pareto front)");
    printf("\nrecommended settings (%.0f%% intervals):\n", 100 * a->o.level);
    for (size_t j = 0; j < P; j++)
        printf("  %-16s %-12.5g [%.5g, %.5g]  (%s)\n", r->names[j], res->value[j], res->lo[j],
               res->hi[j], fit_xp_role_name(fit_xp_param_role(xp, j)));
    if (isfinite(res->N))
        printf("  %-16s %-12.5g [%.5g, %.5g]\n", "model size N", res->N, res->N_lo, res->N_hi);
    if (isfinite(res->D))
        printf("  %-16s %-12.5g [%.5g, %.5g]\n", "tokens D", res->D, res->D_lo, res->D_hi);
    printf("\npredicted %s: %.5g [%.5g, %.5g]\n", r->objective_name, res->objective,
           res->objective_lo, res->objective_hi);
    if (isfinite(res->p_diverge))
        printf("P(diverge): %.3f\n", res->p_diverge);
    double ch[5];
    fit_alloc al;
    if (fit_xp_chinchilla(xp, ch, &al) == ST_OK)
        printf("L(N, D) = %.4g + %.4g N^-%.3f + %.4g D^-%.3f; compute-optimal at C: N %.4g, "
               "D %.4g (%.1f tokens/param)\n",
               ch[2], ch[0], ch[3], ch[1], ch[4], al.N_opt, al.D_opt, al.tokens_per_param);
    double *fv = malloc(P * sizeof(double));
    if (fv && res->method == FIT_XP_METHOD_MODEL && fit_xp_front_recommend(xp, fv) == ST_OK) {
        printf("front laws alone (CARBS' method) would give:");
        for (size_t j = 0; j < P; j++)
            printf(" %s=%.4g", r->names[j], fv[j]);
        printf("\n");
    }
    free(fv);
    if (res->warning_text[0]) {
        printf("\nwarnings:\n");
        const char *w = res->warning_text;
        while (w && *w) {
            const char *e = strstr(w, "; ");
            int len = e ? (int)(e - w) : (int)strlen(w);
            printf("  - %.*s\n", len, w);
            w = e ? e + 2 : NULL;
        }
    }
}

int cmd_extrapolate(int argc, char **argv)
{
    args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (access(a.db, F_OK) != 0) {
        cli_error("name the store with --db FILE", "no store at %s", a.db);
        return 1;
    }
    char em[ST_ERRMSG_MAX];
    runner_store *s = NULL;
    if (runner_store_open(a.db, &s, em) != ST_OK) {
        cli_error(NULL, "%s", em);
        return 1;
    }
    char *text = NULL;
    if (runner_store_export_json(s, a.sweep, &text) != ST_OK) {
        cli_error("list the sweeps with 'scaletune sweep status --db FILE'", "%s",
                  runner_store_errmsg(s));
        runner_store_close(s);
        return 1;
    }
    runner_store_close(s);
    runs r;
    memset(&r, 0, sizeof(r));
    char err[ST_ERRMSG_MAX] = "";
    if (gather(text, &r, err) || describe(&r, &a, err)) {
        st_free(text);
        runs_free(&r);
        cli_error(NULL, "%s", err);
        return 1;
    }
    st_free(text);
    a.o.maximize = r.maximize;
    fit_xp *xp = NULL;
    if (fit_xp_create(&xp) != ST_OK) {
        runs_free(&r);
        cli_error(NULL, "out of memory");
        return 1;
    }
    st_status st = fit_xp_set_options(xp, &a.o);
    if (st == ST_OK)
        st = fit_xp_set_runs(xp, r.P, r.par, r.n, r.x, r.cost, r.obj, r.failed, r.N, r.D);
    double C = a.compute;
    if (st == ST_OK && isnan(C)) {
        double largest = 0;
        for (size_t i = 0; i < r.n; i++)
            if (!r.failed[i] && r.cost[i] > largest)
                largest = r.cost[i];
        C = a.factor * largest;
    }
    if (st == ST_OK)
        st = fit_xp_run(xp, C);
    if (st != ST_OK) {
        cli_error(st == ST_EEMPTY ? "run more of the sweep first" : NULL, "%s: %s", st_strerror(st),
                  fit_xp_errmsg(xp));
        fit_xp_destroy(xp);
        runs_free(&r);
        return 1;
    }
    fit_xp_result res;
    fit_xp_get_result(xp, &res);
    json_t *j = result_json(xp, &r, &res);
    json_object_set_new(j, "level", json_real(a.o.level));
    json_object_set_new(json_object_get(j, "predicted"), "level", json_real(a.o.level));
    rc = 0;
    if (a.out && json_dump_file(j, a.out, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) != 0) {
        cli_error(NULL, "cannot write %s", a.out);
        rc = 1;
    }
    if (a.json) {
        char *out = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        if (out)
            printf("%s\n", out);
        free(out);
    } else {
        print_text(xp, &r, &res, &a);
    }
    json_decref(j);
    fit_xp_destroy(xp);
    runs_free(&r);
    return rc;
}
