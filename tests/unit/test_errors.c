/*
 * One error discipline, through the fake driver (no GPU needed):
 * - every failing call with a context records its own reason: after a driver
 *   error is on record, each entry given a bad argument replaces it with a line
 *   that names that argument and what is accepted;
 * - outputs only on success: a failed psc_facts_load leaves the facts byte for
 *   byte as they were, out of memory included;
 * - psc_doctor's count does not depend on cap or on memory;
 * - cuInit failures are classified (no device, no usable driver, driver error,
 *   out of memory) in the library's status and the CLI's exit code and line.
 * Allocation failures are injected with the linker's --wrap (CMakeLists.txt).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "p2pscope.h"
#include "p2pscope/bench.h"
#include "p2pscope_private.h"

/* Set while an allocation failure is wanted: every malloc, calloc and realloc of the library fails. */
static int g_fail_alloc;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t k);
void *__real_realloc(void *p, size_t n);

void *__wrap_malloc(size_t n)
{
    return g_fail_alloc ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t k)
{
    return g_fail_alloc ? NULL : __real_calloc(n, k);
}

void *__wrap_realloc(void *p, size_t n)
{
    return g_fail_alloc ? NULL : __real_realloc(p, n);
}

#define STALE "cuDevicePrimaryCtxRetain"

static psc_context_t *g_ctx;

static int setup_ctx(void **state)
{
    char err[256] = "";

    (void)state;
    setenv("FAKE_CUDA_MODE", "gpus", 1);
    setenv("FAKE_CUDA_COUNT", "2", 1);
    if (psc_context_create(&g_ctx, err, sizeof(err)) != PSC_OK) {
        fprintf(stderr, "fake context: %s\n", err);
        return -1;
    }
    return 0;
}

static int teardown_ctx(void **state)
{
    (void)state;
    psc_context_destroy(g_ctx);
    g_ctx = NULL;
    return 0;
}

/* A driver error on record: the fake GPUs cannot make a context. */
static void provoke_stale(void)
{
    double g, h;

    assert_int_equal(psc_timer_resolution(g_ctx, 0, &g, &h), PSC_ERR_DRIVER);
    assert_non_null(strstr(psc_context_last_error(g_ctx), STALE));
}

/* The call failed with st, and the record names want, not the stale driver error. */
static void expect_reason(psc_status_t got, psc_status_t st, const char *want)
{
    const char *e = psc_context_last_error(g_ctx);

    if (got != st || !strstr(e, want) || strstr(e, STALE))
        fprintf(stderr, "status %d, last error: %s (wanted %d, \"%s\")\n", got, e, st, want);
    assert_int_equal(got, st);
    assert_non_null(strstr(e, want));
    assert_null(strstr(e, STALE));
}

static void test_inventory_entries_name_their_argument(void **state)
{
    psc_device_info_t d;
    uint64_t tx[PSC_MAX_NVLINKS], rx[PSC_MAX_NVLINKS];
    double g, h;
    int n = 0;

    (void)state;
    provoke_stale();
    expect_reason(psc_system_info(g_ctx, NULL), PSC_ERR_INVALID, "psc_system_info: out is NULL");
    provoke_stale();
    expect_reason(psc_device_info(g_ctx, 7, &d), PSC_ERR_INVALID, "GPU 7 does not exist (accepted: 0..1)");
    provoke_stale();
    expect_reason(psc_device_info(g_ctx, -1, &d), PSC_ERR_INVALID, "GPU -1 does not exist (accepted: 0..1)");
    provoke_stale();
    expect_reason(psc_device_info(g_ctx, 1, NULL), PSC_ERR_INVALID, "psc_device_info: out is NULL");
    provoke_stale();
    expect_reason(psc_nvlink_counters(g_ctx, 9, tx, rx, &n), PSC_ERR_INVALID, "GPU 9 does not exist (accepted: 0..1)");
    provoke_stale();
    expect_reason(psc_nvlink_counters(g_ctx, 0, tx, NULL, &n), PSC_ERR_INVALID, "rx_bytes is NULL");
    provoke_stale();
    /* No NVML here (P2PSCOPE_LIBNVML points nowhere): not supported, and why. */
    expect_reason(psc_nvlink_counters(g_ctx, 1, tx, rx, &n), PSC_ERR_UNSUPPORTED, "NVLink counters of GPU 1: NVML");
    assert_int_equal(n, 0); /* untouched */
    provoke_stale();
    expect_reason(psc_facts_gather(g_ctx, NULL), PSC_ERR_INVALID, "psc_facts_gather: facts is NULL");
    provoke_stale();
    expect_reason(psc_timer_resolution(g_ctx, 5, &g, &h), PSC_ERR_INVALID, "GPU 5 does not exist (accepted: 0..1)");
    provoke_stale();
    expect_reason(psc_timer_resolution(g_ctx, 1, NULL, &h), PSC_ERR_INVALID, "gpu_ns is NULL");
}

static void test_lat_run_names_its_argument(void **state)
{
    psc_lat_result_t *r = malloc(sizeof(*r));
    psc_lat_test_t peer, local;
    psc_lat_opts_t o;
    psc_lat_case_t c;
    const struct {
        const char *field;
        const char *want;
    } bad[] = {
        {"test", "latency test -1 does not exist"},  {"issuer", "issuer GPU 6 does not exist (accepted: 0..1)"},
        {"samples", "samples 0 (accepted: 1 to 100000)"}, {"hops", "hops 0"},
        {"copies", "copies 0"},                      {"timeout", "timeout_ms 0 (accepted: 1 or more)"},
        {"src", "source GPU 4 does not exist"},      {"dst", "destination GPU 3 does not exist"},
        {"same", "both ends are GPU 1"},
    };

    (void)state;
    assert_non_null(r);
    assert_int_equal(psc_lat_test_from_name("gpu_to_gpu_chase", &peer), PSC_OK);
    assert_int_equal(psc_lat_test_from_name("local_chase", &local), PSC_OK);
    memset(r, 0x5a, sizeof(*r));
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        const char *f = bad[k].field;

        psc_lat_opts_default(&o);
        c = (psc_lat_case_t){peer, 0, 1, 1};
        if (!strcmp(f, "test"))
            c.test = -1;
        else if (!strcmp(f, "issuer"))
            c = (psc_lat_case_t){local, 6, 6, 6};
        else if (!strcmp(f, "samples"))
            o.samples = 0;
        else if (!strcmp(f, "hops"))
            o.hops = 0;
        else if (!strcmp(f, "copies"))
            o.copies = 0;
        else if (!strcmp(f, "timeout"))
            o.timeout_ms = 0;
        else if (!strcmp(f, "src"))
            c.src = 4;
        else if (!strcmp(f, "dst"))
            c.dst = 3;
        else
            c.src = c.dst = 1;
        provoke_stale();
        expect_reason(psc_lat_run(g_ctx, &c, &o, r), PSC_ERR_INVALID, bad[k].want);
    }
    provoke_stale();
    expect_reason(psc_lat_run(g_ctx, &c, NULL, r), PSC_ERR_INVALID, "no lat options given");
    /* Not one byte of the result written by a call that failed. */
    for (size_t i = 0; i < sizeof(*r); i++)
        assert_int_equal(((unsigned char *)r)[i], 0x5a);
    free(r);
}

/*
 * The benchmark entries (bw, lat cases, verify, load) live in src/lib/xfer,
 * src/lib/verify and src/lib/lat/registry.c, whose error returns another part
 * of issue 12 fixes; this test holds them to the same rule once that is merged.
 */
#ifndef PSC_TEST_BENCH_ERRORS
#define PSC_TEST_BENCH_ERRORS 1
#endif

static void test_bench_entries_name_their_argument(void **state)
{
    psc_bw_result_t *r;
    psc_verify_result_t *v;
    psc_measure_opts_t m;
    psc_verify_opts_t vo;
    psc_bw_case_t c;
    psc_bw_test_t t;
    psc_lat_test_t lt;
    psc_load_t *load = NULL;
    size_t n = 0;
    int devs[2] = {0, 5};

    (void)state;
    if (!PSC_TEST_BENCH_ERRORS)
        skip();
    r = malloc(sizeof(*r));
    v = malloc(sizeof(*v));
    assert_non_null(r);
    assert_non_null(v);
    assert_int_equal(psc_bw_test_from_name("gpu_to_gpu_write_ce", &t), PSC_OK);
    assert_int_equal(psc_lat_test_from_name("gpu_to_gpu_chase", &lt), PSC_OK);
    assert_int_equal(psc_bw_cases(g_ctx, t, NULL, 0, &c, 1, &n), PSC_OK);
    psc_measure_opts_default(&m);
    psc_verify_opts_default(&vo);

    provoke_stale();
    expect_reason(psc_bw_cases(g_ctx, t, devs, 2, NULL, 0, &n), PSC_ERR_INVALID, "GPU 5");
    provoke_stale();
    expect_reason(psc_lat_cases(g_ctx, lt, devs, 2, NULL, 0, &n), PSC_ERR_INVALID, "GPU 5");
    provoke_stale();
    c.xfer[0].issuer = 8; /* the transfer's issuer drives the run */
    expect_reason(psc_bw_run(g_ctx, &c, &m, r), PSC_ERR_INVALID, "issuing GPU 8");
    provoke_stale();
    c.xfer[0].issuer = c.xfer[0].src;
    m.samples = 0;
    expect_reason(psc_bw_run(g_ctx, &c, &m, r), PSC_ERR_INVALID, "samples");
    provoke_stale();
    c.xfer[0].dst = 6;
    expect_reason(psc_verify_run(g_ctx, &c, &vo, v), PSC_ERR_INVALID, "6");
    provoke_stale();
    expect_reason(psc_load_start(g_ctx, devs, 2, &load), PSC_ERR_INVALID, "GPU 5");
    assert_null(load);
    free(r);
    free(v);
}

/* ---------------------------------------------------------------- outputs only on success */

static psc_facts_t *g_snap;
static char *g_snap_xml;

static void snapshot(const psc_facts_t *f)
{
    g_snap = malloc(sizeof(*g_snap));
    assert_non_null(g_snap);
    memcpy(g_snap, f, sizeof(*f));
    g_snap_xml = f->hwloc_xml ? strdup(f->hwloc_xml) : NULL;
}

static void assert_unchanged(const psc_facts_t *f)
{
    assert_memory_equal(f, g_snap, sizeof(*f));
    if (g_snap_xml)
        assert_string_equal(f->hwloc_xml, g_snap_xml);
}

static void snapshot_free(void)
{
    free(g_snap);
    free(g_snap_xml);
    g_snap = NULL;
    g_snap_xml = NULL;
}

static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "rb");
    char *text;
    long len;

    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    len = ftell(fp);
    rewind(fp);
    text = malloc((size_t)len + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)len, fp), (size_t)len);
    text[len] = '\0';
    fclose(fp);
    return text;
}

static void spill(const char *path, const char *text)
{
    FILE *fp = fopen(path, "wb");

    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void test_failed_load_leaves_facts_alone(void **state)
{
    char dir[] = "/tmp/psc-errors-XXXXXX", json[64], xml[64], fifo[64], err[512];
    psc_facts_t *f = psc_facts_new();
    char *good, *bad = NULL, *at;
    typedef struct {
        const char *path, *want;
        psc_status_t st;
    } bad_case_t;
    bad_case_t cases[5];

    (void)state;
    assert_non_null(f);
    assert_non_null(mkdtemp(dir));
    assert_int_equal(psc_facts_load(TEST_DATA "/h200x2-nv18.json", f, err, sizeof(err)), PSC_OK);
    assert_int_equal(f->ngpu, 2);

    /* A recording that fails late: the second pair's can_access is a string. */
    good = slurp(TEST_DATA "/h200x2-nv18.json");
    at = strstr(good, "\"can_access\": 1");
    assert_non_null(at);
    at = strstr(at + 1, "\"can_access\": 1");
    assert_non_null(at);
    assert_true(asprintf(&bad, "%.*s\"can_access\": \"yes\"%s", (int)(at - good), good, at + 15) > 0);
    snprintf(json, sizeof(json), "%s/bad.json", dir);
    spill(json, bad);
    snprintf(xml, sizeof(xml), "%s/bad.xml", dir);
    spill(xml, "<?xml version=\"1.0\"?>\n<topology version=\"2.0\"><object type=\"Machine\"");
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    cases[0] = (bad_case_t){json, "can_access", PSC_ERR_INVALID};
    cases[1] = (bad_case_t){xml, "bad.xml: not an hwloc XML topology", PSC_ERR_IO}; /* hwloc refused it */
    cases[2] = (bad_case_t){fifo, "a FIFO", PSC_ERR_INVALID};
    cases[3] = (bad_case_t){"/nonexistent/rec.json", "no such file", PSC_ERR_IO};
    cases[4] = (bad_case_t){"", "no recording given", PSC_ERR_INVALID};

    snapshot(f);
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        psc_status_t st = psc_facts_load(cases[k].path, f, err, sizeof(err));

        if (st != cases[k].st || !strstr(err, cases[k].want))
            fprintf(stderr, "%s: status %d: %s\n", cases[k].path, st, err);
        assert_int_equal(st, cases[k].st);
        assert_non_null(strstr(err, cases[k].want));
        assert_unchanged(f);
    }
    /* Out of host memory: the scratch object cannot be made; nothing written either. */
    g_fail_alloc = 1;
    assert_int_equal(psc_facts_load(TEST_DATA "/pcie-two-sockets.xml", f, err, sizeof(err)), PSC_ERR_NO_MEMORY);
    g_fail_alloc = 0;
    assert_non_null(strstr(err, "out of host memory"));
    assert_unchanged(f);
    snapshot_free();

    unlink(json);
    unlink(xml);
    unlink(fifo);
    rmdir(dir);
    free(good);
    free(bad);
    psc_facts_free(f);
}

/* A load replaces the facts whole: nothing of an earlier recording survives into the next. */
static void test_load_replaces_not_merges(void **state)
{
    psc_facts_t *f = psc_facts_new(), *fresh = psc_facts_new();
    char err[512];

    (void)state;
    assert_non_null(f);
    assert_non_null(fresh);
    assert_int_equal(psc_facts_load(TEST_DATA "/h200x2-nv18.json", f, err, sizeof(err)), PSC_OK);
    assert_int_equal(f->pair[0][1].can_access, 1);
    assert_int_equal(psc_facts_load(TEST_DATA "/pcie-two-sockets.xml", f, err, sizeof(err)), PSC_OK);
    assert_int_equal(psc_facts_load(TEST_DATA "/pcie-two-sockets.xml", fresh, err, sizeof(err)), PSC_OK);
    /* An hwloc recording knows no driver facts: unknown, as in a fresh object. */
    assert_int_equal(f->pair[0][1].can_access, -1);
    assert_int_equal(f->has_driver, 0);
    assert_int_equal(f->ngpu, fresh->ngpu);
    assert_memory_equal(f->gpu, fresh->gpu, sizeof(f->gpu));
    assert_memory_equal(f->pair, fresh->pair, sizeof(f->pair));
    assert_memory_equal(&f->host, &fresh->host, sizeof(f->host));
    psc_facts_free(f);
    psc_facts_free(fresh);
}

/* Calls without a context name the bad argument in their errbuf. */
static void test_errbuf_calls_name_their_argument(void **state)
{
    psc_facts_t *f = psc_facts_new();
    char err[512];

    (void)state;
    assert_non_null(f);
    assert_int_equal(psc_facts_load(TEST_DATA "/pcie-two-sockets.xml", NULL, err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "no facts object to load into"));
    assert_int_equal(psc_facts_load(NULL, f, err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "no recording given"));
    assert_int_equal(psc_facts_save(NULL, "/tmp/psc-errors-unused.json", err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "no facts to record"));
    assert_int_equal(psc_facts_save(f, NULL, err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "no file given"));
    assert_int_equal(access("/tmp/psc-errors-unused.json", F_OK), -1);
    /* Without an errbuf the status still says it. */
    assert_int_equal(psc_facts_save(f, NULL, NULL, 0), PSC_ERR_INVALID);
    psc_facts_free(f);
}

/* Pure functions report by status only, and write nothing on failure. */
static void test_pure_functions_write_nothing_on_failure(void **state)
{
    const double v[3] = {3, 1, 2};
    psc_stats_t s, before;
    uint64_t size = 77;

    (void)state;
    memset(&s, 0x5a, sizeof(s));
    before = s;
    g_fail_alloc = 1;
    assert_int_equal(psc_stats_compute(v, 3, &s), PSC_ERR_NO_MEMORY);
    g_fail_alloc = 0;
    assert_memory_equal(&s, &before, sizeof(s));
    assert_int_equal(psc_stats_compute(v, 0, &s), PSC_ERR_INVALID);
    assert_memory_equal(&s, &before, sizeof(s));
    assert_int_equal(psc_size_parse("2 TiB", &size), PSC_ERR_INVALID);
    assert_int_equal(psc_size_parse("0", &size), PSC_ERR_INVALID);
    assert_int_equal(size, 77);
}

/* ---------------------------------------------------------------- doctor */

/* Facts with thousands of findings: 64 GPUs, every pair's copies corrupt, BAR1 small, links narrow. */
static psc_facts_t *many_findings(void)
{
    psc_facts_t *f = psc_facts_new();

    assert_non_null(f);
    f->ngpu = PSC_MAX_GPUS;
    f->has_driver = 1;
    for (int i = 0; i < f->ngpu; i++) {
        snprintf(f->gpu[i].pci_bus_id, sizeof(f->gpu[i].pci_bus_id), "0000:%02x:00.0", i + 1);
        f->gpu[i].pcie_width = 8;
        f->gpu[i].pcie_width_max = 16;
        f->gpu[i].bar1_bytes = 256ull << 20;
        f->gpu[i].memory_bytes = 80ull << 30;
        for (int j = 0; j < f->ngpu; j++)
            if (i != j) {
                f->pair[i][j].path = PSC_PATH_PXB;
                f->pair[i][j].can_access = 1;
                f->pair[i][j].integrity = 0;
            }
    }
    return f;
}

static void test_doctor_count_is_stable(void **state)
{
    psc_facts_t *f = many_findings();
    size_t total = psc_doctor(f, NULL, 0), small_n, under_oom;
    psc_finding_t *all, small[10];

    (void)state;
    /* Far more than any first allocation would hold: every corrupt pair is one finding. */
    assert_true(total >= (size_t)PSC_MAX_GPUS * (PSC_MAX_GPUS - 1));
    all = calloc(total, sizeof(*all));
    assert_non_null(all);
    assert_int_equal(psc_doctor(f, all, total), total);
    small_n = psc_doctor(f, small, 10);
    assert_int_equal(small_n, total);
    assert_memory_equal(small, all, sizeof(small));
    for (size_t k = 1; k < total; k++)
        assert_true(all[k - 1].severity >= all[k].severity);
    assert_int_equal(all[total - 1].severity == PSC_SEV_ERROR, 0); /* the infos and warnings come last */

    /* With no memory to be had, the same count and the same findings. */
    memset(small, 0, sizeof(small));
    g_fail_alloc = 1;
    under_oom = psc_doctor(f, small, 10);
    g_fail_alloc = 0;
    assert_int_equal(under_oom, total);
    assert_memory_equal(small, all, sizeof(small));
    free(all);
    psc_facts_free(f);
}

/* ---------------------------------------------------------------- cuInit classes */

static const struct {
    const char *mode;
    psc_status_t st;
    int exit_code;
    const char *want;
} g_init_classes[] = {
    {"init:100", PSC_ERR_NO_DEVICE, 3, "no GPU: the CUDA driver sees no device"},
    {"init:803", PSC_ERR_NO_DRIVER, 3, "no usable NVIDIA driver: cuInit failed: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
    {"init:36", PSC_ERR_NO_DRIVER, 3, "no usable NVIDIA driver: cuInit failed: CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER"},
    {"init:804", PSC_ERR_NO_DRIVER, 3,
     "no usable NVIDIA driver: cuInit failed: CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
    {"init:3", PSC_ERR_NO_DRIVER, 3, "no usable NVIDIA driver: cuInit failed: CUDA_ERROR_NOT_INITIALIZED"},
    {"init:304", PSC_ERR_DRIVER, 3, "the CUDA driver failed to start: cuInit failed: CUDA_ERROR_OPERATING_SYSTEM"},
    {"init:2", PSC_ERR_NO_MEMORY, 4, "out of memory: cuInit failed: CUDA_ERROR_OUT_OF_MEMORY"},
};

static void test_cuinit_classes_in_the_library(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof(g_init_classes) / sizeof(g_init_classes[0]); k++) {
        psc_context_t *ctx = NULL;
        char err[256] = "";
        psc_status_t st;

        setenv("FAKE_CUDA_MODE", g_init_classes[k].mode, 1);
        st = psc_context_create(&ctx, err, sizeof(err));
        if (st != g_init_classes[k].st || !strstr(err, g_init_classes[k].want))
            fprintf(stderr, "%s: status %d: %s\n", g_init_classes[k].mode, st, err);
        assert_int_equal(st, g_init_classes[k].st);
        assert_non_null(strstr(err, g_init_classes[k].want));
        assert_null(ctx);
    }
    setenv("FAKE_CUDA_MODE", "gpus", 1);
}

/* The binary's exit code and its one line on stderr, with FAKE_CUDA_MODE=mode. */
static int run_cli(const char *mode, char *err, size_t errlen)
{
    char path[] = "/tmp/psc-errors-err-XXXXXX", mode_env[64];
    int fd = mkstemp(path), status = 0;
    ssize_t n;
    pid_t pid;

    assert_true(fd >= 0);
    unlink(path);
    snprintf(mode_env, sizeof(mode_env), "FAKE_CUDA_MODE=%s", mode);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);

        putenv(mode_env);
        dup2(null, 1);
        dup2(fd, 2);
        execl(P2PSCOPE_BIN, P2PSCOPE_BIN, "devices", (char *)NULL);
        _exit(127);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    lseek(fd, 0, SEEK_SET);
    n = read(fd, err, errlen - 1);
    err[n > 0 ? n : 0] = '\0';
    close(fd);
    return WEXITSTATUS(status);
}

static void test_cuinit_classes_in_the_cli(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof(g_init_classes) / sizeof(g_init_classes[0]); k++) {
        char err[1024];
        int rc = run_cli(g_init_classes[k].mode, err, sizeof(err));
        const char *nl = strchr(err, '\n');

        if (rc != g_init_classes[k].exit_code || !strstr(err, g_init_classes[k].want))
            fprintf(stderr, "%s: exit %d: %s", g_init_classes[k].mode, rc, err);
        assert_int_equal(rc, g_init_classes[k].exit_code);
        assert_non_null(strstr(err, g_init_classes[k].want));
        assert_true(strncmp(err, "p2pscope: ", 10) == 0);
        assert_true(nl && nl[1] == '\0'); /* one line */
    }
}

int main(void)
{
    const struct CMUnitTest with_ctx[] = {
        cmocka_unit_test(test_inventory_entries_name_their_argument),
        cmocka_unit_test(test_lat_run_names_its_argument),
        cmocka_unit_test(test_bench_entries_name_their_argument),
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failed_load_leaves_facts_alone),
        cmocka_unit_test(test_load_replaces_not_merges),
        cmocka_unit_test(test_errbuf_calls_name_their_argument),
        cmocka_unit_test(test_pure_functions_write_nothing_on_failure),
        cmocka_unit_test(test_doctor_count_is_stable),
        cmocka_unit_test(test_cuinit_classes_in_the_library),
        cmocka_unit_test(test_cuinit_classes_in_the_cli),
    };
    int failed;

    setenv("P2PSCOPE_LIBCUDA", FAKE_LIBCUDA, 1);
    setenv("P2PSCOPE_LIBNVML", "/nonexistent/libnvidia-ml.so.1", 1);
    unsetenv("P2PSCOPE_LOG");
    failed = cmocka_run_group_tests_name("context calls", with_ctx, setup_ctx, teardown_ctx);
    return failed + cmocka_run_group_tests_name("outputs and classes", tests, NULL, NULL);
}
