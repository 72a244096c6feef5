/*
 * config.c — sweep files (docs/config.md): YAML read with libyaml's document API, every field
 * validated with file:line:col in the message, unknown keys refused. Also the names of run
 * statuses and failure kinds. Not the controller: a config is plain data once loaded. The
 * optimizer and backend blocks are read in config_optimizer.c and config_backend.c.
 * Depends on libyaml, carbs/ (option names and parameter checks) and expr.c/template.c.
 */
#include "runner/config_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

st_status cfg_fail(ctx *c, const yaml_node_t *n, const char *field, st_status s, const char *fmt,
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

const char *cfg_scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

char *cfg_strdup(const char *s)
{
    size_t l = strlen(s) + 1;
    char *d = malloc(l);
    if (d)
        memcpy(d, s, l);
    return d;
}

st_status cfg_get_string(ctx *c, const yaml_node_t *n, const char *field, char **out)
{
    const char *s = cfg_scalar(n);
    if (!s)
        return cfg_fail(c, n, field, ST_EINVAL, "expected a string");
    if (!*s)
        return cfg_fail(c, n, field, ST_EINVAL, "must not be empty");
    free(*out);
    *out = cfg_strdup(s);
    return *out ? ST_OK : ST_ENOMEM;
}

st_status cfg_get_number(ctx *c, const yaml_node_t *n, const char *field, double *out)
{
    const char *s = cfg_scalar(n);
    if (!s)
        return cfg_fail(c, n, field, ST_EINVAL, "expected a number");
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!strcmp(s, ".inf") || !strcmp(s, "inf"))
        v = INFINITY, end = (char *)s + strlen(s);
    else if (!strcmp(s, "-.inf") || !strcmp(s, "-inf"))
        v = -INFINITY, end = (char *)s + strlen(s);
    if (end == s || *end || isnan(v) || errno == ERANGE)
        return cfg_fail(c, n, field, ST_EINVAL, "expected a number, got '%s'", s);
    *out = v;
    return ST_OK;
}

st_status cfg_get_count(ctx *c, const yaml_node_t *n, const char *field, double min, double max,
                        double *out)
{
    double v = 0;
    *out = 0; /* callers convert *out to an integer type: never leave it out of range */
    st_status rc = cfg_get_number(c, n, field, &v);
    if (rc)
        return rc;
    if (floor(v) != v || v < min || v > max)
        return cfg_fail(c, n, field, ST_EINVAL, "expected an integer in [%g, %g], got '%s'", min,
                        max, cfg_scalar(n));
    *out = v;
    return ST_OK;
}

st_status cfg_get_bool(ctx *c, const yaml_node_t *n, const char *field, int *out)
{
    const char *s = cfg_scalar(n);
    if (s && (!strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "on")))
        *out = 1;
    else if (s && (!strcmp(s, "false") || !strcmp(s, "no") || !strcmp(s, "off")))
        *out = 0;
    else
        return cfg_fail(c, n, field, ST_EINVAL, "expected true or false");
    return ST_OK;
}

st_status cfg_expect_map(ctx *c, const yaml_node_t *n, const char *field)
{
    if (!n || n->type != YAML_MAPPING_NODE)
        return cfg_fail(c, n, field, ST_EINVAL, "expected a mapping ({key: value, ...})");
    return ST_OK;
}

/* ---- other sections ---------------------------------------------------------------------- */

st_status cfg_load_str_list(ctx *c, const yaml_node_t *n, const char *field, char ***out,
                            size_t *count)
{
    if (!n || n->type != YAML_SEQUENCE_NODE)
        return cfg_fail(c, n, field, ST_EINVAL,
                        "expected a list of arguments [\"prog\", \"--flag\", \"{param}\"] (never "
                        "run through a shell)");
    size_t m = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (m == 0)
        return cfg_fail(c, n, field, ST_EINVAL, "must not be empty");
    if (*out) /* the key is repeated in its map: the first list would leak (fuzz_config) */
        return cfg_fail(c, n, field, ST_EINVAL, "given twice");
    *out = calloc(m, sizeof(char *));
    if (!*out)
        return ST_ENOMEM;
    for (size_t i = 0; i < m; i++) {
        yaml_node_t *it = yaml_document_get_node(c->doc, n->data.sequence.items.start[i]);
        const char *s = cfg_scalar(it);
        if (!s)
            return cfg_fail(c, it, field, ST_EINVAL, "item %zu is not a scalar", i);
        (*out)[i] = cfg_strdup(s);
        if (!(*out)[i])
            return ST_ENOMEM;
        *count = i + 1;
    }
    return ST_OK;
}

static st_status load_env(ctx *c, const yaml_node_t *map)
{
    st_status rc = cfg_expect_map(c, map, "env");
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
        const char *val = cfg_scalar(v);
        if (!key || !*key || strchr(key, '='))
            return cfg_fail(c, k, "env", ST_EINVAL, "variable names are non-empty, without '='");
        if (!val)
            return cfg_fail(c, v, "env", ST_EINVAL, "value of %s must be a scalar", key);
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
    st_status rc = cfg_expect_map(c, map, "objective");
    if (rc)
        return rc;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, map, k, v, key)
    {
        if (key && !strcmp(key, "metric"))
            rc = cfg_get_string(c, v, "objective.metric", &c->cfg->objective);
        else if (key && !strcmp(key, "goal")) {
            const char *g = cfg_scalar(v);
            if (g && !strcmp(g, "minimize"))
                c->cfg->maximize = 0;
            else if (g && !strcmp(g, "maximize"))
                c->cfg->maximize = 1;
            else
                rc = cfg_fail(c, v, "objective.goal", ST_EINVAL, "expected minimize or maximize");
        } else
            rc = cfg_fail(c, k, "objective", ST_EINVAL, "unknown key '%s' (metric, goal)",
                          key ? key : "?");
        if (rc)
            return rc;
    }
    if (!c->cfg->objective)
        return cfg_fail(c, map, "objective", ST_EINVAL, "needs 'metric'");
    return ST_OK;
}

static st_status load_cost(ctx *c, const yaml_node_t *map)
{
    st_status rc = cfg_expect_map(c, map, "cost");
    if (rc)
        return rc;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, map, k, v, key)
    {
        if (key && !strcmp(key, "metric"))
            rc = cfg_get_string(c, v, "cost.metric", &c->cfg->cost_metric);
        else if (key && !strcmp(key, "expr"))
            rc = cfg_get_string(c, v, "cost.expr", &c->cfg->cost_expr);
        else
            rc = cfg_fail(c, k, "cost", ST_EINVAL, "unknown key '%s' (metric, expr)",
                          key ? key : "?");
        if (rc)
            return rc;
    }
    if (!c->cfg->cost_metric)
        return cfg_fail(c, map, "cost", ST_EINVAL, "needs 'metric' (e.g. flops or wall_seconds)");
    return ST_OK;
}

static st_status load_budget(ctx *c, const yaml_node_t *map)
{
    st_status rc = cfg_expect_map(c, map, "budget");
    if (rc)
        return rc;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, map, k, v, key)
    {
        double d = 0;
        if (key && !strcmp(key, "runs")) {
            rc = cfg_get_count(c, v, "budget.runs", 1, 1e9, &d);
            c->cfg->budget_runs = (size_t)d;
        } else if (key && !strcmp(key, "cost")) {
            rc = cfg_get_number(c, v, "budget.cost", &c->cfg->budget_cost);
            if (!rc && !(c->cfg->budget_cost > 0))
                rc = cfg_fail(c, v, "budget.cost", ST_EINVAL, "must be > 0");
        } else if (key && !strcmp(key, "max_cost_per_run")) {
            rc = cfg_get_number(c, v, "budget.max_cost_per_run", &c->cfg->max_cost_per_run);
            if (!rc && !(c->cfg->max_cost_per_run > 0))
                rc = cfg_fail(c, v, "budget.max_cost_per_run", ST_EINVAL, "must be > 0");
        } else
            rc = cfg_fail(c, k, "budget", ST_EINVAL,
                          "unknown key '%s' (runs, cost, max_cost_per_run)", key ? key : "?");
        if (rc)
            return rc;
    }
    if (c->cfg->budget_runs == 0 && isinf(c->cfg->budget_cost))
        return cfg_fail(c, map, "budget", ST_EINVAL, "needs 'runs' or 'cost' (a sweep must end)");
    return ST_OK;
}

static st_status load_parallel(ctx *c, const yaml_node_t *n)
{
    double d;
    st_status rc;
    if (cfg_scalar(n)) {
        rc = cfg_get_count(c, n, "parallel", 1, 4096, &d);
        c->cfg->slots = (size_t)d;
        return rc;
    }
    rc = cfg_expect_map(c, n, "parallel");
    if (rc)
        return rc;
    int has_slots = 0;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, n, k, v, key)
    {
        if (key && !strcmp(key, "slots")) {
            rc = cfg_get_count(c, v, "parallel.slots", 1, 4096, &d);
            c->cfg->slots = (size_t)d;
            has_slots = 1;
        } else if (key && !strcmp(key, "gpus")) {
            if (v->type != YAML_SEQUENCE_NODE)
                return cfg_fail(c, v, "parallel.gpus", ST_EINVAL, "expected a list of GPU ids");
            size_t m = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
            free(c->cfg->gpus);
            c->cfg->gpus = calloc(m ? m : 1, sizeof(int));
            if (!c->cfg->gpus)
                return ST_ENOMEM;
            c->cfg->n_gpus = 0;
            for (size_t i = 0; i < m && !rc; i++) {
                yaml_node_t *it = yaml_document_get_node(c->doc, v->data.sequence.items.start[i]);
                rc = cfg_get_count(c, it, "parallel.gpus", 0, 65535, &d);
                c->cfg->gpus[c->cfg->n_gpus++] = (int)d;
            }
        } else
            rc = cfg_fail(c, k, "parallel", ST_EINVAL, "unknown key '%s' (slots, gpus)",
                          key ? key : "?");
        if (rc)
            return rc;
    }
    if (!has_slots)
        c->cfg->slots = c->cfg->n_gpus ? c->cfg->n_gpus : 1;
    if (c->cfg->n_gpus && c->cfg->n_gpus < c->cfg->slots)
        return cfg_fail(c, n, "parallel", ST_EINVAL, "%zu slots need at least as many GPUs (%zu)",
                        c->cfg->slots, c->cfg->n_gpus);
    return ST_OK;
}

static st_status load_retries(ctx *c, const yaml_node_t *n)
{
    double d;
    st_status rc;
    if (cfg_scalar(n)) {
        rc = cfg_get_count(c, n, "retries", 0, 1000, &d);
        c->cfg->retries = (unsigned)d;
        return rc;
    }
    rc = cfg_expect_map(c, n, "retries");
    if (rc)
        return rc;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, n, k, v, key)
    {
        if (key && !strcmp(key, "infrastructure")) {
            rc = cfg_get_count(c, v, "retries.infrastructure", 0, 1000, &d);
            c->cfg->retries = (unsigned)d;
        } else if (key && !strcmp(key, "backoff_seconds")) {
            rc = cfg_get_number(c, v, "retries.backoff_seconds", &c->cfg->backoff_seconds);
            if (!rc && !(c->cfg->backoff_seconds >= 0 && isfinite(c->cfg->backoff_seconds)))
                rc = cfg_fail(c, v, "retries.backoff_seconds", ST_EINVAL, "must be >= 0");
        } else if (key && !strcmp(key, "stop_after_identical")) {
            rc = cfg_get_count(c, v, "retries.stop_after_identical", 0, 1000000, &d);
            c->cfg->stop_after_identical = (unsigned)d;
        } else if (key && !strcmp(key, "backoff_max_seconds")) {
            rc = cfg_get_number(c, v, "retries.backoff_max_seconds", &c->cfg->backoff_max_seconds);
            if (!rc && !(c->cfg->backoff_max_seconds >= 0))
                rc = cfg_fail(c, v, "retries.backoff_max_seconds", ST_EINVAL, "must be >= 0");
        } else
            rc = cfg_fail(c, k, "retries", ST_EINVAL,
                          "unknown key '%s' (infrastructure, backoff_seconds, "
                          "backoff_max_seconds, stop_after_identical)",
                          key ? key : "?");
        if (rc)
            return rc;
    }
    return ST_OK;
}

static st_status load_timeouts(ctx *c, const yaml_node_t *n)
{
    st_status rc = cfg_expect_map(c, n, "timeouts");
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
            return cfg_fail(c, k, "timeouts", ST_EINVAL,
                            "unknown key '%s' (wall_seconds, no_metrics_seconds, straggler_factor, "
                            "kill_grace_seconds)",
                            key ? key : "?");
        rc = cfg_get_number(c, v, f, dst);
        if (!rc && !(*dst >= 0))
            rc = cfg_fail(c, v, f, ST_EINVAL, "must be >= 0");
        if (!rc && dst != &c->cfg->straggler_factor && dst != &c->cfg->kill_grace_seconds &&
            *dst == 0)
            rc = cfg_fail(c, v, f, ST_EINVAL, "must be > 0 (leave it out for no limit)");
        if (rc)
            return rc;
    }
    return ST_OK;
}

static st_status check_refs(ctx *c, const yaml_node_t *cmd, const yaml_node_t *env,
                            const yaml_node_t *cost)
{
    runner_config *cfg = c->cfg;
    char em[ST_ERRMSG_MAX];
    for (size_t i = 0; i < cfg->argc; i++)
        if (runner_template_check(cfg, cfg->argv[i], em))
            return cfg_fail(c, cmd, "command", ST_EINVAL, "argument %zu: %s", i, em);
    for (size_t i = 0; i < cfg->n_env; i++)
        if (runner_template_check(cfg, cfg->env[i], em))
            return cfg_fail(c, env, "env", ST_EINVAL, "%s", em);
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
                rc = cfg_fail(c, cost, "cost.expr", ST_EINVAL, "%s", em);
        }
        free(vals);
        free(names);
        return rc;
    }
    return ST_OK;
}

/* workdir: a directory, as written (runner_config_load_file makes a relative one absolute) */
static st_status load_workdir(ctx *c, const yaml_node_t *v)
{
    st_status rc = cfg_get_string(c, v, "workdir", &c->cfg->workdir);
    if (rc)
        return rc;
    if (strchr(c->cfg->workdir, '{') || strchr(c->cfg->workdir, '}'))
        return cfg_fail(c, v, "workdir", ST_EINVAL,
                        "placeholders are not expanded here: give a directory (absolute, or "
                        "relative to the sweep file's directory)");
    if (strlen(c->cfg->workdir) > RUNNER_WORKDIR_MAX)
        return cfg_fail(c, v, "workdir", ST_EINVAL, "longer than %d characters",
                        RUNNER_WORKDIR_MAX);
    return ST_OK;
}

static st_status load_root(ctx *c, const yaml_node_t *root)
{
    if (!root)
        return cfg_fail(c, NULL, "(file)", ST_EINVAL, "empty sweep file");
    st_status rc = cfg_expect_map(c, root, "(top level)");
    if (rc)
        return rc;
    runner_config *cfg = c->cfg;
    const yaml_node_t *cmd = NULL, *env = NULL, *cost = NULL, *params = NULL, *obj = NULL,
                      *budget = NULL, *backend = NULL, *branches = NULL;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, root, k, v, key)
    {
        if (!key)
            return cfg_fail(c, k, "(top level)", ST_EINVAL, "keys must be strings");
        for (yaml_node_pair_t *q = root->data.mapping.pairs.start; q < p_; q++)
            if (!strcmp(cfg_scalar(yaml_document_get_node(c->doc, q->key)), key))
                return cfg_fail(c, k, key, ST_EINVAL, "given twice");
        double d;
        if (!strcmp(key, "name")) {
            rc = cfg_get_string(c, v, "name", &cfg->name);
            char why[200];
            if (!rc && !runner_sweep_name_ok(cfg->name, why, sizeof(why)))
                rc = cfg_fail(c, v, "name", ST_EINVAL, "%s", why);
        } else if (!strcmp(key, "command")) {
            cmd = v;
            rc = cfg_load_str_list(c, v, "command", &cfg->argv, &cfg->argc);
        } else if (!strcmp(key, "env")) {
            env = v;
            rc = load_env(c, v);
        } else if (!strcmp(key, "workdir")) {
            rc = load_workdir(c, v);
        } else if (!strcmp(key, "objective")) {
            obj = v;
            rc = load_objective(c, v);
        } else if (!strcmp(key, "cost")) {
            cost = v;
            rc = load_cost(c, v);
        } else if (!strcmp(key, "parameters")) {
            params = v;
            rc = cfg_load_params(c, v);
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
            rc = cfg_get_count(c, v, "seed", 0, 9007199254740992.0, &d);
            cfg->seed = (uint64_t)d;
        } else if (!strcmp(key, "deterministic")) {
            rc = cfg_get_bool(c, v, "deterministic", &cfg->deterministic);
        } else if (!strcmp(key, "optimizer")) {
            rc = cfg_load_optimizer(c, v);
        } else if (!strcmp(key, "backend")) {
            backend = v;
            rc = cfg_load_backend(c, v);
        } else if (!strcmp(key, "early_stopping")) {
            rc = cfg_load_early_stopping(c, v);
        } else if (!strcmp(key, "method")) {
            rc = cfg_load_method(c, v);
        } else if (!strcmp(key, "constraints")) {
            rc = cfg_load_constraints(c, v);
        } else if (!strcmp(key, "large_run")) {
            rc = cfg_load_large_run(c, v);
        } else if (!strcmp(key, "branches")) {
            branches = v;
            rc = cfg_load_branches(c, v);
        } else {
            rc = cfg_fail(c, k, key, ST_EINVAL,
                          "unknown key (name, command, env, workdir, objective, cost, parameters, "
                          "budget, parallel, retries, timeouts, seed, deterministic, optimizer, "
                          "backend, early_stopping, method, constraints, large_run, branches)");
        }
        if (rc)
            return rc;
    }
    if (!cfg->name)
        return cfg_fail(c, root, "name", ST_EINVAL, "missing (the sweep's name in the store)");
    /* no command: a sweep driven by ask/tell only (launch and resume refuse it) */
    if (!obj)
        return cfg_fail(c, root, "objective", ST_EINVAL,
                        "missing ({metric: val_loss, goal: minimize})");
    if (!params)
        return cfg_fail(c, root, "parameters", ST_EINVAL, "missing");
    if (!budget)
        return cfg_fail(c, root, "budget", ST_EINVAL, "missing ({runs: N} and/or {cost: C})");
    if (!cfg->cost_metric) {
        cfg->cost_metric = cfg_strdup("wall_seconds");
        if (!cfg->cost_metric)
            return ST_ENOMEM;
    }
    if (cfg->backend == RUNNER_BACKEND_SLURM && cfg->n_gpus)
        return cfg_fail(c, backend, "backend", ST_EINVAL,
                        "Slurm hands out GPUs: use backend.gres (e.g. gpu:1), not parallel.gpus");
    if (cfg->cost_expr && isinf(cfg->max_cost_per_run))
        return cfg_fail(c, cost, "cost.expr", ST_EINVAL,
                        "is used to refuse runs above budget.max_cost_per_run, which is not set");
    if ((rc = cfg_check_method(c)) || (rc = cfg_check_optimizer(c)) ||
        (rc = cfg_check_branches(c, branches)))
        return rc;
    return check_refs(c, cmd, env, cost);
}

size_t runner_config_dim(const runner_config *c)
{
    size_t d = 0;
    for (size_t i = 0; i < c->n_params; i++)
        d += !c->params[i].is_fixed;
    return d;
}

int runner_sweep_name_ok(const char *name, char *why, size_t cap)
{
    size_t n = name ? strlen(name) : 0;
    const char *bad = NULL;
    char c0 = n ? name[0] : '\0';
    if (n == 0)
        bad = "is empty";
    else if (n > RUNNER_SWEEP_NAME_MAX)
        bad = "is longer than 100 characters";
    else if (c0 == '.' || c0 == '-')
        bad = "starts with '.' or '-'";
    for (size_t i = 0; i < n && !bad; i++) {
        char ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-'))
            bad = "has a character outside [A-Za-z0-9._-]";
    }
    if (bad && why && cap)
        snprintf(why, cap,
                 "%s (a sweep name names its log directory: 1 to %d characters of "
                 "[A-Za-z0-9._-], not starting with '.' or '-')",
                 bad, RUNNER_SWEEP_NAME_MAX);
    return !bad;
}

st_status runner_config_load_string(const char *text, size_t len, const char *label,
                                    runner_config **out, char *errmsg)
{
    char dummy[ST_ERRMSG_MAX];
    ctx c;
    memset(&c, 0, sizeof(c));
    c.label = label ? label : "<string>";
    c.errmsg = errmsg ? errmsg : dummy;
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
    cfg->deterministic = 1;
    cfg->target_factor = NAN;
    cfg->design_lr_window = NAN;
    cfg->es_patience = 3;
    cfg->es_min_fraction = 0.2;
    cfg->es_margin = 0.01;
    cfg->br_decay = 0.2;
    cfg->target_compute = NAN;
    cfg->retries = 3;
    cfg->backoff_seconds = 5;
    cfg->stop_after_identical = 5;
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
    cfg_large_run_defaults(cfg);
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
    if (rc)
        return rc;

    /* a relative workdir is the sweep file's business: resolve it against the file's directory,
     * so the sweep runs the same from wherever it is launched */
    runner_config *cfg = *out;
    if (cfg->workdir && cfg->workdir[0] != '/') {
        char dir[RUNNER_WORKDIR_MAX + 1];
        const char *slash = strrchr(path, '/');
        if (!slash)
            snprintf(dir, sizeof(dir), ".");
        else
            snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
        char *abs = runner_path_absolute(slash ? dir : NULL, cfg->workdir);
        if (!abs) {
            if (errmsg)
                st_errf(errmsg, ST_EIO,
                        "%s: workdir: cannot resolve '%s' against the sweep file's directory: %s",
                        path, cfg->workdir, strerror(errno));
            runner_config_destroy(cfg);
            *out = NULL;
            return ST_EIO;
        }
        free(cfg->workdir);
        cfg->workdir = abs;
    }
    return ST_OK;
}

char *runner_path_absolute(const char *base, const char *path)
{
    char cwd[RUNNER_WORKDIR_MAX + 1], joined[3 * RUNNER_WORKDIR_MAX + 8];
    if (path[0] == '/') {
        snprintf(joined, sizeof(joined), "%s", path);
    } else {
        if (!base || base[0] != '/') {
            if (!getcwd(cwd, sizeof(cwd)))
                return NULL;
        }
        if (!base)
            snprintf(joined, sizeof(joined), "%s/%s", cwd, path);
        else if (base[0] != '/')
            snprintf(joined, sizeof(joined), "%s/%s/%s", cwd, base, path);
        else
            snprintf(joined, sizeof(joined), "%s/%s", base, path);
    }
    if (strlen(joined) > RUNNER_WORKDIR_MAX) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    /* the directory chdir() will enter (symbolic links and .. resolved as the kernel does);
     * of one that does not exist yet, the longest part that does, and the rest as written */
    size_t cut = strlen(joined);
    char *real = NULL;
    for (;;) {
        char save = joined[cut];
        joined[cut] = '\0';
        real = realpath(cut ? joined : "/", NULL); /* "/" always resolves: the loop ends */
        joined[cut] = save;
        if (real)
            break;
        while (cut > 0 && joined[cut - 1] != '/') /* drop the last component */
            cut--;
        while (cut > 0 && joined[cut - 1] == '/')
            cut--;
    }
    size_t lr = strlen(real), lt = strlen(joined + cut);
    if (lt && !strcmp(real, "/"))
        lr = 0; /* "/" + "/rest" */
    char *out = realloc(real, lr + lt + 1);
    if (!out) {
        free(real);
        errno = ENOMEM;
        return NULL;
    }
    memcpy(out + lr, joined + cut, lt + 1);
    return out;
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
    for (size_t i = 0; i < c->n_params; i++)
        cfg_free_param(&c->params[i]);
    free(c->params);
    free(c->gpus);
    free_list(c->opt_names, c->n_opts);
    free_list(c->opt_values, c->n_opts);
    free(c->text);
    free_list(c->con_names, c->n_con);
    free(c->br_at);
    free_list(c->br_argv, c->br_argc);
    free(c->con_le);
    free(c->con_bound);
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
    cfg_large_run_free(c);
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
    case RUNNER_FAIL_BAD_FINAL:
        return "bad_final";
    case RUNNER_FAIL_CONSTRAINT:
        return "constraint";
    }
    return "unknown";
}

int runner_failure_is_hyperparameter(runner_failure f)
{
    /* not over_budget: the cost cap is no fault of the hyperparameters for the success model;
     * such a run teaches the optimizer's cost model only (ARCHITECTURE.md, "Failures have
     * kinds") */
    return f == RUNNER_FAIL_DIVERGED || f == RUNNER_FAIL_OOM || f == RUNNER_FAIL_WALL_TIMEOUT ||
           f == RUNNER_FAIL_STRAGGLER || f == RUNNER_FAIL_CONSTRAINT;
}
