/*
 * psc_gpumap_probe: what each backend can do on one GPU, found by trying
 * (each maps one page of scratch device memory, then lets it go; the
 * coherent one reads it through the kernel), and BAR1 as NVML reports it.
 */
#include <stdio.h>
#include <string.h>

#include "gpumap/gpumap.h"

/* One page of scratch device memory on GPU `gpu`, 64 KiB-aligned inside its allocation; 0 when none. */
static CUdeviceptr psc__gpumap_scratch(psc_context_t *ctx, int gpu, CUdeviceptr *alloc, char *why, size_t len)
{
    size_t page = psc__gpumap_page();
    char e[160];
    CUresult rc;

    if (psc__gpu_use(ctx, gpu) != PSC_OK) {
        snprintf(why, len, "GPU %d could not be set up to try: %.300s", gpu, ctx->last_error);
        return 0;
    }
    if ((rc = ctx->cu.p_cuMemAlloc(alloc, 2 * page)) != CUDA_SUCCESS) {
        snprintf(why, len, "no %zu KiB of device memory on GPU %d to try it: %s", 2 * page >> 10, gpu,
                 psc_cuda_error_text(&ctx->cu, rc, e, sizeof(e)));
        *alloc = 0;
        return 0;
    }
    return (*alloc + page - 1) & ~(CUdeviceptr)(page - 1);
}

/* Try backend b on one scratch page: 1 when it maps and unmaps, else 0 with why. */
static int psc__gpumap_trial(psc_context_t *ctx, int gpu, psc_gpumap_backend_t b, char *why, size_t len)
{
    struct psc_gpumap m = {.ctx = ctx, .gpu = gpu, .fd = -1};
    CUdeviceptr alloc = 0, at = psc__gpumap_scratch(ctx, gpu, &alloc, why, len);
    int ok = 0;

    if (!at)
        return 0;
    m.dptr = m.start = at;
    m.size = m.len = psc__gpumap_page();
    if (psc__gpumap_try(ctx, &m, b, why, len) == PSC_OK)
        ok = psc__gpumap_release(&m, why, len) == PSC_OK;
    psc__gpu_use(ctx, gpu);
    ctx->cu.p_cuMemFree(alloc);
    return ok;
}

static void psc__gpumap_probe(psc_context_t *ctx, int gpu, psc_gpumap_report_t *r)
{
    memset(r, 0, sizeof(*r));
    r->cuda_driver_version = ctx->sys.cuda_driver_version;
    if (psc__gpumap_bar1(ctx, gpu, &r->bar1_total, &r->bar1_free) != 0)
        r->bar1_total = r->bar1_free = 0;
    psc__gpumap_gdr_report(r);
    r->usable[PSC_GPUMAP_GDRCOPY] = psc__gpumap_trial(ctx, gpu, PSC_GPUMAP_GDRCOPY, r->why[PSC_GPUMAP_GDRCOPY],
                                                      PSC_GPUMAP_WHY_LEN);
    r->usable[PSC_GPUMAP_DMABUF] =
        psc__gpumap_dmabuf_ready(ctx, gpu, r->why[PSC_GPUMAP_DMABUF], PSC_GPUMAP_WHY_LEN) &&
        psc__gpumap_trial(ctx, gpu, PSC_GPUMAP_DMABUF, r->why[PSC_GPUMAP_DMABUF], PSC_GPUMAP_WHY_LEN);
    r->usable[PSC_GPUMAP_COHERENT] =
        psc__gpumap_coherent_ready(ctx, gpu, r->why[PSC_GPUMAP_COHERENT], PSC_GPUMAP_WHY_LEN) &&
        psc__gpumap_trial(ctx, gpu, PSC_GPUMAP_COHERENT, r->why[PSC_GPUMAP_COHERENT], PSC_GPUMAP_WHY_LEN);
    for (int b = 0; b < PSC_GPUMAP_BACKENDS; b++)
        if (r->usable[b])
            r->why[b][0] = '\0';
}

psc_status_t psc_gpumap_probe(psc_context_t *ctx, int gpu, psc_gpumap_report_t *out)
{
    psc_gpumap_report_t r;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_gpumap_probe: no place for the report (accepted: a "
                         "psc_gpumap_report_t *)");
    if (!psc__valid_gpu(ctx, gpu))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_gpumap_probe: GPU %d does not exist (accepted: 0..%d)", gpu,
                         ctx->ndev - 1);
    psc__guard_enter(ctx);
    psc__gpumap_probe(ctx, gpu, &r);
    st = psc__guard_leave(ctx, PSC_OK);
    if (st == PSC_OK)
        *out = r;
    return st;
}
