/*
 * The worker's side of a run (proc/workers.h starts workers): where to
 * connect and as whom, from the environment the run sets or from the
 * worker's arguments, and the connection with its handshake.
 */
#ifndef PSC_PROC_WORKER_H
#define PSC_PROC_WORKER_H

#include "proc/listener.h"

#define PSC_IPC_ENV_SOCKET "P2PSCOPE_IPC_SOCKET"
#define PSC_IPC_ENV_TOKEN "P2PSCOPE_IPC_TOKEN"
#define PSC_IPC_ENV_RANK "P2PSCOPE_IPC_RANK"
#define PSC_IPC_ENV_NRANKS "P2PSCOPE_IPC_NRANKS"
#define PSC_IPC_MAX_WORKERS 1024

/* The worker's side: where to connect and as whom. */
typedef struct {
    char path[108];
    psc_ipc_token_t token;
    int rank, nranks;
    int in_process; /* served by a thread of the coordinator's process (no test hook may end it) */
} psc_ipc_worker_conf_t;

/* From the PSC_IPC_ENV_* variables; PSC_ERR_INVALID naming the missing or malformed one. */
psc_status_t psc__ipc_worker_conf_env(psc_ipc_worker_conf_t *conf, psc_ipc_err_t *err);

/* From strings (the CLI's arguments): rank and nranks decimal, rank below nranks. */
psc_status_t psc__ipc_worker_conf_parse(psc_ipc_worker_conf_t *conf, const char *path, const char *token_hex,
                                        const char *rank, const char *nranks, psc_ipc_err_t *err);

/*
 * The rendezvous of a run whose workers join from elsewhere (psc_ipc_opts_t's
 * publish, psc_ipc_worker_join): one line of text, "p2pscope-ipc 1 NRANKS
 * TOKEN PATH" (the path last: it may hold spaces). It carries the run's token:
 * hand it over a private channel (MPI), never in a command line.
 */
#define PSC_IPC_RENDEZVOUS_TAG "p2pscope-ipc 1 "

/* The rendezvous for the listener at path; PSC_ERR_INVALID when it does not fit cap bytes. */
psc_status_t psc__ipc_rendezvous_format(const char *path, const psc_ipc_token_t *token, int nranks, char *out,
                                        size_t cap, psc_ipc_err_t *err);

/* Worker `rank`'s configuration from a rendezvous; PSC_ERR_INVALID naming what is malformed. */
psc_status_t psc__ipc_worker_conf_rendezvous(psc_ipc_worker_conf_t *conf, const char *rendezvous, int rank,
                                             psc_ipc_err_t *err);

/* Connect, HELLO, WELCOME (listener.h's psc__ipc_connect) with the configuration's values. */
psc_status_t psc__ipc_worker_connect(const psc_ipc_worker_conf_t *conf, int64_t deadline, psc_ipc_chan_t **out,
                                     psc_ipc_err_t *err);

#endif
