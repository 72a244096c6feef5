/*
 * runner_int.h — interfaces between the files of runner/ (not installed, not public).
 *   metrics.c        the metrics-protocol line parser
 *   config.c         sweep files (libyaml), validation, names of statuses and failure kinds
 *   expr.c           the cost-expression evaluator
 *   template.c       argv/env template substitution
 *   store.c          the SQLite store: schema, migrations, transactions, lease
 *   store_query.c    status, Pareto front, export, ask/tell
 *   backend_local.c  the local backend: supervisor per attempt, process groups
 *   controller.c     the loop: suggest, launch, poll, parse, observe, retry, stop, resume
 */
#ifndef RUNNER_INT_H
#define RUNNER_INT_H

#include <stdio.h>
#include <sys/types.h>

#include "runner/runner.h"

/* ---- template.c ------------------------------------------------------------------------- */

/* Checks braces and placeholder names of one template. ST_OK or ST_EINVAL (errmsg says why). */
st_status runner_template_check(const runner_config *cfg, const char *t, char *errmsg);
/* Expands a template; values: cfg->n_params values (fixed ones ignored). *out: malloc'd. */
st_status runner_template_expand(const runner_config *cfg, const char *t, const double *values,
                                 uint64_t run, unsigned attempt, const char *dir, char **out);
/* A parameter value as substituted: integers without decimals, doubles round-tripping. */
void runner_format_value(const runner_param_spec *ps, double v, char *buf, size_t cap);

#endif
