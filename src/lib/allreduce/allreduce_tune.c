/*
 * psc_allreduce_tune: NCCL communicators over a group's ranks; the group's
 * kernels, its copy engines (where it has them: 2 ranks, from 4 MiB) and
 * ncclAllReduce timed alike at every power of two up to max_bytes, and the
 * reduce-scatter's and all-gather's kernels beside ncclReduceScatter and
 * ncclAllGather for parts up to max_bytes / n; later calls routed to the
 * fastest. psc_allreduce_sum and
 * psc_allreduce_destroy reach this file through the group's hooks
 * (ar_group.h), so allreduce.c never calls here directly: this file calls it.
 *
 * In a joined group the processes meet (psc__tune_sync) at the same points of
 * one control flow: each brings its status so far, and the first failure
 * stops every process at that meeting instead of leaving the others waiting.
 */
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allreduce/allreduce_tune.h"
#include "allreduce/ar_group.h"
#include "driver/nccl.h"
#include "util/watchdog.h"

#define PSC__TUNE_REPS 5                 /* repetitions each way: the median decides */
#define PSC__TUNE_CALLS 16u              /* calls per graph up to 1 MiB; 16 MiB / bytes above, at least one */
#define PSC__TUNE_FULL_CALLS (1ull << 20)

/* The collectives a tuning times (bits of psc__ar_tune_kinds' mask, indexes of psc__tune_rows). */
enum { PSC__TK_SUM = 0, PSC__TK_RS = 1, PSC__TK_AG = 2, PSC__TK_N = 3 };

struct psc__ar_tune {
    psc_nccl_t nccl;
    unsigned kinds;                         /* the collectives to time (1 << PSC__TK_*); 0: every one */
    double timeout_ns;                      /* a timed run's longest wait (psc__ar_tune_timeout); 0: none */
    psc_watchdog_t watch;                   /* with a timeout: finds a run late (psc__tune_fire) */
    int in_nccl;                            /* atomic: this thread is between an ncclGroupStart and its end */
    int fire_aborted;                       /* the watchdog aborted the communicators (under watch.mu) */
    psc_ncclComm_t comm[PSC_AR_MAX_RANKS]; /* local rank i's */
    int ready;                              /* measured: calls are routed by the table */
    int told;                               /* a meeting reported a failure: the others know */
    psc_ar_tuning_t table;
    psc__ar_tune_skew_fn skew;
    void *skew_arg;
};

/* One process's word at a meeting: its status so far, and (after a class) its medians. */
typedef struct {
    int32_t status, graphs;
    double own_us, nccl_us, copy_us; /* the kernels', NCCL's, the copy engines' (0: not timed) */
} psc__tune_rec_t;

/* The NCCL id from process 0, and whether each process could load NCCL. */
typedef struct {
    int32_t status, pad;
    psc_ncclUniqueId id;
} psc__tune_id_t;

int psc__ar_tune_class(uint64_t bytes)
{
    int k = 0;

    while (k < 63 && (16ull << k) < bytes)
        k++;
    return k;
}

static void psc__tune_free(psc_allreduce_t *ar);

static struct psc__ar_tune *psc__tune_state(psc_allreduce_t *ar)
{
    if (!ar->tune && (ar->tune = calloc(1, sizeof(*ar->tune))))
        ar->tune_free = psc__tune_free;
    return ar->tune;
}

psc_status_t psc__ar_tune_skew(psc_allreduce_t *ar, psc__ar_tune_skew_fn fn, void *arg)
{
    if (!psc__tune_state(ar))
        return psc__fail(ar->ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    ar->tune->skew = fn;
    ar->tune->skew_arg = arg;
    return PSC_OK;
}

/* Every process's record (this one's alone without procs): the first failure, else the slowest times, in *rec. */
static psc_status_t psc__tune_meet(psc_allreduce_t *ar, const psc_ar_procs_t *p, psc__tune_rec_t *rec)
{
    psc__tune_rec_t all[PSC_AR_MAX_RANKS];
    psc_context_t *ctx = ar->ctx;

    psc_status_t st;

    if (!p)
        return (psc_status_t)rec->status;
    if ((st = psc__ar_allgather(ctx, p, rec, all, sizeof(*rec), "psc_allreduce_tune")) != PSC_OK ||
        (st = psc__ar_first_failure(ctx, all, sizeof(all[0]), offsetof(psc__tune_rec_t, status), p->nprocs, p->proc,
                                    "psc_allreduce_tune", "time its calls")) != PSC_OK) {
        ar->tune->told = 1; /* every process's allgather fails alike, or none can be told */
        return st;
    }
    for (int q = 0; q < p->nprocs; q++) {
        if (all[q].graphs < rec->graphs)
            rec->graphs = all[q].graphs;
        if (all[q].own_us > rec->own_us)
            rec->own_us = all[q].own_us;
        if (all[q].nccl_us > rec->nccl_us)
            rec->nccl_us = all[q].nccl_us;
        if (all[q].copy_us > rec->copy_us)
            rec->copy_us = all[q].copy_us;
    }
    return PSC_OK;
}

/* A meeting with nothing but the status (a barrier where all went well). */
static psc_status_t psc__tune_sync(psc_allreduce_t *ar, const psc_ar_procs_t *p, psc_status_t st)
{
    psc__tune_rec_t rec;

    memset(&rec, 0, sizeof(rec));
    rec.status = st;
    rec.graphs = 1;
    return psc__tune_meet(ar, p, &rec);
}

/* The tuning's index of a call's kind (0 a sum, PSC__AR_RS, PSC__AR_AG). */
static int psc__tune_kind(int kind)
{
    return kind == PSC__AR_RS ? PSC__TK_RS : kind == PSC__AR_AG ? PSC__TK_AG : PSC__TK_SUM;
}

/* The table's rows of collective tk. */
static psc_ar_tune_row_t *psc__tune_rows(psc_ar_tuning_t *tb, int tk)
{
    return tk == PSC__TK_RS ? tb->rs : tk == PSC__TK_AG ? tb->ag : tb->row;
}

psc_status_t psc__ar_tune_timeout(psc_allreduce_t *ar, unsigned ms)
{
    if (!psc__tune_state(ar))
        return psc__fail(ar->ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    ar->tune->timeout_ns = (double)ms * 1e6;
    return PSC_OK;
}

psc_status_t psc__ar_tune_kinds(psc_allreduce_t *ar, unsigned mask)
{
    if (!psc__tune_state(ar))
        return psc__fail(ar->ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    ar->tune->kinds = mask & ((1u << PSC__TK_N) - 1);
    return PSC_OK;
}

static psc_status_t psc__tune_nccl_fail(psc_allreduce_t *ar, psc_ncclResult_t rc, const char *call)
{
    char why[512];
    psc_status_t st = psc__nccl_check(&ar->tune->nccl, ar->tune->comm[0], rc, call, why, sizeof(why));

    return psc__fail(ar->ctx, st, "psc_allreduce: %s", why);
}

/* Local rank i's NCCL call of collective tk (count: a part's for the reduce-scatter and the all-gather). */
static psc_ncclResult_t psc__tune_nccl_one(struct psc__ar_tune *t, int tk, int i, const void *send, void *recv,
                                           size_t count, int dtype, struct CUstream_st *stream)
{
    if (tk == PSC__TK_RS)
        return t->nccl.reduce_scatter(send, recv, count, dtype, PSC_OP_SUM, t->comm[i], stream);
    if (tk == PSC__TK_AG)
        return t->nccl.all_gather(send, recv, count, dtype, t->comm[i], stream);
    return t->nccl.all_reduce(send, recv, count, dtype, PSC_OP_SUM, t->comm[i], stream);
}

/* One call of collective tk through NCCL: a group of one ncclAllReduce (ncclReduceScatter, ncclAllGather) per local
   rank, on its stream. */
static psc_status_t psc__tune_nccl_call(psc_allreduce_t *ar, int tk, void *const *recv, const void *const *send,
                                        size_t count, int dtype, struct CUstream_st *const *streams)
{
    static const char *const names[PSC__TK_N] = {"ncclAllReduce", "ncclReduceScatter", "ncclAllGather"};
    struct psc__ar_tune *t = ar->tune;
    psc_context_t *ctx = ar->ctx;
    psc_ncclResult_t rc;
    psc_status_t st = PSC_OK;

    if (psc__watchdog_late(&t->watch)) /* the tuning's run was found late: psc__tune_late says so */
        return PSC_ERR_TIMEOUT;
    psc__guard_enter(ctx);
    __atomic_store_n(&t->in_nccl, 1, __ATOMIC_SEQ_CST);
    if ((rc = t->nccl.group_start()) != PSC_NCCL_SUCCESS) {
        st = psc__tune_nccl_fail(ar, rc, "ncclGroupStart");
        goto out;
    }
    /* late (the watchdog may have aborted the communicators): no more calls on them, the group left open */
    for (int i = 0; i < ar->nlocal && st == PSC_OK; i++)
        if (psc__watchdog_late(&t->watch))
            st = PSC_ERR_TIMEOUT;
        else if ((st = psc__gpu_use(ctx, ar->dev[i])) == PSC_OK &&
                 (rc = psc__tune_nccl_one(t, tk, i, send[i], recv[i], count, dtype, streams[i])) != PSC_NCCL_SUCCESS)
            st = psc__tune_nccl_fail(ar, rc, names[tk]);
    if (st != PSC_ERR_TIMEOUT && psc__watchdog_late(&t->watch))
        st = PSC_ERR_TIMEOUT;
    else if (st != PSC_ERR_TIMEOUT && (rc = t->nccl.group_end()) != PSC_NCCL_SUCCESS && st == PSC_OK)
        st = psc__tune_nccl_fail(ar, rc, "ncclGroupEnd");
out:
    __atomic_store_n(&t->in_nccl, 0, __ATOMIC_SEQ_CST);
    return psc__guard_leave(ctx, st);
}

/* The calls' hook (kind: 0 a sum, PSC__AR_RS, PSC__AR_AG): 1 when the call's class goes to NCCL (then *st is how it
   went); else *way, its way. */
static int psc__tune_route(psc_allreduce_t *ar, int kind, void *const *recv, const void *const *send, size_t count,
                           int dtype, struct CUstream_st *const *streams, psc_status_t *st, int *way)
{
    struct psc__ar_tune *t = ar->tune;
    const int tk = psc__tune_kind(kind), k = psc__ar_tune_class((uint64_t)count * (dtype == PSC_AR_FLOAT32 ? 4u : 2u));
    const psc_ar_tune_row_t *row;

    if (!t || !t->ready || k >= (tk == PSC__TK_SUM ? t->table.rows : t->table.part_rows))
        return 0;
    row = &psc__tune_rows(&t->table, tk)[k];
    if (!row->bytes) /* a collective not timed */
        return 0;
    if (tk == PSC__TK_AG) /* the all-gather's and the reduce-scatter's words for their ways */
        *way = row->copy_engines ? PSC__AR_AG_COPY : PSC__AR_AG_KERNEL;
    else if (tk == PSC__TK_RS)
        *way = row->copy_engines ? PSC__AR_RS_COPY : PSC__AR_RS_KERNEL;
    else
        *way = row->copy_engines ? PSC__AR_COPY : PSC__AR_ONESHOT;
    if (!row->nccl)
        return 0;
    *st = psc__tune_nccl_call(ar, tk, recv, send, count, dtype, streams);
    return 1;
}

/* The communicators go: finalized together and destroyed after a healthy run, else aborted (a peer may be gone). */
static void psc__tune_close(psc_allreduce_t *ar, int healthy)
{
    struct psc__ar_tune *t = ar->tune;
    psc_context_t *ctx = ar->ctx;

    if (!t->nccl.handle)
        return;
    if (healthy && t->nccl.comm_finalize && t->comm[0] && t->nccl.group_start() == PSC_NCCL_SUCCESS) {
        for (int i = 0; i < ar->nlocal; i++)
            if (t->comm[i] && psc__gpu_use(ctx, ar->dev[i]) == PSC_OK)
                t->nccl.comm_finalize(t->comm[i]);
        t->nccl.group_end();
    }
    for (int i = 0; i < ar->nlocal; i++) {
        if (!t->comm[i])
            continue;
        if (psc__gpu_use(ctx, ar->dev[i]) == PSC_OK) {
            if (healthy)
                t->nccl.comm_destroy(t->comm[i]);
            else
                t->nccl.comm_abort(t->comm[i]);
        }
        t->comm[i] = NULL;
    }
    psc__nccl_unload(&t->nccl);
}

/* psc_allreduce_destroy's hook. */
static void psc__tune_free(psc_allreduce_t *ar)
{
    psc__guard_enter(ar->ctx);
    psc__tune_close(ar, 1);
    psc__guard_leave(ar->ctx, PSC_OK);
    free(ar->tune);
    ar->tune = NULL;
    ar->tune_route = NULL;
    ar->tune_free = NULL;
}

/* Every process's id record (this one's alone without procs): the first failure, else process 0's id in *id. */
static psc_status_t psc__tune_ids(psc_allreduce_t *ar, const psc_ar_procs_t *p, const psc__tune_id_t *mine,
                                  psc_ncclUniqueId *id, const char *stage)
{
    psc__tune_id_t all[PSC_AR_MAX_RANKS];
    psc_context_t *ctx = ar->ctx;

    psc_status_t st;

    if (!p) {
        *id = mine->id;
        return (psc_status_t)mine->status;
    }
    if ((st = psc__ar_allgather(ctx, p, mine, all, sizeof(*mine), "psc_allreduce_tune")) != PSC_OK ||
        (st = psc__ar_first_failure(ctx, all, sizeof(all[0]), offsetof(psc__tune_id_t, status), p->nprocs, p->proc,
                                    "psc_allreduce_tune", stage)) != PSC_OK) {
        ar->tune->told = 1;
        return st;
    }
    *id = all[0].id;
    return PSC_OK;
}

/*
 * Load NCCL in every process; once all could, process 0's id to all (not
 * before: an id nobody joins would be left behind); one communicator per
 * local rank. st: this process's checks so far (a failure goes to the others
 * in the first exchange).
 */
static psc_status_t psc__tune_open(psc_allreduce_t *ar, const psc_ar_procs_t *p, psc_status_t st)
{
    struct psc__ar_tune *t = ar->tune;
    psc_context_t *ctx = ar->ctx;
    psc__tune_id_t mine;
    psc_ncclUniqueId id;
    psc_ncclResult_t rc = PSC_NCCL_SUCCESS;
    char why[512];

    memset(&mine, 0, sizeof(mine));
    if (st != PSC_OK)
        mine.status = st;
    else if ((st = psc__nccl_load(&t->nccl, why, sizeof(why))) != PSC_OK)
        mine.status = psc__fail(ctx, st, "psc_allreduce_tune: %s (the group keeps its own kernel for every call)",
                                why);
    if ((st = psc__tune_ids(ar, p, &mine, &id, "start NCCL")) != PSC_OK)
        return st;
    if ((!p || p->proc == 0) && (rc = t->nccl.get_unique_id(&mine.id)) != PSC_NCCL_SUCCESS)
        mine.status = psc__tune_nccl_fail(ar, rc, "ncclGetUniqueId");
    if ((st = psc__tune_ids(ar, p, &mine, &id, "make an NCCL id")) != PSC_OK)
        return st;
    t->table.nccl_version = t->nccl.version;
    if ((rc = t->nccl.group_start()) != PSC_NCCL_SUCCESS)
        return psc__tune_nccl_fail(ar, rc, "ncclGroupStart");
    for (int i = 0; i < ar->nlocal && st == PSC_OK; i++)
        if ((st = psc__gpu_use(ctx, ar->dev[i])) == PSC_OK &&
            (rc = t->nccl.comm_init_rank(&t->comm[i], ar->n, id, ar->first + i)) != PSC_NCCL_SUCCESS) {
            t->comm[i] = NULL;
            st = psc__tune_nccl_fail(ar, rc, "ncclCommInitRank");
        }
    rc = t->nccl.group_end();
    if (st == PSC_OK && rc != PSC_NCCL_SUCCESS)
        st = psc__tune_nccl_fail(ar, rc, "ncclCommInitRank");
    return st;
}

/*
 * `calls` in-place calls of collective tk, fp32, count elements (a part's) one way on every local stream:
 * PSC__AR_TUNE_KERNELS the group's kernels (by size, without its copy engines), PSC__AR_TUNE_COPY its copy engines,
 * PSC__AR_TUNE_NCCL NCCL. In place: a reduce-scatter's output and an all-gather's input are the rank's part of buf.
 */
static psc_status_t psc__tune_issue(psc_allreduce_t *ar, int tk, int way, void *const *buf, size_t count,
                                    unsigned calls, struct CUstream_st *const *streams)
{
    const int copy = way == PSC__AR_TUNE_COPY;
    const int by = tk == PSC__TK_RS   ? (copy ? PSC__AR_RS_COPY : PSC__AR_RS_KERNEL)
                   : tk == PSC__TK_AG ? (copy ? PSC__AR_AG_COPY : PSC__AR_AG_KERNEL)
                                      : (copy ? PSC__AR_COPY : PSC__AR_ONESHOT);
    void *part[PSC_AR_MAX_RANKS];
    void *const *send = buf, *const *recv = buf;
    psc_status_t st = PSC_OK;

    for (int i = 0; i < ar->nlocal; i++)
        part[i] = (unsigned char *)buf[i] + (size_t)(ar->first + i) * count * 4;
    if (tk == PSC__TK_RS)
        recv = part;
    else if (tk == PSC__TK_AG)
        send = part;
    for (unsigned c = 0; c < calls && st == PSC_OK; c++)
        st = way == PSC__AR_TUNE_NCCL
                 ? psc__tune_nccl_call(ar, tk, recv, (const void *const *)send, count, PSC_AR_FLOAT32, streams)
                 : psc__ar_sum(ar, recv, (const void *const *)send, count, PSC_AR_FLOAT32, streams,
                               (unsigned)(ar->tune->timeout_ns / 1e6), by); /* the kernels give up at -T too */
    return st;
}

/* The calls captured on every local stream, one graph each, instantiated into exec. */
static psc_status_t psc__tune_capture(psc_allreduce_t *ar, int tk, int way, void *const *buf, size_t count,
                                      unsigned calls, struct CUstream_st *const *streams, CUgraphExec *exec)
{
    psc_context_t *ctx = ar->ctx;
    CUgraph g[PSC_AR_MAX_RANKS] = {0};
    int begun = 0;
    psc_status_t st = PSC_OK;

    st = psc__capture_begin(ctx, ar->nlocal, ar->dev, streams, &begun);
    if (st == PSC_OK)
        st = psc__tune_issue(ar, tk, way, buf, count, calls, streams);
    st = psc__capture_end(ctx, begun, ar->dev, streams, st, g, exec);
    for (int i = 0; i < begun; i++)
        if (g[i])
            ctx->cu.p_cuGraphDestroy(g[i]);
    return st;
}

/* Whether the driver captures graphs here: 1 yes, 0 it cannot (no capture entry points, or not supported). */
static psc_status_t psc__tune_can_capture(psc_allreduce_t *ar, struct CUstream_st *const *streams, int *graphs)
{
    psc_context_t *ctx = ar->ctx;
    psc_cuda_t *cu = &ctx->cu;
    CUgraph g = NULL;
    CUresult rc;
    psc_status_t st;

    *graphs = 0;
    if (!cu->p_cuStreamBeginCapture || !cu->p_cuStreamEndCapture || !cu->p_cuGraphInstantiateWithFlags ||
        !cu->p_cuGraphLaunch || !cu->p_cuGraphExecDestroy || !cu->p_cuGraphDestroy)
        return PSC_OK;
    if ((st = psc__gpu_use(ctx, ar->dev[0])) != PSC_OK)
        return st;
    rc = cu->p_cuStreamBeginCapture(streams[0], CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (rc == CUDA_ERROR_NOT_SUPPORTED)
        return PSC_OK;
    if ((st = psc__cu_result(ctx, rc, "cuStreamBeginCapture")) != PSC_OK ||
        (st = PSC_CU(ctx, cuStreamEndCapture, (streams[0], &g))) != PSC_OK)
        return st;
    if (g)
        cu->p_cuGraphDestroy(g);
    *graphs = 1;
    return PSC_OK;
}

/*
 * The watchdog's fire, the run already marked late: where this thread is inside NCCL's calls (a blocking
 * communicator may block there), every communicator aborted, so the call returns; else nothing: this thread sees
 * the run late and aborts them itself once its graphs are destroyed (NCCL 2.26 on waits in ncclCommAbort for the
 * graphs that hold its calls, which this thread destroys only after the run).
 */
static void psc__tune_fire(void *arg)
{
    psc_allreduce_t *ar = arg;
    struct psc__ar_tune *t = ar->tune;

    if (!__atomic_load_n(&t->in_nccl, __ATOMIC_SEQ_CST))
        return;
    for (int i = 0; i < ar->nlocal; i++)
        if (t->comm[i])
            t->nccl.comm_abort(t->comm[i]);
    t->fire_aborted = 1;
}

/* Every local stream's end, waited for by query (yielding the core: a thread NCCL starts may need it) until the
   watchdog finds the run late. */
static psc_status_t psc__tune_wait(psc_allreduce_t *ar, struct CUstream_st *const *streams)
{
    psc_context_t *ctx = ar->ctx;
    psc_status_t st = PSC_OK;

    for (int i = 0; i < ar->nlocal && st == PSC_OK; i++) {
        CUresult rc;

        if ((st = psc__gpu_use(ctx, ar->dev[i])) != PSC_OK)
            break;
        while ((rc = ctx->cu.p_cuStreamQuery(streams[i])) == CUDA_ERROR_NOT_READY && !psc__watchdog_late(&ar->tune->watch))
            sched_yield();
        if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_NOT_READY)
            st = psc__cu_result(ctx, rc, "cuStreamQuery");
    }
    return st;
}

/* After a timed run: PSC_ERR_TIMEOUT naming it where the watchdog found it late (its communicators aborted and
   forgotten), else st. */
static psc_status_t psc__tune_late(psc_allreduce_t *ar, int tk, int way, size_t count, psc_status_t st)
{
    static const char *const what[PSC__TK_N][2] = {{"p2pscope's all-reduce", "ncclAllReduce"},
                                                   {"p2pscope's reduce-scatter", "ncclReduceScatter"},
                                                   {"p2pscope's all-gather", "ncclAllGather"}};
    struct psc__ar_tune *t = ar->tune;

    if (!psc__watchdog_disarm(&t->watch))
        return st;
    if (t->fire_aborted) /* gone: psc__tune_close has nothing left to abort */
        memset(t->comm, 0, sizeof(t->comm));
    return psc__fail(ar->ctx, PSC_ERR_TIMEOUT, "psc_allreduce_tune: timing %s of %zu B%s: a run not done after %g s: "
                     "NCCL communicators aborted (the group keeps its own kernels)", what[tk][way == PSC__AR_TUNE_NCCL],
                     count * 4, tk == PSC__TK_SUM ? "" : " per part", t->timeout_ns / 1e9);
}

/* One timed run one way, after a meeting: launch to every local stream's end, per call. */
static psc_status_t psc__tune_once(psc_allreduce_t *ar, const psc_ar_procs_t *p, int tk, int way, CUgraphExec *exec,
                                   void *const *buf, size_t count, unsigned calls, struct CUstream_st *const *streams,
                                   double *us)
{
    psc_context_t *ctx = ar->ctx;
    psc_status_t st, ws;
    double t0;

    if ((st = psc__tune_sync(ar, p, PSC_OK)) != PSC_OK)
        return st;
    psc__watchdog_arm(&ar->tune->watch);
    t0 = psc__now_ns();
    if (exec) {
        for (int i = 0; i < ar->nlocal && st == PSC_OK; i++)
            if ((st = psc__gpu_use(ctx, ar->dev[i])) == PSC_OK)
                st = PSC_CU(ctx, cuGraphLaunch, (exec[i], streams[i]));
    } else {
        st = psc__tune_issue(ar, tk, way, buf, count, calls, streams);
    }
    ws = psc__tune_wait(ar, streams); /* what was enqueued, ended (or found late) whatever failed */
    *us = (psc__now_ns() - t0) / 1e3 / calls;
    return psc__tune_late(ar, tk, way, count, st == PSC_OK ? ws : st);
}

/*
 * Class k of collective tk: the ways timed alike, alternating which goes first: the group's kernels, NCCL, and its
 * copy engines where it can take them for this class (not when a test forced a way); this
 * process's medians in *rec.
 */
static psc_status_t psc__tune_class(psc_allreduce_t *ar, const psc_ar_procs_t *p, int tk, int k, int graphs,
                                    void *const *buf, struct CUstream_st *const *streams, psc__tune_rec_t *rec)
{
    psc_context_t *ctx = ar->ctx;
    const uint64_t most = tk == PSC__TK_SUM ? ar->max_bytes : ar->max_bytes / (uint64_t)ar->n;
    /* a part of whole 16-byte vectors: what the part collectives' copy engines take (else they would time the
       kernel as their own) */
    uint64_t bytes = 16ull << k, at = bytes < most ? bytes : tk == PSC__TK_SUM ? most : most / 16 * 16;
    size_t count = (size_t)(at / 4);
    unsigned calls = bytes <= PSC__TUNE_FULL_CALLS ? PSC__TUNE_CALLS : (unsigned)((16ull << 20) / bytes);
    const int ways = !ar->algo && ar->ce_chunk && at >= PSC__AR_CE_FROM ? 3 : 2; /* the copy engines: every kind's */
    CUgraphExec exec[3][PSC_AR_MAX_RANKS];
    double t[3][PSC__TUNE_REPS], warm, *med[3] = {&rec->own_us, &rec->nccl_us, &rec->copy_us};
    psc_status_t st = PSC_OK;
    /* the copy engines of several local ranks eagerly: captured, their calls would go by the kernels
       (psc__ar_captured in allreduce.c) */
    const int eager_copy = ar->nlocal > 1;

    memset(exec, 0, sizeof(exec));
    if (calls < 1)
        calls = 1;
    for (int w = 0; graphs && w < ways && st == PSC_OK; w++)
        if (w != PSC__AR_TUNE_COPY || !eager_copy) { /* NCCL's calls may block while captured too (a first call
                                                       of a size connects its peers): under the watchdog */
            psc__watchdog_arm(&ar->tune->watch);
            st = psc__tune_capture(ar, tk, w, buf, count, calls, streams, exec[w]);
            st = psc__tune_late(ar, tk, w, count, st);
        }
    for (int w = 0; w < ways && st == PSC_OK; w++) /* warm: NCCL's first call of a size sets up, graphs upload */
        st = psc__tune_once(ar, p, tk, w, graphs && exec[w][0] ? exec[w] : NULL, buf, count, calls, streams, &warm);
    for (int r = 0; r < PSC__TUNE_REPS && st == PSC_OK; r++)
        for (int j = 0; j < ways && st == PSC_OK; j++) {
            int w = (r + j) % ways; /* alternating which goes first */

            st = psc__tune_once(ar, p, tk, w, graphs && exec[w][0] ? exec[w] : NULL, buf, count, calls, streams,
                                &t[w][r]);
        }
    for (int w = 0; w < ways; w++)
        for (int i = 0; i < ar->nlocal; i++)
            if (exec[w][i])
                ctx->cu.p_cuGraphExecDestroy(exec[w][i]);
    if (st != PSC_OK)
        return st;
    rec->status = PSC_OK;
    rec->graphs = graphs;
    rec->copy_us = 0;
    for (int w = 0; w < ways; w++) {
        psc_stats_t m;

        if (psc_stats_compute(t[w], PSC__TUNE_REPS, &m) != PSC_OK)
            return psc__fail(ctx, PSC_ERR_NO_MEMORY, "psc_allreduce_tune: out of host memory for the medians");
        const int sw = w + 4 * tk; /* the skew hooks' way: the collective in its fours */

        *med[w] = ar->tune->skew        ? ar->tune->skew(sw, bytes, m.median, ar->tune->skew_arg)
                  : ctx->hooks.ar_tune_skew ? ctx->hooks.ar_tune_skew(sw, bytes, m.median, ctx->hooks.ar_tune_skew_arg)
                                            : m.median;
    }
    return PSC_OK;
}

/* Every class of collective tk (rows of them), each decided by the slowest process's medians. */
static psc_status_t psc__tune_rows_of(psc_allreduce_t *ar, const psc_ar_procs_t *p, int tk, int rows, int graphs,
                                      void *const *buf, struct CUstream_st *const *streams)
{
    psc_ar_tune_row_t *row = psc__tune_rows(&ar->tune->table, tk);
    psc__tune_rec_t rec;
    psc_status_t st = PSC_OK;

    for (int k = 0; st == PSC_OK && k < rows; k++) {
        memset(&rec, 0, sizeof(rec));
        rec.status = psc__tune_class(ar, p, tk, k, graphs, buf, streams, &rec);
        if (ar->tune->told)
            st = (psc_status_t)rec.status;
        else if ((st = psc__tune_meet(ar, p, &rec)) == PSC_OK) {
            row[k].bytes = 16ull << k;
            row[k].copy_engines = rec.copy_us > 0 && rec.copy_us < rec.own_us;
            row[k].own_us = row[k].copy_engines ? rec.copy_us : rec.own_us;
            row[k].nccl_us = rec.nccl_us;
            row[k].nccl = rec.nccl_us < row[k].own_us;
        }
    }
    return st;
}

/* Every class of every collective asked for (the all-reduce's; parts of the others up to max_bytes / n). */
static psc_status_t psc__tune_measure(psc_allreduce_t *ar, const psc_ar_procs_t *p, struct CUstream_st *const *streams)
{
    psc_ar_tuning_t *tb = &ar->tune->table;
    psc_context_t *ctx = ar->ctx;
    CUdeviceptr dbuf[PSC_AR_MAX_RANKS] = {0};
    void *buf[PSC_AR_MAX_RANKS];
    uint64_t bytes = (ar->max_bytes + 15) / 16 * 16;
    psc__tune_rec_t rec;
    int graphs = 0;
    psc_status_t st = PSC_OK;

    for (int i = 0; i < ar->nlocal && st == PSC_OK; i++) {
        if ((st = psc__gpu_use(ctx, ar->dev[i])) != PSC_OK)
            break;
        if (ctx->cu.p_cuMemAlloc(&dbuf[i], (size_t)bytes) != CUDA_SUCCESS) {
            dbuf[i] = 0;
            st = psc__fail(ctx, PSC_ERR_NO_MEMORY, "psc_allreduce_tune: %llu B to time the calls in on GPU %d do not "
                           "fit: accepted a group whose max_bytes fits once more on each GPU",
                           (unsigned long long)bytes, ar->dev[i]);
            break;
        }
        /* not zeros: the sentinel words (NaN), which both ways carry as any other value */
        st = psc__ar_fill(ctx, ar->dev[i], dbuf[i], bytes);
        buf[i] = (void *)(uintptr_t)dbuf[i];
    }
    if (st == PSC_OK)
        st = psc__tune_can_capture(ar, streams, &graphs);
    memset(&rec, 0, sizeof(rec));
    rec.status = st;
    rec.graphs = graphs;
    if ((st = psc__tune_meet(ar, p, &rec)) == PSC_OK) { /* every process times the same way */
        graphs = rec.graphs;
        tb->graphs = graphs;
        tb->reps = PSC__TUNE_REPS;
        tb->rows = psc__ar_tune_class(ar->max_bytes) + 1;
        tb->part_rows = ar->max_bytes / (uint64_t)ar->n >= 16 ? psc__ar_tune_class(ar->max_bytes / (uint64_t)ar->n) + 1
                                                                : 0;
    }
    if (st == PSC_OK && ar->tune->timeout_ns > 0) { /* -T's: a run found late aborts the communicators */
        int e = psc__watchdog_start(&ar->tune->watch, (int64_t)ar->tune->timeout_ns, psc__tune_fire, ar);

        if (e)
            st = psc__fail(ctx, PSC_ERR_NO_MEMORY, "psc_allreduce_tune: the timeout's watchdog thread could not "
                           "start: %s", strerror(e));
    }
    for (int tk = 0; tk < PSC__TK_N && st == PSC_OK; tk++)
        if (!ar->tune->kinds || (ar->tune->kinds & (1u << tk)))
            st = psc__tune_rows_of(ar, p, tk, tk == PSC__TK_SUM ? tb->rows : tb->part_rows, graphs, buf, streams);
    psc__watchdog_stop(&ar->tune->watch);
    if (st == PSC_OK) /* a kernel that gave up waiting timed nothing: say so, everywhere */
        st = psc__tune_sync(ar, p, psc_allreduce_check(ar));
    if (st == PSC_ERR_TIMEOUT) { /* NCCL's kernels may still run on the buffers: aborted, and waited for, first */
        psc__tune_close(ar, 0);
        for (int i = 0; i < ar->nlocal; i++)
            if (psc__gpu_use(ctx, ar->dev[i]) == PSC_OK)
                (void)ctx->cu.p_cuStreamSynchronize(streams[i]);
    }
    for (int i = 0; i < ar->nlocal; i++)
        if (dbuf[i] && psc__gpu_use(ctx, ar->dev[i]) == PSC_OK)
            ctx->cu.p_cuMemFree(dbuf[i]);
    return st;
}

psc_status_t psc_allreduce_tune(psc_allreduce_t *ar, const psc_ar_procs_t *procs, struct CUstream_st *const *streams)
{
    psc_context_t *ctx = ar ? ar->ctx : NULL;
    struct psc__ar_tune *t;
    psc_status_t st = PSC_OK;

    if (!ar)
        return PSC_ERR_INVALID;
    if (ar->broken[0])
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_allreduce_tune: %s: accepted a new group", ar->broken);
    if (ar->tune && ar->tune->ready)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_allreduce_tune: the group is tuned already: accepted once per "
                         "group (psc_allreduce_tuning gives its table)");
    if (ar->joined ? !procs || !procs->allgather || procs->nprocs != ar->n || procs->proc != ar->first : procs != NULL)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_allreduce_tune: procs: accepted NULL for psc_allreduce_create's "
                         "groups, and for psc_allreduce_join's a channel like the join's (nprocs %d, proc %d)", ar->n,
                         ar->first);
    if (!streams)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_allreduce_tune: accepted a stream per rank of the group in this "
                         "process");
    if (!(t = psc__tune_state(ar)))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    psc__guard_enter(ctx);
    for (int i = 0; i < ar->nlocal && st == PSC_OK; i++) {
        int g = -1;

        if (!streams[i] || psc__gpu_of_stream(ctx, streams[i], &g) != PSC_OK || g != ar->dev[i])
            st = psc__fail(ctx, PSC_ERR_INVALID, "psc_allreduce_tune: rank %d's stream: accepted a stream of GPU %d's "
                           "primary context (not NULL)", ar->first + i, ar->dev[i]);
    }
    t->told = 0;
    memset(&t->table, 0, sizeof(t->table));
    if ((st = psc__tune_open(ar, procs, st)) == PSC_OK)
        st = psc__tune_measure(ar, procs, streams);
    if (st != PSC_OK && procs && !t->told) /* the others are at the next meeting: tell them */
        (void)psc__tune_sync(ar, procs, st);
    if (st == PSC_OK) {
        t->ready = 1;
        ar->tune_route = psc__tune_route;
    } else {
        psc__tune_close(ar, 0);
        memset(&t->table, 0, sizeof(t->table));
    }
    return psc__guard_leave(ctx, st);
}

psc_status_t psc_allreduce_tuning(const psc_allreduce_t *ar, psc_ar_tuning_t *out)
{
    if (!ar)
        return PSC_ERR_INVALID;
    if (!out || !ar->tune || !ar->tune->ready)
        return psc__fail(ar->ctx, PSC_ERR_INVALID, "psc_allreduce_tuning: accepted a group psc_allreduce_tune "
                         "succeeded on, and a place for its table");
    *out = ar->tune->table;
    return PSC_OK;
}
