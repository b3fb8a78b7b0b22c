/*
 * What each driver call psc_copy makes costs the CPU (run on a GPU machine):
 * cuPointerGetAttributes with 1, 5 and 7 attributes, cuStreamGetCtx,
 * cuCtxGetCurrent/SetCurrent, and cuMemcpyAsync of 1 byte, each timed over
 * 20000 calls. Build: cc -O2 -I$CUDA/include probe_ptr_cost.c -ldl
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
#define N 20000
int main(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    CUresult (*init)(unsigned), (*dget)(CUdevice *, int), (*retain)(CUcontext *, CUdevice), (*setc)(CUcontext),
        (*getc)(CUcontext *), (*alloc)(CUdeviceptr *, size_t), (*halloc)(void **, size_t, unsigned),
        (*attrs)(unsigned, CUpointer_attribute *, void **, CUdeviceptr), (*sctx)(CUstream, CUcontext *),
        (*screate)(CUstream *, unsigned), (*cpy)(CUdeviceptr, CUdeviceptr, size_t, CUstream), (*ssync)(CUstream);
    CUpointer_attribute at[7] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                 CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_ACCESS_FLAGS,
                                 CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
    unsigned long long v[7];
    void *data[7];
    CUdevice d; CUcontext c, c2; CUdeviceptr p, q; void *hp; CUstream s;
    double t;

    if (!h) return 77;
#define S(v, n) *(void **)&v = dlsym(h, n)
    S(init, "cuInit"); S(dget, "cuDeviceGet"); S(retain, "cuDevicePrimaryCtxRetain"); S(setc, "cuCtxSetCurrent");
    S(getc, "cuCtxGetCurrent"); S(alloc, "cuMemAlloc_v2"); S(halloc, "cuMemHostAlloc"); S(attrs, "cuPointerGetAttributes");
    S(sctx, "cuStreamGetCtx"); S(screate, "cuStreamCreate"); S(cpy, "cuMemcpyAsync"); S(ssync, "cuStreamSynchronize");
    for (int i = 0; i < 7; i++) data[i] = &v[i];
    init(0); dget(&d, 0); retain(&c, d); setc(c);
    alloc(&p, 1 << 20); alloc(&q, 1 << 20); halloc(&hp, 1 << 20, 3); screate(&s, 1);
    for (int k = 1; k <= 7; k += (k == 1 ? 4 : 2)) {
        t = now(); for (int i = 0; i < N; i++) attrs((unsigned)k, at, data, p + 64); t = now() - t;
        printf("cuPointerGetAttributes %d attrs, device ptr: %.0f ns\n", k, t / N);
        t = now(); for (int i = 0; i < N; i++) attrs((unsigned)k, at, data, (CUdeviceptr)hp + 64); t = now() - t;
        printf("cuPointerGetAttributes %d attrs, pinned ptr: %.0f ns\n", k, t / N);
    }
    t = now(); for (int i = 0; i < N; i++) sctx(s, &c2); t = now() - t; printf("cuStreamGetCtx: %.0f ns\n", t / N);
    t = now(); for (int i = 0; i < N; i++) getc(&c2); t = now() - t; printf("cuCtxGetCurrent: %.0f ns\n", t / N);
    t = now(); for (int i = 0; i < N; i++) setc(c); t = now() - t; printf("cuCtxSetCurrent (same): %.0f ns\n", t / N);
    t = now(); for (int i = 0; i < 2000; i++) cpy(q, p, 1, s); t = now() - t; ssync(s); printf("cuMemcpyAsync 1 B: %.0f ns\n", t / 2000);
    return 0;
}
