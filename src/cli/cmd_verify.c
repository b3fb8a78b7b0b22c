/* verify: every path moves the right bytes; --seconds makes it a stress test. Wrong data feeds the doctor. */
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

/* Wrong data between two GPUs is the doctor's p2p_corrupts finding. */
static int psc__feed_doctor(psc_context_t *ctx, const psc_verify_path_sum_t *paths, size_t n, int tables, json_t *run)
{
    psc_facts_t *f = psc_facts_new();
    psc_finding_t *v = NULL;
    size_t nf = 0, errors = 0;

    if (!f || psc_facts_gather(ctx, f) != PSC_OK) {
        psc_facts_free(f);
        return 0;
    }
    psc_facts_note_verify_sums(f, paths, n);
    v = psc_cli_doctor(f, &nf);
    for (size_t k = 0; k < nf; k++)
        errors += strcmp(v[k].rule, "p2p_corrupts") == 0;
    if (tables)
        psc_render_findings_of_rule(stdout, v, nf, "p2p_corrupts");
    if (run)
        json_object_set_new(run, "findings", psc_json_findings(v, nf));
    free(v);
    psc_facts_free(f);
    return (int)errors;
}

int psc_cmd_verify(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    const double t0 = psc_cli_now();
    const int tables = psc_cli_tables(o);
    int tty = isatty(STDERR_FILENO); /* the progress callback's argument */
    psc_device_info_t info[PSC_MAX_GPUS];
    psc_verify_suite_t *s = NULL;
    psc_system_info_t sys;
    json_t *run = NULL;
    psc_status_t st;
    int rc = PSC_EXIT_OK;

    st = psc_verify_run_suite(ctx, o->tests, o->ntests, o->devs, o->ndev, &o->verify, o->seconds, !o->no_load,
                              psc__progress, &tty, &s);
    if (tty)
        fprintf(stderr, "\r\033[K");
    if (st != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: %s%s\n", psc_context_last_error(ctx),
                          st == PSC_ERR_UNSUPPORTED && o->ndev ? " with --devices" : "");
        return psc_cli_exit_of(st, st == PSC_ERR_UNSUPPORTED ? PSC_EXIT_ENV : PSC_EXIT_FAILED);
    }
    if (s->npaths == 0) {
        fprintf(stderr, "p2pscope: nothing to verify: no test has a path with these GPUs\n");
        psc_verify_suite_free(s);
        return PSC_EXIT_NA;
    }
    if (s->load_error[0] || s->nfailed || s->load_stop_error[0] || s->load_bad_bytes)
        rc = PSC_EXIT_FAILED;
    if (s->stress.idle_pass)
        fprintf(stderr, "p2pscope: no path could run in pass %u; the stress run stops\n", s->stress.idle_pass);
    if (s->load_stop_error[0])
        psc_report_printf(stderr, "p2pscope: the background traffic failed: %s\n", s->load_stop_error);
    psc_system_info(ctx, &sys);
    for (int i = 0; i < s->ndev; i++)
        psc_device_info(ctx, s->devices[i], &info[i]);
    if (tables) {
        psc_render_devices(stdout, &sys, info, s->ndev);
        if (s->nload)
            psc_render_load(stdout, s->load, s->nload);
        psc_render_verify(stdout, s->paths, s->npaths, psc_cli_now() - t0);
    }
    if (o->json) {
        run = psc_json_run_new("verify", &sys, info, s->ndev);
        psc_json_run_add_verify_suite(run, s, o->verify.seed);
    }
    if (rc == PSC_EXIT_FAILED && psc__feed_doctor(ctx, s->paths, s->npaths, tables, run) > 0)
        rc = PSC_EXIT_FAILED;
    rc = psc_cli_write_run(run, o, psc_cli_now() - t0, rc);
    json_decref(run);
    psc_verify_suite_free(s);
    return rc;
}
