#define _GNU_SOURCE
#include "driver/nvml_driver.h"
#include "driver/dl_table.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define PSC__NVML_SYM(field, sym, ret, params, req) PSC_DL_SYM(psc_nvml_t, field, sym, req),
static const psc_dl_sym_t psc__nvml_syms[] = {PSC_NVML_SYMBOLS(PSC__NVML_SYM)};
#undef PSC__NVML_SYM

static const psc_dl_lib_t psc__nvml_lib = {
    .env = "P2PSCOPE_LIBNVML",
    .soname = "libnvidia-ml.so.1",
    .no_lib = "NVML not loaded: %.0s%s", /* dlerror's text names the file */
    .no_sym = "NVML in %s lacks %s",
};

psc_status_t psc_nvml_load(psc_nvml_t *nv, char *note, size_t notelen)
{
    const size_t n = sizeof(psc__nvml_syms) / sizeof(psc__nvml_syms[0]);
    psc_nvmlReturn_t rc;

    memset(nv, 0, sizeof(*nv));
    nv->handle = psc__dl_load(&psc__nvml_lib, nv, psc__nvml_syms, n, NULL, note, notelen);
    if (!nv->handle)
        goto err_clear;
    rc = nv->init();
    if (rc != 0) {
        snprintf(note, notelen, "nvmlInit_v2 failed: %s", nv->error_string(rc));
        goto err_close;
    }
    note[0] = '\0';
    return PSC_OK;

err_close:
    dlclose(nv->handle);
err_clear:
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
