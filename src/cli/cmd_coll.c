/* coll: the command line's GPUs into one psc_coll_run, nccl-tests' table or the JSON run. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report/json.h"
#include "report/render_coll.h"
#include "report/text.h"

/* The exit code of a failed run: what the machine lacks, or a run that failed. */
static int psc__coll_exit(psc_status_t st)
{
    switch (st) {
    case PSC_ERR_UNSUPPORTED: return PSC_EXIT_ENV;       /* no NCCL, no GPU, no CUDA graphs */
    case PSC_ERR_INVALID: return PSC_EXIT_USAGE;         /* what only the run could check: a root past the ranks */
    default: return psc_cli_exit_of(st, PSC_EXIT_FAILED); /* a timeout, a driver or NCCL failure */
    }
}

/* NCCL_TESTS_MIN_BW, as nccl-tests reads it: the run's bound on its average bus bandwidth (the library's rule). */
static int psc__min_bw(psc_coll_opts_t *co)
{
    const char *v = getenv("NCCL_TESTS_MIN_BW");
    char *end;

    if (!v || !*v)
        return PSC_EXIT_OK;
    co->min_busbw_gbs = strtod(v, &end);
    if (*end || !(co->min_busbw_gbs >= 0)) {
        psc_report_printf(stderr, "p2pscope: NCCL_TESTS_MIN_BW='%s': accepted a bandwidth in GB/s, e.g. 300\n", v);
        return PSC_EXIT_USAGE;
    }
    co->min_busbw_set = 1;
    return PSC_EXIT_OK;
}

/* nccl-tests' options of the table: -C, -S, -M, -J's line. */
static void psc__render_opts(const psc_cli_opts_t *o, const psc_coll_report_t *r, psc_coll_render_opts_t *ro)
{
    memset(ro, 0, sizeof(*ro));
    ro->min_bw_set = r->min_busbw_set;
    ro->min_bw_gbs = r->min_busbw_gbs;
    ro->cputime = o->coll_cputime;
    ro->timestamps = o->coll_timestamps;
    ro->memory = o->coll_memory;
    ro->json_out = o->coll_json_nccl;
    ro->last_error = r->nccl_last_error;
}

/* -J FILE: nccl-tests' JSON of the run, written whole or not at all (its path was checked before the run). */
static int psc__nccl_json(const psc_cli_opts_t *o, const psc_coll_report_t *r, const psc_coll_render_opts_t *ro)
{
    extern char **environ;
    psc_coll_nccl_json_opts_t jo;
    char err[512] = "";
    size_t len = 0;
    char *text;
    psc_status_t st;

    memset(&jo, 0, sizeof(jo));
    jo.argc = o->coll_argc;
    jo.argv = o->coll_argv;
    jo.envp = environ;
    jo.cputime = o->coll_cputime;
    jo.identify = o->identify;
    jo.min_bw_set = ro->min_bw_set;
    jo.min_bw_gbs = ro->min_bw_gbs;
    jo.last_error = r->nccl_last_error;
    if (!(text = psc_render_coll_nccl_json(r, &jo, &len))) {
        psc_report_printf(stderr, "p2pscope: -J %s: out of memory\n", o->coll_json_nccl);
        return PSC_EXIT_FAILED;
    }
    st = psc_write_file_atomic(o->coll_json_nccl, text, len, err, sizeof(err));
    free(text);
    if (st != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: -J: %s\n", err);
        return PSC_EXIT_FAILED;
    }
    return PSC_EXIT_OK;
}

/*
 * -N 0: nccl-tests' cycles without end. A run of one cycle after another; the
 * head printed once, each run's rows as it ends; no footer (nccl-tests never
 * reaches it). Ends with the process (a signal), or the first run that fails.
 */
static int psc__coll_forever(psc_context_t *ctx, const psc_cli_opts_t *o, const int *devs, int ndev,
                             psc_coll_opts_t *co, int speaks)
{
    for (unsigned parts = PSC_COLL_PART_HEAD | PSC_COLL_PART_ROWS;; parts = PSC_COLL_PART_ROWS) {
        psc_coll_render_opts_t ro;
        psc_coll_report_t *r = NULL;
        psc_status_t st = psc_coll_run(ctx, devs, ndev, co, &r);

        if (st != PSC_OK) {
            psc_report_printf(stderr, "p2pscope: %s\n", psc_context_last_error(ctx));
            return psc__coll_exit(st);
        }
        psc__render_opts(o, r, &ro);
        ro.parts = parts;
        if (speaks && psc_cli_tables(o))
            psc_render_coll(stdout, r, &ro);
        fflush(stdout);
        psc_coll_report_free(r);
    }
}

int psc_cmd_coll_run(psc_context_t *ctx, const psc_cli_opts_t *o, const int *devs, int ndev,
                     const psc_coll_procs_t *procs, int *ran)
{
    const double t0 = psc_cli_now();
    const int speaks = !procs || procs->proc == 0;
    psc_coll_render_opts_t ro;
    psc_coll_report_t *r = NULL;
    psc_coll_opts_t co = o->coll;
    psc_expect_t *expect = NULL;
    json_t *run = NULL;
    psc_status_t st;
    int rc, erc;

    if ((rc = psc__min_bw(&co)) != PSC_EXIT_OK)
        return rc;
    co.procs = procs;
    if (o->coll_forever)
        return psc__coll_forever(ctx, o, devs, ndev, &co, speaks);
    if ((rc = psc_cli_expect_load(ctx, o, &expect)) != PSC_EXIT_OK) /* every rank alike, before the run */
        return rc;
    if ((st = psc_coll_run(ctx, devs, ndev, &co, &r)) != PSC_OK) {
        const char *why = psc_context_last_error(ctx);

        if (procs && procs->nprocs > 1)
            psc_report_printf(stderr, "p2pscope (rank %d): %s\n", procs->proc,
                              strncmp(why, "p2pscope coll: ", 15) ? why : why + 15);
        else
            psc_report_printf(stderr, strncmp(why, "p2pscope", 8) ? "p2pscope: %s\n" : "%s\n", why);
        psc_expect_free(expect);
        return psc__coll_exit(st);
    }
    *ran = 1;
    psc__render_opts(o, r, &ro);
    rc = r->failed_rows || r->busbw_failed ? PSC_EXIT_FAILED : PSC_EXIT_OK;
    if (speaks && r->failed_rows)
        psc_report_printf(stderr, "p2pscope coll: wrong elements in %d row%s; %s%s\n", r->failed_rows,
                          r->failed_rows == 1 ? "" : "s", r->first_wrong[0] ? "the first: " : "",
                          r->first_wrong[0] ? r->first_wrong : "all found by other ranks than rank 0");
    if (speaks && psc_cli_tables(o))
        psc_render_coll(stdout, r, &ro);
    if (speaks && o->coll_json_nccl && (erc = psc__nccl_json(o, r, &ro)) != PSC_EXIT_OK)
        rc = erc;
    if (speaks && o->json) {
        psc_device_info_t info[PSC_MAX_GPUS];
        psc_system_info_t sys;
        int n = 0;

        psc_system_info(ctx, &sys);
        for (int i = 0; i < ndev && n < PSC_MAX_GPUS; i++)
            if (psc_device_info(ctx, devs[i], &info[n]) == PSC_OK)
                n++;
        if ((run = psc_json_run_new("coll", &sys, info, n)))
            (void)psc_json_run_add_coll(run, r);
    }
    if (speaks && o->coll_explain) {
        erc = psc_cli_coll_explain(ctx, r, devs, ndev, psc_cli_tables(o), run);

        if (erc != PSC_EXIT_OK)
            rc = erc;
    }
    if (speaks)
        rc = psc_cli_expect_coll(expect, r, o, run, rc);
    psc_expect_free(expect);
    if (speaks && o->json)
        rc = run ? psc_cli_write_run(run, o, psc_cli_now() - t0, rc) : psc_cli_write_json(NULL, o);
    json_decref(run);
    psc_coll_report_free(r);
    return rc;
}

int psc_cmd_coll(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    int ran = 0, devs[PSC_CLI_MAX_DEVS], n = psc_device_count(ctx), first = o->coll_first_gpu >= 0 ? o->coll_first_gpu : 0;

    if (o->ndev)
        return psc_cmd_coll_run(ctx, o, o->devs, o->ndev, NULL, &ran);
    if (!o->coll_gpus && o->coll_first_gpu < 0) { /* every GPU from one process */
        for (int i = 0; i < n && i < PSC_CLI_MAX_DEVS; i++)
            devs[i] = i;
        if (n < 1) {
            psc_report_printf(stderr, "p2pscope: no GPU here: coll needs one\n");
            return PSC_EXIT_ENV;
        }
        return psc_cmd_coll_run(ctx, o, devs, n < PSC_CLI_MAX_DEVS ? n : PSC_CLI_MAX_DEVS, NULL, &ran);
    }
    if (first + (o->coll_gpus ? o->coll_gpus : 1) > n) {
        int g = o->coll_gpus ? o->coll_gpus : 1;

        psc_report_printf(stderr, "p2pscope: -g %d from GPU %d needs GPUs %d to %d, but this machine shows %d: accepted -g up to "
                "%d\n", g, first, first, first + g - 1, n, n - first > 0 ? n - first : 0);
        return PSC_EXIT_ENV;
    }
    /* NCCL_TESTS_DEVICE without -g: nccl-tests' one GPU from there */
    for (int i = 0; i < (o->coll_gpus ? o->coll_gpus : 1); i++)
        devs[i] = first + i;
    return psc_cmd_coll_run(ctx, o, devs, o->coll_gpus ? o->coll_gpus : 1, NULL, &ran);
}
