/*
 * emit_run.c — `scaletune extrapolate --emit yaml|command`: the recommended large run, ready to
 * launch, as a one-run sweep file (every parameter fixed: the recommended values, fixed ones as
 * written; the sweep's command, environment, working directory, objective, cost metric, retries
 * and no-metrics timeout; no wall timeout and no cost cap, which were the small runs') or as one
 * shell command line (the command template expanded with those values); --set overrides a
 * parameter's value, --digits the precision. Built on the public
 * headers only; it does not know how the recommendation was made.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "fit/extrapolate.h"
#include "runner/runner.h"
#include "study/study.h"

/* The value of sweep parameter i for the large run: the recommendation when the engine has the
 * parameter (rounded as the sweep rounds it; not clamped: the large run lies beyond the small
 * runs' space), else the search centre. */
static double value_of(const study *st, const fit_xp_result *res, size_t i)
{
    const runner_param_spec *ps = &study_sweep(st)->cfg->params[i];
    const fit_xp *xp = study_engine(st);
    double v = ps->p.center;
    for (size_t j = 0; j < fit_xp_n_params(xp); j++)
        if (study_engine_param(st, j) == i)
            v = res->value[j];
    if (ps->p.is_integer) {
        double r = ps->p.rounding > 0 ? ps->p.rounding : 1;
        v = fmax(r, round(v / r) * r);
    }
    return v;
}

/* 1 when sweep parameter i is conditional and the recommendation leaves it inactive (the
 * engine gives NAN there) and no --set names it. */
static int inactive(const study *st, const fit_xp_result *res, const cli_emit_options *o, size_t i);

/* 1 when the template t names a parameter the recommendation leaves inactive: the runner
 * leaves such an argument (and an env entry) out, and the `-` flag just before it. */
static int names_inactive(const study *st, const fit_xp_result *res, const cli_emit_options *o,
                          const char *t)
{
    const runner_config *c = study_sweep(st)->cfg;
    for (size_t i = 0; i < c->n_params; i++) {
        char ph[128];
        snprintf(ph, sizeof(ph), "{%s}", c->params[i].p.name);
        if (strstr(t, ph) && inactive(st, res, o, i))
            return 1;
    }
    return 0;
}

/* Whether argument k of the command is left out: it names an inactive parameter, or it is the
 * flag (starts with '-', no placeholder) before one that does. */
static int arg_left_out(const study *st, const fit_xp_result *res, const cli_emit_options *o,
                        size_t k)
{
    const runner_config *c = study_sweep(st)->cfg;
    if (names_inactive(st, res, o, c->argv[k]))
        return 1;
    return k + 1 < c->argc && c->argv[k][0] == '-' && !strchr(c->argv[k], '{') &&
           names_inactive(st, res, o, c->argv[k + 1]);
}

/* The VALUE of a NAME=VALUE override of parameter `name`, or NULL. */
static const char *override_of(const cli_emit_options *o, const char *name)
{
    const char *v = NULL;
    size_t l = strlen(name);
    for (size_t k = 0; k < o->n_set; k++)
        if (!strncmp(o->set[k], name, l) && o->set[k][l] == '=')
            v = o->set[k] + l + 1; /* the last one wins */
    return v;
}

/* 1 if s is a number as a whole (then written unquoted). */
static int is_number(const char *s)
{
    char *end;
    (void)strtod(s, &end);
    return end != s && *end == '\0';
}

static int inactive(const study *st, const fit_xp_result *res, const cli_emit_options *o, size_t i)
{
    const runner_param_spec *ps = &study_sweep(st)->cfg->params[i];
    return ps->p.active_if && !ps->is_fixed && !override_of(o, ps->p.name) &&
           isnan(value_of(st, res, i));
}

static void format_value(const study *st, const fit_xp_result *res, const cli_emit_options *o,
                         size_t i, char *buf, size_t cap)
{
    const runner_param_spec *ps = &study_sweep(st)->cfg->params[i];
    const char *ov = override_of(o, ps->p.name);
    if (ov)
        snprintf(buf, cap, "%s", ov);
    else if (ps->is_fixed)
        snprintf(buf, cap, "%s", ps->fixed_text);
    else if (ps->choices && runner_param_choice(ps, value_of(st, res, i)))
        snprintf(buf, cap, "%s", runner_param_choice(ps, value_of(st, res, i)));
    else if (inactive(st, res, o, i))
        buf[0] = '\0';
    else if (ps->p.is_integer)
        snprintf(buf, cap, "%.0f", value_of(st, res, i));
    else
        snprintf(buf, cap, "%.*g", o->digits > 0 ? o->digits : 8, value_of(st, res, i));
}

/* A YAML double-quoted scalar. */
static void yq(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void emit_yaml(FILE *f, const study *st, const fit_xp_result *res, const cli_emit_options *o,
                      const char *name)
{
    const runner_config *c = study_sweep(st)->cfg;
    fprintf(f,
            "# the large run recommended by 'scaletune extrapolate' for sweep '%s' at compute "
            "%.4g;\n# predicted %s %.5g [%.5g, %.5g]. Run it, restarted from its checkpoints "
            "after\n# failures and watched (docs/large-run.md), with\n"
            "#   scaletune run THIS_FILE --db DB\n"
            "# once the command writes and resumes a checkpoint: add to it, e.g. for "
            "scaletune-train,\n"
            "#   --checkpoint {_checkpoint} --checkpoint-every 20 --resume {_resume}\n"
            "# (without {_resume} a restart begins from scratch; 'scaletune sweep launch' runs it "
            "once).\n",
            c->name, res->compute, c->objective, res->objective, res->objective_lo,
            res->objective_hi);
    fprintf(f, "name: ");
    yq(f, name);
    fprintf(f, "\ncommand: [");
    for (size_t i = 0, n = 0; i < c->argc; i++) {
        if (arg_left_out(st, res, o, i))
            continue;
        fputs(n++ ? ", " : "", f);
        yq(f, c->argv[i]);
    }
    fprintf(f, "]\n");
    if (c->n_env) {
        fprintf(f, "env:\n");
        for (size_t i = 0; i < c->n_env; i++) {
            if (names_inactive(st, res, o, c->env[i]))
                continue;
            const char *eq = strchr(c->env[i], '=');
            fprintf(f, "  %.*s: ", eq ? (int)(eq - c->env[i]) : 0, c->env[i]);
            yq(f, eq ? eq + 1 : "");
            fputc('\n', f);
        }
    }
    if (c->workdir) {
        fprintf(f, "workdir: ");
        yq(f, c->workdir);
        fputc('\n', f);
    }
    fprintf(f, "objective: {metric: ");
    yq(f, c->objective);
    fprintf(f, ", goal: %s}\ncost: {metric: ", c->maximize ? "maximize" : "minimize");
    yq(f, c->cost_metric);
    fprintf(f, "}\nparameters:\n");
    for (size_t i = 0; i < c->n_params; i++) {
        char v[128];
        if (inactive(st, res, o, i)) { /* its arguments are left out of the command above */
            fprintf(f, "  # %s: inactive with the recommended %s\n", c->params[i].p.name,
                    c->params[i].p.active_if);
            continue;
        }
        format_value(st, res, o, i, v, sizeof(v));
        fprintf(f, "  %s: {value: ", c->params[i].p.name);
        if ((override_of(o, c->params[i].p.name) || c->params[i].choices) && !is_number(v))
            yq(f, v);
        else
            fputs(v, f);
        fputs("}\n", f);
    }
    fprintf(f, "budget: {runs: 1}\nparallel: 1\n");
    fprintf(f, "retries: {infrastructure: %u, backoff_seconds: %g}\n", c->retries,
            c->backoff_seconds);
    if (isfinite(c->no_metrics_seconds))
        fprintf(f, "timeouts: {no_metrics_seconds: %g}\n", c->no_metrics_seconds);
    fprintf(f, "seed: %llu\n", (unsigned long long)c->seed);
    if (c->backend == RUNNER_BACKEND_SLURM)
        fprintf(f, "# the sweep ran on Slurm: copy its backend block here, with a time limit for "
                   "the large run\n");
}

/* One argument of the command with {param} placeholders replaced; {_run} and {_attempt} are 1,
 * {_dir} is "."; {{ and }} are braces. */
static void expand(const study *st, const fit_xp_result *res, const cli_emit_options *o,
                   const char *t, char *out, size_t cap)
{
    const runner_config *c = study_sweep(st)->cfg;
    size_t n = 0;
    out[0] = '\0';
    for (const char *p = t; *p && n + 1 < cap;) {
        if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
            out[n++] = *p;
            p += 2;
            continue;
        }
        const char *e = p[0] == '{' ? strchr(p, '}') : NULL;
        if (!e) {
            out[n++] = *p++;
            continue;
        }
        char v[128] = "";
        size_t l = (size_t)(e - p - 1);
        if ((l == 4 && !strncmp(p + 1, "_run", 4)) || (l == 8 && !strncmp(p + 1, "_attempt", 8)))
            snprintf(v, sizeof(v), "1");
        else if (l == 4 && !strncmp(p + 1, "_dir", 4))
            snprintf(v, sizeof(v), ".");
        for (size_t i = 0; i < c->n_params && !v[0]; i++)
            if (strlen(c->params[i].p.name) == l && !strncmp(p + 1, c->params[i].p.name, l))
                format_value(st, res, o, i, v, sizeof(v));
        n += (size_t)snprintf(out + n, cap - n, "%s", v);
        if (n >= cap)
            n = cap - 1;
        p = e + 1;
    }
    out[n] = '\0';
}

/* Single-quotes a shell word when it needs it. */
static void shell_word(FILE *f, const char *s)
{
    int plain = *s != '\0';
    for (const char *p = s; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=+,:@%", *p))
            plain = 0;
    if (plain) {
        fputs(s, f);
        return;
    }
    fputc('\'', f);
    for (; *s; s++)
        if (*s == '\'')
            fputs("'\\''", f);
        else
            fputc(*s, f);
    fputc('\'', f);
}

static void emit_command(FILE *f, const study *st, const fit_xp_result *res,
                         const cli_emit_options *o)
{
    const runner_config *c = study_sweep(st)->cfg;
    char buf[8192];
    if (c->workdir) {
        fputs("cd ", f);
        shell_word(f, c->workdir);
        fputs(" && ", f);
    }
    if (c->n_env)
        fputs("env ", f);
    for (size_t i = 0; i < c->n_env; i++) {
        if (names_inactive(st, res, o, c->env[i]))
            continue;
        expand(st, res, o, c->env[i], buf, sizeof(buf));
        shell_word(f, buf);
        fputc(' ', f);
    }
    for (size_t i = 0, n = 0; i < c->argc; i++) {
        if (arg_left_out(st, res, o, i))
            continue;
        expand(st, res, o, c->argv[i], buf, sizeof(buf));
        fputs(n++ ? " " : "", f);
        shell_word(f, buf);
    }
    fputc('\n', f);
}

int cli_emit_check(const study *st, const cli_emit_options *o)
{
    const runner_config *c = study_sweep(st)->cfg;
    for (size_t k = 0; k < o->n_set; k++) {
        size_t l = (size_t)(strchr(o->set[k], '=') - o->set[k]);
        int found = 0;
        for (size_t i = 0; i < c->n_params && !found; i++)
            found = strlen(c->params[i].p.name) == l && !strncmp(c->params[i].p.name, o->set[k], l);
        if (!found) {
            char hint[512] = "the sweep's parameters:";
            for (size_t i = 0; i < c->n_params; i++) {
                size_t n = strlen(hint);
                snprintf(hint + n, sizeof(hint) - n, " %s", c->params[i].p.name);
            }
            cli_error(hint, "--set %.*s: sweep '%s' has no parameter '%.*s'", (int)l, o->set[k],
                      c->name, (int)l, o->set[k]);
            return 2;
        }
    }
    return 0;
}

int cli_emit_run(const study *st, const char *what, const cli_emit_options *o, FILE *f)
{
    const char *name = o->name;
    fit_xp_result res;
    fit_xp_get_result(study_engine(st), &res);
    char nm[160];
    snprintf(nm, sizeof(nm), "%s-large", study_sweep(st)->cfg->name);
    if (!strcmp(what, "yaml"))
        emit_yaml(f, st, &res, o, name ? name : nm);
    else
        emit_command(f, st, &res, o);
    return fflush(f) != 0;
}
