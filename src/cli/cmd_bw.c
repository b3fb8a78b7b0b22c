/* report and bw: run the chosen bandwidth tests over the chosen GPUs, render, and write JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "report/json.h"
#include "report/render.h"

static double psc__now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int psc__is_pair(psc_bw_test_t t)
{
    return t == PSC_BW_GPU_TO_GPU_READ_CE || t == PSC_BW_GPU_TO_GPU_WRITE_CE;
}

/* Progress on stderr: a live line on a terminal, one line per finished case otherwise. */
static void psc__progress(const psc_bw_case_t *c, const psc_bw_result_t *r, size_t k, size_t total, int tty)
{
    char a[16], b[16];

    psc_endpoint_name(c->src, a, sizeof(a));
    psc_endpoint_name(c->dst, b, sizeof(b));
    if (tty && !r) {
        fprintf(stderr, "\r\033[K[%zu/%zu] %s %s -> %s", k, total, psc_bw_test_name(c->test), a, b);
    } else if (!tty && r) {
        if (r->status == PSC_RESULT_PASSED)
            fprintf(stderr, "[%zu/%zu] %s %s -> %s: %.2f GB/s passed\n", k, total, psc_bw_test_name(c->test), a,
                    b, r->stats.median);
        else
            fprintf(stderr, "[%zu/%zu] %s %s -> %s: %s: %s\n", k, total, psc_bw_test_name(c->test), a, b,
                    psc_result_status_string(r->status), r->reason);
    }
    fflush(stderr);
}

typedef struct {
    psc_bw_test_t tests[PSC_BW_TEST_COUNT];
    int ntests;
    int devs[PSC_CLI_MAX_DEVS];
    int ndev;
} psc__plan_t;

/* Tests and GPUs to run; PSC_EXIT_ENV when a named test cannot run with these GPUs. */
static int psc__plan(const psc_context_t *ctx, const psc_cli_opts_t *o, psc__plan_t *p)
{
    p->ndev = o->ndev ? o->ndev : psc_device_count(ctx);
    for (int i = 0; i < p->ndev; i++)
        p->devs[i] = o->ndev ? o->devs[i] : i;
    p->ntests = o->ntests ? o->ntests : PSC_BW_TEST_COUNT;
    for (int t = 0; t < p->ntests; t++) {
        p->tests[t] = o->ntests ? o->tests[t] : (psc_bw_test_t)t;
        if (o->ntests && psc__is_pair(p->tests[t]) && p->ndev < 2) {
            fprintf(stderr, "p2pscope: %s needs at least 2 GPUs; %d %s\n", psc_bw_test_name(p->tests[t]),
                    p->ndev, o->ndev ? "selected with --devices" : "on this machine");
            return PSC_EXIT_ENV;
        }
    }
    return PSC_EXIT_OK;
}

size_t psc_cli_run_cases(psc_context_t *ctx, const psc_cli_opts_t *o, psc_bw_test_t test, const int *devs, int ndev,
                         psc_bw_result_t *res, size_t cap, size_t *done, size_t total)
{
    const int tty = isatty(STDERR_FILENO);
    psc_bw_case_t *cases = calloc(cap, sizeof(*cases));
    size_t n = 0;

    if (!cases)
        return 0;
    psc_bw_cases(ctx, test, devs, ndev, cases, cap, &n);
    if (n > cap)
        n = cap;
    for (size_t k = 0; k < n; k++) {
        psc__progress(&cases[k], NULL, *done + 1, total, tty);
        if (psc_bw_run(ctx, &cases[k], &o->measure, &res[k]) != PSC_OK) {
            res[k].c = cases[k];
            res[k].status = PSC_RESULT_FAILED;
            snprintf(res[k].reason, sizeof(res[k].reason), "%s", psc_context_last_error(ctx));
        }
        psc__progress(&cases[k], &res[k], ++*done, total, tty);
    }
    if (tty)
        fprintf(stderr, "\r\033[K");
    free(cases);
    return n;
}

static json_t *psc__json_waived(psc_bw_test_t t, const char *why)
{
    return json_pack("{s:s,s:s,s:s,s:s}", "name", psc_bw_test_name(t), "title", psc_bw_test_title(t), "status",
                     "waived", "reason", why);
}

int psc_cmd_bw(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    const double t0 = psc__now();
    const int tables = psc_cli_tables(o);
    const size_t cap = (size_t)PSC_CLI_MAX_DEVS * PSC_CLI_MAX_DEVS;
    psc_device_info_t devs[PSC_CLI_MAX_DEVS];
    psc_bw_result_t *res = NULL;
    psc_system_info_t sys;
    json_t *run = NULL;
    size_t total = 0, done = 0;
    psc_facts_t *facts = NULL;
    int rc, failed = 0;
    psc__plan_t p;
    char err[256];

    if ((rc = psc__plan(ctx, o, &p)) != PSC_EXIT_OK)
        return rc;
    psc_system_info(ctx, &sys);
    for (int i = 0; i < p.ndev; i++)
        psc_device_info(ctx, p.devs[i], &devs[i]);
    if (tables)
        psc_render_devices(stdout, &sys, devs, p.ndev);
    if (o->json) {
        run = psc_json_run_new(o->cmd == PSC_CMD_REPORT ? "report" : "bw", &sys, devs, p.ndev);
        psc_json_run_set_parameters(run, &o->measure, p.devs, p.ndev, p.tests, p.ntests);
    }
    if (o->cmd == PSC_CMD_REPORT)
        facts = psc_report_begin(ctx, o, run);
    res = calloc(cap, sizeof(*res));
    if (!res) {
        fprintf(stderr, "p2pscope: out of host memory\n");
        rc = PSC_EXIT_ENV;
        goto out;
    }
    for (int t = 0; t < p.ntests; t++) {
        size_t n = 0;

        psc_bw_cases(ctx, p.tests[t], p.devs, p.ndev, NULL, 0, &n); /* count only */
        total += n;
    }

    for (int t = 0; t < p.ntests; t++) {
        size_t n = psc_cli_run_cases(ctx, o, p.tests[t], p.devs, p.ndev, res, cap, &done, total);

        for (size_t k = 0; k < n; k++) {
            failed |= res[k].status == PSC_RESULT_FAILED;
            if (run)
                psc_json_run_add_test(run, psc_json_bw_result(&res[k], &o->measure));
        }
        psc_report_note_results(facts, res, n);
        if (run && n == 0)
            psc_json_run_add_test(run, psc__json_waived(p.tests[t], "needs at least 2 GPUs"));
        if (tables)
            psc_render_bw(stdout, p.tests[t], res, n, p.devs, p.ndev, o->measure.samples);
    }
    if (facts && psc_report_end(facts, o, run) > 0)
        failed = 1;
    rc = failed ? PSC_EXIT_FAILED : PSC_EXIT_OK;
    if (tables)
        printf("\nwall time: %.1f s\n", psc__now() - t0);
    if (run) {
        psc_json_run_finish(run, psc__now() - t0, rc);
        if (psc_json_write(run, o->json_path, err, sizeof(err)) != PSC_OK) {
            fprintf(stderr, "p2pscope: %s\n", err);
            rc = PSC_EXIT_FAILED;
        }
    }
out:
    psc_facts_free(facts);
    json_decref(run);
    free(res);
    return rc;
}
