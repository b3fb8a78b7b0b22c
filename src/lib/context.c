#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "mem/buffer.h"

/* The device fatbin, embedded by cmake/fatbin_embed.S.in. */
extern const unsigned char psc__fatbin[];

psc_status_t psc__devices_probe(psc_context_t *ctx); /* topo/devices.c */

static psc_log_level_t psc__log_level_from_env(void)
{
    static const char *const names[] = {"none", "error", "warn", "info", "debug"};
    const char *v = getenv("P2PSCOPE_LOG");

    if (!v)
        return PSC_LOG_NONE;
    for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcasecmp(v, names[i]) == 0)
            return (psc_log_level_t)i;
    return PSC_LOG_WARN;
}

/*
 * P2PSCOPE_SM_COPY="unroll:blocks_per_sm:threads[:max_blocks[:layout]]"
 * picks the SM copy kernel's shape (tuning): max_blocks caps the grid (0:
 * none), layout is stride (the default), chunk or stream (unroll 4 or 8).
 */
static void psc__sm_copy_shape(psc_context_t *ctx)
{
    const char *v = getenv("P2PSCOPE_SM_COPY");
    char layout[8] = "stride";
    int u = 4, b = 2, t = 1024, m = 0, got = v ? sscanf(v, "%d:%d:%d:%d:%7s", &u, &b, &t, &m, layout) : 3;
    int lay = strcmp(layout, "chunk") == 0 ? 1 : strcmp(layout, "stream") == 0 ? 2 : strcmp(layout, "stride") == 0 ? 0 : -1;

    if (got < 3)
        psc__log(ctx, PSC_LOG_WARN,
                 "P2PSCOPE_SM_COPY=%s ignored: expected unroll:blocks_per_sm:threads[:max_blocks[:stride|chunk|stream]]", v);
    if (got < 3 || (u != 1 && u != 2 && u != 4 && u != 8) || b < 1 || b > 32 || t < 32 || t > 1024 || t % 32 ||
        m < 0 || lay < 0 || (lay > 0 && u != 4 && u != 8)) {
        if (got >= 3)
            psc__log(ctx, PSC_LOG_WARN, "P2PSCOPE_SM_COPY out of range: using 4:2:1024");
        u = 4, b = 2, t = 1024, m = 0, lay = 0;
    }
    ctx->sm_unroll = u;
    ctx->sm_blocks_per_sm = b;
    ctx->sm_threads = t;
    ctx->sm_max_blocks = m;
    ctx->sm_layout = lay;
}

static const char *psc__copy_kernel_name(const psc_context_t *ctx)
{
    static const char *const names[3][4] = {{"psc_copy_u1", "psc_copy_u2", "psc_copy_u4", "psc_copy_u8"},
                                            {"psc_copy_u1", "psc_copy_u2", "psc_copy_chunk_u4", "psc_copy_chunk_u8"},
                                            {"psc_copy_u1", "psc_copy_u2", "psc_copy_stream_u4", "psc_copy_stream_u8"}};
    int k = ctx->sm_unroll == 1 ? 0 : ctx->sm_unroll == 2 ? 1 : ctx->sm_unroll == 8 ? 3 : 2;

    return names[ctx->sm_layout >= 0 && ctx->sm_layout < 3 ? ctx->sm_layout : 0][k];
}

psc_status_t psc_context_create(psc_context_t **out, char *errbuf, size_t errlen)
{
    char scratch[256];
    psc_context_t *ctx;
    psc_status_t st;

    if (!out)
        return PSC_ERR_INVALID;
    if (!errbuf || !errlen) {
        errbuf = scratch;
        errlen = sizeof(scratch);
    }
    errbuf[0] = '\0';
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        snprintf(errbuf, errlen, "out of host memory");
        return PSC_ERR_NO_MEMORY;
    }
    ctx->log_level = psc__log_level_from_env();
    psc__test_hooks_default(&ctx->hooks);
    psc__sm_copy_shape(ctx);

    st = psc_cuda_load(&ctx->cu, errbuf, errlen);
    if (st != PSC_OK)
        goto err_free;
    if (psc_nvml_load(&ctx->nvml, ctx->sys.nvml_note, sizeof(ctx->sys.nvml_note)) == PSC_OK)
        ctx->sys.nvml_loaded = 1;
    else
        psc__log(ctx, PSC_LOG_INFO, "%s", ctx->sys.nvml_note);
    ctx->host = psc_host_topo_load();
    if (!ctx->host)
        psc__log(ctx, PSC_LOG_WARN, "hwloc could not load the host topology: NUMA placement off");

    st = psc__devices_probe(ctx);
    if (st != PSC_OK) {
        snprintf(errbuf, errlen, "%s", ctx->last_error);
        goto err_unload;
    }
    *out = ctx;
    return PSC_OK;

err_unload:
    free(ctx->info);
    free(ctx->gpu);
    psc_host_topo_free(ctx->host);
    psc_nvml_unload(&ctx->nvml);
    psc_cuda_unload(&ctx->cu);
err_free:
    free(ctx);
    return st;
}

static void psc__gpu_teardown(psc_context_t *ctx, psc_gpu_t *g)
{
    if (!g->ctx)
        return;
    ctx->cu.p_cuCtxSetCurrent(g->ctx);
    for (int k = 0; k < PSC_MAX_XFERS; k++)
        if (g->xstreams[k])
            ctx->cu.p_cuStreamDestroy(g->xstreams[k]);
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
    ctx->cu.p_cuCtxSetCurrent(NULL);
    ctx->cu.p_cuDevicePrimaryCtxRelease(g->dev);
    free(g->peer_on);
    free(g->peer_orig);
    memset(g, 0, sizeof(*g));
}

void psc_context_destroy(psc_context_t *ctx)
{
    CUcontext current = NULL;

    if (!ctx)
        return;
    /* The caller's current context survives (a primary context the caller retained stays valid). */
    ctx->cu.p_cuCtxGetCurrent(&current);
    psc__buffer_cache_free(ctx);
    for (int i = 0; i < ctx->ndev; i++)
        psc__gpu_teardown(ctx, &ctx->gpu[i]);
    ctx->cu.p_cuCtxSetCurrent(current);
    free(ctx->gpu);
    free(ctx->info);
    psc_host_topo_free(ctx->host);
    psc_nvml_unload(&ctx->nvml);
    psc_cuda_unload(&ctx->cu);
    free(ctx);
}

const char *psc_context_last_error(const psc_context_t *ctx)
{
    return ctx ? ctx->last_error : "no context";
}

int psc__valid_gpu(const psc_context_t *ctx, int i)
{
    return ctx && i >= 0 && i < ctx->ndev;
}

int psc__resolve_devices(const psc_context_t *ctx, const int *devices, int ndev, int *d, int cap)
{
    int m = ndev ? ndev : psc_device_count(ctx);

    if (!ctx || ndev < 0 || (ndev > 0 && !devices) || m > cap)
        return -1;
    for (int i = 0; i < m; i++) {
        d[i] = ndev ? devices[i] : i;
        if (!psc__valid_gpu(ctx, d[i]))
            return -1;
        for (int j = 0; j < i; j++)
            if (d[j] == d[i])
                return -1;
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
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_fill, g->module, "psc_fill"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_verify, g->module, "psc_verify"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_flip, g->module, "psc_flip_byte"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_copy, g->module, psc__copy_kernel_name(ctx)))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_chase, g->module, "psc_chase"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_ping, g->module, "psc_flag_ping"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_pong, g->module, "psc_flag_pong"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_probe, g->module, "psc_timer_probe"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_copy_bytes, g->module, "psc_copy_bytes"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_fill_kind, g->module, "psc_fill_kind"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_prepare_ex, g->module, "psc_prepare_ex"))) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&g->fn_verify_ex, g->module, "psc_verify_ex"))) != PSC_OK ||
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

psc_status_t psc__gpu_peer_enable(psc_context_t *ctx, int from, int to)
{
    psc_status_t st;
    CUresult rc;

    if ((st = psc__gpu_use(ctx, to)) != PSC_OK || (st = psc__gpu_use(ctx, from)) != PSC_OK)
        return st;
    if (ctx->gpu[from].peer_on[to])
        return PSC_OK;
    rc = ctx->cu.p_cuCtxEnablePeerAccess(ctx->gpu[to].ctx, 0);
    if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
        return psc__cu_result(ctx, rc, "cuCtxEnablePeerAccess");
    if (ctx->gpu[from].peer_orig[to] < 0) /* the first change in this call: what the caller had */
        ctx->gpu[from].peer_orig[to] = rc == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    ctx->gpu[from].peer_on[to] = 1;
    return PSC_OK;
}

psc_status_t psc__gpu_peer_disable(psc_context_t *ctx, int from, int to)
{
    psc_status_t st;
    CUresult rc;

    if ((st = psc__gpu_use(ctx, to)) != PSC_OK || (st = psc__gpu_use(ctx, from)) != PSC_OK)
        return st;
    rc = ctx->cu.p_cuCtxDisablePeerAccess(ctx->gpu[to].ctx);
    if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)
        return psc__cu_result(ctx, rc, "cuCtxDisablePeerAccess");
    if (ctx->gpu[from].peer_orig[to] < 0)
        ctx->gpu[from].peer_orig[to] = rc == CUDA_SUCCESS;
    ctx->gpu[from].peer_on[to] = 0;
    return PSC_OK;
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

psc_status_t psc__launch_on(psc_context_t *ctx, CUstream s, CUfunction fn, unsigned blocks, unsigned threads,
                            void **params)
{
    return PSC_CU(ctx, cuLaunchKernel, (fn, blocks, 1, 1, threads, 1, 1, 0, s, params, NULL));
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
