/* Run-time loaded CUDA driver API: a table of entry points, no link to libcuda. */
#ifndef PSC_DRIVER_CUDA_DRIVER_H
#define PSC_DRIVER_CUDA_DRIVER_H

#include <cudaTypedefs.h>
#include <stddef.h>

#include "driver/cuda_symbols.h"
#include "p2pscope.h"

#define PSC__CUDA_FIELD(name, ver, req) PFN_##name##_v##ver p_##name;

typedef struct {
    void *handle;
    PSC_CUDA_SYMBOLS(PSC__CUDA_FIELD)
} psc_cuda_t;

/*
 * dlopen the driver (P2PSCOPE_LIBCUDA or libcuda.so.1), resolve every
 * symbol and call cuInit. On failure errbuf says what is missing and the
 * table is left closed.
 */
psc_status_t psc_cuda_load(psc_cuda_t *cu, char *errbuf, size_t errlen);
void psc_cuda_unload(psc_cuda_t *cu);

/*
 * The status of a failed cuInit (or a first device query): PSC_ERR_NO_DEVICE
 * for no device; PSC_ERR_NO_DRIVER for a driver that cannot serve (too old,
 * not initialised, a stub, library and kernel module differ);
 * PSC_ERR_NO_MEMORY out of memory; PSC_ERR_DRIVER for anything else.
 */
psc_status_t psc_cuda_init_status(CUresult rc);

/* "CUDA_ERROR_X (text)" for a result code, into buf. */
const char *psc_cuda_error_text(const psc_cuda_t *cu, CUresult rc, char *buf, size_t len);

#endif
