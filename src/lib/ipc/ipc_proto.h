/*
 * What the coordinator of p2pscope ipc (ipc_run.c) and its workers
 * (ipc_serve.c) say to each other inside REQUEST and REPLY messages: one
 * fixed-size struct each way. Both ends are the same program, but a
 * message from another process is untrusted: each side checks every field
 * it reads (psc__ipc_op_check, psc__ipc_ans_check) before acting on it.
 */
#ifndef PSC_IPC_PROTO_H
#define PSC_IPC_PROTO_H

#include "internal.h"
#include "proc/message.h"

#define PSC_IPC_OP_MAGIC 0x31435049u   /* "IPC1" */
#define PSC_IPC_TAIL 4096u             /* after a worker's shared bytes: its flag word, then its answer word */
#define PSC_IPC_FLAG_OFF 0u
#define PSC_IPC_ANS_OFF 128u
#define PSC_IPC_TOUCH_BYTES 4096u      /* the first-touch copy */
#define PSC_IPC_MAX_ROUND_TRIPS 1000000u

typedef enum {
    PSC_IPC_OP_CONFIG = 1,  /* the worker's GPU (uuid), the copies' options: make the context */
    PSC_IPC_OP_SHARE,       /* allocate and export this method's memory; answer, then the SHARE(_FD) message */
    PSC_IPC_OP_IMPORT,      /* (after a SHARE(_FD) message) import peer's memory; time it, touch it, ask access */
    PSC_IPC_OP_BW,          /* one copy (bw) between own memory and the import of peer's */
    PSC_IPC_OP_PONG,        /* zero own flag, start answering into the import of peer's memory */
    PSC_IPC_OP_PONG_END,    /* wait for the responder to end */
    PSC_IPC_OP_PING,        /* zero own answer, round trips through peer's flag */
    PSC_IPC_OP_UNIMPORT,    /* release every import of this method (timed per peer) */
    PSC_IPC_OP_UNSHARE,     /* free own memory of this method */
    PSC_IPC_OP_LAST = PSC_IPC_OP_UNSHARE
} psc_ipc_op_code_t;

typedef struct {
    uint32_t magic, op;
    int32_t method;         /* psc_share_kind_t (memory kinds) */
    int32_t peer;           /* a rank other than the worker's own */
    int32_t bw;             /* psc_ipc_bw_t */
    uint32_t round_trips;
    uint64_t size;          /* CONFIG: bytes per copy */
    double timeout_ms;      /* CONFIG: how long a flag waits */
    psc_measure_opts_t measure; /* CONFIG */
    char uuid[48];          /* CONFIG: the worker's GPU */
} psc_ipc_op_t;

typedef struct {
    uint32_t magic, op;     /* the op answered */
    int32_t status;         /* psc_status_t of the op */
    char why[320];          /* when status is not PSC_OK */
    int32_t gpu;            /* CONFIG: the worker's GPU as it numbers them; IMPORT: the exporter's */
    int32_t ngpu;           /* CONFIG: GPUs the worker sees */
    double export_us, import_us, map_us, first_touch_us, touch_us;
    double release_us[PSC_IPC_MAX_RANKS]; /* UNIMPORT: per peer rank; -1 none */
    int32_t naccess;
    uint32_t access[PSC_MAX_GPUS];
    int32_t gave_up;        /* PING, PONG_END: a flag did not come in time */
    psc_pctl_t rtt_ns;      /* PING */
    psc_bw_result_t bw;     /* BW */
} psc_ipc_ans_t;

/* A request as the worker of `rank` of `nranks` accepts it; PSC_ERR_INVALID naming the bad field in err. */
psc_status_t psc__ipc_op_check(const psc_ipc_op_t *op, int rank, int nranks, psc_ipc_err_t *err);

/* An answer to `op` as the coordinator accepts it (every field it reads in range, texts terminated). */
psc_status_t psc__ipc_ans_check(const psc_ipc_ans_t *a, unsigned op, int nranks, psc_ipc_err_t *err);

#endif
