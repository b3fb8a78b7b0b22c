/*
 * The copy-engine path's kernels (included by psc_allreduce.cuh; the host's
 * side and the reasons in src/lib/allreduce/allreduce_ce.c). Each rank's copy
 * engine pushes a chunk of its input into a slot of every other rank's
 * scratch, then its stream marks that chunk sent, in the rank's own memory.
 * psc_ar_ce_add, on the caller's stream, once per chunk: waits until every
 * other rank marked its chunk sent, adds all in rank order (fp32, one
 * rounding: bit-identical everywhere; an all-gather's puts each rank's chunk
 * in its part of the output instead), and its last block to finish sets
 * those marks back and, after the last chunk of a half of the slots, tells
 * the senders that half is free. psc_ar_ce_wait, on a third stream, before
 * the copies of each half: waits until every other rank freed this rank's
 * chunks in that half, and takes the word. Both give up past the timeout as
 * the other kernels do (ctrl->err: every later kernel of the group returns
 * at once); a rank that gives up first writes every peer's abort word, since
 * its copies then go on unchecked into the peers' slots, and a peer that
 * finds it (before waiting, while waiting, after its reads) gives up too.
 */

static __device__ __forceinline__ unsigned psc_ar_ld_acquire(const unsigned *p)
{
    unsigned v;

    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

/*
 * Wait until the word at p is (want) or is not (!want) `value`. 0 past the deadline (*who: awaited), once this
 * rank gave up (ctrl->err; *who: -1, nothing more to record) or once a peer gave up and said so in this rank's
 * abort word (*who: that peer).
 */
static __device__ int psc_ar_ce_poll(const unsigned *p, unsigned value, int want, u64 timeout_ns,
                                     const volatile unsigned *err, const unsigned *abort_word, int awaited, int *who)
{
    u64 deadline = 0;

    for (unsigned spins = 0;; spins++) {
        if ((psc_ar_ld_acquire(p) == value) == want)
            return 1;
        if ((spins & 255) == 255) {
            const unsigned ab = psc_ar_ld_acquire(abort_word);
            u64 now = psc_globaltimer();

            if (!deadline)
                deadline = now + timeout_ns;
            *who = *err ? -1 : PSC_AR_CE_ABORTED(ab) ? (int)(ab & 0xffffu) : awaited;
            if (*err || PSC_AR_CE_ABORTED(ab) || now > deadline)
                return 0;
        }
    }
}

static __device__ __forceinline__ unsigned *psc_ar_ce_flag(u64 lbuf, u64 ce_off, unsigned at)
{
    return reinterpret_cast<unsigned *>(lbuf + ce_off + at);
}

/* Rank s's slot in rank r's scratch (s != r). */
static __device__ __forceinline__ const unsigned char *psc_ar_ce_slot(const psc_ar_ce_args_t &a, unsigned r,
                                                                      unsigned s)
{
    return reinterpret_cast<const unsigned char *>(a.lbuf[r] +
                                                   PSC_AR_CE_SLOT_AT(a.ce_off, a.chunk_bytes, r, s, a.slot));
}

/*
 * This rank gives up (rank `who` is to blame; -1: it already did): every peer's abort word first, then, after a
 * system fence, the error word. A thread of this rank that sees the error lets the copies go on into the peers'
 * slots, so a live peer must be able to see the abort before that data lands.
 */
static __device__ void psc_ar_ce_give_up(const psc_ar_ce_args_t &a, psc_ar_ctrl_t *ctrl, int who, unsigned seq)
{
    if (who < 0)
        return;
    for (unsigned r = 0; r < a.nranks; r++)
        if (r != a.rank)
            *(volatile unsigned *)psc_ar_ce_flag(a.lbuf[r], a.ce_off, PSC_AR_CE_ABORT) = PSC_AR_CE_ABORT_MARK | a.rank;
    __threadfence_system();
    psc_ar_gave_up(ctrl, (unsigned)who, seq);
}

/* 1 where a peer's abort is in this rank's flags, and this rank gave up too (read after this block's reads as well:
   the slots may have been overrun). */
static __device__ int psc_ar_ce_abort_seen(const psc_ar_ce_args_t &a, psc_ar_ctrl_t *ctrl, unsigned seq)
{
    const unsigned w = psc_ar_ld_acquire(psc_ar_ce_flag(a.lbuf[a.rank], a.ce_off, PSC_AR_CE_ABORT));

    if (!PSC_AR_CE_ABORTED(w))
        return 0;
    psc_ar_ce_give_up(a, ctrl, (int)(w & 0xffffu), seq);
    return 1;
}

/* A kernel's opening: the call count in *seq; 1 to go on, 0 where this rank gave up already or does now (a peer's
   abort). */
static __device__ int psc_ar_ce_open(const psc_ar_ce_args_t &a, psc_ar_ctrl_t *ctrl, unsigned *seq)
{
    *seq = *(volatile unsigned *)&ctrl->seq;
    return *(volatile unsigned *)&ctrl->err == 0 && !psc_ar_ce_abort_seen(a, ctrl, *seq);
}

extern "C" __global__ void __launch_bounds__(PSC_AR_LANES) psc_ar_ce_add(psc_ar_ce_args_t a)
{
    psc_ar_ctrl_t *ctrl = reinterpret_cast<psc_ar_ctrl_t *>(a.ctrl);
    __shared__ int go;
    __shared__ unsigned seq;
    const u64 nvec = (a.bytes + 15) / 16, stride = (u64)gridDim.x * blockDim.x;

    if (threadIdx.x == 0) {
        int who = -1;

        go = psc_ar_ce_open(a, ctrl, &seq);
        for (unsigned r = 0; r < a.nranks && go; r++)
            if (r != a.rank &&
                !(go = psc_ar_ce_poll(psc_ar_ce_flag(a.lbuf[r], a.ce_off, PSC_AR_CE_SENT(a.rank, a.slot)),
                                      PSC_AR_CE_SENT_MARK, 1, a.timeout_ns, &ctrl->err,
                                      psc_ar_ce_flag(a.lbuf[a.rank], a.ce_off, PSC_AR_CE_ABORT), (int)r, &who)))
                psc_ar_ce_give_up(a, ctrl, who, seq);
    }
    __syncthreads();
    if (!go)
        return;
    for (u64 v = (u64)blockIdx.x * blockDim.x + threadIdx.x; a.gather && v < nvec; v += stride)
        for (unsigned r = 0; r < a.nranks; r++) { /* whole vectors, every address 16-byte aligned */
            const uint4 *src = reinterpret_cast<const uint4 *>(r == a.rank ? reinterpret_cast<const unsigned char *>(
                                                                                 a.send)
                                                                           : psc_ar_ce_slot(a, a.rank, r));
            uint4 *dst = reinterpret_cast<uint4 *>(a.recv + (u64)r * a.part_bytes);

            if (src != dst) /* its own chunk in place: already there */
                dst[v] = src[v];
        }
    for (u64 v0 = (u64)blockIdx.x * blockDim.x + threadIdx.x; !a.gather && v0 < nvec; v0 += PSC_AR_BATCH * stride) {
        float acc[PSC_AR_BATCH][8];

        for (unsigned r = 0; r < a.nranks; r++) {
            const unsigned char *src = r == a.rank ? reinterpret_cast<const unsigned char *>(a.send)
                                                   : psc_ar_ce_slot(a, a.rank, r);
            uint4 y[PSC_AR_BATCH];

#pragma unroll
            for (unsigned u = 0; u < PSC_AR_BATCH; u++)
                if (v0 + u * stride < nvec)
                    y[u] = psc_ar_input(src, v0 + u * stride, a.bytes);
#pragma unroll
            for (unsigned u = 0; u < PSC_AR_BATCH; u++)
                if (v0 + u * stride < nvec)
                    psc_ar_add(acc[u], y[u], a.dtype, r == 0);
        }
#pragma unroll
        for (unsigned u = 0; u < PSC_AR_BATCH; u++)
            if (v0 + u * stride < nvec)
                psc_ar_output(reinterpret_cast<unsigned char *>(a.recv), v0 + u * stride, a.bytes,
                              psc_ar_round(acc[u], a.dtype));
    }
    /* the last block done (every block has read its slots) hands the slots back; a block that finds a peer's
       abort after its reads (its slots may have been overrun) gives up instead, and nothing is handed back */
    __syncthreads();
    if (threadIdx.x == 0) {
        if (psc_ar_ce_abort_seen(a, ctrl, seq))
            return;
        __threadfence();
        if (atomicAdd(&ctrl->ce_arrived, 1u) != gridDim.x - 1)
            return;
        __threadfence();
        ctrl->ce_arrived = 0;
        for (unsigned r = 0; r < a.nranks; r++)
            if (r != a.rank)
                *(volatile unsigned *)psc_ar_ce_flag(a.lbuf[r], a.ce_off, PSC_AR_CE_SENT(a.rank, a.slot)) =
                    PSC_AR_SENTINEL;
        /* the marks set back before any sender may mark this slot again (it does once the half is free) */
        __threadfence_system();
        for (unsigned r = 0; a.free_half && r < a.nranks; r++)
            if (r != a.rank)
                *(volatile unsigned *)psc_ar_ce_flag(a.lbuf[r], a.ce_off,
                                                     PSC_AR_CE_FREE(a.rank, a.slot / PSC_AR_CE_HALF)) = 1u;
        if (a.last)
            *(volatile unsigned *)&ctrl->seq = seq + 1;
    }
}

/* One thread (a block of one). */
extern "C" __global__ void psc_ar_ce_wait(psc_ar_ce_args_t a)
{
    psc_ar_ctrl_t *ctrl = reinterpret_cast<psc_ar_ctrl_t *>(a.ctrl);
    const unsigned half = a.slot / PSC_AR_CE_HALF;
    unsigned seq;
    int who = -1;

    if (!psc_ar_ce_open(a, ctrl, &seq))
        return;
    for (unsigned r = 0; r < a.nranks; r++) {
        unsigned *w = psc_ar_ce_flag(a.lbuf[a.rank], a.ce_off, PSC_AR_CE_FREE(r, half));

        if (r == a.rank)
            continue;
        if (!psc_ar_ce_poll(w, 0u, 0, a.timeout_ns, &ctrl->err,
                            psc_ar_ce_flag(a.lbuf[a.rank], a.ce_off, PSC_AR_CE_ABORT), (int)r, &who)) {
            psc_ar_ce_give_up(a, ctrl, who, seq);
            return;
        }
        *(volatile unsigned *)w = 0u; /* taken: rank r frees it again after this half's next chunks */
    }
}
