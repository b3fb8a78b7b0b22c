/*
 * The doctor's integrity evidence, a fact topo records: verified copies folded
 * into pair[i][j].integrity, by one rule; a verified copy per peer pair of a
 * live machine (psc_facts_check_integrity, psc_facts_examine); and report's
 * bandwidth suite with its results folded in (psc_bw_run_report).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "xfer/bw.h"
#include "xfer/copy.h"

/* The rule, for one case: wrong bytes mark each GPU -> GPU transfer bad; a pass marks it good unless it was bad. */
static void psc__note_case(psc_facts_t *f, const psc_bw_case_t *c, int passed, int checked, uint64_t bad_bytes)
{
    const psc_bw_test_info_t *ti = psc_bw_test_info(c->test);

    /* Staged through host memory with peer access off: no evidence about P2P (the finding's subject). */
    if ((!bad_bytes && !passed) || (ti && psc__shape_p2p_off(ti->shape)))
        return;
    if (!bad_bytes && !checked) /* passed with the checks off (bw --no-verify): nothing was proven */
        return;
    for (int k = 0; k < c->nxfer && k < PSC_MAX_XFERS; k++) {
        const int a = c->xfer[k].src, b = c->xfer[k].dst;
        int *v;

        if (a < 0 || b < 0 || a == b || a >= f->ngpu || b >= f->ngpu)
            continue; /* host memory, or a GPU the facts do not hold */
        v = &f->pair[a][b].integrity;
        if (bad_bytes)
            *v = 0;
        else if (*v != 0)
            *v = 1;
    }
}

void psc_facts_note_bw(psc_facts_t *facts, const psc_bw_result_t *res, size_t n)
{
    for (size_t k = 0; facts && res && k < n; k++)
        psc__note_case(facts, &res[k].c, res[k].status == PSC_RESULT_PASSED, res[k].verify.checked > 0,
                       res[k].verify.bad_bytes);
}

void psc_facts_note_verify(psc_facts_t *facts, const psc_verify_result_t *res, size_t n)
{
    for (size_t k = 0; facts && res && k < n; k++)
        psc__note_case(facts, &res[k].c, res[k].status == PSC_RESULT_PASSED, res[k].bytes_checked > 0,
                       res[k].bad_bytes);
}

void psc_facts_note_verify_sums(psc_facts_t *facts, const psc_verify_path_sum_t *sums, size_t n)
{
    /* last holds the first failed pass when one failed: it passed only if every pass did. */
    for (size_t k = 0; facts && sums && k < n; k++)
        psc__note_case(facts, &sums[k].last.c, sums[k].passes && sums[k].last.status == PSC_RESULT_PASSED,
                       sums[k].bytes_checked > 0, sums[k].bad_bytes);
}

psc_status_t psc_facts_check_integrity(psc_context_t *ctx, psc_facts_t *facts)
{
    psc_measure_opts_t o;
    psc_bw_test_t write_ce = 0;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!facts)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_facts_check_integrity: no facts given");
    if (psc_bw_test_from_name("gpu_to_gpu_write_ce", &write_ce) != PSC_OK) /* the registry always has it */
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_facts_check_integrity: no test gpu_to_gpu_write_ce");
    /* Live results belong to the machine the facts describe, GPU for GPU. */
    if (strcmp(facts->source, "live") != 0 || facts->ngpu != psc_device_count(ctx))
        return psc__fail(ctx, PSC_ERR_INVALID,
                         "psc_facts_check_integrity: the facts (%s, %d GPUs) are not this context's machine "
                         "(accepted: facts from psc_facts_gather on this context, %d GPUs)",
                         facts->source, facts->ngpu, psc_device_count(ctx));
    psc_measure_opts_default(&o);
    o.size = 8ull << 20;
    o.iterations = 1;
    o.warmup = 0;
    o.samples = o.max_samples = 1;
    for (int i = 0; i < facts->ngpu; i++)
        for (int j = 0; j < facts->ngpu; j++) {
            psc_bw_case_t c = {.test = write_ce, .src = i, .dst = j, .issuer = i, .nxfer = 1};
            psc_bw_result_t r;

            c.xfer[0] = (psc_xfer_t){i, j, i};
            if (i == j || facts->pair[i][j].can_access != 1 || psc__bw_run_held(ctx, &c, &o, &r) != PSC_OK)
                continue;
            psc_facts_note_bw(facts, &r, 1);
        }
    return PSC_OK;
}

psc_status_t psc_facts_examine(psc_context_t *ctx, psc_facts_t *facts)
{
    psc_facts_t *s;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!facts)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_facts_examine: no facts given (accepted: one from psc_facts_new)");
    /* Gathered apart and handed over whole: a failure leaves the caller's facts as they were. */
    if (!(s = psc_facts_new()))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for the facts");
    /* A pair whose copy cannot run keeps "not run". More GPUs than the facts hold (PSC_MAX_GPUS): no evidence. */
    if ((st = psc_facts_gather(ctx, s)) == PSC_OK && s->ngpu == psc_device_count(ctx))
        st = psc_facts_check_integrity(ctx, s);
    if (st == PSC_OK)
        st = psc_facts_probe_gpumap(ctx, s);
    if (st == PSC_OK) {
        free(facts->hwloc_xml);
        *facts = *s;
        s->hwloc_xml = NULL;
    }
    psc_facts_free(s);
    return st;
}

psc_status_t psc_bw_run_report(psc_context_t *ctx, const psc_bw_suite_opts_t *opts, psc_facts_t *evidence,
                               psc_bw_suite_t **out)
{
    psc_status_t st = psc_bw_run_suite(ctx, opts, out);

    if (st == PSC_OK) /* the doctor's integrity evidence (no facts: nothing) */
        psc_facts_note_bw(evidence, (*out)->results, (*out)->nresults);
    return st;
}
