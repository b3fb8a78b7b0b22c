#define _GNU_SOURCE
#include "driver/nvml_driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

psc_status_t psc_nvml_load(psc_nvml_t *nv, char *note, size_t notelen)
{
    const char *path = getenv("P2PSCOPE_LIBNVML");
    psc_nvmlReturn_t rc;

    memset(nv, 0, sizeof(*nv));
    if (!path || !*path)
        path = "libnvidia-ml.so.1";
    nv->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!nv->handle) {
        snprintf(note, notelen, "NVML not loaded: %s", dlerror());
        return PSC_ERR_UNSUPPORTED;
    }
#define PSC__NVML_RESOLVE(field, sym, ret, params, req)                    \
    *(void **)&nv->field = dlsym(nv->handle, sym);                         \
    if (!nv->field && req) {                                               \
        snprintf(note, notelen, "NVML in %s lacks %s", path, sym);        \
        goto err_close;                                                    \
    }
    PSC_NVML_SYMBOLS(PSC__NVML_RESOLVE)
#undef PSC__NVML_RESOLVE

    rc = nv->init();
    if (rc != 0) {
        snprintf(note, notelen, "nvmlInit_v2 failed: %s", nv->error_string(rc));
        goto err_close;
    }
    note[0] = '\0';
    return PSC_OK;

err_close:
    dlclose(nv->handle);
    memset(nv, 0, sizeof(*nv));
    return PSC_ERR_UNSUPPORTED;
}

void psc_nvml_unload(psc_nvml_t *nv)
{
    if (nv->handle) {
        nv->shutdown();
        dlclose(nv->handle);
    }
    memset(nv, 0, sizeof(*nv));
}
