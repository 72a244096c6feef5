/*
 * config.c — sweep files (docs/config.md): YAML read with libyaml's document API, every field
 * validated with file:line:col in the message, unknown keys refused. Also the names of run
 * statuses and failure kinds. Not the controller: a config is plain data once loaded.
 * Depends on libyaml, carbs/ (option names and parameter checks) and expr.c/template.c.
 */
#include "runner/runner_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

typedef struct ctx {
    const char *label;
    char *errmsg; /* ST_ERRMSG_MAX bytes, never NULL inside */
    yaml_document_t *doc;
    runner_config *cfg;
} ctx;

static st_status fail(ctx *c, const yaml_node_t *n, const char *field, st_status s, const char *fmt,
                      ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static st_status fail(ctx *c, const yaml_node_t *n, const char *field, st_status s, const char *fmt,
                      ...)
{
    char msg[ST_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (n)
        snprintf(c->errmsg, ST_ERRMSG_MAX, "%.160s:%zu:%zu: %.100s: %.240s", c->label,
                 (size_t)n->start_mark.line + 1, (size_t)n->start_mark.column + 1, field, msg);
    else
        snprintf(c->errmsg, ST_ERRMSG_MAX, "%.160s: %.100s: %.240s", c->label, field, msg);
    return s;
}

static const char *scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static char *xstrdup(const char *s)
{
    size_t l = strlen(s) + 1;
    char *d = malloc(l);
    if (d)
        memcpy(d, s, l);
    return d;
}

static st_status get_string(ctx *c, const yaml_node_t *n, const char *field, char **out)
{
    const char *s = scalar(n);
    if (!s)
        return fail(c, n, field, ST_EINVAL, "expected a string");
    if (!*s)
        return fail(c, n, field, ST_EINVAL, "must not be empty");
    free(*out);
    *out = xstrdup(s);
    return *out ? ST_OK : ST_ENOMEM;
}

static st_status get_number(ctx *c, const yaml_node_t *n, const char *field, double *out)
{
    const char *s = scalar(n);
    if (!s)
        return fail(c, n, field, ST_EINVAL, "expected a number");
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!strcmp(s, ".inf") || !strcmp(s, "inf"))
        v = INFINITY, end = (char *)s + strlen(s);
    else if (!strcmp(s, "-.inf") || !strcmp(s, "-inf"))
        v = -INFINITY, end = (char *)s + strlen(s);
    if (end == s || *end || isnan(v) || errno == ERANGE)
        return fail(c, n, field, ST_EINVAL, "expected a number, got '%s'", s);
    *out = v;
    return ST_OK;
}

static st_status get_count(ctx *c, const yaml_node_t *n, const char *field, double min, double max,
                           double *out)
{
    double v = 0;
    *out = 0; /* callers convert *out to an integer type: never leave it out of range */
    st_status rc = get_number(c, n, field, &v);
    if (rc)
        return rc;
    if (floor(v) != v || v < min || v > max)
        return fail(c, n, field, ST_EINVAL, "expected an integer in [%g, %g], got '%s'", min, max,
                    scalar(n));
    *out = v;
    return ST_OK;
}

static st_status get_bool(ctx *c, const yaml_node_t *n, const char *field, int *out)
{
    const char *s = scalar(n);
    if (s && (!strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "on")))
        *out = 1;
    else if (s && (!strcmp(s, "false") || !strcmp(s, "no") || !strcmp(s, "off")))
        *out = 0;
    else
        return fail(c, n, field, ST_EINVAL, "expected true or false");
    return ST_OK;
}

static st_status expect_map(ctx *c, const yaml_node_t *n, const char *field)
{
    if (!n || n->type != YAML_MAPPING_NODE)
        return fail(c, n, field, ST_EINVAL, "expected a mapping ({key: value, ...})");
    return ST_OK;
}

#define FOREACH_PAIR(c, map, k, v, key)                                                            \
    for (yaml_node_pair_t *p_ = (map)->data.mapping.pairs.start;                                   \
         p_ < (map)->data.mapping.pairs.top &&                                                     \
         ((k) = yaml_document_get_node((c)->doc, p_->key),                                         \
         (v) = yaml_document_get_node((c)->doc, p_->value), (key) = scalar(k), 1);                 \
         p_++)

/* ---- parameters -------------------------------------------------------------------------- */

static st_status load_param(ctx *c, const char *name, const yaml_node_t *map, runner_param_spec *ps)
{
    char field[160];
    snprintf(field, sizeof(field), "parameters.%s", name);
    st_status rc = expect_map(c, map, field);
    if (rc)
        return rc;
    yaml_node_t *k, *v;
    const char *key;
    int has_space = 0, has_center = 0, has_value = 0, other = 0;
    const yaml_node_t *space_node = NULL, *center_node = map;
    FOREACH_PAIR(c, map, k, v, key)
    {
        if (!key)
            return fail(c, k, field, ST_EINVAL, "keys must be strings");
        if (!strcmp(key, "value"))
            has_value = 1;
        else
            other = 1;
        if (!strcmp(key, "space")) {
            has_space = 1;
            space_node = v;
        }
    }
    if (has_value) {
        if (other)
            return fail(c, map, field, ST_EINVAL, "a fixed parameter has only 'value'");
        FOREACH_PAIR(c, map, k, v, key)
        {
            const char *s = scalar(v);
            if (!s)
                return fail(c, v, field, ST_EINVAL, "value must be a scalar");
            ps->is_fixed = 1;
            free(ps->fixed_text);
            ps->fixed_text = xstrdup(s);
            if (!ps->fixed_text)
                return ST_ENOMEM;
            char *end;
            double d = strtod(s, &end);
            ps->fixed_value = (end != s && !*end) ? d : NAN;
        }
        return ST_OK;
    }
    if (!has_space)
        return fail(c, map, field, ST_EINVAL, "needs 'space' (linear, log, logit) or 'value'");

    carbs_space_kind kind;
    const char *sp = scalar(space_node);
    char sfield[200];
    snprintf(sfield, sizeof(sfield), "%s.space", field);
    if (sp && !strcmp(sp, "linear"))
        kind = CARBS_SPACE_LINEAR;
    else if (sp && !strcmp(sp, "log"))
        kind = CARBS_SPACE_LOG;
    else if (sp && !strcmp(sp, "logit"))
        kind = CARBS_SPACE_LOGIT;
    else
        return fail(c, space_node, sfield, ST_EINVAL, "expected linear, log or logit");
    carbs_param_init(&ps->p, NULL, kind, NAN);

    FOREACH_PAIR(c, map, k, v, key)
    {
        char f[200];
        snprintf(f, sizeof(f), "%s.%s", field, key);
        if (!strcmp(key, "space"))
            continue;
        else if (!strcmp(key, "min"))
            rc = get_number(c, v, f, &ps->p.min);
        else if (!strcmp(key, "max"))
            rc = get_number(c, v, f, &ps->p.max);
        else if (!strcmp(key, "center") || !strcmp(key, "centre")) {
            rc = get_number(c, v, f, &ps->p.center);
            has_center = 1;
            center_node = v;
        } else if (!strcmp(key, "scale"))
            rc = get_number(c, v, f, &ps->p.scale);
        else if (!strcmp(key, "base"))
            rc = get_number(c, v, f, &ps->p.base);
        else if (!strcmp(key, "integer"))
            rc = get_bool(c, v, f, &ps->p.is_integer);
        else if (!strcmp(key, "rounding"))
            rc = get_number(c, v, f, &ps->p.rounding);
        else
            rc = fail(c, k, field, ST_EINVAL,
                      "unknown key '%s' (space, min, max, center, scale, base, integer, "
                      "rounding, value)",
                      key);
        if (rc)
            return rc;
    }
    if (!has_center)
        return fail(c, center_node, field, ST_EINVAL, "needs 'center' (where the search starts)");
    if (!(ps->p.min < ps->p.max))
        return fail(c, map, field, ST_EINVAL, "min must be below max");
    int at_bound = ps->p.is_integer && (ps->p.center == ps->p.min || ps->p.center == ps->p.max);
    if (!at_bound && !(ps->p.center > ps->p.min && ps->p.center < ps->p.max))
        return fail(c, center_node, field, ST_EINVAL, "center %g is not inside (%g, %g)",
                    ps->p.center, ps->p.min, ps->p.max);
    if (kind == CARBS_SPACE_LOG && ps->p.min < 0)
        return fail(c, map, field, ST_EINVAL, "a log space needs min >= 0");
    if (kind == CARBS_SPACE_LOGIT && (ps->p.min < 0 || ps->p.max > 1))
        return fail(c, map, field, ST_EINVAL, "a logit space lies within [0, 1]");
    if (!(ps->p.scale > 0) || !(ps->p.rounding > 0) || !(ps->p.base > 1))
        return fail(c, map, field, ST_EINVAL, "scale and rounding must be > 0, base > 1");
    return ST_OK;
}

static st_status load_params(ctx *c, const yaml_node_t *map)
{
    st_status rc = expect_map(c, map, "parameters");
    if (rc)
        return rc;
    size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    if (n == 0)
        return fail(c, map, "parameters", ST_EINVAL, "at least one parameter is needed");
    runner_config *cfg = c->cfg;
    cfg->params = calloc(n, sizeof(*cfg->params));
    if (!cfg->params)
        return ST_ENOMEM;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, map, k, v, key)
    {
        if (!key || !*key)
            return fail(c, k, "parameters", ST_EINVAL, "parameter names must be strings");
        for (const char *q = key; *q; q++)
            if (!(*q == '_' || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
                  (*q >= '0' && *q <= '9')))
                return fail(c, k, "parameters", ST_EINVAL, "name '%s': use letters, digits and '_'",
                            key);
        if (key[0] == '_')
            return fail(c, k, "parameters", ST_EINVAL, "names starting with '_' are reserved");
        for (size_t i = 0; i < cfg->n_params; i++)
            if (!strcmp(cfg->params[i].p.name, key))
                return fail(c, k, "parameters", ST_EINVAL, "duplicate parameter '%s'", key);
        runner_param_spec *ps = &cfg->params[cfg->n_params];
        ps->fixed_value = NAN;
        rc = load_param(c, key, v, ps);
        char *name = xstrdup(key);
        if (!name)
            return ST_ENOMEM;
        ps->p.name = name;
        cfg->n_params++;
        if (rc)
            return rc;
    }
    if (runner_config_dim(cfg) == 0)
        return fail(c, map, "parameters", ST_EINVAL, "at least one parameter must be searched");
    return ST_OK;
}

/* ---- other sections ---------------------------------------------------------------------- */

static st_status load_str_list(ctx *c, const yaml_node_t *n, const char *field, char ***out,
                               size_t *count)
{
    if (!n || n->type != YAML_SEQUENCE_NODE)
        return fail(c, n, field, ST_EINVAL,
                    "expected a list of arguments [\"prog\", \"--flag\", \"{param}\"] (never "
                    "run through a shell)");
    size_t m = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (m == 0)
        return fail(c, n, field, ST_EINVAL, "must not be empty");
    *out = calloc(m, sizeof(char *));
    if (!*out)
        return ST_ENOMEM;
    for (size_t i = 0; i < m; i++) {
        yaml_node_t *it = yaml_document_get_node(c->doc, n->data.sequence.items.start[i]);
        const char *s = scalar(it);
        if (!s)
            return fail(c, it, field, ST_EINVAL, "item %zu is not a scalar", i);
        (*out)[i] = xstrdup(s);
        if (!(*out)[i])
            return ST_ENOMEM;
        *count = i + 1;
    }
    return ST_OK;
}

static st_status load_env(ctx *c, const yaml_node_t *map)
{
    st_status rc = expect_map(c, map, "env");
    if (rc)
        return rc;
    size_t m = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    c->cfg->env = calloc(m ? m : 1, sizeof(char *));
    if (!c->cfg->env)
        return ST_ENOMEM;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, map, k, v, key)
    {
        const char *val = scalar(v);
        if (!key || !*key || strchr(key, '='))
            return fail(c, k, "env", ST_EINVAL, "variable names are non-empty, without '='");
        if (!val)
            return fail(c, v, "env", ST_EINVAL, "value of %s must be a scalar", key);
        size_t l = strlen(key) + strlen(val) + 2;
        char *kv = malloc(l);
        if (!kv)
            return ST_ENOMEM;
        snprintf(kv, l, "%s=%s", key, val);
        c->cfg->env[c->cfg->n_env++] = kv;
    }
    return ST_OK;
}

static st_status load_objective(ctx *c, const yaml_node_t *map)
{
    st_status rc = expect_map(c, map, "objective");
    if (rc)
        return rc;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, map, k, v, key)
    {
        if (key && !strcmp(key, "metric"))
            rc = get_string(c, v, "objective.metric", &c->cfg->objective);
        else if (key && !strcmp(key, "goal")) {
            const char *g = scalar(v);
            if (g && !strcmp(g, "minimize"))
                c->cfg->maximize = 0;
            else if (g && !strcmp(g, "maximize"))
                c->cfg->maximize = 1;
            else
                rc = fail(c, v, "objective.goal", ST_EINVAL, "expected minimize or maximize");
        } else
            rc = fail(c, k, "objective", ST_EINVAL, "unknown key '%s' (metric, goal)",
                      key ? key : "?");
        if (rc)
            return rc;
    }
    if (!c->cfg->objective)
        return fail(c, map, "objective", ST_EINVAL, "needs 'metric'");
    return ST_OK;
}

static st_status load_cost(ctx *c, const yaml_node_t *map)
{
    st_status rc = expect_map(c, map, "cost");
    if (rc)
        return rc;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, map, k, v, key)
    {
        if (key && !strcmp(key, "metric"))
            rc = get_string(c, v, "cost.metric", &c->cfg->cost_metric);
        else if (key && !strcmp(key, "expr"))
            rc = get_string(c, v, "cost.expr", &c->cfg->cost_expr);
        else
            rc = fail(c, k, "cost", ST_EINVAL, "unknown key '%s' (metric, expr)", key ? key : "?");
        if (rc)
            return rc;
    }
    if (!c->cfg->cost_metric)
        return fail(c, map, "cost", ST_EINVAL, "needs 'metric' (e.g. flops or wall_seconds)");
    return ST_OK;
}

static st_status load_budget(ctx *c, const yaml_node_t *map)
{
    st_status rc = expect_map(c, map, "budget");
    if (rc)
        return rc;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, map, k, v, key)
    {
        double d = 0;
        if (key && !strcmp(key, "runs")) {
            rc = get_count(c, v, "budget.runs", 1, 1e9, &d);
            c->cfg->budget_runs = (size_t)d;
        } else if (key && !strcmp(key, "cost")) {
            rc = get_number(c, v, "budget.cost", &c->cfg->budget_cost);
            if (!rc && !(c->cfg->budget_cost > 0))
                rc = fail(c, v, "budget.cost", ST_EINVAL, "must be > 0");
        } else if (key && !strcmp(key, "max_cost_per_run")) {
            rc = get_number(c, v, "budget.max_cost_per_run", &c->cfg->max_cost_per_run);
            if (!rc && !(c->cfg->max_cost_per_run > 0))
                rc = fail(c, v, "budget.max_cost_per_run", ST_EINVAL, "must be > 0");
        } else
            rc = fail(c, k, "budget", ST_EINVAL, "unknown key '%s' (runs, cost, max_cost_per_run)",
                      key ? key : "?");
        if (rc)
            return rc;
    }
    if (c->cfg->budget_runs == 0 && isinf(c->cfg->budget_cost))
        return fail(c, map, "budget", ST_EINVAL, "needs 'runs' or 'cost' (a sweep must end)");
    return ST_OK;
}

static st_status load_parallel(ctx *c, const yaml_node_t *n)
{
    double d;
    st_status rc;
    if (scalar(n)) {
        rc = get_count(c, n, "parallel", 1, 4096, &d);
        c->cfg->slots = (size_t)d;
        return rc;
    }
    rc = expect_map(c, n, "parallel");
    if (rc)
        return rc;
    int has_slots = 0;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, n, k, v, key)
    {
        if (key && !strcmp(key, "slots")) {
            rc = get_count(c, v, "parallel.slots", 1, 4096, &d);
            c->cfg->slots = (size_t)d;
            has_slots = 1;
        } else if (key && !strcmp(key, "gpus")) {
            if (v->type != YAML_SEQUENCE_NODE)
                return fail(c, v, "parallel.gpus", ST_EINVAL, "expected a list of GPU ids");
            size_t m = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
            free(c->cfg->gpus);
            c->cfg->gpus = calloc(m ? m : 1, sizeof(int));
            if (!c->cfg->gpus)
                return ST_ENOMEM;
            c->cfg->n_gpus = 0;
            for (size_t i = 0; i < m && !rc; i++) {
                yaml_node_t *it = yaml_document_get_node(c->doc, v->data.sequence.items.start[i]);
                rc = get_count(c, it, "parallel.gpus", 0, 65535, &d);
                c->cfg->gpus[c->cfg->n_gpus++] = (int)d;
            }
        } else
            rc = fail(c, k, "parallel", ST_EINVAL, "unknown key '%s' (slots, gpus)",
                      key ? key : "?");
        if (rc)
            return rc;
    }
    if (!has_slots)
        c->cfg->slots = c->cfg->n_gpus ? c->cfg->n_gpus : 1;
    if (c->cfg->n_gpus && c->cfg->n_gpus < c->cfg->slots)
        return fail(c, n, "parallel", ST_EINVAL, "%zu slots need at least as many GPUs (%zu)",
                    c->cfg->slots, c->cfg->n_gpus);
    return ST_OK;
}

static st_status load_retries(ctx *c, const yaml_node_t *n)
{
    double d;
    st_status rc;
    if (scalar(n)) {
        rc = get_count(c, n, "retries", 0, 1000, &d);
        c->cfg->retries = (unsigned)d;
        return rc;
    }
    rc = expect_map(c, n, "retries");
    if (rc)
        return rc;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, n, k, v, key)
    {
        if (key && !strcmp(key, "infrastructure")) {
            rc = get_count(c, v, "retries.infrastructure", 0, 1000, &d);
            c->cfg->retries = (unsigned)d;
        } else if (key && !strcmp(key, "backoff_seconds")) {
            rc = get_number(c, v, "retries.backoff_seconds", &c->cfg->backoff_seconds);
            if (!rc && !(c->cfg->backoff_seconds >= 0 && isfinite(c->cfg->backoff_seconds)))
                rc = fail(c, v, "retries.backoff_seconds", ST_EINVAL, "must be >= 0");
        } else if (key && !strcmp(key, "backoff_max_seconds")) {
            rc = get_number(c, v, "retries.backoff_max_seconds", &c->cfg->backoff_max_seconds);
            if (!rc && !(c->cfg->backoff_max_seconds >= 0))
                rc = fail(c, v, "retries.backoff_max_seconds", ST_EINVAL, "must be >= 0");
        } else
            rc = fail(c, k, "retries", ST_EINVAL,
                      "unknown key '%s' (infrastructure, backoff_seconds, backoff_max_seconds)",
                      key ? key : "?");
        if (rc)
            return rc;
    }
    return ST_OK;
}

static st_status load_timeouts(ctx *c, const yaml_node_t *n)
{
    st_status rc = expect_map(c, n, "timeouts");
    if (rc)
        return rc;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, n, k, v, key)
    {
        double *dst = NULL;
        char f[96];
        snprintf(f, sizeof(f), "timeouts.%s", key ? key : "?");
        if (key && !strcmp(key, "wall_seconds"))
            dst = &c->cfg->wall_seconds;
        else if (key && !strcmp(key, "no_metrics_seconds"))
            dst = &c->cfg->no_metrics_seconds;
        else if (key && !strcmp(key, "straggler_factor"))
            dst = &c->cfg->straggler_factor;
        else if (key && !strcmp(key, "kill_grace_seconds"))
            dst = &c->cfg->kill_grace_seconds;
        else
            return fail(c, k, "timeouts", ST_EINVAL,
                        "unknown key '%s' (wall_seconds, no_metrics_seconds, straggler_factor, "
                        "kill_grace_seconds)",
                        key ? key : "?");
        rc = get_number(c, v, f, dst);
        if (!rc && !(*dst >= 0))
            rc = fail(c, v, f, ST_EINVAL, "must be >= 0");
        if (!rc && dst != &c->cfg->straggler_factor && dst != &c->cfg->kill_grace_seconds &&
            *dst == 0)
            rc = fail(c, v, f, ST_EINVAL, "must be > 0 (leave it out for no limit)");
        if (rc)
            return rc;
    }
    return ST_OK;
}

static st_status load_optimizer(ctx *c, const yaml_node_t *map)
{
    st_status rc = expect_map(c, map, "optimizer");
    if (rc)
        return rc;
    size_t m = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    c->cfg->opt_names = calloc(m ? m : 1, sizeof(char *));
    c->cfg->opt_values = calloc(m ? m : 1, sizeof(char *));
    if (!c->cfg->opt_names || !c->cfg->opt_values)
        return ST_ENOMEM;
    carbs_options o = carbs_options_default();
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, map, k, v, key)
    {
        const char *val = scalar(v);
        char f[96], em[ST_ERRMSG_MAX] = "";
        snprintf(f, sizeof(f), "optimizer.%s", key ? key : "?");
        if (!key || !val)
            return fail(c, v, f, ST_EINVAL, "expected 'name: value' scalars");
        if (!strcmp(key, "seed") || !strcmp(key, "maximize"))
            return fail(c, k, f, ST_EINVAL, "set it with the top-level '%s'",
                        !strcmp(key, "seed") ? "seed" : "objective.goal");
        st_status s = carbs_options_set(&o, key, val, em);
        if (s == ST_ENOTFOUND)
            return fail(c, k, f, ST_EINVAL, "unknown optimizer option (see docs/config.md)");
        if (s)
            return fail(c, v, f, ST_EINVAL, "%s", *em ? em : "bad value");
        c->cfg->opt_names[c->cfg->n_opts] = xstrdup(key);
        c->cfg->opt_values[c->cfg->n_opts] = xstrdup(val);
        c->cfg->n_opts++;
        if (!c->cfg->opt_names[c->cfg->n_opts - 1] || !c->cfg->opt_values[c->cfg->n_opts - 1])
            return ST_ENOMEM;
    }
    return ST_OK;
}

/* ---- backend ----------------------------------------------------------------------------- */

/* Slurm's time formats: "M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S", or a number of minutes;
 * seconds round up to a whole minute. 0 on a bad string. */
static unsigned parse_time_limit(const char *s)
{
    unsigned long f[4] = {0, 0, 0, 0}, days = 0;
    size_t n = 0;
    const char *p = s;
    const char *dash = strchr(s, '-');
    char *end;
    if (dash) {
        days = strtoul(s, &end, 10);
        if (end != dash || dash == s)
            return 0;
        p = dash + 1;
    }
    while (n < 3) {
        if (*p < '0' || *p > '9')
            return 0;
        f[n++] = strtoul(p, &end, 10);
        if (*end == '\0')
            break;
        if (*end != ':')
            return 0;
        p = end + 1;
    }
    if (*end != '\0')
        return 0;
    double min;
    if (dash) /* D-H, D-H:M, D-H:M:S */
        min = days * 1440.0 + f[0] * 60.0 + (n > 1 ? f[1] : 0) + (n > 2 ? ceil(f[2] / 60.0) : 0);
    else if (n == 1) /* M */
        min = f[0];
    else if (n == 2) /* M:S */
        min = f[0] + ceil(f[1] / 60.0);
    else /* H:M:S */
        min = f[0] * 60.0 + f[1] + ceil(f[2] / 60.0);
    return min >= 1 && min < 4294967295.0 ? (unsigned)min : 0;
}

static st_status get_policy(ctx *c, const yaml_node_t *n, const char *field, int allow_fail,
                            runner_slurm_policy *out)
{
    const char *s = scalar(n);
    if (s && !strcmp(s, "retry"))
        *out = RUNNER_SLURM_RETRY;
    else if (s && allow_fail && !strcmp(s, "fail"))
        *out = RUNNER_SLURM_FAIL;
    else if (s && !allow_fail && !strcmp(s, "stop"))
        *out = RUNNER_SLURM_STOP;
    else
        return fail(c, n, field, ST_EINVAL,
                    allow_fail ? "expected fail or retry" : "expected retry or stop");
    return ST_OK;
}

static st_status get_positive(ctx *c, const yaml_node_t *n, const char *field, double *out)
{
    st_status rc = get_number(c, n, field, out);
    if (!rc && !(*out > 0 && isfinite(*out)))
        rc = fail(c, n, field, ST_EINVAL, "must be a finite number > 0");
    return rc;
}

static st_status load_rest(ctx *c, const yaml_node_t *map)
{
    runner_slurm_config *sc = &c->cfg->slurm;
    st_status rc = expect_map(c, map, "backend.rest");
    if (rc)
        return rc;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, map, k, v, key)
    {
        char f[96];
        snprintf(f, sizeof(f), "backend.rest.%s", key ? key : "?");
        if (key && !strcmp(key, "url")) {
            rc = get_string(c, v, f, &sc->rest_url);
            if (!rc && strncmp(sc->rest_url, "http://", 7) && strncmp(sc->rest_url, "https://", 8))
                rc = fail(c, v, f, ST_EINVAL, "expected http://host:port or https://...");
            size_t l = rc ? 0 : strlen(sc->rest_url);
            while (l > 8 && sc->rest_url[l - 1] == '/') /* the API paths add their own '/' */
                sc->rest_url[--l] = '\0';
        } else if (key && !strcmp(key, "socket")) {
            rc = get_string(c, v, f, &sc->rest_socket);
        } else if (key && !strcmp(key, "user")) {
            rc = get_string(c, v, f, &sc->rest_user);
        } else if (key && !strcmp(key, "token_env")) {
            rc = get_string(c, v, f, &sc->token_env);
        } else if (key && !strcmp(key, "token_file")) {
            rc = get_string(c, v, f, &sc->token_file);
        } else {
            rc = fail(c, k, "backend.rest", ST_EINVAL,
                      "unknown key '%s' (url, socket, user, token_env, token_file)",
                      key ? key : "?");
        }
        if (rc)
            return rc;
    }
    if (!sc->rest_url == !sc->rest_socket)
        return fail(c, map, "backend.rest", ST_EINVAL,
                    "needs exactly one of 'url' (JWT) and 'socket' (local authentication)");
    if (sc->token_env && sc->token_file)
        return fail(c, map, "backend.rest", ST_EINVAL,
                    "the token comes from 'token_env' or 'token_file', not both");
    if (sc->rest_socket && (sc->token_env || sc->token_file))
        return fail(c, map, "backend.rest", ST_EINVAL,
                    "a unix socket uses local authentication: no token");
    if (sc->rest_url && !sc->token_file && !sc->token_env) {
        sc->token_env = xstrdup("SLURM_JWT");
        if (!sc->token_env)
            return ST_ENOMEM;
    }
    return ST_OK;
}

static st_status load_backend(ctx *c, const yaml_node_t *map)
{
    runner_config *cfg = c->cfg;
    runner_slurm_config *sc = &cfg->slurm;
    st_status rc = expect_map(c, map, "backend");
    if (rc)
        return rc;
    yaml_node_t *k, *v;
    const char *key;
    const yaml_node_t *kind = NULL, *rest = NULL, *slurm_only = NULL;
    FOREACH_PAIR(c, map, k, v, key)
    {
        char f[96];
        double d;
        snprintf(f, sizeof(f), "backend.%s", key ? key : "?");
        if (!key)
            return fail(c, k, "backend", ST_EINVAL, "keys must be strings");
        if (strcmp(key, "kind"))
            slurm_only = k;
        if (!strcmp(key, "kind")) {
            const char *s = scalar(v);
            kind = v;
            if (s && !strcmp(s, "local"))
                cfg->backend = RUNNER_BACKEND_LOCAL;
            else if (s && !strcmp(s, "slurm"))
                cfg->backend = RUNNER_BACKEND_SLURM;
            else
                rc = fail(c, v, f, ST_EINVAL, "expected local or slurm");
        } else if (!strcmp(key, "via")) {
            const char *s = scalar(v);
            if (s && !strcmp(s, "cli"))
                sc->via = RUNNER_SLURM_CLI;
            else if (s && !strcmp(s, "rest"))
                sc->via = RUNNER_SLURM_REST;
            else
                rc = fail(c, v, f, ST_EINVAL, "expected cli (sbatch, squeue) or rest (slurmrestd)");
        } else if (!strcmp(key, "partition")) {
            rc = get_string(c, v, f, &sc->partition);
        } else if (!strcmp(key, "account")) {
            rc = get_string(c, v, f, &sc->account);
        } else if (!strcmp(key, "qos")) {
            rc = get_string(c, v, f, &sc->qos);
        } else if (!strcmp(key, "gres")) {
            rc = get_string(c, v, f, &sc->gres);
        } else if (!strcmp(key, "time_limit")) {
            const char *s = scalar(v);
            sc->time_limit_minutes = s ? parse_time_limit(s) : 0;
            if (!sc->time_limit_minutes)
                rc = fail(c, v, f, ST_EINVAL,
                          "expected minutes or Slurm's [D-]H:M:S, at least one minute");
        } else if (!strcmp(key, "cpus_per_task")) {
            rc = get_count(c, v, f, 1, 65535, &d);
            sc->cpus_per_task = (unsigned)d;
        } else if (!strcmp(key, "extra")) {
            if (v->type == YAML_SEQUENCE_NODE &&
                v->data.sequence.items.top == v->data.sequence.items.start)
                continue; /* [] */
            rc = load_str_list(c, v, f, &sc->extra, &sc->n_extra);
            for (size_t i = 0; !rc && i < sc->n_extra; i++)
                if (sc->extra[i][0] != '-')
                    rc = fail(c, v, f, ST_EINVAL, "item %zu: '%s' is not an option (--name=value)",
                              i, sc->extra[i]);
        } else if (!strcmp(key, "on_timeout")) {
            rc = get_policy(c, v, f, 1, &sc->on_timeout);
        } else if (!strcmp(key, "on_cancelled")) {
            rc = get_policy(c, v, f, 0, &sc->on_cancelled);
        } else if (!strcmp(key, "poll_seconds")) {
            rc = get_positive(c, v, f, &sc->poll_min_seconds);
        } else if (!strcmp(key, "poll_max_seconds")) {
            rc = get_positive(c, v, f, &sc->poll_max_seconds);
        } else if (!strcmp(key, "files_grace_seconds")) {
            rc = get_number(c, v, f, &sc->files_grace_seconds);
            if (!rc && !(sc->files_grace_seconds >= 0 && isfinite(sc->files_grace_seconds)))
                rc = fail(c, v, f, ST_EINVAL, "must be >= 0");
        } else if (!strcmp(key, "command_timeout_seconds")) {
            rc = get_positive(c, v, f, &sc->command_timeout_seconds);
        } else if (!strcmp(key, "rest")) {
            rest = v;
            rc = load_rest(c, v);
        } else {
            rc = fail(c, k, "backend", ST_EINVAL,
                      "unknown key '%s' (kind, via, partition, account, qos, time_limit, gres, "
                      "cpus_per_task, extra, on_timeout, on_cancelled, poll_seconds, "
                      "poll_max_seconds, files_grace_seconds, command_timeout_seconds, rest)",
                      key);
        }
        if (rc)
            return rc;
    }
    if (!kind)
        return fail(c, map, "backend", ST_EINVAL, "needs 'kind' (local or slurm)");
    if (cfg->backend == RUNNER_BACKEND_LOCAL && slurm_only)
        return fail(c, slurm_only, "backend", ST_EINVAL, "'%s' needs kind: slurm",
                    scalar(slurm_only));
    if (cfg->backend == RUNNER_BACKEND_SLURM && sc->via == RUNNER_SLURM_REST && !rest)
        return fail(c, map, "backend", ST_EINVAL,
                    "via: rest needs 'rest: {url: ..., user: ..., token_env: ...}' or "
                    "'rest: {socket: ...}'");
    if (cfg->backend == RUNNER_BACKEND_SLURM && sc->via == RUNNER_SLURM_CLI && rest)
        return fail(c, rest, "backend.rest", ST_EINVAL, "only with via: rest");
    if (sc->via == RUNNER_SLURM_REST && sc->n_extra)
        return fail(c, map, "backend.extra", ST_EINVAL,
                    "sbatch options apply to via: cli only (slurmrestd takes no sbatch options)");
    if (sc->poll_max_seconds < sc->poll_min_seconds)
        return fail(c, map, "backend.poll_max_seconds", ST_EINVAL,
                    "must be at least poll_seconds (%g)", sc->poll_min_seconds);
    return ST_OK;
}

/* Checks templates and the cost expression against the parameter names. */
static st_status check_refs(ctx *c, const yaml_node_t *cmd, const yaml_node_t *env,
                            const yaml_node_t *cost)
{
    runner_config *cfg = c->cfg;
    char em[ST_ERRMSG_MAX];
    for (size_t i = 0; i < cfg->argc; i++)
        if (runner_template_check(cfg, cfg->argv[i], em))
            return fail(c, cmd, "command", ST_EINVAL, "argument %zu: %s", i, em);
    for (size_t i = 0; i < cfg->n_env; i++)
        if (runner_template_check(cfg, cfg->env[i], em))
            return fail(c, env, "env", ST_EINVAL, "%s", em);
    if (cfg->cost_expr) {
        double *vals = malloc(cfg->n_params * sizeof(double));
        const char **names = malloc(cfg->n_params * sizeof(char *));
        st_status rc = ST_ENOMEM;
        if (vals && names) {
            for (size_t i = 0; i < cfg->n_params; i++) {
                names[i] = cfg->params[i].p.name;
                vals[i] =
                    cfg->params[i].is_fixed ? cfg->params[i].fixed_value : cfg->params[i].p.center;
            }
            double out;
            rc = runner_expr_eval(cfg->cost_expr, cfg->n_params, names, vals, &out, em);
            if (rc == ST_ERANGE)
                rc = ST_OK; /* a non-finite value at the centre is the run's problem */
            if (rc)
                rc = fail(c, cost, "cost.expr", ST_EINVAL, "%s", em);
        }
        free(vals);
        free(names);
        return rc;
    }
    return ST_OK;
}

static st_status load_root(ctx *c, const yaml_node_t *root)
{
    if (!root)
        return fail(c, NULL, "(file)", ST_EINVAL, "empty sweep file");
    st_status rc = expect_map(c, root, "(top level)");
    if (rc)
        return rc;
    runner_config *cfg = c->cfg;
    const yaml_node_t *cmd = NULL, *env = NULL, *cost = NULL, *params = NULL, *obj = NULL,
                      *budget = NULL, *backend = NULL;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, root, k, v, key)
    {
        if (!key)
            return fail(c, k, "(top level)", ST_EINVAL, "keys must be strings");
        for (yaml_node_pair_t *q = root->data.mapping.pairs.start; q < p_; q++)
            if (!strcmp(scalar(yaml_document_get_node(c->doc, q->key)), key))
                return fail(c, k, key, ST_EINVAL, "given twice");
        double d;
        if (!strcmp(key, "name")) {
            rc = get_string(c, v, "name", &cfg->name);
        } else if (!strcmp(key, "command")) {
            cmd = v;
            rc = load_str_list(c, v, "command", &cfg->argv, &cfg->argc);
        } else if (!strcmp(key, "env")) {
            env = v;
            rc = load_env(c, v);
        } else if (!strcmp(key, "workdir")) {
            rc = get_string(c, v, "workdir", &cfg->workdir);
        } else if (!strcmp(key, "objective")) {
            obj = v;
            rc = load_objective(c, v);
        } else if (!strcmp(key, "cost")) {
            cost = v;
            rc = load_cost(c, v);
        } else if (!strcmp(key, "parameters")) {
            params = v;
            rc = load_params(c, v);
        } else if (!strcmp(key, "budget")) {
            budget = v;
            rc = load_budget(c, v);
        } else if (!strcmp(key, "parallel")) {
            rc = load_parallel(c, v);
        } else if (!strcmp(key, "retries")) {
            rc = load_retries(c, v);
        } else if (!strcmp(key, "timeouts")) {
            rc = load_timeouts(c, v);
        } else if (!strcmp(key, "seed")) {
            rc = get_count(c, v, "seed", 0, 9007199254740992.0, &d);
            cfg->seed = (uint64_t)d;
        } else if (!strcmp(key, "optimizer")) {
            rc = load_optimizer(c, v);
        } else if (!strcmp(key, "backend")) {
            backend = v;
            rc = load_backend(c, v);
        } else {
            rc = fail(c, k, key, ST_EINVAL,
                      "unknown key (name, command, env, workdir, objective, cost, parameters, "
                      "budget, parallel, retries, timeouts, seed, optimizer, backend)");
        }
        if (rc)
            return rc;
    }
    if (!cfg->name)
        return fail(c, root, "name", ST_EINVAL, "missing (the sweep's name in the store)");
    if (!cmd)
        return fail(c, root, "command", ST_EINVAL, "missing");
    if (!obj)
        return fail(c, root, "objective", ST_EINVAL,
                    "missing ({metric: val_loss, goal: minimize})");
    if (!params)
        return fail(c, root, "parameters", ST_EINVAL, "missing");
    if (!budget)
        return fail(c, root, "budget", ST_EINVAL, "missing ({runs: N} and/or {cost: C})");
    if (!cfg->cost_metric) {
        cfg->cost_metric = xstrdup("wall_seconds");
        if (!cfg->cost_metric)
            return ST_ENOMEM;
    }
    if (cfg->backend == RUNNER_BACKEND_SLURM && cfg->n_gpus)
        return fail(c, backend, "backend", ST_EINVAL,
                    "Slurm hands out GPUs: use backend.gres (e.g. gpu:1), not parallel.gpus");
    if (cfg->cost_expr && isinf(cfg->max_cost_per_run))
        return fail(c, cost, "cost.expr", ST_EINVAL,
                    "is used to refuse runs above budget.max_cost_per_run, which is not set");
    return check_refs(c, cmd, env, cost);
}

size_t runner_config_dim(const runner_config *c)
{
    size_t d = 0;
    for (size_t i = 0; i < c->n_params; i++)
        d += !c->params[i].is_fixed;
    return d;
}

st_status runner_config_load_string(const char *text, size_t len, const char *label,
                                    runner_config **out, char *errmsg)
{
    char dummy[ST_ERRMSG_MAX];
    ctx c = {label ? label : "<string>", errmsg ? errmsg : dummy, NULL, NULL};
    yaml_parser_t parser;
    yaml_document_t doc;
    st_status rc;

    *out = NULL;
    c.errmsg[0] = '\0';
    runner_config *cfg = calloc(1, sizeof(*cfg));
    if (!cfg)
        return ST_ENOMEM;
    cfg->budget_cost = INFINITY;
    cfg->max_cost_per_run = INFINITY;
    cfg->slots = 1;
    cfg->retries = 3;
    cfg->backoff_seconds = 5;
    cfg->backoff_max_seconds = 300;
    cfg->wall_seconds = INFINITY;
    cfg->no_metrics_seconds = INFINITY;
    cfg->straggler_factor = 10;
    cfg->kill_grace_seconds = 5;
    cfg->slurm.on_timeout = RUNNER_SLURM_FAIL;
    cfg->slurm.on_cancelled = RUNNER_SLURM_RETRY;
    cfg->slurm.poll_min_seconds = 1;
    cfg->slurm.poll_max_seconds = 30;
    cfg->slurm.files_grace_seconds = 30;
    cfg->slurm.command_timeout_seconds = 60;
    cfg->text = malloc(len + 1);
    if (!cfg->text) {
        free(cfg);
        return ST_ENOMEM;
    }
    memcpy(cfg->text, text, len);
    cfg->text[len] = '\0';
    c.cfg = cfg;

    if (!yaml_parser_initialize(&parser)) {
        runner_config_destroy(cfg);
        return ST_ENOMEM;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(c.errmsg, ST_ERRMSG_MAX, "%s:%zu:%zu: YAML syntax: %s%s%s", c.label,
                 (size_t)parser.problem_mark.line + 1, (size_t)parser.problem_mark.column + 1,
                 parser.problem ? parser.problem : "error", parser.context ? " " : "",
                 parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        runner_config_destroy(cfg);
        return ST_EFORMAT;
    }
    c.doc = &doc;
    rc = load_root(&c, yaml_document_get_root_node(&doc));
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    if (rc) {
        if (rc == ST_ENOMEM)
            snprintf(c.errmsg, ST_ERRMSG_MAX, "%s: out of memory", c.label);
        runner_config_destroy(cfg);
        return rc;
    }
    *out = cfg;
    return ST_OK;
}

st_status runner_config_load_file(const char *path, runner_config **out, char *errmsg)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return errmsg ? st_errf(errmsg, ST_EIO, "%s: cannot open: %s", path, strerror(errno))
                      : ST_EIO;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 > cap) {
            cap = cap ? cap * 2 : 8192;
            if (cap > (16u << 20)) {
                free(buf);
                fclose(f);
                return errmsg ? st_errf(errmsg, ST_EINVAL, "%s: larger than 16 MiB", path)
                              : ST_EINVAL;
            }
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return ST_ENOMEM;
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return errmsg ? st_errf(errmsg, ST_EIO, "%s: read error", path) : ST_EIO;
    }
    st_status rc = runner_config_load_string(buf, len, path, out, errmsg);
    free(buf);
    return rc;
}

static void free_list(char **l, size_t n)
{
    if (!l)
        return;
    for (size_t i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

void runner_config_destroy(runner_config *c)
{
    if (!c)
        return;
    free(c->name);
    free_list(c->argv, c->argc);
    free_list(c->env, c->n_env);
    free(c->workdir);
    free(c->objective);
    free(c->cost_metric);
    free(c->cost_expr);
    for (size_t i = 0; i < c->n_params; i++) {
        free((char *)c->params[i].p.name);
        free(c->params[i].fixed_text);
    }
    free(c->params);
    free(c->gpus);
    free_list(c->opt_names, c->n_opts);
    free_list(c->opt_values, c->n_opts);
    free(c->text);
    runner_slurm_config *sc = &c->slurm;
    free(sc->partition);
    free(sc->account);
    free(sc->qos);
    free(sc->gres);
    free_list(sc->extra, sc->n_extra);
    free(sc->rest_url);
    free(sc->rest_socket);
    free(sc->rest_user);
    free(sc->token_env);
    free(sc->token_file);
    free(c);
}

/* ---- names ------------------------------------------------------------------------------- */

const char *runner_run_status_name(runner_run_status s)
{
    switch (s) {
    case RUNNER_RUN_PENDING:
        return "pending";
    case RUNNER_RUN_RUNNING:
        return "running";
    case RUNNER_RUN_SUCCEEDED:
        return "succeeded";
    case RUNNER_RUN_FAILED:
        return "failed";
    case RUNNER_RUN_INFRA_FAILED:
        return "infra_failed";
    case RUNNER_RUN_STOPPED:
        return "stopped";
    }
    return "unknown";
}

const char *runner_failure_name(runner_failure f)
{
    switch (f) {
    case RUNNER_FAIL_NONE:
        return "none";
    case RUNNER_FAIL_DIVERGED:
        return "diverged";
    case RUNNER_FAIL_OOM:
        return "oom";
    case RUNNER_FAIL_OVER_BUDGET:
        return "over_budget";
    case RUNNER_FAIL_WALL_TIMEOUT:
        return "wall_timeout";
    case RUNNER_FAIL_STRAGGLER:
        return "straggler";
    case RUNNER_FAIL_EXIT:
        return "exit";
    case RUNNER_FAIL_SIGNAL:
        return "signal";
    case RUNNER_FAIL_HANG:
        return "hang";
    case RUNNER_FAIL_NO_FINAL:
        return "no_final";
    case RUNNER_FAIL_LOST:
        return "lost";
    case RUNNER_FAIL_LAUNCH:
        return "launch";
    case RUNNER_FAIL_STOPPED:
        return "stopped";
    case RUNNER_FAIL_NODE:
        return "node_failure";
    case RUNNER_FAIL_CANCELLED:
        return "cancelled";
    case RUNNER_FAIL_TIME_LIMIT:
        return "time_limit";
    }
    return "unknown";
}

int runner_failure_is_hyperparameter(runner_failure f)
{
    /* not over_budget: the cost cap is no fault of the hyperparameters for the success model;
     * such a run teaches the optimizer's cost model only (ARCHITECTURE.md, "Failures have
     * kinds") */
    return f == RUNNER_FAIL_DIVERGED || f == RUNNER_FAIL_OOM || f == RUNNER_FAIL_WALL_TIMEOUT ||
           f == RUNNER_FAIL_STRAGGLER;
}
