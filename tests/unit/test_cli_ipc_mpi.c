/*
 * `p2pscope ipc` as one rank per GPU under a real mpirun (the MPI the binary
 * was built with): the ranks' run is one run (rank 0's report names the
 * joined workers, each pair checked), rank 0 alone speaks for refusals every
 * rank shares, the corruption hook reaches every rank's worker, another
 * command is refused, and a rank killed mid-run ends the job (mpirun names
 * it) instead of hanging. Built only where MPI was found: as a unit test on
 * the fake driver's two GPUs, and (PSC_ON_GPU) as tests/gpu's on this
 * machine's GPUs, skipped (77) without a driver or GPU.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "ipc/ipc_proto.h"

/* run_binary.h runs P2PSCOPE_BIN: here mpirun, whose arguments then name the real binary (P2PSCOPE_REAL). */
#define P2PSCOPE_BIN MPIEXEC
#include "run_binary.h"

/* Open MPI: root allowed (CI, the GPU machines), more ranks than cores (CI has two) */
#define MPI_ENV "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_rmaps_base_oversubscribe=1"
#if PSC_ON_GPU
#define FAKE_ENV MPI_ENV
#else
#define FAKE_ENV                                                                                                    \
    "P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1", "FAKE_CUDA_MODE=contexts", \
        "FAKE_CUDA_COUNT=2", "FAKE_CUDA_UUID=7", "FAKE_CUDA_KERNELS=1", "FAKE_CUDA_FABRIC=1", MPI_ENV
#endif

static const char *const fake[] = {FAKE_ENV, NULL};
static int ngpu = 2; /* the fake's; on a GPU machine, its count */

/* How many times needle occurs in hay. */
static int count(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static psc__run_t mpirun(const char *np, const char *const *args, const char *const *env)
{
    const char *argv[32] = {"-np", np, P2PSCOPE_REAL};
    int n = 3;

    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return psc__run(argv, env);
}

/* One line of rank 0's saying `want` (once: the other ranks stay quiet), and the job's exit code. */
static void expect_refusal(const char *np, const char *const *args, int rc, const char *want)
{
    psc__run_t r = mpirun(np, args, fake);

    if (r.rc != rc || count(r.err, want) != 1)
        fail_msg("rc %d (expected %d), stderr:\n%s", r.rc, rc, r.err);
    assert_null(strstr(r.out, "p2pscope ipc:"));
    psc__free(&r);
}

/* A run of two ranks, GPUs as listed: one report, the workers joined, every pair passed. */
static void run_two(const char *devs)
{
    psc__run_t r = mpirun("2", (const char *[]){"ipc", "-d", devs, "-s", "64K", "-n", "3", "--round-trips", "50",
                                                "--json", NULL}, fake);
    json_error_t jerr;
    json_t *doc, *ipc, *w, *pairs, *m;
    size_t available = 0;

    if (r.rc != 0)
        fail_msg("rc %d, stderr:\n%s", r.rc, r.err);
    doc = json_loads(r.out, 0, &jerr);
    if (!doc)
        fail_msg("not one JSON document (%s): %s", jerr.text, r.out);
    ipc = json_object_get(doc, "ipc");
    assert_non_null(ipc);
    assert_string_equal(json_string_value(json_object_get(ipc, "workers_started_by")), "launcher");
    w = json_object_get(ipc, "workers");
    assert_int_equal(json_array_size(w), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(w, 1), "gpu")), devs[2] - '0');
    assert_true(json_integer_value(json_object_get(json_array_get(w, 0), "pid")) > 0);
    assert_true(json_integer_value(json_object_get(json_array_get(w, 0), "pid")) !=
                json_integer_value(json_object_get(json_array_get(w, 1), "pid")));
    assert_int_equal(json_integer_value(json_object_get(ipc, "failed_pairs")), 0);
    pairs = json_object_get(ipc, "pairs");
    m = json_object_get(ipc, "methods");
    for (size_t i = 0; i < json_array_size(m); i++) { /* fabric needs an IMEX channel: a real GPU may lack it */
        json_t *x = json_array_get(m, i);

        if (json_is_true(json_object_get(x, "available")))
            available++;
        else
            assert_true(json_string_length(json_object_get(x, "reason")) > 0);
    }
    assert_true(available >= (PSC_ON_GPU ? 2 : 3)); /* legacy and VMM fd always; the fake's fabric too */
    assert_int_equal(json_array_size(pairs), 2 * available); /* each method's 2 ordered pairs */
    for (size_t i = 0; i < json_array_size(pairs); i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(pairs, i), "status")), "passed");
    json_decref(doc);
    psc__free(&r);
}

static void test_ranks_run_one_run(void **state)
{
    (void)state;
    if (ngpu >= 2)
        run_two("0,1");
    run_two(ngpu >= 2 ? "1,1" : "0,0"); /* two ranks on one GPU */
}

static void test_rank0_speaks_for_all(void **state)
{
    (void)state;
    char np[16], want[64];

    snprintf(np, sizeof(np), "%d", ngpu + 1);
    snprintf(want, sizeof(want), "%d ranks, but this node shows %d GPU", ngpu + 1, ngpu);
    expect_refusal(np, (const char *[]){"ipc", NULL}, 3, want);
    expect_refusal("2", (const char *[]){"ipc", "-d", "0,0,0", NULL}, 2, "-d lists 3 GPUs for 2 ranks");
    expect_refusal("3", (const char *[]){"ipc", "-d", "0,0", NULL}, 2, "-d lists 2 GPUs for 3 ranks");
    expect_refusal("2", (const char *[]){"ipc", "-d", "0,63", NULL}, 2, "GPU 63 does not exist");
    expect_refusal("2", (const char *[]){"ipc", "--round-trips", "0", NULL}, 2, "bad --round-trips '0'");
    expect_refusal("2", (const char *[]){"bw", NULL}, 2, "only `p2pscope ipc` and `p2pscope coll` run as one rank per GPU");
}

/* The hook reaches every rank's worker: each pair fails, naming the offset, and the job exits 1. */
static void test_wrong_byte_fails_the_job(void **state)
{
    psc__run_t r;

    (void)state;
    r = mpirun("2", (const char *[]){"ipc", "-d", ngpu >= 2 ? "0,1" : "0,0", "-s", "80K", "-n", "3", "--method",
                                     "vmm_fd", "--no-local",
                                     "--test-corrupt-offset", "65538", NULL}, fake);
    if (r.rc != 1 || count(r.out, "FAILED") < 2 || !strstr(r.out, "offset 65538"))
        fail_msg("rc %d, stdout:\n%s\nstderr:\n%s", r.rc, r.out, r.err);
    psc__free(&r);
}

/* Rank 1 killed by a signal at its first copy: the job ends, the killed rank named; no hang (run_binary's alarm). */
static void test_killed_rank_ends_the_job(void **state)
{
    char die[48], runtime[] = "/tmp/psc-xdg-XXXXXX", xdg[64];
    const char *env[] = {FAKE_ENV, die, xdg, NULL};
    psc__run_t r;
    DIR *d;
    struct dirent *e;

    (void)state;
    assert_non_null(mkdtemp(runtime)); /* the run's socket goes here: nothing may be left */
    snprintf(xdg, sizeof(xdg), "XDG_RUNTIME_DIR=%s", runtime);
    snprintf(die, sizeof(die), "P2PSCOPE_TEST_IPC_DIE=1:%u", PSC_IPC_OP_BW);
    /* few round trips and no in-process figures: the default's 10000 in-process round trips on the fake (two
       spinning threads) took over the alarm's minute where the machine's two cores were busy with more */
    r = mpirun("2", (const char *[]){"ipc", "-d", ngpu >= 2 ? "0,1" : "0,0", "-s", "64K", "-n", "3", "--method",
                                     "legacy", "--round-trips", "50", "--no-local", NULL}, env);
    if (r.rc == 0 || !strstr(r.err, "rank 1") || !strstr(r.err, "signal 9"))
        fail_msg("rc %d, stderr:\n%s", r.rc, r.err);
    psc__free(&r);
    assert_non_null(d = opendir(runtime));
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            fail_msg("left in %s: %s", runtime, e->d_name);
    closedir(d);
    assert_int_equal(rmdir(runtime), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranks_run_one_run),
        cmocka_unit_test(test_rank0_speaks_for_all),
        cmocka_unit_test(test_wrong_byte_fails_the_job),
        cmocka_unit_test(test_killed_rank_ends_the_job),
    };

#if PSC_ON_GPU
    {
        psc_context_t *ctx = NULL;
        char why[512];
        psc_status_t st = psc_context_create(&ctx, why, sizeof(why));

        if (st != PSC_OK) { /* no driver or no GPU: skipped; anything else fails */
            printf("%s\n", why);
            return st == PSC_ERR_NO_DRIVER || st == PSC_ERR_NO_DEVICE ? 77 : 1;
        }
        ngpu = psc_device_count(ctx);
        psc_context_destroy(ctx);
    }
#endif
    return cmocka_run_group_tests(tests, NULL, NULL);
}
