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

/* A symbol of the fake driver the library loaded (the very copy it calls); NULL where none is loaded or has it. */
static inline void *psc_test_fake_sym(const char *name)
{
    void *h = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD), *p = NULL;

    if (h) {
        p = dlsym(h, name);
        dlclose(h); /* the library's own handle keeps it loaded */
    }
    return p;
}

/* An int(void) counter of the fake driver's (fake_cuda_graph_replays, say); -1 where it has none. */
static inline int psc_test_fake_count(const char *fn)
{
    int (*f)(void) = NULL;

    *(void **)&f = psc_test_fake_sym(fn);
    return f ? f() : -1;
}

/* Stream writes ('V') in the fake driver's operation log since it was cleared: how many went by the copy-engine
   path; -1 where it has no log. */
static inline int psc_test_fake_stream_writes(void)
{
    int (*op)(int, void **, void **) = NULL;
    void *s, *e;
    int n = 0, o;

    *(void **)&op = psc_test_fake_sym("fake_cuda_op");
    for (int k = 0; op && (o = op(k, &s, &e)) != 0; k++)
        n += o == 'V';
    return op ? n : -1;
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
    void (*run_copies)(int) = NULL;

    psc_test_fake_driver("contexts", count);
    if (psc_test_open_ctx(state) != 0 || !(*(void **)&run_copies = psc_test_fake_sym("fake_cuda_run_copies")))
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
