/*
 * p2pscope check's measurements (psc_node_check_run, p2pscope_private.h): a node's health in a few seconds.
 * The facts, the key bandwidth paths (verified), two latencies, a short integrity pass over every path under
 * load, an all-reduce through NCCL at two sizes, and the doctor on facts that carry the runs' evidence. The
 * verdicts are the tool's (report/check*.c, beside --expect's bounds): this unit measures and hands over.
 * It only reads the machine: no clock, MIG, persistence or reset is ever asked of the driver.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "p2pscope_private.h"

static double psc__now_s(void)
{
    return psc__now_ns() / 1e9;
}

/* The key paths, at bw's default sizes (the sizes --expect auto's bounds name). */
static const char *const psc__bw_tests[] = {PSC_NODE_CHECK_BW_TESTS};
static const char *const psc__lat_tests[] = {PSC_NODE_CHECK_LAT_TESTS};

void psc_node_check_opts_init(psc_node_check_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->coll = 1;
    o->verify = 1;
    o->verify_load = 1;
    o->verify_max_size = PSC_NODE_CHECK_VERIFY_SIZE;
    o->coll_small = PSC_NODE_CHECK_COLL_SMALL;
    o->coll_large = PSC_NODE_CHECK_COLL_LARGE;
}

/* The tests of names[] that apply to ndev GPUs into out; their count. */
static int psc__bw_list(const char *const *names, int n, int ndev, psc_bw_test_t *out)
{
    int k = 0;

    for (int i = 0; i < n; i++) {
        psc_bw_test_t t;

        if (psc_bw_test_from_name(names[i], &t) == PSC_OK && psc_bw_test_info(t)->min_gpus <= ndev)
            out[k++] = t;
    }
    return k;
}

static psc_status_t psc__bw(psc_context_t *ctx, uint64_t size, psc_node_check_t *c)
{
    psc_bw_test_t tests[8];
    psc_bw_suite_opts_t so;
    psc_measure_opts_t m;
    psc_status_t st;

    psc_measure_opts_default(&m);
    m.samples = 3;
    m.max_samples = 6; /* a short run: a stable median or six samples */
    m.size = size;
    psc_bw_suite_opts_default(&so);
    so.tests = tests;
    so.ntests = psc__bw_list(psc__bw_tests, 5, c->ndev, tests);
    so.devices = c->devices;
    so.ndev = c->ndev;
    so.measure = &m;
    st = psc_bw_run_report(ctx, &so, c->facts, &c->bw);
    if (st != PSC_OK)
        snprintf(c->bw_error, sizeof(c->bw_error), "%s", psc_context_last_error(ctx));
    return st == PSC_ERR_NO_MEMORY ? st : PSC_OK;
}

static psc_status_t psc__lat(psc_context_t *ctx, psc_node_check_t *c)
{
    psc_lat_test_t tests[2];
    psc_lat_suite_opts_t so;
    psc_lat_opts_t lo;
    psc_status_t st;
    int n = 0;

    for (int i = 0; i < 2; i++)
        if (psc_lat_test_from_name(psc__lat_tests[i], &tests[n]) == PSC_OK &&
            psc_lat_test_info(tests[n])->min_gpus <= c->ndev)
            n++;
    psc_lat_opts_default(&lo);
    psc_lat_suite_opts_default(&so);
    so.tests = tests;
    so.ntests = n;
    so.devices = c->devices;
    so.ndev = c->ndev;
    so.lat = &lo;
    st = psc_lat_run_suite(ctx, &so, &c->lat);
    if (st != PSC_OK)
        snprintf(c->lat_error, sizeof(c->lat_error), "%s", psc_context_last_error(ctx));
    return st == PSC_ERR_NO_MEMORY ? st : PSC_OK;
}

/* Every path of every bandwidth test, small copies of two patterns, with the other paths loaded. */
static psc_status_t psc__verify(psc_context_t *ctx, const psc_node_check_opts_t *o, psc_node_check_t *c)
{
    psc_verify_suite_opts_t so;
    psc_verify_opts_t vo;
    psc_status_t st;

    psc_verify_opts_default(&vo);
    vo.max_size = o->verify_max_size;
    vo.pattern_mask = 0x3; /* seeded random, address */
    psc_verify_suite_opts_default(&so);
    so.devices = c->devices;
    so.ndev = c->ndev;
    so.verify = &vo;
    so.with_load = o->verify_load;
    st = psc_verify_run_suite(ctx, &so, &c->verify);
    if (st != PSC_OK)
        snprintf(c->verify_error, sizeof(c->verify_error), "%s", psc_context_last_error(ctx));
    else
        psc_facts_note_verify_sums(c->facts, c->verify->paths, c->verify->npaths);
    return st == PSC_ERR_NO_MEMORY ? st : PSC_OK;
}

/* All-reduce through NCCL, a small and a large size, every operation's output checked; skipped without NCCL. */
static psc_status_t psc__coll(psc_context_t *ctx, const psc_node_check_opts_t *o, psc_node_check_t *c)
{
    psc_coll_opts_t co;
    psc_status_t st;

    if (c->ndev < 2) {
        snprintf(c->coll_skip, sizeof(c->coll_skip), "one GPU: an all-reduce needs two");
        return PSC_OK;
    }
    if (!c->facts->nccl.loaded) {
        snprintf(c->coll_skip, sizeof(c->coll_skip), "%s", c->facts->nccl.note[0] ? c->facts->nccl.note
                                                                                   : "NCCL not loaded");
        c->coll_absent = 1;
        return PSC_OK;
    }
    psc_coll_opts_default(&co);
    co.min_bytes = o->coll_small;
    co.max_bytes = o->coll_large;
    co.step_factor = (unsigned)(o->coll_large / o->coll_small); /* the two sizes, nothing between */
    co.warmup_iters = 5;
    co.iters = 20;
    co.per_op = 1; /* each operation's own time: the spread --baseline judges the noise by */
    co.impls = PSC_COLL_IMPL_NCCL;
    co.timeout_s = 30;
    st = psc_coll_run(ctx, c->devices, c->ndev, &co, &c->coll);
    if (st != PSC_OK)
        snprintf(c->coll_error, sizeof(c->coll_error), "%s", psc_context_last_error(ctx));
    return st == PSC_ERR_NO_MEMORY ? st : PSC_OK;
}

static psc_status_t psc__check_opts(psc_context_t *ctx, const psc_node_check_opts_t *o, int ngpu)
{
    for (int i = 0; i < o->ndev && i < PSC_MAX_GPUS; i++)
        if (!o->devices || o->devices[i] < 0 || o->devices[i] >= ngpu)
            return psc__fail(ctx, PSC_ERR_INVALID, "GPU %d does not exist: accepted 0 to %d", o->devices ?
                             o->devices[i] : -1, ngpu - 1);
    if (o->ndev < 0 || o->ndev > PSC_MAX_GPUS || o->verify_max_size < 1 || o->coll_small < 8 ||
        o->coll_large < 2 * o->coll_small || o->coll_large / o->coll_small > 1u << 30)
        return psc__fail(ctx, PSC_ERR_INVALID, "bad check options: accepted up to %d GPUs, verify_max_size 1 B or "
                         "more, coll sizes 8 B <= small, 2 x small <= large within a factor 2^30", PSC_MAX_GPUS);
    return PSC_OK;
}

/* Each stage in turn, its seconds noted; a stage that cannot run says why in its error and the check goes on. */
static psc_status_t psc__stages(psc_context_t *ctx, const psc_node_check_opts_t *o, psc_node_check_t *c)
{
    double t = psc__now_s();
    psc_status_t st;

    if ((st = psc__bw(ctx, o->bw_size, c)) != PSC_OK)
        return st;
    c->bw_s = psc__now_s() - t;
    t += c->bw_s;
    if ((st = psc__lat(ctx, c)) != PSC_OK)
        return st;
    c->lat_s = psc__now_s() - t;
    t += c->lat_s;
    if (o->verify && (st = psc__verify(ctx, o, c)) != PSC_OK)
        return st;
    c->verify_s = psc__now_s() - t;
    t += c->verify_s;
    if (o->coll && (st = psc__coll(ctx, o, c)) != PSC_OK)
        return st;
    c->coll_s = psc__now_s() - t;
    if (!(c->findings = psc_doctor_findings(c->facts, &c->nfindings)))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for %zu findings", c->nfindings);
    return PSC_OK;
}

psc_status_t psc_node_check_run(psc_context_t *ctx, const psc_node_check_opts_t *o, psc_node_check_t **out)
{
    const double t0 = psc__now_s();
    int ngpu = psc_device_count(ctx);
    psc_node_check_t *c;
    psc_status_t st;

    if (!o || !out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_node_check_run: no options or no output");
    if ((st = psc__check_opts(ctx, o, ngpu)) != PSC_OK)
        return st;
    if (ngpu < 1)
        return psc__fail(ctx, PSC_ERR_NO_DEVICE, "no GPU to check");
    if (!(c = calloc(1, sizeof(*c))))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    c->ndev = o->ndev ? o->ndev : ngpu;
    for (int i = 0; i < c->ndev && i < PSC_MAX_GPUS; i++)
        c->devices[i] = o->ndev ? o->devices[i] : i;
    if ((st = psc_facts_gather_mapped(ctx, &c->facts)) != PSC_OK) {
        free(c);
        return st;
    }
    c->facts_s = psc__now_s() - t0;
    if ((st = psc__stages(ctx, o, c)) != PSC_OK) {
        psc_node_check_free(c);
        return st;
    }
    c->wall_s = psc__now_s() - t0;
    *out = c;
    return PSC_OK;
}

void psc_node_check_free(psc_node_check_t *c)
{
    if (!c)
        return;
    psc_facts_free(c->facts);
    psc_bw_suite_free(c->bw);
    psc_lat_suite_free(c->lat);
    psc_verify_suite_free(c->verify);
    psc_coll_report_free(c->coll);
    free(c->findings);
    free(c);
}
