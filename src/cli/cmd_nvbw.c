/*
 * `p2pscope nvbandwidth`: nvbandwidth's chosen tests turned into the p2pscope
 * bw tests they map to (nvbw_map.c), one bw suite call over every GPU (the
 * one bw makes), then nvbandwidth's text or JSON (render_nvbw.c). A test
 * with no path on this machine (too few GPUs), or no p2pscope bandwidth test,
 * is printed as nvbandwidth prints a waived test.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "report/render_nvbw.h"
#include "report/text.h"

int psc_cmd_nvbw_list(void)
{
    psc_render_nvbw_version(stdout);
    psc_render_nvbw_list(stdout);
    return PSC_EXIT_OK;
}

/* The nvbandwidth tests to print, in order: -t's or -p's, else all of them. */
static int psc__nvbw_chosen(const psc_cli_opts_t *o, int *out)
{
    if (o->nvbw.ntests) {
        memcpy(out, o->nvbw.tests, sizeof(int) * (size_t)o->nvbw.ntests);
        return o->nvbw.ntests;
    }
    for (int k = 0; k < psc_nvbw_test_count(); k++)
        out[k] = k;
    return psc_nvbw_test_count();
}

/* Into run's test list, once each: the p2pscope test of each chosen nvbandwidth test that has a path on ngpus GPUs. */
static void psc__nvbw_bw_tests(const int *chosen, int n, int ngpus, psc_cli_opts_t *run)
{
    run->ntests = 0;
    for (int i = 0; i < n; i++) {
        const psc_nvbw_test_t *t = psc_nvbw_test_at(chosen[i]);
        psc_bw_test_t bt;
        int dup = 0;

        if (!t->test || psc_bw_test_from_name(t->test, &bt) != PSC_OK || psc_bw_test_info(bt)->min_gpus > ngpus)
            continue;
        for (int k = 0; k < run->ntests; k++)
            dup |= run->tests[k] == bt;
        if (!dup && run->ntests < PSC_CLI_MAX_TESTS)
            run->tests[run->ntests++] = bt;
    }
}

/* The chosen tests in nvbandwidth's text or JSON; PSC_EXIT_NO_MEMORY or PSC_EXIT_FAILED when JSON cannot be made. */
static int psc__nvbw_print(const psc_cli_opts_t *o, const int *chosen, int n, const psc_bw_suite_t *s,
                           const psc_system_info_t *sys, const psc_device_info_t *devs, int ndev,
                           const psc_nvbw_render_opts_t *ro)
{
    json_t *doc = NULL;
    int rc = PSC_EXIT_OK;

    if (!o->nvbw.json) {
        psc_render_nvbw_version(stdout);
        psc_render_nvbw_machine(stdout, sys, devs, ndev, ro);
        for (int i = 0; i < n; i++)
            psc_render_nvbw_test(stdout, psc_nvbw_test_at(chosen[i]), s, ro);
        psc_render_nvbw_footer(stdout);
        return rc;
    }
    if (!(doc = psc_json_nvbw_new(sys, devs, ndev, ro)))
        rc = PSC_EXIT_NO_MEMORY;
    for (int i = 0; rc == PSC_EXIT_OK && i < n; i++)
        if (psc_json_nvbw_add_test(doc, psc_nvbw_test_at(chosen[i]), s, ro) != 0)
            rc = PSC_EXIT_NO_MEMORY;
    if (rc == PSC_EXIT_OK && psc_json_nvbw_print(stdout, doc) != 0)
        rc = PSC_EXIT_FAILED;
    if (rc == PSC_EXIT_NO_MEMORY)
        psc_report_printf(stderr, "p2pscope: out of host memory making the JSON document\n");
    json_decref(doc);
    return rc;
}

int psc_cmd_nvbw(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    psc_cli_opts_t run; /* the command line with the bw tests */
    int chosen[PSC_CLI_MAX_NVBW_TESTS], n, ndev = psc_device_count(ctx), rc = 0;
    psc_device_info_t devs[PSC_MAX_GPUS];
    psc_nvbw_render_opts_t ro = {.verbose = o->nvbw.verbose, .perf = o->nvbw.perf};
    psc_system_info_t sys;
    psc_bw_suite_t *s = NULL;
    char host[256] = "";

    n = psc__nvbw_chosen(o, chosen);
    run = *o;
    psc__nvbw_bw_tests(chosen, n, ndev, &run);
    if (run.ntests && !(s = psc_cli_bw_suite(ctx, &run, NULL, NULL, &rc)))
        return rc;
    psc_system_info(ctx, &sys);
    for (int i = 0; i < ndev && i < PSC_MAX_GPUS; i++)
        psc_device_info(ctx, i, &devs[i]);
    if (gethostname(host, sizeof(host) - 1) != 0)
        snprintf(host, sizeof(host), "unknown");
    ro.hostname = host;
    if (o->nvbw.buffer_mib < PSC_NVBW_DEFAULT_MIB) /* nvbandwidth's note, word for word (its "64MB" included) */
        ro.warning = "NOTE: You have chosen a buffer size that is smaller than the default buffer size. It is suggested "
                     "to use the default buffer size (64MB) to achieve maximal peak bandwidth.";
    rc = psc__nvbw_print(o, chosen, n, s, &sys, devs, ndev < PSC_MAX_GPUS ? ndev : PSC_MAX_GPUS, &ro);
    if (rc == PSC_EXIT_OK && s && s->nfailed)
        rc = PSC_EXIT_FAILED;
    psc_bw_suite_free(s);
    return rc;
}
