/*
 * Every CUDA driver entry point the library uses, with the API version it is
 * requested at. The version pins the ABI: cuGetProcAddress returns the
 * newest variant of the symbol that is not newer than this, and the field
 * is typed with cudaTypedefs.h's PFN_<name>_v<version>.
 * X(name, version, required): a missing optional symbol only disables the
 * feature that needs it.
 */
#ifndef PSC_DRIVER_CUDA_SYMBOLS_H
#define PSC_DRIVER_CUDA_SYMBOLS_H

#define PSC_CUDA_SYMBOLS(X)                   \
    X(cuInit, 2000, 1)                        \
    X(cuDriverGetVersion, 2020, 1)            \
    X(cuGetErrorName, 6000, 1)                \
    X(cuGetErrorString, 6000, 1)              \
    X(cuDeviceGetCount, 2000, 1)              \
    X(cuDeviceGet, 2000, 1)                   \
    X(cuDeviceGetName, 2000, 1)               \
    X(cuDeviceTotalMem, 3020, 1)              \
    X(cuDeviceGetAttribute, 2000, 1)          \
    X(cuDeviceGetPCIBusId, 4010, 1)           \
    X(cuDeviceGetUuid, 11040, 0)              \
    X(cuDeviceCanAccessPeer, 4000, 1)         \
    X(cuDeviceGetP2PAttribute, 8000, 0)       \
    X(cuDevicePrimaryCtxRetain, 7000, 1)      \
    X(cuDevicePrimaryCtxRelease, 11000, 1)    \
    X(cuCtxSetCurrent, 4000, 1)               \
    X(cuCtxGetCurrent, 4000, 1)               \
    X(cuCtxEnablePeerAccess, 4000, 1)         \
    X(cuCtxDisablePeerAccess, 4000, 1)        \
    X(cuModuleLoadData, 2000, 1)              \
    X(cuModuleUnload, 2000, 1)                \
    X(cuModuleGetFunction, 2000, 1)           \
    X(cuLaunchKernel, 4000, 1)                \
    X(cuLaunchKernelEx, 11060, 0)             \
    X(cuMemAlloc, 3020, 1)                    \
    X(cuMemFree, 3020, 1)                     \
    X(cuMemGetInfo, 3020, 0)                  \
    X(cuMemHostAlloc, 2020, 1)                \
    X(cuMemFreeHost, 2000, 1)                 \
    X(cuMemHostGetDevicePointer, 3020, 1)     \
    X(cuMemHostRegister, 6050, 0)             \
    X(cuMemHostUnregister, 4000, 0)           \
    X(cuMemcpyPeerAsync, 4000, 1)             \
    X(cuMemcpyAsync, 4000, 1)                 \
    X(cuMemcpyHtoD, 3020, 1)                  \
    X(cuMemcpyDtoH, 3020, 1)                  \
    X(cuStreamCreate, 2000, 1)                \
    X(cuStreamDestroy, 4000, 1)               \
    X(cuStreamSynchronize, 2000, 1)           \
    X(cuStreamQuery, 2000, 1)                 \
    X(cuEventCreate, 2000, 1)                 \
    X(cuEventDestroy, 4000, 1)                \
    X(cuEventRecord, 2000, 1)                 \
    X(cuEventSynchronize, 2000, 1)            \
    X(cuEventElapsedTime, 2000, 1)            \
    X(cuPointerGetAttributes, 7000, 0)        \
    X(cuStreamGetCtx, 9020, 0)                \
    X(cuStreamWaitEvent, 3020, 0)             \
    X(cuStreamWriteValue32, 11070, 0)         \
    X(cuStreamGetCaptureInfo, 11030, 0)       \
    X(cuIpcGetMemHandle, 4010, 0)             \
    X(cuIpcOpenMemHandle, 11000, 0)           \
    X(cuIpcCloseMemHandle, 4010, 0)           \
    X(cuIpcGetEventHandle, 4010, 0)           \
    X(cuIpcOpenEventHandle, 4010, 0)          \
    X(cuMemGetAllocationGranularity, 10020, 0) \
    X(cuMemCreate, 10020, 0)                  \
    X(cuMemRelease, 10020, 0)                 \
    X(cuMemExportToShareableHandle, 10020, 0) \
    X(cuMemImportFromShareableHandle, 10020, 0) \
    X(cuMemAddressReserve, 10020, 0)          \
    X(cuMemAddressFree, 10020, 0)             \
    X(cuMemMap, 10020, 0)                     \
    X(cuMemUnmap, 10020, 0)                   \
    X(cuMemSetAccess, 10020, 0)               \
    X(cuMemGetAccess, 10020, 0)               \
    X(cuMemGetHandleForAddressRange, 11070, 0) \
    X(cuStreamBeginCapture, 10010, 0)         \
    X(cuStreamEndCapture, 10000, 0)           \
    X(cuGraphInstantiateWithFlags, 11040, 0)  \
    X(cuGraphLaunch, 10000, 0)                \
    X(cuGraphExecDestroy, 10000, 0)           \
    X(cuGraphDestroy, 10000, 0)

#endif
