/* Text rendering of topology facts: the nvidia-smi style matrix, P2P matrices, per-GPU and host facts. */
#ifndef PSC_REPORT_RENDER_TOPO_H
#define PSC_REPORT_RENDER_TOPO_H

#include <stdio.h>

#include "p2pscope.h"

void psc_render_topo(FILE *f, const psc_facts_t *facts);

#endif
