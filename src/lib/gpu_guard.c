/*
 * The caller's CUDA state around a call that uses the GPUs: the calling
 * thread's current context saved at the outermost enter, and at its leave the
 * peer access the call changed and that context put back. It touches only the
 * GPU runtime, so it sits beside gpu.c where every module can hold it: the
 * public calls of api_guard.c and those of the modules themselves.
 */
#include "internal.h"

void psc__guard_enter(psc_context_t *ctx)
{
    if (ctx->guard_depth++ > 0)
        return;
    ctx->caller_current = NULL;
    ctx->caller_saved = ctx->cu.p_cuCtxGetCurrent(&ctx->caller_current) == CUDA_SUCCESS;
}

/* Put one pair back the way the caller had it; the pair is then untouched again. */
static CUresult psc__peer_restore(psc_context_t *ctx, int from, int to, const char **call)
{
    psc_gpu_t *g = &ctx->gpu[from];
    int was = g->peer_orig[to], now = g->peer_on[to];
    CUresult rc;

    g->peer_orig[to] = -1;
    g->peer_on[to] = 0; /* unknown from here on: the caller may change it between calls */
    if (was < 0 || was == now)
        return CUDA_SUCCESS;
    *call = "cuCtxSetCurrent";
    if ((rc = ctx->cu.p_cuCtxSetCurrent(g->ctx)) != CUDA_SUCCESS)
        return rc;
    *call = was ? "cuCtxEnablePeerAccess" : "cuCtxDisablePeerAccess";
    rc = was ? ctx->cu.p_cuCtxEnablePeerAccess(ctx->gpu[to].ctx, 0) : ctx->cu.p_cuCtxDisablePeerAccess(ctx->gpu[to].ctx);
    return rc == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED || rc == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED ? CUDA_SUCCESS : rc;
}

psc_status_t psc__guard_leave(psc_context_t *ctx, psc_status_t st)
{
    const char *call = NULL;
    char why[200];
    CUresult rc = CUDA_SUCCESS, r;
    int from = -1, to = -1;

    if (--ctx->guard_depth > 0)
        return st;
    for (int i = 0; i < ctx->ndev; i++)
        for (int j = 0; ctx->gpu[i].ready && j < ctx->ndev; j++)
            if ((r = psc__peer_restore(ctx, i, j, &call)) != CUDA_SUCCESS && rc == CUDA_SUCCESS)
                rc = r, from = i, to = j;
    /* Always, even after a failed peer restore. Not when the caller's could not be read: setting NULL
     * would pop an entry of its context stack. */
    if (ctx->caller_saved && (r = ctx->cu.p_cuCtxSetCurrent(ctx->caller_current)) != CUDA_SUCCESS &&
        rc == CUDA_SUCCESS)
        rc = r, call = "cuCtxSetCurrent";
    ctx->caller_current = NULL;
    if (rc == CUDA_SUCCESS)
        return st;
    /* The call's own failure is the one to report; a failed restore after a success is an error of its own. */
    if (st != PSC_OK) {
        psc__log(ctx, PSC_LOG_WARN, "the caller's CUDA state not put back: %s failed", call);
        return st;
    }
    psc_cuda_error_text(&ctx->cu, rc, why, sizeof(why));
    if (from >= 0)
        return psc__fail(ctx, PSC_ERR_DRIVER, "peer access from GPU %d to GPU %d not put back as the caller had it: %s: %s",
                         from, to, call, why);
    return psc__fail(ctx, PSC_ERR_DRIVER, "the caller's current CUDA context not made current again: %s: %s", call, why);
}
