/* Every case of one bandwidth test, in order, each a result: the loop behind bw, report and nvlink --watch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "opts.h"
#include "xfer/bw.h"

psc_status_t psc_bw_run_test(psc_context_t *ctx, psc_bw_test_t test, const psc_bw_run_test_opts_t *opts,
                             psc_bw_result_t *res, size_t cap, size_t *n)
{
    psc_bw_run_test_opts_t o;
    psc_measure_opts_t full, dflt;
    psc_bw_case_t *cases;
    char why[256];
    size_t m = 0;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!n || (!res && cap))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_bw_run_test: accepted a count, and results for cap > 0");
    /* Options refused once, up front, rather than as a failed result per case. */
    psc_measure_opts_default(&dflt);
    if ((st = psc__bw_run_test_opts_adopt(ctx, opts, &o)) != PSC_OK ||
        (st = psc__measure_opts_adopt(ctx, o.measure ? o.measure : &dflt, &full, NULL, 0)) != PSC_OK)
        return st;
    if (psc__measure_opts_check(&full, why, sizeof(why)) != PSC_OK)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_bw_run_test: %s", why);
    if ((st = psc_bw_cases(ctx, test, o.devices, o.ndev, NULL, 0, &m)) != PSC_OK)
        return st; /* psc_bw_cases recorded which test or GPU */
    if (m > cap)
        m = cap;
    cases = calloc(m ? m : 1, sizeof(*cases));
    if (!cases)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for %zu cases", m);
    psc_bw_cases(ctx, test, o.devices, o.ndev, cases, m, &(size_t){0});
    for (size_t k = 0; k < m; k++) {
        if (o.progress)
            o.progress(&cases[k], NULL, o.user);
        if (psc__bw_run_held(ctx, &cases[k], &full, &res[k]) != PSC_OK) {
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
