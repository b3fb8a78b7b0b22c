/*
 * compare's rule (src/report/compare.c) on hand-made cases, at its edges, and the recorded runs of
 * tests/data/compare loaded and compared through the library calls.
 */
#define _GNU_SOURCE
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "report/compare.h"

#define DATA TEST_DATA "/compare/"

static psc_cmp_case_t psc__case(double value, double lo, double hi, unsigned n)
{
    psc_cmp_case_t c;

    memset(&c, 0, sizeof(c));
    c.status = PSC_CMP_PASSED;
    c.value = value;
    c.lo = lo;
    c.hi = hi;
    c.n = n;
    c.alt = NAN;
    return c;
}

/* Apart upward or downward: better or worse by which way is better. */
static void test_direction(void **state)
{
    psc_cmp_case_t a = psc__case(100, 99, 101, 5), lower = psc__case(90, 89, 91, 5), higher = psc__case(110, 109, 111, 5);
    double ch;

    (void)state;
    assert_int_equal(psc_cmp_judge(&a, &lower, 1, &ch), PSC_CMP_WORSE); /* bandwidth down */
    assert_true(fabs(ch + 10) < 1e-9);
    assert_int_equal(psc_cmp_judge(&a, &higher, 1, &ch), PSC_CMP_BETTER);
    assert_true(fabs(ch - 10) < 1e-9);
    assert_int_equal(psc_cmp_judge(&a, &lower, 0, &ch), PSC_CMP_BETTER); /* latency down */
    assert_int_equal(psc_cmp_judge(&a, &higher, 0, &ch), PSC_CMP_WORSE);
    assert_true(fabs(psc_cmp_worse_pct(-10, 1) - 10) < 1e-9);
    assert_true(fabs(psc_cmp_worse_pct(-10, 0) + 10) < 1e-9);
}

/* Overlapping or touching intervals are noise, however far the figures moved. */
static void test_noise_edges(void **state)
{
    psc_cmp_case_t a = psc__case(100, 95, 105, 5);
    psc_cmp_case_t touch_low = psc__case(90, 80, 95, 5), touch_high = psc__case(110, 105, 120, 5);
    psc_cmp_case_t just_below = psc__case(90, 80, 94.999, 5), just_above = psc__case(110, 105.001, 120, 5);
    psc_cmp_case_t wide = psc__case(70, 60, 100, 5);
    double ch;

    (void)state;
    assert_int_equal(psc_cmp_judge(&a, &touch_low, 1, &ch), PSC_CMP_WITHIN_NOISE);
    assert_int_equal(psc_cmp_judge(&a, &touch_high, 1, &ch), PSC_CMP_WITHIN_NOISE);
    assert_int_equal(psc_cmp_judge(&a, &just_below, 1, &ch), PSC_CMP_WORSE);
    assert_int_equal(psc_cmp_judge(&a, &just_above, 1, &ch), PSC_CMP_BETTER);
    assert_int_equal(psc_cmp_judge(&a, &wide, 1, &ch), PSC_CMP_WITHIN_NOISE);
    assert_true(fabs(ch + 30) < 1e-9); /* the change is still reported */
}

/* Intervals apart one way, figures moved the other (a coll loop time outside its operations' spread). */
static void test_disagreeing_figure(void **state)
{
    psc_cmp_case_t a = psc__case(100, 95, 105, 20), b_up = psc__case(99, 106, 120, 20), b_down = psc__case(101, 80, 94, 20);
    double ch;

    (void)state;
    assert_int_equal(psc_cmp_judge(&a, &b_up, 0, &ch), PSC_CMP_WITHIN_NOISE);
    assert_int_equal(psc_cmp_judge(&a, &b_down, 0, &ch), PSC_CMP_WITHIN_NOISE);
}

/* Fewer than PSC_CMP_MIN_SAMPLES in either run: not judged; exactly that many: judged. */
static void test_min_samples(void **state)
{
    psc_cmp_case_t a = psc__case(100, 99, 101, PSC_CMP_MIN_SAMPLES), b = psc__case(50, 49, 51, PSC_CMP_MIN_SAMPLES);
    psc_cmp_case_t few = psc__case(50, 49, 51, PSC_CMP_MIN_SAMPLES - 1), none = psc__case(50, 0, 0, 0);
    double ch;

    (void)state;
    assert_int_equal(psc_cmp_judge(&a, &b, 1, &ch), PSC_CMP_WORSE);
    assert_int_equal(psc_cmp_judge(&a, &few, 1, &ch), PSC_CMP_NO_SPREAD);
    assert_int_equal(psc_cmp_judge(&few, &a, 1, &ch), PSC_CMP_NO_SPREAD);
    assert_int_equal(psc_cmp_judge(&a, &none, 1, &ch), PSC_CMP_NO_SPREAD);
    assert_true(fabs(ch + 50) < 1e-9);
    assert_int_equal(psc_cmp_fails(PSC_CMP_NO_SPREAD, -50, 1, 5), 0);
}

static void test_status(void **state)
{
    psc_cmp_case_t ok = psc__case(100, 99, 101, 5), failed = psc__case(0, 0, 0, 0), waived = psc__case(0, 0, 0, 0);
    double ch;

    (void)state;
    failed.status = PSC_CMP_FAILED;
    waived.status = PSC_CMP_WAIVED;
    assert_int_equal(psc_cmp_judge(&ok, &failed, 1, &ch), PSC_CMP_NOW_FAILS);
    assert_true(isnan(ch));
    assert_int_equal(psc_cmp_judge(&failed, &ok, 1, &ch), PSC_CMP_NOW_PASSES);
    /* passed, then waived (or not run): a lost path, counted by --fail-above like a failure */
    assert_int_equal(psc_cmp_judge(&ok, &waived, 1, &ch), PSC_CMP_NOW_WAIVED);
    assert_true(isnan(ch));
    assert_int_equal(psc_cmp_fails(PSC_CMP_NOW_WAIVED, NAN, 1, 10), 1);
    assert_int_equal(psc_cmp_fails(PSC_CMP_NOW_WAIVED, NAN, 1, -1), 0);
    assert_int_equal(psc_cmp_judge(&waived, &ok, 1, &ch), PSC_CMP_NOT_COMPARED);
    assert_int_equal(psc_cmp_judge(&failed, &waived, 1, &ch), PSC_CMP_NOT_COMPARED);
    assert_int_equal(psc_cmp_judge(&failed, &failed, 1, &ch), PSC_CMP_NOT_COMPARED);
    /* A zero figure in A has no percentage. */
    ok.value = 0;
    ok.lo = ok.hi = 0;
    assert_int_equal(psc_cmp_judge(&ok, &failed, 1, &ch), PSC_CMP_NOW_FAILS);
    waived.status = PSC_CMP_PASSED;
    waived.value = 5;
    waived.lo = 4;
    waived.hi = 6;
    waived.n = 5;
    assert_int_equal(psc_cmp_judge(&ok, &waived, 1, &ch), PSC_CMP_BETTER);
    assert_true(isnan(ch));
}

/* --fail-above: worse beyond the noise by strictly more than PCT, or failing now; never without it. */
static void test_fail_above(void **state)
{
    (void)state;
    assert_int_equal(psc_cmp_fails(PSC_CMP_WORSE, -10, 1, 10), 0);  /* exactly PCT: not more */
    assert_int_equal(psc_cmp_fails(PSC_CMP_WORSE, -10.01, 1, 10), 1);
    assert_int_equal(psc_cmp_fails(PSC_CMP_WORSE, 10.01, 0, 10), 1); /* latency up */
    assert_int_equal(psc_cmp_fails(PSC_CMP_WORSE, 10, 0, 10), 0);
    assert_int_equal(psc_cmp_fails(PSC_CMP_WORSE, 50, 1, 10), 0);    /* bandwidth up is no loss */
    assert_int_equal(psc_cmp_fails(PSC_CMP_BETTER, 50, 1, 10), 0);
    assert_int_equal(psc_cmp_fails(PSC_CMP_WITHIN_NOISE, -50, 1, 10), 0);
    assert_int_equal(psc_cmp_fails(PSC_CMP_NOW_FAILS, NAN, 1, 10), 1);
    assert_int_equal(psc_cmp_fails(PSC_CMP_NOW_FAILS, NAN, 1, 0), 1);
    assert_int_equal(psc_cmp_fails(PSC_CMP_NOW_PASSES, NAN, 1, 0), 0);
    assert_int_equal(psc_cmp_fails(PSC_CMP_WORSE, -50, 1, -1), 0); /* not given */
    assert_int_equal(psc_cmp_fails(PSC_CMP_NOW_FAILS, NAN, 1, -1), 0);
    assert_int_equal(psc_cmp_fails(PSC_CMP_WORSE, -0.5, 1, 0), 1); /* --fail-above 0: any loss beyond the noise */
}

static const psc_cmp_row_t *psc__row(const psc_compare_t *c, const char *label)
{
    for (size_t i = 0; i < c->nrows; i++)
        if (strcmp(c->rows[i].label, label) == 0)
            return &c->rows[i];
    fail_msg("no case '%s' in both runs", label);
    return NULL;
}

static psc_compare_t *psc__compare(const char *a, const char *b, double pct, psc_cmp_run_t **ra, psc_cmp_run_t **rb)
{
    psc_compare_t *c = NULL;
    char err[512];

    assert_int_equal(psc_cmp_run_load(a, ra, err, sizeof(err)), PSC_OK);
    assert_int_equal(psc_cmp_run_load(b, rb, err, sizeof(err)), PSC_OK);
    assert_int_equal(psc_compare(*ra, *rb, pct, &c, err, sizeof(err)), PSC_OK);
    return c;
}

/* The bw runs: every case's verdict, those in one run only, and what differs about the machine. */
static void test_bw_runs(void **state)
{
    psc_cmp_run_t *a, *b;
    psc_compare_t *c = psc__compare(DATA "bw_a.json", DATA "bw_b.json", 5, &a, &b);
    const char *fields[] = {"system.driver_release", "system.cuda_driver_version", "devices[1].sm_clock_mhz",
                            "parameters.tests[2]"};

    (void)state;
    assert_int_equal(a->ncases, 4);
    assert_string_equal(a->unit, "GB/s");
    assert_int_equal(a->higher_better, 1);
    assert_int_equal(c->nrows, 3);
    assert_int_equal(psc__row(c, "gpu_to_gpu_read_ce gpu0 -> gpu1 4 KiB")->verdict, PSC_CMP_WORSE);
    assert_true(psc__row(c, "gpu_to_gpu_read_ce gpu0 -> gpu1 4 KiB")->fails);
    assert_true(fabs(psc__row(c, "gpu_to_gpu_read_ce gpu0 -> gpu1 4 KiB")->change_pct + 20) < 1e-6);
    assert_int_equal(psc__row(c, "gpu_to_gpu_read_ce gpu1 -> gpu0 4 KiB")->verdict, PSC_CMP_BETTER);
    assert_int_equal(psc__row(c, "host_to_gpu_ce host -> gpu0 4 KiB")->verdict, PSC_CMP_WITHIN_NOISE);
    assert_int_equal(c->nfailed, 1);
    assert_int_equal(c->nonly_a, 1);
    assert_string_equal(c->only_a[0]->label, "host_to_gpu_ce host -> gpu1 4 KiB");
    assert_int_equal(c->nonly_b, 1);
    assert_string_equal(c->only_b[0]->label, "gpu_local_ce gpu0 -> gpu0 4 KiB");
    assert_int_equal(c->ndiffs, 4);
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(c->diffs[i].field, fields[i]);
    assert_null(c->diffs[3].a); /* a test chosen in B only */
    assert_string_equal(json_string_value(c->diffs[3].b), "gpu_local_ce");
    psc_compare_free(c);
    psc_cmp_run_free(a);
    psc_cmp_run_free(b);
}

/* A run against itself: nothing differs, nothing marked, nothing apart. */
static void test_same_run(void **state)
{
    static const char *const runs[] = {"bw_a.json", "lat_a.json", "coll_a.json", "report_a.json"};

    (void)state;
    for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
        char path[512];
        psc_cmp_run_t *a, *b;
        psc_compare_t *c;

        snprintf(path, sizeof(path), DATA "%s", runs[k]);
        c = psc__compare(path, path, 0, &a, &b);
        assert_true(c->nrows > 0);
        assert_int_equal(c->nrows, a->ncases);
        assert_int_equal(c->ndiffs + c->nonly_a + c->nonly_b + c->nfailed, 0);
        for (size_t i = 0; i < c->nrows; i++)
            assert_true(c->rows[i].verdict == PSC_CMP_WITHIN_NOISE || c->rows[i].verdict == PSC_CMP_NOT_COMPARED);
        psc_compare_free(c);
        psc_cmp_run_free(a);
        psc_cmp_run_free(b);
    }
}

/* lat: latency up is worse, down is better; the distributions' min..p90 decide. */
static void test_lat_runs(void **state)
{
    psc_cmp_run_t *a, *b;
    psc_compare_t *c = psc__compare(DATA "lat_a.json", DATA "lat_b.json", 5, &a, &b);

    (void)state;
    assert_string_equal(a->unit, "ns");
    assert_int_equal(a->higher_better, 0);
    assert_int_equal(psc__row(c, "gpu_gpu_flag gpu0 -> gpu1 4 B")->verdict, PSC_CMP_WORSE);
    assert_true(fabs(psc__row(c, "gpu_gpu_flag gpu0 -> gpu1 4 B")->change_pct - 30) < 1e-6);
    assert_int_equal(psc__row(c, "gpu_to_gpu_chase gpu0 -> gpu1 2 MiB")->verdict, PSC_CMP_BETTER);
    assert_int_equal(psc__row(c, "gpu_gpu_flag gpu1 -> gpu0 4 B")->verdict, PSC_CMP_WITHIN_NOISE);
    assert_int_equal(c->nfailed, 1);
    psc_compare_free(c);
    psc_cmp_run_free(a);
    psc_cmp_run_free(b);
}

/* coll: per row and placement; wrong elements now are a failure, a change inside the operations' spread none. */
static void test_coll_runs(void **state)
{
    psc_cmp_run_t *a, *b;
    psc_compare_t *c = psc__compare(DATA "coll_a.json", DATA "coll_b.json", 10, &a, &b);

    (void)state;
    assert_string_equal(a->unit, "us");
    assert_int_equal(c->nrows, 4);
    assert_int_equal(psc__row(c, "all_reduce 1 KiB float sum nccl out-of-place")->verdict, PSC_CMP_WORSE);
    assert_int_equal(psc__row(c, "all_reduce 4 KiB float sum nccl out-of-place")->verdict, PSC_CMP_WITHIN_NOISE);
    assert_false(psc__row(c, "all_reduce 4 KiB float sum nccl out-of-place")->fails);
    assert_int_equal(psc__row(c, "all_reduce 4 KiB float sum nccl in-place")->verdict, PSC_CMP_NOW_FAILS);
    assert_int_equal(c->nfailed, 2);
    assert_int_equal(c->ndiffs, 0); /* results (failed_rows, wrong_elements, exit_code) are no machine facts */
    psc_compare_free(c);
    psc_cmp_run_free(a);
    psc_cmp_run_free(b);
}

/* The full report: every bandwidth case, waived ones kept, a case failing now. */
static void test_report_runs(void **state)
{
    psc_cmp_run_t *a, *b;
    psc_compare_t *c = psc__compare(DATA "report_a.json", DATA "report_b.json", -1, &a, &b);
    size_t waived = 0;

    (void)state;
    assert_int_equal(a->ncases, 50);
    assert_int_equal(c->nrows, 50);
    for (size_t i = 0; i < c->nrows; i++)
        waived += c->rows[i].verdict == PSC_CMP_NOT_COMPARED;
    assert_int_equal(waived, 21); /* 19 GPU <-> GPU tests on one GPU, 2 without a CPU mapping */
    assert_int_equal(psc__row(c, "host_to_gpu_ce host -> gpu0 4 KiB")->verdict, PSC_CMP_NOW_FAILS);
    assert_int_equal(c->nfailed, 0); /* no --fail-above */
    psc_compare_free(c);
    psc_cmp_run_free(a);
    psc_cmp_run_free(b);
}

/* Runs of different commands are refused with one line naming both. */
static void test_other_command(void **state)
{
    psc_cmp_run_t *a, *b;
    psc_compare_t *c = NULL;
    char err[512];

    (void)state;
    assert_int_equal(psc_cmp_run_load(DATA "bw_a.json", &a, err, sizeof(err)), PSC_OK);
    assert_int_equal(psc_cmp_run_load(DATA "lat_a.json", &b, err, sizeof(err)), PSC_OK);
    assert_int_equal(psc_compare(a, b, 5, &c, err, sizeof(err)), PSC_ERR_INVALID);
    assert_null(c);
    assert_non_null(strstr(err, "a p2pscope bw run"));
    assert_non_null(strstr(err, "lat run"));
    assert_null(strchr(err, '\n'));
    psc_cmp_run_free(a);
    psc_cmp_run_free(b);
}

/* A case twice in one run is kept apart, numbered in the run's order; its twin is then in that run only. */
static void test_twins(void **state)
{
    char path[] = "/tmp/psc-compare-twins-XXXXXX";
    json_t *doc = json_load_file(DATA "bw_a.json", 0, NULL), *tests;
    psc_cmp_run_t *a, *b;
    psc_compare_t *c;
    int fd = mkstemp(path);

    (void)state;
    assert_true(fd >= 0);
    assert_non_null(doc);
    tests = json_object_get(doc, "tests");
    assert_int_equal(json_array_append(tests, json_array_get(tests, 0)), 0);
    assert_int_equal(json_dumpfd(doc, fd, 0), 0);
    close(fd);
    json_decref(doc);
    c = psc__compare(DATA "bw_a.json", path, 0, &a, &b);
    assert_int_equal(b->ncases, 5);
    assert_string_equal(b->cases[0].label, "gpu_to_gpu_read_ce gpu0 -> gpu1 4 KiB");
    assert_string_equal(b->cases[4].label, "gpu_to_gpu_read_ce gpu0 -> gpu1 4 KiB #2");
    assert_int_equal(c->nrows, 4);
    assert_int_equal(c->nonly_a, 0);
    assert_int_equal(c->nonly_b, 1);
    assert_ptr_equal(c->only_b[0], &b->cases[4]);
    assert_ptr_equal(psc__row(c, "gpu_to_gpu_read_ce gpu0 -> gpu1 4 KiB")->b, &b->cases[0]);
    psc_compare_free(c);
    psc_cmp_run_free(a);
    psc_cmp_run_free(b);
    unlink(path);
}


/* A run edited by edit(doc, arg) into a temporary file (path written into path, mkstemp's template). */
static void psc__edited(const char *from, char *path, void (*edit)(json_t *, const void *), const void *arg)
{
    json_t *doc = json_load_file(from, 0, NULL);
    int fd = mkstemp(path);

    assert_true(fd >= 0);
    assert_non_null(doc);
    edit(doc, arg);
    assert_int_equal(json_dumpfd(doc, fd, 0), 0);
    close(fd);
    json_decref(doc);
}

/* lat: the test named arg ("name|direction|status") ends before its first size, as lat.c writes it. */
static void psc__lat_stop(json_t *doc, const void *arg)
{
    char name[64], dir[32], status[16];
    json_t *t;
    size_t i;

    assert_int_equal(sscanf(arg, "%63[^|]|%31[^|]|%15s", name, dir, status), 3);
    json_array_foreach(json_object_get(doc, "tests"), i, t)
        if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0 &&
            strcmp(json_string_value(json_object_get(t, "direction")), dir) == 0) {
            json_object_set_new(t, "status", json_string(status));
            json_object_set_new(t, "reason", json_string("wrong data: the chain ended at 0x1"));
            json_object_set_new(t, "sizes", json_array());
        }
}

/* A latency test that failed (or was waived) before its first size stands for each of the other run's sizes of
 * it: failing now counts for --fail-above; passing again is "passes now"; nothing of it is in one run only. */
static void test_lat_whole_test(void **state)
{
    char failed[] = "/tmp/psc-compare-lat-XXXXXX", waived[] = "/tmp/psc-compare-lat-XXXXXX";
    const char *label = "gpu_to_gpu_chase gpu0 -> gpu1 2 MiB";
    psc_cmp_run_t *a, *b;
    psc_compare_t *c;

    (void)state;
    psc__edited(DATA "lat_a.json", failed, psc__lat_stop, "gpu_to_gpu_chase|gpu0 -> gpu1|failed");
    psc__edited(DATA "lat_a.json", waived, psc__lat_stop, "gpu_to_gpu_chase|gpu0 -> gpu1|waived");
    c = psc__compare(DATA "lat_a.json", failed, 5, &a, &b);
    assert_int_equal(psc__row(c, label)->verdict, PSC_CMP_NOW_FAILS);
    assert_true(psc__row(c, label)->fails);
    assert_int_equal(c->nfailed, 1);
    assert_int_equal(c->nonly_a + c->nonly_b, 0);
    assert_int_equal(c->nrows, a->ncases);
    psc_compare_free(c);
    psc_cmp_run_free(a);
    psc_cmp_run_free(b);
    c = psc__compare(failed, DATA "lat_a.json", 5, &a, &b); /* the other way round */
    assert_int_equal(psc__row(c, label)->verdict, PSC_CMP_NOW_PASSES);
    assert_int_equal(c->nfailed, 0);
    assert_int_equal(c->nonly_a + c->nonly_b, 0);
    psc_compare_free(c);
    psc_cmp_run_free(a);
    psc_cmp_run_free(b);
    c = psc__compare(DATA "lat_a.json", waived, 5, &a, &b);
    assert_int_equal(psc__row(c, label)->verdict, PSC_CMP_NOW_WAIVED);
    assert_int_equal(c->nfailed, 1);
    psc_compare_free(c);
    psc_cmp_run_free(a);
    psc_cmp_run_free(b);
    /* Both stopped early: one case, in both runs, not compared. */
    c = psc__compare(failed, failed, 5, &a, &b);
    assert_int_equal(psc__row(c, "gpu_to_gpu_chase gpu0 -> gpu1")->verdict, PSC_CMP_NOT_COMPARED);
    assert_int_equal(c->nonly_a + c->nonly_b + c->nfailed, 0);
    psc_compare_free(c);
    psc_cmp_run_free(a);
    psc_cmp_run_free(b);
    unlink(failed);
    unlink(waived);
}

/* coll row 0's out-of-place half: time_us times k, per_operation_us times m (0: absent, as --no-per-op). */
static void psc__coll_scale(json_t *doc, const void *arg)
{
    const double *km = arg;
    json_t *h = json_object_get(json_array_get(json_object_get(json_object_get(doc, "coll"), "rows"), 0),
                                "out_of_place");
    json_t *p = json_object_get(h, "per_operation_us");
    const char *key;
    json_t *v;

    json_object_set_new(h, "time_us", json_real(json_number_value(json_object_get(h, "time_us")) * km[0]));
    if (km[1] == 0) {
        json_object_set_new(h, "per_operation_us", json_null());
        return;
    }
    json_object_foreach(p, key, v)
        if (strcmp(key, "n") != 0)
            json_object_set_new(p, key, json_real(json_number_value(v) * km[1]));
}

/* coll: the per-operation p50 is judged against its own min..p90 (time_us, a loop's mean, per graph replay with
 * -G, is another quantity); where a run has no per-operation times, time_us's change with no verdict. */
static void test_coll_per_operation(void **state)
{
    static const double slower_ops[2] = {1.0, 4.0}, no_per_op[2] = {2.0, 0};
    char ops[] = "/tmp/psc-compare-coll-XXXXXX", none[] = "/tmp/psc-compare-coll-XXXXXX";
    const char *label = "all_reduce 1 KiB float sum nccl out-of-place";
    psc_cmp_run_t *a, *b;
    psc_compare_t *c;
    const psc_cmp_row_t *r;

    (void)state;
    psc__edited(DATA "coll_a.json", ops, psc__coll_scale, slower_ops);
    psc__edited(DATA "coll_a.json", none, psc__coll_scale, no_per_op);
    c = psc__compare(DATA "coll_a.json", ops, 10, &a, &b);
    r = psc__row(c, label);
    assert_int_equal(r->verdict, PSC_CMP_WORSE); /* the operations took 4 times as long; the loop's time did not move */
    assert_true(fabs(r->change_pct - 300) < 1e-6);
    assert_true(r->fails);
    assert_true(fabs(r->va - r->a->value) < 1e-12 && r->a->lo <= r->va && r->va <= r->a->hi);
    psc_compare_free(c);
    psc_cmp_run_free(a);
    psc_cmp_run_free(b);
    c = psc__compare(DATA "coll_a.json", none, 10, &a, &b);
    r = psc__row(c, label);
    assert_int_equal(r->verdict, PSC_CMP_NO_SPREAD);
    assert_true(fabs(r->change_pct - 100) < 1e-6); /* time_us doubled */
    assert_true(fabs(r->va - r->a->alt) < 1e-12);
    assert_false(r->fails);
    psc_compare_free(c);
    psc_cmp_run_free(a);
    psc_cmp_run_free(b);
    unlink(ops);
    unlink(none);
}

static void psc__add_expect(json_t *doc, const void *arg)
{
    (void)arg;
    json_object_set_new(doc, "expect", json_pack("{s:i,s:i,s:b}", "rules", 3, "checks", 7, "passed", 0));
}

/* The top-level "expect" object is a result of the run, not a difference of the machine. */
static void test_expect_not_a_difference(void **state)
{
    char path[] = "/tmp/psc-compare-expect-XXXXXX";
    psc_cmp_run_t *a, *b;
    psc_compare_t *c;

    (void)state;
    psc__edited(DATA "bw_a.json", path, psc__add_expect, NULL);
    c = psc__compare(DATA "bw_a.json", path, 0, &a, &b);
    assert_int_equal(c->ndiffs, 0);
    psc_compare_free(c);
    psc_cmp_run_free(a);
    psc_cmp_run_free(b);
    unlink(path);
}

/* A run above PSC_CMP_MAX_FILE (32 MiB) is refused before it is parsed, the cap named. */
static void test_file_cap(void **state)
{
    char path[] = "/tmp/psc-compare-big-XXXXXX", err[512];
    psc_cmp_run_t *r = NULL;
    int fd = mkstemp(path);

    (void)state;
    assert_int_equal(PSC_CMP_MAX_FILE, 32u << 20);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)PSC_CMP_MAX_FILE + 1), 0);
    close(fd);
    assert_int_equal(psc_cmp_run_load(path, &r, err, sizeof(err)), PSC_ERR_INVALID);
    assert_null(r);
    assert_non_null(strstr(err, "33554432"));
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direction),   cmocka_unit_test(test_noise_edges), cmocka_unit_test(test_disagreeing_figure),
        cmocka_unit_test(test_min_samples), cmocka_unit_test(test_status),      cmocka_unit_test(test_fail_above),
        cmocka_unit_test(test_bw_runs),     cmocka_unit_test(test_same_run),    cmocka_unit_test(test_lat_runs),
        cmocka_unit_test(test_coll_runs),   cmocka_unit_test(test_report_runs), cmocka_unit_test(test_other_command),
        cmocka_unit_test(test_twins),       cmocka_unit_test(test_lat_whole_test), cmocka_unit_test(test_coll_per_operation),
        cmocka_unit_test(test_expect_not_a_difference), cmocka_unit_test(test_file_cap),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
