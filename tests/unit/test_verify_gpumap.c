/*
 * verify's mapped path (bw's host_to_gpu_gpumap_cpu and gpu_to_host_gpumap_cpu
 * cases) on fake GPUs whose kernels run on the CPU: waived with each backend's
 * reason where nothing maps; through the fake libgdrapi (whose mapping is the
 * fake device memory itself) every size, offset and pattern of the plan copied
 * by the CPU through the mapping and checked, and damage after a copy found
 * where it was, in one run, the stress loop and the suite.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake_context.h"
#include "fake_gdr_env.h"
#include "internal.h"
#include "suite_opts.h"
#include "test_hooks.h"

static const char *const names[] = {"host_to_gpu_gpumap_cpu", "gpu_to_host_gpumap_cpu"};
static int (*gdr_live)(int what); /* the fake's counters: 1 pins, 2 maps, 3 misuses */

/* The plan's sizes up to pageable memory's limit (1 B, 7 B, 4101 B, 1 MiB + 13), two offset pairs, six patterns. */
#define PLAN_COPIES (4u * 2u * PSC_PATTERN_KINDS)
#define PLAN_BYTES (2ull * PSC_PATTERN_KINDS * (1 + 7 + 4101 + (1ull << 20) + 13))
#define FAULT_SIZE ((1ull << 20) + 13)

/* The H100/H200 machines: no libgdrapi, a CUDA 13.0 driver, not coherent. */
static int setup_none(void **state)
{
    psc_test_gdr_none();
    return psc_test_open_fake_gpus(state, "2");
}

static int setup_gdr(void **state)
{
    psc_test_gdr_fake();
    return psc_test_open_fake_gpus(state, "2");
}

static void assert_has(const char *text, const char *what)
{
    if (!strstr(text, what))
        fail_msg("\"%s\" lacks \"%s\"", text, what);
}

static psc_bw_test_t bw_test(const char *name)
{
    psc_bw_test_t t = -1;

    assert_int_equal(psc_bw_test_from_name(name, &t), PSC_OK);
    return t;
}

/* The test's case for GPU g (one per GPU: the host and that GPU). */
static psc_bw_case_t case_of(const char *name, int g)
{
    psc_bw_case_t c[2];
    size_t n = 0;

    assert_int_equal(psc_bw_cases(g_ctx, bw_test(name), NULL, 0, c, 2, &n), PSC_OK);
    assert_int_equal(n, 2);
    assert_int_equal(c[g].xfer[0].issuer, g);
    return c[g];
}

static void set_fault(psc_fault_t kind)
{
    psc_test_hooks_t h;

    psc__test_hooks_default(&h);
    h.fault = kind;
    h.fault_offset = 1000;
    h.fault_len = 64;
    h.fault_size = FAULT_SIZE;
    assert_int_equal(psc__test_hooks_set(g_ctx, &h), PSC_OK);
}

/* Nothing maps: each case waived with every backend's reason, nothing copied; the suite fails nothing. */
static void test_waived(void **state)
{
    psc_verify_opts_t o;
    psc_verify_suite_t *s = NULL;
    psc_bw_test_t t[2] = {bw_test(names[0]), bw_test(names[1])};

    (void)state;
    psc_verify_opts_default(&o);
    for (int k = 0; k < 2; k++)
        for (int g = 0; g < 2; g++) {
            psc_bw_case_t c = case_of(names[k], g);
            psc_verify_result_t r;
            char want[64];

            assert_int_equal(psc_verify_run(g_ctx, &c, &o, &r), PSC_OK);
            assert_int_equal(r.status, PSC_RESULT_WAIVED);
            assert_int_equal(r.copies, 0);
            snprintf(want, sizeof(want), "no CPU mapping of GPU %d's memory", g);
            assert_has(r.reason, want);
            assert_has(r.reason, "gdrcopy: no libgdrapi");
            assert_has(r.reason, "dma-buf: the driver (CUDA 13.0) is too old");
            assert_has(r.reason, "coherent: ");
        }
    assert_int_equal(psc_verify_run_suite(g_ctx, verify_suite_opts(t, 2, NULL, 0, &o, 0, 0, NULL, NULL), &s), PSC_OK);
    assert_int_equal(s->npaths, 4);
    assert_int_equal(s->nfailed, 0);
    for (size_t k = 0; k < s->npaths; k++)
        assert_int_equal(s->paths[k].last.status, PSC_RESULT_WAIVED);
    psc_verify_suite_free(s);
}

/* Through the fake gdrcopy: the whole plan copied by the CPU through the mapping and checked; nothing left mapped. */
static void test_passes_through_mapping(void **state)
{
    psc_verify_opts_t o;

    (void)state;
    psc_verify_opts_default(&o);
    for (int k = 0; k < 2; k++)
        for (int g = 0; g < 2; g++) {
            psc_bw_case_t c = case_of(names[k], g);
            psc_verify_result_t r;

            assert_int_equal(psc_verify_run(g_ctx, &c, &o, &r), PSC_OK);
            if (r.status != PSC_RESULT_PASSED)
                fail_msg("%s on GPU %d: %s", names[k], g, r.reason);
            assert_int_equal(r.copies, PLAN_COPIES);
            assert_int_equal(r.bytes_copied, PLAN_BYTES);
            assert_int_equal(r.bad_bytes, 0);
            assert_int_equal(gdr_live(1), 0);
            assert_int_equal(gdr_live(2), 0);
        }
    assert_int_equal(gdr_live(3), 0);
}

/* The mapping is really what is copied through: a map gdrcopy refuses is no silent cuMemcpy pass. */
static void test_map_refused_not_passed(void **state)
{
    psc_bw_case_t c = case_of(names[0], 1);
    psc_verify_opts_t o;
    psc_verify_result_t r;

    (void)state;
    psc_verify_opts_default(&o);
    setenv("FAKE_GDR_MAP_FAIL", "5", 1); /* EIO */
    assert_int_equal(psc_verify_run(g_ctx, &c, &o, &r), PSC_OK);
    unsetenv("FAKE_GDR_MAP_FAIL");
    assert_int_not_equal(r.status, PSC_RESULT_PASSED);
    assert_int_equal(r.copies, 0);
    assert_has(r.reason, "gdrcopy");
    assert_int_equal(gdr_live(1), 0);
}

/* A mapping whose stores never reach the GPU (and whose loads read zeros): both directions fail, wrong data found. */
static void test_broken_mapping_found(void **state)
{
    psc_verify_opts_t o;

    (void)state;
    psc_verify_opts_default(&o);
    setenv("FAKE_GDR_MAP_SHADOW", "1", 1);
    for (int k = 0; k < 2; k++) {
        psc_bw_case_t c = case_of(names[k], 0);
        psc_verify_result_t r;

        assert_int_equal(psc_verify_run(g_ctx, &c, &o, &r), PSC_OK);
        assert_int_equal(r.status, PSC_RESULT_FAILED);
        assert_int_equal(r.copies, PLAN_COPIES);
        assert_true(r.bad_copies > 0);
        assert_int_equal(r.first.where, 0);
        assert_has(r.reason, "wrong data");
    }
    unsetenv("FAKE_GDR_MAP_SHADOW");
    assert_int_equal(gdr_live(2), 0);
}

/* A BAR1 too small for the buffers: waived, BAR1 named, nothing left pinned. */
static void test_bar1_waived(void **state)
{
    psc_bw_case_t c = case_of(names[1], 0);
    psc_verify_opts_t o;
    psc_verify_result_t r;

    (void)state;
    psc_verify_opts_default(&o);
    setenv("FAKE_GDR_BAR1", "65536", 1); /* gdr_pin_buffer's ENOMEM: what gdrdrv says when BAR1 is full */
    assert_int_equal(psc_verify_run(g_ctx, &c, &o, &r), PSC_OK);
    unsetenv("FAKE_GDR_BAR1");
    assert_int_equal(r.status, PSC_RESULT_WAIVED);
    assert_has(r.reason, "gdrcopy: gdr_pin_buffer failed");
    assert_int_equal(gdr_live(1), 0);
}

/* Each kind of damage after a copy, in the GPU's memory (writes) and the host's (reads): found at its offset. */
static void test_faults_found(void **state)
{
    static const psc_fault_t kinds[] = {PSC_FAULT_FLIP, PSC_FAULT_DROP, PSC_FAULT_MISPLACE};
    psc_verify_opts_t o;

    (void)state;
    psc_verify_opts_default(&o);
    for (int k = 0; k < 2; k++)
        for (size_t f = 0; f < sizeof(kinds) / sizeof(kinds[0]); f++) {
            psc_bw_case_t c = case_of(names[k], 1);
            psc_verify_result_t r;

            set_fault(kinds[f]);
            assert_int_equal(psc_verify_run(g_ctx, &c, &o, &r), PSC_OK);
            assert_int_equal(psc__test_hooks_set(g_ctx, NULL), PSC_OK);
            assert_int_equal(r.status, PSC_RESULT_FAILED);
            assert_int_equal(r.copies, PLAN_COPIES);
            assert_int_equal(r.bad_copies, 2 * PSC_PATTERN_KINDS); /* every copy of the damaged size */
            assert_int_equal(r.first.where, 0);
            assert_int_equal(r.first.size, FAULT_SIZE);
            assert_int_equal(r.first.offset, 1000);
            assert_true(r.bad_bytes >= 2 * PSC_PATTERN_KINDS);
            if (kinds[f] == PSC_FAULT_FLIP)
                assert_int_equal(r.first.found, r.first.expected ^ 0x5A);
            assert_has(r.reason, "wrong data");
            assert_has(r.reason, "in the destination at offset 1000 of a 1048589-byte copy");
            assert_int_equal(gdr_live(1), 0);
        }
}

/* The stress loop and the suite: the damaged mapped paths fail with their evidence, passes summed. */
static void test_stress_and_suite(void **state)
{
    psc_bw_case_t c[2] = {case_of(names[0], 0), case_of(names[1], 1)};
    psc_bw_test_t t[2] = {bw_test(names[0]), bw_test(names[1])};
    psc_verify_path_sum_t sums[2];
    psc_verify_stress_info_t info;
    psc_verify_suite_t *s = NULL;
    psc_verify_opts_t o;

    (void)state;
    psc_verify_opts_default(&o);
    assert_int_equal(psc_verify_stress(g_ctx, c, 2, stress_opts(&o, 0, NULL, NULL), sums, &info), PSC_OK);
    assert_int_equal(info.passes, 1);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(sums[k].last.status, PSC_RESULT_PASSED);
        assert_int_equal(sums[k].copies, PLAN_COPIES);
    }
    set_fault(PSC_FAULT_FLIP);
    assert_int_equal(psc_verify_stress(g_ctx, c, 2, stress_opts(&o, 0, NULL, NULL), sums, &info), PSC_OK);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(sums[k].last.status, PSC_RESULT_FAILED);
        assert_int_equal(sums[k].bad_bytes, 2 * PSC_PATTERN_KINDS);
        assert_int_equal(sums[k].last.first.offset, 1000);
    }
    assert_int_equal(psc_verify_run_suite(g_ctx, verify_suite_opts(t, 2, NULL, 0, &o, 0, 0, NULL, NULL), &s), PSC_OK);
    assert_int_equal(psc__test_hooks_set(g_ctx, NULL), PSC_OK);
    assert_int_equal(s->npaths, 4);
    assert_int_equal(s->nfailed, 4);
    for (size_t k = 0; k < s->npaths; k++)
        assert_int_equal(s->paths[k].last.first.size, FAULT_SIZE);
    psc_verify_suite_free(s);
}

/* A mapped test's case must have the host and the issuing GPU at its ends. */
static void test_case_refused(void **state)
{
    psc_bw_case_t c = case_of(names[0], 0);
    psc_verify_opts_t o;
    psc_verify_result_t r;

    (void)state;
    psc_verify_opts_default(&o);
    c.xfer[0].src = 1;
    c.xfer[0].dst = 0;
    assert_int_equal(psc_verify_run(g_ctx, &c, &o, &r), PSC_ERR_INVALID);
    assert_has(psc_context_last_error(g_ctx), "accepted the host at one end and the issuing GPU");
    c = case_of(names[1], 0);
    c.xfer[0].issuer = 1;
    assert_int_equal(psc_verify_run(g_ctx, &c, &o, &r), PSC_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest none[] = {
        cmocka_unit_test(test_waived),
    };
    const struct CMUnitTest gdr[] = {
        cmocka_unit_test(test_passes_through_mapping),
        cmocka_unit_test(test_map_refused_not_passed),
        cmocka_unit_test(test_broken_mapping_found),
        cmocka_unit_test(test_bar1_waived),
        cmocka_unit_test(test_faults_found),
        cmocka_unit_test(test_stress_and_suite),
        cmocka_unit_test(test_case_refused),
    };
    void *h = dlopen(FAKE_LIBGDRAPI, RTLD_NOW | RTLD_LOCAL); /* kept loaded: its counters outlive the library's dlclose */

    if (!h || !(*(void **)&gdr_live = dlsym(h, "fake_gdr_live")))
        return 1;
    return cmocka_run_group_tests_name("no backend", none, setup_none, psc_test_close_ctx) |
           cmocka_run_group_tests_name("fake gdrcopy", gdr, setup_gdr, psc_test_close_ctx);
}
