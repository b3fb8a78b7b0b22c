/* The copies p2pscope ipc measures (ipc/ipc_measure.h): the bandwidth test each one is, over given buffers. */
#include "ipc/ipc_measure.h"

#include <string.h>

#include "xfer/bw.h"

/* The registry's test for a copy: the same GPU at both ends is a local copy; writes are issued by the source. */
static const char *psc__ipc_test(int bw, int same_gpu)
{
    static const char *const pair[PSC_IPC_NBW] = {"gpu_to_gpu_write_ce", "gpu_to_gpu_read_ce", "gpu_to_gpu_write_sm",
                                                   "gpu_to_gpu_read_sm"};
    static const char *const local[PSC_IPC_NBW] = {"gpu_local_ce", "gpu_local_ce", "gpu_local_sm", "gpu_local_sm"};

    return same_gpu ? local[bw] : pair[bw];
}

static int psc__ipc_writes(int bw)
{
    return bw == PSC_IPC_CE_WRITE || bw == PSC_IPC_SM_WRITE;
}

psc_status_t psc__ipc_bw(psc_context_t *ctx, int bw, int issuer, int other_gpu, psc_buffer_t *mine,
                         psc_buffer_t *other, const psc_measure_opts_t *o, psc_bw_result_t *out)
{
    psc_bw_case_t c;
    psc_status_t st;

    if (bw < 0 || bw >= PSC_IPC_NBW)
        return psc__fail(ctx, PSC_ERR_INVALID, "copy %d: accepted 0 to %d", bw, PSC_IPC_NBW - 1);
    memset(&c, 0, sizeof(c));
    if ((st = psc_bw_test_from_name(psc__ipc_test(bw, issuer == other_gpu), &c.test)) != PSC_OK)
        return psc__fail(ctx, st, "the bandwidth test of copy %s is missing", psc_ipc_bw_name(bw));
    c.nxfer = 1;
    c.issuer = c.xfer[0].issuer = issuer;
    c.src = c.xfer[0].src = psc__ipc_writes(bw) ? issuer : other_gpu;
    c.dst = c.xfer[0].dst = psc__ipc_writes(bw) ? other_gpu : issuer;
    return psc__bw_run_on(ctx, &c, o, psc__ipc_writes(bw) ? mine : other, psc__ipc_writes(bw) ? other : mine, out);
}

psc_status_t psc__ipc_rtt_pctl(psc_context_t *ctx, const double *ns, unsigned n, psc_pctl_t *out)
{
    if (psc_percentiles(ns, n, out) != PSC_OK)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for the percentiles of %u round trips", n);
    return PSC_OK;
}

unsigned psc__ipc_round_trips(const psc_ipc_opts_t *o, int a, int b)
{
    return a == b && o->round_trips > PSC_IPC_SAME_GPU_ROUND_TRIPS ? PSC_IPC_SAME_GPU_ROUND_TRIPS : o->round_trips;
}
