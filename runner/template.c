/*
 * template.c — argv and env templates: "{name}" is replaced by a parameter's value, "{_run}",
 * "{_attempt}" and "{_dir}" by the run id, the attempt number and the attempt's directory,
 * "{_checkpoint}" by the run's checkpoint path (<run dir>/checkpoint, the same for every attempt)
 * and "{_resume}" by that path once the file exists, else by "" (docs/large-run.md);
 * "{{" and "}}" are literal braces. A template expands to exactly one string: values are never
 * split or passed through a shell. A cooldown branch's templates also know "{_parent_run}",
 * "{_parent_checkpoint}", "{_branch_step}" and "{_decay_steps}" (runner_branch_ctx).
 */
#include "runner/runner_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the first N_PLAIN are every template's; the rest a branch's (branches.args) */
static const char *const builtins[] = {
    "_run",        "_attempt",           "_dir",         "_checkpoint", "_resume",
    "_parent_run", "_parent_checkpoint", "_branch_step", "_decay_steps"};
#define N_PLAIN 5
enum { B_RUN, B_ATTEMPT, B_DIR, B_CHECKPOINT, B_RESUME, B_PARENT, B_PARENT_CK, B_STEP, B_DECAY };

static int param_index(const runner_config *cfg, const char *name, size_t len)
{
    for (size_t i = 0; i < cfg->n_params; i++)
        if (strlen(cfg->params[i].p.name) == len && !memcmp(cfg->params[i].p.name, name, len))
            return (int)i;
    return -1;
}

static int builtin_index(const char *name, size_t len, int branch)
{
    size_t n = branch ? sizeof(builtins) / sizeof(builtins[0]) : N_PLAIN;
    for (size_t i = 0; i < n; i++)
        if (strlen(builtins[i]) == len && !memcmp(builtins[i], name, len))
            return (int)i;
    return -1;
}

static st_status check(const runner_config *cfg, const char *t, int branch, char *errmsg)
{
    for (const char *p = t; *p; p++) {
        if (p[0] == '{' && p[1] == '{') {
            p++;
            continue;
        }
        if (p[0] == '}' && p[1] == '}') {
            p++;
            continue;
        }
        if (*p == '}')
            return st_errf(errmsg, ST_EINVAL, "'%s': lone '}' (write '}}')", t);
        if (*p != '{')
            continue;
        const char *e = strchr(p, '}');
        if (!e)
            return st_errf(errmsg, ST_EINVAL, "'%s': '{' without '}' (write '{{')", t);
        size_t len = (size_t)(e - p - 1);
        if (param_index(cfg, p + 1, len) < 0 && builtin_index(p + 1, len, branch) < 0)
            return st_errf(errmsg, ST_EINVAL, "'%s': unknown placeholder {%.*s}%s", t, (int)len,
                           p + 1,
                           !branch && builtin_index(p + 1, len, 1) >= 0
                               ? " (a branch's placeholder: only in branches.args)"
                               : "");
        p = e;
    }
    return ST_OK;
}

st_status runner_template_check(const runner_config *cfg, const char *t, char *errmsg)
{
    return check(cfg, t, 0, errmsg);
}

st_status runner_template_check_branch(const runner_config *cfg, const char *t, char *errmsg)
{
    return check(cfg, t, 1, errmsg);
}

void runner_format_value(const runner_param_spec *ps, double v, char *buf, size_t cap)
{
    if (ps->is_fixed) {
        snprintf(buf, cap, "%s", ps->fixed_text);
    } else if (runner_param_choice(ps, v)) {
        snprintf(buf, cap, "%s", runner_param_choice(ps, v));
    } else if (isnan(v) && ps->p.active_if) {
        buf[0] = '\0'; /* inactive; runner_command_expand leaves such arguments out */
    } else if (ps->p.is_integer && fabs(v) < 9e15) {
        snprintf(buf, cap, "%.0f", v);
    } else {
        /* shortest of %.15g/%.17g that reads back to the same double */
        snprintf(buf, cap, "%.15g", v);
        if (strtod(buf, NULL) != v)
            snprintf(buf, cap, "%.17g", v);
    }
}

/* The run's checkpoint path from its attempt's directory ".../run-N/attempt-M": the parent
 * directory, shared by the run's attempts, plus "/checkpoint". "" without a directory. With
 * only_existing, "" also while no such file exists (nothing to resume from yet). */
static char *checkpoint_of(const char *dir, int only_existing)
{
    const char *slash = dir ? strrchr(dir, '/') : NULL;
    size_t len = slash ? (size_t)(slash - dir) : 0;
    char *p = malloc(len + sizeof("/checkpoint"));
    if (!p)
        return NULL;
    if (!slash) {
        p[0] = '\0';
        return p;
    }
    memcpy(p, dir, len);
    strcpy(p + len, "/checkpoint");
    if (only_existing && access(p, R_OK) != 0)
        p[0] = '\0';
    return p;
}

/* One builtin's text into val (cap bytes) or *piece; *ck holds a checkpoint path made here.
 * ST_EINVAL for a branch placeholder outside a branch. */
static st_status builtin_text(int bi, uint64_t run, unsigned attempt, const char *dir,
                              const runner_branch_ctx *br, char *val, size_t cap,
                              const char **piece, char **ck)
{
    switch (bi) {
    case B_RUN:
        snprintf(val, cap, "%llu", (unsigned long long)(br ? br->parent : run));
        return ST_OK;
    case B_ATTEMPT:
        snprintf(val, cap, "%u", attempt);
        return ST_OK;
    case B_DIR:
        *piece = dir ? dir : "";
        return ST_OK;
    case B_CHECKPOINT:
    case B_RESUME:
        free(*ck);
        if (!(*ck = checkpoint_of(dir, bi == B_RESUME)))
            return ST_ENOMEM;
        *piece = *ck;
        return ST_OK;
    default:
        break;
    }
    if (!br)
        return ST_EINVAL;
    if (bi == B_PARENT_CK)
        *piece = br->parent_checkpoint ? br->parent_checkpoint : "";
    else
        snprintf(val, cap, "%llu",
                 (unsigned long long)(bi == B_PARENT ? br->parent
                                      : bi == B_STEP ? br->step
                                                     : br->decay_steps));
    return ST_OK;
}

static st_status expand(const runner_config *cfg, const char *t, const double *values, uint64_t run,
                        unsigned attempt, const char *dir, const runner_branch_ctx *br, char **out)
{
    size_t cap = strlen(t) + 64, n = 0;
    char *o = malloc(cap);
    char *ck = NULL; /* the last {_checkpoint} or {_resume} expanded */
    if (!o)
        return ST_ENOMEM;
    for (const char *p = t; *p; p++) {
        char val[64];
        const char *piece = val;
        size_t plen;
        if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
            val[0] = *p++;
            plen = 1;
        } else if (*p == '{' && strchr(p, '}')) {
            const char *e = strchr(p, '}');
            size_t len = (size_t)(e - p - 1);
            int pi = param_index(cfg, p + 1, len);
            int bi = builtin_index(p + 1, len, 1);
            st_status rc = ST_OK;
            if (pi >= 0 && runner_param_choice(&cfg->params[pi], values[pi]))
                piece = runner_param_choice(&cfg->params[pi], values[pi]);
            else if (pi >= 0)
                runner_format_value(&cfg->params[pi], values[pi], val, sizeof(val));
            else
                rc = bi >= 0
                         ? builtin_text(bi, run, attempt, dir, br, val, sizeof(val), &piece, &ck)
                         : ST_EINVAL;
            if (rc) {
                free(ck);
                free(o);
                return rc;
            }
            if (pi >= 0 && cfg->params[pi].is_fixed)
                piece = cfg->params[pi].fixed_text;
            plen = strlen(piece);
            p = e;
        } else {
            val[0] = *p;
            plen = 1;
        }
        if (n + plen + 1 > cap) {
            cap = (n + plen + 1) * 2;
            char *no = realloc(o, cap);
            if (!no) {
                free(o);
                free(ck);
                return ST_ENOMEM;
            }
            o = no;
        }
        memcpy(o + n, piece, plen);
        n += plen;
    }
    o[n] = '\0';
    free(ck);
    *out = o;
    return ST_OK;
}

st_status runner_template_expand(const runner_config *cfg, const char *t, const double *values,
                                 uint64_t run, unsigned attempt, const char *dir, char **out)
{
    return expand(cfg, t, values, run, attempt, dir, NULL, out);
}

/* 1 if template t names a parameter that is inactive at values (NaN and conditional). */
static int names_inactive(const runner_config *cfg, const char *t, const double *values)
{
    for (const char *p = strchr(t, '{'); p; p = strchr(p + 1, '{')) {
        if (p[1] == '{') {
            p++;
            continue;
        }
        const char *e = strchr(p, '}');
        if (!e)
            return 0;
        int pi = param_index(cfg, p + 1, (size_t)(e - p - 1));
        if (pi >= 0 && cfg->params[pi].p.active_if && isnan(values[pi]))
            return 1;
    }
    return 0;
}

static st_status command_expand(const runner_config *cfg, char *const *t, size_t n, int flags,
                                const double *values, uint64_t run, const runner_branch_ctx *br,
                                unsigned attempt, const char *dir, char **out, size_t *n_out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (names_inactive(cfg, t[i], values)) {
            /* "--beta2 {beta2}": the flag before goes too */
            if (flags && k > 0 && i > 0 && t[i - 1][0] == '-' && !strchr(t[i - 1], '{')) {
                free(out[--k]);
                out[k] = NULL;
            }
            continue;
        }
        st_status rc = expand(cfg, t[i], values, run, attempt, dir, br, &out[k]);
        if (rc)
            return rc;
        k++;
    }
    *n_out = k;
    return ST_OK;
}

st_status runner_command_expand(const runner_config *cfg, char *const *t, size_t n, int flags,
                                const double *values, uint64_t run, unsigned attempt,
                                const char *dir, char **out, size_t *n_out)
{
    return command_expand(cfg, t, n, flags, values, run, NULL, attempt, dir, out, n_out);
}

st_status runner_command_expand_branch(const runner_config *cfg, char *const *t, size_t n,
                                       int flags, const double *values, const runner_branch_ctx *br,
                                       unsigned attempt, const char *dir, char **out, size_t *n_out)
{
    return command_expand(cfg, t, n, flags, values, 0, br, attempt, dir, out, n_out);
}
