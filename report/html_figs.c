/*
 * html_figs.c — the report page's figures, each an inline SVG drawn with PLplot (plot.c) inside
 * a <figure> with its caption: objective against cost with the front and the law; each searched
 * parameter along the front; loss curves of the Pareto runs; predicted against actual beyond the
 * fit; failures and retries over time. html.c writes the page around them.
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
enum { G_DOT = 17, G_CIRCLE = 4, G_CROSS = 5, G_SQUARE = 6, G_DIAMOND = 11 };

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
    int legend = 0, predicted = 0, envelope = 0;
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
        if (u->n_env) { /* the model at its settings with fewer tokens, at their cost or step */
            double ex[RP_ENV], x_last = c->x[c->n - 1];
            for (size_t k = 0; k < u->n_env; k++)
                ex[k] = lg(x_last * u->env_f[k]);
            rp_fig_band(f, u->n_env, ex, u->env_lo, u->env_hi, C_GREEN);
            rp_fig_line(f, u->n_env, ex, u->env_y, C_GREEN, 1.6, 1);
            envelope = 1;
        }
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
    if (envelope)
        rp_fig_legend(f, "the model: its setting with fewer tokens", C_GREEN, -1, 1, 1);
}

/* A curve's cooldown branches as diamonds (their objective at their tokens' x); their count. */
static size_t branch_points(rp_fig *f, const rp_curve *c, int colour, double size)
{
    double bx[RP_MAX_BRANCHES];
    for (size_t k = 0; k < c->n_br; k++)
        bx[k] = lg(c->br_x[k]);
    rp_fig_points(f, c->n_br, bx, c->br_y, colour, G_DIAMOND, size);
    return c->n_br;
}

/* The loss curves' caption (n_par Pareto curves, n_br branch points of theirs) into cap. */
static void curves_caption(const report *r, size_t n_par, size_t n_br, int all_cost, char *cap,
                           size_t cap_len)
{
    const char *law = NULL;
    for (size_t i = n_par; i < r->n_curves && !law; i++)
        law = r->curves[i].n_pred ? r->curves[i].pred_law : NULL;
    char pc[320] = "", bc[240] = "", ec[400] = "";
    for (size_t i = n_par; i < r->n_curves && !ec[0]; i++)
        if (r->curves[i].val_run && r->runs[r->curves[i].val_run - 1].n_env)
            snprintf(ec, sizeof(ec),
                     " Green, dashed: the engine's model at the validation run's settings and "
                     "model size with fewer tokens (a tenth to all of its own), with its 90%% "
                     "interval: the loss its setting would reach if cooled down there, what a "
                     "cooldown branch measures (a run lies above it before its decay).");
    if (n_br)
        snprintf(bc, sizeof(bc),
                 " Diamonds: the %s of the runs' %zu cooldown branches, at the %s of the tokens "
                 "each trained on: what the run's setting reached when cooled down there.",
                 r->objective, n_br, all_cost ? "cost" : "step");
    if (law)
        snprintf(pc, sizeof(pc),
                 " Blue, dashed: its curve predicted from its own first 30%% (%s, fitted on the "
                 "steps from 10%% to 30%% of its last) with its 90%% interval widened by the "
                 "law's usual misfit.",
                 !strcmp(law, "Tissue")
                     ? "the law of Tissue et al. 2024 under the learning rates its step records "
                       "carry"
                     : "a power law in steps: its step records carry no learning rate");
    snprintf(cap, cap_len,
             "Training loss of the %zu Pareto runs (the step records of each one's last "
             "attempt) against the cost spent so far, or the step when the records do not carry "
             "the cost%s.%s%s%s%s",
             n_par, n_par > N_SHOWN ? "; nine, evenly spaced along the front, in colour" : "", bc,
             r->n_curves > n_par
                 ? " Black: the validation run's training loss; at its end, orange: the "
                   "engine's prediction of its objective with the interval, black square: the "
                   "objective it reached."
                 : "",
             pc, ec);
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
        for (size_t q = 0; q < r->curves[i].n_br; q++) {
            range_add(&X, lg(r->curves[i].br_x[q]));
            range_add(&Y, r->curves[i].br_y[q]);
        }
        if (r->curves[i].val_run && r->curves[i].n) {
            const rp_run *u = &r->runs[r->curves[i].val_run - 1];
            range_add(&Y, u->pred_lo);
            range_add(&Y, u->pred_hi);
            for (size_t q = 0; q < u->n_env; q++) {
                range_add(&X, lg(r->curves[i].x[r->curves[i].n - 1] * u->env_f[q]));
                range_add(&Y, u->env_y[q]);
            }
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
    size_t n_br = 0;
    for (size_t i = 0; i < n_par; i++)
        n_br += branch_points(f, &r->curves[i], C_GREY, 1.1);
    for (size_t j = 0; j < n_col; j++) {
        size_t i = n_col > 1 ? j * (n_par - 1) / (n_col - 1) : 0;
        const rp_curve *c = &r->curves[i];
        branch_points(f, c, 2 + (int)j, 1.3);
        rp_fig_line(f, c->n, lx + off[i], c->y, 2 + (int)j, 1.6, 0);
        char t[64];
        snprintf(t, sizeof(t), "run %lld", (long long)c->run);
        if (c->n)
            rp_fig_legend(f, t, 2 + (int)j, -1, 1, 0);
    }
    if (n_par > n_col)
        rp_fig_legend(f, "other Pareto runs", C_GREY, -1, 1, 0);
    if (n_br) {
        char t[120];
        snprintf(t, sizeof(t), "cooldown branch (its %s)", r->objective);
        rp_fig_legend(f, t, C_BLACK, G_DIAMOND, 0, 0);
    }
    curves_validation(r, f, lx, off);
    free(off);
    if (!total)
        rp_fig_note(f, "no step records with a loss");
    char *svg = NULL;
    rc = rp_fig_end(f, &svg);
    free(lx);
    if (rc)
        return rc;
    char cap[1800];
    curves_caption(r, n_par, n_br, all_cost, cap, sizeof(cap));
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

st_status rp_html_figures(report *r, rp_buf *b)
{
    st_status rc = fig_front(r, b);
    for (size_t i = 0; i < r->n_hp && !rc; i++)
        rc = fig_hp(r, &r->hp[i], b);
    if (!rc)
        rc = fig_curves(r, b);
    if (!rc && report_n_beyond(r) > 0)
        rc = fig_pred(r, b);
    if (!rc)
        rc = fig_failures(r, b);
    return rc;
}
