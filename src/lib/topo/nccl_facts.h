/* The facts' NCCL part (topo/nccl_facts.c): whether NCCL loads, its version, the NCCL_* settings. Internal. */
#ifndef PSC_TOPO_NCCL_FACTS_H
#define PSC_TOPO_NCCL_FACTS_H

#include "p2pscope.h"

/* Live NCCL facts: loads NCCL (psc__nccl_load) to read its version, and reads the environment only. */
void psc__nccl_facts_gather(psc_nccl_facts_t *out);

#endif
