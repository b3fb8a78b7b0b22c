/* Host side of the topology through hwloc: NUMA locality of PCI devices, memory binding. */
#ifndef PSC_MACHINE_HOST_TOPO_H
#define PSC_MACHINE_HOST_TOPO_H

#include <hwloc.h>

#include "p2pscope.h"

typedef struct psc_host_topo psc_host_topo_t;

/* Load this machine's topology with PCI devices, in-process; NULL when hwloc fails. */
psc_host_topo_t *psc_host_topo_load(void);
/*
 * Load a recording someone else made: an XML text (xml_text) or, xml_text
 * NULL, the captured /sys and /proc tree at fsroot (checked by the caller
 * with psc__capture_check). hwloc parses it in a child process under limits
 * (machine/xml_sandbox.h); name is what messages call it. PSC_ERR_IO when hwloc
 * refuses it, PSC_ERR_INVALID when it is hostile or out of shape; one line in
 * errbuf. *out is set on success only.
 */
psc_status_t psc_host_topo_open_recorded(const char *name, const char *xml_text, const char *fsroot,
                                         psc_host_topo_t **out, char *errbuf, size_t errlen);
/*
 * The same for an hwloc XML file, an XML text in memory (xml_text, path
 * NULL), or a directory holding a captured tree; NULL on failure, why in
 * errbuf. Neither: this machine.
 */
psc_host_topo_t *psc_host_topo_load_recorded(const char *path, const char *xml_text, char *errbuf,
                                             size_t errlen);
void psc_host_topo_free(psc_host_topo_t *t);
hwloc_topology_t psc_host_topo_hwloc(const psc_host_topo_t *t);
/* The topology as hwloc XML (malloc'd), NULL on failure. */
char *psc_host_topo_export_xml(const psc_host_topo_t *t);

/* NUMA node (OS index) local to the PCI device, or -1 when unknown or not one node. */
int psc_host_topo_numa_of(const psc_host_topo_t *t, const char *pci_bus_id);

/* NUMA nodes of the machine (1 when hwloc is unavailable). */
int psc_host_topo_numa_count(const psc_host_topo_t *t);

/*
 * Bind this thread's future allocations to NUMA node `node` (OS index);
 * returns an opaque token for psc_host_topo_membind_pop, NULL when no binding
 * was needed (one node, node < 0) or possible.
 */
void *psc_host_topo_membind_push(psc_host_topo_t *t, int node);
void psc_host_topo_membind_pop(psc_host_topo_t *t, void *token);

/* Page-aligned memory bound to `node` (any node when < 0); free with psc_host_topo_free_mem. */
void *psc_host_topo_alloc(psc_host_topo_t *t, size_t len, int node);
void psc_host_topo_free_mem(psc_host_topo_t *t, void *p, size_t len);

#endif
