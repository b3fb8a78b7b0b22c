/* The full report's extra parts around the bandwidth tests: topology first, the doctor last. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "report/json.h"
#include "report/render_doctor.h"
#include "report/render_topo.h"
#include "report/text.h"

psc_facts_t *psc_report_facts(psc_context_t *ctx)
{
    psc_facts_t *f = NULL;

    /* With the CPU mappings, as topo and doctor show them (a page of device memory tried per backend). */
    if (psc_facts_gather_mapped(ctx, &f) != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: topology not gathered: %s\n", psc_context_last_error(ctx));
        return NULL;
    }
    return f;
}

void psc_report_topology(const psc_facts_t *f, const psc_cli_opts_t *o, json_t *run)
{
    if (!f)
        return;
    if (psc_cli_tables(o)) {
        printf("\n");
        psc_render_topo(stdout, f);
    }
    if (run)
        psc_json_run_set(run, "topology", psc_json_facts(f));
}

int psc_report_end(psc_facts_t *f, const psc_cli_opts_t *o, json_t *run, psc_finding_t **keep, size_t *nkeep)
{
    psc_finding_t *v;
    int errors = 0;
    size_t n = 0;

    if (!f || !(v = psc_cli_doctor(f, &n)))
        return 0;
    for (size_t k = 0; k < n; k++)
        errors += v[k].severity == PSC_SEV_ERROR;
    if (psc_cli_tables(o)) {
        printf("\n");
        psc_render_findings(stdout, f, v, n);
    }
    if (run)
        json_object_set_new(run, "findings", psc_json_findings(v, n));
    if (keep) {
        *keep = v;
        *nkeep = n;
    } else {
        free(v);
    }
    return errors;
}
