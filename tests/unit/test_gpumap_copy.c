/*
 * The copies through a CPU mapping (gpumap/wc_copy.c), byte for byte on
 * ordinary memory: every size 0..300 at every source and destination
 * alignment 0..63, and large sizes, at every level the CPU runs (the plain
 * scalar path on every CPU; SSE2 and AVX on x86_64), each direction, with
 * the bytes around the destination left as they were.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpumap/wc_copy.h"

#define PAD 64
#define MAXN 300
#define ALIGNS 64

typedef void (*copy_fn)(void *, const void *, size_t, psc_wc_level_t);

/* A pattern that differs at every offset up to 2^32 and between the source and the poison. */
static void fill(unsigned char *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;

    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        p[i] = (unsigned char)(x >> 11);
    }
}

/* Every size and alignment pair at one level; 0 when every copy was exact. */
static int sweep(copy_fn copy, psc_wc_level_t level)
{
    static unsigned char src[MAXN + 2 * PAD + ALIGNS] __attribute__((aligned(64)));
    static unsigned char dst[MAXN + 2 * PAD + ALIGNS] __attribute__((aligned(64)));
    static unsigned char want[sizeof(dst)], poison[sizeof(dst) + 256];
    int bad = 0;

    fill(src, sizeof(src), 1);
    fill(poison, sizeof(poison), 2);
    for (size_t n = 0; n <= MAXN; n++)
        for (size_t sa = 0; sa < ALIGNS; sa++)
            for (size_t da = 0; da < ALIGNS; da++) {
                /* a poison that shifts from case to case, so no stale byte passes as the right one */
                memcpy(dst, poison + (n * 7 + sa * 3 + da) % 256, sizeof(dst));
                memcpy(want, dst, sizeof(dst));
                memcpy(want + PAD + da, src + sa, n);
                copy(dst + PAD + da, src + sa, n, level);
                if (memcmp(dst, want, sizeof(dst)) != 0 && bad++ < 5)
                    print_error("level %d: %zu bytes from alignment %zu to %zu differ\n", (int)level, n, sa, da);
            }
    return bad;
}

static void test_write_every_size_and_alignment(void **state)
{
    (void)state;
    for (int level = PSC_WC_PLAIN; level <= (int)psc__wc_best(); level++)
        assert_int_equal(sweep(psc__wc_write, (psc_wc_level_t)level), 0);
}

static void test_read_every_size_and_alignment(void **state)
{
    (void)state;
    for (int level = PSC_WC_PLAIN; level <= (int)psc__wc_best(); level++)
        assert_int_equal(sweep(psc__wc_read, (psc_wc_level_t)level), 0);
}

/* Sizes across many 64-byte runs and page boundaries, odd offsets on both sides. */
static void test_large(void **state)
{
    static const size_t sizes[] = {4096, 4097, 65535, 65536 + 63, 1 << 20, (1 << 20) + 4093};
    size_t cap = (1 << 20) + 4093 + 2 * PAD;
    unsigned char *src = malloc(cap), *dst = malloc(cap), *want = malloc(cap);
    copy_fn fns[] = {psc__wc_write, psc__wc_read};

    (void)state;
    assert_non_null(src);
    assert_non_null(dst);
    assert_non_null(want);
    fill(src, cap, 9);
    for (int level = PSC_WC_PLAIN; level <= (int)psc__wc_best(); level++)
        for (size_t f = 0; f < 2; f++)
            for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
                for (size_t off = 0; off < 3; off++) {
                    size_t sa = off * 13, da = off * 29 + 3;

                    fill(dst, cap, (uint32_t)(i + 100));
                    memcpy(want, dst, cap);
                    memcpy(want + da, src + sa, sizes[i]);
                    fns[f](dst + da, src + sa, sizes[i], (psc_wc_level_t)level);
                    assert_memory_equal(dst, want, cap);
                }
    free(src);
    free(dst);
    free(want);
}

/* A level above the CPU's is capped, not run: the copy is still exact. */
static void test_level_capped(void **state)
{
    unsigned char src[200], dst[200];

    (void)state;
    fill(src, sizeof(src), 5);
    memset(dst, 0, sizeof(dst));
    psc__wc_write(dst + 1, src + 3, 190, (psc_wc_level_t)(PSC_WC_AVX + 1));
    assert_memory_equal(dst + 1, src + 3, 190);
#if defined(__x86_64__)
    assert_true(psc__wc_best() >= PSC_WC_SSE2); /* SSE2 is part of x86_64: CI tests a vector path */
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_every_size_and_alignment),
        cmocka_unit_test(test_read_every_size_and_alignment),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_level_capped),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
