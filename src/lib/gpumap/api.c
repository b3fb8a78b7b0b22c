/*
 * psc_gpumap_map as an application calls it: the caller's current context
 * kept (the API guard). Apart from gpumap.c so that the measurements, which
 * run inside the guard already, map through gpumap.c without calling back
 * into it.
 */
#include "gpumap/gpumap.h"

psc_status_t psc_gpumap_map(psc_context_t *ctx, int gpu, uint64_t dptr, size_t size, unsigned backends,
                            psc_gpumap_t **out)
{
    psc_gpumap_t *m = NULL;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_gpumap_map: no place for the map (accepted: a psc_gpumap_t *)");
    psc__guard_enter(ctx);
    st = psc__guard_leave(ctx, psc__gpumap_map_in(ctx, gpu, dptr, size, backends, &m));
    if (st == PSC_OK)
        *out = m;
    else if (m) /* mapped, but the caller's context could not be put back: not handed over */
        psc_gpumap_unmap(m);
    return st;
}
