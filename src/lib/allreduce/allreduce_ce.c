/*
 * The all-reduce's copy-engine path, for large calls over two ranks (its
 * kernels: src/kernels/psc_allreduce_ce.cuh; the layout: ar_args.h). SM
 * stores across NVLink reach 366 GB/s each way on H200 where copy engines
 * reach 391, and the kernels' data-as-flag scheme also clears every buffer
 * it used: a pipelined one-shot in kernels measured 229-232 GB/s at 512 MiB.
 * Here each rank's copy engine pushes its input, chunk by chunk, into a slot
 * of every other rank's scratch (on a stream of the library's, forked from
 * the caller's and joined back: the call stays on the caller's stream and is
 * captured into its graph), and marks each chunk sent with a stream write in
 * its own memory (no kernel between two copies, which would stall the copy
 * engine); a kernel on the caller's stream adds each chunk once every other
 * rank marked it (no copy of the sum goes anywhere: each rank adds all, as
 * the one-shot). The slots rotate in two halves: before the copies of a
 * half, a small kernel on a third stream waits until every receiver freed
 * that half (so the copy engine never waits for a kernel's launch). Every
 * wait is a kernel's, with the timeout; stream waits on memory would hang
 * for good when a process dies. With two ranks each link carries each rank's
 * input once, as a ring's reduce-scatter and all-gather do. A reduce-scatter
 * (psc_allreduce_reduce_scatter's large parts) is the same with each peer
 * pushed only its own part, and each rank adding only its own: every part
 * crosses one link once, for any number of ranks. An all-gather of a
 * joined group (whose recv buffers the other processes cannot reach) is
 * the all-reduce's push with a gathering kernel: each chunk of every rank
 * put into its part of recv. Captured calls of
 * several local ranks never come here (psc__ar_captured in allreduce.c: a
 * graph per GPU of some 5 operations per chunk, launched in turn from one
 * thread, can wait for good).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "allreduce/allreduce.h"
#include "allreduce/ar_args.h"
#include "allreduce/ar_group.h"

uint64_t psc__ar_ce_chunk(int n, uint64_t max_bytes)
{
    uint64_t chunk = PSC__AR_CE_CHUNK / (uint64_t)(n > 1 ? n - 1 : 1) / 16 * 16, most = (max_bytes + 15) / 16 * 16;

    if (n < 2 || max_bytes < PSC__AR_CE_FROM)
        return 0;
    return chunk < most ? chunk : most; /* no slot larger than a call */
}

uint64_t psc__ar_ce_region(int n, uint64_t chunk)
{
    return chunk ? PSC_AR_CE_FLAGS + (uint64_t)(n - 1) * PSC_AR_CE_SLOTS * chunk : 0;
}

psc_status_t psc__ar_ce_setup(psc_allreduce_t *ar, int i)
{
    psc_context_t *ctx = ar->ctx;
    psc_status_t st = PSC_OK;

    /* the path is taken only where its region is made and the driver has stream writes (psc__ar_ce_agree) */
    if (!ar->ce_chunk_max || !ctx->cu.p_cuStreamWriteValue32 || !ctx->cu.p_cuStreamWaitEvent)
        return PSC_OK;
    if ((st = psc__gpu_use(ctx, ar->dev[i])) != PSC_OK)
        return st;
    if ((st = PSC_CU(ctx, cuStreamCreate, (&ar->ce_copy[i], CU_STREAM_NON_BLOCKING))) != PSC_OK ||
        (st = PSC_CU(ctx, cuStreamCreate, (&ar->ce_wait[i], CU_STREAM_NON_BLOCKING))) != PSC_OK)
        return st;
    for (int e = 0; e < PSC__AR_CE_EVENTS && st == PSC_OK; e++)
        st = PSC_CU(ctx, cuEventCreate, (&ar->ce_ev[i][e], CU_EVENT_DISABLE_TIMING));
    if (st != PSC_OK)
        return st;
    /* a driver may have the symbol and refuse stream memory operations: one write, waited for, says */
    if (ctx->cu.p_cuStreamWriteValue32(ar->ce_copy[i], ar->ctrl[i] + offsetof(psc_ar_ctrl_t, pad), 0, 0) !=
            CUDA_SUCCESS ||
        ctx->cu.p_cuStreamSynchronize(ar->ce_copy[i]) != CUDA_SUCCESS) {
        psc__log(ctx, PSC_LOG_INFO, "psc_allreduce: GPU %d's driver refused a stream write: no copy-engine path",
                 ar->dev[i]);
        return PSC_OK;
    }
    ar->ce_on[i] = 1;
    return PSC_OK;
}

void psc__ar_ce_agree(psc_allreduce_t *ar, int on_everywhere)
{
    int on = on_everywhere && ar->ce_chunk_max;

    for (int i = 0; i < ar->nlocal; i++)
        on = on && ar->ce_on[i];
    ar->ce_chunk = on ? ar->ce_chunk_max : 0;
}

void psc__ar_ce_release(psc_allreduce_t *ar, int i)
{
    psc_context_t *ctx = ar->ctx;

    for (int e = 0; e < PSC__AR_CE_EVENTS; e++)
        if (ar->ce_ev[i][e])
            ctx->cu.p_cuEventDestroy(ar->ce_ev[i][e]);
    if (ar->ce_copy[i])
        ctx->cu.p_cuStreamDestroy(ar->ce_copy[i]);
    if (ar->ce_wait[i])
        ctx->cu.p_cuStreamDestroy(ar->ce_wait[i]);
    memset(ar->ce_ev[i], 0, sizeof(ar->ce_ev[i]));
    ar->ce_copy[i] = ar->ce_wait[i] = NULL;
    ar->ce_on[i] = 0;
}

/* Event e of local rank i recorded on `from`, waited for on `to`. */
static psc_status_t psc__ar_ce_order(psc_allreduce_t *ar, int i, int e, CUstream from, CUstream to)
{
    psc_context_t *ctx = ar->ctx;
    psc_status_t st;

    if ((st = PSC_CU(ctx, cuEventRecord, (ar->ce_ev[i][e], from))) != PSC_OK)
        return st;
    return PSC_CU(ctx, cuStreamWaitEvent, (to, ar->ce_ev[i][e], 0));
}

/* Chunk c's argument from the call's (a, one local rank's): its slot, its part of the input and output, and for
   the addition, whether its half is free once it is added and whether it is the call's last. */
static psc_ar_ce_args_t psc__ar_ce_at(const psc_allreduce_t *ar, const psc_ar_ce_args_t *a, uint64_t c,
                                      uint64_t chunks, uint64_t bytes)
{
    const uint64_t off = c * ar->ce_chunk;
    const unsigned slot = (unsigned)(c % PSC_AR_CE_SLOTS);
    psc_ar_ce_args_t k = *a;

    k.slot = slot;
    k.send += off;
    k.recv += off;
    k.bytes = bytes - off < ar->ce_chunk ? bytes - off : ar->ce_chunk;
    k.free_half = slot % PSC_AR_CE_HALF == PSC_AR_CE_HALF - 1 || c + 1 == chunks;
    k.last = c + 1 == chunks;
    return k;
}

/* Chunk c (argument k) of local rank i, first part: the wait for its half (if it opens one), its copies and marks.
   part: 0 an all-reduce (every peer gets k->send), else a reduce-scatter's part bytes (peer r gets the chunk of its
   own part, part x (r - rank) bytes from this rank's). */
static psc_status_t psc__ar_ce_push(psc_allreduce_t *ar, int i, psc_ar_ce_args_t *k, uint64_t c, uint64_t part)
{
    psc_context_t *ctx = ar->ctx;
    const int rank = ar->first + i;
    const unsigned slot = k->slot;
    void *params[] = {k};
    psc_status_t st;

    /* a half's wait: after this rank's own last addition of that half in this call (a CUDA-visible mirror of
       what it waits for across GPUs, so a graph's branches in any order cannot wait on each other in a circle),
       then before the half's copies */
    if (slot % PSC_AR_CE_HALF == 0 &&
        ((c >= PSC_AR_CE_SLOTS &&
          (st = PSC_CU(ctx, cuStreamWaitEvent, (ar->ce_wait[i], ar->ce_ev[i][PSC__CE_HALF0 + slot / PSC_AR_CE_HALF],
                                                0))) != PSC_OK) ||
         (st = psc__launch_on(ctx, ar->ce_wait[i], ctx->gpu[ar->dev[i]].fn_ar_ce_wait, 1, 1, params)) != PSC_OK ||
         (st = psc__ar_ce_order(ar, i, PSC__CE_FREED, ar->ce_wait[i], ar->ce_copy[i])) != PSC_OK))
        return st;
    for (int r = 0; r < ar->n; r++)
        if (r != rank &&
            (st = PSC_CU(ctx, cuMemcpyAsync, (ar->lbuf[r] + PSC_AR_CE_SLOT_AT(ar->ce_off, ar->ce_chunk, r, rank, slot),
                                              (CUdeviceptr)(k->send - (uint64_t)rank * part + (uint64_t)r * part),
                                              (size_t)k->bytes, ar->ce_copy[i]))) != PSC_OK)
            return st;
    for (int r = 0; r < ar->n; r++) /* after the copies in the stream: written once they have landed */
        if (r != rank &&
            (st = PSC_CU(ctx, cuStreamWriteValue32, (ar->ce_copy[i], ar->lbuf[rank] + ar->ce_off +
                                                     PSC_AR_CE_SENT(r, slot), PSC_AR_CE_SENT_MARK, 0))) != PSC_OK)
            return st;
    return PSC_CU(ctx, cuEventRecord, (ar->ce_ev[i][PSC__CE_COPIED], ar->ce_copy[i]));
}

/*
 * Chunk k of local rank i, second part: its addition on the caller's stream s, after this rank's own copies
 * and marks of the chunk (in place, the sum overwrites the input the copy engine reads; and always the
 * CUDA-visible mirror of the peers' marks it waits for, see above).
 */
static psc_status_t psc__ar_ce_add(psc_allreduce_t *ar, int i, psc_ar_ce_args_t *k, CUstream s)
{
    psc_context_t *ctx = ar->ctx;
    void *params[] = {k};
    psc_status_t st;

    if ((st = PSC_CU(ctx, cuStreamWaitEvent, (s, ar->ce_ev[i][PSC__CE_COPIED], 0))) != PSC_OK)
        return st;
    /* blocks of PSC_AR_LANES threads of PSC_AR_BATCH vectors each, at most one per SM (a chunk's addition reads
       and writes at the memory's speed long before the next chunk lands) */
    if ((st = psc__launch_on(ctx, s, ctx->gpu[ar->dev[i]].fn_ar_ce_add,
                             psc__ar_blocks((k->bytes + PSC_AR_BATCH * 16 - 1) / (PSC_AR_BATCH * 16), ar->sms),
                             PSC_AR_LANES, params)) != PSC_OK || !k->free_half)
        return st;
    return PSC_CU(ctx, cuEventRecord, (ar->ce_ev[i][PSC__CE_HALF0 + k->slot / PSC_AR_CE_HALF], s));
}

int psc__ar_part_by_copy(psc_allreduce_t *ar, int kind, uint64_t bytes, int way, struct CUstream_st *const *streams,
                         int (*captured)(const psc_allreduce_t *ar, struct CUstream_st *const *streams))
{
    const int copy = kind == PSC__AR_RS ? PSC__AR_RS_COPY : PSC__AR_AG_COPY;
    const int kernel = kind == PSC__AR_RS ? PSC__AR_RS_KERNEL : PSC__AR_AG_KERNEL;
    const int forced = ar->algo == PSC__AR_COPY ? copy : ar->algo ? kernel : 0; /* tests */
    /* whole 16-byte vectors a part where a kernel reads them (a reduce-scatter's addition, a joined all-gather's
       gathering); a local all-gather copies straight into the peers' recv, from 2 GPUs */
    const int fits = kind == PSC__AR_AG && !ar->joined ? ar->nlocal >= 2 : bytes % 16 == 0;

    way = forced ? forced : way;
    if (!ar->ce_chunk || !fits || way == kernel || (way != copy && bytes < PSC__AR_CE_FROM))
        return 0;
    return !captured(ar, streams);
}

psc_status_t psc__ar_ce_sum(psc_allreduce_t *ar, void *const *recv, const void *const *send, uint64_t bytes,
                            int dtype, struct CUstream_st *const *streams, uint64_t timeout_ns, int kind)
{
    const int rs = kind == PSC__AR_RS;
    psc_context_t *ctx = ar->ctx;
    const uint64_t chunks = (bytes + ar->ce_chunk - 1) / ar->ce_chunk;
    psc_ar_ce_args_t a[PSC_AR_MAX_RANKS];
    psc_status_t st = PSC_OK;

    for (int i = 0; i < ar->nlocal; i++) {
        memset(&a[i], 0, sizeof(a[i]));
        for (int r = 0; r < ar->n; r++)
            a[i].lbuf[r] = ar->lbuf[r];
        a[i].ctrl = ar->ctrl[i];
        /* the addition's own input: a reduce-scatter's, this rank's part */
        a[i].send = (uint64_t)(uintptr_t)send[i] + (rs ? (uint64_t)(ar->first + i) * bytes : 0);
        a[i].recv = (uint64_t)(uintptr_t)recv[i];
        a[i].ce_off = ar->ce_off;
        a[i].chunk_bytes = ar->ce_chunk;
        a[i].part_bytes = bytes;
        a[i].gather = kind == PSC__AR_AG;
        a[i].timeout_ns = timeout_ns;
        a[i].nranks = (uint32_t)ar->n;
        a[i].rank = (uint32_t)(ar->first + i);
        a[i].dtype = (uint32_t)dtype;
    }
    for (int i = 0; i < ar->nlocal && st == PSC_OK; i++)
        if ((st = psc__gpu_use(ctx, ar->dev[i])) == PSC_OK &&
            (st = psc__ar_ce_order(ar, i, PSC__CE_FORK, streams[i], ar->ce_copy[i])) == PSC_OK)
            st = PSC_CU(ctx, cuStreamWaitEvent, (ar->ce_wait[i], ar->ce_ev[i][PSC__CE_FORK], 0));
    /* chunk by chunk across this process's ranks, every rank's copies of a chunk before any rank's addition of
       it: each GPU starts at once, and none waits on the host for another's work (the fake driver runs kernels
       at their launch, and an event recorded after one waits for it) */
    for (uint64_t c = 0; c < chunks && st == PSC_OK; c++) {
        psc_ar_ce_args_t k[PSC_AR_MAX_RANKS];

        for (int i = 0; i < ar->nlocal; i++)
            k[i] = psc__ar_ce_at(ar, &a[i], c, chunks, bytes);
        for (int i = 0; i < ar->nlocal && st == PSC_OK; i++)
            if ((st = psc__gpu_use(ctx, ar->dev[i])) == PSC_OK)
                st = psc__ar_ce_push(ar, i, &k[i], c, rs ? bytes : 0);
        for (int i = 0; i < ar->nlocal && st == PSC_OK; i++)
            if ((st = psc__gpu_use(ctx, ar->dev[i])) == PSC_OK)
                st = psc__ar_ce_add(ar, i, &k[i], streams[i]);
    }
    for (int i = 0; i < ar->nlocal && st == PSC_OK; i++)
        if ((st = psc__gpu_use(ctx, ar->dev[i])) == PSC_OK &&
            (st = psc__ar_ce_order(ar, i, PSC__CE_JOIN_COPY, ar->ce_copy[i], streams[i])) == PSC_OK)
            st = psc__ar_ce_order(ar, i, PSC__CE_JOIN_WAIT, ar->ce_wait[i], streams[i]);
    if (st != PSC_OK) /* some ranks' work is enqueued and waits for the rest in vain */
        snprintf(ar->broken, sizeof(ar->broken), "a call on the copy-engine path failed part way (%.160s)",
                 ctx->last_error);
    return st;
}
