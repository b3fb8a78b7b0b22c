/*
 * A context on the fake driver (fake_libcuda.c, its path in FAKE_LIBCUDA), shared by the unit tests that
 * run library calls without a GPU: psc_test_fake_driver() picks the mode and GPU count (no NVML), and
 * psc_test_open_ctx / psc_test_close_ctx open and close g_ctx around a cmocka group.
 */
#ifndef PSC_TEST_FAKE_CONTEXT_H
#define PSC_TEST_FAKE_CONTEXT_H

#include <dlfcn.h>
#include <stdlib.h>

#include "p2pscope.h"

static psc_context_t *g_ctx;

/* An int(void) counter of the fake driver's (fake_cuda_graph_replays, say); -1 where it has none. */
static inline int psc_test_fake_count(const char *fn)
{
    void *h = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
    int (*f)(void) = NULL;
    int v = -1;

    if (h) {
        *(void **)&f = dlsym(h, fn);
        v = f ? f() : -1;
        dlclose(h);
    }
    return v;
}

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

/*
 * g_ctx on count fake GPUs whose primary contexts, memory and streams work
 * and whose kernels run on the CPU (fake_kernels.c): the measurement and
 * collective code end to end. 0, or -1 when the fake cannot be set up.
 */
static inline int psc_test_open_fake_gpus(void **state, const char *count)
{
    void (*run_copies)(int);
    void *h;

    psc_test_fake_driver("contexts", count);
    if (psc_test_open_ctx(state) != 0 || !(h = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD)))
        return -1;
    *(void **)&run_copies = dlsym(h, "fake_cuda_run_copies");
    dlclose(h);
    if (!run_copies)
        return -1;
    run_copies(1);
    return 0;
}

static int psc_test_close_ctx(void **state)
{
    (void)state;
    psc_context_destroy(g_ctx);
    return 0;
}

#endif
