/*
 * What the all-reduce's groups of processes (psc_allreduce_join, and
 * psc_allreduce_tune over them) say to each other through the caller's
 * allgather: the exchange itself, and the verdict every process reaches the
 * same way from the same records.
 */
#include <string.h>

#include "allreduce/ar_group.h"

psc_status_t psc__ar_allgather(psc_context_t *ctx, const psc_ar_procs_t *p, const void *mine, void *all, size_t len,
                               const char *who)
{
    if (p->allgather(mine, all, len, p->arg) != 0)
        return psc__fail(ctx, PSC_ERR_IO, "%s: the processes' allgather failed (process %d of %d)", who, p->proc,
                         p->nprocs);
    return PSC_OK;
}

psc_status_t psc__ar_first_failure(psc_context_t *ctx, const void *recs, size_t rec_len, size_t status_at, int nprocs,
                                   int me, const char *who, const char *what)
{
    for (int p = 0; p < nprocs; p++) {
        int32_t st;

        memcpy(&st, (const unsigned char *)recs + (size_t)p * rec_len + status_at, sizeof(st));
        if (st != PSC_OK)
            return p == me ? (psc_status_t)st
                           : psc__fail(ctx, (psc_status_t)st, "%s: process %d could not %s (%s there)", who, p, what,
                                       psc_status_string((psc_status_t)st));
    }
    return PSC_OK;
}
