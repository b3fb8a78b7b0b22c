/*
 * The data pattern every measured copy carries, shared by host C and device
 * code so either side can say what a byte should be. Word w of a buffer
 * (8 bytes, little endian) is a splitmix64 hash of the seed and w: no two
 * neighbouring words, buffers or samples look alike, and it is never zero.
 */
#ifndef PSC_VERIFY_PATTERN_H
#define PSC_VERIFY_PATTERN_H

#include <stdint.h>

#ifdef __CUDACC__
#define PSC_HD __host__ __device__ __forceinline__
#else
#define PSC_HD static inline
#endif

/* Poison seeds are the pattern seed xor this, so poison never equals data. */
#define PSC_POISON_XOR 0xA5A5A5A5DEADBEEFull
#define PSC_ALT_XOR 0x5A5A5A5A0DDBA11Cull /* a bandwidth run's second source pattern */

PSC_HD uint64_t psc_pattern_word(uint64_t seed, uint64_t word)
{
    uint64_t z = seed + (word + 1) * 0x9E3779B97F4A7C15ull;

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

PSC_HD uint8_t psc_pattern_byte(uint64_t seed, uint64_t offset)
{
    return (uint8_t)(psc_pattern_word(seed, offset >> 3) >> ((offset & 7) * 8));
}

/*
 * Integrity patterns (p2pscope verify): what byte `off` of a source holds.
 * RANDOM is the splitmix stream above; the others are the classic memory
 * test patterns. Kinds are numbered for the kernels' parameter.
 */
enum {
    PSC_PAT_RANDOM = 0,
    PSC_PAT_ADDRESS = 1, /* each 8-byte word holds its own byte offset */
    PSC_PAT_WALK1 = 2,   /* word w: a single 1 bit at position w % 64 */
    PSC_PAT_WALK0 = 3,   /* word w: a single 0 bit at position w % 64 */
    PSC_PAT_ZERO = 4,
    PSC_PAT_ONES = 5,
    PSC_PAT_KINDS = 6
};

PSC_HD uint64_t psc_pattern_kind_word(int kind, uint64_t seed, uint64_t word)
{
    switch (kind) {
    case PSC_PAT_ADDRESS: return word * 8;
    case PSC_PAT_WALK1: return 1ull << (word % 64);
    case PSC_PAT_WALK0: return ~(1ull << (word % 64));
    case PSC_PAT_ZERO: return 0;
    case PSC_PAT_ONES: return ~0ull;
    default: return psc_pattern_word(seed, word);
    }
}

PSC_HD uint8_t psc_pattern_kind_byte(int kind, uint64_t seed, uint64_t off)
{
    return (uint8_t)(psc_pattern_kind_word(kind, seed, off >> 3) >> ((off & 7) * 8));
}

/* Canary: what the bytes around a destination range hold, and must still hold after the copy. */
PSC_HD uint8_t psc_canary_byte(uint64_t off)
{
    return (uint8_t)(0xC3 ^ (off * 0x9D));
}

/*
 * What byte `off` of a prepared destination must be: inside [begin, end) the
 * source's byte at off + delta (or its complement before the copy), outside
 * it the canary.
 */
PSC_HD uint8_t psc_expect_byte(int kind, uint64_t seed, uint64_t off, uint64_t begin, uint64_t end, int64_t delta,
                               int invert)
{
    if (off < begin || off >= end)
        return psc_canary_byte(off);
    return (uint8_t)(psc_pattern_kind_byte(kind, seed, (uint64_t)((int64_t)off + delta)) ^ (invert ? 0xFF : 0));
}

#endif
