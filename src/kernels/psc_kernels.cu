/*
 * Device code of p2pscope: the gate that holds a stream until the host has
 * queued all timed work, the data patterns' one fill and check kernel family
 * (and its corruption hook), the copy kernels and the latency kernels.
 * C-style, extern "C" names, loaded by the host with cuModuleLoadData.
 */
#include <stdint.h>

#include "pattern/pattern.h"
#include "coll/coll_values.h" /* after pattern.h: it takes PSC_HD over */

typedef unsigned long long u64;

static __device__ __forceinline__ u64 psc_globaltimer(void)
{
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Spin until the host writes *release != 0, or give up after timeout_ns. */
extern "C" __global__ void psc_gate(const volatile unsigned int *release, unsigned int *timed_out,
                                    u64 timeout_ns)
{
    u64 start = psc_globaltimer();

    while (*release == 0) {
        if (psc_globaltimer() - start > timeout_ns) {
            *timed_out = 1;
            return;
        }
        __nanosleep(64);
    }
}

/*
 * The fill and check family: every data pattern, source, poisoned or
 * prepared destination is an expectation (pattern/pattern.h) over a whole
 * buffer; these kernels write or compare exactly psc_expect_word's bytes.
 * 16-byte accesses (buffers are whole allocations, 16-byte aligned); the
 * bytes past the last whole 16 by thread 0.
 */
extern "C" __global__ void psc_pattern_fill(unsigned char *p, u64 n, psc_expect_t e)
{
    const u64 chunks = n / 16;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;

    for (; i < chunks; i += stride) {
        uint4 v;
        u64 a = psc_expect_word(&e, 16 * i), b = psc_expect_word(&e, 16 * i + 8);
        v.x = (unsigned)a;
        v.y = (unsigned)(a >> 32);
        v.z = (unsigned)b;
        v.w = (unsigned)(b >> 32);
        reinterpret_cast<uint4 *>(p)[i] = v;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0)
        for (u64 o = chunks * 16; o < n; o++)
            p[o] = psc_expect_byte(&e, o);
}

struct psc_verify_words {
    u64 bad_bytes;
    u64 first_bad;
};

/* The device side of the bad-byte fold: count the differing bytes of a word (at byte offset off), note the first. */
static __device__ __forceinline__ void psc_note_bad(psc_verify_words *out, u64 got, u64 want, u64 off)
{
    u64 diff = got ^ want;
    unsigned cnt = 0, first = 8;

    for (unsigned b = 0; b < 8; b++) {
        if ((diff >> (8 * b)) & 0xff) {
            cnt++;
            if (first == 8)
                first = b;
        }
    }
    atomicAdd(&out->bad_bytes, (u64)cnt);
    atomicMin(&out->first_bad, off + first);
}

/* Compare n bytes at p with the expectation; two 16-byte loads in flight per thread. */
extern "C" __global__ void psc_pattern_check(const unsigned char *p, u64 n, psc_expect_t e, psc_verify_words *out)
{
    const u64 chunks = n / 16;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const uint4 *q = reinterpret_cast<const uint4 *>(p);
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;

    for (; i < chunks; i += 2 * stride) {
        uint4 v[2];
        u64 idx[2] = {i, i + stride};

        /* unrolled, so v and idx stay in registers */
#pragma unroll
        for (int k = 0; k < 2; k++)
            if (idx[k] < chunks)
                v[k] = q[idx[k]];
#pragma unroll
        for (int k = 0; k < 2; k++) {
            if (idx[k] >= chunks)
                continue;
            u64 lo = ((u64)v[k].y << 32) | v[k].x, hi = ((u64)v[k].w << 32) | v[k].z;
            u64 wlo = psc_expect_word(&e, 16 * idx[k]), whi = psc_expect_word(&e, 16 * idx[k] + 8);
            if (lo != wlo)
                psc_note_bad(out, lo, wlo, idx[k] * 16);
            if (hi != whi)
                psc_note_bad(out, hi, whi, idx[k] * 16 + 8);
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        for (u64 o = chunks * 16; o < n; o++) {
            if (p[o] != psc_expect_byte(&e, o)) {
                atomicAdd(&out->bad_bytes, 1ull);
                atomicMin(&out->first_bad, o);
            }
        }
    }
}

/* Test hook: corrupt one byte so the checks can be shown to catch it. */
extern "C" __global__ void psc_pattern_flip(unsigned char *p, u64 offset)
{
    p[offset] ^= 0x5A;
}

/*
 * SM copy: 16-byte loads and stores, U of them in flight per thread before
 * the first store, grid-stride so any grid covers any size; the bytes past
 * the last whole 16 are copied by thread 0. Source and destination may be
 * local, peer (NVLink/PCIe) or mapped host memory. EVICT_FIRST stores with
 * st.global.cs (the "stream" layout, to try).
 */
template <int U, bool EVICT_FIRST>
static __device__ __forceinline__ void psc_copy_stride(uint4 *__restrict__ d, const uint4 *__restrict__ s, u64 n16)
{
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;

    for (; i + (U - 1) * stride < n16; i += U * stride) {
        uint4 v[U];
#pragma unroll
        for (int k = 0; k < U; k++)
            v[k] = s[i + k * stride];
#pragma unroll
        for (int k = 0; k < U; k++) {
            if (EVICT_FIRST)
                __stcs(&d[i + k * stride], v[k]);
            else
                d[i + k * stride] = v[k];
        }
    }
    for (; i < n16; i += stride) {
        if (EVICT_FIRST)
            __stcs(&d[i], s[i]);
        else
            d[i] = s[i];
    }
}

template <int U>
static __device__ __forceinline__ void psc_copy_body(uint4 *__restrict__ d, const uint4 *__restrict__ s, u64 n16)
{
    psc_copy_stride<U, false>(d, s, n16);
}

template <int U>
static __device__ __forceinline__ void psc_copy_stream_body(uint4 *__restrict__ d, const uint4 *__restrict__ s, u64 n16)
{
    psc_copy_stride<U, true>(d, s, n16);
}

/*
 * The "chunk" layout, to try against the grid-stride one: each block streams
 * through one contiguous part of the buffer, U x blockDim 16-byte words a
 * step, so a block's stores are contiguous.
 */
template <int U>
static __device__ __forceinline__ void psc_copy_chunk_body(uint4 *__restrict__ d, const uint4 *__restrict__ s, u64 n16)
{
    const u64 step = (u64)U * blockDim.x;
    const u64 per = ((n16 + step - 1) / step + gridDim.x - 1) / gridDim.x; /* steps per block */
    const u64 begin = (u64)blockIdx.x * per * step;
    const u64 end = begin + per * step < n16 ? begin + per * step : n16;

    for (u64 base = begin; base < end; base += step) {
        if (base + step <= end) {
            uint4 v[U];
#pragma unroll
            for (int k = 0; k < U; k++)
                v[k] = s[base + (u64)k * blockDim.x + threadIdx.x];
#pragma unroll
            for (int k = 0; k < U; k++)
                d[base + (u64)k * blockDim.x + threadIdx.x] = v[k];
        } else {
            for (u64 i = base + threadIdx.x; i < end; i += blockDim.x)
                d[i] = s[i];
        }
    }
}

/*
 * `reps` whole passes over the buffer in one launch: a sample's copies cost
 * one launch's ramp-up and drain instead of one per copy. The passes are
 * independent (same bytes), so no grid-wide barrier is needed between them.
 * The layout (P2PSCOPE_SM_COPY's fifth field) picks BODY.
 */
#define PSC_COPY_KERNEL(NAME, BODY, U)                                                                   \
    extern "C" __global__ void NAME(unsigned char *d, const unsigned char *s, u64 n, unsigned reps)       \
    {                                                                                                    \
        const u64 n16 = n / 16;                                                                          \
        for (unsigned r = 0; r < reps; r++) {                                                            \
            BODY<U>(reinterpret_cast<uint4 *>(d), reinterpret_cast<const uint4 *>(s), n16);              \
            if (blockIdx.x == 0 && threadIdx.x == 0)                                                     \
                for (u64 o = n16 * 16; o < n; o++)                                                       \
                    d[o] = s[o];                                                                         \
        }                                                                                                \
    }

PSC_COPY_KERNEL(psc_copy_u1, psc_copy_body, 1)
PSC_COPY_KERNEL(psc_copy_u2, psc_copy_body, 2)
PSC_COPY_KERNEL(psc_copy_u4, psc_copy_body, 4)
PSC_COPY_KERNEL(psc_copy_u8, psc_copy_body, 8)
PSC_COPY_KERNEL(psc_copy_chunk_u4, psc_copy_chunk_body, 4)
PSC_COPY_KERNEL(psc_copy_chunk_u8, psc_copy_chunk_body, 8)
PSC_COPY_KERNEL(psc_copy_stream_u4, psc_copy_stream_body, 4)
PSC_COPY_KERNEL(psc_copy_stream_u8, psc_copy_stream_body, 8)

/*
 * GPU -> GPU by Hopper's bulk copies (TMA, sm_90 and newer): each block's first thread moves 16 KiB chunks
 * global -> shared -> global with cp.async.bulk, two stages so the next chunk's load runs while this chunk's
 * store does; an mbarrier with its transaction count says when a load landed, a bulk group when a store has read
 * its stage. `reps` passes, chunks dealt to blocks round robin; the bytes past the last whole 16 by thread 0 of
 * block 0 with plain loads and stores. Built for every architecture; below sm_90 the body is empty (the host
 * never launches it there: such a case is waived).
 */
#define PSC_TMA_CHUNK 16384u

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
static __device__ __forceinline__ void psc_tma_wait(unsigned bar, unsigned parity)
{
    asm volatile("{\n\t.reg .pred p;\n\tPSC_TMA_WAIT:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra PSC_TMA_WAIT;\n\t}" ::"r"(bar), "r"(parity) : "memory");
}

/* Load chunk c (bytes long) of s into the stage at smem, its completion counted on the mbarrier bar. */
static __device__ __forceinline__ void psc_tma_load(unsigned smem, const unsigned char *s, unsigned bytes, unsigned bar)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(smem), "l"(s), "r"(bytes), "r"(bar) : "memory");
}

static __device__ __forceinline__ void psc_tma_store(unsigned char *d, unsigned smem, unsigned bytes)
{
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(d), "r"(smem), "r"(bytes)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
#endif

extern "C" __global__ void psc_copy_tma(unsigned char *d, const unsigned char *s, u64 n, unsigned reps)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    __shared__ __align__(128) unsigned char stage[2][PSC_TMA_CHUNK];
    __shared__ __align__(8) u64 bars[2];
    const u64 n16 = n / 16 * 16, nchunks = (n16 + PSC_TMA_CHUNK - 1) / PSC_TMA_CHUNK;
    const u64 mine = blockIdx.x < nchunks ? (nchunks - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    const u64 jobs = mine * reps;
    unsigned smem[2], bar[2], parity[2] = {0, 0};

    if (threadIdx.x == 0 && blockIdx.x == 0)
        for (unsigned r = 0; r < reps; r++)
            for (u64 o = n16; o < n; o++)
                d[o] = s[o];
    if (threadIdx.x != 0 || jobs == 0)
        return;
    for (int k = 0; k < 2; k++) {
        smem[k] = (unsigned)__cvta_generic_to_shared(stage[k]);
        bar[k] = (unsigned)__cvta_generic_to_shared(&bars[k]);
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar[k]) : "memory");
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    for (u64 j = 0; j < jobs; j++) {
        const int k = (int)(j & 1);
        const u64 c = blockIdx.x + (j % mine) * gridDim.x, off = c * PSC_TMA_CHUNK;
        const unsigned bytes = (unsigned)(n16 - off < PSC_TMA_CHUNK ? n16 - off : PSC_TMA_CHUNK);

        if (j == 0)
            psc_tma_load(smem[0], s + off, bytes, bar[0]);
        if (j + 1 < jobs) { /* the next chunk into the other stage, once the store that used it has read it */
            const u64 cn = blockIdx.x + ((j + 1) % mine) * gridDim.x, offn = cn * PSC_TMA_CHUNK;

            asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
            psc_tma_load(smem[k ^ 1], s + offn, (unsigned)(n16 - offn < PSC_TMA_CHUNK ? n16 - offn : PSC_TMA_CHUNK),
                         bar[k ^ 1]);
        }
        psc_tma_wait(bar[k], parity[k]);
        parity[k] ^= 1;
        psc_tma_store(d + off, smem[k], bytes);
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#endif
}

/*
 * Local bandwidth one way (nvbandwidth 0.10's read-only and write-only local SM tests): a kernel that only
 * loads a buffer, its sum written so nothing can be dropped, and one that only stores an expectation's words.
 */

/* The block's threads' acc summed, then added to *sum: one atomic per block. */
static __device__ __forceinline__ void psc_block_sum_add(u64 acc, u64 *sum)
{
    __shared__ u64 part[32];

    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x >= 32)
        return;
    acc = threadIdx.x < (blockDim.x + 31) / 32 ? part[threadIdx.x] : 0;
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (threadIdx.x == 0)
        atomicAdd(sum, acc);
}

static __device__ __forceinline__ u64 psc_u4_sum(uint4 v)
{
    return (((u64)v.y << 32) | v.x) + (((u64)v.w << 32) | v.z);
}

/*
 * Read only: `reps` passes over n bytes at s, 16-byte loads, four in flight per thread; the sum of its 8-byte
 * little-endian words (the bytes past the last whole 16 as a partial word, by thread 0), times reps, is added
 * to *sum (the caller zeroes it), which the host checks against the source pattern's psc_pattern_sum.
 */
extern "C" __global__ void psc_read_u4(const unsigned char *s, u64 n, unsigned reps, u64 *sum)
{
    const uint4 *q = reinterpret_cast<const uint4 *>(s);
    const u64 n16 = n / 16, stride = (u64)gridDim.x * blockDim.x;
    u64 acc = 0;

    for (unsigned r = 0; r < reps; r++) {
        u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;

        for (; i + 3 * stride < n16; i += 4 * stride) {
            uint4 v[4];
#pragma unroll
            for (int k = 0; k < 4; k++)
                v[k] = q[i + k * stride];
#pragma unroll
            for (int k = 0; k < 4; k++)
                acc += psc_u4_sum(v[k]);
        }
        for (; i < n16; i += stride)
            acc += psc_u4_sum(q[i]);
        if (blockIdx.x == 0 && threadIdx.x == 0)
            for (u64 o = n16 * 16; o < n; o++)
                acc += (u64)s[o] << (8 * (o & 7));
    }
    psc_block_sum_add(acc, sum);
}

/* What psc_read_u4 must find in one pass over a buffer filled as e says: the sum of e's words, into *sum. */
extern "C" __global__ void psc_pattern_sum(u64 n, psc_expect_t e, u64 *sum)
{
    const u64 n16 = n / 16, stride = (u64)gridDim.x * blockDim.x;
    u64 acc = 0;

    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride)
        acc += psc_expect_word(&e, 16 * i) + psc_expect_word(&e, 16 * i + 8);
    if (blockIdx.x == 0 && threadIdx.x == 0)
        for (u64 o = n16 * 16; o < n; o++)
            acc += (u64)psc_expect_byte(&e, o) << (8 * (o & 7));
    psc_block_sum_add(acc, sum);
}

/* Write only: `reps` passes of 16-byte stores of e's words over n bytes at d (the tail by thread 0); no loads. */
extern "C" __global__ void psc_write_u4(unsigned char *d, u64 n, unsigned reps, psc_expect_t e)
{
    const u64 n16 = n / 16, stride = (u64)gridDim.x * blockDim.x;

    for (unsigned r = 0; r < reps; r++) {
        for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride) {
            u64 a = psc_expect_word(&e, 16 * i), b = psc_expect_word(&e, 16 * i + 8);

            reinterpret_cast<uint4 *>(d)[i] = make_uint4((unsigned)a, (unsigned)(a >> 32), (unsigned)b,
                                                         (unsigned)(b >> 32));
        }
        if (blockIdx.x == 0 && threadIdx.x == 0)
            for (u64 o = n16 * 16; o < n; o++)
                d[o] = psc_expect_byte(&e, o);
    }
}

/*
 * Latency. Per-sample times are SM cycles (clock64), converted to ns with the
 * run's own calibration: the %globaltimer and clock64 deltas over the whole
 * launch, both written to cal[0..1]. One thread does the work; the rest of
 * the GPU is idle.
 */

/* A dependent chain of 8-byte loads, bypassing L1 (.cg), `samples` times `hops` hops. */
extern "C" __global__ void psc_chase(u64 start, u64 hops, unsigned samples, u64 *cycles, u64 *cal, u64 *end)
{
    u64 p = start;
    const u64 g0 = psc_globaltimer();
    const u64 c0 = clock64();

    for (unsigned s = 0; s < samples; s++) {
        const u64 t0 = clock64();

        for (u64 h = 0; h < hops; h++)
            asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p) : : "memory");
        cycles[s] = clock64() - t0;
    }
    cal[0] = psc_globaltimer() - g0;
    cal[1] = clock64() - c0;
    *end = p;
}

/*
 * The chase by bulk copies (TMA, sm_90 and newer): each hop loads the 16 bytes at p into shared memory with
 * cp.async.bulk, waits on the mbarrier that counts them, and takes the next pointer from there (chain nodes are
 * 128-byte aligned). What one dependent bulk load costs; the same parameters and results as psc_chase. Below
 * sm_90 the body is empty (such a case is waived before any launch).
 */
extern "C" __global__ void psc_chase_tma(u64 start, u64 hops, unsigned samples, u64 *cycles, u64 *cal, u64 *end)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    __shared__ __align__(16) u64 node[2];
    __shared__ __align__(8) u64 bar_word;
    const unsigned smem = (unsigned)__cvta_generic_to_shared(node), bar = (unsigned)__cvta_generic_to_shared(&bar_word);
    unsigned parity = 0;
    u64 p = start;
    const u64 g0 = psc_globaltimer();
    const u64 c0 = clock64();

    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    for (unsigned s = 0; s < samples; s++) {
        const u64 t0 = clock64();

        for (u64 h = 0; h < hops; h++) {
            psc_tma_load(smem, reinterpret_cast<const unsigned char *>(p), 16, bar);
            psc_tma_wait(bar, parity);
            parity ^= 1;
            p = *reinterpret_cast<volatile u64 *>(&node[0]);
        }
        cycles[s] = clock64() - t0;
    }
    cal[0] = psc_globaltimer() - g0;
    cal[1] = clock64() - c0;
    *end = p;
#endif
}

/*
 * nvbandwidth's chase (v0.8 ptrChasingKernel), for a figure comparable with its device_to_device_latency_sm:
 * launched with one one-thread block per SM, of which only block `target` walks `hops` loads from `start`.
 * The loads are written as nvbandwidth writes them, p = p->next, so nvcc emits the same generic ld.u64 with
 * the default cache operator (not ld.global.cg as psc_chase). Kept for the check and the calibration only:
 * where the walk ended (end[target]) and its %globaltimer and clock64 deltas (cal[2 * target], [+1]).
 */
struct psc_chase_node {
    struct psc_chase_node *next;
};

extern "C" __global__ void psc_chase_seq(struct psc_chase_node *start, unsigned hops, unsigned target, u64 *end,
                                         u64 *cal)
{
    struct psc_chase_node *p = start;

    if (blockIdx.x != target)
        return;
    const u64 g0 = psc_globaltimer();
    const u64 c0 = clock64();

    for (unsigned i = 0; i < hops; i++)
        p = p->next;
    cal[2 * target] = psc_globaltimer() - g0;
    cal[2 * target + 1] = clock64() - c0;
    end[target] = (u64)p;
}

/* Ping: write i into the peer's flag, wait for the answer in our own memory; round trip in cycles. */
extern "C" __global__ void psc_flag_ping(volatile unsigned *peer_flag, volatile unsigned *my_ans, unsigned iters,
                                         u64 *cycles, u64 *cal, u64 timeout_ns, unsigned *err)
{
    const u64 g0 = psc_globaltimer();
    const u64 c0 = clock64();

    for (unsigned i = 1; i <= iters; i++) {
        const u64 t0 = clock64(), w0 = psc_globaltimer();

        *peer_flag = i;
        __threadfence_system();
        while (*my_ans != i) {
            if (psc_globaltimer() - w0 > timeout_ns) {
                *err = 1;
                return;
            }
        }
        cycles[i - 1] = clock64() - t0;
    }
    cal[0] = psc_globaltimer() - g0;
    cal[1] = clock64() - c0;
}

/* Pong: wait for i in our flag (written by a GPU or the CPU), answer i into the other side's memory. */
extern "C" __global__ void psc_flag_pong(volatile unsigned *my_flag, volatile unsigned *peer_ans, unsigned iters,
                                         u64 timeout_ns, unsigned *err)
{
    for (unsigned i = 1; i <= iters; i++) {
        const u64 w0 = psc_globaltimer();

        while (*my_flag != i) {
            if (psc_globaltimer() - w0 > timeout_ns) {
                *err = 1;
                return;
            }
        }
        *peer_ans = i;
        __threadfence_system();
    }
}

/* The smallest step %globaltimer takes on this GPU, for stating the timer's resolution. */
extern "C" __global__ void psc_timer_probe(u64 *min_step)
{
    u64 last = psc_globaltimer(), best = ~0ull;

    for (int i = 0; i < 100000; i++) {
        u64 now = psc_globaltimer();

        if (now != last && now - last < best)
            best = now - last;
        last = now;
    }
    *min_step = best;
}

/* SM copy for addresses that are not 16-byte aligned: one byte per thread step. */
extern "C" __global__ void psc_copy_bytes(unsigned char *d, const unsigned char *s, u64 n)
{
    const u64 stride = (u64)gridDim.x * blockDim.x;

    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        d[i] = s[i];
}

/*
 * p2pscope coll's data (coll/coll_values.h says every value): fill a row's
 * slots before its timed loop and check every slot's output after it. Both
 * walk nslots x elements with one grid-stride index, kept as (slot, element)
 * without a division per element.
 */
static __device__ __forceinline__ u64 psc_coll_ld(const unsigned char *p, unsigned es)
{
    switch (es) {
    case 1: return *p;
    case 2: return *reinterpret_cast<const unsigned short *>(p);
    case 4: return *reinterpret_cast<const unsigned int *>(p);
    default: return *reinterpret_cast<const u64 *>(p);
    }
}

static __device__ __forceinline__ void psc_coll_st(unsigned char *p, unsigned es, u64 v)
{
    switch (es) {
    case 1: *p = (unsigned char)v; break;
    case 2: *reinterpret_cast<unsigned short *>(p) = (unsigned short)v; break;
    case 4: *reinterpret_cast<unsigned int *>(p) = (unsigned int)v; break;
    default: *reinterpret_cast<u64 *>(p) = v; break;
    }
}

/* This thread's first (slot, element) of nslots x n, and the stride as (slots, elements). */
struct psc_coll_walk {
    u64 slot, j, dslot, dj;
};

static __device__ __forceinline__ psc_coll_walk psc_coll_walk_start(u64 n)
{
    const u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x, stride = (u64)gridDim.x * blockDim.x;
    psc_coll_walk w = {t / n, t % n, stride / n, stride % n};

    return w;
}

static __device__ __forceinline__ void psc_coll_walk_next(psc_coll_walk *w, u64 n)
{
    w->slot += w->dslot;
    w->j += w->dj;
    if (w->j >= n) {
        w->j -= n;
        w->slot++;
    }
}

/* Send (out of place) holds the inputs, recv the input in place and the "before" value elsewhere. */
extern "C" __global__ void psc_coll_fill(unsigned char *send, unsigned char *recv, u64 slot_bytes, unsigned nslots,
                                         psc_coll_data_t d)
{
    const unsigned es = psc__coll_esize(d.dtype);
    const u64 area = psc__coll_area_n(&d), sn = psc__coll_send_n(&d);

    if (!d.in_place && sn)
        for (psc_coll_walk w = psc_coll_walk_start(sn); w.slot < nslots; psc_coll_walk_next(&w, sn))
            psc_coll_st(send + w.slot * slot_bytes + w.j * es, es,
                        psc__coll_input_bits(&d, d.seed + (uint32_t)w.slot, w.j));
    if (area)
        for (psc_coll_walk w = psc_coll_walk_start(area); w.slot < nslots; psc_coll_walk_next(&w, area))
            psc_coll_st(recv + w.slot * slot_bytes + w.j * es, es,
                        psc__coll_recv_init_bits(&d, d.seed + (uint32_t)w.slot, w.j));
}

/*
 * Count the wrong output elements into out[0] (one atomicAdd per block, after a warp and a block fold) and
 * the lowest wrong (slot * out_n + element) into out[1].
 */
extern "C" __global__ void psc_coll_check(const unsigned char *recv, u64 slot_bytes, unsigned nslots,
                                          psc_coll_data_t d, u64 *out)
{
    __shared__ u64 warp_wrong[32];
    const unsigned es = psc__coll_esize(d.dtype);
    const u64 n = psc__coll_out_n(&d);
    const unsigned char *base = recv + psc__coll_out_off(&d) * es;
    u64 wrong = 0, first = ~0ull;

    for (psc_coll_walk w = psc_coll_walk_start(n); w.slot < nslots; psc_coll_walk_next(&w, n)) {
        u64 got = psc_coll_ld(base + w.slot * slot_bytes + w.j * es, es);

        if (psc__coll_wrong(&d, d.seed + (uint32_t)w.slot, w.j, got)) {
            wrong++;
            if (first == ~0ull)
                first = w.slot * n + w.j; /* a thread's indices only grow: its first is its lowest */
        }
    }
    if (first != ~0ull)
        atomicMin(&out[1], first);
    for (int o = 16; o > 0; o >>= 1)
        wrong += __shfl_down_sync(0xffffffffu, wrong, o);
    if ((threadIdx.x & 31) == 0)
        warp_wrong[threadIdx.x >> 5] = wrong;
    __syncthreads();
    if (threadIdx.x == 0) {
        u64 sum = 0;

        for (unsigned k = 0; k < (blockDim.x + 31) / 32; k++)
            sum += warp_wrong[k];
        if (sum)
            atomicAdd(&out[0], sum);
    }
}

#include "psc_allreduce.cuh" /* the all-reduce kernels (uses psc_globaltimer, u64, the dtypes above) */
#include "psc_compute_load.cuh" /* coll's compute load */
