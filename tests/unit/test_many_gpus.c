/*
 * A driver that reports more GPUs than the library's tables hold
 * (PSC_MAX_GPUS): the context uses the first PSC_MAX_GPUS, says how many the
 * driver has, and refuses indexes beyond them. Through the fake driver.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "p2pscope/bench.h"

static psc_context_t *open_with(const char *count)
{
    psc_context_t *ctx = NULL;
    char err[256];

    setenv("FAKE_CUDA_COUNT", count, 1);
    assert_int_equal(psc_context_create(&ctx, err, sizeof(err)), PSC_OK);
    return ctx;
}

static void test_more_gpus_than_tables(void **state)
{
    psc_context_t *ctx = open_with("100");
    psc_system_info_t sys;
    psc_device_info_t d;
    psc_bw_test_t t;
    size_t n = 0;

    (void)state;
    assert_int_equal(psc_device_count(ctx), PSC_MAX_GPUS);
    assert_int_equal(psc_system_info(ctx, &sys), PSC_OK);
    assert_int_equal(sys.device_count, PSC_MAX_GPUS);
    assert_int_equal(sys.driver_device_count, 100);
    assert_int_equal(psc_device_info(ctx, PSC_MAX_GPUS - 1, &d), PSC_OK);
    assert_string_equal(d.pci_bus_id, "0000:4f:00.0");
    assert_int_equal(psc_device_info(ctx, PSC_MAX_GPUS, &d), PSC_ERR_INVALID);
    /* Every ordered pair of the GPUs in use, none beyond them. */
    assert_int_equal(psc_bw_test_from_name("gpu_to_gpu_read_ce", &t), PSC_OK);
    assert_int_equal(psc_bw_cases(ctx, t, NULL, 0, NULL, 0, &n), PSC_OK);
    assert_int_equal(n, (size_t)PSC_MAX_GPUS * (PSC_MAX_GPUS - 1));
    psc_context_destroy(ctx);
}

static void test_counts_at_and_below_the_tables(void **state)
{
    psc_context_t *ctx = open_with("64");
    psc_system_info_t sys;

    (void)state;
    assert_int_equal(psc_device_count(ctx), 64);
    psc_context_destroy(ctx);
    ctx = open_with("3");
    assert_int_equal(psc_device_count(ctx), 3);
    assert_int_equal(psc_system_info(ctx, &sys), PSC_OK);
    assert_int_equal(sys.driver_device_count, 3);
    psc_context_destroy(ctx);
}

/* A driver that initialises yet counts no GPU, or a negative number, is a machine without GPUs. */
static void test_no_or_negative_count(void **state)
{
    const char *counts[] = {"0", "-1"};

    (void)state;
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        psc_context_t *ctx = NULL;
        char err[256] = "";

        setenv("FAKE_CUDA_COUNT", counts[i], 1);
        assert_int_equal(psc_context_create(&ctx, err, sizeof(err)), PSC_ERR_NO_DEVICE);
        assert_null(ctx);
        assert_non_null(strstr(err, "no GPU"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_more_gpus_than_tables),
        cmocka_unit_test(test_counts_at_and_below_the_tables),
        cmocka_unit_test(test_no_or_negative_count),
    };

    setenv("P2PSCOPE_LIBCUDA", FAKE_LIBCUDA, 1);
    setenv("P2PSCOPE_LIBNVML", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("FAKE_CUDA_MODE", "gpus", 1);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
