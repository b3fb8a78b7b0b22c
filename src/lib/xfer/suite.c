/* The bandwidth suite behind bw, report and nvlink --watch: tests x sizes, checked up front, results grouped by test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "opts.h"
#include "runner/runner.h"
#include "xfer/bw.h"

typedef struct {
    psc_bw_suite_progress_fn fn;
    void *user;
    size_t done, count;
} psc__bw_progress_t;

/* psc_bw_run_test's progress, numbered over the whole suite. */
static void psc__bw_progress(const psc_bw_case_t *c, const psc_bw_result_t *r, void *user)
{
    psc__bw_progress_t *p = user;
    psc_bw_suite_progress_t sp = {p->done, p->count, c, r};

    p->done += r != NULL;
    if (p->fn)
        p->fn(&sp, p->user);
}

void psc_bw_suite_free(psc_bw_suite_t *s)
{
    if (s)
        psc__suite_free(s, s->tests, s->results);
}

/* The suite's sizes: the options' one size, or the sweep from sweep_min to sweep_max by sweep_factor. */
static psc_status_t psc__bw_suite_sizes(psc_context_t *ctx, psc_bw_suite_t *s, uint64_t size, uint64_t sweep_min,
                                        uint64_t sweep_max, unsigned sweep_factor)
{
    uint64_t probe[PSC_SUITE_MAX_SIZES + 1];
    int n;

    s->nsizes = 1;
    s->sizes[0] = size;
    if (!sweep_min)
        return PSC_OK;
    n = sweep_factor >= 2 && sweep_min <= sweep_max
            ? psc_size_sweep(sweep_min, sweep_max, sweep_factor, probe, PSC_SUITE_MAX_SIZES + 1)
            : 0;
    if (n < 1 || n > PSC_SUITE_MAX_SIZES)
        return psc__fail(ctx, PSC_ERR_INVALID,
                         "psc_bw_run_suite: sweep %llu to %llu by %u: accepted 1 B <= min <= max, factor >= 2, "
                         "at most %d sizes",
                         (unsigned long long)sweep_min, (unsigned long long)sweep_max, sweep_factor,
                         PSC_SUITE_MAX_SIZES);
    s->nsizes = n;
    memcpy(s->sizes, probe, (size_t)n * sizeof(probe[0]));
    return PSC_OK;
}

/* What the suite's per-test runs share: the suite, its options, and the per-test options they change. */
typedef struct {
    psc_bw_suite_t *s;
    const psc_measure_opts_t *full;
    psc_bw_run_test_opts_t ro;
    psc_measure_opts_t m;
} psc__bw_suite_test_t;

/* One test at size z (psc_suite_test_fn): psc_bw_run_test, and the bytes its passed results moved counted. */
static psc_status_t psc__bw_suite_test(psc_context_t *ctx, int test, int z, void *res, size_t cap, size_t *n,
                                       void *user)
{
    psc__bw_suite_test_t *b = user;
    psc_status_t st;

    b->m = *b->full;
    b->m.size = b->s->sizes[z];
    if ((st = psc_bw_run_test(ctx, test, &b->ro, res, cap, n)) != PSC_OK)
        return st;
    for (size_t k = 0; k < *n; k++) {
        const psc_bw_result_t *r = (const psc_bw_result_t *)res + k;

        if (r->status == PSC_RESULT_PASSED)
            b->s->payload_bytes += r->bytes_per_sample * (b->full->warmup + r->nsamples);
    }
    return PSC_OK;
}

/* Every test at every size, its results in the suite's, grouped by test; the failures and the bytes moved counted. */
static psc_status_t psc__bw_suite_measure(psc_context_t *ctx, psc_bw_suite_t *s, const psc_measure_opts_t *full,
                                          psc__bw_progress_t *prog)
{
    psc_suite_run_t r = {s->tests, s->ntests, s->nsizes, NULL, 0, 0, 0};
    psc__bw_suite_test_t b = {.s = s, .full = full};
    psc_status_t st;

    if ((st = psc__suite_room(ctx, &psc__bw_kind, s->devices, s->ndev, "results", &r)) != PSC_OK)
        return st;
    s->results = r.results;
    prog->count = r.total;
    psc_bw_run_test_opts_default(&b.ro);
    b.ro.devices = s->devices;
    b.ro.ndev = s->ndev;
    b.ro.measure = &b.m;
    b.ro.progress = psc__bw_progress;
    b.ro.user = prog;
    st = psc__suite_run(ctx, &psc__bw_kind, &r, psc__bw_suite_test, &b);
    s->nresults = r.nresults;
    s->nfailed = r.nfailed;
    return st;
}

psc_status_t psc_bw_run_suite(psc_context_t *ctx, const psc_bw_suite_opts_t *opts, psc_bw_suite_t **out)
{
    psc__bw_progress_t prog = {NULL, NULL, 0, 0};
    psc_bw_suite_t *s = NULL;
    psc_bw_suite_opts_t o;
    psc_measure_opts_t full, dflt;
    psc_system_info_t sys;
    psc_status_t st;
    char why[256];

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_bw_run_suite: accepted a place for the suite");
    if ((st = psc__bw_suite_opts_adopt(ctx, opts, &o)) != PSC_OK)
        return st;
    prog.fn = o.progress;
    prog.user = o.user;
    psc_measure_opts_default(&dflt);
    if ((st = psc__measure_opts_adopt(ctx, o.measure ? o.measure : &dflt, &full, NULL, 0)) != PSC_OK)
        return st;
    if (psc__measure_opts_check(&full, why, sizeof(why)) != PSC_OK)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_bw_run_suite: %s", why);
    if (!(s = calloc(1, sizeof(*s))))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for a bandwidth suite");
    if ((st = psc__suite_devices(ctx, "psc_bw_run_suite", o.devices, o.ndev, s->devices, &s->ndev)) != PSC_OK ||
        (st = psc__suite_tests(ctx, "psc_bw_run_suite", o.tests, o.ntests, psc_bw_registry(), s->ndev, o.ndev > 0,
                               &s->tests, &s->ntests)) != PSC_OK ||
        (st = psc_system_info(ctx, &sys)) != PSC_OK)
        goto fail;
    if (full.host_node >= sys.numa_nodes) {
        st = psc__fail(ctx, PSC_ERR_INVALID, "host node %d does not exist: accepted 0 to %d", full.host_node,
                       sys.numa_nodes - 1);
        goto fail;
    }
    if ((st = psc__bw_suite_sizes(ctx, s, full.size, o.sweep_min, o.sweep_max, o.sweep_factor)) != PSC_OK ||
        (st = psc__bw_suite_measure(ctx, s, &full, &prog)) != PSC_OK)
        goto fail;
    *out = s;
    return PSC_OK;
fail:
    psc_bw_suite_free(s);
    return st;
}
