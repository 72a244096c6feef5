/*
 * run_int.h — what the files of `scaletune run` share (cli/cmd_run.c: options, the loop, the
 * summary; cli/run_health.c: health checks and quarantine). CLI code only.
 */
#ifndef ST_CLI_RUN_INT_H
#define ST_CLI_RUN_INT_H

#include <stddef.h>

#include "runner/runner.h"

/* The node's name as the store keeps it for health checks: `given` (--node) or this machine's
 * host name. */
void run_node_name(const char *given, char *node, size_t cap);
/* 1 (after printing why) when `node` is quarantined for the sweep, else 0. */
int run_quarantined(const char *db, const char *sweep, const char *node);
/* Runs cfg's health checks on this machine (`when`: "before the start", "after a failure");
 * 0 healthy or no checks, 1 a check failed (recorded, printed; *quarantined when the node now
 * is), -1 an error (printed). log_dir NULL: "<db>.runs". */
int run_health(const char *db, const char *log_dir, const char *node, const runner_config *cfg,
               const char *when, int *quarantined);

#endif
