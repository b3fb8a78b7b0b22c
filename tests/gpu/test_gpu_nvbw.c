/*
 * `p2pscope nvbandwidth` on real GPUs: device_local_copy (valid on one GPU)
 * in nvbandwidth 0.8's text layout (header, "Running", the title, a column
 * per GPU, one row, every cell a figure, the SUM line equal to their sum),
 * host_to_device_memcpy_ce in its -j JSON, and on two GPUs or more
 * device_to_device_memcpy_read_ce's square matrix with N/A on the diagonal.
 */
#define _GNU_SOURCE
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <jansson.h>

#include "gpu_common.h"

/* The command's stdout (malloc'd) and its exit code. */
static char *run_cli(const char *args, int *rc)
{
    char cmd[1024], *out = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&out, &len), *p;
    int c;

    snprintf(cmd, sizeof(cmd), "%s nvbandwidth %s", P2PSCOPE_BIN, args);
    assert_non_null(p = popen(cmd, "r"));
    while ((c = fgetc(p)) != EOF)
        fputc(c, o);
    *rc = pclose(p);
    *rc = WIFEXITED(*rc) ? WEXITSTATUS(*rc) : -1;
    fclose(o);
    return out;
}

/* The matrix below title in out: rows x n cells, each a figure above 0 (or N/A where na(row, col)); their sum. */
static double matrix(const char *out, const char *title, int rows, int n, int diagonal_na)
{
    const char *p = strstr(out, title);
    double sum = 0;

    assert_non_null(p);
    p = strchr(p, '\n') + 1;
    for (int c = 0; c < n; c++) /* the header: "  " and the GPU indexes, 10 wide */
        assert_int_equal(atoi(p + 2 + 10 * c), c);
    p = strchr(p, '\n') + 1;
    for (int r = 0; r < rows; r++, p = strchr(p, '\n') + 1) {
        assert_int_equal((int)strcspn(p, "\n"), 2 + 10 * n);
        assert_int_equal(atoi(p), r);
        for (int c = 0; c < n; c++) {
            const char *cell = p + 2 + 10 * c;

            if (diagonal_na && r == c) {
                assert_true(strncmp(cell, "       N/A", 10) == 0);
                continue;
            }
            if (strncmp(cell, "       N/A", 10) == 0) /* a pair without peer access */
                continue;
            assert_true(strtod(cell, NULL) > 1.0);
            sum += strtod(cell, NULL);
        }
    }
    assert_int_equal(*p, '\n'); /* a blank line, then SUM */
    return sum;
}

static void test_local_copy_text(void **state)
{
    const int n = psc_device_count(g_ctx);
    int rc;
    char *out = run_cli("-t device_local_copy -b 64 -i 3", &rc);
    const char *sum;
    double cells;

    (void)state;
    assert_int_equal(rc, 0);
    assert_true(strncmp(out, "nvbandwidth Version: v0.8\nBuilt from Git version: p2pscope ", 59) == 0);
    assert_non_null(strstr(out, "\nDevice 0: "));
    assert_non_null(strstr(out, "\nRunning device_local_copy.\nmemcpy local GPU(column) bandwidth (GB/s)\n"));
    cells = matrix(out, "memcpy local GPU(column) bandwidth (GB/s)\n", 1, n, 0);
    assert_non_null(sum = strstr(out, "\nSUM device_local_copy "));
    assert_true(fabs(strtod(sum + strlen("\nSUM device_local_copy "), NULL) - cells) < 0.011 * n);
    assert_non_null(strstr(out, "\nNOTE: The reported results may not reflect the full capabilities"));
    free(out);
}

static void test_host_to_device_json(void **state)
{
    const int n = psc_device_count(g_ctx);
    int rc;
    char *out = run_cli("-j -t host_to_device_memcpy_ce -b 64", &rc);
    json_t *doc = json_loads(out, 0, NULL), *t, *m;

    (void)state;
    assert_int_equal(rc, 0);
    assert_non_null(doc);
    t = json_array_get(json_object_get(json_object_get(doc, "nvbandwidth"), "testcases"), 0);
    assert_string_equal(json_string_value(json_object_get(t, "name")), "host_to_device_memcpy_ce");
    assert_string_equal(json_string_value(json_object_get(t, "status")), "Passed");
    m = json_object_get(t, "bandwidth_matrix");
    assert_int_equal(json_array_size(m), 1);
    assert_int_equal(json_array_size(json_array_get(m, 0)), n);
    for (int c = 0; c < n; c++)
        assert_true(strtod(json_string_value(json_array_get(json_array_get(m, 0), (size_t)c)), NULL) > 1.0);
    assert_true(json_real_value(json_object_get(t, "sum")) > 1.0);
    json_decref(doc);
    free(out);
}

static void test_peer_read_matrix(void **state)
{
    const int n = psc_device_count(g_ctx);
    int rc;
    char *out;

    (void)state;
    if (n < 2) {
        skip();
        return;
    }
    out = run_cli("-t device_to_device_memcpy_read_ce -b 64", &rc);
    assert_int_equal(rc, 0);
    if (strstr(out, "\nWaived: \n")) { /* no pair with peer access: nvbandwidth waives it too */
        free(out);
        return;
    }
    matrix(out, "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)\n", n, n, 1);
    free(out);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_local_copy_text),
    cmocka_unit_test(test_host_to_device_json),
    cmocka_unit_test(test_peer_read_matrix),
};

PSC_GPU_TEST_MAIN(tests)
