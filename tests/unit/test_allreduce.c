/*
 * psc_allreduce_* on the fake driver, whose one-shot kernel runs the same
 * protocol on the CPU (one thread per rank, the ranks' buffers in shared host
 * memory): exact sums on every rank, bit-identical, for each type, in and out
 * of place, sizes with tails; hundreds of calls of mixed sizes through the
 * four rotating buffers; an input word equal to the sentinel; the refusals;
 * the caller's peer access and context as they were.
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

#include "allreduce/allreduce.h"
#include "allreduce/ar_args.h"
#include "coll/coll_values.h"
#include "fake_context.h"
#include "internal.h"

#define MAXB 4096
#define AR_FIXTURE_BYTES MAXB
#include "ar_fixture.h"

/* Rank r's input: coll_values.h's exact inputs for a sum over N ranks, seed s. */
static void fill(int dt, size_t count, uint32_t seed)
{
    for (int r = 0; r < N; r++) {
        unsigned char *p = (unsigned char *)(uintptr_t)sendb[r];

        for (size_t j = 0; j < count; j++) {
            uint64_t b = psc__coll_to_bits(dt, (double)psc__coll_input(PSC_OP_SUM, dt, N, r, j, seed));

            memcpy(p + j * esize(dt), &b, esize(dt));
        }
    }
}

/* Every rank's output is the exact sum, bit for bit, and nothing past count was written. */
static void expect_sums(int dt, size_t count, uint32_t seed, CUdeviceptr *out, unsigned char guard)
{
    for (int r = 0; r < N; r++) {
        const unsigned char *p = (const unsigned char *)(uintptr_t)out[r];

        for (size_t j = 0; j < count; j++) {
            uint64_t want = psc__coll_to_bits(dt, psc__coll_reduced(PSC_OP_SUM, dt, N, j, seed)), got = 0;

            memcpy(&got, p + j * esize(dt), esize(dt));
            if (got != want)
                fail_msg("type %d count %zu rank %d element %zu: 0x%llx, expected 0x%llx", dt, count, r, j,
                         (unsigned long long)got, (unsigned long long)want);
        }
        if (count * esize(dt) < MAXB && out == recvb)
            assert_int_equal(p[count * esize(dt)], guard);
    }
}

static void sum(psc_allreduce_t *ar, CUdeviceptr *out, int dt, size_t count)
{
    void *r[N];
    const void *s[N];

    for (int i = 0; i < N; i++) {
        r[i] = (void *)(uintptr_t)out[i];
        s[i] = (const void *)(uintptr_t)sendb[i];
    }
    if (psc_allreduce_sum(ar, r, s, count, dt, streams, 5000) != PSC_OK)
        fail_msg("psc_allreduce_sum: %s", psc_context_last_error(g_ctx));
}

static void test_sums_every_type(void **state)
{
    static const int types[] = {PSC_AR_FLOAT32, PSC_AR_FLOAT16, PSC_AR_BFLOAT16};
    static const size_t counts[] = {1, 3, 4, 7, 8, 9, 100, 513};
    psc_allreduce_t *ar = NULL;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, MAXB, &ar), PSC_OK);
    for (size_t t = 0; t < 3; t++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            uint32_t seed = (uint32_t)(t * 100 + c);

            fill(types[t], counts[c], seed);
            for (int i = 0; i < N; i++)
                memset((void *)(uintptr_t)recvb[i], 0xA5, MAXB);
            sum(ar, recvb, types[t], counts[c]); /* out of place */
            sync_all();
            expect_sums(types[t], counts[c], seed, recvb, 0xA5);
            sum(ar, sendb, types[t], counts[c]); /* in place: send is recv */
            sync_all();
            expect_sums(types[t], counts[c], seed, sendb, 0);
        }
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/*
 * After a call has ended everywhere, the two buffers it did not use hold nothing but the sentinel on every
 * rank (the one it used is set back by the next call), and the call count moved on by one.
 */
static void expect_rotation(const psc_allreduce_t *ar, unsigned calls)
{
    for (int r = 0; r < N; r++) {
        uint64_t lbuf, ctrl, slot;
        const psc_ar_ctrl_t *c;
        unsigned used;

        assert_int_equal(psc__allreduce_buffers(ar, r, &lbuf, &ctrl, &slot), PSC_OK);
        c = (const psc_ar_ctrl_t *)(uintptr_t)ctrl;
        assert_int_equal(c->seq, calls);
        assert_int_equal(c->buf, calls % PSC_AR_BUFS);
        used = (c->buf + PSC_AR_BUFS - 1) % PSC_AR_BUFS;
        for (unsigned b = 0; b < PSC_AR_BUFS; b++) {
            const uint32_t *w = (const uint32_t *)(uintptr_t)(lbuf + (uint64_t)b * N * slot);

            for (uint64_t k = 0; b != used && k < N * slot / 4; k++)
                if (w[k] != PSC_AR_SENTINEL)
                    fail_msg("after call %u: rank %d's buffer %u word %llu is 0x%x, not the sentinel", calls, r, b,
                             (unsigned long long)k, w[k]);
        }
    }
}

/* Calls of mixed sizes one after another: the buffers rotate and each is set back, whatever its last size. */
static void test_mixed_sizes_back_to_back(void **state)
{
    psc_allreduce_t *ar = NULL;
    uint32_t x = 12345;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, MAXB, &ar), PSC_OK);
    for (int k = 0; k < 300; k++) {
        size_t count;

        x = x * 1103515245u + 12345u;
        count = 1 + (x >> 8) % (MAXB / 4 - 1); /* a guard byte after it */
        fill(PSC_AR_FLOAT32, count, (uint32_t)k);
        for (int i = 0; i < N; i++)
            memset((void *)(uintptr_t)recvb[i], 0xA5, MAXB);
        sum(ar, recvb, PSC_AR_FLOAT32, count);
        sync_all();
        expect_sums(PSC_AR_FLOAT32, count, (uint32_t)k, recvb, 0xA5);
        expect_rotation(ar, (unsigned)k + 1);
    }
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* An input word equal to the sentinel is a NaN: its sum is a NaN on every rank, and nobody waits for it. */
static void test_sentinel_input(void **state)
{
    psc_allreduce_t *ar = NULL;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, MAXB, &ar), PSC_OK);
    fill(PSC_AR_FLOAT32, 8, 1);
    memset((unsigned char *)(uintptr_t)sendb[1] + 8, 0xff, 4); /* element 2 of rank 1 */
    sum(ar, recvb, PSC_AR_FLOAT32, 8);
    sync_all();
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    for (int r = 0; r < N; r++) {
        float f;
        uint32_t w0, w;

        memcpy(&f, (unsigned char *)(uintptr_t)recvb[r] + 8, 4);
        assert_true(f != f);
        memcpy(&w0, (unsigned char *)(uintptr_t)recvb[0] + 8, 4);
        memcpy(&w, (unsigned char *)(uintptr_t)recvb[r] + 8, 4);
        assert_int_equal(w, w0); /* bit-identical NaNs */
    }
    psc_allreduce_destroy(ar);
}

/*
 * Calls larger than the 8 MiB slot go through it in pieces: exact sums everywhere, in and out of place, a
 * tail in the last piece, and calls of one piece before and after (each clears what the last left).
 */
static void calls_in_pieces(int algo)
{
    static const size_t counts[] = {(16u << 20) / 4 + 5, 100, (8u << 20) / 4, (8u << 20) / 4 + 1, 3};
    const size_t most = (16u << 20) + 32;
    CUdeviceptr big_in[N], big_out[N];
    psc_allreduce_t *ar = NULL;

    for (int i = 0; i < N; i++) {
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        assert_int_equal(g_ctx->cu.p_cuMemAlloc(&big_in[i], most), CUDA_SUCCESS);
        assert_int_equal(g_ctx->cu.p_cuMemAlloc(&big_out[i], most), CUDA_SUCCESS);
    }
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, most, &ar), PSC_OK);
    assert_int_equal(psc__allreduce_force(ar, algo), PSC_OK);
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
        for (int inplace = 0; inplace < 2; inplace++) {
            void *r[N];
            const void *s[N];

            for (int i = 0; i < N; i++) {
                unsigned char *p = (unsigned char *)(uintptr_t)big_in[i];

                for (size_t j = 0; j < counts[c]; j++) {
                    float f = (float)psc__coll_input(PSC_OP_SUM, PSC_AR_FLOAT32, N, i, j, (uint32_t)c);

                    memcpy(p + 4 * j, &f, 4);
                }
                memset((void *)(uintptr_t)big_out[i], 0x5A, most);
                r[i] = (void *)(uintptr_t)(inplace ? big_in[i] : big_out[i]);
                s[i] = (const void *)(uintptr_t)big_in[i];
            }
            if (psc_allreduce_sum(ar, r, s, counts[c], PSC_AR_FLOAT32, streams, 5000) != PSC_OK)
                fail_msg("psc_allreduce_sum: %s", psc_context_last_error(g_ctx));
            sync_all();
            for (int i = 0; i < N; i++) {
                const unsigned char *p = r[i];

                for (size_t j = 0; j < counts[c]; j++) {
                    float want = (float)psc__coll_reduced(PSC_OP_SUM, PSC_AR_FLOAT32, N, j, (uint32_t)c), got;

                    memcpy(&got, p + 4 * j, 4);
                    if (memcmp(&got, &want, 4))
                        fail_msg("kernel %d count %zu %s rank %d element %zu: %g, expected %g", algo, counts[c],
                                 inplace ? "in place" : "out of place", i, j, got, want);
                }
                if (!inplace)
                    assert_int_equal(p[4 * counts[c]], 0x5A);
            }
        }
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
    for (int i = 0; i < N; i++) {
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        g_ctx->cu.p_cuMemFree(big_in[i]);
        g_ctx->cu.p_cuMemFree(big_out[i]);
    }
}

static void test_calls_in_pieces(void **state)
{
    (void)state;
    calls_in_pieces(1); /* the one-shot */
    calls_in_pieces(2); /* the two-shot */
}

/*
 * The two-shot for every size (parts short and empty: 1 element over 3 ranks), every type, in and out of
 * place; then calls switching kernel at random, each kernel's buffers rotating on their own: all exact.
 */
static void test_twoshot_and_switching(void **state)
{
    static const int types[] = {PSC_AR_FLOAT32, PSC_AR_FLOAT16, PSC_AR_BFLOAT16};
    static const size_t counts[] = {1, 3, 8, 9, 24, 100, 513, 1024};
    psc_allreduce_t *ar = NULL;
    uint32_t x = 99;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, MAXB, &ar), PSC_OK);
    assert_int_equal(psc__allreduce_force(ar, 2), PSC_OK);
    for (size_t t = 0; t < 3; t++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            uint32_t seed = (uint32_t)(t * 100 + c + 7);

            fill(types[t], counts[c], seed);
            for (int i = 0; i < N; i++)
                memset((void *)(uintptr_t)recvb[i], 0xA5, MAXB);
            sum(ar, recvb, types[t], counts[c]);
            sync_all();
            expect_sums(types[t], counts[c], seed, recvb, 0xA5);
            sum(ar, sendb, types[t], counts[c]);
            sync_all();
            expect_sums(types[t], counts[c], seed, sendb, 0);
        }
    for (int k = 0; k < 200; k++) {
        size_t count;
        int algo;
        uint64_t lbuf, ctrl, slot;
        psc_ar_ctrl_t before;

        x = x * 1103515245u + 12345u;
        count = 1 + (x >> 8) % (MAXB / 4 - 1); /* a guard byte after it */
        algo = 1 + (int)((x >> 4) & 1);
        assert_int_equal(psc__allreduce_force(ar, algo), PSC_OK);
        assert_int_equal(psc__allreduce_buffers(ar, 1, &lbuf, &ctrl, &slot), PSC_OK);
        memcpy(&before, (const void *)(uintptr_t)ctrl, sizeof(before));
        fill(PSC_AR_FLOAT32, count, (uint32_t)k);
        for (int i = 0; i < N; i++)
            memset((void *)(uintptr_t)recvb[i], 0xA5, MAXB);
        sum(ar, recvb, PSC_AR_FLOAT32, count);
        sync_all();
        expect_sums(PSC_AR_FLOAT32, count, (uint32_t)k, recvb, 0xA5);
        { /* the kernel asked for ran: its buffer index moved on, the other kernel's did not */
            const psc_ar_ctrl_t *c = (const psc_ar_ctrl_t *)(uintptr_t)ctrl;

            assert_int_equal(c->seq, before.seq + 1);
            assert_int_equal(c->buf, algo == 1 ? (before.buf + 1) % PSC_AR_BUFS : before.buf);
            assert_int_equal(c->buf2, algo == 2 ? (before.buf2 + 1) % PSC_AR_BUFS : before.buf2);
        }
    }
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    assert_int_equal(psc__allreduce_force(ar, 3), PSC_ERR_INVALID);
    psc_allreduce_destroy(ar);
}

static void refused(psc_status_t got, psc_status_t want, const char *phrase)
{
    if (got != want)
        fail_msg("status %d (expected %d) for '%s': %s", got, want, phrase, psc_context_last_error(g_ctx));
    if (!strstr(psc_context_last_error(g_ctx), phrase))
        fail_msg("'%s' lacks '%s'", psc_context_last_error(g_ctx), phrase);
}

static void test_refusals(void **state)
{
    static const int dup[] = {0, 1, 0}, bad[] = {0, 7};
    psc_allreduce_t *ar = (psc_allreduce_t *)(uintptr_t)1;
    void *r[N];
    const void *s[N];
    CUstream nulls[N] = {NULL, NULL, NULL};

    (void)state;
    refused(psc_allreduce_create(g_ctx, devs, 0, MAXB, &ar), PSC_ERR_INVALID, "accepted 1 to 8 GPUs");
    refused(psc_allreduce_create(g_ctx, dup, 3, MAXB, &ar), PSC_ERR_INVALID, "GPU 0 listed twice");
    refused(psc_allreduce_create(g_ctx, bad, 2, MAXB, &ar), PSC_ERR_INVALID, "GPU 7 does not exist");
    refused(psc_allreduce_create(g_ctx, devs, N, 8, &ar), PSC_ERR_INVALID, "accepted 16 B to 1 TiB");
    refused(psc_allreduce_create(g_ctx, devs, N, (size_t)(1ull << 40) + 1, &ar), PSC_ERR_INVALID,
            "accepted 16 B to 1 TiB");
    assert_ptr_equal(ar, (psc_allreduce_t *)(uintptr_t)1);
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, 1000, &ar), PSC_OK);
    for (int i = 0; i < N; i++) {
        r[i] = (void *)(uintptr_t)recvb[i];
        s[i] = (const void *)(uintptr_t)sendb[i];
    }
    refused(psc_allreduce_sum(ar, r, s, 8, 4, streams, 0), PSC_ERR_INVALID, "accepted PSC_AR_FLOAT32");
    refused(psc_allreduce_sum(ar, r, s, 251, PSC_AR_FLOAT32, streams, 0), PSC_ERR_INVALID,
            "accepted up to the group's 1000 B");
    refused(psc_allreduce_sum(ar, r, s, 8, PSC_AR_FLOAT32, nulls, 0), PSC_ERR_INVALID,
            "rank 0's stream: accepted a stream of GPU 0's primary context");
    {
        CUstream swapped[N] = {streams[1], streams[0], streams[2]};

        refused(psc_allreduce_sum(ar, r, s, 8, PSC_AR_FLOAT32, swapped, 0), PSC_ERR_INVALID,
                "rank 0's stream");
    }
    r[1] = (void *)(uintptr_t)(sendb[1] + 16); /* overlaps rank 1's send */
    refused(psc_allreduce_sum(ar, r, s, 8, PSC_AR_FLOAT32, streams, 0), PSC_ERR_INVALID, "rank 1's buffers overlap");
    r[1] = (void *)(uintptr_t)recvb[1];
    r[2] = (unsigned char *)r[2] + 4;
    refused(psc_allreduce_sum(ar, r, s, 8, PSC_AR_FLOAT32, streams, 0), PSC_ERR_INVALID,
            "rank 2's buffers: accepted 16-byte aligned");
    psc_allreduce_destroy(ar);
}

/* The grid: at least one block, at most one per SM; a vector per data thread while the SMs last, no idle block. */
static void test_grid(void **state)
{
    static const uint64_t nvec[] = {0, 1, 511, 512, 513, 2048, 2049, 67584, 67585, 1ull << 40};

    (void)state;
    assert_int_equal(PSC_AR_LANES % 32, 0); /* warps on whole lines: the keeper's warp apart */
    assert_int_equal(PSC_AR_THREADS, PSC_AR_LANES + 32);
    for (size_t i = 0; i < sizeof(nvec) / sizeof(nvec[0]); i++) {
        uint64_t b = psc__ar_blocks(nvec[i], 132), cover = nvec[i] < 132ull * PSC_AR_LANES ? nvec[i] : 132ull * PSC_AR_LANES;

        assert_true(b >= 1 && b <= 132);
        assert_true(b * PSC_AR_LANES >= cover);
        assert_true(b == 1 || (b - 1) * PSC_AR_LANES < nvec[i]);
    }
    assert_int_equal(psc__ar_blocks(1ull << 40, 0), 1);
}

/*
 * On GPUs of compute capability 9.0 (the fake's), each rank's kernel is a programmatic dependent launch
 * (it may start while the work ahead of it finishes: it waits for that itself); a group told otherwise
 * launches plainly, with the same sums.
 */
static void test_early_launches(void **state)
{
    psc_allreduce_t *ar = NULL;
    int before;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, MAXB, &ar), PSC_OK);
    for (int early = 1; early >= 0; early--) {
        assert_int_equal(psc__allreduce_early(ar, early), PSC_OK);
        before = psc_test_fake_count("fake_cuda_early_launches");
        fill(PSC_AR_FLOAT32, 1000, (uint32_t)early);
        for (int i = 0; i < N; i++)
            memset((void *)(uintptr_t)recvb[i], 0xA5, MAXB);
        sum(ar, recvb, PSC_AR_FLOAT32, 1000);
        sync_all();
        expect_sums(PSC_AR_FLOAT32, 1000, (uint32_t)early, recvb, 0xA5);
        assert_int_equal(psc_test_fake_count("fake_cuda_early_launches") - before, early ? N : 0);
    }
    assert_int_equal(psc__allreduce_early(ar, 2), PSC_ERR_INVALID);
    psc_allreduce_destroy(ar);
}

/* A driver that refuses the early launch: plain launches instead, the same sums, and no more tries. */
static void test_early_launch_refused(void **state)
{
    psc_context_t *ctx = NULL;
    psc_allreduce_t *ar = NULL;
    char err[256];
    void *r[N], *s[N];
    CUstream st[N];
    int before, refused;

    (void)state;
    setenv("FAKE_CUDA_NO_EARLY", "1", 1);
    assert_int_equal(psc_context_create(&ctx, err, sizeof(err)), PSC_OK); /* its own: the refusal is remembered */
    assert_int_equal(psc_allreduce_create(ctx, devs, N, MAXB, &ar), PSC_OK);
    for (int i = 0; i < N; i++) {
        r[i] = (void *)(uintptr_t)recvb[i];
        s[i] = (void *)(uintptr_t)sendb[i];
        st[i] = streams[i];
    }
    before = psc_test_fake_count("fake_cuda_early_launches");
    refused = psc_test_fake_count("fake_cuda_early_refused");
    for (int k = 0; k < 2; k++) {
        fill(PSC_AR_FLOAT32, 1000, (uint32_t)k + 7);
        for (int i = 0; i < N; i++)
            memset((void *)(uintptr_t)recvb[i], 0xA5, MAXB);
        if (psc_allreduce_sum(ar, r, (const void *const *)s, 1000, PSC_AR_FLOAT32, st, 5000) != PSC_OK)
            fail_msg("psc_allreduce_sum: %s", psc_context_last_error(ctx));
        sync_all();
        expect_sums(PSC_AR_FLOAT32, 1000, (uint32_t)k + 7, recvb, 0xA5);
    }
    assert_int_equal(psc_test_fake_count("fake_cuda_early_launches"), before);
    assert_int_equal(psc_test_fake_count("fake_cuda_early_refused") - refused, N); /* once per GPU, not per call */
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
    psc_context_destroy(ctx);
    unsetenv("FAKE_CUDA_NO_EARLY");
}

/* Peer access on while the group lives, back as it was after; the caller's context untouched. */
static void test_caller_state(void **state)
{
    int (*peer)(int, int);
    void *(*current)(void);
    void *h = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
    psc_allreduce_t *ar = NULL;
    int was = -1;
    void *before;

    (void)state;
    assert_non_null(h);
    *(void **)&peer = dlsym(h, "fake_cuda_peer");
    *(void **)&current = dlsym(h, "fake_cuda_current");
    dlclose(h);
    assert_int_equal(psc_peer_enable(g_ctx, 1, 0, &was), PSC_OK);
    before = current();
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, MAXB, &ar), PSC_OK);
    assert_ptr_equal(current(), before);
    for (int a = 0; a < N; a++)
        for (int b = 0; b < N; b++)
            if (a != b)
                assert_int_equal(peer(a, b), 1);
    psc_allreduce_destroy(ar);
    assert_ptr_equal(current(), before);
    assert_int_equal(peer(1, 0), 1); /* the caller's */
    assert_int_equal(peer(0, 1), 0);
    assert_int_equal(peer(2, 0), 0);
    assert_int_equal(psc_peer_disable(g_ctx, 1, 0, &was), PSC_OK);
    {
        /* two groups over the same pair: the first destroyed leaves the pair on for the second, which puts it off */
        static const int pair[] = {0, 1};
        psc_allreduce_t *g1 = NULL, *g2 = NULL;

        assert_int_equal(psc_allreduce_create(g_ctx, pair, 2, MAXB, &g1), PSC_OK);
        assert_int_equal(psc_allreduce_create(g_ctx, devs, N, MAXB, &g2), PSC_OK);
        psc_allreduce_destroy(g1);
        assert_int_equal(peer(0, 1), 1);
        assert_int_equal(peer(1, 0), 1);
        psc_allreduce_destroy(g2);
        assert_int_equal(peer(0, 1), 0);
        assert_int_equal(peer(1, 0), 0);
        assert_int_equal(peer(2, 1), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sums_every_type),
        cmocka_unit_test(test_mixed_sizes_back_to_back),
        cmocka_unit_test(test_sentinel_input),
        cmocka_unit_test(test_calls_in_pieces),
        cmocka_unit_test(test_twoshot_and_switching),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_grid),
        cmocka_unit_test(test_early_launches),
        cmocka_unit_test(test_early_launch_refused),
        cmocka_unit_test(test_caller_state),
    };

    return cmocka_run_group_tests(tests, setup, psc_test_close_ctx);
}
