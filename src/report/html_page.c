/* --html, --svg, --csv: check the directories up front, then write what was asked, each file atomically. */
#define _GNU_SOURCE
#include "html_page.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int psc_page_have_figures(void)
{
#ifdef P2PSCOPE_HAVE_CAIRO
    return 1;
#else
    return 0;
#endif
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
    if (stat(dir, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode)) {
            snprintf(err, errlen, "%s %s is not a directory: accepted a directory (made when missing)", option, dir);
            return PSC_ERR_INVALID;
        }
        if (access(dir, W_OK | X_OK) != 0) {
            snprintf(err, errlen, "cannot write %s %s: the directory is not writable", option, dir);
            return PSC_ERR_INVALID;
        }
        return PSC_OK;
    }
    snprintf(copy, sizeof(copy), "%s", dir);
    parent = dirname(copy);
    if (access(parent, W_OK | X_OK) != 0) {
        snprintf(err, errlen, "cannot make %s %s: directory %s is missing or not writable", option, dir, parent);
        return PSC_ERR_INVALID;
    }
    return PSC_OK;
}

static psc_status_t psc__write_in(const char *dir, const char *name, const char *ext, const char *text, char *err,
                                  size_t errlen)
{
    char path[4096];

    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot make directory %s: %s", dir, strerror(errno));
        return PSC_ERR_IO;
    }
    if ((size_t)snprintf(path, sizeof(path), "%s/%s%s", dir, name, ext) >= sizeof(path)) {
        snprintf(err, errlen, "path too long under %s", dir);
        return PSC_ERR_INVALID;
    }
    return psc_write_file_atomic(path, text, strlen(text), err, errlen);
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
        for (size_t k = 0; st == PSC_OK && svg_dir && k < figs.n; k++)
            st = psc__write_in(svg_dir, figs.figs[k].name, ".svg", figs.figs[k].svg, err, errlen);
        if (st == PSC_OK && svg_dir && figs.n == 0) /* nothing to draw: say so in the directory rather than leave it bare */
            st = psc__write_in(svg_dir, "README", ".txt",
                               "This run had no result that p2pscope draws (matrices, sweeps, latency distributions).\n",
                               err, errlen);
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
        for (size_t k = 0; st == PSC_OK && k < n; k++)
            st = psc__write_in(csv_dir, files[k].name, "", files[k].text, err, errlen);
        psc_csv_free(files, n);
    }
    return st;
}
