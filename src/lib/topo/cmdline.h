/*
 * The kernel command line as the facts keep it: only the parameters that
 * matter to peer-to-peer transfers (IOMMU, ACS override, PCI, the NVIDIA and
 * VFIO modules, bounce buffers), wherever they stand in the line, so that a
 * recording is safe to attach to a public report (no root device UUIDs, no
 * paths, no secrets passed to init) and nothing the doctor needs is lost.
 */
#ifndef PSC_TOPO_CMDLINE_H
#define PSC_TOPO_CMDLINE_H

#include <stddef.h>

/*
 * line's P2P parameters, in their order, one space apart, into out (len
 * bytes, NUL-terminated); a parameter that does not fit whole is left out.
 * Pure; line and out may not overlap.
 */
void psc__cmdline_p2p(const char *line, char *out, size_t len);

#endif
