/*
 * run_health.c — `scaletune run`'s health checks (docs/large-run.md): this machine's checks
 * before the run starts here and after each attempt that failed here, the record of a failure
 * in the store, and the refusal to run on a quarantined node. Public headers only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run_int.h"
#include "runner/largerun.h"

void run_node_name(const char *given, char *node, size_t cap)
{
    if (given)
        snprintf(node, cap, "%s", given);
    else if (gethostname(node, cap - 1) != 0)
        snprintf(node, cap, "localhost");
    node[cap - 1] = '\0';
}

int run_quarantined(const char *db, const char *sweep, const char *node)
{
    runner_store *s = NULL;
    runner_quarantine q[16];
    size_t n = 0;
    int found = 0;
    if (runner_store_open(db, &s, NULL) == ST_OK &&
        runner_store_quarantined(s, sweep, 16, &n, q) == ST_OK)
        for (size_t i = 0; i < n && i < 16 && !found; i++)
            if (!strcmp(q[i].node, node)) {
                cli_error("run it on another node (the store keeps the list: 'scaletune sweep "
                          "status'); a repaired node: 'scaletune sweep delete' starts afresh",
                          "node %s is quarantined for sweep '%s': %s", node, sweep, q[i].why);
                found = 1;
            }
    runner_store_close(s);
    return found;
}

int run_health(const char *db, const char *log_dir, const char *node, const runner_config *cfg,
               const char *when, int *quarantined)
{
    char dir[4096], em[ST_ERRMSG_MAX];
    *quarantined = 0;
    if (!cfg->large.n_health_checks)
        return 0;
    if (log_dir)
        snprintf(dir, sizeof(dir), "%s/%s/health/%s", log_dir, cfg->name, node);
    else
        snprintf(dir, sizeof(dir), "%s.runs/%s/health/%s", db, cfg->name, node);
    runner_health_result h;
    if (runner_health_run(cfg, node, dir, &h, em)) {
        cli_error(NULL, "health checks: %s", em);
        return -1;
    }
    if (h.ok)
        return 0;
    runner_store *s = NULL;
    size_t n_fail = 0;
    if (runner_store_open(db, &s, em) ||
        runner_store_health_record(s, cfg->name, node, &h, cfg->large.quarantine_after, &n_fail,
                                   quarantined)) {
        cli_error(NULL, "recording a health check: %s", s ? runner_store_errmsg(s) : em);
        runner_store_close(s);
        return -1;
    }
    runner_store_close(s);
    cli_error(*quarantined ? "the node is quarantined: run the large run elsewhere"
                           : "repair the node, then run the same 'scaletune run' again",
              "health check %s on %s failed (%s, exit %d): %s; %zu failure%s on this node", when,
              node, h.check, h.status, h.why, n_fail, n_fail == 1 ? "" : "s");
    return 1;
}
