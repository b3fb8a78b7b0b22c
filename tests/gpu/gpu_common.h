/* Shared by the GPU tests: open a context or skip (exit 77) on a machine without a GPU. */
#ifndef PSC_TESTS_GPU_COMMON_H
#define PSC_TESTS_GPU_COMMON_H

#include <stdio.h>
#include <string.h>

#include "p2pscope/bench.h"
#include "test_hooks.h"

#define PSC_TEST_SKIP 77

/* The context every test in the file uses; opened by PSC_GPU_TEST_MAIN. */
static psc_context_t *g_ctx;

/* Returns NULL after printing why when there is no driver or GPU. */
static inline psc_context_t *psc_test_open(void)
{
    char err[512];
    psc_context_t *ctx = NULL;
    psc_status_t st = psc_context_create(&ctx, err, sizeof(err));

    if (st != PSC_OK) {
        fprintf(stderr, "skipped: %s\n", err);
        return NULL;
    }
    return ctx;
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

/* main(): skip without a GPU, else run the file's cmocka tests with g_ctx open. */
#define PSC_GPU_TEST_MAIN(tests)                            \
    int main(void)                                          \
    {                                                       \
        int rc;                                             \
        g_ctx = psc_test_open();                            \
        if (!g_ctx)                                         \
            return PSC_TEST_SKIP;                           \
        rc = cmocka_run_group_tests(tests, NULL, NULL);     \
        psc_context_destroy(g_ctx);                         \
        return rc;                                          \
    }

#endif
