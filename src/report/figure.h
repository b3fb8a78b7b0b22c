/*
 * SVG figures drawn with cairo (its SVG surface, written to memory through
 * cairo_svg_surface_create_for_stream). Shapes are cairo's; text is kept apart
 * and written as SVG <text> elements: cairo's SVG surface writes glyph outlines,
 * which need fonts on the machine that measures (a GPU server may have none),
 * and would leave the numbers unreadable to search, copy and tests.
 */
#ifndef PSC_REPORT_FIGURE_H
#define PSC_REPORT_FIGURE_H

#include <cairo.h>
#include <stddef.h>

typedef struct psc_fig psc_fig_t;

enum { PSC_ANCHOR_START = -1, PSC_ANCHOR_MIDDLE = 0, PSC_ANCHOR_END = 1 };

/* A figure width x height px on a white ground; NULL out of memory or when cairo fails. */
psc_fig_t *psc_fig_new(double width, double height);
/* The cairo context to draw shapes with (user units = px). */
cairo_t *psc_fig_cr(psc_fig_t *f);
/* Text at (x, y) (the baseline), size px, colour 0xRRGGBB, anchored, bold, rotated by angle degrees about (x, y). */
void psc_fig_text(psc_fig_t *f, double x, double y, double size, int anchor, unsigned rgb, int bold, double angle,
                  const char *text);
/* The figure's title for readers of the SVG file (<title>), escaped. */
void psc_fig_title(psc_fig_t *f, const char *title);
/* The SVG document, malloc'd (the caller frees it); f is freed. NULL out of memory or on a cairo error. */
char *psc_fig_end(psc_fig_t *f);
/* A width for text at size px, generous (the reader's sans-serif font is not known here): for layout. */
double psc_fig_text_width(const char *text, double size);
/* Fill colour from 0xRRGGBB. */
void psc_fig_rgb(cairo_t *cr, unsigned rgb);

#endif
