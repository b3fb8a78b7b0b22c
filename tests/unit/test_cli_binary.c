/*
 * The real p2pscope binary: help, usage errors, and the machines where
 * nothing can be measured (no driver, no GPU, a driver lacking a symbol),
 * plus two fake GPUs whose contexts cannot be made. Needs no GPU.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "null_device.h"
#include "run_binary.h"
#include "p2pscope/bench.h"

static const char *const psc__no_driver[] = {"P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1", NULL};
static const char *const psc__fake_nodev[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=nodevice", NULL};
static const char *const psc__fake_missing[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=missing", NULL};
static const char *const psc__fake_gpus[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=gpus",
                                             "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1", NULL};

static void test_help_version_list(void **state)
{
    psc__run_t r;

    (void)state;
    r = psc__run((const char *[]){"--help", NULL}, psc__no_driver);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "usage: p2pscope"));
    assert_non_null(strstr(r.out, "Exit codes"));
    psc__free(&r);
    r = psc__run((const char *[]){"--version", NULL}, psc__no_driver);
    assert_int_equal(r.rc, 0);
    assert_true(strncmp(r.out, "p2pscope " PSC_VERSION_STRING "\n", strlen("p2pscope " PSC_VERSION_STRING "\n")) == 0);
    assert_int_equal(psc__lines(r.out), 2); /* the version, then whether this build has MPI */
    psc__free(&r);
    r = psc__run((const char *[]){"list", NULL}, psc__no_driver);
    assert_int_equal(r.rc, 0);
    assert_int_equal(psc__lines(r.out), psc_bw_test_count());
    psc__free(&r);
    r = psc__run((const char *[]){"bw", "-l", NULL}, psc__no_driver);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "gpu_to_gpu_p2p_off_ce"));
    psc__free(&r);
    r = psc__run((const char *[]){"lat", "-l", NULL}, psc__no_driver);
    assert_int_equal(r.rc, 0);
    assert_int_equal(psc__lines(r.out), psc_lat_test_count());
    assert_non_null(strstr(r.out, "gpu_to_gpu_chase"));
    psc__free(&r);
}

/* p2pscope COMMAND --help: that command's purpose, its own options only, and an example that parses. */
static void test_help_per_command(void **state)
{
    static const struct { const char *cmd, *has, *lacks; } cases[] = {
        {"report", "--no-verify", "--method"},   {"devices", "--json", "--samples"}, {"bw", "--test", "--round-trips"},
        {"lat", "--samples", "--calibrate"},     {"verify", "--seconds", "--method"}, {"list", "--json", "--identify"},
        {"topo", "--save", "--samples"},         {"nvlink", "--watch", "--seconds"}, {"doctor", "--topology", "--seconds"},
        {"copy", "--calibrate", "--method"},     {"ipc", "--round-trips", "--calibrate"},
        {"check", "--html FILE", "needs cairo"}, /* its page: a table */
    };
    psc__run_t r;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char want[64], *ex, *args[16];
        int n = 0;

        r = psc__run((const char *[]){cases[i].cmd, "--help", NULL}, psc__no_driver);
        assert_int_equal(r.rc, 0);
        snprintf(want, sizeof(want), "usage: p2pscope %s [OPTIONS]", cases[i].cmd);
        if (!strstr(r.out, want) || !strstr(r.out, cases[i].has) || strstr(r.out, cases[i].lacks) ||
            strstr(r.out, "Commands:"))
            fail_msg("%s --help: want \"%s\" and %s, not %s nor the command list:\n%s", cases[i].cmd, want,
                     cases[i].has, cases[i].lacks, r.out);
        assert_non_null(ex = strstr(r.out, "Example:\n  p2pscope "));
        ex += strlen("Example:\n  p2pscope ");
        ex[strcspn(ex, "\n")] = '\0';
        for (char *t = strtok(ex, " "); t && n < 14; t = strtok(NULL, " ")) { /* the example, quotes dropped */
            if (*t == '\'')
                t++;
            t[strcspn(t, "'")] = '\0';
            args[n++] = t;
        }
        args[n++] = "--help"; /* parsed whole, then only the help: rc 2 if the example's options were wrong */
        args[n] = NULL;
        assert_string_equal(args[0], cases[i].cmd);
        {
            psc__run_t e = psc__run((const char **)args, psc__no_driver);

            if (e.rc != 0)
                fail_msg("the example of %s --help does not parse: %s", cases[i].cmd, e.err);
            psc__free(&e);
        }
        psc__free(&r);
    }
    r = psc__run((const char *[]){"--help", NULL}, psc__no_driver); /* without a command: everything */
    assert_non_null(strstr(r.out, "Commands:"));
    assert_non_null(strstr(r.out, "--round-trips"));
    assert_non_null(strstr(r.out, "--calibrate"));
    psc__free(&r);
}

static void test_usage_errors_exit_2(void **state)
{
    (void)state;
    /* Usage errors win over a missing driver: they are found first. */
    psc__expect_error((const char *[]){"--bogus", NULL}, psc__no_driver, 2, "unknown option '--bogus'");
    psc__expect_error((const char *[]){"bw", "--size", "0", NULL}, psc__no_driver, 2, "accepted 1 B to 1 TiB");
    psc__expect_error((const char *[]){"frob", NULL}, psc__no_driver, 2, "unknown command 'frob'");
    psc__expect_error((const char *[]){"bw", "--json=/nonexistent-dir/x.json", NULL}, psc__no_driver, 2,
                      "missing or not writable");
    psc__expect_error((const char *[]){"bw", "--json=/tmp", NULL}, psc__no_driver, 2, "is a directory");
}

static void test_no_driver_exit_3(void **state)
{
    const char *const cmds[][3] = {{NULL}, {"report", NULL}, {"devices", NULL}, {"bw", "-t", "gpu_local_ce"},
                                   {"lat", NULL}, {"verify", NULL}, {"topo", NULL}, {"doctor", NULL}, {"nvlink", NULL}};
    char json[] = "/tmp/psc-nodrv-XXXXXX", arg[64];

    (void)state;
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        const char *args[5] = {cmds[i][0], cmds[i][1], cmds[i][2], NULL};
        psc__expect_error(args, psc__no_driver, 3, "no NVIDIA driver: /nonexistent/libcuda.so.1 could not be loaded");
    }
    /* No partial output file either. */
    assert_non_null(mkdtemp(json));
    snprintf(arg, sizeof(arg), "--json=%s/r.json", json);
    psc__expect_error((const char *[]){arg, NULL}, psc__no_driver, 3, "no NVIDIA driver");
    snprintf(arg, sizeof(arg), "%s/r.json", json);
    assert_int_equal(access(arg, F_OK), -1);
    rmdir(json);
}

static void test_fake_driver_paths(void **state)
{
    (void)state;
    psc__expect_error((const char *[]){NULL}, psc__fake_nodev, 3, "no GPU: the CUDA driver sees no device");
    psc__expect_error((const char *[]){"devices", NULL}, psc__fake_missing, 3, "lacks cuMemcpyAsync");
    psc__expect_error((const char *[]){"bw", "--devices", "5", NULL}, psc__fake_gpus, 2,
                      "GPU 5 does not exist: accepted 0 to 1 (this machine has 2 GPUs)");
    psc__expect_error((const char *[]){"bw", "-t", "gpu_to_gpu_read_ce", "-d", "1", NULL}, psc__fake_gpus, 3,
                      "gpu_to_gpu_read_ce needs at least 2 GPUs");
    psc__expect_error((const char *[]){"lat", "-t", "gpu_to_gpu_chase", "-d", "1", NULL}, psc__fake_gpus, 3,
                      "gpu_to_gpu_chase needs at least 2 GPUs");
}

static void test_fake_gpus_inventory_and_failures(void **state)
{
    char dir[] = "/tmp/psc-fake-XXXXXX", arg[128], path[64];
    json_error_t jerr;
    json_t *doc, *tests;
    psc__run_t r;

    (void)state;
    r = psc__run((const char *[]){"devices", NULL}, psc__fake_gpus);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "Fake GPU 1"));
    assert_non_null(strstr(r.out, "0000:11:00.0"));
    assert_non_null(strstr(r.out, "; NVML not loaded: "));
    assert_null(strstr(r.out, "NVML NVML"));
    psc__free(&r);

    /* Every case fails (no context), each is reported, and the run goes on to the end: exit 1. */
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/r.json", dir);
    snprintf(arg, sizeof(arg), "--json=%s", path);
    r = psc__run((const char *[]){"bw", "-s", "4K", "-t", "gpu_to_gpu_*_ce,host_to_gpu_ce,gpu_local_ce", arg, NULL},
                 psc__fake_gpus);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.out, "FAIL[1]"));
    assert_non_null(strstr(r.out, "cuDevicePrimaryCtxRetain: CUDA_ERROR_NOT_SUPPORTED"));
    assert_non_null(strstr(r.out, "wall time:"));
    /* read, write: 2 each; bidir read, write, p2p off: 1 each; p2p off: 2; host_to_gpu and local: 2 each */
    assert_int_equal(psc__lines(r.err), 13);
    doc = json_load_file(path, 0, &jerr);
    assert_non_null(doc);
    tests = json_object_get(doc, "tests");
    assert_int_equal(json_array_size(tests), 13);
    for (size_t i = 0; i < json_array_size(tests); i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(tests, i), "status")), "failed");
    assert_int_equal(json_integer_value(json_object_get(doc, "exit_code")), 1);
    json_decref(doc);
    unlink(path);
    rmdir(dir);
    psc__free(&r);
}

/*
 * What identifies the machine (host name, GPU UUIDs, the hwloc XML's host name and addresses) stays out of
 * JSON and recordings unless --identify asks for it.
 */
static void test_identifiers_only_on_request(void **state)
{
    static const char *const env[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=gpus", "FAKE_CUDA_UUID=5",
                                      "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1", NULL};
    static const char *const ctx_env[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=contexts",
                                          "FAKE_CUDA_KERNELS=1", "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1",
                                          NULL};
    char dir[] = "/tmp/psc-ids-XXXXXX", path[64], arg[96], arg2[160];
    json_error_t jerr;
    json_t *doc, *gpu;
    psc__run_t r;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/d.json", dir);
    snprintf(arg, sizeof(arg), "--json=%s", path);
    for (int identify = 0; identify < 2; identify++) {
        r = psc__run((const char *[]){"devices", arg, identify ? "--identify" : NULL, NULL}, env);
        assert_int_equal(r.rc, 0);
        psc__free(&r);
        assert_non_null(doc = json_load_file(path, 0, &jerr));
        gpu = json_array_get(json_object_get(doc, "devices"), 1);
        assert_non_null(gpu);
        assert_true(identify ? json_is_string(json_object_get(doc, "hostname"))
                             : json_is_null(json_object_get(doc, "hostname")));
        if (identify)
            assert_non_null(strstr(json_string_value(json_object_get(gpu, "uuid")), "GPU-"));
        else
            assert_true(json_is_null(json_object_get(gpu, "uuid")));
        json_decref(doc);
        unlink(path);
    }
    snprintf(path, sizeof(path), "%s/b.json", dir);
    snprintf(arg, sizeof(arg), "--json=%s", path); /* the words typed: a file's directory (a user's, a job's) too */
    for (int identify = 0; identify < 2; identify++) {
        r = psc__run((const char *[]){"bw", "-t", "gpu_local_ce", "-s", "4K", "-n", "2", arg,
                                      identify ? "--identify" : NULL, NULL}, ctx_env);
        assert_int_equal(r.rc, 0);
        psc__free(&r);
        assert_non_null(doc = json_load_file(path, 0, &jerr));
        snprintf(arg2, sizeof(arg2), "p2pscope bw -t gpu_local_ce -s 4K -n 2 %s%s", identify ? arg : "--json=b.json",
                 identify ? " --identify" : "");
        assert_non_null(json_string_value(json_object_get(doc, "command_line")));
        assert_string_equal(json_string_value(json_object_get(doc, "command_line")), arg2);
        json_decref(doc);
        unlink(path);
    }
    snprintf(path, sizeof(path), "%s/t.json", dir);
    snprintf(arg, sizeof(arg), "--json=%s", path); /* a replay's facts as a recording (--save is live only) */
    for (int identify = 0; identify < 2; identify++) {
        const char *xml;

        r = psc__run((const char *[]){"topo", "--topology", TEST_DATA "/h200x2-nv18.json", arg,
                                      identify ? "--identify" : NULL, NULL},
                     psc__no_driver);
        assert_int_equal(r.rc, 0);
        psc__free(&r);
        assert_non_null(doc = json_load_file(path, 0, &jerr));
        gpu = json_array_get(json_object_get(doc, "gpus"), 0);
        xml = json_string_value(json_object_get(doc, "hwloc_xml"));
        assert_non_null(xml);
        assert_true(identify ? json_is_string(json_object_get(gpu, "uuid")) : json_is_null(json_object_get(gpu, "uuid")));
        assert_true(identify ? strstr(xml, "HostName") != NULL : strstr(xml, "HostName") == NULL);
        json_decref(doc);
        unlink(path);
    }
    rmdir(dir);
}

/* Every command on two GPUs that cannot make a context: each case fails with the reason, the run ends, exit 1. */
static void test_fake_gpus_every_command(void **state)
{
    char dir[] = "/tmp/psc-cmds-XXXXXX", arg[128], path[96];
    const char *const cmds[] = {"report", "lat", "verify"};
    json_error_t jerr;
    json_t *doc;
    psc__run_t r;

    (void)state;
    assert_non_null(mkdtemp(dir));
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s.json", dir, cmds[i]);
        snprintf(arg, sizeof(arg), "--json=%s", path);
        r = psc__run((const char *[]){cmds[i], "-d", "0", arg, NULL}, psc__fake_gpus);
        if (r.rc != 1)
            fprintf(stderr, "%s: rc=%d\n%s", cmds[i], r.rc, r.err);
        assert_int_equal(r.rc, 1);
        assert_non_null(strstr(r.out, "Fake GPU 0"));
        /* The driver's reason reaches the user, in the tables or the progress lines. */
        assert_true(strstr(r.out, "CUDA_ERROR_NOT_SUPPORTED") || strstr(r.err, "failed"));
        if (strcmp(cmds[i], "verify") == 0) /* a progress line per path, naming it */
            assert_non_null(strstr(r.err, "host_to_gpu_ce host -> gpu0: failed"));
        doc = json_load_file(path, 0, &jerr);
        assert_non_null(doc);
        assert_int_equal(json_integer_value(json_object_get(doc, "exit_code")), 1);
        json_decref(doc);
        unlink(path);
        psc__free(&r);
    }
    rmdir(dir);
}

/* devices --topology: the recording's GPUs in devices' table, no driver; what it does not hold is "?". */
static void test_devices_replay(void **state)
{
    psc__run_t r;

    (void)state;
    r = psc__run((const char *[]){"devices", "--topology", TEST_DATA "/h200x2-nv18.json", NULL}, psc__no_driver);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    assert_non_null(strstr(r.out, "/h200x2-nv18.json): driver 580.159.04, CUDA driver API 13.0"));
    assert_non_null(strstr(r.out, "gpu1     -  NVIDIA H200  0000:00:07.0         139.8    ?   ?             ?     0"
                                  "       1980/1980        38\n"));
    assert_int_equal(psc__lines(r.out), 4); /* the source's line, the header, two GPUs */
    psc__free(&r);
    r = psc__run((const char *[]){"devices", "--topology", TEST_DATA "/24em64t-2n6c2t-pci.xml", NULL}, psc__no_driver);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "CUDA driver API unknown"));
    assert_non_null(strstr(r.out, "gpu2     -  NVIDIA [10de:06d2]  0000:14:00.0             ?    ?   ?             ?     1"));
    psc__free(&r);
    psc__expect_error((const char *[]){"devices", "--topology", TEST_DATA "/h200x2-nv18.json", "--json", NULL},
                      psc__no_driver, 2, "--json and --identify go with devices on a live machine");
    psc__expect_error((const char *[]){"devices", "--topology", TEST_DATA "/h200x2-nv18.json", "--identify", NULL},
                      psc__no_driver, 2, "--json and --identify go with devices on a live machine");
    psc__expect_error((const char *[]){"devices", "--topology", TEST_DATA "/h200x2-nv18.json", "-n", "3", NULL},
                      psc__no_driver, 2, "does not go with devices");
    psc__expect_error((const char *[]){"devices", "--topology", "/nonexistent.xml", NULL}, psc__no_driver, 2,
                      "/nonexistent.xml: no such file or directory");
}

static void test_topology_replays(void **state)
{
    psc__run_t r;

    (void)state;
    r = psc__run((const char *[]){"topo", "--topology", TEST_DATA "/nvidiaDGX2.xml", NULL}, psc__no_driver);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "gpu15   NV6"));
    assert_non_null(strstr(r.out, "P2P access: not recorded"));
    psc__free(&r);
    r = psc__run((const char *[]){"doctor", "--topology", TEST_DATA "/nvidiaDGX2.xml", NULL}, psc__no_driver);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "0 errors, 0 warnings"));
    psc__free(&r);
    r = psc__run((const char *[]){"nvlink", "--topology", TEST_DATA "/power8gpudistances.xml", NULL}, psc__no_driver);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "gpu0 Tesla P100-SXM2-16GB (0002:01:00.0): 4 links"));
    psc__free(&r);
    psc__expect_error((const char *[]){"topo", "--topology", "/nonexistent.xml", NULL}, psc__no_driver, 2,
                      "/nonexistent.xml: no such file or directory");
    psc__expect_error((const char *[]){"bw", "--topology", "x.xml", NULL}, psc__no_driver, 2,
                      "--topology goes with topo, nvlink, doctor or devices");
    psc__expect_error((const char *[]){"topo", "--topology", "x.xml", "--save", "y.json", NULL}, psc__no_driver, 2,
                      "--save goes with topo on a live machine");
    psc__expect_error((const char *[]){"bw", "--watch", NULL}, psc__no_driver, 2, "--watch goes with nvlink");
    /* Invalid UTF-8 in an argument is quoted escaped, never echoed raw to the terminal. */
    r = psc__run((const char *[]){"topo", "--topology", "/nonexistent/\xff\xfe.json", NULL}, psc__no_driver);
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "/nonexistent/\\xff\\xfe.json: no such file or directory"));
    assert_null(strchr(r.err, '\xff'));
    psc__free(&r);
    /* The root as a capture: refused (too large, or a file it cannot read), each path named with one slash. */
    r = psc__run((const char *[]){"topo", "--topology", "/", NULL}, psc__no_driver);
    assert_int_not_equal(r.rc, 0);
    assert_non_null(strstr(r.err, "p2pscope: /"));
    assert_null(strstr(r.err, "//"));
    psc__free(&r);
}

/* Output targets that cannot be written are refused before the run (exit 2 without a driver: the driver, 3, comes
 * later): a parent that is a file, a symlink to a missing directory, a name over NAME_MAX; for each writer. */
static void test_unwritable_targets_refused_first(void **state)
{
    char dir[] = "/tmp/psc-unw-XXXXXX", file[96], link[96], longname[400], arg[512];
    const char *const opts[] = {"--json=", "--html=", "--csv=", "--svg=", "--save="};
    int fd;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(file, sizeof(file), "%s/afile", dir);
    assert_true((fd = open(file, O_CREAT | O_WRONLY, 0600)) >= 0);
    close(fd);
    snprintf(link, sizeof(link), "%s/dangling", dir);
    assert_int_equal(symlink("missing/x.json", link), 0);
    snprintf(longname, sizeof(longname), "%s/%0300d", dir, 0);
    for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++) {
        const char *cmd = k == 4 ? "topo" : "bw";
        const int is_dir = k == 2 || k == 3;

        snprintf(arg, sizeof(arg), "%s%s/out", opts[k], file);
        psc__expect_error((const char *[]){cmd, arg, NULL}, psc__no_driver, 2, is_dir ? "afile is missing or not writable"
                                                                                      : "afile is not a directory");
        if (!is_dir) {
            snprintf(arg, sizeof(arg), "%s%s", opts[k], link);
            psc__expect_error((const char *[]){cmd, arg, NULL}, psc__no_driver, 2, "/missing is missing or not writable");
        }
        snprintf(arg, sizeof(arg), "%s%s", opts[k], longname);
        psc__expect_error((const char *[]){cmd, arg, NULL}, psc__no_driver, 2, "its name is longer than 255 bytes");
    }
    unlink(link);
    unlink(file);
    rmdir(dir);
}

/* Latency cases the run refuses (no context on the fake GPUs) are failed results, each with the driver's reason,
 * and the suite goes on to the end: exit 1. */
static void test_lat_refused_cases_failed(void **state)
{
    json_error_t jerr;
    json_t *doc, *tests;
    psc__run_t r;

    (void)state;
    r = psc__run((const char *[]){"lat", "-t", "gpu_to_gpu_chase,local_chase", "--json", NULL}, psc__fake_gpus);
    assert_int_equal(r.rc, 1);
    assert_non_null(doc = json_loads(r.out, 0, &jerr));
    assert_non_null(tests = json_object_get(doc, "tests"));
    assert_int_equal(json_array_size(tests), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *t = json_array_get(tests, i);

        assert_string_equal(json_string_value(json_object_get(t, "status")), "failed");
        assert_non_null(strstr(json_string_value(json_object_get(t, "reason")), "CUDA_ERROR_NOT_SUPPORTED"));
    }
    json_decref(doc);
    psc__free(&r);
}

/* P2PSCOPE_LOG with a level it does not know: warnings are logged, and that is said, naming the accepted levels. */
static void test_log_level_unknown(void **state)
{
    static const char *const garbage[] = {"P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1", "P2PSCOPE_LOG=garbage", NULL};
    static const char *const known[] = {"P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1", "P2PSCOPE_LOG=ERROR", NULL};
    psc__run_t r;

    (void)state;
    r = psc__run((const char *[]){"devices", NULL}, garbage);
    assert_int_equal(r.rc, 3);
    assert_non_null(strstr(r.err, "P2PSCOPE_LOG=garbage not known: accepted none, error, warn, info or debug"));
    psc__free(&r);
    r = psc__run((const char *[]){"devices", NULL}, known);
    assert_int_equal(r.rc, 3);
    assert_null(strstr(r.err, "P2PSCOPE_LOG"));
    psc__free(&r);
}

/* Output that cannot be written (stdout on a full disk) fails the run with one line, whatever the command. */
static void test_stdout_write_errors(void **state)
{
    const char *const cmds[][5] = {{"--help", NULL}, {"list", NULL}, {"lat", "-l", NULL},
                                   {"topo", "--topology", TEST_DATA "/nvidiaDGX2.xml", NULL},
                                   {"doctor", "--topology", TEST_DATA "/nvidiaDGX2.xml", "--json", NULL},
                                   {"topo", "--topology", TEST_DATA "/nvidiaDGX2.xml", "--json", NULL}};
    psc__run_t r;

    (void)state;
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        r = psc__run_to(cmds[i], psc__no_driver, "/dev/full");
        if (r.rc != 1)
            fprintf(stderr, "%s: rc=%d %s", cmds[i][0], r.rc, r.err);
        assert_int_equal(r.rc, 1);
        assert_non_null(strstr(r.err, "p2pscope: cannot write to standard output: No space left on device"));
        assert_int_equal(psc__lines(r.err), 1);
        psc__free(&r);
    }
}

/* --json into a symlink, a private file and /dev/null: written through, mode kept, devices left devices. */
static void test_json_output_files(void **state)
{
    char dir[] = "/tmp/psc-jout-XXXXXX", file[96], link[96], arg[128], null[96];
    struct stat sb, null_before;
    json_error_t jerr;
    json_t *doc;
    psc__run_t r;
    int fd;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(file, sizeof(file), "%s/facts.json", dir);
    snprintf(link, sizeof(link), "%s/latest.json", dir);
    fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(chmod(file, 0600), 0);
    assert_int_equal(symlink("facts.json", link), 0);
    snprintf(arg, sizeof(arg), "--json=%s", link);
    r = psc__run((const char *[]){"topo", "--topology", TEST_DATA "/nvidiaDGX2.xml", arg, NULL}, psc__no_driver);
    assert_int_equal(r.rc, 0);
    psc__free(&r);
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    assert_int_equal(stat(file, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0600);
    doc = json_load_file(file, 0, &jerr);
    assert_non_null(doc);
    json_decref(doc);

    /* A device of its own as root (null_device.h): a regression harms the test's node, not /dev/null. */
    if (psc_test_null_device(dir, null, sizeof(null)) == 0) {
        snprintf(arg, sizeof(arg), "--json=%s", null);
        assert_int_equal(stat(null, &null_before), 0);
        r = psc__run((const char *[]){"topo", "--topology", TEST_DATA "/nvidiaDGX2.xml", arg, NULL}, psc__no_driver);
        assert_int_equal(r.rc, 0);
        psc__free(&r);
        assert_int_equal(lstat(null, &sb), 0);
        assert_true(S_ISCHR(sb.st_mode));
        assert_int_equal(sb.st_ino, null_before.st_ino);
        if (strcmp(null, "/dev/null") != 0)
            unlink(null);
    }
    unlink(link);
    unlink(file);
    rmdir(dir);
}

/* A recording with more findings than any fixed buffer: the doctor shows and writes every one. */
static void test_doctor_shows_every_finding(void **state)
{
    char dir[] = "/tmp/psc-many-XXXXXX", rec[96], out[96], arg[128], err[256];
    psc_facts_t *f = psc_facts_new();
    json_error_t jerr;
    size_t want;
    json_t *doc;
    psc__run_t r;

    (void)state;
    assert_non_null(f);
    assert_non_null(mkdtemp(dir));
    snprintf(f->source, sizeof(f->source), "test");
    f->has_driver = 1;
    f->ngpu = PSC_MAX_GPUS;
    f->host.numa_nodes = 2;
    for (int i = 0; i < f->ngpu; i++) {
        psc_gpu_facts_t *g = &f->gpu[i];

        snprintf(g->name, sizeof(g->name), "NVIDIA GeForce RTX 4090");
        snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "0000:%02x:00.0", i + 1);
        g->memory_bytes = 24ull << 30;
        g->bar1_bytes = 256ull << 20;
        g->pcie_gen = 1;
        g->pcie_gen_max = 4;
        g->pcie_width = g->pcie_width_max = 16;
        g->numa_node = i % 2;
        for (int j = 0; j < f->ngpu; j++) {
            f->pair[i][j].path = i == j ? PSC_PATH_SELF : PSC_PATH_SYS;
            f->pair[i][j].can_access = i == j ? -1 : 0;
        }
    }
    snprintf(rec, sizeof(rec), "%s/rec.json", dir);
    snprintf(out, sizeof(out), "%s/out.json", dir);
    snprintf(arg, sizeof(arg), "--json=%s", out);
    assert_int_equal(psc_facts_save(f, rec, err, sizeof(err)), PSC_OK);
    psc_facts_free(f);
    f = psc_facts_new(); /* what the replay will see */
    assert_int_equal(psc_facts_load(rec, f, err, sizeof(err)), PSC_OK);
    want = psc_doctor(f, NULL, 0);
    assert_true(want > 512);
    r = psc__run((const char *[]){"doctor", "--topology", rec, arg, NULL}, psc__no_driver);
    if (r.rc > 1)
        fprintf(stderr, "rc=%d %s", r.rc, r.err);
    assert_true(r.rc <= 1);
    doc = json_load_file(out, 0, &jerr);
    assert_non_null(doc);
    assert_int_equal(json_array_size(json_object_get(doc, "findings")), want);
    json_decref(doc);
    psc__free(&r);
    unlink(rec);
    unlink(out);
    rmdir(dir);
    psc_facts_free(f);
}

/* A recording's remote_gpu outside its GPUs names no phantom GPU and reads nothing out of bounds. */
static void test_nvlink_remote_out_of_range(void **state)
{
    const int bad[] = {5, 1000000};
    char dir[] = "/tmp/psc-remote-XXXXXX", rec[96], err[256];
    psc__run_t r;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(rec, sizeof(rec), "%s/rec.json", dir);
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        psc_facts_t *f = psc_facts_new();
        char phantom[32];

        assert_non_null(f);
        snprintf(f->source, sizeof(f->source), "test");
        f->ngpu = 2;
        for (int i = 0; i < 2; i++) {
            snprintf(f->gpu[i].name, sizeof(f->gpu[i].name), "GPU %d", i);
            snprintf(f->gpu[i].pci_bus_id, sizeof(f->gpu[i].pci_bus_id), "0000:%02x:00.0", i + 1);
            f->gpu[i].nvlink_count = 1;
            f->gpu[i].nvlinks[0].active = 1;
            f->gpu[i].nvlinks[0].remote = PSC_REMOTE_GPU;
            f->gpu[i].nvlinks[0].remote_gpu = bad[k];
            for (int j = 0; j < 2; j++)
                f->pair[i][j].path = i == j ? PSC_PATH_SELF : PSC_PATH_SYS;
        }
        assert_int_equal(psc_facts_save(f, rec, err, sizeof(err)), PSC_OK);
        psc_facts_free(f);
        r = psc__run((const char *[]){"nvlink", "--topology", rec, NULL}, psc__no_driver); /* asserts no crash */
        snprintf(phantom, sizeof(phantom), "gpu%d ", bad[k]);
        assert_true(r.rc == 0 || r.rc == 2); /* shown without the remote, or refused by the loader */
        assert_null(strstr(r.out, phantom));
        psc__free(&r);
    }
    unlink(rec);
    rmdir(dir);
}

/* A recording whose path is not UTF-8 still gives whole JSON from nvlink and doctor. */
static void test_json_with_non_utf8_path(void **state)
{
    static const char *const cmds[] = {"nvlink", "doctor"};
    char dir[] = "/tmp/psc-utf8-XXXXXX", path[96], cmd[256];
    json_error_t jerr;
    psc__run_t r;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/rec-\xff\xfe.json", dir);
    snprintf(cmd, sizeof(cmd), "cp %s/h200x2-nv18.json '%s'", TEST_DATA, path);
    assert_int_equal(system(cmd), 0);
    for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
        json_t *doc;

        r = psc__run((const char *[]){cmds[k], "--topology", path, "--json", NULL}, psc__no_driver);
        if (r.rc != 0)
            fprintf(stderr, "%s: rc=%d %s\n", cmds[k], r.rc, r.err);
        assert_int_equal(r.rc, 0);
        doc = json_loads(r.out, 0, &jerr);
        assert_non_null(doc);
        assert_non_null(json_object_get(doc, cmds[k][0] == 'n' ? "gpus" : "findings"));
        json_decref(doc);
        psc__free(&r);
    }
    unlink(path);
    rmdir(dir);
}

/* A driver with more GPUs than the tables hold: every command uses the first PSC_MAX_GPUS and says so, none crashes. */
static void test_more_gpus_than_tables(void **state)
{
    static const char *const env[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=gpus", "FAKE_CUDA_COUNT=100",
                                      "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1", NULL};
    static const struct {
        const char *args[12];
        int rc; /* every measurement fails on the fake GPUs: 1 */
    } runs[] = {
        {{"devices", NULL}, 0},
        {{"bw", "-t", "gpu_to_gpu_read_ce,all_to_one_write_ce,ring_write_ce", "-s", "4K", NULL}, 1},
        {{"lat", "-t", "gpu_to_gpu_chase,gpu_gpu_flag,gpu_to_gpu_copy_ce", NULL}, 1},
        {{"verify", "-t", "gpu_to_gpu_write_ce,host_to_all_ce", "-e", "4K", NULL}, 1},
        {{"verify", "-t", "gpu_to_gpu_write_ce", "-e", "4K", "--no-load", "--seconds", "1", NULL}, 1},
        {{"nvlink", "--watch", "-s", "4K", NULL}, 1},
        {{"report", "-s", "4K", NULL}, 1},
    };
    psc__run_t r;

    (void)state;
    for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
        r = psc__run(runs[k].args, env); /* asserts no crash */
        if (r.rc != runs[k].rc)
            fprintf(stderr, "%s: rc=%d stderr=%.400s\n", runs[k].args[0], r.rc, r.err);
        assert_int_equal(r.rc, runs[k].rc);
        assert_null(strstr(r.out, "gpu64"));
        assert_null(strstr(r.err, "gpu64"));
        if (k == 0) {
            assert_non_null(strstr(r.out, "gpu63 "));
            assert_non_null(strstr(r.out, "the driver reports 100 GPUs; p2pscope uses the first 64"));
        }
        psc__free(&r);
    }
}

/* verify: a named test with no path here is not a pass; a stress run whose paths all fail at once stops. */
static void test_verify_nothing_verified(void **state)
{
    psc__run_t r;

    (void)state;
    psc__expect_error((const char *[]){"verify", "-t", "gpu_to_gpu_read_ce", "-d", "1", NULL}, psc__fake_gpus, 3,
                      "gpu_to_gpu_read_ce needs at least 2 GPUs; 1 selected with --devices");
    r = psc__run((const char *[]){"verify", "-d", "0", "-e", "4K", "--no-load", "--seconds", "3", NULL},
                 psc__fake_gpus);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "no path could run in pass 1; the stress run stops"));
    assert_true(psc__lines(r.err) < 64); /* one pass: a line per path, not a busy loop's thousands */
    psc__free(&r);
}

/* --json is honoured by the lists and nvlink, not ignored. */
static void test_json_lists_and_nvlink(void **state)
{
    const struct { const char *args[5]; int count; } lists[] = {
        {{"list", "--json", NULL}, psc_bw_test_count()},
        {{"bw", "-l", "--json", NULL}, psc_bw_test_count()},
        {{"lat", "-l", "--json", NULL}, psc_lat_test_count()},
    };
    json_error_t jerr;
    json_t *doc, *t0;
    psc__run_t r;

    (void)state;
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        r = psc__run(lists[i].args, psc__no_driver);
        assert_int_equal(r.rc, 0);
        doc = json_loads(r.out, 0, &jerr);
        assert_non_null(doc);
        assert_int_equal(json_array_size(json_object_get(doc, "tests")), lists[i].count);
        t0 = json_array_get(json_object_get(doc, "tests"), 0);
        assert_non_null(json_string_value(json_object_get(t0, "name")));
        assert_non_null(json_string_value(json_object_get(t0, "title")));
        assert_non_null(json_string_value(json_object_get(t0, "description")));
        json_decref(doc);
        psc__free(&r);
    }
    r = psc__run((const char *[]){"nvlink", "--topology", TEST_DATA "/power8gpudistances.xml", "--json", NULL},
                 psc__no_driver);
    assert_int_equal(r.rc, 0);
    doc = json_loads(r.out, 0, &jerr);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "command")), "nvlink");
    t0 = json_array_get(json_object_get(doc, "gpus"), 0);
    assert_string_equal(json_string_value(json_object_get(t0, "pci_bus_id")), "0002:01:00.0");
    assert_int_equal(json_array_size(json_object_get(t0, "nvlinks")), 4);
    json_decref(doc);
    psc__free(&r);
}

/* copy: its usage errors come before the driver; a calibration file that cannot be read is a usage error. */
static void test_copy_command(void **state)
{
    (void)state;
    psc__expect_error((const char *[]){"copy", "--calibrate", "/nonexistent-dir/c.json", NULL}, psc__no_driver, 2,
                      "missing or not writable");
    psc__expect_error((const char *[]){"copy", "-b", "1", "-e", "1M", "-f", "32", NULL}, psc__no_driver, 2,
                      "accepted 2 to 16");
    psc__expect_error((const char *[]){"bw", "--calibration", "c.json", NULL}, psc__no_driver, 2, "go with copy");
    psc__expect_error((const char *[]){"copy", NULL}, psc__no_driver, 3, "no NVIDIA driver");
    psc__expect_error((const char *[]){"copy", "--calibration", "/nonexistent/cal.json", NULL}, psc__fake_gpus, 2,
                      "/nonexistent/cal.json");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_version_list),
        cmocka_unit_test(test_help_per_command),
        cmocka_unit_test(test_usage_errors_exit_2),
        cmocka_unit_test(test_copy_command),
        cmocka_unit_test(test_no_driver_exit_3),
        cmocka_unit_test(test_fake_driver_paths),
        cmocka_unit_test(test_identifiers_only_on_request),
        cmocka_unit_test(test_fake_gpus_inventory_and_failures),
        cmocka_unit_test(test_devices_replay),
        cmocka_unit_test(test_topology_replays),
        cmocka_unit_test(test_fake_gpus_every_command),
        cmocka_unit_test(test_unwritable_targets_refused_first),
        cmocka_unit_test(test_lat_refused_cases_failed),
        cmocka_unit_test(test_log_level_unknown),
        cmocka_unit_test(test_stdout_write_errors),
        cmocka_unit_test(test_json_output_files),
        cmocka_unit_test(test_doctor_shows_every_finding),
        cmocka_unit_test(test_nvlink_remote_out_of_range),
        cmocka_unit_test(test_more_gpus_than_tables),
        cmocka_unit_test(test_json_with_non_utf8_path),
        cmocka_unit_test(test_verify_nothing_verified),
        cmocka_unit_test(test_json_lists_and_nvlink),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
