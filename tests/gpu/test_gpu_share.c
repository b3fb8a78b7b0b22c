/*
 * psc_share_* between two real processes on one GPU: this program starts a
 * copy of itself (fork and exec, as CUDA requires) joined by two Unix
 * sockets, exports each kind of shared memory and an event, and passes the
 * message (and for VMM the file descriptor) by psc_share_send and
 * psc_share_recv on a stream socket; the other (datagrams) carries the
 * child's answers, and a forged message as raw bytes. The child imports it,
 * checks the exporter's bytes and the access the driver reports, writes its
 * own, records the event; the parent checks those bytes. Fabric handles may
 * be unsupported here: then the reason is printed and the kind is waived.
 */
#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpu_common.h"
#include "gpu_driver.h"

#define N ((5u << 20) + 3)
#define TIMEOUT_MS 60000

static int sock = -1; /* answers, raw messages, bye */
static int data = -1; /* psc_share_send's */
static pid_t child = -1;

/* One message of len bytes, with a descriptor when fd >= 0. */
static int send_msg(int s, const void *buf, size_t len, int fd)
{
    char ctl[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {(void *)buf, len};
    struct msghdr m = {0};

    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    if (fd >= 0) {
        struct cmsghdr *c;

        memset(ctl, 0, sizeof(ctl));
        m.msg_control = ctl;
        m.msg_controllen = sizeof(ctl);
        c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    return sendmsg(s, &m, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

/* One message into buf (its length returned, -1 on timeout or error), and the descriptor that came with it. */
static ssize_t recv_msg(int s, void *buf, size_t len, int *fd)
{
    char ctl[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {buf, len};
    struct msghdr m = {0};
    struct pollfd p = {s, POLLIN, 0};
    struct cmsghdr *c;
    ssize_t n;

    *fd = -1;
    if (poll(&p, 1, TIMEOUT_MS) != 1)
        return -1;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof(ctl);
    n = recvmsg(s, &m, MSG_CMSG_CLOEXEC);
    for (c = CMSG_FIRSTHDR(&m); n >= 0 && c; c = CMSG_NXTHDR(&m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
            memcpy(fd, CMSG_DATA(c), sizeof(int));
    return n;
}

static unsigned char pattern(size_t i, unsigned seed) { return (unsigned char)((i * 2654435761u + seed) >> 11); }

/* GPU 0's primary context made current, as the runtime would: the driver calls of the checks need one. */
static int use_gpu0(void)
{
    CUcontext c;

    return psc_test_retain_primaries(&c, 1) == 0 && cu.set_current(c) == CUDA_SUCCESS ? 0 : -1;
}

/* ---------------------------------------------------------------- the child: imports what comes, answers */

static int child_reply(int s, const char *fmt, ...)
{
    char text[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    return send_msg(s, text, strlen(text) + 1, -1);
}

static int child_main(int s, int d)
{
    psc_status_t st;
    psc_context_t *ctx = psc_test_open(&st);
    unsigned char *buf = malloc(N);

    if (!ctx || !buf || psc_test_driver_load() != 0 || use_gpu0() != 0)
        return child_reply(s, "child: no context (%s)", psc_status_string(st)), 1;
    for (;;) {
        psc_share_msg_t msg;
        psc_share_t *in = NULL;
        unsigned acc = 0;
        CUstream stream = NULL;
        ssize_t n = recv_msg(s, msg.bytes, sizeof(msg.bytes), &msg.fd);

        if (n == 1) /* bye */
            break;
        if (n == 2 && msg.bytes[0] == 'S' && psc_share_recv(ctx, d, &msg, TIMEOUT_MS) != PSC_OK) {
            child_reply(s, "child: psc_share_recv: %s", psc_context_last_error(ctx));
            continue;
        }
        if (n != 2 && n != (ssize_t)sizeof(msg.bytes))
            return 2;
        st = psc_share_import(ctx, &msg, NULL, 0, &in);
        if (msg.fd >= 0)
            close(msg.fd);
        if (st != PSC_OK) {
            child_reply(s, "child: import: %s", psc_context_last_error(ctx));
            continue;
        }
        if (psc_share_kind(in) == PSC_SHARE_EVENT) { /* record it on a stream of ours: the parent waits for it */
            CUcontext c0;
            CUdevice d;

            cu.device_get(&d, psc_share_gpu(in));
            cu.retain(&c0, d);
            cu.set_current(c0);
            if (cu.stream_create(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
                cu.event_record(psc_share_event(in), stream) != CUDA_SUCCESS || cu.stream_sync(stream) != CUDA_SUCCESS)
                child_reply(s, "child: recording the imported event failed");
            else
                child_reply(s, "ok");
            cu.stream_destroy(stream);
            psc_share_free(in);
            continue;
        }
        if (psc_share_access(ctx, in, psc_share_gpu(in), &acc) != PSC_OK || acc != PSC_ACCESS_READWRITE) {
            child_reply(s, "child: access of GPU %d: %u (%s)", psc_share_gpu(in), acc, psc_context_last_error(ctx));
            psc_share_free(in);
            continue;
        }
        if (psc_share_size(in) != N || cu.dtoh(buf, (CUdeviceptr)(uintptr_t)psc_share_ptr(in), N) != CUDA_SUCCESS) {
            child_reply(s, "child: size %zu, or the read failed", psc_share_size(in));
            psc_share_free(in);
            continue;
        }
        {
            size_t bad = 0;

            while (bad < N && buf[bad] == pattern(bad, 1))
                bad++;
            for (size_t i = 0; i < N; i++)
                buf[i] = pattern(i, 2);
            if (bad < N)
                child_reply(s, "child: byte %zu is 0x%02x, not 0x%02x", bad, buf[bad], pattern(bad, 1));
            else if (cu.htod((CUdeviceptr)(uintptr_t)psc_share_ptr(in), buf, N) != CUDA_SUCCESS ||
                     cu.stream_sync(NULL) != CUDA_SUCCESS)
                child_reply(s, "child: the write failed");
            else if (psc_share_free(in) != PSC_OK)
                child_reply(s, "child: free: %s", psc_context_last_error(ctx));
            else
                child_reply(s, "ok");
        }
    }
    psc_context_destroy(ctx);
    free(buf);
    return 0;
}

/* ---------------------------------------------------------------- the parent */

static void expect_ok_reply(void)
{
    char text[512] = "";
    int fd;

    if (recv_msg(sock, text, sizeof(text) - 1, &fd) <= 0)
        fail_msg("no reply from the child in %d ms", TIMEOUT_MS);
    if (strcmp(text, "ok") != 0)
        fail_msg("%s", text);
}

/* The child is told a message comes on the stream socket, and it comes (psc_share_send). */
static void send_share(const psc_share_msg_t *msg)
{
    assert_int_equal(send_msg(sock, "S", 2, -1), 0);
    if (psc_share_send(g_ctx, data, msg, TIMEOUT_MS) != PSC_OK)
        fail_msg("psc_share_send: %s", psc_context_last_error(g_ctx));
}

static void share_round(psc_share_kind_t kind)
{
    unsigned char *buf = malloc(N);
    psc_share_t *s = NULL;
    psc_share_msg_t msg;
    psc_status_t st;

    assert_non_null(buf);
    st = psc_share_alloc(g_ctx, kind, 0, N, &s);
    if (kind == PSC_SHARE_VMM_FABRIC && st == PSC_ERR_UNSUPPORTED) {
        printf("waived: %s\n", psc_context_last_error(g_ctx));
        free(buf);
        return;
    }
    if (st != PSC_OK)
        fail_msg("%s", psc_context_last_error(g_ctx));
    for (size_t i = 0; i < N; i++)
        buf[i] = pattern(i, 1);
    assert_int_equal(cu.htod((CUdeviceptr)(uintptr_t)psc_share_ptr(s), buf, N), CUDA_SUCCESS);
    assert_int_equal(cu.stream_sync(NULL), CUDA_SUCCESS);
    if (psc_share_export(g_ctx, s, &msg) != PSC_OK)
        fail_msg("%s", psc_context_last_error(g_ctx));
    send_share(&msg);
    if (msg.fd >= 0)
        close(msg.fd);
    expect_ok_reply();
    assert_int_equal(cu.dtoh(buf, (CUdeviceptr)(uintptr_t)psc_share_ptr(s), N), CUDA_SUCCESS);
    for (size_t i = 0; i < N; i++)
        if (buf[i] != pattern(i, 2))
            fail_msg("byte %zu is 0x%02x after the child wrote 0x%02x", i, buf[i], pattern(i, 2));
    assert_int_equal(psc_share_free(s), PSC_OK);
    free(buf);
}

static void test_legacy(void **state) { (void)state; share_round(PSC_SHARE_LEGACY); }
static void test_vmm_fd(void **state) { (void)state; share_round(PSC_SHARE_VMM_FD); }
static void test_vmm_fabric(void **state) { (void)state; share_round(PSC_SHARE_VMM_FABRIC); }

static void test_event(void **state)
{
    psc_share_t *e = NULL;
    psc_share_msg_t msg;

    (void)state;
    if (psc_share_event_create(g_ctx, 0, &e) != PSC_OK)
        fail_msg("%s", psc_context_last_error(g_ctx));
    assert_int_equal(psc_share_export(g_ctx, e, &msg), PSC_OK);
    assert_int_equal(msg.fd, -1);
    send_share(&msg);
    expect_ok_reply();
    assert_int_equal(cu.event_sync(psc_share_event(e)), CUDA_SUCCESS); /* recorded by the child, complete */
    assert_int_equal(psc_share_free(e), PSC_OK);
}

/* A forged message reaches the child: it refuses it and goes on. */
static void test_forged(void **state)
{
    psc_share_t *s = NULL;
    psc_share_msg_t msg;
    char text[512] = "";
    int fd;

    (void)state;
    assert_int_equal(psc_share_alloc(g_ctx, PSC_SHARE_LEGACY, 0, N, &s), PSC_OK);
    assert_int_equal(psc_share_export(g_ctx, s, &msg), PSC_OK);
    msg.bytes[8] ^= 0xFF; /* the size */
    msg.bytes[15] = 0x7F;
    /* psc_share_send refuses to send it; sent raw, the importer refuses it */
    assert_int_equal(psc_share_send(g_ctx, data, &msg, TIMEOUT_MS), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "refused to send"));
    assert_int_equal(send_msg(sock, msg.bytes, sizeof(msg.bytes), -1), 0);
    assert_true(recv_msg(sock, text, sizeof(text) - 1, &fd) > 0);
    if (!strstr(text, "import") || !strstr(text, "size"))
        fail_msg("the child answered: %s", text);
    assert_int_equal(psc_share_free(s), PSC_OK);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_legacy),
        cmocka_unit_test(test_vmm_fd),
        cmocka_unit_test(test_vmm_fabric),
        cmocka_unit_test(test_event),
        cmocka_unit_test(test_forged),
    };
    int sv[2], dv[2], rc, status = 0;
    psc_status_t st;

    if (argc == 4 && strcmp(argv[1], "--child") == 0)
        return child_main(atoi(argv[2]), atoi(argv[3]));
    g_ctx = psc_test_open(&st);
    if (!g_ctx)
        return psc_test_skippable(st) ? PSC_TEST_SKIP : 1;
    if (psc_test_driver_load() != 0 || use_gpu0() != 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, dv) != 0)
        return 1;
    child = fork();
    if (child == 0) {
        char fdtext[16], datatext[16];

        close(sv[0]);
        close(dv[0]);
        fcntl(sv[1], F_SETFD, 0);
        fcntl(dv[1], F_SETFD, 0);
        snprintf(fdtext, sizeof(fdtext), "%d", sv[1]);
        snprintf(datatext, sizeof(datatext), "%d", dv[1]);
        execl("/proc/self/exe", argv[0], "--child", fdtext, datatext, (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    close(dv[1]);
    sock = sv[0];
    data = dv[0];
    rc = child > 0 ? cmocka_run_group_tests(tests, NULL, NULL) : 1;
    send_msg(sock, "", 1, -1); /* bye */
    if (child > 0) {
        struct pollfd p = {sock, POLLIN, 0};

        /* the child's end closes as it exits (nothing else comes after bye); then its exit is at hand */
        if (poll(&p, 1, TIMEOUT_MS) != 1 || !(p.revents & (POLLHUP | POLLIN))) {
            kill(child, SIGKILL);
            fprintf(stderr, "the child did not end in %d ms: killed\n", TIMEOUT_MS);
            rc = rc ? rc : 1;
        }
        waitpid(child, &status, 0);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "the child ended with status 0x%x\n", status);
        rc = rc ? rc : 1;
    }
    close(sock);
    close(data);
    psc_context_destroy(g_ctx);
    return rc;
}
