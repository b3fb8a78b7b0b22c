/*
 * A scratch directory of a unit test under /tmp (made by its setup, removed with what is in it by its
 * teardown) and paths in it: what the tests that write files share.
 */
#ifndef PSC_TEST_SCRATCH_DIR_H
#define PSC_TEST_SCRATCH_DIR_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char psc__dir[64];

/* /tmp/PREFIX-XXXXXX made; 0, or -1. */
static inline int psc_scratch_make(const char *prefix)
{
    snprintf(psc__dir, sizeof(psc__dir), "/tmp/%s-XXXXXX", prefix);
    return mkdtemp(psc__dir) ? 0 : -1;
}

static inline int psc_scratch_remove(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", psc__dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* NAME in the directory (four at once may be in use). */
static inline const char *psc__path(const char *name)
{
    static char buf[4][256];
    static int k;

    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%s/%s", psc__dir, name);
    return buf[k];
}

/* Entries of dir but "." and "..": a writer's temporaries (".p2pscope-...") count; -1 where it cannot be read. */
static inline int psc_scratch_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

#endif
