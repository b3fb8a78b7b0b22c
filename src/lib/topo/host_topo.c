#include "topo/host_topo.h"

#include <hwloc.h>
#include <stdlib.h>

struct psc_host_topo {
    hwloc_topology_t topo;
};

typedef struct {
    hwloc_nodeset_t nodeset;
    hwloc_membind_policy_t policy;
} psc__membind_saved_t;

psc_host_topo_t *psc_host_topo_load(void)
{
    psc_host_topo_t *t = calloc(1, sizeof(*t));

    if (!t)
        return NULL;
    if (hwloc_topology_init(&t->topo) != 0)
        goto err_free;
    hwloc_topology_set_io_types_filter(t->topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(t->topo) != 0)
        goto err_destroy;
    return t;

err_destroy:
    hwloc_topology_destroy(t->topo);
err_free:
    free(t);
    return NULL;
}

void psc_host_topo_free(psc_host_topo_t *t)
{
    if (!t)
        return;
    hwloc_topology_destroy(t->topo);
    free(t);
}

/* Nodeset local to the device; NULL when it is the whole machine or unknown. */
static hwloc_const_nodeset_t psc__local_nodeset(const psc_host_topo_t *t, const char *bus_id)
{
    hwloc_obj_t pci, anc;

    if (!t || !bus_id)
        return NULL;
    pci = hwloc_get_pcidev_by_busidstring(t->topo, bus_id);
    if (!pci)
        return NULL;
    anc = hwloc_get_non_io_ancestor_obj(t->topo, pci);
    if (!anc || !anc->nodeset || hwloc_bitmap_weight(anc->nodeset) != 1)
        return NULL;
    return anc->nodeset;
}

int psc_host_topo_numa_of(const psc_host_topo_t *t, const char *pci_bus_id)
{
    hwloc_const_nodeset_t ns = psc__local_nodeset(t, pci_bus_id);

    return ns ? hwloc_bitmap_first(ns) : -1;
}

void *psc_host_topo_membind_push(psc_host_topo_t *t, const char *pci_bus_id)
{
    hwloc_const_nodeset_t ns = psc__local_nodeset(t, pci_bus_id);
    psc__membind_saved_t *saved;
    int flags = HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET;

    /* One NUMA node: nothing to choose. */
    if (!ns || hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_NUMANODE) < 2)
        return NULL;
    saved = calloc(1, sizeof(*saved));
    if (!saved)
        return NULL;
    saved->nodeset = hwloc_bitmap_alloc();
    if (!saved->nodeset ||
        hwloc_get_membind(t->topo, saved->nodeset, &saved->policy, flags) != 0 ||
        hwloc_set_membind(t->topo, ns, HWLOC_MEMBIND_BIND, flags) != 0) {
        hwloc_bitmap_free(saved->nodeset);
        free(saved);
        return NULL;
    }
    return saved;
}

void psc_host_topo_membind_pop(psc_host_topo_t *t, void *token)
{
    psc__membind_saved_t *saved = token;

    if (!saved)
        return;
    hwloc_set_membind(t->topo, saved->nodeset, saved->policy,
                      HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET);
    hwloc_bitmap_free(saved->nodeset);
    free(saved);
}
