/* The suites' common checks: the GPU list and the test list, refused with their reasons before anything runs. */
#include <stdlib.h>
#include <string.h>

#include "runner/runner.h"

psc_status_t psc__suite_devices(psc_context_t *ctx, const char *who, const int *devices, int ndev, int *out,
                                int *nout)
{
    const int count = psc_device_count(ctx);

    if (ndev < 0 || ndev > PSC_MAX_GPUS || (ndev && !devices))
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: accepted 0 to %d GPUs, and a list for more than 0", who,
                         PSC_MAX_GPUS);
    for (int i = 0; i < ndev; i++)
        if (devices[i] < 0 || devices[i] >= count)
            return psc__fail(ctx, PSC_ERR_INVALID, "%s: GPU %d does not exist: accepted 0 to %d", who, devices[i],
                             count - 1);
    *nout = ndev ? ndev : count;
    for (int i = 0; i < *nout; i++)
        out[i] = ndev ? devices[i] : i;
    return PSC_OK;
}

psc_status_t psc__suite_tests(psc_context_t *ctx, const char *who, const int *tests, int ntests,
                              const psc_registry_t *r, int nd, int named_devices, psc_suite_test_t **out, int *nout)
{
    const int count = psc_registry_count(r);
    const int n = ntests ? ntests : count;
    psc_suite_test_t *v;

    if (ntests < 0 || (ntests && !tests))
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: accepted a list of tests, or 0 for every test", who);
    for (int t = 0; t < ntests; t++)
        if (tests[t] < 0 || tests[t] >= count)
            return psc__fail(ctx, PSC_ERR_INVALID, "%s: test index %d out of range: accepted 0 to %d", who,
                             tests[t], count - 1);
    /* Every test of the registry runs what it can; a test asked for by name must run. */
    for (int t = 0; t < ntests; t++)
        if (nd < psc__registry_min_gpus(r, tests[t]))
            return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "%s needs at least %d GPUs; %d %s",
                             psc__registry_name(r, tests[t]), psc__registry_min_gpus(r, tests[t]), nd,
                             named_devices ? "selected" : "on this machine");
    v = calloc((size_t)(n ? n : 1), sizeof(*v));
    if (!v)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for %d tests", n);
    for (int t = 0; t < n; t++)
        v[t].test = ntests ? tests[t] : t;
    *out = v;
    *nout = n;
    return PSC_OK;
}

psc_status_t psc__suite_count(psc_context_t *ctx, const psc_runner_kind_t *k, const int *devices, int ndev,
                              psc_suite_test_t *tests, int ntests, int nsizes, size_t *total)
{
    psc_status_t st;

    *total = 0;
    for (int t = 0; t < ntests; t++) {
        size_t n = 0;

        if ((st = k->cases(ctx, tests[t].test, devices, ndev, NULL, 0, &n)) != PSC_OK)
            return st; /* the case generator recorded why */
        tests[t].n = n * (size_t)nsizes;
        *total += tests[t].n;
    }
    return PSC_OK;
}

psc_status_t psc__suite_room(psc_context_t *ctx, const psc_runner_kind_t *k, const int *devices, int ndev,
                             const char *noun, psc_suite_run_t *r)
{
    psc_status_t st;

    if ((st = psc__suite_count(ctx, k, devices, ndev, r->tests, r->ntests, r->nsizes, &r->total)) != PSC_OK)
        return st;
    if (!(r->results = calloc(r->total ? r->total : 1, k->result_size)))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for %zu %s", r->total, noun);
    return PSC_OK;
}

/* Whether result r of kind k failed. */
static int psc__result_failed(const psc_runner_kind_t *k, const char *r)
{
    psc_result_status_t status;

    memcpy(&status, r + k->result_status, sizeof(status));
    return status == PSC_RESULT_FAILED;
}

psc_status_t psc__suite_run(psc_context_t *ctx, const psc_runner_kind_t *k, psc_suite_run_t *r,
                            psc_suite_test_fn run_test, void *user)
{
    psc_status_t st;

    for (int t = 0; t < r->ntests; t++) {
        r->tests[t].first = r->nresults;
        for (int z = 0; z < r->nsizes; z++) {
            char *res = (char *)r->results + r->nresults * k->result_size;
            size_t n = 0;

            if ((st = run_test(ctx, r->tests[t].test, z, res, r->total - r->nresults, &n, user)) != PSC_OK)
                return st;
            for (size_t i = 0; i < n; i++)
                r->nfailed += psc__result_failed(k, res + i * k->result_size);
            r->nresults += n;
        }
        r->tests[t].n = r->nresults - r->tests[t].first;
    }
    return PSC_OK;
}

void psc__suite_free(void *suite, psc_suite_test_t *tests, void *results)
{
    free(tests);
    free(results);
    free(suite);
}
