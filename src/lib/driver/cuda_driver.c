#define _GNU_SOURCE
#include "driver/cuda_driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static psc_status_t psc__cuda_resolve(psc_cuda_t *cu, PFN_cuGetProcAddress_v12000 gpa,
                                      char *errbuf, size_t errlen)
{
    CUdriverProcAddressQueryResult found;
    CUresult rc;

#define PSC__CUDA_RESOLVE(name, ver, req)                                               \
    found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;                                       \
    rc = gpa(#name, (void **)&cu->p_##name, ver, CU_GET_PROC_ADDRESS_DEFAULT, &found); \
    if (rc != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS) {                   \
        cu->p_##name = NULL;                                                            \
        if (req) {                                                                      \
            snprintf(errbuf, errlen,                                                    \
                     "the CUDA driver lacks %s (API version %d): update the NVIDIA driver", \
                     #name, ver);                                                       \
            return PSC_ERR_NO_DRIVER;                                                   \
        }                                                                               \
    }
    PSC_CUDA_SYMBOLS(PSC__CUDA_RESOLVE)
#undef PSC__CUDA_RESOLVE
    return PSC_OK;
}

psc_status_t psc_cuda_load(psc_cuda_t *cu, char *errbuf, size_t errlen)
{
    const char *path = getenv("P2PSCOPE_LIBCUDA");
    PFN_cuGetProcAddress_v12000 gpa;
    psc_status_t st;
    CUresult rc;
    int count = 0;

    memset(cu, 0, sizeof(*cu));
    if (!path || !*path)
        path = "libcuda.so.1";
    cu->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!cu->handle) {
        snprintf(errbuf, errlen, "no NVIDIA driver: %s could not be loaded (%s); install the NVIDIA driver",
                 path, dlerror());
        return PSC_ERR_NO_DRIVER;
    }
    gpa = (PFN_cuGetProcAddress_v12000)dlsym(cu->handle, "cuGetProcAddress_v2");
    if (!gpa) {
        snprintf(errbuf, errlen,
                 "the CUDA driver in %s is too old: it has no cuGetProcAddress_v2 (CUDA 12.0 or newer needed)",
                 path);
        st = PSC_ERR_NO_DRIVER;
        goto err_close;
    }
    st = psc__cuda_resolve(cu, gpa, errbuf, errlen);
    if (st != PSC_OK)
        goto err_close;

    rc = cu->p_cuInit(0);
    if (rc == CUDA_ERROR_NO_DEVICE) {
        snprintf(errbuf, errlen, "no GPU: the CUDA driver sees no device (check CUDA_VISIBLE_DEVICES and nvidia-smi)");
        st = PSC_ERR_NO_DEVICE;
        goto err_close;
    }
    if (rc != CUDA_SUCCESS) {
        char text[160];
        snprintf(errbuf, errlen, "cuInit failed: %s", psc_cuda_error_text(cu, rc, text, sizeof(text)));
        st = rc == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH ? PSC_ERR_NO_DRIVER : PSC_ERR_NO_DEVICE;
        goto err_close;
    }
    rc = cu->p_cuDeviceGetCount(&count);
    if (rc != CUDA_SUCCESS || count < 1) {
        snprintf(errbuf, errlen, "no GPU: the CUDA driver reports %d devices", count);
        st = PSC_ERR_NO_DEVICE;
        goto err_close;
    }
    return PSC_OK;

err_close:
    dlclose(cu->handle);
    memset(cu, 0, sizeof(*cu));
    return st;
}

void psc_cuda_unload(psc_cuda_t *cu)
{
    if (cu->handle)
        dlclose(cu->handle);
    memset(cu, 0, sizeof(*cu));
}

const char *psc_cuda_error_text(const psc_cuda_t *cu, CUresult rc, char *buf, size_t len)
{
    const char *name = NULL, *text = NULL;

    if (cu->p_cuGetErrorName)
        cu->p_cuGetErrorName(rc, &name);
    if (cu->p_cuGetErrorString)
        cu->p_cuGetErrorString(rc, &text);
    snprintf(buf, len, "%s (%s)", name ? name : "CUDA_ERROR_UNKNOWN", text ? text : "no description");
    return buf;
}
