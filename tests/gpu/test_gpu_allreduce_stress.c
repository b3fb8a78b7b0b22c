/*
 * psc_allreduce_* under pressure on the machine's GPUs (every GPU one rank,
 * at most 8; PSC_TEST_RANKS=k takes the first k): a million back-to-back
 * calls of mixed sizes and types (some over the 8 MiB slot, some in place,
 * every fifth a reduce-scatter of the same inputs' parts, every fifth an
 * all-gather of parts of them),
 * each checked on the GPU right after it (test_gpu_ar_kernels.cu: the
 * documented sum bit for bit, and every rank's output byte for byte equal to
 * rank 0's, read through peer access); calls while one GPU at a time is kept
 * busy by a kernel on another stream (a few ms by its own clock); calls
 * alternating between two streams per rank ordered by events, eagerly and
 * captured in CUDA graphs replayed; and a timeout on purpose (a rank's stream
 * held by a kernel spinning on host-mapped memory until the others have given
 * up), reported with the ranks named, later calls doing nothing, a new group
 * working after. With one GPU the group is one rank: what needs two is said
 * and skipped. PSC_TEST_QUICK=1 (the sanitizers) runs a few hundred calls of
 * each; PSC_AR_STRESS_CALLS=n sets the long run's calls. Skipped (77) only
 * without a driver or GPU.
 */
#include <cuda.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "allreduce/ar_args.h"
#include "gpu_common.h"
#include "internal.h"

#define MAXR 8
#define SLOTS 24                /* small inputs: slot s holds input seed s, of type types[s % 3] */
#define SLOT (1u << 20)
#define BIG ((9u << 20) + 4096) /* the group's max_bytes: over the 8 MiB slot, so large calls go in pieces */
#define NOUT 4                  /* outputs rotate: a rank's check reads rank 0's output while rank 0 goes on */
#define RES 5                   /* ar_t_check's result words */

/* The test's fatbin (test_gpu_ar_kernels.cu), embedded by CMake. */
extern const unsigned char psc_test_ar_fatbin[];

static const int types[3] = {PSC_AR_FLOAT32, PSC_AR_FLOAT16, PSC_AR_BFLOAT16};
static int n, quick;
static uint64_t big_every; /* every this many calls one of 8 MiB give or take */
static int devs[MAXR];
static CUstream sa[MAXR], sb[MAXR], side[MAXR];
static CUevent ev_a[MAXR], ev_b[MAXR];
static CUmodule mod[MAXR];
static CUfunction fn_fill[MAXR], fn_check[MAXR], fn_busy[MAXR], fn_hold[MAXR];
static CUdeviceptr small_in[MAXR], big_in[MAXR], outb[MAXR][NOUT], res[MAXR], busy_done[MAXR];

static size_t esize(int dt)
{
    return dt == PSC_AR_FLOAT32 ? 4 : 2;
}

static void use(int i)
{
    assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
}

static void launch(int i, CUstream s, CUfunction f, unsigned blocks, unsigned threads, void **params)
{
    use(i);
    assert_int_equal(g_ctx->cu.p_cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, s, params, NULL), CUDA_SUCCESS);
}

static void fill(int i, CUdeviceptr p, uint64_t count, int dt, unsigned seed)
{
    unsigned t = (unsigned)dt, r = (unsigned)i;
    void *params[] = {&p, &count, &t, &seed, &r};

    launch(i, sa[i], fn_fill[i], 264, 256, params);
}

static int setup(void **state)
{
    const char *k = getenv("PSC_TEST_RANKS");
    psc_cuda_t *cu = &g_ctx->cu;

    (void)state;
    quick = getenv("PSC_TEST_QUICK") != NULL;
    big_every = quick ? 256 : 4096;
    n = psc_device_count(g_ctx) < MAXR ? psc_device_count(g_ctx) : MAXR;
    if (k && atoi(k) >= 1 && atoi(k) < n)
        n = atoi(k);
    for (int i = 0; i < n; i++) {
        devs[i] = i;
        if (psc__gpu_use(g_ctx, i) != PSC_OK || cu->p_cuStreamCreate(&sa[i], CU_STREAM_NON_BLOCKING) ||
            cu->p_cuStreamCreate(&sb[i], CU_STREAM_NON_BLOCKING) ||
            cu->p_cuStreamCreate(&side[i], CU_STREAM_NON_BLOCKING) ||
            cu->p_cuEventCreate(&ev_a[i], CU_EVENT_DISABLE_TIMING) ||
            cu->p_cuEventCreate(&ev_b[i], CU_EVENT_DISABLE_TIMING) ||
            cu->p_cuModuleLoadData(&mod[i], psc_test_ar_fatbin) ||
            cu->p_cuModuleGetFunction(&fn_fill[i], mod[i], "ar_t_fill") ||
            cu->p_cuModuleGetFunction(&fn_check[i], mod[i], "ar_t_check") ||
            cu->p_cuModuleGetFunction(&fn_busy[i], mod[i], "ar_t_busy") ||
            cu->p_cuModuleGetFunction(&fn_hold[i], mod[i], "ar_t_hold") ||
            cu->p_cuMemAlloc(&small_in[i], (size_t)SLOTS * SLOT) || cu->p_cuMemAlloc(&big_in[i], 3u * (size_t)BIG) ||
            cu->p_cuMemAlloc(&res[i], RES * 8) || cu->p_cuMemAlloc(&busy_done[i], 4))
            return -1;
        for (int o = 0; o < NOUT; o++)
            if (cu->p_cuMemAlloc(&outb[i][o], BIG))
                return -1;
    }
    /* every rank's inputs, once: the calls pick a slot and a size */
    for (int i = 0; i < n; i++) {
        for (int s = 0; s < SLOTS; s++)
            fill(i, small_in[i] + (CUdeviceptr)s * SLOT, SLOT / esize(types[s % 3]), types[s % 3], (unsigned)s);
        for (int t = 0; t < 3; t++)
            fill(i, big_in[i] + (CUdeviceptr)t * BIG, BIG / esize(types[t]), types[t], 1000u + (unsigned)t);
        if (cu->p_cuStreamSynchronize(sa[i]))
            return -1;
    }
    printf("allreduce stress: %d rank%s\n", n, n == 1 ? "" : "s");
    return 0;
}

static void sync_all(void)
{
    for (int i = 0; i < n; i++) {
        assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(sa[i]), CUDA_SUCCESS);
        assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(sb[i]), CUDA_SUCCESS);
        assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(side[i]), CUDA_SUCCESS);
    }
}

/* The checker's words back to "nothing seen" (first-call words at their largest). */
static void res_reset(void)
{
    const uint64_t zero[RES] = {0, UINT64_MAX, 0, UINT64_MAX, 0};

    for (int i = 0; i < n; i++) {
        use(i);
        assert_int_equal(g_ctx->cu.p_cuMemcpyHtoD(res[i], zero, sizeof(zero)), CUDA_SUCCESS);
    }
}

/* No wrong element and no difference from rank 0 on any rank; returns the elements checked (all ranks). */
static uint64_t res_expect_clean(const char *what)
{
    uint64_t seen = 0;

    for (int i = 0; i < n; i++) {
        uint64_t w[RES];

        use(i);
        assert_int_equal(g_ctx->cu.p_cuMemcpyDtoH(w, res[i], sizeof(w)), CUDA_SUCCESS);
        if (w[0])
            fail_msg("%s: rank %d: %llu wrong elements, the first in call %llu", what, i, (unsigned long long)w[0],
                     (unsigned long long)w[1]);
        if (w[2])
            fail_msg("%s: rank %d: %llu elements unlike rank 0's, the first in call %llu", what, i,
                     (unsigned long long)w[2], (unsigned long long)w[3]);
        seen += w[4];
    }
    return seen;
}

/* One call of the stress: its input (a slot), type, size (a reduce-scatter's, an all-gather's: a part's), output,
   whether in place, whether a reduce-scatter (psc_allreduce_reduce_scatter: its input n parts, its output its rank's
   sum) or an all-gather (psc_allreduce_all_gather: its input a part, its output n parts). */
typedef struct {
    int dt;
    size_t count;
    unsigned seed;
    CUdeviceptr in[MAXR];
    int out, in_place, rs, ag;
} call_t;

static uint32_t lcg(uint32_t *x)
{
    *x = *x * 1103515245u + 12345u;
    return *x >> 8;
}

/* Call k: mostly up to 32 KiB, every 64th up to 1 MiB, every big_every-th 8 MiB give or take (crossing the slot). */
static call_t pick(uint64_t k, uint32_t *x)
{
    call_t c;

    memset(&c, 0, sizeof(c));
    c.out = (int)(k % NOUT);
    c.in_place = k % 7 == 3;
    if (k % big_every == big_every - 1) {
        int t = (int)(lcg(x) % 3);
        size_t bytes = (8u << 20) - 65536 + (size_t)lcg(x) % (BIG - (8u << 20) + 65536);

        c.dt = types[t];
        c.seed = 1000u + (unsigned)t;
        c.count = bytes / esize(c.dt);
        for (int i = 0; i < n; i++)
            c.in[i] = big_in[i] + (CUdeviceptr)t * BIG;
    } else {
        int s = (int)(lcg(x) % SLOTS);
        size_t most = (k % 64 == 63 ? SLOT : 32768) / esize(types[s % 3]);

        c.dt = types[s % 3];
        c.seed = (unsigned)s;
        c.count = 1 + lcg(x) % most;
        for (int i = 0; i < n; i++)
            c.in[i] = small_in[i] + (CUdeviceptr)s * SLOT;
    }
    if (k % 5 == 2) { /* every fifth a reduce-scatter: parts of the same input, n of them in the slot */
        c.rs = 1;
        c.count = c.count / (size_t)n ? c.count / (size_t)n : 1;
    } else if (k % 5 == 4) { /* and every fifth an all-gather: n parts of that size in the output */
        c.ag = 1;
        c.count = c.count / (size_t)n ? c.count / (size_t)n : 1;
    }
    return c;
}

/* Enqueue call k on each rank's stream s[i], then its check right behind it on the same stream. */
static void run_call(psc_allreduce_t *ar, const call_t *c, const CUstream *s, uint64_t k)
{
    void *r[MAXR];
    const void *in[MAXR];

    const size_t part = c->count * esize(c->dt), all = c->rs ? part * (size_t)n : part;
    psc_status_t st;

    for (int i = 0; i < n; i++) {
        /* a reduce-scatter in place: its output is its rank's part of the input it overwrites */
        /* an all-gather in place: its input is its rank's part of the output */
        const CUdeviceptr at = c->in_place && (c->rs || c->ag) ? (CUdeviceptr)(part * (size_t)i) : 0;

        r[i] = (void *)(uintptr_t)(outb[i][c->out] + (c->rs ? at : 0));
        in[i] = c->in_place ? (const void *)(uintptr_t)(outb[i][c->out] + (c->ag ? at : 0))
                            : (const void *)(uintptr_t)c->in[i];
        if (c->in_place) {
            use(i);
            assert_int_equal(g_ctx->cu.p_cuMemcpyAsync((CUdeviceptr)(uintptr_t)in[i], c->in[i], all, s[i]),
                             CUDA_SUCCESS);
        }
    }
    st = c->rs   ? psc_allreduce_reduce_scatter(ar, r, in, c->count, c->dt, s, 0)
         : c->ag ? psc_allreduce_all_gather(ar, r, in, c->count, c->dt, s, 0)
                 : psc_allreduce_sum(ar, r, in, c->count, c->dt, s, 0);
    if (st != PSC_OK)
        fail_msg("call %llu (%s, type %d, %zu elements): %s", (unsigned long long)k,
                 c->rs ? "reduce-scatter" : c->ag ? "all-gather" : "all-reduce", c->dt, c->count,
                 psc_context_last_error(g_ctx));
    for (int i = 0; i < n; i++) {
        /* each rank's part of a reduce-scatter is its own sum: nothing to compare with rank 0's */
        CUdeviceptr out = (CUdeviceptr)(uintptr_t)r[i], ref = i && !c->rs ? outb[0][c->out] : 0;
        uint64_t count = c->ag ? c->count * (uint64_t)n : c->count, call = k, base = c->rs ? c->count * (uint64_t)i : 0;
        uint64_t gpart = c->ag ? c->count : 0;
        unsigned dt = (unsigned)c->dt, seed = c->seed, nr = (unsigned)n;
        void *params[] = {&out, &ref, &count, &dt, &seed, &nr, &call, &res[i], &base, &gpart};
        unsigned blocks = (unsigned)((count + 255) / 256 < 264 ? (count + 255) / 256 : 264);

        launch(i, s[i], fn_check[i], blocks, 256, params);
    }
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- a million back-to-back calls, each checked on the GPU */

static void test_million_calls(void **state)
{
    const char *env = getenv("PSC_AR_STRESS_CALLS");
    uint64_t calls = env && strtoull(env, NULL, 10) > 0 ? strtoull(env, NULL, 10) : quick ? 1000 : 1000000;
    uint64_t seen = 0, elems = 0;
    psc_allreduce_t *ar = NULL;
    uint32_t x = 31337;
    double t0;

    (void)state;
    res_reset();
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, BIG, &ar), PSC_OK);
    t0 = now_s();
    for (uint64_t k = 0; k < calls; k++) {
        call_t c = pick(k, &x);

        elems += c.count;
        run_call(ar, &c, sa, k);
        if (k % 200000 == 199999 || k + 1 == calls) { /* a look now and then: a failure shows early */
            sync_all();
            seen = res_expect_clean("back-to-back calls");
            assert_int_equal(psc_allreduce_check(ar), PSC_OK);
            printf("allreduce stress: %llu calls checked in %.1f s (%.2f us per call, %llu elements per rank)\n",
                   (unsigned long long)k + 1, now_s() - t0, (now_s() - t0) * 1e6 / (double)(k + 1),
                   (unsigned long long)elems);
        }
    }
    assert_true(seen == elems * (uint64_t)n); /* every element of every call on every rank was looked at */
    psc_allreduce_destroy(ar);
}

/* ---- one GPU at a time kept busy by another kernel */

static void test_busy_gpu(void **state)
{
    const uint64_t calls = quick ? 100 : 2000, busy_ns = 3000000;
    uint64_t seen = 0, elems = 0, busies = 0;
    psc_allreduce_t *ar = NULL;
    uint32_t x = 99;
    unsigned blocks[MAXR];
    double t0;

    (void)state;
    res_reset();
    for (int i = 0; i < n; i++) {
        const unsigned zero = 0;

        use(i);
        assert_int_equal(g_ctx->cu.p_cuMemcpyHtoD(busy_done[i], &zero, 4), CUDA_SUCCESS);
        /* two blocks of 1024 threads per SM: the whole GPU, so the all-reduce waits for SMs */
        blocks[i] = 2u * (unsigned)(g_ctx->info[i].sm_count > 0 ? g_ctx->info[i].sm_count : 1);
    }
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, BIG, &ar), PSC_OK);
    t0 = now_s();
    for (uint64_t k = 0; k < calls; k++) {
        call_t c = pick(k, &x);

        if (k % 5 == 0) { /* busy for a few ms on another stream of GPU (k / 5) % n, just before its call */
            int g = (int)((k / 5) % (uint64_t)n);
            uint64_t ns = busy_ns;
            CUdeviceptr d = busy_done[g];
            void *params[] = {&ns, &d};

            launch(g, side[g], fn_busy[g], blocks[g], 1024, params);
            busies++;
        }
        elems += c.count;
        run_call(ar, &c, sa, k);
    }
    sync_all();
    seen = res_expect_clean("calls beside a busy GPU");
    assert_true(seen == elems * (uint64_t)n);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    for (int i = 0; i < n; i++) { /* the busy kernels ran, every block */
        unsigned done = 0, want = 0;

        for (uint64_t b = 0; b < busies; b++)
            want += (int)(b % (uint64_t)n) == i ? blocks[i] : 0;
        use(i);
        assert_int_equal(g_ctx->cu.p_cuMemcpyDtoH(&done, busy_done[i], 4), CUDA_SUCCESS);
        assert_int_equal(done, want);
    }
    printf("allreduce stress: %llu calls beside %llu busy kernels of %.1f ms: %.1f ms in all\n",
           (unsigned long long)calls, (unsigned long long)busies, (double)busy_ns * 1e-6, (now_s() - t0) * 1e3);
    psc_allreduce_destroy(ar);
}

/* ---- two streams per rank, alternating, each call ordered after the last by an event */

/* Before a call on stream set `on`, order it after the last call's stream set `last` (an event per rank). */
static void order_after(const CUstream *on, const CUstream *last, CUevent *ev)
{
    for (int i = 0; i < n; i++) {
        use(i);
        assert_int_equal(g_ctx->cu.p_cuEventRecord(ev[i], last[i]), CUDA_SUCCESS);
        assert_int_equal(g_ctx->cu.p_cuStreamWaitEvent(on[i], ev[i], 0), CUDA_SUCCESS);
    }
}

static void test_two_streams(void **state)
{
    const uint64_t calls = quick ? 300 : 20000;
    uint64_t elems = 0;
    psc_allreduce_t *ar = NULL;
    uint32_t x = 4321;

    (void)state;
    res_reset();
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, BIG, &ar), PSC_OK);
    for (uint64_t k = 0; k < calls; k++) {
        call_t c = pick(k, &x);

        if (k > 0)
            order_after(k % 2 ? sb : sa, k % 2 ? sa : sb, k % 2 ? ev_a : ev_b);
        elems += c.count;
        run_call(ar, &c, k % 2 ? sb : sa, k);
    }
    sync_all();
    assert_true(res_expect_clean("calls on two streams") == elems * (uint64_t)n);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* The same, captured: one graph per rank of calls alternating between its two streams, replayed. */
static void test_graph_two_streams(void **state)
{
    const int per_graph = 24, replays = quick ? 5 : 200;
    psc_cuda_t *cu = &g_ctx->cu;
    CUgraph graph[MAXR];
    CUgraphExec exec[MAXR];
    psc_allreduce_t *ar = NULL;
    uint64_t elems = 0;
    uint32_t x = 2468;

    (void)state;
    if (!cu->p_cuStreamBeginCapture || !cu->p_cuGraphInstantiateWithFlags)
        skip();
    res_reset();
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, BIG, &ar), PSC_OK);
    for (int i = 0; i < n; i++) {
        use(i);
        assert_int_equal(cu->p_cuStreamBeginCapture(sa[i], CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
    }
    for (int k = 0; k < per_graph; k++) {
        call_t c = pick((uint64_t)k, &x);

        c.in_place = 0; /* the graph replays it: the input must stay */
        if (k > 0)
            order_after(k % 2 ? sb : sa, k % 2 ? sa : sb, k % 2 ? ev_a : ev_b);
        elems += c.count;
        run_call(ar, &c, k % 2 ? sb : sa, (uint64_t)k);
    }
    if (per_graph % 2 == 0) /* the last call was on B: join it back into A, where the capture ends */
        order_after(sa, sb, ev_b);
    for (int i = 0; i < n; i++) { /* every capture ended before any graph is instantiated (the driver's rule) */
        use(i);
        assert_int_equal(cu->p_cuStreamEndCapture(sa[i], &graph[i]), CUDA_SUCCESS);
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(cu->p_cuGraphInstantiateWithFlags(&exec[i], graph[i], 0), CUDA_SUCCESS);
    for (int l = 0; l < replays; l++)
        for (int i = 0; i < n; i++) {
            use(i);
            assert_int_equal(cu->p_cuGraphLaunch(exec[i], sa[i]), CUDA_SUCCESS);
        }
    sync_all();
    assert_true(res_expect_clean("graph replays on two streams") == elems * (uint64_t)n * (uint64_t)replays);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    for (int i = 0; i < n; i++) {
        cu->p_cuGraphExecDestroy(exec[i]);
        cu->p_cuGraphDestroy(graph[i]);
    }
    psc_allreduce_destroy(ar);
}

/* ---- a timeout on purpose */

static void poison_outputs(size_t bytes)
{
    unsigned char *p = malloc(bytes);

    assert_non_null(p);
    memset(p, 0xA5, bytes);
    for (int i = 0; i < n; i++) {
        use(i);
        assert_int_equal(g_ctx->cu.p_cuMemcpyHtoD(outb[i][0], p, bytes), CUDA_SUCCESS);
        assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(NULL), CUDA_SUCCESS); /* a pageable copy: staged only */
    }
    free(p);
}

static void expect_poisoned(int ranks, size_t bytes, const char *when)
{
    unsigned char *p = malloc(bytes);

    assert_non_null(p);
    for (int i = 0; i < ranks; i++) {
        use(i);
        assert_int_equal(g_ctx->cu.p_cuMemcpyDtoH(p, outb[i][0], bytes), CUDA_SUCCESS);
        for (size_t b = 0; b < bytes; b++)
            if (p[b] != 0xA5)
                fail_msg("%s: rank %d's output byte %zu was written", when, i, b);
    }
    free(p);
}

/*
 * The last rank's stream held by a kernel spinning on host-mapped memory while the others wait with a 300 ms
 * timeout: they give up (no sooner), the check names rank 0 waiting for the last rank in call 1, a later call
 * writes nothing and ends, the group is destroyed and a new one works.
 */
static void test_timeout_on_purpose(void **state)
{
    const unsigned timeout_ms = 300;
    const int held = n - 1;
    const size_t count = 5000;
    psc_cuda_t *cu = &g_ctx->cu;
    psc_allreduce_t *ar = NULL;
    volatile unsigned *hold = NULL;
    unsigned timed_out = 0;
    CUdeviceptr hold_dev = 0, timed_dev = 0;
    uint64_t safety_ns = 60000000000ull;
    void *r[MAXR];
    const void *in[MAXR];
    char want[160];
    double t0, gave_up;
    call_t c;

    (void)state;
    if (n < 2) {
        printf("allreduce stress: the timeout on purpose needs 2+ GPUs (one rank cannot wait for another): skipped\n");
        skip();
    }
    use(held);
    assert_int_equal(cu->p_cuMemHostAlloc((void **)&hold, 8, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
                     CUDA_SUCCESS);
    hold[0] = hold[1] = 0;
    assert_int_equal(cu->p_cuMemHostGetDevicePointer(&hold_dev, (void *)hold, 0), CUDA_SUCCESS);
    timed_dev = hold_dev + 4;
    poison_outputs(count * 4);
    memset(&c, 0, sizeof(c));
    for (int i = 0; i < n; i++) {
        r[i] = (void *)(uintptr_t)outb[i][0];
        in[i] = (const void *)(uintptr_t)small_in[i]; /* slot 0: fp32 */
    }
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, BIG, &ar), PSC_OK);
    {
        void *params[] = {&hold_dev, &safety_ns, &timed_dev};

        launch(held, sa[held], fn_hold[held], 1, 1, params);
    }
    t0 = now_s();
    assert_int_equal(psc_allreduce_sum(ar, r, in, count, PSC_AR_FLOAT32, sa, timeout_ms), PSC_OK);
    for (int i = 0; i < held; i++) /* the waiting ranks end by giving up, while the last is still held */
        assert_int_equal(cu->p_cuStreamSynchronize(sa[i]), CUDA_SUCCESS);
    gave_up = now_s() - t0;
    __atomic_store_n(&hold[0], 1u, __ATOMIC_RELEASE);
    assert_int_equal(cu->p_cuStreamSynchronize(sa[held]), CUDA_SUCCESS);
    timed_out = hold[1];
    assert_int_equal(timed_out, 0u); /* released by the host, not by its safety net */
    assert_true(gave_up * 1e3 >= timeout_ms);
    expect_poisoned(held, count * 4, "after the abandoned call");
    assert_int_equal(psc_allreduce_check(ar), PSC_ERR_TIMEOUT);
    snprintf(want, sizeof(want), "rank 0 (GPU %d) gave up waiting for rank %d's data in call 1", devs[0], held);
    if (!strstr(psc_context_last_error(g_ctx), want))
        fail_msg("the timeout's report lacks '%s': %s", want, psc_context_last_error(g_ctx));
    printf("allreduce stress: the waiting ranks gave up after %.0f ms (timeout %u ms): %s\n", gave_up * 1e3,
           timeout_ms, psc_context_last_error(g_ctx));

    /* a later call: enqueued or refused, it writes nothing and every stream ends; the first report stays */
    {
        psc_status_t st = psc_allreduce_sum(ar, r, in, count / 2, PSC_AR_FLOAT32, sa, timeout_ms);

        assert_true(st == PSC_OK || st == PSC_ERR_TIMEOUT);
    }
    sync_all();
    expect_poisoned(held, count * 4, "after a later call");
    assert_int_equal(psc_allreduce_check(ar), PSC_ERR_TIMEOUT);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "in call 1"));
    psc_allreduce_destroy(ar);
    use(held);
    assert_int_equal(cu->p_cuMemFreeHost((void *)hold), CUDA_SUCCESS);

    /* a new group over the same GPUs is unharmed */
    ar = NULL;
    res_reset();
    assert_int_equal(psc_allreduce_create(g_ctx, devs, n, BIG, &ar), PSC_OK);
    c.dt = PSC_AR_FLOAT32;
    c.count = count;
    c.seed = 0;
    for (int i = 0; i < n; i++)
        c.in[i] = small_in[i];
    run_call(ar, &c, sa, 0);
    sync_all();
    assert_true(res_expect_clean("a new group after the timeout") == count * (uint64_t)n);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_million_calls),
    cmocka_unit_test(test_busy_gpu),
    cmocka_unit_test(test_two_streams),
    cmocka_unit_test(test_graph_two_streams),
    cmocka_unit_test(test_timeout_on_purpose),
};

PSC_GPU_TEST_MAIN_SETUP(tests, setup)
