/*
 * On the real driver: memory of each kind from psc_mem_alloc is usable by
 * plain CUDA code. The test plays the application with the driver API itself
 * (loaded with dlopen, as the library does): it writes a pattern into host
 * memory of each kind from the CPU, copies it with cuMemcpy to device memory
 * and back, and checks the bytes; host memory is on the NUMA node asked for,
 * as the kernel reports it; device memory belongs to its GPU.
 */
#include <cuda.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpu_common.h"
#include "gpu_driver.h"

#define SIZE ((size_t)(4 << 20) + 4099) /* several pages and a ragged tail */

static int g_nodes = 1;

static unsigned char pattern(size_t i, int seed) { return (unsigned char)((i * 131 + (i >> 12) + (size_t)seed) & 0xFF); }

static CUcontext current(void)
{
    CUcontext c = (CUcontext)(uintptr_t)1;

    assert_int_equal(cu.get_current(&c), CUDA_SUCCESS);
    return c;
}

static psc_mem_t *alloc_kept(psc_memkind_t kind, int where, size_t size)
{
    psc_mem_t *m = NULL;
    psc_status_t st;

    assert_int_equal(cu.set_current(NULL), CUDA_SUCCESS);
    st = psc_mem_alloc(g_ctx, kind, where, size, &m);
    if (st != PSC_OK)
        fail_msg("%s on %d: %s", psc_memkind_name(kind), where, psc_context_last_error(g_ctx));
    assert_null(current()); /* the caller had none current: still none */
    assert_non_null(m);
    assert_int_equal(psc_mem_size(m), size);
    assert_int_equal(psc_mem_kind(m), kind);
    return m;
}

/* Host memory of the kind on `node`: the CPU writes it, cuMemcpy takes it to GPU `gpu` and back. */
static void round_trip(psc_memkind_t kind, int node, int gpu, int seed)
{
    psc_mem_t *h = alloc_kept(kind, node, SIZE), *d = alloc_kept(PSC_MEMKIND_DEVICE, gpu, SIZE);
    unsigned char *p = psc_mem_host(h);
    CUdeviceptr hd = psc_mem_device(h) ? psc_mem_device(h) : (CUdeviceptr)(uintptr_t)p; /* UVA: the host address */
    unsigned type = 0;
    CUcontext pctx;
    CUdevice dev;
    size_t bad = 0;

    assert_non_null(p);
    if (kind != PSC_MEMKIND_PINNED)
        assert_int_not_equal(psc_mem_device(h), 0); /* mapped for the GPUs */
    if (node != PSC_NUMA_ANY)
        assert_int_equal(psc_mem_where(h), node);
    else
        assert_in_range(psc_mem_where(h), 0, g_nodes - 1);
    for (size_t i = 0; i < SIZE; i++)
        p[i] = pattern(i, seed);
    /* The application's own context: the GPU's primary one, as the runtime would have it. */
    assert_int_equal(cu.device_get(&dev, gpu), CUDA_SUCCESS);
    assert_int_equal(cu.retain(&pctx, dev), CUDA_SUCCESS);
    assert_int_equal(cu.set_current(pctx), CUDA_SUCCESS);
    assert_int_equal(cu.attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, hd), CUDA_SUCCESS);
    assert_int_equal(type, CU_MEMORYTYPE_HOST);
    assert_int_equal(cu.memcpy((CUdeviceptr)psc_mem_device(d), hd, SIZE), CUDA_SUCCESS);
    memset(p, 0, SIZE);
    assert_int_equal(cu.memcpy(hd, (CUdeviceptr)psc_mem_device(d), SIZE), CUDA_SUCCESS);
    for (size_t i = 0; i < SIZE; i++)
        bad += p[i] != pattern(i, seed);
    if (bad)
        fail_msg("%s memory on node %d through GPU %d: %zu bytes differ", psc_memkind_name(kind), node, gpu, bad);
    assert_int_equal(cu.set_current(NULL), CUDA_SUCCESS);
    assert_int_equal(psc_mem_free(h), PSC_OK);
    assert_int_equal(psc_mem_free(d), PSC_OK);
    assert_null(current());
    assert_int_equal(cu.release(dev), CUDA_SUCCESS);
}

static void test_host_kinds_round_trip(void **state)
{
    int seed = 0;

    (void)state;
    for (psc_memkind_t k = PSC_MEMKIND_PINNED; k < PSC_MEMKIND_COUNT; k++) {
        round_trip(k, 0, 0, seed++);
        round_trip(k, PSC_NUMA_ANY, psc_device_count(g_ctx) - 1, seed++);
    }
}

/* Each host kind on each NUMA node: the kernel has the first page there. */
static void test_every_node(void **state)
{
    (void)state;
    for (psc_memkind_t k = PSC_MEMKIND_PINNED; k < PSC_MEMKIND_COUNT; k++)
        for (int node = 0; node < g_nodes; node++) {
            psc_mem_t *h = alloc_kept(k, node, 1 << 20);

            assert_int_equal(psc_mem_where(h), node);
            assert_int_equal(psc_mem_free(h), PSC_OK);
        }
}

/* Device memory belongs to its GPU, in that GPU's primary context. */
static void test_device_memory_is_the_gpus(void **state)
{
    (void)state;
    for (int gpu = 0; gpu < psc_device_count(g_ctx); gpu++) {
        psc_mem_t *d = alloc_kept(PSC_MEMKIND_DEVICE, gpu, 1 << 20);
        unsigned type = 0;
        int ordinal = -1;
        CUcontext owner = NULL, pctx;
        CUdevice dev;

        assert_null(psc_mem_host(d));
        assert_int_equal(psc_mem_where(d), gpu);
        assert_int_equal(cu.device_get(&dev, gpu), CUDA_SUCCESS);
        assert_int_equal(cu.retain(&pctx, dev), CUDA_SUCCESS);
        assert_int_equal(cu.set_current(pctx), CUDA_SUCCESS);
        assert_int_equal(cu.attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, psc_mem_device(d)), CUDA_SUCCESS);
        assert_int_equal(type, CU_MEMORYTYPE_DEVICE);
        assert_int_equal(cu.attr(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, psc_mem_device(d)), CUDA_SUCCESS);
        assert_int_equal(ordinal, gpu);
        assert_int_equal(cu.attr(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, psc_mem_device(d)), CUDA_SUCCESS);
        assert_ptr_equal(owner, pctx);
        assert_int_equal(cu.set_current(NULL), CUDA_SUCCESS);
        assert_int_equal(cu.release(dev), CUDA_SUCCESS);
        assert_int_equal(psc_mem_free(d), PSC_OK);
    }
}

static int setup(void **state)
{
    psc_system_info_t sys;

    (void)state;
    if (psc_test_driver_load() != 0)
        return -1;
    if (psc_system_info(g_ctx, &sys) != PSC_OK)
        return -1;
    g_nodes = sys.numa_nodes;
    return 0;
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_host_kinds_round_trip),
    cmocka_unit_test(test_every_node),
    cmocka_unit_test(test_device_memory_is_the_gpus),
};

PSC_GPU_TEST_MAIN_SETUP(tests, setup)
