/*
 * psc_allreduce_all_gather on the machine's GPUs (every GPU one rank; one rank on a machine with one): every
 * rank gets every rank's part byte for byte (words equal to the all-reduce's sentinel and NaNs of every payload
 * included), each type, in and out of place, parts of every length (off 16- and 8-byte boundaries), calls in
 * many pieces across the buffers' turns and across the piece number's wrap, interleaved with all-reduces and
 * reduce-scatters on the same group, calls of whole 4 MiB pieces and by the copy engines, a CUDA graph of calls
 * replayed (checked), and the time per call (eager and replayed) for 8 B to 1 MiB per rank, printed
 * (PSC_TEST_QUICK: fewer calls, for compute-sanitizer). Skipped only without a driver or GPU.
 */
#include <cuda.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "coll/coll_values.h"
#include "gpu_common.h"
#include "allreduce/allreduce.h"
#include "internal.h"

#define MAXB (24u << 20) /* each rank's send and recv */
#include "gpu_ar_fixture.h"

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

/* Byte b of rank i's part in a call seeded seed: every fourth 32-bit word the sentinel or a NaN, others noise. */
static unsigned char part_byte(int i, size_t b, uint32_t seed)
{
    static const uint32_t words[] = {PSC_AR_SENTINEL, 0x7fc00001u, 0xffc00000u, PSC_AR_NAN_WORD};
    uint32_t w = (b / 4) % 4 == 0 ? words[(b / 16 + (size_t)i + seed) % 4]
                                  : (uint32_t)((b / 4) * 2654435761u ^ ((uint32_t)i * 40503u + seed * 977u));

    return (unsigned char)(w >> (8 * (b % 4)));
}

/* Each rank's part of len bytes where the call reads it (in place: recv's own part), recv set to 0xA5 first. */
static void put_parts(size_t len, uint32_t seed, int in_place, void **r, const void **s)
{
    for (int i = 0; i < n; i++) {
        CUdeviceptr part = in_place ? recvb[i] + (CUdeviceptr)i * len : sendb[i];

        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        memset(host, 0xA5, (size_t)n * len + 16);
        assert_int_equal(g_ctx->cu.p_cuMemcpyHtoD(recvb[i], host, (size_t)n * len + 16), CUDA_SUCCESS);
        for (size_t b = 0; b < len; b++)
            host[b] = part_byte(i, b, seed);
        assert_int_equal(g_ctx->cu.p_cuMemcpyHtoD(part, host, len), CUDA_SUCCESS);
        assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(NULL), CUDA_SUCCESS);
        s[i] = (const void *)(uintptr_t)part;
        r[i] = (void *)(uintptr_t)recvb[i];
    }
}

/* Every rank's recv: n parts of len bytes, part r rank r's; out of place, the byte after them untouched. */
static void expect_all(size_t len, uint32_t seed, int in_place)
{
    for (int i = 0; i < n; i++) {
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        assert_int_equal(g_ctx->cu.p_cuMemcpyDtoH(host, recvb[i], (size_t)n * len + 1), CUDA_SUCCESS);
        for (int r = 0; r < n; r++)
            for (size_t b = 0; b < len; b++)
                if (host[(size_t)r * len + b] != part_byte(r, b, seed))
                    fail_msg("%zu B %s: rank %d's part %d byte %zu: 0x%02x, expected 0x%02x", len,
                             in_place ? "in place" : "out of place", i, r, b, host[(size_t)r * len + b],
                             part_byte(r, b, seed));
        if (!in_place)
            assert_int_equal(host[(size_t)n * len], 0xA5);
    }
}

static void all_gather(psc_allreduce_t *ar, int dt, size_t count, uint32_t seed, int in_place)
{
    void *r[MAXR];
    const void *s[MAXR];

    put_parts(count * esize(dt), seed, in_place, r, s);
    if (psc_allreduce_all_gather(ar, r, s, count, dt, streams, 5000) != PSC_OK)
        fail_msg("psc_allreduce_all_gather: %s", psc_context_last_error(g_ctx));
    sync_all();
    expect_all(count * esize(dt), seed, in_place);
}

static void test_exact(void **state)
{
    static const int types[] = {PSC_AR_FLOAT32, PSC_AR_FLOAT16, PSC_AR_BFLOAT16};
    static const size_t counts[] = {1, 3, 4, 5, 8, 9, 1000, 4099, 65536, 300001};
    psc_allreduce_t *ar = NULL;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, MAXB / MAXR, &ar), PSC_OK);
    for (size_t t = 0; t < 3; t++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
            for (int in_place = 0; in_place < 2; in_place++)
                all_gather(ar, types[t], counts[c], (uint32_t)(t * 100 + c), in_place);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* The piece number of every rank set to `number` (as after that many pieces). */
static void set_piece_number(psc_allreduce_t *ar, uint32_t number)
{
    for (int i = 0; i < n; i++) {
        uint64_t lbuf, ctrl, slot;

        assert_int_equal(psc__allreduce_buffers(ar, i, &lbuf, &ctrl, &slot), PSC_OK);
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        assert_int_equal(g_ctx->cu.p_cuMemcpyHtoD(ctrl + offsetof(psc_ar_ctrl_t, ag), &number, 4), CUDA_SUCCESS);
    }
}

/* The all-reduce's sums of count floats, each rank's input coll_values.h's, checked on every rank. */
static void sum_checked(psc_allreduce_t *ar, size_t count, uint32_t seed)
{
    void *r[MAXR];
    const void *s[MAXR];

    for (int i = 0; i < n; i++) {
        for (size_t j = 0; j < count; j++) {
            float f = (float)psc__coll_input(PSC_OP_SUM, PSC_AR_FLOAT32, n, i, j, seed);

            memcpy(host + 4 * j, &f, 4);
        }
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        assert_int_equal(g_ctx->cu.p_cuMemcpyHtoD(sendb[i], host, 4 * count), CUDA_SUCCESS);
        assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(NULL), CUDA_SUCCESS);
        s[i] = (const void *)(uintptr_t)sendb[i];
        r[i] = (void *)(uintptr_t)recvb[i];
    }
    assert_int_equal(psc_allreduce_sum(ar, r, s, count, PSC_AR_FLOAT32, streams, 5000), PSC_OK);
    sync_all();
    for (int i = 0; i < n; i++) {
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        assert_int_equal(g_ctx->cu.p_cuMemcpyDtoH(host, recvb[i], 4 * count), CUDA_SUCCESS);
        for (size_t j = 0; j < count; j++) {
            float want = (float)psc__coll_reduced(PSC_OP_SUM, PSC_AR_FLOAT32, n, j, seed);

            if (memcmp(host + 4 * j, &want, 4))
                fail_msg("all-reduce of %zu floats, rank %d element %zu wrong", count, i, j);
        }
    }
}

/* Pieces of 4 KiB: a large call first (its lines stay in the buffers), then small calls across the piece
   number's wrap, all-reduces between; then a call of 10 MiB parts by the copy engines (2 GPUs or more), in and out
   of place, and by the kernel in whole 4 MiB pieces (2.5 of them). */
static void test_pieces_and_wrap(void **state)
{
    psc_allreduce_t *ar = NULL;
    size_t big = (MAXB / (size_t)n - 64) / 4;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, MAXB / MAXR, &ar), PSC_OK);
    assert_int_equal(psc__allreduce_ag_piece(ar, 4096), PSC_OK);
    all_gather(ar, PSC_AR_FLOAT32, 100000, 1, 0); /* 98 pieces */
    set_piece_number(ar, PSC_AG_MOD - 3);
    for (uint32_t k = 0; k < 12; k++) {
        all_gather(ar, k % 3 ? PSC_AR_FLOAT16 : PSC_AR_FLOAT32, 1 + 700 * k, 10 + k, (int)(k % 2));
        if (k % 4 == 3)
            sum_checked(ar, 1000 + k, k);
    }
    all_gather(ar, PSC_AR_FLOAT32, 100000, 2, 1); /* across the old lines of the first call */
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, big * 4, &ar), PSC_OK);
    big = big < (10u << 20) / 4 ? big : (10u << 20) / 4;
    all_gather(ar, PSC_AR_FLOAT32, big, 3, 0); /* from 4 MiB, 2 GPUs or more: the copy engines */
    assert_int_equal(psc_allreduce_last_way(ar), n > 1 && big * 4 >= (4u << 20) ? PSC_AR_WAY_COPY_ENGINES
                                                                               : PSC_AR_WAY_ONESHOT);
    all_gather(ar, PSC_AR_FLOAT32, big, 5, 1);
    assert_int_equal(psc__allreduce_force(ar, 1), PSC_OK); /* the kernel, in whole 4 MiB pieces */
    all_gather(ar, PSC_AR_FLOAT32, big, 6, 0);
    assert_int_equal(psc_allreduce_last_way(ar), PSC_AR_WAY_ONESHOT);
    all_gather(ar, PSC_AR_FLOAT32, 7, 4, 1);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* Calls of `bytes` eager and replayed from a graph of 20 per rank's stream (the last checked): µs per call. */
static void time_calls(psc_allreduce_t *ar, size_t bytes, double *eager, double *graph)
{
    const int quick = getenv("PSC_TEST_QUICK") != NULL;
    const int calls = quick ? 20 : 1000, replays = quick ? 2 : 50;
    psc_cuda_t *cu = &g_ctx->cu;
    CUgraph g[MAXR];
    CUgraphExec e[MAXR];
    void *r[MAXR];
    const void *s[MAXR];
    double t0;

    put_parts(bytes, (uint32_t)bytes, 0, r, s);
    for (int k = 0; k < calls / 20; k++)
        assert_int_equal(psc_allreduce_all_gather(ar, r, s, bytes / 4, PSC_AR_FLOAT32, streams, 5000), PSC_OK);
    sync_all();
    t0 = now_us();
    for (int k = 0; k < calls; k++)
        assert_int_equal(psc_allreduce_all_gather(ar, r, s, bytes / 4, PSC_AR_FLOAT32, streams, 5000), PSC_OK);
    sync_all();
    *eager = (now_us() - t0) / calls;
    put_parts(bytes, (uint32_t)bytes + 1, 0, r, s); /* the graph's calls' parts, checked after */
    for (int i = 0; i < n; i++) {
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        assert_int_equal(cu->p_cuStreamBeginCapture(streams[i], CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
    }
    for (int k = 0; k < 20; k++)
        assert_int_equal(psc_allreduce_all_gather(ar, r, s, bytes / 4, PSC_AR_FLOAT32, streams, 5000), PSC_OK);
    for (int i = 0; i < n; i++) {
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        assert_int_equal(cu->p_cuStreamEndCapture(streams[i], &g[i]), CUDA_SUCCESS);
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(cu->p_cuGraphInstantiateWithFlags(&e[i], g[i], 0), CUDA_SUCCESS);
    for (int l = 0; l < 5; l++)
        for (int i = 0; i < n; i++)
            assert_int_equal(cu->p_cuGraphLaunch(e[i], streams[i]), CUDA_SUCCESS);
    sync_all();
    t0 = now_us();
    for (int l = 0; l < replays; l++)
        for (int i = 0; i < n; i++)
            assert_int_equal(cu->p_cuGraphLaunch(e[i], streams[i]), CUDA_SUCCESS);
    sync_all();
    *graph = (now_us() - t0) / (20.0 * replays);
    expect_all(bytes, (uint32_t)bytes + 1, 0);
    for (int i = 0; i < n; i++) {
        cu->p_cuGraphExecDestroy(e[i]);
        cu->p_cuGraphDestroy(g[i]);
    }
}

static void test_graph_and_time(void **state)
{
    psc_allreduce_t *ar = NULL;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, 1u << 20, &ar), PSC_OK);
    for (size_t bytes = 8; bytes <= (1u << 20); bytes *= 4) {
        double eager, graph;

        time_calls(ar, bytes, &eager, &graph);
        printf("allgather %d rank%s %7zu B per rank: eager %.2f us per call, graph replay %.2f us per call\n", n,
               n == 1 ? "" : "s", bytes, eager, graph);
    }
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_exact),
    cmocka_unit_test(test_pieces_and_wrap),
    cmocka_unit_test(test_graph_and_time),
};

PSC_GPU_TEST_MAIN_SETUP(tests, setup)
