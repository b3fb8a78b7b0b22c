/* Every case of one bandwidth test, in order, each a result: the loop behind bw, report and nvlink --watch. */
#include "internal.h"
#include "opts.h"
#include "runner/runner.h"
#include "xfer/bw.h"

psc_status_t psc_bw_run_test(psc_context_t *ctx, psc_bw_test_t test, const psc_bw_run_test_opts_t *opts,
                             psc_bw_result_t *res, size_t cap, size_t *n)
{
    psc_bw_run_test_opts_t o;
    psc_measure_opts_t full, dflt;
    char why[256];
    psc_status_t st;

    if ((st = psc__runner_test_args(ctx, &psc__bw_kind, res, cap, n)) != PSC_OK)
        return st;
    /* Options refused once, up front, rather than as a failed result per case. */
    psc_measure_opts_default(&dflt);
    if ((st = psc__bw_run_test_opts_adopt(ctx, opts, &o)) != PSC_OK ||
        (st = psc__measure_opts_adopt(ctx, o.measure ? o.measure : &dflt, &full, NULL, 0)) != PSC_OK)
        return st;
    if (psc__measure_opts_check(&full, why, sizeof(why)) != PSC_OK)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_bw_run_test: %s", why);
    return psc__runner_test(ctx, &psc__bw_kind, test, o.devices, o.ndev, &full, &o, res, cap, n);
}
