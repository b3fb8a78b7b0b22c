/*
 * p2pscope check on a real machine: healthy by its own links' bounds (exit 0), within its time budget (20 s on
 * two GPUs, 40 s on up to eight), its JSON's shape (the items every node has, figures with bounds, the stages'
 * times), healthy again against its own JSON as the baseline, and unhealthy (exit 1, the item named) when the
 * measured copies are made to write a wrong byte. Skips (77) only without a driver or a GPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "gpu_common.h"

static char g_dir[] = "/tmp/psc-gpu-check-XXXXXX";

/* The binary with args, stdout into out (in g_dir); its exit code, the text shown when it is not want. */
static int run_check(const char *args, const char *out, int want)
{
    char cmd[1024];
    int st;

    snprintf(cmd, sizeof(cmd), "%s check %s > %s/%s 2>&1", P2PSCOPE_BIN, args, g_dir, out);
    st = system(cmd);
    st = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (st != want) {
        snprintf(cmd, sizeof(cmd), "cat %s/%s >&2", g_dir, out);
        if (system(cmd) != 0)
            fprintf(stderr, "(no output)\n");
    }
    return st;
}

static json_t *load(const char *name)
{
    char path[256];
    json_error_t e;
    json_t *d;

    snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    d = json_load_file(path, 0, &e);
    if (!d)
        fprintf(stderr, "%s: %s\n", path, e.text);
    assert_non_null(d);
    return d;
}

static void test_healthy_in_time(void **state)
{
    char args[512];
    int ngpu = psc_device_count(g_ctx);
    json_t *doc, *check, *items, *it;
    size_t i, measured = 0;

    (void)state;
    snprintf(args, sizeof(args), "--json=%s/c.json", g_dir);
    assert_int_equal(run_check(args, "c.txt", 0), 0);
    doc = load("c.json");
    check = json_object_get(doc, "check");
    assert_string_equal(json_string_value(json_object_get(check, "verdict")), "healthy");
    fprintf(stderr, "check: %.1f s on %d GPU%s\n", json_number_value(json_object_get(check, "check_s")), ngpu,
            ngpu == 1 ? "" : "s");
    if (ngpu >= 2)
        assert_true(json_number_value(json_object_get(check, "check_s")) <= (ngpu <= 2 ? 20.0 : 40.0));
    items = json_object_get(check, "items");
    assert_int_equal(json_array_size(items), 19);
    json_array_foreach(items, i, it) {
        const char *name = json_string_value(json_object_get(it, "name"));
        const char *st = json_string_value(json_object_get(it, "state"));
        json_t *figs = json_object_get(it, "figures"), *f;
        size_t k;

        assert_non_null(name);
        assert_true(strcmp(st, "pass") == 0 || strcmp(st, "skip") == 0);
        assert_non_null(json_string_value(json_object_get(it, "line")));
        json_array_foreach(figs, k, f) {
            assert_true(json_is_array(json_object_get(f, "bounds")));
            measured += strncmp(name, "bw.", 3) == 0 && json_integer_value(json_object_get(f, "n")) > 0;
        }
        /* the pairs' items run wherever there are two GPUs, the all-reduce wherever NCCL loads too */
        if (ngpu >= 2 && strncmp(name, "bw.gpu_to_gpu", 13) == 0)
            assert_string_equal(st, "pass");
    }
    assert_true(measured >= (size_t)(3 * ngpu)); /* host -> GPU, GPU -> host, local: each GPU */
    json_decref(doc);
}

/* The same node against its own check a moment ago: within the noise. */
static void test_baseline_self(void **state)
{
    char args[512];

    (void)state;
    snprintf(args, sizeof(args), "--baseline %s/c.json --json=%s/c2.json", g_dir, g_dir);
    assert_int_equal(run_check(args, "c2.txt", 0), 0);
}

/* A wrong byte in every measured copy: unhealthy, the paths' items name it. */
static void test_wrong_byte(void **state)
{
    char path[256], line[1024];
    FILE *f;
    int found = 0;

    (void)state;
    assert_int_equal(run_check("-s 64M --no-load --test-corrupt-offset 4097", "w.txt", 1), 1);
    snprintf(path, sizeof(path), "%s/w.txt", g_dir);
    f = fopen(path, "r");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f))
        found |= strncmp(line, "FAIL  bw.gpu_local_ce", 21) == 0 && strstr(line, "wrong data") != NULL;
    fclose(f);
    assert_true(found);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[128];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_healthy_in_time),
    cmocka_unit_test(test_baseline_self),
    cmocka_unit_test(test_wrong_byte),
};

int main(void)
{
    psc_status_t st;
    int rc;

    g_ctx = psc_test_open(&st);
    if (!g_ctx)
        return psc_test_skippable(st) ? PSC_TEST_SKIP : 1;
    rc = cmocka_run_group_tests(tests, setup, teardown);
    psc_context_destroy(g_ctx);
    return rc;
}
