/*
 * p2pscope verify on the real GPUs: the fill and check kernels produce
 * exactly the host reference of every data pattern; clean runs pass on each
 * engine and memory kind; every kind of injected fault is found, at exactly
 * its offset; the binary exits 1 with a fault and 0 without.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "gpu_common.h"
#include "pattern/check.h"

static psc_verify_opts_t psc__plan(void)
{
    psc_verify_opts_t o;

    psc_verify_opts_default(&o);
    o.max_size = (1ull << 20) + 13; /* 1, 7, 4101 and 1 MiB + 13 bytes */
    return o;
}

/*
 * Every kind, as a plain source, a poisoned bandwidth buffer and a prepared
 * destination (shifted by an odd delta, complemented, canaries around): the
 * GPU's fill equals psc_expect_byte byte for byte over 4 KiB and an
 * unaligned tail, its check of that fill is clean, and a flipped byte in
 * the tail is found at its offset.
 */
static void test_fill_equals_host_reference(void **state)
{
    const uint64_t n = 4096 + 13;
    static uint8_t got[4096 + 13];
    psc_buffer_t *b = NULL;

    (void)state;
    assert_int_equal(psc__buffer_get(g_ctx, PSC_MEM_DEVICE, 0, -1, n, &b), PSC_OK);
    for (int kind = 0; kind < PSC_PAT_KINDS; kind++) {
        psc_expect_t e[3] = {psc_expect_pattern(kind, 0x1234567ull + (uint64_t)kind, n),
                             psc_expect_pattern(kind, 0x1234567ull ^ PSC_POISON_XOR, n),
                             {0xfeedull, 64 + 11, 64 + 11 + 4000, 5 - (64 + 11), kind, 1}};

        for (int k = 0; k < 3; k++) {
            psc_check_t c;
            uint64_t bad = 0, first = UINT64_MAX;

            assert_int_equal(psc__expect_fill(g_ctx, b, &e[k]), PSC_OK);
            assert_int_equal(psc__gpu_use(g_ctx, 0), PSC_OK);
            assert_int_equal(g_ctx->cu.p_cuMemcpyDtoH(got, b->dptr, n), CUDA_SUCCESS);
            for (uint64_t o = 0; o < n; o++)
                if (got[o] != psc_expect_byte(&e[k], o)) {
                    bad++;
                    first = first < o ? first : o;
                }
            if (bad)
                fprintf(stderr, "  kind %d expectation %d: %llu bytes differ, first at %llu\n", kind, k,
                        (unsigned long long)bad, (unsigned long long)first);
            assert_int_equal(bad, 0);
            assert_int_equal(psc__expect_check(g_ctx, b, &e[k], &c), PSC_OK);
            assert_int_equal(c.bad_bytes, 0);
            assert_int_equal(c.first_bad, -1);
            assert_int_equal(psc__pattern_flip(g_ctx, b, n - 3), PSC_OK);
            assert_int_equal(psc__expect_check(g_ctx, b, &e[k], &c), PSC_OK);
            assert_int_equal(c.bad_bytes, 1);
            assert_int_equal(c.first_bad, (int64_t)(n - 3));
            assert_int_equal(c.expected, psc_expect_byte(&e[k], n - 3));
            assert_int_equal(c.found, (uint8_t)(psc_expect_byte(&e[k], n - 3) ^ 0x5A));
        }
    }
    psc__buffer_put(b);
}

static void test_clean_paths(void **state)
{
    const char *const tests[] = {"gpu_local_ce", "gpu_local_sm", "host_to_gpu_ce", "gpu_to_host_wc_sm",
                                 "gpu_to_host_pageable_ce", "host_to_gpu_registered_sm"};
    psc_verify_opts_t o = psc__plan();

    (void)state;
    for (size_t t = 0; t < sizeof(tests) / sizeof(tests[0]); t++) {
        int h2d = strncmp(tests[t], "host_to", 7) == 0, d2h = strncmp(tests[t], "gpu_to_host", 11) == 0;
        psc_bw_case_t c = psc_test_case(tests[t], h2d ? PSC_HOST : 0, d2h ? PSC_HOST : 0, 0);
        psc_verify_result_t r;

        assert_int_equal(psc_verify_run(g_ctx, &c, &o, &r), PSC_OK);
        printf("  %-28s %s, %llu copies, %.1f MB checked\n", tests[t], psc_result_status_string(r.status),
               (unsigned long long)r.copies, r.bytes_checked / 1e6);
        if (r.status != PSC_RESULT_PASSED)
            fprintf(stderr, "  %s\n", r.reason);
        assert_int_equal(r.status, PSC_RESULT_PASSED);
        assert_int_equal(r.copies, 4 * 2 * PSC_PATTERN_KINDS); /* sizes x offsets x patterns */
        assert_int_equal(r.bad_bytes, 0);
        assert_true(r.bytes_checked > r.bytes_copied);
    }
}

/* The mapped path: the plan through GPU 0's CPU mapping where a backend maps it, else waived with the reasons. */
static void test_mapped_path(void **state)
{
    const char *const tests[] = {"host_to_gpu_gpumap_cpu", "gpu_to_host_gpumap_cpu"};
    psc_verify_opts_t o = psc__plan();

    (void)state;
    for (size_t t = 0; t < sizeof(tests) / sizeof(tests[0]); t++) {
        int h2d = t == 0;
        psc_bw_case_t c = psc_test_case(tests[t], h2d ? PSC_HOST : 0, h2d ? 0 : PSC_HOST, 0);
        psc_verify_result_t r;

        assert_int_equal(psc_verify_run(g_ctx, &c, &o, &r), PSC_OK);
        printf("  %-28s %s, %llu copies: %s\n", tests[t], psc_result_status_string(r.status),
               (unsigned long long)r.copies, r.reason);
        if (r.status == PSC_RESULT_WAIVED) {
            assert_non_null(strstr(r.reason, "no CPU mapping of GPU 0's memory: gdrcopy: "));
            assert_int_equal(r.copies, 0);
            continue;
        }
        assert_int_equal(r.status, PSC_RESULT_PASSED);
        assert_int_equal(r.copies, 4 * 2 * PSC_PATTERN_KINDS);
        assert_int_equal(r.bad_bytes, 0);
    }
}

static void psc__fault(const char *test, int src, int dst, int issuer, psc_fault_t kind)
{
    psc_verify_opts_t o = psc__plan();
    psc_bw_case_t c = psc_test_case(test, src, dst, issuer);
    psc_verify_result_t r;
    uint64_t copies_hit = 2 * PSC_PATTERN_KINDS; /* every copy of the faulted size */
    psc_test_hooks_t h;

    psc__test_hooks_default(&h);
    h.fault = kind;
    h.fault_offset = 1000;
    h.fault_len = 64;
    h.fault_size = (1ull << 20) + 13;
    assert_int_equal(psc__test_hooks_set(g_ctx, &h), PSC_OK);
    assert_int_equal(psc_verify_run(g_ctx, &c, &o, &r), PSC_OK);
    assert_int_equal(psc__test_hooks_set(g_ctx, NULL), PSC_OK);
    printf("  %s fault %d: %s\n", test, kind, r.reason);
    assert_int_equal(r.status, PSC_RESULT_FAILED);
    assert_int_equal(r.first.where, 0);     /* in the destination range */
    assert_int_equal(r.first.offset, 1000); /* exactly where it was put */
    assert_int_equal(r.first.size, h.fault_size);
    assert_int_equal(r.bad_copies, copies_hit);
    if (kind == PSC_FAULT_FLIP)
        assert_int_equal(r.bad_bytes, copies_hit);
    else if (kind == PSC_FAULT_DROP)
        assert_int_equal(r.bad_bytes, copies_hit * 64);
    else
        assert_true(r.bad_bytes >= copies_hit * 64);
    assert_true(r.first.expected != r.first.found);
}

static void test_faults_found_and_located(void **state)
{
    (void)state;
    psc__fault("gpu_local_ce", 0, 0, 0, PSC_FAULT_FLIP);
    psc__fault("gpu_local_sm", 0, 0, 0, PSC_FAULT_DROP);
    psc__fault("gpu_local_ce", 0, 0, 0, PSC_FAULT_MISPLACE);
    psc__fault("gpu_to_host_ce", 0, PSC_HOST, 0, PSC_FAULT_DROP);
    if (psc_device_count(g_ctx) >= 2) {
        psc__fault("gpu_to_gpu_write_sm", 0, 1, 0, PSC_FAULT_FLIP);
        psc__fault("gpu_to_gpu_read_ce", 0, 1, 1, PSC_FAULT_MISPLACE);
        psc__fault("gpu_to_gpu_p2p_off_ce", 1, 0, 1, PSC_FAULT_DROP);
    }
}

/*
 * Background traffic: the cases pass while every other path is busy, every
 * load path made copies and had them checked clean, P2P off in between
 * (peer access toggled under the load) breaks nothing, and a fault in the
 * checked path is still found exactly.
 */
static void test_under_load(void **state)
{
    const int ngpu = psc_device_count(g_ctx);
    psc_verify_opts_t o = psc__plan();
    psc_load_path_report_t rep[PSC_LOAD_MAX_PATHS];
    psc_bw_case_t cases[3] = {psc_test_case("gpu_local_ce", 0, 0, 0), psc_test_case("gpu_to_host_ce", 0, PSC_HOST, 0),
                              psc_test_case("gpu_local_sm", 0, 0, 0)};
    psc_verify_result_t r;
    psc_load_t *load = NULL;
    psc_test_hooks_t h;
    int n = 0;

    (void)state;
    if (ngpu >= 2) {
        cases[1] = psc_test_case("gpu_to_gpu_p2p_off_ce", 0, 1, 0);
        cases[2] = psc_test_case("gpu_to_gpu_write_sm", 1, 0, 1);
    }
    assert_int_equal(psc_load_start(g_ctx, NULL, 0, &load), PSC_OK);
    assert_int_equal(psc_load_report(load, NULL, 0), ngpu >= 2 ? 3 * ngpu : 2);
    o.load = load;
    o.max_size = (16ull << 20) + 3;
    for (int k = 0; k < 3; k++) {
        assert_int_equal(psc_verify_run(g_ctx, &cases[k], &o, &r), PSC_OK);
        if (r.status != PSC_RESULT_PASSED)
            fprintf(stderr, "  %s\n", r.reason);
        assert_int_equal(r.status, PSC_RESULT_PASSED);
    }
    psc__test_hooks_default(&h);
    h.fault = PSC_FAULT_FLIP;
    h.fault_offset = 4321;
    h.fault_size = (16ull << 20) + 3;
    assert_int_equal(psc__test_hooks_set(g_ctx, &h), PSC_OK);
    assert_int_equal(psc_verify_run(g_ctx, &cases[0], &o, &r), PSC_OK);
    assert_int_equal(psc__test_hooks_set(g_ctx, NULL), PSC_OK);
    assert_int_equal(r.status, PSC_RESULT_FAILED);
    assert_int_equal(r.first.offset, 4321);
    assert_int_equal(psc_load_stop(load, rep, PSC_LOAD_MAX_PATHS, &n), PSC_OK);
    assert_int_equal(n, ngpu >= 2 ? 3 * ngpu : 2);
    for (int i = 0; i < n; i++) {
        printf("  load %d -> %d: %llu copies, %.1f GB\n", rep[i].src, rep[i].dst, (unsigned long long)rep[i].copies,
               rep[i].bytes_moved / 1e9);
        assert_true(rep[i].copies > 0);
        assert_true(rep[i].bytes_checked >= 2 * rep[i].bytes_moved / rep[i].copies); /* destination and source */
        assert_int_equal(rep[i].bad_bytes, 0);
        assert_int_equal(rep[i].first_bad_offset, -1);
    }
}

static int psc__run_cli(const char *args)
{
    char cmd[512];
    int st;

    snprintf(cmd, sizeof(cmd), "%s verify %s > /dev/null 2>&1", P2PSCOPE_BIN, args);
    st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* --seconds: passes until the time is up, then the summary; every pass counted per path. */
static void test_stress_seconds(void **state)
{
    static char buf[1 << 20];
    char path[] = "/tmp/psc-stress-XXXXXX", args[160], *at;
    struct timespec t0, t1;
    unsigned passes = 0;
    FILE *f;
    int fd = mkstemp(path);

    (void)state;
    assert_true(fd >= 0);
    close(fd);
    snprintf(args, sizeof(args), "-t gpu_local_ce -d 0 -e 4K --seconds 2 --json=%s", path);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(psc__run_cli(args), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true((double)(t1.tv_sec - t0.tv_sec) < 20); /* 2 s, plus start-up and the last path */
    f = fopen(path, "r");
    assert_non_null(f);
    memset(buf, 0, sizeof(buf));
    assert_true(fread(buf, 1, sizeof(buf) - 1, f) > 0);
    fclose(f);
    unlink(path);
    at = strstr(buf, "\"passes\"");
    assert_non_null(at);
    assert_int_equal(sscanf(at, "\"passes\": %u", &passes), 1);
    assert_true(passes >= 2); /* a 4 KiB plan takes well under a second */
}

static void test_exit_codes(void **state)
{
    (void)state;
    assert_int_equal(psc__run_cli("-t gpu_local_ce -d 0 -e 64K"), 0);
    assert_int_equal(psc__run_cli("-t gpu_local_ce -d 0 -e 64K --test-fault flip:77"), 1);
    assert_int_equal(psc__run_cli("-t gpu_local_ce -d 0 -e 64K --test-fault drop:5:100"), 1);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fill_equals_host_reference),
    cmocka_unit_test(test_clean_paths),
    cmocka_unit_test(test_mapped_path),
    cmocka_unit_test(test_faults_found_and_located),
    cmocka_unit_test(test_under_load),
    cmocka_unit_test(test_stress_seconds),
    cmocka_unit_test(test_exit_codes),
};

PSC_GPU_TEST_MAIN(tests)
