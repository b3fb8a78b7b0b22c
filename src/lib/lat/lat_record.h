/* One size's latency distribution into a result (lat.c and lat_gpumap.c). */
#ifndef PSC_LAT_LAT_RECORD_H
#define PSC_LAT_LAT_RECORD_H

#include "internal.h"
#include "p2pscope/bench.h"

/*
 * Percentiles of n samples (n >= 1) into *into; for r->lat[k], the first PSC_LAT_KEEP samples kept raw too.
 * Only memory can fail (PSC_ERR_NO_MEMORY, recorded): a figure of zeros must not pass for a result.
 */
psc_status_t psc__lat_record(psc_context_t *ctx, psc_lat_result_t *r, unsigned k, const double *v, unsigned n,
                             psc_pctl_t *into);

#endif
