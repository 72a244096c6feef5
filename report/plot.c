/*
 * plot.c — figures for the report, drawn by PLplot's "svg" device into memory (open_memstream
 * + plsfile; PLplot closes the stream at plend1). Each figure is its own PLplot stream, made
 * with plmkstrm and ended with plend1, and the caller's current stream is restored, so the
 * report does not disturb other PLplot users in the process (which must not run concurrently).
 * Log axes take log10 data and PLplot's "l" box option. The legend sits outside the plot area.
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

struct rp_fig {
    FILE *mem;
    char *buf;
    size_t len;
    PLINT old_strm;
    double xmin, xmax, ymin, ymax;
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
    plvpor(0.1, 0.7, 0.13, 0.9);
    plwind(xmin, xmax, ymin, ymax);

    /* light grid first, then the box on top */
    plcol0(12);
    plwidth(0.5);
    plbox(xlog ? "gl" : "g", 0, 0, ylog ? "gl" : "g", 0, 0);
    plcol0(1);
    plwidth(1);
    char xo[16], yo[16];
    snprintf(xo, sizeof(xo), "bcnst%s", xlog ? "l" : "");
    snprintf(yo, sizeof(yo), "bcnstv%s", ylog ? "l" : "");
    plbox(xo, 0, 0, yo, 0, 0);
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
    (void)f;
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
        i = j;
    }
    pllsty(1);
    plwidth(1);
}

void rp_fig_points(rp_fig *f, size_t n, const double *x, const double *y, int colour, int glyph,
                   double size)
{
    (void)f;
    plcol0(colour_index(colour));
    plssym(0, size);
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i]))
            plpoin(1, &x[i], &y[i], glyph);
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
    (void)f;
    plcol0(colour_index(colour));
    plwidth(1.5);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(at[i]) || !isfinite(lo[i]) || !isfinite(hi[i]))
            continue;
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
    PLFLT lw, lh;
    plschr(0, 0.65);
    pllegend(&lw, &lh, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
             PL_POSITION_RIGHT | PL_POSITION_OUTSIDE, 0.02, 0.0, 0.08, 0, 2, 1, 0, 0,
             (PLINT)f->n_leg, opt, 0.8, 1.0, 1.6, 0.0, tcol, text, bcol, bpat, bscale, bwid, lcol,
             lsty, lwid, scol, sscale, snum, sym);
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
