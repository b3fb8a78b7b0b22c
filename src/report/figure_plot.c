/* The three kinds of figure (figure_plot.h): a matrix as a heatmap, curves over sizes, latency distributions. */
#include "figure_plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure.h"
#include "render.h"

#define PSC_PI 3.14159265358979323846
#define PSC_FONT 12.0
#define PSC_TITLE_FONT 15.0
#define PSC_SUB_FONT 11.5
#define PSC_INK 0x202020u
#define PSC_GRID 0xe4e4e4u
#define PSC_MUTED 0xd9d9d9u

/* Viridis (perceptually even, readable in grey and by most colour-blind readers), t in [0, 1]. */
static unsigned psc__viridis(double t)
{
    static const unsigned stops[] = {0x440154, 0x472d7b, 0x3b528b, 0x2c728e, 0x21918c,
                                     0x28ae80, 0x5ec962, 0xaddc30, 0xfde725};
    const int n = sizeof(stops) / sizeof(stops[0]);
    double pos, frac;
    unsigned a, b, out = 0;
    int k;

    t = t != t ? 0 : t < 0 ? 0 : t > 1 ? 1 : t;
    pos = t * (n - 1);
    k = (int)pos;
    if (k >= n - 1)
        return stops[n - 1];
    frac = pos - k;
    a = stops[k];
    b = stops[k + 1];
    for (int sh = 0; sh <= 16; sh += 8) {
        double ca = (a >> sh) & 0xff, cb = (b >> sh) & 0xff;

        out |= (unsigned)lround(ca + (cb - ca) * frac) << sh;
    }
    return out;
}

/* Black text on light cells, white on dark (relative luminance, sRGB weights). */
static unsigned psc__text_on(unsigned rgb)
{
    double l = 0.2126 * ((rgb >> 16) & 0xff) + 0.7152 * ((rgb >> 8) & 0xff) + 0.0722 * (rgb & 0xff);

    return l > 140 ? 0x000000u : 0xffffffu;
}

/* Ten distinct colours (Tableau's), one per path. */
static unsigned psc__palette(int k)
{
    static const unsigned p[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                 0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};

    return p[(k < 0 ? -k : k) % 10];
}

/* A round step for about n ticks over [0, max]. */
static double psc__nice_step(double max, int n)
{
    double raw = max / n, mag, f;

    if (!(raw > 0))
        return 1;
    mag = pow(10, floor(log10(raw)));
    f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * mag;
}

static void psc__num(char *buf, size_t len, double v, double step)
{
    snprintf(buf, len, step >= 1 || v == 0 ? "%.0f" : step >= 0.1 ? "%.1f" : step >= 0.01 ? "%.2f" : "%.3g", v);
}

static void psc__line(cairo_t *cr, double x0, double y0, double x1, double y1, unsigned rgb, double w)
{
    psc_fig_rgb(cr, rgb);
    cairo_set_line_width(cr, w);
    cairo_move_to(cr, x0, y0);
    cairo_line_to(cr, x1, y1);
    cairo_stroke(cr);
}

static void psc__head(psc_fig_t *f, double x, const char *title, const char *subtitle)
{
    psc_fig_title(f, title);
    psc_fig_text(f, x, 22, PSC_TITLE_FONT, PSC_ANCHOR_START, PSC_INK, 1, 0, title);
    if (subtitle && *subtitle)
        psc_fig_text(f, x, 40, PSC_SUB_FONT, PSC_ANCHOR_START, 0x555555u, 0, 0, subtitle);
}

/* Room for the title (bold: wider) and the subtitle. */
static double psc__head_width(const char *title, const char *subtitle)
{
    return fmax(1.1 * psc_fig_text_width(title, PSC_TITLE_FONT), psc_fig_text_width(subtitle ? subtitle : "", PSC_SUB_FONT)) + 24;
}

static double psc__max_width(const char *const *s, int n, double size)
{
    double w = 0;

    for (int k = 0; k < n; k++) {
        double t = psc_fig_text_width(s[k] ? s[k] : "", size);

        w = t > w ? t : w;
    }
    return w;
}

char *psc_figure_heatmap(const psc_heatmap_t *h)
{
    const int cells = h->nrow * h->ncol;
    char (*text)[48] = calloc((size_t)(cells ? cells : 1), sizeof(*text));
    double vmax = 0, cw, ch = 30, left, top = 96, width, height, tw = 0;
    psc_fig_t *f;
    cairo_t *cr;

    if (!text)
        return NULL;
    for (int k = 0; k < cells; k++) {
        int shown = !(h->mark && h->mark[k] && h->mark[k][0]);

        if (shown)
            snprintf(text[k], sizeof(text[k]), h->fmt ? h->fmt : "%.2f", h->value[k]);
        else
            snprintf(text[k], sizeof(text[k]), "%s", h->mark[k]);
        if (shown && isfinite(h->value[k]) && h->value[k] > vmax) /* the scale from finite values only */
            vmax = h->value[k];
        if (psc_fig_text_width(text[k], PSC_FONT) > tw)
            tw = psc_fig_text_width(text[k], PSC_FONT);
    }
    cw = fmax(64, fmax(tw, psc__max_width(h->col_label, h->ncol, PSC_FONT)) + 18);
    left = 34 + psc__max_width(h->row_label, h->nrow, PSC_FONT) + 12;
    width = fmax(left + h->ncol * cw + 110, psc__head_width(h->title, h->subtitle));
    height = top + fmax(h->nrow * ch, 60) + 24; /* the colour scale is 60 px at least */
    if (!(f = psc_fig_new(ceil(width), ceil(height)))) {
        free(text);
        return NULL;
    }
    cr = psc_fig_cr(f);
    psc__head(f, 12, h->title, h->subtitle);
    /* Axis titles: the destination over the columns, the source beside the rows. */
    psc_fig_text(f, left + h->ncol * cw / 2, top - 26, PSC_FONT, PSC_ANCHOR_MIDDLE, PSC_INK, 1, 0, h->col_axis);
    psc_fig_text(f, 18, top + h->nrow * ch / 2, PSC_FONT, PSC_ANCHOR_MIDDLE, PSC_INK, 1, -90, h->row_axis);
    for (int c = 0; c < h->ncol; c++)
        psc_fig_text(f, left + c * cw + cw / 2, top - 8, PSC_FONT, PSC_ANCHOR_MIDDLE, PSC_INK, 0, 0, h->col_label[c]);
    for (int r = 0; r < h->nrow; r++) {
        psc_fig_text(f, left - 8, top + r * ch + ch / 2 + 4, PSC_FONT, PSC_ANCHOR_END, PSC_INK, 0, 0, h->row_label[r]);
        for (int c = 0; c < h->ncol; c++) {
            int k = r * h->ncol + c, shown = !(h->mark && h->mark[k] && h->mark[k][0]);
            /* Off the scale (inf, NaN): grey with its text; all zeros: the bottom colour, as 0 reads on the scale. */
            int coloured = shown && isfinite(h->value[k]);
            unsigned fill = coloured ? psc__viridis(vmax > 0 ? h->value[k] / vmax : 0) : PSC_MUTED;

            psc_fig_rgb(cr, fill);
            cairo_rectangle(cr, left + c * cw, top + r * ch, cw, ch);
            cairo_fill_preserve(cr);
            psc_fig_rgb(cr, 0xffffffu);
            cairo_set_line_width(cr, 1.5);
            cairo_stroke(cr);
            psc_fig_text(f, left + c * cw + cw / 2, top + r * ch + ch / 2 + 4.5, PSC_FONT, PSC_ANCHOR_MIDDLE,
                         coloured ? psc__text_on(fill) : 0x333333u, shown, 0, text[k]);
        }
    }
    /* The colour scale, 0 to the largest value. */
    {
        double x = left + h->ncol * cw + 22, y0 = top, bh = fmax(h->nrow * ch, 60);
        char lo[32], hi[32];

        for (int s = 0; s < 32; s++) {
            psc_fig_rgb(cr, psc__viridis(1.0 - s / 31.0));
            cairo_rectangle(cr, x, y0 + s * bh / 32, 14, bh / 32 + 0.5);
            cairo_fill(cr);
        }
        snprintf(lo, sizeof(lo), "0");
        snprintf(hi, sizeof(hi), h->fmt ? h->fmt : "%.2f", vmax);
        psc_fig_text(f, x + 18, y0 + 10, 10.5, PSC_ANCHOR_START, PSC_INK, 0, 0, hi);
        psc_fig_text(f, x + 18, y0 + bh, 10.5, PSC_ANCHOR_START, PSC_INK, 0, 0, lo);
    }
    free(text);
    return psc_fig_end(f);
}

/* The plot's frame: x log2 over [lx0, lx1] (bytes), y linear over [0, ymax]. */
typedef struct {
    double l, t, w, h, lx0, lx1, ymax;
} psc__frame_t;

static double psc__fx(const psc__frame_t *fr, double bytes)
{
    return fr->l + (log2(bytes) - fr->lx0) / (fr->lx1 - fr->lx0) * fr->w;
}

static double psc__fy(const psc__frame_t *fr, double v)
{
    return fr->t + fr->h - v / fr->ymax * fr->h;
}

static void psc__axes(psc_fig_t *f, const psc__frame_t *fr, double ystep, const char *y_label)
{
    cairo_t *cr = psc_fig_cr(f);
    double ppo = fr->w / (fr->lx1 - fr->lx0); /* px per doubling */
    int every = (int)ceil(44 / ppo);
    char buf[32];

    every = every < 1 ? 1 : every;
    for (double v = 0; v <= fr->ymax + ystep / 2; v += ystep) {
        double y = psc__fy(fr, v);

        psc__line(cr, fr->l, y, fr->l + fr->w, y, PSC_GRID, 1);
        psc__num(buf, sizeof(buf), v, ystep);
        psc_fig_text(f, fr->l - 6, y + 4, 11, PSC_ANCHOR_END, PSC_INK, 0, 0, buf);
    }
    for (int e = (int)ceil(fr->lx0); e <= (int)floor(fr->lx1); e++) {
        double x = fr->l + (e - fr->lx0) * ppo;

        if (e % every)
            continue;
        psc__line(cr, x, fr->t, x, fr->t + fr->h, PSC_GRID, 1);
        psc__line(cr, x, fr->t + fr->h, x, fr->t + fr->h + 4, PSC_INK, 1);
        psc_fig_text(f, x, fr->t + fr->h + 17, 11, PSC_ANCHOR_MIDDLE, PSC_INK, 0, 0,
                     psc_render_size_text(1ull << (e < 0 ? 0 : e > 62 ? 62 : e), buf, sizeof(buf)));
    }
    psc__line(cr, fr->l, fr->t + fr->h, fr->l + fr->w, fr->t + fr->h, PSC_INK, 1);
    psc__line(cr, fr->l, fr->t, fr->l, fr->t + fr->h, PSC_INK, 1);
    psc_fig_text(f, fr->l + fr->w / 2, fr->t + fr->h + 36, PSC_FONT, PSC_ANCHOR_MIDDLE, PSC_INK, 0, 0,
                 "bytes per copy (log2 scale; K/M/G = 1024-based)");
    psc_fig_text(f, 16, fr->t + fr->h / 2, PSC_FONT, PSC_ANCHOR_MIDDLE, PSC_INK, 0, -90, y_label);
}

/* A point drawn: a size above 0 and a finite value. */
static int psc__point(const psc_series_t *se, int k)
{
    return se->x[k] > 0 && isfinite(se->x[k]) && isfinite(se->y[k]);
}

/* The curves' frame: the x range from the sizes drawn (an octave either side of one), the y scale from the finite
 * values, its grid step (*ystep) and the legend's width (*legend_w). */
static void psc__curves_frame(const psc_curves_t *c, psc__frame_t *fr, double *ystep, double *legend_w)
{
    double xmin = INFINITY, xmax = -INFINITY, ymax = 0;

    *legend_w = 0;
    for (int s = 0; s < c->nseries; s++) {
        const psc_series_t *se = &c->series[s];

        *legend_w = fmax(*legend_w, psc_fig_text_width(se->label, 11));
        for (int k = 0; k < se->n; k++) {
            if (se->x[k] > 0 && isfinite(se->x[k])) {
                xmin = fmin(xmin, se->x[k]);
                xmax = fmax(xmax, se->x[k]);
            }
            if (isfinite(se->y[k])) /* the scale from finite values only: inf or NaN is no point */
                ymax = fmax(ymax, se->y[k]);
        }
    }
    if (!(xmin < xmax)) { /* one size, or none: an octave either side */
        xmin = xmin == INFINITY ? 1 : xmin / 2;
        xmax = xmin * 4;
    }
    fr->lx0 = log2(xmin);
    fr->lx1 = log2(xmax);
    *ystep = psc__nice_step(ymax > 0 ? ymax * 1.05 : 1, 6);
    fr->ymax = ceil((ymax > 0 ? ymax * 1.05 : 1) / *ystep) * *ystep;
}

/* Series s: its line through the points drawn (broken where one is not), a dot at each, its legend entry. */
static void psc__curves_series(psc_fig_t *f, const psc__frame_t *fr, const psc_series_t *se, int s)
{
    cairo_t *cr = psc_fig_cr(f);
    double dash[] = {6, 4};
    int pen = 0;
    double ly = fr->t + 6 + s * 16;

    psc_fig_rgb(cr, psc__palette(se->color));
    cairo_set_line_width(cr, 2);
    cairo_set_dash(cr, dash, se->dashed ? 2 : 0, 0);
    for (int k = 0; k < se->n; k++) {
        if (!psc__point(se, k)) {
            pen = 0;
            continue;
        }
        if (pen)
            cairo_line_to(cr, psc__fx(fr, se->x[k]), psc__fy(fr, se->y[k]));
        else
            cairo_move_to(cr, psc__fx(fr, se->x[k]), psc__fy(fr, se->y[k]));
        pen = 1;
    }
    cairo_stroke(cr);
    for (int k = 0; k < se->n; k++) {
        if (!psc__point(se, k))
            continue;
        cairo_arc(cr, psc__fx(fr, se->x[k]), psc__fy(fr, se->y[k]), se->dashed ? 2.2 : 2.8, 0, 2 * PSC_PI);
        cairo_fill(cr);
    }
    /* Legend entry: a stroke of the line as drawn, then the label. */
    cairo_move_to(cr, fr->l + fr->w + 20, ly);
    cairo_line_to(cr, fr->l + fr->w + 44, ly);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    psc_fig_text(f, fr->l + fr->w + 50, ly + 4, 11, PSC_ANCHOR_START, PSC_INK, 0, 0, se->label);
}

/* Crossovers: a numbered ring where the curves cross; the numbers are listed under the axis (any count fits). */
static void psc__curves_markers(psc_fig_t *f, const psc__frame_t *fr, const psc_curves_t *c)
{
    cairo_t *cr = psc_fig_cr(f);

    for (int m = 0; m < c->nmarkers; m++) {
        const psc_marker_t *mk = &c->markers[m];
        double x = psc__fx(fr, mk->x), y = psc__fy(fr, mk->y), ly = fr->t + fr->h + 62 + (m / 2) * 16;
        char num[16];

        if (!isfinite(x) || !isfinite(y))
            continue;
        snprintf(num, sizeof(num), "%d", m + 1);
        psc_fig_rgb(cr, PSC_INK);
        cairo_set_line_width(cr, 1.6);
        cairo_arc(cr, x, y, 6, 0, 2 * PSC_PI);
        cairo_stroke(cr);
        psc_fig_text(f, x, y - 10, 11, PSC_ANCHOR_MIDDLE, PSC_INK, 1, 0, num);
        psc_fig_text(f, fr->l + (m % 2) * (fr->w / 2 + 40), ly, 11, PSC_ANCHOR_START, PSC_INK, 0, 0, num);
        psc_fig_text(f, fr->l + (m % 2) * (fr->w / 2 + 40) + 18, ly, 11, PSC_ANCHOR_START, PSC_INK, 0, 0, mk->label);
    }
}

char *psc_figure_curves(const psc_curves_t *c)
{
    double legend_w, ystep;
    psc__frame_t fr = {70, 64, 560, 300, 0, 1, 1};
    psc_fig_t *f;

    psc__curves_frame(c, &fr, &ystep, &legend_w);
    if (!(f = psc_fig_new(ceil(fmax(fr.l + fr.w + 40 + legend_w + 30, psc__head_width(c->title, c->subtitle))),
                          fr.t + fr.h + 52 + fmax(0, c->nseries * 16.0 - fr.h) + (c->nmarkers + 1) / 2 * 16.0)))
        return NULL;
    psc__head(f, 12, c->title, c->subtitle);
    psc__axes(f, &fr, ystep, c->y_label);
    cairo_set_line_join(psc_fig_cr(f), CAIRO_LINE_JOIN_ROUND);
    for (int s = 0; s < c->nseries; s++)
        psc__curves_series(f, &fr, &c->series[s], s);
    cairo_set_dash(psc_fig_cr(f), NULL, 0, 0);
    psc__curves_markers(f, &fr, c);
    return psc_fig_end(f);
}

char *psc_figure_dist(const psc_dist_t *d)
{
    double lo = INFINITY, hi = 0, label_w = 0, rh = 28, left, top = 64, pw = 520, right_w = 170;
    int logx;
    psc_fig_t *f;
    cairo_t *cr;
    char buf[64];

    for (int r = 0; r < d->nrows; r++) { /* the axis from finite values only (an inf never makes it endless) */
        const double v[5] = {d->rows[r].min, d->rows[r].p50, d->rows[r].p90, d->rows[r].p99, d->rows[r].max};

        for (int k = 0; k < 5; k++)
            if (isfinite(v[k])) {
                lo = fmin(lo, v[k]);
                hi = fmax(hi, v[k]);
            }
        label_w = fmax(label_w, psc_fig_text_width(d->rows[r].label, PSC_FONT));
    }
    if (!(hi > 0))
        hi = 1;
    logx = lo > 0 && hi / lo > 30;
    left = 16 + label_w + 12;
    if (!(f = psc_fig_new(ceil(fmax(left + pw + right_w, psc__head_width(d->title, d->subtitle))),
                          top + d->nrows * rh + 64)))
        return NULL;
    cr = psc_fig_cr(f);
    psc__head(f, 12, d->title, d->subtitle);
    {
        double a = logx ? floor(log10(lo)) : 0, b, step;

        if (logx) {
            b = ceil(log10(hi));
            b = b > a ? b : a + 1;
            step = fmax(1, ceil((b - a) / 12)); /* decades per tick: a dozen ticks at most */
        } else {
            step = psc__nice_step(hi * 1.05, 6);
            b = ceil(hi * 1.05 / step) * step;
        }
        /* A value off the axis (inf, or beyond it) at the axis' end; NaN at its start. */
#define PSC_DX(v) (left + fmin(fmax(((logx ? log10(fmax((v), 1e-300)) : (v)) - a) / (b - a), 0), 1) * pw)
        for (double v = a; v <= b + step / 2; v += step) {
            double x = left + (v - a) / (b - a) * pw, tv = logx ? pow(10, v) : v;

            psc__line(cr, x, top - 6, x, top + d->nrows * rh, PSC_GRID, 1);
            psc__num(buf, sizeof(buf), tv, logx ? tv : step);
            psc_fig_text(f, x, top + d->nrows * rh + 16, 11, PSC_ANCHOR_MIDDLE, PSC_INK, 0, 0, buf);
        }
        psc__line(cr, left, top + d->nrows * rh, left + pw, top + d->nrows * rh, PSC_INK, 1);
        snprintf(buf, sizeof(buf), "%s%s", d->x_label, logx ? " (log scale)" : "");
        psc_fig_text(f, left + pw / 2, top + d->nrows * rh + 34, PSC_FONT, PSC_ANCHOR_MIDDLE, PSC_INK, 0, 0, buf);
        for (int r = 0; r < d->nrows; r++) {
            const psc_dist_row_t *row = &d->rows[r];
            double y = top + r * rh + rh / 2;
            unsigned col = psc__palette(r);

            psc_fig_text(f, left - 8, y + 4, PSC_FONT, PSC_ANCHOR_END, PSC_INK, 0, 0, row->label);
            psc__line(cr, PSC_DX(row->min), y, PSC_DX(row->max), y, 0x888888u, 1.2);
            cairo_set_source_rgba(cr, ((col >> 16) & 0xff) / 255.0, ((col >> 8) & 0xff) / 255.0, (col & 0xff) / 255.0,
                                  0.28);
            cairo_rectangle(cr, PSC_DX(row->p50), y - 8, fmax(PSC_DX(row->p99) - PSC_DX(row->p50), 1.5), 16);
            cairo_fill(cr);
            for (int k = 0; row->raw && k < row->nraw; k++) {
                if (row->raw[k] != row->raw[k])
                    continue;
                cairo_arc(cr, PSC_DX(row->raw[k] * row->raw_scale), y + (k * 37 % 13 - 6) * 0.9, 1.3, 0, 2 * PSC_PI);
                cairo_fill(cr);
            }
            psc__line(cr, PSC_DX(row->p90), y - 6, PSC_DX(row->p90), y + 6, col, 1.5);
            psc__line(cr, PSC_DX(row->p50), y - 10, PSC_DX(row->p50), y + 10, 0x000000u, 2.5);
            snprintf(buf, sizeof(buf), "p50 %.3g  p99 %.3g", row->p50, row->p99);
            psc_fig_text(f, left + pw + 12, y + 4, 11, PSC_ANCHOR_START, PSC_INK, 0, 0, buf);
        }
#undef PSC_DX
    }
    psc_fig_text(f, left, top + d->nrows * rh + 54, 10.5, PSC_ANCHOR_START, 0x555555u, 0, 0,
                 "grey line: min to max; shaded box: p50 to p99; black bar: p50; coloured tick: p90; dots: the samples "
                 "kept");
    return psc_fig_end(f);
}
