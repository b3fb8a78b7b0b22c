/* `p2pscope copy`'s pages: the benchmark's tables and footer, the calibration's crossovers, and their JSON. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "report/json.h"
#include "report/render_copy.h"

static char *render_bench(const psc_copy_bench_t *b)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    psc_render_copy_bench(f, b);
    fclose(f);
    return buf;
}

static char *render_cal(const psc_calibration_t *c, const char *path)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    psc_render_calibration(f, c, path);
    fclose(f);
    return buf;
}

static psc_copy_bench_row_t row(int src, int dst, uint64_t size, double drv, double psc, psc_engine_t e, int issuer,
                                double psc_cpu, double launch_cpu, uint64_t bad)
{
    psc_copy_bench_row_t r;

    memset(&r, 0, sizeof(r));
    r.src = src;
    r.dst = dst;
    r.stream_gpu = src == PSC_HOST ? dst : src;
    r.size = size;
    r.driver_us = drv;
    r.psc_us = psc;
    r.speedup = drv / psc;
    r.driver_cpu_us = 2.5;
    r.psc_cpu_us = psc_cpu;
    r.launch_cpu_us = launch_cpu;
    r.cpu_over_us = psc_cpu - launch_cpu; /* the bench's median of paired differences; here their difference */
    r.prep_us = psc * 0.9;
    r.prep_cpu_us = launch_cpu + 0.01;
    r.prep_speedup = drv / r.prep_us;
    r.route.engine = e;
    r.route.issuer = issuer;
    r.route.stream_gpu = r.stream_gpu;
    r.route.src = src;
    r.route.dst = dst;
    r.route.hop = issuer != r.stream_gpu;
    snprintf(r.route.why, sizeof(r.route.why), "gpu%d -> gpu%d: why \x1b[31m", src, dst);
    r.bad_bytes = bad;
    r.first_bad = bad ? 4 : UINT64_MAX;
    return r;
}

static void make_bench(psc_copy_bench_t *b, psc_copy_bench_row_t *rows)
{
    rows[0] = row(0, 1, 4096, 8.9, 3.1, PSC_ENGINE_SM, 1, 1.81, 1.62, 0);
    rows[1] = row(0, 1, 1ull << 20, 12.0, 6.0, PSC_ENGINE_SM, 1, 1.9, 1.62, 0);
    rows[2] = row(0, 1, 1ull << 30, 11000, 11111.1, PSC_ENGINE_CE, 0, 2.2, 2.0, 0);
    rows[3] = row(PSC_HOST, 0, 1, 4.04, 4.0, PSC_ENGINE_CE, 0, 2.0, 2.0, 3);
    rows[4] = row(PSC_HOST, 0, 65536, 6.0, 2.5, PSC_ENGINE_SM, 0, 1.7, 1.6, 0);
    b->nrow = 5;
    b->row = rows;
    b->calibrated = 0;
}

static void test_bench_table(void **state)
{
    psc_copy_bench_row_t rows[5];
    psc_copy_bench_t b;
    char *out;

    (void)state;
    make_bench(&b, rows);
    out = render_bench(&b);
    assert_non_null(out);
    assert_non_null(strstr(out, "routed by the built-in defaults\n"));
    assert_non_null(strstr(out, "K/M/G = 1024-based"));
    assert_non_null(strstr(out, "\ngpu0 -> gpu1, stream on gpu0\n"
                                "size  driver us  psc_copy us  speedup x               route  psc CPU us  launch CPU us  "
                                "CPU over us  prepared us  prepared x  check\n"
                                "4K         8.90         3.10       2.87  SM by gpu1 +events        1.81           1.62  "
                                "      +0.19         2.79        3.19     ok\n"
                                "1M        12.00         6.00       2.00  SM by gpu1 +events        1.90           1.62  "
                                "      +0.28         5.40        2.22     ok\n"
                                "1G        11000        11111       0.99          CE by gpu0        2.20           2.00  "
                                "      +0.20      10000.0        1.10     ok\n"));
    assert_non_null(strstr(out, "\nhost -> gpu0, stream on gpu0\n"
                                "size  driver us  psc_copy us  speedup x       route  psc CPU us  launch CPU us  "
                                "CPU over us  prepared us  prepared x            check\n"
                                "1          4.04         4.00       1.01  CE by gpu0        2.00           2.00  "
                                "      +0.00         3.60        1.12  BAD: 3 B from 4\n"
                                "64K        6.00         2.50       2.40  SM by gpu0        1.70           1.60  "
                                "      +0.10         2.25        2.67               ok\n"));
    /* 4K-1M: 2.00 at gpu0 -> gpu1 1M (host -> gpu0's 64K is 2.40); every size: 0.99 at 1G; prepared: 1.10 at 1G. */
    assert_non_null(strstr(out, "\nsmallest speedup: 4K-1M: 2.00x (gpu0 -> gpu1 at 1M); every size: 0.99x (gpu0 -> gpu1 "
                                "at 1G); prepared, every size: 1.10x (gpu0 -> gpu1 at 1G)\n"));
    /* The CPU time above the driver's call: the largest up to 1M (1G's +0.20 is past it). */
    assert_non_null(strstr(out, "\nlargest CPU time of psc_copy above its driver call, up to 1M: +0.28 us (gpu0 -> gpu1, "
                                "stream on gpu0, at 1M)\n"));
    free(out);

    /* Calibrated; no row between 4K and 1M. */
    b.calibrated = 1;
    b.row = rows + 2;
    b.nrow = 2;
    out = render_bench(&b);
    assert_non_null(strstr(out, "routed by the calibration\n"));
    assert_non_null(strstr(out, "smallest speedup: 4K-1M: no size measured; every size: 0.99x (gpu0 -> gpu1 at 1G)"));
    assert_non_null(strstr(out, "up to 1M: +0.00 us (host -> gpu0, stream on gpu0, at 1)\n"));
    free(out);
    b.nrow = 0;
    out = render_bench(&b);
    assert_string_equal(out, "\nno copy was measured\n");
    free(out);
}

static void test_bench_json(void **state)
{
    psc_copy_bench_row_t rows[5];
    psc_copy_bench_t b;
    json_t *run = json_object(), *cb, *r0, *r3;

    (void)state;
    make_bench(&b, rows);
    rows[1].speedup = NAN; /* not measured: null, never a non-number in the document */
    rows[0].cpu_over_us = 0.07; /* the row's own figure (a median of pairs), not the difference of its medians */
    assert_int_equal(psc_json_run_add_copy_bench(run, &b), PSC_OK);
    cb = json_object_get(run, "copy_bench");
    assert_non_null(cb);
    assert_false(json_is_true(json_object_get(cb, "calibrated")));
    assert_int_equal(json_array_size(json_object_get(cb, "rows")), 5);
    r0 = json_array_get(json_object_get(cb, "rows"), 0);
    r3 = json_array_get(json_object_get(cb, "rows"), 3);
    assert_string_equal(json_string_value(json_object_get(r0, "src")), "gpu0");
    assert_int_equal(json_integer_value(json_object_get(r0, "size_bytes")), 4096);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r0, "route"), "engine")), "sm");
    assert_string_equal(json_string_value(json_object_get(json_object_get(r0, "route"), "issuer")), "gpu1");
    assert_true(json_is_true(json_object_get(json_object_get(r0, "route"), "hop")));
    assert_true(json_is_null(json_object_get(r0, "first_bad")));
    assert_true(json_is_null(json_object_get(json_array_get(json_object_get(cb, "rows"), 1), "speedup")));
    assert_string_equal(json_string_value(json_object_get(r3, "src")), "host");
    assert_int_equal(json_integer_value(json_object_get(r3, "bad_bytes")), 3);
    assert_int_equal(json_integer_value(json_object_get(r3, "first_bad")), 4);
    /* 4K-1M without the NaN row: host -> gpu0's 64K. */
    assert_float_equal(json_real_value(json_object_get(cb, "min_speedup_4k_1m")), 2.4, 1e-12);
    assert_float_equal(json_real_value(json_object_get(cb, "min_speedup")), 11000 / 11111.1, 1e-12);
    assert_float_equal(json_real_value(json_object_get(cb, "min_prep_speedup")), (11000 / (11111.1 * 0.9)), 1e-6);
    assert_float_equal(json_real_value(json_object_get(cb, "max_cpu_over_us_to_1m")), (1.9 - 1.62), 1e-6);
    assert_float_equal(json_real_value(json_object_get(r0, "cpu_over_us")), 0.07, 1e-12);
    assert_float_equal(json_real_value(json_object_get(r0, "prep_us")), (3.1 * 0.9), 1e-6);
    assert_float_equal(json_real_value(json_object_get(r0, "prep_cpu_us")), 1.63, 1e-12);
    assert_float_equal(json_real_value(json_object_get(r0, "prep_speedup")), (8.9 / (3.1 * 0.9)), 1e-6);
    json_decref(run);
}

/* gpu0 -> gpu1 (stream gpu0): CE by gpu0 and SM by gpu1 (a hop) crossing at 64M; host -> gpu1: CE only. */
static psc_calibration_t *make_cal(void)
{
    static psc_cal_route_t routes[3];
    static psc_calibration_t c;

    memset(&c, 0, sizeof(c));
    memset(routes, 0, sizeof(routes));
    c.ngpu = 2;
    snprintf(c.gpu_name, sizeof(c.gpu_name), "NVIDIA H200");
    snprintf(c.driver_release, sizeof(c.driver_release), "580.159.04");
    snprintf(c.created, sizeof(c.created), "2026-11-23T18:00:00Z");
    c.nroute = 3;
    c.route = routes;
    for (int k = 0; k < 2; k++) {
        psc_cal_route_t *r = &routes[k];

        r->src = 0;
        r->dst = 1;
        r->stream_gpu = 0;
        r->issuer = k;
        r->engine = k ? PSC_ENGINE_SM : PSC_ENGINE_CE;
        r->nsizes = 5;
        for (int s = 0; s < 5; s++)
            r->size[s] = 1ull << (6 * s + 2); /* 4, 256, 16K, 1M, 64M */
    }
    /* CE: 8.9 flat then bandwidth; SM: 3.1 then slower at 64M. */
    routes[0].us[0] = 8.9, routes[0].us[1] = 8.9, routes[0].us[2] = 9.0, routes[0].us[3] = 20.0, routes[0].us[4] = 400;
    routes[1].us[0] = 3.1, routes[1].us[1] = 3.1, routes[1].us[2] = 3.3, routes[1].us[3] = 9.0, routes[1].us[4] = 410;
    routes[2].src = PSC_HOST;
    routes[2].dst = 1;
    routes[2].stream_gpu = 1;
    routes[2].issuer = 1;
    routes[2].engine = PSC_ENGINE_CE;
    routes[2].nsizes = 2;
    routes[2].size[0] = 1;
    routes[2].size[1] = 1ull << 30;
    routes[2].us[0] = 2.0;
    routes[2].us[1] = 20000;
    return &c;
}

static void test_calibration_table(void **state)
{
    psc_calibration_t *c = make_cal();
    json_t *run = json_object(), *doc;
    char *out;

    (void)state;
    out = render_cal(c, "cal.json");
    assert_non_null(strstr(out, "\npsc_copy's calibration in cal.json: 2 GPUs (NVIDIA H200), driver 580.159.04, measured "
                                "2026-11-23T18:00:00Z\n"));
    assert_non_null(strstr(out, "\ngpu0 -> gpu1, stream on gpu0 (2 routes measured)\n"
                                "sizes   fastest route       us at first size  us at last size\n"
                                "4 - 1M  SM by gpu1 +events              3.10             9.00\n"
                                "64M     CE by gpu0                     400.0            400.0\n"));
    assert_non_null(strstr(out, "\nhost -> gpu1, stream on gpu1 (1 route measured)\n"
                                "sizes   fastest route  us at first size  us at last size\n"
                                "1 - 1G  CE by gpu1                 2.00            20000\n"));
    free(out);

    assert_int_equal(psc_json_run_add_calibration(run, c, "cal.json"), PSC_OK);
    doc = json_object_get(run, "calibration");
    assert_int_equal(json_integer_value(json_object_get(doc, "p2pscope_copy_calibration")), 1);
    assert_int_equal(json_array_size(json_object_get(doc, "routes")), 3);
    assert_string_equal(json_string_value(json_object_get(run, "calibration_file")), "cal.json");
    json_decref(run);

    c->nroute = 0;
    out = render_cal(c, NULL);
    assert_string_equal(out, "\nthe calibration holds no route\n");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bench_table),
        cmocka_unit_test(test_bench_json),
        cmocka_unit_test(test_calibration_table),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
