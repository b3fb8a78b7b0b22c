/*
 * psc_allreduce_all_gather by the copy engines, for large eager calls (psc__ar_part_by_copy). A group of this
 * process's GPUs: each rank's stream records that it reached the call, waits until every peer's did (their recv
 * is free), pushes its part into every peer's recv with one copy each (peer access, the copy engine of the
 * source's GPU), copies it to its own place (not in place), records that its copies are enqueued, and waits for
 * every peer's: each rank's later work sees its whole recv. No scratch, no flags, no kernel: the bytes cross the
 * link once, at the copy engines' rate, and the SMs stay free. Its captured calls keep the kernel (the waits
 * between one graph per stream would join captures). A joined group's recv buffers are not mapped in the other
 * processes: its calls go through the peers' slots of the all-reduce's copy-engine path instead, a kernel
 * putting each chunk in place (psc__ar_ce_sum's all-gather, allreduce_ce.c).
 */
#include <stdio.h>

#include "allreduce/ar_group.h"

/* Event e of every local rank recorded on its stream, then every stream waiting for every other rank's. */
static psc_status_t psc__ag_meet(psc_allreduce_t *ar, int e, struct CUstream_st *const *streams)
{
    psc_context_t *ctx = ar->ctx;
    psc_status_t st = PSC_OK;

    for (int i = 0; i < ar->nlocal && st == PSC_OK; i++)
        if ((st = psc__gpu_use(ctx, ar->dev[i])) == PSC_OK)
            st = PSC_CU(ctx, cuEventRecord, (ar->ce_ev[i][e], streams[i]));
    for (int i = 0; i < ar->nlocal && st == PSC_OK; i++) {
        if ((st = psc__gpu_use(ctx, ar->dev[i])) != PSC_OK)
            break;
        for (int j = 0; j < ar->nlocal && st == PSC_OK; j++)
            if (j != i)
                st = PSC_CU(ctx, cuStreamWaitEvent, (streams[i], ar->ce_ev[j][e], 0));
    }
    return st;
}

psc_status_t psc__ar_ce_all_gather(psc_allreduce_t *ar, void *const *recv, const void *const *send, uint64_t bytes,
                                   struct CUstream_st *const *streams)
{
    psc_context_t *ctx = ar->ctx;
    psc_status_t st = psc__ag_meet(ar, PSC__CE_FORK, streams); /* every recv free */

    for (int i = 0; i < ar->nlocal && st == PSC_OK; i++) {
        const CUdeviceptr src = (CUdeviceptr)(uintptr_t)send[i];
        const uint64_t at = (uint64_t)(ar->first + i) * bytes;

        if ((st = psc__gpu_use(ctx, ar->dev[i])) != PSC_OK)
            break;
        for (int j = 0; j < ar->nlocal && st == PSC_OK; j++) {
            const CUdeviceptr dst = (CUdeviceptr)(uintptr_t)recv[j] + at;

            if (dst != src) /* its own part in place: already there */
                st = PSC_CU(ctx, cuMemcpyAsync, (dst, src, (size_t)bytes, streams[i]));
        }
    }
    if (st == PSC_OK)
        st = psc__ag_meet(ar, PSC__CE_JOIN_COPY, streams); /* every part in every recv */
    if (st != PSC_OK) /* some streams wait for events never recorded after them, or parts never copied */
        snprintf(ar->broken, sizeof(ar->broken), "an all-gather by the copy engines failed part way (%.160s)",
                 ctx->last_error);
    return st;
}
