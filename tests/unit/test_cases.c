/*
 * Case generation for every pattern, on a context opened through the fake
 * driver (two GPUs, no hardware): how many cases, which transfers, which GPU
 * issues each, and that bad device lists are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "p2pscope/bench.h"

static psc_context_t *g_ctx;
static psc_bw_case_t g_cases[64];

static size_t cases_of(const char *test, const int *devs, int ndev)
{
    psc_bw_test_t t;
    size_t n = 0;

    assert_int_equal(psc_bw_test_from_name(test, &t), PSC_OK);
    assert_int_equal(psc_bw_cases(g_ctx, t, devs, ndev, g_cases, 64, &n), PSC_OK);
    return n;
}

static void expect_xfer(const psc_bw_case_t *c, int k, int src, int dst, int issuer)
{
    assert_true(k < c->nxfer);
    assert_int_equal(c->xfer[k].src, src);
    assert_int_equal(c->xfer[k].dst, dst);
    assert_int_equal(c->xfer[k].issuer, issuer);
}

static void test_pairs_and_issuers(void **state)
{
    (void)state;
    assert_int_equal(psc_device_count(g_ctx), 2);
    assert_int_equal(cases_of("gpu_to_gpu_read_ce", NULL, 0), 2);
    expect_xfer(&g_cases[0], 0, 0, 1, 1); /* read: the destination issues */
    expect_xfer(&g_cases[1], 0, 1, 0, 0);
    assert_int_equal(cases_of("gpu_to_gpu_write_sm", NULL, 0), 2);
    expect_xfer(&g_cases[0], 0, 0, 1, 0); /* write: the source issues */
    assert_int_equal(cases_of("gpu_to_gpu_bidir_read_ce", NULL, 0), 1);
    assert_int_equal(g_cases[0].nxfer, 2);
    expect_xfer(&g_cases[0], 0, 0, 1, 1);
    expect_xfer(&g_cases[0], 1, 1, 0, 0);
    assert_int_equal(cases_of("gpu_to_gpu_p2p_off_ce", NULL, 0), 2);
    expect_xfer(&g_cases[1], 0, 1, 0, 1);
    assert_int_equal(cases_of("gpu_to_gpu_bidir_p2p_off_ce", NULL, 0), 1); /* one per pair, each source issues */
    assert_int_equal(g_cases[0].nxfer, 2);
    expect_xfer(&g_cases[0], 0, 0, 1, 0);
    expect_xfer(&g_cases[0], 1, 1, 0, 1);
}

static void test_concurrency_patterns(void **state)
{
    (void)state;
    assert_int_equal(cases_of("all_to_one_read_ce", NULL, 0), 2);
    assert_int_equal(g_cases[0].src, PSC_ALL);
    assert_int_equal(g_cases[0].dst, 0);
    expect_xfer(&g_cases[0], 0, 1, 0, 0); /* the one GPU reads */
    assert_int_equal(cases_of("one_to_all_read_ce", NULL, 0), 2);
    expect_xfer(&g_cases[1], 0, 1, 0, 0); /* each destination reads */
    assert_int_equal(cases_of("ring_write_ce", NULL, 0), 1);
    assert_int_equal(g_cases[0].nxfer, 2);
    expect_xfer(&g_cases[0], 1, 1, 0, 1);
    assert_int_equal(cases_of("all_host_bidir_ce", NULL, 0), 1);
    assert_int_equal(g_cases[0].nxfer, 4);
    expect_xfer(&g_cases[0], 0, PSC_HOST, 0, 0);
    expect_xfer(&g_cases[0], 3, 1, PSC_HOST, 1);
    assert_int_equal(cases_of("host_to_all_sm", NULL, 0), 1);
    assert_int_equal(g_cases[0].nxfer, 2);
}

static void test_per_gpu_and_selection(void **state)
{
    const int one[] = {1}, both_rev[] = {1, 0}, dup[] = {0, 0}, bad[] = {2};
    psc_bw_test_t t;
    size_t n;

    (void)state;
    assert_int_equal(cases_of("host_gpu_bidir_pageable_ce", NULL, 0), 2);
    expect_xfer(&g_cases[1], 0, PSC_HOST, 1, 1);
    expect_xfer(&g_cases[1], 1, 1, PSC_HOST, 1);
    assert_int_equal(cases_of("gpu_local_sm", one, 1), 1);
    expect_xfer(&g_cases[0], 0, 1, 1, 1);
    assert_int_equal(cases_of("gpu_to_gpu_read_ce", one, 1), 0); /* needs two GPUs */
    assert_int_equal(cases_of("gpu_to_gpu_write_ce", both_rev, 2), 2);
    expect_xfer(&g_cases[0], 0, 1, 0, 1); /* in the order given */
    psc_bw_test_from_name("gpu_local_ce", &t);
    assert_int_equal(psc_bw_cases(g_ctx, t, dup, 2, g_cases, 64, &n), PSC_ERR_INVALID);
    assert_int_equal(psc_bw_cases(g_ctx, t, bad, 1, g_cases, 64, &n), PSC_ERR_INVALID);
    assert_int_equal(psc_bw_cases(g_ctx, 999, NULL, 0, g_cases, 64, &n), PSC_ERR_INVALID);
    assert_int_equal(psc_bw_cases(g_ctx, t, NULL, 0, NULL, 0, &n), PSC_OK); /* counting only */
    assert_int_equal(n, 2);
}

static void test_latency_cases(void **state)
{
    psc_lat_case_t c[8];
    psc_lat_test_t t;
    size_t n = 0;

    (void)state;
    psc_lat_test_from_name("gpu_to_gpu_chase", &t);
    assert_int_equal(psc_lat_cases(g_ctx, t, NULL, 0, c, 8, &n), PSC_OK);
    assert_int_equal(n, 2);
    assert_int_equal(c[0].src, 0); /* the chain lives on gpu0 */
    assert_int_equal(c[0].dst, 1); /* gpu1 reads it */
    assert_int_equal(c[0].issuer, 1);
    psc_lat_test_from_name("gpu_gpu_flag", &t);
    assert_int_equal(psc_lat_cases(g_ctx, t, NULL, 0, c, 8, &n), PSC_OK);
    assert_int_equal(c[1].issuer, 1); /* the initiator */
    psc_lat_test_from_name("gpu_to_host_sync_copy", &t);
    assert_int_equal(psc_lat_cases(g_ctx, t, NULL, 0, c, 8, &n), PSC_OK);
    assert_int_equal(n, 2);
    assert_int_equal(c[1].src, 1);
    assert_int_equal(c[1].dst, PSC_HOST);
    psc_lat_test_from_name("cpu_gpu_flag", &t);
    assert_int_equal(psc_lat_cases(g_ctx, t, NULL, 0, c, 8, &n), PSC_OK);
    assert_int_equal(c[0].src, PSC_HOST);
    assert_int_equal(psc_lat_test_from_name("gpu_to_gpu_copy_read_ce", &t), PSC_OK); /* pulled: the receiver issues */
    assert_int_equal(psc_lat_cases(g_ctx, t, NULL, 0, c, 8, &n), PSC_OK);
    assert_int_equal(n, 2);
    assert_int_equal(c[0].src, 0);
    assert_int_equal(c[0].dst, 1);
    assert_int_equal(c[0].issuer, 1);
    assert_int_equal(psc_lat_test_from_name("gpu_to_gpu_copy_sm", &t), PSC_OK); /* pushed: the source issues */
    assert_int_equal(psc_lat_cases(g_ctx, t, NULL, 0, c, 8, &n), PSC_OK);
    assert_int_equal(c[0].issuer, 0);
    assert_int_equal(psc_lat_test_from_name("gpu_local_copy_ce", &t), PSC_OK); /* one per GPU, inside it */
    assert_int_equal(psc_lat_cases(g_ctx, t, NULL, 0, c, 8, &n), PSC_OK);
    assert_int_equal(n, 2);
    assert_int_equal(c[1].src, 1);
    assert_int_equal(c[1].dst, 1);
    assert_int_equal(c[1].issuer, 1);
}

static int setup(void **state)
{
    char err[256];

    (void)state;
    setenv("P2PSCOPE_LIBCUDA", FAKE_LIBCUDA, 1);
    setenv("P2PSCOPE_LIBNVML", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("FAKE_CUDA_MODE", "gpus", 1);
    return psc_context_create(&g_ctx, err, sizeof(err)) == PSC_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    psc_context_destroy(g_ctx);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs_and_issuers),
        cmocka_unit_test(test_concurrency_patterns),
        cmocka_unit_test(test_per_gpu_and_selection),
        cmocka_unit_test(test_latency_cases),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
