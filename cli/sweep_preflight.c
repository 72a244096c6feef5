/*
 * sweep_preflight.c — what `scaletune sweep launch` checks before it records anything: the
 * command's program, with its placeholders expanded at the search centre (fixed parameters as
 * written), exists and is executable where the local backend will exec it (execvp after
 * chdir(workdir), PATH from the sweep's env or the controller's), and the workdir is a directory
 * (runner_config_load_file has made it absolute). A failure is a configuration
 * error naming the sweep file's line and the program; the store is not touched, so the name
 * stays free. Slurm sweeps are not checked here (the program lives on the compute nodes).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/sweep_int.h"

/* argv[0] with {param} at the centre (fixed: as written), {_run}/{_attempt} 1; 0 if it uses
 * {_dir} (unknown before launch). */
static int expand_program(const runner_config *c, char *out, size_t cap)
{
    const char *t = c->argv[0];
    size_t n = 0;
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
        size_t l = (size_t)(e - p - 1);
        char v[128] = "";
        if (l == 4 && !strncmp(p + 1, "_dir", 4))
            return 0;
        if ((l == 4 && !strncmp(p + 1, "_run", 4)) || (l == 8 && !strncmp(p + 1, "_attempt", 8)))
            snprintf(v, sizeof(v), "1");
        for (size_t i = 0; i < c->n_params && !v[0]; i++) {
            const runner_param_spec *ps = &c->params[i];
            if (strlen(ps->p.name) != l || strncmp(p + 1, ps->p.name, l))
                continue;
            if (ps->is_fixed)
                snprintf(v, sizeof(v), "%s", ps->fixed_text);
            else if (runner_param_choice(ps, ps->p.center))
                snprintf(v, sizeof(v), "%s", runner_param_choice(ps, ps->p.center));
            else if (ps->p.is_integer)
                snprintf(v, sizeof(v), "%.0f", round(ps->p.center));
            else
                snprintf(v, sizeof(v), "%.17g", ps->p.center);
        }
        n += (size_t)snprintf(out + n, cap - n, "%s", v);
        if (n >= cap)
            n = cap - 1;
        p = e + 1;
    }
    out[n] = '\0';
    return 1;
}

/* 0 when `path` is an executable regular file; else an errno-like reason in *why. */
static int check_file(const char *path, const char **why)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        *why = "no such file";
        return -1;
    }
    if (S_ISDIR(sb.st_mode)) {
        *why = "a directory, not a program";
        return -1;
    }
    if (access(path, X_OK) != 0) {
        *why = errno == EACCES ? "not executable (permission denied: chmod +x?)" : strerror(errno);
        return -1;
    }
    return 0;
}

/* 0 when `path` is a directory the runs can enter; else a reason in *why. */
static int check_dir(const char *path, const char **why)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        *why = strerror(errno);
        return -1;
    }
    if (!S_ISDIR(sb.st_mode)) {
        *why = "not a directory";
        return -1;
    }
    if (access(path, X_OK) != 0) {
        *why = strerror(errno);
        return -1;
    }
    return 0;
}

/* The PATH the program will be looked up in. */
static const char *lookup_path(const runner_config *c)
{
    for (size_t i = 0; i < c->n_env; i++)
        if (!strncmp(c->env[i], "PATH=", 5) && !strchr(c->env[i], '{'))
            return c->env[i] + 5;
    const char *p = getenv("PATH");
    return p ? p : "/usr/local/bin:/usr/bin:/bin";
}

/* 0 when found on PATH. */
static int on_path(const char *prog, const char *path)
{
    char buf[8400];
    for (const char *p = path; p;) {
        const char *e = strchr(p, ':');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        snprintf(buf, sizeof(buf), "%.*s/%s", (int)l, l ? p : ".", prog);
        const char *why;
        if (check_file(buf, &why) == 0)
            return 0;
        p = e ? e + 1 : NULL;
    }
    return -1;
}

/* The 1-based line of the sweep file's top-level `key:` (with its colon), or 0. */
static int key_line(const char *text, const char *key)
{
    int line = 1;
    size_t l = strlen(key);
    for (const char *p = text; p && *p; line++) {
        if (!strncmp(p, key, l))
            return line;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return 0;
}

int sweep_preflight(const runner_config *c, const char *file)
{
    if (!c->argc) {
        cli_error("add a command to launch it, or record it with 'scaletune sweep create' "
                  "and drive it with 'scaletune sweep ask'/'tell'",
                  "%s: the sweep has no command: there is nothing to launch", file);
        return 1;
    }
    if (c->backend != RUNNER_BACKEND_LOCAL)
        return 0;
    char prog[4096], where[4200];
    const char *why = NULL;
    int line = key_line(c->text, "workdir:");
    if (line)
        snprintf(where, sizeof(where), "%s:%d", file, line);
    else
        snprintf(where, sizeof(where), "%s", file);
    if (c->workdir && check_dir(c->workdir, &why) != 0) {
        cli_error("a relative workdir is resolved against the directory holding the sweep file",
                  "%s: workdir: cannot enter '%s': %s", where, c->workdir, why);
        return 1;
    }
    if (!expand_program(c, prog, sizeof(prog)))
        return 0;
    line = key_line(c->text, "command:");
    if (line)
        snprintf(where, sizeof(where), "%s:%d", file, line);
    else
        snprintf(where, sizeof(where), "%s", file);
    if (strchr(prog, '/')) {
        char full[8400];
        if (prog[0] != '/' && c->workdir)
            snprintf(full, sizeof(full), "%s/%s", c->workdir, prog);
        else
            snprintf(full, sizeof(full), "%s", prog);
        if (check_file(full, &why) == 0)
            return 0;
        char cwd[2048] = "?";
        if (!getcwd(cwd, sizeof(cwd)))
            snprintf(cwd, sizeof(cwd), "?");
        cli_error(prog[0] == '/' ? "fix the path in 'command'"
                  : c->workdir   ? "a relative path is resolved from 'workdir' (itself relative "
                                   "to the sweep file's directory)"
                                 : "a relative path is resolved from the directory the sweep is "
                                   "launched in: launch from there, or set 'workdir' (e.g. "
                                   "'workdir: ..', relative to the sweep file's directory)",
                  "%s: command: program '%s' cannot run: %s (resolved as %s%s%s)", where, prog, why,
                  prog[0] == '/' || c->workdir ? "" : cwd, prog[0] == '/' || c->workdir ? "" : "/",
                  full);
        return 1;
    }
    if (on_path(prog, lookup_path(c)) == 0)
        return 0;
    cli_error("give its path in 'command' (e.g. build/scaletune-train from the repository root), "
              "or put its directory on PATH",
              "%s: command: program '%s' not found on PATH", where, prog);
    return 1;
}
