#define _GNU_SOURCE
#include "proc/channel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* Room for every descriptor one recvmsg may bring (SCM_MAX_FD), so a flood is counted and closed, never cut. */
#define PSC__FD_ROOM 253

struct psc_ipc_chan {
    int fd;
    int borrowed; /* the caller's socket: never closed here */
    uint64_t send_seq, recv_seq;
    char peer[96];
    char broken[300]; /* the first reason the channel lost its framing, or "" */
    unsigned char *buf;                              /* PSC_IPC_MAX_PAYLOAD bytes */
};

psc_status_t psc__ipc_chan_borrow(int fd, const char *peer, psc_ipc_chan_t **out, psc_ipc_err_t *err)
{
    psc_ipc_chan_t *c = calloc(1, sizeof(*c));

    if (!c || !(c->buf = malloc(PSC_IPC_MAX_PAYLOAD))) {
        free(c);
        return psc__ipc_fail(err, PSC_ERR_NO_MEMORY, "no memory for a channel to %s", peer);
    }
    c->fd = fd;
    c->borrowed = 1;
    snprintf(c->peer, sizeof(c->peer), "%s", peer);
    *out = c;
    return PSC_OK;
}

psc_status_t psc__ipc_chan_wrap(int fd, const char *peer, psc_ipc_chan_t **out, psc_ipc_err_t *err)
{
    psc_ipc_chan_t *c = calloc(1, sizeof(*c));
    int fl;

    if (!c || !(c->buf = malloc(PSC_IPC_MAX_PAYLOAD))) {
        free(c);
        close(fd);
        return psc__ipc_fail(err, PSC_ERR_NO_MEMORY, "no memory for a channel to %s", peer);
    }
    fl = fcntl(fd, F_GETFD);
    if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0) {
        int e = errno;

        free(c->buf);
        free(c);
        close(fd);
        return psc__ipc_fail(err, PSC_ERR_INVALID, "a channel to %s over descriptor %d: %s: accepted an open socket",
                             peer, fd, strerror(e));
    }
    c->fd = fd;
    snprintf(c->peer, sizeof(c->peer), "%s", peer);
    *out = c;
    return PSC_OK;
}

void psc__ipc_chan_close(psc_ipc_chan_t *c)
{
    if (!c)
        return;
    if (c->fd >= 0 && !c->borrowed)
        close(c->fd);
    free(c->buf);
    free(c);
}

int psc__ipc_chan_fd(const psc_ipc_chan_t *c)
{
    return c->fd;
}

const char *psc__ipc_chan_peer(const psc_ipc_chan_t *c)
{
    return c->peer;
}

void psc__ipc_chan_set_peer(psc_ipc_chan_t *c, const char *peer)
{
    snprintf(c->peer, sizeof(c->peer), "%s", peer);
}

int psc__ipc_chan_broken(const psc_ipc_chan_t *c)
{
    return c->broken[0] != '\0';
}

psc_status_t psc__ipc_chan_peercred(const psc_ipc_chan_t *c, pid_t *pid, uid_t *uid, psc_ipc_err_t *err)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);

    if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred))
        return psc__ipc_fail(err, PSC_ERR_IO, "%s: SO_PEERCRED: %s", c->peer, strerror(errno));
    *pid = cred.pid;
    *uid = cred.uid;
    return PSC_OK;
}

/* Record a failure naming the peer; with lost != 0 the channel refuses every later call with it. */
static psc_status_t __attribute__((format(printf, 5, 6)))
psc__chan_fail(psc_ipc_chan_t *c, psc_ipc_err_t *err, psc_status_t st, int lost, const char *fmt, ...)
{
    char what[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (lost && !c->broken[0] && snprintf(c->broken, sizeof(c->broken), "%s: %s", c->peer, what) < 0)
        snprintf(c->broken, sizeof(c->broken), "%s", "lost framing");
    return psc__ipc_fail(err, st, "%s: %s", c->peer, what);
}

static psc_status_t psc__check_usable(psc_ipc_chan_t *c, psc_ipc_err_t *err)
{
    if (c->broken[0])
        return psc__ipc_fail(err, PSC_ERR_IO, "channel unusable after an earlier error (%s)", c->broken);
    return PSC_OK;
}

/* Milliseconds to the deadline for poll, rounded up so a wait never ends before it; -1 when it has passed. */
static int psc__ms_left(int64_t deadline)
{
    int64_t left = deadline - psc__ipc_now();

    if (left <= 0)
        return -1;
    left = (left + 999999) / 1000000;
    return left > 1000000000 ? 1000000000 : (int)left;
}

/* Wait for events on the socket: 1 ready, 0 deadline passed, -1 poll failed (errno). */
static int psc__wait(int fd, short events, int64_t deadline)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        int ms = psc__ms_left(deadline), rc;

        if (ms < 0)
            ms = 0;
        rc = poll(&p, 1, ms);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0)
            return -1;
        if (rc > 0) {
            if (p.revents & POLLNVAL) {
                errno = EBADF;
                return -1;
            }
            return 1;
        }
        if (psc__ms_left(deadline) < 0)
            return 0;
    }
}

/* One frame to send: its header's bytes, its payload, the descriptors that ride on it. */
typedef struct {
    unsigned type;
    uint32_t flags, len;
    const void *payload;
    const int *fds;
    int nfds;
    unsigned char head[PSC_IPC_HEADER_SIZE];
} psc__tx_frame_t;

/* The frame's header encoded, after the receiver's checks made here first: a malformed message is never sent. */
static psc_status_t psc__send_prepare(psc_ipc_chan_t *c, psc__tx_frame_t *tx, psc_ipc_err_t *err)
{
    psc_ipc_header_t h = {PSC_IPC_MAGIC, PSC_IPC_VERSION, (uint16_t)tx->type, tx->flags, tx->len, 0};
    psc_ipc_header_t chk;
    psc_ipc_err_t why = {0};

    h.seq = c->send_seq;
    if (tx->type > UINT16_MAX || tx->nfds < 0 || tx->nfds > PSC_IPC_MAX_FDS || (tx->len && !tx->payload) ||
        (tx->nfds && !tx->fds))
        return psc__chan_fail(c, err, PSC_ERR_INVALID, 0, "refused to send a %s: a bad argument",
                              psc__ipc_type_name(tx->type));
    psc__ipc_header_encode(&h, tx->head);
    if (psc__ipc_header_decode(tx->head, c->send_seq, &chk, &why) != PSC_OK ||
        psc__ipc_frame_check(&chk, tx->payload, tx->nfds, &why) != PSC_OK)
        return psc__chan_fail(c, err, PSC_ERR_INVALID, 0, "refused to send: %s", why.msg);
    for (int i = 0; i < tx->nfds; i++)
        if (tx->fds[i] < 0 || fcntl(tx->fds[i], F_GETFD) < 0)
            return psc__chan_fail(c, err, PSC_ERR_INVALID, 0, "refused to send a %s: descriptor %d is not open",
                                  psc__ipc_type_name(tx->type), tx->fds[i]);
    return PSC_OK;
}

/* One sendmsg of what is left of the frame after its first `sent` bytes, without waiting: sendmsg's result, errno
 * as it left it. The descriptors ride on the frame's first byte. */
static ssize_t psc__send_some(int fd, const psc__tx_frame_t *tx, size_t sent)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * PSC_IPC_MAX_FDS)];
    } ctl;
    struct iovec iov[2];
    struct msghdr m = {0};
    int niov = 0;

    if (sent < PSC_IPC_HEADER_SIZE) {
        iov[niov].iov_base = (unsigned char *)tx->head + sent;
        iov[niov++].iov_len = PSC_IPC_HEADER_SIZE - sent;
    }
    if (tx->len) {
        size_t off = sent > PSC_IPC_HEADER_SIZE ? sent - PSC_IPC_HEADER_SIZE : 0;

        iov[niov].iov_base = (unsigned char *)tx->payload + off;
        iov[niov++].iov_len = tx->len - off;
    }
    m.msg_iov = iov;
    m.msg_iovlen = (size_t)niov;
    if (sent == 0 && tx->nfds > 0) {
        struct cmsghdr *cm;

        memset(&ctl, 0, sizeof(ctl));
        m.msg_control = ctl.buf;
        m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)tx->nfds);
        cm = CMSG_FIRSTHDR(&m);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)tx->nfds);
        memcpy(CMSG_DATA(cm), tx->fds, sizeof(int) * (size_t)tx->nfds);
    }
    return sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* sendmsg failed with errno e (not a retry): the peer gone, or another error after `sent` bytes. */
static psc_status_t psc__send_failed(psc_ipc_chan_t *c, const psc__tx_frame_t *tx, size_t sent, int e,
                                     psc_ipc_err_t *err)
{
    if (e == EPIPE || e == ECONNRESET || e == ENOTCONN)
        return psc__chan_fail(c, err, PSC_ERR_IO, 1, "gone: the connection closed while sending a %s (%s)",
                              psc__ipc_type_name(tx->type), strerror(e));
    return psc__chan_fail(c, err, PSC_ERR_IO, sent > 0, "sending a %s: %s", psc__ipc_type_name(tx->type), strerror(e));
}

psc_status_t psc__ipc_send(psc_ipc_chan_t *c, unsigned type, uint32_t flags, const void *payload, uint32_t len,
                           const int *fds, int nfds, int64_t deadline, psc_ipc_err_t *err)
{
    psc__tx_frame_t tx = {type, flags, len, payload, fds, nfds, {0}};
    size_t total = PSC_IPC_HEADER_SIZE + len, sent = 0;
    psc_status_t st = psc__check_usable(c, err);

    if (st != PSC_OK || (st = psc__send_prepare(c, &tx, err)) != PSC_OK)
        return st;
    while (sent < total) {
        ssize_t n = psc__send_some(c->fd, &tx, sent);
        int w;

        if (n > 0) {
            sent += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return psc__send_failed(c, &tx, sent, errno, err);
        w = psc__wait(c->fd, POLLOUT, deadline);
        if (w < 0)
            return psc__chan_fail(c, err, PSC_ERR_IO, sent > 0, "poll: %s", strerror(errno));
        if (w == 0)
            return psc__chan_fail(c, err, PSC_ERR_TIMEOUT, sent > 0,
                                  "did not take a %s before the deadline (%zu of %zu bytes sent)",
                                  psc__ipc_type_name(type), sent, total);
    }
    c->send_seq++;
    return PSC_OK;
}

/* The descriptors collected while one frame is read. */
typedef struct {
    int fds[PSC_IPC_MAX_FDS];
    int kept, count; /* kept in fds[], and all that came (the rest closed at once) */
    int cut;         /* MSG_CTRUNC: the kernel dropped control data */
    int other;       /* control data other than SCM_RIGHTS */
} psc__rx_fds_t;

static void psc__take_fds(struct msghdr *m, psc__rx_fds_t *rx)
{
    if (m->msg_flags & MSG_CTRUNC)
        rx->cut = 1;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(m); cm; cm = CMSG_NXTHDR(m, cm)) {
        size_t n;

        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) {
            rx->other = 1;
            continue;
        }
        n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;

            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            rx->count++;
            if (rx->kept < PSC_IPC_MAX_FDS)
                rx->fds[rx->kept++] = fd;
            else
                close(fd);
        }
    }
}

static void psc__drop_fds(psc__rx_fds_t *rx)
{
    for (int i = 0; i < rx->kept; i++)
        close(rx->fds[i]);
    rx->kept = 0;
}

/*
 * Read exactly n bytes of the current frame into p. what names the part
 * ("header", "REQUEST payload") and done how much of the frame came before.
 */
static psc_status_t psc__read_exact(psc_ipc_chan_t *c, unsigned char *p, size_t n, const char *what, size_t frame_done,
                                    psc__rx_fds_t *rx, int64_t deadline, int64_t start, psc_ipc_err_t *err)
{
    size_t got = 0;

    while (got < n) {
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(sizeof(int) * PSC__FD_ROOM)];
        } ctl;
        struct iovec iov = {p + got, n - got};
        struct msghdr m = {0};
        ssize_t r;
        int w;

        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = ctl.buf;
        m.msg_controllen = sizeof(ctl.buf);
        r = recvmsg(c->fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (r >= 0)
            psc__take_fds(&m, rx);
        if (r > 0) {
            got += (size_t)r;
            continue;
        }
        if (r == 0) {
            if (frame_done + got == 0)
                return psc__chan_fail(c, err, PSC_ERR_IO, 1, "closed the connection");
            return psc__chan_fail(c, err, PSC_ERR_IO, 1,
                                  "closed the connection in the middle of a message (%zu of %zu %s bytes)", got, n,
                                  what);
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            int e = errno;

            if (e == ECONNRESET)
                return psc__chan_fail(c, err, PSC_ERR_IO, 1, "gone: the connection was reset");
            return psc__chan_fail(c, err, PSC_ERR_IO, 1, "receiving: %s", strerror(e));
        }
        w = psc__wait(c->fd, POLLIN, deadline);
        if (w < 0)
            return psc__chan_fail(c, err, PSC_ERR_IO, frame_done + got > 0, "poll: %s", strerror(errno));
        if (w == 0) {
            long long waited = (long long)((psc__ipc_now() - start) / 1000000);

            if (frame_done + got == 0)
                return psc__chan_fail(c, err, PSC_ERR_TIMEOUT, 0, "no message within %lld ms", waited);
            return psc__chan_fail(c, err, PSC_ERR_TIMEOUT, 1,
                                  "a message stopped coming: %zu of %zu %s bytes within %lld ms", got, n, what, waited);
        }
    }
    return PSC_OK;
}

psc_status_t psc__ipc_recv(psc_ipc_chan_t *c, psc_ipc_msg_t *msg, int64_t deadline, psc_ipc_err_t *err)
{
    unsigned char head[PSC_IPC_HEADER_SIZE];
    char what[48];
    psc__rx_fds_t rx = {0};
    psc_ipc_header_t h;
    psc_ipc_err_t why = {0};
    int64_t start = psc__ipc_now();
    psc_status_t st = psc__check_usable(c, err);

    if (st != PSC_OK)
        return st;
    st = psc__read_exact(c, head, sizeof(head), "header", 0, &rx, deadline, start, err);
    if (st != PSC_OK)
        goto fail;
    if (psc__ipc_header_decode(head, c->recv_seq, &h, &why) != PSC_OK) {
        st = psc__chan_fail(c, err, PSC_ERR_INVALID, 1, "malformed message: %s", why.msg);
        goto fail;
    }
    snprintf(what, sizeof(what), "%s payload", psc__ipc_type_name(h.type));
    st = psc__read_exact(c, c->buf, h.len, what, sizeof(head), &rx, deadline, start, err);
    if (st != PSC_OK)
        goto fail;
    if (rx.cut || rx.other) {
        st = psc__chan_fail(c, err, PSC_ERR_INVALID, 1, "malformed message: %s with %s: accepted only SCM_RIGHTS, "
                            "at most %d descriptors", psc__ipc_type_name(h.type),
                            rx.cut ? "control data cut short (MSG_CTRUNC)" : "control data other than descriptors",
                            PSC_IPC_MAX_FDS);
        goto fail;
    }
    if (psc__ipc_frame_check(&h, c->buf, rx.count, &why) != PSC_OK) {
        st = psc__chan_fail(c, err, PSC_ERR_INVALID, 1, "malformed message: %s", why.msg);
        goto fail;
    }
    c->recv_seq++;
    memset(msg, 0, sizeof(*msg));
    msg->type = h.type;
    msg->flags = h.flags;
    msg->len = h.len;
    msg->seq = h.seq;
    msg->payload = c->buf;
    msg->nfds = rx.kept;
    for (int i = 0; i < PSC_IPC_MAX_FDS; i++)
        msg->fds[i] = i < rx.kept ? rx.fds[i] : -1;
    return PSC_OK;
fail:
    psc__drop_fds(&rx);
    return st;
}

void psc__ipc_msg_error_text(const psc_ipc_msg_t *m, char *out, size_t cap)
{
    size_t n = m->len < cap - 1 ? m->len : cap - 1;

    for (size_t i = 0; i < n; i++)
        out[i] = m->payload[i] < 0x20 || m->payload[i] == 0x7f ? '?' : (char)m->payload[i];
    out[n] = '\0';
}

/* m is not what the caller waits for (want names it): an ERROR says why the peer gave up, else a refusal. */
static psc_status_t psc__unexpected(psc_ipc_chan_t *c, psc_ipc_msg_t *m, const char *want, psc_ipc_err_t *err)
{
    psc__ipc_msg_close_fds(m);
    if (m->type == PSC_IPC_ERROR) {
        char text[200];

        psc__ipc_msg_error_text(m, text, sizeof(text));
        return psc__ipc_fail(err, PSC_ERR_IO, "%s reported: %s", c->peer, text);
    }
    return psc__ipc_fail(err, PSC_ERR_INVALID, "%s: sent a %s: expected %s here", c->peer,
                         psc__ipc_type_name(m->type), want);
}

psc_status_t psc__ipc_recv_type(psc_ipc_chan_t *c, unsigned type, psc_ipc_msg_t *msg, int64_t deadline,
                                psc_ipc_err_t *err)
{
    psc_ipc_msg_t m;
    char want[32];
    psc_status_t st = psc__ipc_recv(c, &m, deadline, err);

    if (st != PSC_OK)
        return st;
    if (m.type == type) {
        *msg = m;
        return PSC_OK;
    }
    snprintf(want, sizeof(want), "a %s", psc__ipc_type_name(type));
    return psc__unexpected(c, &m, want, err);
}

psc_status_t psc__ipc_send_share(psc_ipc_chan_t *c, const psc_share_msg_t *msg, int64_t deadline,
                                 psc_ipc_err_t *err)
{
    if (msg->fd >= 0)
        return psc__ipc_send(c, PSC_IPC_SHARE_FD, 0, msg->bytes, PSC_SHARE_MSG_LEN, &msg->fd, 1, deadline, err);
    return psc__ipc_send(c, PSC_IPC_SHARE, 0, msg->bytes, PSC_SHARE_MSG_LEN, NULL, 0, deadline, err);
}

psc_status_t psc__ipc_recv_share(psc_ipc_chan_t *c, psc_share_msg_t *msg, int64_t deadline, psc_ipc_err_t *err)
{
    psc_ipc_msg_t m;
    psc_status_t st = psc__ipc_recv(c, &m, deadline, err);

    if (st != PSC_OK)
        return st;
    if (m.type != PSC_IPC_SHARE && m.type != PSC_IPC_SHARE_FD)
        return psc__unexpected(c, &m, "a SHARE or SHARE_FD", err);
    memcpy(msg->bytes, m.payload, PSC_SHARE_MSG_LEN);
    msg->fd = m.type == PSC_IPC_SHARE_FD ? m.fds[0] : -1;
    return PSC_OK;
}

psc_status_t psc__ipc_send_error(psc_ipc_chan_t *c, const char *text, int64_t deadline, psc_ipc_err_t *err)
{
    size_t n = text ? strnlen(text, PSC_IPC_MAX_ERROR_TEXT) : 0;

    if (n == 0)
        return psc__ipc_send(c, PSC_IPC_ERROR, 0, "?", 1, NULL, 0, deadline, err);
    return psc__ipc_send(c, PSC_IPC_ERROR, 0, text, (uint32_t)n, NULL, 0, deadline, err);
}

void psc__ipc_msg_close_fds(psc_ipc_msg_t *m)
{
    for (int i = 0; i < m->nfds; i++)
        if (m->fds[i] >= 0) {
            close(m->fds[i]);
            m->fds[i] = -1;
        }
    m->nfds = 0;
}
