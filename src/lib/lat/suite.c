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

/* One test (psc_suite_test_fn, one size): psc_lat_run_test with the suite's per-test options. */
static psc_status_t psc__lat_suite_test(psc_context_t *ctx, int test, int z, void *res, size_t cap, size_t *n,
                                        void *user)
{
    (void)z;
    return psc_lat_run_test(ctx, test, user, res, cap, n);
}

psc_status_t psc_lat_run_suite(psc_context_t *ctx, const psc_lat_suite_opts_t *opts, psc_lat_suite_t **out)
{
    psc_lat_run_test_opts_t ro;
    psc_lat_suite_opts_t o;
    psc_lat_suite_t *s = NULL;
    psc_lat_opts_t full, dflt;
    psc_suite_run_t r = {NULL, 0, 1, NULL, 0, 0, 0};
    psc_status_t st;

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
    r.tests = s->tests;
    r.ntests = s->ntests;
    st = psc__suite_room(ctx, &psc__lat_kind, s->devices, s->ndev, "latency results", &r);
    s->results = r.results;
    if (st != PSC_OK)
        goto fail;
    psc_lat_run_test_opts_default(&ro);
    ro.devices = s->devices;
    ro.ndev = s->ndev;
    ro.lat = &full;
    ro.progress = o.progress;
    ro.user = o.user;
    if (s->ndev > 0) /* unknown stays 0: the tables say so */
        psc__timer_resolution_held(ctx, s->devices[0], &s->gpu_timer_ns, &s->host_timer_ns);
    st = psc__suite_run(ctx, &psc__lat_kind, &r, psc__lat_suite_test, &ro);
    s->nresults = r.nresults;
    s->nfailed = r.nfailed;
    if (st != PSC_OK)
        goto fail;
    *out = s;
    return PSC_OK;
fail:
    psc_lat_suite_free(s);
    return st;
}
