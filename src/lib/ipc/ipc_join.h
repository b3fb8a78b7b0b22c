/*
 * The coordinator's side of a run whose workers join from elsewhere
 * (ipc_join.c): the listener, worker 0 served by a thread of this process,
 * the rendezvous handed to the caller's publish.
 */
#ifndef PSC_IPC_JOIN_H
#define PSC_IPC_JOIN_H

#include "proc/workers.h"

typedef struct psc_ipc_self psc_ipc_self_t;

/*
 * Listen for nworkers, publish the rendezvous (publish(rendezvous, arg), on
 * this thread; nonzero fails; *published set once it was called), then start
 * the thread of worker 0. On failure nothing is left: the listener closed,
 * the thread (if any) joined.
 */
psc_status_t psc__ipc_join_start(int nworkers, int (*publish)(const char *, void *), void *arg, int *published,
                                 psc_ipc_run_t **run, psc_ipc_self_t **self, psc_ipc_err_t *err);

/*
 * Wait for worker 0's thread to end (destroy the run first on a failed run,
 * which ends it) and free; its exit status (0 after a clean end), why in err.
 * NULL is fine.
 */
int psc__ipc_join_end(psc_ipc_self_t *self, psc_ipc_err_t *err);

#endif
