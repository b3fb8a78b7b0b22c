/* Rendering: aligned tables, bandwidth matrices with notes, and the JSON document read back. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "p2pscope_private.h"
#include "report/json.h"
#include "report/render.h"
#include "report/render_doctor.h"
#include "report/render_nvlink.h"
#include "report/render_verify.h"
#include "report/render_topo.h"
#include "report/table.h"
#include "report/text.h"

static char *psc__render_to_string(void (*fn)(FILE *, void *), void *arg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    fn(f, arg);
    fclose(f);
    return buf;
}

static void psc__table_fn(FILE *f, void *arg)
{
    psc_table_render(arg, f);
}

static void test_table_alignment(void **state)
{
    psc_table_t *t = psc_table_new(3, 3);
    char *out;

    (void)state;
    psc_table_set(t, 0, 0, "src");
    psc_table_set(t, 0, 1, "gpu0");
    psc_table_set(t, 0, 2, "gpu1");
    psc_table_set(t, 1, 0, "gpu0");
    psc_table_set(t, 1, 1, "-");
    psc_table_set(t, 1, 2, "%.2f", 395.625);
    psc_table_set(t, 2, 0, "gpu1");
    psc_table_set(t, 2, 1, "%.2f", 12.0);
    psc_table_set(t, 2, 2, "%s", "");
    psc_table_set(t, 9, 9, "ignored");
    assert_null(psc_table_get(t, 9, 9));
    out = psc__render_to_string(psc__table_fn, t);
    assert_string_equal(out, "src    gpu0    gpu1\n"
                             "gpu0      -  395.62\n"
                             "gpu1  12.00\n");
    free(out);
    psc_table_free(t);
    assert_null(psc_table_new(0, 3));
}

static psc_bw_test_t T(const char *name)
{
    psc_bw_test_t t = -1;

    assert_int_equal(psc_bw_test_from_name(name, &t), PSC_OK);
    return t;
}

static psc_bw_result_t psc__result(psc_bw_test_t test, int src, int dst, int issuer, psc_result_status_t st,
                                   double gbs)
{
    psc_bw_result_t r;

    memset(&r, 0, sizeof(r));
    r.c = (psc_bw_case_t){.test = test, .src = src, .dst = dst, .issuer = issuer, .nxfer = 1};
    r.c.xfer[0] = (psc_xfer_t){src, dst, issuer};
    r.size = 512ull << 20;
    r.iterations = 4;
    r.gated = 1;
    r.host_node = -1;
    r.xfer_gbs[0] = gbs + 1;
    r.status = st;
    r.nsamples = 3;
    r.bytes_per_sample = 1ull << 30;
    for (unsigned k = 0; k < 3; k++)
        r.samples_gbs[k] = gbs + k;
    psc_stats_compute(r.samples_gbs, 3, &r.stats);
    r.verify.first_bad_offset = -1;
    r.verify.checked = 4;
    if (st == PSC_RESULT_WAIVED)
        snprintf(r.reason, sizeof(r.reason), "no peer access from GPU %d to GPU %d", issuer, src);
    if (st == PSC_RESULT_FAILED) {
        r.verify.bad_samples = 3;
        r.verify.bad_bytes = 3;
        r.verify.first_bad_offset = 777;
        r.verify.expected = 0x12;
        r.verify.found = 0x48;
        snprintf(r.reason, sizeof(r.reason), "wrong data");
    }
    return r;
}

typedef struct {
    psc_bw_result_t res[6];
    size_t n;
    int devs[3];
    int ndev;
    psc_bw_test_t test;
} psc__bw_fixture_t;

static void psc__bw_fn(FILE *f, void *arg)
{
    psc__bw_fixture_t *x = arg;

    psc_render_bw(f, x->test, x->res, x->n, x->devs, x->ndev);
}

/* A concurrent case with two transfers: one GPU issuing both gets the note about shares; two issuers do not. */
static void test_concurrent_shared_issuer_note(void **state)
{
    psc__bw_fixture_t x = {.n = 1, .devs = {0, 1, 2}, .ndev = 3, .test = T("one_to_all_write_ce")};
    char *out;

    (void)state;
    x.res[0] = psc__result(x.test, 0, PSC_ALL, 0, PSC_RESULT_PASSED, 396);
    x.res[0].c.nxfer = 2;
    x.res[0].c.xfer[1] = (psc_xfer_t){0, 2, 0};
    x.res[0].xfer_gbs[1] = 198;
    out = psc__render_to_string(psc__bw_fn, &x);
    assert_non_null(strstr(out, "gpu0 -> gpu2 (gpu0)"));
    assert_non_null(strstr(out, "compare the totals"));
    free(out);
    x.test = T("all_to_one_write_ce");
    x.res[0] = psc__result(x.test, PSC_ALL, 0, PSC_ALL, PSC_RESULT_PASSED, 266);
    x.res[0].c.xfer[0] = (psc_xfer_t){1, 0, 1};
    x.res[0].c.nxfer = 2;
    x.res[0].c.xfer[1] = (psc_xfer_t){2, 0, 2};
    out = psc__render_to_string(psc__bw_fn, &x);
    assert_non_null(strstr(out, "total"));
    assert_null(strstr(out, "compare the totals"));
    free(out);
}

static void test_bw_matrix_with_notes(void **state)
{
    psc__bw_fixture_t x = {.n = 6, .devs = {0, 1, 2}, .ndev = 3, .test = T("gpu_to_gpu_read_ce")};
    char *out;

    (void)state;
    x.res[0] = psc__result(x.test, 0, 1, 1, PSC_RESULT_PASSED, 390);
    x.res[1] = psc__result(x.test, 0, 2, 2, PSC_RESULT_WAIVED, 0);
    x.res[2] = psc__result(x.test, 1, 0, 0, PSC_RESULT_PASSED, 391);
    x.res[3] = psc__result(x.test, 1, 2, 2, PSC_RESULT_FAILED, 392);
    x.res[4] = psc__result(x.test, 2, 0, 0, PSC_RESULT_PASSED, 393);
    x.res[5] = psc__result(x.test, 2, 1, 1, PSC_RESULT_PASSED, 394);
    out = psc__render_to_string(psc__bw_fn, &x);
    assert_non_null(strstr(out, "gpu_to_gpu_read_ce: GPU -> GPU, copy engine, read (the destination GPU issues the copy)\n"
                                "[GB/s, 1 GB = 1e9 bytes; median of 3 samples; 512 MiB x 4 copies a sample]\n"
                                "src \\ dst    gpu0    gpu1     gpu2\n"
                                "gpu0            -  391.00   n/a[1]\n"
                                "gpu1       392.00       -  FAIL[2]\n"
                                "gpu2       394.00  395.00        -\n"
                                "  [1] gpu0 -> gpu2: waived: no peer access from GPU 2 to GPU 0\n"
                                "  [2] gpu1 -> gpu2: failed: wrong data\n"
                                /* each passed case's samples: stddev 1 over its mean, in %; none for the others */
                                "[coefficient of variation, %: standard deviation / mean of each case's samples]\n"
                                "src \\ dst  gpu0  gpu1  gpu2\n"
                                "gpu0          -  0.26     -\n"
                                "gpu1       0.26     -     -\n"
                                "gpu2       0.25  0.25     -\n"));
    free(out);
    /* The copy size named exactly, whatever it is: 64 KiB is no "0 MiB", 1536 KiB no "2 MiB". */
    for (int k = 0; k < 6; k++)
        x.res[k].size = 64u << 10;
    out = psc__render_to_string(psc__bw_fn, &x);
    assert_non_null(strstr(out, "; 64 KiB x 4 copies a sample]\n"));
    free(out);
    for (int k = 0; k < 6; k++)
        x.res[k].size = 1536u << 10;
    out = psc__render_to_string(psc__bw_fn, &x);
    assert_non_null(strstr(out, "; 1536 KiB x 4 copies a sample]\n"));
    free(out);
}

static void test_bw_host_row_and_single_gpu(void **state)
{
    psc__bw_fixture_t x = {.n = 1, .devs = {0}, .ndev = 1, .test = T("host_to_gpu_ce")};
    char *out;

    (void)state;
    x.res[0] = psc__result(x.test, PSC_HOST, 0, 0, PSC_RESULT_PASSED, 54);
    out = psc__render_to_string(psc__bw_fn, &x);
    assert_non_null(strstr(out, "host -> gpu  55.00\n"));
    free(out);
    x.test = T("gpu_to_gpu_write_ce");
    x.n = 0;
    out = psc__render_to_string(psc__bw_fn, &x);
    assert_non_null(strstr(out, "waived: needs at least 2 GPUs"));
    assert_null(strstr(out, "median of"));
    free(out);
    /* Concurrent transfers: a row each, then the total. */
    x.test = T("host_gpu_bidir_ce");
    x.n = 1;
    x.res[0] = psc__result(x.test, PSC_HOST, 0, 0, PSC_RESULT_PASSED, 40);
    x.res[0].c.nxfer = 2;
    x.res[0].c.xfer[1] = (psc_xfer_t){0, PSC_HOST, 0};
    x.res[0].xfer_gbs[1] = 45.5;
    x.res[0].host_node = 0;
    out = psc__render_to_string(psc__bw_fn, &x);
    assert_non_null(strstr(out, "[host memory on NUMA node 0]"));
    assert_non_null(strstr(out, "host <-> gpu0  host -> gpu0 (gpu0)   41.00\n"));
    assert_non_null(strstr(out, "              gpu0 -> host (gpu0)   45.50\n"));
    /* The case's coefficient of variation (its samples 40, 41, 42: stddev 1 over mean 41) on its total's row. */
    assert_non_null(strstr(out, "case           transfer (issued by)   GB/s  CV %\n"));
    assert_non_null(strstr(out, "              total                 41.00  2.44\n"));
    free(out);
}

typedef struct {
    const psc_bw_result_t *v;
    size_t n;
    int which;
} psc__cmp_fixture_t;

static void psc__cmp_fn(FILE *f, void *arg)
{
    psc__cmp_fixture_t *x = arg;

    if (x->which == 0)
        psc_render_p2p_compare(f, x->v, x->n);
    else if (x->which == 1)
        psc_render_hostmem_compare(f, x->v, x->n);
    else if (x->which == 2)
        psc_render_crossover(f, x->v, x->n);
    else
        psc_render_sweep(f, x->v[0].c.test, x->v, x->n);
}

static void test_comparisons(void **state)
{
    psc_bw_result_t v[8];
    psc__cmp_fixture_t x = {v, 0, 0};
    char *out;

    (void)state;
    /* P2P on (396-ish) vs off (38-ish): the speed-up is on / off. */
    v[0] = psc__result(T("gpu_to_gpu_write_ce"), 0, 1, 0, PSC_RESULT_PASSED, 395);
    v[1] = psc__result(T("gpu_to_gpu_p2p_off_ce"), 0, 1, 0, PSC_RESULT_PASSED, 37);
    x.n = 2;
    out = psc__render_to_string(psc__cmp_fn, &x);
    assert_non_null(strstr(out, "gpu0 -> gpu1  396.00    38.00     10.4x\n"));
    free(out);
    x.n = 1; /* no off result: no table */
    out = psc__render_to_string(psc__cmp_fn, &x);
    assert_string_equal(out, "");
    free(out);

    /* Host memory kinds side by side; a kind not run shows "-". */
    v[0] = psc__result(T("host_to_gpu_ce"), PSC_HOST, 0, 0, PSC_RESULT_PASSED, 54);
    v[1] = psc__result(T("host_to_gpu_pageable_ce"), PSC_HOST, 0, 0, PSC_RESULT_PASSED, 6);
    v[2] = psc__result(T("gpu_to_host_registered_ce"), 0, PSC_HOST, 0, PSC_RESULT_PASSED, 54);
    x.n = 3;
    x.which = 1;
    out = psc__render_to_string(psc__cmp_fn, &x);
    assert_non_null(strstr(out, "direction     pinned  pageable  write-combined  registered\n"
                                "host -> gpu0   55.00      7.00               -           -\n"
                                "gpu0 -> host       -         -               -       55.00\n"));
    free(out);

    /* A sweep: CE and SM at three sizes; SM wins at the two small ones. */
    for (int k = 0; k < 3; k++) {
        v[k] = psc__result(T("gpu_to_gpu_read_ce"), 0, 1, 1, PSC_RESULT_PASSED, 100.0 * (k + 1));
        v[3 + k] = psc__result(T("gpu_to_gpu_read_sm"), 0, 1, 1, PSC_RESULT_PASSED, k < 2 ? 150.0 * (k + 1) : 200);
        v[k].size = v[3 + k].size = 4096ull << (2 * k);
    }
    x.n = 6;
    x.which = 2;
    out = psc__render_to_string(psc__cmp_fn, &x);
    assert_non_null(strstr(out, "gpu_to_gpu_read_ce     gpu0 -> gpu1     SM faster at: 4K-16K\n"));
    free(out);
    x.n = 3;
    x.which = 3;
    out = psc__render_to_string(psc__cmp_fn, &x);
    assert_non_null(strstr(out, "size  gpu0 -> gpu1\n4K          101.00\n16K         201.00\n64K         301.00\n"));
    free(out);
}

static json_t *psc__sample_run(void)
{
    psc_system_info_t sys = {.device_count = 1, .cuda_driver_version = 13000, .nvml_loaded = 1};
    psc_device_info_t dev = {.index = 0, .nvml_index = 0, .name = "NVIDIA H200", .pci_bus_id = "0000:00:06.0",
                             .memory_bytes = 150109880320ull, .sm_count = 132, .cc_major = 9, .numa_node = -1,
                             .pci_device_id = 0x233510de, .temperature_c = 37, .sm_clock_mhz = 1980};
    psc_measure_opts_t o;
    psc_bw_test_t tests[] = {T("gpu_to_host_ce")};
    psc_bw_result_t r = psc__result(tests[0], 0, PSC_HOST, 0, PSC_RESULT_FAILED, 55);
    json_t *run;
    int devs[] = {0};

    snprintf(sys.driver_release, sizeof(sys.driver_release), "580.159.04");
    snprintf(sys.device_order, sizeof(sys.device_order), "FASTEST_FIRST");
    psc_measure_opts_default(&o);
    run = psc_json_run_new("bw", &sys, &dev, 1);
    psc_json_run_set_parameters(run, &o, devs, 1, tests, 1);
    psc_json_run_add_test(run, psc_json_bw_result(&r));
    psc_json_run_finish(run, 1.5, 1);
    return run;
}

static void psc__check_doc(json_t *doc)
{
    json_t *t = json_array_get(json_object_get(doc, "tests"), 0);
    json_t *dev = json_array_get(json_object_get(doc, "devices"), 0);

    assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "tool"), "name")), "p2pscope");
    assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "system"), "driver_release")),
                        "580.159.04");
    assert_true(json_is_integer(json_object_get(dev, "memory_bytes")));
    assert_string_equal(json_string_value(json_object_get(dev, "pci_id")), "10de:2335");
    assert_true(json_is_null(json_object_get(dev, "numa_node")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "parameters"), "size_bytes")),
                        "per test");
    assert_int_equal(json_integer_value(json_object_get(t, "bytes_per_copy")), 512 << 20);
    assert_true(json_is_true(json_object_get(t, "timed_with_gate")));
    assert_string_equal(json_string_value(json_object_get(t, "host_memory")), "pinned");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(t, "transfers"), 0), "issuer")),
                        "gpu0");
    assert_string_equal(json_string_value(json_object_get(t, "name")), "gpu_to_host_ce");
    assert_string_equal(json_string_value(json_object_get(t, "direction")), "gpu0 -> host");
    assert_string_equal(json_string_value(json_object_get(t, "issuer")), "gpu0");
    assert_string_equal(json_string_value(json_object_get(t, "status")), "failed");
    assert_int_equal(json_array_size(json_object_get(t, "samples")), 3);
    assert_true(json_is_real(json_array_get(json_object_get(t, "samples"), 0)));
    assert_float_equal(json_real_value(json_object_get(json_object_get(t, "stats"), "median")), 56.0, 1e-9);
    /* samples 55, 56, 57: stddev 1 over mean 56 */
    assert_float_equal(json_real_value(json_object_get(json_object_get(t, "stats"), "cv_pct")), 100.0 / 56.0, 1e-9);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "verify"), "first_bad_offset")), 777);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "verify"), "found")), 0x48);
    assert_int_equal(json_integer_value(json_object_get(doc, "exit_code")), 1);
    assert_null(json_object_get(doc, "environment")); /* no environment dump */
}

static void test_json_round_trip(void **state)
{
    json_t *run = psc__sample_run(), *back;
    json_error_t jerr;
    char *text = json_dumps(run, 0);

    (void)state;
    back = json_loads(text, 0, &jerr);
    assert_non_null(back);
    psc__check_doc(back);
    json_decref(back);
    json_decref(run);
    free(text);
}

static int psc__count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    while (d && (e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0; /* temporaries start with '.' */
    if (d)
        closedir(d);
    return n;
}

static void test_json_atomic_write(void **state)
{
    char dir[] = "/tmp/psc-json-XXXXXX", path[128], bad[160], err[256];
    json_t *run = psc__sample_run(), *back;
    json_error_t jerr;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/out.json", dir);
    assert_int_equal(psc_json_write(run, path, err, sizeof(err)), PSC_OK);
    back = json_load_file(path, 0, &jerr);
    assert_non_null(back);
    psc__check_doc(back);
    json_decref(back);
    assert_int_equal(psc__count_entries(dir), 1); /* no temporary file left behind */

    snprintf(bad, sizeof(bad), "%s/missing/out.json", dir);
    assert_int_equal(psc_json_write(run, bad, err, sizeof(err)), PSC_ERR_IO);
    assert_non_null(strstr(err, "missing/out.json"));
    assert_int_equal(psc__count_entries(dir), 1);
    unlink(path);
    rmdir(dir);
    json_decref(run);
}

static void psc__topo_fn(FILE *f, void *arg)
{
    psc_render_topo(f, arg);
}

static void psc__findings_fn(FILE *f, void *arg)
{
    psc_finding_t v = {.severity = PSC_SEV_WARNING, .rule = "bar1_small"};

    snprintf(v.what, sizeof(v.what), "gpu0 \x1b]0;owned\x07 is slow");
    snprintf(v.evidence, sizeof(v.evidence), "name \xc2\x9b" "2J");
    snprintf(v.fix, sizeof(v.fix), "none");
    psc_render_findings(f, arg, &v, 1);
}

/* No byte of a control sequence from outside reaches the terminal: tables, plain lines, findings. */
static void test_control_characters_escaped(void **state)
{
    psc_facts_t *f = psc_facts_new();
    psc_table_t *t = psc_table_new(1, 1);
    char *out;

    (void)state;
    psc_table_set(t, 0, 0, "a\x1b[31mb\nc");
    assert_string_equal(psc_table_get(t, 0, 0), "a\\x1b[31mb\\x0ac");
    psc_table_free(t);

    assert_non_null(f);
    snprintf(f->source, sizeof(f->source), "rec\x1b[2J.json");
    f->ngpu = 1;
    snprintf(f->gpu[0].name, sizeof(f->gpu[0].name), "Evil\x1b[8mGPU");
    snprintf(f->gpu[0].pci_bus_id, sizeof(f->gpu[0].pci_bus_id), "0000:01:00.0");
    snprintf(f->host.cmdline, sizeof(f->host.cmdline), "quiet\r\x1b[1Aroot=/dev/sda \xc2\x9b" "31m");
    snprintf(f->host.machine, sizeof(f->host.machine), "box\x07");
    f->pair[0][0].path = PSC_PATH_SELF;
    out = psc__render_to_string(psc__topo_fn, f);
    assert_null(strchr(out, '\x1b'));
    assert_null(strchr(out, '\r'));
    assert_null(strchr(out, '\x07'));
    assert_null(strstr(out, "\xc2\x9b"));
    assert_non_null(strstr(out, "Evil\\x1b[8mGPU"));
    assert_non_null(strstr(out, "quiet\\x0d\\x1b[1Aroot=/dev/sda \\xc2\\x9b31m"));
    free(out);
    out = psc__render_to_string(psc__findings_fn, f);
    assert_null(strchr(out, '\x1b'));
    assert_null(strstr(out, "\xc2\x9b"));
    assert_non_null(strstr(out, "gpu0 \\x1b]0;owned\\x07 is slow"));
    free(out);
    psc_facts_free(f);
}

/* A PCIe maximum not known prints as "?", never as "Gen-1 x-1". */
static void test_unknown_pcie_max(void **state)
{
    psc_facts_t *f = psc_facts_new();
    char *out;

    (void)state;
    assert_non_null(f);
    f->ngpu = 1;
    snprintf(f->gpu[0].name, sizeof(f->gpu[0].name), "GPU");
    f->pair[0][0].path = PSC_PATH_SELF;
    f->gpu[0].pcie_gen = 4;
    f->gpu[0].pcie_width = 16;
    f->gpu[0].pcie_gen_max = -1;
    f->gpu[0].pcie_width_max = -1;
    out = psc__render_to_string(psc__topo_fn, f);
    assert_non_null(strstr(out, "Gen4 x16 / Gen? x?"));
    assert_null(strstr(out, "Gen-1"));
    assert_null(strstr(out, "x-1"));
    free(out);
    psc_facts_free(f);
}

/* Two GPUs; gpu0 has an active link to gpu1 and an inactive one, gpu1 no NVLink. */
static psc_facts_t *psc__nvlink_facts(void)
{
    psc_facts_t *f = psc_facts_new();
    psc_nvlink_facts_t *l;

    assert_non_null(f);
    snprintf(f->source, sizeof(f->source), "test");
    f->ngpu = 2;
    snprintf(f->gpu[0].name, sizeof(f->gpu[0].name), "H200");
    snprintf(f->gpu[0].pci_bus_id, sizeof(f->gpu[0].pci_bus_id), "0000:18:00.0");
    snprintf(f->gpu[1].name, sizeof(f->gpu[1].name), "H200");
    snprintf(f->gpu[1].pci_bus_id, sizeof(f->gpu[1].pci_bus_id), "0000:2a:00.0");
    f->gpu[0].nvlink_count = 2;
    f->gpu[1].nvlink_count = 0;
    l = &f->gpu[0].nvlinks[0];
    *l = (psc_nvlink_facts_t){.active = 1, .version = 4, .speed_gbs = 26.562, .remote = PSC_REMOTE_GPU,
                              .remote_gpu = 1, .cap_p2p = 1, .cap_sysmem = 1, .cap_p2p_atomics = 0,
                              .cap_sysmem_atomics = -1};
    l = &f->gpu[0].nvlinks[1];
    *l = (psc_nvlink_facts_t){.active = 0, .version = 0, .speed_gbs = 0, .remote = PSC_REMOTE_UNKNOWN, .remote_gpu = -1};
    return f;
}

typedef struct {
    psc_facts_t *f;
    int gpu;
    const psc_nvlink_gpu_traffic_t *traffic;
} psc__nvlink_arg_t;

static void psc__nvlink_fn(FILE *f, void *arg)
{
    const psc__nvlink_arg_t *a = arg;

    psc_render_nvlink(f, a->f, a->gpu, a->traffic);
}

static void test_nvlink_links(void **state)
{
    psc__nvlink_arg_t a = {psc__nvlink_facts(), 0, NULL};
    char *out;

    (void)state;
    out = psc__render_to_string(psc__nvlink_fn, &a);
    assert_string_equal(out,
        "\ngpu0 H200 (0000:18:00.0): 2 links\n"
        "link     state  version  GB/s/dir             remote  P2P  sysmem  P2P atomics  sysmem atomics\n"
        "0       active        4    26.562  gpu1 0000:2a:00.0  yes     yes           no               ?\n"
        "1     inactive        ?         -                  -   no      no           no              no\n");
    free(out);
    a.gpu = 1;
    out = psc__render_to_string(psc__nvlink_fn, &a);
    assert_string_equal(out, "\ngpu1 H200 (0000:2a:00.0): no NVLink\n");
    free(out);
    a.gpu = 2; /* beyond the facts: nothing */
    out = psc__render_to_string(psc__nvlink_fn, &a);
    assert_string_equal(out, "");
    free(out);
    psc_facts_free(a.f);
}

/* Traffic in MB; "?" where not known; nothing for a link the counters do not have. */
static void test_nvlink_traffic_columns(void **state)
{
    psc_nvlink_gpu_traffic_t t;
    psc__nvlink_arg_t a = {psc__nvlink_facts(), 0, &t};
    char *out;

    (void)state;
    memset(&t, 0, sizeof(t));
    t.nlinks = 2;
    t.known[0] = 1;
    t.tx[0] = 1234567890;
    t.rx[0] = 0;
    t.known[1] = 0;
    out = psc__render_to_string(psc__nvlink_fn, &a);
    assert_string_equal(out,
        "\ngpu0 H200 (0000:18:00.0): 2 links; traffic during the watched tests, 1 MB = 1e6 bytes\n"
        "link     state  version  GB/s/dir             remote  P2P  sysmem  P2P atomics  sysmem atomics  tx (MB)  rx (MB)\n"
        "0       active        4    26.562  gpu1 0000:2a:00.0  yes     yes           no               ?   1234.6      0.0\n"
        "1     inactive        ?         -                  -   no      no           no              no        ?        ?\n");
    free(out);
    t.nlinks = 1;
    out = psc__render_to_string(psc__nvlink_fn, &a);
    assert_non_null(strstr(out,
        "0       active        4    26.562  gpu1 0000:2a:00.0  yes     yes           no               ?   1234.6      0.0\n"
        "1     inactive        ?         -                  -   no      no           no              no\n"));
    free(out);
    psc_facts_free(a.f);
}

typedef struct {
    psc_facts_t *f;
    psc_nvlink_traffic_t *t;
    size_t cases;
    uint64_t moved;
} psc__watch_arg_t;

static void psc__watch_fn(FILE *f, void *arg)
{
    const psc__watch_arg_t *a = arg;

    psc_render_nvlink_watch(f, a->f, a->t, a->cases, a->moved);
}

static void test_nvlink_watch(void **state)
{
    psc_nvlink_traffic_t *t = calloc(1, sizeof(*t));
    psc__watch_arg_t a = {psc__nvlink_facts(), t, 1, 12345678};
    char *out;

    (void)state;
    assert_non_null(t);
    t->ngpu = 2;
    t->gpu[0].nlinks = 2;
    t->gpu[0].known[0] = t->gpu[0].known[1] = 1;
    t->gpu[1].nlinks = 0;
    out = psc__render_to_string(psc__watch_fn, &a);
    assert_true(strncmp(out, "watched: 1 case moved 12.3 MB of payload (1 MB = 1e6 bytes)\n"
                             "\ngpu0 H200 (0000:18:00.0): 2 links; traffic", 100) == 0);
    assert_non_null(strstr(out, "no               ?      0.0      0.0\n"));
    assert_non_null(strstr(out, "\ngpu1: NVLink counters not available\n"));
    assert_null(strstr(out, "no NVLink"));
    free(out);
    a.cases = 3;
    a.t = NULL; /* no traffic at all: every GPU says so */
    out = psc__render_to_string(psc__watch_fn, &a);
    assert_string_equal(out, "watched: 3 cases moved 12.3 MB of payload (1 MB = 1e6 bytes)\n"
                             "\ngpu0: NVLink counters not available\n"
                             "\ngpu1: NVLink counters not available\n");
    free(out);
    free(t);
    psc_facts_free(a.f);
}

static void test_nvlink_json(void **state)
{
    psc_facts_t *f = psc__nvlink_facts();
    json_t *doc = psc_json_nvlink(f, 77), *g;

    (void)state;
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "command")), "nvlink");
    assert_string_equal(json_string_value(json_object_get(doc, "source")), "test");
    assert_int_equal(json_integer_value(json_object_get(doc, "exit_code")), 77);
    assert_int_equal(json_array_size(json_object_get(doc, "gpus")), 2);
    g = json_array_get(json_object_get(doc, "gpus"), 0);
    assert_int_equal(json_integer_value(json_object_get(g, "index")), 0);
    assert_string_equal(json_string_value(json_object_get(g, "pci_bus_id")), "0000:18:00.0");
    assert_int_equal(json_array_size(json_object_get(g, "nvlinks")), 2);
    g = json_array_get(json_object_get(doc, "gpus"), 1);
    assert_int_equal(json_integer_value(json_object_get(g, "index")), 1);
    assert_int_equal(json_array_size(json_object_get(g, "nvlinks")), 0);
    json_decref(doc);
    psc_facts_free(f);
}

static void psc__verify_paths(psc_verify_path_sum_t p[2])
{
    memset(p, 0, 2 * sizeof(*p));
    for (int k = 0; k < 2; k++) {
        p[k].last.c = (psc_bw_case_t){.test = T("gpu_to_gpu_read_ce"), .src = k, .dst = 1 - k, .issuer = 1 - k, .nxfer = 1};
        p[k].last.c.xfer[0] = (psc_xfer_t){k, 1 - k, 1 - k};
        p[k].last.first.offset = INT64_MIN; /* none */
    }
    p[0].last.status = PSC_RESULT_PASSED;
    p[0].copies = 120;
    p[0].bytes_checked = 2500000;
    p[0].passes = 2;
    p[1].last.status = PSC_RESULT_FAILED;
    snprintf(p[1].last.reason, sizeof(p[1].last.reason), "wrong data at 0x10");
    p[1].last.first.pattern = 2;
    p[1].last.first.size = 4096;
    p[1].last.first.src_off = 1;
    p[1].last.first.dst_off = 3;
    p[1].last.first.offset = 16;
    p[1].last.first.expected = 0xa5;
    p[1].last.first.found = 0x5a;
    p[1].copies = 7;
    p[1].bytes_checked = 123456789;
    p[1].bad_bytes = 3;
    p[1].passes = 1;
}

static void psc__verify_fn(FILE *f, void *arg)
{
    psc_render_verify(f, arg, 2, 12.34);
}

static void test_verify_table(void **state)
{
    psc_verify_path_sum_t p[2];
    char *out;

    (void)state;
    psc__verify_paths(p);
    out = psc__render_to_string(psc__verify_fn, p);
    assert_string_equal(out,
        "\nverify [1 MB = 1e6 bytes; patterns: random (seeded), address, walking ones, walking zeros, zeros, ones; "
        "sizes 1 B to the largest, aligned and unaligned; canaries, sources and sentinels checked]\n"
        "test                path          copies  MB checked  bad bytes  status  passes\n"
        "gpu_to_gpu_read_ce  gpu0 -> gpu1     120         2.5          0  passed       2\n"
        "gpu_to_gpu_read_ce  gpu1 -> gpu0       7       123.5          3  failed       1\n"
        "  gpu_to_gpu_read_ce gpu1 -> gpu0: failed: wrong data at 0x10\n"
        "\n0.1 GB checked, 3 bad bytes, wall time 12.3 s\n");
    free(out);
}

static void test_verify_json_path(void **state)
{
    psc_verify_path_sum_t p[2];
    json_t *o, *e;

    (void)state;
    psc__verify_paths(p);
    o = psc_json_verify_path(&p[0]);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "direction")), "gpu0 -> gpu1");
    assert_true(json_is_null(json_object_get(o, "reason")));
    assert_int_equal(json_integer_value(json_object_get(o, "passes")), 2);
    assert_null(json_object_get(o, "first_error")); /* passed: none */
    json_decref(o);
    o = psc_json_verify_path(&p[1]);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "status")), "failed");
    assert_string_equal(json_string_value(json_object_get(o, "reason")), "wrong data at 0x10");
    assert_int_equal(json_integer_value(json_object_get(o, "bad_bytes")), 3);
    assert_int_equal(json_integer_value(json_object_get(o, "bytes_checked")), 123456789);
    e = json_object_get(o, "first_error");
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(e, "pattern")), psc_pattern_kind_name(2));
    assert_int_equal(json_integer_value(json_object_get(e, "offset")), 16);
    assert_int_equal(json_integer_value(json_object_get(e, "dst_offset")), 3);
    assert_int_equal(json_integer_value(json_object_get(e, "found")), 0x5a);
    json_decref(o);
    /* A first wrong byte at offset 0 is one, even when the sums say none (it is the one kept). */
    p[0].last.first.offset = 0;
    o = psc_json_verify_path(&p[0]);
    assert_non_null(json_object_get(o, "first_error"));
    json_decref(o);
}

static void psc__rule_fn(FILE *f, void *arg)
{
    psc_finding_t v[3];

    memset(v, 0, sizeof(v));
    v[0] = (psc_finding_t){.severity = PSC_SEV_ERROR, .rule = "p2p_corrupts", .what = "w0", .evidence = "e0", .fix = "f0"};
    v[1] = (psc_finding_t){.severity = PSC_SEV_ERROR, .rule = "nvlink_down", .what = "w1", .evidence = "e1", .fix = "f1"};
    v[2] = (psc_finding_t){.severity = PSC_SEV_WARNING, .rule = "p2p_corrupts", .what = "w2\x1b", .evidence = "e2", .fix = "f2"};
    psc_render_findings_of_rule(f, v, 3, arg);
}

static void test_findings_of_rule(void **state)
{
    char *out;

    (void)state;
    out = psc__render_to_string(psc__rule_fn, "p2p_corrupts");
    assert_string_equal(out, "\n[error] p2p_corrupts: w0\n    evidence: e0\n    fix: f0\n"
                             "\n[warning] p2p_corrupts: w2\\x1b\n    evidence: e2\n    fix: f2\n");
    free(out);
    out = psc__render_to_string(psc__rule_fn, "bar1_small");
    assert_string_equal(out, "");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_control_characters_escaped), cmocka_unit_test(test_unknown_pcie_max),
        cmocka_unit_test(test_table_alignment),      cmocka_unit_test(test_bw_matrix_with_notes),
        cmocka_unit_test(test_concurrent_shared_issuer_note),
        cmocka_unit_test(test_bw_host_row_and_single_gpu), cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_json_atomic_write),   cmocka_unit_test(test_comparisons),
        cmocka_unit_test(test_nvlink_links),        cmocka_unit_test(test_nvlink_traffic_columns),
        cmocka_unit_test(test_nvlink_watch),        cmocka_unit_test(test_nvlink_json),
        cmocka_unit_test(test_verify_table),        cmocka_unit_test(test_verify_json_path),
        cmocka_unit_test(test_findings_of_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
