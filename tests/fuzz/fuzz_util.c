/*
 * The fuzz targets' shared helpers (fuzz_util.h): a scratch directory per process, removed at exit, and the
 * checks every loaded facts object gets.
 */
#define _GNU_SOURCE
#include "fuzz_util.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/render_doctor.h"
#include "report/render_topo.h"

static char psc__scratch[64];

static int psc__rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

void psc_fuzz_remove_tree(const char *path)
{
    /* FTW_PHYS: a symbolic link is removed, never followed. */
    nftw(path, psc__rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void psc__cleanup(void)
{
    if (psc__scratch[0])
        psc_fuzz_remove_tree(psc__scratch);
}

const char *psc_fuzz_scratch_dir(void)
{
    if (!psc__scratch[0]) {
        /* tmpfs where there is one: a capture is made and removed for every input. */
        snprintf(psc__scratch, sizeof(psc__scratch), "%s/psc-fuzz-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
        if (!mkdtemp(psc__scratch)) {
            perror("mkdtemp");
            abort();
        }
        atexit(psc__cleanup);
    }
    return psc__scratch;
}

const char *psc_fuzz_write_file(const char *name, const uint8_t *data, size_t size)
{
    static char path[160];
    int fd;

    snprintf(path, sizeof(path), "%s/%s", psc_fuzz_scratch_dir(), name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return NULL;
    for (size_t off = 0; off < size;) {
        ssize_t n = write(fd, data + off, size - off);

        if (n <= 0) {
            close(fd);
            return NULL;
        }
        off += (size_t)n;
    }
    close(fd);
    return path;
}

void psc_fuzz_load_and_use(const char *path)
{
    psc_facts_t *f = psc_facts_new();
    char err[512] = "", reason[256];
    psc_finding_t findings[64];
    psc_status_t st;
    FILE *null;

    if (!f)
        abort();
    st = psc_facts_load(path, f, err, sizeof(err));

    /* PSC_FUZZ_VERBOSE: what each input became, to check that seeds reach the code past the loader. */
    if (getenv("PSC_FUZZ_VERBOSE"))
        fprintf(stderr, "%s: %s\n", path, st == PSC_OK ? "loaded" : err);
    if (st == PSC_OK) {
        char *json = psc_facts_json(f, 1);
        size_t n = psc_doctor(f, findings, sizeof(findings) / sizeof(findings[0]));

        free(json);
        for (int i = 0; i < f->ngpu; i++)
            for (int j = 0; j < f->ngpu; j++)
                psc_p2p_reason(f, i, j, reason, sizeof(reason));
        null = fopen("/dev/null", "w");
        if (null) {
            psc_render_topo(null, f);
            psc_render_findings(null, f, findings, n < 64 ? n : 64);
            fclose(null);
        }
    } else if (!memchr(err, '\0', sizeof(err)) || !err[0]) {
        abort(); /* every failure says why */
    }
    psc_facts_free(f);
}
