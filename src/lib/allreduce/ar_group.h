/*
 * A group of the all-reduce (allreduce.c makes it from GPUs of this process,
 * allreduce_join.c from one GPU in each of several processes): what both
 * and the calls share.
 */
#ifndef PSC_ALLREDUCE_AR_GROUP_H
#define PSC_ALLREDUCE_AR_GROUP_H

#include "allreduce/ar_args.h"
#include "internal.h"

#define PSC__AR_MAX_BYTES (1ull << 40)  /* the largest call per rank */
#define PSC__AR_SLOT_MAX (8ull << 20)   /* the largest slot: larger calls go through it in pieces */
#define PSC__AR_TWOSHOT_MIN (256ull << 10) /* the two-shot from here on, for 3 ranks or more */
#define PSC__AR_CE_FROM (4ull << 20)      /* the copy-engine path from here on, for 2 ranks (allreduce_ce.c) */
#define PSC__AR_CE_CHUNK (8ull << 20)     /* its chunk, divided among the other ranks */
#define PSC__AR_AG_PIECE_MAX (4ull << 20) /* the all-gather's largest piece per rank (its slot: twice that) */

/* Local rank i's events on the copy-engine path: the fork, a half's wait before its copies, a chunk's copies and
   marks before its addition, the joins, and each half's last addition in a call before its next wait (HALF0 +
   half). */
enum { PSC__CE_FORK, PSC__CE_FREED, PSC__CE_COPIED, PSC__CE_JOIN_COPY, PSC__CE_JOIN_WAIT, PSC__CE_HALF0 };
#define PSC__AR_CE_EVENTS (PSC__CE_HALF0 + PSC_AR_CE_SLOTS / PSC_AR_CE_HALF)

enum { PSC__AR_ONESHOT = 1, PSC__AR_TWOSHOT = 2, PSC__AR_COPY = 3, PSC__AR_RS = 4 /* a reduce-scatter */,
       PSC__AR_AG = 5 /* an all-gather, its way by size */, PSC__AR_AG_KERNEL = 6 /* by its kernel */,
       PSC__AR_AG_COPY = 7 /* by the copy engines, where the group can take them */,
       PSC__AR_RS_KERNEL = 8 /* a reduce-scatter by its kernel */,
       PSC__AR_RS_COPY = 9 /* by the copy engines and a local sum, where the group can take them */ };

struct psc_allreduce {
    psc_context_t *ctx;
    struct psc_allreduce *prev, *next;  /* ctx->allreduces */
    int n;                              /* ranks in the group */
    int nlocal, first;                  /* ranks first..first+nlocal-1 are this process's */
    int joined;                         /* made by psc_allreduce_join: the buffers are shares */
    psc_ar_procs_t procs;               /* a joined group's channel, for the meeting before its buffers go */
    int meet;                           /* a joined group: the processes meet at destroy (they are in step) */
    int keep_own;                       /* a joined group: leave this process's buffers to the context */
    int dev[PSC_AR_MAX_RANKS];          /* local rank i's GPU */
    uint64_t max_bytes;                 /* per rank and call, as asked */
    uint64_t slot_bytes;                /* max_bytes rounded up to 16, at most PSC__AR_SLOT_MAX */
    uint64_t part_bytes;                /* the two-shot's part: slot_bytes / n rounded up to 16 */
    CUdeviceptr lbuf[PSC_AR_MAX_RANKS]; /* rank r's buffers (every rank), as this process addresses them */
    CUdeviceptr ctrl[PSC_AR_MAX_RANKS]; /* local rank i's psc_ar_ctrl_t */
    psc_share_t *share[PSC_AR_MAX_RANKS]; /* a joined group: rank r's buffers, exported (own) or imported */
    signed char peer_was[PSC_AR_MAX_RANKS][PSC_AR_MAX_RANKS]; /* the caller's peer access before; -1 untouched */
    uint64_t last_nvec;                 /* the one-shot's last piece's vectors: its next call clears them */
    uint64_t last_part_vec;             /* the two-shot's last piece's part vectors: its next call clears them */
    int algo;                           /* PSC__AR_ONESHOT or PSC__AR_TWOSHOT for every call; 0 by size */
    int no_early;                       /* 1: plain launches, never programmatic dependent ones (tests) */
    unsigned per_thread;                /* vectors per thread the grid is sized for; 0 or 1: one (tests) */
    unsigned sms;                       /* blocks at most: the smallest SM count of the group's GPUs */
    uint64_t ce_off;                    /* the copy-engine path's flags and scratch in each rank's buffers */
    uint64_t ce_chunk;                  /* its chunk (a slot's bytes); 0: the group does not take the path */
    uint64_t ce_chunk_max;              /* the slots' bytes as made (tests may use less) */
    uint64_t ag_off, ag_slot;           /* the all-gather's buffers in each rank's, and a slot's bytes */
    struct CUstream_st *ce_copy[PSC_AR_MAX_RANKS], *ce_wait[PSC_AR_MAX_RANKS]; /* local rank i's streams */
    struct CUevent_st *ce_ev[PSC_AR_MAX_RANKS][PSC__AR_CE_EVENTS];            /* and events */
    int ce_on[PSC_AR_MAX_RANKS];        /* local rank i's GPU took a stream write (psc__ar_ce_setup) */
    int ce_captured;                    /* tests: 1, captured calls of several local ranks may take the path too */
    char broken[256];                   /* why calls are refused (a launch failed part way); "" none */
    int last_way;                       /* PSC_AR_WAY_* of the last call enqueued; 0 none */
    /* psc_allreduce_tune's (allreduce_tune.c) state, and its hooks: pointers, so no circle of calls */
    struct psc__ar_tune *tune;          /* NULL: untuned */
    int (*tune_route)(psc_allreduce_t *ar, int kind, void *const *recv, const void *const *send, size_t count,
                      int dtype, struct CUstream_st *const *streams, psc_status_t *st,
                      int *way); /* kind: 0 a sum, PSC__AR_RS, PSC__AR_AG. 1: NCCL took the call (*st); else *way: 0
                                    by size, PSC__AR_ONESHOT its kernels, PSC__AR_COPY its copy engines */
    void (*tune_free)(psc_allreduce_t *ar);
};

/* The slot for calls of up to max_bytes: rounded up to 16 B, at most PSC__AR_SLOT_MAX. */
uint64_t psc__ar_slot_bytes(uint64_t max_bytes);

/*
 * A rank's buffers: the one-shot's BUFS x n slots, then the two-shot's 2 x BUFS x n parts, then (large
 * groups) the copy-engine path's region, then the all-gather's BUFS x n slots; sets part_bytes, ce_off,
 * ce_chunk_max, ag_off and ag_slot.
 */
uint64_t psc__ar_buffer_bytes(psc_allreduce_t *ar);

/* The copy-engine path (allreduce_ce.c): its chunk for n ranks and calls up to max_bytes (0: none), its region. */
uint64_t psc__ar_ce_chunk(int n, uint64_t max_bytes);
uint64_t psc__ar_ce_region(int n, uint64_t chunk);

/* Local rank i's streams and events of the path, and whether its driver takes stream writes (ce_on[i]). */
psc_status_t psc__ar_ce_setup(psc_allreduce_t *ar, int i);
/* The path on (ce_chunk) where the group has its region and every local rank, and (on_everywhere) every other
   process of a joined group, can take it; else off for the whole group. */
void psc__ar_ce_agree(psc_allreduce_t *ar, int on_everywhere);
void psc__ar_ce_release(psc_allreduce_t *ar, int i);

/* A call on the path, every local rank enqueued (in the guard, arguments checked): kind 0 an all-reduce of bytes;
   PSC__AR_RS a reduce-scatter of parts of bytes (send: n parts; each rank pushes part r to rank r, and sums its
   own); PSC__AR_AG an all-gather of parts of bytes (each rank pushes its send to every peer's slots, and each
   rank's kernel puts every chunk into its part of recv: a joined group's, whole 16-byte vectors). */
psc_status_t psc__ar_ce_sum(psc_allreduce_t *ar, void *const *recv, const void *const *send, uint64_t bytes,
                            int dtype, struct CUstream_st *const *streams, uint64_t timeout_ns, int kind);

/*
 * A call of psc_allreduce_sum's, its arguments checked (count > 0), enqueued one way: PSC__AR_RS a
 * reduce-scatter's (psc_allreduce_reduce_scatter: count a part's) by size, _RS_KERNEL by the one-shot kernel's
 * protocol, _RS_COPY by the copy engines where the group has them; PSC__AR_AG an all-gather's
 * (psc_allreduce_all_gather: count a part's) by size, _AG_KERNEL, _AG_COPY; else a way
 * forced by a test first; else PSC__AR_ONESHOT the kernels by size without the copy engines, PSC__AR_COPY the
 * copy engines (where the group has them), 0 by size (psc__ar_algo). timeout_ms 0: the default.
 */
psc_status_t psc__ar_sum(psc_allreduce_t *ar, void *const *recv, const void *const *send, size_t count, int dtype,
                         struct CUstream_st *const *streams, unsigned timeout_ms, int way);

/*
 * Whether a part collective (kind PSC__AR_RS: a reduce-scatter of parts of bytes; PSC__AR_AG: an all-gather of
 * bytes per rank), asked `way` (the kind by size, its _KERNEL, its _COPY), goes by the copy engines: a group with
 * the path, from PSC__AR_CE_FROM (or forced), not captured (captured: the group's capture query). A reduce-scatter
 * (psc__ar_ce_sum's rs; joined groups too: the scratch is mapped in every process) and a joined group's all-gather
 * (through the peers' slots, psc__ar_ce_sum's gather) take parts of whole 16-byte vectors; an all-gather of this
 * process's GPUs (allgather_ce.c) takes 2 or more of them.
 */
int psc__ar_part_by_copy(psc_allreduce_t *ar, int kind, uint64_t bytes, int way, struct CUstream_st *const *streams,
                         int (*captured)(const psc_allreduce_t *ar, struct CUstream_st *const *streams));

/* That all-gather, every local rank enqueued (in the guard, arguments checked). */
psc_status_t psc__ar_ce_all_gather(psc_allreduce_t *ar, void *const *recv, const void *const *send, uint64_t bytes,
                                   struct CUstream_st *const *streams);

/* Fill bytes at p on GPU gpu with the sentinel, and wait for it. */
psc_status_t psc__ar_fill(psc_context_t *ctx, int gpu, CUdeviceptr p, uint64_t bytes);

/* Local rank i's control words on its GPU, zero. */
psc_status_t psc__ar_ctrl_alloc(psc_allreduce_t *ar, int i);

/* Release what a group holds (unlinked, or never linked) and free it. */
void psc__ar_free(psc_allreduce_t *ar);

/* The caller's allgather of len bytes per process; PSC_ERR_IO, recorded for `who`, when it fails. */
psc_status_t psc__ar_allgather(psc_context_t *ctx, const psc_ar_procs_t *p, const void *mine, void *all, size_t len,
                               const char *who);

/*
 * The first failed process's status among nprocs records (rec_len bytes apart, an int32_t status at
 * status_at), the same in every process: this process's own (already recorded) where it failed first,
 * else recorded as "who: process p could not what (its status there)". PSC_OK when none failed.
 */
psc_status_t psc__ar_first_failure(psc_context_t *ctx, const void *recs, size_t rec_len, size_t status_at, int nprocs,
                                   int me, const char *who, const char *what);

/* Link a made group into ctx->allreduces (destroyed with the context). */
void psc__ar_link(psc_allreduce_t *ar);

#endif
