/*
 * p2pscope's own all-reduce in psc_coll_run's table, on the fake driver (its
 * all-reduce kernel one thread per rank) and the fake NCCL: its row after
 * NCCL's at each size, only where it applies; its timed slots checked (a
 * wrong element made by FAKE_AR_CORRUPT counted in its rows alone); slots
 * 16-byte aligned whatever the size; alone without NCCL; the refusals; the
 * caller's peer access and the fake's threads left as they were.
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

#include <cmocka.h>

#include "fake_context.h"
#include "p2pscope/bench.h"
#include "p2pscope_private.h"

static int setup(void **state)
{
    return psc_test_open_fake_gpus(state, "3");
}

static int each(void **state)
{
    (void)state;
    setenv("P2PSCOPE_LIBNCCL", FAKE_LIBNCCL, 1);
    unsetenv("FAKE_NCCL_CORRUPT");
    unsetenv("FAKE_AR_CORRUPT");
    unsetenv("FAKE_CUDA_GRAPHS");
    return 0;
}

static void opts(psc_coll_opts_t *o, uint64_t min, uint64_t max)
{
    psc_coll_opts_default(o);
    o->min_bytes = min;
    o->max_bytes = max;
    o->step_factor = 4;
    o->iters = 5;
    o->per_op = 0;
    o->tune_own = 0; /* the group's own ways: test_tuned_ways tunes it */
}

static psc_coll_report_t *run_ok(int n, const psc_coll_opts_t *o)
{
    static const int devs[] = {0, 1, 2};
    psc_coll_report_t *r = NULL;

    if (psc_coll_run(g_ctx, devs, n, o, &r) != PSC_OK)
        fail_msg("psc_coll_run: %s", psc_context_last_error(g_ctx));
    assert_non_null(r);
    return r;
}

static int live_jobs(void)
{
    int (*live)(void);
    void *h = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);

    assert_non_null(h);
    *(void **)&live = dlsym(h, "fake_cuda_jobs_live");
    dlclose(h);
    assert_non_null(live);
    return live();
}

/* The default: at each size NCCL's row then p2pscope's, the same size and count, both right, their averages apart. */
static void test_rows_side_by_side(void **state)
{
    psc_coll_opts_t o;
    psc_coll_report_t *r;
    double sum[2] = {0, 0};

    (void)state;
    opts(&o, 64, 4096);
    o.per_op = 1;
    assert_int_equal(o.impls, PSC_COLL_IMPL_ALL);
    r = run_ok(3, &o);
    assert_int_equal(r->nrows, 2 * 4); /* 64, 256, 1024, 4096 B, by each */
    assert_int_equal(r->failed_rows, 0);
    for (int i = 0; i < r->nrows; i++) {
        const psc_coll_row_t *w = &r->rows[i];

        assert_int_equal(w->impl, i % 2 ? PSC_COLL_IMPL_P2PSCOPE : PSC_COLL_IMPL_NCCL);
        assert_int_equal(w->bytes, 64ull << (2 * (i / 2)));
        assert_int_equal(w->count, w->bytes / 4);
        assert_int_equal(w->dtype, PSC_DT_FLOAT32);
        assert_int_equal(w->op, PSC_OP_SUM);
        for (int k = 0; k < 2; k++) {
            assert_int_equal(w->r[k].ran, 1);
            assert_int_equal(w->r[k].wrong, 0);
            assert_true(w->r[k].time_us > 0);
            assert_int_equal(w->r[k].iter_us.n, 5);
            sum[i % 2] += w->r[k].busbw_gbs;
        }
        /* out of place every slot the timed loop wrote is checked: min(iters, slots) */
        assert_int_equal(w->r[0].timed_checked, 4096 / w->bytes < 5 ? 4096 / w->bytes : 5);
    }
    assert_true(fabs(r->avg_busbw_gbs - sum[0] / 8) <= 1e-9 * (1 + sum[0]));
    assert_true(fabs(r->own_avg_busbw_gbs - sum[1] / 8) <= 1e-9 * (1 + sum[1]));
    assert_string_equal(psc_coll_impl_name(PSC_COLL_IMPL_NCCL), "nccl");
    assert_string_equal(psc_coll_impl_name(PSC_COLL_IMPL_P2PSCOPE), "p2pscope");
    assert_null(psc_coll_impl_name(PSC_COLL_IMPL_ALL));
    psc_coll_report_free(r);
    assert_int_equal(live_jobs(), 0);
}

/* Every type and op: p2pscope's rows for sum over float, half and bfloat16 only; none for other collectives. */
static void test_only_where_it_applies(void **state)
{
    psc_coll_opts_t o;
    psc_coll_report_t *r;
    int own = 0;

    (void)state;
    opts(&o, 64, 64);
    o.dtype = -1;
    o.op = -1;
    r = run_ok(2, &o);
    assert_int_equal(r->nrows, PSC_DT_N * PSC_OP_N + 3);
    assert_int_equal(r->failed_rows, 0);
    for (int i = 0; i < r->nrows; i++) {
        const psc_coll_row_t *w = &r->rows[i];

        if (w->impl != PSC_COLL_IMPL_P2PSCOPE)
            continue;
        own++;
        assert_int_equal(w->op, PSC_OP_SUM);
        assert_true(w->dtype == PSC_DT_FLOAT32 || w->dtype == PSC_DT_FLOAT16 || w->dtype == PSC_DT_BFLOAT16);
        assert_true(i > 0 && r->rows[i - 1].impl == PSC_COLL_IMPL_NCCL && r->rows[i - 1].dtype == w->dtype &&
                    r->rows[i - 1].op == PSC_OP_SUM);
        assert_int_equal(w->r[0].wrong, 0);
        assert_int_equal(w->r[1].wrong, 0);
    }
    assert_int_equal(own, 3);
    psc_coll_report_free(r);
    for (int c = PSC_COLL_ALL_GATHER; c < PSC_COLL_N; c++) {
        if (c == PSC_COLL_REDUCE_SCATTER || c == PSC_COLL_ALL_GATHER) /* p2pscope's too: test_*_rows below */
            continue;
        opts(&o, 256, 256);
        o.coll = c;
        r = run_ok(2, &o);
        assert_int_equal(r->nrows, 1);
        assert_int_equal(r->rows[0].impl, PSC_COLL_IMPL_NCCL);
        assert_true(r->own_avg_busbw_gbs == 0);
        psc_coll_report_free(r);
    }
}

/*
 * coll (reduce_scatter or all_gather): p2pscope's row after NCCL's at each size, the op theirs (op: sum; none for
 * the all-gather), the same count (a part's), both right in and out of place; a wrong element in every output of
 * p2pscope's kernel counted in its rows alone.
 */
static void part_rows(int coll, int op)
{
    psc_coll_opts_t o;
    psc_coll_report_t *r;

    for (int corrupt = 0; corrupt < 2; corrupt++) {
        if (corrupt)
            setenv("FAKE_AR_CORRUPT", "1", 1);
        opts(&o, 96, 6144);
        o.coll = coll;
        r = run_ok(3, &o);
        assert_int_equal(r->nrows, 2 * 4); /* 96, 384, 1536, 6144 B, by each */
        for (int i = 0; i < r->nrows; i++) {
            const psc_coll_row_t *w = &r->rows[i];

            assert_int_equal(w->impl, i % 2 ? PSC_COLL_IMPL_P2PSCOPE : PSC_COLL_IMPL_NCCL);
            assert_int_equal(w->op, op);
            assert_int_equal(w->count, (96ull << (2 * (i / 2))) / 3 / 4);
            for (int k = 0; k < 2; k++) {
                assert_int_equal(w->r[k].ran, 1);
                assert_true(corrupt && i % 2 ? w->r[k].wrong > 0 : w->r[k].wrong == 0);
            }
        }
        assert_true(r->own_avg_busbw_gbs > 0);
        psc_coll_report_free(r);
    }
    unsetenv("FAKE_AR_CORRUPT");
}

static void test_reduce_scatter_rows(void **state)
{
    (void)state;
    part_rows(PSC_COLL_REDUCE_SCATTER, PSC_OP_SUM);
}

/* all_gather's rows as reduce_scatter's; a type it does not move (int8) has NCCL's row alone. */
static void test_all_gather_rows(void **state)
{
    psc_coll_opts_t o;
    psc_coll_report_t *r;

    (void)state;
    part_rows(PSC_COLL_ALL_GATHER, -1);
    opts(&o, 96, 96);
    o.coll = PSC_COLL_ALL_GATHER;
    o.dtype = PSC_DT_INT8;
    r = run_ok(2, &o);
    assert_int_equal(r->nrows, 1);
    assert_int_equal(r->rows[0].impl, PSC_COLL_IMPL_NCCL);
    psc_coll_report_free(r);
}

/*
 * A wrong element in every output of p2pscope's kernel: counted in its rows
 * (every timed slot out of place; in place too where each slot is used once),
 * NCCL's rows right; and the other way round.
 */
static void test_wrong_elements_counted(void **state)
{
    psc_coll_opts_t o;
    psc_coll_report_t *r;

    (void)state;
    setenv("FAKE_AR_CORRUPT", "3", 1);
    opts(&o, 64, 1024);
    o.step_factor = 16;
    o.iters = 8; /* 64 B: 16 slots, 8 used once each, in place too; 1024 B: 1 slot, reused */
    r = run_ok(2, &o);
    assert_int_equal(r->nrows, 4);
    for (int i = 0; i < 4; i += 2) {
        assert_int_equal(r->rows[i].r[0].wrong, 0);
        assert_int_equal(r->rows[i].r[1].wrong, 0);
    }
    assert_int_equal(r->rows[1].r[0].timed_checked, 8);
    assert_int_equal(r->rows[1].r[0].wrong, 2 * 8); /* 2 ranks x 8 slots; no extra run after a wrong element */
    assert_int_equal(r->rows[1].r[1].timed_checked, 8);
    assert_int_equal(r->rows[1].r[1].wrong, 2 * 8);
    assert_int_equal(r->rows[3].r[0].timed_checked, 1);
    assert_int_equal(r->rows[3].r[0].wrong, 2);
    assert_int_equal(r->rows[3].r[1].timed_checked, 0); /* a sum of a sum: only the extra run is checked */
    assert_int_equal(r->rows[3].r[1].wrong, 2);
    assert_int_equal(r->failed_rows, 4);
    assert_non_null(strstr(r->first_wrong, "rank 0, out of place, slot 0, element 3:"));
    psc_coll_report_free(r);
    unsetenv("FAKE_AR_CORRUPT");
    setenv("FAKE_NCCL_CORRUPT", "3", 1);
    opts(&o, 64, 64);
    r = run_ok(2, &o);
    assert_int_equal(r->nrows, 2);
    assert_true(r->rows[0].r[0].wrong > 0);
    assert_int_equal(r->rows[1].r[0].wrong, 0);
    assert_int_equal(r->rows[1].r[1].wrong, 0);
    assert_int_equal(r->failed_rows, 2);
    psc_coll_report_free(r);
}

/* Sizes that are no multiple of 16 B (nor slots 16 B apart in NCCL's layout): p2pscope's rows run, all right. */
static void test_unaligned_sizes(void **state)
{
    psc_coll_opts_t o;
    psc_coll_report_t *r;

    (void)state;
    opts(&o, 4, 100);
    o.step_factor = 1;
    o.step_bytes = 24; /* 4, 28, 52, 76, 100 */
    o.impls = PSC_COLL_IMPL_P2PSCOPE;
    o.dtype = PSC_DT_FLOAT16;
    r = run_ok(3, &o);
    assert_int_equal(r->nrows, 5);
    assert_int_equal(r->failed_rows, 0);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(r->rows[i].impl, PSC_COLL_IMPL_P2PSCOPE);
        assert_int_equal(r->rows[i].bytes, 4 + 24 * i); /* the size column: the bytes summed, not the slot */
        assert_true(r->rows[i].r[0].timed_checked >= 1);
        assert_int_equal(r->rows[i].r[0].wrong, 0);
    }
    psc_coll_report_free(r);
}

/* p2pscope's alone: no NCCL needed; every type asked means its three; the in-place and blocking loops. */
static void test_alone(void **state)
{
    psc_coll_opts_t o;
    psc_coll_report_t *r;

    (void)state;
    setenv("P2PSCOPE_LIBNCCL", "/nonexistent/libnccl.so.2", 1);
    opts(&o, 256, 256);
    o.impls = PSC_COLL_IMPL_P2PSCOPE;
    o.dtype = -1;
    o.op = -1;
    o.blocking = 1;
    r = run_ok(2, &o);
    assert_int_equal(r->nccl_version, 0);
    assert_int_equal(r->nrows, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(r->rows[i].impl, PSC_COLL_IMPL_P2PSCOPE);
        assert_int_equal(r->rows[i].op, PSC_OP_SUM);
        assert_int_equal(r->rows[i].r[1].wrong, 0);
    }
    assert_true(r->avg_busbw_gbs > 0 && r->avg_busbw_gbs == r->own_avg_busbw_gbs);
    psc_coll_report_free(r);
    /* one GPU: a group of one */
    opts(&o, 64, 64);
    o.impls = PSC_COLL_IMPL_P2PSCOPE;
    r = run_ok(1, &o);
    assert_int_equal(r->nrows, 1);
    assert_int_equal(r->rows[0].r[0].wrong, 0);
    psc_coll_report_free(r);
}

/* The tuning's medians made so: NCCL 3x faster than the kernels up to 256 B, 3x slower above (every collective's:
   way 1, 5 or 9 is NCCL's). */
static double skew_small_to_nccl(int way, uint64_t bytes, double us, void *arg)
{
    (void)arg;
    (void)us;
    return way % 4 == 1 ? (bytes <= 256 ? 1.0 : 9.0) : 3.0;
}

/*
 * opts.tune_own (the default): the group tuned before its rows; each row says which way its halves ran, NCCL for
 * the sizes the tuning sent to it, p2pscope's one-shot kernel for the rest, and those rows still checked right.
 * Without a usable NCCL: not tuned, the reason kept, the kernel's way.
 */
static void test_tuned_ways(void **state)
{
    psc_test_hooks_t h;
    psc_coll_opts_t o;
    psc_coll_report_t *r;

    (void)state;
    psc_test_hooks_default(&h);
    h.ar_tune_skew = skew_small_to_nccl;
    assert_int_equal(psc_test_hooks_set(g_ctx, &h), PSC_OK);
    opts(&o, 64, 1024);
    o.tune_own = 1;
    r = run_ok(2, &o);
    psc_test_hooks_set(g_ctx, NULL);
    assert_int_equal(r->own_tuned, 1);
    assert_string_equal(r->own_tune_note, "");
    assert_int_equal(r->nrows, 6); /* 64 B, 256 B and 1024 B: NCCL's row, then ours */
    for (int i = 0; i < r->nrows; i++)
        for (int k = 0; k < 2; k++) {
            int own = r->rows[i].impl == PSC_COLL_IMPL_P2PSCOPE;

            assert_int_equal(r->rows[i].r[k].wrong, 0);
            assert_int_equal(r->ways[i].r[k], !own ? PSC_AR_WAY_NONE
                                              : r->rows[i].bytes <= 256 ? PSC_AR_WAY_NCCL : PSC_AR_WAY_ONESHOT);
        }
    psc_coll_report_free(r);
    setenv("P2PSCOPE_LIBNCCL", "/nonexistent/libnccl.so.2", 1);
    o.impls = PSC_COLL_IMPL_P2PSCOPE;
    r = run_ok(2, &o);
    assert_int_equal(r->own_tuned, 0);
    assert_non_null(strstr(r->own_tune_note, "not tuned: "));
    assert_int_equal(r->ways[0].r[0], PSC_AR_WAY_ONESHOT);
    assert_int_equal(r->ways[1].r[1], PSC_AR_WAY_ONESHOT);
    psc_coll_report_free(r);
    /* the reduce-scatter and the all-gather tuned alike, by their parts (64 B rows: 32 B parts to NCCL, 1024 B
       rows: 512 B parts to the kernel); the broadcast has no rows of ours: nothing tuned, nothing said */
    setenv("P2PSCOPE_LIBNCCL", FAKE_LIBNCCL, 1);
    assert_int_equal(psc_test_hooks_set(g_ctx, &h), PSC_OK);
    for (int c = 0; c < 3; c++) {
        o.coll = c == 0 ? PSC_COLL_REDUCE_SCATTER : c == 1 ? PSC_COLL_ALL_GATHER : PSC_COLL_BROADCAST;
        o.impls = c == 2 ? PSC_COLL_IMPL_NCCL : PSC_COLL_IMPL_P2PSCOPE;
        r = run_ok(2, &o);
        assert_int_equal(r->own_tuned, c < 2);
        assert_string_equal(r->own_tune_note, "");
        assert_int_equal(r->nrows, 3);
        for (int i = 0; c < 2 && i < r->nrows; i++) {
            assert_int_equal(r->rows[i].r[0].wrong, 0);
            assert_int_equal(r->ways[i].r[0], r->rows[i].bytes <= 256 ? PSC_AR_WAY_NCCL : PSC_AR_WAY_ONESHOT);
        }
        psc_coll_report_free(r);
    }
    psc_test_hooks_set(g_ctx, NULL);
}

static void refused(const psc_coll_opts_t *o, int ndev, psc_status_t want, const char *phrase)
{
    static const int devs[] = {0, 1, 2};
    psc_coll_report_t *r = (psc_coll_report_t *)(uintptr_t)1;

    assert_int_equal(psc_coll_run(g_ctx, devs, ndev, o, &r), want);
    assert_ptr_equal(r, (psc_coll_report_t *)(uintptr_t)1);
    if (!strstr(psc_context_last_error(g_ctx), phrase))
        fail_msg("'%s' lacks '%s'", psc_context_last_error(g_ctx), phrase);
}

static void test_refusals(void **state)
{
    psc_coll_opts_t o;

    (void)state;
    opts(&o, 64, 64);
    o.impls = 0;
    refused(&o, 2, PSC_ERR_INVALID, "impls out of range (accepted PSC_COLL_IMPL_NCCL");
    o.impls = 4;
    refused(&o, 2, PSC_ERR_INVALID, "impls out of range");
    opts(&o, 64, 64);
    o.impls = PSC_COLL_IMPL_P2PSCOPE;
    o.coll = PSC_COLL_BROADCAST;
    refused(&o, 2, PSC_ERR_INVALID, "do not do broadcast, op sum, type float: accepted all_reduce or reduce_scatter with op sum");
    opts(&o, 64, 64);
    o.impls = PSC_COLL_IMPL_P2PSCOPE;
    o.op = PSC_OP_MAX;
    refused(&o, 2, PSC_ERR_INVALID, "do not do all_reduce, op max");
    opts(&o, 64, 64);
    o.impls = PSC_COLL_IMPL_P2PSCOPE;
    o.dtype = PSC_DT_FLOAT64;
    refused(&o, 2, PSC_ERR_INVALID, "do not do all_reduce, op sum, type double");
    /* the fake driver has no stream capture: the graph's failure names p2pscope's row */
    opts(&o, 64, 64);
    o.impls = PSC_COLL_IMPL_P2PSCOPE;
    o.graph_launches = 2;
    refused(&o, 2, PSC_ERR_DRIVER, "all_reduce of 64 B (float, sum, p2pscope's all-reduce), the timed loop (CUDA graph)");
    assert_int_equal(live_jobs(), 0);
}

/*
 * -G on GPUs of one process: one graph per GPU captured from one thread, NCCL's rows and ours, every row
 * right, each graph replayed -G times on each GPU and every graph freed. (The driver refuses an
 * instantiation while a capture of the thread is open: every capture must end first.)
 */
static void test_graphs_on_several_gpus(void **state)
{
    psc_coll_opts_t o;
    psc_coll_report_t *r;
    int replays = psc_test_fake_count("fake_cuda_graph_replays"), live = psc_test_fake_count("fake_cuda_graphs_live");
    int nodes = psc_test_fake_count("fake_cuda_graph_nodes");

    (void)state;
    setenv("FAKE_CUDA_GRAPHS", "1", 1);
    opts(&o, 64, 1024);
    o.graph_launches = 3;
    r = run_ok(3, &o);
    assert_int_equal(r->nrows, 2 * 3);
    assert_int_equal(r->failed_rows, 0);
    for (int i = 0; i < r->nrows; i++)
        for (int k = 0; k < 2; k++) {
            assert_int_equal(r->rows[i].r[k].ran, 1);
            assert_int_equal(r->rows[i].r[k].wrong, 0);
        }
    assert_int_equal(psc_test_fake_count("fake_cuda_graph_replays") - replays, 6 * 2 * 3 * 3);
    /* every own call in its GPU's graph: 3 sizes, in and out of place, 5 calls, 3 GPUs (NCCL's fake launches none) */
    assert_int_equal(psc_test_fake_count("fake_cuda_graph_nodes") - nodes, 3 * 2 * 5 * 3);
    assert_int_equal(psc_test_fake_count("fake_cuda_graphs_live"), live);
    psc_coll_report_free(r);
    /* a launch that fails inside the capture: the run fails, every capture is still ended, and the next runs */
    {
        void (*fail_captured)(int);
        void *h = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);

        assert_non_null(h);
        *(void **)&fail_captured = dlsym(h, "fake_cuda_fail_captured_launches");
        dlclose(h);
        assert_non_null(fail_captured);
        o.impls = PSC_COLL_IMPL_P2PSCOPE;
        fail_captured(1);
        refused(&o, 3, PSC_ERR_DRIVER, "capturing the timed operations in a CUDA graph");
        fail_captured(0);
        r = run_ok(3, &o);
        assert_int_equal(r->failed_rows, 0);
        psc_coll_report_free(r);
    }
    assert_int_equal(psc_test_fake_count("fake_cuda_graphs_live"), live);
    assert_int_equal(live_jobs(), 0);
}

/* The caller's peer access as it was, after a run that went well and one that failed part way. */
static void test_leaves_caller_state(void **state)
{
    int (*peer)(int, int);
    void *h = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
    psc_coll_opts_t o;
    psc_coll_report_t *r;

    (void)state;
    assert_non_null(h);
    *(void **)&peer = dlsym(h, "fake_cuda_peer");
    dlclose(h);
    opts(&o, 64, 64);
    o.impls = PSC_COLL_IMPL_P2PSCOPE;
    r = run_ok(3, &o);
    psc_coll_report_free(r);
    o.graph_launches = 2;
    refused(&o, 3, PSC_ERR_DRIVER, "CUDA graph");
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            if (a != b)
                assert_int_equal(peer(a, b), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_rows_side_by_side, each),
        cmocka_unit_test_setup(test_only_where_it_applies, each),
        cmocka_unit_test_setup(test_reduce_scatter_rows, each),
        cmocka_unit_test_setup(test_all_gather_rows, each),
        cmocka_unit_test_setup(test_wrong_elements_counted, each),
        cmocka_unit_test_setup(test_unaligned_sizes, each),
        cmocka_unit_test_setup(test_alone, each),
        cmocka_unit_test_setup(test_tuned_ways, each),
        cmocka_unit_test_setup(test_refusals, each),
        cmocka_unit_test_setup(test_graphs_on_several_gpus, each),
        cmocka_unit_test_setup(test_leaves_caller_state, each),
    };

    return cmocka_run_group_tests(tests, setup, psc_test_close_ctx);
}
