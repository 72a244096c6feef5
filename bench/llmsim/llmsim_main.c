/*
 * llmsim_main.c — `llmsim`, a stand-in for a training run that speaks the metrics protocol.
 *
 * Takes a run's settings as flags, prints JSON lines (step, eval, final or diverged) computed by
 * bench/sim.c in microseconds, and exits 0 (finished), 3 (diverged) or 2 (bad flags). With
 * --oracle C it prints the true optimum at compute C instead; with --true, the noise-free terms.
 * --world K picks the simulated world (0 the default law; K >= 1 drawn by sim_law_draw).
 * It is not a trainer: nothing is learned; the loss comes from published scaling laws.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/sim.h"

static void usage(FILE *f)
{
    fputs("usage: llmsim (--N P | --d-model W --n-layer L) --tokens D --lr LR --batch B\n"
          "              [--warmup F] [--weight-decay WD] [--seed S] [--steps-to-report K]\n"
          "              [--optimizer adamw|lion] [--true] [--world K] [--sleep-ms MS]\n"
          "              [--checkpoints] [--branch-step S --decay-steps K]\n"
          "       llmsim --oracle C [--world K] [--optimizer adamw|lion]\n"
          "  --N P              non-embedding parameters (or 12 * n_layer * d_model^2)\n"
          "  --tokens D         training tokens\n"
          "  --lr LR            peak learning rate (AdamW)\n"
          "  --batch B          tokens per optimizer step\n"
          "  --warmup F         warmup as a fraction of the steps, in [0, 1) (default 0.02)\n"
          "  --weight-decay WD  AdamW lambda (default 0.1)\n"
          "  --seed S           noise seed (default 0)\n"
          "  --optimizer O      adamw (default) or lion: lr optimum and boundary 0.3x,\n"
          "                     loss 0.99x (bench/sim.h, lion_lr, lion_loss)\n"
          "  --steps-to-report K  number of step/eval reports (default 10)\n"
          "  --true             print the noise-free loss and its terms as one JSON line\n"
          "  --oracle C         print the true optimum at C FLOPs (C = 6 N D)\n"
          "  --world K          the simulated world: 0 the default law (default), K >= 1 a law\n"
          "                     drawn from published ranges (bench/sim.h, sim_law_draw)\n"
          "  --sleep-ms MS      pause MS milliseconds after each eval record (a run that takes\n"
          "                     time, so that a controller can stop it part-way)\n"
          "  --checkpoints      a config record with the planned steps first, a checkpoint\n"
          "                     record after each eval (a controller's branches start there)\n"
          "  --branch-step S --decay-steps K  a cooldown branch of this run: its checkpoint\n"
          "                     at step S, K steps of decay; the final of a run to S + K steps\n"
          "                     with this run's warmup steps, the cost of K steps only\n"
          "exit: 0 finished, 3 diverged, 2 bad arguments\n",
          f);
}

static int parse_num(const char *flag, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !isfinite(v)) {
        fprintf(stderr, "llmsim: %s: '%s' is not a number\n", flag, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* The run's records as sim_emit writes them. With ms > 0 each eval record is followed by a pause
 * of ms milliseconds, as a run that takes time (so that a controller can stop it part-way). With
 * checkpoints, a {"event":"config","steps":S} record first and a {"event":"checkpoint","step":k}
 * record after each eval record, as a trainer that saves a checkpoint at each eval (the
 * controller's cooldown branches start from them). */
static int emit_lines(const sim_law *law, const sim_setting *s, uint64_t seed, int nrep, double ms,
                      int checkpoints)
{
    char *buf = NULL, err[ST_ERRMSG_MAX];
    size_t len = 0;
    int code = 2;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        return 2;
    st_status st = sim_emit(law, s, seed, nrep, mem, &code, err);
    fclose(mem);
    if (st != ST_OK) {
        fprintf(stderr, "llmsim: %s\n", err);
        free(buf);
        return 2;
    }
    if (checkpoints)
        printf("{\"event\":\"config\",\"steps\":%.0f}\n", fmax(1.0, floor(s->D / s->batch)));
    struct timespec ts = {(time_t)(ms / 1000), (long)(fmod(ms, 1000) * 1e6)};
    for (char *p = buf, *e; p && *p; p = e ? e + 1 : NULL) {
        e = strchr(p, '\n');
        fwrite(p, 1, e ? (size_t)(e - p + 1) : strlen(p), stdout);
        fflush(stdout);
        const char *ev = strstr(p, "\"event\":\"eval\"");
        if (!ev || (e && ev > e))
            continue;
        if (checkpoints) {
            double step = strtod(strstr(p, "\"step\":") + 7, NULL);
            printf("{\"event\":\"checkpoint\",\"step\":%.0f}\n", step);
            fflush(stdout);
        }
        if (ms > 0)
            nanosleep(&ts, NULL);
    }
    free(buf);
    return code;
}

/* --oracle C: the true optimum at C FLOPs as one JSON line. */
static int print_oracle(const sim_law *law, double oracle, int optimizer)
{
    sim_setting o;
    double loss;
    st_status st = sim_oracle_for(law, oracle, optimizer, &o, &loss);
    if (st != ST_OK) {
        fprintf(stderr, "llmsim: oracle at C = %g: %s\n", oracle, st_strerror(st));
        return 2;
    }
    printf("{\"event\":\"oracle\",\"compute\":%.17g,\"params\":%.17g,\"tokens\":%.17g,"
           "\"lr\":%.17g,\"batch\":%.17g,\"warmup\":%.17g,\"weight_decay\":%.17g,"
           "\"optimizer\":\"%s\",\"val_loss\":%.17g}\n",
           oracle, o.N, o.D, o.lr, o.batch, o.warmup, o.weight_decay, optimizer ? "lion" : "adamw",
           loss);
    return 0;
}

/* --true: the noise-free loss and its terms as one JSON line. */
static int print_true(const sim_law *law, const sim_setting *s)
{
    char err[ST_ERRMSG_MAX];
    sim_terms t;
    if (sim_eval(law, s, &t, err) != ST_OK) {
        fprintf(stderr, "llmsim: %s\n", err);
        return 2;
    }
    printf("{\"event\":\"true\",\"loss\":%.17g,\"diverged\":%d,\"loss_nd\":%.17g,"
           "\"lr_opt\":%.17g,\"lr_max\":%.17g,\"batch_opt\":%.17g,\"warmup_opt\":%.17g,"
           "\"tau\":%.17g,\"tau_opt\":%.17g,\"pen_lr_batch\":%.17g,\"pen_warmup\":%.17g,"
           "\"pen_wd\":%.17g,\"flops\":%.17g}\n",
           t.diverged ? -1.0 : t.loss, t.diverged, t.loss_nd, t.lr_opt, t.lr_max, t.batch_opt,
           t.warmup_opt, isfinite(t.tau) ? t.tau : -1.0, t.tau_opt, t.pen_lr_bs, t.pen_warmup,
           t.pen_wd, t.flops);
    return 0;
}

/* The run (or, with a branch step, its cooldown branch) as the metrics protocol; the exit code. */
static int emit_run(const sim_law *law, const sim_setting *s, uint64_t seed, int nrep,
                    double sleep_ms, int checkpoints, double branch_step, double decay_steps)
{
    char err[ST_ERRMSG_MAX];
    int code;
    if (!isnan(branch_step) || !isnan(decay_steps)) {
        if (sim_emit_branch(law, s, branch_step, decay_steps, seed, stdout, &code, err) != ST_OK) {
            fprintf(stderr, "llmsim: %s\n", err);
            return 2;
        }
        return code;
    }
    if (sleep_ms <= 0 && !checkpoints) {
        if (sim_emit(law, s, seed, nrep, stdout, &code, err) != ST_OK) {
            fprintf(stderr, "llmsim: %s\n", err);
            return 2;
        }
        return code;
    }
    return emit_lines(law, s, seed, nrep, sleep_ms, checkpoints);
}

int main(int argc, char **argv)
{
    double N = NAN, dm = NAN, nl = NAN, D = NAN, lr = NAN, batch = NAN;
    double warmup = 0.02, wd = 0.1, seed = 0, nrep = 10, oracle = NAN, world = 0, sleep_ms = 0;
    double branch_step = NAN, decay_steps = NAN;
    int show_true = 0, optimizer = 0, checkpoints = 0;
    struct {
        const char *name;
        double *dst;
    } flags[] = {{"--N", &N},
                 {"--d-model", &dm},
                 {"--n-layer", &nl},
                 {"--tokens", &D},
                 {"--lr", &lr},
                 {"--batch", &batch},
                 {"--warmup", &warmup},
                 {"--weight-decay", &wd},
                 {"--seed", &seed},
                 {"--steps-to-report", &nrep},
                 {"--oracle", &oracle},
                 {"--world", &world},
                 {"--sleep-ms", &sleep_ms},
                 {"--branch-step", &branch_step},
                 {"--decay-steps", &decay_steps}};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--true")) {
            show_true = 1;
            continue;
        }
        if (!strcmp(argv[i], "--checkpoints")) {
            checkpoints = 1;
            continue;
        }
        if (!strcmp(argv[i], "--optimizer") && i + 1 < argc) {
            optimizer = !strcmp(argv[i + 1], "lion") ? 1 : !strcmp(argv[i + 1], "adamw") ? 0 : -1;
            if (optimizer < 0) {
                fprintf(stderr, "llmsim: --optimizer: '%s' is not adamw or lion\n", argv[i + 1]);
                return 2;
            }
            i++;
            continue;
        }
        size_t k, nf = sizeof(flags) / sizeof(flags[0]);
        for (k = 0; k < nf; k++)
            if (!strcmp(argv[i], flags[k].name))
                break;
        if (k == nf || i + 1 >= argc) {
            fprintf(stderr, "llmsim: unknown flag or missing value: %s\n", argv[i]);
            usage(stderr);
            return 2;
        }
        if (parse_num(argv[i], argv[i + 1], flags[k].dst))
            return 2;
        i++;
    }

    if (world < 0 || world != floor(world) || world > 1.8e19) {
        fprintf(stderr, "llmsim: --world must be a non-negative integer\n");
        return 2;
    }
    sim_law law;
    if (sim_law_draw((uint64_t)world, &law) != ST_OK) {
        fprintf(stderr, "llmsim: out of memory drawing world %.0f\n", world);
        return 2;
    }
    if (!isnan(oracle))
        return print_oracle(&law, oracle, optimizer);
    if (isnan(N) && !isnan(dm) && !isnan(nl))
        N = 12.0 * nl * dm * dm; /* non-embedding parameters of a GPT block stack (Kaplan) */
    if (isnan(N) || isnan(D) || isnan(lr) || isnan(batch)) {
        fputs("llmsim: need --N (or --d-model and --n-layer), --tokens, --lr and --batch\n",
              stderr);
        usage(stderr);
        return 2;
    }
    if (seed < 0 || seed != floor(seed) || seed > 1.8e19) {
        fprintf(stderr, "llmsim: --seed must be a non-negative integer\n");
        return 2;
    }
    sim_setting s = {N, D, lr, batch, warmup, wd, optimizer};
    if (show_true)
        return print_true(&law, &s);
    return emit_run(&law, &s, (uint64_t)seed, (int)nrep, sleep_ms, checkpoints, branch_step,
                    decay_steps);
}
