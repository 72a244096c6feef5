/*
 * test_study_asktell.c — store-backed ask/tell of a sweep in study mode (optimizer.goal
 * extrapolate) gets study/'s proposer, as the controller of `scaletune sweep launch` does.
 * Until 2026-11-27 every ask of such a sweep silently handed out CARBS' suggestions.
 *  - Without a proposer installed, runner_store_ask refuses the sweep (ST_EINVAL) with a message
 *    that names what to install, and records no run.
 *  - The reference is the controller: `scaletune sweep launch` of the same sweep file (llmsim,
 *    parallel 1: 12 design points, then 8 from the acquisition fitting the engine) into one store.
 *    Into a second store, 20 asks with study_proposer installed, each told the outcome and the
 *    final record of the controller's run at the same index, must give the controller's
 *    settings run for run.
 *  - `scaletune sweep ask` on a third store (the same sweep, nothing told) prints the
 *    controller's first setting.
 */
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "study/study.h"
#include "study/study_int.h"
#include "tests/check.h"

#define N_RUNS   20
#define N_DESIGN 12
#define N_PAR    4 /* N, tokens, lr, batch */

static char dir[256], cli_path[4200], sim_path[4200];

static void sweep_yaml(char *y, size_t n)
{
    snprintf(y, n,
             "name: world\n"
             "command: [\"%s\", \"--N\", \"{N}\", \"--tokens\", \"{tokens}\", \"--lr\", \"{lr}\",\n"
             "          \"--batch\", \"{batch}\", \"--seed\", \"{_run}\"]\n"
             "objective: {metric: val_loss}\n"
             "cost: {metric: flops, expr: \"6 * {N} * {tokens}\"}\n"
             "budget: {runs: %d, max_cost_per_run: 1.0e16}\n"
             "parallel: 1\n"
             "seed: 5\n"
             "optimizer: {goal: extrapolate, target_factor: 100, initial_design: %d}\n"
             "parameters:\n"
             "  N:       {space: log, min: 2.0e6, max: 6.0e7, center: 1.0e7}\n"
             "  tokens:  {space: log, min: 4.0e7, max: 2.0e9, center: 2.0e8}\n"
             "  lr:      {space: log, min: 1.0e-4, max: 1.0e-2, center: 2.0e-3}\n"
             "  batch:   {space: log, min: 2000, max: 1.0e6, center: 3.0e4}\n",
             sim_path, N_RUNS, N_DESIGN);
}

/* The controller's sweep: `scaletune sweep launch` into dir/launch.db; *out its runs. */
static int launch(runner_sweep **out)
{
    char y[8192], path[512], db[512], cmd[8192], em[ST_ERRMSG_MAX];
    sweep_yaml(y, sizeof(y));
    snprintf(path, sizeof(path), "%s/world.yaml", dir);
    snprintf(db, sizeof(db), "%s/launch.db", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(y, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "'%s' sweep launch '%s' --db '%s' > '%s/launch.log' 2>&1", cli_path,
             path, db, dir);
    if (system(cmd) != 0)
        return -1;
    runner_store *s = NULL;
    if (runner_store_open(db, &s, em))
        return -1;
    st_status rc = runner_store_read_sweep(s, "world", out);
    runner_store_close(s);
    return rc ? -1 : 0;
}

/* A store at dir/NAME.db holding the sweep and nothing else; *s open on it. */
static st_status fresh_store(const char *name, runner_store **s, char *db, size_t n)
{
    char y[8192], em[ST_ERRMSG_MAX];
    sweep_yaml(y, sizeof(y));
    snprintf(db, n, "%s/%s.db", dir, name);
    st_status rc = runner_store_create_sweep(db, y, em);
    if (rc) {
        fprintf(stderr, "create: %s\n", em);
        return rc;
    }
    return runner_store_open(db, s, em);
}

static void test_refused_without_proposer(void)
{
    char db[512];
    runner_store *s = NULL;
    CHECK_ST(fresh_store("bare", &s, db, sizeof(db)), ST_OK);
    uint64_t id = 0;
    double x[N_PAR];
    CHECK_ST(runner_store_ask(s, "world", &id, x, N_PAR), ST_EINVAL);
    const char *m = runner_store_errmsg(s);
    CHECK(strstr(m, "study mode") && strstr(m, "runner_store_set_proposer"));
    runner_status st;
    CHECK_ST(runner_store_status(s, "world", &st), ST_OK);
    CHECK(st.n_runs == 0);
    /* installed, the same store asks */
    runner_store_set_proposer(s, study_proposer, NULL);
    CHECK_ST(runner_store_ask(s, "world", &id, x, N_PAR), ST_OK);
    runner_store_close(s);
}

/* 12 asks told the controller's outcomes give the controller's settings. */
static void test_same_as_controller(const runner_sweep *ref)
{
    char db[512];
    runner_store *s = NULL;
    CHECK_ST(fresh_store("asked", &s, db, sizeof(db)), ST_OK);
    runner_store_set_proposer(s, study_proposer, NULL);
    size_t same = 0, acquired = 0;
    for (size_t i = 0; s && i < ref->n_runs; i++) {
        const runner_sweep_run *r = &ref->runs[i];
        uint64_t id = 0;
        double x[N_PAR];
        st_status rc = runner_store_ask(s, "world", &id, x, N_PAR);
        if (rc)
            fprintf(stderr, "ask %zu: %s\n", i, runner_store_errmsg(s));
        CHECK_ST(rc, ST_OK);
        if (rc)
            break;
        int eq = 1;
        for (size_t j = 0; j < N_PAR; j++)
            eq &= fabs(x[j] - r->x[j]) <= 1e-12 * fabs(r->x[j]);
        if (!eq)
            fprintf(stderr,
                    "run %zu: asked N %.6g tokens %.6g lr %.6g batch %.6g, the controller "
                    "%.6g %.6g %.6g %.6g\n",
                    i, x[0], x[1], x[2], x[3], r->x[0], r->x[1], r->x[2], r->x[3]);
        same += eq;
        acquired += eq && i >= N_DESIGN;
        char fin[256];
        snprintf(fin, sizeof(fin), "{\"event\":\"final\",\"params\":%.17g,\"tokens\":%.17g}",
                 r->final_N, r->final_D);
        int failed = r->status != RUNNER_RUN_SUCCEEDED;
        CHECK_ST(runner_store_tell_final(s, "world", id, failed ? NAN : r->objective, r->cost,
                                         failed, isfinite(r->final_N) ? fin : NULL),
                 ST_OK);
    }
    /* the picks past the design came from the engine's acquisition, not the design's fallback
     * (study_propose goes on with the design while the engine cannot fit) */
    study_space sp;
    char em[ST_ERRMSG_MAX];
    size_t planned = 0;
    if (study_space_init(&sp, ref->cfg, NULL, em) == ST_OK) {
        double u[N_PAR], xd[N_PAR];
        for (size_t i = N_DESIGN; i < ref->n_runs; i++) {
            study_design_units(sp.P, ref->cfg->seed, i, 1, u);
            study_design_levels(&sp, ref->cfg->seed, i, u);
            study_design_point(&sp, u, xd);
            planned += memcmp(xd, ref->runs[i].x, sizeof(xd)) != 0;
        }
        study_space_clear(&sp);
    }
    printf("%zu of the %d runs past the design were the acquisition's\n", planned,
           N_RUNS - N_DESIGN);
    CHECK(planned >= 1);
    printf("ask/tell against the controller: %zu of %zu settings the same (%zu past the design)\n",
           same, ref->n_runs, acquired);
    CHECK(same == ref->n_runs && ref->n_runs == N_RUNS);
    runner_store_close(s);
}

/* `scaletune sweep ask` prints the controller's first setting. */
static void test_cli_ask(const runner_sweep *ref)
{
    char db[512], cmd[8192], path[600];
    runner_store *s = NULL;
    CHECK_ST(fresh_store("cli", &s, db, sizeof(db)), ST_OK);
    runner_store_close(s);
    snprintf(path, sizeof(path), "%s/ask.out", dir);
    snprintf(cmd, sizeof(cmd), "'%s' sweep ask --db '%s' > '%s' 2>&1", cli_path, db, path);
    CHECK(system(cmd) == 0);
    FILE *f = fopen(path, "r");
    char line[512];
    double v[N_PAR] = {NAN, NAN, NAN, NAN};
    static const char *const names[N_PAR] = {"N=", "tokens=", "lr=", "batch="};
    while (f && fgets(line, sizeof(line), f))
        for (size_t j = 0; j < N_PAR; j++)
            if (!strncmp(line, names[j], strlen(names[j])))
                v[j] = strtod(line + strlen(names[j]), NULL);
    if (f)
        fclose(f);
    for (size_t j = 0; j < N_PAR; j++)
        CHECK_REL(v[j], ref->runs[0].x[j], 1e-12);
}

int main(int argc, char **argv)
{
    (void)argc;
    check_build_path(argv[0], "../../scaletune", cli_path, sizeof(cli_path));
    check_build_path(argv[0], "../../bench/llmsim/llmsim", sim_path, sizeof(sim_path));
    st_global_init();
    snprintf(dir, sizeof(dir), "/tmp/st_studyask_XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    test_refused_without_proposer();
    runner_sweep *ref = NULL;
    if (access(cli_path, X_OK) != 0 || access(sim_path, X_OK) != 0)
        printf("SKIP the comparison with the controller: scaletune or llmsim not built (run "
               "make)\n");
    else if (launch(&ref) != 0)
        CHECK(!"scaletune sweep launch of the study-mode sweep failed (launch.log)");
    else {
        test_same_as_controller(ref);
        test_cli_ask(ref);
    }
    runner_sweep_free(ref);
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (!getenv("KEEP_TMP") && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("study.asktell");
}
