/*
 * The machinery under psc_coll_run: this process's ranks (one GPU each),
 * their NCCL communicators, streams and buffers; one collective issued on
 * every local rank; waits that give up at the run's timeout, aborting the
 * communicators; the timed loop, eager or replayed from a CUDA graph.
 * Internal: psc__ names.
 */
#ifndef PSC_COLL_EXEC_H
#define PSC_COLL_EXEC_H

#include <pthread.h>
#include <stdint.h>

#include "coll/coll_data.h"
#include "driver/nccl.h"
#include "util/watchdog.h"
#include "internal.h"

#define PSC_COLL_MAX_EACH 4096 /* per_op: operations timed one by one per row, at most */

/* One operation's shape: the collective, its type, op, root and counts, and who does it. */
typedef struct {
    int coll, dtype, op, root;
    int impl;               /* PSC_COLL_IMPL_NCCL or PSC_COLL_IMPL_P2PSCOPE */
    uint64_t count;         /* nccl-tests' param count */
    uint64_t slot_bytes;    /* max(send, recv) bytes of one rank: the distance between slots (p2pscope's: up to 16 B more,
                               its buffers 16-byte aligned) */
    unsigned nslots;        /* slots in the buffers: max_bytes / slot_bytes (at least 1) */
    uint64_t size;          /* the size column */
} psc_coll_shape_t;


typedef struct {
    psc_context_t *ctx;
    const psc_coll_opts_t *o;
    psc_nccl_t nccl;
    int use_nccl;                        /* NCCL loaded, communicators made: some row is NCCL's */
    int want_own;                        /* some row is p2pscope's: the group below is made */
    psc_allreduce_t *ar;                 /* p2pscope's all-reduce over the run's ranks (this process's part) */
    char own_not_run[256];               /* why the group could not be made (its rows left out); "" */
    int tuned;                           /* the group was tuned (opts.tune_own) */
    char tune_note[256];                 /* why it was not where asked (no usable NCCL); "" */
    int timing;                          /* a timed loop runs: psc__coll_wait leaves the group's check for after it */
    int nlocal;                          /* ranks (GPUs) of this process */
    int nranks, first_rank;              /* every rank; this process's first */
    int dev[PSC_MAX_GPUS];               /* context GPU index of local rank i */
    psc_ncclComm_t comm[PSC_MAX_GPUS];
    CUstream stream[PSC_MAX_GPUS];
    CUdeviceptr send[PSC_MAX_GPUS], recv[PSC_MAX_GPUS];
    int nccl_mem[PSC_MAX_GPUS];          /* send and recv from ncclMemAlloc (else cuMemAlloc) */
    CUdeviceptr words[PSC_MAX_GPUS];     /* the check's two u64: wrong elements, lowest wrong index */
    CUevent *ev[PSC_MAX_GPUS];           /* per_op and per_iter: nev events per GPU */
    int nev;
    int neach;                           /* per_op: operations timed one by one (nev - 1 at most) */
    int cta_policy;                      /* ncclConfig_t.CTAPolicy as set (-x); -1 NCCL's default */
    int reg_mode;                        /* buffer registration as made: 0 none, 1 ncclCommRegister, 2 windows */
    void *reg[2][PSC_MAX_GPUS];          /* the registrations of send [0] and recv [1]: handles or windows */
    long long mem_free[5][PSC_MAX_GPUS]; /* free GPU memory before the buffers, after them, after the
                                            communicators, after the registrations, after the rows; -1 not read */
    uint64_t buf_bytes;                  /* of send and of recv, per GPU */
    psc_watchdog_t watch;                /* with a timeout and NCCL's rows: the watchdog of NCCL's host calls */
    int aborted;
    CUevent *mark[2];                    /* coll_load.c: events recorded on local rank i's stream as the next
                                            timed loop begins ([0][i]) and once its last operation is issued
                                            ([1][i]); NULL: none */
    const psc_coll_shape_t *sh;          /* the operation in hand, for messages */
    const char *stage;                   /* "the timed loop", ... for messages */
} psc_coll_exec_t;

/* Streams, buffers and (per_op) events on every local GPU, then the communicators and p2pscope's group. */
psc_status_t psc__coll_exec_open(psc_coll_exec_t *x);
/* Destroy (after a failure: abort) the communicators, destroy the group once its streams are idle, free everything. */
void psc__coll_exec_close(psc_coll_exec_t *x, int failed);

/*
 * Issue n operations of sh (slots first, first+1, ... modulo nslots), eager
 * or into a capture; as nccl-tests does, in a group only where one call
 * covers several ranks or operations (several GPUs here, n > 1).
 */
psc_status_t psc__coll_issue(psc_coll_exec_t *x, const psc_coll_shape_t *sh, int in_place, uint64_t first,
                             unsigned n);
/*
 * Wait until every local stream is idle, within the timeout: else abort and
 * PSC_ERR_TIMEOUT. nccl-tests' wait: each stream queried, NCCL's errors read,
 * and the CPU yielded after each round that saw no stream finish (a thread
 * of NCCL's may share this core: mpirun binds a rank to one). After
 * p2pscope's operations (outside a timed loop) the group's own check too: a
 * call that gave up is PSC_ERR_TIMEOUT.
 */
psc_status_t psc__coll_wait(psc_coll_exec_t *x);
/* Every process here (a barrier through opts.procs; nothing for one process). */
psc_status_t psc__coll_barrier(psc_coll_exec_t *x);

/*
 * How often the processes meet after an eager iteration's operations, as nccl-tests does: -z 1 after each
 * operation's start (its startColl), so agg_iters times (the waits inside the iteration's group find nothing new
 * after the first); -z 3 once; else never.
 */
int psc__coll_meetings(const psc_coll_opts_t *o);

/*
 * The timed loop: iters x agg_iters operations (eager, or captured once and
 * replayed graph_launches times), slot k for operation k. Seconds per
 * operation on the host clock, into *sec.
 */
psc_status_t psc__coll_time(psc_coll_exec_t *x, const psc_coll_shape_t *sh, int in_place, double *sec);
/*
 * The same, also the host's time to issue them per operation (nccl-tests' -C: without the wait for the last),
 * and with iter_s (o->per_iter, eager) each iteration's time between CUDA events recorded in the loop itself,
 * divided by agg_iters, the most over the local GPUs (seconds, [iters]).
 */
psc_status_t psc__coll_time_ex(psc_coll_exec_t *x, const psc_coll_shape_t *sh, int in_place, double *sec,
                               double *cpu_sec, double *iter_s);
/* -u: the bytes a row's buffers begin past their allocation (NCCL's rows; p2pscope's take aligned ones). */
uint64_t psc__coll_unalign(const psc_coll_exec_t *x, const psc_coll_shape_t *sh);
/* coll_register.c: send and recv registered with every communicator as reg_mode says (-R), and undone. */
psc_status_t psc__coll_register(psc_coll_exec_t *x);
void psc__coll_deregister(psc_coll_exec_t *x);
/* Free memory of each local GPU into mem_free[k] (-1 where it cannot be read). */
void psc__coll_mem_note(psc_coll_exec_t *x, int k);

/* per_op: neach operations one by one between CUDA events; each one's us (max over local GPUs) into us[neach]. */
psc_status_t psc__coll_time_each(psc_coll_exec_t *x, const psc_coll_shape_t *sh, int in_place, double *us);

/* Fill (check = 0) or check (1) nslots slots on every local rank; wrong elements summed into *wrong. */
psc_status_t psc__coll_fill_all(psc_coll_exec_t *x, const psc_coll_shape_t *sh, int in_place, uint32_t seed,
                                unsigned nslots);
psc_status_t psc__coll_check_all(psc_coll_exec_t *x, const psc_coll_shape_t *sh, int in_place, uint32_t seed,
                                 unsigned nslots, long long *wrong, char *first, size_t len);

/* A failure naming the operation in hand ("all_reduce of 1048576 B (float, sum), the timed loop: ..."). */
psc_status_t psc__coll_fail(psc_coll_exec_t *x, psc_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
