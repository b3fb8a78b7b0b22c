/*
 * The names and rules of nccl-tests' table as p2pscope coll prints them:
 * collective, program, type and reduction names (a parser of nccl-tests'
 * output keys on them), element sizes, and the bus bandwidth factors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "p2pscope/bench.h"
#include "p2pscope_private.h"

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(psc_coll_name(PSC_COLL_ALL_REDUCE), "all_reduce");
    assert_string_equal(psc_coll_name(PSC_COLL_ALL_TO_ALL), "alltoall");
    assert_string_equal(psc_coll_name(PSC_COLL_SEND_RECV), "sendrecv");
    assert_null(psc_coll_name(PSC_COLL_N));
    assert_null(psc_coll_name(-1));
    assert_string_equal(psc_coll_perf_name(PSC_COLL_REDUCE_SCATTER), "reduce_scatter_perf");
    assert_string_equal(psc_coll_perf_name(PSC_COLL_BROADCAST), "broadcast_perf");
    assert_null(psc_coll_perf_name(PSC_COLL_N));
    /* nccl-tests' names, indexed by NCCL's own numbers */
    assert_string_equal(psc_dtype_name(PSC_DT_FLOAT32), "float");
    assert_string_equal(psc_dtype_name(PSC_DT_FLOAT16), "half");
    assert_string_equal(psc_dtype_name(PSC_DT_BFLOAT16), "bfloat16");
    assert_string_equal(psc_dtype_name(PSC_DT_UINT64), "uint64");
    assert_null(psc_dtype_name(PSC_DT_N));
    assert_string_equal(psc_redop_name(PSC_OP_SUM), "sum");
    assert_string_equal(psc_redop_name(PSC_OP_AVG), "avg");
    assert_null(psc_redop_name(PSC_OP_N));
    assert_int_equal(PSC_DT_FLOAT32, 7); /* ncclFloat32 */
    assert_int_equal(PSC_DT_BFLOAT16, 9); /* ncclBfloat16 */
    assert_int_equal(PSC_OP_MIN, 3);      /* ncclMin */
}

static void test_sizes(void **state)
{
    static const size_t want[PSC_DT_N] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};

    (void)state;
    for (int t = 0; t < PSC_DT_N; t++)
        assert_int_equal(psc_dtype_size(t), want[t]);
    assert_int_equal(psc_dtype_size(PSC_DT_N), 0);
    assert_int_equal(psc_dtype_size(-1), 0);
}

static void test_busbw_factors(void **state)
{
    (void)state;
    /* 8 ranks: all-reduce moves 2(n-1)/n of the data over each link, the gathers (n-1)/n, the rooted ones all of it */
    assert_true(psc_coll_busbw_factor(PSC_COLL_ALL_REDUCE, 8) == 1.75);
    assert_true(psc_coll_busbw_factor(PSC_COLL_ALL_REDUCE, 2) == 1.0);
    assert_true(psc_coll_busbw_factor(PSC_COLL_ALL_GATHER, 8) == 0.875);
    assert_true(psc_coll_busbw_factor(PSC_COLL_REDUCE_SCATTER, 4) == 0.75);
    assert_true(psc_coll_busbw_factor(PSC_COLL_ALL_TO_ALL, 2) == 0.5);
    assert_true(psc_coll_busbw_factor(PSC_COLL_BROADCAST, 8) == 1.0);
    assert_true(psc_coll_busbw_factor(PSC_COLL_REDUCE, 8) == 1.0);
    assert_true(psc_coll_busbw_factor(PSC_COLL_SEND_RECV, 8) == 1.0);
    /* one rank moves nothing between GPUs */
    assert_true(psc_coll_busbw_factor(PSC_COLL_ALL_REDUCE, 1) == 0.0);
    assert_true(psc_coll_busbw_factor(PSC_COLL_ALL_GATHER, 1) == 0.0);
    assert_true(psc_coll_busbw_factor(PSC_COLL_ALL_REDUCE, 0) == 0.0);
    assert_true(psc_coll_busbw_factor(PSC_COLL_N, 8) == 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_busbw_factors),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
