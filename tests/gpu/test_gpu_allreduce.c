/*
 * psc_allreduce_* on the machine's GPUs (every GPU one rank; one rank on a
 * machine with one): exact sums, bit-identical on every rank, for each type,
 * in and out of place, sizes with tails; the reduce-scatter, bit for bit, between all-reduces; 20000
 * back-to-back calls of mixed
 * sizes with every 100th checked (300 with PSC_TEST_QUICK set, for
 * compute-sanitizer); a CUDA graph of calls replayed; and the
 * time per call (eager and replayed) for 8 B to 32 KiB, printed; with two
 * GPUs or more, large calls by the copy engines and the one-shot kernel,
 * timed (8 MiB to 512 MiB), and reduce-scatters of large parts by each; with PSC_TEST_AR_CE_CAPTURED=1, the copy engines'
 * path captured as it was before issue 32 (how long each graph launch takes).
 * Skipped only without a driver or GPU.
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

#define MAXB (1u << 20)
#include "gpu_ar_fixture.h"

static void fill(int dt, size_t count, uint32_t seed)
{
    for (int r = 0; r < n; r++) {
        for (size_t j = 0; j < count; j++) {
            uint64_t b = psc__coll_to_bits(dt, (double)psc__coll_input(PSC_OP_SUM, dt, n, r, j, seed));

            memcpy(host + j * esize(dt), &b, esize(dt));
        }
        assert_int_equal(psc__gpu_use(g_ctx, r), PSC_OK);
        assert_int_equal(g_ctx->cu.p_cuMemcpyHtoD(sendb[r], host, count * esize(dt)), CUDA_SUCCESS);
        /* a pageable copy returns once staged: wait for it before the group's non-blocking streams read */
        assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(NULL), CUDA_SUCCESS);
    }
}

static void expect_sums(int dt, size_t count, uint32_t seed, CUdeviceptr *out)
{
    for (int r = 0; r < n; r++) {
        assert_int_equal(psc__gpu_use(g_ctx, r), PSC_OK);
        assert_int_equal(g_ctx->cu.p_cuMemcpyDtoH(host, out[r], count * esize(dt)), CUDA_SUCCESS);
        for (size_t j = 0; j < count; j++) {
            uint64_t want = psc__coll_to_bits(dt, psc__coll_reduced(PSC_OP_SUM, dt, n, j, seed)), got = 0;

            memcpy(&got, host + j * esize(dt), esize(dt));
            if (got != want)
                fail_msg("type %d count %zu rank %d element %zu: 0x%llx, expected 0x%llx", dt, count, r, j,
                         (unsigned long long)got, (unsigned long long)want);
        }
    }
}

static void sum(psc_allreduce_t *ar, CUdeviceptr *out, int dt, size_t count)
{
    void *r[MAXR];
    const void *s[MAXR];

    for (int i = 0; i < n; i++) {
        r[i] = (void *)(uintptr_t)out[i];
        s[i] = (const void *)(uintptr_t)sendb[i];
    }
    if (psc_allreduce_sum(ar, r, s, count, dt, streams, 5000) != PSC_OK)
        fail_msg("psc_allreduce_sum: %s", psc_context_last_error(g_ctx));
}

/* Rank i's input of a reduce-scatter: n parts of count elements, element e coll_values.h's input of rank i at e. */
static void fill_parts(int dt, size_t count, uint32_t seed)
{
    for (int r = 0; r < n; r++) {
        for (size_t e = 0; e < (size_t)n * count; e++) {
            uint64_t b = psc__coll_to_bits(dt, (double)psc__coll_input(PSC_OP_SUM, dt, n, r, e, seed));

            memcpy(host + e * esize(dt), &b, esize(dt));
        }
        assert_int_equal(psc__gpu_use(g_ctx, r), PSC_OK);
        assert_int_equal(g_ctx->cu.p_cuMemcpyHtoD(sendb[r], host, (size_t)n * count * esize(dt)), CUDA_SUCCESS);
        assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(NULL), CUDA_SUCCESS);
    }
}

/*
 * psc_allreduce_reduce_scatter: each rank's part of the exact sums, bit for bit, every type, parts of every
 * length (so parts off a 16-byte boundary, and in place outputs there), in and out of place, between
 * all-reduces on the same group.
 */
static void test_reduce_scatter(void **state)
{
    static const int types[] = {PSC_AR_FLOAT32, PSC_AR_FLOAT16, PSC_AR_BFLOAT16};
    static const size_t counts[] = {1, 3, 8, 9, 1000, 4099, 16384};
    psc_allreduce_t *ar = NULL;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, MAXB, &ar), PSC_OK);
    for (size_t t = 0; t < 3; t++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
            for (int in_place = 0; in_place < 2; in_place++) {
                const size_t part = counts[c] * esize(types[t]);
                uint32_t seed = (uint32_t)(t * 100 + c);
                void *r[MAXR];
                const void *s[MAXR];

                fill_parts(types[t], counts[c], seed);
                for (int i = 0; i < n; i++) {
                    s[i] = (const void *)(uintptr_t)sendb[i];
                    r[i] = (void *)(uintptr_t)(in_place ? sendb[i] + i * part : recvb[i]);
                }
                if (psc_allreduce_reduce_scatter(ar, r, s, counts[c], types[t], streams, 5000) != PSC_OK)
                    fail_msg("psc_allreduce_reduce_scatter: %s", psc_context_last_error(g_ctx));
                sync_all();
                for (int i = 0; i < n; i++) {
                    assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
                    assert_int_equal(g_ctx->cu.p_cuMemcpyDtoH(host, (CUdeviceptr)(uintptr_t)r[i], part), CUDA_SUCCESS);
                    for (size_t j = 0; j < counts[c]; j++) {
                        uint64_t want = psc__coll_to_bits(types[t], psc__coll_reduced(PSC_OP_SUM, types[t], n,
                                                                                      i * counts[c] + j, seed));
                        uint64_t got = 0;

                        memcpy(&got, host + j * esize(types[t]), esize(types[t]));
                        if (got != want)
                            fail_msg("type %d count %zu %s rank %d element %zu: 0x%llx, expected 0x%llx", types[t],
                                     counts[c], in_place ? "in place" : "out of place", i, j,
                                     (unsigned long long)got, (unsigned long long)want);
                    }
                }
                fill(types[t], counts[c], seed); /* an all-reduce between: the buffers rotate through both */
                sum(ar, recvb, types[t], counts[c]);
                sync_all();
                expect_sums(types[t], counts[c], seed, recvb);
            }
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* Every type and size on each kernel (the one-shot, the two-shot), in and out of place. */
static void test_sums(void **state)
{
    static const int types[] = {PSC_AR_FLOAT32, PSC_AR_FLOAT16, PSC_AR_BFLOAT16};
    static const size_t counts[] = {1, 3, 8, 9, 1000, 4099, 65536, 262144};
    psc_allreduce_t *ar = NULL;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, MAXB, &ar), PSC_OK);
    for (size_t t = 0; t < 6; t++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            uint32_t seed = (uint32_t)(t * 100 + c);

            assert_int_equal(psc__allreduce_force(ar, t < 3 ? 1 : 2), PSC_OK);
            fill(types[t % 3], counts[c], seed);
            sum(ar, recvb, types[t % 3], counts[c]);
            sync_all();
            expect_sums(types[t % 3], counts[c], seed, recvb);
            sum(ar, sendb, types[t % 3], counts[c]); /* in place */
            sync_all();
            expect_sums(types[t % 3], counts[c], seed, sendb);
        }
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* 20000 calls of mixed sizes back to back (PSC_TEST_QUICK: 300, for the sanitizers), every 100th checked. */
static void test_many_calls(void **state)
{
    psc_allreduce_t *ar = NULL;
    uint32_t x = 777;
    int calls = getenv("PSC_TEST_QUICK") ? 300 : 20000;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, MAXB, &ar), PSC_OK);
    for (int k = 0; k < calls; k++) {
        size_t count;

        x = x * 1103515245u + 12345u;
        count = 1 + (x >> 8) % (k % 7 == 0 ? MAXB / 4 : 8192);
        if (k % 100 == 99) {
            sync_all();
            fill(PSC_AR_FLOAT32, count, (uint32_t)k);
        }
        sum(ar, recvb, PSC_AR_FLOAT32, count);
        if (k % 100 == 99) {
            sync_all();
            expect_sums(PSC_AR_FLOAT32, count, (uint32_t)k, recvb);
        }
    }
    sync_all();
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* Each rank's input and output buffers of a test, `bytes` each. */
static void alloc_pairs(CUdeviceptr *in, CUdeviceptr *out, size_t bytes)
{
    for (int i = 0; i < n; i++) {
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        assert_int_equal(g_ctx->cu.p_cuMemAlloc(&in[i], bytes), CUDA_SUCCESS);
        assert_int_equal(g_ctx->cu.p_cuMemAlloc(&out[i], bytes), CUDA_SUCCESS);
    }
}

/* Each rank's input and output buffers of a test, freed. */
static void free_pairs(CUdeviceptr *in, CUdeviceptr *out)
{
    for (int i = 0; i < n; i++) {
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        g_ctx->cu.p_cuMemFree(in[i]);
        g_ctx->cu.p_cuMemFree(out[i]);
    }
}

/* Calls beyond the 8 MiB slot in pieces, in and out of place, then small ones again: exact everywhere. */
static void calls_in_pieces(int algo)
{
    static const size_t counts[] = {(40u << 20) / 4, (8u << 20) / 4 + 3, 77, (16u << 20) / 4};
    const size_t most = 40u << 20;
    CUdeviceptr in[MAXR], out[MAXR];
    unsigned char *h = malloc(most);
    psc_allreduce_t *ar = NULL;

    assert_non_null(h);
    alloc_pairs(in, out, most);
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, most, &ar), PSC_OK);
    assert_int_equal(psc__allreduce_force(ar, algo), PSC_OK);
    for (size_t c = getenv("PSC_TEST_QUICK") ? 1 : 0; c < sizeof(counts) / sizeof(counts[0]) - (getenv("PSC_TEST_QUICK") ? 1 : 0); c++)
        for (int inplace = 0; inplace < 2; inplace++) {
            void *r[MAXR];
            const void *s[MAXR];

            for (int i = 0; i < n; i++) {
                for (size_t j = 0; j < counts[c]; j++) {
                    float f = (float)psc__coll_input(PSC_OP_SUM, PSC_AR_FLOAT32, n, i, j, (uint32_t)c);

                    memcpy(h + 4 * j, &f, 4);
                }
                assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
                assert_int_equal(g_ctx->cu.p_cuMemcpyHtoD(in[i], h, counts[c] * 4), CUDA_SUCCESS);
                assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(NULL), CUDA_SUCCESS);
                r[i] = (void *)(uintptr_t)(inplace ? in[i] : out[i]);
                s[i] = (const void *)(uintptr_t)in[i];
            }
            if (psc_allreduce_sum(ar, r, s, counts[c], PSC_AR_FLOAT32, streams, 5000) != PSC_OK)
                fail_msg("psc_allreduce_sum: %s", psc_context_last_error(g_ctx));
            sync_all();
            for (int i = 0; i < n; i++) {
                assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
                assert_int_equal(g_ctx->cu.p_cuMemcpyDtoH(h, (CUdeviceptr)(uintptr_t)r[i], counts[c] * 4),
                                 CUDA_SUCCESS);
                for (size_t j = 0; j < counts[c]; j++) {
                    float want = (float)psc__coll_reduced(PSC_OP_SUM, PSC_AR_FLOAT32, n, j, (uint32_t)c), got;

                    memcpy(&got, h + 4 * j, 4);
                    if (memcmp(&got, &want, 4))
                        fail_msg("kernel %d count %zu %s rank %d element %zu: %g, expected %g", algo, counts[c],
                                 inplace ? "in place" : "out of place", i, j, got, want);
                }
            }
        }
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
    free_pairs(in, out);
    free(h);
}

static void test_calls_in_pieces(void **state)
{
    (void)state;
    calls_in_pieces(1); /* the one-shot */
    calls_in_pieces(2); /* the two-shot */
    if (n >= 2)
        calls_in_pieces(3); /* the copy engines (a group of one rank has no such path) */
}

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

/* A graph of 20 launches of a kernel that does nothing (psc_ar_fill of 0 words) on GPU 0, replayed: µs each. */
static double empty_kernel_us(void)
{
    psc_cuda_t *cu = &g_ctx->cu;
    CUdeviceptr p = recvb[0];
    uint64_t words = 0;
    unsigned value = 0;
    void *params[] = {&p, &words, &value};
    CUgraph g;
    CUgraphExec e;
    double t0;

    assert_int_equal(psc__gpu_use(g_ctx, 0), PSC_OK);
    assert_int_equal(cu->p_cuStreamBeginCapture(streams[0], CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
    for (int k = 0; k < 20; k++)
        assert_int_equal(psc__launch_on(g_ctx, streams[0], g_ctx->gpu[0].fn_ar_fill, 1, 32, params), PSC_OK);
    assert_int_equal(cu->p_cuStreamEndCapture(streams[0], &g), CUDA_SUCCESS);
    assert_int_equal(cu->p_cuGraphInstantiateWithFlags(&e, g, 0), CUDA_SUCCESS);
    for (int w = 0; w < 5; w++)
        assert_int_equal(cu->p_cuGraphLaunch(e, streams[0]), CUDA_SUCCESS);
    sync_all();
    t0 = now_us();
    for (int l = 0; l < 50; l++)
        assert_int_equal(cu->p_cuGraphLaunch(e, streams[0]), CUDA_SUCCESS);
    sync_all();
    t0 = (now_us() - t0) / 1000;
    cu->p_cuGraphExecDestroy(e);
    cu->p_cuGraphDestroy(g);
    return t0;
}

/* Calls of `bytes` eager and replayed from a graph of 20 per rank's stream (its sums checked): µs per call. */
static void time_calls(psc_allreduce_t *ar, size_t bytes, double *eager, double *graph)
{
    const int quick = getenv("PSC_TEST_QUICK") != NULL; /* under the sanitizers: the same calls, fewer of them */
    const int calls = quick ? 20 : 1000, replays = quick ? 2 : 50;
    psc_cuda_t *cu = &g_ctx->cu;
    size_t count = bytes / 4;
    CUgraph g[MAXR];
    CUgraphExec e[MAXR];
    double t0;

    fill(PSC_AR_FLOAT32, count, (uint32_t)bytes);
    for (int w = 0; w < calls / 20; w++)
        sum(ar, recvb, PSC_AR_FLOAT32, count);
    sync_all();
    t0 = now_us();
    for (int k = 0; k < calls; k++)
        sum(ar, recvb, PSC_AR_FLOAT32, count);
    sync_all();
    *eager = (now_us() - t0) / calls;
    fill(PSC_AR_FLOAT32, count, (uint32_t)bytes + 1); /* the graph's calls' inputs, checked after */
    for (int i = 0; i < n; i++) {
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        assert_int_equal(cu->p_cuStreamBeginCapture(streams[i], CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
    }
    for (int k = 0; k < 20; k++)
        sum(ar, recvb, PSC_AR_FLOAT32, count);
    for (int i = 0; i < n; i++) { /* every capture ended before any graph is instantiated (the driver's rule) */
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        assert_int_equal(cu->p_cuStreamEndCapture(streams[i], &g[i]), CUDA_SUCCESS);
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(cu->p_cuGraphInstantiateWithFlags(&e[i], g[i], 0), CUDA_SUCCESS);
    for (int l = 0; l < 5; l++) /* the graphs' first replays load them */
        for (int i = 0; i < n; i++)
            assert_int_equal(cu->p_cuGraphLaunch(e[i], streams[i]), CUDA_SUCCESS);
    sync_all();
    t0 = now_us();
    for (int l = 0; l < replays; l++)
        for (int i = 0; i < n; i++)
            assert_int_equal(cu->p_cuGraphLaunch(e[i], streams[i]), CUDA_SUCCESS);
    sync_all();
    *graph = (now_us() - t0) / (20.0 * replays);
    expect_sums(PSC_AR_FLOAT32, count, (uint32_t)bytes + 1, recvb);
    for (int i = 0; i < n; i++) {
        cu->p_cuGraphExecDestroy(e[i]);
        cu->p_cuGraphDestroy(g[i]);
    }
}

/* Graphs of 20 calls per rank's stream, replayed: checked after, timed beside eager calls, with the kernels
   launched early (programmatic dependent launches, where the GPU has them) and plainly. */
static void test_graph_and_time(void **state)
{
    psc_allreduce_t *ar = NULL;

    (void)state;
    printf("an empty kernel (the floor of any kernel's call), graph replay: %.2f us per launch\n", empty_kernel_us());
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, MAXB, &ar), PSC_OK);
    for (size_t bytes = 8; bytes <= 65536; bytes *= 2) {
        double eager[2], graph[2];

        for (int early = 1; early >= 0; early--) {
            assert_int_equal(psc__allreduce_early(ar, early), PSC_OK);
            time_calls(ar, bytes, &eager[early], &graph[early]);
        }
        printf("allreduce %d rank%s %6zu B: eager %.2f us per call, graph replay %.2f us per call (plain launches: "
               "eager %.2f, graph %.2f)\n", n, n == 1 ? "" : "s", bytes, eager[1], graph[1], eager[0], graph[0]);
    }
    for (size_t bytes = 16384; !getenv("PSC_TEST_QUICK") && bytes <= 65536; bytes *= 2) /* grids of fewer blocks,
                                                                                          more vectors per thread */
        for (unsigned v = 2; v <= 8; v *= 2) {
            double eager, graph;

            assert_int_equal(psc__allreduce_per_thread(ar, v), PSC_OK);
            time_calls(ar, bytes, &eager, &graph);
            printf("allreduce %d rank%s %6zu B, grid for %u vectors per thread: eager %.2f us, graph replay %.2f us\n",
                   n, n == 1 ? "" : "s", bytes, v, eager, graph);
        }
    assert_int_equal(psc__allreduce_per_thread(ar, 1), PSC_OK);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/*
 * The copy-engine path checked in full after every call: 64 KiB chunks (the slots taken in turn many times), in
 * place, sizes varying, each call's inputs new; then calls chained on their own sums (with 2 ranks each doubles
 * them, exact): a chunk read before its copy landed, or a slot overwritten while read, gives a wrong element.
 */
static void test_copy_engine_checked(void **state)
{
    const size_t most = 4u << 20;
    CUdeviceptr in[MAXR], out[MAXR];
    unsigned char *h = malloc(most);
    psc_allreduce_t *ar = NULL;
    int calls = getenv("PSC_TEST_QUICK") ? 3 : 12;

    (void)state;
    if (n < 2) {
        free(h);
        printf("copy-engine path: one GPU, not taken\n");
        return;
    }
    assert_non_null(h);
    alloc_pairs(in, out, most);
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, most, &ar), PSC_OK);
    assert_int_equal(psc__allreduce_force(ar, 3), PSC_OK);
    assert_int_equal(psc__allreduce_ce_chunk(ar, 65536), PSC_OK);
    for (int k = 0; k < calls; k++) {
        size_t count = most / 4 - (size_t)k * 9973;
        int chained = n == 2 ? 3 : 0;
        void *r[MAXR];

        for (int i = 0; i < n; i++) {
            for (size_t j = 0; j < count; j++) {
                float f = (float)psc__coll_input(PSC_OP_SUM, PSC_AR_FLOAT32, n, i, j, (uint32_t)k);

                memcpy(h + 4 * j, &f, 4);
            }
            assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
            assert_int_equal(g_ctx->cu.p_cuMemcpyHtoD(in[i], h, count * 4), CUDA_SUCCESS);
            assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(NULL), CUDA_SUCCESS);
            r[i] = (void *)(uintptr_t)in[i];
        }
        for (int c = 0; c <= chained; c++)
            if (psc_allreduce_sum(ar, r, (const void *const *)r, count, PSC_AR_FLOAT32, streams, 5000) != PSC_OK)
                fail_msg("psc_allreduce_sum: %s", psc_context_last_error(g_ctx));
        sync_all();
        for (int i = 0; i < n; i++) {
            assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
            assert_int_equal(g_ctx->cu.p_cuMemcpyDtoH(h, in[i], count * 4), CUDA_SUCCESS);
            for (size_t j = 0; j < count; j++) {
                float want = (float)(psc__coll_reduced(PSC_OP_SUM, PSC_AR_FLOAT32, n, j, (uint32_t)k) *
                                     (double)(1u << chained)), got;

                memcpy(&got, h + 4 * j, 4);
                if (memcmp(&got, &want, 4))
                    fail_msg("call %d (%zu elements, %d chained) rank %d element %zu: %g, expected %g", k, count,
                             chained, i, j, got, want);
            }
        }
    }
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
    free_pairs(in, out);
    free(h);
}

/* After a part of time_big: a rank that gave up fails the test naming the calls that part made. */
static void check_part(psc_allreduce_t *ar, const char *what, const char *part)
{
    if (psc_allreduce_check(ar) != PSC_OK)
        fail_msg("%s, %s: %s", what, part, psc_context_last_error(g_ctx));
}

typedef psc_status_t (*ar_call_fn)(psc_allreduce_t *, void *const *, const void *const *, size_t, int,
                                   struct CUstream_st *const *, unsigned);

/* warm + reps eager calls of `call` (fp32, count elements), every stream waited for: µs per call of the last reps
   (0 without any). */
static double eager_calls(ar_call_fn call, const char *name, psc_allreduce_t *ar, void *const *r, const void *const *s,
                          size_t count, int warm, int reps)
{
    double t0 = 0;

    for (int k = 0; k < warm + reps; k++) {
        if (k == warm) {
            sync_all();
            t0 = now_us();
        }
        if (call(ar, r, s, count, PSC_AR_FLOAT32, streams, 5000) != PSC_OK)
            fail_msg("%s: %s", name, psc_context_last_error(g_ctx));
    }
    sync_all();
    return reps ? (now_us() - t0) / reps : 0;
}

/* Calls of `bytes` (count fp32 elements from in, into out) eager and from a graph of 5 replayed: µs per call. */

static void time_big(psc_allreduce_t *ar, CUdeviceptr *in, CUdeviceptr *out, size_t count, int reps, double *eager,
                     double *graph, const char *what)
{
    psc_cuda_t *cu = &g_ctx->cu;
    void *r[MAXR];
    const void *s[MAXR];
    CUgraph g[MAXR];
    CUgraphExec e[MAXR];
    double t0 = 0;

    for (int i = 0; i < n; i++) {
        r[i] = (void *)(uintptr_t)out[i];
        s[i] = (const void *)(uintptr_t)in[i];
    }
    *eager = eager_calls(psc_allreduce_sum, "psc_allreduce_sum", ar, r, s, count, 2, reps);
    check_part(ar, what, "eager calls");
    for (int i = 0; i < n; i++) {
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        assert_int_equal(cu->p_cuStreamBeginCapture(streams[i], CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
    }
    for (int k = 0; k < 5; k++)
        if (psc_allreduce_sum(ar, r, s, count, PSC_AR_FLOAT32, streams, 5000) != PSC_OK)
            fail_msg("psc_allreduce_sum (captured): %s", psc_context_last_error(g_ctx));
    for (int i = 0; i < n; i++) { /* every capture ended before any graph is instantiated (the driver's rule) */
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        assert_int_equal(cu->p_cuStreamEndCapture(streams[i], &g[i]), CUDA_SUCCESS);
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(cu->p_cuGraphInstantiateWithFlags(&e[i], g[i], 0), CUDA_SUCCESS);
    for (int i = 0; i < n; i++)
        assert_int_equal(cu->p_cuGraphLaunch(e[i], streams[i]), CUDA_SUCCESS);
    sync_all();
    t0 = now_us();
    for (int l = 0; l < (reps + 4) / 5; l++)
        for (int i = 0; i < n; i++)
            assert_int_equal(cu->p_cuGraphLaunch(e[i], streams[i]), CUDA_SUCCESS);
    sync_all();
    *graph = (now_us() - t0) / (5.0 * ((reps + 4) / 5));
    check_part(ar, what, "graph replays");
    for (int i = 0; i < n; i++) {
        cu->p_cuGraphExecDestroy(e[i]);
        cu->p_cuGraphDestroy(g[i]);
    }
}

/*
 * Large calls (8 MiB to 512 MiB; 8 MiB with PSC_TEST_QUICK) by the copy engines and by the one-shot kernel,
 * eager and replayed from graphs, the last call's sums checked; busbw printed (2 (n-1) / n x bytes / time),
 * and at the largest size the copy engines' chunk from 1 to 8 MiB. Two GPUs or more.
 */
static void test_large_calls(void **state)
{
    const int quick = getenv("PSC_TEST_QUICK") != NULL;
    const size_t most = quick ? 8u << 20 : 512u << 20;
    CUdeviceptr in[MAXR], out[MAXR];
    unsigned char *h = malloc(most);
    psc_allreduce_t *ar = NULL;

    (void)state;
    if (n < 2) {
        free(h);
        printf("large calls: one GPU, no copy-engine path to time\n");
        return;
    }
    assert_non_null(h);
    alloc_pairs(in, out, most);
    for (int i = 0; i < n; i++) {
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        for (size_t j = 0; j < most / 4; j++) {
            float f = (float)psc__coll_input(PSC_OP_SUM, PSC_AR_FLOAT32, n, i, j, 5);

            memcpy(h + 4 * j, &f, 4);
        }
        assert_int_equal(g_ctx->cu.p_cuMemcpyHtoD(in[i], h, most), CUDA_SUCCESS);
    }
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, most, &ar), PSC_OK);
    for (size_t bytes = 8u << 20; bytes <= most; bytes *= 4) {
        for (int algo = 3; algo >= 1; algo -= 2) {
            const int reps = bytes >= (256u << 20) ? 10 : 40;
            double eager, graph, f = 2.0 * (n - 1) / n * (double)bytes / 1e3;
            char what[96];

            snprintf(what, sizeof(what), "%zu MiB by the %s", bytes >> 20,
                     algo == 3 ? "copy engines" : "one-shot kernel");
            assert_int_equal(psc__allreduce_force(ar, algo), PSC_OK);
            time_big(ar, in, out, bytes / 4, quick ? 2 : reps, &eager, &graph, what);
            printf("allreduce %d ranks %4zu MiB by the %s: eager %.1f us (busbw %.1f GB/s), graph replay %.1f us "
                   "(busbw %.1f GB/s)\n", n, bytes >> 20, algo == 3 ? "copy engines" : "one-shot kernel", eager,
                   f / eager, graph, f / graph);
            for (int i = 0; i < n; i++) {
                assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
                assert_int_equal(g_ctx->cu.p_cuMemcpyDtoH(h, out[i], bytes), CUDA_SUCCESS);
                for (size_t j = 0; j < bytes / 4; j += 997) {
                    float want = (float)psc__coll_reduced(PSC_OP_SUM, PSC_AR_FLOAT32, n, j, 5), got;

                    memcpy(&got, h + 4 * j, 4);
                    if (memcmp(&got, &want, 4))
                        fail_msg("way %d %zu B rank %d element %zu: %g, expected %g", algo, bytes, i, j, got, want);
                }
            }
        }
        if (bytes * 4 > most)
            for (uint64_t chunk = 1u << 20; !quick && chunk <= (8u << 20) / (n - 1); chunk *= 2) {
                double eager, graph, f = 2.0 * (n - 1) / n * (double)bytes / 1e3;
                char what[96];

                snprintf(what, sizeof(what), "%zu MiB by the copy engines in %llu MiB chunks", bytes >> 20,
                         (unsigned long long)(chunk >> 20));
                assert_int_equal(psc__allreduce_force(ar, 3), PSC_OK);
                assert_int_equal(psc__allreduce_ce_chunk(ar, chunk), PSC_OK);
                time_big(ar, in, out, bytes / 4, 10, &eager, &graph, what);
                printf("allreduce %d ranks %4zu MiB by the copy engines, %2llu MiB chunks: eager busbw %.1f GB/s, "
                       "graph replay %.1f GB/s\n", n, bytes >> 20, (unsigned long long)(chunk >> 20), f / eager,
                       f / graph);
            }
    }
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
    free_pairs(in, out);
    free(h);
}

/*
 * Reduce-scatters of large parts (4 MiB to 64 MiB; 4 MiB with PSC_TEST_QUICK) by the copy engines (by size) and
 * by the kernel (forced), eager, out of place and in place: each rank's part exact (sampled), the way the group
 * says it took, busbw printed ((n - 1) x part / time, nccl-tests' for a reduce-scatter). Two GPUs or more.
 */
static void test_reduce_scatter_large(void **state)
{
    const size_t most = getenv("PSC_TEST_QUICK") ? 4u << 20 : 64u << 20;
    CUdeviceptr in[MAXR], out[MAXR];
    unsigned char *h;
    psc_allreduce_t *ar = NULL;

    (void)state;
    if (n < 2) {
        printf("large reduce-scatters: one GPU, no copy-engine path to time\n");
        return;
    }
    assert_non_null(h = malloc((size_t)n * most));
    alloc_pairs(in, out, (size_t)n * most);
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, most, &ar), PSC_OK);
    for (size_t part = 4u << 20; part <= most; part *= 4)
        for (int k = 0; k < 4; k++) {
            const int by_copy = k < 2, in_place = k % 2, reps = part >= (64u << 20) ? 10 : 30;
            const size_t count = part / 4;
            void *r[MAXR];
            const void *s[MAXR];
            double us;

            for (int i = 0; i < n; i++) {
                for (size_t e = 0; e < (size_t)n * count; e++) {
                    float f = (float)psc__coll_input(PSC_OP_SUM, PSC_AR_FLOAT32, n, i, e, (uint32_t)k);

                    memcpy(h + 4 * e, &f, 4);
                }
                assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
                assert_int_equal(g_ctx->cu.p_cuMemcpyHtoD(in[i], h, (size_t)n * part), CUDA_SUCCESS);
                assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(NULL), CUDA_SUCCESS);
                s[i] = (const void *)(uintptr_t)in[i];
                r[i] = (void *)(uintptr_t)(in_place ? in[i] + (size_t)i * part : out[i]);
            }
            assert_int_equal(psc__allreduce_force(ar, by_copy ? 0 : 1), PSC_OK);
            /* in place, a second call would sum its own part again: one call, checked, not timed */
            us = eager_calls(psc_allreduce_reduce_scatter, "psc_allreduce_reduce_scatter", ar, r, s, count,
                             in_place ? 1 : 2, in_place ? 0 : reps);
            check_part(ar, by_copy ? "reduce-scatter by the copy engines" : "reduce-scatter by the kernel",
                       in_place ? "in place" : "out of place");
            assert_int_equal(psc_allreduce_last_way(ar), by_copy ? PSC_AR_WAY_COPY_ENGINES : PSC_AR_WAY_ONESHOT);
            for (int i = 0; i < n; i++) {
                assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
                assert_int_equal(g_ctx->cu.p_cuMemcpyDtoH(h, (CUdeviceptr)(uintptr_t)r[i], part), CUDA_SUCCESS);
                for (size_t j = 0; j < count; j += 991) {
                    float want = (float)psc__coll_reduced(PSC_OP_SUM, PSC_AR_FLOAT32, n, (uint64_t)i * count + j,
                                                          (uint32_t)k), got;

                    memcpy(&got, h + 4 * j, 4);
                    if (memcmp(&got, &want, 4))
                        fail_msg("reduce-scatter of %zu B parts by the %s, %s, rank %d element %zu: %g, expected %g",
                                 part, by_copy ? "copy engines" : "kernel", in_place ? "in place" : "out of place", i,
                                 j, got, want);
                }
            }
            if (!in_place)
                printf("reduce-scatter %d ranks %3zu MiB parts by the %s: eager %.1f us (busbw %.1f GB/s)\n", n,
                       part >> 20, by_copy ? "copy engines" : "kernel", us, (double)(n - 1) * (double)part / 1e3 / us);
        }
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
    free_pairs(in, out);
    free(h);
}

/*
 * Issue 32's diagnosis, with PSC_TEST_AR_CE_CAPTURED=1 (else it says so and passes): what the copy-engine path
 * did when calls were captured (now they go by the kernels), 512 MiB in 1 MiB chunks, 5 calls in a graph per
 * GPU, each graph launched from this thread in turn with a 2 s timeout; prints how long each cuGraphLaunch took
 * and whether a rank gave up. A first launch that returns only after about 2 s says the driver did not queue
 * GPU 0's graph before GPU 0 progressed, which needed GPU 1's graph: the hang the kernels route avoids.
 */
static void test_captured_copy_engines(void **state)
{
    const size_t bytes = 512u << 20;
    CUdeviceptr in[MAXR], out[MAXR];
    psc_cuda_t *cu = &g_ctx->cu;
    psc_allreduce_t *ar = NULL;
    CUgraph g[MAXR];
    CUgraphExec e[MAXR];
    void *r[MAXR];
    const void *s[MAXR];

    (void)state;
    if (n != 2 || !getenv("PSC_TEST_AR_CE_CAPTURED")) {
        printf("captured copy engines: not asked (PSC_TEST_AR_CE_CAPTURED=1, two GPUs)\n");
        return;
    }
    alloc_pairs(in, out, bytes);
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, bytes, &ar), PSC_OK);
    assert_int_equal(psc__allreduce_force(ar, 3), PSC_OK);
    assert_int_equal(psc__allreduce_ce_chunk(ar, 1u << 20), PSC_OK);
    assert_int_equal(psc__allreduce_ce_captured(ar, 1), PSC_OK);
    for (int i = 0; i < n; i++) {
        r[i] = (void *)(uintptr_t)out[i];
        s[i] = (const void *)(uintptr_t)in[i];
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        assert_int_equal(cu->p_cuStreamBeginCapture(streams[i], CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
    }
    for (int k = 0; k < 5; k++)
        if (psc_allreduce_sum(ar, r, s, bytes / 4, PSC_AR_FLOAT32, streams, 2000) != PSC_OK)
            fail_msg("psc_allreduce_sum (captured): %s", psc_context_last_error(g_ctx));
    for (int i = 0; i < n; i++) {
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        assert_int_equal(cu->p_cuStreamEndCapture(streams[i], &g[i]), CUDA_SUCCESS);
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(cu->p_cuGraphInstantiateWithFlags(&e[i], g[i], 0), CUDA_SUCCESS);
    for (int l = 0; l < 3; l++) {
        double t[MAXR];

        for (int i = 0; i < n; i++) {
            double t0 = now_us();

            assert_int_equal(cu->p_cuGraphLaunch(e[i], streams[i]), CUDA_SUCCESS);
            t[i] = now_us() - t0;
        }
        sync_all();
        printf("captured copy engines, launch %d: cuGraphLaunch GPU 0 %.0f us, GPU 1 %.0f us; %s\n", l, t[0], t[1],
               psc_allreduce_check(ar) == PSC_OK ? "no rank gave up" : psc_context_last_error(g_ctx));
    }
    for (int i = 0; i < n; i++) {
        cu->p_cuGraphExecDestroy(e[i]);
        cu->p_cuGraphDestroy(g[i]);
    }
    psc_allreduce_destroy(ar);
    free_pairs(in, out);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_sums),
    cmocka_unit_test(test_reduce_scatter),
    cmocka_unit_test(test_many_calls),
    cmocka_unit_test(test_calls_in_pieces),
    cmocka_unit_test(test_graph_and_time),
    cmocka_unit_test(test_copy_engine_checked),
    cmocka_unit_test(test_large_calls),
    cmocka_unit_test(test_reduce_scatter_large),
    cmocka_unit_test(test_captured_copy_engines),
};

PSC_GPU_TEST_MAIN_SETUP(tests, setup)
