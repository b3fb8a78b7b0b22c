/*
 * How fast does each kind of host memory reach a GPU? libp2pscope allocates
 * each kind on the GPU's own NUMA node (pinned, mapped, write-combined,
 * registered) and device memory on the GPU; the rest is plain CUDA driver
 * API code on those buffers: a 64 MiB host->GPU cuMemcpyHtoDAsync of each,
 * timed with events, and its bytes checked.
 *   cc -std=c11 host_memory_kinds.c $(pkg-config --cflags --libs p2pscope) -I/usr/local/cuda/include -ldl
 *   ./host_memory_kinds [GPU]
 * The driver is loaded at run time (dlopen, as libp2pscope does), so the
 * program starts, and skips, on a machine without one.
 * Exit: 0 every kind copied right, 1 a failure or a wrong byte, 77 no driver or no GPU.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <p2pscope.h>

#define SIZE ((size_t)64 << 20)
#define REPEATS 5
#define SKIP 77

/* The driver calls this program makes, taken from libcuda.so.1 at the CUDA 12.0 ABI. */
static struct {
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*release)(CUdevice);
    CUresult (*set_current)(CUcontext);
    CUresult (*stream_create)(CUstream *, unsigned);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*stream_sync)(CUstream);
    CUresult (*event_create)(CUevent *, unsigned);
    CUresult (*event_destroy)(CUevent);
    CUresult (*event_record)(CUevent, CUstream);
    CUresult (*event_elapsed)(float *, CUevent, CUevent);
    CUresult (*htod_async)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*dtod_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*dtoh)(void *, CUdeviceptr, size_t);
} cu;

static int load_driver(void)
{
    CUresult (*get_proc)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    static const struct { const char *name; void **fn; } want[] = {
        {"cuDeviceGet", (void **)&cu.device_get},
        {"cuDevicePrimaryCtxRetain", (void **)&cu.retain},
        {"cuDevicePrimaryCtxRelease", (void **)&cu.release},
        {"cuCtxSetCurrent", (void **)&cu.set_current},
        {"cuStreamCreate", (void **)&cu.stream_create},
        {"cuStreamDestroy", (void **)&cu.stream_destroy},
        {"cuStreamSynchronize", (void **)&cu.stream_sync},
        {"cuEventCreate", (void **)&cu.event_create},
        {"cuEventDestroy", (void **)&cu.event_destroy},
        {"cuEventRecord", (void **)&cu.event_record},
        {"cuEventElapsedTime", (void **)&cu.event_elapsed},
        {"cuMemcpyHtoDAsync", (void **)&cu.htod_async},
        {"cuMemcpyDtoDAsync", (void **)&cu.dtod_async},
        {"cuMemcpyDtoH", (void **)&cu.dtoh},
    };
    CUdriverProcAddressQueryResult found;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

    if (!h || !(*(void **)&get_proc = dlsym(h, "cuGetProcAddress_v2")))
        return -1;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (get_proc(want[i].name, want[i].fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||
            found != CU_GET_PROC_ADDRESS_SUCCESS)
            return -1;
    return 0;
}

static unsigned char pattern(size_t i, int seed) { return (unsigned char)((i * 7 + (i >> 16) + (size_t)seed * 29) & 0xFF); }

/*
 * Copy SIZE bytes to dst REPEATS times on the stream (src a host address, or
 * with from_device a device one), the best time in *ms; then the bytes at dst
 * are compared with the pattern of `seed`. Returns the wrong bytes, or -1
 * when a driver call failed.
 */
static long long time_copy(CUstream s, CUdeviceptr dst, const void *src, CUdeviceptr dsrc, int seed, float *ms,
                           unsigned char *check)
{
    CUevent start = NULL, stop = NULL;
    long long bad = -1;

    *ms = 0;
    if (cu.event_create(&start, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
        cu.event_create(&stop, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
        goto out;
    for (int r = 0; r <= REPEATS; r++) { /* the first is a warm-up */
        float t;

        if (cu.event_record(start, s) != CUDA_SUCCESS ||
            (src ? cu.htod_async(dst, src, SIZE, s) : cu.dtod_async(dst, dsrc, SIZE, s)) != CUDA_SUCCESS ||
            cu.event_record(stop, s) != CUDA_SUCCESS || cu.stream_sync(s) != CUDA_SUCCESS ||
            cu.event_elapsed(&t, start, stop) != CUDA_SUCCESS)
            goto out;
        if (r > 0 && (*ms == 0 || t < *ms))
            *ms = t;
    }
    if (cu.dtoh(check, dst, SIZE) != CUDA_SUCCESS)
        goto out;
    bad = 0;
    for (size_t i = 0; i < SIZE; i++)
        bad += check[i] != pattern(i, seed);
out:
    if (start)
        cu.event_destroy(start);
    if (stop)
        cu.event_destroy(stop);
    return bad;
}

int main(int argc, char **argv)
{
    int gpu = argc > 1 ? atoi(argv[1]) : 0, node, failed = 0, last = -1;
    psc_context_t *ctx = NULL;
    psc_mem_t *dev = NULL, *dev2 = NULL;
    psc_device_info_t info;
    unsigned char *check = NULL;
    CUcontext pctx = NULL;
    CUstream s = NULL;
    CUdevice d = 0;
    char err[512];
    psc_status_t st;
    float ms;

    st = psc_context_create(&ctx, err, sizeof(err));
    if (st == PSC_ERR_NO_DRIVER || st == PSC_ERR_NO_DEVICE) {
        fprintf(stderr, "host_memory_kinds: skipped: %s\n", err);
        return SKIP;
    }
    if (st != PSC_OK) {
        fprintf(stderr, "host_memory_kinds: %s\n", err);
        return 1;
    }
    if (load_driver() != 0) {
        fprintf(stderr, "host_memory_kinds: skipped: no CUDA 12 driver API in libcuda.so.1\n");
        psc_context_destroy(ctx);
        return SKIP;
    }
    if (psc_device_info(ctx, gpu, &info) != PSC_OK) {
        fprintf(stderr, "host_memory_kinds: %s\n", psc_context_last_error(ctx));
        psc_context_destroy(ctx);
        return 1;
    }
    node = info.numa_node >= 0 ? info.numa_node : PSC_NUMA_ANY;
    /* The application's own CUDA setup: the GPU's primary context (the runtime's), a stream of its own. */
    if ((st = psc_mem_alloc(ctx, PSC_MEMKIND_DEVICE, gpu, SIZE, &dev)) != PSC_OK ||
        (st = psc_mem_alloc(ctx, PSC_MEMKIND_DEVICE, gpu, SIZE, &dev2)) != PSC_OK || !(check = malloc(SIZE)) ||
        cu.device_get(&d, gpu) != CUDA_SUCCESS || cu.retain(&pctx, d) != CUDA_SUCCESS ||
        cu.set_current(pctx) != CUDA_SUCCESS || cu.stream_create(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        fprintf(stderr, "host_memory_kinds: setting up GPU %d failed: %s\n", gpu,
                st != PSC_OK ? psc_context_last_error(ctx) : "a driver call");
        failed = 1;
        goto out;
    }
    printf("GPU %d (%s), NUMA node %d: 64 MiB host->GPU, best of %d\n", gpu, info.name, info.numa_node, REPEATS);
    for (psc_memkind_t k = PSC_MEMKIND_PINNED; k < PSC_MEMKIND_COUNT; k++) {
        psc_mem_t *h = NULL;
        unsigned char *p;
        long long bad;

        if ((st = psc_mem_alloc(ctx, k, node, SIZE, &h)) != PSC_OK) {
            printf("%-15s not allocated: %s\n", psc_memkind_name(k), psc_context_last_error(ctx));
            failed |= st != PSC_ERR_UNSUPPORTED; /* a machine that cannot bind, or a driver without the call */
            continue;
        }
        p = psc_mem_host(h);
        for (size_t i = 0; i < SIZE; i++) /* the CPU writes (write-combined memory is fast to write) */
            p[i] = pattern(i, (int)k);
        bad = time_copy(s, (CUdeviceptr)psc_mem_device(dev), p, 0, (int)k, &ms, check);
        printf("%-15s node %2d  %8.3f ms  %6.1f GB/s  %s\n", psc_memkind_name(k), psc_mem_where(h), ms,
               ms > 0 ? SIZE / (ms * 1e6) : 0.0, bad == 0 ? "bytes ok" : bad < 0 ? "driver call failed" : "BYTES WRONG");
        failed |= bad != 0;
        last = bad == 0 ? (int)k : last;
        psc_mem_free(h);
    }
    /* Device memory: the destination above, holding the last kind's bytes; one more copy from it within the GPU. */
    if (last >= 0) {
        long long bad = time_copy(s, (CUdeviceptr)psc_mem_device(dev2), NULL, (CUdeviceptr)psc_mem_device(dev), last,
                                  &ms, check);

        printf("%-15s GPU %2d  %8.3f ms  %6.1f GB/s  %s (GPU->GPU, same GPU)\n", psc_memkind_name(PSC_MEMKIND_DEVICE),
               psc_mem_where(dev), ms, ms > 0 ? SIZE / (ms * 1e6) : 0.0,
               bad == 0 ? "bytes ok" : bad < 0 ? "driver call failed" : "BYTES WRONG");
        failed |= bad != 0;
    }
out:
    if (s)
        cu.stream_destroy(s);
    if (pctx) {
        cu.set_current(NULL);
        cu.release(d);
    }
    free(check);
    psc_mem_free(dev);
    psc_mem_free(dev2);
    psc_context_destroy(ctx);
    return failed;
}
