/* GPU inventory (machine/devices.c): what context creation probes, and NVML handles for the facts and BAR1. */
#ifndef PSC_MACHINE_DEVICES_H
#define PSC_MACHINE_DEVICES_H

#include "internal.h"

/* Count the GPUs and read their static facts into ctx (gpu, info, sys). */
psc_status_t psc__devices_probe(psc_context_t *ctx);

/* NVML handle of GPU i, NULL without NVML. */
psc_nvmlDevice_t psc__nvml_handle(const psc_context_t *ctx, int i);

#endif
