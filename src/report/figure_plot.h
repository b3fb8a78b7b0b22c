/* The three kinds of figure (cairo, figure.h): a matrix as a heatmap, curves over sizes, latency distributions. */
#ifndef PSC_REPORT_FIGURE_PLOT_H
#define PSC_REPORT_FIGURE_PLOT_H

#include <stddef.h>
#include <stdint.h>

/*
 * A matrix: nrow x ncol cells, src(row) -> dst(column). value[r * ncol + c]
 * is drawn in colour with its number (fmt, e.g. "%.1f") when mark[...] is NULL
 * or "", else grey with the mark ("-", "n/a", "FAIL"); mark may be NULL.
 */
typedef struct {
    const char *title, *subtitle;     /* subtitle: the unit and how it was measured */
    const char *row_axis, *col_axis;  /* "source", "destination" */
    int nrow, ncol;
    const char *const *row_label, *const *col_label;
    const double *value;
    const char *const *mark;
    const char *fmt;
} psc_heatmap_t;

typedef struct {
    const char *label;                /* legend: "gpu0 -> gpu1 CE" */
    int n;
    const double *x, *y;              /* x: bytes, y: the unit's value; y NaN: no point */
    int color;                        /* index into the palette: one colour per path */
    int dashed;                       /* SM series: dashed beside the copy engine's solid line */
} psc_series_t;

typedef struct {
    double x, y;                      /* where the curves cross (x in bytes) */
    const char *label;                /* "SM > CE from 64K" */
} psc_marker_t;

typedef struct {
    const char *title, *subtitle, *y_label;
    int nseries;
    const psc_series_t *series;
    int nmarkers;
    const psc_marker_t *markers;
} psc_curves_t;

/* One row of a distribution figure: percentiles and the raw samples (all in the figure's unit). */
typedef struct {
    const char *label;
    double min, p50, p90, p99, max;
    int nraw;
    const float *raw;                 /* NULL or nraw samples */
    double raw_scale;                 /* raw[k] * raw_scale is in the figure's unit */
} psc_dist_row_t;

typedef struct {
    const char *title, *subtitle, *x_label;
    int nrows;
    const psc_dist_row_t *rows;
} psc_dist_t;

/* Each gives the SVG document (malloc'd), or NULL out of memory (or a cairo error). */
char *psc_figure_heatmap(const psc_heatmap_t *h);
char *psc_figure_curves(const psc_curves_t *c);
char *psc_figure_dist(const psc_dist_t *d);


#endif
