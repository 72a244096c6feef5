/*
 * config_int.h — what the sweep-file reader's files share (not installed, not public):
 *   config.c            the top level, parameters, objective, cost, budget, parallel, retries,
 *                       timeouts; the scalar readers below; names of statuses and failures
 *   config_optimizer.c  the `optimizer:` block (carbs/ options, the study mode's fields) and
 *                       the `early_stopping:` block
 *   config_backend.c    the `backend:` block (local, Slurm)
 *   config_param.c      categorical (`choices:`) and conditional (`when:`) parameters
 *   config_largerun.c   the `large_run:` block (health checks, straggler and spike settings)
 *   config_branches.c   the `branches:` block (cooldown branches the controller spawns)
 */
#ifndef RUNNER_CONFIG_INT_H
#define RUNNER_CONFIG_INT_H

#include <yaml.h>

#include "runner/runner_int.h"

/* what this header declares is internal: hidden from libscaletune.so's exports (the static
 * library and the tests still link it); common/scaletune.map exports the public API */
#pragma GCC visibility push(hidden)

typedef struct ctx {
    const char *label;
    char *errmsg; /* ST_ERRMSG_MAX bytes, never NULL inside */
    yaml_document_t *doc;
    runner_config *cfg;
    /* where the optimizer block set the study mode's fields (for messages; NULL: not set) */
    const yaml_node_t *opt_map, *opt_goal, *opt_factor, *opt_compute, *opt_design, *opt_window;
    const yaml_node_t *method;        /* the `method:` node (NULL: not given) */
    const yaml_node_t *branches_args; /* the `branches.args` node (NULL: not given) */
} ctx;

/* Formats "label:line:col: field: message" into c->errmsg and returns s. */
st_status cfg_fail(ctx *c, const yaml_node_t *n, const char *field, st_status s, const char *fmt,
                   ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
/* A scalar node's text, NULL for anything else. */
const char *cfg_scalar(const yaml_node_t *n);
char *cfg_strdup(const char *s);
/* Scalar readers: ST_OK or ST_EINVAL with the message in c->errmsg (ST_ENOMEM). */
st_status cfg_get_string(ctx *c, const yaml_node_t *n, const char *field, char **out);
st_status cfg_get_number(ctx *c, const yaml_node_t *n, const char *field, double *out);
st_status cfg_get_count(ctx *c, const yaml_node_t *n, const char *field, double min, double max,
                        double *out);
st_status cfg_get_bool(ctx *c, const yaml_node_t *n, const char *field, int *out);
st_status cfg_expect_map(ctx *c, const yaml_node_t *n, const char *field);
/* A list of strings (`field: [a, b]`): *out (malloc'd, *n items). */
st_status cfg_load_str_list(ctx *c, const yaml_node_t *n, const char *field, char ***out,
                            size_t *n_out);

#define FOREACH_PAIR(c, map, k, v, key)                                                            \
    for (yaml_node_pair_t *p_ = (map)->data.mapping.pairs.start;                                   \
         p_ < (map)->data.mapping.pairs.top &&                                                     \
         ((k) = yaml_document_get_node((c)->doc, p_->key),                                         \
         (v) = yaml_document_get_node((c)->doc, p_->value), (key) = cfg_scalar(k), 1);             \
         p_++)

/* config_optimizer.c: the `optimizer:` block; the checks that need the whole file (budget),
 * run after every key is read. */
st_status cfg_load_optimizer(ctx *c, const yaml_node_t *map);
st_status cfg_check_optimizer(ctx *c);
/* config_optimizer.c: the `early_stopping:` block. */
st_status cfg_load_early_stopping(ctx *c, const yaml_node_t *map);
/* config_branches.c: the `branches:` block, and its checks once every key is read (its
 * placeholders name parameters; map: the block, NULL when absent). */
st_status cfg_load_branches(ctx *c, const yaml_node_t *map);
st_status cfg_check_branches(ctx *c, const yaml_node_t *map);
/* config_param.c: the `parameters:` block (every parameter, in file order). */
st_status cfg_load_params(ctx *c, const yaml_node_t *map);
/* config_param.c: a parameter with `choices:` (map: its mapping), a `when:` block, the masks
 * of every `when` once all parameters are read, and freeing a parameter's strings. */
st_status cfg_load_choices(ctx *c, const char *field, const yaml_node_t *map,
                           runner_param_spec *ps);
st_status cfg_load_when(ctx *c, const yaml_node_t *v, const char *f, runner_param_spec *ps);
st_status cfg_resolve_when(ctx *c, const yaml_node_t *map);
void cfg_free_param(runner_param_spec *ps);
/* config_param.c: a parameter's `grid:` (N points or a list of values); the top-level
 * `method:`; the checks of the method against the whole file (after every key is read). */
st_status cfg_load_grid(ctx *c, const yaml_node_t *v, const char *f, runner_param_spec *ps);
st_status cfg_load_method(ctx *c, const yaml_node_t *v);
st_status cfg_check_method(ctx *c);
/* config_param.c: `constraints: {name: "<= 80", other: ">= 0.5"}`. */
st_status cfg_load_constraints(ctx *c, const yaml_node_t *map);
/* config_backend.c: the `backend:` block. */
st_status cfg_load_backend(ctx *c, const yaml_node_t *map);
/* config_largerun.c: the `large_run:` block, its defaults, and freeing it. */
st_status cfg_load_large_run(ctx *c, const yaml_node_t *map);
void cfg_large_run_defaults(runner_config *cfg);
void cfg_large_run_free(runner_config *cfg);

#pragma GCC visibility pop

#endif
