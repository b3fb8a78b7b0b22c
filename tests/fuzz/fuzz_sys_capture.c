/*
 * Fuzz the loader of captured /sys and /proc trees (topo --topology DIR).
 * The input is a list of entries, each KIND PATH \0 LEN CONTENT: KIND 'f' a
 * file with CONTENT, 'd' a directory, 'l' a symbolic link to CONTENT (which
 * may point anywhere: the loader must not follow it out of the tree); LEN is
 * CONTENT's length in two bytes, little-endian (config space is binary). Entries
 * are made under a fresh directory, without ever following a link made
 * before, so nothing outside the scratch directory is ever written.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_util.h"

#define PSC_FUZZ_MAX_DEPTH 24

/* Open (making them) the directories of a relative path, never through a link; the last component's name in *leaf. */
static int psc__open_parent(int root, char *rel, char **leaf)
{
    int dir = dup(root), depth = 0;
    char *save = NULL, *comp = strtok_r(rel, "/", &save), *next;

    for (; comp && (next = strtok_r(NULL, "/", &save)); comp = next) {
        int sub;

        if (strcmp(comp, "..") == 0 || strcmp(comp, ".") == 0 || ++depth > PSC_FUZZ_MAX_DEPTH)
            goto fail;
        sub = openat(dir, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        if (sub < 0 && mkdirat(dir, comp, 0755) == 0)
            sub = openat(dir, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        close(dir);
        if (sub < 0)
            return -1;
        dir = sub;
    }
    if (!comp || strcmp(comp, "..") == 0 || strcmp(comp, ".") == 0)
        goto fail;
    *leaf = comp;
    return dir;
fail:
    close(dir);
    return -1;
}

static void psc__make_entry(int root, char kind, char *path, const char *content, size_t len)
{
    char *leaf = NULL;
    int dir = psc__open_parent(root, path, &leaf), fd;

    if (dir < 0)
        return;
    if (kind == 'd') {
        mkdirat(dir, leaf, 0755);
    } else if (kind == 'l') {
        if (symlinkat(content, dir, leaf) != 0)
            (void)0; /* a link that cannot be made is a capture without it */
    } else if (kind == 'f' && (fd = openat(dir, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644)) >= 0) {
        if (write(fd, content, len) < 0)
            (void)0; /* a short capture is a capture too */
        close(fd);
    }
    close(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char root[200];
    const char *p = (const char *)data, *end = p + size;
    int fd;

    snprintf(root, sizeof(root), "%s/capture", psc_fuzz_scratch_dir());
    psc_fuzz_remove_tree(root);
    if (mkdir(root, 0755) != 0 || (fd = open(root, O_RDONLY | O_DIRECTORY)) < 0)
        return 0;
    while (p < end) {
        const char *path_end = memchr(p, '\0', (size_t)(end - p)), *content;
        char path[512], target[4096];
        size_t len;

        if (!path_end || path_end - p < 2 || path_end - p >= (long)sizeof(path) || end - path_end < 3)
            break;
        len = (size_t)(unsigned char)path_end[1] | (size_t)(unsigned char)path_end[2] << 8;
        content = path_end + 3;
        if (len > (size_t)(end - content))
            len = (size_t)(end - content);
        memcpy(path, p + 1, (size_t)(path_end - p - 1));
        path[path_end - p - 1] = '\0';
        snprintf(target, sizeof(target), "%.*s", (int)(len < sizeof(target) ? len : sizeof(target) - 1), content);
        psc__make_entry(fd, *p, path[0] == '/' ? path + 1 : path, *p == 'l' ? target : content, len);
        p = content + len;
    }
    close(fd);
    psc_fuzz_load_and_use(root);
    return 0;
}
