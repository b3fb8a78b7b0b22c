/*
 * psc_allreduce_join: a group of processes, one GPU each. Each process makes
 * its buffers as shareable memory (legacy CUDA IPC), and the processes
 * exchange, through the caller's allgather, one record each: what they were
 * asked (so that every process sees the same disagreement and refuses it the
 * same way), their GPU's SM count (every rank's grid the same), whether
 * their driver can take the copy-engine path (on only where all can) and the
 * message that opens their buffers. A second exchange says whether every
 * process could open every other's.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allreduce/allreduce.h"
#include "allreduce/ar_group.h"

#define PSC__AR_JOIN_MAGIC 0x52415350u /* "PSAR" */
#define PSC__AR_JOIN_VERSION 3u

typedef struct {
    uint32_t magic, version;
    uint64_t max_bytes;
    int32_t nprocs, proc, sms, status; /* status: this process's buffers made (PSC_OK) or why not */
    int32_t copy_engines;              /* 1: its driver takes the copy-engine path's stream writes */
    unsigned char msg[PSC_SHARE_MSG_LEN];
} psc__ar_join_rec_t;

/* This process's buffers (shared) and control words, and its record. */
static psc_status_t psc__ar_join_make(psc_allreduce_t *ar, int device, psc__ar_join_rec_t *rec)
{
    psc_context_t *ctx = ar->ctx;
    uint64_t bytes = psc__ar_buffer_bytes(ar);
    psc_share_msg_t msg;
    psc_status_t st;

    if ((st = psc__ar_ctrl_alloc(ar, 0)) != PSC_OK ||
        (st = psc_share_alloc(ctx, PSC_SHARE_LEGACY, device, (size_t)bytes, &ar->share[ar->first])) != PSC_OK)
        return st;
    ar->lbuf[ar->first] = (CUdeviceptr)(uintptr_t)psc_share_ptr(ar->share[ar->first]);
    if ((st = psc__ar_fill(ctx, device, ar->lbuf[ar->first], bytes)) != PSC_OK ||
        (st = psc_share_export(ctx, ar->share[ar->first], &msg)) != PSC_OK)
        return st;
    memcpy(rec->msg, msg.bytes, sizeof(rec->msg));
    rec->copy_engines = ar->ce_on[0];
    return PSC_OK;
}

/* Every record in its place and asking what process 0 asks: else PSC_ERR_INVALID, the same in every process. */
static psc_status_t psc__ar_join_agree(psc_context_t *ctx, const psc__ar_join_rec_t *all, int nprocs)
{
    for (int p = 0; p < nprocs; p++) {
        const psc__ar_join_rec_t *r = &all[p];

        if (r->magic != PSC__AR_JOIN_MAGIC || r->version != PSC__AR_JOIN_VERSION || r->nprocs != nprocs ||
            r->proc != p)
            return psc__fail(ctx, PSC_ERR_INVALID, "psc_allreduce_join: process %d's record is not a join of this "
                             "group of %d (its proc %d of %d): accepted every process joining with the same nprocs "
                             "and its own proc, 0..nprocs-1, once", p, nprocs, (int)r->proc, (int)r->nprocs);
        if (r->max_bytes != all[0].max_bytes)
            return psc__fail(ctx, PSC_ERR_INVALID, "psc_allreduce_join: process %d asked max_bytes %llu, process 0 "
                             "%llu: accepted the same in every process", p, (unsigned long long)r->max_bytes,
                             (unsigned long long)all[0].max_bytes);
    }
    return PSC_OK;
}

/* Open every peer's buffers in this process (on its GPU). */
static psc_status_t psc__ar_join_open(psc_allreduce_t *ar, int device, const psc__ar_join_rec_t *all)
{
    for (int p = 0; p < ar->n; p++) {
        psc_share_msg_t msg;
        psc_status_t st;

        if (p == ar->first)
            continue;
        memcpy(msg.bytes, all[p].msg, sizeof(msg.bytes));
        msg.fd = -1;
        if ((st = psc_share_import(ar->ctx, &msg, &device, 1, &ar->share[p])) != PSC_OK)
            return st;
        if (psc_share_size(ar->share[p]) < psc__ar_buffer_bytes(ar))
            return psc__fail(ar->ctx, PSC_ERR_INVALID, "psc_allreduce_join: process %d's buffers hold %zu B, not the "
                             "group's %llu", p, psc_share_size(ar->share[p]),
                             (unsigned long long)psc__ar_buffer_bytes(ar));
        ar->lbuf[p] = (CUdeviceptr)(uintptr_t)psc_share_ptr(ar->share[p]);
    }
    return PSC_OK;
}

psc_status_t psc_allreduce_join(psc_context_t *ctx, int device, const psc_ar_procs_t *procs, size_t max_bytes,
                                psc_allreduce_t **out)
{
    psc__ar_join_rec_t mine, all[PSC_AR_MAX_RANKS];
    int32_t opened = PSC_OK, opens[PSC_AR_MAX_RANKS];
    int ce_everywhere = 1;
    psc_allreduce_t *ar;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!out || !procs || !procs->allgather || procs->nprocs < 1 || procs->nprocs > PSC_AR_MAX_RANKS ||
        procs->proc < 0 || procs->proc >= procs->nprocs)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_allreduce_join: accepted procs with an allgather, 1 to %d "
                         "processes and this one's rank among them, and a place for the group", PSC_AR_MAX_RANKS);
    if (max_bytes < 16 || max_bytes > PSC__AR_MAX_BYTES)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_allreduce_join: max_bytes %zu: accepted 16 B to 1 TiB",
                         max_bytes);
    if (!psc__valid_gpu(ctx, device))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_allreduce_join: GPU %d does not exist (accepted 0 to %d)", device,
                         ctx->ndev - 1);
    if (!(ar = calloc(1, sizeof(*ar))))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    ar->ctx = ctx;
    ar->n = procs->nprocs;
    ar->nlocal = 1;
    ar->joined = 1;
    ar->procs = *procs;
    ar->first = procs->proc;
    ar->dev[0] = device;
    memset(ar->peer_was, -1, sizeof(ar->peer_was));
    ar->max_bytes = max_bytes;
    ar->slot_bytes = psc__ar_slot_bytes(max_bytes);
    memset(&mine, 0, sizeof(mine));
    mine = (psc__ar_join_rec_t){.magic = PSC__AR_JOIN_MAGIC, .version = PSC__AR_JOIN_VERSION,
                                .max_bytes = max_bytes, .nprocs = procs->nprocs, .proc = procs->proc,
                                .sms = ctx->info[device].sm_count > 0 ? ctx->info[device].sm_count : 1};
    psc__guard_enter(ctx);
    mine.status = psc__ar_join_make(ar, device, &mine);
    if ((st = psc__ar_allgather(ctx, procs, &mine, all, sizeof(mine), "psc_allreduce_join")) == PSC_OK &&
        (st = psc__ar_join_agree(ctx, all, ar->n)) == PSC_OK)
        st = psc__ar_first_failure(ctx, all, sizeof(all[0]), offsetof(psc__ar_join_rec_t, status), ar->n, ar->first,
                                   "psc_allreduce_join", "make its buffers");
    if (st == PSC_OK) { /* everyone made theirs: open them, and tell */
        opened = psc__ar_join_open(ar, device, all);
        if ((st = psc__ar_allgather(ctx, procs, &opened, opens, sizeof(opened), "psc_allreduce_join")) == PSC_OK) {
            ar->meet = 1; /* in step from here: destroy (or the failure below) meets before freeing */
            st = psc__ar_first_failure(ctx, opens, sizeof(opens[0]), 0, ar->n, ar->first, "psc_allreduce_join",
                                       "open its peers' buffers");
        } else {
            ar->keep_own = 1; /* peers may hold this process's buffers open, and cannot be met */
        }
    }
    for (int p = 0; st == PSC_OK && p < ar->n; p++) { /* the smallest GPU's SM count: every rank's grid the same */
        if (!ar->sms || (unsigned)all[p].sms < ar->sms)
            ar->sms = all[p].sms > 0 ? (unsigned)all[p].sms : 1;
        ce_everywhere = ce_everywhere && all[p].copy_engines;
    }
    if (st == PSC_OK) /* every process decides the same way, or they would take different paths for one call */
        psc__ar_ce_agree(ar, ce_everywhere);
    st = psc__guard_leave(ctx, st);
    if (st != PSC_OK) {
        psc__ar_free(ar);
        return st;
    }
    psc__ar_link(ar);
    *out = ar;
    return PSC_OK;
}
