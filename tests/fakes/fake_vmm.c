/*
 * The fake driver's VMM and IPC calls (contexts mode): an allocation is a
 * memfd, its exported descriptor a dup of it, a reserved range an anonymous
 * PROT_NONE mapping and cuMemMap a shared mapping of the memfd there, so two
 * mappings (two processes, or one importing its own export) see the same
 * bytes. Access per device is remembered for cuMemGetAccess. Legacy IPC
 * handles carry the exporting process's pid and refuse to open in it, as the
 * driver does; in another process they map the same bytes.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define FAKE_VMM_MAX 64
#define FAKE_VMM_GRAN (2u << 20)

static struct { int fd; size_t size; } fake_vmm[FAKE_VMM_MAX];                              /* handle = index + 1 */
static struct { uintptr_t ptr; size_t size; unsigned long long access[8]; } fake_maps[FAKE_VMM_MAX];
static int fake_vmm_fabric_ok;

void fake_cuda_vmm_fabric(int ok) { fake_vmm_fabric_ok = ok; }
/* FAKE_CUDA_FABRIC=1: fabric handles work from the start (for worker processes a test starts). */
static int fake_env_fabric(void)
{
    const char *f = getenv("FAKE_CUDA_FABRIC");

    return f && strcmp(f, "1") == 0;
}

/* A fabric handle: the exporting process and its descriptor of the allocation, opened through /proc elsewhere. */
typedef struct {
    int32_t fd, pid;
} fake_fabric_t;
_Static_assert(sizeof(fake_fabric_t) <= sizeof(CUmemFabricHandle), "a fabric handle holds the fake's fields");
/* Live allocation handles (created or imported, not released): a leak shows. */
int fake_cuda_vmm_live(void)
{
    int n = 0;

    for (int i = 0; i < FAKE_VMM_MAX; i++)
        n += fake_vmm[i].fd > 0;
    return n;
}

static CUresult fake_vmm_new(int fd, CUmemGenericAllocationHandle *h)
{
    struct stat st;

    if (fstat(fd, &st) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < FAKE_VMM_MAX; i++)
        if (fake_vmm[i].fd <= 0) {
            fake_vmm[i].fd = fd;
            fake_vmm[i].size = (size_t)st.st_size;
            *h = (CUmemGenericAllocationHandle)(i + 1);
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static int fake_vmm_fd(CUmemGenericAllocationHandle h)
{
    return h >= 1 && h <= FAKE_VMM_MAX && fake_vmm[h - 1].fd > 0 ? fake_vmm[h - 1].fd : -1;
}

static CUresult fake_granularity(size_t *g, const CUmemAllocationProp *p, CUmemAllocationGranularity_flags f)
{
    (void)p, (void)f;
    *g = FAKE_VMM_GRAN;
    return CUDA_SUCCESS;
}

static CUresult fake_mem_create(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *p,
                                unsigned long long flags)
{
    int fd;

    if (flags || size % FAKE_VMM_GRAN)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->requestedHandleTypes == CU_MEM_HANDLE_TYPE_FABRIC && !fake_vmm_fabric_ok && !fake_env_fabric())
        return CUDA_ERROR_NOT_PERMITTED; /* no IMEX channel */
    if ((fd = memfd_create("fake_vmm", MFD_CLOEXEC)) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (ftruncate(fd, (off_t)size) != 0 || fake_vmm_new(fd, h) != CUDA_SUCCESS) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

static CUresult fake_mem_release(CUmemGenericAllocationHandle h)
{
    int fd = fake_vmm_fd(h);

    if (fd < 0)
        return CUDA_ERROR_INVALID_VALUE;
    close(fd);
    fake_vmm[h - 1].fd = 0;
    return CUDA_SUCCESS;
}

static CUresult fake_export(void *out, CUmemGenericAllocationHandle h, CUmemAllocationHandleType t,
                            unsigned long long flags)
{
    int fd = fake_vmm_fd(h);

    if (fd < 0 || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (t == CU_MEM_HANDLE_TYPE_FABRIC) {
        fake_fabric_t f = {fd, getpid()};

        memset(out, 0, sizeof(CUmemFabricHandle));
        memcpy(out, &f, sizeof(f));
        return CUDA_SUCCESS;
    }
    if (t != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED;
    *(int *)out = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    return *(int *)out >= 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult fake_import(CUmemGenericAllocationHandle *h, void *handle, CUmemAllocationHandleType t)
{
    int fd, own;

    if (t == CU_MEM_HANDLE_TYPE_FABRIC) {
        fake_fabric_t f;
        char path[64];

        memcpy(&f, handle, sizeof(f));
        own = f.fd;
        snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)f.pid, (int)f.fd);
        if (f.pid == getpid())
            fd = fcntl(own, F_DUPFD_CLOEXEC, 0);
        else
            fd = f.pid > 0 && f.fd >= 0 ? open(path, O_RDWR | O_CLOEXEC) : -1;
    } else if (t == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
        fd = fcntl((int)(intptr_t)handle, F_DUPFD_CLOEXEC, 0);
    } else {
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (fd < 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if (fake_vmm_new(fd, h) != CUDA_SUCCESS) {
        close(fd);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    return CUDA_SUCCESS;
}

static CUresult fake_reserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr, unsigned long long flags)
{
    void *p;

    (void)align, (void)addr;
    if (flags || !size)
        return CUDA_ERROR_INVALID_VALUE;
    p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

static CUresult fake_address_free(CUdeviceptr ptr, size_t size)
{
    return munmap((void *)(uintptr_t)ptr, size) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static int fake_map_find(uintptr_t p)
{
    for (int i = 0; i < FAKE_VMM_MAX; i++)
        if (fake_maps[i].ptr && p >= fake_maps[i].ptr && p < fake_maps[i].ptr + fake_maps[i].size)
            return i;
    return -1;
}

static CUresult fake_map(CUdeviceptr ptr, size_t size, size_t off, CUmemGenericAllocationHandle h,
                         unsigned long long flags)
{
    int fd = fake_vmm_fd(h);

    if (fd < 0 || flags || off + size > fake_vmm[h - 1].size)
        return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < FAKE_VMM_MAX; i++)
        if (!fake_maps[i].ptr) {
            if (mmap((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, (off_t)off) ==
                MAP_FAILED)
                return CUDA_ERROR_INVALID_VALUE;
            memset(&fake_maps[i], 0, sizeof(fake_maps[i]));
            fake_maps[i].ptr = (uintptr_t)ptr;
            fake_maps[i].size = size;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult fake_unmap(CUdeviceptr ptr, size_t size)
{
    int i = fake_map_find((uintptr_t)ptr);

    if (i < 0 || fake_maps[i].size != size)
        return CUDA_ERROR_INVALID_VALUE;
    mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    fake_maps[i].ptr = 0;
    return CUDA_SUCCESS;
}

static CUresult fake_set_access(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *d, size_t n)
{
    int i = fake_map_find((uintptr_t)ptr);

    if (i < 0 || size > fake_maps[i].size)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t k = 0; k < n; k++) {
        if (d[k].location.type != CU_MEM_LOCATION_TYPE_DEVICE || d[k].location.id < 0 || d[k].location.id >= 8)
            return CUDA_ERROR_INVALID_DEVICE;
        fake_maps[i].access[d[k].location.id] = d[k].flags;
    }
    return CUDA_SUCCESS;
}

static CUresult fake_get_access(unsigned long long *flags, const CUmemLocation *loc, CUdeviceptr ptr)
{
    int i = fake_map_find((uintptr_t)ptr);

    if (i < 0 || loc->type != CU_MEM_LOCATION_TYPE_DEVICE || loc->id < 0 || loc->id >= 8)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = fake_maps[i].access[loc->id];
    return CUDA_SUCCESS;
}

/*
 * Legacy handles: the exporter's pid, the address, the memfd its allocation moved onto (fake_libcuda.c), its
 * length and GPU. Opening in the same process fails as in the driver; another process maps the memfd, found
 * through /proc/<pid>/fd, so both see the same bytes.
 */
int fake_cuda_alloc_share(uintptr_t p, size_t *len, int *dev);
int fake_cuda_alloc_imported(void *p, size_t len, int dev);
void fake_cuda_alloc_closed(void *p);

typedef struct {
    int32_t pid, dev;
    uint64_t ptr;
    int32_t fd, pad;
    uint64_t len;
} fake_ipc_mem_t;
_Static_assert(sizeof(fake_ipc_mem_t) <= sizeof(CUipcMemHandle), "a legacy handle holds the fake's fields");

static struct { uintptr_t ptr; size_t len; } fake_ipc_maps[FAKE_VMM_MAX]; /* handles this process opened */

static CUresult fake_ipc_get(CUipcMemHandle *h, CUdeviceptr p)
{
    fake_ipc_mem_t m = {getpid(), 0, p, -1, 0, 0};
    size_t len = 0;
    int dev = 0;

    if (!p || (m.fd = fake_cuda_alloc_share((uintptr_t)p, &len, &dev)) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    m.len = len;
    m.dev = dev;
    memset(h, 0, sizeof(*h));
    memcpy(h->reserved, &m, sizeof(m));
    return CUDA_SUCCESS;
}

static CUresult fake_ipc_open(CUdeviceptr *p, CUipcMemHandle h, unsigned flags)
{
    fake_ipc_mem_t m;
    char path[64];
    struct stat st;
    void *q;
    int fd, slot = -1;

    (void)flags;
    memcpy(&m, h.reserved, sizeof(m));
    if (m.pid == getpid())
        return CUDA_ERROR_INVALID_CONTEXT;
    for (int i = 0; i < FAKE_VMM_MAX && slot < 0; i++)
        if (!fake_ipc_maps[i].ptr)
            slot = i;
    if (slot < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)m.pid, (int)m.fd);
    if (m.pid <= 0 || m.fd < 0 || !m.len || (fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
        return CUDA_ERROR_INVALID_HANDLE;
    q = fstat(fd, &st) == 0 && (uint64_t)st.st_size >= m.len
            ? mmap(NULL, (size_t)m.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
            : MAP_FAILED;
    close(fd);
    if (q == MAP_FAILED)
        return CUDA_ERROR_INVALID_HANDLE;
    if (fake_cuda_alloc_imported(q, (size_t)m.len, m.dev) != 0) {
        munmap(q, (size_t)m.len);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    fake_ipc_maps[slot].ptr = (uintptr_t)q;
    fake_ipc_maps[slot].len = (size_t)m.len;
    *p = (CUdeviceptr)(uintptr_t)q;
    return CUDA_SUCCESS;
}

static CUresult fake_ipc_close(CUdeviceptr p)
{
    for (int i = 0; i < FAKE_VMM_MAX; i++)
        if (p && fake_ipc_maps[i].ptr == (uintptr_t)p) {
            fake_cuda_alloc_closed((void *)(uintptr_t)p);
            munmap((void *)(uintptr_t)p, fake_ipc_maps[i].len);
            fake_ipc_maps[i].ptr = 0;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_INVALID_VALUE;
}

void *fake_vmm_lookup(const char *symbol)
{
    static const struct { const char *name; void *fn; } t[] = {
        {"cuMemGetAllocationGranularity", (void *)fake_granularity},
        {"cuMemCreate", (void *)fake_mem_create},
        {"cuMemRelease", (void *)fake_mem_release},
        {"cuMemExportToShareableHandle", (void *)fake_export},
        {"cuMemImportFromShareableHandle", (void *)fake_import},
        {"cuMemAddressReserve", (void *)fake_reserve},
        {"cuMemAddressFree", (void *)fake_address_free},
        {"cuMemMap", (void *)fake_map},
        {"cuMemUnmap", (void *)fake_unmap},
        {"cuMemSetAccess", (void *)fake_set_access},
        {"cuMemGetAccess", (void *)fake_get_access},
        {"cuIpcGetMemHandle", (void *)fake_ipc_get},
        {"cuIpcOpenMemHandle", (void *)fake_ipc_open},
        {"cuIpcCloseMemHandle", (void *)fake_ipc_close},
    };

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (strcmp(symbol, t[i].name) == 0)
            return t[i].fn;
    return NULL;
}
