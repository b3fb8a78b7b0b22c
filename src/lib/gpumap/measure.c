/* What the gpumap measurements share: page-aligned device memory, and a map or the waiver's reason. */
#include <stdio.h>
#include <string.h>

#include "gpumap/gpumap.h"
#include "gpumap/measure.h"

psc_status_t psc__gpumap_dev_alloc(psc_context_t *ctx, int gpu, uint64_t size, CUdeviceptr *alloc,
                                   psc_buffer_t *view)
{
    const size_t page = psc__gpumap_page();
    psc_status_t st;

    *alloc = 0;
    /* One page more, so a page boundary lies inside the allocation whatever the driver aligns to. */
    if ((st = psc__gpu_use(ctx, gpu)) != PSC_OK || (st = PSC_CU(ctx, cuMemAlloc, (alloc, (size_t)size + page))) != PSC_OK)
        return st;
    memset(view, 0, sizeof(*view));
    view->kind = PSC_MEM_DEVICE;
    view->gpu = gpu;
    view->node = -1;
    view->size = size;
    view->dptr = (*alloc + page - 1) & ~(CUdeviceptr)(page - 1);
    return PSC_OK;
}

void psc__gpumap_dev_free(psc_context_t *ctx, int gpu, CUdeviceptr alloc)
{
    if (alloc && psc__gpu_use(ctx, gpu) == PSC_OK)
        ctx->cu.p_cuMemFree(alloc);
}

/*
 * psc_gpumap_map's "gdrcopy: why: details; fix; dma-buf: ...; coherent: ..."
 * as "gdrcopy: why; dma-buf: why; coherent: why": each backend's reason's
 * first clause, without details and fix (psc_gpumap_probe gives the whole
 * text), so all three fit a result's reason.
 */
#define PSC__REASON_EACH 125

static void psc__gpumap_reasons(const char *all, char *out, size_t len)
{
    size_t used = 0;

    out[0] = '\0';
    for (int b = 0; b < PSC_GPUMAP_BACKENDS; b++) {
        char name[24];
        const char *at, *end, *next = NULL;

        snprintf(name, sizeof(name), "%s: ", psc_gpumap_backend_name((psc_gpumap_backend_t)b));
        if (!(at = strstr(all, name)))
            continue;
        for (int n = b + 1; n < PSC_GPUMAP_BACKENDS && !next; n++) {
            char later[28];

            snprintf(later, sizeof(later), "; %s: ", psc_gpumap_backend_name((psc_gpumap_backend_t)n));
            next = strstr(at, later);
        }
        end = strstr(at + strlen(name), "; ");
        if (!end || (next && end > next))
            end = next ? next : at + strlen(at);
        { /* the reason's first clause: what is missing, not its details and fix (psc_gpumap_probe has those) */
            const char *colon = strstr(at + strlen(name), ": ");

            if (colon && colon < end)
                end = colon;
        }
        /* At most PSC__REASON_EACH characters each, so the third is not cut off. */
        used += (size_t)snprintf(out + used, used < len ? len - used : 0, "%s%.*s%s", used ? "; " : "",
                                 end - at > PSC__REASON_EACH ? PSC__REASON_EACH - 3 : (int)(end - at), at,
                                 end - at > PSC__REASON_EACH ? "..." : "");
        if (used >= len)
            return;
    }
}

psc_status_t psc__gpumap_measure_map(psc_context_t *ctx, const psc_buffer_t *view, psc_gpumap_t **m, char *reason,
                                     size_t len)
{
    psc_status_t st = psc__gpumap_map_in(ctx, view->gpu, view->dptr, (size_t)view->size, 0, m);
    char why[PSC_GPUMAP_WHY_LEN + 200];

    if (st == PSC_OK)
        return PSC_OK;
    *m = NULL;
    /* No backend here, or BAR1 too small for the size: nothing wrong with the path, it is not there. */
    if (st != PSC_ERR_UNSUPPORTED && st != PSC_ERR_NO_MEMORY)
        return st;
    psc__gpumap_reasons(ctx->last_error, why, sizeof(why));
    snprintf(reason, len, "no CPU mapping of GPU %d's memory: %s", view->gpu,
             why[0] ? why : ctx->last_error);
    return PSC_OK;
}
