/* `p2pscope copy`'s pages (render_copy.h): the benchmark against the driver, and the calibration's crossovers. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/p2pscope_private.h"
#include "report/json.h"
#include "report/render.h"
#include "report/render_copy.h"
#include "report/table.h"
#include "report/text.h"

#define PSC__KIB 1024ull
#define PSC__MIB (1024ull * 1024)

const char *psc_copy_route_text(psc_engine_t engine, int issuer, int stream_gpu, char *buf, size_t len)
{
    char who[16];

    snprintf(buf, len, "%s by %s%s", engine == PSC_ENGINE_SM ? "SM" : "CE", psc_endpoint_name(issuer, who, sizeof(who)),
             issuer != stream_gpu ? " +events" : "");
    return buf;
}

/* "gpu0 -> gpu1, stream on gpu0" */
static const char *psc__path_text(int src, int dst, int stream_gpu, char *buf, size_t len)
{
    char a[16], b[16], s[16];

    snprintf(buf, len, "%s -> %s, stream on %s", psc_endpoint_name(src, a, sizeof(a)),
             psc_endpoint_name(dst, b, sizeof(b)), psc_endpoint_name(stream_gpu, s, sizeof(s)));
    return buf;
}

/* A time, or "-" for one that was not measured. */
static void psc__us_cell(psc_table_t *t, unsigned row, unsigned col, double us)
{
    if (isfinite(us) && us > 0)
        psc_table_set(t, row, col, us < 100 ? "%.2f" : us < 10000 ? "%.1f" : "%.0f", us);
    else
        psc_table_set(t, row, col, "-");
}

double psc_copy_bench_min_speedup(const psc_copy_bench_t *b, uint64_t lo, uint64_t hi,
                                  const psc_copy_bench_row_t **at)
{
    const psc_copy_bench_row_t *best = NULL;

    for (int k = 0; b && b->row && k < b->nrow; k++) {
        const psc_copy_bench_row_t *r = &b->row[k];

        if (r->size >= lo && r->size <= hi && isfinite(r->speedup) && (!best || r->speedup < best->speedup))
            best = r;
    }
    if (at)
        *at = best;
    return best ? best->speedup : 0;
}

static void psc__footer_part(FILE *f, const char *what, double x, const psc_copy_bench_row_t *r)
{
    char path[64], a[16], b[16], size[24];

    if (!r) {
        psc_report_printf(f, "%s: no size measured", what);
        return;
    }
    snprintf(path, sizeof(path), "%s -> %s", psc_endpoint_name(r->src, a, sizeof(a)),
             psc_endpoint_name(r->dst, b, sizeof(b)));
    psc_report_printf(f, "%s: %.2fx (%s at %s)", what, x, path, psc_render_size_text(r->size, size, sizeof(size)));
}

/* The driver calls' own CPU costs, "-" where not measured. */
static const struct {
    const char *name, *key; /* the table's, the JSON's */
    size_t off;
} psc__costs[] = {
    {"cuCtxGetCurrent", "ctx_get_current", offsetof(psc_copy_costs_t, ctx_get_current)},
    {"cuStreamGetCtx", "stream_get_ctx", offsetof(psc_copy_costs_t, stream_get_ctx)},
    {"cuStreamGetCaptureInfo", "stream_capture_info", offsetof(psc_copy_costs_t, stream_capture_info)},
    {"cuPointerGetAttributes(2)", "ptr_attrs2", offsetof(psc_copy_costs_t, ptr_attrs2)},
    {"cuPointerGetAttributes(8)", "ptr_attrs8", offsetof(psc_copy_costs_t, ptr_attrs8)},
    {"cuMemcpyAsync in a GPU", "memcpy_local", offsetof(psc_copy_costs_t, memcpy_local)},
    {"cuMemcpyAsync GPU->GPU", "memcpy_peer_uva", offsetof(psc_copy_costs_t, memcpy_peer_uva)},
    {"cuMemcpyPeerAsync", "memcpy_peer", offsetof(psc_copy_costs_t, memcpy_peer)},
    {"cuLaunchKernel", "launch", offsetof(psc_copy_costs_t, launch)},
    {"cuLaunchKernel(buffer)", "launch_buffer", offsetof(psc_copy_costs_t, launch_buffer)},
};

static double psc__cost_of(const psc_copy_costs_t *c, size_t k)
{
    double v;

    memcpy(&v, (const char *)c + psc__costs[k].off, sizeof(v));
    return v;
}

static void psc__costs_line(FILE *f, const psc_copy_costs_t *c)
{
    fprintf(f, "CPU us of one driver call (first GPU's stream, 4 B):");
    for (size_t k = 0; k < sizeof(psc__costs) / sizeof(psc__costs[0]); k++) {
        double v = psc__cost_of(c, k);

        if (isfinite(v) && v >= 0)
            fprintf(f, "%s %s %.3f", k ? "," : "", psc__costs[k].name, v);
        else
            fprintf(f, "%s %s -", k ? "," : "", psc__costs[k].name);
    }
    fprintf(f, "\n");
}

/* The smallest speedup of a prepared copy (driver / psc_copy_run) over every size. */
static double psc__min_prep_speedup(const psc_copy_bench_t *b, const psc_copy_bench_row_t **at)
{
    const psc_copy_bench_row_t *best = NULL;

    for (int k = 0; b && b->row && k < b->nrow; k++) {
        const psc_copy_bench_row_t *r = &b->row[k];

        if (isfinite(r->prep_speedup) && r->prep_speedup > 0 && (!best || r->prep_speedup < best->prep_speedup))
            best = r;
    }
    *at = best;
    return best ? best->prep_speedup : 0;
}

double psc_copy_bench_max_cpu_over(const psc_copy_bench_t *b, uint64_t hi, const psc_copy_bench_row_t **at)
{
    const psc_copy_bench_row_t *worst = NULL;

    for (int k = 0; b && b->row && k < b->nrow; k++) {
        const psc_copy_bench_row_t *r = &b->row[k];

        if (r->size <= hi && r->psc_cpu_us > 0 && r->launch_cpu_us > 0 && isfinite(r->cpu_over_us) &&
            (!worst || r->cpu_over_us > worst->cpu_over_us))
            worst = r;
    }
    *at = worst;
    return worst ? worst->cpu_over_us : 0;
}

/* The copy bench's title and the legend of its columns. */
static void psc__copy_bench_header(FILE *f, const psc_copy_bench_t *b)
{
    psc_report_printf(f, "\npsc_copy against the driver's call it replaces (cuMemcpyAsync, same arguments, on every path), "
                         "routed by %s\n"
                         "[us = microseconds per copy, medians of samples of copies queued back to back on one stream, the "
                         "ways of copying sampled in turn;\n speedup = driver / psc_copy, the median over those pairs of "
                         "samples; CPU us = the CPU's time for one call;\n CPU over = psc CPU - launch CPU, the median over "
                         "pairs, launch = the driver call psc_copy makes for the route, made directly;\n prepared = "
                         "psc_copy_run of one psc_copy_prepare, x = driver / prepared; sizes in bytes, K/M/G = 1024-based]\n",
                      b->calibrated ? "the calibration" : "the built-in defaults");
}

/* One size's row of a path's table: the times, the speedups, the route, the CPU's costs and the check. */
static void psc__copy_bench_cells(psc_table_t *t, unsigned row, const psc_copy_bench_row_t *r)
{
    char size[24], route[48];

    psc_table_set(t, row, 0, "%s", psc_render_size_text(r->size, size, sizeof(size)));
    psc__us_cell(t, row, 1, r->driver_us);
    psc__us_cell(t, row, 2, r->psc_us);
    if (isfinite(r->speedup) && r->speedup > 0)
        psc_table_set(t, row, 3, "%.2f", r->speedup);
    else
        psc_table_set(t, row, 3, "-");
    psc_table_set(t, row, 4, "%s",
                  psc_copy_route_text(r->route.engine, r->route.issuer, r->route.stream_gpu, route, sizeof(route)));
    psc__us_cell(t, row, 5, r->psc_cpu_us);
    psc__us_cell(t, row, 6, r->launch_cpu_us);
    if (isfinite(r->cpu_over_us) && r->psc_cpu_us > 0 && r->launch_cpu_us > 0)
        psc_table_set(t, row, 7, "%+.2f", r->cpu_over_us);
    else
        psc_table_set(t, row, 7, "-");
    psc__us_cell(t, row, 8, r->prep_us);
    if (isfinite(r->prep_speedup) && r->prep_speedup > 0)
        psc_table_set(t, row, 9, "%.2f", r->prep_speedup);
    else
        psc_table_set(t, row, 9, "-");
    if (r->bad_bytes)
        psc_table_set(t, row, 10, "BAD: %llu B from %llu", (unsigned long long)r->bad_bytes,
                      (unsigned long long)r->first_bad);
    else
        psc_table_set(t, row, 10, "ok");
}

/* How many rows from row k on are one path's: the same src, dst and stream. */
static int psc__copy_bench_path_rows(const psc_copy_bench_t *b, int k)
{
    const psc_copy_bench_row_t *first = &b->row[k];
    int n = 0;

    while (k + n < b->nrow && b->row[k + n].src == first->src && b->row[k + n].dst == first->dst &&
           b->row[k + n].stream_gpu == first->stream_gpu)
        n++;
    return n;
}

/* One path's n rows under its title; -1 when the table could not be made (out of memory). */
static int psc__copy_bench_path(FILE *f, const psc_copy_bench_row_t *rows, int n)
{
    static const char *const heads[] = {"size", "driver us", "psc_copy us", "speedup x", "route", "psc CPU us",
                                        "launch CPU us", "CPU over us", "prepared us", "prepared x", "check"};
    const unsigned ncol = sizeof(heads) / sizeof(heads[0]);
    char title[96];
    psc_table_t *t;

    psc_report_printf(f, "\n%s\n", psc__path_text(rows->src, rows->dst, rows->stream_gpu, title, sizeof(title)));
    t = psc_table_new((unsigned)n + 1, ncol);
    if (!t)
        return -1;
    psc_table_header(t, heads, ncol);
    for (int i = 0; i < n; i++)
        psc__copy_bench_cells(t, (unsigned)i + 1, &rows[i]);
    psc_table_left_columns(t, 1);
    psc_table_render(t, f);
    psc_table_free(t);
    return 0;
}

/* The bench's summary: its smallest speedups, psc_copy's largest CPU time above its driver call, the calls' costs. */
static void psc__copy_bench_footer(FILE *f, const psc_copy_bench_t *b)
{
    const psc_copy_bench_row_t *at;
    char title[96];
    double x;

    x = psc_copy_bench_min_speedup(b, 4 * PSC__KIB, PSC__MIB, &at);
    fprintf(f, "\nsmallest speedup: ");
    psc__footer_part(f, "4K-1M", x, at);
    x = psc_copy_bench_min_speedup(b, 0, UINT64_MAX, &at);
    fprintf(f, "; ");
    psc__footer_part(f, "every size", x, at);
    x = psc__min_prep_speedup(b, &at);
    fprintf(f, "; ");
    psc__footer_part(f, "prepared, every size", x, at);
    x = psc_copy_bench_max_cpu_over(b, PSC__MIB, &at);
    fprintf(f, "\nlargest CPU time of psc_copy above its driver call, up to 1M: ");
    if (at) {
        char size[24];

        psc_report_printf(f, "%+.2f us (%s, at %s)", x,
                          psc__path_text(at->src, at->dst, at->stream_gpu, title, sizeof(title)),
                          psc_render_size_text(at->size, size, sizeof(size)));
    }
    else
        fprintf(f, "no size measured");
    fprintf(f, "\n");
    psc__costs_line(f, &b->costs);
}

void psc_render_copy_bench(FILE *f, const psc_copy_bench_t *b)
{
    if (!b || !b->row || b->nrow <= 0) {
        fprintf(f, "\nno copy was measured\n");
        return;
    }
    psc__copy_bench_header(f, b);
    for (int k = 0; k < b->nrow;) {
        int n = psc__copy_bench_path_rows(b, k);

        if (psc__copy_bench_path(f, &b->row[k], n) != 0)
            return;
        k += n;
    }
    psc__copy_bench_footer(f, b);
}

/* ---------------------------------------------------------------- the calibration */

/* The route's time at size, or -1 when it was not measured there. */
static double psc__cal_time(const psc_cal_route_t *r, uint64_t size)
{
    for (int s = 0; s < r->nsizes && s < PSC_CAL_MAX_SIZES; s++)
        if (r->size[s] == size)
            return r->us[s];
    return -1;
}

static int psc__cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* The crossover table of the routes in idx (n of them, one path). */
static void psc__cal_path(FILE *f, const psc_calibration_t *cal, const int *idx, int n)
{
    const psc_cal_route_t *r0 = &cal->route[idx[0]];
    uint64_t *sizes = malloc((size_t)n * PSC_CAL_MAX_SIZES * sizeof(*sizes));
    int ns = 0, nrows = 0, *win;
    char title[96];
    psc_table_t *t;

    if (!sizes)
        return;
    for (int k = 0; k < n; k++)
        for (int s = 0; s < cal->route[idx[k]].nsizes && s < PSC_CAL_MAX_SIZES; s++)
            sizes[ns++] = cal->route[idx[k]].size[s];
    qsort(sizes, (size_t)ns, sizeof(*sizes), psc__cmp_u64);
    {
        int u = 0;

        for (int s = 0; s < ns; s++)
            if (u == 0 || sizes[s] != sizes[u - 1])
                sizes[u++] = sizes[s];
        ns = u;
    }
    win = malloc((size_t)(ns ? ns : 1) * sizeof(*win));
    t = psc_table_new((unsigned)ns + 1, 4);
    if (!win || !t) {
        free(sizes);
        free(win);
        psc_table_free(t);
        return;
    }
    /* The fastest route at each size. */
    for (int s = 0; s < ns; s++) {
        double best = -1;

        win[s] = -1;
        for (int k = 0; k < n; k++) {
            double us = psc__cal_time(&cal->route[idx[k]], sizes[s]);

            if (us > 0 && (best < 0 || us < best)) {
                best = us;
                win[s] = idx[k];
            }
        }
    }
    psc_report_printf(f, "\n%s (%d route%s measured)\n", psc__path_text(r0->src, r0->dst, r0->stream_gpu, title,
                      sizeof(title)), n, n == 1 ? "" : "s");
    PSC_TABLE_HEADER(t, "sizes", "fastest route", "us at first size", "us at last size");
    for (int s = 0; s < ns;) {
        int e = s;
        char lo[24], hi[24], route[48];
        const psc_cal_route_t *w;

        while (e + 1 < ns && win[e + 1] == win[s])
            e++;
        nrows++;
        psc_table_set(t, (unsigned)nrows, 0, "%s%s%s", psc_render_size_text(sizes[s], lo, sizeof(lo)), e > s ? " - " : "",
                      e > s ? psc_render_size_text(sizes[e], hi, sizeof(hi)) : "");
        if (win[s] < 0) {
            psc_table_set(t, (unsigned)nrows, 1, "none measured");
        } else {
            w = &cal->route[win[s]];
            psc_table_set(t, (unsigned)nrows, 1, "%s",
                          psc_copy_route_text(w->engine, w->issuer, w->stream_gpu, route, sizeof(route)));
            psc__us_cell(t, (unsigned)nrows, 2, psc__cal_time(w, sizes[s]));
            psc__us_cell(t, (unsigned)nrows, 3, psc__cal_time(w, sizes[e]));
        }
        s = e + 1;
    }
    psc_table_left_columns(t, 2);
    psc_table_render_rows(t, f, (unsigned)nrows + 1);
    psc_table_free(t);
    free(win);
    free(sizes);
}

void psc_render_calibration(FILE *f, const psc_calibration_t *cal, const char *path)
{
    int *idx, *done;

    if (!cal || !cal->route || cal->nroute <= 0) {
        fprintf(f, "\nthe calibration holds no route\n");
        return;
    }
    psc_report_printf(f, "\npsc_copy's calibration%s%s: %d GPU%s (%s), driver %s, measured %s\n"
                         "[the fastest route over each range of sizes; us = microseconds per copy, medians of copies "
                         "queued back to back on one stream;\n sizes in bytes, K/M/G = 1024-based]\n",
                      path ? " in " : "", path ? path : "", cal->ngpu, cal->ngpu == 1 ? "" : "s",
                      cal->gpu_name[0] ? cal->gpu_name : "unknown", cal->driver_release[0] ? cal->driver_release : "unknown",
                      cal->created[0] ? cal->created : "at an unknown time");
    idx = malloc((size_t)cal->nroute * sizeof(*idx));
    done = calloc((size_t)cal->nroute, sizeof(*done));
    /* Paths in the order their first route comes. */
    for (int k = 0; idx && done && k < cal->nroute; k++) {
        const psc_cal_route_t *a = &cal->route[k];
        int n = 0;

        if (done[k])
            continue;
        for (int j = k; j < cal->nroute; j++) {
            const psc_cal_route_t *b = &cal->route[j];

            if (!done[j] && b->src == a->src && b->dst == a->dst && b->stream_gpu == a->stream_gpu) {
                done[j] = 1;
                idx[n++] = j;
            }
        }
        psc__cal_path(f, cal, idx, n);
    }
    free(idx);
    free(done);
}

/* ---------------------------------------------------------------- JSON */

static json_t *psc__end_json(int end)
{
    char buf[16];

    return json_string(psc_endpoint_name(end, buf, sizeof(buf)));
}

static json_t *psc__row_json(const psc_copy_bench_row_t *r, int *bad)
{
    json_t *o = json_object(), *rt = json_object();

    psc_json_set(o, "src", psc__end_json(r->src), bad);
    psc_json_set(o, "dst", psc__end_json(r->dst), bad);
    psc_json_set(o, "stream_gpu", psc__end_json(r->stream_gpu), bad);
    psc_json_set(o, "size_bytes", psc_json_u64(r->size), bad);
    psc_json_set(o, "driver_us", psc_json_real_or_null(r->driver_us), bad);
    psc_json_set(o, "psc_us", psc_json_real_or_null(r->psc_us), bad);
    psc_json_set(o, "speedup", psc_json_real_or_null(r->speedup), bad);
    psc_json_set(o, "driver_cpu_us", psc_json_real_or_null(r->driver_cpu_us), bad);
    psc_json_set(o, "psc_cpu_us", psc_json_real_or_null(r->psc_cpu_us), bad);
    psc_json_set(o, "launch_cpu_us", psc_json_real_or_null(r->launch_cpu_us), bad);
    psc_json_set(o, "cpu_over_us", r->psc_cpu_us > 0 && r->launch_cpu_us > 0 ? psc_json_real_or_null(r->cpu_over_us)
                                                                         : json_null(), bad);
    psc_json_set(o, "prep_us", psc_json_real_or_null(r->prep_us), bad);
    psc_json_set(o, "prep_cpu_us", psc_json_real_or_null(r->prep_cpu_us), bad);
    psc_json_set(o, "prep_speedup", psc_json_real_or_null(r->prep_speedup), bad);
    psc_json_set(rt, "engine", json_string(r->route.engine == PSC_ENGINE_SM ? "sm" : "ce"), bad);
    psc_json_set(rt, "issuer", psc__end_json(r->route.issuer), bad);
    psc_json_set(rt, "hop", json_boolean(r->route.hop), bad);
    psc_json_set(rt, "peer_off", json_boolean(r->route.peer_off), bad);
    psc_json_set(rt, "calibrated", json_boolean(r->route.calibrated), bad);
    psc_json_set(rt, "predicted_us", r->route.calibrated ? psc_json_real_or_null(r->route.predicted_us) : json_null(), bad);
    psc_json_set(rt, "why", psc_json_str(r->route.why), bad);
    psc_json_set(o, "route", rt, bad);
    psc_json_set(o, "bad_bytes", psc_json_u64(r->bad_bytes), bad);
    psc_json_set(o, "first_bad", r->bad_bytes ? psc_json_u64(r->first_bad) : json_null(), bad);
    return o;
}

psc_status_t psc_json_run_add_copy_bench(json_t *run, const psc_copy_bench_t *b)
{
    json_t *o = json_object(), *rows = json_array();
    const psc_copy_bench_row_t *at;
    int bad = 0;
    double x;

    for (int k = 0; b && b->row && k < b->nrow; k++)
        if (!rows || json_array_append_new(rows, psc__row_json(&b->row[k], &bad)) != 0)
            bad = 1;
    psc_json_set(o, "calibrated", json_boolean(b && b->calibrated), &bad);
    psc_json_set(o, "rows", rows, &bad);
    x = psc_copy_bench_min_speedup(b, 4 * PSC__KIB, PSC__MIB, &at);
    psc_json_set(o, "min_speedup_4k_1m", at ? psc_json_real_or_null(x) : json_null(), &bad);
    x = psc_copy_bench_min_speedup(b, 0, UINT64_MAX, &at);
    psc_json_set(o, "min_speedup", at ? psc_json_real_or_null(x) : json_null(), &bad);
    x = psc__min_prep_speedup(b, &at);
    psc_json_set(o, "min_prep_speedup", at ? psc_json_real_or_null(x) : json_null(), &bad);
    x = psc_copy_bench_max_cpu_over(b, PSC__MIB, &at);
    psc_json_set(o, "max_cpu_over_us_to_1m", at ? psc_json_real_or_null(x) : json_null(), &bad);
    {
        json_t *c = json_object();

        for (size_t k = 0; b && c && k < sizeof(psc__costs) / sizeof(psc__costs[0]); k++) {
            double v = psc__cost_of(&b->costs, k);

            psc_json_set(c, psc__costs[k].key, isfinite(v) && v >= 0 ? psc_json_real_or_null(v) : json_null(), &bad);
        }
        psc_json_set(o, "driver_call_cpu_us", c, &bad);
    }
    if (bad) {
        json_decref(o);
        o = NULL; /* the run is then incomplete, and not written */
    }
    return psc_json_run_set(run, "copy_bench", o);
}

psc_status_t psc_json_run_add_calibration(json_t *run, const psc_calibration_t *cal, const char *path)
{
    char *text = psc_calibration_json(cal);
    json_t *doc = text ? json_loads(text, 0, NULL) : NULL; /* the file's own form, one writer for both */
    psc_status_t st;

    free(text);
    st = psc_json_run_set(run, "calibration", doc);
    if (psc_json_run_set(run, "calibration_file", path ? psc_json_str(path) : json_null()) != PSC_OK)
        st = PSC_ERR_NO_MEMORY;
    return st;
}
