/*
 * The two-shot all-reduce (reduce-scatter, then all-gather), included by
 * psc_allreduce.cuh. For many ranks' large calls: rank r owns part r of each
 * piece (the piece cut in nranks parts of part_bytes), receives every other
 * rank's part r (pushed into its reduce-scatter buffer), adds all in rank
 * order (its own from its input) and rounds once, then pushes that sum into
 * every other rank's all-gather buffer and takes theirs: each rank sends 2
 * (n - 1) / n of the data where the one-shot sends n - 1 times it. The same
 * scheme as the one-shot: the data is its own flag, thread t of every rank
 * handles the same vectors, four buffers of each kind rotate piece by piece
 * (the two-shot's own index), piece k clears piece k - 1's, reused three
 * pieces later at the earliest (the one-shot's comment says why that is
 * safe). A sum word equal to the sentinel is written and pushed as another
 * NaN, so every rank's result is the same bits.
 */

/* Bytes of part p of a piece of pbytes cut in parts of part bytes: the last parts may be short or empty. */
static __device__ __forceinline__ u64 psc_ar_part_len(u64 pbytes, u64 part, unsigned p)
{
    u64 at = (u64)p * part;

    return at >= pbytes ? 0 : pbytes - at < part ? pbytes - at : part;
}

extern "C" __global__ void __launch_bounds__(PSC_AR_THREADS) psc_ar_twoshot(psc_ar_args_t a)
{
    psc_ar_ctrl_t *ctrl = reinterpret_cast<psc_ar_ctrl_t *>(a.ctrl);
    volatile unsigned *err = &ctrl->err;
    const u64 bytes = a.count * (a.dtype == PSC_DT_FLOAT32 ? 4 : 2), piece = a.part_bytes * a.nranks;
    const u64 pieces = bytes > piece ? (bytes + piece - 1) / piece : 1;
    const u64 last_bytes = bytes - (pieces - 1) * piece;
    const u64 stride = (u64)gridDim.x * PSC_AR_LANES, first = psc_ar_first();
    const u64 region = (u64)PSC_AR_BUFS * a.nranks * a.slot_bytes; /* the two-shot's: RS, then AG */
    const u64 kind = (u64)PSC_AR_BUFS * a.nranks * a.part_bytes;
    const u64 last_part = ((last_bytes + a.nranks - 1) / a.nranks + 15) / 16 * 16; /* the last piece's part */
    unsigned char *own = reinterpret_cast<unsigned char *>(a.lbuf[a.rank]) + region;

    psc_ar_after_previous();
    const psc_ar_state st = psc_ar_start(ctrl, PSC_AR_KIND_TWOSHOT, pieces, (unsigned)last_part);
    const unsigned seq = st.seq;
    u64 clear_vec = st.clear_vec;
    unsigned b = st.buf;

    if (st.dead) /* the buffers' states are unknown: nothing runs until the group is re-made */
        return;
    for (u64 k = 0; k < pieces; k++, b = b + 1 == PSC_AR_BUFS ? 0 : b + 1) {
        const unsigned old = b == 0 ? PSC_AR_BUFS - 1 : b - 1;
        const u64 pbytes = k + 1 < pieces ? piece : last_bytes;
        const u64 part = ((pbytes + a.nranks - 1) / a.nranks + 15) / 16 * 16; /* a full piece's: part_bytes */
        const unsigned char *in = reinterpret_cast<const unsigned char *>(a.send) + k * piece;
        unsigned char *out = reinterpret_cast<unsigned char *>(a.recv) + k * piece;
        const u64 mine = psc_ar_part_len(pbytes, part, a.rank), mine_vec = (mine + 15) / 16;
        u64 deadline = 0;
        int ok = 1;

        if (k > 0) /* piece k - 1's clearing and reads before piece k's pushes, across GPUs (see the one-shot) */
            __threadfence_system();
        /* reduce-scatter, push: part p of the input into rank p's buffer, this rank's slot */
        for (unsigned p = 0; p < a.nranks; p++) {
            const u64 len = psc_ar_part_len(pbytes, part, p), nvec = (len + 15) / 16;

            for (u64 v = first; p != a.rank && v < nvec; v += stride)
                psc_ar_st(reinterpret_cast<unsigned char *>(a.lbuf[p]) + region +
                              ((u64)b * a.nranks + a.rank) * a.part_bytes + 16 * v,
                          psc_ar_sendable(psc_ar_input(in + p * part, v, len)));
        }
        /* the previous piece's buffers, both kinds, this thread's vectors */
        for (u64 v = first; v < clear_vec; v += stride)
            for (unsigned r = 0; r < a.nranks; r++)
                if (r != a.rank) {
                    const uint4 s = make_uint4(PSC_AR_SENTINEL, PSC_AR_SENTINEL, PSC_AR_SENTINEL, PSC_AR_SENTINEL);

                    psc_ar_st(own + ((u64)old * a.nranks + r) * a.part_bytes + 16 * v, s);
                    psc_ar_st(own + kind + ((u64)old * a.nranks + r) * a.part_bytes + 16 * v, s);
                }
        /* reduce this rank's part in rank order, then all-gather it: out, and every other rank's buffer */
        for (u64 v = first; v < mine_vec && ok; v += stride) {
            float acc[8];
            uint4 z;

            for (unsigned r = 0; r < a.nranks && ok; r++) {
                uint4 y;

                if (r == a.rank)
                    y = psc_ar_sendable(psc_ar_input(in + a.rank * part, v, mine));
                else if (!(ok = psc_ar_wait(own + ((u64)b * a.nranks + r) * a.part_bytes + 16 * v, &y, &deadline,
                                            a.timeout_ns, err))) {
                    psc_ar_gave_up(ctrl, r, seq);
                    break;
                }
                psc_ar_add(acc, y, a.dtype, r == 0);
            }
            if (!ok)
                break;
            z = psc_ar_sendable(psc_ar_round(acc, a.dtype));
            for (unsigned p = 0; p < a.nranks; p++)
                if (p != a.rank)
                    psc_ar_st(reinterpret_cast<unsigned char *>(a.lbuf[p]) + region + kind +
                                  ((u64)b * a.nranks + a.rank) * a.part_bytes + 16 * v,
                              z);
            psc_ar_output(out + a.rank * part, v, mine, z);
        }
        /* all-gather, take: every other rank's part */
        for (unsigned p = 0; p < a.nranks && ok; p++) {
            const u64 len = psc_ar_part_len(pbytes, part, p), nvec = (len + 15) / 16;

            for (u64 v = first; p != a.rank && v < nvec && ok; v += stride) {
                uint4 y;

                if (!(ok = psc_ar_wait(own + kind + ((u64)b * a.nranks + p) * a.part_bytes + 16 * v, &y, &deadline,
                                       a.timeout_ns, err)))
                    psc_ar_gave_up(ctrl, p, seq);
                else
                    psc_ar_output(out + p * part, v, len, y);
            }
        }
        if (!ok)
            break;
        clear_vec = (part + 15) / 16;
    }
}
