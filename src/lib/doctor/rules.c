/*
 * The doctor's rules: pure functions from facts to findings. Each rule says
 * what is wrong, the facts it used, and the fix; where the facts needed are
 * missing, it says what it could not check.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p2pscope.h"
#include "doctor/rules.h"

/* NVML clocks event reasons that mean the GPU is held back (not idle, not app clocks). */
#define PSC_CLOCKS_IDLE 0x1ll
#define PSC_CLOCKS_SLOWDOWN (0x4ll | 0x8ll | 0x20ll | 0x40ll | 0x80ll)

static int psc__pcie_path(psc_path_t p)
{
    return p == PSC_PATH_PIX || p == PSC_PATH_PXB || p == PSC_PATH_PHB || p == PSC_PATH_NODE || p == PSC_PATH_SYS;
}

/* GPU i has a peer it would reach over PCIe rather than NVLink. */
static int psc__has_pcie_peer(const psc_facts_t *f, int i)
{
    for (int j = 0; j < f->ngpu; j++)
        if (j != i && psc__pcie_path(f->pair[i][j].path))
            return 1;
    return 0;
}

static void rule_bar1(const psc_facts_t *f, psc__findings_t *fs)
{
    for (int i = 0; i < f->ngpu; i++) {
        const psc_gpu_facts_t *g = &f->gpu[i];
        char ev[512];

        if (!g->bar1_bytes || !g->memory_bytes || g->bar1_bytes >= g->memory_bytes)
            continue;
        snprintf(ev, sizeof(ev), "gpu%d (%s): BAR1 %.0f MiB, memory %.1f GiB%s", i, g->name,
                 g->bar1_bytes / 1048576.0, g->memory_bytes / 1073741824.0,
                 psc__has_pcie_peer(f, i) ? "; it reaches peers over PCIe" : "");
        psc__add(fs, psc__has_pcie_peer(f, i) ? PSC_SEV_ERROR : PSC_SEV_WARNING, "bar1_small",
                 "enable Resizable BAR (\"Above 4G decoding\" and \"Re-Size BAR support\") in the firmware setup, "
                 "so BAR1 covers the GPU's memory",
                 ev, "gpu%d's BAR1 (%.0f MiB) is smaller than its memory: peers and the CPU cannot map all of it",
                 i, g->bar1_bytes / 1048576.0);
    }
}

static int psc__any_pcie_pair(const psc_facts_t *f)
{
    for (int i = 0; i < f->ngpu; i++)
        if (psc__has_pcie_peer(f, i))
            return 1;
    return 0;
}

static void rule_iommu(const psc_facts_t *f, psc__findings_t *fs)
{
    const psc_host_facts_t *h = &f->host;
    int translated = 0, identity = 0;
    char ev[512];

    if (h->iommu != 1)
        return;
    for (int i = 0; i < f->ngpu; i++) {
        translated += strncmp(f->gpu[i].iommu_domain, "DMA", 3) == 0;
        identity += strcmp(f->gpu[i].iommu_domain, "identity") == 0;
    }
    if (!translated && (identity || strstr(h->cmdline, "iommu=pt")))
        return;
    snprintf(ev, sizeof(ev), "IOMMU on (%d groups); GPU DMA domains translated: %d of %d; kernel command line: %.380s",
             h->iommu_groups, translated, f->ngpu, h->cmdline[0] ? h->cmdline : "?");
    psc__add(fs, psc__any_pcie_pair(f) ? PSC_SEV_ERROR : PSC_SEV_WARNING, "iommu_on",
             "add iommu=pt to the kernel command line (or intel_iommu=off / amd_iommu=off), then reboot", ev,
             "the IOMMU translates GPU DMA: peer-to-peer over PCIe fails or is slow");
}

/* Bridges between GPU i and GPU j: those in each chain below the first one they share. */
static void rule_acs(const psc_facts_t *f, psc__findings_t *fs)
{
    int reported[PSC_MAX_GPUS][PSC_MAX_BRIDGES] = {{0}};

    for (int i = 0; i < f->ngpu; i++) {
        for (int j = 0; j < f->ngpu; j++) {
            const psc_gpu_facts_t *a = &f->gpu[i], *b = &f->gpu[j];

            if (i == j || !psc__pcie_path(f->pair[i][j].path))
                continue;
            for (int x = 0; x < a->nbridges; x++) {
                const psc_bridge_facts_t *br = &a->bridges[x];
                int shared = 0;
                char ev[512];

                for (int y = 0; y < b->nbridges && !shared; y++)
                    shared = br->bus_id[0] && strcmp(br->bus_id, b->bridges[y].bus_id) == 0;
                if (shared)
                    break; /* above here the traffic has already turned toward the peer */
                if (br->acs != PSC_ACS_READ || !(br->acs_ctrl & (PSC_ACS_RR | PSC_ACS_CR)) || reported[i][x])
                    continue;
                reported[i][x] = 1;
                snprintf(ev, sizeof(ev), "bridge %s [%s] above gpu%d: ACS control 0x%02x (RR=%d CR=%d); peer gpu%d",
                         br->bus_id, br->ids, i, br->acs_ctrl, !!(br->acs_ctrl & PSC_ACS_RR),
                         !!(br->acs_ctrl & PSC_ACS_CR), j);
                psc__add(fs, PSC_SEV_ERROR, "acs_redirect",
                         "turn off ACS P2P Request/Completion Redirect on that bridge (firmware setting, or "
                         "setpci -s <bridge> ECAP_ACS+6.w=0 after each boot), unless the IOMMU isolation is needed",
                         ev, "ACS on bridge %s redirects peer traffic of gpu%d up to the root complex", br->bus_id, i);
            }
        }
    }
}

static void rule_pcie_link(const psc_facts_t *f, psc__findings_t *fs)
{
    for (int i = 0; i < f->ngpu; i++) {
        const psc_gpu_facts_t *g = &f->gpu[i];
        char ev[512], now[32], max[32];

        if (g->pcie_gen < 0 || g->pcie_width < 0)
            continue;
        snprintf(ev, sizeof(ev), "gpu%d %s: PCIe %s now, %s at most; clocks event reasons 0x%llx", i, g->pci_bus_id,
                 psc_pcie_label(g->pcie_gen, g->pcie_width, now, sizeof(now)),
                 psc_pcie_label(g->pcie_gen_max, g->pcie_width_max, max, sizeof(max)),
                 (unsigned long long)(g->clock_event_reasons < 0 ? 0 : g->clock_event_reasons));
        if (g->pcie_width_max > 0 && g->pcie_width < g->pcie_width_max)
            psc__add(fs, PSC_SEV_WARNING, "pcie_width",
                     "reseat the GPU or riser, check the slot's wiring (x16 electrically?) and the BIOS lane split",
                     ev, "gpu%d's PCIe link runs x%d of x%d lanes", i, g->pcie_width, g->pcie_width_max);
        if (g->pcie_gen_max > 0 && g->pcie_gen < g->pcie_gen_max) {
            int idle = g->clock_event_reasons >= 0 && (g->clock_event_reasons & PSC_CLOCKS_IDLE);

            psc__add(fs, idle ? PSC_SEV_INFO : PSC_SEV_WARNING, "pcie_gen",
                     idle ? "an idle GPU lowers its link speed to save power: check again under load "
                            "(p2pscope bw -t host_to_gpu_ce)"
                          : "check the slot, riser and the BIOS PCIe speed setting; a retimer or riser may force a lower generation",
                     ev, "gpu%d's PCIe link runs at Gen%d of Gen%d%s", i, g->pcie_gen, g->pcie_gen_max,
                     idle ? " (the GPU is idle)" : "");
        }
    }
}

static void rule_p2p(const psc_facts_t *f, psc__findings_t *fs)
{
    int any_on = 0;

    if (!f->has_driver)
        return;
    for (int i = 0; i < f->ngpu; i++)
        for (int j = 0; j < f->ngpu; j++)
            any_on |= i != j && f->pair[i][j].can_access == 1;
    for (int i = 0; i < f->ngpu; i++) {
        for (int j = 0; j < f->ngpu; j++) {
            const psc_pair_facts_t *p = &f->pair[i][j];
            char why[256], ev[512], label[16];

            if (i == j || p->can_access != 0)
                continue;
            psc_p2p_reason(f, i, j, why, sizeof(why));
            snprintf(ev, sizeof(ev), "cuDeviceCanAccessPeer(gpu%d, gpu%d) = 0; path %s; NVML P2P read status %d; "
                     "%s and %s", i, j, psc_path_label(p->path, p->nvlinks, label, sizeof(label)), p->nvml_p2p_read,
                     f->gpu[i].name, f->gpu[j].name);
            psc__add(fs, any_on ? PSC_SEV_ERROR : PSC_SEV_WARNING, "p2p_unavailable", why, ev,
                     "no peer-to-peer from gpu%d to gpu%d%s: copies between them go through host memory", i, j,
                     any_on ? " although other GPUs here have it" : "");
        }
    }
}

/* NVLinks a GPU model has, by name; 0 unknown. */
static int psc__model_nvlinks(const char *name)
{
    static const struct { const char *needle; int links; } models[] = {
        {"H100 80GB HBM3", 18}, {"H100 SXM", 18}, {"H200", 18}, {"B200", 18}, {"A100-SXM", 12},
        {"A100 SXM", 12}, {"V100-SXM", 6}, {"P100-SXM", 4},
    };

    if (strstr(name, "NVL") || strstr(name, "PCIe"))
        return 0; /* bridge or PCIe variants: the count depends on the bridges fitted */
    for (size_t k = 0; k < sizeof(models) / sizeof(models[0]); k++)
        if (strstr(name, models[k].needle))
            return models[k].links;
    return 0;
}

static void rule_nvlink(const psc_facts_t *f, psc__findings_t *fs)
{
    for (int i = 0; i < f->ngpu; i++) {
        const psc_gpu_facts_t *g = &f->gpu[i];
        int up = 0, want = psc__model_nvlinks(g->name);
        char ev[512];

        if (g->nvlink_count < 0)
            continue;
        for (int l = 0; l < g->nvlink_count; l++)
            up += g->nvlinks[l].active == 1;
        snprintf(ev, sizeof(ev), "gpu%d (%s): %d NVLinks present, %d active; the model has %d", i, g->name,
                 g->nvlink_count, up, want);
        if (up < g->nvlink_count && up > 0)
            psc__add(fs, PSC_SEV_ERROR, "nvlink_down",
                     "check nvidia-smi nvlink --status and the fabric manager; a link that stays down needs the "
                     "board or baseboard looked at",
                     ev, "gpu%d: %d of %d NVLinks are down", i, g->nvlink_count - up, g->nvlink_count);
        else if (want && up < want && f->ngpu < 2)
            /* The only GPU here (a one-GPU slice of a baseboard, a VM): its links lead to GPUs not in view. */
            psc__add(fs, PSC_SEV_INFO, "nvlink_missing",
                     "nothing to do for this GPU alone; if it should reach others over NVLink, check the fabric "
                     "manager and what the VM or partition was given",
                     ev, "gpu%d has %d active NVLinks; a %s has %d, to GPUs not visible here", i, up, g->name,
                     want);
        else if (want && up < want)
            psc__add(fs, PSC_SEV_ERROR, "nvlink_missing",
                     "on NVSwitch systems start nvidia-fabricmanager; otherwise check the NVLink bridges or "
                     "baseboard",
                     ev, "gpu%d has %d active NVLinks; a %s has %d", i, up, g->name, want);
    }
}

static void rule_integrity(const psc_facts_t *f, psc__findings_t *fs)
{
    for (int i = 0; i < f->ngpu; i++)
        for (int j = 0; j < f->ngpu; j++) {
            char ev[256];

            if (i == j || f->pair[i][j].integrity != 0)
                continue;
            snprintf(ev, sizeof(ev), "a verified copy gpu%d -> gpu%d with peer access on delivered wrong bytes", i, j);
            psc__add(fs, PSC_SEV_ERROR, "p2p_corrupts",
                     "do not use P2P between these GPUs: disable it (NCCL_P2P_DISABLE=1) and report the machine; "
                     "check IOMMU and ACS findings first",
                     ev, "peer-to-peer from gpu%d to gpu%d is reported available but moves the wrong data", i, j);
        }
}

static void rule_numa(const psc_facts_t *f, psc__findings_t *fs)
{
    for (int i = 0; i < f->ngpu; i++) {
        char ev[256];

        if (f->gpu[i].numa_node >= 0 || f->host.numa_nodes == 1)
            continue;
        snprintf(ev, sizeof(ev), "gpu%d %s: no single NUMA node in the PCI locality; host has %d NUMA nodes", i,
                 f->gpu[i].pci_bus_id, f->host.numa_nodes);
        psc__add(fs, f->host.numa_nodes > 1 ? PSC_SEV_WARNING : PSC_SEV_INFO, "numa_unknown",
                 "on bare metal check the firmware's NUMA/SRAT setting; in a VM give the guest a NUMA topology "
                 "that matches the host's",
                 ev, "gpu%d's NUMA affinity is unknown: host buffers cannot be placed near it", i);
    }
}

static void rule_clocks(const psc_facts_t *f, psc__findings_t *fs)
{
    for (int i = 0; i < f->ngpu; i++) {
        const psc_gpu_facts_t *g = &f->gpu[i];
        char ev[256];

        if (g->clock_event_reasons < 0 || !(g->clock_event_reasons & PSC_CLOCKS_SLOWDOWN))
            continue;
        snprintf(ev, sizeof(ev), "gpu%d: clocks event reasons 0x%llx; SM %d of %d MHz; %d C", i,
                 (unsigned long long)g->clock_event_reasons, g->sm_clock_mhz, g->sm_clock_max_mhz, g->temperature_c);
        psc__add(fs, PSC_SEV_WARNING, "clocks_throttled",
                 "check cooling and power delivery (nvidia-smi -q -d PERFORMANCE names the reason)", ev,
                 "gpu%d's clocks are held back by a power or thermal limit", i);
    }
}

/* What the facts could not tell, so a clean report is not mistaken for a full one. */
static void rule_not_checked(const psc_facts_t *f, psc__findings_t *fs)
{
    int acs_unknown = 0, bridges = 0;

    if (!f->has_driver)
        psc__add(fs, PSC_SEV_INFO, "not_checked_driver", "run p2pscope doctor on the machine itself",
                 f->source, "not checked: P2P access, BAR1, PCIe link, clocks (a recording without driver facts)");
    for (int i = 0; i < f->ngpu; i++)
        for (int b = 0; b < f->gpu[i].nbridges; b++) {
            bridges += f->gpu[i].bridges[b].bus_id[0] != 0;
            acs_unknown += f->gpu[i].bridges[b].acs == PSC_ACS_NEEDS_ROOT;
        }
    if (acs_unknown && psc__any_pcie_pair(f))
        psc__add(fs, PSC_SEV_INFO, "not_checked_acs", "run p2pscope doctor as root to read the bridges' ACS bits",
                 "extended PCI config space unreadable", "not checked: ACS on %d bridges (needs root)", acs_unknown);
    if (f->host.hypervisor == 1)
        psc__add(fs, PSC_SEV_INFO, "not_checked_vm",
                 "ask the provider, or run p2pscope on the host, for IOMMU, ACS and PCIe switch facts",
                 "/proc/cpuinfo has the hypervisor flag",
                 "inside a VM: the physical host's IOMMU, ACS and PCIe switches are not visible here%s",
                 bridges ? "" : " (no PCI bridges above the GPUs)");
    if (f->host.iommu < 0)
        psc__add(fs, PSC_SEV_INFO, "not_checked_iommu", "record the machine with p2pscope topo --save on the host",
                 f->source, "not checked: IOMMU (not in the facts)");
}

/* Most severe first, rule order kept within a severity: one pass of every rule per severity. */
size_t psc_doctor(const psc_facts_t *f, psc_finding_t *out, size_t cap)
{
    static const psc_severity_t passes[] = {PSC_SEV_ERROR, PSC_SEV_WARNING, PSC_SEV_INFO};
    psc__findings_t fs = {out, out ? cap : 0, 0, PSC_SEV_ERROR};

    if (!f)
        return 0;
    for (size_t p = 0; p < sizeof(passes) / sizeof(passes[0]); p++) {
        fs.pass = passes[p];
        rule_nvlink(f, &fs);
        rule_p2p(f, &fs);
        rule_integrity(f, &fs);
        rule_bar1(f, &fs);
        rule_iommu(f, &fs);
        rule_acs(f, &fs);
        rule_pcie_link(f, &fs);
        rule_clocks(f, &fs);
        rule_numa(f, &fs);
        rule_not_checked(f, &fs);
        psc__rules_nccl(f, &fs);
        psc__rules_gpumap(f, &fs);
    }
    return fs.n;
}

const char *psc_severity_string(psc_severity_t s)
{
    return s == PSC_SEV_ERROR ? "error" : s == PSC_SEV_WARNING ? "warning" : "info";
}
