/* The SVG figure canvas (figure.h): cairo draws the shapes, the text is kept apart as SVG <text> elements. */
#include "figure.h"

#include <cairo-svg.h>
#include <stdlib.h>
#include <string.h>

#include "html_buf.h"

struct psc_fig {
    cairo_surface_t *surface;
    cairo_t *cr;
    psc_buf_t svg;   /* what cairo writes */
    psc_buf_t text;  /* our <text> elements, added before the closing tag */
    psc_buf_t title;
    double width, height;
};

static cairo_status_t psc__write(void *closure, const unsigned char *data, unsigned int len)
{
    psc_buf_t *b = closure;

    psc_buf_add(b, (const char *)data, len);
    return b->bad ? CAIRO_STATUS_NO_MEMORY : CAIRO_STATUS_SUCCESS;
}

psc_fig_t *psc_fig_new(double width, double height)
{
    psc_fig_t *f = calloc(1, sizeof(*f));

    if (!f)
        return NULL;
    f->width = width;
    f->height = height;
    f->surface = cairo_svg_surface_create_for_stream(psc__write, &f->svg, width, height);
    if (cairo_surface_status(f->surface) != CAIRO_STATUS_SUCCESS)
        goto fail;
    cairo_svg_surface_set_document_unit(f->surface, CAIRO_SVG_UNIT_PX);
    f->cr = cairo_create(f->surface);
    if (cairo_status(f->cr) != CAIRO_STATUS_SUCCESS)
        goto fail;
    cairo_set_source_rgb(f->cr, 1, 1, 1);
    cairo_paint(f->cr);
    return f;
fail:
    if (f->cr)
        cairo_destroy(f->cr);
    cairo_surface_destroy(f->surface);
    psc_buf_free(&f->svg);
    free(f);
    return NULL;
}

cairo_t *psc_fig_cr(psc_fig_t *f)
{
    return f->cr;
}

void psc_fig_rgb(cairo_t *cr, unsigned rgb)
{
    cairo_set_source_rgb(cr, ((rgb >> 16) & 0xff) / 255.0, ((rgb >> 8) & 0xff) / 255.0, (rgb & 0xff) / 255.0);
}

double psc_fig_text_width(const char *text, double size)
{
    double w = 0;

    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if ((*p & 0xc0) != 0x80) /* one advance per character, not per byte */
            w += strchr(" .,:;il|!'()[]/", *p) ? 0.36 : *p >= 'A' && *p <= 'Z' ? 0.72 : *p == 'm' || *p == 'w' ? 0.9 : 0.62;
    return w * size;
}

void psc_fig_text(psc_fig_t *f, double x, double y, double size, int anchor, unsigned rgb, int bold, double angle,
                  const char *text)
{
    psc_buf_printf(&f->text, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\" fill=\"#%06x\"%s%s", x, y, size,
                   rgb & 0xffffff, anchor == PSC_ANCHOR_MIDDLE ? " text-anchor=\"middle\""
                                   : anchor == PSC_ANCHOR_END ? " text-anchor=\"end\"" : "",
                   bold ? " font-weight=\"bold\"" : "");
    if (angle != 0)
        psc_buf_printf(&f->text, " transform=\"rotate(%.1f %.1f %.1f)\"", angle, x, y);
    psc_buf_puts(&f->text, ">");
    psc_buf_esc(&f->text, text);
    psc_buf_puts(&f->text, "</text>\n");
}

void psc_fig_title(psc_fig_t *f, const char *title)
{
    psc_buf_free(&f->title);
    psc_buf_esc(&f->title, title);
}

char *psc_fig_end(psc_fig_t *f)
{
    psc_buf_t out = {0};
    char *close, *open_end, *text;
    int ok;

    cairo_destroy(f->cr);
    cairo_surface_finish(f->surface);
    ok = cairo_surface_status(f->surface) == CAIRO_STATUS_SUCCESS && !f->svg.bad && !f->text.bad && !f->title.bad &&
         f->svg.p;
    cairo_surface_destroy(f->surface);
    /* cairo's document, its <svg> tag given a title and fonts, our text before its end. */
    close = ok ? strstr(f->svg.p, "</svg>") : NULL;
    open_end = ok ? strstr(f->svg.p, "<svg") : NULL;
    open_end = open_end ? strchr(open_end, '>') : NULL;
    if (close && open_end && open_end < close) {
        psc_buf_add(&out, f->svg.p, (size_t)(open_end - f->svg.p));
        psc_buf_puts(&out, " font-family=\"DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif\">\n");
        if (f->title.len) {
            psc_buf_puts(&out, "<title>");
            psc_buf_add(&out, f->title.p, f->title.len);
            psc_buf_puts(&out, "</title>\n");
        }
        psc_buf_add(&out, open_end + 1, (size_t)(close - open_end - 1));
        if (f->text.p)
            psc_buf_add(&out, f->text.p, f->text.len);
        psc_buf_puts(&out, close);
        text = psc_buf_take(&out);
    } else {
        text = NULL;
    }
    psc_buf_free(&f->svg);
    psc_buf_free(&f->text);
    psc_buf_free(&f->title);
    free(f);
    return text;
}
