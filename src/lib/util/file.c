#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "p2pscope.h"

static int psc__write_all(int fd, const char *p, size_t len)
{
    while (len) {
        ssize_t n = write(fd, p, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

psc_status_t psc_write_file_atomic(const char *path, const void *data, size_t len, char *errbuf, size_t errlen)
{
    char scratch[8], *tmp = NULL;
    mode_t mask;
    int fd, ok;

    if (!errbuf || !errlen) {
        errbuf = scratch;
        errlen = sizeof(scratch);
    }
    if (!path || (!data && len)) {
        snprintf(errbuf, errlen, "no file or no data given");
        return PSC_ERR_INVALID;
    }
    if (asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0) {
        snprintf(errbuf, errlen, "out of host memory");
        return PSC_ERR_NO_MEMORY;
    }
    fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(errbuf, errlen, "cannot create a file beside %s: %s", path, strerror(errno));
        free(tmp);
        return PSC_ERR_IO;
    }
    ok = psc__write_all(fd, data, len) == 0 && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (ok) {
        /* mkstemp makes 0600 files; give the result the mode a plain fopen would. */
        mask = umask(0);
        umask(mask);
        chmod(tmp, 0666 & ~mask);
        ok = rename(tmp, path) == 0;
    }
    if (!ok) {
        snprintf(errbuf, errlen, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return ok ? PSC_OK : PSC_ERR_IO;
}
