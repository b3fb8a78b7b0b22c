#include "mem/buffer.h"

#include <string.h>

psc_status_t psc__buffer_alloc(psc_context_t *ctx, psc_mem_kind_t kind, int gpu, uint64_t size,
                               psc_buffer_t *out)
{
    psc_buffer_t b = {.kind = kind, .gpu = gpu, .size = size};
    psc_status_t st;
    void *token;

    if ((st = psc__gpu_use(ctx, gpu)) != PSC_OK)
        return st;
    if (kind == PSC_MEM_DEVICE) {
        st = PSC_CU(ctx, cuMemAlloc, (&b.dptr, size));
        if (st != PSC_OK)
            return st;
        *out = b;
        return PSC_OK;
    }
    token = psc_host_topo_membind_push(ctx->host, ctx->info[gpu].pci_bus_id);
    st = PSC_CU(ctx, cuMemHostAlloc,
                (&b.host, size, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    psc_host_topo_membind_pop(ctx->host, token);
    if (st != PSC_OK)
        return st;
    st = PSC_CU(ctx, cuMemHostGetDevicePointer, (&b.dptr, b.host, 0));
    if (st != PSC_OK) {
        ctx->cu.p_cuMemFreeHost(b.host);
        return st;
    }
    *out = b;
    return PSC_OK;
}

void psc__buffer_free(psc_context_t *ctx, psc_buffer_t *b)
{
    if (b->kind == PSC_MEM_DEVICE && b->dptr) {
        if (psc__gpu_use(ctx, b->gpu) == PSC_OK)
            ctx->cu.p_cuMemFree(b->dptr);
    } else if (b->kind == PSC_MEM_PINNED && b->host) {
        ctx->cu.p_cuMemFreeHost(b->host);
    }
    memset(b, 0, sizeof(*b));
}
