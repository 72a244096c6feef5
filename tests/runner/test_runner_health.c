/*
 * test_runner_health.c — health checks and quarantine of the large run (runner/largerun.h):
 * the large_run block of a sweep file (defaults, values, bad values); checks run in order and
 * stop at the first failure, with their exit status, last output line and environment; a check
 * past its time limit is killed with what it started; a node that fails twice is quarantined
 * with why, once; the shipped examples (scripts/health/) pass here, and dmesg-new fails on a
 * new kernel error line (a stand-in dmesg) and only once.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runner/largerun.h"
#include "runner_test_util.h"

static double runner_mono_test(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static runner_config *load(const char *large, char *em)
{
    char text[20000];
    snprintf(text, sizeof(text),
             "name: h\ncommand: [/bin/true]\nobjective: {metric: val_loss}\n"
             "parameters:\n  p: {value: 1}\nbudget: {runs: 1}\n%s",
             large);
    runner_config *c = NULL;
    runner_config_load_string(text, strlen(text), "h", &c, em);
    return c;
}

static void test_config(void)
{
    char em[ST_ERRMSG_MAX];
    runner_config *c = load("", em);
    CHECK(c && c->large.n_health_checks == 0 && c->large.quarantine_after == 2 &&
          c->large.straggler_fraction == 0.5 && c->large.straggler_window == 5 &&
          c->large.spike_factor == 1.5 && c->large.spike_window == 20 &&
          c->large.health_timeout_seconds == 60 && !c->large.restart_on_straggler &&
          c->large.slow_node_fraction == 0.5);
    runner_config_destroy(c);
    c = load("large_run:\n  health_checks: ['a 1', b]\n  quarantine_after: 3\n"
             "  restart_on_straggler: true\n  straggler_fraction: 0.25\n  straggler_window: 7\n"
             "  spike_factor: 0\n  spike_window: 9\n  health_timeout_seconds: 2.5\n"
             "  slow_node_fraction: 0.7\n",
             em);
    CHECK(c && c->large.n_health_checks == 2 && !strcmp(c->large.health_checks[0], "a 1") &&
          !strcmp(c->large.health_checks[1], "b") && c->large.quarantine_after == 3 &&
          c->large.restart_on_straggler && c->large.straggler_fraction == 0.25 &&
          c->large.straggler_window == 7 && c->large.spike_factor == 0 &&
          c->large.spike_window == 9 && c->large.health_timeout_seconds == 2.5 &&
          c->large.slow_node_fraction == 0.7);
    runner_config_destroy(c);
    const char *bad[][2] = {
        {"large_run:\n  straggler_fraction: 1\n", "straggler_fraction"},
        {"large_run:\n  spike_factor: 0.5\n", "spike_factor"},
        {"large_run:\n  slow_node_fraction: -0.1\n", "slow_node_fraction"},
        {"large_run:\n  quarantine_after: 0\n", "quarantine_after"},
        {"large_run:\n  health_checks: x\n", "health_checks"},
        /* a repeated list key is refused (fuzz_config: the first list leaked) */
        {"large_run:\n  health_checks: [a]\n  health_checks: [b]\n", "given twice"},
        {"large_run:\n  nodes: 3\n", "unknown key in large_run"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        em[0] = '\0';
        c = load(bad[i][0], em);
        CHECK(!c && strstr(em, bad[i][1]));
        if (c || !strstr(em, bad[i][1]))
            fprintf(stderr, "  %s -> %s\n", bad[i][0], em);
        runner_config_destroy(c);
    }
}

static void script(const char *path, const char *body)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "#!/bin/sh\n%s\n", body);
        fclose(f);
    }
    chmod(path, 0755);
}

static void test_checks(void)
{
    char em[ST_ERRMSG_MAX], large[16384], ok[4200], bad[4200], hang[4200], env[4200];
    snprintf(ok, sizeof(ok), "%s", tu_path("ok.sh"));
    snprintf(bad, sizeof(bad), "%s", tu_path("bad.sh"));
    snprintf(hang, sizeof(hang), "%s", tu_path("hang.sh"));
    snprintf(env, sizeof(env), "%s", tu_path("env.sh"));
    script(ok, "echo fine; exit 0");
    script(bad, "echo first line; echo \"disk on fire: $1\" >&2; exit 3");
    script(hang, "sleep 30 & wait; echo never");
    script(env, "echo \"$SCALETUNE_NODE $SCALETUNE_SWEEP $(basename $SCALETUNE_HEALTH_DIR)\"; "
                "test -d \"$SCALETUNE_HEALTH_DIR\" && exit 1");

    /* in order, stopping at the first failure, with its argument, status and last line */
    snprintf(large, sizeof(large), "large_run:\n  health_checks: ['%s', '%s  sda1', '%s']\n", ok,
             bad, env);
    runner_config *c = load(large, em);
    runner_health_result h;
    CHECK_ST(runner_health_run(c, "node-a", tu_path("state/node-a"), &h, em), ST_OK);
    CHECK(!h.ok && h.n_run == 2 && h.status == 3 && !strcmp(h.why, "disk on fire: sda1"));
    CHECK(strstr(h.check, "bad.sh  sda1") != NULL);
    runner_config_destroy(c);

    /* the environment: node, sweep, a state directory that exists */
    snprintf(large, sizeof(large), "large_run:\n  health_checks: ['%s', '%s']\n", ok, env);
    c = load(large, em);
    CHECK_ST(runner_health_run(c, "node-b", tu_path("state/node-b"), &h, em), ST_OK);
    CHECK(!h.ok && h.n_run == 2 && h.status == 1 && !strcmp(h.why, "node-b h node-b"));
    runner_config_destroy(c);

    /* past the time limit: killed, its child too (the wait would last 30 s otherwise) */
    snprintf(large, sizeof(large),
             "large_run:\n  health_checks: ['%s']\n  health_timeout_seconds: 0.3\n", hang);
    c = load(large, em);
    double t0 = runner_mono_test();
    CHECK_ST(runner_health_run(c, "node-a", tu_path("state/node-a"), &h, em), ST_OK);
    CHECK(!h.ok && h.status == -1 && strstr(h.why, "did not finish within 0.3 s"));
    CHECK(runner_mono_test() - t0 < 5);
    runner_config_destroy(c);

    /* a program that does not exist: 127 and why; no checks: healthy */
    c = load("large_run:\n  health_checks: [/nonexistent/check]\n", em);
    CHECK_ST(runner_health_run(c, "node-a", tu_path("state/node-a"), &h, em), ST_OK);
    CHECK(!h.ok && h.status == 127 && strstr(h.why, "cannot start /nonexistent/check"));
    runner_config_destroy(c);
    c = load("", em);
    CHECK_ST(runner_health_run(c, "node-a", tu_path("state/node-a"), &h, em), ST_OK);
    CHECK(h.ok && h.n_run == 0);
    runner_config_destroy(c);
}

/* A node failing twice is quarantined with why, once; passing results record nothing. */
static void test_quarantine(void)
{
    char em[ST_ERRMSG_MAX], db[4200];
    snprintf(db, sizeof(db), "%s", tu_path("q.db"));
    CHECK_ST(runner_store_create_sweep(db,
                                       "name: big\nobjective: {metric: val_loss}\n"
                                       "parameters:\n  p: {value: 1}\nbudget: {runs: 1}\n",
                                       em),
             ST_OK);
    runner_store *s = NULL;
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    runner_health_result fail = {0, 1, "scripts/health/disk-free 5", 1, "0.1 GB free"};
    runner_health_result pass = {1, 1, "", 0, ""};
    size_t nf = 9;
    int q = 9;
    CHECK_ST(runner_store_health_record(s, "big", "node-a", &pass, 2, &nf, &q), ST_OK);
    CHECK(nf == 0 && q == 0);
    CHECK_ST(runner_store_health_record(s, "big", "node-a", &fail, 2, &nf, &q), ST_OK);
    CHECK(nf == 1 && q == 0);
    /* another node's failure is its own; a name that extends node-a's is another node */
    CHECK_ST(runner_store_health_record(s, "big", "node-a2", &fail, 2, &nf, &q), ST_OK);
    CHECK(nf == 1 && q == 0);
    CHECK_ST(runner_store_health_record(s, "big", "node-a", &pass, 2, &nf, &q), ST_OK);
    CHECK(nf == 1 && q == 0);
    CHECK_ST(runner_store_health_record(s, "big", "node-a", &fail, 2, &nf, &q), ST_OK);
    CHECK(nf == 2 && q == 1);
    CHECK_ST(runner_store_health_record(s, "big", "node-a", &fail, 2, &nf, &q), ST_OK);
    CHECK(nf == 3 && q == 1);
    runner_quarantine qs[4];
    size_t n = 0;
    CHECK_ST(runner_store_quarantined(s, "big", 4, &n, qs), ST_OK);
    CHECK(n == 1 && !strcmp(qs[0].node, "node-a") && qs[0].t > 0);
    CHECK(n == 1 && strstr(qs[0].why, "2 failed health checks; the last: scripts/health/disk-free "
                                      "5: exit 1: 0.1 GB free"));
    CHECK(tu_query(db, "SELECT count(*) FROM events WHERE kind = 'health:fail'") == 4);
    CHECK_ST(runner_store_quarantined(s, "nosuch", 4, &n, qs), ST_ENOTFOUND);
    runner_store_close(s);
}

/* The shipped checks: disk-free passes with 0 GB asked and fails with an absurd amount;
 * nvidia-smi passes here (absent, or a healthy GPU); dmesg-new with a stand-in dmesg: the
 * first run records, a new error line fails once. */
static void test_examples(void)
{
    if (access("scripts/health/disk-free", X_OK)) {
        printf("SKIP health.examples: run from the repository root\n");
        return;
    }
    char em[ST_ERRMSG_MAX], large[8192], bin[4200], log[4200];
    snprintf(bin, sizeof(bin), "%s", tu_path("bin"));
    snprintf(log, sizeof(log), "%s", tu_path("kern.log"));
    mkdir(bin, 0755);
    char fake[4400], body[4400];
    snprintf(fake, sizeof(fake), "%s/dmesg", bin);
    snprintf(body, sizeof(body), "cat '%s'", log);
    script(fake, body);
    FILE *f = fopen(log, "w");
    if (f) {
        fputs("[    1.0] usb 1-1: new device\n[    2.0] NVRM: Xid 79: GPU has fallen off\n", f);
        fclose(f);
    }
    char *path = getenv("PATH"), newpath[8192];
    snprintf(newpath, sizeof(newpath), "%s:%s", bin, path ? path : "/usr/bin:/bin");
    setenv("PATH", newpath, 1);
    snprintf(
        large, sizeof(large),
        "large_run:\n  health_checks: ['scripts/health/disk-free 0', scripts/health/nvidia-smi,"
        " scripts/health/dmesg-new]\n");
    runner_config *c = load(large, em);
    runner_health_result h;
    char state[4200];
    snprintf(state, sizeof(state), "%s", tu_path("state/ex"));
    CHECK_ST(runner_health_run(c, "ex", state, &h, em), ST_OK);
    CHECK(h.ok && h.n_run == 3);
    if (!h.ok)
        fprintf(stderr, "  %s: %s\n", h.check, h.why);
    CHECK_ST(runner_health_run(c, "ex", state, &h, em), ST_OK);
    CHECK(h.ok);
    f = fopen(log, "a");
    if (f) {
        fputs("[    9.5] mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 5\n", f);
        fclose(f);
    }
    CHECK_ST(runner_health_run(c, "ex", state, &h, em), ST_OK);
    CHECK(!h.ok && h.n_run == 3 && h.status == 1 && strstr(h.why, "1 new kernel error line") &&
          strstr(h.why, "Machine Check"));
    CHECK_ST(runner_health_run(c, "ex", state, &h, em), ST_OK);
    CHECK(h.ok);
    runner_config_destroy(c);
    c = load("large_run:\n  health_checks: ['scripts/health/disk-free 1e12']\n", em);
    CHECK_ST(runner_health_run(c, "ex", state, &h, em), ST_OK);
    CHECK(!h.ok && h.status == 1 && strstr(h.why, "1e12 GB needed"));
    runner_config_destroy(c);
    if (path)
        setenv("PATH", path, 1);
}

/* nic-up on a fake /sys/class/net (SCALETUNE_SYS_NET): eth0 up passes, ib0 down and a missing
 * interface fail with the reason, and SCALETUNE_NIC names the interface when no argument does. */
static void write_state(const char *net, const char *nic, const char *state)
{
    char p[4400];
    snprintf(p, sizeof(p), "%s/%s", net, nic);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/%s/operstate", net, nic);
    FILE *f = fopen(p, "w");
    if (f) {
        fprintf(f, "%s\n", state);
        fclose(f);
    }
}

static void test_nic_up(void)
{
    if (access("scripts/health/disk-free", X_OK)) {
        printf("SKIP health.nic_up: run from the repository root\n");
        return;
    }
    CHECK(access("scripts/health/nic-up", X_OK) == 0);
    char em[ST_ERRMSG_MAX], net[4200], state[4200];
    snprintf(net, sizeof(net), "%s", tu_path("net"));
    snprintf(state, sizeof(state), "%s", tu_path("state/nic"));
    mkdir(net, 0755);
    write_state(net, "eth0", "up");
    write_state(net, "ib0", "down");
    setenv("SCALETUNE_SYS_NET", net, 1);
    runner_health_result h;
    runner_config *c = load("large_run:\n  health_checks: ['scripts/health/nic-up eth0']\n", em);
    CHECK_ST(runner_health_run(c, "ex", state, &h, em), ST_OK);
    CHECK(h.ok && h.n_run == 1);
    runner_config_destroy(c);
    c = load("large_run:\n  health_checks: ['scripts/health/nic-up ib0']\n", em);
    CHECK_ST(runner_health_run(c, "ex", state, &h, em), ST_OK);
    CHECK(!h.ok && h.status == 1 && strstr(h.why, "ib0 is down, not up"));
    runner_config_destroy(c);
    c = load("large_run:\n  health_checks: ['scripts/health/nic-up eth9']\n", em);
    CHECK_ST(runner_health_run(c, "ex", state, &h, em), ST_OK);
    CHECK(!h.ok && h.status == 1 && strstr(h.why, "no interface eth9"));
    runner_config_destroy(c);
    c = load("large_run:\n  health_checks: [scripts/health/nic-up]\n", em);
    CHECK_ST(runner_health_run(c, "ex", state, &h, em), ST_OK);
    CHECK(!h.ok && h.status == 1 && strstr(h.why, "no interface given"));
    setenv("SCALETUNE_NIC", "ib0", 1);
    CHECK_ST(runner_health_run(c, "ex", state, &h, em), ST_OK);
    CHECK(!h.ok && strstr(h.why, "ib0 is down"));
    setenv("SCALETUNE_NIC", "eth0", 1);
    CHECK_ST(runner_health_run(c, "ex", state, &h, em), ST_OK);
    CHECK(h.ok);
    runner_config_destroy(c);
    unsetenv("SCALETUNE_NIC");
    unsetenv("SCALETUNE_SYS_NET");
}

int main(int argc, char **argv)
{
    (void)argc;
    tu_init(argv[0]);
    test_config();
    test_checks();
    test_quarantine();
    test_examples();
    test_nic_up();
    tu_cleanup();
    return check_summary("runner.health");
}
