/* lat: the latency tests over the chosen GPUs, tables and JSON with distributions and the timers used. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "report/json.h"
#include "report/render.h"
#include "report/render_lat.h"
#include "report/text.h"

int psc_cmd_lat_list(const psc_cli_opts_t *o)
{
    if (o->json)
        return psc_cli_list_json("lat_list", psc_lat_registry(), o);
    for (int t = 0; t < psc_lat_test_count(); t++)
        printf("%-32s %s\n", psc_lat_test_info(t)->name, psc_lat_test_info(t)->description);
    return PSC_EXIT_OK;
}

/* Progress on stderr: a live line on a terminal, one line per finished case otherwise. */
static void psc__progress(const psc_lat_case_t *c, const psc_lat_result_t *r, void *user)
{
    const int tty = *(const int *)user;
    char a[16], b[16];

    if (tty && !r)
        fprintf(stderr, "\r\033[K%s %s -> %s", psc_lat_test_info(c->test)->name,
                psc_endpoint_name(c->src, a, sizeof(a)), psc_endpoint_name(c->dst, b, sizeof(b)));
    else if (!tty && r)
        fprintf(stderr, "%s %s -> %s: %s %.0f ns p50\n", psc_lat_test_info(c->test)->name,
                psc_endpoint_name(c->src, a, sizeof(a)), psc_endpoint_name(c->dst, b, sizeof(b)),
                psc_result_status_string(r->status), r->lat[0].p50);
}

int psc_cmd_lat(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    const double t0 = psc_cli_now();
    const int tables = psc_cli_tables(o);
    int tty = isatty(STDERR_FILENO); /* the progress callback's argument */
    int devs[PSC_CLI_MAX_DEVS], ndev = o->ndev ? o->ndev : psc_device_count(ctx);
    const size_t cap = (size_t)ndev * (size_t)ndev; /* a test has at most one case per ordered pair */
    int ntests = o->ntests ? o->ntests : psc_lat_test_count(), rc = PSC_EXIT_OK;
    psc_lat_result_t *res = calloc(cap, sizeof(*res));
    psc_device_info_t info[PSC_CLI_MAX_DEVS];
    double gres = 0, hres = 0;
    psc_system_info_t sys;
    psc_lat_opts_t lo;
    json_t *run = NULL;

    if (!res) {
        fprintf(stderr, "p2pscope: out of host memory\n");
        rc = PSC_EXIT_NO_MEMORY;
        goto out;
    }
    for (int i = 0; i < ndev; i++)
        devs[i] = o->ndev ? o->devs[i] : i;
    for (int t = 0; o->ntests && t < ntests; t++) {
        if (ndev < psc_lat_test_info(o->tests[t])->min_gpus) {
            fprintf(stderr, "p2pscope: %s needs at least %d GPUs; %d selected\n", psc_lat_test_info(o->tests[t])->name,
                    psc_lat_test_info(o->tests[t])->min_gpus, ndev);
            rc = PSC_EXIT_ENV;
            goto out;
        }
    }
    psc_lat_opts_default(&lo);
    if (o->samples_given) /* samples per case, or per size */
        lo.samples = o->measure.samples;
    psc_system_info(ctx, &sys);
    for (int i = 0; i < ndev; i++)
        psc_device_info(ctx, devs[i], &info[i]);
    psc_timer_resolution(ctx, devs[0], &gres, &hres);
    if (tables) {
        psc_render_devices(stdout, &sys, info, ndev);
        printf("timers: GPU %%globaltimer steps of %.0f ns (SM cycles calibrated against it per launch); host "
               "CLOCK_MONOTONIC resolution %.0f ns\n",
               gres, hres);
    }
    if (o->json) {
        run = psc_json_run_new("lat", &sys, info, ndev);
        json_object_set_new(run, "timers", json_pack("{s:f,s:f}", "gpu_globaltimer_step_ns", gres,
                                                     "host_monotonic_resolution_ns", hres));
    }
    for (int t = 0; t < ntests; t++) {
        psc_lat_test_t test = o->ntests ? o->tests[t] : t;
        size_t n = 0;

        if (psc_lat_run_test(ctx, test, devs, ndev, &lo, psc__progress, &tty, res, cap, &n) != PSC_OK)
            psc_report_printf(stderr, "p2pscope: %s\n", psc_context_last_error(ctx));
        for (size_t k = 0; k < n; k++) {
            if (res[k].status == PSC_RESULT_FAILED)
                rc = PSC_EXIT_FAILED;
            if (run)
                json_array_append_new(json_object_get(run, "tests"), psc_json_lat_result(&res[k]));
        }
        if (tty)
            fprintf(stderr, "\r\033[K");
        if (tables)
            psc_render_lat(stdout, test, res, n, devs, ndev);
    }
    rc = psc_cli_write_run(run, o, psc_cli_now() - t0, rc);
out:
    json_decref(run);
    free(res);
    return rc;
}
