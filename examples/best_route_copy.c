/*
 * best_route_copy: move an application's buffer between two GPUs by the
 * fastest route p2pscope knows, on the application's own stream.
 *
 *   best_route_copy [CALIBRATION.json]
 *
 * Allocates 64 MiB on GPU 0 and GPU 1 (one GPU: twice on GPU 0), turns peer
 * access on where the GPUs can reach each other (psc_peer_enable says so),
 * then for sizes from 4 KiB to 64 MiB prints the route psc_copy takes and
 * why, copies, and checks the bytes. With a calibration file written by
 * `p2pscope copy --calibrate FILE` the routes follow this machine's
 * measured crossovers. Exits 0 when every byte arrived, 1 on a wrong byte
 * or an error, 77 without a driver or a GPU.
 *
 * Build: cc best_route_copy.c $(pkg-config --cflags --libs p2pscope) -I$CUDA/include
 * (no -lcuda: cuda_on_demand.h, beside this file, opens the driver at run time, as libp2pscope does)
 */
#include <cuda.h>
#include <p2pscope.h>

#include "cuda_on_demand.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTES (64u << 20)

int main(int argc, char **argv)
{
    psc_context_t *ctx = NULL;
    psc_mem_t *src = NULL, *dst = NULL;
    unsigned char *want = NULL, *got = NULL;
    CUcontext primary = NULL;
    CUstream stream = NULL;
    char err[256];
    int rc = 1, was_on = 0, a = 0, b = 1;
    psc_status_t st = psc_context_create(&ctx, err, sizeof(err));

    if (st != PSC_OK) {
        fprintf(stderr, "best_route_copy: %s\n", err);
        return st == PSC_ERR_NO_DRIVER || st == PSC_ERR_NO_DEVICE ? 77 : 1;
    }
    if (psc_device_count(ctx) < 2)
        b = 0; /* one GPU: a copy inside it */
    if (argc > 1 && psc_copy_calibration_load(ctx, argv[1]) != PSC_OK) {
        fprintf(stderr, "best_route_copy: %s\n", psc_context_last_error(ctx));
        goto out;
    }
    if (a != b) {
        st = psc_peer_enable(ctx, b, a, &was_on); /* GPU b reads GPU a's memory: its SMs may pull */
        if (st == PSC_OK)
            printf("peer access from GPU %d to GPU %d: %s\n", b, a, was_on ? "was on" : "turned on");
        else
            printf("peer access from GPU %d to GPU %d: not possible (%s)\n", b, a, psc_context_last_error(ctx));
    }
    if (psc_mem_alloc(ctx, PSC_MEMKIND_DEVICE, a, BYTES, &src) != PSC_OK ||
        psc_mem_alloc(ctx, PSC_MEMKIND_DEVICE, b, BYTES, &dst) != PSC_OK) {
        fprintf(stderr, "best_route_copy: %s\n", psc_context_last_error(ctx));
        goto out;
    }
    want = malloc(BYTES);
    got = malloc(BYTES);
    if (!want || !got)
        goto out;
    for (size_t i = 0; i < BYTES; i++)
        want[i] = (unsigned char)(i * 131 + (i >> 12));
    /* The application's own stream on the destination GPU (the runtime's primary context). */
    {
        CUdevice dev;

        if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, b) != CUDA_SUCCESS ||
            cuDevicePrimaryCtxRetain(&primary, dev) != CUDA_SUCCESS || cuCtxSetCurrent(primary) != CUDA_SUCCESS ||
            cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
            cuMemcpyHtoD((CUdeviceptr)psc_mem_device(src), want, BYTES) != CUDA_SUCCESS) {
            fprintf(stderr, "best_route_copy: a CUDA call failed\n");
            goto out;
        }
    }
    rc = 0;
    for (size_t n = 4096; n <= BYTES; n *= 4) {
        void *d = (void *)(uintptr_t)psc_mem_device(dst), *s = (void *)(uintptr_t)psc_mem_device(src);
        psc_route_t route;

        if (cuMemsetD8((CUdeviceptr)psc_mem_device(dst), 0, BYTES) != CUDA_SUCCESS ||
            psc_copy_route(ctx, d, s, n, stream, &route) != PSC_OK || psc_copy(ctx, d, s, n, stream) != PSC_OK ||
            cuStreamSynchronize(stream) != CUDA_SUCCESS ||
            cuMemcpyDtoH(got, (CUdeviceptr)psc_mem_device(dst), n) != CUDA_SUCCESS) {
            fprintf(stderr, "best_route_copy: %s\n", psc_context_last_error(ctx));
            rc = 1;
            break;
        }
        printf("%9zu B: %s\n", n, route.why);
        if (memcmp(got, want, n) != 0) {
            printf("%9zu B: WRONG BYTES\n", n);
            rc = 1;
        }
    }
    printf("%s\n", rc ? "FAILED" : "every byte arrived");
out:
    if (stream)
        cuStreamDestroy(stream);
    if (primary) {
        CUdevice dev;

        cuDeviceGet(&dev, b);
        cuDevicePrimaryCtxRelease(dev);
    }
    psc_mem_free(src);
    psc_mem_free(dst);
    free(want);
    free(got);
    psc_context_destroy(ctx);
    return rc;
}
