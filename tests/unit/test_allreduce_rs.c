/*
 * psc_allreduce_reduce_scatter on the fake driver, whose one-shot kernel runs the same protocol on the CPU
 * (one thread per rank): each rank's part of the exact sums, bit for bit, for each type, in and out of place,
 * parts of every length (whole vectors or not, so parts that start off a 16-byte boundary), calls larger than
 * a slot in pieces, reduce-scatters and all-reduces interleaved on one group (the buffers rotate through both),
 * parts from 4 MiB by the copy engines (each peer's part pushed into its scratch, each rank's own summed there;
 * forced in small chunks, between all-reduces on the same path), and the refusals.
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

#define PART_MAX 4096                   /* the group's max_bytes: a part's */
#define BIG ((8u << 20) / 4 + 5)        /* floats per part of a call of two pieces */
#define AR_FIXTURE_BYTES ((size_t)3 * (BIG * 4 + 64))
#include "ar_fixture.h"

/* Rank i's input: N parts of count elements, element e coll_values.h's exact input of rank i at e. */
static void fill(int dt, size_t count, uint32_t seed)
{
    for (int i = 0; i < N; i++)
        for (size_t e = 0; e < N * count; e++) {
            uint64_t b = psc__coll_to_bits(dt, (double)psc__coll_input(PSC_OP_SUM, dt, N, i, e, seed));

            memcpy((unsigned char *)(uintptr_t)sendb[i] + e * esize(dt), &b, esize(dt));
        }
}

/* Rank i's output at out[i]: the exact sums of part i, bit for bit; out of place, the byte after it untouched. */
static void expect_part(int dt, size_t count, uint32_t seed, void *const *out, int in_place)
{
    for (int i = 0; i < N; i++)
        for (size_t j = 0; j < count; j++) {
            uint64_t want = psc__coll_to_bits(dt, psc__coll_reduced(PSC_OP_SUM, dt, N, (uint64_t)i * count + j, seed));
            uint64_t got = 0;

            memcpy(&got, (const unsigned char *)out[i] + j * esize(dt), esize(dt));
            if (got != want)
                fail_msg("type %d count %zu %s rank %d element %zu: 0x%llx, expected 0x%llx", dt, count,
                         in_place ? "in place" : "out of place", i, j, (unsigned long long)got,
                         (unsigned long long)want);
            if (!in_place && j + 1 == count)
                assert_int_equal(((const unsigned char *)out[i])[count * esize(dt)], 0xA5);
        }
}

static void reduce_scatter(psc_allreduce_t *ar, int dt, size_t count, uint32_t seed, int in_place)
{
    void *r[N];
    const void *s[N];

    fill(dt, count, seed);
    for (int i = 0; i < N; i++) {
        memset((void *)(uintptr_t)recvb[i], 0xA5, count * esize(dt) + 16);
        s[i] = (const void *)(uintptr_t)sendb[i];
        r[i] = in_place ? (void *)(uintptr_t)(sendb[i] + (uint64_t)i * count * esize(dt)) : (void *)(uintptr_t)recvb[i];
    }
    if (psc_allreduce_reduce_scatter(ar, r, s, count, dt, streams, 5000) != PSC_OK)
        fail_msg("psc_allreduce_reduce_scatter: %s", psc_context_last_error(g_ctx));
    sync_all();
    expect_part(dt, count, seed, r, in_place);
}

static void test_every_type_and_length(void **state)
{
    static const int types[] = {PSC_AR_FLOAT32, PSC_AR_FLOAT16, PSC_AR_BFLOAT16};
    static const size_t counts[] = {1, 3, 4, 7, 8, 9, 100, 513};
    psc_allreduce_t *ar = NULL;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, PART_MAX, &ar), PSC_OK);
    for (size_t t = 0; t < 3; t++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
            for (int in_place = 0; in_place < 2; in_place++)
                reduce_scatter(ar, types[t], counts[c], (uint32_t)(t * 100 + c), in_place);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* Parts larger than the 8 MiB slot go through it in pieces; calls of one piece before and after. */
static void test_pieces(void **state)
{
    static const size_t counts[] = {BIG, 100, (8u << 20) / 4, 3};
    psc_allreduce_t *ar = NULL;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, (size_t)BIG * 4, &ar), PSC_OK);
    assert_int_equal(psc__allreduce_force(ar, 1), PSC_OK); /* the kernel's pieces, not the copy engines */
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        reduce_scatter(ar, PSC_AR_FLOAT32, counts[c], (uint32_t)c, (int)(c % 2));
        assert_int_equal(psc_allreduce_last_way(ar), PSC_AR_WAY_ONESHOT);
    }
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* Reduce-scatters and all-reduces of mixed sizes back to back on one group: every result exact. */
static void test_interleaved_with_allreduce(void **state)
{
    psc_allreduce_t *ar = NULL;
    uint32_t rng = 12345;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, PART_MAX, &ar), PSC_OK);
    for (int k = 0; k < 60; k++) {
        size_t count = 1 + (rng = rng * 1103515245u + 12345u) % (PART_MAX / 4);

        if (k % 3 == 1) {
            void *r[N];
            const void *s[N];

            fill(PSC_AR_FLOAT32, count, (uint32_t)k); /* its first count elements are each rank's input */
            for (int i = 0; i < N; i++) {
                r[i] = (void *)(uintptr_t)recvb[i];
                s[i] = (const void *)(uintptr_t)sendb[i];
            }
            assert_int_equal(psc_allreduce_sum(ar, r, s, count, PSC_AR_FLOAT32, streams, 5000), PSC_OK);
            sync_all();
            for (int i = 0; i < N; i++)
                for (size_t j = 0; j < count; j += 7) {
                    float want = (float)psc__coll_reduced(PSC_OP_SUM, PSC_AR_FLOAT32, N, j, (uint32_t)k), got;

                    memcpy(&got, (const unsigned char *)r[i] + 4 * j, 4);
                    if (memcmp(&got, &want, 4))
                        fail_msg("all-reduce %d count %zu rank %d element %zu: %g, expected %g", k, count, i, j, got,
                                 want);
                }
        } else {
            reduce_scatter(ar, PSC_AR_FLOAT32, count, (uint32_t)k, k % 2);
        }
    }
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* A group made for 4 MiB parts: parts of 4 MiB by the copy engines, in and out of place; 1 MiB, and 4 MiB less
   one element (not whole vectors), by the kernel; every part exact. */
static void test_copy_engines_by_size(void **state)
{
    static const struct {
        size_t count;
        int in_place, way;
    } calls[] = {{1u << 20, 0, PSC_AR_WAY_COPY_ENGINES}, {1u << 20, 1, PSC_AR_WAY_COPY_ENGINES},
                 {1u << 18, 0, PSC_AR_WAY_ONESHOT}, {(1u << 20) + 3, 1, PSC_AR_WAY_ONESHOT}};
    psc_allreduce_t *ar = NULL;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, (4u << 20) + 64, &ar), PSC_OK);
    for (size_t c = 0; c < sizeof(calls) / sizeof(calls[0]); c++) {
        reduce_scatter(ar, PSC_AR_FLOAT32, calls[c].count, (uint32_t)c, calls[c].in_place);
        assert_int_equal(psc_allreduce_last_way(ar), calls[c].way);
    }
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* The copy engines forced, in chunks of 1 KiB (the slots' halves taken in turn many times), for every type,
   between all-reduces on the same path: every result exact. */
static void test_copy_engines_chunks(void **state)
{
    static const int types[] = {PSC_AR_FLOAT32, PSC_AR_FLOAT16, PSC_AR_BFLOAT16};
    static const size_t counts[] = {8, 256, 1000, 4096, 12008};
    psc_allreduce_t *ar = NULL;

    (void)state;
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, 4u << 20, &ar), PSC_OK);
    assert_int_equal(psc__allreduce_force(ar, 3), PSC_OK);
    assert_int_equal(psc__allreduce_ce_chunk(ar, 1024), PSC_OK);
    for (size_t t = 0; t < 3; t++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            reduce_scatter(ar, types[t], counts[c], (uint32_t)(t * 10 + c), (int)((t + c) % 2));
            assert_int_equal(psc_allreduce_last_way(ar), PSC_AR_WAY_COPY_ENGINES);
            if (c % 2 == 0) { /* an all-reduce of the same path between */
                void *r[N];
                const void *s[N];

                fill(PSC_AR_FLOAT32, counts[c], (uint32_t)c); /* its first count elements: each rank's input */
                for (int i = 0; i < N; i++) {
                    r[i] = (void *)(uintptr_t)recvb[i];
                    s[i] = (const void *)(uintptr_t)sendb[i];
                }
                assert_int_equal(psc_allreduce_sum(ar, r, s, counts[c], PSC_AR_FLOAT32, streams, 5000), PSC_OK);
                sync_all();
                for (int i = 0; i < N; i++)
                    for (size_t j = 0; j < counts[c]; j += 5) {
                        float want = (float)psc__coll_reduced(PSC_OP_SUM, PSC_AR_FLOAT32, N, j, (uint32_t)c), got;

                        memcpy(&got, (const unsigned char *)r[i] + 4 * j, 4);
                        if (memcmp(&got, &want, 4))
                            fail_msg("all-reduce count %zu rank %d element %zu: %g, expected %g", counts[c], i, j,
                                     got, want);
                    }
            }
        }
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

static void refused(psc_allreduce_t *ar, void *const *r, const void *const *s, size_t count, const char *phrase)
{
    assert_int_equal(psc_allreduce_reduce_scatter(ar, r, s, count, PSC_AR_FLOAT32, streams, 0), PSC_ERR_INVALID);
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
    r[1] = (void *)(uintptr_t)(recvb[1] + 4);
    refused(ar, r, s, 8, "rank 1's buffers: accepted 16-byte aligned device addresses (recv: or send's part");
    r[1] = (void *)(uintptr_t)(sendb[1] + 16); /* inside send, not rank 1's part (at 8 x 4 B) */
    refused(ar, r, s, 8, "rank 1's buffers overlap: accepted recv at send's part of this rank");
    r[1] = (void *)(uintptr_t)(sendb[1] + 80); /* in send's last part, rank 2's */
    refused(ar, r, s, 8, "rank 1's buffers overlap");
    r[1] = (void *)(uintptr_t)(sendb[1] + 96); /* just past send's 3 x 8 floats: apart */
    assert_int_equal(psc_allreduce_reduce_scatter(ar, r, s, 8, PSC_AR_FLOAT32, streams, 0), PSC_OK);
    sync_all();
    assert_int_equal(psc_allreduce_reduce_scatter(ar, r, s, 8, PSC_DT_INT32, streams, 0), PSC_ERR_INVALID);
    assert_int_equal(psc_allreduce_reduce_scatter(NULL, r, s, 8, PSC_AR_FLOAT32, streams, 0), PSC_ERR_INVALID);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_type_and_length),
        cmocka_unit_test(test_pieces),
        cmocka_unit_test(test_interleaved_with_allreduce),
        cmocka_unit_test(test_copy_engines_by_size),
        cmocka_unit_test(test_copy_engines_chunks),
        cmocka_unit_test(test_refusals),
    };

    return cmocka_run_group_tests(tests, setup, psc_test_close_ctx);
}
