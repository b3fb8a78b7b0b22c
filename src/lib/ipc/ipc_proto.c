/* The checks of p2pscope ipc's requests and answers (ipc/ipc_proto.h). */
#include "ipc/ipc_proto.h"

#include <math.h>
#include <string.h>

#include "xfer/bw.h"

static int psc__memory_method(int32_t m)
{
    return m == PSC_SHARE_LEGACY || m == PSC_SHARE_VMM_FD || m == PSC_SHARE_VMM_FABRIC;
}

static int psc__terminated(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

psc_status_t psc__ipc_op_check(const psc_ipc_op_t *op, int rank, int nranks, psc_ipc_err_t *err)
{
    char why[200];

    if (op->magic != PSC_IPC_OP_MAGIC)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "a request without the p2pscope ipc magic (0x%08x)", op->magic);
    if (op->op < PSC_IPC_OP_CONFIG || op->op > PSC_IPC_OP_LAST)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "request %u: accepted 1 to %d", op->op, PSC_IPC_OP_LAST);
    if (op->op == PSC_IPC_OP_CONFIG) {
        if (op->size < 1 || op->size > (1ull << 40))
            return psc__ipc_fail(err, PSC_ERR_INVALID, "copy size %llu: accepted 1 B to 1 TiB",
                                 (unsigned long long)op->size);
        if (!(op->timeout_ms >= 1 && op->timeout_ms <= 3.6e6))
            return psc__ipc_fail(err, PSC_ERR_INVALID, "timeout %g ms: accepted 1 to 3600000", op->timeout_ms);
        if (op->measure.struct_size != sizeof(op->measure) ||
            psc__measure_opts_check(&op->measure, why, sizeof(why)) != PSC_OK)
            return psc__ipc_fail(err, PSC_ERR_INVALID, "copy options: %s",
                                 op->measure.struct_size != sizeof(op->measure) ? "wrong struct size" : why);
        if (!psc__terminated(op->uuid, sizeof(op->uuid)) || !op->uuid[0])
            return psc__ipc_fail(err, PSC_ERR_INVALID, "a GPU UUID that is empty or not terminated");
        return PSC_OK;
    }
    if (!psc__memory_method(op->method))
        return psc__ipc_fail(err, PSC_ERR_INVALID, "sharing method %d: accepted %d (legacy), %d (VMM fd), %d (fabric)",
                             op->method, PSC_SHARE_LEGACY, PSC_SHARE_VMM_FD, PSC_SHARE_VMM_FABRIC);
    if (op->op == PSC_IPC_OP_SHARE || op->op == PSC_IPC_OP_UNIMPORT || op->op == PSC_IPC_OP_UNSHARE)
        return PSC_OK;
    if (op->peer < 0 || op->peer >= nranks || op->peer == rank)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "peer rank %d: accepted 0 to %d other than %d", op->peer, nranks - 1,
                             rank);
    if (op->op == PSC_IPC_OP_BW && (op->bw < 0 || op->bw >= PSC_IPC_NBW))
        return psc__ipc_fail(err, PSC_ERR_INVALID, "copy %d: accepted 0 to %d", op->bw, PSC_IPC_NBW - 1);
    if ((op->op == PSC_IPC_OP_PING || op->op == PSC_IPC_OP_PONG) &&
        (op->round_trips < 1 || op->round_trips > PSC_IPC_MAX_ROUND_TRIPS))
        return psc__ipc_fail(err, PSC_ERR_INVALID, "%u round trips: accepted 1 to %u", op->round_trips,
                             PSC_IPC_MAX_ROUND_TRIPS);
    return PSC_OK;
}

static int psc__finite_nonneg(double v)
{
    return isfinite(v) && v >= 0;
}

psc_status_t psc__ipc_ans_check(const psc_ipc_ans_t *a, unsigned op, int nranks, psc_ipc_err_t *err)
{
    if (a->magic != PSC_IPC_OP_MAGIC || a->op != op)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "an answer to request %u where %u was asked", a->op, op);
    if (!psc__terminated(a->why, sizeof(a->why)))
        return psc__ipc_fail(err, PSC_ERR_INVALID, "an answer whose reason is not terminated");
    if (a->status > PSC_OK || a->status < PSC_ERR_IO)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "an answer with status %d", a->status);
    if (a->status != PSC_OK)
        return PSC_OK; /* only the reason is read */
    if (op == PSC_IPC_OP_CONFIG && (a->ngpu < 1 || a->ngpu > PSC_MAX_GPUS || a->gpu < 0 || a->gpu >= a->ngpu))
        return psc__ipc_fail(err, PSC_ERR_INVALID, "a worker on GPU %d of %d: accepted 0 to %d of 1 to %d", a->gpu,
                             a->ngpu, PSC_MAX_GPUS - 1, PSC_MAX_GPUS);
    if (!psc__finite_nonneg(a->export_us) || !psc__finite_nonneg(a->import_us) || !psc__finite_nonneg(a->map_us) ||
        !psc__finite_nonneg(a->first_touch_us) || !psc__finite_nonneg(a->touch_us))
        return psc__ipc_fail(err, PSC_ERR_INVALID, "an answer with a time that is negative or not a number");
    if (op == PSC_IPC_OP_IMPORT) {
        if (a->naccess < 1 || a->naccess > PSC_MAX_GPUS)
            return psc__ipc_fail(err, PSC_ERR_INVALID, "access on %d GPUs: accepted 1 to %d", a->naccess, PSC_MAX_GPUS);
        for (int i = 0; i < a->naccess; i++)
            if (a->access[i] != PSC_ACCESS_NONE && a->access[i] != PSC_ACCESS_READ &&
                a->access[i] != PSC_ACCESS_READWRITE && a->access[i] != PSC_IPC_ACCESS_NOT_ASKED)
                return psc__ipc_fail(err, PSC_ERR_INVALID, "access %u on GPU %d: accepted none, read, read-write",
                                     a->access[i], i);
    }
    if (op == PSC_IPC_OP_UNIMPORT)
        for (int i = 0; i < nranks && i < PSC_IPC_MAX_RANKS; i++)
            if (!(isfinite(a->release_us[i]) && (a->release_us[i] >= 0 || a->release_us[i] == -1)))
                return psc__ipc_fail(err, PSC_ERR_INVALID, "release time of rank %d not a number", i);
    if (op == PSC_IPC_OP_PING &&
        (a->rtt_ns.n < 1 || !psc__finite_nonneg(a->rtt_ns.p50) || !psc__finite_nonneg(a->rtt_ns.p99)) && !a->gave_up)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "round trips without figures");
    if (op == PSC_IPC_OP_BW) {
        const psc_bw_result_t *b = &a->bw;

        if (!psc__terminated(b->reason, sizeof(b->reason)) || b->nsamples > PSC_MAX_SAMPLES ||
            (b->status != PSC_RESULT_PASSED && b->status != PSC_RESULT_FAILED && b->status != PSC_RESULT_WAIVED))
            return psc__ipc_fail(err, PSC_ERR_INVALID, "a bandwidth result with a bad status, reason or sample count");
        for (unsigned i = 0; i < b->nsamples; i++)
            if (!psc__finite_nonneg(b->samples_gbs[i]))
                return psc__ipc_fail(err, PSC_ERR_INVALID, "a bandwidth sample that is negative or not a number");
    }
    return PSC_OK;
}
