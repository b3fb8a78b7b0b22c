/* Byte-count parsing and the statistics every figure is reported with. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "p2pscope.h"

static void test_size_accepts(void **state)
{
    static const struct { const char *text; uint64_t want; } ok[] = {
        {"1", 1}, {"4096", 4096}, {"64K", 65536}, {"64k", 65536}, {"64KiB", 65536}, {"64KB", 64000},
        {"512M", 512ull << 20}, {"512MiB", 512ull << 20}, {"1GB", 1000000000ull}, {"1G", 1ull << 30},
        {"2gib", 2ull << 30}, {"1T", 1ull << 40}, {"100B", 100}, {"1TiB", 1ull << 40},
    };
    uint64_t v;

    (void)state;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        v = 0;
        assert_int_equal(psc_size_parse(ok[i].text, &v), PSC_OK);
        assert_int_equal(v, ok[i].want);
    }
}

static void test_size_rejects(void **state)
{
    static const char *const bad[] = {"", "0", "0K", "-1", "K", "1X", "1 K", " 1", "1.5G", "2T", "1025G",
                                      "99999999999999999999", "1KK", "0x10", "1e9", NULL};
    uint64_t v = 42;

    (void)state;
    for (size_t i = 0; bad[i]; i++)
        assert_int_equal(psc_size_parse(bad[i], &v), PSC_ERR_INVALID);
    assert_int_equal(psc_size_parse(NULL, &v), PSC_ERR_INVALID);
    assert_int_equal(v, 42); /* untouched on failure */
}

static void test_stats_odd_even(void **state)
{
    const double odd[] = {5, 1, 3};
    const double even[] = {4, 1, 3, 2};
    psc_stats_t s;

    (void)state;
    assert_int_equal(psc_stats_compute(odd, 3, &s), PSC_OK);
    assert_int_equal(s.n, 3);
    assert_float_equal(s.median, 3, 1e-12);
    assert_float_equal(s.min, 1, 1e-12);
    assert_float_equal(s.max, 5, 1e-12);
    assert_float_equal(s.mean, 3, 1e-12);
    assert_float_equal(s.stddev, 2, 1e-12); /* sample stddev of 1,3,5 */
    assert_float_equal(odd[0], 5, 0);        /* input untouched */

    assert_int_equal(psc_stats_compute(even, 4, &s), PSC_OK);
    assert_float_equal(s.median, 2.5, 1e-12);
    assert_float_equal(s.stddev, 1.2909944487358056, 1e-12);
}

static void test_stats_single_and_bad(void **state)
{
    const double one[] = {7.5};
    psc_stats_t s = {0};

    (void)state;
    assert_int_equal(psc_stats_compute(one, 1, &s), PSC_OK);
    assert_float_equal(s.median, 7.5, 0);
    assert_float_equal(s.stddev, 0, 0);
    assert_int_equal(psc_stats_compute(one, 0, &s), PSC_ERR_INVALID);
    assert_int_equal(psc_stats_compute(NULL, 1, &s), PSC_ERR_INVALID);
}

static void test_status_and_names(void **state)
{
    psc_bw_test_t t;

    (void)state;
    assert_string_equal(psc_status_string(PSC_ERR_NO_DRIVER), "no usable NVIDIA driver");
    assert_string_equal(psc_status_string((psc_status_t)-99), "unknown status");
    for (unsigned i = 0; i < PSC_BW_TEST_COUNT; i++) {
        assert_int_equal(psc_bw_test_from_name(psc_bw_test_name((psc_bw_test_t)i), &t), PSC_OK);
        assert_int_equal(t, i);
    }
    assert_int_equal(psc_bw_test_from_name("gpu_to_gpu", &t), PSC_ERR_INVALID);
}

static void test_measure_opts_check(void **state)
{
    psc_measure_opts_t o;
    char err[256];

    (void)state;
    psc_measure_opts_default(&o);
    assert_int_equal(psc_measure_opts_check(&o, err, sizeof(err)), PSC_OK);
    o.samples = PSC_MAX_SAMPLES + 1;
    assert_int_equal(psc_measure_opts_check(&o, err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "accepted 1 to"));
    psc_measure_opts_default(&o);
    o.test_corrupt_offset = (int64_t)o.size;
    assert_int_equal(psc_measure_opts_check(&o, err, sizeof(err)), PSC_ERR_INVALID);
    psc_measure_opts_default(&o);
    o.gate_timeout_ms = 0.5;
    assert_int_equal(psc_measure_opts_check(&o, err, sizeof(err)), PSC_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_accepts),       cmocka_unit_test(test_size_rejects),
        cmocka_unit_test(test_stats_odd_even),     cmocka_unit_test(test_stats_single_and_bad),
        cmocka_unit_test(test_status_and_names),   cmocka_unit_test(test_measure_opts_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
