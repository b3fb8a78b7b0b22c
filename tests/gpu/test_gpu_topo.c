/*
 * Topology facts, the doctor and NVLink counters on the real machine: the
 * facts are complete where the driver gives them, pairs joined by NVLink say
 * so with the right count, the doctor finds no error on a healthy machine,
 * a recording replays to the same paths, and NVLink counters see a copy.
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

#include "gpu_common.h"

static void test_live_facts(void **state)
{
    psc_facts_t *f = psc_facts_new();
    char label[16];

    (void)state;
    assert_int_equal(psc_facts_gather(g_ctx, f), PSC_OK);
    assert_int_equal(f->ngpu, psc_device_count(g_ctx));
    assert_true(f->has_driver);
    assert_non_null(f->hwloc_xml);
    for (int i = 0; i < f->ngpu; i++) {
        const psc_gpu_facts_t *g = &f->gpu[i];
        int up = 0;

        printf("  gpu%d: BAR1 %llu MiB, PCIe Gen%d x%d (max Gen%d x%d), NUMA %d, CPUs %s, %d NVLinks, virt %d\n", i,
               (unsigned long long)(g->bar1_bytes >> 20), g->pcie_gen, g->pcie_width, g->pcie_gen_max,
               g->pcie_width_max, g->numa_node, g->cpuset, g->nvlink_count, g->virt_mode);
        assert_true(g->bar1_bytes > 0);
        assert_in_range(g->pcie_gen, 1, 7);
        assert_in_range(g->pcie_width, 1, 32);
        assert_true(g->pcie_gen_max >= 1 && g->pcie_width_max >= 1);
        assert_true(strlen(g->cpuset) > 0);
        assert_in_range(g->ecc, 0, 1);
        assert_in_range(g->mig, 0, 1);
        assert_true(g->nvlink_count >= 0);
        for (int l = 0; l < g->nvlink_count; l++) {
            if (g->nvlinks[l].active != 1)
                continue;
            up++;
            assert_true(g->nvlinks[l].speed_gbs > 0);
            assert_true(g->nvlinks[l].version >= 1);
            /* Every active link names its far end; an NVSwitch the VM hides has no address. */
            assert_true(strlen(g->nvlinks[l].remote_bus_id) > 0 || g->nvlinks[l].remote == PSC_REMOTE_SWITCH);
            assert_true(g->nvlinks[l].remote != PSC_REMOTE_UNKNOWN);
        }
        for (int j = 0; j < f->ngpu; j++) {
            const psc_pair_facts_t *p = &f->pair[i][j];

            if (i == j)
                continue;
            assert_in_range(p->can_access, 0, 1);
            assert_true(p->path != PSC_PATH_UNKNOWN);
            if (p->path == PSC_PATH_NVLINK) {
                int direct = 0;

                for (int l = 0; l < g->nvlink_count; l++)
                    direct += g->nvlinks[l].active == 1 && g->nvlinks[l].remote_gpu == j;
                assert_true(p->nvlinks >= direct && p->nvlinks >= 1);
            }
            printf("  gpu%d -> gpu%d: %s, P2P %d, rank %d, atomics %d\n", i, j,
                   psc_path_label(p->path, p->nvlinks, label, sizeof(label)), p->can_access, p->perf_rank,
                   p->native_atomics);
        }
        (void)up;
    }
    psc_facts_free(f);
}

static void test_doctor_and_recording(void **state)
{
    psc_facts_t *f = psc_facts_new(), *g = psc_facts_new();
    psc_finding_t v[256];
    char path[] = "/tmp/psc-live-XXXXXX.json", err[256];
    size_t n;
    int fd;

    (void)state;
    assert_int_equal(psc_facts_gather(g_ctx, f), PSC_OK);
    n = psc_doctor(f, v, 256);
    for (size_t k = 0; k < n && k < 256; k++)
        printf("  [%s] %s: %s\n", psc_severity_string(v[k].severity), v[k].rule, v[k].what);
    /* The lent machines are healthy: no finding may be an error. */
    for (size_t k = 0; k < n && k < 256; k++)
        assert_int_not_equal(v[k].severity, PSC_SEV_ERROR);
    fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(psc_facts_save(f, path, err, sizeof(err)), PSC_OK);
    assert_int_equal(psc_facts_load(path, g, err, sizeof(err)), PSC_OK);
    assert_int_equal(g->ngpu, f->ngpu);
    for (int i = 0; i < f->ngpu; i++)
        for (int j = 0; j < f->ngpu; j++) {
            assert_int_equal(g->pair[i][j].path, f->pair[i][j].path);
            assert_int_equal(g->pair[i][j].nvlinks, f->pair[i][j].nvlinks);
            assert_int_equal(g->pair[i][j].can_access, f->pair[i][j].can_access);
        }
    unlink(path);
    psc_facts_free(f);
    psc_facts_free(g);
}

static void test_nvlink_counters_see_a_copy(void **state)
{
    uint64_t tx0[PSC_MAX_NVLINKS], rx0[PSC_MAX_NVLINKS], tx1[PSC_MAX_NVLINKS], rx1[PSC_MAX_NVLINKS];
    uint64_t sent = 0, got = 0, payload;
    psc_measure_opts_t o = psc_test_opts(256ull << 20);
    psc_bw_case_t c = psc_test_case("gpu_to_gpu_write_ce", 0, 1, 0);
    psc_bw_result_t r;
    int n0 = 0, n1 = 0, m0 = 0, m1 = 0;
    psc_status_t st0, st1;

    (void)state;
    if (psc_device_count(g_ctx) < 2)
        skip();
    st0 = psc_nvlink_counters(g_ctx, 0, tx0, rx0, &n0);
    st1 = psc_nvlink_counters(g_ctx, 1, tx1, rx1, &n1);
    if (st0 == PSC_ERR_UNSUPPORTED || st1 == PSC_ERR_UNSUPPORTED)
        skip(); /* no NVML, or a GPU without NVLink: nothing to watch */
    assert_int_equal(st0, PSC_OK); /* any other error is a failure, not a skip */
    assert_int_equal(st1, PSC_OK);
    assert_int_equal(psc_bw_run(g_ctx, &c, &o, &r), PSC_OK);
    assert_int_equal(r.status, PSC_RESULT_PASSED);
    payload = r.bytes_per_sample * (o.warmup + r.nsamples);
    {
        uint64_t tx0b[PSC_MAX_NVLINKS], rx1b[PSC_MAX_NVLINKS], dummy[PSC_MAX_NVLINKS];

        assert_int_equal(psc_nvlink_counters(g_ctx, 0, tx0b, dummy, &m0), PSC_OK);
        assert_int_equal(psc_nvlink_counters(g_ctx, 1, dummy, rx1b, &m1), PSC_OK);
        for (int l = 0; l < m0; l++)
            sent += tx0b[l] - tx0[l];
        for (int l = 0; l < m1; l++)
            got += rx1b[l] - rx1[l];
    }
    printf("  payload %.1f MB; gpu0 NVLink tx %.1f MB, gpu1 NVLink rx %.1f MB\n", payload / 1e6, sent / 1e6,
           got / 1e6);
    /* Writes gpu0 -> gpu1: gpu0 sends and gpu1 receives at least the payload; headers may add a little. */
    assert_true(sent >= payload * 95 / 100 && sent <= payload * 2);
    assert_true(got >= payload * 95 / 100 && got <= payload * 2);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_live_facts),
    cmocka_unit_test(test_doctor_and_recording),
    cmocka_unit_test(test_nvlink_counters_see_a_copy),
};

PSC_GPU_TEST_MAIN(tests)
