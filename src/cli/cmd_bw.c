/* report and bw: parse into one suite call (report: psc_bw_run_report), render its tables, write its JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "report/json.h"
#include "report/render.h"
#include "report/render_progress.h"
#include "report/render_suite.h"
#include "report/text.h"

/* Progress on stderr (tty: a live line). */
static void psc__progress(const psc_bw_suite_progress_t *p, void *user)
{
    psc_render_bw_progress(stderr, p, *(const int *)user);
}

psc_bw_suite_t *psc_cli_bw_suite(psc_context_t *ctx, const psc_cli_opts_t *o, psc_facts_t *evidence,
                                 psc_nvlink_traffic_t *traffic, int *rc)
{
    int tty = isatty(STDERR_FILENO); /* the progress callback's argument */
    psc_bw_suite_t *s = NULL;
    psc_bw_suite_opts_t so;
    psc_status_t st;

    psc_bw_suite_opts_default(&so);
    so.tests = o->tests;
    so.ntests = o->ntests;
    so.measure = &o->measure;
    so.progress = psc__progress;
    so.user = &tty;
    if (!traffic) { /* the watch: every GPU, one size; --devices and the sweep are not its */
        so.devices = o->devs;
        so.ndev = o->ndev;
        so.sweep_min = o->sweep_min;
        so.sweep_max = o->sweep_max;
        so.sweep_factor = o->sweep_factor;
    }
    if (traffic)
        st = psc_nvlink_watch(ctx, &so, &s, traffic);
    else if (evidence)
        st = psc_bw_run_report(ctx, &so, evidence, &s);
    else
        st = psc_bw_run_suite(ctx, &so, &s);
    if (tty)
        fprintf(stderr, "\r\033[K");
    if (st != PSC_OK) {
        /* The refusal names the test; the option that chose the GPUs is the command line's. */
        psc_report_printf(stderr, "p2pscope: %s%s\n", psc_context_last_error(ctx),
                          st == PSC_ERR_UNSUPPORTED && o->ndev && !traffic ? " with --devices" : "");
        *rc = psc_cli_exit_of(st, st == PSC_ERR_INVALID ? PSC_EXIT_USAGE : PSC_EXIT_ENV);
        return NULL;
    }
    *rc = s->nfailed ? PSC_EXIT_FAILED : PSC_EXIT_OK;
    return s;
}

int psc_cmd_bw(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    const double t0 = psc_cli_now();
    const int tables = psc_cli_tables(o);
    psc_device_info_t devs[PSC_MAX_GPUS];
    psc_system_info_t sys;
    psc_facts_t *facts = NULL;
    psc_finding_t *findings = NULL; /* the doctor's, report only: for the page */
    size_t nfindings = 0;
    psc_expect_t *expect = NULL;
    psc_bw_suite_t *s;
    json_t *run = NULL;
    int rc;

    if ((rc = psc_cli_expect_load(ctx, o, &expect)) != PSC_EXIT_OK) /* before anything is measured */
        return rc;
    if (o->cmd == PSC_CMD_REPORT)
        facts = psc_report_facts(ctx); /* before the tests: the machine as it was found */
    if (!(s = psc_cli_bw_suite(ctx, o, facts, NULL, &rc))) {
        psc_facts_free(facts);
        psc_expect_free(expect);
        return rc;
    }
    psc_system_info(ctx, &sys);
    for (int i = 0; i < s->ndev; i++)
        psc_device_info(ctx, s->devices[i], &devs[i]);
    if (tables)
        psc_render_devices(stdout, &sys, devs, s->ndev);
    if (o->json) {
        psc_bw_test_t *tests = calloc((size_t)s->ntests + 1, sizeof(*tests));

        for (int t = 0; tests && t < s->ntests; t++)
            tests[t] = s->tests[t].test;
        run = psc_json_run_new(o->cmd == PSC_CMD_REPORT ? "report" : "bw", &sys, devs, s->ndev);
        if (!tests || psc_json_run_set_parameters(run, &o->measure, s->devices, s->ndev, tests, s->ntests) != PSC_OK)
            psc_json_run_set(run, "parameters", NULL); /* marks the run incomplete: it is not written */
        free(tests);
    }
    psc_report_topology(facts, o, run);
    if (run)
        psc_json_run_add_bw_suite(run, s);
    if (tables)
        psc_render_bw_suite(stdout, s);
    if (facts && psc_report_end(facts, o, run, &findings, &nfindings) > 0)
        rc = PSC_EXIT_FAILED;
    if (tables)
        psc_render_bw_footer(stdout, s, o->measure.verify, psc_cli_now() - t0);
    rc = psc_cli_expect_bw(expect, s, o, run, rc);
    rc = psc_cli_write_run(run, o, psc_cli_now() - t0, rc);
    rc = psc_cli_write_page(o, o->cmd == PSC_CMD_REPORT ? "report" : "bw", &sys, devs, s->ndev, s, NULL, facts,
                            findings, nfindings, psc_cli_now() - t0, rc);
    free(findings);
    psc_expect_free(expect);
    psc_facts_free(facts);
    json_decref(run);
    psc_bw_suite_free(s);
    return rc;
}
