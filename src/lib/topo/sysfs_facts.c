/*
 * Host and GPU facts from /sys and /proc under a root (sysfs_facts.h): IOMMU, kernel command line,
 * hypervisor, driver flavour, the driver's GPU list, PCIe links and the bridges' ACS.
 */
#define _GNU_SOURCE
#include "topo/sysfs_facts.h"
#include "topo/cmdline.h"
#include "util/safe_read.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PSC_EXT_CAP_ACS 0x000d
#define PSC__CMDLINE_MAX 65536 /* the kernel's COMMAND_LINE_SIZE is 2048 to 4096 where we know it: room to spare */

/* Copy with truncation, which is what a fixed-size fact field wants. */
static void psc__set(char *dst, size_t len, const char *src)
{
    size_t n = strlen(src);

    if (n >= len)
        n = len - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/*
 * A text file under root, cut to len - 1 bytes. Regular files only, read
 * without waiting (a FIFO in a capture would hang us), and in a capture only
 * what lies inside it (proc/cmdline -> /etc/shadow is not read).
 */
static int psc__read_text(const char *root, const char *path, char *buf, size_t len)
{
    char err[8];
    psc_status_t st;
    ssize_t n;
    int fd = psc__safe_open(root, path, &st, err, sizeof(err));

    if (fd < 0)
        return -1;
    n = psc__read_up_to(fd, buf, len - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    return 0;
}

/* Entries in a directory, -1 when it does not exist. */
static int psc__count_entries(const char *root, const char *path)
{
    char full[PATH_MAX];
    struct dirent *e;
    DIR *d;
    int n = 0;

    snprintf(full, sizeof(full), "%s%s", root, path);
    d = opendir(full);
    if (!d)
        return -1;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

int psc__sysfs_driver_gpus(const char *root, char (*ids)[PSC_BUSID_LEN], int max)
{
    char full[PATH_MAX];
    struct dirent *e;
    int n = 0;
    DIR *d;

    snprintf(full, sizeof(full), "%s/proc/driver/nvidia/gpus", root);
    if (!(d = opendir(full)))
        return 0;
    while ((e = readdir(d)) && n < max) {
        unsigned dom, bus, dev, fn;
        char end;

        /* a PCI bus id, domain:bus:device.function, and nothing else */
        if (sscanf(e->d_name, "%4x:%2x:%2x.%1x%c", &dom, &bus, &dev, &fn, &end) != 4 || strlen(e->d_name) != 12)
            continue;
        snprintf(ids[n++], PSC_BUSID_LEN, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
    }
    closedir(d);
    return n;
}

void psc__sysfs_host(const char *root, psc_host_facts_t *h)
{
    char buf[4096], *line = malloc(PSC__CMDLINE_MAX);
    int groups = psc__count_entries(root, "/sys/kernel/iommu_groups");
    int units = psc__count_entries(root, "/sys/class/iommu");

    h->iommu_groups = groups;
    if (units > 0 || groups > 0)
        h->iommu = 1;
    else if (units == 0 || groups == 0)
        h->iommu = 0;
    /* the whole line (long server lines end with what matters), then only its P2P parameters */
    if (line && psc__read_text(root, "/proc/cmdline", line, PSC__CMDLINE_MAX) == 0)
        psc__cmdline_p2p(line, h->cmdline, sizeof(h->cmdline));
    free(line);
    if (psc__read_text(root, "/proc/cpuinfo", buf, sizeof(buf)) == 0)
        h->hypervisor = strstr(buf, " hypervisor") != NULL;
    if (psc__read_text(root, "/proc/driver/nvidia/version", buf, sizeof(buf)) == 0)
        h->driver_open = strstr(buf, "Open Kernel Module") != NULL;
    if (!h->machine[0] && psc__read_text(root, "/sys/class/dmi/id/product_name", buf, sizeof(buf)) == 0)
        psc__set(h->machine, sizeof(h->machine), buf);
}

int psc__pcie_gen_of_speed(const char *text)
{
    static const struct { double gts; int gen; } map[] = {
        {2.5, 1}, {5.0, 2}, {8.0, 3}, {16.0, 4}, {32.0, 5}, {64.0, 6}, {128.0, 7}};
    double v;

    if (!text || sscanf(text, "%lf", &v) != 1)
        return -1;
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (v > map[i].gts - 0.01 && v < map[i].gts + 0.01)
            return map[i].gen;
    return -1;
}

psc_acs_state_t psc__acs_parse(const unsigned char *cfg, size_t len, int privileged, int *ctrl)
{
    unsigned off = 0x100;

    /* Without root the kernel shows only the first 64 bytes of config space. */
    if (len <= 0x100)
        return privileged && len == 0x100 ? PSC_ACS_ABSENT : PSC_ACS_NEEDS_ROOT;
    for (int hops = 0; off >= 0x100 && off + 8 <= len && hops < 64; hops++) {
        uint32_t hdr = (uint32_t)cfg[off] | (uint32_t)cfg[off + 1] << 8 | (uint32_t)cfg[off + 2] << 16 |
                       (uint32_t)cfg[off + 3] << 24;

        if (hdr == 0 || hdr == 0xffffffffu)
            break;
        if ((hdr & 0xffff) == PSC_EXT_CAP_ACS) {
            *ctrl = cfg[off + 6] | cfg[off + 7] << 8;
            return PSC_ACS_READ;
        }
        off = hdr >> 20;
    }
    return PSC_ACS_ABSENT;
}

static void psc__bridge_acs(const char *root, psc_bridge_facts_t *b)
{
    char path[PATH_MAX], err[8];
    unsigned char cfg[4096];
    psc_status_t st;
    ssize_t n;
    int fd;

    if (!b->bus_id[0])
        return;
    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", b->bus_id);
    fd = psc__safe_open(root, path, &st, err, sizeof(err));
    if (fd < 0)
        return;
    n = psc__read_up_to(fd, (char *)cfg, sizeof(cfg));
    close(fd);
    if (n < 0)
        return;
    /* A captured tree was recorded by someone else: its size says what they could read. */
    b->acs = psc__acs_parse(cfg, (size_t)n, root[0] ? 0 : geteuid() == 0, &b->acs_ctrl);
}

void psc__sysfs_gpu(const char *root, psc_gpu_facts_t *g)
{
    char path[PATH_MAX], buf[PATH_MAX];
    ssize_t n;

    snprintf(path, sizeof(path), "%s/sys/bus/pci/devices/%s/iommu_group", root, g->pci_bus_id);
    n = readlink(path, buf, sizeof(buf) - 1);
    if (n > 0) {
        buf[n] = '\0';
        g->iommu_group = atoi(strrchr(buf, '/') ? strrchr(buf, '/') + 1 : buf);
        snprintf(path, sizeof(path), "/sys/kernel/iommu_groups/%d/type", g->iommu_group);
        if (psc__read_text(root, path, buf, sizeof(buf)) == 0)
            psc__set(g->iommu_domain, sizeof(g->iommu_domain), buf);
    }
    if (g->pcie_gen < 0) {
        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/current_link_speed", g->pci_bus_id);
        if (psc__read_text(root, path, buf, sizeof(buf)) == 0)
            g->pcie_gen = psc__pcie_gen_of_speed(buf);
        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/max_link_speed", g->pci_bus_id);
        if (psc__read_text(root, path, buf, sizeof(buf)) == 0)
            g->pcie_gen_max = psc__pcie_gen_of_speed(buf);
        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/current_link_width", g->pci_bus_id);
        if (psc__read_text(root, path, buf, sizeof(buf)) == 0)
            g->pcie_width = atoi(buf);
        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/max_link_width", g->pci_bus_id);
        if (psc__read_text(root, path, buf, sizeof(buf)) == 0)
            g->pcie_width_max = atoi(buf);
    }
    for (int b = 0; b < g->nbridges; b++)
        psc__bridge_acs(root, &g->bridges[b]);
}
