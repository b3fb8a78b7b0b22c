/* The copies p2pscope ipc measures, the same code between processes (ipc_serve.c) and in one (ipc_local.c). */
#ifndef PSC_IPC_MEASURE_H
#define PSC_IPC_MEASURE_H

#include "internal.h"
#include "mem/buffer.h"

/*
 * Copy `bw` (psc_ipc_bw_t) issued by GPU `issuer` between `mine` (its own memory) and `other` (memory of
 * GPU other_gpu that the issuer reaches: imported, or a peer's), both o->size bytes, every sample checked.
 */
psc_status_t psc__ipc_bw(psc_context_t *ctx, int bw, int issuer, int other_gpu, psc_buffer_t *mine,
                         psc_buffer_t *other, const psc_measure_opts_t *o, psc_bw_result_t *out);

/* Round trips in ns (one per value) into percentiles; PSC_ERR_NO_MEMORY only. */
psc_status_t psc__ipc_rtt_pctl(psc_context_t *ctx, const double *ns, unsigned n, psc_pctl_t *out);

/*
 * Round trips to run between GPUs a and b: o->round_trips, but at most PSC_IPC_SAME_GPU_ROUND_TRIPS when
 * both sides are on one GPU (two processes there take turns on it, a time slice each way: milliseconds).
 */
#define PSC_IPC_SAME_GPU_ROUND_TRIPS 200u
unsigned psc__ipc_round_trips(const psc_ipc_opts_t *o, int a, int b);

#endif
