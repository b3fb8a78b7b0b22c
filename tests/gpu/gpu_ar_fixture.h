/*
 * The all-reduce GPU tests' fixture (test_gpu_allreduce.c, test_gpu_allgather.c): every GPU of the machine a rank
 * (at most MAXR), a stream and a send and a recv buffer of MAXB bytes (the including file defines it) on each, a
 * host buffer as large, and the helpers both need. After gpu_common.h.
 */
#ifndef PSC_TESTS_GPU_AR_FIXTURE_H
#define PSC_TESTS_GPU_AR_FIXTURE_H

#include <stdlib.h>

#include "allreduce/allreduce.h"
#include "internal.h"

#define MAXR 8

static int n;
static int devs[MAXR];
static CUstream streams[MAXR];
static CUdeviceptr sendb[MAXR], recvb[MAXR];
static unsigned char *host;

static int setup(void **state)
{
    (void)state;
    n = psc_device_count(g_ctx) < MAXR ? psc_device_count(g_ctx) : MAXR;
    host = malloc(MAXB);
    for (int i = 0; i < n; i++) {
        devs[i] = i;
        if (psc__gpu_use(g_ctx, i) != PSC_OK || g_ctx->cu.p_cuStreamCreate(&streams[i], CU_STREAM_NON_BLOCKING) ||
            g_ctx->cu.p_cuMemAlloc(&sendb[i], MAXB) || g_ctx->cu.p_cuMemAlloc(&recvb[i], MAXB))
            return -1;
    }
    return host ? 0 : -1;
}

static size_t esize(int dt)
{
    return dt == PSC_AR_FLOAT32 ? 4 : 2;
}

static void sync_all(void)
{
    for (int i = 0; i < n; i++)
        assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(streams[i]), CUDA_SUCCESS);
}

#endif
