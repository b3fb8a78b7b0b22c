/*
 * The inputs of p2pscope coll (coll/coll_values.h): every input and every
 * result any reduction order can form is exact in its type, so each result
 * has one exact answer; and the data is not trivial (results differ from
 * element to element, ranks hold different values), so a wrong or missing
 * contribution shows. Checked for every type and reduction over rank counts
 * from 1 to 1024.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "coll/coll_values.h"
#include "p2pscope_private.h"

static const int ranks[] = {1, 2, 3, 7, 8, 64, 257, 1024};

#define NELEM 512

static int is_pow2(double v)
{
    int e;

    return v > 0 && frexp(v, &e) == 0.5;
}

static void check_case(int op, int dtype, int n)
{
    double m = psc__coll_exact_max(dtype), first = 0;
    int distinct = 0, ranks_differ = 0;

    for (uint64_t i = 0; i < NELEM; i++) {
        double red = psc__coll_reduced(op, dtype, n, i, 7), lo = INFINITY, hi = -INFINITY, sum = 0, prod = 1;

        for (int r = 0; r < n; r++) {
            double v = (double)psc__coll_input(op, dtype, n, r, i, 7);

            if (fabs(v) > m || (!psc__coll_signed(dtype) && v < 0))
                fail_msg("%s %s n=%d: rank %d element %llu holds %g, not exact in the type", psc_redop_name(op),
                         psc_dtype_name(dtype), n, r, (unsigned long long)i, v);
            if (r > 0 && v != (double)psc__coll_input(op, dtype, n, 0, i, 7))
                ranks_differ = 1;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
            sum += v;
            prod *= v;
            if ((op == PSC_OP_SUM || op == PSC_OP_AVG) && v < 0)
                fail_msg("a negative summand: partial sums could leave the exact range");
        }
        switch (op) {
        case PSC_OP_SUM: assert_true(red == sum && sum <= m); break;
        case PSC_OP_AVG: assert_true(red == sum / n && sum <= m); break;
        case PSC_OP_PROD:
            assert_true(red == prod && is_pow2(prod) && prod <= ldexp(1, psc__coll_max_pow2(dtype)));
            break;
        case PSC_OP_MIN: assert_true(red == lo); break;
        default: assert_true(red == hi); break;
        }
        if (i == 0)
            first = red;
        else if (red != first)
            distinct = 1;
    }
    /* Not trivial: results vary (but a sum over more ranks than the type can count, which is 1 each) */
    if (!distinct && !((op == PSC_OP_SUM || op == PSC_OP_AVG) && psc__coll_sum_limit(dtype, n) == 0))
        fail_msg("%s %s n=%d: every element's result is %g", psc_redop_name(op), psc_dtype_name(dtype), n, first);
    if (n > 1 && !ranks_differ)
        fail_msg("%s %s n=%d: every rank holds the same values", psc_redop_name(op), psc_dtype_name(dtype), n);
}

static void test_reductions_exact_and_varied(void **state)
{
    (void)state;
    for (int op = 0; op < PSC_OP_N; op++)
        for (int t = 0; t < PSC_DT_N; t++)
            for (size_t k = 0; k < sizeof(ranks) / sizeof(ranks[0]); k++)
                check_case(op, t, ranks[k]);
}

/* Data only moved: every value exact, spread over the type's range, different per rank and per seed. */
static void test_moved_data(void **state)
{
    (void)state;
    for (int t = 0; t < PSC_DT_N; t++) {
        double m = psc__coll_exact_max(t), lo = INFINITY, hi = -INFINITY;
        int seed_differs = 0;

        for (uint64_t i = 0; i < 4096; i++) {
            double v = (double)psc__coll_input(-1, t, 8, 3, i, 1);

            assert_true(fabs(v) <= m);
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
            seed_differs |= psc__coll_input(-1, t, 8, 3, i, 2) != psc__coll_input(-1, t, 8, 3, i, 1);
        }
        assert_true(hi - lo >= (m < 255 ? m / 2 : 200)); /* many bit patterns, not a handful */
        assert_true(seed_differs);
        assert_true(!psc__coll_signed(t) || lo < 0);
    }
}

static void test_exact_limits(void **state)
{
    (void)state;
    /* the types' own facts: integers exact up to 2^(significand bits) */
    assert_true(psc__coll_exact_max(PSC_DT_FLOAT16) == 2048);
    assert_true(psc__coll_exact_max(PSC_DT_BFLOAT16) == 256);
    assert_true(psc__coll_exact_max(PSC_DT_FLOAT32) == 16777216);
    assert_true((float)(psc__coll_exact_max(PSC_DT_FLOAT32) + 1) != (float)psc__coll_exact_max(PSC_DT_FLOAT32) + 1.0);
    assert_true(psc__coll_exact_max(PSC_DT_INT8) == 127);
    assert_true(psc__coll_exact_max(PSC_DT_N) == 0);
    /* sums: 8 ranks of half hold up to 15 each; 200 ranks of bfloat16 at most 1 each; 300 none */
    assert_int_equal(psc__coll_sum_limit(PSC_DT_FLOAT16, 8), 15);
    assert_int_equal(psc__coll_sum_limit(PSC_DT_BFLOAT16, 200), 1);
    assert_int_equal(psc__coll_sum_limit(PSC_DT_BFLOAT16, 300), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reductions_exact_and_varied),
        cmocka_unit_test(test_moved_data),
        cmocka_unit_test(test_exact_limits),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
