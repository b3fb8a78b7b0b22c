/*
 * Expectation files (src/report/expect*.c): the parser (good files, every
 * error with its line), the check of a run's figures (globs, units, bounds,
 * misses against passes, a rule matching nothing), auto rules from recorded
 * topologies, and the shipped files. No GPU, no driver.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "report/expect.h"

static psc_expect_t *psc__parse_ok(const char *text)
{
    psc_expect_t *e = NULL;
    char err[512] = "";

    if (psc_expect_parse(text, strlen(text), "t.expect", &e, err, sizeof(err)) != PSC_OK)
        fprintf(stderr, "unexpected: %s\n", err);
    assert_non_null(e);
    return e;
}

static void test_size_names(void **state)
{
    char b[32];

    (void)state;
    assert_string_equal(psc_expect_size_name(8, b, sizeof(b)), "8B");
    assert_string_equal(psc_expect_size_name(1536, b, sizeof(b)), "1536B");
    assert_string_equal(psc_expect_size_name(4096, b, sizeof(b)), "4KiB");
    assert_string_equal(psc_expect_size_name(512ull << 20, b, sizeof(b)), "512MiB");
    assert_string_equal(psc_expect_size_name(3ull << 30, b, sizeof(b)), "3GiB");
    assert_string_equal(psc_expect_size_name(1ull << 40, b, sizeof(b)), "1TiB");
}

static void test_parse_good(void **state)
{
    const char *text = "# a comment line\n"
                       "\n"
                       "   \t  # indented comment\n"
                       "bw  gpu_to_gpu_write_ce  gpu0->gpu1  >= 350 GB/s   # trailing comment\n"
                       "margin 15%\n"
                       "bw 'x' gpu0->gpu1@64K >= 350000 MB/s min\r\n"
                       "margin 50 %\n"
                       "lat * * <= 3.5 us\n"
                       "lat *_chase gpu?->gpu[01] <= 900 ns p99\n"
                       "coll all_reduce 512M >= 300 GB/s busbw\n"
                       "coll all_reduce 1G/p2pscope <= 2 ms\n"
                       "margin 0%\n"
                       "coll * *MiB >= 1 GB/s algbw";
    psc_expect_t *e = psc__parse_ok(text);
    const psc_expect_rule_t *r = e->rules;

    (void)state;
    assert_int_equal(e->n, 7);
    assert_int_equal(r[0].kind, PSC_EXPECT_BW);
    assert_string_equal(r[0].test, "gpu_to_gpu_write_ce");
    assert_string_equal(r[0].kase, "gpu0->gpu1");
    assert_int_equal(r[0].op, PSC_EXPECT_GE);
    assert_true(r[0].value == 350 && r[0].bound == 350 && r[0].scale == 1);
    assert_string_equal(r[0].figure, "median");
    assert_string_equal(r[0].where, "t.expect:4");
    /* the margin loosens what follows; sizes written as the run names them */
    assert_string_equal(r[1].kase, "gpu0->gpu1@64KiB");
    assert_string_equal(r[1].unit, "MB/s");
    assert_true(r[1].scale == 1e-3);
    assert_string_equal(r[1].figure, "min");
    assert_true(r[1].bound > 297499.99 && r[1].bound < 297500.01);
    assert_string_equal(r[1].where, "t.expect:6");
    assert_int_equal(r[2].kind, PSC_EXPECT_LAT);
    assert_int_equal(r[2].op, PSC_EXPECT_LE);
    assert_true(r[2].value == 3.5 && r[2].bound == 3.5 * 1.5 && r[2].scale == 1e3);
    assert_string_equal(r[2].figure, "p50");
    assert_string_equal(r[3].kase, "gpu?->gpu[01]");
    assert_string_equal(r[3].figure, "p99");
    assert_string_equal(r[4].kase, "512MiB");
    assert_string_equal(r[4].figure, "busbw");
    assert_string_equal(r[5].kase, "1GiB/p2pscope");
    assert_string_equal(r[5].figure, "time"); /* a time unit: the time figure */
    assert_true(r[5].scale == 1e6);
    assert_true(r[6].bound == 1 && r[6].margin_pct == 0);
    assert_string_equal(r[6].kase, "*MiB");
    assert_string_equal(r[6].figure, "algbw");
    assert_string_equal(r[6].where, "t.expect:13");
    psc_expect_free(e);

    e = psc__parse_ok("");
    assert_int_equal(e->n, 0);
    psc_expect_free(e);
}

static void test_parse_errors(void **state)
{
    static const struct {
        const char *text;
        const char *want; /* the whole start of the message, then a fragment */
        const char *fragment;
    } bad[] = {
        {"foo a b >= 1 GB/s\n", "t.expect:1: unknown kind 'foo'", "accepted bw"},
        {"# ok\nbw a b >= 1\n", "t.expect:2: 5 fields", "accepted KIND TEST CASE OP VALUE UNIT [FIGURE]"},
        {"bw a b >= 1 GB/s median extra\n", "t.expect:1: 8 fields", "accepted KIND"},
        {"bw\n", "t.expect:1: 1 field;", "accepted KIND"},
        {"\n\nbw a b => 1 GB/s\n", "t.expect:3: bad bound '=>'", "accepted >= or <="},
        {"bw a b > 1 GB/s\n", "t.expect:1: bad bound '>'", "accepted >= or <="},
        {"bw a b >= 0 GB/s\n", "t.expect:1: bad value '0'", "above 0"},
        {"bw a b >= -3 GB/s\n", "t.expect:1: bad value '-3'", "above 0"},
        {"bw a b >= abc GB/s\n", "t.expect:1: bad value 'abc'", "above 0"},
        {"bw a b >= nan GB/s\n", "t.expect:1: bad value 'nan'", "above 0"},
        {"bw a b >= inf GB/s\n", "t.expect:1: bad value 'inf'", "above 0"},
        {"bw a b >= 1e999 GB/s\n", "t.expect:1: bad value '1e999'", "above 0"},
        {"bw a b >= 350GB/s x\n", "t.expect:1: bad value '350GB/s'", "above 0"},
        {"bw a b >= 1 Gb/s\n", "t.expect:1: unknown unit 'Gb/s'", "accepted GB/s, MB/s, ns, us, ms"},
        {"bw a b >= 1 GB/s p99\n", "t.expect:1: unknown bw figure 'p99'", "accepted median"},
        {"bw a b <= 1 us\n", "t.expect:1: bw has no figure in us", "accepted median"},
        {"bw a b <= 1 us median\n", "t.expect:1: bw median is a bandwidth, not in us", "accepted median"},
        {"lat a b <= 1 GB/s\n", "t.expect:1: lat has no figure in GB/s", "accepted p50"},
        {"lat a b <= 1 us busbw\n", "t.expect:1: unknown lat figure 'busbw'", "accepted p50"},
        {"coll a 8 <= 1 GB/s time\n", "t.expect:1: coll time is a time, not in GB/s", "accepted busbw"},
        {"coll a big >= 1 GB/s\n", "t.expect:1: bad size in case 'big'", "accepted a size or a glob"},
        {"coll a 0 >= 1 GB/s\n", "t.expect:1: bad size in case '0'", "accepted a size"},
        {"bw a gpu0->gpu1@12Q >= 1 GB/s\n", "t.expect:1: bad size in case 'gpu0->gpu1@12Q'", "accepted PATH"},
        {"margin 15\n", "t.expect:1: margin '15' has no '%'", "accepted a percentage"},
        {"margin 100%\n", "t.expect:1: bad margin '100%'", "from 0 to 99"},
        {"margin -5%\n", "t.expect:1: bad margin '-5%'", "from 0 to 99"},
        {"margin\n", "t.expect:1: a margin line is 'margin PCT%'", "margin 15%"},
        {"margin 1 2 3\n", "t.expect:1: a margin line", "margin 15%"},
        {"bw a b >= 1 GB/s\nbw a\0b >= 1 GB/s\n", "t.expect:2: a NUL byte", "accepted a text file"},
    };
    char err[512];

    (void)state;
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        size_t len = strlen(bad[k].text);
        psc_expect_t *e = NULL;
        psc_status_t st;

        if (strstr(bad[k].want, "NUL"))
            len = sizeof("bw a b >= 1 GB/s\nbw a\0b >= 1 GB/s\n") - 1;
        err[0] = '\0';
        st = psc_expect_parse(bad[k].text, len, "t.expect", &e, err, sizeof(err));
        if (st != PSC_ERR_INVALID || strncmp(err, bad[k].want, strlen(bad[k].want)) != 0 ||
            !strstr(err, bad[k].fragment))
            fprintf(stderr, "case %zu: st=%d err=%s\n", k, st, err);
        assert_int_equal(st, PSC_ERR_INVALID);
        assert_null(e); /* nothing on failure */
        assert_memory_equal(err, bad[k].want, strlen(bad[k].want));
        assert_non_null(strstr(err, bad[k].fragment));
    }
}

static void test_parse_limits(void **state)
{
    char line[1200], err[512];
    psc_expect_t *e = NULL;

    (void)state;
    memset(line, 'a', sizeof(line));
    memcpy(line, "bw ", 3);
    line[sizeof(line) - 1] = '\0';
    assert_int_equal(psc_expect_parse(line, strlen(line), "t.expect", &e, err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "t.expect:1: line longer than 1024 bytes"));
    snprintf(line, sizeof(line), "bw %0120d b >= 1 GB/s\n", 7);
    assert_int_equal(psc_expect_parse(line, strlen(line), "t.expect", &e, err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "t.expect:1: test or case longer than"));
    assert_null(e);
    assert_int_equal(psc_expect_load("/nonexistent/x.expect", &e, err, sizeof(err)), PSC_ERR_IO);
    assert_null(e);
    assert_non_null(strstr(err, "/nonexistent/x.expect"));
}

/* A bw result that passed: test by name, src -> dst, the median (the other statistics around it). */
static void psc__bw(psc_bw_result_t *x, const char *test, int src, int dst, uint64_t size, double median)
{
    memset(x, 0, sizeof(*x));
    assert_int_equal(psc_bw_test_from_name(test, &x->c.test), PSC_OK);
    x->c.src = src;
    x->c.dst = dst;
    x->c.issuer = src;
    x->c.nxfer = 1;
    x->status = PSC_RESULT_PASSED;
    x->size = size;
    x->nsamples = 3;
    x->stats.n = 3;
    x->stats.median = x->stats.mean = median;
    x->stats.min = median - 10;
    x->stats.max = median + 10;
}

static psc_expect_result_t *psc__check_bw(const psc_expect_t *e, psc_bw_result_t *res, size_t n, int nsizes)
{
    psc_expect_result_t *r = psc_expect_result_new(e);
    psc_bw_suite_t s;

    memset(&s, 0, sizeof(s));
    s.nresults = n;
    s.results = res;
    s.nsizes = nsizes;
    assert_non_null(r);
    assert_int_equal(psc_expect_check_bw(e, &s, r), PSC_OK);
    return r;
}

/* A run of chosen sizes (-s SIZE: one; -b/-e: a sweep). */
static psc_expect_result_t *psc__check_sweep(const psc_expect_t *e, psc_bw_result_t *res, size_t n,
                                             const uint64_t *sizes, int nsizes)
{
    psc_expect_result_t *r = psc_expect_result_new(e);
    psc_bw_suite_t s;

    memset(&s, 0, sizeof(s));
    s.nresults = n;
    s.results = res;
    s.nsizes = nsizes;
    for (int k = 0; k < nsizes; k++)
        s.sizes[k] = sizes[k];
    assert_non_null(r);
    assert_int_equal(psc_expect_check_bw(e, &s, r), PSC_OK);
    return r;
}

static char *psc__render(const psc_expect_t *e, const psc_expect_result_t *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    assert_non_null(f);
    psc_expect_render(f, e, r);
    fclose(f);
    return text;
}

static void test_check_bounds_and_units(void **state)
{
    psc_bw_result_t res[3];
    psc_expect_t *e;
    psc_expect_result_t *r;
    char *text;

    (void)state;
    psc__bw(&res[0], "gpu_to_gpu_write_ce", 0, 1, 512ull << 20, 350);
    psc__bw(&res[1], "gpu_to_gpu_read_ce", 1, 0, 512ull << 20, 200);
    psc__bw(&res[2], "host_to_gpu_ce", PSC_HOST, 0, 32ull << 20, 55);
    /* a bound met exactly passes (>=, <=); each unit's factor; each figure */
    e = psc__parse_ok("bw gpu_to_gpu_write_ce gpu0->gpu1 >= 350 GB/s\n"  /* 0: equal: pass */
                      "bw gpu_to_gpu_write_ce gpu0->gpu1 <= 350 GB/s\n"  /* 1: equal: pass */
                      "bw gpu_to_gpu_write_ce gpu0->gpu1 >= 350.5 GB/s\n" /* 2: miss */
                      "bw gpu_to_gpu_write_ce gpu0->gpu1 >= 349000 MB/s\n" /* 3: pass */
                      "bw gpu_to_gpu_write_ce gpu0->gpu1 >= 351000 MB/s\n" /* 4: miss */
                      "bw gpu_to_gpu_write_ce gpu0->gpu1 <= 345 GB/s min\n" /* 5: 340: pass */
                      "bw gpu_to_gpu_write_ce gpu0->gpu1 >= 355 GB/s max\n" /* 6: 360: pass */
                      "bw gpu_to_gpu_write_ce gpu0->gpu1 <= 355 GB/s max\n" /* 7: miss */
                      "bw host_to_gpu_ce host->gpu0 <= 50 GB/s\n");      /* 8: miss */
    r = psc__check_bw(e, res, 3, 1);
    for (size_t i = 0; i < e->n; i++)
        assert_int_equal(r->checks[i], 1);
    assert_int_equal(r->nchecks, 9);
    assert_int_equal(r->nmisses, 4);
    assert_int_equal(r->misses[0].rule, 2);
    assert_int_equal(r->misses[1].rule, 4);
    assert_true(r->misses[1].value > 349999 && r->misses[1].value < 350001); /* in the rule's unit */
    assert_int_equal(r->misses[2].rule, 7);
    assert_string_equal(r->misses[2].figure, "max");
    assert_true(r->misses[2].value == 360);
    assert_int_equal(r->misses[3].rule, 8);
    assert_string_equal(r->misses[3].test, "host_to_gpu_ce");
    assert_string_equal(r->misses[3].kase, "host->gpu0@32MiB"); /* a bw case always names its size */
    text = psc__render(e, r);
    assert_non_null(strstr(text, "expect: MISS gpu_to_gpu_write_ce gpu0->gpu1@512MiB median 350 GB/s (bound >= 350.5 "
                                 "GB/s, t.expect:3)\n"));
    assert_non_null(strstr(text, "expect: MISS host_to_gpu_ce host->gpu0@32MiB median 55 GB/s (bound <= 50 GB/s, "
                                 "t.expect:9)\n"));
    assert_non_null(strstr(text, "expect: 9 rules, 9 checks, 4 misses\n"));
    assert_null(strstr(text, "warning"));
    free(text);
    psc_expect_result_free(r);
    psc_expect_free(e);

    /* a margin loosens the bound: 200 against 235 x 0.85 = 199.75 passes, 236 x 0.85 = 200.6 misses */
    e = psc__parse_ok("margin 15%\nbw gpu_to_gpu_read_ce * >= 235 GB/s\nbw gpu_to_gpu_read_ce * >= 236 GB/s\n");
    r = psc__check_bw(e, res, 3, 1);
    assert_int_equal(r->nchecks, 2);
    assert_int_equal(r->nmisses, 1);
    assert_int_equal(r->misses[0].rule, 1);
    psc_expect_result_free(r);
    psc_expect_free(e);
}

static void test_check_globs_and_unmatched(void **state)
{
    static const uint64_t sweep[2] = {4096, 65536};
    psc_bw_result_t res[4];
    psc_expect_t *e;
    psc_expect_result_t *r;
    json_t *j;
    char *text;

    (void)state;
    psc__bw(&res[0], "gpu_to_gpu_write_ce", 0, 1, 4096, 10);
    psc__bw(&res[1], "gpu_to_gpu_read_ce", 1, 0, 4096, 10);
    psc__bw(&res[2], "gpu_to_gpu_read_ce", 1, 0, 65536, 20);
    psc__bw(&res[3], "gpu_to_gpu_write_sm", 0, 1, 65536, 30);
    res[3].status = PSC_RESULT_FAILED; /* no figure: a miss, its reason in place of the figure */
    snprintf(res[3].reason, sizeof(res[3].reason), "wrong bytes at offset 7");
    e = psc__parse_ok("bw gpu_to_gpu_*_ce *@* >= 1 GB/s\n"            /* 0: 3 */
                      "bw *read* *@* >= 1 GB/s\n"                       /* 1: 2 */
                      "bw * gpu1->*@* >= 1 GB/s\n"                      /* 2: 2 */
                      "bw * gpu[01]->gpu?@* >= 1 GB/s\n"                /* 3: 4, the failed one a miss */
                      "bw * *@64KiB >= 1 GB/s\n"                        /* 4: 2, the failed one a miss */
                      "bw * gpu1->gpu0@4K >= 1 GB/s\n"                  /* 5: 1, the size written 4K */
                      "bw gpu_to_gpu_write_ce gpu0->gpu1 >= 1 GB/s\n"   /* 6: 0: no size, in a sweep: not applied */
                      "bw gpu_to_gpu_read_ce gpu9->gpu0@* >= 1 GB/s\n"  /* 7: 0, its test ran: a warning */
                      "bw gpu_to_gpu_writ_ce * >= 1 GB/s\n"             /* 8: 0, names no test: a warning */
                      "bw host_to_gpu_ce *@* >= 1 GB/s\n"               /* 9: 0, its test did not run */
                      "bw gpu_to_gpu_write_sm *@* >= 1 GB/s\n"          /* 10: 1, its result failed: a miss */
                      "lat nothing * <= 1 us\n");                       /* 11: another kind */
    r = psc__check_sweep(e, res, 4, sweep, 2);
    assert_int_equal(r->checks[0], 3);
    assert_int_equal(r->checks[1], 2);
    assert_int_equal(r->checks[2], 2);
    assert_int_equal(r->checks[3], 4);
    assert_int_equal(r->checks[4], 2);
    assert_int_equal(r->checks[5], 1);
    for (size_t i = 6; i < 10; i++)
        assert_int_equal(r->checks[i], 0);
    assert_int_equal(r->checks[10], 1);
    assert_int_equal(r->nmisses, 3);
    assert_int_equal(r->nstatus, 3);
    assert_int_equal(r->misses[0].rule, 3);
    assert_string_equal(r->misses[0].why, "failed: wrong bytes at offset 7");
    assert_false(psc_expect_unmatched(e, r, 6));
    assert_true(psc_expect_unmatched(e, r, 7));
    assert_true(psc_expect_unmatched(e, r, 8));
    assert_false(psc_expect_unmatched(e, r, 9));
    assert_false(psc_expect_unmatched(e, r, 10));
    assert_false(psc_expect_unmatched(e, r, 11));
    text = psc__render(e, r);
    assert_non_null(strstr(text, "expect: MISS gpu_to_gpu_write_sm gpu0->gpu1@64KiB failed: wrong bytes at offset 7 "
                                 "(bound >= 1 GB/s, t.expect:11)\n"));
    assert_non_null(strstr(text, "expect: warning: t.expect:9: 'gpu_to_gpu_writ_ce' names no bw test"));
    assert_non_null(strstr(text, "expect: warning: t.expect:8: rule 'bw gpu_to_gpu_read_ce gpu9->gpu0@* >= 1 GB/s'"));
    assert_null(strstr(text, "t.expect:7:"));
    assert_null(strstr(text, "t.expect:10:"));
    assert_null(strstr(text, "t.expect:12:"));
    assert_null(strstr(text, "no figure checked"));
    assert_non_null(strstr(text, "expect: 12 rules, 15 checks, 3 misses (3 cases failed or waived) (3 rules not applied: "
                                 "no figure of their tests, at their sizes, in this run)\n"));
    free(text);
    j = psc_json_expect(e, r);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "checks")), 15);
    assert_int_equal(json_integer_value(json_object_get(j, "failed_or_waived")), 3);
    assert_int_equal(json_array_size(json_object_get(j, "unmatched")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "not_applied")), 3);
    assert_string_equal(json_string_value(json_array_get(json_object_get(j, "unmatched"), 0)), "t.expect:8");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "misses"), 0), "reason")),
                        "failed: wrong bytes at offset 7");
    assert_true(json_is_null(json_object_get(json_array_get(json_object_get(j, "misses"), 0), "value")));
    assert_true(json_is_false(json_object_get(j, "passed")));
    json_decref(j);
    psc_expect_result_free(r);
    psc_expect_free(e);
}

/* A bandwidth bound holds at its size: a rule without @SIZE checks a run at the default sizes only; one with it the
 * cases at that size; a sweep of other sizes checks neither, misses nothing and says no figure was checked. */
static void test_check_sizes(void **state)
{
    static const uint64_t chosen[1] = {512ull << 20}, sweep[3] = {4096, 8192, 16384};
    psc_bw_result_t at512, small[3];
    psc_expect_t *e;
    psc_expect_result_t *r;
    char *text;

    (void)state;
    psc__bw(&at512, "gpu_to_gpu_write_ce", 0, 1, 512ull << 20, 396);
    for (int k = 0; k < 3; k++)
        psc__bw(&small[k], "gpu_to_gpu_write_ce", 0, 1, sweep[k], 5); /* small copies: far below any NVLink bound */
    e = psc__parse_ok("bw gpu_to_gpu_write_ce * >= 390 GB/s\n"          /* 0: the default size only */
                      "bw gpu_to_gpu_write_ce *@512M >= 390 GB/s\n"     /* 1: at 512 MiB */
                      "bw gpu_to_gpu_write_ce gpu0->gpu1@8KiB >= 1 GB/s\n"); /* 2: at 8 KiB */
    r = psc__check_bw(e, &at512, 1, 1); /* the default run */
    assert_int_equal(r->checks[0], 1);
    assert_int_equal(r->checks[1], 1);
    assert_int_equal(r->checks[2], 0);
    assert_false(psc_expect_unmatched(e, r, 2)); /* another size: not applied, no warning */
    assert_int_equal(r->nmisses, 0);
    psc_expect_result_free(r);
    r = psc__check_sweep(e, &at512, 1, chosen, 1); /* -s 512M: the sized rule only */
    assert_int_equal(r->checks[0], 0);
    assert_int_equal(r->checks[1], 1);
    assert_false(psc_expect_unmatched(e, r, 0));
    psc_expect_result_free(r);
    r = psc__check_sweep(e, small, 3, sweep, 3); /* -b 4K -e 16K */
    assert_int_equal(r->checks[0] + r->checks[1], 0);
    assert_int_equal(r->checks[2], 1);
    assert_int_equal(r->nmisses, 0);
    for (size_t i = 0; i < e->n; i++)
        assert_false(psc_expect_unmatched(e, r, i));
    psc_expect_result_free(r);
    r = psc__check_sweep(e, small, 1, sweep, 3); /* 4 KiB alone: nothing checked, said so */
    assert_int_equal(r->nchecks, 0);
    text = psc__render(e, r);
    assert_non_null(strstr(text, "expect: warning: no figure checked"));
    assert_null(strstr(text, "MISS"));
    free(text);
    psc_expect_result_free(r);
    psc_expect_free(e);
}

static void test_check_lat(void **state)
{
    psc_lat_result_t *res = calloc(2, sizeof(*res));
    psc_lat_suite_t s;
    psc_expect_t *e;
    psc_expect_result_t *r;
    json_t *j;

    (void)state;
    assert_non_null(res);
    assert_int_equal(psc_lat_test_from_name("gpu_to_gpu_chase", &res[0].c.test), PSC_OK);
    res[0].c.src = 1;
    res[0].c.dst = 0;
    res[0].status = PSC_RESULT_PASSED;
    res[0].nsizes = 1;
    res[0].sizes[0] = 2u << 20;
    res[0].lat[0] = (psc_pctl_t){.n = 10, .min = 800, .p50 = 852, .p90 = 860, .p99 = 900, .max = 950, .mean = 855};
    assert_int_equal(psc_lat_test_from_name("gpu_to_gpu_copy_ce", &res[1].c.test), PSC_OK);
    res[1].c.src = 0;
    res[1].c.dst = 1;
    res[1].status = PSC_RESULT_PASSED;
    res[1].nsizes = 2;
    res[1].sizes[0] = 4;
    res[1].sizes[1] = 1u << 20;
    res[1].lat[0] = (psc_pctl_t){.n = 10, .min = 2000, .p50 = 2250, .p90 = 2300, .p99 = 2400, .max = 2500, .mean = 2260};
    res[1].lat[1] = (psc_pctl_t){.n = 10, .min = 20000, .p50 = 22000, .p90 = 22100, .p99 = 22300, .max = 22400,
                                 .mean = 22050};
    memset(&s, 0, sizeof(s));
    s.nresults = 2;
    s.results = res;
    e = psc__parse_ok("lat gpu_to_gpu_chase gpu1->gpu0 <= 852 ns\n"   /* 0: equal: pass */
                      "lat gpu_to_gpu_chase * <= 0.85 us\n"           /* 1: miss */
                      "lat gpu_to_gpu_chase * <= 0.0009 ms p99\n"     /* 2: 900 ns: pass */
                      "lat gpu_to_gpu_copy_ce *@4B <= 2.25 us\n"      /* 3: equal: pass */
                      "lat gpu_to_gpu_copy_ce *@1M <= 21 us\n"        /* 4: miss */
                      "lat gpu_to_gpu_copy_ce gpu0->gpu1 <= 1 ms\n"   /* 5: no size in a test of sizes: unmatched */
                      "lat *copy* * >= 2 us min\n");                  /* 6: both sizes pass */
    r = psc_expect_result_new(e);
    assert_int_equal(psc_expect_check_lat(e, &s, r), PSC_OK);
    assert_int_equal(r->checks[0], 1);
    assert_int_equal(r->checks[3], 1);
    assert_int_equal(r->checks[4], 1);
    assert_int_equal(r->checks[5], 0);
    assert_int_equal(r->checks[6], 2);
    assert_int_equal(r->nmisses, 2);
    assert_int_equal(r->misses[0].rule, 1);
    assert_true(r->misses[0].value == 0.852);
    assert_string_equal(r->misses[1].kase, "gpu0->gpu1@1MiB");
    assert_true(r->misses[1].value == 22);
    assert_true(psc_expect_unmatched(e, r, 5));
    j = psc_json_expect(e, r);
    assert_non_null(j);
    assert_int_equal(json_array_size(json_object_get(j, "misses")), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "misses"), 1), "rule")),
                        "t.expect:5");
    assert_true(json_is_false(json_object_get(j, "passed")));
    json_decref(j);
    psc_expect_result_free(r);
    psc_expect_free(e);
    free(res);
}

static void test_check_coll(void **state)
{
    psc_coll_row_t rows[2];
    psc_coll_report_t c;
    psc_expect_t *e;
    psc_expect_result_t *r;
    char *text;

    (void)state;
    memset(rows, 0, sizeof(rows));
    memset(&c, 0, sizeof(c));
    for (int k = 0; k < 2; k++) {
        rows[k].bytes = 512ull << 20;
        rows[k].dtype = PSC_DT_FLOAT32;
        rows[k].op = PSC_OP_SUM;
        rows[k].impl = k ? PSC_COLL_IMPL_P2PSCOPE : PSC_COLL_IMPL_NCCL;
        for (int h = 0; h < 2; h++) {
            rows[k].r[h].ran = 1;
            rows[k].r[h].busbw_gbs = k ? 230 : 315 - h;
            rows[k].r[h].algbw_gbs = rows[k].r[h].busbw_gbs;
            rows[k].r[h].time_us = k ? 2300 : 1700;
        }
    }
    c.coll = PSC_COLL_ALL_REDUCE;
    c.nrows = 2;
    c.rows = rows;
    e = psc__parse_ok("coll all_reduce 512MiB >= 315 GB/s\n" /* 0: NCCL's row, in place 314: one miss */
                      "coll all_reduce 512M* >= 200 GB/s\n"   /* 1: four pass */
                      "coll all_* *p2pscope <= 2.3 ms\n"      /* 2: equal: two pass */
                      "coll all_reduce 512MiB/p2pscope >= 300 GB/s algbw\n" /* 3: two misses */
                      "coll broadcast * >= 1 GB/s\n");        /* 4: not run */
    r = psc_expect_result_new(e);
    assert_int_equal(psc_expect_check_coll(e, &c, r), PSC_OK);
    assert_int_equal(r->checks[0], 2);
    assert_int_equal(r->checks[1], 4);
    assert_int_equal(r->checks[2], 2);
    assert_int_equal(r->checks[3], 2);
    assert_int_equal(r->checks[4], 0);
    assert_false(psc_expect_unmatched(e, r, 4));
    assert_int_equal(r->nmisses, 3);
    assert_int_equal(r->misses[0].rule, 0);
    assert_true(r->misses[0].value == 314);
    text = psc__render(e, r);
    assert_non_null(strstr(text, "expect: MISS all_reduce 512MiB busbw (in place, float sum) 314 GB/s (bound >= 315 "
                                 "GB/s, t.expect:1)\n"));
    assert_non_null(strstr(text, "expect: MISS all_reduce 512MiB/p2pscope algbw (out of place, float sum) 230 GB/s"));
    free(text);
    psc_expect_result_free(r);
    psc_expect_free(e);
}

/* coll: wrong elements are a miss with the reason; on one rank busbw and algbw rules are skipped, said in one line,
 * while time rules still apply. */
static void test_check_coll_failed_and_one_rank(void **state)
{
    psc_coll_row_t row;
    psc_coll_report_t c;
    psc_expect_t *e;
    psc_expect_result_t *r;
    char *text;

    (void)state;
    memset(&row, 0, sizeof(row));
    memset(&c, 0, sizeof(c));
    row.bytes = 512ull << 20;
    row.dtype = PSC_DT_FLOAT32;
    row.op = PSC_OP_SUM;
    for (int h = 0; h < 2; h++) {
        row.r[h].ran = 1;
        row.r[h].busbw_gbs = row.r[h].algbw_gbs = 320;
        row.r[h].time_us = 1700;
    }
    row.r[1].wrong = 12; /* in place: wrong elements */
    c.coll = PSC_COLL_ALL_REDUCE;
    c.nrows = 1;
    c.rows = &row;
    c.nranks = 2;
    e = psc__parse_ok("coll all_reduce 512MiB >= 313 GB/s\n"
                      "coll all_reduce 512MiB <= 2 ms\n");
    r = psc_expect_result_new(e);
    assert_int_equal(psc_expect_check_coll(e, &c, r), PSC_OK);
    assert_int_equal(r->nchecks, 4);
    assert_int_equal(r->nmisses, 2); /* the in-place half, against each rule */
    assert_string_equal(r->misses[0].why, "failed: 12 wrong elements");
    psc_expect_result_free(r);
    /* one rank */
    c.nranks = 1;
    row.r[1].wrong = 0;
    row.r[0].busbw_gbs = row.r[1].busbw_gbs = 0;
    r = psc_expect_result_new(e);
    assert_int_equal(psc_expect_check_coll(e, &c, r), PSC_OK);
    assert_int_equal(r->checks[0], 0);
    assert_int_equal(r->checks[1], 2);
    assert_int_equal(r->nmisses, 0);
    assert_int_equal(r->one_rank, 1);
    assert_false(psc_expect_unmatched(e, r, 0));
    text = psc__render(e, r);
    assert_non_null(strstr(text, "expect: 1 coll busbw/algbw rule skipped: the run has one rank"));
    assert_null(strstr(text, "MISS"));
    free(text);
    psc_expect_result_free(r);
    psc_expect_free(e);
}

/* lat: a test that failed before its first size is a miss of every rule whose path matches, whatever its size. */
static void test_check_lat_failed(void **state)
{
    psc_lat_result_t *res = calloc(1, sizeof(*res));
    psc_lat_suite_t s;
    psc_expect_t *e;
    psc_expect_result_t *r;
    char *text;

    (void)state;
    assert_non_null(res);
    assert_int_equal(psc_lat_test_from_name("gpu_to_gpu_copy_ce", &res->c.test), PSC_OK);
    res->c.src = 0;
    res->c.dst = 1;
    res->status = PSC_RESULT_WAIVED;
    snprintf(res->reason, sizeof(res->reason), "peer access not supported");
    memset(&s, 0, sizeof(s));
    s.nresults = 1;
    s.results = res;
    e = psc__parse_ok("lat gpu_to_gpu_copy_ce *@4B <= 2.25 us\nlat gpu_to_gpu_copy_ce gpu1->* <= 2.25 us\n");
    r = psc_expect_result_new(e);
    assert_int_equal(psc_expect_check_lat(e, &s, r), PSC_OK);
    assert_int_equal(r->checks[0], 1);
    assert_int_equal(r->checks[1], 0);
    assert_int_equal(r->nmisses, 1);
    text = psc__render(e, r);
    assert_non_null(strstr(text, "expect: MISS gpu_to_gpu_copy_ce gpu0->gpu1 waived: peer access not supported (bound "
                                 "<= 2.25 us, t.expect:1)\n"));
    assert_non_null(strstr(text, "expect: warning: no figure checked"));
    assert_non_null(strstr(text, "(1 case failed or waived)"));
    free(text);
    psc_expect_result_free(r);
    psc_expect_free(e);
    free(res);
}

static psc_facts_t *psc__facts(const char *path)
{
    psc_facts_t *f = psc_facts_new();
    char err[512];

    assert_non_null(f);
    if (psc_facts_load(path, f, err, sizeof(err)) != PSC_OK)
        fprintf(stderr, "%s: %s\n", path, err);
    assert_int_equal(psc_facts_load(path, f, err, sizeof(err)), PSC_OK);
    return f;
}

static const psc_expect_rule_t *psc__find(const psc_expect_t *e, const char *test, const char *kase)
{
    for (size_t i = 0; i < e->n; i++)
        if (strcmp(e->rules[i].test, test) == 0 && strcmp(e->rules[i].kase, kase) == 0)
            return &e->rules[i];
    return NULL;
}

static void test_auto_h200_nv18(void **state)
{
    psc_facts_t *f = psc__facts(TEST_DATA "/h200x2-nv18.json");
    const double nv = 18 * 26.562, pcie = 32.0 * 16 * 128 / 130 / 8; /* the recording: NV18 at 26.562; Gen5 x16 */
    const psc_expect_rule_t *x;
    psc_bw_result_t res[4];
    psc_expect_result_t *r;
    psc_expect_t *e = NULL;
    char err[512];

    (void)state;
    assert_true(psc_expect_pcie_gbs(3, 16) > 15.75 && psc_expect_pcie_gbs(3, 16) < 15.76);
    assert_true(psc_expect_pcie_gbs(0, 16) == 0 && psc_expect_pcie_gbs(5, 0) == 0);
    assert_int_equal(psc_expect_auto(f, &e, err, sizeof(err)), PSC_OK);
    /* two directions, one both-ways pair, two host directions for each GPU */
    assert_int_equal(e->n, 2 + 1 + 4);
    x = psc__find(e, "gpu_to_gpu_[rw]*", "gpu0->gpu1@512MiB");
    assert_non_null(x);
    assert_true(x->bound > PSC_EXPECT_AUTO_NVLINK * nv - 0.01 && x->bound < PSC_EXPECT_AUTO_NVLINK * nv + 0.01);
    assert_int_equal(x->op, PSC_EXPECT_GE);
    assert_non_null(strstr(x->where, "NV18"));
    assert_non_null(psc__find(e, "gpu_to_gpu_[rw]*", "gpu1->gpu0@512MiB"));
    x = psc__find(e, "gpu_to_gpu_bidir_*", "gpu0<->gpu1@512MiB");
    assert_non_null(x);
    assert_true(x->bound > PSC_EXPECT_AUTO_NVLINK_BIDIR * 2 * nv - 0.01 &&
                x->bound < PSC_EXPECT_AUTO_NVLINK_BIDIR * 2 * nv + 0.01);
    x = psc__find(e, "host_to_gpu_ce", "host->gpu1@32MiB");
    assert_non_null(x);
    assert_true(x->bound > PSC_EXPECT_AUTO_PCIE * pcie - 0.01 && x->bound < PSC_EXPECT_AUTO_PCIE * pcie + 0.01);
    assert_non_null(psc__find(e, "gpu_to_host_ce", "gpu0->host@32MiB"));

    /* the measured H200 passes them (RESULTS.md: 370-396 GB/s, 55 GB/s); a path at PCIe speed does not */
    psc__bw(&res[0], "gpu_to_gpu_write_sm", 0, 1, 512ull << 20, 370.05);
    psc__bw(&res[1], "gpu_to_gpu_read_ce", 1, 0, 512ull << 20, 50);
    psc__bw(&res[2], "host_to_gpu_ce", PSC_HOST, 0, 32ull << 20, 55.1);
    psc__bw(&res[3], "gpu_to_gpu_p2p_off_ce", 0, 1, 128ull << 20, 38); /* staged: no NVLink rule */
    r = psc__check_bw(e, res, 4, 1);
    assert_int_equal(r->nchecks, 3);
    assert_int_equal(r->nmisses, 1);
    assert_string_equal(r->misses[0].kase, "gpu1->gpu0@512MiB");
    psc_expect_result_free(r);
    /* a sweep of small sizes: no auto rule applies, nothing misses */
    psc__bw(&res[1], "gpu_to_gpu_read_ce", 1, 0, 4096, 5);
    r = psc__check_sweep(e, &res[1], 1, (const uint64_t[]){4096}, 1);
    assert_int_equal(r->nchecks + r->nmisses, 0);
    psc_expect_result_free(r);
    psc_expect_free(e);
    psc_facts_free(f);
}

/* PCIe: the link's generation is not the GPU's current one (it drops at idle); the facts keep no speed for the
 * port above the GPU, so the bound is the GPU's maximum and its where says so. NVLink: links down count in the
 * bound (they are lost bandwidth) and are named. */
static void test_auto_pcie_and_links_down(void **state)
{
    psc_facts_t *f = psc__facts(TEST_DATA "/h200x2-nv18.json");
    const psc_expect_rule_t *x;
    psc_expect_t *e = NULL;
    char err[512];

    (void)state;
    f->gpu[0].pcie_gen = 4; /* running at Gen4 now (a Gen4 host, or idle): the bound stays the GPU's Gen5 */
    f->gpu[0].pcie_gen_max = 5;
    for (int l = 0; l < 2; l++)
        f->gpu[1].nvlinks[l].active = 0; /* two of gpu1's links lost */
    f->pair[0][1].nvlinks = f->pair[1][0].nvlinks = 16;
    assert_int_equal(psc_expect_auto(f, &e, err, sizeof(err)), PSC_OK);
    x = psc__find(e, "host_to_gpu_ce", "host->gpu0@32MiB");
    assert_non_null(x);
    assert_true(fabs(x->bound - PSC_EXPECT_AUTO_PCIE * psc_expect_pcie_gbs(5, 16)) < 1e-9);
    assert_non_null(strstr(x->where, "Gen5 is the GPU's maximum, the port above it not known"));
    x = psc__find(e, "gpu_to_gpu_[rw]*", "gpu0->gpu1@512MiB");
    assert_non_null(x);
    assert_true(fabs(x->bound - PSC_EXPECT_AUTO_NVLINK * 18 * 26.562) < 0.01); /* 18 links, not the 16 up */
    assert_non_null(strstr(x->where, "2 of them down now"));
    psc_expect_free(e);
    psc_facts_free(f);
}

static void test_auto_dgx2(void **state)
{
    psc_facts_t *f = psc__facts(TEST_DATA "/nvidiaDGX2.xml");
    const psc_expect_rule_t *x;
    psc_expect_t *e = NULL;
    char err[512];

    (void)state;
    assert_int_equal(psc_expect_auto(f, &e, err, sizeof(err)), PSC_OK);
    /* 16 V100s, NV6 between every pair at 25 GB/s a link; no PCIe link facts in the XML: no host rule */
    assert_int_equal(e->n, 16 * 15 + 16 * 15 / 2);
    x = psc__find(e, "gpu_to_gpu_[rw]*", "gpu15->gpu3@512MiB");
    assert_non_null(x);
    assert_true(x->bound > PSC_EXPECT_AUTO_NVLINK * 150 - 1e-9 && x->bound < PSC_EXPECT_AUTO_NVLINK * 150 + 1e-9);
    assert_null(psc__find(e, "gpu_to_gpu_bidir_*", "gpu3<->gpu1@512MiB")); /* one rule per pair, lower index first */
    assert_non_null(psc__find(e, "gpu_to_gpu_bidir_*", "gpu1<->gpu3@512MiB"));
    for (size_t i = 0; i < e->n; i++)
        assert_true(e->rules[i].quiet && strncmp(e->rules[i].test, "gpu_to_gpu_", 11) == 0);
    psc_expect_free(e);
    psc_facts_free(f);

    /* no facts of links at all: no rule, no error */
    f = psc_facts_new();
    assert_non_null(f);
    f->ngpu = 2;
    assert_int_equal(psc_expect_auto(f, &e, err, sizeof(err)), PSC_OK);
    assert_int_equal(e->n, 0);
    psc_expect_free(e);
    psc_facts_free(f);
}

/* check's node rules: parsed from a file (each wrong field named), made by auto from the facts, and met or missed
 * by what the facts say (links down, a slowdown). */
static void test_node_rules(void **state)
{
    static const char ok_text[] = "node gpus >= 8\nnode ecc = on\nnode persistence = off\nnode nvlinks_up >= 18\n";
    static const struct { const char *text, *want; } bad[] = {
        {"node gpu >= 8\n", "t.expect:1: unknown fact 'gpu'"},
        {"node gpus > 8\n", "t.expect:1: bad operator '>'"},
        {"node ecc = maybe\n", "t.expect:1: bad value 'maybe'"},
        {"node gpus >= 8 GPUs\n", "t.expect:1: a node rule has 4 fields"},
    };
    psc_facts_t *f = psc__facts(TEST_DATA "/h200x2-nv18.json");
    psc_expect_t *e = NULL;
    size_t node = 0;
    char err[512];

    (void)state;
    assert_int_equal(psc_expect_parse(ok_text, strlen(ok_text), "t.expect", &e, err, sizeof(err)), PSC_OK);
    assert_int_equal(e->n, 4);
    assert_int_equal(e->rules[0].kind, PSC_EXPECT_NODE);
    assert_string_equal(e->rules[1].test, "ecc");
    assert_int_equal(e->rules[1].op, PSC_EXPECT_EQ);
    assert_true(e->rules[1].bound == 1 && e->rules[2].bound == 0 && e->rules[0].bound == 8);
    assert_true(psc_expect_rule_applies(&e->rules[0], PSC_EXPECT_NODE, "gpus", "node"));
    assert_false(psc_expect_rule_applies(&e->rules[0], PSC_EXPECT_NODE, "ecc", "gpu0"));
    assert_false(psc_expect_meets(&e->rules[0], psc_expect_node_value(f, "gpus", -1))); /* 2 GPUs, not 8 */
    assert_true(psc_expect_meets(&e->rules[1], psc_expect_node_value(f, "ecc", 0)));
    assert_false(psc_expect_meets(&e->rules[2], psc_expect_node_value(f, "persistence", 1)));
    psc_expect_free(e);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        e = NULL;
        assert_int_equal(psc_expect_parse(bad[i].text, strlen(bad[i].text), "t.expect", &e, err, sizeof(err)),
                         PSC_ERR_INVALID);
        assert_null(e);
        assert_non_null(strstr(err, bad[i].want));
        assert_non_null(strstr(err, "accepted node FACT OP VALUE"));
    }
    /* auto: every link up, the width at its maximum, ECC on, no slowdown: for each GPU, all met here */
    assert_int_equal(psc_expect_auto(f, &e, err, sizeof(err)), PSC_OK);
    assert_int_equal(psc_expect_auto_node(f, e), PSC_OK);
    for (size_t i = 0; i < e->n; i++) {
        const psc_expect_rule_t *x = &e->rules[i];
        int g = x->kase[3] - '0';

        if (x->kind != PSC_EXPECT_NODE)
            continue;
        node++;
        assert_true(psc_expect_meets(x, psc_expect_node_value(f, x->test, g)));
    }
    assert_int_equal(node, 2 * 4);
    f->gpu[1].nvlinks[3].active = 0;
    f->gpu[0].clock_event_reasons = 0x8; /* a hardware slowdown */
    assert_true(psc_expect_node_value(f, "nvlinks_up", 1) == 17);
    assert_true(psc_expect_node_value(f, "clocks_throttled", 0) == 1);
    f->gpu[0].clock_event_reasons = 0x1; /* idle is no slowdown */
    assert_true(psc_expect_node_value(f, "clocks_throttled", 0) == 0);
    assert_true(psc_expect_node_value(f, "pcie_width", 5) == -1); /* no such GPU: not known */
    psc_expect_free(e);
    psc_facts_free(f);
}

/* Each shipped file parses, and each rule's test glob names a test, so none is dead by a typo. */
static void test_shipped_files(void **state)
{
    DIR *d = opendir(SHARE_EXPECT);
    struct dirent *de;
    int files = 0;

    (void)state;
    assert_non_null(d);
    while ((de = readdir(d))) {
        char path[512], err[512];
        psc_expect_t *e = NULL;
        psc_expect_result_t *r;
        size_t len = strlen(de->d_name);

        if (len < 8 || strcmp(de->d_name + len - 7, ".expect") != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", SHARE_EXPECT, de->d_name);
        if (psc_expect_load(path, &e, err, sizeof(err)) != PSC_OK)
            fprintf(stderr, "%s\n", err);
        assert_non_null(e);
        assert_true(e->n >= 10);
        r = psc_expect_result_new(e);
        r->kinds = (1 << PSC_EXPECT_BW) | (1 << PSC_EXPECT_LAT) | (1 << PSC_EXPECT_COLL); /* as if all ran */
        for (size_t i = 0; i < e->n; i++) {
            if (psc_expect_unmatched(e, r, i))
                fprintf(stderr, "%s names no test\n", e->rules[i].where);
            assert_false(psc_expect_unmatched(e, r, i));
        }
        psc_expect_result_free(r);
        psc_expect_free(e);
        files++;
    }
    closedir(d);
    assert_int_equal(files, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_names),
        cmocka_unit_test(test_parse_good),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_parse_limits),
        cmocka_unit_test(test_check_bounds_and_units),
        cmocka_unit_test(test_check_globs_and_unmatched),
        cmocka_unit_test(test_check_sizes),
        cmocka_unit_test(test_check_lat),
        cmocka_unit_test(test_check_coll),
        cmocka_unit_test(test_check_coll_failed_and_one_rank),
        cmocka_unit_test(test_check_lat_failed),
        cmocka_unit_test(test_auto_h200_nv18),
        cmocka_unit_test(test_auto_dgx2),
        cmocka_unit_test(test_auto_pcie_and_links_down),
        cmocka_unit_test(test_shipped_files),
        cmocka_unit_test(test_node_rules),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
