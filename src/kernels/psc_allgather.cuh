/*
 * p2pscope's own all-gather (psc_allreduce_all_gather), included by
 * psc_allreduce.cuh. Each rank pushes its part, 8 bytes a line, into its
 * slot of every other rank's all-gather buffer, each 16-byte line {data
 * word, flag, data word, flag} written by one store (NCCL's LL lines: a
 * store split in two 8-byte halves still carries a flag in each), copies
 * its part to its own place in recv (not in place), then waits in its own
 * buffer for every other rank's lines and copies them to theirs. The flag
 * is the piece's number plus one (ar_args.h): a line has arrived when both
 * its flags are this piece's, so no data word is taken for a flag and every
 * byte arrives as it was sent, bit for bit (an all-reduce may turn an input
 * word equal to its sentinel into a NaN; an all-gather must not). The
 * reader clears each line it took (a store to its own memory): a line
 * holds nothing or the piece being sent, never an old piece's data whose
 * flag a later number could match (piece numbers wrap; a large call's
 * lines could otherwise sit untouched under many small calls until then).
 * A call larger than a slot's half goes in pieces; piece numbers, and with
 * them the four buffers, rotate across calls. A thread pushes its lines of
 * piece k only after it has taken (and cleared) its lines of piece k - 1
 * and fenced, and thread t of every rank handles the
 * same lines of every piece of a call (the same grid everywhere): a peer
 * then pushes piece k + 4 into the buffer this rank read piece k from only
 * after it took a line this rank pushed after reading its own lines of
 * piece k (in the same call, or in a call after this rank's kernel ended).
 * Only a call's last piece is short, so such a line always exists (the
 * one-shot's comment gives the same argument for its buffers).
 */

/* 8 bytes of a part at in + 8 j, a part of `bytes` (a multiple of 2, from an address 2-byte aligned at least):
   one load where aligned and whole, else four 2-byte loads, zeros past the end. */
static __device__ __forceinline__ uint2 psc_ag_in(const unsigned char *in, u64 j, u64 bytes)
{
    const unsigned char *p = in + 8 * j;
    const unsigned short *h = reinterpret_cast<const unsigned short *>(p);
    unsigned w[2] = {0, 0};

    if (8 * j + 8 <= bytes && (reinterpret_cast<uintptr_t>(p) & 7) == 0)
        return *reinterpret_cast<const uint2 *>(p);
    for (unsigned k = 0; k < 4; k++)
        if (8 * j + 2 * k + 2 <= bytes)
            w[k / 2] |= (unsigned)h[k] << (16 * (k % 2));
    return make_uint2(w[0], w[1]);
}

/* The 8 bytes d to out + 8 j, a part of `bytes`: one store where aligned and whole, else 2-byte stores. */
static __device__ __forceinline__ void psc_ag_out(unsigned char *out, u64 j, u64 bytes, uint2 d)
{
    unsigned char *p = out + 8 * j;
    unsigned short *h = reinterpret_cast<unsigned short *>(p);
    const unsigned w[2] = {d.x, d.y};

    if (8 * j + 8 <= bytes && (reinterpret_cast<uintptr_t>(p) & 7) == 0) {
        *reinterpret_cast<uint2 *>(p) = d;
        return;
    }
    for (unsigned k = 0; k < 4; k++)
        if (8 * j + 2 * k + 2 <= bytes)
            h[k] = (unsigned short)(w[k / 2] >> (16 * (k % 2)));
}

static __device__ __forceinline__ int psc_ag_arrived(uint4 v, unsigned flag)
{
    return v.y == flag && v.w == flag;
}

/* Wait for the line at p to carry flag; give up (0) past the deadline or once another thread of this rank gave
   up (ctrl->err set), as psc_ar_wait. */
static __device__ __forceinline__ int psc_ag_wait(const unsigned char *p, unsigned flag, uint4 *out, u64 *deadline,
                                                  u64 timeout_ns, const volatile unsigned *err)
{
    for (unsigned spins = 0;; spins++) {
        uint4 v = psc_ar_ld(p);

        if (psc_ag_arrived(v, flag)) {
            *out = v;
            return 1;
        }
        if ((spins & 1023) == 1023) {
            u64 now = psc_globaltimer();

            if (!*deadline)
                *deadline = now + timeout_ns;
            if (*err || now > *deadline)
                return 0;
        }
    }
}

/* This thread's lines of piece k (pbytes of data from in) into buffer b of every other rank, this rank's slot,
   and (out: not in place) to this rank's own place in recv; PSC_AR_BATCH loads in flight before their stores. */
static __device__ __forceinline__ void psc_ag_push(const psc_ar_args_t &a, unsigned b, unsigned flag,
                                                   const unsigned char *in, unsigned char *out, u64 pbytes, u64 first,
                                                   u64 stride)
{
    const u64 nline = (pbytes + PSC_AG_LINE_DATA - 1) / PSC_AG_LINE_DATA;
    const u64 at = a.ag_off + ((u64)b * a.nranks + a.rank) * a.ag_slot;

    for (u64 j0 = first; j0 < nline; j0 += PSC_AR_BATCH * stride) {
        uint2 d[PSC_AR_BATCH];

#pragma unroll
        for (unsigned u = 0; u < PSC_AR_BATCH; u++)
            if (j0 + u * stride < nline)
                d[u] = psc_ag_in(in, j0 + u * stride, pbytes);
#pragma unroll
        for (unsigned u = 0; u < PSC_AR_BATCH; u++) {
            const u64 j = j0 + u * stride;

            if (j >= nline)
                continue;
            for (unsigned r = 0; r < a.nranks; r++)
                if (r != a.rank)
                    psc_ar_st(reinterpret_cast<unsigned char *>(a.lbuf[r]) + at + 16 * j,
                              make_uint4(d[u].x, flag, d[u].y, flag));
            if (out)
                psc_ag_out(out, j, pbytes, d[u]);
        }
    }
}

/* This thread's lines of piece k from every other rank's slot of this rank's buffer b, each to its rank's place
   in recv (off bytes into the rank's part) and cleared; 0 once a wait gave up (recorded). */
static __device__ __forceinline__ int psc_ag_take(const psc_ar_args_t &a, psc_ar_ctrl_t *ctrl, unsigned seq,
                                                  unsigned b, unsigned flag, u64 off, u64 pbytes, u64 first,
                                                  u64 stride)
{
    const u64 nline = (pbytes + PSC_AG_LINE_DATA - 1) / PSC_AG_LINE_DATA;
    const u64 part = a.count * (a.dtype == PSC_DT_FLOAT32 ? 4 : 2);
    unsigned char *own = reinterpret_cast<unsigned char *>(a.lbuf[a.rank]) + a.ag_off;
    u64 deadline = 0; /* set by this piece's first wait that lasts */

    for (unsigned r = 0; r < a.nranks; r++) {
        unsigned char *slot = own + ((u64)b * a.nranks + r) * a.ag_slot;
        unsigned char *out = reinterpret_cast<unsigned char *>(a.recv) + r * part + off;

        for (u64 j0 = first; r != a.rank && j0 < nline; j0 += PSC_AR_BATCH * stride) {
            uint4 y[PSC_AR_BATCH];

#pragma unroll
            for (unsigned u = 0; u < PSC_AR_BATCH; u++)
                if (j0 + u * stride < nline)
                    y[u] = psc_ar_ld(slot + 16 * (j0 + u * stride));
#pragma unroll
            for (unsigned u = 0; u < PSC_AR_BATCH; u++) {
                const u64 j = j0 + u * stride;

                if (j >= nline)
                    continue;
                if (!psc_ag_arrived(y[u], flag) &&
                    !psc_ag_wait(slot + 16 * j, flag, &y[u], &deadline, a.timeout_ns, &ctrl->err)) {
                    psc_ar_gave_up(ctrl, r, seq);
                    return 0;
                }
                psc_ag_out(out, j, pbytes, make_uint2(y[u].x, y[u].z));
                psc_ar_st(slot + 16 * j, make_uint4(0, 0, 0, 0));
            }
        }
    }
    return 1;
}

/*
 * The all-gather: count elements of dtype from each rank's send to part `rank` (from rank x count elements) of
 * every rank's recv; in place where send is that part already.
 */
extern "C" __global__ void __launch_bounds__(PSC_AR_THREADS) psc_ag_oneshot(psc_ar_args_t a)
{
    psc_ar_ctrl_t *ctrl = reinterpret_cast<psc_ar_ctrl_t *>(a.ctrl);
    const u64 bytes = a.count * (a.dtype == PSC_DT_FLOAT32 ? 4 : 2), piece = a.ag_slot / 2;
    const u64 pieces = bytes > piece ? (bytes + piece - 1) / piece : 1;
    const u64 stride = (u64)gridDim.x * PSC_AR_LANES, first = psc_ar_first();
    const unsigned char *send = reinterpret_cast<const unsigned char *>(a.send);
    unsigned char *mine = reinterpret_cast<unsigned char *>(a.recv) + a.rank * bytes;

    psc_ar_after_previous();
    const psc_ar_state st = psc_ar_start(ctrl, PSC_AR_KIND_AG, pieces, 0);

    if (st.dead) /* a call before gave up: nothing runs until the group is re-made */
        return;
    for (u64 k = 0; k < pieces; k++) {
        const unsigned num = (unsigned)(((u64)st.buf + k) % PSC_AG_MOD), flag = num + 1;
        const u64 pbytes = k + 1 < pieces ? piece : bytes - k * piece;

        if (k > 0) /* this thread's lines of piece k - 1 taken and cleared (above) before its pushes of piece k */
            __threadfence_system();
        psc_ag_push(a, num % PSC_AR_BUFS, flag, send + k * piece, send == mine ? NULL : mine + k * piece, pbytes,
                    first, stride);
        if (!psc_ag_take(a, ctrl, st.seq, num % PSC_AR_BUFS, flag, k * piece, pbytes, first, stride))
            return;
    }
}
