#include "xfer/timing.h"

#include <stddef.h>

static psc_status_t psc__gated_round(psc_context_t *ctx, const psc_timed_work_t *w, CUevent start,
                                     CUevent stop, uint64_t timeout_ns, float *ms)
{
    psc_gpu_t *g = &ctx->gpu[w->issuer];
    CUdeviceptr release = g->gate_dptr + offsetof(psc_gate_words_t, release);
    CUdeviceptr timed_out = g->gate_dptr + offsetof(psc_gate_words_t, timed_out);
    void *params[] = {&release, &timed_out, &timeout_ns};
    psc_status_t st, rst;

    g->gate->release = 0;
    g->gate->timed_out = 0;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if ((st = psc__launch(ctx, w->issuer, g->fn_gate, 1, 1, params)) != PSC_OK)
        return st;
    if ((st = PSC_CU(ctx, cuEventRecord, (start, g->stream))) == PSC_OK &&
        (st = w->enqueue(ctx, w->arg, g->stream)) == PSC_OK)
        st = PSC_CU(ctx, cuEventRecord, (stop, g->stream));
    /* Release even after a failed enqueue, so the stream never waits for the timeout. */
    __atomic_store_n(&g->gate->release, 1u, __ATOMIC_SEQ_CST);
    rst = PSC_CU(ctx, cuStreamSynchronize, (g->stream));
    if (st != PSC_OK)
        return st;
    if (rst != PSC_OK)
        return rst;
    if (__atomic_load_n(&g->gate->timed_out, __ATOMIC_SEQ_CST))
        return psc__fail(ctx, PSC_ERR_TIMEOUT,
                         "the gate kernel on GPU %d gave up after %.0f ms: queuing the timed work took "
                         "longer (raise --gate-timeout or lower --iterations)",
                         w->issuer, (double)timeout_ns / 1e6);
    return PSC_CU(ctx, cuEventElapsedTime, (ms, start, stop));
}

psc_status_t psc__time_rounds(psc_context_t *ctx, const psc_timed_work_t *w, unsigned warmup,
                              unsigned samples, double gate_timeout_ms, double *ms)
{
    uint64_t timeout_ns = (uint64_t)(gate_timeout_ms * 1e6);
    CUevent start = NULL, stop = NULL;
    psc_status_t st;

    if ((st = psc__gpu_use(ctx, w->issuer)) != PSC_OK ||
        (st = PSC_CU(ctx, cuEventCreate, (&start, CU_EVENT_DEFAULT))) != PSC_OK ||
        (st = PSC_CU(ctx, cuEventCreate, (&stop, CU_EVENT_DEFAULT))) != PSC_OK)
        goto out;

    for (unsigned r = 0; r < warmup + samples; r++) {
        int timed = r >= warmup;
        float t = 0;

        if (w->before && (st = w->before(ctx, w->arg, r)) != PSC_OK)
            goto out;
        if ((st = psc__gpu_use(ctx, w->issuer)) != PSC_OK ||
            (st = psc__gated_round(ctx, w, start, stop, timeout_ns, &t)) != PSC_OK)
            goto out;
        if (timed)
            ms[r - warmup] = t;
        if (w->after && (st = w->after(ctx, w->arg, r, timed)) != PSC_OK)
            goto out;
    }

out:
    if (psc__gpu_use(ctx, w->issuer) == PSC_OK) {
        if (stop)
            ctx->cu.p_cuEventDestroy(stop);
        if (start)
            ctx->cu.p_cuEventDestroy(start);
    }
    return st;
}
