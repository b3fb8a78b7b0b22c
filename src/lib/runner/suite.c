/* The suites' common checks: the GPU list and the test list, refused with their reasons before anything runs. */
#include <stdlib.h>

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

void psc__suite_free(void *suite, psc_suite_test_t *tests, void *results)
{
    free(tests);
    free(results);
    free(suite);
}
