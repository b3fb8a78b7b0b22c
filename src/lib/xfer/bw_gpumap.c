/*
 * The CPU's copy bandwidth through a CPU mapping of GPU memory (gdrcopy's
 * copybw): the bandwidth registry's PSC_ENGINE_CPU tests. The CPU writes a
 * host buffer into the mapping (psc_gpumap_write) or reads the mapping into
 * one (psc_gpumap_read), `iterations` copies a sample, timed by the CPU's
 * clock (no gate: the CPU issues them itself). Every timed sample's
 * destination is poisoned first and checked after against the source's
 * pattern: the GPU's memory by the GPU's check kernel, the host buffer by
 * the CPU.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gpumap/measure.h"
#include "xfer/bw_gpumap.h"
#include "pattern/check.h"
#include "test_hooks.h"

#define PSC__MAP_WRITE_SIZE (4ull << 20)  /* default bytes per copy: writes reach GB/s... */
#define PSC__MAP_READ_SIZE (1ull << 20)   /* ...reads crawl (every load crosses PCIe and waits) */
#define PSC__MAP_WRITE_ROUND (64ull << 20) /* auto iterations aim at this much a sample */
#define PSC__MAP_READ_ROUND (4ull << 20)

typedef struct {
    psc_gpumap_t *m;
    psc_buffer_t dev, *host;
    const psc_buffer_t *src, *dst;
    int to_gpu;
    uint64_t seed;
    double verify_ns;
} psc__map_bw_t;

static uint64_t psc__map_bw_size(const psc_measure_opts_t *o, int to_gpu)
{
    return o->size ? o->size : to_gpu ? PSC__MAP_WRITE_SIZE : PSC__MAP_READ_SIZE;
}

static unsigned psc__map_bw_iterations(const psc_measure_opts_t *o, int to_gpu, uint64_t size)
{
    uint64_t it = ((to_gpu ? PSC__MAP_WRITE_ROUND : PSC__MAP_READ_ROUND) + size - 1) / size;

    if (o->iterations)
        return o->iterations;
    return (unsigned)(it < 1 ? 1 : it > 1000 ? 1000 : it);
}

/* One sample: poison the destination (when checked), copy, check. */
static psc_status_t psc__map_bw_sample(psc_context_t *ctx, psc__map_bw_t *b, const psc_measure_opts_t *o,
                                       unsigned round, int timed, psc_bw_result_t *res)
{
    const size_t size = (size_t)res->size;
    psc_status_t st = PSC_OK;
    psc_check_t chk;
    double t0;

    if (o->verify && timed) {
        t0 = psc__now_ns();
        st = psc__pattern_fill(ctx, b->dst, b->seed ^ PSC_POISON_XOR ^ ((uint64_t)round << 32));
        b->verify_ns += psc__now_ns() - t0;
        if (st != PSC_OK)
            return st;
    }
    t0 = psc__now_ns();
    for (unsigned i = 0; i < res->iterations && st == PSC_OK; i++)
        st = b->to_gpu ? psc_gpumap_write(b->m, 0, b->host->host, size) : psc_gpumap_read(b->m, 0, b->host->host, size);
    if (st != PSC_OK || !timed)
        return st;
    {
        double ns = psc__now_ns() - t0;
        unsigned k = res->nsamples++;

        res->samples_gbs[k] = ns > 0 ? (double)res->bytes_per_sample / ns : 0; /* bytes per ns = GB/s */
    }
    if (ctx->hooks.corrupt_offset >= 0 && (st = psc__pattern_flip(ctx, b->dst, (uint64_t)ctx->hooks.corrupt_offset)) != PSC_OK)
        return st;
    if (!o->verify)
        return PSC_OK;
    t0 = psc__now_ns();
    if ((st = psc__pattern_check(ctx, b->dst, b->seed, &chk)) == PSC_OK)
        psc__check_report_add(&res->verify, &chk);
    b->verify_ns += psc__now_ns() - t0;
    return st;
}

static psc_status_t psc__map_bw(psc_context_t *ctx, psc__map_bw_t *b, CUdeviceptr *alloc, const psc_measure_opts_t *o,
                                psc_bw_result_t *res)
{
    const int g = res->c.xfer[0].issuer;
    int node = o->host_node >= 0 ? o->host_node : ctx->info[g].numa_node;
    psc_status_t st;

    if ((st = psc__gpumap_dev_alloc(ctx, g, res->size, alloc, &b->dev)) != PSC_OK ||
        (st = psc__gpumap_measure_map(ctx, &b->dev, &b->m, res->reason, sizeof(res->reason))) != PSC_OK)
        return st;
    if (!b->m) {
        res->status = PSC_RESULT_WAIVED;
        return PSC_OK;
    }
    if ((st = psc__buffer_get(ctx, PSC_MEM_PAGEABLE, g, node, res->size, &b->host)) != PSC_OK)
        return st;
    res->host_node = b->host->node;
    b->src = b->to_gpu ? b->host : &b->dev;
    b->dst = b->to_gpu ? &b->dev : b->host;
    if ((st = psc__pattern_fill(ctx, b->src, b->seed)) != PSC_OK)
        return st;
    for (unsigned round = 0;; round++) {
        if ((st = psc__map_bw_sample(ctx, b, o, round, round >= o->warmup, res)) != PSC_OK)
            return st;
        if (res->nsamples >= o->max_samples ||
            (res->nsamples >= o->samples &&
             (o->max_samples == o->samples || psc__sampling_stable(res->samples_gbs, res->nsamples, o->stable_pct))))
            break;
    }
    psc_stats_compute(res->samples_gbs, res->nsamples, &res->stats);
    res->xfer_gbs[0] = res->stats.median;
    if (res->verify.bad_bytes) {
        res->status = PSC_RESULT_FAILED;
        snprintf(res->reason, sizeof(res->reason),
                 "wrong data: %" PRIu64 " bad bytes in %u of %u checked samples; first at offset %" PRId64
                 ": expected 0x%02x, found 0x%02x",
                 res->verify.bad_bytes, res->verify.bad_samples, res->verify.checked, res->verify.first_bad_offset,
                 res->verify.expected, res->verify.found);
    } else {
        res->status = PSC_RESULT_PASSED;
    }
    return PSC_OK;
}

psc_status_t psc__gpumap_bw_run(psc_context_t *ctx, const psc_bw_case_t *c, const psc_measure_opts_t *o,
                                psc_bw_result_t *out)
{
    const psc_bw_test_info_t *ti = psc_bw_test_info(c->test);
    psc__map_bw_t b;
    psc_bw_result_t res;
    CUdeviceptr alloc = 0;
    double t0 = psc__now_ns();
    psc_status_t st;

    memset(&b, 0, sizeof(b));
    b.to_gpu = ti->shape == PSC_SHAPE_H2D;
    if (c->nxfer != 1 || (b.to_gpu ? c->xfer[0].src : c->xfer[0].dst) != PSC_HOST)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: a case of %d transfers: accepted one, between the host and the "
                         "issuing GPU", ti->name, c->nxfer);
    memset(&res, 0, sizeof(res));
    res.c = *c;
    res.size = psc__map_bw_size(o, b.to_gpu);
    res.iterations = psc__map_bw_iterations(o, b.to_gpu, res.size);
    res.bytes_per_sample = res.size * res.iterations;
    res.verify.first_bad_offset = -1;
    res.host_node = -1;
    if (ctx->hooks.corrupt_offset >= 0 && (!o->verify || (uint64_t)ctx->hooks.corrupt_offset >= res.size))
        return psc__fail(ctx, PSC_ERR_INVALID,
                         "corruption offset %lld: accepted with verification on and 0 to %llu (the size - 1)",
                         (long long)ctx->hooks.corrupt_offset, (unsigned long long)res.size - 1);
    b.seed = o->seed ^ psc_pattern_mix((uint64_t)c->test * 131, (uint64_t)(c->xfer[0].issuer + 2) * 1024);
    if ((st = psc__map_bw(ctx, &b, &alloc, o, &res)) != PSC_OK) {
        res.status = PSC_RESULT_FAILED;
        snprintf(res.reason, sizeof(res.reason), "%s", ctx->last_error);
    }
    if (b.m && psc_gpumap_unmap(b.m) != PSC_OK && res.status == PSC_RESULT_PASSED) {
        res.status = PSC_RESULT_FAILED;
        snprintf(res.reason, sizeof(res.reason), "%s", ctx->last_error);
    }
    psc__buffer_put(b.host);
    psc__gpumap_dev_free(ctx, c->xfer[0].issuer, alloc);
    res.verify_ms = b.verify_ns / 1e6;
    res.run_ms = (psc__now_ns() - t0) / 1e6;
    *out = res;
    return PSC_OK;
}
