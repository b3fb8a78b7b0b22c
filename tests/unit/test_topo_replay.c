/*
 * Topology from recordings, no driver: the DGX-2 (NVSwitch, PCIe switches),
 * a POWER8 with NVLink to CPUs, 2-socket PCIe boxes, a captured /sys tree
 * without GPUs; --save recordings round-trip; ACS parsing of config space.
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

#include "p2pscope/bench.h"
#include "topo/sysfs_facts.h"

static psc_facts_t *load_ok(const char *path)
{
    psc_facts_t *f = psc_facts_new();
    char err[512];
    psc_status_t st = psc_facts_load(path, f, err, sizeof(err));

    if (st != PSC_OK)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(st, PSC_OK);
    return f;
}

static void test_dgx2(void **state)
{
    psc_facts_t *f = load_ok(TEST_DATA "/nvidiaDGX2.xml");
    char label[16];

    (void)state;
    assert_int_equal(f->ngpu, 16);
    assert_false(f->has_driver);
    assert_string_equal(f->host.machine, "NVIDIA DGX-2H");
    assert_int_equal(f->host.numa_nodes, 2);
    for (int i = 0; i < 16; i++) {
        assert_string_equal(f->gpu[i].name, "Tesla V100-SXM3-32GB-H");
        assert_int_equal(f->gpu[i].nvlink_count, 6);
        for (int l = 0; l < 6; l++)
            assert_int_equal(f->gpu[i].nvlinks[l].remote, PSC_REMOTE_SWITCH);
        for (int j = 0; j < 16; j++)
            assert_string_equal(psc_path_label(f->pair[i][j].path, f->pair[i][j].nvlinks, label, sizeof(label)),
                                i == j ? "X" : "NV6");
        assert_int_equal(f->gpu[i].numa_node, i < 8 ? 0 : 1);
        assert_string_equal(f->gpu[i].cpuset, i < 8 ? "0-1" : "24-25");
    }
    /* PCI bus id order, and the whole bridge chain of the first GPU up to its host bridge. */
    assert_string_equal(f->gpu[0].pci_bus_id, "0000:34:00.0");
    assert_string_equal(f->gpu[15].pci_bus_id, "0000:e7:00.0");
    assert_int_equal(f->gpu[0].nbridges, 6);
    assert_string_equal(f->gpu[0].bridges[0].bus_id, "0000:33:00.0");
    assert_string_equal(f->gpu[0].bridges[1].ids, "10b5:9781");
    assert_string_equal(f->gpu[0].bridges[5].bus_id, "");
    assert_int_equal(f->gpu[0].bridges[0].acs, PSC_ACS_NOT_RECORDED);
    psc_facts_free(f);
}

static void test_power8_and_pcie_box(void **state)
{
    psc_facts_t *f = load_ok(TEST_DATA "/power8gpudistances.xml");
    int cpu_links = 0;

    (void)state;
    assert_int_equal(f->ngpu, 4);
    assert_int_equal(f->pair[0][1].path, PSC_PATH_NVLINK);
    assert_int_equal(f->pair[0][1].nvlinks, 2);
    assert_int_equal(f->pair[2][3].nvlinks, 2);
    assert_int_equal(f->pair[0][2].path, PSC_PATH_SYS);
    for (int l = 0; l < f->gpu[0].nvlink_count; l++)
        cpu_links += f->gpu[0].nvlinks[l].remote == PSC_REMOTE_CPU;
    assert_int_equal(cpu_links, 2);
    assert_float_equal(f->gpu[0].nvlinks[0].speed_gbs, 20.0, 1e-9);
    psc_facts_free(f);

    f = load_ok(TEST_DATA "/24em64t-2n6c2t-pci.xml");
    assert_int_equal(f->ngpu, 3);
    assert_int_equal(f->gpu[0].nvlink_count, -1); /* not recorded: unknown, not zero */
    assert_int_equal(f->pair[1][2].path, PSC_PATH_PHB);
    assert_int_equal(f->pair[0][1].path, PSC_PATH_SYS);
    assert_int_equal(f->pair[0][2].path, PSC_PATH_SYS);
    psc_facts_free(f);
}

/* A real recording with every bridge: root ports of one host bridge are PHB, across sockets SYS. */
static void test_whole_io_tree(void **state)
{
    psc_facts_t *f = load_ok(TEST_DATA "/32em64t-2n8c2t-pci-wholeio.xml");
    static const psc_path_t want[3][3] = {{PSC_PATH_SELF, PSC_PATH_SYS, PSC_PATH_SYS},
                                          {PSC_PATH_SYS, PSC_PATH_SELF, PSC_PATH_PHB},
                                          {PSC_PATH_SYS, PSC_PATH_PHB, PSC_PATH_SELF}};

    (void)state;
    assert_int_equal(f->ngpu, 3);
    assert_string_equal(f->gpu[1].pci_bus_id, "0000:83:00.0");
    assert_int_equal(f->gpu[1].nbridges, 2);
    assert_string_equal(f->gpu[1].bridges[0].bus_id, "0000:80:02.0");
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            assert_int_equal(f->pair[i][j].path, want[i][j]);
    psc_facts_free(f);
}

static void test_save_round_trip(void **state)
{
    char dir[] = "/tmp/psc-rec-XXXXXX", path[128], err[256], l1[16], l2[16];
    psc_facts_t *a = load_ok(TEST_DATA "/nvidiaDGX2.xml"), *b;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/dgx2.json", dir);
    assert_int_equal(psc_facts_save(a, path, err, sizeof(err)), PSC_OK);
    b = load_ok(path);
    assert_string_equal(b->source, path);
    assert_int_equal(b->ngpu, a->ngpu);
    assert_non_null(b->hwloc_xml);
    assert_string_equal(b->host.machine, a->host.machine);
    for (int i = 0; i < a->ngpu; i++) {
        assert_string_equal(b->gpu[i].pci_bus_id, a->gpu[i].pci_bus_id);
        assert_string_equal(b->gpu[i].cpuset, a->gpu[i].cpuset);
        assert_int_equal(b->gpu[i].nvlink_count, a->gpu[i].nvlink_count);
        assert_int_equal(b->gpu[i].nbridges, a->gpu[i].nbridges);
        assert_string_equal(b->gpu[i].nvlinks[2].remote_bus_id, a->gpu[i].nvlinks[2].remote_bus_id);
        for (int j = 0; j < a->ngpu; j++)
            assert_string_equal(psc_path_label(b->pair[i][j].path, b->pair[i][j].nvlinks, l1, sizeof(l1)),
                                psc_path_label(a->pair[i][j].path, a->pair[i][j].nvlinks, l2, sizeof(l2)));
    }
    unlink(path);
    rmdir(dir);
    psc_facts_free(a);
    psc_facts_free(b);
}

static void test_h200_recording(void **state)
{
    psc_facts_t *f = load_ok(TEST_DATA "/h200x2-nv18.json");
    char label[16];

    (void)state;
    assert_true(f->has_driver);
    assert_int_equal(f->ngpu, 2);
    assert_string_equal(psc_path_label(f->pair[0][1].path, f->pair[0][1].nvlinks, label, sizeof(label)), "NV18");
    assert_int_equal(f->pair[0][1].can_access, 1);
    assert_int_equal(f->pair[1][0].native_atomics, 1);
    for (int i = 0; i < 2; i++) {
        assert_string_equal(f->gpu[i].name, "NVIDIA H200");
        assert_int_equal(f->gpu[i].nvlink_count, 18);
        assert_int_equal(f->gpu[i].nvlinks[17].version, 4);
        assert_float_equal(f->gpu[i].nvlinks[5].speed_gbs, 26.562, 1e-9);
        assert_int_equal(f->gpu[i].nvlinks[5].remote, PSC_REMOTE_SWITCH);
        assert_int_equal(f->gpu[i].pcie_gen, 5);
        assert_int_equal(f->gpu[i].pcie_width, 16);
        assert_true(f->gpu[i].bar1_bytes > f->gpu[i].memory_bytes);
        assert_int_equal(f->gpu[i].virt_mode, 1);
    }
    assert_int_equal(f->host.hypervisor, 1);
    assert_int_equal(f->host.iommu, 0);
    assert_int_equal(f->host.driver_open, 1);
    psc_facts_free(f);
}

static void test_bad_recordings(void **state)
{
    char dir[] = "/tmp/psc-bad-XXXXXX", path[160], cmd[512], err[512];
    psc_facts_t *f = psc_facts_new();
    FILE *fp;

    (void)state;
    assert_non_null(mkdtemp(dir));
    assert_int_equal(psc_facts_load("/nonexistent/topo.xml", f, err, sizeof(err)), PSC_ERR_IO);
    assert_non_null(strstr(err, "no such file"));

    snprintf(path, sizeof(path), "%s/garbage.xml", dir);
    fp = fopen(path, "w");
    fputs("<html>not a topology</html>\n", fp);
    fclose(fp);
    assert_int_equal(psc_facts_load(path, f, err, sizeof(err)), PSC_ERR_IO);
    assert_non_null(strstr(err, "not an hwloc XML"));
    unlink(path);

    snprintf(path, sizeof(path), "%s/other.json", dir);
    fp = fopen(path, "w");
    fputs("{\"format\": \"something-else\", \"version\": 1}\n", fp);
    fclose(fp);
    assert_int_equal(psc_facts_load(path, f, err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "not a p2pscope recording"));
    unlink(path);

    /* A capture still packed: named as an archive, with how to unpack it. */
    snprintf(path, sizeof(path), "%s/nvidiagpunumanodes.tar.bz2", TEST_DATA);
    assert_int_equal(psc_facts_load(path, f, err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "nvidiagpunumanodes.tar.bz2: an archive (bzip2), not a recording: unpack it"));

    /* A captured /sys tree of a machine with no NVIDIA GPU. */
    snprintf(cmd, sizeof(cmd), "tar -C %s -xjf %s/40intel64-2g2n4c+pcilocality.tar.bz2", dir, TEST_DATA);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof(path), "%s/40intel64-2g2n4c+pci", dir);
    assert_int_equal(psc_facts_load(path, f, err, sizeof(err)), PSC_ERR_NO_DEVICE);
    assert_non_null(strstr(err, "holds no NVIDIA GPU"));

    /* POWER9: the tree's PCI devices lack vendor ids, the driver's list names the 6 GPUs; two NUMA nodes of 3. */
    snprintf(cmd, sizeof(cmd), "tar -C %s -xjf %s/nvidiagpunumanodes.tar.bz2", dir, TEST_DATA);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof(path), "%s/nvidiagpunumanodes", dir);
    assert_int_equal(psc_facts_load(path, f, err, sizeof(err)), PSC_OK);
    assert_int_equal(f->ngpu, 6);
    assert_string_equal(f->gpu[0].pci_bus_id, "0004:05:00.0");
    assert_string_equal(f->gpu[5].pci_bus_id, "0035:05:00.0");
    assert_int_equal(f->gpu[0].numa_node, 0);
    assert_int_equal(f->gpu[5].numa_node, 8);
    assert_int_equal(f->pair[0][1].path, PSC_PATH_NODE);
    assert_int_equal(f->pair[0][3].path, PSC_PATH_SYS);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    psc_facts_free(f);
}

static void test_acs_parse(void **state)
{
    unsigned char cfg[4096];
    int ctrl = -1;

    (void)state;
    memset(cfg, 0, sizeof(cfg));
    /* AER at 0x100 -> ACS at 0x148: header id 0x000d, next 0; capability 0x5f, control 0x1d. */
    cfg[0x100] = 0x01; cfg[0x101] = 0x00; cfg[0x102] = 0x81; cfg[0x103] = 0x14; /* next = 0x148 */
    cfg[0x148] = 0x0d; cfg[0x149] = 0x00; cfg[0x14a] = 0x01; cfg[0x14b] = 0x00;
    cfg[0x14c] = 0x5f; cfg[0x14e] = 0x1d;
    assert_int_equal(psc__acs_parse(cfg, sizeof(cfg), 1, &ctrl), PSC_ACS_READ);
    assert_int_equal(ctrl, PSC_ACS_SV | PSC_ACS_RR | PSC_ACS_CR | PSC_ACS_UF);
    cfg[0x148] = 0x0b; /* not ACS: a vendor capability */
    assert_int_equal(psc__acs_parse(cfg, sizeof(cfg), 1, &ctrl), PSC_ACS_ABSENT);
    assert_int_equal(psc__acs_parse(cfg, 64, 0, &ctrl), PSC_ACS_NEEDS_ROOT);
    assert_int_equal(psc__acs_parse(cfg, 256, 1, &ctrl), PSC_ACS_ABSENT);
    assert_int_equal(psc__pcie_gen_of_speed("32.0 GT/s PCIe"), 5);
    assert_int_equal(psc__pcie_gen_of_speed("2.5 GT/s"), 1);
    assert_int_equal(psc__pcie_gen_of_speed("Unknown"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dgx2),           cmocka_unit_test(test_power8_and_pcie_box),
        cmocka_unit_test(test_save_round_trip), cmocka_unit_test(test_bad_recordings),
        cmocka_unit_test(test_h200_recording), cmocka_unit_test(test_whole_io_tree),
        cmocka_unit_test(test_acs_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
