/* verify's mapped path: device memory mapped for the CPU, and the CPU's copies through the mapping. */
#include <string.h>

#include "gpumap/measure.h"
#include "verify/mapped.h"

psc_status_t psc__vmap_open(psc_context_t *ctx, int gpu, uint64_t size, psc__vmap_t *v, char *reason, size_t len)
{
    psc_status_t st;

    memset(v, 0, sizeof(*v));
    /* At a GPU page, as the bandwidth rows map it: the mapping then covers exactly the buffer's bytes. */
    if ((st = psc__gpumap_dev_alloc(ctx, gpu, size, &v->alloc, &v->dev)) != PSC_OK)
        return st;
    return psc__gpumap_measure_map(ctx, &v->dev, &v->m, reason, len);
}

psc_status_t psc__vmap_copy(psc__vmap_t *v, const psc_buffer_t *dst, uint64_t dst_off, const psc_buffer_t *src,
                            uint64_t src_off, uint64_t n)
{
    if (dst == &v->dev)
        return psc_gpumap_write(v->m, (size_t)dst_off, (const unsigned char *)src->host + src_off, (size_t)n);
    return psc_gpumap_read(v->m, (size_t)src_off, (unsigned char *)dst->host + dst_off, (size_t)n);
}

psc_status_t psc__vmap_close(psc_context_t *ctx, psc__vmap_t *v)
{
    psc_status_t st = PSC_OK;

    if (v->m)
        st = psc_gpumap_unmap(v->m); /* before the free: the pin holds the memory */
    v->m = NULL;
    if (v->alloc)
        psc__gpumap_dev_free(ctx, v->dev.gpu, v->alloc);
    v->alloc = 0;
    return st;
}
