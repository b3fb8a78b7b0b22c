/* Inventory on a real GPU: every fact is present and plausible, NVML ids match the PCI ids. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpu_common.h"

static void test_devices_plausible(void **state)
{
    psc_system_info_t sys;
    int n = psc_device_count(g_ctx);
    int seen_nvml[64] = {0};

    (void)state;
    assert_true(n >= 1);
    assert_int_equal(psc_system_info(g_ctx, &sys), PSC_OK);
    assert_int_equal(sys.device_count, n);
    assert_true(sys.cuda_driver_version >= 12000);
    assert_true(strcmp(sys.device_order, "FASTEST_FIRST") == 0 || strcmp(sys.device_order, "PCI_BUS_ID") == 0);
    for (int i = 0; i < n; i++) {
        psc_device_info_t d;
        unsigned dom, bus, dev, fn;

        assert_int_equal(psc_device_info(g_ctx, i, &d), PSC_OK);
        assert_int_equal(d.index, i);
        assert_true(strlen(d.name) > 0);
        assert_int_equal(sscanf(d.pci_bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn), 4);
        assert_true(d.memory_bytes > (1ull << 30));
        assert_true(d.sm_count > 0);
        assert_true(d.cc_major >= 7);
        assert_true(d.async_engines >= 1);
        assert_int_equal(strncmp(d.uuid, "GPU-", 4), 0);
        if (sys.nvml_loaded) {
            assert_true(strlen(sys.driver_release) > 0);
            assert_in_range(d.nvml_index, 0, 63);
            assert_false(seen_nvml[d.nvml_index]);
            seen_nvml[d.nvml_index] = 1;
            assert_int_equal(d.pci_device_id & 0xffff, 0x10de); /* NVIDIA's vendor id */
            assert_in_range(d.temperature_c, 1, 120);
            assert_true(d.sm_clock_mhz > 0 && d.sm_clock_mhz <= d.sm_clock_max_mhz);
            assert_true(d.mem_peak_gbs > 100.0);
        }
    }
    assert_int_equal(psc_device_info(g_ctx, n, &(psc_device_info_t){0}), PSC_ERR_INVALID);
}

static const struct CMUnitTest tests[] = {cmocka_unit_test(test_devices_plausible)};

PSC_GPU_TEST_MAIN(tests)
