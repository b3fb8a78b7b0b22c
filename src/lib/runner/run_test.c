/* One test turned into its cases over the chosen GPUs, and every case run in order, each a result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner.h"

int psc__cases_gpus(const psc_context_t *ctx, const char *who, const char *what, const psc_registry_t *r, int test,
                    const int *devices, int ndev, const size_t *n, int *d, int cap)
{
    int m = psc__resolve_devices(ctx, devices, ndev, d, cap);

    if (!n) {
        psc__fail(ctx, PSC_ERR_INVALID, "%s: no count given (accepted: the address of a size_t)", who);
        return -1;
    }
    if (!psc__registry_at(r, test)) {
        psc__fail(ctx, PSC_ERR_INVALID, "%s test %d does not exist (accepted: 0..%d)", what, test,
                  psc_registry_count(r) - 1);
        return -1;
    }
    return m; /* -1: psc__resolve_devices recorded which GPU */
}

psc_status_t psc__runner_held(psc_context_t *ctx, const psc_runner_kind_t *k, const void *c, const void *opts,
                              void *out)
{
    void *res;
    psc_status_t st;

    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: no place for the result (accepted: a %s)", k->run,
                         k->result_type);
    if (!(res = malloc(k->result_size)))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for a result");
    psc__guard_enter(ctx);
    st = psc__guard_leave(ctx, k->run_case(ctx, c, opts, res));
    if (st == PSC_OK) /* written only when the caller's state was put back too */
        memcpy(out, res, k->result_size);
    free(res);
    return st;
}

psc_status_t psc__runner_test_args(psc_context_t *ctx, const psc_runner_kind_t *k, const void *res, size_t cap,
                                   const size_t *n)
{
    if (!ctx)
        return PSC_ERR_INVALID;
    if (!n || (!res && cap))
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: accepted a count, and results for cap > 0", k->run_test);
    return PSC_OK;
}

/* Result k of res, of kind k. */
static char *psc__result_at(const psc_runner_kind_t *k, void *res, size_t i)
{
    return (char *)res + i * k->result_size;
}

/* A case the run refused: a failed result, the context's last error its reason. */
static void psc__result_failed(psc_context_t *ctx, const psc_runner_kind_t *k, const void *c, char *r)
{
    const psc_result_status_t failed = PSC_RESULT_FAILED;

    memset(r, 0, k->result_size);
    memcpy(r + k->result_case, c, k->case_size);
    memcpy(r + k->result_status, &failed, sizeof(failed));
    snprintf(r + k->result_reason, k->reason_size, "%s", psc_context_last_error(ctx));
}

psc_status_t psc__runner_test(psc_context_t *ctx, const psc_runner_kind_t *k, int test, const int *devices, int ndev,
                              const void *opts, const void *test_opts, void *res, size_t cap, size_t *n)
{
    char *cases;
    size_t m = 0;
    psc_status_t st;

    if ((st = k->cases(ctx, test, devices, ndev, NULL, 0, &m)) != PSC_OK)
        return st; /* the case generator recorded which test or GPU */
    if (m > cap)
        m = cap;
    cases = calloc(m ? m : 1, k->case_size);
    if (!cases)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for %zu cases", m);
    k->cases(ctx, test, devices, ndev, cases, m, &(size_t){0});
    for (size_t i = 0; i < m; i++) {
        const char *c = cases + i * k->case_size;
        char *r = psc__result_at(k, res, i);

        k->progress(c, NULL, test_opts);
        if (psc__runner_held(ctx, k, c, opts, r) != PSC_OK)
            psc__result_failed(ctx, k, c, r);
        k->progress(c, r, test_opts);
    }
    free(cases);
    *n = m;
    return PSC_OK;
}
