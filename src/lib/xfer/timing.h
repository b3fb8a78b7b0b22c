/*
 * Gates (DESIGN.md section 3): a kernel on each issuing stream spins on its
 * GPU's host flag while the start events, the timed copies and the stop
 * events are queued; the host then releases every GPU at once, so launch and
 * queuing costs stay out of the measured time.
 */
#ifndef PSC_XFER_TIMING_H
#define PSC_XFER_TIMING_H

#include "internal.h"

/* Reset the flags of the GPUs in use[] (nonzero entries). */
void psc__gates_arm(psc_context_t *ctx, const unsigned char *use);

/* Hold stream s of GPU g (its context current) until released or timeout_ns passes. */
psc_status_t psc__gate_launch(psc_context_t *ctx, int g, CUstream s, uint64_t timeout_ns);

/* Release every armed GPU. */
void psc__gates_release(psc_context_t *ctx, const unsigned char *use);

/* The first GPU whose gate gave up waiting, -1 when none did. */
int psc__gates_timed_out(const psc_context_t *ctx, const unsigned char *use);

#endif
