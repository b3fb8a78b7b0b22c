/*
 * The fake driver runs p2pscope's kernels (fake_kernels.c), so the real
 * measurement code runs end to end without a GPU: bandwidth cases pass with
 * every destination checked, a corrupted byte fails the case naming its
 * offset, the GPU <-> GPU flag latency passes, flag kernels that get no
 * answer end with their error instead of hanging, and a ping and a pong
 * meet through memory one process exports and another imports (a VMM
 * descriptor or fabric handle, a legacy IPC handle).
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_context.h"
#include "pattern/pattern.h"
#include "test_hooks.h"
#include "xfer/bw_oneway.h"
#include "xfer/copy.h"

static void (*fake_run_copies)(int);
static void *(*fake_primary)(int);
static void *(*fake_current)(void);
static void (*fake_set_current)(void *);
static void (*fake_vmm_fabric)(int);
static int (*fake_jobs_live)(void);
static CUresult (*get_proc)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

/* A driver entry point of the fake, as the library gets it. */
static void *fake_fn(const char *name)
{
    CUdriverProcAddressQueryResult st;
    void *fn = NULL;

    get_proc(name, &fn, 12000, 0, &st);
    return fn;
}

#define CU(name, type) ((type)fake_fn(#name))
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*stream_create_fn)(CUstream *, unsigned);
typedef CUresult (*stream_fn)(CUstream);
typedef CUresult (*get_function_fn)(CUfunction *, CUmodule, const char *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);

static int setup(void **state)
{
    void *h;

    psc_test_fake_driver("contexts", "2");
    if (psc_test_open_ctx(state) != 0)
        return -1;
    h = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return -1;
    *(void **)&fake_run_copies = dlsym(h, "fake_cuda_run_copies");
    *(void **)&fake_primary = dlsym(h, "fake_cuda_primary");
    *(void **)&fake_current = dlsym(h, "fake_cuda_current");
    *(void **)&fake_set_current = dlsym(h, "fake_cuda_set_current");
    *(void **)&fake_jobs_live = dlsym(h, "fake_cuda_jobs_live");
    *(void **)&fake_vmm_fabric = dlsym(h, "fake_cuda_vmm_fabric");
    *(void **)&get_proc = dlsym(h, "cuGetProcAddress_v2");
    dlclose(h);
    if (!fake_run_copies || !fake_primary || !fake_current || !fake_set_current || !fake_jobs_live || !fake_vmm_fabric || !get_proc)
        return -1;
    fake_run_copies(1);
    return 0;
}

static int teardown(void **state)
{
    fake_run_copies(0);
    return psc_test_close_ctx(state);
}

/* ------------------------------------------------------------ the real measurement code */

static void small_opts(psc_measure_opts_t *o)
{
    psc_measure_opts_default(o);
    o->size = (256u << 10) + 40; /* whole 16-byte chunks and a tail */
    o->iterations = 2;
    o->warmup = 1;
    o->samples = 3;
    o->max_samples = 3;
    o->verify = 1;
}

static void first_case(const char *test, psc_bw_case_t *c)
{
    psc_bw_case_t cases[8];
    psc_bw_test_t t;
    size_t n = 0;

    assert_int_equal(psc_bw_test_from_name(test, &t), PSC_OK);
    assert_int_equal(psc_bw_cases(g_ctx, t, NULL, 0, cases, 8, &n), PSC_OK);
    assert_true(n >= 1);
    *c = cases[0];
}

static void bw_passes_verified(void **state)
{
    static const char *const tests[] = {"gpu_to_gpu_write_ce", "gpu_to_gpu_read_sm", "gpu_local_ce",
                                        "gpu_local_read_sm", "gpu_local_write_sm", "gpu_to_gpu_read_tma",
                                        "gpu_to_gpu_write_tma"};
    psc_measure_opts_t o;

    (void)state;
    small_opts(&o);
    for (size_t k = 0; k < sizeof(tests) / sizeof(tests[0]); k++) {
        psc_bw_result_t res;
        psc_bw_case_t c;

        first_case(tests[k], &c);
        assert_int_equal(psc_bw_run(g_ctx, &c, &o, &res), PSC_OK);
        if (res.status != PSC_RESULT_PASSED)
            fail_msg("%s: %s", tests[k], res.reason);
        assert_int_equal(res.nsamples, 3);
        assert_int_equal(res.verify.checked, 3);
        assert_int_equal(res.verify.bad_bytes, 0);
        assert_true(res.stats.median > 0 && isfinite(res.stats.median));
        assert_true(res.stats.max > 0 && isfinite(res.stats.max));
    }
    assert_int_equal(fake_jobs_live(), 0);
}

/* The corruption hook flips a destination byte after each timed sample: the fake's check finds exactly it. */
static void bw_corruption_names_offset(void **state)
{
    static const int64_t offsets[] = {0, 12345, (256 << 10) + 39 /* the tail's last byte */};
    psc_measure_opts_t o;
    psc_bw_case_t c;

    (void)state;
    small_opts(&o);
    first_case("gpu_to_gpu_write_ce", &c);
    for (size_t k = 0; k < sizeof(offsets) / sizeof(offsets[0]); k++) {
        psc_test_hooks_t h;
        psc_bw_result_t res;
        char want[64];

        psc__test_hooks_default(&h);
        h.corrupt_offset = offsets[k];
        assert_int_equal(psc__test_hooks_set(g_ctx, &h), PSC_OK);
        assert_int_equal(psc_bw_run(g_ctx, &c, &o, &res), PSC_OK);
        assert_int_equal(psc__test_hooks_set(g_ctx, NULL), PSC_OK);
        assert_int_equal(res.status, PSC_RESULT_FAILED);
        assert_int_equal(res.verify.first_bad_offset, offsets[k]);
        assert_int_equal(res.verify.bad_samples, 3);
        assert_int_equal(res.verify.bad_bytes, 3);
        assert_int_equal(res.verify.found, res.verify.expected ^ 0x5A);
        snprintf(want, sizeof(want), "offset %lld", (long long)offsets[k]);
        if (!strstr(res.reason, want))
            fail_msg("reason \"%s\" does not name %s", res.reason, want);
    }
}

/*
 * The one-way local tests check what they did too: a write-only case fails at the byte flipped after its
 * stores; a read-only case, whose source the hook flips after it was read, fails when that source is read
 * again (its sum differs), and says the sum is what was wrong.
 */
static void bw_oneway_corruption(void **state)
{
    psc_measure_opts_t o;
    psc_test_hooks_t h;
    psc_bw_result_t res;
    psc_bw_case_t c;

    (void)state;
    small_opts(&o);
    psc__test_hooks_default(&h);
    h.corrupt_offset = 4097;
    first_case("gpu_local_write_sm", &c);
    assert_int_equal(psc__test_hooks_set(g_ctx, &h), PSC_OK);
    assert_int_equal(psc_bw_run(g_ctx, &c, &o, &res), PSC_OK);
    assert_int_equal(res.status, PSC_RESULT_FAILED);
    assert_int_equal(res.verify.first_bad_offset, 4097);
    assert_int_equal(res.verify.bad_samples, 3);
    assert_int_equal(res.verify.found, res.verify.expected ^ 0x5A);
    first_case("gpu_local_read_sm", &c);
    assert_int_equal(psc_bw_run(g_ctx, &c, &o, &res), PSC_OK);
    assert_int_equal(psc__test_hooks_set(g_ctx, NULL), PSC_OK);
    assert_int_equal(res.status, PSC_RESULT_FAILED);
    assert_int_equal(res.verify.checked, 3);
    assert_int_equal(res.verify.bad_samples, 1); /* rounds 1 and 2 read clean sources; round 3 round 1's flipped one */
    assert_true(res.verify.bad_bytes >= 1 && res.verify.bad_bytes <= 8);
    assert_non_null(strstr(res.reason, "the sum of the words read differs from the source pattern's in 1 of 3"));
    /* the same run without the hook passes: what failed was the flipped byte */
    assert_int_equal(psc_bw_run(g_ctx, &c, &o, &res), PSC_OK);
    assert_int_equal(res.status, PSC_RESULT_PASSED);
}

/* verify checks copies: a one-way test is refused, saying why and what is accepted. */
static void verify_refuses_oneway(void **state)
{
    psc_verify_opts_t vo;
    psc_verify_result_t *vr = calloc(1, sizeof(*vr));
    psc_bw_case_t c;

    (void)state;
    assert_non_null(vr);
    psc_verify_opts_default(&vo);
    vo.max_size = 4096;
    first_case("gpu_local_read_sm", &c);
    assert_int_equal(psc_verify_run(g_ctx, &c, &vo, vr), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "gpu_local_read_sm only reads: verify checks copies"));
    first_case("gpu_to_gpu_write_tma", &c);
    assert_int_equal(psc_verify_run(g_ctx, &c, &vo, vr), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "copies by bulk copies (TMA)"));
    first_case("gpu_local_write_sm", &c);
    assert_int_equal(psc_verify_run(g_ctx, &c, &vo, vr), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "accepted a test that copies that way"));
    first_case("gpu_local_sm", &c);
    assert_int_equal(psc_verify_run(g_ctx, &c, &vo, vr), PSC_OK);
    assert_int_equal(vr->status, PSC_RESULT_PASSED);
    free(vr);
}

/* Each test launches its own kernel: with no checks, a run's last launch is its last round's. */
static void bw_kernels_launched(void **state)
{
    static const char *const tests[][2] = {{"gpu_to_gpu_write_tma", "psc_copy_tma"},
                                           {"gpu_to_gpu_read_tma", "psc_copy_tma"},
                                           {"gpu_local_read_sm", "psc_read_u4"},
                                           {"gpu_local_write_sm", "psc_write_u4"},
                                           {"gpu_local_sm", "psc_copy_u4"}};
    const char *(*last)(void) = NULL;
    unsigned (*block)(void) = NULL;
    void *h = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
    psc_measure_opts_t o;

    (void)state;
    assert_non_null(h);
    *(void **)&last = dlsym(h, "fake_cuda_last_kernel");
    *(void **)&block = dlsym(h, "fake_cuda_last_block");
    dlclose(h);
    assert_non_null(last);
    assert_non_null(block);
    small_opts(&o);
    o.verify = 0;
    for (size_t k = 0; k < sizeof(tests) / sizeof(tests[0]); k++) {
        psc_bw_result_t res;
        psc_bw_case_t c;

        first_case(tests[k][0], &c);
        assert_int_equal(psc_bw_run(g_ctx, &c, &o, &res), PSC_OK);
        assert_int_equal(res.status, PSC_RESULT_PASSED);
        assert_string_equal(last(), tests[k][1]);
        if (strstr(tests[k][0], "_tma"))
            assert_int_equal(block(), 32); /* one thread of each block issues the bulk copies */
    }
}

/* Bulk copies (TMA) exist from compute capability 9.0: below, a case is waived naming the GPU and its own. */
static void tma_waiver_below_sm90(void **state)
{
    char why[128] = "";

    (void)state;
    assert_int_equal(psc__tma_waiver(0, 9, 0, why, sizeof(why)), 0);
    assert_string_equal(why, "");
    assert_int_equal(psc__tma_waiver(1, 10, 0, why, sizeof(why)), 0);
    assert_int_equal(psc__tma_waiver(3, 8, 9, why, sizeof(why)), 1);
    assert_string_equal(why, "bulk copies (TMA) need compute capability 9.0 or newer: GPU 3 is 8.9");
}

/* A write-only round stores the complement of the round before, every byte: each check proves its own round. */
static void oneway_rounds_differ(void **state)
{
    const uint64_t size = 4096 + 13;
    psc_expect_t e0 = psc__oneway_write_expect(size, 0), e1 = psc__oneway_write_expect(size, 1),
                 e2 = psc__oneway_write_expect(size, 2);

    (void)state;
    for (uint64_t off = 0; off < size; off++) {
        assert_int_equal(psc_expect_byte(&e0, off) ^ psc_expect_byte(&e1, off), 0xFF);
        assert_int_equal(psc_expect_byte(&e0, off), psc_expect_byte(&e2, off));
    }
    assert_int_equal(psc_expect_word(&e0, 8 * 100), 800); /* each word its own offset: cheap to make */
    assert_int_equal(psc__oneway_bytes_differ(0x1122334455667788ull, 0x1122334455667788ull), 0);
    assert_int_equal(psc__oneway_bytes_differ(0x1122334455667788ull, 0x1122334455667789ull), 1);
    assert_int_equal(psc__oneway_bytes_differ(0, ~0ull), 8);
    assert_int_equal(psc__oneway_bytes_differ(0xFF00000000000000ull, 0), 1);
}

static void lat_flag_gpu_passes(void **state)
{
    psc_lat_case_t cases[4];
    psc_lat_result_t *res = calloc(1, sizeof(*res));
    psc_lat_test_t t;
    psc_lat_opts_t o;
    size_t n = 0;

    (void)state;
    assert_non_null(res);
    assert_int_equal(psc_lat_test_from_name("gpu_gpu_flag", &t), PSC_OK);
    assert_int_equal(psc_lat_cases(g_ctx, t, NULL, 0, cases, 4, &n), PSC_OK);
    assert_true(n >= 2);
    psc_lat_opts_default(&o);
    o.samples = 4;
    o.timeout_ms = 10000;
    for (size_t k = 0; k < 2; k++) { /* both directions */
        assert_int_equal(psc_lat_run(g_ctx, &cases[k], &o, res), PSC_OK);
        if (res->status != PSC_RESULT_PASSED)
            fail_msg("%d -> %d: %s", cases[k].src, cases[k].dst, res->reason);
        assert_true(res->ns_per_cycle > 0);
        assert_int_equal(res->lat[0].n, 4 * 16);
        assert_true(res->lat[0].p50 > 0 && res->lat[0].min > 0);
    }
    assert_int_equal(fake_jobs_live(), 0);
    free(res);
}

/* ------------------------------------------------------------ the kernels, launched as the library does */

typedef struct {
    CUstream stream;
    CUfunction fill, check, flip, ping, pong;
} gpu_t;

static gpu_t gpu_open(int g)
{
    gpu_t k;

    fake_set_current(fake_primary(g));
    assert_int_equal(CU(cuStreamCreate, stream_create_fn)(&k.stream, 0), CUDA_SUCCESS);
    assert_int_equal(CU(cuModuleGetFunction, get_function_fn)(&k.fill, NULL, "psc_pattern_fill"), CUDA_SUCCESS);
    assert_int_equal(CU(cuModuleGetFunction, get_function_fn)(&k.check, NULL, "psc_pattern_check"), CUDA_SUCCESS);
    assert_int_equal(CU(cuModuleGetFunction, get_function_fn)(&k.flip, NULL, "psc_pattern_flip"), CUDA_SUCCESS);
    assert_int_equal(CU(cuModuleGetFunction, get_function_fn)(&k.ping, NULL, "psc_flag_ping"), CUDA_SUCCESS);
    assert_int_equal(CU(cuModuleGetFunction, get_function_fn)(&k.pong, NULL, "psc_flag_pong"), CUDA_SUCCESS);
    return k;
}

static CUresult launch(const gpu_t *k, CUfunction f, void **params)
{
    return CU(cuLaunchKernel, launch_fn)(f, 1, 1, 1, 1, 1, 1, 0, k->stream, params, NULL);
}

static CUresult sync_stream(const gpu_t *k) { return CU(cuStreamSynchronize, stream_fn)(k->stream); }

static void gpu_close(gpu_t *k)
{
    assert_int_equal(CU(cuStreamDestroy, stream_fn)(k->stream), CUDA_SUCCESS);
    fake_set_current(NULL);
}

static CUdeviceptr dev_alloc(size_t n)
{
    CUdeviceptr d = 0;

    assert_int_equal(CU(cuMemAlloc, alloc_fn)(&d, n), CUDA_SUCCESS);
    memset((void *)(uintptr_t)d, 0, n);
    return d;
}

static void dev_free(CUdeviceptr d) { CU(cuMemFree, free_fn)(d); }

typedef struct {
    uint64_t bad_bytes, first_bad;
} words_t;

/* Check n bytes at p against e with the check kernel; the words start as the library resets them. */
static words_t check(const gpu_t *k, CUdeviceptr p, uint64_t n, psc_expect_t e)
{
    CUdeviceptr w = dev_alloc(sizeof(words_t));
    words_t out = {0, UINT64_MAX};
    void *params[] = {&p, &n, &e, &w};

    memcpy((void *)(uintptr_t)w, &out, sizeof(out));
    assert_int_equal(launch(k, k->check, params), CUDA_SUCCESS);
    assert_int_equal(sync_stream(k), CUDA_SUCCESS);
    memcpy(&out, (void *)(uintptr_t)w, sizeof(out));
    dev_free(w);
    return out;
}

/* Fill writes psc_expect_byte's bytes, canaries and shifted, inverted ranges included; check finds each flip. */
static void fill_check_flip_as_the_gpu(void **state)
{
    const uint64_t n = 4096 + 13; /* whole chunks, then a tail the kernels do byte by byte */
    const psc_expect_t es[] = {
        psc_expect_pattern(PSC_PAT_RANDOM, 0x1234, n),
        {0x77, 100, n - 7, 3, PSC_PAT_ADDRESS, 1}, /* canary outside [100, n-7), a shifted, inverted inside */
        psc_expect_pattern(PSC_PAT_WALK0, 0, n),
    };
    gpu_t k = gpu_open(1);
    CUdeviceptr p = dev_alloc(n);
    const unsigned char *b = (const unsigned char *)(uintptr_t)p;

    (void)state;
    for (size_t i = 0; i < sizeof(es) / sizeof(es[0]); i++) {
        psc_expect_t e = es[i];
        uint64_t len = n, flips[] = {n - 1, 2049, 5}, off;
        void *fill[] = {&p, &len, &e}, *flip[] = {&p, &off};
        words_t w;

        assert_int_equal(launch(&k, k.fill, fill), CUDA_SUCCESS);
        assert_int_equal(sync_stream(&k), CUDA_SUCCESS);
        for (uint64_t o = 0; o < n; o++)
            if (b[o] != psc_expect_byte(&e, o))
                fail_msg("expectation %zu: byte %llu is %#x, not %#x", i, (unsigned long long)o, b[o],
                         psc_expect_byte(&e, o));
        w = check(&k, p, n, e);
        assert_int_equal(w.bad_bytes, 0);
        assert_true(w.first_bad == UINT64_MAX);
        /* Flipped in the tail, then inside a chunk, then in the first word: the first bad byte follows. */
        for (size_t f = 0; f < 3; f++) {
            off = flips[f];
            assert_int_equal(launch(&k, k.flip, flip), CUDA_SUCCESS);
            assert_int_equal(sync_stream(&k), CUDA_SUCCESS);
            assert_int_equal(b[off], psc_expect_byte(&e, off) ^ 0x5A);
            w = check(&k, p, n, e);
            assert_int_equal(w.bad_bytes, f + 1);
            assert_int_equal(w.first_bad, flips[f]);
        }
    }
    dev_free(p);
    gpu_close(&k);
}

/* A pong whose flag never comes, and a ping nobody answers, give up after their timeout with *err set. */
static void flags_time_out(void **state)
{
    gpu_t k = gpu_open(0);
    CUdeviceptr flag = dev_alloc(256), ans = dev_alloc(256), err = dev_alloc(sizeof(unsigned)),
                cyc = dev_alloc(4 * sizeof(uint64_t)), cal = dev_alloc(2 * sizeof(uint64_t));
    unsigned iters = 4, e;
    uint64_t timeout_ns = 50 * 1000000ull;
    void *pong[] = {&flag, &ans, &iters, &timeout_ns, &err};
    void *ping[] = {&flag, &ans, &iters, &cyc, &cal, &timeout_ns, &err};

    (void)state;
    assert_int_equal(launch(&k, k.pong, pong), CUDA_SUCCESS);
    assert_int_equal(fake_jobs_live(), 1);
    assert_int_equal(sync_stream(&k), CUDA_SUCCESS);
    assert_int_equal(fake_jobs_live(), 0);
    memcpy(&e, (void *)(uintptr_t)err, sizeof(e));
    assert_int_equal(e, 1);
    assert_int_equal(*(unsigned *)(uintptr_t)ans, 0); /* it answered nothing */

    memset((void *)(uintptr_t)err, 0, sizeof(unsigned));
    assert_int_equal(launch(&k, k.ping, ping), CUDA_SUCCESS);
    assert_int_equal(CU(cuCtxSynchronize, CUresult(*)(void))(), CUDA_SUCCESS);
    assert_int_equal(fake_jobs_live(), 0);
    memcpy(&e, (void *)(uintptr_t)err, sizeof(e));
    assert_int_equal(e, 1);
    assert_int_equal(*(unsigned *)(uintptr_t)flag, 1); /* the first flag went out, no answer came */

    /* Released with its context: the context's pong is waited for, nothing is left running. */
    memset((void *)(uintptr_t)err, 0, sizeof(unsigned));
    assert_int_equal(launch(&k, k.pong, pong), CUDA_SUCCESS);
    assert_int_equal(CU(cuDevicePrimaryCtxRelease, CUresult(*)(CUdevice))(0), CUDA_SUCCESS);
    assert_int_equal(fake_jobs_live(), 0);
    memcpy(&e, (void *)(uintptr_t)err, sizeof(e));
    assert_int_equal(e, 1);
    dev_free(flag), dev_free(ans), dev_free(err), dev_free(cyc), dev_free(cal);
    gpu_close(&k);
}

/* ------------------------------------------------------------ two processes, one allocation */

#define SHARE_SIZE (2u << 20)

typedef CUresult (*import_fn)(CUmemGenericAllocationHandle *, void *, CUmemAllocationHandleType);
typedef CUresult (*reserve_fn)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
typedef CUresult (*access_fn)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
typedef CUresult (*ipc_open_fn)(CUdeviceptr *, CUipcMemHandle, unsigned);

/* What the child gets of the parent's allocation: an exported descriptor (VMM), or a legacy handle. */
typedef struct {
    int fd, fabric;        /* VMM: the descriptor, or (fabric) a handle in bytes; neither: legacy */
    CUmemFabricHandle fab;
    CUipcMemHandle legacy;
    CUipcEventHandle event; /* with a legacy handle: an event for ordering, opened beside it */
} shared_t;
typedef CUresult (*ipc_event_open_fn)(CUevent *, CUipcEventHandle);

/* The child's own mapping of the parent's allocation, on GPU 1; 0 when the import failed. */
static CUdeviceptr child_import(const shared_t *sh)
{
    CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, 1}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUmemGenericAllocationHandle h;
    CUdeviceptr base = 0;

    if (sh->fd < 0 && !sh->fabric)
        return CU(cuIpcOpenMemHandle, ipc_open_fn)(&base, sh->legacy, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) == CUDA_SUCCESS
                   ? base
                   : 0;
    if ((sh->fabric ? CU(cuMemImportFromShareableHandle, import_fn)(&h, (void *)&sh->fab, CU_MEM_HANDLE_TYPE_FABRIC)
                    : CU(cuMemImportFromShareableHandle, import_fn)(&h, (void *)(intptr_t)sh->fd,
                                                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) !=
            CUDA_SUCCESS ||
        CU(cuMemAddressReserve, reserve_fn)(&base, SHARE_SIZE, 0, 0, 0) != CUDA_SUCCESS ||
        CU(cuMemMap, map_fn)(base, SHARE_SIZE, 0, h, 0) != CUDA_SUCCESS ||
        CU(cuMemSetAccess, access_fn)(base, SHARE_SIZE, &acc, 1) != CUDA_SUCCESS)
        return 0;
    return base;
}

/* Map the parent's allocation, answer `iters` pings from it; exit 0 when the pong had no error. */
static void pong_child(const shared_t *sh, unsigned iters)
{
    CUdeviceptr base, flag, ans, err;
    uint64_t timeout_ns = 10000 * 1000000ull;
    unsigned e = 1;
    gpu_t k;

    fake_set_current(fake_primary(1));
    if (!(base = child_import(sh)) || CU(cuMemAlloc, alloc_fn)(&err, sizeof(unsigned)) != CUDA_SUCCESS)
        _exit(2);
    memset((void *)(uintptr_t)err, 0, sizeof(unsigned));
    flag = base;
    ans = base + 128;
    if (CU(cuStreamCreate, stream_create_fn)(&k.stream, 0) != CUDA_SUCCESS ||
        CU(cuModuleGetFunction, get_function_fn)(&k.pong, NULL, "psc_flag_pong") != CUDA_SUCCESS)
        _exit(3);
    {
        void *pong[] = {&flag, &ans, &iters, &timeout_ns, &err};

        if (launch(&k, k.pong, pong) != CUDA_SUCCESS || sync_stream(&k) != CUDA_SUCCESS)
            _exit(4);
    }
    memcpy(&e, (void *)(uintptr_t)err, sizeof(e));
    if (sh->fd < 0 && !sh->fabric) {
        CUevent ev = NULL;

        if (CU(cuIpcCloseMemHandle, free_fn)(base) != CUDA_SUCCESS ||
            CU(cuIpcOpenEventHandle, ipc_event_open_fn)(&ev, sh->event) != CUDA_SUCCESS ||
            CU(cuStreamWaitEvent, CUresult(*)(CUstream, CUevent, unsigned))(k.stream, ev, 0) != CUDA_SUCCESS ||
            CU(cuEventDestroy, CUresult(*)(CUevent))(ev) != CUDA_SUCCESS)
            _exit(6);
    }
    _exit(e == 0 && fake_jobs_live() == 0 ? 0 : 5);
}

/* The parent pings from GPU 0 through its own pointer to the allocation, the child pongs through its import. */
static void ping_pong_child(CUdeviceptr base, const shared_t *sh)
{
    CUdeviceptr flag = base, ans = base + 128, cyc, cal, err;
    unsigned iters = 64, e = 1;
    uint64_t timeout_ns = 10000 * 1000000ull, c[64], t[2];
    int status = -1;
    pid_t pid;
    gpu_t k;

    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        pong_child(sh, iters);
    k = gpu_open(0);
    cyc = dev_alloc(sizeof(c));
    cal = dev_alloc(sizeof(t));
    err = dev_alloc(sizeof(unsigned));
    {
        void *ping[] = {&flag, &ans, &iters, &cyc, &cal, &timeout_ns, &err};

        assert_int_equal(launch(&k, k.ping, ping), CUDA_SUCCESS);
        assert_int_equal(sync_stream(&k), CUDA_SUCCESS);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    memcpy(&e, (void *)(uintptr_t)err, sizeof(e));
    memcpy(c, (void *)(uintptr_t)cyc, sizeof(c));
    memcpy(t, (void *)(uintptr_t)cal, sizeof(t));
    assert_int_equal(e, 0);
    for (unsigned i = 0; i < iters; i++)
        assert_true(c[i] > 0);
    assert_true(t[0] > 0 && t[1] > 0);
    assert_int_equal(*(unsigned *)(uintptr_t)ans, iters); /* the child's last answer, seen through our pointer */
    dev_free(cyc), dev_free(cal), dev_free(err);
    gpu_close(&k);
}

/* VMM: the child gets only the exported descriptor (or fabric handle) and imports and maps the allocation itself. */
static void ping_pong_vmm(int fabric)
{
    CUmemAllocationProp prop;
    CUmemGenericAllocationHandle h;
    CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUdeviceptr base = 0;
    shared_t sh;

    memset(&sh, 0, sizeof(sh));
    sh.fd = -1;
    sh.fabric = fabric;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = fabric ? CU_MEM_HANDLE_TYPE_FABRIC : CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    fake_set_current(fake_primary(0));
    assert_int_equal(CU(cuMemCreate, CUresult(*)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                                                  unsigned long long))(&h, SHARE_SIZE, &prop, 0),
                     CUDA_SUCCESS);
    assert_int_equal(CU(cuMemExportToShareableHandle,
                        CUresult(*)(void *, CUmemGenericAllocationHandle, CUmemAllocationHandleType, unsigned long long))(
                         fabric ? (void *)&sh.fab : (void *)&sh.fd, h,
                         fabric ? CU_MEM_HANDLE_TYPE_FABRIC : CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                     CUDA_SUCCESS);
    assert_int_equal(CU(cuMemAddressReserve, reserve_fn)(&base, SHARE_SIZE, 0, 0, 0), CUDA_SUCCESS);
    assert_int_equal(CU(cuMemMap, map_fn)(base, SHARE_SIZE, 0, h, 0), CUDA_SUCCESS);
    assert_int_equal(CU(cuMemSetAccess, access_fn)(base, SHARE_SIZE, &acc, 1), CUDA_SUCCESS);
    ping_pong_child(base, &sh);
    if (sh.fd >= 0)
        close(sh.fd);
    fake_set_current(fake_primary(0));
    assert_int_equal(CU(cuMemUnmap, CUresult(*)(CUdeviceptr, size_t))(base, SHARE_SIZE), CUDA_SUCCESS);
    assert_int_equal(CU(cuMemAddressFree, CUresult(*)(CUdeviceptr, size_t))(base, SHARE_SIZE), CUDA_SUCCESS);
    assert_int_equal(CU(cuMemRelease, CUresult(*)(CUmemGenericAllocationHandle))(h), CUDA_SUCCESS);
    fake_set_current(NULL);
}

static void ping_pong_vmm_fd(void **state)
{
    (void)state;
    ping_pong_vmm(0);
}

static void ping_pong_vmm_fabric(void **state)
{
    (void)state;
    fake_vmm_fabric(1);
    ping_pong_vmm(1);
    fake_vmm_fabric(0);
}

/* Legacy IPC: the child opens the handle (the exporter itself may not), and the bytes are shared both ways. */
static void ping_pong_legacy(void **state)
{
    CUdeviceptr base, refused = 0;
    CUevent ev = NULL, same = NULL;
    unsigned char *p;
    shared_t sh;

    (void)state;
    memset(&sh, 0, sizeof(sh));
    sh.fd = -1;
    fake_set_current(fake_primary(0));
    base = dev_alloc(4096);
    p = (unsigned char *)(uintptr_t)base;
    p[1000] = 0x42; /* written before the export: kept */
    assert_int_equal(CU(cuIpcGetMemHandle, CUresult(*)(CUipcMemHandle *, CUdeviceptr))(&sh.legacy, base), CUDA_SUCCESS);
    assert_int_equal(p[1000], 0x42);
    assert_int_equal(CU(cuIpcOpenMemHandle, ipc_open_fn)(&refused, sh.legacy, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                     CUDA_ERROR_INVALID_CONTEXT);
    /* An event is shared only when made for it, and opens only in another process. */
    assert_int_equal(CU(cuEventCreate, CUresult(*)(CUevent *, unsigned))(&ev, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    assert_int_equal(CU(cuIpcGetEventHandle, CUresult(*)(CUipcEventHandle *, CUevent))(&sh.event, ev),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(CU(cuEventDestroy, CUresult(*)(CUevent))(ev), CUDA_SUCCESS);
    assert_int_equal(CU(cuEventCreate, CUresult(*)(CUevent *, unsigned))(
                         &ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING),
                     CUDA_SUCCESS);
    assert_int_equal(CU(cuIpcGetEventHandle, CUresult(*)(CUipcEventHandle *, CUevent))(&sh.event, ev), CUDA_SUCCESS);
    assert_int_equal(CU(cuIpcOpenEventHandle, ipc_event_open_fn)(&same, sh.event), CUDA_ERROR_INVALID_CONTEXT);
    ping_pong_child(base, &sh);
    fake_set_current(fake_primary(0));
    assert_int_equal(CU(cuEventDestroy, CUresult(*)(CUevent))(ev), CUDA_SUCCESS);
    dev_free(base);
    fake_set_current(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bw_passes_verified),
        cmocka_unit_test(bw_corruption_names_offset),
        cmocka_unit_test(bw_oneway_corruption),
        cmocka_unit_test(oneway_rounds_differ),
        cmocka_unit_test(verify_refuses_oneway),
        cmocka_unit_test(tma_waiver_below_sm90),
        cmocka_unit_test(bw_kernels_launched),
        cmocka_unit_test(lat_flag_gpu_passes),
        cmocka_unit_test(fill_check_flip_as_the_gpu),
        cmocka_unit_test(flags_time_out),
        cmocka_unit_test(ping_pong_vmm_fd),
        cmocka_unit_test(ping_pong_vmm_fabric),
        cmocka_unit_test(ping_pong_legacy),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
