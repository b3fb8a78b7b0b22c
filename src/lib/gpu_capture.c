/*
 * Capturing one CUDA graph per GPU from one thread (coll's -G, the
 * all-reduce's tuning): every capture is ended before any graph is
 * instantiated, because the driver refuses an instantiation while a capture
 * of the calling thread is open (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) and
 * invalidates that capture with it.
 */
#include "internal.h"

psc_status_t psc__capture_begin(psc_context_t *ctx, int n, const int *dev, CUstream const *s, int *begun)
{
    psc_status_t st = PSC_OK;

    for (*begun = 0; *begun < n; (*begun)++)
        if ((st = psc__gpu_use(ctx, dev[*begun])) != PSC_OK ||
            (st = PSC_CU(ctx, cuStreamBeginCapture, (s[*begun], CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))) != PSC_OK)
            break;
    return st;
}

psc_status_t psc__capture_end(psc_context_t *ctx, int begun, const int *dev, CUstream const *s, psc_status_t st,
                              CUgraph *g, CUgraphExec *e)
{
    for (int i = 0; i < begun; i++) { /* every capture ended, whatever failed before (the stream knows its context) */
        psc_status_t s1 = psc__gpu_use(ctx, dev[i]), s2 = PSC_CU(ctx, cuStreamEndCapture, (s[i], &g[i]));

        if (st == PSC_OK)
            st = s1 != PSC_OK ? s1 : s2;
    }
    for (int i = 0; i < begun && st == PSC_OK; i++)
        if ((st = psc__gpu_use(ctx, dev[i])) == PSC_OK)
            st = PSC_CU(ctx, cuGraphInstantiateWithFlags, (&e[i], g[i], 0));
    return st;
}
