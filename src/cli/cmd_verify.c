/* verify: every path moves the right bytes; --seconds makes it a stress test. The suite's findings say which pair corrupts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "report/json.h"
#include "report/render.h"
#include "report/render_doctor.h"
#include "report/render_load.h"
#include "report/render_progress.h"
#include "report/render_suite.h"
#include "report/render_verify.h"
#include "report/text.h"

/* Progress on stderr (tty: a live line), and a load that cannot start. */
static void psc__progress(const psc_verify_progress_t *p, const char *load_error, void *user)
{
    psc_render_verify_progress(stderr, p, load_error, *(const int *)user);
}

int psc_cmd_verify(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    const double t0 = psc_cli_now();
    const int tables = psc_cli_tables(o);
    int tty = isatty(STDERR_FILENO); /* the progress callback's argument */
    psc_device_info_t info[PSC_MAX_GPUS];
    psc_verify_suite_t *s = NULL;
    psc_verify_suite_opts_t so;
    psc_system_info_t sys;
    json_t *run = NULL;
    psc_status_t st;
    int rc = PSC_EXIT_OK;

    psc_verify_suite_opts_default(&so);
    so.tests = o->tests;
    so.ntests = o->ntests;
    so.devices = o->devs;
    so.ndev = o->ndev;
    so.verify = &o->verify;
    so.seconds = o->seconds;
    so.with_load = !o->no_load;
    so.progress = psc__progress;
    so.user = &tty;
    st = psc_verify_run_suite(ctx, &so, &s);
    if (tty)
        fprintf(stderr, "\r\033[K");
    if (st != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: %s%s\n", psc_context_last_error(ctx),
                          st == PSC_ERR_UNSUPPORTED && o->ndev ? " with --devices" : "");
        return psc_cli_exit_of(st, st == PSC_ERR_UNSUPPORTED ? PSC_EXIT_ENV : PSC_EXIT_FAILED);
    }
    if (s->npaths == 0) {
        psc_report_printf(stderr, "p2pscope: nothing to verify: no test has a path with these GPUs\n");
        psc_verify_suite_free(s);
        return PSC_EXIT_NA;
    }
    if (s->load_error[0] || s->nfailed || s->load_stop_error[0] || s->load_bad_bytes)
        rc = PSC_EXIT_FAILED;
    if (s->stress.idle_pass)
        psc_report_printf(stderr, "p2pscope: no path could run in pass %u; the stress run stops\n", s->stress.idle_pass);
    if (s->load_stop_error[0])
        psc_report_printf(stderr, "p2pscope: the background traffic failed: %s\n", s->load_stop_error);
    for (int i = 0; i < s->ndev; i++)
        psc_device_info(ctx, s->devices[i], &info[i]);
    run = psc_cli_run_begin(ctx, o, "verify", info, s->ndev, &sys);
    if (tables) {
        if (s->nload)
            psc_render_load(stdout, s->load, s->nload);
        psc_render_verify(stdout, s->paths, s->npaths, psc_cli_now() - t0);
    }
    if (run)
        psc_json_run_add_verify_suite(run, s, o->verify.seed);
    if (s->findings) { /* the suite ran the doctor: wrong data between two GPUs is its p2p_corrupts finding */
        if (tables)
            psc_render_findings_of_rule(stdout, s->findings, s->nfindings, "p2p_corrupts");
        if (run)
            json_object_set_new(run, "findings", psc_json_findings(s->findings, s->nfindings));
    }
    rc = psc_cli_write_run(run, o, psc_cli_now() - t0, rc);
    json_decref(run);
    psc_verify_suite_free(s);
    return rc;
}
