/*
 * psc_copy_bench's samples into a row: times are medians, comparisons are
 * medians of pairs taken side by side, so a machine that slows between
 * samples does not read as one way of copying being slower than another.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "xfer/copy_bench_fold.h"

static double g[PSC_CB_METHODS][PSC_CB_MAX_SAMPLES], c[PSC_CB_METHODS][PSC_CB_MAX_SAMPLES];

/* n samples where the machine runs at speed 1, 2, 3, ... (sample k takes (k + 1) x): each method at its own pace. */
static void drifting(unsigned n, double driver, double psc, double prep, double plan)
{
    memset(g, 0, sizeof(g));
    memset(c, 0, sizeof(c));
    for (unsigned k = 0; k < n; k++) {
        double slow = (double)((k * 5) % n + 1); /* every speed once, out of order */

        g[PSC_CB_DRIVER][k] = driver * slow;
        g[PSC_CB_PSC][k] = psc * slow;
        g[PSC_CB_PREP][k] = prep * slow;
        g[PSC_CB_PLAN][k] = plan * slow;
        c[PSC_CB_DRIVER][k] = 1.9 * slow; /* the driver's own call: not what psc_copy's CPU is set against */
        c[PSC_CB_PSC][k] = 2.1 * slow;
        c[PSC_CB_PREP][k] = 2.05 * slow;
        c[PSC_CB_PLAN][k] = 2.0 * slow;
    }
}

static void test_pairs_cancel_drift(void **state)
{
    psc_copy_bench_row_t r;

    (void)state;
    drifting(7, 4.0, 4.0, 2.0, 3.0);
    memset(&r, 0, sizeof(r));
    psc__copy_bench_fold(g, c, 7, &r);
    assert_float_equal(r.speedup, 1.0, 1e-12);
    assert_float_equal(r.prep_speedup, 2.0, 1e-12);
    assert_float_equal(r.driver_us, 4.0 * 4, 1e-12); /* the median of 1..7 slow-downs: 4 */
    assert_float_equal(r.psc_us, 4.0 * 4, 1e-12);
    assert_float_equal(r.prep_us, 2.0 * 4, 1e-12);
    assert_float_equal(r.psc_cpu_us, 2.1 * 4, 1e-12);
    assert_float_equal(r.launch_cpu_us, 2.0 * 4, 1e-12);
    assert_float_equal(r.driver_cpu_us, 1.9 * 4, 1e-12);
    assert_float_equal(r.prep_cpu_us, 2.05 * 4, 1e-12);
    assert_float_equal(r.cpu_over_us, 0.1 * 4, 1e-12); /* the median of the differences 0.1 x 1..7 */
}

/* One sample spoiled on one side (a slow moment) moves a comparison by one rank at most; an even count takes the
 * middle two. */
static void test_outlier_and_even_count(void **state)
{
    psc_copy_bench_row_t r;

    (void)state;
    drifting(6, 3.0, 2.0, 3.0, 1.0);
    g[PSC_CB_PSC][2] *= 100;
    c[PSC_CB_PSC][4] += 50;
    memset(&r, 0, sizeof(r));
    psc__copy_bench_fold(g, c, 6, &r);
    assert_float_equal(r.speedup, 1.5, 1e-12); /* five pairs of 1.5 and the spoiled 0.015 */
    assert_float_equal(r.prep_speedup, 1.0, 1e-12);
    assert_float_equal(r.driver_us, 3.0 * 3.5, 1e-12); /* slow-downs 1..6: the middle two, 3 and 4 */
    assert_float_equal(r.cpu_over_us, 0.45, 1e-12); /* 0.1, 0.2, 0.4, 0.5, 0.6 and the spoiled 50.3 */
}

/* A method not measured (zeros, as a failed sample leaves it) leaves its figures 0, never a division by zero. */
static void test_unmeasured(void **state)
{
    psc_copy_bench_row_t r;

    (void)state;
    drifting(5, 3.0, 2.0, 3.0, 1.0);
    memset(g[PSC_CB_PREP], 0, sizeof(g[PSC_CB_PREP]));
    memset(c[PSC_CB_PLAN], 0, sizeof(c[PSC_CB_PLAN]));
    memset(&r, 0, sizeof(r));
    psc__copy_bench_fold(g, c, 5, &r);
    assert_float_equal(r.prep_speedup, 0, 0);
    assert_float_equal(r.prep_us, 0, 0);
    assert_float_equal(r.launch_cpu_us, 0, 0);
    assert_float_equal(r.cpu_over_us, 0, 0);
    assert_float_equal(r.speedup, 1.5, 1e-12);
    psc__copy_bench_fold(g, c, 0, &r); /* no sample: every figure 0 */
    assert_float_equal(r.speedup, 0, 0);
    assert_float_equal(r.driver_us, 0, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs_cancel_drift),
        cmocka_unit_test(test_outlier_and_even_count),
        cmocka_unit_test(test_unmeasured),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
