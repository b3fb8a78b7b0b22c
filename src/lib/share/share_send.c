/*
 * psc_share_send / psc_share_recv: one psc_share_msg_t as one self-contained
 * frame (proc/message.h's SHARE or SHARE_FD, seq 0) over a connected Unix
 * stream socket the application owns. The socket is borrowed: a fresh
 * channel per call that never closes it nor changes its flags, so messages
 * and the application's own traffic can follow each other on it.
 */
#define _GNU_SOURCE
#include "share/share_send.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "proc/channel.h"
#include "share/share_msg.h"

#define PSC__SOCK_ACCEPTED "accepted a connected Unix stream socket"

/* What kind of file fd is, for a refusal. */
static const char *psc__file_kind(mode_t m)
{
    return S_ISFIFO(m) ? "a pipe" : S_ISREG(m) ? "a regular file" : S_ISDIR(m) ? "a directory"
         : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" : "not a socket";
}

/*
 * sock is a connected AF_UNIX SOCK_STREAM socket: PSC_OK with the peer's pid
 * and uid (SO_PEERCRED), else PSC_ERR_INVALID recorded. Nothing is changed.
 */
static psc_status_t psc__sock_check(psc_context_t *ctx, const char *call, int sock, pid_t *pid, uid_t *uid)
{
    struct stat st;
    struct ucred cred;
    struct sockaddr_storage addr;
    socklen_t len = sizeof(addr);
    int domain = -1, type = -1;
    socklen_t ilen = sizeof(int);

    if (sock < 0)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: socket %d: " PSC__SOCK_ACCEPTED, call, sock);
    if (fstat(sock, &st) != 0)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: descriptor %d is not open (%s): " PSC__SOCK_ACCEPTED, call, sock,
                         strerror(errno));
    if (!S_ISSOCK(st.st_mode))
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: descriptor %d is %s: " PSC__SOCK_ACCEPTED, call, sock,
                         psc__file_kind(st.st_mode));
    if (getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &domain, &ilen) != 0 || domain != AF_UNIX)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: descriptor %d is a socket of address family %d, not AF_UNIX: "
                         PSC__SOCK_ACCEPTED, call, sock, domain);
    ilen = sizeof(int);
    if (getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &ilen) != 0 || type != SOCK_STREAM)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: descriptor %d is a Unix socket of type %s: " PSC__SOCK_ACCEPTED,
                         call, sock, type == SOCK_DGRAM ? "SOCK_DGRAM" : type == SOCK_SEQPACKET ? "SOCK_SEQPACKET"
                                                                                                : "other than SOCK_STREAM");
    if (getpeername(sock, (struct sockaddr *)&addr, &len) != 0)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: Unix socket %d is not connected (%s): " PSC__SOCK_ACCEPTED, call,
                         sock, strerror(errno));
    len = sizeof(cred);
    if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred))
        return psc__fail(ctx, PSC_ERR_IO, "%s: socket %d: SO_PEERCRED: %s", call, sock, strerror(errno));
    *pid = cred.pid;
    *uid = cred.uid;
    return PSC_OK;
}

static psc_status_t psc__timeout_check(psc_context_t *ctx, const char *call, int timeout_ms)
{
    if (timeout_ms < 1 || timeout_ms > PSC_SHARE_SOCK_MAX_TIMEOUT_MS)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: timeout %d ms: accepted 1 to %d ms", call, timeout_ms,
                         PSC_SHARE_SOCK_MAX_TIMEOUT_MS);
    return PSC_OK;
}

static void psc__peer_name(char *out, size_t cap, int sock, pid_t pid)
{
    snprintf(out, cap, "the process at the other end of socket %d (pid %ld)", sock, (long)pid);
}

/* The peer runs as the user expected (this process's effective user), else refused naming both. */
static psc_status_t psc__peer_user(psc_context_t *ctx, const char *call, const char *peer, uid_t uid, uid_t expect_uid)
{
    if (uid != expect_uid)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: %s runs as uid %lu: accepted only this process's effective user "
                         "(uid %lu)", call, peer, (unsigned long)uid, (unsigned long)expect_uid);
    return PSC_OK;
}

/*
 * The channel over sock for one message, once the peer (pid, uid from psc__sock_check) is of the expected
 * user: named in errors by its pid. PSC_OK with *c (psc__ipc_chan_close it), else recorded.
 */
static psc_status_t psc__peer_channel(psc_context_t *ctx, const char *call, int sock, pid_t pid, uid_t uid,
                                      uid_t expect_uid, psc_ipc_chan_t **c)
{
    psc_ipc_err_t err = {PSC_OK, ""};
    char peer[96];
    psc_status_t st;

    psc__peer_name(peer, sizeof(peer), sock, pid);
    if ((st = psc__peer_user(ctx, call, peer, uid, expect_uid)) != PSC_OK)
        return st;
    if (psc__ipc_chan_borrow(sock, peer, c, &err) != PSC_OK)
        return psc__fail(ctx, err.st == PSC_OK ? PSC_ERR_IO : err.st, "%s: %s", call, err.msg);
    return PSC_OK;
}

static psc_status_t psc__failed(psc_context_t *ctx, const char *call, const psc_ipc_err_t *err)
{
    return psc__fail(ctx, err->st == PSC_OK ? PSC_ERR_IO : err->st, "%s: %s", call, err->msg);
}

/* What psc_share_send and psc_share_recv check first: a message (no_msg says what is missing), the timeout, the
 * socket and its peer's process and user. */
static psc_status_t psc__call_check(psc_context_t *ctx, const char *call, const psc_share_msg_t *msg,
                                    const char *no_msg, int sock, int timeout_ms, pid_t *pid, uid_t *uid)
{
    psc_status_t st;

    if (!msg)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: %s", call, no_msg);
    if ((st = psc__timeout_check(ctx, call, timeout_ms)) != PSC_OK)
        return st;
    return psc__sock_check(ctx, call, sock, pid, uid);
}

psc_status_t psc__share_send_as(psc_context_t *ctx, int sock, const psc_share_msg_t *msg, int timeout_ms,
                                uid_t expect_uid)
{
    static const char call[] = "psc_share_send";
    psc_ipc_err_t err = {PSC_OK, ""};
    psc_ipc_chan_t *c = NULL;
    psc_share_hdr_t h;
    char why[256];
    pid_t pid;
    uid_t uid;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if ((st = psc__call_check(ctx, call, msg, "no message (accepted: a psc_share_msg_t from psc_share_export)", sock,
                              timeout_ms, &pid, &uid)) != PSC_OK)
        return st;
    /* The receiver's checks, here first: nothing is sent that it would refuse. */
    if (psc__share_msg_decode(msg->bytes, msg->fd, &h, why, sizeof(why)) != PSC_OK)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: refused to send: %s", call, why);
    if (h.kind != PSC_SHARE_VMM_FD && msg->fd != -1)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: refused to send: a message of kind %d with descriptor %d: "
                         "accepted -1 (only PSC_SHARE_VMM_FD carries one)", call, (int)h.kind, msg->fd);
    if (h.kind == PSC_SHARE_VMM_FD && fcntl(msg->fd, F_GETFD) < 0)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: refused to send: descriptor %d of the PSC_SHARE_VMM_FD message is "
                         "not open: accepted psc_share_export's, still open", call, msg->fd);
    /* The memory goes only to this user's processes, as psc_share_recv takes only theirs. */
    if ((st = psc__peer_channel(ctx, call, sock, pid, uid, expect_uid, &c)) != PSC_OK)
        return st;
    st = psc__ipc_send_share(c, msg, psc__ipc_deadline(timeout_ms), &err);
    psc__ipc_chan_close(c);
    return st == PSC_OK ? PSC_OK : psc__failed(ctx, call, &err);
}

psc_status_t psc__share_recv_as(psc_context_t *ctx, int sock, psc_share_msg_t *msg, int timeout_ms, uid_t expect_uid)
{
    static const char call[] = "psc_share_recv";
    psc_ipc_err_t err = {PSC_OK, ""};
    psc_ipc_chan_t *c = NULL;
    psc_share_msg_t got = {{0}, -1};
    psc_share_hdr_t h;
    char why[256], peer[96];
    pid_t pid;
    uid_t uid;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if ((st = psc__call_check(ctx, call, msg, "no place for the message (accepted: a psc_share_msg_t *)", sock,
                              timeout_ms, &pid, &uid)) != PSC_OK)
        return st;
    /* Checked before anything is read: a stranger's descriptors are never taken in. */
    if ((st = psc__peer_channel(ctx, call, sock, pid, uid, expect_uid, &c)) != PSC_OK)
        return st;
    st = psc__ipc_recv_share(c, &got, psc__ipc_deadline(timeout_ms), &err);
    psc__ipc_chan_close(c);
    if (st != PSC_OK)
        return psc__failed(ctx, call, &err);
    if (psc__share_msg_decode(got.bytes, got.fd, &h, why, sizeof(why)) != PSC_OK) {
        if (got.fd >= 0)
            close(got.fd);
        psc__peer_name(peer, sizeof(peer), sock, pid);
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: %s sent a message refused: %s", call, peer, why);
    }
    *msg = got;
    return PSC_OK;
}

psc_status_t psc_share_recv(psc_context_t *ctx, int sock, psc_share_msg_t *msg, int timeout_ms)
{
    return psc__share_recv_as(ctx, sock, msg, timeout_ms, geteuid());
}

psc_status_t psc_share_send(psc_context_t *ctx, int sock, const psc_share_msg_t *msg, int timeout_ms)
{
    return psc__share_send_as(ctx, sock, msg, timeout_ms, geteuid());
}
