/*
 * coll's compute load (psc_coll_opts_t.compute_load; coll_load.h): while a row's timed loop runs again, every
 * local GPU runs the compute-load kernel (src/kernels/psc_compute_load.cuh: a matrix-multiply-like loop, one
 * wave of blocks on every SM) back to back on a stream of its own, each kernel between two CUDA events. The
 * collective's time is the timed loop's own (host clock, as the table's); what it cost the compute is the mean
 * time of the kernels that ran wholly within the loop (the loop's first and last operations marked by events on
 * the collective's streams) over a kernel's time alone, measured just before with the same work. The loop is
 * repeated until it lasts PSC_COLL_LOAD_WINDOW kernels, and enough kernels are queued to outlast three times
 * the loop's unloaded time; where they did not, again, outlasting twice the loops' whole length as measured
 * (psc__coll_load_time says why), up to three tries; where they still do not, `covered` says so.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll_load.h"
#include "coll/load_args.h"

#define PSC__LOAD_ROUNDS0 64u        /* the calibration's first try */
#define PSC__LOAD_ROUNDS_MAX (1u << 24)
#define PSC__LOAD_REPS_MAX 10000     /* timed loops in one measurement, at most */
#define PSC__LOAD_TRIES 3            /* measurements of one half, at most, until the queue outlasts its loops */

struct psc_coll_load {
    CUstream stream[PSC_MAX_GPUS];                        /* local rank i's compute stream */
    CUevent ev[PSC_MAX_GPUS][PSC_COLL_LOAD_KERNELS + 1];  /* before its first kernel, then after each */
    CUevent mark[2][PSC_MAX_GPUS];                        /* the timed loop's start and end, on its streams */
    CUdeviceptr out[PSC_MAX_GPUS];                        /* the kernel's sums */
    unsigned blocks[PSC_MAX_GPUS];                        /* one wave: PSC_LOAD_BLOCKS_PER_SM per SM */
    unsigned rounds;                                      /* the kernel's work for PSC_COLL_LOAD_KERNEL_US alone */
    double rounds_us;                                     /* its time alone then (the slowest GPU's), us */
};

double psc__coll_load_within(const double *at, int k, double from, double to, int *n)
{
    double sum = 0;

    *n = 0;
    for (int i = 0; i < k; i++)
        if (at[i] >= from && at[i + 1] <= to) {
            sum += at[i + 1] - at[i];
            (*n)++;
        }
    return *n ? sum / *n : NAN;
}

/* Queue n kernels of `rounds` on local rank i's compute stream, each followed by an event (ev[i][0] first). */
static psc_status_t psc__load_queue(psc_coll_exec_t *x, psc_coll_load_t *l, int i, unsigned rounds, int n)
{
    psc_context_t *ctx = x->ctx;
    void *params[] = {&l->out[i], &rounds};
    psc_status_t st;

    if ((st = psc__gpu_use(ctx, x->dev[i])) != PSC_OK ||
        (st = PSC_CU(ctx, cuEventRecord, (l->ev[i][0], l->stream[i]))) != PSC_OK)
        return st;
    for (int k = 0; k < n; k++)
        if ((st = psc__launch_on(ctx, l->stream[i], ctx->gpu[x->dev[i]].fn_compute_load, l->blocks[i],
                                 PSC_LOAD_THREADS, params)) != PSC_OK ||
            (st = PSC_CU(ctx, cuEventRecord, (l->ev[i][k + 1], l->stream[i]))) != PSC_OK)
            return st;
    return PSC_OK;
}

/* Wait for local rank i's compute stream; at[j] the time of ev[i][j] (j <= n) after ev[i][0], us. */
static psc_status_t psc__load_times(psc_coll_exec_t *x, psc_coll_load_t *l, int i, int n, double *at)
{
    psc_context_t *ctx = x->ctx;
    psc_status_t st;

    if ((st = psc__gpu_use(ctx, x->dev[i])) != PSC_OK ||
        (st = PSC_CU(ctx, cuStreamSynchronize, (l->stream[i]))) != PSC_OK)
        return st;
    at[0] = 0;
    for (int j = 1; j <= n; j++) {
        float ms = 0;

        if ((st = PSC_CU(ctx, cuEventElapsedTime, (&ms, l->ev[i][0], l->ev[i][j]))) != PSC_OK)
            return st;
        at[j] = ms * 1e3;
    }
    return PSC_OK;
}

/* One kernel of `rounds` alone on local rank i: the median of three, after one untimed; at least 0.001 us. */
static psc_status_t psc__load_alone(psc_coll_exec_t *x, psc_coll_load_t *l, int i, unsigned rounds, double *us)
{
    double at[5], d[3];
    psc_status_t st;

    if ((st = psc__load_queue(x, l, i, rounds, 4)) != PSC_OK || (st = psc__load_times(x, l, i, 4, at)) != PSC_OK)
        return st;
    for (int k = 0; k < 3; k++)
        d[k] = at[k + 2] - at[k + 1];
    *us = d[0] > d[1] ? (d[1] > d[2] ? d[1] : (d[0] > d[2] ? d[2] : d[0]))
                      : (d[0] > d[2] ? d[0] : (d[1] > d[2] ? d[2] : d[1]));
    if (!(*us > 0.001))
        *us = 0.001;
    return PSC_OK;
}

/* Rounds for us microseconds where `rounds` took took_us, within 1 .. PSC__LOAD_ROUNDS_MAX. */
static unsigned psc__load_rounds_for(unsigned rounds, double took_us, double us)
{
    double r = ceil((double)rounds * us / took_us);

    return r < 1 ? 1u : r > PSC__LOAD_ROUNDS_MAX ? PSC__LOAD_ROUNDS_MAX : (unsigned)r;
}

/* Local rank i's stream, events and output, made. */
static psc_status_t psc__load_make(psc_coll_exec_t *x, psc_coll_load_t *l, int i)
{
    psc_context_t *ctx = x->ctx;
    int sms = ctx->info[x->dev[i]].sm_count > 0 ? ctx->info[x->dev[i]].sm_count : 16;
    psc_status_t st;

    l->blocks[i] = (unsigned)sms * PSC_LOAD_BLOCKS_PER_SM;
    if ((st = psc__gpu_use(ctx, x->dev[i])) != PSC_OK ||
        (st = PSC_CU(ctx, cuStreamCreate, (&l->stream[i], CU_STREAM_NON_BLOCKING))) != PSC_OK ||
        (st = PSC_CU(ctx, cuMemAlloc, (&l->out[i], (size_t)l->blocks[i] * PSC_LOAD_THREADS * sizeof(float)))) !=
            PSC_OK)
        return st;
    for (int j = 0; j <= PSC_COLL_LOAD_KERNELS; j++)
        if ((st = PSC_CU(ctx, cuEventCreate, (&l->ev[i][j], CU_EVENT_DEFAULT))) != PSC_OK)
            return st;
    for (int j = 0; j < 2; j++)
        if ((st = PSC_CU(ctx, cuEventCreate, (&l->mark[j][i], CU_EVENT_DEFAULT))) != PSC_OK)
            return st;
    return PSC_OK;
}

psc_status_t psc__coll_load_open(psc_coll_exec_t *x, psc_coll_load_t **out)
{
    psc_coll_load_t *l = calloc(1, sizeof(*l));
    psc_status_t st = PSC_OK;
    double took = 0;

    if (!l)
        return psc__coll_fail(x, PSC_ERR_NO_MEMORY, "out of host memory");
    x->stage = "setting up the compute load";
    l->rounds = PSC__LOAD_ROUNDS0;
    for (int i = 0; i < x->nlocal && st == PSC_OK; i++) {
        double us = 0;

        if ((st = psc__load_make(x, l, i)) == PSC_OK && (st = psc__load_alone(x, l, i, l->rounds, &us)) == PSC_OK &&
            us > took)
            took = us;
    }
    l->rounds = psc__load_rounds_for(l->rounds, took, PSC_COLL_LOAD_KERNEL_US);
    for (int i = 0; i < x->nlocal && st == PSC_OK; i++) {
        double us = 0;

        if ((st = psc__load_alone(x, l, i, l->rounds, &us)) == PSC_OK && us > l->rounds_us)
            l->rounds_us = us;
    }
    if (st != PSC_OK) {
        st = psc__coll_fail(x, st, "%s", psc_context_last_error(x->ctx));
        psc__coll_load_close(x, l);
        return st;
    }
    *out = l;
    return PSC_OK;
}

void psc__coll_load_close(psc_coll_exec_t *x, psc_coll_load_t *l)
{
    psc_cuda_t *cu = &x->ctx->cu;

    if (!l)
        return;
    for (int i = 0; i < x->nlocal; i++) {
        if (psc__gpu_use(x->ctx, x->dev[i]) != PSC_OK)
            continue;
        if (l->stream[i]) {
            cu->p_cuStreamSynchronize(l->stream[i]);
            cu->p_cuStreamDestroy(l->stream[i]);
        }
        for (int j = 0; j <= PSC_COLL_LOAD_KERNELS; j++)
            if (l->ev[i][j])
                cu->p_cuEventDestroy(l->ev[i][j]);
        for (int j = 0; j < 2; j++)
            if (l->mark[j][i])
                cu->p_cuEventDestroy(l->mark[j][i]);
        if (l->out[i])
            cu->p_cuMemFree(l->out[i]);
    }
    free(l);
}

/* The timed loop `reps` times, its first start and last end marked on every local stream; sec per operation,
   span_us the whole on the host clock (what lies between the loops included: their checks, waits and marks). */
static psc_status_t psc__load_loops(psc_coll_exec_t *x, psc_coll_load_t *l, const psc_coll_shape_t *sh,
                                    int in_place, int reps, double *sec, double *span_us)
{
    double sum = 0, t0 = psc__now_ns();
    psc_status_t st = PSC_OK;

    for (int r = 0; r < reps && st == PSC_OK; r++) {
        double s = 0;

        x->mark[0] = r == 0 ? l->mark[0] : NULL;
        x->mark[1] = l->mark[1];
        st = psc__coll_time(x, sh, in_place, &s);
        sum += s;
    }
    x->mark[0] = x->mark[1] = NULL;
    *sec = sum / reps;
    *span_us = (psc__now_ns() - t0) * 1e-3;
    return st;
}

/* What local rank i's kernels say, once its compute stream is idle: v[0] loaded mean (0 none), v[1] 1 where some
   kernel ran within the loop, v[2] covered. */
static psc_status_t psc__load_read(psc_coll_exec_t *x, psc_coll_load_t *l, int i, int n, double v[3])
{
    double at[PSC_COLL_LOAD_KERNELS + 1], from = 0, to = 0, m;
    float ms[2] = {0, 0};
    int within = 0;
    psc_status_t st;

    if ((st = psc__load_times(x, l, i, n, at)) != PSC_OK ||
        (st = PSC_CU(x->ctx, cuEventElapsedTime, (&ms[0], l->ev[i][0], l->mark[0][i]))) != PSC_OK ||
        (st = PSC_CU(x->ctx, cuEventElapsedTime, (&ms[1], l->ev[i][0], l->mark[1][i]))) != PSC_OK)
        return st;
    from = ms[0] * 1e3;
    to = ms[1] * 1e3;
    m = psc__coll_load_within(at, n, from, to, &within);
    v[0] = within ? m : 0;
    v[1] = within > 0;
    v[2] = to <= at[n];
    return PSC_OK;
}

/* Every process's figures into out: the time as opts.time_of, the compute's means over the GPUs that have one;
   *span_us the longest process's (so every process sizes a next try alike). */
static psc_status_t psc__load_combine(psc_coll_exec_t *x, double sec, double alone_sum, const double v[3],
                                      psc_coll_load_half_t *out, double *span_us)
{
    const psc_coll_procs_t *p = x->o->procs;
    static const int how[] = {PSC_COLL_SUM, PSC_COLL_SUM, PSC_COLL_MIN, PSC_COLL_MAX};
    double t = sec, sums[4] = {alone_sum, v[0], v[1], (double)x->nlocal}, cov = v[2];
    int nprocs = p ? p->nprocs : 1;

    if (nprocs > 1 && ((x->o->time_of != PSC_COLL_TIME_RANK0 && p->allreduce(&t, 1, how[x->o->time_of], p->arg)) ||
                       p->allreduce(sums, 4, PSC_COLL_SUM, p->arg) || p->allreduce(&cov, 1, PSC_COLL_MIN, p->arg) ||
                       p->allreduce(span_us, 1, PSC_COLL_MAX, p->arg)))
        return psc__coll_fail(x, PSC_ERR_IO, "the processes' figures under the compute load could not be combined "
                              "(the caller's allreduce failed)");
    out->ran = 1;
    out->time_us = (x->o->time_of == PSC_COLL_TIME_MEAN && nprocs > 1 ? t / nprocs : t) * 1e6;
    out->compute_alone_us = sums[0] / sums[3];
    out->compute_us = sums[2] > 0 ? sums[1] / sums[2] : NAN;
    out->slowdown = out->compute_us / out->compute_alone_us - 1;
    out->covered = cov > 0;
    return PSC_OK;
}

/*
 * One measurement under the load: kernels long enough, and enough of them queued, to outlast outlast_us; the
 * loop `reps` times; every process's figures combined into out (out->covered the same in every process);
 * span_us the loops' whole length on the host clock, the longest process's.
 */
static psc_status_t psc__load_try(psc_coll_exec_t *x, psc_coll_load_t *l, const psc_coll_shape_t *sh, int in_place,
                                  int reps, double outlast_us, psc_coll_load_half_t *out, double *span_us)
{
    double alone[PSC_MAX_GPUS], alone_sum = 0, v[3] = {0, 0, 1}, sec = 0, least = HUGE_VAL, kernel_us;
    unsigned rounds;
    int n;
    psc_status_t st = PSC_OK;

    kernel_us = fmax(PSC_COLL_LOAD_KERNEL_US, outlast_us / (PSC_COLL_LOAD_KERNELS - 16));
    rounds = psc__load_rounds_for(l->rounds, l->rounds_us, kernel_us);
    x->stage = "the compute load";
    for (int i = 0; i < x->nlocal && st == PSC_OK; i++)
        if ((st = psc__load_alone(x, l, i, rounds, &alone[i])) == PSC_OK) {
            alone_sum += alone[i];
            least = fmin(least, alone[i]);
        }
    n = st == PSC_OK ? (int)fmin(PSC_COLL_LOAD_KERNELS, ceil((outlast_us + 1000) / least) + 4) : 0;
    for (int i = 0; i < x->nlocal && st == PSC_OK; i++)
        st = psc__load_queue(x, l, i, rounds, n);
    if (st != PSC_OK)
        return psc__coll_fail(x, st, "%s", psc_context_last_error(x->ctx));
    if ((st = psc__coll_barrier(x)) != PSC_OK || (st = psc__load_loops(x, l, sh, in_place, reps, &sec, span_us)) != PSC_OK)
        return st;
    x->stage = "the compute load";
    for (int i = 0; i < x->nlocal; i++) {
        double w[3];

        if ((st = psc__load_read(x, l, i, n, w)) != PSC_OK)
            return psc__coll_fail(x, st, "%s", psc_context_last_error(x->ctx));
        v[0] += w[0];
        v[1] += w[1];
        v[2] = fmin(v[2], w[2]);
    }
    return psc__load_combine(x, sec, alone_sum, v, out, span_us);
}

/*
 * The queue first outlasts three times the loop's unloaded time. Where the collectives slowed more than that under
 * the load (seen: 4.5x, NCCL's all-reduce of 1 MiB on one H100), or what lies between the repeated loops (each
 * loop's check of the results, its waits and marks) made them longer than their own times say (seen: p2pscope's
 * in-place all-reduce of 1 MiB on one GPU, 0.5 us per operation, repeated 200 times), again, outlasting twice
 * the loops' whole length as the last try measured it, at most PSC__LOAD_TRIES times in all.
 */
psc_status_t psc__coll_load_time(psc_coll_exec_t *x, psc_coll_load_t *l, const psc_coll_shape_t *sh, int in_place,
                                 double unloaded_sec, psc_coll_load_half_t *out)
{
    /* a replayed loop is graph_launches replays of iters x agg_iters operations: its length counts them all */
    const double ops = (double)x->o->iters * x->o->agg_iters * (x->o->graph_launches ? x->o->graph_launches : 1);
    double loop_us = unloaded_sec * 1e6 * ops, reps_d, span_us = 0;
    int reps;
    psc_status_t st;

    loop_us = loop_us > 0.01 ? loop_us : 0.01;
    reps_d = ceil(PSC_COLL_LOAD_WINDOW * PSC_COLL_LOAD_KERNEL_US / loop_us);
    reps = reps_d < 1 ? 1 : reps_d > PSC__LOAD_REPS_MAX ? PSC__LOAD_REPS_MAX : (int)reps_d;
    loop_us *= reps;
    st = psc__load_try(x, l, sh, in_place, reps, 3 * loop_us, out, &span_us);
    for (int t = 1; t < PSC__LOAD_TRIES && st == PSC_OK && !out->covered; t++)
        st = psc__load_try(x, l, sh, in_place, reps, 2 * fmax(span_us, out->time_us * ops * reps), out, &span_us);
    return st;
}
