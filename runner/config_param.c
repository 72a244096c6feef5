/*
 * config_param.c — categorical and conditional parameters of a sweep file:
 *   optimizer: {choices: [adamw, lion, sgd], center: adamw}     (space: categorical optional)
 *   beta2:     {space: linear, min: 0.9, max: 0.999, center: 0.95, when: {optimizer: adamw}}
 * (`when` also takes a list: {optimizer: [adamw, lion]}), the choice string of a value, and
 * the parsing of a value written as text (sweep enqueue), and the `parameters:` block itself
 * (every parameter, ordered ones too: cfg_load_params). Not here: the optimizer (carbs/ sees a
 * choice index and active_if/active_mask).
 */
#include "runner/config_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A choice is substituted into commands and written into CSV exports: no separators. */
static int choice_ok(const char *s)
{
    if (!*s)
        return 0;
    for (const char *q = s; *q; q++)
        if (*q == ',' || *q == '"' || *q == '\n' || *q == '\r' || *q == '{' || *q == '}')
            return 0;
    return 1;
}

static st_status load_choice_list(ctx *c, const yaml_node_t *v, const char *f,
                                  runner_param_spec *ps)
{
    if (!v || v->type != YAML_SEQUENCE_NODE)
        return cfg_fail(c, v, f, ST_EINVAL, "expected a list of choices [adamw, lion]");
    size_t m = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
    if (m < 2 || m > CARBS_CHOICES_MAX)
        return cfg_fail(c, v, f, ST_EINVAL, "needs 2 to %d choices (got %zu)", CARBS_CHOICES_MAX,
                        m);
    ps->choices = calloc(m, sizeof(char *));
    if (!ps->choices)
        return ST_ENOMEM;
    for (size_t i = 0; i < m; i++) {
        yaml_node_t *it = yaml_document_get_node(c->doc, v->data.sequence.items.start[i]);
        const char *s = cfg_scalar(it);
        if (!s || !choice_ok(s))
            return cfg_fail(c, it, f, ST_EINVAL,
                            "choice %zu must be a non-empty scalar without , \" {{ }} or newlines",
                            i);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(ps->choices[j], s))
                return cfg_fail(c, it, f, ST_EINVAL, "choice '%s' is given twice", s);
        if (!(ps->choices[i] = cfg_strdup(s)))
            return ST_ENOMEM;
        ps->p.n_choices = i + 1;
    }
    return ST_OK;
}

st_status cfg_load_when(ctx *c, const yaml_node_t *v, const char *f, runner_param_spec *ps)
{
    if (!v || v->type != YAML_MAPPING_NODE ||
        v->data.mapping.pairs.top - v->data.mapping.pairs.start != 1)
        return cfg_fail(c, v, f, ST_EINVAL,
                        "expected {parameter: choice} or {parameter: [choice, ...]}");
    yaml_node_t *k = yaml_document_get_node(c->doc, v->data.mapping.pairs.start->key);
    yaml_node_t *val = yaml_document_get_node(c->doc, v->data.mapping.pairs.start->value);
    const char *parent = cfg_scalar(k);
    if (!parent)
        return cfg_fail(c, k, f, ST_EINVAL, "the key must be a parameter's name");
    if (!(ps->p.active_if = cfg_strdup(parent)))
        return ST_ENOMEM;
    if (cfg_scalar(val)) {
        ps->when_values = calloc(1, sizeof(char *));
        if (!ps->when_values || !(ps->when_values[0] = cfg_strdup(cfg_scalar(val))))
            return ST_ENOMEM;
        ps->n_when = 1;
        return ST_OK;
    }
    if (val->type != YAML_SEQUENCE_NODE ||
        val->data.sequence.items.top == val->data.sequence.items.start)
        return cfg_fail(c, val, f, ST_EINVAL, "expected a choice or a non-empty list of them");
    return cfg_load_str_list(c, val, f, &ps->when_values, &ps->n_when);
}

st_status cfg_load_choices(ctx *c, const char *field, const yaml_node_t *map, runner_param_spec *ps)
{
    yaml_node_t *k, *v;
    const char *key;
    const yaml_node_t *center = NULL;
    carbs_param_init(&ps->p, NULL, CARBS_SPACE_CATEGORICAL, 0);
    st_status rc = ST_OK;
    FOREACH_PAIR(c, map, k, v, key)
    {
        char f[200];
        snprintf(f, sizeof(f), "%s.%s", field, key);
        if (!strcmp(key, "choices"))
            rc = load_choice_list(c, v, f, ps);
        else if (!strcmp(key, "space")) {
            if (!cfg_scalar(v) || strcmp(cfg_scalar(v), "categorical"))
                rc = cfg_fail(c, v, f, ST_EINVAL, "a parameter with choices is categorical");
        } else if (!strcmp(key, "center") || !strcmp(key, "centre"))
            center = v;
        else if (!strcmp(key, "when"))
            rc = cfg_load_when(c, v, f, ps);
        else
            rc = cfg_fail(c, k, field, ST_EINVAL,
                          "unknown key '%s' for a categorical parameter (choices, center, when)",
                          key);
        if (rc)
            return rc;
    }
    if (center) {
        const char *s = cfg_scalar(center);
        size_t i = 0;
        while (s && i < ps->p.n_choices && strcmp(ps->choices[i], s))
            i++;
        if (!s || i == ps->p.n_choices)
            return cfg_fail(c, center, field, ST_EINVAL, "center '%s' is not one of the choices",
                            s ? s : "");
        ps->p.center = (double)i;
    }
    ps->p.max = (double)(ps->p.n_choices - 1);
    return ST_OK;
}

/* The mask of a `when` on parameter i: its parent is an earlier searched categorical
 * parameter and every value one of its choices. */
static st_status resolve_one(ctx *c, const yaml_node_t *at, size_t i)
{
    runner_config *cfg = c->cfg;
    runner_param_spec *ps = &cfg->params[i];
    char f[200];
    snprintf(f, sizeof(f), "parameters.%s.when", ps->p.name);
    size_t j = 0;
    while (j < i && strcmp(cfg->params[j].p.name, ps->p.active_if))
        j++;
    if (j == i)
        return cfg_fail(c, at, f, ST_EINVAL, "'%s' is not a parameter given before this one",
                        ps->p.active_if);
    const runner_param_spec *pp = &cfg->params[j];
    if (pp->is_fixed || !pp->choices)
        return cfg_fail(c, at, f, ST_EINVAL, "'%s' is not a searched categorical parameter",
                        ps->p.active_if);
    for (size_t w = 0; w < ps->n_when; w++) {
        size_t k = 0;
        while (k < pp->p.n_choices && strcmp(pp->choices[k], ps->when_values[w]))
            k++;
        if (k == pp->p.n_choices)
            return cfg_fail(c, at, f, ST_EINVAL, "'%s' is not a choice of '%s'", ps->when_values[w],
                            pp->p.name);
        ps->p.active_mask |= (uint64_t)1 << k;
    }
    return ST_OK;
}

st_status cfg_resolve_when(ctx *c, const yaml_node_t *map)
{
    runner_config *cfg = c->cfg;
    for (size_t i = 0; i < cfg->n_params; i++) {
        if (!cfg->params[i].p.active_if)
            continue;
        if (cfg->params[i].is_fixed)
            return cfg_fail(c, map, "parameters", ST_EINVAL,
                            "'%s': a fixed parameter cannot have 'when'", cfg->params[i].p.name);
        st_status rc = resolve_one(c, map, i);
        if (rc)
            return rc;
    }
    return ST_OK;
}

void cfg_free_param(runner_param_spec *ps)
{
    free((char *)ps->p.name);
    free((char *)ps->p.active_if);
    free(ps->fixed_text);
    for (size_t i = 0; ps->choices && i < ps->p.n_choices; i++)
        free(ps->choices[i]);
    free(ps->choices);
    for (size_t i = 0; i < ps->n_when; i++)
        free(ps->when_values[i]);
    free(ps->when_values);
    free(ps->grid);
}

st_status cfg_load_grid(ctx *c, const yaml_node_t *v, const char *f, runner_param_spec *ps)
{
    if (cfg_scalar(v)) {
        double n;
        st_status rc = cfg_get_count(c, v, f, 1, 10000, &n);
        ps->n_grid = (size_t)n;
        return rc;
    }
    if (!v || v->type != YAML_SEQUENCE_NODE ||
        v->data.sequence.items.top == v->data.sequence.items.start)
        return cfg_fail(c, v, f, ST_EINVAL, "expected a number of points or a list of values");
    size_t m = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
    free(ps->grid);
    ps->grid = calloc(m, sizeof(double));
    if (!ps->grid)
        return ST_ENOMEM;
    for (size_t i = 0; i < m; i++) {
        yaml_node_t *it = yaml_document_get_node(c->doc, v->data.sequence.items.start[i]);
        st_status rc = cfg_get_number(c, it, f, &ps->grid[i]);
        if (rc)
            return rc;
        ps->n_grid = i + 1;
    }
    return ST_OK;
}

st_status cfg_load_method(ctx *c, const yaml_node_t *v)
{
    const char *s = cfg_scalar(v);
    static const char *const names[] = {"carbs", "grid", "random", "study"};
    for (size_t i = 0; s && i < 4; i++)
        if (!strcmp(s, names[i])) {
            c->cfg->method = (runner_method)i;
            c->method = v;
            return ST_OK;
        }
    return cfg_fail(c, v, "method", ST_EINVAL, "expected carbs, grid, random or study");
}

st_status cfg_check_method(ctx *c)
{
    runner_config *cfg = c->cfg;
    if (cfg->method == RUNNER_METHOD_STUDY)
        cfg->goal = RUNNER_GOAL_EXTRAPOLATE; /* checked with the optimizer block */
    else if (c->method && cfg->goal == RUNNER_GOAL_EXTRAPOLATE)
        return cfg_fail(c, c->method, "method", ST_EINVAL,
                        "optimizer.goal extrapolate is the study mode: method study (or leave "
                        "method out)");
    for (size_t i = 0; i < cfg->n_params; i++) {
        const runner_param_spec *ps = &cfg->params[i];
        char f[200];
        snprintf(f, sizeof(f), "parameters.%s", ps->p.name);
        if (ps->is_fixed || ps->choices)
            continue;
        int grid = cfg->method == RUNNER_METHOD_GRID, rnd = cfg->method == RUNNER_METHOD_RANDOM;
        if ((grid && !ps->grid) || rnd)
            if (!isfinite(ps->p.min) || !isfinite(ps->p.max))
                return cfg_fail(c, c->method, f, ST_EINVAL,
                                "method %s needs its min and max (or, for grid, grid: [values])",
                                grid ? "grid" : "random");
        for (size_t k = 0; ps->grid && k < ps->n_grid; k++)
            if (!(ps->grid[k] >= ps->p.min && ps->grid[k] <= ps->p.max))
                return cfg_fail(c, c->method ? c->method : NULL, f, ST_EINVAL,
                                "grid value %g is outside [%g, %g]", ps->grid[k], ps->p.min,
                                ps->p.max);
    }
    return ST_OK;
}

const char *runner_param_choice(const runner_param_spec *ps, double v)
{
    if (!ps->choices || ps->is_fixed || !(v >= 0) || v > (double)(ps->p.n_choices - 1) ||
        v != floor(v))
        return NULL;
    return ps->choices[(size_t)v];
}

st_status runner_param_parse(const runner_param_spec *ps, const char *text, double *out,
                             char *errmsg)
{
    char scratch[ST_ERRMSG_MAX];
    errmsg = errmsg ? errmsg : scratch;
    if (ps->p.active_if && (!*text || !strcmp(text, "none"))) {
        *out = NAN;
        return ST_OK;
    }
    if (ps->choices && !ps->is_fixed) {
        for (size_t i = 0; i < ps->p.n_choices; i++)
            if (!strcmp(ps->choices[i], text)) {
                *out = (double)i;
                return ST_OK;
            }
        return st_errf(errmsg, ST_EINVAL, "parameter '%s': '%s' is not one of its choices",
                       ps->p.name, text);
    }
    if (ps->is_fixed && !strcmp(text, ps->fixed_text)) {
        *out = ps->fixed_value;
        return ST_OK;
    }
    char *end;
    double d = strtod(text, &end);
    if (end == text || *end || !isfinite(d))
        return st_errf(errmsg, ST_EINVAL, "parameter '%s': '%s' is not a number", ps->p.name, text);
    *out = d;
    return ST_OK;
}

int runner_param_active(const runner_config *cfg, const double *x, size_t i)
{
    const runner_param_spec *ps = &cfg->params[i];
    if (!ps->p.active_if)
        return 1;
    for (size_t j = 0; j < i; j++)
        if (!strcmp(cfg->params[j].p.name, ps->p.active_if)) {
            double k = x[j];
            return runner_param_active(cfg, x, j) && k >= 0 && k < 64 && k == floor(k) &&
                   ((ps->p.active_mask >> (unsigned)k) & 1u);
        }
    return 1;
}

st_status runner_param_check(const runner_config *cfg, const double *x, size_t i, char *errmsg)
{
    char scratch[ST_ERRMSG_MAX];
    errmsg = errmsg ? errmsg : scratch;
    const runner_param_spec *ps = &cfg->params[i];
    double v = x[i];
    if (ps->is_fixed)
        return v == ps->fixed_value || (isnan(v) && isnan(ps->fixed_value))
                   ? ST_OK
                   : st_errf(errmsg, ST_EINVAL, "parameter '%s' = %g is not its fixed value",
                             ps->p.name, v);
    if (!runner_param_active(cfg, x, i))
        return isnan(v) ? ST_OK
                        : st_errf(errmsg, ST_EINVAL,
                                  "parameter '%s' is inactive here (%s is not one of its "
                                  "'when' choices, e.g. %s): give none (NaN), not %g",
                                  ps->p.name, ps->p.active_if, ps->when_values[0], v);
    /* the edges of a log or logit space are outside it, whatever the bounds say */
    int edge = ((ps->p.space == CARBS_SPACE_LOG || ps->p.space == CARBS_SPACE_LOGIT) && !(v > 0)) ||
               (ps->p.space == CARBS_SPACE_LOGIT && !(v < 1));
    if (!(v >= ps->p.min && v <= ps->p.max) || !isfinite(v) || edge)
        return st_errf(errmsg, ST_EINVAL, "parameter '%s' = %g is outside its bounds", ps->p.name,
                       v);
    if (ps->choices && v != floor(v))
        return st_errf(errmsg, ST_EINVAL, "parameter '%s' = %g is not a choice index", ps->p.name,
                       v);
    return ST_OK;
}

/* ---- constraints -------------------------------------------------------------------------- */

st_status cfg_load_constraints(ctx *c, const yaml_node_t *map)
{
    st_status rc = cfg_expect_map(c, map, "constraints");
    if (rc)
        return rc;
    runner_config *cfg = c->cfg;
    size_t m = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    cfg->con_names = calloc(m ? m : 1, sizeof(char *));
    cfg->con_le = calloc(m ? m : 1, sizeof(int));
    cfg->con_bound = calloc(m ? m : 1, sizeof(double));
    if (!cfg->con_names || !cfg->con_le || !cfg->con_bound)
        return ST_ENOMEM;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, map, k, v, key)
    {
        char f[200];
        snprintf(f, sizeof(f), "constraints.%s", key ? key : "?");
        const char *s = cfg_scalar(v);
        if (!key || !*key)
            return cfg_fail(c, k, "constraints", ST_EINVAL, "keys must be metric names");
        while (s && *s == ' ')
            s++;
        int le = s && !strncmp(s, "<=", 2), ge = s && !strncmp(s, ">=", 2);
        char *end = NULL;
        double b = (le || ge) ? strtod(s + 2, &end) : NAN;
        while (end && *end == ' ')
            end++;
        if (!(le || ge) || !end || end == s + 2 || *end || !isfinite(b))
            return cfg_fail(c, v, f, ST_EINVAL, "expected \"<= NUMBER\" or \">= NUMBER\"");
        size_t i = cfg->n_con;
        if (!(cfg->con_names[i] = cfg_strdup(key)))
            return ST_ENOMEM;
        cfg->con_le[i] = le;
        cfg->con_bound[i] = b;
        cfg->n_con = i + 1;
    }
    return ST_OK;
}

int runner_constraints_broken(const runner_config *cfg, const char *final, char *why, size_t cap)
{
    if (!cfg->n_con || !final)
        return 0;
    json_t *root = json_loads(final, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    json_t *nested = json_object_get(root, "constraints");
    int broken = 0;
    for (size_t i = 0; i < cfg->n_con && !broken; i++) {
        json_t *v = json_object_get(nested, cfg->con_names[i]);
        if (!v)
            v = json_object_get(root, cfg->con_names[i]);
        if (!v)
            continue; /* not reported: taken as held */
        double x = json_is_number(v) ? json_number_value(v) : NAN;
        broken = cfg->con_le[i] ? !(x <= cfg->con_bound[i]) : !(x >= cfg->con_bound[i]);
        if (broken && why && cap)
            snprintf(why, cap, "constraint %s %s %g broken: %g", cfg->con_names[i],
                     cfg->con_le[i] ? "<=" : ">=", cfg->con_bound[i], x);
    }
    json_decref(root);
    return broken;
}

/* ---- the parameters block
 * -------------------------------------------------------------------------- */

static st_status load_param(ctx *c, const char *name, const yaml_node_t *map, runner_param_spec *ps)
{
    char field[160];
    snprintf(field, sizeof(field), "parameters.%s", name);
    st_status rc = cfg_expect_map(c, map, field);
    if (rc)
        return rc;
    yaml_node_t *k, *v;
    const char *key;
    int has_space = 0, has_center = 0, has_value = 0, other = 0;
    const yaml_node_t *space_node = NULL, *center_node = map;
    FOREACH_PAIR(c, map, k, v, key)
    {
        if (!key)
            return cfg_fail(c, k, field, ST_EINVAL, "keys must be strings");
        if (!strcmp(key, "value"))
            has_value = 1;
        else
            other = 1;
        if (!strcmp(key, "space")) {
            has_space = 1;
            space_node = v;
        }
        if (!strcmp(key, "choices"))
            return cfg_load_choices(c, field, map, ps); /* config_param.c */
    }
    if (has_value) {
        if (other)
            return cfg_fail(c, map, field, ST_EINVAL, "a fixed parameter has only 'value'");
        FOREACH_PAIR(c, map, k, v, key)
        {
            const char *s = cfg_scalar(v);
            if (!s)
                return cfg_fail(c, v, field, ST_EINVAL, "value must be a scalar");
            ps->is_fixed = 1;
            free(ps->fixed_text);
            ps->fixed_text = cfg_strdup(s);
            if (!ps->fixed_text)
                return ST_ENOMEM;
            char *end;
            double d = strtod(s, &end);
            ps->fixed_value = (end != s && !*end) ? d : NAN;
        }
        return ST_OK;
    }
    if (!has_space)
        return cfg_fail(c, map, field, ST_EINVAL,
                        "needs 'space' (linear, log, logit), 'choices' or 'value'");

    carbs_space_kind kind;
    const char *sp = cfg_scalar(space_node);
    char sfield[200];
    snprintf(sfield, sizeof(sfield), "%s.space", field);
    if (sp && !strcmp(sp, "linear"))
        kind = CARBS_SPACE_LINEAR;
    else if (sp && !strcmp(sp, "log"))
        kind = CARBS_SPACE_LOG;
    else if (sp && !strcmp(sp, "logit"))
        kind = CARBS_SPACE_LOGIT;
    else
        return cfg_fail(c, space_node, sfield, ST_EINVAL, "expected linear, log or logit");
    carbs_param_init(&ps->p, NULL, kind, NAN);

    FOREACH_PAIR(c, map, k, v, key)
    {
        char f[200];
        snprintf(f, sizeof(f), "%s.%s", field, key);
        if (!strcmp(key, "space"))
            continue;
        else if (!strcmp(key, "min"))
            rc = cfg_get_number(c, v, f, &ps->p.min);
        else if (!strcmp(key, "max"))
            rc = cfg_get_number(c, v, f, &ps->p.max);
        else if (!strcmp(key, "center") || !strcmp(key, "centre")) {
            rc = cfg_get_number(c, v, f, &ps->p.center);
            has_center = 1;
            center_node = v;
        } else if (!strcmp(key, "scale"))
            rc = cfg_get_number(c, v, f, &ps->p.scale);
        else if (!strcmp(key, "base"))
            rc = cfg_get_number(c, v, f, &ps->p.base);
        else if (!strcmp(key, "integer"))
            rc = cfg_get_bool(c, v, f, &ps->p.is_integer);
        else if (!strcmp(key, "rounding"))
            rc = cfg_get_number(c, v, f, &ps->p.rounding);
        else if (!strcmp(key, "when"))
            rc = cfg_load_when(c, v, f, ps);
        else if (!strcmp(key, "grid"))
            rc = cfg_load_grid(c, v, f, ps);
        else
            rc = cfg_fail(c, k, field, ST_EINVAL,
                          "unknown key '%s' (space, min, max, center, scale, base, integer, "
                          "rounding, when, grid, choices, value)",
                          key);
        if (rc)
            return rc;
    }
    if (!has_center)
        return cfg_fail(c, center_node, field, ST_EINVAL,
                        "needs 'center' (where the search starts)");
    if (!(ps->p.min < ps->p.max))
        return cfg_fail(c, map, field, ST_EINVAL, "min must be below max");
    int at_bound = ps->p.is_integer && (ps->p.center == ps->p.min || ps->p.center == ps->p.max);
    if (!at_bound && !(ps->p.center > ps->p.min && ps->p.center < ps->p.max))
        return cfg_fail(c, center_node, field, ST_EINVAL, "center %g is not inside (%g, %g)",
                        ps->p.center, ps->p.min, ps->p.max);
    if (kind == CARBS_SPACE_LOG && ps->p.min < 0)
        return cfg_fail(c, map, field, ST_EINVAL, "a log space needs min >= 0");
    if (kind == CARBS_SPACE_LOGIT && (ps->p.min < 0 || ps->p.max > 1))
        return cfg_fail(c, map, field, ST_EINVAL, "a logit space lies within [0, 1]");
    if (!(ps->p.scale > 0 || isnan(ps->p.scale)) || !(ps->p.rounding > 0) || !(ps->p.base > 1))
        return cfg_fail(c, map, field, ST_EINVAL, "scale and rounding must be > 0, base > 1");
    return ST_OK;
}

st_status cfg_load_params(ctx *c, const yaml_node_t *map)
{
    st_status rc = cfg_expect_map(c, map, "parameters");
    if (rc)
        return rc;
    size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    if (n == 0)
        return cfg_fail(c, map, "parameters", ST_EINVAL, "at least one parameter is needed");
    runner_config *cfg = c->cfg;
    cfg->params = calloc(n, sizeof(*cfg->params));
    if (!cfg->params)
        return ST_ENOMEM;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, map, k, v, key)
    {
        if (!key || !*key)
            return cfg_fail(c, k, "parameters", ST_EINVAL, "parameter names must be strings");
        for (const char *q = key; *q; q++)
            if (!(*q == '_' || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
                  (*q >= '0' && *q <= '9')))
                return cfg_fail(c, k, "parameters", ST_EINVAL,
                                "name '%s': use letters, digits and '_'", key);
        if (key[0] == '_')
            return cfg_fail(c, k, "parameters", ST_EINVAL, "names starting with '_' are reserved");
        for (size_t i = 0; i < cfg->n_params; i++)
            if (!strcmp(cfg->params[i].p.name, key))
                return cfg_fail(c, k, "parameters", ST_EINVAL, "duplicate parameter '%s'", key);
        runner_param_spec *ps = &cfg->params[cfg->n_params];
        ps->fixed_value = NAN;
        rc = load_param(c, key, v, ps);
        char *name = cfg_strdup(key);
        if (!name)
            return ST_ENOMEM;
        ps->p.name = name;
        cfg->n_params++;
        if (rc)
            return rc;
    }
    /* all fixed is fine: a one-run sweep (the recommended large run) searches nothing */
    return cfg_resolve_when(c, map);
}
