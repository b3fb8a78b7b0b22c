/*
 * A worker of p2pscope ipc serving one run (ipc_serve.c): in a process of its
 * own (psc_ipc_worker_main, psc_ipc_worker_join) or in a thread of the
 * coordinator's process (worker 0 when the workers join from elsewhere).
 */
#ifndef PSC_IPC_SERVE_H
#define PSC_IPC_SERVE_H

#include "proc/worker.h"

/*
 * Connect as conf says, serve requests until BYE; 0 after a clean end, else 1
 * with why in err (the connection failed, a request was refused, the
 * coordinator went away or stayed silent past the run's timeout). Everything
 * the worker made (its context, shared and imported memory) is gone on return.
 */
int psc__ipc_serve(const psc_ipc_worker_conf_t *conf, psc_ipc_err_t *err);

#endif
