/*
 * One connection between two processes of a run (a Unix stream socket):
 * framed messages (proc/message.h) with descriptors, every send and receive
 * bounded by a deadline. Errors name the peer ("worker 1 (pid 4242): ...").
 * A channel that lost its framing (a bad frame, a frame cut by a deadline or
 * by the peer) refuses every later call with the first reason.
 *
 * Not thread-safe: one thread uses a channel at a time.
 */
#ifndef PSC_PROC_CHANNEL_H
#define PSC_PROC_CHANNEL_H

#include <stdint.h>
#include <sys/types.h>

#include "proc/message.h"

typedef struct psc_ipc_chan psc_ipc_chan_t;

/* A received message. */
typedef struct {
    unsigned type;                 /* psc_ipc_type_t */
    uint32_t flags;
    uint32_t len;
    uint64_t seq;
    const unsigned char *payload;  /* the channel's buffer: valid until the next receive on the channel */
    int fds[PSC_IPC_MAX_FDS];      /* descriptors now the caller's (O_CLOEXEC): psc__ipc_msg_close_fds */
    int nfds;
} psc_ipc_msg_t;

/*
 * A channel over a connected socket, which it now owns (closed on failure too);
 * peer names the other side in errors ("worker 1 (pid 4242)"). The socket is
 * made close-on-exec.
 */
psc_status_t psc__ipc_chan_wrap(int fd, const char *peer, psc_ipc_chan_t **out, psc_ipc_err_t *err);

/*
 * A channel over a connected socket the caller keeps (an application's): its
 * descriptor flags and file-status flags are left as found (every call uses
 * MSG_DONTWAIT and poll), and psc__ipc_chan_close frees the channel without
 * closing the socket, nor does a failure here.
 */
psc_status_t psc__ipc_chan_borrow(int fd, const char *peer, psc_ipc_chan_t **out, psc_ipc_err_t *err);

/* Close the socket (unless borrowed) and free; NULL is fine. */
void psc__ipc_chan_close(psc_ipc_chan_t *c);

int psc__ipc_chan_fd(const psc_ipc_chan_t *c);
const char *psc__ipc_chan_peer(const psc_ipc_chan_t *c);
void psc__ipc_chan_set_peer(psc_ipc_chan_t *c, const char *peer);

/* The peer's pid, uid from SO_PEERCRED (at connect or listen time); -1 each when it cannot be read. */
psc_status_t psc__ipc_chan_peercred(const psc_ipc_chan_t *c, pid_t *pid, uid_t *uid, psc_ipc_err_t *err);

/* 1 once the channel refuses further calls (lost framing or closed by the peer). */
int psc__ipc_chan_broken(const psc_ipc_chan_t *c);

/*
 * Send one message with nfds descriptors (copies: the caller keeps its own),
 * before the deadline (psc__ipc_deadline). A message its type does not accept
 * (length, flags, descriptor count) is refused before anything is sent
 * (PSC_ERR_INVALID). PSC_ERR_TIMEOUT when the peer does not take it in time,
 * PSC_ERR_IO when the peer is gone (no SIGPIPE).
 */
psc_status_t psc__ipc_send(psc_ipc_chan_t *c, unsigned type, uint32_t flags, const void *payload, uint32_t len,
                           const int *fds, int nfds, int64_t deadline, psc_ipc_err_t *err);

/*
 * Receive the next message before the deadline; *msg written only on success.
 * PSC_ERR_TIMEOUT when none came (the channel stays usable when none of it
 * came), PSC_ERR_IO when the peer closed the connection or died,
 * PSC_ERR_INVALID for a malformed frame (message.h's checks, descriptors
 * other than the type's count, cut control data). Every descriptor of a
 * refused frame is closed.
 */
psc_status_t psc__ipc_recv(psc_ipc_chan_t *c, psc_ipc_msg_t *msg, int64_t deadline, psc_ipc_err_t *err);

/*
 * psc__ipc_recv for one type: an ERROR from the peer becomes PSC_ERR_IO
 * "<peer> reported: <text>", another type PSC_ERR_INVALID (its descriptors closed).
 */
psc_status_t psc__ipc_recv_type(psc_ipc_chan_t *c, unsigned type, psc_ipc_msg_t *msg, int64_t deadline,
                                psc_ipc_err_t *err);

/* Send ERROR with text (cut to PSC_IPC_MAX_ERROR_TEXT bytes; "?" for an empty one). */
psc_status_t psc__ipc_send_error(psc_ipc_chan_t *c, const char *text, int64_t deadline, psc_ipc_err_t *err);

/*
 * A psc_share_msg_t (psc_share_export's) to the peer: SHARE, or SHARE_FD with
 * msg->fd when it is >= 0 (a copy is sent: the caller still closes its own).
 */
psc_status_t psc__ipc_send_share(psc_ipc_chan_t *c, const psc_share_msg_t *msg, int64_t deadline,
                                 psc_ipc_err_t *err);

/*
 * The next message, which must be a SHARE or SHARE_FD, into *msg (fd -1 for
 * SHARE, else the received descriptor, now the caller's: it closes it after
 * psc_share_import). An ERROR from the peer: PSC_ERR_IO "<peer> reported: ...";
 * another type: PSC_ERR_INVALID, its descriptors closed. The bytes are
 * checked by psc_share_import, not here.
 */
psc_status_t psc__ipc_recv_share(psc_ipc_chan_t *c, psc_share_msg_t *msg, int64_t deadline, psc_ipc_err_t *err);

/* An ERROR message's text as one line (control characters shown as '?'), cut to cap - 1 bytes. */
void psc__ipc_msg_error_text(const psc_ipc_msg_t *m, char *out, size_t cap);

/* Close a received message's descriptors (set to -1). */
void psc__ipc_msg_close_fds(psc_ipc_msg_t *m);

#endif
