/* Issue one copy as a test names it: copy engine, peer-staged copy engine, or SM kernel. */
#ifndef PSC_XFER_COPY_H
#define PSC_XFER_COPY_H

#include "internal.h"
#include "pattern/pattern.h"

/* Whether a test's GPU -> GPU copies go with peer access off, staged through the host (one direction or both). */
int psc__shape_p2p_off(psc_shape_t shape);

typedef struct {
    psc_engine_t engine;
    int p2p_off;        /* GPU -> GPU through the host: cuMemcpyPeerAsync with peer access off */
    int issuer, src_gpu, dst_gpu;
    int share;          /* SM: kernels the issuer runs at once in this case; each takes 1/share of the grid */
} psc_copy_route_t;

/* How many of the n transfers are issued by transfer i's issuer (the `share` of an SM copy). */
int psc__issuer_share(const psc_xfer_t *x, int n, int i);

/* The route a test's transfer takes (host endpoints are served by the issuing GPU). */
psc_copy_route_t psc__copy_route(const psc_bw_test_info_t *ti, const psc_xfer_t *x, int share);

/*
 * Queue `reps` copies of n bytes from s to d on stream `stream` of the
 * issuer (its context current). SM copies of addresses not 16-byte aligned
 * take a byte-wise kernel.
 */
psc_status_t psc__copy_enqueue(psc_context_t *ctx, const psc_copy_route_t *r, CUdeviceptr d, CUdeviceptr s, uint64_t n,
                               unsigned reps, CUstream stream);

/*
 * One way, for the local SM tests that only read or only write (psc_bw_access_t): `reps` passes of a kernel that
 * loads n bytes at s and adds the sum of their 8-byte words to the word at `sum` (the caller zeroes it), or
 * that stores e's words over n bytes at d, loading nothing. On the route's issuer, its grid as a copy's.
 */
psc_status_t psc__read_enqueue(psc_context_t *ctx, const psc_copy_route_t *r, CUdeviceptr s, uint64_t n, unsigned reps,
                               CUdeviceptr sum, CUstream stream);
psc_status_t psc__write_enqueue(psc_context_t *ctx, const psc_copy_route_t *r, CUdeviceptr d, uint64_t n, unsigned reps,
                                const psc_expect_t *e, CUstream stream);

/*
 * Copy n bytes from s to d `reps` times by Hopper's bulk copies (TMA: global -> shared -> global, psc_copy_tma),
 * four one-thread-worked blocks of 32 threads an SM; both addresses 16-byte aligned (PSC_ERR_INVALID else).
 * Only on a GPU of compute capability 9.0 or newer: psc__tma_waiver says where not.
 */
psc_status_t psc__tma_enqueue(psc_context_t *ctx, const psc_copy_route_t *r, CUdeviceptr d, CUdeviceptr s, uint64_t n,
                              unsigned reps, CUstream stream);

/* 1 with the reason in why when GPU `gpu` (compute capability cc_major.cc_minor) has no bulk copies; else 0. */
int psc__tma_waiver(int gpu, int cc_major, int cc_minor, char *why, size_t len);

/*
 * Peer access as a case's transfers need it: enabled from each issuing GPU
 * to the other end, or (p2p_off) disabled both ways. A pair without peer
 * access sets *waived and says why in `why`.
 */
psc_status_t psc__peers_for(psc_context_t *ctx, const psc_xfer_t *x, int n, int p2p_off, int *waived, char *why,
                            size_t len);

#endif
