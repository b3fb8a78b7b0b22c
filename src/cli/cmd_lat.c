/* lat: parse into one psc_lat_run_suite call, render its tables and the timers used, write its JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "report/json.h"
#include "report/render.h"
#include "report/render_progress.h"
#include "report/render_suite.h"
#include "report/text.h"

int psc_cmd_lat_list(const psc_cli_opts_t *o)
{
    if (o->json)
        return psc_cli_list_json("lat_list", psc_lat_registry(), o);
    psc_render_test_list(stdout, psc_lat_registry(), 32);
    return PSC_EXIT_OK;
}

/* Progress on stderr (tty: a live line). */
static void psc__progress(const psc_lat_case_t *c, const psc_lat_result_t *r, void *user)
{
    psc_render_lat_progress(stderr, c, r, *(const int *)user);
}

int psc_cmd_lat(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    const double t0 = psc_cli_now();
    const int tables = psc_cli_tables(o);
    int tty = isatty(STDERR_FILENO); /* the progress callback's argument */
    psc_device_info_t info[PSC_MAX_GPUS];
    psc_lat_suite_t *s = NULL;
    psc_expect_t *expect = NULL;
    psc_system_info_t sys;
    psc_lat_suite_opts_t so;
    psc_lat_opts_t lo;
    json_t *run = NULL;
    psc_status_t st;
    int rc;

    if ((rc = psc_cli_expect_load(ctx, o, &expect)) != PSC_EXIT_OK) /* before anything is measured */
        return rc;
    psc_lat_opts_default(&lo);
    if (o->samples_given) /* samples per case, or per size */
        lo.samples = o->measure.samples;
    psc_lat_suite_opts_default(&so);
    so.tests = o->tests;
    so.ntests = o->ntests;
    so.devices = o->devs;
    so.ndev = o->ndev;
    so.lat = &lo;
    so.progress = psc__progress;
    so.user = &tty;
    st = psc_lat_run_suite(ctx, &so, &s);
    if (tty)
        fprintf(stderr, "\r\033[K");
    if (st != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: %s\n", psc_context_last_error(ctx));
        psc_expect_free(expect);
        return psc_cli_exit_of(st, st == PSC_ERR_INVALID ? PSC_EXIT_USAGE : PSC_EXIT_ENV);
    }
    rc = s->nfailed ? PSC_EXIT_FAILED : PSC_EXIT_OK;
    for (int i = 0; i < s->ndev; i++)
        psc_device_info(ctx, s->devices[i], &info[i]);
    run = psc_cli_run_begin(ctx, o, "lat", info, s->ndev, &sys);
    if (tables) {
        psc_render_lat_timers(stdout, s->gpu_timer_ns, s->host_timer_ns);
        psc_render_lat_suite(stdout, s);
    }
    if (run)
        psc_json_run_add_lat_suite(run, s);
    rc = psc_cli_expect_lat(expect, s, o, run, rc);
    rc = psc_cli_write_run(run, o, psc_cli_now() - t0, rc);
    rc = psc_cli_write_page(o, "lat", &sys, info, s->ndev, NULL, s, NULL, NULL, 0, psc_cli_now() - t0, rc);
    psc_expect_free(expect);
    json_decref(run);
    psc_lat_suite_free(s);
    return rc;
}
