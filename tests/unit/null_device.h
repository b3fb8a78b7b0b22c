/*
 * A character device like /dev/null for tests that write to "a device": a
 * node of its own (1:3) in dir when this process may make one, so that a
 * regression that deletes or replaces its target harms only the test's node.
 * Without root the real /dev/null is used: such a process cannot remove it.
 */
#ifndef PSC_TEST_NULL_DEVICE_H
#define PSC_TEST_NULL_DEVICE_H

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* The device's path into out; -1 when neither is safe to use (root, and no node could be made and opened). */
static inline int psc_test_null_device(const char *dir, char *out, size_t len)
{
    int fd;

    snprintf(out, len, "%s/null", dir);
    if (mknod(out, S_IFCHR | 0666, makedev(1, 3)) == 0) {
        fd = open(out, O_WRONLY); /* fails on a file system mounted nodev */
        if (fd >= 0) {
            close(fd);
            return 0;
        }
        unlink(out);
    }
    if (geteuid() == 0)
        return -1;
    snprintf(out, len, "/dev/null");
    return 0;
}

#endif
