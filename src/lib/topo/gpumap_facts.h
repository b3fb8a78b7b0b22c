/* CPU mappings of GPU memory in the facts: their short texts, shared by the doctor's rule and topo. Internal. */
#ifndef PSC_TOPO_GPUMAP_FACTS_H
#define PSC_TOPO_GPUMAP_FACTS_H

#include <stddef.h>

#include "p2pscope.h"

/*
 * A backend's reason, shortened into out: its first clause (what is missing:
 * up to ": " or "; ", taking the next clause too when the first only says a
 * call failed) when detail is 0; everything before the fix ("; ") when 1.
 * Cut at len - 1 bytes with "..." at the end. "" for "".
 */
void psc__gpumap_clause(const char *why, int detail, char *out, size_t len);

/*
 * One GPU's CPU mapping in one line: the usable backends ("gdrcopy",
 * "dma-buf, coherent"), or "none (gdrcopy: ...; dma-buf: ...; coherent: ...)"
 * with each reason's first clause; "not recorded" when not known.
 */
const char *psc__gpumap_label(const psc_gpumap_facts_t *g, char *buf, size_t len);

#endif
