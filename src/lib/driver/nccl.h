/*
 * Run-time loaded NCCL (libnccl.so.2). p2pscope builds without nccl.h, so the
 * few types it uses are declared here, numbered and laid out as nccl.h has
 * them (NCCL 2.12 and newer: src/nccl.h.in of github.com/NVIDIA/nccl, whose
 * ncclResult_t, ncclDataType_t, ncclRedOp_t and ncclConfig_t these follow).
 * Internal: psc__ names.
 */
#ifndef PSC_DRIVER_NCCL_H
#define PSC_DRIVER_NCCL_H

#include <stddef.h>

#include "p2pscope.h"
#include "p2pscope/bench.h"

/* ncclResult_t */
typedef int psc_ncclResult_t;
enum {
    PSC_NCCL_SUCCESS = 0,
    PSC_NCCL_UNHANDLED_CUDA_ERROR = 1,
    PSC_NCCL_SYSTEM_ERROR = 2,
    PSC_NCCL_INTERNAL_ERROR = 3,
    PSC_NCCL_INVALID_ARGUMENT = 4,
    PSC_NCCL_INVALID_USAGE = 5,
    PSC_NCCL_REMOTE_ERROR = 6,  /* 2.13 */
    PSC_NCCL_IN_PROGRESS = 7,   /* 2.14: a non-blocking communicator's call still runs */
};

/* ncclDataType_t and ncclRedOp_t: the same numbers as psc_dtype_t and psc_redop_t. */
typedef int psc_ncclDataType_t;
typedef int psc_ncclRedOp_t;

#define PSC_NCCL_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[PSC_NCCL_UNIQUE_ID_BYTES];
} psc_ncclUniqueId;

typedef struct psc_ncclComm *psc_ncclComm_t;  /* opaque */
typedef struct psc_ncclWindow *psc_ncclWindow_t; /* ncclWindow_t (2.27), opaque */
#define PSC_NCCL_WIN_COLL_SYMMETRIC 0x01          /* NCCL_WIN_COLL_SYMMETRIC: every rank registers alike */
typedef struct CUstream_st *psc_ncclStream_t; /* cudaStream_t, the same as a CUstream */

/*
 * ncclConfig_t as NCCL 2.28 lays it out, up to nvlinkCentricSched. NCCL (2.17
 * and newer) copies min(size, its own sizeof) bytes, refuses a wrong magic,
 * and takes its defaults for the fields newer than `version`; 2.14-2.16 read
 * `blocking` raw, so it is always set to 0 or 1. Unset fields hold NCCL's
 * "undefined" (INT_MIN, NULL), as NCCL_CONFIG_INITIALIZER has them.
 */
#define PSC_NCCL_API_MAGIC 0xcafebeefu
#define PSC_NCCL_CONFIG_UNDEF_INT (-2147483647 - 1)
typedef struct {
    size_t size;           /* sizeof(psc_ncclConfig_t) */
    unsigned int magic;    /* PSC_NCCL_API_MAGIC */
    unsigned int version;  /* the NCCL version whose fields are set: 21400, or 22800 with nvlinkCentricSched */
    int blocking;          /* 0: calls may return PSC_NCCL_IN_PROGRESS; poll ncclCommGetAsyncError (2.14) */
    int cgaClusterSize, minCTAs, maxCTAs; /* 2.17 */
    const char *netName;
    int splitShare;        /* 2.18 */
    int trafficClass;      /* 2.25 .. 2.27 */
    const char *commName;
    int collnetEnable, CTAPolicy, shrinkShare, nvlsCTAs;
    int nChannelsPerNetPeer, nvlinkCentricSched; /* 2.28 */
} psc_ncclConfig_t;

/*
 * A config for blocking (1) or non-blocking (0) communicators, for a library
 * of version lib_version: from 2.28 on with nvlinkCentricSched 1, as
 * nccl-tests (built against 2.28) asks, so their figures compare.
 */
void psc__nccl_config_init(psc_ncclConfig_t *cfg, int blocking, int lib_version);
/* ncclConfig_t.CTAPolicy (nccl-tests' -x) where the library reads it (2.27 and newer; -1 leaves it unset). */
void psc__nccl_config_cta_policy(psc_ncclConfig_t *cfg, int policy, int lib_version);

/* X(field, exported symbol, return, (params), required) */
#define PSC_NCCL_SYMBOLS(X)                                                                          \
    X(get_version, "ncclGetVersion", psc_ncclResult_t, (int *), 1)                                   \
    X(get_unique_id, "ncclGetUniqueId", psc_ncclResult_t, (psc_ncclUniqueId *), 1)                   \
    X(comm_init_rank, "ncclCommInitRank", psc_ncclResult_t,                                          \
      (psc_ncclComm_t *, int, psc_ncclUniqueId, int), 1)                                             \
    X(comm_init_all, "ncclCommInitAll", psc_ncclResult_t, (psc_ncclComm_t *, int, const int *), 1)   \
    X(comm_init_rank_config, "ncclCommInitRankConfig", psc_ncclResult_t,                             \
      (psc_ncclComm_t *, int, psc_ncclUniqueId, int, psc_ncclConfig_t *), 0)                         \
    X(comm_destroy, "ncclCommDestroy", psc_ncclResult_t, (psc_ncclComm_t), 1)                        \
    X(comm_abort, "ncclCommAbort", psc_ncclResult_t, (psc_ncclComm_t), 1)                            \
    X(comm_get_async_error, "ncclCommGetAsyncError", psc_ncclResult_t,                               \
      (psc_ncclComm_t, psc_ncclResult_t *), 1)                                                       \
    X(comm_finalize, "ncclCommFinalize", psc_ncclResult_t, (psc_ncclComm_t), 0)                      \
    X(comm_count, "ncclCommCount", psc_ncclResult_t, (const psc_ncclComm_t, int *), 1)               \
    X(comm_user_rank, "ncclCommUserRank", psc_ncclResult_t, (const psc_ncclComm_t, int *), 1)        \
    X(group_start, "ncclGroupStart", psc_ncclResult_t, (void), 1)                                    \
    X(group_end, "ncclGroupEnd", psc_ncclResult_t, (void), 1)                                        \
    X(all_reduce, "ncclAllReduce", psc_ncclResult_t,                                                 \
      (const void *, void *, size_t, psc_ncclDataType_t, psc_ncclRedOp_t, psc_ncclComm_t,            \
       psc_ncclStream_t), 1)                                                                         \
    X(all_gather, "ncclAllGather", psc_ncclResult_t,                                                 \
      (const void *, void *, size_t, psc_ncclDataType_t, psc_ncclComm_t, psc_ncclStream_t), 1)       \
    X(reduce_scatter, "ncclReduceScatter", psc_ncclResult_t,                                         \
      (const void *, void *, size_t, psc_ncclDataType_t, psc_ncclRedOp_t, psc_ncclComm_t,            \
       psc_ncclStream_t), 1)                                                                         \
    X(broadcast, "ncclBroadcast", psc_ncclResult_t,                                                  \
      (const void *, void *, size_t, psc_ncclDataType_t, int, psc_ncclComm_t, psc_ncclStream_t), 1)  \
    X(reduce, "ncclReduce", psc_ncclResult_t,                                                        \
      (const void *, void *, size_t, psc_ncclDataType_t, psc_ncclRedOp_t, int, psc_ncclComm_t,       \
       psc_ncclStream_t), 1)                                                                         \
    X(all_to_all, "ncclAlltoAll", psc_ncclResult_t,                                                  \
      (const void *, void *, size_t, psc_ncclDataType_t, psc_ncclComm_t, psc_ncclStream_t), 0)       \
    X(send, "ncclSend", psc_ncclResult_t,                                                            \
      (const void *, size_t, psc_ncclDataType_t, int, psc_ncclComm_t, psc_ncclStream_t), 1)          \
    X(recv, "ncclRecv", psc_ncclResult_t,                                                            \
      (void *, size_t, psc_ncclDataType_t, int, psc_ncclComm_t, psc_ncclStream_t), 1)                \
    X(get_error_string, "ncclGetErrorString", const char *, (psc_ncclResult_t), 1)                   \
    X(get_last_error, "ncclGetLastError", const char *, (psc_ncclComm_t), 0)                          \
    X(mem_alloc, "ncclMemAlloc", psc_ncclResult_t, (void **, size_t), 0)                             \
    X(mem_free, "ncclMemFree", psc_ncclResult_t, (void *), 0)                                       \
    X(comm_register, "ncclCommRegister", psc_ncclResult_t, (psc_ncclComm_t, void *, size_t, void **), 0) \
    X(comm_deregister, "ncclCommDeregister", psc_ncclResult_t, (psc_ncclComm_t, void *), 0)          \
    X(comm_window_register, "ncclCommWindowRegister", psc_ncclResult_t,                              \
      (psc_ncclComm_t, void *, size_t, psc_ncclWindow_t *, int), 0)                                   \
    X(comm_window_deregister, "ncclCommWindowDeregister", psc_ncclResult_t,                          \
      (psc_ncclComm_t, psc_ncclWindow_t), 0)

#define PSC__NCCL_FIELD(field, sym, ret, params, req) ret(*field) params;

/*
 * The loaded library: every required entry point is set; the optional ones
 * (ncclCommInitRankConfig, ncclCommFinalize, ncclAlltoAll, ncclGetLastError,
 * ncclMemAlloc, ncclMemFree, the buffer registrations of 2.19 and the windows
 * of 2.27) are NULL where this NCCL lacks them.
 */
typedef struct {
    void *handle;
    int version;            /* ncclGetVersion's code: 22807 for 2.28.7 */
    char path[256];         /* what was loaded: "libnccl.so.2" or P2PSCOPE_LIBNCCL */
    PSC_NCCL_SYMBOLS(PSC__NCCL_FIELD)
} psc_nccl_t;

#define PSC_NCCL_MIN_VERSION 21200 /* 2.12.0 */

/*
 * dlopen NCCL (P2PSCOPE_LIBNCCL, else libnccl.so.2), resolve its entry points
 * and read its version. PSC_ERR_UNSUPPORTED with one line in why for a
 * missing library or required symbol, a failing ncclGetVersion, or a version
 * below 2.12; the table is then left empty. Not thread-safe (one per context).
 */
psc_status_t psc__nccl_load(psc_nccl_t *nccl, char *why, size_t len);
void psc__nccl_unload(psc_nccl_t *nccl);

/* "2.28.7" for 22807, "2.7.8" for 2708 (the form before 2.9), into buf; returns buf. */
const char *psc__nccl_version_string(int code, char *buf, size_t len);

/*
 * PSC_OK for ncclSuccess. Otherwise one line in why, "<call> failed: <ncclGetErrorString>
 * (<ncclGetLastError>)" (the last part where the library has one to give), and the
 * status: PSC_ERR_INVALID for an invalid argument or usage, PSC_ERR_TIMEOUT for
 * ncclInProgress (a call that had not finished when the caller gave up),
 * PSC_ERR_DRIVER for the rest. comm may be NULL.
 */
psc_status_t psc__nccl_check(const psc_nccl_t *nccl, psc_ncclComm_t comm, psc_ncclResult_t rc,
                             const char *call, char *why, size_t len);

#endif
