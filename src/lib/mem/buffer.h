/* Buffers the measurements copy between: device memory and pinned host memory. */
#ifndef PSC_MEM_BUFFER_H
#define PSC_MEM_BUFFER_H

#include "internal.h"

typedef enum { PSC_MEM_DEVICE, PSC_MEM_PINNED } psc_mem_kind_t;

typedef struct {
    psc_mem_kind_t kind;
    int gpu;            /* owner of device memory; GPU pinned memory is placed near */
    uint64_t size;
    CUdeviceptr dptr;   /* address the GPUs use */
    void *host;         /* host address, pinned memory only */
} psc_buffer_t;

/*
 * Device memory on GPU `gpu`, or pinned host memory (portable, mapped) bound
 * to the NUMA node nearest that GPU. The zero buffer is safe to free.
 */
psc_status_t psc__buffer_alloc(psc_context_t *ctx, psc_mem_kind_t kind, int gpu, uint64_t size,
                               psc_buffer_t *out);
void psc__buffer_free(psc_context_t *ctx, psc_buffer_t *b);

/* The GPU that runs kernels on the buffer's bytes (fill, check). */
static inline int psc__buffer_gpu(const psc_buffer_t *b) { return b->gpu; }

#endif
