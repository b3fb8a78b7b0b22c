/*
 * compare --html FILE and --csv DIR (compare.h): the comparison as one self-contained page (inline CSS, no
 * script, every text from the runs escaped) and as CSV tables, in the words of the text and the JSON
 * (compare.c's names, figures and marks), written as a run's page and tables are (html_page.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/p2pscope_private.h"
#include "report/compare.h"
#include "report/html_buf.h"
#include "report/html_page.h"

/* A recorded value as text: a string as it is, anything else as compact JSON; absent: "(absent)". NULL: OOM. */
static char *psc__value(const json_t *v)
{
    if (!v)
        return strdup("(absent)");
    return json_is_string(v) ? strdup(json_string_value(v)) : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
}

static void psc__td(psc_buf_t *b, const char *cls, const char *text)
{
    psc_buf_printf(b, "<td%s%s%s>", cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
    psc_buf_esc(b, text);
    psc_buf_puts(b, "</td>");
}

/* One side of a row: its figure (or why none) and the interval its samples spread over. */
static void psc__side(psc_buf_t *b, const psc_cmp_run_t *run, const psc_cmp_case_t *x, double v)
{
    char fig[32], lo[32], hi[32], t[128];

    if (x->status != PSC_CMP_PASSED) {
        psc__td(b, x->status == PSC_CMP_FAILED ? "fail" : NULL, psc_cmp_status_text(run, x));
        psc__td(b, NULL, "");
        return;
    }
    psc_cmp_fig(fig, sizeof(fig), v);
    psc__td(b, "n", fig);
    if (x->n) {
        psc_cmp_fig(lo, sizeof(lo), x->lo);
        psc_cmp_fig(hi, sizeof(hi), x->hi);
        snprintf(t, sizeof(t), "%s .. %s (%u)", lo, hi, x->n);
    } else {
        snprintf(t, sizeof(t), "no samples recorded");
    }
    psc__td(b, "n", t);
}

/* The row's colour: worse beyond the noise or lost (red), better or passing now (blue), else none. */
static const char *psc__row_class(psc_cmp_verdict_t v)
{
    if (v == PSC_CMP_WORSE || v == PSC_CMP_NOW_FAILS || v == PSC_CMP_NOW_WAIVED)
        return " class=\"sev-error\"";
    return v == PSC_CMP_BETTER || v == PSC_CMP_NOW_PASSES ? " class=\"sev-info\"" : "";
}

static void psc__rows(psc_buf_t *b, const psc_compare_t *c)
{
    psc_buf_puts(b, "<section id=\"cases\"><h2>Cases in both runs</h2>\n<p class=\"note\">");
    psc_buf_esc(b, psc_cmp_figure_text(c->a));
    psc_buf_puts(b, "; change = (B - A) / A; each interval is ");
    psc_buf_esc(b, psc_cmp_interval_text(c->a));
    psc_buf_printf(b, " (samples). Marks: WORSE and better where the two intervals do not overlap, so the change is "
                      "beyond the noise either run shows; no mark: within it; ?: fewer than %d samples in a run, not "
                      "judged; FAILS now, WAIVED now: passed in A.</p>\n", PSC_CMP_MIN_SAMPLES);
    if (c->nrows == 0) {
        psc_buf_puts(b, "<p>none</p></section>\n");
        return;
    }
    psc_buf_puts(b, "<table>\n<tr><th>case</th><th>A</th><th>A interval</th><th>B</th><th>B interval</th>"
                    "<th>change</th><th>mark</th></tr>\n");
    for (size_t i = 0; i < c->nrows; i++) {
        const psc_cmp_row_t *r = &c->rows[i];
        char change[32] = "-", mark[48];

        if (!isnan(r->change_pct))
            snprintf(change, sizeof(change), "%+.1f %%", r->change_pct);
        psc_cmp_mark(mark, sizeof(mark), c, r);
        psc_buf_printf(b, "<tr%s>", psc__row_class(r->verdict));
        psc__td(b, NULL, r->label);
        psc__side(b, c->a, r->a, r->va);
        psc__side(b, c->b, r->b, r->vb);
        psc__td(b, "n", change);
        psc__td(b, NULL, mark);
        psc_buf_puts(b, "</tr>\n");
    }
    psc_buf_puts(b, "</table></section>\n");
}

static void psc__diffs(psc_buf_t *b, const psc_compare_t *c)
{
    psc_buf_puts(b, "<section id=\"differences\"><h2>Machine and options</h2>\n");
    if (c->ndiffs == 0) {
        psc_buf_puts(b, "<p>No differences recorded (driver, CUDA, GPUs, clocks, options).</p></section>\n");
        return;
    }
    psc_buf_puts(b, "<table>\n<tr><th>field</th><th>A</th><th>B</th></tr>\n");
    for (size_t i = 0; i < c->ndiffs; i++) {
        char *a = psc__value(c->diffs[i].a), *v = psc__value(c->diffs[i].b);

        b->bad |= !a || !v;
        psc_buf_puts(b, "<tr>");
        psc__td(b, NULL, c->diffs[i].field);
        psc__td(b, NULL, a ? a : "");
        psc__td(b, NULL, v ? v : "");
        psc_buf_puts(b, "</tr>\n");
        free(a);
        free(v);
    }
    psc_buf_puts(b, "</table></section>\n");
}

static void psc__only(psc_buf_t *b, const psc_cmp_run_t *run, const char *which, const psc_cmp_case_t *const *v,
                      size_t n)
{
    psc_buf_printf(b, "<h3>Only in %s (%zu case%s)</h3>\n", which, n, n == 1 ? "" : "s");
    if (n == 0)
        return;
    psc_buf_puts(b, "<ul class=\"note\">\n");
    for (size_t i = 0; i < n; i++) {
        psc_buf_puts(b, "<li>");
        psc_buf_esc(b, v[i]->label);
        if (v[i]->status != PSC_CMP_PASSED) {
            psc_buf_puts(b, " (");
            psc_buf_esc(b, psc_cmp_status_text(run, v[i]));
            psc_buf_puts(b, ")");
        }
        psc_buf_puts(b, "</li>\n");
    }
    psc_buf_puts(b, "</ul>\n");
}

static void psc__run_line(psc_buf_t *b, const char *which, const psc_cmp_run_t *r)
{
    const json_t *s = json_object_get(r->doc, "started_utc");

    psc_buf_printf(b, "%s = ", which);
    psc_buf_esc(b, r->path);
    psc_buf_puts(b, " (");
    psc_buf_esc(b, r->command);
    psc_buf_puts(b, ", ");
    psc_buf_esc(b, json_is_string(s) ? json_string_value(s) : "start not recorded");
    psc_buf_puts(b, ")");
}

static char *psc__html(const psc_compare_t *c, int exit_code)
{
    psc_buf_t b = {0};

    psc_buf_printf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" "
                       "content=\"width=device-width, initial-scale=1\">\n<title>p2pscope compare</title>\n"
                       "<style>%s</style>\n</head>\n<body>\n<h1>p2pscope compare</h1>\n<p class=\"sub\">",
                   psc_page_css);
    psc__run_line(&b, "A", c->a);
    psc_buf_puts(&b, "; ");
    psc__run_line(&b, "B", c->b);
    psc_buf_printf(&b, "; exit code %d</p>\n<nav><a href=\"#differences\">machine and options</a>"
                       "<a href=\"#cases\">cases</a><a href=\"#only\">in one run only</a></nav>\n", exit_code);
    psc__diffs(&b, c);
    psc__rows(&b, c);
    psc_buf_puts(&b, "<section id=\"only\"><h2>Cases in one run only</h2>\n");
    psc__only(&b, c->a, "A", c->only_a, c->nonly_a);
    psc__only(&b, c->b, "B", c->only_b, c->nonly_b);
    psc_buf_puts(&b, "</section>\n");
    if (c->fail_above >= 0)
        psc_buf_printf(&b, "<p class=\"%s\">--fail-above %g: %zu case%s worse by more than %g %% beyond the noise, "
                           "or failing or waived now</p>\n", c->nfailed ? "fail" : "note", c->fail_above, c->nfailed,
                       c->nfailed == 1 ? "" : "s", c->fail_above);
    psc_buf_puts(&b, "</body>\n</html>\n");
    return psc_buf_take(&b);
}

/* One side of cases.csv: status, value, low, high, samples. */
static void psc__csv_side(psc_buf_t *b, const psc_cmp_case_t *x, double v)
{
    int passed = x->status == PSC_CMP_PASSED;

    psc_csv_field(b, psc_cmp_status_name(x), 0);
    psc_csv_num(b, "%.6g", v, passed && isfinite(v), 0);
    psc_csv_num(b, "%.6g", x->lo, passed && x->n, 0);
    psc_csv_num(b, "%.6g", x->hi, passed && x->n, 0);
    psc_buf_printf(b, "%u,", x->n);
}

static char *psc__csv_cases(const psc_compare_t *c)
{
    static const char *const head[] = {"case", "a_status", "a_value", "a_low", "a_high", "a_samples", "b_status",
                                       "b_value", "b_low", "b_high", "b_samples", "unit", "change_pct", "verdict",
                                       "fails"};
    psc_buf_t b = {0};

    psc_csv_header(&b, head, (int)(sizeof(head) / sizeof(head[0])));
    for (size_t i = 0; i < c->nrows; i++) {
        const psc_cmp_row_t *r = &c->rows[i];

        psc_csv_field(&b, r->label, 0);
        psc__csv_side(&b, r->a, r->va);
        psc__csv_side(&b, r->b, r->vb);
        psc_csv_field(&b, c->a->unit, 0);
        psc_csv_num(&b, "%.3f", r->change_pct, !isnan(r->change_pct), 0);
        psc_csv_field(&b, psc_cmp_verdict_name(r->verdict), 0);
        psc_csv_field(&b, r->fails ? "yes" : "no", 1);
    }
    return psc_buf_take(&b);
}

static char *psc__csv_diffs(const psc_compare_t *c)
{
    static const char *const head[] = {"field", "a", "b"};
    psc_buf_t b = {0};

    psc_csv_header(&b, head, 3);
    for (size_t i = 0; i < c->ndiffs; i++) {
        char *a = psc__value(c->diffs[i].a), *v = psc__value(c->diffs[i].b);

        b.bad |= !a || !v;
        psc_csv_field(&b, c->diffs[i].field, 0);
        psc_csv_field(&b, a, 0);
        psc_csv_field(&b, v, 1);
        free(a);
        free(v);
    }
    return psc_buf_take(&b);
}

static char *psc__csv_only(const psc_compare_t *c)
{
    static const char *const head[] = {"run", "case", "status"};
    psc_buf_t b = {0};

    psc_csv_header(&b, head, 3);
    for (int side = 0; side < 2; side++)
        for (size_t i = 0; i < (side ? c->nonly_b : c->nonly_a); i++) {
            const psc_cmp_case_t *x = side ? c->only_b[i] : c->only_a[i];

            psc_csv_field(&b, side ? "B" : "A", 0);
            psc_csv_field(&b, x->label, 0);
            psc_csv_field(&b, psc_cmp_status_name(x), 1);
        }
    return psc_buf_take(&b);
}

psc_status_t psc_compare_page_write(const psc_compare_t *c, int exit_code, const char *html_path,
                                    const char *csv_dir, char *err, size_t errlen)
{
    psc_status_t st = PSC_OK;

    if (html_path) {
        char *html = psc__html(c, exit_code);

        if (!html) {
            snprintf(err, errlen, "out of host memory writing the page");
            return PSC_ERR_NO_MEMORY;
        }
        st = psc_write_file_atomic(html_path, html, strlen(html), err, errlen);
        free(html);
    }
    if (st == PSC_OK && csv_dir) {
        psc_csv_file_t files[3] = {{"cases.csv", psc__csv_cases(c)}, {"differences.csv", psc__csv_diffs(c)},
                                   {"only.csv", psc__csv_only(c)}};

        if (!files[0].text || !files[1].text || !files[2].text) {
            snprintf(err, errlen, "out of host memory writing the CSV tables");
            st = PSC_ERR_NO_MEMORY;
        } else {
            st = psc_page_write_dir(csv_dir, files, 3, err, errlen);
        }
        for (int k = 0; k < 3; k++)
            free(files[k].text);
    }
    return st;
}
