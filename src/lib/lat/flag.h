/*
 * A flag round trip in two halves, so that the two sides may live in two
 * processes: a responder (pong) on one GPU waits for 1, 2, ... in its flag
 * and answers each into the initiator's memory; the initiator (ping) writes
 * each value into the responder's flag and times until the answer comes.
 * Both flags start at 0 (the caller zeroes them before either half starts).
 */
#ifndef PSC_LAT_FLAG_H
#define PSC_LAT_FLAG_H

#include "internal.h"

/* Small zeroed device scratch on GPU g, for kernel outputs; freed by psc__dev_scratch_free. */
psc_status_t psc__dev_scratch(psc_context_t *ctx, int g, size_t len, CUdeviceptr *out);
void psc__dev_scratch_free(psc_context_t *ctx, int g, CUdeviceptr p);

typedef struct {
    int gpu;
    CUstream stream;
    CUdeviceptr err;
} psc_flag_pong_t;

/*
 * Start the responder on GPU g (its second stream, so a ping on the same GPU can run beside it): it
 * answers `iters` values or gives up after timeout_ns without one. Returns once launched.
 */
psc_status_t psc__flag_pong_start(psc_context_t *ctx, int g, CUdeviceptr my_flag, CUdeviceptr peer_ans,
                                  unsigned iters, uint64_t timeout_ns, psc_flag_pong_t *p);

/* Wait for the responder to end; *gave_up 1 when it waited for a value in vain. Releases p's scratch. */
psc_status_t psc__flag_pong_end(psc_context_t *ctx, psc_flag_pong_t *p, int *gave_up);

/*
 * The initiator on GPU g: `iters` round trips, each time in ns into rtt_ns[0..iters-1] (the GPU's clock
 * converted by this launch's own %globaltimer calibration, *ns_per_cycle); *gave_up 1 when an answer did
 * not come within timeout_ns (rtt_ns then unset).
 */
psc_status_t psc__flag_ping(psc_context_t *ctx, int g, CUdeviceptr peer_flag, CUdeviceptr my_ans, unsigned iters,
                            uint64_t timeout_ns, double *rtt_ns, double *ns_per_cycle, int *gave_up);

#endif
