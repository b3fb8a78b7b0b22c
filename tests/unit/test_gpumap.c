/*
 * CPU mappings of GPU memory (psc_gpumap_*) on the fake driver's "contexts"
 * mode, where device memory is host memory: each backend's reasons for being
 * unusable (no libgdrapi, gdr_open failing, an old libgdrapi, a driver too
 * old for the dma-buf mmap or one that refuses it, no dma-buf export, not a
 * coherent platform), the order backends are tried in, the arguments
 * refused and *out left alone, BAR1 exhausted, bytes written and read
 * through each backend's mapping landing in the device memory, every pin
 * and mapping paired with its release, memory freed while mapped, and the
 * caller's current context kept.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake_context.h"
#include "fake_gdr_env.h"
#include "gpumap/gpumap.h"

enum { GDR_OPENS, GDR_PINS, GDR_MAPS, GDR_MISUSES }; /* fake_libgdrapi.c's counters */

static int (*gdr_live)(int);
static void (*gdr_set_callback)(int);
static void *(*fake_current)(void);
static void (*fake_set_current)(void *);
static void *g_gdr, *g_cuda;

#define PAGE ((size_t)PSC_GPUMAP_PAGE)
#define CALLER_CTX ((void *)0xC0FFEE0)
#define SENTINEL ((psc_gpumap_t *)(uintptr_t)0x5EED)

/* Nothing usable: no libgdrapi, a CUDA 13.0 driver, no coherent platform (the H100/H200 machines). */
static int setup(void **state)
{
    (void)state;
    psc_test_gdr_none();
    gdr_set_callback(0);
    g_ctx = NULL;
    return 0;
}

static int teardown(void **state)
{
    if (g_ctx)
        psc_test_close_ctx(state);
    g_ctx = NULL;
    return gdr_live(GDR_OPENS) == 0 ? 0 : -1; /* the context's gdr_t closed with it */
}

/* A context made now: the fake driver's knobs read at creation (its version) are the test's. */
static void open_ctx(void)
{
    assert_int_equal(psc_test_open_ctx(NULL), 0);
}

static void use_fake_gdr(void) { setenv("P2PSCOPE_LIBGDRAPI", FAKE_LIBGDRAPI, 1); }

/* Every pin and mapping released, nothing misused; gdr_t: the open context's one at most, none without one. */
static void assert_gdr_clean(void)
{
    assert_true(gdr_live(GDR_OPENS) <= (g_ctx ? 1 : 0));
    assert_int_equal(gdr_live(GDR_PINS), 0);
    assert_int_equal(gdr_live(GDR_MAPS), 0);
    assert_int_equal(gdr_live(GDR_MISUSES), 0);
}

/* n bytes of GPU gpu's memory at a 64 KiB boundary (more is allocated, *mem holds it). */
static uint64_t dev_pages(int gpu, size_t n, psc_mem_t **mem)
{
    assert_int_equal(psc_mem_alloc(g_ctx, PSC_MEMKIND_DEVICE, gpu, n + PAGE, mem), PSC_OK);
    return (psc_mem_device(*mem) + PAGE - 1) & ~(uint64_t)(PAGE - 1);
}

static void assert_error_has(const char *what)
{
    const char *e = psc_context_last_error(g_ctx);

    if (!strstr(e, what))
        fail_msg("last error \"%s\" lacks \"%s\"", e, what);
}

static void assert_has(const char *text, const char *what)
{
    if (!strstr(text, what))
        fail_msg("\"%s\" lacks \"%s\"", text, what);
}

static void test_backend_names(void **state)
{
    (void)state;
    assert_string_equal(psc_gpumap_backend_name(PSC_GPUMAP_GDRCOPY), "gdrcopy");
    assert_string_equal(psc_gpumap_backend_name(PSC_GPUMAP_DMABUF), "dma-buf");
    assert_string_equal(psc_gpumap_backend_name(PSC_GPUMAP_COHERENT), "coherent");
    assert_string_equal(psc_gpumap_backend_name(PSC_GPUMAP_BACKENDS), "?");
    assert_string_equal(psc_gpumap_backend_name((psc_gpumap_backend_t)-1), "?");
}

/* What the lent H100/H200 machines must report: nothing usable, each for its own reason. */
static void test_probe_nothing_usable(void **state)
{
    psc_gpumap_report_t r;

    (void)state;
    open_ctx();
    assert_int_equal(psc_gpumap_probe(g_ctx, 1, &r), PSC_OK);
    for (int b = 0; b < PSC_GPUMAP_BACKENDS; b++)
        assert_int_equal(r.usable[b], 0);
    assert_has(r.why[PSC_GPUMAP_GDRCOPY], "no libgdrapi");
    assert_has(r.why[PSC_GPUMAP_GDRCOPY], "/nonexistent/libgdrapi.so.2");
    assert_has(r.why[PSC_GPUMAP_DMABUF], "CUDA 13.0");
    assert_has(r.why[PSC_GPUMAP_DMABUF], "too old");
    assert_has(r.why[PSC_GPUMAP_COHERENT], "GPU 1 is not on a coherent platform");
    assert_int_equal(r.gdr_lib_version, 0);
    assert_int_equal(r.cuda_driver_version, 13000);
    assert_true(r.bar1_total == 0 && r.bar1_free == 0); /* no NVML in the unit tests */
}

static void test_probe_gdr_reasons(void **state)
{
    psc_gpumap_report_t r;

    (void)state;
    use_fake_gdr();
    setenv("FAKE_GDR_OPEN_FAIL", "1", 1);
    open_ctx();
    assert_int_equal(psc_gpumap_probe(g_ctx, 0, &r), PSC_OK);
    assert_int_equal(r.usable[PSC_GPUMAP_GDRCOPY], 0);
    assert_has(r.why[PSC_GPUMAP_GDRCOPY], "gdr_open failed");
    assert_has(r.why[PSC_GPUMAP_GDRCOPY], "/dev/gdrdrv");
    assert_int_equal(r.gdr_lib_version, 2 << 16 | 6); /* loaded, though it could not open */
    assert_int_equal(r.gdr_drv_version, 0);

    unsetenv("FAKE_GDR_OPEN_FAIL");
    setenv("FAKE_GDR_VERSION", "2.3", 1);
    assert_int_equal(psc_gpumap_probe(g_ctx, 0, &r), PSC_OK);
    assert_int_equal(r.usable[PSC_GPUMAP_GDRCOPY], 0);
    assert_has(r.why[PSC_GPUMAP_GDRCOPY], "libgdrapi 2.3");
    assert_has(r.why[PSC_GPUMAP_GDRCOPY], "2.4 or newer");

    unsetenv("FAKE_GDR_VERSION");
    setenv("FAKE_GDR_MAP_FAIL", "22", 1);
    assert_int_equal(psc_gpumap_probe(g_ctx, 0, &r), PSC_OK);
    assert_int_equal(r.usable[PSC_GPUMAP_GDRCOPY], 0);
    assert_has(r.why[PSC_GPUMAP_GDRCOPY], "gdr_map failed: EINVAL");
    assert_gdr_clean(); /* the failed trial released its pin and its gdr_t */
}

static void test_probe_gdr_usable(void **state)
{
    psc_gpumap_report_t r;

    (void)state;
    use_fake_gdr();
    open_ctx();
    assert_int_equal(psc_gpumap_probe(g_ctx, 0, &r), PSC_OK);
    assert_int_equal(r.usable[PSC_GPUMAP_GDRCOPY], 1);
    assert_string_equal(r.why[PSC_GPUMAP_GDRCOPY], "");
    assert_int_equal(r.gdr_lib_version, 2 << 16 | 6);
    assert_int_equal(r.gdr_drv_version, 2 << 16 | 5);
    assert_int_equal(r.gdr_dmabuf, 0);
    assert_gdr_clean();
    setenv("FAKE_GDR_DMABUF", "1", 1); /* gdrcopy without its module: no gdrdrv to ask (it would abort) */
    setenv("FAKE_GDR_DRV_VERSION", "2.7", 1);
    assert_int_equal(psc_gpumap_probe(g_ctx, 0, &r), PSC_OK);
    assert_int_equal(r.gdr_dmabuf, 1);
    assert_int_equal(r.gdr_drv_version, 0);
}

static void test_probe_dmabuf(void **state)
{
    psc_gpumap_report_t r;

    (void)state;
    setenv("FAKE_CUDA_DRIVER_VERSION", "13030", 1);
    open_ctx();
    assert_int_equal(psc_gpumap_probe(g_ctx, 0, &r), PSC_OK);
    assert_int_equal(r.usable[PSC_GPUMAP_DMABUF], 0);
    assert_has(r.why[PSC_GPUMAP_DMABUF], "does not export dma-bufs");
    setenv("FAKE_CUDA_DMABUF", "refuse", 1);
    assert_int_equal(psc_gpumap_probe(g_ctx, 0, &r), PSC_OK);
    assert_int_equal(r.usable[PSC_GPUMAP_DMABUF], 0);
    assert_has(r.why[PSC_GPUMAP_DMABUF], "refused to map it");
    assert_has(r.why[PSC_GPUMAP_DMABUF], "ENODEV");
    setenv("FAKE_CUDA_DMABUF", "1", 1);
    assert_int_equal(psc_gpumap_probe(g_ctx, 0, &r), PSC_OK);
    assert_int_equal(r.usable[PSC_GPUMAP_DMABUF], 1);
    assert_string_equal(r.why[PSC_GPUMAP_DMABUF], "");
    assert_int_equal(r.usable[PSC_GPUMAP_COHERENT], 0);
}

static void test_probe_coherent(void **state)
{
    psc_gpumap_report_t r;

    (void)state;
    setenv("FAKE_CUDA_COHERENT", "1", 1);
    open_ctx();
    assert_int_equal(psc_gpumap_probe(g_ctx, 0, &r), PSC_OK);
    assert_int_equal(r.usable[PSC_GPUMAP_COHERENT], 1);
    assert_string_equal(r.why[PSC_GPUMAP_COHERENT], "");
    assert_int_equal(r.usable[PSC_GPUMAP_GDRCOPY], 0);
}

static void test_probe_args(void **state)
{
    psc_gpumap_report_t r, before;

    (void)state;
    open_ctx();
    memset(&r, 0xA5, sizeof(r));
    before = r;
    assert_int_equal(psc_gpumap_probe(NULL, 0, &r), PSC_ERR_INVALID);
    assert_int_equal(psc_gpumap_probe(g_ctx, 2, &r), PSC_ERR_INVALID);
    assert_error_has("GPU 2 does not exist");
    assert_int_equal(psc_gpumap_probe(g_ctx, -1, &r), PSC_ERR_INVALID);
    assert_memory_equal(&r, &before, sizeof(r));
    assert_int_equal(psc_gpumap_probe(g_ctx, 0, NULL), PSC_ERR_INVALID);
    assert_error_has("no place for the report");
}

/* Every backend usable: the first allowed one in the order gdrcopy, dma-buf, coherent maps. */
static void test_backend_order(void **state)
{
    static const struct { unsigned allow; psc_gpumap_backend_t want; } cases[] = {
        {0, PSC_GPUMAP_GDRCOPY},
        {PSC_GPUMAP_TRY(PSC_GPUMAP_COHERENT) | PSC_GPUMAP_TRY(PSC_GPUMAP_GDRCOPY), PSC_GPUMAP_GDRCOPY},
        {PSC_GPUMAP_TRY(PSC_GPUMAP_DMABUF) | PSC_GPUMAP_TRY(PSC_GPUMAP_COHERENT), PSC_GPUMAP_DMABUF},
        {PSC_GPUMAP_TRY(PSC_GPUMAP_COHERENT), PSC_GPUMAP_COHERENT},
    };
    psc_gpumap_t *m;
    psc_mem_t *mem;
    uint64_t d;

    (void)state;
    use_fake_gdr();
    setenv("FAKE_CUDA_DRIVER_VERSION", "13030", 1);
    setenv("FAKE_CUDA_DMABUF", "1", 1);
    setenv("FAKE_CUDA_COHERENT", "1", 1);
    open_ctx();
    d = dev_pages(0, PAGE, &mem);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(psc_gpumap_map(g_ctx, 0, d, 100, cases[i].allow, &m), PSC_OK);
        assert_int_equal(psc_gpumap_backend(m), cases[i].want);
        assert_int_equal(psc_gpumap_unmap(m), PSC_OK);
    }
    /* gdrcopy refuses the range: dma-buf is next. */
    setenv("FAKE_GDR_PIN_FAIL", "22", 1);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, 100, 0, &m), PSC_OK);
    assert_int_equal(psc_gpumap_backend(m), PSC_GPUMAP_DMABUF);
    assert_int_equal(psc_gpumap_unmap(m), PSC_OK);
    /* dma-buf refused too: coherent. */
    setenv("FAKE_CUDA_DMABUF", "refuse", 1);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, 100, 0, &m), PSC_OK);
    assert_int_equal(psc_gpumap_backend(m), PSC_GPUMAP_COHERENT);
    assert_int_equal(psc_gpumap_unmap(m), PSC_OK);
    assert_int_equal(psc_mem_free(mem), PSC_OK);
    assert_gdr_clean();
}

/*
 * Bytes written through the mapping are in the device memory at the right place, and bytes in the device
 * memory are read back through it; the offset into the 64 KiB page is dptr's.
 */
static void roundtrip(psc_gpumap_backend_t b, int wc)
{
    unsigned char src[3000], back[3000];
    unsigned char *dev;
    psc_gpumap_t *m = SENTINEL;
    psc_mem_t *mem;
    uint64_t d;

    d = dev_pages(1, 3 * PAGE, &mem) + 100;
    dev = (unsigned char *)(uintptr_t)d; /* host memory stands in for the GPU's */
    memset(dev, 0xEE, 2 * PAGE);
    assert_int_equal(psc_gpumap_map(g_ctx, 1, d, 2 * PAGE - 200, PSC_GPUMAP_TRY(b), &m), PSC_OK);
    assert_int_equal(psc_gpumap_backend(m), b);
    assert_int_equal(psc_gpumap_size(m), 2 * PAGE - 200);
    assert_int_equal(psc_gpumap_dptr(m), d);
    assert_int_equal(psc_gpumap_offset(m), b == PSC_GPUMAP_COHERENT ? 0 : 100);
    assert_int_equal(psc_gpumap_write_combined(m), wc);
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (unsigned char)(i * 7 + 3);
    /* across the page boundary, at an odd offset */
    assert_int_equal(psc_gpumap_write(m, PAGE - 1000, src, sizeof(src)), PSC_OK);
    assert_memory_equal(dev + PAGE - 1000, src, sizeof(src));
    assert_int_equal(dev[PAGE - 1001], 0xEE);
    assert_int_equal(dev[PAGE - 1000 + sizeof(src)], 0xEE);
    for (size_t i = 0; i < sizeof(src); i++)
        dev[5 + i] = (unsigned char)(i ^ 0x5A);
    assert_int_equal(psc_gpumap_read(m, 5, back, sizeof(back)), PSC_OK);
    for (size_t i = 0; i < sizeof(back); i++)
        assert_int_equal(back[i], (unsigned char)(i ^ 0x5A));
    /* the last byte of the map */
    assert_int_equal(psc_gpumap_write(m, 2 * PAGE - 201, src, 1), PSC_OK);
    assert_int_equal(dev[2 * PAGE - 201], src[0]);
    assert_int_equal(((unsigned char *)psc_gpumap_ptr(m))[2 * PAGE - 201], src[0]);
    assert_int_equal(psc_gpumap_check(m), PSC_OK);
    assert_int_equal(psc_gpumap_unmap(m), PSC_OK);
    assert_int_equal(psc_mem_free(mem), PSC_OK);
}

static void test_roundtrip_gdrcopy(void **state)
{
    (void)state;
    use_fake_gdr();
    open_ctx();
    roundtrip(PSC_GPUMAP_GDRCOPY, 1);
    assert_gdr_clean();
}

/* The dma-buf mapping is a second mapping of the same pages: its address differs from dptr's. */
static void test_roundtrip_dmabuf(void **state)
{
    psc_gpumap_t *m;
    psc_mem_t *mem;
    uint64_t d;

    (void)state;
    setenv("FAKE_CUDA_DRIVER_VERSION", "13030", 1);
    setenv("FAKE_CUDA_DMABUF", "1", 1);
    open_ctx();
    roundtrip(PSC_GPUMAP_DMABUF, 1);
    d = dev_pages(0, PAGE, &mem);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d + 8, 8, PSC_GPUMAP_TRY(PSC_GPUMAP_DMABUF), &m), PSC_OK);
    assert_ptr_not_equal(psc_gpumap_ptr(m), (void *)(uintptr_t)(d + 8));
    assert_int_equal(psc_gpumap_unmap(m), PSC_OK);
    assert_int_equal(psc_mem_free(mem), PSC_OK);
    { /* an allocation ending inside a GPU page: its last bytes map, the export stops at its last host page */
        psc_mem_t *tail[4] = {NULL, NULL, NULL, NULL};
        uint64_t end = 0, from;
        unsigned char pat[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, back[16];
        int k;

        for (k = 0; k < 4; k++) { /* sizes until one ends off a 64 KiB boundary (where it lands is the fake's) */
            size_t size = 2 * PAGE + 4096 * (size_t)(k + 1);

            assert_int_equal(psc_mem_alloc(g_ctx, PSC_MEMKIND_DEVICE, 0, size, &tail[k]), PSC_OK);
            end = psc_mem_device(tail[k]) + size;
            if (end % PAGE)
                break;
        }
        assert_true(k < 4);
        from = (end & ~(uint64_t)(PAGE - 1)) - PAGE; /* a GPU page and a part of one: not whole GPU pages */
        assert_int_equal(psc_gpumap_map(g_ctx, 0, from, (size_t)(end - from), PSC_GPUMAP_TRY(PSC_GPUMAP_DMABUF), &m),
                         PSC_OK);
        assert_int_equal(psc_gpumap_write(m, (size_t)(end - from) - 16, pat, 16), PSC_OK);
        assert_int_equal(psc_gpumap_read(m, (size_t)(end - from) - 16, back, 16), PSC_OK);
        assert_memory_equal(back, pat, 16);
        assert_int_equal(psc_gpumap_unmap(m), PSC_OK);
        for (int i = 0; i < 4; i++)
            if (tail[i])
                assert_int_equal(psc_mem_free(tail[i]), PSC_OK);
    }
}

/* Coherent memory is cached: not write-combined; the CPU's address is dptr itself. */
static void test_roundtrip_coherent(void **state)
{
    psc_gpumap_t *m;
    psc_mem_t *mem;
    uint64_t d;

    (void)state;
    setenv("FAKE_CUDA_COHERENT", "1", 1);
    open_ctx();
    roundtrip(PSC_GPUMAP_COHERENT, 0);
    d = dev_pages(0, PAGE, &mem) + 3;
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, 8, 0, &m), PSC_OK);
    assert_ptr_equal(psc_gpumap_ptr(m), (void *)(uintptr_t)d);
    assert_int_equal(psc_gpumap_unmap(m), PSC_OK);
    assert_int_equal(psc_mem_free(mem), PSC_OK);
}

/* Each refusal says what was wrong and what is accepted, and leaves *out alone. */
static void test_map_args(void **state)
{
    psc_gpumap_t *m = SENTINEL;
    psc_mem_t *mem, *host, *other, *odd = NULL, *spare[16];
    uint64_t d;
    int nspare = 0, local;

    (void)state;
    setenv("FAKE_CUDA_COHERENT", "1", 1); /* a backend that would map anything it is given */
    open_ctx();
    d = dev_pages(0, PAGE, &mem);
    assert_int_equal(psc_gpumap_map(NULL, 0, d, 8, 0, &m), PSC_ERR_INVALID);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, 8, 0, NULL), PSC_ERR_INVALID);
    assert_error_has("no place for the map");
    assert_int_equal(psc_gpumap_map(g_ctx, 2, d, 8, 0, &m), PSC_ERR_INVALID);
    assert_error_has("GPU 2 does not exist (accepted: 0..1)");
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, 0, 0, &m), PSC_ERR_INVALID);
    assert_error_has("size 0");
    assert_int_equal(psc_gpumap_map(g_ctx, 0, 0, 8, 0, &m), PSC_ERR_INVALID);
    assert_error_has("address 0");
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, 8, 8, &m), PSC_ERR_INVALID);
    assert_error_has("backends 0x8");
    assert_int_equal(psc_gpumap_map(g_ctx, 0, (uint64_t)(uintptr_t)&local, 4, 0, &m), PSC_ERR_INVALID);
    assert_error_has("no memory CUDA knows");
    assert_int_equal(psc_mem_alloc(g_ctx, PSC_MEMKIND_PINNED, PSC_NUMA_ANY, 2 * PAGE, &host), PSC_OK);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, psc_mem_device(host), 8, 0, &m), PSC_ERR_INVALID);
    assert_error_has("is host memory");
    other = NULL;
    assert_int_equal(psc_gpumap_map(g_ctx, 0, dev_pages(1, PAGE, &other), 8, 0, &m), PSC_ERR_INVALID);
    assert_error_has("memory of GPU 1, not of GPU 0");
    /* the allocation is PAGE + PAGE bytes from its base; d is at most PAGE - 1 past it */
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, psc_mem_device(mem) + 2 * PAGE - d + 1, 0, &m), PSC_ERR_INVALID);
    assert_error_has("run past the end of their allocation");
    /* an allocation not 64 KiB-aligned: its first byte's page begins before it */
    while (!odd && nspare < 16) {
        assert_int_equal(psc_mem_alloc(g_ctx, PSC_MEMKIND_DEVICE, 0, 4096, &spare[nspare]), PSC_OK);
        if (psc_mem_device(spare[nspare]) % PAGE)
            odd = spare[nspare];
        nspare++;
    }
    assert_non_null(odd);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, psc_mem_device(odd), 8, 0, &m), PSC_ERR_INVALID);
    assert_error_has("GPU page that begins");
    assert_error_has("64 KiB-aligned");
    assert_ptr_equal(m, SENTINEL);
    for (int i = 0; i < nspare; i++)
        psc_mem_free(spare[i]);
    psc_mem_free(other);
    psc_mem_free(host);
    psc_mem_free(mem);
}

/* No backend allowed is usable: PSC_ERR_UNSUPPORTED naming each one tried with its reason. */
static void test_map_unsupported(void **state)
{
    psc_gpumap_t *m = SENTINEL;
    psc_mem_t *mem;
    uint64_t d;

    (void)state;
    open_ctx();
    d = dev_pages(0, PAGE, &mem);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, 8, 0, &m), PSC_ERR_UNSUPPORTED);
    assert_error_has("gdrcopy: no libgdrapi");
    assert_error_has("; dma-buf: the driver (CUDA 13.0) is too old");
    assert_error_has("; coherent: GPU 0 is not on a coherent platform");
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, 8, PSC_GPUMAP_TRY(PSC_GPUMAP_COHERENT), &m), PSC_ERR_UNSUPPORTED);
    assert_null(strstr(psc_context_last_error(g_ctx), "gdrcopy:")); /* only what was allowed */
    assert_ptr_equal(m, SENTINEL);
    psc_mem_free(mem);
}

/* More than BAR1 holds: PSC_ERR_NO_MEMORY with the pin's failure; what fits still maps, and is released. */
static void test_map_over_bar1(void **state)
{
    psc_gpumap_t *m = SENTINEL, *m2;
    psc_mem_t *mem;
    uint64_t d;
    char why[256];

    (void)state;
    use_fake_gdr();
    setenv("FAKE_GDR_BAR1", "196608", 1); /* 3 pages */
    open_ctx();
    d = dev_pages(0, 4 * PAGE, &mem);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, 3 * PAGE + 1, 0, &m), PSC_ERR_NO_MEMORY);
    assert_error_has("gdr_pin_buffer failed: ENOMEM");
    assert_error_has("BAR1");
    assert_ptr_equal(m, SENTINEL);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, 2 * PAGE, 0, &m), PSC_OK);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d + 2 * PAGE, PAGE + 1, 0, &m2), PSC_ERR_NO_MEMORY);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d + 2 * PAGE, PAGE, 0, &m2), PSC_OK);
    assert_int_equal(psc_gpumap_unmap(m2), PSC_OK);
    assert_int_equal(psc_gpumap_unmap(m), PSC_OK);
    assert_gdr_clean();
    /* NVML's numbers, where it reports them, refuse before anything is pinned. */
    assert_int_equal(psc__gpumap_bar1_fits(3 * PAGE, 0, 0, why, sizeof(why)), 1); /* unknown */
    /* BAR1 is checked only where the mapping lives there: not the coherent backend, nothing on coherent
       platforms (a BAR1 smaller than memory must not refuse a Grace Hopper's dma-buf or gdrcopy map) */
    assert_int_equal(psc__gpumap_uses_bar1(PSC_GPUMAP_GDRCOPY, 0), 1);
    assert_int_equal(psc__gpumap_uses_bar1(PSC_GPUMAP_DMABUF, 0), 1);
    assert_int_equal(psc__gpumap_uses_bar1(PSC_GPUMAP_COHERENT, 0), 0);
    assert_int_equal(psc__gpumap_uses_bar1(PSC_GPUMAP_GDRCOPY, 1), 0);
    assert_int_equal(psc__gpumap_uses_bar1(PSC_GPUMAP_DMABUF, 1), 0);
    assert_int_equal(psc__gpumap_bar1_fits(3 * PAGE, 256u << 20, 3 * PAGE, why, sizeof(why)), 1);
    assert_int_equal(psc__gpumap_bar1_fits(3 * PAGE + 1, 256u << 20, 3 * PAGE, why, sizeof(why)), 0);
    assert_has(why, "196609 bytes");
    assert_has(why, "0 MiB free of 256 MiB");
    psc_mem_free(mem);
}

/* Pin and map failures other than BAR1: the status and the reason, nothing left pinned. */
static void test_map_gdr_failures(void **state)
{
    psc_gpumap_t *m = SENTINEL;
    psc_mem_t *mem;
    uint64_t d;

    (void)state;
    use_fake_gdr();
    open_ctx();
    d = dev_pages(0, PAGE, &mem);
    setenv("FAKE_GDR_PIN_FAIL", "22", 1);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, 8, PSC_GPUMAP_TRY(PSC_GPUMAP_GDRCOPY), &m), PSC_ERR_UNSUPPORTED);
    assert_error_has("gdr_pin_buffer failed: EINVAL");
    assert_error_has("BAR1 exhausted");
    /* gdrcopy's dma-buf fallback refusing this GPU is not a full BAR1 */
    setenv("FAKE_GDR_PIN_FAIL", "95", 1);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, 8, PSC_GPUMAP_TRY(PSC_GPUMAP_GDRCOPY), &m), PSC_ERR_UNSUPPORTED);
    assert_error_has("ENOTSUP");
    assert_error_has("exports dma-bufs");
    if (strstr(psc_context_last_error(g_ctx), "BAR1"))
        fail_msg("an ENOTSUP pin blamed on BAR1: %s", psc_context_last_error(g_ctx));
    unsetenv("FAKE_GDR_PIN_FAIL");
    setenv("FAKE_GDR_MAP_FAIL", "1", 1);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, 8, PSC_GPUMAP_TRY(PSC_GPUMAP_GDRCOPY), &m), PSC_ERR_UNSUPPORTED);
    assert_error_has("gdr_map failed: EPERM");
    assert_ptr_equal(m, SENTINEL);
    assert_gdr_clean();
    psc_mem_free(mem);
}

/* Memory freed while mapped: check says so, unmap releases it cleanly; gdrdrv's invalidation is seen too. */
static void test_freed_while_mapped(void **state)
{
    psc_gpumap_t *m, *m2;
    psc_mem_t *mem, *mem2;
    uint64_t d;

    (void)state;
    use_fake_gdr();
    setenv("FAKE_CUDA_DRIVER_VERSION", "13030", 1);
    setenv("FAKE_CUDA_DMABUF", "1", 1);
    open_ctx();
    d = dev_pages(0, PAGE, &mem);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, PAGE, PSC_GPUMAP_TRY(PSC_GPUMAP_GDRCOPY), &m), PSC_OK);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, PAGE, PSC_GPUMAP_TRY(PSC_GPUMAP_DMABUF), &m2), PSC_OK);
    assert_int_equal(psc_gpumap_check(m), PSC_OK);
    assert_int_equal(psc_gpumap_check(m2), PSC_OK);
    gdr_set_callback(1);
    assert_int_equal(psc_gpumap_check(m), PSC_ERR_INVALID);
    assert_error_has("gdrdrv invalidated");
    gdr_set_callback(0);
    assert_int_equal(psc_mem_free(mem), PSC_OK);
    assert_int_equal(psc_gpumap_check(m), PSC_ERR_INVALID);
    assert_error_has("was freed");
    assert_int_equal(psc_gpumap_check(m2), PSC_ERR_INVALID);
    /* a new allocation at the address of the old one is not the memory that was mapped */
    setenv("FAKE_CUDA_REUSE_ADDRESS", "1", 1);
    assert_int_equal(psc_mem_alloc(g_ctx, PSC_MEMKIND_DEVICE, 0, 2 * PAGE, &mem2), PSC_OK);
    unsetenv("FAKE_CUDA_REUSE_ADDRESS");
    assert_true(psc_mem_device(mem2) <= d && d < psc_mem_device(mem2) + 2 * PAGE);
    assert_int_equal(psc_gpumap_check(m), PSC_ERR_INVALID);
    assert_error_has("another allocation took its address");
    assert_int_equal(psc_gpumap_unmap(m), PSC_OK);
    assert_int_equal(psc_gpumap_unmap(m2), PSC_OK);
    assert_int_equal(psc_gpumap_check(NULL), PSC_ERR_INVALID);
    assert_int_equal(psc_gpumap_unmap(NULL), PSC_OK);
    assert_gdr_clean();
    psc_mem_free(mem2);
}

static void test_write_read_args(void **state)
{
    unsigned char buf[16] = {0};
    psc_gpumap_t *m;
    psc_mem_t *mem;
    uint64_t d;

    (void)state;
    setenv("FAKE_CUDA_COHERENT", "1", 1);
    open_ctx();
    d = dev_pages(0, PAGE, &mem);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, 100, 0, &m), PSC_OK);
    assert_int_equal(psc_gpumap_write(m, 90, buf, 10), PSC_OK);
    assert_int_equal(psc_gpumap_write(m, 91, buf, 10), PSC_ERR_INVALID);
    assert_error_has("psc_gpumap_write: 10 bytes at offset 91 run past the map's 100 bytes");
    assert_int_equal(psc_gpumap_read(m, 101, buf, 0), PSC_ERR_INVALID);
    assert_error_has("psc_gpumap_read");
    assert_int_equal(psc_gpumap_read(m, 0, buf, SIZE_MAX), PSC_ERR_INVALID);
    assert_int_equal(psc_gpumap_write(m, 0, NULL, 1), PSC_ERR_INVALID);
    assert_error_has("no buffer");
    assert_int_equal(psc_gpumap_read(m, 100, NULL, 0), PSC_OK);
    assert_int_equal(psc_gpumap_write(NULL, 0, buf, 1), PSC_ERR_INVALID);
    assert_int_equal(psc_gpumap_read(NULL, 0, buf, 1), PSC_ERR_INVALID);
    assert_null(psc_gpumap_ptr(NULL));
    assert_int_equal(psc_gpumap_size(NULL), 0);
    assert_int_equal(psc_gpumap_backend(NULL), PSC_GPUMAP_BACKENDS);
    assert_int_equal(psc_gpumap_unmap(m), PSC_OK);
    psc_mem_free(mem);
}

/*
 * libgdrapi is loaded and gdr_open'ed once per context, at its first gdrcopy map, and closed with the
 * context: later maps (and their cost) are a pin and a mapping. A failed open is not kept: the next map
 * tries again.
 */
static void test_one_gdr_per_context(void **state)
{
    psc_gpumap_t *m, *m2;
    psc_mem_t *mem;
    uint64_t d;

    (void)state;
    use_fake_gdr();
    setenv("FAKE_GDR_OPEN_FAIL", "1", 1);
    open_ctx();
    d = dev_pages(0, 2 * PAGE, &mem);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, PAGE, PSC_GPUMAP_TRY(PSC_GPUMAP_GDRCOPY), &m),
                     PSC_ERR_UNSUPPORTED);
    assert_int_equal(gdr_live(GDR_OPENS), 0);
    unsetenv("FAKE_GDR_OPEN_FAIL");
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, PAGE, 0, &m), PSC_OK);
    assert_int_equal(gdr_live(GDR_OPENS), 1);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d + PAGE, PAGE, 0, &m2), PSC_OK);
    assert_int_equal(gdr_live(GDR_OPENS), 1);
    assert_int_equal(psc_gpumap_unmap(m), PSC_OK);
    assert_int_equal(psc_gpumap_unmap(m2), PSC_OK);
    assert_int_equal(gdr_live(GDR_OPENS), 1);
    assert_int_equal(gdr_live(GDR_PINS), 0);
    assert_int_equal(psc_mem_free(mem), PSC_OK);
    psc_context_destroy(g_ctx);
    g_ctx = NULL;
    assert_gdr_clean();
    assert_int_equal(gdr_live(GDR_OPENS), 0);
}

/* Maps left behind are unmapped by psc_context_destroy, before the memory under them is freed. */
static void test_destroy_unmaps(void **state)
{
    psc_gpumap_t *m;
    psc_mem_t *mem;
    uint64_t d;

    (void)state;
    use_fake_gdr();
    open_ctx();
    d = dev_pages(0, 2 * PAGE, &mem);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d, PAGE, 0, &m), PSC_OK);
    assert_int_equal(psc_gpumap_map(g_ctx, 0, d + PAGE, PAGE, 0, &m), PSC_OK);
    assert_int_equal(gdr_live(GDR_MAPS), 2);
    psc_context_destroy(g_ctx);
    g_ctx = NULL;
    assert_gdr_clean();
}

/* The caller's current context is as it was, after success and after failure. */
static void test_caller_context_kept(void **state)
{
    psc_gpumap_report_t r;
    psc_gpumap_t *m;
    psc_mem_t *mem;
    uint64_t d;

    (void)state;
    use_fake_gdr();
    open_ctx();
    d = dev_pages(1, PAGE, &mem);
    fake_set_current(CALLER_CTX);
    assert_int_equal(psc_gpumap_map(g_ctx, 1, d, 8, 0, &m), PSC_OK);
    assert_ptr_equal(fake_current(), CALLER_CTX);
    assert_int_equal(psc_gpumap_map(g_ctx, 1, d, 8, PSC_GPUMAP_TRY(PSC_GPUMAP_COHERENT), &m), PSC_ERR_UNSUPPORTED);
    assert_ptr_equal(fake_current(), CALLER_CTX);
    assert_int_equal(psc_gpumap_probe(g_ctx, 1, &r), PSC_OK);
    assert_ptr_equal(fake_current(), CALLER_CTX);
    fake_set_current(NULL);
    psc_mem_free(mem);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_backend_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_nothing_usable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_gdr_reasons, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_gdr_usable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_dmabuf, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_coherent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backend_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roundtrip_gdrcopy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roundtrip_dmabuf, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roundtrip_coherent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_unsupported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_over_bar1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_gdr_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_freed_while_mapped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_read_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_destroy_unmaps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_gdr_per_context, setup, teardown),
        cmocka_unit_test_setup_teardown(test_caller_context_kept, setup, teardown),
    };

    psc_test_fake_driver("contexts", "2");
    /* Both fakes stay loaded for the whole run, so their counters outlive the library's dlclose. */
    g_gdr = dlopen(FAKE_LIBGDRAPI, RTLD_NOW | RTLD_LOCAL);
    g_cuda = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
    if (!g_gdr || !g_cuda)
        return 1;
    *(void **)&gdr_live = dlsym(g_gdr, "fake_gdr_live");
    *(void **)&gdr_set_callback = dlsym(g_gdr, "fake_gdr_set_callback");
    *(void **)&fake_current = dlsym(g_cuda, "fake_cuda_current");
    *(void **)&fake_set_current = dlsym(g_cuda, "fake_cuda_set_current");
    if (!gdr_live || !gdr_set_callback || !fake_current || !fake_set_current)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
