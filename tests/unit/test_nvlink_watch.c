/*
 * NVLink traffic between two snapshots: plain differences, a counter that
 * wrapped, one that was reset, links and GPUs that came or went, counts out
 * of range; and a snapshot on the fake driver (no NVML: no counters).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "p2pscope.h"

static psc_nvlink_snapshot_t g_a, g_b;
static psc_nvlink_traffic_t g_t;

static int setup(void **state)
{
    (void)state;
    memset(&g_a, 0, sizeof(g_a));
    memset(&g_b, 0, sizeof(g_b));
    memset(&g_t, 0x5a, sizeof(g_t));
    g_a.ngpu = g_b.ngpu = 1;
    g_a.gpu[0].nlinks = g_b.gpu[0].nlinks = 2;
    return 0;
}

static void test_plain_difference(void **state)
{
    (void)state;
    g_a.gpu[0].tx[0] = 100;
    g_b.gpu[0].tx[0] = 1100;
    g_a.gpu[0].rx[0] = 7;
    g_b.gpu[0].rx[0] = 7;
    g_a.gpu[0].tx[1] = 5000000000ull;
    g_b.gpu[0].tx[1] = 9000000000ull;
    g_b.gpu[0].rx[1] = 1;
    assert_int_equal(psc_nvlink_traffic(&g_a, &g_b, &g_t), PSC_OK);
    assert_int_equal(g_t.ngpu, 1);
    assert_int_equal(g_t.gpu[0].nlinks, 2);
    assert_int_equal(g_t.gpu[0].known[0], 1);
    assert_int_equal(g_t.gpu[0].tx[0], 1000);
    assert_int_equal(g_t.gpu[0].rx[0], 0);
    assert_int_equal(g_t.gpu[0].known[1], 1);
    assert_int_equal(g_t.gpu[0].tx[1], 4000000000ull);
    assert_int_equal(g_t.gpu[0].rx[1], 1);
}

/* Near the top of the range and then small: it wrapped, and the bytes across the wrap count. */
static void test_wrapped_counter(void **state)
{
    (void)state;
    g_a.gpu[0].tx[0] = UINT64_MAX - 99;
    g_b.gpu[0].tx[0] = 400;
    assert_int_equal(psc_nvlink_traffic(&g_a, &g_b, &g_t), PSC_OK);
    assert_int_equal(g_t.gpu[0].known[0], 1);
    assert_int_equal(g_t.gpu[0].tx[0], 500);
}

/* A counter NVML would not give, before or after: that link's traffic is not known (not the count since boot). */
static void test_unread_counter(void **state)
{
    (void)state;
    g_a.gpu[0].tx[0] = PSC_NVLINK_UNREAD;
    g_b.gpu[0].tx[0] = 123456789;
    g_a.gpu[0].rx[1] = 5;
    g_b.gpu[0].rx[1] = PSC_NVLINK_UNREAD;
    assert_int_equal(psc_nvlink_traffic(&g_a, &g_b, &g_t), PSC_OK);
    assert_int_equal(g_t.gpu[0].known[0], 0);
    assert_int_equal(g_t.gpu[0].tx[0], 0);
    assert_int_equal(g_t.gpu[0].known[1], 0);
}

/* Backwards by less than half the range: the counters were reset; the traffic is not known, not 16 EB. */
static void test_reset_counter(void **state)
{
    (void)state;
    g_a.gpu[0].tx[0] = 1000000000000ull;
    g_b.gpu[0].tx[0] = 5000000000ull;
    g_a.gpu[0].rx[1] = 10;
    g_b.gpu[0].rx[1] = 9;
    g_a.gpu[0].tx[1] = 1;
    g_b.gpu[0].tx[1] = 2;
    assert_int_equal(psc_nvlink_traffic(&g_a, &g_b, &g_t), PSC_OK);
    assert_int_equal(g_t.gpu[0].known[0], 0);
    assert_int_equal(g_t.gpu[0].tx[0], 0);
    assert_int_equal(g_t.gpu[0].known[1], 0); /* rx went back: the link is not known, tx or not */
    assert_int_equal(g_t.gpu[0].tx[1], 0);
    assert_int_equal(g_t.gpu[0].rx[1], 0);
}

/* A link gone since the first snapshot is left out; a new one, or a GPU unread before, is not known. */
static void test_links_that_came_or_went(void **state)
{
    (void)state;
    g_a.gpu[0].nlinks = 4;
    g_b.gpu[0].nlinks = 1;
    g_b.gpu[0].tx[0] = 10;
    assert_int_equal(psc_nvlink_traffic(&g_a, &g_b, &g_t), PSC_OK);
    assert_int_equal(g_t.gpu[0].nlinks, 1);
    assert_int_equal(g_t.gpu[0].known[0], 1);
    assert_int_equal(g_t.gpu[0].tx[0], 10);
    assert_int_equal(g_t.gpu[0].known[1], 0); /* beyond nlinks: cleared */

    g_a.gpu[0].nlinks = 1;
    g_b.gpu[0].nlinks = 3;
    assert_int_equal(psc_nvlink_traffic(&g_a, &g_b, &g_t), PSC_OK);
    assert_int_equal(g_t.gpu[0].nlinks, 3);
    assert_int_equal(g_t.gpu[0].known[0], 1);
    assert_int_equal(g_t.gpu[0].known[1], 0);
    assert_int_equal(g_t.gpu[0].known[2], 0);

    g_a.gpu[0].nlinks = 0; /* counters not readable before */
    assert_int_equal(psc_nvlink_traffic(&g_a, &g_b, &g_t), PSC_OK);
    assert_int_equal(g_t.gpu[0].known[0], 0);
    assert_int_equal(g_t.gpu[0].tx[0], 0);

    g_b.gpu[0].nlinks = 0; /* nor after: no links at all */
    assert_int_equal(psc_nvlink_traffic(&g_a, &g_b, &g_t), PSC_OK);
    assert_int_equal(g_t.gpu[0].nlinks, 0);
}

static void test_gpu_counts_differ(void **state)
{
    (void)state;
    g_b.ngpu = 2;
    g_b.gpu[1].nlinks = 2;
    g_b.gpu[1].tx[0] = 50;
    assert_int_equal(psc_nvlink_traffic(&g_a, &g_b, &g_t), PSC_OK);
    assert_int_equal(g_t.ngpu, 2);
    assert_int_equal(g_t.gpu[1].nlinks, 2);
    assert_int_equal(g_t.gpu[1].known[0], 0);
    assert_int_equal(g_t.gpu[1].tx[0], 0);
    g_a.ngpu = 3; /* one gone: only the later snapshot's GPUs */
    g_b.ngpu = 1;
    assert_int_equal(psc_nvlink_traffic(&g_a, &g_b, &g_t), PSC_OK);
    assert_int_equal(g_t.ngpu, 1);
}

static void test_out_of_range_refused(void **state)
{
    psc_nvlink_traffic_t before;

    (void)state;
    memcpy(&before, &g_t, sizeof(before));
    assert_int_equal(psc_nvlink_traffic(NULL, &g_b, &g_t), PSC_ERR_INVALID);
    assert_int_equal(psc_nvlink_traffic(&g_a, NULL, &g_t), PSC_ERR_INVALID);
    assert_int_equal(psc_nvlink_traffic(&g_a, &g_b, NULL), PSC_ERR_INVALID);
    g_b.ngpu = PSC_MAX_GPUS + 1;
    assert_int_equal(psc_nvlink_traffic(&g_a, &g_b, &g_t), PSC_ERR_INVALID);
    g_b.ngpu = 1;
    g_a.ngpu = -1;
    assert_int_equal(psc_nvlink_traffic(&g_a, &g_b, &g_t), PSC_ERR_INVALID);
    g_a.ngpu = 1;
    g_b.gpu[0].nlinks = PSC_MAX_NVLINKS + 1;
    assert_int_equal(psc_nvlink_traffic(&g_a, &g_b, &g_t), PSC_ERR_INVALID);
    g_b.gpu[0].nlinks = 2;
    g_a.gpu[0].nlinks = -1;
    assert_int_equal(psc_nvlink_traffic(&g_a, &g_b, &g_t), PSC_ERR_INVALID);
    assert_memory_equal(&g_t, &before, sizeof(before)); /* written only on success */
}

/* The fake driver has no NVML: every GPU is in the snapshot, none with counters. */
static void test_snapshot_fake_driver(void **state)
{
    psc_context_t *ctx = NULL;
    char err[256];

    (void)state;
    assert_int_equal(psc_nvlink_snapshot(NULL, &g_a), PSC_ERR_INVALID);
    assert_int_equal(psc_context_create(&ctx, err, sizeof(err)), PSC_OK);
    assert_int_equal(psc_nvlink_snapshot(ctx, NULL), PSC_ERR_INVALID);
    memset(&g_a, 0x5a, sizeof(g_a));
    assert_int_equal(psc_nvlink_snapshot(ctx, &g_a), PSC_OK);
    assert_int_equal(g_a.ngpu, 3);
    for (int i = 0; i < g_a.ngpu; i++)
        assert_int_equal(g_a.gpu[i].nlinks, 0);
    psc_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_plain_difference, setup),
        cmocka_unit_test_setup(test_wrapped_counter, setup),
        cmocka_unit_test_setup(test_unread_counter, setup),
        cmocka_unit_test_setup(test_reset_counter, setup),
        cmocka_unit_test_setup(test_links_that_came_or_went, setup),
        cmocka_unit_test_setup(test_gpu_counts_differ, setup),
        cmocka_unit_test_setup(test_out_of_range_refused, setup),
        cmocka_unit_test_setup(test_snapshot_fake_driver, setup),
    };

    setenv("P2PSCOPE_LIBCUDA", FAKE_LIBCUDA, 1);
    setenv("P2PSCOPE_LIBNVML", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("FAKE_CUDA_MODE", "gpus", 1);
    setenv("FAKE_CUDA_COUNT", "3", 1);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
