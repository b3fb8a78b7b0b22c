/* Host facts from /sys and /proc, under a root prefix ("" live, or a captured tree). */
#ifndef PSC_TOPO_SYSFS_FACTS_H
#define PSC_TOPO_SYSFS_FACTS_H

#include "p2pscope.h"

/* IOMMU, kernel command line, hypervisor, driver flavour, machine name. */
void psc__sysfs_host(const char *root, psc_host_facts_t *h);

/* The PCI bus ids of the GPUs the NVIDIA driver lists (root/proc/driver/nvidia/gpus/<bus id>), at most max of them,
 * into ids (each PSC_BUSID_LEN bytes); returns how many, 0 when the list is absent. */
int psc__sysfs_driver_gpus(const char *root, char (*ids)[PSC_BUSID_LEN], int max);

/* IOMMU group and domain type, PCIe link (where NVML gave none), bridges' ACS. */
void psc__sysfs_gpu(const char *root, psc_gpu_facts_t *g);

/* ACS state of one PCI function's config space file contents (len bytes). */
psc_acs_state_t psc__acs_parse(const unsigned char *cfg, size_t len, int privileged, int *ctrl);

/* "32.0 GT/s PCIe" -> 5; -1 when unknown. */
int psc__pcie_gen_of_speed(const char *text);

#endif
