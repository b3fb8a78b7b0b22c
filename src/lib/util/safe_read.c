#define _GNU_SOURCE
#include "util/safe_read.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A capture deeper than this is no /sys tree (the real one is about 20 deep). */
#define PSC_CAPTURE_MAX_DEPTH 64

typedef struct {
    const char *root;   /* as given, for messages */
    char rroot[PATH_MAX];
    size_t left;        /* entries still accepted */
    size_t max;
    char *errbuf;
    size_t errlen;
} psc__walk_t;

const char *psc__file_kind(mode_t mode)
{
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISLNK(mode))
        return "a symbolic link";
    return S_ISREG(mode) ? "a regular file" : "an unknown kind of file";
}

/* The words our messages use for the usual reasons a file cannot be read. */
static const char *psc__errno_text(int e)
{
    if (e == ENOENT || e == ENOTDIR)
        return "no such file or directory";
    if (e == EACCES || e == EPERM)
        return "permission denied";
    return strerror(e);
}

/* 1 when resolved is rroot or lies below it (both resolved by realpath). */
static int psc__inside(const char *rroot, const char *resolved)
{
    size_t n = strlen(rroot);

    if (n == 1 && rroot[0] == '/')
        return 1;
    return strncmp(resolved, rroot, n) == 0 && (resolved[n] == '\0' || resolved[n] == '/');
}

int psc__safe_open(const char *root, const char *path, psc_status_t *st, char *errbuf, size_t errlen)
{
    char full[PATH_MAX], rroot[PATH_MAX], real[PATH_MAX];
    const char *target = full;
    int under = root && root[0], flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    struct stat sb;
    int fd;

    *st = PSC_ERR_INVALID;
    if (snprintf(full, sizeof(full), "%s%s", under ? root : "", path) >= (int)sizeof(full)) {
        snprintf(errbuf, errlen, "%s%s: path longer than %d bytes", under ? root : "", path, PATH_MAX - 1);
        return -1;
    }
    if (under) {
        if (!realpath(root, rroot) || !realpath(full, real)) {
            *st = PSC_ERR_IO;
            snprintf(errbuf, errlen, "%s: %s", full, psc__errno_text(errno));
            return -1;
        }
        if (!psc__inside(rroot, real)) {
            snprintf(errbuf, errlen, "%s: a symbolic link leading outside %s", full, root);
            return -1;
        }
        target = real;
        flags |= O_NOFOLLOW;
    }
    /* Refused before opening: opening a FIFO waits for a writer, opening a device may act. */
    if (stat(target, &sb) != 0) {
        *st = PSC_ERR_IO;
        snprintf(errbuf, errlen, "%s: %s", full, psc__errno_text(errno));
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(errbuf, errlen, "%s: %s, not a regular file", full, psc__file_kind(sb.st_mode));
        return -1;
    }
    fd = open(target, flags);
    if (fd < 0) {
        *st = PSC_ERR_IO;
        snprintf(errbuf, errlen, "%s: %s", full, psc__errno_text(errno));
        return -1;
    }
    /* Swapped for something else between stat and open. */
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(errbuf, errlen, "%s: not a regular file", full);
        close(fd);
        return -1;
    }
    *st = PSC_OK;
    return fd;
}

ssize_t psc__read_up_to(int fd, char *buf, size_t cap)
{
    size_t got = 0;

    while (got < cap) {
        ssize_t n = read(fd, buf + got, cap - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

psc_status_t psc__safe_read_file(const char *root, const char *path, size_t max, char **out, size_t *len,
                                 char *errbuf, size_t errlen)
{
    psc_status_t st;
    size_t cap = 1 << 16, got = 0;
    char *buf = NULL, *bigger;
    int fd = psc__safe_open(root, path, &st, errbuf, errlen);

    if (fd < 0)
        return st;
    /* /proc and /sys files give no size: read until the end, one byte past max at most. */
    for (;;) {
        ssize_t n;

        if (cap > max + 1)
            cap = max + 1;
        bigger = realloc(buf, cap + 1);
        if (!bigger) {
            st = PSC_ERR_NO_MEMORY;
            snprintf(errbuf, errlen, "%s%s: out of host memory", root ? root : "", path);
            goto err_free;
        }
        buf = bigger;
        n = psc__read_up_to(fd, buf + got, cap - got);
        if (n < 0) {
            st = PSC_ERR_IO;
            snprintf(errbuf, errlen, "%s%s: %s", root ? root : "", path, psc__errno_text(errno));
            goto err_free;
        }
        got += (size_t)n;
        if (got > max) {
            st = PSC_ERR_INVALID;
            snprintf(errbuf, errlen, "%s%s: larger than %zu bytes: accepted files of up to %zu", root ? root : "",
                     path, max, max);
            goto err_free;
        }
        if (got < cap)
            break;
        cap *= 2;
    }
    close(fd);
    buf[got] = '\0';
    *out = buf;
    *len = got;
    return PSC_OK;

err_free:
    free(buf);
    close(fd);
    return st;
}

static psc_status_t psc__walk(psc__walk_t *w, char *path, size_t plen, int depth)
{
    psc_status_t st = PSC_OK;
    struct dirent *e;
    DIR *d = opendir(path);

    if (!d) {
        snprintf(w->errbuf, w->errlen, "%s: %s", path, psc__errno_text(errno));
        return PSC_ERR_IO;
    }
    while (st == PSC_OK && (e = readdir(d))) {
        char real[PATH_MAX];
        struct stat sb;
        size_t n = strlen(e->d_name), sep = path[plen - 1] != '/'; /* the root "/" ends in its own slash */

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (w->left-- == 0) {
            snprintf(w->errbuf, w->errlen, "%s: more than %zu files: accepted captures of up to %zu", w->root,
                     w->max, w->max);
            st = PSC_ERR_INVALID;
            break;
        }
        if (plen + sep + n >= PATH_MAX) {
            snprintf(w->errbuf, w->errlen, "%s: a path in it is longer than %d bytes", w->root, PATH_MAX - 1);
            st = PSC_ERR_INVALID;
            break;
        }
        path[plen] = '/';
        memcpy(path + plen + sep, e->d_name, n + 1);
        if (lstat(path, &sb) != 0) {
            snprintf(w->errbuf, w->errlen, "%s: %s", path, psc__errno_text(errno));
            st = PSC_ERR_IO;
        } else if (S_ISLNK(sb.st_mode)) {
            /* A link to nothing is harmless (a capture holds part of /sys); one leading out is not. */
            if (realpath(path, real) && !psc__inside(w->rroot, real)) {
                snprintf(w->errbuf, w->errlen, "%s: a symbolic link leading outside the capture %s", path, w->root);
                st = PSC_ERR_INVALID;
            }
        } else if (S_ISDIR(sb.st_mode)) {
            if (depth >= PSC_CAPTURE_MAX_DEPTH) {
                snprintf(w->errbuf, w->errlen, "%s: deeper than %d directories: accepted captures of up to %d",
                         w->root, PSC_CAPTURE_MAX_DEPTH, PSC_CAPTURE_MAX_DEPTH);
                st = PSC_ERR_INVALID;
            } else {
                st = psc__walk(w, path, plen + sep + n, depth + 1);
            }
        } else if (!S_ISREG(sb.st_mode)) {
            snprintf(w->errbuf, w->errlen,
                     "%s: %s: a capture may hold only directories, regular files and links inside it", path,
                     psc__file_kind(sb.st_mode));
            st = PSC_ERR_INVALID;
        }
        path[plen] = '\0';
    }
    closedir(d);
    return st;
}

psc_status_t psc__capture_check(const char *root, size_t max_entries, char *errbuf, size_t errlen)
{
    psc__walk_t *w = calloc(1, sizeof(*w));
    char *path = malloc(PATH_MAX);
    psc_status_t st = PSC_ERR_NO_MEMORY;
    size_t n;

    if (!w || !path) {
        snprintf(errbuf, errlen, "out of host memory");
        goto out;
    }
    w->root = root;
    w->left = w->max = max_entries;
    w->errbuf = errbuf;
    w->errlen = errlen;
    n = strlen(root);
    if (!realpath(root, w->rroot) || n >= PATH_MAX) {
        snprintf(errbuf, errlen, "%s: %s", root, n >= PATH_MAX ? "path too long" : psc__errno_text(errno));
        st = PSC_ERR_IO;
        goto out;
    }
    memcpy(path, root, n + 1);
    while (n > 1 && path[n - 1] == '/')
        path[--n] = '\0';
    st = psc__walk(w, path, n, 0);
out:
    free(path);
    free(w);
    return st;
}

int psc__write_all(int fd, const char *p, size_t len)
{
    while (len) {
        ssize_t n = write(fd, p, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}
