/*
 * config_optimizer.c — the sweep file's `optimizer:` block (docs/config.md): what to search for
 * (goal: best, CARBS; goal: extrapolate, the study mode with its target and initial design),
 * and carbs/ options by name, validated with carbs_options_set and kept for the controller; and
 * the `early_stopping:` block (enabled, patience, min_fraction, margin).
 * Split from config.c.
 */
#include "runner/config_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The study mode's keys (not carbs/ options): 1 if `key` is one and was read into c->cfg. */
static int study_key(ctx *c, const char *key, const yaml_node_t *v, const char *f, st_status *rc)
{
    runner_config *cfg = c->cfg;
    double d = 0;
    if (!strcmp(key, "goal")) {
        const char *s = cfg_scalar(v);
        c->opt_goal = v;
        if (s && !strcmp(s, "best"))
            cfg->goal = RUNNER_GOAL_BEST;
        else if (s && !strcmp(s, "extrapolate"))
            cfg->goal = RUNNER_GOAL_EXTRAPOLATE;
        else
            *rc = cfg_fail(c, v, f, ST_EINVAL, "expected best or extrapolate");
    } else if (!strcmp(key, "target_factor")) {
        c->opt_factor = v;
        *rc = cfg_get_number(c, v, f, &cfg->target_factor);
        if (!*rc && !(cfg->target_factor > 1 && isfinite(cfg->target_factor)))
            *rc = cfg_fail(c, v, f, ST_EINVAL, "must be a finite number > 1");
    } else if (!strcmp(key, "target_compute")) {
        c->opt_compute = v;
        *rc = cfg_get_number(c, v, f, &cfg->target_compute);
        if (!*rc && !(cfg->target_compute > 0 && isfinite(cfg->target_compute)))
            *rc = cfg_fail(c, v, f, ST_EINVAL, "must be a finite number > 0");
    } else if (!strcmp(key, "initial_design")) {
        c->opt_design = v;
        *rc = cfg_get_count(c, v, f, 0, 1e6, &d);
        cfg->design_initial = (size_t)d;
    } else if (!strcmp(key, "lr_window")) {
        c->opt_window = v;
        *rc = cfg_get_number(c, v, f, &cfg->design_lr_window);
        if (!*rc && !(cfg->design_lr_window == 0 ||
                      (cfg->design_lr_window >= 1 && isfinite(cfg->design_lr_window))))
            *rc = cfg_fail(c, v, f, ST_EINVAL, "must be 0 (off) or a finite number >= 1");
    } else {
        return 0;
    }
    return 1;
}

st_status cfg_load_optimizer(ctx *c, const yaml_node_t *map)
{
    st_status rc = cfg_expect_map(c, map, "optimizer");
    if (rc)
        return rc;
    c->opt_map = map;
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
        const char *val = cfg_scalar(v);
        char f[96], em[ST_ERRMSG_MAX] = "";
        snprintf(f, sizeof(f), "optimizer.%s", key ? key : "?");
        if (!key || !val)
            return cfg_fail(c, v, f, ST_EINVAL, "expected 'name: value' scalars");
        if (!strcmp(key, "seed") || !strcmp(key, "maximize"))
            return cfg_fail(c, k, f, ST_EINVAL, "set it with the top-level '%s'",
                            !strcmp(key, "seed") ? "seed" : "objective.goal");
        if (study_key(c, key, v, f, &rc)) {
            if (rc)
                return rc;
            continue;
        }
        st_status s = carbs_options_set(&o, key, val, em);
        if (s == ST_ENOTFOUND)
            return cfg_fail(c, k, f, ST_EINVAL, "unknown optimizer option (see docs/config.md)");
        if (s)
            return cfg_fail(c, v, f, ST_EINVAL, "%s", *em ? em : "bad value");
        c->cfg->opt_names[c->cfg->n_opts] = cfg_strdup(key);
        c->cfg->opt_values[c->cfg->n_opts] = cfg_strdup(val);
        c->cfg->n_opts++;
        if (!c->cfg->opt_names[c->cfg->n_opts - 1] || !c->cfg->opt_values[c->cfg->n_opts - 1])
            return ST_ENOMEM;
    }
    return ST_OK;
}

st_status cfg_check_optimizer(ctx *c)
{
    const runner_config *cfg = c->cfg;
    int has_f = !isnan(cfg->target_factor), has_c = !isnan(cfg->target_compute);
    if (cfg->goal == RUNNER_GOAL_BEST) {
        const yaml_node_t *n = has_f           ? c->opt_factor
                               : has_c         ? c->opt_compute
                               : c->opt_design ? c->opt_design
                                               : c->opt_window;
        const char *f = has_f           ? "optimizer.target_factor"
                        : has_c         ? "optimizer.target_compute"
                        : c->opt_design ? "optimizer.initial_design"
                                        : "optimizer.lr_window";
        if (n)
            return cfg_fail(c, n, f, ST_EINVAL, "only with goal: extrapolate (the study mode)");
        return ST_OK;
    }
    if (has_f && has_c)
        return cfg_fail(c, c->opt_compute, "optimizer.target_compute", ST_EINVAL,
                        "give target_factor or target_compute, not both");
    if (!has_f && !has_c)
        return cfg_fail(c, c->opt_goal, "optimizer.goal", ST_EINVAL,
                        "extrapolate needs target_factor (the large run's compute as a multiple "
                        "of budget.max_cost_per_run) or target_compute (in the cost's unit)");
    if (has_f && isinf(cfg->max_cost_per_run))
        return cfg_fail(c, c->opt_factor, "optimizer.target_factor", ST_EINVAL,
                        "is a multiple of budget.max_cost_per_run, which is not set (set it, or "
                        "give target_compute)");
    return ST_OK;
}

st_status cfg_load_early_stopping(ctx *c, const yaml_node_t *map)
{
    st_status rc = cfg_expect_map(c, map, "early_stopping");
    if (rc)
        return rc;
    runner_config *cfg = c->cfg;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, map, k, v, key)
    {
        double d = 0;
        if (key && !strcmp(key, "enabled")) {
            rc = cfg_get_bool(c, v, "early_stopping.enabled", &cfg->es_enabled);
        } else if (key && !strcmp(key, "patience")) {
            rc = cfg_get_count(c, v, "early_stopping.patience", 1, 1000, &d);
            cfg->es_patience = (size_t)d;
        } else if (key && !strcmp(key, "min_fraction")) {
            rc = cfg_get_number(c, v, "early_stopping.min_fraction", &cfg->es_min_fraction);
            if (!rc && !(cfg->es_min_fraction >= 0 && cfg->es_min_fraction < 1))
                rc = cfg_fail(c, v, "early_stopping.min_fraction", ST_EINVAL, "must be in [0, 1)");
        } else if (key && !strcmp(key, "margin")) {
            rc = cfg_get_number(c, v, "early_stopping.margin", &cfg->es_margin);
            if (!rc && !(cfg->es_margin >= 0 && cfg->es_margin < 1))
                rc = cfg_fail(c, v, "early_stopping.margin", ST_EINVAL, "must be in [0, 1)");
        } else {
            rc = cfg_fail(c, k, "early_stopping", ST_EINVAL,
                          "unknown key '%s' (enabled, patience, min_fraction, margin)",
                          key ? key : "?");
        }
        if (rc)
            return rc;
    }
    return ST_OK;
}

size_t runner_config_design_size(const runner_config *cfg)
{
    if (cfg->design_initial)
        return cfg->design_initial;
    if (!cfg->budget_runs)
        return 16;
    size_t n = cfg->budget_runs / 4;
    return n < 8 ? 8 : n;
}
