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

#endif
