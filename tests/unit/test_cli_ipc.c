/*
 * `p2pscope ipc` on the command line without a GPU: its options land where
 * they should, every bad value is one line and exit 2, a machine without a
 * driver or GPU is exit 3, and a worker's argv[1] is never parsed as options.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli.h"
#include "cli_parse.h"
#include "run_binary.h"


static void test_parse_values(void **state)
{
    psc_cli_opts_t o;

    (void)state;
    assert_int_equal(PARSE(&o, "ipc"), 0);
    assert_int_equal(o.cmd, PSC_CMD_IPC);
    assert_int_equal(o.ndev, 0); /* every GPU (two workers on a machine with one) */
    assert_int_equal(o.ipc_methods, 0);
    assert_int_equal(o.round_trips, 0);
    assert_false(o.no_local);
    assert_float_equal(o.timeout_s, 0, 0);
    assert_int_equal(o.measure.verify, 1);
    assert_int_equal(o.hooks.corrupt_offset, -1);

    /* A GPU named twice: two workers on it. */
    assert_int_equal(PARSE(&o, "ipc", "-d", "0,0", "--method", "vmm_fd,legacy", "-s", "4MiB", "-n", "5",
                           "--round-trips", "1000", "--no-local", "--timeout", "2.5", "--json=x.json",
                           "--test-corrupt-offset", "4095"),
                     0);
    assert_int_equal(o.ndev, 2);
    assert_int_equal(o.devs[0], 0);
    assert_int_equal(o.devs[1], 0);
    assert_int_equal(o.ipc_methods, (1u << PSC_SHARE_LEGACY) | (1u << PSC_SHARE_VMM_FD));
    assert_int_equal(o.measure.size, 4ull << 20);
    assert_int_equal(o.measure.samples, 5);
    assert_int_equal(o.round_trips, 1000);
    assert_true(o.no_local);
    assert_float_equal(o.timeout_s, 2.5, 0);
    assert_string_equal(o.json_path, "x.json");
    assert_int_equal(o.hooks.corrupt_offset, 4095);
    assert_int_equal(PARSE(&o, "ipc", "--method", "vmm_fabric", "-d", "1,0,1", "--round-trips", "1000000"), 0);
    assert_int_equal(o.ipc_methods, 1u << PSC_SHARE_VMM_FABRIC);
    assert_int_equal(o.ndev, 3);
    assert_int_equal(o.devs[2], 1);
    assert_int_equal(o.round_trips, 1000000);
    /* The last --method wins. */
    assert_int_equal(PARSE(&o, "ipc", "--method", "legacy", "--method", "vmm_fd"), 0);
    assert_int_equal(o.ipc_methods, 1u << PSC_SHARE_VMM_FD);
    /* The default size bounds the corruption offset. */
    assert_int_equal(PARSE(&o, "ipc", "--test-corrupt-offset", "67108863"), 0);
}

static void test_parse_errors(void **state)
{
    psc_cli_opts_t o;

    (void)state;
#define BAD(want, ...)                                                        \
    do {                                                                      \
        err[0] = '\0';                                                        \
        assert_int_equal(PARSE(&o, __VA_ARGS__), PSC_EXIT_USAGE);             \
        if (!strstr(err, want))                                               \
            fprintf(stderr, "err: %s\n", err);                                \
        assert_non_null(strstr(err, want));                                   \
        assert_null(strchr(err, '\n'));                                       \
    } while (0)
    BAD("unknown method 'bogus' in --method: accepted legacy, vmm_fd, vmm_fabric", "ipc", "--method", "legacy,bogus");
    BAD("unknown method 'LEGACY'", "ipc", "--method", "LEGACY");
    BAD("empty method", "ipc", "--method", "");
    BAD("empty method", "ipc", "--method", "legacy,");
    BAD("bad --round-trips '0': accepted 1 to 1000000", "ipc", "--round-trips", "0");
    BAD("bad --round-trips '1000001'", "ipc", "--round-trips", "1000001");
    BAD("bad --round-trips '-1'", "ipc", "--round-trips", "-1");
    BAD("bad --timeout '0': accepted 0.001 to 3600 (seconds)", "ipc", "--timeout", "0");
    BAD("bad --timeout 'nan'", "ipc", "--timeout", "nan");
    BAD("bad --timeout '5s'", "ipc", "--timeout", "5s");
    BAD("bad --timeout '3601'", "ipc", "--timeout", "3601");
    BAD("bad --timeout 'inf'", "ipc", "--timeout", "inf");
    BAD("ipc needs two workers or more: accepted e.g. -d 0,1, or -d 1,1", "ipc", "-d", "1");
    BAD("bad GPU index 'x'", "ipc", "-d", "0,x");
    BAD("empty GPU index", "ipc", "-d", "0,,0");
    BAD("--no-verify goes with bw and report", "ipc", "--no-verify");
    BAD("ipc takes no --test", "ipc", "-t", "gpu_local_ce");
    BAD("ipc takes no --test", "ipc", "-b", "4K", "-e", "8K");
    BAD("ipc takes no --test", "ipc", "-l");
    BAD("ipc takes no --test", "ipc", "--host-node", "0");
    BAD("corruption offset 67108864 out of range", "ipc", "--test-corrupt-offset", "67108864");
    BAD("corruption offset 4096 out of range", "ipc", "-s", "4K", "--test-corrupt-offset", "4096");
    BAD("needs verification on", "ipc", "--test-corrupt-offset", "1", "--no-verify");
    BAD("go with ipc", "bw", "--method", "legacy");
    BAD("go with ipc", "lat", "--round-trips", "10");
    BAD("go with ipc", "copy", "--no-local");
    BAD("-T/--timeout goes with ipc and check --fleet", "--timeout", "5");
    /* Only ipc names a GPU twice. */
    BAD("named twice", "bw", "-d", "0,0");
    BAD("unknown command 'ipcx'", "ipcx");
    BAD("too many entries in --devices: accepted at most 64", "ipc", "-d",
        "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,"
        "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0");
#undef BAD
}

static const char *const no_driver[] = {"P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1", NULL};
static const char *const fake_nodev[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=nodevice", NULL};
static const char *const fake_zero[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_COUNT=0", NULL};
static const char *const fake_gpus[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=gpus",
                                        "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1", NULL};

static void test_binary_usage_errors(void **state)
{
    (void)state;
    /* Found before the driver is looked for. */
    psc__expect_error((const char *[]){"ipc", "--method", "nccl", NULL}, no_driver, 2,
                 "unknown method 'nccl' in --method: accepted legacy, vmm_fd, vmm_fabric");
    psc__expect_error((const char *[]){"ipc", "--round-trips", "0", NULL}, no_driver, 2, "bad --round-trips '0'");
    psc__expect_error((const char *[]){"ipc", "--timeout", "-1", NULL}, no_driver, 2, "bad --timeout '-1'");
    psc__expect_error((const char *[]){"ipc", "-d", "0", NULL}, no_driver, 2, "ipc needs two workers or more");
    psc__expect_error((const char *[]){"ipc", "--no-verify", NULL}, no_driver, 2, "--no-verify goes with bw and report");
    psc__expect_error((const char *[]){"bw", "--no-local", NULL}, no_driver, 2, "go with ipc");
    psc__expect_error((const char *[]){"ipc", "--json=/nonexistent-dir/x.json", NULL}, no_driver, 2,
                 "missing or not writable");
    /* A GPU that does not exist, named twice or not. */
    psc__expect_error((const char *[]){"ipc", "-d", "0,5", NULL}, fake_gpus, 2,
                 "GPU 5 does not exist: accepted 0 to 1 (this machine has 2 GPUs)");
    psc__expect_error((const char *[]){"ipc", "-d", "7,7", NULL}, fake_gpus, 2, "GPU 7 does not exist");
}

static void test_binary_no_gpu_exit_3(void **state)
{
    (void)state;
    psc__expect_error((const char *[]){"ipc", NULL}, no_driver, 3,
                 "no NVIDIA driver: /nonexistent/libcuda.so.1 could not be loaded");
    psc__expect_error((const char *[]){"ipc", "-d", "0,0", "--json", NULL}, no_driver, 3, "no NVIDIA driver");
    psc__expect_error((const char *[]){"ipc", NULL}, fake_nodev, 3, "no GPU");
    psc__expect_error((const char *[]){"ipc", "--method", "legacy", NULL}, fake_zero, 3, "no GPU");
}

static void test_binary_help(void **state)
{
    psc__run_t r;

    (void)state;
    r = psc__run((const char *[]){"--help", NULL}, no_driver);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "\n  ipc       between processes"));
    assert_non_null(strstr(r.out, "--method LIST"));
    assert_non_null(strstr(r.out, "--round-trips N"));
    assert_non_null(strstr(r.out, "--no-local"));
    assert_non_null(strstr(r.out, "--timeout SECONDS"));
    free(r.out);
    free(r.err);
}

/* A worker (argv[1] PSC_IPC_WORKER_ARG) goes straight to its own life: no option parsing, no usage line. */
static void test_binary_worker_not_parsed(void **state)
{
    psc__run_t r;

    (void)state;
    r = psc__run((const char *[]){PSC_IPC_WORKER_ARG, "--bogus", "extra", NULL}, no_driver);
    assert_true(r.rc != 0); /* not started by psc_ipc_run: nothing to connect to */
    assert_true(r.rc != PSC_EXIT_USAGE);
    assert_null(strstr(r.err, "unknown option"));
    assert_null(strstr(r.err, "unknown command"));
    assert_string_equal(r.out, "");
    free(r.out);
    free(r.err);
}

/* Nothing at all: stdout and stderr empty, the exit code. */
static void expect_silent(const char *const *args, const char *const *env, int rc)
{
    psc__run_t r = psc__run(args, env);

    assert_int_equal(r.rc, rc);
    assert_string_equal(r.err, "");
    assert_string_equal(r.out, "");
    psc__free(&r);
}

/*
 * Started by a launcher as one of several ranks (its environment says so): only ipc runs that way, and only
 * in a build with MPI. Rank 0 says why in one line; the others, deciding alike, stay quiet.
 */
static void test_binary_under_launcher(void **state)
{
    static const char *const ompi0[] = {"OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_RANK=0",
                                        "P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1", NULL};
    static const char *const ompi1[] = {"OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_RANK=1",
                                        "P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1", NULL};
    static const char *const pmi0[] = {"PMI_SIZE=3", "PMI_RANK=0", "P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1", NULL};
    /* A rank outside the size is no launcher's: the command runs alone (here: no driver, exit 3). */
    static const char *const bogus[] = {"OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_RANK=2",
                                        "P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1", NULL};
    psc__run_t r;

    (void)state;
    psc__expect_error((const char *[]){"bw", NULL}, ompi0, 2,
                      "started by Open MPI as one of 2 ranks, but this command runs in one process");
    psc__expect_error((const char *[]){"devices", NULL}, pmi0, 2, "an MPI launcher (PMI) as one of 3 ranks");
    expect_silent((const char *[]){"bw", NULL}, ompi1, 2);
    psc__expect_error((const char *[]){"ipc", "--round-trips", "0", NULL}, ompi0, 2, "bad --round-trips '0'");
    expect_silent((const char *[]){"ipc", "--round-trips", "0", NULL}, ompi1, 2);
    expect_silent((const char *[]){"--version", NULL}, ompi1, 0);
    psc__expect_error((const char *[]){"devices", NULL}, bogus, 3, "no NVIDIA driver");
#if !P2PSCOPE_HAVE_MPI
    psc__expect_error((const char *[]){"ipc", NULL}, ompi0, 2,
                      "built without MPI (no mpicc was found when it was built), so under Open MPI each of the 2 ranks "
                      "would run alone");
    expect_silent((const char *[]){"ipc", NULL}, ompi1, 2);
#endif
    r = psc__run((const char *[]){"--version", NULL}, no_driver);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, P2PSCOPE_HAVE_MPI ? "\nbuilt with MPI: " : "\nbuilt without MPI"));
    psc__free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_values),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_binary_usage_errors),
        cmocka_unit_test(test_binary_no_gpu_exit_3),
        cmocka_unit_test(test_binary_help),
        cmocka_unit_test(test_binary_worker_not_parsed),
        cmocka_unit_test(test_binary_under_launcher),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
