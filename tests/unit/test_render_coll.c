/*
 * `p2pscope coll`'s text against nccl-tests 2.19.6's output, from hand-built
 * reports: whole lines compared with strings written out from nccl-tests'
 * printf formats (util.cu, quoted in the project's nccl-tests spec), for 2
 * ranks on one host, 8 ranks on two hosts, every collective's row, the
 * number formatting's edges (getFloatStr), N/A, failed rows, the blocking and
 * footer variants, p2pscope's own tables after nccl-tests' text; then the JSON.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "json_keys.h"
#include "p2pscope/version.h"
#include "report/json.h"
#include "report/render_coll.h"

#define FIRST_LINE(code) "# nccl-tests version 2.19.6 nccl-headers=" code " nccl-library=" code

/* nccl-tests' table header (util.cu:744-760), as printed without -C, -S, -I: note the trailing spaces. */
#define HEAD0 "#"
#define HEAD1 "#                                                              out-of-place                       in-place          "
#define HEAD2 "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong "
#define HEAD3 "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         "

typedef struct {
    psc_coll_rank_t ranks[8];
    psc_coll_row_t rows[8];
    psc_coll_way_row_t ways[8]; /* r.ways where a test sets it */
    psc_coll_report_t r;
} fixture_t;

static void rank(psc_coll_rank_t *k, int r, int pid, const char *host, int dev, const char *bus)
{
    memset(k, 0, sizeof(*k));
    k->rank = r;
    k->pid = pid;
    snprintf(k->host, sizeof(k->host), "%s", host);
    k->device = dev;
    snprintf(k->pci_bus_id, sizeof(k->pci_bus_id), "%s", bus);
    snprintf(k->name, sizeof(k->name), "NVIDIA H200");
}

static void half(psc_coll_row_t *row, int k, double t, double alg, double bus, long long wrong)
{
    row->r[k].ran = 1;
    row->r[k].time_us = t;
    row->r[k].algbw_gbs = alg;
    row->r[k].busbw_gbs = bus;
    row->r[k].wrong = wrong;
}

static void row(psc_coll_row_t *x, uint64_t bytes, uint64_t count, int dtype, int op, int root)
{
    memset(x, 0, sizeof(*x));
    x->bytes = bytes;
    x->count = count;
    x->dtype = dtype;
    x->op = op;
    x->root = root;
}

static void report(fixture_t *x, int coll, int nranks, int nprocs, int nrows)
{
    psc_coll_report_t *r = &x->r;

    memset(r, 0, sizeof(*r));
    r->coll = coll;
    r->nranks = nranks;
    r->nprocs = nprocs;
    r->ranks = x->ranks;
    r->nccl_version = 22807;
    r->min_bytes = 8;
    r->max_bytes = 134217728;
    r->step_factor = 2;
    r->step_bytes = 1048576;
    r->warmup_iters = 1;
    r->iters = 20;
    r->agg_iters = 1;
    r->check = 1;
    r->nrows = nrows;
    r->rows = x->rows;
}

/* 2 ranks, one process, one host with a domain name: nccl-tests' single-process example (spec 1.7). */
static void two_ranks(fixture_t *x)
{
    memset(x, 0, sizeof(*x));
    rank(&x->ranks[0], 0, 12345, "gpunode01.example.com", 0, "0000:19:00.0");
    rank(&x->ranks[1], 1, 12345, "gpunode01.example.com", 1, "0000:1A:00.0");
    row(&x->rows[0], 8, 2, PSC_DT_FLOAT32, PSC_OP_SUM, -1);
    half(&x->rows[0], 0, 12.34, 0.00065, 0.00065, 0);
    half(&x->rows[0], 1, 11.98, 0.00067, 0.00067, 0);
    row(&x->rows[1], 134217728, 33554432, PSC_DT_FLOAT32, PSC_OP_SUM, -1);
    half(&x->rows[1], 0, 1234.5, 108.72, 108.72, 0);
    half(&x->rows[1], 1, 1230.1, 109.11, 109.11, 0);
    report(x, PSC_COLL_ALL_REDUCE, 2, 1, 2);
    x->r.avg_busbw_gbs = 54.3781;
    x->r.run_ms = 5123.5;
}

static char *render(const psc_coll_report_t *r, const psc_coll_render_opts_t *o)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    psc_render_coll(f, r, o);
    fclose(f);
    assert_non_null(buf);
    return buf;
}

/* out is exactly these lines, each ended by '\n' (whole lines compared: trailing spaces count). */
static void expect_lines(const char *out, const char *const *want, size_t n)
{
    const char *p = out;

    for (size_t i = 0; i < n; i++) {
        const char *eol = strchr(p, '\n');
        char *line;

        if (!eol)
            fail_msg("line %zu missing, wanted '%s'; output:\n%s", i, want[i], out);
        line = strndup(p, (size_t)(eol - p));
        if (strcmp(line, want[i]) != 0)
            fail_msg("line %zu:\n got '%s'\nwant '%s'", i, line, want[i]);
        free(line);
        p = eol + 1;
    }
    if (*p)
        fail_msg("extra output after %zu lines:\n%s", n, p);
}

/* The line of out at index i (0 based), or NULL; freed by the caller. */
static char *line_at(const char *out, int i)
{
    const char *p = out;

    for (; i > 0 && p; i--) {
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    if (!p || !*p)
        return NULL;
    return strndup(p, strcspn(p, "\n"));
}

/* 1 when want is a whole line of out. */
static int has_line(const char *out, const char *want)
{
    size_t n = strlen(want);

    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, want, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
            return 1;
    fprintf(stderr, "no line '%s' in:\n%s", want, out);
    return 0;
}

/* The data row of out that begins with the size column "%12lli" of bytes. */
static char *data_row(const char *out, const char *size_col)
{
    size_t n = strlen(size_col);

    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, size_col, n) == 0)
            return strndup(p, strcspn(p, "\n"));
    fail_msg("no row starting '%s' in:\n%s", size_col, out);
    return NULL;
}

static void test_float_str(void **state)
{
    static const struct {
        double v;
        int width;
        const char *want;
    } cases[] = {
        /* time, width 7: 2 decimals while they fit, then 1, then 0, then %7.1e */
        {0, 7, "   0.00"},
        {0.004, 7, "   0.00"},
        {-1, 7, "  -1.00"},
        {12.34, 7, "  12.34"},
        {9999.994, 7, "9999.99"},
        {9999.996, 7, "10000.0"}, /* rounding carries into a fifth digit: 2.19.6 falls back a decimal */
        {99999.94, 7, "99999.9"},
        {99999.96, 7, " 100000"},
        {9999999.4, 7, "9999999"},
        {9999999.5, 7, "1.0e+07"},
        {12345678, 7, "1.2e+07"},
        {1e300, 7, "1.0e+30"}, /* nccl-tests' snprintf cuts "1.0e+300" to the width */
        /* bandwidth, width 6: then %6.0e */
        {0, 6, "  0.00"},
        {1e-9, 6, "  0.00"},
        {313.456, 6, "313.46"},
        {999.994, 6, "999.99"},
        {999.996, 6, "1000.0"},
        {9999.96, 6, " 10000"},
        {999999.4, 6, "999999"},
        {999999.5, 6, " 1e+06"},
        {1e7, 6, " 1e+07"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char s[16];

        memset(s, 'x', sizeof(s));
        psc_coll_float_str(cases[i].v, cases[i].width, s);
        if (strcmp(s, cases[i].want) != 0)
            fail_msg("%.17g width %d: got '%s', want '%s'", cases[i].v, cases[i].width, s, cases[i].want);
        assert_int_equal(s[cases[i].width + 1], 'x'); /* width + 1 bytes written at most */
    }
}

/* The whole output for 2 GPUs in one process, line for line. */
static void test_two_ranks_whole(void **state)
{
    static const char *const want[] = {
        FIRST_LINE("22807"),
        "# Collective test starting: all_reduce_perf",
        ("# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 "
         "validation: 1 graph: 0 unalign: 0"),
        "#",
        "# Using devices",
        "#  Rank  0 Group  0 Pid  12345 on  gpunode01 device  0 [0000:19:00] NVIDIA H200",
        "#  Rank  1 Group  0 Pid  12345 on  gpunode01 device  1 [0000:1a:00] NVIDIA H200",
        HEAD0,
        HEAD1,
        HEAD2,
        HEAD3,
        "           8             2     float     sum      -1    12.34    0.00    0.00       0    11.98    0.00    0.00       0",
        "   134217728      33554432     float     sum      -1  1234.50  108.72  108.72       0  1230.10  109.11  109.11       0",
        "# Out of bounds values : 0 OK",
        "# Avg bus bandwidth    : 54.3781 ",
        "#",
        "# Collective test concluded: all_reduce_perf",
        "#",
        "",
    };
    fixture_t x;
    char *out;

    (void)state;
    two_ranks(&x);
    out = render(&x.r, NULL);
    expect_lines(out, want, sizeof(want) / sizeof(want[0]));
    free(out);
}

/* 8 ranks, one per process, on two hosts (mpirun -np 8 -N 4): nGpus 1, rank lines in world order. */
static void test_eight_ranks_two_hosts(void **state)
{
    static const char *const want[] = {
        FIRST_LINE("22807"),
        "# Collective test starting: all_reduce_perf",
        ("# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 50 agg iters: 1 "
         "validation: 1 graph: 0 unalign: 0"),
        "#",
        "# Using devices",
        "#  Rank  0 Group  0 Pid   4242 on     node01 device  0 [0000:19:00] NVIDIA H200",
        "#  Rank  1 Group  0 Pid   4243 on     node01 device  1 [0000:3b:00] NVIDIA H200",
        "#  Rank  2 Group  0 Pid   4244 on     node01 device  2 [0000:4c:00] NVIDIA H200",
        "#  Rank  3 Group  0 Pid   4245 on     node01 device  3 [0000:5d:00] NVIDIA H200",
        "#  Rank  4 Group  0 Pid   4300 on     node02 device  0 [0000:19:00] NVIDIA H200",
        "#  Rank  5 Group  0 Pid   4301 on     node02 device  1 [0000:9a:00] NVIDIA H200",
        "#  Rank  6 Group  0 Pid   4302 on averyverylonghostname device  2 [0001:c1:00] NVIDIA H200",
        "#  Rank  7 Group  0 Pid   4303 on     node02 device  3 [0000:00:00] NVIDIA H200",
        HEAD0,
        HEAD1,
        HEAD2,
        HEAD3,
        "           8             2     float     sum      -1    12.34    0.00    0.00       0    11.98    0.00    0.00       0",
        "   134217728      33554432     float     sum      -1  1234.50  108.72  190.26       0  1230.10  109.11  190.94       0",
        "  8589934592    2147483648     float     sum      -1  25000.7  343.59  601.28       0  24990.2  343.73  601.53       0",
        "# Out of bounds values : 0 OK",
        "# Avg bus bandwidth    : 264 ",
        "#",
        "# Collective test concluded: all_reduce_perf",
        "#",
        "",
    };
    static const char *const bus[4] = {"0000:19:00.0", "0000:3b:00.0", "0000:4c:00.0", "0000:5d:00.0"};
    fixture_t x;
    char *out;

    (void)state;
    memset(&x, 0, sizeof(x));
    for (int i = 0; i < 4; i++)
        rank(&x.ranks[i], i, 4242 + i, "node01.cluster.example.org", i, bus[i]);
    rank(&x.ranks[4], 4, 4300, "node02", 0, "0000:19:00.0");
    rank(&x.ranks[5], 5, 4301, "node02", 1, "00000000:9A:00.0"); /* NVML's 8-digit domain */
    rank(&x.ranks[6], 6, 4302, "averyverylonghostname", 2, "0001:c1:00.0"); /* never cut to 10 */
    rank(&x.ranks[7], 7, 4303, "node02", 3, "");                             /* unknown: zeros */
    row(&x.rows[0], 8, 2, PSC_DT_FLOAT32, PSC_OP_SUM, -1);
    half(&x.rows[0], 0, 12.34, 0.00065, 0.00114, 0);
    half(&x.rows[0], 1, 11.98, 0.00067, 0.00117, 0);
    row(&x.rows[1], 134217728, 33554432, PSC_DT_FLOAT32, PSC_OP_SUM, -1);
    half(&x.rows[1], 0, 1234.5, 108.72, 190.26, 0);
    half(&x.rows[1], 1, 1230.1, 109.11, 190.94, 0);
    row(&x.rows[2], 8589934592ull, 2147483648ull, PSC_DT_FLOAT32, PSC_OP_SUM, -1);
    half(&x.rows[2], 0, 25000.7, 343.59, 601.28, 0);
    half(&x.rows[2], 1, 24990.2, 343.73, 601.53, 0);
    report(&x, PSC_COLL_ALL_REDUCE, 8, 8, 3);
    x.r.max_bytes = 8589934592ull;
    x.r.warmup_iters = 5;
    x.r.iters = 50;
    x.r.avg_busbw_gbs = 264.0;
    out = render(&x.r, NULL);
    expect_lines(out, want, sizeof(want) / sizeof(want[0]));
    free(out);
}

/* Each collective: its program name in the header and footer, its row's type, redop (or none) and root. */
static void test_every_collective(void **state)
{
    static const struct {
        int coll;
        const char *prog;
        uint64_t bytes, count;
        int dtype, op, root;
        long long wrong_in_place;
        const char *want;
    } cases[] = {
        {PSC_COLL_ALL_GATHER, "all_gather_perf", 1024, 32, PSC_DT_FLOAT32, -1, -1, 0,
         "        1024            32     float    none      -1    15.50    0.07    0.06       0    15.25    0.07    0.06       0"},
        {PSC_COLL_REDUCE_SCATTER, "reduce_scatter_perf", 4096, 128, PSC_DT_FLOAT16, PSC_OP_MAX, -1, 0,
         "        4096           128      half     max      -1    20.00    0.20    0.18       0    19.50    0.21    0.19       0"},
        {PSC_COLL_BROADCAST, "broadcast_perf", 65536, 16384, PSC_DT_INT32, -1, 3, 0,
         "       65536         16384     int32    none       3    30.12    2.18    2.18       0    29.88    2.19    2.19       0"},
        {PSC_COLL_REDUCE, "reduce_perf", 1048576, 131072, PSC_DT_INT64, PSC_OP_PROD, 7, 0,
         "     1048576        131072     int64    prod       7    45.68   22.96   22.96       0    44.32   23.66   23.66       0"},
        {PSC_COLL_ALL_TO_ALL, "alltoall_perf", 2097152, 32768, PSC_DT_UINT8, -1, -1, -1,
         "     2097152         32768     uint8    none      -1    90.01   23.30   20.39       0    89.99   23.31   20.40    N/A"},
        {PSC_COLL_SEND_RECV, "sendrecv_perf", 33554432, 16777216, PSC_DT_BFLOAT16, PSC_OP_SUM, -1, -1,
         "    33554432      16777216  bfloat16     sum      -1   200.00  167.77  167.77       0   199.00  168.62  168.62    N/A"},
    };
    static const double fig[][6] = {
        {15.5, 0.066, 0.058, 15.25, 0.067, 0.059}, {20.0, 0.2, 0.18, 19.5, 0.21, 0.19},
        {30.125, 2.18, 2.18, 29.875, 2.19, 2.19},  {45.678, 22.96, 22.96, 44.321, 23.66, 23.66},
        {90.01, 23.3, 20.39, 89.99, 23.31, 20.4},  {200.0, 167.77, 167.77, 199.0, 168.62, 168.62},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fixture_t x;
        char starting[64], concluded[64], size_col[16], *out, *got;

        memset(&x, 0, sizeof(x));
        for (int k = 0; k < 8; k++)
            rank(&x.ranks[k], k, 100 + k, "h", k, "0000:19:00.0");
        row(&x.rows[0], cases[i].bytes, cases[i].count, cases[i].dtype, cases[i].op, cases[i].root);
        half(&x.rows[0], 0, fig[i][0], fig[i][1], fig[i][2], 0);
        half(&x.rows[0], 1, fig[i][3], fig[i][4], fig[i][5], cases[i].wrong_in_place);
        report(&x, cases[i].coll, 8, 1, 1);
        out = render(&x.r, NULL);
        snprintf(starting, sizeof(starting), "# Collective test starting: %s", cases[i].prog);
        snprintf(concluded, sizeof(concluded), "# Collective test concluded: %s", cases[i].prog);
        assert_true(has_line(out, starting));
        assert_true(has_line(out, concluded));
        assert_true(has_line(out, "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 1 "
                                  "iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0"));
        memcpy(size_col, cases[i].want, 12);
        size_col[12] = '\0';
        got = data_row(out, size_col);
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("%s:\n got '%s'\nwant '%s'", cases[i].prog, got, cases[i].want);
        free(got);
        free(out);
    }
}

/* Widths overflowing as nccl-tests lets them, N/A, halves not run, failed rows in the footer. */
static void test_edges_and_failures(void **state)
{
    static const char *const want[] = {
        ("  8589934592    2147483648    double     min      -1  1.2e+07   1e+07   1e+06  1.04858e+06   100000   10000  "
         "1000.0  123456"),
        ("           0             0     float    none      -1     0.00    0.00    0.00       0  10000.0    0.00    0.00  "
         "1.23457e+06"),
        "           8             2     float     avg      -1    12.34    0.00    0.00    N/A",
        "           8             2     float     avg      -1                                     11.98    0.00    0.00       0",
        "          16             4     float     avg      -1",
    };
    fixture_t x;
    char *out, *l;
    int first;

    (void)state;
    two_ranks(&x);
    row(&x.rows[0], 8589934592ull, 2147483648ull, PSC_DT_FLOAT64, PSC_OP_MIN, -1);
    half(&x.rows[0], 0, 12345678, 1e7, 999999.5, 1048576);
    half(&x.rows[0], 1, 99999.96, 9999.96, 999.996, 123456);
    row(&x.rows[1], 0, 0, PSC_DT_FLOAT32, -1, -1); /* all_gather's size rounded down to nothing */
    half(&x.rows[1], 0, 0, 0, 0, 0);
    half(&x.rows[1], 1, 9999.996, 0, 0, 1234567);
    row(&x.rows[2], 8, 2, PSC_DT_FLOAT32, PSC_OP_AVG, -1); /* in place not run; out of place not checked */
    half(&x.rows[2], 0, 12.34, 0, 0, -1);
    row(&x.rows[3], 8, 2, PSC_DT_FLOAT32, PSC_OP_AVG, -1); /* out of place not run */
    half(&x.rows[3], 1, 11.98, 0, 0, 0);
    row(&x.rows[4], 16, 4, PSC_DT_FLOAT32, PSC_OP_AVG, -1); /* neither run: the preamble alone, no trailing blanks */
    x.r.nrows = 5;
    x.r.failed_rows = 3;
    x.r.avg_busbw_gbs = 1234567.8;
    out = render(&x.r, NULL);
    first = 11; /* 5 preamble lines, 2 ranks, 4 header lines */
    for (int i = 0; i < 5; i++) {
        l = line_at(out, first + i);
        assert_non_null(l);
        if (strcmp(l, want[i]) != 0)
            fail_msg("row %d:\n got '%s'\nwant '%s'", i, l, want[i]);
        free(l);
    }
    l = line_at(out, first + 5);
    assert_string_equal(l, "# Out of bounds values : 3 FAILED");
    free(l);
    l = line_at(out, first + 6);
    assert_string_equal(l, "# Avg bus bandwidth    : 1.23457e+06 ");
    free(l);
    free(out);

    x.r.nrows = 0; /* no rows at all: the header goes straight to the footer */
    x.r.failed_rows = 0;
    x.r.avg_busbw_gbs = 0;
    out = render(&x.r, NULL);
    l = line_at(out, first - 1);
    assert_string_equal(l, HEAD3);
    free(l);
    l = line_at(out, first);
    assert_string_equal(l, "# Out of bounds values : 0 OK");
    free(l);
    l = line_at(out, first + 1);
    assert_string_equal(l, "# Avg bus bandwidth    : 0 ");
    free(l);
    free(out);
}

/* Header variants: -c 0, -G, sizes by bytes, blocking lines; the footer's -J/NCCL_TESTS_MIN_BW/error variants. */
static void test_header_footer_variants(void **state)
{
    static const char *const blocking[4] = {
        NULL,
        "# Blocking Enabled: wait and barrier after each inner iteration (-m) ",
        "# Blocking Enabled: wait after each inner iteration (-m), no barrier ",
        "# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes barrier ",
    };
    psc_coll_render_opts_t o;
    fixture_t x;
    char *out, *l;

    (void)state;
    two_ranks(&x);
    x.r.check = 0;
    x.r.graph_launches = 20;
    x.r.step_factor = 0;
    x.r.min_bytes = 1024;
    x.r.max_bytes = 33554432;
    x.r.nccl_version = 2708; /* a code of the old form, printed as it is */
    x.r.agg_iters = 4;
    x.r.warmup_iters = 0;
    out = render(&x.r, NULL);
    l = line_at(out, 0);
    assert_string_equal(l, FIRST_LINE("2708"));
    free(l);
    l = line_at(out, 2);
    assert_string_equal(l, "# nThread 1 nGpus 2 minBytes 1024 maxBytes 33554432 step: 1048576(bytes) warmup iters: 0 "
                           "iters: 20 agg iters: 4 validation: 0 graph: 20 unalign: 0");
    free(l);
    free(out);

    x.r.step_factor = 1; /* nccl-tests shows the factor only above 1 */
    out = render(&x.r, NULL);
    assert_true(has_line(out, "# nThread 1 nGpus 2 minBytes 1024 maxBytes 33554432 step: 1048576(bytes) warmup iters: "
                              "0 iters: 20 agg iters: 4 validation: 0 graph: 20 unalign: 0"));
    free(out);

    for (int b = 1; b <= 3; b++) {
        x.r.blocking = b;
        out = render(&x.r, NULL);
        l = line_at(out, 3);
        assert_string_equal(l, blocking[b]);
        free(l);
        l = line_at(out, 4);
        assert_string_equal(l, "#");
        free(l);
        for (int c = 1; c <= 3; c++)
            if (c != b)
                assert_null(strstr(out, blocking[c]));
        free(out);
    }
    x.r.blocking = 0;
    out = render(&x.r, NULL);
    assert_null(strstr(out, "Blocking"));
    free(out);

    /* control characters from outside are escaped, so they cannot split a line or reach the terminal */
    snprintf(x.ranks[1].host, sizeof(x.ranks[1].host), "gpu\anode.example.com");
    snprintf(x.ranks[1].name, sizeof(x.ranks[1].name), "NVIDIA\033[2J\nH200");
    out = render(&x.r, NULL);
    l = line_at(out, 6);
    assert_string_equal(l, "#  Rank  1 Group  0 Pid  12345 on gpu\\x07node device  1 [0000:1a:00] NVIDIA\\x1b[2J\\x0aH200");
    free(l);
    free(out);

    memset(&o, 0, sizeof(o));
    x.r.avg_busbw_gbs = 100;
    o.min_bw_set = 1;
    o.min_bw_gbs = 120; /* 100 < 0.9 x 120 */
    out = render(&x.r, &o);
    assert_true(has_line(out, "# Avg bus bandwidth    : 100 FAILED"));
    free(out);
    o.min_bw_gbs = 110; /* 100 >= 99 */
    out = render(&x.r, &o);
    assert_true(has_line(out, "# Avg bus bandwidth    : 100 OK"));
    free(out);
    o.min_bw_set = 0;
    o.last_error = "NCCL WARN Cuda failure 'out of memory'";
    out = render(&x.r, &o);
    l = strstr(out, "# Collective test concluded: all_reduce_perf\n#\n");
    assert_non_null(l);
    assert_string_equal(l, "# Collective test concluded: all_reduce_perf\n#\n# error: NCCL WARN Cuda failure 'out of "
                           "memory'\n");
    free(out);
}

/* p2pscope's per-operation times: after nccl-tests' last blank line, every line a comment, only when measured. */
static void test_extras(void **state)
{
    static const char *const want[] = {
        "# p2pscope " PSC_VERSION_STRING " coll",
        ("# p2pscope coll: each timed operation alone (CUDA events, an eager loop apart from the table's), us; - where "
         "not measured"),
        "#   oop_: out of place, ip_: in place; p50 p99 max over the operations",
        "#      bytes      type   redop    root      impl  oop_p50  oop_p99  oop_max   ip_p50   ip_p99   ip_max",
        "#          8     float     sum      -1      nccl    11.90    14.20    30.00    11.50    13.00    25.00",
        "#  134217728     float     sum      -1      nccl        -        -        -        -        -        -",
        "#  268435456     float     sum      -1      nccl  2400.25   123457  1.2e+07        -        -        -",
    };
    psc_coll_render_opts_t o;
    fixture_t x;
    const char *tail;
    char *out;

    (void)state;
    two_ranks(&x);
    out = render(&x.r, NULL); /* no per-operation times: nccl-tests' text alone, ending in its blank line */
    assert_int_equal(strlen(out) > 3, 1);
    assert_string_equal(out + strlen(out) - 3, "#\n\n");
    assert_null(strstr(out, "p2pscope"));
    free(out);

    x.rows[0].r[0].iter_us = (psc_pctl_t){.n = 20, .min = 11, .p50 = 11.9, .p90 = 13, .p99 = 14.2, .max = 30, .mean = 12};
    x.rows[0].r[1].iter_us = (psc_pctl_t){.n = 20, .min = 11, .p50 = 11.5, .p90 = 12, .p99 = 13, .max = 25, .mean = 12};
    x.rows[1].r[1].ran = 0; /* in place not run: dashes */
    row(&x.rows[2], 268435456, 67108864, PSC_DT_FLOAT32, PSC_OP_SUM, -1);
    half(&x.rows[2], 0, 2469.0, 108.72, 108.72, 0);
    half(&x.rows[2], 1, 2460.0, 109.11, 109.11, 0);
    x.rows[2].r[0].iter_us = (psc_pctl_t){.n = 20, .p50 = 2400.25, .p99 = 123456.7, .max = 12345678.9};
    x.r.nrows = 3;
    out = render(&x.r, NULL);
    tail = strstr(out, "# Collective test concluded: all_reduce_perf\n#\n\n");
    assert_non_null(tail);
    tail += strlen("# Collective test concluded: all_reduce_perf\n#\n\n");
    expect_lines(tail, want, sizeof(want) / sizeof(want[0]));
    free(out);

    memset(&o, 0, sizeof(o));
    o.no_extras = 1;
    out = render(&x.r, &o);
    assert_null(strstr(out, "p2pscope"));
    assert_string_equal(out + strlen(out) - 3, "#\n\n");
    free(out);

    x.rows[2].r[0].ran = 0; /* the only other times belong to a half not run: none shown */
    x.rows[0].r[0].iter_us.n = 0;
    x.rows[0].r[1].iter_us.n = 0;
    out = render(&x.r, NULL);
    assert_null(strstr(out, "p2pscope"));
    free(out);
}

/*
 * NCCL's rows and p2pscope's in one report: nccl-tests' table holds NCCL's
 * alone (13 fields, one row per size, its footer counting NCCL's wrong
 * halves), p2pscope's go to a table of comments after nccl-tests' last line,
 * beside NCCL's time; p2pscope's alone take nccl-tests' table.
 */
static void test_own_rows_apart(void **state)
{
    static const char *const want[] = {
        "# p2pscope " PSC_VERSION_STRING " coll",
        ("# p2pscope's all-reduce: tuned beside NCCL (psc_allreduce_tune): each size class goes the way that timed "
         "faster; oop_way, ip_way: the way each half ran"),
        "# p2pscope's all-reduce (psc_allreduce_sum), timed and checked as NCCL's rows above",
        ("#   oop_: out of place, ip_: in place; us: time per operation; busbw: GB/s; wrong: wrong elements; vs_nccl: "
         "NCCL's time / p2pscope's (above 1: p2pscope faster); way: its kernels (one-shot, two-shot), its "
         "copy-engines, or nccl"),
        ("#      bytes      type   redop    root       oop_us    oop_busbw    oop_wrong  oop_vs_nccl       oop_way        "
         "ip_us     ip_busbw     ip_wrong   ip_vs_nccl        ip_way"),
        ("#          8     float     sum      -1         6.17         0.00            0         2.00      one-shot         "
         "5.99         0.00            3         2.00          nccl"),
        ("#  134217728     float     sum      -1      1300.00       103.24          N/A         0.95  copy-engines         "
         "   -            -            -            -             -"),
        "# p2pscope's all-reduce: avg busbw 51.62 GB/s; halves with wrong elements 1 FAILED",
    };
    fixture_t x;
    const char *tail;
    char *out, *l;

    (void)state;
    two_ranks(&x);
    x.rows[1].r[0].wrong = 5; /* NCCL's: one wrong half */
    row(&x.rows[2], 8, 2, PSC_DT_FLOAT32, PSC_OP_SUM, -1);
    x.rows[2].impl = PSC_COLL_IMPL_P2PSCOPE;
    half(&x.rows[2], 0, 6.17, 0.0013, 0.0013, 0);
    half(&x.rows[2], 1, 5.99, 0.0013, 0.0013, 3);
    row(&x.rows[3], 134217728, 33554432, PSC_DT_FLOAT32, PSC_OP_SUM, -1);
    x.rows[3].impl = PSC_COLL_IMPL_P2PSCOPE;
    half(&x.rows[3], 0, 1300, 103.24, 103.24, -1);
    x.rows[0].impl = x.rows[1].impl = PSC_COLL_IMPL_NCCL;
    x.r.nrows = 4;
    x.r.failed_rows = 2; /* both implementations' */
    x.r.own_avg_busbw_gbs = 51.62;
    x.r.ways = x.ways;
    x.r.own_tuned = 1;
    memset(x.ways, 0, sizeof(x.ways));
    x.ways[2] = (psc_coll_way_row_t){{PSC_AR_WAY_ONESHOT, PSC_AR_WAY_NCCL}};
    x.ways[3] = (psc_coll_way_row_t){{PSC_AR_WAY_COPY_ENGINES, PSC_AR_WAY_TWOSHOT}}; /* in place not run: "-" */
    out = render(&x.r, NULL);
    /* nccl-tests' part: exactly the two NCCL rows, nothing after their 13 fields */
    l = line_at(out, 11);
    assert_string_equal(l, "           8             2     float     sum      -1    12.34    0.00    0.00       0    "
                           "11.98    0.00    0.00       0");
    free(l);
    l = line_at(out, 12);
    assert_string_equal(l, "   134217728      33554432     float     sum      -1  1234.50  108.72  108.72       5  "
                           "1230.10  109.11  109.11       0");
    free(l);
    l = line_at(out, 13);
    assert_string_equal(l, "# Out of bounds values : 1 FAILED");
    free(l);
    l = line_at(out, 14);
    assert_string_equal(l, "# Avg bus bandwidth    : 54.3781 ");
    free(l);
    tail = strstr(out, "# Collective test concluded: all_reduce_perf\n#\n\n");
    assert_non_null(tail);
    tail += strlen("# Collective test concluded: all_reduce_perf\n#\n\n");
    expect_lines(tail, want, sizeof(want) / sizeof(want[0]));
    assert_null(strstr(tail, "out-of-place"));
    assert_null(strstr(tail, "in-place"));
    free(out);

    /* p2pscope's alone: nccl-tests' table is theirs, the report's count in the footer, no table after */
    x.rows[0] = x.rows[2];
    x.rows[1] = x.rows[3];
    x.ways[0] = x.ways[2];
    x.ways[1] = x.ways[3];
    x.r.nrows = 2;
    x.r.own_tuned = 0;
    snprintf(x.r.own_tune_note, sizeof(x.r.own_tune_note), "not tuned: no NCCL");
    out = render(&x.r, NULL); /* but the ways they ran: after nccl-tests' last line */
    tail = strstr(out, "# Collective test concluded: all_reduce_perf\n#\n\n");
    assert_non_null(tail);
    tail += strlen("# Collective test concluded: all_reduce_perf\n#\n\n");
    expect_lines(tail, (const char *const[]){"# p2pscope " PSC_VERSION_STRING " coll",
                                             "# p2pscope's all-reduce: not tuned: no NCCL",
                                             "#      bytes      type       oop_way        ip_way",
                                             "#          8     float      one-shot          nccl",
                                             "#  134217728     float  copy-engines             -"},
                 5);
    free(out);
    x.r.ways = NULL;
    x.r.own_tune_note[0] = '\0';
    x.r.failed_rows = 1;
    x.r.avg_busbw_gbs = 51.62;
    out = render(&x.r, NULL);
    l = line_at(out, 11);
    assert_string_equal(l, "           8             2     float     sum      -1     6.17    0.00    0.00       0     "
                           "5.99    0.00    0.00       3");
    free(l);
    assert_true(has_line(out, "# Out of bounds values : 1 FAILED"));
    assert_null(strstr(out, "p2pscope"));
    free(out);

    /* the group could not be made here: why, after nccl-tests' text */
    x.rows[0].impl = x.rows[1].impl = PSC_COLL_IMPL_NCCL;
    snprintf(x.r.own_not_run, sizeof(x.r.own_not_run), "no peer access between GPUs 0 and 1");
    out = render(&x.r, NULL);
    tail = strstr(out, "# Collective test concluded: all_reduce_perf\n#\n\n");
    assert_non_null(tail);
    tail += strlen("# Collective test concluded: all_reduce_perf\n#\n\n");
    expect_lines(tail, (const char *const[]){"# p2pscope " PSC_VERSION_STRING " coll",
                                             "# p2pscope's all-reduce not run: no peer access between GPUs 0 and 1"},
                 2);
    free(out);
}

/* A report whose arrays are missing still prints the frame; NULL prints nothing. */
static void test_missing_arrays(void **state)
{
    fixture_t x;
    char *out;

    (void)state;
    two_ranks(&x);
    x.r.ranks = NULL;
    x.r.rows = NULL;
    out = render(&x.r, NULL);
    assert_non_null(strstr(out, "# Using devices\n#\n#  "));
    assert_null(strstr(out, "Rank"));
    assert_non_null(strstr(out, HEAD3 "\n# Out of bounds values : 0 OK\n"));
    free(out);
    out = render(NULL, NULL);
    assert_string_equal(out, "");
    free(out);
}

static void test_json(void **state)
{
    fixture_t x;
    json_t *j, *rows, *r0, *h;
    size_t keys;

    (void)state;
    two_ranks(&x);
    x.rows[0].r[0].iter_us = (psc_pctl_t){.n = 20, .min = 11, .p50 = 11.9, .p90 = 13, .p99 = 14.2, .max = 30, .mean = 12};
    x.rows[1].r[1].ran = 0;
    x.rows[1].r[0].wrong = 7;
    x.rows[0].r[1].wrong = -1;
    x.rows[0].r[0].wrong = 2;
    x.r.failed_rows = 2;
    j = psc_json_coll_report(&x.r);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "collective")), "all_reduce");
    assert_string_equal(json_string_value(json_object_get(j, "program")), "all_reduce_perf");
    assert_int_equal(json_integer_value(json_object_get(j, "nccl_version")), 22807);
    assert_string_equal(json_string_value(json_object_get(j, "nccl_version_string")), "2.28.7");
    assert_int_equal(json_integer_value(json_object_get(j, "nranks")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "nprocs")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "gpus_per_process")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "min_bytes")), 8);
    assert_int_equal(json_integer_value(json_object_get(j, "max_bytes")), 134217728);
    assert_int_equal(json_integer_value(json_object_get(j, "step_factor")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "iters")), 20);
    assert_int_equal(json_integer_value(json_object_get(j, "check")), 1);
    assert_float_equal(json_real_value(json_object_get(j, "busbw_factor")), 1.0, 1e-12);
    assert_int_equal(json_integer_value(json_object_get(j, "failed_rows")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "wrong_elements")), 9); /* 2 + 7; -1 is not a count */
    assert_float_equal(json_real_value(json_object_get(j, "avg_busbw_gbs")), 54.3781, 1e-12);
    assert_float_equal(json_real_value(json_object_get(j, "run_ms")), 5123.5, 1e-12);
    assert_int_equal(json_array_size(json_object_get(j, "ranks")), 2);
    h = json_array_get(json_object_get(j, "ranks"), 1);
    assert_true(json_is_null(json_object_get(h, "host"))); /* the host identifies the machine: only on request */
    {
        json_t *jid;

        psc_json_identify(1);
        jid = psc_json_coll_report(&x.r);
        psc_json_identify(0);
        assert_non_null(jid);
        assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(jid, "ranks"), 1),
                                                               "host")),
                            "gpunode01.example.com"); /* whole */
        json_decref(jid);
    }
    assert_string_equal(json_string_value(json_object_get(h, "pci_bus_id")), "0000:1A:00.0");
    assert_int_equal(json_integer_value(json_object_get(h, "device")), 1);
    assert_int_equal(json_integer_value(json_object_get(h, "pid")), 12345);
    rows = json_object_get(j, "rows");
    assert_int_equal(json_array_size(rows), 2);
    r0 = json_array_get(rows, 0);
    assert_int_equal(json_integer_value(json_object_get(r0, "size_bytes")), 8);
    assert_int_equal(json_integer_value(json_object_get(r0, "count")), 2);
    assert_string_equal(json_string_value(json_object_get(r0, "type")), "float");
    assert_int_equal(json_integer_value(json_object_get(r0, "type_bytes")), 4);
    assert_string_equal(json_string_value(json_object_get(r0, "redop")), "sum");
    assert_int_equal(json_integer_value(json_object_get(r0, "root")), -1);
    h = json_object_get(r0, "out_of_place");
    assert_true(json_is_true(json_object_get(h, "ran")));
    assert_float_equal(json_real_value(json_object_get(h, "time_us")), 12.34, 1e-12);
    assert_float_equal(json_real_value(json_object_get(h, "algbw_gbs")), 0.00065, 1e-15);
    assert_int_equal(json_integer_value(json_object_get(h, "wrong")), 2);
    assert_true(json_is_true(json_object_get(h, "checked")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(h, "per_operation_us"), "n")), 20);
    assert_float_equal(json_real_value(json_object_get(json_object_get(h, "per_operation_us"), "p99")), 14.2, 1e-12);
    h = json_object_get(r0, "in_place");
    assert_float_equal(json_real_value(json_object_get(h, "time_us")), 11.98, 1e-12);
    assert_true(json_is_null(json_object_get(h, "wrong")));
    assert_true(json_is_false(json_object_get(h, "checked")));
    assert_true(json_is_null(json_object_get(h, "per_operation_us")));
    h = json_object_get(json_array_get(rows, 1), "in_place");
    assert_true(json_is_false(json_object_get(h, "ran")));
    assert_true(json_is_null(json_object_get(h, "time_us")));
    assert_true(json_is_null(json_object_get(h, "busbw_gbs")));
    h = json_object_get(json_array_get(rows, 1), "out_of_place");
    assert_float_equal(json_real_value(json_object_get(h, "busbw_gbs")), 108.72, 1e-12);
    keys = count_keys(j);
    json_decref(j);

    /* a figure JSON has no number for becomes null: the document stays whole, no key dropped */
    x.r.avg_busbw_gbs = NAN;
    x.rows[0].r[0].time_us = INFINITY;
    x.rows[0].op = -1;
    x.r.nccl_version = 2708;
    j = psc_json_coll_report(&x.r);
    assert_non_null(j);
    assert_int_equal(count_keys(j), keys);
    assert_true(json_is_null(json_object_get(j, "avg_busbw_gbs")));
    assert_string_equal(json_string_value(json_object_get(j, "nccl_version_string")), "2.7.8");
    r0 = json_array_get(json_object_get(j, "rows"), 0);
    assert_string_equal(json_string_value(json_object_get(r0, "redop")), "none");
    assert_true(json_is_null(json_object_get(json_object_get(r0, "out_of_place"), "time_us")));
    json_decref(j);
}

static void test_json_run(void **state)
{
    fixture_t x;
    json_t *run = json_object(), *p, *c;

    (void)state;
    two_ranks(&x);
    x.r.graph_launches = 20;
    assert_int_equal(psc_json_run_add_coll(run, &x.r), PSC_OK);
    p = json_object_get(run, "parameters");
    assert_non_null(p);
    assert_string_equal(json_string_value(json_object_get(p, "collective")), "all_reduce");
    assert_int_equal(json_integer_value(json_object_get(p, "graph_launches")), 20);
    assert_int_equal(json_array_size(json_object_get(p, "devices")), 2);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(p, "devices"), 1)), 1);
    c = json_object_get(run, "coll");
    assert_non_null(c);
    assert_int_equal(json_array_size(json_object_get(c, "rows")), 2);
    json_decref(run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_float_str),
        cmocka_unit_test(test_two_ranks_whole),
        cmocka_unit_test(test_eight_ranks_two_hosts),
        cmocka_unit_test(test_every_collective),
        cmocka_unit_test(test_edges_and_failures),
        cmocka_unit_test(test_header_footer_variants),
        cmocka_unit_test(test_extras),
        cmocka_unit_test(test_own_rows_apart),
        cmocka_unit_test(test_missing_arrays),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_json_run),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
