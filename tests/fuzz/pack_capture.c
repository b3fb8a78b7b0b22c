/*
 * Pack part of a captured /sys and /proc tree into fuzz_sys_capture's input
 * format (see there: kind, path, NUL, two-byte length, content), to seed it from tests/data's captures:
 *   pack_capture ROOT [--gpu BUSID]... PREFIX... > seed
 * Only entries under the PREFIXes (relative to ROOT) are packed: links as
 * links (never followed), directories, /proc files and the /sys files that
 * topology readers use (psc__sys_files), of at most 4 KiB. --gpu BUSID makes that PCI
 * function an NVIDIA 3D controller, so the seed reaches the GPU code.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PSC_PACK_MAX_FILE 4096
#define PSC_PACK_MAX_GPUS 8

static size_t psc__root_len;
static const char *psc__gpus[PSC_PACK_MAX_GPUS];
static int psc__ngpus;

/* Names of the /sys files that hwloc and p2pscope read; the rest would only slow the fuzzer. */
static const char *const psc__sys_files[] = {
    "vendor", "device", "class", "revision", "subsystem_vendor", "subsystem_device", "config", "local_cpus",
    "local_cpulist", "numa_node", "current_link_speed", "current_link_width", "max_link_speed", "max_link_width",
    "cpumap", "cpulist", "meminfo", "distance", "core_id", "physical_package_id", "core_siblings",
    "thread_siblings", "online", "possible", "present", "type", "product_name",
};

static int psc__wanted(const char *rel)
{
    const char *base = strrchr(rel, '/');

    if (strncmp(rel, "/proc/", 6) == 0)
        return 1;
    base = base ? base + 1 : rel;
    for (size_t i = 0; i < sizeof(psc__sys_files) / sizeof(psc__sys_files[0]); i++)
        if (strcmp(base, psc__sys_files[i]) == 0)
            return 1;
    return 0;
}

static void psc__record(char kind, const char *rel, const char *content, size_t len)
{
    putchar(kind);
    fputs(rel, stdout);
    putchar('\0');
    putchar((int)(len & 0xff));
    putchar((int)(len >> 8));
    fwrite(content, 1, len, stdout);
}

/* The content a --gpu device's vendor and class files get instead. */
static const char *psc__gpu_override(const char *rel)
{
    for (int i = 0; i < psc__ngpus; i++) {
        const char *hit = strstr(rel, psc__gpus[i]);
        size_t n = strlen(psc__gpus[i]);

        if (hit && hit[n] == '/' && !strchr(hit + n + 1, '/')) {
            if (strcmp(hit + n + 1, "vendor") == 0)
                return "0x10de\n";
            if (strcmp(hit + n + 1, "class") == 0)
                return "0x030200\n";
            if (strcmp(hit + n + 1, "device") == 0)
                return "0x2335\n";
        }
    }
    return NULL;
}

/* Subtrees no topology reader looks into (thousands of memory block links, power and cache state). */
static int psc__skipped(const char *rel)
{
    static const char *const dirs[] = {"power", "cpuidle", "cpufreq", "hugepages", "msi_irqs", "cache", "driver",
                                       "subsystem", "firmware_node", "compact"};
    const char *base = strrchr(rel, '/');

    base = base ? base + 1 : rel;
    if (strncmp(base, "memory", 6) == 0 && base[6] >= '0' && base[6] <= '9')
        return 1;
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
        if (strcmp(base, dirs[i]) == 0)
            return 1;
    return 0;
}

static int psc__visit(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    const char *rel = path + psc__root_len;
    char buf[PSC_PACK_MAX_FILE];
    const char *over;
    ssize_t n;
    int fd;

    (void)ftw;
    if (!*rel)
        return 0;
    if (psc__skipped(rel))
        return flag == FTW_D ? FTW_SKIP_SUBTREE : 0;
    if (flag == FTW_SL) {
        n = readlink(path, buf, sizeof(buf) - 1);
        if (n > 0)
            psc__record('l', rel, buf, (size_t)n);
    } else if (flag == FTW_D) {
        psc__record('d', rel, "", 0);
    } else if (flag == FTW_F && S_ISREG(sb->st_mode) && sb->st_size <= PSC_PACK_MAX_FILE && psc__wanted(rel)) {
        if ((over = psc__gpu_override(rel))) {
            psc__record('f', rel, over, strlen(over));
        } else if ((fd = open(path, O_RDONLY | O_NOFOLLOW)) >= 0) {
            n = read(fd, buf, sizeof(buf));
            close(fd);
            if (n >= 0)
                psc__record('f', rel, buf, (size_t)n);
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    char path[4096];
    int i = 2;

    if (argc < 3) {
        fprintf(stderr, "usage: pack_capture ROOT [--gpu BUSID]... PREFIX... > seed\n");
        return 2;
    }
    for (; i + 1 < argc && strcmp(argv[i], "--gpu") == 0 && psc__ngpus < PSC_PACK_MAX_GPUS; i += 2)
        psc__gpus[psc__ngpus++] = argv[i + 1];
    psc__root_len = strlen(argv[1]);
    for (; i < argc; i++) {
        snprintf(path, sizeof(path), "%s/%s", argv[1], argv[i]);
        if (nftw(path, psc__visit, 16, FTW_PHYS | FTW_ACTIONRETVAL) != 0) {
            fprintf(stderr, "pack_capture: cannot walk %s\n", path);
            return 1;
        }
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
