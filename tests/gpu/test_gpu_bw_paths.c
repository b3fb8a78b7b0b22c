/*
 * A verified copy on every path: GPU->GPU read and write, host->GPU, GPU->host
 * and device-local, at a size with a tail that is not a whole 16 bytes.
 * Figures must be positive and under the GPU's own memory bandwidth.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gpu_common.h"

static void psc__check_case(const psc_bw_case_t *c, uint64_t size)
{
    psc_measure_opts_t o = psc_test_opts(size);
    psc_bw_result_t r;
    psc_device_info_t d;

    assert_int_equal(psc_bw_run(g_ctx, c, &o, &r), PSC_OK);
    printf("  %s %d -> %d (issuer %d), %llu B: %s %.2f GB/s %s\n", psc_bw_test_name(c->test), c->src, c->dst,
           c->issuer, (unsigned long long)size, psc_result_status_string(r.status), r.stats.median, r.reason);
    if (r.status == PSC_RESULT_WAIVED) {
        /* Only a GPU pair without peer access may be waived, and it must say why. */
        assert_true(c->src >= 0 && c->dst >= 0);
        assert_non_null(strstr(r.reason, "peer"));
        return;
    }
    assert_int_equal(r.status, PSC_RESULT_PASSED);
    assert_int_equal(r.nsamples, o.samples);
    assert_int_equal(r.verify.checked, o.warmup + o.samples);
    assert_int_equal(r.verify.bad_bytes, 0);
    assert_int_equal(r.verify.first_bad_offset, -1);
    assert_int_equal(r.bytes_per_sample, size * o.iterations);
    assert_true(r.stats.min > 0.0);
    assert_true(r.stats.min <= r.stats.median && r.stats.median <= r.stats.max);
    assert_int_equal(psc_device_info(g_ctx, c->issuer, &d), PSC_OK);
    if (d.mem_peak_gbs > 0)
        assert_true(r.stats.max < d.mem_peak_gbs);
}

static void test_every_path(void **state)
{
    psc_bw_case_t cases[64 * 64];
    const uint64_t sizes[] = {(64ull << 20) + 13, 4096 + 3};

    (void)state;
    for (unsigned t = 0; t < PSC_BW_TEST_COUNT; t++) {
        size_t n = 0;

        assert_int_equal(psc_bw_cases(g_ctx, (psc_bw_test_t)t, NULL, 0, cases, 64 * 64, &n), PSC_OK);
        if (t == PSC_BW_GPU_TO_GPU_READ_CE || t == PSC_BW_GPU_TO_GPU_WRITE_CE)
            assert_int_equal(n, (size_t)psc_device_count(g_ctx) * (psc_device_count(g_ctx) - 1));
        else
            assert_int_equal(n, (size_t)psc_device_count(g_ctx));
        for (size_t k = 0; k < n; k++)
            for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
                psc__check_case(&cases[k], sizes[s]);
    }
}

static void test_bad_cases_rejected(void **state)
{
    psc_measure_opts_t o = psc_test_opts(4096);
    psc_bw_result_t r;
    int n = psc_device_count(g_ctx);
    psc_bw_case_t bad_issuer = {PSC_BW_GPU_TO_GPU_READ_CE, 0, 0, 0};
    psc_bw_case_t no_gpu = {PSC_BW_GPU_LOCAL_CE, n, n, n};
    psc_bw_case_t host_wrong = {PSC_BW_HOST_TO_GPU_CE, 0, PSC_HOST, 0};

    (void)state;
    assert_int_equal(psc_bw_run(g_ctx, &bad_issuer, &o, &r), PSC_ERR_INVALID);
    assert_int_equal(psc_bw_run(g_ctx, &no_gpu, &o, &r), PSC_ERR_INVALID);
    assert_int_equal(psc_bw_run(g_ctx, &host_wrong, &o, &r), PSC_ERR_INVALID);
    o.samples = 0;
    no_gpu.src = no_gpu.dst = no_gpu.issuer = 0;
    assert_int_equal(psc_bw_run(g_ctx, &no_gpu, &o, &r), PSC_ERR_INVALID);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_path),
    cmocka_unit_test(test_bad_cases_rejected),
};

PSC_GPU_TEST_MAIN(tests)
