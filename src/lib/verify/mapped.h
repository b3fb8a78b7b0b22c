/*
 * verify's mapped path (the bandwidth registry's PSC_ENGINE_CPU tests): the
 * GPU end of a transfer is device memory mapped for the CPU, and the CPU
 * copies through the mapping (psc_gpumap_write's write-combining stores,
 * psc_gpumap_read's loads) instead of a copy engine or kernel.
 */
#ifndef PSC_VERIFY_MAPPED_H
#define PSC_VERIFY_MAPPED_H

#include "gpumap/gpumap.h"
#include "mem/buffer.h"

typedef struct {
    CUdeviceptr alloc; /* what to free */
    psc_buffer_t dev;  /* the mapped device bytes: fills and checks run on them as on any device buffer */
    psc_gpumap_t *m;   /* NULL: not mapped */
} psc__vmap_t;

/*
 * `size` bytes of GPU `gpu`'s memory, mapped: PSC_OK with v->m; PSC_OK with
 * v->m NULL and reason set when no backend maps them (the path is waived,
 * as the bandwidth rows are); any other failure its status. Close v either way.
 */
psc_status_t psc__vmap_open(psc_context_t *ctx, int gpu, uint64_t size, psc__vmap_t *v, char *reason, size_t len);

/*
 * One copy of n bytes by the CPU: into the mapping when dst is v's device
 * buffer (from src's host bytes at src_off), else out of it (at src_off)
 * into dst's host bytes at dst_off.
 */
psc_status_t psc__vmap_copy(psc__vmap_t *v, const psc_buffer_t *dst, uint64_t dst_off, const psc_buffer_t *src,
                            uint64_t src_off, uint64_t n);

/* Unmap and free (a v that was never opened, or only zeroed, is fine): PSC_OK, or the unmap's failure. */
psc_status_t psc__vmap_close(psc_context_t *ctx, psc__vmap_t *v);

#endif
