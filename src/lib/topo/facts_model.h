/* The facts' data (topo/facts_model.c): psc_facts_new/free and the labels are public; this is the rest. */
#ifndef PSC_TOPO_FACTS_MODEL_H
#define PSC_TOPO_FACTS_MODEL_H

#include "p2pscope.h"

/* Every field of one GPU's facts "unknown" (-1) or empty. */
void psc__gpu_facts_init(psc_gpu_facts_t *g);

#endif
