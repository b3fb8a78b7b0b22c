/*
 * psc_allreduce_* under pressure on the fake driver (its one-shot kernel runs
 * the protocol on the CPU, one thread per rank): hundreds of back-to-back
 * calls of mixed sizes and types with no host synchronisation between them
 * (and calls that cross the 8 MiB pieces), calls alternating between two
 * streams per rank ordered by events, a rank made late by a long job on its
 * stream before its calls, every call's output apart and checked at the end:
 * the documented sum (rank order, fp32, one rounding) bit for bit on every
 * rank. And an abandoned call: a rank's stream held until the others have
 * given up, the timeout reported with the ranks named, later calls doing
 * nothing, the group destroyed and a new one working.
 *
 * The inputs are inexact on purpose (random mantissas and exponents), so the
 * order of the additions shows in the results: equal outputs on every rank
 * mean the same additions in the same order, not merely exact arithmetic.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "allreduce/allreduce.h"
#include "allreduce/ar_args.h"
#include "fake_context.h"
#include "internal.h"

#define N 3
#define BUF (6u << 20)  /* per rank: the inputs, and the outputs, of one batch of calls */
#define GUARD 16        /* poisoned bytes after each call's output */
#define POISON 0xA5

static const int devs[N] = {0, 1, 2};
static CUstream sa[N], sb[N], side[N];
static CUevent ev_a[N], ev_b[N];
static CUdeviceptr inb[N], outb[N];

static int (*jobs_live)(void);

static int setup(void **state)
{
    if (psc_test_open_fake_gpus(state, "3") != 0)
        return -1;
    *(void **)&jobs_live = psc_test_fake_sym("fake_cuda_jobs_live");
    for (int i = 0; i < N; i++)
        if (psc__gpu_use(g_ctx, i) != PSC_OK || g_ctx->cu.p_cuStreamCreate(&sa[i], CU_STREAM_NON_BLOCKING) ||
            g_ctx->cu.p_cuStreamCreate(&sb[i], CU_STREAM_NON_BLOCKING) ||
            g_ctx->cu.p_cuStreamCreate(&side[i], CU_STREAM_NON_BLOCKING) ||
            g_ctx->cu.p_cuEventCreate(&ev_a[i], CU_EVENT_DISABLE_TIMING) ||
            g_ctx->cu.p_cuEventCreate(&ev_b[i], CU_EVENT_DISABLE_TIMING) ||
            g_ctx->cu.p_cuMemAlloc(&inb[i], BUF) || g_ctx->cu.p_cuMemAlloc(&outb[i], BUF))
            return -1;
    return jobs_live ? 0 : -1;
}

static void sync_streams(const CUstream *s, int nr)
{
    for (int i = 0; i < nr; i++)
        assert_int_equal(g_ctx->cu.p_cuStreamSynchronize(s[i]), CUDA_SUCCESS);
}

static void sync_all(void)
{
    sync_streams(sa, N);
    sync_streams(sb, N);
    sync_streams(side, N);
}

/* ---- the inputs and the documented sum, computed here apart from the fake */

static size_t esize(int dt)
{
    return dt == PSC_AR_FLOAT32 ? 4 : 2;
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Rank r's element j of a call with this seed: finite, either sign, mantissa random, exponents over a range. */
static uint32_t in_bits(int dt, uint32_t seed, int r, size_t j)
{
    uint64_t h = mix(((uint64_t)seed << 40) ^ ((uint64_t)r << 32) ^ (uint64_t)j);
    uint32_t sign = (uint32_t)(h & 1);

    if (dt == PSC_AR_FLOAT32)
        return sign << 31 | (uint32_t)(110 + (h >> 1) % 30) << 23 | ((uint32_t)(h >> 16) & 0x7fffffu);
    if (dt == PSC_AR_BFLOAT16)
        return sign << 15 | (uint32_t)(110 + (h >> 1) % 30) << 7 | ((uint32_t)(h >> 16) & 0x7fu);
    return sign << 15 | (uint32_t)(2 + (h >> 1) % 22) << 10 | ((uint32_t)(h >> 16) & 0x3ffu); /* fp16 */
}

static float f32_of(uint32_t b)
{
    float f;

    memcpy(&f, &b, 4);
    return f;
}

static float val(int dt, uint32_t b)
{
    uint32_t e = (b >> 10) & 31, m = b & 1023, s = (b & 0x8000u) << 16;

    if (dt == PSC_AR_FLOAT32)
        return f32_of(b);
    if (dt == PSC_AR_BFLOAT16)
        return f32_of(b << 16);
    if (e == 0) /* subnormal fp16: m x 2^-24, exact in fp32 */
        return s ? -(float)m / 16777216.0f : (float)m / 16777216.0f;
    return f32_of(s | (e - 15 + 127) << 23 | m << 13);
}

/* fp32 to fp16, round to nearest even (finite inputs). */
static uint32_t f16_rne(float f)
{
    uint32_t x, a, sign;

    memcpy(&x, &f, 4);
    sign = (x >> 16) & 0x8000u;
    a = x & 0x7fffffffu;
    if (a >= 0x477ff000u) /* 65520 and up: infinity */
        return sign | 0x7c00u;
    if (a < 0x38800000u) { /* below 2^-14: a multiple of 2^-24 */
        float s = f32_of(a) * 16777216.0f, rem;
        uint32_t q = (uint32_t)s;

        rem = s - (float)q;
        q += rem > 0.5f || (rem == 0.5f && (q & 1));
        return sign | q;
    }
    {
        uint32_t h = ((a >> 23) - 127 + 15) << 10 | (a & 0x7fffffu) >> 13, rest = a & 0x1fffu;

        h += rest > 0x1000u || (rest == 0x1000u && (h & 1));
        return sign | h;
    }
}

/* The sum the API documents: rank order, fp32, one rounding to the type at the end. */
static uint32_t want_bits(int dt, uint32_t seed, int nr, size_t j)
{
    float acc = val(dt, in_bits(dt, seed, 0, j));
    uint32_t b;

    for (int r = 1; r < nr; r++)
        acc = acc + val(dt, in_bits(dt, seed, r, j));
    memcpy(&b, &acc, 4);
    if (dt == PSC_AR_FLOAT32)
        return b;
    if (dt == PSC_AR_BFLOAT16)
        return (b + 0x7fffu + ((b >> 16) & 1)) >> 16;
    return f16_rne(acc);
}

/* ---- a batch of calls, each with its own output region (so none needs a host sync before the next) */

typedef struct {
    int dt;
    size_t count;
    uint32_t seed;
    size_t off;   /* of its input and output in each rank's inb/outb (16-byte aligned) */
    int in_place; /* the input is written where the output goes */
} call_t;

/* Lay out calls one after another with a guard after each; 0 when they do not fit BUF. */
static int layout(call_t *c, int ncalls)
{
    size_t off = 0;

    for (int k = 0; k < ncalls; k++) {
        c[k].off = off;
        off += (c[k].count * esize(c[k].dt) + 15) / 16 * 16 + GUARD;
    }
    return off <= BUF;
}

static void put_inputs(const call_t *c, int ncalls, int nr)
{
    for (int r = 0; r < nr; r++) {
        memset((void *)(uintptr_t)outb[r], POISON, BUF);
        for (int k = 0; k < ncalls; k++) {
            unsigned char *p = (unsigned char *)(uintptr_t)(c[k].in_place ? outb[r] : inb[r]) + c[k].off;

            for (size_t j = 0; j < c[k].count; j++) {
                uint32_t b = in_bits(c[k].dt, c[k].seed, r, j);

                memcpy(p + j * esize(c[k].dt), &b, esize(c[k].dt)); /* little endian, as the GPU */
            }
        }
    }
}

static psc_status_t launch(psc_allreduce_t *ar, const call_t *c, const CUstream *s, int nr, unsigned timeout_ms)
{
    void *r[N];
    const void *in[N];

    for (int i = 0; i < nr; i++) {
        r[i] = (void *)(uintptr_t)(outb[i] + c->off);
        in[i] = (const void *)(uintptr_t)((c->in_place ? outb[i] : inb[i]) + c->off);
    }
    return psc_allreduce_sum(ar, r, in, c->count, c->dt, s, timeout_ms);
}

static void call(psc_allreduce_t *ar, const call_t *c, const CUstream *s, int nr)
{
    if (launch(ar, c, s, nr, 10000) != PSC_OK)
        fail_msg("psc_allreduce_sum (type %d, %zu elements): %s", c->dt, c->count, psc_context_last_error(g_ctx));
}

/* Every call's output on every rank: the documented sum bit for bit, rank 0's bytes, and its guard untouched. */
static void expect_calls(const call_t *c, int ncalls, int nr)
{
    for (int k = 0; k < ncalls; k++) {
        const size_t es = esize(c[k].dt), bytes = c[k].count * es;
        const unsigned char *p0 = (const unsigned char *)(uintptr_t)outb[0] + c[k].off;

        for (int r = 0; r < nr; r++) {
            const unsigned char *p = (const unsigned char *)(uintptr_t)outb[r] + c[k].off;

            for (size_t j = 0; j < c[k].count; j++) {
                uint32_t got = 0, want = want_bits(c[k].dt, c[k].seed, nr, j);

                memcpy(&got, p + j * es, es);
                if (got != want)
                    fail_msg("call %d (type %d, %zu elements%s) rank %d element %zu: 0x%x, expected 0x%x", k,
                             c[k].dt, c[k].count, c[k].in_place ? ", in place" : "", r, j, got, want);
            }
            if (memcmp(p, p0, bytes) != 0)
                fail_msg("call %d: rank %d's output differs from rank 0's", k, r);
            for (size_t g = bytes; g < (bytes + 15) / 16 * 16 + GUARD; g++)
                if (p[g] != POISON)
                    fail_msg("call %d rank %d: byte %zu past the output's %zu was written (0x%x)", k, r, g, bytes,
                             p[g]);
        }
    }
}

static const int types[3] = {PSC_AR_FLOAT32, PSC_AR_FLOAT16, PSC_AR_BFLOAT16};

/* Mixed calls: mostly small, every 8th up to max_bytes, sizes with tails, every type, every 5th in place. */
static void mixed_calls(call_t *c, int ncalls, size_t max_bytes, uint32_t x)
{
    for (int k = 0; k < ncalls; k++) {
        size_t most;

        x = x * 1103515245u + 12345u;
        c[k].dt = types[(x >> 4) % 3];
        most = (k % 8 == 7 ? max_bytes : 2048) / esize(c[k].dt);
        x = x * 1103515245u + 12345u;
        c[k].count = 1 + (x >> 8) % most;
        c[k].seed = x ^ (uint32_t)k;
        c[k].in_place = k % 5 == 4;
    }
}

/* ---- back to back, no host synchronisation between the calls */

static void test_back_to_back(void **state)
{
    enum { CALLS = 400 };
    static call_t c[CALLS];
    psc_allreduce_t *ar = NULL;

    (void)state;
    mixed_calls(c, CALLS, 32768, 2024);
    assert_true(layout(c, CALLS));
    put_inputs(c, CALLS, N);
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, 32768, &ar), PSC_OK);
    for (int k = 0; k < CALLS; k++)
        call(ar, &c[k], sa, N);
    sync_all();
    expect_calls(c, CALLS, N);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/*
 * A group of more than 8 MiB per call: calls just under, at and over 8 MiB (the slot size, where larger
 * calls go in pieces) between small ones, back to back. Two ranks keep the fake's memory moderate.
 */
static void test_back_to_back_over_8mib(void **state)
{
    const size_t mib8 = 8u << 20, maxb = mib8 + (40u << 10);
    call_t c[] = {
        {PSC_AR_FLOAT32, maxb / 4, 11, 0, 0},
        {PSC_AR_BFLOAT16, 3, 12, 0, 0},
        {PSC_AR_FLOAT32, (mib8 - 16) / 4, 13, 0, 1},
        {PSC_AR_FLOAT16, 1000, 14, 0, 0},
        {PSC_AR_BFLOAT16, (mib8 + 16) / 2, 15, 0, 1},
        {PSC_AR_FLOAT32, mib8 / 4, 16, 0, 1},
        {PSC_AR_FLOAT32, 5, 17, 0, 0},
        {PSC_AR_FLOAT16, (mib8 + 4096 + 2) / 2, 18, 0, 1},
        {PSC_AR_FLOAT32, 77, 19, 0, 0},
    };
    const int ncalls = (int)(sizeof(c) / sizeof(c[0]));
    static const int pair[] = {0, 1};
    CUdeviceptr keep_in[2] = {inb[0], inb[1]}, keep_out[2] = {outb[0], outb[1]};
    size_t total = 0;
    psc_allreduce_t *ar = NULL;

    (void)state;
    for (int k = 0; k < ncalls; k++) {
        c[k].off = total;
        total += (c[k].count * esize(c[k].dt) + 15) / 16 * 16 + GUARD;
    }
    /* this batch's own buffers: larger than BUF */
    for (int r = 0; r < 2; r++) {
        assert_int_equal(psc__gpu_use(g_ctx, r), PSC_OK);
        assert_int_equal(g_ctx->cu.p_cuMemAlloc(&inb[r], total), CUDA_SUCCESS);
        assert_int_equal(g_ctx->cu.p_cuMemAlloc(&outb[r], total), CUDA_SUCCESS);
        memset((void *)(uintptr_t)outb[r], POISON, total);
    }
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < ncalls; k++) {
            unsigned char *p = (unsigned char *)(uintptr_t)(c[k].in_place ? outb[r] : inb[r]) + c[k].off;

            for (size_t j = 0; j < c[k].count; j++) {
                uint32_t b = in_bits(c[k].dt, c[k].seed, r, j);

                memcpy(p + j * esize(c[k].dt), &b, esize(c[k].dt));
            }
        }
    assert_int_equal(psc_allreduce_create(g_ctx, pair, 2, maxb, &ar), PSC_OK);
    for (int k = 0; k < ncalls; k++)
        call(ar, &c[k], sa, 2);
    sync_streams(sa, 2);
    expect_calls(c, ncalls, 2);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(psc__gpu_use(g_ctx, r), PSC_OK);
        assert_int_equal(g_ctx->cu.p_cuMemFree(inb[r]), CUDA_SUCCESS);
        assert_int_equal(g_ctx->cu.p_cuMemFree(outb[r]), CUDA_SUCCESS);
        inb[r] = keep_in[r];
        outb[r] = keep_out[r];
    }
}

/* ---- two streams per rank, alternating, each call ordered after the last by an event (the API's rule) */

static void test_two_streams_alternating(void **state)
{
    enum { CALLS = 300 };
    static call_t c[CALLS];
    psc_allreduce_t *ar = NULL;

    (void)state;
    mixed_calls(c, CALLS, 16384, 77);
    assert_true(layout(c, CALLS));
    put_inputs(c, CALLS, N);
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, 16384, &ar), PSC_OK);
    for (int k = 0; k < CALLS; k++) {
        const CUstream *on = k % 2 ? sb : sa, *last = k % 2 ? sa : sb;
        CUevent *ev = k % 2 ? ev_a : ev_b;

        for (int i = 0; k > 0 && i < N; i++) {
            assert_int_equal(psc__gpu_use(g_ctx, i), PSC_OK);
            assert_int_equal(g_ctx->cu.p_cuEventRecord(ev[i], last[i]), CUDA_SUCCESS);
            assert_int_equal(g_ctx->cu.p_cuStreamWaitEvent(on[i], ev[i], 0), CUDA_SUCCESS);
        }
        call(ar, &c[k], on, N);
    }
    sync_all();
    expect_calls(c, CALLS, N);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* ---- GPUs at different speeds */

/*
 * A long job on the last rank's stream before most calls: the fake's flag pong, answering `iters` round trips
 * of a ping job on GPU 0's side stream. The host is not held: the other ranks' calls start and wait while the
 * last rank's stream is busy, so that rank comes late. Fresh flag words per call; one ping at a time (each
 * launch on the side stream waits for the last), so they share the timing words.
 */
static unsigned slow_flag[200], slow_ans[200], slow_err[200];
static uint64_t ping_cycles[512], ping_cal[2];

static void delay_last_rank(int k, unsigned iters)
{
    uint64_t timeout = 20000000000ull;
    CUdeviceptr f = (CUdeviceptr)(uintptr_t)&slow_flag[k], a = (CUdeviceptr)(uintptr_t)&slow_ans[k],
                e = (CUdeviceptr)(uintptr_t)&slow_err[k], cy = (CUdeviceptr)(uintptr_t)ping_cycles,
                ca = (CUdeviceptr)(uintptr_t)ping_cal;
    void *ping[] = {&f, &a, &iters, &cy, &ca, &timeout, &e};
    void *pong[] = {&f, &a, &iters, &timeout, &e};

    assert_true(iters <= 512 && k < 200);
    assert_int_equal(psc__gpu_use(g_ctx, 0), PSC_OK);
    assert_int_equal(psc__launch_on(g_ctx, side[0], g_ctx->gpu[0].fn_ping, 1, 1, ping), PSC_OK);
    assert_int_equal(psc__gpu_use(g_ctx, N - 1), PSC_OK);
    assert_int_equal(psc__launch_on(g_ctx, sa[N - 1], g_ctx->gpu[N - 1].fn_pong, 1, 1, pong), PSC_OK);
}

static void test_uneven_speeds(void **state)
{
    enum { CALLS = 120 };
    static call_t c[CALLS];
    psc_allreduce_t *ar = NULL;

    (void)state;
    memset(slow_flag, 0, sizeof(slow_flag));
    memset(slow_ans, 0, sizeof(slow_ans));
    memset(slow_err, 0, sizeof(slow_err));
    mixed_calls(c, CALLS, 16384, 4242);
    assert_true(layout(c, CALLS));
    put_inputs(c, CALLS, N);
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, 16384, &ar), PSC_OK);
    for (int k = 0; k < CALLS; k++) {
        if (k % 4 != 3)
            delay_last_rank(k, 20 + (unsigned)(k * 37 % 300));
        call(ar, &c[k], sa, N);
    }
    sync_all();
    for (int k = 0; k < CALLS; k++)
        assert_int_equal(slow_err[k], 0); /* each delay ran its round trips, none timed out */
    expect_calls(c, CALLS, N);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

/* ---- an abandoned call: a rank's stream held until the others have given up */

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/*
 * The releaser: waits until the first ranks have recorded that they gave up (their control words, which the
 * fake's kernel writes as the GPU's would) and their calls have ended, notes when, then lets the last rank go.
 */
typedef struct {
    psc_allreduce_t *ar;
    unsigned *hold;
    double ended_ms;
    int ok;
} releaser_t;

static void *release_after_give_up(void *arg)
{
    releaser_t *r = arg;
    double start = now_ms();

    r->ok = 1;
    for (int i = 0; i < N - 1 && r->ok; i++) {
        uint64_t lbuf, ctrl, slot;

        r->ok = psc__allreduce_buffers(r->ar, i, &lbuf, &ctrl, &slot) == PSC_OK;
        while (r->ok && !__atomic_load_n(&((psc_ar_ctrl_t *)(uintptr_t)ctrl)->err, __ATOMIC_ACQUIRE))
            if (now_ms() - start > 60000) /* a bound, not a schedule: the kernel never gave up */
                r->ok = 0;
            else
                sched_yield();
        r->ok = r->ok && g_ctx->cu.p_cuStreamSynchronize(sa[i]) == CUDA_SUCCESS;
    }
    r->ended_ms = now_ms();
    __atomic_store_n(r->hold, 1u, __ATOMIC_RELEASE);
    return NULL;
}

static void expect_poison(int nr, size_t bytes, const char *when)
{
    for (int r = 0; r < nr; r++)
        for (size_t b = 0; b < bytes; b++)
            if (((const unsigned char *)(uintptr_t)outb[r])[b] != POISON)
                fail_msg("%s: rank %d's output byte %zu was written", when, r, b);
}

/*
 * The last rank's stream is held (the fake's flag pong waiting for a word only a thread of this test writes,
 * once the other ranks' calls have ended) while the others wait with a 100 ms timeout: they give up, the check
 * names the waiting rank and the rank it waited for, a later call does nothing and ends, the group is destroyed
 * and a new group over the same GPUs works.
 */
static void test_timeout_held_rank(void **state)
{
    const unsigned timeout_ms = 100;
    unsigned iters = 1;
    static unsigned hold, answer, hold_err;
    uint64_t pong_timeout = 30000000000ull; /* a safety net only: the test releases it */
    CUdeviceptr f = (CUdeviceptr)(uintptr_t)&hold, a = (CUdeviceptr)(uintptr_t)&answer,
                e = (CUdeviceptr)(uintptr_t)&hold_err;
    void *pong[] = {&f, &a, &iters, &pong_timeout, &e};
    call_t c[2] = {{PSC_AR_FLOAT32, 1000, 5, 0, 0}, {PSC_AR_BFLOAT16, 600, 6, 0, 0}};
    releaser_t rel = {NULL, &hold, 0, 0};
    psc_allreduce_t *ar = NULL;
    pthread_t tid;
    psc_status_t st;
    double t0;

    (void)state;
    hold = answer = hold_err = 0;
    c[1].off = 0; /* both calls aim at the same output: neither may write it */
    put_inputs(c, 2, N);
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, 4096, &ar), PSC_OK);
    rel.ar = ar;
    assert_int_equal(psc__gpu_use(g_ctx, N - 1), PSC_OK);
    assert_int_equal(psc__launch_on(g_ctx, sa[N - 1], g_ctx->gpu[N - 1].fn_pong, 1, 1, pong), PSC_OK);
    assert_int_equal(pthread_create(&tid, NULL, release_after_give_up, &rel), 0);
    t0 = now_ms();
    /* the fake enqueues by running: its launch on the held stream returns once the releaser let the pong go */
    st = launch(ar, &c[0], sa, N, timeout_ms);
    assert_int_equal(pthread_join(tid, NULL), 0);
    if (st != PSC_OK)
        fail_msg("the call before the timeout: %s", psc_context_last_error(g_ctx));
    assert_true(rel.ok);
    assert_true(rel.ended_ms - t0 >= timeout_ms); /* they waited the whole timeout, no less */
    assert_int_equal(answer, 1u);                 /* the pong was released, not timed out */
    assert_int_equal(hold_err, 0u);
    sync_all();
    expect_poison(N - 1, c[0].count * 4, "after the abandoned call");

    st = psc_allreduce_check(ar);
    if (st != PSC_ERR_TIMEOUT)
        fail_msg("check after the abandoned call: %d (%s), expected PSC_ERR_TIMEOUT", st, psc_context_last_error(g_ctx));
    if (!strstr(psc_context_last_error(g_ctx), "rank 0 (GPU 0) gave up waiting for rank 2's data in call 1"))
        fail_msg("the timeout's report lacks the ranks and the call: %s", psc_context_last_error(g_ctx));
    for (int r = 0; r < N - 1; r++) { /* every waiting rank gave up on the held one, in the first call */
        uint64_t lbuf, ctrl, slot;
        const psc_ar_ctrl_t *w;

        assert_int_equal(psc__allreduce_buffers(ar, r, &lbuf, &ctrl, &slot), PSC_OK);
        w = (const psc_ar_ctrl_t *)(uintptr_t)ctrl;
        assert_int_equal(w->err, PSC_AR_ERR_TIMEOUT);
        assert_int_equal(w->err_rank, N - 1);
        assert_int_equal(w->err_seq, 0);
    }

    /* a later call: enqueued or refused, it writes nothing, ends (every stream synchronises) and the report stays */
    t0 = now_ms();
    st = launch(ar, &c[1], sa, N, timeout_ms);
    assert_true(st == PSC_OK || st == PSC_ERR_TIMEOUT);
    sync_all();
    expect_poison(N - 1, c[1].count * 2, "after a later call");
    st = psc_allreduce_check(ar);
    assert_int_equal(st, PSC_ERR_TIMEOUT);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "in call 1"));
    assert_int_equal(jobs_live(), 0);
    psc_allreduce_destroy(ar);

    /* a new group over the same GPUs is unharmed */
    ar = NULL;
    c[0].seed = 7;
    put_inputs(c, 1, N);
    assert_int_equal(psc_allreduce_create(g_ctx, devs, N, 4096, &ar), PSC_OK);
    call(ar, &c[0], sa, N);
    sync_all();
    expect_calls(c, 1, N);
    assert_int_equal(psc_allreduce_check(ar), PSC_OK);
    psc_allreduce_destroy(ar);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_back_to_back),
        cmocka_unit_test(test_back_to_back_over_8mib),
        cmocka_unit_test(test_two_streams_alternating),
        cmocka_unit_test(test_uneven_speeds),
        cmocka_unit_test(test_timeout_held_rank),
    };

    return cmocka_run_group_tests(tests, setup, psc_test_close_ctx);
}
