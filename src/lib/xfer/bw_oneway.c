/*
 * The local SM tests that only read or only write (bw_oneway.h): the write-only rounds' expectation, the
 * read-only kernel's reference sum, and the sum's check.
 */
#include "xfer/bw_oneway.h"

psc_expect_t psc__oneway_write_expect(uint64_t size, unsigned round)
{
    psc_expect_t e = psc_expect_pattern(PSC_PAT_ADDRESS, 0, size);

    e.invert = (int32_t)(round & 1);
    return e;
}

psc_status_t psc__oneway_sum_zero(psc_context_t *ctx, int gpu, CUdeviceptr word)
{
    uint64_t zero = 0;
    psc_status_t st;

    if ((st = psc__gpu_use(ctx, gpu)) != PSC_OK)
        return st;
    return PSC_CU(ctx, cuMemcpyHtoD, (word, &zero, sizeof(zero)));
}

psc_status_t psc__oneway_sum_want(psc_context_t *ctx, int gpu, CUdeviceptr word, uint64_t size, uint64_t seed,
                                  uint64_t *out)
{
    psc_expect_t e = psc_expect_pattern(PSC_PAT_RANDOM, seed, size);
    unsigned blocks = (unsigned)(ctx->info[gpu].sm_count > 0 ? ctx->info[gpu].sm_count : 16) * 2;
    void *params[] = {&size, &e, &word};
    psc_gpu_t *g = &ctx->gpu[gpu];
    psc_status_t st;

    if ((st = psc__oneway_sum_zero(ctx, gpu, word)) != PSC_OK ||
        (st = psc__launch_on(ctx, g->stream, g->fn_sum, blocks, 1024, params)) != PSC_OK ||
        (st = PSC_CU(ctx, cuStreamSynchronize, (g->stream))) != PSC_OK)
        return st;
    return PSC_CU(ctx, cuMemcpyDtoH, (out, word, sizeof(*out)));
}

unsigned psc__oneway_bytes_differ(uint64_t a, uint64_t b)
{
    unsigned n = 0;

    for (uint64_t d = a ^ b; d; d >>= 8)
        n += (d & 0xff) != 0;
    return n;
}

psc_status_t psc__oneway_sum_check(psc_context_t *ctx, int gpu, CUdeviceptr word, uint64_t want, psc_check_t *out)
{
    uint64_t got = 0;
    psc_status_t st;

    if ((st = psc__gpu_use(ctx, gpu)) != PSC_OK || (st = PSC_CU(ctx, cuMemcpyDtoH, (&got, word, sizeof(got)))) != PSC_OK)
        return st;
    *out = PSC_CHECK_CLEAN;
    out->bad_bytes = psc__oneway_bytes_differ(got, want);
    return PSC_OK;
}
