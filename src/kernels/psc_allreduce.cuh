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
 * same vectors of every piece of a call (the same grid everywhere). Piece
 * 0 is pushed first; iteration k then sets piece k - 1's buffer back to
 * the sentinel (the thread's own vectors; in iteration 0 the previous
 * call's last piece's), takes a system fence, pushes piece k + 1 (so the
 * link carries it while piece k is added; in iteration 0 only after piece 0
 * is in), then waits for piece k in buffer k % 4 and adds it. A buffer this
 * rank cleared (piece k's, in iteration k + 1) is pushed into again with
 * piece k + 4. Within one call a peer pushes that after waiting for this
 * rank's piece k + 2: a full piece (more follow it), pushed after the clear
 * and its fence by every thread that cleared. In a later call, its piece j
 * >= 1 is pushed after the peer waited for this rank's piece j - 1 or j - 2
 * of that call: full, and pushed by a kernel that began after the clearing
 * one ended; its piece 0 by a peer kernel that began after the peer's
 * previous one ended, which waited for this rank's piece k + 2 (in the
 * clearing call) or for data of a call after it. (Three buffers, or piece 1
 * pushed before piece 0 is in, would leave a thread with no vector in a
 * short piece ordering nothing before the reuse: found in review, the
 * second by a model of every three-call sequence.) See docs/METHOD.md.
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

/* Vector v of an input that may not be 16-byte aligned (a reduce-scatter's part r of count elements starts at
   r x count x size: 2-byte aligned at least): the aligned loads where it is, else eight 2-byte loads, zeros past
   bytes. */
static __device__ __forceinline__ uint4 psc_ar_input_any(const unsigned char *in, u64 v, u64 bytes)
{
    const unsigned short *p = reinterpret_cast<const unsigned short *>(in + 16 * v);
    unsigned w[4] = {0, 0, 0, 0};

    if ((reinterpret_cast<uintptr_t>(in) & 15) == 0)
        return psc_ar_input(in, v, bytes);
    for (unsigned h = 0; h < 8; h++)
        if (16 * v + 2 * h + 2 <= bytes)
            w[h / 2] |= (unsigned)p[h] << (16 * (h % 2));
    return make_uint4(w[0], w[1], w[2], w[3]);
}

/* Vector v of an output that may not be 16-byte aligned (an in-place reduce-scatter's part): as psc_ar_output
   where it is, else eight 2-byte stores. */
static __device__ __forceinline__ void psc_ar_output_any(unsigned char *out, u64 v, u64 bytes, uint4 z)
{
    unsigned short *p = reinterpret_cast<unsigned short *>(out + 16 * v);
    const unsigned w[4] = {z.x, z.y, z.z, z.w};

    if ((reinterpret_cast<uintptr_t>(out) & 15) == 0) {
        psc_ar_output(out, v, bytes, z);
        return;
    }
    for (unsigned h = 0; h < 8; h++)
        if (16 * v + 2 * h + 2 <= bytes)
            p[h] = (unsigned short)(w[h / 2] >> (16 * (h % 2)));
}

/* The input and output of the one-shot's kinds: the all-reduce's are 16-byte aligned (the call checks), a
   reduce-scatter's parts may not be. */
template <int RS>
static __device__ __forceinline__ uint4 psc_ar_in(const unsigned char *in, u64 v, u64 bytes)
{
    return RS ? psc_ar_input_any(in, v, bytes) : psc_ar_input(in, v, bytes);
}

template <int RS>
static __device__ __forceinline__ void psc_ar_out(unsigned char *out, u64 v, u64 bytes, uint4 z)
{
    if (RS)
        psc_ar_output_any(out, v, bytes, z);
    else
        psc_ar_output(out, v, bytes, z);
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

/* Record the first give-up of this rank's call: the rank waited for, and the call. */
static __device__ __forceinline__ void psc_ar_gave_up(psc_ar_ctrl_t *ctrl, unsigned r, unsigned seq)
{
    if (atomicCAS(&ctrl->err, 0u, PSC_AR_ERR_TIMEOUT) == 0u) {
        ctrl->err_rank = r;
        ctrl->err_seq = seq;
    }
}

/* A launch that may begin before the work ahead of it in the stream ends (programmatic dependent launch,
   sm_90 on): wait here for that work and its memory, then let the next kernel launch early in turn. */
static __device__ __forceinline__ void psc_ar_after_previous(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* What a call took from its rank's control words: the call count, its first buffer, the vectors per slot
   that the previous call left to clear, and whether a call before gave up (then nothing runs). */
struct psc_ar_state {
    unsigned seq, buf, dead;
    u64 clear_vec;
};

/* Whose control words a call takes at its start (psc_ar_start): the one-shot's, the two-shot's, the all-gather's. */
enum { PSC_AR_KIND_ONESHOT = 0, PSC_AR_KIND_TWOSHOT = 1, PSC_AR_KIND_AG = 2 };

/*
 * The call's start, every thread of the block. The keeper (the first thread of the block's last warp, which
 * moves no data: see psc_ar_first) reads the control words, two loads in flight at once; then, while the others push, it moves
 * them on for the next call (buffer index by `pieces`, what to clear next, the count) as soon as every
 * block has read them: the last block to arrive (or the only one) writes them. Its fence orders only its
 * loads (it has stored nothing yet), so no thread waits on a fence for pushes across the link, and the
 * call's end orders nothing. A call before that gave up leaves the words as they are (later calls do
 * nothing anyway). kind: PSC_AR_KIND_*, whose words; the all-gather's buf is its piece number (no clearing).
 */
static __device__ __forceinline__ psc_ar_state psc_ar_start(psc_ar_ctrl_t *ctrl, int kind, u64 pieces,
                                                            unsigned next_clear)
{
    __shared__ psc_ar_state s;
    const int keeper = threadIdx.x == PSC_AR_LANES, two = kind == PSC_AR_KIND_TWOSHOT;

    if (keeper) {
        uint4 h;
        uint2 c;

        asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(h.x), "=r"(h.y), "=r"(h.z), "=r"(h.w)
                     : "l"(&ctrl->seq));
        if (kind == PSC_AR_KIND_AG)
            asm volatile("ld.volatile.global.v2.u32 {%0,%1}, [%2];" : "=r"(c.x), "=r"(c.y) : "l"(&ctrl->ag));
        else
            asm volatile("ld.volatile.global.v2.u32 {%0,%1}, [%2];" : "=r"(c.x), "=r"(c.y) : "l"(&ctrl->clear));
        s.seq = h.x;
        s.dead = h.y != 0;
        s.buf = kind == PSC_AR_KIND_AG ? c.x : two ? h.w : h.z;
        s.clear_vec = kind == PSC_AR_KIND_AG ? 0 : (two ? c.y : c.x) / 16;
    }
    __syncthreads();
    if (keeper && !s.dead) {
        int last = 1;

        if (gridDim.x > 1) { /* the reads above before the count, so the last block may overwrite them */
            __threadfence();
            last = atomicAdd(&ctrl->arrived, 1u) == gridDim.x - 1;
            if (last) {
                __threadfence(); /* and every block's reads before the last one's writes (acquire) */
                ctrl->arrived = 0;
            }
        }
        /* (a block that starts after a give-up in this call counts nothing: the words then stay, `arrived`
           too, which is harmless: a give-up is for good, until the group is made again) */
        if (last && kind == PSC_AR_KIND_AG) {
            ctrl->ag = (unsigned)(((u64)s.buf + pieces) % PSC_AG_MOD);
        } else if (last) {
            *(two ? &ctrl->buf2 : &ctrl->buf) = (unsigned)((s.buf + pieces) % PSC_AR_BUFS);
            *(two ? &ctrl->clear2 : &ctrl->clear) = next_clear;
        }
        if (last)
            ctrl->seq = s.seq + 1;
    }
    return s;
}

/* The thread's first vector of a piece (then every gridDim.x * PSC_AR_LANES): the same on every rank, warps
   on whole 128-byte lines; the last warp's threads (the keeper's) none, their first past any piece. */
static __device__ __forceinline__ u64 psc_ar_first(void)
{
    return threadIdx.x >= PSC_AR_LANES ? ~0ull : (u64)blockIdx.x * PSC_AR_LANES + threadIdx.x;
}

/*
 * The reduce-scatter's push of piece k (of `pieces`, the last of last_bytes) into buffer b: rank r's part of
 * this rank's input (count elements from r x count) into rank r's, this rank's slot; PSC_AR_BATCH loads in
 * flight.
 */
static __device__ __forceinline__ void psc_rs_push(const psc_ar_args_t &a, unsigned b, u64 k, u64 pieces,
                                                   u64 last_bytes, u64 first, u64 stride)
{
    const u64 pbytes = k + 1 < pieces ? a.slot_bytes : last_bytes, nvec = (pbytes + 15) / 16;
    const u64 at = ((u64)b * a.nranks + a.rank) * a.slot_bytes, part = a.count * (a.dtype == PSC_DT_FLOAT32 ? 4 : 2);

    for (unsigned r = 0; r < a.nranks; r++) {
        const unsigned char *in = reinterpret_cast<const unsigned char *>(a.send) + r * part + k * a.slot_bytes;

        for (u64 v0 = first; r != a.rank && v0 < nvec; v0 += PSC_AR_BATCH * stride) {
            uint4 x[PSC_AR_BATCH];

#pragma unroll
            for (unsigned u = 0; u < PSC_AR_BATCH; u++)
                if (v0 + u * stride < nvec)
                    x[u] = psc_ar_sendable(psc_ar_input_any(in, v0 + u * stride, pbytes));
#pragma unroll
            for (unsigned u = 0; u < PSC_AR_BATCH; u++)
                if (v0 + u * stride < nvec)
                    psc_ar_st(reinterpret_cast<unsigned char *>(a.lbuf[r]) + at + 16 * (v0 + u * stride), x[u]);
        }
    }
}

/*
 * Piece k of the call (of `pieces`, the last of last_bytes) pushed into buffer b of every other rank, this
 * rank's slot: this thread's vectors, PSC_AR_BATCH input loads in flight before their stores. x0: the
 * thread's first vector of piece 0, read already.
 */
static __device__ __forceinline__ void psc_ar_push_all(const psc_ar_args_t &a, unsigned b, u64 k, u64 pieces,
                                                       u64 last_bytes, u64 first, u64 stride, uint4 x0)
{
    const u64 pbytes = k + 1 < pieces ? a.slot_bytes : last_bytes, nvec = (pbytes + 15) / 16;
    const unsigned char *in = reinterpret_cast<const unsigned char *>(a.send) + k * a.slot_bytes;
    const u64 at = ((u64)b * a.nranks + a.rank) * a.slot_bytes;

    for (u64 v0 = first; v0 < nvec; v0 += PSC_AR_BATCH * stride) {
        uint4 x[PSC_AR_BATCH];

#pragma unroll
        for (unsigned u = 0; u < PSC_AR_BATCH; u++) {
            const u64 v = v0 + u * stride;

            if (v < nvec)
                x[u] = k == 0 && v == first ? x0 : psc_ar_sendable(psc_ar_input(in, v, pbytes));
        }
#pragma unroll
        for (unsigned u = 0; u < PSC_AR_BATCH; u++)
            for (unsigned r = 0; v0 + u * stride < nvec && r < a.nranks; r++)
                if (r != a.rank)
                    psc_ar_st(reinterpret_cast<unsigned char *>(a.lbuf[r]) + at + 16 * (v0 + u * stride), x[u]);
    }
}

/* The push of the one-shot's kind: the all-reduce's (the same input to every peer) or RS the reduce-scatter's. */
template <int RS>
static __device__ __forceinline__ void psc_ar_push(const psc_ar_args_t &a, unsigned b, u64 k, u64 pieces,
                                                   u64 last_bytes, u64 first, u64 stride, uint4 x0)
{
    if (RS)
        psc_rs_push(a, b, k, pieces, last_bytes, first, stride);
    else
        psc_ar_push_all(a, b, k, pieces, last_bytes, first, stride, x0);
}

/* This thread's vectors (below clear_vec) of every other rank's slot of this rank's buffer `old`, set back to
   the sentinel. */
static __device__ __forceinline__ void psc_ar_clear(const psc_ar_args_t &a, unsigned old, u64 clear_vec, u64 first,
                                                    u64 stride)
{
    unsigned char *own = reinterpret_cast<unsigned char *>(a.lbuf[a.rank]);

    for (u64 v = first; v < clear_vec; v += stride)
        for (unsigned r = 0; r < a.nranks; r++)
            if (r != a.rank)
                psc_ar_st(own + ((u64)old * a.nranks + r) * a.slot_bytes + 16 * v,
                          make_uint4(PSC_AR_SENTINEL, PSC_AR_SENTINEL, PSC_AR_SENTINEL, PSC_AR_SENTINEL));
}

/*
 * A call of one piece where each thread has one vector at most (the small calls, whose time is latency):
 * push it, clear this thread's vectors of the previous call's last buffer, wait for every other rank's
 * and add in rank order. The same protocol as the loop below, without its batches: fewer registers and
 * instructions on the path that decides a small call's time.
 */
template <int RS>
static __device__ __forceinline__ void psc_ar_oneshot_small(const psc_ar_args_t &a, psc_ar_ctrl_t *ctrl, unsigned b,
                                                            unsigned seq, u64 clear_vec, u64 first, u64 stride,
                                                            u64 bytes, uint4 x0)
{
    const unsigned old = b == 0 ? PSC_AR_BUFS - 1 : b - 1;
    unsigned char *own = reinterpret_cast<unsigned char *>(a.lbuf[a.rank]);
    const u64 nvec = (bytes + 15) / 16;
    u64 deadline = 0;
    float acc[8];

    psc_ar_push<RS>(a, b, 0, 1, bytes, first, stride, x0);
    psc_ar_clear(a, old, clear_vec, first, stride);
    if (first >= nvec)
        return;
    for (unsigned r = 0; r < a.nranks; r++) {
        uint4 y = x0;

        if (r != a.rank &&
            !psc_ar_wait(own + ((u64)b * a.nranks + r) * a.slot_bytes + 16 * first, &y, &deadline, a.timeout_ns,
                         &ctrl->err)) {
            psc_ar_gave_up(ctrl, r, seq);
            return;
        }
        psc_ar_add(acc, y, a.dtype, r == 0);
    }
    psc_ar_out<RS>(reinterpret_cast<unsigned char *>(a.recv), first, bytes, psc_ar_round(acc, a.dtype));
}

/*
 * The one-shot call (above); RS: a reduce-scatter's, whose count is a part's (every rank's output), this
 * rank's own input its part of send (rank x count elements in), each peer's pushed its part there.
 */
template <int RS>
static __device__ __forceinline__ void psc_ar_oneshot_call(const psc_ar_args_t &a)
{
    psc_ar_ctrl_t *ctrl = reinterpret_cast<psc_ar_ctrl_t *>(a.ctrl);
    volatile unsigned *err = &ctrl->err;
    const u64 bytes = a.count * (a.dtype == PSC_DT_FLOAT32 ? 4 : 2);
    const u64 pieces = bytes > a.slot_bytes ? (bytes + a.slot_bytes - 1) / a.slot_bytes : 1;
    const u64 last_bytes = bytes - (pieces - 1) * a.slot_bytes;
    const u64 stride = (u64)gridDim.x * PSC_AR_LANES, first = psc_ar_first();
    unsigned char *own = reinterpret_cast<unsigned char *>(a.lbuf[a.rank]);
    const u64 first_bytes = pieces > 1 ? a.slot_bytes : last_bytes;
    const unsigned char *mine = reinterpret_cast<const unsigned char *>(a.send) + (RS ? a.rank * bytes : 0);
    uint4 x0;

    psc_ar_after_previous();
    /* the thread's first vector read at once, beside the control words: a small call's only load waits for
       nothing else (and is used twice: pushed, then added) */
    x0 = first < (first_bytes + 15) / 16 ? psc_ar_sendable(psc_ar_in<RS>(mine, first, first_bytes))
                                         : make_uint4(0, 0, 0, 0);
    const psc_ar_state st = psc_ar_start(ctrl, PSC_AR_KIND_ONESHOT, pieces, (unsigned)((last_bytes + 15) / 16 * 16));
    const unsigned seq = st.seq;
    u64 clear_vec = st.clear_vec;
    unsigned b = st.buf;

    if (st.dead) /* the buffers' states are unknown: nothing runs until the group is re-made */
        return;
    if (pieces == 1 && (last_bytes + 15) / 16 <= stride) { /* a vector per thread at most: the short path */
        psc_ar_oneshot_small<RS>(a, ctrl, b, seq, clear_vec, first, stride, last_bytes, x0);
        return;
    }
    psc_ar_push<RS>(a, b, 0, pieces, last_bytes, first, stride, x0);
    for (u64 k = 0; k < pieces; k++, b = b + 1 == PSC_AR_BUFS ? 0 : b + 1) {
        const unsigned old = b == 0 ? PSC_AR_BUFS - 1 : b - 1;
        const u64 pbytes = k + 1 < pieces ? a.slot_bytes : last_bytes, nvec = (pbytes + 15) / 16;
        const unsigned char *in = mine + k * a.slot_bytes;
        unsigned char *out = reinterpret_cast<unsigned char *>(a.recv) + k * a.slot_bytes;
        u64 deadline = 0; /* set by this piece's first wait that lasts */
        int ok = 1;

        /* the previous piece's buffer (this thread has read its vectors there; see the comment at the top) */
        psc_ar_clear(a, old, clear_vec, first, stride);
        /* the next piece pushed before this one is added, so the link carries it meanwhile; the clearing above
           before it, across GPUs: a peer that sees this thread's data may go on to reuse that buffer. Not in
           the first iteration: piece 1 goes after piece 0 is in (below; see the comment at the top) */
        if (k > 0 && k + 1 < pieces) {
            __threadfence_system();
            psc_ar_push<RS>(a, b + 1 == PSC_AR_BUFS ? 0 : b + 1, k + 1, pieces, last_bytes, first, stride, x0);
        }
        /* wait for every other rank's slot and add all in rank order, PSC_AR_BATCH vectors at a time (their
           loads in flight together); the same thread reads and writes v (in place) */
        for (u64 v0 = first; v0 < nvec && ok; v0 += PSC_AR_BATCH * stride) {
            float acc[PSC_AR_BATCH][8];

            for (unsigned r = 0; r < a.nranks && ok; r++) {
                const unsigned char *slot = own + ((u64)b * a.nranks + r) * a.slot_bytes;
                uint4 y[PSC_AR_BATCH];

#pragma unroll
                for (unsigned u = 0; u < PSC_AR_BATCH; u++) {
                    const u64 v = v0 + u * stride;

                    if (v < nvec)
                        y[u] = r != a.rank ? psc_ar_ld(slot + 16 * v)
                                           : k == 0 && v == first ? x0
                                                                  : psc_ar_sendable(psc_ar_in<RS>(in, v, pbytes));
                }
#pragma unroll
                for (unsigned u = 0; u < PSC_AR_BATCH; u++) {
                    const u64 v = v0 + u * stride;

                    if (v >= nvec)
                        continue;
                    if (r != a.rank && !psc_ar_arrived(y[u]) &&
                        !(ok = psc_ar_wait(slot + 16 * v, &y[u], &deadline, a.timeout_ns, err))) {
                        psc_ar_gave_up(ctrl, r, seq);
                        break;
                    }
                    psc_ar_add(acc[u], y[u], a.dtype, r == 0);
                }
            }
#pragma unroll
            for (unsigned u = 0; u < PSC_AR_BATCH; u++)
                if (ok && v0 + u * stride < nvec)
                    psc_ar_out<RS>(out, v0 + u * stride, pbytes, psc_ar_round(acc[u], a.dtype));
        }
        if (!ok)
            break;
        if (k == 0 && pieces > 1) { /* piece 1 only now: this call's piece 0 from every peer is in */
            __threadfence_system();
            psc_ar_push<RS>(a, b + 1 == PSC_AR_BUFS ? 0 : b + 1, 1, pieces, last_bytes, first, stride, x0);
        }
        clear_vec = nvec;
    }
}

extern "C" __global__ void __launch_bounds__(PSC_AR_THREADS) psc_ar_oneshot(psc_ar_args_t a)
{
    psc_ar_oneshot_call<0>(a);
}

/* The reduce-scatter (sum) by the one-shot's protocol and buffers (psc_allreduce_reduce_scatter). */
extern "C" __global__ void __launch_bounds__(PSC_AR_THREADS) psc_rs_oneshot(psc_ar_args_t a)
{
    psc_ar_oneshot_call<1>(a);
}

#include "psc_allreduce_twoshot.cuh"
#include "psc_allgather.cuh"
#include "psc_allreduce_ce.cuh"

/* Fill n 32-bit words with value (the buffers' sentinel at creation). */
extern "C" __global__ void psc_ar_fill(unsigned *p, u64 n, unsigned value)
{
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        p[i] = value;
}
