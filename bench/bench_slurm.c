/*
 * bench_slurm.c — `make bench-slurm`: sweep throughput on the one-node cluster of
 * scripts/slurm-localhost, in runs per minute, through each route of the Slurm backend (sbatch
 * and slurmrestd) with a no-op trainer (the fake trainer, one step). Baseline measured in the
 * same run: the same number of jobs of the same trainer submitted straight with sbatch, all at
 * once, waited for with squeue (what the scheduler itself can do, no bookkeeping, no optimizer).
 * Usage: bench_slurm PATH_TO_FAKE_TRAINER [N_RUNS]   (environment: scripts/slurm-localhost env)
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runner/runner.h"

#define SLOTS 8

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs per minute of a whole sweep through one route; <= 0 on failure. */
static double sweep_rate(const char *trainer, const char *dir, const char *via, int n)
{
    char text[8192], db[4200], be[2048], em[ST_ERRMSG_MAX];
    if (!strcmp(via, "cli"))
        snprintf(be, sizeof(be),
                 "backend: {kind: slurm, via: cli, poll_seconds: 0.2, "
                 "poll_max_seconds: 1}\n");
    else
        snprintf(be, sizeof(be),
                 "backend: {kind: slurm, via: rest, poll_seconds: 0.2, poll_max_seconds: 1, "
                 "rest: {url: '%s', user: root, token_file: '%s'}}\n",
                 getenv("ST_SLURM_REST_URL"), getenv("ST_SLURM_TOKEN_FILE"));
    snprintf(text, sizeof(text),
             "name: bench-%s\n"
             "command: ['%s', '--steps', '1', '--x', '{x}', '--x', '{y}']\n"
             "objective: {metric: val_loss}\n"
             "cost: {metric: flops}\n"
             "parameters:\n"
             "  x: {space: linear, min: -2, max: 3, center: 0}\n"
             "  y: {space: linear, min: -2, max: 3, center: 1}\n"
             "budget: {runs: %d}\n"
             "parallel: %d\n"
             "%s",
             via, trainer, n, SLOTS, be);
    snprintf(db, sizeof(db), "%s/%s.db", dir, via);
    runner_config *c = NULL;
    if (runner_config_load_string(text, strlen(text), "bench", &c, em)) {
        fprintf(stderr, "config: %s\n", em);
        return -1;
    }
    runner_options o = runner_options_default();
    o.db_path = db;
    runner *r = NULL;
    double t0 = now();
    st_status rc = runner_launch(c, &o, &r, em);
    if (rc)
        fprintf(stderr, "launch: %s\n", em);
    else if ((rc = runner_run(r)))
        fprintf(stderr, "run: %s\n", runner_errmsg(r));
    double t = now() - t0;
    runner_status s;
    runner_store *st = NULL;
    int ok = !rc && runner_store_open(db, &st, em) == ST_OK &&
             runner_store_status(st, NULL, &s) == ST_OK &&
             s.n_by_status[RUNNER_RUN_SUCCEEDED] == (size_t)n;
    if (!ok)
        fprintf(stderr, "bench-%s: not every run succeeded (store: %s)\n", via, db);
    runner_store_close(st);
    runner_destroy(r);
    runner_config_destroy(c);
    return ok ? n / t * 60 : -1;
}

/* The baseline: n jobs submitted straight with sbatch, then squeue until none is left. */
static double direct_rate(const char *trainer, const char *dir, int n)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd),
             "ids=; for i in $(seq %d); do id=$(sbatch --parsable --no-requeue -o /dev/null "
             "--chdir='%s' --wrap \"'%s' --steps 1 > /dev/null\") || exit 1; ids=$ids,$id; done; "
             "ids=${ids#,}; while [ -n \"$(squeue -h -t PD,R,CG,CF -j $ids -o %%i 2>/dev/null)\" "
             "]; do sleep 0.1; done",
             n, dir, trainer);
    double t0 = now();
    int rc = system(cmd);
    double t = now() - t0;
    return rc == 0 ? n / t * 60 : -1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_slurm FAKE_TRAINER [N_RUNS]\n");
        return 2;
    }
    if (!getenv("SLURM_CONF") || !getenv("ST_SLURM_REST_URL")) {
        fprintf(stderr, "bench_slurm: no cluster (run `make bench-slurm`)\n");
        return 2;
    }
    int n = argc > 2 ? atoi(argv[2]) : 48;
    char *trainer = realpath(argv[1], NULL); /* jobs start in their attempt directories */
    if (!trainer) {
        perror(argv[1]);
        return 2;
    }
    st_global_init();
    char dir[] = "/tmp/st-bench-slurm-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    double direct = direct_rate(trainer, dir, n);
    double cli = sweep_rate(trainer, dir, "cli", n);
    double rest = sweep_rate(trainer, dir, "rest", n);
    free(trainer);
    printf("# %d runs of a no-op trainer, %d slots, one node with %d CPUs\n", n, SLOTS, SLOTS);
    printf("BENCH slurm.runs_per_min via=sbatch_direct %.1f\n", direct);
    printf("BENCH slurm.runs_per_min via=cli %.1f\n", cli);
    printf("BENCH slurm.runs_per_min via=rest %.1f\n", rest);
    if (direct > 0) {
        printf("BENCH slurm.vs_direct via=cli %.2f\n", cli / direct);
        printf("BENCH slurm.vs_direct via=rest %.2f\n", rest / direct);
    }
    char rm[128];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", dir);
    if (!getenv("ST_BENCH_KEEP") && system(rm) != 0)
        fprintf(stderr, "cleanup failed\n");
    st_global_cleanup();
    return direct > 0 && cli > 0 && rest > 0 ? 0 : 1;
}
