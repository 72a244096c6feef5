/*
 * config_largerun.c — the sweep file's `large_run:` block (docs/config.md, docs/large-run.md):
 * health-check programs and how often a node may fail them, the watch's straggler and spike
 * settings, and when a node is slow. Read by `scaletune run`; a sweep ignores it, but for
 * slow_node_fraction, which `sweep status` uses for any sweep.
 */
#include "runner/config_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void cfg_large_run_defaults(runner_config *cfg)
{
    runner_large_config *l = &cfg->large;
    l->health_timeout_seconds = 60;
    l->quarantine_after = 2;
    l->straggler_fraction = 0.5;
    l->straggler_window = 5;
    l->spike_factor = 1.5;
    l->spike_window = 20;
    l->slow_node_fraction = 0.5;
}

void cfg_large_run_free(runner_config *cfg)
{
    for (size_t i = 0; i < cfg->large.n_health_checks; i++)
        free(cfg->large.health_checks[i]);
    free(cfg->large.health_checks);
}

static st_status get_size(ctx *c, const yaml_node_t *v, const char *field, double min, size_t *out)
{
    double d;
    st_status rc = cfg_get_count(c, v, field, min, 1e9, &d);
    if (!rc)
        *out = (size_t)d;
    return rc;
}

static st_status get_fraction(ctx *c, const yaml_node_t *v, const char *field, double *out)
{
    st_status rc = cfg_get_number(c, v, field, out);
    if (!rc && !(*out >= 0 && *out < 1))
        rc = cfg_fail(c, v, field, ST_EINVAL, "must be in [0, 1) (0: off)");
    return rc;
}

static st_status get_positive(ctx *c, const yaml_node_t *v, const char *field, double *out)
{
    st_status rc = cfg_get_number(c, v, field, out);
    if (!rc && !(*out > 0 && isfinite(*out)))
        rc = cfg_fail(c, v, field, ST_EINVAL, "must be a positive number");
    return rc;
}

st_status cfg_load_large_run(ctx *c, const yaml_node_t *map)
{
    st_status rc = cfg_expect_map(c, map, "large_run");
    if (rc)
        return rc;
    runner_large_config *l = &c->cfg->large;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, map, k, v, key)
    {
        double d = 0;
        size_t z = 0;
        if (key && !strcmp(key, "health_checks"))
            rc = cfg_load_str_list(c, v, "large_run.health_checks", &l->health_checks,
                                   &l->n_health_checks);
        else if (key && !strcmp(key, "health_timeout_seconds"))
            rc = get_positive(c, v, "large_run.health_timeout_seconds", &l->health_timeout_seconds);
        else if (key && !strcmp(key, "quarantine_after")) {
            rc = get_size(c, v, "large_run.quarantine_after", 1, &z);
            if (!rc)
                l->quarantine_after = (unsigned)z;
        } else if (key && !strcmp(key, "restart_on_straggler"))
            rc = cfg_get_bool(c, v, "large_run.restart_on_straggler", &l->restart_on_straggler);
        else if (key && !strcmp(key, "straggler_fraction"))
            rc = get_fraction(c, v, "large_run.straggler_fraction", &l->straggler_fraction);
        else if (key && !strcmp(key, "straggler_window"))
            rc = get_size(c, v, "large_run.straggler_window", 1, &l->straggler_window);
        else if (key && !strcmp(key, "spike_factor")) {
            rc = cfg_get_number(c, v, "large_run.spike_factor", &d);
            if (!rc && !(d == 0 || (d > 1 && isfinite(d))))
                rc = cfg_fail(c, v, "large_run.spike_factor", ST_EINVAL, "must be > 1 (0: off)");
            l->spike_factor = d;
        } else if (key && !strcmp(key, "spike_window"))
            rc = get_size(c, v, "large_run.spike_window", 1, &l->spike_window);
        else if (key && !strcmp(key, "slow_node_fraction"))
            rc = get_fraction(c, v, "large_run.slow_node_fraction", &l->slow_node_fraction);
        else
            rc = cfg_fail(c, k, key ? key : "large_run", ST_EINVAL,
                          "unknown key in large_run (health_checks, health_timeout_seconds, "
                          "quarantine_after, restart_on_straggler, straggler_fraction, "
                          "straggler_window, spike_factor, spike_window, slow_node_fraction)");
        if (rc)
            return rc;
    }
    return ST_OK;
}
