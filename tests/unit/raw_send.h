/*
 * For the tests that play a forger on a Unix socket (cmocka): raw bytes
 * written as they come, with descriptors (SCM_RIGHTS) on the first byte, and
 * a memfd standing in for an exported allocation's descriptor.
 */
#ifndef PSC_TESTS_RAW_SEND_H
#define PSC_TESTS_RAW_SEND_H

#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define PSC_TEST_RAW_MAX_FDS 256

/* Write n bytes of p on raw with nfds (at most PSC_TEST_RAW_MAX_FDS) descriptors attached; all must go. */
static inline void psc_test_raw_send(int raw, const void *p, size_t n, const int *fds, int nfds)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * PSC_TEST_RAW_MAX_FDS)];
    } ctl;
    struct iovec iov = {(void *)p, n};
    struct msghdr m = {0};

    assert_true(nfds >= 0 && nfds <= PSC_TEST_RAW_MAX_FDS);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    if (nfds) {
        struct cmsghdr *cm;

        memset(&ctl, 0, sizeof(ctl));
        m.msg_control = ctl.buf;
        m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        cm = CMSG_FIRSTHDR(&m);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
    }
    assert_int_equal(sendmsg(raw, &m, MSG_NOSIGNAL), (ssize_t)n);
}

/* A memfd holding n bytes (close-on-exec): what a VMM export's descriptor stands for in the tests. */
static inline int psc_test_memfd_with(const unsigned char *bytes, size_t n)
{
    int fd = memfd_create("psc-test", MFD_CLOEXEC);

    assert_true(fd >= 0);
    assert_int_equal(write(fd, bytes, n), (ssize_t)n);
    return fd;
}

#endif
