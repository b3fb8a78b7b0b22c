/* One size's latency samples into a result (lat_record.h): percentiles, and the samples kept for the figures. */
#include "lat/lat_record.h"

psc_status_t psc__lat_record(psc_context_t *ctx, psc_lat_result_t *r, unsigned k, const double *v, unsigned n,
                             psc_pctl_t *into)
{
    if (psc_percentiles(v, n, into) != PSC_OK)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for the percentiles of %u samples", n);
    if (into != &r->lat[k])
        return PSC_OK;
    r->nkept[k] = n < PSC_LAT_KEEP ? n : PSC_LAT_KEEP;
    for (unsigned i = 0; i < r->nkept[k]; i++)
        r->kept[k][i] = (float)v[i];
    return PSC_OK;
}
