/* Latency results as text and JSON (render_lat.h): matrices of medians, tables by size, percentiles. */
#include "render_lat.h"

#include <stdlib.h>

#include "render.h"
#include "table.h"
#include "json.h"
#include "text.h"
#include "lib/p2pscope_private.h"

static const psc_lat_result_t *psc__find(const psc_lat_result_t *res, size_t n, int src, int dst)
{
    for (size_t i = 0; i < n; i++)
        if (res[i].c.src == src && res[i].c.dst == dst)
            return &res[i];
    return NULL;
}

/* p50 (p99); measured nvbandwidth's way, the mean (p99): the mean is total time / loads, nvbandwidth's figure. */
static void psc__cell(psc_table_t *t, unsigned r, unsigned c, const psc_lat_result_t *x)
{
    if (!x)
        psc_table_set(t, r, c, "-");
    else if (x->status != PSC_RESULT_PASSED)
        psc_table_set(t, r, c, "%s", x->status == PSC_RESULT_WAIVED ? "n/a" : "FAIL");
    else if (psc_lat_chase_is_sequential(psc_lat_test_info(x->c.test)))
        psc_table_set(t, r, c, "%.1f (%.0f)", x->lat[0].mean, x->lat[0].p99);
    else
        psc_table_set(t, r, c, "%.0f (%.0f)", x->lat[0].p50, x->lat[0].p99);
}

/*
 * Size k's coefficient of variation (%) over the samples the result keeps (the first PSC_LAT_KEEP, those its JSON
 * lists): 1 with *pct set, 0 without samples.
 */
static int psc__lat_cv(const psc_lat_result_t *x, unsigned k, double *pct)
{
    double v[PSC_LAT_KEEP];
    unsigned n = x->nkept[k] < PSC_LAT_KEEP ? x->nkept[k] : PSC_LAT_KEEP;
    psc_stats_t s;

    for (unsigned i = 0; i < n; i++)
        v[i] = x->kept[k][i];
    return n > 0 && psc_stats_compute(v, n, &s) == PSC_OK && psc_stats_cv_pct(&s, pct);
}

/* A passed case's coefficient of variation (%), or "-" (the medians' table says why not). */
static void psc__cv_cell(psc_table_t *t, unsigned r, unsigned c, const psc_lat_result_t *x)
{
    double cv;

    if (x && x->status == PSC_RESULT_PASSED && x->nsizes > 0 && psc__lat_cv(x, 0, &cv))
        psc_table_set(t, r, c, "%.2f", cv);
    else
        psc_table_set(t, r, c, "-");
}

static void psc__notes(FILE *f, const psc_lat_result_t *res, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char a[16], b[16];

        if (res[i].status != PSC_RESULT_PASSED)
            psc_report_printf(f, "  %s -> %s: %s: %s\n", psc_endpoint_name(res[i].c.src, a, sizeof(a)),
                              psc_endpoint_name(res[i].c.dst, b, sizeof(b)), psc_result_status_string(res[i].status),
                              res[i].reason);
    }
}

/* Tests through a CPU mapping with two figures per size: mapped copy and cuMemcpy, or map and unmap. */
static int psc__two_series(const psc_lat_test_info_t *ti)
{
    return ti->where == PSC_LAT_GPUMAP && ti->method != PSC_LAT_FLAG;
}

static void psc__by_size(FILE *f, const psc_lat_test_info_t *ti, const psc_lat_result_t *res, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const psc_lat_result_t *x = &res[i];
        int copy = ti->method == PSC_LAT_COPY || psc__two_series(ti);
        psc_table_t *t;
        char a[16], b[16];
        double cv;

        psc_report_printf(f, "%s -> %s\n", psc_endpoint_name(x->c.src, a, sizeof(a)), psc_endpoint_name(x->c.dst, b, sizeof(b)));
        if (x->status != PSC_RESULT_PASSED) {
            psc_report_printf(f, "  %s: %s\n", psc_result_status_string(x->status), x->reason);
            continue;
        }
        t = psc_table_new(x->nsizes + 1, 6);
        if (!t)
            return;
        psc_table_set(t, 0, 0, "bytes");
        if (psc__two_series(ti)) {
            int cost = ti->method == PSC_LAT_MAPCOST;

            psc_table_set(t, 0, 1, cost ? "map p50" : "mapped p50");
            psc_table_set(t, 0, 2, cost ? "map p99" : "mapped p99");
            psc_table_set(t, 0, 3, cost ? "unmap p50" : "cuMemcpy p50");
            psc_table_set(t, 0, 4, cost ? "unmap p99" : "cuMemcpy p99");
        } else {
            psc_table_set(t, 0, 1, copy ? "GPU per copy p50" : "per call p50");
            psc_table_set(t, 0, 2, copy ? "GPU p99" : "p90");
            psc_table_set(t, 0, 3, copy ? "CPU submit p50" : "p99");
            psc_table_set(t, 0, 4, copy ? "CPU submit p99" : "min");
        }
        psc_table_set(t, 0, 5, "CV %%");
        for (unsigned k = 0; k < x->nsizes; k++) {
            psc_table_set(t, k + 1, 0, "%llu", (unsigned long long)x->sizes[k]);
            psc_table_set(t, k + 1, 1, "%.2f", x->lat[k].p50 / 1e3);
            psc_table_set(t, k + 1, 2, "%.2f", copy ? x->lat[k].p99 / 1e3 : x->lat[k].p90 / 1e3);
            psc_table_set(t, k + 1, 3, "%.2f", copy ? x->submit[k].p50 / 1e3 : x->lat[k].p99 / 1e3);
            psc_table_set(t, k + 1, 4, "%.2f", copy ? x->submit[k].p99 / 1e3 : x->lat[k].min / 1e3);
            if (psc__lat_cv(x, k, &cv))
                psc_table_set(t, k + 1, 5, "%.2f", cv);
            else
                psc_table_set(t, k + 1, 5, "-");
        }
        psc_table_render(t, f);
        psc_table_free(t);
    }
}

typedef void psc__cell_fn(psc_table_t *t, unsigned r, unsigned c, const psc_lat_result_t *x);

/* A chase or flag test's table: a GPU matrix for peers, else a row of GPUs; each case's cell from cell(). */
static psc_table_t *psc__grid(const psc_lat_test_info_t *ti, psc__cell_fn *cell, const psc_lat_result_t *res, size_t n,
                              const int *devs, int ndev)
{
    int host = ti->where == PSC_LAT_HOST || ti->where == PSC_LAT_GPUMAP; /* the CPU is the other end */
    psc_table_t *t;

    if (ti->where == PSC_LAT_PEER) {
        if (!(t = psc_table_new((unsigned)ndev + 1, (unsigned)ndev + 1)))
            return NULL;
        psc_table_gpu_labels(t, "src \\ dst", devs, ndev);
        for (int i = 0; i < ndev; i++)
            for (int j = 0; j < ndev; j++)
                cell(t, (unsigned)i + 1, (unsigned)j + 1, i == j ? NULL : psc__find(res, n, devs[i], devs[j]));
        return t;
    }
    if (!(t = psc_table_new(2, (unsigned)ndev + 1)))
        return NULL;
    psc_table_set(t, 1, 0, "%s", host ? (ti->method == PSC_LAT_FLAG ? "cpu <-> gpu" : "host -> gpu") : "gpu -> gpu");
    for (int j = 0; j < ndev; j++) {
        psc_table_set(t, 0, (unsigned)j + 1, "gpu%d", devs[j]);
        cell(t, 1, (unsigned)j + 1, psc__find(res, n, host ? PSC_HOST : devs[j], devs[j]));
    }
    return t;
}

void psc_render_lat(FILE *f, psc_lat_test_t test, const psc_lat_result_t *res, size_t n, const int *devs, int ndev)
{
    const psc_lat_test_info_t *ti = psc_lat_test_info(test);
    psc_table_t *t;
    int passed = 0;

    if (!ti)
        return;
    if (!psc_render_test_head(f, ti->name, ti->title, n, ti->min_gpus))
        return;
    if (ti->method == PSC_LAT_COPY || ti->method == PSC_LAT_SYNC || ti->method == PSC_LAT_MAPCOST) {
        psc_report_printf(f, "[microseconds; percentiles over %s]\n",
                          ti->method == PSC_LAT_COPY ? "samples of back-to-back copies; GPU time is events around them, "
                                                       "CPU submit is the host's time per cuMemcpy*Async call"
                          : ti->method == PSC_LAT_MAPCOST ? "single psc_gpumap_map and psc_gpumap_unmap calls timed by the host"
                          : ti->where == PSC_LAT_GPUMAP ? "single calls timed by the host: the CPU's copy through the "
                                                          "mapping (stores end with a fence), then a synchronous cuMemcpy"
                                                        : "single synchronous calls timed by the host");
        psc__by_size(f, ti, res, n);
        return;
    }
    if (psc_lat_chase_is_sequential(ti))
        psc_report_printf(f, "[nanoseconds, mean (p99) per dependent load over one launch per SM, events around "
                             "each; src = where the chain lives, dst = the reading GPU; the mean is nvbandwidth's "
                             "device_to_device_latency_sm, whose row is our dst and column our src]\n");
    else
        psc_report_printf(f, "[nanoseconds, p50 (p99); %s]\n",
                          ti->method == PSC_LAT_CHASE ? "per dependent load; src = where the chain lives, dst = the reading GPU"
                                                      : "one way = round trip / 2");
    if (!(t = psc__grid(ti, psc__cell, res, n, devs, ndev)))
        return;
    psc_table_render(t, f);
    psc_table_free(t);
    psc__notes(f, res, n);
    for (size_t i = 0; i < n; i++)
        passed |= res[i].status == PSC_RESULT_PASSED;
    if (!passed || !(t = psc__grid(ti, psc__cv_cell, res, n, devs, ndev)))
        return;
    psc_report_printf(f, "[coefficient of variation, %%: standard deviation / mean of each case's samples (the first "
                         "%d)]\n", PSC_LAT_KEEP);
    psc_table_render(t, f);
    psc_table_free(t);
}

json_t *psc_json_pctl(const psc_pctl_t *p)
{
    return json_pack("{s:i,s:f,s:f,s:f,s:f,s:f,s:f}", "n", (json_int_t)p->n, "min", p->min, "p50", p->p50, "p90",
                     p->p90, "p99", p->p99, "max", p->max, "mean", p->mean);
}

json_t *psc_json_lat_result(const psc_lat_result_t *r)
{
    const psc_lat_test_info_t *ti = psc_lat_test_info(r->c.test);
    json_t *o = json_object(), *sizes = json_array();
    char a[16], b[16], iss[16], dir[40];
    double cv;

    snprintf(dir, sizeof(dir), "%s -> %s", psc_endpoint_name(r->c.src, a, sizeof(a)),
             psc_endpoint_name(r->c.dst, b, sizeof(b)));
    json_object_set_new(o, "name", json_string(ti ? ti->name : "unknown"));
    json_object_set_new(o, "title", json_string(ti ? ti->title : "unknown"));
    json_object_set_new(o, "direction", json_string(dir));
    json_object_set_new(o, "issuer", json_string(psc_endpoint_name(r->c.issuer, iss, sizeof(iss))));
    json_object_set_new(o, "status", json_string(psc_result_status_string(r->status)));
    json_object_set_new(o, "reason", r->reason[0] ? psc_json_str(r->reason) : json_null());
    json_object_set_new(o, "unit", json_string("ns"));
    json_object_set_new(o, "gpu_ns_per_cycle", r->ns_per_cycle > 0 ? json_real(r->ns_per_cycle) : json_null());
    for (unsigned k = 0; k < r->nsizes; k++) {
        json_t *e = json_object(), *raw = json_array();

        json_object_set_new(e, ti && ti->method == PSC_LAT_CHASE ? "working_set_bytes" : "bytes",
                            json_integer((json_int_t)r->sizes[k]));
        json_object_set_new(e, "latency", psc_json_pctl(&r->lat[k]));
        if (ti && ti->method == PSC_LAT_COPY)
            json_object_set_new(e, "cpu_submit", psc_json_pctl(&r->submit[k]));
        else if (ti && ti->where == PSC_LAT_GPUMAP && ti->method != PSC_LAT_FLAG) /* latency: the mapped figure */
            json_object_set_new(e, ti->method == PSC_LAT_MAPCOST ? "unmap" : "cumemcpy", psc_json_pctl(&r->submit[k]));
        for (unsigned i = 0; i < r->nkept[k]; i++)
            json_array_append_new(raw, json_real(r->kept[k][i]));
        json_object_set_new(e, "samples", raw);
        json_object_set_new(e, "cv_pct", psc__lat_cv(r, k, &cv) ? json_real(cv) : json_null());
        json_array_append_new(sizes, e);
    }
    json_object_set_new(o, "sizes", sizes);
    return o;
}
