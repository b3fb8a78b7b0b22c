/* Flag round trips in two halves (lat/flag.h): the responder's launch and end, the initiator's timed run. */
#include <stdlib.h>

#include "lat/flag.h"

psc_status_t psc__dev_scratch(psc_context_t *ctx, int g, size_t len, CUdeviceptr *out)
{
    psc_status_t st;
    void *zero;

    if ((st = psc__gpu_use(ctx, g)) != PSC_OK || (st = PSC_CU(ctx, cuMemAlloc, (out, len))) != PSC_OK)
        return st;
    zero = calloc(1, len);
    if (!zero) {
        ctx->cu.p_cuMemFree(*out);
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    }
    st = PSC_CU(ctx, cuMemcpyHtoD, (*out, zero, len));
    free(zero);
    if (st != PSC_OK)
        ctx->cu.p_cuMemFree(*out);
    return st;
}

void psc__dev_scratch_free(psc_context_t *ctx, int g, CUdeviceptr p)
{
    if (p && psc__gpu_use(ctx, g) == PSC_OK)
        ctx->cu.p_cuMemFree(p);
}

psc_status_t psc__flag_pong_start(psc_context_t *ctx, int g, CUdeviceptr my_flag, CUdeviceptr peer_ans,
                                  unsigned iters, uint64_t timeout_ns, psc_flag_pong_t *p)
{
    void *params[] = {&my_flag, &peer_ans, &iters, &timeout_ns, &p->err};
    psc_status_t st;

    p->gpu = g;
    p->err = 0;
    if ((st = psc__gpu_stream(ctx, g, 1, &p->stream)) != PSC_OK ||
        (st = psc__dev_scratch(ctx, g, sizeof(unsigned), &p->err)) != PSC_OK)
        return st;
    if ((st = psc__launch_on(ctx, p->stream, ctx->gpu[g].fn_pong, 1, 1, params)) != PSC_OK) {
        psc__dev_scratch_free(ctx, g, p->err);
        p->err = 0;
    }
    return st;
}

psc_status_t psc__flag_pong_end(psc_context_t *ctx, psc_flag_pong_t *p, int *gave_up)
{
    unsigned err = 0;
    psc_status_t st;

    if ((st = psc__gpu_use(ctx, p->gpu)) == PSC_OK && (st = PSC_CU(ctx, cuStreamSynchronize, (p->stream))) == PSC_OK)
        st = PSC_CU(ctx, cuMemcpyDtoH, (&err, p->err, sizeof(err)));
    psc__dev_scratch_free(ctx, p->gpu, p->err);
    p->err = 0;
    if (st == PSC_OK)
        *gave_up = err != 0;
    return st;
}

psc_status_t psc__flag_ping(psc_context_t *ctx, int g, CUdeviceptr peer_flag, CUdeviceptr my_ans, unsigned iters,
                            uint64_t timeout_ns, double *rtt_ns, double *ns_per_cycle, int *gave_up)
{
    uint64_t cal[2] = {0, 0}, *cycles = calloc(iters ? iters : 1, sizeof(*cycles));
    CUdeviceptr dcyc = 0, dcal = 0, derr = 0;
    unsigned err = 0;
    psc_status_t st, sst;

    if (!cycles)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for %u round trips", iters);
    if ((st = psc__dev_scratch(ctx, g, (size_t)iters * sizeof(uint64_t), &dcyc)) != PSC_OK ||
        (st = psc__dev_scratch(ctx, g, 2 * sizeof(uint64_t), &dcal)) != PSC_OK ||
        (st = psc__dev_scratch(ctx, g, sizeof(unsigned), &derr)) != PSC_OK)
        goto out;
    {
        void *params[] = {&peer_flag, &my_ans, &iters, &dcyc, &dcal, &timeout_ns, &derr};

        st = psc__launch(ctx, g, ctx->gpu[g].fn_ping, 1, 1, params);
        /* Waited for even after a failed launch: nothing of it may still run when the scratch goes. */
        if ((sst = PSC_CU(ctx, cuStreamSynchronize, (ctx->gpu[g].stream))) != PSC_OK && st == PSC_OK)
            st = sst;
    }
    if (st != PSC_OK || (st = PSC_CU(ctx, cuMemcpyDtoH, (&err, derr, sizeof(err)))) != PSC_OK ||
        (st = PSC_CU(ctx, cuMemcpyDtoH, (cycles, dcyc, (size_t)iters * sizeof(uint64_t)))) != PSC_OK ||
        (st = PSC_CU(ctx, cuMemcpyDtoH, (cal, dcal, sizeof(cal)))) != PSC_OK)
        goto out;
    *gave_up = err != 0;
    *ns_per_cycle = cal[1] ? (double)cal[0] / (double)cal[1] : 0;
    for (unsigned i = 0; !err && i < iters; i++)
        rtt_ns[i] = (double)cycles[i] * *ns_per_cycle;
out:
    psc__dev_scratch_free(ctx, g, dcyc);
    psc__dev_scratch_free(ctx, g, dcal);
    psc__dev_scratch_free(ctx, g, derr);
    free(cycles);
    return st;
}
