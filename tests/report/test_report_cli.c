/*
 * test_report_cli.c — `scaletune report` as a user runs it: a store from a real simulated
 * sweep, then the command with every output; exit statuses 0 (written), 1 (missing sweep,
 * unwritable path) and 2 (bad usage). Needs build/scaletune (made by `make`, which `make test`
 * runs first); prints SKIP when it is absent, as when only `make test-report` was run.
 */
#include <jansson.h>
#include <sys/wait.h>

#include "tests/report/report_test_util.h"

static char rt_cli[4200];

/* Runs the CLI with `args` (shell-quoted by the caller), output to a log; the exit status. */
static int cli(const char *args)
{
    char cmd[12000];
    snprintf(cmd, sizeof(cmd), "'%s' report %s > '%s/cli.log' 2>&1", rt_cli, args, rt_dir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(int argc, char **argv)
{
    (void)argc;
    rt_init(argv[0]);
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", argv[0]);
    char *abs = realpath(dirname(tmp), NULL);
    snprintf(rt_cli, sizeof(rt_cli), "%s/../../scaletune", abs ? abs : ".");
    free(abs);
    if (access(rt_cli, X_OK) != 0 || access(rt_sim, X_OK) != 0) {
        printf("SKIP scaletune or llmsim not built (run make)\n");
        rt_cleanup();
        return check_summary("report.cli");
    }
    char db[4200], args[24000]; /* the db path and four copies of the directory */
    snprintf(db, sizeof(db), "%s", rt_path("s.db"));
    CHECK_ST(rt_sweep(db, "cli", 12), ST_OK);

    snprintf(args, sizeof(args),
             "--db '%s' --sweep cli --out '%s/r.html' --json '%s/r.json' --csv '%s/r.csv' "
             "--md '%s/r.md' --bootstrap 50 --compute 1e19",
             db, rt_dir, rt_dir, rt_dir, rt_dir);
    CHECK(cli(args) == 0);
    char *h = rt_slurp(rt_path("r.html")), *c = rt_slurp(rt_path("r.csv"));
    char *m = rt_slurp(rt_path("r.md")), *log = rt_slurp(rt_path("cli.log"));
    CHECK(h && rt_count(h, "<svg") == 6 && rt_count(h, "</html>") == 1);
    CHECK(c && rt_count(c, "\n") == 13);
    CHECK(m && strstr(m, "## Recommendation at compute 1e+19"));
    CHECK(log && strstr(log, "12 runs"));
    json_error_t je;
    json_t *j = json_load_file(rt_path("r.json"), 0, &je);
    CHECK(j != NULL);
    CHECK_REL(json_number_value(json_object_get(json_object_get(j, "recommendation"), "compute")),
              1e19, 0);
    json_decref(j);
    free(h);
    free(c);
    free(m);
    free(log);

    /* the only sweep is found without --sweep */
    snprintf(args, sizeof(args), "--db '%s' --out '%s/r2.html' --bootstrap 0", db, rt_dir);
    CHECK(cli(args) == 0);
    CHECK(access(rt_path("r2.html"), R_OK) == 0);

    /* failures of the work: exit 1 with a message */
    snprintf(args, sizeof(args), "--db '%s' --sweep nope --out '%s/x.html'", db, rt_dir);
    CHECK(cli(args) == 1);
    log = rt_slurp(rt_path("cli.log"));
    CHECK(log && strstr(log, "nope") && strstr(log, "hint:"));
    free(log);
    snprintf(args, sizeof(args), "--db '%s' --out /nonexistent-dir/x.html", db);
    CHECK(cli(args) == 1);
    CHECK(access(rt_path("x.html"), F_OK) != 0);

    /* bad usage: exit 2 */
    CHECK(cli("--out x.html") == 2);
    snprintf(args, sizeof(args), "--db '%s' --out x.html --compute -5", db);
    CHECK(cli(args) == 2);
    snprintf(args, sizeof(args), "--db '%s' --out x.html --bogus 1", db);
    CHECK(cli(args) == 2);
    CHECK(cli("--help") == 0);
    rt_cleanup();
    return check_summary("report.cli");
}
