/*
 * test_python_run.c — runs the Python binding's tests (tests/python/test_*.py, unittest, with
 * Debian's python3) from `make test` and reports through check.h: one check per Python test,
 * "python: N passed, N failed". Prints SKIP and passes when no python3 is installed.
 * The library and programs come from PY_BUILD_DIR (the Makefile's $(BUILD)); in sanitizer builds
 * PY_PRELOAD names the sanitizer runtimes that python3 must load first (LD_PRELOAD).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check.h"

#ifndef PY_BUILD_DIR
#define PY_BUILD_DIR "build"
#endif

/* The interpreter: $PYTHON (NULL if that is not executable), else Debian's /usr/bin/python3,
 * else python3 on PATH; NULL if none. */
static const char *find_python(char *buf, size_t n)
{
    const char *env = getenv("PYTHON");
    if (env && *env)
        return access(env, X_OK) == 0 ? env : NULL;
    if (access("/usr/bin/python3", X_OK) == 0)
        return "/usr/bin/python3";
    FILE *p = popen("command -v python3 2>/dev/null", "r");
    if (!p)
        return NULL;
    const char *r = fgets(buf, (int)n, p) ? buf : NULL;
    pclose(p);
    if (r)
        buf[strcspn(buf, "\n")] = 0;
    return r && *r ? r : NULL;
}

/* Sets name=dir/rel (absolute) in the environment. */
static void set_abs(const char *name, const char *rel, const char *prefix_old)
{
    char path[PATH_MAX], val[3 * PATH_MAX];
    if (!realpath(rel, path))
        snprintf(path, sizeof path, "%s", rel);
    const char *old = prefix_old ? getenv(prefix_old) : NULL;
    if (old && *old)
        snprintf(val, sizeof val, "%s:%s", path, old);
    else
        snprintf(val, sizeof val, "%s", path);
    setenv(name, val, 1);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

int main(void)
{
    char pybuf[PATH_MAX];
    const char *py = find_python(pybuf, sizeof pybuf);
    if (!py) {
        printf("SKIP python: no python3 found (install Debian's python3)\n");
        return check_summary("python");
    }
    if (access("tests/python", R_OK) != 0) {
        fprintf(stderr, "run from the repository root (tests/python not found)\n");
        CHECK(0);
        return check_summary("python");
    }
    set_abs("SCALETUNE_LIB", PY_BUILD_DIR "/libscaletune.so", NULL);
    set_abs("SCALETUNE_BUILD", PY_BUILD_DIR, NULL);
    set_abs("PYTHONPATH", "bindings/python", "PYTHONPATH");
    setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
#ifdef PY_PRELOAD
    /* python3 is not instrumented: the sanitizer runtimes must come first, leaks of the
     * interpreter itself are not ours */
    setenv("SCALETUNE_PRELOAD", PY_PRELOAD, 1);
    setenv("LD_PRELOAD", PY_PRELOAD, 1);
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
#endif

    char cmd[2 * PATH_MAX];
    snprintf(cmd, sizeof cmd,
             "'%s' -m unittest discover -s tests/python -t tests/python -p 'test_*.py' -v 2>&1",
             py);
    FILE *p = popen(cmd, "r");
    if (!p) {
        fprintf(stderr, "cannot run %s\n", py);
        CHECK(0);
        return check_summary("python");
    }
    /* verbose unittest: "test_x (module.Class.test_x) ... ok|FAIL|ERROR|skipped 'why'" */
    static char line[8192];
    char *log = NULL;
    size_t log_len = 0;
    int n_fail_lines = 0, n_skipped = 0;
    while (fgets(line, sizeof line, p)) {
        size_t len = strlen(line);
        char *nl = realloc(log, log_len + len + 1);
        if (nl) {
            log = nl;
            memcpy(log + log_len, line, len + 1);
            log_len += len;
        }
        line[strcspn(line, "\n")] = 0;
        const char *dots = strstr(line, " ... ");
        if (!dots)
            continue;
        const char *res = dots + 5;
        if (!strcmp(res, "ok")) {
            CHECK(1);
        } else if (!strcmp(res, "FAIL") || !strcmp(res, "ERROR") ||
                   !strcmp(res, "unexpected success")) {
            check_report(0, "python", 0, line); /* "FAIL python:0: test_x (...) ... FAIL" */
            n_fail_lines++;
        } else if (!strncmp(res, "skipped", 7)) {
            if (n_skipped++ < 3)
                printf("SKIP python %.*s: %s\n", (int)(dots - line), line, res);
        } else if (ends_with(res, "expected failure")) {
            CHECK(1);
        }
    }
    int rc = pclose(p);
    if (rc != 0) {
        /* the details (tracebacks) follow the per-test lines */
        const char *tb = log ? strstr(log, "\n====") : NULL;
        fprintf(stderr, "%s\n", tb ? tb : (log ? log : "(no output)"));
        if (n_fail_lines == 0) {
            fprintf(stderr, "python3 unittest exited with status %d\n", rc);
            CHECK(0);
        }
    }
    if (n_skipped > 3)
        printf("SKIP python: %d tests skipped in all\n", n_skipped);
    free(log);
    return check_summary("python");
}
