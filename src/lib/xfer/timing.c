/*
 * The gates of the timing engine (timing.h): a spinning kernel per issuing stream holds the timed copies back
 * until the host releases every GPU at once.
 */
#include "xfer/timing.h"

#include <stddef.h>

void psc__gates_arm(psc_context_t *ctx, const unsigned char *use)
{
    for (int g = 0; g < ctx->ndev; g++) {
        if (!use[g])
            continue;
        ctx->gpu[g].gate->release = 0;
        ctx->gpu[g].gate->timed_out = 0;
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

psc_status_t psc__gate_launch(psc_context_t *ctx, int g, CUstream s, uint64_t timeout_ns)
{
    psc_gpu_t *gp = &ctx->gpu[g];
    CUdeviceptr release = gp->gate_dptr + offsetof(psc_gate_words_t, release);
    CUdeviceptr timed_out = gp->gate_dptr + offsetof(psc_gate_words_t, timed_out);
    void *params[] = {&release, &timed_out, &timeout_ns};

    return psc__launch_on(ctx, s, gp->fn_gate, 1, 1, params);
}

void psc__gates_release(psc_context_t *ctx, const unsigned char *use)
{
    for (int g = 0; g < ctx->ndev; g++)
        if (use[g])
            __atomic_store_n(&ctx->gpu[g].gate->release, 1u, __ATOMIC_SEQ_CST);
}

int psc__gates_timed_out(const psc_context_t *ctx, const unsigned char *use)
{
    for (int g = 0; g < ctx->ndev; g++)
        if (use[g] && __atomic_load_n(&ctx->gpu[g].gate->timed_out, __ATOMIC_SEQ_CST))
            return g;
    return -1;
}
