/*
 * `p2pscope check` on the fake driver and NCCL: a healthy node exits 0 with a line per item and its JSON;
 * each kind of failure (a path below its bound, a GPU or NCCL the expectation wants, wrong bytes on the
 * measured paths and on the integrity pass, the doctor's error, a figure worse than the baseline) exits 1
 * naming the item; missing NCCL is a skip with its reason; one GPU skips the pairs' items; no driver or no
 * GPU exits 3; a wrong command line or baseline exits 2 in one line, before anything is measured.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "run_binary.h"
#include "scratch_dir.h"

#define FAKE_ENV "P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1", \
                 "FAKE_CUDA_MODE=contexts", "FAKE_CUDA_KERNELS=1", "FAKE_CUDA_COUNT=2"
#define NCCL "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL
#define NO_NCCL "P2PSCOPE_LIBNCCL=/nonexistent/libnccl.so.2"
/* A small check: the fake runs the kernels on the CPU, and its background load takes seconds a path. */
#define SMALL "-s", "4K", "--no-load"

static const char *const env[] = {FAKE_ENV, NCCL, NULL};

static int setup(void **state)
{
    (void)state;
    return psc_scratch_make("psc-check");
}

static int teardown(void **state)
{
    (void)state;
    return psc_scratch_remove();
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* The line of item name on stdout ("STATE  name ..."), or NULL. */
static const char *item_line(const char *out, const char *state, const char *name)
{
    char want[96];
    const char *p = out;

    snprintf(want, sizeof(want), "%s  %s ", state, name);
    while ((p = strstr(p, want)))
        if (p == out || p[-1] == '\n')
            return p;
        else
            p++;
    return NULL;
}

static void expect_item(const psc__run_t *r, const char *state, const char *name, const char *says)
{
    const char *line = item_line(r->out, state, name);
    const char *nl = line ? strchr(line, '\n') : NULL;

    if (!line || (says && (!strstr(line, says) || strstr(line, says) > nl)))
        fprintf(stderr, "want %s %s (%s) in:\n%s%s", state, name, says ? says : "", r->out, r->err);
    assert_non_null(line);
    if (says)
        assert_true(strstr(line, says) && strstr(line, says) < nl);
}

static json_t *load_json(const char *path)
{
    json_error_t e;
    json_t *d = json_load_file(path, 0, &e);

    if (!d)
        fprintf(stderr, "%s: %s\n", path, e.text);
    assert_non_null(d);
    return d;
}

/* The item of that name in the document's check. */
static json_t *json_item(json_t *doc, const char *name)
{
    json_t *items = json_object_get(json_object_get(doc, "check"), "items"), *it;
    size_t i;

    json_array_foreach(items, i, it)
        if (strcmp(json_string_value(json_object_get(it, "name")), name) == 0)
            return it;
    fail_msg("no item %s", name);
    return NULL;
}

static void test_healthy(void **state)
{
    static const char *const items[] = {
        "inventory.gpus", "inventory.nccl", "bw.gpu_to_gpu_write_ce", "bw.gpu_to_gpu_bidir_write_ce",
        "bw.host_to_gpu_ce", "bw.gpu_to_host_ce", "bw.gpu_local_ce", "lat.gpu_to_gpu_chase",
        "lat.host_to_gpu_chase", "integrity", "allreduce.small", "allreduce.large", "doctor"};
    psc__run_t r;
    json_t *doc, *check, *fig;

    (void)state;
    r = psc__run((const char *[]){"check", SMALL, "--json", psc__path("c.json"), NULL}, env);
    assert_int_equal(r.rc, 0);
    for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++)
        expect_item(&r, "PASS", items[i], NULL);
    expect_item(&r, "SKIP", "inventory.nvlinks", "not known here"); /* no NVML on the fake */
    assert_non_null(strstr(r.out, "\ncheck: HEALTHY (13 passed, 0 failed, 6 skipped) in "));
    doc = load_json(psc__path("c.json"));
    assert_string_equal(json_string_value(json_object_get(doc, "command")), "check");
    check = json_object_get(doc, "check");
    assert_string_equal(json_string_value(json_object_get(check, "verdict")), "healthy");
    assert_int_equal(json_integer_value(json_object_get(check, "exit_code")), 0);
    assert_string_equal(json_string_value(json_object_get(check, "bounds")), "auto");
    assert_true(json_is_object(json_object_get(check, "stages_s")));
    assert_int_equal(json_array_size(json_object_get(check, "items")), 19);
    fig = json_array_get(json_object_get(json_item(doc, "bw.gpu_to_gpu_write_ce"), "figures"), 0);
    assert_string_equal(json_string_value(json_object_get(fig, "key")), "gpu0->gpu1@4KiB");
    assert_true(json_number_value(json_object_get(fig, "value")) > 0);
    assert_true(json_is_array(json_object_get(fig, "bounds")));
    assert_true(json_is_null(json_object_get(fig, "baseline")));
    fig = json_array_get(json_object_get(json_item(doc, "integrity"), "figures"), 0);
    assert_string_equal(json_string_value(json_object_get(fig, "key")), "paths");
    assert_true(json_number_value(json_object_get(fig, "value")) >= 50); /* every path of every test */
    json_decref(doc);
    psc__free(&r);
}

/* Bounds from a file: a path below its bound, fewer GPUs than the node should have; each names its item. */
static void test_bounds_missed(void **state)
{
    psc__run_t r;
    json_t *doc, *b;

    (void)state;
    write_text(psc__path("e"), "node gpus >= 4\nbw gpu_to_gpu_write_ce * >= 100000 GB/s\nlat host_to_gpu_chase * <= "
                               "1 ms\n");
    r = psc__run((const char *[]){"check", SMALL, "--expect", psc__path("e"), "--json", psc__path("c.json"), NULL},
                 env);
    assert_int_equal(r.rc, 1);
    expect_item(&r, "FAIL", "inventory.gpus", "node 2 misses >= 4");
    expect_item(&r, "FAIL", "bw.gpu_to_gpu_write_ce", "misses >= 1e+05 GB/s");
    expect_item(&r, "PASS", "bw.host_to_gpu_ce", "(no bound)");
    expect_item(&r, "PASS", "lat.host_to_gpu_chase", "(2 bounds met)");
    assert_non_null(strstr(r.out, "\ncheck: UNHEALTHY (11 passed, 2 failed, 6 skipped) in "));
    doc = load_json(psc__path("c.json"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "check"), "verdict")), "unhealthy");
    b = json_array_get(json_object_get(json_array_get(json_object_get(json_item(doc, "bw.gpu_to_gpu_write_ce"),
                                                                      "figures"), 1), "bounds"), 0);
    assert_string_equal(json_string_value(json_object_get(b, "op")), ">=");
    assert_true(json_number_value(json_object_get(b, "bound")) == 100000);
    assert_true(json_is_false(json_object_get(b, "met")));
    assert_non_null(strstr(json_string_value(json_object_get(b, "rule")), ":2"));
    json_decref(doc);
    psc__free(&r);
}

/* One GPU: the pairs' items and the all-reduce are skipped, saying why; too few for the expectation fails. */
static void test_one_gpu(void **state)
{
    static const char *const one[] = {FAKE_ENV, NCCL, "FAKE_CUDA_COUNT=1", NULL};
    psc__run_t r;

    (void)state;
    r = psc__run((const char *[]){"check", SMALL, NULL}, one);
    assert_int_equal(r.rc, 0);
    expect_item(&r, "SKIP", "bw.gpu_to_gpu_write_ce", "needs 2 GPUs");
    expect_item(&r, "SKIP", "lat.gpu_to_gpu_chase", "needs 2 GPUs");
    expect_item(&r, "SKIP", "allreduce.large", "one GPU");
    expect_item(&r, "PASS", "bw.gpu_local_ce", "gpu0->gpu0@4KiB");
    psc__free(&r);
    write_text(psc__path("e"), "node gpus >= 2\n");
    r = psc__run((const char *[]){"check", SMALL, "--expect", psc__path("e"), NULL}, one);
    assert_int_equal(r.rc, 1);
    expect_item(&r, "FAIL", "inventory.gpus", "node 1 misses >= 2");
    psc__free(&r);
}

/* Wrong bytes: on the measured copies (every bw item and the doctor's p2p_corrupts), and in the integrity pass. */
static void test_wrong_bytes(void **state)
{
    psc__run_t r;
    json_t *doc, *figs;

    (void)state;
    r = psc__run((const char *[]){"check", SMALL, "--test-corrupt-offset", "100", NULL}, env);
    assert_int_equal(r.rc, 1);
    expect_item(&r, "FAIL", "bw.gpu_to_gpu_write_ce", "wrong data");
    expect_item(&r, "FAIL", "bw.host_to_gpu_ce", "first at offset 100");
    expect_item(&r, "FAIL", "doctor", "p2p_corrupts: peer-to-peer from gpu0 to gpu1");
    expect_item(&r, "PASS", "integrity", NULL);
    psc__free(&r);
    r = psc__run((const char *[]){"check", SMALL, "--test-fault", "flip:0", "--json", psc__path("c.json"), NULL}, env);
    assert_int_equal(r.rc, 1);
    expect_item(&r, "FAIL", "integrity", "failed_paths");
    expect_item(&r, "PASS", "bw.gpu_to_gpu_write_ce", NULL);
    doc = load_json(psc__path("c.json"));
    figs = json_object_get(json_item(doc, "integrity"), "figures");
    assert_string_equal(json_string_value(json_object_get(json_array_get(figs, 2), "key")), "bad_bytes");
    assert_true(json_number_value(json_object_get(json_array_get(figs, 2), "value")) > 0);
    assert_true(json_is_false(json_object_get(json_array_get(figs, 2), "ok")));
    json_decref(doc);
    psc__free(&r);
}

/* No NCCL: the all-reduce is skipped with the reason, the node healthy; unless the expectation wants NCCL. */
static void test_no_nccl(void **state)
{
    static const char *const none[] = {FAKE_ENV, NO_NCCL, NULL};
    psc__run_t r;

    (void)state;
    r = psc__run((const char *[]){"check", SMALL, NULL}, none);
    assert_int_equal(r.rc, 0);
    expect_item(&r, "SKIP", "allreduce.small", "/nonexistent/libnccl.so.2");
    expect_item(&r, "SKIP", "allreduce.large", "/nonexistent/libnccl.so.2");
    expect_item(&r, "PASS", "inventory.nccl", "node 0 (no bound)");
    psc__free(&r);
    write_text(psc__path("e"), "node nccl = yes\n");
    r = psc__run((const char *[]){"check", SMALL, "--expect", psc__path("e"), NULL}, none);
    assert_int_equal(r.rc, 1);
    expect_item(&r, "FAIL", "inventory.nccl", "node 0 misses = 1");
    psc__free(&r);
}

static void test_cannot_check(void **state)
{
    (void)state;
    psc__expect_error((const char *[]){"check", NULL}, (const char *const[]){"P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1",
                      NULL}, 3, "no NVIDIA driver");
    psc__expect_error((const char *[]){"check", NULL}, (const char *const[]){FAKE_ENV, "FAKE_CUDA_MODE=nodevice",
                      NULL}, 3, "p2pscope: ");
}

/* The earlier check's figures with their spread set: lo..hi, or value, lo and hi all v for the item named. */
static void edit_baseline(const char *from, const char *to, const char *item, double v)
{
    json_t *doc = load_json(from), *it, *f;
    size_t i, k;

    json_array_foreach(json_object_get(json_object_get(doc, "check"), "items"), i, it)
        json_array_foreach(json_object_get(it, "figures"), k, f) {
            if (!item && json_integer_value(json_object_get(f, "n")) > 0) {
                json_object_set_new(f, "lo", json_real(0));
                json_object_set_new(f, "hi", json_real(1e12));
            }
            if (item && strcmp(json_string_value(json_object_get(it, "name")), item) == 0) {
                json_object_set_new(f, "value", json_real(v));
                json_object_set_new(f, "lo", json_real(v));
                json_object_set_new(f, "hi", json_real(v));
            }
        }
    assert_int_equal(json_dump_file(doc, to, 0), 0);
    json_decref(doc);
}

static void test_baseline(void **state)
{
    psc__run_t r;
    json_t *doc;

    (void)state;
    r = psc__run((const char *[]){"check", SMALL, "--json", psc__path("old.json"), NULL}, env);
    assert_int_equal(r.rc, 0);
    psc__free(&r);
    /* within the noise (every interval of the baseline overlaps): healthy */
    edit_baseline(psc__path("old.json"), psc__path("wide.json"), NULL, 0);
    r = psc__run((const char *[]){"check", SMALL, "--baseline", psc__path("wide.json"), NULL}, env);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, ", against the baseline "));
    psc__free(&r);
    /* a path that was far faster before: beyond the noise, more than 5 % worse */
    edit_baseline(psc__path("wide.json"), psc__path("fast.json"), "bw.gpu_local_ce", 1e6);
    r = psc__run((const char *[]){"check", SMALL, "--baseline", psc__path("fast.json"), "--json", psc__path("c.json"),
                                  NULL}, env);
    assert_int_equal(r.rc, 1);
    expect_item(&r, "FAIL", "bw.gpu_local_ce", "against the baseline's 1e+06");
    doc = load_json(psc__path("c.json"));
    assert_true(json_is_true(json_object_get(json_object_get(json_array_get(json_object_get(
        json_item(doc, "bw.gpu_local_ce"), "figures"), 0), "baseline"), "fails")));
    json_decref(doc);
    psc__free(&r);
    /* and one that was far slower: better is no failure */
    edit_baseline(psc__path("wide.json"), psc__path("slow.json"), "bw.gpu_local_ce", 1e-3);
    r = psc__run((const char *[]){"check", SMALL, "--baseline", psc__path("slow.json"), NULL}, env);
    assert_int_equal(r.rc, 0);
    psc__free(&r);
}

static void test_refused(void **state)
{
    (void)state;
    write_text(psc__path("other.json"), "{\"command\": \"bw\", \"tests\": []}\n");
    write_text(psc__path("bad.expect"), "node gpus > 2\n");
    psc__expect_error((const char *[]){"check", "--seconds", "3", NULL}, env, 2, "--seconds");
    psc__expect_error((const char *[]){"check", "-t", "gpu_local_ce", NULL}, env, 2, "does not go with check");
    psc__expect_error((const char *[]){"bw", "--baseline", "x.json", NULL}, env, 2, "--baseline");
    psc__expect_error((const char *[]){"check", "--baseline", "", NULL}, env, 2, "empty --baseline");
    psc__expect_error((const char *[]){"check", "--svg", psc__path("d"), NULL}, env, 2, "--svg");
    psc__expect_error((const char *[]){"check", "--expect", psc__path("bad.expect"), NULL}, env, 2,
                      "bad.expect:1: bad operator '>'");
    psc__expect_error((const char *[]){"check", "--baseline", psc__path("missing.json"), NULL}, env, 2,
                      "missing.json");
    psc__expect_error((const char *[]){"check", "--baseline", psc__path("other.json"), NULL}, env, 2,
                      "not a check's JSON");
}

/* Another node's baseline is refused before anything is measured. */
static void test_baseline_other_node(void **state)
{
    psc__run_t r;
    json_t *doc;

    (void)state;
    r = psc__run((const char *[]){"check", SMALL, "--json", psc__path("old.json"), NULL}, env);
    assert_int_equal(r.rc, 0);
    psc__free(&r);
    doc = load_json(psc__path("old.json"));
    json_object_set_new(json_array_get(json_object_get(doc, "devices"), 1), "pci_bus_id", json_string("0000:99:00.0"));
    assert_int_equal(json_dump_file(doc, psc__path("other.json"), 0), 0);
    json_decref(doc);
    psc__expect_error((const char *[]){"check", "--baseline", psc__path("other.json"), NULL}, env, 2,
                      "another node (GPU 1's pci_bus_id is 0000:99:00.0 there, 0000:11:00.0 here)");
}

static void test_html(void **state)
{
    psc__run_t r;
    char *page = NULL;
    size_t len = 0;
    FILE *f;

    (void)state;
    r = psc__run((const char *[]){"check", SMALL, "--html", psc__path("c.html"), NULL}, env);
    assert_int_equal(r.rc, 0);
    f = fopen(psc__path("c.html"), "r");
    assert_non_null(f);
    assert_int_equal(getdelim(&page, &len, '\0', f) > 0, 1);
    fclose(f);
    assert_non_null(strstr(page, "HEALTHY: 13 passed, 0 failed, 6 skipped"));
    assert_non_null(strstr(page, "<td>bw.gpu_to_gpu_write_ce</td>"));
    free(page);
    psc__free(&r);
}

/*
 * --fleet alone: a build without MPI refuses it in one line (CI's clang build); one with MPI runs a fleet of this
 * node, one line for it beside the medians, exit 0 (a node that cannot check is unhealthy: 1). The fleet's options
 * go with check --fleet only.
 */
static void test_fleet_alone(void **state)
{
    psc__run_t r;

    (void)state;
    psc__expect_error((const char *[]){"bw", "--fleet", NULL}, env, 2, "--fleet");
    psc__expect_error((const char *[]){"check", "--fleet-bound", "5", NULL}, env, 2,
                      "--fleet-bound goes with check --fleet");
    psc__expect_error((const char *[]){"check", "-T", "5", NULL}, env, 2, "-T/--timeout goes with ipc and check --fleet");
    psc__expect_error((const char *[]){"check", "--fleet", "--fleet-bound", "0", NULL}, env, 2,
                      "accepted 0.1 to 100");
    if (!P2PSCOPE_HAVE_MPI) {
        psc__expect_error((const char *[]){"check", "--fleet", SMALL, NULL}, env, 2,
                          "check --fleet needs MPI, and this p2pscope was built without it");
        return;
    }
    r = psc__run((const char *[]){"check", "--fleet", SMALL, NULL}, env);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "\nHEALTHY         0  "));
    assert_non_null(strstr(r.out, " over 1 node, bound 5.0 %\n"));
    assert_non_null(strstr(r.out, "\nfleet: HEALTHY (1 node: 1 healthy, 0 outliers, 0 unhealthy, 0 unreachable) in "));
    psc__free(&r);
    r = psc__run((const char *[]){"check", "--fleet", SMALL, NULL},
                 (const char *const[]){FAKE_ENV, "FAKE_CUDA_MODE=nodevice", NCCL, NULL});
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.out, "\nUNHEALTHY       0  "));
    assert_non_null(strstr(r.out, "its check ended with exit code 3: p2pscope: no GPU"));
    psc__free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_healthy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bounds_missed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_gpu, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_nccl, setup, teardown),
        cmocka_unit_test(test_cannot_check),
        cmocka_unit_test_setup_teardown(test_baseline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_baseline_other_node, setup, teardown),
        cmocka_unit_test_setup_teardown(test_html, setup, teardown),
        cmocka_unit_test(test_fleet_alone),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
