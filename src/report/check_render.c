/* p2pscope check as text (a line per item, the verdict line) and as one self-contained page (check.h). */
#include <stdio.h>
#include <stdlib.h>

#include "report/check.h"
#include "report/html_buf.h"
#include "report/text.h"

static const char *psc__word(psc_check_state_t s)
{
    return s == PSC_CHECK_PASS ? "PASS" : s == PSC_CHECK_FAIL ? "FAIL" : "SKIP";
}

void psc_render_check_verdict(FILE *f, const psc_check_report_t *r)
{
    psc_report_printf(f, "check: %s (%zu passed, %zu failed, %zu skipped) in %.1f s%s%s\n",
                      r->failed ? "UNHEALTHY" : "HEALTHY", r->passed, r->failed, r->skipped, r->wall_s,
                      r->baseline ? ", against the baseline " : "", r->baseline ? r->baseline : "");
}

void psc_render_check(FILE *f, const psc_check_report_t *r)
{
    psc_report_printf(f, "\nNode check, bounds: %s [bandwidth GB/s, 1 GB = 1e9 bytes; latency ns]\n",
                      r->bounds ? r->bounds : "auto");
    for (size_t i = 0; i < r->n; i++)
        psc_report_printf(f, "%s  %-28s %s\n", psc__word(r->items[i].state), r->items[i].name, r->items[i].line);
    psc_render_check_verdict(f, r);
}

char *psc_html_check(const psc_check_report_t *r, const char *title)
{
    psc_buf_t b = {0};

    psc_buf_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
    psc_buf_esc(&b, title);
    psc_buf_puts(&b, "</title><style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
                     "td,th{border:1px solid #bbb;padding:.3em .6em;text-align:left;vertical-align:top}"
                     ".pass{color:#060}.fail{color:#b00;font-weight:bold}.skip{color:#777}</style></head><body>\n<h1>");
    psc_buf_esc(&b, title);
    psc_buf_printf(&b, "</h1>\n<p class=\"%s\">%s: %zu passed, %zu failed, %zu skipped in %.1f s (bounds: ",
                   r->failed ? "fail" : "pass", r->failed ? "UNHEALTHY" : "HEALTHY", r->passed, r->failed, r->skipped,
                   r->wall_s);
    psc_buf_esc(&b, r->bounds ? r->bounds : "auto");
    if (r->baseline) {
        psc_buf_puts(&b, "; baseline: ");
        psc_buf_esc(&b, r->baseline);
    }
    psc_buf_puts(&b, ")</p>\n<table><tr><th>state</th><th>item</th><th>verdict</th></tr>\n");
    for (size_t i = 0; i < r->n; i++) {
        const psc_check_item_t *it = &r->items[i];
        const char *cls = it->state == PSC_CHECK_PASS ? "pass" : it->state == PSC_CHECK_FAIL ? "fail" : "skip";

        psc_buf_printf(&b, "<tr class=\"%s\"><td>%s</td><td>", cls, psc__word(it->state));
        psc_buf_esc(&b, it->name);
        psc_buf_puts(&b, "</td><td>");
        psc_buf_esc(&b, it->line);
        psc_buf_puts(&b, "</td></tr>\n");
    }
    psc_buf_puts(&b, "</table>\n<p>Bandwidth in GB/s (1 GB = 1e9 bytes), latency in ns. Every figure and bound is "
                     "in the JSON (--json).</p>\n</body></html>\n");
    return psc_buf_take(&b);
}
