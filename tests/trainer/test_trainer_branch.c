/*
 * test_trainer_branch.c — warmup-stable-decay schedules and cooldown branches: the lr of WSD
 * (linear and 1-sqrt decay) and of a branch at chosen steps against the closed forms worked out
 * here; a branch resumed from a stable-phase checkpoint gives bit-identical losses to a straight
 * WSD run that decays over the same steps (the CPU trainer is bitwise deterministic for a seed
 * and thread count: test_trainer_model checks it, and this test would fail without it); a
 * branch's cost is its own K steps' FLOPs (6·N' + 12·L·C·T per token); option errors.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check.h"
#include "trainer/gpt.h"

static char text_path[64] = "/tmp/st_branch_textXXXXXX";
static char ckpt_path[80];

static void make_text(void)
{
    int fd = mkstemp(text_path);
    FILE *f = fdopen(fd, "w");
    for (int i = 0; i < 4000; i++)
        fprintf(f, "And the %s of %d came unto the %s.\n", i % 3 ? "men" : "elders", i % 89,
                i % 5 ? "gate" : "river");
    fclose(f);
}

static void wsd_schedule(void)
{
    gpt_options o = gpt_options_default();
    o.lr = 1.0;
    o.warmup = 10;
    o.min_lr_ratio = 0.1;
    o.schedule = GPT_SCHEDULE_WSD;
    o.decay_frac = 0.2; /* 100 steps: stable until step 79, decay over steps 80..99 */
    CHECK_REL(gpt_lr_at(&o, 4, 100), 0.5, 1e-12);
    CHECK_REL(gpt_lr_at(&o, 79, 100), 1.0, 1e-12);
    /* step 80 + j has p = (j+1)/20: linear 1 - 0.9 p */
    CHECK_REL(gpt_lr_at(&o, 80, 100), 1.0 - 0.9 * 0.05, 1e-12);
    CHECK_REL(gpt_lr_at(&o, 89, 100), 0.55, 1e-12);
    CHECK_REL(gpt_lr_at(&o, 99, 100), 0.1, 1e-12);
    /* 1-sqrt: 1 - 0.9 sqrt(p) (Hägele et al. 2024) */
    o.decay_shape = GPT_DECAY_1SQRT;
    CHECK_REL(gpt_lr_at(&o, 79, 100), 1.0, 1e-12);
    CHECK_REL(gpt_lr_at(&o, 80, 100), 1.0 - 0.9 * sqrt(0.05), 1e-12);
    CHECK_REL(gpt_lr_at(&o, 89, 100), 1.0 - 0.9 * sqrt(0.5), 1e-12);
    CHECK_REL(gpt_lr_at(&o, 94, 100), 1.0 - 0.9 * sqrt(0.75), 1e-12);
    CHECK_REL(gpt_lr_at(&o, 99, 100), 0.1, 1e-12);
    /* the default schedule is unchanged by the shape: cosine halfway is (1 + 0.1) / 2 */
    o.schedule = GPT_SCHEDULE_COSINE;
    o.warmup = 0;
    CHECK_REL(gpt_lr_at(&o, 50, 101), 0.55, 1e-12);
}

static void branch_schedule(void)
{
    gpt_options o = gpt_options_default();
    o.lr = 1.0;
    o.warmup = 10;
    o.min_lr_ratio = 0.1;
    o.schedule = GPT_SCHEDULE_WSD;
    o.decay_frac = 0.2;
    o.decay_steps = 10;
    /* parent of 100 steps, branch at step 40 (stable): steps 40..49 decay 1 -> 0.1 */
    CHECK_REL(gpt_lr_branch_at(&o, 39, 100, 40), 1.0, 1e-12);
    CHECK_REL(gpt_lr_branch_at(&o, 5, 100, 40), 0.6, 1e-12);
    CHECK_REL(gpt_lr_branch_at(&o, 40, 100, 40), 1.0 - 0.9 * 0.1, 1e-12);
    CHECK_REL(gpt_lr_branch_at(&o, 44, 100, 40), 0.55, 1e-12);
    CHECK_REL(gpt_lr_branch_at(&o, 49, 100, 40), 0.1, 1e-12);
    /* the same lrs, bit for bit, as a WSD run of 50 steps decaying over its last 10 */
    gpt_options straight = o;
    straight.decay_steps = 0;
    int same = 1;
    for (uint64_t s = 0; s < 50; s++)
        same &= gpt_lr_branch_at(&o, s, 100, 40) == gpt_lr_at(&straight, s, 50);
    CHECK(same);
    /* from a cosine parent: decays from its lr at the branch step, 0.55 at step 50 of 101 */
    o.schedule = GPT_SCHEDULE_COSINE;
    o.warmup = 0;
    o.decay_shape = GPT_DECAY_1SQRT;
    CHECK_REL(gpt_lr_branch_at(&o, 54, 101, 50), 0.55 * (1.0 - 0.9 * sqrt(0.5)), 1e-12);
    CHECK_REL(gpt_lr_branch_at(&o, 59, 101, 50), 0.055, 1e-12);
}

static gpt_options run_opts(double steps)
{
    gpt_options o = gpt_options_default();
    o.model = (gpt_config){2, 32, 2, 32, 4};
    o.tokens = steps * 32 * 4;
    o.lr = 3e-3;
    o.warmup = 5; /* in steps: the same in the parent and the straight run */
    o.schedule = GPT_SCHEDULE_WSD;
    o.threads = 1;
    o.eval_batches = 2;
    strcpy(o.data, text_path);
    o.val_data[0] = 0;
    return o;
}

/* runs tr to its end; losses of steps from..total-1 into loss[] (NULL: none); last info out */
static void run_to_end(gpt_trainer *tr, uint64_t from, double *loss, gpt_step_info *last)
{
    while (gpt_trainer_step_index(tr) < gpt_trainer_total_steps(tr)) {
        CHECK_ST(gpt_trainer_step(tr, last), ST_OK);
        if (loss && last->step >= from)
            loss[last->step - from] = last->loss;
    }
}

/* parent: 60 steps of WSD, checkpoint at 30 (stable); branch: 10 decay steps from there;
 * straight: 40 steps of WSD decaying over its last 10 (decay-frac 0.25) */
static void branch_run(void)
{
    enum { S = 30, K = 10 };
    char err[ST_ERRMSG_MAX];
    gpt_options po = run_opts(60), so = run_opts(S + K);
    so.decay_frac = (double)K / (S + K);
    gpt_trainer *parent, *branch, *straight;
    gpt_step_info info;
    CHECK_ST(gpt_trainer_create(&po, &gpt_backend_cpu, &parent, err), ST_OK);
    if (!parent)
        return;
    for (int s = 0; s < S; s++)
        CHECK_ST(gpt_trainer_step(parent, &info), ST_OK);
    CHECK_REL(info.lr, po.lr, 1e-12); /* the checkpoint is in the stable phase */
    CHECK_ST(gpt_trainer_save(parent, ckpt_path), ST_OK);
    gpt_trainer_destroy(parent);

    gpt_options bo = po;
    strcpy(bo.branch_from, ckpt_path);
    bo.decay_steps = K;
    CHECK_ST(gpt_trainer_create(&bo, &gpt_backend_cpu, &branch, err), ST_OK);
    CHECK_ST(gpt_trainer_create(&so, &gpt_backend_cpu, &straight, err), ST_OK);
    if (!branch || !straight)
        goto out;
    uint64_t ps = 0;
    CHECK(gpt_trainer_is_branch(branch, &ps) == 1 && ps == S);
    CHECK(gpt_trainer_is_branch(straight, NULL) == 0);
    CHECK(gpt_trainer_total_steps(branch) == S + K && gpt_trainer_step_index(branch) == S);
    double lb[K], ls[K], vb, vs;
    gpt_step_info ib, is;
    run_to_end(branch, S, lb, &ib);
    run_to_end(straight, S, ls, &is);
    CHECK(!memcmp(lb, ls, sizeof(lb)));
    CHECK_ST(gpt_trainer_eval(branch, &vb), ST_OK);
    CHECK_ST(gpt_trainer_eval(straight, &vs), ST_OK);
    CHECK(vb == vs);
    CHECK(ib.lr == is.lr);
    CHECK_REL(ib.lr, po.lr * po.min_lr_ratio, 1e-12);
    fprintf(stderr, "  branch at %d + %d decay steps: val %.6f, straight run: %.6f\n", S, K, vb,
            vs);

    /* cost: K steps of B*T tokens at 6 N' + 12 L C T FLOPs per token, N' without wpe (T*C) */
    const gpt_config *m = &po.model;
    double n_prime = (double)gpt_trainer_num_params(branch) - (double)m->seq_len * m->d_model;
    double fpt = 6.0 * n_prime + 12.0 * m->n_layer * m->d_model * m->seq_len;
    CHECK_REL(ib.flops, (double)K * m->batch * m->seq_len * fpt, 1e-12);
    CHECK_REL(is.flops, (double)(S + K) * m->batch * m->seq_len * fpt, 1e-12);
    CHECK_REL(ib.tokens, (double)(S + K) * m->batch * m->seq_len, 1e-12);
out:
    gpt_trainer_destroy(branch);
    gpt_trainer_destroy(straight);
}

static void errors(void)
{
    char err[ST_ERRMSG_MAX];
    gpt_trainer *tr;
    gpt_options o = run_opts(60);
    CHECK_ST(gpt_options_set(&o, "decay-shape", "1-sqrt", err), ST_OK);
    CHECK(o.decay_shape == GPT_DECAY_1SQRT);
    CHECK_ST(gpt_options_set(&o, "decay-shape", "cosine", err), ST_EINVAL);
    o = run_opts(60);
    strcpy(o.branch_from, ckpt_path);
    CHECK_ST(gpt_trainer_create(&o, &gpt_backend_cpu, &tr, err), ST_EINVAL);
    CHECK(strstr(err, "--decay-steps") != NULL);
    o.decay_steps = 5;
    strcpy(o.resume, ckpt_path);
    CHECK_ST(gpt_trainer_create(&o, &gpt_backend_cpu, &tr, err), ST_EINVAL);
    o = run_opts(60);
    o.decay_steps = 5;
    CHECK_ST(gpt_options_check(&o, err), ST_EINVAL);
    /* the branch must have the parent's settings, except the decay shape */
    strcpy(o.branch_from, ckpt_path);
    o.lr = 1e-3;
    CHECK_ST(gpt_trainer_create(&o, &gpt_backend_cpu, &tr, err), ST_EINVAL);
    CHECK(strstr(err, "branch with the original flags") != NULL);
    o.lr = 3e-3;
    o.decay_shape = GPT_DECAY_1SQRT;
    CHECK_ST(gpt_trainer_create(&o, &gpt_backend_cpu, &tr, err), ST_OK);
    gpt_trainer_destroy(tr);
    /* resuming (not branching) with another decay shape is refused */
    o.branch_from[0] = 0;
    o.decay_steps = 0;
    strcpy(o.resume, ckpt_path);
    CHECK_ST(gpt_trainer_create(&o, &gpt_backend_cpu, &tr, err), ST_EINVAL);
    o.decay_shape = GPT_DECAY_LINEAR;
    CHECK_ST(gpt_trainer_create(&o, &gpt_backend_cpu, &tr, err), ST_OK);
    gpt_trainer_destroy(tr);
}

int main(void)
{
    make_text();
    snprintf(ckpt_path, sizeof(ckpt_path), "%s.ckpt", text_path);
    wsd_schedule();
    branch_schedule();
    branch_run();
    errors();
    remove(ckpt_path);
    remove(text_path);
    return check_summary("trainer.branch");
}
