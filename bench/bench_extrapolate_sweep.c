/*
 * bench_extrapolate_sweep.c — the sweep files bench_extrapolate writes (as a newcomer writes
 * them: --style chinchilla, nanogpt, hf) and what it reads back from a finished sweep's export.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "bench/bench_extrapolate.h"

const double factors[N_FACTOR] = {100.0, 1000.0};
const char *const par_name[N_PAR] = {"N", "tokens", "lr", "batch", "warmup", "weight_decay"};
const char *const par_flag[N_PAR] = {"--N",     "--tokens", "--lr",
                                     "--batch", "--warmup", "--weight-decay"};

/* The optimizer block of --mode: none (best: what a newcomer writes), all random, or study
 * mode aimed at 100x the cap (the smaller of the two factors the bench judges). */
static const char *optimizer_block(const bench_cfg *cfg, char *buf, size_t n)
{
    if (!strcmp(cfg->mode, "random"))
        snprintf(buf, n, "optimizer: {num_random_samples: %ld}\n", cfg->runs);
    else if (!strcmp(cfg->mode, "study"))
        snprintf(buf, n, "optimizer: {goal: extrapolate, target_factor: %g}\n", factors[0]);
    else
        buf[0] = '\0';
    return buf;
}

/*
 * A sweep as a newcomer writes it: the example's wide box, no optimizer block (--mode best).
 * Seeds alternate two choices, crossed: cost.expr on even seeds; warmup on a linear space
 * (centre 0.05) on seeds s with s mod 4 in {1, 2}, else on a logit space (centre 0.02) as in
 * examples/e2e/llmsim.yaml.
 */
static int write_sweep(const bench_cfg *cfg, seed_result *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int s = r->seed;
    r->expr = s % 2 == 0;
    r->linear_warmup = s % 4 == 1 || s % 4 == 2;
    char opt[128], cost[64] = "";
    if (cfg->budget_cost > 0)
        snprintf(cost, sizeof(cost), ", cost: %.6g", cfg->budget_cost);
    char reports[96] = "";
    if (cfg->paced)
        snprintf(reports, sizeof(reports),
                 ", \"--steps-to-report\", \"20\", \"--sleep-ms\", \"150\"");
    else if (cfg->reports > 1)
        snprintf(reports, sizeof(reports), ", \"--steps-to-report\", \"%ld\"", cfg->reports);
    if (cfg->branches)
        snprintf(reports + strlen(reports), sizeof(reports) - strlen(reports),
                 ", \"--checkpoints\"");
    fprintf(f,
            "name: xp-%d\n"
            "command: [\"%s\", \"--world\", \"%d\", \"--N\", \"{N}\", \"--tokens\", \"{tokens}\",\n"
            "          \"--lr\", \"{lr}\", \"--batch\", \"{batch}\", \"--warmup\", \"{warmup}\",\n"
            "          \"--weight-decay\", \"{weight_decay}\", \"--seed\", \"{_run}\"%s%s]\n"
            "objective: {metric: val_loss, goal: minimize}\n"
            "cost: {metric: flops%s}\n"
            "parameters:\n"
            "  N:            {space: log, min: 2.0e6, max: 6.0e7, center: 1.0e7}\n"
            "  tokens:       {space: log, min: 4.0e7, max: 2.0e9, center: 2.0e8}\n"
            "  lr:           {space: log, min: 1.0e-4, max: 0.5, center: 3.0e-3}\n"
            "  batch:        {space: log, min: 2.0e3, max: 1.0e6, center: 3.0e4}\n"
            "  warmup:       {space: %s, min: 0.0, max: 0.5, center: %s}\n"
            "  weight_decay: {space: log, min: 1.0e-3, max: 1.0, center: 0.1}\n"
            "%s"
            "budget: {runs: %ld%s, max_cost_per_run: 1.0e16}\n"
            "parallel: 2\n"
            "seed: %d\n"
            "%s%s",
            s, cfg->llmsim, s, reports, cfg->opt_choice ? ", \"--optimizer\", \"{optimizer}\"" : "",
            r->expr ? ", expr: \"6 * {N} * {tokens}\"" : "", r->linear_warmup ? "linear" : "logit",
            r->linear_warmup ? "0.05" : "0.02",
            cfg->opt_choice ? "  optimizer:    {choices: [adamw, lion]}\n" : "", cfg->runs, cost, s,
            optimizer_block(cfg, opt, sizeof(opt)),
            cfg->early_stop ? "early_stopping: {enabled: true}\n" : "");
    if (cfg->branches)
        fprintf(f,
                "branches:\n"
                "  at: [%s]\n"
                "  decay_fraction: 0.2\n"
                "  args: [\"--branch-step\", \"{_branch_step}\", \"--decay-steps\", "
                "\"{_decay_steps}\"]\n",
                cfg->branches);
    return fclose(f) ? -1 : 0;
}

/* The command and parameters of --style nanogpt and hf (write_styled). */
static const char *const nanogpt_command =
    "command: [\"sh\", \"-c\", \"exec '%s' --world %d --d-model {d_model} --n-layer {n_layer} "
    "--tokens $(( {max_iters} * {batch_size} )) --lr {learning_rate} --batch {batch_size} "
    "--warmup $(awk 'BEGIN{{print {warmup_iters}/{max_iters}}}') --weight-decay {weight_decay} "
    "--seed {_run}%s\"]\n";
static const char *const nanogpt_params =
    "  n_layer:       {space: linear, min: 2, max: 12, center: 4, integer: true}\n"
    "  d_model:       {space: log, min: 64, max: 1024, center: 256, integer: true, rounding: 32}\n"
    "  max_iters:     {space: log, min: 500, max: 20000, center: 2000, integer: true}\n"
    "  batch_size:    {space: log, min: 8192, max: 262144, center: 32768, integer: true}\n"
    "  learning_rate: {space: log, min: 1.0e-4, max: 0.1, center: 1.0e-3}\n"
    "  warmup_iters:  {space: log, min: 10, max: 400, center: 100, integer: true}\n"
    "  weight_decay:  {space: log, min: 1.0e-3, max: 1.0, center: 0.1}\n";
static const char *const hf_command =
    "command: [\"sh\", \"-c\", \"exec '%s' --world %d --d-model {hidden_size} --n-layer "
    "{num_hidden_layers} --tokens $(( {max_steps} * {per_device_train_batch_size} * 1024 )) "
    "--lr {learning_rate} --batch $(( {per_device_train_batch_size} * 1024 )) --warmup "
    "{warmup_ratio} --weight-decay {weight_decay} --seed {_run}%s\"]\n";
static const char *const hf_params =
    "  hidden_size:       {space: log, min: 128, max: 1024, center: 256, integer: true, "
    "rounding: 64}\n"
    "  num_hidden_layers: {space: linear, min: 2, max: 12, center: 6, integer: true}\n"
    "  max_steps:         {space: log, min: 500, max: 20000, center: 2000, integer: true}\n"
    "  per_device_train_batch_size: {space: log, min: 8, max: 256, center: 32, integer: true}\n"
    "  learning_rate:     {space: log, min: 1.0e-5, max: 1.0e-2, center: 3.0e-4}\n"
    "  warmup_ratio:      {space: linear, min: 0.0, max: 0.2, center: 0.05}\n"
    "  weight_decay:      {space: linear, min: 0.0, max: 0.3, center: 0.1}\n";

/*
 * --style nanogpt or hf: the sweep as a user of nanoGPT or of Hugging Face's Trainer writes it:
 * the model's shape (the depth on a linear scale), its length in optimizer steps with the batch
 * (nanoGPT: tokens; hf: sequences of 1024 tokens), the warmup in steps (nanoGPT) or as a ratio
 * on a linear scale from 0 (hf, with the weight decay linear from 0 too), no cost expression; a
 * shell turns them into llmsim's N = 12 n_layer d_model^2, tokens and warmup fraction. The
 * same worlds, cap and budget as write_sweep.
 */
static int write_styled(const bench_cfg *cfg, seed_result *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int s = r->seed, hf = cfg->style == STYLE_HF;
    r->expr = 0;
    r->linear_warmup = hf;
    char opt[128], cost[64] = "", reports[64] = "";
    if (cfg->budget_cost > 0)
        snprintf(cost, sizeof(cost), ", cost: %.6g", cfg->budget_cost);
    if (cfg->reports > 1)
        snprintf(reports, sizeof(reports), " --steps-to-report %ld", cfg->reports);
    fprintf(f, "name: xp-%d\n", s);
    fprintf(f, hf ? hf_command : nanogpt_command, cfg->llmsim, s, reports);
    fprintf(f,
            "objective: {metric: val_loss, goal: minimize}\n"
            "cost: {metric: flops}\n"
            "parameters:\n"
            "%s"
            "budget: {runs: %ld%s, max_cost_per_run: 1.0e16}\n"
            "parallel: 2\n"
            "seed: %d\n"
            "%s%s",
            hf ? hf_params : nanogpt_params, cfg->runs, cost, s,
            optimizer_block(cfg, opt, sizeof(opt)),
            cfg->early_stop ? "early_stopping: {enabled: true}\n" : "");
    return fclose(f) ? -1 : 0;
}

/* Counts the sweep's runs, its failed runs and those refused or stopped as over budget, and its
 * cooldown branches apart (their cost is in the sweep's). */
int bx_read_export(const char *path, seed_result *r)
{
    json_t *root = json_load_file(path, 0, NULL);
    json_t *runs = json_object_get(root, "runs");
    if (!json_is_array(runs)) {
        json_decref(root);
        return -1;
    }
    size_t i;
    json_t *run;
    json_array_foreach(runs, i, run)
    {
        const char *fail = json_string_value(json_object_get(run, "failure"));
        const char *status = json_string_value(json_object_get(run, "status"));
        const json_t *cost = json_object_get(run, "cost");
        if (json_is_number(cost) && isfinite(json_number_value(cost)))
            r->sweep_cost += json_number_value(cost);
        if (json_is_integer(json_object_get(run, "parent_run"))) { /* a cooldown branch */
            r->n_branches++;
            continue;
        }
        r->n_runs++;
        r->n_failed += status && !strcmp(status, "failed");
        r->n_stopped += status && !strcmp(status, "stopped");
        r->n_over_budget += fail && !strcmp(fail, "over_budget");
    }
    json_decref(root);
    return 0;
}

int bx_write_sweep(const bench_cfg *cfg, seed_result *r, const char *path)
{
    return (cfg->style ? write_styled : write_sweep)(cfg, r, path);
}
