/*
 * For p2pscope's own tests only, never installed: the library's side of the
 * fault injection that proves the checks catch wrong bytes (the hooks' type
 * and the tool's calls are in p2pscope_private.h), and pure internals the
 * unit tests pin. Nothing here is exported from the shared library.
 */
#ifndef PSC_TEST_HOOKS_H
#define PSC_TEST_HOOKS_H

#include <stdint.h>

#include "p2pscope_private.h" /* psc_test_hooks_t, which the tool's hidden options fill */

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
