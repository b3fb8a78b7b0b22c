/*
 * The CUDA driver API for the examples, without linking libcuda: each driver call an example makes is defined here
 * under the name cuda.h gives it, and forwards to libcuda.so.1's own entry point, opened with dlopen at the first
 * call (as libp2pscope loads the driver). So an example starts on a machine without the NVIDIA driver and says so
 * itself (exit 77) instead of failing to load (exit 127). Include it after <cuda.h>, in the one file of a program;
 * link with -ldl where the C library lacks dlopen (glibc before 2.34). No driver: every call fails with
 * CUDA_ERROR_SHARED_OBJECT_INIT_FAILED (the examples ask libp2pscope first and never get there).
 */
#ifndef P2PSCOPE_EXAMPLES_CUDA_ON_DEMAND_H
#define P2PSCOPE_EXAMPLES_CUDA_ON_DEMAND_H

#include <dlfcn.h>

#include <cuda.h>

/* libcuda.so.1's address of the symbol name (cuda.h's name for the call: "cuMemcpyHtoD_v2"), NULL without it. */
static void *cuda_on_demand_sym(const char *name)
{
    static void *lib;

    if (!lib)
        lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    return lib ? dlsym(lib, name) : NULL;
}

#define CUDA_ON_DEMAND_NAME(sym) CUDA_ON_DEMAND_TEXT(sym)
#define CUDA_ON_DEMAND_TEXT(sym) #sym

/* One driver call: its definition under cuda.h's name, forwarding to the driver's (looked up once). */
#define CUDA_ON_DEMAND(call, params, args)                                                                             \
    CUresult CUDAAPI call params                                                                                       \
    {                                                                                                                  \
        static CUresult(CUDAAPI * fn) params;                                                                          \
        void *p;                                                                                                       \
                                                                                                                       \
        if (!fn) {                                                                                                     \
            if (!(p = cuda_on_demand_sym(CUDA_ON_DEMAND_NAME(call))))                                                  \
                return CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;                                                           \
            *(void **)&fn = p; /* POSIX's way from dlsym to a function pointer */                                      \
        }                                                                                                              \
        return fn args;                                                                                                \
    }

CUDA_ON_DEMAND(cuInit, (unsigned int flags), (flags))
CUDA_ON_DEMAND(cuGetErrorName, (CUresult error, const char **text), (error, text))
CUDA_ON_DEMAND(cuDeviceGet, (CUdevice * device, int ordinal), (device, ordinal))
CUDA_ON_DEMAND(cuDeviceCanAccessPeer, (int *can, CUdevice dev, CUdevice peer), (can, dev, peer))
CUDA_ON_DEMAND(cuDevicePrimaryCtxRetain, (CUcontext * ctx, CUdevice dev), (ctx, dev))
CUDA_ON_DEMAND(cuDevicePrimaryCtxRelease, (CUdevice dev), (dev))
CUDA_ON_DEMAND(cuCtxSetCurrent, (CUcontext ctx), (ctx))
CUDA_ON_DEMAND(cuCtxPushCurrent, (CUcontext ctx), (ctx))
CUDA_ON_DEMAND(cuCtxPopCurrent, (CUcontext * ctx), (ctx))
CUDA_ON_DEMAND(cuCtxSynchronize, (void), ())
CUDA_ON_DEMAND(cuStreamCreate, (CUstream * stream, unsigned int flags), (stream, flags))
CUDA_ON_DEMAND(cuStreamDestroy, (CUstream stream), (stream))
CUDA_ON_DEMAND(cuStreamSynchronize, (CUstream stream), (stream))
CUDA_ON_DEMAND(cuEventCreate, (CUevent * event, unsigned int flags), (event, flags))
CUDA_ON_DEMAND(cuEventDestroy, (CUevent event), (event))
CUDA_ON_DEMAND(cuEventRecord, (CUevent event, CUstream stream), (event, stream))
CUDA_ON_DEMAND(cuEventSynchronize, (CUevent event), (event))
CUDA_ON_DEMAND(cuEventElapsedTime, (float *ms, CUevent start, CUevent end), (ms, start, end))
CUDA_ON_DEMAND(cuMemcpyHtoD, (CUdeviceptr dst, const void *src, size_t n), (dst, src, n))
CUDA_ON_DEMAND(cuMemcpyDtoH, (void *dst, CUdeviceptr src, size_t n), (dst, src, n))
CUDA_ON_DEMAND(cuMemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream), (dst, src, n, stream))
CUDA_ON_DEMAND(cuMemsetD8, (CUdeviceptr dst, unsigned char value, size_t n), (dst, value, n))
CUDA_ON_DEMAND(cuMemsetD8Async, (CUdeviceptr dst, unsigned char value, size_t n, CUstream stream),
               (dst, value, n, stream))

#endif
