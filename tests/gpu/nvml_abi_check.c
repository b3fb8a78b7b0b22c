/*
 * Built only where the real nvml.h exists (the GPU machines): our own
 * declarations of the NVML types and constants must match it.
 */
#include <nvml.h>
#include <stddef.h>

#include "driver/nvml_driver.h"

#define SAME_FIELD(f) \
    _Static_assert(offsetof(nvmlPciInfo_t, f) == offsetof(psc_nvmlPciInfo_t, f), "nvmlPciInfo_t." #f)
SAME_FIELD(busIdLegacy);
SAME_FIELD(domain);
SAME_FIELD(bus);
SAME_FIELD(device);
SAME_FIELD(pciDeviceId);
SAME_FIELD(pciSubSystemId);
SAME_FIELD(busId);
_Static_assert(sizeof(nvmlPciInfo_t) == sizeof(psc_nvmlPciInfo_t), "nvmlPciInfo_t size");
_Static_assert((int)NVML_TEMPERATURE_GPU == (int)PSC_NVML_TEMPERATURE_GPU, "temperature sensor");
_Static_assert((int)NVML_CLOCK_SM == (int)PSC_NVML_CLOCK_SM, "SM clock");
_Static_assert((int)NVML_CLOCK_MEM == (int)PSC_NVML_CLOCK_MEM, "memory clock");
_Static_assert(NVML_SUCCESS == 0, "success");
_Static_assert(sizeof(nvmlDevice_t) == sizeof(psc_nvmlDevice_t), "device handle");

_Static_assert(sizeof(nvmlBAR1Memory_t) == sizeof(psc_nvmlBAR1Memory_t), "nvmlBAR1Memory_t size");
_Static_assert(offsetof(nvmlBAR1Memory_t, bar1Total) == offsetof(psc_nvmlBAR1Memory_t, bar1Total), "bar1Total");
#define SAME_FV(f) \
    _Static_assert(offsetof(nvmlFieldValue_t, f) == offsetof(psc_nvmlFieldValue_t, f), "nvmlFieldValue_t." #f)
SAME_FV(fieldId);
SAME_FV(scopeId);
SAME_FV(timestamp);
SAME_FV(latencyUsec);
SAME_FV(valueType);
SAME_FV(nvmlReturn);
SAME_FV(value);
_Static_assert(sizeof(nvmlFieldValue_t) == sizeof(psc_nvmlFieldValue_t), "nvmlFieldValue_t size");
_Static_assert(NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON == PSC_NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON, "speed field");
_Static_assert(NVML_FI_DEV_NVLINK_LINK_COUNT == PSC_NVML_FI_DEV_NVLINK_LINK_COUNT, "link count field");
_Static_assert(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX == PSC_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, "tx field");
_Static_assert(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX == PSC_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, "rx field");
_Static_assert(NVML_FI_DEV_NVLINK_GET_SPEED == PSC_NVML_FI_DEV_NVLINK_GET_SPEED, "per-link speed field");
_Static_assert(NVML_NVLINK_VERSION_4_0 == 6 && NVML_NVLINK_VERSION_2_2 == 3, "nvmlNvlinkVersion_t values");
_Static_assert((int)NVML_NVLINK_CAP_P2P_SUPPORTED == (int)PSC_NVML_NVLINK_CAP_P2P_SUPPORTED, "cap p2p");
_Static_assert((int)NVML_NVLINK_CAP_SYSMEM_ACCESS == (int)PSC_NVML_NVLINK_CAP_SYSMEM_ACCESS, "cap sysmem");
_Static_assert((int)NVML_NVLINK_CAP_P2P_ATOMICS == (int)PSC_NVML_NVLINK_CAP_P2P_ATOMICS, "cap p2p atomics");
_Static_assert((int)NVML_NVLINK_CAP_SYSMEM_ATOMICS == (int)PSC_NVML_NVLINK_CAP_SYSMEM_ATOMICS, "cap sysmem atomics");
_Static_assert((int)NVML_NVLINK_DEVICE_TYPE_GPU == (int)PSC_NVML_NVLINK_DEVICE_TYPE_GPU, "remote gpu");
_Static_assert((int)NVML_NVLINK_DEVICE_TYPE_SWITCH == (int)PSC_NVML_NVLINK_DEVICE_TYPE_SWITCH, "remote switch");
_Static_assert((int)NVML_P2P_CAPS_INDEX_READ == (int)PSC_NVML_P2P_CAPS_INDEX_READ, "p2p read index");
_Static_assert(PSC_MAX_NVLINKS >= NVML_NVLINK_MAX_LINKS, "NVML_NVLINK_MAX_LINKS fits");

int main(void)
{
    return 0;
}
