/*
 * p2pscope's own all-reduce (sum), included by psc_kernels.cu. The one-shot
 * kernel: each rank pushes its input, 16 bytes per store, into its slot of
 * every other rank's current buffer, then waits in its own buffer for every
 * other rank's slot and adds them, its own input included, in rank order
 * (fp32 accumulation, one rounding): every rank computes the same sum the
 * same way, so every rank's result is bit-identical. The data is its own
 * flag (TensorRT-LLM's "Lamport" scheme): a buffer holds the sentinel word
 * until written, and no pushed word carries it (an input word equal to it
 * is pushed, and added, as another NaN), so there is no barrier and no flag
 * to wait for. Four buffers rotate, piece by piece (a call larger than a
 * slot goes through in slot-sized pieces; the index, 0..3, kept in the
 * GPU's memory beside the call count). Thread t of every rank handles the
 * same vectors of every piece of a call (the same grid everywhere), and
 * while piece k reads buffer k % 4 (peers may already push piece k + 1 into
 * the next), it sets piece k - 1's buffer back to the sentinel, its own
 * vectors, the first piece of a call the previous call's last piece's. That
 * buffer is written again in piece k + 3 at the earliest, by a peer that has
 * waited for this rank's data of piece k + 1 or k + 2, pushed after the
 * clear was ordered before it: in the same call piece k + 1 is a full piece,
 * where every thread pushes after a system fence (taken at each piece's
 * start); a piece in a later call is pushed by a later kernel of this rank,
 * after this one ended. (With three buffers a thread with no vector in a
 * short last piece would order nothing before the reuse.) See docs/METHOD.md.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "allreduce/ar_args.h"

static __device__ __forceinline__ uint4 psc_ar_ld(const unsigned char *p)
{
    uint4 v;

    asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

static __device__ __forceinline__ void psc_ar_st(unsigned char *p, uint4 v)
{
    asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

static __device__ __forceinline__ unsigned psc_ar_unsent(unsigned w)
{
    return w == PSC_AR_SENTINEL ? PSC_AR_NAN_WORD : w;
}

static __device__ __forceinline__ int psc_ar_arrived(uint4 v)
{
    return v.x != PSC_AR_SENTINEL && v.y != PSC_AR_SENTINEL && v.z != PSC_AR_SENTINEL && v.w != PSC_AR_SENTINEL;
}

/* Vector v of the input: 16 bytes, or the last few (a multiple of 2) with zeros after them, word by word. */
static __device__ __forceinline__ uint4 psc_ar_input(const unsigned char *in, u64 v, u64 bytes)
{
    const unsigned char *p = in + 16 * v;
    unsigned w[4] = {0, 0, 0, 0};

    if (16 * v + 16 <= bytes)
        return *reinterpret_cast<const uint4 *>(p);
    for (unsigned k = 0; k < 4; k++) {
        u64 at = 16 * v + 4 * k;

        if (at + 4 <= bytes)
            w[k] = reinterpret_cast<const unsigned *>(p)[k];
        else if (at + 2 <= bytes)
            w[k] = reinterpret_cast<const unsigned short *>(p)[2 * k];
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

/* Vector v of the output: 16 bytes, or the last few (a multiple of 2). */
static __device__ __forceinline__ void psc_ar_output(unsigned char *out, u64 v, u64 bytes, uint4 z)
{
    unsigned char *p = out + 16 * v;
    const unsigned w[4] = {z.x, z.y, z.z, z.w};

    if (16 * v + 16 <= bytes) {
        *reinterpret_cast<uint4 *>(p) = z;
        return;
    }
    for (unsigned k = 0; k < 4; k++) {
        u64 at = 16 * v + 4 * k;

        if (at + 4 <= bytes)
            reinterpret_cast<unsigned *>(p)[k] = w[k];
        else if (at + 2 <= bytes)
            reinterpret_cast<unsigned short *>(p)[2 * k] = (unsigned short)w[k];
    }
}

/* What every rank adds for this rank's vector: the input with no sentinel word (such a word as a NaN). */
static __device__ __forceinline__ uint4 psc_ar_sendable(uint4 x)
{
    return make_uint4(psc_ar_unsent(x.x), psc_ar_unsent(x.y), psc_ar_unsent(x.z), psc_ar_unsent(x.w));
}

/* Add 16 bytes of dtype into eight (fp16, bf16) or four (fp32) float accumulators; first: set them. */
static __device__ __forceinline__ void psc_ar_add(float acc[8], uint4 v, unsigned dtype, int first)
{
    unsigned w[4] = {v.x, v.y, v.z, v.w};

    for (int k = 0; k < 4; k++) {
        if (dtype == PSC_DT_FLOAT32) {
            float f = __uint_as_float(w[k]);

            acc[k] = first ? f : acc[k] + f;
            continue;
        }
        for (int h = 0; h < 2; h++) {
            unsigned short bits = (unsigned short)(w[k] >> (16 * h));
            float f = dtype == PSC_DT_BFLOAT16 ? __uint_as_float((unsigned)bits << 16)
                                               : __half2float(__ushort_as_half(bits));

            acc[2 * k + h] = first ? f : acc[2 * k + h] + f;
        }
    }
}

/* The accumulators rounded once to dtype, 16 bytes. */
static __device__ __forceinline__ uint4 psc_ar_round(const float acc[8], unsigned dtype)
{
    unsigned w[4];

    for (int k = 0; k < 4; k++) {
        if (dtype == PSC_DT_FLOAT32) {
            w[k] = __float_as_uint(acc[k]);
            continue;
        }
        unsigned short lo = dtype == PSC_DT_BFLOAT16 ? __bfloat16_as_ushort(__float2bfloat16_rn(acc[2 * k]))
                                                     : __half_as_ushort(__float2half_rn(acc[2 * k]));
        unsigned short hi = dtype == PSC_DT_BFLOAT16 ? __bfloat16_as_ushort(__float2bfloat16_rn(acc[2 * k + 1]))
                                                     : __half_as_ushort(__float2half_rn(acc[2 * k + 1]));
        w[k] = (unsigned)lo | ((unsigned)hi << 16);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

/*
 * Wait for slot p's 16 bytes to be written; give up (0) past the deadline or
 * once another thread of this rank gave up (ctrl->err set).
 */
static __device__ __forceinline__ int psc_ar_wait(const unsigned char *p, uint4 *out, u64 *deadline, u64 timeout_ns,
                                                  const volatile unsigned *err)
{
    for (unsigned spins = 0;; spins++) {
        uint4 v = psc_ar_ld(p);

        if (psc_ar_arrived(v)) {
            *out = v;
            return 1;
        }
        if ((spins & 1023) == 1023) { /* the clock is read only by a wait that lasts: none on the fast path */
            u64 now = psc_globaltimer();

            if (!*deadline)
                *deadline = now + timeout_ns;
            if (*err || now > *deadline)
                return 0;
        }
    }
}

/*
 * The call's end: the last block to finish (or the only one) moves the kernel's buffer index to `next`,
 * notes the last piece's size for the next call to clear, and counts the call, so that the next call,
 * even a graph's replay, sees them. Nothing moves after a give-up: later calls do nothing anyway.
 */
static __device__ __forceinline__ void psc_ar_finish(psc_ar_ctrl_t *ctrl, unsigned seq, const int *gave_up,
                                                     uint32_t *buf, uint64_t *clear, unsigned next, u64 clear_bytes)
{
    __syncthreads(); /* every thread's give-up noted in the block's flag before it is read */
    if (threadIdx.x != 0 || *(const volatile int *)gave_up)
        return;
    if (gridDim.x == 1) { /* one block: no other to wait for; the kernel's end orders it */
        *clear = clear_bytes;
        *buf = next;
        ctrl->seq = seq + 1;
        return;
    }
    __threadfence();
    if (atomicAdd(&ctrl->arrived, 1u) == gridDim.x - 1) {
        ctrl->arrived = 0;
        *clear = clear_bytes;
        *buf = next;
        __threadfence();
        *(volatile unsigned *)&ctrl->seq = seq + 1;
    }
}

/* Record the first give-up of this rank's call: the rank waited for, and the call. */
static __device__ __forceinline__ void psc_ar_gave_up(psc_ar_ctrl_t *ctrl, unsigned r, unsigned seq)
{
    if (atomicCAS(&ctrl->err, 0u, PSC_AR_ERR_TIMEOUT) == 0u) {
        ctrl->err_rank = r;
        ctrl->err_seq = seq;
    }
}

/* 1 when a call before this one gave up (one reading for the whole block: its threads leave together). */
static __device__ __forceinline__ int psc_ar_dead(const volatile unsigned *err, int *gave_up)
{
    __shared__ int dead;

    if (threadIdx.x == 0) {
        dead = *err != 0;
        *gave_up = 0;
    }
    __syncthreads();
    return dead;
}

extern "C" __global__ void __launch_bounds__(PSC_AR_THREADS) psc_ar_oneshot(psc_ar_args_t a)
{
    psc_ar_ctrl_t *ctrl = reinterpret_cast<psc_ar_ctrl_t *>(a.ctrl);
    volatile unsigned *err = &ctrl->err;
    const unsigned seq = *(volatile unsigned *)&ctrl->seq, cur = *(volatile unsigned *)&ctrl->buf;
    const u64 bytes = a.count * (a.dtype == PSC_DT_FLOAT32 ? 4 : 2);
    const u64 pieces = bytes > a.slot_bytes ? (bytes + a.slot_bytes - 1) / a.slot_bytes : 1;
    const u64 last_bytes = bytes - (pieces - 1) * a.slot_bytes;
    const u64 stride = (u64)gridDim.x * blockDim.x, first = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned char *own = reinterpret_cast<unsigned char *>(a.lbuf[a.rank]);
    u64 clear_vec = *(volatile u64 *)&ctrl->clear_bytes / 16; /* the previous call's last piece */
    unsigned b = cur;
    __shared__ int gave_up;
    /* the thread's first vector read at once, beside the control words: a small call's only load waits for
       nothing else (and is used twice: pushed, then added) */
    const u64 first_bytes = pieces > 1 ? a.slot_bytes : last_bytes;
    const uint4 x0 = first < (first_bytes + 15) / 16
                         ? psc_ar_sendable(psc_ar_input(reinterpret_cast<const unsigned char *>(a.send), first,
                                                        first_bytes))
                         : make_uint4(0, 0, 0, 0);

    if (psc_ar_dead(err, &gave_up)) /* the buffers' states are unknown: nothing runs until the group is re-made */
        return;
    for (u64 k = 0; k < pieces; k++, b = b + 1 == PSC_AR_BUFS ? 0 : b + 1) {
        const unsigned old = b == 0 ? PSC_AR_BUFS - 1 : b - 1;
        const u64 pbytes = k + 1 < pieces ? a.slot_bytes : last_bytes, nvec = (pbytes + 15) / 16;
        const unsigned char *in = reinterpret_cast<const unsigned char *>(a.send) + k * a.slot_bytes;
        unsigned char *out = reinterpret_cast<unsigned char *>(a.recv) + k * a.slot_bytes;
        u64 deadline = 0; /* set by this piece's first wait that lasts */
        int ok = 1;

        /* the clearing of piece k - 2's buffer (done in piece k - 1) before piece k's pushes, across GPUs: a peer
           that sees this thread's data may go on to reuse that buffer */
        if (k > 0)
            __threadfence_system();
        /* push: this thread's vectors of the piece into this rank's slot of every other rank's buffer b */
        for (u64 v = first; v < nvec; v += stride) {
            uint4 x = k == 0 && v == first ? x0 : psc_ar_sendable(psc_ar_input(in, v, pbytes));

            for (unsigned r = 0; r < a.nranks; r++)
                if (r != a.rank)
                    psc_ar_st(reinterpret_cast<unsigned char *>(a.lbuf[r]) +
                                  ((u64)b * a.nranks + a.rank) * a.slot_bytes + 16 * v,
                              x);
        }
        /* the previous piece's buffer (no peer writes there before this thread's peers are past this piece) */
        for (u64 v = first; v < clear_vec; v += stride)
            for (unsigned r = 0; r < a.nranks; r++)
                if (r != a.rank)
                    psc_ar_st(own + ((u64)old * a.nranks + r) * a.slot_bytes + 16 * v,
                              make_uint4(PSC_AR_SENTINEL, PSC_AR_SENTINEL, PSC_AR_SENTINEL, PSC_AR_SENTINEL));
        /* wait for every other rank's slot and add all in rank order; the same thread reads and writes v (in place) */
        for (u64 v = first; v < nvec && ok; v += stride) {
            float acc[8];

            for (unsigned r = 0; r < a.nranks && ok; r++) {
                uint4 y;

                if (r == a.rank)
                    y = k == 0 && v == first ? x0 : psc_ar_sendable(psc_ar_input(in, v, pbytes));
                else if (!(ok = psc_ar_wait(own + ((u64)b * a.nranks + r) * a.slot_bytes + 16 * v, &y, &deadline,
                                            a.timeout_ns, err))) {
                    psc_ar_gave_up(ctrl, r, seq);
                    break;
                }
                psc_ar_add(acc, y, a.dtype, r == 0);
            }
            if (ok)
                psc_ar_output(out, v, pbytes, psc_ar_round(acc, a.dtype));
        }
        if (!ok) {
            gave_up = 1;
            break;
        }
        clear_vec = nvec;
    }
    psc_ar_finish(ctrl, seq, &gave_up, &ctrl->buf, &ctrl->clear_bytes, (unsigned)((cur + pieces) % PSC_AR_BUFS),
                  (last_bytes + 15) / 16 * 16);
}

#include "psc_allreduce_twoshot.cuh"

/* Fill n 32-bit words with value (the buffers' sentinel at creation). */
extern "C" __global__ void psc_ar_fill(unsigned *p, u64 n, unsigned value)
{
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        p[i] = value;
}
