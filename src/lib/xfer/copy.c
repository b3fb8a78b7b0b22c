/*
 * One copy issued as a test names it (copy.h): copy engine, peer-staged copy engine or SM kernel, and the
 * peer access its issuer needs.
 */
#include "xfer/copy.h"

#include <stdio.h>

/* An SM kernel's grid on the route's issuer: blocks per SM times its SMs, capped, split by the share. */
static unsigned psc__copy_blocks(const psc_context_t *ctx, const psc_copy_route_t *r)
{
    unsigned blocks = (unsigned)(ctx->info[r->issuer].sm_count > 0 ? ctx->info[r->issuer].sm_count : 16) *
                      (unsigned)ctx->sm_blocks_per_sm;

    if (ctx->sm_max_blocks > 0 && blocks > (unsigned)ctx->sm_max_blocks)
        blocks = (unsigned)ctx->sm_max_blocks;
    /* Kernels that run side by side on one GPU split it: a kernel with the whole grid would hold every SM
     * until it ends, and the others would wait, so "at once" would be one after another. */
    if (r->share > 1)
        blocks = (blocks + (unsigned)r->share - 1) / (unsigned)r->share;
    return blocks;
}

psc_status_t psc__copy_enqueue(psc_context_t *ctx, const psc_copy_route_t *r, CUdeviceptr d, CUdeviceptr s, uint64_t n,
                               unsigned reps, CUstream stream)
{
    psc_gpu_t *g = &ctx->gpu[r->issuer];
    unsigned blocks = psc__copy_blocks(ctx, r);
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

psc_copy_route_t psc__copy_route(const psc_bw_test_info_t *ti, const psc_xfer_t *x, int share)
{
    psc_copy_route_t r = {ti->engine, psc__shape_p2p_off(ti->shape), x->issuer,
                          x->src == PSC_HOST ? x->issuer : x->src, x->dst == PSC_HOST ? x->issuer : x->dst, share};

    return r;
}

int psc__issuer_share(const psc_xfer_t *x, int n, int i)
{
    int k = 0;

    for (int j = 0; j < n; j++)
        k += x[j].issuer == x[i].issuer;
    return k;
}

psc_status_t psc__peers_for(psc_context_t *ctx, const psc_xfer_t *x, int n, int p2p_off, int *waived, char *why,
                            size_t len)
{
    psc_status_t st = PSC_OK;

    *waived = 0;
    for (int i = 0; i < n && st == PSC_OK; i++) {
        int a = x[i].src, b = x[i].dst, peer = x[i].issuer == a ? b : a, can = 0;

        if (a < 0 || b < 0 || a == b)
            continue;
        if (p2p_off) {
            if ((st = psc__gpu_peer_disable(ctx, a, b)) == PSC_OK)
                st = psc__gpu_peer_disable(ctx, b, a);
            continue;
        }
        st = PSC_CU(ctx, cuDeviceCanAccessPeer, (&can, ctx->gpu[x[i].issuer].dev, ctx->gpu[peer].dev));
        if (st == PSC_OK && !can) {
            *waived = 1;
            snprintf(why, len, "no peer access from GPU %d to GPU %d (cuDeviceCanAccessPeer = 0)", x[i].issuer, peer);
            return PSC_OK;
        }
        if (st == PSC_OK)
            st = psc__gpu_peer_enable(ctx, x[i].issuer, peer);
    }
    return st;
}

psc_status_t psc__read_enqueue(psc_context_t *ctx, const psc_copy_route_t *r, CUdeviceptr s, uint64_t n, unsigned reps,
                               CUdeviceptr sum, CUstream stream)
{
    void *params[] = {&s, &n, &reps, &sum};

    return psc__launch_on(ctx, stream, ctx->gpu[r->issuer].fn_read, psc__copy_blocks(ctx, r),
                          (unsigned)ctx->sm_threads, params);
}

psc_status_t psc__write_enqueue(psc_context_t *ctx, const psc_copy_route_t *r, CUdeviceptr d, uint64_t n, unsigned reps,
                                const psc_expect_t *e, CUstream stream)
{
    psc_expect_t ev = *e;
    void *params[] = {&d, &n, &reps, &ev};

    return psc__launch_on(ctx, stream, ctx->gpu[r->issuer].fn_write, psc__copy_blocks(ctx, r),
                          (unsigned)ctx->sm_threads, params);
}

psc_status_t psc__tma_enqueue(psc_context_t *ctx, const psc_copy_route_t *r, CUdeviceptr d, CUdeviceptr s, uint64_t n,
                              unsigned reps, CUstream stream)
{
    unsigned blocks = (unsigned)(ctx->info[r->issuer].sm_count > 0 ? ctx->info[r->issuer].sm_count : 16) * 4;
    void *params[] = {&d, &s, &n, &reps};

    if (((d | s) & 15) != 0)
        return psc__fail(ctx, PSC_ERR_INVALID, "bulk copies (TMA) of addresses 0x%llx -> 0x%llx: accepted 16-byte "
                         "aligned ones", (unsigned long long)s, (unsigned long long)d);
    if (r->share > 1)
        blocks = (blocks + (unsigned)r->share - 1) / (unsigned)r->share;
    return psc__launch_on(ctx, stream, ctx->gpu[r->issuer].fn_tma, blocks, 32, params);
}

int psc__tma_waiver(int gpu, int cc_major, int cc_minor, char *why, size_t len)
{
    if (cc_major >= 9)
        return 0;
    snprintf(why, len, "bulk copies (TMA) need compute capability 9.0 or newer: GPU %d is %d.%d", gpu, cc_major,
             cc_minor);
    return 1;
}
