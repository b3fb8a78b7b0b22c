/*
 * The loops that run every case of one test (psc_bw_run_test,
 * psc_lat_run_test) on the fake driver, whose GPUs cannot make a context:
 * every case comes back as a failed result of its own case, in order, with
 * progress before and after each; cap bounds what runs; bad arguments are
 * refused before anything runs, with the reason recorded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake_context.h"
#include "p2pscope/bench.h"
#include "suite_opts.h"

typedef struct {
    unsigned before, after;
    const void *pending; /* the case announced and not yet finished */
} calls_t;

static void bw_progress(const psc_bw_case_t *c, const psc_bw_result_t *r, void *user)
{
    calls_t *k = user;

    if (!r) {
        assert_null(k->pending); /* the previous case finished first */
        k->pending = c;
        k->before++;
        return;
    }
    assert_ptr_equal(k->pending, c);
    assert_int_equal(r->c.xfer[0].src, c->xfer[0].src);
    k->pending = NULL;
    k->after++;
}

static void lat_progress(const psc_lat_case_t *c, const psc_lat_result_t *r, void *user)
{
    calls_t *k = user;

    if (!r) {
        assert_null(k->pending);
        k->pending = c;
        k->before++;
        return;
    }
    assert_ptr_equal(k->pending, c);
    k->pending = NULL;
    k->after++;
}

static void test_bw_every_case_a_result(void **state)
{
    psc_bw_result_t res[4];
    psc_bw_case_t cases[4];
    psc_measure_opts_t o;
    calls_t k = {0, 0, NULL};
    psc_bw_test_t t;
    size_t n = 99, nc = 0;

    (void)state;
    psc_measure_opts_default(&o);
    assert_int_equal(psc_bw_test_from_name("gpu_to_gpu_write_ce", &t), PSC_OK);
    assert_int_equal(psc_bw_cases(g_ctx, t, NULL, 0, cases, 4, &nc), PSC_OK);
    assert_int_equal(nc, 2);
    assert_int_equal(psc_bw_run_test(g_ctx, t, bw_test_opts(NULL, 0, &o, bw_progress, &k), res, 4, &n), PSC_OK);
    assert_int_equal(n, 2);
    assert_int_equal(k.before, 2);
    assert_int_equal(k.after, 2);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(res[i].status, PSC_RESULT_FAILED);
        assert_int_equal(res[i].c.src, cases[i].src);
        assert_int_equal(res[i].c.dst, cases[i].dst);
        assert_true(res[i].reason[0] != '\0'); /* says why */
    }
    /* cap bounds what runs */
    memset(&k, 0, sizeof(k));
    assert_int_equal(psc_bw_run_test(g_ctx, t, bw_test_opts(NULL, 0, &o, bw_progress, &k), res, 1, &n), PSC_OK);
    assert_int_equal(n, 1);
    assert_int_equal(k.after, 1);
    assert_int_equal(psc_bw_run_test(g_ctx, t, bw_test_opts(NULL, 0, &o, NULL, NULL), NULL, 0, &n), PSC_OK);
    assert_int_equal(n, 0);
}

static void test_bw_refused(void **state)
{
    psc_bw_result_t res[2];
    psc_bw_run_test_opts_t to;
    psc_measure_opts_t o;
    const int dup[2] = {1, 1};
    size_t n = 99;

    (void)state;
    psc_measure_opts_default(&o);
    assert_int_equal(psc_bw_run_test(NULL, 0, bw_test_opts(NULL, 0, &o, NULL, NULL), res, 2, &n), PSC_ERR_INVALID);
    assert_int_equal(psc_bw_run_test(g_ctx, 0, NULL, res, 2, &n), PSC_ERR_INVALID);
    assert_int_equal(psc_bw_run_test(g_ctx, 0, bw_test_opts(NULL, 0, &o, NULL, NULL), NULL, 2, &n), PSC_ERR_INVALID);
    assert_int_equal(psc_bw_run_test(g_ctx, psc_bw_test_count(), bw_test_opts(NULL, 0, &o, NULL, NULL), res, 2, &n),
                     PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "does not exist"));
    assert_int_equal(psc_bw_run_test(g_ctx, 0, bw_test_opts(dup, 2, &o, NULL, NULL), res, 2, &n), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "GPU 1 named twice"));
    /* Options refused once, up front, not as a failed result per case. */
    o.samples = 0;
    assert_int_equal(psc_bw_run_test(g_ctx, 0, bw_test_opts(NULL, 0, &o, NULL, NULL), res, 2, &n), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "samples"));
    o.struct_size = 0;
    assert_int_equal(psc_bw_run_test(g_ctx, 0, bw_test_opts(NULL, 0, &o, NULL, NULL), res, 2, &n), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "psc_measure_opts_default"));
    /* The whole test's own options: set up by their default macro, reserved0 0. */
    psc_measure_opts_default(&o);
    to = *bw_test_opts(NULL, 0, &o, NULL, NULL);
    to.reserved0 = 1;
    assert_int_equal(psc_bw_run_test(g_ctx, 0, &to, res, 2, &n), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "reserved0 1: accepted 0"));
    to.reserved0 = 0;
    to.struct_size = 0;
    assert_int_equal(psc_bw_run_test(g_ctx, 0, &to, res, 2, &n), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "psc_bw_run_test_opts_default"));
    assert_int_equal(n, 99); /* written only on success */
}

static void test_lat_every_case_a_result(void **state)
{
    psc_lat_result_t *res = calloc(4, sizeof(*res));
    psc_lat_case_t cases[4];
    psc_lat_opts_t o;
    calls_t k = {0, 0, NULL};
    psc_lat_test_t t;
    size_t n = 99, nc = 0;

    (void)state;
    assert_non_null(res);
    psc_lat_opts_default(&o);
    assert_int_equal(psc_lat_test_from_name(psc_lat_test_info(0)->name, &t), PSC_OK);
    assert_int_equal(psc_lat_cases(g_ctx, t, NULL, 0, cases, 4, &nc), PSC_OK);
    assert_true(nc >= 1);
    assert_int_equal(psc_lat_run_test(g_ctx, t, lat_test_opts(NULL, 0, &o, lat_progress, &k), res, 4, &n), PSC_OK);
    assert_int_equal(n, nc);
    assert_int_equal(k.before, nc);
    assert_int_equal(k.after, nc);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(res[i].status, PSC_RESULT_FAILED);
        assert_int_equal(res[i].c.src, cases[i].src);
        assert_int_equal(res[i].c.issuer, cases[i].issuer);
    }
    n = 99;
    assert_int_equal(psc_lat_run_test(g_ctx, psc_lat_test_count(), lat_test_opts(NULL, 0, &o, NULL, NULL), res, 4, &n),
                     PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "latency test"));
    assert_int_equal(psc_lat_run_test(g_ctx, t, NULL, res, 4, &n), PSC_ERR_INVALID);
    assert_int_equal(n, 99);
    free(res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bw_every_case_a_result),
        cmocka_unit_test(test_bw_refused),
        cmocka_unit_test(test_lat_every_case_a_result),
    };

    psc_test_fake_driver("gpus", "2");
    return cmocka_run_group_tests(tests, psc_test_open_ctx, psc_test_close_ctx);
}
