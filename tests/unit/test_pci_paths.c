/*
 * PCIe path labels from hand-built topologies with bridge chains of
 * different lengths (tests/data/pcie-*.xml): every pair both ways must carry
 * the label nvidia-smi topo -m gives, and each GPU its bridges up to the
 * host bridge. These shapes once sent the common-ancestor walk past the root.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "p2pscope/bench.h"
#include "topo/pci_tree.h"

#define MAXG 4

typedef struct {
    const char *file;
    int ngpu;
    const char *bus[MAXG];
    const char *label[MAXG][MAXG];
    int nbridges[MAXG];            /* host bridge included */
    const char *nearest[MAXG];     /* the bridge right above the GPU */
} shape_t;

static const shape_t shapes[] = {
    {"pcie-switch-vs-rootport.xml", 2, {"0000:05:00.0", "0000:20:00.0"},
     {{"X", "PHB"}, {"PHB", "X"}}, {6, 2}, {"0000:04:00.0", "0000:00:03.0"}},
    {"pcie-two-level-switch.xml", 3, {"0000:05:00.0", "0000:06:00.0", "0000:07:00.0"},
     {{"X", "PIX", "PXB"}, {"PIX", "X", "PXB"}, {"PXB", "PXB", "X"}}, {6, 6, 4},
     {"0000:04:00.0", "0000:04:01.0", "0000:02:01.0"}},
    {"pcie-sibling-ports.xml", 3, {"0000:03:00.0", "0000:04:00.0", "0000:10:00.0"},
     {{"X", "PIX", "PHB"}, {"PIX", "X", "PHB"}, {"PHB", "PHB", "X"}}, {4, 4, 2},
     {"0000:02:00.0", "0000:02:01.0", "0000:00:02.0"}},
    {"pcie-two-hostbridges.xml", 3, {"0000:01:00.0", "0000:43:00.0", "0000:50:00.0"},
     {{"X", "NODE", "NODE"}, {"NODE", "X", "PHB"}, {"NODE", "PHB", "X"}}, {2, 4, 2},
     {"0000:00:01.0", "0000:42:00.0", "0000:40:03.0"}},
    {"pcie-two-sockets.xml", 2, {"0000:01:00.0", "0000:81:00.0"},
     {{"X", "SYS"}, {"SYS", "X"}}, {2, 2}, {"0000:00:01.0", "0000:80:01.0"}},
    {"pcie-two-sockets-asym.xml", 3, {"0000:05:00.0", "0000:81:00.0", "0000:c3:00.0"},
     {{"X", "SYS", "SYS"}, {"SYS", "X", "NODE"}, {"SYS", "NODE", "X"}}, {6, 2, 4},
     {"0000:04:00.0", "0000:80:01.0", "0000:c2:00.0"}},
    /* Two bridges on one side below where the paths meet: PXB, not PIX. */
    {"pcie-bridge-behind-port.xml", 3, {"0000:03:00.0", "0000:05:00.0", "0000:10:00.0"},
     {{"X", "PXB", "PHB"}, {"PXB", "X", "PHB"}, {"PHB", "PHB", "X"}}, {4, 5, 2},
     {"0000:02:00.0", "0000:04:00.0", "0000:00:02.0"}},
    /* Recorded machines (hwloc's test suite): root ports of one host bridge, and across sockets. */
    {"24em64t-2n6c2t-pci.xml", 3, {"0000:06:00.0", "0000:11:00.0", "0000:14:00.0"},
     {{"X", "SYS", "SYS"}, {"SYS", "X", "PHB"}, {"SYS", "PHB", "X"}}, {2, 2, 2},
     {"0000:00:07.0", "0000:10:07.0", "0000:10:03.0"}},
    {"32em64t-2n8c2t-pci-wholeio.xml", 3, {"0000:03:00.0", "0000:83:00.0", "0000:84:00.0"},
     {{"X", "SYS", "SYS"}, {"SYS", "X", "PHB"}, {"SYS", "PHB", "X"}}, {2, 2, 2},
     {"0000:00:03.0", "0000:80:02.0", "0000:80:03.0"}},
};

static void check_shape(const shape_t *s)
{
    psc_facts_t *f = psc_facts_new();
    char path[512], err[512] = "", label[16];
    psc_status_t st;

    snprintf(path, sizeof(path), "%s/%s", TEST_DATA, s->file);
    st = psc_facts_load(path, f, err, sizeof(err));
    if (st != PSC_OK)
        fprintf(stderr, "%s: %s\n", s->file, err);
    assert_int_equal(st, PSC_OK);
    assert_int_equal(f->ngpu, s->ngpu);
    for (int i = 0; i < s->ngpu; i++) {
        const psc_gpu_facts_t *g = &f->gpu[i];

        assert_string_equal(g->pci_bus_id, s->bus[i]);
        assert_int_equal(g->nbridges, s->nbridges[i]);
        assert_string_equal(g->bridges[0].bus_id, s->nearest[i]);
        assert_string_equal(g->bridges[g->nbridges - 1].bus_id, ""); /* the host bridge ends the chain */
        for (int j = 0; j < s->ngpu; j++) {
            const psc_pair_facts_t *p = &f->pair[i][j];

            psc_path_label(p->path, p->nvlinks, label, sizeof(label));
            if (strcmp(label, s->label[i][j]) != 0)
                fprintf(stderr, "%s: gpu%d -> gpu%d: %s, expected %s\n", s->file, i, j, label, s->label[i][j]);
            assert_string_equal(label, s->label[i][j]);
        }
    }
    psc_facts_free(f);
}

static void test_switch_vs_root_port(void **state)
{
    (void)state;
    check_shape(&shapes[0]);
}

static void test_two_level_switch(void **state)
{
    (void)state;
    check_shape(&shapes[1]);
}

static void test_sibling_ports(void **state)
{
    (void)state;
    check_shape(&shapes[2]);
}

static void test_two_host_bridges(void **state)
{
    (void)state;
    check_shape(&shapes[3]);
}

static void test_two_sockets(void **state)
{
    (void)state;
    check_shape(&shapes[4]);
}

static void test_two_sockets_asymmetric(void **state)
{
    (void)state;
    check_shape(&shapes[5]);
}

static void test_bridge_behind_port(void **state)
{
    (void)state;
    check_shape(&shapes[6]);
}

static void test_recorded_machines(void **state)
{
    (void)state;
    check_shape(&shapes[7]);
    check_shape(&shapes[8]);
}

/* Every label of the legend, each from a named pair of a file above. */
static void test_every_label_named(void **state)
{
    static const struct { int shape, i, j; const char *label; } want[] = {
        {2, 0, 1, "PIX"}, {1, 0, 2, "PXB"}, {6, 0, 1, "PXB"}, {0, 0, 1, "PHB"},
        {3, 0, 1, "NODE"}, {4, 0, 1, "SYS"}, {7, 1, 2, "PHB"},
    };
    char path[512], err[512], label[16];

    (void)state;
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
        psc_facts_t *f = psc_facts_new();

        snprintf(path, sizeof(path), "%s/%s", TEST_DATA, shapes[want[k].shape].file);
        assert_int_equal(psc_facts_load(path, f, err, sizeof(err)), PSC_OK);
        assert_string_equal(psc_path_label(f->pair[want[k].i][want[k].j].path, 0, label, sizeof(label)),
                            want[k].label);
        psc_facts_free(f);
    }
}

/*
 * NVLinks through NVSwitches: a pair gets the links both GPUs have up to the
 * switches, the smaller count, whichever side lost links.
 */
static void test_nvswitch_links_down(void **state)
{
    psc_facts_t *f = psc_facts_new();
    char err[512], label[16];

    (void)state;
    assert_int_equal(psc_facts_load(TEST_DATA "/h200x2-nv18.json", f, err, sizeof(err)), PSC_OK);
    assert_int_equal(psc__nvlinks_between(f, 0, 1), 18);
    f->gpu[1].nvlinks[4].active = 0;
    f->gpu[1].nvlinks[9].active = 0;
    assert_int_equal(psc__nvlinks_between(f, 0, 1), 16);
    assert_int_equal(psc__nvlinks_between(f, 1, 0), 16);
    psc__classify_pairs(NULL, f);
    assert_string_equal(psc_path_label(f->pair[0][1].path, f->pair[0][1].nvlinks, label, sizeof(label)), "NV16");
    for (int l = 0; l < f->gpu[1].nvlink_count; l++)
        f->gpu[1].nvlinks[l].active = 0;
    psc__classify_pairs(NULL, f); /* no link left: not NVLink, and no tree to tell the PCIe path */
    assert_int_equal(f->pair[0][1].nvlinks, 0);
    assert_int_equal(f->pair[0][1].path, PSC_PATH_UNKNOWN);
    psc_facts_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_switch_vs_root_port), cmocka_unit_test(test_two_level_switch),
        cmocka_unit_test(test_sibling_ports),       cmocka_unit_test(test_two_host_bridges),
        cmocka_unit_test(test_two_sockets),         cmocka_unit_test(test_two_sockets_asymmetric),
        cmocka_unit_test(test_bridge_behind_port),  cmocka_unit_test(test_recorded_machines),
        cmocka_unit_test(test_every_label_named),   cmocka_unit_test(test_nvswitch_links_down),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
