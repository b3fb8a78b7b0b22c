#include "mem/buffer.h"

#include "machine/host_topo.h"

#include <stdlib.h>
#include <string.h>

/* The cache: a small array in the context; the working set of one test is a few buffers. */
#define PSC_CACHE_MAX 256

static int psc__is_host(psc_mem_kind_t k)
{
    return k != PSC_MEM_DEVICE;
}

/*
 * A cached buffer serves a request for the same kind and size: device memory
 * only on its own GPU; host memory on the same NUMA node for any GPU, since
 * it is mapped for every context (portable) at the same address (unified
 * addressing: the device pointer is the host pointer), so one host buffer
 * can serve each GPU in turn instead of one per GPU.
 */
static int psc__serves(const psc_buffer_t *b, psc_mem_kind_t kind, int gpu, int node, uint64_t size)
{
    if (!b->size || b->in_use || b->kind != kind || b->size != size)
        return 0;
    if (!psc__is_host(kind))
        return b->gpu == gpu;
    return b->node == node && (b->gpu == gpu || kind == PSC_MEM_PAGEABLE || b->dptr == (CUdeviceptr)(uintptr_t)b->host);
}

static void psc__release(psc_context_t *ctx, psc_buffer_t *b)
{
    switch (b->kind) {
    case PSC_MEM_DEVICE:
        if (b->dptr && psc__gpu_use(ctx, b->gpu) == PSC_OK)
            ctx->cu.p_cuMemFree(b->dptr);
        break;
    case PSC_MEM_PINNED:
    case PSC_MEM_WC:
        if (b->host)
            ctx->cu.p_cuMemFreeHost(b->host);
        break;
    case PSC_MEM_REGISTERED:
        if (b->dptr)
            ctx->cu.p_cuMemHostUnregister(b->host);
        psc_host_topo_free_mem(ctx->host, b->host, b->size);
        break;
    case PSC_MEM_PAGEABLE:
        psc_host_topo_free_mem(ctx->host, b->host, b->size);
        break;
    }
    memset(b, 0, sizeof(*b));
}

static psc_status_t psc__alloc(psc_context_t *ctx, psc_buffer_t *b)
{
    unsigned flags = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP;
    psc_status_t st;
    void *token;

    if ((st = psc__gpu_use(ctx, b->gpu)) != PSC_OK)
        return st;
    switch (b->kind) {
    case PSC_MEM_DEVICE:
        return PSC_CU(ctx, cuMemAlloc, (&b->dptr, b->size));
    case PSC_MEM_PINNED:
    case PSC_MEM_WC:
        token = psc_host_topo_membind_push(ctx->host, b->node);
        st = PSC_CU(ctx, cuMemHostAlloc,
                    (&b->host, b->size, flags | (b->kind == PSC_MEM_WC ? CU_MEMHOSTALLOC_WRITECOMBINED : 0)));
        psc_host_topo_membind_pop(ctx->host, token);
        if (st == PSC_OK && (st = PSC_CU(ctx, cuMemHostGetDevicePointer, (&b->dptr, b->host, 0))) != PSC_OK) {
            ctx->cu.p_cuMemFreeHost(b->host);
            b->host = NULL;
        }
        return st;
    case PSC_MEM_PAGEABLE:
    case PSC_MEM_REGISTERED:
        b->host = psc_host_topo_alloc(ctx->host, b->size, b->node);
        if (!b->host)
            return psc__fail(ctx, PSC_ERR_NO_MEMORY, "cannot allocate %llu bytes of host memory",
                             (unsigned long long)b->size);
        memset(b->host, 0xA5, b->size); /* touch every page where it is bound */
        if (b->kind == PSC_MEM_PAGEABLE)
            return PSC_OK;
        if (!ctx->cu.p_cuMemHostRegister)
            st = psc__fail(ctx, PSC_ERR_UNSUPPORTED, "the driver lacks cuMemHostRegister");
        else if ((st = PSC_CU(ctx, cuMemHostRegister,
                              (b->host, b->size, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP))) ==
                 PSC_OK) {
            if ((st = PSC_CU(ctx, cuMemHostGetDevicePointer, (&b->dptr, b->host, 0))) != PSC_OK)
                ctx->cu.p_cuMemHostUnregister(b->host);
        }
        if (st != PSC_OK) {
            psc_host_topo_free_mem(ctx->host, b->host, b->size);
            b->host = NULL;
            b->dptr = 0;
        }
        return st;
    }
    return psc__fail(ctx, PSC_ERR_INVALID, "buffer kind %d does not exist (accepted: %d..%d)", (int)b->kind,
                     (int)PSC_MEM_DEVICE, (int)PSC_MEM_REGISTERED);
}

psc_status_t psc__buffer_get(psc_context_t *ctx, psc_mem_kind_t kind, int gpu, int node, uint64_t size,
                             psc_buffer_t **out)
{
    psc_buffer_t *slot = NULL;
    psc_status_t st;

    if (!ctx->bufs) {
        ctx->bufs = calloc(PSC_CACHE_MAX, sizeof(*ctx->bufs));
        if (!ctx->bufs)
            return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
        psc__context_on_close(ctx, PSC__CLOSE_BUFFERS, psc__buffer_cache_free);
    }
    for (int i = 0; i < PSC_CACHE_MAX; i++) {
        psc_buffer_t *b = &ctx->bufs[i];

        if (psc__serves(b, kind, gpu, node, size)) {
            b->in_use = 1;
            b->gpu = gpu; /* the GPU that now fills and checks it */
            *out = b;
            return PSC_OK;
        }
    }
    /* A miss: free what the next cases will not want (other host kinds, other sizes). */
    for (int i = 0; i < PSC_CACHE_MAX; i++) {
        psc_buffer_t *b = &ctx->bufs[i];

        if (b->size && !b->in_use && (b->size != size || (psc__is_host(kind) && psc__is_host(b->kind) && b->kind != kind)))
            psc__release(ctx, b);
        if (!b->size && !slot)
            slot = b;
    }
    if (!slot)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "more than %d buffers in use at once", PSC_CACHE_MAX);
    *slot = (psc_buffer_t){.kind = kind, .gpu = gpu, .node = psc__is_host(kind) ? node : -1, .size = size};
    st = psc__alloc(ctx, slot);
    if (st != PSC_OK) {
        memset(slot, 0, sizeof(*slot));
        return st;
    }
    slot->in_use = 1;
    *out = slot;
    return PSC_OK;
}

void psc__buffer_put(psc_buffer_t *b)
{
    if (b)
        b->in_use = 0;
}

void psc__buffer_cache_free(psc_context_t *ctx)
{
    for (int i = 0; ctx->bufs && i < PSC_CACHE_MAX; i++)
        if (ctx->bufs[i].size)
            psc__release(ctx, &ctx->bufs[i]);
    free(ctx->bufs);
    ctx->bufs = NULL;
}

void psc__bw_release_buffers(psc_context_t *ctx)
{
    for (int i = 0; ctx && ctx->bufs && i < PSC_CACHE_MAX; i++)
        if (ctx->bufs[i].size && !ctx->bufs[i].in_use)
            psc__release(ctx, &ctx->bufs[i]);
}
