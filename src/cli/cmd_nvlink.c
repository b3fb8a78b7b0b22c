/* nvlink: every link of every GPU (state, speed, remote end, capabilities, traffic); --watch shows which links carried a test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report/render_nvlink.h"
#include "report/text.h"

/* The links' counters around one bandwidth suite (gpu_to_gpu_write_ce unless tests were named), on every GPU. */
static int psc__watch(psc_context_t *ctx, const psc_cli_opts_t *o, const psc_facts_t *f)
{
    psc_nvlink_traffic_t *traffic = calloc(1, sizeof(*traffic));
    psc_bw_suite_t *s = NULL;
    int rc = PSC_EXIT_OK;

    if (!traffic) {
        psc_report_printf(stderr, "p2pscope: out of host memory\n");
        return PSC_EXIT_NO_MEMORY;
    }
    if ((s = psc_cli_bw_suite(ctx, o, NULL, traffic, &rc)))
        psc_render_nvlink_watch(stdout, f, traffic, s->nresults, s->payload_bytes);
    psc_bw_suite_free(s);
    free(traffic);
    return rc;
}

int psc_cmd_nvlink(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    int rc, any = 0;
    psc_facts_t *f = psc_cli_facts(ctx, o, 0, &rc);

    if (!f)
        return rc;
    for (int i = 0; i < f->ngpu; i++)
        any |= f->gpu[i].nvlink_count > 0;
    if (o->watch) {
        rc = psc__watch(ctx, o, f);
    } else {
        for (int i = 0; psc_cli_tables(o) && i < f->ngpu; i++)
            psc_render_nvlink(stdout, f, i, NULL);
        rc = any ? PSC_EXIT_OK : PSC_EXIT_NA;
        if (o->json) {
            json_t *doc = psc_json_nvlink(f, rc);

            if (psc_cli_write_json(doc, o) != PSC_EXIT_OK) /* NULL: says the JSON was not written */
                rc = PSC_EXIT_FAILED;
            json_decref(doc);
        }
    }
    psc_facts_free(f);
    return rc;
}
