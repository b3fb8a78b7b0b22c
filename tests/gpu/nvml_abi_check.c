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

int main(void)
{
    return 0;
}
