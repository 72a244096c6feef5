/*
 * plot.c — figures for the report, drawn by PLplot's "svg" device into memory (open_memstream
 * + plsfile; PLplot closes the stream at plend1). Each figure is its own PLplot stream, made
 * with plmkstrm and ended with plend1, and the caller's current stream is restored, so the
 * report does not disturb other PLplot users in the process (which must not run concurrently).
 * Log axes take log10 data and PLplot's "l" box option; one spanning less than two decades, where
 * PLplot would label one power of ten or none, gets labels at 1-2-5 (or finer) multiples as a
 * person writes them (20, 50, 1M). The legend sits inside the plot area, in the corner with the
 * fewest data points.
 * The XML prologue, DOCTYPE and xlink namespace are dropped so that the element inlines in HTML.
 */
#include <math.h>
#include <plplot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_int.h"

#define LEG_MAX    12
#define TEXT_MAX   160
#define COL_BAND   14 /* cmap0 slot used for translucent fills */
#define N_DISTINCT 9
#define GRID       20

struct rp_fig {
    FILE *mem;
    char *buf;
    size_t len;
    PLINT old_strm;
    double xmin, xmax, ymin, ymax;
    double occ[GRID][GRID]; /* data drawn per cell of the plot area (where the legend goes) */
    size_t n_leg;
    char leg_text[LEG_MAX][TEXT_MAX];
    int leg_colour[LEG_MAX], leg_glyph[LEG_MAX], leg_line[LEG_MAX], leg_band[LEG_MAX];
};

/* cmap0: 0 white background, 1 black, 2 grey, 3.. a colour-blind-friendly set (Tableau 10). */
static const PLINT pal_r[] = {255, 0, 150, 31, 255, 44, 214, 148, 140, 227, 188, 23, 220, 0, 0, 0};
static const PLINT pal_g[] = {255, 0, 150, 119, 127, 160, 39, 103, 86, 119, 189, 190, 220, 0, 0, 0};
static const PLINT pal_b[] = {255, 0, 150, 180, 14, 44, 40, 189, 75, 194, 34, 207, 220, 0, 0, 0};

static PLINT colour_index(int c)
{
    if (c <= 0)
        return 1;
    if (c == 1)
        return 2;
    return 3 + (c - 2) % N_DISTINCT;
}

/* PLplot reads '#' as its escape character: text from the store must not carry one. */
static void plain(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src && src[i] && i + 1 < cap; i++)
        dst[i] = src[i] == '#' ? ' ' : src[i];
    dst[i] = '\0';
}

/* Adds weight w to the cell of the plot area that holds (x, y). */
static void note_point(rp_fig *f, double x, double y, double w)
{
    double u = (x - f->xmin) / (f->xmax - f->xmin), v = (y - f->ymin) / (f->ymax - f->ymin);
    if (!(u >= 0 && u <= 1 && v >= 0 && v <= 1))
        return;
    f->occ[u >= 1 ? GRID - 1 : (int)(u * GRID)][v >= 1 ? GRID - 1 : (int)(v * GRID)] += w;
}

/* A segment weighs w per plot width of its length, spread along it. */
static void note_segment(rp_fig *f, double x0, double y0, double x1, double y1, double w)
{
    double dx = (x1 - x0) / (f->xmax - f->xmin), dy = (y1 - y0) / (f->ymax - f->ymin);
    double len = hypot(dx, dy);
    if (!isfinite(len))
        return;
    int n = 1 + (int)(len * 2 * GRID);
    for (int k = 0; k < n; k++) {
        double t = (k + 0.5) / n;
        note_point(f, x0 + t * (x1 - x0), y0 + t * (y1 - y0), w * len / n);
    }
}

/* 1 when a log axis from lo to hi (log10) needs our labels: PLplot's "l" labels only powers of
 * ten, fewer than two of them on a span under two decades. */
static int few_decades(double lo, double hi)
{
    return floor(hi) - ceil(lo) < 1;
}

/* Labels a log axis (lo..hi in log10) at m × 10^k for the mantissas that give at least two
 * labels: 1, 2, 5; else 1-9; else the two ends. side: 'b' (x) or 'l' (y). */
static void log_labels(char side, double lo, double hi)
{
    static const double m125[] = {1, 2, 5}, m19[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    const double *m[2] = {m125, m19};
    size_t n_m[2] = {3, 9};
    char t[32];
    for (int pass = 0; pass < 3; pass++) {
        double at[64];
        size_t n = 0;
        if (pass == 2) {
            at[0] = lo, at[1] = hi, n = 2;
        } else {
            for (double k = floor(lo); k <= ceil(hi) && n < 64; k++)
                for (size_t i = 0; i < n_m[pass] && n < 64; i++) {
                    double v = log10(m[pass][i]) + k;
                    if (v >= lo - 1e-9 && v <= hi + 1e-9)
                        at[n++] = v;
                }
        }
        if (n < 2)
            continue;
        for (size_t i = 0; i < n; i++) {
            rp_fmt_human(t, sizeof(t), pow(10, at[i]));
            double pos = (at[i] - lo) / (hi - lo);
            if (side == 'b')
                plmtex("b", 1.6, pos, 0.5, t);
            else
                plmtex("lv", 0.6, pos, 1.0, t);
        }
        return;
    }
}

st_status rp_fig_begin(rp_fig **out, int w, int h, double xmin, double xmax, double ymin,
                       double ymax, int xlog, int ylog, const char *xlabel, const char *ylabel,
                       const char *title)
{
    *out = NULL;
    rp_fig *f = calloc(1, sizeof(*f));
    if (!f)
        return ST_ENOMEM;
    f->mem = open_memstream(&f->buf, &f->len);
    if (!f->mem) {
        free(f);
        return ST_ENOMEM;
    }
    /* a degenerate range would make PLplot divide by zero */
    if (!(xmax > xmin) || !isfinite(xmax - xmin)) {
        double c = isfinite(xmin) ? xmin : 0;
        xmin = c - 1, xmax = c + 1;
    }
    if (!(ymax > ymin) || !isfinite(ymax - ymin)) {
        double c = isfinite(ymin) ? ymin : 0;
        ymin = c - 1, ymax = c + 1;
    }
    f->xmin = xmin, f->xmax = xmax, f->ymin = ymin, f->ymax = ymax;

    plgstrm(&f->old_strm);
    PLINT strm;
    plmkstrm(&strm);
    plsdev("svg");
    plsfile(f->mem);
    plspage(0, 0, w, h, 0, 0);
    plscmap0(pal_r, pal_g, pal_b, 16);
    plinit();
    pladv(0);
    plschr(0, 0.85);
    plvpor(0.1, 0.96, 0.13, 0.9);
    plwind(xmin, xmax, ymin, ymax);
    int xown = xlog && few_decades(xmin, xmax), yown = ylog && few_decades(ymin, ymax);

    /* light grid first, then the box on top */
    plcol0(12);
    plwidth(0.5);
    plbox(xlog ? "gl" : "g", 0, 0, ylog ? "gl" : "g", 0, 0);
    plcol0(1);
    plwidth(1);
    char xo[16], yo[16];
    snprintf(xo, sizeof(xo), "bc%sst%s", xown ? "" : "n", xlog ? "l" : "");
    snprintf(yo, sizeof(yo), "bc%sstv%s", yown ? "" : "n", ylog ? "l" : "");
    plbox(xo, 0, 0, yo, 0, 0);
    if (xown)
        log_labels('b', xmin, xmax);
    if (yown)
        log_labels('l', ymin, ymax);
    char xl[TEXT_MAX], yl[TEXT_MAX], tl[TEXT_MAX];
    plain(xl, sizeof(xl), xlabel);
    plain(yl, sizeof(yl), ylabel);
    plain(tl, sizeof(tl), title);
    pllab(xl, yl, tl);
    *out = f;
    return ST_OK;
}

void rp_fig_line(rp_fig *f, size_t n, const double *x, const double *y, int colour, double width,
                 int dashed)
{
    plcol0(colour_index(colour));
    plwidth(width);
    pllsty(dashed ? 3 : 1);
    /* draw the finite stretches only */
    size_t i = 0;
    while (i < n) {
        while (i < n && !(isfinite(x[i]) && isfinite(y[i])))
            i++;
        size_t j = i;
        while (j < n && isfinite(x[j]) && isfinite(y[j]))
            j++;
        if (j - i >= 2)
            plline((PLINT)(j - i), x + i, y + i);
        for (size_t k = i; k + 1 < j; k++) /* a line across the plot weighs 8 markers */
            note_segment(f, x[k], y[k], x[k + 1], y[k + 1], 8);
        i = j;
    }
    pllsty(1);
    plwidth(1);
}

void rp_fig_points(rp_fig *f, size_t n, const double *x, const double *y, int colour, int glyph,
                   double size)
{
    plcol0(colour_index(colour));
    plssym(0, size);
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i])) {
            plpoin(1, &x[i], &y[i], glyph);
            note_point(f, x[i], y[i], 1);
        }
    plssym(0, 1);
}

void rp_fig_band(rp_fig *f, size_t n, const double *x, const double *lo, const double *hi,
                 int colour)
{
    (void)f;
    PLFLT *px = malloc(2 * n * sizeof(PLFLT)), *py = malloc(2 * n * sizeof(PLFLT));
    size_t m = 0;
    if (px && py) {
        for (size_t i = 0; i < n; i++)
            if (isfinite(x[i]) && isfinite(lo[i]) && isfinite(hi[i]))
                px[m] = x[i], py[m++] = lo[i];
        size_t k = m;
        for (size_t i = n; i-- > 0;)
            if (isfinite(x[i]) && isfinite(lo[i]) && isfinite(hi[i]))
                px[k] = x[i], py[k++] = hi[i];
        if (m >= 2) {
            PLINT ci = colour_index(colour);
            plscol0a(COL_BAND, pal_r[ci], pal_g[ci], pal_b[ci], 0.22);
            plcol0(COL_BAND);
            plpsty(0);
            plfill((PLINT)k, px, py);
        }
    }
    free(px);
    free(py);
}

void rp_fig_errbars(rp_fig *f, size_t n, const double *at, const double *lo, const double *hi,
                    int colour, int dir)
{
    plcol0(colour_index(colour));
    plwidth(1.5);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(at[i]) || !isfinite(lo[i]) || !isfinite(hi[i]))
            continue;
        if (dir == 0)
            note_segment(f, at[i], lo[i], at[i], hi[i], 8);
        else
            note_segment(f, lo[i], at[i], hi[i], at[i], 8);
        if (dir == 0)
            plerry(1, &at[i], &lo[i], &hi[i]);
        else
            plerrx(1, &lo[i], &hi[i], &at[i]);
    }
    plwidth(1);
}

void rp_fig_legend(rp_fig *f, const char *text, int colour, int glyph, int line, int band)
{
    if (f->n_leg == LEG_MAX)
        return;
    size_t k = f->n_leg++;
    plain(f->leg_text[k], TEXT_MAX, text);
    f->leg_colour[k] = colour;
    f->leg_glyph[k] = glyph;
    f->leg_line[k] = line;
    f->leg_band[k] = band;
}

void rp_fig_note(rp_fig *f, const char *text)
{
    char t[TEXT_MAX];
    plain(t, sizeof(t), text);
    plcol0(2);
    plptex((f->xmin + f->xmax) / 2, (f->ymin + f->ymax) / 2, 1, 0, 0.5, t);
}

/* The corner (0 top right, 1 top left, 2 bottom right, 3 bottom left) whose legend-sized box
 * covers the fewest cells with data: the box estimated from the entries' number and longest text
 * (PLplot says the size only once it has drawn the legend); top right on a tie. */
static int legend_corner(const rp_fig *f)
{
    size_t longest = 0;
    for (size_t i = 0; i < f->n_leg; i++)
        if (strlen(f->leg_text[i]) > longest)
            longest = strlen(f->leg_text[i]);
    int w = (int)ceil((0.1 + 0.0125 * (double)longest) * GRID);
    int h = (int)ceil((0.02 + 0.043 * (double)f->n_leg) * GRID);
    w = w > GRID ? GRID : w, h = h > GRID ? GRID : h;
    int best = 0;
    double least = INFINITY;
    for (int q = 0; q < 4; q++) {
        int i0 = q % 2 == 0 ? GRID - w : 0, j0 = q < 2 ? GRID - h : 0;
        double sum = 0;
        for (int i = i0; i < i0 + w; i++)
            for (int j = j0; j < j0 + h; j++)
                sum += f->occ[i][j] < 1 ? f->occ[i][j] : 1; /* cells with data, not ink */
        if (sum < least - 1e-9)
            least = sum, best = q;
    }
    return best;
}

static void draw_legend(rp_fig *f)
{
    if (!f->n_leg)
        return;
    PLINT opt[LEG_MAX], tcol[LEG_MAX], bcol[LEG_MAX], bpat[LEG_MAX], lcol[LEG_MAX], lsty[LEG_MAX],
        scol[LEG_MAX], snum[LEG_MAX];
    PLFLT bscale[LEG_MAX], bwid[LEG_MAX], lwid[LEG_MAX], sscale[LEG_MAX];
    const char *text[LEG_MAX], *sym[LEG_MAX];
    /* the shapes plpoin draws for codes 17, 4, 5 and 6, as text */
    static const char *const glyphs[] = {"●", "○", "✕", "□"};
    for (size_t i = 0; i < f->n_leg; i++) {
        PLINT c = colour_index(f->leg_colour[i]);
        opt[i] = f->leg_band[i]   ? PL_LEGEND_COLOR_BOX
                 : f->leg_line[i] ? PL_LEGEND_LINE
                                  : PL_LEGEND_SYMBOL;
        if (f->leg_line[i] && f->leg_glyph[i] >= 0)
            opt[i] |= PL_LEGEND_SYMBOL;
        tcol[i] = 1;
        text[i] = f->leg_text[i];
        bcol[i] = COL_BAND;
        bpat[i] = 0;
        bscale[i] = 0.8;
        bwid[i] = 1;
        lcol[i] = c;
        lsty[i] = f->leg_line[i] == 2 ? 3 : 1;
        lwid[i] = 2;
        scol[i] = c;
        sscale[i] = 1;
        snum[i] = 1;
        int g = f->leg_glyph[i];
        sym[i] = glyphs[g >= 0 && g < 4 ? g : 0];
        if (f->leg_band[i])
            plscol0a(COL_BAND, pal_r[c], pal_g[c], pal_b[c], 0.22);
    }
    static const PLINT corner[4] = {
        PL_POSITION_TOP | PL_POSITION_RIGHT, PL_POSITION_TOP | PL_POSITION_LEFT,
        PL_POSITION_BOTTOM | PL_POSITION_RIGHT, PL_POSITION_BOTTOM | PL_POSITION_LEFT};
    int q = legend_corner(f);
    PLFLT lw, lh;
    plschr(0, 0.65);
    pllegend(&lw, &lh, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
             corner[q] | PL_POSITION_INSIDE, 0.015, 0.02, 0.08, 0, 2, 1, 0, 0, (PLINT)f->n_leg, opt,
             0.8, 0.9, 2.0, 0.0, tcol, text, bcol, bpat, bscale, bwid, lcol, lsty, lwid, scol,
             sscale, snum, sym);
}

st_status rp_fig_end(rp_fig *f, char **svg)
{
    *svg = NULL;
    draw_legend(f);
    plend1(); /* closes f->mem */
    plsstrm(f->old_strm);
    st_status rc = ST_OK;
    const char *s = f->buf ? strstr(f->buf, "<svg") : NULL;
    if (!s) {
        rc = ST_EINTERNAL;
    } else {
        size_t n = strlen(s);
        char *o = malloc(n + 1);
        if (!o) {
            rc = ST_ENOMEM;
        } else {
            /* drop the xlink namespace declaration (nothing uses it) */
            const char *x = strstr(s, "xmlns:xlink=");
            const char *e = x ? strchr(strchr(x, '"') + 1, '"') : NULL;
            if (x && e) {
                size_t a = (size_t)(x - s);
                memcpy(o, s, a);
                strcpy(o + a, e + 1);
            } else {
                memcpy(o, s, n + 1);
            }
            *svg = o;
        }
    }
    free(f->buf);
    free(f);
    return rc;
}
