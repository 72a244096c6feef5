/*
 * html.c — the report page: one self-contained HTML5 file with inline CSS and inline SVG
 * figures (plot.c), no script, no font or image fetched from anywhere. Sections: summary,
 * recommendation, validation, figures (objective against cost with the front and the law;
 * each searched parameter along the front; loss curves of the Pareto runs; predicted against
 * actual beyond the fit; failures and retries over time), fits and the run table.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_int.h"

#define FIG_W   640
#define FIG_H   400
/* loss curves drawn in colour (the palette has 9 distinct colours) */
#define N_SHOWN 9

/* Colours (plot.c palette): 0 black, 1 grey, 2 blue, 3 orange, 4 green, 5 red, 6 purple. */
enum { C_BLACK = 0, C_GREY = 1, C_BLUE = 2, C_ORANGE = 3, C_GREEN = 4, C_RED = 5 };
/* Glyphs (plpoin codes): filled circle, open circle, cross, open square. */
enum { G_DOT = 17, G_CIRCLE = 4, G_CROSS = 5, G_SQUARE = 6 };

typedef struct range {
    double lo, hi;
} range;

static range range_empty(void)
{
    range g = {INFINITY, -INFINITY};
    return g;
}

static void range_add(range *g, double v)
{
    if (isfinite(v)) {
        if (v < g->lo)
            g->lo = v;
        if (v > g->hi)
            g->hi = v;
    }
}

/* Widened by `pad` of its width (and made non-empty). */
static void range_pad(range *g, double pad)
{
    if (!isfinite(g->lo) || !isfinite(g->hi)) {
        g->lo = 0, g->hi = 1;
        return;
    }
    double w = g->hi - g->lo;
    if (w <= 0)
        w = fabs(g->lo) > 0 ? fabs(g->lo) * 0.1 : 1;
    g->lo -= pad * w;
    g->hi += pad * w;
}

static double lg(double v)
{
    return v > 0 ? log10(v) : NAN;
}

static void caption(rp_buf *b, const char *svg, const char *text)
{
    rp_buf_add(b, "<figure>\n");
    rp_buf_add(b, svg);
    rp_buf_add(b, "\n<figcaption>");
    rp_buf_html(b, text);
    rp_buf_add(b, "</figcaption>\n</figure>\n");
}

/* Objective against cost: runs, the front, the law with its band, beyond-fit runs, target. */
static st_status fig_front(report *r, rp_buf *b)
{
    size_t n = r->n_runs;
    double *mem = malloc((6 * n + 6) * sizeof(double));
    if (!mem)
        return ST_ENOMEM;
    double *ax = mem, *ay = ax + n, *fx = ay + n, *fy = fx + n, *bx = fy + n, *by = bx + n;
    size_t na = 0, nb = 0;
    range X = range_empty(), Y = range_empty();
    for (size_t i = 0; i < n; i++) {
        const rp_run *u = &r->runs[i];
        if (!u->succeeded)
            continue;
        if (u->beyond)
            bx[nb] = lg(u->cost), by[nb++] = u->objective;
        else
            ax[na] = lg(u->cost), ay[na++] = u->objective;
        range_add(&X, lg(u->cost));
        range_add(&Y, u->objective);
    }
    for (size_t i = 0; i < r->n_front; i++) {
        fx[i] = lg(r->front_cost[i]);
        fy[i] = r->front_obj[i];
    }
    double lx[RP_GRID];
    int model = r->xp && r->res.method == FIT_XP_METHOD_MODEL;
    if (r->loss_law.ok) {
        range_add(&X, lg(r->target));
        for (size_t g = 0; g < RP_GRID; g++)
            lx[g] = lg(r->loss_law.c[g]);
        range_add(&Y, r->loss_at_lo);
        range_add(&Y, r->loss_at_hi);
        range_add(&Y, r->loss_at);
    }
    if (model) {
        range_add(&X, lg(r->target));
        range_add(&Y, r->rec_obj);
        range_add(&Y, r->rec_lo);
        range_add(&Y, r->rec_hi);
    }
    range_pad(&X, 0.06);
    range_pad(&Y, 0.06);
    char xl[200], yl[200];
    snprintf(xl, sizeof(xl), "%s (log scale)", r->cost_metric);
    snprintf(yl, sizeof(yl), "%s", r->objective);
    rp_fig *f = NULL;
    st_status rc = rp_fig_begin(&f, FIG_W, FIG_H, X.lo, X.hi, Y.lo, Y.hi, 1, 0, xl, yl,
                                "Objective against cost");
    if (rc) {
        free(mem);
        return rc;
    }
    if (r->loss_law.ok) {
        rp_fig_band(f, RP_GRID, lx, r->loss_law.lo, r->loss_law.hi, C_BLUE);
        rp_fig_line(f, RP_GRID, lx, r->loss_law.y, C_BLUE, 2, 0);
    }
    rp_fig_points(f, na, ax, ay, C_GREY, G_CIRCLE, 0.9);
    rp_fig_line(f, r->n_front, fx, fy, C_BLACK, 1.2, 0);
    rp_fig_points(f, r->n_front, fx, fy, C_BLACK, G_DOT, 1.1);
    rp_fig_points(f, nb, bx, by, C_RED, G_SQUARE, 1.3);
    /* one prediction at the target, the engine's: the front law's only when the engine used it */
    double tx = lg(r->target), ty = r->loss_at, tlo = r->loss_at_lo, thi = r->loss_at_hi;
    if (!model && r->loss_law.ok && isfinite(ty)) {
        rp_fig_errbars(f, 1, &tx, &tlo, &thi, C_ORANGE, 0);
        rp_fig_points(f, 1, &tx, &ty, C_ORANGE, G_DOT, 1.3);
    }
    double mx = tx, my = r->rec_obj, mlo = r->rec_lo, mhi = r->rec_hi;
    if (model && isfinite(my)) {
        rp_fig_errbars(f, 1, &mx, &mlo, &mhi, C_GREEN, 0);
        rp_fig_points(f, 1, &mx, &my, C_GREEN, G_DOT, 1.3);
    }
    rp_fig_legend(f, "runs", C_GREY, 1, 0, 0);
    rp_fig_legend(f, "Pareto front", C_BLACK, 0, 1, 0);
    if (r->loss_law.ok) {
        rp_fig_legend(f, "CARBS' analysis (Pareto front law)", C_BLUE, -1, 1, 0);
        char t[64];
        snprintf(t, sizeof(t), "%.0f%% band", 100 * r->o.band_level);
        rp_fig_legend(f, t, C_BLUE, -1, 0, 1);
        if (!model)
            rp_fig_legend(f, "prediction at target", C_ORANGE, 0, 0, 0);
    } else {
        rp_fig_note(f, r->xp ? r->loss_note : r->xp_note);
    }
    if (model && isfinite(my))
        rp_fig_legend(f, "prediction at target", C_GREEN, 0, 0, 0);
    if (nb)
        rp_fig_legend(f, "beyond the fit", C_RED, 3, 0, 0);
    char *svg = NULL;
    rc = rp_fig_end(f, &svg);
    free(mem);
    if (rc)
        return rc;
    char cap[640];
    int cn = 0;
    if (r->loss_law.ok)
        cn = snprintf(cap, sizeof(cap),
                      "Objective against cost. Black: the Pareto front (%zu groups of identical "
                      "settings); blue: CARBS' analysis (Pareto front law), the saturating law "
                      "y = E + A C^-alpha fitted to it with its %.0f%% bootstrap band%s",
                      r->n_front, 100 * r->o.band_level,
                      model ? "." : "; orange: the engine's prediction, that law at the target.");
    else
        cn = snprintf(cap, sizeof(cap), "Objective against cost; %s.",
                      r->xp ? r->loss_note : r->xp_note);
    if (model && isfinite(my) && cn > 0 && (size_t)cn < sizeof(cap))
        snprintf(cap + cn, sizeof(cap) - (size_t)cn,
                 " Green: the engine's prediction at the target, its model's objective for the "
                 "recommended settings with its interval (run noise included); the front law is "
                 "not a second prediction.");
    caption(b, svg, cap);
    free(svg);
    return ST_OK;
}

/* One searched parameter against cost: runs, front, law and band, value at the target. */
static st_status fig_hp(report *r, const rp_hp *h, rp_buf *b)
{
    size_t n = r->n_runs;
    int ylog = h->space == 1;
    double *mem = malloc((4 * n + RP_GRID * 4 + 4) * sizeof(double));
    if (!mem)
        return ST_ENOMEM;
    double *ax = mem, *ay = ax + n, *fx = ay + n, *fy = fx + n;
    double *lx = fy + n, *ly = lx + RP_GRID, *llo = ly + RP_GRID, *lhi = llo + RP_GRID;
    size_t na = 0, nf = 0;
    range X = range_empty(), Y = range_empty();
#define YV(v) (ylog ? lg(v) : (v))
    for (size_t i = 0; i < n; i++) {
        const rp_run *u = &r->runs[i];
        if (!u->succeeded || u->beyond)
            continue;
        ax[na] = lg(u->cost), ay[na++] = YV(u->x[h->param]);
        range_add(&X, lg(u->cost));
        range_add(&Y, YV(u->x[h->param]));
    }
    for (size_t i = 0; i < r->n_front; i++) {
        const rp_run *u = &r->runs[r->front[i]];
        fx[nf] = lg(r->front_cost[i]), fy[nf++] = YV(u->x[h->param]);
    }
    int model = r->xp && r->res.method == FIT_XP_METHOD_MODEL && isfinite(h->rec);
    if (model) {
        range_add(&X, lg(r->target));
        range_add(&Y, YV(h->rec));
        range_add(&Y, YV(h->rec_lo));
        range_add(&Y, YV(h->rec_hi));
    }
    if (h->ok) {
        for (size_t g = 0; g < RP_GRID; g++) {
            lx[g] = lg(h->law.c[g]);
            ly[g] = YV(h->law.y[g]);
            llo[g] = YV(h->law.lo[g]);
            lhi[g] = YV(h->law.hi[g]);
        }
        range_add(&X, lg(r->target));
        range_add(&Y, YV(h->at_target));
        range_add(&Y, YV(h->lo));
        range_add(&Y, YV(h->hi));
    }
    range_pad(&X, 0.06);
    range_pad(&Y, 0.06);
    const char *pn = r->pnames[h->param];
    char xl[200], yl[200], tl[200];
    snprintf(xl, sizeof(xl), "%s (log scale)", r->cost_metric);
    snprintf(yl, sizeof(yl), "%s%s", pn, ylog ? " (log scale)" : "");
    snprintf(tl, sizeof(tl), "%s along the Pareto front", pn);
    rp_fig *f = NULL;
    st_status rc = rp_fig_begin(&f, FIG_W, FIG_H, X.lo, X.hi, Y.lo, Y.hi, 1, ylog, xl, yl, tl);
    if (rc) {
        free(mem);
        return rc;
    }
    if (h->ok) {
        /* the band is clipped to the plot's y range: a wide band at the target would
         * otherwise flatten everything else */
        for (size_t g = 0; g < RP_GRID; g++) {
            llo[g] = fmax(llo[g], Y.lo);
            lhi[g] = fmin(lhi[g], Y.hi);
        }
        rp_fig_band(f, RP_GRID, lx, llo, lhi, C_BLUE);
        rp_fig_line(f, RP_GRID, lx, ly, C_BLUE, 2, 0);
    }
    rp_fig_points(f, na, ax, ay, C_GREY, G_CIRCLE, 0.9);
    rp_fig_points(f, nf, fx, fy, C_BLACK, G_DOT, 1.1);
    double tx = lg(r->target), ty = YV(h->at_target), tlo = YV(h->lo), thi = YV(h->hi);
    if (h->ok) {
        rp_fig_errbars(f, 1, &tx, &tlo, &thi, C_ORANGE, 0);
        rp_fig_points(f, 1, &tx, &ty, C_ORANGE, G_DOT, 1.3);
    }
    double mx = tx + 0.012 * (X.hi - X.lo), my = YV(h->rec), mlo = YV(h->rec_lo),
           mhi = YV(h->rec_hi);
    if (model) {
        rp_fig_errbars(f, 1, &mx, &mlo, &mhi, C_GREEN, 0);
        rp_fig_points(f, 1, &mx, &my, C_GREEN, G_DOT, 1.3);
    }
#undef YV
    rp_fig_legend(f, "runs", C_GREY, 1, 0, 0);
    rp_fig_legend(f, "Pareto front", C_BLACK, 0, 0, 0);
    if (h->ok) {
        rp_fig_legend(f, ylog ? "power law in C" : "linear in log C", C_BLUE, -1, 1, 0);
        char t[64];
        snprintf(t, sizeof(t), "%.0f%% band", 100 * r->o.band_level);
        rp_fig_legend(f, t, C_BLUE, -1, 0, 1);
        rp_fig_legend(f, "law at target", C_ORANGE, 0, 0, 0);
    } else {
        rp_fig_note(f, r->xp ? "too few front points for a law" : r->xp_note);
    }
    if (model)
        rp_fig_legend(f, "recommended", C_GREEN, 0, 0, 0);
    char *svg = NULL;
    rc = rp_fig_end(f, &svg);
    free(mem);
    if (rc)
        return rc;
    char cap[640];
    int cn =
        snprintf(cap, sizeof(cap),
                 "%s against cost. Black: the Pareto runs; blue: %s fitted along the front "
                 "(least squares on ln cost) with its %.0f%% bootstrap band over the "
                 "front's groups; orange: the law at the target compute %.3g.",
                 pn, ylog ? "a power law" : (h->space == 2 ? "a line in logit space" : "a line"),
                 100 * r->o.band_level, r->target);
    if (model && cn > 0 && (size_t)cn < sizeof(cap))
        snprintf(cap + cn, sizeof(cap) - (size_t)cn,
                 " Green: the model's recommendation with its interval.");
    caption(b, svg, cap);
    free(svg);
    return ST_OK;
}

/* The validation runs' curves in black, each with the prediction of its objective (orange bar)
 * and the objective it reached (black square) at its last record. */
static void curves_validation(report *r, rp_fig *f, const double *lx, const size_t *off)
{
    int legend = 0, predicted = 0;
    for (size_t i = r->n_front; i < r->n_curves; i++) {
        const rp_curve *c = &r->curves[i];
        const rp_run *u = &r->runs[c->val_run - 1];
        if (c->n_pred) { /* the curve predicted from its own early points, with its interval */
            double px[RP_GRID];
            size_t np = c->n_pred < RP_GRID ? c->n_pred : RP_GRID;
            for (size_t k = 0; k < np; k++)
                px[k] = lg(c->pred_x[k]);
            rp_fig_band(f, np, px, c->pred_lo, c->pred_hi, C_BLUE);
            rp_fig_line(f, np, px, c->pred_y, C_BLUE, 1.6, 1);
            predicted = 1;
        }
        rp_fig_line(f, c->n, lx + off[i], c->y, C_BLACK, 2, 0);
        if (!c->n)
            continue;
        double x = lx[off[i] + c->n - 1];
        rp_fig_errbars(f, 1, &x, &u->pred_lo, &u->pred_hi, C_ORANGE, 0);
        rp_fig_points(f, 1, &x, &u->pred, C_ORANGE, G_DOT, 1.3);
        rp_fig_points(f, 1, &x, &u->objective, C_BLACK, G_SQUARE, 1.3);
        legend = 1;
    }
    if (legend) {
        char t[120];
        snprintf(t, sizeof(t), "validation run (%s: square)", r->objective);
        rp_fig_legend(f, t, C_BLACK, -1, 1, 0);
        snprintf(t, sizeof(t), "predicted %s", r->objective);
        rp_fig_legend(f, t, C_ORANGE, 0, 0, 0);
    }
    if (predicted)
        rp_fig_legend(f, "predicted curve (its own first 30%)", C_BLUE, -1, 1, 1);
}

/* Training curves of the Pareto runs, and of the validation runs against their prediction. */
static st_status fig_curves(report *r, rp_buf *b)
{
    int all_cost = r->n_curves > 0;
    size_t total = 0, n_par = r->n_front < r->n_curves ? r->n_front : r->n_curves;
    for (size_t i = 0; i < r->n_curves; i++) {
        all_cost &= r->curves[i].x_is_cost || !r->curves[i].n;
        total += r->curves[i].n;
    }
    double *lx = malloc((total + 1) * sizeof(double));
    size_t *off = malloc((r->n_curves + 1) * sizeof(size_t));
    if (!lx || !off) {
        free(lx);
        free(off);
        return ST_ENOMEM;
    }
    range X = range_empty(), Y = range_empty();
    for (size_t i = 0, k = 0; i < r->n_curves; i++) {
        off[i] = k;
        for (size_t j = 0; j < r->curves[i].n; j++, k++) {
            lx[k] = lg(r->curves[i].x[j]);
            range_add(&X, lx[k]);
            range_add(&Y, r->curves[i].y[j]);
        }
        for (size_t q = 0; q < r->curves[i].n_pred; q++) {
            range_add(&Y, r->curves[i].pred_lo[q]);
            range_add(&Y, r->curves[i].pred_hi[q]);
        }
        if (r->curves[i].val_run && r->curves[i].n) {
            range_add(&Y, r->runs[r->curves[i].val_run - 1].pred_lo);
            range_add(&Y, r->runs[r->curves[i].val_run - 1].pred_hi);
        }
    }
    range_pad(&X, 0.03);
    range_pad(&Y, 0.05);
    char xl[200];
    snprintf(xl, sizeof(xl), "%s (log scale)", all_cost ? r->cost_metric : "step");
    rp_fig *f = NULL;
    st_status rc = rp_fig_begin(&f, FIG_W, FIG_H, X.lo, X.hi, Y.lo, Y.hi, 1, 0, xl, "training loss",
                                r->n_curves > n_par ? "Loss curves: Pareto runs, validation run"
                                                    : "Loss curves of the Pareto runs");
    if (rc) {
        free(lx);
        free(off);
        return rc;
    }
    /* at most N_SHOWN curves in colour (evenly spaced along the front), the rest in grey */
    size_t n_col = n_par < N_SHOWN ? n_par : N_SHOWN;
    for (size_t i = 0; i < n_par; i++)
        rp_fig_line(f, r->curves[i].n, lx + off[i], r->curves[i].y, C_GREY, 0.8, 0);
    for (size_t j = 0; j < n_col; j++) {
        size_t i = n_col > 1 ? j * (n_par - 1) / (n_col - 1) : 0;
        const rp_curve *c = &r->curves[i];
        rp_fig_line(f, c->n, lx + off[i], c->y, 2 + (int)j, 1.6, 0);
        char t[64];
        snprintf(t, sizeof(t), "run %lld", (long long)c->run);
        if (c->n)
            rp_fig_legend(f, t, 2 + (int)j, -1, 1, 0);
    }
    if (n_par > n_col)
        rp_fig_legend(f, "other Pareto runs", C_GREY, -1, 1, 0);
    curves_validation(r, f, lx, off);
    free(off);
    if (!total)
        rp_fig_note(f, "no step records with a loss");
    char *svg = NULL;
    rc = rp_fig_end(f, &svg);
    free(lx);
    if (rc)
        return rc;
    const char *law = NULL;
    for (size_t i = n_par; i < r->n_curves && !law; i++)
        law = r->curves[i].n_pred ? r->curves[i].pred_law : NULL;
    char cap[1000], pc[320] = "";
    if (law)
        snprintf(pc, sizeof(pc),
                 " Blue, dashed: its curve predicted from its own first 30%% (%s, fitted on the "
                 "steps from 10%% to 30%% of its last) with its 90%% interval widened by the "
                 "law's usual misfit.",
                 !strcmp(law, "Tissue")
                     ? "the law of Tissue et al. 2024 under the learning rates its step records "
                       "carry"
                     : "a power law in steps: its step records carry no learning rate");
    snprintf(cap, sizeof(cap),
             "Training loss of the %zu Pareto runs (the step records of each one's last "
             "attempt) against the cost spent so far, or the step when the records do not carry "
             "the cost%s.%s%s",
             n_par, n_par > N_SHOWN ? "; nine, evenly spaced along the front, in colour" : "",
             r->n_curves > n_par
                 ? " Black: the validation run's training loss; at its end, orange: the "
                   "engine's prediction of its objective with the interval, black square: the "
                   "objective it reached."
                 : "",
             pc);
    caption(b, svg, cap);
    free(svg);
    return ST_OK;
}

/* Predicted (loss law at the run's cost) against actual, for runs beyond the fit. */
static st_status fig_pred(report *r, rp_buf *b)
{
    size_t n = r->n_runs, m = 0;
    double *mem = malloc((4 * n + 4) * sizeof(double));
    if (!mem)
        return ST_ENOMEM;
    double *px = mem, *py = px + n, *plo = py + n, *phi = plo + n;
    range R = range_empty();
    for (size_t i = 0; i < n; i++) {
        const rp_run *u = &r->runs[i];
        if (!u->beyond || !u->succeeded || !isfinite(u->pred))
            continue;
        px[m] = u->pred, py[m] = u->objective, plo[m] = u->pred_lo, phi[m] = u->pred_hi;
        range_add(&R, u->pred);
        range_add(&R, u->objective);
        range_add(&R, u->pred_lo);
        range_add(&R, u->pred_hi);
        m++;
    }
    range_pad(&R, 0.15);
    char xl[200], yl[200];
    snprintf(xl, sizeof(xl), "predicted %s", r->objective);
    snprintf(yl, sizeof(yl), "actual %s", r->objective);
    rp_fig *f = NULL;
    st_status rc = rp_fig_begin(&f, FIG_W, FIG_H, R.lo, R.hi, R.lo, R.hi, 0, 0, xl, yl,
                                "Predicted against actual, beyond the fit");
    if (rc) {
        free(mem);
        return rc;
    }
    double dx[2] = {R.lo, R.hi};
    rp_fig_line(f, 2, dx, dx, C_GREY, 1, 1);
    rp_fig_errbars(f, m, py, plo, phi, C_ORANGE, 1);
    rp_fig_points(f, m, px, py, C_RED, G_SQUARE, 1.3);
    rp_fig_legend(f, "y = x", C_GREY, -1, 2, 0);
    rp_fig_legend(f, "runs beyond the fit", C_RED, 3, 0, 0);
    if (!m)
        rp_fig_note(f, !r->xp ? r->xp_note
                       : (r->loss_law.ok || r->res.method == FIT_XP_METHOD_MODEL)
                           ? "no finished run beyond the fit"
                           : r->loss_note);
    char *svg = NULL;
    rc = rp_fig_end(f, &svg);
    free(mem);
    if (rc)
        return rc;
    char cap[400];
    snprintf(cap, sizeof(cap),
             "Runs beyond the fit: %s (with its %.0f%% interval, horizontal bars) against the "
             "objective it reached; on the grey line they agree.",
             r->xp && r->res.method == FIT_XP_METHOD_MODEL
                 ? "the model's prediction at each run's settings, model size and tokens"
                 : "the front law's prediction at each run's cost",
             100 * r->o.band_level);
    caption(b, svg, cap);
    free(svg);
    return ST_OK;
}

static int by_end(const void *a, const void *b)
{
    double x = ((const rp_attempt *)a)->ended, y = ((const rp_attempt *)b)->ended;
    return (x > y) - (x < y);
}

/* Cumulative finished attempts, successes, hyperparameter and infrastructure failures. */
static st_status fig_failures(report *r, rp_buf *b)
{
    size_t n = r->n_att, m = 0;
    rp_attempt *a = malloc((n + 1) * sizeof(*a));
    double *mem = malloc((5 * (2 * n + 2) + 1) * sizeof(double));
    if (!a || !mem) {
        free(a);
        free(mem);
        return ST_ENOMEM;
    }
    double t0 = INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (isfinite(r->att[i].started) && r->att[i].started < t0)
            t0 = r->att[i].started;
        if (isfinite(r->att[i].ended))
            a[m++] = r->att[i];
    }
    qsort(a, m, sizeof(*a), by_end);
    double span = m ? a[m - 1].ended - t0 : 0, unit = 1;
    const char *uname = "seconds";
    if (span > 7200)
        unit = 3600, uname = "hours";
    else if (span > 120)
        unit = 60, uname = "minutes";
    /* step curves: two points per event (before and after) */
    size_t np = 2 * m + 1;
    double *t = mem, *c[4] = {t + np, t + 2 * np, t + 3 * np, t + 4 * np};
    size_t cnt[4] = {0, 0, 0, 0};
    t[0] = 0;
    for (int k = 0; k < 4; k++)
        c[k][0] = 0;
    for (size_t i = 0; i < m; i++) {
        double x = (a[i].ended - t0) / unit;
        t[2 * i + 1] = x;
        for (int k = 0; k < 4; k++)
            c[k][2 * i + 1] = (double)cnt[k];
        cnt[0]++;
        if (a[i].kind >= 0 && a[i].kind <= 2)
            cnt[a[i].kind + 1]++;
        t[2 * i + 2] = x;
        for (int k = 0; k < 4; k++)
            c[k][2 * i + 2] = (double)cnt[k];
    }
    range X = {0, m ? t[np - 1] : 1}, Y = {0, (double)(cnt[0] ? cnt[0] : 1)};
    range_pad(&X, 0.02);
    Y.hi *= 1.05;
    char xl[64];
    snprintf(xl, sizeof(xl), "time since the first launch (%s)", uname);
    rp_fig *f = NULL;
    st_status rc = rp_fig_begin(&f, FIG_W, FIG_H, X.lo, X.hi, Y.lo, Y.hi, 0, 0, xl,
                                "attempts (cumulative)", "Failures and retries over time");
    if (!rc) {
        static const char *const names[] = {"finished attempts", "succeeded",
                                            "hyperparam. failures", "infra failures"};
        static const int cols[] = {C_BLACK, C_GREEN, C_RED, C_ORANGE};
        for (int k = 0; k < 4; k++) {
            rp_fig_line(f, np, t, c[k], cols[k], k ? 1.8 : 1.2, k == 0);
            rp_fig_legend(f, names[k], cols[k], -1, k == 0 ? 2 : 1, 0);
        }
        if (!m)
            rp_fig_note(f, "no finished attempt");
    }
    char *svg = NULL;
    if (!rc)
        rc = rp_fig_end(f, &svg);
    free(a);
    free(mem);
    if (rc)
        return rc;
    char cap[400];
    snprintf(cap, sizeof(cap),
             "Attempts as they finished: %zu in all, %zu succeeded, %zu hyperparameter failures "
             "(diverged, out of memory, over budget, timeouts; observed by the optimizer) and "
             "%zu infrastructure failures (crashes, lost or hung jobs; retried).",
             cnt[0], cnt[1], cnt[2], cnt[3]);
    caption(b, svg, cap);
    free(svg);
    return ST_OK;
}

static const char css[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;"
    "margin:2em auto;max-width:1400px;padding:0 1em;color:#222;line-height:1.4}"
    "h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.25em;margin-top:1.6em;"
    "border-bottom:1px solid #ddd;padding-bottom:.2em}"
    "table{border-collapse:collapse;margin:.5em 0;font-size:.9em}"
    "th,td{border:1px solid #ddd;padding:.25em .6em;text-align:right}"
    "th{background:#f4f4f4}td.l,th.l{text-align:left}"
    "tr.front td{font-weight:600}tr.fail td{color:#a33}tr.beyond td{background:#fff4e5}"
    ".figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:1em}"
    "figure{margin:0;border:1px solid #eee;padding:.5em;background:#fff}"
    "figure svg{width:100%;height:auto;display:block}"
    "figcaption{font-size:.85em;color:#555;margin-top:.3em}"
    ".note{color:#555;font-size:.9em}.runs{overflow-x:auto}";

static void row2(rp_buf *b, const char *k, const char *v)
{
    rp_buf_add(b, "<tr><th class=\"l\">");
    rp_buf_html(b, k);
    rp_buf_add(b, "</th><td class=\"l\">");
    rp_buf_html(b, v);
    rp_buf_add(b, "</td></tr>\n");
}

static void num_cell(rp_buf *b, double v)
{
    char t[64];
    rp_fmt_human(t, sizeof(t), v);
    rp_buf_addf(b, "<td>%s</td>", t);
}

static void summary(report *r, rp_buf *b)
{
    char t[256], v1[64], v2[64];
    size_t by[6] = {0}, n_att = 0, n_retry = 0;
    for (size_t i = 0; i < r->n_sweep_runs; i++) {
        const rp_run *u = &r->runs[i];
        static const char *const st[] = {"pending", "running",      "succeeded",
                                         "failed",  "infra_failed", "stopped"};
        for (int k = 0; k < 6; k++)
            if (!strcmp(u->status, st[k]))
                by[k]++;
        n_att += u->n_attempts;
        n_retry += u->n_attempts > 1 ? u->n_attempts - 1 : 0;
    }
    rp_buf_add(b, "<h2>Summary</h2>\n<table>\n");
    row2(b, "sweep", r->sweep);
    snprintf(t, sizeof(t), "%s (%s)", r->objective, r->goal);
    row2(b, "objective", t);
    row2(b, "cost", r->cost_metric);
    snprintf(t, sizeof(t),
             "%zu: %zu succeeded, %zu failed, %zu infrastructure-failed, %zu stopped, %zu "
             "pending or running",
             r->n_sweep_runs, by[2], by[3], by[4], by[5], by[0] + by[1]);
    row2(b, "runs", t);
    snprintf(t, sizeof(t), "%zu (%zu retries)", n_att, n_retry);
    row2(b, "attempts", t);
    snprintf(t, sizeof(t), "%zu", r->n_front);
    row2(b, "Pareto runs", t);
    rp_fmt_human(v1, sizeof(v1), r->cost_lo);
    rp_fmt_human(v2, sizeof(v2), r->cost_hi);
    snprintf(t, sizeof(t), "%s to %s", v1, v2);
    row2(b, "cost of fitted runs", t);
    if (isfinite(r->o.fit_max_cost) || r->validate_sweep) {
        size_t nb = report_n_beyond(r);
        snprintf(t, sizeof(t), "%zu%s%s", nb, r->validate_sweep ? " (validation sweep " : "",
                 r->validate_sweep ? r->validate_sweep : "");
        if (r->validate_sweep)
            strncat(t, ")", sizeof(t) - strlen(t) - 1);
        row2(b, "runs beyond the fit", t);
    }
    rp_buf_add(b, "</table>\n");
}

/* One "name value lo hi" row. */
static void row4(rp_buf *b, const char *name, double v, double lo, double hi)
{
    rp_buf_add(b, "<tr><td class=\"l\">");
    rp_buf_html(b, name);
    rp_buf_add(b, "</td>");
    num_cell(b, v);
    num_cell(b, lo);
    num_cell(b, hi);
    rp_buf_add(b, "</tr>\n");
}

/* Warnings ("; "-separated) as a list. */
static void warnings(rp_buf *b, const char *w)
{
    if (!w || !*w)
        return;
    rp_buf_add(b, "<ul class=\"note\">\n");
    while (w && *w) {
        const char *e = strstr(w, "; ");
        size_t len = e ? (size_t)(e - w) : strlen(w);
        char item[512];
        snprintf(item, sizeof(item), "%.*s", (int)(len < sizeof(item) ? len : sizeof(item) - 1), w);
        rp_buf_add(b, "<li>");
        rp_buf_html(b, item);
        rp_buf_add(b, "</li>\n");
        w = e ? e + 2 : NULL;
    }
    rp_buf_add(b, "</ul>\n");
}

/* The large run's alerts (scaletune run's watch, stored with the validation sweep). */
static void validation_alerts(const report *r, rp_buf *b)
{
    if (!r->n_val_alerts)
        return;
    rp_buf_add(b, "<h3>Alerts of the large run</h3>\n<table>\n<tr><th>run</th>"
                  "<th class=\"l\">kind</th><th>step</th><th class=\"l\">what</th></tr>\n");
    for (size_t i = 0; i < r->n_val_alerts; i++) {
        const runner_alert *a = &r->val_alerts[i];
        rp_buf_addf(b, "<tr><td>%llu</td><td class=\"l\">", (unsigned long long)a->run);
        rp_buf_html(b, a->kind);
        if (a->step >= 0)
            rp_buf_addf(b, "</td><td>%lld</td><td class=\"l\">", (long long)a->step);
        else
            rp_buf_add(b, "</td><td>–</td><td class=\"l\">");
        rp_buf_html(b, a->message);
        rp_buf_add(b, "</td></tr>\n");
    }
    rp_buf_add(b, "</table>\n");
}

/* Each categorical's levels against its reference level (the model's factor): offset of the
 * loss and of the learning rate's optimum with their intervals, the runs behind each. */
static void levels_table(report *r, rp_buf *b)
{
    for (size_t i = 0; r->xp && i < r->n_hp; i++) {
        size_t xi = r->hp[i].xi, ref = 0, n_ok;
        double off[3], sh[3];
        if (fit_xp_level_effect(r->xp, xi, 0, NULL, NULL, &ref, NULL) != ST_OK)
            continue;
        rp_buf_add(b, "<table>\n<tr><th class=\"l\">");
        rp_buf_html(b, r->pnames[r->hp[i].param]);
        rp_buf_addf(b,
                    "</th><th>loss factor</th><th>%.0f%% interval</th><th>lr shift (basic)"
                    "</th><th>%.0f%% interval</th><th>succeeded</th></tr>\n",
                    100 * r->o.band_level, 100 * r->o.band_level);
        for (size_t l = 0; fit_xp_level_effect(r->xp, xi, l, off, sh, NULL, &n_ok) == ST_OK; l++) {
            rp_buf_add(b, "<tr><td class=\"l\">");
            rp_buf_html(b, fit_xp_level_name(r->xp, xi, l));
            rp_buf_addf(b,
                        "%s</td><td>%.4f</td><td>%.4f&ndash;%.4f</td><td>%+.3f</td>"
                        "<td>%+.3f&ndash;%+.3f</td><td>%zu</td></tr>\n",
                        l == ref ? " (reference)" : "", exp(off[0]), exp(off[1]), exp(off[2]),
                        sh[0], sh[1], sh[2], n_ok);
        }
        rp_buf_add(b, "</table>\n");
    }
}

static void recommendation(report *r, rp_buf *b)
{
    char v[64];
    rp_fmt_human(v, sizeof(v), r->target);
    rp_buf_addf(b, "<h2>Recommendation at %s = %s</h2>\n", r->cost_metric, v);
    char what[1024];
    rp_what_to_run(r, what, sizeof(what));
    if (what[0]) {
        rp_buf_add(b, "<p><b>");
        rp_buf_html(b, what);
        rp_buf_add(b, "</b></p>\n");
    }
    rp_buf_addf(b,
                "<table>\n<tr><th class=\"l\">parameter</th><th>value</th><th>%.0f%% "
                "interval lo</th><th>hi</th></tr>\n",
                100 * r->o.band_level);
    for (size_t i = 0; i < r->n_hp; i++) {
        const rp_hp *h = &r->hp[i];
        char t4[3][64];
        rp_fmt_rec(r, h, h->rec, t4[0], sizeof(t4[0]));
        rp_fmt_rec(r, h, h->rec_lo, t4[1], sizeof(t4[1]));
        rp_fmt_rec(r, h, h->rec_hi, t4[2], sizeof(t4[2]));
        rp_buf_add(b, "<tr><td class=\"l\">");
        rp_buf_html(b, r->pnames[h->param]);
        rp_buf_add(b, "</td>");
        for (int c = 0; c < 3; c++) {
            rp_buf_add(b, "<td>");
            rp_buf_html(b, t4[c]);
            rp_buf_add(b, "</td>");
        }
        rp_buf_add(b, "</tr>\n");
    }
    levels_table(r, b);
    /* the model size and tokens, unless a parameter already is one of them */
    int has_N = 0, has_D = 0;
    for (size_t i = 0; r->xp && i < r->n_hp; i++) {
        fit_xp_role role = fit_xp_param_role(r->xp, r->hp[i].xi);
        has_N |= role == FIT_XP_N;
        has_D |= role == FIT_XP_D;
    }
    if (r->xp && !has_N && isfinite(r->res.N))
        row4(b, "model size N", r->res.N, r->res.N_lo, r->res.N_hi);
    if (r->xp && !has_D && isfinite(r->res.D))
        row4(b, "tokens D", r->res.D, r->res.D_lo, r->res.D_hi);
    char t[200];
    snprintf(t, sizeof(t), "predicted %s", r->objective);
    row4(b, t, r->rec_obj, r->rec_lo, r->rec_hi);
    rp_buf_add(b, "<tr><td class=\"l\">probability of divergence</td>");
    rp_fmt_percent(t, sizeof(t), r->p_diverge);
    rp_buf_addf(b, "<td>%s</td>", isfinite(r->p_diverge) ? t : "–");
    rp_buf_add(b, "<td></td><td></td></tr>\n</table>\n<p class=\"note\">Method: ");
    rp_buf_html(b, rp_method_name(r));
    rp_buf_add(b, ". Source: ");
    rp_buf_html(b, r->rec_source);
    rp_buf_add(b, ".</p>\n");
    warnings(b, r->xp ? r->res.warning_text : r->xp_note);
    if (r->xp) {
        const study_backtest_result *bt = study_get_backtest(r->st);
        if (bt->done)
            rp_buf_addf(b,
                        "<p class=\"note\">Backtest on this sweep: the largest %s held out "
                        "(up to %.3g&times; the rest), the engine fitted on the rest predicts "
                        "them with median error %.2f%% (worst %.2f%%); %zu of %zu inside their "
                        "%.0f%% interval.</p>\n",
                        bt->by_model_size ? "model sizes" : "runs by cost", bt->factor,
                        100 * bt->median_error, 100 * bt->worst_error, bt->n_inside, bt->n_held,
                        100 * r->o.band_level);
        warnings(b, study_warnings(r->st));
        if (!study_safe(r->st)) {
            rp_buf_add(b, "<p class=\"note\"><b>Not safe to run:</b> ");
            rp_buf_html(b, study_unsafe_reason(r->st));
            rp_buf_add(b, ".</p>\n");
        }
    }
    if (r->has_validation) {
        rp_buf_add(b, "<h2>Validation</h2>\n<table>\n<tr><th>run</th><th>actual</th>"
                      "<th>predicted</th><th>lo</th><th>hi</th><th class=\"l\">inside</th>"
                      "</tr>\n");
        rp_buf_addf(b, "<tr><td>%lld</td>", (long long)r->val_run);
        num_cell(b, r->val_actual);
        num_cell(b, r->val_pred);
        num_cell(b, r->val_lo);
        num_cell(b, r->val_hi);
        int in = r->val_actual >= r->val_lo && r->val_actual <= r->val_hi;
        rp_buf_addf(b, "<td class=\"l\">%s</td></tr>\n</table>\n",
                    isfinite(r->val_lo) ? (in ? "yes" : "no") : "–");
    }
    validation_alerts(r, b);
}

/* The model of every run (when the engine fitted it). */
static void model_fits(report *r, rp_buf *b)
{
    double ch[5], k, g[4];
    if (!r->xp || fit_xp_chinchilla(r->xp, ch, NULL) != ST_OK)
        return;
    rp_buf_add(b, "<p>The model of every run: L(N, D) = E + A N<sup>&minus;&alpha;</sup> + B "
                  "D<sup>&minus;&beta;</sup>, times a penalty for each hyperparameter away from "
                  "its optimum b<sub>opt</sub> = c<sub>0</sub> + c<sub>N</sub> ln N + "
                  "c<sub>D</sub> ln D (b its basic coordinate, as above).</p>\n<table>\n<tr>"
                  "<th>A</th><th>B</th><th>E</th><th>&alpha;</th><th>&beta;</th>"
                  "<th>cost ln k</th></tr>\n<tr>");
    for (int q = 0; q < 5; q++)
        num_cell(b, ch[q]);
    num_cell(b, fit_xp_cost_model(r->xp, &k) == ST_OK ? k : NAN);
    rp_buf_add(b, "</tr>\n</table>\n<table>\n<tr><th class=\"l\">parameter</th>"
                  "<th class=\"l\">role</th><th>c<sub>0</sub></th><th>c<sub>N</sub></th>"
                  "<th>c<sub>D</sub></th><th>curvature</th><th>saturation</th></tr>\n");
    for (size_t i = 0; i < r->n_hp; i++) {
        double c[3], curv, sat;
        if (fit_xp_hp_law(r->xp, r->hp[i].xi, c, &curv, &sat) != ST_OK)
            continue;
        rp_buf_add(b, "<tr><td class=\"l\">");
        rp_buf_html(b, r->pnames[r->hp[i].param]);
        rp_buf_addf(b, "</td><td class=\"l\">%s</td>",
                    fit_xp_role_name(fit_xp_param_role(r->xp, r->hp[i].xi)));
        num_cell(b, c[0]);
        num_cell(b, c[1]);
        num_cell(b, c[2]);
        num_cell(b, curv);
        num_cell(b, sat);
        rp_buf_add(b, "</tr>\n");
    }
    rp_buf_add(b, "</table>\n");
    if (fit_xp_divergence(r->xp, g) == ST_OK) {
        rp_buf_add(b, "<p>Stability boundary: P(diverge) = 1 / (1 + exp(&minus;(g<sub>0</sub> + "
                      "g<sub>1</sub> ln lr + g<sub>2</sub> ln N + g<sub>3</sub> w))), w the "
                      "warmup-like parameter's basic coordinate.</p>\n<table>\n<tr>"
                      "<th>g<sub>0</sub></th><th>g<sub>1</sub></th><th>g<sub>2</sub></th>"
                      "<th>g<sub>3</sub></th></tr>\n<tr>");
        for (int q = 0; q < 4; q++)
            num_cell(b, g[q]);
        rp_buf_add(b, "</tr>\n</table>\n");
    }
}

static void fits(report *r, rp_buf *b)
{
    rp_buf_add(b, "<h2>Fits</h2>\n");
    if (!r->xp) {
        rp_buf_add(b, "<p>");
        rp_buf_html(b, r->xp_note);
        rp_buf_add(b, ".</p>\n");
        return;
    }
    if (r->loss_law.ok) {
        rp_buf_addf(b,
                    "<p><b>CARBS' analysis (Pareto front law)</b>: objective against cost on "
                    "the Pareto front (%zu groups): y = E + A C<sup>&minus;&alpha;</sup>, %zu "
                    "bootstrap replicates for the band",
                    r->n_front, r->o.n_boot);
        rp_front_law_backtest(r, b);
        rp_buf_add(b, ".</p>\n");
        rp_buf_add(b, "<table>\n<tr><th class=\"l\">parameter</th><th>value</th><th>lo</th>"
                      "<th>hi</th></tr>\n");
        static const char *const nm[] = {"A", "alpha", "E"};
        for (int k = 0; k < 3; k++)
            row4(b, nm[k], r->loss_nat[k], NAN, NAN);
        if (!rp_model_method(r)) /* else the one prediction is the model's, above */
            row4(b, "y at the target", r->loss_at, r->loss_at_lo, r->loss_at_hi);
        rp_buf_add(b, "</table>\n");
    } else {
        rp_buf_add(b, "<p>");
        rp_buf_html(b, r->loss_note);
        rp_buf_add(b, ".</p>\n");
    }
    rp_buf_add(b, "<p>Searched parameters along the front: basic coordinate (ln of the value "
                  "for log spaces, ln(v / (1 &minus; v)) for logit spaces, the value for linear "
                  "ones) = intercept + slope &middot; ln cost.</p>\n<table>\n<tr><th "
                  "class=\"l\">parameter</th><th class=\"l\">space</th><th>intercept</th>"
                  "<th>slope</th><th>slope lo</th><th>slope hi</th><th>law at target</th></tr>\n");
    for (size_t i = 0; i < r->n_hp; i++) {
        const rp_hp *h = &r->hp[i];
        rp_buf_add(b, "<tr><td class=\"l\">");
        rp_buf_html(b, r->pnames[h->param]);
        rp_buf_addf(b, "</td><td class=\"l\">%s</td>",
                    h->space == 1   ? "log"
                    : h->space == 2 ? "logit"
                                    : "linear");
        num_cell(b, h->ok ? h->b0 : NAN);
        num_cell(b, h->ok ? h->b1 : NAN);
        num_cell(b, h->b1_lo);
        num_cell(b, h->b1_hi);
        num_cell(b, h->at_target);
        rp_buf_add(b, "</tr>\n");
    }
    rp_buf_add(b, "</table>\n");
    model_fits(r, b);
}

static void run_table(report *r, rp_buf *b)
{
    rp_buf_add(b, "<h2>Runs</h2>\n<p class=\"note\">Bold: on the Pareto front; red: failed; "
                  "shaded: beyond the fit.</p>\n<div class=\"runs\"><table>\n<tr><th>id</th>"
                  "<th class=\"l\">status</th><th class=\"l\">failure</th>");
    for (size_t k = 0; k < r->n_params; k++) {
        rp_buf_add(b, "<th>");
        rp_buf_html(b, r->pnames[k]);
        rp_buf_add(b, "</th>");
    }
    rp_buf_add(b, "<th>");
    rp_buf_html(b, r->objective);
    rp_buf_add(b, "</th><th>");
    rp_buf_html(b, r->cost_metric);
    rp_buf_add(b, "</th><th>attempts</th></tr>\n");
    for (size_t i = 0; i < r->n_runs; i++) {
        const rp_run *u = &r->runs[i];
        const char *cls = u->on_front                  ? " class=\"front\""
                          : u->beyond                  ? " class=\"beyond\""
                          : strcmp(u->failure, "none") ? " class=\"fail\""
                                                       : "";
        rp_buf_addf(b, "<tr%s><td>%lld</td><td class=\"l\">", cls, (long long)u->id);
        rp_buf_html(b, u->status);
        rp_buf_add(b, "</td><td class=\"l\">");
        rp_buf_html(b, strcmp(u->failure, "none") ? u->failure : "");
        rp_buf_add(b, "</td>");
        for (size_t k = 0; k < r->n_params; k++)
            num_cell(b, u->x[k]);
        num_cell(b, u->objective);
        num_cell(b, u->cost);
        rp_buf_addf(b, "<td>%zu</td></tr>\n", u->n_attempts);
    }
    rp_buf_add(b, "</table></div>\n");
}

st_status rp_html(report *r, char **out)
{
    rp_buf b = {0};
    rp_buf_add(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                   "<title>");
    rp_buf_html(&b, r->title);
    rp_buf_addf(&b, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", css);
    rp_buf_html(&b, r->title);
    rp_buf_add(&b, "</h1>\n<p class=\"note\">Written by scaletune ");
    rp_buf_html(&b, st_version());
    rp_buf_add(&b, " from ");
    rp_buf_html(&b, r->db_path);
    rp_buf_add(&b, ". Figures drawn with PLplot.</p>\n");
    summary(r, &b);
    recommendation(r, &b);

    rp_buf_add(&b, "<h2>Figures</h2>\n<div class=\"figs\">\n");
    st_status rc = fig_front(r, &b);
    for (size_t i = 0; i < r->n_hp && !rc; i++)
        rc = fig_hp(r, &r->hp[i], &b);
    if (!rc)
        rc = fig_curves(r, &b);
    if (!rc && report_n_beyond(r) > 0)
        rc = fig_pred(r, &b);
    if (!rc)
        rc = fig_failures(r, &b);
    rp_buf_add(&b, "</div>\n");
    if (rc) {
        free(b.p);
        return st_errf(r->errmsg, rc, "drawing the figures: %s", st_strerror(rc));
    }
    fits(r, &b);
    run_table(r, &b);
    rp_buf_add(&b, "</body>\n</html>\n");
    if (b.oom || !b.p) {
        free(b.p);
        return st_errf(r->errmsg, ST_ENOMEM, "out of memory");
    }
    *out = b.p;
    return ST_OK;
}
