/*
 * A run of worker processes the parent starts itself (fork, then execve at
 * once: CUDA is not fork-safe), each connected back over the run's listener
 * (proc/listener.h). While the parent waits for a connection or a message, a
 * worker that ends is noticed (a pidfd per worker where the kernel has
 * pidfd_open, else waitpid(WNOHANG) every PSC_IPC_POLL_MS) and the call fails
 * naming it: "worker 1 (pid 4242) killed by signal 9". No signal handler is
 * installed; the caller must not reap the workers itself (waitpid(-1, ...),
 * SIGCHLD ignored): their end would then read as "reaped elsewhere".
 *
 * No orphans: each worker dies with the parent (PR_SET_PDEATHSIG(SIGKILL),
 * set before exec, checked against the race with getppid). The kernel sends
 * it when the *thread* that started the run ends, so start runs from a
 * thread that outlives them (the main thread). psc__ipc_run_destroy ends
 * every worker still running (SIGTERM, then SIGKILL after a grace) and reaps
 * each, on every path.
 *
 * Each worker is told the socket's path, the run token and its rank in its
 * environment (the PSC_IPC_ENV_* variables, replacing any inherited ones)
 * and, where argv asks, in its arguments: the placeholders "@SOCKET@",
 * "@TOKEN@", "@RANK@" and "@NRANKS@" are replaced anywhere in an argument.
 * The environment is the safer carrier: another user can read a process's
 * arguments (/proc/PID/cmdline) but not its environment.
 *
 * Not thread-safe: one thread uses a run at a time.
 */
#ifndef PSC_PROC_WORKERS_H
#define PSC_PROC_WORKERS_H

#include <stdint.h>
#include <sys/types.h>

#include "proc/listener.h"
#include "proc/spawn.h"
#include "proc/worker.h" /* the worker's side, and the environment it reads */

#define PSC_IPC_POLL_MS 20   /* how often a worker's end is looked for without pidfds */

typedef struct psc_ipc_run psc_ipc_run_t;

/* psc__ipc_no_pidfd (proc/spawn.h), for tests: runs started after it watch their workers by polling. */

/*
 * Make the token and the listener, then start nworkers processes of argv
 * (argv[0] a path to the program, with a '/'; NULL-terminated) with stdin
 * from /dev/null, signals at their defaults and unblocked, and only the
 * standard streams of the caller's descriptors open. A program that cannot
 * be executed fails here ("worker 0: cannot execute PATH: ..."). On failure
 * everything started is ended and reaped.
 */
psc_status_t psc__ipc_run_start(int nworkers, const char *const *argv, psc_ipc_run_t **out, psc_ipc_err_t *err);

/*
 * A run whose workers start elsewhere (one rank per GPU under mpirun): the
 * token and the listener only. The caller hands each worker the socket's path
 * (psc__ipc_listener_path of psc__ipc_run_listener) and the token (say by
 * MPI_Bcast); they connect with psc__ipc_connect. Such workers are not this
 * process's children: their pid is 0 here (the channel's name carries the
 * pid SO_PEERCRED gives), an end is seen as a closed connection, nothing is
 * killed or reaped, and psc__ipc_run_finish waits for each to close its
 * connection after BYE.
 */
psc_status_t psc__ipc_run_listen(int nworkers, psc_ipc_run_t **out, psc_ipc_err_t *err);

/*
 * Wait until every worker has passed the handshake, before the deadline:
 * strangers are refused and waited past (listener.h); a worker that ends
 * first fails the call naming it; PSC_ERR_TIMEOUT names the workers missing
 * and the refusals. Once all are in, the socket and its directory are removed
 * (psc__ipc_listener_retire): nothing is left there should this process die.
 */
psc_status_t psc__ipc_run_connect(psc_ipc_run_t *run, int64_t deadline, psc_ipc_err_t *err);

int psc__ipc_run_size(const psc_ipc_run_t *run);
pid_t psc__ipc_run_pid(const psc_ipc_run_t *run, int rank); /* 0 for a worker started elsewhere */
psc_ipc_chan_t *psc__ipc_run_chan(psc_ipc_run_t *run, int rank); /* NULL until it connected */
psc_ipc_listener_t *psc__ipc_run_listener(psc_ipc_run_t *run);
const psc_ipc_token_t *psc__ipc_run_token(const psc_ipc_run_t *run);

/* psc__ipc_send to worker rank; a worker that is gone is named with how it ended. */
psc_status_t psc__ipc_run_send(psc_ipc_run_t *run, int rank, unsigned type, uint32_t flags, const void *payload,
                               uint32_t len, const int *fds, int nfds, int64_t deadline, psc_ipc_err_t *err);

/*
 * The next message from worker rank (-1: from any, *from says which; from may
 * be NULL) before the deadline, while watching every worker: one that ends
 * (or closes its connection) fails the call naming it, once the messages it
 * sent before are taken. An ERROR from the worker fails it too:
 * "worker 1 (pid 4242) reported: <text>". *msg as psc__ipc_recv's.
 */
psc_status_t psc__ipc_run_recv(psc_ipc_run_t *run, int rank, psc_ipc_msg_t *msg, int *from, int64_t deadline,
                               psc_ipc_err_t *err);

/*
 * The normal end: BYE to every worker, then wait for each to exit before the
 * deadline. Fails naming the first worker that ended otherwise than by exit
 * status 0, or that was still running at the deadline. Follow it with
 * psc__ipc_run_destroy in every case.
 */
psc_status_t psc__ipc_run_finish(psc_ipc_run_t *run, int64_t deadline, psc_ipc_err_t *err);

/*
 * End the run: close the connections, SIGTERM to every worker still running,
 * SIGKILL to those left after grace_ms, reap all, remove the run directory,
 * free. NULL is fine.
 */
void psc__ipc_run_destroy(psc_ipc_run_t *run, int grace_ms);

/* How worker rank ended, as in errors ("worker 1 (pid 4242) exited with status 3"); "" while it runs. */
const char *psc__ipc_run_ended(const psc_ipc_run_t *run, int rank);

#endif
