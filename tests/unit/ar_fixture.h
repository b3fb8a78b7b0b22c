/*
 * The all-reduce unit tests' fixture (test_allreduce.c, test_allreduce_rs.c, test_allreduce_ag.c): three fake
 * GPUs of one process, a stream and a send and a recv buffer of AR_FIXTURE_BYTES (the including file defines it)
 * on each, and the helpers every one of those tests needs.
 */
#ifndef PSC_TESTS_AR_FIXTURE_H
#define PSC_TESTS_AR_FIXTURE_H

#include <cuda.h>

#include "allreduce/allreduce.h"
#include "fake_context.h"
#include "internal.h"

#define N 3

static const int devs[N] = {0, 1, 2};
static CUstream streams[N];
static CUdeviceptr sendb[N], recvb[N];

static int setup(void **state)
{
    if (psc_test_open_fake_gpus(state, "3") != 0)
        return -1;
    for (int i = 0; i < N; i++)
        if (psc__gpu_use(g_ctx, i) != PSC_OK || g_ctx->cu.p_cuStreamCreate(&streams[i], CU_STREAM_NON_BLOCKING) ||
            g_ctx->cu.p_cuMemAlloc(&sendb[i], AR_FIXTURE_BYTES) || g_ctx->cu.p_cuMemAlloc(&recvb[i], AR_FIXTURE_BYTES))
            return -1;
    return 0;
}

static void sync_all(void)
{
    for (int i = 0; i < N; i++)
        assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(streams[i]), CUDA_SUCCESS);
}

static size_t esize(int dt)
{
    return dt == PSC_AR_FLOAT32 ? 4 : 2;
}

#endif
