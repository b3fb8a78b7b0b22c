/* --html, --svg, --csv: check the directories up front, then write what was asked, each file atomically. */
#define _GNU_SOURCE
#include "html_page.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/p2pscope_private.h"

int psc_page_have_figures(void)
{
#ifdef P2PSCOPE_HAVE_CAIRO
    return 1;
#else
    return 0;
#endif
}

/* A name the page writers put in a directory: NAME.svg, NAME.csv, README.txt. */
static int psc__ours(const char *name)
{
    size_t n = strlen(name);

    return strcmp(name, "README.txt") == 0 ||
           (n > 4 && (strcmp(name + n - 4, ".svg") == 0 || strcmp(name + n - 4, ".csv") == 0));
}

/* Every name of ours in dir is a regular file (a symlink, directory or FIFO there is refused: we never follow one). */
static psc_status_t psc__check_entries(const char *dir, const char *option, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    psc_status_t st = PSC_OK;

    if (!d) {
        snprintf(err, errlen, "cannot read %s %s: %s", option, dir, strerror(errno));
        return PSC_ERR_INVALID;
    }
    while (st == PSC_OK && (e = readdir(d)) != NULL) {
        struct stat sb;

        if (!psc__ours(e->d_name))
            continue;
        if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT)
                continue; /* gone meanwhile */
            snprintf(err, errlen, "cannot check %s/%s: %s", dir, e->d_name, strerror(errno));
            st = PSC_ERR_INVALID;
        } else if (!S_ISREG(sb.st_mode)) {
            snprintf(err, errlen, "%s %s holds %s, a %s: accepted regular files there (p2pscope replaces them, it "
                     "never writes through a link)", option, dir, e->d_name,
                     S_ISLNK(sb.st_mode) ? "symlink" : S_ISDIR(sb.st_mode) ? "directory"
                     : S_ISFIFO(sb.st_mode) ? "FIFO" : "special file");
            st = PSC_ERR_INVALID;
        }
    }
    closedir(d);
    return st;
}

int psc_page_name_too_long(const char *path)
{
    const char *base = strrchr(path, '/');

    return strlen(base ? base + 1 : path) > NAME_MAX;
}

psc_status_t psc_page_check_dir(const char *dir, const char *option, char *err, size_t errlen)
{
    char copy[4096];
    struct stat sb;
    const char *parent;

    if (!dir || !*dir) {
        snprintf(err, errlen, "empty %s directory: accepted a directory path", option);
        return PSC_ERR_INVALID;
    }
    if (psc_page_name_too_long(dir)) {
        snprintf(err, errlen, "cannot make %s %s: its name is longer than %d bytes", option, dir, NAME_MAX);
        return PSC_ERR_INVALID;
    }
    if (stat(dir, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode)) {
            snprintf(err, errlen, "%s %s is not a directory: accepted a directory (made when missing)", option, dir);
            return PSC_ERR_INVALID;
        }
        if (access(dir, W_OK | X_OK) != 0) {
            snprintf(err, errlen, "cannot write %s %s: the directory is not writable", option, dir);
            return PSC_ERR_INVALID;
        }
        return psc__check_entries(dir, option, err, errlen);
    }
    if (lstat(dir, &sb) == 0) { /* a symlink to nothing: mkdir would not make its target */
        snprintf(err, errlen, "%s %s is a symlink to nothing: accepted a directory (made when missing)", option, dir);
        return PSC_ERR_INVALID;
    }
    snprintf(copy, sizeof(copy), "%s", dir);
    parent = dirname(copy);
    if (access(parent, W_OK | X_OK) != 0) {
        snprintf(err, errlen, "cannot make %s %s: directory %s is missing or not writable", option, dir, parent);
        return PSC_ERR_INVALID;
    }
    return PSC_OK;
}

/* dir made when missing (0777 less the umask) and opened, for psc__write_in: the descriptor, or -1 with err. */
static int psc__dir_open(const char *dir, char *err, size_t errlen)
{
    int dfd;

    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot make directory %s: %s", dir, strerror(errno));
        return -1;
    }
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        snprintf(err, errlen, "cannot open directory %s: %s", dir, strerror(errno));
    return dfd;
}

/*
 * name inside dir (dfd, from psc__dir_open): the names are ours, not the
 * user's, so no link is followed there. A new file (O_EXCL|O_NOFOLLOW, 0666
 * less the umask) renamed over the name: rename replaces a symlink planted
 * there, never writes through it.
 */
static psc_status_t psc__write_in(int dfd, const char *dir, const char *name, const char *ext, const char *text,
                                  char *err, size_t errlen)
{
    static unsigned counter;
    char final[256], tmp[64];
    int fd = -1, ok;

    if ((size_t)snprintf(final, sizeof(final), "%s%s", name, ext) >= sizeof(final) || strchr(final, '/')) {
        snprintf(err, errlen, "bad file name %s%s under %s", name, ext, dir);
        return PSC_ERR_INVALID;
    }
    for (int attempt = 0; fd < 0 && attempt < 100; attempt++) {
        snprintf(tmp, sizeof(tmp), ".p2pscope-%ld-%x", (long)getpid(),
                 __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        snprintf(err, errlen, "cannot create a file in %s: %s", dir, strerror(errno));
        return PSC_ERR_IO;
    }
    ok = psc_write_all(fd, text, strlen(text)) == 0 && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    ok = ok && renameat(dfd, tmp, dfd, final) == 0;
    if (!ok) {
        snprintf(err, errlen, "cannot write %s/%s: %s", dir, final, strerror(errno ? errno : EIO));
        unlinkat(dfd, tmp, 0);
    }
    return ok ? PSC_OK : PSC_ERR_IO;
}

psc_status_t psc_page_write(const psc_page_t *p, const char *html_path, const char *svg_dir, const char *csv_dir,
                            char *err, size_t errlen)
{
    psc_status_t st = PSC_OK;

    if (html_path || svg_dir) {
#ifdef P2PSCOPE_HAVE_CAIRO
        psc_page_figs_t figs = {0, NULL};

        if ((st = psc_page_figures(p, &figs)) != PSC_OK) {
            snprintf(err, errlen, "out of host memory drawing the figures");
            return st;
        }
        if (html_path) {
            char *html = psc_html_render(p, &figs);

            if (!html) {
                snprintf(err, errlen, "out of host memory writing the page");
                st = PSC_ERR_NO_MEMORY;
            } else {
                st = psc_write_file_atomic(html_path, html, strlen(html), err, errlen);
            }
            free(html);
        }
        if (st == PSC_OK && svg_dir) {
            int dfd = psc__dir_open(svg_dir, err, errlen);

            st = dfd < 0 ? PSC_ERR_IO : PSC_OK;
            for (size_t k = 0; st == PSC_OK && k < figs.n; k++)
                st = psc__write_in(dfd, svg_dir, figs.figs[k].name, ".svg", figs.figs[k].svg, err, errlen);
            if (st == PSC_OK && figs.n == 0) /* nothing to draw: say so in the directory rather than leave it bare */
                st = psc__write_in(dfd, svg_dir, "README", ".txt", "This run had no result that p2pscope draws "
                                   "(matrices, sweeps, latency distributions).\n", err, errlen);
            if (dfd >= 0)
                close(dfd);
        }
        psc_page_figs_free(&figs);
        if (st != PSC_OK)
            return st;
#else
        snprintf(err, errlen, "this p2pscope was built without cairo: install libcairo2-dev and rebuild");
        return PSC_ERR_UNSUPPORTED;
#endif
    }
    if (csv_dir) {
        size_t n = 0;
        psc_csv_file_t *files = psc_csv_render(p, &n);

        if (!files) {
            snprintf(err, errlen, "out of host memory writing the CSV tables");
            return PSC_ERR_NO_MEMORY;
        }
        st = psc_page_write_dir(csv_dir, files, n, err, errlen);
        psc_csv_free(files, n);
    }
    return st;
}

psc_status_t psc_page_write_dir(const char *dir, const psc_csv_file_t *files, size_t n, char *err, size_t errlen)
{
    int dfd = psc__dir_open(dir, err, errlen);
    psc_status_t st = dfd < 0 ? PSC_ERR_IO : PSC_OK;

    for (size_t k = 0; st == PSC_OK && k < n; k++)
        st = psc__write_in(dfd, dir, files[k].name, "", files[k].text, err, errlen);
    if (dfd >= 0)
        close(dfd);
    return st;
}
