/*
 * Without libFuzzer (gcc builds, CI): run a fuzz target once over each file
 * named, or each file in each directory named, so the seeds and the inputs
 * that once crashed are replayed by every test run. Options ("-runs=0" and
 * the like, for libFuzzer) are ignored.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_util.h"

static int psc__replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long len;

    if (!f || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
        !(buf = malloc((size_t)len + 1)) || fread(buf, 1, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(buf);
        if (f)
            fclose(f);
        return 1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)len);
    free(buf);
    return 0;
}

static int psc__replay_dir(const char *dir, int *count)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort), bad = 0;

    if (n < 0) {
        fprintf(stderr, "replay: cannot list %s\n", dir);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat sb;

        snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
        if (names[i]->d_name[0] != '.' && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
            bad |= psc__replay_file(path);
            ++*count;
        }
        free(names[i]);
    }
    free(names);
    return bad;
}

int main(int argc, char **argv)
{
    int bad = 0, count = 0;

    for (int i = 1; i < argc; i++) {
        struct stat sb;

        if (argv[i][0] == '-')
            continue;
        if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
            bad |= psc__replay_dir(argv[i], &count);
        } else {
            bad |= psc__replay_file(argv[i]);
            count++;
        }
    }
    printf("replayed %d inputs\n", count);
    return bad || count == 0;
}
