/*
 * --expect through the real binary on the fake driver (kernels and copies run
 * on the CPU): a passing file exits 0, a missed bound exits 1 with a line
 * naming test, case, figure and bound and the JSON still written, a malformed
 * file exits 2 before anything is measured, and the shipped files apply.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "scratch_dir.h"
#include <jansson.h>

#include "run_binary.h"

#define FAKE_ENV "P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1", \
                 "FAKE_CUDA_MODE=contexts", "FAKE_CUDA_KERNELS=1", "FAKE_CUDA_COUNT=2"

static const char *const psc__fake[] = {FAKE_ENV, NULL};
static const char *const psc__fake_nccl[] = {FAKE_ENV, "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL, NULL};
static const char *const psc__no_driver[] = {"P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1", NULL};


static int setup(void **state)
{
    (void)state;
    return psc_scratch_make("psc-expect");
}

static int teardown(void **state)
{
    (void)state;
    return psc_scratch_remove();
}

/* A file of rules in the test's directory; its path in buf. */
static const char *psc__file(char *buf, size_t len, const char *name, const char *text)
{
    FILE *f;

    snprintf(buf, len, "%s/%s", psc__dir, name);
    f = fopen(buf, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static json_t *psc__json(const char *path)
{
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);

    assert_non_null(doc);
    return doc;
}

static void test_bw_pass_and_miss(void **state)
{
    char pass[256], miss[256], json[256], jarg[300], want[400];
    json_t *doc, *ex;
    psc__run_t r;

    (void)state;
    psc__file(pass, sizeof(pass), "pass.expect", "# any copy moves a byte a second\n"
                                                 "bw gpu_to_gpu_write_ce *@64K >= 0.001 GB/s\n"
                                                 "bw gpu_to_gpu_write_ce * >= 1000000 GB/s # no size: not at -s 64K\n");
    psc__file(miss, sizeof(miss), "miss.expect", "margin 10%\n"
                                                 "bw gpu_to_gpu_write_ce gpu0->gpu1@64KiB >= 1000000 GB/s\n");
    snprintf(json, sizeof(json), "%s/r.json", psc__dir);
    snprintf(jarg, sizeof(jarg), "--json=%s", json);

    r = psc__run((const char *[]){"bw", "-t", "gpu_to_gpu_write_ce", "-s", "64K", "-n", "3", "--expect", pass, jarg,
                                  NULL}, psc__fake);
    if (r.rc != 0)
        fprintf(stderr, "rc=%d\n%s%s", r.rc, r.out, r.err);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "expect: 2 rules, 2 checks, 0 misses (1 rule not applied"));
    assert_null(strstr(r.out, "MISS"));
    doc = psc__json(json);
    ex = json_object_get(doc, "expect");
    assert_true(json_is_true(json_object_get(ex, "passed")));
    assert_int_equal(json_integer_value(json_object_get(ex, "checks")), 2);
    assert_int_equal(json_integer_value(json_object_get(doc, "exit_code")), 0);
    json_decref(doc);
    psc__free(&r);
    unlink(json);

    /* the miss: one line naming test, case, figure and the loosened bound with its line; exit 1; JSON written */
    r = psc__run((const char *[]){"bw", "-t", "gpu_to_gpu_write_ce", "-s", "64K", "-n", "3", "--expect", miss, jarg,
                                  NULL}, psc__fake);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.out, "expect: MISS gpu_to_gpu_write_ce gpu0->gpu1@64KiB median "));
    snprintf(want, sizeof(want), " GB/s (bound >= 900000 GB/s, %s:2)\n", miss);
    assert_non_null(strstr(r.out, want));
    assert_null(strstr(r.out, "gpu1->gpu0@64KiB median"));
    assert_non_null(strstr(r.out, "expect: 1 rule, 1 check, 1 miss\n"));
    doc = psc__json(json);
    ex = json_object_get(doc, "expect");
    assert_true(json_is_false(json_object_get(ex, "passed")));
    assert_int_equal(json_array_size(json_object_get(ex, "misses")), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(ex, "misses"), 0), "case")),
                        "gpu0->gpu1@64KiB");
    assert_int_equal(json_integer_value(json_object_get(doc, "exit_code")), 1);
    json_decref(doc);
    psc__free(&r);
    unlink(json);

    /* JSON on stdout: the lines go to stderr, stdout stays one JSON document */
    r = psc__run((const char *[]){"report", "-t", "gpu_to_gpu_write_ce", "-s", "64K", "-n", "3", "--expect", miss,
                                  "--json", NULL}, psc__fake);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "expect: MISS gpu_to_gpu_write_ce gpu0->gpu1@64KiB median "));
    assert_null(strstr(r.out, "expect: MISS"));
    doc = json_loads(r.out, 0, NULL);
    assert_non_null(doc);
    assert_true(json_is_false(json_object_get(json_object_get(doc, "expect"), "passed")));
    json_decref(doc);
    psc__free(&r);
}

/* A malformed file stops the command before it measures: exit 2, one line, no JSON file; with or without a driver. */
static void test_malformed_file(void **state)
{
    char bad[256], json[256], jarg[300], want[400];

    (void)state;
    psc__file(bad, sizeof(bad), "bad.expect", "bw gpu_to_gpu_write_ce * >= 1 GB/s\n\nbw a b => 1 GB/s\n");
    snprintf(json, sizeof(json), "%s/never.json", psc__dir);
    snprintf(jarg, sizeof(jarg), "--json=%s", json);
    snprintf(want, sizeof(want), "p2pscope: %s:3: bad bound '=>'; accepted >= or <=", bad);
    psc__expect_error((const char *[]){"bw", "-t", "gpu_to_gpu_write_ce", "-s", "64K", "--expect", bad, jarg, NULL},
                      psc__fake, 2, want);
    assert_int_equal(access(json, F_OK), -1);
    assert_int_equal(errno, ENOENT);
    psc__expect_error((const char *[]){"lat", "--expect", bad, NULL}, psc__no_driver, 2, want);
    psc__expect_error((const char *[]){"coll", "--expect", bad, NULL}, psc__fake_nccl, 2, want);
    /* --json=FILE naming the --expect file: refused before the run, the file left as it was */
    {
        char same[256], sarg[300], text[64];
        FILE *f;

        psc__file(same, sizeof(same), "same.expect", "bw gpu_to_gpu_write_ce *@64K >= 1 GB/s\n");
        snprintf(sarg, sizeof(sarg), "--json=%s", same);
        psc__expect_error((const char *[]){"bw", "-t", "gpu_to_gpu_write_ce", "-s", "64K", "--expect", same, sarg, NULL},
                          psc__fake, 2, "would replace the --expect file");
        f = fopen(same, "r");
        assert_non_null(f);
        assert_non_null(fgets(text, sizeof(text), f));
        fclose(f);
        assert_string_equal(text, "bw gpu_to_gpu_write_ce *@64K >= 1 GB/s\n");
    }
    psc__expect_error((const char *[]){"bw", "--expect", "/nonexistent/x.expect", NULL}, psc__fake, 2,
                      "/nonexistent/x.expect");
    psc__expect_error((const char *[]){"bw", "--expect", "", NULL}, psc__fake, 2, "empty --expect file name");
    psc__expect_error((const char *[]){"topo", "--expect", "auto", NULL}, psc__fake, 2,
                      "--expect goes with bw, report, lat, coll and check");
    psc__expect_error((const char *[]){"lat", "--expect", "auto", NULL}, psc__fake, 2,
                      "--expect auto sets bandwidth bounds (bw, report, check): accepted --expect FILE");
    psc__expect_error((const char *[]){"coll", "--expect", "auto", NULL}, psc__fake_nccl, 2,
                      "--expect auto sets bandwidth bounds (bw, report, check): accepted --expect FILE");
}

static void test_lat_and_coll(void **state)
{
    char pass[256], miss[256];
    psc__run_t r;

    (void)state;
    psc__file(pass, sizeof(pass), "lat.expect", "lat gpu_gpu_flag * <= 60000 ms\n"
                                                "coll all_reduce 1MiB <= 60000 ms\n"
                                                "coll all_reduce 1M >= 0.000001 GB/s busbw\n");
    psc__file(miss, sizeof(miss), "latmiss.expect", "lat gpu_gpu_flag gpu1->gpu0 <= 0.001 ns p99\n"
                                                    "coll all_reduce 1MiB >= 1000000 GB/s\n");
    r = psc__run((const char *[]){"lat", "-t", "gpu_gpu_flag", "-n", "3", "--expect", pass, NULL}, psc__fake);
    if (r.rc != 0)
        fprintf(stderr, "rc=%d\n%s%s", r.rc, r.out, r.err);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "expect: 3 rules, 2 checks, 0 misses (2 rules not applied"));
    psc__free(&r);
    r = psc__run((const char *[]){"lat", "-t", "gpu_gpu_flag", "-n", "3", "--expect", miss, NULL}, psc__fake);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.out, "expect: MISS gpu_gpu_flag gpu1->gpu0 p99 "));
    assert_null(strstr(r.out, "gpu0->gpu1 p99"));
    psc__free(&r);

    r = psc__run((const char *[]){"coll", "-b", "1M", "-e", "1M", "-n", "3", "-w", "1", "--impl", "nccl", "--expect",
                                  pass, NULL}, psc__fake_nccl);
    if (r.rc != 0)
        fprintf(stderr, "rc=%d\n%s%s", r.rc, r.out, r.err);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "expect: 3 rules, 4 checks, 0 misses"));
    psc__free(&r);
    r = psc__run((const char *[]){"coll", "-b", "1M", "-e", "1M", "-n", "3", "-w", "1", "--impl", "nccl", "--expect",
                                  miss, NULL}, psc__fake_nccl);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.out, "expect: MISS all_reduce 1MiB busbw (out of place, float sum) "));
    assert_non_null(strstr(r.out, "expect: MISS all_reduce 1MiB busbw (in place, float sum) "));
    psc__free(&r);
}

/* The shipped files apply to the run's names: their rules check figures, and none warns of a name it misses. */
static void test_shipped_files(void **state)
{
    static const char *const files[] = {SHARE_EXPECT "/h200-nvswitch.expect", SHARE_EXPECT "/h100-nvswitch.expect"};
    psc__run_t r;

    (void)state;
    for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
        /* at 32 MiB the host rules (measured at 32 MiB) apply, a case each; the in-GPU ones (512 MiB) do not; the
           fake's memcpy speed may or may not reach the PCIe bound */
        r = psc__run((const char *[]){"bw", "-t", "gpu_local_ce,host_to_gpu_ce", "-s", "32M", "-i", "1", "-n", "3",
                                      "--max-samples", "3", "--expect", files[k], NULL}, psc__fake);
        assert_true(r.rc == 0 || r.rc == 1);
        assert_non_null(strstr(r.out, " rules, 2 checks, "));
        assert_null(strstr(r.out, "MISS gpu_local_ce"));
        assert_null(strstr(r.out, "warning"));
        psc__free(&r);
        /* a sweep of small sizes no rule names: nothing checked, nothing missed, said so; exit 0 */
        r = psc__run((const char *[]){"bw", "-t", "gpu_to_gpu_write_ce,gpu_local_ce,host_to_gpu_ce", "-b", "4K", "-e",
                                      "16K", "-n", "3", "--expect", files[k], NULL}, psc__fake);
        assert_int_equal(r.rc, 0);
        assert_null(strstr(r.out, "MISS"));
        assert_non_null(strstr(r.out, "expect: warning: no figure checked"));
        assert_non_null(strstr(r.out, " rules, 0 checks, 0 misses"));
        psc__free(&r);
    }
    /* auto: the fake driver reports no link facts, so no rule, and the run passes */
    r = psc__run((const char *[]){"bw", "-t", "gpu_to_gpu_write_ce", "-s", "64K", "-n", "3", "--expect", "auto", NULL},
                 psc__fake);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "expect: 0 rules, 0 checks, 0 misses\n"));
    assert_non_null(strstr(r.err, "--expect auto: no NVLink or PCIe link facts here"));
    psc__free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bw_pass_and_miss),
        cmocka_unit_test(test_malformed_file),
        cmocka_unit_test(test_lat_and_coll),
        cmocka_unit_test(test_shipped_files),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
