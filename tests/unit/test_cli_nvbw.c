/*
 * `p2pscope nvbandwidth` as a user runs it, on the fake driver's two GPUs
 * (contexts mode, kernels on the CPU): nvbandwidth 0.8's text line by line
 * with the numbers masked (header, matrix shape and labels, N/A, SUM lines
 * that add up), its -j JSON (parses, nvbandwidth's keys, sorted), each
 * option's effect (-b MiB, -i, -t, -p, -l, -v, --perfFormatter), a GPU
 * test waived on one GPU, every refusal in one line with exit 2, and `bw -t`
 * with nvbandwidth's names.
 */
#define _GNU_SOURCE
#include <math.h>
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
#include "p2pscope/version.h"
#include "run_binary.h"

static const char *const two_gpus[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=contexts",
                                       "FAKE_CUDA_KERNELS=1", "FAKE_CUDA_COUNT=2",
                                       "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1", NULL};
static const char *const one_gpu[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=contexts",
                                      "FAKE_CUDA_KERNELS=1", "FAKE_CUDA_COUNT=1",
                                      "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1", NULL};
static const char *const no_driver[] = {"P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1", NULL};

/* A number printed with two decimals at q: 12.34. */
static int two_decimals(const char *q)
{
    const size_t d = strspn(q, "0123456789");

    return d > 0 && q[d] == '.' && q[d + 1] >= '0' && q[d + 1] <= '9' && q[d + 2] >= '0' && q[d + 2] <= '9' &&
           !(q[d + 3] >= '0' && q[d + 3] <= '9');
}

/* line with every two-decimal number (and the spaces before it) made " #"; their sum added to *sum. */
static void mask(const char *line, size_t n, char *out, size_t len, double *sum)
{
    size_t o = 0;

    for (const char *p = line; p < line + n && o + 3 < len;) {
        const char *q = p + strspn(p, " ");
        char *end;

        if (q < line + n && two_decimals(q)) {
            *sum += strtod(q, &end);
            out[o++] = ' ';
            out[o++] = '#';
            p = end;
            continue;
        }
        out[o++] = *p++;
    }
    out[o] = '\0';
}

/* text's lines, masked, against want one by one ("HOST": this machine's name); a matrix's cells add up to its
 * SUM line (each cell rounded to 0.01). */
static void expect_masked(const char *text, const char *const *want)
{
    char host[256] = "";
    double cells = 0;
    int i = 0;

    assert_int_equal(gethostname(host, sizeof(host) - 1), 0);
    for (const char *line = text, *nl; *line; line = nl + 1, i++) {
        char m[512];
        double v = 0;

        assert_non_null(nl = strchr(line, '\n'));
        if (!want[i])
            fail_msg("line %d: '%.*s' after the last line expected", i + 1, (int)(nl - line), line);
        mask(line, (size_t)(nl - line), m, sizeof(m), strncmp(line, "SUM ", 4) == 0 ? &v : &cells);
        if (strncmp(line, "SUM ", 4) == 0) {
            assert_true(v > cells - 0.011 * 8 && v < cells + 0.011 * 8);
            cells = 0;
        }
        if (strcmp(want[i], "HOST") == 0 ? strncmp(line, host, (size_t)(nl - line)) != 0 : strcmp(m, want[i]) != 0)
            fail_msg("line %d: '%.*s' (masked '%s'), expected '%s'", i + 1, (int)(nl - line), line, m, want[i]);
    }
    assert_null(want[i]);
}

static void test_text_layout(void **state)
{
    static const char *const want[] = {
        "nvbandwidth Version: v0.8",
        "Built from Git version: p2pscope " PSC_VERSION_STRING,
        "",
        "NOTE: You have chosen a buffer size that is smaller than the default buffer size. It is suggested to use "
        "the default buffer size (64MB) to achieve maximal peak bandwidth.",
        "CUDA Runtime Version: 13000",
        "CUDA Driver Version: 13000",
        "Driver Version: ",
        "",
        "HOST",
        "Device 0: Fake GPU 0 (00000000:10:00)",
        "Device 1: Fake GPU 1 (00000000:11:00)",
        "",
        "Running host_to_device_memcpy_ce.",
        "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
        "           0         1",
        " 0 # #",
        "",
        "SUM host_to_device_memcpy_ce #",
        "",
        "Running device_to_device_memcpy_read_ce.",
        "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)",
        "           0         1",
        " 0       N/A #",
        " 1 #       N/A",
        "",
        "SUM device_to_device_memcpy_read_ce #",
        "",
        "Running device_to_device_bidirectional_memcpy_write_ce.",
        "memcpy CE GPU(row) <-> GPU(column) Write1 bandwidth (GB/s)",
        "           0         1",
        " 0       N/A #",
        " 1 #       N/A",
        "",
        "SUM device_to_device_bidirectional_memcpy_write_ce_write1 #",
        "",
        "memcpy CE GPU(row) <-> GPU(column) Write2 bandwidth (GB/s)",
        "           0         1",
        " 0       N/A #",
        " 1 #       N/A",
        "",
        "SUM device_to_device_bidirectional_memcpy_write_ce_write2 #",
        "",
        "memcpy CE GPU(row) <-> GPU(column) Total bandwidth (GB/s)",
        "           0         1",
        " 0       N/A #",
        " 1 #       N/A",
        "",
        "SUM device_to_device_bidirectional_memcpy_write_ce_total #",
        "",
        "Running all_to_one_write_ce.",
        "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)",
        "           0         1",
        " 0 # #",
        "",
        "SUM all_to_one_write_ce #",
        "",
        "Waived: a latency test: p2pscope lat -t gpu_to_gpu_chase_sequential measures it nvbandwidth's way",
        "NOTE: The reported results may not reflect the full capabilities of the platform.",
        "Performance can vary with software drivers, hardware clocks, and system topology.",
        "",
        NULL,
    };
    psc__run_t r = psc__run((const char *[]){"nvbandwidth", "-b", "1", "-i", "2", "-t", "host_to_device_memcpy_ce",
                                             "device_to_device_memcpy_read_ce",
                                             "device_to_device_bidirectional_memcpy_write_ce", "all_to_one_write_ce",
                                             "device_to_device_latency_sm", NULL},
                            two_gpus);

    (void)state;
    if (r.rc != 0)
        fprintf(stderr, "%s", r.err);
    assert_int_equal(r.rc, 0);
    expect_masked(r.out, want);
    /* every matrix line is the row label and a 10-wide field per GPU */
    for (const char *p = strstr(r.out, "\n 0 "); p; p = strstr(p + 1, "\n 0 "))
        assert_int_equal(strcspn(p + 1, "\n"), 2 + 10 * 2);
    psc__free(&r);
}

static void test_json(void **state)
{
    psc__run_t r = psc__run((const char *[]){"nvbandwidth", "-j", "-b", "1", "-i", "2", "-t", "4", "32", NULL},
                            two_gpus);
    json_error_t e;
    json_t *doc, *nv, *t, *m;
    double sum = 0;

    (void)state;
    assert_int_equal(r.rc, 0);
    doc = json_loads(r.out, 0, &e);
    if (!doc)
        fail_msg("JSON: %s at line %d: %s", e.text, e.line, r.out);
    /* jsoncpp's order: the keys sorted */
    assert_true(strstr(r.out, "\"CUDA Runtime Version\"") < strstr(r.out, "\"GPU Device list\""));
    assert_true(strstr(r.out, "\"git_version\"") < strstr(r.out, "\"testcases\""));
    assert_true(strstr(r.out, "\"testcases\"") < strstr(r.out, "\"version\""));
    assert_non_null(nv = json_object_get(doc, "nvbandwidth"));
    assert_string_equal(json_string_value(json_object_get(nv, "version")), "v0.8");
    assert_true(json_is_integer(json_object_get(nv, "CUDA Runtime Version")));
    assert_true(json_is_string(json_object_get(nv, "Driver Version")));
    assert_non_null(json_object_get(nv, "warning")); /* -b below 512 */
    assert_int_equal(json_array_size(json_object_get(nv, "GPU Device list")), 2);
    assert_int_equal(json_array_size(json_object_get(nv, "testcases")), 2);
    t = json_array_get(json_object_get(nv, "testcases"), 0);
    assert_string_equal(json_string_value(json_object_get(t, "name")), "device_to_device_memcpy_read_ce");
    assert_string_equal(json_string_value(json_object_get(t, "status")), "Passed");
    assert_string_equal(json_string_value(json_object_get(t, "bandwidth_description")),
                        "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)");
    m = json_object_get(t, "bandwidth_matrix");
    assert_int_equal(json_array_size(m), 2);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            const char *c = json_string_value(json_array_get(json_array_get(m, (size_t)i), (size_t)j));

            assert_non_null(c);
            if (i == j)
                assert_string_equal(c, "N/A");
            else
                assert_true((sum += strtod(c, NULL)) > 0);
        }
    assert_true(fabs(json_real_value(json_object_get(t, "sum")) - sum) < 0.01 * sum);
    assert_null(json_object_get(t, "max")); /* without -v */
    t = json_array_get(json_object_get(nv, "testcases"), 1);
    assert_string_equal(json_string_value(json_object_get(t, "name")), "host_device_latency_sm");
    assert_string_equal(json_string_value(json_object_get(t, "status")), "Waived");
    json_decref(doc);
    psc__free(&r);
}

/* The "Running" lines of a run, joined with ','. */
static void running(const char *out, char *buf, size_t len)
{
    buf[0] = '\0';
    for (const char *p = strstr(out, "Running "); p; p = strstr(p + 1, "\nRunning ")) {
        p += p[0] == '\n';
        strncat(buf, p + 8, strcspn(p + 8, ".\n") < len - strlen(buf) - 2 ? strcspn(p + 8, ".\n") : 0);
        strcat(buf, ",");
    }
}

static void test_options(void **state)
{
    char buf[1024];
    psc__run_t r;

    (void)state;
    /* -b is MiB per copy, -i the samples: the progress lines say both; 512 and more: no note */
    r = psc__run((const char *[]){"nvbandwidth", "-b2", "-i", "3", "-t", "device_local_copy", NULL}, two_gpus);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.err, "(3 samples, 2097152 B)"));
    assert_null(strstr(r.err, "1048576 B"));
    assert_non_null(strstr(r.out, "NOTE: You have chosen a buffer size"));
    psc__free(&r);
    r = psc__run((const char *[]){"nvbandwidth", "--bufferSize=512", "--testSamples", "1", "--testcase=34",
                                  "--loopCount", "1", NULL}, two_gpus);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.err, "(1 samples, 536870912 B)"));
    assert_null(strstr(r.out, "NOTE: You have chosen"));
    psc__free(&r);
    /* -t: those tests, in the order given; -p: every test it begins, in nvbandwidth's order */
    r = psc__run((const char *[]){"nvbandwidth", "-b", "1", "-i", "1", "-t", "34", "0", "device_to_host_memcpy_sm",
                                  NULL}, two_gpus);
    running(r.out, buf, sizeof(buf));
    assert_string_equal(buf, "device_local_copy,host_to_device_memcpy_ce,device_to_host_memcpy_sm,");
    psc__free(&r);
    r = psc__run((const char *[]){"nvbandwidth", "-b", "1", "-i", "1", "-p", "device_to_device_memcpy", NULL},
                 two_gpus);
    running(r.out, buf, sizeof(buf));
    assert_string_equal(buf, "device_to_device_memcpy_read_ce,device_to_device_memcpy_write_ce,"
                             "device_to_device_memcpy_read_sm,device_to_device_memcpy_write_sm,");
    psc__free(&r);
    /* -v: MIN, MAX, AVG after SUM; --perfFormatter: PERF in place of SUM; grouped flags */
    r = psc__run((const char *[]){"nvbandwidth", "-vs", "-b", "1", "-i", "1", "-t", "0", "--perfFormatter", NULL},
                 two_gpus);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "\n&&&& PERF host_to_device_memcpy_ce "));
    assert_non_null(strstr(r.out, " +GB/s\nMIN host_to_device_memcpy_ce "));
    assert_non_null(strstr(r.out, "\nMAX host_to_device_memcpy_ce "));
    assert_non_null(strstr(r.out, "\nAVG host_to_device_memcpy_ce "));
    assert_null(strstr(r.out, "\nSUM "));
    psc__free(&r);
}

static void test_list_and_help(void **state)
{
    psc__run_t r = psc__run((const char *[]){"nvbandwidth", "-l", NULL}, no_driver);
    int n = 0;

    (void)state;
    assert_int_equal(r.rc, 0); /* the list needs no driver */
    assert_true(strncmp(r.out, "nvbandwidth Version: v0.8\n", 26) == 0);
    assert_non_null(strstr(r.out, "=\n0, host_to_device_memcpy_ce:\n\t"));
    for (const char *p = strstr(r.out, "=\n"); (p = strstr(p + 1, ":\n\t")); )
        n++;
    assert_int_equal(n, 35);
    assert_non_null(strstr(r.out, "\n12, all_to_one_write_ce:\n\tp2pscope bw test all_to_one_write_ce"));
    psc__free(&r);
    r = psc__run((const char *[]){"nvbandwidth", "--help", NULL}, no_driver);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "  -b, --bufferSize MIB"));
    assert_non_null(strstr(r.out, "  -t, --testcase NAME..."));
    psc__free(&r);
}

static void test_one_gpu_waives_peer_tests(void **state)
{
    psc__run_t r = psc__run((const char *[]){"nvbandwidth", "-b", "1", "-i", "1", "-t",
                                             "device_to_device_memcpy_read_ce", "device_local_copy", NULL},
                            one_gpu);

    (void)state;
    assert_int_equal(r.rc, 0);
    assert_null(strstr(r.out, "\nDevice 1: "));
    assert_non_null(strstr(r.out, "\nWaived: \nRunning device_local_copy.\nmemcpy local GPU(column) bandwidth (GB/s)\n"
                                  "           0\n 0 "));
    psc__free(&r);
}

static void test_refusals(void **state)
{
    (void)state;
    psc__expect_error((const char *[]){"nvbandwidth", "-t", "no_such_test", NULL}, no_driver, 2,
                      "no nvbandwidth test named 'no_such_test'");
    psc__expect_error((const char *[]){"nvbandwidth", "-t", "35", NULL}, no_driver, 2, "index 0 to 34");
    psc__expect_error((const char *[]){"nvbandwidth", "-b", "0", NULL}, no_driver, 2, "bad -b/--bufferSize '0'");
    psc__expect_error((const char *[]){"nvbandwidth", "-b", "1G", NULL}, no_driver, 2, "a whole number from 1");
    psc__expect_error((const char *[]){"nvbandwidth", "-b", NULL}, no_driver, 2, "--bufferSize needs a value");
    psc__expect_error((const char *[]){"nvbandwidth", "-b", "-1", NULL}, no_driver, 2, "--bufferSize needs a value");
    psc__expect_error((const char *[]){"nvbandwidth", "-i", "0", NULL}, no_driver, 2, "bad -i/--testSamples");
    psc__expect_error((const char *[]){"nvbandwidth", "-i", "65", NULL}, no_driver, 2, "accepted 1 to 64 samples");
    psc__expect_error((const char *[]){"nvbandwidth", "--loopCount", "0", NULL}, no_driver, 2, "bad --loopCount");
    psc__expect_error((const char *[]){"nvbandwidth", "-m", NULL}, no_driver, 2, "-m/--useMean is not supported");
    psc__expect_error((const char *[]){"nvbandwidth", "-t", "0", "-p", "host", NULL}, no_driver, 2,
                      "cannot be given together");
    psc__expect_error((const char *[]){"nvbandwidth", "-p", "nothing", NULL}, no_driver, 2, "no nvbandwidth test begins");
    psc__expect_error((const char *[]){"nvbandwidth", "-x", NULL}, no_driver, 2, "unknown option '-x'");
    psc__expect_error((const char *[]){"nvbandwidth", "--size", "4", NULL}, no_driver, 2, "unknown option '--size'");
    psc__expect_error((const char *[]){"nvbandwidth", "--json=x", NULL}, no_driver, 2, "--json takes no value");
    psc__expect_error((const char *[]){"nvbandwidth", "stray", NULL}, no_driver, 2, "unexpected word 'stray'");
    /* bw -t: nvbandwidth's latency tests are no bandwidth test */
    psc__expect_error((const char *[]){"bw", "-t", "device_to_device_latency_sm", NULL}, no_driver, 2,
                      "gpu_to_gpu_chase_sequential");
}

static void test_bw_takes_nvbandwidth_names(void **state)
{
    psc__run_t r = psc__run((const char *[]){"bw", "-t", "device_to_device_memcpy_write_ce,host_to_device_memcpy_sm",
                                             "-s", "1M", "-n", "1", "--max-samples", "1", NULL},
                            two_gpus);

    (void)state;
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "\ngpu_to_gpu_write_ce: "));
    assert_non_null(strstr(r.out, "\nhost_to_gpu_sm: "));
    assert_null(strstr(r.out, "\ngpu_to_gpu_read_ce: "));
    psc__free(&r);
}

/* The parser's meaning of each option: the measurement bw runs, and the output's switches. */
static void test_parse(void **state)
{
    psc_cli_opts_t o;

    (void)state;
    assert_int_equal(PARSE(&o, "nvbandwidth"), 0); /* nvbandwidth's defaults */
    assert_int_equal(o.cmd, PSC_CMD_NVBW);
    assert_true(o.measure.size == 512ull << 20);
    assert_int_equal(o.measure.samples, 3);
    assert_int_equal(o.measure.max_samples, 3);
    assert_int_equal(o.measure.iterations, 16);
    assert_int_equal(o.measure.verify, 1);
    assert_int_equal(o.nvbw.ntests, 0);
    assert_int_equal(o.nvbw.json | o.nvbw.verbose | o.nvbw.perf | o.nvbw.list, 0);
    assert_int_equal(PARSE(&o, "nvbandwidth", "-sdjv", "--loopCount=7", "-i5", "--bufferSize", "3", "--perfFormatter",
                           "-t", "device_local_copy", "2", "--list"),
                     0);
    assert_true(o.measure.size == 3ull << 20);
    assert_int_equal(o.measure.samples, 5);
    assert_int_equal(o.measure.max_samples, 5);
    assert_int_equal(o.measure.iterations, 7);
    assert_int_equal(o.measure.verify, 0); /* -s */
    assert_int_equal(o.nvbw.json + o.nvbw.verbose + o.nvbw.perf + o.nvbw.list, 4);
    assert_int_equal(o.nvbw.ntests, 2);
    assert_int_equal(o.nvbw.tests[0], 34);
    assert_int_equal(o.nvbw.tests[1], 2);
    assert_int_equal(PARSE(&o, "nvbandwidth", "-p", "all_to_one", "one_to_all_read"), 0);
    assert_int_equal(o.nvbw.ntests, 6); /* all_to_one_{write,read}_{ce,sm}, one_to_all_read_{ce,sm} */
    assert_int_equal(PARSE(&o, "nvbandwidth", "-h", "-t", "nothing"), 0); /* the help, nothing checked */
    assert_int_equal(o.help, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_text_layout),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_list_and_help),
        cmocka_unit_test(test_one_gpu_waives_peer_tests),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_bw_takes_nvbandwidth_names),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
