/*
 * report.h — scaletune's sweep report, the manual.
 *
 * From one sweep in the runner's SQLite store, builds a self-contained HTML page (inline CSS and
 * SVG figures drawn by PLplot's "svg" device; nothing fetched from a network) and the same
 * numbers as JSON, CSV and Markdown: the runs, the Pareto front of objective against cost, the
 * loss-against-cost law with its bootstrap band, each searched parameter against cost along the
 * front with its law (on ln cost) and band, the loss curves of the Pareto runs, predicted
 * against actual for runs beyond the fit, failures and retries over time, and the
 * recommendation at a target compute with intervals, predicted objective and P(diverge).
 * Every fitted number comes from the extrapolation engine, fit/extrapolate.h.
 *
 * Not here: fitting and extrapolation (fit/, fit/extrapolate.h), running sweeps (runner/).
 * Depends on runner/ (store API, export), fit/, GSL, jansson, SQLite (read-only, for the
 * metric points the store API does not export) and PLplot.
 *
 * Conventions (as runner.h):
 *  - Functions that can fail return st_status; the handle keeps a message (report_errmsg).
 *    report_create takes `errmsg` (ST_ERRMSG_MAX bytes, may be NULL).
 *  - The library copies what it keeps; *_dup results are freed by the caller with st_free().
 *  - Files are written atomically: a temporary file in the same directory, then rename(2).
 *  - Thread-safety: a handle is used by one thread at a time. PLplot keeps process-wide state,
 *    so report_html_dup / report_write_html must not run while another thread uses PLplot.
 */
#ifndef REPORT_H
#define REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "common/st.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct report report;

typedef struct report_options {
    /* Target compute for the recommendation, in the sweep's cost units (> 0). Default 0: ten
     * times the largest cost of a finished run. */
    double target_compute;
    /* Runs with cost above this are "beyond the fit": left out of every fit and shown as
     * predicted against actual. Default +inf (every run is fitted). */
    double fit_max_cost;
    /* Another sweep in the same store whose runs are all beyond the fit (e.g. the large run
     * trained with the recommendation); NULL for none. Copied. */
    const char *validate_sweep;
    size_t n_boot;     /* bootstrap replicates for the bands, default 200 (0: no bands) */
    uint64_t seed;     /* bootstrap seed, default 42 */
    double band_level; /* central probability of the bands, default 0.9 */
    const char *title; /* page title; NULL: "scaletune report: <sweep>". Copied. */
    /* Method of the recommendation (fit/extrapolate.h's fit_xp_method): 0 auto (default: the
     * model of every run when model size, tokens and a learning rate are known, else the front
     * laws), 1 front (CARBS' laws along the Pareto front), 2 model. */
    int method;
    /* The prediction the validation run is held to, written before it ran (`scaletune
     * extrapolate`'s predicted objective and interval): when finite, the costliest succeeded run
     * of the validation sweep is compared with it instead of with the model at its own settings.
     * Default NAN (none). */
    double expect_objective, expect_lo, expect_hi;
    /* The engine's prior on the law's irreducible loss (fit/extrapolate.h's prior_e and
     * prior_e_sd): default NAN and 0, none; give extrapolate's values for the same law. */
    double prior_e, prior_e_sd;
    double far_weight; /* the engine's far_weight (fit/extrapolate.h), default 0 */
} report_options;

/* The defaults above. */
report_options report_options_default(void);

/*
 * Reads sweep `sweep` (NULL: the only one) from the store at `db_path` and runs the
 * extrapolation engine on its fitted runs (succeeded, or failed for their hyperparameters; not
 * beyond the fit). o may be NULL (defaults). A sweep the engine cannot use (fewer than 3
 * finished runs) still gives a (mostly empty) report that says why.
 * Returns ST_OK, ST_EINVAL (NULL path, bad option), ST_ENOTFOUND (no such sweep, or no such
 * validation sweep), ST_EDB (not a store, unreadable), ST_ENOMEM. On failure *out is NULL and
 * errmsg says why.
 */
st_status report_create(const char *db_path, const char *sweep, const report_options *o,
                        report **out, char *errmsg);
/* NULL is a no-op. */
void report_destroy(report *r);
/* Message of the last failing call on r, or ""; owned by r. */
const char *report_errmsg(const report *r);

/* Counts: runs in the sweep (validation runs excluded), runs on the Pareto front, runs beyond
 * the fit, and the figures report_html_dup draws. */
size_t report_n_runs(const report *r);
size_t report_n_pareto(const report *r);
size_t report_n_beyond(const report *r);
size_t report_n_figures(const report *r);

/* The validation: the costliest succeeded run beyond the fit against its prediction. */
typedef struct report_validation_info {
    int64_t run;                /* its id */
    const char *objective;      /* the objective's metric name (owned by the report) */
    double actual;              /* its objective */
    double predicted, lo, hi;   /* the prediction and its interval (NAN without a band) */
    double cost;                /* its cost */
    double largest_fitted_cost; /* the costliest fitted, finished run's cost */
    int expected; /* 1: the prediction is report_options.expect_*, 0: the model's (or the front
                     law's) at the run's own settings */
} report_validation_info;
/* 1 and *v filled when the report has a validation, else 0. */
int report_validation(const report *r, report_validation_info *v);

/*
 * The documents as NUL-terminated strings, freed with st_free(): the HTML page; JSON (an
 * object with "sweep", "objective", "goal", "cost_metric", "runs", "pareto", "fits",
 * "recommendation" and, when a run lies beyond the fit, "validation": {actual, predicted, lo,
 * hi} for the largest of them; docs/cli/report.md lists the fields); CSV (header
 * "id,status,<parameters...>,objective,cost,attempts", one row per run, empty cells for missing
 * numbers); Markdown (summary tables). Returns ST_OK, ST_ENOMEM, ST_EINTERNAL (the plotting library
 * failed).
 */
st_status report_html_dup(report *r, char **out);
st_status report_json_dup(report *r, char **out);
st_status report_csv_dup(report *r, char **out);
st_status report_md_dup(report *r, char **out);

/* The same written atomically to `path`. Returns the statuses above and ST_EIO (the directory
 * is missing or not writable, or the write failed; errmsg names the path). */
st_status report_write_html(report *r, const char *path);
st_status report_write_json(report *r, const char *path);
st_status report_write_csv(report *r, const char *path);
st_status report_write_md(report *r, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* REPORT_H */
