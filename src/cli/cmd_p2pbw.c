/*
 * `p2pscope p2pbw`: one library call (psc_p2pbw_run) over every GPU, then
 * cuda-samples' p2pBandwidthLatencyTest's text (render_p2pbw.c) or, with
 * --json, the run document with the same figures; failed cases named on
 * stderr and exit 1.
 */
#include <stdio.h>
#include <unistd.h>

#include "cli.h"
#include "report/json.h"
#include "report/render_p2pbw.h"
#include "report/render_progress.h"
#include "report/text.h"

/* Progress on stderr (tty: a live line). */
static void psc__p2pbw_progress(const psc_bw_suite_progress_t *p, void *user)
{
    psc_render_bw_progress(stderr, p, *(const int *)user);
}

/* The run document with the figures under "p2pbw"; NULL only out of memory. */
static json_t *psc__p2pbw_json(psc_context_t *ctx, const psc_p2pbw_t *r, const psc_device_info_t *devs,
                               const psc_p2pbw_render_opts_t *ro)
{
    psc_system_info_t sys;
    json_t *run;

    psc_system_info(ctx, &sys);
    if (!(run = psc_json_run_new("p2pbw", &sys, devs, r->ndev)))
        return NULL;
    if (psc_json_run_set(run, "p2pbw", psc_json_p2pbw(r, ro)) != PSC_OK) {
        json_decref(run);
        return NULL;
    }
    return run;
}

int psc_cmd_p2pbw(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    const double t0 = psc_cli_now();
    const psc_p2pbw_render_opts_t ro = {o->p2pbw.p2p_read, o->p2pbw.sm_copy, o->p2pbw.num_elems};
    int tty = isatty(STDERR_FILENO), rc; /* tty: the progress callback's argument */
    psc_p2pbw_opts_t po = {o->p2pbw.sm_copy, o->p2pbw.p2p_read, &o->measure, psc__p2pbw_progress, &tty};
    psc_device_info_t devs[PSC_MAX_GPUS];
    psc_p2pbw_t *r = NULL;
    json_t *run = NULL;
    psc_status_t st;

    st = psc_p2pbw_run(ctx, &po, &r);
    if (tty)
        fprintf(stderr, "\r\033[K");
    if (st != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: %s\n", psc_context_last_error(ctx));
        return psc_cli_exit_of(st, st == PSC_ERR_INVALID ? PSC_EXIT_USAGE : PSC_EXIT_ENV);
    }
    for (int i = 0; i < r->ndev; i++)
        psc_device_info(ctx, i, &devs[i]);
    if (psc_cli_tables(o))
        psc_render_p2pbw(stdout, r, devs, &ro);
    rc = psc_render_p2pbw_failures(stderr, r) ? PSC_EXIT_FAILED : PSC_EXIT_OK;
    if (o->json && !(run = psc__p2pbw_json(ctx, r, devs, &ro))) {
        psc_report_printf(stderr, "p2pscope: out of host memory making the JSON document\n");
        rc = PSC_EXIT_NO_MEMORY;
    }
    if (run)
        rc = psc_cli_write_run(run, o, psc_cli_now() - t0, rc);
    json_decref(run);
    psc_p2pbw_free(r);
    return rc;
}
