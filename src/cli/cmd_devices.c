/* devices and list: the GPUs (live, or a recording's), the bandwidth tests' names. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "report/json.h"
#include "report/render.h"
#include "report/render_suite.h"
#include "report/render_topo.h"
#include "report/text.h"

/* A list of tests as JSON: {"command": ..., "tests": [{name, title, description, min_gpus}]}. */
int psc_cli_list_json(const char *command, const psc_registry_t *reg, const psc_cli_opts_t *o)
{
    json_t *doc = psc_json_test_list(command, reg);
    int rc = psc_cli_write_json(doc, o); /* NULL: says the JSON was not written */

    json_decref(doc);
    return rc;
}

int psc_cmd_list(const psc_cli_opts_t *o)
{
    if (o->json)
        return psc_cli_list_json("list", psc_bw_registry(), o);
    psc_render_test_list(stdout, psc_bw_registry(), 30);
    return PSC_EXIT_OK;
}

/* devices --topology: the recorded GPUs' table; no driver. */
static int psc__devices_replayed(const psc_cli_opts_t *o)
{
    int rc = PSC_EXIT_OK;
    psc_facts_t *f = psc_cli_facts(NULL, o, 0, &rc);

    if (!f)
        return rc;
    psc_render_devices_replayed(stdout, f);
    psc_facts_free(f);
    return PSC_EXIT_OK;
}

int psc_cmd_devices(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    int n = ctx ? psc_device_count(ctx) : 0;
    psc_device_info_t *devs;
    psc_system_info_t sys;
    int rc = PSC_EXIT_OK;

    if (!ctx)
        return psc__devices_replayed(o);
    if (!(devs = calloc((size_t)n + 1, sizeof(*devs)))) {
        psc_report_printf(stderr, "p2pscope: out of host memory\n");
        return PSC_EXIT_NO_MEMORY;
    }
    psc_system_info(ctx, &sys);
    for (int i = 0; i < n; i++)
        psc_device_info(ctx, i, &devs[i]);
    if (psc_cli_tables(o))
        psc_render_devices(stdout, &sys, devs, n);
    if (o->json) {
        json_t *run = psc_json_run_new("devices", &sys, devs, n);

        if (!run) {
            psc_report_printf(stderr, "p2pscope: out of host memory\n");
            rc = PSC_EXIT_NO_MEMORY;
        } else {
            rc = psc_cli_write_json(run, o);
        }
        json_decref(run);
    }
    free(devs);
    return rc;
}
