#include "render.h"

#include <stdlib.h>
#include <string.h>

#include "table.h"

const char *psc_endpoint_name(int endpoint, char *buf, size_t len)
{
    if (endpoint == PSC_HOST)
        snprintf(buf, len, "host");
    else
        snprintf(buf, len, "gpu%d", endpoint);
    return buf;
}

void psc_render_devices(FILE *f, const psc_system_info_t *sys, const psc_device_info_t *devs, int ndev)
{
    static const char *const head[] = {"gpu", "nvml", "name", "pci bus id", "memory (GiB)", "SMs", "cc",
                                       "copy engines", "numa", "sm clock (MHz)", "temp (C)"};
    const unsigned cols = sizeof(head) / sizeof(head[0]);
    psc_table_t *t = psc_table_new((unsigned)ndev + 1, cols);

    fprintf(f, "driver %s, CUDA driver API %d.%d; NVML %s\n",
            sys->driver_release[0] ? sys->driver_release : "(version unknown)",
            sys->cuda_driver_version / 1000, sys->cuda_driver_version % 1000 / 10,
            sys->nvml_loaded ? "loaded" : sys->nvml_note);
    fprintf(f, "gpu indexes are CUDA ordinals (CUDA_DEVICE_ORDER=%s%s%s); 'nvml' is nvidia-smi's index, "
               "which follows PCI bus id order\n",
            sys->device_order, sys->visible_devices[0] ? ", CUDA_VISIBLE_DEVICES=" : "", sys->visible_devices);
    if (!t)
        return;
    for (unsigned c = 0; c < cols; c++)
        psc_table_set(t, 0, c, "%s", head[c]);
    for (int i = 0; i < ndev; i++) {
        const psc_device_info_t *d = &devs[i];
        unsigned r = (unsigned)i + 1;

        psc_table_set(t, r, 0, "gpu%d", d->index);
        psc_table_set(t, r, 1, d->nvml_index >= 0 ? "%d" : "-", d->nvml_index);
        psc_table_set(t, r, 2, "%s", d->name);
        psc_table_set(t, r, 3, "%s", d->pci_bus_id);
        psc_table_set(t, r, 4, "%.1f", (double)d->memory_bytes / (1024.0 * 1024 * 1024));
        psc_table_set(t, r, 5, "%d", d->sm_count);
        psc_table_set(t, r, 6, "%d.%d", d->cc_major, d->cc_minor);
        psc_table_set(t, r, 7, "%d", d->async_engines);
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

static const psc_bw_result_t *psc__find(const psc_bw_result_t *res, size_t n, int src, int dst)
{
    for (size_t i = 0; i < n; i++)
        if (res[i].c.src == src && res[i].c.dst == dst)
            return &res[i];
    return NULL;
}

/* Cells not passed, in table order, so each marker [k] matches note k. */
typedef struct {
    const psc_bw_result_t **items;
    unsigned n;
} psc__notes_t;

/* Fill a cell with the median, or a marker pointing to a numbered note. */
static void psc__cell(psc_table_t *t, unsigned r, unsigned c, const psc_bw_result_t *x, psc__notes_t *notes)
{
    if (!x) {
        psc_table_set(t, r, c, "-");
    } else if (x->status == PSC_RESULT_PASSED) {
        psc_table_set(t, r, c, "%.2f", x->stats.median);
    } else {
        notes->items[notes->n++] = x;
        psc_table_set(t, r, c, "%s[%u]", x->status == PSC_RESULT_WAIVED ? "n/a" : "FAIL", notes->n);
    }
}

static void psc__notes_print(FILE *f, const psc__notes_t *notes)
{
    for (unsigned k = 0; k < notes->n; k++) {
        const psc_bw_result_t *x = notes->items[k];
        char a[16], b[16];

        fprintf(f, "  [%u] %s -> %s: %s: %s\n", k + 1, psc_endpoint_name(x->c.src, a, sizeof(a)),
                psc_endpoint_name(x->c.dst, b, sizeof(b)), psc_result_status_string(x->status), x->reason);
    }
}

void psc_render_bw(FILE *f, psc_bw_test_t test, const psc_bw_result_t *res, size_t n, const int *devs,
                   int ndev, unsigned samples)
{
    int pair = test == PSC_BW_GPU_TO_GPU_READ_CE || test == PSC_BW_GPU_TO_GPU_WRITE_CE;
    psc__notes_t notes = {NULL, 0};
    psc_table_t *t;

    fprintf(f, "\n%s\n", psc_bw_test_title(test));
    if (pair && ndev < 2) {
        fprintf(f, "  waived: needs at least 2 GPUs\n");
        return;
    }
    fprintf(f, "[GB/s, 1 GB = 1e9 bytes; median of %u samples]\n", samples);
    t = psc_table_new(pair ? (unsigned)ndev + 1 : 2, (unsigned)ndev + 1);
    notes.items = calloc((size_t)ndev * (size_t)ndev + 1, sizeof(*notes.items));
    if (!t || !notes.items)
        goto out;
    psc_table_set(t, 0, 0, pair ? "src \\ dst" : "");
    for (int j = 0; j < ndev; j++)
        psc_table_set(t, 0, (unsigned)j + 1, "gpu%d", devs[j]);
    if (pair) {
        for (int i = 0; i < ndev; i++) {
            psc_table_set(t, (unsigned)i + 1, 0, "gpu%d", devs[i]);
            for (int j = 0; j < ndev; j++)
                psc__cell(t, (unsigned)i + 1, (unsigned)j + 1,
                          i == j ? NULL : psc__find(res, n, devs[i], devs[j]), &notes);
        }
    } else {
        psc_table_set(t, 1, 0, test == PSC_BW_HOST_TO_GPU_CE ? "host -> gpu"
                               : test == PSC_BW_GPU_TO_HOST_CE ? "gpu -> host" : "gpu -> same gpu");
        for (int j = 0; j < ndev; j++) {
            int src = test == PSC_BW_HOST_TO_GPU_CE ? PSC_HOST : devs[j];
            int dst = test == PSC_BW_GPU_TO_HOST_CE ? PSC_HOST : devs[j];

            psc__cell(t, 1, (unsigned)j + 1, psc__find(res, n, src, dst), &notes);
        }
    }
    psc_table_render(t, f);
    psc__notes_print(f, &notes);
out:
    free(notes.items);
    psc_table_free(t);
}
