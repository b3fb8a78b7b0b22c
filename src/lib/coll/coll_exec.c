/*
 * psc_coll_run's machinery (coll_exec.h): communicators, buffers, issuing,
 * waiting within the timeout, the timed loops.
 */
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll/coll_exec.h"
#include "allreduce/allreduce_tune.h"

/* Whether the operation in hand is p2pscope's own collective. */
static int psc__own(const psc_coll_exec_t *x)
{
    return x->sh && x->sh->impl == PSC_COLL_IMPL_P2PSCOPE;
}

/* p2pscope's own collective coll, in words. */
static const char *psc__own_name(int coll)
{
    return coll == PSC_COLL_REDUCE_SCATTER ? "reduce-scatter" : coll == PSC_COLL_ALL_GATHER ? "all-gather" : "all-reduce";
}

/*
 * The wait's end. p2pscope's kernels give up by themselves at the timeout
 * (psc_allreduce_check says so, naming the rank): the host waits twice as
 * long and a second more, so their own report comes first.
 */
static int64_t psc__deadline(const psc_coll_exec_t *x)
{
    double t = x->o->timeout_s;

    if (t > 0 && psc__own(x))
        t = 2 * t + 1;
    return t > 0 ? (int64_t)psc__now_ns() + (int64_t)(t * 1e9) : INT64_MAX;
}

static int psc__past(int64_t deadline)
{
    return deadline != INT64_MAX && (int64_t)psc__now_ns() > deadline;
}

psc_status_t psc__coll_fail(psc_coll_exec_t *x, psc_status_t st, const char *fmt, ...)
{
    char what[160] = "", why[640];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    if (x->sh) {
        const psc_coll_shape_t *sh = x->sh;
        int n = snprintf(what, sizeof(what), "%s of %llu B (%s", psc_coll_name(sh->coll),
                         (unsigned long long)sh->size, psc_dtype_name(sh->dtype));

        if (sh->op >= 0 && n > 0 && (size_t)n < sizeof(what))
            n += snprintf(what + n, sizeof(what) - (size_t)n, ", %s", psc_redop_name(sh->op));
        if (sh->root >= 0 && n > 0 && (size_t)n < sizeof(what))
            n += snprintf(what + n, sizeof(what) - (size_t)n, ", root %d", sh->root);
        if (sh->impl == PSC_COLL_IMPL_P2PSCOPE && n > 0 && (size_t)n < sizeof(what))
            n += snprintf(what + n, sizeof(what) - (size_t)n, ", p2pscope's %s", psc__own_name(sh->coll));
        if (n > 0 && (size_t)n < sizeof(what))
            snprintf(what + n, sizeof(what) - (size_t)n, ")%s%s: ", x->stage ? ", " : "", x->stage ? x->stage : "");
    }
    return psc__fail(x->ctx, st, "p2pscope coll: %s%s", what, why);
}

/* Abort every communicator (a failed or timed-out run): NCCL's way out of a hang. */
static void psc__abort(psc_coll_exec_t *x)
{
    for (int i = 0; i < x->nlocal; i++)
        if (x->comm[i]) {
            x->nccl.comm_abort(x->comm[i]);
            x->comm[i] = NULL;
        }
    x->aborted = 1;
}

/* An NCCL call's result: an error fails naming call, the communicators aborted. */
static psc_status_t psc__nccl_rc(psc_coll_exec_t *x, psc_ncclResult_t rc, const char *call)
{
    char why[512];
    psc_status_t st;

    if (rc == PSC_NCCL_SUCCESS)
        return PSC_OK;
    st = psc__nccl_check(&x->nccl, x->nlocal ? x->comm[0] : NULL, rc, call, why, sizeof(why));
    psc__abort(x);
    return psc__coll_fail(x, st, "%s", why);
}

/* ---- the watchdog of NCCL's host calls */

/*
 * The communicators are blocking, as nccl-tests makes them: NCCL 2.28 starts
 * a thread in every ncclGroupEnd of a non-blocking one, and on a core that
 * mpirun gave to this rank alone that thread waited a scheduler tick (4 ms)
 * per operation. A blocking call may itself block (a peer gone while NCCL
 * connects): -T holds there through this thread, which sleeps until the armed
 * call's deadline and aborts the communicators only once it passes. Arming
 * is a clock read and an atomic store; the thread wakes about once per
 * timeout, never per operation, so it takes nothing from the timed loop.
 */

/* The watchdog's fire: every communicator of this process aborted (the blocked call returns; forgotten at disarm). */
static void psc__watch_fire(void *arg)
{
    psc_coll_exec_t *x = arg;

    for (int i = 0; i < x->nlocal; i++) {
        psc_ncclComm_t c = __atomic_load_n(&x->comm[i], __ATOMIC_ACQUIRE);

        if (c)
            x->nccl.comm_abort(c);
    }
}

/* With a timeout: the thread, started before the communicators are made. */
static psc_status_t psc__watch_start(psc_coll_exec_t *x)
{
    int e;

    if (!(x->o->timeout_s > 0))
        return PSC_OK;
    e = psc__watchdog_start(&x->watch, x->o->timeout_s >= 9e9 ? INT64_MAX / 4 : (int64_t)(x->o->timeout_s * 1e9),
                            psc__watch_fire, x);
    if (e)
        return psc__coll_fail(x, PSC_ERR_NO_MEMORY, "the timeout's watchdog thread could not start: %s (accepted: "
                              "-T 0, no timeout)", strerror(e));
    return PSC_OK;
}

/* Before an NCCL call that may block. */
static void psc__arm(psc_coll_exec_t *x)
{
    psc__watchdog_arm(&x->watch);
}

/* After it: 1 when it was late and the watchdog aborted the communicators (then forgotten here). */
static int psc__disarm(psc_coll_exec_t *x)
{
    if (!psc__watchdog_disarm(&x->watch))
        return 0;
    for (int i = 0; i < x->nlocal; i++)
        x->comm[i] = NULL;
    x->aborted = 1;
    return 1;
}

/* A call the watchdog found late: PSC_ERR_TIMEOUT naming it and this process's ranks. */
static psc_status_t psc__late(psc_coll_exec_t *x, const char *call)
{
    if (x->nlocal > 1)
        return psc__coll_fail(x, PSC_ERR_TIMEOUT, "%s not done after %g s on ranks %d to %d: NCCL communicators "
                              "aborted (accepted: -T longer, or 0 for no limit)", call, x->o->timeout_s,
                              x->first_rank, x->first_rank + x->nlocal - 1);
    return psc__coll_fail(x, PSC_ERR_TIMEOUT, "%s not done after %g s on rank %d: NCCL communicators aborted "
                          "(accepted: -T longer, or 0 for no limit)", call, x->o->timeout_s, x->first_rank);
}

/* An armed call's end: late (the watchdog aborted), failed, or done. */
static psc_status_t psc__nccl_end(psc_coll_exec_t *x, psc_ncclResult_t rc, const char *call)
{
    if (psc__disarm(x))
        return psc__late(x, call);
    return psc__nccl_rc(x, rc, call);
}

/* After p2pscope's operations: whether a call of the group gave up waiting for a peer (PSC_ERR_TIMEOUT, naming it). */
static psc_status_t psc__own_check(psc_coll_exec_t *x)
{
    psc_status_t st;

    if (!x->ar || !psc__own(x) || (st = psc_allreduce_check(x->ar)) == PSC_OK)
        return PSC_OK;
    if (st != PSC_ERR_TIMEOUT)
        return psc__coll_fail(x, st, "%s", psc_context_last_error(x->ctx));
    if (x->nranks > x->nlocal) /* a group of one GPU per process: its rank 0 is this process's rank */
        return psc__coll_fail(x, st, "on rank %d (GPU %d) within -T %g s: %s (accepted: -T longer, or 0 for the "
                              "group's own 10 s per wait)", x->first_rank, x->dev[0], x->o->timeout_s,
                              psc_context_last_error(x->ctx));
    return psc__coll_fail(x, st, "within -T %g s: %s (accepted: -T longer, or 0 for the group's own 10 s per wait)",
                          x->o->timeout_s, psc_context_last_error(x->ctx));
}

psc_status_t psc__coll_wait(psc_coll_exec_t *x)
{
    int64_t deadline = psc__deadline(x);
    int done[PSC_MAX_GPUS] = {0}, left = x->nlocal;

    while (left > 0) {
        int idle = 1;

        for (int i = 0; i < x->nlocal; i++) {
            CUresult rc;
            psc_ncclResult_t async = PSC_NCCL_SUCCESS;

            if (done[i])
                continue;
            if (!x->stream[i] && psc__gpu_use(x->ctx, x->dev[i]) != PSC_OK) /* -y: the GPU's legacy stream */
                return psc__coll_fail(x, PSC_ERR_DRIVER, "%s", psc_context_last_error(x->ctx));
            if ((rc = x->ctx->cu.p_cuStreamQuery(x->stream[i])) == CUDA_SUCCESS) {
                done[i] = 1;
                left--;
                idle = 0;
                continue;
            }
            if (rc != CUDA_ERROR_NOT_READY) {
                psc__abort(x);
                psc__cu_result(x->ctx, rc, "cuStreamQuery");
                return psc__coll_fail(x, PSC_ERR_DRIVER, "rank %d's stream failed: %s", x->first_rank + i,
                                      psc_context_last_error(x->ctx));
            }
            /* NCCL's own errors (a peer gone, a network failure) while the GPU waits for them */
            if (x->comm[i] && x->nccl.comm_get_async_error(x->comm[i], &async) == PSC_NCCL_SUCCESS &&
                async != PSC_NCCL_SUCCESS && async != PSC_NCCL_IN_PROGRESS)
                return psc__nccl_rc(x, async, "ncclCommGetAsyncError");
            if (psc__past(deadline)) {
                psc__abort(x);
                if (psc__own(x))
                    return psc__coll_fail(x, PSC_ERR_TIMEOUT, "not done after %g s (twice -T and 1 s) on rank %d "
                                          "(GPU %d): p2pscope's kernels did not give up by themselves (accepted: -T "
                                          "longer, or 0 for the group's own 10 s per wait)", 2 * x->o->timeout_s + 1,
                                          x->first_rank + i, x->dev[i]);
                return psc__coll_fail(x, PSC_ERR_TIMEOUT, "not done after %g s on rank %d (GPU %d): NCCL "
                                      "communicators aborted (accepted: -T longer, or 0 for no limit)",
                                      x->o->timeout_s, x->first_rank + i, x->dev[i]);
            }
        }
        if (idle) /* NCCL's threads (its proxy) may share this core */
            sched_yield();
    }
    return x->timing ? PSC_OK : psc__own_check(x);
}

int psc__coll_meetings(const psc_coll_opts_t *o)
{
    return o->blocking == 3 ? 1 : o->blocking == 1 ? (o->agg_iters > 1 ? o->agg_iters : 1) : 0;
}

psc_status_t psc__coll_barrier(psc_coll_exec_t *x)
{
    double v = 0;
    const psc_coll_procs_t *p = x->o->procs;

    if (!p || p->nprocs < 2)
        return PSC_OK;
    if (p->allreduce(&v, 1, PSC_COLL_SUM, p->arg) != 0)
        return psc__coll_fail(x, PSC_ERR_IO, "the processes could not meet (the caller's allreduce failed)");
    return PSC_OK;
}

uint64_t psc__coll_unalign(const psc_coll_exec_t *x, const psc_coll_shape_t *sh)
{
    return sh->impl == PSC_COLL_IMPL_P2PSCOPE ? 0 : (uint64_t)x->o->unalign * psc_dtype_size(sh->dtype);
}

/* One rank's buffers for slot `slot` of sh: what it sends from and receives into. */
static void psc__bufs(const psc_coll_exec_t *x, int i, const psc_coll_shape_t *sh, int in_place, unsigned slot,
                      CUdeviceptr *sbuf, CUdeviceptr *rbuf)
{
    uint64_t base = (uint64_t)slot * sh->slot_bytes + psc__coll_unalign(x, sh),
             part = sh->count * psc_dtype_size(sh->dtype);
    int rank = x->first_rank + i;

    if (!in_place) {
        *sbuf = x->send[i] + base;
        *rbuf = x->recv[i] + base;
        return;
    }
    /* nccl-tests' in-place offsets: all_gather's input is its own part, reduce_scatter's output its own part */
    *sbuf = x->recv[i] + base + (sh->coll == PSC_COLL_ALL_GATHER ? (uint64_t)rank * part : 0);
    *rbuf = x->recv[i] + base + (sh->coll == PSC_COLL_REDUCE_SCATTER ? (uint64_t)rank * part : 0);
}

/* One collective of rank i (inside the caller's group). */
static psc_ncclResult_t psc__one(psc_coll_exec_t *x, int i, const psc_coll_shape_t *sh, int in_place, unsigned slot)
{
    const psc_nccl_t *nc = &x->nccl;
    CUdeviceptr sb, rb;
    const void *s;
    void *r;
    psc_ncclComm_t c = x->comm[i];
    psc_ncclStream_t st = (psc_ncclStream_t)x->stream[i];
    int rank = x->first_rank + i, n = x->nranks, dt = sh->dtype, op = sh->op < 0 ? PSC_OP_SUM : sh->op;
    size_t cnt = (size_t)sh->count, ts = psc_dtype_size(dt);
    psc_ncclResult_t rc = PSC_NCCL_SUCCESS;

    psc__bufs(x, i, sh, in_place, slot, &sb, &rb);
    s = (const void *)(uintptr_t)sb;
    r = (void *)(uintptr_t)rb;
    switch (sh->coll) {
    case PSC_COLL_ALL_REDUCE: return nc->all_reduce(s, r, cnt, dt, op, c, st);
    case PSC_COLL_ALL_GATHER: return nc->all_gather(s, r, cnt, dt, c, st);
    case PSC_COLL_REDUCE_SCATTER: return nc->reduce_scatter(s, r, cnt, dt, op, c, st);
    case PSC_COLL_BROADCAST: return nc->broadcast(s, r, cnt, dt, sh->root, c, st);
    case PSC_COLL_REDUCE: return nc->reduce(s, r, cnt, dt, op, sh->root, c, st);
    case PSC_COLL_ALL_TO_ALL:
        if (nc->all_to_all)
            return nc->all_to_all(s, r, cnt, dt, c, st);
        /* before 2.28: a send and a receive per peer, as nccl-tests composes it */
        for (int p = 0; p < n && rc == PSC_NCCL_SUCCESS; p++) {
            rc = nc->send((const char *)s + (size_t)p * cnt * ts, cnt, dt, p, c, st);
            if (rc == PSC_NCCL_SUCCESS)
                rc = nc->recv((char *)r + (size_t)p * cnt * ts, cnt, dt, p, c, st);
        }
        return rc;
    default: /* send/receive: a ring, each rank sends to the next and receives from the one before */
        rc = nc->send(s, cnt, dt, (rank + 1) % n, c, st);
        return rc == PSC_NCCL_SUCCESS ? nc->recv(r, cnt, dt, (rank + n - 1) % n, c, st) : rc;
    }
}

/* The group's calls have no timeout of "none": -T 0 leaves each wait its own 10 s. */
static unsigned psc__own_timeout_ms(const psc_coll_exec_t *x)
{
    double ms = x->o->timeout_s * 1e3;

    return ms <= 0 ? 0 : ms >= (double)UINT_MAX ? UINT_MAX : ms < 1 ? 1 : (unsigned)ms;
}

/* The library's call of p2pscope's collective coll: psc_allreduce_sum, _reduce_scatter or _all_gather. */
typedef psc_status_t (*psc__own_fn)(psc_allreduce_t *, void *const *, const void *const *, size_t, int,
                                    struct CUstream_st *const *, unsigned);
static psc__own_fn psc__own_call(int coll)
{
    return coll == PSC_COLL_REDUCE_SCATTER ? psc_allreduce_reduce_scatter
           : coll == PSC_COLL_ALL_GATHER   ? psc_allreduce_all_gather
                                           : psc_allreduce_sum;
}

/* n of p2pscope's all-reduces (or reduce-scatters, all-gathers), one call each over every local rank, as NCCL's are
   issued. */
static psc_status_t psc__own_issue(psc_coll_exec_t *x, const psc_coll_shape_t *sh, int in_place, uint64_t first,
                                   unsigned n)
{
    void *recv[PSC_MAX_GPUS];
    const void *send[PSC_MAX_GPUS];
    psc_status_t st;

    if (!x->ar)
        return psc__coll_fail(x, PSC_ERR_INVALID, "no all-reduce group made for this run");
    for (unsigned k = 0; k < n; k++) {
        unsigned slot = (unsigned)((first + k) % sh->nslots);

        for (int i = 0; i < x->nlocal; i++) {
            CUdeviceptr sb, rb;

            psc__bufs(x, i, sh, in_place, slot, &sb, &rb);
            send[i] = (const void *)(uintptr_t)sb;
            recv[i] = (void *)(uintptr_t)rb;
        }
        st = psc__own_call(sh->coll)(x->ar, recv, send, (size_t)sh->count, sh->dtype, x->stream,
                                     psc__own_timeout_ms(x));
        if (st != PSC_OK)
            return psc__coll_fail(x, st, "%s: %s", sh->coll == PSC_COLL_REDUCE_SCATTER ? "psc_allreduce_reduce_scatter"
                                  : sh->coll == PSC_COLL_ALL_GATHER ? "psc_allreduce_all_gather" : "psc_allreduce_sum",
                                  psc_context_last_error(x->ctx));
    }
    return PSC_OK;
}

/* The call that may block, for messages: the group's end, or the one collective's own. */
static const char *psc__blocking_call(const psc_coll_shape_t *sh, int group, int has_all_to_all)
{
    static const char *const name[PSC_COLL_N] = {"ncclAllReduce", "ncclAllGather", "ncclReduceScatter",
                                                 "ncclBroadcast", "ncclReduce", "ncclAlltoAll", "ncclGroupEnd"};

    if (group || (sh->coll == PSC_COLL_ALL_TO_ALL && !has_all_to_all))
        return "ncclGroupEnd";
    return sh->coll >= 0 && sh->coll < PSC_COLL_N ? name[sh->coll] : "ncclGroupEnd";
}

psc_status_t psc__coll_issue(psc_coll_exec_t *x, const psc_coll_shape_t *sh, int in_place, uint64_t first,
                             unsigned n)
{
    /* nccl-tests' groups: around several GPUs' calls, around -m's operations; a composed one groups itself */
    int group = x->nlocal > 1 || n > 1, composed = sh->coll == PSC_COLL_SEND_RECV ||
                                                   (sh->coll == PSC_COLL_ALL_TO_ALL && !x->nccl.all_to_all);
    const char *late = psc__blocking_call(sh, group, x->nccl.all_to_all != NULL), *call = late;
    psc_ncclResult_t rc = PSC_NCCL_SUCCESS;

    if (sh->impl == PSC_COLL_IMPL_P2PSCOPE)
        return psc__own_issue(x, sh, in_place, first, n);

    psc__arm(x);
    if (group && (rc = x->nccl.group_start()) != PSC_NCCL_SUCCESS)
        return psc__nccl_end(x, rc, "ncclGroupStart");
    for (unsigned k = 0; k < n && rc == PSC_NCCL_SUCCESS; k++) {
        unsigned slot = (unsigned)((first + k) % sh->nslots);

        for (int i = 0; i < x->nlocal && rc == PSC_NCCL_SUCCESS; i++) {
            psc_ncclResult_t r2;

            if (composed && (rc = x->nccl.group_start()) != PSC_NCCL_SUCCESS)
                break;
            if ((rc = psc__one(x, i, sh, in_place, slot)) != PSC_NCCL_SUCCESS)
                call = "the collective's call";
            if (composed && (r2 = x->nccl.group_end()) != PSC_NCCL_SUCCESS && rc == PSC_NCCL_SUCCESS)
                rc = r2;
        }
    }
    if (group) {
        psc_ncclResult_t r2 = x->nccl.group_end(); /* also after a failed call: the group is closed */

        if (rc == PSC_NCCL_SUCCESS)
            rc = r2;
    }
    if (psc__disarm(x)) /* the call that blocked failed once aborted: the timeout is the cause */
        return psc__late(x, late);
    return psc__nccl_rc(x, rc, call);
}

/* The compute load's mark k (x->mark[k]: the loop's start 0 or end 1) on every local stream, where asked. */
static psc_status_t psc__mark(psc_coll_exec_t *x, int k)
{
    psc_status_t st = PSC_OK;

    for (int i = 0; x->mark[k] && i < x->nlocal && st == PSC_OK; i++)
        if ((st = psc__gpu_use(x->ctx, x->dev[i])) == PSC_OK)
            st = PSC_CU(x->ctx, cuEventRecord, (x->mark[k][i], x->stream[i]));
    return st == PSC_OK ? st : psc__coll_fail(x, st, "marking the loop: %s", psc_context_last_error(x->ctx));
}

/* -I: event idx of every local GPU's stream (nccl-tests' recordEvents). */
static psc_status_t psc__record(psc_coll_exec_t *x, int idx)
{
    psc_status_t st = PSC_OK;

    for (int i = 0; i < x->nlocal && st == PSC_OK; i++)
        if ((st = psc__gpu_use(x->ctx, x->dev[i])) == PSC_OK)
            st = PSC_CU(x->ctx, cuEventRecord, (x->ev[i][idx], x->stream[i]));
    return st == PSC_OK ? st : psc__coll_fail(x, st, "recording an iteration's event: %s",
                                              psc_context_last_error(x->ctx));
}

/* -I: each iteration's time between its events over agg_iters, the most over the local GPUs (nccl-tests' getElapsedTimes). */
static psc_status_t psc__iter_times(psc_coll_exec_t *x, double *iter_s)
{
    const psc_coll_opts_t *o = x->o;
    int paired = o->blocking == 3;
    psc_status_t st;

    for (int j = 0; j < o->iters; j++) {
        iter_s[j] = 0;
        for (int i = 0; i < x->nlocal; i++) {
            float ms = 0;

            if ((st = psc__gpu_use(x->ctx, x->dev[i])) != PSC_OK ||
                (st = PSC_CU(x->ctx, cuEventElapsedTime, (&ms, x->ev[i][paired ? 2 * j : j],
                                                          x->ev[i][paired ? 2 * j + 1 : j + 1]))) != PSC_OK)
                return psc__coll_fail(x, st, "reading an iteration's time: %s", psc_context_last_error(x->ctx));
            if (ms * 1e-3 / o->agg_iters > iter_s[j])
                iter_s[j] = ms * 1e-3 / o->agg_iters;
        }
    }
    return PSC_OK;
}

/*
 * The eager loop. -z 1 and 2 wait after each iteration, -z 1 meeting as nccl-tests does (psc__coll_meetings); -z 3 also,
 * its time the iterations' own (issue to done) without the meetings, as
 * nccl-tests' collOnlySec. cpu_ns: until the last is issued (-z 3: the same).
 */
static psc_status_t psc__time_eager(psc_coll_exec_t *x, const psc_coll_shape_t *sh, int in_place, int record,
                                    double *ns, double *cpu_ns)
{
    const psc_coll_opts_t *o = x->o;
    int z3 = o->blocking == 3;
    psc_status_t st = psc__mark(x, 0);
    double t0 = psc__now_ns(), only = 0;

    for (int it = 0; it < o->iters && st == PSC_OK; it++) {
        double ti = psc__now_ns();

        if ((record && (st = psc__record(x, z3 ? 2 * it : it)) != PSC_OK) ||
            (st = psc__coll_issue(x, sh, in_place, (uint64_t)it * (unsigned)o->agg_iters, (unsigned)o->agg_iters)) !=
                PSC_OK)
            return st;
        if (o->blocking && (st = psc__coll_wait(x)) != PSC_OK)
            return st;
        if (z3 && record && (st = psc__record(x, 2 * it + 1)) != PSC_OK)
            return st;
        only += psc__now_ns() - ti;
        for (int m = psc__coll_meetings(o); m > 0 && st == PSC_OK; m--)
            st = psc__coll_barrier(x);
        if (st != PSC_OK)
            return st;
    }
    if (st != PSC_OK || (record && !z3 && (st = psc__record(x, o->iters)) != PSC_OK))
        return st;
    *cpu_ns = z3 ? only : psc__now_ns() - t0;
    if ((st = psc__mark(x, 1)) != PSC_OK || (st = psc__coll_wait(x)) != PSC_OK)
        return st;
    *ns = z3 ? only : psc__now_ns() - t0;
    return PSC_OK;
}

static psc_status_t psc__time_graph(psc_coll_exec_t *x, const psc_coll_shape_t *sh, int in_place, double *ns,
                                    double *cpu_ns)
{
    const psc_coll_opts_t *o = x->o;
    psc_cuda_t *cu = &x->ctx->cu;
    CUgraph g[PSC_MAX_GPUS] = {0};
    CUgraphExec e[PSC_MAX_GPUS] = {0};
    int capturing = 0;
    psc_status_t st = PSC_OK;
    double t0;

    st = psc__capture_begin(x->ctx, x->nlocal, x->dev, x->stream, &capturing);
    for (int it = 0; it < o->iters && st == PSC_OK; it++)
        st = psc__coll_issue(x, sh, in_place, (uint64_t)it * (unsigned)o->agg_iters, (unsigned)o->agg_iters);
    st = psc__capture_end(x->ctx, capturing, x->dev, x->stream, st, g, e);
    if (st != PSC_OK) {
        st = psc__coll_fail(x, st, "capturing the timed operations in a CUDA graph: %s", psc_context_last_error(x->ctx));
        goto out;
    }
    if ((st = psc__coll_barrier(x)) != PSC_OK || (st = psc__mark(x, 0)) != PSC_OK)
        goto out;
    t0 = psc__now_ns();
    for (int l = 0; l < o->graph_launches && st == PSC_OK; l++)
        for (int i = 0; i < x->nlocal && st == PSC_OK; i++)
            st = PSC_CU(x->ctx, cuGraphLaunch, (e[i], x->stream[i]));
    *cpu_ns = psc__now_ns() - t0; /* nccl-tests' cputime: every launch, not divided by them */
    if (st != PSC_OK)
        st = psc__coll_fail(x, st, "replaying the CUDA graph: %s", psc_context_last_error(x->ctx));
    else if ((st = psc__mark(x, 1)) == PSC_OK && (st = psc__coll_wait(x)) == PSC_OK)
        *ns = (psc__now_ns() - t0) / o->graph_launches;
out:
    for (int i = 0; i < x->nlocal; i++) {
        if (e[i])
            cu->p_cuGraphExecDestroy(e[i]);
        if (g[i])
            cu->p_cuGraphDestroy(g[i]);
    }
    return st;
}

psc_status_t psc__coll_time_ex(psc_coll_exec_t *x, const psc_coll_shape_t *sh, int in_place, double *sec,
                               double *cpu_sec, double *iter_s)
{
    double ns = 0, cpu = 0, per = (double)x->o->iters * x->o->agg_iters;
    int record = iter_s && x->o->per_iter && !x->o->graph_launches && x->nev > 0;
    psc_status_t st;

    x->stage = x->o->graph_launches ? "the timed loop (CUDA graph)" : "the timed loop";
    x->timing = 1;
    st = x->o->graph_launches ? psc__time_graph(x, sh, in_place, &ns, &cpu)
                              : psc__time_eager(x, sh, in_place, record, &ns, &cpu);
    x->timing = 0;
    if (st == PSC_OK && (st = psc__own_check(x)) == PSC_OK) { /* outside the time: it reads each GPU's words */
        *sec = ns * 1e-9 / per;
        if (cpu_sec)
            *cpu_sec = cpu * 1e-9 / per;
        if (record)
            st = psc__iter_times(x, iter_s);
    }
    return st;
}

psc_status_t psc__coll_time(psc_coll_exec_t *x, const psc_coll_shape_t *sh, int in_place, double *sec)
{
    return psc__coll_time_ex(x, sh, in_place, sec, NULL, NULL);
}

psc_status_t psc__coll_time_each(psc_coll_exec_t *x, const psc_coll_shape_t *sh, int in_place, double *us)
{
    int n = x->neach;
    psc_status_t st = PSC_OK;

    x->stage = "the per-operation loop";
    for (int i = 0; i < x->nlocal && st == PSC_OK; i++)
        if ((st = psc__gpu_use(x->ctx, x->dev[i])) == PSC_OK)
            st = PSC_CU(x->ctx, cuEventRecord, (x->ev[i][0], x->stream[i]));
    for (int k = 0; k < n && st == PSC_OK; k++) {
        if ((st = psc__coll_issue(x, sh, in_place, (uint64_t)k, 1)) != PSC_OK)
            return st;
        for (int i = 0; i < x->nlocal && st == PSC_OK; i++)
            if ((st = psc__gpu_use(x->ctx, x->dev[i])) == PSC_OK)
                st = PSC_CU(x->ctx, cuEventRecord, (x->ev[i][k + 1], x->stream[i]));
    }
    if (st != PSC_OK)
        return psc__coll_fail(x, st, "%s", psc_context_last_error(x->ctx));
    if ((st = psc__coll_wait(x)) != PSC_OK)
        return st;
    for (int k = 0; k < n; k++) {
        us[k] = 0;
        for (int i = 0; i < x->nlocal; i++) {
            float ms = 0;

            if ((st = psc__gpu_use(x->ctx, x->dev[i])) != PSC_OK ||
                (st = PSC_CU(x->ctx, cuEventElapsedTime, (&ms, x->ev[i][k], x->ev[i][k + 1]))) != PSC_OK)
                return psc__coll_fail(x, st, "%s", psc_context_last_error(x->ctx));
            if (ms * 1e3 > us[k])
                us[k] = ms * 1e3;
        }
    }
    return PSC_OK;
}

static psc_coll_data_t psc__data(const psc_coll_exec_t *x, int i, const psc_coll_shape_t *sh, int in_place,
                                 uint32_t seed)
{
    psc_coll_data_t d;

    memset(&d, 0, sizeof(d));
    d.coll = sh->coll;
    d.dtype = sh->dtype;
    d.op = sh->op;
    d.nranks = x->nranks;
    d.rank = x->first_rank + i;
    d.root = sh->root;
    d.in_place = in_place;
    d.count = sh->count;
    d.seed = seed;
    return d;
}

psc_status_t psc__coll_fill_all(psc_coll_exec_t *x, const psc_coll_shape_t *sh, int in_place, uint32_t seed,
                                unsigned nslots)
{
    psc_status_t st = PSC_OK;

    for (int i = 0; i < x->nlocal && st == PSC_OK; i++) {
        psc_coll_data_t d = psc__data(x, i, sh, in_place, seed);

        if ((st = psc__gpu_use(x->ctx, x->dev[i])) == PSC_OK)
            st = psc__coll_fill(x->ctx, x->dev[i], x->stream[i], x->send[i] + psc__coll_unalign(x, sh),
                                x->recv[i] + psc__coll_unalign(x, sh), sh->slot_bytes, nslots, &d);
    }
    if (st != PSC_OK)
        return psc__coll_fail(x, st, "setting the inputs: %s", psc_context_last_error(x->ctx));
    return psc__coll_wait(x);
}

/* The first wrong element of rank i (slot * out_elems + element, as the check kernel gives it), as one phrase. */
static void psc__name_wrong(psc_coll_exec_t *x, int i, const psc_coll_shape_t *sh, int in_place, uint32_t seed,
                            uint64_t idx, char *first, size_t len)
{
    psc_coll_data_t d = psc__data(x, i, sh, in_place, seed);
    uint64_t per = psc__coll_out_elems(&d), j;
    size_t ts = psc_dtype_size(sh->dtype);
    uint64_t got = 0;
    unsigned slot;

    if (!per)
        return;
    slot = (unsigned)(idx / per);
    j = idx % per;
    if (psc__gpu_use(x->ctx, x->dev[i]) != PSC_OK ||
        x->ctx->cu.p_cuMemcpyDtoH(&got, x->recv[i] + psc__coll_unalign(x, sh) + (uint64_t)slot * sh->slot_bytes +
                                            (psc__coll_out_offset(&d) + j) * ts,
                                  ts) != CUDA_SUCCESS)
        return;
    snprintf(first, len, "rank %d, %s, slot %u, element %llu: 0x%0*llx, expected 0x%0*llx", d.rank,
             in_place ? "in place" : "out of place", slot, (unsigned long long)j, (int)ts * 2, (unsigned long long)got,
             (int)ts * 2, (unsigned long long)psc__coll_expected_bits(&d, slot, j));
}

psc_status_t psc__coll_check_all(psc_coll_exec_t *x, const psc_coll_shape_t *sh, int in_place, uint32_t seed,
                                 unsigned nslots, long long *wrong, char *first, size_t len)
{
    psc_status_t st = PSC_OK;
    uint64_t init[2] = {0, UINT64_MAX};

    for (int i = 0; i < x->nlocal && st == PSC_OK; i++) {
        psc_coll_data_t d = psc__data(x, i, sh, in_place, seed);

        if ((st = psc__gpu_use(x->ctx, x->dev[i])) == PSC_OK &&
            /* on the check's own stream: a pageable cuMemcpyHtoD may still be in flight when a kernel there starts */
            (st = PSC_CU(x->ctx, cuMemcpyAsync, (x->words[i], (CUdeviceptr)(uintptr_t)init, sizeof(init),
                                                 x->stream[i]))) == PSC_OK)
            st = psc__coll_check(x->ctx, x->dev[i], x->stream[i], x->recv[i] + psc__coll_unalign(x, sh),
                                 sh->slot_bytes, nslots, &d,
                                 x->words[i]);
    }
    if (st != PSC_OK)
        return psc__coll_fail(x, st, "checking the outputs: %s", psc_context_last_error(x->ctx));
    if ((st = psc__coll_wait(x)) != PSC_OK)
        return st;
    for (int i = 0; i < x->nlocal; i++) {
        uint64_t w[2];

        if ((st = psc__gpu_use(x->ctx, x->dev[i])) != PSC_OK ||
            (st = PSC_CU(x->ctx, cuMemcpyDtoH, (w, x->words[i], sizeof(w)))) != PSC_OK)
            return psc__coll_fail(x, st, "reading the check's count: %s", psc_context_last_error(x->ctx));
        *wrong += (long long)w[0];
        if (w[0] && first && !first[0])
            psc__name_wrong(x, i, sh, in_place, seed, w[1], first, len);
    }
    return PSC_OK;
}

/* ---- opening and closing */

static psc_status_t psc__alloc(psc_coll_exec_t *x, int i, CUdeviceptr *p)
{
    void *q = NULL;

    if (x->nccl.mem_alloc && x->nccl.mem_free) {
        /* NCCL's own allocation (cuMem, registrable), as nccl-tests uses from 2.19: the same paths open to NCCL */
        if (x->nccl.mem_alloc(&q, (size_t)x->buf_bytes) == PSC_NCCL_SUCCESS) {
            *p = (CUdeviceptr)(uintptr_t)q;
            x->nccl_mem[i] = 1;
            return PSC_OK;
        }
        return psc__coll_fail(x, PSC_ERR_NO_MEMORY, "ncclMemAlloc of %llu B on GPU %d failed: accepted sizes that fit "
                              "twice in the GPU's free memory (-e smaller)", (unsigned long long)x->buf_bytes, x->dev[i]);
    }
    if (x->ctx->cu.p_cuMemAlloc(p, (size_t)x->buf_bytes) != CUDA_SUCCESS)
        return psc__coll_fail(x, PSC_ERR_NO_MEMORY, "cuMemAlloc of %llu B on GPU %d failed: accepted sizes that fit "
                              "twice in the GPU's free memory (-e smaller)", (unsigned long long)x->buf_bytes, x->dev[i]);
    return PSC_OK;
}

static void psc__free(psc_coll_exec_t *x, int i, CUdeviceptr p)
{
    if (!p)
        return;
    if (x->nccl_mem[i])
        x->nccl.mem_free((void *)(uintptr_t)p);
    else
        x->ctx->cu.p_cuMemFree(p);
}

static psc_status_t psc__open_gpu(psc_coll_exec_t *x, int i)
{
    psc_status_t st;

    if ((st = psc__gpu_use(x->ctx, x->dev[i])) != PSC_OK)
        return st;
    /* -y: NULL, each GPU's legacy default stream, as nccl-tests' streamnull */
    if ((!x->o->stream_null && (st = PSC_CU(x->ctx, cuStreamCreate, (&x->stream[i], CU_STREAM_NON_BLOCKING))) != PSC_OK) ||
        (st = psc__alloc(x, i, &x->send[i])) != PSC_OK || (st = psc__alloc(x, i, &x->recv[i])) != PSC_OK)
        return st;
    if (x->ctx->cu.p_cuMemAlloc(&x->words[i], 16) != CUDA_SUCCESS)
        return psc__coll_fail(x, PSC_ERR_NO_MEMORY, "no 16 B of device memory left on GPU %d", x->dev[i]);
    if (x->nev) {
        if (!(x->ev[i] = calloc((size_t)x->nev, sizeof(CUevent))))
            return psc__fail(x->ctx, PSC_ERR_NO_MEMORY, "out of host memory");
        for (int k = 0; k < x->nev; k++)
            if ((st = PSC_CU(x->ctx, cuEventCreate, (&x->ev[i][k], CU_EVENT_DEFAULT))) != PSC_OK)
                return st;
    }
    return PSC_OK;
}

/* Every process's verdict: ok only when all were. One process's failure reaches the others before NCCL waits for it. */
static int psc__all_ok(psc_coll_exec_t *x, int ok)
{
    const psc_coll_procs_t *p = x->o->procs;
    double v = ok ? 0 : 1;

    if (!p || p->nprocs < 2)
        return ok;
    if (p->allreduce(&v, 1, PSC_COLL_MAX, p->arg) != 0)
        return 0;
    return v == 0;
}

static psc_status_t psc__open_comms(psc_coll_exec_t *x)
{
    const psc_coll_procs_t *p = x->o->procs;
    psc_ncclUniqueId id;
    psc_ncclConfig_t cfg;
    psc_ncclResult_t rc = PSC_NCCL_SUCCESS;
    psc_status_t st;

    memset(&id, 0, sizeof(id));
    if ((!p || p->proc == 0) && (rc = x->nccl.get_unique_id(&id)) != PSC_NCCL_SUCCESS)
        st = psc__nccl_rc(x, rc, "ncclGetUniqueId");
    else
        st = PSC_OK;
    if (!psc__all_ok(x, st == PSC_OK))
        return st != PSC_OK ? st : psc__coll_fail(x, PSC_ERR_IO, "another process could not start NCCL");
    if (p && p->nprocs > 1 && p->bcast(&id, sizeof(id), p->arg) != 0)
        return psc__coll_fail(x, PSC_ERR_IO, "the NCCL id could not reach the processes (the caller's bcast failed)");
    /* blocking, as nccl-tests makes them (see the watchdog) */
    psc__nccl_config_init(&cfg, 1, x->nccl.version);
    psc__nccl_config_cta_policy(&cfg, x->cta_policy, x->nccl.version);
    x->stage = "making the NCCL communicators";
    if ((st = psc__watch_start(x)) != PSC_OK)
        return st;
    psc__arm(x);
    if ((rc = x->nccl.group_start()) != PSC_NCCL_SUCCESS)
        return psc__nccl_end(x, rc, "ncclGroupStart");
    for (int i = 0; i < x->nlocal && rc == PSC_NCCL_SUCCESS; i++) {
        if ((st = psc__gpu_use(x->ctx, x->dev[i])) != PSC_OK) {
            x->nccl.group_end();
            psc__disarm(x);
            return st;
        }
        rc = x->nccl.comm_init_rank_config
                 ? x->nccl.comm_init_rank_config(&x->comm[i], x->nranks, id, x->first_rank + i, &cfg)
                 : x->nccl.comm_init_rank(&x->comm[i], x->nranks, id, x->first_rank + i);
    }
    if (rc != PSC_NCCL_SUCCESS)
        x->nccl.group_end();
    else
        rc = x->nccl.group_end();
    st = psc__nccl_end(x, rc, "ncclCommInitRank");
    x->stage = NULL;
    return st;
}

/*
 * opts.tune_own: the group tuned beside NCCL for the run's collective alone (the all-reduce, the reduce-scatter or
 * the all-gather: the rows of no other consult it). Without a usable NCCL, in whichever process, the group keeps
 * its own ways and the note says why.
 */
static psc_status_t psc__tune_group(psc_coll_exec_t *x, const psc_ar_procs_t *ap)
{
    const int c = x->o->coll;
    psc_status_t st;

    if (!x->o->tune_own) /* (a group is made only for a collective of p2pscope's own) */
        return PSC_OK;
    x->stage = c == PSC_COLL_ALL_REDUCE      ? "tuning p2pscope's all-reduce beside NCCL's"
               : c == PSC_COLL_ALL_GATHER   ? "tuning p2pscope's all-gather beside NCCL's"
                                            : "tuning p2pscope's reduce-scatter beside NCCL's";
    if ((st = psc__ar_tune_kinds(x->ar, c == PSC_COLL_ALL_REDUCE ? 1u : c == PSC_COLL_REDUCE_SCATTER ? 2u : 4u)) !=
            PSC_OK ||
        (st = psc__ar_tune_timeout(x->ar, psc__own_timeout_ms(x))) != PSC_OK) /* -T bounds the tuning too */
        return psc__coll_fail(x, st, "%s", psc_context_last_error(x->ctx));
    st = psc_allreduce_tune(x->ar, ap, x->stream);
    if (st == PSC_OK)
        x->tuned = 1;
    else if (st == PSC_ERR_UNSUPPORTED)
        snprintf(x->tune_note, sizeof(x->tune_note), "not tuned: %s", psc_context_last_error(x->ctx));
    else
        return psc__coll_fail(x, st, "%s: %s", x->stage, psc_context_last_error(x->ctx));
    return PSC_OK;
}

/* The group's processes meet through the run's allgather: the same call, the same order. */
static psc_status_t psc__open_group(psc_coll_exec_t *x)
{
    const psc_coll_procs_t *p = x->o->procs;
    size_t max = (size_t)(x->o->max_bytes < 16 ? 16 : x->o->max_bytes);
    psc_ar_procs_t ap;
    const int joined = p && p->nprocs > 1;
    psc_status_t st;

    x->stage = "making p2pscope's all-reduce group";
    memset(&ap, 0, sizeof(ap));
    if (joined) {
        ap.nprocs = p->nprocs;
        ap.proc = p->proc;
        ap.arg = p->arg;
        ap.allgather = p->allgather;
        st = psc_allreduce_join(x->ctx, x->dev[0], &ap, max, &x->ar);
    } else {
        st = psc_allreduce_create(x->ctx, x->dev, x->nlocal, max, &x->ar);
    }
    if (st != PSC_OK)
        st = psc__coll_fail(x, st, "%s", psc_context_last_error(x->ctx));
    else
        st = psc__tune_group(x, joined ? &ap : NULL);
    x->stage = NULL;
    return st;
}

psc_status_t psc__coll_exec_open(psc_coll_exec_t *x)
{
    psc_status_t st = PSC_OK;

    /* 16-byte multiples: p2pscope's slots are 16-byte aligned, the largest one fits */
    x->buf_bytes = x->o->max_bytes < 16 ? 16 : (x->o->max_bytes + 15) / 16 * 16;
    x->buf_bytes += 8 * (uint64_t)x->o->unalign; /* nccl-tests' pad: the largest type's -u elements */
    x->neach = x->o->per_op ? (x->o->iters < PSC_COLL_MAX_EACH ? x->o->iters : PSC_COLL_MAX_EACH) : 0;
    x->nev = x->neach ? x->neach + 1 : 0;
    if (x->o->per_iter) { /* -z 3 pairs them: each iteration's start and stop */
        int need = x->o->blocking == 3 ? 2 * x->o->iters : x->o->iters + 1;

        x->nev = need > x->nev ? need : x->nev;
    }
    psc__coll_mem_note(x, 0);
    for (int i = 0; i < x->nlocal && st == PSC_OK; i++)
        st = psc__open_gpu(x, i);
    psc__coll_mem_note(x, 1);
    if (!psc__all_ok(x, st == PSC_OK))
        return st != PSC_OK ? st : psc__coll_fail(x, PSC_ERR_IO, "another process could not set up its GPU");
    if (x->use_nccl && (st = psc__open_comms(x)) != PSC_OK)
        return st;
    psc__coll_mem_note(x, 2);
    if (x->use_nccl && (st = psc__coll_register(x)) != PSC_OK)
        return st;
    psc__coll_mem_note(x, 3);
    /* join reports the same status in every process: nothing more to agree on */
    if (!x->want_own || (st = psc__open_group(x)) == PSC_OK)
        return PSC_OK;
    /* a machine where the group cannot be (no peer access, no IPC): NCCL's rows alone, the reason kept */
    if (st == PSC_ERR_UNSUPPORTED && x->use_nccl) {
        snprintf(x->own_not_run, sizeof(x->own_not_run), "%s", psc_context_last_error(x->ctx));
        x->want_own = 0;
        return PSC_OK;
    }
    return st;
}

/*
 * The group goes once no kernel of it can still run: its streams idle (its
 * kernels give up by themselves at the timeout) and, with processes, every
 * process past its last call (a barrier, only after a run that went well: a
 * failed process may never come).
 */
static void psc__close_group(psc_coll_exec_t *x, int failed)
{
    if (!x->ar)
        return;
    for (int i = 0; i < x->nlocal; i++)
        if (x->stream[i] && psc__gpu_use(x->ctx, x->dev[i]) == PSC_OK)
            x->ctx->cu.p_cuStreamSynchronize(x->stream[i]);
    /* a failed run: the processes may not be in step for the group's meeting at destroy; the context frees
       it at its end (psc_context_destroy) */
    if (!failed)
        psc_allreduce_destroy(x->ar);
    x->ar = NULL;
}

void psc__coll_exec_close(psc_coll_exec_t *x, int failed)
{
    if (failed) /* a peer may be gone or stuck: a finalize could wait for it forever */
        psc__abort(x);
    psc__coll_deregister(x);
    /*
     * NCCL 2.14+: finalize flushes a healthy communicator before it is
     * destroyed; it completes only once every rank's is quiescent, so this
     * process's communicators are finalized together, in one group.
     */
    if (x->nccl.comm_finalize && x->nlocal && x->comm[0]) {
        psc_ncclResult_t rc;

        psc__arm(x); /* a peer that never finalizes: aborted at the timeout */
        if ((rc = x->nccl.group_start()) == PSC_NCCL_SUCCESS) {
            for (int i = 0; i < x->nlocal; i++)
                if (x->comm[i])
                    x->nccl.comm_finalize(x->comm[i]);
            x->nccl.group_end();
        }
        psc__disarm(x);
    }
    psc__watchdog_stop(&x->watch);
    for (int i = 0; i < x->nlocal; i++) {
        if (x->comm[i])
            x->nccl.comm_destroy(x->comm[i]);
        x->comm[i] = NULL;
    }
    psc__close_group(x, failed); /* after NCCL's: an aborted communicator's kernels leave the streams */
    for (int i = 0; i < x->nlocal; i++) {
        if (psc__gpu_use(x->ctx, x->dev[i]) != PSC_OK)
            continue;
        for (int k = 0; x->ev[i] && k < x->nev; k++)
            if (x->ev[i][k])
                x->ctx->cu.p_cuEventDestroy(x->ev[i][k]);
        free(x->ev[i]);
        x->ev[i] = NULL;
        psc__free(x, i, x->send[i]);
        psc__free(x, i, x->recv[i]);
        if (x->words[i])
            x->ctx->cu.p_cuMemFree(x->words[i]);
        if (x->stream[i])
            x->ctx->cu.p_cuStreamDestroy(x->stream[i]);
        x->send[i] = x->recv[i] = x->words[i] = 0;
        x->stream[i] = NULL;
    }
}
