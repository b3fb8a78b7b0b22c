/*
 * psc_allreduce_tune on the fake driver and the fake libnccl: one process
 * with three fake GPUs, and groups of forked processes (one fake GPU each).
 * Which way a call went is read from its result: FAKE_NCCL_CORRUPT=0 makes
 * NCCL's element 0 wrong, FAKE_AR_CORRUPT=1 the kernel's element 1, every
 * other element must be exact. Pinned: without NCCL tune fails saying why and
 * sums still work; the table's choice follows its times; each call goes the
 * way its class chose (types of 2 bytes classed by their bytes); a test's
 * skew of one process's times moves every process's decision alike; the
 * refusals; destroy (and a failed tune) leave no communicator; the caller's
 * current context as it was.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "allreduce/allreduce_tune.h"
#include "coll/coll_values.h"
#include "fake_context.h"
#include "internal.h"
#include "proc_group.h"

#define N 3
#define MAXB 4096
#define ROWS 9 /* 16 B .. 4 KiB */
#define SLOW 1e6

static const int devs[N] = {0, 1, 2};
static CUstream streams[N];
static CUdeviceptr sendb[N], recvb[N];

static size_t esize(int dt) { return dt == PSC_AR_FLOAT32 ? 4 : 2; }

/* The fake libnccl's live communicators in this process (0 before it is loaded). */
static int live_comms(void)
{
    void *h = dlopen(FAKE_LIBNCCL, RTLD_NOW | RTLD_NOLOAD);
    int (*f)(void) = NULL;
    int n;

    if (!h)
        return 0;
    *(void **)&f = dlsym(h, "fake_nccl_live_comms");
    n = f ? f() : -1;
    dlclose(h);
    return n;
}

/* The fake driver's current context of this thread. */
static void *current_ctx(void)
{
    void *(*f)(void) = NULL;

    *(void **)&f = psc_test_fake_sym("fake_cuda_current");
    return f ? f() : (void *)(uintptr_t)1;
}

/* NCCL's calls slower by SLOW us up to `split` bytes, the kernel's above it. */
static double skew_split(int nccl, uint64_t bytes, double us, void *arg)
{
    uint64_t split = *(const uint64_t *)arg;

    return (nccl ? bytes <= split : bytes > split) ? us + SLOW : us;
}

/* Rank r's inputs (coll_values.h's exact ones for a sum over n ranks) at p. */
static void fill_one(unsigned char *p, int dt, size_t count, int n, int r, uint32_t seed)
{
    for (size_t j = 0; j < count; j++) {
        uint64_t b = psc__coll_to_bits(dt, (double)psc__coll_input(PSC_OP_SUM, dt, n, r, j, seed));

        memcpy(p + j * esize(dt), &b, esize(dt));
    }
}

/* Which elements of out differ from the exact sum: 'n' only element 0, 'o' only element 1, 'x' anything else. */
static char judge(const unsigned char *out, int dt, size_t count, int n, uint32_t seed)
{
    int wrong0 = 0, wrong1 = 0, other = 0;

    for (size_t j = 0; j < count; j++) {
        uint64_t want = psc__coll_to_bits(dt, psc__coll_reduced(PSC_OP_SUM, dt, n, j, seed)), got = 0;

        memcpy(&got, out + j * esize(dt), esize(dt));
        if (got == want)
            continue;
        if (j == 0)
            wrong0 = 1;
        else if (j == 1)
            wrong1 = 1;
        else
            other = 1;
    }
    return other || wrong0 == wrong1 ? 'x' : wrong0 ? 'n' : 'o';
}

static void corrupt_both(int on)
{
    if (on) {
        setenv("FAKE_NCCL_CORRUPT", "0", 1);
        setenv("FAKE_AR_CORRUPT", "1", 1);
    } else {
        unsetenv("FAKE_NCCL_CORRUPT");
        unsetenv("FAKE_AR_CORRUPT");
    }
}

/* One call of the 3-GPU group, out of place: which way it went, the same on every rank ('x' where not). */
static char who(psc_allreduce_t *ar, int dt, size_t count, uint32_t seed)
{
    void *r[N];
    const void *s[N];
    char w = 0;

    for (int i = 0; i < N; i++) {
        fill_one((unsigned char *)(uintptr_t)sendb[i], dt, count, N, i, seed);
        memset((void *)(uintptr_t)recvb[i], 0xA5, MAXB);
        r[i] = (void *)(uintptr_t)recvb[i];
        s[i] = (const void *)(uintptr_t)sendb[i];
    }
    corrupt_both(1);
    if (psc_allreduce_sum(ar, r, s, count, dt, streams, 5000) != PSC_OK)
        fail_msg("psc_allreduce_sum: %s", psc_context_last_error(g_ctx));
    for (int i = 0; i < N; i++)
        assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(streams[i]), CUDA_SUCCESS);
    corrupt_both(0);
    for (int i = 0; i < N; i++) {
        char j = judge((const unsigned char *)(uintptr_t)recvb[i], dt, count, N, seed);

        if (w && j != w)
            return 'x';
        w = j;
    }
    return w;
}

static int setup(void **state)
{
    setenv("P2PSCOPE_LIBNCCL", FAKE_LIBNCCL, 1);
    corrupt_both(0);
    if (psc_test_open_fake_gpus(state, "3") != 0)
        return -1;
    for (int i = 0; i < N; i++)
        if (psc__gpu_use(g_ctx, i) != PSC_OK || g_ctx->cu.p_cuStreamCreate(&streams[i], CU_STREAM_NON_BLOCKING) ||
            g_ctx->cu.p_cuMemAlloc(&sendb[i], MAXB) || g_ctx->cu.p_cuMemAlloc(&recvb[i], MAXB))
            return -1;
    return 0;
}

static psc_allreduce_t *make(void)
{
    psc_allreduce_t *ar = NULL;

    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, MAXB, &ar), PSC_OK);
    return ar;
}

static void test_size_classes(void **state)
{
    (void)state;
    assert_int_equal(psc__ar_tune_class(1), 0);
    assert_int_equal(psc__ar_tune_class(16), 0);
    assert_int_equal(psc__ar_tune_class(17), 1);
    assert_int_equal(psc__ar_tune_class(32), 1);
    assert_int_equal(psc__ar_tune_class(33), 2);
    assert_int_equal(psc__ar_tune_class(4096), 8);
    assert_int_equal(psc__ar_tune_class(1ull << 40), 36);
    assert_int_equal(PSC_AR_TUNE_ROWS, 37);
}

static void test_without_nccl_the_kernel_stays(void **state)
{
    psc_allreduce_t *ar = make();
    psc_ar_tuning_t tb;
    int live = live_comms();

    (void)state;
    setenv("P2PSCOPE_LIBNCCL", "/nonexistent/libnccl.so.2", 1);
    assert_int_equal(psc_allreduce_tune(ar, NULL, streams), PSC_ERR_UNSUPPORTED);
    setenv("P2PSCOPE_LIBNCCL", FAKE_LIBNCCL, 1);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "/nonexistent/libnccl.so.2 could not be loaded"));
    assert_non_null(strstr(psc_context_last_error(g_ctx), "keeps its own kernel"));
    assert_int_equal(psc_allreduce_tuning(ar, &tb), PSC_ERR_INVALID);
    for (int k = 0; k < ROWS; k++)
        assert_int_equal(who(ar, PSC_AR_FLOAT32, (16u << k) / 4, (uint32_t)k), 'o');
    assert_int_equal(live_comms(), live);
    psc_allreduce_destroy(ar);
}

/* The skew by collective: the all-reduce's kernels faster everywhere; the reduce-scatter's NCCL faster up to 128 B
   parts, the all-gather's above. */
static double skew_by_collective(int way, uint64_t bytes, double us, void *arg)
{
    const int coll = way / 4, nccl = way % 4 == PSC__AR_TUNE_NCCL;

    (void)arg;
    if (coll == 0)
        return nccl ? us + SLOW : us;
    if (coll == 1)
        return (nccl ? bytes > 128 : bytes <= 128) ? us + SLOW : us;
    return (nccl ? bytes <= 128 : bytes > 128) ? us + SLOW : us;
}

/* One reduce-scatter (rs) or all-gather of count floats per part on the 3-GPU group, out of place, every output
   checked exact: the way it went (PSC_AR_WAY_*). */
static int part_call(psc_allreduce_t *ar, int rs, size_t count, uint32_t seed)
{
    void *r[N];
    const void *s[N];

    for (int i = 0; i < N; i++) {
        fill_one((unsigned char *)(uintptr_t)sendb[i], PSC_AR_FLOAT32, rs ? N * count : count, N, i, seed);
        r[i] = (void *)(uintptr_t)recvb[i];
        s[i] = (const void *)(uintptr_t)sendb[i];
    }
    if ((rs ? psc_allreduce_reduce_scatter : psc_allreduce_all_gather)(ar, r, s, count, PSC_AR_FLOAT32, streams,
                                                                       5000) != PSC_OK)
        fail_msg("%s: %s", rs ? "reduce-scatter" : "all-gather", psc_context_last_error(g_ctx));
    for (int i = 0; i < N; i++)
        assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(streams[i]), CUDA_SUCCESS);
    for (int i = 0; i < N; i++)
        for (size_t j = 0; j < (rs ? count : N * count); j++) {
            /* the reduce-scatter: rank i's part of the sums; the all-gather: rank j / count's input at j % count */
            double want = rs ? psc__coll_reduced(PSC_OP_SUM, PSC_AR_FLOAT32, N, i * count + j, seed)
                             : (float)psc__coll_input(PSC_OP_SUM, PSC_AR_FLOAT32, N, (int)(j / count), j % count, seed);
            float got, w = (float)want;

            memcpy(&got, (const unsigned char *)(uintptr_t)recvb[i] + 4 * j, 4);
            if (memcmp(&got, &w, 4))
                fail_msg("%s of %zu: rank %d element %zu: %g, expected %g", rs ? "reduce-scatter" : "all-gather",
                         count, i, j, got, w);
        }
    return psc_allreduce_last_way(ar);
}

/*
 * The reduce-scatter's and the all-gather's classes (parts up to max_bytes / 3) timed beside ncclReduceScatter and
 * ncclAllGather; each call goes the way its class chose, exact; a group told to time the all-gather alone
 * (psc__ar_tune_kinds) leaves the others' rows empty and their calls to the kernels.
 */
static void test_parts_follow_their_tables(void **state)
{
    psc_allreduce_t *ar = make();
    psc_ar_tuning_t tb;

    (void)state;
    assert_int_equal(psc__ar_tune_skew(ar, skew_by_collective, NULL), PSC_OK);
    if (psc_allreduce_tune(ar, NULL, streams) != PSC_OK)
        fail_msg("psc_allreduce_tune: %s", psc_context_last_error(g_ctx));
    assert_int_equal(psc_allreduce_tuning(ar, &tb), PSC_OK);
    assert_int_equal(tb.part_rows, 8); /* 16 B .. 2 KiB: parts up to 4096 / 3 B */
    for (int k = 0; k < tb.part_rows; k++) {
        assert_int_equal(tb.rs[k].bytes, 16ull << k);
        assert_int_equal(tb.ag[k].bytes, 16ull << k);
        assert_int_equal(tb.rs[k].nccl, tb.rs[k].bytes <= 128);
        assert_int_equal(tb.ag[k].nccl, tb.ag[k].bytes > 128);
        assert_int_equal(tb.row[k].nccl, 0);
    }
    assert_int_equal(tb.rs[tb.part_rows].bytes, 0);
    assert_int_equal(part_call(ar, 1, 32, 1), PSC_AR_WAY_NCCL);    /* 128 B parts */
    assert_int_equal(part_call(ar, 1, 33, 2), PSC_AR_WAY_ONESHOT); /* 132 B: class 256 */
    assert_int_equal(part_call(ar, 0, 32, 3), PSC_AR_WAY_ONESHOT);
    assert_int_equal(part_call(ar, 0, 300, 4), PSC_AR_WAY_NCCL);
    assert_int_equal(part_call(ar, 0, 1, 5), PSC_AR_WAY_ONESHOT);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);

    ar = make();
    assert_int_equal(psc__ar_tune_skew(ar, skew_by_collective, NULL), PSC_OK);
    assert_int_equal(psc__ar_tune_kinds(ar, 1u << 2), PSC_OK);
    assert_int_equal(psc_allreduce_tune(ar, NULL, streams), PSC_OK);
    assert_int_equal(psc_allreduce_tuning(ar, &tb), PSC_OK);
    assert_int_equal(tb.row[0].bytes, 0);
    assert_int_equal(tb.rs[0].bytes, 0);
    assert_int_equal(tb.ag[7].bytes, 2048);
    assert_int_equal(part_call(ar, 1, 32, 6), PSC_AR_WAY_ONESHOT); /* not timed: the kernel */
    assert_int_equal(part_call(ar, 0, 300, 7), PSC_AR_WAY_NCCL);
    assert_int_equal(who(ar, PSC_AR_FLOAT32, 512, 8), 'o');
    psc_allreduce_destroy(ar);
}

/*
 * Where the driver captures graphs, the timing is in graph replays: one graph per GPU captured from one
 * thread (every capture ended before any graph is instantiated, as the driver requires), each freed after.
 */
static void test_timed_in_graphs(void **state)
{
    uint64_t split = 256;
    psc_allreduce_t *ar = make();
    psc_ar_tuning_t tb;
    int replays = psc_test_fake_count("fake_cuda_graph_replays"), live = psc_test_fake_count("fake_cuda_graphs_live");

    (void)state;
    setenv("FAKE_CUDA_GRAPHS", "1", 1);
    assert_int_equal(psc__ar_tune_skew(ar, skew_split, &split), PSC_OK);
    if (psc_allreduce_tune(ar, NULL, streams) != PSC_OK)
        fail_msg("psc_allreduce_tune: %s", psc_context_last_error(g_ctx));
    unsetenv("FAKE_CUDA_GRAPHS");
    assert_int_equal(psc_allreduce_tuning(ar, &tb), PSC_OK);
    assert_int_equal(tb.graphs, 1);
    assert_true(psc_test_fake_count("fake_cuda_graph_replays") - replays >= ROWS * 2 * N);
    assert_int_equal(psc_test_fake_count("fake_cuda_graphs_live"), live);
    for (int k = 0; k < ROWS; k++)
        assert_int_equal(tb.row[k].nccl, tb.row[k].bytes > split);
    assert_int_equal(who(ar, PSC_AR_FLOAT32, 256, 1), 'n'); /* 1 KiB */
    assert_int_equal(who(ar, PSC_AR_FLOAT32, 4, 2), 'o'); /* 16 B */
    psc_allreduce_destroy(ar);
}

/* The skew makes NCCL the faster above 256 B: those calls go to NCCL, the others to the kernel, every type. */
static void test_calls_follow_the_table(void **state)
{
    uint64_t split = 256;
    psc_allreduce_t *ar = make();
    psc_ar_tuning_t tb;
    void *before;

    (void)state;
    assert_int_equal(psc__ar_tune_skew(ar, skew_split, &split), PSC_OK);
    assert_int_equal(g_ctx->cu.p_cuCtxSetCurrent(NULL), CUDA_SUCCESS);
    before = current_ctx();
    if (psc_allreduce_tune(ar, NULL, streams) != PSC_OK)
        fail_msg("psc_allreduce_tune: %s", psc_context_last_error(g_ctx));
    assert_ptr_equal(current_ctx(), before);
    assert_int_equal(psc_allreduce_tuning(ar, &tb), PSC_OK);
    assert_int_equal(tb.rows, ROWS);
    assert_int_equal(tb.nccl_version, 22807);
    assert_int_equal(tb.graphs, 0); /* the fake driver cannot capture */
    assert_true(tb.reps >= 3);
    for (int k = 0; k < ROWS; k++) {
        const psc_ar_tune_row_t *r = &tb.row[k];
        int nccl = r->bytes > split;
        size_t hi = r->bytes / 4, lo = k ? (r->bytes / 2 + 4) / 4 : 2;

        assert_int_equal(r->bytes, 16ull << k);
        assert_int_equal(r->nccl, nccl);
        assert_true((nccl ? r->own_us : r->nccl_us) >= SLOW);
        assert_true((nccl ? r->nccl_us : r->own_us) > 0 && (nccl ? r->nccl_us : r->own_us) < SLOW);
        assert_int_equal(who(ar, PSC_AR_FLOAT32, hi, (uint32_t)k), nccl ? 'n' : 'o');
        assert_int_equal(who(ar, PSC_AR_FLOAT32, lo, (uint32_t)k + 50), nccl ? 'n' : 'o');
    }
    /* two-byte types by their bytes: 1024 B and 258 B (class 512) to NCCL, 128 B and 256 B to the kernel */
    assert_int_equal(who(ar, PSC_AR_FLOAT16, 512, 7), 'n');
    assert_int_equal(who(ar, PSC_AR_BFLOAT16, 129, 8), 'n');
    assert_int_equal(who(ar, PSC_AR_FLOAT16, 64, 9), 'o');
    assert_int_equal(who(ar, PSC_AR_BFLOAT16, 128, 10), 'o');
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* Unskewed: whatever the fake's times, each row chose the faster and its calls go there. */
static void test_choice_follows_the_times(void **state)
{
    psc_allreduce_t *ar = make();
    psc_ar_tuning_t tb;
    int live = live_comms();

    (void)state;
    if (psc_allreduce_tune(ar, NULL, streams) != PSC_OK)
        fail_msg("psc_allreduce_tune: %s", psc_context_last_error(g_ctx));
    assert_int_equal(live_comms(), live + N);
    assert_int_equal(psc_allreduce_tuning(ar, &tb), PSC_OK);
    assert_int_equal(tb.rows, ROWS);
    for (int k = 0; k < ROWS; k++) {
        const psc_ar_tune_row_t *r = &tb.row[k];

        assert_true(r->own_us > 0 && r->nccl_us > 0);
        assert_int_equal(r->nccl, r->nccl_us < r->own_us);
        assert_int_equal(who(ar, PSC_AR_FLOAT32, r->bytes / 4, (uint32_t)k), r->nccl ? 'n' : 'o');
    }
    psc_allreduce_destroy(ar);
    assert_int_equal(live_comms(), live); /* destroy took the communicators */
}

/* The kernels slow at 8 MiB, the copy engines at 4 MiB, NCCL always: each way fastest where the test says. */
static double skew_ways(int way, uint64_t bytes, double us, void *arg)
{
    (void)arg;
    if (way == PSC__AR_TUNE_NCCL || (way == PSC__AR_TUNE_KERNELS && bytes == (8u << 20)) ||
        (way == PSC__AR_TUNE_COPY && bytes == (4u << 20)))
        return us + SLOW;
    /* the all-gather's (ways 8..10): NCCL slow, its kernel slow at 4 MiB parts, so its copy engines win there */
    if (way == 8 + PSC__AR_TUNE_NCCL || (way == 8 + PSC__AR_TUNE_KERNELS && bytes == (4u << 20)))
        return us + SLOW;
    /* the reduce-scatter's (ways 4..6): NCCL slow, its copy engines slow at 4 MiB parts, so its kernel wins there
       (against the size rule, which would take the copy engines) */
    if (way == 4 + PSC__AR_TUNE_NCCL || (way == 4 + PSC__AR_TUNE_COPY && bytes == (4u << 20)))
        return us + SLOW;
    return us;
}

/*
 * Two ranks made for 8 MiB calls: the copy engines timed beside the kernels and NCCL from 4 MiB on, the faster of
 * p2pscope's two ways kept per class (the kernels at 4 MiB, the copy engines at 8 MiB here), never below 4 MiB;
 * calls of each class go that way, exact.
 */
/* One all-gather of count floats a rank, in place in the 2-GPU group's buf: it went `way`, every element exact. */
static void ag_goes(psc_allreduce_t *ar, void *const *buf, size_t count, int way, uint32_t seed)
{
    const void *part[2];

    for (int i = 0; i < 2; i++) {
        part[i] = (const unsigned char *)buf[i] + (size_t)i * count * 4;
        fill_one((unsigned char *)(uintptr_t)part[i], PSC_AR_FLOAT32, count, 2, i, seed);
    }
    if (psc_allreduce_all_gather(ar, buf, part, count, PSC_AR_FLOAT32, streams, 5000) != PSC_OK)
        fail_msg("psc_allreduce_all_gather: %s", psc_context_last_error(g_ctx));
    for (int i = 0; i < 2; i++)
        assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(streams[i]), CUDA_SUCCESS);
    if (psc_allreduce_last_way(ar) != way)
        fail_msg("all-gather of %zu a rank went way %d, expected %d", count, psc_allreduce_last_way(ar), way);
    for (int i = 0; i < 2; i++)
        for (size_t j = 0; j < 2 * count; j += 997) {
            float want = (float)psc__coll_input(PSC_OP_SUM, PSC_AR_FLOAT32, 2, (int)(j / count), j % count, seed), got;

            memcpy(&got, (const unsigned char *)buf[i] + 4 * j, 4);
            if (memcmp(&got, &want, 4))
                fail_msg("all-gather of %zu, rank %d element %zu: %g, expected %g", count, i, j, got, want);
        }
}

/* One reduce-scatter of parts of count floats, in place in the 2-GPU group's buf: it went `way`, each rank's part
   exact. */
static void rs_goes(psc_allreduce_t *ar, void *const *buf, size_t count, int way, uint32_t seed)
{
    void *part[2];

    for (int i = 0; i < 2; i++) {
        fill_one(buf[i], PSC_AR_FLOAT32, 2 * count, 2, i, seed);
        part[i] = (unsigned char *)buf[i] + (size_t)i * count * 4;
    }
    if (psc_allreduce_reduce_scatter(ar, part, (const void *const *)buf, count, PSC_AR_FLOAT32, streams, 5000) !=
        PSC_OK)
        fail_msg("psc_allreduce_reduce_scatter: %s", psc_context_last_error(g_ctx));
    for (int i = 0; i < 2; i++)
        assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(streams[i]), CUDA_SUCCESS);
    if (psc_allreduce_last_way(ar) != way)
        fail_msg("reduce-scatter of parts of %zu went way %d, expected %d", count, psc_allreduce_last_way(ar), way);
    for (int i = 0; i < 2; i++)
        for (size_t j = 0; j < count; j += 991) {
            float want = (float)psc__coll_reduced(PSC_OP_SUM, PSC_AR_FLOAT32, 2, (uint64_t)i * count + j, seed), got;

            memcpy(&got, (const unsigned char *)part[i] + 4 * j, 4);
            if (memcmp(&got, &want, 4))
                fail_msg("reduce-scatter of %zu, rank %d element %zu: %g, expected %g", count, i, j, got, want);
        }
}

/* The 2-GPU group's all-gathers: 4 MiB parts by the copy engines as the table chose (class 4 MiB's copy_engines),
   1 MiB parts by the kernel. */
static void ag_by_the_table(psc_allreduce_t *ar, void *const *buf, const psc_ar_tuning_t *tb)
{
    assert_int_equal(tb->part_rows, 19); /* 16 B .. 4 MiB */
    assert_int_equal(tb->ag[18].copy_engines, 1);
    assert_int_equal(tb->ag[17].copy_engines, 0); /* below 4 MiB: never timed */
    ag_goes(ar, buf, (4u << 20) / 4, PSC_AR_WAY_COPY_ENGINES, 70);
    ag_goes(ar, buf, (1u << 20) / 4, PSC_AR_WAY_ONESHOT, 71);
}

/* The 2-GPU group's reduce-scatters: 4 MiB parts by the kernel as the table chose (class 4 MiB's copy engines
   timed, and slower), 2 MiB parts by the kernel by size. */
static void rs_by_the_table(psc_allreduce_t *ar, void *const *buf, const psc_ar_tuning_t *tb)
{
    assert_int_equal(tb->rs[18].copy_engines, 0);
    assert_true(tb->rs[18].own_us > 0 && tb->rs[18].own_us < SLOW && !tb->rs[18].nccl);
    rs_goes(ar, buf, (4u << 20) / 4, PSC_AR_WAY_ONESHOT, 90);
    rs_goes(ar, buf, (2u << 20) / 4, PSC_AR_WAY_ONESHOT, 91);
}

/* The fake driver's copies run as they are queued (the copy engines' path waits on them). */
static void copies_run(void)
{
    void (*run_copies)(int) = NULL;

    *(void **)&run_copies = psc_test_fake_sym("fake_cuda_run_copies");
    assert_non_null(run_copies);
    run_copies(1);
}

/* A 2-GPU group made for 8 MiB calls, over 8 MiB buffers each (big, also as buf), tuned with a skew of its times
   (kinds: psc__ar_tune_kinds' mask, 0 every collective); its table in *tb. */
static psc_allreduce_t *tuned_pair(CUdeviceptr *big, void **buf, unsigned kinds, psc__ar_tune_skew_fn skew,
                                   psc_ar_tuning_t *tb)
{
    const size_t most = 8u << 20;
    psc_allreduce_t *ar = NULL;

    for (int i = 0; i < 2; i++) {
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        assert_int_equal(g_ctx->cu.p_cuMemAlloc(&big[i], most), CUDA_SUCCESS);
        buf[i] = (void *)(uintptr_t)big[i];
    }
    assert_int_equal(psc_allreduce_create(g_ctx, devs, 2, most, &ar), PSC_OK);
    if (kinds)
        assert_int_equal(psc__ar_tune_kinds(ar, kinds), PSC_OK);
    assert_int_equal(psc__ar_tune_skew(ar, skew, NULL), PSC_OK);
    if (psc_allreduce_tune(ar, NULL, streams) != PSC_OK)
        fail_msg("psc_allreduce_tune: %s", psc_context_last_error(g_ctx));
    assert_int_equal(psc_allreduce_tuning(ar, tb), PSC_OK);
    return ar;
}

static void pair_free(psc_allreduce_t *ar, const CUdeviceptr *big)
{
    psc_allreduce_destroy(ar);
    for (int i = 0; i < 2; i++)
        g_ctx->cu.p_cuMemFree(big[i]);
}

static void test_copy_engines_in_the_table(void **state)
{
    CUdeviceptr big[2];
    void *buf[2];
    psc_ar_tuning_t tb;
    psc_allreduce_t *ar;

    (void)state;
    ar = tuned_pair(big, buf, 0, skew_ways, &tb);
    for (int k = 0; k < tb.rows; k++) {
        const psc_ar_tune_row_t *r = &tb.row[k];

        assert_int_equal(r->copy_engines, r->bytes == (8u << 20));
        assert_int_equal(r->nccl, 0);
        assert_true(r->own_us > 0 && r->own_us < SLOW);
    }
    for (int c = 0; c < 2; c++) { /* 8 MiB by the copy engines, 4 MiB by the kernels */
        size_t count = (c ? 4u << 20 : 8u << 20) / 4;

        for (int i = 0; i < 2; i++)
            fill_one(buf[i], PSC_AR_FLOAT32, count, 2, i, (uint32_t)c);
        copies_run();
        if (psc_allreduce_sum(ar, buf, (const void *const *)buf, count, PSC_AR_FLOAT32, streams, 5000) != PSC_OK)
            fail_msg("psc_allreduce_sum: %s", psc_context_last_error(g_ctx));
        for (int i = 0; i < 2; i++)
            assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(streams[i]), CUDA_SUCCESS);
        if (c == 0)
            assert_true(psc_test_fake_stream_writes() > 0);
        else
            assert_int_equal(psc_test_fake_stream_writes(), 0);
        for (int i = 0; i < 2; i++)
            for (size_t j = 0; j < count; j++) {
                float want = (float)psc__coll_reduced(PSC_OP_SUM, PSC_AR_FLOAT32, 2, j, (uint32_t)c), got;

                memcpy(&got, (const unsigned char *)buf[i] + 4 * j, 4);
                if (memcmp(&got, &want, 4))
                    fail_msg("%zu elements, rank %d element %zu: %g, expected %g", count, i, j, got, want);
            }
    }
    ag_by_the_table(ar, buf, &tb);
    rs_by_the_table(ar, buf, &tb);
    pair_free(ar, big);
}

/* The part collectives' NCCL slow at every size, their kernels at 4 MiB parts: both tables take the copy engines
   for that class, which holds parts above 2 MiB, and a 3 MiB part goes by them though the size rule alone would
   keep the kernel. */
static double skew_parts_to_copy(int way, uint64_t bytes, double us, void *arg)
{
    (void)arg;
    if (way == 4 + PSC__AR_TUNE_NCCL || way == 8 + PSC__AR_TUNE_NCCL)
        return us + SLOW;
    if ((way == 4 + PSC__AR_TUNE_KERNELS || way == 8 + PSC__AR_TUNE_KERNELS) && bytes == (4u << 20))
        return us + SLOW;
    return us;
}

static void test_parts_tuned_to_copy_below_the_rule(void **state)
{
    CUdeviceptr big[2];
    void *buf[2];
    psc_ar_tuning_t tb;
    psc_allreduce_t *ar;

    (void)state;
    ar = tuned_pair(big, buf, 6, skew_parts_to_copy, &tb); /* the reduce-scatter and the all-gather */
    assert_int_equal(tb.rs[18].copy_engines, 1);
    assert_int_equal(tb.ag[18].copy_engines, 1);
    copies_run();
    rs_goes(ar, buf, (3u << 20) / 4, PSC_AR_WAY_COPY_ENGINES, 110);
    ag_goes(ar, buf, (3u << 20) / 4, PSC_AR_WAY_COPY_ENGINES, 111);
    rs_goes(ar, buf, (2u << 20) / 4, PSC_AR_WAY_ONESHOT, 112); /* class 2 MiB: the kernel */
    pair_free(ar, big);
}

/* An NCCL whose calls never complete, captured into graphs (the fake's calls run, and here block, where they are
   captured): the tuning's timeout ends the capture too, and says so; nothing hangs. */
static void test_capture_under_the_timeout(void **state)
{
    psc_allreduce_t *ar = make();
    psc_ar_tuning_t tb;

    (void)state;
    setenv("FAKE_CUDA_GRAPHS", "1", 1);
    setenv("FAKE_NCCL_HANG", "1", 1);
    assert_int_equal(psc__ar_tune_timeout(ar, 200), PSC_OK);
    assert_int_equal(psc_allreduce_tune(ar, NULL, streams), PSC_ERR_TIMEOUT);
    unsetenv("FAKE_NCCL_HANG");
    unsetenv("FAKE_CUDA_GRAPHS");
    if (!strstr(psc_context_last_error(g_ctx), "ncclAllReduce of 16 B: a run not done after 0.2 s"))
        fail_msg("%s", psc_context_last_error(g_ctx));
    assert_int_equal(psc_allreduce_tuning(ar, &tb), PSC_ERR_INVALID); /* no table: the calls keep the kernels */
    psc_allreduce_destroy(ar);
}

static void test_refusals(void **state)
{
    psc_allreduce_t *ar = make();
    psc_test_proc_t pa = {NULL, 1, 0};
    psc_ar_procs_t one = {1, 0, &pa, psc_test_allgather};
    CUstream swapped[N] = {streams[1], streams[0], streams[2]};
    psc_ar_tuning_t tb;
    void *r[N];
    const void *s[N];
    uint64_t split = 0; /* NCCL faster everywhere: a refused call must not reach it either */
    int live = live_comms();

    (void)state;
    assert_int_equal(psc_allreduce_tune(NULL, NULL, streams), PSC_ERR_INVALID);
    assert_int_equal(psc_allreduce_tune(ar, &one, streams), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "accepted NULL for psc_allreduce_create's groups"));
    assert_int_equal(psc_allreduce_tune(ar, NULL, NULL), PSC_ERR_INVALID);
    assert_int_equal(psc_allreduce_tune(ar, NULL, swapped), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "psc_allreduce_tune: rank 0's stream: accepted a stream of GPU 0"));
    assert_int_equal(live_comms(), live);
    assert_int_equal(psc_allreduce_tuning(NULL, &tb), PSC_ERR_INVALID);
    assert_int_equal(psc_allreduce_tuning(ar, &tb), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "accepted a group psc_allreduce_tune succeeded on"));
    assert_int_equal(psc__ar_tune_skew(ar, skew_split, &split), PSC_OK);
    assert_int_equal(psc_allreduce_tune(ar, NULL, streams), PSC_OK);
    assert_int_equal(psc_allreduce_tuning(ar, NULL), PSC_ERR_INVALID);
    assert_int_equal(psc_allreduce_tune(ar, NULL, streams), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "tuned already"));
    /* psc_allreduce_sum's refusals come before the routing */
    for (int i = 0; i < N; i++) {
        r[i] = (void *)(uintptr_t)recvb[i];
        s[i] = (const void *)(uintptr_t)sendb[i];
    }
    assert_int_equal(psc_allreduce_sum(ar, r, s, MAXB / 4 + 1, PSC_AR_FLOAT32, streams, 0), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "accepted up to the group's 4096 B"));
    r[1] = (char *)r[1] + 4;
    assert_int_equal(psc_allreduce_sum(ar, r, s, 16, PSC_AR_FLOAT32, streams, 0), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "16-byte aligned"));
    r[1] = (char *)r[1] - 4;
    assert_int_equal(psc_allreduce_sum(ar, r, s, 16, PSC_AR_FLOAT32, swapped, 0), PSC_ERR_INVALID);
    assert_int_equal(psc_allreduce_sum(ar, r, s, 16, 3, streams, 0), PSC_ERR_INVALID);
    assert_int_equal(psc_allreduce_sum(ar, r, s, 0, PSC_AR_FLOAT32, streams, 0), PSC_OK);
    assert_int_equal(who(ar, PSC_AR_FLOAT32, 16, 1), 'n');
    psc_allreduce_destroy(ar);
    assert_int_equal(live_comms(), live);
}

/* ---- groups of processes */

typedef struct {
    int32_t rows, graphs;
    uint64_t choices;
    double own[ROWS], nccl[ROWS];
} digest_t;

static int say(int proc, const char *what, psc_context_t *ctx)
{
    fprintf(stderr, "process %d: %s: %s\n", proc, what, ctx ? psc_context_last_error(ctx) : "");
    return 1;
}

/* Process 1 finds NCCL slow at 64 B, process 0 the kernel slow from 1 KiB: every process's table says so. */
static double skew_proc(int nccl, uint64_t bytes, double us, void *arg)
{
    int proc = *(const int *)arg;

    if (proc == 1 && nccl && bytes == 64)
        return us + SLOW;
    if (proc == 0 && !nccl && bytes >= 1024)
        return us + SLOW;
    return us;
}

/* One call of this process's rank: which way it went ('n', 'o' or 'x'). */
static char who_joined(psc_context_t *ctx, psc_allreduce_t *ar, CUstream s, CUdeviceptr in, CUdeviceptr out,
                       int proc, int nprocs, int dt, size_t count, uint32_t seed)
{
    void *r = (void *)(uintptr_t)out;
    const void *snd = (const void *)(uintptr_t)in;
    char w;

    fill_one((unsigned char *)(uintptr_t)in, dt, count, nprocs, proc, seed);
    corrupt_both(1);
    if (psc_allreduce_sum(ar, &r, &snd, count, dt, &s, 5000) != PSC_OK ||
        ctx->cu.p_cuStreamSynchronize(s) != CUDA_SUCCESS)
        w = 'x';
    else
        w = judge((const unsigned char *)(uintptr_t)out, dt, count, nprocs, seed);
    corrupt_both(0);
    return w;
}

static int role_tuned(psc_context_t *ctx, int proc, int nprocs, int gpu, const psc_ar_procs_t *procs)
{
    psc_allreduce_t *ar = NULL;
    CUdeviceptr in = 0, out = 0;
    CUstream s = NULL;
    psc_ar_tuning_t tb;
    digest_t mine, all[PSC_TEST_NP_MAX];
    int rc = 0;

    if (psc__gpu_use(ctx, gpu) != PSC_OK || ctx->cu.p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
        ctx->cu.p_cuMemAlloc(&in, MAXB) || ctx->cu.p_cuMemAlloc(&out, MAXB))
        return say(proc, "setup", NULL);
    if (psc_allreduce_join(ctx, gpu, procs, MAXB, &ar) != PSC_OK)
        return say(proc, "psc_allreduce_join", ctx);
    if (psc__ar_tune_skew(ar, skew_proc, &proc) != PSC_OK || psc_allreduce_tune(ar, procs, &s) != PSC_OK ||
        psc_allreduce_tuning(ar, &tb) != PSC_OK)
        return say(proc, "psc_allreduce_tune", ctx);
    if (live_comms() != 1)
        rc = say(proc, "not one communicator after tune", NULL);
    memset(&mine, 0, sizeof(mine));
    mine.rows = tb.rows;
    mine.graphs = tb.graphs;
    for (int k = 0; k < ROWS && k < tb.rows; k++) {
        mine.choices |= (uint64_t)tb.row[k].nccl << k;
        mine.own[k] = tb.row[k].own_us;
        mine.nccl[k] = tb.row[k].nccl_us;
        if (tb.row[k].nccl != (tb.row[k].nccl_us < tb.row[k].own_us))
            rc = say(proc, "a choice against the times", NULL);
    }
    if (tb.rows != ROWS || tb.row[2].nccl || tb.row[2].nccl_us < SLOW || !tb.row[6].nccl || tb.row[6].own_us < SLOW ||
        !tb.row[8].nccl)
        rc = say(proc, "the slowest process's times did not decide", NULL);
    if (psc_test_allgather(&mine, all, sizeof(mine), procs->arg) != 0)
        return say(proc, "allgather", NULL);
    for (int p = 0; p < nprocs; p++)
        if (memcmp(&all[p], &mine, sizeof(mine)) != 0)
            rc = say(proc, "another process's table differs", NULL);
    for (int k = 0; k < ROWS && rc == 0; k++) {
        char w = who_joined(ctx, ar, s, in, out, proc, nprocs, PSC_AR_FLOAT32, (16u << k) / 4 > 1 ? (16u << k) / 4 : 2,
                            (uint32_t)k);

        if (w != (tb.row[k].nccl ? 'n' : 'o')) {
            fprintf(stderr, "process %d: class %d B went '%c', its row says %s\n", proc, 16 << k, w,
                    tb.row[k].nccl ? "NCCL" : "the kernel");
            rc = 1;
        }
    }
    if (rc == 0 && who_joined(ctx, ar, s, in, in, proc, nprocs, PSC_AR_BFLOAT16, 1024, 77) != 'n') /* in place */
        rc = say(proc, "a 2 KiB bf16 call in place did not go to NCCL", NULL);
    if (rc == 0 && psc_allreduce_check(ar) != PSC_OK)
        rc = say(proc, "psc_allreduce_check", ctx);
    psc_test_procs_barrier(procs);
    psc_allreduce_destroy(ar);
    if (live_comms() != 0)
        rc = say(proc, "a communicator left after destroy", NULL);
    return rc;
}

/* The part collectives' ways in a joined group: NCCL slow; the reduce-scatter's copy engines and the all-gather's
   kernel slow at 4 MiB parts. */
static double skew_parts(int way, uint64_t bytes, double us, void *arg)
{
    (void)arg;
    if (way == 4 + PSC__AR_TUNE_NCCL || way == 8 + PSC__AR_TUNE_NCCL ||
        (bytes == (4u << 20) && (way == 4 + PSC__AR_TUNE_COPY || way == 8 + PSC__AR_TUNE_KERNELS)))
        return us + SLOW;
    return us;
}

/*
 * A joined group (one process a GPU, made for 8 MiB: parts up to 4 MiB) tuned for the reduce-scatter and the
 * all-gather in graphs: at 4 MiB parts each process's copy engines timed as a third way (through the peers' slots);
 * the table keeps the all-gather's copy engines and the reduce-scatter's kernel, and 4 MiB parts go those ways,
 * their outputs right.
 */
static int role_tuned_parts(psc_context_t *ctx, int proc, int nprocs, int gpu, const psc_ar_procs_t *procs)
{
    const size_t count = (4u << 20) / 4, all = (size_t)nprocs * count * 4;
    psc_allreduce_t *ar = NULL;
    CUdeviceptr in = 0, out = 0;
    CUstream s = NULL;
    psc_ar_tuning_t tb;
    void *r;
    const void *snd;
    int rc = 0;

    setenv("FAKE_CUDA_GRAPHS", "1", 1);
    if (psc__gpu_use(ctx, gpu) != PSC_OK || ctx->cu.p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
        ctx->cu.p_cuMemAlloc(&in, all) || ctx->cu.p_cuMemAlloc(&out, all))
        return say(proc, "setup", NULL);
    if (psc_allreduce_join(ctx, gpu, procs, all, &ar) != PSC_OK)
        return say(proc, "psc_allreduce_join", ctx);
    if (psc__ar_tune_skew(ar, skew_parts, NULL) != PSC_OK || psc__ar_tune_kinds(ar, 6) != PSC_OK ||
        psc_allreduce_tune(ar, procs, &s) != PSC_OK || psc_allreduce_tuning(ar, &tb) != PSC_OK)
        return say(proc, "psc_allreduce_tune", ctx);
    if (!tb.graphs || tb.part_rows != 19 || !tb.ag[18].copy_engines || tb.rs[18].copy_engines || tb.ag[18].nccl ||
        tb.rs[18].nccl || tb.ag[17].copy_engines)
        rc = say(proc, "the table did not keep the faster of each collective's own ways", NULL);
    fill_one((unsigned char *)(uintptr_t)in, PSC_AR_FLOAT32, count, nprocs, proc, 21); /* the all-gather's part */
    r = (void *)(uintptr_t)out;
    snd = (const void *)(uintptr_t)in;
    if (rc == 0 && (psc_allreduce_all_gather(ar, &r, &snd, count, PSC_AR_FLOAT32, &s, 5000) != PSC_OK ||
                    ctx->cu.p_cuStreamSynchronize(s) != CUDA_SUCCESS ||
                    psc_allreduce_last_way(ar) != PSC_AR_WAY_COPY_ENGINES))
        rc = say(proc, "a 4 MiB all-gather not by the copy engines", ctx);
    for (size_t e = 0; rc == 0 && e < (size_t)nprocs * count; e += 4093) {
        float want = (float)psc__coll_input(PSC_OP_SUM, PSC_AR_FLOAT32, nprocs, (int)(e / count), e % count, 21), got;

        memcpy(&got, (const unsigned char *)(uintptr_t)out + 4 * e, 4);
        if (memcmp(&got, &want, 4))
            rc = say(proc, "the all-gather's output", NULL);
    }
    fill_one((unsigned char *)(uintptr_t)in, PSC_AR_FLOAT32, (size_t)nprocs * count, nprocs, proc, 22); /* n parts */
    if (rc == 0 && (psc_allreduce_reduce_scatter(ar, &r, &snd, count, PSC_AR_FLOAT32, &s, 5000) != PSC_OK ||
                    ctx->cu.p_cuStreamSynchronize(s) != CUDA_SUCCESS ||
                    psc_allreduce_last_way(ar) != PSC_AR_WAY_ONESHOT))
        rc = say(proc, "a 4 MiB reduce-scatter not by the kernel", ctx);
    for (size_t j = 0; rc == 0 && j < count; j += 4093) {
        float want = (float)psc__coll_reduced(PSC_OP_SUM, PSC_AR_FLOAT32, nprocs, (uint64_t)proc * count + j, 22), got;

        memcpy(&got, (const unsigned char *)(uintptr_t)out + 4 * j, 4);
        if (memcmp(&got, &want, 4))
            rc = say(proc, "the reduce-scatter's output", NULL);
    }
    if (rc == 0 && psc_allreduce_check(ar) != PSC_OK)
        rc = say(proc, "psc_allreduce_check", ctx);
    psc_test_procs_barrier(procs);
    psc_allreduce_destroy(ar);
    unsetenv("FAKE_CUDA_GRAPHS");
    return rc;
}

/* Process 1 has no NCCL: every process fails, naming it, and the kernel still sums everywhere. */
static int role_one_without_nccl(psc_context_t *ctx, int proc, int nprocs, int gpu, const psc_ar_procs_t *procs)
{
    psc_allreduce_t *ar = NULL;
    CUdeviceptr in = 0, out = 0;
    CUstream s = NULL;
    psc_status_t st;
    int rc = 0;

    if (proc == 1)
        setenv("P2PSCOPE_LIBNCCL", "/nonexistent/libnccl.so.2", 1);
    if (psc__gpu_use(ctx, gpu) != PSC_OK || ctx->cu.p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
        ctx->cu.p_cuMemAlloc(&in, MAXB) || ctx->cu.p_cuMemAlloc(&out, MAXB))
        return say(proc, "setup", NULL);
    if (psc_allreduce_join(ctx, gpu, procs, MAXB, &ar) != PSC_OK)
        return say(proc, "psc_allreduce_join", ctx);
    st = psc_allreduce_tune(ar, procs, &s);
    if (st != PSC_ERR_UNSUPPORTED ||
        !strstr(psc_context_last_error(ctx), proc == 1 ? "could not be loaded" : "process 1 could not start NCCL"))
        rc = say(proc, "not refused as expected", ctx);
    if (live_comms() != 0)
        rc = say(proc, "a communicator left after a failed tune", NULL);
    for (int k = 0; k < 4 && rc == 0; k++)
        if (who_joined(ctx, ar, s, in, out, proc, nprocs, PSC_AR_FLOAT32, 64u << k, (uint32_t)k) != 'o')
            rc = say(proc, "a call not summed by the kernel", NULL);
    psc_test_procs_barrier(procs);
    psc_allreduce_destroy(ar);
    return rc;
}

static psc_context_t *open_fake(int proc, int *code)
{
    psc_context_t *ctx = NULL;
    char err[256];

    (void)proc;
    psc_test_fake_driver("contexts", "3");
    setenv("FAKE_CUDA_UUID", "7", 1); /* GPUs with UUIDs, which share messages name */
    if (psc_context_create(&ctx, err, sizeof(err)) != PSC_OK) {
        fprintf(stderr, "psc_context_create: %s\n", err);
        *code = 1;
        return NULL;
    }
    return ctx;
}

static void test_processes_decide_alike(void **state)
{
    static const int gpus[] = {0, 1, 2};

    (void)state;
    assert_int_equal(psc_test_run_procs(role_tuned, 3, gpus, open_fake, 120), 0);
}

static void test_joined_parts_tuned(void **state)
{
    static const int gpus[] = {0, 1};

    (void)state;
    assert_int_equal(psc_test_run_procs(role_tuned_parts, 2, gpus, open_fake, 240), 0);
}

static void test_process_without_nccl(void **state)
{
    static const int gpus[] = {0, 1};

    (void)state;
    assert_int_equal(psc_test_run_procs(role_one_without_nccl, 2, gpus, open_fake, 120), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_classes),
        cmocka_unit_test(test_without_nccl_the_kernel_stays),
        cmocka_unit_test(test_calls_follow_the_table),
        cmocka_unit_test(test_timed_in_graphs),
        cmocka_unit_test(test_parts_follow_their_tables),
        cmocka_unit_test(test_choice_follows_the_times),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_joined_parts_tuned),
        cmocka_unit_test(test_copy_engines_in_the_table),
        cmocka_unit_test(test_parts_tuned_to_copy_below_the_rule),
        cmocka_unit_test(test_capture_under_the_timeout),
        cmocka_unit_test(test_processes_decide_alike),
        cmocka_unit_test(test_process_without_nccl),
    };

    return cmocka_run_group_tests(tests, setup, psc_test_close_ctx);
}
