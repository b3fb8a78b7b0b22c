/*
 * The JSON recording loader and writer: the good recording loads and
 * round-trips; hostile variants of it (made field by field in memory) are
 * refused with PSC_ERR_INVALID and a message naming the field by its JSON
 * path; text that is not UTF-8 still gives JSON with every key.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "json_path.h"
#include <jansson.h>

#include "json_keys.h"

#include "p2pscope/bench.h"
#include "topo/facts_json.h"
#include "topo/id_scrub.h"
#include "util/json.h"

#define GOOD TEST_DATA "/h200x2-nv18.json"

static char dir[] = "/tmp/psc-facts-json-XXXXXX";

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return rmdir(dir);
}

static psc_status_t load_doc(json_t *doc, char *err, size_t errlen, psc_facts_t *f)
{
    char path[128];
    psc_status_t st;

    snprintf(path, sizeof(path), "%s/rec.json", dir);
    assert_int_equal(json_dump_file(doc, path, JSON_INDENT(1)), 0);
    st = psc_facts_load(path, f, err, errlen);
    unlink(path);
    return st;
}

/* The document is refused, f stays as it was, and the message names want. */
static void refused(json_t *doc, const char *want)
{
    psc_facts_t *f = psc_facts_new();
    char err[1024] = "";
    psc_status_t st;

    f->ngpu = 3; /* a caller's facts, which a refused recording must not touch */
    st = load_doc(doc, err, sizeof(err), f);
    if (st != PSC_ERR_INVALID || !strstr(err, want))
        fprintf(stderr, "want \"%s\": got %d \"%s\"\n", want, st, err);
    assert_int_equal(st, PSC_ERR_INVALID);
    assert_non_null(strstr(err, want));
    assert_null(strchr(err, '\n'));
    assert_int_equal(f->ngpu, 3);
    assert_null(f->hwloc_xml);
    json_decref(doc);
    psc_facts_free(f);
}

static const struct {
    const char *path, *value, *want;
} cases[] = {
    {"gpus[1].nvlinks[3].remote_gpu", "1000000",
     "gpus[1].nvlinks[3].remote_gpu: 1000000 is out of range: accepted an integer 0..1 or null"},
    {"gpus[1].nvlinks[3].remote_gpu", "5", "gpus[1].nvlinks[3].remote_gpu: 5 is out of range"},
    {"gpus[0].nvlinks[0].remote_gpu", "-1", "gpus[0].nvlinks[0].remote_gpu: -1 is out of range"},
    {"gpus[0].pcie_gen", "\"5\"", "gpus[0].pcie_gen: \"5\" is a string: accepted an integer 1..7 or null"},
    {"gpus[0].pcie_gen", "4294967301", "gpus[0].pcie_gen: 4294967301 is out of range"},
    {"gpus[0].pcie_width", "0", "gpus[0].pcie_width: 0 is out of range"},
    /* Shown escaped to ASCII, so the cut at 40 characters never splits a character. */
    {"gpus[0].pcie_gen", "\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"",
     "gpus[0].pcie_gen: \"\\u00E9\\u00E9\\u00E9\\u00E9\\u00E9... is a string"},
    {"gpus[0].temperature_c", "39.5", "gpus[0].temperature_c: 39.5 is a real number"},
    {"gpus[0].mig", "true", "gpus[0].mig: true is a boolean"},
    {"gpus[0].ecc", "[1]", "gpus[0].ecc: [1] is an array"},
    {"gpus[0].memory_bytes", "-5", "gpus[0].memory_bytes: -5 is out of range"},
    {"gpus[0].clock_event_reasons", "-2", "gpus[0].clock_event_reasons: -2 is out of range"},
    {"gpus[0].sm_clock_mhz", "{}", "gpus[0].sm_clock_mhz: {} is an object"},
    {"gpus[0].nvlink_count", "17", "gpus[0].nvlink_count: 17 but 18 links are listed"},
    {"gpus[0].nvlink_count", "19", "gpus[0].nvlink_count: 19 is out of range"},
    {"gpus[0].nvlink_count", "null", "gpus[0].nvlink_count: null but 18 links are listed"},
    {"gpus[0].nvlinks", "{}", "gpus[0].nvlinks: {} is an object"},
    {"gpus[0].nvlinks[2]", "\"link\"", "gpus[0].nvlinks[2]: \"link\" is a string: accepted an object"},
    {"gpus[0].nvlinks[0].remote", "\"gpuu\"", "gpus[0].nvlinks[0].remote: \"gpuu\" is a string: accepted one of"},
    {"gpus[0].nvlinks[0].remote", "1", "gpus[0].nvlinks[0].remote: 1 is an integer"},
    {"gpus[0].nvlinks[0].speed_gbs", "\"fast\"", "gpus[0].nvlinks[0].speed_gbs: \"fast\" is a string"},
    {"gpus[0].nvlinks[0].speed_gbs", "-3.5", "gpus[0].nvlinks[0].speed_gbs: -3.5 is out of range"},
    {"gpus[0].nvlinks[0].active", "2", "gpus[0].nvlinks[0].active: 2 is out of range"},
    {"gpus[0].bridges[0].acs", "3", "gpus[0].bridges[0].acs: 3 is an integer"},
    {"gpus[0].bridges[0].acs", "\"open\"", "gpus[0].bridges[0].acs: \"open\" is a string"},
    {"gpus[0].bridges[0].acs_ctrl", "65536", "gpus[0].bridges[0].acs_ctrl: 65536 is out of range"},
    {"gpus[0].bridges[0].ids", "\"10b5:97810000000000\"", "gpus[0].bridges[0].ids: longer than 15 bytes"},
    {"gpus[0].bridges", "7", "gpus[0].bridges: 7 is an integer"},
    {"gpus[0].uuid", "\"GPU-5c6e8ae8-9cd6-8d25-d0ef-be721e5f66d9-0000000000\"", "gpus[0].uuid: longer than 47 bytes"},
    {"gpus[0].pci_bus_id", NULL, "gpus[0].pci_bus_id: missing"},
    {"gpus[0].pci_bus_id", "null", "gpus[0].pci_bus_id: missing"},
    {"gpus[0].pci_bus_id", "\"zz\"", "gpus[0].pci_bus_id: \"zz\" is not a PCI bus id"},
    {"gpus[0].pci_bus_id", "\"\\u001b[2J\"", "gpus[0].pci_bus_id: \"\\u001B[2J\" is not a PCI bus id"}, /* escaped */
    {"gpus[1].pci_bus_id", "\"0000:00:06.0\"", "gpus[1].pci_bus_id: \"0000:00:06.0\" is also gpus[0]'s"},
    {"gpus[1]", "\"gpu\"", "gpus[1]: \"gpu\" is a string: accepted an object"},
    {"gpus", NULL, "gpus: missing"},
    {"gpus", "{}", "gpus: {} is an object: accepted an array"},
    {"format", NULL, "format: missing: not a p2pscope recording"},
    {"format", "\"p2pscope-fact\"", "format: \"p2pscope-fact\" is a string: not a p2pscope recording"},
    {"version", NULL, "version: missing"},
    {"version", "\"1\"", "version: \"1\" is a string: accepted 1"},
    {"version", "2", "version: 2 is an integer: accepted 1"},
    {"has_driver", "1", "has_driver: 1 is an integer: accepted true or false"},
    {"source", "7", "source: 7 is an integer"},
    {"host", "[]", "host: [] is an array: accepted an object or null"},
    {"host.numa_nodes", "0", "host.numa_nodes: 0 is out of range"},
    {"host.driver_release", "580", "host.driver_release: 580 is an integer: accepted a string of at most 31 bytes"},
    {"host.iommu", "2", "host.iommu: 2 is out of range: accepted an integer 0..1 or null"},
    {"pairs", "{}", "pairs: {} is an object"},
    {"pairs[0]", "1", "pairs[0]: 1 is an integer: accepted an object"},
    {"pairs[0].src", "7", "pairs[0].src: 7 is an integer: accepted an integer 0..1"},
    {"pairs[0].src", NULL, "pairs[0].src: missing"},
    {"pairs[0].dst", "0", "pairs[0].dst: 0 is also src"},
    {"pairs[1].can_access", "\"yes\"", "pairs[1].can_access: \"yes\" is a string"},
    {"pairs[1].nvlinks", "1000", "pairs[1].nvlinks: 1000 is out of range"},
    {"pairs[1].path", "18", "pairs[1].path: 18 is an integer"},
    {"hwloc_xml", "5", "hwloc_xml: 5 is an integer"},
    {"hwloc_xml", "\"<html>not a topology</html>\"", "hwloc_xml: "},
};

static void test_field_by_field(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
        refused(psc_test_json_mutated(GOOD, cases[k].path, cases[k].value), cases[k].want);
}

static char *repeat(char c, size_t n)
{
    char *s = malloc(n + 3);

    assert_non_null(s);
    s[0] = '"';
    memset(s + 1, c, n);
    s[n + 1] = '"';
    s[n + 2] = '\0';
    return s;
}

static void test_too_long_strings(void **state)
{
    char *name = repeat('x', 256), *cmdline = repeat('y', 512), *ok = repeat('z', 255);
    psc_facts_t *f = psc_facts_new();
    char err[512];

    (void)state;
    refused(psc_test_json_mutated(GOOD, "gpus[0].name", name), "gpus[0].name: longer than 255 bytes");
    refused(psc_test_json_mutated(GOOD, "host.cmdline", cmdline), "host.cmdline: longer than 511 bytes");
    {
        json_t *doc = psc_test_json_mutated(GOOD, "gpus[0].name", ok);

        assert_int_equal(load_doc(doc, err, sizeof(err), f), PSC_OK); /* 255 bytes fit */
        assert_int_equal(strlen(f->gpu[0].name), 255);
        json_decref(doc);
    }
    free(name);
    free(cmdline);
    free(ok);
    psc_facts_free(f);
}

static void test_too_many(void **state)
{
    json_t *doc = json_load_file(GOOD, 0, NULL), *gpus, *bridges, *links;

    (void)state;
    /* 65 GPUs, each with its own bus id. */
    gpus = json_object_get(doc, "gpus");
    for (int i = 2; i < 65; i++) {
        json_t *g = json_deep_copy(json_array_get(gpus, 0));
        char bus[32];

        snprintf(bus, sizeof(bus), "0000:%02x:00.0", 0x10 + i);
        json_object_set_new(g, "pci_bus_id", json_string(bus));
        json_array_append_new(gpus, g);
    }
    json_object_set_new(doc, "hwloc_xml", json_null());
    refused(doc, "gpus: 65 GPUs: accepted at most 64");

    doc = json_load_file(GOOD, 0, NULL);
    bridges = json_object_get(json_array_get(json_object_get(doc, "gpus"), 1), "bridges");
    while (json_array_size(bridges) < 17)
        json_array_append_new(bridges, json_deep_copy(json_array_get(bridges, 0)));
    refused(doc, "gpus[1].bridges: 17 bridges: accepted at most 16");

    doc = json_load_file(GOOD, 0, NULL);
    links = json_object_get(json_array_get(json_object_get(doc, "gpus"), 1), "nvlinks");
    json_array_append_new(links, json_deep_copy(json_array_get(links, 0)));
    refused(doc, "gpus[1].nvlinks: 19 links: accepted at most 18");
}

static void test_huge_integer(void **state)
{
    char path[128], err[512];
    psc_facts_t *f = psc_facts_new();
    FILE *fp;

    (void)state;
    snprintf(path, sizeof(path), "%s/huge.json", dir);
    fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("{\"format\": \"p2pscope-facts\", \"version\": 1, \"gpus\": [{\"pci_bus_id\": \"0000:01:00.0\", "
          "\"sm_clock_mhz\": 99999999999999999999999}]}\n", fp);
    fclose(fp);
    assert_int_equal(psc_facts_load(path, f, err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "too big integer"));
    unlink(path);
    psc_facts_free(f);
}

static void test_good_round_trip(void **state)
{
    psc_facts_t *a = psc_facts_new(), *b = psc_facts_new();
    char path[128], err[512];

    (void)state;
    assert_int_equal(psc_facts_load(GOOD, a, err, sizeof(err)), PSC_OK);
    assert_int_equal(a->ngpu, 2);
    assert_int_equal(a->gpu[1].nvlink_count, 18);
    assert_int_equal(a->pair[0][1].path, PSC_PATH_NVLINK);
    snprintf(path, sizeof(path), "%s/again.json", dir);
    a->keep_identifiers = 1; /* all of it back (below: what a recording to share leaves out) */
    assert_int_equal(psc_facts_save(a, path, err, sizeof(err)), PSC_OK);
    assert_int_equal(psc_facts_load(path, b, err, sizeof(err)), PSC_OK);
    unlink(path);
    assert_int_equal(b->ngpu, a->ngpu);
    assert_int_equal(b->has_driver, a->has_driver);
    assert_memory_equal(&b->host, &a->host, sizeof(a->host));
    assert_memory_equal(b->gpu, a->gpu, sizeof(a->gpu[0]) * (size_t)a->ngpu);
    for (int i = 0; i < a->ngpu; i++)
        assert_memory_equal(b->pair[i], a->pair[i], sizeof(a->pair[i][0]) * (size_t)a->ngpu);
    assert_string_equal(b->hwloc_xml, a->hwloc_xml);
    psc_facts_free(a);
    psc_facts_free(b);
}

/* Names cut inside a character or holding bytes that are not UTF-8 keep every key, and load back. */
/*
 * A recording is safe to share unless asked otherwise: no GPU UUID, and none of the hwloc XML's identifiers
 * (host name, MAC addresses, container id); everything else kept, and the XML still loads.
 */
static void test_identifiers_left_out(void **state)
{
    psc_facts_t *a = psc_facts_new(), *b = psc_facts_new();
    char path[128], err[512];

    (void)state;
    assert_int_equal(psc_facts_load(GOOD, a, err, sizeof(err)), PSC_OK);
    assert_true(a->gpu[0].uuid[0] && strstr(a->hwloc_xml, "name=\"HostName\"") &&
                strstr(a->hwloc_xml, "name=\"Address\""));
    assert_int_equal(a->keep_identifiers, 0);
    snprintf(path, sizeof(path), "%s/shared.json", dir);
    assert_int_equal(psc_facts_save(a, path, err, sizeof(err)), PSC_OK);
    if (psc_facts_load(path, b, err, sizeof(err)) != PSC_OK)
        fail_msg("the scrubbed recording does not load: %s", err);
    unlink(path);
    for (int i = 0; i < b->ngpu; i++)
        assert_string_equal(b->gpu[i].uuid, "");
    assert_null(strstr(b->hwloc_xml, "HostName"));
    assert_null(strstr(b->hwloc_xml, "name=\"Address\""));
    assert_null(strstr(b->hwloc_xml, "LinuxCgroup"));
    assert_non_null(strstr(b->hwloc_xml, "name=\"OSName\""));
    assert_string_equal(b->gpu[1].pci_bus_id, a->gpu[1].pci_bus_id);
    assert_int_equal(b->gpu[1].nvlink_count, a->gpu[1].nvlink_count);
    assert_memory_equal(b->pair[0], a->pair[0], sizeof(a->pair[0][0]) * (size_t)a->ngpu);
    psc_facts_free(a);
    psc_facts_free(b);
}

/* The scrubber on hand-made XML: only identifying info elements go, whole lines, odd values kept intact. */
static void test_xml_scrub(void **state)
{
    const char *xml = "<topology>\n  <object type=\"Machine\">\n    <info name=\"HostName\" value=\"node7\"/>\n"
                      "    <info name=\"OSName\" value=\"Linux\"/>\n    <info name=\"DMIProductSerial\" value=\"a/>b\"/>\n"
                      "    <info name=\"Port1GID0\" value=\"fe80::1\"/><info name=\"PortType\" value=\"x\"/>\n"
                      "    <info name=\"Addressed\" value=\"k\"/>\n  </object>\n</topology>\n";
    char *s = psc__hwloc_xml_scrub(xml);

    (void)state;
    assert_non_null(s);
    assert_string_equal(s, "<topology>\n  <object type=\"Machine\">\n    <info name=\"OSName\" value=\"Linux\"/>\n"
                           "<info name=\"PortType\" value=\"x\"/>\n    <info name=\"Addressed\" value=\"k\"/>\n"
                           "  </object>\n</topology>\n");
    free(s);
}

static void test_text_not_utf8(void **state)
{
    psc_facts_t *a = psc_facts_new(), *b = psc_facts_new();
    json_t *clean, *dirty;
    char *text, path[128], err[512];
    size_t keys;

    (void)state;
    assert_int_equal(psc_facts_load(GOOD, a, err, sizeof(err)), PSC_OK);
    text = psc_facts_json(a, 0);
    clean = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(clean);
    keys = count_keys(clean);

    snprintf(a->gpu[0].name, sizeof(a->gpu[0].name), "NVIDIA H200 \xe2\x82"); /* "€" cut after 2 of 3 bytes */
    snprintf(a->gpu[1].name, sizeof(a->gpu[1].name), "\xff\xfe H200 \xc0\xaf");  /* not UTF-8 at all */
    snprintf(a->host.cmdline, sizeof(a->host.cmdline), "pci=\x80\x81 iommu=pt \xed\xa0\x80");
    memset(a->host.machine, 0xe9, sizeof(a->host.machine) - 1); /* Latin-1 "é" x127: U+FFFD would not fit */
    a->host.machine[sizeof(a->host.machine) - 1] = '\0';
    snprintf(a->gpu[0].bridges[0].ids, sizeof(a->gpu[0].bridges[0].ids), "10b5:\xf0\x9f\x98");
    text = psc_facts_json(a, 0);
    assert_non_null(text);
    dirty = json_loads(text, 0, NULL); /* valid UTF-8, or jansson would refuse it */
    free(text);
    assert_non_null(dirty);
    assert_int_equal(count_keys(dirty), keys);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(dirty, "gpus"), 0), "name")),
                        "NVIDIA H200 ");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(dirty, "gpus"), 1), "name")),
                        "\xef\xbf\xbd\xef\xbf\xbd H200 \xef\xbf\xbd\xef\xbf\xbd");
    assert_non_null(strstr(json_string_value(json_object_get(json_object_get(dirty, "host"), "cmdline")),
                           "pci=\xef\xbf\xbd\xef\xbf\xbd iommu=pt"));
    json_decref(clean);
    json_decref(dirty);

    /* What was written loads back, within each field's size. */
    snprintf(path, sizeof(path), "%s/dirty.json", dir);
    assert_int_equal(psc_facts_save(a, path, err, sizeof(err)), PSC_OK);
    if (psc_facts_load(path, b, err, sizeof(err)) != PSC_OK)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(psc_facts_load(path, b, err, sizeof(err)), PSC_OK);
    unlink(path);
    assert_string_equal(b->gpu[0].name, "NVIDIA H200 ");
    assert_string_equal(b->gpu[0].bridges[0].ids, "10b5:");
    assert_true(strlen(b->host.machine) <= sizeof(b->host.machine) - 1 && strlen(b->host.machine) % 3 == 0);
    psc_facts_free(a);
    psc_facts_free(b);
}

static void test_json_text(void **state)
{
    static const struct {
        const char *in, *out;
        size_t max;
    } t[] = {
        {"plain", "plain", 0},
        {"caf\xc3\xa9", "caf\xc3\xa9", 0},
        {"caf\xc3", "caf", 0},                           /* cut inside a character: dropped */
        {"a\xffz", "a\xef\xbf\xbdz", 0},                 /* a byte that is not UTF-8 */
        {"\xc0\x80", "\xef\xbf\xbd\xef\xbf\xbd", 0},     /* an overlong NUL */
        {"\xed\xa0\x80x", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdx", 0}, /* a surrogate */
        {"\xe2\x82\xac\xe2\x82\xac", "\xe2\x82\xac", 5}, /* stops at a character within max */
        {"", "", 0},
    };

    (void)state;
    for (size_t k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
        json_t *j = psc__json_text(t[k].in, t[k].max);

        assert_non_null(j);
        assert_string_equal(json_string_value(j), t[k].out);
        json_decref(j);
    }
}

/*
 * The writer at the edges of each field: 0 is written as 0, "unknown" (-1,
 * "") as null, the last GPU's index as an index; and a saved recording with
 * zeros loads back to the same facts.
 */
static void test_writer_zero_and_null(void **state)
{
    psc_facts_t *a = psc_facts_new(), *b = psc_facts_new();
    json_t *doc, *g0, *g1, *pair, *link;
    char *text, path[128], err[512];

    (void)state;
    assert_int_equal(psc_facts_load(GOOD, a, err, sizeof(err)), PSC_OK);
    a->gpu[0].numa_node = 0;
    a->gpu[1].numa_node = -1;
    a->gpu[0].uuid[0] = '\0';
    a->gpu[0].clock_event_reasons = 0;
    a->gpu[1].clock_event_reasons = -1;
    a->gpu[0].nvlinks[0].remote = PSC_REMOTE_GPU;
    a->gpu[0].nvlinks[0].remote_gpu = 1; /* the last GPU */
    a->gpu[0].nvlinks[1].remote = PSC_REMOTE_GPU;
    a->gpu[0].nvlinks[1].remote_gpu = 0;
    a->pair[0][1].can_access = 0;
    a->pair[0][1].integrity = 0;
    a->pair[0][1].perf_rank = 0;
    a->pair[1][0].integrity = -1;
    a->host.iommu = 0;
    a->host.hypervisor = 0;
    a->keep_identifiers = 1; /* the UUIDs as they are: "" null, the other a string */
    text = psc_facts_json(a, 0);
    assert_non_null(text);
    doc = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(doc);
    g0 = json_array_get(json_object_get(doc, "gpus"), 0);
    g1 = json_array_get(json_object_get(doc, "gpus"), 1);
    assert_true(json_is_integer(json_object_get(g0, "numa_node")));
    assert_int_equal(json_integer_value(json_object_get(g0, "numa_node")), 0);
    assert_true(json_is_null(json_object_get(g1, "numa_node")));
    assert_true(json_is_null(json_object_get(g0, "uuid")));
    assert_true(json_is_string(json_object_get(g1, "uuid")));
    assert_int_equal(json_integer_value(json_object_get(g0, "clock_event_reasons")), 0);
    assert_true(json_is_integer(json_object_get(g0, "clock_event_reasons")));
    assert_true(json_is_null(json_object_get(g1, "clock_event_reasons")));
    link = json_array_get(json_object_get(g0, "nvlinks"), 0);
    assert_int_equal(json_integer_value(json_object_get(link, "remote_gpu")), 1);
    assert_string_equal(json_string_value(json_object_get(link, "remote")), "gpu");
    link = json_array_get(json_object_get(g0, "nvlinks"), 1);
    assert_true(json_is_integer(json_object_get(link, "remote_gpu")));
    assert_int_equal(json_integer_value(json_object_get(link, "remote_gpu")), 0);
    pair = json_array_get(json_object_get(doc, "pairs"), 0);
    assert_int_equal(json_integer_value(json_object_get(pair, "src")), 0);
    assert_int_equal(json_integer_value(json_object_get(pair, "dst")), 1);
    assert_true(json_is_integer(json_object_get(pair, "can_access")));
    assert_int_equal(json_integer_value(json_object_get(pair, "can_access")), 0);
    assert_true(json_is_integer(json_object_get(pair, "integrity")));
    assert_int_equal(json_integer_value(json_object_get(pair, "integrity")), 0);
    assert_int_equal(json_integer_value(json_object_get(pair, "perf_rank")), 0);
    assert_true(json_is_null(json_object_get(json_array_get(json_object_get(doc, "pairs"), 1), "integrity")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "host"), "iommu")), 0);
    assert_true(json_is_integer(json_object_get(json_object_get(doc, "host"), "hypervisor")));
    json_decref(doc);

    /* A GPU index past the recording's GPUs is written as null. */
    a->gpu[0].nvlinks[0].remote_gpu = 2;
    text = psc_facts_json(a, 0);
    doc = json_loads(text, 0, NULL);
    free(text);
    link = json_array_get(json_object_get(json_array_get(json_object_get(doc, "gpus"), 0), "nvlinks"), 0);
    assert_true(json_is_null(json_object_get(link, "remote_gpu")));
    json_decref(doc);

    /* Zeros and nulls load back as they were. */
    a->gpu[0].nvlinks[0].remote_gpu = 1;
    snprintf(path, sizeof(path), "%s/zeros.json", dir);
    assert_int_equal(psc_facts_save(a, path, err, sizeof(err)), PSC_OK);
    assert_int_equal(psc_facts_load(path, b, err, sizeof(err)), PSC_OK);
    unlink(path);
    assert_int_equal(b->gpu[0].numa_node, 0);
    assert_int_equal(b->gpu[1].numa_node, -1);
    assert_string_equal(b->gpu[0].uuid, "");
    assert_int_equal(b->gpu[0].nvlinks[0].remote_gpu, 1);
    assert_int_equal(b->gpu[0].nvlinks[1].remote_gpu, 0);
    assert_int_equal(b->pair[0][1].can_access, 0);
    assert_int_equal(b->pair[0][1].integrity, 0);
    assert_int_equal(b->pair[1][0].integrity, -1);
    assert_int_equal(b->host.iommu, 0);
    psc_facts_free(a);
    psc_facts_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_round_trip), cmocka_unit_test(test_field_by_field),
        cmocka_unit_test(test_too_long_strings), cmocka_unit_test(test_too_many),
        cmocka_unit_test(test_huge_integer),     cmocka_unit_test(test_text_not_utf8),
        cmocka_unit_test(test_identifiers_left_out), cmocka_unit_test(test_xml_scrub),
        cmocka_unit_test(test_json_text),        cmocka_unit_test(test_writer_zero_and_null),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
