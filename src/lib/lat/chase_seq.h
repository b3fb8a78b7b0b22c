/*
 * The sequential chase, measured nvbandwidth's way (its device_to_device_latency_sm, v0.8): every 8-byte word
 * of the buffer points 16 words (128 bytes) further on, wrapping at the end; one launch per SM of a grid of one
 * one-thread block per SM, of which only that SM's block walks, 1,000,000 / SMs plain loads from the buffer's
 * start; cuEvents around each launch. lat.c runs it, the report names its figure, the unit tests pin the chain.
 */
#ifndef PSC_LAT_CHASE_SEQ_H
#define PSC_LAT_CHASE_SEQ_H

#include <stdint.h>

#include "p2pscope/bench.h"

#define PSC_CHASE_SEQ_STRIDE_WORDS 16ull  /* nvbandwidth's strideLen: 128 bytes */
#define PSC_CHASE_SEQ_LOADS 1000000ull    /* nvbandwidth's latencyMemAccessCnt, shared by the SMs' launches */
#define PSC_CHASE_SEQ_BYTES (512ull << 20) /* nvbandwidth's default -b (defaultBufferSize, MiB) */

/* 1 for the test measured this way (gpu_to_gpu_chase_sequential), 0 for every other. */
int psc__lat_chase_is_sequential(const psc_lat_test_info_t *ti);

/*
 * Words [first, first + count) of the chain over n words at device address base: word i holds
 * base + 8 * ((i + stride) mod n). Pure; words[0] is word `first`.
 */
void psc__chain_fill_stride(uint64_t *words, uint64_t first, uint64_t count, uint64_t n, uint64_t stride,
                            uint64_t base);

/* The word a walk of `hops` loads from word 0 ends at: (hops * stride) mod n (n >= 1). Pure. */
uint64_t psc__chain_stride_end(uint64_t n, uint64_t stride, uint64_t hops);

#endif
