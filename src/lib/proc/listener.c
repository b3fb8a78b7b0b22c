/*
 * The run's listener (listener.h): its private directory and socket, and the handshake that turns a
 * connection into a channel or refuses it with a reason.
 */
#define _GNU_SOURCE
#include "proc/listener.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define PSC__SUN_PATH sizeof(((struct sockaddr_un *)0)->sun_path)
#define PSC__DIR_TEMPLATE "/p2pscope-XXXXXX"

struct psc_ipc_listener {
    int fd;
    pid_t owner; /* the process that made the directory: only it removes it */
    char dir[PSC__SUN_PATH];
    char path[PSC__SUN_PATH];
    psc_ipc_token_t token;
    int nranks, connected;
    unsigned char *taken; /* [nranks] */
    uid_t uid;
    int hello_ms;
    int refused;
    char refusals[PSC_IPC_REFUSALS_KEPT][200]; /* ring: refusals[(refused - 1) % KEPT] the latest */
};

static void __attribute__((format(printf, 2, 3))) psc__refuse(psc_ipc_listener_t *l, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(l->refusals[l->refused % PSC_IPC_REFUSALS_KEPT], sizeof(l->refusals[0]), fmt, ap);
    va_end(ap);
    l->refused++;
}

/* $XDG_RUNTIME_DIR as the XDG spec makes it: this user's, no access for others, and short enough. */
static int psc__runtime_dir_ok(const char *base)
{
    struct stat sb;

    if (!base || base[0] != '/' || strlen(base) + strlen(PSC__DIR_TEMPLATE "/" PSC_IPC_SOCKET_NAME) >= PSC__SUN_PATH)
        return 0;
    if (stat(base, &sb) != 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid() || (sb.st_mode & 077))
        return 0;
    return access(base, W_OK | X_OK) == 0;
}

static psc_status_t psc__make_dir(psc_ipc_listener_t *l, psc_ipc_err_t *err)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    const char *base = psc__runtime_dir_ok(xdg) ? xdg : "/tmp";
    struct stat sb;

    snprintf(l->dir, sizeof(l->dir), "%s" PSC__DIR_TEMPLATE, base);
    if (!mkdtemp(l->dir)) {
        int e = errno;

        l->dir[0] = '\0';
        return psc__ipc_fail(err, PSC_ERR_IO, "mkdtemp %s" PSC__DIR_TEMPLATE ": %s: the run needs a directory there",
                             base, strerror(e));
    }
    l->owner = getpid();
    /* mkdtemp's 0700 passes through the umask: set it outright. */
    if (chmod(l->dir, 0700) != 0 || lstat(l->dir, &sb) != 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid() ||
        (sb.st_mode & 07777) != 0700)
        return psc__ipc_fail(err, PSC_ERR_IO, "the run directory %s is not a directory of mode 0700 of this user",
                             l->dir);
    if (snprintf(l->path, sizeof(l->path), "%s/" PSC_IPC_SOCKET_NAME, l->dir) >= (int)sizeof(l->path)) {
        l->path[0] = '\0';
        return psc__ipc_fail(err, PSC_ERR_INVALID, "the socket path in %s is too long: accepted fewer than %zu bytes",
                             l->dir, sizeof(l->path));
    }
    return PSC_OK;
}

psc_status_t psc__ipc_listen(const psc_ipc_token_t *token, int nranks, uid_t expect_uid, psc_ipc_listener_t **out,
                             psc_ipc_err_t *err)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    psc_ipc_listener_t *l;
    psc_status_t st;

    if (!token || !out || nranks < 1 || nranks > 65536)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "a listener for %d ranks: accepted 1 to 65536 and a token",
                             nranks);
    l = calloc(1, sizeof(*l));
    if (!l || !(l->taken = calloc((size_t)nranks, 1))) {
        free(l);
        return psc__ipc_fail(err, PSC_ERR_NO_MEMORY, "no memory for a listener of %d ranks", nranks);
    }
    l->fd = -1;
    l->token = *token;
    l->nranks = nranks;
    l->uid = expect_uid;
    l->hello_ms = PSC_IPC_HELLO_MS;
    st = psc__make_dir(l, err);
    if (st != PSC_OK)
        goto fail;
    l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (l->fd < 0) {
        st = psc__ipc_fail(err, PSC_ERR_IO, "socket(AF_UNIX): %s", strerror(errno));
        goto fail;
    }
    memcpy(addr.sun_path, l->path, strlen(l->path) + 1);
    /* Bound with the umask's mode, but inside a 0700 directory: nobody else reaches it before the chmod. */
    if (bind(l->fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        st = psc__ipc_fail(err, PSC_ERR_IO, "bind %s: %s", l->path, strerror(errno));
        l->path[0] = '\0';
        goto fail;
    }
    if (chmod(l->path, 0600) != 0) {
        st = psc__ipc_fail(err, PSC_ERR_IO, "chmod 0600 %s: %s", l->path, strerror(errno));
        goto fail;
    }
    if (listen(l->fd, 128) != 0) {
        st = psc__ipc_fail(err, PSC_ERR_IO, "listen %s: %s", l->path, strerror(errno));
        goto fail;
    }
    *out = l;
    return PSC_OK;
fail:
    psc__ipc_listener_close(l);
    return st;
}

void psc__ipc_listener_retire(psc_ipc_listener_t *l)
{
    if (!l)
        return;
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
    if (l->owner == getpid()) {
        if (l->path[0])
            unlink(l->path);
        if (l->dir[0])
            rmdir(l->dir);
    }
}

void psc__ipc_listener_close(psc_ipc_listener_t *l)
{
    if (!l)
        return;
    psc__ipc_listener_retire(l);
    free(l->taken);
    free(l);
}

const char *psc__ipc_listener_path(const psc_ipc_listener_t *l)
{
    return l->path;
}

const char *psc__ipc_listener_dir(const psc_ipc_listener_t *l)
{
    return l->dir;
}

int psc__ipc_listener_fd(const psc_ipc_listener_t *l)
{
    return l->fd;
}

int psc__ipc_listener_connected(const psc_ipc_listener_t *l)
{
    return l->connected;
}

void psc__ipc_listener_set_hello_ms(psc_ipc_listener_t *l, int ms)
{
    l->hello_ms = ms > 0 ? ms : 1;
}

int psc__ipc_listener_hello_ms(const psc_ipc_listener_t *l)
{
    return l->hello_ms;
}

int psc__ipc_listener_refused(const psc_ipc_listener_t *l)
{
    return l->refused;
}

const char *psc__ipc_listener_refusal(const psc_ipc_listener_t *l, int i)
{
    if (i < 0 || i >= l->refused || i >= PSC_IPC_REFUSALS_KEPT)
        return NULL;
    return l->refusals[(l->refused - 1 - i) % PSC_IPC_REFUSALS_KEPT];
}

void psc__ipc_listener_refusal_note(const psc_ipc_listener_t *l, char *out, size_t cap)
{
    if (l->refused == 0)
        snprintf(out, cap, "%s", "");
    else
        snprintf(out, cap, "; %d connection%s refused, the last: %s", l->refused, l->refused == 1 ? "" : "s",
                 psc__ipc_listener_refusal(l, 0));
}

int psc__ipc_accept_raw(psc_ipc_listener_t *l, psc_ipc_chan_t **out, psc_ipc_err_t *err)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    char peer[64];
    psc_status_t st;
    int fd;

    do
        fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        /* Gone before it was taken: as if none had come. */
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED)
            return 0;
        return psc__ipc_fail(err, PSC_ERR_IO, "accept on %s: %s", l->path, strerror(errno));
    }
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred)) {
        psc__refuse(l, "a connection whose sender could not be read (SO_PEERCRED: %s)", strerror(errno));
        close(fd);
        return 0;
    }
    if (cred.uid != l->uid) {
        psc__refuse(l, "a connection from pid %ld of user %lu: accepted user %lu only", (long)cred.pid,
                    (unsigned long)cred.uid, (unsigned long)l->uid);
        close(fd);
        return 0;
    }
    snprintf(peer, sizeof(peer), "a connection from pid %ld", (long)cred.pid);
    st = psc__ipc_chan_wrap(fd, peer, out, err);
    if (st != PSC_OK)
        return (int)st;
    return 1;
}

/* Refuse a connection at the handshake: recorded, told to the peer if it listens at once, in err. */
static psc_status_t __attribute__((format(printf, 5, 6)))
psc__hello_refuse(psc_ipc_listener_t *l, psc_ipc_chan_t *c, psc_ipc_err_t *err, psc_status_t st, const char *fmt, ...)
{
    char why[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    psc__refuse(l, "%s", why);
    if (!psc__ipc_chan_broken(c)) {
        char text[240];

        snprintf(text, sizeof(text), "refused: %s", why);
        psc__ipc_send_error(c, text, psc__ipc_now(), NULL);
    }
    return psc__ipc_fail(err, st, "%s", why);
}

psc_status_t psc__ipc_hello_take(psc_ipc_listener_t *l, psc_ipc_chan_t *c, const pid_t *expect_pids,
                                 int64_t deadline, int *rank, psc_ipc_err_t *err)
{
    int64_t hello_by = psc__ipc_deadline(l->hello_ms);
    psc_ipc_err_t why = {0};
    psc_ipc_msg_t m;
    pid_t pid = -1;
    uid_t uid;
    unsigned char welcome[8];
    char peer[64];
    uint32_t r;

    psc__ipc_chan_peercred(c, &pid, &uid, NULL);
    if (psc__ipc_recv(c, &m, hello_by < deadline ? hello_by : deadline, &why) != PSC_OK) {
        if (why.st == PSC_ERR_TIMEOUT)
            return psc__hello_refuse(l, c, err, why.st, "%s: no complete HELLO in time (%d ms allowed)",
                                     psc__ipc_chan_peer(c), l->hello_ms);
        return psc__hello_refuse(l, c, err, why.st, "%s", why.msg);
    }
    if (m.type != PSC_IPC_HELLO) {
        psc__ipc_msg_close_fds(&m);
        return psc__hello_refuse(l, c, err, PSC_ERR_INVALID, "%s: began with a %s: accepted a HELLO first",
                                 psc__ipc_chan_peer(c), psc__ipc_type_name(m.type));
    }
    if (!psc__ipc_token_equal(m.payload, l->token.b))
        return psc__hello_refuse(l, c, err, PSC_ERR_INVALID, "%s: HELLO with a wrong run token: accepted this run's",
                                 psc__ipc_chan_peer(c));
    r = psc__ipc_get_u32(m.payload + PSC_IPC_TOKEN_SIZE);
    if (r >= (uint32_t)l->nranks)
        return psc__hello_refuse(l, c, err, PSC_ERR_INVALID, "%s: HELLO for rank %u: accepted 0 to %d",
                                 psc__ipc_chan_peer(c), (unsigned)r, l->nranks - 1);
    if (l->taken[r])
        return psc__hello_refuse(l, c, err, PSC_ERR_INVALID, "%s: HELLO for rank %u, which is connected already",
                                 psc__ipc_chan_peer(c), (unsigned)r);
    if (expect_pids && expect_pids[r] != pid)
        return psc__hello_refuse(l, c, err, PSC_ERR_INVALID, "%s: HELLO for rank %u: accepted from pid %ld only",
                                 psc__ipc_chan_peer(c), (unsigned)r, (long)expect_pids[r]);
    snprintf(peer, sizeof(peer), "worker %u (pid %ld)", (unsigned)r, (long)pid);
    psc__ipc_chan_set_peer(c, peer);
    psc__ipc_put_u32(welcome, r);
    psc__ipc_put_u32(welcome + 4, (uint32_t)l->nranks);
    if (psc__ipc_send(c, PSC_IPC_WELCOME, 0, welcome, sizeof(welcome), NULL, 0, deadline, &why) != PSC_OK)
        return psc__hello_refuse(l, c, err, why.st, "%s", why.msg);
    l->taken[r] = 1;
    l->connected++;
    *rank = (int)r;
    return PSC_OK;
}

psc_status_t psc__ipc_accept(psc_ipc_listener_t *l, const pid_t *expect_pids, int64_t deadline,
                             psc_ipc_chan_t **out, int *rank, psc_ipc_err_t *err)
{
    int64_t start = psc__ipc_now();

    for (;;) {
        struct pollfd p = {.fd = l->fd, .events = POLLIN};
        int64_t left = deadline - psc__ipc_now();
        psc_ipc_chan_t *c = NULL;
        char note[300];
        int rc;

        if (left > 0) {
            rc = poll(&p, 1, (int)((left + 999999) / 1000000 > 1000000000 ? 1000000000 : (left + 999999) / 1000000));
            if (rc < 0 && errno != EINTR)
                return psc__ipc_fail(err, PSC_ERR_IO, "poll on %s: %s", l->path, strerror(errno));
        }
        rc = psc__ipc_accept_raw(l, &c, err);
        if (rc < 0)
            return (psc_status_t)rc;
        if (rc > 0) {
            if (psc__ipc_hello_take(l, c, expect_pids, deadline, rank, NULL) == PSC_OK) {
                *out = c;
                return PSC_OK;
            }
            psc__ipc_chan_close(c);
            continue;
        }
        if (psc__ipc_now() < deadline)
            continue;
        psc__ipc_listener_refusal_note(l, note, sizeof(note));
        return psc__ipc_fail(err, PSC_ERR_TIMEOUT, "no worker connected within %lld ms on %s%s",
                             (long long)((psc__ipc_now() - start) / 1000000), l->path, note);
    }
}

psc_status_t psc__ipc_connect(const char *path, const psc_ipc_token_t *token, int rank, int64_t deadline,
                              psc_ipc_chan_t **out, int *nranks, psc_ipc_err_t *err)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    unsigned char hello[PSC_IPC_TOKEN_SIZE + 8];
    psc_ipc_chan_t *c = NULL;
    psc_ipc_msg_t m;
    char peer[64];
    pid_t pid;
    uid_t uid;
    psc_status_t st;
    int fd;

    if (!path || !token || !out || rank < 0 || strlen(path) >= sizeof(addr.sun_path))
        return psc__ipc_fail(err, PSC_ERR_INVALID, "connect to %s as rank %d: accepted a socket path of fewer than "
                             "%zu bytes, a token and a rank of 0 or more", path ? path : "(none)", rank,
                             sizeof(addr.sun_path));
    memcpy(addr.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return psc__ipc_fail(err, PSC_ERR_IO, "socket(AF_UNIX): %s", strerror(errno));
    for (;;) {
        int64_t left;

        if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0)
            break;
        if (errno == EINTR)
            continue;
        if (errno == EISCONN) /* an interrupted connect that went through */
            break;
        left = deadline - psc__ipc_now();
        /* A full backlog: try again shortly, until the deadline. */
        if (errno == EAGAIN && left > 0) {
            poll(NULL, 0, left > 10000000 ? 10 : (int)((left + 999999) / 1000000));
            continue;
        }
        st = psc__ipc_fail(err, errno == EAGAIN ? PSC_ERR_TIMEOUT : PSC_ERR_IO, "connect to %s: %s", path,
                           strerror(errno));
        close(fd);
        return st;
    }
    st = psc__ipc_chan_wrap(fd, "the parent", &c, err);
    if (st != PSC_OK)
        return st;
    st = psc__ipc_chan_peercred(c, &pid, &uid, err);
    if (st != PSC_OK)
        goto fail;
    if (uid != geteuid()) {
        st = psc__ipc_fail(err, PSC_ERR_INVALID, "%s is served by pid %ld of user %lu: accepted user %lu only", path,
                           (long)pid, (unsigned long)uid, (unsigned long)geteuid());
        goto fail;
    }
    snprintf(peer, sizeof(peer), "the parent (pid %ld)", (long)pid);
    psc__ipc_chan_set_peer(c, peer);
    memcpy(hello, token->b, PSC_IPC_TOKEN_SIZE);
    psc__ipc_put_u32(hello + PSC_IPC_TOKEN_SIZE, (uint32_t)rank);
    psc__ipc_put_u32(hello + PSC_IPC_TOKEN_SIZE + 4, 0);
    st = psc__ipc_send(c, PSC_IPC_HELLO, 0, hello, sizeof(hello), NULL, 0, deadline, err);
    if (st != PSC_OK)
        goto fail;
    st = psc__ipc_recv_type(c, PSC_IPC_WELCOME, &m, deadline, err);
    if (st != PSC_OK)
        goto fail;
    if (psc__ipc_get_u32(m.payload) != (uint32_t)rank) {
        st = psc__ipc_fail(err, PSC_ERR_INVALID, "%s: WELCOME for rank %u: this worker is rank %d", peer,
                           (unsigned)psc__ipc_get_u32(m.payload), rank);
        goto fail;
    }
    if (nranks)
        *nranks = (int)psc__ipc_get_u32(m.payload + 4);
    *out = c;
    return PSC_OK;
fail:
    psc__ipc_chan_close(c);
    return st;
}
