/*
 * `p2pscope check --fleet` under a real mpirun (the MPI the binary was built with), one machine standing in for the
 * nodes, on the fake driver: four ranks, one made slow (FAKE_CUDA_SLOW: its paths at a hundredth of the speed), one made
 * to fail (--test-fault: wrong bytes), one whose check is killed (FAKE_CUDA_DIE=9): one table at rank 0 naming each
 * (outlier, unhealthy, unreachable), the JSON and the page alike, exit 1. A healthy fleet exits 0. A rank whose
 * check hangs (FAKE_CUDA_HANG) is named unreachable after -T, and the job ends then. A rank whose process dies
 * makes Open MPI end the job: rank 0 still writes the JSON naming it. Each rank's options and environment come
 * from an mpirun application file. Built with PSC_ON_GPU as tests/gpu's test_gpu_check_fleet: two ranks on this
 * machine's GPUs (two checks at once on the same GPUs: no bandwidth bound, a bound no noise reaches between two
 * nodes), both healthy, exit 0; skipped (77) without a driver or GPU.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#if PSC_ON_GPU
#include "p2pscope.h"
#endif

/* run_binary.h runs P2PSCOPE_BIN: here mpirun, whose application file names the real binary (P2PSCOPE_REAL). */
#define P2PSCOPE_BIN MPIEXEC
#include "run_binary.h"
#include "scratch_dir.h"

#define MPI_ENV "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_rmaps_base_oversubscribe=1"
#if PSC_ON_GPU
static const char *const env[] = {MPI_ENV, "NCCL_NVLS_ENABLE=0", NULL};
#define CHECK P2PSCOPE_REAL " check --fleet -s 16M"
#else
static const char *const env[] = {
    MPI_ENV, "P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1",
    "FAKE_CUDA_MODE=contexts", "FAKE_CUDA_KERNELS=1", "FAKE_CUDA_COUNT=2", "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL, NULL};
/* A small check: the fake runs the kernels on the CPU. */
#define CHECK P2PSCOPE_REAL " check --fleet -s 4K --no-load"
#endif

static int setup(void **state)
{
    (void)state;
    return psc_scratch_make("psc-fleet");
}

static int teardown(void **state)
{
    (void)state;
    return psc_scratch_remove();
}

/* mpirun over an application file of these lines (one a rank). */
static psc__run_t mpirun_app(const char *const *lines)
{
    const char *app = psc__path("ranks.app");
    FILE *f = fopen(app, "w");

    assert_non_null(f);
    for (int i = 0; lines[i]; i++)
        fprintf(f, "%s\n", lines[i]);
    assert_int_equal(fclose(f), 0);
    return psc__run((const char *[]){"--app", app, NULL}, env);
}

/* The table's line of rank r ("STATE  r  host ..."), cut at its end into line; NULL when there is none. */
static char *node_line(const char *out, int r, char *line, size_t len)
{
    char rank[16];

    snprintf(rank, sizeof(rank), " %5d  ", r);
    for (const char *p = out; (p = strstr(p, rank)); p++) {
        const char *start = p, *nl;

        while (start > out && start[-1] != '\n')
            start--;
        if (p - start != 11)
            continue; /* not the rank column */
        nl = strchr(p, '\n');
        snprintf(line, len, "%.*s", (int)(nl ? nl - start : (long)strlen(start)), start);
        return line;
    }
    return NULL;
}

static void expect_node(const psc__run_t *r, int rank, const char *state, const char *says)
{
    char line[2048];

    if (!node_line(r->out, rank, line, sizeof(line)) || strncmp(line, state, strlen(state)) != 0 ||
        (says && !strstr(line, says)))
        fail_msg("want rank %d %s (%s) in:\n%s\nstderr:\n%s", rank, state, says ? says : "", r->out, r->err);
}

static json_t *load_json(const char *path)
{
    json_error_t e;
    json_t *d = json_load_file(path, 0, &e);

    if (!d)
        fail_msg("%s: %s", path, e.text);
    return d;
}

#if PSC_ON_GPU
/* Two ranks on this machine's GPUs: both checks pass (the node rules only), one table, the JSON's two nodes. */
static void test_gpu_two_ranks(void **state)
{
    char json[128], expect[128], line[768];
    psc__run_t r;
    json_t *doc;
    FILE *f;

    (void)state;
    snprintf(json, sizeof(json), "%s", psc__path("fleet.json"));
    snprintf(expect, sizeof(expect), "%s", psc__path("node.expect"));
    f = fopen(expect, "w");
    assert_non_null(f);
    fputs("node gpus >= 1\n", f);
    assert_int_equal(fclose(f), 0);
    snprintf(line, sizeof(line), "-np 2 " CHECK " --fleet-bound 100 --expect %s --json=%s", expect, json);
    r = mpirun_app((const char *[]){line, NULL});
    if (r.rc != 0)
        fail_msg("rc %d:\n%s\n%s", r.rc, r.out, r.err);
    expect_node(&r, 0, "HEALTHY", NULL);
    expect_node(&r, 1, "HEALTHY", NULL);
    doc = load_json(json);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "fleet"), "healthy")), 2);
    assert_true(json_array_size(json_object_get(json_object_get(doc, "fleet"), "medians")) >= 3);
    json_decref(doc);
    psc__free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_gpu_two_ranks, setup, teardown),
    };
    psc_context_t *ctx = NULL;
    char err[256];
    psc_status_t st = psc_context_create(&ctx, err, sizeof(err));

    if (st == PSC_ERR_NO_DRIVER || st == PSC_ERR_NO_DEVICE) {
        fprintf(stderr, "skipped: %s\n", err);
        return 77;
    }
    if (st != PSC_OK) {
        fprintf(stderr, "FAILED to open a context: %s\n", err);
        return 1;
    }
    psc_context_destroy(ctx);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static json_t *json_node(json_t *doc, int rank)
{
    return json_array_get(json_object_get(json_object_get(doc, "fleet"), "nodes"), (size_t)rank);
}

/* Slow, failing and killed ranks beside a healthy one: each named for what it is, in the table, JSON and page. */
static void test_slow_failing_killed(void **state)
{
    char json[128], html[128], line[2048];
    char r0[768], r1[768], r2[768], r3[768];
    psc__run_t r;
    json_t *doc, *n1, *fig;
    struct stat sb;

    (void)state;
    snprintf(json, sizeof(json), "%s", psc__path("fleet.json"));
    snprintf(html, sizeof(html), "%s", psc__path("fleet.html"));
    snprintf(r0, sizeof(r0), "-np 1 " CHECK " -T 120 --json=%s --html %s", json, html);
    snprintf(r1, sizeof(r1), "-np 1 -x FAKE_CUDA_SLOW=100 " CHECK " -T 120 --json=%s --html %s", json, html);
    snprintf(r2, sizeof(r2), "-np 1 " CHECK " -T 120 --json=%s --html %s --test-fault flip:0", json, html);
    snprintf(r3, sizeof(r3), "-np 1 -x FAKE_CUDA_DIE=9 " CHECK " -T 120 --json=%s --html %s", json, html);
    r = mpirun_app((const char *[]){r0, r1, r2, r3, NULL});
    assert_int_equal(r.rc, 1);
    /* rank 1: slow everywhere, so below the median on the first key figure (a bandwidth) with the flag */
    expect_node(&r, 1, "OUTLIER", " !");
    node_line(r.out, 1, line, sizeof(line));
    assert_non_null(strstr(line, "% !"));
    expect_node(&r, 2, "UNHEALTHY", "integrity: ");
    expect_node(&r, 3, "UNREACHABLE", "its check died: Killed (signal 9)");
    /* rank 0 reported and passed its own check; with the slow rank the lowest, its bandwidth is at or above the
     * median (it may be flagged on the all-reduce, which the slow rank shares, from the CPU's noise) */
    node_line(r.out, 0, line, sizeof(line));
    assert_true(strncmp(line, "HEALTHY", 7) == 0 || strncmp(line, "OUTLIER", 7) == 0);
    assert_non_null(strstr(r.out, "\n  F1  bw.gpu_to_gpu_write_ce "));
    assert_non_null(strstr(r.out, " over 3 nodes, bound 5.0 %\n")); /* three reported figures: not the killed */
    assert_non_null(strstr(r.out, "\nfleet: UNHEALTHY (4 nodes: "));
    assert_non_null(strstr(r.out, " 1 unhealthy, 1 unreachable) in "));
    /* each node's own verdict on stderr as it came, the killed check's named */
    assert_non_null(strstr(r.err, "p2pscope check --fleet: 4 of 4 reported: rank "));
    assert_non_null(strstr(r.err, "unreachable: its check died: Killed (signal 9)\n"));
    assert_non_null(strstr(r.err, ") failed its check: integrity: "));
    doc = load_json(json);
    assert_string_equal(json_string_value(json_object_get(doc, "command")), "check --fleet");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "fleet"), "exit_code")), 1);
    fig = json_array_get(json_object_get(json_node(doc, 0), "figures"), 0);
    assert_string_equal(json_string_value(json_object_get(fig, "name")), "bw.gpu_to_gpu_write_ce");
    assert_true(json_is_false(json_object_get(fig, "flagged")));
    assert_true(json_number_value(json_object_get(fig, "change_pct")) >= 0);
    n1 = json_node(doc, 1);
    assert_string_equal(json_string_value(json_object_get(n1, "state")), "OUTLIER");
    fig = json_array_get(json_object_get(n1, "figures"), 0);
    assert_string_equal(json_string_value(json_object_get(fig, "name")), "bw.gpu_to_gpu_write_ce");
    assert_true(json_is_true(json_object_get(fig, "flagged")));
    assert_true(json_number_value(json_object_get(fig, "change_pct")) < -50);
    assert_string_equal(json_string_value(json_object_get(json_node(doc, 2), "state")), "UNHEALTHY");
    assert_int_equal(json_integer_value(json_object_get(json_node(doc, 2), "check_exit_code")), 1);
    assert_string_equal(json_string_value(json_object_get(json_node(doc, 3), "state")), "UNREACHABLE");
    assert_true(json_is_null(json_object_get(json_node(doc, 3), "host"))); /* hosts only with --identify */
    json_decref(doc);
    assert_int_equal(stat(html, &sb), 0);
    assert_true(sb.st_size > 500);
    psc__free(&r);
}

/* Two healthy ranks: exit 0 and the healthy verdict (a bound no noise reaches with two nodes). */
static void test_healthy_fleet(void **state)
{
    psc__run_t r = mpirun_app((const char *[]){"-np 2 " CHECK " --fleet-bound 100", NULL});

    (void)state;
    if (r.rc != 0)
        fail_msg("rc %d:\n%s\n%s", r.rc, r.out, r.err);
    expect_node(&r, 0, "HEALTHY", NULL);
    expect_node(&r, 1, "HEALTHY", NULL);
    assert_non_null(strstr(r.out, "\nfleet: HEALTHY (2 nodes: 2 healthy, 0 outliers, 0 unhealthy, 0 unreachable)"));
    psc__free(&r);
}

/* A rank whose check hangs: named unreachable once -T passed, and the job ends then (no rank left behind). */
static void test_hung_rank_after_timeout(void **state)
{
    double t0 = now_s(), wall;
    psc__run_t r = mpirun_app((const char *[]){"-np 1 " CHECK " -T 3", "-np 1 -x FAKE_CUDA_HANG=1 " CHECK " -T 3",
                                               NULL});

    (void)state;
    wall = now_s() - t0;
    assert_int_equal(r.rc, 1);
    expect_node(&r, 0, "HEALTHY", NULL);
    expect_node(&r, 1, "UNREACHABLE", "no report within -T 3 s");
    assert_true(wall >= 3 && wall < 20);
    psc__free(&r);
}

/* A rank's process that dies: Open MPI ends the job; rank 0's JSON names the rank unreachable. */
static void test_rank_process_dies(void **state)
{
    char json[128], r0[768];
    psc__run_t r;
    json_t *doc, *n2;

    (void)state;
    snprintf(json, sizeof(json), "%s", psc__path("dies.json"));
    snprintf(r0, sizeof(r0), "-np 2 " CHECK " -T 120 --json=%s", json);
    r = mpirun_app((const char *[]){r0, "-np 1 " RANK_DIES, NULL});
    assert_int_not_equal(r.rc, 0);
    doc = load_json(json);
    n2 = json_node(doc, 2);
    assert_string_equal(json_string_value(json_object_get(n2, "state")), "UNREACHABLE");
    assert_non_null(strstr(json_string_value(json_object_get(n2, "why")), "no report: mpirun is ending the job"));
    assert_true(json_is_null(json_object_get(n2, "host")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "fleet"), "exit_code")), 1);
    json_decref(doc);
    psc__free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_slow_failing_killed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_healthy_fleet, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hung_rank_after_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rank_process_dies, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
