/*
 * psc_share_send / psc_share_recv over an application's own Unix socket,
 * without a GPU (a context on the fake driver; no call reaches it): a memfd
 * stands in for an exported allocation and is read back through the
 * descriptor received; messages back to back and the application's own bytes
 * after them; the socket's flags left as found; deadlines; a peer that dies
 * mid-frame; forged frames of every kind; a stranger; bad messages and bad
 * sockets refused with nothing sent. No descriptor may leak.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake_context.h"
#include "proc/message.h"
#include "share/share_msg.h"
#include "share/share_send.h"
#include "process_checks.h"
#include "raw_send.h"

#define UUID "GPU-5c6e8ae8-9cd6-8d25-d0ef-be721e5f66d9"

static int setup(void **state)
{
    psc_test_fake_driver("contexts", "1");
    return psc_test_open_ctx(state);
}

/* A message of the kind as psc_share_export makes it; fd: the descriptor for VMM_FD, else -1. */
static psc_share_msg_t sample(psc_share_kind_t kind, int fd, uint64_t size)
{
    psc_share_hdr_t h;
    psc_share_msg_t m;

    memset(&h, 0, sizeof(h));
    h.kind = kind;
    h.size = kind == PSC_SHARE_EVENT ? 0 : size;
    h.alloc_size = kind == PSC_SHARE_EVENT ? 0 : 2u << 20;
    h.pid = (uint32_t)getpid();
    strcpy(h.uuid, UUID);
    if (kind != PSC_SHARE_VMM_FD)
        for (int i = 0; i < PSC_SHARE_HANDLE_LEN; i++)
            h.handle[i] = (unsigned char)(i * 11 + (int)size);
    psc__share_msg_encode(&h, m.bytes);
    m.fd = fd;
    return m;
}

static void pair(int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

static void close_pair(int sv[2])
{
    close(sv[0]);
    close(sv[1]);
}

/* Bytes waiting to be read on fd. */
static int pending(int fd)
{
    int n = -1;

    assert_int_equal(ioctl(fd, FIONREAD, &n), 0);
    return n;
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* The call failed with want, and the context's record holds part (and, where given, part2). */
static void expect_fail(psc_status_t got, psc_status_t want, const char *part, const char *part2)
{
    const char *e = psc_context_last_error(g_ctx);

    if (got != want || !strstr(e, part) || (part2 && !strstr(e, part2)))
        fail_msg("status %d, wanted %d; record \"%s\", wanted \"%s\"%s%s", got, want, e, part, part2 ? " and " : "",
                 part2 ? part2 : "");
}

/* A frame: header (magic, type, len, seq) and payload, into out; returns its length. */
static size_t frame(unsigned char *out, uint32_t magic, unsigned type, const void *payload, uint32_t len, uint64_t seq)
{
    psc_ipc_header_t h = {magic, PSC_IPC_VERSION, (uint16_t)type, 0, len, seq};

    psc__ipc_header_encode(&h, out);
    memcpy(out + PSC_IPC_HEADER_SIZE, payload, len);
    return PSC_IPC_HEADER_SIZE + len;
}

static void test_each_kind_round_trips(void **state)
{
    psc_share_kind_t kinds[] = {PSC_SHARE_LEGACY, PSC_SHARE_VMM_FABRIC, PSC_SHARE_EVENT};
    int before = psc_test_open_fds(), sv[2];

    (void)state;
    pair(sv);
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        psc_share_msg_t out = sample(kinds[k], -1, 1000 + k), in;

        memset(&in, 0xAB, sizeof(in));
        assert_int_equal(psc_share_send(g_ctx, sv[0], &out, 2000), PSC_OK);
        assert_int_equal(psc_share_recv(g_ctx, sv[1], &in, 2000), PSC_OK);
        assert_memory_equal(in.bytes, out.bytes, PSC_SHARE_MSG_LEN);
        assert_int_equal(in.fd, -1);
        assert_int_equal(pending(sv[1]), 0); /* exactly one frame read */
    }
    close_pair(sv);
    assert_int_equal(psc_test_open_fds(), before);
}

static void test_vmm_fd_passes_the_same_file(void **state)
{
    unsigned char bytes[8192], back[8192];
    int before = psc_test_open_fds(), sv[2], fd, n;
    psc_share_msg_t out, in;
    struct stat sa, sb;

    (void)state;
    for (size_t i = 0; i < sizeof(bytes); i++)
        bytes[i] = (unsigned char)(i * 131 + 7);
    fd = psc_test_memfd_with(bytes, sizeof(bytes));
    out = sample(PSC_SHARE_VMM_FD, fd, sizeof(bytes));
    pair(sv);
    assert_int_equal(psc_share_send(g_ctx, sv[0], &out, 2000), PSC_OK);
    assert_true(fcntl(fd, F_GETFD) >= 0); /* the caller's stays open */
    n = psc_test_open_fds();
    assert_int_equal(psc_share_recv(g_ctx, sv[1], &in, 2000), PSC_OK);
    assert_int_equal(psc_test_open_fds(), n + 1);
    assert_memory_equal(in.bytes, out.bytes, PSC_SHARE_MSG_LEN);
    assert_true(in.fd >= 0);
    assert_int_not_equal(in.fd, fd);
    assert_true(fcntl(in.fd, F_GETFD) & FD_CLOEXEC);
    assert_int_equal(fstat(fd, &sa), 0);
    assert_int_equal(fstat(in.fd, &sb), 0);
    assert_int_equal(sa.st_ino, sb.st_ino);
    assert_int_equal(sa.st_dev, sb.st_dev);
    /* One file: what the exporter's descriptor holds reads back through the received one, and back again. */
    assert_int_equal(pread(in.fd, back, sizeof(back), 0), (ssize_t)sizeof(back));
    assert_memory_equal(back, bytes, sizeof(back));
    assert_int_equal(pwrite(in.fd, "importer", 8, 100), 8);
    assert_int_equal(pread(fd, back, 8, 100), 8);
    assert_memory_equal(back, "importer", 8);
    close(in.fd);
    close(fd);
    close_pair(sv);
    assert_int_equal(psc_test_open_fds(), before);
}

static void test_back_to_back_then_application_bytes(void **state)
{
    unsigned char bytes[64] = {1, 2, 3};
    int before = psc_test_open_fds(), sv[2], fd = psc_test_memfd_with(bytes, sizeof(bytes));
    psc_share_msg_t out[3] = {sample(PSC_SHARE_LEGACY, -1, 11), sample(PSC_SHARE_VMM_FD, fd, 22),
                              sample(PSC_SHARE_EVENT, -1, 33)};
    char tail[8] = "";

    (void)state;
    pair(sv);
    for (int i = 0; i < 3; i++)
        assert_int_equal(psc_share_send(g_ctx, sv[0], &out[i], 2000), PSC_OK);
    assert_int_equal(write(sv[0], "app!", 4), 4); /* the application's own traffic after them */
    for (int i = 0; i < 3; i++) {
        psc_share_msg_t in;

        assert_int_equal(psc_share_recv(g_ctx, sv[1], &in, 2000), PSC_OK);
        assert_memory_equal(in.bytes, out[i].bytes, PSC_SHARE_MSG_LEN);
        assert_int_equal(in.fd >= 0, i == 1);
        if (in.fd >= 0)
            close(in.fd);
    }
    assert_int_equal(pending(sv[1]), 4); /* none of it taken */
    assert_int_equal(read(sv[1], tail, 4), 4);
    assert_memory_equal(tail, "app!", 4);
    close(fd);
    close_pair(sv);
    assert_int_equal(psc_test_open_fds(), before);
}

static void test_socket_flags_left_as_found(void **state)
{
    (void)state;
    for (int nonblock = 0; nonblock < 2; nonblock++)
        for (int cloexec = 0; cloexec < 2; cloexec++) {
            unsigned char bytes[16] = {9};
            int sv[2], fl[2], fd_fl[2], fd = psc_test_memfd_with(bytes, sizeof(bytes));
            psc_share_msg_t out = sample(PSC_SHARE_VMM_FD, fd, 16), in;

            assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
            for (int s = 0; s < 2; s++) {
                assert_int_equal(fcntl(sv[s], F_SETFL, nonblock ? O_NONBLOCK : 0), 0);
                assert_int_equal(fcntl(sv[s], F_SETFD, cloexec ? FD_CLOEXEC : 0), 0);
                fl[s] = fcntl(sv[s], F_GETFL);
                fd_fl[s] = fcntl(sv[s], F_GETFD);
            }
            assert_int_equal(psc_share_send(g_ctx, sv[0], &out, 2000), PSC_OK);
            assert_int_equal(psc_share_recv(g_ctx, sv[1], &in, 2000), PSC_OK);
            close(in.fd);
            /* A timeout and a refusal change nothing either. */
            expect_fail(psc_share_recv(g_ctx, sv[1], &in, 1), PSC_ERR_TIMEOUT, "no message", NULL);
            out.fd = -1;
            assert_int_equal(psc_share_send(g_ctx, sv[0], &out, 2000), PSC_ERR_INVALID);
            for (int s = 0; s < 2; s++) {
                assert_int_equal(fcntl(sv[s], F_GETFL), fl[s]); /* open, O_NONBLOCK as it was */
                assert_int_equal(fcntl(sv[s], F_GETFD), fd_fl[s]);
                assert_int_equal(!!(fl[s] & O_NONBLOCK), nonblock);
                assert_int_equal(!!(fd_fl[s] & FD_CLOEXEC), cloexec);
            }
            close(fd);
            close_pair(sv);
        }
}

static void test_timeout_when_nothing_comes(void **state)
{
    int before = psc_test_open_fds(), sv[2];
    psc_share_msg_t in, out = sample(PSC_SHARE_LEGACY, -1, 5);
    struct timespec t0;
    double ms;

    (void)state;
    pair(sv);
    memset(&in, 0xAB, sizeof(in));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect_fail(psc_share_recv(g_ctx, sv[1], &in, 150), PSC_ERR_TIMEOUT, "psc_share_recv", "no message within");
    ms = ms_since(&t0);
    assert_true(ms >= 149.0);
    assert_true(ms < 3000.0);
    assert_int_equal(in.fd, (int)0xABABABAB); /* untouched */
    /* Nothing was read: the socket still carries a message whole. */
    assert_int_equal(psc_share_send(g_ctx, sv[0], &out, 2000), PSC_OK);
    assert_int_equal(psc_share_recv(g_ctx, sv[1], &in, 2000), PSC_OK);
    assert_memory_equal(in.bytes, out.bytes, PSC_SHARE_MSG_LEN);
    close_pair(sv);
    assert_int_equal(psc_test_open_fds(), before);
}

static void test_send_times_out_when_the_peer_reads_nothing(void **state)
{
    int before = psc_test_open_fds(), sv[2], small = 4096;
    psc_share_msg_t out = sample(PSC_SHARE_LEGACY, -1, 5);
    static char junk[65536];
    struct timespec t0;

    (void)state;
    pair(sv);
    assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
    while (send(sv[0], junk, sizeof(junk), MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
        ; /* fill the peer's queue */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect_fail(psc_share_send(g_ctx, sv[0], &out, 100), PSC_ERR_TIMEOUT, "psc_share_send", "before the deadline");
    assert_true(ms_since(&t0) < 3000.0);
    assert_int_equal(fcntl(sv[0], F_GETFL) & O_NONBLOCK, 0);
    close_pair(sv);
    assert_int_equal(psc_test_open_fds(), before);
}

static void test_peer_gone(void **state)
{
    int before = psc_test_open_fds(), sv[2];
    psc_share_msg_t in, out = sample(PSC_SHARE_LEGACY, -1, 5);

    (void)state;
    /* Closed with nothing sent: PSC_ERR_IO at once. */
    pair(sv);
    close(sv[0]);
    expect_fail(psc_share_recv(g_ctx, sv[1], &in, 5000), PSC_ERR_IO, "closed the connection", NULL);
    close(sv[1]);
    /* Sending to a peer that closed: PSC_ERR_IO, no SIGPIPE. */
    pair(sv);
    close(sv[1]);
    expect_fail(psc_share_send(g_ctx, sv[0], &out, 2000), PSC_ERR_IO, "psc_share_send", "closed");
    close(sv[0]);
    assert_int_equal(psc_test_open_fds(), before);
}

/* A forked peer (no CUDA call) writes half a frame, says so, and is killed: an error, never a hang. */
static void test_peer_dies_mid_frame(void **state)
{
    int before = psc_test_open_fds(), sv[2], ready[2], status;
    psc_share_msg_t in, out = sample(PSC_SHARE_LEGACY, -1, 5);
    unsigned char buf[PSC_IPC_HEADER_SIZE + PSC_SHARE_MSG_LEN];
    size_t n = frame(buf, PSC_IPC_MAGIC, PSC_IPC_SHARE, out.bytes, PSC_SHARE_MSG_LEN, 0);
    struct timespec t0;
    psc_status_t st;
    char c;
    pid_t pid;

    (void)state;
    pair(sv);
    assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(sv[1]);
        close(ready[0]);
        if (write(sv[0], buf, n / 2) != (ssize_t)(n / 2) || write(ready[1], "h", 1) != 1)
            _exit(1);
        pause(); /* until killed */
        _exit(2);
    }
    close(sv[0]);
    close(ready[1]);
    assert_int_equal(read(ready[0], &c, 1), 1); /* half a frame is in the socket */
    assert_int_equal(kill(pid, SIGKILL), 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    st = psc_share_recv(g_ctx, sv[1], &in, 5000);
    assert_true(st == PSC_ERR_IO || st == PSC_ERR_TIMEOUT);
    expect_fail(st, st, "in the middle of a message", NULL);
    assert_true(ms_since(&t0) < 6000.0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    close(ready[0]);
    close(sv[1]);
    psc_test_assert_no_children();
    assert_int_equal(psc_test_open_fds(), before);
}

/* One forged frame written raw: the refusal's status and words; no descriptor left behind, *msg untouched. */
typedef struct {
    const char *what;
    uint32_t magic;
    unsigned type;
    psc_share_kind_t kind; /* the message's bytes; 0: the payload is text */
    int spoil;             /* 1: the bytes' first byte changed (they no longer decode) */
    const char *text;      /* the payload when kind is 0 */
    int with_fd;
    uint64_t seq;
    psc_status_t want;
    const char *part;
} forged_t;

static void test_forged_frames_refused(void **state)
{
    static const forged_t cases[] = {
        {"wrong magic", 0x12345678u, PSC_IPC_SHARE, PSC_SHARE_LEGACY, 0, NULL, 0, 0, PSC_ERR_INVALID, "bad magic"},
        {"wrong magic with a descriptor", 0x12345678u, PSC_IPC_SHARE_FD, PSC_SHARE_VMM_FD, 0, NULL, 1, 0,
         PSC_ERR_INVALID, "bad magic"},
        {"SHARE_FD without a descriptor", PSC_IPC_MAGIC, PSC_IPC_SHARE_FD, PSC_SHARE_VMM_FD, 0, NULL, 0, 0,
         PSC_ERR_INVALID, "SHARE_FD with 0 file descriptors"},
        {"SHARE with a descriptor", PSC_IPC_MAGIC, PSC_IPC_SHARE, PSC_SHARE_LEGACY, 0, NULL, 1, 0, PSC_ERR_INVALID,
         "SHARE with 1 file descriptor"},
        {"bytes that do not decode", PSC_IPC_MAGIC, PSC_IPC_SHARE, PSC_SHARE_LEGACY, 1, NULL, 0, 0, PSC_ERR_INVALID,
         "shared-memory message: magic"},
        {"bytes that do not decode, with a descriptor", PSC_IPC_MAGIC, PSC_IPC_SHARE_FD, PSC_SHARE_VMM_FD, 1, NULL, 1,
         0, PSC_ERR_INVALID, "shared-memory message: magic"},
        {"a legacy message with a descriptor", PSC_IPC_MAGIC, PSC_IPC_SHARE_FD, PSC_SHARE_LEGACY, 0, NULL, 1, 0,
         PSC_ERR_INVALID, "a file descriptor came with it"},
        {"an ERROR frame", PSC_IPC_MAGIC, PSC_IPC_ERROR, 0, 0, "out of GPU memory", 0, 0, PSC_ERR_IO,
         "reported: out of GPU memory"},
        {"a REQUEST frame", PSC_IPC_MAGIC, PSC_IPC_REQUEST, 0, 0, "hello", 0, 0, PSC_ERR_INVALID,
         "sent a REQUEST: expected a SHARE or SHARE_FD"},
        {"a SHARE out of sequence", PSC_IPC_MAGIC, PSC_IPC_SHARE, PSC_SHARE_LEGACY, 0, NULL, 0, 3, PSC_ERR_INVALID,
         "sequence number 3"},
    };

    (void)state;
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const forged_t *f = &cases[k];
        unsigned char bytes[32] = {7}, buf[PSC_IPC_HEADER_SIZE + PSC_IPC_MAX_ERROR_TEXT];
        int before = psc_test_open_fds(), sv[2], fd = psc_test_memfd_with(bytes, sizeof(bytes)), n;
        psc_share_msg_t m, in;
        size_t len;

        if (f->kind) {
            m = sample(f->kind, -1, 77);
            m.bytes[0] ^= (unsigned char)f->spoil;
            len = frame(buf, f->magic, f->type, m.bytes, PSC_SHARE_MSG_LEN, f->seq);
        } else {
            len = frame(buf, f->magic, f->type, f->text, (uint32_t)strlen(f->text), f->seq);
        }
        pair(sv);
        psc_test_raw_send(sv[0], buf, len, &fd, f->with_fd);
        n = psc_test_open_fds();
        memset(&in, 0xAB, sizeof(in));
        expect_fail(psc_share_recv(g_ctx, sv[1], &in, 2000), f->want, f->part, "psc_share_recv");
        if (psc_test_open_fds() != n)
            fail_msg("%s: %d descriptors open after the refusal, %d before", f->what, psc_test_open_fds(), n);
        assert_int_equal(in.fd, (int)0xABABABAB);
        assert_int_equal(in.bytes[0], 0xAB);
        close(fd);
        close_pair(sv);
        assert_int_equal(psc_test_open_fds(), before);
    }
}

/* A stranger's message is refused before anything is read, and nothing is sent to a stranger. */
static void test_stranger_refused_before_reading(void **state)
{
    unsigned char bytes[16] = {3};
    int before = psc_test_open_fds(), sv[2], fd = psc_test_memfd_with(bytes, sizeof(bytes)), n;
    psc_share_msg_t out = sample(PSC_SHARE_VMM_FD, fd, 16), in;
    uid_t other = geteuid() + 1;
    char me[48], them[48];

    (void)state;
    pair(sv);
    assert_int_equal(psc_share_send(g_ctx, sv[0], &out, 2000), PSC_OK);
    n = psc_test_open_fds();
    memset(&in, 0xAB, sizeof(in));
    snprintf(me, sizeof(me), "runs as uid %lu", (unsigned long)geteuid());
    snprintf(them, sizeof(them), "(uid %lu)", (unsigned long)other);
    /* This process's user stands for a stranger: the receiver expects another. */
    expect_fail(psc__share_recv_as(g_ctx, sv[1], &in, 2000, other), PSC_ERR_INVALID, me, them);
    assert_int_equal(psc_test_open_fds(), n); /* its descriptor not taken in */
    assert_int_equal(in.fd, (int)0xABABABAB);
    assert_int_equal(pending(sv[1]), PSC_IPC_HEADER_SIZE + PSC_SHARE_MSG_LEN); /* nothing read */
    assert_int_equal(psc_share_recv(g_ctx, sv[1], &in, 2000), PSC_OK);
    close(in.fd);
    /* Nor is memory sent to a stranger: nothing written. */
    expect_fail(psc__share_send_as(g_ctx, sv[0], &out, 2000, other), PSC_ERR_INVALID, me, them);
    assert_int_equal(pending(sv[1]), 0);
    close(fd);
    close_pair(sv);
    assert_int_equal(psc_test_open_fds(), before);
}

static void test_send_refuses_bad_messages(void **state)
{
    unsigned char bytes[16] = {5};
    int before = psc_test_open_fds(), sv[2], fd = psc_test_memfd_with(bytes, sizeof(bytes)), closed;
    psc_share_msg_t m;

    (void)state;
    pair(sv);
    closed = dup(fd); /* a number no descriptor holds (none is opened after it) */
    close(closed);
    m = sample(PSC_SHARE_LEGACY, -1, 5);
    m.bytes[0] ^= 1;
    expect_fail(psc_share_send(g_ctx, sv[0], &m, 2000), PSC_ERR_INVALID, "refused to send", "magic");
    m = sample(PSC_SHARE_LEGACY, -1, 5);
    m.bytes[PSC_SHARE_MSG_LEN - 1] = 1;
    expect_fail(psc_share_send(g_ctx, sv[0], &m, 2000), PSC_ERR_INVALID, "refused to send", "reserved");
    m = sample(PSC_SHARE_VMM_FD, -1, 5);
    expect_fail(psc_share_send(g_ctx, sv[0], &m, 2000), PSC_ERR_INVALID, "refused to send",
                "no file descriptor came with it");
    m = sample(PSC_SHARE_VMM_FD, closed, 5);
    expect_fail(psc_share_send(g_ctx, sv[0], &m, 2000), PSC_ERR_INVALID, "refused to send", "not open");
    m = sample(PSC_SHARE_LEGACY, fd, 5);
    expect_fail(psc_share_send(g_ctx, sv[0], &m, 2000), PSC_ERR_INVALID, "refused to send",
                "a file descriptor came with it");
    m = sample(PSC_SHARE_EVENT, -2, 0);
    expect_fail(psc_share_send(g_ctx, sv[0], &m, 2000), PSC_ERR_INVALID, "refused to send", "accepted -1");
    expect_fail(psc_share_send(g_ctx, sv[0], NULL, 2000), PSC_ERR_INVALID, "no message", NULL);
    assert_int_equal(pending(sv[1]), 0); /* nothing sent */
    assert_true(fcntl(fd, F_GETFD) >= 0);
    m = sample(PSC_SHARE_LEGACY, -1, 5);
    expect_fail(psc_share_send(g_ctx, sv[0], &m, 0), PSC_ERR_INVALID, "timeout 0 ms", "accepted 1 to 3600000 ms");
    expect_fail(psc_share_send(g_ctx, sv[0], &m, -5), PSC_ERR_INVALID, "timeout -5 ms", "accepted 1 to 3600000");
    expect_fail(psc_share_send(g_ctx, sv[0], &m, 3600001), PSC_ERR_INVALID, "timeout 3600001", "accepted 1 to");
    expect_fail(psc_share_recv(g_ctx, sv[1], &m, 3600001), PSC_ERR_INVALID, "psc_share_recv: timeout", "accepted");
    expect_fail(psc_share_recv(g_ctx, sv[1], NULL, 2000), PSC_ERR_INVALID, "no place", NULL);
    assert_int_equal(pending(sv[1]), 0);
    assert_int_equal(psc_share_send(NULL, sv[0], &m, 2000), PSC_ERR_INVALID);
    assert_int_equal(psc_share_recv(NULL, sv[1], &m, 2000), PSC_ERR_INVALID);
    assert_int_equal(psc_share_send(g_ctx, sv[0], &m, 3600000), PSC_OK); /* the bounds themselves accepted */
    assert_int_equal(psc_share_recv(g_ctx, sv[1], &m, 1), PSC_OK);
    close(fd);
    close_pair(sv);
    assert_int_equal(psc_test_open_fds(), before);
}

static void test_bad_sockets_refused(void **state)
{
    int before = psc_test_open_fds(), p[2], udp, dgram[2], lone, closed;
    psc_share_msg_t m = sample(PSC_SHARE_LEGACY, -1, 5), in;
    const char *acc = "accepted a connected Unix stream socket";

    (void)state;
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(udp >= 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, dgram), 0);
    lone = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(lone >= 0);
    closed = dup(lone);
    close(closed);

    expect_fail(psc_share_send(g_ctx, p[1], &m, 1000), PSC_ERR_INVALID, "is a pipe", acc);
    assert_int_equal(pending(p[0]), 0);
    expect_fail(psc_share_send(g_ctx, udp, &m, 1000), PSC_ERR_INVALID, "address family", acc);
    expect_fail(psc_share_send(g_ctx, dgram[0], &m, 1000), PSC_ERR_INVALID, "SOCK_DGRAM", acc);
    assert_int_equal(pending(dgram[1]), 0);
    expect_fail(psc_share_send(g_ctx, lone, &m, 1000), PSC_ERR_INVALID, "not connected", acc);
    expect_fail(psc_share_send(g_ctx, closed, &m, 1000), PSC_ERR_INVALID, "not open", acc);
    expect_fail(psc_share_send(g_ctx, -1, &m, 1000), PSC_ERR_INVALID, "socket -1", acc);
    memset(&in, 0xAB, sizeof(in));
    expect_fail(psc_share_recv(g_ctx, p[0], &in, 1000), PSC_ERR_INVALID, "is a pipe", acc);
    expect_fail(psc_share_recv(g_ctx, dgram[1], &in, 1000), PSC_ERR_INVALID, "SOCK_DGRAM", acc);
    expect_fail(psc_share_recv(g_ctx, closed, &in, 1000), PSC_ERR_INVALID, "not open", acc);
    assert_int_equal(in.fd, (int)0xABABABAB);
    /* Each left open, as found. */
    assert_true(fcntl(p[1], F_GETFD) >= 0 && fcntl(udp, F_GETFD) >= 0 && fcntl(lone, F_GETFD) >= 0);
    close(p[0]);
    close(p[1]);
    close(udp);
    close_pair(dgram);
    close(lone);
    assert_int_equal(psc_test_open_fds(), before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_kind_round_trips),
        cmocka_unit_test(test_vmm_fd_passes_the_same_file),
        cmocka_unit_test(test_back_to_back_then_application_bytes),
        cmocka_unit_test(test_socket_flags_left_as_found),
        cmocka_unit_test(test_timeout_when_nothing_comes),
        cmocka_unit_test(test_send_times_out_when_the_peer_reads_nothing),
        cmocka_unit_test(test_peer_gone),
        cmocka_unit_test(test_peer_dies_mid_frame),
        cmocka_unit_test(test_forged_frames_refused),
        cmocka_unit_test(test_stranger_refused_before_reading),
        cmocka_unit_test(test_send_refuses_bad_messages),
        cmocka_unit_test(test_bad_sockets_refused),
    };

    return cmocka_run_group_tests(tests, setup, psc_test_close_ctx);
}
