/*
 * coll --explain's work (psc_coll_explain, p2pscope_private.h): the doctor's
 * reading of a run (psc_doctor_coll, pure rules) on facts gathered here,
 * against what bw measures between the same GPUs: gpu_to_gpu_write_ce at
 * 64 MiB, every ordered pair of the ranks' GPUs in this process, the slowest
 * pair standing for the ring's slowest link. A process that drives one GPU
 * (one rank per GPU under mpirun) has no pair to measure: the facts alone
 * speak. It sits in the coll layer, above the runs, topo and the doctor it
 * calls; the tool only renders what it hands back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p2pscope_private.h"

#define PSC__EXPLAIN_SIZE (64ull << 20)

/* The slowest ordered pair's median GB/s, or 0 with why in how. */
static double psc__link_bw(psc_context_t *ctx, const int *devs, int ndev, char *how, size_t len)
{
    psc_bw_run_test_opts_t ro;
    psc_measure_opts_t mo;
    psc_bw_result_t *res;
    psc_bw_test_t t;
    size_t n = 0, cap = (size_t)ndev * (size_t)ndev;
    double worst = 0;

    if (ndev < 2) {
        snprintf(how, len, "this process drives one GPU: no pair to measure");
        return 0;
    }
    if (psc_bw_test_from_name("gpu_to_gpu_write_ce", &t) != PSC_OK || !(res = calloc(cap, sizeof(*res)))) {
        snprintf(how, len, "out of host memory");
        return 0;
    }
    psc_measure_opts_default(&mo);
    mo.size = PSC__EXPLAIN_SIZE;
    psc_bw_run_test_opts_default(&ro);
    ro.devices = devs;
    ro.ndev = ndev;
    ro.measure = &mo;
    if (psc_bw_run_test(ctx, t, &ro, res, cap, &n) != PSC_OK) {
        snprintf(how, len, "gpu_to_gpu_write_ce could not run: %s", psc_context_last_error(ctx));
        free(res);
        return 0;
    }
    for (size_t k = 0; k < n; k++)
        if (res[k].status == PSC_RESULT_PASSED && (worst == 0 || res[k].stats.median < worst))
            worst = res[k].stats.median;
    snprintf(how, len, worst > 0 ? "gpu_to_gpu_write_ce, 64 MiB, the slowest of %zu ordered pairs of the ranks' GPUs"
                                 : "gpu_to_gpu_write_ce passed on none of %zu pairs", n);
    free(res);
    return worst;
}

psc_status_t psc_coll_explain(psc_context_t *ctx, const psc_coll_report_t *r, const int *devs, int ndev,
                              psc_coll_explain_t *out)
{
    psc_facts_t *f = psc_facts_new();
    size_t n;

    if (!f)
        return PSC_ERR_NO_MEMORY;
    memset(out, 0, sizeof(*out));
    if (psc_facts_gather(ctx, f) != PSC_OK) {
        out->facts_incomplete = 1;
        snprintf(out->facts_error, sizeof(out->facts_error), "%s", psc_context_last_error(ctx));
    }
    out->link_bw_gbs = psc__link_bw(ctx, devs, ndev, out->how, sizeof(out->how));
    n = psc_doctor_coll(f, r, out->link_bw_gbs, out->findings, PSC_COLL_EXPLAIN_FINDINGS);
    out->nfindings = n > PSC_COLL_EXPLAIN_FINDINGS ? PSC_COLL_EXPLAIN_FINDINGS : n;
    psc_facts_free(f);
    return PSC_OK;
}
