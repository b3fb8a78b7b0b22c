/*
 * The CUDA driver API as the GPU tests play the application with it: loaded
 * with dlopen (as the library loads it, so the binaries start without a
 * driver and skip), the entry points by their exported names.
 */
#ifndef PSC_TESTS_GPU_DRIVER_H
#define PSC_TESTS_GPU_DRIVER_H

#include <cuda.h>
#include <dlfcn.h>

static struct {
    CUresult (*init)(unsigned);
    CUresult (*get_current)(CUcontext *);
    CUresult (*set_current)(CUcontext);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*release)(CUdevice);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*can_access)(int *, CUdevice, CUdevice);
    CUresult (*enable_peer)(CUcontext, unsigned);
    CUresult (*disable_peer)(CUcontext);
    CUresult (*attr)(void *, CUpointer_attribute, CUdeviceptr);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*host_alloc)(void **, size_t, unsigned);
    CUresult (*free_host)(void *);
    CUresult (*host_register)(void *, size_t, unsigned);
    CUresult (*host_unregister)(void *);
    CUresult (*memcpy)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*htod)(CUdeviceptr, const void *, size_t);
    CUresult (*dtoh)(void *, CUdeviceptr, size_t);
    CUresult (*stream_create)(CUstream *, unsigned);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*stream_sync)(CUstream);
    CUresult (*begin_capture)(CUstream, CUstreamCaptureMode);
    CUresult (*end_capture)(CUstream, CUgraph *);
    CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*graph_launch)(CUgraphExec, CUstream);
    CUresult (*exec_destroy)(CUgraphExec);
    CUresult (*graph_destroy)(CUgraph);
    CUresult (*event_record)(CUevent, CUstream);
    CUresult (*event_sync)(CUevent);
    CUresult (*stream_wait)(CUstream, CUevent, unsigned);
} cu;

/* Fill `cu` and initialise the driver: 0, or -1 when an entry point is missing or cuInit fails. */
static inline int psc_test_driver_load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

    if (!h)
        return -1;
#define PSC_SYM(field, name) *(void **)&cu.field = dlsym(h, name)
    PSC_SYM(init, "cuInit");
    PSC_SYM(get_current, "cuCtxGetCurrent");
    PSC_SYM(set_current, "cuCtxSetCurrent");
    PSC_SYM(retain, "cuDevicePrimaryCtxRetain");
    PSC_SYM(release, "cuDevicePrimaryCtxRelease_v2");
    PSC_SYM(device_get, "cuDeviceGet");
    PSC_SYM(can_access, "cuDeviceCanAccessPeer");
    PSC_SYM(enable_peer, "cuCtxEnablePeerAccess");
    PSC_SYM(disable_peer, "cuCtxDisablePeerAccess");
    PSC_SYM(attr, "cuPointerGetAttribute");
    PSC_SYM(mem_alloc, "cuMemAlloc_v2");
    PSC_SYM(mem_free, "cuMemFree_v2");
    PSC_SYM(host_alloc, "cuMemHostAlloc");
    PSC_SYM(free_host, "cuMemFreeHost");
    PSC_SYM(host_register, "cuMemHostRegister_v2");
    PSC_SYM(host_unregister, "cuMemHostUnregister");
    PSC_SYM(memcpy, "cuMemcpy");
    PSC_SYM(htod, "cuMemcpyHtoD_v2");
    PSC_SYM(dtoh, "cuMemcpyDtoH_v2");
    PSC_SYM(stream_create, "cuStreamCreate");
    PSC_SYM(stream_destroy, "cuStreamDestroy_v2");
    PSC_SYM(stream_sync, "cuStreamSynchronize");
    PSC_SYM(begin_capture, "cuStreamBeginCapture_v2");
    PSC_SYM(end_capture, "cuStreamEndCapture");
    PSC_SYM(instantiate, "cuGraphInstantiateWithFlags");
    PSC_SYM(graph_launch, "cuGraphLaunch");
    PSC_SYM(exec_destroy, "cuGraphExecDestroy");
    PSC_SYM(graph_destroy, "cuGraphDestroy");
    PSC_SYM(event_record, "cuEventRecord");
    PSC_SYM(event_sync, "cuEventSynchronize");
    PSC_SYM(stream_wait, "cuStreamWaitEvent");
#undef PSC_SYM
    for (size_t i = 0; i < sizeof(cu) / sizeof(void *); i++)
        if (!((void **)&cu)[i])
            return -1;
    return cu.init(0) == CUDA_SUCCESS ? 0 : -1;
}

/* The primary contexts of the first n GPUs (retained, as the runtime would): 0, or -1. */
static inline int psc_test_retain_primaries(CUcontext *primary, int n)
{
    for (int i = 0; i < n; i++) {
        CUdevice d;

        if (cu.device_get(&d, i) != CUDA_SUCCESS || cu.retain(&primary[i], d) != CUDA_SUCCESS)
            return -1;
    }
    return 0;
}

#endif
