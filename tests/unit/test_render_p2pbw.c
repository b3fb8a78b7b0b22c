/*
 * `p2pscope p2pbw`'s mapping and rendering from hand-built runs: which tests
 * each option runs (psc_p2pbw_bw_tests, psc_p2pbw_lat_tests, one GPU),
 * which case and figure each matrix cell takes (write: row -> column; read:
 * column -> row; both ways: the pair's aggregate on both sides; diagonal:
 * the local copy's bytes read and written; latency: the 16-byte copy's GPU
 * or CPU median in us; the staged copy where the GPUs cannot reach each
 * other; --sm_copy's tests; N/A for failed or unmeasured cells), the
 * sample's text line for line with known numbers, and the JSON's figures.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "report/p2pbw_map.h"
#include "report/render_p2pbw.h"

#define MAXR 32

typedef struct {
    psc_p2pbw_t r;
    psc_bw_suite_t bw;
    psc_lat_suite_t lat;
    psc_suite_test_t bw_tests[8], lat_tests[8];
    psc_bw_result_t bres[MAXR];
    psc_lat_result_t lres[8];
} fixture_t;

static int bt(const char *name)
{
    psc_bw_test_t t = -1;

    assert_int_equal(psc_bw_test_from_name(name, &t), PSC_OK);
    return t;
}

static int lt(const char *name)
{
    psc_lat_test_t t = -1;

    assert_int_equal(psc_lat_test_from_name(name, &t), PSC_OK);
    return t;
}

/* A bandwidth test with one passed case: src -> dst (a single transfer at gbs), or both ways (aggregate gbs). */
static psc_bw_result_t *bw_case(fixture_t *f, const char *name, int src, int dst, int bidir, double gbs)
{
    psc_suite_test_t *t = NULL;
    psc_bw_result_t *r = &f->bres[f->bw.nresults];

    for (int k = 0; k < f->bw.ntests; k++)
        if (f->bw_tests[k].test == bt(name))
            t = &f->bw_tests[k];
    if (!t) {
        t = &f->bw_tests[f->bw.ntests++];
        t->test = bt(name);
        t->first = f->bw.nresults;
    }
    assert_int_equal(t->first + t->n, f->bw.nresults); /* a test's cases are added together */
    f->bw.nresults++;
    t->n++;
    r->c.test = t->test;
    r->c.src = src;
    r->c.dst = dst;
    r->c.nxfer = bidir ? 2 : 1;
    r->c.xfer[0].src = src;
    r->c.xfer[0].dst = dst;
    r->c.xfer[1].src = dst;
    r->c.xfer[1].dst = src;
    r->xfer_gbs[0] = bidir ? gbs / 3 : gbs; /* a bidirectional cell is the aggregate, not a transfer */
    r->xfer_gbs[1] = gbs / 3;
    r->stats.median = bidir ? gbs : gbs + 1000; /* a single transfer's cell is its own figure */
    return r;
}

/* A latency test with one passed case src -> dst: 4 B and 16 B copies; 16 B: gpu_us and cpu_us. */
static psc_lat_result_t *lat_case(fixture_t *f, const char *name, int src, int dst, double gpu_us, double cpu_us)
{
    psc_lat_result_t *r = &f->lres[f->lat.nresults];
    psc_suite_test_t *t = &f->lat_tests[f->lat.ntests++];

    assert_true(f->lat.ntests <= 8 && f->lat.nresults < 8);

    t->test = lt(name);
    t->first = f->lat.nresults++;
    t->n = 1;
    r->c.test = t->test;
    r->c.src = src;
    r->c.dst = dst;
    r->c.issuer = src;
    r->nsizes = 2;
    r->sizes[0] = 4;
    r->lat[0].p50 = r->submit[0].p50 = 999000;
    r->sizes[1] = 16;
    r->lat[1].p50 = gpu_us * 1e3;
    r->submit[1].p50 = cpu_us * 1e3;
    return r;
}

/* Two GPUs that reach each other, every figure distinct. */
static void init(fixture_t *f, int ndev)
{
    memset(f, 0, sizeof(*f));
    f->r.ndev = ndev;
    f->r.bw = &f->bw;
    f->r.lat = &f->lat;
    f->bw.ndev = f->lat.ndev = ndev;
    f->bw.devices[1] = f->lat.devices[1] = 1;
    f->bw.tests = f->bw_tests;
    f->bw.results = f->bres;
    f->lat.tests = f->lat_tests;
    f->lat.results = f->lres;
    for (int i = 0; i < ndev; i++)
        for (int j = 0; j < ndev; j++)
            f->r.can_access[i][j] = 1;
    bw_case(f, "gpu_local_ce", 0, 0, 0, 100);
    if (ndev > 1) {
        bw_case(f, "gpu_local_ce", 1, 1, 0, 101);
        bw_case(f, "gpu_to_gpu_p2p_off_ce", 0, 1, 0, 10);
        bw_case(f, "gpu_to_gpu_p2p_off_ce", 1, 0, 0, 11);
        bw_case(f, "gpu_to_gpu_write_ce", 0, 1, 0, 20);
        bw_case(f, "gpu_to_gpu_write_ce", 1, 0, 0, 21);
        bw_case(f, "gpu_to_gpu_read_ce", 0, 1, 0, 30);
        bw_case(f, "gpu_to_gpu_read_ce", 1, 0, 0, 31);
        bw_case(f, "gpu_to_gpu_write_sm", 0, 1, 0, 40);
        bw_case(f, "gpu_to_gpu_write_sm", 1, 0, 0, 41);
        bw_case(f, "gpu_to_gpu_bidir_p2p_off_ce", 0, 1, 1, 50);
        bw_case(f, "gpu_to_gpu_bidir_write_ce", 0, 1, 1, 60);
        bw_case(f, "gpu_to_gpu_bidir_write_sm", 0, 1, 1, 70);
    }
    lat_case(f, "gpu_local_copy_ce", 0, 0, 1.5, 2.5);
    if (ndev > 1) {
        lat_case(f, "gpu_local_copy_ce", 1, 1, 1.25, 2.25);
        lat_case(f, "gpu_to_gpu_copy_p2p_off_ce", 0, 1, 16, 17);
        lat_case(f, "gpu_to_gpu_copy_p2p_off_ce", 1, 0, 18, 19);
        lat_case(f, "gpu_to_gpu_copy_ce", 0, 1, 2.25, 3.5);
        lat_case(f, "gpu_to_gpu_copy_ce", 1, 0, 2.75, 3.75);
        lat_case(f, "gpu_to_gpu_copy_read_ce", 1, 0, 4.25, 5.5); /* 1's data pulled by 0 */
        lat_case(f, "gpu_to_gpu_copy_sm", 0, 1, 6.25, 7.5);
    }
}

static const psc_p2pbw_matrix_t *mx(const char *key)
{
    for (int i = 0; i < psc_p2pbw_matrix_count(); i++)
        if (strcmp(psc_p2pbw_matrix_at(i)->key, key) == 0)
            return psc_p2pbw_matrix_at(i);
    fail_msg("no matrix %s", key);
    return NULL;
}

/* The cell, or -1 for N/A. */
static double cell(const fixture_t *f, const char *key, int sm, int row, int col)
{
    double v = -1;

    return psc_p2pbw_cell(mx(key), &f->r, sm, row, col, &v) ? v : -1;
}

static void test_tests_run(void **state)
{
    psc_p2pbw_opts_t o = {0};
    const char *n[8];

    (void)state;
    assert_int_equal(psc_p2pbw_bw_tests(&o, 2, n, 8), 5);
    assert_string_equal(n[0], "gpu_local_ce");
    assert_string_equal(n[1], "gpu_to_gpu_p2p_off_ce");
    assert_string_equal(n[2], "gpu_to_gpu_write_ce");
    assert_string_equal(n[3], "gpu_to_gpu_bidir_p2p_off_ce");
    assert_string_equal(n[4], "gpu_to_gpu_bidir_write_ce");
    o.sm_copy = o.p2p_read = 1;
    assert_int_equal(psc_p2pbw_bw_tests(&o, 2, n, 8), 6);
    assert_string_equal(n[0], "gpu_local_ce"); /* the diagonal stays a copy-engine copy, as the sample's */
    assert_string_equal(n[1], "gpu_to_gpu_p2p_off_ce");
    assert_string_equal(n[2], "gpu_to_gpu_write_sm");
    assert_string_equal(n[3], "gpu_to_gpu_read_sm");
    assert_string_equal(n[5], "gpu_to_gpu_bidir_write_sm");
    assert_int_equal(psc_p2pbw_bw_tests(&o, 1, n, 8), 1); /* one GPU: the diagonal alone */
    assert_string_equal(n[0], "gpu_local_ce");
    assert_int_equal(psc_p2pbw_bw_tests(&o, 2, n, 2), 2); /* never past cap */
    o.sm_copy = 0;
    assert_int_equal(psc_p2pbw_lat_tests(&o, 2, n, 4), 4);
    assert_string_equal(n[0], "gpu_local_copy_ce");
    assert_string_equal(n[1], "gpu_to_gpu_copy_p2p_off_ce");
    assert_string_equal(n[2], "gpu_to_gpu_copy_ce");
    assert_string_equal(n[3], "gpu_to_gpu_copy_read_ce"); /* --p2p_read: the reading GPU issues */
    o.sm_copy = 1; /* the SM small copies, one kernel launch each */
    assert_int_equal(psc_p2pbw_lat_tests(&o, 2, n, 4), 4);
    assert_string_equal(n[2], "gpu_to_gpu_copy_sm");
    assert_string_equal(n[3], "gpu_to_gpu_copy_read_sm");
    o.p2p_read = 0;
    assert_int_equal(psc_p2pbw_lat_tests(&o, 2, n, 4), 3);
    assert_int_equal(psc_p2pbw_lat_tests(&o, 1, n, 4), 1);
    assert_string_equal(n[0], "gpu_local_copy_ce");
}

static void test_cells(void **state)
{
    fixture_t f;

    (void)state;
    init(&f, 2);
    /* the diagonal: the local copy, bytes read and written, in every bandwidth matrix */
    assert_true(cell(&f, "unidirectional_p2p_disabled_bandwidth_gbs", 0, 0, 0) == 2 * 100);
    assert_true(cell(&f, "bidirectional_p2p_enabled_bandwidth_gbs", 1, 1, 1) == 2 * 101);
    /* one way: the row's data into the column (write), the column's into the row (read) */
    assert_true(cell(&f, "unidirectional_p2p_disabled_bandwidth_gbs", 0, 0, 1) == 10);
    assert_true(cell(&f, "unidirectional_p2p_disabled_bandwidth_gbs", 0, 1, 0) == 11);
    assert_true(cell(&f, "unidirectional_p2p_enabled_write_bandwidth_gbs", 0, 0, 1) == 20);
    assert_true(cell(&f, "unidirectional_p2p_enabled_write_bandwidth_gbs", 0, 1, 0) == 21);
    assert_true(cell(&f, "unidirectional_p2p_enabled_read_bandwidth_gbs", 0, 0, 1) == 31);
    assert_true(cell(&f, "unidirectional_p2p_enabled_read_bandwidth_gbs", 0, 1, 0) == 30);
    assert_true(cell(&f, "unidirectional_p2p_enabled_write_bandwidth_gbs", 1, 0, 1) == 40); /* --sm_copy */
    assert_true(cell(&f, "unidirectional_p2p_disabled_bandwidth_gbs", 1, 0, 1) == 10);      /* staged either way */
    assert_true(cell(&f, "unidirectional_p2p_enabled_read_bandwidth_gbs", 1, 0, 1) == -1);  /* read_sm not run */
    /* both ways: the pair's aggregate, on both sides */
    assert_true(cell(&f, "bidirectional_p2p_disabled_bandwidth_gbs", 0, 0, 1) == 50);
    assert_true(cell(&f, "bidirectional_p2p_disabled_bandwidth_gbs", 0, 1, 0) == 50);
    assert_true(cell(&f, "bidirectional_p2p_enabled_bandwidth_gbs", 0, 1, 0) == 60);
    assert_true(cell(&f, "bidirectional_p2p_enabled_bandwidth_gbs", 1, 0, 1) == 70);
    /* latency: the 16-byte copy's medians in us, GPU and CPU */
    assert_true(cell(&f, "p2p_disabled_latency_gpu_us", 0, 0, 1) == 16);
    assert_true(cell(&f, "p2p_disabled_latency_cpu_us", 0, 1, 0) == 19);
    assert_true(cell(&f, "p2p_enabled_write_latency_gpu_us", 0, 1, 0) == 2.75);
    assert_true(cell(&f, "p2p_enabled_write_latency_cpu_us", 0, 0, 1) == 3.5);
    assert_true(cell(&f, "p2p_enabled_write_latency_gpu_us", 0, 1, 1) == 1.25);
    assert_true(cell(&f, "p2p_enabled_read_latency_cpu_us", 0, 0, 0) == 2.5);
    assert_true(cell(&f, "p2p_enabled_read_latency_gpu_us", 0, 0, 1) == 4.25); /* the column's data, pulled by the row */
    assert_true(cell(&f, "p2p_enabled_read_latency_cpu_us", 0, 0, 1) == 5.5);
    assert_true(cell(&f, "p2p_enabled_read_latency_gpu_us", 0, 1, 0) == -1); /* 0 -> 1 pulled by 1: not run here */
    assert_true(cell(&f, "p2p_enabled_write_latency_gpu_us", 1, 0, 1) == 6.25); /* --sm_copy */
    assert_true(cell(&f, "p2p_enabled_read_latency_gpu_us", 1, 0, 1) == -1);   /* read_sm not run */
    assert_true(cell(&f, "p2p_disabled_latency_gpu_us", 1, 0, 1) == 16);
    assert_true(cell(&f, "p2p_disabled_latency_gpu_us", 0, 2, 0) == -1); /* out of range */
}

static void test_fallback_and_failures(void **state)
{
    fixture_t f;

    (void)state;
    init(&f, 2);
    f.r.can_access[0][1] = 0; /* GPU 0 cannot reach GPU 1: the sample's copies from 0 are staged */
    assert_true(cell(&f, "unidirectional_p2p_enabled_write_bandwidth_gbs", 0, 0, 1) == 10);
    assert_true(cell(&f, "unidirectional_p2p_enabled_write_bandwidth_gbs", 0, 1, 0) == 21);
    assert_true(cell(&f, "unidirectional_p2p_enabled_read_bandwidth_gbs", 0, 0, 1) == 11); /* 1's data into 0 */
    assert_true(cell(&f, "bidirectional_p2p_enabled_bandwidth_gbs", 1, 0, 1) == 50);
    assert_true(cell(&f, "p2p_enabled_write_latency_cpu_us", 1, 0, 1) == 17);
    assert_true(cell(&f, "p2p_enabled_read_latency_gpu_us", 0, 0, 1) == 18);
    assert_true(cell(&f, "p2p_disabled_latency_gpu_us", 0, 0, 1) == 16);
    /* a failed or waived case measures nothing */
    f.bres[4].status = PSC_RESULT_FAILED; /* gpu_to_gpu_write_ce 0 -> 1 */
    f.bres[5].status = PSC_RESULT_WAIVED;
    f.lres[1].status = PSC_RESULT_FAILED; /* GPU 1's local copies */
    f.r.can_access[0][1] = 1;
    assert_true(cell(&f, "unidirectional_p2p_enabled_write_bandwidth_gbs", 0, 0, 1) == -1);
    assert_true(cell(&f, "unidirectional_p2p_enabled_write_bandwidth_gbs", 0, 1, 0) == -1);
    assert_true(cell(&f, "p2p_disabled_latency_cpu_us", 0, 1, 1) == -1);
}

static char *render(const fixture_t *f, const psc_p2pbw_render_opts_t *o)
{
    psc_device_info_t devs[2];
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);

    memset(devs, 0, sizeof(devs));
    snprintf(devs[0].name, sizeof(devs[0].name), "NVIDIA H200");
    snprintf(devs[0].pci_bus_id, sizeof(devs[0].pci_bus_id), "0000:1b:00.0");
    snprintf(devs[1].name, sizeof(devs[1].name), "NVIDIA H200");
    snprintf(devs[1].pci_bus_id, sizeof(devs[1].pci_bus_id), "0001:2c:03.0");
    assert_non_null(m);
    psc_render_p2pbw(m, &f->r, devs, o);
    fclose(m);
    return buf;
}

static void test_text(void **state)
{
    static const char want[] =
        "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\n"
        "Device: 0, NVIDIA H200, pciBusID: 1b, pciDeviceID: 0, pciDomainID:0\n"
        "Device: 1, NVIDIA H200, pciBusID: 2c, pciDeviceID: 3, pciDomainID:1\n"
        "Device=0 CANNOT Access Peer Device=1\n"
        "Device=1 CAN Access Peer Device=0\n"
        "\n"
        "***NOTE: In case a device doesn't have P2P access to other one, it falls back to normal memcopy procedure.\n"
        "So you can see lesser Bandwidth (GB/s) and unstable Latency (us) in those cases.\n"
        "\n"
        "P2P Connectivity Matrix\n"
        "     D\\D     0     1\n"
        "     0\t     1     0\n"
        "     1\t     1     1\n"
        "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n"
        "   D\\D     0      1 \n"
        "     0 200.00  10.00 \n"
        "     1  11.00 202.00 \n"
        "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n"
        "   D\\D     0      1 \n"
        "     0 200.00  10.00 \n"
        "     1  21.00 202.00 \n"
        "Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n"
        "   D\\D     0      1 \n"
        "     0 200.00  50.00 \n"
        "     1  50.00 202.00 \n"
        "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)\n"
        "   D\\D     0      1 \n"
        "     0 200.00  50.00 \n"
        "     1  60.00 202.00 \n"
        "P2P=Disabled Latency Matrix (us)\n"
        "   GPU     0      1 \n"
        "     0   1.50    N/A \n"
        "     1  18.00   1.25 \n"
        "\n"
        "   CPU     0      1 \n"
        "     0   2.50    N/A \n"
        "     1  19.00   2.25 \n"
        "P2P=Enabled Latency (P2P Writes) Matrix (us)\n"
        "   GPU     0      1 \n"
        "     0   1.50    N/A \n"
        "     1   2.75   1.25 \n"
        "\n"
        "   CPU     0      1 \n"
        "     0   2.50    N/A \n"
        "     1   3.75   2.25 \n"
        "\n"
        "NOTE: The CUDA Samples are not meant for performance measurements. Results may vary when GPU Boost is "
        "enabled.\n";
    psc_p2pbw_render_opts_t o = {0, 0, 1000};
    fixture_t f;
    char *text;

    (void)state;
    init(&f, 2);
    f.r.can_access[0][1] = 0;
    f.lres[2].status = PSC_RESULT_FAILED; /* the staged 16-byte copy 0 -> 1: the fallback has nothing */
    text = render(&f, &o);
    assert_string_equal(text, want);
    free(text);
    o.p2p_read = 1; /* the read matrices after the write ones */
    text = render(&f, &o);
    assert_non_null(strstr(text, "     1  21.00 202.00 \nUnidirectional P2P=Enabled Bandwidth (P2P Reads) Matrix (GB/s)\n"
                                 "   D\\D     0      1 \n     0 200.00  11.00 \n     1  30.00 202.00 \nBidirectional"));
    assert_non_null(strstr(text, "     1   3.75   2.25 \nP2P=Enabled Latency (P2P Reads) Matrix (us)\n   GPU     0      1 \n"
                                 "     0   1.50  18.00 \n     1    N/A   1.25 \n\n   CPU     0      1 \n"
                                 "     0   2.50  19.00 \n     1    N/A   2.25 \n\nNOTE: "));
    free(text);
}

static void test_one_gpu_text(void **state)
{
    psc_p2pbw_render_opts_t o = {1, 1, 1000};
    fixture_t f;
    char *text;

    (void)state;
    init(&f, 1);
    text = render(&f, &o);
    assert_non_null(strstr(text, "pciDomainID:0\n\n***NOTE: ")); /* no peer lines */
    assert_non_null(strstr(text, "P2P Connectivity Matrix\n     D\\D     0\n     0\t     1\n"
                                 "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n   D\\D     0 \n     0 200.00 \n"
                                 "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n"));
    assert_non_null(strstr(text, "P2P=Enabled Latency (P2P Reads) Matrix (us)\n   GPU     0 \n     0   1.50 \n\n"
                                 "   CPU     0 \n     0   2.50 \n\nNOTE: "));
    free(text);
}

static void test_json(void **state)
{
    psc_p2pbw_render_opts_t o = {0, 1, 1000};
    fixture_t f;
    json_t *doc, *mats, *v;

    (void)state;
    init(&f, 2);
    f.r.can_access[1][0] = 0;
    f.bres[0].status = PSC_RESULT_FAILED;
    snprintf(f.bres[0].reason, sizeof(f.bres[0].reason), "wrong data");
    assert_non_null(doc = psc_json_p2pbw(&f.r, &o));
    assert_string_equal(json_string_value(json_object_get(doc, "sample")), "p2pBandwidthLatencyTest");
    assert_true(json_is_true(json_object_get(json_object_get(doc, "options"), "sm_copy")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "options"), "bytes_per_copy")), 4000);
    assert_int_equal(json_integer_value(json_array_get(json_array_get(json_object_get(doc, "p2p_connectivity"), 1), 0)), 0);
    assert_int_equal(json_integer_value(json_array_get(json_array_get(json_object_get(doc, "p2p_connectivity"), 0), 1)), 1);
    mats = json_object_get(doc, "matrices");
    assert_int_equal(json_object_size(mats), 8); /* no read matrices without --p2p_read */
    assert_null(json_object_get(mats, "unidirectional_p2p_enabled_read_bandwidth_gbs"));
    v = json_object_get(json_object_get(mats, "unidirectional_p2p_enabled_write_bandwidth_gbs"), "values");
    assert_true(json_is_null(json_array_get(json_array_get(v, 0), 0))); /* the failed local copy */
    assert_true(json_real_value(json_array_get(json_array_get(v, 0), 1)) == 40);
    assert_true(json_real_value(json_array_get(json_array_get(v, 1), 0)) == 11); /* 1 cannot reach 0: staged */
    v = json_object_get(mats, "p2p_enabled_write_latency_cpu_us");
    assert_string_equal(json_string_value(json_object_get(v, "title")), "P2P=Enabled Latency (P2P Writes) Matrix (us)");
    assert_string_equal(json_string_value(json_object_get(v, "unit")), "us");
    assert_true(json_real_value(json_array_get(json_array_get(json_object_get(v, "values"), 0), 1)) == 7.5); /* sm */
    v = json_object_get(doc, "failed");
    assert_int_equal(json_array_size(v), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(v, 0), "test")), "gpu_local_ce");
    assert_string_equal(json_string_value(json_object_get(json_array_get(v, 0), "reason")), "wrong data");
    json_decref(doc);
    o.p2p_read = 1;
    assert_non_null(doc = psc_json_p2pbw(&f.r, &o));
    assert_int_equal(json_object_size(json_object_get(doc, "matrices")), 11);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tests_run),
        cmocka_unit_test(test_cells),
        cmocka_unit_test(test_fallback_and_failures),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_one_gpu_text),
        cmocka_unit_test(test_json),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
