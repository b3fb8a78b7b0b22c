/*
 * A context's life: open (load the drivers, hwloc, probe the GPUs) and close
 * (the destructors the modules registered, then every GPU). It calls
 * machine/ and the GPU runtime in gpu.c, and no module above them: those
 * register what is theirs to free (psc__context_on_close).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "machine/devices.h"
#include "machine/host_topo.h"

/* P2PSCOPE_LOG into ctx->log_level; a value it does not know logs warnings, and says so once. */
static void psc__log_level_from_env(psc_context_t *ctx)
{
    static const char *const names[] = {"none", "error", "warn", "info", "debug"};
    const char *v = getenv("P2PSCOPE_LOG");

    ctx->log_level = PSC_LOG_NONE;
    if (!v)
        return;
    for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcasecmp(v, names[i]) == 0) {
            ctx->log_level = (psc_log_level_t)i;
            return;
        }
    ctx->log_level = PSC_LOG_WARN;
    psc__log(ctx, PSC_LOG_WARN, "P2PSCOPE_LOG=%s not known: accepted none, error, warn, info or debug; logging warnings",
             v);
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

psc_status_t psc_context_create(psc_context_t **out, char *errbuf, size_t errlen)
{
    char scratch[256];
    psc_context_t *ctx;
    psc_status_t st;

    if (!out) {
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "psc_context_create: no place for the context (accepted: a psc_context_t **)");
        return PSC_ERR_INVALID;
    }
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
    psc__log_level_from_env(ctx);
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

void psc_context_destroy(psc_context_t *ctx)
{
    CUcontext current = NULL;
    int saved;

    if (!ctx)
        return;
    /* The caller's current context survives (a primary context the caller retained stays valid). */
    saved = ctx->cu.p_cuCtxGetCurrent(&current) == CUDA_SUCCESS;
    for (int k = 0; k < PSC__CLOSE_SLOTS; k++) /* the modules' objects, in the slots' order */
        if (ctx->close_fns[k])
            ctx->close_fns[k](ctx);
    for (int i = 0; i < ctx->ndev; i++)
        psc__gpu_teardown(ctx, &ctx->gpu[i]);
    if (saved)
        ctx->cu.p_cuCtxSetCurrent(current);
    free(ctx->gpu);
    free(ctx->info);
    psc_host_topo_free(ctx->host);
    psc_nvml_unload(&ctx->nvml);
    psc_cuda_unload(&ctx->cu);
    free(ctx);
}

void psc__context_on_close(psc_context_t *ctx, psc__close_slot_t slot, psc__close_fn fn)
{
    ctx->close_fns[slot] = fn;
}

psc_status_t psc__test_hooks_set(psc_context_t *ctx, const psc_test_hooks_t *h)
{
    if (!ctx)
        return PSC_ERR_INVALID;
    if (h && (h->fault < PSC_FAULT_NONE || h->fault > PSC_FAULT_MISPLACE))
        return psc__fail(ctx, PSC_ERR_INVALID, "fault kind %d out of range: accepted none, flip, drop, misplace",
                         (int)h->fault);
    if (h)
        ctx->hooks = *h;
    else
        psc__test_hooks_default(&ctx->hooks);
    return PSC_OK;
}
