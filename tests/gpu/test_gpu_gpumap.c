/*
 * CPU mappings of GPU memory on the real driver. Every GPU is probed and
 * each backend's verdict printed. Where a backend is usable, memory mapped
 * by it is written and read by the CPU and checked against cuMemcpy of the
 * same bytes, and memory freed while mapped is reported by psc_gpumap_check
 * and unmapped cleanly (never touched). Where none is, that part is skipped
 * with the reasons printed, and the reasons must be the ones this machine
 * explains: no libgdrapi or no gdrdrv, a driver older than CUDA 13.3 or one
 * whose dma-buf the CPU cannot map, and device attributes that say the
 * platform is not coherent; psc_gpumap_map then refuses real memory with
 * PSC_ERR_UNSUPPORTED and the same reasons.
 */
#include <cuda.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpu_common.h"
#include "gpu_driver.h"

#define PAGE ((size_t)PSC_GPUMAP_PAGE)
#define SIZE ((size_t)(4 << 20) + 4099)

static CUresult (*dev_attr)(int *, CUdevice_attribute, CUdevice);
static CUresult (*driver_version)(int *);

static void *dev_alloc(int gpu, size_t n, CUdeviceptr *base)
{
    CUcontext pctx;
    CUdevice dev;

    assert_int_equal(cu.device_get(&dev, gpu), CUDA_SUCCESS);
    assert_int_equal(cu.retain(&pctx, dev), CUDA_SUCCESS);
    assert_int_equal(cu.set_current(pctx), CUDA_SUCCESS);
    assert_int_equal(cu.mem_alloc(base, n + PAGE), CUDA_SUCCESS);
    return (void *)(uintptr_t)((*base + PAGE - 1) & ~(CUdeviceptr)(PAGE - 1));
}

static void dev_free(int gpu, CUdeviceptr base)
{
    CUdevice dev;

    assert_int_equal(cu.mem_free(base), CUDA_SUCCESS);
    assert_int_equal(cu.device_get(&dev, gpu), CUDA_SUCCESS);
    assert_int_equal(cu.set_current(NULL), CUDA_SUCCESS);
    assert_int_equal(cu.release(dev), CUDA_SUCCESS);
}

static void assert_has(const char *text, const char *a, const char *b)
{
    if (!strstr(text, a) && (!b || !strstr(text, b)))
        fail_msg("\"%s\" says neither \"%s\" nor \"%s\"", text, a, b ? b : a);
}

/* The CPU writes through the map and cuMemcpy reads; cuMemcpy writes and the CPU reads through the map. */
static void map_write_read(int gpu, psc_gpumap_backend_t b)
{
    unsigned char *want = malloc(SIZE), *got = malloc(SIZE);
    CUdeviceptr base;
    uint64_t d = (uint64_t)(uintptr_t)dev_alloc(gpu, SIZE + 100, &base) + 100;
    psc_gpumap_t *m = NULL;
    size_t bad = 0;

    assert_non_null(want);
    assert_non_null(got);
    if (psc_gpumap_map(g_ctx, gpu, d, SIZE, PSC_GPUMAP_TRY(b), &m) != PSC_OK)
        fail_msg("GPU %d, %s: %s", gpu, psc_gpumap_backend_name(b), psc_context_last_error(g_ctx));
    assert_int_equal(psc_gpumap_backend(m), b);
    assert_int_equal(psc_gpumap_offset(m), b == PSC_GPUMAP_COHERENT ? 0 : 100);
    for (size_t i = 0; i < SIZE; i++)
        want[i] = (unsigned char)(i * 131 + (i >> 12) + 7);
    assert_int_equal(psc_gpumap_write(m, 0, want, SIZE), PSC_OK);
    assert_int_equal(cu.dtoh(got, (CUdeviceptr)d, SIZE), CUDA_SUCCESS);
    for (size_t i = 0; i < SIZE; i++)
        bad += got[i] != want[i];
    assert_int_equal(bad, 0);
    for (size_t i = 0; i < SIZE; i++)
        want[i] = (unsigned char)(i * 17 + 3);
    assert_int_equal(cu.htod((CUdeviceptr)d, want, SIZE), CUDA_SUCCESS);
    memset(got, 0, SIZE);
    assert_int_equal(psc_gpumap_read(m, 0, got, SIZE), PSC_OK);
    assert_memory_equal(got, want, SIZE);
    assert_int_equal(psc_gpumap_check(m), PSC_OK);
    /* Freed while mapped: check says so; unmap releases it; the bytes are never touched. */
    dev_free(gpu, base);
    assert_int_equal(psc_gpumap_check(m), PSC_ERR_INVALID);
    assert_int_equal(psc_gpumap_unmap(m), PSC_OK);
    free(want);
    free(got);
}

/* No backend: each reason is the one this machine explains, and map refuses real memory with them. */
static void expect_reasons(int gpu, const psc_gpumap_report_t *r)
{
    int v = 0, pt = 0, direct = 0;
    CUdevice dev;
    CUdeviceptr base;
    uint64_t d;
    psc_gpumap_t *m = NULL;

    assert_has(r->why[PSC_GPUMAP_GDRCOPY], "no libgdrapi", "gdr_open failed");
    assert_int_equal(driver_version(&v), CUDA_SUCCESS);
    assert_int_equal(r->cuda_driver_version, v);
    if (v < 13030)
        assert_has(r->why[PSC_GPUMAP_DMABUF], "too old to map a dma-buf", NULL);
    else
        assert_has(r->why[PSC_GPUMAP_DMABUF], "refused to map it", "does not export dma-bufs");
    assert_int_equal(cu.device_get(&dev, gpu), CUDA_SUCCESS);
    assert_int_equal(dev_attr(&pt, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, dev), CUDA_SUCCESS);
    assert_int_equal(dev_attr(&direct, CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, dev), CUDA_SUCCESS);
    assert_false(pt && direct);
    assert_has(r->why[PSC_GPUMAP_COHERENT], "not on a coherent platform", NULL);
    d = (uint64_t)(uintptr_t)dev_alloc(gpu, PAGE, &base);
    assert_int_equal(psc_gpumap_map(g_ctx, gpu, d, PAGE, 0, &m), PSC_ERR_UNSUPPORTED);
    assert_null(m);
    assert_has(psc_context_last_error(g_ctx), "gdrcopy: ", NULL);
    assert_has(psc_context_last_error(g_ctx), "; coherent: ", NULL);
    /* Arguments are checked on real memory before any backend. */
    assert_int_equal(psc_gpumap_map(g_ctx, gpu, d, 2 * PAGE + 1, 0, &m), PSC_ERR_INVALID);
    assert_has(psc_context_last_error(g_ctx), "run past the end of their allocation", NULL);
    dev_free(gpu, base);
}

static void test_every_gpu(void **state)
{
    int n = psc_device_count(g_ctx), mapped = 0;

    (void)state;
    for (int gpu = 0; gpu < n; gpu++) {
        psc_gpumap_report_t r;
        int any = 0;

        assert_int_equal(psc_gpumap_probe(g_ctx, gpu, &r), PSC_OK);
        printf("GPU %d: BAR1 %llu MiB (%llu free), libgdrapi %d.%d, gdrdrv %d.%d%s, driver %d\n", gpu,
               (unsigned long long)(r.bar1_total >> 20), (unsigned long long)(r.bar1_free >> 20),
               r.gdr_lib_version >> 16, r.gdr_lib_version & 0xffff, r.gdr_drv_version >> 16,
               r.gdr_drv_version & 0xffff, r.gdr_dmabuf ? " (its dma-buf fallback)" : "", r.cuda_driver_version);
        for (int b = 0; b < PSC_GPUMAP_BACKENDS; b++) {
            printf("  %-8s %s%s\n", psc_gpumap_backend_name((psc_gpumap_backend_t)b), r.usable[b] ? "usable" : "no: ",
                   r.why[b]);
            if (r.usable[b]) {
                any = 1;
                map_write_read(gpu, (psc_gpumap_backend_t)b);
                mapped++;
            }
        }
        if (!any) {
            printf("  GPU %d: no backend maps its memory: the mapping checks are skipped for the reasons above\n",
                   gpu);
            expect_reasons(gpu, &r);
        }
    }
    printf("%d backend(s) mapped, written and read\n", mapped);
}

static int setup(void **state)
{
    void *h;

    (void)state;
    if (psc_test_driver_load() != 0 || !(h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)))
        return -1;
    *(void **)&dev_attr = dlsym(h, "cuDeviceGetAttribute");
    *(void **)&driver_version = dlsym(h, "cuDriverGetVersion");
    return dev_attr && driver_version ? 0 : -1;
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_gpu),
};

PSC_GPU_TEST_MAIN_SETUP(tests, setup)
