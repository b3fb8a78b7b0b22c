/*
 * Latency's pure parts: chains are single cycles, percentiles by nearest rank, the registry, cases, rendering;
 * and on the fake driver the chase measured nvbandwidth's way: the chain it leaves in the peer's memory, one
 * launch per SM, the end pointer checked.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "p2pscope/bench.h"
#include "test_hooks.h"
#include "report/render_lat.h"
#include "fake_context.h"
#include "internal.h"
#include "lat/chase_seq.h"
#include "mem/buffer.h"

static void test_chain_is_one_cycle(void **state)
{
    const uint32_t sizes[] = {1, 2, 3, 7, 1000, 65536};

    (void)state;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        uint32_t n = sizes[k], *next = malloc(n * sizeof(*next)), at = 0, steps = 0;
        unsigned char *seen = calloc(n, 1);

        psc__chain_build(next, n, 42 + k);
        do { /* every node once, then back to the start */
            assert_true(next[at] < n);
            assert_false(seen[at]);
            seen[at] = 1;
            at = next[at];
            steps++;
        } while (at != 0 && steps <= n);
        assert_int_equal(at, 0);
        assert_int_equal(steps, n);
        free(next);
        free(seen);
    }
}

static void test_chain_is_random_and_seeded(void **state)
{
    uint32_t a[4096], b[4096], c[4096];
    int same_ab = 1, same_ac = 1, sequential = 0;

    (void)state;
    psc__chain_build(a, 4096, 1);
    psc__chain_build(b, 4096, 1);
    psc__chain_build(c, 4096, 2);
    for (int i = 0; i < 4096; i++) {
        same_ab &= a[i] == b[i];
        same_ac &= a[i] == c[i];
        sequential += a[i] == (uint32_t)(i + 1) % 4096;
    }
    assert_true(same_ab);  /* the same seed, the same chain */
    assert_false(same_ac); /* another seed, another chain */
    assert_true(sequential < 16); /* not a walk in address order that a prefetcher would follow */
}

static void test_percentiles(void **state)
{
    double v[100], one = 7;
    psc_pctl_t p;

    (void)state;
    for (int i = 0; i < 100; i++)
        v[i] = 100 - i; /* 100 .. 1, unsorted order */
    assert_int_equal(psc_percentiles(v, 100, &p), PSC_OK);
    assert_float_equal(p.min, 1, 0);
    assert_float_equal(p.p50, 50, 0);
    assert_float_equal(p.p90, 90, 0);
    assert_float_equal(p.p99, 99, 0);
    assert_float_equal(p.max, 100, 0);
    assert_float_equal(p.mean, 50.5, 1e-12);
    assert_float_equal(v[0], 100, 0); /* input untouched */
    assert_int_equal(psc_percentiles(&one, 1, &p), PSC_OK);
    assert_float_equal(p.p99, 7, 0);
    assert_int_equal(psc_percentiles(v, 0, &p), PSC_ERR_INVALID);
}

/*
 * Nearest rank on n that 100 does not divide: p = the ceil(p/100 * n)-th
 * smallest sample. Samples 1..n, given out of order.
 */
static void expect_pctl(unsigned n, double p50, double p90, double p99)
{
    double v[256];
    psc_pctl_t p;

    assert_true(n <= 256);
    for (unsigned i = 0; i < n; i++)
        v[i] = (double)((i * 37u) % n + 1); /* a permutation of 1..n (37 is prime to every n here) */
    assert_int_equal(psc_percentiles(v, n, &p), PSC_OK);
    assert_int_equal(p.n, n);
    assert_float_equal(p.min, 1, 0);
    assert_float_equal(p.max, n, 0);
    assert_float_equal(p.mean, (n + 1) / 2.0, 1e-9);
    assert_float_equal(p.p50, p50, 0);
    assert_float_equal(p.p90, p90, 0);
    assert_float_equal(p.p99, p99, 0);
}

static void test_percentiles_awkward_n(void **state)
{
    (void)state;
    expect_pctl(1, 1, 1, 1);
    expect_pctl(2, 1, 2, 2);        /* ranks 1, 1.8 -> 2, 1.98 -> 2 */
    expect_pctl(3, 2, 3, 3);        /* ranks 1.5 -> 2, 2.7 -> 3, 2.97 -> 3 */
    expect_pctl(7, 4, 7, 7);        /* ranks 3.5 -> 4, 6.3 -> 7, 6.93 -> 7 */
    expect_pctl(10, 5, 9, 10);      /* exact ranks 5 and 9 are not rounded up */
    expect_pctl(101, 51, 91, 100);  /* ranks 50.5 -> 51, 90.9 -> 91, 99.99 -> 100 */
    expect_pctl(200, 100, 180, 198);
}

static void test_registry(void **state)
{
    psc_lat_test_t t, found[32];

    (void)state;
    assert_true(psc_lat_test_count() >= 14);
    for (int i = 0; i < psc_lat_test_count(); i++) {
        const psc_lat_test_info_t *x = psc_lat_test_info(i);

        assert_non_null(strstr(x->title, "->"));
        assert_int_equal(psc_lat_test_from_name(x->name, &t), PSC_OK);
        assert_int_equal(t, i);
        if (x->method == PSC_LAT_CHASE)
            assert_true(x->working_set >= (2u << 20));
    }
    assert_int_equal(psc_lat_test_match("*_flag", found, 32), 2);
    assert_int_equal(psc_lat_test_match("*sync_copy*", found, 32), 4);
    assert_null(psc_lat_test_info(psc_lat_test_count()));
}

static void test_render(void **state)
{
    static psc_lat_result_t r[2];
    int devs[] = {0, 1};
    psc_lat_test_t chase, copy;
    char *buf = NULL;
    size_t len = 0;
    FILE *f;

    (void)state;
    psc_lat_test_from_name("gpu_to_gpu_chase", &chase);
    psc_lat_test_from_name("gpu_to_gpu_copy_ce", &copy);
    memset(r, 0, sizeof(r));
    r[0].c = (psc_lat_case_t){chase, 0, 1, 1};
    r[1].c = (psc_lat_case_t){chase, 1, 0, 0};
    r[0].status = r[1].status = PSC_RESULT_PASSED;
    r[0].nsizes = r[1].nsizes = 1;
    r[0].lat[0] = (psc_pctl_t){64, 800, 828, 840, 901, 950, 830};
    r[1].lat[0] = (psc_pctl_t){64, 810, 831, 850, 899, 960, 832};
    /* Kept samples give each case's coefficient of variation: constant ones 0; none kept, "-". */
    r[0].nkept[0] = 3;
    r[0].kept[0][0] = r[0].kept[0][1] = r[0].kept[0][2] = 828;
    f = open_memstream(&buf, &len);
    psc_render_lat(f, chase, r, 2, devs, 2);
    fclose(f);
    assert_non_null(strstr(buf, "src \\ dst       gpu0       gpu1\n"
                                "gpu0               -  828 (901)\n"
                                "gpu1       831 (899)          -\n"));
    assert_non_null(strstr(buf, "[coefficient of variation, %: standard deviation / mean of each case's samples (the "
                                "first 512)]\n"
                                "src \\ dst  gpu0  gpu1\n"
                                "gpu0          -  0.00\n"
                                "gpu1          -     -\n"));
    free(buf);
    r[0].c = (psc_lat_case_t){copy, 0, 1, 0};
    r[0].nsizes = 2;
    r[0].sizes[0] = 4;
    r[0].sizes[1] = 1048576;
    r[0].lat[1] = (psc_pctl_t){20, 4000, 4500, 4700, 4800, 5000, 4550};
    r[0].submit[0] = (psc_pctl_t){20, 1000, 1200, 1300, 1400, 1500, 1250};
    {
        static const float v[] = {2, 4, 4, 4, 5, 5, 7, 9}; /* mean 5, sample stddev sqrt(32 / 7): CV 42.76 % */

        r[0].nkept[0] = 8;
        memcpy(r[0].kept[0], v, sizeof(v));
    }
    f = open_memstream(&buf, &len);
    psc_render_lat(f, copy, r, 1, devs, 2);
    fclose(f);
    assert_non_null(strstr(buf, "CPU submit is the host's time per cuMemcpy*Async call"));
    assert_non_null(strstr(buf, "bytes    GPU per copy p50  GPU p99  CPU submit p50  CPU submit p99   CV %\n"
                                "4                    0.83     0.90            1.20            1.40  42.76\n"
                                "1048576              4.50     4.80            0.00            0.00      -\n"));
    free(buf);
    {
        json_t *j = psc_json_lat_result(&r[0]);

        assert_string_equal(json_string_value(json_object_get(j, "direction")), "gpu0 -> gpu1");
        assert_int_equal(json_array_size(json_object_get(j, "sizes")), 2);
        assert_float_equal(json_real_value(json_object_get(json_object_get(json_array_get(json_object_get(j, "sizes"), 0),
                                                                           "cpu_submit"), "p50")), 1200, 0);
        assert_float_equal(json_real_value(json_object_get(json_array_get(json_object_get(j, "sizes"), 0), "cv_pct")),
                           100.0 * sqrt(32.0 / 7.0) / 5.0, 1e-9);
        assert_true(json_is_null(json_object_get(json_array_get(json_object_get(j, "sizes"), 1), "cv_pct")));
        json_decref(j);
    }
}


/* nvbandwidth's chain: word i points at word i + 16 (128 bytes on), wrapping; filled in any chunks alike. */
static void test_chain_stride(void **state)
{
    const uint64_t n = 1000, base = 0x7f0000000000ull;
    uint64_t whole[1000], parts[1000];

    (void)state;
    psc__chain_fill_stride(whole, 0, n, n, PSC_CHASE_SEQ_STRIDE_WORDS, base);
    for (uint64_t i = 0; i < n; i++)
        assert_true(whole[i] == base + 8 * ((i + 16) % n));
    assert_true(whole[n - 1] == base + 8 * 15); /* the last word wraps to the start's 16th */
    for (uint64_t w = 0; w < n; w += 37) /* chunks that do not divide n */
        psc__chain_fill_stride(parts + w, w, n - w < 37 ? n - w : 37, n, 16, base);
    assert_memory_equal(whole, parts, sizeof(whole));
    for (uint64_t hops = 0; hops < 3 * n; hops += 61) { /* the host's end is where a walk from word 0 ends */
        uint64_t at = 0;

        for (uint64_t h = 0; h < hops; h++)
            at = (whole[at] - base) / 8;
        assert_true(psc__chain_stride_end(n, 16, hops) == at);
    }
    assert_true(psc__chain_stride_end(64ull << 20, 16, 7575) == 7575 * 16); /* nvbandwidth on 132 SMs: no wrap */
    assert_true(psc__chain_stride_end(1, 16, 5) == 0);
}

static void test_sequential_registry(void **state)
{
    psc_lat_test_t t;
    const psc_lat_test_info_t *ti;
    int n = 0;

    (void)state;
    assert_int_equal(psc_lat_test_from_name("gpu_to_gpu_chase_sequential", &t), PSC_OK);
    ti = psc_lat_test_info(t);
    assert_int_equal(ti->method, PSC_LAT_CHASE);
    assert_int_equal(ti->where, PSC_LAT_PEER);
    assert_true(ti->working_set == (512ull << 20)); /* nvbandwidth's default buffer */
    assert_non_null(strstr(ti->title, "nvbandwidth's way"));
    assert_non_null(strstr(ti->title, "device_to_device_latency_sm"));
    for (int i = 0; i < psc_lat_test_count(); i++)
        n += psc__lat_chase_is_sequential(psc_lat_test_info(i));
    assert_int_equal(n, 1);
    assert_false(psc__lat_chase_is_sequential(NULL));
}

/* The sequential chase from GPU 1's memory by GPU 0 on the fake GPUs. */
static void run_sequential(psc_lat_result_t *res)
{
    psc_lat_case_t c;
    psc_lat_opts_t o;

    psc_lat_opts_default(&o);
    o.samples = 3; /* -n does not apply: one launch per SM */
    o.hops = 10;   /* nor --hops: 1,000,000 / SMs loads each */
    assert_int_equal(psc_lat_test_from_name("gpu_to_gpu_chase_sequential", &c.test), PSC_OK);
    c.src = 1;
    c.dst = c.issuer = 0;
    assert_int_equal(psc_lat_run(g_ctx, &c, &o, res), PSC_OK);
}

static void test_sequential_on_fake(void **state)
{
    psc_lat_result_t *res = calloc(1, sizeof(*res));
    int (*launches)(void) = NULL;
    unsigned (*grid)(void) = NULL, (*block)(void) = NULL;
    const uint64_t ws = 512ull << 20, n = ws / 8;
    psc_buffer_t *b = NULL;
    const uint64_t *w;
    int before;

    (void)state;
    assert_non_null(res);
    *(void **)&launches = psc_test_fake_sym("fake_cuda_launches");
    *(void **)&grid = psc_test_fake_sym("fake_cuda_last_grid");
    *(void **)&block = psc_test_fake_sym("fake_cuda_last_block");
    assert_true(launches && grid && block);
    before = launches();
    run_sequential(res);
    if (res->status != PSC_RESULT_PASSED)
        fail_msg("%s", res->reason);
    assert_int_equal(launches() - before, 132); /* one per SM of the fake's 132 */
    assert_int_equal(grid(), 132);               /* each a block per SM, one thread each */
    assert_int_equal(block(), 1);
    assert_int_equal(res->lat[0].n, 132);        /* a sample per launch */
    assert_int_equal(res->nkept[0], 132);
    assert_true(res->lat[0].min > 0 && res->lat[0].mean >= res->lat[0].min);
    assert_true(res->ns_per_cycle > 0);
    assert_int_equal(res->nsizes, 1);
    assert_true(res->sizes[0] == ws);
    /* The fake's copy of the chain, still in the buffer cache: every word of the 512 MiB 128 bytes ahead. */
    assert_int_equal(psc__buffer_get(g_ctx, PSC_MEM_DEVICE, 1, -1, ws, &b), PSC_OK);
    w = (const uint64_t *)(uintptr_t)b->dptr;
    for (uint64_t i = 0; i < n; i++)
        if (w[i] != b->dptr + 8 * ((i + 16) % n))
            fail_msg("word %llu points at 0x%llx, not 128 bytes ahead of itself (wrapping)", (unsigned long long)i,
                     (unsigned long long)w[i]);
    psc__buffer_put(b);
    /* A load that returns the wrong pointer: the walk ends a node off and the case fails, naming both. */
    setenv("FAKE_CUDA_CHASE_MISREAD", "1", 1);
    run_sequential(res);
    unsetenv("FAKE_CUDA_CHASE_MISREAD");
    assert_int_equal(res->status, PSC_RESULT_FAILED);
    assert_non_null(strstr(res->reason, "wrong data: the chain walked by SM launch 0 ended at 0x"));
    assert_non_null(strstr(res->reason, ", expected 0x"));
    free(res);
}

/* The chase by bulk copies: the one TMA latency test, a peer chase, run on the fake by its own kernel. */
static void test_tma_chase_on_fake(void **state)
{
    psc_lat_result_t *res = calloc(1, sizeof(*res));
    const char *(*last)(void) = NULL;
    psc_lat_case_t c = {0, 1, 0, 0};
    psc_lat_opts_t o;
    int n = 0;

    (void)state;
    assert_non_null(res);
    for (int i = 0; i < psc_lat_test_count(); i++)
        n += psc_lat_test_info(i)->tma;
    assert_int_equal(n, 1);
    assert_int_equal(psc_lat_test_from_name("gpu_to_gpu_chase_tma", &c.test), PSC_OK);
    assert_int_equal(psc_lat_test_info(c.test)->tma, 1);
    assert_int_equal(psc_lat_test_info(c.test)->method, PSC_LAT_CHASE);
    assert_int_equal(psc_lat_test_info(c.test)->where, PSC_LAT_PEER);
    *(void **)&last = psc_test_fake_sym("fake_cuda_last_kernel");
    assert_non_null(last);
    psc_lat_opts_default(&o);
    o.samples = 5;
    o.hops = 100;
    assert_int_equal(psc_lat_run(g_ctx, &c, &o, res), PSC_OK);
    if (res->status != PSC_RESULT_PASSED)
        fail_msg("%s", res->reason);
    assert_string_equal(last(), "psc_chase_tma");
    assert_int_equal(res->lat[0].n, 5);
    assert_true(res->lat[0].min > 0);
    assert_int_equal(psc_lat_test_from_name("gpu_to_gpu_chase", &c.test), PSC_OK);
    assert_int_equal(psc_lat_run(g_ctx, &c, &o, res), PSC_OK);
    assert_string_equal(last(), "psc_chase");
    free(res);
}

static int fake_setup(void **state)
{
    return psc_test_open_fake_gpus(state, "2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_is_one_cycle), cmocka_unit_test(test_chain_is_random_and_seeded),
        cmocka_unit_test(test_percentiles), cmocka_unit_test(test_percentiles_awkward_n),
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_render), cmocka_unit_test(test_chain_stride), cmocka_unit_test(test_sequential_registry),
    };
    const struct CMUnitTest fake[] = {
        cmocka_unit_test(test_sequential_on_fake),
        cmocka_unit_test(test_tma_chase_on_fake),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);

    return rc | cmocka_run_group_tests_name("on the fake driver", fake, fake_setup, psc_test_close_ctx);
}
