/*
 * A stand-in for gdrcopy's libgdrapi.so.2 (loaded through P2PSCOPE_LIBGDRAPI)
 * for control-flow tests without gdrdrv: device memory is host memory in the
 * fake libcuda, so a "mapping" is the pinned page's own address. It checks
 * what gdrdrv and libgdrapi check (a mapping of the pinned size or less, of a
 * GPU-page-aligned pin; unmap with what map gave; unmap before unpin; unpin
 * before close) and counts what is live. Types as gdrapi.h 2.6 declares them.
 *   FAKE_GDR_OPEN_FAIL=1     gdr_open returns NULL
 *   FAKE_GDR_VERSION=M.m     libgdrapi's version (default 2.6)
 *   FAKE_GDR_DRV_VERSION=M.m gdrdrv's (default 2.5)
 *   FAKE_GDR_DMABUF=1        GDR_ATTR_USING_DMA_BUF_MMAP answers 1
 *   FAKE_GDR_BAR1=N          pins fail with ENOMEM once N bytes are pinned
 *   FAKE_GDR_PIN_FAIL=E      gdr_pin_buffer fails with errno E
 *   FAKE_GDR_MAP_FAIL=E      gdr_map fails with errno E
 *   FAKE_GDR_MAP_SHADOW=1    gdr_map hands out zeroed host memory of its own, not the pinned device memory:
 *                            a broken BAR path (the CPU's stores never reach the GPU, its loads read zeros)
 * For tests: fake_gdr_live(what) (0 opens, 1 pins, 2 maps, 3 misuses seen),
 * fake_gdr_set_callback(on) (gdrdrv's invalidation flag on every pin).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
#define FAKE_GPU_PAGE 65536ul

typedef struct gdr { int magic; } *gdr_t;
typedef struct gdr_mh_s { unsigned long h; } gdr_mh_t;
typedef struct gdr_info_v2 {
    uint64_t va;
    uint64_t mapped_size;
    uint32_t page_size;
    uint64_t tm_cycles;
    uint32_t cycles_per_ms;
    unsigned mapped : 1;
    unsigned wc_mapping : 1;
    int mapping_type;
} gdr_info_v2_t;

#define FAKE_PINS 64
static struct { int live, mapped, shadow; uint64_t va, size, offset; void *map_va; size_t map_size; gdr_t g; } fake_pins[FAKE_PINS];
static int fake_opens, fake_misuses, fake_callback;
static uint64_t fake_pinned;

static int fake_env_int(const char *name, int dflt)
{
    const char *s = getenv(name);

    return s && *s ? atoi(s) : dflt;
}

static void fake_version(const char *name, int dmajor, int dminor, int *major, int *minor)
{
    const char *s = getenv(name);

    *major = dmajor, *minor = dminor;
    if (s && sscanf(s, "%d.%d", major, minor) != 2)
        *major = dmajor, *minor = dminor;
}

static int fake_pin_of(gdr_t g, gdr_mh_t mh)
{
    unsigned long i = mh.h - 1;

    if (i >= FAKE_PINS || !fake_pins[i].live || fake_pins[i].g != g) {
        fake_misuses++;
        return -1;
    }
    return (int)i;
}

FAKE_EXPORT int fake_gdr_live(int what)
{
    int n = 0;

    switch (what) {
    case 0: return fake_opens;
    case 1: case 2:
        for (int i = 0; i < FAKE_PINS; i++)
            n += what == 1 ? fake_pins[i].live : fake_pins[i].live && fake_pins[i].mapped;
        return n;
    default: return fake_misuses;
    }
}

FAKE_EXPORT void fake_gdr_set_callback(int on) { fake_callback = on; }

FAKE_EXPORT gdr_t gdr_open(void)
{
    gdr_t g;

    if (fake_env_int("FAKE_GDR_OPEN_FAIL", 0) || !(g = calloc(1, sizeof(*g))))
        return NULL;
    g->magic = 0x6d72;
    fake_opens++;
    return g;
}

FAKE_EXPORT int gdr_close(gdr_t g)
{
    if (!g || g->magic != 0x6d72)
        return EINVAL;
    for (int i = 0; i < FAKE_PINS; i++)
        if (fake_pins[i].live && fake_pins[i].g == g)
            fake_misuses++; /* closed with pins left */
    g->magic = 0;
    free(g);
    fake_opens--;
    return 0;
}

FAKE_EXPORT int gdr_pin_buffer(gdr_t g, unsigned long addr, size_t size, uint64_t token, uint32_t va_space,
                               gdr_mh_t *mh)
{
    uint64_t va = addr & ~(FAKE_GPU_PAGE - 1), len = (addr + size - va + FAKE_GPU_PAGE - 1) & ~(FAKE_GPU_PAGE - 1);
    const char *bar1 = getenv("FAKE_GDR_BAR1");
    int e = fake_env_int("FAKE_GDR_PIN_FAIL", 0);

    if (!g || g->magic != 0x6d72 || !size || token || va_space || !mh)
        return EINVAL;
    if (e)
        return e;
    if (bar1 && fake_pinned + len > strtoull(bar1, NULL, 0))
        return ENOMEM;
    for (int i = 0; i < FAKE_PINS; i++)
        if (!fake_pins[i].live) {
            fake_pins[i].live = 1;
            fake_pins[i].mapped = 0;
            fake_pins[i].va = va;
            fake_pins[i].size = len;
            fake_pins[i].offset = addr - va; /* gdrdrv keeps it, and its mmap refuses a pin that had one */
            fake_pins[i].g = g;
            fake_pinned += len;
            mh->h = (unsigned long)i + 1;
            return 0;
        }
    return ENOMEM;
}

FAKE_EXPORT int gdr_unpin_buffer(gdr_t g, gdr_mh_t mh)
{
    int i = fake_pin_of(g, mh);

    if (i < 0)
        return EINVAL;
    if (fake_pins[i].mapped)
        fake_misuses++; /* gdrapi unmaps it for you, but the caller should have */
    fake_pins[i].live = 0;
    fake_pinned -= fake_pins[i].size;
    return 0;
}

FAKE_EXPORT int gdr_get_callback_flag(gdr_t g, gdr_mh_t mh, int *flag)
{
    if (fake_pin_of(g, mh) < 0)
        return EINVAL;
    *flag = fake_callback;
    return 0;
}

FAKE_EXPORT int gdr_get_info_v2(gdr_t g, gdr_mh_t mh, gdr_info_v2_t *info)
{
    int i = fake_pin_of(g, mh);

    if (i < 0)
        return EINVAL;
    memset(info, 0, sizeof(*info));
    info->va = fake_pins[i].va;
    info->mapped_size = fake_pins[i].size;
    info->page_size = FAKE_GPU_PAGE;
    info->mapped = (unsigned)fake_pins[i].mapped;
    info->wc_mapping = (unsigned)fake_pins[i].mapped;
    info->mapping_type = fake_pins[i].mapped ? 1 : 0;
    return 0;
}

FAKE_EXPORT int gdr_map(gdr_t g, gdr_mh_t mh, void **va, size_t size)
{
    int i = fake_pin_of(g, mh), e = fake_env_int("FAKE_GDR_MAP_FAIL", 0);

    if (i < 0)
        return EINVAL;
    if (fake_pins[i].mapped)
        return EAGAIN;
    if (!size || size > fake_pins[i].size || fake_pins[i].offset) /* gdrdrv: "offset != 0 is not supported" */
        return EINVAL;
    if (e)
        return e;
    fake_pins[i].shadow = fake_env_int("FAKE_GDR_MAP_SHADOW", 0);
    fake_pins[i].map_va = fake_pins[i].shadow ? calloc(1, size) : (void *)(uintptr_t)fake_pins[i].va;
    if (!fake_pins[i].map_va)
        return ENOMEM;
    fake_pins[i].mapped = 1;
    fake_pins[i].map_size = size;
    *va = fake_pins[i].map_va;
    return 0;
}

FAKE_EXPORT int gdr_unmap(gdr_t g, gdr_mh_t mh, void *va, size_t size)
{
    int i = fake_pin_of(g, mh);

    if (i < 0)
        return EINVAL;
    if (!fake_pins[i].mapped || va != fake_pins[i].map_va || size != fake_pins[i].map_size) {
        fake_misuses++;
        return EINVAL;
    }
    fake_pins[i].mapped = 0;
    if (fake_pins[i].shadow)
        free(fake_pins[i].map_va);
    return 0;
}

FAKE_EXPORT void gdr_runtime_get_version(int *major, int *minor) { fake_version("FAKE_GDR_VERSION", 2, 6, major, minor); }

FAKE_EXPORT int gdr_driver_get_version(gdr_t g, int *major, int *minor)
{
    if (!g || g->magic != 0x6d72)
        return EINVAL;
    if (fake_env_int("FAKE_GDR_DMABUF", 0))
        abort(); /* gdrcopy 2.6 asserts its gdrdrv descriptor, which a dma-buf fallback does not have */
    fake_version("FAKE_GDR_DRV_VERSION", 2, 5, major, minor);
    return 0;
}

FAKE_EXPORT int gdr_get_attribute(gdr_t g, int attr, int *v)
{
    if (!g || g->magic != 0x6d72)
        return EINVAL;
    *v = attr == 3 ? fake_env_int("FAKE_GDR_DMABUF", 0) : attr == 1;
    return 0;
}
