/*
 * The all-reduce's copy-engine path (allreduce_ce.c) on the fake driver,
 * whose copies move the bytes at once and whose kernels run on the CPU (a
 * thread each): exact, bit-identical sums for each type, in and out of
 * place, chunks short and whole, the slots' halves taken in turn many times
 * (small chunks), over two ranks and three; calls mixed with the kernels'
 * own; the path taken by size only for two ranks from 4 MiB; every copy
 * enqueued before its chunk is marked sent and (in place) before its chunk is
 * added; no path without the driver's stream writes; captured calls of
 * several local ranks by the kernels.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "allreduce/allreduce.h"
#include "allreduce/ar_args.h"
#include "coll/coll_values.h"
#include "fake_context.h"
#include "internal.h"

#define N 3
#define MAXB ((4u << 20) + 64) /* a call of 4 MiB, and a guard */
#define GROUP_MAX (4u << 20)   /* groups made for calls up to 4 MiB: the path's region */

static const int devs[N] = {0, 1, 2};
static CUstream streams[N];
static CUdeviceptr sendb[N], recvb[N];
static void (*fake_run_copies)(int);
static int (*fake_op)(int, void **, void **);
static void *(*fake_op_ctx)(int);

static int setup(void **state)
{
    if (psc_test_open_fake_gpus(state, "3") != 0)
        return -1;
    *(void **)&fake_run_copies = psc_test_fake_sym("fake_cuda_run_copies");
    *(void **)&fake_op = psc_test_fake_sym("fake_cuda_op");
    *(void **)&fake_op_ctx = psc_test_fake_sym("fake_cuda_op_ctx");
    for (int i = 0; i < N; i++)
        if (psc__gpu_use(g_ctx, i) != PSC_OK || g_ctx->cu.p_cuStreamCreate(&streams[i], CU_STREAM_NON_BLOCKING) ||
            g_ctx->cu.p_cuMemAlloc(&sendb[i], MAXB) || g_ctx->cu.p_cuMemAlloc(&recvb[i], MAXB))
            return -1;
    return fake_run_copies && fake_op && fake_op_ctx ? 0 : -1;
}

static size_t esize(int dt) { return dt == PSC_AR_FLOAT32 ? 4 : 2; }

static void sync_all(int n)
{
    for (int i = 0; i < n; i++)
        assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(streams[i]), CUDA_SUCCESS);
}

/* Every rank's input (coll_values.h's exact inputs for a sum over n ranks), every output set to 0xA5. */
static void fill(int n, int dt, size_t count, uint32_t seed)
{
    for (int r = 0; r < n; r++) {
        unsigned char *p = (unsigned char *)(uintptr_t)sendb[r];

        for (size_t j = 0; j < count; j++) {
            uint64_t b = psc__coll_to_bits(dt, (double)psc__coll_input(PSC_OP_SUM, dt, n, r, j, seed));

            memcpy(p + j * esize(dt), &b, esize(dt));
        }
        memset((void *)(uintptr_t)recvb[r], 0xA5, MAXB);
    }
}

/* Sum in place (into sendb) or not (recvb); every rank's output exact, bit for bit, nothing past it written. */
static void sum_and_check(psc_allreduce_t *ar, int n, int dt, size_t count, uint32_t seed, int in_place)
{
    void *r[N];
    const void *s[N];

    fill(n, dt, count, seed);
    for (int i = 0; i < n; i++) {
        r[i] = (void *)(uintptr_t)(in_place ? sendb[i] : recvb[i]);
        s[i] = (const void *)(uintptr_t)sendb[i];
    }
    if (psc_allreduce_sum(ar, r, s, count, dt, streams, 5000) != PSC_OK)
        fail_msg("psc_allreduce_sum: %s", psc_context_last_error(g_ctx));
    sync_all(n);
    for (int i = 0; i < n; i++) {
        const unsigned char *p = r[i];

        for (size_t j = 0; j < count; j++) {
            uint64_t want = psc__coll_to_bits(dt, psc__coll_reduced(PSC_OP_SUM, dt, n, j, seed)), got = 0;

            memcpy(&got, p + j * esize(dt), esize(dt));
            if (got != want)
                fail_msg("%d ranks type %d count %zu %s rank %d element %zu: 0x%llx, expected 0x%llx", n, dt, count,
                         in_place ? "in place" : "out of place", i, j, (unsigned long long)got,
                         (unsigned long long)want);
        }
        if (!in_place)
            assert_int_equal(p[count * esize(dt)], 0xA5);
    }
}

static psc_allreduce_t *make(int n, size_t max_bytes)
{
    psc_allreduce_t *ar = NULL;

    if (psc_allreduce_create(g_ctx, devs, n, max_bytes, &ar) != PSC_OK)
        fail_msg("psc_allreduce_create: %s", psc_context_last_error(g_ctx));
    return ar;
}

/* 1 KiB chunks: a 64 KiB call takes 64 of them, the slots' halves in turn 32 times. */
static void test_exact_every_type(void **state)
{
    static const int types[] = {PSC_AR_FLOAT32, PSC_AR_FLOAT16, PSC_AR_BFLOAT16};
    static const size_t counts[] = {1, 7, 8, 255, 256, 512, 1024, 2047, 2048, 4097, 32768};
    psc_allreduce_t *ar = make(2, GROUP_MAX);

    (void)state;
    assert_int_equal(psc__allreduce_force(ar, 3), PSC_OK);
    assert_int_equal(psc__allreduce_ce_chunk(ar, 1024), PSC_OK);
    for (size_t t = 0; t < 3; t++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
            for (int in_place = 0; in_place < 2; in_place++)
                sum_and_check(ar, 2, types[t], counts[c], (uint32_t)(t * 100 + c), in_place);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* The same code over three ranks (each pushes into both others' slots). */
static void test_three_ranks(void **state)
{
    static const size_t counts[] = {3, 300, 1000, 9000};
    psc_allreduce_t *ar = make(3, GROUP_MAX);

    (void)state;
    assert_int_equal(psc__allreduce_force(ar, 3), PSC_OK);
    assert_int_equal(psc__allreduce_ce_chunk(ar, 1024), PSC_OK);
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
        for (int in_place = 0; in_place < 2; in_place++)
            sum_and_check(ar, 3, c % 2 ? PSC_AR_BFLOAT16 : PSC_AR_FLOAT32, counts[c], (uint32_t)c + 40, in_place);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* By size: two ranks take the path from 4 MiB on (exact), not below; three ranks never. */
static void test_taken_by_size(void **state)
{
    psc_allreduce_t *two = make(2, GROUP_MAX), *three = make(3, GROUP_MAX);

    (void)state;
    fake_run_copies(1);
    sum_and_check(two, 2, PSC_AR_FLOAT32, (4u << 20) / 4, 5, 0);
    assert_true(psc_test_fake_stream_writes() > 0);
    fake_run_copies(1);
    sum_and_check(two, 2, PSC_AR_FLOAT32, (4u << 20) / 4 - 4, 6, 1);
    assert_int_equal(psc_test_fake_stream_writes(), 0);
    fake_run_copies(1);
    sum_and_check(three, 3, PSC_AR_FLOAT32, (4u << 20) / 4, 7, 0);
    assert_int_equal(psc_test_fake_stream_writes(), 0);
    psc_allreduce_destroy(two);
    psc_allreduce_destroy(three);
}

/* The operation log's k-th entry, its stream and event, and which local rank's context it ran in (-1: none). */
typedef struct {
    int op, rank;
    void *stream, *event;
} logged_t;

static int read_log(logged_t *log, int most)
{
    int n = 0;

    for (; n < most && (log[n].op = fake_op(n, &log[n].stream, &log[n].event)) != 0; n++) {
        log[n].rank = -1;
        for (int r = 0; r < N; r++)
            if ((void *)g_ctx->gpu[r].ctx == fake_op_ctx(n))
                log[n].rank = r;
    }
    return n;
}

/* The op on `stream` just before the last record of `event` before entry k, or 0. */
static int recorded_after(const logged_t *log, int k, void *event, void *stream)
{
    for (int j = k - 1; j >= 0; j--)
        if (log[j].op == 'R' && log[j].event == event) {
            if (log[j].stream != stream)
                return 0;
            for (int q = j - 1; q >= 0; q--)
                if (log[q].stream == stream && log[q].rank == log[j].rank)
                    return log[q].op;
            return 0;
        }
    return 0;
}

/*
 * The order on the streams, in place over 5 chunks (the halves' turns twice), read from the fake's log: per
 * rank, every mark on the copy stream after its chunk's copy; every half's first copy after a wait for an
 * event recorded on the third stream after its wait kernel; every addition right after a wait for an event
 * recorded on the copy stream after the chunk's marks (in place the sum overwrites what the copy engine
 * reads; and the graph's mirror of the peers' marks); the second turn of a half's wait kernel after a wait for
 * an event recorded on the caller's stream after an addition (the mirror of the peers' frees); the call ends
 * on the caller's stream with waits for both streams.
 */
static void test_stream_order(void **state)
{
    psc_allreduce_t *ar = make(2, GROUP_MAX);
    static logged_t log[256];
    int n;

    (void)state;
    assert_int_equal(psc__allreduce_force(ar, 3), PSC_OK);
    assert_int_equal(psc__allreduce_ce_chunk(ar, 1024), PSC_OK);
    fake_run_copies(1);
    sum_and_check(ar, 2, PSC_AR_FLOAT32, 1200, 9, 1); /* 4800 B: 5 chunks */
    n = read_log(log, 256);
    for (int i = 0; i < 2; i++) {
        void *copy = NULL, *waits = NULL;
        int copies = 0, marks = 0, adds = 0, wait_kernels = 0, last = -1, before_last = -1;

        for (int k = 0; k < n; k++) {
            const logged_t *e = &log[k];

            if (e->rank != i)
                continue;
            if (e->op == 'M') {
                copy = copy ? copy : e->stream;
                assert_ptr_equal(e->stream, copy);
                if (copies % 2 == 0) { /* a half's first copy: after the half's wait, on the copy stream */
                    int w = -1;

                    for (int q = k - 1; q >= 0 && w < 0; q--)
                        if (log[q].rank == i && log[q].stream == copy && log[q].op != 'M')
                            w = q;
                    if (w < 0 || log[w].op != 'W' || !waits || recorded_after(log, w, log[w].event, waits) != 'K')
                        fail_msg("rank %d: copy %d (a half's first) not after a wait for the half's wait kernel", i,
                                 copies);
                }
                copies++;
            }
            if (e->op == 'V' && (e->stream != copy || ++marks > copies))
                fail_msg("rank %d: mark %d not on the copy stream after its copy", i, marks);
            if (e->op == 'K' && e->stream != streams[i] && e->stream != copy) { /* the wait kernels' stream */
                waits = waits ? waits : e->stream;
                assert_ptr_equal(e->stream, waits);
                if (++wait_kernels > 2) { /* a half's second turn: after this rank's own addition freed it */
                    int w = -1;

                    for (int q = k - 1; q >= 0 && w < 0; q--)
                        if (log[q].rank == i && log[q].stream == waits)
                            w = q;
                    if (w < 0 || log[w].op != 'W' || recorded_after(log, w, log[w].event, streams[i]) != 'K')
                        fail_msg("rank %d: wait kernel %d not after a wait for this rank's addition", i,
                                 wait_kernels);
                }
            }
            if (e->op == 'K' && e->stream == streams[i]) {
                int w = -1;

                for (int q = k - 1; q >= 0 && w < 0; q--)
                    if (log[q].rank == i && log[q].stream == streams[i])
                        w = q;
                adds++;
                if (w < 0 || log[w].op != 'W' || recorded_after(log, w, log[w].event, copy) != 'V')
                    fail_msg("rank %d: addition %d not right after a wait for its chunk's marks", i, adds);
            }
            if (e->stream == streams[i]) {
                before_last = last;
                last = k;
            }
        }
        assert_int_equal(adds, 5);
        assert_int_equal(copies, 5);
        assert_int_equal(marks, 5);
        assert_int_equal(wait_kernels, 3);
        assert_true(before_last >= 0 && log[last].op == 'W' && log[before_last].op == 'W');
        assert_true((recorded_after(log, last, log[last].event, copy) != 0) !=
                    (recorded_after(log, last, log[last].event, waits) != 0));
        assert_true((recorded_after(log, before_last, log[before_last].event, copy) != 0) !=
                    (recorded_after(log, before_last, log[before_last].event, waits) != 0));
        assert_true(recorded_after(log, last, log[last].event, copy) || recorded_after(log, before_last,
                                                                                         log[before_last].event, copy));
    }
    psc_allreduce_destroy(ar);
}

/* Calls of random sizes switching between the kernels (one-shot; over three ranks the two-shot too) and the path:
   exact, each call counted once. */
static void test_mixed_with_kernels(void **state)
{
    uint32_t x = 4242;

    (void)state;
    for (int n = 2; n <= 3; n++) { /* three ranks: the two-shot's buffers beside the path's region too */
        psc_allreduce_t *ar = make(n, GROUP_MAX);

        assert_int_equal(psc__allreduce_ce_chunk(ar, 4096), PSC_OK);
        for (int k = 0; k < 120; k++) {
            uint64_t lbuf, ctrl, slot;
            unsigned before;
            size_t count;
            int way;

            x = x * 1103515245u + 12345u;
            count = 1 + (x >> 8) % 20000;
            way = (x >> 4) & 1 ? 3 : n == 3 && (x >> 5) & 1 ? 2 : 1;
            assert_int_equal(psc__allreduce_force(ar, way), PSC_OK);
            assert_int_equal(psc__allreduce_buffers(ar, 1, &lbuf, &ctrl, &slot), PSC_OK);
            before = ((const psc_ar_ctrl_t *)(uintptr_t)ctrl)->seq;
            sum_and_check(ar, n, k % 3 ? PSC_AR_FLOAT32 : PSC_AR_FLOAT16, count, (uint32_t)k, k % 2);
            assert_int_equal(((const psc_ar_ctrl_t *)(uintptr_t)ctrl)->seq, before + 1);
            assert_int_equal(psc_allreduce_last_way(ar), way == 3   ? PSC_AR_WAY_COPY_ENGINES
                                                         : way == 2 ? PSC_AR_WAY_TWOSHOT
                                                                    : PSC_AR_WAY_ONESHOT);
        }
        assert_int_equal(psc_allreduce_check(ar), PSC_OK);
        psc_allreduce_destroy(ar);
    }
}

/*
 * Calls captured from one thread into a graph per GPU (as an application that then launches the graphs in turn):
 * by the kernels, one launch per rank and call, even with the path forced, and no stream write. On the path
 * each GPU's graph would hold some 5 operations per chunk, each waiting on the other GPU, and a first graph's
 * launch that the driver cannot queue in full waits for its GPU, which waits for the second graph's launch:
 * the kernels give up after the timeout (issue 32; 512 MiB in 1 MiB chunks on 2 x H200). With the test hook
 * the captures take the path (so a GPU run can show the old behaviour); eager calls around them take it anyway.
 */
static void test_captured_calls_by_kernels(void **state)
{
    psc_allreduce_t *ar = make(2, GROUP_MAX);
    const size_t count = (1u << 20) / 4; /* 256 chunks of 4 KiB on the path */

    (void)state;
    setenv("FAKE_CUDA_GRAPHS", "1", 1);
    assert_int_equal(psc__allreduce_force(ar, 3), PSC_OK);
    assert_int_equal(psc__allreduce_ce_chunk(ar, 4096), PSC_OK);
    for (int hook = 0; hook < 2; hook++) {
        int nodes = psc_test_fake_count("fake_cuda_graph_nodes");
        void *r[2];
        const void *in[2];
        CUgraph g[2];

        assert_int_equal(psc__allreduce_ce_captured(ar, hook), PSC_OK);
        fill(2, PSC_AR_FLOAT32, count, (uint32_t)(60 + hook));
        fake_run_copies(1);
        for (int i = 0; i < 2; i++) {
            r[i] = (void *)(uintptr_t)recvb[i];
            in[i] = (const void *)(uintptr_t)sendb[i];
            assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
            assert_int_equal(g_ctx->cu.p_cuStreamBeginCapture(streams[i], CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                             CUDA_SUCCESS);
        }
        for (int k = 0; k < 3; k++)
            if (psc_allreduce_sum(ar, r, in, count, PSC_AR_FLOAT32, streams, 5000) != PSC_OK)
                fail_msg("psc_allreduce_sum (captured): %s", psc_context_last_error(g_ctx));
        for (int i = 0; i < 2; i++) {
            assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
            assert_int_equal(g_ctx->cu.p_cuStreamEndCapture(streams[i], &g[i]), CUDA_SUCCESS);
            assert_int_equal(g_ctx->cu.p_cuGraphDestroy(g[i]), CUDA_SUCCESS);
        }
        nodes = psc_test_fake_count("fake_cuda_graph_nodes") - nodes;
        if (!hook) {
            assert_int_equal(nodes, 3 * 2); /* one kernel per call and GPU */
            assert_int_equal(psc_test_fake_stream_writes(), 0);
        } else {
            assert_true(nodes >= 3 * 2 * 256); /* an addition per chunk on the caller's stream */
            assert_true(psc_test_fake_stream_writes() > 0);
        }
        sync_all(2);
        for (int i = 0; i < 2; i++) /* the fake ran the captured work at once */
            for (size_t j = 0; j < count; j += 997) {
                float want = (float)psc__coll_reduced(PSC_OP_SUM, PSC_AR_FLOAT32, 2, j, (uint32_t)(60 + hook)), got;

                memcpy(&got, (const unsigned char *)r[i] + 4 * j, 4);
                if (memcmp(&got, &want, 4))
                    fail_msg("hook %d rank %d element %zu: %g, expected %g", hook, i, j, got, want);
            }
    }
    unsetenv("FAKE_CUDA_GRAPHS");
    assert_int_equal(psc__allreduce_ce_captured(ar, 0), PSC_OK);
    fake_run_copies(1);
    sum_and_check(ar, 2, PSC_AR_FLOAT32, count, 62, 1);
    assert_true(psc_test_fake_stream_writes() > 0);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* The hooks' refusals, and no path for a group made for calls under 4 MiB. */
static void test_refusals(void **state)
{
    psc_allreduce_t *ar = make(2, GROUP_MAX), *small = make(2, GROUP_MAX - 16);

    (void)state;
    assert_int_equal(psc__allreduce_ce_chunk(ar, 0), PSC_ERR_INVALID);
    assert_int_equal(psc__allreduce_ce_chunk(ar, 8), PSC_ERR_INVALID);
    assert_int_equal(psc__allreduce_ce_chunk(ar, 1000), PSC_ERR_INVALID);
    /* the slots no larger than the group's largest call (4 MiB here, not the 8 MiB chunk) */
    assert_int_equal(psc__allreduce_ce_chunk(ar, (4u << 20) + 16), PSC_ERR_INVALID);
    assert_int_equal(psc__allreduce_ce_chunk(ar, 4u << 20), PSC_OK);
    assert_int_equal(psc__allreduce_force(small, 3), PSC_ERR_INVALID);
    assert_int_equal(psc__allreduce_ce_chunk(small, 1024), PSC_ERR_INVALID);
    psc_allreduce_destroy(ar);
    psc_allreduce_destroy(small);
}

/* Group `ar` has no path: forcing it and its hook refused; a 4 MiB call by the one-shot, exact, no stream write. */
static int without_path(psc_allreduce_t *ar)
{
    int ok = psc__allreduce_force(ar, 3) == PSC_ERR_INVALID && psc__allreduce_ce_chunk(ar, 1024) == PSC_ERR_INVALID;

    fake_run_copies(1);
    sum_and_check(ar, 2, PSC_AR_FLOAT32, (4u << 20) / 4, 11, 0);
    return ok && psc_test_fake_stream_writes() == 0;
}

/*
 * A driver without cuStreamWriteValue32, and one that has it and refuses every write (stream memory operations
 * not enabled): the path is never taken; large calls go by the one-shot, exact.
 */
static void test_no_stream_writes(void **state)
{
    psc_context_t *keep = g_ctx, *ctx = NULL;
    char err[256];
    psc_allreduce_t *ar = NULL;
    int lacking = 0, refusing = 0;

    (void)state;
    setenv("FAKE_CUDA_NO_STREAM_WRITES", "1", 1);
    if (psc_context_create(&ctx, err, sizeof(err)) != PSC_OK) {
        unsetenv("FAKE_CUDA_NO_STREAM_WRITES");
        fail_msg("psc_context_create: %s", err);
    }
    unsetenv("FAKE_CUDA_NO_STREAM_WRITES");
    g_ctx = ctx;
    if (psc_allreduce_create(ctx, devs, 2, GROUP_MAX, &ar) == PSC_OK) {
        lacking = without_path(ar);
        psc_allreduce_destroy(ar);
    }
    g_ctx = keep;
    psc_context_destroy(ctx);
    setenv("FAKE_CUDA_STREAM_WRITES", "refuse", 1);
    ar = NULL;
    fake_run_copies(1);
    if (psc_allreduce_create(g_ctx, devs, 2, GROUP_MAX, &ar) != PSC_OK)
        ar = NULL;
    unsetenv("FAKE_CUDA_STREAM_WRITES");
    if (ar) {
        refusing = without_path(ar);
        psc_allreduce_destroy(ar);
    }
    assert_true(lacking);
    assert_true(refusing);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_every_type), cmocka_unit_test(test_three_ranks),
        cmocka_unit_test(test_taken_by_size),    cmocka_unit_test(test_stream_order),
        cmocka_unit_test(test_mixed_with_kernels), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_no_stream_writes),  cmocka_unit_test(test_captured_calls_by_kernels),
    };

    return cmocka_run_group_tests(tests, setup, psc_test_close_ctx);
}
