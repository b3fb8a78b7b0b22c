/*
 * The GPU runtime under everything that uses a GPU: each GPU's primary
 * context, module (the kernel table), streams, peer access and launches,
 * set up on first use. Below mem/, machine/devices.c and the context's
 * open and close (context.c).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The device fatbin, embedded by cmake/fatbin_embed.S.in. */
extern const unsigned char psc__fatbin[];

static const char *psc__copy_kernel_name(const psc_context_t *ctx)
{
    static const char *const names[3][4] = {{"psc_copy_u1", "psc_copy_u2", "psc_copy_u4", "psc_copy_u8"},
                                            {"psc_copy_u1", "psc_copy_u2", "psc_copy_chunk_u4", "psc_copy_chunk_u8"},
                                            {"psc_copy_u1", "psc_copy_u2", "psc_copy_stream_u4", "psc_copy_stream_u8"}};
    int k = ctx->sm_unroll == 1 ? 0 : ctx->sm_unroll == 2 ? 1 : ctx->sm_unroll == 8 ? 3 : 2;

    return names[ctx->sm_layout >= 0 && ctx->sm_layout < 3 ? ctx->sm_layout : 0][k];
}

void psc__gpu_teardown(psc_context_t *ctx, psc_gpu_t *g)
{
    if (!g->ctx)
        return;
    ctx->cu.p_cuCtxSetCurrent(g->ctx);
    for (int k = 0; k < PSC_MAX_XFERS; k++)
        if (g->xstreams[k])
            ctx->cu.p_cuStreamDestroy(g->xstreams[k]);
    if (g->hop_stream)
        ctx->cu.p_cuStreamDestroy(g->hop_stream);
    if (g->hop_fork)
        ctx->cu.p_cuEventDestroy(g->hop_fork);
    if (g->hop_join)
        ctx->cu.p_cuEventDestroy(g->hop_join);
    if (g->stream) {
        ctx->cu.p_cuStreamSynchronize(g->stream);
        ctx->cu.p_cuStreamDestroy(g->stream);
    }
    if (g->verify_words)
        ctx->cu.p_cuMemFree(g->verify_words);
    if (g->gate)
        ctx->cu.p_cuMemFreeHost((void *)g->gate);
    if (g->module)
        ctx->cu.p_cuModuleUnload(g->module);
    /* No cuCtxSetCurrent(NULL): it would pop an entry of the caller's context stack. The caller's
     * current context is put back by whoever called (the guard, or psc_context_destroy). */
    ctx->cu.p_cuDevicePrimaryCtxRelease(g->dev);
    free(g->peer_on);
    free(g->peer_orig);
    memset(g, 0, sizeof(*g));
}

int psc__valid_gpu(const psc_context_t *ctx, int i)
{
    return ctx && i >= 0 && i < ctx->ndev;
}

int psc__resolve_devices(const psc_context_t *ctx, const int *devices, int ndev, int *d, int cap)
{
    int m = ndev ? ndev : ctx ? ctx->ndev : 0;

    if (!ctx)
        return -1;
    if (ndev < 0 || (ndev > 0 && !devices) || m > cap) {
        psc__fail(ctx, PSC_ERR_INVALID, "%d GPUs named%s (accepted: 0 for all, or a list of up to %d)", ndev,
                  ndev > 0 && !devices ? " but no list given" : "", cap);
        return -1;
    }
    for (int i = 0; i < m; i++) {
        d[i] = ndev ? devices[i] : i;
        if (!psc__valid_gpu(ctx, d[i])) {
            psc__fail(ctx, PSC_ERR_INVALID, "GPU %d does not exist (accepted: 0..%d)", d[i], ctx->ndev - 1);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (d[j] == d[i]) {
                psc__fail(ctx, PSC_ERR_INVALID, "GPU %d named twice (accepted: each GPU once)", d[i]);
                return -1;
            }
    }
    return m;
}

static psc_status_t psc__gpu_setup(psc_context_t *ctx, int i)
{
    psc_gpu_t *g = &ctx->gpu[i];
    psc_verify_words_t init = {0, UINT64_MAX};
    CUdevice dev = g->dev;
    psc_status_t st;
    void *gate = NULL;

    st = PSC_CU(ctx, cuDevicePrimaryCtxRetain, (&g->ctx, dev));
    if (st != PSC_OK)
        return st;
    if ((st = PSC_CU(ctx, cuCtxSetCurrent, (g->ctx))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleLoadData, (&g->module, psc__fatbin))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_gate, g->module, "psc_gate"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_fill, g->module, "psc_pattern_fill"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_check, g->module, "psc_pattern_check"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_flip, g->module, "psc_pattern_flip"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_copy, g->module, psc__copy_kernel_name(ctx)))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_chase, g->module, "psc_chase"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_ping, g->module, "psc_flag_ping"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_pong, g->module, "psc_flag_pong"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_probe, g->module, "psc_timer_probe"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_copy_bytes, g->module, "psc_copy_bytes"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_read, g->module, "psc_read_u4"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_write, g->module, "psc_write_u4"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_sum, g->module, "psc_pattern_sum"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_tma, g->module, "psc_copy_tma"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_chase_tma, g->module, "psc_chase_tma"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_coll_fill, g->module, "psc_coll_fill"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_coll_check, g->module, "psc_coll_check"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_ar_oneshot, g->module, "psc_ar_oneshot"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_ar_twoshot, g->module, "psc_ar_twoshot"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_rs_oneshot, g->module, "psc_rs_oneshot"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_ag_oneshot, g->module, "psc_ag_oneshot"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_ar_fill, g->module, "psc_ar_fill"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_ar_ce_add, g->module, "psc_ar_ce_add"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_ar_ce_wait, g->module, "psc_ar_ce_wait"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_compute_load, g->module, "psc_compute_load"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuStreamCreate, (&g->stream, CU_STREAM_NON_BLOCKING))) != PSC_OK ||
        (st = PSC_CU(ctx, cuMemHostAlloc, (&gate, sizeof(psc_gate_words_t), CU_MEMHOSTALLOC_DEVICEMAP))) != PSC_OK)
        goto err;
    g->gate = gate;
    if ((st = PSC_CU(ctx, cuMemHostGetDevicePointer, (&g->gate_dptr, gate, 0))) != PSC_OK)
        goto err;
    g->gate->release = 0;
    g->gate->timed_out = 0;
    if ((st = PSC_CU(ctx, cuMemAlloc, (&g->verify_words, sizeof(psc_verify_words_t)))) != PSC_OK ||
        (st = PSC_CU(ctx, cuMemcpyHtoD, (g->verify_words, &init, sizeof(init)))) != PSC_OK)
        goto err;
    g->peer_on = calloc((size_t)ctx->ndev, 1);
    g->peer_orig = malloc((size_t)ctx->ndev);
    if (g->peer_orig)
        memset(g->peer_orig, -1, (size_t)ctx->ndev);
    if (!g->peer_on || !g->peer_orig) {
        st = psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
        goto err;
    }
    g->ready = 1;
    return PSC_OK;

err:
    psc__gpu_teardown(ctx, g);
    g->dev = dev;
    return st;
}

psc_status_t psc__gpu_use(psc_context_t *ctx, int i)
{
    if (!psc__valid_gpu(ctx, i))
        return psc__fail(ctx, PSC_ERR_INVALID, "GPU %d does not exist (accepted: 0..%d)", i, ctx->ndev - 1);
    if (!ctx->gpu[i].ready)
        return psc__gpu_setup(ctx, i);
    return PSC_CU(ctx, cuCtxSetCurrent, (ctx->gpu[i].ctx));
}

psc_status_t psc__gpu_peer_switch(psc_context_t *ctx, int from, int to, int on, int *was_on)
{
    psc_status_t st;
    CUresult rc;

    if ((st = psc__gpu_use(ctx, to)) != PSC_OK || (st = psc__gpu_use(ctx, from)) != PSC_OK)
        return st;
    rc = on ? ctx->cu.p_cuCtxEnablePeerAccess(ctx->gpu[to].ctx, 0) : ctx->cu.p_cuCtxDisablePeerAccess(ctx->gpu[to].ctx);
    if (rc == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED || rc == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)
        *was_on = on;
    else if (rc == CUDA_SUCCESS)
        *was_on = !on;
    else
        return psc__cu_result(ctx, rc, on ? "cuCtxEnablePeerAccess" : "cuCtxDisablePeerAccess");
    return PSC_OK;
}

/* Switch peer access for a measurement, noting the first change in this call so the guard can put it back. */
static psc_status_t psc__gpu_peer_measure(psc_context_t *ctx, int from, int to, int on)
{
    psc_status_t st;
    int was = 0;

    if (on && psc__valid_gpu(ctx, from) && ctx->gpu[from].ready && ctx->gpu[from].peer_on[to])
        return psc__gpu_use(ctx, from);
    if ((st = psc__gpu_peer_switch(ctx, from, to, on, &was)) != PSC_OK)
        return st;
    if (ctx->gpu[from].peer_orig[to] < 0) /* the first change in this call: what the caller had */
        ctx->gpu[from].peer_orig[to] = (signed char)was;
    ctx->gpu[from].peer_on[to] = (unsigned char)on;
    return PSC_OK;
}

psc_status_t psc__gpu_peer_enable(psc_context_t *ctx, int from, int to)
{
    return psc__gpu_peer_measure(ctx, from, to, 1);
}

psc_status_t psc__gpu_peer_disable(psc_context_t *ctx, int from, int to)
{
    return psc__gpu_peer_measure(ctx, from, to, 0);
}

psc_status_t psc__gpu_stream(psc_context_t *ctx, int i, int k, CUstream *out)
{
    psc_gpu_t *g;
    psc_status_t st;

    if (k < 0 || k >= PSC_MAX_XFERS)
        return psc__fail(ctx, PSC_ERR_INVALID, "stream %d out of range", k);
    if ((st = psc__gpu_use(ctx, i)) != PSC_OK)
        return st;
    g = &ctx->gpu[i];
    if (k == 0) {
        *out = g->stream;
        return PSC_OK;
    }
    if (!g->xstreams[k] && (st = PSC_CU(ctx, cuStreamCreate, (&g->xstreams[k], CU_STREAM_NON_BLOCKING))) != PSC_OK)
        return st;
    *out = g->xstreams[k];
    return PSC_OK;
}

psc_status_t psc__gpu_hop_ready(psc_context_t *ctx, int i)
{
    psc_gpu_t *g = &ctx->gpu[i];
    psc_status_t st;

    if (g->ready && g->hop_stream && g->hop_fork && g->hop_join)
        return PSC_OK;
    if ((st = psc__gpu_use(ctx, i)) != PSC_OK ||
        (!g->hop_stream && (st = PSC_CU(ctx, cuStreamCreate, (&g->hop_stream, CU_STREAM_NON_BLOCKING))) != PSC_OK) ||
        (!g->hop_fork && (st = PSC_CU(ctx, cuEventCreate, (&g->hop_fork, CU_EVENT_DISABLE_TIMING))) != PSC_OK) ||
        (!g->hop_join && (st = PSC_CU(ctx, cuEventCreate, (&g->hop_join, CU_EVENT_DISABLE_TIMING))) != PSC_OK))
        return st;
    return PSC_OK;
}

psc_status_t psc__launch_on(psc_context_t *ctx, CUstream s, CUfunction fn, unsigned blocks, unsigned threads,
                            void **params)
{
    return PSC_CU(ctx, cuLaunchKernel, (fn, blocks, 1, 1, threads, 1, 1, 0, s, params, NULL));
}

psc_status_t psc__launch_early(psc_context_t *ctx, int i, CUstream s, CUfunction fn, unsigned blocks,
                               unsigned threads, void **params)
{
    CUlaunchAttribute attr;
    CUlaunchConfig cfg;
    CUresult rc;

    if (!ctx->cu.p_cuLaunchKernelEx || ctx->info[i].cc_major < 9 || ctx->gpu[i].no_early)
        return psc__launch_on(ctx, s, fn, blocks, threads, params);
    memset(&attr, 0, sizeof(attr));
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    memset(&cfg, 0, sizeof(cfg));
    cfg.gridDimX = blocks;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = threads;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = s;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    rc = ctx->cu.p_cuLaunchKernelEx(&cfg, fn, params, NULL);
    if (rc == CUDA_ERROR_NOT_SUPPORTED || rc == CUDA_ERROR_INVALID_VALUE) { /* a driver or tool without them */
        ctx->gpu[i].no_early = 1;
        return psc__launch_on(ctx, s, fn, blocks, threads, params);
    }
    return psc__cu_result(ctx, rc, "cuLaunchKernelEx");
}

psc_status_t psc__launch(psc_context_t *ctx, int i, CUfunction fn, unsigned blocks,
                         unsigned threads, void **params)
{
    return psc__launch_on(ctx, ctx->gpu[i].stream, fn, blocks, threads, params);
}

unsigned psc__grid_blocks(const psc_context_t *ctx, int i)
{
    int sms = ctx->info[i].sm_count > 0 ? ctx->info[i].sm_count : 16;

    return (unsigned)sms * 4u;
}

psc_status_t psc__gpu_of_stream(psc_context_t *ctx, CUstream stream, int *gpu)
{
    CUcontext c = NULL;
    CUresult rc;
    char why[160];

    if (!ctx->cu.p_cuStreamGetCtx)
        return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "the driver lacks cuStreamGetCtx or cuPointerGetAttributes "
                                                   "(accepted: a driver of CUDA 9.2 or newer)");
    if ((rc = ctx->cu.p_cuStreamGetCtx(stream, &c)) != CUDA_SUCCESS) {
        psc_cuda_error_text(&ctx->cu, rc, why, sizeof(why));
        return psc__fail(ctx, PSC_ERR_INVALID, "%s is not a stream of this process (cuStreamGetCtx: %s)",
                         stream ? "the stream" : "the default stream of the current context", why);
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < ctx->ndev; i++) {
            if (pass == 1 && !ctx->gpu[i].ready && psc__gpu_use(ctx, i) != PSC_OK)
                continue; /* a GPU that cannot be set up is not the stream's */
            if (ctx->gpu[i].ready && ctx->gpu[i].ctx == c) {
                *gpu = i;
                return PSC_OK;
            }
        }
    }
    return psc__fail(ctx, PSC_ERR_INVALID, "the stream belongs to a context that is no GPU's primary context "
                                           "(accepted: streams of the primary contexts, which the CUDA runtime uses)");
}
