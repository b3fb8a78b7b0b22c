/*
 * The environment of the CPU-mapping tests: the knobs of the fake libgdrapi
 * (fake_libgdrapi.c) and of the fake driver's dma-buf and coherent platform
 * (fake_libcuda.c), cleared in one place, and the two machines the tests
 * start from.
 */
#ifndef PSC_TEST_FAKE_GDR_ENV_H
#define PSC_TEST_FAKE_GDR_ENV_H

#include <stdlib.h>

static inline void psc_test_gdr_knobs_clear(void)
{
    static const char *const knobs[] = {"FAKE_GDR_OPEN_FAIL", "FAKE_GDR_VERSION", "FAKE_GDR_DRV_VERSION",
                                        "FAKE_GDR_DMABUF", "FAKE_GDR_BAR1", "FAKE_GDR_PIN_FAIL", "FAKE_GDR_MAP_FAIL",
                                        "FAKE_GDR_MAP_SHADOW", "FAKE_CUDA_DRIVER_VERSION", "FAKE_CUDA_DMABUF",
                                        "FAKE_CUDA_COHERENT"};

    for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
        unsetenv(knobs[i]);
}

/* The lent H100/H200 machines: no libgdrapi, a CUDA 13.0 driver, no coherent platform. */
static inline void psc_test_gdr_none(void)
{
    psc_test_gdr_knobs_clear();
    setenv("P2PSCOPE_LIBGDRAPI", "/nonexistent/libgdrapi.so.2", 1);
}

#ifdef FAKE_LIBGDRAPI
/* gdrcopy installed (the fake), everything else as above. */
static inline void psc_test_gdr_fake(void)
{
    psc_test_gdr_knobs_clear();
    setenv("P2PSCOPE_LIBGDRAPI", FAKE_LIBGDRAPI, 1);
}
#endif

#endif
