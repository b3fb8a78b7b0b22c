/*
 * What hwloc's PCI tree says about the GPUs (pci_tree.h): where each sits, its NUMA node and bridges, the
 * nvidia-smi path between two, the NVLinks a recording's distances give.
 */
#define _GNU_SOURCE
#include "topo/pci_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PSC_VENDOR_NVIDIA 0x10de

static void psc__busid(hwloc_obj_t o, char *buf, size_t len)
{
    snprintf(buf, len, "%04x:%02x:%02x.%01x", o->attr->pcidev.domain, o->attr->pcidev.bus, o->attr->pcidev.dev,
             o->attr->pcidev.func);
}

hwloc_obj_t psc__pci_find(hwloc_topology_t t, const char *bus_id)
{
    return t && bus_id && *bus_id ? hwloc_get_pcidev_by_busidstring(t, bus_id) : NULL;
}

static int psc__is_gpu(hwloc_obj_t o)
{
    unsigned cls = o->attr->pcidev.class_id;

    return o->attr->pcidev.vendor_id == PSC_VENDOR_NVIDIA && (cls == 0x0300 || cls == 0x0302);
}

/* hwloc names NVSwitches in subtype; a recording may lack their PCI ids. */
static int psc__is_nvswitch(hwloc_obj_t o)
{
    if (o->type != HWLOC_OBJ_PCI_DEVICE)
        return 0;
    if (o->subtype && strcmp(o->subtype, "NVSwitch") == 0)
        return 1;
    return o->attr->pcidev.vendor_id == PSC_VENDOR_NVIDIA && o->attr->pcidev.class_id == 0x0680;
}

/* The single NUMA node of an object's locality, -1 when several or none. */
static int psc__numa_of(hwloc_topology_t t, hwloc_obj_t o)
{
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, o);

    if (!anc || !anc->nodeset || hwloc_bitmap_weight(anc->nodeset) != 1)
        return -1;
    return hwloc_bitmap_first(anc->nodeset);
}

void psc__pci_gpu_locality(hwloc_topology_t t, psc_gpu_facts_t *g)
{
    hwloc_obj_t o = psc__pci_find(t, g->pci_bus_id), anc;
    char *list = NULL;

    if (!o)
        return;
    g->numa_node = psc__numa_of(t, o);
    anc = hwloc_get_non_io_ancestor_obj(t, o);
    if (anc && anc->cpuset && hwloc_bitmap_list_asprintf(&list, anc->cpuset) >= 0) {
        snprintf(g->cpuset, sizeof(g->cpuset), "%s", list);
        free(list);
    }
    g->nbridges = 0;
    for (hwloc_obj_t p = o->parent; p && p->type == HWLOC_OBJ_BRIDGE && g->nbridges < PSC_MAX_BRIDGES; p = p->parent) {
        psc_bridge_facts_t *b = &g->bridges[g->nbridges++];

        memset(b, 0, sizeof(*b));
        b->acs = PSC_ACS_NOT_RECORDED;
        b->acs_ctrl = -1;
        if (p->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) {
            psc__busid(p, b->bus_id, sizeof(b->bus_id));
            snprintf(b->ids, sizeof(b->ids), "%04x:%04x", p->attr->pcidev.vendor_id, p->attr->pcidev.device_id);
        }
    }
}

/* Bridges between an object and its ancestor anc, anc excluded. */
static int psc__bridges_below(hwloc_obj_t o, hwloc_obj_t anc)
{
    int n = 0;

    for (hwloc_obj_t p = o->parent; p && p != anc; p = p->parent)
        n += p->type == HWLOC_OBJ_BRIDGE;
    return n;
}

/*
 * The nearest object above both a and b, NULL when none. hwloc's
 * hwloc_get_common_ancestor_obj compares depths, and I/O objects have
 * negative special depths, so with bridge chains of different lengths it
 * walks past the root; the parent chains are walked here instead.
 */
static hwloc_obj_t psc__common_ancestor(hwloc_obj_t a, hwloc_obj_t b)
{
    for (hwloc_obj_t pb = b->parent; pb; pb = pb->parent)
        for (hwloc_obj_t pa = a->parent; pa; pa = pa->parent)
            if (pa == pb)
                return pa;
    return NULL;
}

/*
 * nvidia-smi topo -m's legend, from where the two paths up the tree meet:
 * - at a PCIe switch port (a bridge below the host bridge): PIX when each
 *   side crosses at most one bridge below it (its downstream port of one
 *   switch), PXB when either crosses more (nested switches);
 * - at a host bridge: PHB (different root ports, or switch vs root port);
 * - above the host bridges (a CPU-side object): NODE when both host bridges
 *   are local to the same NUMA node, SYS when they belong to different ones;
 *   when that is not recorded, NODE on a single-node machine, else SYS.
 */
psc_path_t psc__pci_path(hwloc_topology_t t, const char *bus_a, const char *bus_b)
{
    hwloc_obj_t a = psc__pci_find(t, bus_a), b = psc__pci_find(t, bus_b), anc;
    int na, nb;

    if (!a || !b)
        return PSC_PATH_UNKNOWN;
    if (a == b)
        return PSC_PATH_SELF;
    anc = psc__common_ancestor(a, b);
    if (anc && anc->type == HWLOC_OBJ_BRIDGE) {
        if (anc->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST)
            return PSC_PATH_PHB;
        if (psc__bridges_below(a, anc) <= 1 && psc__bridges_below(b, anc) <= 1)
            return PSC_PATH_PIX;
        return PSC_PATH_PXB;
    }
    if (anc && anc->nodeset && hwloc_bitmap_weight(anc->nodeset) == 1)
        return PSC_PATH_NODE;
    na = psc__numa_of(t, a);
    nb = psc__numa_of(t, b);
    if (na >= 0 && nb >= 0)
        return na == nb ? PSC_PATH_NODE : PSC_PATH_SYS;
    if (hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE) <= 1)
        return PSC_PATH_NODE;
    return PSC_PATH_SYS;
}

static int psc__cmp_busid(const void *x, const void *y)
{
    const psc_gpu_facts_t *a = x, *b = y;

    return strcmp(a->pci_bus_id, b->pci_bus_id);
}

/* The name hwloc recorded for a GPU (from its NVML/CUDA OS device), if any. */
static void psc__gpu_name(hwloc_obj_t o, psc_gpu_facts_t *g)
{
    for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) {
        const char *model = hwloc_obj_get_info_by_name(c, "GPUModel");
        const char *uuid = hwloc_obj_get_info_by_name(c, "NVIDIAUUID");

        if (model && !g->name[0])
            snprintf(g->name, sizeof(g->name), "%s", model);
        if (uuid && !g->uuid[0])
            snprintf(g->uuid, sizeof(g->uuid), "%s", uuid);
    }
    if (!g->name[0])
        snprintf(g->name, sizeof(g->name), "NVIDIA [10de:%04x]", o->attr->pcidev.device_id);
}

void psc__pci_list_gpus(hwloc_topology_t t, psc_facts_t *f, const char (*listed)[PSC_BUSID_LEN], int nlisted)
{
    f->ngpu = 0;
    for (hwloc_obj_t o = hwloc_get_next_pcidev(t, NULL); o; o = hwloc_get_next_pcidev(t, o)) {
        psc_gpu_facts_t *g;

        if (!psc__is_gpu(o) || f->ngpu >= PSC_MAX_GPUS)
            continue;
        g = &f->gpu[f->ngpu++];
        psc__busid(o, g->pci_bus_id, sizeof(g->pci_bus_id));
        psc__gpu_name(o, g);
    }
    for (int k = 0; k < nlisted && f->ngpu < PSC_MAX_GPUS; k++) {
        psc_gpu_facts_t *g;

        if (psc__gpu_index(f, listed[k]) >= 0)
            continue;
        g = &f->gpu[f->ngpu++];
        snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "%s", listed[k]);
        snprintf(g->name, sizeof(g->name), "NVIDIA GPU (listed by the driver)");
    }
    qsort(f->gpu, (size_t)f->ngpu, sizeof(f->gpu[0]), psc__cmp_busid);
    for (int i = 0; i < f->ngpu; i++)
        psc__pci_gpu_locality(t, &f->gpu[i]);
}

int psc__gpu_index(const psc_facts_t *f, const char *bus_id)
{
    for (int i = 0; i < f->ngpu; i++)
        if (strcasecmp(f->gpu[i].pci_bus_id, bus_id) == 0)
            return i;
    return -1;
}

/* A distances object: the GPU's PCI device for its OS devices; a PCI device or CPU package itself. */
static hwloc_obj_t psc__as_pcidev(hwloc_obj_t o)
{
    while (o && o->type == HWLOC_OBJ_OS_DEVICE)
        o = o->parent;
    return o && (o->type == HWLOC_OBJ_PCI_DEVICE || o->type == HWLOC_OBJ_PACKAGE) ? o : NULL;
}

/*
 * hwloc records links x per-link bandwidth in MB/s. The per-link rate is the
 * known one (NVLink 2-4: 25000, NVLink 1: 20000) that divides every value;
 * failing that, the smallest value counts as one link.
 */
static hwloc_uint64_t psc__nvlink_unit(const struct hwloc_distances_s *d)
{
    static const hwloc_uint64_t rates[] = {25000, 20000};
    hwloc_uint64_t min = 0;

    for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
        int all = 1, any = 0;

        for (unsigned i = 0; i < d->nbobjs; i++)
            for (unsigned j = 0; j < d->nbobjs; j++) {
                hwloc_uint64_t v = d->values[i * d->nbobjs + j];

                if (i == j || !v)
                    continue;
                any = 1;
                all &= v % rates[r] == 0;
                if (!min || v < min)
                    min = v;
            }
        if (any && all)
            return rates[r];
    }
    return min;
}

void psc__pci_nvlinks_from_distances(hwloc_topology_t t, psc_facts_t *f)
{
    struct hwloc_distances_s *d = NULL;
    unsigned nr = 1;
    hwloc_uint64_t unit = 0;

    if (hwloc_distances_get_by_name(t, "NVLinkBandwidth", &nr, &d, 0) != 0 || nr < 1)
        return;
    for (int i = 0; i < f->ngpu; i++)
        f->gpu[i].nvlink_count = 0; /* recorded: none unless listed */
    unit = psc__nvlink_unit(d);
    for (unsigned i = 0; unit && i < d->nbobjs; i++) {
        hwloc_obj_t src = psc__as_pcidev(d->objs[i]);
        char bus[PSC_BUSID_LEN];
        int gi;

        if (!src || src->type != HWLOC_OBJ_PCI_DEVICE)
            continue;
        psc__busid(src, bus, sizeof(bus));
        gi = psc__gpu_index(f, bus);
        if (gi < 0)
            continue;
        for (unsigned j = 0; j < d->nbobjs; j++) {
            hwloc_obj_t dst = psc__as_pcidev(d->objs[j]);
            psc_gpu_facts_t *g = &f->gpu[gi];
            unsigned links = (unsigned)((d->values[i * d->nbobjs + j] + unit / 2) / unit);

            if (!dst || dst == src)
                continue;
            for (unsigned l = 0; l < links && g->nvlink_count < PSC_MAX_NVLINKS; l++) {
                psc_nvlink_facts_t *nl = &g->nvlinks[g->nvlink_count++];

                memset(nl, 0, sizeof(*nl));
                nl->active = 1;
                nl->speed_gbs = (double)unit / 1000.0;
                if (dst->type == HWLOC_OBJ_PACKAGE) {
                    nl->remote = PSC_REMOTE_CPU;
                } else {
                    psc__busid(dst, nl->remote_bus_id, sizeof(nl->remote_bus_id));
                    nl->remote = psc__is_nvswitch(dst) ? PSC_REMOTE_SWITCH
                                 : psc__is_gpu(dst)    ? PSC_REMOTE_GPU
                                                       : PSC_REMOTE_UNKNOWN;
                }
                nl->remote_gpu = nl->remote == PSC_REMOTE_GPU ? psc__gpu_index(f, nl->remote_bus_id) : -1;
                nl->cap_p2p = nl->cap_sysmem = nl->cap_p2p_atomics = nl->cap_sysmem_atomics = -1;
            }
        }
    }
    hwloc_distances_release(t, d);
}

int psc__nvlinks_between(const psc_facts_t *f, int i, int j)
{
    int direct = 0, sw_i = 0, sw_j = 0;

    for (int l = 0; l < f->gpu[i].nvlink_count; l++) {
        const psc_nvlink_facts_t *nl = &f->gpu[i].nvlinks[l];

        if (nl->active != 1)
            continue;
        direct += nl->remote == PSC_REMOTE_GPU && nl->remote_gpu == j;
        sw_i += nl->remote == PSC_REMOTE_SWITCH;
    }
    for (int l = 0; l < f->gpu[j].nvlink_count; l++)
        sw_j += f->gpu[j].nvlinks[l].active == 1 && f->gpu[j].nvlinks[l].remote == PSC_REMOTE_SWITCH;
    return direct + (sw_i && sw_j ? (sw_i < sw_j ? sw_i : sw_j) : 0);
}

void psc__classify_pairs(hwloc_topology_t t, psc_facts_t *f)
{
    for (int i = 0; i < f->ngpu; i++) {
        for (int j = 0; j < f->ngpu; j++) {
            psc_pair_facts_t *p = &f->pair[i][j];

            if (i == j) {
                p->path = PSC_PATH_SELF;
                p->nvlinks = 0;
                continue;
            }
            p->nvlinks = psc__nvlinks_between(f, i, j);
            p->path = p->nvlinks > 0 ? PSC_PATH_NVLINK
                                     : t ? psc__pci_path(t, f->gpu[i].pci_bus_id, f->gpu[j].pci_bus_id)
                                         : PSC_PATH_UNKNOWN;
        }
    }
}
