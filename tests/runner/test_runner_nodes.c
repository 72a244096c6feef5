/*
 * test_runner_nodes.c — the large run's nodes (docs/large-run.md): a job submitted to Slurm
 * after a node is quarantined excludes it (a fake sbatch keeps its argv: the first job has no
 * --exclude, the jobs after the quarantine have the quarantined nodes, a name no scheduler can
 * take is left out), and the throughput per node (runner_store_node_rates): two nodes named
 * by $SCALETUNE_NODE, one slowed, the slow one reported, the other not.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runner/largerun.h"
#include "runner_test_util.h"

static int write_script(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    fclose(f);
    return chmod(path, 0755);
}

typedef struct hook_state {
    const char *db;
    int n_launch;
} hook_state;

/* Before the second launch, two nodes are quarantined (two failed checks each) and a third
 * with a name sbatch cannot take. */
static void quarantine_hook(const char *point, void *data)
{
    hook_state *h = data;
    if (strcmp(point, "launch") || ++h->n_launch != 2)
        return;
    runner_store *s = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_store_open(h->db, &s, em), ST_OK);
    runner_health_result fail = {0, 1, "scripts/health/nic-up", 1, "ib0 is down"};
    const char *nodes[] = {"gpu-7", "odd,name", "gpu-9"};
    int q = 0;
    for (size_t i = 0; i < 3; i++)
        for (int k = 0; k < 2; k++)
            CHECK_ST(runner_store_health_record(s, "excl", nodes[i], &fail, 2, NULL, &q), ST_OK);
    CHECK(q == 1);
    runner_store_close(s);
}

static void test_slurm_exclude(void)
{
    char bin[4300], path[8600], f[4400], text[4400];
    snprintf(bin, sizeof(bin), "%s", tu_path("bin"));
    CHECK(mkdir(bin, 0755) == 0);
    snprintf(f, sizeof(f), "%s/sbatch", bin);
    /* one line of argv per submission; then runs the job script, as Slurm would */
    snprintf(text, sizeof(text),
             "#!/bin/sh\n"
             "echo \"$*\" >> '%s'\n"
             "for a in \"$@\"; do s=$a; done\n"
             "id=$$\n"
             "(SLURM_JOB_ID=$id SLURMD_NODENAME=gpu-1 exec bash \"$s\") </dev/null >/dev/null "
             "2>&1 &\n"
             "echo $id\n",
             tu_path("sbatch.log"));
    CHECK(write_script(f, text) == 0);
    snprintf(f, sizeof(f), "%s/squeue", bin);
    CHECK(write_script(f,
                       "#!/bin/sh\n"
                       "while [ $# -gt 0 ]; do\n"
                       "  [ \"$1\" = -j ] && echo \"$2\" | tr , '\\n' | sed 's/$/|RUNNING|None/'\n"
                       "  shift\n"
                       "done\n"
                       "exit 0\n") == 0);
    const char *old = getenv("PATH");
    char *saved = old ? strdup(old) : NULL;
    snprintf(path, sizeof(path), "%s:%s", bin, old ? old : "/usr/bin:/bin");
    setenv("PATH", path, 1);

    runner_config *c = tu_config("excl", "'--steps', '3'",
                                 "budget: {runs: 3}\n"
                                 "backend: {kind: slurm, poll_seconds: 0.05, "
                                 "extra: ['--exclude=other']}\n");
    CHECK(c != NULL);
    if (!c)
        return;
    char db[4200];
    snprintf(db, sizeof(db), "%s", tu_path("excl.db"));
    hook_state h = {db, 0};
    runner_options o = runner_options_default();
    o.db_path = db;
    o.poll_seconds = 0.01;
    o.pause_hook = quarantine_hook;
    o.pause_data = &h;
    runner *r = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_launch(c, &o, &r, em), ST_OK);
    if (r) {
        CHECK_ST(runner_run(r), ST_OK);
        CHECK(runner_finished(r));
        runner_destroy(r);
    }
    if (saved)
        setenv("PATH", saved, 1);
    free(saved);

    FILE *lf = fopen(tu_path("sbatch.log"), "r");
    CHECK(lf != NULL);
    char line[8192];
    int n = 0;
    while (lf && fgets(line, sizeof(line), lf)) {
        n++;
        if (n == 1) /* before the quarantine: the file's own only */
            CHECK(!strstr(line, "--exclude=gpu") && strstr(line, " --exclude=other "));
        else /* after: one --exclude (sbatch keeps the last), the file's own merged in */
            CHECK(strstr(line, " --exclude=gpu-7,gpu-9,other ") &&
                  !strstr(strstr(line, "--exclude") + 1, "--exclude"));
        CHECK(!strstr(line, "odd"));
    }
    if (lf)
        fclose(lf);
    CHECK(n == 3);
    /* each attempt's host is the node its job script recorded, not the controller's */
    CHECK(tu_query(db, "SELECT count(*) FROM attempts WHERE host = 'gpu-1'") == 3);
    CHECK(tu_query(db, "SELECT count(*) FROM runs WHERE status = 2") == 3);
    runner_config_destroy(c);
}

/* Runs 1-3 on node-a, 4-6 on node-b ($SCALETUNE_NODE, read at each launch). */
static void node_hook(const char *point, void *data)
{
    hook_state *h = data;
    if (!strcmp(point, "launch"))
        setenv("SCALETUNE_NODE", ++h->n_launch <= 3 ? "node-a" : "node-b", 1);
}

static void test_node_rates(void)
{
    /* node-b sleeps 5x as long per step: about 1/5 of node-a's tokens/s */
    runner_config *c = tu_config("nodes",
                                 "'--steps', '8', '--sleep-ms', '15', '--checkpoint', "
                                 "'{_checkpoint}', '--slow-node', 'node-b', '--slow-factor', '5'",
                                 "budget: {runs: 6}\n");
    CHECK(c != NULL);
    if (!c)
        return;
    char db[4200];
    snprintf(db, sizeof(db), "%s", tu_path("nodes.db"));
    hook_state h = {db, 0};
    runner_options o = runner_options_default();
    o.db_path = db;
    o.poll_seconds = 0.005;
    o.pause_hook = node_hook;
    o.pause_data = &h;
    runner *r = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_launch(c, &o, &r, em), ST_OK);
    if (r) {
        CHECK_ST(runner_run(r), ST_OK);
        runner_destroy(r);
    }
    unsetenv("SCALETUNE_NODE");
    CHECK(tu_query(db, "SELECT count(*) FROM attempts WHERE host = 'node-a'") == 3);
    CHECK(tu_query(db, "SELECT count(*) FROM attempts WHERE host = 'node-b'") == 3);

    runner_store *s = NULL;
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    if (!s)
        return;
    runner_node_rate nr[4];
    size_t n = 0;
    double all = NAN;
    CHECK_ST(runner_store_node_rates(s, "nodes", 0.5, 4, &n, nr, &all), ST_OK);
    CHECK(n == 2);
    if (n == 2) {
        CHECK(!strcmp(nr[0].node, "node-a") && !strcmp(nr[1].node, "node-b"));
        CHECK(nr[0].n_attempts == 3 && nr[1].n_attempts == 3);
        CHECK(nr[0].tokens_per_s > 3 * nr[1].tokens_per_s);
        CHECK(!nr[0].slow && nr[1].slow);
        CHECK_REL(all, 0.5 * (nr[0].tokens_per_s + nr[1].tokens_per_s), 1e-12);
        fprintf(stderr, "node-a %.4g tokens/s, node-b %.4g\n", nr[0].tokens_per_s,
                nr[1].tokens_per_s);
    }
    /* off: no node is slow; a bad fraction, an unknown sweep */
    CHECK_ST(runner_store_node_rates(s, "nodes", 0, 4, &n, nr, NULL), ST_OK);
    CHECK(n == 2 && !nr[0].slow && !nr[1].slow);
    CHECK_ST(runner_store_node_rates(s, "nodes", 1, 4, &n, nr, NULL), ST_EINVAL);
    CHECK_ST(runner_store_node_rates(s, "nosuch", 0.5, 4, &n, nr, NULL), ST_ENOTFOUND);
    /* cap 0 still counts */
    CHECK_ST(runner_store_node_rates(s, "nodes", 0.5, 0, &n, NULL, NULL), ST_OK);
    CHECK(n == 2);
    runner_store_close(s);
    runner_config_destroy(c);
}

int main(int argc, char **argv)
{
    (void)argc;
    st_global_init();
    tu_init(argv[0]);
    test_slurm_exclude();
    test_node_rates();
    tu_cleanup();
    st_global_cleanup();
    return check_summary("runner.nodes");
}
