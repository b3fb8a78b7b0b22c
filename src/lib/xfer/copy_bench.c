/*
 * psc_copy measured as an application uses it: copies queued back to back on
 * one stream, no gate, so the CPU's cost of queueing counts wherever it is the
 * bottleneck. psc_copy_calibrate times each route of each path for the route
 * choice; psc_copy_bench times psc_copy against the driver's own call. Every
 * size's result is checked byte for byte, the bytes past it too.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mem/buffer.h"
#include "opts.h"
#include "pattern/check.h"
#include "xfer/app_copy.h"
#include "xfer/copy.h"
#include "xfer/copy_bench_fold.h"

#define PSC_CB_TARGET_US 2000.0 /* GPU time a sample aims at */
#define PSC_CB_MAX_REPS 500u    /* copies in one sample at most (the launch queue stays short) */
#define PSC_CB_MIN_REPS 3u
#define PSC_CB_SEED 0xC0B1E5ull

typedef struct {
    int src, dst, stream_gpu;
} psc_cb_path_t;

typedef struct {
    psc_buffer_t *src, *dst;
    CUevent start, stop;
    CUstream stream;
    psc_cb_path_t path;
    psc_copy_prep_t *prep; /* the copy of the size being measured, prepared */
} psc_cb_bed_t;

/* Every path between the GPUs (each ordered pair from either end's stream, each GPU inside itself) and the host. */
static int psc__cb_paths(const int *d, int m, int host, psc_cb_path_t *out, int cap)
{
    int n = 0;

    for (int i = 0; i < m; i++) {
        for (int j = 0; j < m; j++) {
            if (n + 2 > cap)
                return n;
            out[n++] = (psc_cb_path_t){d[i], d[j], d[i]};
            if (i != j)
                out[n++] = (psc_cb_path_t){d[i], d[j], d[j]};
        }
        if (host && n + 2 <= cap) {
            out[n++] = (psc_cb_path_t){PSC_HOST, d[i], d[i]};
            out[n++] = (psc_cb_path_t){d[i], PSC_HOST, d[i]};
        }
    }
    return n;
}

static psc_status_t psc__cb_buffer(psc_context_t *ctx, int where, int gpu, uint64_t size, psc_buffer_t **out)
{
    if (where == PSC_HOST)
        return psc__buffer_get(ctx, PSC_MEM_PINNED, gpu, ctx->info[gpu].numa_node, size, out);
    return psc__buffer_get(ctx, PSC_MEM_DEVICE, where, -1, size, out);
}

static void psc__cb_bed_close(psc_context_t *ctx, psc_cb_bed_t *b)
{
    if (b->start || b->stop)
        psc__gpu_use(ctx, b->path.stream_gpu);
    if (b->start)
        ctx->cu.p_cuEventDestroy(b->start);
    if (b->stop)
        ctx->cu.p_cuEventDestroy(b->stop);
    psc__buffer_put(b->src);
    psc__buffer_put(b->dst);
    memset(b, 0, sizeof(*b));
}

/* Buffers of `size` at both ends (the source holding the pattern), events, and the stream GPU's stream. */
static psc_status_t psc__cb_bed_open(psc_context_t *ctx, const psc_cb_path_t *p, uint64_t size, psc_cb_bed_t *b)
{
    psc_status_t st;

    memset(b, 0, sizeof(*b));
    b->path = *p;
    if ((st = psc__cb_buffer(ctx, p->src, p->stream_gpu, size, &b->src)) != PSC_OK ||
        (st = psc__cb_buffer(ctx, p->dst, p->stream_gpu, size, &b->dst)) != PSC_OK ||
        (st = psc__pattern_fill(ctx, b->src, PSC_CB_SEED)) != PSC_OK ||
        (st = psc__gpu_use(ctx, p->stream_gpu)) != PSC_OK ||
        (st = PSC_CU(ctx, cuEventCreate, (&b->start, CU_EVENT_DEFAULT))) != PSC_OK ||
        (st = PSC_CU(ctx, cuEventCreate, (&b->stop, CU_EVENT_DEFAULT))) != PSC_OK)
        goto err;
    b->stream = ctx->gpu[p->stream_gpu].stream;
    { /* peer access from either end to the other (put back by the guard), for the SM kernel of the stream's GPU and
       * of a hop; a pair without it copies by CE */
        psc_xfer_t x[2] = {{p->src, p->dst, p->src}, {p->src, p->dst, p->dst}};
        char why[160];
        int waived;

        if ((st = psc__peers_for(ctx, x, 2, 0, &waived, why, sizeof(why))) != PSC_OK ||
            (st = psc__gpu_use(ctx, p->stream_gpu)) != PSC_OK)
            goto err;
    }
    return PSC_OK;
err:
    psc__cb_bed_close(ctx, b);
    return st;
}

static void *psc__cb_addr(const psc_buffer_t *b)
{
    return b->kind == PSC_MEM_DEVICE ? (void *)(uintptr_t)b->dptr : b->host;
}

/* Queue one copy of n bytes by the method (the stream GPU's context current). */
static psc_status_t psc__cb_issue(psc_context_t *ctx, psc_cb_method_t m, const psc_cb_bed_t *b, const psc_copy_plan_t *pl,
                                  uint64_t n)
{
    CUdeviceptr d = b->dst->dptr, s = b->src->dptr;

    switch (m) {
    case PSC_CB_PLAN:
        return psc__copy_plan_enqueue(ctx, pl);
    case PSC_CB_PSC:
        return psc_copy(ctx, psc__cb_addr(b->dst), psc__cb_addr(b->src), n, (struct CUstream_st *)b->stream);
    case PSC_CB_PREP:
        return psc_copy_run(ctx, b->prep);
    case PSC_CB_DRIVER:
        (void)d, (void)s;
        return PSC_CU(ctx, cuMemcpyAsync, ((CUdeviceptr)(uintptr_t)psc__cb_addr(b->dst),
                                           (CUdeviceptr)(uintptr_t)psc__cb_addr(b->src), n, b->stream));
    case PSC_CB_METHODS:
        break;
    }
    return PSC_ERR_INVALID;
}

/* One sample: reps copies back to back; GPU time per copy (events) and CPU time per call. */
static psc_status_t psc__cb_sample(psc_context_t *ctx, psc_cb_method_t m, const psc_cb_bed_t *b,
                                   const psc_copy_plan_t *pl, uint64_t n, unsigned reps, double *gpu_us, double *cpu_us)
{
    psc_status_t st;
    double t0, t1;
    float ms = 0;

    if ((st = PSC_CU(ctx, cuEventRecord, (b->start, b->stream))) != PSC_OK)
        return st;
    t0 = psc__now_ns();
    for (unsigned k = 0; k < reps && st == PSC_OK; k++)
        st = psc__cb_issue(ctx, m, b, pl, n);
    t1 = psc__now_ns();
    if (st != PSC_OK)
        return st;
    if ((st = PSC_CU(ctx, cuEventRecord, (b->stop, b->stream))) != PSC_OK ||
        (st = PSC_CU(ctx, cuEventSynchronize, (b->stop))) != PSC_OK ||
        (st = PSC_CU(ctx, cuEventElapsedTime, (&ms, b->start, b->stop))) != PSC_OK)
        return st;
    *gpu_us = (double)ms * 1000.0 / reps;
    *cpu_us = (t1 - t0) / 1000.0 / reps;
    return PSC_OK;
}

/* Copies per sample: about PSC_CB_TARGET_US of GPU time at est us per copy, within the bounds. */
static unsigned psc__cb_reps(double est)
{
    unsigned reps = est > 0 ? (unsigned)(PSC_CB_TARGET_US / est) : PSC_CB_MAX_REPS;

    return reps < PSC_CB_MIN_REPS ? PSC_CB_MIN_REPS : reps > PSC_CB_MAX_REPS ? PSC_CB_MAX_REPS : reps;
}

/*
 * Median time per copy over `samples` samples, after a warm-up that also
 * sizes the samples; the destination is poisoned first and checked after.
 */
static psc_status_t psc__cb_measure(psc_context_t *ctx, psc_cb_method_t m, const psc_cb_bed_t *b,
                                    const psc_copy_plan_t *pl, uint64_t n, unsigned samples, double *gpu_us,
                                    double *cpu_us, psc_check_t *chk)
{
    psc_expect_t poison = {PSC_CB_SEED, 0, 0, 0, PSC_PAT_RANDOM, 0}; /* every byte a canary */
    psc_expect_t want = {PSC_CB_SEED, 0, n, 0, PSC_PAT_RANDOM, 0};
    double g[PSC_CB_MAX_SAMPLES], c[PSC_CB_MAX_SAMPLES], est = 0, unused;
    unsigned reps;
    psc_status_t st;

    if (samples > PSC_CB_MAX_SAMPLES)
        samples = PSC_CB_MAX_SAMPLES;
    if ((st = psc__expect_fill(ctx, b->dst, &poison)) != PSC_OK || (st = psc__gpu_use(ctx, b->path.stream_gpu)) != PSC_OK ||
        (st = psc__cb_sample(ctx, m, b, pl, n, 2, &est, &unused)) != PSC_OK) /* warm-up */
        return st;
    reps = psc__cb_reps(est);
    for (unsigned k = 0; k < samples; k++)
        if ((st = psc__cb_sample(ctx, m, b, pl, n, reps, &g[k], &c[k])) != PSC_OK)
            return st;
    qsort(g, samples, sizeof(double), psc__cmp_double);
    qsort(c, samples, sizeof(double), psc__cmp_double);
    *gpu_us = g[samples / 2];
    *cpu_us = c[samples / 2];
    if ((st = psc__expect_check(ctx, b->dst, &want, chk)) != PSC_OK)
        return st;
    return psc__gpu_use(ctx, b->path.stream_gpu);
}

/* One copy of n bytes by method m into the poisoned destination, checked byte for byte (and the bytes past it). */
static psc_status_t psc__cb_check_one(psc_context_t *ctx, psc_cb_method_t m, const psc_cb_bed_t *b,
                                      const psc_copy_plan_t *pl, uint64_t n, psc_check_t *chk)
{
    psc_expect_t poison = {PSC_CB_SEED, 0, 0, 0, PSC_PAT_RANDOM, 0}; /* every byte a canary */
    psc_expect_t want = {PSC_CB_SEED, 0, n, 0, PSC_PAT_RANDOM, 0};
    double unused_g, unused_c;
    psc_status_t st;

    if ((st = psc__expect_fill(ctx, b->dst, &poison)) != PSC_OK || (st = psc__gpu_use(ctx, b->path.stream_gpu)) != PSC_OK ||
        (st = psc__cb_sample(ctx, m, b, pl, n, 1, &unused_g, &unused_c)) != PSC_OK ||
        (st = psc__expect_check(ctx, b->dst, &want, chk)) != PSC_OK)
        return st;
    return psc__gpu_use(ctx, b->path.stream_gpu);
}

/*
 * psc_copy, its prepared copy (b->prep), the route's own driver call and the
 * driver's cuMemcpyAsync side by side: a sample of each in turn, the order
 * rotating, every sample the same number of copies; then each method's copy
 * checked on its own. The row's figures: psc__copy_bench_fold.
 */
static psc_status_t psc__cb_side_by_side(psc_context_t *ctx, const psc_cb_bed_t *b, const psc_copy_plan_t *pl,
                                         uint64_t n, unsigned samples, psc_copy_bench_row_t *row, psc_check_t *mine,
                                         psc_check_t *theirs)
{
    double g[PSC_CB_METHODS][PSC_CB_MAX_SAMPLES], c[PSC_CB_METHODS][PSC_CB_MAX_SAMPLES], est = 0, unused;
    unsigned reps;
    psc_status_t st;

    if (samples > PSC_CB_MAX_SAMPLES)
        samples = PSC_CB_MAX_SAMPLES;
    for (int m = 0; m < PSC_CB_METHODS; m++) /* warm-up: each method's first call (psc_copy remembers its plan) */
        if ((st = psc__cb_sample(ctx, (psc_cb_method_t)m, b, pl, n, 2, m == PSC_CB_DRIVER ? &est : &unused,
                                 &unused)) != PSC_OK)
            return st;
    reps = psc__cb_reps(est);
    for (unsigned k = 0; k < samples; k++)
        for (int j = 0; j < PSC_CB_METHODS; j++) {
            int m = (j + (int)k) % PSC_CB_METHODS;

            if ((st = psc__cb_sample(ctx, (psc_cb_method_t)m, b, pl, n, reps, &g[m][k], &c[m][k])) != PSC_OK)
                return st;
        }
    psc__copy_bench_fold(g, c, samples, row);
    for (int m = 0; m < PSC_CB_METHODS; m++) { /* psc_copy's bytes and the prepared copy's; the driver's */
        psc_check_t chk = PSC_CHECK_CLEAN;

        if ((st = psc__cb_check_one(ctx, (psc_cb_method_t)m, b, pl, n, &chk)) != PSC_OK)
            return st;
        psc__check_fold(m == PSC_CB_PSC || m == PSC_CB_PREP ? mine : theirs, &chk);
    }
    return PSC_OK;
}

/* The plan psc_copy makes for this bed's copy of n bytes. */
static psc_status_t psc__cb_plan(psc_context_t *ctx, const psc_cb_bed_t *b, uint64_t n, psc_copy_plan_t *pl)
{
    CUcontext restore;
    int changed;

    return psc__copy_plan(ctx, psc__cb_addr(b->dst), psc__cb_addr(b->src), n, b->stream, PSC_PLAN_EXPLAIN | PSC_PLAN_FAR, pl,
                          &restore, &changed);
}

/* The sizes from lo to hi by factor, at most cap of them. */
static int psc__cb_sizes(uint64_t lo, uint64_t hi, unsigned f, uint64_t *out, int cap)
{
    int n = psc_size_sweep(lo, hi, f, out, cap);

    return n < cap ? n : cap;
}

/* ---------------------------------------------------------------- the driver calls' own costs */

enum { PSC_CC_CTX, PSC_CC_STREAM_CTX, PSC_CC_CAPTURE, PSC_CC_PTR2, PSC_CC_PTR8, PSC_CC_MEMCPY, PSC_CC_PEER,
       PSC_CC_LAUNCH, PSC_CC_LAUNCH_BUFFER };

/* One call of primitive `what` on the bed (4 bytes from its source to its destination, on its stream). */
static CUresult psc__cc_call(psc_context_t *ctx, const psc_cb_bed_t *b, int what)
{
    CUpointer_attribute at[8] = {CU_POINTER_ATTRIBUTE_BUFFER_ID,         CU_POINTER_ATTRIBUTE_ACCESS_FLAGS,
                                 CU_POINTER_ATTRIBUTE_MEMORY_TYPE,       CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,  CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                 CU_POINTER_ATTRIBUTE_IS_MANAGED,        CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
    uint64_t v[8] = {0};
    void *data[8] = {&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]};
    CUdeviceptr d = b->dst->dptr, s = b->src->dptr;
    uint64_t n = 4;
    unsigned reps = 1;
    CUstreamCaptureStatus cs;
    cuuint64_t id;
    CUcontext c;

    switch (what) {
    case PSC_CC_CTX:
        return ctx->cu.p_cuCtxGetCurrent(&c);
    case PSC_CC_STREAM_CTX:
        return ctx->cu.p_cuStreamGetCtx ? ctx->cu.p_cuStreamGetCtx(b->stream, &c) : CUDA_ERROR_NOT_FOUND;
    case PSC_CC_CAPTURE:
        return ctx->cu.p_cuStreamGetCaptureInfo ? ctx->cu.p_cuStreamGetCaptureInfo(b->stream, &cs, &id, NULL, NULL, NULL)
                                                : CUDA_ERROR_NOT_FOUND;
    case PSC_CC_PTR2:
    case PSC_CC_PTR8:
        return ctx->cu.p_cuPointerGetAttributes ? ctx->cu.p_cuPointerGetAttributes(what == PSC_CC_PTR2 ? 2 : 8, at, data, s)
                                                : CUDA_ERROR_NOT_FOUND;
    case PSC_CC_MEMCPY:
        return ctx->cu.p_cuMemcpyAsync(d, s, n, b->stream);
    case PSC_CC_PEER:
        return ctx->cu.p_cuMemcpyPeerAsync(d, ctx->gpu[b->path.dst].ctx, s, ctx->gpu[b->path.src].ctx, n, b->stream);
    case PSC_CC_LAUNCH: {
        void *params[] = {&d, &s, &n, &reps};

        return ctx->cu.p_cuLaunchKernel(ctx->gpu[b->path.stream_gpu].fn_copy, 1, 1, 1, PSC_APP_COPY_THREADS, 1, 1, 0,
                                        b->stream, params, NULL);
    }
    case PSC_CC_LAUNCH_BUFFER: {
        struct psc_cc_args { CUdeviceptr d, s; uint64_t n; unsigned reps; } arg = {d, s, n, reps}; /* the kernel's */
        size_t len = offsetof(struct psc_cc_args, reps) + sizeof(unsigned);
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &arg, CU_LAUNCH_PARAM_BUFFER_SIZE, &len, CU_LAUNCH_PARAM_END};

        return ctx->cu.p_cuLaunchKernel(ctx->gpu[b->path.stream_gpu].fn_copy, 1, 1, 1, PSC_APP_COPY_THREADS, 1, 1, 0,
                                        b->stream, NULL, extra);
    }
    }
    return CUDA_ERROR_INVALID_VALUE;
}

/* us per call of primitive `what`: the median of 5 runs of 200 calls, the stream drained between; -1 when it fails. */
static double psc__cc_time(psc_context_t *ctx, const psc_cb_bed_t *b, int what)
{
    double t[5];

    for (int r = 0; r < 5; r++) {
        double t0 = psc__now_ns();

        for (int k = 0; k < 200; k++)
            if (psc__cc_call(ctx, b, what) != CUDA_SUCCESS) {
                ctx->cu.p_cuStreamSynchronize(b->stream);
                return -1;
            }
        t[r] = (psc__now_ns() - t0) / 200.0 / 1000.0;
        if (ctx->cu.p_cuStreamSynchronize(b->stream) != CUDA_SUCCESS)
            return -1;
    }
    qsort(t, 5, sizeof(double), psc__cmp_double);
    return t[2];
}

/*
 * The costs measured on this bed where it is the first of its kind: inside the stream's GPU (everything but
 * the copies between GPUs), or from one GPU's stream to another GPU (the two calls that copy between GPUs).
 */
static void psc__cc_measure(psc_context_t *ctx, const psc_cb_bed_t *b, psc_copy_costs_t *c)
{
    const psc_cb_path_t *p = &b->path;

    if (p->src == p->stream_gpu && p->dst == p->stream_gpu && c->launch < 0 && c->ctx_get_current < 0) {
        c->ctx_get_current = psc__cc_time(ctx, b, PSC_CC_CTX);
        c->stream_get_ctx = psc__cc_time(ctx, b, PSC_CC_STREAM_CTX);
        c->stream_capture_info = psc__cc_time(ctx, b, PSC_CC_CAPTURE);
        c->ptr_attrs2 = psc__cc_time(ctx, b, PSC_CC_PTR2);
        c->ptr_attrs8 = psc__cc_time(ctx, b, PSC_CC_PTR8);
        c->memcpy_local = psc__cc_time(ctx, b, PSC_CC_MEMCPY);
        c->launch = psc__cc_time(ctx, b, PSC_CC_LAUNCH);
        c->launch_buffer = psc__cc_time(ctx, b, PSC_CC_LAUNCH_BUFFER);
    } else if (p->src == p->stream_gpu && p->dst >= 0 && p->dst != p->src && c->memcpy_peer < 0 &&
               c->memcpy_peer_uva < 0) {
        c->memcpy_peer_uva = psc__cc_time(ctx, b, PSC_CC_MEMCPY);
        c->memcpy_peer = psc__cc_time(ctx, b, PSC_CC_PEER);
    }
}

/* ---------------------------------------------------------------- calibration */

static psc_status_t psc__copy_calibrate(psc_context_t *ctx, const psc_copy_cal_opts_t *o, psc_calibration_t *cal)
{
    int d[PSC_MAX_GPUS], m = psc__resolve_devices(ctx, o->devices, o->ndev, d, PSC_MAX_GPUS), np, ns;
    psc_cb_path_t *paths = NULL;
    uint64_t sizes[PSC_CAL_MAX_SIZES];
    psc_status_t st = PSC_OK;
    time_t now = time(NULL);
    struct tm tm;

    if (m < 0)
        return PSC_ERR_INVALID;
    ns = psc__cb_sizes(o->min_size, o->max_size, o->factor, sizes, PSC_CAL_MAX_SIZES);
    paths = calloc((size_t)(2 * m * m + 2 * m), sizeof(*paths));
    cal->route = calloc((size_t)(2 * m * m + 2 * m) * 4, sizeof(*cal->route));
    if (!paths || !cal->route) {
        free(paths);
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    }
    np = psc__cb_paths(d, m, o->host, paths, 2 * m * m + 2 * m);
    cal->ngpu = ctx->ndev;
    for (int i = 0; i < ctx->ndev && i < PSC_MAX_GPUS; i++)
        snprintf(cal->uuid[i], sizeof(cal->uuid[i]), "%s", ctx->info[i].uuid);
    snprintf(cal->gpu_name, sizeof(cal->gpu_name), "%s", ctx->info[0].name);
    snprintf(cal->driver_release, sizeof(cal->driver_release), "%s", ctx->sys.driver_release);
    gmtime_r(&now, &tm);
    strftime(cal->created, sizeof(cal->created), "%Y-%m-%dT%H:%M:%SZ", &tm);
    for (int p = 0; p < np && st == PSC_OK; p++) {
        int s = paths[p].stream_gpu, far = paths[p].src == s ? paths[p].dst : paths[p].src, nr;
        psc_cal_route_t *r[4];
        psc_cb_bed_t bed;

        nr = far >= 0 && far != s ? 4 : 2; /* between two GPUs, the far one's routes too (a hop) */
        if ((st = psc__cb_bed_open(ctx, &paths[p], o->max_size, &bed)) != PSC_OK)
            break;
        for (int e = 0; e < nr; e++) {
            r[e] = &cal->route[cal->nroute + e];
            *r[e] = (psc_cal_route_t){.src = paths[p].src, .dst = paths[p].dst, .stream_gpu = s,
                                      .issuer = e < 2 ? s : far, .engine = e & 1 ? PSC_ENGINE_SM : PSC_ENGINE_CE};
        }
        for (int k = 0; k < ns && st == PSC_OK; k++) {
            psc_copy_plan_t pl;

            if ((st = psc__cb_plan(ctx, &bed, sizes[k], &pl)) != PSC_OK)
                break;
            for (int e = 0; e < nr && st == PSC_OK; e++) {
                psc_check_t chk = PSC_CHECK_CLEAN;
                double g = 0, c = 0;

                if (!psc__copy_plan_force(&pl, r[e]->engine, r[e]->issuer))
                    continue; /* that GPU's SM kernel cannot reach these bytes: not a route */
                st = psc__cb_measure(ctx, PSC_CB_PLAN, &bed, &pl, sizes[k], o->samples, &g, &c, &chk);
                if (st == PSC_OK && chk.bad_bytes)
                    st = psc__fail(ctx, PSC_ERR_DRIVER, "calibration: a %s copy of %llu B by gpu%d moved %llu wrong "
                                   "bytes (first at offset %lld): this path does not move the right bytes",
                                   r[e]->engine == PSC_ENGINE_SM ? "SM" : "copy-engine", (unsigned long long)sizes[k],
                                   r[e]->issuer, (unsigned long long)chk.bad_bytes, (long long)chk.first_bad);
                if (st == PSC_OK && g > 0) {
                    r[e]->size[r[e]->nsizes] = sizes[k];
                    r[e]->us[r[e]->nsizes++] = g;
                }
            }
        }
        for (int e = 0; e < nr; e++) /* keep the routes that ran, in order */
            if (r[e]->nsizes > 0)
                cal->route[cal->nroute++] = *r[e];
        psc__cb_bed_close(ctx, &bed);
    }
    free(paths);
    return st;
}

psc_status_t psc_copy_calibrate(psc_context_t *ctx, const psc_copy_cal_opts_t *o, psc_calibration_t **out)
{
    psc_copy_cal_opts_t full;
    psc_calibration_t *cal;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if ((st = psc__copy_cal_opts_adopt(ctx, o, &full)) != PSC_OK)
        return st;
    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_copy_calibrate: no place for the calibration given");
    if (!(cal = calloc(1, sizeof(*cal))))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    psc__guard_enter(ctx);
    st = psc__copy_calibrate(ctx, &full, cal);
    psc__bw_release_buffers(ctx);
    st = psc__guard_leave(ctx, st);
    if (st != PSC_OK) {
        psc_calibration_free(cal);
        return st;
    }
    *out = cal;
    return PSC_OK;
}

/* ---------------------------------------------------------------- psc_copy against the driver */

static psc_status_t psc__copy_bench(psc_context_t *ctx, const psc_copy_bench_opts_t *o, psc_copy_bench_t *res)
{
    int d[PSC_MAX_GPUS], m = psc__resolve_devices(ctx, o->devices, o->ndev, d, PSC_MAX_GPUS), np, ns, cap;
    psc_cb_path_t *paths;
    uint64_t sizes[64];
    psc_status_t st = PSC_OK;

    if (m < 0)
        return PSC_ERR_INVALID;
    ns = psc__cb_sizes(o->min_size, o->max_size, o->factor, sizes, 64);
    cap = 2 * m * m + 2 * m;
    paths = calloc((size_t)cap, sizeof(*paths));
    res->row = calloc((size_t)cap * (size_t)ns, sizeof(*res->row));
    if (!paths || !res->row) {
        free(paths);
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    }
    np = psc__cb_paths(d, m, o->host, paths, cap);
    res->calibrated = ctx->copy_cal != NULL;
    {
        psc_copy_costs_t none = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1};

        res->costs = none;
    }
    for (int p = 0; p < np && st == PSC_OK; p++) {
        psc_cb_bed_t bed;

        if ((st = psc__cb_bed_open(ctx, &paths[p], o->max_size, &bed)) != PSC_OK)
            break;
        psc__cc_measure(ctx, &bed, &res->costs); /* before the rows: they poison the destination first */
        st = psc__gpu_use(ctx, paths[p].stream_gpu);
        for (int k = 0; k < ns && st == PSC_OK; k++) {
            psc_copy_bench_row_t *row = &res->row[res->nrow];
            psc_check_t mine = PSC_CHECK_CLEAN, theirs = PSC_CHECK_CLEAN;
            psc_copy_plan_t pl;

            memset(row, 0, sizeof(*row));
            row->src = paths[p].src;
            row->dst = paths[p].dst;
            row->stream_gpu = paths[p].stream_gpu;
            row->size = sizes[k];
            if ((st = psc__cb_plan(ctx, &bed, sizes[k], &pl)) == PSC_OK &&
                (st = psc_copy_prepare(ctx, psc__cb_addr(bed.dst), psc__cb_addr(bed.src), sizes[k],
                                       (struct CUstream_st *)bed.stream, &bed.prep)) == PSC_OK &&
                (st = psc__gpu_use(ctx, paths[p].stream_gpu)) == PSC_OK)
                st = psc__cb_side_by_side(ctx, &bed, &pl, sizes[k], o->samples, row, &mine, &theirs);
            psc_copy_prep_free(bed.prep);
            bed.prep = NULL;
            if (st != PSC_OK)
                break;
            psc__check_fold(&mine, &theirs);
            row->route = pl.route;
            row->bad_bytes = mine.bad_bytes;
            row->first_bad = mine.first_bad < 0 ? UINT64_MAX : (uint64_t)mine.first_bad;
            res->nrow++;
        }
        psc__cb_bed_close(ctx, &bed);
    }
    free(paths);
    return st;
}

psc_status_t psc_copy_bench(psc_context_t *ctx, const psc_copy_bench_opts_t *o, psc_copy_bench_t **out)
{
    psc_copy_bench_opts_t full;
    psc_calibration_t *keep;
    psc_copy_bench_t *res;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if ((st = psc__copy_bench_opts_adopt(ctx, o, &full)) != PSC_OK)
        return st;
    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_copy_bench: no place for the result given");
    keep = ctx->copy_cal; /* the caller's routes come back after the run */
    ctx->copy_cal = NULL;
    psc__copy_memo_forget();
    if (full.calibration && (st = psc_copy_calibration_load(ctx, full.calibration)) != PSC_OK) {
        ctx->copy_cal = keep;
        return st;
    }
    if (!full.calibration)
        ctx->copy_cal = keep;
    if (!(res = calloc(1, sizeof(*res)))) {
        st = psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    } else {
        psc__guard_enter(ctx);
        st = psc__copy_bench(ctx, &full, res);
        psc__bw_release_buffers(ctx);
        st = psc__guard_leave(ctx, st);
    }
    if (full.calibration) {
        psc_calibration_free(ctx->copy_cal);
        ctx->copy_cal = keep;
    }
    psc__copy_memo_forget();
    if (st != PSC_OK) {
        psc_copy_bench_free(res);
        return st;
    }
    *out = res;
    return PSC_OK;
}

void psc_copy_bench_free(psc_copy_bench_t *bench)
{
    if (!bench)
        return;
    free(bench->row);
    free(bench);
}
