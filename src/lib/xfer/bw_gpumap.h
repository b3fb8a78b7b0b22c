/* The bandwidth registry's PSC_ENGINE_CPU tests: the CPU copies through a CPU mapping of GPU memory. */
#ifndef PSC_XFER_BW_GPUMAP_H
#define PSC_XFER_BW_GPUMAP_H

#include "internal.h"

/* One such case (one transfer, host <-> its GPU): out filled as psc_bw_run fills it; errors for bad cases. */
psc_status_t psc__gpumap_bw_run(psc_context_t *ctx, const psc_bw_case_t *c, const psc_measure_opts_t *o,
                                psc_bw_result_t *out);

#endif
