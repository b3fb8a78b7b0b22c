/*
 * What the host and the all-reduce kernels share (src/kernels/psc_allreduce.cuh):
 * the kernels' argument block and each rank's control words. Plain
 * C, included by both sides, as pattern/pattern.h is.
 */
#ifndef PSC_ALLREDUCE_AR_ARGS_H
#define PSC_ALLREDUCE_AR_ARGS_H

#include <stdint.h>

#define PSC_AR_MAX_RANKS 8
#define PSC_AR_BUFS 4        /* buffers of each kind, rotating piece by piece (see psc_allreduce.cuh) */
#define PSC_AR_SENTINEL 0xffffffffu  /* "not yet written": a 32-bit word no pushed input carries */
#define PSC_AR_NAN_WORD 0x7fff7fffu  /* what an input word equal to the sentinel is pushed as: NaN as fp32,
                                        two NaNs as fp16 or bf16 (a NaN stays a NaN through a sum) */
#define PSC_AR_LANES 512                  /* threads of a block that move data, a vector each per stride */
#define PSC_AR_THREADS (PSC_AR_LANES + 32) /* and one more warp, whose first thread keeps the books */
#define PSC_AR_BATCH 2                    /* vectors a thread has in flight at once (its loads, then stores) */
#define PSC_AR_ERR_TIMEOUT 1u

/*
 * One rank's control words, in its GPU's memory (the kernels advance them: graph replays see each call).
 * A call reads the first 16 bytes and 8 more (clear and clear2; the all-gather's: ag and pad) in two loads and
 * moves them on at its start.
 */
typedef struct {
    uint32_t seq;         /* calls done (for the error report: it may wrap) */
    uint32_t err;         /* 0, or PSC_AR_ERR_TIMEOUT: a peer's data never came; later calls do nothing */
    uint32_t buf;         /* the one-shot's next buffer, 0..PSC_AR_BUFS-1, moved on by each piece (not a count) */
    uint32_t buf2;        /* the two-shot's next buffer (its buffers rotate apart from the one-shot's) */
    uint32_t clear;       /* the one-shot's last piece's bytes per rank slot (at most a slot), cleared next */
    uint32_t clear2;      /* the two-shot's last piece's bytes per part, cleared next */
    uint32_t arrived;     /* blocks of the call in progress that have read the words */
    uint32_t err_rank;    /* the rank waited for */
    uint32_t err_seq;     /* in which call */
    uint32_t ce_arrived;  /* the copy-engine path's blocks done with the chunk in progress (allreduce_ce.c) */
    uint32_t ag;          /* the all-gather's next piece number, 0..PSC_AG_MOD-1: its buffer (mod PSC_AR_BUFS) and,
                             plus one, the flag its lines carry (psc_allgather.cuh) */
    uint32_t pad;
} psc_ar_ctrl_t;

/*
 * The all-reduce kernels' argument (by value). Rank r's buffers at lbuf[r]: the one-shot's PSC_AR_BUFS x
 * nranks slots of slot_bytes, then the two-shot's reduce-scatter and all-gather buffers, PSC_AR_BUFS x nranks
 * parts of part_bytes each.
 */
typedef struct {
    uint64_t lbuf[PSC_AR_MAX_RANKS]; /* each rank's buffers (above), on its GPU */
    uint64_t ctrl;                   /* this rank's psc_ar_ctrl_t */
    uint64_t send, recv;             /* this rank's input and output (16-byte aligned; equal: in place) */
    uint64_t count;                  /* elements */
    uint64_t slot_bytes;             /* bytes of one rank's slot (a multiple of 16) */
    uint64_t part_bytes;             /* the two-shot's part: slot_bytes / nranks rounded up to 16 */
    uint64_t timeout_ns;             /* a thread's time to wait for its peers' data, from its first long wait */
    uint64_t ag_off;                 /* the all-gather's buffers in every rank's: PSC_AR_BUFS x nranks slots */
    uint64_t ag_slot;                /* of ag_slot bytes, each line 8 bytes of data and two flags */
    uint32_t nranks, rank, dtype, pad; /* dtype: psc_dtype_t's PSC_DT_FLOAT32, _FLOAT16 or _BFLOAT16 */
} psc_ar_args_t;

/*
 * The all-gather (src/kernels/psc_allgather.cuh): a rank's data goes to every other rank in lines of 16 bytes,
 * {data word 0, flag, data word 1, flag}, the flag the piece's number plus one (never 0, what a line is cleared
 * to once read, nor the sentinel the buffers start with): no word of the data is taken for a flag, so every byte
 * arrives as it was sent.
 */
#define PSC_AG_MOD 0xfffffffcu /* piece numbers wrap here (a multiple of PSC_AR_BUFS: the buffers keep their turn) */
#define PSC_AG_LINE_DATA 8u    /* data bytes of a 16-byte line */

/*
 * The copy-engine path (src/kernels/psc_allreduce_ce.cuh, src/lib/allreduce/allreduce_ce.c): each rank's copy
 * engine pushes its input, chunk by chunk, into a slot of every other rank's scratch; kernels add. In each
 * rank's buffers at ce_off: the flags (PSC_AR_CE_FLAGS bytes), then the scratch: for each other rank s (in rank
 * order, this rank left out), PSC_AR_CE_SLOTS slots of chunk_bytes. Every flag lives in its writer's sender's
 * memory: sent[r][slot] (this rank's chunk is in rank r's slot: 1, written by this rank's stream after its
 * copy; set back to the sentinel by rank r's kernel) and free[r][half] (rank r has added what this rank put in
 * that half of its slots: 1, written by rank r's kernel; taken, 0, by this rank's waiting kernel; the
 * sentinel, as filled at creation, also means free).
 */
#define PSC_AR_CE_SLOTS 4                  /* slots per sender, in two halves, one chunk each */
#define PSC_AR_CE_HALF (PSC_AR_CE_SLOTS / 2)
#define PSC_AR_CE_FLAGS 4096               /* bytes of flags before the scratch */
#define PSC_AR_CE_SENT(r, slot) (4u * ((unsigned)(r) * PSC_AR_CE_SLOTS + (unsigned)(slot)))
#define PSC_AR_CE_FREE(r, half) (256u + 4u * ((unsigned)(r) * 2u + (unsigned)(half)))
#define PSC_AR_CE_SENT_MARK 1u
/* Where rank s's chunk lands in rank r's buffers, slot `slot` (s != r; bytes from those buffers' start): rank r's
   scratch holds no slots of its own, so the senders after r move down one. */
#define PSC_AR_CE_SLOT_AT(ce_off, chunk, r, s, slot)                                                                  \
    ((uint64_t)(ce_off) + PSC_AR_CE_FLAGS +                                                                           \
     ((uint64_t)((s) < (r) ? (s) : (s) - 1) * PSC_AR_CE_SLOTS + (uint64_t)(slot)) * (uint64_t)(chunk))
/* In each rank's flags: a peer that gave up writes PSC_AR_CE_ABORT_MARK | its rank here, and every kernel of the
   path on this rank then gives up too (its copies may have overrun this rank's slots). */
#define PSC_AR_CE_ABORT 512u
#define PSC_AR_CE_ABORT_MARK 0x41420000u
#define PSC_AR_CE_ABORTED(w) (((w) & 0xffff0000u) == PSC_AR_CE_ABORT_MARK)

/* One kernel's argument on the copy-engine path: a chunk's addition (psc_ar_ce_add) or a wait (psc_ar_ce_wait).
   A gathering addition (an all-gather's, gather 1) adds nothing: it puts rank r's chunk (its own from send, the
   others' from their slots) at recv + r x part_bytes, whole 16-byte vectors. */
typedef struct {
    uint64_t lbuf[PSC_AR_MAX_RANKS]; /* each rank's buffers, as in psc_ar_args_t */
    uint64_t ctrl;                   /* this rank's psc_ar_ctrl_t */
    uint64_t send, recv;             /* this chunk of this rank's input and output (gather: of part 0 of recv) */
    uint64_t bytes;                  /* of the chunk */
    uint64_t ce_off;                 /* where the path's flags begin in every rank's buffers */
    uint64_t chunk_bytes;            /* a slot's bytes */
    uint64_t part_bytes;             /* gather: the parts' stride in recv */
    uint64_t timeout_ns;
    uint32_t nranks, rank, dtype;
    uint32_t slot;                   /* the chunk's slot, 0..PSC_AR_CE_SLOTS-1 (its half: slot / PSC_AR_CE_HALF) */
    uint32_t free_half;              /* add: 1, the half's slots are free once this chunk is added (tell its senders) */
    uint32_t last;                   /* add: 1, the call's last chunk (the call count moves on) */
    uint32_t gather;                 /* add: 1, an all-gather's (above) */
} psc_ar_ce_args_t;

#endif
