/*
 * The facts' data itself: a new set with every field "unknown", and the text
 * names of paths and links. Below both the gathering and loading of facts
 * (facts.c) and their JSON form (facts_json.c), which use these.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/facts_model.h"

void psc__gpu_facts_init(psc_gpu_facts_t *g)
{
    memset(g, 0, sizeof(*g));
    g->pcie_gen = g->pcie_gen_max = g->pcie_width = g->pcie_width_max = -1;
    g->numa_node = g->virt_mode = g->mig = g->ecc = g->persistence = -1;
    g->sm_clock_mhz = g->sm_clock_max_mhz = g->temperature_c = -1;
    g->clock_event_reasons = -1;
    g->nvlink_count = -1;
    g->iommu_group = -1;
}

psc_facts_t *psc_facts_new(void)
{
    psc_facts_t *f = calloc(1, sizeof(*f));

    if (!f)
        return NULL;
    f->host.numa_nodes = f->host.hypervisor = f->host.iommu = f->host.iommu_groups = -1;
    f->host.driver_open = f->host.cuda_driver_version = f->host.acs_readable = -1;
    for (int i = 0; i < PSC_MAX_GPUS; i++) {
        psc__gpu_facts_init(&f->gpu[i]);
        for (int j = 0; j < PSC_MAX_GPUS; j++) {
            psc_pair_facts_t *p = &f->pair[i][j];

            p->path = PSC_PATH_UNKNOWN;
            p->nvlinks = 0;
            p->can_access = p->perf_rank = p->native_atomics = p->array_access = p->nvml_p2p_read = -1;
            p->integrity = -1;
        }
    }
    return f;
}

void psc_facts_free(psc_facts_t *f)
{
    if (!f)
        return;
    free(f->hwloc_xml);
    free(f);
}

const char *psc_path_label(psc_path_t path, int nvlinks, char *buf, size_t len)
{
    static const char *const names[] = {"?", "X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS"};

    if (path == PSC_PATH_NVLINK)
        snprintf(buf, len, "NV%d", nvlinks);
    else
        snprintf(buf, len, "%s", (unsigned)path < sizeof(names) / sizeof(names[0]) ? names[path] : "?");
    return buf;
}

const char *psc_pcie_label(int gen, int width, char *buf, size_t len)
{
    char g[16] = "?", w[16] = "?";

    if (gen > 0)
        snprintf(g, sizeof(g), "%d", gen);
    if (width > 0)
        snprintf(w, sizeof(w), "%d", width);
    snprintf(buf, len, "Gen%s x%s", g, w);
    return buf;
}
