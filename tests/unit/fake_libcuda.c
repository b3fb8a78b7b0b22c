/*
 * A stand-in for libcuda.so.1 for control-flow tests of the real binary (no
 * GPU needed). FAKE_CUDA_MODE picks what it pretends:
 *   nodevice  cuInit answers CUDA_ERROR_NO_DEVICE
 *   initfail  cuInit answers CUDA_ERROR_UNKNOWN (a driver that is there but broken)
 *   missing   the driver lacks cuMemcpyAsync
 *   gpus      GPUs that enumerate but cannot make a context, so every
 *             measurement fails with the driver's error
 * FAKE_CUDA_COUNT sets how many GPUs it reports (default 2; -10000 to 10000,
 * since a broken driver may answer anything).
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *fake_mode(void)
{
    const char *m = getenv("FAKE_CUDA_MODE");
    return m ? m : "gpus";
}

static CUresult fake_unsupported(void) { return CUDA_ERROR_NOT_SUPPORTED; }

static CUresult fake_init(unsigned flags)
{
    (void)flags;
    if (strcmp(fake_mode(), "initfail") == 0)
        return CUDA_ERROR_UNKNOWN;
    return strcmp(fake_mode(), "nodevice") == 0 ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}

static CUresult fake_driver_version(int *v) { *v = 13000; return CUDA_SUCCESS; }
static int fake_ngpu(void)
{
    const char *s = getenv("FAKE_CUDA_COUNT");
    int n = s ? atoi(s) : 2;

    return n >= -10000 && n <= 10000 ? n : 2;
}

static CUresult fake_count(int *n) { *n = fake_ngpu(); return CUDA_SUCCESS; }
static CUresult fake_get(CUdevice *d, int i) { *d = i; return i >= 0 && i < fake_ngpu() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }

static CUresult fake_name(char *name, int len, CUdevice d)
{
    snprintf(name, (size_t)len, "Fake GPU %d", d);
    return CUDA_SUCCESS;
}

static CUresult fake_bus_id(char *id, int len, CUdevice d)
{
    snprintf(id, (size_t)len, "0000:%02x:%02x.0", (0x10 + d) % 256, (0x10 + d) / 256);
    return CUDA_SUCCESS;
}

static CUresult fake_total_mem(size_t *b, CUdevice d)
{
    (void)d;
    *b = 80ull << 30;
    return CUDA_SUCCESS;
}

static CUresult fake_attr(int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *v = 3; break;
    default: *v = 0; break;
    }
    return CUDA_SUCCESS;
}

static CUresult fake_error_name(CUresult rc, const char **s)
{
    *s = rc == CUDA_ERROR_NOT_SUPPORTED ? "CUDA_ERROR_NOT_SUPPORTED" : "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
}

static CUresult fake_error_string(CUresult rc, const char **s)
{
    (void)rc;
    *s = "operation not supported (fake driver)";
    return CUDA_SUCCESS;
}

static const struct { const char *name; void *fn; } fake_table[] = {
    {"cuInit", (void *)fake_init},
    {"cuDriverGetVersion", (void *)fake_driver_version},
    {"cuDeviceGetCount", (void *)fake_count},
    {"cuDeviceGet", (void *)fake_get},
    {"cuDeviceGetName", (void *)fake_name},
    {"cuDeviceGetPCIBusId", (void *)fake_bus_id},
    {"cuDeviceTotalMem", (void *)fake_total_mem},
    {"cuDeviceGetAttribute", (void *)fake_attr},
    {"cuGetErrorName", (void *)fake_error_name},
    {"cuGetErrorString", (void *)fake_error_string},
};

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    (void)version;
    (void)flags;
    if (strcmp(fake_mode(), "missing") == 0 && strcmp(symbol, "cuMemcpyAsync") == 0) {
        *pfn = NULL;
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = (void *)fake_unsupported;
    for (size_t i = 0; i < sizeof(fake_table) / sizeof(fake_table[0]); i++)
        if (strcmp(symbol, fake_table[i].name) == 0)
            *pfn = fake_table[i].fn;
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}
