/* The option parser: values land where they should, and every bad input is a usage error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "cli.h"
#include "cli_parse.h"

static void test_defaults(void **state)
{
    psc_cli_opts_t o;
    char *argv[] = {"p2pscope", NULL};

    (void)state;
    assert_int_equal(psc_cli_parse(1, argv, &o, err, sizeof(err)), 0);
    assert_int_equal(o.cmd, PSC_CMD_REPORT);
    assert_int_equal(o.measure.size, 0); /* each test's own */
    assert_int_equal(o.sweep_min, 0);
    assert_int_equal(o.ntests, 0);
    assert_int_equal(o.ndev, 0);
    assert_false(o.json);
}

static void test_values(void **state)
{
    psc_cli_opts_t o;

    (void)state;
    assert_int_equal(PARSE(&o, "bw", "-t", "host_to_gpu_ce,gpu_local_ce", "--test", "host_to_gpu_ce", "-d", "1,0",
                           "-s", "64MiB", "-i", "3", "-n", "7", "-w", "0", "--gate-timeout", "250", "--json=x.json"),
                     0);
    assert_int_equal(o.cmd, PSC_CMD_BW);
    assert_int_equal(o.ntests, 2); /* the repeated name counts once */
    assert_string_equal(psc_bw_test_name(o.tests[0]), "host_to_gpu_ce");
    assert_string_equal(psc_bw_test_name(o.tests[1]), "gpu_local_ce");
    assert_int_equal(o.ndev, 2);
    assert_int_equal(o.devs[0], 1);
    assert_int_equal(o.devs[1], 0);
    assert_int_equal(o.measure.size, 64ull << 20);
    assert_int_equal(o.measure.iterations, 3);
    assert_int_equal(o.measure.samples, 7);
    assert_int_equal(o.measure.warmup, 0);
    assert_float_equal(o.measure.gate_timeout_ms, 250, 0);
    assert_int_equal(o.measure.max_samples, 16); /* -n 7 below the default cap keeps it */
    assert_true(o.json);
    assert_string_equal(o.json_path, "x.json");
    assert_true(psc_cli_tables(&o));

    assert_int_equal(PARSE(&o, "devices", "--json"), 0);
    assert_int_equal(o.cmd, PSC_CMD_DEVICES);
    assert_true(o.json);
    assert_null(o.json_path);
    assert_false(psc_cli_tables(&o));
    /* What each command does take: nvlink --watch the measurement's options, verify -e, lat -n, ipc -i. */
    assert_int_equal(PARSE(&o, "nvlink", "--watch", "-s", "1M", "-i", "4", "-w", "0", "--gate-timeout", "100"), 0);
    assert_int_equal(o.measure.size, 1u << 20);
    assert_int_equal(PARSE(&o, "verify", "-e", "1M"), 0);
    assert_int_equal(PARSE(&o, "lat", "-n", "5", "-d", "0,1"), 0);
    assert_int_equal(PARSE(&o, "ipc", "-i", "4", "-s", "1M", "--max-samples", "8"), 0);
    assert_int_equal(PARSE(&o, "topo", "--topology", "x.json", "--json", "--identify"), 0);
    /* --json FILE as --html FILE; not an option or a command word after it */
    assert_int_equal(PARSE(&o, "bw", "--json", "out.json", "-n", "4"), 0);
    assert_string_equal(o.json_path, "out.json");
    assert_int_equal(o.measure.samples, 4);
    assert_int_equal(PARSE(&o, "--json", "run.json"), 0);
    assert_int_equal(o.cmd, PSC_CMD_REPORT);
    assert_string_equal(o.json_path, "run.json");
    assert_int_equal(PARSE(&o, "bw", "--json", "-n", "4"), 0);
    assert_null(o.json_path);
    assert_int_equal(PARSE(&o, "bw", "--json", "report"), PSC_EXIT_USAGE);
    assert_non_null(strstr(err, "unexpected argument 'report'"));
    /* help [COMMAND], --help COMMAND: that command's help */
    assert_int_equal(PARSE(&o, "help", "topo"), 0);
    assert_true(o.help);
    assert_true(o.cmd_given);
    assert_int_equal(o.cmd, PSC_CMD_TOPO);
    assert_int_equal(PARSE(&o, "--help", "coll"), 0);
    assert_true(o.help);
    assert_int_equal(o.cmd, PSC_CMD_COLL);
    assert_int_equal(PARSE(&o, "-h", "compare"), 0);
    assert_int_equal(o.cmd, PSC_CMD_COMPARE);
    assert_int_equal(PARSE(&o, "help"), 0);
    assert_true(o.help);
    assert_false(o.cmd_given);
    assert_int_equal(PARSE(&o, "help", "bogus"), PSC_EXIT_USAGE);
    assert_non_null(strstr(err, "unknown command 'bogus'"));
    assert_int_equal(PARSE(&o, "help", "bw", "lat"), PSC_EXIT_USAGE);
    assert_int_equal(PARSE(&o, "bw", "-t", "*_sm", "-b", "4K", "-e", "64M", "-f", "4", "--host-node", "1",
                           "-n", "20", "--stable", "0.25"), 0);
    assert_true(o.ntests >= 15);
    for (int i = 0; i < o.ntests; i++)
        assert_int_equal(psc_bw_test_info(o.tests[i])->engine, PSC_ENGINE_SM);
    assert_int_equal(o.sweep_min, 4096);
    assert_int_equal(o.sweep_max, 64ull << 20);
    assert_int_equal(o.sweep_factor, 4);
    assert_int_equal(o.measure.host_node, 1);
    assert_int_equal(o.measure.samples, 20);
    assert_int_equal(o.measure.max_samples, 20); /* raised with -n */
    assert_float_equal(o.measure.stable_pct, 0.25, 1e-12);
    assert_int_equal(PARSE(&o, "bw", "-l"), 0);
    assert_true(o.list_tests);
    assert_int_equal(o.measure.verify, 1); /* checked by default */
    assert_int_equal(PARSE(&o, "bw", "--no-verify"), 0);
    assert_int_equal(o.measure.verify, 0);
    assert_int_equal(PARSE(&o, "bw", "-b", "1K", "-e", "8K"), 0);
    assert_int_equal(o.sweep_factor, 2); /* the default factor */
    assert_int_equal(PARSE(&o, "verify", "-t", "gpu_local_*", "-e", "2M", "--seconds", "30", "--test-fault", "drop:5:100:4096"), 0);
    assert_int_equal(o.cmd, PSC_CMD_VERIFY);
    assert_int_equal(o.ntests, 2); /* gpu_local_ce, gpu_local_sm: not the one-way tests, which do not copy */
    assert_string_equal(psc_bw_test_name(o.tests[0]), "gpu_local_ce");
    assert_string_equal(psc_bw_test_name(o.tests[1]), "gpu_local_sm");
    assert_int_equal(o.verify.max_size, 2ull << 20);
    assert_int_equal(o.seconds, 30);
    assert_int_equal(o.no_load, 0); /* background traffic by default */
    assert_int_equal(o.hooks.fault, PSC_FAULT_DROP);
    assert_int_equal(o.hooks.fault_offset, 5);
    assert_int_equal(o.hooks.fault_len, 100);
    assert_int_equal(o.hooks.fault_size, 4096);
    assert_int_equal(PARSE(&o, "verify", "--no-load"), 0);
    assert_int_equal(o.no_load, 1);
    assert_int_equal(PARSE(&o, "lat", "-t", "*_flag", "-n", "32"), 0);
    assert_int_equal(o.cmd, PSC_CMD_LAT);
    assert_int_equal(o.ntests, 2);
    assert_string_equal(psc_lat_test_info(o.tests[0])->name, "gpu_gpu_flag");
    assert_true(o.samples_given);
    assert_int_equal(PARSE(&o, "--devices", "all", "-h"), 0);
    assert_int_equal(o.ndev, 0);
    assert_true(o.help);
}

static void test_usage_errors(void **state)
{
    psc_cli_opts_t o;

    (void)state;
#define BAD(want, ...)                                                        \
    do {                                                                      \
        err[0] = '\0';                                                        \
        assert_int_equal(PARSE(&o, __VA_ARGS__), PSC_EXIT_USAGE);             \
        assert_non_null(strstr(err, want));                                   \
        assert_null(strchr(err, '\n'));                                       \
    } while (0)
    /* verify checks copies: a test that only reads or only writes, named, is refused; a glob keeps its copies */
    BAD("gpu_local_read_sm only reads: verify checks copies by copy engines and SM copy kernels; accepted a test "
        "that copies that way", "verify", "-t", "gpu_local_read_sm");
    BAD("gpu_local_write_sm only writes", "verify", "-t", "gpu_local_write_sm");
    BAD("gpu_local_*_sm only", "verify", "-t", "gpu_local_*_sm");
    BAD("gpu_to_gpu_read_tma copies by bulk copies (TMA)", "verify", "-t", "gpu_to_gpu_read_tma");
    BAD("*_tma copies by bulk copies (TMA)", "verify", "-t", "*_tma");
    BAD("unknown command 'frob'", "frob");
    BAD("unknown option '--bogus'", "--bogus");
    BAD("unknown option '-x'", "bw", "-x");
    BAD("bad size '0'", "-s", "0");
    BAD("bad size '12Q'", "bw", "--size", "12Q");
    BAD("accepted 1 to 64", "-n", "0");
    BAD("accepted 1 to 64", "-n", "65");
    BAD("accepted 1 to 100000", "-i", "-3");
    BAD("accepted 0 to 100", "-w", "101");
    BAD("bad GPU index 'x'", "-d", "0,x");
    BAD("named twice", "-d", "1,1");
    BAD("bad GPU index '64'", "-d", "64");
    BAD("no test named 'nope'", "-t", "nope");
    BAD("no test named 'zz*'", "-t", "zz*");
    BAD("needs -b MIN and -e MAX", "-b", "4K");
    BAD("needs -b MIN and -e MAX", "-b", "8K", "-e", "4K");
    BAD("exclude each other", "-s", "1M", "-b", "4K", "-e", "8K");
    BAD("bad --step-factor", "-b", "4K", "-e", "8K", "-f", "1");
    BAD("bad --host-node", "--host-node", "x");
    BAD("max samples 4 out of range", "-n", "5", "--max-samples", "4");
    BAD("bad --stable", "--stable", "200");
    BAD("bad --test-fault", "verify", "--test-fault", "scribble:3");
    BAD("bad --seconds", "verify", "--seconds", "0");
    BAD("--seconds goes with verify", "bw", "--seconds", "5");
    BAD("--no-load goes with verify and check", "lat", "--no-load");
    BAD("--no-verify goes with bw and report", "lat", "--no-verify");
    BAD("needs verification on", "bw", "-s", "4K", "--test-corrupt-offset", "1", "--no-verify");
    BAD("no test named 'nope'", "lat", "-t", "nope");
    BAD("needs a value", "bw", "--size");
    BAD("unexpected argument 'extra'", "bw", "extra");
    BAD("empty --json", "--json=");
    /* An option the command would ignore is refused, naming the commands it goes with (the help's lists). */
    BAD("--devices does not go with doctor: accepted with report, bw, lat, verify, copy, ipc", "doctor", "--topology",
        "x.json", "-d", "0");
    BAD("--size does not go with topo: accepted with report, bw, nvlink, ipc", "topo", "-s", "4K", "-n", "3");
    BAD("--warmup does not go with lat", "lat", "-w", "2");
    BAD("--host-node does not go with lat", "lat", "--host-node", "0");
    BAD("--min-bytes does not go with verify", "verify", "-b", "4K", "-e", "1M");
    BAD("--max-samples does not go with copy", "copy", "--max-samples", "8");
    BAD("bad --gate-timeout", "--gate-timeout", "0");
    BAD("corruption offset", "-s", "4K", "--test-corrupt-offset", "4096");
    /* Empty lists and items are errors, not "every test" or a skipped item. */
    BAD("empty test name", "bw", "-t", "");
    BAD("empty test name", "bw", "-t", ",");
    BAD("empty test name", "bw", "-t", "gpu_local_ce,");
    BAD("empty test name", "lat", "-t", ",gpu_to_gpu_chase");
    BAD("empty GPU index", "-d", "0,,1");
    BAD("empty GPU index", "-d", ",0");
    BAD("empty GPU index", "-d", "0,");
    BAD("empty GPU index", "-d", "");
    /* The offending option is named, whatever came before it and however it was written. */
    BAD("unknown option '-Z'", "bw", "-s", "4K", "-Zq");
    BAD("unknown option '-Z'", "bw", "-s", "4K", "-lZ");
    BAD("unknown option '-Z'", "bw", "-s4K", "-Z");
    BAD("unknown option '--bogus'", "bw", "-s", "4K", "--bogus=3");
    BAD("option -s needs a value", "bw", "-t", "gpu_local_ce", "-s");
    BAD("option --size needs a value", "bw", "-t", "gpu_local_ce", "--size");
    BAD("option --seconds needs a value", "verify", "-s", "4K", "--seconds");
    BAD("bad --min-bytes 'x'", "bw", "-b", "x", "-e", "4K");
    BAD("bad --max-bytes 'y'", "bw", "-b4K", "-ey");
    /* --json where there is no JSON to write is refused, not ignored. */
    BAD("--json does not go with nvlink --watch", "nvlink", "--watch", "--json");
#undef BAD
}

/* Values of any length are taken whole, never cut. */
static void test_long_values(void **state)
{
    char tests[2048] = "", devs[1024] = "0,";
    psc_cli_opts_t o;

    (void)state;
    while (strlen(tests) < 1200)
        strcat(tests, "host_to_gpu_ce,");
    strcat(tests, "gpu_local_ce");
    assert_int_equal(PARSE(&o, "bw", "-t", tests), 0);
    assert_int_equal(o.ntests, 2);
    assert_string_equal(psc_bw_test_name(o.tests[1]), "gpu_local_ce");
    memset(devs + 2, '0', 700);
    strcpy(devs + 702, "1");
    assert_int_equal(PARSE(&o, "-d", devs), 0);
    assert_int_equal(o.ndev, 2);
    assert_int_equal(o.devs[1], 1);
}

/* What was typed is quoted on one line, with control characters escaped (found by fuzz_cli_args). */
static void test_messages_quote_safely(void **state)
{
    psc_cli_opts_t o;

    (void)state;
    assert_int_equal(PARSE(&o, "bw", "-t", "g?\n\x1b[31mred"), 2);
    assert_null(strchr(err, '\n'));
    assert_null(strchr(err, '\x1b'));
    assert_non_null(strstr(err, "g?\\x0a\\x1b[31mred"));
    assert_int_equal(PARSE(&o, "--\x07" "bell"), 2);
    assert_non_null(strstr(err, "\\x07bell"));
}

/* Option combinations: which commands each option goes with, and the edges of each value. */
static void test_combinations(void **state)
{
    psc_cli_opts_t o;

    (void)state;
#define OK(...) assert_int_equal(PARSE(&o, __VA_ARGS__), 0)
#define BAD(want, ...)                                                        \
    do {                                                                      \
        err[0] = '\0';                                                        \
        assert_int_equal(PARSE(&o, __VA_ARGS__), PSC_EXIT_USAGE);             \
        assert_non_null(strstr(err, want));                                   \
    } while (0)
    /* A sweep of one size is a sweep. */
    OK("bw", "-b", "4K", "-e", "4K");
    assert_int_equal(o.sweep_min, 4096);
    assert_int_equal(o.sweep_max, 4096);
    assert_int_equal(o.sweep_factor, 2); /* the default factor */
    OK("bw", "-b", "1K", "-e", "1M", "-f", "1024");
    assert_int_equal(o.sweep_factor, 1024);
    BAD("bad --step-factor", "bw", "-b", "1K", "-e", "1M", "-f", "1025");
    /* verify -e alone is the largest copy, not a sweep. */
    OK("verify", "-e", "8M");
    assert_int_equal(o.verify.max_size, 8ull << 20);
    /* Numbers are whole: no trailing text, no sign. */
    BAD("bad --samples", "-n", "3x");
    BAD("bad --iterations", "-i", "10k");
    BAD("bad --warmup", "-w", "1.5");
    BAD("bad --gate-timeout", "--gate-timeout", "+5");
    BAD("bad --seconds", "verify", "--seconds", "5s");
    OK("-n", "64", "-i", "100000", "-w", "100", "--gate-timeout", "600000");
    assert_int_equal(o.measure.samples, 64);
    assert_int_equal(o.measure.max_samples, 64); /* -n raises the default cap with it */
    BAD("accepted 1 to 100000", "-i", "100001");
    BAD("bad --gate-timeout", "--gate-timeout", "600001");
    OK("--max-samples", "3", "-n", "3"); /* the cap may equal the minimum, in either order */
    OK("--stable", "0");
    OK("--stable", "100");
    BAD("bad --stable", "--stable", "nan");
    BAD("bad --stable", "--stable", "-0.5");
    OK("--host-node", "0");
    assert_int_equal(o.measure.host_node, 0);
    /* --no-verify: bw and report (the default command) only. */
    OK("--no-verify");
    assert_int_equal(o.measure.verify, 0);
    OK("report", "--no-verify");
    OK("bw", "--no-verify");
    BAD("--no-verify goes with bw and report", "verify", "--no-verify");
    BAD("--no-verify goes with bw and report", "devices", "--no-verify");
    /* --topology: topo, doctor, nvlink, and not with a live watch. */
    OK("topo", "--topology", "x.xml");
    OK("doctor", "--topology", "x.xml");
    OK("nvlink", "--topology", "x.xml");
    BAD("--topology goes with", "bw", "--topology", "x.xml");
    BAD("--topology goes with", "nvlink", "--watch", "--topology", "x.xml");
    /* --save: topo on the live machine only. */
    OK("topo", "--save", "out.json");
    BAD("--save goes with topo", "topo", "--save", "out.json", "--topology", "x.xml");
    BAD("--save goes with topo", "doctor", "--save", "out.json");
    /* --watch: nvlink only. */
    OK("nvlink", "--watch");
    BAD("--watch goes with nvlink", "bw", "--watch");
    /* verify's own options. */
    OK("verify", "--seconds", "86400", "--no-load");
    BAD("bad --seconds", "verify", "--seconds", "86401");
    BAD("--test-fault goes with verify and check", "report", "--test-fault", "flip:0");
    /* check's own: --baseline; --no-load and --test-fault as verify's. */
    OK("check", "--baseline", "old.json", "--no-load", "--test-fault", "flip:0", "-s", "1M", "-d", "0");
    BAD("--baseline goes with check", "report", "--baseline", "old.json");
    BAD("does not go with check", "check", "-n", "3");
#undef OK
#undef BAD
}

/* copy: its sweep, GPUs, samples and files land in the options; what it does not take is refused. */
static void test_copy(void **state)
{
    psc_cli_opts_t o;

    (void)state;
    assert_int_equal(PARSE(&o, "copy"), 0);
    assert_int_equal(o.cmd, PSC_CMD_COPY);
    assert_null(o.calibrate);
    assert_null(o.calibration);
    assert_false(o.no_host);
    assert_int_equal(o.sweep_min, 0); /* the library's defaults: 1 B to 1 GiB */
    assert_int_equal(PARSE(&o, "copy", "-b", "4K", "-e", "1M", "-f", "4", "-n", "9", "-d", "1,0", "--no-host",
                           "--calibration", "cal.json", "--json=out.json"),
                     0);
    assert_int_equal(o.sweep_min, 4096);
    assert_int_equal(o.sweep_max, 1u << 20);
    assert_int_equal(o.sweep_factor, 4);
    assert_int_equal(o.measure.samples, 9);
    assert_true(o.samples_given);
    assert_int_equal(o.ndev, 2);
    assert_int_equal(o.devs[0], 1);
    assert_true(o.no_host);
    assert_string_equal(o.calibration, "cal.json");
    assert_null(o.calibrate);
    assert_string_equal(o.json_path, "out.json");
    assert_int_equal(PARSE(&o, "copy", "--calibrate", "here.json", "-b", "1", "-e", "1G"), 0);
    assert_string_equal(o.calibrate, "here.json");
    assert_int_equal(o.sweep_factor, 2);
    assert_int_equal(PARSE(&o, "copy", "--calibrate=x.json", "--json"), 0);
    assert_string_equal(o.calibrate, "x.json");
    assert_false(psc_cli_tables(&o));

#define BAD(want, ...)                                                        \
    do {                                                                      \
        err[0] = '\0';                                                        \
        assert_int_equal(PARSE(&o, __VA_ARGS__), PSC_EXIT_USAGE);             \
        assert_non_null(strstr(err, want));                                   \
        assert_null(strchr(err, '\n'));                                       \
    } while (0)
    BAD("--calibrate, --calibration and --no-host go with copy", "bw", "--calibrate", "x.json");
    BAD("--calibrate, --calibration and --no-host go with copy", "--calibration", "x.json");
    BAD("--calibrate, --calibration and --no-host go with copy", "lat", "--no-host");
    BAD("--calibrate and --calibration exclude each other", "copy", "--calibrate", "a.json", "--calibration", "b.json");
    BAD("empty --calibrate file name", "copy", "--calibrate=");
    BAD("empty --calibration file name", "copy", "--calibration", "");
    BAD("option --calibrate needs a value", "copy", "--calibrate");
    BAD("copy takes no --test, --size or --list", "copy", "-s", "4K");
    BAD("copy takes no --test, --size or --list", "copy", "-t", "gpu_local_ce");
    BAD("copy takes no --test, --size or --list", "copy", "-l");
    BAD("bad --step-factor 17 for copy: accepted 2 to 16", "copy", "-b", "1", "-e", "1M", "-f", "17");
    BAD("needs -b MIN and -e MAX", "copy", "-e", "1M");
    BAD("--no-verify goes with bw and report", "copy", "--no-verify");
    BAD("accepted 1 to 64", "copy", "-n", "0");
#undef BAD
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_long_values),
        cmocka_unit_test(test_messages_quote_safely),
        cmocka_unit_test(test_combinations),
        cmocka_unit_test(test_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
