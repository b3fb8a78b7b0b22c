/*
 * The run document with text that is not UTF-8: a GPU name cut inside a
 * character, raw bytes in the command, hostname-like fields and a reason.
 * jansson refuses such strings, and a refused insert once dropped the key
 * silently; every key must be there and the text must read back.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "json_keys.h"

#include "report/json.h"
#include "report/render_doctor.h"
#include "report/render_load.h"

static json_t *run_doc(const char *name, const char *command, const char *release, const char *reason)
{
    psc_system_info_t sys = {.device_count = 1, .cuda_driver_version = 13000, .nvml_loaded = 1};
    psc_device_info_t dev = {.index = 0, .nvml_index = 0, .pci_bus_id = "0000:00:06.0", .numa_node = -1};
    psc_measure_opts_t o;
    psc_bw_test_t test;
    psc_bw_result_t r;
    json_t *run;
    int devs[] = {0};

    snprintf(dev.name, sizeof(dev.name), "%s", name);
    snprintf(sys.driver_release, sizeof(sys.driver_release), "%s", release);
    snprintf(sys.device_order, sizeof(sys.device_order), "FASTEST_FIRST");
    assert_int_equal(psc_bw_test_from_name("gpu_to_host_ce", &test), PSC_OK);
    memset(&r, 0, sizeof(r));
    r.c = (psc_bw_case_t){.test = test, .src = 0, .dst = PSC_HOST, .issuer = 0, .nxfer = 1};
    r.c.xfer[0] = (psc_xfer_t){0, PSC_HOST, 0};
    r.status = PSC_RESULT_FAILED;
    r.host_node = -1;
    r.verify.first_bad_offset = -1;
    snprintf(r.reason, sizeof(r.reason), "%s", reason);
    psc_measure_opts_default(&o);
    run = psc_json_run_new(command, &sys, &dev, 1);
    assert_non_null(run);
    assert_int_equal(psc_json_run_set_parameters(run, &o, devs, 1, &test, 1), PSC_OK);
    assert_int_equal(psc_json_run_add_test(run, psc_json_bw_result(&r)), PSC_OK);
    assert_int_equal(psc_json_run_finish(run, 1.5, 1), PSC_OK);
    return run;
}

static void test_every_key_survives(void **state)
{
    json_t *clean = run_doc("NVIDIA H200", "bw", "580.159.04", "cuMemcpy failed");
    json_t *dirty = run_doc("NVIDIA H200 \xe2\x82", "bw \xff\xfe", "580\xc0\xaf", "cuMemcpy \x80 failed \xf0\x9f");
    json_t *back, *dev;
    char *text;

    (void)state;
    text = json_dumps(dirty, JSON_COMPACT);
    assert_non_null(text);
    back = json_loads(text, 0, NULL); /* the text is valid UTF-8 */
    free(text);
    assert_non_null(back);
    assert_int_equal(count_keys(back), count_keys(clean));
    dev = json_array_get(json_object_get(back, "devices"), 0);
    assert_string_equal(json_string_value(json_object_get(dev, "name")), "NVIDIA H200 ");
    assert_string_equal(json_string_value(json_object_get(back, "command")), "bw \xef\xbf\xbd\xef\xbf\xbd");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(back, "tests"), 0), "reason")),
                        "cuMemcpy \xef\xbf\xbd failed ");
    json_decref(back);
    json_decref(clean);
    json_decref(dirty);
}

static void test_json_str(void **state)
{
    json_t *j;

    (void)state;
    j = psc_json_str("mid\xe2\x82\xac\xe2\x82");
    assert_string_equal(json_string_value(j), "mid\xe2\x82\xac");
    json_decref(j);
    j = psc_json_str(NULL);
    assert_string_equal(json_string_value(j), "");
    json_decref(j);
}

/* The doctor table once showed 3 findings and its JSON 1: findings whose text is not UTF-8 were dropped. */
static void test_every_finding_survives(void **state)
{
    psc_finding_t v[3];
    json_t *arr, *back;
    char *text;

    (void)state;
    memset(v, 0, sizeof(v));
    for (int k = 0; k < 3; k++) {
        v[k].severity = PSC_SEV_WARNING;
        snprintf(v[k].rule, sizeof(v[k].rule), "rule%d", k);
        snprintf(v[k].fix, sizeof(v[k].fix), "fix it");
    }
    snprintf(v[0].what, sizeof(v[0].what), "GPU \"NVIDIA H200\" is fine");
    snprintf(v[1].what, sizeof(v[1].what), "cut inside a character \xe2\x82");
    snprintf(v[2].evidence, sizeof(v[2].evidence), "cmdline: quiet \xff\xfe iommu=pt");
    arr = psc_json_findings(v, 3);
    assert_non_null(arr);
    text = json_dumps(arr, JSON_COMPACT);
    assert_non_null(text);
    back = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(back);
    assert_int_equal(json_array_size(back), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(back, 1), "what")), "cut inside a character ");
    assert_string_equal(json_string_value(json_object_get(json_array_get(back, 2), "evidence")),
                        "cmdline: quiet \xef\xbf\xbd\xef\xbf\xbd iommu=pt");
    json_decref(back);
    json_decref(arr);
}

/* A bandwidth result as the JSON writer gets it: one GPU -> host copy. */
static psc_bw_result_t one_result(psc_result_status_t status, int host_node, int64_t first_bad)
{
    psc_bw_test_t test;
    psc_bw_result_t r;

    assert_int_equal(psc_bw_test_from_name("gpu_to_host_ce", &test), PSC_OK);
    memset(&r, 0, sizeof(r));
    r.c = (psc_bw_case_t){.test = test, .src = 0, .dst = PSC_HOST, .issuer = 0, .nxfer = 1};
    r.c.xfer[0] = (psc_xfer_t){0, PSC_HOST, 0};
    r.xfer_gbs[0] = 51.5;
    r.status = status;
    r.host_node = host_node;
    r.verify.first_bad_offset = first_bad;
    r.verify.expected = 0xab;
    r.verify.found = 0x00;
    return r;
}

/* 0 is a value, -1 (or below) is none: offset 0, node 0 and index 0 are written, not dropped or nulled. */
static void test_zero_is_a_value(void **state)
{
    psc_bw_result_t r = one_result(PSC_RESULT_FAILED, 0, 0);
    json_t *t = psc_json_bw_result(&r), *v;

    (void)state;
    assert_non_null(t);
    v = json_object_get(t, "verify");
    assert_true(json_is_integer(json_object_get(v, "first_bad_offset")));
    assert_int_equal(json_integer_value(json_object_get(v, "first_bad_offset")), 0);
    assert_int_equal(json_integer_value(json_object_get(v, "expected")), 0xab);
    assert_true(json_is_integer(json_object_get(v, "found")));
    assert_int_equal(json_integer_value(json_object_get(v, "found")), 0);
    assert_true(json_is_integer(json_object_get(t, "host_numa_node")));
    assert_int_equal(json_integer_value(json_object_get(t, "host_numa_node")), 0);
    /* Failed: no median for the transfer; no samples: no statistics. */
    assert_true(json_is_null(json_object_get(json_array_get(json_object_get(t, "transfers"), 0), "median_gbs")));
    assert_true(json_is_null(json_object_get(t, "stats")));
    json_decref(t);

    r = one_result(PSC_RESULT_PASSED, -1, -1);
    t = psc_json_bw_result(&r);
    assert_non_null(t);
    v = json_object_get(t, "verify");
    assert_true(json_is_null(json_object_get(v, "first_bad_offset")));
    assert_null(json_object_get(v, "expected")); /* nothing bad: no byte to show */
    assert_true(json_is_null(json_object_get(t, "host_numa_node")));
    assert_true(json_is_null(json_object_get(t, "reason")));
    assert_float_equal(json_real_value(json_object_get(json_array_get(json_object_get(t, "transfers"), 0), "median_gbs")),
                       51.5, 0);
    json_decref(t);
}

static void test_zero_in_run_and_devices(void **state)
{
    psc_system_info_t sys = {.device_count = 2, .cuda_driver_version = 0, .nvml_loaded = 0};
    psc_device_info_t dev[2] = {
        {.index = 0, .nvml_index = 0, .pci_bus_id = "0000:00:06.0", .numa_node = 0, .sm_clock_mhz = 0,
         .temperature_c = 0, .mem_clock_mhz = 0, .sm_clock_max_mhz = 0},
        {.index = 1, .nvml_index = -1, .pci_bus_id = "0000:00:07.0", .numa_node = -1, .sm_clock_mhz = -1,
         .temperature_c = -1, .mem_clock_mhz = -1, .sm_clock_max_mhz = -1},
    };
    psc_measure_opts_t o;
    psc_bw_test_t test;
    json_t *run, *d0, *d1, *p;
    int devs[] = {0, 1};

    (void)state;
    assert_int_equal(psc_bw_test_from_name("gpu_to_host_ce", &test), PSC_OK);
    run = psc_json_run_new("bw", &sys, dev, 2);
    assert_non_null(run);
    d0 = json_array_get(json_object_get(run, "devices"), 0);
    d1 = json_array_get(json_object_get(run, "devices"), 1);
    for (size_t k = 0; k < 5; k++) {
        static const char *const keys[] = {"nvml_index", "numa_node", "sm_clock_mhz", "temperature_c",
                                           "memory_clock_mhz"};

        assert_true(json_is_integer(json_object_get(d0, keys[k])));
        assert_int_equal(json_integer_value(json_object_get(d0, keys[k])), 0);
        assert_true(json_is_null(json_object_get(d1, keys[k])));
    }
    assert_true(json_is_null(json_object_get(d0, "uuid")));
    assert_true(json_is_null(json_object_get(d0, "pci_id")));
    assert_true(json_is_null(json_object_get(json_object_get(run, "system"), "driver_release")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(run, "system"), "cuda_driver_version")), 0);

    psc_measure_opts_default(&o);
    o.host_node = 0;
    o.seed = 0;
    o.warmup = 0;
    assert_int_equal(psc_json_run_set_parameters(run, &o, devs, 2, &test, 1), PSC_OK);
    p = json_object_get(run, "parameters");
    assert_true(json_is_integer(json_object_get(p, "host_numa_node")));
    assert_int_equal(json_integer_value(json_object_get(p, "host_numa_node")), 0);
    assert_int_equal(json_integer_value(json_object_get(p, "seed")), 0);
    assert_int_equal(json_integer_value(json_object_get(p, "warmup")), 0);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(p, "devices"), 0)), 0);
    o.host_node = -1;
    assert_int_equal(psc_json_run_set_parameters(run, &o, devs, 2, &test, 1), PSC_OK);
    assert_string_equal(json_string_value(json_object_get(json_object_get(run, "parameters"), "host_numa_node")),
                        "nearest");
    json_decref(run);
}

/* Background traffic: a first error at offset 0 is reported with its offset. */
static void test_load_first_error_at_zero(void **state)
{
    psc_load_path_report_t r[2];
    json_t *arr, *e;

    (void)state;
    memset(r, 0, sizeof(r));
    r[0].src = 0;
    r[0].dst = 1;
    r[0].bad_bytes = 1;
    r[0].first_bad_offset = 0;
    r[0].expected = 0x5a;
    r[0].found = 0;
    r[1].src = 1;
    r[1].dst = 0;
    r[1].first_bad_offset = -1;
    arr = psc_json_load(r, 2);
    assert_int_equal(json_array_size(arr), 2);
    e = json_object_get(json_array_get(arr, 0), "first_error");
    assert_non_null(e);
    assert_int_equal(json_integer_value(json_object_get(e, "offset")), 0);
    assert_int_equal(json_integer_value(json_object_get(e, "expected")), 0x5a);
    assert_null(json_object_get(json_array_get(arr, 1), "first_error"));
    json_decref(arr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_key_survives),
        cmocka_unit_test(test_json_str),
        cmocka_unit_test(test_every_finding_survives),
        cmocka_unit_test(test_zero_is_a_value),
        cmocka_unit_test(test_zero_in_run_and_devices),
        cmocka_unit_test(test_load_first_error_at_zero),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
