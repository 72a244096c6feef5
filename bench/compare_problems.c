/*
 * compare_problems.c — bench/compare's problems: the LLM-training simulator (bench/sim.h) in a
 * box of N, tokens and four hyperparameters, and Branin and Hartmann-6 with a cost dimension,
 * each with its true cost-objective front; and serve mode, which evaluates them for the Python
 * driver (bench/optuna_driver.py), so that Optuna's samplers see the same truth.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/compare.h"
#include "bench/testfuncs.h"

static void set_par(carbs_param *p, const char *name, carbs_space_kind k, double lo, double hi,
                    double center, double scale)
{
    carbs_param_init(p, name, k, center);
    p->min = lo;
    p->max = hi;
    p->scale = scale;
}

/* The simulator: x = (N, tokens, lr, batch, warmup, weight decay); cost = FLOPs actually spent
 * (6 N D, or up to the divergence step). */
static void eval_sim(const problem *p, const double *x, uint64_t noise_seed, double *obs,
                     double *truth, double *cost, int *failed)
{
    sim_setting s = {x[0], x[1], x[2], fmin(x[3], x[1]), x[4], fmax(0.0, x[5]), 0};
    sim_terms t;
    double step;
    int div;
    if (sim_eval(&p->law, &s, &t, NULL) != ST_OK ||
        sim_run(&p->law, &s, noise_seed, obs, &div, &step, NULL) != ST_OK) {
        *obs = *truth = NAN;
        *cost = 6.0 * s.N * s.batch;
        *failed = 1;
        return;
    }
    *failed = div;
    *truth = div ? NAN : t.loss;
    *cost = div ? 6.0 * s.N * fmin(s.D, step * s.batch) : t.flops;
}

static void eval_branin(const problem *p, const double *x, uint64_t noise_seed, double *obs,
                        double *truth, double *cost, int *failed)
{
    (void)p;
    (void)noise_seed;
    *truth = *obs = tf_branin(x) + 1.0 / sqrt(x[2]);
    *cost = x[2];
    *failed = 0;
}

static void eval_hartmann6(const problem *p, const double *x, uint64_t noise_seed, double *obs,
                           double *truth, double *cost, int *failed)
{
    (void)p;
    (void)noise_seed;
    *truth = *obs = tf_hartmann6(x) + 1.0 / sqrt(x[6]);
    *cost = x[6];
    *failed = 0;
}

static double front_sim(const problem *p, double c)
{
    sim_setting s;
    double loss;
    if (sim_oracle_box(&p->law, c, p->par[0].min, p->par[0].max, p->par[1].min, p->par[1].max, &s,
                       &loss) != ST_OK)
        return NAN;
    return loss;
}

/* f(x) + c^-1/2 is best at the minimiser of f, whatever c */
static double front_branin(const problem *p, double c)
{
    (void)p;
    return 0.397887357729738 + 1.0 / sqrt(c);
}

static double front_hartmann6(const problem *p, double c)
{
    (void)p;
    return -3.32236801141551 + 1.0 / sqrt(c);
}

int compare_make_problem(const char *name, int quick, problem *p)
{
    memset(p, 0, sizeof(*p));
    p->budget_frac[0] = 0.25;
    p->budget_frac[1] = 0.5;
    p->budget_frac[2] = 1.0;
    if (!strcmp(name, "sim")) {
        /* A sweep at small compute: N 1e6..3.2e7, tokens 2e7..6.3e8 (runs up to 1.2e17 FLOPs);
         * the optimal hyperparameters of every (N, D) in the box lie inside the box. */
        p->name = "sim";
        p->dim = 6;
        p->law = sim_law_default();
        set_par(&p->par[0], "params", CARBS_SPACE_LOG, 1e6, pow(10, 7.5), 5e6, 1);
        set_par(&p->par[1], "tokens", CARBS_SPACE_LOG, 2e7, pow(10, 8.8), 1e8, 1);
        set_par(&p->par[2], "lr", CARBS_SPACE_LOG, 1e-4, 0.1, 3e-3, 1);
        set_par(&p->par[3], "batch", CARBS_SPACE_LOG, 1024, 524288, 16384, 1);
        /* warmup and weight decay act on a log scale (sim.h), so they are searched on one */
        set_par(&p->par[4], "warmup", CARBS_SPACE_LOG, 1e-3, 0.3, 0.02, 1);
        set_par(&p->par[5], "weight_decay", CARBS_SPACE_LOG, 1e-3, 1.0, 0.1, 1);
        p->eval = eval_sim;
        p->front = front_sim;
        double N = p->par[0].max, D = p->par[1].max;
        sim_setting s;
        sim_best_hypers(&p->law, N, D, &s, &p->f_best);
        p->unit_cost = 6 * N * D;
        p->budget_units = quick ? 4 : 10;
        p->max_evals = quick ? 40 : 100;
    } else if (!strcmp(name, "branin")) {
        p->name = "branin";
        p->dim = 3;
        set_par(&p->par[0], "x1", CARBS_SPACE_LINEAR, -5, 10, 2.5, 5);
        set_par(&p->par[1], "x2", CARBS_SPACE_LINEAR, 0, 15, 7.5, 5);
        set_par(&p->par[2], "cost", CARBS_SPACE_LOG, 1, 100, 10, 1);
        p->eval = eval_branin;
        p->front = front_branin;
        p->f_best = 0.397887357729738 + 0.1;
        p->unit_cost = 100;
        p->budget_units = quick ? 5 : 20;
        p->max_evals = quick ? 40 : 100;
    } else if (!strcmp(name, "hartmann6")) {
        p->name = "hartmann6";
        p->dim = 7;
        for (int j = 0; j < 6; j++) {
            static const char *nm[6] = {"x1", "x2", "x3", "x4", "x5", "x6"};
            set_par(&p->par[j], nm[j], CARBS_SPACE_LINEAR, 0, 1, 0.5, 0.33);
        }
        set_par(&p->par[6], "cost", CARBS_SPACE_LOG, 1, 100, 10, 1);
        p->eval = eval_hartmann6;
        p->front = front_hartmann6;
        p->f_best = -3.32236801141551 + 0.1;
        p->unit_cost = 100;
        p->budget_units = quick ? 5 : 20;
        p->max_evals = quick ? 40 : 100;
    } else {
        return -1;
    }
    return 0;
}

/* The noise seed of run i of optimizer seed s: the same for every optimizer. */
uint64_t compare_noise_seed(uint64_t seed, size_t i)
{
    return (seed + 1) * 1000003u + i;
}

int compare_serve(const char *name)
{
    problem p;
    if (compare_make_problem(name, 0, &p)) {
        fprintf(stderr, "compare: unknown problem '%s'\n", name);
        return 2;
    }
    /* first line: the problem's description, for the driver */
    printf("{\"problem\":\"%s\",\"dim\":%zu,\"unit_cost\":%.17g,\"f_best\":%.17g,\"params\":[",
           p.name, p.dim, p.unit_cost, p.f_best);
    for (size_t j = 0; j < p.dim; j++)
        printf("%s{\"name\":\"%s\",\"log\":%d,\"min\":%.17g,\"max\":%.17g}", j ? "," : "",
               p.par[j].name, p.par[j].space == CARBS_SPACE_LOG, p.par[j].min, p.par[j].max);
    printf("]}\n");
    fflush(stdout);
    char line[4096];
    while (fgets(line, sizeof(line), stdin)) {
        char *s = line, *end;
        unsigned long long ns = strtoull(s, &end, 10);
        double x[MAX_DIM];
        size_t j;
        for (j = 0; j < p.dim; j++) {
            s = end;
            x[j] = strtod(s, &end);
            if (end == s)
                break;
        }
        if (j < p.dim) {
            printf("error: need a noise seed and %zu numbers\n", p.dim);
        } else {
            double obs, truth, cost;
            int failed;
            p.eval(&p, x, ns, &obs, &truth, &cost, &failed);
            printf("%.17g %.17g %.17g %d\n", obs, truth, cost, failed);
        }
        fflush(stdout);
    }
    return 0;
}
