/*
 * The P2P memcpy benchmark of the seed notes, on libp2pscope: a 64 MiB copy
 * between two GPUs, timed 10 times by cuMemcpyAsync and 10 times by
 * psc_copy, with peer access checked and turned on, the route psc_copy takes
 * and why, and the destination checked byte for byte.
 *   cc -std=c11 p2p_memcpy.c $(pkg-config --cflags --libs p2pscope) -I/usr/local/cuda/include -o p2p_memcpy
 * (no -lcuda: cuda_on_demand.h, beside this file, opens the driver at run time, as libp2pscope does)
 *   ./p2p_memcpy [--src GPU] [--dst GPU]      (default: GPU 0 to GPU 1)
 * Exit: 0 right bytes, 1 a wrong byte or a failed call, 2 usage, 77 no
 * driver or fewer than two GPUs (nothing to measure).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <p2pscope.h>

#include "cuda_on_demand.h"

#define SIZE ((size_t)64 << 20)
#define REPEATS 10

static int cu_ok(CUresult r, const char *what)
{
    const char *name = NULL;

    if (r == CUDA_SUCCESS)
        return 1;
    cuGetErrorName(r, &name);
    fprintf(stderr, "p2p_memcpy: %s: %s (%d)\n", what, name ? name : "unknown error", (int)r);
    return 0;
}
#define CU(call)                                                                                                       \
    do {                                                                                                               \
        if (!cu_ok((call), #call))                                                                                     \
            goto out;                                                                                                  \
    } while (0)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The byte at offset i of the source: differs from its neighbours and from the poison below. */
static uint8_t pattern(size_t i)
{
    uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull;
    return (uint8_t)(x >> 56);
}

/* Time REPEATS copies (one untimed first), each between two events on the stream; print each and the median. */
static int time_copies(const char *label, psc_context_t *ctx, int by_psc, CUdeviceptr dst, CUdeviceptr src,
                       CUstream stream, CUevent start, CUevent stop)
{
    double gbs[REPEATS];

    for (int k = -1; k < REPEATS; k++) {
        float ms = 0;
        CU(cuEventRecord(start, stream));
        if (by_psc) {
            psc_status_t st = psc_copy(ctx, (void *)(uintptr_t)dst, (const void *)(uintptr_t)src, SIZE, stream);
            if (st != PSC_OK) {
                fprintf(stderr, "p2p_memcpy: psc_copy: %s: %s\n", psc_status_string(st), psc_context_last_error(ctx));
                return 0;
            }
        } else {
            CU(cuMemcpyAsync(dst, src, SIZE, stream));
        }
        CU(cuEventRecord(stop, stream));
        CU(cuEventSynchronize(stop));
        CU(cuEventElapsedTime(&ms, start, stop));
        if (k < 0)
            continue; /* warm-up */
        gbs[k] = ms > 0 ? (double)SIZE / (ms * 1e-3) / 1e9 : 0;
        printf("  %-14s %2d: %8.3f ms  %7.1f GB/s\n", label, k + 1, ms, gbs[k]);
    }
    qsort(gbs, REPEATS, sizeof(gbs[0]), cmp_double);
    printf("  %-14s median: %.1f GB/s (1 GB = 1e9 B)\n", label, (gbs[REPEATS / 2 - 1] + gbs[REPEATS / 2]) / 2);
    return 1;
out:
    return 0;
}

/* Copy the destination back and compare it with the pattern; print the first wrong byte. */
static int check(const char *label, CUdeviceptr dst, uint8_t *host)
{
    size_t bad = 0, first = 0;

    CU(cuMemcpyDtoH(host, dst, SIZE));
    for (size_t i = 0; i < SIZE; i++) {
        if (host[i] != pattern(i) && bad++ == 0)
            first = i;
    }
    if (bad) {
        printf("  %s: %zu wrong bytes; the first at offset %zu: expected 0x%02x, found 0x%02x\n", label, bad, first,
               pattern(first), host[first]);
        return 0;
    }
    printf("  %s: all %zu bytes right\n", label, SIZE);
    return 1;
out:
    return 0;
}

static int parse_gpu(const char *text, int *out)
{
    char *end;
    long v = strtol(text, &end, 10);

    if (!*text || *end || v < 0 || v >= PSC_MAX_GPUS)
        return 0;
    *out = (int)v;
    return 1;
}

int main(int argc, char **argv)
{
    int src = 0, dst = 1, rc = 1, can[2] = {0, 0}, was_on[2] = {-1, -1}, ngpu;
    psc_context_t *ctx = NULL;
    psc_mem_t *msrc = NULL, *mdst = NULL;
    CUdevice dev[2];
    CUcontext pctx = NULL;
    int pushed = 0;
    CUstream stream = NULL;
    CUevent start = NULL, stop = NULL;
    uint8_t *host = NULL;
    CUdeviceptr d_src, d_dst;
    psc_route_t route;
    int right = 1;
    psc_status_t st;
    char err[512];

    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--src") && parse_gpu(argv[i + 1], &src))
            i++;
        else if (i + 1 < argc && !strcmp(argv[i], "--dst") && parse_gpu(argv[i + 1], &dst))
            i++;
        else {
            fprintf(stderr, "usage: p2p_memcpy [--src GPU] [--dst GPU]\n");
            return 2;
        }
    }
    if ((st = psc_context_create(&ctx, err, sizeof(err))) != PSC_OK) {
        fprintf(stderr, "p2p_memcpy: %s\n", err);
        return st == PSC_ERR_NO_DRIVER || st == PSC_ERR_NO_DEVICE ? 77 : 1;
    }
    ngpu = psc_device_count(ctx);
    if (ngpu < 2) {
        printf("p2p_memcpy: %d GPU%s on this machine; a copy between GPUs needs two: skipped\n", ngpu,
               ngpu == 1 ? "" : "s");
        rc = 77;
        goto out;
    }
    if (src >= ngpu || dst >= ngpu || src == dst) {
        fprintf(stderr, "p2p_memcpy: --src %d --dst %d: two different GPUs of 0 to %d\n", src, dst, ngpu - 1);
        rc = 2;
        goto out;
    }
    if (cuInit(0) != CUDA_SUCCESS) { /* libp2pscope found the driver, but the one linked here does not start */
        fprintf(stderr, "p2p_memcpy: the CUDA driver linked with this program does not start\n");
        rc = 77;
        goto out;
    }
    CU(cuDeviceGet(&dev[0], src));
    CU(cuDeviceGet(&dev[1], dst));
    CU(cuDeviceCanAccessPeer(&can[0], dev[0], dev[1]));
    CU(cuDeviceCanAccessPeer(&can[1], dev[1], dev[0]));
    printf("GPU %d -> GPU %d, %zu MiB, %d copies each way of copying\n", src, dst, SIZE >> 20, REPEATS);
    for (int d = 0; d < 2; d++) {
        int from = d ? dst : src, to = d ? src : dst;
        if (!can[d]) {
            printf("peer access GPU %d -> GPU %d: not possible (cuDeviceCanAccessPeer 0): the driver stages the "
                   "copy through host memory\n", from, to);
            continue;
        }
        if ((st = psc_peer_enable(ctx, from, to, &was_on[d])) != PSC_OK) {
            fprintf(stderr, "p2p_memcpy: psc_peer_enable(%d, %d): %s\n", from, to, psc_context_last_error(ctx));
            goto out;
        }
        printf("peer access GPU %d -> GPU %d: %s\n", from, to, was_on[d] ? "was already on" : "turned on");
    }

    if ((st = psc_mem_alloc(ctx, PSC_MEMKIND_DEVICE, src, SIZE, &msrc)) != PSC_OK ||
        (st = psc_mem_alloc(ctx, PSC_MEMKIND_DEVICE, dst, SIZE, &mdst)) != PSC_OK) {
        fprintf(stderr, "p2p_memcpy: psc_mem_alloc: %s: %s\n", psc_status_string(st), psc_context_last_error(ctx));
        goto out;
    }
    if (!(host = malloc(SIZE))) {
        fprintf(stderr, "p2p_memcpy: out of host memory\n");
        goto out;
    }
    /* The stream and events in the source GPU's primary context: the one libp2pscope and the runtime use. */
    CU(cuDevicePrimaryCtxRetain(&pctx, dev[0]));
    CU(cuCtxPushCurrent(pctx));
    pushed = 1;
    CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CU(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CU(cuEventCreate(&stop, CU_EVENT_DEFAULT));
    for (size_t i = 0; i < SIZE; i++)
        host[i] = pattern(i);
    d_src = (CUdeviceptr)psc_mem_device(msrc);
    d_dst = (CUdeviceptr)psc_mem_device(mdst);
    CU(cuMemcpyHtoD(d_src, host, SIZE));
    CU(cuCtxSynchronize()); /* from pageable memory the DMA may still run when cuMemcpyHtoD returns */

    CU(cuMemsetD8Async(d_dst, 0x5a, SIZE, stream)); /* poison: a check proves this run's copies landed */
    if (!time_copies("cuMemcpyAsync", ctx, 0, d_dst, d_src, stream, start, stop))
        goto out;
    right &= check("cuMemcpyAsync", d_dst, host);

    if ((st = psc_copy_route(ctx, (void *)(uintptr_t)d_dst, (const void *)(uintptr_t)d_src, SIZE, stream, &route)) !=
        PSC_OK) {
        fprintf(stderr, "p2p_memcpy: psc_copy_route: %s: %s\n", psc_status_string(st), psc_context_last_error(ctx));
        goto out;
    }
    printf("psc_copy's route: %s issued by GPU %d%s (%s)\n  why: %s\n",
           route.engine == PSC_ENGINE_SM ? "SM copy kernel" : "copy engine", route.issuer,
           route.hop ? ", through events from the stream's GPU" : "",
           route.calibrated ? "from the loaded calibration" : "built-in defaults", route.why);
    CU(cuMemsetD8Async(d_dst, 0x5a, SIZE, stream));
    if (!time_copies("psc_copy", ctx, 1, d_dst, d_src, stream, start, stop))
        goto out;
    CU(cuStreamSynchronize(stream));
    right &= check("psc_copy", d_dst, host);
    rc = right ? 0 : 1;

out:
    if (stop)
        cuEventDestroy(stop);
    if (start)
        cuEventDestroy(start);
    if (stream)
        cuStreamDestroy(stream);
    if (pushed)
        cuCtxPopCurrent(NULL);
    if (pctx)
        cuDevicePrimaryCtxRelease(dev[0]);
    free(host);
    psc_mem_free(mdst);
    psc_mem_free(msrc);
    /* Peer access back as it was found. */
    if (was_on[0] == 0)
        psc_peer_disable(ctx, src, dst, NULL);
    if (was_on[1] == 0)
        psc_peer_disable(ctx, dst, src, NULL);
    psc_context_destroy(ctx);
    return rc;
}
