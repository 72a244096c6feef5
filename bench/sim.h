/*
 * sim.h — an LLM-training simulator with known truth, and its oracle (bench/, not the library).
 *
 * The final validation loss of a run is built from published laws: Chinchilla/Epoch L(N, D),
 * StepLaw's optimal learning rate and batch size, a stability boundary for the learning rate,
 * and penalties for warmup and weight decay (AdamW timescale, after Bergsma et al.), times
 * seeded noise. Every formula and constant is documented here, in sim.c and docs/benchmarks.md.
 * Used by bench/llmsim (a trainer-like program), bench/compare.c and tests/bench/. Depends on
 * common/ (st_status, st_rng) and GSL (the oracle's 1-D minimiser).
 */
#ifndef BENCH_SIM_H
#define BENCH_SIM_H

#include <stdint.h>
#include <stdio.h>

#include "common/st.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The constants of the simulated world. sim_law_default() fills the values below; tests and
 * benchmarks may change them. Units: N parameters (non-embedding), D tokens, batch in tokens,
 * lr the peak AdamW learning rate, warmup a fraction of the optimizer steps, weight decay the
 * AdamW coefficient lambda (decoupled, multiplied by lr).
 */
typedef struct sim_law {
    /* L(N, D) = E + A N^-alpha + B D^-beta: Epoch's Huber-likelihood refit of Chinchilla
     * (Besiroglu et al. 2024), full precision from our refit (specs/scaling-laws.md 6). */
    double E, A, B, alpha, beta;
    /* lr_opt = c_lr N^lr_pN D^lr_pD (StepLaw, Li et al. 2025: 1.79, -0.713, 0.307). */
    double c_lr, lr_pN, lr_pD;
    /* batch_opt = c_bs D^bs_pD tokens (StepLaw: 0.58, 0.571). */
    double c_bs, bs_pD;
    /* relative penalty k_lr u^2 + k_bs v^2 - 2 rho sqrt(k_lr k_bs) u v, u = ln(lr/lr_opt),
     * v = ln(batch/batch_opt): convex in (log lr, log batch) with a ridge (ours). */
    double k_lr, k_bs, rho;
    /* stability boundary lr_max(N) = div_kappa lr_opt(N, div_tpp N) (ours), lowered by short
     * warmup: lr_max_eff = lr_max (0.5 + 0.5 min(1, w / w_opt)). */
    double div_kappa, div_tpp;
    /* warmup_opt = clamp(wu_steps / S, wu_min, wu_max), S = D / batch steps; penalty
     * wu_kappa (1 - exp(-q^2 / (2 wu_width^2))), q = ln((w + wu_eps) / (w_opt + wu_eps)). */
    double wu_steps, wu_min, wu_max, wu_eps, wu_kappa, wu_width;
    /* AdamW timescale tau = batch / (lr lambda D) (fraction of the run, Bergsma et al. 2025),
     * tau_opt = wd_c (D / (N wd_tpp))^wd_p; penalty wd_kappa (1 - exp(-r^2 / (2 wd_width^2))),
     * r = ln(tau / tau_opt); lambda = 0 gives the full wd_kappa. */
    double wd_c, wd_p, wd_tpp, wd_kappa, wd_width;
    /* observed loss = true loss (1 + noise_sd z), z ~ N(0, 1) from the run's seed. */
    double noise_sd;
    /* A second optimizer, Lion (sim_setting.optimizer 1; issue 22): its learning rate's optimum
     * and stability boundary at lion_lr times AdamW's, its loss lion_loss times AdamW's at the
     * same distance from its own optimum (ours: 0.3 and 0.99; Chen et al. 2023 run Lion at a
     * learning rate 3-10x below AdamW's, a weight decay 3-10x above, and report language-model
     * losses close to AdamW's). Its weight decay's optimum follows from the AdamW timescale in
     * lr, 3.3x AdamW's. The same in every world (sim_law_draw leaves them). */
    double lion_lr, lion_loss;
    /* The learning curve under the run's schedule (sim_emit), the loss-curve law of Tissue et al.
     * 2024 (eq. 1): L(s) = L0 + Ac S1(s)^-beta - C S2(s), S1 the forward area (the sum of the
     * learning rates of steps 1..s), S2 the annealing area with momentum anneal_lambda (0.999,
     * the paper's). Per run, Ac, L0 and C are set so that the curve ends at the final loss, the
     * term in S1 is B D_eff^-beta with D_eff = D S1(s) / S1(S) (times the run's penalties), and
     * the whole decay lowers the loss by anneal_frac of the final loss (ours: 0.03, the size of
     * the cooldown drops in Hagele et al. 2024 and Tissue et al. 2024). The same in every world. */
    double anneal_frac, anneal_lambda;
} sim_law;

/* Fills the default world (values in sim.c and docs/benchmarks.md). */
sim_law sim_law_default(void);

/*
 * A family of worlds for judging extrapolation across laws, not one law (issue 15). World 0 is
 * sim_law_default(); world k >= 1 starts from the default and draws, from an st_rng seeded with
 * st_mix64(k), in this order (U uniform, logU log-uniform):
 *   alpha, beta ~ U[0.25, 0.40]      published L(N, D) fits lie inside: Chinchilla approach 3
 *                                     (Hoffmann et al. 2022: 0.34, 0.28), Epoch's refit
 *                                     (Besiroglu et al. 2024: 0.348, 0.366, the default);
 *   lr_pN ~ U[-0.7, -0.3], lr_pD ~ U[0, 0.3]   lr_opt = c_lr N^lr_pN D^lr_pD; StepLaw's fit
 *                                     (-0.713, 0.307) sits at the edge, weaker laws inside;
 *   lr_opt(SIM_REF_N, SIM_REF_D) ~ logU[1e-3, 1e-2]   (re-anchors c_lr; default 6.5e-3);
 *   bs_pD ~ U[0.3, 0.6]               batch_opt = c_bs D^bs_pD (StepLaw 0.571);
 *   batch_opt(SIM_REF_D) ~ logU[1e4, 1e5] tokens   (re-anchors c_bs; default 3.19e4);
 *   warmup_opt at the reference run ~ logU[0.005, 0.10] of its steps (sets wu_steps; wu_min
 *                                     = 0.005, wu_max = 0.10 clamp it to that range everywhere);
 *   div_kappa ~ U[2, 5]               diverge above 2-5x the lr optimum of a 20 tokens/param run;
 *   noise_sd ~ logU[0.002, 0.01]      seed-to-seed noise of the final loss, 0.2-1%.
 * A and B are re-anchored so that L(SIM_REF_N, SIM_REF_D) equals the default world's
 * (A N_ref^-alpha and B D_ref^-beta unchanged); E and the penalty shapes (k_lr, k_bs, rho, the
 * warmup and weight-decay bowls) stay at the default. The ranges are issue 15's; the reference
 * run (N 1e7, D 2e8: 20 tokens/param) is the centre of examples/e2e/llmsim.yaml's box.
 * Returns ST_OK or ST_ENOMEM (out untouched).
 */
#define SIM_REF_N 1.0e7
#define SIM_REF_D 2.0e8
st_status sim_law_draw(uint64_t world, sim_law *out);

/* One training run's settings. */
typedef struct sim_setting {
    double N;            /* parameters, > 0 */
    double D;            /* training tokens, >= batch */
    double lr;           /* peak learning rate, > 0 */
    double batch;        /* tokens per optimizer step, >= 1 */
    double warmup;       /* warmup fraction of the steps, in [0, 1) */
    double weight_decay; /* AdamW lambda, >= 0 */
    int optimizer;       /* 0 AdamW (the default), 1 Lion (sim_law.lion_*) */
} sim_setting;

/* Every term of the loss for one setting (sim_eval). */
typedef struct sim_terms {
    double loss_nd;      /* E + A N^-alpha + B D^-beta, nats/token */
    double lr_opt;       /* StepLaw optimum at (N, D) */
    double batch_opt;    /* StepLaw optimum at D, tokens */
    double lr_max;       /* stability boundary, warmup factor included */
    double warmup_opt;   /* fraction of steps */
    double tau, tau_opt; /* AdamW timescale and its optimum (fractions of the run) */
    double pen_lr_bs;    /* relative penalties (fractions of loss_nd) */
    double pen_warmup;
    double pen_wd;
    double loss;  /* loss_nd (1 + penalties): the true final loss; +inf when diverged */
    int diverged; /* 1 when lr > lr_max */
    double flops; /* 6 N D */
    double steps; /* D / batch */
} sim_terms;

/* The pieces, for tests and for the oracle (no validation: positive finite inputs). */
double sim_loss_nd(const sim_law *law, double N, double D);
double sim_lr_opt(const sim_law *law, double N, double D);
double sim_batch_opt(const sim_law *law, double D);
double sim_lr_max(const sim_law *law, double N, double warmup, double warmup_opt);
double sim_warmup_opt(const sim_law *law, double D, double batch);
double sim_tau_opt(const sim_law *law, double N, double D);

/*
 * The true (noise-free) loss of a setting and all its terms.
 * Returns ST_OK (also for a diverged run: t->diverged = 1, t->loss = +inf) or ST_EINVAL
 * (non-finite or out-of-range value; message in errmsg, ST_ERRMSG_MAX bytes, may be NULL).
 */
st_status sim_eval(const sim_law *law, const sim_setting *s, sim_terms *t, char *errmsg);

/*
 * The best hyperparameters for a given (N, D), in closed form: lr = min(lr_opt, lr_max) (with
 * the batch then moved along the ridge), batch = batch_opt, warmup = warmup_opt, weight decay
 * giving tau = tau_opt. Writes the setting and its true loss. ST_OK or ST_EINVAL. AdamW;
 * sim_best_hypers_for: the optimizer given (0 AdamW, 1 Lion).
 */
st_status sim_best_hypers(const sim_law *law, double N, double D, sim_setting *s, double *loss);
st_status sim_best_hypers_for(const sim_law *law, double N, double D, int optimizer, sim_setting *s,
                              double *loss);

/*
 * The oracle: the true optimum at compute C FLOPs (C = 6 N D): minimises the loss over log N
 * (a grid, then GSL's Brent minimiser), D = C / (6 N), hyperparameters from sim_best_hypers.
 * Returns ST_OK, ST_EINVAL (C not finite or <= 0), ST_ENUMERIC (the minimiser failed).
 */
st_status sim_oracle(const sim_law *law, double C, sim_setting *opt, double *loss);
/* The same for the optimizer given (0 AdamW, 1 Lion). */
st_status sim_oracle_for(const sim_law *law, double C, int optimizer, sim_setting *opt,
                         double *loss);

/*
 * The same within a box of model sizes and token counts: the best run of cost C with
 * N in [N_lo, N_hi] and D in [D_lo, D_hi] (the true cost-loss front of a sweep's search space).
 * Returns as sim_oracle, or ST_ERANGE when no (N, D) in the box costs C.
 */
st_status sim_oracle_box(const sim_law *law, double C, double N_lo, double N_hi, double D_lo,
                         double D_hi, sim_setting *opt, double *loss);

/* Chinchilla's closed-form allocation (Hoffmann et al. 2022, eq. 4) for the law's L(N, D):
 * N_opt = G (C/6)^a, D_opt = (C/6)^b / G, a = beta/(alpha+beta), G = (alpha A/(beta B))^(1/(a+b)).
 */
void sim_chinchilla_alloc(const sim_law *law, double C, double *N, double *D);

/*
 * A run with noise: the observed final loss, true loss (1 + noise_sd z), z from an st_rng seeded
 * with `seed` (the first draw). On divergence *diverged = 1, *div_step the first step whose
 * learning rate exceeds the boundary during the linear warmup, and *observed = NaN.
 * Returns as sim_eval.
 */
st_status sim_run(const sim_law *law, const sim_setting *s, uint64_t seed, double *observed,
                  int *diverged, double *div_step, char *errmsg);

/*
 * Writes a run as the metrics protocol (JSON lines) to `out`: n_report step+eval pairs at evenly
 * spaced steps, then {"event":"final",...}, or {"event":"diverged",...} at the divergence step.
 * Intermediate losses follow the run's learning curve under its schedule (sim_law.anneal_frac:
 * linear warmup, cosine decay to 10%), which ends at the true final loss; every point carries
 * the run's own noise draw (the final's, a seed's lasting offset) plus an independent draw of
 * half its sd. The last eval equals the final loss of sim_run.
 * *exit_code: 0 for a finished run, 3 for a diverged one. Returns as sim_eval.
 */
st_status sim_emit(const sim_law *law, const sim_setting *s, uint64_t seed, int n_report, FILE *out,
                   int *exit_code, char *errmsg);

/*
 * Writes a cooldown branch of the run `s` (docs/metrics-protocol.md, "Cooldown branches"): the
 * parent's checkpoint at branch_step s of its S = D / batch steps, then decay_steps K of decay.
 * Its final is the final of the same setting trained to (s + K) batch tokens with the parent's
 * warmup steps (the warmup fraction scaled by S / (s + K), at most 0.95), under the parent's
 * seed (its noise draw, as a branch shares its parent's weights); its cost (`flops` in every
 * record) is its own K steps' only. One step+eval pair at its last step, then the final (with
 * "branch":1, "parent_step", "branch_steps", "tokens") or a diverged record. ST_EINVAL when s or
 * K is not a positive count or s + K is not below S; otherwise as sim_emit.
 */
st_status sim_emit_branch(const sim_law *law, const sim_setting *s, double branch_step,
                          double decay_steps, uint64_t seed, FILE *out, int *exit_code,
                          char *errmsg);

#ifdef __cplusplus
}
#endif
#endif /* BENCH_SIM_H */
