/*
 * options.c — carbs_options defaults and the option table that drives carbs_options_set(),
 * config files and the docs (one row per option: name, type, help; curl's option table).
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "carbs/carbs_int.h"

carbs_options carbs_options_default(void)
{
    carbs_options o;
    memset(&o, 0, sizeof(o));
    o.mode = CARBS_MODE_RECOMMENDED;
    o.maximize = 0;
    o.seed = 0;
    o.num_random_samples = 4;
    o.failures_count_as_random = -1;
    o.design = CARBS_DESIGN_AUTO;
    o.search_radius = 0.3;
    o.exploration_bias = NAN; /* auto: 0 in recommended mode, 1 (CARBS) in faithful */
    o.candidates_per_dim = 100;
    o.resample_frequency = 5;
    o.max_suggestion_cost = INFINITY;
    o.min_pareto_cost_fraction = 0.2;
    o.pareto_conservative = 1;
    o.ei_clamp = 1;
    o.ei_always_max = 0;
    o.fantasy = CARBS_FANTASY_THOMPSON;
    o.max_outstanding_age = 0;
    o.gp_restarts = 1;
    o.gp_max_fit_points = 128;
    o.cost_cap_quantile = 0.9;
    o.gp_max_points = 256;
    return o;
}

typedef enum opt_type {
    T_BOOL,
    T_TRI,
    T_SIZE,
    T_U64,
    T_DOUBLE,
    T_MODE,
    T_DESIGN,
    T_FANTASY,
    T_TRANSFORM
} opt_type;

static const struct {
    const char *name;
    opt_type type;
    size_t offset;
    const char *help;
} table[] = {
#define O(n, t, h)                                                                                 \
    {                                                                                              \
#n, t, offsetof(carbs_options, n), h                                                       \
    }
    O(mode, T_MODE, "recommended (MAP-fitted GPs, quasi-random design) or faithful (CARBS)"),
    O(maximize, T_BOOL, "maximise the objective instead of minimising it"),
    O(seed, T_U64, "seed of every random draw"),
    O(num_random_samples, T_SIZE, "size of the initial random design"),
    O(failures_count_as_random, T_TRI,
      "failed runs count toward the initial design (auto: yes in recommended mode)"),
    O(design, T_DESIGN, "initial design: auto, halton, sobol or gaussian"),
    O(search_radius, T_DOUBLE, "sd of the perturbations around Pareto points, basic units"),
    O(exploration_bias, T_DOUBLE,
      "xi of expected improvement, in normal quantiles (auto: 0 recommended, 1 faithful)"),
    O(candidates_per_dim, T_SIZE, "candidates scored per suggestion, per dimension"),
    O(resample_frequency, T_SIZE, "re-run a Pareto point every this many suggestions (0: never)"),
    O(max_suggestion_cost, T_DOUBLE, "hard cap on a suggestion's cost, held in every phase"),
    O(min_pareto_cost_fraction, T_DOUBLE, "cheapest fraction of runs lumped into one Pareto group"),
    O(pareto_conservative, T_BOOL, "CARBS' conservative Pareto rule for search origins"),
    O(ei_clamp, T_BOOL, "random-cost clamp of the Pareto value in expected improvement"),
    O(ei_always_max, T_BOOL, "ablation: compare every candidate with the best output"),
    O(fantasy, T_FANTASY, "values assumed for outstanding runs: thompson or mean"),
    O(max_outstanding_age, T_SIZE,
      "forget an outstanding suggestion after this many later observations (0: never)"),
    O(output_transform, T_TRANSFORM,
      "objective transform: auto, quantile (CARBS) or rank (rank-Gaussian, linear tails)"),
    O(gp_restarts, T_SIZE, "extra L-BFGS starts when fitting GP hyperparameters"),
    O(gp_max_fit_points, T_SIZE, "fit GP hyperparameters on at most this many points"),
    O(cost_cap_quantile, T_DOUBLE,
      "quantile of the predicted cost held under max_suggestion_cost (no cost function)"),
    O(gp_max_points, T_SIZE,
      "GPs condition on at most this many runs, a subset kept near the front (0: all)"),
#undef O
};

static const char *type_word(opt_type t)
{
    switch (t) {
    case T_BOOL:
        return "bool";
    case T_TRI:
        return "auto|bool";
    case T_SIZE:
        return "count";
    case T_U64:
        return "integer";
    case T_DOUBLE:
        return "number";
    case T_MODE:
        return "recommended|faithful";
    case T_DESIGN:
        return "auto|halton|sobol|gaussian";
    case T_FANTASY:
        return "thompson|mean";
    case T_TRANSFORM:
        return "auto|quantile|rank";
    }
    return "?";
}

const char *carbs_option_name(size_t i, const char **type, const char **help)
{
    if (i >= sizeof(table) / sizeof(table[0]))
        return NULL;
    if (type)
        *type = type_word(table[i].type);
    if (help)
        *help = table[i].help;
    return table[i].name;
}

static int parse_bool(const char *v, int *out)
{
    if (!strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "on"))
        *out = 1;
    else if (!strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no") ||
             !strcasecmp(v, "off"))
        *out = 0;
    else
        return -1;
    return 0;
}

static int parse_word(const char *v, const char *const *words, int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (!strcasecmp(v, words[i])) {
            *out = i;
            return 0;
        }
    return -1;
}

st_status carbs_options_set(carbs_options *o, const char *name, const char *value, char *errmsg)
{
    char scratch[ST_ERRMSG_MAX];
    char *msg = errmsg ? errmsg : scratch;
    msg[0] = 0;
    size_t i, n = sizeof(table) / sizeof(table[0]);
    for (i = 0; i < n; i++)
        if (name && !strcmp(table[i].name, name))
            break;
    if (i == n)
        return st_errf(msg, ST_ENOTFOUND, "unknown optimizer option '%s'", name ? name : "");
    if (!value || !*value)
        return st_errf(msg, ST_EINVAL, "option %s: empty value", name);
    void *p = (char *)o + table[i].offset;
    char *end = NULL;
    int b;
    errno = 0;
    switch (table[i].type) {
    case T_BOOL:
        if (parse_bool(value, &b))
            break;
        *(int *)p = b;
        return ST_OK;
    case T_TRI:
        if (!strcasecmp(value, "auto")) {
            *(int *)p = -1;
            return ST_OK;
        }
        if (parse_bool(value, &b))
            break;
        *(int *)p = b;
        return ST_OK;
    case T_SIZE:
    case T_U64: {
        if (value[0] == '-')
            break;
        unsigned long long v = strtoull(value, &end, 10);
        if (errno || *end)
            break;
        if (table[i].type == T_SIZE)
            *(size_t *)p = (size_t)v;
        else
            *(uint64_t *)p = (uint64_t)v;
        return ST_OK;
    }
    case T_DOUBLE: {
        if (!strcasecmp(value, "auto") && !strcmp(name, "exploration_bias")) {
            *(double *)p = NAN;
            return ST_OK;
        }
        double v = strtod(value, &end);
        if (errno || *end || isnan(v))
            break;
        *(double *)p = v;
        return ST_OK;
    }
    case T_MODE: {
        static const char *const w[] = {"recommended", "faithful"};
        if (parse_word(value, w, 2, &b))
            break;
        *(carbs_mode *)p = (carbs_mode)b;
        return ST_OK;
    }
    case T_DESIGN: {
        static const char *const w[] = {"auto", "halton", "sobol", "gaussian"};
        if (parse_word(value, w, 4, &b))
            break;
        *(carbs_design *)p = (carbs_design)b;
        return ST_OK;
    }
    case T_FANTASY: {
        static const char *const w[] = {"thompson", "mean"};
        if (parse_word(value, w, 2, &b))
            break;
        *(carbs_fantasy *)p = (carbs_fantasy)b;
        return ST_OK;
    }
    case T_TRANSFORM: {
        static const char *const w[] = {"auto", "quantile", "rank"};
        if (parse_word(value, w, 3, &b))
            break;
        *(carbs_transform *)p = (carbs_transform)b;
        return ST_OK;
    }
    }
    return st_errf(msg, ST_EINVAL, "option %s: '%s' is not a valid %s", name, value,
                   type_word(table[i].type));
}
