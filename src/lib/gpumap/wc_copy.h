/*
 * Copies to and from write-combined memory (a BAR1 mapping of GPU memory):
 * stores in whole 64-byte runs of non-temporal stores, heads and tails in
 * naturally aligned 8/4/2/1-byte accesses of exactly that width, a store fence
 * at the end; loads as wide as the CPU has. Every level copies every size and
 * alignment; tests force each one.
 */
#ifndef PSC_GPUMAP_WC_COPY_H
#define PSC_GPUMAP_WC_COPY_H

#include <stddef.h>

typedef enum {
    PSC_WC_PLAIN = 0, /* scalar accesses only (any CPU) */
    PSC_WC_SSE2 = 1,  /* x86_64: 16-byte non-temporal stores, 16-byte loads */
    PSC_WC_AVX = 2,   /* x86_64 with AVX: 32-byte non-temporal stores, 16-byte streaming loads (SSE4.1) */
} psc_wc_level_t;

/* The widest level this CPU runs. */
psc_wc_level_t psc__wc_best(void);

/* Copy n bytes into the mapping at dst (any alignment) at `level` (capped at psc__wc_best()). */
void psc__wc_write(void *dst, const void *src, size_t n, psc_wc_level_t level);
/* Copy n bytes out of the mapping at src into dst. */
void psc__wc_read(void *dst, const void *src, size_t n, psc_wc_level_t level);

#endif
