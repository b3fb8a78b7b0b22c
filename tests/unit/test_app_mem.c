/*
 * Memory of each kind for applications (psc_mem_alloc, psc_mem_free) on the
 * fake driver's "contexts" mode: each kind comes from the driver call and
 * flags it should, in the right primary context, and goes back by the
 * matching call; bad input is refused with its reason and leaves the output
 * alone; the caller's current context is kept; what the application forgot
 * is freed by psc_context_destroy; psc_mem_where reports where the kernel
 * has the first page.
 */
#define _DEFAULT_SOURCE /* mincore */
#include <cuda.h>
#include <dlfcn.h>
#include <hwloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake_context.h"

enum { HOST_ALLOCS, DEVICE_ALLOCS, REGISTERED }; /* the fake's counters (fake_libcuda.c) */

static void *(*fake_current)(void);
static void (*fake_set_current)(void *);
static void *(*fake_primary)(int);
static int (*fake_live)(int);
static unsigned (*fake_flags)(int);
static void *(*fake_mem_ctx)(int);
static void (*fake_oom)(int);
static void *g_fake;
static hwloc_topology_t g_topo;

#define CALLER_CTX ((void *)0xC0FFEE0) /* the application's own context, current on this thread */
#define SENTINEL ((psc_mem_t *)(uintptr_t)0x5EED)

/* Where the kernel has the page at p, by hwloc directly; -1 when it does not say. */
static int page_node(const void *p)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    int node = -1;

    if (hwloc_get_area_memlocation(g_topo, p, 1, set, HWLOC_MEMBIND_BYNODESET) == 0 && hwloc_bitmap_weight(set) == 1)
        node = hwloc_bitmap_first(set);
    hwloc_bitmap_free(set);
    return node;
}

/* Every page of [p, p + n) is resident: it was touched before the call returned. */
static void assert_resident(void *p, size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = ((uintptr_t)p % page + n + page - 1) / page;
    unsigned char *vec = calloc(pages, 1);

    assert_non_null(vec);
    assert_int_equal(mincore((void *)((uintptr_t)p / page * page), pages * page, vec), 0);
    for (size_t i = 0; i < pages; i++)
        if (!(vec[i] & 1))
            fail_msg("page %zu of %zu not resident", i, pages);
    free(vec);
}

static psc_mem_t *alloc_ok(psc_context_t *ctx, psc_memkind_t kind, int where, size_t size)
{
    psc_mem_t *m = NULL;

    fake_set_current(CALLER_CTX);
    assert_int_equal(psc_mem_alloc(ctx, kind, where, size, &m), PSC_OK);
    assert_ptr_equal(fake_current(), CALLER_CTX);
    assert_non_null(m);
    return m;
}

static void free_ok(psc_mem_t *m)
{
    fake_set_current(CALLER_CTX);
    assert_int_equal(psc_mem_free(m), PSC_OK);
    assert_ptr_equal(fake_current(), CALLER_CTX);
}

/* Set up both GPUs (the library's own words and buffers), so that the counts after are the tests' only. */
static void warm_up(psc_context_t *ctx)
{
    for (int gpu = 0; gpu < 2; gpu++)
        free_ok(alloc_ok(ctx, PSC_MEMKIND_DEVICE, gpu, 64));
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(psc_memkind_name(PSC_MEMKIND_DEVICE), "device");
    assert_string_equal(psc_memkind_name(PSC_MEMKIND_PINNED), "pinned");
    assert_string_equal(psc_memkind_name(PSC_MEMKIND_MAPPED), "mapped");
    assert_string_equal(psc_memkind_name(PSC_MEMKIND_WC), "write-combined");
    assert_string_equal(psc_memkind_name(PSC_MEMKIND_REGISTERED), "registered");
    assert_string_equal(psc_memkind_name(PSC_MEMKIND_COUNT), "?");
    assert_string_equal(psc_memkind_name((psc_memkind_t)-1), "?");
}

/* Each pinned kind: cuMemHostAlloc with its flags, in GPU 0's primary context, freed by cuMemFreeHost. */
static void test_pinned_kinds(void **state)
{
    static const struct { psc_memkind_t kind; unsigned flags; } k[] = {
        {PSC_MEMKIND_PINNED, CU_MEMHOSTALLOC_PORTABLE},
        {PSC_MEMKIND_MAPPED, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP},
        {PSC_MEMKIND_WC, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
        int host = fake_live(HOST_ALLOCS), dev = fake_live(DEVICE_ALLOCS), reg = fake_live(REGISTERED);
        psc_mem_t *m = alloc_ok(g_ctx, k[i].kind, PSC_NUMA_ANY, 12345);
        unsigned char *p = psc_mem_host(m);

        assert_int_equal(fake_flags(HOST_ALLOCS), k[i].flags);
        assert_ptr_equal(fake_mem_ctx(HOST_ALLOCS), fake_primary(0));
        assert_int_equal(fake_live(HOST_ALLOCS), host + 1);
        assert_non_null(p);
        assert_int_equal(psc_mem_device(m), (uint64_t)(uintptr_t)p); /* the fake maps at the host address */
        assert_int_equal(psc_mem_size(m), 12345);
        assert_int_equal(psc_mem_kind(m), k[i].kind);
        for (size_t j = 0; j < 12345; j++) /* placed and zeroed: every page touched */
            assert_int_equal(p[j], 0);
        memset(p, 0x5A, 12345); /* the whole size is the caller's (ASan says otherwise) */
        free_ok(m);
        assert_int_equal(fake_live(HOST_ALLOCS), host);
        assert_int_equal(fake_live(DEVICE_ALLOCS), dev);
        assert_int_equal(fake_live(REGISTERED), reg);
    }
}

/* Registered: the library's own pages, locked in place with cuMemHostRegister, unregistered on free. */
static void test_registered(void **state)
{
    int host = fake_live(HOST_ALLOCS), reg = fake_live(REGISTERED);
    psc_mem_t *m;
    unsigned char *p;

    (void)state;
    m = alloc_ok(g_ctx, PSC_MEMKIND_REGISTERED, 0, 3 * 4096 + 7);
    p = psc_mem_host(m);
    assert_int_equal(fake_flags(REGISTERED), CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
    assert_ptr_equal(fake_mem_ctx(REGISTERED), fake_primary(0));
    assert_int_equal(fake_live(REGISTERED), reg + 1);
    assert_int_equal(fake_live(HOST_ALLOCS), host); /* not cuMemHostAlloc'd */
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % 4096, 0);
    assert_int_equal(psc_mem_device(m), (uint64_t)(uintptr_t)p);
    assert_int_equal(psc_mem_kind(m), PSC_MEMKIND_REGISTERED);
    assert_resident(p, 3 * 4096 + 7);
    memset(p, 0x5A, 3 * 4096 + 7);
    free_ok(m);
    assert_int_equal(fake_live(REGISTERED), reg);
}

/* Device memory: cuMemAlloc in that GPU's primary context, cuMemFree. */
static void test_device(void **state)
{
    int host = fake_live(HOST_ALLOCS), dev = fake_live(DEVICE_ALLOCS);

    (void)state;
    for (int gpu = 0; gpu < 2; gpu++) {
        psc_mem_t *m = alloc_ok(g_ctx, PSC_MEMKIND_DEVICE, gpu, 1 << 20);

        assert_ptr_equal(fake_mem_ctx(DEVICE_ALLOCS), fake_primary(gpu));
        assert_int_equal(fake_live(DEVICE_ALLOCS), dev + 1);
        assert_null(psc_mem_host(m));
        assert_int_not_equal(psc_mem_device(m), 0);
        assert_int_equal(psc_mem_size(m), 1 << 20);
        assert_int_equal(psc_mem_kind(m), PSC_MEMKIND_DEVICE);
        assert_int_equal(psc_mem_where(m), gpu);
        free_ok(m);
        assert_int_equal(fake_live(DEVICE_ALLOCS), dev);
        assert_int_equal(fake_live(HOST_ALLOCS), host);
    }
}

/* Host memory: where the kernel has the first page (proof of the binding), not where it was asked to be. */
static void test_where(void **state)
{
    (void)state;
    for (psc_memkind_t k = PSC_MEMKIND_PINNED; k < PSC_MEMKIND_COUNT; k++) {
        psc_mem_t *any = alloc_ok(g_ctx, k, PSC_NUMA_ANY, 8192), *on0 = alloc_ok(g_ctx, k, 0, 8192);
        int ref = page_node(psc_mem_host(any));

        assert_int_equal(psc_mem_where(any), ref);
        assert_int_equal(psc_mem_where(on0), page_node(psc_mem_host(on0)));
        if (ref >= 0) /* the kernel tells: the page bound to node 0 is on it */
            assert_int_equal(psc_mem_where(on0), 0);
        free_ok(any);
        free_ok(on0);
    }
}

static void expect_refused(psc_memkind_t kind, int where, size_t size, psc_status_t st, const char *what)
{
    psc_mem_t *m = SENTINEL;
    int host = fake_live(HOST_ALLOCS), dev = fake_live(DEVICE_ALLOCS), reg = fake_live(REGISTERED);

    fake_set_current(CALLER_CTX);
    assert_int_equal(psc_mem_alloc(g_ctx, kind, where, size, &m), st);
    assert_ptr_equal(m, SENTINEL); /* untouched */
    assert_ptr_equal(fake_current(), CALLER_CTX);
    if (!strstr(psc_context_last_error(g_ctx), what))
        fail_msg("reason \"%s\" does not name \"%s\"", psc_context_last_error(g_ctx), what);
    assert_int_equal(fake_live(HOST_ALLOCS), host); /* nothing left behind */
    assert_int_equal(fake_live(DEVICE_ALLOCS), dev);
    assert_int_equal(fake_live(REGISTERED), reg);
}

static void test_bad_input(void **state)
{
    char accepted_nodes[64];

    (void)state;
    snprintf(accepted_nodes, sizeof(accepted_nodes), "accepted: 0..%d",
             hwloc_get_nbobjs_by_type(g_topo, HWLOC_OBJ_NUMANODE) - 1);
    assert_int_equal(psc_mem_alloc(NULL, PSC_MEMKIND_PINNED, PSC_NUMA_ANY, 64, &(psc_mem_t *){NULL}), PSC_ERR_INVALID);
    assert_int_equal(psc_mem_alloc(g_ctx, PSC_MEMKIND_PINNED, PSC_NUMA_ANY, 64, NULL), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "no place"));
    expect_refused(PSC_MEMKIND_COUNT, 0, 64, PSC_ERR_INVALID, "kind 5");
    expect_refused((psc_memkind_t)-1, 0, 64, PSC_ERR_INVALID, "kind -1");
    for (psc_memkind_t k = PSC_MEMKIND_DEVICE; k < PSC_MEMKIND_COUNT; k++) {
        expect_refused(k, 0, 0, PSC_ERR_INVALID, "1 B to 1 TiB");
        expect_refused(k, 0, ((size_t)1 << 40) + 1, PSC_ERR_INVALID, "1 B to 1 TiB");
    }
    expect_refused(PSC_MEMKIND_DEVICE, 2, 64, PSC_ERR_INVALID, "GPU 2 does not exist (accepted: 0..1)");
    expect_refused(PSC_MEMKIND_DEVICE, -1, 64, PSC_ERR_INVALID, "GPU -1 does not exist");
    for (psc_memkind_t k = PSC_MEMKIND_PINNED; k < PSC_MEMKIND_COUNT; k++) {
        expect_refused(k, 4096, 64, PSC_ERR_INVALID, "NUMA node 4096 does not exist");
        expect_refused(k, 4096, 64, PSC_ERR_INVALID, accepted_nodes);
        expect_refused(k, -2, 64, PSC_ERR_INVALID, "NUMA node -2 does not exist");
    }
    /* The largest size is allowed through the checks: the fake driver, out of memory, refuses it. */
    fake_oom(1);
    for (psc_memkind_t k = PSC_MEMKIND_DEVICE; k < PSC_MEMKIND_COUNT; k++)
        expect_refused(k, 0, k == PSC_MEMKIND_REGISTERED ? 4096 : (size_t)1 << 40, PSC_ERR_NO_MEMORY,
                       k == PSC_MEMKIND_DEVICE ? "cuMemAlloc" : k == PSC_MEMKIND_REGISTERED ? "cuMemHostRegister"
                                                                                            : "cuMemHostAlloc");
    fake_oom(0);
}

static void test_accessors_without_memory(void **state)
{
    (void)state;
    assert_null(psc_mem_host(NULL));
    assert_int_equal(psc_mem_device(NULL), 0);
    assert_int_equal(psc_mem_size(NULL), 0);
    assert_int_equal(psc_mem_kind(NULL), PSC_MEMKIND_COUNT);
    assert_int_equal(psc_mem_where(NULL), -1);
    fake_set_current(CALLER_CTX);
    assert_int_equal(psc_mem_free(NULL), PSC_OK);
    assert_ptr_equal(fake_current(), CALLER_CTX);
}

/* Freed out of order, the rest forgotten: destroy frees each remaining one once, by its own call. */
static void test_destroy_frees_the_rest(void **state)
{
    int host0 = fake_live(HOST_ALLOCS), dev0 = fake_live(DEVICE_ALLOCS), reg0 = fake_live(REGISTERED);
    int host, dev, reg;
    psc_context_t *ctx = NULL;
    psc_mem_t *m[2 * PSC_MEMKIND_COUNT];
    char err[256];

    (void)state;
    assert_int_equal(psc_context_create(&ctx, err, sizeof(err)), PSC_OK);
    warm_up(ctx);
    host = fake_live(HOST_ALLOCS), dev = fake_live(DEVICE_ALLOCS), reg = fake_live(REGISTERED);
    for (int i = 0; i < 2 * PSC_MEMKIND_COUNT; i++)
        m[i] = alloc_ok(ctx, (psc_memkind_t)(i % PSC_MEMKIND_COUNT), i % PSC_MEMKIND_COUNT ? PSC_NUMA_ANY : i & 1,
                        4096);
    free_ok(m[3]);                         /* the middle of the list */
    free_ok(m[2 * PSC_MEMKIND_COUNT - 1]); /* its head (the last allocated) */
    free_ok(m[0]);                         /* its tail */
    assert_int_equal(fake_live(HOST_ALLOCS), host + 5);
    assert_int_equal(fake_live(DEVICE_ALLOCS), dev + 1);
    assert_int_equal(fake_live(REGISTERED), reg + 1);
    fake_set_current(CALLER_CTX);
    psc_context_destroy(ctx);
    assert_ptr_equal(fake_current(), CALLER_CTX);
    assert_int_equal(fake_live(HOST_ALLOCS), host0); /* the context's own memory went too */
    assert_int_equal(fake_live(DEVICE_ALLOCS), dev0);
    assert_int_equal(fake_live(REGISTERED), reg0);
}

static int setup(void **state)
{
    psc_test_fake_driver("contexts", "2");
    if (psc_test_open_ctx(state) != 0)
        return -1;
    g_fake = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD); /* the very copy the library loaded; kept loaded */
    if (!g_fake)
        return -1;
    *(void **)&fake_current = dlsym(g_fake, "fake_cuda_current");
    *(void **)&fake_set_current = dlsym(g_fake, "fake_cuda_set_current");
    *(void **)&fake_primary = dlsym(g_fake, "fake_cuda_primary");
    *(void **)&fake_live = dlsym(g_fake, "fake_cuda_mem_live");
    *(void **)&fake_flags = dlsym(g_fake, "fake_cuda_mem_flags");
    *(void **)&fake_mem_ctx = dlsym(g_fake, "fake_cuda_mem_ctx");
    *(void **)&fake_oom = dlsym(g_fake, "fake_cuda_mem_oom");
    if (hwloc_topology_init(&g_topo) != 0 || hwloc_topology_load(g_topo) != 0)
        return -1;
    if (!(fake_current && fake_set_current && fake_primary && fake_live && fake_flags && fake_mem_ctx && fake_oom))
        return -1;
    warm_up(g_ctx);
    return 0;
}

static int teardown(void **state)
{
    int host = fake_live(HOST_ALLOCS), dev = fake_live(DEVICE_ALLOCS);

    /* Memory of this context left allocated on purpose: destroy frees it. */
    fake_set_current(CALLER_CTX);
    if (psc_mem_alloc(g_ctx, PSC_MEMKIND_WC, PSC_NUMA_ANY, 100, &(psc_mem_t *){NULL}) != PSC_OK ||
        psc_mem_alloc(g_ctx, PSC_MEMKIND_DEVICE, 1, 100, &(psc_mem_t *){NULL}) != PSC_OK)
        return -1;
    psc_test_close_ctx(state);
    /* The library's own memory of the context (gate words, buffers) is gone too: the counts only go down. */
    if (fake_live(HOST_ALLOCS) > host || fake_live(DEVICE_ALLOCS) > dev || fake_current() != CALLER_CTX)
        return -1;
    hwloc_topology_destroy(g_topo);
    dlclose(g_fake);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_pinned_kinds),
        cmocka_unit_test(test_registered),
        cmocka_unit_test(test_device),
        cmocka_unit_test(test_where),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_accessors_without_memory),
        cmocka_unit_test(test_destroy_frees_the_rest),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
