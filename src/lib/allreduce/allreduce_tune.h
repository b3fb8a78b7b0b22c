/* psc_allreduce_tune (allreduce_tune.c): NCCL beside the group's kernel; what the tests need of it. */
#ifndef PSC_ALLREDUCE_ALLREDUCE_TUNE_H
#define PSC_ALLREDUCE_ALLREDUCE_TUNE_H

#include "internal.h"

/* The size class of a call of `bytes` per rank: 0 for up to 16 B, k for up to 16 << k. */
int psc__ar_tune_class(uint64_t bytes);

/*
 * For tests: each median this process measures (way PSC__AR_TUNE_KERNELS,
 * PSC__AR_TUNE_NCCL or PSC__AR_TUNE_COPY, plus 4 for the reduce-scatter's
 * and 8 for the all-gather's; us per call) passes through fn before the
 * processes compare them, so a test can make any way the faster one. NULL:
 * none. Set before psc_allreduce_tune; PSC_ERR_NO_MEMORY.
 */
enum { PSC__AR_TUNE_KERNELS = 0, PSC__AR_TUNE_NCCL = 1, PSC__AR_TUNE_COPY = 2 };
typedef double (*psc__ar_tune_skew_fn)(int way, uint64_t bytes, double us, void *arg);
psc_status_t psc__ar_tune_skew(psc_allreduce_t *ar, psc__ar_tune_skew_fn fn, void *arg);

/*
 * For callers that use one collective (coll): psc_allreduce_tune times only those in mask (bit 0 the all-reduce,
 * 1 the reduce-scatter, 2 the all-gather; 0, the default, every one); the others keep their kernels. Set before
 * psc_allreduce_tune, in every process of a joined group alike; PSC_ERR_NO_MEMORY.
 */
psc_status_t psc__ar_tune_kinds(psc_allreduce_t *ar, unsigned mask);

/*
 * For callers with a timeout of their own (coll's -T): each timed run of psc_allreduce_tune (up to 16 calls, or a
 * graph of them; the warm-up run with NCCL's first-call setup too) waits at most ms (0, the default: as long as it
 * takes), else the tuning fails with PSC_ERR_TIMEOUT naming the call, and its communicators are aborted; the
 * group's kernels give up at ms too. Set before psc_allreduce_tune, in every process of a joined group alike (a
 * process without it stays in NCCL after its peers abort); PSC_ERR_NO_MEMORY.
 */
psc_status_t psc__ar_tune_timeout(psc_allreduce_t *ar, unsigned ms);

#endif
