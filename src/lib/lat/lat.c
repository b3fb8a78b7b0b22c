/*
 * Latency: pointer chases, flag round trips, small copies and synchronous
 * copies. GPU-side times are SM cycles converted with each launch's own
 * %globaltimer calibration; CPU-side times are CLOCK_MONOTONIC.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lat/chase_seq.h"
#include "lat/flag.h"
#include "lat/lat_gpumap.h"
#include "lat/lat.h"
#include "lat/lat_record.h"
#include "mem/buffer.h"
#include "xfer/copy.h"
#include "pattern/check.h"
#include "runner/runner.h"
#include "xfer/timing.h"

#define PSC__CHASE_STRIDE 128
#define PSC__SYNC_WARMUP 10

static const uint64_t psc__copy_sizes[] = {4, 16, 64, 1024, 16384, 262144, 1048576};
static const uint64_t psc__sync_sizes[] = {1, 8, 64, 1024, 16384, 262144, 1048576};

static psc_status_t psc__peer_both(psc_context_t *ctx, int a, int b, psc_lat_result_t *res)
{
    int can_ab = 0, can_ba = 0;
    psc_status_t st;

    if ((st = PSC_CU(ctx, cuDeviceCanAccessPeer, (&can_ab, ctx->gpu[a].dev, ctx->gpu[b].dev))) != PSC_OK ||
        (st = PSC_CU(ctx, cuDeviceCanAccessPeer, (&can_ba, ctx->gpu[b].dev, ctx->gpu[a].dev))) != PSC_OK)
        return st;
    if (!can_ab || !can_ba) {
        res->status = PSC_RESULT_WAIVED;
        snprintf(res->reason, sizeof(res->reason), "no peer access between GPU %d and GPU %d", a, b);
        return PSC_OK;
    }
    if ((st = psc__gpu_peer_enable(ctx, a, b)) != PSC_OK)
        return st;
    return psc__gpu_peer_enable(ctx, b, a);
}

/* A test of one size (the chases', the flags'): its n samples recorded, and the result passed. */
static psc_status_t psc__one_size(psc_context_t *ctx, psc_lat_result_t *res, uint64_t size, const double *ns,
                                  unsigned n)
{
    psc_status_t st;

    res->nsizes = 1;
    res->sizes[0] = size;
    if ((st = psc__lat_record(ctx, res, 0, ns, n, &res->lat[0])) != PSC_OK)
        return st;
    res->status = PSC_RESULT_PASSED;
    return PSC_OK;
}

static psc_status_t psc__run_chase(psc_context_t *ctx, const psc_lat_test_info_t *ti, const psc_lat_case_t *c,
                                   const psc_lat_opts_t *o, psc_lat_result_t *res)
{
    const uint64_t ws = ti->working_set;
    const uint32_t nodes = (uint32_t)(ws / PSC__CHASE_STRIDE);
    const int g = c->issuer;
    unsigned samples = o->samples + 1; /* the first chain warms caches and TLBs */
    uint32_t *next = malloc(nodes * sizeof(*next)), at = 0;
    uint64_t *img = NULL, cal[2] = {0, 0}, end = 0, *cycles = calloc(samples, sizeof(*cycles));
    double *ns = calloc(samples, sizeof(*ns));
    CUdeviceptr dcyc = 0, dcal = 0, dend = 0;
    psc_buffer_t *b = NULL;
    psc_status_t st = PSC_OK;

    if (!next || !cycles || !ns) {
        st = psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
        goto out;
    }
    if (ti->tma && psc__tma_waiver(g, ctx->info[g].cc_major, ctx->info[g].cc_minor, res->reason, sizeof(res->reason))) {
        res->status = PSC_RESULT_WAIVED; /* no bulk copies on the reading GPU */
        goto out;
    }
    if (ti->where == PSC_LAT_PEER) {
        if ((st = psc__peer_both(ctx, c->src, g, res)) != PSC_OK || res->status == PSC_RESULT_WAIVED)
            goto out;
    }
    st = psc__buffer_get(ctx, ti->where == PSC_LAT_HOST ? PSC_MEM_PINNED : PSC_MEM_DEVICE,
                         ti->where == PSC_LAT_HOST ? g : c->src, ctx->info[g].numa_node, ws, &b);
    if (st != PSC_OK)
        goto out;
    psc__chain_build(next, nodes, 0x6c61746e63ull ^ (uint64_t)c->src * 977 ^ (uint64_t)g);
    img = b->host ? b->host : calloc(1, ws);
    if (!img) {
        st = psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
        goto out;
    }
    for (uint32_t i = 0; i < nodes; i++)
        img[(uint64_t)i * PSC__CHASE_STRIDE / 8] = b->dptr + (uint64_t)next[i] * PSC__CHASE_STRIDE;
    if (!b->host && (st = PSC_CU(ctx, cuMemcpyHtoD, (b->dptr, img, ws))) != PSC_OK)
        goto out;
    if ((st = psc__dev_scratch(ctx, g, samples * sizeof(uint64_t), &dcyc)) != PSC_OK ||
        (st = psc__dev_scratch(ctx, g, 2 * sizeof(uint64_t), &dcal)) != PSC_OK ||
        (st = psc__dev_scratch(ctx, g, sizeof(uint64_t), &dend)) != PSC_OK)
        goto out;
    {
        CUdeviceptr start = b->dptr;
        uint64_t hops = o->hops;
        void *params[] = {&start, &hops, &samples, &dcyc, &dcal, &dend};

        if ((st = psc__gpu_use(ctx, g)) != PSC_OK ||
            (st = psc__launch(ctx, g, ti->tma ? ctx->gpu[g].fn_chase_tma : ctx->gpu[g].fn_chase, 1, 1, params)) != PSC_OK ||
            (st = PSC_CU(ctx, cuStreamSynchronize, (ctx->gpu[g].stream))) != PSC_OK ||
            (st = PSC_CU(ctx, cuMemcpyDtoH, (cycles, dcyc, samples * sizeof(uint64_t)))) != PSC_OK ||
            (st = PSC_CU(ctx, cuMemcpyDtoH, (cal, dcal, sizeof(cal)))) != PSC_OK ||
            (st = PSC_CU(ctx, cuMemcpyDtoH, (&end, dend, sizeof(end)))) != PSC_OK)
            goto out;
    }
    /* The chain is its own check: after samples x hops loads the pointer must be where the host says. */
    for (uint64_t h = 0; h < (uint64_t)samples * o->hops; h++)
        at = next[at];
    if (end != b->dptr + (uint64_t)at * PSC__CHASE_STRIDE) {
        res->status = PSC_RESULT_FAILED;
        snprintf(res->reason, sizeof(res->reason), "wrong data: the chain ended at 0x%llx, expected 0x%llx",
                 (unsigned long long)end, (unsigned long long)(b->dptr + (uint64_t)at * PSC__CHASE_STRIDE));
        goto out;
    }
    res->ns_per_cycle = cal[1] ? (double)cal[0] / (double)cal[1] : 0;
    for (unsigned s = 1; s < samples; s++)
        ns[s - 1] = (double)cycles[s] * res->ns_per_cycle / (double)o->hops;
    st = psc__one_size(ctx, res, ws, ns, samples - 1);
out:
    if (img && (!b || img != b->host))
        free(img);
    psc__dev_scratch_free(ctx, g, dcyc);
    psc__dev_scratch_free(ctx, g, dcal);
    psc__dev_scratch_free(ctx, g, dend);
    psc__buffer_put(b);
    free(next);
    free(cycles);
    free(ns);
    return st;
}

/*
 * nvbandwidth's way (lat/chase_seq.h): the chain written in address order, in chunks, every 8-byte word of the
 * buffer as nvbandwidth writes it (the end of the buffer is the last written, as there); then, for each SM, a
 * launch of one one-thread block per SM in which that block walks from the start, cuEvents around it and a
 * synchronize after, as nvbandwidth's latencyPtrChaseKernel. A sample is one launch's time over its loads; the
 * mean of the SMs' samples is total time / loads, nvbandwidth's figure. -n and --hops do not apply.
 */
#define PSC__SEQ_CHUNK (8ull << 20)

/* One sequential chase's state: the issuer and its SMs, host and GPU scratch, the kernel, its events, the chain. */
typedef struct {
    int g;
    unsigned sms, hops;   /* one launch per SM, each walking hops loads */
    uint64_t nwords;      /* 8-byte words of the chain */
    uint64_t *chunk;      /* the chain's next words before they are copied */
    uint64_t *ends, *cal; /* each launch's last word, and its ns and cycles */
    double *ns;           /* each launch's ns per load */
    CUdeviceptr dend, dcal;
    CUevent e0, e1;
    CUfunction fn;
    psc_buffer_t *b; /* the chain, on the source GPU */
} psc__seq_run_t;

/* The chain written in address order, chunk by chunk, every word as nvbandwidth writes it. */
static psc_status_t psc__seq_chain_write(psc_context_t *ctx, psc__seq_run_t *q)
{
    psc_status_t st;

    for (uint64_t w = 0; w < q->nwords; w += PSC__SEQ_CHUNK / 8) {
        const uint64_t k = q->nwords - w < PSC__SEQ_CHUNK / 8 ? q->nwords - w : PSC__SEQ_CHUNK / 8;

        psc__chain_fill_stride(q->chunk, w, k, q->nwords, PSC_CHASE_SEQ_STRIDE_WORDS, q->b->dptr);
        if ((st = PSC_CU(ctx, cuMemcpyHtoD, (q->b->dptr + 8 * w, q->chunk, 8 * k))) != PSC_OK)
            return st;
    }
    return PSC_OK;
}

/* The kernel, its scratch for ends and calibrations, and the two events, on the issuer (current after). */
static psc_status_t psc__seq_setup(psc_context_t *ctx, psc__seq_run_t *q)
{
    psc_status_t st;

    if ((st = psc__gpu_use(ctx, q->g)) != PSC_OK ||
        (st = PSC_CU(ctx, cuModuleGetFunction, (&q->fn, ctx->gpu[q->g].module, "psc_chase_seq"))) != PSC_OK ||
        (st = psc__dev_scratch(ctx, q->g, q->sms * sizeof(uint64_t), &q->dend)) != PSC_OK ||
        (st = psc__dev_scratch(ctx, q->g, 2 * q->sms * sizeof(uint64_t), &q->dcal)) != PSC_OK || /* g current after */
        (st = PSC_CU(ctx, cuEventCreate, (&q->e0, CU_EVENT_DEFAULT))) != PSC_OK ||
        (st = PSC_CU(ctx, cuEventCreate, (&q->e1, CU_EVENT_DEFAULT))) != PSC_OK)
        return st;
    return PSC_OK;
}

/* For each SM, a launch in which that SM's block walks the chain from its start, timed by events around it. */
static psc_status_t psc__seq_launches(psc_context_t *ctx, psc__seq_run_t *q)
{
    const int g = q->g;
    psc_status_t st;

    for (unsigned t = 0; t < q->sms; t++) {
        CUdeviceptr start = q->b->dptr;
        unsigned h = q->hops, target = t;
        void *params[] = {&start, &h, &target, &q->dend, &q->dcal};
        float ms = 0;

        if ((st = PSC_CU(ctx, cuEventRecord, (q->e0, ctx->gpu[g].stream))) != PSC_OK ||
            (st = psc__launch(ctx, g, q->fn, q->sms, 1, params)) != PSC_OK ||
            (st = PSC_CU(ctx, cuEventRecord, (q->e1, ctx->gpu[g].stream))) != PSC_OK ||
            (st = PSC_CU(ctx, cuStreamSynchronize, (ctx->gpu[g].stream))) != PSC_OK ||
            (st = PSC_CU(ctx, cuEventElapsedTime, (&ms, q->e0, q->e1))) != PSC_OK)
            return st;
        q->ns[t] = (double)ms * 1e6 / q->hops;
    }
    return PSC_OK;
}

/* The chain is its own check: every SM's walk must end at the word the host computes; then the figures. */
static psc_status_t psc__seq_verdict(psc_context_t *ctx, psc__seq_run_t *q, uint64_t ws, psc_lat_result_t *res)
{
    uint64_t want, g_ns = 0, g_cyc = 0;
    psc_status_t st;

    if ((st = PSC_CU(ctx, cuMemcpyDtoH, (q->ends, q->dend, q->sms * sizeof(uint64_t)))) != PSC_OK ||
        (st = PSC_CU(ctx, cuMemcpyDtoH, (q->cal, q->dcal, 2 * q->sms * sizeof(uint64_t)))) != PSC_OK)
        return st;
    want = q->b->dptr + 8 * psc__chain_stride_end(q->nwords, PSC_CHASE_SEQ_STRIDE_WORDS, q->hops);
    for (unsigned t = 0; t < q->sms; t++) {
        if (q->ends[t] != want) {
            res->status = PSC_RESULT_FAILED;
            snprintf(res->reason, sizeof(res->reason),
                     "wrong data: the chain walked by SM launch %u ended at 0x%llx, expected 0x%llx", t,
                     (unsigned long long)q->ends[t], (unsigned long long)want);
            return PSC_OK;
        }
        g_ns += q->cal[2 * t];
        g_cyc += q->cal[2 * t + 1];
    }
    res->ns_per_cycle = g_cyc ? (double)g_ns / (double)g_cyc : 0;
    return psc__one_size(ctx, res, ws, q->ns, q->sms);
}

/* Everything the chase took, given back. */
static void psc__seq_release(psc_context_t *ctx, psc__seq_run_t *q)
{
    if ((q->e0 || q->e1) && psc__gpu_use(ctx, q->g) == PSC_OK) {
        if (q->e0)
            ctx->cu.p_cuEventDestroy(q->e0);
        if (q->e1)
            ctx->cu.p_cuEventDestroy(q->e1);
    }
    psc__dev_scratch_free(ctx, q->g, q->dend);
    psc__dev_scratch_free(ctx, q->g, q->dcal);
    psc__buffer_put(q->b);
    free(q->chunk);
    free(q->ends);
    free(q->cal);
    free(q->ns);
}

/* The sequential chase of the case (nvbandwidth's way, above): the chain written, one launch per SM, the check. */
static psc_status_t psc__run_chase_seq(psc_context_t *ctx, const psc_lat_test_info_t *ti, const psc_lat_case_t *c,
                                       psc_lat_result_t *res)
{
    const uint64_t ws = ti->working_set;
    const int g = c->issuer;
    const unsigned sms = ctx->info[g].sm_count > 0 ? (unsigned)ctx->info[g].sm_count : 1;
    psc__seq_run_t q = {g, sms, (unsigned)(PSC_CHASE_SEQ_LOADS / sms), ws / 8, malloc(PSC__SEQ_CHUNK),
                        calloc(sms, sizeof(uint64_t)), calloc(2 * (size_t)sms, 8), calloc(sms, sizeof(double)),
                        0, 0, NULL, NULL, NULL, NULL};
    psc_status_t st = PSC_OK;

    if (!q.chunk || !q.ends || !q.cal || !q.ns) {
        st = psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
        goto out;
    }
    if ((st = psc__peer_both(ctx, c->src, g, res)) != PSC_OK || res->status == PSC_RESULT_WAIVED)
        goto out;
    if ((st = psc__buffer_get(ctx, PSC_MEM_DEVICE, c->src, -1, ws, &q.b)) != PSC_OK ||
        (st = psc__seq_chain_write(ctx, &q)) != PSC_OK || (st = psc__seq_setup(ctx, &q)) != PSC_OK ||
        (st = psc__seq_launches(ctx, &q)) != PSC_OK)
        goto out;
    st = psc__seq_verdict(ctx, &q, ws, res);
out:
    psc__seq_release(ctx, &q);
    return st;
}

/* GPU <-> GPU: pong on the responder first, then ping on the initiator; each polls its own memory. */
static psc_status_t psc__run_flag_gpu(psc_context_t *ctx, const psc_lat_case_t *c, const psc_lat_opts_t *o,
                                      psc_lat_result_t *res)
{
    const int a = c->src, b = c->dst;
    unsigned iters = o->samples * 16;
    uint64_t timeout_ns = (uint64_t)(o->timeout_ms * 1e6);
    int late_a = 0, late_b = 0;
    double *ns = calloc(iters, sizeof(*ns));
    CUdeviceptr flag_b = 0, ans_a = 0;
    psc_flag_pong_t pong;
    psc_status_t st = PSC_OK, sst;

    if (!ns) {
        st = psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
        goto out;
    }
    if ((st = psc__peer_both(ctx, a, b, res)) != PSC_OK || res->status == PSC_RESULT_WAIVED)
        goto out;
    if ((st = psc__dev_scratch(ctx, b, 256, &flag_b)) != PSC_OK || (st = psc__dev_scratch(ctx, a, 256, &ans_a)) != PSC_OK ||
        (st = psc__flag_pong_start(ctx, b, flag_b, ans_a, iters, timeout_ns, &pong)) != PSC_OK)
        goto out;
    st = psc__flag_ping(ctx, a, flag_b, ans_a, iters, timeout_ns, ns, &res->ns_per_cycle, &late_a);
    /* The responder is waited for on every path: it ends by answering or by giving up. */
    if ((sst = psc__flag_pong_end(ctx, &pong, &late_b)) != PSC_OK && st == PSC_OK)
        st = sst;
    if (st != PSC_OK)
        goto out;
    if (late_a || late_b) {
        res->status = PSC_RESULT_FAILED;
        snprintf(res->reason, sizeof(res->reason), "GPU %d got no answer within %.0f ms: the flag did not cross",
                 late_a ? a : b, o->timeout_ms);
        goto out;
    }
    for (unsigned i = 0; i < iters; i++)
        ns[i] /= 2.0; /* one way */
    st = psc__one_size(ctx, res, 4, ns, iters);
out:
    psc__dev_scratch_free(ctx, b, flag_b);
    psc__dev_scratch_free(ctx, a, ans_a);
    free(ns);
    return st;
}

/* CPU <-> GPU: the GPU answers from a pong kernel; the CPU times each round trip. */
static psc_status_t psc__run_flag_cpu(psc_context_t *ctx, const psc_lat_case_t *c, const psc_lat_opts_t *o,
                                      psc_lat_result_t *res)
{
    const int g = c->issuer;
    unsigned iters = o->samples * 16, lost = 0, gpu_err = 0;
    uint64_t timeout_ns = (uint64_t)(o->timeout_ms * 1e6);
    double *ns = calloc(iters, sizeof(*ns));
    CUdeviceptr derr = 0, dflag, dans;
    volatile unsigned *words = NULL;
    psc_status_t st = PSC_OK;
    void *host = NULL;

    if (!ns)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    if ((st = psc__gpu_use(ctx, g)) != PSC_OK ||
        (st = PSC_CU(ctx, cuMemHostAlloc, (&host, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE))) != PSC_OK ||
        (st = PSC_CU(ctx, cuMemHostGetDevicePointer, (&dflag, host, 0))) != PSC_OK ||
        (st = psc__dev_scratch(ctx, g, sizeof(unsigned), &derr)) != PSC_OK)
        goto out;
    words = host;
    words[0] = 0;  /* the flag the CPU writes */
    words[32] = 0; /* the answer, a cache line away */
    dans = dflag + 32 * sizeof(unsigned);
    {
        void *pong[] = {&dflag, &dans, &iters, &timeout_ns, &derr};

        if ((st = psc__launch(ctx, g, ctx->gpu[g].fn_pong, 1, 1, pong)) != PSC_OK)
            goto out;
    }
    for (unsigned i = 1; i <= iters && !lost; i++) {
        double t0 = psc__now_ns();

        __atomic_store_n(&words[0], i, __ATOMIC_RELEASE);
        while (__atomic_load_n(&words[32], __ATOMIC_ACQUIRE) != i) {
            if (psc__now_ns() - t0 > (double)timeout_ns) {
                lost = i;
                break;
            }
        }
        ns[i - 1] = (psc__now_ns() - t0) / 2.0;
    }
    if ((st = PSC_CU(ctx, cuStreamSynchronize, (ctx->gpu[g].stream))) != PSC_OK ||
        (st = PSC_CU(ctx, cuMemcpyDtoH, (&gpu_err, derr, sizeof(gpu_err)))) != PSC_OK)
        goto out;
    if (lost || gpu_err) {
        res->status = PSC_RESULT_FAILED;
        snprintf(res->reason, sizeof(res->reason), "round trip %u got no answer within %.0f ms", lost ? lost : 1,
                 o->timeout_ms);
        goto out;
    }
    st = psc__one_size(ctx, res, 4, ns, iters);
out:
    psc__dev_scratch_free(ctx, g, derr);
    if (host)
        ctx->cu.p_cuMemFreeHost(host);
    free(ns);
    return st;
}

/* Check that the first `len` bytes of the destination match the source's pattern. */
static psc_status_t psc__check_prefix(psc_context_t *ctx, const psc_buffer_t *b, uint64_t len, uint64_t seed,
                                      psc_lat_result_t *res)
{
    psc_buffer_t view = *b;
    psc_check_t chk;
    psc_status_t st;

    view.size = len;
    if ((st = psc__pattern_check(ctx, &view, seed, &chk)) != PSC_OK)
        return st;
    if (chk.bad_bytes) {
        res->status = PSC_RESULT_FAILED;
        snprintf(res->reason, sizeof(res->reason),
                 "wrong data: %llu bad bytes in a %llu-byte copy; first at offset %lld: expected 0x%02x, found 0x%02x",
                 (unsigned long long)chk.bad_bytes, (unsigned long long)len, (long long)chk.first_bad, chk.expected,
                 chk.found);
    }
    return PSC_OK;
}

/* One small-copy latency run's state: the GPUs (a sends, b receives, g issues: a, or b for a read), its buffers,
   events, gates and samples. */
typedef struct {
    int a, b, g;
    uint64_t seed;
    psc_buffer_t *src, *dst;
    CUevent e0, e1;
    CUstream s;                      /* g's */
    unsigned char use[PSC_MAX_GPUS]; /* the gates to arm: g's */
    double *gpu, *cpu;               /* each sample's GPU time and CPU submit time per copy, ns */
} psc__copy_lat_t;

/* Peer access off both ways for the P2P-off test, else on both ways (or the result waived); none inside a GPU. */
static psc_status_t psc__copy_lat_peers(psc_context_t *ctx, const psc_lat_test_info_t *ti, int a, int b,
                                        psc_lat_result_t *res)
{
    psc_status_t st;

    if (a == b)
        return PSC_OK;
    if (!ti->p2p_off)
        return psc__peer_both(ctx, a, b, res);
    if ((st = psc__gpu_peer_disable(ctx, a, b)) != PSC_OK)
        return st;
    return psc__gpu_peer_disable(ctx, b, a);
}

/* One copy of len bytes by the issuing GPU's SMs (psc_copy_bytes: enough blocks of the context's threads for it). */
static psc_status_t psc__copy_lat_kernel(psc_context_t *ctx, psc__copy_lat_t *q, uint64_t len)
{
    CUdeviceptr d = q->dst->dptr, s = q->src->dptr;
    uint64_t n = len, per = (uint64_t)ctx->sm_threads, blocks = (len + per - 1) / per;
    void *params[] = {&d, &s, &n};

    blocks = blocks < 1 ? 1 : blocks > (uint64_t)psc__grid_blocks(ctx, q->g) ? (uint64_t)psc__grid_blocks(ctx, q->g)
                                                                                : blocks;
    return psc__launch_on(ctx, q->s, ctx->gpu[q->g].fn_copy_bytes, (unsigned)blocks, (unsigned)per, params);
}

/*
 * One round of o->copies copies of len bytes queued back to back: behind a gate (but for P2P off), between two
 * events; the GPU's time and the CPU's time to queue them, per copy, into sample r - 1 (round 0 warms up).
 */
static psc_status_t psc__copy_lat_round(psc_context_t *ctx, const psc_lat_test_info_t *ti, const psc_lat_opts_t *o,
                                        psc__copy_lat_t *q, uint64_t len, unsigned r)
{
    const int a = q->a, b = q->b;
    CUstream s = q->s;
    psc_status_t st;
    double h0, h1;
    float ms = 0;

    if (!ti->p2p_off) {
        psc__gates_arm(ctx, q->use);
        if ((st = psc__gate_launch(ctx, q->g, s, (uint64_t)(o->timeout_ms * 1e6))) != PSC_OK)
            return st;
    }
    st = PSC_CU(ctx, cuEventRecord, (q->e0, s));
    h0 = psc__now_ns();
    for (unsigned i = 0; i < o->copies && st == PSC_OK; i++)
        st = ti->sm        ? psc__copy_lat_kernel(ctx, q, len)
             : ti->p2p_off ? PSC_CU(ctx, cuMemcpyPeerAsync, (q->dst->dptr, ctx->gpu[b].ctx, q->src->dptr,
                                                             ctx->gpu[a].ctx, len, s))
                           : PSC_CU(ctx, cuMemcpyAsync, (q->dst->dptr, q->src->dptr, len, s));
    h1 = psc__now_ns();
    if (st == PSC_OK)
        st = PSC_CU(ctx, cuEventRecord, (q->e1, s));
    if (!ti->p2p_off)
        psc__gates_release(ctx, q->use);
    if (ctx->cu.p_cuStreamSynchronize(s) != CUDA_SUCCESS && st == PSC_OK)
        st = psc__fail(ctx, PSC_ERR_DRIVER, "cuStreamSynchronize failed");
    if (st != PSC_OK || (st = PSC_CU(ctx, cuEventElapsedTime, (&ms, q->e0, q->e1))) != PSC_OK)
        return st;
    if (r > 0) {
        q->gpu[r - 1] = (double)ms * 1e6 / o->copies;
        q->cpu[r - 1] = (h1 - h0) / o->copies;
    }
    return PSC_OK;
}

/* Size k: the destination poisoned, the rounds, the copied bytes checked, the GPU's and the CPU's figures kept. */
static psc_status_t psc__copy_lat_size(psc_context_t *ctx, const psc_lat_test_info_t *ti, const psc_lat_opts_t *o,
                                       psc__copy_lat_t *q, int k, psc_lat_result_t *res)
{
    const uint64_t len = psc__copy_sizes[k];
    psc_status_t st;

    if ((st = psc__pattern_fill(ctx, q->dst, q->seed ^ PSC_POISON_XOR)) != PSC_OK || (st = psc__gpu_use(ctx, q->g)) != PSC_OK)
        return st;
    for (unsigned r = 0; r <= o->samples; r++) /* round 0 warms up */
        if ((st = psc__copy_lat_round(ctx, ti, o, q, len, r)) != PSC_OK)
            return st;
    if ((st = psc__check_prefix(ctx, q->dst, len, q->seed, res)) != PSC_OK)
        return st;
    res->sizes[k] = len;
    if ((st = psc__lat_record(ctx, res, (unsigned)k, q->gpu, o->samples, &res->lat[k])) != PSC_OK)
        return st;
    if ((st = psc__lat_record(ctx, res, (unsigned)k, q->cpu, o->samples, &res->submit[k])) != PSC_OK)
        return st;
    res->nsizes = (unsigned)k + 1;
    return PSC_OK;
}

static psc_status_t psc__run_copy(psc_context_t *ctx, const psc_lat_test_info_t *ti, const psc_lat_case_t *c,
                                  const psc_lat_opts_t *o, psc_lat_result_t *res)
{
    const int a = c->src, b = c->dst, nsz = (int)(sizeof(psc__copy_sizes) / sizeof(psc__copy_sizes[0]));
    const uint64_t max = psc__copy_sizes[nsz - 1];
    psc__copy_lat_t q = {a, b, ti->by_dst ? b : a, 0x636f7079ull ^ (uint64_t)a << 8 ^ (uint64_t)b, NULL, NULL, NULL,
                         NULL, NULL, {0}, calloc(o->samples, sizeof(double)), calloc(o->samples, sizeof(double))};
    psc_status_t st = PSC_OK;

    if (!q.gpu || !q.cpu) {
        st = psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
        goto out;
    }
    if ((st = psc__copy_lat_peers(ctx, ti, a, b, res)) != PSC_OK || res->status == PSC_RESULT_WAIVED)
        goto out;
    if ((st = psc__buffer_get(ctx, PSC_MEM_DEVICE, a, -1, max, &q.src)) != PSC_OK ||
        (st = psc__buffer_get(ctx, PSC_MEM_DEVICE, b, -1, max, &q.dst)) != PSC_OK ||
        (st = psc__pattern_fill(ctx, q.src, q.seed)) != PSC_OK || (st = psc__gpu_use(ctx, q.g)) != PSC_OK ||
        (st = PSC_CU(ctx, cuEventCreate, (&q.e0, CU_EVENT_DEFAULT))) != PSC_OK ||
        (st = PSC_CU(ctx, cuEventCreate, (&q.e1, CU_EVENT_DEFAULT))) != PSC_OK)
        goto out;
    q.s = ctx->gpu[q.g].stream;
    q.use[q.g] = 1;
    for (int k = 0; k < nsz && res->status != PSC_RESULT_FAILED; k++)
        if ((st = psc__copy_lat_size(ctx, ti, o, &q, k, res)) != PSC_OK)
            goto out;
    if (res->status != PSC_RESULT_FAILED)
        res->status = PSC_RESULT_PASSED;
out:
    if (psc__gpu_use(ctx, q.g) == PSC_OK) {
        if (q.e0)
            ctx->cu.p_cuEventDestroy(q.e0);
        if (q.e1)
            ctx->cu.p_cuEventDestroy(q.e1);
    }
    psc__buffer_put(q.src);
    psc__buffer_put(q.dst);
    free(q.gpu);
    free(q.cpu);
    return st;
}

static psc_status_t psc__run_sync(psc_context_t *ctx, const psc_lat_test_info_t *ti, const psc_lat_case_t *c,
                                  const psc_lat_opts_t *o, psc_lat_result_t *res)
{
    const int g = c->issuer, nsz = (int)(sizeof(psc__sync_sizes) / sizeof(psc__sync_sizes[0]));
    const uint64_t max = psc__sync_sizes[nsz - 1], seed = 0x73796e63ull ^ (uint64_t)g;
    double *ns = calloc(o->samples, sizeof(*ns));
    psc_buffer_t *host = NULL, *dev = NULL;
    psc_status_t st = PSC_OK;

    if (!ns)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    if ((st = psc__buffer_get(ctx, psc__mem_kind_of(ti->hostmem), g, ctx->info[g].numa_node, max, &host)) != PSC_OK ||
        (st = psc__buffer_get(ctx, PSC_MEM_DEVICE, g, -1, max, &dev)) != PSC_OK)
        goto out;
    /* The source carries the pattern; the destination is poisoned per size and checked after. */
    if ((st = psc__pattern_fill(ctx, ti->to_gpu ? host : dev, seed)) != PSC_OK)
        goto out;
    for (int k = 0; k < nsz && res->status != PSC_RESULT_FAILED; k++) {
        const uint64_t len = psc__sync_sizes[k];

        if ((st = psc__pattern_fill(ctx, ti->to_gpu ? dev : host, seed ^ PSC_POISON_XOR)) != PSC_OK ||
            (st = psc__gpu_use(ctx, g)) != PSC_OK)
            goto out;
        for (unsigned i = 0; i < PSC__SYNC_WARMUP + o->samples && st == PSC_OK; i++) {
            double t0 = psc__now_ns();

            st = ti->to_gpu ? PSC_CU(ctx, cuMemcpyHtoD, (dev->dptr, host->host, len))
                            : PSC_CU(ctx, cuMemcpyDtoH, (host->host, dev->dptr, len));
            if (i >= PSC__SYNC_WARMUP)
                ns[i - PSC__SYNC_WARMUP] = psc__now_ns() - t0;
        }
        if (st != PSC_OK || (st = psc__check_prefix(ctx, ti->to_gpu ? dev : host, len, seed, res)) != PSC_OK)
            goto out;
        res->sizes[k] = len;
        if ((st = psc__lat_record(ctx, res, (unsigned)k, ns, o->samples, &res->lat[k])) != PSC_OK)
            goto out;
        res->nsizes = (unsigned)k + 1;
    }
    if (res->status != PSC_RESULT_FAILED)
        res->status = PSC_RESULT_PASSED;
out:
    psc__buffer_put(host);
    psc__buffer_put(dev);
    free(ns);
    return st;
}

psc_status_t psc__lat_run(psc_context_t *ctx, const psc_lat_case_t *c, const psc_lat_opts_t *o, psc_lat_result_t *out)
{
    const psc_lat_test_info_t *ti = c ? psc_lat_test_info(c->test) : NULL;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID; /* no context to hold the reason */
    if (!c || !o || !out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_lat_run: no %s given (accepted: %s)",
                         !c ? "case" : !o ? "options" : "result",
                         !c ? "a case from psc_lat_cases" : !o ? "options from psc_lat_opts_default"
                                                           : "a psc_lat_result_t to fill");
    if (!ti)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_lat_run: latency test %d does not exist (accepted: 0..%d)",
                         c->test, psc_lat_test_count() - 1);
    if (!psc__valid_gpu(ctx, c->issuer))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_lat_run: issuer GPU %d does not exist (accepted: 0..%d)",
                         c->issuer, ctx->ndev - 1);
    if (o->samples < 1 || o->samples > 100000)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_lat_run: samples %u (accepted: 1 to 100000)", o->samples);
    if (o->hops < 1)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_lat_run: hops 0 (accepted: 1 or more)");
    if (o->copies < 1)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_lat_run: copies 0 (accepted: 1 or more)");
    if (!(o->timeout_ms >= 1))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_lat_run: timeout_ms %g (accepted: 1 or more)", o->timeout_ms);
    if (ti->where == PSC_LAT_PEER) {
        if (!psc__valid_gpu(ctx, c->src) || !psc__valid_gpu(ctx, c->dst))
            return psc__fail(ctx, PSC_ERR_INVALID, "psc_lat_run: %s GPU %d does not exist (accepted: 0..%d)",
                             !psc__valid_gpu(ctx, c->src) ? "source" : "destination",
                             !psc__valid_gpu(ctx, c->src) ? c->src : c->dst, ctx->ndev - 1);
        if (c->src == c->dst)
            return psc__fail(ctx, PSC_ERR_INVALID,
                             "psc_lat_run: %s is GPU to GPU but both ends are GPU %d (accepted: two different GPUs)",
                             ti->name, c->src);
    }
    memset(out, 0, sizeof(*out));
    out->c = *c;
    if (ti->where == PSC_LAT_GPUMAP) /* through a CPU mapping of GPU memory */
        st = psc__gpumap_lat_run(ctx, ti, c, o, out);
    else switch (ti->method) {
    case PSC_LAT_CHASE:
        st = psc__lat_chase_is_sequential(ti) ? psc__run_chase_seq(ctx, ti, c, out) : psc__run_chase(ctx, ti, c, o, out);
        break;
    case PSC_LAT_FLAG: st = ti->where == PSC_LAT_PEER ? psc__run_flag_gpu(ctx, c, o, out) : psc__run_flag_cpu(ctx, c, o, out); break;
    case PSC_LAT_COPY: st = psc__run_copy(ctx, ti, c, o, out); break;
    default: st = psc__run_sync(ctx, ti, c, o, out); break;
    }
    if (st != PSC_OK) {
        out->status = PSC_RESULT_FAILED;
        snprintf(out->reason, sizeof(out->reason), "%s", ctx->last_error);
    }
    return PSC_OK;
}

psc_status_t psc__timer_resolution(psc_context_t *ctx, int gpu, double *gpu_ns, double *host_ns)
{
    struct timespec res;
    CUdeviceptr d = 0;
    uint64_t step = 0;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID; /* no context to hold the reason */
    if (!psc__valid_gpu(ctx, gpu))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_timer_resolution: GPU %d does not exist (accepted: 0..%d)", gpu,
                         ctx->ndev - 1);
    if (!gpu_ns || !host_ns)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_timer_resolution: %s is NULL (accepted: a double to fill)",
                         !gpu_ns ? "gpu_ns" : "host_ns");
    if ((st = psc__dev_scratch(ctx, gpu, sizeof(uint64_t), &d)) != PSC_OK)
        return st;
    {
        void *params[] = {&d};

        if ((st = psc__launch(ctx, gpu, ctx->gpu[gpu].fn_probe, 1, 1, params)) == PSC_OK &&
            (st = PSC_CU(ctx, cuStreamSynchronize, (ctx->gpu[gpu].stream))) == PSC_OK)
            st = PSC_CU(ctx, cuMemcpyDtoH, (&step, d, sizeof(step)));
    }
    psc__dev_scratch_free(ctx, gpu, d);
    if (st != PSC_OK)
        return st;
    clock_getres(CLOCK_MONOTONIC, &res);
    *gpu_ns = (double)step;
    *host_ns = (double)res.tv_sec * 1e9 + (double)res.tv_nsec;
    return PSC_OK;
}

PSC_RUNNER_KIND(psc__lat_kind, "psc_lat_run", psc_lat_case_t, psc_lat_cases, psc_lat_result_t, psc__lat_run,
                psc_lat_opts_t, psc_lat_run_test_opts_t);

psc_status_t psc__lat_run_held(psc_context_t *ctx, const psc_lat_case_t *c, const psc_lat_opts_t *o,
                               psc_lat_result_t *out)
{
    return psc__runner_held(ctx, &psc__lat_kind, c, o, out);
}

psc_status_t psc__timer_resolution_held(psc_context_t *ctx, int gpu, double *gpu_ns, double *host_ns)
{
    double g = 0, h = 0;
    psc_status_t st;

    if (!gpu_ns || !host_ns)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_timer_resolution: %s is NULL (accepted: a double to fill)",
                         gpu_ns ? "host_ns" : "gpu_ns");
    psc__guard_enter(ctx);
    st = psc__guard_leave(ctx, psc__timer_resolution(ctx, gpu, &g, &h));
    if (st == PSC_OK) {
        *gpu_ns = g;
        *host_ns = h;
    }
    return st;
}
