/*
 * html.c — the report page: one self-contained HTML5 file with inline CSS and inline SVG
 * figures (html_figs.c, drawn by plot.c), no script, no font or image fetched from anywhere.
 * Sections: summary, recommendation, validation, figures, fits and the run table.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_int.h"

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
    size_t by[6] = {0}, n_att = 0, n_retry = 0, n_br = 0;
    for (size_t i = 0; i < r->n_sweep_runs; i++) {
        const rp_run *u = &r->runs[i];
        static const char *const st[] = {"pending", "running",      "succeeded",
                                         "failed",  "infra_failed", "stopped"};
        if (u->branch) {
            n_br++;
            continue;
        }
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
             r->n_sweep_runs - n_br, by[2], by[3], by[4], by[5], by[0] + by[1]);
    row2(b, "runs", t);
    if (n_br) {
        snprintf(t, sizeof(t), "%zu (points of their parent runs: diamonds on the loss curves)",
                 n_br);
        row2(b, "cooldown branches", t);
    }
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
                      "warmup-like parameter's basic coordinate less its law's optimum at "
                      "the run, capped at 0.</p>\n<table>\n<tr>"
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
        if (u->branch)
            continue; /* a point of its parent run, not a run */
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
    st_status rc = rp_html_figures(r, &b);
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
