/*
 * The shared pieces of the library's layers: the expectation a fill or check
 * kernel applies (its 8-byte unit equals the per-byte reference for every
 * kind, shift and edge), the one bad-byte fold, the one registry mechanism
 * under the bandwidth and latency tables, and psc_bw_run saying what is
 * wrong with a case it refuses (on the fake driver's two GPUs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pattern/check.h"
#include "pattern/pattern.h"

static void test_expect_word_is_eight_reference_bytes(void **state)
{
    (void)state;
    for (int kind = 0; kind < PSC_PAT_KINDS; kind++)
        for (int inv = 0; inv < 2; inv++)
            for (int64_t delta = -75; delta <= 21; delta += 8) {
                /* range [75, 1075): words straddle both edges; delta % 8 takes every shift */
                psc_expect_t e = {0x1234ull + (uint64_t)kind, 75, 1075, delta, kind, inv};

                for (uint64_t o = 0; o < 1100; o++) {
                    uint64_t w = psc_expect_word(&e, o);

                    for (int b = 0; b < 8; b++)
                        assert_int_equal((uint8_t)(w >> (8 * b)), psc_expect_byte(&e, o + (uint64_t)b));
                }
            }
}

static void test_expect_byte_regions(void **state)
{
    psc_expect_t e = {99, 64, 128, 5 - 64, PSC_PAT_ADDRESS, 1};

    (void)state;
    /* outside the range: the canary; inside: the source's byte at off + delta, complemented */
    assert_int_equal(psc_expect_byte(&e, 63), psc_pattern_canary(63));
    assert_int_equal(psc_expect_byte(&e, 128), psc_pattern_canary(128));
    assert_int_equal(psc_expect_byte(&e, 64), (uint8_t)~psc_pattern_byte(PSC_PAT_ADDRESS, 99, 5));
    e.invert = 0;
    assert_int_equal(psc_expect_byte(&e, 127), psc_pattern_byte(PSC_PAT_ADDRESS, 99, 68));
    /* a whole buffer of a kind is the pattern itself */
    e = psc_expect_pattern(PSC_PAT_RANDOM, 7, 100);
    for (uint64_t o = 0; o < 100; o++)
        assert_int_equal(psc_expect_byte(&e, o), psc_pattern_byte(PSC_PAT_RANDOM, 7, o));
    assert_int_equal(psc_pattern_word(PSC_PAT_RANDOM, 7, 3), psc_pattern_mix(7, 3));
}

static void test_check_fold(void **state)
{
    psc_check_t acc = PSC_CHECK_CLEAN, clean = PSC_CHECK_CLEAN, a = {3, 40, 0x11, 0x22}, b = {2, 10, 0x33, 0x44};

    (void)state;
    assert_int_equal(psc__check_fold(&acc, &clean), 0);
    assert_int_equal(acc.bad_bytes, 0);
    assert_int_equal(acc.first_bad, -1);
    assert_int_equal(psc__check_fold(&acc, &a), 1);
    assert_int_equal(psc__check_fold(&acc, &b), 0); /* the first one folded stays first, even at a higher offset */
    assert_int_equal(acc.bad_bytes, 5);
    assert_int_equal(acc.first_bad, 40);
    assert_int_equal(acc.expected, 0x11);
    assert_int_equal(acc.found, 0x22);
    acc = clean;
    psc__check_byte(&acc, 5, 0xAA, 0xAA); /* equal: nothing */
    psc__check_byte(&acc, 6, 0xAA, 0xAB);
    psc__check_byte(&acc, 9, 0x01, 0x00);
    assert_int_equal(acc.bad_bytes, 2);
    assert_int_equal(acc.first_bad, 6);
    assert_int_equal(acc.found, 0xAB);
}

static void test_check_report_counts_samples(void **state)
{
    psc_verify_report_t r;
    psc_check_t clean = PSC_CHECK_CLEAN, a = {4, 100, 1, 2}, b = {1, 3, 5, 6};

    (void)state;
    memset(&r, 0, sizeof(r));
    r.first_bad_offset = -1;
    psc__check_report_add(&r, &clean);
    psc__check_report_add(&r, &a);
    psc__check_report_add(&r, &b);
    assert_int_equal(r.checked, 3);
    assert_int_equal(r.bad_samples, 2);
    assert_int_equal(r.bad_bytes, 5);
    assert_int_equal(r.first_bad_offset, 100);
    assert_int_equal(r.expected, 1);
    assert_int_equal(r.found, 2);
}

/* The generic view of a registry says what the table's own accessors say. */
static void expect_registry(const psc_registry_t *reg, int count, const char *(*name)(int), const char *first)
{
    psc_registry_entry_t e;

    assert_int_equal(psc_registry_count(reg), count);
    for (int i = 0; i < count; i++) {
        assert_int_equal(psc_registry_entry(reg, i, &e), PSC_OK);
        assert_string_equal(e.name, name(i));
        assert_non_null(e.title);
        assert_non_null(e.description);
        assert_true(e.min_gpus == 1 || e.min_gpus == 2);
    }
    assert_int_equal(psc_registry_entry(reg, 0, &e), PSC_OK);
    assert_string_equal(e.name, first);
    assert_int_equal(psc_registry_entry(reg, count, &e), PSC_ERR_INVALID);
    assert_int_equal(psc_registry_entry(reg, -1, &e), PSC_ERR_INVALID);
    assert_int_equal(psc_registry_entry(NULL, 0, &e), PSC_ERR_INVALID);
}

static const char *bw_name(int i)
{
    return psc_bw_test_info(i)->name;
}

static const char *lat_name(int i)
{
    return psc_lat_test_info(i)->name;
}

static void test_registries(void **state)
{
    psc_bw_test_t t = -1, m[64];
    psc_lat_test_t l = -1;
    psc_registry_entry_t e;

    (void)state;
    expect_registry(psc_bw_registry(), psc_bw_test_count(), bw_name, "gpu_to_gpu_read_ce");
    expect_registry(psc_lat_registry(), psc_lat_test_count(), lat_name, "local_chase");
    assert_int_equal(psc_registry_count(NULL), 0);
    /* lookups by name find the entry of that name, in either table */
    assert_int_equal(psc_bw_test_from_name("gpu_local_sm", &t), PSC_OK);
    assert_int_equal(psc_registry_entry(psc_bw_registry(), t, &e), PSC_OK);
    assert_string_equal(e.name, "gpu_local_sm");
    assert_int_equal(e.min_gpus, 1);
    assert_int_equal(psc_lat_test_from_name("gpu_gpu_flag", &l), PSC_OK);
    assert_int_equal(psc_registry_entry(psc_lat_registry(), l, &e), PSC_OK);
    assert_string_equal(e.name, "gpu_gpu_flag");
    assert_int_equal(e.min_gpus, 2);
    assert_int_equal(psc_bw_test_from_name("gpu_local", &t), PSC_ERR_INVALID); /* a prefix is no name */
    assert_int_equal(psc_lat_test_from_name(NULL, &l), PSC_ERR_INVALID);
    /* globs: every match, counted past cap, in table order */
    assert_int_equal(psc_bw_test_match("gpu_local_*", m, 64), 4);
    assert_string_equal(psc_bw_test_name(m[0]), "gpu_local_ce");
    assert_string_equal(psc_bw_test_name(m[1]), "gpu_local_sm");
    assert_string_equal(psc_bw_test_name(m[2]), "gpu_local_read_sm"); /* the one-way tests, after the copies */
    assert_string_equal(psc_bw_test_name(m[3]), "gpu_local_write_sm");
    assert_int_equal(psc_bw_test_match("*_sm", m, 1), psc_bw_test_match("*_sm", NULL, 0));
    assert_true(psc_bw_test_match("*_sm", NULL, 0) > 1);
    assert_int_equal(psc_lat_test_match("*_chase_large", m, 64), 3);
    assert_int_equal(psc_lat_test_match("nothing*", m, 64), 0);
}

/* The context the bandwidth refusal test needs: the fake driver's two GPUs. */
static psc_context_t *fake_ctx(void)
{
    char err[256];
    psc_context_t *ctx = NULL;

    setenv("P2PSCOPE_LIBCUDA", FAKE_LIBCUDA, 1);
    setenv("P2PSCOPE_LIBNVML", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("FAKE_CUDA_MODE", "gpus", 1);
    assert_int_equal(psc_context_create(&ctx, err, sizeof(err)), PSC_OK);
    return ctx;
}

static void expect_refused(psc_context_t *ctx, const psc_bw_case_t *c, const psc_measure_opts_t *o, const char *why)
{
    psc_bw_result_t res;

    memset(&res, 0x5c, sizeof(res));
    assert_int_equal(psc_bw_run(ctx, c, o, &res), PSC_ERR_INVALID);
    if (!strstr(psc_context_last_error(ctx), why))
        fail_msg("last error \"%s\" does not say \"%s\"", psc_context_last_error(ctx), why);
    assert_int_equal(((unsigned char *)&res)[0], 0x5c); /* no result written */
}

static void test_bw_run_says_why(void **state)
{
    psc_context_t *ctx = fake_ctx();
    psc_measure_opts_t o;
    psc_bw_case_t c;

    (void)state;
    psc_measure_opts_default(&o);
    memset(&c, 0, sizeof(c));
    assert_int_equal(psc_bw_test_from_name("gpu_to_gpu_read_ce", &c.test), PSC_OK);
    c.nxfer = 1;
    c.xfer[0] = (psc_xfer_t){0, 1, 7};
    expect_refused(ctx, &c, &o, "issuing GPU 7 does not exist (accepted 0 to 1)");
    c.xfer[0] = (psc_xfer_t){0, 1, 0}; /* a read is issued by the destination */
    expect_refused(ctx, &c, &o, "issued by the destination GPU (1), not GPU 0");
    c.xfer[0] = (psc_xfer_t){0, 1, 1};
    c.nxfer = 0;
    expect_refused(ctx, &c, &o, "a case of 0 transfers: accepted 1 to");
    c.nxfer = 1;
    c.test = 1000;
    expect_refused(ctx, &c, &o, "bandwidth test 1000 does not exist");
    c.test = 0;
    o.samples = 0;
    expect_refused(ctx, &c, &o, "samples 0 out of range");
    psc_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expect_word_is_eight_reference_bytes),
        cmocka_unit_test(test_expect_byte_regions),
        cmocka_unit_test(test_check_fold),
        cmocka_unit_test(test_check_report_counts_samples),
        cmocka_unit_test(test_registries),
        cmocka_unit_test(test_bw_run_says_why),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
