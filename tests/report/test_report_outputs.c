/*
 * test_report_outputs.c — a real sweep of the simulated trainer (with retried crashes) turned
 * into a report (numbers from fit/extrapolate.h): the front against one rebuilt from the store's
 * export (groups of identical settings, as the engine defines it), parameter laws against
 * closed-form least squares on ln cost, the laws at the target against their closed forms, the
 * model's recommendation against the cost model refitted by least squares (N D e^k = C), the
 * front method's recommendation against its laws, CSV values against the store's export, the HTML's
 * structure (balanced tags, one <svg> per figure, no network reference), runs beyond the fit (by
 * cost and by a validation sweep), atomic writes and the error paths (missing sweep, unwritable
 * path, not a store).
 */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>

#include "report/report.h"
#include "report/report_int.h"
#include "runner/largerun.h"
#include "tests/report/report_test_util.h"

static size_t n_runs_main(void)
{
    return getenv("ST_TEST_QUICK") ? 14 : 24;
}

static json_t *load_json(report *r)
{
    char *s = NULL;
    CHECK_ST(report_json_dup(r, &s), ST_OK);
    json_error_t je;
    json_t *root = s ? json_loads(s, 0, &je) : NULL;
    if (s && !root)
        fprintf(stderr, "json: %s at line %d\n", je.text, je.line);
    CHECK(root != NULL);
    st_free(s);
    return root;
}

/* The HTML document's structure. */
static void check_html(const char *h, size_t n_fig)
{
    CHECK(!strncmp(h, "<!DOCTYPE html>", 15));
    CHECK(rt_count(h, "<html") == 1 && rt_count(h, "</html>") == 1);
    CHECK(rt_count(h, "<body>") == 1 && rt_count(h, "</body>") == 1);
    CHECK(rt_count(h, "<head>") == 1 && rt_count(h, "</head>") == 1);
    CHECK(rt_count(h, "<svg") == n_fig);
    CHECK(rt_count(h, "</svg>") == n_fig);
    CHECK(rt_count(h, "<figure>") == n_fig && rt_count(h, "</figure>") == n_fig);
    CHECK(rt_count(h, "<table>") == rt_count(h, "</table>"));
    /* self-contained: no script, no external reference but the SVG namespace */
    CHECK(rt_count(h, "<script") == 0);
    CHECK(rt_count(h, "<link") == 0);
    CHECK(rt_count(h, "http://") == rt_count(h, "xmlns=\"http://www.w3.org/2000/svg\""));
    CHECK(rt_count(h, "https://") == 0);
    CHECK(rt_count(h, "<?xml") == 0 && rt_count(h, "<!DOCTYPE svg") == 0);
    /* the figures hold drawn marks and text */
    CHECK(rt_count(h, "<polyline") > 100);
    CHECK(rt_count(h, "<text") > 20);
}

/* Slope of the least-squares line y = a + b x (closed form). */
static double ols_slope(size_t n, const double *x, const double *y)
{
    double mx = 0, my = 0, sxy = 0, sxx = 0;
    for (size_t i = 0; i < n; i++)
        mx += x[i] / (double)n, my += y[i] / (double)n;
    for (size_t i = 0; i < n; i++)
        sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx);
    return sxy / sxx;
}

/* Intercept of the same line. */
static double ols_icept(size_t n, const double *x, const double *y)
{
    double mx = 0, my = 0;
    for (size_t i = 0; i < n; i++)
        mx += x[i] / (double)n, my += y[i] / (double)n;
    return my - ols_slope(n, x, y) * mx;
}

/* The front rebuilt from the store's export: succeeded runs grouped by identical parameters
 * (mean cost and objective; the group is named by its first run), increasing mean cost,
 * strictly decreasing mean objective. Returns the number of groups written to out. */
typedef struct ref_group {
    json_int_t id;
    size_t first, n;
    double cost, obj, lr, N;
} ref_group;

static size_t ref_front(runner_store *s, const char *sweep, ref_group *out, size_t cap)
{
    char *js = NULL;
    CHECK_ST(runner_store_export_json(s, sweep, &js), ST_OK);
    json_t *root = js ? json_loads(js, 0, NULL) : NULL;
    st_free(js);
    json_t *runs = json_object_get(root, "runs");
    ref_group g[256];
    size_t ng = 0;
    for (size_t i = 0; i < json_array_size(runs); i++) {
        json_t *u = json_array_get(runs, i), *p = json_object_get(u, "params");
        if (strcmp(json_string_value(json_object_get(u, "status")), "succeeded"))
            continue;
        size_t k = 0;
        while (k < ng &&
               !json_equal(p, json_object_get(json_array_get(runs, g[k].first), "params")))
            k++;
        if (k == ng) {
            if (ng == 256)
                break;
            g[ng++] = (ref_group){json_integer_value(json_object_get(u, "suggestion_id")),
                                  i,
                                  0,
                                  0,
                                  0,
                                  json_number_value(json_object_get(p, "lr")),
                                  json_number_value(json_object_get(p, "N"))};
        }
        g[k].n++;
        g[k].cost += json_number_value(json_object_get(u, "cost"));
        g[k].obj += json_number_value(json_object_get(u, "objective"));
    }
    for (size_t k = 0; k < ng; k++) {
        g[k].cost /= (double)g[k].n;
        g[k].obj /= (double)g[k].n;
    }
    for (size_t i = 1; i < ng; i++) /* by mean cost (insertion sort, stable) */
        for (size_t j = i; j > 0 && g[j].cost < g[j - 1].cost; j--) {
            ref_group t = g[j];
            g[j] = g[j - 1];
            g[j - 1] = t;
        }
    size_t nf = 0;
    double best = INFINITY;
    for (size_t k = 0; k < ng && nf < cap; k++)
        if (g[k].obj < best) {
            best = g[k].obj;
            out[nf++] = g[k];
        }
    json_decref(root);
    return nf;
}

static void test_main(const char *db)
{
    report_options o = report_options_default();
    o.n_boot = getenv("ST_TEST_QUICK") ? 40 : 200;
    report *r = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(report_create(db, "sim", &o, &r, em), ST_OK);
    if (!r) {
        fprintf(stderr, "%s\n", em);
        return;
    }
    size_t n = n_runs_main();
    CHECK(report_n_runs(r) == n);
    CHECK(report_n_pareto(r) >= 4);
    CHECK(report_n_beyond(r) == 0);
    CHECK(report_n_figures(r) == 3 + 3); /* front, N/tokens/lr, curves, failures */

    /* the front equals one rebuilt from the store's export (groups of identical settings) */
    runner_store *s = NULL;
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    ref_group gf[256];
    size_t np = ref_front(s, "sim", gf, 256);
    json_t *root = load_json(r);
    json_t *front = json_object_get(root, "pareto"), *runs = json_object_get(root, "runs");
    CHECK(json_array_size(front) == np && np == report_n_pareto(r));
    for (size_t i = 0; i < np && i < json_array_size(front); i++) {
        json_t *p = json_array_get(front, i);
        CHECK(json_integer_value(json_object_get(p, "id")) == gf[i].id);
        CHECK_REL(json_number_value(json_object_get(p, "cost")), gf[i].cost, 1e-14);
        CHECK_REL(json_number_value(json_object_get(p, "objective")), gf[i].obj, 1e-14);
        CHECK(json_integer_value(json_object_get(p, "runs")) == (json_int_t)gf[i].n);
    }
    CHECK(json_array_size(runs) == n);
    CHECK(!strcmp(json_string_value(json_object_get(root, "cost_metric")), "flops"));

    /* ln lr on ln cost along the front: slope and intercept by the closed form */
    double lx[256], ly[256];
    for (size_t i = 0; i < np; i++) {
        ly[i] = log(gf[i].lr);
        lx[i] = log(gf[i].cost);
    }
    json_t *fits = json_object_get(root, "fits");
    json_t *hlr = json_object_get(json_object_get(fits, "hyperparameters"), "lr");
    CHECK(!strcmp(json_string_value(json_object_get(hlr, "space")), "log"));
    CHECK(!strcmp(json_string_value(json_object_get(hlr, "role")), "lr"));
    CHECK_REL(json_number_value(json_object_get(hlr, "slope")), ols_slope(np, lx, ly), 1e-9);
    CHECK_REL(json_number_value(json_object_get(hlr, "intercept")), ols_icept(np, lx, ly), 1e-9);
    json_t *si = json_object_get(hlr, "slope_interval");
    double slo = json_number_value(json_array_get(si, 0)),
           shi = json_number_value(json_array_get(si, 1));
    CHECK(slo <= shi);
    CHECK(json_object_get(json_object_get(fits, "hyperparameters"), "batch") == NULL);

    /* the loss law: a decreasing saturating law; its value at the target by the closed form */
    json_t *loss = json_object_get(fits, "loss_vs_cost");
    CHECK(json_is_true(json_object_get(loss, "ok")));
    json_t *par = json_object_get(loss, "params");
    double A = json_number_value(json_object_get(par, "A"));
    double al = json_number_value(json_object_get(par, "alpha"));
    double E = json_number_value(json_object_get(par, "E"));
    CHECK(A > 0 && al > 0 && E > 0);
    json_t *rec = json_object_get(root, "recommendation");
    double C = json_number_value(json_object_get(rec, "compute"));
    double cmax = 0;
    for (size_t k = 0; k < json_array_size(runs); k++) {
        json_t *u = json_array_get(runs, k);
        if (!strcmp(json_string_value(json_object_get(u, "status")), "succeeded"))
            cmax = fmax(cmax, json_number_value(json_object_get(u, "cost")));
    }
    CHECK_REL(C, 10 * cmax, 1e-12); /* default target: ten times the costliest run */
    json_t *lat = json_object_get(loss, "at_target");
    double y = json_number_value(json_object_get(lat, "objective"));
    CHECK_REL(y, E + A * pow(C, -al), 1e-12);
    double lo = json_number_value(json_object_get(lat, "lo"));
    double hi = json_number_value(json_object_get(lat, "hi"));
    CHECK(lo < hi && lo <= y * 1.02 && hi >= y * 0.98);
    CHECK(y < gf[np - 1].obj); /* extrapolating a decreasing law */
    /* N's front law at the target equals exp(b0 + b1 ln C), b0 and b1 by least squares */
    json_t *hN = json_object_get(json_object_get(fits, "hyperparameters"), "N");
    for (size_t i = 0; i < np; i++)
        ly[i] = log(gf[i].N);
    double b0 = ols_icept(np, lx, ly), b1 = ols_slope(np, lx, ly);
    CHECK_REL(json_number_value(json_object_get(hN, "intercept")), b0, 1e-9);
    CHECK_REL(json_number_value(json_object_get(json_object_get(hN, "at_target"), "value")),
              exp(b0 + b1 * log(C)), 1e-9);

    /* the recommendation: the model of every run (N, tokens and lr are known) */
    CHECK(!strcmp(json_string_value(json_object_get(rec, "method")), "model"));
    json_t *recd = json_object_get(rec, "recommended"), *iv = json_object_get(rec, "intervals");
    CHECK(json_object_size(recd) == 3 && json_object_size(iv) == 3);
    const char *pn[3] = {"N", "tokens", "lr"};
    for (int k = 0; k < 3; k++) {
        double v = json_number_value(json_object_get(recd, pn[k]));
        json_t *pr = json_object_get(iv, pn[k]);
        CHECK(v > 0 && json_number_value(json_array_get(pr, 0)) <= v &&
              v <= json_number_value(json_array_get(pr, 1)));
    }
    /* it spends the target compute: N D e^k = C, k the least-squares cost model
     * ln cost = k + ln N + ln D over the fitted runs (its closed form is the mean) */
    double kref = 0;
    size_t nk = 0;
    for (size_t i = 0; i < json_array_size(runs); i++) {
        json_t *u = json_array_get(runs, i), *p = json_object_get(u, "params");
        if (strcmp(json_string_value(json_object_get(u, "status")), "succeeded"))
            continue;
        kref += log(json_number_value(json_object_get(u, "cost"))) -
                log(json_number_value(json_object_get(p, "N"))) -
                log(json_number_value(json_object_get(p, "tokens")));
        nk++;
    }
    kref /= (double)nk;
    json_t *model = json_object_get(fits, "model");
    CHECK(model != NULL);
    CHECK_REL(json_number_value(json_object_get(model, "cost_ln_k")), kref, 1e-9);
    double Nr = json_number_value(json_object_get(recd, "N"));
    double Dr = json_number_value(json_object_get(recd, "tokens"));
    CHECK_REL(Nr * Dr * exp(kref), C, 1e-6);
    CHECK_REL(json_number_value(json_object_get(json_object_get(rec, "size"), "N")), Nr, 1e-9);
    /* the predicted objective: inside its interval, below the best run (more compute), and near
     * L(N, D) = E + A N^-alpha + B D^-beta at the recommended size (penalties near 0 there) */
    json_t *pred = json_object_get(rec, "predicted"), *ch = json_object_get(model, "chinchilla");
    double yp = json_number_value(json_object_get(pred, "objective"));
    CHECK(json_number_value(json_object_get(pred, "lo")) < yp &&
          yp < json_number_value(json_object_get(pred, "hi")));
    CHECK(yp < gf[np - 1].obj);
    double L = json_number_value(json_object_get(ch, "E")) +
               json_number_value(json_object_get(ch, "A")) *
                   pow(Nr, -json_number_value(json_object_get(ch, "alpha"))) +
               json_number_value(json_object_get(ch, "B")) *
                   pow(Dr, -json_number_value(json_object_get(ch, "beta")));
    CHECK_REL(yp, L, 0.05);
    double pd = json_number_value(json_object_get(rec, "p_diverge"));
    CHECK(json_is_number(json_object_get(rec, "p_diverge")) && pd >= 0 && pd <= 0.05);
    CHECK(json_object_get(root, "validation") == NULL);
    json_decref(root);

    /* CSV: header, one row per run, values equal to the store's export */
    char *csv = NULL, *scsv = NULL;
    CHECK_ST(report_csv_dup(r, &csv), ST_OK);
    CHECK_ST(runner_store_export_csv(s, "sim", &scsv), ST_OK);
    const char *head = "id,status,N,tokens,lr,batch,objective,cost,attempts\n";
    CHECK(csv && !strncmp(csv, head, strlen(head)));
    CHECK(csv && rt_count(csv, "\n") == n + 1);
    size_t n_retried = 0;
    if (csv && scsv) {
        /* store CSV: suggestion_id,status,failure,objective,cost,attempts,N,tokens,lr,batch */
        char *save1 = NULL, *save2 = NULL;
        char *l1 = strtok_r(csv, "\n", &save1), *l2 = strtok_r(scsv, "\n", &save2);
        size_t rows = 0;
        while ((l1 = strtok_r(NULL, "\n", &save1)) && (l2 = strtok_r(NULL, "\n", &save2))) {
            char st1[32], st2[32], fl[32];
            long long id1, id2, a1, a2;
            double N1, t1, lr1, b1v, o1, c1, o2, c2, N2, t2, lr2, bb2;
            int k1 = sscanf(l1, "%lld,%31[^,],%lf,%lf,%lf,%lf,%lf,%lf,%lld", &id1, st1, &N1, &t1,
                            &lr1, &b1v, &o1, &c1, &a1);
            int k2 = sscanf(l2, "%lld,%31[^,],%31[^,],%lf,%lf,%lld,%lf,%lf,%lf,%lf", &id2, st2, fl,
                            &o2, &c2, &a2, &N2, &t2, &lr2, &bb2);
            if (k1 == 9 && k2 == 10) {
                CHECK(id1 == id2 && !strcmp(st1, st2) && a1 == a2);
                CHECK(o1 == o2 && c1 == c2 && N1 == N2 && t1 == t2 && lr1 == lr2 && b1v == bb2);
                n_retried += a1 > 1;
                rows++;
            } else {
                /* a failed run has empty objective/cost cells: compare the id only */
                CHECK(atoll(l1) == atoll(l2));
                rows++;
            }
        }
        CHECK(rows == n);
    }
    CHECK(n_retried >= 2); /* every 4th run's first attempt crashed */
    st_free(csv);
    st_free(scsv);
    runner_store_close(s);

    /* HTML and Markdown */
    char *html = NULL, *md = NULL;
    CHECK_ST(report_html_dup(r, &html), ST_OK);
    if (html)
        check_html(html, report_n_figures(r));
    /* the model method: one prediction at the target, the engine's; the front law is labelled
     * CARBS' analysis and its value at the target is not shown as a second prediction
     * (issue 19); numbers in human formats */
    CHECK(html && strstr(html, "<b>CARBS' analysis (Pareto front law)</b>") &&
          strstr(html, "blue: CARBS' analysis (Pareto front law)") &&
          strstr(html, "the front law is not a second prediction"));
    CHECK(html && !strstr(html, "y at the target") && !strstr(html, "model at target"));
    CHECK(html && strstr(html, "no backtest of the front law alone"));
    /* tables: "258M", "9.45G", 4 significant digits, never 6 (6.16759e+14) */
    CHECK(html && strstr(html, "<td>9.45G</td>") && strstr(html, "<td>258M</td>"));
    const char *pdc = html ? strstr(html, "probability of divergence</td><td>") : NULL;
    CHECK(pdc && strchr(pdc, 0x25) && strchr(pdc, 0x25) < strstr(pdc, "</td></tr>")); /* "< 0.1%" */
    CHECK(html && !strstr(html, "cost of fitted runs</th><td class=\"l\">6.16759e+14"));
    st_free(html);
    CHECK_ST(report_md_dup(r, &md), ST_OK);
    CHECK(md && strstr(md, "## Recommendation at compute") && strstr(md, "| lr |") &&
          strstr(md, "## Pareto front"));
    CHECK(md && strstr(md, "CARBS' analysis (Pareto front law)") && !strstr(md, "y at the target"));
    /* one sentence says what to run and what to expect (issue 19) */
    CHECK(md && strstr(md, "**What to run: ") && strstr(md, "Expected val_loss: ") &&
          strstr(md, "% interval ") && strstr(md, "Probability that it diverges: "));
    st_free(md);

    /* files: atomic (no temporary left), readable, and the same text as the dup */
    CHECK_ST(report_write_html(r, rt_path("r.html")), ST_OK);
    CHECK_ST(report_write_json(r, rt_path("r.json")), ST_OK);
    CHECK_ST(report_write_csv(r, rt_path("r.csv")), ST_OK);
    CHECK_ST(report_write_md(r, rt_path("r.md")), ST_OK);
    char *f = rt_slurp(rt_path("r.json")), *d = NULL;
    CHECK_ST(report_json_dup(r, &d), ST_OK);
    CHECK(f && d && !strcmp(f, d));
    free(f);
    st_free(d);
    DIR *dir = opendir(rt_dir);
    size_t n_tmp = 0;
    for (struct dirent *e; dir && (e = readdir(dir));)
        n_tmp += strstr(e->d_name, ".tmp.") != NULL;
    if (dir)
        closedir(dir);
    CHECK(n_tmp == 0);

    /* an unwritable path: ST_EIO naming it, and the existing file is untouched */
    CHECK_ST(report_write_html(r, "/nonexistent-dir/r.html"), ST_EIO);
    CHECK(strstr(report_errmsg(r), "/nonexistent-dir/r.html") != NULL);
    report_destroy(r);
}

/* method front: CARBS' recommendation is the front laws at the target (closed forms). */
static void test_front_method(const char *db)
{
    report_options o = report_options_default();
    o.n_boot = 40;
    o.method = 1;
    o.target_compute = 3e18;
    report *r = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(report_create(db, "sim", &o, &r, em), ST_OK);
    if (!r)
        return;
    json_t *root = load_json(r);
    json_t *rec = json_object_get(root, "recommendation"), *fits = json_object_get(root, "fits");
    CHECK(!strcmp(json_string_value(json_object_get(rec, "method")), "front"));
    /* the front's stability boundary (fit/extrapolate_front_boundary.c): P(diverge) reported */
    double pdiv = json_number_value(json_object_get(rec, "p_diverge"));
    CHECK(json_is_number(json_object_get(rec, "p_diverge")) && pdiv >= 0 && pdiv <= 1);
    CHECK(json_object_get(fits, "model") == NULL);
    double C = 3e18;
    json_t *par = json_object_get(json_object_get(fits, "loss_vs_cost"), "params");
    double A = json_number_value(json_object_get(par, "A"));
    double al = json_number_value(json_object_get(par, "alpha"));
    double E = json_number_value(json_object_get(par, "E"));
    json_t *pred = json_object_get(rec, "predicted");
    CHECK_REL(json_number_value(json_object_get(pred, "objective")), E + A * pow(C, -al), 1e-12);
    /* N is an integer parameter: the law rounded; lr: the law (inside its bounds), or lowered
     * below it with a warning when P(diverge) there was above the limit */
    json_t *hp = json_object_get(fits, "hyperparameters"),
           *recd = json_object_get(rec, "recommended");
    json_t *hN = json_object_get(hp, "N"), *hl = json_object_get(hp, "lr");
    double vN = exp(json_number_value(json_object_get(hN, "intercept")) +
                    json_number_value(json_object_get(hN, "slope")) * log(C));
    double vl = exp(json_number_value(json_object_get(hl, "intercept")) +
                    json_number_value(json_object_get(hl, "slope")) * log(C));
    CHECK_ABS(json_number_value(json_object_get(recd, "N")), round(vN), 0.5);
    double rl = json_number_value(json_object_get(recd, "lr"));
    int lowered = 0, at_min = 0;
    json_t *wa = json_object_get(rec, "warnings");
    for (size_t k = 0; k < json_array_size(wa); k++) {
        const char *w = json_string_value(json_array_get(wa, k));
        lowered |= strstr(w, "lr lowered from") != NULL;
        at_min |= strstr(w, "the lowest allowed") != NULL;
    }
    if (vl > 1e-4 && vl < 0.3 && !lowered)
        CHECK_REL(rl, vl, 1e-12);
    if (vl > 1e-4 && vl < 0.3 && lowered)
        CHECK(rl < vl && (pdiv <= 0.05 + 1e-12 || at_min));
    json_decref(root);
    char *md = NULL;
    CHECK_ST(report_md_dup(r, &md), ST_OK);
    CHECK(md && strstr(md, "(method: front)") && strstr(md, "slope ln C"));
    /* the front method: the front law at the target is the engine's one prediction */
    CHECK(md && strstr(md, "CARBS' analysis (Pareto front law)") &&
          strstr(md, "| y at the target |"));
    st_free(md);
    char *html = NULL;
    CHECK_ST(report_html_dup(r, &html), ST_OK);
    CHECK(html && strstr(html, "orange: the engine's prediction, that law at the target") &&
          strstr(html, "y at the target"));
    st_free(html);
    report_destroy(r);

    /* no bootstrap: no bands and no intervals */
    o.n_boot = 0;
    CHECK_ST(report_create(db, "sim", &o, &r, em), ST_OK);
    if (!r)
        return;
    root = load_json(r);
    rec = json_object_get(root, "recommendation");
    CHECK(json_is_null(json_object_get(json_object_get(rec, "predicted"), "lo")));
    CHECK(json_is_null(json_array_get(json_object_get(json_object_get(rec, "intervals"), "N"), 0)));
    json_decref(root);
    report_destroy(r);
}

/* Runs above fit_max_cost are predicted, not fitted; the largest one is the validation. */
static void test_beyond(const char *db)
{
    report_options o = report_options_default();
    o.n_boot = 40;
    o.method = 1; /* the front law's prediction has a closed form */
    report *r = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(report_create(db, "sim", &o, &r, em), ST_OK);
    if (!r)
        return;
    json_t *root = load_json(r);
    /* cut between the second- and third-largest costs of succeeded runs */
    double c[256];
    size_t m = 0;
    json_t *runs = json_object_get(root, "runs");
    for (size_t i = 0; i < json_array_size(runs); i++) {
        json_t *u = json_array_get(runs, i);
        if (!strcmp(json_string_value(json_object_get(u, "status")), "succeeded"))
            c[m++] = json_number_value(json_object_get(u, "cost"));
    }
    json_decref(root);
    report_destroy(r);
    for (size_t i = 1; i < m; i++) /* sort descending */
        for (size_t j = i; j > 0 && c[j] > c[j - 1]; j--) {
            double t = c[j];
            c[j] = c[j - 1];
            c[j - 1] = t;
        }
    o.fit_max_cost = sqrt(c[1] * c[2]);
    CHECK_ST(report_create(db, NULL, &o, &r, em), ST_OK);
    if (!r)
        return;
    CHECK(report_n_beyond(r) >= 2);
    CHECK(report_n_figures(r) == 3 + 3 + 1);
    root = load_json(r);
    json_t *v = json_object_get(root, "validation");
    CHECK(v != NULL);
    json_t *par =
        json_object_get(json_object_get(json_object_get(root, "fits"), "loss_vs_cost"), "params");
    double A = json_number_value(json_object_get(par, "A"));
    double al = json_number_value(json_object_get(par, "alpha"));
    double E = json_number_value(json_object_get(par, "E"));
    runs = json_object_get(root, "runs");
    for (size_t i = 0; i < json_array_size(runs); i++) {
        json_t *u = json_array_get(runs, i);
        if (json_integer_value(json_object_get(u, "id")) !=
            json_integer_value(json_object_get(v, "run")))
            continue;
        double cost = json_number_value(json_object_get(u, "cost"));
        CHECK_REL(cost, c[0], 1e-15); /* the costliest run */
        CHECK(json_is_true(json_object_get(u, "beyond_fit")));
        CHECK_REL(json_number_value(json_object_get(v, "actual")),
                  json_number_value(json_object_get(u, "objective")), 0);
        CHECK_REL(json_number_value(json_object_get(v, "predicted")), E + A * pow(cost, -al),
                  1e-12);
    }
    CHECK(json_number_value(json_object_get(v, "lo")) <
          json_number_value(json_object_get(v, "hi")));
    CHECK(!strcmp(
        json_string_value(json_object_get(json_object_get(root, "recommendation"), "method")),
        "front"));
    /* the beyond runs are off the fitted front */
    json_t *front = json_object_get(root, "pareto");
    for (size_t i = 0; i < json_array_size(front); i++)
        CHECK(json_number_value(json_object_get(json_array_get(front, i), "cost")) <
              o.fit_max_cost);
    json_decref(root);
    char *html = NULL;
    CHECK_ST(report_html_dup(r, &html), ST_OK);
    if (html) {
        check_html(html, report_n_figures(r));
        CHECK(strstr(html, "<figcaption>Runs beyond the fit:") != NULL);
        CHECK(strstr(html, "<h2>Validation</h2>") != NULL);
    }
    st_free(html);
    report_destroy(r);

    /* the model predicts each beyond run at its own settings, with P(diverge) */
    o.method = 0;
    CHECK_ST(report_create(db, NULL, &o, &r, em), ST_OK);
    if (!r)
        return;
    root = load_json(r);
    CHECK(!strcmp(
        json_string_value(json_object_get(json_object_get(root, "recommendation"), "method")),
        "model"));
    runs = json_object_get(root, "runs");
    size_t nb = 0;
    for (size_t i = 0; i < json_array_size(runs); i++) {
        json_t *u = json_array_get(runs, i), *pr = json_object_get(u, "predicted");
        if (!pr || strcmp(json_string_value(json_object_get(u, "status")), "succeeded"))
            continue;
        double p = json_number_value(json_object_get(pr, "objective"));
        double a = json_number_value(json_object_get(u, "objective"));
        CHECK(json_number_value(json_object_get(pr, "lo")) < p &&
              p < json_number_value(json_object_get(pr, "hi")));
        CHECK(json_is_number(json_object_get(pr, "p_diverge")));
        CHECK_REL(p, a, 0.1); /* the simulator is smooth: the model is close */
        nb++;
    }
    CHECK(nb >= 2);
    json_decref(root);
    report_destroy(r);
}

/* A second sweep in the same store as the validation runs. */
static void test_validate_sweep(const char *db)
{
    CHECK_ST(rt_sweep_k(db, "big", 3, 60), ST_OK); /* 60 records: a curve to predict */
    /* an alert scaletune run's watch stored for the large run */
    runner_store *s = NULL;
    runner_alert al = {1, 0, 40, "curve_outside", "the curve <extrapolates> to 3.1"};
    CHECK_ST(runner_store_open(db, &s, NULL), ST_OK);
    CHECK_ST(runner_store_add_alert(s, "big", &al, NULL), ST_OK);
    runner_store_close(s);
    report_options o = report_options_default();
    o.n_boot = 30;
    o.validate_sweep = "big";
    o.title = "with <validation> & more";
    report *r = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(report_create(db, "sim", &o, &r, em), ST_OK);
    if (!r)
        return;
    CHECK(report_n_runs(r) == n_runs_main());
    CHECK(report_n_beyond(r) == 3);
    char *csv = NULL, *html = NULL;
    CHECK_ST(report_csv_dup(r, &csv), ST_OK);
    CHECK(csv && rt_count(csv, "\n") == n_runs_main() + 1); /* the sweep's runs only */
    st_free(csv);
    CHECK_ST(report_html_dup(r, &html), ST_OK);
    CHECK(html && strstr(html, "<title>with &lt;validation&gt; &amp; more</title>"));
    /* the validation run's training curve against its prediction (issue 19) */
    CHECK(html && strstr(html, "Black: the validation run's training loss"));
    /* and its curve predicted from its own first 30% (power law: llmsim's step records carry
     * the lr at the reported steps only): in that figure (PLplot draws text glyph by glyph),
     * the band (a polygon filled in the predicted curve's blue) and the dashed path (many short
     * blue polylines; a Pareto run's line is one) */
    const char *cap =
        html ? strstr(html, "Blue, dashed: its curve predicted from its own first") : NULL;
    CHECK(cap && strstr(cap, "a power law in steps"));
    const char *fig = cap;
    while (fig && fig > html && strncmp(fig, "<figure>", 8))
        fig--;
    size_t n_blue = 0, n_band = 0;
    for (const char *q = fig; q && (q = strstr(q, "stroke=\"#1F77B4\"")) && q < cap; q++)
        n_blue++;
    for (const char *q = fig; q && (q = strstr(q, "fill=\"#1F77B4\"")) && q < cap; q++)
        n_band++;
    CHECK(n_band >= 1 && n_blue >= 10);
    /* the model at the validation run's settings with fewer tokens (issue 17, part 4) */
    CHECK(html && strstr(html, "Green, dashed: the engine's model at the validation run's"));
    if (html)
        check_html(html, report_n_figures(r));
    st_free(html);
    json_t *root = load_json(r);
    CHECK(json_object_get(root, "validation") != NULL);
    /* its points: fractions 0.1 .. 1 of its tokens; at 1 the prediction of its objective */
    size_t n_curves = 0;
    json_t *jr = json_object_get(root, "runs");
    for (size_t i = 0; i < json_array_size(jr); i++) {
        json_t *u = json_array_get(jr, i), *pc = json_object_get(u, "predicted_curve");
        if (!pc)
            continue;
        n_curves++;
        size_t m = json_array_size(pc);
        json_t *first = json_array_get(pc, 0), *last = json_array_get(pc, m - 1);
        CHECK(m == RP_ENV && json_object_get(u, "validation_sweep"));
        CHECK_REL(json_number_value(json_object_get(first, "token_fraction")), 0.1, 1e-12);
        CHECK_REL(json_number_value(json_object_get(last, "token_fraction")), 1.0, 1e-12);
        CHECK_REL(json_number_value(json_object_get(last, "objective")),
                  json_number_value(json_object_get(json_object_get(u, "predicted"), "objective")),
                  1e-12);
        for (size_t k = 0; k < m; k++) {
            json_t *e = json_array_get(pc, k);
            double y = json_number_value(json_object_get(e, "objective"));
            CHECK(json_number_value(json_object_get(e, "lo")) <= y &&
                  y <= json_number_value(json_object_get(e, "hi")));
        }
    }
    CHECK(n_curves == 3); /* the three validation runs */
    json_t *va = json_object_get(root, "validation_alerts");
    CHECK(json_array_size(va) == 1 &&
          !strcmp(json_string_value(json_object_get(json_array_get(va, 0), "kind")),
                  "curve_outside") &&
          json_integer_value(json_object_get(json_array_get(va, 0), "step")) == 40);
    json_decref(root);
    CHECK_ST(report_html_dup(r, &html), ST_OK);
    CHECK(html && strstr(html, "<h3>Alerts of the large run</h3>") &&
          strstr(html, "the curve &lt;extrapolates&gt; to 3.1"));
    st_free(html);
    report_destroy(r);

    /* a sweep too small for the engine: a report that says why, without laws */
    CHECK_ST(rt_sweep(db, "tiny", 2), ST_OK);
    o = report_options_default();
    CHECK_ST(report_create(db, "tiny", &o, &r, em), ST_OK);
    if (r) {
        CHECK(report_n_pareto(r) == 0);
        root = load_json(r);
        json_t *rec = json_object_get(root, "recommendation");
        CHECK(!strcmp(json_string_value(json_object_get(rec, "method")), "none"));
        CHECK(strstr(json_string_value(json_array_get(json_object_get(rec, "warnings"), 0)),
                     "successful runs") != NULL);
        json_decref(root);
        CHECK_ST(report_html_dup(r, &html), ST_OK);
        if (html)
            check_html(html, report_n_figures(r));
        st_free(html);
        report_destroy(r);
    }

    /* a validation sweep that does not exist */
    o.validate_sweep = "nope";
    CHECK_ST(report_create(db, "sim", &o, &r, em), ST_ENOTFOUND);
    CHECK(r == NULL && strstr(em, "nope"));
    /* several sweeps and no name */
    CHECK(report_create(db, NULL, NULL, &r, em) != ST_OK && r == NULL);
}

/* The engine's prior on E reaches the report's fit: a tight one at 1.0 puts the law's E there
 * (the world's is 1.82), and without it E is elsewhere. */
static double report_E(const char *db, double prior_e, double prior_e_sd)
{
    report_options o = report_options_default();
    o.n_boot = 0;
    o.method = 2;
    o.prior_e = prior_e;
    o.prior_e_sd = prior_e_sd;
    report *r = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(report_create(db, "sim", &o, &r, em), ST_OK);
    if (!r)
        return NAN;
    json_t *root = load_json(r);
    json_t *ch =
        json_object_get(json_object_get(json_object_get(root, "fits"), "model"), "chinchilla");
    double E = json_number_value(json_object_get(ch, "E"));
    json_decref(root);
    report_destroy(r);
    return E;
}

static void test_prior_e(const char *db)
{
    double E_off = report_E(db, NAN, 0), E_on = report_E(db, 1.0, 0.01);
    printf("report with a prior on E at 1.0 (sd 0.01): E %.4f; without: %.4f\n", E_on, E_off);
    CHECK_ABS(log(E_on), 0, 0.05);
    CHECK(fabs(log(E_off)) > 0.1);
}

static void test_errors(const char *db)
{
    report *r = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(report_create(db, "missing", NULL, &r, em), ST_ENOTFOUND);
    CHECK(r == NULL && strstr(em, "missing"));
    CHECK_ST(report_create(NULL, "sim", NULL, &r, em), ST_EINVAL);
    report_options o = report_options_default();
    o.band_level = 1.5;
    CHECK_ST(report_create(db, "sim", &o, &r, em), ST_EINVAL);
    o = report_options_default();
    o.method = 3;
    CHECK_ST(report_create(db, "sim", &o, &r, em), ST_EINVAL);
    /* not a store */
    FILE *f = fopen(rt_path("junk.db"), "w");
    if (f) {
        fputs("this is not a database, just some text long enough to have a header page\n", f);
        fclose(f);
    }
    CHECK_ST(report_create(rt_path("junk.db"), NULL, NULL, &r, em), ST_EDB);
    CHECK(r == NULL);
    report_destroy(NULL);
}

/* Human number formats against hand-written strings. */
static void test_human(void)
{
    static const struct {
        double v;
        const char *want;
    } cases[] = {{1852420, "1.85M"}, {3e11, "300G"},     {12000, "12k"},
                 {9999, "9999"},     {2.04269, "2.043"}, {0.00503616, "0.005036"},
                 {999700, "1M"},     {-2.5e7, "-25M"},   {3e18, "3e+18"},
                 {NAN, "–"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char b[64];
        rp_fmt_human(b, sizeof(b), cases[i].v);
        if (strcmp(b, cases[i].want))
            fprintf(stderr, "  rp_fmt_human(%g) = '%s', want '%s'\n", cases[i].v, b, cases[i].want);
        CHECK(!strcmp(b, cases[i].want));
    }
}

/* Cooldown branches (rows with a parent_run, as the controller's `branches:` block makes them):
 * one per succeeded run at half its tokens, 5% above it. They are points of their runs: not in
 * the run count, the runs table or the CSV, never on the front; the JSON lists them with their
 * parent; the loss curves draw them as diamonds; the engine keeps them as points. */
static void test_branches(void)
{
    char db[4200];
    snprintf(db, sizeof(db), "%s", rt_path("branches.db"));
    CHECK_ST(rt_sweep_k(db, "brs", 14, 10), ST_OK);
    sqlite3 *h = NULL;
    CHECK(sqlite3_open(db, &h) == SQLITE_OK);
    CHECK(sqlite3_exec(h,
                       "INSERT INTO runs(sweep_id, status, x, created, objective, cost, final, "
                       "parent_run, branch_step, decay_steps) SELECT sweep_id, 2, x, created, "
                       "objective * 1.05, cost * 0.2, json_set(final, '$.tokens', "
                       "json_extract(final, '$.tokens') * 0.5, '$.val_loss', objective * 1.05), "
                       "id, 4, 1 FROM runs WHERE status = 2 AND parent_run IS NULL",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_stmt *st = NULL;
    int n_br = 0, n_runs = 0;
    if (sqlite3_prepare_v2(h,
                           "SELECT sum(parent_run IS NOT NULL), sum(parent_run IS NULL) FROM "
                           "runs",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        n_br = sqlite3_column_int(st, 0);
        n_runs = sqlite3_column_int(st, 1);
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    CHECK(n_br >= 4 && n_runs == 14);

    report_options o = report_options_default();
    o.n_boot = 40;
    report *r = NULL;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(report_create(db, "brs", &o, &r, em), ST_OK);
    if (!r) {
        fprintf(stderr, "%s\n", em);
        return;
    }
    CHECK(report_n_runs(r) == (size_t)n_runs);
    json_t *root = load_json(r);
    json_t *runs = json_object_get(root, "runs"), *front = json_object_get(root, "pareto");
    size_t with_parent = 0;
    for (size_t i = 0; i < json_array_size(runs); i++)
        with_parent += json_object_get(json_array_get(runs, i), "parent_run") != NULL;
    CHECK(json_array_size(runs) == (size_t)(n_runs + n_br) && with_parent == (size_t)n_br);
    for (size_t i = 0; i < json_array_size(front); i++) /* ids of runs: at most n_runs */
        CHECK(json_integer_value(json_object_get(json_array_get(front, i), "id")) <= n_runs);
    json_decref(root);
    char *html = NULL, *csv = NULL;
    CHECK_ST(report_html_dup(r, &html), ST_OK);
    CHECK(html && strstr(html, "Diamonds: the val_loss of the runs'") &&
          strstr(html, "cooldown branches</th>"));
    CHECK_ST(report_csv_dup(r, &csv), ST_OK);
    size_t lines = 0;
    for (const char *p = csv; p && *p; p++)
        lines += *p == '\n';
    CHECK(lines == (size_t)n_runs + 1); /* the header and the runs */
    free(html);
    free(csv);
    report_destroy(r);
}

int main(int argc, char **argv)
{
    (void)argc;
    rt_init(argv[0]);
    test_human();
    if (access(rt_sim, X_OK) != 0) {
        fprintf(stderr, "llmsim not found at %s (make build/bench/llmsim/llmsim)\n", rt_sim);
        CHECK(0);
        return check_summary("report.outputs");
    }
    char db[4200];
    snprintf(db, sizeof(db), "%s", rt_path("sweeps.db")); /* rt_path's buffers rotate */
    CHECK_ST(rt_sweep(db, "sim", n_runs_main()), ST_OK);
    test_main(db);
    test_front_method(db);
    test_beyond(db);
    test_validate_sweep(db);
    test_prior_e(db);
    test_errors(db);
    test_branches();
    rt_cleanup();
    return check_summary("report.outputs");
}
