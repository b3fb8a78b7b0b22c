/*
 * A context on the fake driver (fake_libcuda.c, its path in FAKE_LIBCUDA), shared by the unit tests that
 * run library calls without a GPU: psc_test_fake_driver() picks the mode and GPU count (no NVML), and
 * psc_test_open_ctx / psc_test_close_ctx open and close g_ctx around a cmocka group.
 */
#ifndef PSC_TEST_FAKE_CONTEXT_H
#define PSC_TEST_FAKE_CONTEXT_H

#include <stdlib.h>

#include "p2pscope.h"

static psc_context_t *g_ctx;

static inline void psc_test_fake_driver(const char *mode, const char *count)
{
    setenv("P2PSCOPE_LIBCUDA", FAKE_LIBCUDA, 1);
    setenv("P2PSCOPE_LIBNVML", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("FAKE_CUDA_MODE", mode, 1);
    setenv("FAKE_CUDA_COUNT", count, 1);
}

static int psc_test_open_ctx(void **state)
{
    char err[256];

    (void)state;
    return psc_context_create(&g_ctx, err, sizeof(err)) == PSC_OK ? 0 : -1;
}

static int psc_test_close_ctx(void **state)
{
    (void)state;
    psc_context_destroy(g_ctx);
    return 0;
}

#endif
