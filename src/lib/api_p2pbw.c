/*
 * `p2pscope p2pbw`'s measurements in one call (psc_p2pbw_run, p2pscope_private.h): the figures of
 * cuda-samples' p2pBandwidthLatencyTest, taken by p2pscope's bandwidth and latency tests over every GPU,
 * with the peer connectivity they are printed beside. Above the runs, which it calls through their public
 * suites (each leaves the caller's context and peer access as found); the tool renders.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "p2pscope_private.h"

/* Adds name when the test exists and runs on ndev GPUs; the new count. */
static int psc__p2pbw_add(const char **names, int n, int cap, const char *name, int lat, int ndev)
{
    int t = 0, min;

    if (n >= cap)
        return n;
    if (lat)
        min = psc_lat_test_from_name(name, &t) == PSC_OK ? psc_lat_test_info(t)->min_gpus : ndev + 1;
    else
        min = psc_bw_test_from_name(name, &t) == PSC_OK ? psc_bw_test_info(t)->min_gpus : ndev + 1;
    if (min > ndev)
        return n;
    names[n] = name;
    return n + 1;
}

int psc_p2pbw_bw_tests(const psc_p2pbw_opts_t *o, int ndev, const char **names, int cap)
{
    const int sm = o->sm_copy;
    int n = 0;

    /* the diagonal is a local copy-engine copy in every matrix: the sample's peer access to itself is 0 */
    n = psc__p2pbw_add(names, n, cap, "gpu_local_ce", 0, ndev);
    n = psc__p2pbw_add(names, n, cap, "gpu_to_gpu_p2p_off_ce", 0, ndev);
    n = psc__p2pbw_add(names, n, cap, sm ? "gpu_to_gpu_write_sm" : "gpu_to_gpu_write_ce", 0, ndev);
    if (o->p2p_read) /* the read matrix's bandwidth */
        n = psc__p2pbw_add(names, n, cap, sm ? "gpu_to_gpu_read_sm" : "gpu_to_gpu_read_ce", 0, ndev);
    n = psc__p2pbw_add(names, n, cap, "gpu_to_gpu_bidir_p2p_off_ce", 0, ndev);
    return psc__p2pbw_add(names, n, cap, sm ? "gpu_to_gpu_bidir_write_sm" : "gpu_to_gpu_bidir_write_ce", 0, ndev);
}

int psc_p2pbw_lat_tests(const psc_p2pbw_opts_t *o, int ndev, const char **names, int cap)
{
    int n = 0;

    n = psc__p2pbw_add(names, n, cap, "gpu_local_copy_ce", 1, ndev);
    n = psc__p2pbw_add(names, n, cap, "gpu_to_gpu_copy_p2p_off_ce", 1, ndev);
    n = psc__p2pbw_add(names, n, cap, o->sm_copy ? "gpu_to_gpu_copy_sm" : "gpu_to_gpu_copy_ce", 1, ndev);
    if (o->p2p_read) /* the sample's read latency: the copy issued by the reading GPU */
        n = psc__p2pbw_add(names, n, cap, o->sm_copy ? "gpu_to_gpu_copy_read_sm" : "gpu_to_gpu_copy_read_ce", 1, ndev);
    return n;
}

/* cuDeviceCanAccessPeer between every two GPUs; the diagonal 1, as the sample prints it. */
static psc_status_t psc__p2pbw_access(psc_context_t *ctx, psc_p2pbw_t *r)
{
    for (int a = 0; a < r->ndev; a++)
        for (int b = 0; b < r->ndev; b++) {
            int v = 1;

            if (a != b && ctx->cu.p_cuDeviceCanAccessPeer(&v, ctx->gpu[a].dev, ctx->gpu[b].dev) != CUDA_SUCCESS)
                return psc__fail(ctx, PSC_ERR_DRIVER, "cuDeviceCanAccessPeer(GPU %d, GPU %d) failed", a, b);
            r->can_access[a][b] = v != 0;
        }
    return PSC_OK;
}

static psc_status_t psc__p2pbw_bw(psc_context_t *ctx, const psc_p2pbw_opts_t *o, psc_p2pbw_t *r)
{
    const char *names[8];
    psc_bw_test_t tests[8];
    psc_bw_suite_opts_t so;
    const int n = psc_p2pbw_bw_tests(o, r->ndev, names, 8);

    for (int i = 0; i < n; i++)
        psc_bw_test_from_name(names[i], &tests[i]);
    psc_bw_suite_opts_default(&so);
    so.tests = tests;
    so.ntests = n;
    so.measure = o->measure;
    so.progress = o->progress;
    so.user = o->user;
    return psc_bw_run_suite(ctx, &so, &r->bw);
}

static psc_status_t psc__p2pbw_lat(psc_context_t *ctx, const psc_p2pbw_opts_t *o, psc_p2pbw_t *r)
{
    const char *names[4];
    psc_lat_test_t tests[4];
    psc_lat_suite_opts_t so;
    const int n = psc_p2pbw_lat_tests(o, r->ndev, names, 4);

    for (int i = 0; i < n; i++)
        psc_lat_test_from_name(names[i], &tests[i]);
    psc_lat_suite_opts_default(&so);
    so.tests = tests;
    so.ntests = n;
    return psc_lat_run_suite(ctx, &so, &r->lat);
}

psc_status_t psc_p2pbw_run(psc_context_t *ctx, const psc_p2pbw_opts_t *o, psc_p2pbw_t **out)
{
    psc_p2pbw_t *r;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!o || !out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_p2pbw_run: options and out are required (accepted: non-NULL)");
    if (psc_device_count(ctx) < 1)
        return psc__fail(ctx, PSC_ERR_NO_DEVICE, "psc_p2pbw_run: no GPU");
    if (!(r = calloc(1, sizeof(*r))))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    r->ndev = psc_device_count(ctx) < PSC_MAX_GPUS ? psc_device_count(ctx) : PSC_MAX_GPUS;
    if ((st = psc__p2pbw_access(ctx, r)) != PSC_OK || (st = psc__p2pbw_bw(ctx, o, r)) != PSC_OK ||
        (st = psc__p2pbw_lat(ctx, o, r)) != PSC_OK) {
        psc_p2pbw_free(r);
        return st;
    }
    *out = r;
    return PSC_OK;
}

void psc_p2pbw_free(psc_p2pbw_t *r)
{
    if (!r)
        return;
    psc_bw_suite_free(r->bw);
    psc_lat_suite_free(r->lat);
    free(r);
}
