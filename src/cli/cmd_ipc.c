/* ipc: the command line's workers into one psc_ipc_run, its tables and JSON run. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report/json.h"
#include "report/render.h"
#include "report/render_ipc.h"
#include "report/text.h"

/* Each GPU the workers use once, for the JSON document's "devices" and the inventory table. */
static int psc__ipc_gpus(psc_context_t *ctx, const int *devs, int ndev, psc_device_info_t *info)
{
    int n = 0;

    for (int i = 0; i < ndev; i++) {
        int seen = 0;

        for (int k = 0; k < n; k++)
            seen |= info[k].index == devs[i];
        if (!seen && n < PSC_MAX_GPUS && psc_device_info(ctx, devs[i], &info[n]) == PSC_OK)
            n++;
    }
    return n;
}

/* The workers inherit the corruption test from the environment: they are other processes than this context's. */
int psc_cli_ipc_corrupt_env(const psc_cli_opts_t *o)
{
    char value[32];

    if (o->hooks.corrupt_offset < 0)
        return PSC_EXIT_OK;
    snprintf(value, sizeof(value), "%lld", (long long)o->hooks.corrupt_offset);
    if (setenv("P2PSCOPE_TEST_CORRUPT_OFFSET", value, 1) != 0) {
        psc_report_printf(stderr, "p2pscope: cannot set P2PSCOPE_TEST_CORRUPT_OFFSET for the workers: out of host memory\n");
        return PSC_EXIT_NO_MEMORY;
    }
    return PSC_EXIT_OK;
}

int psc_cmd_ipc_run(psc_context_t *ctx, const psc_cli_opts_t *o, const int *devs, int ndev,
                    int (*publish)(const char *, void *), void *publish_arg)
{
    const double t0 = psc_cli_now();
    psc_device_info_t info[PSC_MAX_GPUS];
    psc_ipc_report_t *r = NULL;
    psc_system_info_t sys;
    psc_ipc_opts_t io;
    json_t *run = NULL;
    psc_status_t st;
    int rc, ngpu;

    if ((rc = psc_cli_ipc_corrupt_env(o)) != PSC_EXIT_OK)
        return rc;
    psc_ipc_opts_default(&io);
    io.measure = o->measure;
    io.methods = o->ipc_methods;
    if (o->round_trips)
        io.round_trips = o->round_trips;
    io.no_local = o->no_local;
    io.publish = publish;
    io.publish_arg = publish_arg;
    if (o->timeout_s > 0)
        io.timeout_ms = o->timeout_s * 1000.0;
    st = psc_ipc_run(ctx, devs, ndev, &io, &r);
    if (st != PSC_OK) {
        const char *why = psc_context_last_error(ctx);

        /* The library's reasons for a run start with "p2pscope ipc:" already. */
        psc_report_printf(stderr, strncmp(why, "p2pscope", 8) ? "p2pscope: %s\n" : "%s\n", why);
        /*
         * A worker that died, stopped answering or answered malformed (PSC_ERR_INVALID: the options were
         * checked here before) fails the run; what this machine cannot do is environment.
         */
        return psc_cli_exit_of(st, st == PSC_ERR_INVALID || st == PSC_ERR_IO || st == PSC_ERR_TIMEOUT
                                       ? PSC_EXIT_FAILED
                                       : PSC_EXIT_ENV);
    }
    rc = psc_ipc_report_nfailed(r) ? PSC_EXIT_FAILED : PSC_EXIT_OK;
    ngpu = psc__ipc_gpus(ctx, r->gpu, r->nranks, info);
    run = psc_cli_run_begin(ctx, o, "ipc", info, ngpu, &sys);
    if (psc_cli_tables(o)) {
        psc_render_ipc(stdout, r);
        psc_render_wall_time(stdout, psc_cli_now() - t0,
                             rc == PSC_EXIT_FAILED ? "; a pair FAILED (see its line under its method's tables)" : "");
    }
    if (run) /* a part that could not be added marks the run incomplete: finishing it then fails */
        (void)psc_json_run_add_ipc(run, r, &io, r->gpu, r->nranks);
    if (o->json && !run)
        rc = psc_cli_write_json(NULL, o);
    else
        rc = psc_cli_write_run(run, o, psc_cli_now() - t0, rc);
    json_decref(run);
    psc_ipc_report_free(r);
    return rc;
}

int psc_cmd_ipc(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    /* No -d: the library's default, a worker per GPU (two on a machine with one). */
    return psc_cmd_ipc_run(ctx, o, o->ndev ? o->devs : NULL, o->ndev, NULL, NULL);
}
