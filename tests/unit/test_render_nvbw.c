/*
 * `p2pscope nvbandwidth`'s mapping and rendering from hand-built bw suites:
 * the table of nvbandwidth 0.8's tests (names, order, indexes, the p2pscope
 * test each maps to), which transfer each matrix cell takes (read: the
 * column GPU's data into the row GPU; write: the row's into the column's;
 * bidirectional 1, 2 and their total; host tests; all-to-one and one-to-all
 * aggregates), nvbandwidth's text line for line with known numbers (matrix,
 * N/A, SUM, -v, --perfFormatter, waived, error), and its JSON keys.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "p2pscope/version.h"
#include "report/nvbw_map.h"
#include "report/render_nvbw.h"

#define MAXR 16

typedef struct {
    psc_bw_suite_t s;
    psc_suite_test_t tests[8];
    psc_bw_result_t res[MAXR];
} fixture_t;

static int bt(const char *name)
{
    psc_bw_test_t t = -1;

    assert_int_equal(psc_bw_test_from_name(name, &t), PSC_OK);
    return t;
}

static void init(fixture_t *f)
{
    memset(f, 0, sizeof(*f));
    f->s.ndev = 2;
    f->s.devices[1] = 1;
    f->s.tests = f->tests;
    f->s.results = f->res;
}

/* A new test of the suite; its results follow with add(). */
static void test_of(fixture_t *f, const char *name)
{
    f->tests[f->s.ntests].test = bt(name);
    f->tests[f->s.ntests].first = f->s.nresults;
    f->s.ntests++;
}

/* A passed case src -> dst (PSC_ALL allowed) with its aggregate median and transfers given as (src, dst, GB/s). */
static psc_bw_result_t *add(fixture_t *f, int src, int dst, double median, int nxfer, ...)
{
    psc_bw_result_t *r = &f->res[f->s.nresults++];
    va_list ap;

    assert_true(f->s.nresults <= MAXR);
    r->c.test = f->tests[f->s.ntests - 1].test;
    r->c.src = src;
    r->c.dst = dst;
    r->c.nxfer = nxfer;
    r->stats.median = median;
    va_start(ap, nxfer);
    for (int x = 0; x < nxfer; x++) {
        r->c.xfer[x].src = va_arg(ap, int);
        r->c.xfer[x].dst = va_arg(ap, int);
        r->xfer_gbs[x] = va_arg(ap, double);
    }
    va_end(ap);
    f->tests[f->s.ntests - 1].n++;
    return r;
}

static const psc_nvbw_test_t *nv(const char *name)
{
    int k = psc_nvbw_test_find(name);

    assert_true(k >= 0);
    return psc_nvbw_test_at(k);
}

/* Matrix m's cell of nvbandwidth test name over f's results of its mapped test; -1 for N/A. */
static double cell(const fixture_t *f, const char *name, int m, int row, int col)
{
    const psc_nvbw_test_t *t = nv(name);
    double v = -1;

    for (int k = 0; k < f->s.ntests; k++)
        if (f->tests[k].test == bt(t->test))
            return psc_nvbw_cell(t, m, f->res + f->tests[k].first, f->tests[k].n, f->s.devices, row, col, &v) ? v
                                                                                                                  : -1;
    fail_msg("no results of %s", t->test);
    return -1;
}

static void test_table(void **state)
{
    const char *note = NULL;

    (void)state;
    assert_int_equal(psc_nvbw_test_count(), 35); /* nvbandwidth 0.8's single-node tests */
    assert_string_equal(psc_nvbw_test_at(0)->name, "host_to_device_memcpy_ce");
    assert_string_equal(psc_nvbw_test_at(4)->name, "device_to_device_memcpy_read_ce");
    assert_string_equal(psc_nvbw_test_at(32)->name, "host_device_latency_sm");
    assert_string_equal(psc_nvbw_test_at(34)->name, "device_local_copy");
    assert_null(psc_nvbw_test_at(35));
    assert_null(psc_nvbw_test_at(-1));
    for (int k = 0; k < psc_nvbw_test_count(); k++) {
        const psc_nvbw_test_t *t = psc_nvbw_test_at(k);
        char idx[16];

        assert_int_equal(psc_nvbw_test_find(t->name), k); /* names are unique */
        snprintf(idx, sizeof(idx), "%d", k);
        assert_int_equal(psc_nvbw_test_find(idx), k);
        if (t->test) /* every mapped test exists, and is SM exactly where nvbandwidth's is */
            assert_int_equal(!!strstr(t->name, "_sm"), !!strstr(t->test, "_sm"));
        assert_int_equal(t->nmatrices, strstr(t->name, "device_to_device_bidirectional") ? 3 : 1);
    }
    assert_int_equal(psc_nvbw_test_find("35"), -1);
    assert_int_equal(psc_nvbw_test_find("-1"), -1);
    assert_int_equal(psc_nvbw_test_find("device_to_device"), -1); /* names are whole, not prefixes */
    assert_int_equal(psc_nvbw_test_find(""), -1);
    assert_int_equal(psc_nvbw_bw_test("device_to_device_memcpy_read_ce", NULL), bt("gpu_to_gpu_read_ce"));
    assert_int_equal(psc_nvbw_bw_test("device_to_device_memcpy_write_sm", NULL), bt("gpu_to_gpu_write_sm"));
    assert_int_equal(psc_nvbw_bw_test("device_local_copy", NULL), bt("gpu_local_ce"));
    assert_int_equal(psc_nvbw_bw_test("all_to_host_bidirectional_memcpy_ce", NULL), bt("all_host_bidir_ce"));
    assert_int_equal(psc_nvbw_bw_test("device_to_device_latency_sm", &note), -2);
    assert_non_null(strstr(note, "gpu_to_gpu_chase_sequential"));
    assert_int_equal(psc_nvbw_bw_test("no_such_test", NULL), -1);
    assert_int_equal(psc_nvbw_bw_test("4", NULL), -1); /* bw -t takes names only */
}

static void test_cells_gpu_pairs(void **state)
{
    fixture_t f;

    (void)state;
    init(&f);
    test_of(&f, "gpu_to_gpu_read_ce");
    add(&f, 1, 0, 10, 1, 1, 0, 10.0);
    add(&f, 0, 1, 20, 1, 0, 1, 20.0);
    test_of(&f, "gpu_to_gpu_write_ce");
    add(&f, 1, 0, 30, 1, 1, 0, 30.0);
    add(&f, 0, 1, 40, 1, 0, 1, 40.0);
    test_of(&f, "gpu_to_gpu_bidir_write_sm");
    add(&f, 0, 1, 99, 2, 0, 1, 5.0, 1, 0, 7.0);
    /* read: row is the reading GPU, the data comes from the column's */
    assert_true(cell(&f, "device_to_device_memcpy_read_ce", 0, 0, 1) == 10.0);
    assert_true(cell(&f, "device_to_device_memcpy_read_ce", 0, 1, 0) == 20.0);
    assert_true(cell(&f, "device_to_device_memcpy_read_ce", 0, 0, 0) == -1);
    /* write: row is the writing GPU, the data goes to the column's */
    assert_true(cell(&f, "device_to_device_memcpy_write_ce", 0, 0, 1) == 40.0);
    assert_true(cell(&f, "device_to_device_memcpy_write_ce", 0, 1, 0) == 30.0);
    assert_true(cell(&f, "device_to_device_memcpy_write_ce", 0, 1, 1) == -1);
    /* both ways: 1 is the copy into the row GPU, 2 the copy out of it, Total their sum (not the aggregate) */
    assert_true(cell(&f, "device_to_device_bidirectional_memcpy_write_sm", 0, 0, 1) == 7.0);
    assert_true(cell(&f, "device_to_device_bidirectional_memcpy_write_sm", 1, 0, 1) == 5.0);
    assert_true(cell(&f, "device_to_device_bidirectional_memcpy_write_sm", 2, 0, 1) == 12.0);
    assert_true(cell(&f, "device_to_device_bidirectional_memcpy_write_sm", 0, 1, 0) == 5.0);
    assert_true(cell(&f, "device_to_device_bidirectional_memcpy_write_sm", 2, 1, 0) == 12.0);
    assert_true(cell(&f, "device_to_device_bidirectional_memcpy_write_sm", 2, 1, 1) == -1);
    f.res[0].status = PSC_RESULT_FAILED; /* a failed or waived case is N/A */
    assert_true(cell(&f, "device_to_device_memcpy_read_ce", 0, 0, 1) == -1);
    f.res[1].status = PSC_RESULT_WAIVED;
    assert_true(cell(&f, "device_to_device_memcpy_read_ce", 0, 1, 0) == -1);
}

static void test_cells_host_and_all(void **state)
{
    fixture_t f;

    (void)state;
    init(&f);
    test_of(&f, "host_to_gpu_ce");
    add(&f, PSC_HOST, 0, 5, 1, PSC_HOST, 0, 5.0);
    add(&f, PSC_HOST, 1, 6, 1, PSC_HOST, 1, 6.0);
    test_of(&f, "host_gpu_bidir_ce");
    add(&f, PSC_HOST, 1, 99, 2, PSC_HOST, 1, 7.0, 1, PSC_HOST, 8.0);
    test_of(&f, "all_to_one_write_ce");
    add(&f, PSC_ALL, 1, 50, 1, 0, 1, 49.0);
    test_of(&f, "one_to_all_read_sm");
    add(&f, 0, PSC_ALL, 60, 1, 0, 1, 59.0);
    test_of(&f, "all_host_bidir_ce");
    add(&f, PSC_HOST, PSC_ALL, 99, 4, PSC_HOST, 0, 1.0, 0, PSC_HOST, 2.0, PSC_HOST, 1, 3.0, 1, PSC_HOST, 4.0);
    test_of(&f, "gpu_local_ce");
    add(&f, 1, 1, 70, 1, 1, 1, 70.0);
    assert_true(cell(&f, "host_to_device_memcpy_ce", 0, 0, 0) == 5.0);
    assert_true(cell(&f, "host_to_device_memcpy_ce", 0, 0, 1) == 6.0);
    assert_true(cell(&f, "host_to_device_bidirectional_memcpy_ce", 0, 0, 1) == 7.0);
    assert_true(cell(&f, "device_to_host_bidirectional_memcpy_ce", 0, 0, 1) == 8.0);
    assert_true(cell(&f, "device_to_host_bidirectional_memcpy_ce", 0, 0, 0) == -1);
    /* all-to-one and one-to-all: the case's aggregate, in the column of the one GPU */
    assert_true(cell(&f, "all_to_one_write_ce", 0, 0, 1) == 50.0);
    assert_true(cell(&f, "all_to_one_write_ce", 0, 0, 0) == -1);
    assert_true(cell(&f, "one_to_all_read_sm", 0, 0, 0) == 60.0);
    assert_true(cell(&f, "one_to_all_read_sm", 0, 0, 1) == -1);
    /* every GPU with the host at once: that GPU's own transfer in the direction named */
    assert_true(cell(&f, "all_to_host_bidirectional_memcpy_ce", 0, 0, 0) == 2.0);
    assert_true(cell(&f, "all_to_host_bidirectional_memcpy_ce", 0, 0, 1) == 4.0);
    assert_true(cell(&f, "host_to_all_bidirectional_memcpy_ce", 0, 0, 0) == 1.0);
    assert_true(cell(&f, "host_to_all_bidirectional_memcpy_ce", 0, 0, 1) == 3.0);
    assert_true(cell(&f, "device_local_copy", 0, 0, 1) == 70.0);
    assert_true(cell(&f, "device_local_copy", 0, 0, 0) == -1);
    assert_int_equal(psc_nvbw_matrix_rows(&nv("device_local_copy")->m[0], 8), 1);
    assert_int_equal(psc_nvbw_matrix_rows(&nv("device_to_device_memcpy_read_sm")->m[0], 8), 8);
    assert_int_equal(psc_nvbw_matrix_rows(&nv("device_to_device_memcpy_write_sm")->m[0], 8), 8);
}

/* What f renders for nvbandwidth test name, with o. */
static char *text(const fixture_t *f, const char *name, const psc_nvbw_render_opts_t *o)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);

    assert_non_null(m);
    psc_render_nvbw_test(m, nv(name), &f->s, o);
    fclose(m);
    return buf;
}

static void expect_text(const fixture_t *f, const char *name, const psc_nvbw_render_opts_t *o, const char *want)
{
    char *got = text(f, name, o);

    assert_string_equal(got, want);
    free(got);
}

static void test_text(void **state)
{
    psc_nvbw_render_opts_t o = {.hostname = "h"};
    fixture_t f;

    (void)state;
    init(&f);
    test_of(&f, "gpu_to_gpu_read_ce");
    add(&f, 1, 0, 10, 1, 1, 0, 10.0);
    add(&f, 0, 1, 123.456, 1, 0, 1, 123.456);
    test_of(&f, "host_to_gpu_sm");
    add(&f, PSC_HOST, 0, 5, 1, PSC_HOST, 0, 5.0);
    add(&f, PSC_HOST, 1, 6, 1, PSC_HOST, 1, 1006.25);
    expect_text(&f, "device_to_device_memcpy_read_ce", &o,
                "Running device_to_device_memcpy_read_ce.\n"
                "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)\n"
                "           0         1\n"
                " 0       N/A     10.00\n"
                " 1    123.46       N/A\n"
                "\n"
                "SUM device_to_device_memcpy_read_ce 133.46\n"
                "\n");
    o.verbose = 1; /* N/A counts as 0 in MIN, as nvbandwidth's value_or(0.0) */
    expect_text(&f, "host_to_device_memcpy_sm", &o,
                "Running host_to_device_memcpy_sm.\n"
                "memcpy SM CPU(row) -> GPU(column) bandwidth (GB/s)\n"
                "           0         1\n"
                " 0      5.00   1006.25\n"
                "\n"
                "SUM host_to_device_memcpy_sm 1011.25\n"
                "MIN host_to_device_memcpy_sm 5.00\n"
                "MAX host_to_device_memcpy_sm 1006.25\n"
                "AVG host_to_device_memcpy_sm 505.62\n"
                "\n");
    o.verbose = 0;
    o.perf = 1;
    expect_text(&f, "host_to_device_memcpy_sm", &o,
                "Running host_to_device_memcpy_sm.\n"
                "memcpy SM CPU(row) -> GPU(column) bandwidth (GB/s)\n"
                "           0         1\n"
                " 0      5.00   1006.25\n"
                "\n"
                "&&&& PERF host_to_device_memcpy_sm 1011.25 +GB/s\n"
                "\n");
    o.perf = 0;
    expect_text(&f, "device_to_host_memcpy_ce", &o, "Waived: \n"); /* not run: no results */
    expect_text(&f, "device_to_device_latency_sm", &o,
                "Waived: a latency test: p2pscope lat -t gpu_to_gpu_chase_sequential measures it nvbandwidth's way\n");
    f.res[0].status = PSC_RESULT_FAILED;
    snprintf(f.res[0].reason, sizeof(f.res[0].reason), "wrong byte at offset 5");
    expect_text(&f, "device_to_device_memcpy_read_ce", &o,
                "Running device_to_device_memcpy_read_ce.\n"
                "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)\n"
                "           0         1\n"
                " 0       N/A       N/A\n"
                " 1    123.46       N/A\n"
                "\n"
                "SUM device_to_device_memcpy_read_ce 123.46\n"
                "\n"
                "Error: wrong byte at offset 5\n");
    f.res[0].status = f.res[1].status = PSC_RESULT_WAIVED; /* no pair with a path: nvbandwidth waives the test */
    expect_text(&f, "device_to_device_memcpy_read_ce", &o, "Waived: \n");
}

static void test_header_and_footer(void **state)
{
    psc_nvbw_render_opts_t o = {.hostname = "node7", .warning = "NOTE: small"};
    psc_system_info_t sys = {.cuda_driver_version = 13000};
    psc_device_info_t d[2] = {{.index = 0}};
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);

    (void)state;
    snprintf(sys.driver_release, sizeof(sys.driver_release), "580.159.04");
    snprintf(d[0].name, sizeof(d[0].name), "NVIDIA H200");
    snprintf(d[0].pci_bus_id, sizeof(d[0].pci_bus_id), "0000:1b:00.0");
    snprintf(d[1].name, sizeof(d[1].name), "NVIDIA H200");
    snprintf(d[1].pci_bus_id, sizeof(d[1].pci_bus_id), "0001:c3:1f.0");
    psc_render_nvbw_version(m);
    psc_render_nvbw_machine(m, &sys, d, 2, &o);
    psc_render_nvbw_footer(m);
    fclose(m);
    assert_string_equal(buf, "nvbandwidth Version: v0.8\n"
                             "Built from Git version: p2pscope " PSC_VERSION_STRING "\n"
                             "\n"
                             "NOTE: small\n"
                             "CUDA Runtime Version: 13000\n"
                             "CUDA Driver Version: 13000\n"
                             "Driver Version: 580.159.04\n"
                             "\n"
                             "node7\n"
                             "Device 0: NVIDIA H200 (00000000:1b:00)\n"
                             "Device 1: NVIDIA H200 (00000001:c3:1f)\n"
                             "\n"
                             "NOTE: The reported results may not reflect the full capabilities of the platform.\n"
                             "Performance can vary with software drivers, hardware clocks, and system topology.\n"
                             "\n");
    free(buf);
}

static void test_list(void **state)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);

    (void)state;
    psc_render_nvbw_list(m);
    fclose(m);
    assert_true(strncmp(buf, "Index, Name:\n\tDescription\n=======================\n0, host_to_device_memcpy_ce:\n",
                        strlen("Index, Name:\n\tDescription\n=======================\n0, host_to_device_memcpy_ce:\n")) ==
                0);
    assert_non_null(strstr(buf, "\n4, device_to_device_memcpy_read_ce:\n\tp2pscope bw test gpu_to_gpu_read_ce"));
    assert_non_null(strstr(buf, "\n33, device_to_device_latency_sm:\n\tnot run here (printed as waived)"));
    assert_non_null(strstr(buf, "\n34, device_local_copy:\n"));
    free(buf);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of o, sorted (as jsoncpp writes them) and joined with ',' into buf. */
static const char *keys(const json_t *o, char *buf, size_t len)
{
    const char *k, *all[32];
    size_t n = 0;
    json_t *v;

    json_object_foreach((json_t *)o, k, v) {
        (void)v;
        if (n < 32)
            all[n++] = k;
    }
    qsort(all, n, sizeof(all[0]), by_name);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strncat(buf, all[i], len - strlen(buf) - 2);
        strcat(buf, ",");
    }
    return buf;
}

static void test_json(void **state)
{
    psc_nvbw_render_opts_t o = {.hostname = "node7"};
    psc_system_info_t sys = {.cuda_driver_version = 12080};
    psc_device_info_t d[2] = {{.index = 0}};
    json_t *doc, *top, *tcs, *t;
    char buf[512];
    fixture_t f;

    (void)state;
    init(&f);
    test_of(&f, "gpu_to_gpu_bidir_read_ce");
    add(&f, 0, 1, 99, 2, 0, 1, 5.5, 1, 0, 7.25);
    snprintf(d[0].name, sizeof(d[0].name), "G");
    snprintf(d[0].pci_bus_id, sizeof(d[0].pci_bus_id), "0000:10:00.0");
    snprintf(d[1].name, sizeof(d[1].name), "G");
    doc = psc_json_nvbw_new(&sys, d, 2, &o);
    assert_non_null(doc);
    assert_int_equal(psc_json_nvbw_add_test(doc, nv("device_to_device_bidirectional_memcpy_read_ce"), &f.s, &o), 0);
    assert_int_equal(psc_json_nvbw_add_test(doc, nv("host_device_latency_sm"), &f.s, &o), 0);
    top = json_object_get(doc, "nvbandwidth");
    assert_string_equal(keys(top, buf, sizeof(buf)),
                        "CUDA Runtime Version,Driver Version,GPU Device list,git_version,testcases,version,");
    assert_int_equal(json_integer_value(json_object_get(top, "CUDA Runtime Version")), 12080);
    assert_string_equal(json_string_value(json_object_get(top, "version")), "v0.8");
    assert_string_equal(json_string_value(json_array_get(json_object_get(top, "GPU Device list"), 0)),
                        "0: G (00000000:10:00): (node7)");
    tcs = json_object_get(top, "testcases");
    assert_int_equal(json_array_size(tcs), 2);
    t = json_array_get(tcs, 0);
    assert_string_equal(keys(t, buf, sizeof(buf)), "bandwidth_description,bandwidth_matrix,name,status,sum,");
    assert_string_equal(json_string_value(json_object_get(t, "status")), "Passed");
    /* the three matrices' rows in one array, as nvbandwidth appends them; the last one's sum and title */
    assert_int_equal(json_array_size(json_object_get(t, "bandwidth_matrix")), 6);
    assert_string_equal(json_string_value(json_array_get(json_array_get(json_object_get(t, "bandwidth_matrix"), 0), 1)),
                        "7.25");
    assert_string_equal(json_string_value(json_array_get(json_array_get(json_object_get(t, "bandwidth_matrix"), 4), 0)),
                        "N/A");
    assert_string_equal(json_string_value(json_array_get(json_array_get(json_object_get(t, "bandwidth_matrix"), 5), 0)),
                        "12.75");
    assert_true(json_real_value(json_object_get(t, "sum")) == 25.5);
    assert_string_equal(json_string_value(json_object_get(t, "bandwidth_description")),
                        "memcpy CE GPU(row) <-> GPU(column) Total bandwidth (GB/s)");
    t = json_array_get(tcs, 1);
    assert_string_equal(keys(t, buf, sizeof(buf)), "name,status,");
    assert_string_equal(json_string_value(json_object_get(t, "status")), "Waived");
    json_decref(doc);
    o.verbose = 1;
    o.warning = "NOTE: w";
    doc = psc_json_nvbw_new(&sys, d, 2, &o);
    assert_int_equal(psc_json_nvbw_add_test(doc, nv("device_to_device_bidirectional_memcpy_read_ce"), &f.s, &o), 0);
    top = json_object_get(doc, "nvbandwidth");
    assert_string_equal(json_string_value(json_object_get(top, "warning")), "NOTE: w");
    t = json_array_get(json_object_get(top, "testcases"), 0);
    assert_true(json_real_value(json_object_get(t, "min")) == 0.0);
    assert_true(json_real_value(json_object_get(t, "max")) == 12.75);
    assert_true(json_real_value(json_object_get(t, "average")) == 12.75);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),      cmocka_unit_test(test_cells_gpu_pairs),
        cmocka_unit_test(test_cells_host_and_all), cmocka_unit_test(test_text),
        cmocka_unit_test(test_header_and_footer), cmocka_unit_test(test_list),
        cmocka_unit_test(test_json),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
