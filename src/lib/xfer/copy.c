#include "xfer/copy.h"

psc_status_t psc__copy_enqueue(psc_context_t *ctx, const psc_copy_route_t *r, CUdeviceptr d, CUdeviceptr s, uint64_t n,
                               unsigned reps, CUstream stream)
{
    psc_gpu_t *g = &ctx->gpu[r->issuer];
    unsigned blocks = (unsigned)(ctx->info[r->issuer].sm_count > 0 ? ctx->info[r->issuer].sm_count : 16) *
                      (unsigned)ctx->sm_blocks_per_sm;
    psc_status_t st = PSC_OK;

    if (r->engine == PSC_ENGINE_SM && ((d | s) & 15) == 0) {
        /* All of a sample's copies in one launch: the kernel makes `reps` passes. */
        void *params[] = {&d, &s, &n, &reps};

        return psc__launch_on(ctx, stream, g->fn_copy, blocks, (unsigned)ctx->sm_threads, params);
    }
    for (unsigned k = 0; k < reps && st == PSC_OK; k++) {
        if (r->engine == PSC_ENGINE_SM) {
            void *params[] = {&d, &s, &n};

            st = psc__launch_on(ctx, stream, g->fn_copy_bytes, blocks, (unsigned)ctx->sm_threads, params);
        } else if (r->p2p_off) {
            st = PSC_CU(ctx, cuMemcpyPeerAsync, (d, ctx->gpu[r->dst_gpu].ctx, s, ctx->gpu[r->src_gpu].ctx, n, stream));
        } else {
            st = PSC_CU(ctx, cuMemcpyAsync, (d, s, n, stream));
        }
    }
    return st;
}
