/* The local SM tests that only read or only write (psc_bw_access_t): what each round writes, and the reads' sum checked. */
#ifndef PSC_XFER_BW_ONEWAY_H
#define PSC_XFER_BW_ONEWAY_H

#include "internal.h"
#include "pattern/check.h"

/*
 * What a write-only round stores over `size` bytes: each word its own offset, complemented in odd rounds, so
 * every round changes every word and a check proves that round's stores landed. Cheap to compute: the kernel
 * stays bound by memory, not by making the pattern.
 */
psc_expect_t psc__oneway_write_expect(uint64_t size, unsigned round);

/*
 * What one pass of the read-only kernel must sum over a buffer of `size` bytes holding the RANDOM pattern of
 * `seed`: computed on GPU `gpu` from the pattern's definition (not from the data), in the word at `word`.
 */
psc_status_t psc__oneway_sum_want(psc_context_t *ctx, int gpu, CUdeviceptr word, uint64_t size, uint64_t seed,
                                  uint64_t *out);

/* Zero the sum word before a checked round (GPU gpu's context made current). */
psc_status_t psc__oneway_sum_zero(psc_context_t *ctx, int gpu, CUdeviceptr word);

/*
 * The round's sum read back and compared with `want` (one pass's sum times the passes, modulo 2^64): a wrong
 * sum is a check with the differing bytes of the word as bad bytes and no offset (a sum cannot say where).
 */
psc_status_t psc__oneway_sum_check(psc_context_t *ctx, int gpu, CUdeviceptr word, uint64_t want, psc_check_t *out);

/* The differing bytes of two words: what a wrong sum counts as bad bytes. */
unsigned psc__oneway_bytes_differ(uint64_t a, uint64_t b);

#endif
