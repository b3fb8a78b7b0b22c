/*
 * psc_coll_run: nccl-tests' measurement, row by row (each type, op, root and
 * size; out of place, then in place), with the timed operations' own outputs
 * checked. The options are checked before anything starts; every process of
 * a run with opts.procs takes the same path through the rows, so their
 * collective calls (NCCL's and the caller's) meet.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <unistd.h>

#include "coll/coll_exec.h"
#include "coll/coll_load.h"
#include "p2pscope_private.h"
#include "opts.h"

#define PSC_COLL_MAX_ROWS 4096
#define PSC_COLL_MAX_BYTES (1ull << 40)

#define PSC_COLL_OWN_MAX_RANKS 8 /* psc_allreduce_create's and _join's groups */

typedef struct {
    int ndt, dts[PSC_DT_N];
    int nop, ops[PSC_OP_N];
    int nroot, *roots;
    int nsizes;
    uint64_t *sizes;
    int nccl;                          /* NCCL's rows */
    unsigned char own[PSC_DT_N][PSC_OP_N]; /* p2pscope's rows too, for dts[t], ops[op] */
    int any_own;
    int nrows;
} psc_coll_plan_t;

static psc_status_t psc__bad(psc_context_t *ctx, const char *what)
{
    return psc__fail(ctx, PSC_ERR_INVALID, "psc_coll_run: %s", what);
}

/* nccl-tests' options of the grown part of o (-N -p -y -R -x -u -I -K -D -V), each against what it accepts. */
static psc_status_t psc__check_more(psc_context_t *ctx, const psc_coll_opts_t *o)
{
    if (o->run_cycles < 1 || o->run_cycles > 1000)
        return psc__bad(ctx, "run_cycles out of range (accepted 1 to 1000)");
    if ((o->parallel_init | o->stream_null | o->per_iter) & ~1)
        return psc__bad(ctx, "parallel_init, stream_null or per_iter out of range (accepted 0 or 1)");
    if (o->register_mode < 0 || o->register_mode > 2 || o->cta_policy < -1 || o->cta_policy > 2)
        return psc__bad(ctx, "register_mode or cta_policy out of range (accepted 0, 1, 2; cta_policy -1 too)");
    if (o->unalign < 0 || o->unalign > 1024)
        return psc__bad(ctx, "unalign out of range (accepted 0 to 1024 elements)");
    if (o->graph_launches && (o->stream_null || o->per_iter))
        return psc__bad(ctx, "CUDA graphs with stream_null or per_iter (accepted one of them: a graph is captured "
                        "from a stream of the run's own, and replays its iterations without events between them)");
    if (o->per_iter_skip < 0 || o->per_iter_skip >= o->iters || (o->per_iter_skip && !o->per_iter))
        return psc__bad(ctx, "per_iter_skip out of range (accepted 0 to iters - 1, with per_iter)");
    if (o->device_impl < 0 || o->device_ctas < 0 || o->device_ctas > 128)
        return psc__bad(ctx, "device_impl or device_ctas out of range (accepted device_impl >= 0, device_ctas 0 to "
                        "128)");
    if (o->impls == PSC_COLL_IMPL_P2PSCOPE && (o->unalign || o->stream_null))
        return psc__bad(ctx, "unalign or stream_null with p2pscope's own collectives alone (accepted NCCL in impls: "
                        "p2pscope's own collectives take 16-byte aligned buffers on streams of their own)");
    if (o->device_impl > 0 && o->register_mode != 2)
        return psc__bad(ctx, "device implementation (-D > 0) requires enabling symmetric memory registration (-R 2)");
    return PSC_OK;
}

/* The values of o, each against what it accepts. */
static psc_status_t psc__check_opts(psc_context_t *ctx, const psc_coll_opts_t *o)
{
    const psc_coll_procs_t *p = o->procs;

    if (o->coll < 0 || o->coll >= PSC_COLL_N)
        return psc__bad(ctx, "collective out of range (accepted psc_coll_t: all_reduce .. sendrecv)");
    if (o->dtype < -1 || o->dtype >= PSC_DT_N)
        return psc__bad(ctx, "type out of range (accepted psc_dtype_t, or -1 for every type)");
    if (o->op < -1 || o->op >= PSC_OP_N)
        return psc__bad(ctx, "reduction out of range (accepted psc_redop_t, or -1 for every one)");
    if (o->root < -1)
        return psc__bad(ctx, "root below -1 (accepted a rank, or -1 for every rank)");
    if (o->min_bytes < 1 || o->min_bytes > o->max_bytes || o->max_bytes > PSC_COLL_MAX_BYTES)
        return psc__bad(ctx, "sizes out of range (accepted 1 B <= min <= max <= 1 TiB)");
    if (o->step_factor <= 1 && o->step_bytes < 1)
        return psc__bad(ctx, "no step between sizes (accepted a factor > 1, or step bytes >= 1)");
    if (o->warmup_iters < 0 || o->warmup_iters > 100000 || o->iters < 1 || o->iters > 1000000 || o->agg_iters < 1 ||
        o->agg_iters > 1024 || o->check < 0 || o->check > 1000 || o->graph_launches < 0 ||
        o->graph_launches > 100000)
        return psc__bad(ctx, "iterations out of range (accepted warmup 0..100000, iters 1..1000000, agg 1..1024, "
                        "check 0..1000, graph launches 0..100000)");
    if (o->blocking < 0 || o->blocking > 3)
        return psc__bad(ctx, "blocking out of range (accepted 0, 1 wait and meet after each operation, 2 wait, 3 wait "
                        "and meet after each iteration)");
    if (o->blocking && o->graph_launches)
        return psc__bad(ctx, "blocking and CUDA graphs together (accepted one of them: a graph replays its "
                        "operations without the host)");
    if (o->time_of < PSC_COLL_TIME_RANK0 || o->time_of > PSC_COLL_TIME_MAX)
        return psc__bad(ctx, "time_of out of range (accepted psc_coll_time_t)");
    if (!(o->timeout_s >= 0 && o->timeout_s <= 1e6))
        return psc__bad(ctx, "timeout out of range (accepted 0 for none, up to 1e6 s)");
    if (o->per_op != 0 && o->per_op != 1)
        return psc__bad(ctx, "per_op out of range (accepted 0 or 1)");
    if (o->compute_load != 0 && o->compute_load != 1)
        return psc__bad(ctx, "compute_load out of range (accepted 0 or 1)");
    if (o->impls < PSC_COLL_IMPL_NCCL || o->impls > PSC_COLL_IMPL_ALL)
        return psc__bad(ctx, "impls out of range (accepted PSC_COLL_IMPL_NCCL, PSC_COLL_IMPL_P2PSCOPE or both)");
    if (p && (p->nprocs < 1 || p->proc < 0 || p->proc >= p->nprocs || !p->bcast || !p->allreduce || !p->allgather))
        return psc__bad(ctx, "procs incomplete (accepted nprocs >= 1, 0 <= proc < nprocs, and bcast, allreduce and "
                        "allgather set)");
    return psc__check_more(ctx, o);
}

/* The size after s (step factor or step bytes), or 0 past max_bytes: a step that would wrap ends the sweep. */
static uint64_t psc__next(const psc_coll_opts_t *o, uint64_t s)
{
    if (o->step_factor > 1)
        return s > o->max_bytes / o->step_factor ? 0 : s * o->step_factor;
    return o->step_bytes > o->max_bytes - s ? 0 : s + o->step_bytes; /* s <= max_bytes here */
}

/* The op of p2pscope's own rows of a collective: sum, or none (-1) for the all-gather. */
static int psc__own_op(int coll)
{
    return coll == PSC_COLL_ALL_GATHER ? -1 : PSC_OP_SUM;
}

/* Whether p2pscope's own collectives do this one, type and op: all-reduce and reduce-scatter (sums) and
   all-gather, of floats. */
static int psc__own_does(int coll, int dtype, int op)
{
    return (coll == PSC_COLL_ALL_REDUCE || coll == PSC_COLL_REDUCE_SCATTER || coll == PSC_COLL_ALL_GATHER) &&
           op == psc__own_op(coll) && (dtype == PSC_DT_FLOAT32 || dtype == PSC_DT_FLOAT16 || dtype == PSC_DT_BFLOAT16);
}

/*
 * Which rows are p2pscope's too: its types and op, where its group can take
 * the run's ranks. Asked alone (no NCCL), the lists keep only what it does
 * (-1, every type, means its three), and a run it does not apply to is refused.
 */
static psc_status_t psc__plan_own(psc_context_t *ctx, const psc_coll_opts_t *o, int nranks, int nlocal,
                                  psc_coll_plan_t *pl)
{
    int nprocs = o->procs ? o->procs->nprocs : 1, ranks_ok = nranks <= PSC_COLL_OWN_MAX_RANKS &&
                                                             (nprocs < 2 || nlocal == 1);
    int ndt = 0, nop = 0;

    pl->nccl = (o->impls & PSC_COLL_IMPL_NCCL) != 0;
    if (!(o->impls & PSC_COLL_IMPL_P2PSCOPE))
        return PSC_OK;
    if (!pl->nccl) {
        for (int t = 0; t < pl->ndt; t++)
            if (psc__own_does(o->coll, pl->dts[t], psc__own_op(o->coll)))
                pl->dts[ndt++] = pl->dts[t];
        for (int op = 0; op < pl->nop; op++)
            if (pl->ops[op] == psc__own_op(o->coll))
                pl->ops[nop++] = pl->ops[op];
        if (!ndt || !nop || !psc__own_does(o->coll, pl->dts[0], psc__own_op(o->coll)))
            return psc__fail(ctx, PSC_ERR_INVALID, "psc_coll_run: p2pscope's collectives alone (impls), but they do "
                             "not do %s%s%s%s%s: accepted all_reduce or reduce_scatter with op sum, or all_gather, "
                             "with type float, half or bfloat16 (or -1), or NCCL in impls", psc_coll_name(o->coll),
                             o->op >= 0 ? ", op " : "",
                             o->op >= 0 ? psc_redop_name(o->op) : "", o->dtype >= 0 ? ", type " : "",
                             o->dtype >= 0 ? psc_dtype_name(o->dtype) : "");
        if (!ranks_ok)
            return psc__fail(ctx, PSC_ERR_INVALID, "psc_coll_run: p2pscope's all-reduce alone (impls), but its groups "
                             "take 1 to %d ranks, one GPU per process with several processes; this run has %d rank%s "
                             "in %d process%s: accepted fewer ranks, or NCCL in impls", PSC_COLL_OWN_MAX_RANKS, nranks,
                             nranks == 1 ? "" : "s", nprocs, nprocs == 1 ? "" : "es");
        pl->ndt = ndt;
        pl->nop = nop;
    }
    for (int t = 0; t < pl->ndt && ranks_ok; t++)
        for (int op = 0; op < pl->nop; op++)
            if (psc__own_does(o->coll, pl->dts[t], pl->ops[op]))
                pl->any_own = pl->own[t][op] = 1;
    return PSC_OK;
}

/* Every row's type, op, root, size and implementation, each list as o asks; PSC_ERR_INVALID over PSC_COLL_MAX_ROWS rows. */
static psc_status_t psc__plan(psc_context_t *ctx, const psc_coll_opts_t *o, int nranks, int nlocal,
                              psc_coll_plan_t *pl)
{
    int reduces = o->coll != PSC_COLL_ALL_GATHER && o->coll != PSC_COLL_BROADCAST && o->coll != PSC_COLL_ALL_TO_ALL;
    int rooted = o->coll == PSC_COLL_BROADCAST || o->coll == PSC_COLL_REDUCE;
    long long rows, per = 0;
    psc_status_t st;

    memset(pl, 0, sizeof(*pl));
    for (int t = 0; t < PSC_DT_N; t++)
        if (o->dtype == -1 || o->dtype == t)
            pl->dts[pl->ndt++] = t;
    /* sendrecv reduces nothing but prints its op, as nccl-tests does */
    for (int op = 0; op < PSC_OP_N && reduces; op++)
        if (o->op == -1 || o->op == op)
            pl->ops[pl->nop++] = op;
    if (!reduces)
        pl->ops[pl->nop++] = -1;
    if ((st = psc__plan_own(ctx, o, nranks, nlocal, pl)) != PSC_OK)
        return st;
    for (int t = 0; t < pl->ndt; t++) /* rows per root and size */
        for (int op = 0; op < pl->nop; op++)
            per += pl->nccl + pl->own[t][op];
    if (rooted && o->root >= nranks)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_coll_run: root %d, but the run has %d rank%s (accepted 0 to %d, "
                         "or -1 for every rank)", o->root, nranks, nranks == 1 ? "" : "s", nranks - 1);
    pl->nroot = rooted && o->root == -1 ? nranks : 1;
    for (uint64_t s = o->min_bytes; s && s <= o->max_bytes && pl->nsizes <= PSC_COLL_MAX_ROWS; s = psc__next(o, s))
        pl->nsizes++;
    rows = per * pl->nroot * pl->nsizes * o->run_cycles;
    if (rows > PSC_COLL_MAX_ROWS)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_coll_run: %s%lld rows (accepted at most %d: a larger step, fewer "
                         "types, ops, roots or cycles)", pl->nsizes > PSC_COLL_MAX_ROWS ? "over " : "", rows,
                         PSC_COLL_MAX_ROWS);
    if (o->per_iter && (double)rows * 2 * o->iters > (double)(1 << 26)) /* 512 MiB of times */
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_coll_run: per_iter keeps each iteration's time: %lld rows x 2 x "
                         "%d iterations is too many (accepted at most %d in all: fewer sizes, cycles or iterations)",
                         rows, o->iters, 1 << 26);
    if (!(pl->roots = calloc((size_t)pl->nroot, sizeof(int))) ||
        !(pl->sizes = calloc((size_t)pl->nsizes, sizeof(uint64_t)))) {
        free(pl->roots);
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    }
    for (int r = 0; r < pl->nroot; r++)
        pl->roots[r] = !rooted ? -1 : o->root == -1 ? r : o->root;
    pl->nsizes = 0;
    for (uint64_t s = o->min_bytes; s && s <= o->max_bytes; s = psc__next(o, s))
        pl->sizes[pl->nsizes++] = s;
    pl->nrows = (int)rows;
    return PSC_OK;
}

/*
 * nccl-tests' counts for a size: elements per rank, rounded to 16 B per part
 * where the buffer is split in parts. p2pscope's all-reduce takes 16-byte
 * aligned buffers: its slots are 16 B apart, in buffers of max_bytes rounded up to 16 B.
 */
static void psc__shape(const psc_coll_opts_t *o, int nranks, int dtype, int op, int root, uint64_t size, int impl,
                       psc_coll_shape_t *sh)
{
    size_t ts = psc_dtype_size(dtype);
    uint64_t count = size / ts, slots, room = o->max_bytes;
    psc_coll_data_t d;

    memset(sh, 0, sizeof(*sh));
    sh->impl = impl;
    sh->coll = o->coll;
    sh->dtype = dtype;
    sh->op = op;
    sh->root = root;
    if (o->coll == PSC_COLL_ALL_GATHER || o->coll == PSC_COLL_REDUCE_SCATTER || o->coll == PSC_COLL_ALL_TO_ALL)
        count = (count / (uint64_t)nranks) & ~(uint64_t)(16 / ts - 1);
    sh->count = count;
    memset(&d, 0, sizeof(d));
    d.coll = o->coll;
    d.dtype = dtype;
    d.nranks = nranks;
    d.count = count;
    sh->slot_bytes = (psc__coll_send_elems(&d) > psc__coll_recv_elems(&d) ? psc__coll_send_elems(&d)
                                                                          : psc__coll_recv_elems(&d)) * ts;
    sh->size = sh->slot_bytes;
    if (impl == PSC_COLL_IMPL_P2PSCOPE) {
        sh->slot_bytes = (sh->slot_bytes + 15) / 16 * 16;
        room = o->max_bytes < 16 ? 16 : (o->max_bytes + 15) / 16 * 16; /* psc__coll_exec_open's buf_bytes */
    }
    slots = sh->slot_bytes ? room / sh->slot_bytes : 1; /* a size-0 row: one slot */
    sh->nslots = slots < 1 ? 1 : slots > UINT32_MAX ? UINT32_MAX : (unsigned)slots;
}

/* Whether an in-place operation may reuse its own output as its next input and give the same result. */
static int psc__idempotent(const psc_coll_shape_t *sh)
{
    switch (sh->coll) {
    case PSC_COLL_BROADCAST:
    case PSC_COLL_ALL_GATHER: return 1;
    case PSC_COLL_ALL_REDUCE:
    case PSC_COLL_REDUCE:
    case PSC_COLL_REDUCE_SCATTER: return sh->op == PSC_OP_MAX || sh->op == PSC_OP_MIN;
    default: return 0;
    }
}

typedef struct {
    psc_coll_exec_t x;
    psc_coll_report_t *rep;
    double *each;                       /* per_op samples */
    double *iter;                       /* per_iter: one half's iterations, s */
    psc_coll_load_t *load;              /* compute_load: the compute kernels' streams and events */
    unsigned char peer_was[PSC_MAX_GPUS][PSC_MAX_GPUS]; /* the caller's peer access between local GPUs */
    int row;
} psc_coll_state_t;

/* The processes' figures combined: times as o->time_of says, wrong elements summed, percentiles their maxima. */
static psc_status_t psc__combine(psc_coll_state_t *s, psc_coll_row_t *row)
{
    const psc_coll_procs_t *p = s->x.o->procs;
    static const int how[] = {PSC_COLL_SUM, PSC_COLL_SUM, PSC_COLL_MIN, PSC_COLL_MAX};
    double t[2] = {row->r[0].time_us, row->r[1].time_us}, w[2] = {(double)row->r[0].wrong, (double)row->r[1].wrong};
    double q[12];

    if (!p || p->nprocs < 2)
        return PSC_OK;
    for (int k = 0; k < 2; k++) {
        const psc_pctl_t *c = &row->r[k].iter_us;
        double v[6] = {c->min, c->p50, c->p90, c->p99, c->max, c->mean};

        memcpy(q + 6 * k, v, sizeof(v));
    }
    if ((s->x.o->time_of != PSC_COLL_TIME_RANK0 && p->allreduce(t, 2, how[s->x.o->time_of], p->arg) != 0) ||
        p->allreduce(w, 2, PSC_COLL_SUM, p->arg) != 0 || p->allreduce(q, 12, PSC_COLL_MAX, p->arg) != 0)
        return psc__coll_fail(&s->x, PSC_ERR_IO, "the processes' figures could not be combined (the caller's "
                              "allreduce failed)");
    for (int k = 0; k < 2; k++) {
        psc_pctl_t *c = &row->r[k].iter_us;

        row->r[k].time_us = s->x.o->time_of == PSC_COLL_TIME_MEAN ? t[k] / p->nprocs : t[k];
        if (row->r[k].wrong >= 0)
            row->r[k].wrong = (long long)w[k];
        c->min = q[6 * k];
        c->p50 = q[6 * k + 1];
        c->p90 = q[6 * k + 2];
        c->p99 = q[6 * k + 3];
        c->max = q[6 * k + 4];
        c->mean = q[6 * k + 5];
    }
    return PSC_OK;
}

/* Whether any process has seen a wrong element so far (this one's count: wrong). */
static psc_status_t psc__wrong_anywhere(psc_coll_exec_t *x, long long wrong, int *any)
{
    const psc_coll_procs_t *p = x->o->procs;
    double v = (double)wrong;

    if (p && p->nprocs > 1 && p->allreduce(&v, 1, PSC_COLL_SUM, p->arg) != 0)
        return psc__coll_fail(x, PSC_ERR_IO, "the processes' wrong elements could not be summed (the caller's "
                              "allreduce failed)");
    *any = v > 0;
    return PSC_OK;
}

/* nccl-tests' nearest rank (util.cu's percentileIndex): the p-th percentile's index among n sorted. */
static int psc__rank_index(int n, int p)
{
    int k = (n * p + 99) / 100 - 1;

    return k < n - 1 ? k : n - 1;
}

/* nccl-tests' computeIterStats of times[skip..n) (seconds) into it (us); every time kept in it->times_us. */
static void psc__coll_iter_stats(const double *times, int n, int skip, double *sorted, psc_coll_iter_t *it)
{
    int m = n - skip;
    double sum = 0, var = 0;

    it->n = n;
    it->skipped = skip;
    for (int i = 0; i < n; i++)
        it->times_us[i] = times[i] * 1e6;
    if (m < 1)
        return;
    memcpy(sorted, times + skip, (size_t)m * sizeof(double));
    qsort(sorted, (size_t)m, sizeof(double), psc__cmp_double);
    for (int i = 0; i < m; i++)
        sum += sorted[i];
    it->avg_us = sum / m * 1e6;
    for (int i = 0; i < m; i++)
        var += (sorted[i] * 1e6 - it->avg_us) * (sorted[i] * 1e6 - it->avg_us);
    it->stdev_us = sqrt(var / m);
    it->min_us = sorted[0] * 1e6;
    it->max_us = sorted[m - 1] * 1e6;
    it->p50_us = sorted[m / 2] * 1e6;
    it->p95_us = sorted[psc__rank_index(m, 95)] * 1e6;
    it->p99_us = sorted[psc__rank_index(m, 99)] * 1e6;
    it->cv_pct = it->avg_us > 0 ? it->stdev_us / it->avg_us * 100.0 : 0.0;
}

/* -I: the half's iterations, the most over the processes (nccl-tests' process rows), summed up into the report. */
static psc_status_t psc__iter_report(psc_coll_state_t *s, int in_place)
{
    const psc_coll_opts_t *o = s->x.o;
    const psc_coll_procs_t *p = o->procs;
    psc_coll_iter_t *it = &s->rep->ext[s->row].r[in_place].iter;

    if (p && p->nprocs > 1 && p->allreduce(s->iter, o->iters, PSC_COLL_MAX, p->arg) != 0)
        return psc__coll_fail(&s->x, PSC_ERR_IO, "the processes' iteration times could not be combined (the caller's "
                              "allreduce failed)");
    it->times_us = s->rep->iter_times + ((size_t)s->row * 2 + (size_t)in_place) * (size_t)o->iters;
    psc__coll_iter_stats(s->iter, o->iters, o->per_iter_skip, s->iter + o->iters, it);
    return PSC_OK;
}

/* One half of a row: out of place (0) or in place (1). */
static psc_status_t psc__half(psc_coll_state_t *s, const psc_coll_shape_t *sh, int in_place, psc_coll_row_t *row)
{
    psc_coll_exec_t *x = &s->x;
    const psc_coll_opts_t *o = x->o;
    uint64_t total = (uint64_t)o->iters * (unsigned)o->agg_iters; /* a graph replays these same slots */
    unsigned used = total < sh->nslots ? (unsigned)total : sh->nslots;
    /* nccl-tests checks neither alltoall nor sendrecv in place: the operation reads what it overwrites */
    int checked = o->check > 0 && !(in_place && (sh->coll == PSC_COLL_ALL_TO_ALL || sh->coll == PSC_COLL_SEND_RECV));
    /* in place, a slot written twice (more operations than slots, or a graph replayed) holds a result of a result */
    int once = total <= sh->nslots && o->graph_launches <= 1;
    int timed_checked = checked && (!in_place || once || psc__idempotent(sh));
    uint32_t seed = o->seed + (uint32_t)s->row * 2654435761u + (uint32_t)in_place * 40503u;
    double sec = 0;
    long long wrong = 0;
    int any = 0;
    psc_status_t st;

    x->sh = sh;
    /* one untimed operation first (nccl-tests': connections are made then), then the inputs */
    x->stage = "the first operation";
    if ((st = psc__coll_issue(x, sh, in_place, 0, 1)) != PSC_OK || (st = psc__coll_wait(x)) != PSC_OK)
        return st;
    x->stage = "setting the inputs";
    if (checked && (st = psc__coll_fill_all(x, sh, in_place, seed, used)) != PSC_OK)
        return st;
    if ((st = psc__coll_barrier(x)) != PSC_OK ||
        (st = psc__coll_time_ex(x, sh, in_place, &sec, &s->rep->ext[s->row].r[in_place].cpu_time_us,
                                s->iter)) != PSC_OK ||
        (s->iter && (st = psc__iter_report(s, in_place)) != PSC_OK))
        return st;
    s->rep->ext[s->row].r[in_place].cpu_time_us *= 1e6;
    if (sh->impl == PSC_COLL_IMPL_P2PSCOPE) /* the way the timed loop's calls went (a graph's: as captured) */
        s->rep->ways[s->row].r[in_place] = psc_allreduce_last_way(x->ar);
    x->stage = "checking the timed operations";
    if (timed_checked && ((st = psc__coll_check_all(x, sh, in_place, seed, used, &wrong, s->rep->first_wrong,
                                                    sizeof(s->rep->first_wrong))) != PSC_OK ||
                          (st = psc__wrong_anywhere(x, wrong, &any)) != PSC_OK))
        return st;
    if (o->per_op) {
        if ((st = psc__coll_time_each(x, sh, in_place, s->each)) != PSC_OK)
            return st;
        psc_percentiles(s->each, (unsigned)x->neach, &row->r[in_place].iter_us);
    }
    if (s->load && (st = psc__coll_load_time(x, s->load, sh, in_place, sec, &s->rep->loads[s->row].r[in_place])) !=
                       PSC_OK)
        return st;
    x->stage = "the checked runs";
    /* every process takes the same turns: stop once any process saw a wrong element, as nccl-tests does */
    for (int c = 0; checked && c < o->check && !any; c++) {
        uint32_t cseed = seed + 0x9e3779b9u * (uint32_t)(c + 1);

        if ((st = psc__coll_fill_all(x, sh, in_place, cseed, 1)) != PSC_OK ||
            (st = psc__coll_issue(x, sh, in_place, 0, 1)) != PSC_OK || (st = psc__coll_wait(x)) != PSC_OK ||
            (st = psc__coll_check_all(x, sh, in_place, cseed, 1, &wrong, s->rep->first_wrong,
                                      sizeof(s->rep->first_wrong))) != PSC_OK ||
            (st = psc__wrong_anywhere(x, wrong, &any)) != PSC_OK)
            return st;
    }
    row->r[in_place].ran = 1;
    row->r[in_place].time_us = sec * 1e6;
    row->r[in_place].wrong = checked ? wrong : -1;
    row->r[in_place].timed_checked = timed_checked ? (long long)used : 0;
    x->stage = NULL;
    return PSC_OK;
}

static psc_status_t psc__row(psc_coll_state_t *s, const psc_coll_shape_t *sh, psc_coll_row_t *row)
{
    psc_coll_report_t *rep = s->rep;
    size_t ts = psc_dtype_size(sh->dtype);
    int n = rep->nranks, parts = sh->coll == PSC_COLL_ALL_GATHER || sh->coll == PSC_COLL_REDUCE_SCATTER ||
                                 sh->coll == PSC_COLL_ALL_TO_ALL;
    psc_status_t st;

    row->bytes = sh->size;
    row->count = sh->count;
    row->dtype = sh->dtype;
    row->op = sh->coll == PSC_COLL_SEND_RECV && sh->op < 0 ? PSC_OP_SUM : sh->op;
    row->root = sh->root;
    row->impl = sh->impl;
    for (int k = 0; k < 2; k++)
        if ((st = psc__half(s, sh, k, row)) != PSC_OK)
            return st;
    rep->ext[s->row].end_time = (long long)time(NULL);
    if ((st = psc__combine(s, row)) != PSC_OK)
        return st;
    for (int k = 0; k < 2; k++) {
        double sec = row->r[k].time_us * 1e-6, bytes = (double)sh->count * (double)ts * (parts ? n : 1);

        row->r[k].algbw_gbs = sec > 0 ? bytes / 1e9 / sec : 0;
        row->r[k].busbw_gbs = row->r[k].algbw_gbs * psc_coll_busbw_factor(sh->coll, n);
        if (row->r[k].wrong > 0)
            rep->failed_rows++;
    }
    return PSC_OK;
}

/* nccl-tests' warm-up: warmup_iters operations out of place at each size from min, doubling, to max. */
static psc_status_t psc__warmup(psc_coll_state_t *s, int dtype, int op, int root, int impl)
{
    const psc_coll_opts_t *o = s->x.o;
    psc_coll_shape_t sh;
    psc_status_t st;

    if (!o->warmup_iters)
        return PSC_OK;
    for (uint64_t size = o->min_bytes; size <= o->max_bytes; size *= 2) {
        psc__shape(o, s->rep->nranks, dtype, op, root, size, impl, &sh);
        s->x.sh = &sh;
        s->x.stage = "the warm-up";
        for (int w = 0; w < o->warmup_iters; w++)
            if ((st = psc__coll_issue(&s->x, &sh, 0, (uint64_t)w, 1)) != PSC_OK)
                return st;
        if ((st = psc__coll_wait(&s->x)) != PSC_OK)
            return st;
    }
    s->x.sh = NULL;
    return PSC_OK;
}

/* Where each rank runs: this process's, then every process's (process order). */
static psc_status_t psc__ranks(psc_coll_state_t *s)
{
    psc_coll_exec_t *x = &s->x;
    const psc_coll_procs_t *p = x->o->procs;
    psc_coll_rank_t mine[PSC_MAX_GPUS];
    char host[256] = "";

    gethostname(host, sizeof(host) - 1);
    host[strcspn(host, ".")] = '\0';
    memset(mine, 0, sizeof(mine));
    for (int i = 0; i < x->nlocal; i++) {
        psc_device_info_t info;

        mine[i].rank = x->first_rank + i;
        mine[i].pid = (int)getpid();
        snprintf(mine[i].host, sizeof(mine[i].host), "%.63s", host);
        mine[i].device = x->dev[i];
        if (psc_device_info(x->ctx, x->dev[i], &info) == PSC_OK) {
            snprintf(mine[i].pci_bus_id, sizeof(mine[i].pci_bus_id), "%s", info.pci_bus_id);
            snprintf(mine[i].name, sizeof(mine[i].name), "%.95s", info.name);
        }
    }
    if (!p || p->nprocs < 2) {
        memcpy(s->rep->ranks, mine, (size_t)x->nlocal * sizeof(mine[0]));
        return PSC_OK;
    }
    if (p->allgather(mine, s->rep->ranks, (size_t)x->nlocal * sizeof(mine[0]), p->arg) != 0)
        return psc__coll_fail(x, PSC_ERR_IO, "the ranks' GPUs could not be gathered (the caller's allgather failed)");
    return PSC_OK;
}

/* Ranks per process: the same in every process (nccl-tests' nGpus), else refused in every one. */
static psc_status_t psc__agree_ranks(psc_context_t *ctx, const psc_coll_opts_t *o, int nlocal)
{
    const psc_coll_procs_t *p = o->procs;
    double lo = nlocal, hi = nlocal;

    if (!p || p->nprocs < 2)
        return PSC_OK;
    if (p->allreduce(&lo, 1, PSC_COLL_MIN, p->arg) != 0 || p->allreduce(&hi, 1, PSC_COLL_MAX, p->arg) != 0)
        return psc__fail(ctx, PSC_ERR_IO, "p2pscope coll: the processes could not meet (the caller's allreduce failed)");
    if (lo != hi)
        return psc__fail(ctx, PSC_ERR_INVALID, "p2pscope coll: the processes drive %g to %g GPUs each: accepted the same "
                         "number in every process", lo, hi);
    return PSC_OK;
}

/*
 * Peer access between this process's GPUs as the caller had it, noted before
 * NCCL (which turns it on where it uses it) and put back after.
 */
static void psc__peers(psc_coll_state_t *s, int restore)
{
    psc_coll_exec_t *x = &s->x;

    for (int a = 0; a < x->nlocal; a++)
        for (int b = 0; b < x->nlocal; b++) {
            int was = 0;

            if (a == b || (restore && s->peer_was[a][b]))
                continue;
            if (psc__gpu_peer_switch(x->ctx, x->dev[a], x->dev[b], 0, &was) != PSC_OK)
                continue;
            x->ctx->gpu[x->dev[a]].peer_on[x->dev[b]] = 0;
            if (!restore && (s->peer_was[a][b] = (unsigned char)was) &&
                psc__gpu_peer_switch(x->ctx, x->dev[a], x->dev[b], 1, &was) == PSC_OK)
                x->ctx->gpu[x->dev[a]].peer_on[x->dev[b]] = 1;
        }
}

/* The rows of one type, op and root: each implementation's warm-up, then at each size NCCL's row, then p2pscope's. */
static psc_status_t psc__rows(psc_coll_state_t *s, const psc_coll_plan_t *pl, int t, int op, int r, double sum[2],
                              int nbw[2])
{
    const int impls[2] = {PSC_COLL_IMPL_NCCL, PSC_COLL_IMPL_P2PSCOPE};
    const int use[2] = {pl->nccl, pl->own[t][op] && s->x.want_own};
    psc_coll_report_t *rep = s->rep;
    psc_status_t st;

    for (int m = 0; m < 2; m++)
        if (use[m] && (st = psc__warmup(s, pl->dts[t], pl->ops[op], pl->roots[r], impls[m])) != PSC_OK)
            return st;
    for (int z = 0; z < pl->nsizes * s->x.o->run_cycles; z++) /* -N: the sizes again, no warm-up between */
        for (int m = 0; m < 2; m++) {
            psc_coll_shape_t sh;

            if (!use[m])
                continue;
            psc__shape(s->x.o, rep->nranks, pl->dts[t], pl->ops[op], pl->roots[r], pl->sizes[z % pl->nsizes], impls[m],
                       &sh);
            if ((st = psc__row(s, &sh, &rep->rows[s->row])) != PSC_OK)
                return st;
            rep->nrows = s->row + 1;
            for (int k = 0; k < 2; k++, nbw[m]++)
                sum[m] += rep->rows[s->row].r[k].busbw_gbs;
            s->row++;
        }
    return PSC_OK;
}

/*
 * -M's figures, nccl-tests' way: what the buffers (and their registration),
 * the communicators and the rows took from each GPU's free memory, the most
 * over the GPUs and the processes. Before any is known, nothing.
 */
static psc_status_t psc__mem_report(psc_coll_state_t *s)
{
    psc_coll_exec_t *x = &s->x;
    const psc_coll_procs_t *p = x->o->procs;
    double v[3] = {0, 0, 0};

    psc__coll_mem_note(x, 4);
    for (int i = 0; i < x->nlocal; i++) {
        const long long *f[5] = {&x->mem_free[0][i], &x->mem_free[1][i], &x->mem_free[2][i], &x->mem_free[3][i],
                                 &x->mem_free[4][i]};
        double got[3];

        for (int k = 0; k < 5; k++)
            if (*f[k] < 0)
                return PSC_OK;
        got[0] = (double)(*f[1] - *f[2]);                      /* the communicators */
        got[1] = (double)(*f[0] - *f[1]) + (double)(*f[2] - *f[3]); /* the buffers, their registration */
        got[2] = (double)(*f[3] - *f[4]);                      /* the rows */
        for (int k = 0; k < 3; k++)
            v[k] = got[k] > v[k] ? got[k] : v[k];
    }
    if (p && p->nprocs > 1 && p->allreduce(v, 3, PSC_COLL_MAX, p->arg) != 0)
        return psc__coll_fail(x, PSC_ERR_IO, "the processes' memory figures could not be combined (the caller's "
                              "allreduce failed)");
    s->rep->mem_known = 1;
    s->rep->mem_init_bytes = (long long)v[0];
    s->rep->mem_user_bytes = (long long)v[1];
    s->rep->mem_coll_bytes = (long long)v[2];
    return PSC_OK;
}

static psc_status_t psc__run(psc_coll_state_t *s, const psc_coll_plan_t *pl)
{
    psc_coll_report_t *rep = s->rep;
    psc_status_t st;
    double sum[2] = {0, 0};
    int nbw[2] = {0, 0};

    if (s->x.want_own && s->x.use_nccl && (s->x.o->unalign || s->x.o->stream_null)) {
        snprintf(s->x.own_not_run, sizeof(s->x.own_not_run), "-u and -y are for NCCL's rows: p2pscope's own "
                 "collectives take 16-byte aligned buffers on streams of their own");
        s->x.want_own = 0;
    }

    if ((st = psc__ranks(s)) != PSC_OK || (st = psc__coll_exec_open(&s->x)) != PSC_OK ||
        (s->x.o->compute_load && (st = psc__coll_load_open(&s->x, &s->load)) != PSC_OK))
        return st;
    for (int t = 0; t < pl->ndt; t++)
        for (int op = 0; op < pl->nop; op++)
            for (int r = 0; r < pl->nroot; r++)
                if ((st = psc__rows(s, pl, t, op, r, sum, nbw)) != PSC_OK)
                    return st;
    /* nccl-tests' average is NCCL's: p2pscope's rows have their own */
    rep->own_avg_busbw_gbs = nbw[1] ? sum[1] / nbw[1] : 0;
    snprintf(rep->own_not_run, sizeof(rep->own_not_run), "%s", s->x.own_not_run);
    snprintf(rep->own_tune_note, sizeof(rep->own_tune_note), "%s", s->x.tune_note);
    rep->own_tuned = s->x.tuned;
    rep->avg_busbw_gbs = nbw[0] ? sum[0] / nbw[0] : rep->own_avg_busbw_gbs;
    rep->busbw_failed = rep->min_busbw_set && psc_coll_busbw_short(rep->avg_busbw_gbs, rep->min_busbw_gbs);
    return psc__mem_report(s);
}

int psc_coll_busbw_short(double avg_busbw_gbs, double min_busbw_gbs)
{
    return avg_busbw_gbs < 0.9 * min_busbw_gbs; /* nccl-tests' check of NCCL_TESTS_MIN_BW */
}

void psc_coll_report_free(psc_coll_report_t *r)
{
    if (!r)
        return;
    free(r->ranks);
    free(r->rows);
    free(r->loads);
    free(r->ext);
    free(r->ways);
    free(r->iter_times);
    free(r);
}

/* The report's fixed part: the run's parameters. */
static psc_coll_report_t *psc__report_new(const psc_coll_opts_t *o, int nranks, int nprocs, int nrows)
{
    psc_coll_report_t *r = calloc(1, sizeof(*r));

    if (!r || !(r->ranks = calloc((size_t)nranks, sizeof(*r->ranks))) ||
        !(r->rows = calloc((size_t)nrows, sizeof(*r->rows))) ||
        (o->compute_load && !(r->loads = calloc((size_t)nrows, sizeof(*r->loads)))) ||
        !(r->ext = calloc((size_t)nrows, sizeof(*r->ext))) || !(r->ways = calloc((size_t)nrows, sizeof(*r->ways))) ||
        (o->per_iter && !(r->iter_times = calloc((size_t)nrows * 2 * (size_t)o->iters, sizeof(double))))) {
        psc_coll_report_free(r);
        return NULL;
    }
    r->coll = o->coll;
    r->nranks = nranks;
    r->nprocs = nprocs;
    r->min_bytes = o->min_bytes;
    r->max_bytes = o->max_bytes;
    r->step_factor = o->step_factor > 1 ? o->step_factor : 0;
    r->step_bytes = o->step_factor > 1 ? 0 : o->step_bytes;
    r->warmup_iters = o->warmup_iters;
    r->iters = o->iters;
    r->agg_iters = o->agg_iters;
    r->check = o->check;
    r->graph_launches = o->graph_launches;
    r->blocking = o->blocking;
    r->time_of = o->time_of;
    r->timeout_s = o->timeout_s;
    r->min_busbw_set = o->min_busbw_set;
    r->min_busbw_gbs = o->min_busbw_gbs;
    r->compute_load = o->compute_load;
    r->run_cycles = o->run_cycles;
    r->parallel_init = o->parallel_init;
    r->stream_null = o->stream_null;
    r->unalign = o->unalign;
    r->per_iter = o->per_iter;
    r->per_iter_skip = o->per_iter_skip;
    r->start_time = (long long)time(NULL);
    return r;
}

/* A line of nccl-tests' about an option this NCCL cannot take, into the report's notes. */
static void psc__note(psc_coll_report_t *r, const char *line)
{
    size_t n = strlen(r->notes);

    snprintf(r->notes + n, sizeof(r->notes) - n, "%s\n", line);
}

/*
 * What the loaded NCCL makes of nccl-tests' version-bound options: -D and -V
 * refused (nccl-tests' device kernels are not here; before 2.28 its own
 * words), -R and -x stepped down with nccl-tests' lines where it is older
 * than they need. p2pscope's rows alone load no NCCL: -R and -x do nothing.
 */
static psc_status_t psc__nccl_options(psc_coll_state_t *s, int nccl)
{
    const psc_coll_opts_t *o = s->x.o;
    const psc_nccl_t *nc = &s->x.nccl;
    psc_coll_report_t *r = s->rep;
    int v = nccl ? nc->version : 0;
    char have[32], line[128];

    psc__nccl_version_string(v, have, sizeof(have));
    if ((o->device_impl > 0 || o->device_ctas > 0) && v < 22800)
        return psc__fail(s->x.ctx, PSC_ERR_UNSUPPORTED, "p2pscope coll: Option -%c (%s) requires NCCL >= 2.28.0 (%s%s)",
                         o->device_impl > 0 ? 'D' : 'V', o->device_impl > 0 ? "device implementation" :
                         "device CTA count", nccl ? "loaded: " : "none loaded: --impl p2pscope", nccl ? have : "");
    if (o->device_impl > 0)
        return psc__fail(s->x.ctx, PSC_ERR_INVALID, "p2pscope coll: -D %d: nccl-tests' device implementations (its "
                         "own kernels on NCCL %s's device API) are not in p2pscope: accepted -D 0", o->device_impl, have);
    s->x.reg_mode = nccl ? o->register_mode : 0;
    if (s->x.reg_mode == 2 && (v < 22700 || !nc->comm_window_register || !nc->comm_window_deregister)) {
        psc__note(r, "Option -R 2 (symmetric) is not supported before NCCL 2.27. Defaulting to local registration");
        s->x.reg_mode = 1;
    }
    if (s->x.reg_mode == 1 && (!nc->comm_register || !nc->comm_deregister)) {
        psc__note(r, "Option -R (register) is not supported before NCCL 2.19. Ignoring");
        s->x.reg_mode = 0;
    }
    s->x.cta_policy = nccl ? o->cta_policy : -1;
    if (s->x.cta_policy >= 0 && v < 22700) {
        psc__note(r, "Option -x (cta_policy) is not supported before NCCL 2.27. Ignoring");
        s->x.cta_policy = -1;
    } else if (s->x.cta_policy > 1 && v < 22800) {
        snprintf(line, sizeof(line), "Option -x (cta_policy) %d is not supported before NCCL 2.28. Ignoring",
                 s->x.cta_policy);
        psc__note(r, line);
        s->x.cta_policy = -1;
    }
    r->register_mode = s->x.reg_mode;
    r->cta_policy = s->x.cta_policy;
    return PSC_OK;
}

/* nccl-tests' last line: NCCL's last warning (ncclGetLastError(NULL)), if the loaded NCCL has one to give. */
static void psc__last_warning(const psc_nccl_t *nccl, psc_coll_report_t *r)
{
    const char *last = nccl->get_last_error ? nccl->get_last_error(NULL) : NULL;

    snprintf(r->nccl_last_error, sizeof(r->nccl_last_error), "%s", last ? last : "");
}

psc_status_t psc_coll_run(psc_context_t *ctx, const int *devices, int ndev, const psc_coll_opts_t *opts,
                          psc_coll_report_t **out)
{
    psc_coll_opts_t o;
    psc_coll_state_t s;
    psc_coll_plan_t pl;
    int dev[PSC_MAX_GPUS], nlocal, nprocs;
    char why[512];
    double t0 = psc__now_ns();
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if ((st = psc__coll_opts_adopt(ctx, opts, &o)) != PSC_OK || (st = psc__check_opts(ctx, &o)) != PSC_OK)
        return st;
    if (!out)
        return psc__bad(ctx, "no place for the report given");
    if (o.graph_launches && (!ctx->cu.p_cuStreamBeginCapture || !ctx->cu.p_cuStreamEndCapture ||
                             !ctx->cu.p_cuGraphInstantiateWithFlags || !ctx->cu.p_cuGraphLaunch ||
                             !ctx->cu.p_cuGraphExecDestroy || !ctx->cu.p_cuGraphDestroy))
        return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "p2pscope coll: this driver lacks CUDA graphs (stream capture, "
                         "cuGraphInstantiateWithFlags: CUDA 11.4 and newer): accepted -G 0");
    if ((nlocal = psc__resolve_devices(ctx, devices, ndev, dev, PSC_MAX_GPUS)) < 0)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_coll_run: GPU list refused (accepted 0 to %d, each once: NCCL "
                         "takes one rank per GPU in a process)", psc_device_count(ctx) - 1);
    if (nlocal == 0)
        return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "p2pscope coll: no GPU here");
    if ((st = psc__agree_ranks(ctx, &o, nlocal)) != PSC_OK)
        return st;
    nprocs = o.procs ? o.procs->nprocs : 1;
    if ((st = psc__plan(ctx, &o, nprocs * nlocal, nlocal, &pl)) != PSC_OK)
        return st;

    memset(&s, 0, sizeof(s));
    s.x.ctx = ctx;
    s.x.o = &o;
    s.x.nlocal = nlocal;
    s.x.nranks = nprocs * nlocal;
    s.x.first_rank = (o.procs ? o.procs->proc : 0) * nlocal;
    memcpy(s.x.dev, dev, sizeof(dev));
    s.x.use_nccl = pl.nccl;
    s.x.want_own = pl.any_own;
    if (!(s.rep = psc__report_new(&o, s.x.nranks, nprocs, pl.nrows)) ||
        (o.per_op && !(s.each = calloc(PSC_COLL_MAX_EACH, sizeof(double)))) ||
        (o.per_iter && !(s.iter = calloc(2 * (size_t)o.iters, sizeof(double))))) {
        st = psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
        goto out;
    }
    if (pl.nccl && (st = psc__nccl_load(&s.x.nccl, why, sizeof(why))) != PSC_OK) {
        st = psc__fail(ctx, st, "p2pscope coll: %s", why);
        goto out;
    }
    s.rep->nccl_version = s.x.nccl.version;
    if ((st = psc__nccl_options(&s, pl.nccl)) != PSC_OK)
        goto out;
    psc__guard_enter(ctx);
    if (nlocal > 1)
        psc__peers(&s, 0);
    st = psc__run(&s, &pl);
    psc__coll_load_close(&s.x, s.load);
    psc__coll_exec_close(&s.x, st != PSC_OK);
    if (nlocal > 1)
        psc__peers(&s, 1);
    st = psc__guard_leave(ctx, st);
    psc__last_warning(&s.x.nccl, s.rep);
    psc__nccl_unload(&s.x.nccl);
out:
    free(pl.roots);
    free(pl.sizes);
    free(s.each);
    free(s.iter);
    if (st != PSC_OK) {
        psc_coll_report_free(s.rep);
        return st;
    }
    s.rep->run_ms = (psc__now_ns() - t0) / 1e6;
    s.rep->end_time = (long long)time(NULL);
    *out = s.rep;
    return PSC_OK;
}
