/*
 * The verify suite behind `verify`: the cases of each test, the background
 * load around them, the stress run. The doctor's findings on a failed run
 * are added one layer up, by psc_verify_run_suite (api_findings.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "opts.h"
#include "runner/runner.h"
#include "verify/load.h"
#include "verify/verify_suite.h"
#include "xfer/bw.h"

typedef struct {
    psc_verify_suite_progress_fn fn;
    void *user;
} psc__verify_progress_t;

/*
 * Verify checks copies: a test that only reads or only writes (psc_bw_access_t) has no copy to check (bw checks
 * its sum or its stores). Every test run: those are left out; named ones reach psc_verify_run, which refuses them.
 */
static psc_status_t psc__verify_copy_tests(psc_suite_test_t *tv, int *nt, int named)
{
    int k = 0;

    for (int t = 0; t < *nt; t++)
        if (named || psc_bw_test_info(tv[t].test)->access == PSC_BW_ACCESS_COPY)
            tv[k++] = tv[t];
    *nt = k;
    return PSC_OK;
}

static void psc__verify_progress(const psc_verify_progress_t *p, void *user)
{
    const psc__verify_progress_t *v = user;

    if (v->fn)
        v->fn(p, NULL, v->user);
}

void psc_verify_suite_free(psc_verify_suite_t *s)
{
    if (!s)
        return;
    free(s->findings);
    free(s->paths);
    free(s->load);
    free(s);
}

/* Every case of the tests tv[0..nt) on the suite's GPUs (*cases, to free) and a path for each in the suite. */
static psc_status_t psc__verify_suite_cases(psc_context_t *ctx, psc_verify_suite_t *s, psc_suite_test_t *tv, int nt,
                                            psc_bw_case_t **cases)
{
    size_t total = 0;
    psc_status_t st;

    if ((st = psc__suite_count(ctx, &psc__bw_kind, s->devices, s->ndev, tv, nt, 1, &total)) != PSC_OK)
        return st;
    if (!(*cases = calloc(total + 1, sizeof(**cases))) || !(s->paths = calloc(total + 1, sizeof(*s->paths))))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for %zu paths", total);
    for (int t = 0; t < nt; t++) {
        psc_bw_cases(ctx, tv[t].test, s->devices, s->ndev, *cases + s->npaths, total - s->npaths, &(size_t){0});
        s->npaths += tv[t].n;
    }
    return PSC_OK;
}

/* The background load on the suite's GPUs; NULL where it could not start (checked without it; the caller says the
 * run did not do what was asked: the progress callback, the suite's load_error). */
static psc_load_t *psc__verify_suite_load(psc_context_t *ctx, psc_verify_suite_t *s,
                                          psc_verify_suite_progress_fn progress, void *user)
{
    psc_load_t *load = NULL;

    if (psc__load_start_held(ctx, s->devices, s->ndev, &load) == PSC_OK)
        return load;
    snprintf(s->load_error, sizeof(s->load_error), "%s", psc_context_last_error(ctx));
    if (progress)
        progress(NULL, s->load_error, user);
    return NULL;
}

/* Stop the load and keep its paths' reports in the suite; st: the run's status so far, returned unless it was PSC_OK
 * and there is no room for the reports. */
static psc_status_t psc__verify_suite_load_stop(psc_context_t *ctx, psc_verify_suite_t *s, psc_load_t *load,
                                                psc_status_t st)
{
    if (!(s->load = calloc(PSC_LOAD_MAX_PATHS, sizeof(*s->load)))) {
        psc__load_stop_held(load, NULL, 0, &s->nload);
        s->nload = 0;
        if (st == PSC_OK)
            st = psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for the load's reports");
    } else if (psc__load_stop_held(load, s->load, PSC_LOAD_MAX_PATHS, &s->nload) != PSC_OK) {
        snprintf(s->load_stop_error, sizeof(s->load_stop_error), "%s", psc_context_last_error(ctx));
    }
    s->load_ran = 1;
    for (int i = 0; i < s->nload; i++)
        s->load_bad_bytes += s->load[i].bad_bytes;
    return st;
}

psc_status_t psc__verify_run_suite(psc_context_t *ctx, const psc_verify_suite_opts_t *opts, psc_verify_suite_t **out)
{
    psc__verify_progress_t prog = {NULL, NULL};
    psc_verify_stress_opts_t so;
    psc_verify_suite_opts_t o;
    psc_verify_suite_t *s = NULL;
    psc_suite_test_t *tv = NULL;
    psc_bw_case_t *cases = NULL;
    psc_load_t *load = NULL;
    psc_verify_opts_t full, dflt;
    psc_status_t st;
    int nt = 0;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (opts && (st = psc__verify_suite_opts_adopt(ctx, opts, &o)) != PSC_OK)
        return st;
    if (!out || !opts || !(o.seconds >= 0)) /* !(>=) refuses NaN too */
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_verify_run_suite: accepted a place for the suite and seconds >= 0");
    prog.fn = o.progress;
    prog.user = o.user;
    psc_verify_opts_default(&dflt);
    if ((st = psc__verify_opts_adopt(ctx, o.verify ? o.verify : &dflt, &full)) != PSC_OK)
        return st;
    if (!(s = calloc(1, sizeof(*s))))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for a verify suite");
    if ((st = psc__suite_devices(ctx, "psc_verify_run_suite", o.devices, o.ndev, s->devices, &s->ndev)) != PSC_OK ||
        (st = psc__suite_tests(ctx, "psc_verify_run_suite", o.tests, o.ntests, psc_bw_registry(), s->ndev,
                               o.ndev > 0, &tv, &nt)) != PSC_OK ||
        (st = psc__verify_copy_tests(tv, &nt, o.ntests)) != PSC_OK ||
        (st = psc__verify_suite_cases(ctx, s, tv, nt, &cases)) != PSC_OK)
        goto fail;
    full.load = NULL;
    if (s->npaths == 0) /* nothing to verify: no test has a path with these GPUs */
        goto done;
    if (o.with_load)
        load = psc__verify_suite_load(ctx, s, o.progress, o.user);
    full.load = load;
    psc_verify_stress_opts_default(&so);
    so.verify = &full;
    so.seconds = o.seconds;
    so.progress = psc__verify_progress;
    so.user = &prog;
    st = psc_verify_stress(ctx, cases, s->npaths, &so, s->paths, &s->stress);
    if (load)
        st = psc__verify_suite_load_stop(ctx, s, load, st);
    if (st != PSC_OK)
        goto fail;
    for (size_t k = 0; k < s->npaths; k++)
        s->nfailed += s->paths[k].last.status == PSC_RESULT_FAILED;
done:
    free(tv);
    free(cases);
    *out = s;
    return PSC_OK;
fail:
    free(tv);
    free(cases);
    psc_verify_suite_free(s);
    return st;
}
