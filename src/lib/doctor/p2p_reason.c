/* The reason peer-to-peer between two GPUs is off, from the facts alone. */
#include <stdio.h>

#include "p2pscope.h"

/* nvmlGpuP2PStatus_t, as the driver states its reason. */
static const char *psc__nvml_p2p_status(int s)
{
    switch (s) {
    case 1: return "the chipset does not support P2P between these GPUs (NVML: chipset not supported)";
    case 2: return "this driver does not allow P2P on this GPU model (NVML: GPU not supported)";
    case 3: return "the GPUs hang off PCIe roots the driver cannot join (NVML: IOH topology not supported)";
    case 4: return "P2P is disabled by a driver registry key (NVML: disabled by regkey)";
    case 5: return "the driver reports P2P not supported between these GPUs";
    default: return NULL;
    }
}

const char *psc_p2p_reason(const psc_facts_t *f, int i, int j, char *buf, size_t len)
{
    const psc_pair_facts_t *p;
    const char *why;

    if (!f || !buf || i < 0 || j < 0 || i >= f->ngpu || j >= f->ngpu) {
        if (buf && len)
            buf[0] = '\0';
        return buf;
    }
    p = &f->pair[i][j];
    if (i == j || p->can_access == 1) {
        snprintf(buf, len, "%s", "");
        return buf;
    }
    if (f->gpu[i].mig == 1 || f->gpu[j].mig == 1)
        snprintf(buf, len, "MIG is on for GPU %d: MIG instances have no peer access", f->gpu[i].mig == 1 ? i : j);
    else if ((why = psc__nvml_p2p_status(p->nvml_p2p_read)))
        snprintf(buf, len, "%s", why);
    else if (f->host.hypervisor == 1 && p->path != PSC_PATH_NVLINK)
        snprintf(buf, len, "inside a VM: the hypervisor must place both GPUs in one P2P clique (or pass through "
                           "their PCIe switch)");
    else if (p->path == PSC_PATH_SYS)
        snprintf(buf, len, "the GPUs sit under different CPU sockets (SYS): P2P across the socket interconnect is "
                           "usually not supported");
    else if (p->can_access == 0)
        snprintf(buf, len, "unknown: the driver says no and gives no reason");
    else
        snprintf(buf, len, "unknown: not measured (no driver)");
    return buf;
}
