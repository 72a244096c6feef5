/*
 * test_trainer_cli.c — the scaletune-train program as the runner sees it: --help, bad flags (exit
 * 2), a missing data file (exit 1 with a hint), divergence (exit 3 and a diverged record), the
 * metrics file, and kill -9 in the middle of a checkpointed run followed by --resume, which must
 * end with the same final record as a run never interrupted; a cooldown branch off that run's
 * checkpoint reports its parent and only its own FLOPs (docs/metrics-protocol.md); {step} in
 * --checkpoint keeps one file per checkpoint. The binary is
 * found next to this test's build folder (BUILD/scaletune-train); if it is absent the test prints
 * SKIP.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/check.h"

static char prog[512], text[64] = "/tmp/st_cli_textXXXXXX", errf[80], ckpt[80], mfile[80];

/* runs prog with args; stdout into out (up to n bytes), stderr into errf; kill -9 once a line
 * containing kill_at appears (NULL: never). Returns the exit status, or 128+signal. */
static int run(const char *const *args, char *out, size_t n, const char *kill_at)
{
    int fds[2];
    if (pipe(fds))
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        const char *argv[64];
        int k = 0;
        argv[k++] = prog;
        for (; args[k - 1] && k < 63; k++)
            argv[k] = args[k - 1];
        argv[k] = NULL;
        dup2(fds[1], 1);
        FILE *e = fopen(errf, "w");
        if (e)
            dup2(fileno(e), 2);
        close(fds[0]);
        execv(prog, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    size_t used = 0;
    char line[4096];
    int killed = 0;
    while (fgets(line, sizeof(line), f)) {
        size_t l = strlen(line);
        if (used + l < n) {
            memcpy(out + used, line, l + 1);
            used += l;
        }
        if (kill_at && !killed && strstr(line, kill_at)) {
            kill(pid, SIGKILL);
            killed = 1;
        }
    }
    fclose(f);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int err_has(const char *s)
{
    FILE *f = fopen(errf, "r");
    char buf[4096] = {0};
    if (f) {
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = 0;
        fclose(f);
    }
    return strstr(buf, s) != NULL;
}

static const char *final_line(const char *out)
{
    const char *p = strstr(out, "{\"event\":\"final\"");
    return p ? p : "";
}

int main(int argc, char **argv)
{
    (void)argc;
    /* argv[0] = BUILD/tests/trainer/test_trainer_cli */
    snprintf(prog, sizeof(prog), "%s", argv[0]);
    char *cut = strstr(prog, "tests/trainer/test_trainer_cli");
    if (!cut) {
        printf("SKIP trainer.cli: cannot locate the build folder from %s\n", argv[0]);
        return check_summary("trainer.cli");
    }
    strcpy(cut, "scaletune-train");
    if (access(prog, X_OK)) {
        printf("SKIP trainer.cli: %s is not built (make)\n", prog);
        return check_summary("trainer.cli");
    }
    int fd = mkstemp(text);
    FILE *t = fdopen(fd, "w");
    for (int i = 0; i < 3000; i++)
        fprintf(t, "And it came to pass in those days, that %d went out unto the %s.\n", i % 97,
                i % 3 ? "city" : "field");
    fclose(t);
    snprintf(errf, sizeof(errf), "%s.err", text);
    snprintf(ckpt, sizeof(ckpt), "%s.ckpt", text);
    snprintf(mfile, sizeof(mfile), "%s.metrics", text);
    static char out[1 << 20], out2[1 << 20];

    const char *help[] = {"--help", NULL};
    CHECK(run(help, out, sizeof(out), NULL) == 0);
    CHECK(strstr(out, "--weight-decay") && strstr(out, "--schedule") && strstr(out, "--resume"));

    const char *bad[] = {"--learning-rate", "1", NULL};
    CHECK(run(bad, out, sizeof(out), NULL) == 2);
    CHECK(err_has("unknown option 'learning-rate'"));
    const char *bad2[] = {"--batch", "-3", NULL};
    CHECK(run(bad2, out, sizeof(out), NULL) == 2);
    CHECK(err_has("--batch"));
    const char *bad3[] = {"--data", text, "--parent-run", "4", NULL};
    CHECK(run(bad3, out, sizeof(out), NULL) == 2);
    CHECK(err_has("--parent-run is for a branch"));
    const char *missing[] = {"--data", "/nonexistent/file.txt", NULL};
    CHECK(run(missing, out, sizeof(out), NULL) == 1);
    CHECK(err_has("cannot open data file '/nonexistent/file.txt'"));

    /* divergence: exit 3 after a diverged record */
    const char *div[] = {
        "--data",   text,    "--d-model", "32", "--n-layer", "1", "--seq-len", "32", "--batch", "4",
        "--tokens", "20000", "--lr",      "50", "--clip",    "0", "--warmup",  "0",  NULL};
    CHECK(run(div, out, sizeof(out), NULL) == 3);
    CHECK(strstr(out, "{\"event\":\"diverged\"") != NULL);

    /* the uninterrupted run, its records going to SCALETUNE_METRICS_FILE */
    const char *base[] = {"--data",
                          text,
                          "--d-model",
                          "32",
                          "--n-layer",
                          "2",
                          "--seq-len",
                          "32",
                          "--batch",
                          "8",
                          "--tokens",
                          "51200",
                          "--threads",
                          "2",
                          "--seed",
                          "5",
                          "--eval-every",
                          "50",
                          "--checkpoint",
                          ckpt,
                          "--checkpoint-every",
                          "10",
                          NULL};
    setenv("SCALETUNE_METRICS_FILE", mfile, 1);
    remove(mfile);
    CHECK(run(base, out, sizeof(out), NULL) == 0);
    unsetenv("SCALETUNE_METRICS_FILE");
    FILE *mf = fopen(mfile, "r");
    size_t n = mf ? fread(out, 1, sizeof(out) - 1, mf) : 0;
    out[n] = 0;
    if (mf)
        fclose(mf);
    CHECK(strstr(out, "{\"event\":\"config\"") && strstr(out, "\"threads\":2"));
    CHECK(strstr(out, "{\"event\":\"eval\",\"step\":50,") != NULL);
    const char *f1 = final_line(out);
    CHECK(strstr(f1, "\"val_loss\":") && strstr(f1, "\"params\":") && strstr(f1, "\"steps\":200"));

    /* killed with SIGKILL after step 25 (checkpoints every 10), then resumed */
    remove(ckpt);
    int rc = run(base, out2, sizeof(out2), "\"step\":25,");
    CHECK(rc == 128 + SIGKILL);
    CHECK(access(ckpt, R_OK) == 0);
    const char *resumed[] = {"--data",
                             text,
                             "--d-model",
                             "32",
                             "--n-layer",
                             "2",
                             "--seq-len",
                             "32",
                             "--batch",
                             "8",
                             "--tokens",
                             "51200",
                             "--threads",
                             "2",
                             "--seed",
                             "5",
                             "--eval-every",
                             "50",
                             "--checkpoint",
                             ckpt,
                             "--checkpoint-every",
                             "10",
                             "--resume",
                             ckpt,
                             NULL};
    CHECK(run(resumed, out2, sizeof(out2), NULL) == 0);
    const char *f2 = final_line(out2);
    /* the same val_loss, loss, flops and tokens, to the printed digit (seconds differ) */
    const char *sec1 = strstr(f1, ",\"seconds\""), *sec2 = strstr(f2, ",\"seconds\"");
    CHECK(sec1 && sec2 && sec1 - f1 == sec2 - f2 && !strncmp(f1, f2, (size_t)(sec1 - f1)));
    if (!(sec1 && sec2 && sec1 - f1 == sec2 - f2 && !strncmp(f1, f2, (size_t)(sec1 - f1))))
        fprintf(stderr, "  uninterrupted: %.200s\n  resumed:       %.200s\n", f1, f2);

    /* a cooldown branch of 5 steps off the checkpoint of step 200: the final record names its
     * parent (checkpoint, step and, with --parent-run, run id), counts tokens in total and FLOPs of
     * its own 5 steps of 8*32 tokens */
    const char *branch[] = {"--data",
                            text,
                            "--d-model",
                            "32",
                            "--n-layer",
                            "2",
                            "--seq-len",
                            "32",
                            "--batch",
                            "8",
                            "--tokens",
                            "51200",
                            "--threads",
                            "2",
                            "--seed",
                            "5",
                            "--eval-every",
                            "50",
                            "--branch-from",
                            ckpt,
                            "--decay-steps",
                            "5",
                            "--parent-run",
                            "17",
                            NULL};
    CHECK(run(branch, out2, sizeof(out2), NULL) == 0);
    const char *fb = final_line(out2), *cfg = strstr(out2, "\"flops_per_token\":");
    const char *fl = strstr(fb, "\"flops\":");
    double fpt = cfg ? strtod(cfg + 18, NULL) : 0, flops = fl ? strtod(fl + 8, NULL) : 0;
    CHECK(fpt > 0);
    CHECK_REL(flops, 5.0 * 8 * 32 * fpt, 1e-12);
    CHECK(strstr(fb, "\"tokens\":52480,") && strstr(fb, "\"steps\":205,"));
    CHECK(strstr(fb, "\"branch\":1,\"parent_step\":200,\"branch_steps\":5,") != NULL);
    CHECK(strstr(fb, "\"parent_checkpoint\":\"") && strstr(fb, ckpt));
    CHECK(strstr(fb, "\"parent_run\":17") != NULL); /* --parent-run: extrapolate joins them */

    /* "{step}" in --checkpoint keeps one file per checkpoint: steps 4, 8 and the end, 10 */
    char tmpl[96], at4[96], at8[96], at10[96];
    snprintf(tmpl, sizeof(tmpl), "%s-{step}.ck", text);
    snprintf(at4, sizeof(at4), "%s-4.ck", text);
    snprintf(at8, sizeof(at8), "%s-8.ck", text);
    snprintf(at10, sizeof(at10), "%s-10.ck", text);
    const char *per_step[] = {
        "--data",  text, "--d-model", "16",  "--n-layer",    "1",  "--seq-len",          "16",
        "--batch", "2",  "--tokens",  "320", "--checkpoint", tmpl, "--checkpoint-every", "4",
        NULL};
    CHECK(run(per_step, out2, sizeof(out2), NULL) == 0);
    CHECK(!access(at4, R_OK) && !access(at8, R_OK) && !access(at10, R_OK));
    remove(at4), remove(at8), remove(at10);

    /* a checkpoint of another model is refused with the reason */
    const char *other[] = {"--data", text, "--d-model", "64", "--resume", ckpt, NULL};
    CHECK(run(other, out2, sizeof(out2), NULL) == 1);
    CHECK(err_has("checkpoint"));

    remove(text), remove(errf), remove(ckpt), remove(mfile);
    return check_summary("trainer.cli");
}
