/*
 * What an application embedding the library is promised, on the fake driver's
 * "contexts" mode (primary contexts, memory and peer access work; kernels do
 * not launch, so every run fails part-way): each call leaves the calling
 * thread's current context and the peer access between primary contexts as
 * it found them, whether it succeeded or failed; option structs from an older
 * (shorter) header are filled only as far as they reach; the version is the
 * build's.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "p2pscope/bench.h"

static psc_context_t *g_ctx;
static void *(*fake_current)(void);
static void (*fake_set_current)(void *);
static void *(*fake_primary)(int);
static int (*fake_peer)(int, int);
static void (*fake_set_peer)(int, int, int);
static void (*fake_push)(void *);
static int (*fake_depth)(void);
static void *(*fake_stack_at)(int);
static void (*fake_clear_stack)(void);
static void (*fake_fail_peer_enable)(int);

#define CALLER_CTX ((void *)0xC0FFEE0) /* a context of the application's own, current on this thread */

static psc_bw_case_t case_of(const char *test, int src, int dst, int issuer)
{
    psc_bw_case_t c;

    memset(&c, 0, sizeof(c));
    assert_int_equal(psc_bw_test_from_name(test, &c.test), PSC_OK);
    c.src = src;
    c.dst = dst;
    c.issuer = issuer;
    c.nxfer = 1;
    c.xfer[0] = (psc_xfer_t){src, dst, issuer};
    return c;
}

static void run_bw(const char *test, int src, int dst, int issuer)
{
    psc_bw_case_t c = case_of(test, src, dst, issuer);
    psc_measure_opts_t o;
    psc_bw_result_t r;

    psc_measure_opts_default(&o);
    o.size = 4096;
    /* The fake cannot launch a kernel: the run fails after it set up contexts and peer access. */
    assert_int_equal(psc_bw_run(g_ctx, &c, &o, &r), PSC_OK);
    assert_int_equal(r.status, PSC_RESULT_FAILED);
}

static void test_current_context_kept(void **state)
{
    (void)state;
    fake_set_current(CALLER_CTX);
    run_bw("gpu_local_ce", 0, 0, 0);
    assert_ptr_equal(fake_current(), CALLER_CTX);
    run_bw("gpu_to_gpu_write_ce", 1, 0, 1);
    assert_ptr_equal(fake_current(), CALLER_CTX);
    /* No context current before: none after either. */
    fake_set_current(NULL);
    run_bw("gpu_to_gpu_read_ce", 0, 1, 1);
    assert_null(fake_current());
    /* A primary context of ours that the caller made current stays current. */
    fake_set_current(fake_primary(1));
    run_bw("gpu_local_ce", 0, 0, 0);
    assert_ptr_equal(fake_current(), fake_primary(1));
    fake_set_current(NULL);
}

static void test_peer_access_put_back(void **state)
{
    (void)state;
    /* Off before: a P2P run turns it on for its copies, and off again after. */
    fake_set_peer(0, 1, 0);
    fake_set_peer(1, 0, 0);
    run_bw("gpu_to_gpu_write_ce", 0, 1, 0);
    assert_int_equal(fake_peer(0, 1), 0);
    assert_int_equal(fake_peer(1, 0), 0);
    run_bw("gpu_to_gpu_read_ce", 0, 1, 1);
    assert_int_equal(fake_peer(1, 0), 0);

    /* On before (the application enabled it): a P2P-off run turns both directions off, then back on. */
    fake_set_peer(0, 1, 1);
    fake_set_peer(1, 0, 1);
    run_bw("gpu_to_gpu_p2p_off_ce", 0, 1, 0);
    assert_int_equal(fake_peer(0, 1), 1);
    assert_int_equal(fake_peer(1, 0), 1);

    /* One direction on: each is put back as it was. */
    fake_set_peer(0, 1, 1);
    fake_set_peer(1, 0, 0);
    run_bw("gpu_to_gpu_p2p_off_ce", 1, 0, 1);
    assert_int_equal(fake_peer(0, 1), 1);
    assert_int_equal(fake_peer(1, 0), 0);
    run_bw("gpu_to_gpu_write_ce", 1, 0, 1);
    assert_int_equal(fake_peer(0, 1), 1);
    assert_int_equal(fake_peer(1, 0), 0);

    /* The application changes it between calls: the next call finds the new state and keeps it. */
    fake_set_peer(0, 1, 0);
    run_bw("gpu_to_gpu_write_ce", 0, 1, 0);
    assert_int_equal(fake_peer(0, 1), 0);
    fake_set_peer(0, 1, 0);
    fake_set_peer(1, 0, 0);
}

static void test_verify_and_lat_put_back(void **state)
{
    psc_bw_case_t c = case_of("gpu_to_gpu_p2p_off_ce", 0, 1, 0);
    psc_verify_opts_t vo;
    psc_verify_result_t vr;
    psc_lat_opts_t lo;
    psc_lat_result_t *lr = calloc(1, sizeof(*lr));
    psc_lat_case_t lc = {0};

    (void)state;
    assert_non_null(lr);
    fake_set_current(CALLER_CTX);
    fake_set_peer(0, 1, 1);
    psc_verify_opts_default(&vo);
    vo.max_size = 4096;
    assert_int_equal(psc_verify_run(g_ctx, &c, &vo, &vr), PSC_OK);
    assert_int_equal(vr.status, PSC_RESULT_FAILED);
    assert_ptr_equal(fake_current(), CALLER_CTX);
    assert_int_equal(fake_peer(0, 1), 1);
    assert_int_equal(fake_peer(1, 0), 0);

    psc_lat_opts_default(&lo);
    assert_int_equal(psc_lat_test_from_name("gpu_gpu_flag", &lc.test), PSC_OK);
    lc.src = 0;
    lc.dst = 1;
    lc.issuer = 0;
    assert_int_equal(psc_lat_run(g_ctx, &lc, &lo, lr), PSC_OK);
    assert_int_equal(lr->status, PSC_RESULT_FAILED);
    assert_ptr_equal(fake_current(), CALLER_CTX);
    assert_int_equal(fake_peer(0, 1), 1);
    assert_int_equal(fake_peer(1, 0), 0);
    fake_set_peer(0, 1, 0);
    fake_set_current(NULL);
    free(lr);
}

/* The application's context stack (cuCtxPushCurrent) keeps every entry: the library only ever replaces the top. */
static void test_context_stack_kept(void **state)
{
    (void)state;
    fake_clear_stack();
    fake_push((void *)0xA0);
    fake_push((void *)0xB0);
    run_bw("gpu_local_ce", 1, 1, 1);
    run_bw("gpu_to_gpu_p2p_off_ce", 0, 1, 0);
    assert_int_equal(fake_depth(), 2);
    assert_ptr_equal(fake_stack_at(0), (void *)0xA0);
    assert_ptr_equal(fake_stack_at(1), (void *)0xB0);
    fake_clear_stack();
}

/* Peer access that cannot be put back: the call fails saying so, writes no result, and the caller's
 * current context is put back all the same. */
static void test_failed_restore(void **state)
{
    psc_bw_case_t c = case_of("gpu_to_gpu_p2p_off_ce", 0, 1, 0);
    psc_measure_opts_t o;
    psc_bw_result_t r;

    (void)state;
    fake_clear_stack();
    fake_push(CALLER_CTX);
    fake_set_peer(0, 1, 1); /* the application's */
    fake_fail_peer_enable(1);
    psc_measure_opts_default(&o);
    o.size = 4096;
    memset(&r, 0xAB, sizeof(r));
    assert_int_equal(psc_bw_run(g_ctx, &c, &o, &r), PSC_ERR_DRIVER);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "peer access from GPU 0 to GPU 1 not put back"));
    assert_int_equal(((unsigned char *)&r)[0], 0xAB); /* no result written */
    assert_int_equal(((unsigned char *)&r)[sizeof(r) - 1], 0xAB);
    assert_int_equal(fake_depth(), 1);
    assert_ptr_equal(fake_current(), CALLER_CTX);
    fake_fail_peer_enable(0);
    fake_set_peer(0, 1, 0);
    fake_clear_stack();
}

/* A caller's struct is written only as far as its struct_size reaches (a shorter struct from an older header stays intact). */
static void test_options_struct_size(void **state)
{
    const size_t older = offsetof(psc_measure_opts_t, seed); /* as if seed and what follows were added later */
    unsigned char buf[sizeof(psc_measure_opts_t) + 16];
    psc_measure_opts_t *o = (psc_measure_opts_t *)buf, full;
    char err[256];

    (void)state;
    memset(buf, 0xAB, sizeof(buf));
    psc_measure_opts_init(o, older);
    for (size_t k = older; k < sizeof(buf); k++)
        assert_int_equal(buf[k], 0xAB); /* nothing written past the caller's struct */
    assert_int_equal(o->struct_size, older);
    psc_measure_opts_default(&full);
    assert_int_equal(full.struct_size, sizeof(full));
    assert_int_equal(o->samples, full.samples);
    /* Shorter than the first release's struct, or longer than this library's: refused, saying why. */
    assert_int_equal(psc_measure_opts_check(o, err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "struct_size"));
    full.struct_size = sizeof(full) + 1;
    assert_int_equal(psc_measure_opts_check(&full, err, sizeof(err)), PSC_ERR_INVALID);
    /* A newer header's longer struct, set up by this library: the defaults it knows, its own size kept, refused. */
    memset(buf, 0xAB, sizeof(buf));
    psc_measure_opts_init(o, sizeof(psc_measure_opts_t) + 8);
    assert_int_equal(o->struct_size, sizeof(psc_measure_opts_t) + 8);
    assert_int_equal(buf[sizeof(psc_measure_opts_t)], 0xAB); /* the fields this library does not know: untouched */
    assert_int_equal(psc_measure_opts_check(o, err, sizeof(err)), PSC_ERR_INVALID);
    full.struct_size = sizeof(full);
    assert_int_equal(psc_measure_opts_check(&full, err, sizeof(err)), PSC_OK);
}

static void test_create_without_a_place(void **state)
{
    char err[256] = "stale";

    (void)state;
    assert_int_equal(psc_context_create(NULL, err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "psc_context_t **"));
}

static void test_version_is_the_builds(void **state)
{
    int major = -1, minor = -1, patch = -1;
    char text[64];

    (void)state;
    assert_string_equal(psc_version(&major, &minor, &patch), PSC_VERSION_STRING);
    snprintf(text, sizeof(text), "%d.%d.%d", major, minor, patch);
    assert_string_equal(text, PSC_VERSION_STRING);
    assert_int_equal(major, PSC_VERSION_MAJOR);
    assert_non_null(psc_version(NULL, NULL, NULL));
}

static int setup(void **state)
{
    char err[256];
    void *h;

    (void)state;
    setenv("P2PSCOPE_LIBCUDA", FAKE_LIBCUDA, 1);
    setenv("P2PSCOPE_LIBNVML", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("FAKE_CUDA_MODE", "contexts", 1);
    setenv("FAKE_CUDA_COUNT", "2", 1);
    if (psc_context_create(&g_ctx, err, sizeof(err)) != PSC_OK) {
        fprintf(stderr, "fake context: %s\n", err);
        return -1;
    }
    h = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD); /* the very copy the library loaded */
    if (!h)
        return -1;
    *(void **)&fake_current = dlsym(h, "fake_cuda_current");
    *(void **)&fake_set_current = dlsym(h, "fake_cuda_set_current");
    *(void **)&fake_primary = dlsym(h, "fake_cuda_primary");
    *(void **)&fake_peer = dlsym(h, "fake_cuda_peer");
    *(void **)&fake_set_peer = dlsym(h, "fake_cuda_set_peer");
    *(void **)&fake_push = dlsym(h, "fake_cuda_push");
    *(void **)&fake_depth = dlsym(h, "fake_cuda_depth");
    *(void **)&fake_stack_at = dlsym(h, "fake_cuda_stack_at");
    *(void **)&fake_clear_stack = dlsym(h, "fake_cuda_clear_stack");
    *(void **)&fake_fail_peer_enable = dlsym(h, "fake_cuda_fail_peer_enable");
    return fake_current && fake_set_current && fake_primary && fake_peer && fake_set_peer && fake_push && fake_depth &&
                   fake_stack_at && fake_clear_stack && fake_fail_peer_enable
               ? 0
               : -1;
}

static int teardown(void **state)
{
    (void)state;
    fake_clear_stack();
    fake_push((void *)0xA0);
    fake_push(CALLER_CTX);
    psc_context_destroy(g_ctx);
    /* Destroying the context leaves the caller's context stack as it was. */
    return fake_depth() == 2 && fake_stack_at(0) == (void *)0xA0 && fake_current() == CALLER_CTX ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_current_context_kept),
        cmocka_unit_test(test_peer_access_put_back),
        cmocka_unit_test(test_context_stack_kept),
        cmocka_unit_test(test_failed_restore),
        cmocka_unit_test(test_verify_and_lat_put_back),
        cmocka_unit_test(test_options_struct_size),
        cmocka_unit_test(test_version_is_the_builds),
        cmocka_unit_test(test_create_without_a_place),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
