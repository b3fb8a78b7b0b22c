/* Progress lines (render_progress.h): a live line on a terminal, one line per finished case otherwise. */
#include <stdio.h>

#include "report/render.h"
#include "report/render_progress.h"
#include "report/text.h"

void psc_render_bw_progress(FILE *f, const psc_bw_suite_progress_t *p, int tty)
{
    const psc_bw_case_t *c = p->c;
    const psc_bw_result_t *r = p->result;
    char label[48];

    psc_case_label(c, label, sizeof(label));
    if (tty && !r) {
        fprintf(f, "\r\033[K[%zu/%zu] %s %s", p->index + 1, p->count, psc_bw_test_name(c->test), label);
    } else if (!tty && r) {
        if (r->status == PSC_RESULT_PASSED)
            fprintf(f, "[%zu/%zu] %s %s: %.2f GB/s passed (%u samples, %llu B)\n", p->index + 1, p->count,
                    psc_bw_test_name(c->test), label, r->stats.median, r->nsamples, (unsigned long long)r->size);
        else
            psc_report_printf(f, "[%zu/%zu] %s %s: %s: %s\n", p->index + 1, p->count, psc_bw_test_name(c->test),
                              label, psc_result_status_string(r->status), r->reason);
    }
    fflush(f);
}

void psc_render_lat_progress(FILE *f, const psc_lat_case_t *c, const psc_lat_result_t *r, int tty)
{
    char a[16], b[16];

    if (tty && !r)
        fprintf(f, "\r\033[K%s %s -> %s", psc_lat_test_info(c->test)->name,
                psc_endpoint_name(c->src, a, sizeof(a)), psc_endpoint_name(c->dst, b, sizeof(b)));
    else if (!tty && r)
        fprintf(f, "%s %s -> %s: %s %.0f ns p50\n", psc_lat_test_info(c->test)->name,
                psc_endpoint_name(c->src, a, sizeof(a)), psc_endpoint_name(c->dst, b, sizeof(b)),
                psc_result_status_string(r->status), r->lat[0].p50);
}

void psc_render_verify_progress(FILE *f, const psc_verify_progress_t *p, const char *load_error, int tty)
{
    char label[48];

    if (load_error) { /* checked without it, and the run fails: it did not do what was asked */
        psc_report_printf(f, "p2pscope: cannot set up the background traffic: %s (--no-load runs without it)\n",
                          load_error);
        return;
    }
    psc_case_label(p->c, label, sizeof(label));
    if (tty && !p->result)
        fprintf(f, "\r\033[K%.0f s, %.1f GB checked: pass %u [%zu/%zu] %s %s", p->elapsed_s, p->bytes_checked / 1e9,
                p->pass, p->index + 1, p->count, psc_bw_test_name(p->c->test), label);
    else if (!tty && p->result)
        fprintf(f, "%.0f s, %.1f GB checked: pass %u [%zu/%zu] %s %s: %s, %llu copies\n", p->elapsed_s,
                p->bytes_checked / 1e9, p->pass, p->index + 1, p->count, psc_bw_test_name(p->c->test), label,
                psc_result_status_string(p->result->status), (unsigned long long)p->result->copies);
}
