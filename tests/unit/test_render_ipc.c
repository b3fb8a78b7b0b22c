/*
 * `p2pscope ipc`'s pages from hand-built reports: two workers, a method not
 * available here, a failed pair, a pair without its baseline in one process;
 * the rows, ratios and reasons in the tables, and the same in the JSON.
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

#include "report/json.h"
#include "report/render_ipc.h"

/* Copies in psc_ipc_bw_t order: between processes, in one process (distinct, so a swapped column shows). */
static const double between_gbs[PSC_IPC_NBW] = {396.0, 300.0, 350.0, 375.0};
static const double local_gbs[PSC_IPC_NBW] = {400.0, 250.0, 370.0, 300.0};

static void bw(psc_bw_result_t *b, double median, unsigned n)
{
    memset(b, 0, sizeof(*b));
    b->status = PSC_RESULT_PASSED;
    b->size = 64ull << 20;
    b->nsamples = n;
    for (unsigned i = 0; i < n; i++)
        b->samples_gbs[i] = median + (double)i - (double)(n / 2);
    b->stats.n = n;
    b->stats.median = median;
    b->stats.min = median - 1;
    b->stats.max = median + 1;
    b->verify.checked = n;
    b->verify.first_bad_offset = -1;
}

static void waived(psc_bw_result_t *b)
{
    memset(b, 0, sizeof(*b));
    b->status = PSC_RESULT_WAIVED;
    b->verify.first_bad_offset = -1;
    snprintf(b->reason, sizeof(b->reason), "not run in one process");
}

static void pctl(psc_pctl_t *p, unsigned n, double p50, double p99)
{
    memset(p, 0, sizeof(*p));
    p->n = n;
    p->min = p50 - 100;
    p->p50 = p50;
    p->p90 = (p50 + p99) / 2;
    p->p99 = p99;
    p->max = p99 + 100;
    p->mean = p50 + 10;
}

static void pair(psc_ipc_pair_t *p, int method, int importer, int exporter, int local)
{
    memset(p, 0, sizeof(*p));
    p->method = method;
    p->importer = importer;
    p->exporter = exporter;
    p->gpu_importer = importer; /* rank k on GPU k */
    p->gpu_exporter = exporter;
    p->status = PSC_RESULT_PASSED;
    for (int k = 0; k < PSC_IPC_NBW; k++) {
        bw(&p->bw[k], between_gbs[k] - (method == PSC_SHARE_VMM_FD ? 6 : 0), 5);
        if (local)
            bw(&p->bw_local[k], local_gbs[k], 3);
        else
            waived(&p->bw_local[k]);
    }
    pctl(&p->rtt_ns, 10000, 2400, 3100);
    if (local)
        pctl(&p->rtt_local_ns, 10000, 2000, 2600);
    p->export_us = 12.5;
    p->import_us = 80.25;
    p->map_us = method == PSC_SHARE_LEGACY ? 0 : 33.5;
    p->first_touch_us = 30.0;
    p->touch_us = 5.0;
    p->release_us = 40.0;
    p->naccess = 2;
    p->access[importer] = PSC_ACCESS_READWRITE;
    /* Legacy memory is asked about on the importer's GPU only. */
    p->access[exporter] = method == PSC_SHARE_LEGACY ? PSC_IPC_ACCESS_NOT_ASKED : PSC_ACCESS_NONE;
}

typedef struct {
    psc_ipc_report_t r;
    psc_ipc_pair_t pairs[3];
} fixture_t;

/*
 * legacy: 0 -> 1 passed, 1 -> 0 failed (a wrong byte); vmm_fd: 0 -> 1 with
 * no baseline in one process (WAIVED, n 0); vmm_fabric asked, not available.
 */
static void make(fixture_t *x)
{
    memset(x, 0, sizeof(*x));
    x->r.nranks = 2;
    x->r.gpu[0] = 0;
    x->r.gpu[1] = 1;
    x->r.pid[0] = 4242;
    x->r.pid[1] = 4343;
    for (int m = 0; m < PSC_IPC_METHODS; m++) {
        x->r.methods[m].method = PSC_SHARE_LEGACY + m;
        x->r.methods[m].asked = 1;
        x->r.methods[m].available = m < 2;
    }
    snprintf(x->r.methods[2].reason, sizeof(x->r.methods[2].reason),
             "fabric handles need an IMEX channel (\x1b[31m/dev/nvidia-caps-imex-channels)");
    pair(&x->pairs[0], PSC_SHARE_LEGACY, 0, 1, 1);
    pair(&x->pairs[1], PSC_SHARE_LEGACY, 1, 0, 1);
    x->pairs[1].status = PSC_RESULT_FAILED;
    x->pairs[1].bw[PSC_IPC_SM_WRITE].status = PSC_RESULT_FAILED;
    snprintf(x->pairs[1].reason, sizeof(x->pairs[1].reason), "sm_write: wrong byte at offset 4096: expected 0x5a, "
             "found 0xa5");
    snprintf(x->pairs[1].bw[PSC_IPC_SM_WRITE].reason, sizeof(x->pairs[1].bw[0].reason), "%s", x->pairs[1].reason);
    x->pairs[1].access[0] = PSC_ACCESS_READ;
    pair(&x->pairs[2], PSC_SHARE_VMM_FD, 0, 1, 0);
    x->r.npairs = 3;
    x->r.pairs = x->pairs;
    x->r.size = 64ull << 20;
    x->r.run_ms = 1234.4;
}

static char *render(const psc_ipc_report_t *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    psc_render_ipc(f, r);
    fclose(f);
    return buf;
}

/* The part of out from the line "\n<name>: " (a method's tables) to the next method or the end. */
static char *section(const char *out, const char *name)
{
    static const char *const names[] = {"\nlegacy: ", "\nvmm_fd: ", "\nvmm_fabric: "};
    char head[32];
    const char *from, *to = NULL;

    snprintf(head, sizeof(head), "\n%s: ", name);
    from = strstr(out, head);
    assert_non_null(from);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *n = strstr(from + 1, names[i]);

        if (n && (!to || n < to))
            to = n;
    }
    return strndup(from, to ? (size_t)(to - from) : strlen(from));
}

/* 1 when a line of text, its runs of spaces made one, equals want. */
static int has_row(const char *text, const char *want)
{
    const char *p = text;

    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[512];
        size_t n = 0;

        for (size_t i = 0; i < len && n + 1 < sizeof(line); i++)
            if (p[i] != ' ' || (n && line[n - 1] != ' '))
                line[n++] = p[i];
        while (n && line[n - 1] == ' ')
            n--;
        line[n] = '\0';
        if (strcmp(line, want) == 0)
            return 1;
        p += len + (eol ? 1 : 0);
    }
    fprintf(stderr, "no row '%s' in:\n%s", want, text);
    return 0;
}

static void test_ratio(void **state)
{
    psc_bw_result_t a, b;
    double ratio = -1;

    (void)state;
    bw(&a, 300, 3);
    bw(&b, 400, 3);
    assert_true(psc_ipc_bw_ratio(&a, &b, &ratio));
    assert_float_equal(ratio, 0.75, 1e-12); /* between / local, not the other way */
    waived(&b);
    ratio = -1;
    assert_false(psc_ipc_bw_ratio(&a, &b, &ratio));
    assert_float_equal(ratio, -1, 0); /* untouched */
    bw(&b, 400, 3);
    a.status = PSC_RESULT_FAILED;
    assert_false(psc_ipc_bw_ratio(&a, &b, &ratio));
    bw(&a, 300, 3);
    b.nsamples = 0;
    assert_false(psc_ipc_bw_ratio(&a, &b, &ratio));
    bw(&b, 0, 3);
    assert_false(psc_ipc_bw_ratio(&a, &b, &ratio));
}

static void test_workers_and_methods(void **state)
{
    fixture_t x;
    char *out;

    (void)state;
    make(&x);
    out = render(&x.r);
    assert_non_null(strstr(out, "p2pscope ipc: 2 worker processes, 67108864 bytes per copy (64 MiB), run 1234 ms\n"));
    assert_true(has_row(out, "rank gpu pid"));
    assert_true(has_row(out, "0 0 4242"));
    assert_true(has_row(out, "1 1 4343"));
    assert_true(has_row(out, "legacy: measured"));
    assert_true(has_row(out, "vmm_fd: measured"));
    free(out);
    x.r.joined = 1; /* ranks under mpirun: said so */
    out = render(&x.r);
    assert_non_null(strstr(out, "p2pscope ipc: 2 ranks (worker 0 in the coordinating process), 67108864 bytes"));
    assert_null(strstr(out, "worker processes"));
    /* The reason, escaped; and no tables for the method not run. */
    assert_non_null(strstr(out, "  vmm_fabric: not available here: fabric handles need an IMEX channel\n"
                                "    (\\x1b[31m/dev/nvidia-caps-imex-channels)\n"));
    assert_null(strstr(out, "\nvmm_fabric: "));
    assert_null(strchr(out, '\x1b'));
    /* The legend says which GPU is which in "A -> B". */
    assert_non_null(strstr(out, "the worker on GPU A imports the memory the worker on GPU B exported"));
    /* A method not asked is not listed. */
    x.r.methods[2].asked = 0;
    free(out);
    out = render(&x.r);
    assert_null(strstr(out, "vmm_fabric"));
    free(out);
}

static void test_bandwidth_rows(void **state)
{
    fixture_t x;
    char *out, *legacy, *vmm;

    (void)state;
    make(&x);
    out = render(&x.r);
    legacy = section(out, "legacy");
    vmm = section(out, "vmm_fd");
    assert_non_null(strstr(legacy, "bandwidth [GB/s, 1 GB = 1e9 bytes; median of 5 samples; ratio = between "
                                   "processes / in one process]\n"));
    assert_true(has_row(legacy, "pair ranks copy between processes in one process ratio"));
    assert_true(has_row(legacy, "0 -> 1 0 -> 1 ce_write 396.00 400.00 0.990"));
    assert_true(has_row(legacy, "0 -> 1 0 -> 1 ce_read 300.00 250.00 1.200"));
    assert_true(has_row(legacy, "0 -> 1 0 -> 1 sm_write 350.00 370.00 0.946"));
    assert_true(has_row(legacy, "0 -> 1 0 -> 1 sm_read 375.00 300.00 1.250"));
    /* The failed pair: its failed copy, no ratio there; its other copies as measured. */
    assert_true(has_row(legacy, "1 -> 0 1 -> 0 sm_write FAIL 370.00 -"));
    assert_true(has_row(legacy, "1 -> 0 1 -> 0 ce_write 396.00 400.00 0.990"));
    /* No baseline in one process: "-" for it and for the ratio. */
    assert_true(has_row(vmm, "0 -> 1 0 -> 1 ce_write 390.00 - -"));
    assert_true(has_row(vmm, "0 -> 1 0 -> 1 sm_read 369.00 - -"));
    free(legacy);
    free(vmm);
    free(out);
}

static void test_latency_costs_mapping(void **state)
{
    fixture_t x;
    char *out, *legacy, *vmm;

    (void)state;
    make(&x);
    x.pairs[0].rtt_ns.p50 = 2500; /* 2500 / 2000 */
    out = render(&x.r);
    legacy = section(out, "legacy");
    vmm = section(out, "vmm_fd");
    assert_true(has_row(legacy, "pair ranks p50 p99 in one process p50 ratio"));
    assert_true(has_row(legacy, "0 -> 1 0 -> 1 2500 3100 2000 1.250"));
    assert_true(has_row(legacy, "1 -> 0 1 -> 0 2400 3100 2000 1.200"));
    assert_true(has_row(vmm, "0 -> 1 0 -> 1 2400 3100 - -"));
    assert_true(has_row(legacy, "pair ranks export import map first touch touch release"));
    assert_true(has_row(legacy, "0 -> 1 0 -> 1 12.5 80.2 - 30.0 5.0 40.0")); /* legacy maps as it imports */
    assert_true(has_row(vmm, "0 -> 1 0 -> 1 12.5 80.2 33.5 30.0 5.0 40.0"));
    assert_true(has_row(legacy, "pair ranks gpu0 gpu1"));
    assert_true(has_row(legacy, "0 -> 1 0 -> 1 rw n/a"));
    assert_true(has_row(legacy, "1 -> 0 1 -> 0 r rw"));
    assert_true(has_row(vmm, "0 -> 1 0 -> 1 rw -"));
    free(legacy);
    free(vmm);
    free(out);
}

static void test_failed_pair_reason(void **state)
{
    fixture_t x;
    char *out, *legacy, *vmm;
    size_t width = 0;

    (void)state;
    make(&x);
    assert_int_equal(psc_ipc_report_nfailed(&x.r), 1);
    out = render(&x.r);
    legacy = section(out, "legacy");
    vmm = section(out, "vmm_fd");
    /* Below its method's tables, once (the copy that failed says the same). */
    assert_non_null(strstr(legacy, "\npair 1 -> 0 (ranks 1 -> 0): failed: sm_write: wrong byte at offset 4096: "
                                   "expected 0x5a, found 0xa5\n"));
    assert_null(strstr(legacy, "sm_write between processes: FAILED"));
    assert_null(strstr(vmm, "failed"));
    free(out);

    /* A copy failing in a pair that passed is named on its own line, and fails the run. */
    x.pairs[2].bw_local[PSC_IPC_CE_READ].status = PSC_RESULT_FAILED;
    snprintf(x.pairs[2].bw_local[PSC_IPC_CE_READ].reason, 64, "wrong byte at offset 7");
    assert_int_equal(psc_ipc_report_nfailed(&x.r), 2);
    /* A long reason is wrapped within the width. */
    memset(x.pairs[1].reason, 0, sizeof(x.pairs[1].reason));
    for (int i = 0; i < 40; i++)
        strcat(x.pairs[1].reason, "worker 1 ");
    out = render(&x.r);
    assert_non_null(strstr(out, "\npair 0 -> 1 (ranks 0 -> 1) ce_read in one process: FAILED: wrong byte at offset 7\n"));
    assert_non_null(strstr(out, "\npair 1 -> 0 (ranks 1 -> 0): failed: worker 1 worker 1"));
    assert_non_null(strstr(out, "\n    worker 1 worker 1"));
    for (const char *p = out; *p;) {
        size_t len = strcspn(p, "\n");

        width = len > width ? len : width;
        p += len + (p[len] ? 1 : 0);
    }
    assert_true(width <= PSC_IPC_TEXT_WIDTH);
    free(legacy);
    free(vmm);
    free(out);

    /* A pair failed by itself (a round trip read a wrong flag) with every copy passed. */
    make(&x);
    x.pairs[1].bw[PSC_IPC_SM_WRITE].status = PSC_RESULT_PASSED;
    assert_int_equal(psc_ipc_report_nfailed(&x.r), 1);

    /* A waived pair is not a failure. */
    make(&x);
    x.pairs[1].status = PSC_RESULT_WAIVED;
    x.pairs[1].bw[PSC_IPC_SM_WRITE].status = PSC_RESULT_WAIVED;
    assert_int_equal(psc_ipc_report_nfailed(&x.r), 0);
}

static json_t *pair_json(json_t *doc, size_t i)
{
    json_t *p = json_array_get(json_object_get(doc, "pairs"), i);

    assert_non_null(p);
    return p;
}

static json_t *copy_json(json_t *pair, const char *copy, const char *side)
{
    json_t *c = json_object_get(json_object_get(pair, "bandwidth"), copy);

    assert_non_null(c);
    return side ? json_object_get(c, side) : c;
}

static void test_json(void **state)
{
    fixture_t x;
    json_t *doc, *p, *c, *b, *m;

    (void)state;
    make(&x);
    doc = psc_json_ipc_report(&x.r);
    assert_non_null(doc);
    assert_int_equal(json_integer_value(json_object_get(doc, "size_bytes")), 64 << 20);
    assert_int_equal(json_integer_value(json_object_get(doc, "failed_pairs")), 1);
    assert_int_equal(json_array_size(json_object_get(doc, "workers")), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(doc, "workers"), 1), "pid")),
                     4343);
    assert_string_equal(json_string_value(json_object_get(doc, "workers_started_by")), "p2pscope");
    m = json_array_get(json_object_get(doc, "methods"), 2);
    assert_string_equal(json_string_value(json_object_get(m, "name")), "vmm_fabric");
    assert_true(json_is_true(json_object_get(m, "asked")));
    assert_true(json_is_false(json_object_get(m, "available")));
    assert_non_null(strstr(json_string_value(json_object_get(m, "reason")), "IMEX channel"));
    assert_int_equal(json_array_size(json_object_get(doc, "pairs")), 3);

    p = pair_json(doc, 0);
    assert_string_equal(json_string_value(json_object_get(p, "method")), "legacy");
    assert_int_equal(json_integer_value(json_object_get(p, "importer")), 0);
    assert_int_equal(json_integer_value(json_object_get(p, "gpu_exporter")), 1);
    assert_string_equal(json_string_value(json_object_get(p, "status")), "passed");
    assert_true(json_is_null(json_object_get(p, "reason")));
    for (int k = 0; k < PSC_IPC_NBW; k++) {
        c = copy_json(p, psc_ipc_bw_name(k), NULL);
        assert_float_equal(json_real_value(json_object_get(c, "ratio")), between_gbs[k] / local_gbs[k], 1e-9);
        b = json_object_get(c, "between_processes");
        assert_float_equal(json_real_value(json_object_get(json_object_get(b, "stats"), "median")), between_gbs[k],
                           1e-9);
        assert_int_equal(json_array_size(json_object_get(b, "samples")), 5);
        assert_string_equal(json_string_value(json_object_get(b, "name")), psc_ipc_bw_name(k));
        assert_string_equal(json_string_value(json_object_get(b, "issuer")), "gpu0");
        b = json_object_get(c, "in_one_process");
        assert_float_equal(json_real_value(json_object_get(json_object_get(b, "stats"), "median")), local_gbs[k], 1e-9);
        assert_int_equal(json_array_size(json_object_get(b, "samples")), 3);
    }
    /* The data's direction: writes from the importer's memory to the exporter's, reads the other way. */
    assert_string_equal(json_string_value(json_object_get(copy_json(p, "ce_write", "between_processes"), "direction")),
                        "gpu0 -> gpu1");
    assert_string_equal(json_string_value(json_object_get(copy_json(p, "sm_read", "between_processes"), "direction")),
                        "gpu1 -> gpu0");
    assert_string_equal(json_string_value(json_object_get(copy_json(p, "sm_read", "between_processes"), "engine")),
                        "sm");
    b = json_object_get(copy_json(p, "ce_read", "between_processes"), "verify");
    assert_int_equal(json_integer_value(json_object_get(b, "checked_samples")), 5);
    assert_true(json_is_null(json_object_get(b, "first_bad_offset")));
    c = json_object_get(p, "round_trip_ns");
    assert_float_equal(json_real_value(json_object_get(json_object_get(c, "between_processes"), "p50")), 2400, 0);
    assert_float_equal(json_real_value(json_object_get(json_object_get(c, "between_processes"), "p99")), 3100, 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "in_one_process"), "n")), 10000);
    assert_float_equal(json_real_value(json_object_get(c, "ratio_p50")), 1.2, 1e-12);
    c = json_object_get(p, "costs_us");
    assert_float_equal(json_real_value(json_object_get(c, "import")), 80.25, 0);
    assert_float_equal(json_real_value(json_object_get(c, "release")), 40.0, 0);
    c = json_object_get(p, "access");
    assert_int_equal(json_array_size(c), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 0), "access")), "rw");
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 1), "access")), "not_asked");

    p = pair_json(doc, 1);
    assert_string_equal(json_string_value(json_object_get(p, "status")), "failed");
    /* The importer (gpu1 here) issues every copy, in both processes' figures. */
    assert_string_equal(json_string_value(json_object_get(copy_json(p, "ce_read", "between_processes"), "issuer")),
                        "gpu1");
    assert_string_equal(json_string_value(json_object_get(copy_json(p, "sm_write", "in_one_process"), "issuer")),
                        "gpu1");
    assert_string_equal(json_string_value(json_object_get(copy_json(p, "ce_read", "in_one_process"), "direction")),
                        "gpu0 -> gpu1");
    assert_non_null(strstr(json_string_value(json_object_get(p, "reason")), "offset 4096"));
    assert_true(json_is_null(json_object_get(copy_json(p, "sm_write", NULL), "ratio")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(p, "access"), 0), "access")),
                        "r");

    /* No baseline: the waived result is kept, with no ratio. */
    p = pair_json(doc, 2);
    assert_string_equal(json_string_value(json_object_get(p, "method")), "vmm_fd");
    c = copy_json(p, "ce_write", NULL);
    assert_true(json_is_null(json_object_get(c, "ratio")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(c, "in_one_process"), "status")), "waived");
    assert_true(json_is_null(json_object_get(json_object_get(p, "round_trip_ns"), "in_one_process")));
    assert_true(json_is_null(json_object_get(json_object_get(p, "round_trip_ns"), "ratio_p50")));
    assert_float_equal(json_real_value(json_object_get(json_object_get(p, "costs_us"), "map")), 33.5, 0);
    c = json_object_get(p, "access");
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 0), "access")), "rw");
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 1), "access")), "none");
    json_decref(doc);
}

static void test_json_run(void **state)
{
    const int devs[] = {0, 0};
    psc_ipc_opts_t opts;
    fixture_t x;
    json_t *run = json_object(), *p, *m;

    (void)state;
    make(&x);
    psc_ipc_opts_default(&opts);
    opts.methods = (1u << PSC_SHARE_LEGACY) | (1u << PSC_SHARE_VMM_FABRIC);
    opts.round_trips = 77;
    opts.no_local = 1;
    opts.timeout_ms = 2500;
    assert_int_equal(psc_json_run_add_ipc(run, &x.r, &opts, devs, 2), PSC_OK);
    p = json_object_get(run, "parameters");
    assert_int_equal(json_array_size(json_object_get(p, "devices")), 2);
    m = json_object_get(p, "methods");
    assert_int_equal(json_array_size(m), 2);
    assert_string_equal(json_string_value(json_array_get(m, 0)), "legacy");
    assert_string_equal(json_string_value(json_array_get(m, 1)), "vmm_fabric");
    assert_int_equal(json_integer_value(json_object_get(p, "round_trips")), 77);
    assert_true(json_is_false(json_object_get(p, "in_one_process")));
    assert_float_equal(json_real_value(json_object_get(p, "timeout_ms")), 2500, 0);
    assert_int_equal(json_integer_value(json_object_get(p, "size_bytes")), PSC_IPC_DEFAULT_SIZE);
    assert_non_null(json_object_get(json_object_get(run, "ipc"), "pairs"));
    json_decref(run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ratio),
        cmocka_unit_test(test_workers_and_methods),
        cmocka_unit_test(test_bandwidth_rows),
        cmocka_unit_test(test_latency_costs_mapping),
        cmocka_unit_test(test_failed_pair_reason),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_json_run),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
