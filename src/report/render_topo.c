/*
 * The topology as text (render_topo.h): the nvidia-smi style matrix, P2P access, each GPU's and the host's
 * facts.
 */
#include "render_topo.h"

#include <stdlib.h>
#include <string.h>

#include "lib/p2pscope_private.h"
#include "render.h"
#include "table.h"
#include "text.h"

static const char *psc__yn(int v)
{
    return v < 0 ? "?" : v ? "yes" : "no";
}

static void psc__path_matrix(FILE *out, const psc_facts_t *f)
{
    psc_table_t *t = psc_table_new((unsigned)f->ngpu + 1, (unsigned)f->ngpu + 3);
    char label[16];

    if (!t)
        return;
    psc_report_printf(out, "GPU topology (source: %s)\n", f->source);
    for (int j = 0; j < f->ngpu; j++)
        psc_table_set(t, 0, (unsigned)j + 1, "gpu%d", j);
    psc_table_set(t, 0, (unsigned)f->ngpu + 1, "CPU affinity");
    psc_table_set(t, 0, (unsigned)f->ngpu + 2, "NUMA affinity");
    for (int i = 0; i < f->ngpu; i++) {
        unsigned r = (unsigned)i + 1;

        psc_table_set(t, r, 0, "gpu%d", i);
        for (int j = 0; j < f->ngpu; j++)
            psc_table_set(t, r, (unsigned)j + 1, "%s",
                          psc_path_label(f->pair[i][j].path, f->pair[i][j].nvlinks, label, sizeof(label)));
        psc_table_set(t, r, (unsigned)f->ngpu + 1, "%s", f->gpu[i].cpuset[0] ? f->gpu[i].cpuset : "?");
        psc_table_set(t, r, (unsigned)f->ngpu + 2, f->gpu[i].numa_node >= 0 ? "%d" : "N/A", f->gpu[i].numa_node);
    }
    psc_table_render(t, out);
    psc_table_free(t);
    psc_report_printf(out, "Legend: X = the same GPU; NV# = # NVLinks (direct, or through NVSwitches both reach); PIX = at "
                           "most one PCIe switch;\n  PXB = several PCIe bridges, no host bridge; PHB = a PCIe host bridge; "
                           "NODE = between host bridges of one NUMA node;\n  SYS = across the interconnect between NUMA "
                           "nodes; ? = not established\n");
}

static void psc__p2p_matrix(FILE *out, const psc_facts_t *f)
{
    psc_table_t *t = psc_table_new((unsigned)f->ngpu + 1, (unsigned)f->ngpu + 1);
    char why[256];

    if (!t)
        return;
    if (!f->has_driver) {
        psc_report_printf(out, "\nP2P access: not recorded (a replay without driver facts)\n");
        psc_table_free(t);
        return;
    }
    psc_report_printf(out, "\nP2P access, src(row) -> dst(column): yes/no (cuDeviceCanAccessPeer); "
                           "perf rank / native atomics / CUDA arrays\n");
    psc_table_gpu_labels(t, NULL, NULL, f->ngpu);
    for (int i = 0; i < f->ngpu; i++) {
        for (int j = 0; j < f->ngpu; j++) {
            const psc_pair_facts_t *p = &f->pair[i][j];

            if (i == j)
                psc_table_set(t, (unsigned)i + 1, (unsigned)j + 1, "X");
            else if (p->can_access == 1 && p->perf_rank >= 0)
                psc_table_set(t, (unsigned)i + 1, (unsigned)j + 1, "yes %d/%s/%s", p->perf_rank,
                              psc__yn(p->native_atomics), psc__yn(p->array_access));
            else
                psc_table_set(t, (unsigned)i + 1, (unsigned)j + 1, "%s", psc__yn(p->can_access));
        }
    }
    psc_table_render(t, out);
    psc_table_free(t);
    for (int i = 0; i < f->ngpu; i++)
        for (int j = 0; j < f->ngpu; j++)
            if (i != j && f->pair[i][j].can_access != 1)
                psc_report_printf(out, "  gpu%d -> gpu%d: no P2P: %s\n", i, j, psc_p2p_reason(f, i, j, why, sizeof(why)));
}

static void psc__gpu_table(FILE *out, const psc_facts_t *f)
{
    static const char *const head[] = {"gpu", "name", "pci bus id", "PCIe now/max", "BAR1/memory (GiB)", "virt",
                                       "MIG", "ECC", "persist", "SM clock (MHz)", "temp (C)", "NVLinks up/all"};
    static const char *const virt[] = {"none", "passthrough", "vGPU", "host vGPU", "host vSGA"};
    const unsigned cols = sizeof(head) / sizeof(head[0]);
    psc_table_t *t = psc_table_new((unsigned)f->ngpu + 1, cols);

    if (!t)
        return;
    psc_report_printf(out, "\nGPUs\n");
    psc_table_header(t, head, cols);
    for (int i = 0; i < f->ngpu; i++) {
        const psc_gpu_facts_t *g = &f->gpu[i];
        unsigned r = (unsigned)i + 1;
        char now[32], max[32];
        int up = 0;

        for (int l = 0; l < g->nvlink_count; l++)
            up += g->nvlinks[l].active == 1;
        psc_table_set(t, r, 0, "gpu%d", i);
        psc_table_set(t, r, 1, "%s", g->name);
        psc_table_set(t, r, 2, "%s", g->pci_bus_id);
        if (g->pcie_gen > 0 || g->pcie_gen_max > 0)
            psc_table_set(t, r, 3, "%s / %s", psc_pcie_label(g->pcie_gen, g->pcie_width, now, sizeof(now)),
                          psc_pcie_label(g->pcie_gen_max, g->pcie_width_max, max, sizeof(max)));
        else
            psc_table_set(t, r, 3, "?");
        if (g->bar1_bytes && g->memory_bytes)
            psc_table_set(t, r, 4, "%.1f / %.1f", g->bar1_bytes / 1073741824.0, g->memory_bytes / 1073741824.0);
        else
            psc_table_set(t, r, 4, "?");
        psc_table_set(t, r, 5, "%s", g->virt_mode >= 0 && g->virt_mode <= 4 ? virt[g->virt_mode] : "?");
        psc_table_set(t, r, 6, "%s", psc__yn(g->mig));
        psc_table_set(t, r, 7, "%s", psc__yn(g->ecc));
        psc_table_set(t, r, 8, "%s", psc__yn(g->persistence));
        if (g->sm_clock_mhz >= 0)
            psc_table_set(t, r, 9, "%d/%d", g->sm_clock_mhz, g->sm_clock_max_mhz);
        else
            psc_table_set(t, r, 9, "?");
        psc_table_set(t, r, 10, g->temperature_c >= 0 ? "%d" : "?", g->temperature_c);
        if (g->nvlink_count >= 0)
            psc_table_set(t, r, 11, "%d/%d", up, g->nvlink_count);
        else
            psc_table_set(t, r, 11, "?");
    }
    psc_table_render(t, out);
    psc_table_free(t);
}

/* A line per GPU: which backend maps its memory for the CPU, or none and why in short. */
static void psc__cpu_mappings(FILE *out, const psc_facts_t *f)
{
    psc_report_printf(out, "\nCPU mappings of GPU memory\n");
    for (int i = 0; i < f->ngpu && i < PSC_MAX_GPUS; i++) {
        char label[1400];

        psc_report_printf(out, "  gpu%d: CPU mapping: %s\n", i, psc_gpumap_label(&f->gpumap[i], label, sizeof(label)));
    }
}

static void psc__acs_bits(int ctrl, char *buf, size_t len)
{
    static const char *const names[] = {"SV", "TB", "RR", "CR", "UF", "EC", "DT"};
    size_t pos = 0;

    buf[0] = '\0';
    for (int b = 0; b < 7; b++)
        if (ctrl & (1 << b))
            pos += (size_t)snprintf(buf + pos, len > pos ? len - pos : 0, "%s%s", pos ? " " : "", names[b]);
    if (!pos)
        snprintf(buf, len, "none");
}

static void psc__host(FILE *out, const psc_facts_t *f)
{
    const psc_host_facts_t *h = &f->host;

    psc_report_printf(out, "\nHost\n");
    psc_report_printf(out, "  machine: %s; NUMA nodes: %d; inside a VM: %s\n", h->machine[0] ? h->machine : "?", h->numa_nodes,
                      psc__yn(h->hypervisor));
    psc_report_printf(out, "  driver: %s (%s kernel module)\n", h->driver_release[0] ? h->driver_release : "?",
                      h->driver_open < 0 ? "?" : h->driver_open ? "open" : "proprietary");
    psc_report_printf(out, "  IOMMU: %s", h->iommu < 0 ? "?" : h->iommu ? "on" : "off");
    if (h->iommu_groups >= 0)
        psc_report_printf(out, " (%d groups)", h->iommu_groups);
    psc_report_printf(out, "; kernel command line: %s\n", h->cmdline[0] ? h->cmdline : "?");
    for (int i = 0; i < f->ngpu; i++) {
        const psc_gpu_facts_t *g = &f->gpu[i];

        if (g->iommu_group < 0)
            psc_report_printf(out, "  gpu%d: IOMMU group none; bridges to the root:", i);
        else
            psc_report_printf(out, "  gpu%d: IOMMU group %d%s%s%s; bridges to the root:", i, g->iommu_group,
                              g->iommu_domain[0] ? " (" : "", g->iommu_domain, g->iommu_domain[0] ? ")" : "");
        if (!g->nbridges)
            psc_report_printf(out, " none recorded");
        for (int b = 0; b < g->nbridges; b++) {
            const psc_bridge_facts_t *br = &g->bridges[b];
            char bits[64];

            if (!br->bus_id[0]) {
                psc_report_printf(out, " host bridge");
                continue;
            }
            psc_report_printf(out, " %s", br->bus_id);
            if (br->acs == PSC_ACS_READ) {
                psc__acs_bits(br->acs_ctrl, bits, sizeof(bits));
                psc_report_printf(out, " [ACS %s]", bits);
            } else {
                psc_report_printf(out, " [ACS %s]", br->acs == PSC_ACS_NEEDS_ROOT ? "unknown (needs root)"
                                                    : br->acs == PSC_ACS_ABSENT ? "absent" : "not recorded");
            }
            psc_report_printf(out, b + 1 < g->nbridges ? "," : "");
        }
        psc_report_printf(out, "\n");
    }
}

void psc_render_topo(FILE *out, const psc_facts_t *f)
{
    psc__path_matrix(out, f);
    psc__p2p_matrix(out, f);
    psc__gpu_table(out, f);
    psc__cpu_mappings(out, f);
    psc__host(out, f);
}

void psc_render_topo_saved(FILE *f, const char *path)
{
    fprintf(f, "\nrecorded to %s (replay: p2pscope topo --topology %s)\n", path, path);
}

void psc_render_devices_replayed(FILE *f, const psc_facts_t *facts)
{
    psc_device_info_t *devs = calloc((size_t)facts->ngpu + 1, sizeof(*devs));
    const psc_host_facts_t *h = &facts->host;
    char api[32] = "unknown";

    if (h->cuda_driver_version > 0)
        snprintf(api, sizeof(api), "%d.%d", h->cuda_driver_version / 1000, h->cuda_driver_version % 1000 / 10);
    psc_report_printf(f, "GPUs (source: %s): driver %s, CUDA driver API %s; the recording holds no SM count, "
                         "compute capability, copy engines or nvidia-smi index (?, -)\n",
                      facts->source, h->driver_release[0] ? h->driver_release : "(version unknown)", api);
    if (!devs)
        return;
    for (int i = 0; i < facts->ngpu; i++) {
        const psc_gpu_facts_t *g = &facts->gpu[i];
        psc_device_info_t *d = &devs[i];

        d->index = i;
        d->nvml_index = -1;
        snprintf(d->name, sizeof(d->name), "%s", g->name);
        snprintf(d->pci_bus_id, sizeof(d->pci_bus_id), "%s", g->pci_bus_id);
        d->memory_bytes = g->memory_bytes;
        d->async_engines = -1;
        d->numa_node = g->numa_node;
        d->sm_clock_mhz = g->sm_clock_mhz;
        d->sm_clock_max_mhz = g->sm_clock_max_mhz;
        d->temperature_c = g->temperature_c;
    }
    psc_render_devices_table(f, devs, facts->ngpu);
    free(devs);
}
