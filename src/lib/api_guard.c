/*
 * The public calls that use the GPUs, as an embedding application sees them:
 * options adopted whatever header the caller was built with (opts.c), and the
 * calling thread's current context and the peer access between primary
 * contexts left as the call found them (the guard, gpu_guard.c). The work
 * itself is in psc__*.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "lat/lat.h"
#include "mem/buffer.h"
#include "opts.h"
#include "verify/integrity.h"
#include "verify/load.h"
#include "xfer/bw.h"

psc_status_t psc_measure_opts_check(const psc_measure_opts_t *o, char *errbuf, size_t errlen)
{
    psc_measure_opts_t full;
    char scratch[8];
    psc_status_t st;

    if (!errbuf || !errlen) {
        errbuf = scratch;
        errlen = sizeof(scratch);
    }
    if ((st = psc__measure_opts_adopt(NULL, o, &full, errbuf, errlen)) != PSC_OK)
        return st;
    return psc__measure_opts_check(&full, errbuf, errlen);
}

psc_status_t psc_bw_run(psc_context_t *ctx, const psc_bw_case_t *c, const psc_measure_opts_t *o,
                        psc_bw_result_t *out)
{
    psc_measure_opts_t full;
    psc_bw_result_t *res;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if ((st = psc__measure_opts_adopt(ctx, o, &full, NULL, 0)) != PSC_OK)
        return st;
    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_bw_run: no place for the result (accepted: a psc_bw_result_t)");
    if (!(res = malloc(sizeof(*res))))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for a result");
    psc__guard_enter(ctx);
    st = psc__guard_leave(ctx, psc__bw_run(ctx, c, &full, res));
    if (st == PSC_OK) /* written only when the caller's state was put back too */
        memcpy(out, res, sizeof(*res));
    free(res);
    return st;
}

void psc_bw_release_buffers(psc_context_t *ctx)
{
    if (!ctx)
        return;
    psc__guard_enter(ctx);
    psc__bw_release_buffers(ctx);
    psc__guard_leave(ctx, PSC_OK);
}

psc_status_t psc_lat_run(psc_context_t *ctx, const psc_lat_case_t *c, const psc_lat_opts_t *o, psc_lat_result_t *out)
{
    psc_lat_opts_t full;
    psc_lat_result_t *res;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if ((st = psc__lat_opts_adopt(ctx, o, &full)) != PSC_OK)
        return st;
    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_lat_run: no place for the result (accepted: a psc_lat_result_t)");
    if (!(res = malloc(sizeof(*res))))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for a result");
    psc__guard_enter(ctx);
    st = psc__guard_leave(ctx, psc__lat_run(ctx, c, &full, res));
    if (st == PSC_OK)
        memcpy(out, res, sizeof(*res));
    free(res);
    return st;
}

psc_status_t psc_timer_resolution(psc_context_t *ctx, int gpu, double *gpu_ns, double *host_ns)
{
    double g = 0, h = 0;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!gpu_ns || !host_ns)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_timer_resolution: %s is NULL (accepted: a double to fill)",
                         gpu_ns ? "host_ns" : "gpu_ns");
    psc__guard_enter(ctx);
    st = psc__guard_leave(ctx, psc__timer_resolution(ctx, gpu, &g, &h));
    if (st == PSC_OK) {
        *gpu_ns = g;
        *host_ns = h;
    }
    return st;
}

psc_status_t psc_verify_run(psc_context_t *ctx, const psc_bw_case_t *c, const psc_verify_opts_t *o,
                            psc_verify_result_t *out)
{
    psc_verify_opts_t full;
    psc_verify_result_t res;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if ((st = psc__verify_opts_adopt(ctx, o, &full)) != PSC_OK)
        return st;
    if (full.load && psc__load_context(full.load) != ctx)
        return psc__fail(ctx, PSC_ERR_INVALID, "the background load belongs to another context");
    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_verify_run: no place for the result (accepted: a psc_verify_result_t)");
    psc__guard_enter(ctx);
    st = psc__verify_run(ctx, c, &full, &res);
    /* The load's copies finish before peer access goes back under them (the next run starts them again). */
    if (full.load && ctx->guard_depth == 1) {
        psc_status_t ls = psc__load_settle(full.load);

        st = st == PSC_OK ? ls : st;
    }
    st = psc__guard_leave(ctx, st);
    if (st == PSC_OK)
        *out = res;
    return st;
}

psc_status_t psc_load_start(psc_context_t *ctx, const int *devices, int ndev, psc_load_t **out)
{
    psc_load_t *load = NULL;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_load_start: no place for the load given");
    psc__guard_enter(ctx);
    st = psc__guard_leave(ctx, psc__load_start(ctx, devices, ndev, &load));
    if (st == PSC_OK) {
        *out = load;
    } else if (load) { /* set up, but the caller's state could not be put back: not handed over */
        psc__guard_enter(ctx);
        psc__guard_leave(ctx, psc__load_stop(load, NULL, 0, NULL));
    }
    return st;
}

psc_status_t psc_load_stop(psc_load_t *load, psc_load_path_report_t *out, int cap, int *n)
{
    psc_context_t *ctx = load ? psc__load_context(load) : NULL;

    if (!ctx)
        return PSC_ERR_INVALID;
    psc__guard_enter(ctx);
    return psc__guard_leave(ctx, psc__load_stop(load, out, cap, n));
}
