/* lat: the latency tests over the chosen GPUs, tables and JSON with distributions and the timers used. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "report/json.h"
#include "report/render.h"
#include "report/render_lat.h"

static const char *psc__name(int t)
{
    return psc_lat_test_info(t)->name;
}

static const char *psc__title(int t)
{
    return psc_lat_test_info(t)->title;
}

static const char *psc__description(int t)
{
    return psc_lat_test_info(t)->description;
}

static int psc__min_gpus(int t)
{
    return psc_lat_test_info(t)->min_gpus;
}

int psc_cmd_lat_list(const psc_cli_opts_t *o)
{
    if (o->json)
        return psc_cli_list_json("lat_list", psc_lat_test_count(), psc__name, psc__title, psc__description,
                                 psc__min_gpus, o);
    for (int t = 0; t < psc_lat_test_count(); t++)
        printf("%-32s %s\n", psc_lat_test_info(t)->name, psc_lat_test_info(t)->description);
    return PSC_EXIT_OK;
}

int psc_cmd_lat(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    const double t0 = psc_cli_now();
    const int tables = psc_cli_tables(o), tty = isatty(STDERR_FILENO);
    int devs[PSC_CLI_MAX_DEVS], ndev = o->ndev ? o->ndev : psc_device_count(ctx);
    const size_t cap = (size_t)ndev * (size_t)ndev; /* a test has at most one case per ordered pair */
    int ntests = o->ntests ? o->ntests : psc_lat_test_count(), rc = PSC_EXIT_OK;
    psc_lat_case_t *cases = calloc(cap, sizeof(*cases));
    psc_lat_result_t *res = calloc(cap, sizeof(*res));
    psc_device_info_t info[PSC_CLI_MAX_DEVS];
    double gres = 0, hres = 0;
    psc_system_info_t sys;
    psc_lat_opts_t lo;
    json_t *run = NULL;

    if (!cases || !res) {
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

        psc_lat_cases(ctx, test, devs, ndev, cases, cap, &n);
        for (size_t k = 0; k < n && k < cap; k++) {
            char a[16], b[16];

            if (tty)
                fprintf(stderr, "\r\033[K%s %s -> %s", psc_lat_test_info(test)->name,
                        psc_endpoint_name(cases[k].src, a, sizeof(a)), psc_endpoint_name(cases[k].dst, b, sizeof(b)));
            if (psc_lat_run(ctx, &cases[k], &lo, &res[k]) != PSC_OK) {
                res[k].c = cases[k];
                res[k].status = PSC_RESULT_FAILED;
                snprintf(res[k].reason, sizeof(res[k].reason), "invalid case");
            }
            if (!tty)
                fprintf(stderr, "%s %s -> %s: %s %.0f ns p50\n", psc_lat_test_info(test)->name,
                        psc_endpoint_name(cases[k].src, a, sizeof(a)), psc_endpoint_name(cases[k].dst, b, sizeof(b)),
                        psc_result_status_string(res[k].status), res[k].lat[0].p50);
            if (res[k].status == PSC_RESULT_FAILED)
                rc = PSC_EXIT_FAILED;
            if (run)
                json_array_append_new(json_object_get(run, "tests"), psc_json_lat_result(&res[k]));
        }
        if (tty)
            fprintf(stderr, "\r\033[K");
        if (tables)
            psc_render_lat(stdout, test, res, n < cap ? n : cap, devs, ndev);
    }
    rc = psc_cli_write_run(run, o, psc_cli_now() - t0, rc);
out:
    json_decref(run);
    free(cases);
    free(res);
    return rc;
}
