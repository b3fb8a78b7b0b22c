/*
 * The verify stress loop's rules, with its run function and clock replaced
 * (every case takes one simulated second): one pass when no time is given,
 * a new seed per pass, sums that add up, the first failure kept, a stop
 * after a pass in which nothing could copy; then on the fake driver.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "p2pscope/bench.h"
#include "suite_opts.h"
#include "verify/stress.h"

#define MAXCALLS 256

typedef struct {
    double clock;               /* simulated seconds */
    unsigned calls;
    size_t index[MAXCALLS];     /* which case each call ran */
    uint64_t seed[MAXCALLS];
    /* behaviour: copies made by case k in call c; < 0: the run refuses the case */
    int (*copies)(size_t k, unsigned call);
    unsigned bad_call;          /* the call that finds wrong bytes (1-based; 0 none) */
    unsigned progress_before, progress_after;
    uint64_t last_progress_bytes;
    size_t n;                   /* cases of the run */
} sim_t;

static sim_t g_sim;
static psc_bw_case_t g_cases[4];

static int copies_always(size_t k, unsigned call)
{
    (void)call;
    return (int)k + 1;
}

static int copies_never(size_t k, unsigned call)
{
    (void)k;
    (void)call;
    return 0;
}

static int copies_first_two_calls(size_t k, unsigned call)
{
    (void)k;
    return call <= 2 ? 1 : 0;
}

static int copies_refused(size_t k, unsigned call)
{
    (void)call;
    return k == 1 ? -1 : 1;
}

static psc_status_t sim_run(psc_context_t *ctx, const psc_bw_case_t *c, const psc_verify_opts_t *o,
                            psc_verify_result_t *out, void *user)
{
    sim_t *s = user;
    const size_t k = (size_t)(c - g_cases);
    const unsigned call = ++s->calls;
    int copies;

    (void)ctx;
    assert_true(k < 4);
    assert_true(call <= MAXCALLS);
    s->index[call - 1] = k;
    s->seed[call - 1] = o->seed;
    s->clock += 1.0;
    copies = s->copies(k, call);
    if (copies < 0)
        return PSC_ERR_INVALID;
    memset(out, 0, sizeof(*out));
    out->c = *c;
    out->copies = (uint64_t)copies;
    out->bytes_checked = 100u * (uint64_t)copies;
    out->status = copies ? PSC_RESULT_PASSED : PSC_RESULT_FAILED;
    snprintf(out->reason, sizeof(out->reason), "call %u", call);
    if (call == s->bad_call) {
        out->status = PSC_RESULT_FAILED;
        out->bad_bytes = 3;
    }
    return PSC_OK;
}

static double sim_now(void *user)
{
    return ((sim_t *)user)->clock;
}

static void count_progress(const psc_verify_progress_t *p, void *user)
{
    sim_t *s = user;

    assert_int_equal(p->count, s->n);
    assert_true(p->index < p->count);
    assert_ptr_equal(p->c, &g_cases[p->index]);
    assert_true(p->bytes_checked >= s->last_progress_bytes); /* totals only grow */
    s->last_progress_bytes = p->bytes_checked;
    if (p->result)
        s->progress_after++;
    else
        s->progress_before++;
}

static psc_status_t stress(size_t n, double seconds, psc_verify_path_sum_t *sums, psc_verify_stress_info_t *info)
{
    const psc__stress_hooks_t h = {sim_run, sim_now, &g_sim};
    psc_verify_opts_t o;

    psc_verify_opts_default(&o);
    o.seed = 0x1234;
    g_sim.n = n;
    return psc__verify_stress_hooked(&h, NULL, g_cases, n, &o, seconds, count_progress, &g_sim, sums, info);
}

static int setup(void **state)
{
    (void)state;
    memset(&g_sim, 0, sizeof(g_sim));
    g_sim.copies = copies_always;
    for (int k = 0; k < 4; k++) {
        memset(&g_cases[k], 0, sizeof(g_cases[k]));
        g_cases[k].src = k;
        g_cases[k].dst = k + 1;
        g_cases[k].nxfer = 1;
    }
    return 0;
}

/* seconds 0: one pass over every case, even when nothing could copy. */
static void test_zero_seconds_one_pass(void **state)
{
    psc_verify_path_sum_t sums[2];
    psc_verify_stress_info_t info;

    (void)state;
    g_sim.copies = copies_never;
    assert_int_equal(stress(2, 0, sums, &info), PSC_OK);
    assert_int_equal(g_sim.calls, 2);
    assert_int_equal(g_sim.index[0], 0);
    assert_int_equal(g_sim.index[1], 1);
    assert_int_equal(sums[0].passes, 1);
    assert_int_equal(sums[1].passes, 1);
    assert_int_equal(info.passes, 1);
    assert_int_equal(info.idle_pass, 0);
    assert_int_equal(g_sim.progress_before, 2);
    assert_int_equal(g_sim.progress_after, 2);
}

/* Passes until the time is up, checked before each case: 5 s of 1 s cases over 2 paths is 3 + 2 runs. */
static void test_time_box_and_seeds(void **state)
{
    psc_verify_path_sum_t sums[2];
    psc_verify_stress_info_t info;

    (void)state;
    assert_int_equal(stress(2, 5, sums, &info), PSC_OK);
    assert_int_equal(g_sim.calls, 5);
    assert_int_equal(sums[0].passes, 3);
    assert_int_equal(sums[1].passes, 2);
    assert_int_equal(info.passes, 3);
    assert_int_equal(info.idle_pass, 0);
    /* The first pass uses the given seed; each pass has its own, shared by its cases. */
    assert_int_equal(g_sim.seed[0], 0x1234);
    assert_int_equal(g_sim.seed[1], g_sim.seed[0]);
    assert_int_equal(g_sim.seed[3], g_sim.seed[2]);
    assert_true(g_sim.seed[2] != g_sim.seed[0]);
    assert_true(g_sim.seed[4] != g_sim.seed[0]);
    assert_true(g_sim.seed[4] != g_sim.seed[2]);
}

/* The first pass covers every case even when the time is up before it ends. */
static void test_first_pass_complete(void **state)
{
    psc_verify_path_sum_t sums[3];
    psc_verify_stress_info_t info;

    (void)state;
    assert_int_equal(stress(3, 1, sums, &info), PSC_OK);
    assert_int_equal(g_sim.calls, 3);
    for (int k = 0; k < 3; k++)
        assert_int_equal(sums[k].passes, 1);
    assert_int_equal(info.passes, 1);
}

/* The sums add every pass up; the first failure is the result kept, later passes do not replace it. */
static void test_sums_and_first_failure(void **state)
{
    psc_verify_path_sum_t sums[2];
    psc_verify_stress_info_t info;

    (void)state;
    g_sim.bad_call = 3; /* pass 2, case 0 */
    assert_int_equal(stress(2, 6, sums, &info), PSC_OK);
    assert_int_equal(g_sim.calls, 6);
    assert_int_equal(sums[0].passes, 3);
    assert_int_equal(sums[0].copies, 3 * 1);
    assert_int_equal(sums[0].bytes_checked, 3 * 100);
    assert_int_equal(sums[0].bad_bytes, 3);
    assert_int_equal(sums[0].last.status, PSC_RESULT_FAILED);
    assert_string_equal(sums[0].last.reason, "call 3");
    assert_int_equal(sums[1].copies, 3 * 2);
    assert_int_equal(sums[1].bad_bytes, 0);
    assert_int_equal(sums[1].last.status, PSC_RESULT_PASSED);
    assert_string_equal(sums[1].last.reason, "call 6"); /* the last pass's */
    assert_int_equal(info.bytes_checked, sums[0].bytes_checked + sums[1].bytes_checked);
    assert_int_equal(g_sim.last_progress_bytes, info.bytes_checked);
}

/* A pass in which no case could copy ends the run, whatever time is left. */
static void test_stops_when_no_path_ran(void **state)
{
    psc_verify_path_sum_t sums[2];
    psc_verify_stress_info_t info;

    (void)state;
    g_sim.copies = copies_never;
    assert_int_equal(stress(2, 1000, sums, &info), PSC_OK);
    assert_int_equal(g_sim.calls, 2);
    assert_int_equal(info.idle_pass, 1);
    assert_int_equal(info.passes, 1);
    setup(state);
    g_sim.copies = copies_first_two_calls; /* pass 1 copies, pass 2 does not */
    assert_int_equal(stress(2, 1000, sums, &info), PSC_OK);
    assert_int_equal(g_sim.calls, 4);
    assert_int_equal(info.idle_pass, 2);
    assert_int_equal(sums[0].passes, 2);
    assert_int_equal(sums[0].copies, 1);
}

/* A case the run refuses is a failed result of its own case, not a hole in the sums. */
static void test_refused_case(void **state)
{
    psc_verify_path_sum_t sums[2];

    (void)state;
    g_sim.copies = copies_refused;
    assert_int_equal(stress(2, 0, sums, NULL), PSC_OK);
    assert_int_equal(sums[1].last.status, PSC_RESULT_FAILED);
    assert_string_equal(sums[1].last.reason, "invalid case");
    assert_int_equal(sums[1].last.c.src, g_cases[1].src);
    assert_int_equal(sums[1].passes, 1);
    assert_int_equal(sums[0].last.status, PSC_RESULT_PASSED);
}

/* Bad arguments are refused before anything runs or is written. */
static void test_invalid_arguments(void **state)
{
    psc_verify_path_sum_t sums[2], before[2];
    psc_verify_opts_t o;

    (void)state;
    psc_verify_opts_default(&o);
    memset(sums, 0xab, sizeof(sums));
    memcpy(before, sums, sizeof(sums));
    assert_int_equal(stress(0, 0, sums, NULL), PSC_ERR_INVALID);
    assert_int_equal(stress(2, -1, sums, NULL), PSC_ERR_INVALID);
    assert_int_equal(stress(2, NAN, sums, NULL), PSC_ERR_INVALID);
    assert_int_equal(stress(2, 0, NULL, NULL), PSC_ERR_INVALID);
    assert_int_equal(g_sim.calls, 0);
    assert_memory_equal(sums, before, sizeof(sums));
    assert_int_equal(psc_verify_stress(NULL, g_cases, 2, stress_opts(&o, 0, NULL, NULL), sums, NULL), PSC_ERR_INVALID);
}

/* The real run on the fake driver: no case can copy, so a long time box still ends after one pass. */
static void test_fake_driver(void **state)
{
    psc_context_t *ctx = NULL;
    psc_verify_path_sum_t sums[8];
    psc_verify_stress_info_t info;
    psc_verify_stress_opts_t so;
    psc_verify_opts_t o, bad;
    psc_bw_case_t cases[8];
    psc_bw_test_t t;
    char err[256];
    size_t n = 0;

    (void)state;
    assert_int_equal(psc_context_create(&ctx, err, sizeof(err)), PSC_OK);
    assert_int_equal(psc_bw_test_from_name("gpu_to_gpu_read_ce", &t), PSC_OK);
    assert_int_equal(psc_bw_cases(ctx, t, NULL, 0, cases, 8, &n), PSC_OK);
    assert_int_equal(n, 2);
    psc_verify_opts_default(&o);
    assert_int_equal(psc_verify_stress(ctx, cases, n, stress_opts(&o, 0, NULL, NULL), NULL, NULL), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(ctx), "psc_verify_stress"));
    memset(&bad, 0, sizeof(bad)); /* not from psc_verify_opts_default: no struct_size */
    assert_int_equal(psc_verify_stress(ctx, cases, n, stress_opts(&bad, 0, NULL, NULL), sums, &info), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(ctx), "struct_size"));
    so = *stress_opts(&o, 0, NULL, NULL);
    so.struct_size = 0; /* the stress options' own */
    assert_int_equal(psc_verify_stress(ctx, cases, n, &so, sums, &info), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(ctx), "verify_stress options not set up"));
    assert_int_equal(psc_verify_stress(ctx, cases, n, NULL, sums, &info), PSC_ERR_INVALID);
    assert_int_equal(psc_verify_stress(ctx, cases, n, stress_opts(&o, 100, NULL, NULL), sums, &info), PSC_OK);
    assert_int_equal(info.idle_pass, 1);
    for (size_t k = 0; k < n; k++) {
        assert_int_equal(sums[k].passes, 1);
        assert_int_equal(sums[k].copies, 0);
        assert_int_equal(sums[k].last.status, PSC_RESULT_FAILED);
        assert_int_equal(sums[k].last.c.xfer[0].src, cases[k].xfer[0].src);
    }
    psc_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_zero_seconds_one_pass, setup),
        cmocka_unit_test_setup(test_time_box_and_seeds, setup),
        cmocka_unit_test_setup(test_first_pass_complete, setup),
        cmocka_unit_test_setup(test_sums_and_first_failure, setup),
        cmocka_unit_test_setup(test_stops_when_no_path_ran, setup),
        cmocka_unit_test_setup(test_refused_case, setup),
        cmocka_unit_test_setup(test_invalid_arguments, setup),
        cmocka_unit_test(test_fake_driver),
    };

    setenv("P2PSCOPE_LIBCUDA", FAKE_LIBCUDA, 1);
    setenv("P2PSCOPE_LIBNVML", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("FAKE_CUDA_MODE", "gpus", 1);
    setenv("FAKE_CUDA_COUNT", "2", 1);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
