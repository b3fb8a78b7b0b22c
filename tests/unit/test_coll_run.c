/*
 * psc_coll_run on the fake driver (its kernels on the CPU) and the fake NCCL:
 * nccl-tests' rows (sizes, counts, busbw factors, the average), the timed
 * operations' own outputs checked (a wrong element in every slot counted),
 * in place where it can be, the refusals, a missing NCCL, the timeout that
 * aborts a hung collective, the processes' calls (opts.procs), and the
 * caller's peer access and context left as they were.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fake_context.h"
#include "p2pscope/bench.h"
#include "p2pscope_private.h"
#include "coll/coll_load.h"

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int setup(void **state)
{
    if (psc_test_open_fake_gpus(state, "3") != 0)
        return -1;
    return 0;
}

static int each(void **state)
{
    (void)state;
    setenv("P2PSCOPE_LIBNCCL", FAKE_LIBNCCL, 1);
    unsetenv("FAKE_NCCL_CORRUPT");
    unsetenv("FAKE_NCCL_HANG");
    unsetenv("FAKE_NCCL_VERSION");
    return 0;
}

static void opts(psc_coll_opts_t *o, int coll, uint64_t min, uint64_t max)
{
    psc_coll_opts_default(o);
    o->coll = coll;
    o->min_bytes = min;
    o->max_bytes = max;
    o->step_factor = 4;
    o->iters = 5;
    o->per_op = 0;
    o->impls = PSC_COLL_IMPL_NCCL; /* NCCL's rows alone here: p2pscope's beside them in test_coll_own.c */
}

static psc_coll_report_t *run_ok(const int *devs, int n, const psc_coll_opts_t *o)
{
    psc_coll_report_t *r = NULL;
    psc_status_t st = psc_coll_run(g_ctx, devs, n, o, &r);

    if (st != PSC_OK)
        fail_msg("psc_coll_run: %s", psc_context_last_error(g_ctx));
    assert_non_null(r);
    return r;
}

/* Every collective: one row per size, nccl-tests' size and count columns, busbw = algbw x factor, nothing wrong. */
static void test_every_collective(void **state)
{
    static const int devs[] = {0, 1, 2};

    (void)state;
    for (int c = 0; c < PSC_COLL_N; c++) {
        psc_coll_opts_t o;
        psc_coll_report_t *r;
        double sum = 0;

        opts(&o, c, 100, 6000);
        r = run_ok(devs, 3, &o);
        assert_int_equal(r->nranks, 3);
        assert_int_equal(r->nprocs, 1);
        assert_int_equal(r->nrows, 3); /* 100, 400, 1600 */
        assert_int_equal(r->failed_rows, 0);
        for (int k = 0; k < 3; k++) {
            assert_int_equal(r->ranks[k].rank, k);
            assert_int_equal(r->ranks[k].device, devs[k]);
        }
        for (int i = 0; i < r->nrows; i++) {
            const psc_coll_row_t *w = &r->rows[i];
            uint64_t asked = 100ull << (2 * i), count = asked / 4;
            int parts = c == PSC_COLL_ALL_GATHER || c == PSC_COLL_REDUCE_SCATTER || c == PSC_COLL_ALL_TO_ALL;

            if (parts)
                count = (count / 3) & ~3ull; /* 16 B per part, as nccl-tests rounds */
            assert_int_equal(w->count, count);
            assert_int_equal(w->bytes, parts ? count * 3 * 4 : count * 4);
            assert_int_equal(w->dtype, PSC_DT_FLOAT32);
            assert_int_equal(w->op, c == PSC_COLL_ALL_GATHER || c == PSC_COLL_BROADCAST || c == PSC_COLL_ALL_TO_ALL
                                        ? -1 : PSC_OP_SUM);
            assert_int_equal(w->root, c == PSC_COLL_BROADCAST || c == PSC_COLL_REDUCE ? 0 : -1);
            for (int k = 0; k < 2; k++) {
                int na = k == 1 && (c == PSC_COLL_ALL_TO_ALL || c == PSC_COLL_SEND_RECV);

                assert_int_equal(w->r[k].ran, 1);
                assert_true(w->r[k].time_us > 0);
                assert_int_equal(w->r[k].wrong, na ? -1 : 0);
                assert_true(fabs(w->r[k].busbw_gbs - w->r[k].algbw_gbs * psc_coll_busbw_factor(c, 3)) <=
                            1e-9 * (1 + w->r[k].busbw_gbs));
                assert_true(fabs(w->r[k].algbw_gbs * w->r[k].time_us * 1e3 - (double)count * 4 * (parts ? 3 : 1)) <=
                            1e-6 * (double)(count + 1) * 12);
                sum += w->r[k].busbw_gbs;
            }
        }
        assert_true(fabs(r->avg_busbw_gbs - sum / 6) <= 1e-9 * (1 + sum));
        psc_coll_report_free(r);
    }
}

/* Every type and op of all_reduce over 3 ranks (averages that do not divide evenly): exact, or within NCCL's 2 ulps. */
static void test_every_type_and_op(void **state)
{
    static const int devs[] = {0, 1, 2};
    psc_coll_opts_t o;
    psc_coll_report_t *r;

    (void)state;
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
    o.dtype = -1;
    o.op = -1;
    r = run_ok(devs, 3, &o);
    assert_int_equal(r->nrows, PSC_DT_N * PSC_OP_N);
    assert_int_equal(r->failed_rows, 0);
    for (int i = 0; i < r->nrows; i++) {
        assert_int_equal(r->rows[i].dtype, i / PSC_OP_N);
        assert_int_equal(r->rows[i].op, i % PSC_OP_N);
    }
    psc_coll_report_free(r);
}

/* Rooted collectives with -r -1: a row per root; sendrecv shows sum as nccl-tests prints it. */
static void test_roots(void **state)
{
    static const int devs[] = {0, 1, 2};
    psc_coll_opts_t o;
    psc_coll_report_t *r;

    (void)state;
    opts(&o, PSC_COLL_REDUCE, 256, 256);
    o.root = -1;
    r = run_ok(devs, 3, &o);
    assert_int_equal(r->nrows, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(r->rows[i].root, i);
    assert_int_equal(r->failed_rows, 0);
    psc_coll_report_free(r);
    opts(&o, PSC_COLL_BROADCAST, 256, 256);
    o.root = 2;
    r = run_ok(devs, 3, &o);
    assert_int_equal(r->nrows, 1);
    assert_int_equal(r->rows[0].root, 2);
    assert_int_equal(r->failed_rows, 0);
    psc_coll_report_free(r);
}

/*
 * A wrong element in every output: out of place, every slot the timed loop
 * wrote is checked (max/size slots, fewer than the operations), so each
 * rank's slots each hold one; in place the timed operations reuse their
 * slots (not checked: a sum of a sum), so only the extra run finds one per rank.
 */
static void test_wrong_elements_in_timed_slots(void **state)
{
    static const int devs[] = {0, 1};
    psc_coll_opts_t o;
    psc_coll_report_t *r;

    (void)state;
    setenv("FAKE_NCCL_CORRUPT", "3", 1);
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 256);
    o.iters = 10;
    o.step_factor = 4; /* rows 64 B (4 slots of 256 B), 256 B (1 slot) */
    r = run_ok(devs, 2, &o);
    assert_int_equal(r->nrows, 2);
    assert_int_equal(r->rows[0].r[0].timed_checked, 4);
    assert_int_equal(r->rows[0].r[0].wrong, 2 * 4);
    assert_int_equal(r->rows[1].r[0].timed_checked, 1);
    assert_int_equal(r->rows[1].r[0].wrong, 2 * 1);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(r->rows[i].r[1].timed_checked, 0);
        assert_int_equal(r->rows[i].r[1].wrong, 2);
    }
    assert_int_equal(r->failed_rows, 4);
    assert_non_null(strstr(r->first_wrong, "rank 0, out of place, slot 0, element 3:"));
    psc_coll_report_free(r);
    /* every slot used once in place: the timed operations checked there too */
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
    o.max_bytes = 1024;
    o.min_bytes = 64;
    o.step_factor = 64;
    o.iters = 8; /* 16 slots of 64 B */
    r = run_ok(devs, 2, &o);
    assert_int_equal(r->rows[0].r[1].timed_checked, 8);
    assert_int_equal(r->rows[0].r[1].wrong, 2 * 8);
    psc_coll_report_free(r);
    /* max gives the same when applied again: checked in place whatever the reuse */
    opts(&o, PSC_COLL_ALL_REDUCE, 256, 256);
    o.op = PSC_OP_MAX;
    r = run_ok(devs, 2, &o);
    assert_int_equal(r->rows[0].r[1].timed_checked, 1);
    assert_true(r->rows[0].r[1].wrong >= 2);
    psc_coll_report_free(r);
    /* -c 0: nothing checked, N/A, and no row fails */
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
    o.check = 0;
    r = run_ok(devs, 2, &o);
    assert_int_equal(r->rows[0].r[0].wrong, -1);
    assert_int_equal(r->rows[0].r[1].wrong, -1);
    assert_int_equal(r->failed_rows, 0);
    assert_string_equal(r->first_wrong, "");
    psc_coll_report_free(r);
}

/* Each operation's own time: the percentiles are there with per_op, and order themselves. */
static void test_per_operation_times(void **state)
{
    static const int devs[] = {0, 1};
    psc_coll_opts_t o;
    psc_coll_report_t *r;

    (void)state;
    opts(&o, PSC_COLL_ALL_GATHER, 1024, 1024);
    o.per_op = 1;
    o.iters = 7;
    r = run_ok(devs, 2, &o);
    for (int k = 0; k < 2; k++) {
        const psc_pctl_t *p = &r->rows[0].r[k].iter_us;

        assert_int_equal(p->n, 7);
        assert_true(p->min > 0 && p->min <= p->p50 && p->p50 <= p->p99 && p->p99 <= p->max);
    }
    psc_coll_report_free(r);
}

/* compute_load: every half of every row timed again (its kernels alone timed too); nothing without it. */
static void test_compute_load_rows(void **state)
{
    static const int devs[] = {0, 1};
    psc_coll_opts_t o;
    psc_coll_report_t *r;

    (void)state;
    opts(&o, PSC_COLL_ALL_REDUCE, 256, 4096);
    o.compute_load = 1;
    r = run_ok(devs, 2, &o);
    assert_int_equal(r->compute_load, 1);
    assert_non_null(r->loads);
    for (int i = 0; i < r->nrows; i++)
        for (int k = 0; k < 2; k++) {
            const psc_coll_load_half_t *h = &r->loads[i].r[k];

            assert_int_equal(h->ran, 1);
            assert_true(h->time_us > 0 && h->compute_alone_us > 0);
            /* the fake's kernels ran at their launch, before the collectives: none within, none covering */
            assert_true(isnan(h->compute_us) && isnan(h->slowdown));
            assert_int_equal(h->covered, 0);
        }
    psc_coll_report_free(r);
    o.compute_load = 0;
    r = run_ok(devs, 2, &o);
    assert_int_equal(r->compute_load, 0);
    assert_null(r->loads);
    psc_coll_report_free(r);
}

/* The kernels that ran wholly within the loop, the boundaries included, and their mean; NaN for none. */
static void test_compute_load_within(void **state)
{
    const double even[] = {0, 10, 20, 30, 40}, uneven[] = {0, 5, 15, 30};
    int n = -1;

    (void)state;
    assert_true(fabs(psc__coll_load_within(even, 4, 10, 30, &n) - 10) < 1e-12);
    assert_int_equal(n, 2);
    assert_true(fabs(psc__coll_load_within(even, 4, 11, 30, &n) - 10) < 1e-12);
    assert_int_equal(n, 1);
    assert_true(isnan(psc__coll_load_within(even, 4, 15, 25, &n)));
    assert_int_equal(n, 0);
    assert_true(fabs(psc__coll_load_within(uneven, 3, 0, 30, &n) - 10) < 1e-12);
    assert_int_equal(n, 3);
    assert_true(fabs(psc__coll_load_within(uneven, 3, 0, 29, &n) - 7.5) < 1e-12);
    assert_int_equal(n, 2);
}

static void refused(const psc_coll_opts_t *o, int ndev, psc_status_t want, const char *phrase)
{
    static const int devs[] = {0, 1, 2};
    psc_coll_report_t *r = (psc_coll_report_t *)(uintptr_t)1;

    assert_int_equal(psc_coll_run(g_ctx, devs, ndev, o, &r), want);
    assert_ptr_equal(r, (psc_coll_report_t *)(uintptr_t)1); /* nothing written */
    if (!strstr(psc_context_last_error(g_ctx), phrase))
        fail_msg("'%s' lacks '%s'", psc_context_last_error(g_ctx), phrase);
}

static void test_refusals(void **state)
{
    psc_coll_opts_t o;
    psc_coll_procs_t p;

    (void)state;
    opts(&o, PSC_COLL_ALL_REDUCE, 0, 64);
    refused(&o, 2, PSC_ERR_INVALID, "accepted 1 B <= min <= max");
    opts(&o, PSC_COLL_ALL_REDUCE, 128, 64);
    refused(&o, 2, PSC_ERR_INVALID, "min <= max");
    opts(&o, PSC_COLL_N, 64, 64);
    refused(&o, 2, PSC_ERR_INVALID, "collective out of range");
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
    o.iters = 0;
    refused(&o, 2, PSC_ERR_INVALID, "iters 1..1000000");
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
    o.step_factor = 1;
    o.step_bytes = 0;
    refused(&o, 2, PSC_ERR_INVALID, "no step between sizes");
    opts(&o, PSC_COLL_ALL_REDUCE, 1, 1ull << 30);
    o.step_factor = 1;
    o.step_bytes = 1;
    refused(&o, 2, PSC_ERR_INVALID, "rows (accepted at most");
    {
        /* steps so large the next size would wrap: one row, not a wrapped sweep */
        static const int two[] = {0, 1};
        psc_coll_report_t *r;

        opts(&o, PSC_COLL_ALL_REDUCE, 64, 128);
        o.step_factor = 1;
        o.step_bytes = UINT64_MAX - 8;
        r = run_ok(two, 2, &o);
        assert_int_equal(r->nrows, 1);
        psc_coll_report_free(r);
        opts(&o, PSC_COLL_ALL_REDUCE, 64, 128);
        o.step_factor = UINT32_MAX;
        r = run_ok(two, 2, &o);
        assert_int_equal(r->nrows, 1);
        psc_coll_report_free(r);
    }
    opts(&o, PSC_COLL_BROADCAST, 64, 64);
    o.root = 3;
    refused(&o, 3, PSC_ERR_INVALID, "root 3, but the run has 3 ranks (accepted 0 to 2");
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
    o.blocking = 1;
    o.graph_launches = 2;
    refused(&o, 2, PSC_ERR_INVALID, "blocking and CUDA graphs together");
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
    o.graph_launches = 2; /* the fake driver's stream capture answers CUDA_ERROR_NOT_SUPPORTED */
    refused(&o, 2, PSC_ERR_DRIVER, "all_reduce of 64 B (float, sum), the timed loop (CUDA graph): capturing");
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
    o.compute_load = 2;
    refused(&o, 2, PSC_ERR_INVALID, "compute_load out of range (accepted 0 or 1)");
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
    o.timeout_s = -1;
    refused(&o, 2, PSC_ERR_INVALID, "timeout out of range");
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
    memset(&p, 0, sizeof(p));
    p.nprocs = 2;
    p.proc = 2;
    o.procs = &p;
    refused(&o, 2, PSC_ERR_INVALID, "procs incomplete");
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
    o.struct_size = 8;
    refused(&o, 2, PSC_ERR_INVALID, "psc_coll_opts_default");
    setenv("P2PSCOPE_LIBNCCL", "/nonexistent/libnccl.so.2", 1);
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
    refused(&o, 2, PSC_ERR_UNSUPPORTED, "NCCL");
}

/* nccl-tests' other options as the library takes them: each out of range refused in one line, before anything runs. */
static void test_more_refusals(void **state)
{
    static const struct { const char *want; int field, value; } cases[] = {
        {"run_cycles out of range (accepted 1 to 1000)", 0, 0},
        {"run_cycles out of range", 0, 1001},
        {"parallel_init, stream_null or per_iter out of range", 1, 2},
        {"register_mode or cta_policy out of range", 2, 3},
        {"register_mode or cta_policy out of range", 3, -2},
        {"unalign out of range (accepted 0 to 1024 elements)", 4, 1025},
        {"per_iter_skip out of range (accepted 0 to iters - 1, with per_iter)", 5, 1},
        {"device_impl or device_ctas out of range", 6, 129},
        {"device implementation (-D > 0) requires enabling symmetric memory registration (-R 2)", 7, 1},
    };
    psc_coll_opts_t o;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int *f[] = {&o.run_cycles, &o.parallel_init, &o.register_mode, &o.cta_policy, &o.unalign, &o.per_iter_skip,
                    &o.device_ctas, &o.device_impl};

        opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
        *f[cases[i].field] = cases[i].value;
        refused(&o, 2, PSC_ERR_INVALID, cases[i].want);
    }
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
    o.per_iter = 1;
    o.per_iter_skip = 5; /* iters 5 */
    refused(&o, 2, PSC_ERR_INVALID, "per_iter_skip out of range");
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
    o.per_iter = 1;
    o.iters = 1000000;
    o.dtype = -1;
    o.op = -1; /* 50 rows x 2 x 1e6 */
    refused(&o, 2, PSC_ERR_INVALID, "per_iter keeps each iteration's time: 50 rows x 2 x 1000000 iterations");
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
    o.graph_launches = 2;
    o.stream_null = 1;
    refused(&o, 2, PSC_ERR_INVALID, "CUDA graphs with stream_null or per_iter");
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
    o.impls = PSC_COLL_IMPL_P2PSCOPE;
    o.unalign = 1;
    refused(&o, 2, PSC_ERR_INVALID, "unalign or stream_null with p2pscope's own collectives alone");
}

/*
 * The report's grown part: -N's cycles (every size again, after one warm-up), each half's host time to issue,
 * -I's iterations (one time each, their figures from them), each row's end time, the memory figures.
 */
static void test_more_report(void **state)
{
    static const int two[] = {0, 1};
    psc_coll_opts_t o;
    psc_coll_report_t *r;
    long long t0 = (long long)time(NULL);

    (void)state;
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 1024); /* 64, 256, 1024 */
    o.run_cycles = 2;
    o.per_iter = 1;
    o.per_iter_skip = 1;
    r = run_ok(two, 2, &o);
    assert_int_equal(r->nrows, 6);
    assert_int_equal(r->run_cycles, 2);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(r->rows[i].bytes, 64u << (2 * (i % 3)));
        assert_true(r->ext[i].end_time >= t0 && r->ext[i].end_time <= r->end_time);
        for (int k = 0; k < 2; k++) {
            const psc_coll_iter_t *it = &r->ext[i].r[k].iter;
            double lo = it->times_us[1], hi = it->times_us[1];

            assert_true(r->ext[i].r[k].cpu_time_us > 0);
            assert_int_equal(it->n, 5);
            assert_int_equal(it->skipped, 1);
            for (int j = 2; j < it->n; j++) {
                lo = it->times_us[j] < lo ? it->times_us[j] : lo;
                hi = it->times_us[j] > hi ? it->times_us[j] : hi;
            }
            assert_true(it->min_us == lo && it->max_us == hi);
        }
    }
    assert_int_equal(r->mem_known, 1);
    assert_true(r->mem_user_bytes >= 2 * 1024); /* send and recv of max_bytes */
    psc_coll_report_free(r);
}

/* A collective that never completes: the run gives up at the timeout, naming it, with the communicators aborted. */
static void test_timeout(void **state)
{
    static const int devs[] = {0, 1};
    psc_coll_opts_t o;
    psc_coll_report_t *r = NULL;
    double t0 = now_s();

    (void)state;
    setenv("FAKE_NCCL_HANG", "1", 1);
    opts(&o, PSC_COLL_REDUCE_SCATTER, 4096, 4096);
    o.timeout_s = 0.3;
    assert_int_equal(psc_coll_run(g_ctx, devs, 2, &o, &r), PSC_ERR_TIMEOUT);
    assert_null(r);
    assert_true(now_s() - t0 < 5.0);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "reduce_scatter of 4096 B (float, sum)"));
    assert_non_null(strstr(psc_context_last_error(g_ctx), "not done after 0.3 s"));
    assert_non_null(strstr(psc_context_last_error(g_ctx), "aborted"));
}

/* The caller's peer access and current context as they were: NCCL's own peer access is put back. */
static void test_leaves_caller_state(void **state)
{
    static const int devs[] = {0, 1, 2};
    int (*peer)(int, int);
    void *(*current)(void);
    psc_coll_opts_t o;
    psc_coll_report_t *r;
    void *h = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
    int was = -1;

    (void)state;
    assert_non_null(h);
    *(void **)&peer = dlsym(h, "fake_cuda_peer");
    *(void **)&current = dlsym(h, "fake_cuda_current");
    dlclose(h);
    assert_int_equal(psc_peer_enable(g_ctx, 0, 1, &was), PSC_OK);
    assert_int_equal(peer(0, 1), 1);
    assert_int_equal(peer(1, 0), 0);
    {
        void *before = current();

        opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
        r = run_ok(devs, 3, &o);
        psc_coll_report_free(r);
        assert_ptr_equal(current(), before);
    }
    assert_int_equal(peer(0, 1), 1);
    assert_int_equal(peer(1, 0), 0);
    assert_int_equal(peer(0, 2), 0);
    assert_int_equal(psc_peer_disable(g_ctx, 0, 1, &was), PSC_OK);
}

/* opts.procs: one process's run still calls the processes' meeting points, in the same order in every row. */
static int g_bcasts, g_reduces, g_gathers;

static int p_bcast(void *buf, size_t len, void *arg)
{
    (void)buf, (void)len, (void)arg;
    g_bcasts++;
    return 0;
}

static int p_reduce(double *v, int n, int how, void *arg)
{
    (void)v, (void)n, (void)how, (void)arg;
    g_reduces++;
    return 0;
}

static int p_gather(const void *mine, void *all, size_t len, void *arg)
{
    (void)arg;
    memcpy(all, mine, len);
    g_gathers++;
    return 0;
}

static int p_fail(double *v, int n, int how, void *arg)
{
    (void)v, (void)n, (void)how, (void)arg;
    return 1;
}

/* nccl-tests' meetings after an eager iteration: -z 1 one per aggregated operation, -z 3 one, -z 0 and 2 none. */
static void test_meetings_per_iteration(void **state)
{
    psc_coll_opts_t o;

    (void)state;
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 64);
    o.agg_iters = 3;
    for (int z = 0; z < 4; z++) {
        o.blocking = z;
        assert_int_equal(psc__coll_meetings(&o), z == 1 ? 3 : z == 3 ? 1 : 0);
    }
    o.agg_iters = 1;
    o.blocking = 1;
    assert_int_equal(psc__coll_meetings(&o), 1);
}

static void test_procs_calls(void **state)
{
    static const int devs[] = {1};
    psc_coll_opts_t o;
    psc_coll_procs_t p = {2, 0, NULL, p_bcast, p_reduce, p_gather};
    psc_coll_report_t *r;

    (void)state;
    /* the fake NCCL counts this process's one rank as 1 of 2: a pretend peer never comes, so use 1 of 1 */
    p.nprocs = 1;
    opts(&o, PSC_COLL_ALL_REDUCE, 64, 256);
    o.procs = &p;
    r = run_ok(devs, 1, &o);
    assert_int_equal(r->nprocs, 1);
    assert_int_equal(r->ranks[0].device, 1);
    assert_int_equal(g_bcasts + g_gathers, 0); /* one process: nothing to meet */
    psc_coll_report_free(r);
    p.nprocs = 2;
    p.proc = 1;
    p.allreduce = p_fail;
    refused(&o, 1, PSC_ERR_IO, "the caller's allreduce failed");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_every_collective, each),
        cmocka_unit_test_setup(test_every_type_and_op, each),
        cmocka_unit_test_setup(test_roots, each),
        cmocka_unit_test_setup(test_wrong_elements_in_timed_slots, each),
        cmocka_unit_test_setup(test_per_operation_times, each),
        cmocka_unit_test_setup(test_compute_load_rows, each),
        cmocka_unit_test(test_compute_load_within),
        cmocka_unit_test_setup(test_refusals, each),
        cmocka_unit_test_setup(test_more_refusals, each),
        cmocka_unit_test_setup(test_more_report, each),
        cmocka_unit_test_setup(test_timeout, each),
        cmocka_unit_test_setup(test_leaves_caller_state, each),
        cmocka_unit_test(test_meetings_per_iteration),
        cmocka_unit_test_setup(test_procs_calls, each),
    };

    return cmocka_run_group_tests(tests, setup, psc_test_close_ctx);
}
