/*
 * Run-time loaded NVML. The CUDA toolkit on build machines has no nvml.h, so
 * the few types used are declared here; tests/gpu/nvml_abi_check.c compares
 * them with the real header where one exists.
 */
#ifndef PSC_DRIVER_NVML_DRIVER_H
#define PSC_DRIVER_NVML_DRIVER_H

#include <stddef.h>

#include "p2pscope.h"

typedef int psc_nvmlReturn_t;              /* nvmlReturn_t; 0 is NVML_SUCCESS */
typedef struct psc_nvmlDevice *psc_nvmlDevice_t; /* nvmlDevice_t */

typedef struct {                           /* nvmlPciInfo_t, v3 layout */
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;              /* (device << 16) | vendor */
    unsigned int pciSubSystemId;
    char busId[32];
} psc_nvmlPciInfo_t;

enum { PSC_NVML_TEMPERATURE_GPU = 0 };
enum { PSC_NVML_CLOCK_GRAPHICS = 0, PSC_NVML_CLOCK_SM = 1, PSC_NVML_CLOCK_MEM = 2 };

/* X(field, exported symbol, return, (params)) */
#define PSC_NVML_SYMBOLS(X)                                                                   \
    X(init, "nvmlInit_v2", psc_nvmlReturn_t, (void))                                          \
    X(shutdown, "nvmlShutdown", psc_nvmlReturn_t, (void))                                     \
    X(error_string, "nvmlErrorString", const char *, (psc_nvmlReturn_t))                      \
    X(driver_version, "nvmlSystemGetDriverVersion", psc_nvmlReturn_t, (char *, unsigned))     \
    X(handle_by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2", psc_nvmlReturn_t,                 \
      (const char *, psc_nvmlDevice_t *))                                                     \
    X(index, "nvmlDeviceGetIndex", psc_nvmlReturn_t, (psc_nvmlDevice_t, unsigned *))          \
    X(pci_info, "nvmlDeviceGetPciInfo_v3", psc_nvmlReturn_t, (psc_nvmlDevice_t, psc_nvmlPciInfo_t *)) \
    X(temperature, "nvmlDeviceGetTemperature", psc_nvmlReturn_t, (psc_nvmlDevice_t, int, unsigned *)) \
    X(clock, "nvmlDeviceGetClockInfo", psc_nvmlReturn_t, (psc_nvmlDevice_t, int, unsigned *)) \
    X(max_clock, "nvmlDeviceGetMaxClockInfo", psc_nvmlReturn_t, (psc_nvmlDevice_t, int, unsigned *)) \
    X(bus_width, "nvmlDeviceGetMemoryBusWidth", psc_nvmlReturn_t, (psc_nvmlDevice_t, unsigned *))

#define PSC__NVML_FIELD(field, sym, ret, params) ret (*field) params;

typedef struct {
    void *handle;
    PSC_NVML_SYMBOLS(PSC__NVML_FIELD)
} psc_nvml_t;

/* Load and initialise NVML. Optional: on failure, note says why and the table is empty. */
psc_status_t psc_nvml_load(psc_nvml_t *nv, char *note, size_t notelen);
void psc_nvml_unload(psc_nvml_t *nv);

#endif
