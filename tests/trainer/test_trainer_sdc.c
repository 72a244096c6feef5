/*
 * test_trainer_sdc.c — silent data corruption in scaletune-train (--sdc-every K, the test-only
 * switch SCALETUNE_TRAIN_FLIP=STEP:INDEX:BIT): on one CPU thread,
 *  - the replays change nothing: every step loss and the final losses equal a run without them,
 *    and a `verified` record comes every K steps and at the end;
 *  - a flipped weight bit that silently changes the final loss when nothing checks (no
 *    divergence, exit 0) is found by the replay at the first check after it (within K steps),
 *    the run rolls back to the last verified step, and ends with the clean run's losses, bit
 *    for bit; the first pass's losses after the flip differ from the clean run's (the fault was
 *    real), the second pass's do not;
 *  - a flip too small to show in the printed loss is found all the same (the hash is of the
 *    state, not of the loss);
 *  - a fault that repeats (SCALETUNE_TRAIN_FLIP=...:TIMES) is rolled back at most 3 times: a
 *    flip on the first 2 passes is rolled back twice and the run ends clean; a flip on every
 *    pass gives 4 sdc records (the last with "gave_up":1), no final record, exit 5;
 *  - --checkpoint-every must be a multiple of --sdc-every;
 *  - --sdc-every is refused with --device cuda (not bitwise deterministic), in-process.
 * Runs BUILD/scaletune-train (next to this test's build folder); SKIP when it is not built.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/check.h"
#include "trainer/gpt.h"

static char prog[4200], text[64] = "/tmp/st_sdc_textXXXXXX";

#define MAX_STEPS 128

typedef struct out {
    char loss[2][MAX_STEPS][24]; /* the first and second time a step was printed */
    int seen[MAX_STEPS];
    int n_verified, n_sdc, sdc_step, sdc_from, status, n_gave_up;
    char final[512];
} out;

static void field(const char *line, const char *key, char *v, size_t cap)
{
    char k[64];
    snprintf(k, sizeof(k), "\"%s\":", key);
    const char *p = strstr(line, k);
    v[0] = '\0';
    if (p) {
        p += strlen(k);
        size_t n = strcspn(p, ",}");
        snprintf(v, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
    }
}

/* Runs the trainer with `flags` and the environment `env` ("" for none). */
static void run(const char *env, const char *flags, out *o)
{
    char cmd[8192], v[64];
    snprintf(cmd, sizeof(cmd),
             "%s '%s' --d-model 32 --n-layer 1 --seq-len 32 --batch 4 --tokens 1e4 --threads 1 "
             "--data '%s' --val-data '' %s 2>/dev/null",
             env, prog, text, flags);
    memset(o, 0, sizeof(*o));
    FILE *p = popen(cmd, "r");
    char line[4096];
    while (p && fgets(line, sizeof(line), p)) {
        if (strstr(line, "\"event\":\"step\"")) {
            field(line, "step", v, sizeof(v));
            int s = atoi(v);
            if (s > 0 && s < MAX_STEPS && o->seen[s] < 2)
                field(line, "loss", o->loss[o->seen[s]++][s], 24);
        } else if (strstr(line, "\"event\":\"verified\""))
            o->n_verified++;
        else if (strstr(line, "\"event\":\"sdc\"")) {
            o->n_sdc++;
            field(line, "step", v, sizeof(v));
            o->sdc_step = atoi(v);
            field(line, "verified_step", v, sizeof(v));
            o->sdc_from = atoi(v);
            o->n_gave_up += strstr(line, "\"gave_up\":1") != NULL;
        } else if (strstr(line, "\"event\":\"final\""))
            snprintf(o->final, sizeof(o->final), "%.511s", line);
    }
    o->status = p ? pclose(p) : -1;
}

static int same_final(const out *a, const out *b)
{
    char va[64], vb[64], la[64], lb[64];
    field(a->final, "val_loss", va, sizeof(va));
    field(b->final, "val_loss", vb, sizeof(vb));
    field(a->final, "loss", la, sizeof(la));
    field(b->final, "loss", lb, sizeof(lb));
    return va[0] && la[0] && !strcmp(va, vb) && !strcmp(la, lb);
}

/* The CUDA path is not bitwise deterministic (atomics): a replay check there is refused. */
static void test_cuda_refused(void)
{
    char err[ST_ERRMSG_MAX];
    gpt_options o = gpt_options_default();
    CHECK(gpt_options_set(&o, "data", "x.txt", err) == ST_OK);
    CHECK(gpt_options_set(&o, "sdc-every", "10", err) == ST_OK);
    CHECK(gpt_options_check(&o, err) == ST_OK);
    CHECK(gpt_options_set(&o, "device", "cuda", err) == ST_OK);
    err[0] = '\0';
    CHECK(gpt_options_check(&o, err) == ST_EINVAL && strstr(err, "--sdc-every") &&
          strstr(err, "cuda"));
    CHECK(gpt_options_set(&o, "sdc-every", "0", err) == ST_OK);
    CHECK(gpt_options_check(&o, err) == ST_OK);
}

int main(int argc, char **argv)
{
    (void)argc;
    test_cuda_refused();
    snprintf(prog, sizeof(prog), "%s", argv[0]);
    char *cut = strstr(prog, "tests/trainer/test_trainer_sdc");
    if (!cut || (strcpy(cut, "scaletune-train"), access(prog, X_OK))) {
        printf("SKIP trainer.sdc: scaletune-train is not built next to %s\n", argv[0]);
        return check_summary("trainer.sdc");
    }
    int fd = mkstemp(text);
    FILE *t = fdopen(fd, "w");
    for (int i = 0; i < 3000 && t; i++)
        fprintf(t, "And it came to pass in those days, that %d went out unto the %s.\n", i % 97,
                i % 3 ? "city" : "field");
    if (t)
        fclose(t);
    static out clean, checked, flipped, silent, tiny;

    /* 79 steps; checks at 10, 20, ..., 70 and the last step */
    run("", "", &clean);
    run("", "--sdc-every 10", &checked);
    CHECK(clean.status == 0 && checked.status == 0 && clean.final[0]);
    CHECK(checked.n_verified == 8 && checked.n_sdc == 0 && same_final(&clean, &checked));
    int same = 1;
    for (int s = 1; s <= 79; s++)
        same &= clean.seen[s] == 1 && checked.seen[s] == 1 &&
                !strcmp(clean.loss[0][s], checked.loss[0][s]);
    CHECK(same);

    /* bit 22 (the top of the mantissa) of weight 100 after step 23 */
    run("SCALETUNE_TRAIN_FLIP=23:100:22", "", &silent);
    CHECK(silent.status == 0 && silent.n_sdc == 0 && silent.final[0] &&
          !same_final(&clean, &silent));
    run("SCALETUNE_TRAIN_FLIP=23:100:22", "--sdc-every 10", &flipped);
    CHECK(flipped.status == 0 && flipped.n_sdc == 1 && flipped.sdc_step == 30 &&
          flipped.sdc_from == 20);
    CHECK(flipped.sdc_step - 23 <= 10);
    CHECK(same_final(&clean, &flipped));
    int first_differs = 0, second_same = 1, once_same = 1;
    for (int s = 1; s <= 79; s++) {
        int twice = s > 20 && s <= 30;
        CHECK(flipped.seen[s] == (twice ? 2 : 1));
        if (twice) {
            first_differs |= s > 23 && strcmp(flipped.loss[0][s], clean.loss[0][s]);
            second_same &= !strcmp(flipped.loss[1][s], clean.loss[0][s]);
        } else
            once_same &= !strcmp(flipped.loss[0][s], clean.loss[0][s]);
    }
    CHECK(first_differs && second_same && once_same);

    /* bit 0: the printed losses do not show it; the state hash does */
    run("SCALETUNE_TRAIN_FLIP=23:100:0", "", &tiny);
    CHECK(tiny.status == 0 && same_final(&clean, &tiny));
    run("SCALETUNE_TRAIN_FLIP=23:100:0", "--sdc-every 10", &tiny);
    CHECK(tiny.n_sdc == 1 && tiny.sdc_step == 30 && same_final(&clean, &tiny));

    /* a fault that repeats: twice (rolled back twice, then clean), then on every pass */
    run("SCALETUNE_TRAIN_FLIP=23:100:22:2", "--sdc-every 10", &tiny);
    CHECK(tiny.status == 0 && tiny.n_sdc == 2 && !tiny.n_gave_up && same_final(&clean, &tiny));
    CHECK(tiny.seen[30] == 2 && tiny.seen[31] == 1);
    run("SCALETUNE_TRAIN_FLIP=23:100:22:0", "--sdc-every 10", &tiny);
    CHECK(WIFEXITED(tiny.status) && WEXITSTATUS(tiny.status) == 5);
    CHECK(tiny.n_sdc == 4 && tiny.n_gave_up == 1 && tiny.sdc_step == 30 && !tiny.final[0]);
    CHECK(tiny.seen[31] == 0);

    /* checkpoints only of verified states */
    run("", "--sdc-every 7 --checkpoint /tmp/st_sdc_never.ck --checkpoint-every 10", &tiny);
    CHECK(tiny.status != 0 && !tiny.final[0]);
    remove(text);
    return check_summary("trainer.sdc");
}
