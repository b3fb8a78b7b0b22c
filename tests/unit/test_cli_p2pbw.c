/*
 * `p2pscope p2pbw` as a user runs it, on the fake driver's GPUs (contexts
 * mode, kernels on the CPU): p2pBandwidthLatencyTest's text line by line
 * with the numbers masked (two GPUs, one GPU), --p2p_read's extra matrices,
 * --sm_copy's tests and unmeasured latency, --numElems's copy size, --json
 * on stdout and into a file with the same figures, bw's both-ways staged test
 * (ungated), the help, and every refusal in one line with exit 2 (exit 3
 * without a driver).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "cli_parse.h"
#include "run_binary.h"

static const char *const two_gpus[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=contexts",
                                       "FAKE_CUDA_KERNELS=1", "FAKE_CUDA_COUNT=2",
                                       "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1", NULL};
static const char *const one_gpu[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=contexts",
                                      "FAKE_CUDA_KERNELS=1", "FAKE_CUDA_COUNT=1",
                                      "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1", NULL};
static const char *const no_driver[] = {"P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1", NULL};

/* line with each "%6.02f" field (a number with two decimals, right-aligned 6 wide) made "     #". */
static void mask(const char *line, size_t n, char *out, size_t len)
{
    size_t o = 0;

    for (const char *p = line; p < line + n && o + 8 < len;) {
        const size_t d = strspn(p, "0123456789");

        if (d && p[d] == '.' && strspn(p + d + 1, "0123456789") == 2 && (p == line || p[-1] == ' ')) {
            size_t pad = d + 3 < 6 ? 6 - (d + 3) : 0;

            while (pad && o && out[o - 1] == ' ') /* the field's spaces, then the number */
                o--, pad--;
            memcpy(out + o, "     #", 6);
            o += 6;
            p += d + 3;
            continue;
        }
        out[o++] = *p++;
    }
    out[o] = '\0';
}

/* text's lines, masked, against want one by one; each masked number was printed 6 wide. */
static void expect_masked(const char *text, const char *const *want)
{
    int i = 0;

    for (const char *line = text, *nl; *line; line = nl + 1, i++) {
        char m[512];

        assert_non_null(nl = strchr(line, '\n'));
        if (!want[i])
            fail_msg("line %d: '%.*s' after the last line expected", i + 1, (int)(nl - line), line);
        mask(line, (size_t)(nl - line), m, sizeof(m));
        if (strcmp(m, want[i]) != 0)
            fail_msg("line %d: '%.*s' (masked '%s'), expected '%s'", i + 1, (int)(nl - line), line, m, want[i]);
    }
    if (want[i])
        fail_msg("line %d: '%s' expected, the text ended", i + 1, want[i]);
}

#define BW_2(title) title, "   D\\D     0      1 ", "     0      #      # ", "     1      #      # "
#define LAT_2(title, a, b)                                                                                          \
    title, "   GPU     0      1 ", "     0      # " a, "     1 " b "      # ", "", "   CPU     0      1 ",             \
        "     0      # " a, "     1 " b "      # "

static void test_text_layout(void **state)
{
    static const char *const want[] = {
        "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]",
        "Device: 0, Fake GPU 0, pciBusID: 10, pciDeviceID: 0, pciDomainID:0",
        "Device: 1, Fake GPU 1, pciBusID: 11, pciDeviceID: 0, pciDomainID:0",
        "Device=0 CAN Access Peer Device=1",
        "Device=1 CAN Access Peer Device=0",
        "",
        "***NOTE: In case a device doesn't have P2P access to other one, it falls back to normal memcopy procedure.",
        "So you can see lesser Bandwidth (GB/s) and unstable Latency (us) in those cases.",
        "",
        "P2P Connectivity Matrix",
        "     D\\D     0     1",
        "     0\t     1     1",
        "     1\t     1     1",
        BW_2("Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)"),
        BW_2("Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)"),
        BW_2("Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)"),
        BW_2("Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)"),
        LAT_2("P2P=Disabled Latency Matrix (us)", "     # ", "     #"),
        LAT_2("P2P=Enabled Latency (P2P Writes) Matrix (us)", "     # ", "     #"),
        "",
        "NOTE: The CUDA Samples are not meant for performance measurements. Results may vary when GPU Boost is "
        "enabled.",
        NULL,
    };
    psc__run_t r = psc__run((const char *[]){"p2pbw", "--numElems=4096", NULL}, two_gpus);

    (void)state;
    assert_int_equal(r.rc, 0);
    expect_masked(r.out, want);
    assert_null(strstr(r.out, "N/A"));
    psc__free(&r);
}

static void test_one_gpu(void **state)
{
    static const char *const want[] = {
        "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]",
        "Device: 0, Fake GPU 0, pciBusID: 10, pciDeviceID: 0, pciDomainID:0",
        "",
        "***NOTE: In case a device doesn't have P2P access to other one, it falls back to normal memcopy procedure.",
        "So you can see lesser Bandwidth (GB/s) and unstable Latency (us) in those cases.",
        "",
        "P2P Connectivity Matrix",
        "     D\\D     0",
        "     0\t     1",
        "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)", "   D\\D     0 ", "     0      # ",
        "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)", "   D\\D     0 ", "     0      # ",
        "Unidirectional P2P=Enabled Bandwidth (P2P Reads) Matrix (GB/s)", "   D\\D     0 ", "     0      # ",
        "Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)", "   D\\D     0 ", "     0      # ",
        "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)", "   D\\D     0 ", "     0      # ",
        "P2P=Disabled Latency Matrix (us)", "   GPU     0 ", "     0      # ", "", "   CPU     0 ", "     0      # ",
        "P2P=Enabled Latency (P2P Writes) Matrix (us)", "   GPU     0 ", "     0      # ", "", "   CPU     0 ",
        "     0      # ",
        "P2P=Enabled Latency (P2P Reads) Matrix (us)", "   GPU     0 ", "     0      # ", "", "   CPU     0 ",
        "     0      # ",
        "",
        "NOTE: The CUDA Samples are not meant for performance measurements. Results may vary when GPU Boost is "
        "enabled.",
        NULL,
    };
    psc__run_t r = psc__run((const char *[]){"p2pbw", "--numElems=4096", "--p2p_read", NULL}, one_gpu);

    (void)state;
    assert_int_equal(r.rc, 0);
    expect_masked(r.out, want);
    assert_null(strstr(r.err, "gpu_to_gpu")); /* no test of two GPUs ran */
    psc__free(&r);
}

/* --p2p_read adds the read matrices, in the sample's places; the read latency by copies the reading GPU issues. */
static void test_p2p_read(void **state)
{
    psc__run_t r = psc__run((const char *[]){"p2pbw", "-numElems=4096", "--p2p_read", NULL}, two_gpus);
    const char *p;

    (void)state;
    assert_int_equal(r.rc, 0);
    assert_non_null(p = strstr(r.out, "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n"));
    assert_non_null(p = strstr(p, "\nUnidirectional P2P=Enabled Bandwidth (P2P Reads) Matrix (GB/s)\n   D\\D"));
    assert_non_null(p = strstr(p, "\nBidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n"));
    assert_non_null(p = strstr(p, "\nP2P=Enabled Latency (P2P Writes) Matrix (us)\n"));
    assert_non_null(p = strstr(p, "\nP2P=Enabled Latency (P2P Reads) Matrix (us)\n   GPU     0      1 \n"));
    assert_null(strstr(r.out, "N/A"));
    assert_non_null(strstr(r.err, "gpu_to_gpu_read_ce gpu0 -> gpu1"));
    psc__free(&r);
}

/* --sm_copy: the P2P-enabled bandwidth and latency by SM kernels; --numElems: 4 bytes an int. */
static void test_sm_copy_and_size(void **state)
{
    psc__run_t r = psc__run((const char *[]){"p2pbw", "--sm_copy", "--numElems=1000", NULL}, two_gpus);

    (void)state;
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.err, "gpu_to_gpu_write_sm gpu0 -> gpu1"));
    assert_non_null(strstr(r.err, "gpu_to_gpu_bidir_write_sm gpu0 <-> gpu1"));
    assert_non_null(strstr(r.err, "gpu_to_gpu_p2p_off_ce gpu0 -> gpu1")); /* P2P off: always the copy engine */
    assert_null(strstr(r.err, "gpu_to_gpu_write_ce"));
    assert_non_null(strstr(r.err, ", 4000 B)"));
    assert_null(strstr(r.err, ", 16384 B)"));
    assert_non_null(strstr(r.out, "P2P=Enabled Latency (P2P Writes) Matrix (us)\n   GPU     0      1 \n"));
    assert_null(strstr(r.out, "N/A"));
    psc__free(&r);
}

/* bw's new test, both directions staged: each source issues, timed without gates (the copies block the host). */
static void test_bw_bidir_p2p_off(void **state)
{
    psc__run_t r = psc__run((const char *[]){"bw", "-t", "gpu_to_gpu_bidir_p2p_off_ce", "-s", "4K", NULL}, two_gpus);
    const char *p;

    (void)state;
    assert_int_equal(r.rc, 0);
    assert_non_null(p = strstr(r.out, "\ngpu_to_gpu_bidir_p2p_off_ce: GPU <-> GPU both directions at once with peer "
                                      "access off"));
    assert_non_null(p = strstr(p, "; timed without gates (the copies block the host)]\n"));
    assert_non_null(p = strstr(p, "\ngpu0 <-> gpu1  gpu0 -> gpu1 (gpu0) "));
    assert_non_null(p = strstr(p, "\n               gpu1 -> gpu0 (gpu1) "));
    assert_non_null(strstr(p, "\n               total "));
    psc__free(&r);
}

static void test_json(void **state)
{
    char path[] = "/tmp/psc-p2pbw-XXXXXX";
    const int fd = mkstemp(path);
    char opt[64];
    psc__run_t r;
    json_error_t je;
    json_t *doc, *p, *v;

    (void)state;
    assert_true(fd >= 0);
    close(fd);
    snprintf(opt, sizeof(opt), "--json=%s", path);
    r = psc__run((const char *[]){"p2pbw", "--numElems=4096", opt, NULL}, two_gpus);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\n")); /* the text stays */
    assert_non_null(doc = json_load_file(path, 0, &je));
    unlink(path);
    assert_string_equal(json_string_value(json_object_get(doc, "command")), "p2pbw");
    p = json_object_get(doc, "p2pbw");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "options"), "bytes_per_copy")), 16384);
    assert_int_equal(json_object_size(json_object_get(p, "matrices")), 8);
    assert_int_equal(json_array_size(json_object_get(p, "failed")), 0);
    v = json_object_get(json_object_get(json_object_get(p, "matrices"), "bidirectional_p2p_enabled_bandwidth_gbs"),
                        "values");
    assert_int_equal(json_array_size(v), 2);
    assert_true(json_real_value(json_array_get(json_array_get(v, 0), 1)) > 0);
    /* both ways: one case per pair, on both sides */
    assert_true(json_real_value(json_array_get(json_array_get(v, 0), 1)) ==
                json_real_value(json_array_get(json_array_get(v, 1), 0)));
    json_decref(doc);
    psc__free(&r);
    r = psc__run((const char *[]){"p2pbw", "--numElems=4096", "--json", "--p2p_read", NULL}, two_gpus);
    assert_int_equal(r.rc, 0);
    assert_non_null(doc = json_loads(r.out, 0, &je)); /* stdout: the document alone */
    assert_int_equal(json_object_size(json_object_get(json_object_get(doc, "p2pbw"), "matrices")), 11);
    json_decref(doc);
    psc__free(&r);
}

static void test_help_and_refusals(void **state)
{
    psc__run_t r = psc__run((const char *[]){"p2pbw", "--help", NULL}, no_driver);

    (void)state;
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "usage: p2pscope p2pbw [OPTIONS]\n"));
    assert_non_null(strstr(r.out, "\n  --numElems=N "));
    psc__free(&r);
    psc__expect_error((const char *[]){"p2pbw", "--numElems", NULL}, no_driver, 2, "needs its value after '='");
    psc__expect_error((const char *[]){"p2pbw", "--numElems=0", NULL}, no_driver, 2, "bad --numElems '0'");
    psc__expect_error((const char *[]){"p2pbw", "--numElems=536870913", NULL}, no_driver, 2,
                      "a whole number from 1 to 536870912");
    psc__expect_error((const char *[]){"p2pbw", "--numElems=4K", NULL}, no_driver, 2, "bad --numElems '4K'");
    psc__expect_error((const char *[]){"p2pbw", "--devices", "0", NULL}, no_driver, 2, "unknown option '--devices'");
    psc__expect_error((const char *[]){"p2pbw", "-t", NULL}, no_driver, 2, "accepted --p2p_read, --sm_copy");
    psc__expect_error((const char *[]){"p2pbw", "--json=", NULL}, no_driver, 2, "empty --json file name");
    psc__expect_error((const char *[]){"p2pbw", "stray", NULL}, no_driver, 2, "unexpected word 'stray'");
    psc__expect_error((const char *[]){"p2pbw", NULL}, no_driver, 3, "");
}

/* The parser's meaning of each option. */
static void test_parse(void **state)
{
    psc_cli_opts_t o;

    (void)state;
    assert_int_equal(PARSE(&o, "p2pbw"), 0); /* the sample's defaults */
    assert_int_equal(o.cmd, PSC_CMD_P2PBW);
    assert_true(o.measure.size == 160000000ull);
    assert_int_equal(o.measure.iterations, 5);
    assert_int_equal(o.p2pbw.p2p_read + o.p2pbw.sm_copy + o.json, 0);
    assert_int_equal(PARSE(&o, "p2pbw", "-p2p_read", "--sm_copy", "--numElems=7", "--json=x.json"), 0);
    assert_int_equal(o.p2pbw.p2p_read + o.p2pbw.sm_copy + o.json, 3);
    assert_string_equal(o.json_path, "x.json");
    assert_true(o.measure.size == 28);
    assert_int_equal(PARSE(&o, "p2pbw", "-h"), 0);
    assert_int_equal(o.help, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_text_layout),
        cmocka_unit_test(test_one_gpu),
        cmocka_unit_test(test_p2p_read),
        cmocka_unit_test(test_sm_copy_and_size),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_bw_bidir_p2p_off),
        cmocka_unit_test(test_help_and_refusals),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
