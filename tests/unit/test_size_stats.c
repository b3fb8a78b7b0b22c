/* Byte-count parsing and the statistics every figure is reported with. */
#include <setjmp.h>
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "p2pscope/bench.h"
#include "test_hooks.h"

static void test_size_accepts(void **state)
{
    static const struct { const char *text; uint64_t want; } ok[] = {
        {"1", 1}, {"4096", 4096}, {"64K", 65536}, {"64k", 65536}, {"64KiB", 65536}, {"64KB", 64000},
        {"512M", 512ull << 20}, {"512MiB", 512ull << 20}, {"1GB", 1000000000ull}, {"1G", 1ull << 30},
        {"2gib", 2ull << 30}, {"1T", 1ull << 40}, {"100B", 100}, {"1TiB", 1ull << 40},
        /* Decimal units are powers of 1000, binary ones powers of 1024, every size of both. */
        {"3MB", 3000000ull}, {"3MiB", 3ull << 20}, {"1TB", 1000000000000ull}, {"1099511627776", 1ull << 40},
        {"1024G", 1ull << 40}, {"1048576M", 1ull << 40}, {"1kb", 1000}, {"7mb", 7000000ull},
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
                                      "99999999999999999999", "1KK", "0x10", "1e9", "1099511627777", "1025GiB",
                                      "2TB", "1Ki", "1KBB", "1MiBs", "+1", "\t1", NULL};
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

/* The coefficient of variation: 100 x sample stddev / mean; none without samples or a positive mean. */
static void test_stats_cv(void **state)
{
    const double same[] = {396.5, 396.5, 396.5, 396.5}, known[] = {5, 1, 3}, zero[] = {0, 0}, neg[] = {-1, -3};
    psc_stats_t s;
    double cv = -7;

    (void)state;
    assert_int_equal(psc_stats_compute(same, 4, &s), PSC_OK);
    assert_int_equal(psc_stats_cv_pct(&s, &cv), 1);
    assert_float_equal(cv, 0, 0);
    assert_int_equal(psc_stats_compute(known, 3, &s), PSC_OK);
    assert_int_equal(psc_stats_cv_pct(&s, &cv), 1);
    assert_float_equal(cv, 200.0 / 3.0, 1e-12); /* stddev 2 over mean 3 */
    assert_int_equal(psc_stats_compute(known, 1, &s), PSC_OK); /* one sample: no spread */
    assert_int_equal(psc_stats_cv_pct(&s, &cv), 1);
    assert_float_equal(cv, 0, 0);
    cv = -7;
    assert_int_equal(psc_stats_compute(zero, 2, &s), PSC_OK);
    assert_int_equal(psc_stats_cv_pct(&s, &cv), 0);
    assert_int_equal(psc_stats_compute(neg, 2, &s), PSC_OK);
    assert_int_equal(psc_stats_cv_pct(&s, &cv), 0);
    s.n = 0;
    s.mean = 3;
    assert_int_equal(psc_stats_cv_pct(&s, &cv), 0);
    assert_int_equal(psc_stats_cv_pct(NULL, &cv), 0);
    assert_int_equal(psc_stats_cv_pct(&s, NULL), 0);
    assert_float_equal(cv, -7, 0); /* nothing written when it means nothing */
}

static void test_status_and_names(void **state)
{
    psc_bw_test_t t;

    (void)state;
    assert_string_equal(psc_status_string(PSC_ERR_NO_DRIVER), "no usable NVIDIA driver");
    assert_string_equal(psc_status_string((psc_status_t)-99), "unknown status");
    for (int i = 0; i < psc_bw_test_count(); i++) {
        assert_int_equal(psc_bw_test_from_name(psc_bw_test_name(i), &t), PSC_OK);
        assert_int_equal(t, i);
    }
    assert_int_equal(psc_bw_test_from_name("gpu_to_gpu", &t), PSC_ERR_INVALID);
    assert_null(psc_bw_test_info(psc_bw_test_count()));
    assert_null(psc_bw_test_info(-1));
}

/* The registry: unique names, a description and a direction in every title, nvbandwidth's families all there. */
static void test_registry(void **state)
{
    static const char *const must[] = {
        "gpu_to_gpu_read_ce", "gpu_to_gpu_write_ce", "gpu_to_gpu_read_sm", "gpu_to_gpu_write_sm",
        "gpu_to_gpu_bidir_read_ce", "gpu_to_gpu_bidir_write_ce", "gpu_to_gpu_bidir_read_sm",
        "gpu_to_gpu_bidir_write_sm", "gpu_to_gpu_p2p_off_ce", "all_to_one_write_ce", "all_to_one_read_ce",
        "one_to_all_write_ce", "one_to_all_read_ce", "all_to_one_write_sm", "all_to_one_read_sm",
        "one_to_all_write_sm", "one_to_all_read_sm", "ring_write_ce", "host_to_gpu_ce", "gpu_to_host_ce",
        "host_gpu_bidir_ce", "host_to_gpu_sm", "gpu_to_host_sm", "host_gpu_bidir_sm", "host_to_all_ce",
        "all_to_host_ce", "all_host_bidir_ce", "host_to_all_sm", "all_to_host_sm", "all_host_bidir_sm",
        "gpu_local_ce", "gpu_local_sm", "host_to_gpu_pageable_ce", "gpu_to_host_pageable_ce",
        "host_to_gpu_wc_ce", "host_to_gpu_registered_ce", "gpu_local_read_sm", "gpu_local_write_sm",
        "gpu_to_gpu_read_tma", "gpu_to_gpu_write_tma", NULL};
    psc_bw_test_t t, found[128];
    int n = psc_bw_test_count();

    (void)state;
    assert_true(n >= 35);
    for (int i = 0; i < n; i++) {
        const psc_bw_test_info_t *a = psc_bw_test_info(i);

        assert_true(strlen(a->description) > 10);
        assert_non_null(strstr(a->title, "->"));            /* every title names a direction */
        assert_true(strstr(a->title, "copy engine") || strstr(a->title, "SM ") || strstr(a->title, "CPU ")); /* and the engine */
        assert_int_equal(strcmp(a->name + strlen(a->name) - 3, a->access == PSC_BW_ACCESS_BULK ? "tma" /* an SM's TMA */
                                                                : a->engine == PSC_ENGINE_SM    ? "_sm"
                                                                : a->engine == PSC_ENGINE_CPU ? "cpu"
                                                                                              : "_ce"),
                         0);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(a->name, psc_bw_test_name(j));
    }
    for (int i = 0; must[i]; i++)
        assert_int_equal(psc_bw_test_from_name(must[i], &t), PSC_OK);
    assert_non_null(strstr(psc_bw_test_title(psc_bw_test_match("gpu_local_ce", found, 1) ? found[0] : 0),
                           "counted once"));
    /* Only the two one-way local tests do not copy: each an SM kernel on one GPU, reading or writing. The two
     * TMA tests copy between GPUs by bulk copies, read (on the destination) and write (on the source). */
    for (int i = 0; i < n; i++) {
        const psc_bw_test_info_t *a = psc_bw_test_info(i);
        psc_bw_access_t want = strcmp(a->name, "gpu_local_read_sm") == 0    ? PSC_BW_ACCESS_READ
                               : strcmp(a->name, "gpu_local_write_sm") == 0 ? PSC_BW_ACCESS_WRITE
                               : strstr(a->name, "_tma")                    ? PSC_BW_ACCESS_BULK
                                                                            : PSC_BW_ACCESS_COPY;

        assert_int_equal(a->access, want);
        if (want == PSC_BW_ACCESS_BULK) {
            assert_int_equal(a->shape, PSC_SHAPE_PAIR);
            assert_int_equal(a->engine, PSC_ENGINE_SM);
            assert_int_equal(a->by_reader, strstr(a->name, "_read_") != NULL);
            assert_int_equal(a->min_gpus, 2);
        } else if (want != PSC_BW_ACCESS_COPY) {
            assert_int_equal(a->shape, PSC_SHAPE_LOCAL);
            assert_int_equal(a->engine, PSC_ENGINE_SM);
            assert_int_equal(a->min_gpus, 1);
        }
    }
    /* Globs. */
    n = psc_bw_test_match("*_sm", found, 128);
    assert_true(n >= 15);
    for (int i = 0; i < n; i++)
        assert_int_equal(psc_bw_test_info(found[i])->engine, PSC_ENGINE_SM);
    assert_int_equal(psc_bw_test_match("host_to_gpu_*_ce", found, 128), 3); /* pageable, wc, registered */
    assert_int_equal(psc_bw_test_match("nothing*", found, 128), 0);
    assert_int_equal(psc_bw_test_match("*", NULL, 0), psc_bw_test_count());
    assert_string_equal(psc_hostmem_name(PSC_HOSTMEM_WC), "write-combined");
}

/* The stop rule's edges: three medians within pct percent of the largest, pct itself included. */
static void test_sampling_stop_rule_edges(void **state)
{
    const double flat[] = {100.0, 100.0, 100.0};
    const double drifting[] = {80.0, 90.0, 100.0, 110.0, 120.0}; /* medians of 3, 4, 5: 90, 95, 100 */
    const double two[] = {100.0, 100.0};

    (void)state;
    assert_true(psc__sampling_stable(flat, 3, 0.0)); /* no spread at all is stable at 0 % */
    assert_true(psc__sampling_stable(drifting, 5, 10.0)); /* (100 - 90) / 100 = 10 %: on the bound */
    assert_false(psc__sampling_stable(drifting, 5, 9.99));
    assert_true(psc__sampling_stable(drifting, 5, 10.5)); /* relative to the largest: 10 %, not 11.1 % */
    assert_false(psc__sampling_stable(two, 2, 100.0)); /* three medians need three samples */
    assert_false(psc__sampling_stable(flat, 3, -1.0));
    /* Only the last three medians count: an early outlier is forgotten. */
    {
        const double v[] = {1.0, 500.0, 100.0, 100.0, 100.0, 100.0, 100.0};

        assert_true(psc__sampling_stable(v, 7, 0.0));
        assert_false(psc__sampling_stable(v, 4, 0.5)); /* medians of 2, 3, 4: 250.5, 100, 100 */
    }
}

static void test_sampling_stop_rule(void **state)
{
    const double steady[] = {100.0, 100.2, 99.9, 100.1, 100.0};
    const double drifting[] = {80.0, 90.0, 100.0, 110.0, 120.0};
    const double settling[] = {50.0, 100.0, 100.1, 100.0, 99.9, 100.0};

    (void)state;
    assert_false(psc__sampling_stable(steady, 2, 0.5)); /* too few */
    assert_true(psc__sampling_stable(steady, 3, 0.5));
    assert_true(psc__sampling_stable(steady, 5, 0.5));
    assert_false(psc__sampling_stable(drifting, 5, 0.5));
    assert_true(psc__sampling_stable(drifting, 5, 25.0));
    assert_false(psc__sampling_stable(settling, 3, 0.5)); /* medians 75, 100, 100 */
    assert_true(psc__sampling_stable(settling, 6, 0.5));
    assert_false(psc__sampling_stable(NULL, 3, 0.5));
}

static void test_size_sweep(void **state)
{
    uint64_t v[64];

    (void)state;
    assert_int_equal(psc_size_sweep(4096, 64ull << 20, 2, v, 64), 15);
    assert_int_equal(v[0], 4096);
    assert_int_equal(v[14], 64ull << 20);
    assert_int_equal(psc_size_sweep(1000, 5000, 4, v, 64), 2); /* 1000, 4000: 16000 is past the end */
    assert_int_equal(v[1], 4000);
    assert_int_equal(psc_size_sweep(8, 8, 2, v, 64), 1);
    assert_int_equal(psc_size_sweep(8, 4, 2, v, 64), 0);
    assert_int_equal(psc_size_sweep(8, 64, 1, v, 64), 0);
    assert_int_equal(psc_size_sweep(1, 1ull << 40, 2, NULL, 0), 41); /* counting only */
    /* A short array gets what fits, nothing past it, and the full count. */
    for (int k = 0; k < 8; k++)
        v[k] = 0xdead;
    assert_int_equal(psc_size_sweep(1, 1000, 10, v, 3), 4); /* 1, 10, 100, 1000 */
    assert_int_equal(v[2], 100);
    assert_int_equal(v[3], 0xdead);
    assert_int_equal(psc_size_sweep(0, 8, 2, v, 8), 0);
    assert_int_equal(psc_size_sweep(3, 1ull << 40, 1024, v, 8), 4); /* 3, 3 KiB, 3 MiB, 3 GiB */
    assert_int_equal(v[3], 3ull << 30);
}

static void test_measure_opts_check(void **state)
{
    psc_measure_opts_t o;
    char err[256];

    (void)state;
    psc_measure_opts_default(&o);
    assert_int_equal(psc_measure_opts_check(&o, err, sizeof(err)), PSC_OK);
    o.max_samples = 2; /* below the minimum of 3 */
    assert_int_equal(psc_measure_opts_check(&o, err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "max samples"));
    psc_measure_opts_default(&o);
    o.samples = PSC_MAX_SAMPLES + 1;
    assert_int_equal(psc_measure_opts_check(&o, err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "accepted 1 to"));
    /* Options not set up by the default function, or from a newer header than the library: refused. */
    memset(&o, 0, sizeof(o));
    assert_int_equal(psc_measure_opts_check(&o, err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "psc_measure_opts_default"));
    psc_measure_opts_default(&o);
    o.struct_size = sizeof(o) + 8;
    assert_int_equal(psc_measure_opts_check(&o, err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "struct_size"));
    psc_measure_opts_default(&o);
    o.gate_timeout_ms = 0.5;
    assert_int_equal(psc_measure_opts_check(&o, err, sizeof(err)), PSC_ERR_INVALID);
    psc_measure_opts_default(&o);
    o.verify = 2;
    assert_int_equal(psc_measure_opts_check(&o, err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "accepted 0 (off) or 1 (on)"));
}

/* Each limit of the option check, just inside (accepted) and just outside (refused). */
static void test_measure_opts_limits(void **state)
{
    psc_measure_opts_t o;
    char err[256];

    (void)state;
#define OK_WITH(stmt)                                                          \
    do {                                                                       \
        psc_measure_opts_default(&o);                                          \
        stmt;                                                                  \
        assert_int_equal(psc_measure_opts_check(&o, err, sizeof(err)), PSC_OK); \
    } while (0)
#define BAD_WITH(stmt, msg)                                                              \
    do {                                                                                 \
        psc_measure_opts_default(&o);                                                    \
        stmt;                                                                            \
        err[0] = '\0';                                                                   \
        assert_int_equal(psc_measure_opts_check(&o, err, sizeof(err)), PSC_ERR_INVALID); \
        assert_non_null(strstr(err, msg));                                               \
    } while (0)
    OK_WITH(o.size = 1ull << 40);
    BAD_WITH(o.size = (1ull << 40) + 1, "accepted 1 B to 1 TiB");
    OK_WITH(o.iterations = 100000);
    BAD_WITH(o.iterations = 100001, "iterations");
    BAD_WITH(o.samples = 0, "samples 0 out of range");
    OK_WITH((o.samples = 1, o.max_samples = 1));
    OK_WITH((o.samples = 5, o.max_samples = 5)); /* the cap may equal the minimum */
    OK_WITH((o.samples = PSC_MAX_SAMPLES, o.max_samples = PSC_MAX_SAMPLES));
    BAD_WITH(o.max_samples = PSC_MAX_SAMPLES + 1, "max samples");
    OK_WITH(o.stable_pct = 0);
    OK_WITH(o.stable_pct = 100);
    BAD_WITH(o.stable_pct = 100.5, "stability");
    BAD_WITH(o.stable_pct = -0.1, "stability");
    BAD_WITH(o.stable_pct = NAN, "stability");
    OK_WITH(o.warmup = 0);
    OK_WITH(o.warmup = 100);
    BAD_WITH(o.warmup = 101, "warmup");
    OK_WITH(o.gate_timeout_ms = 1.0);
    OK_WITH(o.gate_timeout_ms = 600000.0);
    BAD_WITH(o.gate_timeout_ms = 600000.5, "gate timeout");
    BAD_WITH(o.gate_timeout_ms = NAN, "gate timeout");
    OK_WITH(o.host_node = 0);
    OK_WITH(o.host_node = -1);
    BAD_WITH(o.host_node = -2, "host NUMA node");
    OK_WITH(o.verify = 0);
#undef OK_WITH
#undef BAD_WITH
    assert_int_equal(psc_measure_opts_check(NULL, NULL, 0), PSC_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_accepts),       cmocka_unit_test(test_size_rejects),
        cmocka_unit_test(test_stats_odd_even),     cmocka_unit_test(test_stats_single_and_bad),
        cmocka_unit_test(test_stats_cv),
        cmocka_unit_test(test_status_and_names),   cmocka_unit_test(test_measure_opts_check),
        cmocka_unit_test(test_registry),           cmocka_unit_test(test_sampling_stop_rule),
        cmocka_unit_test(test_size_sweep),         cmocka_unit_test(test_sampling_stop_rule_edges),
        cmocka_unit_test(test_measure_opts_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
