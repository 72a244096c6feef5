/*
 * largerun_nodes.c — throughput per node (runner/largerun.h): the tokens_per_s of the step
 * records, grouped by the node each attempt ran on (the attempt's host), and the nodes well below
 * the others. Per attempt, the median of its last NODE_POINTS records; per node, the median of
 * those over its last NODE_ATTEMPTS attempts; a node is slow below a fraction of the median of
 * all nodes. A read of the store only: no schema change, no lease, nothing printed.
 */
#include "runner/largerun.h"
#include "runner/runner_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NODE_POINTS   200 /* step records per attempt, its latest */
#define NODE_ATTEMPTS 20  /* attempts per node, its latest */

/* What the scan has of the node and attempt it is in. */
typedef struct scan {
    double pts[NODE_POINTS], att[NODE_ATTEMPTS];
    size_t n_pts, n_att, n_att_all;
    runner_node_rate *nodes;
    size_t n_nodes, cap_nodes;
    char node[sizeof(((runner_node_rate *)0)->node)];
} scan;

/* The attempt's points are all read: its median joins its node's (the latest NODE_ATTEMPTS). */
static void end_attempt(scan *sc)
{
    if (!sc->n_pts)
        return;
    double m = runner_median_inplace(sc->pts, sc->n_pts);
    sc->n_pts = 0;
    sc->n_att_all++;
    if (sc->n_att < NODE_ATTEMPTS)
        sc->att[sc->n_att++] = m;
}

/* The node's attempts are all read: one row. -1 when out of memory. */
static int end_node(scan *sc)
{
    end_attempt(sc);
    if (!sc->n_att)
        return 0;
    if (sc->n_nodes == sc->cap_nodes) {
        size_t nc = sc->cap_nodes ? 2 * sc->cap_nodes : 16;
        runner_node_rate *nn = realloc(sc->nodes, nc * sizeof(*nn));
        if (!nn)
            return -1;
        sc->nodes = nn;
        sc->cap_nodes = nc;
    }
    runner_node_rate *r = &sc->nodes[sc->n_nodes++];
    memset(r, 0, sizeof(*r));
    snprintf(r->node, sizeof(r->node), "%s", sc->node);
    r->n_attempts = sc->n_att_all;
    r->tokens_per_s = runner_median_inplace(sc->att, sc->n_att);
    sc->n_att = sc->n_att_all = 0;
    return 0;
}

st_status runner_store_node_rates(runner_store *s, const char *sweep, double slow_fraction,
                                  size_t cap, size_t *n, runner_node_rate *out, double *median_all)
{
    s->errmsg[0] = '\0';
    *n = 0;
    if (median_all)
        *median_all = NAN;
    if (!(slow_fraction >= 0 && slow_fraction < 1))
        return st_errf(s->errmsg, ST_EINVAL, "slow_fraction must be in [0, 1)");
    int64_t id;
    st_status rc = store_find_sweep(s, sweep, &id, NULL);
    if (rc)
        return rc;
    /* newest attempt first within a node, newest point first within an attempt; only lines
     * that can hold the metric are parsed */
    sqlite3_stmt *st = store_stmt(
        s, "SELECT a.host, a.id, mp.line FROM metric_points mp JOIN attempts a ON a.id ="
           " mp.attempt_id JOIN runs r ON r.id = a.run_id WHERE r.sweep_id = ?1 AND mp.event = ?2"
           " AND a.host IS NOT NULL AND a.host <> '' AND instr(mp.line, 'tokens_per_s') > 0"
           " ORDER BY a.host, a.id DESC, mp.rowid DESC");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int(st, 2, (int)RUNNER_EVENT_STEP);
    scan *sc = calloc(1, sizeof(*sc));
    if (!sc) {
        sqlite3_reset(st);
        return ST_ENOMEM;
    }
    int64_t attempt = -1;
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        const char *host = (const char *)sqlite3_column_text(st, 0);
        int64_t att = sqlite3_column_int64(st, 1);
        const char *line = (const char *)sqlite3_column_text(st, 2);
        if (!host || !line)
            continue;
        if (strncmp(host, sc->node, sizeof(sc->node) - 1) != 0) {
            if (sc->node[0] && end_node(sc)) {
                rc = ST_ENOMEM;
                break;
            }
            snprintf(sc->node, sizeof(sc->node), "%s", host);
            attempt = -1;
        }
        if (att != attempt) {
            end_attempt(sc);
            attempt = att;
        }
        runner_metrics_line l;
        double tps;
        if (sc->n_pts < NODE_POINTS && runner_metrics_parse(line, strlen(line), &l) == ST_OK &&
            runner_metrics_get(&l, "tokens_per_s", &tps) && tps > 0 && isfinite(tps))
            sc->pts[sc->n_pts++] = tps;
    }
    sqlite3_reset(st);
    if (!rc && src != SQLITE_DONE)
        rc = store_fail(s, src, "reading throughput per node");
    if (!rc && sc->node[0] && end_node(sc))
        rc = ST_ENOMEM;

    /* the median of all nodes, and the slow ones */
    double *v = NULL;
    if (!rc && sc->n_nodes && !(v = malloc(sc->n_nodes * sizeof(double))))
        rc = ST_ENOMEM;
    if (!rc && sc->n_nodes) {
        for (size_t i = 0; i < sc->n_nodes; i++)
            v[i] = sc->nodes[i].tokens_per_s;
        double all = runner_median_inplace(v, sc->n_nodes);
        for (size_t i = 0; i < sc->n_nodes; i++)
            sc->nodes[i].slow = sc->nodes[i].tokens_per_s < slow_fraction * all;
        if (median_all)
            *median_all = all;
        *n = sc->n_nodes;
        if (out)
            memcpy(out, sc->nodes, (cap < sc->n_nodes ? cap : sc->n_nodes) * sizeof(*out));
    }
    free(v);
    free(sc->nodes);
    free(sc);
    return rc;
}
