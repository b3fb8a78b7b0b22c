/*
 * CPU mappings of GPU memory (psc_gpumap_*): the handle, and the backends'
 * entry points. Each backend says whether it can map a GPU's memory (with
 * the reason where not) and maps and unmaps one range; gpumap.c checks the
 * arguments, picks the backend and keeps the context's list.
 */
#ifndef PSC_GPUMAP_GPUMAP_H
#define PSC_GPUMAP_GPUMAP_H

#include <stddef.h>
#include <stdint.h>

#include "gpumap/gdrapi.h"
#include "internal.h"

/* The context's libgdrapi and its gdr_t (gdrcopy's handle): opened once, at the first gdrcopy map. */
struct psc__gdr_ctx {
    psc_gdrapi_t api;
    psc_gdr_t g;
};

struct psc_gpumap {
    psc_context_t *ctx;
    struct psc_gpumap *prev, *next; /* ctx->gpumaps */
    psc_gpumap_backend_t backend;
    int gpu;
    CUdeviceptr dptr;               /* what the caller asked for */
    size_t size;
    CUdeviceptr start;              /* the pinned range: dptr's GPU page ... */
    size_t len;                     /* ... rounded up to whole pages */
    unsigned char *base;            /* the CPU's address of start */
    unsigned long long buffer_id;   /* CU_POINTER_ATTRIBUTE_BUFFER_ID when mapped; 0 unknown */
    int wc;                         /* write-combined */
    /* gdrcopy */
    struct psc__gdr_ctx *gdr;       /* the context's */
    psc_gdr_mh_t mh;
    void *gdr_va;                   /* gdr_map's address and length */
    size_t gdr_len;
    /* dma-buf */
    int fd;
    size_t dmabuf_len;              /* what is exported and mapped: len, within the allocation's host pages */
    CUdeviceptr alloc_end;          /* the end of dptr's allocation */
};

/*
 * psc_gpumap_map without the API guard (its caller keeps the caller's
 * context): the arguments checked, the backends tried; *out only on success.
 */
psc_status_t psc__gpumap_map_in(psc_context_t *ctx, int gpu, uint64_t dptr, size_t size, unsigned backends,
                                psc_gpumap_t **out);

/* Unmap every map of the context not yet unmapped (the context is closing). */
void psc__gpumap_unmap_all(psc_context_t *ctx);

/* What a BAR1 mapping covers and aligns to: the GPU page, or the host page where larger. */
size_t psc__gpumap_page(void);

/* Backend b on m's range (m->gpu, start, len set), BAR1 checked first where it pins: PSC_OK, or a status with why. */
psc_status_t psc__gpumap_try(psc_context_t *ctx, struct psc_gpumap *m, psc_gpumap_backend_t b, char *why,
                             size_t len);
/* Undo psc__gpumap_try's success: PSC_OK, or a status with why. */
psc_status_t psc__gpumap_release(struct psc_gpumap *m, char *why, size_t len);

/*
 * The backends. ready: 1 when the backend may work on GPU `gpu` (what can be
 * known without trying), else 0 with why (the fix said). map: maps the range
 * m->start, m->len (m->gpu's primary context current), filling m->base, m->wc
 * and its own fields; PSC_OK, or a status with why (nothing recorded: the
 * caller records once). unmap: releases what map took without touching the
 * mapped bytes (the memory may be gone); PSC_OK or a status with why.
 */
psc_status_t psc__gpumap_gdr_map(psc_context_t *ctx, struct psc_gpumap *m, char *why, size_t len);
psc_status_t psc__gpumap_gdr_unmap(struct psc_gpumap *m, char *why, size_t len);
/* Close the context's gdr_t and libgdrapi, if opened (every map unmapped first). */
void psc__gpumap_gdr_close(psc_context_t *ctx);
/* libgdrapi's facts for the probe: its version, gdrdrv's, whether it uses its dma-buf fallback. */
void psc__gpumap_gdr_report(psc_gpumap_report_t *r);

int psc__gpumap_dmabuf_ready(psc_context_t *ctx, int gpu, char *why, size_t len);
psc_status_t psc__gpumap_dmabuf_map(psc_context_t *ctx, struct psc_gpumap *m, char *why, size_t len);
psc_status_t psc__gpumap_dmabuf_unmap(struct psc_gpumap *m, char *why, size_t len);

int psc__gpumap_coherent_ready(psc_context_t *ctx, int gpu, char *why, size_t len);
psc_status_t psc__gpumap_coherent_map(psc_context_t *ctx, struct psc_gpumap *m, char *why, size_t len);

/*
 * Whether backend b's mapping takes room in BAR1: the gdrcopy and dma-buf backends on a PCIe GPU; nothing
 * on a coherent platform (the CPU reaches the GPU's memory over its cache-coherent link). Pure.
 */
int psc__gpumap_uses_bar1(psc_gpumap_backend_t b, int coherent);

/* GPU `gpu`'s BAR1 from NVML: 0 with *total and *free in bytes, -1 unknown. */
int psc__gpumap_bar1(const psc_context_t *ctx, int gpu, uint64_t *total, uint64_t *free_bytes);

/*
 * Whether `pinned` bytes fit in a BAR1 with `free_bytes` free of `total`
 * (0, 0: unknown, so they may): 1, or 0 with why (the numbers, the fix).
 * Pure.
 */
int psc__gpumap_bar1_fits(uint64_t pinned, uint64_t total, uint64_t free_bytes, char *why, size_t len);

#endif
