/*
 * The meeting point of a run: a fresh directory (mode 0700) holding the
 * listening socket (0600), and the handshake every connection must pass
 * before it becomes a channel: the same user (SO_PEERCRED), then a HELLO with
 * the run token and a rank not yet taken, answered by a WELCOME. A
 * connection that fails is closed, its one-line reason kept, and the
 * listener goes on waiting. The worker's side of the handshake is here too.
 *
 * Not thread-safe: one thread uses a listener at a time.
 */
#ifndef PSC_PROC_LISTENER_H
#define PSC_PROC_LISTENER_H

#include <stdint.h>
#include <sys/types.h>

#include "proc/channel.h"

typedef struct psc_ipc_listener psc_ipc_listener_t;

#define PSC_IPC_SOCKET_NAME "sock"
#define PSC_IPC_HELLO_MS 5000 /* a connection's time to say HELLO, by default */
#define PSC_IPC_REFUSALS_KEPT 8

/*
 * Make the run directory (mkdtemp under $XDG_RUNTIME_DIR when it is an
 * absolute directory of this user, mode 0700, and short enough for a socket
 * path; else under /tmp), bind the socket there, chmod it 0600 and listen.
 * The umask is not touched. Ranks 0 .. nranks-1 may connect once each, from
 * processes of user expect_uid (normally geteuid()).
 */
psc_status_t psc__ipc_listen(const psc_ipc_token_t *token, int nranks, uid_t expect_uid, psc_ipc_listener_t **out,
                             psc_ipc_err_t *err);

/* Close the socket; the process that made them removes the socket and the directory. NULL is fine. */
void psc__ipc_listener_close(psc_ipc_listener_t *l);

/*
 * Take no more connections: close the listening socket and remove it and its
 * directory now (the process that made them), so that nothing is left behind
 * should this process be killed later. Its path and counts stay readable;
 * psc__ipc_listener_close still frees it. NULL is fine.
 */
void psc__ipc_listener_retire(psc_ipc_listener_t *l);

const char *psc__ipc_listener_path(const psc_ipc_listener_t *l);
const char *psc__ipc_listener_dir(const psc_ipc_listener_t *l);
int psc__ipc_listener_fd(const psc_ipc_listener_t *l); /* non-blocking: poll it for POLLIN */
int psc__ipc_listener_connected(const psc_ipc_listener_t *l); /* ranks that passed the handshake */
void psc__ipc_listener_set_hello_ms(psc_ipc_listener_t *l, int ms);
int psc__ipc_listener_hello_ms(const psc_ipc_listener_t *l);

/* Connections refused so far, and the reason of one of the last PSC_IPC_REFUSALS_KEPT (0 the latest), or NULL. */
int psc__ipc_listener_refused(const psc_ipc_listener_t *l);
const char *psc__ipc_listener_refusal(const psc_ipc_listener_t *l, int i);

/* A summary of the refusals for an error line: "" or "; 2 connections refused, the last: <reason>". */
void psc__ipc_listener_refusal_note(const psc_ipc_listener_t *l, char *out, size_t cap);

/*
 * Take one waiting connection: 1 with a channel in *out (peer "a connection
 * from pid P") that came from the expected user, 0 when none is waiting or
 * it was refused (recorded), <0 (a status, err set) when accept itself failed.
 */
int psc__ipc_accept_raw(psc_ipc_listener_t *l, psc_ipc_chan_t **out, psc_ipc_err_t *err);

/*
 * The rest of the handshake on a channel from psc__ipc_accept_raw: its HELLO
 * before the deadline (the sooner of deadline and now + the hello time),
 * token, rank free, and when expect_pids is given, SO_PEERCRED's pid equal
 * to expect_pids[rank]; then WELCOME. On success the channel is named
 * "worker R (pid P)" and *rank set. On failure the reason is recorded as a
 * refusal, the peer is sent an ERROR saying it (if it takes it at once) and
 * the caller closes the channel.
 */
psc_status_t psc__ipc_hello_take(psc_ipc_listener_t *l, psc_ipc_chan_t *c, const pid_t *expect_pids,
                                 int64_t deadline, int *rank, psc_ipc_err_t *err);

/*
 * Wait for the next connection that passes the whole handshake, refusing
 * others, until the deadline: PSC_ERR_TIMEOUT then, with the refusals in the
 * message. (workers.h waits for connections and deaths together instead.)
 */
psc_status_t psc__ipc_accept(psc_ipc_listener_t *l, const pid_t *expect_pids, int64_t deadline,
                             psc_ipc_chan_t **out, int *rank, psc_ipc_err_t *err);

/*
 * The worker's side: connect to path, check the listener runs as this user,
 * send HELLO(token, rank) and wait for the WELCOME, all before the deadline.
 * The channel's peer is "the parent (pid P)"; *nranks from the WELCOME (may be NULL).
 */
psc_status_t psc__ipc_connect(const char *path, const psc_ipc_token_t *token, int rank, int64_t deadline,
                              psc_ipc_chan_t **out, int *nranks, psc_ipc_err_t *err);

#endif
