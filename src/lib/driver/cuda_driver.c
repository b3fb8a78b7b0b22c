/*
 * The CUDA driver loaded at run time (cuda_driver.h): libcuda.so.1 opened, its entry points resolved through
 * cuGetProcAddress at the versions the table pins, and the driver's own text for its errors.
 */
#define _GNU_SOURCE
#include "driver/cuda_driver.h"
#include "driver/dl_table.h"

#include <stdio.h>
#include <string.h>

#define PSC__CUDA_SYM(sym, ver, req) \
    {.name = #sym, .version = ver, .required = req, .offset = offsetof(psc_cuda_t, p_##sym)},
static const psc_dl_sym_t psc__cuda_syms[] = {PSC_CUDA_SYMBOLS(PSC__CUDA_SYM)};
#undef PSC__CUDA_SYM

/* The driver's own lookup, which pins each entry point at the API version it is requested at. */
typedef struct {
    PFN_cuGetProcAddress_v12000 gpa;
} psc__cuda_gpa_t;

static const psc_dl_sym_t psc__cuda_gpa_sym = PSC_DL_SYM(psc__cuda_gpa_t, gpa, "cuGetProcAddress_v2", 1);

static const psc_dl_lib_t psc__cuda_lib = {
    .env = "P2PSCOPE_LIBCUDA",
    .soname = "libcuda.so.1",
    .no_lib = "no NVIDIA driver: %s could not be loaded (%s); install the NVIDIA driver",
    .no_sym = "the CUDA driver in %s is too old: it has no %s (CUDA 12.0 or newer needed)",
    .syms = &psc__cuda_gpa_sym,
    .nsyms = 1,
    .size = sizeof(psc__cuda_gpa_t),
};

static void *psc__cuda_lookup(void *arg, const psc_dl_sym_t *sym)
{
    const psc__cuda_gpa_t *t = arg;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    void *fn = NULL;

    if (t->gpa(sym->name, &fn, sym->version, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||
        found != CU_GET_PROC_ADDRESS_SUCCESS)
        return NULL;
    return fn;
}

psc_status_t psc_cuda_init_status(CUresult rc)
{
    switch (rc) {
    case CUDA_SUCCESS: return PSC_OK;
    case CUDA_ERROR_NO_DEVICE: return PSC_ERR_NO_DEVICE;
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER: /* the driver API's "insufficient driver" */
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return PSC_ERR_NO_DRIVER;
    case CUDA_ERROR_OUT_OF_MEMORY: return PSC_ERR_NO_MEMORY;
    default: return PSC_ERR_DRIVER;
    }
}

/* One line for a failed cuInit (or first count): the class, the driver's own error name, what to do. */
static void psc__cuda_init_message(const psc_cuda_t *cu, CUresult rc, const char *call, char *errbuf, size_t errlen)
{
    char text[160];
    const char *hint;

    psc_cuda_error_text(cu, rc, text, sizeof(text));
    switch (rc) {
    case CUDA_ERROR_NO_DEVICE:
        snprintf(errbuf, errlen, "no GPU: the CUDA driver sees no device (check CUDA_VISIBLE_DEVICES and nvidia-smi)");
        return;
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER: /* the driver API's "insufficient driver" */
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: hint = "update the NVIDIA driver"; break;
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
        hint = "the driver library and the loaded kernel module differ: reboot, or reload the nvidia module";
        break;
    case CUDA_ERROR_STUB_LIBRARY: hint = "this is the CUDA toolkit's stub library: install the NVIDIA driver"; break;
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED: hint = "the driver could not start: check nvidia-smi and the kernel log"; break;
    case CUDA_ERROR_OUT_OF_MEMORY:
        snprintf(errbuf, errlen, "out of memory: %s failed: %s", call, text);
        return;
    default:
        snprintf(errbuf, errlen, "the CUDA driver failed to start: %s failed: %s", call, text);
        return;
    }
    snprintf(errbuf, errlen, "no usable NVIDIA driver: %s failed: %s; %s", call, text, hint);
}

psc_status_t psc_cuda_load(psc_cuda_t *cu, char *errbuf, size_t errlen)
{
    const psc_dl_sym_t *missing;
    psc__cuda_gpa_t t;
    psc_status_t st;
    CUresult rc;
    int count = 0;

    memset(cu, 0, sizeof(*cu));
    if (!(cu->handle = psc__dl_load(&psc__cuda_lib, &t, NULL, errbuf, errlen)))
        return PSC_ERR_NO_DRIVER;
    missing = psc__dl_resolve(cu, psc__cuda_syms, PSC_DL_COUNT(psc__cuda_syms), psc__cuda_lookup, &t);
    if (missing) {
        snprintf(errbuf, errlen, "the CUDA driver lacks %s (API version %d): update the NVIDIA driver",
                 missing->name, missing->version);
        st = PSC_ERR_NO_DRIVER;
        goto err_close;
    }

    rc = cu->p_cuInit(0);
    if (rc != CUDA_SUCCESS) {
        psc__cuda_init_message(cu, rc, "cuInit", errbuf, errlen);
        st = psc_cuda_init_status(rc);
        goto err_close;
    }
    rc = cu->p_cuDeviceGetCount(&count);
    if (rc != CUDA_SUCCESS) {
        psc__cuda_init_message(cu, rc, "cuDeviceGetCount", errbuf, errlen);
        st = psc_cuda_init_status(rc);
        goto err_close;
    }
    if (count < 1) {
        snprintf(errbuf, errlen, "no GPU: the CUDA driver reports %d devices", count);
        st = PSC_ERR_NO_DEVICE;
        goto err_close;
    }
    return PSC_OK;

err_close:
    psc_cuda_unload(cu);
    return st;
}

void psc_cuda_unload(psc_cuda_t *cu)
{
    psc__dl_unload(cu->handle, cu, sizeof(*cu));
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
