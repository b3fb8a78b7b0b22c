/*
 * `p2pscope p2pbw` on real GPUs: p2pBandwidthLatencyTest's layout with every
 * GPU (an n x n matrix under each title, every bandwidth and latency cell a
 * figure, the local copy on the diagonal above any staged GPU -> GPU copy,
 * the staged copies slower than peer copies where the GPUs reach each
 * other), --p2p_read's matrices, and --json's figures equal to the text's.
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

#define MAXG 8

/* The command's stdout (malloc'd) and its exit code. */
static char *run_cli(const char *args, int *rc)
{
    char cmd[1024], *out = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&out, &len), *p;
    int c;

    snprintf(cmd, sizeof(cmd), "%s p2pbw %s", P2PSCOPE_BIN, args);
    assert_non_null(p = popen(cmd, "r"));
    while ((c = fgetc(p)) != EOF)
        fputc(c, o);
    *rc = pclose(p);
    *rc = WIFEXITED(*rc) ? WEXITSTATUS(*rc) : -1;
    fclose(o);
    return out;
}

/* The n x n matrix under the line title (corner: "   D\\D" or "   GPU"); each cell a figure (N/A fails) into v. */
static void matrix(const char *out, const char *title, const char *corner, int n, double v[MAXG][MAXG])
{
    const char *p = strstr(out, title);

    assert_non_null(p);
    p += strlen(title);
    assert_true(strncmp(p, corner, strlen(corner)) == 0);
    p = strchr(p, '\n') + 1;
    for (int r = 0; r < n; r++, p = strchr(p, '\n') + 1) {
        const char *at = p + 6; /* the sample's "%6d" then "%6.02f " a cell: 7 wide up to 999.99, wider above */
        char *end;

        assert_int_equal(atoi(p), r);
        assert_true(strcspn(p, "\n") >= (size_t)(7 + 7 * n));
        for (int c = 0; c < n; c++, at = end) {
            v[r][c] = strtod(at, &end);
            assert_true(end != at && end - p <= (long)strcspn(p, "\n")); /* a figure on this line, not N/A */
            assert_true(v[r][c] > 0);
        }
    }
}

/* What the text's peer lines say: "Device=a CAN Access Peer Device=b". */
static int can_access(const char *out, int a, int b)
{
    char line[64];

    snprintf(line, sizeof(line), "\nDevice=%d CAN Access Peer Device=%d\n", a, b);
    return strstr(out, line) != NULL;
}

static void test_text(void **state)
{
    const int n = psc_device_count(g_ctx) < MAXG ? psc_device_count(g_ctx) : MAXG;
    double off[MAXG][MAXG], on[MAXG][MAXG], bi[MAXG][MAXG], lat[MAXG][MAXG];
    int rc;
    char *out = run_cli("--numElems=16000000", &rc);

    (void)state;
    assert_int_equal(rc, 0);
    assert_true(strncmp(out, "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\nDevice: 0, ", 58) == 0);
    assert_non_null(strstr(out, "\nP2P Connectivity Matrix\n     D\\D     0"));
    matrix(out, "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n", "   D\\D", n, off);
    matrix(out, "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n", "   D\\D", n, on);
    matrix(out, "Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n", "   D\\D", n, bi);
    matrix(out, "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)\n", "   D\\D", n, bi);
    matrix(out, "P2P=Disabled Latency Matrix (us)\n", "   GPU", n, lat);
    matrix(out, "P2P=Enabled Latency (P2P Writes) Matrix (us)\n", "   GPU", n, lat);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (i != j)
                assert_true(off[i][i] > off[i][j]); /* HBM's local copy beats a copy staged through the host */
            if (i != j && can_access(out, i, j))
                assert_true(on[i][j] > off[i][j]);
        }
    assert_null(strstr(out, "(P2P Reads)"));
    assert_non_null(strstr(out, "\nNOTE: The CUDA Samples are not meant for performance measurements."));
    free(out);
}

static void test_read_and_json(void **state)
{
    const int n = psc_device_count(g_ctx) < MAXG ? psc_device_count(g_ctx) : MAXG;
    int rc;
    char *out = run_cli("--p2p_read --numElems=4000000 --json", &rc);
    json_t *doc = json_loads(out, 0, NULL), *p, *m;

    (void)state;
    assert_int_equal(rc, 0);
    assert_non_null(doc);
    p = json_object_get(doc, "p2pbw");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "options"), "bytes_per_copy")), 16000000);
    assert_int_equal(json_array_size(json_object_get(p, "failed")), 0);
    m = json_object_get(json_object_get(json_object_get(p, "matrices"), "unidirectional_p2p_enabled_read_bandwidth_gbs"),
                        "values");
    assert_int_equal(json_array_size(m), n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            assert_true(json_real_value(json_array_get(json_array_get(m, (size_t)i), (size_t)j)) > 0);
    m = json_object_get(json_object_get(json_object_get(p, "matrices"), "p2p_disabled_latency_gpu_us"), "values");
    for (int i = 0; i < n; i++) /* a 16-byte copy takes more than 0.1 us and less than a millisecond */
        for (int j = 0; j < n; j++) {
            const double us = json_real_value(json_array_get(json_array_get(m, (size_t)i), (size_t)j));

            assert_true(us > 0.1 && us < 1000);
        }
    json_decref(doc);
    free(out);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_text),
    cmocka_unit_test(test_read_and_json),
};

PSC_GPU_TEST_MAIN(tests)
