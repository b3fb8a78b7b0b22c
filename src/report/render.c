/*
 * The text of the inventory and of bandwidth results (render.h): the GPUs' table, each test's matrix or
 * table with its notes, sweeps by size.
 */
#include "render.h"

#include <stdlib.h>
#include <string.h>

#include "table.h"
#include "text.h"
#include "lib/p2pscope_private.h"

const char *psc_endpoint_name(int endpoint, char *buf, size_t len)
{
    if (endpoint == PSC_HOST)
        snprintf(buf, len, "host");
    else if (endpoint == PSC_ALL)
        snprintf(buf, len, "all");
    else
        snprintf(buf, len, "gpu%d", endpoint);
    return buf;
}

const char *psc_nvml_state(const psc_system_info_t *sys)
{
    const char *note = sys->nvml_note;

    if (sys->nvml_loaded)
        return "loaded";
    if (strncmp(note, "NVML ", 5) == 0) /* the loader's notes name NVML: "NVML not loaded: why" */
        note += 5;
    return note[0] ? note : "not loaded";
}

void psc_render_devices_table(FILE *f, const psc_device_info_t *devs, int ndev)
{
    static const char *const head[] = {"gpu", "nvml", "name", "pci bus id", "memory (GiB)", "SMs", "cc",
                                       "copy engines", "numa", "sm clock (MHz)", "temp (C)"};
    const unsigned cols = sizeof(head) / sizeof(head[0]);
    psc_table_t *t = psc_table_new((unsigned)ndev + 1, cols);

    if (!t)
        return;
    psc_table_header(t, head, cols);
    for (int i = 0; i < ndev; i++) {
        const psc_device_info_t *d = &devs[i];
        unsigned r = (unsigned)i + 1;

        psc_table_set(t, r, 0, "gpu%d", d->index);
        psc_table_set(t, r, 1, d->nvml_index >= 0 ? "%d" : "-", d->nvml_index);
        psc_table_set(t, r, 2, "%s", d->name);
        psc_table_set(t, r, 3, "%s", d->pci_bus_id);
        if (d->memory_bytes)
            psc_table_set(t, r, 4, "%.1f", (double)d->memory_bytes / (1024.0 * 1024 * 1024));
        else
            psc_table_set(t, r, 4, "?");
        psc_table_set(t, r, 5, d->sm_count > 0 ? "%d" : "?", d->sm_count); /* unknown: a recording's GPU */
        if (d->cc_major > 0)
            psc_table_set(t, r, 6, "%d.%d", d->cc_major, d->cc_minor);
        else
            psc_table_set(t, r, 6, "?");
        psc_table_set(t, r, 7, d->async_engines >= 0 ? "%d" : "?", d->async_engines);
        psc_table_set(t, r, 8, d->numa_node >= 0 ? "%d" : "-", d->numa_node);
        if (d->sm_clock_mhz >= 0)
            psc_table_set(t, r, 9, "%d/%d", d->sm_clock_mhz, d->sm_clock_max_mhz);
        else
            psc_table_set(t, r, 9, "-");
        psc_table_set(t, r, 10, d->temperature_c >= 0 ? "%d" : "-", d->temperature_c);
    }
    psc_table_render(t, f);
    psc_table_free(t);
}

void psc_render_devices(FILE *f, const psc_system_info_t *sys, const psc_device_info_t *devs, int ndev)
{
    psc_report_printf(f, "driver %s, CUDA driver API %d.%d; NVML %s\n",
                      sys->driver_release[0] ? sys->driver_release : "(version unknown)",
                      sys->cuda_driver_version / 1000, sys->cuda_driver_version % 1000 / 10, psc_nvml_state(sys));
    psc_report_printf(f, "gpu indexes are CUDA ordinals (CUDA_DEVICE_ORDER=%s%s%s); 'nvml' is nvidia-smi's index, "
                         "which follows PCI bus id order\n",
                      sys->device_order, sys->visible_devices[0] ? ", CUDA_VISIBLE_DEVICES=" : "", sys->visible_devices);
    if (sys->driver_device_count > sys->device_count)
        psc_report_printf(f, "the driver reports %d GPUs; p2pscope uses the first %d (CUDA_VISIBLE_DEVICES chooses "
                             "which)\n", sys->driver_device_count, sys->device_count);
    psc_render_devices_table(f, devs, ndev);
}

static const psc_bw_result_t *psc__find(const psc_bw_result_t *res, size_t n, int src, int dst)
{
    for (size_t i = 0; i < n; i++)
        if (res[i].c.src == src && res[i].c.dst == dst)
            return &res[i];
    return NULL;
}

const char *psc_case_label(const psc_bw_case_t *c, char *buf, size_t len)
{
    const psc_bw_test_info_t *ti = psc_bw_test_info(c->test);
    char a[16], b[16];
    int bidir = ti && (ti->shape == PSC_SHAPE_PAIR_BIDIR || ti->shape == PSC_SHAPE_P2P_OFF_BIDIR ||
                       ti->shape == PSC_SHAPE_HOST_BIDIR || ti->shape == PSC_SHAPE_ALL_HOST_BIDIR);

    if (ti && ti->shape == PSC_SHAPE_RING) {
        snprintf(buf, len, "ring");
        return buf;
    }
    if (c->src == PSC_ALL)
        snprintf(a, sizeof(a), "all");
    else
        psc_endpoint_name(c->src, a, sizeof(a));
    if (c->dst == PSC_ALL || (ti && ti->shape == PSC_SHAPE_ALL_HOST_BIDIR))
        snprintf(b, sizeof(b), "all");
    else
        psc_endpoint_name(c->dst, b, sizeof(b));
    snprintf(buf, len, "%s %s %s", a, bidir ? "<->" : "->", b);
    return buf;
}

static const char *psc__xfer_label(const psc_xfer_t *x, char *buf, size_t len)
{
    char a[16], b[16];

    snprintf(buf, len, "%s -> %s", psc_endpoint_name(x->src, a, sizeof(a)), psc_endpoint_name(x->dst, b, sizeof(b)));
    return buf;
}

/* Cells not passed, in table order, so each marker [k] matches note k. */
typedef struct {
    const psc_bw_result_t **items;
    unsigned n;
} psc__notes_t;

static void psc__mark(psc_table_t *t, unsigned r, unsigned c, const psc_bw_result_t *x, psc__notes_t *notes)
{
    notes->items[notes->n++] = x;
    psc_table_set(t, r, c, "%s[%u]", x->status == PSC_RESULT_WAIVED ? "n/a" : "FAIL", notes->n);
}

typedef void psc__cell_fn(psc_table_t *t, unsigned r, unsigned c, const psc_bw_result_t *x, psc__notes_t *notes);

/* Fill a cell with the median, or a marker pointing to a numbered note. */
static void psc__cell(psc_table_t *t, unsigned r, unsigned c, const psc_bw_result_t *x, psc__notes_t *notes)
{
    if (!x)
        psc_table_set(t, r, c, "-");
    else if (x->status == PSC_RESULT_PASSED)
        psc_table_set(t, r, c, "%.2f", x->stats.median);
    else
        psc__mark(t, r, c, x, notes);
}

/* A passed case's coefficient of variation (%), or "-" (the median's table carries the notes). */
static void psc__cv_cell(psc_table_t *t, unsigned r, unsigned c, const psc_bw_result_t *x, psc__notes_t *notes)
{
    double cv;

    (void)notes;
    if (x && x->status == PSC_RESULT_PASSED && psc_stats_cv_pct(&x->stats, &cv))
        psc_table_set(t, r, c, "%.2f", cv);
    else
        psc_table_set(t, r, c, "-");
}

static void psc__notes_print(FILE *f, const psc__notes_t *notes)
{
    for (unsigned k = 0; k < notes->n; k++) {
        const psc_bw_result_t *x = notes->items[k];
        char label[48];

        psc_report_printf(f, "  [%u] %s: %s: %s\n", k + 1, psc_case_label(&x->c, label, sizeof(label)),
                          psc_result_status_string(x->status), x->reason);
    }
}

static void psc__units_line(FILE *f, const psc_bw_result_t *res, size_t n)
{
    unsigned lo = 0, hi = 0;
    const psc_bw_result_t *any = NULL;
    char sz[32];

    for (size_t i = 0; i < n; i++) {
        if (res[i].status != PSC_RESULT_PASSED)
            continue;
        any = any ? any : &res[i];
        lo = !lo || res[i].nsamples < lo ? res[i].nsamples : lo;
        hi = res[i].nsamples > hi ? res[i].nsamples : hi;
    }
    if (!any) {
        psc_report_printf(f, "[GB/s, 1 GB = 1e9 bytes]\n");
        return;
    }
    psc_report_printf(f, "[GB/s, 1 GB = 1e9 bytes; median of %u", lo);
    if (hi != lo)
        psc_report_printf(f, "-%u", hi);
    psc_report_printf(f, " samples; %s x %u copies a sample%s]\n", psc_size_name(any->size, " ", sz, sizeof(sz)),
                      any->iterations, any->gated ? "" : "; timed without gates (the copies block the host)");
    if (any->host_node >= 0)
        psc_report_printf(f, "[host memory on NUMA node %d]\n", any->host_node);
}

static void psc__matrix(psc_table_t *t, psc__cell_fn *cell, const psc_bw_result_t *res, size_t n, const int *devs,
                        int ndev, psc__notes_t *notes)
{
    psc_table_gpu_labels(t, "src \\ dst", devs, ndev);
    for (int i = 0; i < ndev; i++)
        for (int j = 0; j < ndev; j++)
            cell(t, (unsigned)i + 1, (unsigned)j + 1, i == j ? NULL : psc__find(res, n, devs[i], devs[j]), notes);
}

static void psc__gpu_row(psc_table_t *t, psc__cell_fn *cell, const psc_bw_test_info_t *ti, const psc_bw_result_t *res,
                         size_t n, const int *devs, int ndev, psc__notes_t *notes)
{
    psc_table_set(t, 0, 0, "%s", "");
    psc_table_set(t, 1, 0, ti->shape == PSC_SHAPE_H2D ? "host -> gpu"
                           : ti->shape == PSC_SHAPE_D2H ? "gpu -> host" : "gpu -> same gpu");
    for (int j = 0; j < ndev; j++) {
        int src = ti->shape == PSC_SHAPE_H2D ? PSC_HOST : devs[j];
        int dst = ti->shape == PSC_SHAPE_D2H ? PSC_HOST : devs[j];

        psc_table_set(t, 0, (unsigned)j + 1, "gpu%d", devs[j]);
        cell(t, 1, (unsigned)j + 1, psc__find(res, n, src, dst), notes);
    }
}

/* 1 when a passed case has two transfers issued by the same GPU from the same source or into the same destination. */
static int psc__shared_issuer(const psc_bw_result_t *res, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (int a = 0; res[i].status == PSC_RESULT_PASSED && a < res[i].c.nxfer; a++)
            for (int b = a + 1; b < res[i].c.nxfer; b++)
                if (res[i].c.xfer[a].issuer == res[i].c.xfer[b].issuer &&
                    (res[i].c.xfer[a].src == res[i].c.xfer[b].src || res[i].c.xfer[a].dst == res[i].c.xfer[b].dst))
                    return 1;
    return 0;
}

/*
 * Concurrent cases: a row per transfer, then the total (all bytes over the longest transfer's time). The case's
 * coefficient of variation is of its samples, the totals: on the total's row, or on its one transfer's.
 */
static unsigned psc__xfer_rows(psc_table_t *t, const psc_bw_result_t *res, size_t n, psc__notes_t *notes)
{
    unsigned r = 1;

    PSC_TABLE_HEADER(t, "case", "transfer (issued by)", "GB/s", "CV %");
    for (size_t i = 0; i < n; i++) {
        const psc_bw_result_t *x = &res[i];
        char label[48], xl[48];

        psc_table_set(t, r, 0, "%s", psc_case_label(&x->c, label, sizeof(label)));
        if (x->status != PSC_RESULT_PASSED) {
            psc__mark(t, r++, 2, x, notes);
            continue;
        }
        for (int k = 0; k < x->c.nxfer; k++) {
            psc_table_set(t, r, 1, "%s (gpu%d)", psc__xfer_label(&x->c.xfer[k], xl, sizeof(xl)), x->c.xfer[k].issuer);
            psc_table_set(t, r++, 2, "%.2f", x->xfer_gbs[k]);
        }
        if (x->c.nxfer > 1) {
            psc_table_set(t, r, 1, "total");
            psc_table_set(t, r++, 2, "%.2f", x->stats.median);
        }
        psc__cv_cell(t, r - 1, 3, x, notes);
    }
    return r;
}

void psc_render_wall_time(FILE *f, double wall_s, const char *note)
{
    fprintf(f, "\nwall time: %.1f s%s\n", wall_s, note);
}

int psc_render_test_head(FILE *f, const char *name, const char *title, size_t n, int min_gpus)
{
    psc_report_printf(f, "\n%s: %s\n", name, title);
    if (n == 0)
        psc_report_printf(f, "  waived: needs at least %d GPUs\n", min_gpus);
    return n > 0;
}

/* Tests drawn as a GPU matrix or a row of GPUs (one figure a case), not as rows of transfers. */
static int psc__grid_shape(psc_shape_t p)
{
    return p == PSC_SHAPE_PAIR || p == PSC_SHAPE_P2P_OFF || p == PSC_SHAPE_LOCAL || p == PSC_SHAPE_H2D ||
           p == PSC_SHAPE_D2H;
}

/* A grid test's table, each case's cell from cell(); NULL when out of memory. */
static psc_table_t *psc__grid(const psc_bw_test_info_t *ti, psc__cell_fn *cell, const psc_bw_result_t *res, size_t n,
                              const int *devs, int ndev, psc__notes_t *notes)
{
    int matrix = ti->shape == PSC_SHAPE_PAIR || ti->shape == PSC_SHAPE_P2P_OFF;
    psc_table_t *t = psc_table_new(matrix ? (unsigned)ndev + 1 : 2, (unsigned)ndev + 1);

    if (t && matrix)
        psc__matrix(t, cell, res, n, devs, ndev, notes);
    else if (t)
        psc__gpu_row(t, cell, ti, res, n, devs, ndev, notes);
    return t;
}

/* Below a grid's medians, the same grid of each passed case's coefficient of variation. */
static void psc__cv_grid(FILE *f, const psc_bw_test_info_t *ti, const psc_bw_result_t *res, size_t n,
                         const int *devs, int ndev)
{
    int passed = 0;
    psc_table_t *t;

    for (size_t i = 0; i < n; i++)
        passed |= res[i].status == PSC_RESULT_PASSED;
    if (!passed || !(t = psc__grid(ti, psc__cv_cell, res, n, devs, ndev, NULL)))
        return;
    psc_report_printf(f, "[coefficient of variation, %%: standard deviation / mean of each case's samples]\n");
    psc_table_render(t, f);
    psc_table_free(t);
}

void psc_render_bw(FILE *f, psc_bw_test_t test, const psc_bw_result_t *res, size_t n, const int *devs, int ndev)
{
    const psc_bw_test_info_t *ti = psc_bw_test_info(test);
    psc__notes_t notes = {NULL, 0};
    psc_table_t *t = NULL;
    unsigned rows = 1;

    if (!ti)
        return;
    if (!psc_render_test_head(f, ti->name, ti->title, n, ti->min_gpus))
        return;
    psc__units_line(f, res, n);
    for (size_t i = 0; i < n; i++)
        rows += (unsigned)res[i].c.nxfer + 1;
    notes.items = calloc(n + 1, sizeof(*notes.items));
    if (notes.items && psc__grid_shape(ti->shape)) {
        t = psc__grid(ti, psc__cell, res, n, devs, ndev, &notes);
    } else if (notes.items && (t = psc_table_new(rows, 4))) {
        psc_table_left_columns(t, 2);
        psc__xfer_rows(t, res, n, &notes);
    }
    if (t) {
        psc_table_render(t, f);
        psc__notes_print(f, &notes);
        if (psc__shared_issuer(res, n))
            psc_report_printf(f, "  one GPU issues several of these transfers: its copy engines or SMs may serve them one after "
                                 "another, so each transfer's figure (its own start to its own end) shows its share of the "
                                 "time; compare the totals\n");
        if (psc__grid_shape(ti->shape))
            psc__cv_grid(f, ti, res, n, devs, ndev);
    }
    free(notes.items);
    psc_table_free(t);
}

/* Distinct values in order of first appearance. */
static int psc__distinct_sizes(const psc_bw_result_t *res, size_t n, uint64_t *sizes, int cap)
{
    int k = 0;

    for (size_t i = 0; i < n; i++) {
        int seen = 0;

        for (int j = 0; j < k && !seen; j++)
            seen = sizes[j] == res[i].size;
        if (!seen && k < cap)
            sizes[k++] = res[i].size;
    }
    return k;
}

const char *psc_render_engine_key(psc_engine_t engine)
{
    return engine == PSC_ENGINE_SM ? "sm" : engine == PSC_ENGINE_CPU ? "cpu_gpumap" : "copy_engine";
}

const char *psc_render_size_text(uint64_t s, char *buf, size_t len)
{
    if (s >= (1ull << 30) && s % (1ull << 30) == 0)
        snprintf(buf, len, "%lluG", (unsigned long long)(s >> 30));
    else if (s >= (1ull << 20) && s % (1ull << 20) == 0)
        snprintf(buf, len, "%lluM", (unsigned long long)(s >> 20));
    else if (s >= 1024 && s % 1024 == 0)
        snprintf(buf, len, "%lluK", (unsigned long long)(s >> 10));
    else
        snprintf(buf, len, "%llu", (unsigned long long)s);
    return buf;
}

void psc_render_sweep(FILE *f, psc_bw_test_t test, const psc_bw_result_t *res, size_t n)
{
    uint64_t sizes[64];
    int ns = psc__distinct_sizes(res, n, sizes, 64);
    char labels[256][48];
    int nl = 0;
    psc_table_t *t;

    psc_report_printf(f, "\n%s: %s\n[GB/s by bytes per copy (K/M/G = 1024-based), 1 GB = 1e9 bytes; medians]\n",
                      psc_bw_test_name(test), psc_bw_test_title(test));
    for (size_t i = 0; i < n && nl < 256; i++) {
        char l[48];
        int seen = 0;

        psc_case_label(&res[i].c, l, sizeof(l));
        for (int j = 0; j < nl && !seen; j++)
            seen = strcmp(labels[j], l) == 0;
        if (!seen)
            snprintf(labels[nl++], sizeof(labels[0]), "%s", l);
    }
    t = psc_table_new((unsigned)ns + 1, (unsigned)nl + 1);
    if (!t)
        return;
    psc_table_set(t, 0, 0, "size");
    for (int j = 0; j < nl; j++)
        psc_table_set(t, 0, (unsigned)j + 1, "%s", labels[j]);
    for (int s = 0; s < ns; s++) {
        char st[24];

        psc_table_set(t, (unsigned)s + 1, 0, "%s", psc_render_size_text(sizes[s], st, sizeof(st)));
        for (size_t i = 0; i < n; i++) {
            char l[48];

            if (res[i].size != sizes[s])
                continue;
            psc_case_label(&res[i].c, l, sizeof(l));
            for (int j = 0; j < nl; j++)
                if (strcmp(labels[j], l) == 0) {
                    if (res[i].status == PSC_RESULT_PASSED)
                        psc_table_set(t, (unsigned)s + 1, (unsigned)j + 1, "%.2f", res[i].stats.median);
                    else
                        psc_table_set(t, (unsigned)s + 1, (unsigned)j + 1, "%s",
                                      res[i].status == PSC_RESULT_WAIVED ? "n/a" : "FAIL");
                }
        }
    }
    psc_table_render(t, f);
    psc_table_free(t);
}

#define PSC_CLI_ROWS_MAX 64 /* GPUs in a comparison table */

static const psc_bw_result_t *psc__find_case(const psc_bw_result_t *res, size_t n, const char *test, int src, int dst,
                                             uint64_t size)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(psc_bw_test_name(res[i].c.test), test) == 0 && res[i].c.src == src && res[i].c.dst == dst &&
            (!size || res[i].size == size) && res[i].status == PSC_RESULT_PASSED)
            return &res[i];
    return NULL;
}

void psc_render_p2p_compare(FILE *f, const psc_bw_result_t *res, size_t n)
{
    psc_table_t *t = NULL;
    unsigned r = 1;

    for (size_t i = 0; i < n; i++) {
        const psc_bw_result_t *off = &res[i], *on;
        char label[48];

        if (strcmp(psc_bw_test_name(off->c.test), "gpu_to_gpu_p2p_off_ce") || off->status != PSC_RESULT_PASSED)
            continue;
        on = psc__find_case(res, n, "gpu_to_gpu_write_ce", off->c.src, off->c.dst, 0);
        if (!on)
            continue;
        if (!t) {
            t = psc_table_new((unsigned)n + 1, 4);
            if (!t)
                return;
            psc_report_printf(f, "\nGPU -> GPU with P2P on (gpu_to_gpu_write_ce) and off (gpu_to_gpu_p2p_off_ce), "
                                 "copy engine issued by the source\n[GB/s, 1 GB = 1e9 bytes]\n");
            PSC_TABLE_HEADER(t, "src -> dst", "P2P on", "P2P off", "speed-up");
        }
        psc_table_set(t, r, 0, "%s", psc_case_label(&off->c, label, sizeof(label)));
        psc_table_set(t, r, 1, "%.2f", on->stats.median);
        psc_table_set(t, r, 2, "%.2f", off->stats.median);
        psc_table_set(t, r++, 3, "%.1fx", on->stats.median / off->stats.median);
    }
    psc_table_render_rows(t, f, r);
    psc_table_free(t);
}

void psc_render_hostmem_compare(FILE *f, const psc_bw_result_t *res, size_t n)
{
    static const char *const h2d[] = {"host_to_gpu_ce", "host_to_gpu_pageable_ce", "host_to_gpu_wc_ce",
                                      "host_to_gpu_registered_ce"};
    static const char *const d2h[] = {"gpu_to_host_ce", "gpu_to_host_pageable_ce", "gpu_to_host_wc_ce",
                                      "gpu_to_host_registered_ce"};
    psc_table_t *t = psc_table_new(2 * PSC_CLI_ROWS_MAX + 1, 5);
    unsigned r = 1;

    if (!t)
        return;
    psc_table_set(t, 0, 0, "direction");
    for (int k = 0; k < 4; k++)
        psc_table_set(t, 0, (unsigned)k + 1, "%s", psc_hostmem_name((psc_hostmem_t)k));
    for (int dir = 0; dir < 2; dir++) {
        for (int g = 0; g < PSC_CLI_ROWS_MAX && r < 2 * PSC_CLI_ROWS_MAX + 1; g++) {
            int any = 0;

            for (int k = 0; k < 4; k++) {
                const psc_bw_result_t *x = psc__find_case(res, n, dir ? d2h[k] : h2d[k], dir ? g : PSC_HOST,
                                                          dir ? PSC_HOST : g, 0);

                if (x) {
                    psc_table_set(t, r, (unsigned)k + 1, "%.2f", x->stats.median);
                    any = 1;
                } else {
                    psc_table_set(t, r, (unsigned)k + 1, "-");
                }
            }
            if (!any)
                continue;
            psc_table_set(t, r++, 0, dir ? "gpu%d -> host" : "host -> gpu%d", g);
        }
    }
    if (r > 1) {
        psc_report_printf(f, "\nHost <-> GPU by host memory kind, copy engine [GB/s, 1 GB = 1e9 bytes]\n");
        psc_table_render_rows(t, f, r);
    }
    psc_table_free(t);
}

void psc_render_crossover(FILE *f, const psc_bw_result_t *res, size_t n)
{
    int header = 0;

    for (size_t i = 0; i < n; i++) {
        const char *ce = psc_bw_test_name(res[i].c.test);
        size_t len = strlen(ce);
        char sm[64], label[48], wins[512] = "";
        uint64_t sizes[64];
        int ns, seen = 0, pos = 0, in_run = 0;
        uint64_t run_lo = 0, run_hi = 0;

        if (len < 3 || strcmp(ce + len - 3, "_ce") != 0)
            continue;
        /* One row per (test, case): the first result of it carries the row. */
        for (size_t j = 0; j < i && !seen; j++)
            seen = res[j].c.test == res[i].c.test && res[j].c.src == res[i].c.src && res[j].c.dst == res[i].c.dst;
        if (seen)
            continue;
        snprintf(sm, sizeof(sm), "%.*s_sm", (int)(len - 3), ce);
        ns = psc__distinct_sizes(res, n, sizes, 64);
        if (ns < 2)
            return;
        for (int s = 0; s <= ns; s++) {
            const psc_bw_result_t *a = s < ns ? psc__find_case(res, n, ce, res[i].c.src, res[i].c.dst, sizes[s]) : NULL;
            const psc_bw_result_t *b = s < ns ? psc__find_case(res, n, sm, res[i].c.src, res[i].c.dst, sizes[s]) : NULL;
            int sm_wins = a && b && b->stats.median > a->stats.median;
            char lo[24], hi[24];

            if (sm_wins) {
                run_lo = in_run ? run_lo : sizes[s];
                run_hi = sizes[s];
                in_run = 1;
            } else if (in_run) {
                pos += snprintf(wins + pos, sizeof(wins) > (size_t)pos ? sizeof(wins) - (size_t)pos : 0, "%s%s-%s",
                                pos ? ", " : "", psc_render_size_text(run_lo, lo, sizeof(lo)),
                                psc_render_size_text(run_hi, hi, sizeof(hi)));
                in_run = 0;
            }
        }
        if (!psc__find_case(res, n, sm, res[i].c.src, res[i].c.dst, 0))
            continue;
        if (!header) {
            psc_report_printf(f, "\nWhere the SM kernel beats the copy engine (sizes per copy, from the sweeps)\n");
            header = 1;
        }
        psc_report_printf(f, "  %-22s %-16s SM faster at: %s\n", ce, psc_case_label(&res[i].c, label, sizeof(label)),
                          pos ? wins : "no size");
    }
}
