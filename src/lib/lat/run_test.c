/* Every case of one latency test, in order, each a result: the loop behind lat. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "lat/lat.h"
#include "opts.h"

psc_status_t psc_lat_run_test(psc_context_t *ctx, psc_lat_test_t test, const psc_lat_run_test_opts_t *opts,
                              psc_lat_result_t *res, size_t cap, size_t *n)
{
    psc_lat_run_test_opts_t o;
    psc_lat_opts_t full, dflt;
    psc_lat_case_t *cases;
    size_t m = 0;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!n || (!res && cap))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_lat_run_test: accepted a count, and results for cap > 0");
    psc_lat_opts_default(&dflt);
    if ((st = psc__lat_run_test_opts_adopt(ctx, opts, &o)) != PSC_OK ||
        (st = psc__lat_opts_adopt(ctx, o.lat ? o.lat : &dflt, &full)) != PSC_OK) /* refused once, up front */
        return st;
    if ((st = psc_lat_cases(ctx, test, o.devices, o.ndev, NULL, 0, &m)) != PSC_OK)
        return st; /* psc_lat_cases recorded which test or GPU */
    if (m > cap)
        m = cap;
    cases = calloc(m ? m : 1, sizeof(*cases));
    if (!cases)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for %zu cases", m);
    psc_lat_cases(ctx, test, o.devices, o.ndev, cases, m, &(size_t){0});
    for (size_t k = 0; k < m; k++) {
        if (o.progress)
            o.progress(&cases[k], NULL, o.user);
        if (psc__lat_run_held(ctx, &cases[k], &full, &res[k]) != PSC_OK) {
            memset(&res[k], 0, sizeof(res[k]));
            res[k].c = cases[k];
            res[k].status = PSC_RESULT_FAILED;
            snprintf(res[k].reason, sizeof(res[k].reason), "%s", psc_context_last_error(ctx));
        }
        if (o.progress)
            o.progress(&cases[k], &res[k], o.user);
    }
    free(cases);
    *n = m;
    return PSC_OK;
}
