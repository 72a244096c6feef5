/*
 * config_branches.c — the sweep file's `branches:` block: cooldown branches that the controller
 * spawns off each succeeded run (docs/config.md, "Cooldown branches"):
 *
 *   branches:
 *     at: [0.3, 0.6]            # fractions of the parent's steps where a branch ends
 *     decay_fraction: 0.2       # the share of a branch's steps (checkpoint + cooldown) decaying
 *     args: [--branch-from, "{_parent_checkpoint}-{_branch_step}", --decay-steps,
 *            "{_decay_steps}", --parent-run, "{_parent_run}"]
 *
 * A branch runs the parent's command with `args` appended (runner/branch.c plans them).
 */
#include "runner/config_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_AT 16 /* branches per run */

static st_status load_at(ctx *c, const yaml_node_t *v)
{
    runner_config *cfg = c->cfg;
    if (v->type != YAML_SEQUENCE_NODE)
        return cfg_fail(c, v, "branches.at", ST_EINVAL,
                        "must be a list of fractions of the parent's steps, e.g. [0.3, 0.6]");
    size_t n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
    if (n == 0 || n > MAX_AT)
        return cfg_fail(c, v, "branches.at", ST_EINVAL, "needs 1 to %d fractions", MAX_AT);
    free(cfg->br_at);
    cfg->n_br_at = 0;
    if (!(cfg->br_at = malloc(n * sizeof(double))))
        return ST_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const yaml_node_t *it = yaml_document_get_node(c->doc, v->data.sequence.items.start[i]);
        double f = NAN;
        st_status rc = cfg_get_number(c, it, "branches.at", &f);
        if (rc)
            return rc;
        if (!(f > 0 && f < 1))
            return cfg_fail(c, it, "branches.at", ST_EINVAL,
                            "%g is not a fraction in (0, 1) of the parent's steps", f);
        cfg->br_at[cfg->n_br_at++] = f;
    }
    return ST_OK;
}

st_status cfg_load_branches(ctx *c, const yaml_node_t *map)
{
    st_status rc = cfg_expect_map(c, map, "branches");
    if (rc)
        return rc;
    runner_config *cfg = c->cfg;
    const yaml_node_t *args = NULL;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, map, k, v, key)
    {
        if (key && !strcmp(key, "at")) {
            rc = load_at(c, v);
        } else if (key && !strcmp(key, "decay_fraction")) {
            rc = cfg_get_number(c, v, "branches.decay_fraction", &cfg->br_decay);
            if (!rc && !(cfg->br_decay > 0 && cfg->br_decay < 1))
                rc = cfg_fail(c, v, "branches.decay_fraction", ST_EINVAL, "must be in (0, 1)");
        } else if (key && !strcmp(key, "args")) {
            args = v;
            rc = cfg_load_str_list(c, v, "branches.args", &cfg->br_argv, &cfg->br_argc);
        } else {
            rc = cfg_fail(c, k, "branches", ST_EINVAL,
                          "unknown key '%s' (at, decay_fraction, args)", key ? key : "?");
        }
        if (rc)
            return rc;
    }
    if (!cfg->n_br_at)
        return cfg_fail(c, map, "branches.at", ST_EINVAL,
                        "missing: where the branches end, as fractions of the parent's steps");
    if (!cfg->br_argc)
        return cfg_fail(c, map, "branches.args", ST_EINVAL,
                        "missing: the arguments that make the parent's command a branch, e.g. "
                        "[--branch-from, \"{_parent_checkpoint}-{_branch_step}\", "
                        "--decay-steps, \"{_decay_steps}\"]");
    c->branches_args = args;
    return ST_OK;
}

st_status cfg_check_branches(ctx *c, const yaml_node_t *map)
{
    runner_config *cfg = c->cfg;
    if (!cfg->n_br_at)
        return ST_OK;
    if (!cfg->argc)
        return cfg_fail(c, map, "branches", ST_EINVAL,
                        "needs a command (a branch runs its parent's command)");
    char em[ST_ERRMSG_MAX];
    for (size_t i = 0; i < cfg->br_argc; i++)
        if (runner_template_check_branch(cfg, cfg->br_argv[i], em))
            return cfg_fail(c, c->branches_args, "branches.args", ST_EINVAL, "argument %zu: %s", i,
                            em);
    return ST_OK;
}
