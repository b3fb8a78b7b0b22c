/*
 * Background traffic for verify: copy-engine copies kept running on the
 * other paths of the machine (host -> each GPU, each GPU -> host, each GPU
 * -> the next) while a path's copies are made and checked, so the checks
 * also cover a busy machine. The load's own bytes are checked too: each
 * destination must equal its source whenever the load settles.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify/load.h"

#define PSC__LOAD_HOST_BYTES (32ull << 20)  /* a copy over PCIe: about 0.6 ms */
#define PSC__LOAD_PEER_BYTES (128ull << 20) /* a copy over NVLink: about 0.35 ms */
#define PSC__LOAD_REPS 4u                   /* copies queued per pump of an idle path */

typedef struct {
    psc_load_path_report_t rep;
    int issuer;
    uint64_t size, seed;
    psc_buffer_t *from, *to;
    CUstream stream;
    unsigned pending; /* copies queued since the destination was last poisoned */
} psc__load_path_t;

struct psc_load {
    psc_context_t *ctx;
    psc_load_t *next;       /* the context's other loads not yet stopped */
    int n;
    psc__load_path_t path[PSC_LOAD_MAX_PATHS];
};

static psc_status_t psc__path_open(psc_load_t *l, int src, int dst, int issuer)
{
    psc_context_t *ctx = l->ctx;
    psc__load_path_t *p = &l->path[l->n];
    int host = src == PSC_HOST || dst == PSC_HOST, node = ctx->info[issuer].numa_node;
    psc_status_t st;

    memset(p, 0, sizeof(*p));
    p->rep.src = src;
    p->rep.dst = dst;
    p->rep.first_bad_offset = -1;
    p->issuer = issuer;
    p->size = host ? PSC__LOAD_HOST_BYTES : PSC__LOAD_PEER_BYTES;
    p->seed = 0x6c6f6164ull ^ psc_pattern_mix((uint64_t)(src + 2), (uint64_t)(dst + 2)); /* "load" */
    l->n++;
    if ((st = psc__buffer_get(ctx, src == PSC_HOST ? PSC_MEM_PINNED : PSC_MEM_DEVICE, src == PSC_HOST ? issuer : src,
                              node, p->size, &p->from)) != PSC_OK ||
        (st = psc__buffer_get(ctx, dst == PSC_HOST ? PSC_MEM_PINNED : PSC_MEM_DEVICE, dst == PSC_HOST ? issuer : dst,
                              node, p->size, &p->to)) != PSC_OK ||
        (st = psc__pattern_fill(ctx, p->from, p->seed)) != PSC_OK ||
        (st = psc__pattern_fill(ctx, p->to, p->seed ^ PSC_POISON_XOR)) != PSC_OK ||
        (st = psc__gpu_use(ctx, issuer)) != PSC_OK)
        return st;
    return PSC_CU(ctx, cuStreamCreate, (&p->stream, CU_STREAM_NON_BLOCKING));
}

static void psc__load_free(psc_load_t *l)
{
    for (psc_load_t **p = &l->ctx->loads; *p; p = &(*p)->next)
        if (*p == l) {
            *p = l->next;
            break;
        }
    for (int i = 0; i < l->n; i++) {
        psc__load_path_t *p = &l->path[i];

        if (p->stream && psc__gpu_use(l->ctx, p->issuer) == PSC_OK) {
            l->ctx->cu.p_cuStreamSynchronize(p->stream);
            l->ctx->cu.p_cuStreamDestroy(p->stream);
        }
        psc__buffer_put(p->from);
        psc__buffer_put(p->to);
    }
    free(l);
}

/* psc_context_destroy with loads not stopped: free them (their handles are then invalid, as documented). */
static void psc__load_free_all(psc_context_t *ctx)
{
    while (ctx->loads)
        psc__load_free(ctx->loads);
}

psc_status_t psc__load_start(psc_context_t *ctx, const int *devices, int ndev, psc_load_t **out)
{
    int d[PSC_MAX_GPUS], n;
    psc_load_t *l;
    psc_status_t st = PSC_OK;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_load_start: no place for the load given");
    if ((n = psc__resolve_devices(ctx, devices, ndev, d, PSC_MAX_GPUS)) < 0) {
        char why[sizeof(ctx->last_error)];

        snprintf(why, sizeof(why), "%s", ctx->last_error); /* which GPU, as psc__resolve_devices recorded it */
        return psc__fail(ctx, PSC_ERR_INVALID, "GPUs for the load: %s", why);
    }
    if (n == 0)
        return psc__fail(ctx, PSC_ERR_INVALID, "no GPU to put the load on");
    if (!(l = calloc(1, sizeof(*l))))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for the background load");
    l->ctx = ctx;
    for (int i = 0; i < n && st == PSC_OK; i++) {
        if ((st = psc__path_open(l, PSC_HOST, d[i], d[i])) == PSC_OK &&
            (st = psc__path_open(l, d[i], PSC_HOST, d[i])) == PSC_OK && n > 1)
            st = psc__path_open(l, d[i], d[(i + 1) % n], d[i]);
    }
    l->next = ctx->loads;
    ctx->loads = l;
    psc__context_on_close(ctx, PSC__CLOSE_LOADS, psc__load_free_all);
    if (st != PSC_OK) {
        psc__load_free(l);
        return st;
    }
    *out = l;
    return PSC_OK;
}

/* Each path of l, its issuer current, through one(): the first error stops the walk. */
static psc_status_t psc__load_each(psc_load_t *l, psc_status_t (*one)(psc_context_t *ctx, psc__load_path_t *p))
{
    if (!l)
        return PSC_OK;
    for (int i = 0; i < l->n; i++) {
        psc__load_path_t *p = &l->path[i];
        psc_status_t st;

        if ((st = psc__gpu_use(l->ctx, p->issuer)) != PSC_OK || (st = one(l->ctx, p)) != PSC_OK)
            return st;
    }
    return PSC_OK;
}

/* A path whose last batch is done gets the next. */
static psc_status_t psc__load_pump_path(psc_context_t *ctx, psc__load_path_t *p)
{
    psc_status_t st;
    CUresult rc = ctx->cu.p_cuStreamQuery(p->stream);

    if (rc == CUDA_ERROR_NOT_READY)
        return PSC_OK; /* still busy with the last batch */
    if (rc != CUDA_SUCCESS)
        return psc__fail(ctx, PSC_ERR_DRIVER, "background copy %d -> %d failed (CUresult %d)", p->rep.src,
                         p->rep.dst, (int)rc);
    for (unsigned k = 0; k < PSC__LOAD_REPS; k++) {
        if (p->rep.src >= 0 && p->rep.dst >= 0)
            st = PSC_CU(ctx, cuMemcpyPeerAsync, (p->to->dptr, ctx->gpu[p->rep.dst].ctx, p->from->dptr,
                                                 ctx->gpu[p->rep.src].ctx, p->size, p->stream));
        else
            st = PSC_CU(ctx, cuMemcpyAsync, (p->to->dptr, p->from->dptr, p->size, p->stream));
        if (st != PSC_OK)
            return st;
        p->pending++;
        p->rep.copies++;
        p->rep.bytes_moved += p->size;
    }
    return PSC_OK;
}

psc_status_t psc__load_pump(psc_load_t *l)
{
    return psc__load_each(l, psc__load_pump_path);
}

/* Fold one check of a load buffer into its path's report. */
static void psc__load_note(psc__load_path_t *p, const psc_check_t *c, uint64_t size)
{
    p->rep.bytes_checked += size;
    psc__check_fold_fields(&p->rep.bad_bytes, &p->rep.first_bad_offset, &p->rep.expected, &p->rep.found, c);
}

/* A path's copies waited for; both buffers checked if it copied since, the destination poisoned again. */
static psc_status_t psc__load_settle_path(psc_context_t *ctx, psc__load_path_t *p)
{
    psc_check_t cd, cs;
    psc_status_t st;

    if ((st = PSC_CU(ctx, cuStreamSynchronize, (p->stream))) != PSC_OK)
        return st;
    if (!p->pending)
        return PSC_OK;
    if ((st = psc__pattern_check(ctx, p->to, p->seed, &cd)) != PSC_OK ||
        (st = psc__pattern_check(ctx, p->from, p->seed, &cs)) != PSC_OK ||
        (st = psc__pattern_fill(ctx, p->to, p->seed ^ PSC_POISON_XOR ^ p->rep.copies)) != PSC_OK)
        return st;
    psc__load_note(p, &cd, p->size);
    psc__load_note(p, &cs, p->size);
    p->pending = 0;
    return PSC_OK;
}

psc_status_t psc__load_settle(psc_load_t *l)
{
    return psc__load_each(l, psc__load_settle_path);
}

int psc_load_report(const psc_load_t *l, psc_load_path_report_t *out, int cap)
{
    for (int i = 0; l && out && i < l->n && i < cap; i++)
        out[i] = l->path[i].rep;
    return l ? l->n : 0;
}

psc_status_t psc__load_stop(psc_load_t *l, psc_load_path_report_t *out, int cap, int *n)
{
    psc_status_t st;

    if (!l)
        return PSC_ERR_INVALID;
    st = psc__load_settle(l);
    if (n)
        *n = psc_load_report(l, out, cap);
    psc__load_free(l);
    return st;
}

psc_context_t *psc__load_context(const psc_load_t *l)
{
    return l ? l->ctx : NULL;
}

psc_status_t psc__load_start_held(psc_context_t *ctx, const int *devices, int ndev, psc_load_t **out)
{
    psc_load_t *load = NULL;
    psc_status_t st;

    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_load_start: no place for the load given");
    psc__guard_enter(ctx);
    st = psc__guard_leave(ctx, psc__load_start(ctx, devices, ndev, &load));
    if (st == PSC_OK) {
        *out = load;
    } else if (load) { /* set up, but the caller's state could not be put back: not handed over */
        psc__guard_enter(ctx);
        psc__guard_leave(ctx, psc__load_stop(load, NULL, 0, NULL));
    }
    return st;
}

psc_status_t psc__load_stop_held(psc_load_t *l, psc_load_path_report_t *out, int cap, int *n)
{
    psc_context_t *ctx = psc__load_context(l);

    psc__guard_enter(ctx);
    return psc__guard_leave(ctx, psc__load_stop(l, out, cap, n));
}
