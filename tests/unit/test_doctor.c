/*
 * The doctor's rules on real recorded facts and hand-built ones: each rule
 * fires on the fact it is about and stays quiet otherwise, including the
 * consumer RTX 4090 box of the seed blog before and after its fix.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "p2pscope/bench.h"

#define MAXF 1024
static psc_finding_t g_found[MAXF];

static size_t run(const psc_facts_t *f)
{
    size_t n = psc_doctor(f, g_found, MAXF);

    assert_true(n <= MAXF);
    for (size_t k = 1; k < n; k++) /* most severe first */
        assert_true(g_found[k - 1].severity >= g_found[k].severity);
    return n;
}

static size_t count(size_t n, const char *rule, psc_severity_t sev)
{
    size_t c = 0;

    for (size_t k = 0; k < n; k++)
        c += strcmp(g_found[k].rule, rule) == 0 && g_found[k].severity == sev;
    return c;
}

static size_t count_sev(size_t n, psc_severity_t sev)
{
    size_t c = 0;

    for (size_t k = 0; k < n; k++)
        c += g_found[k].severity == sev;
    return c;
}

static int has(size_t n, const char *rule)
{
    for (size_t k = 0; k < n; k++)
        if (strcmp(g_found[k].rule, rule) == 0)
            return 1;
    return 0;
}

/* The first finding of a rule; the test fails when there is none. */
static const psc_finding_t *find(size_t n, const char *rule)
{
    size_t k = 0;

    while (k < n && strcmp(g_found[k].rule, rule) != 0)
        k++;
    assert_true(k < n);
    return &g_found[k < MAXF ? k : 0];
}

/* A live-looking machine of n GPUs; every pair on path `path`, peer access `access`. */
static psc_facts_t *machine(int n, const char *name, uint64_t mem, uint64_t bar1, psc_path_t path, int access)
{
    psc_facts_t *f = psc_facts_new();

    assert_non_null(f);
    snprintf(f->source, sizeof(f->source), "test");
    f->has_driver = 1;
    f->ngpu = n;
    f->host.numa_nodes = 2;
    f->host.hypervisor = 0;
    f->host.iommu = 0;
    f->host.iommu_groups = 0;
    f->nccl.known = f->nccl.loaded = 1; /* a current NCCL, no NCCL_* settings (tests/unit/test_doctor_nccl.c) */
    f->nccl.version = 22807;
    for (int i = 0; i < n; i++) {
        psc_gpu_facts_t *g = &f->gpu[i];

        f->gpumap[i].known = f->gpumap[i].usable[PSC_GPUMAP_GDRCOPY] = 1; /* tests/unit/test_doctor_gpumap.c */

        snprintf(g->name, sizeof(g->name), "%s", name);
        snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "0000:%02x:00.0", 0x10 * (i + 1));
        g->memory_bytes = mem;
        g->bar1_bytes = bar1;
        g->pcie_gen = g->pcie_gen_max = 4;
        g->pcie_width = g->pcie_width_max = 16;
        g->numa_node = i < n / 2 ? 0 : 1;
        g->clock_event_reasons = 0;
        g->nvlink_count = 0;
        for (int j = 0; j < n; j++) {
            f->pair[i][j].path = i == j ? PSC_PATH_SELF : path;
            f->pair[i][j].can_access = i == j ? -1 : access;
            f->pair[i][j].nvml_p2p_read = access ? 0 : 2;
        }
    }
    return f;
}

static void test_rtx4090_box_before_fix(void **state)
{
    /* 8 GPUs all SYS, BAR1 256 MiB, IOMMU on and translating, the stock driver refusing P2P. */
    psc_facts_t *f = machine(8, "NVIDIA GeForce RTX 4090", 24ull << 30, 256ull << 20, PSC_PATH_SYS, 0);
    const psc_finding_t *x;
    size_t n;

    (void)state;
    f->host.iommu = 1;
    f->host.iommu_groups = 104;
    snprintf(f->host.cmdline, sizeof(f->host.cmdline), "BOOT_IMAGE=/boot/vmlinuz root=/dev/nvme0n1p2 ro quiet");
    for (int i = 0; i < 8; i++) {
        f->gpu[i].iommu_group = 20 + i;
        snprintf(f->gpu[i].iommu_domain, sizeof(f->gpu[i].iommu_domain), "DMA-FQ");
    }
    n = run(f);
    assert_int_equal(count(n, "bar1_small", PSC_SEV_ERROR), 8);
    assert_int_equal(count(n, "iommu_on", PSC_SEV_ERROR), 1);
    assert_int_equal(count(n, "p2p_unavailable", PSC_SEV_WARNING), 56);
    x = find(n, "p2p_unavailable");
    assert_non_null(strstr(x->fix, "does not allow P2P on this GPU model"));
    assert_non_null(strstr(x->evidence, "path SYS"));
    x = find(n, "bar1_small");
    assert_non_null(strstr(x->evidence, "BAR1 256 MiB, memory 24.0 GiB"));
    assert_non_null(strstr(x->fix, "Resizable BAR"));
    x = find(n, "iommu_on");
    assert_non_null(strstr(x->fix, "iommu=pt"));
    assert_non_null(strstr(x->evidence, "translated: 8 of 8"));
    assert_false(has(n, "nvlink_missing")); /* a GeForce has no NVLink to expect */
    psc_facts_free(f);
}

static void test_rtx4090_box_after_fix(void **state)
{
    psc_facts_t *f = machine(8, "NVIDIA GeForce RTX 4090", 24ull << 30, 32ull << 30, PSC_PATH_SYS, 1);
    size_t n;

    (void)state;
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            f->pair[i][j].integrity = i == j ? -1 : 1;
    n = run(f);
    assert_int_equal(count_sev(n, PSC_SEV_ERROR), 0);
    assert_int_equal(count_sev(n, PSC_SEV_WARNING), 0);
    psc_facts_free(f);
}

static void test_iommu_passthrough_is_fine(void **state)
{
    psc_facts_t *f = machine(2, "NVIDIA L40S", 48ull << 30, 64ull << 30, PSC_PATH_PHB, 1);
    size_t n;

    (void)state;
    f->host.iommu = 1;
    snprintf(f->gpu[0].iommu_domain, sizeof(f->gpu[0].iommu_domain), "identity");
    snprintf(f->gpu[1].iommu_domain, sizeof(f->gpu[1].iommu_domain), "identity");
    n = run(f);
    assert_false(has(n, "iommu_on"));
    /* Translated, but every pair on NVLink: a warning, not an error. */
    snprintf(f->gpu[0].iommu_domain, sizeof(f->gpu[0].iommu_domain), "DMA");
    f->pair[0][1].path = f->pair[1][0].path = PSC_PATH_NVLINK;
    f->pair[0][1].nvlinks = f->pair[1][0].nvlinks = 4;
    n = run(f);
    assert_int_equal(count(n, "iommu_on", PSC_SEV_WARNING), 1);
    psc_facts_free(f);
}

static void set_bridge(psc_gpu_facts_t *g, int k, const char *bus, psc_acs_state_t acs, int ctrl)
{
    snprintf(g->bridges[k].bus_id, sizeof(g->bridges[k].bus_id), "%s", bus);
    snprintf(g->bridges[k].ids, sizeof(g->bridges[k].ids), "10b5:9781");
    g->bridges[k].acs = acs;
    g->bridges[k].acs_ctrl = ctrl;
    if (g->nbridges < k + 1)
        g->nbridges = k + 1;
}

static void test_acs_redirect_between_peers(void **state)
{
    psc_facts_t *f = machine(2, "NVIDIA A40", 48ull << 30, 64ull << 30, PSC_PATH_PIX, 1);
    const psc_finding_t *x;
    size_t n;

    (void)state;
    /* Each GPU under its own downstream port of one switch; the upstream port is shared. */
    set_bridge(&f->gpu[0], 0, "0000:03:08.0", PSC_ACS_READ, PSC_ACS_SV | PSC_ACS_RR | PSC_ACS_CR | PSC_ACS_UF);
    set_bridge(&f->gpu[0], 1, "0000:02:00.0", PSC_ACS_READ, PSC_ACS_RR);
    set_bridge(&f->gpu[1], 0, "0000:03:10.0", PSC_ACS_READ, PSC_ACS_SV);
    set_bridge(&f->gpu[1], 1, "0000:02:00.0", PSC_ACS_READ, PSC_ACS_RR);
    n = run(f);
    assert_int_equal(count(n, "acs_redirect", PSC_SEV_ERROR), 1); /* the shared port above is not between them */
    x = find(n, "acs_redirect");
    assert_non_null(strstr(x->what, "0000:03:08.0"));
    assert_non_null(strstr(x->evidence, "RR=1 CR=1"));
    /* Unreadable without root: said, not guessed. */
    f->gpu[0].bridges[0].acs = PSC_ACS_NEEDS_ROOT;
    n = run(f);
    assert_false(has(n, "acs_redirect"));
    assert_int_equal(count(n, "not_checked_acs", PSC_SEV_INFO), 1);
    psc_facts_free(f);
}

static void test_pcie_link_below_max(void **state)
{
    psc_facts_t *f = machine(1, "NVIDIA H100 PCIe", 80ull << 30, 128ull << 30, PSC_PATH_UNKNOWN, -1);
    size_t n;

    (void)state;
    f->gpu[0].pcie_width = 8;
    f->gpu[0].pcie_gen = 1;
    f->gpu[0].pcie_gen_max = 5;
    f->gpu[0].clock_event_reasons = 0x1; /* idle */
    n = run(f);
    assert_int_equal(count(n, "pcie_width", PSC_SEV_WARNING), 1);
    assert_int_equal(count(n, "pcie_gen", PSC_SEV_INFO), 1);
    f->gpu[0].clock_event_reasons = 0;
    n = run(f);
    assert_int_equal(count(n, "pcie_gen", PSC_SEV_WARNING), 1);
    psc_facts_free(f);
}

static void test_nvlink_down_and_missing(void **state)
{
    psc_facts_t *f = machine(2, "NVIDIA H200", 141ull << 30, 256ull << 30, PSC_PATH_NVLINK, 1);
    size_t n;

    (void)state;
    for (int i = 0; i < 2; i++) {
        f->gpu[i].nvlink_count = 18;
        for (int l = 0; l < 18; l++) {
            f->gpu[i].nvlinks[l].active = 1;
            f->gpu[i].nvlinks[l].remote = PSC_REMOTE_GPU;
            f->gpu[i].nvlinks[l].remote_gpu = 1 - i;
        }
    }
    n = run(f);
    assert_false(has(n, "nvlink_down"));
    assert_false(has(n, "nvlink_missing"));
    f->gpu[1].nvlinks[3].active = 0;
    f->gpu[1].nvlinks[17].active = 0;
    n = run(f);
    assert_int_equal(count(n, "nvlink_down", PSC_SEV_ERROR), 1);
    assert_non_null(strstr(find(n, "nvlink_down")->what, "2 of 18"));
    /* A board that shows only 12 links, all up, is still short of the model's 18. */
    f->gpu[1].nvlinks[3].active = f->gpu[1].nvlinks[17].active = 1;
    f->gpu[0].nvlink_count = 12;
    n = run(f);
    assert_int_equal(count(n, "nvlink_missing", PSC_SEV_ERROR), 1);
    psc_facts_free(f);
}

static void test_p2p_inconsistent_and_corrupt(void **state)
{
    psc_facts_t *f = machine(3, "NVIDIA A100-SXM4-80GB", 80ull << 30, 128ull << 30, PSC_PATH_PXB, 1);
    size_t n;

    (void)state;
    f->pair[0][2].can_access = f->pair[2][0].can_access = 0;
    f->pair[0][2].nvml_p2p_read = f->pair[2][0].nvml_p2p_read = 3;
    f->pair[0][1].integrity = 0;
    f->pair[1][0].integrity = 1;
    n = run(f);
    assert_int_equal(count(n, "p2p_unavailable", PSC_SEV_ERROR), 2); /* others have it: an error */
    assert_non_null(strstr(find(n, "p2p_unavailable")->fix, "IOH topology"));
    assert_int_equal(count(n, "p2p_corrupts", PSC_SEV_ERROR), 1);
    assert_non_null(strstr(find(n, "p2p_corrupts")->what, "gpu0 to gpu1"));
    psc_facts_free(f);
}

static void test_p2p_reasons(void **state)
{
    psc_facts_t *f = machine(2, "NVIDIA L4", 24ull << 30, 32ull << 30, PSC_PATH_PHB, 0);
    char why[256];

    (void)state;
    f->pair[0][1].nvml_p2p_read = -1;
    f->gpu[1].mig = 1;
    assert_non_null(strstr(psc_p2p_reason(f, 0, 1, why, sizeof(why)), "MIG is on for GPU 1"));
    f->gpu[1].mig = 0;
    f->host.hypervisor = 1;
    assert_non_null(strstr(psc_p2p_reason(f, 0, 1, why, sizeof(why)), "inside a VM"));
    f->host.hypervisor = 0;
    assert_non_null(strstr(psc_p2p_reason(f, 0, 1, why, sizeof(why)), "unknown"));
    f->pair[0][1].can_access = 1;
    assert_string_equal(psc_p2p_reason(f, 0, 1, why, sizeof(why)), "");
    psc_facts_free(f);
}

static void test_numa_clocks_vm(void **state)
{
    psc_facts_t *f = machine(2, "NVIDIA H100 80GB HBM3", 80ull << 30, 128ull << 30, PSC_PATH_NVLINK, 1);
    size_t n;

    (void)state;
    for (int i = 0; i < 2; i++) {
        f->gpu[i].nvlink_count = 18;
        for (int l = 0; l < 18; l++)
            f->gpu[i].nvlinks[l].active = 1;
    }
    f->gpu[1].numa_node = -1;
    f->gpu[0].clock_event_reasons = 0x40; /* hardware thermal slowdown */
    f->host.hypervisor = 1;
    n = run(f);
    assert_int_equal(count(n, "numa_unknown", PSC_SEV_WARNING), 1);
    assert_int_equal(count(n, "clocks_throttled", PSC_SEV_WARNING), 1);
    assert_int_equal(count(n, "not_checked_vm", PSC_SEV_INFO), 1);
    assert_int_equal(count_sev(n, PSC_SEV_ERROR), 0);
    f->host.numa_nodes = 1;
    f->gpu[0].clock_event_reasons = 0x1;
    n = run(f);
    assert_false(has(n, "numa_unknown"));
    assert_false(has(n, "clocks_throttled"));
    psc_facts_free(f);
}

static void test_recorded_dgx2_is_clean(void **state)
{
    psc_facts_t *f = psc_facts_new();
    char err[256];
    size_t n;

    (void)state;
    assert_int_equal(psc_facts_load(TEST_DATA "/nvidiaDGX2.xml", f, err, sizeof(err)), PSC_OK);
    n = run(f);
    assert_int_equal(count_sev(n, PSC_SEV_ERROR), 0);
    assert_int_equal(count_sev(n, PSC_SEV_WARNING), 0);
    assert_true(has(n, "not_checked_driver"));
    psc_facts_free(f);
}

/* The 2xH200 VM recorded on the lent machine: healthy, and the doctor says what a VM hides. */
static void test_recorded_h200_vm(void **state)
{
    psc_facts_t *f = psc_facts_new();
    char err[256];
    size_t n;

    (void)state;
    assert_int_equal(psc_facts_load(TEST_DATA "/h200x2-nv18.json", f, err, sizeof(err)), PSC_OK);
    n = run(f);
    assert_int_equal(count_sev(n, PSC_SEV_ERROR), 0);
    assert_int_equal(count_sev(n, PSC_SEV_WARNING), 0);
    assert_int_equal(count(n, "not_checked_vm", PSC_SEV_INFO), 1);
    /* The same machine with two links down. */
    f->gpu[1].nvlinks[4].active = 0;
    f->gpu[1].nvlinks[9].active = 0;
    n = run(f);
    assert_int_equal(count(n, "nvlink_down", PSC_SEV_ERROR), 1);
    psc_facts_free(f);
}

static void test_capacity_is_respected(void **state)
{
    psc_facts_t *f = machine(8, "NVIDIA GeForce RTX 4090", 24ull << 30, 256ull << 20, PSC_PATH_SYS, 0);
    psc_finding_t two[3] = {{.rule = ""}, {.rule = ""}, {.rule = "untouched"}};
    size_t n = run(f);

    (void)state;
    assert_int_equal(psc_doctor(f, two, 2), n); /* the full count, two written */
    assert_true(n > 2);
    assert_string_equal(two[2].rule, "untouched"); /* nothing past the cap */
    assert_int_equal(two[0].severity, PSC_SEV_ERROR);
    assert_string_equal(two[0].rule, g_found[0].rule); /* the first two of the full list */
    assert_string_equal(two[1].what, g_found[1].what);
    assert_int_equal(psc_doctor(NULL, two, 2), 0);
    assert_int_equal(psc_doctor(f, NULL, 5), n); /* counting only */
    psc_facts_free(f);
}

/* A healthy machine: no findings, none written (under UBSan: no copy from a NULL list). */
static void test_clean_machine_has_no_findings(void **state)
{
    psc_facts_t *f = machine(1, "NVIDIA L4", 24ull << 30, 32ull << 30, PSC_PATH_SYS, -1);
    psc_finding_t one[1] = {{.rule = "untouched"}};

    (void)state;
    assert_int_equal(psc_doctor(f, one, 1), 0);
    assert_string_equal(one[0].rule, "untouched");
    assert_int_equal(psc_doctor(f, NULL, 0), 0);
    psc_facts_free(f);
}

/* BAR1: an error when a peer is reached over PCIe, a warning when every peer is on NVLink; equal is enough. */
static void test_bar1_severity(void **state)
{
    psc_facts_t *f = machine(2, "NVIDIA A100-SXM4-80GB", 80ull << 30, 16ull << 30, PSC_PATH_NVLINK, 1);
    size_t n;

    (void)state;
    for (int i = 0; i < 2; i++) {
        f->gpu[i].nvlink_count = 12;
        for (int l = 0; l < 12; l++)
            f->gpu[i].nvlinks[l].active = 1;
        f->pair[i][1 - i].nvlinks = 12;
    }
    n = run(f);
    assert_int_equal(count(n, "bar1_small", PSC_SEV_WARNING), 2);
    assert_int_equal(count(n, "bar1_small", PSC_SEV_ERROR), 0);
    f->pair[0][1].path = PSC_PATH_PXB; /* gpu0 now reaches gpu1 over PCIe */
    n = run(f);
    assert_int_equal(count(n, "bar1_small", PSC_SEV_ERROR), 1);
    assert_int_equal(count(n, "bar1_small", PSC_SEV_WARNING), 1);
    f->gpu[0].bar1_bytes = f->gpu[0].memory_bytes; /* covers all of it */
    f->gpu[1].bar1_bytes = f->gpu[1].memory_bytes + 1;
    n = run(f);
    assert_false(has(n, "bar1_small"));
    psc_facts_free(f);
}

/* iommu=pt on the command line is passthrough even when the GPUs' DMA domains were not recorded. */
static void test_iommu_cmdline_passthrough(void **state)
{
    psc_facts_t *f = machine(2, "NVIDIA L40S", 48ull << 30, 64ull << 30, PSC_PATH_PHB, 1);
    size_t n;

    (void)state;
    f->host.iommu = 1;
    snprintf(f->host.cmdline, sizeof(f->host.cmdline), "ro quiet intel_iommu=on iommu=pt");
    n = run(f);
    assert_false(has(n, "iommu_on"));
    /* A domain that does translate wins over the command line. */
    snprintf(f->gpu[1].iommu_domain, sizeof(f->gpu[1].iommu_domain), "DMA-FQ");
    n = run(f);
    assert_int_equal(count(n, "iommu_on", PSC_SEV_ERROR), 1);
    /* Off: nothing to say, and it was checked. */
    f->host.iommu = 0;
    n = run(f);
    assert_false(has(n, "iommu_on"));
    assert_false(has(n, "not_checked_iommu"));
    f->host.iommu = -1;
    n = run(f);
    assert_false(has(n, "iommu_on"));
    assert_int_equal(count(n, "not_checked_iommu", PSC_SEV_INFO), 1);
    psc_facts_free(f);
}

/* Completion redirect alone redirects too; pairs on NVLink do not cross the bridges. */
static void test_acs_completion_redirect_and_nvlink(void **state)
{
    psc_facts_t *f = machine(2, "NVIDIA A40", 48ull << 30, 64ull << 30, PSC_PATH_PIX, 1);
    size_t n;

    (void)state;
    set_bridge(&f->gpu[0], 0, "0000:03:08.0", PSC_ACS_READ, PSC_ACS_CR);
    set_bridge(&f->gpu[0], 1, "0000:02:00.0", PSC_ACS_READ, 0);
    set_bridge(&f->gpu[1], 0, "0000:03:10.0", PSC_ACS_READ, PSC_ACS_SV);
    set_bridge(&f->gpu[1], 1, "0000:02:00.0", PSC_ACS_READ, 0);
    n = run(f);
    assert_int_equal(count(n, "acs_redirect", PSC_SEV_ERROR), 1);
    assert_non_null(strstr(find(n, "acs_redirect")->evidence, "RR=0 CR=1"));
    f->gpu[0].bridges[0].acs_ctrl = PSC_ACS_SV | PSC_ACS_UF; /* neither redirect bit */
    n = run(f);
    assert_false(has(n, "acs_redirect"));
    f->gpu[0].bridges[0].acs_ctrl = PSC_ACS_RR | PSC_ACS_CR;
    f->pair[0][1].path = f->pair[1][0].path = PSC_PATH_NVLINK;
    f->pair[0][1].nvlinks = f->pair[1][0].nvlinks = 4;
    n = run(f);
    assert_false(has(n, "acs_redirect"));
    /* A bridge between a GPU and two peers is one finding, not one per peer. */
    {
        psc_facts_t *g = machine(3, "NVIDIA A40", 48ull << 30, 64ull << 30, PSC_PATH_PIX, 1);

        for (int k = 0; k < 3; k++) {
            char port[16];

            snprintf(port, sizeof(port), "0000:03:%02x.0", 8 * (k + 1));
            set_bridge(&g->gpu[k], 0, port, PSC_ACS_READ, k == 0 ? PSC_ACS_RR : 0);
            set_bridge(&g->gpu[k], 1, "0000:02:00.0", PSC_ACS_READ, 0);
        }
        n = run(g);
        assert_int_equal(count(n, "acs_redirect", PSC_SEV_ERROR), 1);
        psc_facts_free(g);
    }
    /* Unreadable ACS matters only where a pair goes over PCIe. */
    f->gpu[0].bridges[0].acs = PSC_ACS_NEEDS_ROOT;
    n = run(f);
    assert_false(has(n, "not_checked_acs"));
    f->pair[0][1].path = PSC_PATH_PIX;
    f->pair[0][1].nvlinks = 0;
    n = run(f);
    assert_int_equal(count(n, "not_checked_acs", PSC_SEV_INFO), 1);
    psc_facts_free(f);
}

/* A lower link generation is only "idle" when NVML says the GPU is idle, not when the reasons are unknown. */
static void test_pcie_gen_reasons_unknown(void **state)
{
    psc_facts_t *f = machine(1, "NVIDIA H100 PCIe", 80ull << 30, 128ull << 30, PSC_PATH_UNKNOWN, -1);
    size_t n;

    (void)state;
    f->gpu[0].pcie_gen = 3;
    f->gpu[0].pcie_gen_max = 5;
    f->gpu[0].clock_event_reasons = -1;
    n = run(f);
    assert_int_equal(count(n, "pcie_gen", PSC_SEV_WARNING), 1);
    assert_false(has(n, "pcie_width"));
    assert_false(has(n, "clocks_throttled"));
    psc_facts_free(f);
}

/* Every link down is a board short of its links (nvlink_missing), not "some links down". */
static void test_nvlink_all_down(void **state)
{
    psc_facts_t *f = machine(2, "NVIDIA H200", 141ull << 30, 256ull << 30, PSC_PATH_SYS, 1);
    size_t n;

    (void)state;
    for (int i = 0; i < 2; i++) {
        f->gpu[i].nvlink_count = 18;
        for (int l = 0; l < 18; l++)
            f->gpu[i].nvlinks[l].active = i == 0;
    }
    n = run(f);
    assert_false(has(n, "nvlink_down"));
    assert_int_equal(count(n, "nvlink_missing", PSC_SEV_ERROR), 1);
    assert_non_null(strstr(find(n, "nvlink_missing")->what, "gpu1 has 0 active NVLinks"));
    psc_facts_free(f);
}

/* The only GPU in view (a one-GPU slice of an HGX board, as lent): its missing links are information. */
static void test_nvlink_missing_alone(void **state)
{
    psc_facts_t *f = machine(1, "NVIDIA H200", 141ull << 30, 256ull << 30, PSC_PATH_SYS, 1);
    size_t n;

    (void)state;
    f->gpu[0].nvlink_count = 0; /* as NVML answers on that machine */
    n = run(f);
    assert_int_equal(count(n, "nvlink_missing", PSC_SEV_INFO), 1);
    assert_int_equal(count(n, "nvlink_missing", PSC_SEV_ERROR), 0);
    assert_non_null(strstr(find(n, "nvlink_missing")->what, "not visible here"));
    psc_facts_free(f);
}

/* NUMA affinity unknown: a warning on a multi-node host, information when the node count is unknown. */
static void test_numa_unknown_severity(void **state)
{
    psc_facts_t *f = machine(2, "NVIDIA L4", 24ull << 30, 32ull << 30, PSC_PATH_PHB, 1);
    size_t n;

    (void)state;
    f->gpu[0].numa_node = 0; /* node 0 is a node */
    f->gpu[1].numa_node = -1;
    n = run(f);
    assert_int_equal(count(n, "numa_unknown", PSC_SEV_WARNING), 1);
    assert_non_null(strstr(find(n, "numa_unknown")->what, "gpu1"));
    f->host.numa_nodes = -1;
    n = run(f);
    assert_int_equal(count(n, "numa_unknown", PSC_SEV_INFO), 1);
    assert_int_equal(count(n, "numa_unknown", PSC_SEV_WARNING), 0);
    psc_facts_free(f);
}

/* NVML's clocks event reasons: the power and thermal ones throttle; idle, app clocks, sync boost do not. */
static void test_clock_reason_bits(void **state)
{
    static const long long throttle[] = {0x4, 0x8, 0x20, 0x40, 0x80};
    static const long long fine[] = {0x0, 0x1, 0x2, 0x10, 0x100};
    psc_facts_t *f = machine(1, "NVIDIA L4", 24ull << 30, 32ull << 30, PSC_PATH_UNKNOWN, -1);
    size_t n;

    (void)state;
    for (size_t k = 0; k < sizeof(throttle) / sizeof(throttle[0]); k++) {
        f->gpu[0].clock_event_reasons = throttle[k];
        n = run(f);
        assert_int_equal(count(n, "clocks_throttled", PSC_SEV_WARNING), 1);
    }
    for (size_t k = 0; k < sizeof(fine) / sizeof(fine[0]); k++) {
        f->gpu[0].clock_event_reasons = fine[k];
        n = run(f);
        assert_false(has(n, "clocks_throttled"));
    }
    f->gpu[0].clock_event_reasons = -1; /* unknown */
    n = run(f);
    assert_false(has(n, "clocks_throttled"));
    psc_facts_free(f);
}

/* Within a severity the rules keep their order, and within a rule the GPUs theirs. */
static void test_order_within_severity(void **state)
{
    psc_facts_t *f = machine(2, "NVIDIA H200", 141ull << 30, 64ull << 30, PSC_PATH_PIX, 1);
    size_t n;

    (void)state;
    f->host.hypervisor = 1; /* an info first, before any error is found */
    for (int i = 0; i < 2; i++) {
        f->gpu[i].nvlink_count = 18;
        for (int l = 0; l < 18; l++)
            f->gpu[i].nvlinks[l].active = l != 5;
    }
    f->pair[0][1].integrity = 0;
    n = run(f);
    /* nvlink_down gpu0, gpu1; p2p_corrupts; bar1_small gpu0, gpu1; then the info. */
    assert_true(n >= 6);
    assert_string_equal(g_found[0].rule, "nvlink_down");
    assert_non_null(strstr(g_found[0].what, "gpu0"));
    assert_string_equal(g_found[1].rule, "nvlink_down");
    assert_non_null(strstr(g_found[1].what, "gpu1"));
    assert_string_equal(g_found[2].rule, "p2p_corrupts");
    assert_string_equal(g_found[3].rule, "bar1_small");
    assert_non_null(strstr(g_found[3].what, "gpu0"));
    assert_string_equal(g_found[4].rule, "bar1_small");
    assert_non_null(strstr(g_found[4].what, "gpu1"));
    assert_string_equal(g_found[n - 1].rule, "not_checked_vm");
    psc_facts_free(f);
}

/* Each reason branch, in the order the facts decide it. */
static void test_p2p_reason_branches(void **state)
{
    static const char *const nvml[] = {NULL, "chipset does not support", "does not allow P2P on this GPU model",
                                       "IOH topology", "registry key", "reports P2P not supported"};
    psc_facts_t *f = machine(2, "NVIDIA L4", 24ull << 30, 32ull << 30, PSC_PATH_SYS, 0);
    char why[256];

    (void)state;
    f->gpu[0].mig = 1;
    assert_non_null(strstr(psc_p2p_reason(f, 0, 1, why, sizeof(why)), "MIG is on for GPU 0"));
    f->gpu[0].mig = 0;
    for (int s = 1; s <= 5; s++) {
        f->pair[0][1].nvml_p2p_read = s;
        assert_non_null(strstr(psc_p2p_reason(f, 0, 1, why, sizeof(why)), nvml[s]));
    }
    f->pair[0][1].nvml_p2p_read = 0; /* NVML: OK, or not asked */
    assert_non_null(strstr(psc_p2p_reason(f, 0, 1, why, sizeof(why)), "different CPU sockets (SYS)"));
    f->pair[0][1].path = PSC_PATH_NODE;
    assert_non_null(strstr(psc_p2p_reason(f, 0, 1, why, sizeof(why)), "the driver says no and gives no reason"));
    f->pair[0][1].can_access = -1; /* not measured */
    assert_non_null(strstr(psc_p2p_reason(f, 0, 1, why, sizeof(why)), "not measured"));
    /* In a VM the hypervisor is the reason, except on NVLink. */
    f->pair[0][1].can_access = 0;
    f->host.hypervisor = 1;
    assert_non_null(strstr(psc_p2p_reason(f, 0, 1, why, sizeof(why)), "inside a VM"));
    f->pair[0][1].path = PSC_PATH_NVLINK;
    f->pair[0][1].nvlinks = 4;
    assert_null(strstr(psc_p2p_reason(f, 0, 1, why, sizeof(why)), "inside a VM"));
    assert_non_null(strstr(why, "the driver says no"));
    /* Out of range or the same GPU: empty. */
    assert_string_equal(psc_p2p_reason(f, 0, 2, why, sizeof(why)), "");
    assert_string_equal(psc_p2p_reason(f, 1, 1, why, sizeof(why)), "");
    psc_facts_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rtx4090_box_before_fix), cmocka_unit_test(test_rtx4090_box_after_fix),
        cmocka_unit_test(test_iommu_passthrough_is_fine), cmocka_unit_test(test_acs_redirect_between_peers),
        cmocka_unit_test(test_pcie_link_below_max),    cmocka_unit_test(test_nvlink_down_and_missing),
        cmocka_unit_test(test_p2p_inconsistent_and_corrupt), cmocka_unit_test(test_p2p_reasons),
        cmocka_unit_test(test_numa_clocks_vm),          cmocka_unit_test(test_recorded_dgx2_is_clean),
        cmocka_unit_test(test_capacity_is_respected), cmocka_unit_test(test_recorded_h200_vm),
        cmocka_unit_test(test_clean_machine_has_no_findings),
        cmocka_unit_test(test_bar1_severity),          cmocka_unit_test(test_iommu_cmdline_passthrough),
        cmocka_unit_test(test_acs_completion_redirect_and_nvlink), cmocka_unit_test(test_pcie_gen_reasons_unknown),
        cmocka_unit_test(test_nvlink_all_down),
        cmocka_unit_test(test_nvlink_missing_alone),
        cmocka_unit_test(test_numa_unknown_severity),
        cmocka_unit_test(test_clock_reason_bits),      cmocka_unit_test(test_order_within_severity),
        cmocka_unit_test(test_p2p_reason_branches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
