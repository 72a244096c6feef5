/*
 * slurm_backend.c — the Slurm backend alone, through each route (sbatch/squeue/scancel; REST
 * with a JWT over TCP; REST over the unix socket): submit, the batched poll, cancel, exit codes
 * and quoting seen through the job's own output, adoption and the claim that stops a second
 * start, a job Slurm does not know, the node a job ran on, an excluded node, and the errors (bad
 * partition, bad token, slurmrestd down) as messages. Needs the one-node cluster of
 * scripts/slurm-localhost (make test-slurm).
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "tests/slurm/slurm_test_util.h"

typedef struct be {
    runner_config *cfg;
    const runner_backend_type *type;
    void *state;
} be;

static int be_open(be *b, const char *route, const char *more)
{
    char text[4096], blk[2048], em[ST_ERRMSG_MAX] = "";
    su_backend(blk, sizeof(blk), route, more);
    snprintf(text, sizeof(text),
             "name: b\ncommand: [x]\nobjective: {metric: l}\nbudget: {runs: 1}\n"
             "parameters: {x: {space: linear, min: 0, max: 1, center: 0.5}}\n%s",
             blk);
    memset(b, 0, sizeof(*b));
    if (runner_config_load_string(text, strlen(text), "b", &b->cfg, em)) {
        fprintf(stderr, "config: %s\n", em);
        return -1;
    }
    b->type = b->cfg->slurm.via == RUNNER_SLURM_REST ? runner_backend_slurm_rest
                                                     : runner_backend_slurm_cli;
    st_status rc = b->type->create(b->cfg, &b->state, em);
    if (rc)
        fprintf(stderr, "create: %s\n", em);
    return rc ? -1 : 0;
}

static void be_close(be *b)
{
    if (b->type && b->state)
        b->type->destroy(b->state);
    runner_config_destroy(b->cfg);
}

/* Polls one job until it is no longer RUNNING (or `limit` seconds pass). */
static runner_job wait_job(be *b, const char *id, const char *dir, double limit)
{
    runner_job j;
    memset(&j, 0, sizeof(j));
    double t0 = su_now();
    char em[ST_ERRMSG_MAX];
    do {
        j.job_id = id;
        j.dir = dir;
        j.failure = RUNNER_FAIL_NONE;
        j.reason[0] = '\0';
        st_status rc = b->type->poll(b->state, &j, 1, em);
        if (rc && rc != ST_ENETWORK) {
            fprintf(stderr, "poll: %s\n", em);
            break;
        }
        if (j.state != RUNNER_JOB_RUNNING)
            return j;
        su_sleep(0.1);
    } while (su_now() - t0 < limit);
    return j;
}

static char *slurp(const char *path)
{
    static char buf[8192];
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return buf;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void mkdir_p(const char *d)
{
    char cmd[4300];
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", d);
    if (system(cmd) != 0)
        fprintf(stderr, "mkdir failed\n");
}

/* Exit code, argv quoting, env, workdir; the job id file; adoption of a finished job. */
static void test_exit_and_quoting(const char *route)
{
    be b;
    CHECK(be_open(&b, route, "") == 0);
    if (!b.state) {
        be_close(&b);
        return;
    }
    char dir[4200], id[64] = "", em[ST_ERRMSG_MAX] = "";
    snprintf(dir, sizeof(dir), "%s/%s-quote", su_dir, route);
    mkdir_p(dir);
    char *argv[] = {"/bin/sh",
                    "-c",
                    "printf '%s|' \"$@\"; printf '%s|%s\\n' \"$FOO\" \"$(pwd)\"; "
                    "exit 3",
                    "sh",
                    "a b",
                    "it's",
                    "$HOME",
                    "*",
                    "\"q\"",
                    NULL};
    char *env[] = {"FOO=x 'y' $z", NULL};
    runner_job_spec spec = {argv, env, su_dir, dir, NULL, NULL};
    CHECK_ST(b.type->submit(b.state, &spec, id, sizeof(id), em), ST_OK);
    CHECK(id[0] >= '1' && id[0] <= '9');
    runner_job j = wait_job(&b, id, dir, 60);
    CHECK(j.state == RUNNER_JOB_EXITED && j.exit_code == 3);
    CHECK(!strcmp(j.node, "localhost")); /* the job script's record of its node */
    char p[4300], want[4300];
    snprintf(p, sizeof(p), "%s/stdout.log", dir);
    snprintf(want, sizeof(want), "a b|it's|$HOME|*|\"q\"|x 'y' $z|%s\n", su_dir);
    CHECK(!strcmp(slurp(p), want));
    if (strcmp(slurp(p), want))
        fprintf(stderr, "got '%s' want '%s'\n", slurp(p), want);
    /* adoption of an attempt whose job id the store never got */
    char jid[64] = "";
    CHECK_ST(b.type->adopt(b.state, dir, jid, sizeof(jid), em), ST_OK);
    CHECK(!strcmp(jid, id));
    be_close(&b);
}

/* A long job cancelled through the backend: Slurm says CANCELLED. */
static void test_cancel(const char *route)
{
    be b;
    CHECK(be_open(&b, route, "") == 0);
    if (!b.state) {
        be_close(&b);
        return;
    }
    char dir[4200], id[64] = "", em[ST_ERRMSG_MAX] = "";
    snprintf(dir, sizeof(dir), "%s/%s-cancel", su_dir, route);
    mkdir_p(dir);
    char *argv[] = {"/bin/sleep", "120", NULL};
    runner_job_spec spec = {argv, NULL, NULL, dir, NULL, NULL};
    CHECK_ST(b.type->submit(b.state, &spec, id, sizeof(id), em), ST_OK);
    /* wait until it started (its job id file appears) */
    char p[4300];
    snprintf(p, sizeof(p), "%s/job_id", dir);
    double t0 = su_now();
    while (access(p, F_OK) != 0 && su_now() - t0 < 30)
        su_sleep(0.1);
    CHECK(access(p, F_OK) == 0);
    CHECK_ST(b.type->cancel(b.state, id, dir, 0, em), ST_OK);
    runner_job j = wait_job(&b, id, dir, 30);
    CHECK(j.state == RUNNER_JOB_LOST && j.failure == RUNNER_FAIL_CANCELLED);
    CHECK(strstr(j.reason, "CANCELLED") != NULL);
    /* cancelling a job that has ended is not an error */
    CHECK_ST(b.type->cancel(b.state, id, dir, 1, em), ST_OK);
    be_close(&b);
}

/* Adopt claims an attempt that was never submitted: a late submission runs nothing. A job Slurm
 * does not know settles from its exit file, or is lost. */
static void test_claim_and_unknown(const char *route)
{
    be b;
    CHECK(be_open(&b, route, "") == 0);
    if (!b.state) {
        be_close(&b);
        return;
    }
    char dir[4200], id[64] = "", jid[64] = "", em[ST_ERRMSG_MAX] = "";
    snprintf(dir, sizeof(dir), "%s/%s-claim", su_dir, route);
    CHECK_ST(b.type->adopt(b.state, dir, jid, sizeof(jid), em), ST_ENOTFOUND); /* no dir */
    mkdir_p(dir);
    CHECK_ST(b.type->adopt(b.state, dir, jid, sizeof(jid), em), ST_ENOTFOUND); /* claimed */
    char *argv[] = {"/bin/sh", "-c", "echo ran", NULL};
    runner_job_spec spec = {argv, NULL, NULL, dir, NULL, NULL};
    CHECK_ST(b.type->submit(b.state, &spec, id, sizeof(id), em), ST_OK);
    runner_job j = wait_job(&b, id, dir, 60);
    CHECK(j.state == RUNNER_JOB_LOST && j.failure == RUNNER_FAIL_NONE);
    char p[4300];
    snprintf(p, sizeof(p), "%s/stdout.log", dir);
    CHECK(access(p, F_OK) != 0); /* the trainer never ran */

    /* job ids Slurm never heard of */
    char d2[4200], d3[4200];
    snprintf(d2, sizeof(d2), "%s/%s-unknown", su_dir, route);
    snprintf(d3, sizeof(d3), "%s/%s-unknown-exit", su_dir, route);
    mkdir_p(d2);
    mkdir_p(d3);
    snprintf(p, sizeof(p), "%s/exit", d3);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs("exit 0\n", f);
        fclose(f);
    }
    j = wait_job(&b, "987654", d2, 30);
    CHECK(j.state == RUNNER_JOB_LOST && strstr(j.reason, "does not know") != NULL);
    j = wait_job(&b, "987655", d3, 30);
    CHECK(j.state == RUNNER_JOB_EXITED && j.exit_code == 0);
    be_close(&b);
}

/* Slurm's refusals become messages: a partition that does not exist. */
static void test_bad_partition(const char *route)
{
    be b;
    CHECK(be_open(&b, route, "partition: nosuchpartition") == 0);
    if (!b.state) {
        be_close(&b);
        return;
    }
    char dir[4200], id[64] = "", em[ST_ERRMSG_MAX] = "";
    snprintf(dir, sizeof(dir), "%s/%s-badpart", su_dir, route);
    mkdir_p(dir);
    char *argv[] = {"/bin/true", NULL};
    runner_job_spec spec = {argv, NULL, NULL, dir, NULL, NULL};
    CHECK_ST(b.type->submit(b.state, &spec, id, sizeof(id), em), ST_EBACKEND);
    CHECK(strstr(em, "Invalid partition") != NULL);
    printf("# %s, bad partition: %s\n", route, em);
    be_close(&b);
}

/* A quarantined node is excluded: Slurm refuses an exclusion of a node it does not know, which
 * shows the exclusion reached it (sbatch --exclude, REST "exclude"). */
static void test_exclude(const char *route)
{
    be b;
    CHECK(be_open(&b, route, "") == 0);
    if (!b.state) {
        be_close(&b);
        return;
    }
    char dir[4200], id[64] = "", em[ST_ERRMSG_MAX] = "";
    snprintf(dir, sizeof(dir), "%s/%s-exclude", su_dir, route);
    mkdir_p(dir);
    char *argv[] = {"/bin/true", NULL};
    runner_job_spec spec = {argv, NULL, NULL, dir, "nosuchnode", NULL};
    CHECK_ST(b.type->submit(b.state, &spec, id, sizeof(id), em), ST_EBACKEND);
    CHECK(strstr(em, "node") != NULL);
    printf("# %s, excluding an unknown node: %s\n", route, em);
    be_close(&b);
}

/* REST only: a bad token (never shown), and slurmrestd unreachable. */
static void test_rest_errors(void)
{
    char tf[4200], blk[8192], text[12288], em[ST_ERRMSG_MAX] = "";
    snprintf(tf, sizeof(tf), "%s/bad.token", su_dir);
    FILE *f = fopen(tf, "w");
    if (f) {
        fputs("SECRETxyz.not.a.jwt\n", f);
        fclose(f);
    }
    const char *params = "name: b\ncommand: [x]\nobjective: {metric: l}\nbudget: {runs: 1}\n"
                         "parameters: {x: {space: linear, min: 0, max: 1, center: 0.5}}\n";
    snprintf(blk, sizeof(blk),
             "backend: {kind: slurm, via: rest, command_timeout_seconds: 5, rest: {url: '%s', "
             "user: root, token_file: '%s'}}\n",
             getenv("ST_SLURM_REST_URL"), tf);
    snprintf(text, sizeof(text), "%s%s", params, blk);
    runner_config *c = NULL;
    void *st = NULL;
    CHECK_ST(runner_config_load_string(text, strlen(text), "b", &c, em), ST_OK);
    CHECK_ST(runner_backend_slurm_rest->create(c, &st, em), ST_OK);
    char dir[4200], id[64] = "";
    snprintf(dir, sizeof(dir), "%s/rest-badtoken", su_dir);
    mkdir_p(dir);
    char *argv[] = {"/bin/true", NULL};
    runner_job_spec spec = {argv, NULL, NULL, dir, NULL, NULL};
    st_status rc = runner_backend_slurm_rest->submit(st, &spec, id, sizeof(id), em);
    CHECK(rc == ST_EBACKEND);
    CHECK(strstr(em, "SECRET") == NULL && strstr(em, "token") != NULL);
    printf("# bad token: %s\n", em);
    runner_backend_slurm_rest->destroy(st);
    runner_config_destroy(c);

    /* nothing listens there: a connection error, retried, then ST_ENETWORK */
    snprintf(blk, sizeof(blk),
             "backend: {kind: slurm, via: rest, command_timeout_seconds: 2, rest: {url: "
             "'http://127.0.0.1:9', user: root, token_file: '%s'}}\n",
             getenv("ST_SLURM_TOKEN_FILE"));
    snprintf(text, sizeof(text), "%s%s", params, blk);
    CHECK_ST(runner_config_load_string(text, strlen(text), "b", &c, em), ST_OK);
    CHECK_ST(runner_backend_slurm_rest->create(c, &st, em), ST_OK);
    rc = runner_backend_slurm_rest->submit(st, &spec, id, sizeof(id), em);
    CHECK(rc == ST_ENETWORK && strstr(em, "unreachable") != NULL);
    printf("# slurmrestd down: %s\n", em);
    runner_job j;
    memset(&j, 0, sizeof(j));
    j.job_id = "12345";
    j.dir = dir;
    CHECK_ST(runner_backend_slurm_rest->poll(st, &j, 1, em), ST_ENETWORK);
    CHECK(j.state == RUNNER_JOB_RUNNING);
    runner_backend_slurm_rest->destroy(st);
    runner_config_destroy(c);
}

int main(int argc, char **argv)
{
    (void)argc;
    st_global_init();
    if (!su_init(argv[0])) {
        CHECK(0);
        return check_summary("slurm.backend");
    }
    const char *routes[] = {"cli", "rest", "socket"};
    for (int i = 0; i < 3; i++) {
        test_exit_and_quoting(routes[i]);
        test_cancel(routes[i]);
        test_claim_and_unknown(routes[i]);
        test_bad_partition(routes[i]);
        test_exclude(routes[i]);
    }
    test_rest_errors();
    su_cleanup();
    st_global_cleanup();
    return check_summary("slurm.backend");
}
