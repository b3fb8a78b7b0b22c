/*
 * What the measurements through a CPU mapping of GPU memory share
 * (xfer/bw_gpumap.c, lat/lat_gpumap.c): device memory at a GPU page
 * boundary, and a map that no backend makes turned into a waiver with the
 * reasons. Unguarded: called inside the bandwidth and latency runs.
 */
#ifndef PSC_GPUMAP_MEASURE_H
#define PSC_GPUMAP_MEASURE_H

#include "internal.h"
#include "mem/buffer.h"

/*
 * `size` bytes of GPU `gpu`'s memory beginning at a GPU page (*view: a device
 * buffer over them for pattern fills and checks); *alloc is what to free
 * with psc__gpumap_dev_free.
 */
psc_status_t psc__gpumap_dev_alloc(psc_context_t *ctx, int gpu, uint64_t size, CUdeviceptr *alloc,
                                   psc_buffer_t *view);
void psc__gpumap_dev_free(psc_context_t *ctx, int gpu, CUdeviceptr alloc);

/*
 * Map view's bytes for the CPU. PSC_OK with *m; PSC_OK with *m NULL and
 * reason set when no backend maps them here (each backend's reason, BAR1
 * too small included): the test is waived; any other failure its status.
 */
psc_status_t psc__gpumap_measure_map(psc_context_t *ctx, const psc_buffer_t *view, psc_gpumap_t **m, char *reason,
                                     size_t len);

#endif
