/*
 * The verify suite as the public call hands it over (psc_verify_run_suite):
 * the run (verify/suite.c), then, when a path failed or the load reported a
 * problem, the doctor's findings on facts gathered after it. And the doctor's
 * findings in an array of their own (psc_doctor_findings, the private
 * interface's: for doctor and report). Above topo and the doctor, which the
 * runs below must not call.
 */
#include <stdlib.h>

#include "internal.h"
#include "p2pscope_private.h"
#include "verify/verify_suite.h"

/*
 * Wrong data between two GPUs is the doctor's p2p_corrupts finding: the doctor on this machine's facts with
 * the paths folded in. Facts that cannot be gathered leave no findings (the run's own report stands).
 */
static psc_status_t psc__verify_findings(psc_context_t *ctx, psc_verify_suite_t *s)
{
    psc_facts_t *f = psc_facts_new();
    size_t n;

    if (!f)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for the doctor's facts");
    if (psc_facts_gather(ctx, f) != PSC_OK) {
        psc_facts_free(f);
        return PSC_OK;
    }
    if (psc_facts_probe_gpumap(ctx, f) != PSC_OK) /* the mapped path's findings; without them "not checked" */
        psc__log(ctx, PSC_LOG_INFO, "verify: CPU mappings not probed: %s", psc_context_last_error(ctx));
    psc_facts_note_verify_sums(f, s->paths, s->npaths);
    if (!(s->findings = psc_doctor_findings(f, &n))) {
        psc_facts_free(f);
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for %zu findings", n);
    }
    s->nfindings = n;
    psc_facts_free(f);
    return PSC_OK;
}

psc_finding_t *psc_doctor_findings(const psc_facts_t *f, size_t *n)
{
    size_t want = psc_doctor(f, NULL, 0);
    psc_finding_t *v = calloc(want ? want : 1, sizeof(*v));

    *n = want;
    if (!v)
        return NULL;
    *n = psc_doctor(f, v, want);
    if (*n > want) /* the rules are pure: the same facts give the same count */
        *n = want;
    return v;
}


psc_status_t psc_verify_run_suite(psc_context_t *ctx, const psc_verify_suite_opts_t *opts, psc_verify_suite_t **out)
{
    psc_verify_suite_t *s = NULL;
    psc_status_t st;

    /* out NULL goes down as NULL: the run refuses it, with its reason */
    if ((st = psc__verify_run_suite(ctx, opts, out ? &s : NULL)) != PSC_OK)
        return st;
    if ((s->nfailed || s->load_error[0] || s->load_stop_error[0] || s->load_bad_bytes) &&
        (st = psc__verify_findings(ctx, s)) != PSC_OK) {
        psc_verify_suite_free(s);
        return st;
    }
    *out = s;
    return PSC_OK;
}
