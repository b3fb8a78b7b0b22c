/*
 * Latency through a CPU mapping of GPU memory: the latency registry's
 * PSC_LAT_GPUMAP tests. sync (gdrcopy's copylat): per size, the CPU's copy
 * through the mapping per call, then a synchronous cuMemcpy of the same
 * size, both timed by the CPU and both checked. flag (pplat): the CPU writes
 * a flag into the GPU's memory through the mapping, the GPU's pong kernel
 * answers beside it, the CPU reads the answer through the mapping. mapcost
 * (apiperf): psc_gpumap_map and psc_gpumap_unmap per call by size, a word
 * written through each size's last mapping and read back by cuMemcpy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpumap/gpumap.h"
#include "gpumap/measure.h"
#include "lat/flag.h"
#include "lat/lat_gpumap.h"
#include "lat/lat_record.h"
#include "pattern/check.h"

#define PSC__MAP_WARMUP 10
#define PSC__FLAG_ANSWER 128 /* the answer's offset from the flag: a cache line and more away */

static const uint64_t psc__map_copy_sizes[] = {1, 8, 64, 1024, 16384, 65536};
static const uint64_t psc__map_cost_sizes[] = {64ull << 10, 256ull << 10, 1ull << 20, 4ull << 20, 16ull << 20,
                                               64ull << 20};

/* The first len bytes of b against seed's pattern: a wrong byte fails the result, naming the copy. */
static psc_status_t psc__map_check(psc_context_t *ctx, const psc_buffer_t *b, uint64_t len, uint64_t seed,
                                   const char *what, psc_lat_result_t *res)
{
    psc_buffer_t view = *b;
    psc_check_t chk;
    psc_status_t st;

    view.size = len;
    if ((st = psc__pattern_check(ctx, &view, seed, &chk)) != PSC_OK || !chk.bad_bytes)
        return st;
    res->status = PSC_RESULT_FAILED;
    snprintf(res->reason, sizeof(res->reason),
             "wrong data after %s: %llu bad bytes in a %llu-byte copy; first at offset %lld: expected 0x%02x, found "
             "0x%02x", what, (unsigned long long)chk.bad_bytes, (unsigned long long)len, (long long)chk.first_bad,
             chk.expected, chk.found);
    return PSC_OK;
}

/* One size of copylat: the mapped copy (mapped 1) or cuMemcpy (0), n timed calls after a warm-up, then checked. */
static psc_status_t psc__map_copy_one(psc_context_t *ctx, const psc_lat_test_info_t *ti, psc_gpumap_t *m,
                                      const psc_buffer_t *dev, const psc_buffer_t *host, uint64_t len, uint64_t seed,
                                      int mapped, const psc_lat_opts_t *o, double *ns, psc_lat_result_t *res)
{
    const psc_buffer_t *dst = ti->to_gpu ? dev : host;
    psc_status_t st;

    if ((st = psc__pattern_fill(ctx, dst, seed ^ PSC_POISON_XOR)) != PSC_OK || (st = psc__gpu_use(ctx, dev->gpu)) != PSC_OK)
        return st;
    for (unsigned i = 0; i < PSC__MAP_WARMUP + o->samples && st == PSC_OK; i++) {
        double t0 = psc__now_ns();

        if (mapped)
            st = ti->to_gpu ? psc_gpumap_write(m, 0, host->host, (size_t)len) : psc_gpumap_read(m, 0, host->host, (size_t)len);
        else
            st = ti->to_gpu ? PSC_CU(ctx, cuMemcpyHtoD, (dev->dptr, host->host, (size_t)len))
                            : PSC_CU(ctx, cuMemcpyDtoH, (host->host, dev->dptr, (size_t)len));
        if (i >= PSC__MAP_WARMUP)
            ns[i - PSC__MAP_WARMUP] = psc__now_ns() - t0;
    }
    if (st != PSC_OK)
        return st;
    return psc__map_check(ctx, dst, len, seed, mapped ? (ti->to_gpu ? "psc_gpumap_write" : "psc_gpumap_read")
                                                      : (ti->to_gpu ? "cuMemcpyHtoD" : "cuMemcpyDtoH"), res);
}

static psc_status_t psc__map_copy(psc_context_t *ctx, const psc_lat_test_info_t *ti, const psc_buffer_t *dev,
                                  psc_gpumap_t *m, const psc_lat_opts_t *o, psc_lat_result_t *res)
{
    const int g = dev->gpu, nsz = (int)(sizeof(psc__map_copy_sizes) / sizeof(psc__map_copy_sizes[0]));
    const uint64_t seed = 0x6d6170ull ^ (uint64_t)g << 8 ^ (uint64_t)ti->to_gpu;
    double *ns = calloc(o->samples, sizeof(*ns));
    psc_buffer_t *host = NULL;
    psc_status_t st;

    if (!ns)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    if ((st = psc__buffer_get(ctx, PSC_MEM_PINNED, g, ctx->info[g].numa_node, dev->size, &host)) != PSC_OK ||
        (st = psc__pattern_fill(ctx, ti->to_gpu ? host : dev, seed)) != PSC_OK)
        goto out;
    for (int k = 0; k < nsz && res->status != PSC_RESULT_FAILED; k++) {
        const uint64_t len = psc__map_copy_sizes[k];

        res->sizes[k] = len;
        if ((st = psc__map_copy_one(ctx, ti, m, dev, host, len, seed, 1, o, ns, res)) != PSC_OK ||
            res->status == PSC_RESULT_FAILED || (st = psc__lat_record(ctx, res, (unsigned)k, ns, o->samples, &res->lat[k])) != PSC_OK ||
            (st = psc__map_copy_one(ctx, ti, m, dev, host, len, seed, 0, o, ns, res)) != PSC_OK ||
            res->status == PSC_RESULT_FAILED || (st = psc__lat_record(ctx, res, (unsigned)k, ns, o->samples, &res->submit[k])) != PSC_OK)
            goto out;
        res->nsizes = (unsigned)k + 1;
    }
    res->status = PSC_RESULT_PASSED;
out:
    psc__buffer_put(host);
    free(ns);
    return st;
}

/* pplat: the flag at the mapping's start, the answer PSC__FLAG_ANSWER bytes on; one way = round trip / 2. */
static psc_status_t psc__map_flag(psc_context_t *ctx, const psc_buffer_t *dev, psc_gpumap_t *m, const psc_lat_opts_t *o,
                                  psc_lat_result_t *res)
{
    const int g = dev->gpu;
    unsigned iters = o->samples * 16, lost = 0, gpu_err = 0;
    uint64_t timeout_ns = (uint64_t)(o->timeout_ms * 1e6);
    double *ns = calloc(iters, sizeof(*ns));
    CUdeviceptr derr = 0, dflag = dev->dptr, dans = dev->dptr + PSC__FLAG_ANSWER;
    unsigned char zero[PSC__FLAG_ANSWER + sizeof(unsigned)] = {0};
    psc_status_t st, sst;

    if (!ns)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    if ((st = psc__gpu_use(ctx, g)) != PSC_OK || (st = PSC_CU(ctx, cuMemcpyHtoD, (dflag, zero, sizeof(zero)))) != PSC_OK ||
        (st = psc__dev_scratch(ctx, g, sizeof(unsigned), &derr)) != PSC_OK)
        goto out;
    {
        void *pong[] = {&dflag, &dans, &iters, &timeout_ns, &derr};

        if ((st = psc__launch(ctx, g, ctx->gpu[g].fn_pong, 1, 1, pong)) != PSC_OK)
            goto out;
    }
    for (unsigned i = 1; i <= iters && !lost && st == PSC_OK; i++) {
        double t0 = psc__now_ns();
        unsigned got = 0;

        /* A 4-byte write-combined store, fenced: on its way to the GPU when the call returns. */
        st = psc_gpumap_write(m, 0, &i, sizeof(i));
        while (st == PSC_OK && (st = psc_gpumap_read(m, PSC__FLAG_ANSWER, &got, sizeof(got))) == PSC_OK && got != i)
            if (psc__now_ns() - t0 > (double)timeout_ns)
                lost = i;
        ns[i - 1] = (psc__now_ns() - t0) / 2.0;
    }
    /* The kernel ends by answering or by giving up: waited for on every path before its memory goes. */
    if ((sst = PSC_CU(ctx, cuStreamSynchronize, (ctx->gpu[g].stream))) != PSC_OK && st == PSC_OK)
        st = sst;
    if (st != PSC_OK || (st = PSC_CU(ctx, cuMemcpyDtoH, (&gpu_err, derr, sizeof(gpu_err)))) != PSC_OK)
        goto out;
    if (lost || gpu_err) {
        res->status = PSC_RESULT_FAILED;
        snprintf(res->reason, sizeof(res->reason), "round trip %u through the mapping got no answer within %.0f ms",
                 lost ? lost : 1, o->timeout_ms);
        goto out;
    }
    res->nsizes = 1;
    res->sizes[0] = sizeof(unsigned);
    if ((st = psc__lat_record(ctx, res, 0, ns, iters, &res->lat[0])) == PSC_OK)
        res->status = PSC_RESULT_PASSED;
out:
    psc__dev_scratch_free(ctx, g, derr);
    free(ns);
    return st;
}

/* apiperf at one size: map and unmap n times; the last mapping carries a word read back by cuMemcpy. */
static psc_status_t psc__map_cost_one(psc_context_t *ctx, const psc_buffer_t *dev, uint64_t len, unsigned n,
                                      double *map_ns, double *unmap_ns, psc_lat_result_t *res)
{
    const uint64_t stamp = 0x6170697065726600ull ^ len;
    uint64_t back = 0;
    psc_status_t st = PSC_OK;

    for (unsigned i = 0; i < n; i++) {
        psc_gpumap_t *m = NULL;
        double t0 = psc__now_ns(), t1;

        if ((st = psc__gpumap_map_in(ctx, dev->gpu, dev->dptr, (size_t)len, 0, &m)) != PSC_OK)
            return st;
        t1 = psc__now_ns();
        if (i + 1 == n && (st = psc_gpumap_write(m, (size_t)len - sizeof(stamp), &stamp, sizeof(stamp))) != PSC_OK) {
            psc_gpumap_unmap(m);
            return st;
        }
        if ((st = psc_gpumap_unmap(m)) != PSC_OK)
            return st;
        map_ns[i] = t1 - t0;
        unmap_ns[i] = psc__now_ns() - t1;
    }
    if ((st = psc__gpu_use(ctx, dev->gpu)) != PSC_OK ||
        (st = PSC_CU(ctx, cuMemcpyDtoH, (&back, dev->dptr + len - sizeof(back), sizeof(back)))) != PSC_OK)
        return st;
    if (back != stamp) {
        res->status = PSC_RESULT_FAILED;
        snprintf(res->reason, sizeof(res->reason), "a word written through the mapping of %llu bytes reads back as "
                 "0x%016llx, not 0x%016llx", (unsigned long long)len, (unsigned long long)back,
                 (unsigned long long)stamp);
    }
    return PSC_OK;
}

static psc_status_t psc__map_cost(psc_context_t *ctx, const psc_buffer_t *dev, const psc_lat_opts_t *o,
                                  psc_lat_result_t *res)
{
    const int nsz = (int)(sizeof(psc__map_cost_sizes) / sizeof(psc__map_cost_sizes[0]));
    double *map_ns = calloc(o->samples, sizeof(double)), *unmap_ns = calloc(o->samples, sizeof(double));
    psc_status_t st = PSC_OK;

    if (!map_ns || !unmap_ns) {
        st = psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
        goto out;
    }
    /* one untimed map first: a backend's one-time setup (libgdrapi loaded, gdrdrv opened) is not a map's cost */
    if ((st = psc__map_cost_one(ctx, dev, psc__map_cost_sizes[0], 1, map_ns, unmap_ns, res)) != PSC_OK)
        goto out;
    for (int k = 0; k < nsz && res->status != PSC_RESULT_FAILED; k++) {
        const uint64_t len = psc__map_cost_sizes[k];

        res->sizes[k] = len;
        if ((st = psc__map_cost_one(ctx, dev, len, o->samples, map_ns, unmap_ns, res)) != PSC_OK) {
            /* A size past what BAR1 holds ends the sweep: the sizes before it stand. */
            if (st == PSC_ERR_NO_MEMORY && k > 0) {
                snprintf(res->reason, sizeof(res->reason), "stopped before %llu bytes: %.440s", (unsigned long long)len,
                         ctx->last_error);
                st = PSC_OK;
            }
            goto out;
        }
        if (res->status == PSC_RESULT_FAILED || (st = psc__lat_record(ctx, res, (unsigned)k, map_ns, o->samples, &res->lat[k])) != PSC_OK ||
            (st = psc__lat_record(ctx, res, (unsigned)k, unmap_ns, o->samples, &res->submit[k])) != PSC_OK)
            goto out;
        res->nsizes = (unsigned)k + 1;
    }
out:
    if (st == PSC_OK && res->status != PSC_RESULT_FAILED)
        res->status = PSC_RESULT_PASSED;
    free(map_ns);
    free(unmap_ns);
    return st;
}

psc_status_t psc__gpumap_lat_run(psc_context_t *ctx, const psc_lat_test_info_t *ti, const psc_lat_case_t *c,
                                 const psc_lat_opts_t *o, psc_lat_result_t *res)
{
    const int g = c->issuer;
    const uint64_t size = ti->method == PSC_LAT_MAPCOST ? psc__map_cost_sizes[5]
                          : ti->method == PSC_LAT_FLAG  ? PSC_GPUMAP_PAGE
                                                        : psc__map_copy_sizes[5];
    CUdeviceptr alloc = 0;
    psc_gpumap_t *m = NULL;
    psc_buffer_t dev, first;
    psc_status_t st, ust;

    if (ti->method != PSC_LAT_SYNC && ti->method != PSC_LAT_FLAG && ti->method != PSC_LAT_MAPCOST)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s: through a CPU mapping: accepted the sync, flag and mapcost "
                         "methods", ti->name);
    if ((st = psc__gpumap_dev_alloc(ctx, g, size, &alloc, &dev)) != PSC_OK)
        return st;
    /* Mapped once up front (the map cost's smallest size: BAR1 may hold no more): where no backend maps this
     * GPU's memory, the test is waived with the reasons. */
    first = dev;
    if (ti->method == PSC_LAT_MAPCOST)
        first.size = psc__map_cost_sizes[0];
    if ((st = psc__gpumap_measure_map(ctx, &first, &m, res->reason, sizeof(res->reason))) != PSC_OK)
        goto out;
    if (!m) {
        res->status = PSC_RESULT_WAIVED;
        goto out;
    }
    if (ti->method == PSC_LAT_MAPCOST) {
        psc_gpumap_unmap(m);
        m = NULL;
        st = psc__map_cost(ctx, &dev, o, res);
    } else {
        st = ti->method == PSC_LAT_FLAG ? psc__map_flag(ctx, &dev, m, o, res) : psc__map_copy(ctx, ti, &dev, m, o, res);
    }
out:
    if (m && (ust = psc_gpumap_unmap(m)) != PSC_OK && st == PSC_OK)
        st = ust;
    psc__gpumap_dev_free(ctx, g, alloc);
    return st;
}
