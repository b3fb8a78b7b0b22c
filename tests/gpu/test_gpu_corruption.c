/*
 * The checks catch a wrong byte: the test hook flips one destination byte
 * after each timed sample, and the result must fail, naming that offset, the
 * expected and the found value. A clean run right after must pass again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "gpu_common.h"
#include "../../src/lib/pattern/pattern.h"

static void psc__corrupt_and_catch(const psc_bw_case_t *c, int64_t offset)
{
    psc_measure_opts_t o = psc_test_opts((16ull << 20) + 7);
    psc_bw_result_t r;

    psc_test_corrupt(offset);
    assert_int_equal(psc_bw_run(g_ctx, c, &o, &r), PSC_OK);
    assert_int_equal(r.status, PSC_RESULT_FAILED);
    assert_int_equal(r.verify.checked, o.samples);
    assert_int_equal(r.verify.bad_samples, o.samples);   /* every timed sample, no warm-up */
    assert_int_equal(r.verify.bad_bytes, o.samples);     /* one byte each */
    assert_int_equal(r.verify.first_bad_offset, offset);
    assert_int_equal(r.verify.found, r.verify.expected ^ 0x5A);
    assert_non_null(strstr(r.reason, "wrong data"));
    assert_int_equal(r.nsamples, o.samples);             /* the figures are still there */

    psc_test_corrupt(-1);
    assert_int_equal(psc_bw_run(g_ctx, c, &o, &r), PSC_OK);
    assert_int_equal(r.status, PSC_RESULT_PASSED);
    assert_int_equal(r.verify.bad_bytes, 0);
}

static void test_local_copy_corruption(void **state)
{
    psc_bw_case_t c = psc_test_case("gpu_local_ce", 0, 0, 0), sm = psc_test_case("gpu_local_sm", 0, 0, 0);

    (void)state;
    psc__corrupt_and_catch(&c, 0);
    psc__corrupt_and_catch(&c, 12345);
    psc__corrupt_and_catch(&c, (16 << 20) + 6); /* the last byte, in the tail */
    psc__corrupt_and_catch(&sm, 3333);
}

/*
 * The one-way local tests: a write-only case is checked byte for byte as a copy's destination; a read-only
 * case's sum is checked, so a byte flipped in a source after it was read fails the round that reads it again
 * (round 3 of 3 reads what round 1 read), and the result says the sum differed.
 */
static void test_local_one_way_corruption(void **state)
{
    psc_bw_case_t wr = psc_test_case("gpu_local_write_sm", 0, 0, 0), rd = psc_test_case("gpu_local_read_sm", 0, 0, 0);
    psc_measure_opts_t o = psc_test_opts((16ull << 20) + 7);
    psc_bw_result_t r;

    (void)state;
    psc__corrupt_and_catch(&wr, 4097);
    psc__corrupt_and_catch(&wr, (16 << 20) + 6);
    psc_test_corrupt(12345);
    assert_int_equal(psc_bw_run(g_ctx, &rd, &o, &r), PSC_OK);
    psc_test_corrupt(-1);
    assert_int_equal(r.status, PSC_RESULT_FAILED);
    assert_int_equal(r.verify.checked, o.samples);
    assert_int_equal(r.verify.bad_samples, 1);
    assert_non_null(strstr(r.reason, "the sum of the words read differs"));
    assert_int_equal(psc_bw_run(g_ctx, &rd, &o, &r), PSC_OK);
    assert_int_equal(r.status, PSC_RESULT_PASSED);
}

/* Bulk copies (TMA) between GPUs, read and write: a byte flipped after each sample is caught where it is. */
static void test_tma_copy_corruption(void **state)
{
    psc_bw_case_t rd = psc_test_case("gpu_to_gpu_read_tma", 0, 1, 1), wr = psc_test_case("gpu_to_gpu_write_tma", 0, 1, 0);
    psc_device_info_t a, b;

    (void)state;
    if (psc_device_count(g_ctx) < 2 || psc_device_info(g_ctx, 0, &a) != PSC_OK ||
        psc_device_info(g_ctx, 1, &b) != PSC_OK || a.cc_major < 9 || b.cc_major < 9)
        skip(); /* two GPUs with bulk copies (peer access, as test_peer_copy_corruption assumes) */
    psc__corrupt_and_catch(&rd, 4097);
    psc__corrupt_and_catch(&wr, (16 << 20) + 6); /* the tail, copied by plain stores */
    psc__corrupt_and_catch(&wr, 16384 * 3 + 5);  /* a bulk chunk past the first */
}

static void test_host_copy_corruption(void **state)
{
    psc_bw_case_t d2h = psc_test_case("gpu_to_host_ce", 0, PSC_HOST, 0);
    psc_bw_case_t h2d = psc_test_case("host_to_gpu_ce", PSC_HOST, 0, 0);
    psc_bw_case_t pageable = psc_test_case("gpu_to_host_pageable_ce", 0, PSC_HOST, 0); /* checked by the CPU */
    psc_bw_case_t registered = psc_test_case("gpu_to_host_registered_sm", 0, PSC_HOST, 0);

    (void)state;
    psc__corrupt_and_catch(&d2h, 4097);
    psc__corrupt_and_catch(&h2d, 999999);
    psc__corrupt_and_catch(&pageable, 77);
    psc__corrupt_and_catch(&registered, (16 << 20) + 1);
}

/* Several destinations checked at once (one per GPU, pageable ones on the CPU meanwhile): the bad one is found. */
static void test_concurrent_checks_corruption(void **state)
{
    const char *const names[] = {"all_to_host_ce", "host_gpu_bidir_pageable_ce", "all_host_bidir_sm"};

    (void)state;
    for (size_t t = 0; t < sizeof(names) / sizeof(names[0]); t++) {
        psc_bw_case_t c[PSC_MAX_GPUS];
        size_t n = 0;

        assert_int_equal(psc_bw_cases(g_ctx, psc_test_id(names[t]), NULL, 0, c, PSC_MAX_GPUS, &n), PSC_OK);
        assert_true(n >= 1);
        psc__corrupt_and_catch(&c[0], 2024);
    }
}

static void test_peer_copy_corruption(void **state)
{
    psc_bw_case_t rd = psc_test_case("gpu_to_gpu_read_ce", 1, 0, 0);
    psc_bw_case_t wr = psc_test_case("gpu_to_gpu_write_sm", 0, 1, 0);

    (void)state;
    if (psc_device_count(g_ctx) < 2)
        skip();
    psc__corrupt_and_catch(&rd, 777);
    psc__corrupt_and_catch(&wr, 8 << 20);
}

static void test_pattern_is_not_poison(void **state)
{
    (void)state;
    for (uint64_t w = 0; w < 100000; w++) {
        assert_true(psc_pattern_mix(1, w) != psc_pattern_mix(1 ^ PSC_POISON_XOR, w));
        assert_true(psc_pattern_mix(1, w) != psc_pattern_mix(1, w + 1));
    }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_pattern_is_not_poison),
    cmocka_unit_test(test_local_copy_corruption),
    cmocka_unit_test(test_local_one_way_corruption),
    cmocka_unit_test(test_tma_copy_corruption),
    cmocka_unit_test(test_host_copy_corruption),
    cmocka_unit_test(test_concurrent_checks_corruption),
    cmocka_unit_test(test_peer_copy_corruption),
};

PSC_GPU_TEST_MAIN(tests)
