/*
 * The gdrcopy backend: libgdrapi pins the range (a BAR1 mapping through
 * gdrdrv, or from gdrcopy 2.6 its own dma-buf fallback) and maps it; the CPU
 * address of the range's start is gdr_map's address plus start's distance
 * from the pinned (page-aligned) address gdr_get_info reports.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpumap/gpumap.h"

static psc_status_t psc__gdr_fail(char *why, size_t len, psc_status_t st, const char *fmt, const char *call, int err,
                                  const struct psc_gpumap *m)
{
    char e[96];

    snprintf(why, len, fmt, call, psc__gdr_errno_text(err, e, sizeof(e)), m->len, (unsigned long long)m->start);
    return st;
}

/*
 * The context's libgdrapi and gdr_t, loaded and opened at its first gdrcopy map and kept until the context
 * closes: a map then costs a pin and a mapping, not a dlopen and an open of gdrdrv (map_cost_gpumap times
 * it), and the context's one-thread rule covers gdrcopy's handle, which has no lock of its own. A failure
 * is not kept: the next map tries again.
 */
static psc_status_t psc__gdr_ctx_get(psc_context_t *ctx, struct psc__gdr_ctx **out, char *why, size_t len)
{
    struct psc__gdr_ctx *s = ctx->gdr;
    psc_status_t st;

    if (!s) {
        if (!(s = calloc(1, sizeof(*s)))) {
            snprintf(why, len, "out of host memory");
            return PSC_ERR_NO_MEMORY;
        }
        if ((st = psc__gdrapi_load(&s->api, why, len)) != PSC_OK) {
            free(s);
            return st;
        }
        if (!(s->g = psc__gdrapi_open(&s->api, why, len))) {
            psc__gdrapi_unload(&s->api);
            free(s);
            return PSC_ERR_UNSUPPORTED;
        }
        ctx->gdr = s;
        psc__context_on_close(ctx, PSC__CLOSE_GDR, psc__gpumap_gdr_close);
    }
    *out = s;
    return PSC_OK;
}

void psc__gpumap_gdr_close(psc_context_t *ctx)
{
    if (!ctx->gdr)
        return;
    ctx->gdr->api.close(ctx->gdr->g);
    psc__gdrapi_unload(&ctx->gdr->api);
    free(ctx->gdr);
    ctx->gdr = NULL;
}

psc_status_t psc__gpumap_gdr_map(psc_context_t *ctx, struct psc_gpumap *m, char *why, size_t len)
{
    struct psc__gdr_ctx *s;
    psc_gdr_info_t info;
    psc_status_t st;
    void *va = NULL;
    int rc;

    if ((st = psc__gdr_ctx_get(ctx, &s, why, len)) != PSC_OK)
        return st;
    if ((rc = s->api.pin(s->g, (unsigned long)m->start, m->len, 0, 0, &m->mh)) != 0)
        /* gdrdrv answers ENOMEM (or EINVAL from nvidia_p2p_get_pages) when BAR1 is full; gdrcopy's dma-buf
           fallback ENOTSUP (or the kernel's 524) where this GPU exports no dma-buf */
        return psc__gdr_fail(why, len, rc == ENOMEM || rc == ENOSPC ? PSC_ERR_NO_MEMORY : PSC_ERR_UNSUPPORTED,
                             rc == ENOTSUP || rc == 524
                                 ? "%s failed: %s, pinning %zu bytes at 0x%llx (this GPU's memory cannot be pinned "
                                   "this way: gdrcopy's dma-buf fallback needs a GPU that exports dma-bufs)"
                                 : "%s failed: %s, pinning %zu bytes at 0x%llx (BAR1 exhausted, or not cuMemAlloc "
                                   "memory)",
                             "gdr_pin_buffer", rc, m);
    memset(&info, 0, sizeof(info));
    if ((rc = s->api.get_info(s->g, m->mh, &info)) != 0) {
        st = psc__gdr_fail(why, len, PSC_ERR_DRIVER, "%s failed: %s, after pinning %zu bytes at 0x%llx",
                           "gdr_get_info_v2", rc, m);
        goto err_unpin;
    }
    if (info.va > m->start || info.mapped_size < m->len || info.va + info.mapped_size < m->start + m->len) {
        snprintf(why, len, "gdr_get_info_v2 reports %llu bytes pinned at 0x%llx, which do not cover the %zu bytes "
                 "at 0x%llx asked for", (unsigned long long)info.mapped_size, (unsigned long long)info.va, m->len,
                 (unsigned long long)m->start);
        st = PSC_ERR_DRIVER;
        goto err_unpin;
    }
    if ((rc = s->api.map(s->g, m->mh, &va, (size_t)info.mapped_size)) != 0 || !va) {
        st = psc__gdr_fail(why, len, PSC_ERR_UNSUPPORTED, "%s failed: %s, mapping %zu bytes at 0x%llx",
                           "gdr_map", rc ? rc : EFAULT, m);
        goto err_unpin;
    }
    m->gdr = s;
    m->gdr_va = va;
    m->gdr_len = (size_t)info.mapped_size;
    m->base = (unsigned char *)va + (m->start - info.va);
    /* The mapping's type is known once mapped: write-combined, caching (coherent platforms) or device
       (uncached, not combined: not write-combined either, as psc_gpumap_wc says). */
    m->wc = s->api.get_info(s->g, m->mh, &info) != 0 || info.mapping_type == PSC_GDR_MAPPING_WC;
    return PSC_OK;

err_unpin:
    s->api.unpin(s->g, m->mh);
    return st;
}

psc_status_t psc__gpumap_gdr_unmap(struct psc_gpumap *m, char *why, size_t len)
{
    struct psc__gdr_ctx *s = m->gdr;
    char e[96];
    int rc = 0, r;

    if (m->gdr_va && (r = s->api.unmap(s->g, m->mh, m->gdr_va, m->gdr_len)) != 0 && !rc)
        snprintf(why, len, "gdr_unmap failed: %s", psc__gdr_errno_text(rc = r, e, sizeof(e)));
    if ((r = s->api.unpin(s->g, m->mh)) != 0 && !rc)
        snprintf(why, len, "gdr_unpin_buffer failed: %s", psc__gdr_errno_text(rc = r, e, sizeof(e)));
    m->gdr_va = NULL;
    m->gdr = NULL;
    return rc ? PSC_ERR_DRIVER : PSC_OK;
}

void psc__gpumap_gdr_report(psc_gpumap_report_t *r)
{
    psc_gdrapi_t api;
    psc_gdr_t g;
    char why[PSC_GPUMAP_WHY_LEN];
    int major = 0, minor = 0, v = 0;

    if (psc__gdrapi_load(&api, why, sizeof(why)) != PSC_OK)
        return;
    r->gdr_lib_version = api.version;
    if ((g = psc__gdrapi_open(&api, why, sizeof(why)))) {
        /* the backend first: gdrcopy 2.6 asserts a gdrdrv descriptor in gdr_driver_get_version, and has none
           where gdr_open fell back to dma-buf (no module): asking it there would abort the process */
        if (api.get_attribute && api.get_attribute(g, PSC_GDR_ATTR_USING_DMA_BUF_MMAP, &v) == 0)
            r->gdr_dmabuf = v != 0;
        if (!r->gdr_dmabuf && api.driver_version(g, &major, &minor) == 0 && major >= 0 && minor >= 0)
            r->gdr_drv_version = PSC_GDR_VERSION(major, minor);
        api.close(g);
    }
    psc__gdrapi_unload(&api);
}
