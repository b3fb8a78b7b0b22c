/*
 * --csv DIR: the run's tables as CSV (RFC 4180: a header row, comma
 * separated, a field quoted when it holds a comma, a quote, a line break or
 * surrounding spaces, quotes doubled; text starting = + - @ led by '). One file per table, since each has its
 * own columns: bw.csv and lat.csv (a row per case and size), gpus.csv,
 * topology.csv (a row per GPU pair), findings.csv.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html_buf.h"
#include "html_page.h"
#include "render.h"
#include "lib/p2pscope_private.h"

static const char *psc__quote_doubled(unsigned char c)
{
    return c == '"' ? "\"\"" : NULL;
}

/*
 * A text field: UTF-8 repaired, control characters as \xNN (one record per
 * line), one starting with = + - @ given a leading ' (a formula to a
 * spreadsheet otherwise), quoted where needed. Numbers are not fields.
 */
void psc_csv_field(psc_buf_t *b, const char *s, int last)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p);
    int quote = n && (p[0] == ' ' || p[n - 1] == ' ');

    for (size_t k = 0; k < n && !quote; k++)
        quote = p[k] == ',' || p[k] == '"' || p[k] == '\n' || p[k] == '\r';
    if (quote)
        psc_buf_puts(b, "\"");
    if (*p && strchr("=+-@", *p)) /* a spreadsheet would run it as a formula: text, as the sheet's own ' marks it */
        psc_buf_puts(b, "'");
    psc_buf_clean(b, (const char *)p, "", psc__quote_doubled);
    psc_buf_puts(b, quote ? "\"" : "");
    psc_buf_puts(b, last ? "\r\n" : ",");
}

void psc_csv_num(psc_buf_t *b, const char *fmt, double v, int shown, int last)
{
    if (shown)
        psc_buf_printf(b, fmt, v);
    psc_buf_puts(b, last ? "\r\n" : ",");
}

void psc_csv_header(psc_buf_t *b, const char *const *cols, int n)
{
    for (int k = 0; k < n; k++)
        psc_csv_field(b, cols[k], k == n - 1);
}

static char *psc__bw(const psc_bw_suite_t *s)
{
    static const char *const head[] = {"test", "title", "direction", "src", "dst", "issuer", "engine", "host_memory",
                                       "bytes_per_copy", "status", "median_gbs", "min_gbs", "max_gbs", "mean_gbs",
                                       "stddev_gbs", "cv_pct", "samples", "copies_per_sample", "bad_bytes", "reason"};
    psc_buf_t b = {0};

    psc_csv_header(&b, head, (int)(sizeof(head) / sizeof(head[0])));
    for (size_t i = 0; i < s->nresults; i++) {
        const psc_bw_result_t *r = &s->results[i];
        const psc_bw_test_info_t *ti = psc_bw_test_info(r->c.test);
        int ok = r->status == PSC_RESULT_PASSED && r->nsamples > 0, host = r->c.src == PSC_HOST || r->c.dst == PSC_HOST;
        double cv = 0;
        int cv_ok;
        char t[48];

        psc_csv_field(&b, psc_bw_test_name(r->c.test), 0);
        psc_csv_field(&b, psc_bw_test_title(r->c.test), 0);
        psc_csv_field(&b, psc_case_label(&r->c, t, sizeof(t)), 0);
        psc_csv_field(&b, psc_endpoint_name(r->c.src, t, sizeof(t)), 0);
        psc_csv_field(&b, psc_endpoint_name(r->c.dst, t, sizeof(t)), 0);
        psc_csv_field(&b, psc_endpoint_name(r->c.issuer, t, sizeof(t)), 0);
        psc_csv_field(&b, ti ? psc_render_engine_key(ti->engine) : "", 0);
        psc_csv_field(&b, ti && host ? psc_hostmem_name(ti->hostmem) : "", 0);
        psc_buf_printf(&b, "%llu,", (unsigned long long)r->size);
        psc_csv_field(&b, psc_result_status_string(r->status), 0);
        psc_csv_num(&b, "%.3f", r->stats.median, ok, 0);
        psc_csv_num(&b, "%.3f", r->stats.min, ok, 0);
        psc_csv_num(&b, "%.3f", r->stats.max, ok, 0);
        psc_csv_num(&b, "%.3f", r->stats.mean, ok, 0);
        psc_csv_num(&b, "%.3f", r->stats.stddev, ok, 0);
        cv_ok = ok && psc_stats_cv_pct(&r->stats, &cv);
        psc_csv_num(&b, "%.3f", cv, cv_ok, 0);
        psc_buf_printf(&b, "%u,%u,%llu,", r->nsamples, r->iterations, (unsigned long long)r->verify.bad_bytes);
        psc_csv_field(&b, r->reason, 1);
    }
    return psc_buf_take(&b);
}

static char *psc__lat(const psc_lat_suite_t *s)
{
    static const char *const head[] = {"test", "title", "direction", "src", "dst", "issuer", "bytes", "status",
                                       "unit", "min", "p50", "p90", "p99", "max", "mean", "samples", "reason"};
    psc_buf_t b = {0};

    psc_csv_header(&b, head, (int)(sizeof(head) / sizeof(head[0])));
    for (size_t i = 0; i < s->nresults; i++) {
        const psc_lat_result_t *r = &s->results[i];
        const psc_lat_test_info_t *ti = psc_lat_test_info(r->c.test);
        unsigned rows = r->nsizes ? r->nsizes : 1;

        for (unsigned k = 0; k < rows; k++) {
            int ok = r->status == PSC_RESULT_PASSED && r->nsizes > 0;
            const psc_pctl_t *p = &r->lat[k < PSC_LAT_MAX_SIZES ? k : 0];
            char a[16], c[16], dir[40];

            psc_endpoint_name(r->c.src, a, sizeof(a));
            psc_endpoint_name(r->c.dst, c, sizeof(c));
            snprintf(dir, sizeof(dir), "%s -> %s", a, c);
            psc_csv_field(&b, ti ? ti->name : "unknown", 0);
            psc_csv_field(&b, ti ? ti->title : "", 0);
            psc_csv_field(&b, dir, 0);
            psc_csv_field(&b, a, 0);
            psc_csv_field(&b, c, 0);
            psc_csv_field(&b, psc_endpoint_name(r->c.issuer, a, sizeof(a)), 0);
            if (r->nsizes)
                psc_buf_printf(&b, "%llu,", (unsigned long long)r->sizes[k]);
            else
                psc_buf_puts(&b, ",");
            psc_csv_field(&b, psc_result_status_string(r->status), 0);
            psc_csv_field(&b, "ns", 0);
            psc_csv_num(&b, "%.1f", p->min, ok, 0);
            psc_csv_num(&b, "%.1f", p->p50, ok, 0);
            psc_csv_num(&b, "%.1f", p->p90, ok, 0);
            psc_csv_num(&b, "%.1f", p->p99, ok, 0);
            psc_csv_num(&b, "%.1f", p->max, ok, 0);
            psc_csv_num(&b, "%.1f", p->mean, ok, 0);
            psc_csv_num(&b, "%.0f", p->n, ok, 0);
            psc_csv_field(&b, r->reason, 1);
        }
    }
    return psc_buf_take(&b);
}

static char *psc__gpus(const psc_page_t *p)
{
    static const char *const head[] = {"gpu", "nvml_index", "name", "pci_bus_id", "memory_bytes", "sm_count",
                                       "compute_capability", "copy_engines", "numa_node", "sm_clock_mhz",
                                       "sm_clock_max_mhz", "memory_clock_mhz", "temperature_c"};
    psc_buf_t b = {0};

    psc_csv_header(&b, head, (int)(sizeof(head) / sizeof(head[0])));
    for (int i = 0; i < p->ndev; i++) {
        const psc_device_info_t *d = &p->devs[i];

        psc_buf_printf(&b, "gpu%d,", d->index);
        psc_csv_num(&b, "%.0f", d->nvml_index, d->nvml_index >= 0, 0);
        psc_csv_field(&b, d->name, 0);
        psc_csv_field(&b, d->pci_bus_id, 0);
        psc_buf_printf(&b, "%llu,%d,%d.%d,%d,", (unsigned long long)d->memory_bytes, d->sm_count, d->cc_major,
                       d->cc_minor, d->async_engines);
        psc_csv_num(&b, "%.0f", d->numa_node, d->numa_node >= 0, 0);
        psc_csv_num(&b, "%.0f", d->sm_clock_mhz, d->sm_clock_mhz >= 0, 0);
        psc_csv_num(&b, "%.0f", d->sm_clock_max_mhz, d->sm_clock_max_mhz >= 0, 0);
        psc_csv_num(&b, "%.0f", d->mem_clock_mhz, d->mem_clock_mhz >= 0, 0);
        psc_csv_num(&b, "%.0f", d->temperature_c, d->temperature_c >= 0, 1);
    }
    return psc_buf_take(&b);
}

static char *psc__topology(const psc_facts_t *f)
{
    static const char *const head[] = {"src", "dst", "path", "nvlinks", "p2p_access", "perf_rank", "native_atomics"};
    psc_buf_t b = {0};

    psc_csv_header(&b, head, (int)(sizeof(head) / sizeof(head[0])));
    for (int i = 0; i < f->ngpu; i++)
        for (int j = 0; j < f->ngpu; j++) {
            const psc_pair_facts_t *q = &f->pair[i][j];
            char t[16];

            if (i == j)
                continue;
            psc_buf_printf(&b, "gpu%d,gpu%d,", i, j);
            psc_csv_field(&b, psc_path_label(q->path, q->nvlinks, t, sizeof(t)), 0);
            psc_buf_printf(&b, "%d,", q->nvlinks);
            psc_csv_field(&b, !f->has_driver || q->can_access < 0 ? "" : q->can_access ? "yes" : "no", 0);
            psc_csv_num(&b, "%.0f", q->perf_rank, f->has_driver && q->perf_rank >= 0, 0);
            psc_csv_field(&b, q->native_atomics < 0 ? "" : q->native_atomics ? "yes" : "no", 1);
        }
    return psc_buf_take(&b);
}

static char *psc__findings(const psc_finding_t *v, size_t n)
{
    static const char *const head[] = {"severity", "rule", "what", "evidence", "fix"};
    psc_buf_t b = {0};

    psc_csv_header(&b, head, 5);
    for (size_t k = 0; k < n; k++) {
        psc_csv_field(&b, psc_severity_string(v[k].severity), 0);
        psc_csv_field(&b, v[k].rule, 0);
        psc_csv_field(&b, v[k].what, 0);
        psc_csv_field(&b, v[k].evidence, 0);
        psc_csv_field(&b, v[k].fix, 1);
    }
    return psc_buf_take(&b);
}

psc_csv_file_t *psc_csv_render(const psc_page_t *p, size_t *n)
{
    psc_csv_file_t *out = calloc(5, sizeof(*out));
    size_t k = 0;
    int bad = !out;

    if (!bad && p->bw) {
        out[k].name = "bw.csv";
        bad = !(out[k++].text = psc__bw(p->bw));
    }
    if (!bad && p->lat) {
        out[k].name = "lat.csv";
        bad = !(out[k++].text = psc__lat(p->lat));
    }
    if (!bad) {
        out[k].name = "gpus.csv";
        bad = !(out[k++].text = psc__gpus(p));
    }
    if (!bad && p->facts) {
        out[k].name = "topology.csv";
        bad = !(out[k++].text = psc__topology(p->facts));
    }
    if (!bad && p->doctor_ran) {
        out[k].name = "findings.csv";
        bad = !(out[k++].text = psc__findings(p->findings, p->nfindings));
    }
    if (bad) {
        psc_csv_free(out, k);
        *n = 0;
        return NULL;
    }
    *n = k;
    return out;
}

void psc_csv_free(psc_csv_file_t *files, size_t n)
{
    for (size_t k = 0; files && k < n; k++)
        free(files[k].text);
    free(files);
}
