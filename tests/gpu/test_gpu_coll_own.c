/*
 * p2pscope's own all-reduce in psc_coll_run's table on the machine's GPUs
 * (every GPU in one process, up to 8; one GPU: a group of one), beside
 * NCCL's: every type it does (float, half, bfloat16), in place and out of
 * place, each timed operation's slot checked exactly; sizes that are no
 * multiple of 16 B; -G replaying its calls from a CUDA graph; -z; a -T that
 * a healthy run never reaches. NCCL missing on a GPU machine fails (skipped
 * only without a driver or a GPU).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gpu_common.h"
#include "p2pscope_private.h"

static void opts(psc_coll_opts_t *o, uint64_t min, uint64_t max)
{
    psc_coll_opts_default(o);
    o->min_bytes = min;
    o->max_bytes = max;
    o->step_factor = 8;
    o->iters = 10;
    o->timeout_s = 60;
    o->tune_own = 0; /* its own kernels and copy engines: test_tuned_ways tunes the group */
}

static psc_coll_report_t *run(const psc_coll_opts_t *o)
{
    int devs[8], n = psc_device_count(g_ctx) < 8 ? psc_device_count(g_ctx) : 8;
    psc_coll_report_t *r = NULL;

    for (int i = 0; i < n; i++)
        devs[i] = i;
    if (psc_coll_run(g_ctx, devs, n, o, &r) != PSC_OK)
        fail_msg("psc_coll_run: %s", psc_context_last_error(g_ctx));
    return r;
}

/* Every half ran, checked, nothing wrong; the count of p2pscope's rows returned. */
static int clean(const psc_coll_report_t *r, const char *what)
{
    int own = 0;

    for (int i = 0; i < r->nrows; i++) {
        own += r->rows[i].impl == PSC_COLL_IMPL_P2PSCOPE;
        for (int k = 0; k < 2; k++)
            if (!r->rows[i].r[k].ran || !(r->rows[i].r[k].time_us > 0) || r->rows[i].r[k].wrong != 0)
                fail_msg("%s: row %d (%llu B %s, %s) %s: ran %d time %.2f us wrong %lld (%s)", what, i,
                         (unsigned long long)r->rows[i].bytes, psc_dtype_name(r->rows[i].dtype),
                         psc_coll_impl_name(r->rows[i].impl), k ? "in place" : "out of place", r->rows[i].r[k].ran,
                         r->rows[i].r[k].time_us, r->rows[i].r[k].wrong, r->first_wrong);
    }
    assert_int_equal(r->failed_rows, 0);
    return own;
}

/* Every type of all_reduce (sum): NCCL's row then p2pscope's at each size, both exact, its timed slots checked. */
static void test_every_type(void **state)
{
    psc_coll_opts_t o;
    psc_coll_report_t *r;

    (void)state;
    opts(&o, 64, 4 << 20);
    o.dtype = -1;
    r = run(&o);
    assert_int_equal(r->nrows, (PSC_DT_N + 3) * 6); /* 64 B .. 2 MiB by 8 */
    assert_int_equal(clean(r, "every type"), 3 * 6);
    for (int i = 0; i < r->nrows; i++) {
        const psc_coll_row_t *w = &r->rows[i];

        if (w->impl != PSC_COLL_IMPL_P2PSCOPE)
            continue;
        assert_int_equal(r->rows[i - 1].impl, PSC_COLL_IMPL_NCCL);
        assert_int_equal(r->rows[i - 1].bytes, w->bytes);
        assert_true(w->r[0].timed_checked >= 1);
        if (w->bytes == 2 << 20)
            printf("%-8s 2 MiB, %d rank%s: nccl %.2f us %.1f GB/s busbw, p2pscope %.2f us %.1f GB/s\n",
                   psc_dtype_name(w->dtype), r->nranks, r->nranks == 1 ? "" : "s", r->rows[i - 1].r[0].time_us,
                   r->rows[i - 1].r[0].busbw_gbs, w->r[0].time_us, w->r[0].busbw_gbs);
    }
    psc_coll_report_free(r);
}

/* Sizes with tails (no multiple of 16 B); in place, where each operation has a slot of its own, checked too. */
static void test_tails_in_place(void **state)
{
    psc_coll_opts_t o;
    psc_coll_report_t *r;

    (void)state;
    opts(&o, 2, 2 + 6 * 1000);
    o.step_factor = 1;
    o.step_bytes = 1000;
    o.impls = PSC_COLL_IMPL_P2PSCOPE;
    o.dtype = PSC_DT_FLOAT16;
    o.iters = 3; /* each row uses 3 of its slots once */
    r = run(&o);
    assert_int_equal(r->nrows, 7);
    assert_int_equal(clean(r, "tails"), 7);
    for (int i = 0; i < r->nrows; i++) {
        uint64_t slot = (r->rows[i].bytes + 15) / 16 * 16, room = (o.max_bytes + 15) / 16 * 16;

        /* in place, its slots 16 B apart: checked where the 3 operations have a slot each */
        assert_int_equal(r->rows[i].r[1].timed_checked, room / slot >= 3 ? 3 : 0);
    }
    psc_coll_report_free(r);
}

/* -G: its calls captured and replayed, checked the same way; -z 1 in an eager run. */
static void test_graph_and_blocking(void **state)
{
    psc_coll_opts_t o;
    psc_coll_report_t *r;

    (void)state;
    opts(&o, 8, 32 << 10);
    o.graph_launches = 20;
    o.dtype = PSC_DT_BFLOAT16;
    r = run(&o);
    assert_true(clean(r, "-G 20") > 0);
    for (int i = 0; i < r->nrows; i++)
        printf("-G 20 %-8s %6llu B  %.2f us per operation (eager p50 %.2f us)\n",
               psc_coll_impl_name(r->rows[i].impl), (unsigned long long)r->rows[i].bytes, r->rows[i].r[0].time_us,
               r->rows[i].r[0].iter_us.p50);
    psc_coll_report_free(r);
    opts(&o, 1 << 20, 1 << 20);
    o.blocking = 1;
    o.impls = PSC_COLL_IMPL_P2PSCOPE;
    r = run(&o);
    assert_int_equal(clean(r, "-z 1"), 1);
    psc_coll_report_free(r);
}

/*
 * The default of coll: the group tuned beside NCCL first (NCCL is there on a GPU machine), then every half of
 * p2pscope's rows ran one of the four ways, checked right, eager and replayed; the ways printed for the log.
 */
static void test_tuned_ways(void **state)
{
    psc_coll_opts_t o;
    psc_coll_report_t *r;

    (void)state;
    for (int graphs = 0; graphs <= 20; graphs += 20) {
        opts(&o, 8, 64 << 20);
        o.tune_own = 1;
        o.graph_launches = graphs;
        r = run(&o);
        clean(r, graphs ? "tuned, -G 20" : "tuned, eager");
        if (!r->own_tuned)
            fail_msg("not tuned: %s", r->own_tune_note);
        for (int i = 0; i < r->nrows; i++) {
            if (r->rows[i].impl != PSC_COLL_IMPL_P2PSCOPE)
                continue;
            for (int k = 0; k < 2; k++)
                if (!psc_allreduce_way_name(r->ways[i].r[k]))
                    fail_msg("row %d half %d: no way recorded (%d)", i, k, r->ways[i].r[k]);
            printf("tuned -G %2d %10llu B  %-12s %-12s %.2f us\n", graphs, (unsigned long long)r->rows[i].bytes,
                   psc_allreduce_way_name(r->ways[i].r[0]), psc_allreduce_way_name(r->ways[i].r[1]),
                   r->rows[i].r[0].time_us);
        }
        psc_coll_report_free(r);
    }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_type),
    cmocka_unit_test(test_tails_in_place),
    cmocka_unit_test(test_graph_and_blocking),
    cmocka_unit_test(test_tuned_ways),
};

PSC_GPU_TEST_MAIN(tests)
