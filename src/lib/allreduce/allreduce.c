/*
 * psc_allreduce_*: groups of GPUs summing buffers with the one-shot kernel
 * and two-shot kernels (src/kernels/psc_allreduce*.cuh). Each rank's GPU holds
 * its rotating buffers (ar_args.h says how they are laid out) and control words. Here: groups of GPUs of this process
 * (the peers write through peer access, which stays on while the group
 * lives) and the calls every group takes; allreduce_join.c makes groups of
 * processes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allreduce/allreduce.h"
#include "allreduce/ar_args.h"
#include "allreduce/ar_group.h"

#define PSC__AR_TIMEOUT_MS 10000u

uint64_t psc__ar_slot_bytes(uint64_t max_bytes)
{
    uint64_t b = (max_bytes + 15) / 16 * 16;

    return b < PSC__AR_SLOT_MAX ? b : PSC__AR_SLOT_MAX;
}

uint64_t psc__ar_buffer_bytes(psc_allreduce_t *ar)
{
    ar->part_bytes = ((ar->slot_bytes + (uint64_t)ar->n - 1) / (uint64_t)ar->n + 15) / 16 * 16;
    ar->ce_off = (uint64_t)PSC_AR_BUFS * (uint64_t)ar->n * (ar->slot_bytes + 2 * ar->part_bytes);
    ar->ce_chunk_max = psc__ar_ce_chunk(ar->n, ar->max_bytes);
    ar->ag_off = ar->ce_off + psc__ar_ce_region(ar->n, ar->ce_chunk_max);
    ar->ag_slot = 2 * (ar->slot_bytes < PSC__AR_AG_PIECE_MAX ? ar->slot_bytes : PSC__AR_AG_PIECE_MAX);
    return ar->ag_off + (uint64_t)PSC_AR_BUFS * (uint64_t)ar->n * ar->ag_slot;
}

/*
 * The way for a call of `bytes`: forced (tests), else as `way` says (the tuning's choice, or the way it times:
 * PSC__AR_ONESHOT the kernels, PSC__AR_COPY the copy engines; 0 neither), else by size: over 2 ranks the copy
 * engines for large calls, over 3 or more the two-shot kernel for large calls; else the one-shot. Never the copy
 * engines for a captured call of several local ranks (captured: psc__ar_captured), forced or not: the kernels by
 * size instead.
 */
static int psc__ar_algo(const psc_allreduce_t *ar, uint64_t bytes, int way, int captured)
{
    const int ce = ar->ce_chunk && !captured;

    if (ar->algo && (ar->algo != PSC__AR_COPY || ce))
        return ar->algo;
    if (way == PSC__AR_COPY && ce)
        return PSC__AR_COPY;
    if (way != PSC__AR_ONESHOT && ar->n == 2 && ce && bytes >= PSC__AR_CE_FROM)
        return PSC__AR_COPY;
    return ar->n >= 3 && bytes >= PSC__AR_TWOSHOT_MIN ? PSC__AR_TWOSHOT : PSC__AR_ONESHOT;
}

/*
 * 1 where a call of a group of several local ranks is being captured into graphs (any rank's stream; also
 * where the driver cannot say): then it goes by the kernels, one launch per rank, never by the copy engines.
 * Each local rank's stream is captured into a graph of its own, and a caller launches those graphs in turn
 * from one thread: on the copy-engine path each graph holds some 5 operations per chunk on three streams (512
 * MiB in 1 MiB chunks: 2560 per call), every one of them waiting on the other GPU, and a launch that the
 * driver cannot queue in full does not return until that GPU makes progress, which needs the next graph's
 * launch: the first GPU's kernels wait for the other's data in vain until the timeout. Eager calls interleave
 * the ranks chunk by chunk (psc__ar_ce_sum) and never wait so; a joined group's processes launch their own
 * graphs. One launch per call and rank is what the one-shot and two-shot kernels make.
 */
static int psc__ar_captured(const psc_allreduce_t *ar, struct CUstream_st *const *streams)
{
    psc_context_t *ctx = ar->ctx;

    if (ar->nlocal < 2 || ar->ce_captured || !ar->ce_chunk)
        return 0;
    if (!ctx->cu.p_cuStreamGetCaptureInfo)
        return 1;
    for (int i = 0; i < ar->nlocal; i++) {
        CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
        cuuint64_t id = 0;

        if (ctx->cu.p_cuStreamGetCaptureInfo(streams[i], &cs, &id, NULL, NULL, NULL) != CUDA_SUCCESS ||
            cs != CU_STREAM_CAPTURE_STATUS_NONE)
            return 1;
    }
    return 0;
}

/* Another live group of ctx that has both GPUs in this process, or NULL. */
static psc_allreduce_t *psc__ar_other_user(const psc_allreduce_t *ar, int ga, int gb, int *ia, int *ib)
{
    for (psc_allreduce_t *o = ar->ctx->allreduces; o; o = o->next) {
        *ia = *ib = -1;
        for (int i = 0; o != ar && i < o->nlocal; i++) {
            if (o->dev[i] == ga)
                *ia = i;
            if (o->dev[i] == gb)
                *ib = i;
        }
        if (o != ar && *ia >= 0 && *ib >= 0)
            return o;
    }
    return NULL;
}

/*
 * A joined group's buffers: the peers' imports closed first; then, where the processes are in step, a
 * meeting (nobody's own buffers go while another process still has them open: CUDA leaves freeing an
 * exported allocation before its importers closed it undefined); then this process's own, or (keep_own,
 * where the others may not be in step) left to the context, which frees it at its end.
 */
static void psc__ar_release_shares(psc_allreduce_t *ar)
{
    for (int r = 0; r < ar->n; r++)
        if (ar->share[r] && r != ar->first) {
            psc_share_free(ar->share[r]);
            ar->share[r] = NULL;
        }
    if (ar->joined && ar->meet && ar->n > 1 && !ar->keep_own) {
        int32_t mine = 0, all[PSC_AR_MAX_RANKS];

        if (ar->procs.allgather(&mine, all, sizeof(mine), ar->procs.arg) != 0) {
            psc__log(ar->ctx, PSC_LOG_WARN, "psc_allreduce_destroy: the processes' allgather failed: this process's "
                     "buffers are left to the context");
            ar->keep_own = 1;
        }
    }
    if (!ar->keep_own)
        psc_share_free(ar->share[ar->first]);
    ar->share[ar->first] = NULL;
}

static void psc__ar_release(psc_allreduce_t *ar)
{
    psc_context_t *ctx = ar->ctx;

    psc__ar_release_shares(ar);
    for (int i = 0; i < ar->nlocal; i++) {
        if (psc__gpu_use(ctx, ar->dev[i]) != PSC_OK)
            continue;
        if (!ar->joined && ar->lbuf[i])
            ctx->cu.p_cuMemFree(ar->lbuf[i]);
        if (ar->ctrl[i])
            ctx->cu.p_cuMemFree(ar->ctrl[i]);
        ar->ctrl[i] = 0;
        psc__ar_ce_release(ar, i);
    }
    memset(ar->lbuf, 0, sizeof(ar->lbuf));
    for (int a = 0; a < ar->nlocal; a++)
        for (int b = 0; b < ar->nlocal; b++) {
            psc_allreduce_t *o;
            int was, ia, ib;

            /* the caller had it off: off again, unless another group still writes through it (it inherits the duty) */
            if (ar->peer_was[a][b] == 0 && (o = psc__ar_other_user(ar, ar->dev[a], ar->dev[b], &ia, &ib)))
                o->peer_was[ia][ib] = 0;
            else if (ar->peer_was[a][b] == 0)
                psc__gpu_peer_switch(ctx, ar->dev[a], ar->dev[b], 0, &was);
            ar->peer_was[a][b] = -1;
        }
}

psc_status_t psc__ar_fill(psc_context_t *ctx, int gpu, CUdeviceptr p, uint64_t bytes)
{
    uint64_t words = bytes / 4;
    unsigned value = PSC_AR_SENTINEL;
    void *params[] = {&p, &words, &value};
    psc_status_t st;

    if ((st = psc__launch(ctx, gpu, ctx->gpu[gpu].fn_ar_fill, psc__grid_blocks(ctx, gpu), 256, params)) != PSC_OK)
        return st;
    return PSC_CU(ctx, cuStreamSynchronize, (ctx->gpu[gpu].stream));
}

psc_status_t psc__ar_ctrl_alloc(psc_allreduce_t *ar, int i)
{
    psc_context_t *ctx = ar->ctx;
    psc_ar_ctrl_t zero;
    psc_status_t st;

    memset(&zero, 0, sizeof(zero));
    if ((st = psc__gpu_use(ctx, ar->dev[i])) != PSC_OK)
        return st;
    if (ctx->cu.p_cuMemAlloc(&ar->ctrl[i], sizeof(psc_ar_ctrl_t)) != CUDA_SUCCESS) {
        ar->ctrl[i] = 0;
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "psc_allreduce: %zu B of control words on GPU %d do not fit",
                         sizeof(psc_ar_ctrl_t), ar->dev[i]);
    }
    if ((st = PSC_CU(ctx, cuMemcpyHtoD, (ar->ctrl[i], &zero, sizeof(zero)))) != PSC_OK)
        return st;
    return psc__ar_ce_setup(ar, i);
}

/* Rank i's buffers and control words on its GPU, the buffers all sentinel. */
static psc_status_t psc__ar_alloc(psc_allreduce_t *ar, int i)
{
    psc_context_t *ctx = ar->ctx;
    uint64_t bytes = psc__ar_buffer_bytes(ar);
    psc_status_t st;

    if ((st = psc__ar_ctrl_alloc(ar, i)) != PSC_OK)
        return st;
    if (ctx->cu.p_cuMemAlloc(&ar->lbuf[i], (size_t)bytes) != CUDA_SUCCESS) {
        ar->lbuf[i] = 0;
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "psc_allreduce_create: %llu B of buffers on GPU %d do not fit: "
                         "accepted a smaller max_bytes (the buffers take %d x (ranks + 2) x min(max_bytes, %llu MiB) "
                         "+ %d x ranks x min(max_bytes, %llu MiB) per GPU, and %llu MiB more from %llu MiB on)",
                         (unsigned long long)bytes, ar->dev[i], PSC_AR_BUFS, PSC__AR_SLOT_MAX >> 20,
                         2 * PSC_AR_BUFS, PSC__AR_AG_PIECE_MAX >> 20,
                         (PSC_AR_CE_SLOTS * PSC__AR_CE_CHUNK) >> 20, PSC__AR_CE_FROM >> 20);
    }
    return psc__ar_fill(ctx, ar->dev[i], ar->lbuf[i], bytes);
}

void psc__ar_link(psc_allreduce_t *ar)
{
    psc_context_t *ctx = ar->ctx;

    ar->next = ctx->allreduces;
    if (ctx->allreduces)
        ctx->allreduces->prev = ar;
    ctx->allreduces = ar;
    psc__context_on_close(ctx, PSC__CLOSE_ALLREDUCE, psc__allreduce_destroy_all);
}

void psc__ar_free(psc_allreduce_t *ar)
{
    psc_context_t *ctx = ar->ctx;

    psc__guard_enter(ctx);
    psc__ar_release(ar);
    psc__guard_leave(ctx, PSC_OK);
    free(ar);
}

/* Peer access from every rank's GPU to every other's, noting how the caller had it. */
static psc_status_t psc__ar_peers(psc_allreduce_t *ar)
{
    psc_context_t *ctx = ar->ctx;

    for (int a = 0; a < ar->n; a++)
        for (int b = 0; b < ar->n; b++) {
            int can = 0, was = 0;

            if (a == b)
                continue;
            if (ctx->cu.p_cuDeviceCanAccessPeer(&can, ctx->gpu[ar->dev[a]].dev, ctx->gpu[ar->dev[b]].dev) !=
                    CUDA_SUCCESS ||
                !can)
                return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "psc_allreduce_create: GPU %d cannot reach GPU %d's memory "
                                 "(no peer access): accepted GPUs with peer access between every pair (p2pscope topo "
                                 "shows which)", ar->dev[a], ar->dev[b]);
            if (psc__gpu_peer_switch(ctx, ar->dev[a], ar->dev[b], 1, &was) != PSC_OK) {
                char why[sizeof(ctx->last_error)];

                memcpy(why, ctx->last_error, sizeof(why)); /* the record is rewritten below */
                return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "psc_allreduce_create: peer access from GPU %d to GPU %d "
                                 "could not be turned on: %.300s", ar->dev[a], ar->dev[b], why);
            }
            ar->peer_was[a][b] = (signed char)was;
        }
    return PSC_OK;
}

psc_status_t psc_allreduce_create(psc_context_t *ctx, const int *devices, int ndev, size_t max_bytes,
                                  psc_allreduce_t **out)
{
    psc_allreduce_t *ar;
    psc_status_t st = PSC_OK;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!out || !devices || ndev < 1 || ndev > PSC_AR_MAX_RANKS)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_allreduce_create: accepted 1 to %d GPUs and a place for the group",
                         PSC_AR_MAX_RANKS);
    if (max_bytes < 16 || max_bytes > PSC__AR_MAX_BYTES)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_allreduce_create: max_bytes %zu: accepted 16 B to 1 TiB",
                         max_bytes);
    for (int i = 0; i < ndev; i++) {
        if (!psc__valid_gpu(ctx, devices[i]))
            return psc__fail(ctx, PSC_ERR_INVALID, "psc_allreduce_create: GPU %d does not exist (accepted 0 to %d)",
                             devices[i], ctx->ndev - 1);
        for (int k = 0; k < i; k++)
            if (devices[k] == devices[i])
                return psc__fail(ctx, PSC_ERR_INVALID, "psc_allreduce_create: GPU %d listed twice (accepted each GPU "
                                 "once: one rank per GPU)", devices[i]);
    }
    if (!(ar = calloc(1, sizeof(*ar))))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    ar->ctx = ctx;
    ar->n = ar->nlocal = ndev;
    memcpy(ar->dev, devices, (size_t)ndev * sizeof(int));
    memset(ar->peer_was, -1, sizeof(ar->peer_was));
    ar->max_bytes = max_bytes;
    ar->sms = 0;
    for (int i = 0; i < ndev; i++) /* the smallest GPU's SM count: every rank's grid the same and resident */
        if (!ar->sms || (unsigned)ctx->info[devices[i]].sm_count < ar->sms)
            ar->sms = ctx->info[devices[i]].sm_count > 0 ? (unsigned)ctx->info[devices[i]].sm_count : 1;
    ar->slot_bytes = psc__ar_slot_bytes(max_bytes);
    psc__guard_enter(ctx);
    for (int i = 0; i < ndev && st == PSC_OK; i++)
        if ((st = psc__gpu_use(ctx, devices[i])) == PSC_OK)
            st = psc__ar_alloc(ar, i);
    if (st == PSC_OK)
        st = psc__ar_peers(ar);
    if (st == PSC_OK)
        psc__ar_ce_agree(ar, 1);
    if (st != PSC_OK)
        psc__ar_release(ar);
    st = psc__guard_leave(ctx, st);
    if (st != PSC_OK) {
        free(ar);
        return st;
    }
    psc__ar_link(ar);
    *out = ar;
    return PSC_OK;
}

/* The GPU of a stream's context, or -1: NULL (a legacy stream) or a stream of no GPU's primary context. */
static int psc__ar_stream_gpu(psc_context_t *ctx, CUstream s)
{
    int g = -1;

    return s && psc__gpu_of_stream(ctx, s, &g) == PSC_OK ? g : -1;
}

/*
 * The vectors (16 B; the all-gather's: lines of 8 data bytes) a kernel's grid is sized for, for a call of bytes
 * by `way` (PSC__AR_ONESHOT, _TWOSHOT, _AG): the first piece's, or the previous call's last piece's (which the call
 * clears) where more; *last: what this call's last piece leaves to clear (the all-gather: the one-shot's, as it was).
 */
static uint64_t psc__ar_work(const psc_allreduce_t *ar, uint64_t bytes, int way, uint64_t *last)
{
    const uint64_t nvec = (bytes + 15) / 16, n = (uint64_t)ar->n;

    if (way == PSC__AR_AG) { /* nothing to clear */
        uint64_t piece = ar->ag_slot / 2;

        *last = ar->last_nvec;
        return ((bytes < piece ? bytes : piece) + PSC_AG_LINE_DATA - 1) / PSC_AG_LINE_DATA;
    }
    if (way == PSC__AR_ONESHOT) {
        uint64_t slot_vec = ar->slot_bytes / 16;

        *last = nvec - (nvec - 1) / slot_vec * slot_vec; /* the last piece's */
        return nvec < slot_vec ? (nvec > ar->last_nvec ? nvec : ar->last_nvec) : slot_vec;
    }
    uint64_t piece = ar->part_bytes * n, lastb = bytes - (bytes - 1) / piece * piece;
    uint64_t first_vec = (((bytes < piece ? bytes : piece) + n - 1) / n + 15) / 16;

    *last = ((lastb + n - 1) / n + 15) / 16; /* the last piece's part */
    return first_vec > ar->last_part_vec ? first_vec : ar->last_part_vec;
}

psc_status_t psc__ar_sum(psc_allreduce_t *ar, void *const *recv, const void *const *send, size_t count, int dtype,
                         struct CUstream_st *const *streams, unsigned timeout_ms, int way)
{
    psc_context_t *ctx = ar->ctx;
    const uint64_t bytes = (uint64_t)count * (dtype == PSC_AR_FLOAT32 ? 4 : 2);
    const uint64_t timeout_ns = (uint64_t)(timeout_ms ? timeout_ms : PSC__AR_TIMEOUT_MS) * 1000000ull;
    /* a reduce-scatter or an all-gather: its kernel or its copy engines, whatever a test forced */
    const int rs = way == PSC__AR_RS || way == PSC__AR_RS_KERNEL || way == PSC__AR_RS_COPY;
    const int ag = way == PSC__AR_AG || way == PSC__AR_AG_KERNEL || way == PSC__AR_AG_COPY;
    int algo = rs || ag ? PSC__AR_ONESHOT : psc__ar_algo(ar, bytes, way, 0);
    uint64_t last_nvec, work;
    unsigned blocks;
    psc_status_t st = PSC_OK;

    if (algo == PSC__AR_COPY && psc__ar_captured(ar, streams)) /* asked only where it matters: a query a rank */
        algo = psc__ar_algo(ar, bytes, way, 1);
    if (ag && psc__ar_part_by_copy(ar, PSC__AR_AG, bytes, way, streams, psc__ar_captured)) {
        psc__guard_enter(ctx);
        st = ar->joined ? psc__ar_ce_sum(ar, recv, send, bytes, dtype, streams, timeout_ns, PSC__AR_AG)
                        : psc__ar_ce_all_gather(ar, recv, send, bytes, streams);
        if (st == PSC_OK)
            ar->last_way = PSC_AR_WAY_COPY_ENGINES;
        return psc__guard_leave(ctx, st);
    }
    if (algo == PSC__AR_COPY || (rs && psc__ar_part_by_copy(ar, PSC__AR_RS, bytes, way, streams, psc__ar_captured))) {
        psc__guard_enter(ctx);
        st = psc__ar_ce_sum(ar, recv, send, bytes, dtype, streams, timeout_ns, rs ? PSC__AR_RS : 0);
        if (st == PSC_OK)
            ar->last_way = PSC_AR_WAY_COPY_ENGINES;
        return psc__guard_leave(ctx, st);
    }
    work = psc__ar_work(ar, bytes, ag ? PSC__AR_AG : algo, &last_nvec);
    /* every rank the same grid (thread t on the same vectors everywhere): from the first piece's vectors and
       the previous call's last (which it clears). (Fewer threads for small calls measured no faster.) */
    blocks = psc__ar_blocks(ar->per_thread > 1 ? (work + ar->per_thread - 1) / ar->per_thread : work, ar->sms);
    psc__guard_enter(ctx);
    for (int i = 0; i < ar->nlocal && st == PSC_OK; i++) {
        psc_ar_args_t a;
        void *params[] = {&a};
        CUfunction fn;

        memset(&a, 0, sizeof(a));
        for (int r = 0; r < ar->n; r++)
            a.lbuf[r] = ar->lbuf[r];
        a.ctrl = ar->ctrl[i];
        a.send = (uint64_t)(uintptr_t)send[i];
        a.recv = (uint64_t)(uintptr_t)recv[i];
        a.count = count;
        a.slot_bytes = ar->slot_bytes;
        a.part_bytes = ar->part_bytes;
        a.timeout_ns = timeout_ns;
        a.ag_off = ar->ag_off;
        a.ag_slot = ar->ag_slot;
        a.nranks = (uint32_t)ar->n;
        a.rank = (uint32_t)(ar->first + i);
        a.dtype = (uint32_t)dtype;
        fn = ag                       ? ctx->gpu[ar->dev[i]].fn_ag_oneshot
             : rs                      ? ctx->gpu[ar->dev[i]].fn_rs_oneshot
             : algo == PSC__AR_ONESHOT ? ctx->gpu[ar->dev[i]].fn_ar_oneshot
                                       : ctx->gpu[ar->dev[i]].fn_ar_twoshot;
        if ((st = psc__gpu_use(ctx, ar->dev[i])) == PSC_OK)
            st = ar->no_early ? psc__launch_on(ctx, streams[i], fn, blocks, PSC_AR_THREADS, params)
                              : psc__launch_early(ctx, ar->dev[i], streams[i], fn, blocks, PSC_AR_THREADS, params);
        if (st != PSC_OK && i > 0) /* the ranks before wait for this one in vain: the group is done */
            snprintf(ar->broken, sizeof(ar->broken), "rank %d's launch failed after ranks %d..%d were enqueued (%.120s)",
                     ar->first + i, ar->first, ar->first + i - 1, ctx->last_error);
    }
    if (st == PSC_OK && !ag) /* what the call leaves its kind's next call to clear (an all-gather: nothing) */
        *(algo == PSC__AR_ONESHOT ? &ar->last_nvec : &ar->last_part_vec) = last_nvec;
    if (st == PSC_OK)
        ar->last_way = algo == PSC__AR_ONESHOT ? PSC_AR_WAY_ONESHOT : PSC_AR_WAY_TWOSHOT;
    return psc__guard_leave(ctx, st);
}

/*
 * The checks of a call's arguments (who: the call's name in messages): the types, the count against the group's
 * slot, each local rank's buffers (16-byte aligned; in place or apart) and stream. kind: PSC__AR_RS a
 * reduce-scatter, whose send holds n parts of count elements and whose in-place recv is this rank's part of it;
 * PSC__AR_AG an all-gather, whose recv holds n parts and whose in-place send is this rank's part of it; else an
 * all-reduce. *es: the type's size.
 */
static psc_status_t psc__ar_call_check(psc_allreduce_t *ar, void *const *recv, const void *const *send, size_t count,
                                       int dtype, struct CUstream_st *const *streams, const char *who, int kind,
                                       size_t *es)
{
    psc_context_t *ctx = ar->ctx;
    const int rs = kind == PSC__AR_RS, ag = kind == PSC__AR_AG;

    *es = dtype == PSC_AR_FLOAT32 ? 4 : dtype == PSC_AR_FLOAT16 || dtype == PSC_AR_BFLOAT16 ? 2 : 0;
    if (ar->broken[0])
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: %s: accepted a new group", who, ar->broken);
    if (!recv || !send || !streams)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: accepted arrays of a recv, send and stream per rank of the group "
                         "in this process", who);
    if (!*es)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: type %d: accepted PSC_AR_FLOAT32, PSC_AR_FLOAT16, "
                         "PSC_AR_BFLOAT16", who, dtype);
    if (count > ar->max_bytes / *es)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: %zu elements of %zu B: accepted up to the group's %llu B%s", who,
                         count, *es, (unsigned long long)ar->max_bytes, rs || ag ? " per part" : "");
    for (int i = 0; i < ar->nlocal; i++) {
        uintptr_t r0 = (uintptr_t)recv[i], s0 = (uintptr_t)send[i], len = (uintptr_t)(count * *es);
        uintptr_t part = len * (uintptr_t)(ar->first + i), n = (uintptr_t)ar->n;
        uintptr_t slen = rs ? len * n : len, rlen = ag ? len * n : len;
        int in_place = rs ? r0 == s0 + part : ag ? s0 == r0 + part : r0 == s0;

        if (!recv[i] || !send[i] || (!in_place && (s0 % 16 || r0 % 16)) || (in_place && (rs ? s0 : r0) % 16))
            return psc__fail(ctx, PSC_ERR_INVALID, "%s: rank %d's buffers: accepted 16-byte aligned device addresses%s",
                             who, ar->first + i, rs ? " (recv: or send's part of this rank, in place)"
                                                 : ag ? " (send: or recv's part of this rank, in place)" : "");
        if (!in_place && r0 < s0 + slen && s0 < r0 + rlen)
            return psc__fail(ctx, PSC_ERR_INVALID, "%s: rank %d's buffers overlap: accepted %s (in place) or apart", who,
                             ar->first + i, rs ? "recv at send's part of this rank"
                                            : ag ? "send at recv's part of this rank" : "the same address");
        if (psc__ar_stream_gpu(ctx, streams[i]) != ar->dev[i])
            return psc__fail(ctx, PSC_ERR_INVALID, "%s: rank %d's stream: accepted a stream of GPU %d's primary "
                             "context (not NULL)", who, ar->first + i, ar->dev[i]);
    }
    return PSC_OK;
}

/* 1 where the tuning sends a call of kind (0 a sum, PSC__AR_RS, PSC__AR_AG) to NCCL, done (*st how it went); else
   *way, the tuning's way for the group's own call (0 where untuned). */
static int psc__ar_to_nccl(psc_allreduce_t *ar, int kind, void *const *recv, const void *const *send, size_t count,
                           int dtype, struct CUstream_st *const *streams, psc_status_t *st, int *way)
{
    if (!ar->tune_route || !ar->tune_route(ar, kind, recv, send, count, dtype, streams, st, way))
        return 0;
    if (*st == PSC_OK)
        ar->last_way = PSC_AR_WAY_NCCL;
    return 1;
}

/*
 * A call of kind (0 a sum, PSC__AR_RS, PSC__AR_AG), named who in messages: its arguments checked, handed to NCCL
 * where the tuning chose it, else enqueued the tuning's way for it (or its kind's by size).
 */
static psc_status_t psc__ar_call(psc_allreduce_t *ar, int kind, const char *who, void *const *recv,
                                 const void *const *send, size_t count, int dtype, struct CUstream_st *const *streams,
                                 unsigned timeout_ms)
{
    size_t es = 0;
    int way = 0;
    psc_status_t st;

    if (!ar)
        return PSC_ERR_INVALID;
    if ((st = psc__ar_call_check(ar, recv, send, count, dtype, streams, who, kind, &es)) != PSC_OK || count == 0 ||
        psc__ar_to_nccl(ar, kind, recv, send, count, dtype, streams, &st, &way))
        return st;
    if (kind && !way) /* a reduce-scatter or an all-gather the tuning left: by size */
        way = kind;
    return psc__ar_sum(ar, recv, send, count, dtype, streams, timeout_ms, way);
}

psc_status_t psc_allreduce_sum(psc_allreduce_t *ar, void *const *recv, const void *const *send, size_t count,
                               int dtype, struct CUstream_st *const *streams, unsigned timeout_ms)
{
    return psc__ar_call(ar, 0, "psc_allreduce_sum", recv, send, count, dtype, streams, timeout_ms);
}

psc_status_t psc_allreduce_reduce_scatter(psc_allreduce_t *ar, void *const *recv, const void *const *send,
                                          size_t count, int dtype, struct CUstream_st *const *streams,
                                          unsigned timeout_ms)
{
    return psc__ar_call(ar, PSC__AR_RS, "psc_allreduce_reduce_scatter", recv, send, count, dtype, streams,
                        timeout_ms);
}

psc_status_t psc_allreduce_all_gather(psc_allreduce_t *ar, void *const *recv, const void *const *send, size_t count,
                                      int dtype, struct CUstream_st *const *streams, unsigned timeout_ms)
{
    return psc__ar_call(ar, PSC__AR_AG, "psc_allreduce_all_gather", recv, send, count, dtype, streams, timeout_ms);
}

int psc_allreduce_last_way(const psc_allreduce_t *ar)
{
    return ar ? ar->last_way : PSC_AR_WAY_NONE;
}

const char *psc_allreduce_way_name(int way)
{
    static const char *const names[] = {NULL, "one-shot", "two-shot", "copy-engines", "nccl"};

    return way > PSC_AR_WAY_NONE && way <= PSC_AR_WAY_NCCL ? names[way] : NULL;
}

psc_status_t psc_allreduce_check(psc_allreduce_t *ar)
{
    psc_context_t *ctx = ar ? ar->ctx : NULL;
    psc_status_t st = PSC_OK;

    if (!ar)
        return PSC_ERR_INVALID;
    psc__guard_enter(ctx);
    for (int i = 0; i < ar->nlocal && st == PSC_OK; i++) {
        psc_ar_ctrl_t c;

        if ((st = psc__gpu_use(ctx, ar->dev[i])) != PSC_OK ||
            (st = PSC_CU(ctx, cuMemcpyDtoH, (&c, ar->ctrl[i], sizeof(c)))) != PSC_OK)
            break;
        if (c.err)
            st = psc__fail(ctx, PSC_ERR_TIMEOUT, "psc_allreduce: rank %d (GPU %d) gave up waiting for rank %u's data "
                           "in call %u: every rank must make the same calls in the same order, one at a time; the "
                           "group must be destroyed", ar->first + i, ar->dev[i], c.err_rank, c.err_seq + 1);
    }
    return psc__guard_leave(ctx, st);
}

void psc_allreduce_destroy(psc_allreduce_t *ar)
{
    psc_context_t *ctx;

    if (!ar)
        return;
    ctx = ar->ctx;
    if (ar->prev)
        ar->prev->next = ar->next;
    else if (ctx->allreduces == ar)
        ctx->allreduces = ar->next;
    if (ar->next)
        ar->next->prev = ar->prev;
    if (ar->tune_free)
        ar->tune_free(ar);
    psc__ar_free(ar);
}

void psc__allreduce_destroy_all(psc_context_t *ctx)
{
    while (ctx->allreduces) {
        ctx->allreduces->keep_own = 1;
        psc_allreduce_destroy(ctx->allreduces);
    }
}

psc_status_t psc__allreduce_force(psc_allreduce_t *ar, int algo)
{
    if (!ar || algo < 0 || algo > PSC__AR_COPY || (algo == PSC__AR_COPY && !ar->ce_chunk))
        return PSC_ERR_INVALID;
    ar->algo = algo;
    return PSC_OK;
}

psc_status_t psc__allreduce_ce_chunk(psc_allreduce_t *ar, uint64_t bytes)
{
    if (!ar || !ar->ce_chunk || bytes < 16 || bytes % 16 || bytes > ar->ce_chunk_max)
        return PSC_ERR_INVALID;
    ar->ce_chunk = bytes;
    return PSC_OK;
}

psc_status_t psc__allreduce_ag_piece(psc_allreduce_t *ar, uint64_t bytes)
{
    if (!ar || bytes < 16 || bytes % 16 || 2 * bytes > ar->ag_slot)
        return PSC_ERR_INVALID;
    ar->ag_slot = 2 * bytes;
    return PSC_OK;
}

psc_status_t psc__allreduce_ce_captured(psc_allreduce_t *ar, int on)
{
    if (!ar)
        return PSC_ERR_INVALID;
    ar->ce_captured = on != 0;
    return PSC_OK;
}

psc_status_t psc__allreduce_per_thread(psc_allreduce_t *ar, unsigned vectors)
{
    if (!ar || vectors < 1 || vectors > 64)
        return PSC_ERR_INVALID;
    ar->per_thread = vectors;
    return PSC_OK;
}

psc_status_t psc__allreduce_early(psc_allreduce_t *ar, int on)
{
    if (!ar || (on != 0 && on != 1))
        return PSC_ERR_INVALID;
    ar->no_early = !on;
    return PSC_OK;
}

psc_status_t psc__allreduce_buffers(const psc_allreduce_t *ar, int rank, uint64_t *lbuf, uint64_t *ctrl,
                                    uint64_t *slot_bytes)
{
    if (!ar || rank < 0 || rank >= ar->n)
        return PSC_ERR_INVALID;
    *lbuf = ar->lbuf[rank];
    *ctrl = rank >= ar->first && rank < ar->first + ar->nlocal ? ar->ctrl[rank - ar->first] : 0;
    *slot_bytes = ar->slot_bytes;
    return PSC_OK;
}
