/*
 * p2pscope ipc's yardstick: the same copies and round trips inside this
 * process (peer memory of ordinary allocations, peer access on), once per
 * ordered GPU pair the workers form, measured before any worker starts.
 */
#ifndef PSC_IPC_LOCAL_H
#define PSC_IPC_LOCAL_H

#include "internal.h"

typedef struct psc_ipc_local psc_ipc_local_t;

/* Measure every ordered pair of distinct ranks' GPUs (gpu[0..n-1]); nothing with o->no_local. */
psc_status_t psc__ipc_local_measure(psc_context_t *ctx, const int *gpu, int n, const psc_ipc_opts_t *o, uint64_t size,
                                    psc_ipc_local_t **out);

/* The figures of p's GPU pair into p->bw_local and p->rtt_local_ns (WAIVED and n 0 where not measured). */
void psc__ipc_local_get(const psc_ipc_local_t *l, psc_ipc_pair_t *p);

void psc__ipc_local_free(psc_ipc_local_t *l);

#endif
