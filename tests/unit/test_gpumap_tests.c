/*
 * The measurements through a CPU mapping of GPU memory in the registries
 * (bw: host_to_gpu_gpumap_cpu, gpu_to_host_gpumap_cpu; lat: the copy, flag
 * and map cost tests) on fake GPUs whose kernels run on the CPU: waived
 * with every backend's reason where nothing maps (the H100/H200 machines),
 * measured and checked through the fake libgdrapi where it does, a wrong
 * byte failing the result, and what the tables and JSON say.
 */
#include <cuda.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake_context.h"
#include "fake_gdr_env.h"
#include "internal.h"
#include "json.h"
#include "render.h"
#include "render_lat.h"
#include "suite_opts.h"
#include "test_hooks.h"

/* The H100/H200 machines: no libgdrapi, a CUDA 13.0 driver, not coherent. */
static int setup_none(void **state)
{
    psc_test_gdr_none();
    return psc_test_open_fake_gpus(state, "2");
}

static int setup_gdr(void **state)
{
    psc_test_gdr_fake();
    return psc_test_open_fake_gpus(state, "2");
}

static void assert_has(const char *text, const char *what)
{
    if (!strstr(text, what))
        fail_msg("\"%s\" lacks \"%s\"", text, what);
}

static psc_bw_test_t bw_test(const char *name)
{
    psc_bw_test_t t = -1;

    assert_int_equal(psc_bw_test_from_name(name, &t), PSC_OK);
    return t;
}

static psc_lat_test_t lat_test(const char *name)
{
    psc_lat_test_t t = -1;

    assert_int_equal(psc_lat_test_from_name(name, &t), PSC_OK);
    return t;
}

/* Small, quick options: 256 KiB copies, two copies a sample, three samples. */
static void small_opts(psc_measure_opts_t *o)
{
    psc_measure_opts_default(o);
    o->size = 256 << 10;
    o->iterations = 2;
    o->warmup = 1;
    o->samples = o->max_samples = 3;
}

static void test_registries(void **state)
{
    static const char *const lat_names[] = {"host_to_gpu_copy_gpumap", "gpu_to_host_copy_gpumap",
                                            "cpu_gpu_flag_gpumap", "map_cost_gpumap"};
    psc_bw_test_t found[8];
    const psc_bw_test_info_t *w = psc_bw_test_info(bw_test("host_to_gpu_gpumap_cpu"));
    const psc_bw_test_info_t *r = psc_bw_test_info(bw_test("gpu_to_host_gpumap_cpu"));

    (void)state;
    assert_int_equal(w->engine, PSC_ENGINE_CPU);
    assert_int_equal(w->shape, PSC_SHAPE_H2D);
    assert_int_equal(r->engine, PSC_ENGINE_CPU);
    assert_int_equal(r->shape, PSC_SHAPE_D2H);
    assert_int_equal(psc_bw_test_match("*gpumap*", found, 8), 2);
    assert_int_equal(psc_lat_test_match("*gpumap*", found, 8), 4);
    for (size_t i = 0; i < sizeof(lat_names) / sizeof(lat_names[0]); i++)
        assert_int_equal(psc_lat_test_info(lat_test(lat_names[i]))->where, PSC_LAT_GPUMAP);
    assert_int_equal(psc_lat_test_info(lat_test("map_cost_gpumap"))->method, PSC_LAT_MAPCOST);
}

/* Nothing maps: every case of both bandwidth tests waived, each backend's reason said, in the JSON too. */
static void test_bw_waived(void **state)
{
    const char *names[] = {"host_to_gpu_gpumap_cpu", "gpu_to_host_gpumap_cpu"};
    psc_measure_opts_t o;
    psc_bw_result_t res[4];

    (void)state;
    small_opts(&o);
    for (int k = 0; k < 2; k++) {
        size_t n = 0;

        assert_int_equal(psc_bw_run_test(g_ctx, bw_test(names[k]), bw_test_opts(NULL, 0, &o, NULL, NULL), res, 4, &n),
                         PSC_OK);
        assert_int_equal(n, 2);
        for (size_t i = 0; i < n; i++) {
            json_t *j = psc_json_bw_result(&res[i]);

            assert_int_equal(res[i].status, PSC_RESULT_WAIVED);
            assert_int_equal(res[i].nsamples, 0);
            assert_has(res[i].reason, "gdrcopy: no libgdrapi");
            assert_has(res[i].reason, "dma-buf: the driver (CUDA 13.0) is too old");
            assert_has(res[i].reason, "coherent: ");
            assert_non_null(j);
            assert_string_equal(json_string_value(json_object_get(j, "status")), "waived");
            assert_string_equal(json_string_value(json_object_get(j, "engine")), "cpu_gpumap");
            assert_has(json_string_value(json_object_get(j, "reason")), "gdrcopy: no libgdrapi");
            json_decref(j);
        }
    }
}

/* Through the fake gdrcopy: measured, every timed sample checked, and a flipped byte fails the result. */
static void test_bw_measured_and_checked(void **state)
{
    const char *names[] = {"host_to_gpu_gpumap_cpu", "gpu_to_host_gpumap_cpu"};
    psc_measure_opts_t o;
    psc_test_hooks_t h;
    psc_bw_result_t res[2];

    (void)state;
    small_opts(&o);
    for (int k = 0; k < 2; k++) {
        size_t n = 0;

        assert_int_equal(psc_bw_run_test(g_ctx, bw_test(names[k]), bw_test_opts(NULL, 0, &o, NULL, NULL), res, 2, &n),
                         PSC_OK);
        assert_int_equal(n, 2);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(res[i].status, PSC_RESULT_PASSED);
            assert_int_equal(res[i].nsamples, 3);
            assert_int_equal(res[i].verify.checked, 3);
            assert_int_equal(res[i].verify.bad_bytes, 0);
            assert_int_equal(res[i].bytes_per_sample, 2 * (256 << 10));
            assert_true(res[i].stats.median > 0);
        }
        psc__test_hooks_default(&h);
        h.corrupt_offset = 4097;
        assert_int_equal(psc__test_hooks_set(g_ctx, &h), PSC_OK);
        assert_int_equal(psc_bw_run_test(g_ctx, bw_test(names[k]), bw_test_opts(NULL, 0, &o, NULL, NULL), res, 1, &n),
                         PSC_OK);
        assert_int_equal(psc__test_hooks_set(g_ctx, NULL), PSC_OK);
        assert_int_equal(res[0].status, PSC_RESULT_FAILED);
        assert_int_equal(res[0].verify.bad_samples, 3);
        assert_int_equal(res[0].verify.first_bad_offset, 4097);
        assert_has(res[0].reason, "wrong data");
    }
}

static char *render(psc_lat_test_t t, const psc_lat_result_t *r, size_t n)
{
    int devs[] = {0, 1};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    psc_render_lat(f, t, r, n, devs, 2);
    fclose(f);
    return buf;
}

static void test_lat_waived(void **state)
{
    static psc_lat_result_t r[2];
    psc_lat_opts_t o;
    psc_lat_test_t t = lat_test("gpu_to_host_copy_gpumap");
    size_t n = 0;
    char *text;

    (void)state;
    psc_lat_opts_default(&o);
    o.samples = 4;
    assert_int_equal(psc_lat_run_test(g_ctx, t, lat_test_opts(NULL, 0, &o, NULL, NULL), r, 2, &n), PSC_OK);
    assert_int_equal(n, 2);
    assert_int_equal(r[0].status, PSC_RESULT_WAIVED);
    assert_int_equal(r[0].c.dst, PSC_HOST);
    assert_has(r[1].reason, "no CPU mapping of GPU 1's memory");
    text = render(t, r, n);
    assert_has(text, "gpu1 -> host\n  waived: no CPU mapping");
    free(text);
}

/* Each latency test through the fake gdrcopy: sizes measured, the two figures of each, the JSON's keys. */
static void test_lat_measured(void **state)
{
    static psc_lat_result_t r[2];
    psc_lat_opts_t o;
    size_t n = 0;
    char *text;
    json_t *j;

    (void)state;
    psc_lat_opts_default(&o);
    o.samples = 4;
    assert_int_equal(
        psc_lat_run_test(g_ctx, lat_test("host_to_gpu_copy_gpumap"), lat_test_opts(NULL, 0, &o, NULL, NULL), r, 2, &n),
        PSC_OK);
    assert_int_equal(r[1].status, PSC_RESULT_PASSED);
    assert_int_equal(r[1].c.src, PSC_HOST);
    assert_int_equal(r[1].nsizes, 6);
    assert_int_equal(r[1].sizes[5], 65536);
    assert_int_equal(r[1].lat[5].n, 4);
    assert_int_equal(r[1].submit[5].n, 4);
    text = render(lat_test("host_to_gpu_copy_gpumap"), r, n);
    assert_has(text, "mapped p50");
    assert_has(text, "cuMemcpy p50");
    free(text);
    j = psc_json_lat_result(&r[1]);
    assert_non_null(json_object_get(json_array_get(json_object_get(j, "sizes"), 0), "cumemcpy"));
    json_decref(j);

    assert_int_equal(
        psc_lat_run_test(g_ctx, lat_test("cpu_gpu_flag_gpumap"), lat_test_opts(NULL, 0, &o, NULL, NULL), r, 2, &n),
        PSC_OK);
    assert_int_equal(r[0].status, PSC_RESULT_PASSED);
    assert_int_equal(r[0].lat[0].n, 4 * 16);
    assert_true(r[0].lat[0].p50 > 0);

    assert_int_equal(
        psc_lat_run_test(g_ctx, lat_test("map_cost_gpumap"), lat_test_opts(NULL, 0, &o, NULL, NULL), r, 2, &n), PSC_OK);
    assert_int_equal(r[0].status, PSC_RESULT_PASSED);
    assert_int_equal(r[0].nsizes, 6);
    assert_int_equal(r[0].sizes[0], 65536);
    j = psc_json_lat_result(&r[0]);
    assert_non_null(json_object_get(json_array_get(json_object_get(j, "sizes"), 0), "unmap"));
    json_decref(j);
}

/* A BAR1 that holds 1 MiB: the map cost stops before the first size past it, the sizes before it stand. */
static void test_map_cost_bar1(void **state)
{
    static psc_lat_result_t r[2];
    psc_lat_opts_t o;
    size_t n = 0;

    (void)state;
    setenv("FAKE_GDR_BAR1", "1048576", 1);
    psc_lat_opts_default(&o);
    o.samples = 2;
    assert_int_equal(
        psc_lat_run_test(g_ctx, lat_test("map_cost_gpumap"), lat_test_opts(NULL, 0, &o, NULL, NULL), r, 2, &n), PSC_OK);
    unsetenv("FAKE_GDR_BAR1");
    assert_int_equal(r[0].status, PSC_RESULT_PASSED);
    assert_int_equal(r[0].nsizes, 3);
    assert_has(r[0].reason, "stopped before 4194304 bytes");
}

int main(void)
{
    const struct CMUnitTest none[] = {
        cmocka_unit_test(test_registries),
        cmocka_unit_test(test_bw_waived),
        cmocka_unit_test(test_lat_waived),
    };
    const struct CMUnitTest gdr[] = {
        cmocka_unit_test(test_bw_measured_and_checked),
        cmocka_unit_test(test_lat_measured),
        cmocka_unit_test(test_map_cost_bar1),
    };

    return cmocka_run_group_tests_name("no backend", none, setup_none, psc_test_close_ctx) |
           cmocka_run_group_tests_name("fake gdrcopy", gdr, setup_gdr, psc_test_close_ctx);
}
