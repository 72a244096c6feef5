/*
 * fit_int.h — private to fit/: the law strategy struct, the fitting problem shared read-only by
 * worker threads, the objective kernel, the thread pool and the NLopt wrapper.
 * Not a public API: the CLI and other modules use fit/fit.h only.
 */
#ifndef FIT_INT_H
#define FIT_INT_H

#include "fit/fit.h"

#include <nlopt.h>

/* what this header declares is internal: hidden from libscaletune.so's exports (the static
 * library and the tests still link it); common/scaletune.map exports the public API */
#pragma GCC visibility push(hidden)

#define FIT_MAX_PAR 16 /* largest n_params of any law, plus log sigma */

typedef struct fit_prob fit_prob;

struct fit_law {
    const char *name;
    size_t n_par, n_in;
    const char *const *par_names; /* theta names */
    const char *const *nat_names; /* natural names */
    const char *const *in_names;  /* input names */
    const unsigned char *is_log;  /* natural[i] = exp(theta[i]) when set */
    /* log y at inputs x (n_in) with logs lx (n_in); g (n_par) = d log y / d theta or NULL */
    double (*eval)(const double *th, const double *x, const double *lx, double *g);
    const double *const *grid; /* per theta: candidate start values */
    const size_t *grid_len;    /* per theta: number of candidates */
    int chinchilla_like;       /* natural[0..4] are (A, B, E, alpha, beta) */
    /* NULL, or a fused kernel for the summed (or averaged) Huber loss on log residuals, the
     * grid fit's hot path: the same value and gradient as the generic loop in fit_prob_eval */
    double (*huber_log)(const struct fit_prob *p, const double *th, double *g);
};

/* Read-only problem: data plus objective settings. */
struct fit_prob {
    const fit_law *law;
    size_t n;
    const double *x, *lx; /* n × n_in, inputs and their logs */
    const double *lxt;    /* n_in × n, the logs by column (contiguous loads), or NULL */
    const double *y, *ly; /* n, targets and their logs */
    const double *w;      /* n weights */
    const size_t *idx;    /* NULL, or n row indices (a bootstrap resample) */
    fit_objective obj;
    double delta;
    int linear, mean;
    double log_z; /* log Z(delta) for the Huber likelihood */
};

/* law.c's huber_log for the Chinchilla law (huber_lse.c): the summed Huber loss on log
 * residuals at theta (5) and its gradient g (5, or NULL), 4 rows at a time. */
double fit_chin_huber_log(const fit_prob *p, const double *th, double *g);
/* Objective at theta (n_par, + log sigma for FIT_OBJ_HUBER_LIK); g the same size or NULL. */
double fit_prob_eval(const fit_prob *p, const double *th, double *g);
/* log Z(delta) = log(sqrt(2 pi) (1 - 2 Q(delta)) + 2 exp(-delta^2/2)/delta) (Epoch). */
double fit_huber_log_z(double delta);
/* Starting log sigma for the Huber likelihood from the residuals at theta. */
double fit_prob_sigma_start(const fit_prob *p, const double *th);

/* One local minimisation with NLopt LD_LBFGS over the free coordinates. */
typedef struct fit_local {
    nlopt_opt opt;
    const fit_prob *prob;
    size_t n_full, n_free;
    const double *fixed; /* n_full: NAN = free, else held value */
    size_t free_idx[FIT_MAX_PAR];
    double full[FIT_MAX_PAR], gfull[FIT_MAX_PAR];
    size_t n_evals;
} fit_local;

/* Creates the NLopt object for n_full coordinates of which those with fixed[i] == NAN are
 * free (fixed may be NULL). ST_ENOMEM on failure. */
st_status fit_local_init(fit_local *L, const fit_prob *p, size_t n_full, const double *fixed,
                         double ftol_rel, double xtol_rel, size_t max_eval);
void fit_local_clear(fit_local *L);
/* Minimises from x (n_full, updated in place); returns the NLopt code, *fval the objective. */
int fit_local_run(fit_local *L, double *x, double *fval);

/* Runs job(ctx, worker, item) for item = 0..n_items-1 on up to n_threads threads (worker <
 * n_threads). If a thread cannot start, its share runs on the others; returns ST_ENOMEM only
 * when the bookkeeping cannot be allocated. */
st_status fit_pool_run(size_t n_threads, size_t n_items, void (*job)(void *, size_t, size_t),
                       void *ctx);
size_t fit_default_threads(void);

/* Sorts v (n) ascending. */
void fit_sort_doubles(double *v, size_t n);
/* Percentile (linear interpolation, type 7) of sorted v (n > 0) at q in [0, 1]. */
double fit_quantile_sorted(const double *v, size_t n, double q);

/* Internal access to a handle (fit.c): its problem for objective obj, its fixed values
 * (n_par, NAN = free), its number of points, its error buffer. */
void fit_int_prob(const fit *f, fit_objective obj, fit_prob *p);
const double *fit_int_fixed(const fit *f);
size_t fit_int_n(const fit *f);
char *fit_int_err(fit *f);

#pragma GCC visibility pop

#endif /* FIT_INT_H */
