/*
 * psc_allreduce_all_gather on the fake driver, whose all-gather kernel runs the same protocol on the CPU (one
 * thread per rank): every rank gets every rank's part byte for byte, words equal to the all-reduce's sentinel
 * and NaNs of every payload included, for each type, in and out of place, parts of every length (so parts that
 * start off a 16-byte boundary), calls in many pieces (a small piece set for the test) across the buffers'
 * turns and across the piece number's wrap, all-gathers, all-reduces and reduce-scatters interleaved on one
 * group, a rank that never calls (the others give up, and say which rank and call), and the refusals.
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
#include "coll/coll_values.h"
#include "fake_context.h"
#include "internal.h"

#define PART_MAX 4096 /* the group's max_bytes: a part's */
#define AR_FIXTURE_BYTES ((size_t)3 * PART_MAX + 64)
#include "ar_fixture.h"

/* Byte b of rank i's part in a call seeded seed: every fourth 32-bit word the sentinel, others NaNs or noise. */
static unsigned char part_byte(int i, size_t b, uint32_t seed)
{
    static const uint32_t words[] = {PSC_AR_SENTINEL, 0x7fc00001u, 0xffc00000u, PSC_AR_NAN_WORD};
    uint32_t w = (b / 4) % 4 == 0 ? words[(b / 16 + (size_t)i + seed) % 4]
                                  : (uint32_t)((b / 4) * 2654435761u ^ ((uint32_t)i * 40503u + seed * 977u));

    return (unsigned char)(w >> (8 * (b % 4)));
}

/* Every rank's out[i]: n parts of len bytes, part r rank r's bytes; out of place, the byte after them untouched. */
static void expect_all(size_t len, uint32_t seed, void *const *out, int in_place, const char *what)
{
    for (int i = 0; i < N; i++) {
        const unsigned char *o = out[i];

        for (int r = 0; r < N; r++)
            for (size_t b = 0; b < len; b++)
                if (o[(size_t)r * len + b] != part_byte(r, b, seed))
                    fail_msg("%s: %zu B %s rank %d's part %d byte %zu: 0x%02x, expected 0x%02x", what, len,
                             in_place ? "in place" : "out of place", i, r, b, o[(size_t)r * len + b],
                             part_byte(r, b, seed));
        if (!in_place)
            assert_int_equal(o[(size_t)N * len], 0xA5);
    }
}

/* One all-gather of count elements of dt, every rank's result checked. */
static void all_gather(psc_allreduce_t *ar, int dt, size_t count, uint32_t seed, int in_place)
{
    const size_t len = count * esize(dt);
    void *r[N];
    const void *s[N];

    for (int i = 0; i < N; i++) {
        unsigned char *rb = (unsigned char *)(uintptr_t)recvb[i], *part = in_place ? rb + (size_t)i * len
                                                                                   : (unsigned char *)(uintptr_t)sendb[i];

        memset(rb, 0xA5, (size_t)N * len + 16);
        for (size_t b = 0; b < len; b++)
            part[b] = part_byte(i, b, seed);
        s[i] = part;
        r[i] = rb;
    }
    if (psc_allreduce_all_gather(ar, r, s, count, dt, streams, 5000) != PSC_OK)
        fail_msg("psc_allreduce_all_gather: %s", psc_context_last_error(g_ctx));
    sync_all();
    assert_int_equal(psc_allreduce_last_way(ar), PSC_AR_WAY_ONESHOT);
    expect_all(len, seed, r, in_place, "all-gather");
}

static void test_every_type_and_length(void **state)
{
    static const int types[] = {PSC_AR_FLOAT32, PSC_AR_FLOAT16, PSC_AR_BFLOAT16};
    static const size_t counts[] = {1, 2, 3, 4, 5, 7, 8, 9, 100, 513, 1024};
    psc_allreduce_t *ar = NULL;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, PART_MAX, &ar), PSC_OK);
    for (size_t t = 0; t < 3; t++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
            for (int in_place = 0; in_place < 2; in_place++)
                if (counts[c] * esize(types[t]) <= PART_MAX)
                    all_gather(ar, types[t], counts[c], (uint32_t)(t * 100 + c), in_place);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* Pieces of 64 B: calls of one to many pieces, the last short or whole, through every buffer's turn. */
static void test_pieces(void **state)
{
    static const size_t counts[] = {100, 16, 3, 17, 1000, 48, 1};
    psc_allreduce_t *ar = NULL;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, PART_MAX, &ar), PSC_OK);
    assert_int_equal(psc__allreduce_ag_piece(ar, 24), PSC_ERR_INVALID);   /* not a multiple of 16 */
    assert_int_equal(psc__allreduce_ag_piece(ar, 4112), PSC_ERR_INVALID); /* over the group's 4096 B */
    assert_int_equal(psc__allreduce_ag_piece(ar, 64), PSC_OK);
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
        all_gather(ar, PSC_AR_FLOAT32, counts[c], (uint32_t)c, (int)(c % 2));
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* The piece number wraps at PSC_AG_MOD (every rank's at once, as after 4 billion pieces): calls across it. */
static void test_piece_number_wraps(void **state)
{
    psc_allreduce_t *ar = NULL;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, PART_MAX, &ar), PSC_OK);
    assert_int_equal(psc__allreduce_ag_piece(ar, 64), PSC_OK);
    all_gather(ar, PSC_AR_FLOAT32, 40, 1, 0); /* numbers 0..2 used: their flags in the buffers */
    for (int i = 0; i < N; i++) {
        uint64_t lbuf, ctrl, slot;

        assert_int_equal(psc__allreduce_buffers(ar, i, &lbuf, &ctrl, &slot), PSC_OK);
        ((psc_ar_ctrl_t *)(uintptr_t)ctrl)->ag = PSC_AG_MOD - 2;
    }
    for (uint32_t k = 0; k < 6; k++)
        all_gather(ar, PSC_AR_FLOAT32, 16 + 8 * k, 10 + k, (int)(k % 2));
    for (int i = 0; i < N; i++) {
        uint64_t lbuf, ctrl, slot;

        assert_int_equal(psc__allreduce_buffers(ar, i, &lbuf, &ctrl, &slot), PSC_OK);
        assert_true(((psc_ar_ctrl_t *)(uintptr_t)ctrl)->ag < 64); /* wrapped, not past PSC_AG_MOD */
    }
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* All-gathers, all-reduces and reduce-scatters of mixed sizes back to back on one group: every result exact. */
static void test_interleaved(void **state)
{
    psc_allreduce_t *ar = NULL;
    uint32_t rng = 777;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, PART_MAX, &ar), PSC_OK);
    for (int k = 0; k < 45; k++) {
        size_t count = 1 + (rng = rng * 1103515245u + 12345u) % (PART_MAX / 4);
        void *r[N];
        const void *s[N];

        if (k % 3 == 0) {
            all_gather(ar, PSC_AR_FLOAT32, count, (uint32_t)k, k % 2);
            continue;
        }
        for (int i = 0; i < N; i++) {
            r[i] = (void *)(uintptr_t)recvb[i];
            s[i] = (const void *)(uintptr_t)sendb[i];
            for (size_t e = 0; e < (size_t)N * count; e++) {
                float f = (float)psc__coll_input(PSC_OP_SUM, PSC_AR_FLOAT32, N, i, e, (uint32_t)k);

                memcpy((unsigned char *)(uintptr_t)sendb[i] + 4 * e, &f, 4);
            }
        }
        if (k % 3 == 1)
            assert_int_equal(psc_allreduce_sum(ar, r, s, count, PSC_AR_FLOAT32, streams, 5000), PSC_OK);
        else
            assert_int_equal(psc_allreduce_reduce_scatter(ar, r, s, count, PSC_AR_FLOAT32, streams, 5000), PSC_OK);
        sync_all();
        for (int i = 0; i < N; i++)
            for (size_t j = 0; j < count; j += 5) {
                uint64_t at = k % 3 == 1 ? j : (uint64_t)i * count + j;
                float want = (float)psc__coll_reduced(PSC_OP_SUM, PSC_AR_FLOAT32, N, at, (uint32_t)k), got;

                memcpy(&got, (const unsigned char *)r[i] + 4 * j, 4);
                if (memcmp(&got, &want, 4))
                    fail_msg("call %d count %zu rank %d element %zu: %g, expected %g", k, count, i, j, got, want);
            }
    }
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* Every rank's recv of n parts of len bytes at out[i] (device memory the fake maps), checked as expect_all does. */
static void expect_big(CUdeviceptr *out, size_t len, uint32_t seed)
{
    void *r[N];

    for (int i = 0; i < N; i++)
        r[i] = (void *)(uintptr_t)out[i];
    expect_all(len, seed, r, 0, "all-gather by the copy engines");
}

/*
 * A group made for 4 MiB parts: a part of 4 MiB goes by the copy engines (each rank's copies into every peer's recv,
 * events between the streams), every byte as sent, in and out of place; a part of 1 MiB by the kernel.
 */
static void test_copy_engines(void **state)
{
    const size_t part = 4u << 20, all = N * part + 16;
    CUdeviceptr big_send[N], big_recv[N];
    psc_allreduce_t *ar = NULL;

    (void)state;
    for (int i = 0; i < N; i++) {
        assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
        assert_int_equal(g_ctx->cu.p_cuMemAlloc(&big_send[i], part), CUDA_SUCCESS);
        assert_int_equal(g_ctx->cu.p_cuMemAlloc(&big_recv[i], all), CUDA_SUCCESS);
    }
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, part, &ar), PSC_OK);
    for (int c = 0; c < 3; c++) {
        const size_t len = c == 2 ? part / 4 : part;
        const int in_place = c == 1;
        void *r[N];
        const void *s[N];

        for (int i = 0; i < N; i++) {
            unsigned char *rb = (unsigned char *)(uintptr_t)big_recv[i];
            unsigned char *p = in_place ? rb + (size_t)i * len : (unsigned char *)(uintptr_t)big_send[i];

            memset(rb, 0xA5, all);
            for (size_t b = 0; b < len; b++)
                p[b] = part_byte(i, b, (uint32_t)c);
            s[i] = p;
            r[i] = rb;
        }
        if (psc_allreduce_all_gather(ar, r, s, len / 4, PSC_AR_FLOAT32, streams, 5000) != PSC_OK)
            fail_msg("psc_allreduce_all_gather: %s", psc_context_last_error(g_ctx));
        sync_all();
        assert_int_equal(psc_allreduce_last_way(ar), c == 2 ? PSC_AR_WAY_ONESHOT : PSC_AR_WAY_COPY_ENGINES);
        expect_big(big_recv, len, (uint32_t)c);
    }
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
    for (int i = 0; i < N; i++) {
        g_ctx->cu.p_cuMemFree(big_send[i]);
        g_ctx->cu.p_cuMemFree(big_recv[i]);
    }
}

/* Ranks 0 and 1 call, rank 2 never does (a group of 3 in this process, rank 2's call made on a group of its
   own): the two give up after the timeout, and psc_allreduce_check names the rank and the call. */
static void test_missing_rank_times_out(void **state)
{
    psc_allreduce_t *ar = NULL;
    uint64_t lbuf, ctrl, slot;
    void *r[N];
    const void *s[N];

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, PART_MAX, &ar), PSC_OK);
    all_gather(ar, PSC_AR_FLOAT32, 8, 1, 0);
    assert_int_equal(psc__allreduce_buffers(ar, 2, &lbuf, &ctrl, &slot), PSC_OK);
    ((psc_ar_ctrl_t *)(uintptr_t)ctrl)->err = PSC_AR_ERR_TIMEOUT; /* rank 2 dead: its kernel does nothing */
    ((psc_ar_ctrl_t *)(uintptr_t)ctrl)->err_rank = 0;
    for (int i = 0; i < N; i++) {
        r[i] = (void *)(uintptr_t)recvb[i];
        s[i] = (const void *)(uintptr_t)sendb[i];
    }
    assert_int_equal(psc_allreduce_all_gather(ar, r, s, 8, PSC_AR_FLOAT32, streams, 200), PSC_OK);
    sync_all();
    assert_int_equal(psc_allreduce_check(ar), PSC_ERR_TIMEOUT);
    if (!strstr(psc_context_last_error(g_ctx), "rank 0 (GPU 0) gave up waiting for rank 2's data in call 2"))
        fail_msg("%s", psc_context_last_error(g_ctx));
    psc_allreduce_destroy(ar);
}

static void refused(psc_allreduce_t *ar, void *const *r, const void *const *s, size_t count, const char *phrase)
{
    assert_int_equal(psc_allreduce_all_gather(ar, r, s, count, PSC_AR_FLOAT32, streams, 0), PSC_ERR_INVALID);
    if (!strstr(psc_context_last_error(g_ctx), phrase))
        fail_msg("'%s' lacks '%s'", psc_context_last_error(g_ctx), phrase);
}

static void test_refusals(void **state)
{
    psc_allreduce_t *ar = NULL;
    void *r[N];
    const void *s[N];

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, PART_MAX, &ar), PSC_OK);
    for (int i = 0; i < N; i++) {
        r[i] = (void *)(uintptr_t)recvb[i];
        s[i] = (const void *)(uintptr_t)sendb[i];
    }
    refused(ar, r, s, PART_MAX / 4 + 1, "accepted up to the group's 4096 B per part");
    s[1] = (const void *)(uintptr_t)(sendb[1] + 4);
    refused(ar, r, s, 8, "rank 1's buffers: accepted 16-byte aligned device addresses (send: or recv's part");
    s[1] = (const void *)(uintptr_t)(recvb[1] + 16); /* inside recv, not rank 1's part (at 8 x 4 B) */
    refused(ar, r, s, 8, "rank 1's buffers overlap: accepted send at recv's part of this rank");
    s[1] = (const void *)(uintptr_t)(recvb[1] + 80); /* in recv's last part, rank 2's */
    refused(ar, r, s, 8, "rank 1's buffers overlap");
    s[1] = (const void *)(uintptr_t)(recvb[1] + 36); /* rank 1's part of 9 floats, off a 16-byte boundary: in place */
    assert_int_equal(psc_allreduce_all_gather(ar, r, s, 9, PSC_AR_FLOAT32, streams, 0), PSC_OK);
    sync_all();
    s[1] = (const void *)(uintptr_t)(recvb[1] + 96); /* just past recv's 3 x 8 floats: apart */
    assert_int_equal(psc_allreduce_all_gather(ar, r, s, 8, PSC_AR_FLOAT32, streams, 0), PSC_OK);
    sync_all();
    r[0] = (void *)(uintptr_t)(recvb[0] + 8);
    refused(ar, r, s, 8, "rank 0's buffers: accepted 16-byte aligned device addresses");
    assert_int_equal(psc_allreduce_all_gather(ar, r, s, 8, PSC_DT_INT32, streams, 0), PSC_ERR_INVALID);
    assert_int_equal(psc_allreduce_all_gather(NULL, r, s, 8, PSC_AR_FLOAT32, streams, 0), PSC_ERR_INVALID);
    r[0] = (void *)(uintptr_t)recvb[0];
    assert_int_equal(psc_allreduce_all_gather(ar, r, s, 0, PSC_AR_FLOAT32, streams, 0), PSC_OK); /* nothing */
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_type_and_length),
        cmocka_unit_test(test_pieces),
        cmocka_unit_test(test_piece_number_wraps),
        cmocka_unit_test(test_interleaved),
        cmocka_unit_test(test_copy_engines),
        cmocka_unit_test(test_missing_rank_times_out),
        cmocka_unit_test(test_refusals),
    };

    return cmocka_run_group_tests(tests, setup, psc_test_close_ctx);
}
