/* NVML loaded at run time (nvml_driver.h): libnvidia-ml.so.1 opened and initialised, or the note why not. */
#define _GNU_SOURCE
#include "driver/nvml_driver.h"
#include "driver/dl_table.h"

#include <stdio.h>

#define PSC__NVML_SYM(field, sym, ret, params, req) PSC_DL_SYM(psc_nvml_t, field, sym, req),
static const psc_dl_sym_t psc__nvml_syms[] = {PSC_NVML_SYMBOLS(PSC__NVML_SYM)};
#undef PSC__NVML_SYM

static const psc_dl_lib_t psc__nvml_lib = {
    .env = "P2PSCOPE_LIBNVML",
    .soname = "libnvidia-ml.so.1",
    .no_lib = "NVML not loaded: %.0s%s", /* dlerror's text names the file */
    .no_sym = "NVML in %s lacks %s",
    .syms = psc__nvml_syms,
    .nsyms = PSC_DL_COUNT(psc__nvml_syms),
    .size = sizeof(psc_nvml_t),
};

psc_status_t psc_nvml_load(psc_nvml_t *nv, char *note, size_t notelen)
{
    psc_nvmlReturn_t rc;

    if (!(nv->handle = psc__dl_load(&psc__nvml_lib, nv, NULL, note, notelen)))
        return PSC_ERR_UNSUPPORTED;
    rc = nv->init();
    if (rc != 0) {
        snprintf(note, notelen, "nvmlInit_v2 failed: %s", nv->error_string(rc));
        psc__dl_unload(nv->handle, nv, sizeof(*nv)); /* not psc_nvml_unload: no nvmlShutdown without an init */
        return PSC_ERR_UNSUPPORTED;
    }
    note[0] = '\0';
    return PSC_OK;
}

void psc_nvml_unload(psc_nvml_t *nv)
{
    if (nv->handle)
        nv->shutdown();
    psc__dl_unload(nv->handle, nv, sizeof(*nv));
}
