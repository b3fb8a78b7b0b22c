/*
 * psc_allreduce_join on the fake driver: groups of processes (forked here),
 * one fake GPU each, their buffers shared by the fake's legacy IPC (memfd
 * memory every process maps), the kernel run by each process's job thread.
 * Pinned: exact, bit-identical sums in every process for each type, in and
 * out of place, calls of mixed sizes one after another and in pieces; two
 * processes on one GPU; every process refusing the same way when they
 * disagree; a process that never calls makes the others give up with the
 * rank named, and nobody hangs; the same of the copy-engine path (2 processes), and its reduce-scatters and
 * all-gathers.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "allreduce/allreduce.h"
#include "coll/coll_values.h"
#include "fake_context.h"
#include "internal.h"
#include "proc_group.h"

static size_t esize(int dt) { return dt == PSC_AR_FLOAT32 ? 4 : 2; }

/* A process's part of a scenario; 0 on success, else a line on stderr and 1. */
static int say(int proc, const char *what, psc_context_t *ctx)
{
    fprintf(stderr, "process %d: %s: %s\n", proc, what, ctx ? psc_context_last_error(ctx) : "");
    return 1;
}

/* Sum count elements of dt (seed) in this process's rank and check every element exactly. */
static int sum_and_check(psc_context_t *ctx, psc_allreduce_t *ar, CUstream s, CUdeviceptr in, CUdeviceptr out,
                         int proc, int nprocs, int dt, size_t count, uint32_t seed)
{
    unsigned char *pi = (unsigned char *)(uintptr_t)in, *po = (unsigned char *)(uintptr_t)out;
    void *r = po;
    const void *snd = pi;

    for (size_t j = 0; j < count; j++) {
        uint64_t b = psc__coll_to_bits(dt, (double)psc__coll_input(PSC_OP_SUM, dt, nprocs, proc, j, seed));

        memcpy(pi + j * esize(dt), &b, esize(dt));
    }
    if (psc_allreduce_sum(ar, &r, &snd, count, dt, &s, 5000) != PSC_OK)
        return say(proc, "psc_allreduce_sum", ctx);
    if (ctx->cu.p_cuStreamSynchronize(s) != CUDA_SUCCESS)
        return say(proc, "cuStreamSynchronize", NULL);
    for (size_t j = 0; j < count; j++) {
        uint64_t want = psc__coll_to_bits(dt, psc__coll_reduced(PSC_OP_SUM, dt, nprocs, j, seed)), got = 0;

        memcpy(&got, po + j * esize(dt), esize(dt));
        if (got != want) {
            fprintf(stderr, "process %d: type %d count %zu element %zu: 0x%llx, expected 0x%llx\n", proc, dt, count,
                    j, (unsigned long long)got, (unsigned long long)want);
            return 1;
        }
    }
    return 0;
}

/*
 * A reduce-scatter (rs: in holds n parts of count floats; its output this rank's part, into out or in place) or an
 * all-gather (its input count floats, in or, in place, this rank's part of in; its output n parts, into out or in
 * place in in) of seed's inputs: the output exact.
 */
static int parts_and_check(int rs, psc_context_t *ctx, psc_allreduce_t *ar, CUstream s, CUdeviceptr in,
                           CUdeviceptr out, int proc, int nprocs, size_t count, uint32_t seed, int in_place)
{
    const size_t mine = (size_t)proc * count * 4, n_in = rs ? (size_t)nprocs * count : count;
    const size_t n_out = rs ? count : (size_t)nprocs * count;
    unsigned char *pi = (unsigned char *)(uintptr_t)in + (in_place && !rs ? mine : 0);
    unsigned char *po = in_place ? (unsigned char *)(uintptr_t)in + (rs ? mine : 0) : (unsigned char *)(uintptr_t)out;
    void *r = po;
    const void *snd = pi;

    if (!in_place)
        memset(po, 0xA5, n_out * 4); /* nothing left from before */
    for (size_t e = 0; e < n_in; e++) {
        float f = (float)psc__coll_input(PSC_OP_SUM, PSC_AR_FLOAT32, nprocs, proc, e, seed);

        memcpy(pi + 4 * e, &f, 4);
    }
    if ((rs ? psc_allreduce_reduce_scatter : psc_allreduce_all_gather)(ar, &r, &snd, count, PSC_AR_FLOAT32, &s,
                                                                       5000) != PSC_OK)
        return say(proc, rs ? "psc_allreduce_reduce_scatter" : "psc_allreduce_all_gather", ctx);
    if (ctx->cu.p_cuStreamSynchronize(s) != CUDA_SUCCESS)
        return say(proc, "cuStreamSynchronize", NULL);
    for (size_t e = 0; e < n_out; e++) {
        float want = rs ? (float)psc__coll_reduced(PSC_OP_SUM, PSC_AR_FLOAT32, nprocs, (uint64_t)proc * count + e, seed)
                        : (float)psc__coll_input(PSC_OP_SUM, PSC_AR_FLOAT32, nprocs, (int)(e / count), e % count, seed);
        float got;

        memcpy(&got, po + 4 * e, 4);
        if (memcmp(&got, &want, 4)) {
            fprintf(stderr, "process %d: %s of %zu %s, element %zu: %g, expected %g\n", proc,
                    rs ? "reduce-scatter" : "all-gather", count, in_place ? "in place" : "out of place", e, got, want);
            return 1;
        }
    }
    return 0;
}

#define BIG ((17u << 20) + 64)

/* Mixed types, sizes, in and out of place, a call in three pieces. */
static int role_sums(psc_context_t *ctx, int proc, int nprocs, int gpu, const psc_ar_procs_t *procs)
{
    static const int types[] = {PSC_AR_FLOAT32, PSC_AR_FLOAT16, PSC_AR_BFLOAT16};
    psc_allreduce_t *ar = NULL;
    CUdeviceptr in = 0, out = 0;
    CUstream s = NULL;
    uint32_t x = 777;
    int rc = 0;

    if (psc__gpu_use(ctx, gpu) != PSC_OK || ctx->cu.p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
        ctx->cu.p_cuMemAlloc(&in, BIG) || ctx->cu.p_cuMemAlloc(&out, BIG))
        return say(proc, "setup", NULL);
    if (psc_allreduce_join(ctx, gpu, procs, BIG, &ar) != PSC_OK)
        return say(proc, "psc_allreduce_join", ctx);
    for (int k = 0; k < 60 && rc == 0; k++) {
        int dt = types[k % 3];
        size_t count;

        x = x * 1103515245u + 12345u;
        count = 1 + (x >> 8) % 5000;
        rc = sum_and_check(ctx, ar, s, in, k % 2 ? in : out, proc, nprocs, dt, count, (uint32_t)k);
    }
    if (rc == 0)
        rc = sum_and_check(ctx, ar, s, in, out, proc, nprocs, PSC_AR_FLOAT32, BIG / 4, 99);
    if (rc == 0)
        rc = sum_and_check(ctx, ar, s, in, in, proc, nprocs, PSC_AR_BFLOAT16, 9, 100);
    if (rc == 0 && psc_allreduce_check(ar) != PSC_OK)
        rc = say(proc, "psc_allreduce_check", ctx);
    psc_allreduce_destroy(ar);
    return rc;
}

/* The copy-engine path (forced, 1 KiB chunks: the slots' halves in turn many times): mixed calls, exact; every
   fourth a reduce-scatter (each process pushes its peers' parts into their slots, and sums its own) and every
   fourth an all-gather (each pushes its part into every peer's slots, and puts each in its place). */
static int role_copy_engine_sums(psc_context_t *ctx, int proc, int nprocs, int gpu, const psc_ar_procs_t *procs)
{
    psc_allreduce_t *ar = NULL;
    CUdeviceptr in = 0, out = 0;
    CUstream s = NULL;
    uint32_t x = 31;
    int rc = 0;

    if (psc__gpu_use(ctx, gpu) != PSC_OK || ctx->cu.p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
        ctx->cu.p_cuMemAlloc(&in, 65536) || ctx->cu.p_cuMemAlloc(&out, 65536))
        return say(proc, "setup", NULL);
    if (psc_allreduce_join(ctx, gpu, procs, 4u << 20, &ar) != PSC_OK)
        return say(proc, "psc_allreduce_join", ctx);
    if (psc__allreduce_force(ar, 3) != PSC_OK || psc__allreduce_ce_chunk(ar, 1024) != PSC_OK)
        rc = say(proc, "the copy-engine path refused", ctx);
    for (int k = 0; k < 40 && rc == 0; k++) {
        x = x * 1103515245u + 12345u;
        if (k % 4 >= 2) /* whole vectors a part, n parts within the 64 KiB buffers */
            rc = parts_and_check(k % 4 == 2, ctx, ar, s, in, out, proc, nprocs,
                                 4 * (1 + (x >> 8) % (16384 / 4 / (unsigned)nprocs - 1)), (uint32_t)k, (k / 4) % 2);
        else
            rc = sum_and_check(ctx, ar, s, in, k % 2 ? in : out, proc, nprocs, k % 3 ? PSC_AR_FLOAT32 : PSC_AR_BFLOAT16,
                               1 + (x >> 8) % 16000, (uint32_t)k);
        if (rc == 0 && psc_allreduce_last_way(ar) != PSC_AR_WAY_COPY_ENGINES)
            rc = say(proc, "a call not by the copy engines", NULL);
    }
    if (rc == 0 && psc_allreduce_check(ar) != PSC_OK)
        rc = say(proc, "psc_allreduce_check", ctx);
    psc_allreduce_destroy(ar);
    return rc;
}

/* All-gathers by size in a joined group made for 4 MiB parts: 4 MiB through the peers' slots by the copy engines,
   in and out of place; 1 MiB by the kernel; 4 MiB less 4 B (not whole vectors) by the kernel even when the copy
   engines are forced; every part exact. */
static int role_all_gather_by_size(psc_context_t *ctx, int proc, int nprocs, int gpu, const psc_ar_procs_t *procs)
{
    static const struct {
        size_t count;
        int in_place, way, force;
    } calls[] = {{1u << 20, 0, PSC_AR_WAY_COPY_ENGINES, 0}, {1u << 20, 1, PSC_AR_WAY_COPY_ENGINES, 0},
                 {1u << 18, 0, PSC_AR_WAY_ONESHOT, 0}, {(1u << 20) - 1, 0, PSC_AR_WAY_ONESHOT, 3},
                 {(1u << 20) - 1, 1, PSC_AR_WAY_ONESHOT, 3}};
    const size_t all = (size_t)nprocs * (4u << 20);
    psc_allreduce_t *ar = NULL;
    CUdeviceptr in = 0, out = 0;
    CUstream s = NULL;
    int rc = 0;

    if (psc__gpu_use(ctx, gpu) != PSC_OK || ctx->cu.p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
        ctx->cu.p_cuMemAlloc(&in, all) || ctx->cu.p_cuMemAlloc(&out, all))
        return say(proc, "setup", NULL);
    if (psc_allreduce_join(ctx, gpu, procs, 4u << 20, &ar) != PSC_OK)
        return say(proc, "psc_allreduce_join", ctx);
    for (size_t c = 0; c < sizeof(calls) / sizeof(calls[0]) && rc == 0; c++) {
        if (psc__allreduce_force(ar, calls[c].force) != PSC_OK)
            rc = say(proc, "psc__allreduce_force", NULL);
        else
            rc = parts_and_check(0, ctx, ar, s, in, out, proc, nprocs, calls[c].count, (uint32_t)c, calls[c].in_place);
        if (rc == 0 && psc_allreduce_last_way(ar) != calls[c].way)
            rc = say(proc, "an all-gather not the way its size says", NULL);
    }
    if (rc == 0 && psc_allreduce_check(ar) != PSC_OK)
        rc = say(proc, "psc_allreduce_check", ctx);
    psc_allreduce_destroy(ar);
    return rc;
}

/* Process 1 asks another max_bytes: every process refuses, naming it. */
static int role_disagree(psc_context_t *ctx, int proc, int nprocs, int gpu, const psc_ar_procs_t *procs)
{
    psc_allreduce_t *ar = (psc_allreduce_t *)(uintptr_t)1;
    psc_status_t st = psc_allreduce_join(ctx, gpu, procs, proc == 1 ? 8192 : 4096, &ar);

    (void)nprocs;
    if (st != PSC_ERR_INVALID || !strstr(psc_context_last_error(ctx), "process 1 asked max_bytes 8192") ||
        ar != (psc_allreduce_t *)(uintptr_t)1)
        return say(proc, "a disagreement not refused as expected", ctx);
    return 0;
}

/*
 * Process 1 cannot make its buffers shareable (its GPUs have no UUID here): every process fails the same
 * join, process 1 with its own reason, the others naming process 1; nothing is handed out.
 */
static int role_one_cannot_share(psc_context_t *ctx, int proc, int nprocs, int gpu, const psc_ar_procs_t *procs)
{
    psc_allreduce_t *ar = (psc_allreduce_t *)(uintptr_t)1;
    psc_status_t st;

    (void)nprocs;
    st = psc_allreduce_join(ctx, gpu, procs, 4096, &ar);
    if (st == PSC_OK || ar != (psc_allreduce_t *)(uintptr_t)1)
        return say(proc, "joined although process 1 could not share its buffers", ctx);
    if (!strstr(psc_context_last_error(ctx), proc == 1 ? "UUID" : "process 1 could not make its buffers"))
        return say(proc, "the failure not named", ctx);
    return 0;
}

/*
 * Process 2's GPUs are another machine's (other UUIDs): nobody can open another's buffers across that
 * line; every process fails, process 0 (the first that could not) with its own reason, the others naming it.
 */
static int role_one_unreachable(psc_context_t *ctx, int proc, int nprocs, int gpu, const psc_ar_procs_t *procs)
{
    psc_allreduce_t *ar = (psc_allreduce_t *)(uintptr_t)1;
    psc_status_t st;

    (void)nprocs;
    st = psc_allreduce_join(ctx, gpu, procs, 4096, &ar);
    if (st == PSC_OK || ar != (psc_allreduce_t *)(uintptr_t)1)
        return say(proc, "joined although process 2's buffers cannot be opened", ctx);
    if (!strstr(psc_context_last_error(ctx), proc == 0 ? "does not see" : "process 0 could not open its peers' buffers"))
        return say(proc, "the failure not named", ctx);
    return 0;
}

/*
 * The copy-engine path, a late peer: process 0's call gives up (100 ms) before process 1 calls at all; process 1
 * then calls with a long timeout and finds process 0's abort (its copies go on unchecked into process 1's slots):
 * it gives up at once, naming process 0, instead of adding what may have been overwritten.
 */
static int role_late_peer_sees_abort(psc_context_t *ctx, int proc, int nprocs, int gpu, const psc_ar_procs_t *procs)
{
    psc_allreduce_t *ar = NULL;
    CUdeviceptr in = 0;
    CUstream s = NULL;
    void *r;
    int rc = 0;

    (void)nprocs;
    if (psc__gpu_use(ctx, gpu) != PSC_OK || ctx->cu.p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
        ctx->cu.p_cuMemAlloc(&in, 65536))
        return say(proc, "setup", NULL);
    if (psc_allreduce_join(ctx, gpu, procs, 4u << 20, &ar) != PSC_OK)
        return say(proc, "psc_allreduce_join", ctx);
    if (psc__allreduce_force(ar, 3) != PSC_OK || psc__allreduce_ce_chunk(ar, 1024) != PSC_OK)
        rc = say(proc, "the copy-engine path refused", ctx);
    r = (void *)(uintptr_t)in;
    memset(r, 0, 65536);
    if (rc == 0 && proc == 0 &&
        (psc_allreduce_sum(ar, &r, (const void *const *)&r, 4096, PSC_AR_FLOAT32, &s, 100) != PSC_OK ||
         ctx->cu.p_cuStreamSynchronize(s) != CUDA_SUCCESS || psc_allreduce_check(ar) != PSC_ERR_TIMEOUT))
        rc = say(proc, "no timeout alone", ctx);
    psc_test_procs_barrier(procs); /* process 0 gave up before process 1 calls */
    if (rc == 0 && proc == 1 &&
        (psc_allreduce_sum(ar, &r, (const void *const *)&r, 4096, PSC_AR_FLOAT32, &s, 60000) != PSC_OK ||
         ctx->cu.p_cuStreamSynchronize(s) != CUDA_SUCCESS || psc_allreduce_check(ar) != PSC_ERR_TIMEOUT ||
         !strstr(psc_context_last_error(ctx), "waiting for rank 0's data")))
        rc = say(proc, "the late process did not give up on the first one's abort", ctx);
    psc_test_procs_barrier(procs);
    psc_allreduce_destroy(ar);
    return rc;
}

static int g_never_copy_engine; /* 1: role_one_never_calls's calls by the copy-engine path */

/* The last process joins but never calls: the others give up, naming it; nobody hangs. */
static int role_one_never_calls(psc_context_t *ctx, int proc, int nprocs, int gpu, const psc_ar_procs_t *procs)
{
    psc_allreduce_t *ar = NULL;
    CUdeviceptr in = 0;
    CUstream s = NULL;
    char want[64];
    int rc = 0;

    if (psc__gpu_use(ctx, gpu) != PSC_OK || ctx->cu.p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
        ctx->cu.p_cuMemAlloc(&in, 4096))
        return say(proc, "setup", NULL);
    if (psc_allreduce_join(ctx, gpu, procs, g_never_copy_engine ? 4u << 20 : 4096, &ar) != PSC_OK)
        return say(proc, "psc_allreduce_join", ctx);
    if (g_never_copy_engine && (psc__allreduce_force(ar, 3) != PSC_OK || psc__allreduce_ce_chunk(ar, 256) != PSC_OK))
        rc = say(proc, "the copy-engine path refused", ctx);
    if (proc != nprocs - 1 && rc == 0) {
        void *r = (void *)(uintptr_t)in;
        const void *snd = r;

        memset(r, 0, 4096);
        for (int k = 0; k < 3 && rc == 0; k++) /* the later calls do nothing: no wait of their own */
            if (psc_allreduce_sum(ar, &r, &snd, 256, PSC_AR_FLOAT32, &s, 100) != PSC_OK)
                rc = say(proc, "psc_allreduce_sum", ctx);
        if (rc == 0 && ctx->cu.p_cuStreamSynchronize(s) != CUDA_SUCCESS)
            rc = say(proc, "cuStreamSynchronize", NULL);
        snprintf(want, sizeof(want), "waiting for rank %d's data in call 1", nprocs - 1);
        if (rc == 0 && (psc_allreduce_check(ar) != PSC_ERR_TIMEOUT || !strstr(psc_context_last_error(ctx), want)))
            rc = say(proc, "no timeout naming the missing rank", ctx);
    }
    psc_test_procs_barrier(procs); /* the silent one stays until the others are done with its buffers */
    psc_allreduce_destroy(ar);
    return rc;
}

/* A process whose GPUs have no UUID (cannot share), or another machine's (others cannot open its); -1 none. */
static int g_no_uuid = -1, g_other_uuid = -1;

static psc_context_t *open_fake(int proc, int *code)
{
    psc_context_t *ctx = NULL;
    char err[256];

    psc_test_fake_driver("contexts", "3");
    setenv("FAKE_CUDA_UUID", proc == g_other_uuid ? "9" : "7", 1); /* GPUs with UUIDs, which share messages name */
    if (proc == g_no_uuid)
        unsetenv("FAKE_CUDA_UUID");
    if (psc_context_create(&ctx, err, sizeof(err)) != PSC_OK) {
        fprintf(stderr, "psc_context_create: %s\n", err);
        *code = 1;
        return NULL;
    }
    return ctx;
}

/* Run role in nprocs forked processes on the GPUs listed; every one must exit 0. */
static void run_procs(psc_test_role_t role, int nprocs, const int *gpus)
{
    int rc = psc_test_run_procs(role, nprocs, gpus, open_fake, 60);

    g_no_uuid = g_other_uuid = -1; /* one run's */
    assert_int_equal(rc, 0);
}

static int setup(void **state) { return psc_test_open_fake_gpus(state, "3"); }

static void test_three_processes_sum(void **state)
{
    static const int gpus[] = {0, 1, 2};

    (void)state;
    run_procs(role_sums, 3, gpus);
}

static void test_two_processes_share_a_gpu(void **state)
{
    static const int gpus[] = {1, 1};

    (void)state;
    run_procs(role_sums, 2, gpus);
}

static void test_one_process(void **state)
{
    static const int gpus[] = {2};

    (void)state;
    run_procs(role_sums, 1, gpus);
}

static void test_disagreement_refused_everywhere(void **state)
{
    static const int gpus[] = {0, 1, 2};

    (void)state;
    run_procs(role_disagree, 3, gpus);
}

static void test_one_process_cannot_share(void **state)
{
    static const int gpus[] = {0, 1, 2};

    (void)state;
    g_no_uuid = 1;
    run_procs(role_one_cannot_share, 3, gpus);
    g_other_uuid = 2;
    run_procs(role_one_unreachable, 3, gpus);
}

static void test_silent_process_times_out(void **state)
{
    static const int gpus[] = {0, 1, 2};

    (void)state;
    run_procs(role_one_never_calls, 3, gpus);
}

static void test_copy_engine_path(void **state)
{
    static const int gpus[] = {0, 1}, one_gpu[] = {2, 2}, three[] = {0, 1, 2};

    (void)state;
    run_procs(role_copy_engine_sums, 2, gpus);
    run_procs(role_copy_engine_sums, 3, three);
    run_procs(role_all_gather_by_size, 2, gpus);
    run_procs(role_copy_engine_sums, 2, one_gpu);
    g_never_copy_engine = 1; /* a silent peer: the others give up on the path too, naming it */
    run_procs(role_one_never_calls, 2, gpus);
    g_never_copy_engine = 0;
    run_procs(role_late_peer_sees_abort, 2, gpus);
}

static void test_refusals(void **state)
{
    psc_ar_procs_t bad = {2, 2, NULL, psc_test_allgather}, none = {2, 0, NULL, NULL};
    psc_allreduce_t *ar = (psc_allreduce_t *)(uintptr_t)1;
    psc_test_proc_t pa = {NULL, 1, 0};
    psc_ar_procs_t one = {1, 0, &pa, psc_test_allgather};

    (void)state;
    assert_int_equal(psc_allreduce_join(g_ctx, 0, &bad, 4096, &ar), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "accepted procs with an allgather"));
    assert_int_equal(psc_allreduce_join(g_ctx, 0, &none, 4096, &ar), PSC_ERR_INVALID);
    assert_int_equal(psc_allreduce_join(g_ctx, 0, NULL, 4096, &ar), PSC_ERR_INVALID);
    assert_int_equal(psc_allreduce_join(g_ctx, 5, &one, 4096, &ar), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "GPU 5 does not exist"));
    assert_int_equal(psc_allreduce_join(g_ctx, 0, &one, 8, &ar), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "accepted 16 B to 1 TiB"));
    assert_ptr_equal(ar, (psc_allreduce_t *)(uintptr_t)1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_processes_sum),
        cmocka_unit_test(test_two_processes_share_a_gpu),
        cmocka_unit_test(test_one_process),
        cmocka_unit_test(test_disagreement_refused_everywhere),
        cmocka_unit_test(test_one_process_cannot_share),
        cmocka_unit_test(test_silent_process_times_out),
        cmocka_unit_test(test_copy_engine_path),
        cmocka_unit_test(test_refusals),
    };

    return cmocka_run_group_tests(tests, setup, psc_test_close_ctx);
}
