/*
 * Output files: a regular file is replaced atomically (keeping its mode and
 * owner), a symlink is written through to its target, and a device, a FIFO or
 * /dev/stdout is written in place. Nothing here deletes or renames over a file
 * that is not regular, and the process umask is never touched.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "p2pscope_private.h"
#include "util/safe_read.h"

#define PSC__MAX_LINKS 40 /* the kernel's own limit on a chain of symlinks */

/*
 * A reader that goes away must fail the write with EPIPE, not kill the
 * process that embeds us: SIGPIPE is held for this thread and one raised
 * here is taken back before the old mask returns.
 */
static int psc__write_nosigpipe(int fd, const char *p, size_t len)
{
    const struct timespec zero = {0, 0};
    sigset_t pipe_only, old, pending;
    int rc, e, was_pending;

    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    sigpending(&pending);
    was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
    rc = psc__write_all(fd, p, len);
    e = errno;
    if (rc != 0 && e == EPIPE && !was_pending)
        sigtimedwait(&pipe_only, NULL, &zero);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return rc;
}

/* Directory part of path ("." when none) into buf. */
static void psc__dir_of(const char *path, char *buf, size_t len)
{
    const char *slash = strrchr(path, '/');

    if (!slash)
        snprintf(buf, len, ".");
    else if (slash == path)
        snprintf(buf, len, "/");
    else
        snprintf(buf, len, "%.*s", (int)(slash - path), path);
}

/*
 * Follow path's symlinks (a dangling one included) to the name that will be
 * written, with its directory made canonical. *magic is set when a link lives
 * under /proc (/dev/stdout, /dev/fd/N): those name an open file, not a place
 * to make files in. 0 or an errno.
 */
static int psc__resolve(const char *path, char *out, size_t outlen, int *magic)
{
    char cur[PATH_MAX], dir[PATH_MAX], canon[PATH_MAX], target[PATH_MAX];
    struct stat sb;

    *magic = 0;
    if (snprintf(cur, sizeof(cur), "%s", path) >= (int)sizeof(cur))
        return ENAMETOOLONG;
    for (int hop = 0;; hop++) {
        const char *base;
        ssize_t n;

        psc__dir_of(cur, dir, sizeof(dir));
        if (!realpath(dir, canon))
            return errno;
        if (strncmp(canon, "/proc/", 6) == 0) {
            *magic = 1;
            break;
        }
        base = strrchr(cur, '/') ? strrchr(cur, '/') + 1 : cur;
        if (!*base)
            return EISDIR;
        if (snprintf(target, sizeof(target), "%s%s%s", canon, strcmp(canon, "/") ? "/" : "", base) >=
            (int)sizeof(target))
            return ENAMETOOLONG;
        memcpy(cur, target, sizeof(cur));
        if (lstat(cur, &sb) != 0) {
            if (errno != ENOENT)
                return errno;
            break; /* a new file */
        }
        if (!S_ISLNK(sb.st_mode))
            break;
        if (hop == PSC__MAX_LINKS)
            return ELOOP;
        n = readlink(cur, target, sizeof(target) - 1);
        if (n < 0)
            return errno;
        target[n] = '\0';
        if (target[0] == '/')
            memcpy(cur, target, (size_t)n + 1);
        else if (snprintf(cur, sizeof(cur), "%s/%s", canon, target) >= (int)sizeof(cur))
            return ENAMETOOLONG;
    }
    if (snprintf(out, outlen, "%s", *magic ? path : cur) >= (int)outlen)
        return ENAMETOOLONG;
    return 0;
}

/*
 * A device, a FIFO or an open file named through /proc: write in place,
 * never created, truncated or replaced. A FIFO is opened without blocking so
 * that one without a reader is an error, not a hang.
 */
static psc_status_t psc__write_direct(const char *path, int magic, const void *data, size_t len, char *errbuf,
                                      size_t errlen)
{
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK | (magic ? O_APPEND : 0));
    int flags, ok;

    if (fd < 0) {
        if (errno == ENXIO)
            snprintf(errbuf, errlen, "cannot write %s: no process is reading it", path);
        else
            snprintf(errbuf, errlen, "cannot write %s: %s", path, strerror(errno));
        return PSC_ERR_IO;
    }
    flags = fcntl(fd, F_GETFL);
    ok = flags >= 0 && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 && psc__write_nosigpipe(fd, data, len) == 0;
    if (!ok)
        snprintf(errbuf, errlen, "cannot write %s: %s", path, strerror(errno));
    if (close(fd) != 0 && ok) {
        snprintf(errbuf, errlen, "cannot write %s: %s", path, strerror(errno));
        ok = 0;
    }
    return ok ? PSC_OK : PSC_ERR_IO;
}

/*
 * A new file beside path with a short name of its own (".p2pscope-PID-N", so
 * a long file name still fits); open(2) applies the umask to mode, as fopen
 * would.
 */
static int psc__create_beside(const char *path, mode_t mode, char **tmp)
{
    static unsigned counter;
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;

    for (int attempt = 0; attempt < 100; attempt++) {
        char *name = NULL;
        int fd;

        if (asprintf(&name, "%.*s.p2pscope-%ld-%x", dirlen, path, (long)getpid(),
                     __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED)) < 0) {
            errno = ENOMEM;
            return -1;
        }
        fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd >= 0) {
            *tmp = name;
            return fd;
        }
        free(name);
        if (errno != EEXIST)
            return -1;
    }
    errno = EEXIST;
    return -1;
}

/* path is still what was found there (old, or nothing): a FIFO or device put there meanwhile is never renamed over. */
static int psc__unchanged(const char *path, const struct stat *old)
{
    struct stat now;

    if (lstat(path, &now) != 0)
        return !old && errno == ENOENT;
    return S_ISREG(now.st_mode) && (!old || (now.st_dev == old->st_dev && now.st_ino == old->st_ino));
}

/*
 * Give the new file the old one's owner (before the mode: fchown clears
 * set-id bits). Only root may give a file away; anyone else keeps what is
 * allowed (the group, when a member), and the file becomes theirs, as with
 * any editor that saves by rename.
 */
static void psc__keep_owner(int fd, const struct stat *old)
{
    if (old->st_uid == geteuid() && old->st_gid == getegid())
        return;
    if (fchown(fd, old->st_uid, old->st_gid) != 0 && fchown(fd, (uid_t)-1, old->st_gid) != 0)
        return; /* ours, with the old mode */
}

/* old: the file being replaced (NULL: a new one). */
static psc_status_t psc__write_replace(const char *path, const struct stat *old, const void *data, size_t len,
                                       char *errbuf, size_t errlen)
{
    char *tmp = NULL;
    int fd, ok;

    if (old && faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) != 0) {
        snprintf(errbuf, errlen, "cannot write %s: %s", path, strerror(errno));
        return PSC_ERR_IO;
    }
    /* Replacing: private until it has the old file's owner and mode. */
    fd = psc__create_beside(path, old ? 0600 : 0666, &tmp);
    if (fd < 0) {
        snprintf(errbuf, errlen, "cannot create a file beside %s: %s", path, strerror(errno));
        return PSC_ERR_IO;
    }
    ok = psc__write_all(fd, data, len) == 0;
    if (ok && old) {
        psc__keep_owner(fd, old);
        ok = fchmod(fd, old->st_mode & 07777) == 0;
    }
    ok = ok && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (ok && !psc__unchanged(path, old)) {
        snprintf(errbuf, errlen, "cannot write %s: it changed while being written (accepted: a regular file)", path);
        unlink(tmp);
        free(tmp);
        return PSC_ERR_IO;
    }
    ok = ok && rename(tmp, path) == 0;
    if (!ok) {
        snprintf(errbuf, errlen, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return ok ? PSC_OK : PSC_ERR_IO;
}

/* The descriptor a name stands for (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N), -1 for any other. */
static int psc__fd_of_name(const char *path)
{
    static const char *const dirs[] = {"/dev/fd/", "/proc/self/fd/"};
    char *end;
    long n;

    if (strcmp(path, "/dev/stdout") == 0)
        return STDOUT_FILENO;
    if (strcmp(path, "/dev/stderr") == 0)
        return STDERR_FILENO;
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        size_t k = strlen(dirs[i]);

        if (strncmp(path, dirs[i], k) == 0 && path[k] >= '0' && path[k] <= '9') {
            n = strtol(path + k, &end, 10);
            return *end || n > INT_MAX ? -1 : (int)n;
        }
    }
    return -1;
}

/*
 * An open descriptor named by path: written through a copy of it, at its own
 * offset (after what it already holds), whatever it is: a file, a pipe, a
 * terminal or a socket (a journal).
 */
static psc_status_t psc__write_fd(const char *path, int fd, const void *data, size_t len, char *errbuf,
                                  size_t errlen)
{
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3), ok;

    if (copy < 0) {
        snprintf(errbuf, errlen, "cannot write %s: %s", path, errno == EBADF ? "it is not open" : strerror(errno));
        return PSC_ERR_IO;
    }
    ok = psc__write_nosigpipe(copy, data, len) == 0;
    if (!ok)
        snprintf(errbuf, errlen, "cannot write %s: %s", path, strerror(errno));
    close(copy);
    return ok ? PSC_OK : PSC_ERR_IO;
}

psc_status_t psc_write_file_atomic(const char *path, const void *data, size_t len, char *errbuf, size_t errlen)
{
    char scratch[8], final[PATH_MAX];
    struct stat sb;
    int magic, e;

    if (!errbuf || !errlen) {
        errbuf = scratch;
        errlen = sizeof(scratch);
    }
    if (!path || !*path || (!data && len)) {
        snprintf(errbuf, errlen, "no file or no data given");
        return PSC_ERR_INVALID;
    }
    if ((e = psc__fd_of_name(path)) >= 0)
        return psc__write_fd(path, e, data, len, errbuf, errlen);
    if ((e = psc__resolve(path, final, sizeof(final), &magic)) != 0) {
        snprintf(errbuf, errlen, "cannot write %s: %s", path, strerror(e));
        return PSC_ERR_IO;
    }
    if (stat(final, &sb) != 0) {
        if (errno != ENOENT || magic) {
            snprintf(errbuf, errlen, "cannot write %s: %s", path, strerror(errno));
            return PSC_ERR_IO;
        }
        return psc__write_replace(final, NULL, data, len, errbuf, errlen);
    }
    if (S_ISDIR(sb.st_mode) || S_ISSOCK(sb.st_mode)) {
        snprintf(errbuf, errlen, "cannot write %s: it is a %s; accepted a regular file, a device or a FIFO", path,
                 S_ISDIR(sb.st_mode) ? "directory" : "socket");
        return PSC_ERR_INVALID;
    }
    if (magic || !S_ISREG(sb.st_mode))
        return psc__write_direct(magic ? path : final, magic, data, len, errbuf, errlen);
    return psc__write_replace(final, &sb, data, len, errbuf, errlen);
}
