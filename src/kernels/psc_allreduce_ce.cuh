/*
 * The copy-engine path's kernels (included by psc_allreduce.cuh; the host's
 * side and the reasons in src/lib/allreduce/allreduce_ce.c). Each rank's copy
 * engine pushes a chunk of its input into a slot of every other rank's
 * scratch, then its stream marks that chunk sent, in the rank's own memory.
 * psc_ar_ce_add, on the caller's stream, once per chunk: waits until every
 * other rank marked its chunk sent, adds all in rank order (fp32, one
 * rounding: bit-identical everywhere), and its last block to finish sets
 * those marks back and, after the last chunk of a half of the slots, tells
 * the senders that half is free. psc_ar_ce_wait, on a third stream, before
 * the copies of each half: waits until every other rank freed this rank's
 * chunks in that half, and takes the word. Both give up past the timeout as
 * the other kernels do (ctrl->err: every later kernel of the group returns
 * at once).
 */

static __device__ __forceinline__ unsigned psc_ar_ld_acquire(const unsigned *p)
{
    unsigned v;

    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

/* Wait until the word at p is (want) or is not (!want) `value`; 0 past the deadline or once ctrl->err is set. */
static __device__ int psc_ar_ce_poll(const unsigned *p, unsigned value, int want, u64 timeout_ns,
                                     const volatile unsigned *err)
{
    u64 deadline = 0;

    for (unsigned spins = 0;; spins++) {
        if ((psc_ar_ld_acquire(p) == value) == want)
            return 1;
        if ((spins & 255) == 255) {
            u64 now = psc_globaltimer();

            if (!deadline)
                deadline = now + timeout_ns;
            if (*err || now > deadline)
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
    const unsigned sender = s < r ? s : s - 1;

    return reinterpret_cast<const unsigned char *>(a.lbuf[r] + a.ce_off + PSC_AR_CE_FLAGS) +
           ((u64)sender * PSC_AR_CE_SLOTS + a.slot) * a.chunk_bytes;
}

extern "C" __global__ void __launch_bounds__(PSC_AR_LANES) psc_ar_ce_add(psc_ar_ce_args_t a)
{
    psc_ar_ctrl_t *ctrl = reinterpret_cast<psc_ar_ctrl_t *>(a.ctrl);
    __shared__ int go;
    __shared__ unsigned seq;
    const u64 nvec = (a.bytes + 15) / 16, stride = (u64)gridDim.x * blockDim.x;

    if (threadIdx.x == 0) {
        seq = *(volatile unsigned *)&ctrl->seq;
        go = *(volatile unsigned *)&ctrl->err == 0;
        for (unsigned r = 0; r < a.nranks && go; r++)
            if (r != a.rank &&
                !(go = psc_ar_ce_poll(psc_ar_ce_flag(a.lbuf[r], a.ce_off, PSC_AR_CE_SENT(a.rank, a.slot)),
                                      PSC_AR_CE_SENT_MARK, 1, a.timeout_ns, &ctrl->err)))
                psc_ar_gave_up(ctrl, r, seq);
    }
    __syncthreads();
    if (!go)
        return;
    for (u64 v0 = (u64)blockIdx.x * blockDim.x + threadIdx.x; v0 < nvec; v0 += PSC_AR_BATCH * stride) {
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
    /* the last block done (every block has read its slots) hands the slots back */
    __syncthreads();
    if (threadIdx.x == 0) {
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

extern "C" __global__ void psc_ar_ce_wait(psc_ar_ce_args_t a)
{
    psc_ar_ctrl_t *ctrl = reinterpret_cast<psc_ar_ctrl_t *>(a.ctrl);
    const unsigned half = a.slot / PSC_AR_CE_HALF;

    if (threadIdx.x != 0 || *(volatile unsigned *)&ctrl->err)
        return;
    for (unsigned r = 0; r < a.nranks; r++) {
        unsigned *w = psc_ar_ce_flag(a.lbuf[a.rank], a.ce_off, PSC_AR_CE_FREE(r, half));

        if (r == a.rank)
            continue;
        if (!psc_ar_ce_poll(w, 0u, 0, a.timeout_ns, &ctrl->err)) {
            psc_ar_gave_up(ctrl, r, *(volatile unsigned *)&ctrl->seq);
            return;
        }
        *(volatile unsigned *)w = 0u; /* taken: rank r frees it again after this half's next chunks */
    }
}
