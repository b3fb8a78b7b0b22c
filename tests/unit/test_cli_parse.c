/* The option parser: values land where they should, and every bad input is a usage error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "cli.h"

#define ARGV(...) ((char *[]){"p2pscope", __VA_ARGS__, NULL})
#define ARGC(...) ((int)(sizeof((char *[]){"p2pscope", __VA_ARGS__}) / sizeof(char *)))
#define PARSE(o, ...) psc_cli_parse(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), (o), err, sizeof(err))

static char err[512];

static void test_defaults(void **state)
{
    psc_cli_opts_t o;
    char *argv[] = {"p2pscope", NULL};

    (void)state;
    assert_int_equal(psc_cli_parse(1, argv, &o, err, sizeof(err)), 0);
    assert_int_equal(o.cmd, PSC_CMD_REPORT);
    assert_int_equal(o.measure.size, 512ull << 20);
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
    assert_int_equal(o.tests[0], PSC_BW_HOST_TO_GPU_CE);
    assert_int_equal(o.tests[1], PSC_BW_GPU_LOCAL_CE);
    assert_int_equal(o.ndev, 2);
    assert_int_equal(o.devs[0], 1);
    assert_int_equal(o.devs[1], 0);
    assert_int_equal(o.measure.size, 64ull << 20);
    assert_int_equal(o.measure.iterations, 3);
    assert_int_equal(o.measure.samples, 7);
    assert_int_equal(o.measure.warmup, 0);
    assert_float_equal(o.measure.gate_timeout_ms, 250, 0);
    assert_true(o.json);
    assert_string_equal(o.json_path, "x.json");
    assert_true(psc_cli_tables(&o));

    assert_int_equal(PARSE(&o, "devices", "--json"), 0);
    assert_int_equal(o.cmd, PSC_CMD_DEVICES);
    assert_true(o.json);
    assert_null(o.json_path);
    assert_false(psc_cli_tables(&o));
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
    BAD("unknown test 'nope'", "-t", "nope");
    BAD("needs a value", "bw", "--size");
    BAD("unexpected argument 'extra'", "bw", "extra");
    BAD("empty --json", "--json=");
    BAD("bad --gate-timeout", "--gate-timeout", "0");
    BAD("corruption offset", "-s", "4K", "--test-corrupt-offset", "4096");
#undef BAD
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_usage_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
