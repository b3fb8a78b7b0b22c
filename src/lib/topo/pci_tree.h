/* What the PCI tree (hwloc) says about GPUs: where they sit, how two of them connect. */
#ifndef PSC_TOPO_PCI_TREE_H
#define PSC_TOPO_PCI_TREE_H

#include "machine/host_topo.h"

/* The hwloc object of a PCI bus id ("0000:18:00.0"), NULL when absent. */
hwloc_obj_t psc__pci_find(hwloc_topology_t t, const char *bus_id);

/* NUMA node, CPU set and the bridges above the GPU g->pci_bus_id. */
void psc__pci_gpu_locality(hwloc_topology_t t, psc_gpu_facts_t *g);

/* PIX/PXB/PHB/NODE/SYS from the tree alone; PSC_PATH_UNKNOWN when a device is missing. */
psc_path_t psc__pci_path(hwloc_topology_t t, const char *bus_a, const char *bus_b);

/* For replays: every NVIDIA GPU in the tree, and each of the nlisted bus ids in listed (the GPUs the driver lists in a
 * capture, whose tree may lack their vendor ids), in PCI bus id order, with name and memory where recorded. */
void psc__pci_list_gpus(hwloc_topology_t t, psc_facts_t *f, const char (*listed)[PSC_BUSID_LEN], int nlisted);

/* Index of the GPU with this PCI bus id in the facts, -1 when none. */
int psc__gpu_index(const psc_facts_t *f, const char *bus_id);

/* For replays: NVLinks from hwloc's NVLinkBandwidth distances, where recorded. */
void psc__pci_nvlinks_from_distances(hwloc_topology_t t, psc_facts_t *f);

/* Links between GPUs i and j: direct ones, plus those through NVSwitches both reach. */
int psc__nvlinks_between(const psc_facts_t *f, int i, int j);

/* Fill every pair's path from NVLink and the PCI tree (t may be NULL). */
void psc__classify_pairs(hwloc_topology_t t, psc_facts_t *f);

#endif
