/*
 * p2pscope ipc on real GPUs: psc_ipc_run starts this binary again as its
 * workers (argv[1] PSC_IPC_WORKER_ARG). Two workers: on GPUs 0 and 1, or
 * both on GPU 0 on a machine with one. Every method that runs here moves the
 * right bytes both ways by copy engine and SM kernel, its round trips
 * cross, a VMM import is mapped for the importer's GPU only; a wrong byte
 * fails its pair naming the place; a worker killed mid-run ends the run
 * naming it, in bounded time, with every worker reaped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../unit/process_checks.h"
#include "gpu_common.h"

static int g_dev[2];

static psc_ipc_opts_t small_opts(void)
{
    psc_ipc_opts_t o;

    psc_ipc_opts_default(&o);
    o.measure = psc_test_opts((8u << 20) + 3); /* a tail the SM kernel copies byte by byte */
    o.round_trips = 2000;
    o.timeout_ms = 30000;
    return o;
}

static double now_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void test_every_method(void **state)
{
    psc_ipc_opts_t o = small_opts();
    psc_ipc_report_t *r = NULL;
    int legacy = 0, vmm = 0;

    (void)state;
    if (psc_ipc_run(g_ctx, g_dev, 2, &o, &r) != PSC_OK)
        fail_msg("psc_ipc_run: %s", psc_context_last_error(g_ctx));
    psc_test_assert_no_children();
    assert_int_equal(r->nranks, 2);
    assert_true(r->pid[0] > 0 && r->pid[1] > 0 && r->pid[0] != r->pid[1] && r->pid[0] != getpid());
    assert_true(r->methods[PSC_SHARE_LEGACY - 1].available);
    assert_true(r->methods[PSC_SHARE_VMM_FD - 1].available);
    if (!r->methods[PSC_SHARE_VMM_FABRIC - 1].available) /* no IMEX channel here: said why */
        assert_true(strlen(r->methods[PSC_SHARE_VMM_FABRIC - 1].reason) > 10);
    for (int i = 0; i < r->npairs; i++) {
        const psc_ipc_pair_t *p = &r->pairs[i];

        print_message("%s %d<-%d: ce_write %.1f (%.1f) GB/s, sm_read %.1f GB/s, rtt p50 %.0f ns (%.0f), import %.0f us, "
                      "map %.0f us, first touch %.0f us\n", psc_ipc_method_name(p->method), p->gpu_importer,
                      p->gpu_exporter, p->bw[PSC_IPC_CE_WRITE].stats.median, p->bw_local[PSC_IPC_CE_WRITE].stats.median,
                      p->bw[PSC_IPC_SM_READ].stats.median, p->rtt_ns.p50, p->rtt_local_ns.p50, p->import_us, p->map_us,
                      p->first_touch_us);
        if (p->status != PSC_RESULT_PASSED)
            fail_msg("%s pair %d<-%d: %s", psc_ipc_method_name(p->method), p->importer, p->exporter, p->reason);
        legacy += p->method == PSC_SHARE_LEGACY;
        vmm += p->method == PSC_SHARE_VMM_FD;
        for (int k = 0; k < PSC_IPC_NBW; k++) {
            assert_int_equal(p->bw[k].status, PSC_RESULT_PASSED);
            assert_true(p->bw[k].verify.checked > 0 && p->bw[k].verify.bad_bytes == 0);
            assert_true(p->bw[k].stats.median > 0);
            assert_int_equal(p->bw_local[k].status, PSC_RESULT_PASSED);
            assert_true(p->bw_local[k].stats.median > 0);
        }
        /* Two processes on one GPU take turns on it: fewer round trips there. */
        unsigned trips = p->gpu_importer == p->gpu_exporter ? 200 : o.round_trips;

        assert_true(p->rtt_ns.n == trips && p->rtt_ns.p50 > 0 && p->rtt_ns.p99 >= p->rtt_ns.p50);
        assert_true(p->rtt_local_ns.n == trips && p->rtt_local_ns.p50 > 0);
        assert_true(p->import_us > 0 && p->first_touch_us > 0 && p->touch_us > 0 && p->release_us > 0);
        assert_true(p->naccess == psc_device_count(g_ctx));
        assert_int_equal(p->access[p->gpu_importer], PSC_ACCESS_READWRITE);
        for (int g = 0; g < p->naccess; g++)
            if (g != p->gpu_importer) /* mapped for the importer's GPU only */
                assert_int_equal(p->access[g], p->method == PSC_SHARE_LEGACY ? PSC_IPC_ACCESS_NOT_ASKED : PSC_ACCESS_NONE);
        if (p->method == PSC_SHARE_LEGACY)
            assert_true(p->map_us == 0);
        else
            assert_true(p->map_us > 0);
    }
    assert_int_equal(legacy, 2);
    assert_int_equal(vmm, 2);
    psc_ipc_report_free(r);
}

static void test_wrong_byte_named(void **state)
{
    psc_ipc_opts_t o = small_opts();
    psc_ipc_report_t *r = NULL;

    (void)state;
    o.methods = 1u << PSC_SHARE_VMM_FD;
    o.bw = 1u << PSC_IPC_SM_WRITE;
    o.no_local = 1;
    setenv("P2PSCOPE_TEST_CORRUPT_OFFSET", "4099", 1);
    assert_int_equal(psc_ipc_run(g_ctx, g_dev, 2, &o, &r), PSC_OK);
    unsetenv("P2PSCOPE_TEST_CORRUPT_OFFSET");
    assert_int_equal(r->npairs, 2);
    for (int i = 0; i < r->npairs; i++) {
        assert_int_equal(r->pairs[i].status, PSC_RESULT_FAILED);
        assert_int_equal(r->pairs[i].bw[PSC_IPC_SM_WRITE].verify.first_bad_offset, 4099);
        if (!strstr(r->pairs[i].reason, "sm_write") || !strstr(r->pairs[i].reason, "offset 4099"))
            fail_msg("reason: %s", r->pairs[i].reason);
        assert_int_equal(r->pairs[i].bw_local[PSC_IPC_SM_WRITE].status, PSC_RESULT_WAIVED);
    }
    psc_ipc_report_free(r);
    psc_test_assert_no_children();
}

static void test_killed_worker_named(void **state)
{
    psc_ipc_opts_t o = small_opts();
    psc_ipc_report_t *r = NULL;
    double t0;
    char die[16];
    psc_status_t st;

    (void)state;
    o.methods = 1u << PSC_SHARE_VMM_FD;
    o.no_local = 1;
    o.timeout_ms = 20000;
    snprintf(die, sizeof(die), "1:%d", 4); /* worker 1, at its first copy */
    setenv("P2PSCOPE_TEST_IPC_DIE", die, 1);
    t0 = now_ms();
    st = psc_ipc_run(g_ctx, g_dev, 2, &o, &r);
    unsetenv("P2PSCOPE_TEST_IPC_DIE");
    assert_int_equal(st, PSC_ERR_IO);
    assert_null(r);
    if (!strstr(psc_context_last_error(g_ctx), "worker 1") || !strstr(psc_context_last_error(g_ctx), "signal 9"))
        fail_msg("error: %s", psc_context_last_error(g_ctx));
    assert_true(now_ms() - t0 < o.timeout_ms); /* noticed by its end, not by a timeout */
    psc_test_assert_no_children();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_method),
        cmocka_unit_test(test_wrong_byte_named),
        cmocka_unit_test(test_killed_worker_named),
    };
    psc_status_t st;
    int rc;

    if (argc >= 2 && strcmp(argv[1], PSC_IPC_WORKER_ARG) == 0)
        return psc_ipc_worker_main();
    g_ctx = psc_test_open(&st);
    if (!g_ctx)
        return psc_test_skippable(st) ? PSC_TEST_SKIP : 1;
    g_dev[0] = 0;
    g_dev[1] = psc_device_count(g_ctx) > 1 ? 1 : 0;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    psc_context_destroy(g_ctx);
    return rc;
}
