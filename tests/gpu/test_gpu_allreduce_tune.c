/*
 * psc_allreduce_tune on the machine's GPUs: a group of every GPU (one rank
 * each; GPU 0 alone where they lack peer access), tuned against the
 * machine's NCCL, its table printed. Pinned: the table covers 16 B to
 * max_bytes, timed in CUDA graphs, each choice the faster of its times; sums
 * at sizes of every class (so of each choice), fp32 and bf16, in and out of
 * place, exact on every rank; a CUDA graph mixing a size of each choice,
 * replayed, exact. NCCL is installed on the GPU machines: without it the
 * test fails, saying why. Skipped (77) only without a driver or GPU.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll_values.h"
#include "driver/nccl.h"
#include "gpu_common.h"
#include "allreduce/ar_args.h"
#include "internal.h"

#define MAXB (64u << 20)

static int n;
static int devs[PSC_AR_MAX_RANKS];
static CUstream streams[PSC_AR_MAX_RANKS];
static CUdeviceptr sendb[PSC_AR_MAX_RANKS], recvb[PSC_AR_MAX_RANKS];
static unsigned char *host;

static size_t esize(int dt) { return dt == PSC_AR_FLOAT32 ? 4 : 2; }

static int fail(const char *what)
{
    fprintf(stderr, "FAILED: %s: %s\n", what, psc_context_last_error(g_ctx));
    return 1;
}

static int sync_all(void)
{
    for (int i = 0; i < n; i++)
        if (g_ctx->cu.p_cuStreamSynchronize(streams[i]) != CUDA_SUCCESS)
            return 1;
    return 0;
}

/* Every rank's inputs for (dt, count, seed) in its send buffer, waited for. */
static int put_inputs(int dt, size_t count, uint32_t seed)
{
    if (sync_all())
        return 1;
    for (int r = 0; r < n; r++) {
        for (size_t j = 0; j < count; j++) {
            uint64_t b = psc__coll_to_bits(dt, (double)psc__coll_input(PSC_OP_SUM, dt, n, r, j, seed));

            memcpy(host + j * esize(dt), &b, esize(dt));
        }
        if (psc__gpu_use(g_ctx, devs[r]) != PSC_OK ||
            g_ctx->cu.p_cuMemcpyHtoD(sendb[r], host, count * esize(dt)) != CUDA_SUCCESS ||
            g_ctx->cu.p_cuStreamSynchronize(NULL) != CUDA_SUCCESS)
            return 1;
    }
    return 0;
}

/* Every rank's output exact (in: its send buffer, else its receive buffer). */
static int expect_sums(int in, int dt, size_t count, uint32_t seed)
{
    if (sync_all())
        return fail("a stream");
    for (int r = 0; r < n; r++) {
        if (psc__gpu_use(g_ctx, devs[r]) != PSC_OK ||
            g_ctx->cu.p_cuMemcpyDtoH(host, in ? sendb[r] : recvb[r], count * esize(dt)) != CUDA_SUCCESS)
            return fail("reading the result");
        for (size_t j = 0; j < count; j++) {
            uint64_t want = psc__coll_to_bits(dt, psc__coll_reduced(PSC_OP_SUM, dt, n, j, seed)), got = 0;

            memcpy(&got, host + j * esize(dt), esize(dt));
            if (got != want) {
                fprintf(stderr, "FAILED: type %d, %zu elements, %s, rank %d element %zu: 0x%llx, expected 0x%llx\n",
                        dt, count, in ? "in place" : "out of place", r, j, (unsigned long long)got,
                        (unsigned long long)want);
                return 1;
            }
        }
    }
    return 0;
}

static int sum(psc_allreduce_t *ar, int in, int dt, size_t count)
{
    void *r[PSC_AR_MAX_RANKS];
    const void *s[PSC_AR_MAX_RANKS];

    for (int i = 0; i < n; i++) {
        s[i] = (const void *)(uintptr_t)sendb[i];
        r[i] = (void *)(uintptr_t)(in ? sendb[i] : recvb[i]);
    }
    return psc_allreduce_sum(ar, r, s, count, dt, streams, 5000) == PSC_OK ? 0 : fail("psc_allreduce_sum");
}

static int one(psc_allreduce_t *ar, int in, int dt, size_t count, uint32_t seed)
{
    if (put_inputs(dt, count, seed))
        return fail("the inputs");
    if (sum(ar, in, dt, count))
        return 1;
    return expect_sums(in, dt, count, seed);
}

/* A graph of calls of a size of each choice (out of place, so each replay gives the same), replayed 5 times. */
static int graph(psc_allreduce_t *ar, size_t small, size_t large)
{
    CUgraph g[PSC_AR_MAX_RANKS] = {0};
    CUgraphExec e[PSC_AR_MAX_RANKS] = {0};
    int rc = 0;

    if (put_inputs(PSC_AR_FLOAT32, large, 31))
        return fail("the inputs");
    for (int i = 0; i < n && rc == 0; i++)
        if (psc__gpu_use(g_ctx, devs[i]) != PSC_OK ||
            g_ctx->cu.p_cuStreamBeginCapture(streams[i], CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS)
            rc = fail("cuStreamBeginCapture");
    for (int c = 0; c < 6 && rc == 0; c++) /* the small one last: its elements are the large one's first */
        rc = sum(ar, 0, PSC_AR_FLOAT32, c % 2 ? small : large);
    for (int i = 0; i < n; i++) /* every capture ended before any graph is instantiated (the driver's rule) */
        if (psc__gpu_use(g_ctx, devs[i]) != PSC_OK || g_ctx->cu.p_cuStreamEndCapture(streams[i], &g[i]))
            rc = rc ? rc : fail("capturing the graph");
    for (int i = 0; i < n && rc == 0; i++)
        if (g_ctx->cu.p_cuGraphInstantiateWithFlags(&e[i], g[i], 0))
            rc = fail("instantiating the graph");
    for (int l = 0; l < 5 && rc == 0; l++)
        for (int i = 0; i < n && rc == 0; i++)
            if (g_ctx->cu.p_cuGraphLaunch(e[i], streams[i]) != CUDA_SUCCESS)
                rc = fail("cuGraphLaunch");
    if (rc == 0)
        rc = expect_sums(0, PSC_AR_FLOAT32, large, 31);
    for (int i = 0; i < n; i++) {
        if (e[i])
            g_ctx->cu.p_cuGraphExecDestroy(e[i]);
        if (g[i])
            g_ctx->cu.p_cuGraphDestroy(g[i]);
    }
    return rc;
}

static int run(void)
{
    psc_allreduce_t *ar = NULL;
    psc_ar_tuning_t tb;
    char ver[32];
    size_t by_choice[2] = {0, 0};
    int rc = 0;

    n = psc_device_count(g_ctx) < PSC_AR_MAX_RANKS ? psc_device_count(g_ctx) : PSC_AR_MAX_RANKS;
    for (int i = 0; i < n; i++)
        devs[i] = i;
    if (psc_allreduce_create(g_ctx, devs, n, MAXB, &ar) == PSC_ERR_UNSUPPORTED) {
        printf("no peer access between every pair (%s): GPU 0 alone\n", psc_context_last_error(g_ctx));
        n = 1;
        if (psc_allreduce_create(g_ctx, devs, n, MAXB, &ar) != PSC_OK)
            return fail("psc_allreduce_create");
    } else if (!ar) {
        return fail("psc_allreduce_create");
    }
    if (!(host = malloc(MAXB)))
        return fail("host memory");
    for (int i = 0; i < n; i++)
        if (psc__gpu_use(g_ctx, devs[i]) != PSC_OK ||
            g_ctx->cu.p_cuStreamCreate(&streams[i], CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
            g_ctx->cu.p_cuMemAlloc(&sendb[i], MAXB) != CUDA_SUCCESS ||
            g_ctx->cu.p_cuMemAlloc(&recvb[i], MAXB) != CUDA_SUCCESS)
            return fail("streams and buffers");
    if (psc_allreduce_tune(ar, NULL, streams) != PSC_OK) /* NCCL is installed on the GPU machines */
        return fail("psc_allreduce_tune");
    if (psc_allreduce_tuning(ar, &tb) != PSC_OK)
        return fail("psc_allreduce_tuning");
    printf("psc_allreduce_tune: %d GPU(s), NCCL %s, %s, median of %d each way\n", n,
           psc__nccl_version_string(tb.nccl_version, ver, sizeof(ver)), tb.graphs ? "CUDA graph replays" : "eager calls",
           tb.reps);
    printf("%12s %12s %12s  %s\n", "bytes", "own (us)", "NCCL (us)", "takes");
    for (int k = 0; k < tb.rows; k++)
        printf("%12llu %12.2f %12.2f  %s\n", (unsigned long long)tb.row[k].bytes, tb.row[k].own_us,
               tb.row[k].nccl_us, tb.row[k].nccl ? "NCCL" : "p2pscope");
    if (tb.rows != 23 || !tb.graphs) {
        fprintf(stderr, "FAILED: %d rows (expected 23: 16 B to 64 MiB), graphs %d\n", tb.rows, tb.graphs);
        return 1;
    }
    for (int k = 0; k < tb.rows && rc == 0; k++) {
        const psc_ar_tune_row_t *r = &tb.row[k];
        size_t hi = (size_t)r->bytes / 4, lo = k ? ((size_t)r->bytes / 2 + 16) / 4 : 1;

        if (r->bytes != 16ull << k || r->nccl != (r->nccl_us < r->own_us) || r->own_us <= 0 || r->nccl_us <= 0) {
            fprintf(stderr, "FAILED: row %d is not a choice of the faster\n", k);
            return 1;
        }
        if (!by_choice[r->nccl])
            by_choice[r->nccl] = hi;
        rc = one(ar, 0, PSC_AR_FLOAT32, hi, (uint32_t)k);
        if (rc == 0)
            rc = one(ar, 1, PSC_AR_FLOAT32, lo, (uint32_t)k + 100);
        if (rc == 0)
            rc = one(ar, k % 2, PSC_AR_BFLOAT16, (size_t)r->bytes / 2, (uint32_t)k + 200);
    }
    printf("%s sums at every class (fp32 and bf16, in and out of place)\n", rc ? "FAILED" : "ok");
    if (rc == 0 && by_choice[0] && by_choice[1]) {
        size_t a = by_choice[0] < by_choice[1] ? by_choice[0] : by_choice[1];
        size_t b = by_choice[0] < by_choice[1] ? by_choice[1] : by_choice[0];

        rc = graph(ar, a, b);
        printf("%s a graph of %zu B and %zu B calls (one of each choice), replayed\n", rc ? "FAILED" : "ok", 4 * a,
               4 * b);
    } else if (rc == 0) {
        rc = graph(ar, 4, by_choice[0] ? by_choice[0] : by_choice[1]);
        printf("%s a graph of calls (every class chose %s), replayed\n", rc ? "FAILED" : "ok",
               by_choice[0] ? "p2pscope" : "NCCL");
    }
    if (rc == 0 && psc_allreduce_check(ar) != PSC_OK)
        rc = fail("psc_allreduce_check");
    sync_all();
    psc_allreduce_destroy(ar);
    for (int i = 0; i < n; i++)
        if (psc__gpu_use(g_ctx, devs[i]) == PSC_OK) {
            g_ctx->cu.p_cuMemFree(sendb[i]);
            g_ctx->cu.p_cuMemFree(recvb[i]);
            g_ctx->cu.p_cuStreamDestroy(streams[i]);
        }
    free(host);
    return rc;
}

int main(void)
{
    psc_status_t st;
    int rc;

    if (!(g_ctx = psc_test_open(&st)))
        return psc_test_skippable(st) ? PSC_TEST_SKIP : 1;
    rc = run();
    psc_context_destroy(g_ctx);
    return rc;
}
