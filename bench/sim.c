/*
 * sim.c — the simulated LLM-training world of bench/ and its oracle (see sim.h for the API).
 *
 * The loss of a run is L(N, D) (1 + P), P the sum of relative penalties for learning rate and
 * batch (a quadratic bowl in log space with a ridge), warmup and weight decay (saturating bowls),
 * and the run diverges when the learning rate passes a boundary that moves with N. Not a model of
 * any one trainer: a smooth, documented world with known optima for judging optimizers.
 * Depends on common/ (st_rng) and GSL (Brent minimiser). Constants: docs/benchmarks.md.
 */
#include "bench/sim.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_min.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

sim_law sim_law_default(void)
{
    sim_law w;
    memset(&w, 0, sizeof(w));
    /* Epoch's Huber-likelihood MLE on the Chinchilla points, unrounded (specs 6, row [2]). */
    w.E = 1.81686;
    w.A = 482.006;
    w.B = 2085.43;
    w.alpha = 0.347813;
    w.beta = 0.365854;
    /* StepLaw (arXiv:2503.04715): eta_opt = 1.79 N^-0.713 D^0.307, B_opt = 0.58 D^0.571. */
    w.c_lr = 1.79;
    w.lr_pN = -0.713;
    w.lr_pD = 0.307;
    w.c_bs = 0.58;
    w.bs_pD = 0.571;
    /* Ours: lr 2x off costs 0.72%, batch 2x off 0.29%; rho > 0: larger batches want larger lr. */
    w.k_lr = 0.015;
    w.k_bs = 0.006;
    w.rho = 0.5;
    /* Ours: diverge above 6x the lr optimum of a Chinchilla-sized (20 tokens/param) run. */
    w.div_kappa = 6.0;
    w.div_tpp = 20.0;
    /* Ours: about 200 warmup steps are best, as a fraction within [0.5%, 25%]. */
    w.wu_steps = 200.0;
    w.wu_min = 0.005;
    w.wu_max = 0.25;
    w.wu_eps = 0.002;
    w.wu_kappa = 0.02;
    w.wu_width = 1.0;
    /* Form of Bergsma et al. 2025 (tau_opt a power law in tokens per parameter); constants ours:
     * tau_opt = 0.25 at 20 tokens/param, which puts lambda_opt near 0.1 at the StepLaw optima. */
    w.wd_c = 0.25;
    w.wd_p = -0.3;
    w.wd_tpp = 20.0;
    w.wd_kappa = 0.015;
    w.wd_width = 1.0;
    w.noise_sd = 0.002;
    /* Ours (sim.h): Lion's learning rate at 0.3x AdamW's, its loss 1% below. */
    w.lion_lr = 0.3;
    w.lion_loss = 0.99;
    /* Ours (sim.h): a full decay lowers the loss by 3%; the paper's momentum. */
    w.anneal_frac = 0.03;
    w.anneal_lambda = 0.999;
    return w;
}

/* x uniform in [lo, hi], or log-uniform when logscale. */
static double draw_in(st_rng *r, double lo, double hi, int logscale)
{
    double u = st_rng_uniform(r);
    return logscale ? lo * pow(hi / lo, u) : lo + (hi - lo) * u;
}

/* Ranges and sources: sim.h and docs/benchmarks.md ("A family of worlds"). */
st_status sim_law_draw(uint64_t world, sim_law *out)
{
    sim_law w = sim_law_default();
    if (world == 0) {
        *out = w;
        return ST_OK;
    }
    st_rng *r;
    if (st_rng_create(st_mix64(world), &r) != ST_OK)
        return ST_ENOMEM;
    const double Nr = SIM_REF_N, Dr = SIM_REF_D;

    /* L(N, D): new exponents, the same loss at the reference run */
    double a_term = w.A * pow(Nr, -w.alpha), b_term = w.B * pow(Dr, -w.beta);
    w.alpha = draw_in(r, 0.25, 0.40, 0);
    w.beta = draw_in(r, 0.25, 0.40, 0);
    w.A = a_term * pow(Nr, w.alpha);
    w.B = b_term * pow(Dr, w.beta);

    /* lr_opt = c_lr N^pN D^pD, anchored at the reference run */
    w.lr_pN = draw_in(r, -0.7, -0.3, 0);
    w.lr_pD = draw_in(r, 0.0, 0.3, 0);
    double lr_ref = draw_in(r, 1e-3, 1e-2, 1);
    w.c_lr = lr_ref / (pow(Nr, w.lr_pN) * pow(Dr, w.lr_pD));

    /* batch_opt = c_bs D^pD tokens, anchored at the reference run */
    w.bs_pD = draw_in(r, 0.3, 0.6, 0);
    double bs_ref = draw_in(r, 1e4, 1e5, 1);
    w.c_bs = bs_ref / pow(Dr, w.bs_pD);

    /* warmup: a fixed number of steps, a fraction f of the reference run's steps, clamped */
    double f = draw_in(r, 0.005, 0.10, 1);
    w.wu_steps = f * Dr / bs_ref;
    w.wu_min = 0.005;
    w.wu_max = 0.10;

    w.div_kappa = draw_in(r, 2.0, 5.0, 0);
    w.noise_sd = draw_in(r, 0.002, 0.01, 1);
    st_rng_destroy(r);
    *out = w;
    return ST_OK;
}

/* Chinchilla eq. 2 with Epoch's constants: nats per token. */
double sim_loss_nd(const sim_law *law, double N, double D)
{
    return law->E + law->A * pow(N, -law->alpha) + law->B * pow(D, -law->beta);
}

/* StepLaw eq. for eta_opt(N, D). */
double sim_lr_opt(const sim_law *law, double N, double D)
{
    return law->c_lr * pow(N, law->lr_pN) * pow(D, law->lr_pD);
}

/* StepLaw eq. for B_opt(D), tokens. */
double sim_batch_opt(const sim_law *law, double D)
{
    return law->c_bs * pow(D, law->bs_pD);
}

double sim_lr_max(const sim_law *law, double N, double warmup, double warmup_opt)
{
    double base = law->div_kappa * sim_lr_opt(law, N, law->div_tpp * N);
    double frac = warmup_opt > 0 ? warmup / warmup_opt : 1.0;
    return base * (0.5 + 0.5 * fmin(1.0, frac));
}

double sim_warmup_opt(const sim_law *law, double D, double batch)
{
    double steps = D / batch;
    return fmin(law->wu_max, fmax(law->wu_min, law->wu_steps / steps));
}

double sim_tau_opt(const sim_law *law, double N, double D)
{
    return law->wd_c * pow(D / (N * law->wd_tpp), law->wd_p);
}

static int bad(double x)
{
    return !isfinite(x);
}

/* The factor on L_ND of a setting's terms: 1 + its penalties, times Lion's loss ratio. */
static double loss_factor(const sim_law *law, const sim_setting *s, const sim_terms *t)
{
    return (1.0 + t->pen_lr_bs + t->pen_warmup + t->pen_wd) *
           (s->optimizer == 1 ? law->lion_loss : 1.0);
}

st_status sim_eval(const sim_law *law, const sim_setting *s, sim_terms *t, char *errmsg)
{
    char scratch[ST_ERRMSG_MAX];
    if (!errmsg)
        errmsg = scratch;
    errmsg[0] = '\0';
    memset(t, 0, sizeof(*t));
    if (bad(s->N) || s->N <= 0)
        return st_errf(errmsg, ST_EINVAL, "N = %g: must be finite and > 0", s->N);
    if (bad(s->D) || s->D <= 0)
        return st_errf(errmsg, ST_EINVAL, "tokens = %g: must be finite and > 0", s->D);
    if (bad(s->lr) || s->lr <= 0)
        return st_errf(errmsg, ST_EINVAL, "lr = %g: must be finite and > 0", s->lr);
    if (bad(s->batch) || s->batch < 1 || s->batch > s->D)
        return st_errf(errmsg, ST_EINVAL, "batch = %g tokens: must lie in [1, tokens = %g]",
                       s->batch, s->D);
    if (bad(s->warmup) || s->warmup < 0 || s->warmup >= 1)
        return st_errf(errmsg, ST_EINVAL, "warmup = %g: must be a fraction in [0, 1)", s->warmup);
    if (s->optimizer != 0 && s->optimizer != 1)
        return st_errf(errmsg, ST_EINVAL, "optimizer %d: 0 (AdamW) or 1 (Lion)", s->optimizer);
    if (bad(s->weight_decay) || s->weight_decay < 0)
        return st_errf(errmsg, ST_EINVAL, "weight decay = %g: must be finite and >= 0",
                       s->weight_decay);

    t->loss_nd = sim_loss_nd(law, s->N, s->D);
    t->lr_opt = sim_lr_opt(law, s->N, s->D);
    t->batch_opt = sim_batch_opt(law, s->D);
    t->warmup_opt = sim_warmup_opt(law, s->D, s->batch);
    t->lr_max = sim_lr_max(law, s->N, s->warmup, t->warmup_opt);
    t->tau_opt = sim_tau_opt(law, s->N, s->D);
    if (s->optimizer == 1) { /* Lion: optimum and boundary moved together */
        t->lr_opt *= law->lion_lr;
        t->lr_max *= law->lion_lr;
    }
    t->flops = 6.0 * s->N * s->D;
    t->steps = s->D / s->batch;

    /* lr and batch: quadratic form in u = ln(lr/lr_opt), v = ln(B/B_opt), positive definite for
     * |rho| < 1 (StepLaw: loss convex in (log lr, log B) around the optimum). */
    double u = log(s->lr / t->lr_opt), v = log(s->batch / t->batch_opt);
    t->pen_lr_bs = law->k_lr * u * u + law->k_bs * v * v -
                   2.0 * law->rho * sqrt(law->k_lr * law->k_bs) * u * v;

    /* warmup: a saturating bowl in log warmup; q = 0 at the optimum. */
    double q = log((s->warmup + law->wu_eps) / (t->warmup_opt + law->wu_eps));
    t->pen_warmup = law->wu_kappa * (1.0 - exp(-q * q / (2.0 * law->wu_width * law->wu_width)));

    /* weight decay: AdamW timescale tau = B / (lr lambda D) (Bergsma et al.: 1/(lr lambda) steps
     * over D/B steps); lambda = 0 means tau = inf, the full penalty. */
    if (s->weight_decay > 0) {
        t->tau = s->batch / (s->lr * s->weight_decay * s->D);
        double r = log(t->tau / t->tau_opt);
        t->pen_wd = law->wd_kappa * (1.0 - exp(-r * r / (2.0 * law->wd_width * law->wd_width)));
    } else {
        t->tau = INFINITY;
        t->pen_wd = law->wd_kappa;
    }

    t->diverged = s->lr > t->lr_max;
    t->loss = t->diverged ? INFINITY : t->loss_nd * loss_factor(law, s, t);
    return ST_OK;
}

st_status sim_best_hypers(const sim_law *law, double N, double D, sim_setting *s, double *loss)
{
    return sim_best_hypers_for(law, N, D, 0, s, loss);
}

st_status sim_best_hypers_for(const sim_law *law, double N, double D, int optimizer, sim_setting *s,
                              double *loss)
{
    if (bad(N) || bad(D) || N <= 0 || D <= 0 || optimizer < 0 || optimizer > 1)
        return ST_EINVAL;
    double f = optimizer == 1 ? law->lion_lr : 1.0;
    double lr_opt = f * sim_lr_opt(law, N, D);
    double lr_max = f * sim_lr_max(law, N, 1.0, 1.0); /* at warmup = warmup_opt */
    s->optimizer = optimizer;

    /* Past the boundary, lr sits on it and the batch moves along the ridge of the quadratic
     * form: argmin_v = rho sqrt(k_lr/k_bs) u, leaving k_lr (1 - rho^2) u^2. */
    double lr = fmin(lr_opt, lr_max);
    double u = log(lr / lr_opt);
    double v = law->rho * sqrt(law->k_lr / law->k_bs) * u;
    s->N = N;
    s->D = D;
    s->lr = lr;
    s->batch = fmin(D, fmax(1.0, sim_batch_opt(law, D) * exp(v)));
    s->warmup = sim_warmup_opt(law, D, s->batch);
    s->weight_decay = s->batch / (s->lr * sim_tau_opt(law, N, D) * D);

    sim_terms t;
    st_status st = sim_eval(law, s, &t, NULL);
    if (st != ST_OK)
        return st;
    *loss = t.loss;
    return ST_OK;
}

typedef struct oracle_ctx {
    const sim_law *law;
    double C;
    int optimizer;
} oracle_ctx;

/* The inner problem as a function of x = ln N for the Brent minimiser. */
static double oracle_f(double x, void *p)
{
    const oracle_ctx *o = p;
    double N = exp(x), D = o->C / (6.0 * N);
    sim_setting s;
    double loss;
    if (sim_best_hypers_for(o->law, N, D, o->optimizer, &s, &loss) != ST_OK)
        return INFINITY;
    return loss;
}

void sim_chinchilla_alloc(const sim_law *law, double C, double *N, double *D)
{
    double ab = law->alpha + law->beta;
    double a = law->beta / ab, b = law->alpha / ab;
    double G = pow(law->alpha * law->A / (law->beta * law->B), 1.0 / ab);
    *N = G * pow(C / 6.0, a);
    *D = pow(C / 6.0, b) / G;
}

/* Minimises oracle_f over [lo, hi] (ln N): a 101-point grid, then Brent between the grid
 * neighbours of the best point; an end point is kept when the grid minimum sits on it. */
static st_status oracle_min(oracle_ctx *ctx, double lo, double hi, double *x_best)
{
    enum { NG = 101 };
    gsl_function F = {oracle_f, ctx};
    double fg[NG], h = (hi - lo) / (NG - 1);
    size_t k = 0;
    for (size_t i = 0; i < NG; i++) {
        fg[i] = oracle_f(lo + h * (double)i, ctx);
        if (fg[i] < fg[k])
            k = i;
    }
    if (!isfinite(fg[k]))
        return ST_ENUMERIC;
    *x_best = lo + h * (double)k;
    if (k == 0 || k == NG - 1 || h == 0 || !(fg[k] < fg[k - 1] && fg[k] < fg[k + 1]))
        return ST_OK;

    gsl_min_fminimizer *m = gsl_min_fminimizer_alloc(gsl_min_fminimizer_brent);
    if (!m)
        return ST_ENOMEM;
    int rc = gsl_min_fminimizer_set_with_values(m, &F, *x_best, fg[k], *x_best - h, fg[k - 1],
                                                *x_best + h, fg[k + 1]);
    for (int it = 0; rc == GSL_SUCCESS && it < 200; it++) {
        rc = gsl_min_fminimizer_iterate(m);
        if (rc != GSL_SUCCESS)
            break;
        double a = gsl_min_fminimizer_x_lower(m), b = gsl_min_fminimizer_x_upper(m);
        if (gsl_min_test_interval(a, b, 1e-10, 0.0) == GSL_SUCCESS)
            break;
    }
    double xm = gsl_min_fminimizer_x_minimum(m);
    gsl_min_fminimizer_free(m);
    if (rc != GSL_SUCCESS)
        return ST_ENUMERIC;
    *x_best = xm;
    return ST_OK;
}

static st_status oracle_box(const sim_law *law, double C, double N_lo, double N_hi, double D_lo,
                            double D_hi, int optimizer, sim_setting *opt, double *loss)
{
    if (bad(C) || C <= 0 || !(N_lo >= 0 && N_lo <= N_hi && D_lo >= 0 && D_lo <= D_hi))
        return ST_EINVAL;
    oracle_ctx ctx = {law, C, optimizer};

    /* Search ln N within the box's slice {6 N D = C} and within a factor e^6 of Chinchilla's
     * closed form (exact when lr_opt is below the boundary; the boundary moves it little). */
    double N0, D0;
    sim_chinchilla_alloc(law, C, &N0, &D0);
    double lo = fmax(log(N0) - 6.0, log(fmax(N_lo, C / (6.0 * D_hi))));
    double hi = fmin(log(N0) + 6.0, log(fmin(N_hi, D_lo > 0 ? C / (6.0 * D_lo) : INFINITY)));
    if (!(lo <= hi))
        return ST_ERANGE;
    double x;
    st_status st = oracle_min(&ctx, lo, hi, &x);
    if (st != ST_OK)
        return st;
    double N = exp(x);
    return sim_best_hypers_for(law, N, C / (6.0 * N), optimizer, opt, loss);
}

st_status sim_oracle_box(const sim_law *law, double C, double N_lo, double N_hi, double D_lo,
                         double D_hi, sim_setting *opt, double *loss)
{
    return oracle_box(law, C, N_lo, N_hi, D_lo, D_hi, 0, opt, loss);
}

st_status sim_oracle(const sim_law *law, double C, sim_setting *opt, double *loss)
{
    return oracle_box(law, C, 0.0, INFINITY, 0.0, INFINITY, 0, opt, loss);
}

st_status sim_oracle_for(const sim_law *law, double C, int optimizer, sim_setting *opt,
                         double *loss)
{
    if (optimizer < 0 || optimizer > 1)
        return ST_EINVAL;
    return oracle_box(law, C, 0.0, INFINITY, 0.0, INFINITY, optimizer, opt, loss);
}

/* Steps at which the linear warmup first pushes the learning rate past the boundary. */
static double divergence_step(const sim_setting *s, const sim_terms *t)
{
    double W = s->warmup * t->steps;
    if (W < 1.0)
        return 1.0;
    return floor(W * t->lr_max / s->lr) + 1.0;
}

st_status sim_run(const sim_law *law, const sim_setting *s, uint64_t seed, double *observed,
                  int *diverged, double *div_step, char *errmsg)
{
    sim_terms t;
    st_status st = sim_eval(law, s, &t, errmsg);
    if (st != ST_OK)
        return st;
    st_rng *r;
    if (st_rng_create(seed, &r) != ST_OK)
        return ST_ENOMEM;
    double z = st_rng_gaussian(r);
    st_rng_destroy(r);
    *diverged = t.diverged;
    *div_step = t.diverged ? divergence_step(s, &t) : NAN;
    *observed = t.diverged ? NAN : t.loss * (1.0 + law->noise_sd * z);
    return ST_OK;
}

/* Scheduled lr at step k of S: linear warmup, then cosine decay to 10% (a common schedule). */
static double schedule_lr(const sim_setting *s, double k, double S)
{
    double W = s->warmup * S;
    if (k < W)
        return s->lr * k / W;
    double p = S > W ? (k - W) / (S - W) : 1.0;
    return s->lr * (0.1 + 0.45 * (1.0 + cos(M_PI * fmin(1.0, p))));
}

/* Steps beyond this many are summed in blocks (run_areas). */
#define SIM_AREA_BLOCKS 2000000.0

/* A schedule's areas after some step (Tissue et al. 2024): S1 = sum of the rates, S2 = sum of m_i
 * = lambda m_{i-1} + max(0, eta_{i-1} - eta_i) (eta_0 = eta_1; a rising rate is no annealing). */
typedef struct sim_areas {
    double S1, S2;
} sim_areas;

/*
 * The areas after each of the steps at[0..n-1] (non-decreasing, in 1..S) into out[0..n-1], and
 * after S into out[n]. Step by step up to SIM_AREA_BLOCKS steps; beyond, in blocks of h steps
 * over which the rate moves linearly (the sums of the momentum over a block in closed form).
 */
static void run_areas(const sim_setting *s, double S, double lambda, const double *at, int n,
                      sim_areas *out)
{
    double h = fmax(1.0, ceil(S / SIM_AREA_BLOCKS));
    double S1 = 0, S2 = 0, m = 0, prev = schedule_lr(s, 1.0, S), done = 0;
    int q = 0;
    while (done < S) {
        double next = fmin(S, done + h);
        if (q < n && at[q] > done && at[q] < next)
            next = at[q];
        double len = next - done, eta = schedule_lr(s, next, S);
        double drop = fmax(0.0, prev - eta) / len; /* per step */
        double lh = pow(lambda, len), geo = lambda * (1.0 - lh) / (1.0 - lambda);
        S1 += len == 1.0 ? eta : 0.5 * len * (prev + eta);
        S2 += m * geo + drop / (1.0 - lambda) * (len - geo);
        m = lh * m + drop * (1.0 - lh) / (1.0 - lambda);
        prev = eta;
        done = next;
        while (q < n && at[q] <= done)
            out[q++] = (sim_areas){S1, S2};
    }
    while (q < n)
        out[q++] = (sim_areas){S1, S2};
    out[n] = (sim_areas){S1, S2};
}

/* The curve law's constants of one run (sim_law.anneal_frac): its varying part Ac S1^-beta - C S2.
 */
typedef struct sim_curve {
    double Ac, C, beta;
} sim_curve;

/*
 * The run's curve constants from its areas at the end: the S1 term is pen B D_eff^-beta,
 * D_eff = D S1(s) / S1(S), and the curve ends anneal_frac of `final` below the same law at a
 * constant peak rate (S1 = lr S, S2 = 0) after as many steps: C S2(S) = anneal_frac final +
 * pen B D^-beta (1 - rho^beta), rho = S1(S) / (lr S).
 */
static sim_curve curve_constants(const sim_law *law, const sim_setting *s, double pen, double final,
                                 double S, sim_areas end)
{
    sim_curve c;
    double dterm = pen * law->B * pow(s->D, -law->beta);
    double rho = end.S1 / (s->lr * S);
    double drop = law->anneal_frac * final + dterm * (1.0 - pow(rho, law->beta));
    c.beta = law->beta;
    c.C = end.S2 > 0 ? drop / end.S2 : 0.0;
    c.Ac = pen * law->B * pow(s->D / end.S1, -law->beta);
    return c;
}

/* The true loss of a run of the setting's schedule stopped after `step` of its S steps: the
 * final loss of a run of the tokens seen so far (every penalty at that length; a diverging
 * setting's loss as if it had not), plus what the law says the run has not yet annealed: the law
 * at this point of the run's schedule less the law at the end of a schedule of `step` steps.
 * L_ND(N, tokens seen) alone when the shorter setting is not valid (not expected: its tokens are
 * at least one batch), so that no record carries a NaN. */
static double curve_loss(const sim_law *law, const sim_setting *s, const sim_curve *c, double step,
                         sim_areas here)
{
    sim_setting sh = *s;
    sh.D = fmin(s->D, step * s->batch);
    sim_terms t;
    if (sim_eval(law, &sh, &t, NULL) != ST_OK)
        return sim_loss_nd(law, s->N, sh.D);
    double pen = loss_factor(law, s, &t);
    sim_areas fresh;
    run_areas(&sh, step, law->anneal_lambda, NULL, 0, &fresh);
    double excess =
        c->Ac * (pow(here.S1, -c->beta) - pow(fresh.S1, -c->beta)) - c->C * (here.S2 - fresh.S2);
    return t.loss_nd * pen + excess;
}

st_status sim_emit(const sim_law *law, const sim_setting *s, uint64_t seed, int n_report, FILE *out,
                   int *exit_code, char *errmsg)
{
    sim_terms t;
    st_status st = sim_eval(law, s, &t, errmsg);
    if (st != ST_OK)
        return st;
    if (n_report < 1)
        n_report = 1;
    double *at = malloc((size_t)n_report * sizeof(double));
    sim_areas *areas = malloc(((size_t)n_report + 1) * sizeof(sim_areas));
    st_rng *r = NULL;
    if (!at || !areas || st_rng_create(seed, &r) != ST_OK) {
        free(at);
        free(areas);
        return ST_ENOMEM;
    }
    double z_final = st_rng_gaussian(r); /* the first draw, as in sim_run */
    double S = fmax(1.0, floor(t.steps));
    double stop = t.diverged ? divergence_step(s, &t) : INFINITY;
    double pen = loss_factor(law, s, &t);
    for (int k = 1; k <= n_report; k++)
        at[k - 1] = fmax(1.0, round((double)k * S / n_report));
    run_areas(s, S, law->anneal_lambda, at, n_report, areas);
    sim_curve c = curve_constants(law, s, pen, t.loss_nd * pen, S, areas[n_report]);

    /* Report points k S / n_report: the curve times the run's noise draw and half of one of
     * their own. */
    for (int k = 1; k <= n_report; k++) {
        double step = at[k - 1];
        if (step >= stop)
            break;
        double seen = fmin(s->D, step * s->batch);
        double curve = k == n_report ? t.loss_nd * pen : curve_loss(law, s, &c, step, areas[k - 1]);
        double train = curve * (1.0 + law->noise_sd * (z_final + 0.5 * st_rng_gaussian(r)));
        double val = curve * (1.0 + law->noise_sd * (z_final + 0.5 * st_rng_gaussian(r)));
        if (k == n_report)
            val = t.loss * (1.0 + law->noise_sd * z_final);
        fprintf(out,
                "{\"event\":\"step\",\"step\":%.0f,\"loss\":%.17g,\"tokens\":%.17g,"
                "\"flops\":%.17g,\"lr\":%.17g}\n",
                step, train, seen, 6.0 * s->N * seen, schedule_lr(s, step, S));
        fprintf(out, "{\"event\":\"eval\",\"step\":%.0f,\"val_loss\":%.17g}\n", step, val);
    }
    free(at);
    free(areas);
    st_rng_destroy(r);

    if (t.diverged) {
        fprintf(out,
                "{\"event\":\"diverged\",\"step\":%.0f,\"reason\":\"loss is NaN: lr %.6g passed "
                "the stability boundary %.6g\"}\n",
                stop, s->lr * fmin(1.0, s->warmup * S > 0 ? stop / (s->warmup * S) : 1.0),
                t.lr_max);
        *exit_code = 3;
    } else {
        fprintf(out,
                "{\"event\":\"final\",\"val_loss\":%.17g,\"flops\":%.17g,\"params\":%.17g,"
                "\"tokens\":%.17g}\n",
                t.loss * (1.0 + law->noise_sd * z_final), t.flops, s->N, s->D);
        *exit_code = 0;
    }
    fflush(out);
    return ST_OK;
}

/* A branch's warmup fraction is held below 1, as bench/xp_branches.py and the engine hold it. */
#define BRANCH_WARMUP_MAX 0.95

st_status sim_emit_branch(const sim_law *law, const sim_setting *s, double branch_step,
                          double decay_steps, uint64_t seed, FILE *out, int *exit_code,
                          char *errmsg)
{
    char scratch[ST_ERRMSG_MAX];
    if (!errmsg)
        errmsg = scratch;
    double S = s->D / s->batch, end = branch_step + decay_steps;
    if (!(branch_step >= 1 && decay_steps >= 1 && branch_step == floor(branch_step) &&
          decay_steps == floor(decay_steps) && end < S))
        return st_errf(errmsg, ST_EINVAL,
                       "branch at step %g with %g decay steps: need positive counts ending before "
                       "the parent's %g steps",
                       branch_step, decay_steps, S);
    sim_setting b = *s;
    b.D = end * s->batch;
    b.warmup = fmin(s->warmup * S / end, BRANCH_WARMUP_MAX);
    sim_terms t;
    st_status st = sim_eval(law, &b, &t, errmsg);
    if (st != ST_OK)
        return st;
    st_rng *r = NULL;
    if (st_rng_create(seed, &r) != ST_OK)
        return ST_ENOMEM;
    double z = st_rng_gaussian(r); /* the parent's first draw: its lasting offset */
    st_rng_destroy(r);
    double flops = 6.0 * s->N * decay_steps * s->batch;
    if (t.diverged) {
        fprintf(out,
                "{\"event\":\"diverged\",\"step\":%.0f,\"reason\":\"lr %.6g passed the "
                "stability boundary %.6g\"}\n",
                end, s->lr, t.lr_max);
        *exit_code = 3;
    } else {
        double val = t.loss * (1.0 + law->noise_sd * z);
        fprintf(out,
                "{\"event\":\"step\",\"step\":%.0f,\"loss\":%.17g,\"tokens\":%.17g,"
                "\"flops\":%.17g,\"lr\":%.17g}\n",
                end, val, b.D, flops, 0.1 * s->lr);
        fprintf(out, "{\"event\":\"eval\",\"step\":%.0f,\"val_loss\":%.17g}\n", end, val);
        fprintf(out,
                "{\"event\":\"final\",\"val_loss\":%.17g,\"flops\":%.17g,\"params\":%.17g,"
                "\"tokens\":%.17g,\"branch\":1,\"parent_step\":%.0f,\"branch_steps\":%.0f}\n",
                val, flops, s->N, b.D, branch_step, decay_steps);
        *exit_code = 0;
    }
    fflush(out);
    return ST_OK;
}
