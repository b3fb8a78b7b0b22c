/*
 * Bandwidth: options, validation, and the engine that runs one case (a set
 * of transfers at once), verifying every destination of every sample.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine/host_topo.h"
#include "mem/buffer.h"
#include "pattern/check.h"
#include "runner/runner.h"
#include "xfer/bw.h"
#include "xfer/bw_gpumap.h"
#include "xfer/bw_oneway.h"
#include "xfer/copy.h"
#include "xfer/timing.h"

#define PSC__DEFAULT_DEVICE_SIZE (512ull << 20)
#define PSC__DEFAULT_STAGED_SIZE (128ull << 20) /* peer copies staged through the host (P2P off) */
#define PSC__DEFAULT_HOST_SIZE (32ull << 20)    /* many copies a sample: a host destination's check is a 16th */
#define PSC__HOST_READ_MIN (128ull << 20)    /* an SM kernel reading host memory: at least this (psc__host_read_size) */
#define PSC__DEFAULT_PAGEABLE_SIZE (64ull << 20) /* staged in small chunks: 64 MiB is steady state, and half the wait */
#define PSC__ROUND_BYTES (256ull << 20) /* auto iterations aim at this much per transfer and sample... */
#define PSC__HOST_ROUND_BYTES (512ull << 20) /* ...and this much for pinned host memory */

psc_status_t psc__measure_opts_check(const psc_measure_opts_t *o, char *errbuf, size_t errlen)
{
    char scratch[8];

    if (!errbuf || !errlen) {
        errbuf = scratch;
        errlen = sizeof(scratch);
    }
#define PSC__BAD(...)                              \
    do {                                           \
        snprintf(errbuf, errlen, __VA_ARGS__);     \
        return PSC_ERR_INVALID;                    \
    } while (0)
    if (!o)
        PSC__BAD("no options given");
    if (o->size > (1ull << 40))
        PSC__BAD("size %" PRIu64 " out of range: accepted 1 B to 1 TiB", o->size);
    if (o->iterations > 100000)
        PSC__BAD("iterations %u out of range: accepted 1 to 100000", o->iterations);
    if (o->samples < 1 || o->samples > PSC_MAX_SAMPLES)
        PSC__BAD("samples %u out of range: accepted 1 to %d", o->samples, PSC_MAX_SAMPLES);
    if (o->max_samples < o->samples || o->max_samples > PSC_MAX_SAMPLES)
        PSC__BAD("max samples %u out of range: accepted %u (the minimum) to %d", o->max_samples, o->samples,
                 PSC_MAX_SAMPLES);
    if (!(o->stable_pct >= 0 && o->stable_pct <= 100))
        PSC__BAD("stability %g%% out of range: accepted 0 to 100", o->stable_pct);
    if (o->warmup > 100)
        PSC__BAD("warmup %u out of range: accepted 0 to 100", o->warmup);
    if (!(o->gate_timeout_ms >= 1.0 && o->gate_timeout_ms <= 600000.0))
        PSC__BAD("gate timeout %g ms out of range: accepted 1 to 600000 ms", o->gate_timeout_ms);
    if (o->host_node < -1)
        PSC__BAD("host NUMA node %d out of range: accepted 0 or more, or -1 for the GPU's own", o->host_node);
    if (o->verify != 0 && o->verify != 1)
        PSC__BAD("verify %d out of range: accepted 0 (off) or 1 (on)", o->verify);
#undef PSC__BAD
    return PSC_OK;
}

static int psc__host_shape(psc_shape_t p)
{
    return p == PSC_SHAPE_H2D || p == PSC_SHAPE_D2H || p == PSC_SHAPE_HOST_BIDIR ||
           p == PSC_SHAPE_HOST_TO_ALL || p == PSC_SHAPE_ALL_TO_HOST || p == PSC_SHAPE_ALL_HOST_BIDIR;
}

/*
 * An SM kernel reading mapped host memory goes through the GPU's L2: a
 * buffer that fits there is read from L2 after the first pass. Such tests
 * copy at least twice the largest L2 of the case's GPUs.
 */
static uint64_t psc__host_read_size(const psc_context_t *ctx, const psc_bw_case_t *c)
{
    uint64_t l2 = 0;

    for (int i = 0; i < c->nxfer; i++)
        if (c->xfer[i].src == PSC_HOST && ctx->info[c->xfer[i].issuer].l2_bytes > 0 &&
            (uint64_t)ctx->info[c->xfer[i].issuer].l2_bytes > l2)
            l2 = (uint64_t)ctx->info[c->xfer[i].issuer].l2_bytes;
    l2 = (2 * l2 + (1ull << 20) - 1) & ~((1ull << 20) - 1);
    return l2 > PSC__HOST_READ_MIN ? l2 : PSC__HOST_READ_MIN;
}

static uint64_t psc__resolve_size(const psc_context_t *ctx, const psc_bw_case_t *c, const psc_bw_test_info_t *ti,
                                  const psc_measure_opts_t *o)
{
    int host_read = 0;

    if (o->size)
        return o->size;
    if (ti->hostmem == PSC_HOSTMEM_PAGEABLE && psc__host_shape(ti->shape))
        return PSC__DEFAULT_PAGEABLE_SIZE;
    for (int i = 0; i < c->nxfer; i++)
        host_read |= c->xfer[i].src == PSC_HOST;
    if (psc__host_shape(ti->shape) && ti->engine == PSC_ENGINE_SM && host_read)
        return psc__host_read_size(ctx, c);
    if (psc__host_shape(ti->shape))
        return PSC__DEFAULT_HOST_SIZE;
    return psc__shape_p2p_off(ti->shape) ? PSC__DEFAULT_STAGED_SIZE : PSC__DEFAULT_DEVICE_SIZE;
}

static unsigned psc__resolve_iterations(const psc_bw_test_info_t *ti, const psc_measure_opts_t *o, uint64_t size)
{
    uint64_t it, round = psc__host_shape(ti->shape) && ti->hostmem != PSC_HOSTMEM_PAGEABLE ? PSC__HOST_ROUND_BYTES
                                                                                               : PSC__ROUND_BYTES;

    if (o->iterations)
        return o->iterations;
    it = (round + size - 1) / size;
    return (unsigned)(it < 4 ? 4 : it > 1000 ? 1000 : it);
}

/*
 * One transfer of a running case. With a device source, odd samples copy
 * from `alt` (another pattern), so the destination always holds the other
 * pattern when a copy starts; host sources poison the destination instead
 * (it is on a GPU: cheap), sparing a second pinned buffer.
 */
typedef struct {
    psc_xfer_t x;
    psc_buffer_t *src, *dst, *alt;
    CUstream stream;
    CUevent start, stop;
    uint64_t seed, alt_seed;
    int share; /* transfers of the case its issuer runs at once (SM kernels split the GPU) */
    float ms;
    double gbs[PSC_MAX_SAMPLES];
    uint64_t sum_want[2]; /* read-only tests: one pass's sum over src and alt (psc__oneway_sum_want) */
} psc__xfer_run_t;

typedef struct {
    const psc_bw_test_info_t *ti;
    uint64_t size;
    unsigned iterations;
    int n;
    int borrowed;                     /* the caller's buffers (psc__bw_run_on): no cache, no alternate source */
    psc__xfer_run_t x[PSC_MAX_XFERS];
    unsigned char use[PSC_MAX_XFERS]; /* issuing GPUs (indexed by GPU) */
    double verify_ns;                 /* spent preparing and checking destinations */
} psc__case_run_t;

/* The source a round copies from, and the pattern the destination must then hold. */
static const psc_buffer_t *psc__round_src(const psc__xfer_run_t *x, unsigned round)
{
    return x->alt && (round & 1) ? x->alt : x->src;
}

static uint64_t psc__round_seed(const psc__xfer_run_t *x, unsigned round)
{
    return x->alt && (round & 1) ? x->alt_seed : x->seed;
}

static int psc__gpu_to_gpu(const psc_xfer_t *x)
{
    return x->src >= 0 && x->dst >= 0 && x->src != x->dst;
}

/* Whether the case's transfers are ones the test makes; when not, why (what was wrong, what is accepted). */
static int psc__case_valid(const psc_context_t *ctx, const psc_bw_case_t *c, const psc_bw_test_info_t *ti, char *why,
                           size_t len)
{
    int host = psc__host_shape(ti->shape), local = ti->shape == PSC_SHAPE_LOCAL;

#define PSC__NO(...)                         \
    do {                                     \
        snprintf(why, len, __VA_ARGS__);     \
        return 0;                            \
    } while (0)
    if (c->nxfer < 1 || c->nxfer > PSC_MAX_XFERS)
        PSC__NO("a case of %d transfers: accepted 1 to %d", c->nxfer, PSC_MAX_XFERS);
    if (ctx->ndev > PSC_MAX_XFERS)
        PSC__NO("%d GPUs: bandwidth cases take at most %d", ctx->ndev, PSC_MAX_XFERS);
    for (int i = 0; i < c->nxfer; i++) {
        const psc_xfer_t *x = &c->xfer[i];

        if (!psc__valid_gpu(ctx, x->issuer))
            PSC__NO("transfer %d: issuing GPU %d does not exist (accepted 0 to %d)", i, x->issuer, ctx->ndev - 1);
        if ((x->src != PSC_HOST && !psc__valid_gpu(ctx, x->src)) || (x->dst != PSC_HOST && !psc__valid_gpu(ctx, x->dst)))
            PSC__NO("transfer %d: %d -> %d names a GPU that does not exist (accepted 0 to %d, or PSC_HOST)", i, x->src,
                    x->dst, ctx->ndev - 1);
        if (x->src == PSC_HOST && x->dst == PSC_HOST)
            PSC__NO("transfer %d: host -> host: accepted a GPU at one end at least", i);
        if (x->issuer != x->src && x->issuer != x->dst)
            PSC__NO("transfer %d: GPU %d issues %d -> %d: accepted the source or the destination GPU", i, x->issuer,
                    x->src, x->dst);
        if (host != (x->src == PSC_HOST || x->dst == PSC_HOST) || local != (x->src == x->dst))
            PSC__NO("transfer %d: %d -> %d is not a transfer of %s (%s)", i, x->src, x->dst, ti->name, ti->title);
        if (psc__gpu_to_gpu(x) && x->issuer != (ti->by_reader ? x->dst : x->src))
            PSC__NO("transfer %d: %s is issued by the %s GPU (%d), not GPU %d", i, ti->name,
                    ti->by_reader ? "destination" : "source", ti->by_reader ? x->dst : x->src, x->issuer);
        /* One-way host patterns move data one way only. */
        if (((ti->shape == PSC_SHAPE_H2D || ti->shape == PSC_SHAPE_HOST_TO_ALL) && x->src != PSC_HOST) ||
            ((ti->shape == PSC_SHAPE_D2H || ti->shape == PSC_SHAPE_ALL_TO_HOST) && x->dst != PSC_HOST))
            PSC__NO("transfer %d: %d -> %d runs against %s, which moves data one way only", i, x->src, x->dst,
                    ti->name);
    }
#undef PSC__NO
    return 1;
}

static CUdeviceptr psc__ptr(const psc_buffer_t *b)
{
    return b->kind == PSC_MEM_PAGEABLE ? (CUdeviceptr)(uintptr_t)b->host : b->dptr;
}

static int psc__host_node(const psc_context_t *ctx, const psc_measure_opts_t *o, int gpu)
{
    return o->host_node >= 0 ? o->host_node : ctx->info[gpu].numa_node;
}

/* A read-only transfer's reference sums, one pass over src and over alt; the sum word is dst's first. */
static psc_status_t psc__oneway_wants(psc_context_t *ctx, const psc__case_run_t *r, psc__xfer_run_t *x)
{
    psc_status_t st = psc__oneway_sum_want(ctx, x->x.issuer, x->dst->dptr, r->size, x->seed, &x->sum_want[0]);

    if (st == PSC_OK && x->alt)
        st = psc__oneway_sum_want(ctx, x->x.issuer, x->dst->dptr, r->size, x->alt_seed, &x->sum_want[1]);
    return st;
}

static psc_status_t psc__setup(psc_context_t *ctx, psc__case_run_t *r, const psc_bw_case_t *c,
                               const psc_measure_opts_t *o)
{
    psc_mem_kind_t hk = psc__mem_kind_of(r->ti->hostmem);
    int per_gpu[PSC_MAX_XFERS] = {0};
    psc_status_t st;

    for (int i = 0; i < r->n; i++) {
        psc__xfer_run_t *x = &r->x[i];
        int node = psc__host_node(ctx, o, x->x.issuer);

        r->use[x->x.issuer] = 1;
        x->share = psc__issuer_share(c->xfer, c->nxfer, i);
        x->seed = o->seed ^ psc_pattern_mix((uint64_t)c->test * 131 + (uint64_t)i,
                                             (uint64_t)(x->x.src + 2) * 1024 + (uint64_t)(x->x.dst + 2));
        if ((!r->borrowed &&
             ((st = psc__buffer_get(ctx, x->x.src == PSC_HOST ? hk : PSC_MEM_DEVICE,
                                    x->x.src == PSC_HOST ? x->x.issuer : x->x.src, node, r->size, &x->src)) != PSC_OK ||
              /* a read-only test's destination is its 8-byte sum, whatever the size read */
              (st = psc__buffer_get(ctx, x->x.dst == PSC_HOST ? hk : PSC_MEM_DEVICE,
                                    x->x.dst == PSC_HOST ? x->x.issuer : x->x.dst, node,
                                    r->ti->access == PSC_BW_ACCESS_READ && r->size < 8 ? 8 : r->size, &x->dst)) !=
                  PSC_OK)) ||
            (st = psc__pattern_fill(ctx, x->src, x->seed)) != PSC_OK ||
            (st = psc__gpu_stream(ctx, x->x.issuer, per_gpu[x->x.issuer]++, &x->stream)) != PSC_OK ||
            (st = PSC_CU(ctx, cuEventCreate, (&x->start, CU_EVENT_DEFAULT))) != PSC_OK ||
            (st = PSC_CU(ctx, cuEventCreate, (&x->stop, CU_EVENT_DEFAULT))) != PSC_OK)
            return st;
        if (!o->verify)
            continue;
        {
            double t0 = psc__now_ns();

            x->alt_seed = x->seed ^ PSC_ALT_XOR;
            if (x->x.src != PSC_HOST && !r->borrowed &&
                ((st = psc__buffer_get(ctx, PSC_MEM_DEVICE, x->x.src, node, r->size, &x->alt)) != PSC_OK ||
                 (st = psc__pattern_fill(ctx, x->alt, x->alt_seed)) != PSC_OK))
                return st;
            st = psc__pattern_fill(ctx, x->dst, x->seed ^ PSC_POISON_XOR);
            if (st == PSC_OK && r->ti->access == PSC_BW_ACCESS_READ)
                st = psc__oneway_wants(ctx, r, x);
            r->verify_ns += psc__now_ns() - t0;
            if (st != PSC_OK)
                return st;
        }
    }
    return PSC_OK;
}

static void psc__teardown(psc_context_t *ctx, psc__case_run_t *r)
{
    for (int i = 0; i < r->n; i++) {
        psc__xfer_run_t *x = &r->x[i];

        if ((x->start || x->stop) && psc__gpu_use(ctx, x->x.issuer) == PSC_OK) {
            if (x->start)
                ctx->cu.p_cuEventDestroy(x->start);
            if (x->stop)
                ctx->cu.p_cuEventDestroy(x->stop);
        }
        if (r->borrowed)
            continue;
        psc__buffer_put(x->src);
        psc__buffer_put(x->dst);
        psc__buffer_put(x->alt);
    }
}

static psc_status_t psc__enqueue(psc_context_t *ctx, const psc__case_run_t *r, const psc__xfer_run_t *x,
                                 unsigned round)
{
    psc_copy_route_t route = psc__copy_route(r->ti, &x->x, x->share);
    psc_expect_t e = psc__oneway_write_expect(r->size, round);

    if (r->ti->access == PSC_BW_ACCESS_READ)
        return psc__read_enqueue(ctx, &route, psc__ptr(psc__round_src(x, round)), r->size, r->iterations,
                                 x->dst->dptr, x->stream);
    if (r->ti->access == PSC_BW_ACCESS_WRITE)
        return psc__write_enqueue(ctx, &route, psc__ptr(x->dst), r->size, r->iterations, &e, x->stream);
    if (r->ti->access == PSC_BW_ACCESS_BULK)
        return psc__tma_enqueue(ctx, &route, psc__ptr(x->dst), psc__ptr(psc__round_src(x, round)), r->size,
                                r->iterations, x->stream);
    return psc__copy_enqueue(ctx, &route, psc__ptr(x->dst), psc__ptr(psc__round_src(x, round)), r->size,
                             r->iterations, x->stream);
}

/* One round: queue every transfer (behind gates when gated), release, wait, read the times. */
static psc_status_t psc__round(psc_context_t *ctx, psc__case_run_t *r, unsigned round, int gated,
                               const psc_measure_opts_t *o)
{
    uint64_t timeout_ns = (uint64_t)(o->gate_timeout_ms * 1e6);
    psc_status_t st = PSC_OK, sst;
    int late;

    if (gated)
        psc__gates_arm(ctx, r->use);
    for (int i = 0; i < r->n && st == PSC_OK && gated; i++)
        if ((st = psc__gpu_use(ctx, r->x[i].x.issuer)) == PSC_OK)
            st = psc__gate_launch(ctx, r->x[i].x.issuer, r->x[i].stream, timeout_ns);
    for (int i = 0; i < r->n && st == PSC_OK; i++) {
        psc__xfer_run_t *x = &r->x[i];

        if ((st = psc__gpu_use(ctx, x->x.issuer)) == PSC_OK && (st = PSC_CU(ctx, cuEventRecord, (x->start, x->stream))) == PSC_OK &&
            (st = psc__enqueue(ctx, r, x, round)) == PSC_OK)
            st = PSC_CU(ctx, cuEventRecord, (x->stop, x->stream));
    }
    /* Release even after a failed enqueue, so no stream waits for the timeout. */
    if (gated)
        psc__gates_release(ctx, r->use);
    for (int i = 0; i < r->n; i++)
        if ((sst = psc__gpu_use(ctx, r->x[i].x.issuer)) != PSC_OK ||
            (sst = PSC_CU(ctx, cuStreamSynchronize, (r->x[i].stream))) != PSC_OK)
            st = st == PSC_OK ? sst : st;
    if (st != PSC_OK)
        return st;
    if (gated && (late = psc__gates_timed_out(ctx, r->use)) >= 0)
        return psc__fail(ctx, PSC_ERR_TIMEOUT, "the gate on GPU %d gave up after %.0f ms", late, o->gate_timeout_ms);
    for (int i = 0; i < r->n && st == PSC_OK; i++)
        if ((st = psc__gpu_use(ctx, r->x[i].x.issuer)) == PSC_OK)
            st = PSC_CU(ctx, cuEventElapsedTime, (&r->x[i].ms, r->x[i].start, r->x[i].stop));
    return st;
}

/* Poison the destinations that need it before a round (all of them: a round is being redone). */
static psc_status_t psc__poison(psc_context_t *ctx, psc__case_run_t *r, unsigned round, int all)
{
    double t0 = psc__now_ns();
    psc_status_t st = PSC_OK;

    for (int i = 0; i < r->n && st == PSC_OK; i++)
        if (r->ti->access == PSC_BW_ACCESS_READ) /* nothing to poison: the sum starts from 0 */
            st = psc__oneway_sum_zero(ctx, r->x[i].x.issuer, r->x[i].dst->dptr);
        else if (all || !r->x[i].alt)
            st = psc__pattern_fill(ctx, r->x[i].dst, r->x[i].seed ^ PSC_POISON_XOR ^ ((uint64_t)round << 32));
    r->verify_ns += psc__now_ns() - t0;
    return st;
}

/* Check every destination; one report entry per round. */
static psc_status_t psc__check(psc_context_t *ctx, psc__case_run_t *r, unsigned round, psc_verify_report_t *rep)
{
    double t0 = psc__now_ns();
    const psc_buffer_t *dst[PSC_MAX_XFERS];
    uint64_t seed[PSC_MAX_XFERS];
    psc_expect_t e[PSC_MAX_XFERS];
    psc_check_t all = PSC_CHECK_CLEAN, v[PSC_MAX_XFERS];
    psc_status_t st;

    for (int i = 0; i < r->n; i++) {
        dst[i] = r->x[i].dst;
        seed[i] = psc__round_seed(&r->x[i], round);
        e[i] = psc__oneway_write_expect(r->size, round);
    }
    if (r->ti->access == PSC_BW_ACCESS_READ) {
        for (int i = 0; i < r->n; i++) {
            const psc__xfer_run_t *x = &r->x[i];
            uint64_t want = x->sum_want[x->alt && (round & 1)] * r->iterations;

            if ((st = psc__oneway_sum_check(ctx, x->x.issuer, x->dst->dptr, want, &v[i])) != PSC_OK)
                return st;
        }
    } else if ((st = r->ti->access == PSC_BW_ACCESS_WRITE ? psc__expect_check_many(ctx, dst, e, r->n, v)
                                                        : psc__pattern_check_many(ctx, dst, seed, r->n, v)) != PSC_OK) {
        return st;
    }
    for (int i = 0; i < r->n; i++)
        psc__check_fold(&all, &v[i]);
    psc__check_report_add(rep, &all);
    r->verify_ns += psc__now_ns() - t0;
    return PSC_OK;
}

static void psc__finish(psc_bw_result_t *res, psc__case_run_t *r)
{
    const psc_verify_report_t *v = &res->verify;

    psc_stats_compute(res->samples_gbs, res->nsamples, &res->stats);
    for (int i = 0; i < r->n; i++) {
        psc_stats_t s;

        if (psc_stats_compute(r->x[i].gbs, res->nsamples, &s) == PSC_OK)
            res->xfer_gbs[i] = s.median;
    }
    if (v->bad_bytes && r->ti->access == PSC_BW_ACCESS_READ) {
        res->status = PSC_RESULT_FAILED;
        snprintf(res->reason, sizeof(res->reason),
                 "wrong data: the sum of the words read differs from the source pattern's in %u of %u checked "
                 "samples (%" PRIu64 " bytes of the sums differ)", v->bad_samples, v->checked, v->bad_bytes);
    } else if (v->bad_bytes) {
        res->status = PSC_RESULT_FAILED;
        snprintf(res->reason, sizeof(res->reason),
                 "wrong data: %" PRIu64 " bad bytes in %u of %u checked samples; first at offset %" PRId64
                 ": expected 0x%02x, found 0x%02x",
                 v->bad_bytes, v->bad_samples, v->checked, v->first_bad_offset, v->expected, v->found);
    } else {
        res->status = PSC_RESULT_PASSED;
    }
}

/* Rounds until enough samples are taken and the median is stable, or the cap. */
static psc_status_t psc__sample(psc_context_t *ctx, psc__case_run_t *r, const psc_measure_opts_t *o,
                                psc_bw_result_t *res)
{
    psc_status_t st;

    for (unsigned round = 0;; round++) {
        int timed = round >= o->warmup;
        float longest = 0;

        /* Timed rounds are checked; a warm-up round is not (its figure is not reported either). */
        if (o->verify && timed && (st = psc__poison(ctx, r, round, 0)) != PSC_OK)
            return st;
        st = psc__round(ctx, r, round, res->gated, o);
        if (st == PSC_ERR_TIMEOUT && res->gated) {
            /* Something blocked the host while queuing (the driver staging a copy): time without gates. */
            psc__log(ctx, PSC_LOG_INFO, "%s: gate timed out, timing without gates", psc_bw_test_name(res->c.test));
            res->gated = 0;
            if ((st = o->verify ? psc__poison(ctx, r, round, 1) : PSC_OK) == PSC_OK)
                st = psc__round(ctx, r, round, 0, o);
        }
        if (st != PSC_OK)
            return st;
        if (timed) {
            unsigned k = res->nsamples++;

            for (int i = 0; i < r->n; i++) {
                longest = r->x[i].ms > longest ? r->x[i].ms : longest;
                r->x[i].gbs[k] = (double)r->size * r->iterations / (r->x[i].ms * 1e-3) / 1e9;
            }
            res->samples_gbs[k] = (double)res->bytes_per_sample / (longest * 1e-3) / 1e9;
            if (ctx->hooks.corrupt_offset >= 0 &&
                (st = psc__pattern_flip(ctx, r->ti->access == PSC_BW_ACCESS_READ ? psc__round_src(&r->x[0], round)
                                                                               : r->x[0].dst,
                                        (uint64_t)ctx->hooks.corrupt_offset)) != PSC_OK)
                return st;
        }
        if (o->verify && timed && (st = psc__check(ctx, r, round, &res->verify)) != PSC_OK)
            return st;
        if (res->nsamples >= o->max_samples)
            return PSC_OK;
        if (res->nsamples >= o->samples &&
            (o->max_samples == o->samples || psc__sampling_stable(res->samples_gbs, res->nsamples, o->stable_pct)))
            return PSC_OK;
    }
}

psc_status_t psc__bw_case_args(psc_context_t *ctx, const char *who, const psc_bw_case_t *c,
                               const psc_bw_test_info_t *ti, const void *o, const void *out)
{
    if (!ctx)
        return PSC_ERR_INVALID;
    if (!c || !o || !out)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: no %s given", who, !c ? "case" : !o ? "options" : "result");
    if (!ti)
        return psc__fail(ctx, PSC_ERR_INVALID, "bandwidth test %d does not exist: accepted 0 to %d", c->test,
                         psc_bw_test_count() - 1);
    return PSC_OK;
}

/* What psc_bw_run refuses before it takes anything: no case, options or result; a test that does not exist; options
 * or a case that their checks refuse. */
static psc_status_t psc__bw_args(psc_context_t *ctx, const psc_bw_case_t *c, const psc_bw_test_info_t *ti,
                                 const psc_measure_opts_t *o, const psc_bw_result_t *out)
{
    char why[256];
    psc_status_t st;

    if ((st = psc__bw_case_args(ctx, "psc_bw_run", c, ti, o, out)) != PSC_OK)
        return st;
    if (psc__measure_opts_check(o, why, sizeof(why)) != PSC_OK || !psc__case_valid(ctx, c, ti, why, sizeof(why)))
        return psc__fail(ctx, PSC_ERR_INVALID, "%s", why);
    return PSC_OK;
}

/* A new run of the case: its transfers and its size (*out, to free). */
static psc_status_t psc__case_run_new(psc_context_t *ctx, const psc_bw_case_t *c, const psc_bw_test_info_t *ti,
                                      const psc_measure_opts_t *o, psc__case_run_t **out)
{
    psc__case_run_t *r = calloc(1, sizeof(*r));

    if (!r)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for a %s case", ti->name);
    r->ti = ti;
    r->n = c->nxfer;
    for (int i = 0; i < r->n; i++) /* peers, buffers and streams all read the transfers */
        r->x[i].x = c->xfer[i];
    r->size = psc__resolve_size(ctx, c, ti, o);
    *out = r;
    return PSC_OK;
}

/* The run copies between the caller's buffers src and dst. Whole buffers are filled, poisoned and checked: the copy
 * must cover them. */
static psc_status_t psc__case_run_borrow(psc_context_t *ctx, psc__case_run_t *r, const psc_measure_opts_t *o,
                                         psc_buffer_t *src, psc_buffer_t *dst)
{
    r->borrowed = 1;
    r->x[0].src = src;
    r->x[0].dst = dst;
    if (r->n != 1 || o->size != src->size || o->size != dst->size) {
        unsigned long long ss = src->size, ds = dst->size, os = o->size;

        return psc__fail(ctx, PSC_ERR_INVALID,
                         "a case over given buffers (%llu and %llu bytes, a copy of %llu): accepted one transfer "
                         "of both buffers' size", ss, ds, os);
    }
    return PSC_OK;
}

/* The run's iterations per sample; a planted corruption needs verification and an offset within the size. */
static psc_status_t psc__case_run_iterations(psc_context_t *ctx, psc__case_run_t *r, const psc_measure_opts_t *o)
{
    r->iterations = psc__resolve_iterations(r->ti, o, r->size);
    if (ctx->hooks.corrupt_offset >= 0 && (!o->verify || (uint64_t)ctx->hooks.corrupt_offset >= r->size)) {
        unsigned long long size = r->size;

        return psc__fail(ctx, PSC_ERR_INVALID,
                         "corruption offset %lld: accepted with verification on and 0 to %llu (the size - 1)",
                         (long long)ctx->hooks.corrupt_offset, size - 1);
    }
    return PSC_OK;
}

/* The result before any sample: the case, its sizes, whether it is gated, the host memory's node. */
static void psc__bw_result_init(psc_context_t *ctx, const psc_bw_case_t *c, const psc_measure_opts_t *o,
                                const psc__case_run_t *r, psc_bw_result_t *res)
{
    const psc_bw_test_info_t *ti = r->ti;

    memset(res, 0, sizeof(*res));
    res->c = *c;
    res->size = r->size;
    res->iterations = r->iterations;
    res->bytes_per_sample = r->size * r->iterations * (uint64_t)c->nxfer;
    res->verify.first_bad_offset = -1;
    /* Pageable memory and host-staged peer copies block the host while queued: no gate for them. */
    res->gated = !(ti->hostmem == PSC_HOSTMEM_PAGEABLE && psc__host_shape(ti->shape)) &&
                 !psc__shape_p2p_off(ti->shape);
    res->host_node = -1;
    if (psc__host_shape(ti->shape)) {
        res->host_node = psc__host_node(ctx, o, c->xfer[0].issuer);
        if (res->host_node < 0 && psc_host_topo_numa_count(ctx->host) == 1)
            res->host_node = 0;
    }
}

/* Peer access as the case needs it (or the result waived), then buffers and streams, the samples, the figures. */
static psc_status_t psc__bw_measure(psc_context_t *ctx, const psc_bw_case_t *c, const psc_measure_opts_t *o,
                                    psc__case_run_t *r, psc_bw_result_t *res)
{
    int waived = 0;
    psc_status_t st;

    for (int i = 0; i < c->nxfer && r->ti->access == PSC_BW_ACCESS_BULK && !waived; i++)
        waived = psc__tma_waiver(c->xfer[i].issuer, ctx->info[c->xfer[i].issuer].cc_major,
                                 ctx->info[c->xfer[i].issuer].cc_minor, res->reason, sizeof(res->reason));
    /* Given buffers are reachable from the issuer already (peer access, or memory mapped for it). */
    if (!waived && !r->borrowed &&
        (st = psc__peers_for(ctx, c->xfer, c->nxfer, psc__shape_p2p_off(r->ti->shape), &waived, res->reason,
                             sizeof(res->reason))) != PSC_OK)
        return st;
    if (waived) {
        res->status = PSC_RESULT_WAIVED;
        return PSC_OK;
    }
    if ((st = psc__setup(ctx, r, c, o)) != PSC_OK || (st = psc__sample(ctx, r, o, res)) != PSC_OK)
        return st;
    psc__finish(res, r);
    return PSC_OK;
}

/* psc__bw_run, or psc__bw_run_on with the caller's buffers src and dst (both set, or neither). */
static psc_status_t psc__bw_run_case(psc_context_t *ctx, const psc_bw_case_t *c, const psc_measure_opts_t *o,
                                     psc_buffer_t *src, psc_buffer_t *dst, psc_bw_result_t *out)
{
    const psc_bw_test_info_t *ti = c ? psc_bw_test_info(c->test) : NULL;
    psc__case_run_t *r = NULL;
    psc_bw_result_t res;
    psc_status_t st;
    double t0 = psc__now_ns();

    if ((st = psc__bw_args(ctx, c, ti, o, out)) != PSC_OK)
        return st;
    if (ti->engine == PSC_ENGINE_CPU) /* the CPU copies through a mapping of GPU memory: its own buffers */
        return src ? psc__fail(ctx, PSC_ERR_INVALID, "%s: a case over given buffers: accepted copy-engine and SM "
                               "tests", ti->name)
                   : psc__gpumap_bw_run(ctx, c, o, out);
    if ((st = psc__case_run_new(ctx, c, ti, o, &r)) != PSC_OK)
        return st;
    if ((src && (st = psc__case_run_borrow(ctx, r, o, src, dst)) != PSC_OK) ||
        (st = psc__case_run_iterations(ctx, r, o)) != PSC_OK) {
        free(r);
        return st;
    }
    psc__bw_result_init(ctx, c, o, r, &res);
    if (psc__bw_measure(ctx, c, o, r, &res) != PSC_OK) {
        res.status = PSC_RESULT_FAILED;
        snprintf(res.reason, sizeof(res.reason), "%s", ctx->last_error);
    }
    psc__teardown(ctx, r);
    res.verify_ms = r->verify_ns / 1e6;
    res.run_ms = (psc__now_ns() - t0) / 1e6;
    free(r);
    *out = res;
    return PSC_OK;
}

psc_status_t psc__bw_run(psc_context_t *ctx, const psc_bw_case_t *c, const psc_measure_opts_t *o,
                         psc_bw_result_t *out)
{
    return psc__bw_run_case(ctx, c, o, NULL, NULL, out);
}

psc_status_t psc__bw_run_on(psc_context_t *ctx, const psc_bw_case_t *c, const psc_measure_opts_t *o,
                            psc_buffer_t *src, psc_buffer_t *dst, psc_bw_result_t *out)
{
    if (!ctx)
        return PSC_ERR_INVALID;
    if (!src || !dst)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc__bw_run_on: no %s buffer given", !src ? "source" : "destination");
    return psc__bw_run_case(ctx, c, o, src, dst, out);
}

PSC_RUNNER_KIND(psc__bw_kind, "psc_bw_run", psc_bw_case_t, psc_bw_cases, psc_bw_result_t, psc__bw_run,
                psc_measure_opts_t, psc_bw_run_test_opts_t);

psc_status_t psc__bw_run_held(psc_context_t *ctx, const psc_bw_case_t *c, const psc_measure_opts_t *o,
                              psc_bw_result_t *out)
{
    return psc__runner_held(ctx, &psc__bw_kind, c, o, out);
}
