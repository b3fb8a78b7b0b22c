/*
 * psc_coll_run on the machine's GPUs and its real NCCL: every collective,
 * every type and reduction, in place and out of place, each timed
 * operation's slot checked; a CUDA-graph replay; a size with a tail (not a
 * whole number of NCCL's chunks); no operation costing a scheduler tick on
 * one CPU; the compute load (timed again while every SM computes); the caller's context left current. Every
 * GPU in one process (one rank on a machine with one). NCCL missing on a GPU
 * machine fails (skipped only without a driver or a GPU).
 */
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../unit/one_cpu.h"

#include "gpu_common.h"
#include "p2pscope_private.h"

static void opts(psc_coll_opts_t *o, int coll, uint64_t min, uint64_t max)
{
    psc_coll_opts_default(o);
    o->coll = coll;
    o->min_bytes = min;
    o->max_bytes = max;
    o->step_factor = 8;
    o->iters = 10;
    o->timeout_s = 120;
    o->impls = PSC_COLL_IMPL_NCCL; /* NCCL's rows alone: p2pscope's in test_gpu_coll_own.c */
}

static psc_coll_report_t *run(const psc_coll_opts_t *o)
{
    psc_coll_report_t *r = NULL;

    if (psc_coll_run(g_ctx, NULL, 0, o, &r) != PSC_OK)
        fail_msg("psc_coll_run: %s", psc_context_last_error(g_ctx));
    return r;
}

/* No wrong element anywhere, and every half ran with a time. */
static void clean(const psc_coll_report_t *r, const char *what)
{
    for (int i = 0; i < r->nrows; i++)
        for (int k = 0; k < 2; k++)
            if (!r->rows[i].r[k].ran || !(r->rows[i].r[k].time_us > 0) || r->rows[i].r[k].wrong > 0)
                fail_msg("%s: row %d (%llu B %s %s) %s: ran %d time %.2f us wrong %lld (%s)", what, i,
                         (unsigned long long)r->rows[i].bytes, psc_dtype_name(r->rows[i].dtype),
                         r->rows[i].op >= 0 ? psc_redop_name(r->rows[i].op) : "none", k ? "in place" : "out of place",
                         r->rows[i].r[k].ran, r->rows[i].r[k].time_us, r->rows[i].r[k].wrong, r->first_wrong);
    assert_int_equal(r->failed_rows, 0);
}

static void test_every_collective(void **state)
{
    (void)state;
    for (int c = 0; c < PSC_COLL_N; c++) {
        psc_coll_opts_t o;
        psc_coll_report_t *r;

        opts(&o, c, 64, 4 << 20);
        r = run(&o);
        assert_int_equal(r->nranks, psc_device_count(g_ctx));
        assert_int_equal(r->nrows, 6); /* 64 B .. 2 MiB by 8 */
        clean(r, psc_coll_name(c));
        for (int i = 0; i < r->nrows; i++)
            assert_true(r->rows[i].r[0].timed_checked >= 1);
        printf("%-15s %d rank%s: 2 MiB out of place %.2f us, busbw %.1f GB/s\n", psc_coll_name(c), r->nranks,
               r->nranks == 1 ? "" : "s", r->rows[5].r[0].time_us, r->rows[5].r[0].busbw_gbs);
        psc_coll_report_free(r);
    }
}

/* Every type and reduction of all_reduce and reduce_scatter, at a size with a tail past NCCL's chunks. */
static void test_every_type_and_op(void **state)
{
    static const int colls[] = {PSC_COLL_ALL_REDUCE, PSC_COLL_REDUCE_SCATTER};

    (void)state;
    for (int k = 0; k < 2; k++) {
        int c = colls[k];
        psc_coll_opts_t o;
        psc_coll_report_t *r;

        opts(&o, c, 1 << 16, (1 << 16) + 384);
        o.step_factor = 1;
        o.step_bytes = 384;
        o.dtype = -1;
        o.op = -1;
        r = run(&o);
        assert_int_equal(r->nrows, 2 * PSC_DT_N * PSC_OP_N);
        clean(r, psc_coll_name(c));
        psc_coll_report_free(r);
    }
}

/* -G: the timed operations replayed from a CUDA graph, checked the same way; small sizes, where a graph helps. */
static void test_graph_replay(void **state)
{
    psc_coll_opts_t o;
    psc_coll_report_t *r;

    (void)state;
    opts(&o, PSC_COLL_ALL_REDUCE, 8, 32 << 10);
    o.graph_launches = 20;
    r = run(&o);
    clean(r, "all_reduce -G 20");
    assert_int_equal(r->graph_launches, 20);
    for (int i = 0; i < r->nrows; i++)
        printf("-G 20: %6llu B  %.2f us per operation (eager p50 %.2f us)\n", (unsigned long long)r->rows[i].bytes,
               r->rows[i].r[0].time_us, r->rows[i].r[0].iter_us.p50);
    psc_coll_report_free(r);
}

/*
 * Pinned to one CPU, as mpirun binds a rank, with -T set (the default): no
 * small all-reduce may cost a scheduler tick (NCCL 2.28's non-blocking
 * communicators started a thread per operation that a wait which never
 * yields left waiting 4 ms). Eager and from a graph.
 */
/*
 * --compute-load on real kernels: each half timed again under the compute, the compute kernel near the 200 us
 * it was calibrated for, kernels within every loop (it lasts ten of them) and the compute outlasting it; the
 * collectives cost the compute something, never make it faster beyond noise. Eager and replayed.
 */
static void test_compute_load(void **state)
{
    (void)state;
    for (int g = 0; g < 2; g++) {
        psc_coll_opts_t o;
        psc_coll_report_t *r;

        opts(&o, PSC_COLL_ALL_REDUCE, 1 << 20, 64 << 20);
        o.impls = PSC_COLL_IMPL_ALL;
        o.compute_load = 1;
        o.graph_launches = g ? 5 : 0;
        r = run(&o);
        clean(r, g ? "compute load, graphs" : "compute load");
        assert_non_null(r->loads);
        for (int i = 0; i < r->nrows; i++)
            for (int k = 0; k < 2; k++) {
                const psc_coll_load_half_t *h = &r->loads[i].r[k];

                printf("%s %9llu B %-8s %s: %9.2f us alone, %9.2f us loaded; compute %7.1f us alone, %7.1f us "
                       "loaded (%+.1f %%)%s\n", g ? "G5" : "eager", (unsigned long long)r->rows[i].bytes,
                       psc_coll_impl_name(r->rows[i].impl), k ? "ip " : "oop", r->rows[i].r[k].time_us, h->time_us,
                       h->compute_alone_us, h->compute_us, h->slowdown * 100, h->covered ? "" : " partly");
                assert_int_equal(h->ran, 1);
                assert_true(h->time_us > 0);
                assert_true(h->compute_alone_us > 50 && h->compute_alone_us < 2000);
                assert_true(isfinite(h->compute_us) && isfinite(h->slowdown));
                assert_true(h->slowdown > -0.05);
                assert_int_equal(h->covered, 1);
            }
        psc_coll_report_free(r);
    }
}

static void test_one_cpu_no_tick(void **state)
{
    cpu_set_t was;

    (void)state;
    psc_test_pin_one_cpu(&was);
    for (int g = 0; g < 2; g++) {
        psc_coll_opts_t o;
        psc_coll_report_t *r;

        opts(&o, PSC_COLL_ALL_REDUCE, 8, 64 << 10);
        o.iters = 50;
        o.per_op = 0;
        o.timeout_s = 300;
        o.graph_launches = g ? 10 : 0;
        r = run(&o);
        clean(r, g ? "all_reduce on one CPU, -G 10" : "all_reduce on one CPU");
        for (int i = 0; i < r->nrows; i++) {
            printf("one CPU%s: %6llu B  %.2f / %.2f us per operation\n", g ? ", -G 10" : "",
                   (unsigned long long)r->rows[i].bytes, r->rows[i].r[0].time_us, r->rows[i].r[1].time_us);
            for (int k = 0; k < 2; k++)
                if (r->rows[i].r[k].time_us >= 500)
                    fail_msg("%llu B: %.0f us per operation on one CPU: a scheduler tick",
                             (unsigned long long)r->rows[i].bytes, r->rows[i].r[k].time_us);
        }
        psc_coll_report_free(r);
    }
    assert_int_equal(sched_setaffinity(0, sizeof(was), &was), 0);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_collective),
    cmocka_unit_test(test_every_type_and_op),
    cmocka_unit_test(test_graph_replay),
    cmocka_unit_test(test_compute_load),
    cmocka_unit_test(test_one_cpu_no_tick),
};

PSC_GPU_TEST_MAIN(tests)
