/*
 * The ipc channel (src/lib/proc/channel.c, listener.c, message.c) without a
 * GPU: a memfd stands in for an exported allocation and is read back through
 * the descriptor received; descriptor counts, deadlines, forged frames of
 * every kind, strangers at the listener (wrong token, wrong user, garbage,
 * silence) and the run directory's modes. No descriptor may leak: each test
 * counts /proc/self/fd before and after.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "proc/listener.h"
#include "process_checks.h"
#include "raw_send.h"

/* Two channels joined by a socketpair; each names the other end: a's peer is "peer b". */
static void chan_pair(psc_ipc_chan_t **a, psc_ipc_chan_t **b)
{
    int sv[2];

    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    assert_int_equal(psc__ipc_chan_wrap(sv[0], "peer b", a, NULL), PSC_OK);
    assert_int_equal(psc__ipc_chan_wrap(sv[1], "peer a", b, NULL), PSC_OK);
}

/* A channel and the raw socket of its peer, for forging. */
static psc_ipc_chan_t *chan_raw(int *raw)
{
    psc_ipc_chan_t *c;
    int sv[2];

    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    assert_int_equal(psc__ipc_chan_wrap(sv[0], "the forger", &c, NULL), PSC_OK);
    *raw = sv[1];
    return c;
}

static void frame(unsigned char *out, uint32_t magic, unsigned version, unsigned type, uint32_t flags, uint32_t len,
                  uint64_t seq)
{
    psc_ipc_header_t h = {magic, (uint16_t)version, (uint16_t)type, flags, len, seq};

    psc__ipc_header_encode(&h, out);
}

static void expect_error(psc_status_t got, const psc_ipc_err_t *e, psc_status_t want, const char *part)
{
    if (got != want || !strstr(e->msg, part))
        fail_msg("status %d, wanted %d; message \"%s\", wanted a part \"%s\"", got, want, e->msg, part);
}

static void test_memfd_passed_and_read_back(void **state)
{
    unsigned char bytes[4096], back[4096];
    psc_ipc_chan_t *a, *b;
    psc_ipc_msg_t m;
    psc_ipc_err_t e = {0};
    int before = psc_test_open_fds(), fd;
    struct stat sa, sb;

    (void)state;
    for (size_t i = 0; i < sizeof(bytes); i++)
        bytes[i] = (unsigned char)(i * 131 + 7);
    fd = psc_test_memfd_with(bytes, sizeof(bytes));
    chan_pair(&a, &b);
    assert_int_equal(psc__ipc_send(a, PSC_IPC_FD, 0x5u, "alloc-1", 7, &fd, 1, psc__ipc_deadline(2000), &e), PSC_OK);
    assert_int_equal(psc__ipc_recv(b, &m, psc__ipc_deadline(2000), &e), PSC_OK);
    assert_int_equal(m.type, PSC_IPC_FD);
    assert_int_equal(m.flags, 0x5u);
    assert_int_equal(m.nfds, 1);
    assert_int_equal(m.len, 7);
    assert_memory_equal(m.payload, "alloc-1", 7);
    assert_int_not_equal(m.fds[0], fd);
    /* The same file, readable through the received descriptor, which is close-on-exec. */
    assert_int_equal(fstat(fd, &sa), 0);
    assert_int_equal(fstat(m.fds[0], &sb), 0);
    assert_int_equal(sa.st_ino, sb.st_ino);
    assert_int_equal(pread(m.fds[0], back, sizeof(back), 0), (ssize_t)sizeof(back));
    assert_memory_equal(back, bytes, sizeof(back));
    assert_true(fcntl(m.fds[0], F_GETFD) & FD_CLOEXEC);
    psc__ipc_msg_close_fds(&m);
    assert_int_equal(m.nfds, 0);
    /* Then a plain message on the same channels, in order. */
    assert_int_equal(psc__ipc_send(b, PSC_IPC_REPLY, 0, "ok", 2, NULL, 0, psc__ipc_deadline(2000), &e), PSC_OK);
    assert_int_equal(psc__ipc_recv_type(a, PSC_IPC_REPLY, &m, psc__ipc_deadline(2000), &e), PSC_OK);
    assert_int_equal(m.seq, 0);
    close(fd);
    psc__ipc_chan_close(a);
    psc__ipc_chan_close(b);
    assert_int_equal(psc_test_open_fds(), before);
}

/* A frame of type, length len (payload zeros), seq 0, with nfds memfds attached; returns the error. */
static psc_status_t recv_forged_fds(unsigned type, uint32_t len, int nfds, psc_ipc_err_t *e)
{
    unsigned char buf[PSC_IPC_HEADER_SIZE + 64] = {0};
    int fds[256], raw;
    psc_ipc_chan_t *c = chan_raw(&raw);
    psc_ipc_msg_t m;
    psc_status_t st;

    for (int i = 0; i < nfds; i++)
        fds[i] = psc_test_memfd_with((const unsigned char *)"x", 1);
    frame(buf, PSC_IPC_MAGIC, PSC_IPC_VERSION, type, 0, len, 0);
    psc_test_raw_send(raw, buf, PSC_IPC_HEADER_SIZE + len, fds, nfds);
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    st = psc__ipc_recv(c, &m, psc__ipc_deadline(2000), e);
    if (st == PSC_OK)
        psc__ipc_msg_close_fds(&m);
    close(raw);
    psc__ipc_chan_close(c);
    return st;
}

static void test_descriptor_counts_checked(void **state)
{
    psc_ipc_err_t e = {0};
    int before = psc_test_open_fds();

    (void)state;
    expect_error(recv_forged_fds(PSC_IPC_FD, 4, 3, &e), &e, PSC_ERR_INVALID,
                 "FD with 3 file descriptors: accepted exactly 1");
    expect_error(recv_forged_fds(PSC_IPC_FD, 4, 0, &e), &e, PSC_ERR_INVALID,
                 "FD with 0 file descriptors: accepted exactly 1");
    expect_error(recv_forged_fds(PSC_IPC_REQUEST, 4, 1, &e), &e, PSC_ERR_INVALID,
                 "REQUEST with 1 file descriptor: accepted exactly 0");
    /* A flood, more than any message may carry: counted and closed. */
    expect_error(recv_forged_fds(PSC_IPC_FD, 4, 200, &e), &e, PSC_ERR_INVALID,
                 "FD with 200 file descriptors: accepted exactly 1");
    assert_int_equal(recv_forged_fds(PSC_IPC_FD, 4, 1, &e), PSC_OK);
    assert_int_equal(psc_test_open_fds(), before);
}

static void test_descriptors_on_a_later_byte_counted(void **state)
{
    unsigned char buf[PSC_IPC_HEADER_SIZE + 8] = {0};
    psc_ipc_err_t e = {0};
    psc_ipc_msg_t m;
    int before = psc_test_open_fds(), raw, fd = psc_test_memfd_with((const unsigned char *)"x", 1);
    psc_ipc_chan_t *c = chan_raw(&raw);

    (void)state;
    /* A REQUEST whose payload's second half smuggles a descriptor. */
    frame(buf, PSC_IPC_MAGIC, PSC_IPC_VERSION, PSC_IPC_REQUEST, 0, 8, 0);
    psc_test_raw_send(raw, buf, PSC_IPC_HEADER_SIZE + 4, NULL, 0);
    psc_test_raw_send(raw, buf + PSC_IPC_HEADER_SIZE + 4, 4, &fd, 1);
    close(fd);
    expect_error(psc__ipc_recv(c, &m, psc__ipc_deadline(2000), &e), &e, PSC_ERR_INVALID,
                 "REQUEST with 1 file descriptor");
    close(raw);
    psc__ipc_chan_close(c);
    assert_int_equal(psc_test_open_fds(), before);
}

static void test_send_refuses_what_the_receiver_would(void **state)
{
    psc_ipc_chan_t *a, *b;
    psc_ipc_err_t e = {0};
    psc_ipc_msg_t m;
    static unsigned char big[PSC_IPC_MAX_PAYLOAD + 1];
    int before = psc_test_open_fds(), fd = psc_test_memfd_with((const unsigned char *)"x", 1);

    (void)state;
    chan_pair(&a, &b);
    expect_error(psc__ipc_send(a, PSC_IPC_FD, 0, "x", 1, NULL, 0, psc__ipc_deadline(100), &e), &e, PSC_ERR_INVALID,
                 "FD with 0 file descriptors: accepted exactly 1");
    expect_error(psc__ipc_send(a, PSC_IPC_READY, 0, "x", 1, NULL, 0, psc__ipc_deadline(100), &e), &e,
                 PSC_ERR_INVALID, "READY with a payload of 1 bytes: accepted exactly 0");
    expect_error(psc__ipc_send(a, PSC_IPC_REQUEST, 0, big, sizeof(big), NULL, 0, psc__ipc_deadline(100), &e), &e,
                 PSC_ERR_INVALID, "accepted 0 to 65536");
    expect_error(psc__ipc_send(a, 77, 0, NULL, 0, NULL, 0, psc__ipc_deadline(100), &e), &e, PSC_ERR_INVALID,
                 "unknown message type 77");
    expect_error(psc__ipc_send(a, PSC_IPC_BYE, 1, NULL, 0, NULL, 0, psc__ipc_deadline(100), &e), &e,
                 PSC_ERR_INVALID, "BYE with flags 0x1: accepted 0x0");
    close(fd);
    expect_error(psc__ipc_send(a, PSC_IPC_FD, 0, NULL, 0, &fd, 1, psc__ipc_deadline(100), &e), &e, PSC_ERR_INVALID,
                 "is not open");
    /* Nothing went out, and the channel still works: the next frame has sequence number 0. */
    expect_error(psc__ipc_recv(b, &m, psc__ipc_deadline(50), &e), &e, PSC_ERR_TIMEOUT, "peer a: no message");
    assert_int_equal(psc__ipc_send(a, PSC_IPC_READY, 0, NULL, 0, NULL, 0, psc__ipc_deadline(100), &e), PSC_OK);
    assert_int_equal(psc__ipc_recv_type(b, PSC_IPC_READY, &m, psc__ipc_deadline(1000), &e), PSC_OK);
    assert_int_equal(m.seq, 0);
    psc__ipc_chan_close(a);
    psc__ipc_chan_close(b);
    assert_int_equal(psc_test_open_fds(), before);
}

static void test_receive_times_out_at_its_deadline(void **state)
{
    psc_ipc_chan_t *a, *b;
    psc_ipc_err_t e = {0};
    psc_ipc_msg_t m;
    int64_t t0, took;

    (void)state;
    chan_pair(&a, &b);
    t0 = psc__ipc_now();
    expect_error(psc__ipc_recv(b, &m, t0 + 300 * 1000000LL, &e), &e, PSC_ERR_TIMEOUT, "peer a: no message within");
    took = psc__ipc_now() - t0;
    assert_true(took >= 300 * 1000000LL);
    assert_true(took < 800 * 1000000LL);
    /* Nothing of a frame came: the channel is still usable. */
    assert_false(psc__ipc_chan_broken(b));
    assert_int_equal(psc__ipc_send(a, PSC_IPC_READY, 0, NULL, 0, NULL, 0, psc__ipc_deadline(100), &e), PSC_OK);
    assert_int_equal(psc__ipc_recv_type(b, PSC_IPC_READY, &m, psc__ipc_deadline(1000), &e), PSC_OK);
    psc__ipc_chan_close(a);
    psc__ipc_chan_close(b);
}

static void test_frame_cut_by_the_deadline(void **state)
{
    unsigned char buf[PSC_IPC_HEADER_SIZE];
    psc_ipc_err_t e = {0};
    psc_ipc_msg_t m;
    int raw;
    psc_ipc_chan_t *c = chan_raw(&raw);
    int64_t t0 = psc__ipc_now(), took;

    (void)state;
    frame(buf, PSC_IPC_MAGIC, PSC_IPC_VERSION, PSC_IPC_READY, 0, 0, 0);
    psc_test_raw_send(raw, buf, 10, NULL, 0);
    expect_error(psc__ipc_recv(c, &m, t0 + 200 * 1000000LL, &e), &e, PSC_ERR_TIMEOUT,
                 "a message stopped coming: 10 of 24 header bytes");
    took = psc__ipc_now() - t0;
    assert_true(took >= 200 * 1000000LL && took < 700 * 1000000LL);
    /* The framing is lost: later calls say so at once, even when the rest comes. */
    assert_true(psc__ipc_chan_broken(c));
    psc_test_raw_send(raw, buf + 10, sizeof(buf) - 10, NULL, 0);
    expect_error(psc__ipc_recv(c, &m, psc__ipc_deadline(1000), &e), &e, PSC_ERR_IO,
                 "unusable after an earlier error");
    close(raw);
    psc__ipc_chan_close(c);
}

static void test_send_times_out_when_the_peer_does_not_read(void **state)
{
    static unsigned char big[PSC_IPC_MAX_PAYLOAD];
    psc_ipc_chan_t *a, *b;
    psc_ipc_err_t e = {0};
    psc_status_t st = PSC_OK;
    int64_t t0 = 0;

    (void)state;
    chan_pair(&a, &b);
    for (int i = 0; i < 1000 && st == PSC_OK; i++) {
        t0 = psc__ipc_now();
        st = psc__ipc_send(a, PSC_IPC_REQUEST, 0, big, sizeof(big), NULL, 0, t0 + 150 * 1000000LL, &e);
    }
    expect_error(st, &e, PSC_ERR_TIMEOUT, "peer b: did not take a REQUEST before the deadline");
    assert_true(psc__ipc_now() - t0 < 650 * 1000000LL);
    psc__ipc_chan_close(a);
    psc__ipc_chan_close(b);
}

static void test_peer_gone(void **state)
{
    psc_ipc_chan_t *a, *b;
    psc_ipc_err_t e = {0};
    psc_ipc_msg_t m;
    int64_t t0;

    (void)state;
    chan_pair(&a, &b);
    psc__ipc_chan_set_peer(b, "worker 1 (pid 4242)");
    psc__ipc_chan_close(a);
    t0 = psc__ipc_now();
    expect_error(psc__ipc_recv(b, &m, psc__ipc_deadline(5000), &e), &e, PSC_ERR_IO,
                 "worker 1 (pid 4242): closed the connection");
    assert_true(psc__ipc_now() - t0 < 1000 * 1000000LL);
    psc__ipc_chan_close(b);

    /* Sending to a closed peer: an error, no SIGPIPE (which would end this test). */
    chan_pair(&a, &b);
    psc__ipc_chan_close(b);
    expect_error(psc__ipc_send(a, PSC_IPC_REPLY, 0, "x", 1, NULL, 0, psc__ipc_deadline(1000), &e), &e, PSC_ERR_IO,
                 "peer b: gone");
    psc__ipc_chan_close(a);
}

/* One forged frame (or raw bytes) and what the receiver must say. */
typedef struct {
    const char *name;
    uint32_t magic;
    unsigned version, type;
    uint32_t flags, len;
    uint64_t seq;
    size_t cut;            /* bytes written before the peer closes; 0: the whole frame */
    const char *payload;   /* NULL: zeros */
    psc_status_t st;
    const char *says;
} forged_t;

static void test_forged_frames_rejected(void **state)
{
    static const forged_t cases[] = {
        {"bad magic", 0x12345678u, 1, PSC_IPC_READY, 0, 0, 0, 0, NULL, PSC_ERR_INVALID,
         "bad magic 0x12345678: accepted 0x49435350"},
        {"bad version", PSC_IPC_MAGIC, 2, PSC_IPC_READY, 0, 0, 0, 0, NULL, PSC_ERR_INVALID,
         "protocol version 2: accepted 1"},
        {"unknown type", PSC_IPC_MAGIC, 1, 99, 0, 0, 0, 0, NULL, PSC_ERR_INVALID,
         "unknown message type 99: accepted 1 to 10"},
        {"type 0", PSC_IPC_MAGIC, 1, 0, 0, 0, 0, 0, NULL, PSC_ERR_INVALID, "unknown message type 0"},
        {"flags", PSC_IPC_MAGIC, 1, PSC_IPC_HELLO, 4, 24, 0, 0, NULL, PSC_ERR_INVALID,
         "HELLO with flags 0x4: accepted 0x0"},
        {"too long", PSC_IPC_MAGIC, 1, PSC_IPC_REQUEST, 0, 0x7fffffffu, 0, 0, NULL, PSC_ERR_INVALID,
         "REQUEST with a payload of 2147483647 bytes: accepted 0 to 65536"},
        {"just too long", PSC_IPC_MAGIC, 1, PSC_IPC_REPLY, 0, 65537, 0, 0, NULL, PSC_ERR_INVALID,
         "REPLY with a payload of 65537 bytes"},
        {"length mismatch", PSC_IPC_MAGIC, 1, PSC_IPC_HELLO, 0, 23, 0, 0, NULL, PSC_ERR_INVALID,
         "HELLO with a payload of 23 bytes: accepted exactly 24"},
        {"READY with a payload", PSC_IPC_MAGIC, 1, PSC_IPC_READY, 0, 4, 0, 0, NULL, PSC_ERR_INVALID,
         "READY with a payload of 4 bytes: accepted exactly 0"},
        {"empty ERROR", PSC_IPC_MAGIC, 1, PSC_IPC_ERROR, 0, 0, 0, 0, NULL, PSC_ERR_INVALID,
         "ERROR with a payload of 0 bytes: accepted 1 to 1024"},
        {"ERROR with NUL", PSC_IPC_MAGIC, 1, PSC_IPC_ERROR, 0, 3, 0, 0, "a\0b", PSC_ERR_INVALID,
         "ERROR text with a NUL byte"},
        {"WELCOME rank past count", PSC_IPC_MAGIC, 1, PSC_IPC_WELCOME, 0, 8, 0, 0, "\3\0\0\0\2\0\0\0",
         PSC_ERR_INVALID, "WELCOME for rank 3 of 2"},
        {"HELLO reserved", PSC_IPC_MAGIC, 1, PSC_IPC_HELLO, 0, 24, 0, 0,
         "0123456789abcdef\0\0\0\0\1\0\0\0", PSC_ERR_INVALID, "HELLO with reserved word 0x1: accepted 0"},
        {"SHARE_FD cut short", PSC_IPC_MAGIC, 1, PSC_IPC_SHARE_FD, 0, 100, 0, 0, NULL, PSC_ERR_INVALID,
         "SHARE_FD with a payload of 100 bytes: accepted exactly 160"},
        {"wrong sequence", PSC_IPC_MAGIC, 1, PSC_IPC_READY, 0, 0, 5, 0, NULL, PSC_ERR_INVALID,
         "READY with sequence number 5: accepted 0"},
        {"truncated header", PSC_IPC_MAGIC, 1, PSC_IPC_READY, 0, 0, 0, 10, NULL, PSC_ERR_IO,
         "closed the connection in the middle of a message (10 of 24 header bytes)"},
        {"EOF mid-payload", PSC_IPC_MAGIC, 1, PSC_IPC_REQUEST, 0, 100, 0, 24 + 50, NULL, PSC_ERR_IO,
         "closed the connection in the middle of a message (50 of 100 REQUEST payload bytes)"},
    };
    int before = psc_test_open_fds();

    (void)state;
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const forged_t *f = &cases[k];
        static unsigned char buf[PSC_IPC_HEADER_SIZE + 200];
        size_t n = f->cut ? f->cut : PSC_IPC_HEADER_SIZE + (f->len <= 200 ? f->len : 0);
        psc_ipc_err_t e = {0};
        psc_ipc_msg_t m;
        int raw;
        psc_ipc_chan_t *c = chan_raw(&raw);
        psc_status_t st;

        memset(buf, 0, sizeof(buf));
        frame(buf, f->magic, f->version, f->type, f->flags, f->len, f->seq);
        if (f->payload)
            memcpy(buf + PSC_IPC_HEADER_SIZE, f->payload, f->len);
        psc_test_raw_send(raw, buf, n, NULL, 0);
        if (f->cut)
            close(raw);
        st = psc__ipc_recv(c, &m, psc__ipc_deadline(2000), &e);
        if (st != f->st || !strstr(e.msg, f->says) || !strstr(e.msg, "the forger"))
            fail_msg("%s: status %d, message \"%s\"; wanted %d and \"%s\"", f->name, st, e.msg, f->st, f->says);
        /* And every later receive refuses at once. */
        assert_int_equal(psc__ipc_recv(c, &m, psc__ipc_deadline(2000), &e), PSC_ERR_IO);
        if (!f->cut)
            close(raw);
        psc__ipc_chan_close(c);
    }
    assert_int_equal(psc_test_open_fds(), before);
}

static void test_replayed_frame_rejected(void **state)
{
    psc_ipc_chan_t *c;
    psc_ipc_err_t e = {0};
    psc_ipc_msg_t m;
    unsigned char buf[PSC_IPC_HEADER_SIZE];
    int raw;

    (void)state;
    c = chan_raw(&raw);
    frame(buf, PSC_IPC_MAGIC, PSC_IPC_VERSION, PSC_IPC_READY, 0, 0, 0);
    psc_test_raw_send(raw, buf, sizeof(buf), NULL, 0);
    psc_test_raw_send(raw, buf, sizeof(buf), NULL, 0);
    assert_int_equal(psc__ipc_recv(c, &m, psc__ipc_deadline(1000), &e), PSC_OK);
    expect_error(psc__ipc_recv(c, &m, psc__ipc_deadline(1000), &e), &e, PSC_ERR_INVALID,
                 "READY with sequence number 0: accepted 1");
    close(raw);
    psc__ipc_chan_close(c);
}

static void test_error_message_reported(void **state)
{
    psc_ipc_chan_t *a, *b;
    psc_ipc_err_t e = {0};
    psc_ipc_msg_t m;

    (void)state;
    chan_pair(&a, &b);
    assert_int_equal(psc__ipc_send_error(a, "cuIpcOpenMemHandle failed\n(code 1)", psc__ipc_deadline(100), &e),
                     PSC_OK);
    expect_error(psc__ipc_recv_type(b, PSC_IPC_REPLY, &m, psc__ipc_deadline(1000), &e), &e, PSC_ERR_IO,
                 "peer a reported: cuIpcOpenMemHandle failed?(code 1)");
    assert_int_equal(psc__ipc_send(a, PSC_IPC_READY, 0, NULL, 0, NULL, 0, psc__ipc_deadline(100), &e), PSC_OK);
    expect_error(psc__ipc_recv_type(b, PSC_IPC_REPLY, &m, psc__ipc_deadline(1000), &e), &e, PSC_ERR_INVALID,
                 "peer a: sent a READY: expected a REPLY here");
    psc__ipc_chan_close(a);
    psc__ipc_chan_close(b);
}

/* psc_share_msg_t over a channel: the bytes, and for a VMM fd the descriptor (a memfd standing in). */
static void test_share_messages(void **state)
{
    psc_ipc_chan_t *a, *b;
    psc_ipc_err_t e = {0};
    psc_share_msg_t out, in;
    unsigned char back[5];
    int before = psc_test_open_fds();

    (void)state;
    chan_pair(&a, &b);
    for (int i = 0; i < PSC_SHARE_MSG_LEN; i++)
        out.bytes[i] = (unsigned char)(255 - i);
    out.fd = -1;
    assert_int_equal(psc__ipc_send_share(a, &out, psc__ipc_deadline(1000), &e), PSC_OK);
    memset(&in, 0, sizeof(in));
    assert_int_equal(psc__ipc_recv_share(b, &in, psc__ipc_deadline(1000), &e), PSC_OK);
    assert_memory_equal(in.bytes, out.bytes, PSC_SHARE_MSG_LEN);
    assert_int_equal(in.fd, -1);
    out.fd = psc_test_memfd_with((const unsigned char *)"vmm!!", 5);
    assert_int_equal(psc__ipc_send_share(a, &out, psc__ipc_deadline(1000), &e), PSC_OK);
    close(out.fd);
    assert_int_equal(psc__ipc_recv_share(b, &in, psc__ipc_deadline(1000), &e), PSC_OK);
    assert_true(in.fd >= 0);
    assert_int_equal(pread(in.fd, back, 5, 0), 5);
    assert_memory_equal(back, "vmm!!", 5);
    close(in.fd);
    /* Another type where a share is awaited: refused, its descriptor closed. */
    out.fd = psc_test_memfd_with((const unsigned char *)"x", 1);
    assert_int_equal(psc__ipc_send(a, PSC_IPC_FD, 0, NULL, 0, &out.fd, 1, psc__ipc_deadline(1000), &e), PSC_OK);
    close(out.fd);
    expect_error(psc__ipc_recv_share(b, &in, psc__ipc_deadline(1000), &e), &e, PSC_ERR_INVALID,
                 "peer a: sent a FD: expected a SHARE or SHARE_FD here");
    psc__ipc_chan_close(a);
    psc__ipc_chan_close(b);
    assert_int_equal(psc_test_open_fds(), before);
}

static void test_token(void **state)
{
    psc_ipc_token_t t, u, p;
    char hex[PSC_IPC_TOKEN_HEX], upper[PSC_IPC_TOKEN_HEX];
    psc_ipc_err_t e = {0};

    (void)state;
    assert_int_equal(psc__ipc_token_make(&t, &e), PSC_OK);
    assert_int_equal(psc__ipc_token_make(&u, &e), PSC_OK);
    assert_false(psc__ipc_token_equal(t.b, u.b));
    psc__ipc_token_format(&t, hex);
    assert_int_equal(strlen(hex), 32);
    assert_int_equal(psc__ipc_token_parse(hex, &p, &e), PSC_OK);
    assert_true(psc__ipc_token_equal(t.b, p.b));
    for (int i = 0; i < 32; i++)
        upper[i] = hex[i] >= 'a' ? (char)(hex[i] - 32) : hex[i];
    upper[32] = '\0';
    assert_int_equal(psc__ipc_token_parse(upper, &p, &e), PSC_OK);
    assert_true(psc__ipc_token_equal(t.b, p.b));
    p.b[15] ^= 1;
    assert_false(psc__ipc_token_equal(t.b, p.b));
    memset(&u, 0x55, sizeof(u));
    expect_error(psc__ipc_token_parse("abc", &u, &e), &e, PSC_ERR_INVALID, "of 3 characters: accepted exactly 32");
    expect_error(psc__ipc_token_parse("0123456789abcdef0123456789abcdef0", &u, &e), &e, PSC_ERR_INVALID,
                 "of more than 32 characters");
    expect_error(psc__ipc_token_parse("0123456789abcdef0123456789abcdeg", &u, &e), &e, PSC_ERR_INVALID,
                 "other than a hex digit at 31");
    expect_error(psc__ipc_token_parse(NULL, &u, &e), &e, PSC_ERR_INVALID, "of 0 characters");
    assert_int_equal(u.b[0], 0x55); /* untouched on failure */
}

/* ---- the listener ---- */

static void test_run_directory_modes(void **state)
{
    psc_ipc_token_t t;
    psc_ipc_listener_t *l;
    struct stat sd, ss;
    char dir[128], path[128];
    mode_t old = umask(0);
    int before = psc_test_open_fds();

    (void)state;
    umask(0022);
    assert_int_equal(psc__ipc_token_make(&t, NULL), PSC_OK);
    assert_int_equal(psc__ipc_listen(&t, 2, geteuid(), &l, NULL), PSC_OK);
    snprintf(dir, sizeof(dir), "%s", psc__ipc_listener_dir(l));
    snprintf(path, sizeof(path), "%s", psc__ipc_listener_path(l));
    assert_int_equal(lstat(dir, &sd), 0);
    assert_true(S_ISDIR(sd.st_mode));
    assert_int_equal(sd.st_mode & 07777, 0700);
    assert_int_equal(sd.st_uid, geteuid());
    assert_int_equal(lstat(path, &ss), 0);
    assert_true(S_ISSOCK(ss.st_mode));
    assert_int_equal(ss.st_mode & 07777, 0600);
    assert_true(fcntl(psc__ipc_listener_fd(l), F_GETFD) & FD_CLOEXEC);
    assert_int_equal(umask(0022), 0022); /* unchanged by the calls */
    psc__ipc_listener_close(l);
    assert_int_equal(lstat(path, &ss), -1);
    assert_int_equal(lstat(dir, &sd), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(psc_test_open_fds(), before);
    umask(old);
}

static void test_runtime_dir_used_only_when_fit(void **state)
{
    char base[64], cmd[128];
    const char *saved = getenv("XDG_RUNTIME_DIR");
    char *keep = saved ? strdup(saved) : NULL;
    psc_ipc_token_t t;
    psc_ipc_listener_t *l;

    (void)state;
    snprintf(base, sizeof(base), "/tmp/psc-xdg-XXXXXX");
    assert_non_null(mkdtemp(base));
    assert_int_equal(psc__ipc_token_make(&t, NULL), PSC_OK);
    assert_int_equal(chmod(base, 0700), 0);
    setenv("XDG_RUNTIME_DIR", base, 1);
    assert_int_equal(psc__ipc_listen(&t, 1, geteuid(), &l, NULL), PSC_OK);
    assert_int_equal(strncmp(psc__ipc_listener_dir(l), base, strlen(base)), 0);
    psc__ipc_listener_close(l);
    /* Open to others: not the XDG runtime directory the spec promises, so /tmp. */
    assert_int_equal(chmod(base, 0755), 0);
    assert_int_equal(psc__ipc_listen(&t, 1, geteuid(), &l, NULL), PSC_OK);
    assert_int_equal(strncmp(psc__ipc_listener_dir(l), "/tmp/p2pscope-", 14), 0);
    psc__ipc_listener_close(l);
    setenv("XDG_RUNTIME_DIR", "relative/dir", 1);
    assert_int_equal(psc__ipc_listen(&t, 1, geteuid(), &l, NULL), PSC_OK);
    assert_int_equal(strncmp(psc__ipc_listener_dir(l), "/tmp/p2pscope-", 14), 0);
    psc__ipc_listener_close(l);
    if (keep)
        setenv("XDG_RUNTIME_DIR", keep, 1);
    else
        unsetenv("XDG_RUNTIME_DIR");
    free(keep);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
    assert_int_equal(system(cmd), 0);
}

/*
 * How a client child behaves: GOOD through psc__ipc_connect (it says it is
 * ready before it connects, so start it last); the others say so once
 * connected (and sent what they send), so the backlog holds them in order.
 */
typedef enum { CLIENT_GOOD, CLIENT_HELLO, CLIENT_WRONG_TOKEN, CLIENT_GARBAGE, CLIENT_SILENT } client_kind_t;

typedef struct {
    pid_t pid;
    int report; /* read end: the child's one line once it is done */
} client_t;

/* In the client: connect by hand, then HELLO (token as given) and wait for the answer. */
static int client_raw(const char *path, const psc_ipc_token_t *t, int rank, client_kind_t k, int ready, char *line,
                      size_t cap)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    psc_ipc_chan_t *ch;
    psc_ipc_msg_t m;
    psc_ipc_err_t e = {0};
    unsigned char hello[PSC_IPC_TOKEN_SIZE + 8] = {0};
    psc_status_t st;

    snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
    if (connect(s, (struct sockaddr *)&a, sizeof(a)) != 0)
        _exit(3);
    if (k == CLIENT_GARBAGE)
        (void)!write(s, "GET / HTTP/1.0\r\n\r\n0123456", 25);
    if (k == CLIENT_GARBAGE || k == CLIENT_SILENT) {
        (void)!write(ready, "r", 1);
        /* Until the listener closes this end. */
        while (read(s, line, cap) > 0)
            ;
        return snprintf(line, cap, "0 closed by the listener");
    }
    memcpy(hello, t->b, PSC_IPC_TOKEN_SIZE);
    if (k == CLIENT_WRONG_TOKEN)
        hello[3] ^= 0x40;
    psc__ipc_put_u32(hello + PSC_IPC_TOKEN_SIZE, (uint32_t)rank);
    if (psc__ipc_chan_wrap(s, "the parent", &ch, &e) != PSC_OK ||
        psc__ipc_send(ch, PSC_IPC_HELLO, 0, hello, sizeof(hello), NULL, 0, psc__ipc_deadline(5000), &e) != PSC_OK)
        _exit(4);
    (void)!write(ready, "r", 1);
    st = psc__ipc_recv_type(ch, PSC_IPC_WELCOME, &m, psc__ipc_deadline(5000), &e);
    psc__ipc_chan_close(ch);
    return snprintf(line, cap, "%d %s", st, st == PSC_OK ? "connected" : e.msg);
}

/* Fork a client of kind k for rank; returns once it is ready (see client_kind_t). */
static client_t client_start(const char *path, const psc_ipc_token_t *tok, int rank, client_kind_t k)
{
    int rep[2], ready[2];
    client_t c;
    char b;

    assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
    assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
    c.pid = fork();
    assert_true(c.pid >= 0);
    if (c.pid == 0) {
        psc_ipc_err_t e = {0};
        char line[400];
        int n;

        close(rep[0]);
        close(ready[0]);
        if (k == CLIENT_GOOD) {
            psc_ipc_chan_t *ch = NULL;
            psc_status_t st;

            (void)!write(ready[1], "r", 1);
            st = psc__ipc_connect(path, tok, rank, psc__ipc_deadline(5000), &ch, NULL, &e);
            n = snprintf(line, sizeof(line), "%d %s", st, st == PSC_OK ? "connected" : e.msg);
            psc__ipc_chan_close(ch);
        } else {
            n = client_raw(path, tok, rank, k, ready[1], line, sizeof(line));
        }
        (void)!write(rep[1], line, (size_t)n);
        _exit(0);
    }
    close(rep[1]);
    close(ready[1]);
    assert_int_equal(read(ready[0], &b, 1), 1);
    close(ready[0]);
    c.report = rep[0];
    return c;
}

/* The client's line, after it ended (reaped). */
static void client_end(client_t c, char *line, size_t cap)
{
    ssize_t n, got = 0;
    int status;

    while ((n = read(c.report, line + got, cap - 1 - (size_t)got)) > 0)
        got += n;
    line[got] = '\0';
    close(c.report);
    assert_int_equal(waitpid(c.pid, &status, 0), c.pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_strangers_refused_then_the_worker_accepted(void **state)
{
    psc_ipc_token_t t;
    psc_ipc_listener_t *l;
    psc_ipc_chan_t *ch = NULL;
    psc_ipc_err_t e = {0};
    client_t bad, garbage, silent, good;
    char line[400];
    int rank = -1, before = psc_test_open_fds();
    int64_t t0;

    (void)state;
    assert_int_equal(psc__ipc_token_make(&t, NULL), PSC_OK);
    assert_int_equal(psc__ipc_listen(&t, 2, geteuid(), &l, NULL), PSC_OK);
    psc__ipc_listener_set_hello_ms(l, 200);
    /* In this order in the backlog: a wrong token, garbage, silence, then the worker. */
    bad = client_start(psc__ipc_listener_path(l), &t, 1, CLIENT_WRONG_TOKEN);
    garbage = client_start(psc__ipc_listener_path(l), &t, 0, CLIENT_GARBAGE);
    silent = client_start(psc__ipc_listener_path(l), &t, 0, CLIENT_SILENT);
    good = client_start(psc__ipc_listener_path(l), &t, 1, CLIENT_GOOD);
    t0 = psc__ipc_now();
    assert_int_equal(psc__ipc_accept(l, NULL, psc__ipc_deadline(5000), &ch, &rank, &e), PSC_OK);
    /* The silent one cost its HELLO time, no more. */
    assert_true(psc__ipc_now() - t0 >= 200 * 1000000LL && psc__ipc_now() - t0 < 2000 * 1000000LL);
    assert_int_equal(rank, 1);
    assert_non_null(strstr(psc__ipc_chan_peer(ch), "worker 1 (pid "));
    assert_int_equal(psc__ipc_listener_connected(l), 1);
    assert_int_equal(psc__ipc_listener_refused(l), 3);
    assert_non_null(strstr(psc__ipc_listener_refusal(l, 2), "HELLO with a wrong run token"));
    assert_non_null(strstr(psc__ipc_listener_refusal(l, 1), "bad magic"));
    assert_non_null(strstr(psc__ipc_listener_refusal(l, 0), "no complete HELLO in time (200 ms allowed)"));
    client_end(bad, line, sizeof(line));
    assert_non_null(strstr(line, "reported: refused:"));
    assert_non_null(strstr(line, "wrong run token"));
    client_end(garbage, line, sizeof(line));
    client_end(silent, line, sizeof(line));
    client_end(good, line, sizeof(line));
    assert_string_equal(line, "0 connected");
    psc__ipc_chan_close(ch);
    psc__ipc_listener_close(l);
    assert_int_equal(psc_test_open_fds(), before);
}

static void test_first_accept_times_out_naming_refusals(void **state)
{
    psc_ipc_token_t t;
    psc_ipc_listener_t *l;
    psc_ipc_chan_t *ch = NULL;
    psc_ipc_err_t e = {0};
    client_t bad;
    char line[400];
    int rank = -1;
    int64_t t0;

    (void)state;
    assert_int_equal(psc__ipc_token_make(&t, NULL), PSC_OK);
    assert_int_equal(psc__ipc_listen(&t, 2, geteuid(), &l, NULL), PSC_OK);
    bad = client_start(psc__ipc_listener_path(l), &t, 0, CLIENT_WRONG_TOKEN);
    t0 = psc__ipc_now();
    expect_error(psc__ipc_accept(l, NULL, t0 + 300 * 1000000LL, &ch, &rank, &e), &e, PSC_ERR_TIMEOUT,
                 "1 connection refused, the last: a connection from pid");
    assert_true(psc__ipc_now() - t0 >= 300 * 1000000LL);
    assert_non_null(strstr(e.msg, "no worker connected within"));
    client_end(bad, line, sizeof(line));
    psc__ipc_listener_close(l);
}

static void test_wrong_user_refused(void **state)
{
    psc_ipc_token_t t;
    psc_ipc_listener_t *l;
    psc_ipc_chan_t *ch = NULL;
    psc_ipc_err_t e = {0};
    client_t good;
    char line[400], want[100];
    int rank = -1;

    (void)state;
    assert_int_equal(psc__ipc_token_make(&t, NULL), PSC_OK);
    /* This process's user stands for a stranger: the listener expects another. */
    assert_int_equal(psc__ipc_listen(&t, 1, geteuid() + 1, &l, NULL), PSC_OK);
    good = client_start(psc__ipc_listener_path(l), &t, 0, CLIENT_HELLO);
    expect_error(psc__ipc_accept(l, NULL, psc__ipc_deadline(300), &ch, &rank, &e), &e, PSC_ERR_TIMEOUT,
                 "1 connection refused");
    snprintf(want, sizeof(want), "of user %lu: accepted user %lu only", (unsigned long)geteuid(),
             (unsigned long)geteuid() + 1);
    assert_non_null(strstr(psc__ipc_listener_refusal(l, 0), want));
    client_end(good, line, sizeof(line));
    /* Closed with its HELLO unread: the client sees a reset or the end. */
    assert_non_null(strstr(line, "the parent: "));
    assert_true(strstr(line, "closed the connection") || strstr(line, "reset"));
    psc__ipc_listener_close(l);
}

static void test_rank_taken_or_from_another_pid_refused(void **state)
{
    psc_ipc_token_t t;
    psc_ipc_listener_t *l;
    psc_ipc_chan_t *ch = NULL, *ch2 = NULL;
    psc_ipc_err_t e = {0};
    client_t a, b, b2, c;
    pid_t pids[2];
    char line[400];
    int rank = -1;

    (void)state;
    assert_int_equal(psc__ipc_token_make(&t, NULL), PSC_OK);
    assert_int_equal(psc__ipc_listen(&t, 2, geteuid(), &l, NULL), PSC_OK);
    a = client_start(psc__ipc_listener_path(l), &t, 0, CLIENT_GOOD);
    pids[0] = a.pid;
    pids[1] = 1; /* rank 1 may come only from a pid no client has */
    assert_int_equal(psc__ipc_accept(l, pids, psc__ipc_deadline(3000), &ch, &rank, &e), PSC_OK);
    assert_int_equal(rank, 0);
    b = client_start(psc__ipc_listener_path(l), &t, 0, CLIENT_HELLO);
    expect_error(psc__ipc_accept(l, pids, psc__ipc_deadline(300), &ch2, &rank, &e), &e, PSC_ERR_TIMEOUT,
                 "HELLO for rank 0, which is connected already");
    c = client_start(psc__ipc_listener_path(l), &t, 1, CLIENT_HELLO);
    expect_error(psc__ipc_accept(l, pids, psc__ipc_deadline(300), &ch2, &rank, &e), &e, PSC_ERR_TIMEOUT,
                 "HELLO for rank 1: accepted from pid 1 only");
    b2 = client_start(psc__ipc_listener_path(l), &t, 2, CLIENT_HELLO);
    expect_error(psc__ipc_accept(l, pids, psc__ipc_deadline(300), &ch2, &rank, &e), &e, PSC_ERR_TIMEOUT,
                 "HELLO for rank 2: accepted 0 to 1");
    client_end(b2, line, sizeof(line));
    client_end(a, line, sizeof(line));
    assert_string_equal(line, "0 connected");
    client_end(b, line, sizeof(line));
    assert_non_null(strstr(line, "which is connected already"));
    client_end(c, line, sizeof(line));
    psc__ipc_chan_close(ch);
    psc__ipc_listener_close(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memfd_passed_and_read_back),
        cmocka_unit_test(test_descriptor_counts_checked),
        cmocka_unit_test(test_descriptors_on_a_later_byte_counted),
        cmocka_unit_test(test_send_refuses_what_the_receiver_would),
        cmocka_unit_test(test_receive_times_out_at_its_deadline),
        cmocka_unit_test(test_frame_cut_by_the_deadline),
        cmocka_unit_test(test_send_times_out_when_the_peer_does_not_read),
        cmocka_unit_test(test_peer_gone),
        cmocka_unit_test(test_forged_frames_rejected),
        cmocka_unit_test(test_replayed_frame_rejected),
        cmocka_unit_test(test_error_message_reported),
        cmocka_unit_test(test_share_messages),
        cmocka_unit_test(test_token),
        cmocka_unit_test(test_run_directory_modes),
        cmocka_unit_test(test_runtime_dir_used_only_when_fit),
        cmocka_unit_test(test_strangers_refused_then_the_worker_accepted),
        cmocka_unit_test(test_first_accept_times_out_naming_refusals),
        cmocka_unit_test(test_wrong_user_refused),
        cmocka_unit_test(test_rank_taken_or_from_another_pid_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
