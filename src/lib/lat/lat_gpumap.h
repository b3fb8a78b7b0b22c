/* The latency registry's PSC_LAT_GPUMAP tests: through a CPU mapping of GPU memory. */
#ifndef PSC_LAT_LAT_GPUMAP_H
#define PSC_LAT_LAT_GPUMAP_H

#include "internal.h"

/* One such case into res (zeroed, res->c set): PSC_OK with res's status set, or an error recorded. */
psc_status_t psc__gpumap_lat_run(psc_context_t *ctx, const psc_lat_test_info_t *ti, const psc_lat_case_t *c,
                                 const psc_lat_opts_t *o, psc_lat_result_t *res);

#endif
