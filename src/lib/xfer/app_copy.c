/*
 * psc_copy: an application's bytes moved by the fastest route, queued on its
 * stream. The hot path remembers what the driver said of each buffer (per
 * thread, checked on every call by the buffer's id and access, so a buffer
 * freed and another at its address is looked up again) and the route chosen
 * for each recent copy, and touches the calling thread's current context only
 * where the stream's GPU is not current, to put it back.
 */
#include "xfer/app_copy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PSC_ATTR_COUNT 8

unsigned psc__app_copy_blocks(const psc_context_t *ctx, int g, uint64_t n)
{
    uint64_t sms = ctx->info[g].sm_count > 0 ? (uint64_t)ctx->info[g].sm_count : 16;
    uint64_t cap = sms * (2048 / PSC_APP_COPY_THREADS), want = (n + 16 * PSC_APP_COPY_THREADS - 1) / (16 * PSC_APP_COPY_THREADS);

    return (unsigned)(want < 1 ? 1 : want > cap ? cap : want);
}

/*
 * The GPU whose primary context the stream belongs to (made ready for
 * launches). *moved: the current context may have changed (a GPU set up).
 */
static psc_status_t psc__stream_gpu(psc_context_t *ctx, CUstream stream, int *gpu, int *moved)
{
    CUcontext c = NULL;

    if (!ctx->cu.p_cuPointerGetAttributes || !ctx->cu.p_cuStreamGetCtx)
        return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "the driver lacks cuStreamGetCtx or cuPointerGetAttributes "
                                                   "(accepted: a driver of CUDA 9.2 or newer)");
    if (ctx->cu.p_cuStreamGetCtx(stream, &c) == CUDA_SUCCESS && c) /* a GPU set up already: no more to do */
        for (int i = 0; i < ctx->ndev; i++)
            if (ctx->gpu[i].ready && ctx->gpu[i].ctx == c) {
                *gpu = i;
                return PSC_OK;
            }
    *moved = 1;
    return psc__gpu_of_stream(ctx, stream, gpu);
}

/* What the driver says of one buffer, as one context sees it: the endpoint and what identifies its allocation. */
typedef struct {
    psc_endpoint_t e;
    uintptr_t start, size;  /* the allocation's range; size 0 when the driver did not say */
    unsigned long long id;  /* CU_POINTER_ATTRIBUTE_BUFFER_ID: never the same for two allocations; 0 unknown */
} psc_ptr_facts_t;

/* What the driver knows of the n bytes at p, as the current context (the stream GPU's) sees them. */
static psc_status_t psc__endpoint(psc_context_t *ctx, const void *p, uint64_t n, const char *role, psc_ptr_facts_t *f)
{
    /* the last two need an address in this context: asked again without them where there is none */
    CUpointer_attribute at[PSC_ATTR_COUNT] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,     CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                              CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                              CU_POINTER_ATTRIBUTE_IS_MANAGED,       CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                              CU_POINTER_ATTRIBUTE_ACCESS_FLAGS,     CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
    uint64_t v[PSC_ATTR_COUNT] = {0}; /* 8 bytes for each, whatever width the driver writes */
    void *data[PSC_ATTR_COUNT];
    CUdeviceptr ptr = (CUdeviceptr)(uintptr_t)p;
    unsigned type = 0, managed = 0, access = 0;
    int ordinal = -1;
    CUresult rc;

    for (int i = 0; i < PSC_ATTR_COUNT; i++)
        data[i] = &v[i];
    v[1] = (uint64_t)(uint32_t)-1;
    rc = ctx->cu.p_cuPointerGetAttributes(PSC_ATTR_COUNT, at, data, ptr);
    if (rc != CUDA_SUCCESS) { /* no kernel address in this context: ask again for the rest */
        memset(v, 0, sizeof(v));
        v[1] = (uint64_t)(uint32_t)-1;
        rc = ctx->cu.p_cuPointerGetAttributes(PSC_ATTR_COUNT - 2, at, data, ptr);
    }
    if (rc != CUDA_SUCCESS)
        return psc__cu_result(ctx, rc, "cuPointerGetAttributes");
    memcpy(&type, &v[0], sizeof(type));
    memcpy(&ordinal, &v[1], sizeof(ordinal));
    memcpy(&managed, &v[4], sizeof(managed));
    memcpy(&access, &v[6], sizeof(access));
    if (type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_HOST && !managed)
        return psc__fail(ctx, PSC_ERR_INVALID,
                         "the %s %p is not memory CUDA knows: pageable host memory, freed, or not an address "
                         "(accepted: device, pinned, mapped, registered or managed memory; psc_mem_alloc makes it)",
                         role, p);
    if (v[3] && (ptr < v[2] || ptr - v[2] > v[3] || n > v[3] - (ptr - v[2])))
        return psc__fail(ctx, PSC_ERR_INVALID,
                         "the %s range (%llu B from %p) runs past the end of its allocation (%llu B from 0x%llx)",
                         role, (unsigned long long)n, p, (unsigned long long)v[3], (unsigned long long)v[2]);
    f->e.managed = managed != 0;
    f->e.where = type == CU_MEMORYTYPE_DEVICE ? ordinal : PSC_HOST;
    if (f->e.where != PSC_HOST && !psc__valid_gpu(ctx, f->e.where))
        return psc__fail(ctx, PSC_ERR_INVALID, "the %s %p is memory of a GPU this context does not use (accepted: 0..%d)",
                         role, p, ctx->ndev - 1);
    f->e.access = access;
    f->e.dptr = (CUdeviceptr)v[7];
    f->start = (uintptr_t)v[2];
    f->size = v[3] && ptr >= v[2] ? (uintptr_t)v[3] : 0;
    f->id = v[5];
    return PSC_OK;
}

/* ---------------------------------------------------------------- what psc_copy remembers, per thread */

/*
 * Buffers seen lately, by the context that looked (the stream GPU's) and the
 * allocation's range. An entry is used only after the driver says the address
 * is still in the same allocation (its buffer id, unique in the process) with
 * the same access (peer access and cuMemSetAccess change it in place): one
 * query of two attributes where a lookup asks eight and, where the address has
 * no mapping here, asks twice.
 */
#define PSC_MEMO_PTRS 16
typedef struct {
    CUcontext view;         /* NULL: a free slot */
    psc_ptr_facts_t f;
    int64_t delta;          /* the kernel address minus the caller's (0 under UVA); f.e.dptr 0: none */
    unsigned long long used;
} psc_ptr_memo_t;

/*
 * Copies made lately: the plan for these arguments, made while both buffers had
 * these ids and access, with this calibration. Plans that look at the far GPU
 * (a hop might win) are not kept: its view is read again each call.
 *
 * A kept plan that is the driver's own call (cuMemcpyAsync on the caller's
 * stream) is used again without asking the driver anything of the buffers:
 * that call is right whatever the addresses are now (the driver finds both
 * ends and refuses what is no memory), so a stale plan can only be slower
 * than a new one, never wrong. Only a kernel's plan depends on the facts (the
 * addresses its GPU uses, its access): it is used again only after both
 * buffers' ids and access are confirmed. A plan that took the copy engine for
 * want of peer access is confirmed too, so peer access turned on is seen.
 */
#define PSC_MEMO_PLANS 8
typedef struct {
    const psc_context_t *ctx; /* NULL: a free slot */
    const psc_calibration_t *cal;
    unsigned gen;
    CUstream stream;
    int stream_gpu;
    const void *dst, *src;
    uint64_t n;
    unsigned long long dst_id, src_id;
    unsigned dst_access, src_access;
    unsigned long long used;
    psc_copy_plan_t plan;
} psc_plan_memo_t;

/*
 * The thread's last copy, in one cache line: the same arguments again go
 * straight to the driver. A copy engine's call on a stream the caller made is
 * the caller's own call and asks nothing first (a stream destroyed and another
 * made at its handle then gets the same call, the bytes right, the route the
 * old stream's until the arguments change); otherwise the stream's GPU's
 * context must be current, and a kernel's buffers (or those of a copy engine
 * taken for want of peer access) unchanged. On one H100 (2026-12-08,
 * docs/RESULTS.md) asking cuCtxGetCurrent and cuStreamGetCtx first cost
 * +0.05-0.07 us (medians) above a 2 us GPU -> host cuMemcpyAsync, psc_copy
 * 0.96-1.00x the driver; without them +0.00 us, 0.99-1.00x.
 */
typedef struct {
    const psc_context_t *ctx; /* NULL: none */
    const psc_calibration_t *cal;
    const void *dst, *src;
    uint64_t n;
    CUstream stream;
    CUcontext gpu_ctx;        /* the stream GPU's, current when it was kept */
    unsigned gen;
    psc_engine_t engine;      /* the copy engine (cuMemcpyAsync on the caller's addresses) or the SM kernel */
    int confirm;              /* both buffers' ids and access asked each call (a kernel's plan, or one for want of
                               * peer access): as the kept plans are */
    unsigned long long dst_id, src_id;
    unsigned dst_access, src_access;
    CUdeviceptr kd, ks;       /* the kernel's addresses */
    CUfunction fn;            /* the kernel: 16-byte words (with a repeat count) or bytes */
    unsigned blocks;
    int words;
} psc_copy_hot_t;

static _Thread_local psc_copy_hot_t psc__copy_hot __attribute__((aligned(64)));
static _Thread_local psc_ptr_memo_t psc__ptr_memo[PSC_MEMO_PTRS];
static _Thread_local psc_plan_memo_t psc__plan_memo[PSC_MEMO_PLANS];
static _Thread_local unsigned long long psc__memo_clock;
static unsigned psc__memo_gen; /* bumped when a context's routes change (a calibration loaded or put back) */

void psc__copy_memo_forget(void)
{
    __atomic_add_fetch(&psc__memo_gen, 1, __ATOMIC_RELAXED);
}

/* The context is closing: a context made later at this address must not match what psc_copy kept. */
static void psc__copy_memo_close(psc_context_t *ctx)
{
    (void)ctx;
    psc__copy_memo_forget();
}

/* Buffer p's id and access as the current context sees them: 1 when they are still `id` and `access`. */
static int psc__copy_hot_same(psc_context_t *ctx, const void *p, unsigned long long id, unsigned access)
{
    CUpointer_attribute at[2] = {CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_ACCESS_FLAGS};
    uint64_t v[2] = {0, 0};
    void *data[2] = {&v[0], &v[1]};
    unsigned now = 0;

    if (ctx->cu.p_cuPointerGetAttributes(2, at, data, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS)
        return 0;
    memcpy(&now, &v[1], sizeof(now));
    return v[0] == id && now == access;
}

/* A stream the caller made: not NULL, CU_STREAM_LEGACY or CU_STREAM_PER_THREAD (the current context's). */
static int psc__stream_made(CUstream s)
{
    return s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD;
}

/* 1 when the thread's last copy was these arguments, and it was queued again (the driver said yes). */
static int psc__copy_hot_again(psc_context_t *ctx, void *dst, const void *src, size_t n, CUstream stream)
{
    psc_copy_hot_t *h = &psc__copy_hot;
    CUcontext cur = NULL;
    CUresult rc;

    if (h->ctx != ctx || h->dst != dst || h->src != src || h->n != n || h->stream != stream ||
        h->cal != ctx->copy_cal || h->gen != __atomic_load_n(&psc__memo_gen, __ATOMIC_RELAXED))
        return 0;
    if (h->engine == PSC_ENGINE_CE && !h->confirm && psc__stream_made(stream)) {
        /* the caller's own call on the caller's own stream, whatever context is current (the driver takes a
         * copy on a stream of another GPU as it would from the caller): no query before it, the ~0.03 us each of
         * cuCtxGetCurrent and cuStreamGetCtx were most of what psc_copy cost above it; a refusal goes the full
         * way, which makes the stream's context current */
        if (ctx->cu.p_cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n, stream) ==
            CUDA_SUCCESS)
            return 1;
        h->ctx = NULL;
        return 0;
    }
    /* the stream GPU's context current: the NULL, legacy and per-thread streams are then that GPU's; a kernel on
     * a stream of another context the driver refuses (psc_copy then goes the full way), a copy engine's copy it
     * takes as the caller's */
    if (ctx->cu.p_cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != h->gpu_ctx ||
        (h->confirm && (!psc__copy_hot_same(ctx, src, h->src_id, h->src_access) ||
                        !psc__copy_hot_same(ctx, dst, h->dst_id, h->dst_access)))) {
        h->ctx = NULL; /* the full path looks again */
        return 0;
    }
    if (h->engine == PSC_ENGINE_CE) {
        rc = ctx->cu.p_cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n, stream);
    } else {
        CUdeviceptr d = h->kd, s = h->ks;
        uint64_t bytes = n;
        unsigned reps = 1;
        void *words[] = {&d, &s, &bytes, &reps}, *plain[] = {&d, &s, &bytes};

        rc = ctx->cu.p_cuLaunchKernel(h->fn, h->blocks, 1, 1, PSC_APP_COPY_THREADS, 1, 1, 0, stream,
                                      h->words ? words : plain, NULL);
    }
    if (rc != CUDA_SUCCESS) {
        h->ctx = NULL; /* the full path queues it again, and says why where the driver refuses */
        return 0;
    }
    return 1;
}

/* The endpoint at p for n bytes, from the memo when the driver confirms it, else looked up and remembered. */
static psc_status_t psc__endpoint_memo(psc_context_t *ctx, CUcontext view, const void *p, uint64_t n, const char *role,
                                       psc_ptr_facts_t *f)
{
    uintptr_t a = (uintptr_t)p;
    psc_ptr_memo_t *m = NULL, *slot = &psc__ptr_memo[0];
    psc_status_t st;

    for (int i = 0; i < PSC_MEMO_PTRS; i++) {
        psc_ptr_memo_t *k = &psc__ptr_memo[i];

        if (k->view == view && view && a >= k->f.start && a - k->f.start < k->f.size) {
            m = k;
            break;
        }
        if (k->used < slot->used)
            slot = k;
    }
    if (m) {
        CUpointer_attribute at[2] = {CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_ACCESS_FLAGS};
        uint64_t v[2] = {0, 0};
        void *data[2] = {&v[0], &v[1]};
        unsigned access = 0;

        if (ctx->cu.p_cuPointerGetAttributes(2, at, data, (CUdeviceptr)a) == CUDA_SUCCESS) {
            memcpy(&access, &v[1], sizeof(access));
            if (v[0] == m->f.id && access == m->f.e.access &&
                (m->f.e.where == PSC_HOST || psc__valid_gpu(ctx, m->f.e.where))) {
                if (n > m->f.size - (a - m->f.start))
                    return psc__fail(ctx, PSC_ERR_INVALID, "the %s range (%llu B from %p) runs past the end of its "
                                     "allocation (%llu B from 0x%llx)", role, (unsigned long long)n, p,
                                     (unsigned long long)m->f.size, (unsigned long long)m->f.start);
                *f = m->f;
                f->e.dptr = m->f.e.dptr ? (CUdeviceptr)(a + (uintptr_t)m->delta) : 0;
                m->used = ++psc__memo_clock;
                return PSC_OK;
            }
        }
        m->view = NULL; /* another allocation now, or other access: forgotten, looked up again */
        slot = m;
    }
    if ((st = psc__endpoint(ctx, p, n, role, f)) != PSC_OK)
        return st;
    if (view && f->id && f->size) {
        slot->view = view;
        slot->f = *f;
        slot->delta = f->e.dptr ? (int64_t)(f->e.dptr - (CUdeviceptr)a) : 0;
        slot->used = ++psc__memo_clock;
    }
    return PSC_OK;
}

/* The plan kept for these arguments whatever the buffers are now, NULL when there is none. */
static psc_plan_memo_t *psc__plan_memo_args(const psc_context_t *ctx, const void *dst, const void *src, uint64_t n,
                                            CUstream stream, int stream_gpu, unsigned gen)
{
    for (int i = 0; i < PSC_MEMO_PLANS; i++) {
        psc_plan_memo_t *k = &psc__plan_memo[i];

        if (k->ctx == ctx && k->dst == dst && k->src == src && k->n == n && k->stream == stream &&
            k->stream_gpu == stream_gpu && k->cal == ctx->copy_cal && k->gen == gen)
            return k;
    }
    return NULL;
}

/* 1 when a kept plan may be used without confirming its buffers: the driver's call, nothing faster held back. */
static int psc__plan_unchecked_ok(const psc_copy_plan_t *p)
{
    return p->route.engine == PSC_ENGINE_CE && !p->route.hop && !p->route.peer_off;
}

/* Forget the kept plan at `plan` (the driver refused it: the buffers are looked at again). */
static void psc__plan_memo_drop(const psc_copy_plan_t *plan)
{
    for (int i = 0; i < PSC_MEMO_PLANS; i++)
        if (&psc__plan_memo[i].plan == plan)
            psc__plan_memo[i].ctx = NULL;
}

/* The plan kept for these arguments and these buffers, NULL when there is none. */
static psc_plan_memo_t *psc__plan_memo_find(const psc_context_t *ctx, const psc_copy_path_t *p, unsigned long long did,
                                            unsigned long long sid, const void *dst, const void *src, CUstream stream,
                                            unsigned gen)
{
    for (int i = 0; i < PSC_MEMO_PLANS; i++) {
        psc_plan_memo_t *k = &psc__plan_memo[i];

        if (k->ctx == ctx && k->dst == dst && k->src == src && k->n == p->n && k->stream == stream &&
            k->stream_gpu == p->stream_gpu && k->cal == ctx->copy_cal && k->gen == gen && k->dst_id == did &&
            k->src_id == sid && k->dst_access == p->dst.access && k->src_access == p->src.access) {
            k->used = ++psc__memo_clock;
            return k;
        }
    }
    return NULL;
}

static void psc__plan_memo_keep(const psc_context_t *ctx, const psc_copy_plan_t *plan, unsigned long long did,
                                unsigned long long sid, const void *dst, const void *src, unsigned gen)
{
    psc_plan_memo_t *slot = psc__plan_memo_args(ctx, dst, src, plan->n, plan->stream, plan->path.stream_gpu, gen);

    if (!slot) { /* the same arguments' plan replaced, else the oldest */
        slot = &psc__plan_memo[0];
        for (int i = 1; i < PSC_MEMO_PLANS; i++)
            if (psc__plan_memo[i].used < slot->used)
                slot = &psc__plan_memo[i];
    }
    *slot = (psc_plan_memo_t){ctx, ctx->copy_cal, gen, plan->stream, plan->path.stream_gpu, dst, src, plan->n, did,
                              sid, plan->path.dst.access, plan->path.src.access, ++psc__memo_clock, *plan};
}

/* The far GPU's view of both ends: what its SMs may do with them (queried in its context, then the stream GPU's again). */
static psc_status_t psc__far_view(psc_context_t *ctx, const void *dst, const void *src, psc_copy_path_t *p)
{
    CUpointer_attribute at[2] = {CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
    const void *ptr[2] = {src, dst};
    psc_endpoint_t *e[2] = {&p->far_src, &p->far_dst};
    psc_status_t st;

    if ((st = PSC_CU(ctx, cuCtxSetCurrent, (ctx->gpu[p->far].ctx))) != PSC_OK)
        return st;
    for (int k = 0; k < 2; k++) {
        uint64_t v[2] = {0, 0};
        void *data[2] = {&v[0], &v[1]};
        unsigned access = 0;

        *e[k] = k ? p->dst : p->src;
        if (ctx->cu.p_cuPointerGetAttributes(2, at, data, (CUdeviceptr)(uintptr_t)ptr[k]) != CUDA_SUCCESS)
            v[0] = v[1] = 0; /* no address in the far GPU's context: its SMs cannot reach these bytes */
        memcpy(&access, &v[0], sizeof(access));
        e[k]->access = access;
        e[k]->dptr = (CUdeviceptr)v[1];
    }
    p->far_aligned = ((p->far_src.dptr | p->far_dst.dptr) & 15) == 0;
    return PSC_CU(ctx, cuCtxSetCurrent, (ctx->gpu[p->stream_gpu].ctx));
}

/*
 * Why a hop to GPU `far` cannot be queued on `stream` now; NULL when it can.
 * The far GPU's hop stream joins the capture of the first captured stream
 * that hops there and stays in it until that capture ends: meanwhile only
 * copies of that same capture may use it (anything else would merge two
 * graphs or wait on an uncaptured event, which the driver refuses).
 */
static const char *psc__hop_blocked(psc_context_t *ctx, CUstream stream, int far)
{
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE, hs = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t cid = 0, hid = 0;
    CUstream hop = ctx->gpu[far].hop_stream;

    if (!ctx->cu.p_cuStreamGetCaptureInfo)
        return "the driver lacks cuStreamGetCaptureInfo, so a capture could not be told apart";
    if (ctx->cu.p_cuStreamGetCaptureInfo(stream, &cs, &cid, NULL, NULL, NULL) != CUDA_SUCCESS ||
        (hop && ctx->cu.p_cuStreamGetCaptureInfo(hop, &hs, &hid, NULL, NULL, NULL) != CUDA_SUCCESS))
        return "the driver could not tell whether the streams are being captured";
    if (cs == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
        return "the stream's graph capture is invalidated";
    if (hs == CU_STREAM_CAPTURE_STATUS_NONE || (hs == CU_STREAM_CAPTURE_STATUS_ACTIVE &&
                                                cs == CU_STREAM_CAPTURE_STATUS_ACTIVE && hid == cid))
        return NULL;
    return "the far GPU's hop stream is in another graph capture until that capture ends";
}

/* One psc__copy_plan_at call's arguments, and what it learns of its two buffers. */
typedef struct {
    void *dst;
    const void *src;
    uint64_t n;
    CUstream stream;
    unsigned flags;
    unsigned gen; /* the kept plans' generation when the call began */
    int keep;     /* the plan may be looked up and kept (PSC_PLAN_MEMO, and no far GPU's view) */
    psc_ptr_facts_t fs, fd;
} psc__plan_call_t;

/* What no plan is made for: a NULL address, or source and destination overlapping. */
static psc_status_t psc__plan_args_check(psc_context_t *ctx, const void *dst, const void *src, uint64_t n)
{
    uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;

    if (!dst || !src)
        return psc__fail(ctx, PSC_ERR_INVALID, "the %s address is NULL (accepted: device or page-locked host memory)",
                         dst ? "source" : "destination");
    if (d >= s ? d - s < n : s - d < n)
        return psc__fail(ctx, PSC_ERR_INVALID, "source and destination overlap (%p and %p, %llu B; accepted: apart)", src,
                         dst, (unsigned long long)n);
    return PSC_OK;
}

/*
 * The stream's GPU (*g), its context made current. From here the current context may move (a GPU set up in the
 * stream lookup, the stream GPU's made current): *changed says so, and what to put back is what could be read, NULL
 * included (the stack was empty); nothing when it could not be read.
 */
static psc_status_t psc__plan_stream_gpu(psc_context_t *ctx, CUstream stream, int *g, CUcontext *restore, int *changed)
{
    psc_status_t st;
    int moved = 0;

    *restore = NULL;
    if (ctx->cu.p_cuCtxGetCurrent(restore) != CUDA_SUCCESS) {
        *restore = NULL;
        if ((st = psc__stream_gpu(ctx, stream, g, changed)) != PSC_OK)
            return st;
        *changed = 0;
        return PSC_CU(ctx, cuCtxSetCurrent, (ctx->gpu[*g].ctx));
    }
    st = psc__stream_gpu(ctx, stream, g, &moved);
    *changed = moved;
    if (st != PSC_OK)
        return st;
    if (moved || *restore != ctx->gpu[*g].ctx) {
        *changed = 1;
        return PSC_CU(ctx, cuCtxSetCurrent, (ctx->gpu[*g].ctx));
    }
    return PSC_OK;
}

/* Both ends as the stream GPU's context (view) sees them, into q's facts and the path (asked, or kept ones). */
static psc_status_t psc__plan_endpoints(psc_context_t *ctx, CUcontext view, psc__plan_call_t *q, psc_copy_path_t *path)
{
    psc_status_t st;

    if (q->keep) {
        if ((st = psc__endpoint_memo(ctx, view, q->src, q->n, "source", &q->fs)) != PSC_OK ||
            (st = psc__endpoint_memo(ctx, view, q->dst, q->n, "destination", &q->fd)) != PSC_OK)
            return st;
    } else if ((st = psc__endpoint(ctx, q->src, q->n, "source", &q->fs)) != PSC_OK ||
               (st = psc__endpoint(ctx, q->dst, q->n, "destination", &q->fd)) != PSC_OK) {
        return st;
    }
    path->src = q->fs.e;
    path->dst = q->fd.e;
    path->aligned = ((path->src.dptr | path->dst.dptr) & 15) == 0;
    return PSC_OK;
}

/*
 * The far GPU's view, where a hop through it is worth asking about: only where the calibration says it wins (or the
 * call asks), and only to a GPU already set up: setting one up allocates, which a graph capture forbids.
 */
static psc_status_t psc__plan_far(psc_context_t *ctx, psc__plan_call_t *q, psc_copy_path_t *path, int *changed)
{
    int g = path->stream_gpu;
    int far = path->src.where >= 0 && path->src.where != g ? path->src.where
              : path->dst.where >= 0 && path->dst.where != g ? path->dst.where
                                                             : -1;

    if (far < 0 || !ctx->gpu[far].ready ||
        !((q->flags & PSC_PLAN_FAR) || psc__route_far_worth(ctx->copy_cal, path, far)))
        return PSC_OK;
    path->far = far;
    q->keep = 0; /* the far GPU's view is read again each call */
    *changed = 1;
    return psc__far_view(ctx, q->dst, q->src, path);
}

/* The calibration's route for the path; a hop that cannot be queued now gives way to the best route without one. */
static void psc__plan_route(psc_context_t *ctx, const psc__plan_call_t *q, psc_copy_path_t *path,
                            psc_copy_plan_t *plan)
{
    int explain = (q->flags & PSC_PLAN_EXPLAIN) != 0;
    const char *no;

    psc__route_choose(ctx->copy_cal, path, &plan->route, explain);
    if (!plan->route.hop || !(no = psc__hop_blocked(ctx, q->stream, path->far)))
        return;
    /* the best route that does not hop, and why not the hop */
    path->far = -1;
    psc__route_choose(ctx->copy_cal, path, &plan->route, explain);
    if (explain) {
        size_t used = strlen(plan->route.why);

        snprintf(plan->route.why + used, sizeof(plan->route.why) - used, "; no hop: %s", no);
    }
}

/*
 * The plan for copying n bytes from src to dst on stream: *use is the plan to run, a kept one (PSC_PLAN_MEMO) or
 * *plan made now; the stream GPU's context is made current (*restore and *changed say what to put back).
 */
psc_status_t psc__copy_plan_at(psc_context_t *ctx, void *dst, const void *src, uint64_t n, CUstream stream,
                               unsigned flags, psc_copy_plan_t *plan, const psc_copy_plan_t **use, CUcontext *restore,
                               int *changed)
{
    psc__plan_call_t q; /* its facts are asked only where needed */
    psc_copy_path_t path;
    psc_plan_memo_t *m;
    psc_status_t st;
    int g = -1;

    q.dst = dst;
    q.src = src;
    q.n = n;
    q.stream = stream;
    q.flags = flags;
    q.gen = __atomic_load_n(&psc__memo_gen, __ATOMIC_RELAXED);
    q.keep = (flags & PSC_PLAN_MEMO) != 0;
    *changed = 0;
    *use = plan;
    psc__context_on_close(ctx, PSC__CLOSE_COPY_MEMO, psc__copy_memo_close); /* the plans kept name ctx */
    if ((st = psc__plan_args_check(ctx, dst, src, n)) != PSC_OK ||
        (st = psc__plan_stream_gpu(ctx, stream, &g, restore, changed)) != PSC_OK)
        return st;
    /* the driver's call kept for these arguments: no question about the buffers (see above) */
    if (q.keep && (m = psc__plan_memo_args(ctx, dst, src, n, stream, g, q.gen)) && psc__plan_unchecked_ok(&m->plan)) {
        m->used = ++psc__memo_clock;
        *use = &m->plan;
        return PSC_OK;
    }
    memset(&path, 0, sizeof(path));
    path.stream_gpu = g;
    path.n = n;
    path.far = -1;
    if ((st = psc__plan_endpoints(ctx, ctx->gpu[g].ctx, &q, &path)) != PSC_OK)
        return st;
    if (q.keep && q.fs.id && q.fd.id &&
        (m = psc__plan_memo_find(ctx, &path, q.fd.id, q.fs.id, dst, src, stream, q.gen))) {
        *use = &m->plan;
        return PSC_OK;
    }
    if (!(flags & PSC_PLAN_NO_FAR) && (st = psc__plan_far(ctx, &q, &path, changed)) != PSC_OK)
        return st;
    psc__plan_route(ctx, &q, &path, plan);
    plan->path = path;
    plan->n = n;
    plan->stream = stream;
    plan->caller_d = (CUdeviceptr)(uintptr_t)dst;
    plan->caller_s = (CUdeviceptr)(uintptr_t)src;
    psc__copy_plan_force(plan, plan->route.engine, plan->route.issuer);
    if (q.keep && q.fs.id && q.fd.id && !plan->route.hop)
        psc__plan_memo_keep(ctx, plan, q.fd.id, q.fs.id, dst, src, q.gen);
    return PSC_OK;
}

psc_status_t psc__copy_plan(psc_context_t *ctx, void *dst, const void *src, uint64_t n, CUstream stream, unsigned flags,
                            psc_copy_plan_t *plan, CUcontext *restore, int *changed)
{
    const psc_copy_plan_t *use;
    return psc__copy_plan_at(ctx, dst, src, n, stream, flags & ~PSC_PLAN_MEMO, plan, &use, restore, changed);
}

int psc__copy_plan_force(psc_copy_plan_t *plan, psc_engine_t engine, int issuer)
{
    const psc_copy_path_t *p = &plan->path;
    int far = issuer != p->stream_gpu;

    if (far && (issuer != p->far || p->far < 0))
        return 0; /* not a GPU this path can hop to, or its view was not looked at */
    if (engine == PSC_ENGINE_SM && !psc__route_sm_ok(p, issuer))
        return 0;
    plan->route.engine = engine;
    plan->route.issuer = issuer;
    plan->route.hop = far;
    plan->d = engine != PSC_ENGINE_SM ? plan->caller_d : far ? p->far_dst.dptr : p->dst.dptr;
    plan->s = engine != PSC_ENGINE_SM ? plan->caller_s : far ? p->far_src.dptr : p->src.dptr;
    return 1;
}

/* The copy itself on stream `st` of its issuing GPU (that GPU's context current). */
static psc_status_t psc__copy_issue(psc_context_t *ctx, const psc_copy_plan_t *plan, CUstream st)
{
    const psc_route_t *r = &plan->route;
    psc_gpu_t *g = &ctx->gpu[r->issuer];
    CUdeviceptr d = plan->d, s = plan->s;
    uint64_t n = plan->n;
    unsigned reps = 1, blocks = psc__app_copy_blocks(ctx, r->issuer, n);

    /* The copy engine by cuMemcpyAsync on every path, between GPUs too: the driver finds both ends from the
     * addresses (UVA), the call can be captured into a graph (cuMemcpyPeerAsync cannot: the driver refuses it
     * and invalidates the capture), and it needs none of the facts psc_copy may have remembered. */
    if (r->engine == PSC_ENGINE_CE)
        return PSC_CU(ctx, cuMemcpyAsync, (d, s, n, st));
    if (((d | s) & 15) == 0) {
        void *params[] = {&d, &s, &n, &reps};

        return psc__launch_on(ctx, st, g->fn_copy, blocks, PSC_APP_COPY_THREADS, params);
    }
    {
        void *params[] = {&d, &s, &n};

        return psc__launch_on(ctx, st, g->fn_copy_bytes, blocks, PSC_APP_COPY_THREADS, params);
    }
}

/*
 * A hop: the far GPU copies on its hop stream after the work queued so far on
 * the caller's stream, and the caller's stream goes on after the copy. Events
 * order it, so it is captured into a graph like any cross-stream work. Once
 * the hop stream waits, it is joined back even when the copy fails: a capture
 * is never left with a stream that did not rejoin.
 */
static psc_status_t psc__copy_hop(psc_context_t *ctx, const psc_copy_plan_t *plan)
{
    int s = plan->route.stream_gpu, i = plan->route.issuer;
    psc_gpu_t *sg = &ctx->gpu[s], *ig = &ctx->gpu[i];
    psc_status_t st;
    CUresult rc, back;
    const char *call = "cuEventRecord";

    if ((!sg->hop_fork || !ig->hop_stream || !ig->hop_join) &&
        ((st = psc__gpu_hop_ready(ctx, s)) != PSC_OK || (st = psc__gpu_hop_ready(ctx, i)) != PSC_OK ||
         (st = psc__gpu_use(ctx, s)) != PSC_OK))
        return st;
    if ((st = PSC_CU(ctx, cuEventRecord, (sg->hop_fork, plan->stream))) != PSC_OK ||
        (st = PSC_CU(ctx, cuCtxSetCurrent, (ig->ctx))) != PSC_OK)
        return st;
    if ((st = PSC_CU(ctx, cuStreamWaitEvent, (ig->hop_stream, sg->hop_fork, 0))) != PSC_OK) {
        ctx->cu.p_cuCtxSetCurrent(sg->ctx);
        return st;
    }
    st = psc__copy_issue(ctx, plan, ig->hop_stream);
    /* the join, whatever the copy did; its own failure reported only where the copy went well */
    rc = ctx->cu.p_cuEventRecord(ig->hop_join, ig->hop_stream);
    back = ctx->cu.p_cuCtxSetCurrent(sg->ctx);
    if (rc == CUDA_SUCCESS && (back == CUDA_SUCCESS || plan->stream)) { /* NULL: the current context's stream */
        rc = ctx->cu.p_cuStreamWaitEvent(plan->stream, ig->hop_join, 0);
        call = "cuStreamWaitEvent";
    }
    if (rc == CUDA_SUCCESS && back != CUDA_SUCCESS) {
        rc = back;
        call = "cuCtxSetCurrent";
    }
    if (st == PSC_OK && rc != CUDA_SUCCESS)
        st = psc__cu_result(ctx, rc, call);
    return st;
}

psc_status_t psc__copy_plan_enqueue(psc_context_t *ctx, const psc_copy_plan_t *plan)
{
    if (plan->route.hop)
        return psc__copy_hop(ctx, plan);
    return psc__copy_issue(ctx, plan, plan->stream);
}

/* Put the caller's current context back; a failure only where nothing else failed first. */
static psc_status_t psc__copy_restore(psc_context_t *ctx, psc_status_t st, CUcontext restore, int changed)
{
    CUcontext now = NULL;

    if (!changed || (ctx->cu.p_cuCtxGetCurrent(&now) == CUDA_SUCCESS && now == restore))
        return st;
    if (ctx->cu.p_cuCtxSetCurrent(restore) != CUDA_SUCCESS && st == PSC_OK)
        return psc__fail(ctx, PSC_ERR_DRIVER, "the caller's current CUDA context not made current again");
    return st;
}

/*
 * Keep the copy just queued as the thread's last, where it went from the
 * stream GPU's own context without a hop: the driver's call as it is, a
 * kernel's plan (or one for want of peer access) with its buffers' ids and
 * access, to be confirmed each call as a kept plan is.
 */
static void psc__copy_hot_keep(psc_context_t *ctx, const void *dst, const void *src, const psc_copy_plan_t *use,
                               int changed, unsigned gen)
{
    const psc_route_t *r = &use->route;
    const psc_plan_memo_t *m = NULL;
    psc_copy_hot_t h;

    psc__copy_hot.ctx = NULL;
    if (changed || r->hop || r->issuer != r->stream_gpu)
        return;
    memset(&h, 0, sizeof(h));
    if (!psc__plan_unchecked_ok(use)) { /* the kept plan's facts, asked again each call */
        if (!(m = psc__plan_memo_args(ctx, dst, src, use->n, use->stream, r->stream_gpu, gen)))
            return;
        h.confirm = 1;
        h.dst_id = m->dst_id;
        h.src_id = m->src_id;
        h.dst_access = m->dst_access;
        h.src_access = m->src_access;
    } else if (use->caller_d != use->d || use->caller_s != use->s) {
        return;
    }
    h.engine = r->engine;
    if (r->engine == PSC_ENGINE_SM) {
        h.kd = use->d;
        h.ks = use->s;
        h.words = ((use->d | use->s) & 15) == 0;
        h.fn = h.words ? ctx->gpu[r->issuer].fn_copy : ctx->gpu[r->issuer].fn_copy_bytes;
        h.blocks = psc__app_copy_blocks(ctx, r->issuer, use->n);
    }
    h.ctx = ctx;
    h.cal = ctx->copy_cal;
    h.dst = dst;
    h.src = src;
    h.n = use->n;
    h.stream = use->stream;
    h.gpu_ctx = ctx->gpu[r->stream_gpu].ctx;
    h.gen = gen;
    psc__copy_hot = h;
}

psc_status_t psc_copy(psc_context_t *ctx, void *dst, const void *src, size_t n, struct CUstream_st *stream)
{
    const psc_copy_plan_t *use;
    psc_copy_plan_t plan;
    CUcontext restore = NULL;
    int changed = 0;
    unsigned gen;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!n || psc__copy_hot_again(ctx, dst, src, n, (CUstream)stream))
        return PSC_OK;
    gen = __atomic_load_n(&psc__memo_gen, __ATOMIC_RELAXED);
    st = psc__copy_plan_at(ctx, dst, src, n, (CUstream)stream, PSC_PLAN_MEMO, &plan, &use, &restore, &changed);
    if (st == PSC_OK) {
        changed |= use->route.hop; /* a hop makes the far GPU's context current on the way */
        st = psc__copy_plan_enqueue(ctx, use);
        if (st == PSC_OK)
            psc__copy_hot_keep(ctx, dst, src, use, changed, gen);
        if (st != PSC_OK && use != &plan && psc__plan_unchecked_ok(use)) {
            /* a kept driver's call refused: the buffers changed (freed, say); looked at again, and the error said
             * from what they are now */
            CUcontext now = NULL; /* what the first look made current: the caller's stays the one to put back */
            int again = 0;

            psc__plan_memo_drop(use);
            st = psc__copy_plan_at(ctx, dst, src, n, (CUstream)stream, PSC_PLAN_MEMO, &plan, &use, &now, &again);
            changed |= again;
            if (st == PSC_OK) {
                changed |= use->route.hop;
                st = psc__copy_plan_enqueue(ctx, use);
            }
        }
    }
    return psc__copy_restore(ctx, st, restore, changed);
}

/* ---------------------------------------------------------------- a prepared copy */

/* psc_copy_prepare's and psc_copy_route's arguments: a context, a place for the answer (no_out says it is
 * missing), and bytes to copy (zero says there are none). */
static psc_status_t psc__copy_args(psc_context_t *ctx, const char *call, const void *out, const char *no_out,
                                   size_t n, const char *zero)
{
    if (!ctx)
        return PSC_ERR_INVALID;
    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: %s", call, no_out);
    if (!n)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: %s", call, zero);
    return PSC_OK;
}

struct psc_copy_prep {
    psc_context_t *ctx;
    CUcontext gpu_ctx; /* the stream GPU's, current while the copy is queued (but a driver's copy on a made stream) */
    psc_copy_plan_t plan;
};

psc_status_t psc_copy_prepare(psc_context_t *ctx, void *dst, const void *src, size_t n, struct CUstream_st *stream,
                              psc_copy_prep_t **out)
{
    const psc_copy_plan_t *use;
    psc_copy_prep_t *p;
    CUcontext restore = NULL;
    int changed = 0;
    psc_status_t st;

    if ((st = psc__copy_args(ctx, "psc_copy_prepare", out, "no place for the prepared copy given", n,
                             "0 bytes (accepted: 1 B or more)")) != PSC_OK)
        return st;
    if (!(p = calloc(1, sizeof(*p))))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "psc_copy_prepare: out of host memory");
    /* no hop: whether the far GPU's hop stream is free depends on the captures under way when it runs */
    st = psc__copy_plan_at(ctx, dst, src, n, (CUstream)stream, PSC_PLAN_NO_FAR, &p->plan, &use, &restore, &changed);
    st = psc__copy_restore(ctx, st, restore, changed);
    if (st != PSC_OK) {
        free(p);
        return st;
    }
    p->ctx = ctx;
    p->gpu_ctx = ctx->gpu[p->plan.path.stream_gpu].ctx;
    *out = p;
    return PSC_OK;
}

psc_status_t psc_copy_run(psc_context_t *ctx, const psc_copy_prep_t *prep)
{
    CUcontext cur = NULL;
    psc_status_t st;
    int readable;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!prep || prep->ctx != ctx)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_copy_run: %s (accepted: one psc_copy_prepare made with this context)",
                         prep ? "a copy prepared with another context" : "no prepared copy given");
    if (prep->plan.route.engine == PSC_ENGINE_CE && psc__stream_made(prep->plan.stream)) { /* (never a hop) */
        /* as psc_copy's kept call: the driver's, whatever context is current; refused, it is made again from the
         * stream's GPU's context where that was not current, else the refusal is said */
        CUresult rc = ctx->cu.p_cuMemcpyAsync(prep->plan.d, prep->plan.s, prep->plan.n, prep->plan.stream);

        if (rc == CUDA_SUCCESS)
            return PSC_OK;
        if ((readable = ctx->cu.p_cuCtxGetCurrent(&cur) == CUDA_SUCCESS) && cur == prep->gpu_ctx)
            return psc__cu_result(ctx, rc, "cuMemcpyAsync");
    } else if ((readable = ctx->cu.p_cuCtxGetCurrent(&cur) == CUDA_SUCCESS) && cur == prep->gpu_ctx) {
        return psc__copy_plan_enqueue(ctx, &prep->plan);
    }
    if ((st = PSC_CU(ctx, cuCtxSetCurrent, (prep->gpu_ctx))) != PSC_OK)
        return st;
    st = psc__copy_plan_enqueue(ctx, &prep->plan);
    return psc__copy_restore(ctx, st, cur, readable);
}

void psc_copy_prep_free(psc_copy_prep_t *prep)
{
    free(prep);
}

psc_status_t psc_copy_route(psc_context_t *ctx, const void *dst, const void *src, size_t n, struct CUstream_st *stream,
                            psc_route_t *out)
{
    psc_copy_plan_t plan;
    CUcontext restore = NULL;
    int changed = 0;
    psc_status_t st;

    if ((st = psc__copy_args(ctx, "psc_copy_route", out, "no place for the route (accepted: a psc_route_t)", n,
                             "0 bytes take no route (accepted: 1 B or more)")) != PSC_OK)
        return st;
    st = psc__copy_plan(ctx, (void *)dst, src, n, (CUstream)stream, PSC_PLAN_EXPLAIN, &plan, &restore, &changed);
    st = psc__copy_restore(ctx, st, restore, changed);
    if (st == PSC_OK)
        *out = plan.route;
    return st;
}
