/*
 * psc_allreduce_join on the machine's GPUs: groups of 2, 3 and 4 processes
 * (PSC_TEST_PROCS="2 3 4" by default; forked here, each with its own
 * context), a GPU each where there are enough, else taking turns on them
 * (slow, still exact: fewer calls then; with 3 or more the two-shot kernel
 * runs, so one GPU tests the code of 4- and 8-GPU machines). Exact sums in
 * every process for each type, in and out of place, mixed sizes, both kernels
 * and the copy engines, a call in pieces; the reduce-scatter and the all-gather
 * by the copy engines (4 MiB parts); a CUDA graph of calls replayed in
 * each process; a process that never calls makes the others give up with the
 * rank named. Prints the time per call of both ways (meaningful with a GPU
 * each). Skipped only without a driver or GPU.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll/coll_values.h"
#include "gpu_common.h"
#include "allreduce/allreduce.h"
#include "internal.h"
#include "proc_group.h"

#define BIG ((17u << 20) + 64)
#define PART (4u << 20) /* parts_by_copy's largest part: n of them in each buffer */

static size_t esize(int dt) { return dt == PSC_AR_FLOAT32 ? 4 : 2; }

static int say(int proc, const char *what, psc_context_t *ctx)
{
    fprintf(stderr, "process %d: %s: %s\n", proc, what, ctx ? psc_context_last_error(ctx) : "");
    return 1;
}

typedef struct {
    psc_context_t *ctx;
    psc_allreduce_t *ar;
    CUstream s;
    CUdeviceptr in, out;
    unsigned char *host;
    int proc, nprocs;
} rank_t;

static int rank_open(rank_t *k, psc_context_t *ctx, int proc, int nprocs, int gpu, const psc_ar_procs_t *procs,
                     size_t max_bytes)
{
    /* BIG, or n parts of 4 MiB (parts_by_copy) where more */
    const size_t bytes = (size_t)nprocs * PART > BIG ? (size_t)nprocs * PART : BIG;

    memset(k, 0, sizeof(*k));
    gpu %= psc_device_count(ctx); /* more processes than GPUs: they share */
    k->ctx = ctx;
    k->proc = proc;
    k->nprocs = nprocs;
    if (!(k->host = malloc(bytes)) || psc__gpu_use(ctx, gpu) != PSC_OK ||
        ctx->cu.p_cuStreamCreate(&k->s, CU_STREAM_NON_BLOCKING) || ctx->cu.p_cuMemAlloc(&k->in, bytes) ||
        ctx->cu.p_cuMemAlloc(&k->out, bytes))
        return say(proc, "setup", NULL);
    if (psc_allreduce_join(ctx, gpu, procs, max_bytes, &k->ar) != PSC_OK)
        return say(proc, "psc_allreduce_join", ctx);
    return 0;
}

static void rank_close(rank_t *k)
{
    psc_allreduce_destroy(k->ar);
    free(k->host);
}

/* This rank's input for (dt, count, seed) on the GPU, waited for. */
static int put_input(rank_t *k, int dt, size_t count, uint32_t seed)
{
    for (size_t j = 0; j < count; j++) {
        uint64_t b = psc__coll_to_bits(dt, (double)psc__coll_input(PSC_OP_SUM, dt, k->nprocs, k->proc, j, seed));

        memcpy(k->host + j * esize(dt), &b, esize(dt));
    }
    /* a pageable copy returns once staged: wait for it (the legacy stream) before the rank's stream reads */
    if (k->ctx->cu.p_cuStreamSynchronize(k->s) != CUDA_SUCCESS ||
        k->ctx->cu.p_cuMemcpyHtoD(k->in, k->host, count * esize(dt)) != CUDA_SUCCESS ||
        k->ctx->cu.p_cuStreamSynchronize(NULL) != CUDA_SUCCESS)
        return say(k->proc, "input", NULL);
    return 0;
}

static int expect_sums(rank_t *k, CUdeviceptr out, int dt, size_t count, uint32_t seed)
{
    if (k->ctx->cu.p_cuStreamSynchronize(k->s) != CUDA_SUCCESS ||
        k->ctx->cu.p_cuMemcpyDtoH(k->host, out, count * esize(dt)) != CUDA_SUCCESS)
        return say(k->proc, "result", NULL);
    for (size_t j = 0; j < count; j++) {
        uint64_t want = psc__coll_to_bits(dt, psc__coll_reduced(PSC_OP_SUM, dt, k->nprocs, j, seed)), got = 0;

        memcpy(&got, k->host + j * esize(dt), esize(dt));
        if (got != want) {
            fprintf(stderr, "process %d: type %d count %zu element %zu: 0x%llx, expected 0x%llx\n", k->proc, dt,
                    count, j, (unsigned long long)got, (unsigned long long)want);
            return 1;
        }
    }
    return 0;
}

static int sum(rank_t *k, CUdeviceptr out, int dt, size_t count)
{
    void *r = (void *)(uintptr_t)out;
    const void *snd = (const void *)(uintptr_t)k->in;

    return psc_allreduce_sum(k->ar, &r, &snd, count, dt, &k->s, 5000) == PSC_OK ? 0
                                                                                : say(k->proc, "psc_allreduce_sum", k->ctx);
}

/* Fewer calls under the sanitizers and where more than two processes take turns on a GPU (each call then
   waits for the others' time slices: exact, but slow). */
static int few_calls(psc_context_t *ctx, int nprocs)
{
    return getenv("PSC_TEST_QUICK") != NULL || (nprocs > 2 && nprocs > psc_device_count(ctx));
}

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

/*
 * The copy-engine path captured: a graph of 5 calls of BIG (1 MiB chunks: 18 each, the slots' halves in turn
 * many times), in place, replayed 3 times: 15 calls, each summing the last one's sums (n^14 times the first
 * sums in the end: checked where fp32 holds that exactly: with 2 ranks each sum doubles, exact, always).
 */
static int copy_engine_graph(rank_t *k, const psc_ar_procs_t *procs)
{
    psc_cuda_t *cu = &k->ctx->cu;
    CUgraph g = NULL;
    CUgraphExec e = NULL;
    int rc = 0;

    if (psc__allreduce_force(k->ar, 3) != PSC_OK || psc__allreduce_ce_chunk(k->ar, 1u << 20) != PSC_OK)
        return say(k->proc, "the copy-engine path refused", k->ctx);
    if ((rc = put_input(k, PSC_AR_FLOAT32, BIG / 4, 11)) != 0)
        return rc;
    if (cu->p_cuStreamBeginCapture(k->s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS)
        return say(k->proc, "cuStreamBeginCapture", NULL);
    for (int c = 0; c < 5 && rc == 0; c++) {
        void *r = (void *)(uintptr_t)k->in;

        if (psc_allreduce_sum(k->ar, &r, (const void *const *)&r, BIG / 4, PSC_AR_FLOAT32, &k->s, 5000) != PSC_OK)
            rc = say(k->proc, "psc_allreduce_sum (captured)", k->ctx);
    }
    if (cu->p_cuStreamEndCapture(k->s, &g) != CUDA_SUCCESS || rc ||
        cu->p_cuGraphInstantiateWithFlags(&e, g, 0) != CUDA_SUCCESS)
        return rc ? rc : say(k->proc, "the copy-engine path's graph", NULL);
    for (int l = 0; l < 3 && rc == 0; l++)
        if (cu->p_cuGraphLaunch(e, k->s) != CUDA_SUCCESS)
            rc = say(k->proc, "cuGraphLaunch", NULL);
    if (cu->p_cuStreamSynchronize(k->s) != CUDA_SUCCESS)
        rc = say(k->proc, "the copy-engine path's graph replays", NULL);
    if (rc == 0 && cu->p_cuMemcpyDtoH(k->host, k->in, BIG) != CUDA_SUCCESS)
        rc = say(k->proc, "cuMemcpyDtoH", NULL);
    for (size_t j = 0; rc == 0 && j < BIG / 4; j++) {
        double w = psc__coll_reduced(PSC_OP_SUM, PSC_AR_FLOAT32, k->nprocs, j, 11);
        float want, got;

        for (int c = 1; c < 15; c++)
            w *= k->nprocs;
        want = (float)w;
        memcpy(&got, k->host + 4 * j, 4);
        if ((k->nprocs == 2 || (w > -16777216.0 && w < 16777216.0)) && memcmp(&got, &want, 4) != 0) {
            fprintf(stderr, "process %d: the copy-engine graph's element %zu: %g, expected %g\n", k->proc, j, got,
                    want);
            rc = 1;
        }
    }
    psc_test_procs_barrier(procs);
    cu->p_cuGraphExecDestroy(e);
    cu->p_cuGraphDestroy(g);
    return rc;
}

/* Once k's stream is done: the output of parts_call's collective at recv, exact (what: how it was made). */
static int parts_check(rank_t *k, int rs, size_t count, uint32_t seed, CUdeviceptr recv, const char *what)
{
    unsigned char *h = k->host;
    const size_t n_out = rs ? count : (size_t)k->nprocs * count;

    if (k->ctx->cu.p_cuStreamSynchronize(k->s) != CUDA_SUCCESS ||
        k->ctx->cu.p_cuMemcpyDtoH(h, recv, n_out * 4) != CUDA_SUCCESS)
        return say(k->proc, "result", NULL);
    for (size_t e = 0; e < n_out; e++) {
        float want = rs ? (float)psc__coll_reduced(PSC_OP_SUM, PSC_AR_FLOAT32, k->nprocs, k->proc * count + e, seed)
                        : (float)psc__coll_input(PSC_OP_SUM, PSC_AR_FLOAT32, k->nprocs, (int)(e / count), e % count,
                                                 seed), got;

        memcpy(&got, h + 4 * e, 4);
        if (memcmp(&got, &want, 4)) {
            fprintf(stderr, "process %d: %s of %zu floats a part, %s, element %zu: %g, expected %g\n", k->proc,
                    rs ? "reduce-scatter" : "all-gather", count, what, e, got, want);
            return 1;
        }
    }
    return 0;
}

/*
 * A reduce-scatter (rs) or an all-gather of parts of count floats (seed), out of place (k->in to k->out) or in
 * place (in k->in, or for the all-gather's input k->in's part of this rank), every part checked; way: the way the
 * group must say it took.
 */
static int parts_call(rank_t *k, int rs, size_t count, uint32_t seed, int in_place, int way)
{
    const size_t part = count * 4, mine = (size_t)k->proc * part;
    unsigned char *h = k->host;
    CUdeviceptr send = in_place && !rs ? k->in + mine : k->in, recv = in_place ? (rs ? k->in + mine : k->in) : k->out;
    void *r = (void *)(uintptr_t)recv;
    const void *snd = (const void *)(uintptr_t)send;
    const size_t n_in = rs ? (size_t)k->nprocs * count : count;

    for (size_t e = 0; e < n_in; e++) {
        float f = (float)psc__coll_input(PSC_OP_SUM, PSC_AR_FLOAT32, k->nprocs, k->proc, e, seed);

        memcpy(h + 4 * e, &f, 4);
    }
    if (k->ctx->cu.p_cuStreamSynchronize(k->s) != CUDA_SUCCESS ||
        k->ctx->cu.p_cuMemcpyHtoD(send, h, n_in * 4) != CUDA_SUCCESS ||
        k->ctx->cu.p_cuStreamSynchronize(NULL) != CUDA_SUCCESS)
        return say(k->proc, "input", NULL);
    if ((rs ? psc_allreduce_reduce_scatter : psc_allreduce_all_gather)(k->ar, &r, &snd, count, PSC_AR_FLOAT32, &k->s,
                                                                       5000) != PSC_OK)
        return say(k->proc, rs ? "psc_allreduce_reduce_scatter" : "psc_allreduce_all_gather", k->ctx);
    if (psc_allreduce_last_way(k->ar) != way)
        return say(k->proc, "a call not the way it must go", NULL);
    return parts_check(k, rs, count, seed, recv, in_place ? "in place" : "out of place");
}


/* The reduce-scatter and the all-gather of 4 MiB parts by the copy engines (by size) through the peers' slots,
   then forced in 1 MiB chunks with a short last; by the kernel below 4 MiB; in and out of place. */
static int parts_by_copy(rank_t *k)
{
    int rc = 0;

    for (int c = 0; c < 12 && rc == 0; c++) {
        const int rs = c % 2, in_place = (c / 2) % 2, stage = c / 4; /* by size; forced; by size below 4 MiB */
        const size_t count = stage == 2 ? PART / 16 : stage == 1 ? PART / 4 - 4 : PART / 4;

        psc__allreduce_force(k->ar, stage == 1 ? 3 : 0);
        if (stage == 1 && psc__allreduce_ce_chunk(k->ar, 1u << 20) != PSC_OK)
            return say(k->proc, "the copy-engine path refused", k->ctx);
        rc = parts_call(k, rs, count, (uint32_t)c, in_place, stage == 2 ? PSC_AR_WAY_ONESHOT : PSC_AR_WAY_COPY_ENGINES);
    }
    psc__allreduce_force(k->ar, 0);
    return rc;
}

/*
 * The reduce-scatter and the all-gather by the copy engines captured: per collective a graph of 5 calls of 4 MiB
 * parts (1 MiB chunks), out of place (each call's output the same), replayed 3 times, then checked (parts_call
 * fills and checks; its own call runs eagerly first, so the graph's replays must leave the output as it was).
 */
static int parts_graph(rank_t *k, const psc_ar_procs_t *procs)
{
    psc_cuda_t *cu = &k->ctx->cu;
    int rc = 0;

    psc__allreduce_force(k->ar, 3);
    if (psc__allreduce_ce_chunk(k->ar, 1u << 20) != PSC_OK)
        return say(k->proc, "the copy-engine path refused", k->ctx);
    for (int rs = 0; rs < 2 && rc == 0; rs++) {
        const size_t count = PART / 4;
        void *r = (void *)(uintptr_t)k->out;
        const void *snd = (const void *)(uintptr_t)k->in;
        CUgraph g = NULL;
        CUgraphExec e = NULL;

        if ((rc = parts_call(k, rs, count, 40u + (uint32_t)rs, 0, PSC_AR_WAY_COPY_ENGINES)) != 0)
            break;
        if (cu->p_cuStreamBeginCapture(k->s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS)
            return say(k->proc, "cuStreamBeginCapture", NULL);
        for (int c = 0; c < 5 && rc == 0; c++)
            if ((rs ? psc_allreduce_reduce_scatter : psc_allreduce_all_gather)(k->ar, &r, &snd, count, PSC_AR_FLOAT32,
                                                                               &k->s, 5000) != PSC_OK)
                rc = say(k->proc, "a captured call", k->ctx);
        if (cu->p_cuStreamEndCapture(k->s, &g) != CUDA_SUCCESS || rc ||
            cu->p_cuGraphInstantiateWithFlags(&e, g, 0) != CUDA_SUCCESS)
            return rc ? rc : say(k->proc, "the parts' graph", NULL);
        memset(k->host, 0xA5, (size_t)k->nprocs * PART); /* the eager call's output gone: the replays' to check */
        if (cu->p_cuStreamSynchronize(k->s) != CUDA_SUCCESS ||
            cu->p_cuMemcpyHtoD(k->out, k->host, (size_t)k->nprocs * PART) != CUDA_SUCCESS ||
            cu->p_cuStreamSynchronize(NULL) != CUDA_SUCCESS)
            rc = say(k->proc, "clearing the output", NULL);
        for (int l = 0; l < 3 && rc == 0; l++)
            if (cu->p_cuGraphLaunch(e, k->s) != CUDA_SUCCESS)
                rc = say(k->proc, "cuGraphLaunch", NULL);
        if (rc == 0)
            rc = parts_check(k, rs, count, 40u + (uint32_t)rs, k->out, "replayed");
        psc_test_procs_barrier(procs);
        cu->p_cuGraphExecDestroy(e);
        cu->p_cuGraphDestroy(g);
    }
    psc__allreduce_force(k->ar, 0);
    return rc;
}

/* Every type, in and out of place, mixed sizes each checked, on both kernels and the copy engines; a call in
   pieces on each; the reduce-scatter and the all-gather by the copy engines, eager and captured; a graph of the
   copy-engine path. */
static int role_sums(psc_context_t *ctx, int proc, int nprocs, int gpu, const psc_ar_procs_t *procs)
{
    static const int types[] = {PSC_AR_FLOAT32, PSC_AR_FLOAT16, PSC_AR_BFLOAT16};
    int calls = few_calls(ctx, nprocs) ? 30 : 600, rc;
    uint32_t x = 4242;
    rank_t k;

    if ((rc = rank_open(&k, ctx, proc, nprocs, gpu, procs, BIG)) != 0)
        return rc;
    for (int c = 0; c < calls && rc == 0; c++) {
        int dt = types[c % 3];
        size_t count;

        x = x * 1103515245u + 12345u;
        count = 1 + (x >> 8) % (c % 5 == 0 ? (1u << 20) : 8192);
        psc__allreduce_force(k.ar, 1 + (c / 2) % 3); /* both kernels and the copy engines, the same turns everywhere */
        if ((rc = put_input(&k, dt, count, (uint32_t)c)) == 0 && (rc = sum(&k, c % 2 ? k.in : k.out, dt, count)) == 0)
            rc = expect_sums(&k, c % 2 ? k.in : k.out, dt, count, (uint32_t)c);
    }
    for (int algo = 1; algo <= 3 && rc == 0; algo++) {
        psc__allreduce_force(k.ar, algo);
        if ((rc = put_input(&k, PSC_AR_FLOAT32, BIG / 4, 7)) == 0 && (rc = sum(&k, k.out, PSC_AR_FLOAT32, BIG / 4)) == 0)
            rc = expect_sums(&k, k.out, PSC_AR_FLOAT32, BIG / 4, 7);
    }
    if (rc == 0)
        rc = parts_by_copy(&k);
    if (rc == 0)
        rc = parts_graph(&k, procs);
    if (rc == 0)
        rc = copy_engine_graph(&k, procs);
    if (rc == 0 && psc_allreduce_check(k.ar) != PSC_OK)
        rc = say(proc, "psc_allreduce_check", ctx);
    psc_test_procs_barrier(procs); /* no process frees its buffers while another still works on them */
    rank_close(&k);
    return rc;
}

/* Eager calls and a replayed graph of 20, timed, for 8 B to 32 KiB (and 64 MiB eager); the graph's checked. */
static int role_time(psc_context_t *ctx, int proc, int nprocs, int gpu, const psc_ar_procs_t *procs)
{
    psc_cuda_t *cu = &ctx->cu;
    int quick = few_calls(ctx, nprocs), calls = quick ? 20 : 1000, replays = quick ? 2 : 50;
    rank_t k;
    int rc;

    if ((rc = rank_open(&k, ctx, proc, nprocs, gpu, procs, BIG)) != 0)
        return rc;
    for (size_t bytes = 8; bytes <= 32768 && rc == 0; bytes *= 4) {
        size_t count = bytes / 4;
        CUgraph g = NULL;
        CUgraphExec e = NULL;
        double t0, eager, graph;

        if ((rc = put_input(&k, PSC_AR_FLOAT32, count, (uint32_t)bytes)) != 0)
            break;
        for (int w = 0; w < replays && rc == 0; w++)
            rc = sum(&k, k.out, PSC_AR_FLOAT32, count);
        cu->p_cuStreamSynchronize(k.s);
        psc_test_procs_barrier(procs);
        t0 = now_us();
        for (int c = 0; c < calls && rc == 0; c++)
            rc = sum(&k, k.out, PSC_AR_FLOAT32, count);
        cu->p_cuStreamSynchronize(k.s);
        eager = (now_us() - t0) / calls;
        if (rc || cu->p_cuStreamBeginCapture(k.s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS)
            return rc ? rc : say(proc, "cuStreamBeginCapture", NULL);
        for (int c = 0; c < 20 && rc == 0; c++)
            rc = sum(&k, k.out, PSC_AR_FLOAT32, count);
        if (cu->p_cuStreamEndCapture(k.s, &g) != CUDA_SUCCESS || cu->p_cuGraphInstantiateWithFlags(&e, g, 0))
            return say(proc, "graph", NULL);
        cu->p_cuStreamSynchronize(k.s);
        psc_test_procs_barrier(procs);
        t0 = now_us();
        for (int l = 0; l < replays && rc == 0; l++)
            if (cu->p_cuGraphLaunch(e, k.s) != CUDA_SUCCESS)
                rc = say(proc, "cuGraphLaunch", NULL);
        cu->p_cuStreamSynchronize(k.s);
        graph = (now_us() - t0) / (20.0 * replays);
        if (rc == 0)
            rc = expect_sums(&k, k.out, PSC_AR_FLOAT32, count, (uint32_t)bytes);
        if (proc == 0)
            printf("allreduce %d processes (%s) %6zu B: eager %.2f us per call, graph replay %.2f us per call\n",
                   nprocs, psc_device_count(ctx) < nprocs ? "sharing one GPU" : "a GPU each",
                   bytes, eager, graph);
        cu->p_cuGraphExecDestroy(e);
        cu->p_cuGraphDestroy(g);
    }
    if (rc == 0 && psc_allreduce_check(k.ar) != PSC_OK)
        rc = say(proc, "psc_allreduce_check", ctx);
    psc_test_procs_barrier(procs);
    rank_close(&k);
    return rc;
}

/* The last process never calls: the others give up within the timeout, naming it; nobody hangs. */
static int role_silent(psc_context_t *ctx, int proc, int nprocs, int gpu, const psc_ar_procs_t *procs)
{
    rank_t k;
    int rc;

    if ((rc = rank_open(&k, ctx, proc, nprocs, gpu, procs, 4096)) != 0)
        return rc;
    if (proc != nprocs - 1) {
        void *r = (void *)(uintptr_t)k.out;
        const void *snd = (const void *)(uintptr_t)k.in;
        char want[64];

        for (int c = 0; c < 3 && rc == 0; c++)
            if (psc_allreduce_sum(k.ar, &r, &snd, 256, PSC_AR_FLOAT32, &k.s, 200) != PSC_OK)
                rc = say(proc, "psc_allreduce_sum", ctx);
        if (rc == 0 && ctx->cu.p_cuStreamSynchronize(k.s) != CUDA_SUCCESS)
            rc = say(proc, "cuStreamSynchronize", NULL);
        snprintf(want, sizeof(want), "waiting for rank %d's data in call 1", nprocs - 1);
        if (rc == 0 && (psc_allreduce_check(k.ar) != PSC_ERR_TIMEOUT || !strstr(psc_context_last_error(ctx), want)))
            rc = say(proc, "no timeout naming the silent rank", ctx);
    }
    psc_test_procs_barrier(procs);
    rank_close(&k);
    return rc;
}

static psc_context_t *open_gpu(int proc, int *code)
{
    psc_status_t st;
    psc_context_t *ctx = psc_test_open(&st);

    (void)proc;
    *code = ctx ? 0 : psc_test_skippable(st) ? PSC_TEST_SKIP : 1;
    return ctx;
}

/* The group sizes to run: PSC_TEST_PROCS ("2 3 4" by default), each 2 to 8; 0 where the list is bad. */
static int group_sizes(int *sizes, int max)
{
    const char *env = getenv("PSC_TEST_PROCS");
    char *end;
    int n = 0;

    for (const char *p = env ? env : "2 3 4"; *p; p = end) {
        long v = strtol(p, &end, 10);

        if (end == p || v < 2 || v > PSC_TEST_NP_MAX || n == max || (*end && *end != ' ' && *end != ','))
            return 0;
        sizes[n++] = (int)v;
        while (*end == ' ' || *end == ',')
            end++;
    }
    return n;
}

int main(void)
{
    static const int gpus[PSC_TEST_NP_MAX] = {0, 1, 2, 3, 4, 5, 6, 7}; /* fewer GPUs: shared (rank_open) */
    int sizes[PSC_TEST_NP_MAX], nsizes = group_sizes(sizes, PSC_TEST_NP_MAX), rc = 0;
    struct {
        const char *name;
        psc_test_role_t role;
    } runs[] = {{"sums", role_sums}, {"time", role_time}, {"silent", role_silent}};

    if (nsizes == 0) {
        fprintf(stderr, "PSC_TEST_PROCS: process counts from 2 to %d, separated by spaces\n", PSC_TEST_NP_MAX);
        return 1;
    }
    for (int z = 0; z < nsizes; z++)
        for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
            rc = psc_test_run_procs(runs[i].role, sizes[z], gpus, open_gpu, 300);
            if (rc == PSC_TEST_SKIP)
                return PSC_TEST_SKIP;
            printf("%s %s, %d processes\n", rc ? "FAILED" : "ok", runs[i].name, sizes[z]);
            if (rc)
                return 1;
        }
    return 0;
}
