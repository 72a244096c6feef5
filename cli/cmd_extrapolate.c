/*
 * cmd_extrapolate.c — `scaletune extrapolate`: a study of the stored sweep (study/study.h: the
 * one route from a store to the engine, with its input policy) at a target compute, printed as
 * text or as the study's JSON. Refuses (exit 3) a recommendation the engine cannot vouch for
 * unless --allow-unsafe.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/st.h"
#include "fit/extrapolate.h"
#include "runner/runner.h"
#include "study/study.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: scaletune extrapolate --db FILE --sweep NAME --compute C [options]\n\n"
               "Recommends the settings of a run at compute C (the sweep's cost units) from the\n"
               "sweep's runs, with intervals, the predicted objective and P(diverge).\n\n"
               "options:\n"
               "  --db FILE             the sweep store (required)\n"
               "  --sweep NAME          the sweep (default: the only one in the store)\n"
               "  --compute C           target compute in cost units (required; or --factor)\n"
               "  --factor F            target compute = F x the largest successful run\n"
               "  --config FILE         override the stored sweep file's parameter spaces,\n"
               "                        bounds and rounding (default: the stored sweep file)\n"
               "  --role NAME=ROLE      what a parameter is: N, D, size, steps, lr, batch,\n"
               "                        other (default: from its name; repeatable)\n"
               "  --method M            auto (default), front (CARBS' Pareto laws), model\n"
               "  --bootstrap R         replicates (default 200)\n"
               "  --seed S              bootstrap seed (default 42)\n"
               "  --level L             interval level (default 0.9)\n"
               "  --max-p-diverge P     largest accepted P(diverge) (default 0.05)\n"
               "  --prior-ab-sd S       sd of the prior on alpha - beta (default 0.05; 0 turns\n"
               "                        it off)\n"
               "  --far-weight T        a run whose hyperparameters cost it a fraction P of\n"
               "                        its loss weighs 1 / (1 + (P/T)^2) in the fit (default\n"
               "                        0: every run weighs 1; make demo uses 0.2)\n"
               "  --prior-e E           a prior on the law's irreducible loss, centred on E\n"
               "                        (the objective's units; sd 0.5 in ln E unless\n"
               "                        --prior-e-sd says otherwise; default: no prior)\n"
               "  --prior-e-sd S        sd in ln E of that prior (default 0: off, or 0.5 with\n"
               "                        --prior-e); without --prior-e it is centred on half\n"
               "                        the best run's objective\n"
               "  --prior-law-sd S      scale of the literature priors on the hyperparameter\n"
               "                        laws (default 1; 0 turns them off)\n"
               "  --prior-wd-sd S       sd of the weight decay's timescale prior (default\n"
               "                        0.25; 0 turns it off)\n"
               "  --prior-draw K        bootstrap replicates draw the priors' centres with K x\n"
               "                        their sds (default 0.5; 0: all under the same priors)\n"
               "  --interval-prior-draw K  the predicted loss's interval from replicates of\n"
               "                        its own that draw them with K x their sds (default 1;\n"
               "                        the value of --prior-draw: the same replicates)\n"
               "  --min-level-runs K    a categorical's level with fewer successful runs is\n"
               "                        not recommended (default 3; 1: any level that ran)\n"
               "  --allow-unsafe        recommend the safest setting even when P(diverge) is\n"
               "                        above the limit everywhere (exit 0 instead of 3)\n"
               "  --no-backtest         skip the leave-largest-group-out backtest (halves the\n"
               "                        time)\n"
               "  --curves              also fit each run's training-loss curve: what it would\n"
               "                        have reached at 1/4 and 1/2 of its tokens enters the\n"
               "                        model, kept with its run (not independent runs);\n"
               "                        points the law does not describe are left out,\n"
               "                        with a warning\n"
               "  --no-branches         leave cooldown branches out (by default each is a\n"
               "                        point of its parent run)\n"
               "  --json                print JSON\n"
               "  --emit yaml|command   print the recommended run instead, ready to launch: a\n"
               "                        one-run sweep file (all parameters fixed) or a shell\n"
               "                        command line (nothing is printed when refused)\n"
               "  --name NAME           --emit yaml: the run's sweep name (default SWEEP-large)\n"
               "  --set NAME=VALUE      --emit: parameter NAME takes VALUE in the emitted run\n"
               "                        instead of its recommended or fixed value (repeatable)\n"
               "  --digits N            --emit: significant digits of non-integer values\n"
               "                        (default 8)\n"
               "  --emit-out FILE       write the --emit output to FILE; stdout keeps the text\n"
               "                        (or --json)\n"
               "  --out FILE            also write the JSON to FILE\n\n"
               "exit status: 0 recommended, 1 the work failed (no store, too few runs),\n"
               "2 bad usage, 3 refused: no setting meets the P(diverge) limit (the reason and\n"
               "the small runs that would resolve it are printed; --allow-unsafe overrides)\n");
}

typedef struct args {
    const char *db, *sweep, *config, *out, *emit, *emit_name, *emit_out;
    cli_emit_options eo;
    double compute, factor;
    int json, allow_unsafe, no_backtest, curves, no_branches, prior_e_sd_set;
    fit_xp_options o;
    const char *role_name[32];
    fit_xp_role role[32];
    size_t n_roles;
} args;

static int parse_double(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return end != s && *end == 0 && isfinite(*v);
}

static int parse_role(const char *s, fit_xp_role *r)
{
    static const struct {
        const char *name;
        fit_xp_role role;
    } t[] = {{"N", FIT_XP_N},         {"D", FIT_XP_D},         {"size", FIT_XP_SIZE},
             {"lr", FIT_XP_LR},       {"batch", FIT_XP_BATCH}, {"other", FIT_XP_OTHER},
             {"steps", FIT_XP_STEPS}, {"auto", FIT_XP_AUTO}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (!strcasecmp(s, t[i].name)) {
            *r = t[i].role;
            return 1;
        }
    return 0;
}

static int parse_args(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof(*a));
    a->compute = NAN;
    a->factor = NAN;
    a->o = fit_xp_options_default();
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(s, "--json")) {
            a->json = 1;
            continue;
        }
        if (!strcmp(s, "--allow-unsafe")) {
            a->allow_unsafe = 1;
            continue;
        }
        if (!strcmp(s, "--curves")) {
            a->curves = 1;
            continue;
        }
        if (!strcmp(s, "--no-branches")) {
            a->no_branches = 1;
            continue;
        }
        if (!strcmp(s, "--no-backtest")) {
            a->no_backtest = 1;
            continue;
        }
        if (i + 1 >= argc) {
            cli_error("see 'scaletune extrapolate --help'", "'%s' needs a value or is unknown", s);
            return 2;
        }
        const char *v = argv[++i];
        double d;
        if (!strcmp(s, "--db"))
            a->db = v;
        else if (!strcmp(s, "--sweep"))
            a->sweep = v;
        else if (!strcmp(s, "--config"))
            a->config = v;
        else if (!strcmp(s, "--out"))
            a->out = v;
        else if (!strcmp(s, "--emit")) {
            if (strcmp(v, "yaml") && strcmp(v, "command")) {
                cli_error("--emit yaml (a one-run sweep file) or --emit command (a command line)",
                          "--emit: unknown format '%s'", v);
                return 2;
            }
            a->emit = v;
        } else if (!strcmp(s, "--name"))
            a->emit_name = v;
        else if (!strcmp(s, "--emit-out"))
            a->emit_out = v;
        else if (!strcmp(s, "--set")) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v || !eq[1] || a->eo.n_set >= CLI_EMIT_MAX_SET) {
                cli_error("e.g. --set seed=1337 (a parameter of the sweep)",
                          "--set: cannot read '%s'", v);
                return 2;
            }
            a->eo.set[a->eo.n_set++] = v;
        } else if (!strcmp(s, "--digits")) {
            if (!parse_double(v, &d) || d != floor(d) || d < 1 || d > 17) {
                cli_error(NULL, "--digits: '%s' is not an integer in 1..17", v);
                return 2;
            }
            a->eo.digits = (int)d;
        } else if (!strcmp(s, "--compute") || !strcmp(s, "--factor")) {
            if (!parse_double(v, &d) || !(d > 0)) {
                cli_error(NULL, "%s: '%s' is not a positive number", s, v);
                return 2;
            }
            if (s[2] == 'c')
                a->compute = d;
            else
                a->factor = d;
        } else if (!strcmp(s, "--bootstrap")) {
            if (!parse_double(v, &d) || d < 0 || d > 1e5) {
                cli_error(NULL, "--bootstrap: '%s' is not a count", v);
                return 2;
            }
            a->o.n_boot = (size_t)d;
        } else if (!strcmp(s, "--seed")) {
            if (!parse_double(v, &d) || d < 0) {
                cli_error(NULL, "--seed: '%s' is not a non-negative integer", v);
                return 2;
            }
            a->o.seed = (uint64_t)d;
        } else if (!strcmp(s, "--level")) {
            if (!parse_double(v, &d) || !(d > 0 && d < 1)) {
                cli_error(NULL, "--level: '%s' is not in (0, 1)", v);
                return 2;
            }
            a->o.level = d;
        } else if (!strcmp(s, "--min-level-runs")) {
            if (!parse_double(v, &d) || d != floor(d) || d < 0 || d > 1e9) {
                cli_error(NULL, "--min-level-runs: '%s' is not a count", v);
                return 2;
            }
            a->o.min_level_ok = (size_t)d;
        } else if (!strcmp(s, "--max-p-diverge")) {
            if (!parse_double(v, &d) || !(d > 0 && d <= 1)) {
                cli_error(NULL, "--max-p-diverge: '%s' is not in (0, 1]", v);
                return 2;
            }
            a->o.max_p_diverge = d;
        } else if (!strcmp(s, "--prior-law-sd") || !strcmp(s, "--prior-wd-sd") ||
                   !strcmp(s, "--prior-ab-sd") || !strcmp(s, "--prior-e-sd") ||
                   !strcmp(s, "--far-weight") || !strcmp(s, "--prior-draw") ||
                   !strcmp(s, "--interval-prior-draw")) {
            if (!parse_double(v, &d) || d < 0) {
                cli_error(NULL, "%s: '%s' is not a number >= 0", s, v);
                return 2;
            }
            if (!strcmp(s, "--prior-law-sd"))
                a->o.prior_law_sd = d;
            else if (!strcmp(s, "--prior-draw"))
                a->o.prior_draw = d;
            else if (!strcmp(s, "--interval-prior-draw"))
                a->o.interval_prior_draw = d;
            else if (!strcmp(s, "--prior-ab-sd"))
                a->o.prior_ab_sd = d;
            else if (!strcmp(s, "--far-weight"))
                a->o.far_weight = d;
            else if (!strcmp(s, "--prior-e-sd"))
                a->o.prior_e_sd = d, a->prior_e_sd_set = 1;
            else
                a->o.prior_wd_sd = d;
        } else if (!strcmp(s, "--prior-e")) {
            if (!parse_double(v, &d) || !(d > 0)) {
                cli_error("the irreducible loss in the objective's units, e.g. --prior-e 1.7",
                          "--prior-e: '%s' is not a number > 0", v);
                return 2;
            }
            a->o.prior_e = d;
        } else if (!strcmp(s, "--method")) {
            if (!strcmp(v, "auto"))
                a->o.method = FIT_XP_METHOD_AUTO;
            else if (!strcmp(v, "front"))
                a->o.method = FIT_XP_METHOD_FRONT;
            else if (!strcmp(v, "model"))
                a->o.method = FIT_XP_METHOD_MODEL;
            else {
                cli_error("auto, front or model", "--method: unknown method '%s'", v);
                return 2;
            }
        } else if (!strcmp(s, "--role")) {
            const char *eq = strchr(v, '=');
            fit_xp_role r;
            if (!eq || eq == v || !parse_role(eq + 1, &r) || a->n_roles >= 32) {
                cli_error("e.g. --role d_model=size (roles: N, D, size, steps, lr, batch, other)",
                          "--role: cannot read '%s'", v);
                return 2;
            }
            a->role_name[a->n_roles] = v;
            a->role[a->n_roles++] = r;
        } else {
            cli_error("see 'scaletune extrapolate --help'", "unknown option '%s'", s);
            return 2;
        }
    }
    if (!a->db) {
        cli_error("scaletune extrapolate --db FILE --sweep NAME --compute C", "--db is required");
        return 2;
    }
    if ((a->emit_out || a->eo.n_set || a->eo.digits) && !a->emit) {
        cli_error("e.g. --emit yaml --emit-out large.yaml",
                  "--emit-out, --set and --digits need --emit");
        return 2;
    }
    if (a->emit && a->json && !a->emit_out) {
        cli_error("--out FILE writes the JSON while --emit prints the run",
                  "--emit and --json both print to stdout: choose one");
        return 2;
    }
    if (!isnan(a->o.prior_e) && !a->prior_e_sd_set)
        a->o.prior_e_sd = CLI_PRIOR_E_SD;
    if (isnan(a->compute) == isnan(a->factor)) {
        cli_error("give the target as --compute C or --factor F", "one of --compute and --factor "
                                                                  "is required");
        return 2;
    }
    return 0;
}

static void print_warnings(const char *w)
{
    while (w && *w) {
        const char *e = strstr(w, "; ");
        int len = e ? (int)(e - w) : (int)strlen(w);
        printf("  - %.*s\n", len, w);
        w = e ? e + 2 : NULL;
    }
}

static void print_runs(const study *st, const fit_xp *xp, const fit_xp_result *res)
{
    const study_counts *c = study_get_counts(st);
    printf("%zu runs: %zu used (%zu diverged), Pareto front of %zu groups, largest run cost "
           "%.4g\n",
           c->n_runs, c->n_used, c->n_diverged, fit_xp_front_n(xp), res->largest_cost);
    size_t n_branch = c->n_branch_points + c->n_branch_unused;
    if (n_branch)
        printf("%zu cooldown branches: %zu kept as points of their parent runs, %zu unused\n",
               n_branch, c->n_branch_points, c->n_branch_unused);
    size_t out = c->n_runs - c->n_used - n_branch;
    if (out)
        printf("left out: %zu over the cost cap, %zu out of memory or timed out, %zu "
               "infrastructure, %zu unfinished, %zu stopped early, %zu unusable, %zu beyond the "
               "fit, %zu malformed final records\n",
               c->n_over_budget, c->n_resource, c->n_infra, c->n_unfinished, c->n_stopped_early,
               c->n_unusable, c->n_beyond, c->n_bad_final);
}

/* The width of the settings' name column: 16, or the longest parameter name
 * (per_device_train_batch_size is 27). */
static int name_width(const fit_xp *xp)
{
    size_t w = 16;
    for (size_t j = 0; j < fit_xp_n_params(xp); j++)
        if (strlen(fit_xp_param_name(xp, j)) > w)
            w = strlen(fit_xp_param_name(xp, j));
    return (int)w;
}

/* Engine parameter j of the recommendation in a name column nw wide: a categorical as its
 * choice, a conditional one its level leaves out as inactive, the others with their interval
 * and role. */
static void print_setting(const study *st, const fit_xp *xp, const fit_xp_result *res, size_t j,
                          int nw)
{
    const runner_param_spec *ps = &study_sweep(st)->cfg->params[study_engine_param(st, j)];
    const char *choice = ps->choices ? runner_param_choice(ps, res->value[j]) : NULL;
    const char *name = fit_xp_param_name(xp, j);
    if (choice)
        printf("  %-*s %-12s (categorical)\n", nw, name, choice);
    else if (isnan(res->value[j]) && ps->p.active_if)
        printf("  %-*s %-12s (inactive with the recommended %s)\n", nw, name, "-", ps->p.active_if);
    else
        printf("  %-*s %-12.5g [%.5g, %.5g]  (%s)\n", nw, name, res->value[j], res->lo[j],
               res->hi[j], fit_xp_role_name(fit_xp_param_role(xp, j)));
}

/* 1 when the sweep's learning rate (the engine's role lr) is searched on a log scale. */
static int lr_is_log(const study *st, const fit_xp *xp)
{
    for (size_t j = 0; j < fit_xp_n_params(xp); j++)
        if (fit_xp_param_role(xp, j) == FIT_XP_LR)
            return study_sweep(st)->cfg->params[study_engine_param(st, j)].p.space ==
                   CARBS_SPACE_LOG;
    return 0;
}

/* Each categorical's levels against its reference (MODEL): the fitted offset in loss and lr
 * shift (a factor on a log scale, else added) with their intervals, the runs behind them. */
static void print_levels(const study *st, const fit_xp *xp, double level)
{
    int lg = lr_is_log(st, xp);
    for (size_t j = 0; j < fit_xp_n_params(xp); j++) {
        double off[3], sh[3];
        size_t ref = 0, n_ok;
        if (fit_xp_level_effect(xp, j, 0, NULL, NULL, &ref, NULL) != ST_OK)
            continue;
        printf("%s: each level against %s (%.0f%% intervals):\n", fit_xp_param_name(xp, j),
               fit_xp_level_name(xp, j, ref), 100 * level);
        for (size_t l = 0; fit_xp_level_effect(xp, j, l, off, sh, NULL, &n_ok) == ST_OK; l++)
            printf("  %-14s loss x%.4f [%.4f, %.4f], lr optimum %s%.3g [%.3g, %.3g], %zu "
                   "succeeded\n",
                   fit_xp_level_name(xp, j, l), exp(off[0]), exp(off[1]), exp(off[2]),
                   lg ? "x" : "+", lg ? exp(sh[0]) : sh[0], lg ? exp(sh[1]) : sh[1],
                   lg ? exp(sh[2]) : sh[2], n_ok);
    }
}

static void print_text(const study *st, const args *a)
{
    const fit_xp *xp = study_engine(st);
    fit_xp_result res;
    fit_xp_get_result(xp, &res);
    size_t P = fit_xp_n_params(xp);
    print_runs(st, xp, &res);
    printf("target compute %.4g (%.3gx the largest run); method: %s\n", res.compute,
           res.compute / res.largest_cost,
           res.method == FIT_XP_METHOD_MODEL
               ? "model (every run: L(N, D) x hyperparameter penalties, stability boundary)"
               : "front (each parameter regressed on log cost along the Pareto front)");
    printf("\n%s settings (%.0f%% intervals):\n",
           study_safe(st) ? "recommended" : "UNSAFE (the safest found)", 100 * a->o.level);
    int nw = name_width(xp);
    for (size_t j = 0; j < P; j++)
        print_setting(st, xp, &res, j, nw);
    if (isfinite(res.N))
        printf("  %-*s %-12.5g [%.5g, %.5g]\n", nw, "model size N", res.N, res.N_lo, res.N_hi);
    if (isfinite(res.D))
        printf("  %-*s %-12.5g [%.5g, %.5g]\n", nw, "tokens D", res.D, res.D_lo, res.D_hi);
    printf("\npredicted %s: %.5g [%.5g, %.5g]\n", study_sweep(st)->cfg->objective, res.objective,
           res.objective_lo, res.objective_hi);
    if (isfinite(res.p_diverge))
        printf("P(diverge): %.3f\n", res.p_diverge);
    double ch[5];
    fit_alloc al;
    if (fit_xp_chinchilla(xp, ch, &al) == ST_OK)
        printf("L(N, D) = %.4g + %.4g N^-%.3f + %.4g D^-%.3f; compute-optimal at C: N %.4g, "
               "D %.4g (%.1f tokens/param)\n",
               ch[2], ch[0], ch[3], ch[1], ch[4], al.N_opt, al.D_opt, al.tokens_per_param);
    print_levels(st, xp, a->o.level);
    double fv[64];
    if (P <= 64 && res.method == FIT_XP_METHOD_MODEL && fit_xp_front_recommend(xp, fv) == ST_OK) {
        printf("front laws alone (CARBS' method) would give:");
        for (size_t j = 0; j < P; j++) {
            const char *lv = isfinite(fv[j]) && fv[j] > -0.5
                                 ? fit_xp_level_name(xp, j, (size_t)round(fv[j]))
                                 : NULL;
            if (lv) /* a categorical: the level nearest the law's value */
                printf(" %s=%s", fit_xp_param_name(xp, j), lv);
            else
                printf(" %s=%.4g", fit_xp_param_name(xp, j), fv[j]);
        }
        printf("\n");
    }
    const study_backtest_result *b = study_get_backtest(st);
    if (b->done)
        printf("backtest (the largest %s held out, up to %.3gx the rest): median error %.2f%%, "
               "worst %.2f%%, %zu of %zu inside their %.0f%% interval\n",
               b->by_model_size ? "model sizes" : "runs by cost", b->factor, 100 * b->median_error,
               100 * b->worst_error, b->n_inside, b->n_held, 100 * a->o.level);
    if (res.warning_text[0] || study_warnings(st)[0]) {
        printf("\nwarnings:\n");
        print_warnings(res.warning_text);
        print_warnings(study_warnings(st));
    }
    if (!study_safe(st))
        printf("\nnot safe: %s\n", study_unsafe_reason(st));
}

/* The study's options from the command line; the override file is loaded into *cfg. */
static int study_setup(const args *a, study_options *so, runner_config **cfg)
{
    *so = study_options_default();
    so->engine = a->o;
    so->compute = a->compute;
    so->factor = isnan(a->factor) ? 1 : a->factor;
    char em[ST_ERRMSG_MAX];
    if (a->config && runner_config_load_file(a->config, cfg, em) != ST_OK) {
        cli_error(NULL, "%s", em);
        return 1;
    }
    so->config_override = *cfg;
    so->backtest = !a->no_backtest;
    so->curves = a->curves;
    so->branches = !a->no_branches;
    so->n_roles = a->n_roles;
    for (size_t k = 0; k < a->n_roles; k++) {
        /* "name=role": the name part, kept in the args' own buffer */
        char *eq = strchr(a->role_name[k], '=');
        *eq = '\0';
        so->role_name[k] = a->role_name[k];
        so->role[k] = a->role[k];
    }
    return 0;
}

static int emit(const study *st, const args *a)
{
    char *text = NULL;
    if (study_result_json(st, &text) != ST_OK) {
        cli_error(NULL, "out of memory");
        return 1;
    }
    int rc = 0;
    if (a->out) {
        FILE *f = fopen(a->out, "w");
        if (!f || fputs(text, f) < 0 || fputc('\n', f) < 0) {
            cli_error(NULL, "cannot write %s", a->out);
            rc = 1;
        }
        if (f && fclose(f) != 0 && !rc) {
            cli_error(NULL, "cannot write %s", a->out);
            rc = 1;
        }
    }
    if (a->emit && (study_safe(st) || a->allow_unsafe)) {
        cli_emit_options eo = a->eo;
        eo.name = a->emit_name;
        if (a->emit_out) {
            FILE *f = fopen(a->emit_out, "w");
            int bad = !f || cli_emit_run(st, a->emit, &eo, f);
            if (f && fclose(f) != 0)
                bad = 1;
            if (bad) {
                cli_error(NULL, "cannot write %s", a->emit_out);
                rc = 1;
            }
        } else {
            rc |= cli_emit_run(st, a->emit, &eo, stdout);
        }
    }
    if (a->emit && !a->emit_out) {
        /* the run was printed instead of the text */
    } else if (a->json) {
        printf("%s\n", text);
    } else {
        print_text(st, a);
    }
    st_free(text);
    return rc;
}

int cmd_extrapolate(int argc, char **argv)
{
    args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (access(a.db, F_OK) != 0) {
        cli_error("name the store with --db FILE", "no such store: %s", a.db);
        return 1;
    }
    study_options so;
    runner_config *cfg = NULL;
    if (study_setup(&a, &so, &cfg)) {
        runner_config_destroy(cfg);
        return 1;
    }
    char em[ST_ERRMSG_MAX] = "";
    study *st = NULL;
    st_status s = study_open(a.db, a.sweep, &so, &st, em);
    if (s != ST_OK) {
        cli_error(s == ST_ENOTFOUND || s == ST_EINVAL
                      ? "list the sweeps with 'scaletune sweep status --db FILE'"
                      : NULL,
                  "%s", em);
        runner_config_destroy(cfg);
        return s == ST_EINVAL && a.n_roles ? 2 : 1;
    }
    if (a.emit && (rc = cli_emit_check(st, &a.eo)) != 0) {
        study_destroy(st);
        runner_config_destroy(cfg);
        return rc;
    }
    s = study_run(st);
    if (s != ST_OK) {
        cli_error(s == ST_EEMPTY ? "run more of the sweep first" : NULL, "%s: %s", st_strerror(s),
                  study_errmsg(st));
        study_destroy(st);
        runner_config_destroy(cfg);
        return 1;
    }
    rc = emit(st, &a);
    if (!rc && !study_safe(st) && !a.allow_unsafe) {
        cli_error("run the small runs named above, or pass --allow-unsafe to take the safest "
                  "setting anyway",
                  "refused: %s", study_unsafe_reason(st));
        rc = 3;
    }
    study_destroy(st);
    runner_config_destroy(cfg);
    return rc;
}
