/*
 * copy: psc_copy against the driver's own call in one psc_copy_bench call,
 * or with --calibrate, psc_copy_calibrate and the file it writes; the tables
 * and the JSON run of either.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "report/json.h"
#include "report/render.h"
#include "report/render_copy.h"
#include "report/text.h"

/* The GPUs the run used, for the JSON document's "devices": the command line's, or every GPU. */
static int psc__copy_devices(psc_context_t *ctx, const psc_cli_opts_t *o, psc_device_info_t *info)
{
    int n = o->ndev ? o->ndev : psc_device_count(ctx);

    if (n > PSC_MAX_GPUS)
        n = PSC_MAX_GPUS;
    for (int i = 0; i < n; i++)
        psc_device_info(ctx, o->ndev ? o->devs[i] : i, &info[i]);
    return n;
}

/* The library's refusal, and its exit code: a bad argument (the calibration file too) is a usage error. */
static int psc__copy_failed(psc_context_t *ctx, psc_status_t st, const psc_cli_opts_t *o)
{
    psc_report_printf(stderr, "p2pscope: %s%s\n", psc_context_last_error(ctx),
                      st == PSC_ERR_UNSUPPORTED && o->ndev ? " with --devices" : "");
    return psc_cli_exit_of(st, st == PSC_ERR_INVALID || (st == PSC_ERR_IO && o->calibration) ? PSC_EXIT_USAGE
                                                                                              : PSC_EXIT_ENV);
}

/*
 * The command line's GPUs, sweep (-b/-e/-f), samples (-n) and --no-host into the fields that psc_copy_calibrate's
 * and psc_copy_bench's options share; what was not given keeps its default.
 */
static void psc__copy_sweep(const psc_cli_opts_t *o, const int **devices, int *ndev, uint64_t *min_size,
                            uint64_t *max_size, unsigned *factor, unsigned *samples, int *host)
{
    *devices = o->ndev ? o->devs : NULL;
    *ndev = o->ndev;
    if (o->sweep_min) {
        *min_size = o->sweep_min;
        *max_size = o->sweep_max;
        *factor = o->sweep_factor;
    }
    if (o->samples_given)
        *samples = o->measure.samples;
    *host = !o->no_host;
}

static int psc__copy_calibrate(psc_context_t *ctx, const psc_cli_opts_t *o, double t0)
{
    psc_device_info_t info[PSC_MAX_GPUS];
    psc_calibration_t *cal = NULL;
    psc_copy_cal_opts_t co;
    psc_system_info_t sys;
    json_t *run = NULL;
    char err[512];
    psc_status_t st;
    int rc = PSC_EXIT_OK, n;

    psc_copy_cal_opts_default(&co);
    psc__copy_sweep(o, &co.devices, &co.ndev, &co.min_size, &co.max_size, &co.factor, &co.samples, &co.host);
    if (psc_cli_tables(o))
        psc_report_printf(stderr, "p2pscope: timing every route of every path; this takes a while\n");
    st = psc_copy_calibrate(ctx, &co, &cal);
    if (st != PSC_OK)
        return psc__copy_failed(ctx, st, o);
    st = psc_calibration_save(cal, o->calibrate, err, sizeof(err));
    if (st != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: %s\n", err);
        rc = psc_cli_exit_of(st, PSC_EXIT_FAILED);
    }
    n = psc__copy_devices(ctx, o, info);
    run = psc_cli_run_begin(ctx, o, "copy", info, n, &sys);
    if (psc_cli_tables(o))
        psc_render_calibration(stdout, cal, st == PSC_OK ? o->calibrate : NULL);
    if (run)
        psc_json_run_add_calibration(run, cal, st == PSC_OK ? o->calibrate : NULL);
    rc = psc_cli_write_run(run, o, psc_cli_now() - t0, rc);
    json_decref(run);
    psc_calibration_free(cal);
    return rc;
}

int psc_cmd_copy(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    const double t0 = psc_cli_now();
    psc_device_info_t info[PSC_MAX_GPUS];
    psc_copy_bench_t *b = NULL;
    psc_copy_bench_opts_t bo;
    psc_system_info_t sys;
    json_t *run = NULL;
    psc_status_t st;
    int rc = PSC_EXIT_OK, n;

    if (o->calibrate)
        return psc__copy_calibrate(ctx, o, t0);
    psc_copy_bench_opts_default(&bo);
    psc__copy_sweep(o, &bo.devices, &bo.ndev, &bo.min_size, &bo.max_size, &bo.factor, &bo.samples, &bo.host);
    bo.calibration = o->calibration;
    st = psc_copy_bench(ctx, &bo, &b);
    if (st != PSC_OK)
        return psc__copy_failed(ctx, st, o);
    for (int k = 0; k < b->nrow; k++)
        if (b->row[k].bad_bytes)
            rc = PSC_EXIT_FAILED;
    n = psc__copy_devices(ctx, o, info);
    run = psc_cli_run_begin(ctx, o, "copy", info, n, &sys);
    if (psc_cli_tables(o)) {
        psc_render_copy_bench(stdout, b);
        psc_render_wall_time(stdout, psc_cli_now() - t0,
                             rc == PSC_EXIT_FAILED ? "; WRONG BYTES in a destination (check column)" : "");
    }
    if (run) {
        psc_json_run_add_copy_bench(run, b);
        if (o->calibration)
            psc_json_run_set(run, "calibration_file", psc_json_str(o->calibration));
    }
    rc = psc_cli_write_run(run, o, psc_cli_now() - t0, rc);
    json_decref(run);
    psc_copy_bench_free(b);
    return rc;
}
