/*
 * check: one library call (psc_node_check_run) measures the node; its items against --expect's bounds (auto by
 * default) and --baseline's figures; a line per item and the verdict, the JSON, the page. Exit 0 healthy, 1
 * unhealthy, 3 cannot check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "report/check.h"
#include "report/fleet.h"
#include "report/json.h"
#include "report/render.h"
#include "report/render_doctor.h"
#include "report/text.h"

/* The run's document: the machine and the GPUs checked (always made: --baseline reads its GPUs). */
static json_t *psc__run(psc_context_t *ctx, const int *devs, int n, int tables)
{
    psc_device_info_t info[PSC_MAX_GPUS];
    psc_system_info_t sys;

    psc_system_info(ctx, &sys);
    for (int i = 0; i < n && i < PSC_MAX_GPUS; i++)
        psc_device_info(ctx, devs[i], &info[i]);
    if (tables)
        psc_render_devices(stdout, &sys, info, n);
    return psc_json_run_new("check", &sys, info, n);
}

/* --baseline before anything is measured: readable, a check's JSON, of this node (an empty report takes nothing). */
static int psc__baseline_ok(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    int devs[PSC_MAX_GPUS], n = o->ndev ? o->ndev : psc_device_count(ctx), rc = PSC_EXIT_OK;
    psc_check_report_t empty = {0};
    json_t *run;
    char err[512];

    if (!o->baseline)
        return PSC_EXIT_OK;
    for (int i = 0; i < n && i < PSC_MAX_GPUS; i++)
        devs[i] = o->ndev ? o->devs[i] : i;
    if (!(run = psc__run(ctx, devs, n, 0)))
        return PSC_EXIT_NO_MEMORY;
    if (psc_check_baseline(&empty, run, o->baseline, err, sizeof(err)) != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: %s\n", err);
        rc = PSC_EXIT_USAGE;
    }
    json_decref(run);
    return rc;
}

/* The bounds: the --expect file's, or auto's from the facts and what was measured. */
static int psc__rules(const psc_node_check_t *c, const psc_cli_opts_t *o, psc_expect_t **e)
{
    char err[512];
    psc_status_t st;

    if (o->expect && strcmp(o->expect, "auto") != 0)
        st = psc_expect_load(o->expect, e, err, sizeof(err));
    else
        st = psc_check_auto_rules(c, e, err, sizeof(err));
    if (st != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: %s\n", err);
        return psc_cli_exit_of(st, PSC_EXIT_USAGE);
    }
    return PSC_EXIT_OK;
}

/* The doctor's errors and warnings in the JSON, beside the check (the info findings stay with `doctor`). */
static json_t *psc__findings(const psc_node_check_t *c)
{
    psc_finding_t *v = calloc(c->nfindings + 1, sizeof(*v));
    size_t n = 0;
    json_t *j;

    if (!v)
        return NULL;
    for (size_t k = 0; k < c->nfindings; k++)
        if (c->findings[k].severity != PSC_SEV_INFO)
            v[n++] = c->findings[k];
    j = psc_json_findings(v, n);
    free(v);
    return j;
}

/* A fleet's node (--fleet's child): the check's summary to the rank that sent it, nothing else. */
static int psc__fleet_summary(const psc_check_report_t *r, const psc_cli_opts_t *o, int rc)
{
    json_t *sum = psc_fleet_summary(r, rc);
    char *text = sum ? json_dumps(sum, JSON_COMPACT) : NULL;
    int ok = text && psc_write_all(o->fleet_out, text, strlen(text)) == 0;

    free(text);
    json_decref(sum);
    if (!ok)
        psc_report_printf(stderr, "p2pscope: %s: the node's summary was not sent\n", sum ? "cannot write to the rank"
                          : "out of host memory");
    return ok ? rc : sum ? PSC_EXIT_FAILED : PSC_EXIT_NO_MEMORY;
}

/* The outputs: the lines (or the verdict on stderr under --json), the JSON, the page; the exit code. */
static int psc__outputs(const psc_node_check_t *c, psc_check_report_t *r, const psc_cli_opts_t *o, json_t *run,
                        double wall_s)
{
    int rc = r->failed ? PSC_EXIT_FAILED : PSC_EXIT_OK;
    char err[512];
    char *page;

    if (o->fleet_out)
        return psc__fleet_summary(r, o, rc);
    if (psc_cli_tables(o))
        psc_render_check(stdout, r);
    else
        psc_render_check_verdict(stderr, r);
    if (o->json) {
        psc_json_run_set(run, "check", psc_json_check(r, rc));
        psc_json_run_set(run, "findings", psc__findings(c));
        rc = psc_cli_write_run(run, o, wall_s, rc);
    }
    if (!o->html_path)
        return rc;
    if (!(page = psc_html_check(r, "p2pscope check"))) {
        psc_report_printf(stderr, "p2pscope: out of host memory: the page was not written\n");
        return PSC_EXIT_NO_MEMORY;
    }
    if (psc_write_file_atomic(o->html_path, page, strlen(page), err, sizeof(err)) != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: %s\n", err);
        rc = rc == PSC_EXIT_OK ? PSC_EXIT_FAILED : rc;
    }
    free(page);
    return rc;
}

int psc_cmd_check(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    const double t0 = psc_cli_now();
    psc_node_check_opts_t co;
    psc_node_check_t *c = NULL;
    psc_check_report_t *r = NULL;
    psc_expect_t *e = NULL;
    json_t *run = NULL;
    char err[512];
    psc_status_t st;
    int rc;

    if ((rc = psc__baseline_ok(ctx, o)) != PSC_EXIT_OK)
        return rc;
    psc_node_check_opts_init(&co);
    co.devices = o->devs;
    co.ndev = o->ndev;
    co.verify_load = !o->no_load;
    if (o->measure.size) { /* a smaller check: every path's copies, the integrity pass's and the all-reduce's at most */
        co.bw_size = o->measure.size;
        co.verify_max_size = o->measure.size < co.verify_max_size ? o->measure.size : co.verify_max_size;
        co.coll_large = o->measure.size > 2 * co.coll_small ? o->measure.size : 2 * co.coll_small;
    }
    if (isatty(STDERR_FILENO) && !o->fleet_out)
        fprintf(stderr, "p2pscope check: measuring (about 15 s on 2 GPUs)...\n");
    if ((st = psc_node_check_run(ctx, &co, &c)) != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: cannot check: %s\n", psc_context_last_error(ctx));
        return psc_cli_exit_of(st, st == PSC_ERR_INVALID ? PSC_EXIT_USAGE : PSC_EXIT_ENV);
    }
    if ((rc = psc__rules(c, o, &e)) == PSC_EXIT_OK && (st = psc_check_report(c, e, &r)) != PSC_OK)
        rc = PSC_EXIT_NO_MEMORY;
    if (rc == PSC_EXIT_OK) {
        r->bounds = o->expect ? o->expect : "auto";
        run = psc__run(ctx, c->devices, c->ndev, psc_cli_tables(o) && !o->fleet_out);
        if (!run)
            rc = PSC_EXIT_NO_MEMORY;
        else if (o->baseline && psc_check_baseline(r, run, o->baseline, err, sizeof(err)) != PSC_OK) {
            psc_report_printf(stderr, "p2pscope: %s\n", err);
            rc = PSC_EXIT_USAGE;
        }
    }
    if (rc == PSC_EXIT_OK)
        rc = psc__outputs(c, r, o, run, psc_cli_now() - t0);
    if (rc == PSC_EXIT_NO_MEMORY)
        psc_report_printf(stderr, "p2pscope: out of host memory: the check was not judged\n");
    json_decref(run);
    psc_check_report_free(r);
    psc_expect_free(e);
    psc_node_check_free(c);
    return rc;
}
