/* psc_allreduce_tune (allreduce_tune.c): NCCL beside the group's kernel; what the tests need of it. */
#ifndef PSC_ALLREDUCE_ALLREDUCE_TUNE_H
#define PSC_ALLREDUCE_ALLREDUCE_TUNE_H

#include "internal.h"

/* The size class of a call of `bytes` per rank: 0 for up to 16 B, k for up to 16 << k. */
int psc__ar_tune_class(uint64_t bytes);

/*
 * For tests: each median this process measures (nccl 0: the kernel's, 1:
 * NCCL's; us per call) passes through fn before the processes compare them,
 * so a test can make either way the faster one. NULL: none. Set before
 * psc_allreduce_tune; PSC_ERR_NO_MEMORY.
 */
typedef double (*psc__ar_tune_skew_fn)(int nccl, uint64_t bytes, double us, void *arg);
psc_status_t psc__ar_tune_skew(psc_allreduce_t *ar, psc__ar_tune_skew_fn fn, void *arg);

#endif
