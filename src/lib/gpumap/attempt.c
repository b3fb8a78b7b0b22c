/*
 * One backend tried on one range, and undone: what psc_gpumap_map and the
 * probe's trials share. Backends that pin take BAR1, so NVML's free BAR1 is
 * checked first where it is known.
 */
#include <unistd.h>

#include "gpumap/gpumap.h"

/* The unit a BAR1 mapping covers: the GPU page, or the host page where that is larger. */
size_t psc__gpumap_page(void)
{
    long pg = sysconf(_SC_PAGESIZE);

    return pg > (long)PSC_GPUMAP_PAGE ? (size_t)pg : PSC_GPUMAP_PAGE;
}

int psc__gpumap_uses_bar1(psc_gpumap_backend_t b, int coherent)
{
    return b != PSC_GPUMAP_COHERENT && !coherent;
}

/* One backend on m's range, BAR1 checked first for those that pin; PSC_OK or a status with why. */
psc_status_t psc__gpumap_try(psc_context_t *ctx, struct psc_gpumap *m, psc_gpumap_backend_t b, char *why,
                             size_t len)
{
    uint64_t total = 0, free_bytes = 0;
    int coherent = 0;

    m->backend = b;
    m->fd = -1;
    if (ctx->cu.p_cuDeviceGetAttribute(&coherent, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
                                       ctx->gpu[m->gpu].dev) != CUDA_SUCCESS)
        coherent = 0;
    if (psc__gpumap_uses_bar1(b, coherent) && psc__gpumap_bar1(ctx, m->gpu, &total, &free_bytes) == 0 &&
        !psc__gpumap_bar1_fits(m->len, total, free_bytes, why, len))
        return PSC_ERR_NO_MEMORY;
    switch (b) {
    case PSC_GPUMAP_GDRCOPY: return psc__gpumap_gdr_map(ctx, m, why, len);
    case PSC_GPUMAP_DMABUF: return psc__gpumap_dmabuf_map(ctx, m, why, len);
    default: return psc__gpumap_coherent_map(ctx, m, why, len);
    }
}

/* Undo psc__gpumap_try's success. */
psc_status_t psc__gpumap_release(struct psc_gpumap *m, char *why, size_t len)
{
    switch (m->backend) {
    case PSC_GPUMAP_GDRCOPY: return psc__gpumap_gdr_unmap(m, why, len);
    case PSC_GPUMAP_DMABUF: return psc__gpumap_dmabuf_unmap(m, why, len);
    default: m->base = NULL; return PSC_OK;
    }
}

