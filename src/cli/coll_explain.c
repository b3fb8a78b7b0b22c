/*
 * coll --explain: the library's reading of a run (psc_coll_explain: the link
 * measured between the ranks' GPUs, the doctor's findings), rendered after
 * the table and set as the JSON run's "explain".
 */
#include <stdio.h>

#include "cli.h"
#include "report/json.h"
#include "report/render_coll.h"
#include "report/text.h"

int psc_cli_coll_explain(psc_context_t *ctx, const psc_coll_report_t *r, const int *devs, int ndev, int tables,
                         json_t *run)
{
    psc_coll_explain_t x;

    if (psc_coll_explain(ctx, r, devs, ndev, &x) != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: out of host memory\n");
        return PSC_EXIT_NO_MEMORY;
    }
    if (x.facts_incomplete)
        psc_report_printf(stderr, "p2pscope coll: the doctor's facts are incomplete: %s\n", x.facts_error);
    if (tables)
        psc_render_coll_explain(stdout, x.link_bw_gbs, x.how, x.findings, x.nfindings);
    if (run && json_object_set_new(run, "explain", psc_json_coll_explain(x.link_bw_gbs, x.how, x.findings,
                                                                         x.nfindings)) != 0)
        return PSC_EXIT_NO_MEMORY;
    return PSC_EXIT_OK;
}
