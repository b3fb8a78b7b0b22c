/*
 * Every bandwidth test of the registry on the real GPUs: each case passes
 * verification (or, for a GPU pair without peer access, is waived saying
 * so), every transfer's figure is positive and under the GPU's own memory
 * bandwidth, sizes with a tail that is not a whole 16 bytes are copied
 * right, P2P off is slower than P2P on, and adaptive sampling stops by its
 * rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpu_common.h"

static double psc__peak(int gpu)
{
    psc_device_info_t d;

    return psc_device_info(g_ctx, gpu, &d) == PSC_OK ? d.mem_peak_gbs : 0;
}

static void psc__check_result(const psc_bw_case_t *c, const psc_bw_result_t *r, const psc_measure_opts_t *o)
{
    if (r->status == PSC_RESULT_WAIVED) {
        /* Only a GPU pair without peer access, or a CPU mapping where none exists, and it must say why. */
        if (!psc_test_waiver_ok(psc_bw_test_name(c->test), r->reason, c->src, c->dst))
            fail_msg("%s waived: %s", psc_bw_test_name(c->test), r->reason);
        return;
    }
    if (r->status != PSC_RESULT_PASSED)
        fprintf(stderr, "  %s: %s\n", psc_bw_test_name(c->test), r->reason);
    assert_int_equal(r->status, PSC_RESULT_PASSED);
    assert_int_equal(r->nsamples, o->samples);
    assert_int_equal(r->verify.checked, o->samples); /* every timed sample, not the warm-up */
    assert_int_equal(r->verify.bad_bytes, 0);
    assert_int_equal(r->size, o->size);
    assert_int_equal(r->bytes_per_sample, o->size * o->iterations * (uint64_t)c->nxfer);
    assert_true(r->stats.min > 0.0 && r->stats.min <= r->stats.median && r->stats.median <= r->stats.max);
    for (int k = 0; k < c->nxfer; k++) {
        double peak = psc__peak(c->xfer[k].issuer);

        assert_true(r->xfer_gbs[k] > 0);
        if (peak > 0)
            assert_true(r->xfer_gbs[k] < peak);
    }
}

static void test_every_test_every_case(void **state)
{
    static psc_bw_case_t cases[256];
    psc_measure_opts_t o = psc_test_opts((4ull << 20) + 13);
    int ngpu = psc_device_count(g_ctx);

    (void)state;
    for (int t = 0; t < psc_bw_test_count(); t++) {
        const psc_bw_test_info_t *ti = psc_bw_test_info(t);
        size_t n = 0;

        assert_int_equal(psc_bw_cases(g_ctx, t, NULL, 0, cases, 256, &n), PSC_OK);
        if (ngpu < ti->min_gpus) {
            assert_int_equal(n, 0);
            continue;
        }
        assert_true(n >= 1);
        for (size_t k = 0; k < n; k++) {
            psc_bw_result_t r;

            assert_int_equal(psc_bw_run(g_ctx, &cases[k], &o, &r), PSC_OK);
            printf("  %-30s %-16s %8.2f GB/s  %s\n", ti->name, "", r.stats.median, psc_result_status_string(r.status));
            psc__check_result(&cases[k], &r, &o);
        }
    }
}

static void test_odd_sizes_on_each_engine(void **state)
{
    const char *const tests[] = {"gpu_local_ce", "gpu_local_sm", "host_to_gpu_sm", "gpu_to_host_pageable_ce",
                                 "gpu_local_read_sm", "gpu_local_write_sm"};
    const uint64_t sizes[] = {1, 15, 4096 + 3, (1ull << 20) + 7};

    (void)state;
    for (size_t t = 0; t < sizeof(tests) / sizeof(tests[0]); t++)
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            psc_measure_opts_t o = psc_test_opts(sizes[s]);
            int host_src = strstr(tests[t], "host_to_gpu") != NULL, host_dst = strstr(tests[t], "gpu_to_host") != NULL;
            psc_bw_case_t c = psc_test_case(tests[t], host_src ? PSC_HOST : 0, host_dst ? PSC_HOST : 0, 0);
            psc_bw_result_t r;

            assert_int_equal(psc_bw_run(g_ctx, &c, &o, &r), PSC_OK);
            psc__check_result(&c, &r, &o);
        }
}

/*
 * Read only and write only move each byte once where a local copy moves it twice (and counts it once): on a
 * buffer well past the L2, each one-way figure beats the copy's by a fifth at least, and all three pass.
 */
static void test_local_one_way(void **state)
{
    static const char *const names[] = {"gpu_local_sm", "gpu_local_read_sm", "gpu_local_write_sm"};
    psc_measure_opts_t o = psc_test_opts(256ull << 20);
    psc_bw_result_t r[3];

    (void)state;
    o.iterations = 4;
    for (int k = 0; k < 3; k++) {
        psc_bw_case_t c = psc_test_case(names[k], 0, 0, 0);

        assert_int_equal(psc_bw_run(g_ctx, &c, &o, &r[k]), PSC_OK);
        printf("  %-20s %8.2f GB/s\n", names[k], r[k].stats.median);
        psc__check_result(&c, &r[k], &o);
    }
    assert_true(r[1].stats.median > 1.2 * r[0].stats.median);
    assert_true(r[2].stats.median > 1.2 * r[0].stats.median);
}

/*
 * Bulk copies (TMA) between two GPUs, read and write, on a buffer past both L2s: each passes, and comes within
 * a factor of two of the SM copy kernel of the same direction (a TMA copy that moved the bytes some slow way, or
 * that timed nothing, would not); below compute capability 9.0 each is waived saying so.
 */
static void test_tma_between_gpus(void **state)
{
    static const char *const names[][2] = {{"gpu_to_gpu_read_tma", "gpu_to_gpu_read_sm"},
                                           {"gpu_to_gpu_write_tma", "gpu_to_gpu_write_sm"}};
    psc_measure_opts_t o = psc_test_opts(256ull << 20);

    (void)state;
    if (psc_device_count(g_ctx) < 2)
        skip();
    for (int k = 0; k < 2; k++) {
        int issuer = k == 0 ? 1 : 0;
        psc_bw_case_t tma = psc_test_case(names[k][0], 0, 1, issuer), sm = psc_test_case(names[k][1], 0, 1, issuer);
        psc_bw_result_t a, b;

        assert_int_equal(psc_bw_run(g_ctx, &tma, &o, &a), PSC_OK);
        assert_int_equal(psc_bw_run(g_ctx, &sm, &o, &b), PSC_OK);
        printf("  %-22s %8.2f GB/s (%s)   %-20s %8.2f GB/s\n", names[k][0], a.stats.median,
               psc_result_status_string(a.status), names[k][1], b.stats.median);
        psc__check_result(&tma, &a, &o);
        if (a.status == PSC_RESULT_PASSED && b.status == PSC_RESULT_PASSED)
            assert_true(a.stats.median > 0.5 * b.stats.median);
    }
}

static void test_p2p_off_is_slower(void **state)
{
    psc_measure_opts_t o = psc_test_opts(64ull << 20);
    psc_bw_case_t on = psc_test_case("gpu_to_gpu_write_ce", 0, 1, 0), off = psc_test_case("gpu_to_gpu_p2p_off_ce", 0, 1, 0);
    psc_bw_result_t a, b;

    (void)state;
    if (psc_device_count(g_ctx) < 2)
        skip();
    assert_int_equal(psc_bw_run(g_ctx, &off, &o, &b), PSC_OK);
    assert_int_equal(psc_bw_run(g_ctx, &on, &o, &a), PSC_OK); /* peer access comes back after the off test */
    printf("  P2P on %.1f GB/s, off %.1f GB/s\n", a.stats.median, b.stats.median);
    if (a.status == PSC_RESULT_WAIVED) {
        assert_non_null(strstr(a.reason, "peer")); /* waived only for want of peer access */
        skip();
    }
    assert_int_equal(a.status, PSC_RESULT_PASSED);
    assert_int_equal(b.status, PSC_RESULT_PASSED);
    assert_true(b.stats.median < a.stats.median);
}

static void test_adaptive_sampling(void **state)
{
    psc_measure_opts_t o = psc_test_opts(64ull << 20);
    psc_bw_case_t c = psc_test_case("gpu_local_ce", 0, 0, 0);
    psc_bw_result_t r;

    (void)state;
    o.samples = 3;
    o.max_samples = 12;
    o.stable_pct = 0.5;
    assert_int_equal(psc_bw_run(g_ctx, &c, &o, &r), PSC_OK);
    assert_int_equal(r.status, PSC_RESULT_PASSED);
    assert_in_range(r.nsamples, 3, 12);
    if (r.nsamples < 12)
        assert_true(psc__sampling_stable(r.samples_gbs, r.nsamples, 0.5));
    /* Before the last sample it was not yet stable (else it would have stopped there). */
    if (r.nsamples > 3)
        assert_false(psc__sampling_stable(r.samples_gbs, r.nsamples - 1, 0.5));
    assert_int_equal(r.verify.checked, r.nsamples);
}

/*
 * Verification on and off: on, every timed round is checked and its time is
 * accounted inside the case's; off, nothing is checked and the copies are the
 * same. Device sources alternate patterns, so both parities are exercised.
 */
static void test_verify_on_off(void **state)
{
    const char *const tests[] = {"gpu_local_ce", "gpu_to_host_ce", "host_to_gpu_sm"};

    (void)state;
    for (size_t t = 0; t < sizeof(tests) / sizeof(tests[0]); t++) {
        psc_measure_opts_t o = psc_test_opts(8ull << 20);
        int host_src = strstr(tests[t], "host_to_gpu") != NULL, host_dst = strstr(tests[t], "gpu_to_host") != NULL;
        psc_bw_case_t c = psc_test_case(tests[t], host_src ? PSC_HOST : 0, host_dst ? PSC_HOST : 0, 0);
        psc_bw_result_t on, off;

        o.samples = 4; /* rounds 0..4: both sources twice */
        o.max_samples = 4;
        assert_int_equal(psc_bw_run(g_ctx, &c, &o, &on), PSC_OK);
        psc__check_result(&c, &on, &o);
        assert_true(on.verify_ms > 0 && on.verify_ms < on.run_ms);
        o.verify = 0;
        assert_int_equal(psc_bw_run(g_ctx, &c, &o, &off), PSC_OK);
        assert_int_equal(off.status, PSC_RESULT_PASSED);
        assert_int_equal(off.verify.checked, 0);
        assert_true(off.verify_ms == 0 && off.run_ms > 0 && off.stats.median > 0);
        printf("  %-16s verify %.2f of %.2f ms; without %.2f ms\n", tests[t], on.verify_ms, on.run_ms, off.run_ms);
        psc_test_corrupt(0); /* a corruption test needs the checks */
        assert_int_equal(psc_bw_run(g_ctx, &c, &o, &off), PSC_ERR_INVALID);
        psc_test_corrupt(-1);
    }
}

/* Every SM copy layout and a capped grid (P2PSCOPE_SM_COPY, read when a context is made) copy every byte. */
static void test_sm_copy_layouts(void **state)
{
    const char *const shapes[] = {"4:2:1024:0:chunk", "8:1:1024:0:chunk", "4:2:1024:0:stream", "8:2:512:100:stream",
                                  "4:2:1024:50"};
    const uint64_t sizes[] = {(4ull << 20) + 13, 4096 + 3, 15};

    (void)state;
    for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
        psc_context_t *ctx = NULL;
        char err[256];

        assert_int_equal(setenv("P2PSCOPE_SM_COPY", shapes[k], 1), 0);
        assert_int_equal(psc_context_create(&ctx, err, sizeof(err)), PSC_OK);
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            psc_measure_opts_t o = psc_test_opts(sizes[s]);
            psc_bw_case_t c[2] = {psc_test_case("gpu_local_sm", 0, 0, 0), psc_test_case("gpu_to_gpu_write_sm", 0, 1, 0)};

            for (int i = 0; i < (psc_device_count(ctx) >= 2 ? 2 : 1); i++) {
                psc_bw_result_t r;

                assert_int_equal(psc_bw_run(ctx, &c[i], &o, &r), PSC_OK);
                if (r.status != PSC_RESULT_PASSED)
                    fprintf(stderr, "  %s %s: %s\n", shapes[k], psc_bw_test_name(c[i].test), r.reason);
                assert_int_equal(r.status, PSC_RESULT_PASSED);
                assert_int_equal(r.verify.checked, o.samples);
                assert_int_equal(r.verify.bad_bytes, 0);
            }
        }
        psc_context_destroy(ctx);
    }
    unsetenv("P2PSCOPE_SM_COPY");
}

static void test_bad_cases_rejected(void **state)
{
    psc_measure_opts_t o = psc_test_opts(4096);
    psc_bw_result_t r;
    int n = psc_device_count(g_ctx);
    psc_bw_case_t bad_issuer = psc_test_case("gpu_to_gpu_read_ce", 0, 0, 0);
    psc_bw_case_t no_gpu = psc_test_case("gpu_local_ce", n, n, n);
    psc_bw_case_t host_wrong = psc_test_case("host_to_gpu_ce", 0, PSC_HOST, 0);
    psc_bw_case_t empty = psc_test_case("gpu_local_ce", 0, 0, 0);

    (void)state;
    assert_int_equal(psc_bw_run(g_ctx, &bad_issuer, &o, &r), PSC_ERR_INVALID);
    assert_int_equal(psc_bw_run(g_ctx, &no_gpu, &o, &r), PSC_ERR_INVALID);
    assert_int_equal(psc_bw_run(g_ctx, &host_wrong, &o, &r), PSC_ERR_INVALID);
    empty.nxfer = 0;
    assert_int_equal(psc_bw_run(g_ctx, &empty, &o, &r), PSC_ERR_INVALID);
    if (n >= 2) {
        psc_bw_case_t wrong_side = psc_test_case("gpu_to_gpu_read_ce", 0, 1, 0); /* read: gpu1 must issue */

        assert_int_equal(psc_bw_run(g_ctx, &wrong_side, &o, &r), PSC_ERR_INVALID);
    }
    o.samples = 0;
    assert_int_equal(psc_bw_run(g_ctx, &empty, &o, &r), PSC_ERR_INVALID);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_test_every_case),
    cmocka_unit_test(test_odd_sizes_on_each_engine),
    cmocka_unit_test(test_local_one_way),
    cmocka_unit_test(test_tma_between_gpus),
    cmocka_unit_test(test_p2p_off_is_slower),
    cmocka_unit_test(test_adaptive_sampling),
    cmocka_unit_test(test_verify_on_off),
    cmocka_unit_test(test_sm_copy_layouts),
    cmocka_unit_test(test_bad_cases_rejected),
};

PSC_GPU_TEST_MAIN(tests)
