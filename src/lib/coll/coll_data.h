/*
 * The data of p2pscope coll on the GPUs: fill every slot's inputs before the
 * timed loop of a row and check every slot's outputs after it, so the timed
 * iterations themselves are checked (nccl-tests checks one extra operation).
 * Values and expectations: coll_values.h (psc_coll_data_t is declared there,
 * shared with the kernels). Internal: psc__ names.
 */
#ifndef PSC_COLL_COLL_DATA_H
#define PSC_COLL_COLL_DATA_H

#include <stdint.h>

#include "coll/coll_values.h"
#include "internal.h"

/* Elements of the send and recv buffers of one rank for one operation (nccl-tests' getCollByteCount). */
uint64_t psc__coll_send_elems(const psc_coll_data_t *d);
uint64_t psc__coll_recv_elems(const psc_coll_data_t *d);

/*
 * The output checked: out_elems elements from recv + out_off elements of each slot (in-place reduce_scatter:
 * the rank's part; otherwise the whole recv). The first-wrong index is slot * out_elems + element.
 */
uint64_t psc__coll_out_elems(const psc_coll_data_t *d);
uint64_t psc__coll_out_offset(const psc_coll_data_t *d);

/*
 * Fill nslots slots (slot s at base + s*slot_bytes) of GPU i's buffers on stream s: out of place, the
 * inputs into send and a "before" value into recv (one no correct output equals, so an element never
 * written is wrong, except where the output must stay untouched: reduce's non-root ranks out of place);
 * in place, the input where nccl-tests puts it inside recv (all_gather: the rank's part at rank*count;
 * others: from 0; broadcast's non-roots: none, their input is never read), and the "before" value in the
 * rest. Asynchronous; GPU i's context current. send is not touched in place (it may be 0).
 */
psc_status_t psc__coll_fill(psc_context_t *ctx, int i, CUstream s, CUdeviceptr send, CUdeviceptr recv,
                            uint64_t slot_bytes, unsigned nslots, const psc_coll_data_t *d);

/*
 * Count the wrong elements of the outputs of nslots slots into *wrong_dev (a u64 in device memory the
 * caller zeroed; added to, so several checks may share it), and the lowest (slot, element) index found
 * wrong, slot * psc__coll_out_elems + element, into the next u64 (atomicMin; the caller sets it to
 * UINT64_MAX). Exact, bit for bit; floating averages within 2 ulps. Asynchronous; GPU i's context current.
 */
psc_status_t psc__coll_check(psc_context_t *ctx, int i, CUstream s, CUdeviceptr recv, uint64_t slot_bytes,
                             unsigned nslots, const psc_coll_data_t *d, CUdeviceptr wrong_dev);

/*
 * The host's view of one output element (slot, element j of the output): its expected bits, for the
 * one-line message naming the first wrong element ("... element 1234 of slot 3: got 0x.. want 0x..").
 * (A floating average: the exact quotient rounded to the type; within 2 ulps of it passes.)
 */
uint64_t psc__coll_expected_bits(const psc_coll_data_t *d, unsigned slot, uint64_t j);

#endif
