/*
 * The data patterns, shared by host C and device code so either side can say
 * what a byte must be: the host reference of every pattern, the canary
 * around a copied range, and the expectation one fill or check kernel
 * applies to a whole buffer. What these functions return is the definition
 * of the patterns: the kernels in src/kernels/ produce exactly these bytes.
 */
#ifndef PSC_PATTERN_PATTERN_H
#define PSC_PATTERN_PATTERN_H

#include <stdint.h>

#ifdef __CUDACC__
#define PSC_HD __host__ __device__ __forceinline__
#else
#define PSC_HD static inline
#endif

/* Poison seeds are the pattern seed xor this, so poison never equals data. */
#define PSC_POISON_XOR 0xA5A5A5A5DEADBEEFull
#define PSC_ALT_XOR 0x5A5A5A5A0DDBA11Cull /* a bandwidth run's second source pattern */

/*
 * Pattern kinds, numbered for the kernels' parameter (and PSC_PATTERN_KINDS
 * of the public header). RANDOM is what every bandwidth copy carries; the
 * others are the classic memory test patterns `p2pscope verify` adds.
 */
enum {
    PSC_PAT_RANDOM = 0,  /* word w: splitmix64 of (seed, w) */
    PSC_PAT_ADDRESS = 1, /* each 8-byte word holds its own byte offset */
    PSC_PAT_WALK1 = 2,   /* word w: a single 1 bit at position w % 64 */
    PSC_PAT_WALK0 = 3,   /* word w: a single 0 bit at position w % 64 */
    PSC_PAT_ZERO = 4,
    PSC_PAT_ONES = 5,
    PSC_PAT_KINDS = 6
};

/*
 * splitmix64 of (seed, x): the RANDOM pattern's word x, and the mixer that
 * derives a transfer's seed. No two neighbouring words, buffers or samples
 * look alike.
 */
PSC_HD uint64_t psc_pattern_mix(uint64_t seed, uint64_t x)
{
    uint64_t z = seed + (x + 1) * 0x9E3779B97F4A7C15ull;

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Word `word` (bytes 8*word .. 8*word+7, little endian) of pattern `kind`; an unknown kind is RANDOM. */
PSC_HD uint64_t psc_pattern_word(int kind, uint64_t seed, uint64_t word)
{
    switch (kind) {
    case PSC_PAT_ADDRESS: return word * 8;
    case PSC_PAT_WALK1: return 1ull << (word % 64);
    case PSC_PAT_WALK0: return ~(1ull << (word % 64));
    case PSC_PAT_ZERO: return 0;
    case PSC_PAT_ONES: return ~0ull;
    default: return psc_pattern_mix(seed, word);
    }
}

/* Byte `offset` of pattern `kind` with `seed`: the reference the unit tests pin. */
PSC_HD uint8_t psc_pattern_byte(int kind, uint64_t seed, uint64_t offset)
{
    return (uint8_t)(psc_pattern_word(kind, seed, offset >> 3) >> ((offset & 7) * 8));
}

/* Canary: what the bytes around a destination range hold, and must still hold after the copy. */
PSC_HD uint8_t psc_pattern_canary(uint64_t offset)
{
    return (uint8_t)(0xC3 ^ (offset * 0x9D));
}

/*
 * What one fill or check applies to a whole buffer: byte `off` inside
 * [begin, end) is the pattern's byte at off + delta (its complement with
 * invert), every byte outside is the canary. A plain source or bandwidth
 * buffer is {kind, seed, 0, size, 0, 0}. Passed by value to the kernels:
 * the layout is the same in C and CUDA (no padding).
 */
typedef struct {
    uint64_t seed, begin, end;
    int64_t delta;
    int32_t kind, invert;
} psc_expect_t;

/* The whole buffer of `size` bytes holds pattern `kind`. */
PSC_HD psc_expect_t psc_expect_pattern(int kind, uint64_t seed, uint64_t size)
{
    psc_expect_t e = {seed, 0, size, 0, kind, 0};

    return e;
}

/* Byte `off` of a buffer under expectation e. */
PSC_HD uint8_t psc_expect_byte(const psc_expect_t *e, uint64_t off)
{
    if (off < e->begin || off >= e->end)
        return psc_pattern_canary(off);
    return (uint8_t)(psc_pattern_byte(e->kind, e->seed, (uint64_t)((int64_t)off + e->delta)) ^ (e->invert ? 0xFF : 0));
}

/*
 * Bytes off .. off+7 under e as a little-endian word: the kernels' unit.
 * A word wholly inside the range takes one or two pattern words (a shifted
 * source offset straddles two); canaries and range edges go byte by byte.
 */
PSC_HD uint64_t psc_expect_word(const psc_expect_t *e, uint64_t off)
{
    uint64_t w = 0;

    if (off >= e->begin && off + 8 <= e->end && off + 8 > off) {
        uint64_t s = (uint64_t)((int64_t)off + e->delta), sh = (s & 7) * 8;

        w = psc_pattern_word(e->kind, e->seed, s >> 3) >> sh;
        if (sh)
            w |= psc_pattern_word(e->kind, e->seed, (s >> 3) + 1) << (64 - sh);
        return e->invert ? ~w : w;
    }
    for (int b = 0; b < 8; b++)
        w |= (uint64_t)psc_expect_byte(e, off + (uint64_t)b) << (8 * b);
    return w;
}

#endif
