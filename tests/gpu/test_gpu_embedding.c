/*
 * On the real driver: a call leaves the calling thread's current context and
 * the peer access between primary contexts as the application had them. The
 * test plays the application with the driver API itself (loaded with dlopen,
 * as the library does, so that it builds and skips on a machine without one).
 */
#include <cuda.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "gpu_common.h"
#include "gpu_driver.h"

static CUcontext primary[2];

static CUcontext current(void)
{
    CUcontext c = (CUcontext)(uintptr_t)1;

    assert_int_equal(cu.get_current(&c), CUDA_SUCCESS);
    return c;
}

static void run_case(const char *test, int src, int dst, int issuer)
{
    psc_bw_case_t c = psc_test_case(test, src, dst, issuer);
    psc_measure_opts_t o = psc_test_opts(1 << 20);
    psc_bw_result_t r;

    assert_int_equal(psc_bw_run(g_ctx, &c, &o, &r), PSC_OK);
    assert_int_equal(r.status, PSC_RESULT_PASSED);
}

/* Peer access from a's primary context to b's, as the driver has it now (left unchanged). */
static int peer_on(int a, int b)
{
    CUresult rc;

    assert_int_equal(cu.set_current(primary[a]), CUDA_SUCCESS);
    rc = cu.disable_peer(primary[b]);
    if (rc == CUDA_SUCCESS)
        assert_int_equal(cu.enable_peer(primary[b], 0), CUDA_SUCCESS);
    else
        assert_int_equal(rc, CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
    cu.set_current(NULL);
    return rc == CUDA_SUCCESS;
}

static void set_peer(int a, int b, int on)
{
    CUresult rc;

    assert_int_equal(cu.set_current(primary[a]), CUDA_SUCCESS);
    rc = on ? cu.enable_peer(primary[b], 0) : cu.disable_peer(primary[b]);
    assert_true(rc == CUDA_SUCCESS || rc == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED ||
                rc == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
    cu.set_current(NULL);
}

static void test_current_context_kept(void **state)
{
    (void)state;
    assert_int_equal(cu.set_current(NULL), CUDA_SUCCESS);
    run_case("gpu_local_ce", 0, 0, 0);
    assert_null(current());
    run_case("host_to_gpu_ce", PSC_HOST, 0, 0);
    assert_null(current());
    assert_int_equal(cu.set_current(primary[0]), CUDA_SUCCESS);
    run_case("gpu_local_sm", 0, 0, 0);
    assert_ptr_equal(current(), primary[0]);
    if (psc_device_count(g_ctx) >= 2) {
        /* The application works on GPU 1; a run on GPU 0 must not leave GPU 0 current. */
        assert_int_equal(cu.set_current(primary[1]), CUDA_SUCCESS);
        run_case("gpu_local_ce", 0, 0, 0);
        assert_ptr_equal(current(), primary[1]);
        run_case("gpu_to_gpu_write_ce", 0, 1, 0);
        assert_ptr_equal(current(), primary[1]);
    }
    cu.set_current(NULL);
}

static void test_peer_access_kept(void **state)
{
    int can = 0;

    (void)state;
    if (psc_device_count(g_ctx) < 2 || cu.can_access(&can, 0, 1) != CUDA_SUCCESS || !can) {
        printf("  one GPU, or no peer access between GPUs 0 and 1: nothing to keep\n");
        return;
    }
    /* On (the application's), through a run that needs it off. */
    set_peer(0, 1, 1);
    set_peer(1, 0, 1);
    run_case("gpu_to_gpu_p2p_off_ce", 0, 1, 0);
    assert_true(peer_on(0, 1));
    assert_true(peer_on(1, 0));
    /* Off, through runs that need it on: off after. */
    set_peer(0, 1, 0);
    set_peer(1, 0, 0);
    run_case("gpu_to_gpu_write_sm", 0, 1, 0);
    run_case("gpu_to_gpu_read_ce", 0, 1, 1);
    assert_false(peer_on(0, 1));
    assert_false(peer_on(1, 0));
    /* Mixed. */
    set_peer(0, 1, 1);
    run_case("gpu_to_gpu_write_ce", 1, 0, 1);
    run_case("gpu_to_gpu_p2p_off_ce", 1, 0, 1);
    assert_true(peer_on(0, 1));
    assert_false(peer_on(1, 0));
    set_peer(0, 1, 0);
}

/* A context destroyed with a background load still running frees the load, and keeps the caller's context. */
static void test_destroy_with_a_load(void **state)
{
    psc_context_t *ctx = NULL;
    psc_load_t *load = NULL;
    char err[256];

    (void)state;
    assert_int_equal(cu.set_current(primary[0]), CUDA_SUCCESS);
    assert_int_equal(psc_context_create(&ctx, err, sizeof(err)), PSC_OK);
    assert_int_equal(psc_load_start(ctx, NULL, 0, &load), PSC_OK);
    assert_non_null(load);
    psc_context_destroy(ctx);
    assert_ptr_equal(current(), primary[0]);
    cu.set_current(NULL);
}

static int setup(void **state)
{
    (void)state;
    if (psc_test_driver_load() != 0)
        return -1;
    return psc_test_retain_primaries(primary, psc_device_count(g_ctx) < 2 ? psc_device_count(g_ctx) : 2);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_current_context_kept),
    cmocka_unit_test(test_peer_access_kept),
    cmocka_unit_test(test_destroy_with_a_load),
};

PSC_GPU_TEST_MAIN_SETUP(tests, setup)
