/*
 * test_report_plot.c — the report's figures as a reader sees them (issue 19): the legend inside
 * the figure, in the corner with the least data; a log axis spanning less than two decades with
 * at least two labelled ticks as a person writes them (20, 50). Reads the SVG that plot.c writes;
 * no store, no trainer.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_int.h"
#include "tests/check.h"

#define W 640
#define H 400

/* The largest x of any polyline or polygon point outside the clip paths. */
static double max_point_x(const char *svg)
{
    double mx = 0;
    const char *p = svg;
    while ((p = strstr(p, "points=\"")) != NULL) {
        const char *clip = NULL;
        for (const char *q = svg; (q = strstr(q, "<clipPath")) && q < p; q++)
            clip = q;
        int in_clip = clip && !(strstr(clip, "</clipPath>") && strstr(clip, "</clipPath>") < p);
        p += 8;
        const char *end = strchr(p, '"');
        while (!in_clip && end && p < end) {
            char *e;
            double x = strtod(p, &e);
            if (e == p)
                break;
            mx = x > mx ? x : mx;
            p = strchr(e, ' ');
            if (!p || p > end)
                break;
            while (*p == ' ')
                p++;
        }
        p = end ? end : p;
    }
    return mx;
}

/* Where the string `label` is in the SVG: PLplot writes each character as "&#xHH;" inside
 * a <tspan>, ending with "</tspan>" (or "<tspan" for a superscript, when `sup`). */
static const char *find_text(const char *svg, const char *label, int sup)
{
    char want[512];
    size_t n = (size_t)snprintf(want, sizeof(want), "\">");
    for (const char *c = label; *c && n + 16 < sizeof(want); c++)
        n += (size_t)snprintf(want + n, sizeof(want) - n, "&#x%x;", (unsigned char)*c);
    snprintf(want + n, sizeof(want) - n, "%s", sup ? "<tspan" : "</tspan>");
    return strstr(svg, want);
}

/* The x of the text element whose content is `label` (PLplot writes each string in a
 * <text transform="matrix(... x y)"> element); NAN when absent. */
static double text_x(const char *svg, const char *label)
{
    const char *t = find_text(svg, label, 0);
    if (!t)
        return NAN;
    const char *m = NULL;
    for (const char *q = svg; (q = strstr(q, "matrix(")) && q < t; q++)
        m = q;
    double a, b, c, d, x;
    return m && sscanf(m, "matrix(%lf %lf %lf %lf %lf", &a, &b, &c, &d, &x) == 5 ? x : NAN;
}

/* Data on the whole right half: the legend goes to a left corner, and stays inside. */
static void test_legend_inside(void)
{
    rp_fig *f = NULL;
    CHECK_ST(rp_fig_begin(&f, W, H, 0, 10, 0, 10, 0, 0, "x", "y", "legend"), ST_OK);
    if (!f)
        return;
    double x[40], y[40];
    for (int i = 0; i < 40; i++)
        x[i] = 5.5 + (i % 8) * 0.5, y[i] = 0.2 + (i / 8) * 2.3;
    rp_fig_points(f, 40, x, y, 2, 17, 1);
    rp_fig_legend(f, "zzlegend a rather long legend entry, as the report writes them", 2, 0, 0, 0);
    rp_fig_legend(f, "second", 3, -1, 1, 0);
    char *svg = NULL;
    CHECK_ST(rp_fig_end(f, &svg), ST_OK);
    if (!svg)
        return;
    double mx = max_point_x(svg), tx = text_x(svg, "second");
    if (!(mx < 0.97 * W))
        fprintf(stderr, "  legend: a point at x %g of %d\n", mx, W);
    CHECK(mx < 0.97 * W); /* nothing runs past the plot's right edge */
    if (!(tx < W / 2.0))
        fprintf(stderr, "  legend: text at x %g, want the left half (data on the right)\n", tx);
    CHECK(tx < W / 2.0);
    free(svg);
}

/* A log y axis from 16 to 64: PLplot's powers of ten label none; we label 20 and 50. A log x
 * axis over three decades keeps PLplot's labels. */
static void test_log_labels(void)
{
    rp_fig *f = NULL;
    CHECK_ST(rp_fig_begin(&f, W, H, 8, 11, log10(16), log10(64), 1, 1, "cost", "d_model", "t"),
             ST_OK);
    if (!f)
        return;
    char *svg = NULL;
    CHECK_ST(rp_fig_end(f, &svg), ST_OK);
    if (!svg)
        return;
    CHECK(find_text(svg, "20", 0) != NULL);
    CHECK(find_text(svg, "50", 0) != NULL);
    CHECK(find_text(svg, "10", 1) != NULL); /* the x axis: 10^8 ... 10^11 as PLplot writes them */
    free(svg);
    /* a narrow span, 1.1M to 1.9M, holds no 1-9 multiple: its ends, in human format */
    CHECK_ST(rp_fig_begin(&f, W, H, 0, 1, log10(1.1e6), log10(1.9e6), 0, 1, "x", "tokens", "t"),
             ST_OK);
    if (!f)
        return;
    CHECK_ST(rp_fig_end(f, &svg), ST_OK);
    if (!svg)
        return;
    int ok = find_text(svg, "1.1M", 0) && find_text(svg, "1.9M", 0); /* its two ends */
    if (!ok)
        fprintf(stderr, "  narrow log axis: want 1.1M and 1.9M\n");
    CHECK(ok);
    free(svg);
}

int main(void)
{
    test_legend_inside();
    test_log_labels();
    return check_summary("report.plot");
}
