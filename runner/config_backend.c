/*
 * config_backend.c — the sweep file's `backend:` block (docs/config.md, docs/backends/slurm.md):
 * local or Slurm, the cli or rest route, Slurm's options and policies. Split from config.c.
 */
#include "runner/config_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Slurm's time formats: "M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S", or a number of minutes;
 * seconds round up to a whole minute. 0 on a bad string. */
static unsigned parse_time_limit(const char *s)
{
    unsigned long f[4] = {0, 0, 0, 0}, days = 0;
    size_t n = 0;
    const char *p = s;
    const char *dash = strchr(s, '-');
    char *end;
    if (dash) {
        days = strtoul(s, &end, 10);
        if (end != dash || dash == s)
            return 0;
        p = dash + 1;
    }
    while (n < 3) {
        if (*p < '0' || *p > '9')
            return 0;
        f[n++] = strtoul(p, &end, 10);
        if (*end == '\0')
            break;
        if (*end != ':')
            return 0;
        p = end + 1;
    }
    if (*end != '\0')
        return 0;
    double min;
    if (dash) /* D-H, D-H:M, D-H:M:S */
        min = days * 1440.0 + f[0] * 60.0 + (n > 1 ? f[1] : 0) + (n > 2 ? ceil(f[2] / 60.0) : 0);
    else if (n == 1) /* M */
        min = f[0];
    else if (n == 2) /* M:S */
        min = f[0] + ceil(f[1] / 60.0);
    else /* H:M:S */
        min = f[0] * 60.0 + f[1] + ceil(f[2] / 60.0);
    return min >= 1 && min < 4294967295.0 ? (unsigned)min : 0;
}

static st_status get_policy(ctx *c, const yaml_node_t *n, const char *field, int allow_fail,
                            runner_slurm_policy *out)
{
    const char *s = cfg_scalar(n);
    if (s && !strcmp(s, "retry"))
        *out = RUNNER_SLURM_RETRY;
    else if (s && allow_fail && !strcmp(s, "fail"))
        *out = RUNNER_SLURM_FAIL;
    else if (s && !allow_fail && !strcmp(s, "stop"))
        *out = RUNNER_SLURM_STOP;
    else
        return cfg_fail(c, n, field, ST_EINVAL,
                        allow_fail ? "expected fail or retry" : "expected retry or stop");
    return ST_OK;
}

static st_status get_positive(ctx *c, const yaml_node_t *n, const char *field, double *out)
{
    st_status rc = cfg_get_number(c, n, field, out);
    if (!rc && !(*out > 0 && isfinite(*out)))
        rc = cfg_fail(c, n, field, ST_EINVAL, "must be a finite number > 0");
    return rc;
}

static st_status load_rest(ctx *c, const yaml_node_t *map)
{
    runner_slurm_config *sc = &c->cfg->slurm;
    st_status rc = cfg_expect_map(c, map, "backend.rest");
    if (rc)
        return rc;
    yaml_node_t *k, *v;
    const char *key;
    FOREACH_PAIR(c, map, k, v, key)
    {
        char f[96];
        snprintf(f, sizeof(f), "backend.rest.%s", key ? key : "?");
        if (key && !strcmp(key, "url")) {
            rc = cfg_get_string(c, v, f, &sc->rest_url);
            if (!rc && strncmp(sc->rest_url, "http://", 7) && strncmp(sc->rest_url, "https://", 8))
                rc = cfg_fail(c, v, f, ST_EINVAL, "expected http://host:port or https://...");
            size_t l = rc ? 0 : strlen(sc->rest_url);
            while (l > 8 && sc->rest_url[l - 1] == '/') /* the API paths add their own '/' */
                sc->rest_url[--l] = '\0';
        } else if (key && !strcmp(key, "socket")) {
            rc = cfg_get_string(c, v, f, &sc->rest_socket);
        } else if (key && !strcmp(key, "user")) {
            rc = cfg_get_string(c, v, f, &sc->rest_user);
        } else if (key && !strcmp(key, "token_env")) {
            rc = cfg_get_string(c, v, f, &sc->token_env);
        } else if (key && !strcmp(key, "token_file")) {
            rc = cfg_get_string(c, v, f, &sc->token_file);
        } else {
            rc = cfg_fail(c, k, "backend.rest", ST_EINVAL,
                          "unknown key '%s' (url, socket, user, token_env, token_file)",
                          key ? key : "?");
        }
        if (rc)
            return rc;
    }
    if (!sc->rest_url == !sc->rest_socket)
        return cfg_fail(c, map, "backend.rest", ST_EINVAL,
                        "needs exactly one of 'url' (JWT) and 'socket' (local authentication)");
    if (sc->token_env && sc->token_file)
        return cfg_fail(c, map, "backend.rest", ST_EINVAL,
                        "the token comes from 'token_env' or 'token_file', not both");
    if (sc->rest_socket && (sc->token_env || sc->token_file))
        return cfg_fail(c, map, "backend.rest", ST_EINVAL,
                        "a unix socket uses local authentication: no token");
    if (sc->rest_url && !sc->token_file && !sc->token_env) {
        sc->token_env = cfg_strdup("SLURM_JWT");
        if (!sc->token_env)
            return ST_ENOMEM;
    }
    return ST_OK;
}

st_status cfg_load_backend(ctx *c, const yaml_node_t *map)
{
    runner_config *cfg = c->cfg;
    runner_slurm_config *sc = &cfg->slurm;
    st_status rc = cfg_expect_map(c, map, "backend");
    if (rc)
        return rc;
    yaml_node_t *k, *v;
    const char *key;
    const yaml_node_t *kind = NULL, *rest = NULL, *slurm_only = NULL;
    FOREACH_PAIR(c, map, k, v, key)
    {
        char f[96];
        double d;
        snprintf(f, sizeof(f), "backend.%s", key ? key : "?");
        if (!key)
            return cfg_fail(c, k, "backend", ST_EINVAL, "keys must be strings");
        if (strcmp(key, "kind"))
            slurm_only = k;
        if (!strcmp(key, "kind")) {
            const char *s = cfg_scalar(v);
            kind = v;
            if (s && !strcmp(s, "local"))
                cfg->backend = RUNNER_BACKEND_LOCAL;
            else if (s && !strcmp(s, "slurm"))
                cfg->backend = RUNNER_BACKEND_SLURM;
            else
                rc = cfg_fail(c, v, f, ST_EINVAL, "expected local or slurm");
        } else if (!strcmp(key, "via")) {
            const char *s = cfg_scalar(v);
            if (s && !strcmp(s, "cli"))
                sc->via = RUNNER_SLURM_CLI;
            else if (s && !strcmp(s, "rest"))
                sc->via = RUNNER_SLURM_REST;
            else
                rc = cfg_fail(c, v, f, ST_EINVAL,
                              "expected cli (sbatch, squeue) or rest (slurmrestd)");
        } else if (!strcmp(key, "partition")) {
            rc = cfg_get_string(c, v, f, &sc->partition);
        } else if (!strcmp(key, "account")) {
            rc = cfg_get_string(c, v, f, &sc->account);
        } else if (!strcmp(key, "qos")) {
            rc = cfg_get_string(c, v, f, &sc->qos);
        } else if (!strcmp(key, "gres")) {
            rc = cfg_get_string(c, v, f, &sc->gres);
        } else if (!strcmp(key, "time_limit")) {
            const char *s = cfg_scalar(v);
            sc->time_limit_minutes = s ? parse_time_limit(s) : 0;
            if (!sc->time_limit_minutes)
                rc = cfg_fail(c, v, f, ST_EINVAL,
                              "expected minutes or Slurm's [D-]H:M:S, at least one minute");
        } else if (!strcmp(key, "cpus_per_task")) {
            rc = cfg_get_count(c, v, f, 1, 65535, &d);
            sc->cpus_per_task = (unsigned)d;
        } else if (!strcmp(key, "extra")) {
            if (v->type == YAML_SEQUENCE_NODE &&
                v->data.sequence.items.top == v->data.sequence.items.start)
                continue; /* [] */
            rc = cfg_load_str_list(c, v, f, &sc->extra, &sc->n_extra);
            for (size_t i = 0; !rc && i < sc->n_extra; i++)
                if (sc->extra[i][0] != '-')
                    rc =
                        cfg_fail(c, v, f, ST_EINVAL,
                                 "item %zu: '%s' is not an option (--name=value)", i, sc->extra[i]);
        } else if (!strcmp(key, "on_timeout")) {
            rc = get_policy(c, v, f, 1, &sc->on_timeout);
        } else if (!strcmp(key, "on_cancelled")) {
            rc = get_policy(c, v, f, 0, &sc->on_cancelled);
        } else if (!strcmp(key, "poll_seconds")) {
            rc = get_positive(c, v, f, &sc->poll_min_seconds);
        } else if (!strcmp(key, "poll_max_seconds")) {
            rc = get_positive(c, v, f, &sc->poll_max_seconds);
        } else if (!strcmp(key, "files_grace_seconds")) {
            rc = cfg_get_number(c, v, f, &sc->files_grace_seconds);
            if (!rc && !(sc->files_grace_seconds >= 0 && isfinite(sc->files_grace_seconds)))
                rc = cfg_fail(c, v, f, ST_EINVAL, "must be >= 0");
        } else if (!strcmp(key, "command_timeout_seconds")) {
            rc = get_positive(c, v, f, &sc->command_timeout_seconds);
        } else if (!strcmp(key, "rest")) {
            rest = v;
            rc = load_rest(c, v);
        } else {
            rc = cfg_fail(c, k, "backend", ST_EINVAL,
                          "unknown key '%s' (kind, via, partition, account, qos, time_limit, gres, "
                          "cpus_per_task, extra, on_timeout, on_cancelled, poll_seconds, "
                          "poll_max_seconds, files_grace_seconds, command_timeout_seconds, rest)",
                          key);
        }
        if (rc)
            return rc;
    }
    if (!kind)
        return cfg_fail(c, map, "backend", ST_EINVAL, "needs 'kind' (local or slurm)");
    if (cfg->backend == RUNNER_BACKEND_LOCAL && slurm_only)
        return cfg_fail(c, slurm_only, "backend", ST_EINVAL, "'%s' needs kind: slurm",
                        cfg_scalar(slurm_only));
    if (cfg->backend == RUNNER_BACKEND_SLURM && sc->via == RUNNER_SLURM_REST && !rest)
        return cfg_fail(c, map, "backend", ST_EINVAL,
                        "via: rest needs 'rest: {url: ..., user: ..., token_env: ...}' or "
                        "'rest: {socket: ...}'");
    if (cfg->backend == RUNNER_BACKEND_SLURM && sc->via == RUNNER_SLURM_CLI && rest)
        return cfg_fail(c, rest, "backend.rest", ST_EINVAL, "only with via: rest");
    if (sc->via == RUNNER_SLURM_REST && sc->n_extra)
        return cfg_fail(
            c, map, "backend.extra", ST_EINVAL,
            "sbatch options apply to via: cli only (slurmrestd takes no sbatch options)");
    if (sc->poll_max_seconds < sc->poll_min_seconds)
        return cfg_fail(c, map, "backend.poll_max_seconds", ST_EINVAL,
                        "must be at least poll_seconds (%g)", sc->poll_min_seconds);
    return ST_OK;
}

/* Checks templates and the cost expression against the parameter names. */
