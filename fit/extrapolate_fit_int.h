/*
 * extrapolate_fit_int.h — private to the model fit: the buffers of one fit (fit_work), shared by
 * extrapolate_model_fit.c (the stages) and extrapolate_hyper_fit.c (settling the hyperparameter
 * laws the runs cannot place), and the constants both use.
 */
#ifndef ST_FIT_EXTRAPOLATE_FIT_INT_H
#define ST_FIT_EXTRAPOLATE_FIT_INT_H

#include "fit/extrapolate_int.h"

/* Starts of the first fit: each hyper's optimum at the mean of the best START_BEST_Q of the runs
 * (by loss) and curvature START_CURV (extrapolate_model_fit.c says the rest). */
#define START_BEST_Q   0.2
#define START_CURV     0.01
/* Evaluations of L-BFGS of the polish and the refits. */
#define MAXEVAL_POLISH 5000
#define MAXEVAL_BOOT   2000 /* a bootstrap replicate's refit */

/* The runs' data and every buffer of the fit, allocated once before the first stage. The
 * boundary's arrays have PRIOR_BINS rows past the n runs for its prior pseudo-runs. */
typedef struct fit_work {
    size_t nh;                 /* row stride of bh: n_hp, at least 1 */
    double *lN, *lD, *ly;      /* n: ln N, ln D, ln loss (NAN if failed) */
    double *bh;                /* n × nh centred basic coordinates of the hypers */
    double *z;                 /* (n + PRIOR_BINS) × XP_NZ: the boundary's covariates */
    int *y;                    /* n + PRIOR_BINS: failed */
    double *key;               /* 2 per run: sort keys of the boundary's prior rows */
    double *sorted;            /* n: scratch sorted for quantiles (the starts, the flat restarts) */
    size_t *ok_rows, *rows;    /* n: usable runs; a bootstrap resample of them */
    size_t *lg_rows, *lg_boot; /* n + PRIOR_BINS: the boundary's rows; a resample of them */
    size_t n_okr;              /* usable runs (succeeded, ln N and ln D known, loss > 0) */
    /* curve points (extrapolate_curves.c): rows n .. n + n_cp - 1 of lN, lD, ly, bh */
    double *wt;       /* n + n_cp: weight of each row's squared residual */
    size_t *fq;       /* (n + n_cp) × n_fac: each row's level slots (xp_jm_data.fq) */
    int *usable;      /* n: run i is one of ok_rows */
    size_t *fit_rows; /* the point fit's rows: ok_rows, then the curve points of usable runs */
    size_t n_fit;
    size_t n_lgr, n_lg_real; /* the boundary's rows, of which runs (the rest prior rows) */
    double lN_span, lD_span; /* of the usable runs */
} fit_work;

/* Restarts of each hyper law the fit th left flat (no bowl in the runs) with its optimum at the
 * edges of what the runs tried; th becomes the best fit if one beats f. Returns the best. */
double xp_hyper_flat_restarts(const fit_xp *xp, fit_work *w, xp_jm_data *d, double *th, double f);
/* Each hyper law whose bowl no run lies in is held flat (d->curv_cap) and the rest refitted. */
void xp_hyper_spikes_flatten(const fit_xp *xp, fit_work *w, xp_jm_data *d, double *th);
/* A bootstrap replicate th (objective f) whose law of a hyper is a spike (the point fit has none):
 * refitted with that bowl's curvature and saturation held at the point fit's. Returns the
 * objective. */
double xp_hyper_spikes_hold(const fit_xp *xp, fit_work *w, xp_jm_data *d, double *th, double f);
/* The optimum of each flat hyper law of th placed at the best runs among rows[0..nr). */
void xp_hyper_flat_anchor(const fit_xp *xp, fit_work *w, const size_t *rows, size_t nr, double *th);
/* A warning (FIT_XP_WARN_FLAT) for each flat hyper law of the point fit th. */
void xp_hyper_flat_warn(fit_xp *xp, const fit_work *w, const double *th);

#endif
