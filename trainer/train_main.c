/*
 * train_main.c — `scaletune-train`: parses the flags of the trainer's option table, runs the
 * training loop of gpt_trainer and speaks the metrics protocol (docs/metrics-protocol.md): JSON
 * lines on stdout, or appended to $SCALETUNE_METRICS_FILE. Messages go to stderr.
 * Exit status: 0 finished, 2 bad usage, 3 diverged, 4 out of memory, 5 silent data corruption
 * that repeats (SDC_MAX_ROLLBACKS rollbacks of one window did not clear it), 1 anything else.
 * Built with -DGPT_WITH_CUDA (by `make cuda`) it also offers --device cuda.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

#include "trainer/gpt.h"

#ifdef GPT_WITH_CUDA
extern const gpt_backend gpt_backend_cuda;
#endif

static void usage(FILE *f)
{
    fprintf(f, "usage: scaletune-train [--flag value | --flag=value]...\n\n"
               "Trains a byte-level GPT and writes metrics as JSON lines (stdout, or the file "
               "named by\nSCALETUNE_METRICS_FILE). Exit: 0 done, 3 diverged, 4 out of memory, 5 "
               "silent data\ncorruption that repeats.\n\n");
    for (size_t i = 0; i < gpt_option_count(); i++) {
        const gpt_option_info *o = gpt_option_at(i);
        char left[64];
        snprintf(left, sizeof(left), "--%s %s", o->name, o->kind);
        fprintf(f, "  %-28s %s (default %s)\n", left, o->help, o->def[0] ? o->def : "none");
    }
    fprintf(f, "  %-28s %s\n", "--help", "this text");
    fprintf(f, "\nSee docs/trainer.md.\n");
}

static int fail(int code, const char *hint, const char *msg)
{
    fprintf(stderr, "scaletune-train: %s\n", msg);
    if (hint)
        fprintf(stderr, "hint: %s\n", hint);
    return code;
}

static int exit_for(st_status s)
{
    return s == ST_ENOMEM ? 4 : 1;
}

/* Writes the checkpoint of --checkpoint, a "{step}" in its path replaced by the steps done (one
 * file per checkpoint, e.g. to branch cooldowns off several stable steps). */
static st_status save_checkpoint(gpt_trainer *tr, const char *path)
{
    char buf[1100];
    const char *at = strstr(path, "{step}");
    if (!at)
        return gpt_trainer_save(tr, path);
    snprintf(buf, sizeof(buf), "%.*s%llu%s", (int)(at - path), path,
             (unsigned long long)gpt_trainer_step_index(tr), at + 6);
    return gpt_trainer_save(tr, buf);
}

/* {"event":"checkpoint","step":S} once checkpoint S is on disk (renamed into place): the runner
 * counts the work an interrupted attempt loses from the last one (docs/large-run.md) */
static void checkpoint_record(FILE *out, uint64_t step)
{
    fprintf(out, "{\"event\":\"checkpoint\",\"step\":%llu}\n", (unsigned long long)step);
    fflush(out);
}

/* ---- silent data corruption (--sdc-every K; docs/large-run.md) ------------------------------ */

/* A window whose replay still differs after this many rollbacks is not a transient fault: the
 * trainer stops with EXIT_SDC instead of looping (the node is faulty; docs/large-run.md). */
#define SDC_MAX_ROLLBACKS 3
#define EXIT_SDC          5

typedef struct sdc {
    gpt_snapshot *verified, *cur; /* the last verified state; scratch for the live one */
    unsigned n_sdc;               /* mismatches of the current window (since the last verify) */
    int flip_armed;               /* flips of SCALETUNE_TRAIN_FLIP left (-1: every time) */
    unsigned long long flip_step, flip_index;
    int flip_bit;
} sdc;

/* SCALETUNE_TRAIN_FLIP=STEP:INDEX:BIT[:TIMES], a test-only fault: after step STEP is done, bit
 * BIT of weight INDEX is flipped, the first TIMES times the step is taken (default 1: a
 * transient fault; 0: every time, a fault that repeats). */
static void flip_setup(sdc *d)
{
    const char *f = getenv("SCALETUNE_TRAIN_FLIP");
    int times = 1;
    int n =
        f ? sscanf(f, "%llu:%llu:%d:%d", &d->flip_step, &d->flip_index, &d->flip_bit, &times) : 0;
    d->flip_armed = n >= 3 ? (times > 0 ? times : -1) : 0;
}

static st_status maybe_flip(gpt_trainer *tr, sdc *d, uint64_t done_steps)
{
    if (!d->flip_armed || done_steps != d->flip_step)
        return ST_OK;
    if (d->flip_armed > 0)
        d->flip_armed--;
    fprintf(stderr,
            "scaletune-train: SCALETUNE_TRAIN_FLIP: bit %d of weight %llu flipped after "
            "step %llu\n",
            d->flip_bit, d->flip_index, d->flip_step);
    return gpt_trainer_flip_bit(tr, (size_t)d->flip_index, d->flip_bit);
}

/* Replays the steps since the last verified state and compares the state hashes bit for bit.
 * Equal: the state (the live one, bit-identical) becomes the verified one. Different: an
 * {"event":"sdc"} record ("count": the how-manieth of this window), and the trainer is back at
 * the verified state (*rolled_back = 1); a window that differs again after SDC_MAX_ROLLBACKS
 * rollbacks gets a record with "gave_up":1 and *gave_up = 1 instead (the caller stops). */
static st_status sdc_check(gpt_trainer *tr, sdc *d, FILE *out, int *rolled_back, int *gave_up)
{
    *rolled_back = *gave_up = 0;
    uint64_t now = gpt_trainer_step_index(tr), from = gpt_snapshot_step(d->verified);
    st_status s = gpt_trainer_snapshot(tr, &d->cur);
    if (s != ST_OK)
        return s;
    uint64_t h_live = gpt_snapshot_hash(d->cur), h_replay = 0;
    s = gpt_trainer_restore(tr, d->verified);
    gpt_step_info info;
    while (s == ST_OK && gpt_trainer_step_index(tr) < now)
        s = gpt_trainer_step(tr, &info);
    int replayed = s == ST_OK; /* a replay that diverges where the live run did not differs */
    if (replayed && (s = gpt_trainer_snapshot(tr, &d->cur)) != ST_OK)
        return s;
    if (replayed)
        h_replay = gpt_snapshot_hash(d->cur);
    if (replayed && h_replay == h_live) {
        gpt_snapshot *t = d->verified;
        d->verified = d->cur;
        d->cur = t;
        d->n_sdc = 0;
        fprintf(out, "{\"event\":\"verified\",\"step\":%llu,\"from\":%llu,\"hash\":\"%016llx\"}\n",
                (unsigned long long)now, (unsigned long long)from, (unsigned long long)h_live);
        fflush(out);
        return ST_OK;
    }
    *gave_up = ++d->n_sdc > SDC_MAX_ROLLBACKS;
    fprintf(out,
            "{\"event\":\"sdc\",\"step\":%llu,\"verified_step\":%llu,\"count\":%u,%s"
            "\"reason\":\"state %016llx, replay from %llu %016llx%s; %s %llu\"}\n",
            (unsigned long long)now, (unsigned long long)from, d->n_sdc,
            *gave_up ? "\"gave_up\":1," : "", (unsigned long long)h_live, (unsigned long long)from,
            (unsigned long long)h_replay, replayed ? "" : " (the replay failed)",
            *gave_up ? "it repeats after rollbacks to step" : "back to step",
            (unsigned long long)from);
    fflush(out);
    if (*gave_up) {
        fprintf(stderr,
                "scaletune-train: silent data corruption at step %llu repeats after %d rollbacks "
                "to step %llu: stopping (exit %d)\n"
                "hint: the node is faulty; run elsewhere, resuming from the last checkpoint\n",
                (unsigned long long)now, SDC_MAX_ROLLBACKS, (unsigned long long)from, EXIT_SDC);
        return ST_OK;
    }
    fprintf(stderr,
            "scaletune-train: silent data corruption found at step %llu; back to step %llu\n",
            (unsigned long long)now, (unsigned long long)from);
    *rolled_back = 1;
    return gpt_trainer_restore(tr, d->verified);
}

/* `text` as a JSON string (quotes, backslashes and control bytes escaped) */
static void json_string(FILE *out, const char *text)
{
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(out, "\\u%04x", *c);
        else
            fputc(*c, out);
    }
    fputc('"', out);
}

/* a branch's fields (docs/metrics-protocol.md, "Cooldown branches"): none for a plain run */
static void branch_fields(FILE *out, const gpt_trainer *tr, const gpt_options *o)
{
    uint64_t parent_step;
    if (!gpt_trainer_is_branch(tr, &parent_step))
        return;
    fprintf(out, ",\"branch\":1,\"parent_step\":%llu,\"branch_steps\":%d,\"parent_checkpoint\":",
            (unsigned long long)parent_step, o->decay_steps);
    json_string(out, o->branch_from);
    if (o->parent_run > 0)
        fprintf(out, ",\"parent_run\":%d", o->parent_run);
}

/* The schedule in the config record (docs/metrics-protocol.md), as gpt_lr_at() runs it, so
 * that `scaletune run` can fit the loss-curve law under it; a branch's (gpt_lr_branch_at) is
 * not stated. */
static void schedule_fields(FILE *out, const gpt_trainer *tr, const gpt_options *o)
{
    if (gpt_trainer_is_branch(tr, NULL))
        return;
    double total = (double)gpt_trainer_total_steps(tr);
    double W = o->warmup < 1.0 ? floor(o->warmup * total + 0.5) : floor(o->warmup);
    fprintf(out, ",\"schedule\":\"%s\",\"lr\":%.17g,\"warmup_steps\":%.0f,\"min_lr_ratio\":%.17g",
            o->schedule == GPT_SCHEDULE_WSD ? "wsd" : "cosine", o->lr, W > total ? total : W,
            o->min_lr_ratio);
    if (o->schedule == GPT_SCHEDULE_WSD)
        fprintf(out, ",\"decay_steps\":%.0f,\"decay_shape\":\"%s\"",
                floor(o->decay_frac * total + 0.5),
                o->decay_shape == GPT_DECAY_1SQRT ? "1-sqrt" : "linear");
}

/* The last eval and the final record: tokens in total (a branch: its parent's too), FLOPs and
 * seconds of this run only (a branch: its own steps). */
static void write_final(FILE *out, const gpt_trainer *tr, const gpt_options *o, double val,
                        const gpt_step_info *info, double tokens_per_step)
{
    uint64_t steps = gpt_trainer_total_steps(tr), parent_step = 0;
    gpt_trainer_is_branch(tr, &parent_step);
    double tokens = (double)steps * tokens_per_step;
    double own_tokens = (double)(steps - parent_step) * tokens_per_step;
    size_t n_params = gpt_trainer_num_params(tr);
    fprintf(out, "{\"event\":\"eval\",\"step\":%llu,\"val_loss\":%.9g,\"tokens\":%.17g}\n",
            (unsigned long long)steps, val, tokens);
    fprintf(out,
            "{\"event\":\"final\",\"val_loss\":%.9g,\"loss\":%.9g,\"flops\":%.17g,"
            "\"params\":%zu,\"tokens\":%.17g,\"seconds\":%.6f,\"steps\":%llu",
            val, info->loss, own_tokens * gpt_trainer_flops_per_token(tr), n_params, tokens,
            info->seconds, (unsigned long long)steps);
    branch_fields(out, tr, o);
    fprintf(out, "}\n");
    fflush(out);
}

/* Subnormal floats flushed to zero (x86 SSE: FTZ and DAZ in this thread's MXCSR, which the
 * trainer's pool threads inherit). A run whose learning rate is far too high drives values
 * below FLT_MIN, where each operation is slow: such runs of one make demo sweep took 4-8x the
 * seconds per FLOP of its healthy runs (d_model 32, 1 layer, 3e5 tokens: 57.9 s at lr 0.227
 * against 7.5 s at lr 0.003), half of its run time. On the runs measured (docs/trainer.md) the
 * reported losses did not change. */
static void flush_denormals(void)
{
#if defined(__SSE2__)
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#endif
}

int main(int argc, char **argv)
{
    gpt_options o = gpt_options_default();
    char err[ST_ERRMSG_MAX];
    int val_given = 0, data_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (strncmp(a, "--", 2) != 0)
            return fail(2, "flags look like --lr 3e-4; see --help", "unexpected argument");
        char name[64];
        const char *eq = strchr(a + 2, '='), *value;
        size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (len >= sizeof(name)) {
            snprintf(err, sizeof(err), "unknown option '%s'", a);
            return fail(2, "see --help", err);
        }
        memcpy(name, a + 2, len);
        name[len] = 0;
        if (eq) {
            value = eq + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            snprintf(err, sizeof(err), "--%s needs a value", name);
            return fail(2, "see --help", err);
        }
        st_status s = gpt_options_set(&o, name, value, err);
        if (s != ST_OK)
            return fail(2, s == ST_ENOTFOUND ? "scaletune-train --help lists the flags" : NULL,
                        err);
        val_given |= !strcmp(name, "val-data");
        data_given |= !strcmp(name, "data");
    }
    if (data_given && !val_given)
        o.val_data[0] = 0; /* a user's file: hold out its last 10% */
    if (gpt_options_check(&o, err) != ST_OK)
        return fail(2, "see --help", err);

    flush_denormals();
    const gpt_backend *be = &gpt_backend_cpu;
    if (!strcmp(o.device, "cuda")) {
#ifdef GPT_WITH_CUDA
        be = &gpt_backend_cuda;
#else
        return fail(1, "build the CUDA trainer with `make cuda` and run build/scaletune-train-cuda",
                    "this scaletune-train was built without CUDA");
#endif
    }
    if (st_global_init() != ST_OK)
        return fail(1, NULL, "global initialisation failed");

    FILE *out = stdout;
    const char *mf = getenv("SCALETUNE_METRICS_FILE");
    if (mf && *mf) {
        out = fopen(mf, "a");
        if (!out) {
            snprintf(err, sizeof(err), "cannot open SCALETUNE_METRICS_FILE '%s'", mf);
            return fail(1, NULL, err);
        }
    }

    gpt_trainer *tr;
    st_status s = gpt_trainer_create(&o, be, &tr, err);
    if (s != ST_OK) {
        const char *hint = NULL;
        if (s == ST_EIO && strstr(err, "data/kjv"))
            hint = "run scripts/prepare-data to extract the KJV corpus, or pass --data FILE";
        else if (s == ST_EUNSUPPORTED)
            hint = "use --device cpu on a machine without an NVIDIA GPU";
        int code = fail(exit_for(s), hint, err);
        if (out != stdout)
            fclose(out);
        st_global_cleanup();
        return code;
    }

    size_t n_params = gpt_trainer_num_params(tr);
    double fpt = gpt_trainer_flops_per_token(tr), peak = gpt_trainer_peak_flops(tr);
    double tokens_per_step = (double)o.model.batch * o.model.seq_len * o.grad_accum;
    fprintf(out,
            "{\"event\":\"config\",\"params\":%zu,\"flops_per_token\":%.17g,\"steps\":%llu,"
            "\"seed\":%llu,\"threads\":%d,\"device\":\"%s\",\"start_step\":%llu",
            n_params, fpt, (unsigned long long)gpt_trainer_total_steps(tr),
            (unsigned long long)o.seed, o.threads, o.device,
            (unsigned long long)gpt_trainer_step_index(tr));
    branch_fields(out, tr, &o);
    schedule_fields(out, tr, &o);
    fprintf(out, "}\n");
    fflush(out);

    int code = 0;
    gpt_step_info info = {0};
    double val = 0.0;
    sdc d = {0};
    flip_setup(&d);
    if (o.sdc_every > 0 && (s = gpt_trainer_snapshot(tr, &d.verified)) != ST_OK) {
        code = fail(exit_for(s), NULL, gpt_trainer_errmsg(tr));
        goto done;
    }
    while (gpt_trainer_step_index(tr) < gpt_trainer_total_steps(tr)) {
        s = gpt_trainer_step(tr, &info);
        if (s == ST_ENUMERIC) {
            fprintf(out, "{\"event\":\"diverged\",\"step\":%llu,\"reason\":\"%s\"}\n",
                    (unsigned long long)info.step, gpt_trainer_errmsg(tr));
            fprintf(stderr, "scaletune-train: diverged at step %llu: %s\n",
                    (unsigned long long)info.step, gpt_trainer_errmsg(tr));
            code = 3;
            goto done;
        }
        if (s != ST_OK) {
            code = fail(exit_for(s), NULL, gpt_trainer_errmsg(tr));
            goto done;
        }
        uint64_t done_steps = info.step + 1;
        double tps = info.step_seconds > 0 ? tokens_per_step / info.step_seconds : 0.0;
        fprintf(out,
                "{\"event\":\"step\",\"step\":%llu,\"loss\":%.9g,\"lr\":%.9g,\"grad_norm\":%.9g,"
                "\"tokens\":%.17g,\"flops\":%.17g,\"seconds\":%.6f,\"tokens_per_s\":%.3f,"
                "\"mfu\":%.6f}\n",
                (unsigned long long)done_steps, info.loss, info.lr, info.grad_norm, info.tokens,
                info.flops, info.seconds, tps, tps * fpt / peak);
        fflush(out);
        int last = done_steps == gpt_trainer_total_steps(tr), rolled_back = 0, gave_up = 0;
        s = maybe_flip(tr, &d, done_steps);
        if (s == ST_OK && o.sdc_every > 0 && (done_steps % (uint64_t)o.sdc_every == 0 || last))
            s = sdc_check(tr, &d, out, &rolled_back, &gave_up);
        if (s != ST_OK) {
            code = fail(exit_for(s), NULL, gpt_trainer_errmsg(tr));
            goto done;
        }
        if (gave_up) {
            code = EXIT_SDC;
            goto done;
        }
        if (rolled_back)
            continue; /* the steps since the verified state are taken again */
        if (o.eval_every > 0 && done_steps % (uint64_t)o.eval_every == 0 && !last) {
            s = gpt_trainer_eval(tr, &val);
            if (s != ST_OK) {
                code = fail(exit_for(s), NULL, gpt_trainer_errmsg(tr));
                goto done;
            }
            fprintf(out, "{\"event\":\"eval\",\"step\":%llu,\"val_loss\":%.9g,\"tokens\":%.17g}\n",
                    (unsigned long long)done_steps, val, info.tokens);
            fflush(out);
        }
        if (o.checkpoint[0] && o.checkpoint_every > 0 &&
            done_steps % (uint64_t)o.checkpoint_every == 0 && !last) {
            s = save_checkpoint(tr, o.checkpoint);
            if (s != ST_OK) {
                code = fail(exit_for(s), NULL, gpt_trainer_errmsg(tr));
                goto done;
            }
            checkpoint_record(out, done_steps);
        }
    }
    s = gpt_trainer_eval(tr, &val);
    if (s == ST_OK && o.checkpoint[0])
        s = save_checkpoint(tr, o.checkpoint);
    if (s != ST_OK) {
        code = fail(exit_for(s), NULL, gpt_trainer_errmsg(tr));
        goto done;
    }
    if (o.checkpoint[0])
        checkpoint_record(out, gpt_trainer_step_index(tr));
    write_final(out, tr, &o, val, &info, tokens_per_step);
done:
    gpt_snapshot_destroy(d.verified);
    gpt_snapshot_destroy(d.cur);
    gpt_trainer_destroy(tr);
    if (out != stdout)
        fclose(out);
    st_global_cleanup();
    return code;
}
