/*
 * Buffers the measurements copy between: device memory and four kinds of
 * host memory, cached per context so consecutive cases reuse them (pinning
 * hundreds of MB costs more than the measurement).
 */
#ifndef PSC_MEM_BUFFER_H
#define PSC_MEM_BUFFER_H

#include "internal.h"

typedef enum {
    PSC_MEM_DEVICE,
    PSC_MEM_PINNED,
    PSC_MEM_PAGEABLE,
    PSC_MEM_WC,
    PSC_MEM_REGISTERED,
} psc_mem_kind_t;

typedef struct psc_buffer {
    psc_mem_kind_t kind;
    int gpu;            /* owner of device memory; for host memory the GPU it serves */
    int node;           /* host memory: NUMA node it is bound to, -1 unbound */
    uint64_t size;
    CUdeviceptr dptr;   /* address the GPUs use; 0 for pageable memory */
    void *host;         /* host address, host kinds */
    int in_use;
} psc_buffer_t;

static inline psc_mem_kind_t psc__mem_kind_of(psc_hostmem_t h)
{
    static const psc_mem_kind_t map[] = {PSC_MEM_PINNED, PSC_MEM_PAGEABLE, PSC_MEM_WC, PSC_MEM_REGISTERED};

    return map[h];
}

/*
 * A buffer of this kind and size for GPU `gpu` (host memory bound to NUMA
 * node `node`, -1 for none): a cached one when free (host memory cached for
 * another GPU of the node serves too), else a new one. Unused cached buffers
 * of other kinds or sizes are released first.
 */
psc_status_t psc__buffer_get(psc_context_t *ctx, psc_mem_kind_t kind, int gpu, int node, uint64_t size,
                             psc_buffer_t **out);
void psc__buffer_put(psc_buffer_t *b);

/* Release the cached buffers not in use (psc_bw_release_buffers). */
void psc__bw_release_buffers(psc_context_t *ctx);

/* Release every cached buffer (in use or not): the context is closing. */
void psc__buffer_cache_free(psc_context_t *ctx);

/* The GPU that runs kernels on the buffer's bytes (fill, check); pageable memory has none. */
static inline int psc__buffer_gpu(const psc_buffer_t *b) { return b->gpu; }

#endif
