/*
 * report_int.h — interfaces between the files of report/ (not installed, not public).
 *   load.c     reads a sweep through the runner's typed read (runs, attempts, the stored sweep
 *              file) and the step records of the Pareto runs
 *   analyze.c  runs the study of the sweep (study/study.h: the input policy and the engine)
 *              and reads back the front, the laws, bands, recommendation and predictions
 *              beyond the fit
 *   plot.c     PLplot "svg" device into memory: figure set-up, axes, bands, legends
 *   html.c     the HTML page (figures + tables)
 *   export.c   JSON, CSV, Markdown and the atomic file writer; the public handle functions
 */
#ifndef REPORT_INT_H
#define REPORT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "fit/extrapolate.h"
#include "report/report.h"
#include "runner/largerun.h"
#include "runner/runner.h"
#include "study/study.h"

/* what this header declares is internal: hidden from libscaletune.so's exports (the static
 * library and the tests still link it); common/scaletune.map exports the public API */
#pragma GCC visibility push(hidden)

/* Points on the law grids (log-spaced in cost). */
#define RP_GRID 64

/* One run of the sweep (or of the validation sweep). */
#define RP_ENV 10 /* points of a validation run's predicted curve (rp_run.env_*) */

typedef struct rp_run {
    int64_t id;
    char *status;           /* "succeeded", "failed", ... */
    char *failure;          /* "none", "diverged", ... */
    double *x;              /* n_params values; NAN for a fixed non-numeric parameter */
    double objective, cost; /* NAN when not recorded */
    double N, D;            /* model size and tokens of the final record (NAN when absent) */
    size_t n_attempts;
    int succeeded;  /* status "succeeded" with finite objective and cost > 0 */
    int on_front;   /* on the Pareto front of the fitted runs */
    int beyond;     /* left out of the fits (cost above fit_max_cost, or validation sweep) */
    int validation; /* from the validation sweep */
    int64_t branch; /* a cooldown branch: its parent's id (never `succeeded`: not a run of its
                       own; the loss curves draw it on its parent's, rp_curve) */
    /* beyond runs: the engine's prediction (the model at the run's settings, else the front's
     * law at its cost); NAN if none. pred_p: P(diverge) (model only). */
    double pred, pred_lo, pred_hi, pred_p;
    /* a validation run predicted by the model: the model at its settings and model size with
     * fewer tokens, env_f[k] x its own (the loss its setting would reach cooled down there, as
     * a cooldown branch measures it), with the interval */
    size_t n_env;
    double env_f[RP_ENV], env_y[RP_ENV], env_lo[RP_ENV], env_hi[RP_ENV];
} rp_run;

/* One attempt, for failures and retries over time. */
typedef struct rp_attempt {
    int64_t run;
    int number;
    double started, ended; /* epoch seconds; ended NAN while running */
    int kind;              /* 0 success, 1 hyperparameter failure, 2 infrastructure failure,
                              3 unfinished or stopped */
} rp_attempt;

/* The training curve of one Pareto or validation run (its last attempt's step records). */
#define RP_MAX_BRANCHES 16 /* branches drawn per run (the sweep file allows 16 fractions) */

typedef struct rp_curve {
    int64_t run;
    size_t n;
    double *x; /* cost metric at the step when every record has it, else the step */
    double *y; /* "loss" of the step record */
    int x_is_cost;
    size_t val_run; /* 0 for a Pareto run; for a validation run, 1 + its index in runs */
    /* a validation run: its curve predicted from its own early points (load.c): at n_pred of
     * its records (x as above) the law's loss with its interval; pred_law "Tissue" (the step
     * records carry the lr: the law of Tissue et al. 2024 under it) or "power" (in steps) */
    size_t n_pred;
    double *pred_x, *pred_y, *pred_lo, *pred_hi; /* one block, pred_x owns it */
    const char *pred_law;
    double pred_from; /* the last step of the points it was fitted on */
    /* a Pareto run's succeeded cooldown branches (docs/config.md, "Cooldown branches"): each
     * its objective at its own tokens, placed at x_last x its tokens / the run's */
    size_t n_br;
    double br_x[RP_MAX_BRANCHES], br_y[RP_MAX_BRANCHES];
} rp_curve;

/* A law y(C) on a log-spaced grid of cost, with its pointwise bootstrap band. */
typedef struct rp_curve_band {
    int ok;
    double c[RP_GRID], y[RP_GRID], lo[RP_GRID], hi[RP_GRID]; /* lo/hi NAN without a band */
} rp_curve_band;

/* A searched parameter along the front (fit/extrapolate.h, CARBS' analysis): basic coordinate
 * b = b0 + b1 ln C, b = ln v for log spaces, ln(v / (1 - v)) for logit, v for linear. */
typedef struct rp_hp {
    size_t param; /* index into the parameter list */
    size_t xi;    /* index into the engine's parameters */
    int space;    /* carbs_space_kind */
    int ok;
    double b0, b1, b1_lo, b1_hi; /* OLS coefficients, group-bootstrap interval of the slope */
    rp_curve_band law;           /* in parameter units */
    double at_target, lo, hi;    /* front law at the target compute with the band */
    double rec, rec_lo, rec_hi;  /* the engine's recommendation with its interval */
} rp_hp;

struct report {
    char errmsg[ST_ERRMSG_MAX];
    report_options o;
    char *title, *validate_sweep;
    char *sweep, *objective, *goal, *cost_metric;
    int maximize;
    char *db_path;

    size_t n_params;
    char **pnames;
    int *pspace; /* carbs_space_kind, -1 for fixed parameters */

    rp_run *runs; /* n_sweep_runs of the sweep, then the validation sweep's */
    size_t n_runs, n_sweep_runs;
    size_t *front; /* indices into runs, increasing cost */
    size_t n_front;
    rp_attempt *att;
    size_t n_att;
    rp_curve *curves; /* the Pareto runs' (n_front), then the validation runs' */
    size_t n_curves;

    double target;                /* compute of the recommendation */
    double cost_lo, cost_hi;      /* range of the fitted, finished runs' cost */
    double *pmin, *pmax, *pround; /* bounds and rounding of each parameter (sweep file) */
    int *pint;                    /* integer parameter */

    runner_sweep *sw, *vsw;   /* the sweep and the validation sweep as read from the store */
    runner_alert *val_alerts; /* the validation sweep's alerts (scaletune run's watch) */
    size_t n_val_alerts;
    study *st; /* the study of sw (its engine is xp) */
    /* the extrapolation engine, borrowed from st (NULL when it could not run: xp_note says
     * why) */
    const fit_xp *xp;
    size_t *xp_run; /* engine run k is runs[xp_run[k]] */
    size_t n_xp_runs;
    char xp_note[ST_ERRMSG_MAX];
    double *front_cost, *front_obj; /* per front group: mean cost and objective */
    size_t *front_count;            /* runs in the group */

    double loss_nat[3]; /* A, alpha, E of y = E + A C^-alpha (C in cost units) */
    rp_curve_band loss_law;
    double loss_at, loss_at_lo, loss_at_hi; /* the law at the target with its band */
    char loss_note[160];                    /* why there is no loss law, or "" */
    rp_hp *hp;
    size_t n_hp;
    fit_xp_result res;              /* the recommendation (valid when xp != NULL) */
    double rec_obj, rec_lo, rec_hi; /* predicted objective at the target */
    double p_diverge;               /* NAN when the method does not estimate it */
    const char *rec_source;         /* static text */
    int has_validation;
    double val_actual, val_pred, val_lo, val_hi;
    int val_expected; /* the validation holds the run to o.expect_* (written before it ran) */
    int64_t val_run;
    size_t n_figures;
};

/* load.c: fills the data fields from the store. ST_OK, ST_ENOTFOUND, ST_EDB, ST_ENOMEM. */
st_status rp_load(report *r, const char *db_path, const char *sweep);
/* analyze.c: front, laws, bands, beyond-fit predictions, recommendation. ST_OK, ST_ENOMEM. */
st_status rp_analyze(report *r);

/* plot.c: one figure drawn into memory as SVG (without XML prologue or DOCTYPE). */
typedef struct rp_fig rp_fig;
/* Starts a figure of w × h points: x and y ranges (already log10 for log axes), log flags
 * (label the axes as powers of ten), labels. ST_OK, ST_ENOMEM. */
st_status rp_fig_begin(rp_fig **out, int w, int h, double xmin, double xmax, double ymin,
                       double ymax, int xlog, int ylog, const char *xlabel, const char *ylabel,
                       const char *title);
/* Colour i of the palette (0 black, 1 grey, 2.. distinct colours). */
void rp_fig_line(rp_fig *f, size_t n, const double *x, const double *y, int colour, double width,
                 int dashed);
void rp_fig_points(rp_fig *f, size_t n, const double *x, const double *y, int colour, int glyph,
                   double size);
/* A filled band between lo and hi (n points each over x), translucent. Skips NAN points. */
void rp_fig_band(rp_fig *f, size_t n, const double *x, const double *lo, const double *hi,
                 int colour);
/* Error bars: vertical (dir 0) from lo to hi at x, or horizontal (dir 1) at y. */
void rp_fig_errbars(rp_fig *f, size_t n, const double *at, const double *lo, const double *hi,
                    int colour, int dir);
/* Adds a legend entry (drawn at rp_fig_end): a line (glyph < 0) or a glyph, or a band. */
void rp_fig_legend(rp_fig *f, const char *text, int colour, int glyph, int line, int band);
/* Writes a note in the middle of the plot area (e.g. "no data"). */
void rp_fig_note(rp_fig *f, const char *text);
/* Finishes; *svg (malloc'd, NUL-terminated) is the <svg ...>...</svg> element. Frees f.
 * ST_OK, ST_ENOMEM, ST_EINTERNAL. */
st_status rp_fig_end(rp_fig *f, char **svg);

/* html.c */
st_status rp_html(report *r, char **out);

/* A growing string (export.c). */
typedef struct rp_buf {
    char *p;
    size_t n, cap;
    int oom;
} rp_buf;
void rp_buf_add(rp_buf *b, const char *s);
void rp_buf_addf(rp_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Appends s with & < > " escaped. */
void rp_buf_html(rp_buf *b, const char *s);
/* A number as text: "%.6g", or "" / "–" for NAN (empty non-zero: dash). */
void rp_fmt(char *buf, size_t cap, double v, int dash);
/* A number as a person reads it: 1.85M, 300G, 12k (3 significant digits, SI suffixes from 1e4
 * to 1e18), else 4 significant digits; "–" when not finite. */
void rp_fmt_human(char *buf, size_t cap, double v);
/* A recommended value v of parameter h: a categorical's level name, "inactive" for a
 * conditional parameter the recommended level leaves out (NAN), else rp_fmt_human. */
void rp_fmt_rec(const report *r, const rp_hp *h, double v, char *buf, size_t cap);
/* A probability as a person reads it: "5.0%", "< 0.1%", "unknown" for NAN. */
void rp_fmt_percent(char *buf, size_t cap, double p);
/* 1 when the engine's recommendation is its model of every run (the one prediction at the
 * target), 0 when it is the Pareto front law (CARBS' analysis) or there is none. */
int rp_model_method(const report *r);
/* Appends " (backtest: median error ...)" for the front law when the engine used it, else
 * says that the backtest is the model's. */
void rp_front_law_backtest(const report *r, rp_buf *b);
/* The recommendation in one sentence ("What to run: ..."; the settings, the compute, the
 * expected objective with its interval, P(diverge)); "" when there is none. */
void rp_what_to_run(const report *r, char *buf, size_t cap);

/* html_figs.c: appends the page's figures (each a <figure> with an inline SVG and its caption)
 * to b: objective against cost, each searched parameter along the front, the loss curves,
 * predicted against actual beyond the fit (when runs lie beyond it), failures over time. */
st_status rp_html_figures(report *r, rp_buf *b);

/* analyze.c: the method that gave the recommendation ("model", "front" or "none"). */
const char *rp_method_name(const report *r);

#pragma GCC visibility pop

#endif
