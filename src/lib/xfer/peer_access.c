/*
 * psc_peer_enable / psc_peer_disable: the application's explicit change of
 * peer access, the one place the library changes it for good (the
 * measurements put theirs back, api_guard.c).
 */
#include <stdio.h>

#include "internal.h"

static psc_status_t psc__peer_set(psc_context_t *ctx, int from, int to, int on, int *was_on)
{
    CUcontext restore = NULL;
    int saved, can = 0, was = 0;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!psc__valid_gpu(ctx, from) || !psc__valid_gpu(ctx, to) || from == to)
        return psc__fail(ctx, PSC_ERR_INVALID, "peer access from GPU %d to GPU %d: no such pair (accepted: two different "
                                               "GPUs, 0..%d)", from, to, ctx->ndev - 1);
    if (on && (st = PSC_CU(ctx, cuDeviceCanAccessPeer, (&can, ctx->gpu[from].dev, ctx->gpu[to].dev))) != PSC_OK)
        return st;
    if (on && !can)
        return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "GPU %d cannot reach GPU %d peer to peer (cuDeviceCanAccessPeer = 0; "
                                                   "`p2pscope doctor` says why)", from, to);
    saved = ctx->cu.p_cuCtxGetCurrent(&restore) == CUDA_SUCCESS;
    st = psc__gpu_peer_switch(ctx, from, to, on, &was);
    if (saved && ctx->cu.p_cuCtxSetCurrent(restore) != CUDA_SUCCESS && st == PSC_OK)
        st = psc__fail(ctx, PSC_ERR_DRIVER, "the caller's current CUDA context not made current again");
    if (st != PSC_OK)
        return st;
    if (was != on)
        psc__log(ctx, PSC_LOG_INFO, "peer access from GPU %d to GPU %d turned %s", from, to, on ? "on" : "off");
    if (was_on)
        *was_on = was;
    return PSC_OK;
}

psc_status_t psc_peer_enable(psc_context_t *ctx, int from, int to, int *was_on)
{
    return psc__peer_set(ctx, from, to, 1, was_on);
}

psc_status_t psc_peer_disable(psc_context_t *ctx, int from, int to, int *was_on)
{
    return psc__peer_set(ctx, from, to, 0, was_on);
}
