#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "report/json.h"
#include "report/render.h"
#include "report/render_suite.h"
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

int psc_cmd_devices(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    int n = psc_device_count(ctx);
    psc_device_info_t *devs = calloc((size_t)n, sizeof(*devs));
    psc_system_info_t sys;
    int rc = PSC_EXIT_OK;

    if (!devs) {
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
