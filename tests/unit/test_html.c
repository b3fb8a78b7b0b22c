/*
 * The figures and the page (cairo builds): each SVG parses as XML (expat),
 * a heatmap has one <text> per matrix cell holding that cell's number,
 * names with markup in them stay text, a sweep marks where SM and the copy
 * engine cross, and the page embeds every figure, escaped and self-contained.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <expat.h>

#include "report/figure_plot.h"
#include "p2pscope_private.h"
#include "report/html_page.h"

/* ------------------------------------------------------------ the SVG as an XML reader sees it */

#define MAXT 512
typedef struct {
    int depth, in_text, ntext, nsvg, ntitle, in_title;
    char text[MAXT][160];
    char title[256];
    double width, height;
} psc__svg_t;

static void XMLCALL psc__start(void *u, const XML_Char *name, const XML_Char **attr)
{
    psc__svg_t *s = u;

    s->depth++;
    if (strcmp(name, "text") == 0 && s->ntext < MAXT) {
        s->in_text = 1;
        s->text[s->ntext][0] = '\0';
    }
    if (strcmp(name, "title") == 0)
        s->in_title = 1;
    if (strcmp(name, "svg") == 0) {
        s->nsvg++;
        for (int k = 0; attr[k]; k += 2) {
            if (strcmp(attr[k], "width") == 0)
                s->width = atof(attr[k + 1]);
            if (strcmp(attr[k], "height") == 0)
                s->height = atof(attr[k + 1]);
        }
    }
}

static void XMLCALL psc__end(void *u, const XML_Char *name)
{
    psc__svg_t *s = u;

    s->depth--;
    if (strcmp(name, "text") == 0 && s->in_text) {
        s->in_text = 0;
        s->ntext++;
    }
    if (strcmp(name, "title") == 0)
        s->in_title = 0;
}

static void XMLCALL psc__chars(void *u, const XML_Char *t, int len)
{
    psc__svg_t *s = u;
    char *dst = s->in_text ? s->text[s->ntext] : s->in_title ? s->title : NULL;
    size_t cap = s->in_text ? sizeof(s->text[0]) : sizeof(s->title), l;

    if (!dst)
        return;
    l = strlen(dst);
    snprintf(dst + l, cap - l, "%.*s", len, t);
}

/* Parse the whole document; fails the test on any XML error, with expat's reason and line. */
static psc__svg_t *psc__parse(const char *svg)
{
    psc__svg_t *s = calloc(1, sizeof(*s));
    XML_Parser p = XML_ParserCreate("UTF-8");

    assert_non_null(s);
    XML_SetUserData(p, s);
    XML_SetElementHandler(p, psc__start, psc__end);
    XML_SetCharacterDataHandler(p, psc__chars);
    if (XML_Parse(p, svg, (int)strlen(svg), 1) != XML_STATUS_OK)
        fail_msg("not well-formed XML: %s at line %lu", XML_ErrorString(XML_GetErrorCode(p)),
                 (unsigned long)XML_GetCurrentLineNumber(p));
    XML_ParserFree(p);
    assert_int_equal(s->nsvg, 1);
    assert_true(s->width > 0 && s->height > 0);
    return s;
}

static int psc__count_text(const psc__svg_t *s, const char *want)
{
    int n = 0;

    for (int k = 0; k < s->ntext; k++)
        n += strcmp(s->text[k], want) == 0;
    return n;
}

static int psc__has_text_part(const psc__svg_t *s, const char *part)
{
    for (int k = 0; k < s->ntext; k++)
        if (strstr(s->text[k], part))
            return 1;
    return 0;
}

/* ------------------------------------------------------------ figures */

static void test_heatmap_cells(void **state)
{
    static const char *const rows[] = {"gpu0", "gpu1", "<gpu&2>"}, *const cols[] = {"gpu0", "gpu1", "<gpu&2>"};
    const double v[9] = {NAN, 396.12, 395.51, 391.07, NAN, 12.5, 0.25, 388.8, NAN};
    const char *mark[9] = {"-", NULL, "", NULL, "-", NULL, NULL, NULL, "-"};
    psc_heatmap_t h = {"gpu_to_gpu_write_ce: <b>GPU</b> & \"co\"", "GB/s", "source", "destination", 3, 3, rows, cols,
                       v, mark, "%.2f"};
    char *svg;
    psc__svg_t *s;

    (void)state;
    svg = psc_figure_heatmap(&h);
    assert_non_null(svg);
    s = psc__parse(svg);
    /* One text element per cell holding its number, each number once: no cell dropped, none drawn twice. */
    for (int k = 0; k < 9; k++) {
        char want[32];

        if (mark[k] && mark[k][0])
            continue;
        snprintf(want, sizeof(want), "%.2f", v[k]);
        assert_int_equal(psc__count_text(s, want), strcmp(want, "396.12") == 0 ? 2 : 1); /* the largest: the scale's top too */
    }
    assert_int_equal(psc__count_text(s, "-"), 3); /* the diagonal's marks */
    /* The names came through as text (the reader unescaped them), and never as markup in the file. */
    assert_int_equal(psc__count_text(s, "<gpu&2>"), 2);
    assert_string_equal(s->title, "gpu_to_gpu_write_ce: <b>GPU</b> & \"co\"");
    assert_null(strstr(svg, "<gpu&2>"));
    assert_null(strstr(svg, "<b>"));
    assert_non_null(strstr(svg, "&lt;gpu&amp;2&gt;"));
    assert_true(psc__count_text(s, "source") == 1 && psc__count_text(s, "destination") == 1);
    free(s);
    free(svg);
}

/* A sweep whose SM line overtakes the copy engine's between 16K and 32K: the crossing is ringed and named. */
static void test_curves_crossing(void **state)
{
    const double x[4] = {4096, 16384, 65536, 262144}, ce[4] = {20, 60, 200, 380}, sm[4] = {40, 80, 150, 300};
    psc_series_t se[2] = {{"gpu0 -> gpu1 CE", 4, x, ce, 0, 0}, {"gpu0 -> gpu1 SM", 4, x, sm, 0, 1}};
    psc_marker_t mk = {32768, 110, "gpu0 -> gpu1: CE > SM from 64K"};
    psc_curves_t c = {"gpu_to_gpu_write_ce vs gpu_to_gpu_write_sm", "GB/s", "GB/s", 2, se, 1, &mk};
    char *svg = psc_figure_curves(&c);
    psc__svg_t *s;

    (void)state;
    assert_non_null(svg);
    s = psc__parse(svg);
    assert_int_equal(psc__count_text(s, "gpu0 -> gpu1 CE"), 1); /* the legend */
    assert_int_equal(psc__count_text(s, "gpu0 -> gpu1: CE > SM from 64K"), 1);
    assert_int_equal(psc__count_text(s, "4K"), 1); /* the log2 axis: powers of two */
    assert_int_equal(psc__count_text(s, "256K"), 1);
    assert_non_null(strstr(svg, "stroke-dasharray")); /* the SM line is dashed */
    free(s);
    free(svg);
}

static void test_dist(void **state)
{
    const float raw[5] = {800, 810, 828, 900, 1500};
    psc_dist_row_t row = {"gpu0 -> gpu1", 0.8, 0.828, 0.9, 1.5, 1.5, 5, raw, 1e-3};
    psc_dist_t d = {"gpu_to_gpu_chase", "per load", "microseconds", 1, &row};
    char *svg = psc_figure_dist(&d);
    psc__svg_t *s;

    (void)state;
    assert_non_null(svg);
    s = psc__parse(svg);
    assert_int_equal(psc__count_text(s, "gpu0 -> gpu1"), 1);
    assert_true(psc__has_text_part(s, "p50 0.828"));
    free(s);
    free(svg);
}

/* The fill of the first <text> element reading exactly want ("#rrggbb"), "" when none. */
static const char *psc__text_fill(const char *svg, const char *want)
{
    static char fill[8];
    char needle[96];
    const char *end, *start, *f;

    snprintf(needle, sizeof(needle), ">%s</text>", want);
    fill[0] = '\0';
    if (!(end = strstr(svg, needle)))
        return fill;
    for (start = end; start > svg && strncmp(start, "<text", 5) != 0; start--)
        ;
    f = strstr(start, "fill=\"#");
    if (f && f < end)
        snprintf(fill, sizeof(fill), "%.7s", f + 6);
    return fill;
}

/* 1 when the first <text> element reading exactly want is a heatmap's row label (anchored at its end), else 0. */
static int psc__is_row_label(const char *svg, const char *want)
{
    char needle[96];
    const char *end, *start;

    snprintf(needle, sizeof(needle), ">%s</text>", want);
    if (!(end = strstr(svg, needle)))
        return 0;
    for (start = end; start > svg && strncmp(start, "<text", 5) != 0; start--)
        ;
    return strstr(start, "text-anchor=\"end\"") != NULL && strstr(start, "text-anchor=\"end\"") < end;
}

/* Non-finite cells: off the scale (grey, their text kept), the scale from the finite ones; all zeros: the bottom colour. */
static void test_heatmap_not_finite(void **state)
{
    static const char *const labels[] = {"gpu0", "gpu1"};
    const char *mark[4] = {"-", NULL, NULL, "-"};
    const double inf[4] = {NAN, INFINITY, 5, NAN}, nan[4] = {NAN, NAN, 5, NAN}, zero[4] = {NAN, 0, 0, NAN};
    psc_heatmap_t h = {"t", "GB/s", "source", "destination", 2, 2, labels, labels, inf, mark, "%.1f"};
    char *svg;
    psc__svg_t *s;

    (void)state;
    svg = psc_figure_heatmap(&h);
    assert_non_null(svg);
    s = psc__parse(svg);
    assert_int_equal(psc__count_text(s, "inf"), 1);   /* the cell, not the scale's top */
    assert_int_equal(psc__count_text(s, "5.0"), 2);   /* the cell and the scale's top */
    assert_string_equal(psc__text_fill(svg, "inf"), "#333333"); /* on grey */
    free(s);
    free(svg);
    h.value = nan;
    svg = psc_figure_heatmap(&h);
    s = psc__parse(svg);
    assert_int_equal(psc__count_text(s, "nan") + psc__count_text(s, "-nan"), 1);
    assert_int_equal(psc__count_text(s, "5.0"), 2);
    free(s);
    free(svg);
    /* All zeros: the scale's bottom (dark, white text), not its top (light, black text). */
    h.value = zero;
    svg = psc_figure_heatmap(&h);
    assert_non_null(svg);
    assert_string_equal(psc__text_fill(svg, "0.0"), "#ffffff");
    free(svg);
}

/* An infinite value is no point and sets no scale: the y axis reads the finite ones. */
static void test_curves_not_finite(void **state)
{
    const double x[3] = {4096, 8192, 16384}, y[3] = {10, INFINITY, 30}, none[3] = {NAN, NAN, NAN};
    psc_series_t se[2] = {{"a", 3, x, y, 0, 0}, {"b", 3, x, none, 1, 1}};
    psc_curves_t c = {"t", "s", "GB/s", 2, se, 0, NULL};
    char *svg = psc_figure_curves(&c);
    psc__svg_t *s;

    (void)state;
    assert_non_null(svg);
    s = psc__parse(svg);
    assert_int_equal(psc__count_text(s, "30"), 1); /* a tick at 30: the axis runs past the largest finite value */
    assert_false(psc__has_text_part(s, "inf"));
    assert_false(psc__has_text_part(s, "nan"));
    assert_null(strstr(svg, "nan"));
    free(s);
    free(svg);
}

/* A distribution holding inf (a log axis otherwise) or NaN ends, its axis finite and the values' text kept. */
static void test_dist_not_finite(void **state)
{
    const float raw[3] = {1, 2, NAN};
    psc_dist_row_t rows[2] = {{"a", 0.5, 1, 2, 3, INFINITY, 3, raw, 1}, {"b", NAN, NAN, NAN, NAN, NAN, 3, raw, 1}};
    psc_dist_t d = {"t", "s", "us", 2, rows};
    char *svg = psc_figure_dist(&d);
    psc__svg_t *s;

    (void)state;
    assert_non_null(svg);
    s = psc__parse(svg);
    assert_true(psc__has_text_part(s, "p50 1  p99 3"));
    assert_true(psc__count_text(s, "0") + psc__count_text(s, "0.1") >= 1); /* an axis with finite ticks */
    assert_false(psc__has_text_part(s, "inf"));
    assert_null(strstr(svg, "nan\""));
    free(s);
    free(svg);
}

/* ------------------------------------------------------------ a run's page */

static psc_bw_test_t T(const char *name)
{
    psc_bw_test_t t = -1;

    assert_int_equal(psc_bw_test_from_name(name, &t), PSC_OK);
    return t;
}

static psc_bw_result_t psc__result(psc_bw_test_t test, int src, int dst, uint64_t size, double gbs)
{
    psc_bw_result_t r;

    memset(&r, 0, sizeof(r));
    r.c = (psc_bw_case_t){.test = test, .src = src, .dst = dst, .issuer = src, .nxfer = 1};
    r.c.xfer[0] = (psc_xfer_t){src, dst, src};
    r.size = size;
    r.iterations = 4;
    r.gated = 1;
    r.status = gbs > 0 ? PSC_RESULT_PASSED : PSC_RESULT_FAILED;
    r.verify.first_bad_offset = -1;
    r.nsamples = gbs > 0 ? 1 : 0;
    r.samples_gbs[0] = gbs;
    if (gbs > 0)
        psc_stats_compute(r.samples_gbs, 1, &r.stats);
    else
        snprintf(r.reason, sizeof(r.reason), "wrong data: <script>alert(1)</script>");
    return r;
}

typedef struct {
    psc_system_info_t sys;
    psc_device_info_t devs[2];
    psc_bw_result_t res[16];
    psc_suite_test_t tests[2];
    psc_bw_suite_t bw;
    psc_page_t page;
} psc__run_t;

/* sweep 0: one size, GPU <-> GPU write CE and SM; sweep 1: CE and SM at 4 sizes, SM ahead below 64K. */
static void psc__run_make(psc__run_t *r, int sweep)
{
    const uint64_t sizes[4] = {4096, 16384, 65536, 262144};
    const double ce[4] = {20, 60, 200, 380}, sm[4] = {40, 80, 150, 300};
    size_t n = 0;

    memset(r, 0, sizeof(*r));
    r->sys.cuda_driver_version = 13000;
    snprintf(r->sys.driver_release, sizeof(r->sys.driver_release), "580.159.04");
    for (int i = 0; i < 2; i++) {
        r->devs[i].index = i;
        r->devs[i].nvml_index = -1;
        r->devs[i].numa_node = r->devs[i].sm_clock_mhz = r->devs[i].mem_clock_mhz = r->devs[i].temperature_c = -1;
        snprintf(r->devs[i].name, sizeof(r->devs[i].name), "<b>Bold</b> & <i>GPU %d", i);
    }
    if (!sweep) {
        r->res[n++] = psc__result(T("gpu_to_gpu_write_ce"), 0, 1, 512ull << 20, 396.5);
        r->res[n++] = psc__result(T("gpu_to_gpu_write_ce"), 1, 0, 512ull << 20, 0); /* failed */
        r->res[n++] = psc__result(T("gpu_to_gpu_write_sm"), 0, 1, 512ull << 20, 370.25);
        r->res[n++] = psc__result(T("gpu_to_gpu_write_sm"), 1, 0, 512ull << 20, 371.5);
        r->tests[0] = (psc_suite_test_t){T("gpu_to_gpu_write_ce"), 0, 2};
        r->tests[1] = (psc_suite_test_t){T("gpu_to_gpu_write_sm"), 2, 2};
        r->bw.nsizes = 1;
    } else {
        for (int k = 0; k < 4; k++)
            r->res[n++] = psc__result(T("gpu_to_gpu_write_ce"), 0, 1, sizes[k], ce[k]);
        for (int k = 0; k < 4; k++)
            r->res[n++] = psc__result(T("gpu_to_gpu_write_sm"), 0, 1, sizes[k], sm[k]);
        r->tests[0] = (psc_suite_test_t){T("gpu_to_gpu_write_ce"), 0, 4};
        r->tests[1] = (psc_suite_test_t){T("gpu_to_gpu_write_sm"), 4, 4};
        r->bw.nsizes = 4;
    }
    r->bw.ndev = 2;
    r->bw.devices[1] = 1;
    r->bw.ntests = 2;
    r->bw.tests = r->tests;
    r->bw.nresults = n;
    r->bw.results = r->res;
    r->page = (psc_page_t){.command = "bw", .command_line = "p2pscope bw -d '<0>'", .sys = &r->sys,
                           .devs = r->devs, .ndev = 2, .bw = &r->bw, .started_utc = "2026-11-22T10:00:00Z"};
}

static void test_page_figures_heatmaps(void **state)
{
    psc__run_t *run = malloc(sizeof(*run));
    psc_page_figs_t figs = {0, NULL};
    const psc_page_fig_t *f;
    psc__svg_t *s;

    (void)state;
    assert_non_null(run);
    psc__run_make(run, 0);
    assert_int_equal(psc_page_figures(&run->page, &figs), PSC_OK);
    assert_int_equal(figs.n, 2); /* a matrix per GPU -> GPU test */
    f = psc_page_fig_find(&figs, "gpu_to_gpu_write_ce");
    assert_non_null(f);
    s = psc__parse(f->svg);
    assert_int_equal(psc__count_text(s, "396.5"), 2); /* the cell, and the top of the colour scale */
    assert_int_equal(psc__count_text(s, "FAIL"), 1);  /* gpu1 -> gpu0 failed: marked, no number */
    assert_int_equal(psc__count_text(s, "-"), 2);     /* the diagonal */
    assert_true(psc__count_text(s, "gpu0") == 2 && psc__count_text(s, "gpu1") == 2); /* row and column labels */
    free(s);
    s = psc__parse(psc_page_fig_find(&figs, "gpu_to_gpu_write_sm")->svg);
    assert_int_equal(psc__count_text(s, "370.2") + psc__count_text(s, "370.3"), 1);
    free(s);
    psc_page_figs_free(&figs);
    free(run);
}

/* A waived cell reads n/a, not FAIL (gpu1 -> gpu0 by SM waived). */
static void test_page_waived_cell(void **state)
{
    psc__run_t *run = malloc(sizeof(*run));
    psc_page_figs_t figs = {0, NULL};
    psc__svg_t *s;

    (void)state;
    assert_non_null(run);
    psc__run_make(run, 0);
    run->res[3].status = PSC_RESULT_WAIVED;
    assert_int_equal(psc_page_figures(&run->page, &figs), PSC_OK);
    s = psc__parse(psc_page_fig_find(&figs, "gpu_to_gpu_write_sm")->svg);
    assert_int_equal(psc__count_text(s, "n/a"), 1);
    assert_int_equal(psc__count_text(s, "FAIL"), 0);
    free(s);
    psc_page_figs_free(&figs);
    free(run);
}

static void test_page_figures_sweep(void **state)
{
    psc__run_t *run = malloc(sizeof(*run));
    psc_page_figs_t figs = {0, NULL};
    const psc_page_fig_t *f;
    psc__svg_t *s;

    (void)state;
    assert_non_null(run);
    psc__run_make(run, 1);
    assert_int_equal(psc_page_figures(&run->page, &figs), PSC_OK);
    assert_int_equal(figs.n, 1); /* the SM sweep is drawn with its copy-engine twin */
    f = psc_page_fig_find(&figs, "gpu_to_gpu_write_ce_sweep");
    assert_non_null(f);
    s = psc__parse(f->svg);
    assert_int_equal(psc__count_text(s, "gpu0 -> gpu1 CE"), 1);
    assert_int_equal(psc__count_text(s, "gpu0 -> gpu1 SM"), 1);
    /* SM leads at 4K and 16K, the copy engine from 64K: one crossing, named by the first size it leads at. */
    assert_int_equal(psc__count_text(s, "gpu0 -> gpu1: CE > SM from 64K"), 1);
    assert_false(psc__has_text_part(s, "SM > CE"));
    free(s);
    psc_page_figs_free(&figs);
    free(run);
}

/* The crossings named under a 4-size CE/SM sweep with these medians. */
static int psc__crossings_of(const double ce[4], const double sm[4])
{
    const uint64_t sizes[4] = {4096, 16384, 65536, 262144};
    psc__run_t *run = malloc(sizeof(*run));
    psc_page_figs_t figs = {0, NULL};
    psc__svg_t *s;
    int n = 0;

    assert_non_null(run);
    psc__run_make(run, 1);
    for (int k = 0; k < 4; k++) {
        run->res[k] = psc__result(T("gpu_to_gpu_write_ce"), 0, 1, sizes[k], ce[k]);
        run->res[4 + k] = psc__result(T("gpu_to_gpu_write_sm"), 0, 1, sizes[k], sm[k]);
    }
    assert_int_equal(psc_page_figures(&run->page, &figs), PSC_OK);
    s = psc__parse(psc_page_fig_find(&figs, "gpu_to_gpu_write_ce_sweep")->svg);
    for (int k = 0; k < s->ntext; k++)
        n += strstr(s->text[k], "gpu0 -> gpu1: ") == s->text[k] && strstr(s->text[k], " from ") != NULL;
    free(s);
    psc_page_figs_free(&figs);
    free(run);
    return n;
}

/* A crossing only between points clearly on opposite sides: touching or starting equal is none, 1 % is noise. */
static void test_crossings_tolerance(void **state)
{
    (void)state;
    /* Touching at 16K (equal there), SM above before and after. */
    assert_int_equal(psc__crossings_of((const double[4]){10, 20, 30, 40}, (const double[4]){20, 20, 40, 50}), 0);
    /* Starting equal, then SM above. */
    assert_int_equal(psc__crossings_of((const double[4]){20, 30, 40, 50}, (const double[4]){20, 40, 50, 60}), 0);
    /* Within 1 % of each other all along, either side. */
    assert_int_equal(psc__crossings_of((const double[4]){100, 100, 100, 100},
                                       (const double[4]){100.5, 99.6, 100.4, 99.7}), 0);
    /* Three real crossings stay three; one through an equal point stays one. */
    assert_int_equal(psc__crossings_of((const double[4]){10, 20, 10, 20}, (const double[4]){20, 10, 20, 10}), 3);
    assert_int_equal(psc__crossings_of((const double[4]){10, 20, 30, 40}, (const double[4]){20, 20, 20, 20}), 1);
}

static int psc__count(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* A sweep test with no case draws nothing; a copy-engine test with none leaves its SM twin's curves to the SM figure. */
static void test_sweep_without_cases(void **state)
{
    psc__run_t *run = malloc(sizeof(*run));
    psc_page_figs_t figs = {0, NULL};
    char *html;

    (void)state;
    assert_non_null(run);
    psc__run_make(run, 1);
    run->tests[0].n = 0; /* no CE case: the SM results alone */
    run->tests[1].first = 4;
    assert_int_equal(psc_page_figures(&run->page, &figs), PSC_OK);
    assert_int_equal(figs.n, 1);
    assert_null(psc_page_fig_find(&figs, "gpu_to_gpu_write_ce_sweep"));
    assert_non_null(psc_page_fig_find(&figs, "gpu_to_gpu_write_sm_sweep"));
    html = psc_html_render(&run->page, &figs);
    assert_non_null(html);
    assert_int_equal(psc__count(html, "<svg"), 1); /* the page shows what --svg writes */
    free(html);
    psc_page_figs_free(&figs);
    run->tests[1].n = 0; /* neither: no figure at all */
    assert_int_equal(psc_page_figures(&run->page, &figs), PSC_OK);
    assert_int_equal(figs.n, 0);
    psc_page_figs_free(&figs);
    free(run);
}

/* The driver's unknowns read "?", never -1: a P2P pair whose rank it did not give. */
static void test_page_rank_unknown(void **state)
{
    psc__run_t *run = malloc(sizeof(*run));
    psc_facts_t *facts = calloc(1, sizeof(*facts));
    psc_page_figs_t figs = {0, NULL};
    char *html;

    (void)state;
    assert_non_null(run);
    assert_non_null(facts);
    psc__run_make(run, 0);
    facts->ngpu = 2;
    facts->has_driver = 1;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            facts->pair[i][j].can_access = i != j;
            facts->pair[i][j].perf_rank = -1;
            facts->pair[i][j].native_atomics = -1;
        }
    facts->pair[1][0].perf_rank = 0;
    facts->pair[1][0].native_atomics = 1;
    run->page.facts = facts;
    assert_int_equal(psc_page_figures(&run->page, &figs), PSC_OK);
    html = psc_html_render(&run->page, &figs);
    assert_non_null(html);
    assert_int_equal(psc__count(html, "gpu1 yes (rank ?, atomics ?)"), 1);
    assert_int_equal(psc__count(html, "gpu0 yes (rank 0, atomics yes)"), 1);
    assert_int_equal(psc__count(html, "rank -1"), 0);
    free(html);
    psc_page_figs_free(&figs);
    free(facts);
    free(run);
}

/* Cells measured with different sample counts (adaptive sampling): the subtitle gives the range, not one count. */
static void test_heatmap_samples_range(void **state)
{
    psc__run_t *run = malloc(sizeof(*run));
    psc_page_figs_t figs = {0, NULL};
    psc__svg_t *s;

    (void)state;
    assert_non_null(run);
    psc__run_make(run, 0);
    run->res[2].nsamples = 3; /* gpu_to_gpu_write_sm: 3 and 1 samples */
    assert_int_equal(psc_page_figures(&run->page, &figs), PSC_OK);
    s = psc__parse(psc_page_fig_find(&figs, "gpu_to_gpu_write_sm")->svg);
    assert_true(psc__has_text_part(s, "median of 1 to 3 samples;"));
    free(s);
    s = psc__parse(psc_page_fig_find(&figs, "gpu_to_gpu_write_ce")->svg);
    assert_true(psc__has_text_part(s, "median of 1 sample;")); /* one passed cell: its own count */
    free(s);
    psc_page_figs_free(&figs);
    free(run);
}

/* Four GPUs (12 paths, 24 curves with SM): a small figure per source GPU, each its paths and its own crossings. */
static void test_sweep_small_multiples(void **state)
{
    enum { NG = 4, NS = 2 };
    const uint64_t sizes[NS] = {4096, 1 << 20};
    psc__run_t *run = malloc(sizeof(*run));
    psc_bw_result_t *res = calloc(2 * NG * NG * NS, sizeof(*res));
    psc_device_info_t devs[NG];
    psc_page_figs_t figs = {0, NULL};
    size_t n = 0;
    char *html;

    (void)state;
    assert_non_null(run);
    assert_non_null(res);
    psc__run_make(run, 1);
    memset(devs, 0, sizeof(devs));
    for (int e = 0; e < 2; e++) /* CE then SM; SM ahead at 4K, CE at 1M: one crossing per path */
        for (int a = 0; a < NG; a++)
            for (int b = 0; b < NG; b++)
                for (int k = 0; a != b && k < NS; k++)
                    res[n++] = psc__result(T(e ? "gpu_to_gpu_write_sm" : "gpu_to_gpu_write_ce"), a, b, sizes[k],
                                           e ? (k ? 100 : 50) : (k ? 200 : 20) + a + b);
    run->tests[0] = (psc_suite_test_t){T("gpu_to_gpu_write_ce"), 0, n / 2};
    run->tests[1] = (psc_suite_test_t){T("gpu_to_gpu_write_sm"), n / 2, n / 2};
    run->bw.results = res;
    run->bw.nresults = n;
    run->bw.nsizes = NS;
    run->bw.ndev = NG;
    for (int i = 0; i < NG; i++) {
        run->bw.devices[i] = i;
        devs[i].index = i;
        devs[i].nvml_index = devs[i].numa_node = devs[i].sm_clock_mhz = devs[i].mem_clock_mhz = -1;
        devs[i].temperature_c = -1;
    }
    run->page.devs = devs;
    run->page.ndev = NG;
    assert_int_equal(psc_page_figures(&run->page, &figs), PSC_OK);
    assert_int_equal(figs.n, NG);
    assert_null(psc_page_fig_find(&figs, "gpu_to_gpu_write_ce_sweep"));
    for (int a = 0; a < NG; a++) {
        char name[64], want[64];
        psc__svg_t *sv;
        int paths = 0, rings = 0;

        snprintf(name, sizeof(name), "gpu_to_gpu_write_ce_sweep_gpu%d", a);
        assert_non_null(psc_page_fig_find(&figs, name));
        sv = psc__parse(psc_page_fig_find(&figs, name)->svg);
        for (int k = 0; k < sv->ntext; k++) {
            snprintf(want, sizeof(want), "gpu%d -> ", a);
            paths += strstr(sv->text[k], " CE") && strstr(sv->text[k], "->") && !strstr(sv->text[k], ":");
            rings += strstr(sv->text[k], ": CE > SM from 1M") != NULL;
            if (strstr(sv->text[k], "->") && !strstr(sv->text[k], "vs"))
                assert_ptr_equal(strstr(sv->text[k], want), sv->text[k]); /* this source's paths only */
        }
        assert_int_equal(paths, NG - 1);
        assert_int_equal(rings, NG - 1);
        free(sv);
    }
    html = psc_html_render(&run->page, &figs);
    assert_non_null(html);
    assert_int_equal(psc__count(html, "<svg"), NG); /* the page shows the figures --svg writes */
    free(html);
    psc_page_figs_free(&figs);
    free(res);
    free(run);
}

/*
 * One GPU: a host <-> GPU or same-GPU matrix is 1 x 1, its GPU axis reads gpu0 and the other axis the
 * other place (host rows for host -> GPU, host columns for GPU -> host), in bandwidth and latency alike.
 */
static void test_page_one_gpu_axes(void **state)
{
    static const struct {
        const char *test, *row, *col;
        int src, dst;
    } bw[] = {{"host_to_gpu_ce", "host", "gpu0", PSC_HOST, 0},
              {"gpu_to_host_ce", "gpu0", "host", 0, PSC_HOST},
              {"gpu_local_ce", "same GPU", "gpu0", 0, 0}};
    static const struct {
        const char *test, *row;
        int src;
    } lat[] = {{"host_to_gpu_chase", "host", PSC_HOST}, {"local_chase", "same GPU", 0}, {"cpu_gpu_flag", "host", PSC_HOST}};
    psc__run_t *run = malloc(sizeof(*run));
    psc_lat_result_t *lres = calloc(3, sizeof(*lres));
    psc_suite_test_t ltests[3];
    psc_lat_suite_t ls;
    psc_page_figs_t figs = {0, NULL};

    (void)state;
    assert_non_null(run);
    assert_non_null(lres);
    psc__run_make(run, 0);
    for (int k = 0; k < 3; k++)
        run->res[k] = psc__result(T(bw[k].test), bw[k].src, bw[k].dst, 512ull << 20, 25.5 + k);
    run->tests[0] = (psc_suite_test_t){T(bw[0].test), 0, 1};
    run->tests[1] = (psc_suite_test_t){T(bw[1].test), 1, 1};
    run->bw.nresults = 3;
    run->bw.ndev = 1;
    run->page.ndev = 1;
    memset(&ls, 0, sizeof(ls));
    for (int k = 0; k < 3; k++) {
        psc_lat_test_t t = -1;

        assert_int_equal(psc_lat_test_from_name(lat[k].test, &t), PSC_OK);
        lres[k].c = (psc_lat_case_t){.test = t, .src = lat[k].src, .dst = 0, .issuer = 0};
        lres[k].status = PSC_RESULT_PASSED;
        lres[k].nsizes = 1;
        lres[k].sizes[0] = 2u << 20;
        lres[k].lat[0] = (psc_pctl_t){1, 700, 750 + k, 800, 900, 950, 760};
        ltests[k] = (psc_suite_test_t){t, (size_t)k, 1};
    }
    ls.ndev = 1;
    ls.ntests = 3;
    ls.tests = ltests;
    ls.nresults = 3;
    ls.results = lres;
    run->page.lat = &ls;
    for (int pass = 0; pass < 2; pass++) { /* the same-GPU test in a second run: the run has room for two tests */
        if (pass == 1) {
            run->tests[0] = (psc_suite_test_t){T(bw[2].test), 2, 1};
            run->bw.ntests = 1;
        }
        assert_int_equal(psc_page_figures(&run->page, &figs), PSC_OK);
        for (int k = pass ? 2 : 0; k < (pass ? 3 : 2); k++) {
            const psc_page_fig_t *f = psc_page_fig_find(&figs, bw[k].test);
            psc__svg_t *s;

            assert_non_null(f);
            s = psc__parse(f->svg);
            assert_int_equal(psc__count_text(s, bw[k].row), 1);
            assert_int_equal(psc__count_text(s, bw[k].col), 1);
            assert_true(psc__is_row_label(f->svg, bw[k].row));
            assert_false(psc__is_row_label(f->svg, bw[k].col));
            free(s);
        }
        for (int k = 0; k < 3; k++) {
            const psc_page_fig_t *f = psc_page_fig_find(&figs, lat[k].test);
            psc__svg_t *s;

            assert_non_null(f);
            s = psc__parse(f->svg);
            assert_int_equal(psc__count_text(s, lat[k].row), 1);
            assert_int_equal(psc__count_text(s, "gpu0"), 1);
            assert_true(psc__is_row_label(f->svg, lat[k].row));
            assert_false(psc__is_row_label(f->svg, "gpu0"));
            free(s);
        }
        psc_page_figs_free(&figs);
    }
    free(lres);
    free(run);
}

static void test_page_html(void **state)
{
    psc__run_t *run = malloc(sizeof(*run));
    psc_page_figs_t figs = {0, NULL};
    char *html;

    (void)state;
    assert_non_null(run);
    psc__run_make(run, 0);
    assert_int_equal(psc_page_figures(&run->page, &figs), PSC_OK);
    html = psc_html_render(&run->page, &figs);
    assert_non_null(html);
    assert_int_equal(strncmp(html, "<!DOCTYPE html>", 15), 0);
    assert_int_equal(psc__count(html, "<svg "), (int)figs.n); /* every figure inline */
    assert_int_equal(psc__count(html, "<?xml"), 0);            /* without its XML declaration */
    assert_int_equal(psc__count(html, "id=\"surface"), 0);     /* ids made unique per figure */
    /* Text from outside stays text: the GPU names, the failed case's reason, the command line. */
    assert_null(strstr(html, "<b>"));
    assert_null(strstr(html, "<i>"));
    assert_null(strstr(html, "<script"));
    assert_non_null(strstr(html, "&lt;b&gt;Bold&lt;/b&gt; &amp; &lt;i&gt;GPU 0"));
    assert_non_null(strstr(html, "wrong data: &lt;script&gt;"));
    assert_non_null(strstr(html, "p2pscope bw -d &#39;&lt;0&gt;&#39;"));
    /* Self-contained: nothing fetched. */
    assert_null(strstr(html, "src="));
    assert_null(strstr(html, "<link"));
    assert_null(strstr(html, "@import"));
    free(html);
    psc_page_figs_free(&figs);
    free(run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heatmap_cells),
        cmocka_unit_test(test_curves_crossing),
        cmocka_unit_test(test_crossings_tolerance),
        cmocka_unit_test(test_sweep_without_cases),
        cmocka_unit_test(test_heatmap_not_finite),
        cmocka_unit_test(test_curves_not_finite),
        cmocka_unit_test(test_dist_not_finite),
        cmocka_unit_test(test_page_rank_unknown),
        cmocka_unit_test(test_heatmap_samples_range),
        cmocka_unit_test(test_sweep_small_multiples),
        cmocka_unit_test(test_dist),
        cmocka_unit_test(test_page_figures_heatmaps),
        cmocka_unit_test(test_page_waived_cell),
        cmocka_unit_test(test_page_one_gpu_axes),
        cmocka_unit_test(test_page_figures_sweep),
        cmocka_unit_test(test_page_html),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
