/*
 * For p2pscope's own tests and tool only, never installed: fault injection
 * that proves the checks catch wrong bytes, and pure internals the unit tests
 * pin. Nothing here is exported from the shared library.
 */
#ifndef PSC_TEST_HOOKS_H
#define PSC_TEST_HOOKS_H

#include <stdint.h>

#include "p2pscope/bench.h"

typedef enum { PSC_FAULT_NONE, PSC_FAULT_FLIP, PSC_FAULT_DROP, PSC_FAULT_MISPLACE } psc_fault_t;

typedef struct {
    /* psc_bw_run: flip the destination byte at this offset after each timed sample's copies, before
     * verification (which must then be on). Negative: off. */
    int64_t corrupt_offset;
    /* psc_verify_run: after each copy of fault_size bytes (0: every copy), damage the first destination:
     * flip the byte at fault_offset, drop fault_len bytes there, or write them fault_len further on. */
    psc_fault_t fault;
    uint64_t fault_offset, fault_len, fault_size;
} psc_test_hooks_t;

/* No hook: corrupt_offset -1, no fault. */
void psc__test_hooks_default(psc_test_hooks_t *h);

/* Install hooks on a context (NULL: none); PSC_ERR_INVALID for a fault kind out of range. */
psc_status_t psc__test_hooks_set(psc_context_t *ctx, const psc_test_hooks_t *h);

/*
 * The stop rule of adaptive sampling: with n >= 3 samples, 1 when the
 * medians of the first n-2, n-1 and n samples lie within pct percent of
 * each other. Pure.
 */
int psc__sampling_stable(const double *samples, unsigned n, double pct);

/*
 * A random single cycle through n nodes (Sattolo's algorithm): next[i] is the
 * node after i; following next from any node visits every node once before
 * returning. Pure.
 */
void psc__chain_build(uint32_t *next, uint32_t n, uint64_t seed);

#endif
