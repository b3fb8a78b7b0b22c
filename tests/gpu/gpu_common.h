/*
 * Shared by the GPU tests: open a context, or skip (exit 77) on a machine
 * without a driver or a GPU. Any other failure to open one fails the test
 * binary: a broken driver, a fatbin that does not load or a library bug must
 * not pass as "skipped".
 */
#ifndef PSC_TESTS_GPU_COMMON_H
#define PSC_TESTS_GPU_COMMON_H

#include <stdio.h>
#include <string.h>

#include "p2pscope/bench.h"
#include "test_hooks.h"

#define PSC_TEST_SKIP 77

/* The context every test in the file uses; opened by PSC_GPU_TEST_MAIN. */
static psc_context_t *g_ctx;

/* Skip only for these: nothing to measure on this machine. */
static inline int psc_test_skippable(psc_status_t st)
{
    return st == PSC_ERR_NO_DRIVER || st == PSC_ERR_NO_DEVICE;
}

/*
 * The context, or NULL after printing why; *st says whether that is a skip
 * (psc_test_skippable) or a failure.
 */
static inline psc_context_t *psc_test_open(psc_status_t *st)
{
    char err[512] = "";
    psc_context_t *ctx = NULL;

    *st = psc_context_create(&ctx, err, sizeof(err));
    if (*st != PSC_OK) {
        fprintf(stderr, "%s: %s (%s)\n", psc_test_skippable(*st) ? "skipped" : "FAILED to open a context",
                err, psc_status_string(*st));
        return NULL;
    }
    return ctx;
}

/*
 * A waived result's reason is one a test accepts: a GPU pair without peer
 * access, or a CPU-mapping test on a GPU where no backend maps memory (the
 * probe agrees: none usable there).
 */
static inline int psc_test_waiver_ok(const char *test, const char *reason, int src, int dst)
{
    psc_gpumap_report_t r;
    int gpu = src >= 0 ? src : dst;

    if (strstr(reason, "peer"))
        return 1;
    if (strstr(test, "_tma")) { /* bulk copies: only on a GPU below compute capability 9.0 */
        psc_device_info_t a, b;

        return strstr(reason, "need compute capability 9.0") && psc_device_info(g_ctx, src, &a) == PSC_OK &&
               psc_device_info(g_ctx, dst, &b) == PSC_OK && (a.cc_major < 9 || b.cc_major < 9);
    }
    if (!strstr(test, "gpumap") || !strstr(reason, "no CPU mapping") ||
        psc_gpumap_probe(g_ctx, gpu, &r) != PSC_OK)
        return 0;
    for (int b = 0; b < PSC_GPUMAP_BACKENDS; b++)
        if (r.usable[b])
            return 0;
    return 1;
}

/* Flip the destination byte at this offset after each timed sample of psc_bw_run (negative: off). */
static inline void psc_test_corrupt(int64_t offset)
{
    psc_test_hooks_t h;

    psc__test_hooks_default(&h);
    h.corrupt_offset = offset;
    psc__test_hooks_set(g_ctx, &h);
}

/* Small, quick measurement options that still cross several 16-byte chunks and a tail. */
static inline psc_measure_opts_t psc_test_opts(uint64_t size)
{
    psc_measure_opts_t o;

    psc_measure_opts_default(&o);
    o.size = size;
    o.iterations = 2;
    o.warmup = 1;
    o.samples = o.max_samples = 3;
    return o;
}

static inline psc_bw_test_t psc_test_id(const char *name)
{
    psc_bw_test_t t = -1;

    if (psc_bw_test_from_name(name, &t) != PSC_OK)
        fprintf(stderr, "no test %s\n", name);
    return t;
}

/* A case of one transfer. */
static inline psc_bw_case_t psc_test_case(const char *test, int src, int dst, int issuer)
{
    psc_bw_case_t c;

    memset(&c, 0, sizeof(c));
    c.test = psc_test_id(test);
    c.src = src;
    c.dst = dst;
    c.issuer = issuer;
    c.nxfer = 1;
    c.xfer[0] = (psc_xfer_t){src, dst, issuer};
    return c;
}

/*
 * main(): skip without a driver or GPU, fail on any other open error, else run the file's cmocka tests
 * (with a group setup: PSC_GPU_TEST_MAIN_SETUP).
 */
#define PSC_GPU_TEST_MAIN_SETUP(tests, setup)                    \
    int main(void)                                               \
    {                                                            \
        psc_status_t st;                                         \
        int rc;                                                  \
        g_ctx = psc_test_open(&st);                              \
        if (!g_ctx)                                              \
            return psc_test_skippable(st) ? PSC_TEST_SKIP : 1;   \
        rc = cmocka_run_group_tests(tests, setup, NULL);         \
        psc_context_destroy(g_ctx);                              \
        return rc;                                               \
    }
#define PSC_GPU_TEST_MAIN(tests) PSC_GPU_TEST_MAIN_SETUP(tests, NULL)

#endif
