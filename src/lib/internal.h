/* Library-internal state and helpers; never installed. */
#ifndef PSC_INTERNAL_H
#define PSC_INTERNAL_H

#include <stdint.h>

#include "driver/cuda_driver.h"
#include "driver/nvml_driver.h"
#include "p2pscope/bench.h"
#include "p2pscope_private.h"
#include "test_hooks.h"

typedef struct psc_host_topo psc_host_topo_t; /* machine/host_topo.h */

/* Host words the gate kernel reads and writes, in pinned mapped memory. */
typedef struct {
    volatile uint32_t release;   /* host sets 1 to let the gated stream run */
    volatile uint32_t timed_out; /* gate kernel sets 1 when it gave up waiting */
} psc_gate_words_t;

typedef struct {
    uint64_t bad_bytes;
    uint64_t first_bad; /* UINT64_MAX when none */
} psc_verify_words_t;

typedef struct {
    CUdevice dev;
    int ready;                  /* context, module and stream set up */
    CUcontext ctx;              /* primary context, retained */
    CUmodule module;
    CUfunction fn_gate, fn_fill, fn_check, fn_flip, fn_copy; /* fill, check, flip: the data-pattern family */
    CUfunction fn_chase, fn_ping, fn_pong, fn_probe;
    CUfunction fn_copy_bytes;
    CUfunction fn_read, fn_write, fn_sum;   /* xfer/: the read-only and write-only local tests, the reads' reference sum */
    CUfunction fn_tma, fn_chase_tma;        /* xfer/, lat/: copies and a pointer chase by bulk copies (TMA), sm_90+ */
    CUfunction fn_coll_fill, fn_coll_check; /* coll/coll_data.c: a collective's inputs and outputs */
    CUfunction fn_ar_oneshot, fn_ar_twoshot, fn_ar_fill; /* allreduce/: the one-shot and two-shot kernels, the sentinel fill */
    CUfunction fn_rs_oneshot;                           /* allreduce/: the reduce-scatter by the one-shot's protocol */
    CUfunction fn_ag_oneshot;                           /* allreduce/: the all-gather (psc_allgather.cuh) */
    CUfunction fn_ar_ce_add, fn_ar_ce_wait;             /* allreduce/allreduce_ce.c: the copy-engine path's kernels */
    CUfunction fn_compute_load;                         /* coll/coll_load.c: coll's compute load */
    int no_early;                /* the driver refused a programmatic dependent launch here: plain ones */
    CUstream stream;            /* work this GPU issues */
    CUstream xstreams[PSC_MAX_XFERS]; /* extra streams for concurrent transfers, made on demand */
    /* psc_copy's hops, made on first use: the stream a hop's copy runs on when this GPU issues it, the event a
     * hop's copy waits for on a stream of this GPU, and the event a stream waits for after this GPU's hop. */
    CUstream hop_stream;
    CUevent hop_fork, hop_join;
    psc_gate_words_t *gate;     /* pinned, mapped */
    CUdeviceptr gate_dptr;      /* the same words as the GPU addresses them */
    CUdeviceptr verify_words;   /* psc_verify_words_t in device memory */
    unsigned char *peer_on;     /* [ndev]: peer access to that GPU enabled by this call */
    signed char *peer_orig;     /* [ndev]: as the caller had it (1 on, 0 off), -1 untouched in this call */
} psc_gpu_t;

typedef enum { PSC_LOG_NONE, PSC_LOG_ERROR, PSC_LOG_WARN, PSC_LOG_INFO, PSC_LOG_DEBUG } psc_log_level_t;

/*
 * What a context's close frees besides its GPUs, one slot per module, in the
 * order psc_context_destroy runs them: loads before the buffers they use,
 * mappings before the memory they map. Each module registers its destructor
 * (psc__context_on_close) when it first attaches an object to the context,
 * so the context frees no module's objects by name.
 */
typedef enum {
    PSC__CLOSE_LOADS,     /* background loads not stopped (verify/load.c) */
    PSC__CLOSE_BUFFERS,   /* the buffer cache (mem/buffer.c) */
    PSC__CLOSE_ALLREDUCE, /* all-reduce groups not destroyed (allreduce/allreduce.c) */
    PSC__CLOSE_GPUMAPS,   /* CPU mappings not unmapped (gpumap/gpumap.c) */
    PSC__CLOSE_GDR,       /* libgdrapi and its gdr_t (gpumap/backend_gdr.c) */
    PSC__CLOSE_SHARES,    /* shared memory and events not freed (share/share.c) */
    PSC__CLOSE_MEMS,      /* psc_mem_alloc's memory not freed (mem/app_mem.c) */
    PSC__CLOSE_COPY_CAL,  /* psc_copy's calibration (xfer/calibration.c) */
    PSC__CLOSE_COPY_MEMO, /* the routes threads keep for psc_copy on the context (xfer/app_copy.c) */
    PSC__CLOSE_SLOTS
} psc__close_slot_t;

typedef void (*psc__close_fn)(psc_context_t *ctx);

struct psc_context {
    psc_cuda_t cu;
    psc_nvml_t nvml;
    psc_host_topo_t *host;      /* NULL when hwloc could not load */
    int ndev;
    psc_gpu_t *gpu;
    psc_device_info_t *info;    /* static facts read at creation */
    psc_system_info_t sys;
    struct psc_buffer *bufs;    /* buffer cache (mem/buffer.c) */
    psc_log_level_t log_level;
    /* SM copy kernel shape: unroll, blocks per SM, threads per block, grid cap or 0, layout (P2PSCOPE_SM_COPY). */
    int sm_unroll, sm_blocks_per_sm, sm_threads, sm_max_blocks, sm_layout;
    char last_error[512];
    psc_test_hooks_t hooks;     /* test_hooks.h: none unless a test installs them */
    int guard_depth;            /* public calls in progress on this context (api_guard.c) */
    CUcontext caller_current;   /* the calling thread's current context when the outermost call began */
    int caller_saved;           /* caller_current could be read (else it is not put back) */
    struct psc_load *loads;     /* background loads not yet stopped (verify/load.c) */
    struct psc_mem *mems;       /* psc_mem_alloc's memory not yet freed (mem/app_mem.c) */
    struct psc_share *shares;   /* shared memory and events not yet freed (share/share.c) */
    struct psc_allreduce *allreduces; /* all-reduce groups not yet destroyed (allreduce/allreduce.c) */
    struct psc_gpumap *gpumaps;  /* CPU mappings of GPU memory not yet unmapped (gpumap/gpumap.c) */
    struct psc__gdr_ctx *gdr;    /* libgdrapi and one gdr_t, from the first gdrcopy map to the context's end */
    psc_calibration_t *copy_cal; /* psc_copy's routes: the loaded calibration, NULL for the defaults */
    psc__close_fn close_fns[PSC__CLOSE_SLOTS]; /* each module's destructor, once it attached something */
};

/* Have psc_context_destroy run fn(ctx) in slot's turn (again: the same fn, still once). */
void psc__context_on_close(psc_context_t *ctx, psc__close_slot_t slot, psc__close_fn fn);

void psc__log(const psc_context_t *ctx, psc_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Record a failure as the context's last error (logged once, here): what was
 * wrong and what is accepted. Every failing call with a context records its
 * reason, those that take it as const too (the record is the one thing they
 * change); ctx NULL records nothing. Returns st.
 */
psc_status_t psc__fail(const psc_context_t *ctx, psc_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Map a driver result to a status; on failure record "call: CUDA_ERROR_X (text)". */
psc_status_t psc__cu_result(psc_context_t *ctx, CUresult rc, const char *call);
#define PSC_CU(ctx, fn, args) psc__cu_result((ctx), (ctx)->cu.p_##fn args, #fn)

/* Release GPU g's streams, words, module and primary context (the context is closing). */
void psc__gpu_teardown(psc_context_t *ctx, psc_gpu_t *g);

/* Make GPU i's context current, setting it up (context, module, stream) on first use. */
psc_status_t psc__gpu_use(psc_context_t *ctx, int i);

/*
 * Peer access from GPU `from` to GPU `to` on or off in their primary contexts (set up on first use; `from`'s
 * context current after), *was_on saying how it was. No record: psc_peer_enable's, and the one below.
 */
psc_status_t psc__gpu_peer_switch(psc_context_t *ctx, int from, int to, int on, int *was_on);

/* Enable peer access from GPU `from` to GPU `to` (idempotent), recorded for the guard to put back. */
psc_status_t psc__gpu_peer_enable(psc_context_t *ctx, int from, int to);

/* Launch a 1-D kernel on GPU i's main stream (the GPU's context must be current). */
psc_status_t psc__launch(psc_context_t *ctx, int i, CUfunction fn, unsigned blocks,
                         unsigned threads, void **params);
/* The same on a given stream of the current context. */
psc_status_t psc__launch_on(psc_context_t *ctx, CUstream s, CUfunction fn, unsigned blocks, unsigned threads,
                            void **params);

/*
 * The same for a kernel that begins with griddepcontrol.wait (the all-reduce's): on GPU i of compute
 * capability 9.0 or later, where the driver has cuLaunchKernelEx, a programmatic dependent launch, which
 * may start while the work ahead of it in the stream finishes; elsewhere a plain launch.
 */
psc_status_t psc__launch_early(psc_context_t *ctx, int i, CUstream s, CUfunction fn, unsigned blocks,
                               unsigned threads, void **params);

/*
 * The GPU whose primary context `stream` belongs to (NULL: the current
 * context's default stream), set up on the way; PSC_ERR_INVALID for a stream
 * of no GPU's primary context, recorded.
 */
psc_status_t psc__gpu_of_stream(psc_context_t *ctx, CUstream stream, int *gpu);

/*
 * One CUDA graph per GPU from this thread (src/lib/gpu_capture.c): begin a
 * thread-local capture on s[i] (GPU dev[i]) for i < n, *begun saying how many
 * began; then end every begun capture (whatever st, the status so far) and,
 * where st and every end are PSC_OK, instantiate g[i] into e[i]: only after
 * all are ended, as the driver refuses an instantiation during a capture.
 */
psc_status_t psc__capture_begin(psc_context_t *ctx, int n, const int *dev, CUstream const *s, int *begun);
psc_status_t psc__capture_end(psc_context_t *ctx, int begun, const int *dev, CUstream const *s, psc_status_t st,
                              CUgraph *g, CUgraphExec *e);

/* Stream k of GPU i for concurrent transfers (k = 0 is the main stream), made on first use. */
psc_status_t psc__gpu_stream(psc_context_t *ctx, int i, int k, CUstream *out);
/* GPU i's hop stream and events (psc_copy's hops), made where missing; may change the current context. */
psc_status_t psc__gpu_hop_ready(psc_context_t *ctx, int i);

/*
 * The caller's CUDA state around a public call that uses the GPUs (gpu_guard.c):
 * enter saves the calling thread's current context; leave, at the outermost
 * call, puts back the peer access the call changed and that context. Leave
 * returns the call's status st; when the call succeeded but the caller's
 * state could not be put back, that failure instead (recorded).
 */
void psc__guard_enter(psc_context_t *ctx);
psc_status_t psc__guard_leave(psc_context_t *ctx, psc_status_t st);

/* Disable peer access from GPU `from` to GPU `to` (for P2P-off measurements). */
psc_status_t psc__gpu_peer_disable(psc_context_t *ctx, int from, int to);

/* Grid for a memory-bound kernel on GPU i: enough blocks to fill every SM. */
unsigned psc__grid_blocks(const psc_context_t *ctx, int i);

int psc__valid_gpu(const psc_context_t *ctx, int i);

/*
 * The GPUs a test runs over: `devices` (ndev of them) or every GPU when ndev
 * is 0, into d (cap entries). The count, or -1 when one is out of range,
 * named twice, or there are more than cap.
 */
int psc__resolve_devices(const psc_context_t *ctx, const int *devices, int ndev, int *d, int cap);

/* qsort comparator for doubles, ascending. */
int psc__cmp_double(const void *a, const void *b);

/* CLOCK_MONOTONIC in nanoseconds. */
double psc__now_ns(void);

#endif
