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

typedef struct { /* nvmlBAR1Memory_t */
    unsigned long long bar1Total, bar1Free, bar1Used;
} psc_nvmlBAR1Memory_t;

typedef struct { /* nvmlFieldValue_t */
    unsigned int fieldId;
    unsigned int scopeId;      /* the link, for per-link fields */
    long long timestamp;
    long long latencyUsec;
    int valueType;
    psc_nvmlReturn_t nvmlReturn;
    union {
        double dVal;
        unsigned int uiVal;
        unsigned long ulVal;
        unsigned long long ullVal;
        long long sllVal;
    } value;
} psc_nvmlFieldValue_t;

enum { /* nvmlNvLinkCapability_t */
    PSC_NVML_NVLINK_CAP_P2P_SUPPORTED = 0,
    PSC_NVML_NVLINK_CAP_SYSMEM_ACCESS = 1,
    PSC_NVML_NVLINK_CAP_P2P_ATOMICS = 2,
    PSC_NVML_NVLINK_CAP_SYSMEM_ATOMICS = 3,
};
enum { /* nvmlIntNvLinkDeviceType_t */
    PSC_NVML_NVLINK_DEVICE_TYPE_GPU = 0,
    PSC_NVML_NVLINK_DEVICE_TYPE_IBMNPU = 1,
    PSC_NVML_NVLINK_DEVICE_TYPE_SWITCH = 2,
};
enum { PSC_NVML_P2P_CAPS_INDEX_READ = 0 }; /* nvmlGpuP2PCapsIndex_t */
enum { /* field ids */
    PSC_NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON = 90,
    PSC_NVML_FI_DEV_NVLINK_LINK_COUNT = 91,
    PSC_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138,
    PSC_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139,
    PSC_NVML_FI_DEV_NVLINK_GET_SPEED = 164, /* per link (scopeId), MB/s */
};

/* X(field, exported symbol, return, (params), required) */
#define PSC_NVML_SYMBOLS(X)                                                                   \
    X(init, "nvmlInit_v2", psc_nvmlReturn_t, (void), 1)                                       \
    X(shutdown, "nvmlShutdown", psc_nvmlReturn_t, (void), 1)                                  \
    X(error_string, "nvmlErrorString", const char *, (psc_nvmlReturn_t), 1)                   \
    X(driver_version, "nvmlSystemGetDriverVersion", psc_nvmlReturn_t, (char *, unsigned), 1)  \
    X(handle_by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2", psc_nvmlReturn_t,                 \
      (const char *, psc_nvmlDevice_t *), 1)                                                  \
    X(index, "nvmlDeviceGetIndex", psc_nvmlReturn_t, (psc_nvmlDevice_t, unsigned *), 1)       \
    X(pci_info, "nvmlDeviceGetPciInfo_v3", psc_nvmlReturn_t, (psc_nvmlDevice_t, psc_nvmlPciInfo_t *), 1) \
    X(temperature, "nvmlDeviceGetTemperature", psc_nvmlReturn_t, (psc_nvmlDevice_t, int, unsigned *), 0) \
    X(clock, "nvmlDeviceGetClockInfo", psc_nvmlReturn_t, (psc_nvmlDevice_t, int, unsigned *), 1) \
    X(max_clock, "nvmlDeviceGetMaxClockInfo", psc_nvmlReturn_t, (psc_nvmlDevice_t, int, unsigned *), 1) \
    X(bus_width, "nvmlDeviceGetMemoryBusWidth", psc_nvmlReturn_t, (psc_nvmlDevice_t, unsigned *), 0) \
    X(bar1, "nvmlDeviceGetBAR1MemoryInfo", psc_nvmlReturn_t, (psc_nvmlDevice_t, psc_nvmlBAR1Memory_t *), 0) \
    X(pcie_gen, "nvmlDeviceGetCurrPcieLinkGeneration", psc_nvmlReturn_t, (psc_nvmlDevice_t, unsigned *), 0) \
    X(pcie_gen_max, "nvmlDeviceGetGpuMaxPcieLinkGeneration", psc_nvmlReturn_t, (psc_nvmlDevice_t, unsigned *), 0) \
    X(pcie_width, "nvmlDeviceGetCurrPcieLinkWidth", psc_nvmlReturn_t, (psc_nvmlDevice_t, unsigned *), 0) \
    X(pcie_width_max, "nvmlDeviceGetMaxPcieLinkWidth", psc_nvmlReturn_t, (psc_nvmlDevice_t, unsigned *), 0) \
    X(virt_mode, "nvmlDeviceGetVirtualizationMode", psc_nvmlReturn_t, (psc_nvmlDevice_t, int *), 0) \
    X(mig_mode, "nvmlDeviceGetMigMode", psc_nvmlReturn_t, (psc_nvmlDevice_t, unsigned *, unsigned *), 0) \
    X(ecc_mode, "nvmlDeviceGetEccMode", psc_nvmlReturn_t, (psc_nvmlDevice_t, int *, int *), 0) \
    X(persistence, "nvmlDeviceGetPersistenceMode", psc_nvmlReturn_t, (psc_nvmlDevice_t, int *), 0) \
    X(clock_events, "nvmlDeviceGetCurrentClocksEventReasons", psc_nvmlReturn_t,               \
      (psc_nvmlDevice_t, unsigned long long *), 0)                                            \
    X(nvlink_state, "nvmlDeviceGetNvLinkState", psc_nvmlReturn_t, (psc_nvmlDevice_t, unsigned, int *), 0) \
    X(nvlink_version, "nvmlDeviceGetNvLinkVersion", psc_nvmlReturn_t, (psc_nvmlDevice_t, unsigned, unsigned *), 0) \
    X(nvlink_cap, "nvmlDeviceGetNvLinkCapability", psc_nvmlReturn_t,                          \
      (psc_nvmlDevice_t, unsigned, int, unsigned *), 0)                                       \
    X(nvlink_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2", psc_nvmlReturn_t,             \
      (psc_nvmlDevice_t, unsigned, psc_nvmlPciInfo_t *), 0)                                   \
    X(nvlink_remote_type, "nvmlDeviceGetNvLinkRemoteDeviceType", psc_nvmlReturn_t,            \
      (psc_nvmlDevice_t, unsigned, int *), 0)                                                 \
    X(field_values, "nvmlDeviceGetFieldValues", psc_nvmlReturn_t, (psc_nvmlDevice_t, int, psc_nvmlFieldValue_t *), 0) \
    X(p2p_status, "nvmlDeviceGetP2PStatus", psc_nvmlReturn_t, (psc_nvmlDevice_t, psc_nvmlDevice_t, int, int *), 0)

#define PSC__NVML_FIELD(field, sym, ret, params, req) ret (*field) params;

typedef struct {
    void *handle;
    PSC_NVML_SYMBOLS(PSC__NVML_FIELD)
} psc_nvml_t;

/* Load and initialise NVML. Optional: on failure, note says why and the table is empty. */
psc_status_t psc_nvml_load(psc_nvml_t *nv, char *note, size_t notelen);
void psc_nvml_unload(psc_nvml_t *nv);

#endif
