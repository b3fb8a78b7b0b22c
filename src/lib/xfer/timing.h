/*
 * The timing engine (DESIGN.md section 3): per round, untimed preparation,
 * then a gate kernel holds the issuing GPU's stream while the start event,
 * the timed work and the stop event are queued; the host then releases the
 * gate, so launch and enqueue costs stay out of the measured time.
 */
#ifndef PSC_XFER_TIMING_H
#define PSC_XFER_TIMING_H

#include "internal.h"

typedef struct {
    int issuer;  /* GPU whose stream runs the timed work */
    void *arg;
    /* Untimed and synchronous, before each round (poison the destination). May be NULL. */
    psc_status_t (*before)(psc_context_t *ctx, void *arg, unsigned round);
    /* Queue the timed work on stream s; the issuer's context is current. */
    psc_status_t (*enqueue)(psc_context_t *ctx, void *arg, CUstream s);
    /* Untimed, after each round has finished (verify). timed: not a warm-up round. May be NULL. */
    psc_status_t (*after)(psc_context_t *ctx, void *arg, unsigned round, int timed);
} psc_timed_work_t;

/*
 * Run warmup + samples rounds; ms[k] is the k-th timed round in milliseconds.
 * PSC_ERR_TIMEOUT when the gate gave up before the host released it.
 */
psc_status_t psc__time_rounds(psc_context_t *ctx, const psc_timed_work_t *w, unsigned warmup,
                              unsigned samples, double gate_timeout_ms, double *ms);

#endif
