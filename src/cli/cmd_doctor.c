/* doctor: findings with evidence and a fix, from live facts (plus a verified peer copy) or a recording. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "report/json.h"
#include "report/render_doctor.h"
#include "report/render_suite.h"
#include "report/text.h"

psc_finding_t *psc_cli_doctor(const psc_facts_t *f, size_t *n)
{
    size_t want;
    psc_finding_t *v = psc_doctor_findings(f, &want);

    if (!v) {
        psc_report_printf(stderr, "p2pscope: out of host memory\n");
        return NULL;
    }
    *n = want;
    return v;
}

int psc_cmd_doctor(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    int rc = PSC_EXIT_OK;
    psc_facts_t *f = psc_cli_facts(ctx, o, 1, &rc); /* live: with a verified copy per peer pair */
    psc_finding_t *v;
    size_t n = 0;

    if (!f)
        return rc;
    v = psc_cli_doctor(f, &n);
    if (!v) {
        psc_facts_free(f);
        return PSC_EXIT_NO_MEMORY;
    }
    for (size_t k = 0; k < n; k++)
        if (v[k].severity == PSC_SEV_ERROR)
            rc = PSC_EXIT_FAILED;
    if (psc_cli_tables(o))
        psc_render_findings(stdout, f, v, n);
    if (o->json) {
        json_t *doc = psc_json_doctor(f, v, n, rc);

        if (psc_cli_write_json(doc, o) != PSC_EXIT_OK)
            rc = PSC_EXIT_FAILED;
        json_decref(doc);
    }
    psc_facts_free(f);
    free(v);
    return rc;
}
