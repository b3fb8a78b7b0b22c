/* Every case of one latency test, in order, each a result: the loop behind lat. */
#include "internal.h"
#include "lat/lat.h"
#include "opts.h"
#include "runner/runner.h"

psc_status_t psc_lat_run_test(psc_context_t *ctx, psc_lat_test_t test, const psc_lat_run_test_opts_t *opts,
                              psc_lat_result_t *res, size_t cap, size_t *n)
{
    psc_lat_run_test_opts_t o;
    psc_lat_opts_t full, dflt;
    psc_status_t st;

    if ((st = psc__runner_test_args(ctx, &psc__lat_kind, res, cap, n)) != PSC_OK)
        return st;
    psc_lat_opts_default(&dflt);
    if ((st = psc__lat_run_test_opts_adopt(ctx, opts, &o)) != PSC_OK ||
        (st = psc__lat_opts_adopt(ctx, o.lat ? o.lat : &dflt, &full)) != PSC_OK) /* refused once, up front */
        return st;
    return psc__runner_test(ctx, &psc__lat_kind, test, o.devices, o.ndev, &full, &o, res, cap, n);
}
