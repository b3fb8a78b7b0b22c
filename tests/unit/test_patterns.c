/*
 * Golden values for every data pattern, the canary and the expected
 * destination byte and word, written from the definitions in the pattern
 * header's comments (not from the implementation's output): the fill and
 * check kernels and the host checker all follow these functions, so a change
 * here changes what every verified copy calls right or wrong. And the one
 * bad-byte fold with its first bad byte at offset 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pattern/check.h"
#include "pattern/pattern.h"

/* splitmix64 as published (Steele, Lea, Flood 2014; Vigna's reference code): a stream from a seed. */
static uint64_t splitmix64_next(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Word w of a RANDOM buffer: output number w + 1 of the stream seeded with the seed. */
static uint64_t stream_word(uint64_t seed, uint64_t w)
{
    uint64_t x = seed, v = 0;

    for (uint64_t k = 0; k <= w; k++)
        v = splitmix64_next(&x);
    return v;
}

static void test_random_is_splitmix64(void **state)
{
    const uint64_t seeds[] = {0, 1, 0x70327073636f7065ull, 0xffffffffffffffffull};

    (void)state;
    /* The published stream for seed 0. */
    assert_int_equal(psc_pattern_mix(0, 0), 0xe220a8397b1dcdafull);
    assert_int_equal(psc_pattern_mix(0, 1), 0x6e789e6aa1b965f4ull);
    assert_int_equal(psc_pattern_mix(0, 2), 0x06c45d188009454full);
    for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++)
        for (uint64_t w = 0; w < 40; w++) {
            assert_int_equal(psc_pattern_mix(seeds[s], w), stream_word(seeds[s], w));
            assert_int_equal(psc_pattern_word(PSC_PAT_RANDOM, seeds[s], w), stream_word(seeds[s], w));
        }
}

static void test_random_bytes_little_endian(void **state)
{
    (void)state;
    /* 0xe220a8397b1dcdaf in memory: af cd 1d 7b 39 a8 20 e2. */
    assert_int_equal(psc_pattern_byte(PSC_PAT_RANDOM, 0, 0), 0xaf);
    assert_int_equal(psc_pattern_byte(PSC_PAT_RANDOM, 0, 1), 0xcd);
    assert_int_equal(psc_pattern_byte(PSC_PAT_RANDOM, 0, 3), 0x7b);
    assert_int_equal(psc_pattern_byte(PSC_PAT_RANDOM, 0, 7), 0xe2);
    assert_int_equal(psc_pattern_byte(PSC_PAT_RANDOM, 0, 8), 0xf4); /* word 1 begins */
    assert_int_equal(psc_pattern_byte(PSC_PAT_RANDOM, 0, 15), 0x6e);
    assert_int_equal(psc_pattern_byte(PSC_PAT_RANDOM, 0, 23), 0x06);
    assert_int_equal(psc_pattern_byte(99, 0, 0), 0xaf); /* an unknown kind is RANDOM */
    for (uint64_t off = 0; off < 64; off++)
        assert_int_equal(psc_pattern_byte(PSC_PAT_RANDOM, 7, off), (uint8_t)(stream_word(7, off / 8) >> (8 * (off % 8))));
}

static void test_address(void **state)
{
    (void)state;
    /* Each 8-byte word holds its own byte offset, little endian. */
    assert_int_equal(psc_pattern_word(PSC_PAT_ADDRESS, 99, 0), 0);
    assert_int_equal(psc_pattern_word(PSC_PAT_ADDRESS, 99, 3), 24);
    assert_int_equal(psc_pattern_byte(PSC_PAT_ADDRESS, 99, 0), 0x00);
    assert_int_equal(psc_pattern_byte(PSC_PAT_ADDRESS, 99, 8), 0x08);
    assert_int_equal(psc_pattern_byte(PSC_PAT_ADDRESS, 99, 9), 0x00);
    assert_int_equal(psc_pattern_byte(PSC_PAT_ADDRESS, 99, 0x1238), 0x38);
    assert_int_equal(psc_pattern_byte(PSC_PAT_ADDRESS, 99, 0x1239), 0x12);
    /* Word at byte offset 0x91a2b0: bytes b0 a2 91 00 ... */
    assert_int_equal(psc_pattern_byte(PSC_PAT_ADDRESS, 1, 0x91a2b0), 0xb0);
    assert_int_equal(psc_pattern_byte(PSC_PAT_ADDRESS, 1, 0x91a2b1), 0xa2);
    assert_int_equal(psc_pattern_byte(PSC_PAT_ADDRESS, 1, 0x91a2b2), 0x91);
    assert_int_equal(psc_pattern_byte(PSC_PAT_ADDRESS, 1, 0x91a2b7), 0x00);
    /* Above 4 GiB the high bytes count too. */
    assert_int_equal(psc_pattern_byte(PSC_PAT_ADDRESS, 1, 0x0123456780ull + 4), 0x01);
}

static void test_walking_bits(void **state)
{
    (void)state;
    /* WALK1: word w has the single bit w % 64 set. */
    assert_int_equal(psc_pattern_word(PSC_PAT_WALK1, 5, 0), 1);
    assert_int_equal(psc_pattern_word(PSC_PAT_WALK1, 5, 63), 0x8000000000000000ull);
    assert_int_equal(psc_pattern_word(PSC_PAT_WALK1, 5, 64), 1);
    assert_int_equal(psc_pattern_byte(PSC_PAT_WALK1, 5, 0), 0x01);      /* word 0, bit 0 */
    assert_int_equal(psc_pattern_byte(PSC_PAT_WALK1, 5, 9 * 8 + 1), 0x02); /* word 9, bit 9 */
    assert_int_equal(psc_pattern_byte(PSC_PAT_WALK1, 5, 9 * 8 + 0), 0x00);
    assert_int_equal(psc_pattern_byte(PSC_PAT_WALK1, 5, 63 * 8 + 7), 0x80);
    assert_int_equal(psc_pattern_byte(PSC_PAT_WALK1, 5, 70 * 8 + 0), 0x40); /* bit 6 */
    /* WALK0: the complement, a single 0 bit. */
    assert_int_equal(psc_pattern_word(PSC_PAT_WALK0, 5, 0), 0xfffffffffffffffeull);
    assert_int_equal(psc_pattern_word(PSC_PAT_WALK0, 5, 127), 0x7fffffffffffffffull);
    assert_int_equal(psc_pattern_byte(PSC_PAT_WALK0, 5, 0), 0xfe);
    assert_int_equal(psc_pattern_byte(PSC_PAT_WALK0, 5, 9 * 8 + 1), 0xfd);
    assert_int_equal(psc_pattern_byte(PSC_PAT_WALK0, 5, 9 * 8 + 2), 0xff);
    assert_int_equal(psc_pattern_byte(PSC_PAT_WALK0, 5, 63 * 8 + 7), 0x7f);
}

static void test_constant_kinds(void **state)
{
    (void)state;
    for (uint64_t off = 0; off < 24; off++) {
        assert_int_equal(psc_pattern_byte(PSC_PAT_ZERO, 3, off), 0x00);
        assert_int_equal(psc_pattern_byte(PSC_PAT_ONES, 3, off), 0xff);
    }
    assert_int_equal(psc_pattern_word(PSC_PAT_ONES, 3, 1000), 0xffffffffffffffffull);
    assert_int_equal(psc_pattern_word(PSC_PAT_ZERO, 3, 1000), 0);
    assert_int_equal(PSC_PAT_KINDS, 6); /* every kind above is tested */
}

static void test_canary(void **state)
{
    (void)state;
    /* 0xc3 ^ (off * 0x9d), kept to 8 bits. */
    assert_int_equal(psc_pattern_canary(0), 0xc3);
    assert_int_equal(psc_pattern_canary(1), 0x5e);
    assert_int_equal(psc_pattern_canary(2), 0xf9);  /* 0x13a -> 0x3a */
    assert_int_equal(psc_pattern_canary(15), 0xf0); /* 0x933 -> 0x33 */
    assert_int_equal(psc_pattern_canary(32), 0x63); /* 0x13a0 -> 0xa0 */
    assert_int_equal(psc_pattern_canary(256), 0xc3);
}

/* psc_expect_byte with the expectation spelled out. */
static uint8_t expect(int kind, uint64_t seed, uint64_t off, uint64_t begin, uint64_t end, int64_t delta, int invert)
{
    psc_expect_t e = {seed, begin, end, delta, kind, invert};

    return psc_expect_byte(&e, off);
}

/* psc_expect_word, the kernels' 8-byte unit. */
static uint64_t expect_word(int kind, uint64_t seed, uint64_t off, uint64_t begin, uint64_t end, int64_t delta,
                            int invert)
{
    psc_expect_t e = {seed, begin, end, delta, kind, invert};

    return psc_expect_word(&e, off);
}

static void test_expected_destination(void **state)
{
    (void)state;
    /* Destination range [16, 32) holds the source from offset 8 (delta -8); canary around it. */
    assert_int_equal(expect(PSC_PAT_ADDRESS, 0, 15, 16, 32, -8, 0), 0xf0);
    assert_int_equal(expect(PSC_PAT_ADDRESS, 0, 16, 16, 32, -8, 0), 0x08);
    assert_int_equal(expect(PSC_PAT_ADDRESS, 0, 24, 16, 32, -8, 0), 0x10);
    assert_int_equal(expect(PSC_PAT_ADDRESS, 0, 31, 16, 32, -8, 0), 0x00);
    assert_int_equal(expect(PSC_PAT_ADDRESS, 0, 32, 16, 32, -8, 0), 0x63); /* end excluded */
    /* Before the copy: the complement of the source byte. */
    assert_int_equal(expect(PSC_PAT_ADDRESS, 0, 16, 16, 32, -8, 1), 0xf7);
    assert_int_equal(expect(PSC_PAT_ADDRESS, 0, 32, 16, 32, -8, 1), 0x63); /* the canary is not inverted */
    /* A positive delta: destination offset 0 holds source offset 40. */
    assert_int_equal(expect(PSC_PAT_ADDRESS, 0, 0, 0, 8, 40, 0), 0x28);
    assert_int_equal(expect(PSC_PAT_RANDOM, 0, 3, 0, 8, 5, 0), 0xf4); /* source byte 8: word 1's lowest */
}

static void test_expected_words(void **state)
{
    (void)state;
    /* A whole ADDRESS buffer: word at 16 is 16. */
    assert_int_equal(expect_word(PSC_PAT_ADDRESS, 0, 16, 0, 64, 0, 0), 16);
    /* Source shifted (delta 3): source bytes 19..26 = 00 00 00 00 00 18 00 00, straddling words 2 and 3. */
    assert_int_equal(expect_word(PSC_PAT_ADDRESS, 0, 16, 0, 64, 3, 0), 0x0000180000000000ull);
    /* delta -13: source bytes 3..10 = 00 00 00 00 00 08 00 00. */
    assert_int_equal(expect_word(PSC_PAT_ADDRESS, 0, 16, 0, 64, -13, 0), 0x0000080000000000ull);
    assert_int_equal(expect_word(PSC_PAT_ADDRESS, 0, 16, 0, 64, -13, 1), ~0x0000080000000000ull);
    /* Inverted, inside the range. */
    assert_int_equal(expect_word(PSC_PAT_ZERO, 0, 8, 0, 64, 0, 1), 0xffffffffffffffffull);
    assert_int_equal(expect_word(PSC_PAT_ONES, 0, 8, 0, 64, 0, 1), 0);
    /* A word that runs past the range's end: its last bytes are canary. */
    assert_int_equal(expect_word(PSC_PAT_ZERO, 0, 8, 0, 12, 0, 0),
                     (uint64_t)psc_pattern_canary(12) << 32 | (uint64_t)psc_pattern_canary(13) << 40 |
                         (uint64_t)psc_pattern_canary(14) << 48 | (uint64_t)psc_pattern_canary(15) << 56);
    /* One that starts before it: its first bytes are canary. */
    assert_int_equal(expect_word(PSC_PAT_ONES, 0, 0, 6, 64, 0, 0),
                     0xffff000000000000ull | (uint64_t)psc_pattern_canary(0) | (uint64_t)psc_pattern_canary(1) << 8 |
                         (uint64_t)psc_pattern_canary(2) << 16 | (uint64_t)psc_pattern_canary(3) << 24 |
                         (uint64_t)psc_pattern_canary(4) << 32 | (uint64_t)psc_pattern_canary(5) << 40);
}

/* The one bad-byte fold: a first bad byte at offset 0 is a first bad byte; -1 means none. */
static void test_fold_at_offset_zero(void **state)
{
    psc_check_t acc = PSC_CHECK_CLEAN, at0 = {1, 0, 0x5a, 0x00}, later = {4, 100, 0x01, 0x02};
    uint64_t bad = 0;
    int64_t first = -1;
    uint8_t want = 0, got = 0;

    (void)state;
    assert_int_equal(psc__check_fold(&acc, &at0), 1);
    assert_int_equal(acc.first_bad, 0);
    assert_int_equal(psc__check_fold(&acc, &later), 0); /* offset 0 stays first */
    assert_int_equal(acc.first_bad, 0);
    assert_int_equal(acc.expected, 0x5a);
    assert_int_equal(acc.found, 0x00);
    assert_int_equal(acc.bad_bytes, 5);
    assert_int_equal(psc__check_fold_fields(&bad, &first, &want, &got, &at0), 1);
    assert_int_equal(psc__check_fold_fields(&bad, &first, &want, &got, &later), 0);
    assert_int_equal(first, 0);
    assert_int_equal(want, 0x5a);
    assert_int_equal(bad, 5);
    acc = (psc_check_t)PSC_CHECK_CLEAN;
    psc__check_byte(&acc, 0, 0x10, 0x11);
    psc__check_byte(&acc, 1, 0x10, 0x12);
    assert_int_equal(acc.first_bad, 0);
    assert_int_equal(acc.found, 0x11);
    assert_int_equal(acc.bad_bytes, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_is_splitmix64), cmocka_unit_test(test_random_bytes_little_endian),
        cmocka_unit_test(test_address),              cmocka_unit_test(test_walking_bits),
        cmocka_unit_test(test_constant_kinds),       cmocka_unit_test(test_canary),
        cmocka_unit_test(test_expected_destination), cmocka_unit_test(test_expected_words),
        cmocka_unit_test(test_fold_at_offset_zero),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
