/*
 * CPU mappings of GPU memory (psc_gpumap_*): the arguments checked against
 * what the driver knows of the memory, the backends tried in order, each map
 * kept in the context's list so psc_context_destroy unmaps what is left, and
 * the copies through a map.
 */
#include "gpumap/gpumap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpumap/wc_copy.h"

const char *psc_gpumap_backend_name(psc_gpumap_backend_t backend)
{
    static const char *const names[PSC_GPUMAP_BACKENDS] = {"gdrcopy", "dma-buf", "coherent"};

    return (int)backend >= 0 && backend < PSC_GPUMAP_BACKENDS ? names[backend] : "?";
}

/* The allocation at dptr: device memory of `gpu`, [dptr, dptr + size) inside it, its first page too. */
static psc_status_t psc__gpumap_range(psc_context_t *ctx, int gpu, CUdeviceptr dptr, size_t size,
                                      struct psc_gpumap *m)
{
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                   CU_POINTER_ATTRIBUTE_IS_MANAGED};
    unsigned type = 0, managed = 0;
    int ordinal = -1;
    CUdeviceptr base = 0;
    size_t bytes = 0, page = psc__gpumap_page();
    void *data[] = {&type, &ordinal, &base, &bytes, &managed};
    CUpointer_attribute id_attr = CU_POINTER_ATTRIBUTE_BUFFER_ID;
    void *id_data = &m->buffer_id;
    CUdeviceptr end;

    if (!ctx->cu.p_cuPointerGetAttributes)
        return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "psc_gpumap_map: the driver lacks cuPointerGetAttributes");
    if (ctx->cu.p_cuPointerGetAttributes(5, attrs, data, dptr) != CUDA_SUCCESS || type == 0)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_gpumap_map: 0x%llx is no memory CUDA knows (accepted: device "
                         "memory from cuMemAlloc or cudaMalloc, not yet freed)", (unsigned long long)dptr);
    if (type != CU_MEMORYTYPE_DEVICE || managed)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_gpumap_map: 0x%llx is %s memory (accepted: device memory from "
                         "cuMemAlloc or cudaMalloc)", (unsigned long long)dptr, managed ? "managed" : "host");
    if (ordinal != gpu)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_gpumap_map: 0x%llx is memory of GPU %d, not of GPU %d",
                         (unsigned long long)dptr, ordinal, gpu);
    if (!bytes || base > dptr) /* a driver that did not say where the allocation is: no range to check against */
        return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "psc_gpumap_map: the driver did not give 0x%llx's allocation "
                         "range (CU_POINTER_ATTRIBUTE_RANGE_START_ADDR/RANGE_SIZE)", (unsigned long long)dptr);
    end = base + bytes;
    if (size > end - dptr)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_gpumap_map: %zu bytes at 0x%llx run past the end of their "
                         "allocation (%zu bytes at 0x%llx; accepted: at most %llu bytes from there)", size,
                         (unsigned long long)dptr, bytes, (unsigned long long)base,
                         (unsigned long long)(end - dptr));
    m->start = dptr & ~(CUdeviceptr)(page - 1);
    if (m->start < base)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_gpumap_map: 0x%llx lies in a %zu KiB GPU page that begins %llu "
                         "bytes before its allocation (at 0x%llx); a mapping covers whole pages (accepted: an "
                         "address %zu KiB-aligned, or the first aligned one past 0x%llx)",
                         (unsigned long long)dptr, page >> 10, (unsigned long long)(base - m->start),
                         (unsigned long long)base, page >> 10, (unsigned long long)base);
    m->len = (size_t)((dptr + size - m->start + page - 1) & ~(CUdeviceptr)(page - 1));
    m->alloc_end = end;
    /* The allocation's identity, to tell a free later; 0 where the driver does not say. */
    if (ctx->cu.p_cuPointerGetAttributes(1, &id_attr, &id_data, dptr) != CUDA_SUCCESS)
        m->buffer_id = 0;
    return PSC_OK;
}

static psc_status_t psc__gpumap_map(psc_context_t *ctx, int gpu, CUdeviceptr dptr, size_t size, unsigned backends,
                                    struct psc_gpumap **out)
{
    char why[PSC_GPUMAP_BACKENDS][PSC_GPUMAP_WHY_LEN], all[3 * PSC_GPUMAP_WHY_LEN + 64];
    psc_status_t st, worst = PSC_ERR_UNSUPPORTED;
    struct psc_gpumap *m;
    size_t used = 0;

    if ((st = psc__gpu_use(ctx, gpu)) != PSC_OK)
        return st;
    if (!(m = calloc(1, sizeof(*m))))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "psc_gpumap_map: out of host memory");
    *m = (struct psc_gpumap){.ctx = ctx, .gpu = gpu, .dptr = dptr, .size = size, .fd = -1};
    if ((st = psc__gpumap_range(ctx, gpu, dptr, size, m)) != PSC_OK)
        goto err_free;
    for (int b = 0; b < PSC_GPUMAP_BACKENDS; b++) {
        why[b][0] = '\0';
        if (!(backends & PSC_GPUMAP_TRY(b)))
            continue;
        st = psc__gpumap_try(ctx, m, (psc_gpumap_backend_t)b, why[b], sizeof(why[b]));
        if (st == PSC_OK) {
            m->next = ctx->gpumaps;
            if (ctx->gpumaps)
                ctx->gpumaps->prev = m;
            ctx->gpumaps = m;
            psc__context_on_close(ctx, PSC__CLOSE_GPUMAPS, psc__gpumap_unmap_all); /* before the memory it maps */
            *out = m;
            return PSC_OK;
        }
        /* Memory short (BAR1) says more than "unsupported"; a failing driver more than both. */
        if (st != PSC_ERR_UNSUPPORTED && worst != PSC_ERR_DRIVER)
            worst = st;
        used += (size_t)snprintf(all + used, used < sizeof(all) ? sizeof(all) - used : 0, "%s%s: %s",
                                 used ? "; " : "", psc_gpumap_backend_name((psc_gpumap_backend_t)b), why[b]);
        if (used >= sizeof(all))
            used = sizeof(all) - 1;
    }
    st = psc__fail(ctx, worst, "psc_gpumap_map: no backend mapped %zu bytes at 0x%llx of GPU %d: %s", size,
                   (unsigned long long)dptr, gpu, all);
err_free:
    free(m);
    return st;
}

psc_status_t psc__gpumap_map_in(psc_context_t *ctx, int gpu, uint64_t dptr, size_t size, unsigned backends,
                                psc_gpumap_t **out)
{
    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_gpumap_map: no place for the map (accepted: a psc_gpumap_t *)");
    if (!psc__valid_gpu(ctx, gpu))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_gpumap_map: GPU %d does not exist (accepted: 0..%d)", gpu,
                         ctx->ndev - 1);
    if (size == 0 || dptr == 0)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_gpumap_map: %s (accepted: 1 byte or more of device memory)",
                         dptr ? "size 0" : "address 0");
    if (backends & ~((1u << PSC_GPUMAP_BACKENDS) - 1))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_gpumap_map: backends 0x%x name none of the three (accepted: 0 "
                         "for all, or PSC_GPUMAP_TRY(b) of PSC_GPUMAP_GDRCOPY, _DMABUF, _COHERENT or'ed)", backends);
    if (!backends)
        backends = (1u << PSC_GPUMAP_BACKENDS) - 1;
    return psc__gpumap_map(ctx, gpu, (CUdeviceptr)dptr, size, backends, out);
}

psc_status_t psc_gpumap_check(psc_gpumap_t *m)
{
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_BUFFER_ID};
    unsigned type = 0;
    unsigned long long id = 0;
    void *data[] = {&type, &id};
    int flag = 0;

    if (!m)
        return PSC_ERR_INVALID;
    if (m->ctx->cu.p_cuPointerGetAttributes(m->buffer_id ? 2 : 1, attrs, data, m->dptr) != CUDA_SUCCESS ||
        type != CU_MEMORYTYPE_DEVICE)
        return psc__fail(m->ctx, PSC_ERR_INVALID, "psc_gpumap_check: the memory mapped at 0x%llx was freed: unmap "
                         "it (its bytes are undefined; touching them may fault)", (unsigned long long)m->dptr);
    if (m->buffer_id && id != m->buffer_id)
        return psc__fail(m->ctx, PSC_ERR_INVALID, "psc_gpumap_check: the memory mapped at 0x%llx was freed, and "
                         "another allocation took its address: unmap it", (unsigned long long)m->dptr);
    if (m->backend == PSC_GPUMAP_GDRCOPY && m->gdr->api.callback_flag &&
        m->gdr->api.callback_flag(m->gdr->g, m->mh, &flag) == 0 && flag)
        return psc__fail(m->ctx, PSC_ERR_INVALID, "psc_gpumap_check: gdrdrv invalidated the mapping of 0x%llx (its "
                         "memory was freed): unmap it", (unsigned long long)m->dptr);
    return PSC_OK;
}

psc_status_t psc_gpumap_unmap(psc_gpumap_t *m)
{
    char why[PSC_GPUMAP_WHY_LEN];
    psc_context_t *ctx;
    psc_status_t st;

    if (!m)
        return PSC_OK;
    ctx = m->ctx;
    st = psc__gpumap_release(m, why, sizeof(why));
    if (m->prev)
        m->prev->next = m->next;
    else if (ctx->gpumaps == m)
        ctx->gpumaps = m->next;
    if (m->next)
        m->next->prev = m->prev;
    free(m);
    return st == PSC_OK ? PSC_OK : psc__fail(ctx, st, "psc_gpumap_unmap: %s", why);
}

void psc__gpumap_unmap_all(psc_context_t *ctx)
{
    while (ctx->gpumaps)
        psc_gpumap_unmap(ctx->gpumaps);
}

void *psc_gpumap_ptr(const psc_gpumap_t *m)
{
    return m ? m->base + (m->dptr - m->start) : NULL;
}

size_t psc_gpumap_size(const psc_gpumap_t *m)
{
    return m ? m->size : 0;
}

uint64_t psc_gpumap_dptr(const psc_gpumap_t *m)
{
    return m ? (uint64_t)m->dptr : 0;
}

psc_gpumap_backend_t psc_gpumap_backend(const psc_gpumap_t *m)
{
    return m ? m->backend : PSC_GPUMAP_BACKENDS;
}

size_t psc_gpumap_offset(const psc_gpumap_t *m)
{
    return m && m->backend != PSC_GPUMAP_COHERENT ? (size_t)(m->dptr - m->start) : 0;
}

int psc_gpumap_write_combined(const psc_gpumap_t *m)
{
    return m ? m->wc : 0;
}

/* offset and n inside the map, a buffer where n > 0: PSC_OK, else recorded. */
static psc_status_t psc__gpumap_io_check(psc_gpumap_t *m, size_t offset, const void *buf, size_t n,
                                         const char *call)
{
    if (!m)
        return PSC_ERR_INVALID;
    if (offset > m->size || n > m->size - offset)
        return psc__fail(m->ctx, PSC_ERR_INVALID, "%s: %zu bytes at offset %zu run past the map's %zu bytes "
                         "(accepted: offset + n at most %zu)", call, n, offset, m->size, m->size);
    if (n && !buf)
        return psc__fail(m->ctx, PSC_ERR_INVALID, "%s: no buffer for %zu bytes", call, n);
    return PSC_OK;
}

psc_status_t psc_gpumap_write(psc_gpumap_t *m, size_t offset, const void *src, size_t n)
{
    psc_status_t st = psc__gpumap_io_check(m, offset, src, n, "psc_gpumap_write");

    if (st == PSC_OK && n)
        psc__wc_write((unsigned char *)psc_gpumap_ptr(m) + offset, src, n, psc__wc_best());
    return st;
}

psc_status_t psc_gpumap_read(psc_gpumap_t *m, size_t offset, void *dst, size_t n)
{
    psc_status_t st = psc__gpumap_io_check(m, offset, dst, n, "psc_gpumap_read");

    if (st == PSC_OK && n)
        psc__wc_read(dst, (const unsigned char *)psc_gpumap_ptr(m) + offset, n, psc__wc_best());
    return st;
}
