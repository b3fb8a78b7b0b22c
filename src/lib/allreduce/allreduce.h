/* All-reduce groups (allreduce.c): their end with the context (registered by psc__ar_link), and the kernels' grid. */
#ifndef PSC_ALLREDUCE_ALLREDUCE_H
#define PSC_ALLREDUCE_ALLREDUCE_H

#include "allreduce/ar_args.h"
#include "internal.h"

/*
 * Destroy every group the application left (psc_context_destroy). A joined group's processes may no
 * longer be in step (or their channel gone): no meeting; its own buffers go with the context's shares.
 */
void psc__allreduce_destroy_all(psc_context_t *ctx);

/* Blocks of the kernels for nvec 16-byte vectors on GPUs of sms SMs: one per PSC_AR_LANES vectors, at most sms.
   Inline: allreduce_ce.c sizes its grids with it too, and calls nothing of allreduce.c (which calls it). */
static inline unsigned psc__ar_blocks(uint64_t nvec, unsigned sms)
{
    uint64_t b = (nvec + PSC_AR_LANES - 1) / PSC_AR_LANES;

    if (b < 1)
        b = 1;
    return (unsigned)(b < sms ? b : (sms ? sms : 1));
}

/* For tests: rank's buffers (ar_args.h's layout) and control words (psc_ar_ctrl_t), as device addresses. */
psc_status_t psc__allreduce_buffers(const psc_allreduce_t *ar, int rank, uint64_t *lbuf, uint64_t *ctrl,
                                    uint64_t *slot_bytes);

/* For tests: every later call of the group by the one-shot (1), the two-shot (2) kernel or the copy engines
   (3: groups made for calls of 4 MiB or more, whose driver has stream writes); 0 by size. The all-gather: 1 or 2
   its kernel, 3 its copy engines where the group has them. */
psc_status_t psc__allreduce_force(psc_allreduce_t *ar, int algo);

/* For tests: the copy-engine path's chunk (a multiple of 16, at most the one the group was made with), to
   take many chunks and the slots' turns with little memory. Every process of a joined group the same. */
psc_status_t psc__allreduce_ce_chunk(psc_allreduce_t *ar, uint64_t bytes);

/* For tests: the all-gather's piece (a multiple of 16, at most the one the group was made with), to take many
   pieces and the buffers' turns with little memory; before the group's first all-gather, every process of a joined
   group the same. */
psc_status_t psc__allreduce_ag_piece(psc_allreduce_t *ar, uint64_t bytes);

/* For tests: 1, captured calls of a group of several local ranks take the copy-engine path as eager ones do
   (by default they go by the kernels: see psc__ar_captured in allreduce.c); 0 the default. */
psc_status_t psc__allreduce_ce_captured(psc_allreduce_t *ar, int on);

/* For tests: a grid of enough blocks for `vectors` (1..64) 16-byte vectors per thread, not one, to compare. */
psc_status_t psc__allreduce_per_thread(psc_allreduce_t *ar, unsigned vectors);

/* For tests: later calls launched early where the GPU allows (1, the default) or plainly (0), to compare. */
psc_status_t psc__allreduce_early(psc_allreduce_t *ar, int on);

#endif
