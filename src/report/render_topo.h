/* Text rendering of topology facts: the nvidia-smi style matrix, P2P matrices, per-GPU and host facts. */
#ifndef PSC_REPORT_RENDER_TOPO_H
#define PSC_REPORT_RENDER_TOPO_H

#include <stdio.h>

#include "p2pscope.h"

void psc_render_topo(FILE *f, const psc_facts_t *facts);

/*
 * devices --topology: the GPUs' table from a recording's facts (name, bus id, memory, NUMA node, clocks,
 * temperature; "?" for what a recording does not hold: SMs, compute capability, copy engines; no nvidia-smi
 * index), under a line naming the source and the driver it recorded.
 */
void psc_render_devices_replayed(FILE *f, const psc_facts_t *facts);
/* topo --save's last line: where the facts were recorded, and how to replay them. */
void psc_render_topo_saved(FILE *f, const char *path);

#endif
