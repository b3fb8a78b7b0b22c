#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "report/json.h"
#include "report/render.h"

int psc_cmd_list(void)
{
    for (int t = 0; t < psc_bw_test_count(); t++)
        printf("%-30s %s\n", psc_bw_test_name(t), psc_bw_test_info(t)->description);
    return PSC_EXIT_OK;
}

int psc_cmd_devices(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    int n = psc_device_count(ctx);
    psc_device_info_t *devs = calloc((size_t)n, sizeof(*devs));
    psc_system_info_t sys;
    int rc = PSC_EXIT_OK;

    if (!devs)
        return PSC_EXIT_ENV;
    psc_system_info(ctx, &sys);
    for (int i = 0; i < n; i++)
        psc_device_info(ctx, i, &devs[i]);
    if (psc_cli_tables(o))
        psc_render_devices(stdout, &sys, devs, n);
    if (o->json) {
        json_t *run = psc_json_run_new("devices", &sys, devs, n);

        if (!run) {
            fprintf(stderr, "p2pscope: out of host memory\n");
            rc = PSC_EXIT_FAILED;
        } else {
            rc = psc_cli_write_json(run, o);
        }
        json_decref(run);
    }
    free(devs);
    return rc;
}
