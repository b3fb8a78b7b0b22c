/*
 * The public calls that use the GPUs, as an embedding application sees them:
 * options adopted whatever header the caller was built with (opts.c), and the
 * calling thread's current context and the peer access between primary
 * contexts left as the call found them (the guard, gpu_guard.c). The guarded
 * work is in each module's psc__*_held, which the library's own loops call
 * too, on options already adopted.
 */
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
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if ((st = psc__measure_opts_adopt(ctx, o, &full, NULL, 0)) != PSC_OK)
        return st;
    return psc__bw_run_held(ctx, c, &full, out);
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
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if ((st = psc__lat_opts_adopt(ctx, o, &full)) != PSC_OK)
        return st;
    return psc__lat_run_held(ctx, c, &full, out);
}

psc_status_t psc_timer_resolution(psc_context_t *ctx, int gpu, double *gpu_ns, double *host_ns)
{
    if (!ctx)
        return PSC_ERR_INVALID;
    return psc__timer_resolution_held(ctx, gpu, gpu_ns, host_ns);
}

psc_status_t psc_verify_run(psc_context_t *ctx, const psc_bw_case_t *c, const psc_verify_opts_t *o,
                            psc_verify_result_t *out)
{
    psc_verify_opts_t full;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if ((st = psc__verify_opts_adopt(ctx, o, &full)) != PSC_OK)
        return st;
    return psc__verify_run_held(ctx, c, &full, out);
}

psc_status_t psc_load_start(psc_context_t *ctx, const int *devices, int ndev, psc_load_t **out)
{
    if (!ctx)
        return PSC_ERR_INVALID;
    return psc__load_start_held(ctx, devices, ndev, out);
}

psc_status_t psc_load_stop(psc_load_t *load, psc_load_path_report_t *out, int cap, int *n)
{
    if (!psc__load_context(load))
        return PSC_ERR_INVALID;
    return psc__load_stop_held(load, out, cap, n);
}
