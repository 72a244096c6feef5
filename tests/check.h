/*
 * check.h — the whole test framework (after Redis' testhelp.h and GSL's gsl_test_rel).
 * CHECK* macros count and report failures with file:line and got/want; check_summary() prints
 * "<name>: N passed, N failed" and returns the exit status (1 on any failure).
 * Header-only, static state per test binary (test code, not library code).
 */
#ifndef ST_CHECK_H
#define ST_CHECK_H

#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_n_pass, check_n_fail;

static inline void check_report(int ok, const char *file, int line, const char *what)
{
    if (ok) {
        check_n_pass++;
    } else {
        check_n_fail++;
        fprintf(stderr, "FAIL %s:%d: %s\n", file, line, what);
    }
}

#define CHECK(cond) check_report(!!(cond), __FILE__, __LINE__, #cond)

#define CHECK_REL(got, want, rtol)                                                                 \
    do {                                                                                           \
        double g_ = (double)(got), w_ = (double)(want), t_ = (double)(rtol);                       \
        int ok_ = isfinite(g_) && fabs(g_ - w_) <= t_ * fabs(w_);                                  \
        if (!ok_)                                                                                  \
            fprintf(stderr, "  got %.17g want %.17g (rel err %.3g > %.3g)\n", g_, w_,              \
                    fabs(g_ - w_) / fabs(w_), t_);                                                 \
        check_report(ok_, __FILE__, __LINE__, "CHECK_REL(" #got ", " #want ")");                   \
    } while (0)

#define CHECK_ABS(got, want, atol)                                                                 \
    do {                                                                                           \
        double g_ = (double)(got), w_ = (double)(want), t_ = (double)(atol);                       \
        int ok_ = isfinite(g_) && fabs(g_ - w_) <= t_;                                             \
        if (!ok_)                                                                                  \
            fprintf(stderr, "  got %.17g want %.17g (abs err %.3g > %.3g)\n", g_, w_,              \
                    fabs(g_ - w_), t_);                                                            \
        check_report(ok_, __FILE__, __LINE__, "CHECK_ABS(" #got ", " #want ")");                   \
    } while (0)

/* Status equality with the library's message on mismatch. */
#define CHECK_ST(got, want)                                                                        \
    do {                                                                                           \
        int g_ = (int)(got), w_ = (int)(want);                                                     \
        if (g_ != w_)                                                                              \
            fprintf(stderr, "  got status %d want %d\n", g_, w_);                                  \
        check_report(g_ == w_, __FILE__, __LINE__, "CHECK_ST(" #got ", " #want ")");               \
    } while (0)

/* out (n bytes) = the folder of the test binary argv0, absolute, then "/" rel: where a test
 * finds what the build put beside it, e.g. rel "../../scaletune" from build/tests/study/. */
static inline void check_build_path(const char *argv0, const char *rel, char *out, size_t n)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", argv0);
    char *abs = realpath(dirname(tmp), NULL);
    snprintf(out, n, "%s/%s", abs ? abs : ".", rel);
    free(abs);
}

static inline int check_summary(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, check_n_pass, check_n_fail);
    return check_n_fail ? 1 : 0;
}

#endif
