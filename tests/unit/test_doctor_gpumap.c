/*
 * CPU mappings of GPU memory in the facts, the doctor and topo: gathering
 * them on the fake driver (with and without the fake libgdrapi), their JSON
 * round trip, an older recording without them loading as "not known", the
 * gpumap_none finding and its absence, and topo's line per GPU.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "fake_context.h"
#include "fake_gdr_env.h"
#include "report/render_topo.h"
#include "topo/gpumap_facts.h"

#define OLD_RECORDING TEST_DATA "/h200x2-nv18.json"
#define MAXF 256

static psc_finding_t g_found[MAXF];

static void assert_has(const char *text, const char *part)
{
    if (!strstr(text, part))
        fail_msg("\"%s\" lacks \"%s\"", text, part);
}

static size_t run(const psc_facts_t *f)
{
    size_t n = psc_doctor(f, g_found, MAXF);

    assert_true(n <= MAXF);
    return n;
}

/* The findings of one rule, in order; *first the first of them (NULL none). */
static int count_rule(size_t n, const char *rule, const psc_finding_t **first)
{
    int c = 0;

    *first = NULL;
    for (size_t k = 0; k < n; k++)
        if (strcmp(g_found[k].rule, rule) == 0) {
            if (!c)
                *first = &g_found[k];
            c++;
        }
    return c;
}

/* Nothing usable, as on the lent H100/H200 machines: no libgdrapi, a CUDA 13.0 driver, no coherent platform. */
static int setup(void **state)
{
    (void)state;
    psc_test_gdr_none();
    g_ctx = NULL;
    return psc_test_open_ctx(state);
}

static int teardown(void **state)
{
    psc_test_close_ctx(state);
    g_ctx = NULL;
    return 0;
}

static psc_facts_t *live_facts(void)
{
    psc_facts_t *f = psc_facts_new();

    assert_non_null(f);
    assert_int_equal(psc_facts_gather(g_ctx, f), PSC_OK);
    assert_int_equal(f->ngpu, 2);
    return f;
}

/* topo's text for f, malloc'd. */
static char *topo_text(const psc_facts_t *f)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);

    assert_non_null(out);
    psc_render_topo(out, f);
    fclose(out);
    assert_non_null(text);
    return text;
}

static void test_gather_leaves_unknown(void **state)
{
    psc_facts_t *f = live_facts();
    const psc_finding_t *x;
    size_t n;

    (void)state;
    for (int i = 0; i < f->ngpu; i++)
        assert_int_equal(f->gpumap[i].known, 0);
    n = run(f);
    assert_int_equal(count_rule(n, "gpumap_none", &x), 0);
    assert_int_equal(count_rule(n, "not_checked_gpumap", &x), 1);
    assert_int_equal(x->severity, PSC_SEV_INFO);
    assert_has(x->what, "any GPU");
    /* A probe, then a gather again: nothing stale survives. */
    assert_int_equal(psc_facts_probe_gpumap(g_ctx, f), PSC_OK);
    assert_int_equal(f->gpumap[1].known, 1);
    assert_int_equal(psc_facts_gather(g_ctx, f), PSC_OK);
    assert_int_equal(f->gpumap[1].known, 0);
    psc_facts_free(f);
}

static void test_probe_nothing_usable(void **state)
{
    psc_facts_t *f = live_facts();
    const psc_finding_t *x;
    char *text;
    size_t n;

    (void)state;
    assert_int_equal(psc_facts_probe_gpumap(g_ctx, f), PSC_OK);
    for (int i = 0; i < f->ngpu; i++) {
        char gpu[64];

        assert_int_equal(f->gpumap[i].known, 1);
        for (int b = 0; b < PSC_GPUMAP_BACKENDS; b++)
            assert_int_equal(f->gpumap[i].usable[b], 0);
        assert_has(f->gpumap[i].why[PSC_GPUMAP_GDRCOPY], "/nonexistent/libgdrapi.so.2");
        snprintf(gpu, sizeof(gpu), "GPU %d is not on a coherent platform", i);
        assert_has(f->gpumap[i].why[PSC_GPUMAP_COHERENT], gpu);
        assert_int_equal(f->gpumap[i].gdr_lib_version, 0);
    }
    n = run(f);
    assert_int_equal(count_rule(n, "not_checked_gpumap", &x), 0);
    assert_int_equal(count_rule(n, "gpumap_none", &x), 2); /* one per GPU, gpu0 first */
    assert_int_equal(x->severity, PSC_SEV_INFO);
    assert_has(x->what, "gpu0");
    assert_has(x->evidence, "gdrcopy: no libgdrapi");
    assert_has(x->evidence, "dma-buf: the driver (CUDA 13.0) is too old");
    assert_has(x->evidence, "coherent: GPU 0 is not on a coherent platform");
    assert_has(x->fix, "gdrcopy 2.4");
    assert_has(x->fix, "CUDA 13.3");
    assert_null(strstr(x->fix, "Resizable BAR")); /* no BAR1 known (no NVML): no claim about it */
    assert_has(x[1].what, "gpu1");
    text = topo_text(f);
    assert_has(text, "gpu0: CPU mapping: none (gdrcopy: no libgdrapi; dma-buf: the driver (CUDA 13.0) is too old "
                     "to map a dma-buf of GPU memory for the CPU; coherent: GPU 0 is not on a coherent platform)\n");
    assert_has(text, "gpu1: CPU mapping: none (");
    free(text);
    psc_facts_free(f);
}

static void test_probe_gdrcopy_usable(void **state)
{
    psc_facts_t *f = live_facts();
    const psc_finding_t *x;
    char *text;
    size_t n;

    (void)state;
    setenv("P2PSCOPE_LIBGDRAPI", FAKE_LIBGDRAPI, 1);
    assert_int_equal(psc_facts_probe_gpumap(g_ctx, f), PSC_OK);
    assert_int_equal(f->gpumap[0].usable[PSC_GPUMAP_GDRCOPY], 1);
    assert_string_equal(f->gpumap[0].why[PSC_GPUMAP_GDRCOPY], "");
    assert_int_equal(f->gpumap[0].gdr_lib_version, 2 << 16 | 6);
    assert_int_equal(f->gpumap[0].gdr_drv_version, 2 << 16 | 5);
    assert_int_equal(f->gpumap[0].usable[PSC_GPUMAP_DMABUF], 0);
    n = run(f);
    assert_int_equal(count_rule(n, "gpumap_none", &x), 0);
    assert_int_equal(count_rule(n, "not_checked_gpumap", &x), 0);
    text = topo_text(f);
    assert_has(text, "gpu0: CPU mapping: gdrcopy\n");
    assert_has(text, "gpu1: CPU mapping: gdrcopy\n");
    free(text);
    /* Every backend at once: all named, in the order psc_gpumap_map tries them. */
    f->gpumap[1].usable[PSC_GPUMAP_DMABUF] = f->gpumap[1].usable[PSC_GPUMAP_COHERENT] = 1;
    text = topo_text(f);
    assert_has(text, "gpu1: CPU mapping: gdrcopy, dma-buf, coherent\n");
    free(text);
    psc_facts_free(f);
}

static void test_examine_probes(void **state)
{
    psc_facts_t *f = psc_facts_new();

    (void)state;
    assert_non_null(f);
    assert_int_equal(psc_facts_examine(g_ctx, f), PSC_OK);
    assert_int_equal(f->gpumap[0].known, 1);
    assert_int_equal(f->gpumap[1].known, 1);
    assert_int_equal(f->gpumap[1].usable[PSC_GPUMAP_GDRCOPY], 0);
    psc_facts_free(f);
}

static void test_probe_args(void **state)
{
    psc_facts_t *f = live_facts();

    (void)state;
    assert_int_equal(psc_facts_probe_gpumap(NULL, f), PSC_ERR_INVALID);
    assert_int_equal(psc_facts_probe_gpumap(g_ctx, NULL), PSC_ERR_INVALID);
    assert_has(psc_context_last_error(g_ctx), "no facts given");
    f->ngpu = 1; /* not this machine's count */
    assert_int_equal(psc_facts_probe_gpumap(g_ctx, f), PSC_ERR_INVALID);
    assert_has(psc_context_last_error(g_ctx), "1 GPUs");
    assert_int_equal(f->gpumap[0].known, 0);
    f->ngpu = 2;
    snprintf(f->source, sizeof(f->source), "recording.json"); /* replayed facts: another machine's */
    assert_int_equal(psc_facts_probe_gpumap(g_ctx, f), PSC_ERR_INVALID);
    assert_has(psc_context_last_error(g_ctx), "recording.json");
    assert_int_equal(f->gpumap[0].known, 0);
    psc_facts_free(f);
}

/* f as a recording (JSON text to a file), loaded back into a new facts object. */
static char g_err[512];

/* NULL when refused, g_err saying why. */
static psc_facts_t *round_trip(const psc_facts_t *f, const char *text)
{
    char path[] = "/tmp/test_doctor_gpumap_XXXXXX.json";
    char *own = text ? NULL : psc_facts_json(f, 1);
    int fd = mkstemps(path, 5);
    psc_facts_t *g = psc_facts_new();
    psc_status_t st;

    assert_true(fd >= 0);
    assert_non_null(g);
    text = text ? text : own;
    assert_non_null(text);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    st = psc_facts_load(path, g, g_err, sizeof(g_err));
    unlink(path);
    free(own);
    if (st != PSC_OK) {
        psc_facts_free(g);
        return NULL;
    }
    return g;
}

static void test_json_round_trip(void **state)
{
    psc_facts_t *f = live_facts(), *g;
    json_t *doc, *m;
    char *text;

    (void)state;
    assert_int_equal(psc_facts_probe_gpumap(g_ctx, f), PSC_OK);
    f->gpumap[1].usable[PSC_GPUMAP_GDRCOPY] = 1; /* one usable, the others not: both shapes */
    f->gpumap[1].why[PSC_GPUMAP_GDRCOPY][0] = '\0';
    f->gpumap[1].gdr_lib_version = 2 << 16 | 6;
    f->gpumap[1].gdr_drv_version = 2 << 16 | 5;
    f->gpumap[1].gdr_dmabuf = 1;
    f->gpumap[1].bar1_total = 128ull << 30;
    f->gpumap[1].bar1_free = 100ull << 30;
    text = psc_facts_json(f, 0);
    assert_non_null(text);
    doc = json_loads(text, 0, NULL);
    assert_non_null(doc);
    m = json_object_get(json_array_get(json_object_get(doc, "gpus"), 0), "cpu_mapping");
    assert_true(json_is_object(m));
    assert_has(json_string_value(json_object_get(m, "summary")), "none (gdrcopy: no libgdrapi");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "dma-buf"), "usable")), 0);
    assert_has(json_string_value(json_object_get(json_object_get(m, "dma-buf"), "why")), "too old");
    m = json_object_get(json_array_get(json_object_get(doc, "gpus"), 1), "cpu_mapping");
    assert_string_equal(json_string_value(json_object_get(m, "summary")), "gdrcopy");
    assert_true(json_is_null(json_object_get(json_object_get(m, "gdrcopy"), "why")));
    json_decref(doc);
    free(text);
    g = round_trip(f, NULL);
    assert_non_null(g);
    assert_int_equal(g->ngpu, 2);
    for (int i = 0; i < 2; i++) {
        const psc_gpumap_facts_t *a = &f->gpumap[i], *b = &g->gpumap[i];

        assert_int_equal(b->known, 1);
        for (int k = 0; k < PSC_GPUMAP_BACKENDS; k++) {
            assert_int_equal(b->usable[k], a->usable[k]);
            assert_string_equal(b->why[k], a->why[k]);
        }
        assert_int_equal(b->gdr_lib_version, a->gdr_lib_version);
        assert_int_equal(b->gdr_drv_version, a->gdr_drv_version);
        assert_int_equal(b->gdr_dmabuf, a->gdr_dmabuf);
        assert_true(b->bar1_total == a->bar1_total && b->bar1_free == a->bar1_free);
    }
    psc_facts_free(g);
    psc_facts_free(f);
}

static void test_old_recording_not_known(void **state)
{
    psc_facts_t *f = psc_facts_new();
    const psc_finding_t *x;
    char err[512], *text;
    size_t n;

    (void)state;
    assert_non_null(f);
    assert_int_equal(psc_facts_load(OLD_RECORDING, f, err, sizeof(err)), PSC_OK);
    assert_true(f->ngpu > 0);
    for (int i = 0; i < f->ngpu; i++)
        assert_int_equal(f->gpumap[i].known, 0);
    n = run(f);
    assert_int_equal(count_rule(n, "gpumap_none", &x), 0);
    assert_int_equal(count_rule(n, "not_checked_gpumap", &x), 1);
    assert_has(x->evidence, OLD_RECORDING);
    text = topo_text(f);
    assert_has(text, "gpu0: CPU mapping: not recorded\n");
    free(text);
    text = psc_facts_json(f, 0); /* written back: null, still "not known" */
    assert_has(text, "\"cpu_mapping\": null");
    free(text);
    psc_facts_free(f);
}

/* A recording's cpu_mapping with one thing wrong: refused, the field named. */
static void refused(const char *cpu_mapping, const char *in_err)
{
    json_error_t jerr;
    json_t *doc = json_load_file(OLD_RECORDING, 0, &jerr), *v = json_loads(cpu_mapping, JSON_DECODE_ANY, &jerr);
    psc_facts_t *g;
    char *text;

    assert_non_null(doc);
    assert_non_null(v);
    json_object_set_new(json_array_get(json_object_get(doc, "gpus"), 0), "cpu_mapping", v);
    text = json_dumps(doc, 0);
    g = round_trip(NULL, text);
    if (g || !strstr(g_err, in_err))
        fail_msg("%s: got \"%s\", wanted \"%s\"", cpu_mapping, g ? "loaded" : g_err, in_err);
    free(text);
    json_decref(doc);
}

#define OK_BACKEND "{\"usable\": 0, \"why\": \"x\"}"

static void test_json_refuses_bad_cpu_mapping(void **state)
{
    (void)state;
    refused("5", "gpus[0].cpu_mapping: 5 is an integer");
    refused("{\"gdrcopy\": " OK_BACKEND ", \"dma-buf\": " OK_BACKEND "}", "gpus[0].cpu_mapping.coherent: missing");
    refused("{\"gdrcopy\": {\"usable\": 2}, \"dma-buf\": " OK_BACKEND ", \"coherent\": " OK_BACKEND "}",
            "gpus[0].cpu_mapping.gdrcopy.usable: 2 is out of range");
    refused("{\"gdrcopy\": {\"why\": 7}, \"dma-buf\": " OK_BACKEND ", \"coherent\": " OK_BACKEND "}",
            "gpus[0].cpu_mapping.gdrcopy.why");
    refused("{\"summary\": [], \"gdrcopy\": " OK_BACKEND ", \"dma-buf\": " OK_BACKEND ", \"coherent\": " OK_BACKEND
            "}", "gpus[0].cpu_mapping.summary");
    refused("{\"gdrcopy\": " OK_BACKEND ", \"dma-buf\": " OK_BACKEND ", \"coherent\": " OK_BACKEND
            ", \"bar1_total\": -1}", "gpus[0].cpu_mapping.bar1_total");
}

/* The rule on hand-made facts: the fix asks for Resizable BAR only where BAR1 is smaller than the memory. */
static void test_rule_bar1_and_partial(void **state)
{
    psc_facts_t *f = psc_facts_new();
    const psc_finding_t *x;
    size_t n;

    (void)state;
    assert_non_null(f);
    snprintf(f->source, sizeof(f->source), "test");
    f->ngpu = 3;
    for (int i = 0; i < 3; i++) {
        f->gpu[i].memory_bytes = 24ull << 30;
        f->gpumap[i].known = i != 2; /* gpu2 not probed */
        for (int b = 0; b < PSC_GPUMAP_BACKENDS; b++)
            snprintf(f->gpumap[i].why[b], sizeof(f->gpumap[i].why[b]), "reason %d of gpu%d: details; the fix", b, i);
    }
    f->gpumap[0].bar1_total = 256ull << 20;  /* the probe's BAR1: small */
    f->gpu[1].bar1_bytes = 32ull << 30;      /* no probe BAR1: NVML's in the GPU facts, large */
    n = run(f);
    assert_int_equal(count_rule(n, "gpumap_none", &x), 2);
    assert_has(x->what, "gpu0");
    assert_has(x->evidence, "gdrcopy: reason 0 of gpu0: details;");
    assert_null(strstr(x->evidence, "the fix"));
    assert_has(x->evidence, "BAR1 256 MiB, memory 24576 MiB");
    assert_has(x->fix, "Resizable BAR");
    assert_has(x[1].what, "gpu1");
    assert_has(x[1].evidence, "BAR1 32768 MiB");
    assert_null(strstr(x[1].fix, "Resizable BAR"));
    assert_int_equal(count_rule(n, "not_checked_gpumap", &x), 1);
    assert_has(x->what, "on gpu2 (");
    f->gpumap[1].usable[PSC_GPUMAP_COHERENT] = 1; /* any one backend: quiet for that GPU */
    n = run(f);
    assert_int_equal(count_rule(n, "gpumap_none", &x), 1);
    assert_has(x->what, "gpu0");
    psc_facts_free(f);
}

static void test_clause(void **state)
{
    char out[64], tiny[8];

    (void)state;
    psc__gpumap_clause("gdr_open failed: no /dev/gdrdrv (the module); install it", 0, out, sizeof(out));
    assert_string_equal(out, "gdr_open failed: no /dev/gdrdrv");
    psc__gpumap_clause("no libgdrapi: x.so could not be loaded; install", 0, out, sizeof(out));
    assert_string_equal(out, "no libgdrapi");
    psc__gpumap_clause("no libgdrapi: x.so could not be loaded; install", 1, out, sizeof(out));
    assert_string_equal(out, "no libgdrapi: x.so could not be loaded");
    psc__gpumap_clause("a reason far longer than the room", 0, tiny, sizeof(tiny));
    assert_string_equal(tiny, "a re..."); /* 7 bytes and the NUL */
    psc__gpumap_clause("", 0, out, sizeof(out));
    assert_string_equal(out, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_gather_leaves_unknown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_nothing_usable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_gdrcopy_usable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_examine_probes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_round_trip, setup, teardown),
        cmocka_unit_test(test_old_recording_not_known),
        cmocka_unit_test(test_json_refuses_bad_cpu_mapping),
        cmocka_unit_test(test_rule_bar1_and_partial),
        cmocka_unit_test(test_clause),
    };

    psc_test_fake_driver("contexts", "2");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
