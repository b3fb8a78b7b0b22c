/* Copy-engine bandwidth tests: which cases exist, and one verified, timed case. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mem/buffer.h"
#include "verify/pattern.h"
#include "verify/verify.h"
#include "xfer/timing.h"

typedef struct {
    const char *name;
    const char *title;
} psc__bw_test_def_t;

static const psc__bw_test_def_t psc__bw_tests[PSC_BW_TEST_COUNT] = {
    [PSC_BW_GPU_TO_GPU_READ_CE] = {"gpu_to_gpu_read_ce",
        "GPU -> GPU, copy engine, read (the destination GPU issues the copy)"},
    [PSC_BW_GPU_TO_GPU_WRITE_CE] = {"gpu_to_gpu_write_ce",
        "GPU -> GPU, copy engine, write (the source GPU issues the copy)"},
    [PSC_BW_HOST_TO_GPU_CE] = {"host_to_gpu_ce",
        "host (pinned) -> GPU, copy engine (the GPU issues the copy)"},
    [PSC_BW_GPU_TO_HOST_CE] = {"gpu_to_host_ce",
        "GPU -> host (pinned), copy engine (the GPU issues the copy)"},
    [PSC_BW_GPU_LOCAL_CE] = {"gpu_local_ce",
        "GPU -> same GPU, copy engine (bytes copied counted once; memory traffic is twice that)"},
};

const char *psc_bw_test_name(psc_bw_test_t test)
{
    return (unsigned)test < PSC_BW_TEST_COUNT ? psc__bw_tests[test].name : "unknown";
}

const char *psc_bw_test_title(psc_bw_test_t test)
{
    return (unsigned)test < PSC_BW_TEST_COUNT ? psc__bw_tests[test].title : "unknown";
}

psc_status_t psc_bw_test_from_name(const char *name, psc_bw_test_t *out)
{
    for (unsigned t = 0; name && t < PSC_BW_TEST_COUNT; t++) {
        if (strcmp(name, psc__bw_tests[t].name) == 0) {
            *out = (psc_bw_test_t)t;
            return PSC_OK;
        }
    }
    return PSC_ERR_INVALID;
}

static int psc__is_pair_test(psc_bw_test_t t)
{
    return t == PSC_BW_GPU_TO_GPU_READ_CE || t == PSC_BW_GPU_TO_GPU_WRITE_CE;
}

psc_status_t psc_bw_cases(const psc_context_t *ctx, psc_bw_test_t test, const int *devices, int ndev,
                          psc_bw_case_t *cases, size_t cap, size_t *n)
{
    int all = ndev == 0;
    int count = all ? psc_device_count(ctx) : ndev;
    size_t k = 0;

    if (!ctx || !n || (unsigned)test >= PSC_BW_TEST_COUNT || (ndev > 0 && !devices) || ndev < 0)
        return PSC_ERR_INVALID;
    for (int i = 0; i < count; i++) {
        int di = all ? i : devices[i];

        if (!psc__valid_gpu(ctx, di))
            return PSC_ERR_INVALID;
        for (int j = 0; j < i; j++)
            if (!all && devices[j] == di)
                return PSC_ERR_INVALID;
    }
    for (int i = 0; i < count; i++) {
        int a = all ? i : devices[i];

        if (!psc__is_pair_test(test)) {
            psc_bw_case_t c = {test, a, a, a};

            if (test == PSC_BW_HOST_TO_GPU_CE)
                c.src = PSC_HOST;
            else if (test == PSC_BW_GPU_TO_HOST_CE)
                c.dst = PSC_HOST;
            if (k < cap)
                cases[k] = c;
            k++;
            continue;
        }
        for (int j = 0; j < count; j++) {
            int b = all ? j : devices[j];
            psc_bw_case_t c = {test, a, b, test == PSC_BW_GPU_TO_GPU_READ_CE ? b : a};

            if (a == b)
                continue;
            if (k < cap)
                cases[k] = c;
            k++;
        }
    }
    *n = k;
    return PSC_OK;
}

void psc_measure_opts_default(psc_measure_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->size = 512ull << 20;
    o->iterations = 8;
    o->warmup = 1;
    o->samples = 5;
    o->gate_timeout_ms = 5000.0;
    o->seed = 0x70327073636f7065ull; /* "p2pscope" */
    o->test_corrupt_offset = -1;
}

psc_status_t psc_measure_opts_check(const psc_measure_opts_t *o, char *errbuf, size_t errlen)
{
    char scratch[8];

    if (!errbuf || !errlen) {
        errbuf = scratch;
        errlen = sizeof(scratch);
    }
    if (!o) {
        snprintf(errbuf, errlen, "no options given");
        return PSC_ERR_INVALID;
    }
    if (o->size < 1 || o->size > (1ull << 40)) {
        snprintf(errbuf, errlen, "size %" PRIu64 " out of range: accepted 1 B to 1 TiB", o->size);
        return PSC_ERR_INVALID;
    }
    if (o->iterations < 1 || o->iterations > 100000) {
        snprintf(errbuf, errlen, "iterations %u out of range: accepted 1 to 100000", o->iterations);
        return PSC_ERR_INVALID;
    }
    if (o->samples < 1 || o->samples > PSC_MAX_SAMPLES) {
        snprintf(errbuf, errlen, "samples %u out of range: accepted 1 to %d", o->samples, PSC_MAX_SAMPLES);
        return PSC_ERR_INVALID;
    }
    if (o->warmup > 100) {
        snprintf(errbuf, errlen, "warmup %u out of range: accepted 0 to 100", o->warmup);
        return PSC_ERR_INVALID;
    }
    if (!(o->gate_timeout_ms >= 1.0 && o->gate_timeout_ms <= 600000.0)) {
        snprintf(errbuf, errlen, "gate timeout %g ms out of range: accepted 1 to 600000 ms", o->gate_timeout_ms);
        return PSC_ERR_INVALID;
    }
    if (o->test_corrupt_offset >= 0 && (uint64_t)o->test_corrupt_offset >= o->size) {
        snprintf(errbuf, errlen, "corruption offset %" PRId64 " out of range: accepted 0 to size-1",
                 o->test_corrupt_offset);
        return PSC_ERR_INVALID;
    }
    return PSC_OK;
}

/* State of one running case, shared by the timing callbacks. */
typedef struct {
    const psc_measure_opts_t *o;
    psc_buffer_t src, dst;
    uint64_t seed;
    psc_verify_report_t *report;
} psc__bw_run_t;

static psc_status_t psc__bw_before(psc_context_t *ctx, void *arg, unsigned round)
{
    psc__bw_run_t *r = arg;

    return psc__pattern_fill(ctx, &r->dst, r->seed ^ PSC_POISON_XOR ^ round);
}

static psc_status_t psc__bw_enqueue(psc_context_t *ctx, void *arg, CUstream s)
{
    psc__bw_run_t *r = arg;
    psc_status_t st = PSC_OK;

    for (unsigned k = 0; k < r->o->iterations && st == PSC_OK; k++)
        st = PSC_CU(ctx, cuMemcpyAsync, (r->dst.dptr, r->src.dptr, r->o->size, s));
    return st;
}

static psc_status_t psc__bw_after(psc_context_t *ctx, void *arg, unsigned round, int timed)
{
    psc__bw_run_t *r = arg;
    psc_check_t c;
    psc_status_t st;

    (void)round;
    if (timed && r->o->test_corrupt_offset >= 0 &&
        (st = psc__flip_byte(ctx, &r->dst, (uint64_t)r->o->test_corrupt_offset)) != PSC_OK)
        return st;
    if ((st = psc__pattern_check(ctx, &r->dst, r->seed, &c)) != PSC_OK)
        return st;
    psc__verify_report_add(r->report, &c);
    return PSC_OK;
}

/* Waive a GPU->GPU case without peer access; enable it otherwise. */
static psc_status_t psc__bw_peer(psc_context_t *ctx, const psc_bw_case_t *c, psc_bw_result_t *out)
{
    int peer = c->issuer == c->src ? c->dst : c->src;
    int can = 0;
    psc_status_t st;

    st = PSC_CU(ctx, cuDeviceCanAccessPeer, (&can, ctx->gpu[c->issuer].dev, ctx->gpu[peer].dev));
    if (st != PSC_OK)
        return st;
    if (!can) {
        out->status = PSC_RESULT_WAIVED;
        snprintf(out->reason, sizeof(out->reason),
                 "no peer access from GPU %d to GPU %d (cuDeviceCanAccessPeer = 0)", c->issuer, peer);
        return PSC_OK;
    }
    return psc__gpu_peer_enable(ctx, c->issuer, peer);
}

static int psc__bw_case_valid(const psc_context_t *ctx, const psc_bw_case_t *c)
{
    if ((unsigned)c->test >= PSC_BW_TEST_COUNT || !psc__valid_gpu(ctx, c->issuer))
        return 0;
    switch (c->test) {
    case PSC_BW_GPU_TO_GPU_READ_CE:
        return psc__valid_gpu(ctx, c->src) && c->dst == c->issuer && c->src != c->dst;
    case PSC_BW_GPU_TO_GPU_WRITE_CE:
        return psc__valid_gpu(ctx, c->dst) && c->src == c->issuer && c->src != c->dst;
    case PSC_BW_HOST_TO_GPU_CE:
        return c->src == PSC_HOST && c->dst == c->issuer;
    case PSC_BW_GPU_TO_HOST_CE:
        return c->dst == PSC_HOST && c->src == c->issuer;
    case PSC_BW_GPU_LOCAL_CE:
        return c->src == c->issuer && c->dst == c->issuer;
    default:
        return 0;
    }
}

static void psc__bw_finish(psc_bw_result_t *out, const double *ms, unsigned n)
{
    const psc_verify_report_t *v = &out->verify;

    for (unsigned k = 0; k < n; k++)
        out->samples_gbs[k] = (double)out->bytes_per_sample / (ms[k] * 1e-3) / 1e9;
    out->nsamples = n;
    psc_stats_compute(out->samples_gbs, n, &out->stats);
    if (v->bad_bytes) {
        out->status = PSC_RESULT_FAILED;
        snprintf(out->reason, sizeof(out->reason),
                 "wrong data: %" PRIu64 " bad bytes in %u of %u checked samples; first at offset %" PRId64
                 ": expected 0x%02x, found 0x%02x",
                 v->bad_bytes, v->bad_samples, v->checked, v->first_bad_offset, v->expected, v->found);
    } else {
        out->status = PSC_RESULT_PASSED;
    }
}

psc_status_t psc_bw_run(psc_context_t *ctx, const psc_bw_case_t *c, const psc_measure_opts_t *o,
                        psc_bw_result_t *out)
{
    psc_bw_result_t res;
    psc__bw_run_t run;
    double ms[PSC_MAX_SAMPLES];
    psc_timed_work_t work;
    psc_status_t st;
    int src_gpu, dst_gpu;

    if (!ctx || !c || !out || psc_measure_opts_check(o, NULL, 0) != PSC_OK || !psc__bw_case_valid(ctx, c))
        return PSC_ERR_INVALID;
    memset(&res, 0, sizeof(res));
    memset(&run, 0, sizeof(run));
    res.c = *c;
    res.verify.first_bad_offset = -1;
    res.bytes_per_sample = o->size * o->iterations;
    run.o = o;
    run.report = &res.verify;
    run.seed = o->seed ^ psc_pattern_word((uint64_t)c->test, (uint64_t)(c->src + 1) * 1024 + (uint64_t)(c->dst + 1));

    if (psc__is_pair_test(c->test)) {
        if ((st = psc__bw_peer(ctx, c, &res)) != PSC_OK)
            goto failed;
        if (res.status == PSC_RESULT_WAIVED)
            goto done;
    }
    /* Host memory sits near the GPU at the other end of the copy. */
    src_gpu = c->src == PSC_HOST ? c->dst : c->src;
    dst_gpu = c->dst == PSC_HOST ? c->src : c->dst;
    if ((st = psc__buffer_alloc(ctx, c->src == PSC_HOST ? PSC_MEM_PINNED : PSC_MEM_DEVICE, src_gpu, o->size,
                                &run.src)) != PSC_OK ||
        (st = psc__buffer_alloc(ctx, c->dst == PSC_HOST ? PSC_MEM_PINNED : PSC_MEM_DEVICE, dst_gpu, o->size,
                                &run.dst)) != PSC_OK ||
        (st = psc__pattern_fill(ctx, &run.src, run.seed)) != PSC_OK)
        goto failed;

    work.issuer = c->issuer;
    work.arg = &run;
    work.before = psc__bw_before;
    work.enqueue = psc__bw_enqueue;
    work.after = psc__bw_after;
    if ((st = psc__time_rounds(ctx, &work, o->warmup, o->samples, o->gate_timeout_ms, ms)) != PSC_OK)
        goto failed;
    psc__bw_finish(&res, ms, o->samples);
    goto done;

failed:
    res.status = PSC_RESULT_FAILED;
    snprintf(res.reason, sizeof(res.reason), "%s", ctx->last_error);
done:
    psc__buffer_free(ctx, &run.dst);
    psc__buffer_free(ctx, &run.src);
    *out = res;
    return PSC_OK;
}
