/*
 * study_int.h — interfaces between the files of study/ (not installed, not public).
 *   study.c       the input policy, the engine call, safety and what would resolve it
 *   study_safety.c  whether the recommendation is safe; which runs would resolve it if not
 *   study_backtest.c  the leave-largest-group-out backtest
 *   study_json.c  the result as JSON (written here only)
 */
#ifndef STUDY_INT_H
#define STUDY_INT_H

#include "study/study.h"

struct study {
    char errmsg[ST_ERRMSG_MAX];
    study_options o;
    const runner_sweep *w;
    runner_sweep *owned; /* study_open's read of the store, or NULL */
    study_counts counts;

    /* the engine's parameters: the searched ones of the sweep file, in file order */
    size_t P;
    size_t *pidx;      /* engine parameter j is w->cfg->params[pidx[j]] */
    fit_xp_param *par; /* spaces, roles, bounds of the recommendation */
    double *search_lo; /* the searched bounds (parameter units), for the warnings */
    double *search_hi;

    /* the runs given to the engine */
    size_t n;
    size_t *run_idx; /* engine run k is w->runs[run_idx[k]] */
    double *x, *cost, *obj, *N, *D;
    int *failed;

    fit_xp *xp; /* after a successful study_run */
    fit_xp_result res;
    double target;
    int safe;
    char unsafe_reason[ST_ERRMSG_MAX];
    char warn[ST_ERRMSG_MAX];
    study_backtest_result backtest;
};

/* study.c: appends "; "-separated text to s->warn. */
void study_add_warning(study *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* study_safety.c: whether the engine vouches for its recommendation; fills s->unsafe_reason
 * with why not and which small runs would resolve it. */
int study_judge_safety(study *s);

/* study_backtest.c: fills s->backtest (after the engine ran on every run). */
void study_backtest(study *s);

/* study.c: qsort's comparison of doubles; the model size N of engine run k (its N parameter
 * when the sweep has one, else its final record's N; NAN when unknown). */
int study_cmp_double(const void *a, const void *b);
double study_model_size(const study *s, size_t k);

#endif
