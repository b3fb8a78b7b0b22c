/*
 * Reading files of recordings someone else made: regular files only (a FIFO
 * or a device is refused before it is opened), bounded reads, and inside a
 * capture nothing reached through a symbolic link that leads out of it.
 * Beside them, the one write-all loop of the library.
 */
#ifndef PSC_UTIL_SAFE_READ_H
#define PSC_UTIL_SAFE_READ_H

#include <stddef.h>
#include <sys/types.h>

#include "p2pscope/bench.h"

/* "a FIFO", "a character device", ... for a file that is not regular. */
const char *psc__file_kind(mode_t mode);

/*
 * Open root + path for reading; root NULL or "" reads path as given. Under a
 * root the path is resolved first and must stay inside the root. Returns the
 * descriptor of a regular file, or -1 with one line in errbuf: PSC_ERR_IO in
 * *st for a file that is missing or unreadable, PSC_ERR_INVALID for one that
 * is not a regular file or lies outside the root.
 */
int psc__safe_open(const char *root, const char *path, psc_status_t *st, char *errbuf, size_t errlen);

/* Read up to cap bytes (to the end or cap, whichever comes first); -1 on a read error. */
ssize_t psc__read_up_to(int fd, char *buf, size_t cap);

/* Write all len bytes, retrying short writes and EINTR; -1 with errno (EIO for a write of nothing) else. */
int psc__write_all(int fd, const char *p, size_t len);

/*
 * The whole file (psc__safe_open's rules), NUL-terminated, malloc'd, in *out
 * and its length in *len; PSC_ERR_INVALID when it is larger than max bytes.
 */
psc_status_t psc__safe_read_file(const char *root, const char *path, size_t max, char **out, size_t *len,
                                 char *errbuf, size_t errlen);

/*
 * A captured tree fit to be read: only directories, regular files and
 * symbolic links that resolve inside it (or nowhere), at most max_entries of
 * them. hwloc follows a capture's links wherever they lead, so the whole tree
 * is checked before anything in it is read.
 */
psc_status_t psc__capture_check(const char *root, size_t max_entries, char *errbuf, size_t errlen);

#endif
