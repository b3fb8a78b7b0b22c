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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_key_survives),
        cmocka_unit_test(test_json_str),
        cmocka_unit_test(test_every_finding_survives),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
