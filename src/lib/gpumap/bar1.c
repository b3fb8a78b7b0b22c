/* BAR1, where pinned mappings live: NVML's numbers, and whether a request fits. */
#include <inttypes.h>
#include <stdio.h>

#include "gpumap/gpumap.h"
#include "machine/devices.h"

int psc__gpumap_bar1(const psc_context_t *ctx, int gpu, uint64_t *total, uint64_t *free_bytes)
{
    psc_nvmlDevice_t h;
    psc_nvmlBAR1Memory_t bar1;

    if (!ctx->nvml.bar1 || !(h = psc__nvml_handle(ctx, gpu)) || ctx->nvml.bar1(h, &bar1) != 0 || !bar1.bar1Total)
        return -1;
    *total = bar1.bar1Total;
    *free_bytes = bar1.bar1Free;
    return 0;
}

int psc__gpumap_bar1_fits(uint64_t pinned, uint64_t total, uint64_t free_bytes, char *why, size_t len)
{
    if (!total || pinned <= free_bytes)
        return 1;
    snprintf(why, len, "%" PRIu64 " bytes in 64 KiB pages exceed the free BAR1: %" PRIu64 " MiB free of %" PRIu64
             " MiB; map less at a time, or enlarge BAR1 (resizable BAR in the system firmware)", pinned,
             free_bytes >> 20, total >> 20);
    return 0;
}
