/*
 * The suites behind bw/report, lat and verify (psc_bw_run_suite,
 * psc_lat_run_suite, psc_verify_run_suite) on the fake driver, whose GPUs
 * cannot make a context: every refusal comes before anything runs, with its
 * reason recorded and the output untouched; results are grouped by test in
 * the order run, a test without a case on these GPUs kept with none.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake_context.h"
#include "p2pscope/bench.h"
#include "suite_opts.h"

static unsigned g_calls;

static void bw_progress(const psc_bw_suite_progress_t *p, void *user)
{
    size_t *next = user;

    g_calls++;
    assert_int_equal(p->index, *next); /* numbered over the whole suite, in order */
    assert_true(p->index < p->count);
    if (p->result) {
        assert_int_equal(p->result->c.test, p->c->test);
        ++*next;
    }
}

static void lat_progress(const psc_lat_case_t *c, const psc_lat_result_t *r, void *user)
{
    (void)c;
    (void)r;
    (void)user;
    g_calls++;
}

static void verify_progress(const psc_verify_progress_t *p, const char *load_error, void *user)
{
    unsigned *load_calls = user;

    g_calls++;
    if (load_error) {
        assert_null(p);
        assert_int_equal(g_calls, 1); /* before any case */
        ++*load_calls;
    }
}

static psc_bw_test_t bw_named(const char *name)
{
    psc_bw_test_t t = -1;

    assert_int_equal(psc_bw_test_from_name(name, &t), PSC_OK);
    return t;
}

/* A refusal: the status, nothing run, *out untouched, the reason containing `why`. */
#define ASSERT_REFUSED(call, st, out, why)                                                                           \
    do {                                                                                                             \
        g_calls = 0;                                                                                                 \
        assert_int_equal((call), (st));                                                                              \
        assert_ptr_equal((out), (void *)&g_calls);                                                                   \
        assert_int_equal(g_calls, 0);                                                                                \
        if (!strstr(psc_context_last_error(g_ctx), (why)))                                                           \
            fail_msg("reason \"%s\" lacks \"%s\"", psc_context_last_error(g_ctx), (why));                           \
    } while (0)

static void test_bw_refusals(void **state)
{
    const int one[] = {0}, bad_dev[] = {0, 7};
    psc_bw_test_t t = bw_named("gpu_to_gpu_read_ce"), bad_test[] = {0, -1};
    psc_bw_suite_t *s = (void *)&g_calls;
    psc_bw_suite_opts_t so;
    psc_measure_opts_t o;
    psc_system_info_t sys;
    size_t next = 0;

    (void)state;
    psc_measure_opts_default(&o);
    ASSERT_REFUSED(psc_bw_run_suite(g_ctx, bw_opts(&t, 1, one, 1, 0, 0, 0, &o, bw_progress, &next), &s),
                   PSC_ERR_UNSUPPORTED, s, "gpu_to_gpu_read_ce needs at least 2 GPUs; 1 selected");
    ASSERT_REFUSED(psc_bw_run_suite(g_ctx, bw_opts(bad_test, 2, NULL, 0, 0, 0, 0, &o, bw_progress, &next), &s),
                   PSC_ERR_INVALID, s, "test index -1 out of range");
    ASSERT_REFUSED(psc_bw_run_suite(g_ctx, bw_opts(NULL, 0, bad_dev, 2, 0, 0, 0, &o, bw_progress, &next), &s),
                   PSC_ERR_INVALID, s, "GPU 7 does not exist: accepted 0 to 1");
    ASSERT_REFUSED(psc_bw_run_suite(g_ctx, bw_opts(NULL, 0, NULL, 0, 4096, 1024, 2, &o, bw_progress, &next), &s),
                   PSC_ERR_INVALID, s, "sweep");
    ASSERT_REFUSED(psc_bw_run_suite(g_ctx, bw_opts(NULL, 0, NULL, 0, 4096, 8192, 1, &o, bw_progress, &next), &s),
                   PSC_ERR_INVALID, s, "factor >= 2");
    assert_int_equal(psc_system_info(g_ctx, &sys), PSC_OK);
    o.host_node = sys.numa_nodes; /* one past the last */
    ASSERT_REFUSED(psc_bw_run_suite(g_ctx, bw_opts(NULL, 0, NULL, 0, 0, 0, 0, &o, bw_progress, &next), &s),
                   PSC_ERR_INVALID, s, "does not exist: accepted 0 to");
    psc_measure_opts_default(&o);
    o.samples = 0;
    ASSERT_REFUSED(psc_bw_run_suite(g_ctx, bw_opts(NULL, 0, NULL, 0, 0, 0, 0, &o, bw_progress, &next), &s),
                   PSC_ERR_INVALID, s, "psc_bw_run_suite");
    psc_measure_opts_default(&o);
    o.struct_size = 0;
    g_calls = 0;
    assert_int_equal(psc_bw_run_suite(g_ctx, bw_opts(NULL, 0, NULL, 0, 0, 0, 0, &o, bw_progress, &next), &s),
                     PSC_ERR_INVALID);
    assert_ptr_equal(s, (void *)&g_calls);
    assert_int_equal(psc_bw_run_suite(g_ctx, bw_opts(NULL, 0, NULL, 0, 0, 0, 0, &o, NULL, NULL), NULL),
                     PSC_ERR_INVALID);
    /* The suite's own options: set up by their default macro, reserved0 0. */
    psc_measure_opts_default(&o);
    so = *bw_opts(NULL, 0, NULL, 0, 0, 0, 0, &o, bw_progress, &next);
    so.struct_size = 0;
    ASSERT_REFUSED(psc_bw_run_suite(g_ctx, &so, &s), PSC_ERR_INVALID, s, "not set up by psc_bw_suite_opts_default");
    so.struct_size = sizeof(so) + 8; /* a newer header than this library */
    ASSERT_REFUSED(psc_bw_run_suite(g_ctx, &so, &s), PSC_ERR_INVALID, s, "bw_suite options");
    ASSERT_REFUSED(psc_bw_run_suite(g_ctx, NULL, &s), PSC_ERR_INVALID, s, "no bw_suite options given");
    so.struct_size = sizeof(so);
    so.reserved0 = 1;
    ASSERT_REFUSED(psc_bw_run_suite(g_ctx, &so, &s), PSC_ERR_INVALID, s, "reserved0 1: accepted 0");
}

/* Every test on one GPU: each test's results are its own cases, in order; the pair tests are kept, empty. */
static void test_bw_grouped_by_test(void **state)
{
    const int one[] = {0};
    psc_bw_suite_t *s = NULL;
    psc_measure_opts_t o;
    size_t next = 0, at = 0;

    (void)state;
    psc_measure_opts_default(&o);
    g_calls = 0;
    assert_int_equal(psc_bw_run_suite(g_ctx, bw_opts(NULL, 0, one, 1, 0, 0, 0, &o, bw_progress, &next), &s), PSC_OK);
    assert_non_null(s);
    assert_int_equal(s->ntests, psc_bw_test_count());
    assert_int_equal(s->ndev, 1);
    assert_int_equal(s->nsizes, 1);
    assert_int_equal(next, s->nresults);
    assert_int_equal(g_calls, 2 * s->nresults);
    for (int t = 0; t < s->ntests; t++) {
        size_t n = 0;

        assert_int_equal(s->tests[t].test, t);
        assert_int_equal(psc_bw_cases(g_ctx, t, one, 1, NULL, 0, &n), PSC_OK);
        assert_int_equal(s->tests[t].n, n);
        assert_int_equal(s->tests[t].first, at);
        if (psc_bw_test_info(t)->min_gpus > 1)
            assert_int_equal(n, 0);
        for (size_t k = at; k < at + n; k++)
            assert_int_equal(s->results[k].c.test, t);
        at += n;
    }
    assert_int_equal(at, s->nresults);
    assert_int_equal(s->nfailed, s->nresults); /* the fake GPUs cannot make a context */
    assert_int_equal(s->payload_bytes, 0);
    psc_bw_suite_free(s);
    psc_bw_suite_free(NULL);
    /* No measure options: the defaults, as psc_measure_opts_default gives them. */
    s = NULL;
    assert_int_equal(psc_bw_run_suite(g_ctx, bw_opts(NULL, 0, one, 1, 0, 0, 0, NULL, NULL, NULL), &s), PSC_OK);
    assert_int_equal(s->ntests, psc_bw_test_count());
    psc_bw_suite_free(s);
}

/* A sweep: each test's results size after size, every GPU's case at each. */
static void test_bw_sweep(void **state)
{
    psc_bw_test_t t[] = {bw_named("gpu_local_ce"), bw_named("gpu_to_gpu_write_ce")};
    psc_bw_suite_t *s = NULL;
    psc_measure_opts_t o;
    size_t next = 0;

    (void)state;
    psc_measure_opts_default(&o);
    assert_int_equal(psc_bw_run_suite(g_ctx, bw_opts(t, 2, NULL, 0, 4096, 16384, 2, &o, bw_progress, &next), &s),
                     PSC_OK);
    assert_int_equal(s->nsizes, 3);
    assert_int_equal(s->sizes[0], 4096);
    assert_int_equal(s->sizes[2], 16384);
    assert_int_equal(s->ntests, 2);
    assert_int_equal(s->tests[0].test, t[0]);
    assert_int_equal(s->tests[0].first, 0);
    assert_int_equal(s->tests[0].n, 2 * 3); /* a case per GPU at each size */
    assert_int_equal(s->tests[1].test, t[1]);
    assert_int_equal(s->tests[1].first, 6);
    assert_int_equal(s->tests[1].n, 2 * 3); /* an ordered pair each way at each size */
    assert_int_equal(s->nresults, 12);
    for (size_t k = 0; k < s->nresults; k++)
        assert_int_equal(s->results[k].c.test, t[k >= 6]);
    psc_bw_suite_free(s);
}

static void test_lat(void **state)
{
    const int one[] = {0};
    psc_lat_test_t named = -1, bad[] = {psc_lat_test_count()};
    psc_lat_suite_t *s = (void *)&g_calls;
    psc_lat_suite_opts_t so;
    psc_lat_opts_t o;
    size_t at = 0;

    (void)state;
    psc_lat_opts_default(&o);
    for (int t = 0; t < psc_lat_test_count(); t++)
        if (psc_lat_test_info(t)->min_gpus > 1)
            named = t;
    assert_true(named >= 0);
    ASSERT_REFUSED(psc_lat_run_suite(g_ctx, lat_suite_opts(&named, 1, one, 1, &o, lat_progress, NULL), &s),
                   PSC_ERR_UNSUPPORTED, s, "needs at least 2 GPUs; 1 selected");
    ASSERT_REFUSED(psc_lat_run_suite(g_ctx, lat_suite_opts(bad, 1, NULL, 0, &o, lat_progress, NULL), &s),
                   PSC_ERR_INVALID, s, "out of range");
    o.struct_size = 1;
    g_calls = 0;
    assert_int_equal(psc_lat_run_suite(g_ctx, lat_suite_opts(NULL, 0, NULL, 0, &o, lat_progress, NULL), &s),
                     PSC_ERR_INVALID);
    assert_ptr_equal(s, (void *)&g_calls);
    assert_int_equal(g_calls, 0);
    psc_lat_opts_default(&o);
    so = *lat_suite_opts(NULL, 0, NULL, 0, &o, lat_progress, NULL);
    so.struct_size = 0; /* the suite's own options */
    ASSERT_REFUSED(psc_lat_run_suite(g_ctx, &so, &s), PSC_ERR_INVALID, s, "not set up by psc_lat_suite_opts_default");
    ASSERT_REFUSED(psc_lat_run_suite(g_ctx, NULL, &s), PSC_ERR_INVALID, s, "no lat_suite options given");
    o.samples = 1;
    assert_int_equal(psc_lat_run_suite(g_ctx, lat_suite_opts(NULL, 0, one, 1, &o, lat_progress, NULL), &s), PSC_OK);
    assert_int_equal(s->ntests, psc_lat_test_count());
    assert_int_equal(g_calls, 2 * s->nresults);
    for (int t = 0; t < s->ntests; t++) {
        size_t n = 0;

        assert_int_equal(psc_lat_cases(g_ctx, t, one, 1, NULL, 0, &n), PSC_OK);
        assert_int_equal(s->tests[t].first, at);
        assert_int_equal(s->tests[t].n, n);
        for (size_t k = at; k < at + n; k++)
            assert_int_equal(s->results[k].c.test, t);
        at += n;
    }
    assert_int_equal(at, s->nresults);
    assert_int_equal(s->nfailed, s->nresults);
    psc_lat_suite_free(s);
}

static void test_verify(void **state)
{
    const int one[] = {0};
    psc_bw_test_t t[] = {bw_named("gpu_to_gpu_write_ce"), bw_named("gpu_local_ce")};
    psc_verify_suite_t *s = (void *)&g_calls;
    psc_verify_suite_opts_t so;
    psc_verify_opts_t o;
    unsigned load_calls = 0;
    size_t n0 = 0;

    (void)state;
    psc_verify_opts_default(&o);
    ASSERT_REFUSED(
        psc_verify_run_suite(g_ctx, verify_suite_opts(t, 2, one, 1, &o, 0, 0, verify_progress, &load_calls), &s),
        PSC_ERR_UNSUPPORTED, s, "gpu_to_gpu_write_ce needs at least 2 GPUs; 1 selected");
    ASSERT_REFUSED(
        psc_verify_run_suite(g_ctx, verify_suite_opts(t, 2, NULL, 0, &o, NAN, 0, verify_progress, &load_calls), &s),
        PSC_ERR_INVALID, s, "seconds >= 0");
    ASSERT_REFUSED(
        psc_verify_run_suite(g_ctx, verify_suite_opts(t, 2, NULL, 0, &o, -1, 0, verify_progress, &load_calls), &s),
        PSC_ERR_INVALID, s, "seconds >= 0");
    o.struct_size = 0;
    g_calls = 0;
    assert_int_equal(
        psc_verify_run_suite(g_ctx, verify_suite_opts(t, 2, NULL, 0, &o, 0, 0, verify_progress, &load_calls), &s),
        PSC_ERR_INVALID);
    assert_ptr_equal(s, (void *)&g_calls);
    assert_int_equal(g_calls, 0);
    psc_verify_opts_default(&o);
    so = *verify_suite_opts(t, 2, NULL, 0, &o, 0, 0, verify_progress, &load_calls);
    so.struct_size = 0; /* the suite's own options */
    ASSERT_REFUSED(psc_verify_run_suite(g_ctx, &so, &s), PSC_ERR_INVALID, s,
                   "not set up by psc_verify_suite_opts_default");
    so.struct_size = sizeof(so);
    so.reserved0 = 2;
    ASSERT_REFUSED(psc_verify_run_suite(g_ctx, &so, &s), PSC_ERR_INVALID, s, "reserved0 2: accepted 0");
    ASSERT_REFUSED(psc_verify_run_suite(g_ctx, NULL, &s), PSC_ERR_INVALID, s, "psc_verify_run_suite");

    /* Without a load: the paths of each test in order, none of the load's fields set. */
    psc_verify_opts_default(&o);
    assert_int_equal(
        psc_verify_run_suite(g_ctx, verify_suite_opts(t, 2, NULL, 0, &o, 0, 0, verify_progress, &load_calls), &s),
        PSC_OK);
    assert_int_equal(psc_bw_cases(g_ctx, t[0], NULL, 0, NULL, 0, &n0), PSC_OK);
    assert_int_equal(s->npaths, n0 + 2);
    for (size_t k = 0; k < s->npaths; k++)
        assert_int_equal(s->paths[k].last.c.test, t[k >= n0]);
    assert_int_equal(s->nfailed, s->npaths);
    assert_int_equal(s->load_ran, 0);
    assert_string_equal(s->load_error, "");
    assert_int_equal(load_calls, 0);
    psc_verify_suite_free(s);

    /* With a load the fake GPUs cannot start: recorded, said once before any case, and the paths still run. */
    g_calls = 0;
    assert_int_equal(
        psc_verify_run_suite(g_ctx, verify_suite_opts(t, 1, NULL, 0, &o, 0, 1, verify_progress, &load_calls), &s),
        PSC_OK);
    assert_int_equal(load_calls, 1);
    assert_true(s->load_error[0] != '\0');
    assert_int_equal(s->load_ran, 0);
    assert_null(s->load);
    assert_int_equal(s->npaths, n0);
    assert_int_equal(s->stress.passes, 1);
    psc_verify_suite_free(s);

    /* Every test on one GPU: the pair tests have no path, and that is not an error. */
    assert_int_equal(psc_verify_run_suite(g_ctx, verify_suite_opts(NULL, 0, one, 1, &o, 0, 0, NULL, NULL), &s), PSC_OK);
    assert_true(s->npaths > 0);
    for (size_t k = 0; k < s->npaths; k++)
        assert_true(psc_bw_test_info(s->paths[k].last.c.test)->min_gpus <= 1);
    psc_verify_suite_free(s);
    psc_verify_suite_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bw_refusals), cmocka_unit_test(test_bw_grouped_by_test), cmocka_unit_test(test_bw_sweep),
        cmocka_unit_test(test_lat),         cmocka_unit_test(test_verify),
    };

    psc_test_fake_driver("gpus", "2");
    return cmocka_run_group_tests(tests, psc_test_open_ctx, psc_test_close_ctx);
}
