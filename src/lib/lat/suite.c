/* The latency suite behind lat: every case of each test, checked up front, results grouped by test. */
#include <stdlib.h>

#include "internal.h"
#include "lat/lat.h"
#include "opts.h"
#include "runner/runner.h"

void psc_lat_suite_free(psc_lat_suite_t *s)
{
    if (s)
        psc__suite_free(s, s->tests, s->results);
}

psc_status_t psc_lat_run_suite(psc_context_t *ctx, const psc_lat_suite_opts_t *opts, psc_lat_suite_t **out)
{
    psc_lat_run_test_opts_t ro;
    psc_lat_suite_opts_t o;
    psc_lat_suite_t *s = NULL;
    psc_lat_opts_t full, dflt;
    psc_status_t st;
    size_t total = 0;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_lat_run_suite: accepted a place for the suite");
    psc_lat_opts_default(&dflt);
    if ((st = psc__lat_suite_opts_adopt(ctx, opts, &o)) != PSC_OK ||
        (st = psc__lat_opts_adopt(ctx, o.lat ? o.lat : &dflt, &full)) != PSC_OK)
        return st;
    if (!(s = calloc(1, sizeof(*s))))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for a latency suite");
    if ((st = psc__suite_devices(ctx, "psc_lat_run_suite", o.devices, o.ndev, s->devices, &s->ndev)) != PSC_OK ||
        (st = psc__suite_tests(ctx, "psc_lat_run_suite", o.tests, o.ntests, psc_lat_registry(), s->ndev, o.ndev > 0,
                               &s->tests, &s->ntests)) != PSC_OK)
        goto fail;
    for (int t = 0; t < s->ntests; t++) {
        size_t n = 0;

        if ((st = psc_lat_cases(ctx, s->tests[t].test, s->devices, s->ndev, NULL, 0, &n)) != PSC_OK)
            goto fail; /* psc_lat_cases recorded why */
        total += n;
    }
    if (!(s->results = calloc(total ? total : 1, sizeof(*s->results)))) {
        st = psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for %zu latency results", total);
        goto fail;
    }
    psc_lat_run_test_opts_default(&ro);
    ro.devices = s->devices;
    ro.ndev = s->ndev;
    ro.lat = &full;
    ro.progress = o.progress;
    ro.user = o.user;
    if (s->ndev > 0) /* unknown stays 0: the tables say so */
        psc__timer_resolution_held(ctx, s->devices[0], &s->gpu_timer_ns, &s->host_timer_ns);
    for (int t = 0; t < s->ntests; t++) {
        size_t n = 0;

        s->tests[t].first = s->nresults;
        st = psc_lat_run_test(ctx, s->tests[t].test, &ro, s->results + s->nresults, total - s->nresults, &n);
        if (st != PSC_OK)
            goto fail;
        for (size_t k = s->nresults; k < s->nresults + n; k++)
            s->nfailed += s->results[k].status == PSC_RESULT_FAILED;
        s->nresults += n;
        s->tests[t].n = n;
    }
    *out = s;
    return PSC_OK;
fail:
    psc_lat_suite_free(s);
    return st;
}
