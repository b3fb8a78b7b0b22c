/*
 * psc_copy's calibration file: a hand-made calibration survives save and
 * read field by field; hostile variants of its JSON (made field by field in
 * memory) are refused with a one-line reason naming the field, and the
 * caller's pointer untouched; psc_copy_calibration_load takes only this
 * machine's GPUs (fake driver, FAKE_CUDA_UUID) and keeps the old
 * calibration otherwise; and the option structs of psc_copy_calibrate and
 * psc_copy_bench are adopted and checked.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "json_path.h"
#include <jansson.h>

#include "fake_context.h"
#include "internal.h"
#include "opts.h"
#include "p2pscope/bench.h"

static char dir[] = "/tmp/psc-calibration-XXXXXX";
static char good[128];
static psc_calibration_t *const SENTINEL = (psc_calibration_t *)&dir; /* never a calibration */

/* Two GPUs with the given UUIDs, a GPU path with both engines and a host path; awkward sizes and times. */
static psc_calibration_t *make_cal(const char *uuid0, const char *uuid1)
{
    psc_calibration_t *c = calloc(1, sizeof(*c));

    assert_non_null(c);
    c->ngpu = uuid1 ? 2 : 1;
    snprintf(c->uuid[0], sizeof(c->uuid[0]), "%s", uuid0);
    if (uuid1)
        snprintf(c->uuid[1], sizeof(c->uuid[1]), "%s", uuid1);
    snprintf(c->gpu_name, sizeof(c->gpu_name), "NVIDIA H200 \xc3\xa9");
    snprintf(c->driver_release, sizeof(c->driver_release), "580.159.04");
    snprintf(c->created, sizeof(c->created), "2026-11-23T18:00:00Z");
    c->nroute = 3;
    c->route = calloc(3, sizeof(*c->route));
    assert_non_null(c->route);
    for (int k = 0; k < 3; k++) {
        psc_cal_route_t *r = &c->route[k];

        r->src = k < 2 ? 0 : PSC_HOST;
        r->dst = k < 2 ? (uuid1 ? 1 : 0) : 0;
        r->stream_gpu = 0;
        r->issuer = k == 1 && uuid1 ? 1 : 0;
        r->engine = k == 1 ? PSC_ENGINE_SM : PSC_ENGINE_CE;
        r->nsizes = k == 0 ? PSC_CAL_MAX_SIZES : 3;
        for (int s = 0; s < r->nsizes; s++) {
            r->size[s] = k != 0 ? 4096ull * (s + 1) + 3
                         : s == PSC_CAL_MAX_SIZES - 1 ? 1ull << 40 /* the largest accepted */
                         : s < 40 ? 1ull << s : (1ull << 39) + 12345ull * (uint64_t)(s - 39);
            r->us[s] = 1.0 / 3.0 * (s + 1) + k * 1e-9 + (s == 2 ? 8.9e6 : 0);
        }
    }
    return c;
}

static void path_in_dir(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

static int setup(void **state)
{
    psc_calibration_t *c;
    char err[256];

    (void)state;
    if (!mkdtemp(dir))
        return -1;
    path_in_dir(good, sizeof(good), "good.json");
    c = make_cal("GPU-aaaaaaaa-0000-0000-0000-000000000000", "GPU-bbbbbbbb-0000-0000-0000-000000000000");
    if (psc_calibration_save(c, good, err, sizeof(err)) != PSC_OK)
        return -1;
    psc_calibration_free(c);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(good);
    return rmdir(dir);
}

static void assert_cal_equal(const psc_calibration_t *a, const psc_calibration_t *b)
{
    assert_int_equal(a->ngpu, b->ngpu);
    for (int i = 0; i < a->ngpu; i++)
        assert_string_equal(a->uuid[i], b->uuid[i]);
    assert_string_equal(a->gpu_name, b->gpu_name);
    assert_string_equal(a->driver_release, b->driver_release);
    assert_string_equal(a->created, b->created);
    assert_int_equal(a->nroute, b->nroute);
    for (int k = 0; k < a->nroute; k++) {
        const psc_cal_route_t *x = &a->route[k], *y = &b->route[k];

        assert_int_equal(x->src, y->src);
        assert_int_equal(x->dst, y->dst);
        assert_int_equal(x->stream_gpu, y->stream_gpu);
        assert_int_equal(x->issuer, y->issuer);
        assert_int_equal(x->engine, y->engine);
        assert_int_equal(x->nsizes, y->nsizes);
        for (int s = 0; s < x->nsizes; s++) {
            assert_true(x->size[s] == y->size[s]);
            assert_memory_equal(&x->us[s], &y->us[s], sizeof(double)); /* exactly the same double */
        }
    }
}

static void test_round_trip(void **state)
{
    psc_calibration_t *a = make_cal("GPU-aaaaaaaa-0000-0000-0000-000000000000",
                                    "GPU-bbbbbbbb-0000-0000-0000-000000000000");
    psc_calibration_t *b = NULL;
    char err[256] = "", path[160], *text;
    json_t *doc;

    (void)state;
    path_in_dir(path, sizeof(path), "trip.json");
    assert_int_equal(psc_calibration_save(a, path, err, sizeof(err)), PSC_OK);
    assert_int_equal(psc_calibration_read(path, &b, err, sizeof(err)), PSC_OK);
    assert_non_null(b);
    assert_cal_equal(a, b);
    /* The format tag, the library's version and the routes' words, as the file's readers see them. */
    text = psc_calibration_json(a);
    assert_non_null(text);
    doc = json_loads(text, 0, NULL);
    assert_non_null(doc);
    assert_int_equal(json_integer_value(json_object_get(doc, "p2pscope_copy_calibration")), 1);
    assert_string_equal(json_string_value(json_object_get(doc, "library_version")), psc_version(NULL, NULL, NULL));
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(doc, "routes"), 1), "issuer")),
                        "gpu1");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(doc, "routes"), 1), "engine")),
                        "sm");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(doc, "routes"), 2), "src")),
                        "host");
    json_decref(doc);
    free(text);
    /* A route measured at no size is left out of the file; the others read back. */
    a->route[1].nsizes = 0;
    psc_calibration_free(b);
    b = NULL;
    assert_int_equal(psc_calibration_save(a, path, err, sizeof(err)), PSC_OK);
    assert_int_equal(psc_calibration_read(path, &b, err, sizeof(err)), PSC_OK);
    assert_int_equal(b->nroute, 2);
    assert_int_equal(b->route[1].src, PSC_HOST);
    unlink(path);
    psc_calibration_free(a);
    psc_calibration_free(b);
}

static void test_save_refusals(void **state)
{
    psc_calibration_t *a = make_cal("GPU-a", NULL);
    char err[256] = "";

    (void)state;
    assert_int_equal(psc_calibration_save(a, NULL, err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "no file given"));
    assert_int_equal(psc_calibration_save(NULL, "/tmp/x.json", err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "no calibration"));
    assert_int_equal(psc_calibration_save(a, "/nonexistent-dir/x.json", err, sizeof(err)), PSC_ERR_IO);
    assert_null(psc_calibration_json(NULL));
    psc_calibration_free(a);
    psc_calibration_free(NULL);
}

/* ---------------------------------------------------------------- hostile files */

/* The text is refused with st, *out untouched, one line naming want. */
static void refused_text(const char *text, size_t len, psc_status_t want_st, const char *want)
{
    psc_calibration_t *out = SENTINEL;
    char path[160], err[1024] = "";
    FILE *f;
    psc_status_t st;

    path_in_dir(path, sizeof(path), "bad.json");
    f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    st = psc_calibration_read(path, &out, err, sizeof(err));
    if (st != want_st || !strstr(err, want))
        fprintf(stderr, "want %d \"%s\": got %d \"%s\"\n", want_st, want, st, err);
    assert_int_equal(st, want_st);
    assert_non_null(strstr(err, want));
    for (const char *c = err; *c; c++) /* one line, and nothing a terminal would obey */
        assert_true((unsigned char)*c >= 0x20 && *c != 0x7f);
    assert_ptr_equal(out, SENTINEL);
    unlink(path);
}

static void refused(json_t *doc, const char *want)
{
    char *text = json_dumps(doc, JSON_INDENT(1));

    assert_non_null(text);
    refused_text(text, strlen(text), PSC_ERR_INVALID, want);
    free(text);
    json_decref(doc);
}

static const struct {
    const char *path, *value, *want;
} cases[] = {
    {"p2pscope_copy_calibration", "2", "p2pscope_copy_calibration: 2: not a calibration this library reads"},
    {"p2pscope_copy_calibration", NULL, "p2pscope_copy_calibration: missing"},
    {"p2pscope_copy_calibration", "\"1\"", "p2pscope_copy_calibration: \"1\""},
    {"library_version", "2", "library_version: 2: accepted a string"},
    {"created", "123", "created: 123: accepted a string"},
    {"driver_release", "\"0123456789012345678901234567890123\"", "driver_release: longer than 31 bytes"},
    {"gpu_name", NULL, "gpu_name: missing: accepted a string"},
    {"gpus", "{}", "gpus: {}: accepted an array"},
    {"gpus", "[]", "gpus: 0 GPUs: accepted 1 to 64"},
    {"gpus[1]", "\"GPU-b\"", "gpus[1]: \"GPU-b\": accepted an object"},
    {"gpus[1].index", "0", "gpus[1].index: 0: accepted 1 (the GPUs in the driver's order)"},
    {"gpus[1].index", NULL, "gpus[1].index: missing"},
    {"gpus[0].uuid", "5", "gpus[0].uuid: 5: accepted a string"},
    {"gpus[0].uuid", "\"\"", "gpus[0].uuid: empty"},
    {"gpus[0].uuid", "\"GPU-5c6e8ae8-9cd6-8d25-d0ef-be721e5f66d9-0000000000\"", "gpus[0].uuid: longer than 47"},
    {"gpus[1].uuid", "\"GPU-aaaaaaaa-0000-0000-0000-000000000000\"", "gpus: gpus[0] and gpus[1] have the same uuid"},
    {"routes", "{}", "routes: {}: accepted an array"},
    {"routes", NULL, "routes: missing"},
    {"routes", "[]", "routes: 0 routes: accepted 1 to 108 for 2 GPUs"},
    {"routes[0]", "3", "routes[0]: 3: accepted an object"},
    {"routes[0].src", "\"gpu2\"", "routes[0].src: \"gpu2\": accepted \"gpu0\" to \"gpu1\" or \"host\""},
    {"routes[0].src", "\"gpu01\"", "routes[0].src: \"gpu01\""},
    {"routes[0].src", "\"gpu-1\"", "routes[0].src: \"gpu-1\""},
    {"routes[0].src", "\"gpu1 \"", "routes[0].src: \"gpu1 \""},
    {"routes[0].src", "0", "routes[0].src: 0: accepted"},
    {"routes[0].dst", NULL, "routes[0].dst: missing"},
    {"routes[0].stream_gpu", "\"host\"", "routes[0].stream_gpu: \"host\": accepted \"gpu0\" to \"gpu1\""},
    {"routes[2].dst", "\"host\"", "routes[2]: src and dst are both the host"},
    {"routes[2].issuer", "\"host\"", "routes[2].issuer: \"host\": accepted \"gpu0\" to \"gpu1\""},
    {"routes[2].issuer", "\"gpu1\"", "routes[2].issuer: \"gpu1\" is neither an end of the path nor the stream's GPU"},
    {"routes[0].issuer", "\"GPU0\"", "routes[0].issuer: \"GPU0\""},
    {"routes[0].engine", "\"dma\"", "routes[0].engine: \"dma\": accepted \"ce\" or \"sm\""},
    {"routes[0].engine", "1", "routes[0].engine: 1"},
    {"routes[0].sizes", "[]", "routes[0].sizes: 0 sizes: accepted 1 to 48"},
    {"routes[0].sizes", "\"4K\"", "routes[0].sizes: \"4K\": accepted an array"},
    {"routes[1].sizes[0]", "0", "routes[1].sizes[0]: 0: accepted an integer 1 to 1099511627776"},
    {"routes[1].sizes[2]", "1099511627777", "routes[1].sizes[2]: 1099511627777: accepted an integer 1 to"},
    {"routes[1].sizes[1]", "-4096", "routes[1].sizes[1]: -4096"},
    {"routes[1].sizes[1]", "8195.5", "routes[1].sizes[1]: 8195.5"},
    {"routes[1].sizes[1]", "4099", "routes[1].sizes[1]: 4099 after 4099: accepted sizes in ascending order"},
    {"routes[1].sizes[1]", "4000", "routes[1].sizes[1]: 4000 after 4099"},
    {"routes[1].us", "[1, 2]", "routes[1].us: 2 times for 3 sizes: accepted one time per size"},
    {"routes[1].us", NULL, "routes[1].us: missing: accepted an array"},
    {"routes[1].us[1]", "0", "routes[1].us[1]: 0: accepted a time in microseconds above 0"},
    {"routes[1].us[1]", "-2.5", "routes[1].us[1]: -2.5"},
    {"routes[1].us[1]", "\"1\"", "routes[1].us[1]: \"1\""},
    {"routes[1].us[1]", "null", "routes[1].us[1]: null"},
};

static void test_hostile_fields(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
        refused(psc_test_json_mutated(good, cases[k].path, cases[k].value), cases[k].want);
}

static void test_hostile_shapes(void **state)
{
    json_t *doc, *a;
    char *big;

    (void)state;
    refused_text("{\"p2pscope_copy_calibration\": 1,", 32, PSC_ERR_INVALID, "not valid JSON");
    refused_text("[1]", 3, PSC_ERR_INVALID, "the document: not a JSON object");
    refused_text("{\"a\": 1, \"a\": 2}", 16, PSC_ERR_INVALID, "not valid JSON");
    refused_text("{\"x\": 1e400}", 12, PSC_ERR_INVALID, "not valid JSON");
    refused_text("{\"x\": \"a\\\n\"}", 11, PSC_ERR_INVALID, "not valid JSON"); /* jansson quotes the newline back */
    /* A bounded read: 16 MiB and one byte is refused before it is parsed. */
    big = malloc((16u << 20) + 1);
    assert_non_null(big);
    memset(big, ' ', (16u << 20) + 1);
    refused_text(big, (16u << 20) + 1, PSC_ERR_INVALID, "larger than");
    free(big);
    /* 49 sizes. */
    doc = psc_test_json_mutated(good, "routes[0].sizes", "[]");
    a = json_object_get(json_array_get(json_object_get(doc, "routes"), 0), "sizes");
    for (int s = 0; s < PSC_CAL_MAX_SIZES + 1; s++)
        json_array_append_new(a, json_integer(s + 1));
    refused(doc, "routes[0].sizes: 49 sizes: accepted 1 to 48");
    /* 65 GPUs. */
    doc = psc_test_json_mutated(good, "gpus", "[]");
    a = json_object_get(doc, "gpus");
    for (int i = 0; i < PSC_MAX_GPUS + 1; i++) {
        char uuid[48];

        snprintf(uuid, sizeof(uuid), "GPU-%d", i);
        json_array_append_new(a, json_pack("{s:i,s:s}", "index", i, "uuid", uuid));
    }
    refused(doc, "gpus: 65 GPUs: accepted 1 to 64");
    /* A route given twice. */
    doc = json_load_file(good, 0, NULL);
    assert_non_null(doc);
    a = json_object_get(doc, "routes");
    json_array_append(a, json_array_get(a, 1));
    refused(doc, "routes[1]: the same route (src, dst, stream_gpu, issuer, engine) is given again");
}

static void test_read_refusals(void **state)
{
    psc_calibration_t *out = SENTINEL;
    char err[256] = "", fifo[160];

    (void)state;
    assert_int_equal(psc_calibration_read("/nonexistent/cal.json", &out, err, sizeof(err)), PSC_ERR_IO);
    assert_non_null(strstr(err, "/nonexistent/cal.json"));
    assert_int_equal(psc_calibration_read(dir, &out, err, sizeof(err)), PSC_ERR_INVALID);
    path_in_dir(fifo, sizeof(fifo), "fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(psc_calibration_read(fifo, &out, err, sizeof(err)), PSC_ERR_INVALID); /* never opened */
    unlink(fifo);
    assert_int_equal(psc_calibration_read(NULL, &out, err, sizeof(err)), PSC_ERR_INVALID);
    assert_int_equal(psc_calibration_read(good, NULL, err, sizeof(err)), PSC_ERR_INVALID);
    assert_ptr_equal(out, SENTINEL);
    /* No buffer for the reason: the status still says it. */
    assert_int_equal(psc_calibration_read("/nonexistent/cal.json", &out, NULL, 0), PSC_ERR_IO);
    assert_ptr_equal(out, SENTINEL);
}

/* ---------------------------------------------------------------- a context's calibration */

/* A calibration of this context's GPUs (their UUIDs), saved at name; its path in buf. */
static void save_here(const char *name, char *buf, size_t len, int ngpu)
{
    psc_device_info_t d0, d1;
    psc_calibration_t *c;
    char err[256];

    assert_int_equal(psc_device_info(g_ctx, 0, &d0), PSC_OK);
    assert_int_equal(psc_device_info(g_ctx, 1, &d1), PSC_OK);
    assert_true(d0.uuid[0] && d1.uuid[0] && strcmp(d0.uuid, d1.uuid) != 0);
    c = make_cal(d0.uuid, ngpu == 2 ? d1.uuid : NULL);
    path_in_dir(buf, len, name);
    assert_int_equal(psc_calibration_save(c, buf, err, sizeof(err)), PSC_OK);
    psc_calibration_free(c);
}

static void test_load(void **state)
{
    char here[160], one[160], bad[160];
    psc_calibration_t *installed;
    FILE *f;

    (void)state;
    save_here("here.json", here, sizeof(here), 2);
    save_here("one.json", one, sizeof(one), 1);
    assert_null(g_ctx->copy_cal);
    assert_int_equal(psc_copy_calibration_load(g_ctx, here), PSC_OK);
    installed = g_ctx->copy_cal;
    assert_non_null(installed);
    assert_int_equal(installed->ngpu, 2);
    assert_int_equal(installed->nroute, 3);

    /* Another machine's GPUs (the good file's UUIDs): refused, named, the installed one kept. */
    assert_int_equal(psc_copy_calibration_load(g_ctx, good), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "was measured on GPUs GPU-aaaaaaaa"));
    assert_non_null(strstr(psc_context_last_error(g_ctx), "this machine has GPU-"));
    assert_ptr_equal(g_ctx->copy_cal, installed);
    /* Fewer GPUs than this machine's. */
    assert_int_equal(psc_copy_calibration_load(g_ctx, one), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "was measured on 1 GPU, this machine has 2"));
    assert_ptr_equal(g_ctx->copy_cal, installed);
    /* A file that is not sound, and one that is not there. */
    path_in_dir(bad, sizeof(bad), "bad.json");
    f = fopen(bad, "w");
    assert_non_null(f);
    fputs("{\"p2pscope_copy_calibration\": 7}", f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(psc_copy_calibration_load(g_ctx, bad), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "p2pscope_copy_calibration: 7"));
    assert_ptr_equal(g_ctx->copy_cal, installed);
    assert_int_equal(psc_copy_calibration_load(g_ctx, "/nonexistent/cal.json"), PSC_ERR_IO);
    assert_ptr_equal(g_ctx->copy_cal, installed);

    /* Loaded again: replaced (the old one freed, which the sanitizer build checks). */
    assert_int_equal(psc_copy_calibration_load(g_ctx, here), PSC_OK);
    assert_non_null(g_ctx->copy_cal);
    /* NULL: back to the defaults. */
    assert_int_equal(psc_copy_calibration_load(g_ctx, NULL), PSC_OK);
    assert_null(g_ctx->copy_cal);
    assert_int_equal(psc_copy_calibration_load(g_ctx, NULL), PSC_OK);
    assert_int_equal(psc_copy_calibration_load(NULL, here), PSC_ERR_INVALID);
    /* One left installed: psc_context_destroy frees it. */
    assert_int_equal(psc_copy_calibration_load(g_ctx, here), PSC_OK);
    unlink(here);
    unlink(one);
    unlink(bad);
}

/* ---------------------------------------------------------------- options */

/* The first release's struct, as an older caller was compiled with it. */
typedef struct {
    size_t struct_size;
    const int *devices;
    int ndev;
    uint64_t min_size, max_size;
    unsigned factor, samples;
    int host, reserved0;
} old_cal_opts_t;

static void test_opts_defaults(void **state)
{
    psc_copy_cal_opts_t c;
    psc_copy_bench_opts_t b;

    (void)state;
    memset(&c, 0x5a, sizeof(c));
    psc_copy_cal_opts_default(&c);
    assert_int_equal(c.struct_size, sizeof(c));
    assert_null(c.devices);
    assert_int_equal(c.ndev, 0);
    assert_true(c.min_size == 1 && c.max_size == 1ull << 30);
    assert_int_equal(c.factor, 2);
    assert_int_equal(c.samples, 3);
    assert_int_equal(c.host, 1);
    assert_int_equal(c.reserved0, 0);
    memset(&b, 0x5a, sizeof(b));
    psc_copy_bench_opts_default(&b);
    assert_int_equal(b.struct_size, sizeof(b));
    assert_true(b.min_size == 1 && b.max_size == 1ull << 30);
    assert_int_equal(b.factor, 2);
    assert_int_equal(b.samples, 9);
    assert_int_equal(b.host, 1);
    assert_null(b.calibration);
    psc_copy_cal_opts_init(NULL, sizeof(c)); /* nothing to write: no crash */
}

static void test_opts_adopt(void **state)
{
    psc_copy_cal_opts_t c, full;
    psc_copy_bench_opts_t b, bfull;
    old_cal_opts_t old;
    int devs[2] = {1, 0}, twice[2] = {1, 1}, far[1] = {2};
    struct {
        psc_copy_bench_opts_t o;
        char more[16];
    } newer;

    (void)state;
    /* The same layout as the struct, so the oldest accepted size is all of it. */
    assert_int_equal(sizeof(old), sizeof(c));
    psc_copy_cal_opts_default(&c);
    c.devices = devs;
    c.ndev = 2;
    c.min_size = 4096;
    c.max_size = 1ull << 40;
    c.factor = 16;
    c.samples = 1000;
    c.host = 0;
    memset(&full, 0, sizeof(full));
    assert_int_equal(psc__copy_cal_opts_adopt(g_ctx, &c, &full), PSC_OK);
    assert_int_equal(full.struct_size, sizeof(full));
    assert_true(full.devices == devs && full.ndev == 2 && full.min_size == 4096 && full.max_size == 1ull << 40);
    assert_int_equal(full.factor, 16);
    assert_int_equal(full.samples, 1000);
    assert_int_equal(full.host, 0);

    /* Each range, refused with a line naming the field; the output untouched. */
    {
        static const struct {
            int field;
            uint64_t value;
            const char *want;
        } bad[] = {
            {0, 0, "min_size 0: accepted 1 to max_size"},
            {0, 8192, "min_size 8192: accepted 1 to max_size (4096)"},
            {1, (1ull << 40) + 1, "max_size 1099511627777: accepted min_size to 1 TiB"},
            {2, 1, "factor 1: accepted 2 to 16"},
            {2, 17, "factor 17: accepted 2 to 16"},
            {3, 0, "samples 0: accepted 1 to 1000"},
            {3, 1001, "samples 1001: accepted 1 to 1000"},
            {4, 2, "host 2: accepted 0 or 1"},
            {5, 1, "reserved0 1: accepted 0"},
            {6, 0, "devices: a GPU out of range or named twice"},
            {7, 0, "devices: a GPU out of range or named twice"},
            {8, 0, "devices NULL with ndev 2"},
            {9, 0, "devices given with ndev -1"},
        };

        for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
            psc_copy_cal_opts_t o, out;

            psc_copy_cal_opts_default(&o);
            o.min_size = 1;
            o.max_size = 4096;
            switch (bad[k].field) {
            case 0: o.min_size = bad[k].value; break;
            case 1: o.max_size = bad[k].value; o.min_size = 1; break;
            case 2: o.factor = (unsigned)bad[k].value; break;
            case 3: o.samples = (unsigned)bad[k].value; break;
            case 4: o.host = (int)bad[k].value; break;
            case 5: o.reserved0 = (int)bad[k].value; break;
            case 6: o.devices = twice; o.ndev = 2; break;
            case 7: o.devices = far; o.ndev = 1; break;
            case 8: o.devices = NULL; o.ndev = 2; break;
            default: o.devices = devs; o.ndev = -1; break;
            }
            memset(&out, 0x77, sizeof(out));
            assert_int_equal(psc__copy_cal_opts_adopt(g_ctx, &o, &out), PSC_ERR_INVALID);
            if (!strstr(psc_context_last_error(g_ctx), bad[k].want))
                fprintf(stderr, "want \"%s\": got \"%s\"\n", bad[k].want, psc_context_last_error(g_ctx));
            assert_non_null(strstr(psc_context_last_error(g_ctx), bad[k].want));
            assert_non_null(strstr(psc_context_last_error(g_ctx), "copy_cal options"));
            assert_int_equal(out.factor, 0x77777777u);
        }
    }

    /* An older caller's struct (the first release's, the same bytes) is read as far as it goes. */
    memset(&old, 0, sizeof(old));
    old.struct_size = sizeof(old);
    old.min_size = 2;
    old.max_size = 64;
    old.factor = 4;
    old.samples = 9;
    old.host = 1;
    assert_int_equal(psc__copy_cal_opts_adopt(g_ctx, (const psc_copy_cal_opts_t *)(const void *)&old, &full), PSC_OK);
    assert_int_equal(full.factor, 4);
    assert_int_equal(full.samples, 9);
    /* Too short, or from a newer header: refused, naming the default macro. */
    old.struct_size = sizeof(old) - 1;
    assert_int_equal(psc__copy_cal_opts_adopt(g_ctx, (const psc_copy_cal_opts_t *)(const void *)&old, &full),
                     PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "psc_copy_cal_opts_default"));
    assert_int_equal(psc__copy_cal_opts_adopt(g_ctx, NULL, &full), PSC_ERR_INVALID);

    psc_copy_bench_opts_default(&b);
    b.calibration = "cal.json";
    b.samples = 7;
    assert_int_equal(psc__copy_bench_opts_adopt(g_ctx, &b, &bfull), PSC_OK);
    assert_string_equal(bfull.calibration, "cal.json");
    assert_int_equal(bfull.samples, 7);
    b.calibration = "";
    assert_int_equal(psc__copy_bench_opts_adopt(g_ctx, &b, &bfull), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "copy_bench options: calibration"));
    b.calibration = NULL;
    b.factor = 99;
    assert_int_equal(psc__copy_bench_opts_adopt(g_ctx, &b, &bfull), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "copy_bench options: factor 99"));
    memset(&newer, 0, sizeof(newer));
    psc_copy_bench_opts_init(&newer.o, sizeof(newer));
    assert_int_equal(newer.o.struct_size, sizeof(newer)); /* kept: refused when used */
    assert_int_equal(newer.o.samples, 9);
    assert_int_equal(psc__copy_bench_opts_adopt(g_ctx, &newer.o, &bfull), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "psc_copy_bench_opts_default"));
}

int main(void)
{
    const struct CMUnitTest file_tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_save_refusals),
        cmocka_unit_test(test_hostile_fields),
        cmocka_unit_test(test_hostile_shapes),
        cmocka_unit_test(test_read_refusals),
        cmocka_unit_test(test_opts_defaults),
    };
    const struct CMUnitTest ctx_tests[] = {
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_opts_adopt),
    };
    int failed;

    psc_test_fake_driver("gpus", "2");
    setenv("FAKE_CUDA_UUID", "7", 1);
    failed = cmocka_run_group_tests(file_tests, setup, NULL);
    failed += cmocka_run_group_tests(ctx_tests, psc_test_open_ctx, psc_test_close_ctx);
    return failed + (teardown(NULL) != 0);
}
