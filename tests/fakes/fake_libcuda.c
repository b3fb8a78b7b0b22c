/*
 * A stand-in for libcuda.so.1 for control-flow tests of the real binary (no
 * GPU needed). FAKE_CUDA_MODE picks what it pretends:
 *   nodevice  cuInit answers CUDA_ERROR_NO_DEVICE
 *   init:N    cuInit answers CUresult N (e.g. init:803, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)
 *   initfail  cuInit answers CUDA_ERROR_UNKNOWN (a driver that is there but broken)
 *   missing   the driver lacks cuMemcpyAsync
 *   gpus      GPUs that enumerate but cannot make a context, so every
 *             measurement fails with the driver's error
 *   contexts  GPUs whose primary contexts, memory, streams and peer access
 *             work (host memory stands in), while kernels cannot launch: for
 *             what a call leaves behind (current context, peer access), which
 *             fake_cuda_current() and fake_cuda_peer() let a test read; with
 *             fake_cuda_run_copies(1), or FAKE_CUDA_KERNELS=1 in the
 *             environment (for worker processes), p2pscope's kernels run on
 *             the CPU (fake_kernels.c) and copies move the bytes, so the
 *             measurement code runs end to end
 * FAKE_CUDA_NAME=TEXT names GPU d "TEXT d" (default "Fake GPU d").
 * FAKE_CUDA_COUNT sets how many GPUs it reports (default 2; -10000 to 10000,
 * since a broken driver may answer anything). FAKE_CUDA_UUID=N gives GPU d
 * the UUID whose first bytes are N and d (another N: another machine's
 * GPUs); unset, cuDeviceGetUuid is not supported. FAKE_CUDA_FABRIC=1 lets
 * VMM allocations take fabric handles from the start (fake_vmm.c).
 * CPU mappings (gpumap): FAKE_CUDA_DRIVER_VERSION=N is what cuDriverGetVersion
 * answers (default 13000); FAKE_CUDA_COHERENT=1 reports a coherent platform
 * (host page tables, direct host access, native atomics); FAKE_CUDA_DMABUF=1
 * lets GPUs export dma-bufs (cuMemGetHandleForAddressRange: the range's pages
 * move onto a memfd, so a CPU mapping of it shares the bytes), and
 * FAKE_CUDA_DMABUF=refuse exports one the CPU cannot mmap (older drivers).
 * FAKE_CUDA_NO_EARLY=1: cuLaunchKernelEx refuses programmatic dependent launches (CUDA_ERROR_NOT_SUPPORTED).
 * FAKE_CUDA_REUSE_ADDRESS=1: a device allocation takes the last freed one's address where it is free.
 * FAKE_CUDA_NO_STREAM_WRITES=1: the driver lacks cuStreamWriteValue32 (the all-reduce's copy-engine path);
 * FAKE_CUDA_STREAM_WRITES=refuse: it has it, and refuses every write (stream memory operations not enabled).
 * FAKE_CUDA_GRAPHS=1 lets streams capture CUDA graphs (fake_graph.c: the
 * driver's rules on the order of capture calls, not the work).
 * A node gone wrong, for check --fleet's tests: FAKE_CUDA_SLOW=F makes every timed interval F times longer (a node
 * whose paths run at 1/F of the others' speed); FAKE_CUDA_DIE=SIG raises signal SIG at the first event recorded (a
 * driver that crashes or a process the OOM killer takes); FAKE_CUDA_HANG=1 never returns from it (a GPU that hangs).
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define FAKE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FAKE_ASAN 1
#endif
#endif
#ifdef FAKE_ASAN
#include <sanitizer/asan_interface.h>
#define FAKE_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define FAKE_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define FAKE_POISON(p, n) ((void)(p), (void)(n))
#define FAKE_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* fake_kernels.c: p2pscope's kernels on the CPU, and the threads of the flag kernels ("jobs"). */
CUresult fake_kernel_run(const char *name, CUstream s, CUcontext c, void **params);
void fake_kernels_wait_stream(CUstream s); /* join the jobs of stream s */
void fake_kernels_wait_ctx(CUcontext c);   /* of context c; NULL: all */
int fake_kernels_busy(CUstream s);         /* 1 while a job of s works */
uint64_t fake_kernels_ns(void);            /* the fake clock, ns */

static const char *fake_mode(void)
{
    const char *m = getenv("FAKE_CUDA_MODE");
    return m ? m : "gpus";
}

static CUresult fake_unsupported(void) { return CUDA_ERROR_NOT_SUPPORTED; }

static CUresult fake_init(unsigned flags)
{
    const char *m = fake_mode();

    (void)flags;
    if (strncmp(m, "init:", 5) == 0)
        return (CUresult)atoi(m + 5);
    if (strcmp(m, "initfail") == 0)
        return CUDA_ERROR_UNKNOWN;
    return strcmp(m, "nodevice") == 0 ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}

static CUresult fake_driver_version(int *v)
{
    const char *s = getenv("FAKE_CUDA_DRIVER_VERSION");

    *v = s ? atoi(s) : 13000;
    return CUDA_SUCCESS;
}
static int fake_ngpu(void)
{
    const char *s = getenv("FAKE_CUDA_COUNT");
    int n = s ? atoi(s) : 2;

    return n >= -10000 && n <= 10000 ? n : 2;
}

static CUresult fake_count(int *n) { *n = fake_ngpu(); return CUDA_SUCCESS; }
static CUresult fake_get(CUdevice *d, int i) { *d = i; return i >= 0 && i < fake_ngpu() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }

static CUresult fake_name(char *name, int len, CUdevice d)
{
    const char *base = getenv("FAKE_CUDA_NAME"); /* a name from outside, e.g. with markup in it, for the writers' tests */

    snprintf(name, (size_t)len, "%s %d", base ? base : "Fake GPU", d);
    return CUDA_SUCCESS;
}

static CUresult fake_uuid(CUuuid *u, CUdevice d)
{
    const char *n = getenv("FAKE_CUDA_UUID");

    if (!n)
        return CUDA_ERROR_NOT_SUPPORTED;
    memset(u, 0, sizeof(*u));
    u->bytes[0] = (char)atoi(n);
    u->bytes[1] = (char)d;
    return CUDA_SUCCESS;
}

static CUresult fake_bus_id(char *id, int len, CUdevice d)
{
    snprintf(id, (size_t)len, "0000:%02x:%02x.0", (0x10 + d) % 256, (0x10 + d) / 256);
    return CUDA_SUCCESS;
}

static CUresult fake_total_mem(size_t *b, CUdevice d)
{
    (void)d;
    *b = 80ull << 30;
    return CUDA_SUCCESS;
}

static CUresult fake_attr(int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *v = 3; break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED: *v = 1; break; /* says yes; cuMemCreate says no without IMEX */
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES:
    case CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST:
    case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED: *v = getenv("FAKE_CUDA_COHERENT") != NULL; break;
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: *v = getenv("FAKE_CUDA_DMABUF") != NULL; break;
    default: *v = 0; break;
    }
    return CUDA_SUCCESS;
}

static CUresult fake_error_name(CUresult rc, const char **s)
{
    static const struct { CUresult rc; const char *name; } names[] = {
        {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
        {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
        {CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER"},
        {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
        {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
        {CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
        {CUDA_ERROR_OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM"},
        {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
        {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED"},
    };

    *s = "CUDA_ERROR_FAKE";
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].rc == rc)
            *s = names[i].name;
    return CUDA_SUCCESS;
}

static CUresult fake_error_string(CUresult rc, const char **s)
{
    *s = rc == CUDA_ERROR_NOT_SUPPORTED ? "operation not supported (fake driver)" : "fake driver error";
    return CUDA_SUCCESS;
}

/* ---- contexts mode: the calling thread's current context and peer access between primary contexts. */
#define FAKE_MAX 64
/* The thread's context stack, as the driver keeps it: cuCtxSetCurrent replaces the top (pushes onto an
 * empty stack), and NULL pops it. */
static _Thread_local CUcontext fake_stack[16];
static _Thread_local int fake_depth;
static int fake_enable_fails;
static int fake_peer_on[FAKE_MAX][FAKE_MAX];
static int fake_ctx_mode(void) { return strcmp(fake_mode(), "contexts") == 0; }
/* Primary context of GPU d: a stable non-NULL handle. */
static CUcontext fake_primary(int d) { return (CUcontext)(uintptr_t)(0x1000 + 16 * (d + 1)); }
static int fake_ctx_gpu(CUcontext c)
{
    uintptr_t v = (uintptr_t)c;
    return v > 0x1000 && (v - 0x1000) % 16 == 0 && (int)((v - 0x1000) / 16) - 1 < FAKE_MAX ? (int)((v - 0x1000) / 16) - 1 : -1;
}

/* For tests: the calling thread's current context, and peer access from GPU a's context to GPU b's. */
static CUresult fake_set_current(CUcontext c);
void *fake_cuda_current(void) { return fake_depth ? (void *)fake_stack[fake_depth - 1] : NULL; }
void fake_cuda_set_current(void *c) { fake_set_current((CUcontext)c); }
/* For tests: the application's own stack. */
void fake_cuda_push(void *c) { if (fake_depth < 16) fake_stack[fake_depth++] = (CUcontext)c; }
int fake_cuda_depth(void) { return fake_depth; }
void *fake_cuda_stack_at(int i) { return i >= 0 && i < fake_depth ? (void *)fake_stack[i] : NULL; }
void fake_cuda_clear_stack(void) { fake_depth = 0; }
/* For tests: cuCtxEnablePeerAccess fails (CUDA_ERROR_TOO_MANY_PEERS) while on. */
void fake_cuda_fail_peer_enable(int on) { fake_enable_fails = on; }
void *fake_cuda_primary(int d) { return (void *)fake_primary(d); }
int fake_cuda_peer(int a, int b) { return a >= 0 && b >= 0 && a < FAKE_MAX && b < FAKE_MAX ? fake_peer_on[a][b] : -1; }
void fake_cuda_set_peer(int a, int b, int on) { if (a >= 0 && b >= 0 && a < FAKE_MAX && b < FAKE_MAX) fake_peer_on[a][b] = on; }

static CUresult fake_get_current(CUcontext *c) { *c = (CUcontext)fake_cuda_current(); return CUDA_SUCCESS; }
static CUresult fake_set_current(CUcontext c)
{
    if (!c) {
        fake_depth -= fake_depth > 0;
        return CUDA_SUCCESS;
    }
    if (fake_depth == 0)
        fake_depth = 1;
    fake_stack[fake_depth - 1] = c;
    return CUDA_SUCCESS;
}
/* Primary contexts retained per device: a test can tell which GPUs a process made contexts on. */
static int fake_retains[FAKE_MAX];
int fake_cuda_retains(int d) { return d >= 0 && d < FAKE_MAX ? fake_retains[d] : -1; }
/* The library's cuCtxSetCurrent calls, counted (a test's own changes through fake_cuda_set_current are not). */
static int fake_set_current_calls;
int fake_cuda_set_current_calls(void) { return fake_set_current_calls; }
static CUresult fake_set_current_counted(CUcontext c)
{
    fake_set_current_calls++;
    return fake_set_current(c);
}
static CUresult fake_retain(CUcontext *c, CUdevice d)
{
    if (!fake_ctx_mode())
        return CUDA_ERROR_NOT_SUPPORTED;
    if (d >= 0 && d < FAKE_MAX)
        fake_retains[d]++;
    *c = fake_primary(d);
    return CUDA_SUCCESS;
}
/* Releasing a primary context waits for its flag kernels (the fake keeps one reference: each release is the last). */
static CUresult fake_release(CUdevice d)
{
    fake_kernels_wait_ctx(fake_primary(d));
    return CUDA_SUCCESS;
}
static CUresult fake_ok(void) { return CUDA_SUCCESS; }
static CUresult fake_module_load(CUmodule *m, const void *image) { (void)image; *m = (CUmodule)(uintptr_t)0x10; return CUDA_SUCCESS; }
/* Each kernel name gets its own handle (an index into fake_fn_names), so a launch can tell which ran. */
#define FAKE_FN_MAX 64
static const char *fake_fn_names[FAKE_FN_MAX];
static int fake_nfn;
static CUresult fake_get_function(CUfunction *f, CUmodule m, const char *name)
{
    int i = 0;

    (void)m;
    while (i < fake_nfn && strcmp(fake_fn_names[i], name) != 0)
        i++;
    if (i == fake_nfn && fake_nfn < FAKE_FN_MAX)
        fake_fn_names[fake_nfn++] = name; /* the library's string literals outlive the module */
    *f = (CUfunction)(uintptr_t)(0x100 + i);
    return CUDA_SUCCESS;
}
/* A stream remembers the context it was made in (cuStreamGetCtx). */
typedef struct { unsigned magic; CUcontext ctx; cuuint64_t capture; /* the capture it is in; 0 none */ } fake_stream_t;
#define FAKE_STREAM_MAGIC 0x57AEA11u
/* NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD: no stream object, the current context's (never captured here). */
static int fake_stream_special(CUstream s)
{
    return !s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}
static CUcontext fake_stream_ctx(CUstream s)
{
    return !fake_stream_special(s) ? ((const fake_stream_t *)s)->ctx : (CUcontext)fake_cuda_current();
}
static CUresult fake_stream_create(CUstream *s, unsigned flags)
{
    fake_stream_t *fs = malloc(sizeof(*fs));

    (void)flags;
    if (!fs)
        return CUDA_ERROR_OUT_OF_MEMORY;
    fs->magic = FAKE_STREAM_MAGIC;
    fs->ctx = (CUcontext)fake_cuda_current();
    fs->capture = 0;
    *s = (CUstream)fs;
    return CUDA_SUCCESS;
}
static CUresult fake_stream_destroy(CUstream s)
{
    fake_stream_t *fs = (fake_stream_t *)s;

    if (fake_stream_special(s) || fs->magic != FAKE_STREAM_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    fake_kernels_wait_stream(s); /* its flag kernels end before the stream is gone */
    fs->magic = 0;
    free(fs);
    return CUDA_SUCCESS;
}
/* For tests: a stream of a context that is no GPU's primary context (the caller must free() it). */
void *fake_cuda_foreign_stream(void)
{
    fake_stream_t *fs = malloc(sizeof(*fs));

    if (fs) {
        fs->magic = FAKE_STREAM_MAGIC;
        fs->ctx = (CUcontext)(uintptr_t)0x9990;
        fs->capture = 0;
    }
    return fs;
}
static CUresult fake_stream_get_ctx(CUstream s, CUcontext *c)
{
    const fake_stream_t *fs = (const fake_stream_t *)s;

    if (fake_stream_special(s)) {
        *c = (CUcontext)fake_cuda_current();
        return *c ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    }
    if (fs->magic != FAKE_STREAM_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    *c = fs->ctx;
    return CUDA_SUCCESS;
}

/*
 * What memory the fake has handed out (host memory stands in for device memory), for pointer attributes.
 * Device memory is a mapping of its own; exported by a legacy IPC handle it moves onto a memfd (fd), so another
 * process can map the same bytes.
 */
/* opener: for memory opened from another process's IPC handle, the GPU whose context opened it (-1 else) */
/* id: CU_POINTER_ATTRIBUTE_BUFFER_ID, never the same twice */
typedef struct { uintptr_t base; size_t size; int type; int dev; int managed; unsigned flags; int fd; int opener; unsigned long long id; } fake_alloc_t;
#define FAKE_ALLOC_MAX 1024
static fake_alloc_t fake_allocs[FAKE_ALLOC_MAX];
static unsigned long long fake_alloc_ids;
static void fake_alloc_note(void *p, size_t n, int type, unsigned flags)
{
    for (int i = 0; p && i < FAKE_ALLOC_MAX; i++)
        if (!fake_allocs[i].base) {
            fake_allocs[i] = (fake_alloc_t){(uintptr_t)p, n, type, fake_ctx_gpu((CUcontext)fake_cuda_current()), 0, flags, -1, -1,
                                            ++fake_alloc_ids};
            return;
        }
}
static void fake_alloc_forget(const void *p)
{
    for (int i = 0; p && i < FAKE_ALLOC_MAX; i++)
        if (fake_allocs[i].base == (uintptr_t)p)
            fake_allocs[i].base = 0;
}
static const fake_alloc_t *fake_alloc_find(uintptr_t p)
{
    for (int i = 0; i < FAKE_ALLOC_MAX; i++)
        if (fake_allocs[i].base && p >= fake_allocs[i].base && p < fake_allocs[i].base + fake_allocs[i].size)
            return &fake_allocs[i];
    return NULL;
}
/* cuMemGetInfo: the current context's GPU, its total less the device memory the fake has handed out on it. */
static CUresult fake_mem_get_info(size_t *fr, size_t *total)
{
    size_t used = 0;
    int dev = fake_ctx_gpu((CUcontext)fake_cuda_current());

    if (!fr || !total)
        return CUDA_ERROR_INVALID_VALUE;
    if (fake_total_mem(total, (CUdevice)(dev < 0 ? 0 : dev)) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_CONTEXT;
    for (int i = 0; i < FAKE_ALLOC_MAX; i++)
        if (fake_allocs[i].base && fake_allocs[i].type == CU_MEMORYTYPE_DEVICE && fake_allocs[i].dev == dev)
            used += fake_allocs[i].size;
    *fr = used < *total ? *total - used : 0;
    return CUDA_SUCCESS;
}
/* For tests: the flags the allocation at p was made with, -1 when the fake does not know it. */
long fake_cuda_alloc_flags(const void *p)
{
    const fake_alloc_t *a = fake_alloc_find((uintptr_t)p);

    return a ? (long)a->flags : -1;
}
/* For tests: mark the allocation at p as managed memory. */
void fake_cuda_mark_managed(const void *p)
{
    fake_alloc_t *a = (fake_alloc_t *)fake_alloc_find((uintptr_t)p);

    if (a)
        a->managed = 1;
}
static CUresult fake_host_alloc(void **p, size_t n, unsigned flags)
{
    *p = calloc(1, n ? n : 1);
    fake_alloc_note(*p, n, CU_MEMORYTYPE_HOST, flags);
    return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult fake_free_host(void *p) { fake_alloc_forget(p); free(p); return CUDA_SUCCESS; }
static CUresult fake_host_dptr(CUdeviceptr *d, void *p, unsigned flags) { (void)flags; *d = (CUdeviceptr)(uintptr_t)p; return CUDA_SUCCESS; }
static CUresult fake_host_register(void *p, size_t n, unsigned flags)
{
    if (fake_alloc_find((uintptr_t)p))
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    fake_alloc_note(p, n, CU_MEMORYTYPE_HOST, flags);
    return CUDA_SUCCESS;
}
static CUresult fake_host_unregister(void *p)
{
    if (!fake_alloc_find((uintptr_t)p))
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    fake_alloc_forget(p);
    return CUDA_SUCCESS;
}
#define FAKE_IMPORTED 0xFFFFFFFFu /* the flags of a legacy IPC import: cuIpcCloseMemHandle's, not cuMemFree's */
static size_t fake_pages(size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);

    return ((n ? n : 1) + pg - 1) / pg * pg;
}
/*
 * What the driver checks of a copy's addresses: a range that starts in an allocation ends in it, and an address
 * of a device allocation freed since (its address range stays the driver's) is no memory. Any other address is
 * the caller's host memory, as under UVA.
 */
#define FAKE_FREED_MAX 32
static struct { uintptr_t base; size_t size; } fake_freed[FAKE_FREED_MAX];
static int fake_nfreed;
static void fake_freed_note(uintptr_t base, size_t size)
{
    fake_freed[fake_nfreed % FAKE_FREED_MAX].base = base;
    fake_freed[fake_nfreed % FAKE_FREED_MAX].size = size;
    fake_nfreed++;
}
static int fake_copy_range_ok(uintptr_t p, size_t n)
{
    const fake_alloc_t *a = fake_alloc_find(p);

    if (a)
        return n <= a->size - (p - a->base);
    for (int i = 0; i < FAKE_FREED_MAX && i < fake_nfreed; i++)
        if (p >= fake_freed[i].base && p - fake_freed[i].base < fake_freed[i].size)
            return 0;
    return 1;
}
/* Whole pages and a guard page after them; under ASan the pages' bytes past n are poisoned, as a heap redzone. */
/* The last freed device allocation's address: FAKE_CUDA_REUSE_ADDRESS=1 makes the next one take it if free. */
static uintptr_t fake_last_freed;
static size_t fake_last_freed_len;
static CUresult fake_mem_alloc(CUdeviceptr *d, size_t n)
{
    size_t len = fake_pages(n), pg = (size_t)sysconf(_SC_PAGESIZE);
    const char *reuse = getenv("FAKE_CUDA_REUSE_ADDRESS");
    unsigned char *p = MAP_FAILED, *want = (unsigned char *)fake_last_freed;

    if (reuse && strcmp(reuse, "1") == 0 && want) {
        munmap(want, fake_last_freed_len); /* its reservation (fake_mem_free) */
        fake_last_freed = 0;
        p = mmap(want, len + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    }
    if (p != MAP_FAILED && p != want) { /* a kernel that took the address as a hint */
        munmap(p, len + pg);
        p = MAP_FAILED;
    }
    if (p == MAP_FAILED)
        p = mmap(NULL, len + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    fake_alloc_note(p, n, CU_MEMORYTYPE_DEVICE, 0);
    if (!fake_alloc_find((uintptr_t)p) || mprotect(p + len, pg, PROT_NONE) != 0) { /* the table is full */
        fake_alloc_forget(p);
        munmap(p, len + pg);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    FAKE_POISON(p + n, len - n);
    *d = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}
static CUresult fake_mem_free(CUdeviceptr d)
{
    fake_alloc_t *a = (fake_alloc_t *)fake_alloc_find((uintptr_t)d);

    if (!d)
        return CUDA_SUCCESS;
    if (!a || a->base != (uintptr_t)d || a->type != CU_MEMORYTYPE_DEVICE || a->flags == FAKE_IMPORTED)
        return CUDA_ERROR_INVALID_VALUE;
    if (a->fd >= 0)
        close(a->fd);
    FAKE_UNPOISON((void *)a->base, fake_pages(a->size));
    /* the range stays reserved, as the driver's device address range does: no host mapping takes it */
    if (mmap((void *)a->base, fake_pages(a->size) + (size_t)sysconf(_SC_PAGESIZE), PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
        munmap((void *)a->base, fake_pages(a->size) + (size_t)sysconf(_SC_PAGESIZE));
    fake_last_freed = a->base;
    fake_last_freed_len = fake_pages(a->size) + (size_t)sysconf(_SC_PAGESIZE);
    fake_freed_note(a->base, a->size);
    a->base = 0;
    return CUDA_SUCCESS;
}
/*
 * For fake_vmm.c's legacy IPC. The device allocation based at p, moved onto a memfd (once; its bytes kept, its
 * address too): the descriptor, *len its mapped length, *dev its GPU; -1 when p is no allocation's base.
 */
int fake_cuda_alloc_share(uintptr_t p, size_t *len, int *dev)
{
    fake_alloc_t *a = (fake_alloc_t *)fake_alloc_find(p);
    size_t n;
    int fd;

    if (!a || a->base != p || a->type != CU_MEMORYTYPE_DEVICE || a->flags == FAKE_IMPORTED)
        return -1;
    n = fake_pages(a->size);
    if (a->fd < 0) {
        if ((fd = memfd_create("fake_ipc", MFD_CLOEXEC)) < 0)
            return -1;
        if (ftruncate(fd, (off_t)n) != 0 || pwrite(fd, (const void *)p, a->size, 0) != (ssize_t)a->size ||
            mmap((void *)p, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
            close(fd);
            return -1;
        }
        a->fd = fd;
    }
    *len = n;
    *dev = a->dev;
    return a->fd;
}
/* For fake_vmm.c: an imported legacy allocation is device memory of the exporter's GPU here too. */
int fake_cuda_alloc_imported(void *p, size_t len, int dev)
{
    fake_alloc_t *a;

    fake_alloc_note(p, len, CU_MEMORYTYPE_DEVICE, FAKE_IMPORTED);
    if (!(a = (fake_alloc_t *)fake_alloc_find((uintptr_t)p)))
        return -1;
    a->opener = a->dev; /* the current context's GPU, noted above */
    a->dev = dev;
    return 0;
}
void fake_cuda_alloc_closed(void *p) { fake_alloc_forget(p); }
static CUresult fake_htod(CUdeviceptr d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return CUDA_SUCCESS; }
static CUresult fake_dtoh(void *d, CUdeviceptr s, size_t n) { memcpy(d, (const void *)(uintptr_t)s, n); return CUDA_SUCCESS; }
static CUresult fake_can_access(int *v, CUdevice a, CUdevice b) { *v = fake_ctx_mode() && a != b; return CUDA_SUCCESS; }
static CUresult fake_peer_enable(CUcontext peer, unsigned flags)
{
    int a = fake_ctx_gpu((CUcontext)fake_cuda_current()), b = fake_ctx_gpu(peer);

    (void)flags;
    if (fake_enable_fails)
        return CUDA_ERROR_TOO_MANY_PEERS;
    if (a < 0 || b < 0 || a == b)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (fake_peer_on[a][b])
        return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    fake_peer_on[a][b] = 1;
    return CUDA_SUCCESS;
}
static CUresult fake_peer_disable(CUcontext peer)
{
    int a = fake_ctx_gpu((CUcontext)fake_cuda_current()), b = fake_ctx_gpu(peer);

    if (a < 0 || b < 0 || a == b)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!fake_peer_on[a][b])
        return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    fake_peer_on[a][b] = 0;
    return CUDA_SUCCESS;
}

/* For tests: cuPointerGetAttributes calls, all of them (full 0) or those that asked for the memory type (full 1). */
static int fake_ptr_calls, fake_ptr_full_calls;
int fake_cuda_ptr_queries(int full) { return full ? fake_ptr_full_calls : fake_ptr_calls; }

/* Pointer attributes from the allocations above; access as peer access allows from the current context. */
static CUresult fake_pointer_attributes(unsigned n, CUpointer_attribute *attrs, void **data, CUdeviceptr ptr)
{
    const fake_alloc_t *a = fake_alloc_find((uintptr_t)ptr);
    int cur = fake_ctx_gpu((CUcontext)fake_cuda_current());
    unsigned access = 0;

    fake_ptr_calls++;
    for (unsigned i = 0; i < n; i++)
        if (attrs[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) {
            fake_ptr_full_calls++;
            break;
        }
    /* An opened IPC handle is reachable from the opening context (the driver enables peer access lazily). */
    if (a && (a->type == CU_MEMORYTYPE_HOST || a->dev == cur || (a->opener >= 0 && a->opener == cur) ||
              (cur >= 0 && a->dev >= 0 && fake_peer_on[cur][a->dev])))
        access = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
    for (unsigned i = 0; i < n; i++) {
        switch (attrs[i]) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned *)data[i] = a ? (unsigned)a->type : 0; break;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data[i] = a ? a->dev : -2; break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data[i] = a ? a->base : 0; break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data[i] = a ? a->size : 0; break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned *)data[i] = a ? (unsigned)a->managed : 0; break;
        case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: *(unsigned *)data[i] = access; break;
        case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data[i] = access ? ptr : 0; break;
        case CU_POINTER_ATTRIBUTE_BUFFER_ID: *(unsigned long long *)data[i] = a ? a->id : 0; break;
        default: return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return CUDA_SUCCESS;
}

/*
 * Kernels do not run in "contexts" mode unless a test asks (fake_cuda_run_copies, or FAKE_CUDA_KERNELS=1 for
 * a process the test starts): then p2pscope's kernels run on the host (fake_kernels.c: at launch, the flag
 * kernels in a thread each) and cuMemcpyAsync moves the bytes at once; each launch and copy is counted. A
 * stream's later work waits for its flag kernels first, as the stream would.
 */
static int fake_run_copies, fake_launches, fake_memcpys, fake_fail_captured;
static unsigned fake_last_grid, fake_last_block;
static CUstream fake_last_stream;
static char fake_last_kernel[64];
static int fake_nops, fake_fail_launches;
static void fake_op(char op, void *stream, void *event); /* the operation log, below */
void fake_cuda_run_copies(int on)
{
    fake_run_copies = on;
    fake_launches = fake_memcpys = fake_nops = fake_fail_launches = 0;
    fake_last_kernel[0] = 0;
}
__attribute__((constructor)) static void fake_env_kernels(void)
{
    const char *k = getenv("FAKE_CUDA_KERNELS");

    fake_run_copies = k && strcmp(k, "1") == 0;
}
int fake_cuda_launches(void) { return fake_launches; }
int fake_cuda_memcpys(void) { return fake_memcpys; }
const char *fake_cuda_last_kernel(void) { return fake_last_kernel; }
unsigned fake_cuda_last_grid(void) { return fake_last_grid; }
unsigned fake_cuda_last_block(void) { return fake_last_block; }
void *fake_cuda_last_stream(void) { return (void *)fake_last_stream; }
/* Captures open now (their ids): a stream that joined one leaves it when its origin's capture ends, as with the
   driver. */
#define FAKE_CAPTURES_MAX 64
static cuuint64_t fake_captures_open[FAKE_CAPTURES_MAX];
static int fake_ncaptures_open;
static cuuint64_t fake_capture_of(CUstream s)
{
    fake_stream_t *fs = (fake_stream_t *)s;

    if (fake_stream_special(s) || !fs->capture)
        return 0;
    for (int i = 0; i < fake_ncaptures_open; i++)
        if (fake_captures_open[i] == fs->capture)
            return fs->capture;
    fs->capture = 0;
    return 0;
}
void fake_graph_note_launch(CUstream s); /* fake_graph.c */
int fake_graph_refuse_sync(void);
static CUresult fake_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned shared, CUstream s, void **params, void **extra)
{
    int i = (int)((uintptr_t)f - 0x100);
    const char *name = i >= 0 && i < fake_nfn ? fake_fn_names[i] : "?";
    CUresult rc;

    (void)gy, (void)gz, (void)by, (void)bz, (void)shared, (void)extra;
    if (!fake_run_copies)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!params) /* the parameters in one buffer (extra): not modelled */
        return CUDA_ERROR_INVALID_VALUE;
    if (fake_stream_ctx(s) != (CUcontext)fake_cuda_current())
        return CUDA_ERROR_INVALID_HANDLE; /* the function is the current context's, the stream another's */
    if (fake_fail_launches > 0) {
        fake_fail_launches--;
        return CUDA_ERROR_LAUNCH_FAILED;
    }
    if (fake_fail_captured > 0 && fake_capture_of(s)) {
        fake_fail_captured--;
        return CUDA_ERROR_LAUNCH_FAILED;
    }
    fake_kernels_wait_stream(s);
    if ((rc = fake_kernel_run(name, s, (CUcontext)fake_cuda_current(), params)) != CUDA_SUCCESS)
        return rc;
    fake_op('K', s, NULL);
    fake_launches++;
    fake_graph_note_launch(s);
    fake_last_grid = gx;
    fake_last_block = bx;
    fake_last_stream = s;
    snprintf(fake_last_kernel, sizeof(fake_last_kernel), "%s", name);
    return CUDA_SUCCESS;
}
/* cuLaunchKernelEx: the launch above (its attributes change only when the work may start); counted. */
static int fake_early_launches, fake_early_refused;
int fake_cuda_early_launches(void) { return fake_early_launches; }
int fake_cuda_early_refused(void) { return fake_early_refused; }
static CUresult fake_launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    CUresult rc;

    for (unsigned i = 0; getenv("FAKE_CUDA_NO_EARLY") && i < c->numAttrs; i++) /* a driver without them */
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION) {
            fake_early_refused++;
            return CUDA_ERROR_NOT_SUPPORTED;
        }
    rc = fake_launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
                              c->sharedMemBytes, c->hStream, params, extra);

    for (unsigned i = 0; rc == CUDA_SUCCESS && i < c->numAttrs; i++)
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION &&
            c->attrs[i].value.programmaticStreamSerializationAllowed)
            fake_early_launches++;
    return rc;
}
void fake_graph_note_copy(unsigned long long id, CUdeviceptr d, CUdeviceptr s, size_t len); /* fake_graph.c */
void fake_graph_invalidate(unsigned long long id);
static CUresult fake_memcpy_async(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
    if (!fake_run_copies)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!fake_copy_range_ok((uintptr_t)d, n) || !fake_copy_range_ok((uintptr_t)s, n)) {
        fake_graph_invalidate(fake_capture_of(st)); /* an error in a capture invalidates it */
        return CUDA_ERROR_INVALID_VALUE;
    }
    fake_kernels_wait_stream(st);
    fake_graph_note_copy(fake_capture_of(st), d, s, n);
    memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
    fake_op('M', st, NULL);
    fake_memcpys++;
    fake_last_stream = st;
    return CUDA_SUCCESS;
}
/* cuStreamWriteValue32: at once, after the stream's earlier work (its flag kernels), as the stream would. */
static CUresult fake_write_value32(CUstream st, CUdeviceptr addr, cuuint32_t value, unsigned flags)
{
    const char *w = getenv("FAKE_CUDA_STREAM_WRITES");

    if (!fake_run_copies || flags || (w && strcmp(w, "refuse") == 0))
        return CUDA_ERROR_NOT_SUPPORTED;
    fake_kernels_wait_stream(st);
    __atomic_store_n((uint32_t *)(uintptr_t)addr, value, __ATOMIC_RELEASE);
    fake_op('V', st, NULL);
    return CUDA_SUCCESS;
}
/* For tests: cuMemcpyPeerAsync calls that queued a copy (also counted by fake_cuda_memcpys), and the last one's
 * contexts' GPUs. */
static int fake_peer_memcpys, fake_peer_last_src = -1, fake_peer_last_dst = -1;
int fake_cuda_peer_memcpys(void) { return fake_peer_memcpys; }
void fake_cuda_peer_last(int *src_gpu, int *dst_gpu) { *src_gpu = fake_peer_last_src; *dst_gpu = fake_peer_last_dst; }
static CUresult fake_memcpy_peer_async(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream st)
{
    CUresult rc;

    if (fake_ctx_gpu(dc) < 0 || fake_ctx_gpu(sc) < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (fake_capture_of(st)) { /* as the driver (580): the peer copy cannot be captured, and the capture is lost */
        fake_graph_invalidate(fake_capture_of(st));
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if ((rc = fake_memcpy_async(d, s, n, st)) == CUDA_SUCCESS) {
        fake_peer_memcpys++;
        fake_peer_last_src = fake_ctx_gpu(sc);
        fake_peer_last_dst = fake_ctx_gpu(dc);
    }
    return rc;
}
/* cuMemsetD8/D32 and their Async forms: at once, after the stream's flag kernels. */
static CUresult fake_memset8_async(CUdeviceptr d, unsigned char v, size_t n, CUstream st)
{
    fake_kernels_wait_stream(st);
    memset((void *)(uintptr_t)d, v, n);
    return CUDA_SUCCESS;
}
static CUresult fake_memset32_async(CUdeviceptr d, unsigned v, size_t n, CUstream st)
{
    unsigned *p = (unsigned *)(uintptr_t)d;

    fake_kernels_wait_stream(st);
    for (size_t i = 0; i < n; i++)
        p[i] = v;
    return CUDA_SUCCESS;
}
static CUresult fake_memset8(CUdeviceptr d, unsigned char v, size_t n) { return fake_memset8_async(d, v, n, NULL); }
static CUresult fake_memset32(CUdeviceptr d, unsigned v, size_t n) { return fake_memset32_async(d, v, n, NULL); }

/*
 * Events remember their context (cuEventRecord refuses a stream of another, as the driver does), and in
 * run-copies mode each record, stream wait, launch and cuMemcpyAsync is logged in order, so a test sees
 * how a copy was ordered across streams.
 */
typedef struct {
    unsigned magic;
    CUcontext ctx;
    cuuint64_t capture; /* recorded in that capture; 0 none */
    unsigned flags;
    uint64_t at;        /* when last recorded (the fake clock, ns); 0 never */
} fake_event_t;
#define FAKE_EVENT_MAGIC 0xE7E27u
#define FAKE_OPS_MAX 256
static struct { char op; void *stream, *event, *ctx; } fake_ops[FAKE_OPS_MAX];
static void fake_op(char op, void *stream, void *event)
{
    if (fake_run_copies && fake_nops < FAKE_OPS_MAX) {
        fake_ops[fake_nops].op = op;
        fake_ops[fake_nops].stream = stream;
        fake_ops[fake_nops].ctx = fake_stream_ctx((CUstream)stream); /* NULL: the current */
        fake_ops[fake_nops++].event = event;
    }
}
int fake_cuda_nops(void) { return fake_nops; }
/* The k-th logged operation: 'R' event record, 'W' stream wait, 'K' kernel launch, 'M' cuMemcpyAsync, 'V' stream
   write; 0 past the end. */
int fake_cuda_op(int k, void **stream, void **event)
{
    if (k < 0 || k >= fake_nops)
        return 0;
    *stream = fake_ops[k].stream;
    *event = fake_ops[k].event;
    return fake_ops[k].op;
}
void *fake_cuda_op_ctx(int k) { return k >= 0 && k < fake_nops ? fake_ops[k].ctx : NULL; }
void fake_cuda_fail_launches(int n) { fake_fail_launches = n; }
/* The next n launches into a capturing stream fail (a capture that must still be ended). */
void fake_cuda_fail_captured_launches(int n) { fake_fail_captured = n; }
/* Graph capture, as far as ordering needs it: a stream in capture `id` (0: none), set by a test. */
void fake_cuda_capture_set(void *stream, unsigned long long id)
{
    fake_stream_t *fs = (fake_stream_t *)stream;

    for (int i = 0; !id && i < fake_ncaptures_open; i++) /* an origin's capture ends */
        if (fake_captures_open[i] == fs->capture)
            fake_captures_open[i--] = fake_captures_open[--fake_ncaptures_open];
    if (id && fake_ncaptures_open < FAKE_CAPTURES_MAX)
        fake_captures_open[fake_ncaptures_open++] = id;
    fs->capture = id;
}
static CUresult fake_capture_info(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *g,
                                  const CUgraphNode **deps, size_t *n)
{
    (void)g, (void)deps, (void)n;
    *status = fake_capture_of(s) ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    if (id)
        *id = fake_capture_of(s);
    return CUDA_SUCCESS;
}
/* The events' clock: the fake's ns, each reading later than the last. */
static uint64_t fake_event_last;
static uint64_t fake_event_clock(void)
{
    uint64_t now = fake_kernels_ns(), last = __atomic_load_n(&fake_event_last, __ATOMIC_RELAXED), next;

    do
        next = now > last ? now : last + 1;
    while (!__atomic_compare_exchange_n(&fake_event_last, &last, next, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return next;
}
static CUresult fake_event_create(CUevent *e, unsigned flags)
{
    fake_event_t *fe = malloc(sizeof(*fe));

    if (!fe)
        return CUDA_ERROR_OUT_OF_MEMORY;
    fe->magic = FAKE_EVENT_MAGIC;
    fe->ctx = (CUcontext)fake_cuda_current();
    fe->capture = 0;
    fe->flags = flags;
    fe->at = 0;
    *e = (CUevent)fe;
    return CUDA_SUCCESS;
}
static CUresult fake_event_destroy(CUevent e)
{
    fake_event_t *fe = (fake_event_t *)e;

    if (!fe || fe->magic != FAKE_EVENT_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    fe->magic = 0;
    free(fe);
    return CUDA_SUCCESS;
}
static CUresult fake_event_record(CUevent e, CUstream s)
{
    const fake_event_t *fe = (const fake_event_t *)e;

    if (!fe || fe->magic != FAKE_EVENT_MAGIC || fe->ctx != fake_stream_ctx(s))
        return CUDA_ERROR_INVALID_HANDLE;
    if (getenv("FAKE_CUDA_DIE"))
        raise(atoi(getenv("FAKE_CUDA_DIE")));
    while (getenv("FAKE_CUDA_HANG"))
        pause();
    fake_kernels_wait_stream(s); /* the event completes after the stream's flag kernels */
    ((fake_event_t *)e)->capture = fake_capture_of(s);
    ((fake_event_t *)e)->at = fake_event_clock();
    fake_op('R', s, e);
    return CUDA_SUCCESS;
}
/* Work runs at enqueue, so a recorded event is complete; the time between two is at least 1 ns. */
static CUresult fake_event_elapsed(float *ms, CUevent a, CUevent b)
{
    const fake_event_t *ea = (const fake_event_t *)a, *eb = (const fake_event_t *)b;

    if (!ea || !eb || ea->magic != FAKE_EVENT_MAGIC || eb->magic != FAKE_EVENT_MAGIC ||
        ((ea->flags | eb->flags) & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!ea->at || !eb->at)
        return CUDA_ERROR_NOT_READY;
    *ms = (float)(((double)eb->at - (double)ea->at) / 1e6);
    if (getenv("FAKE_CUDA_SLOW"))
        *ms *= (float)atof(getenv("FAKE_CUDA_SLOW"));
    return CUDA_SUCCESS;
}
/*
 * Interprocess events: the handle carries the exporter's pid (opening it there fails, as in the driver); opened
 * elsewhere it is an event of the current context. Work is done when queued, so waiting for one is ordering
 * enough.
 */
static CUresult fake_ipc_event_get(CUipcEventHandle *h, CUevent e)
{
    const fake_event_t *fe = (const fake_event_t *)e;
    int32_t pid = getpid();

    if (!fe || fe->magic != FAKE_EVENT_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!(fe->flags & CU_EVENT_INTERPROCESS) || !(fe->flags & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_VALUE;
    memset(h, 0, sizeof(*h));
    memcpy(h->reserved, &pid, sizeof(pid));
    memcpy(h->reserved + 8, "fakeevt", 8);
    return CUDA_SUCCESS;
}
static CUresult fake_ipc_event_open(CUevent *e, CUipcEventHandle h)
{
    int32_t pid;

    memcpy(&pid, h.reserved, sizeof(pid));
    if (pid <= 0 || memcmp(h.reserved + 8, "fakeevt", 8) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (pid == getpid())
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!fake_cuda_current())
        return CUDA_ERROR_INVALID_CONTEXT;
    return fake_event_create(e, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING);
}
static CUresult fake_event_sync(CUevent e)
{
    const fake_event_t *fe = (const fake_event_t *)e;

    return fe && fe->magic == FAKE_EVENT_MAGIC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
static CUresult fake_stream_sync(CUstream s)
{
    if (fake_graph_refuse_sync()) /* as the driver: no synchronisation from a thread that captures */
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    fake_kernels_wait_stream(s);
    return CUDA_SUCCESS;
}
static CUresult fake_stream_query(CUstream s) { return fake_kernels_busy(s) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS; }
static CUresult fake_ctx_sync(void)
{
    CUcontext c = (CUcontext)fake_cuda_current();

    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (fake_graph_refuse_sync())
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    fake_kernels_wait_ctx(c);
    return CUDA_SUCCESS;
}
static CUresult fake_stream_wait_event(CUstream s, CUevent e, unsigned flags)
{
    const fake_event_t *fe = (const fake_event_t *)e;

    if (!fe || fe->magic != FAKE_EVENT_MAGIC || flags)
        return CUDA_ERROR_INVALID_HANDLE;
    if (fake_capture_of(s) && fe->capture != fake_capture_of(s)) /* as the driver: no merge, no uncaptured wait */
        return fe->capture ? CUDA_ERROR_STREAM_CAPTURE_MERGE : CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    if (!fake_stream_special(s) && fe->capture) /* a stream waiting for a captured event joins that capture */
        ((fake_stream_t *)s)->capture = fe->capture;
    fake_op('W', s, e);
    return CUDA_SUCCESS;
}

/*
 * A dma-buf of device memory: the range's pages (host-page aligned, inside the allocation's pages) move onto a
 * memfd mapped in their place, bytes kept, and the memfd is the dma-buf. FAKE_CUDA_DMABUF=refuse: /dev/null instead,
 * which mmap refuses, as drivers before CUDA 13.3 refuse their dma-bufs.
 */
static CUresult fake_dmabuf_handle(void *handle, CUdeviceptr d, size_t n, CUmemRangeHandleType type,
                                   unsigned long long flags)
{
    const fake_alloc_t *a = fake_alloc_find((uintptr_t)d);
    const char *mode = getenv("FAKE_CUDA_DMABUF");
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), keep;
    int fd;
    void *at;

    if (type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || flags || !n || d % pg || n % pg)
        return CUDA_ERROR_INVALID_VALUE;
    if (!a || a->type != CU_MEMORYTYPE_DEVICE || d + n > a->base + fake_pages(a->size))
        return CUDA_ERROR_INVALID_VALUE;
    if (!mode)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (strcmp(mode, "refuse") == 0) { /* a file whose mmap fails (ENODEV) */
        if ((fd = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
            return CUDA_ERROR_OPERATING_SYSTEM;
        *(int *)handle = fd;
        return CUDA_SUCCESS;
    }
    if ((fd = memfd_create("fake-dmabuf", MFD_CLOEXEC)) < 0 || ftruncate(fd, (off_t)n) != 0)
        goto err;
    keep = d < a->base + a->size ? a->base + a->size - d : 0; /* the allocation's bytes in the range */
    keep = keep < n ? keep : n;
    if ((size_t)pwrite(fd, (const void *)(uintptr_t)d, keep, 0) != keep)
        goto err;
    at = mmap((void *)(uintptr_t)d, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    if (at == MAP_FAILED)
        goto err;
    *(int *)handle = fd;
    return CUDA_SUCCESS;
err:
    if (fd >= 0)
        close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static const struct { const char *name; void *fn; } fake_ctx_table[] = {
    {"cuMemGetHandleForAddressRange", (void *)fake_dmabuf_handle},
    {"cuDevicePrimaryCtxRelease", (void *)fake_release},
    {"cuModuleLoadData", (void *)fake_module_load},
    {"cuModuleUnload", (void *)fake_ok},
    {"cuModuleGetFunction", (void *)fake_get_function},
    {"cuStreamCreate", (void *)fake_stream_create},
    {"cuStreamDestroy", (void *)fake_stream_destroy},
    {"cuStreamGetCtx", (void *)fake_stream_get_ctx},
    {"cuPointerGetAttributes", (void *)fake_pointer_attributes},
    {"cuMemHostRegister", (void *)fake_host_register},
    {"cuMemHostUnregister", (void *)fake_host_unregister},
    {"cuLaunchKernel", (void *)fake_launch},
    {"cuLaunchKernelEx", (void *)fake_launch_ex},
    {"cuMemcpyAsync", (void *)fake_memcpy_async},
    {"cuStreamWriteValue32", (void *)fake_write_value32},
    {"cuEventCreate", (void *)fake_event_create},
    {"cuEventDestroy", (void *)fake_event_destroy},
    {"cuEventRecord", (void *)fake_event_record},
    {"cuStreamWaitEvent", (void *)fake_stream_wait_event},
    {"cuStreamGetCaptureInfo", (void *)fake_capture_info},
    {"cuStreamSynchronize", (void *)fake_stream_sync},
    {"cuStreamQuery", (void *)fake_stream_query},
    {"cuCtxSynchronize", (void *)fake_ctx_sync},
    {"cuEventElapsedTime", (void *)fake_event_elapsed},
    {"cuEventSynchronize", (void *)fake_event_sync},
    {"cuIpcGetEventHandle", (void *)fake_ipc_event_get},
    {"cuIpcOpenEventHandle", (void *)fake_ipc_event_open},
    {"cuMemcpyPeerAsync", (void *)fake_memcpy_peer_async},
    {"cuMemsetD8", (void *)fake_memset8},
    {"cuMemsetD32", (void *)fake_memset32},
    {"cuMemsetD8Async", (void *)fake_memset8_async},
    {"cuMemsetD32Async", (void *)fake_memset32_async},
    {"cuMemHostAlloc", (void *)fake_host_alloc},
    {"cuMemFreeHost", (void *)fake_free_host},
    {"cuMemHostGetDevicePointer", (void *)fake_host_dptr},
    {"cuMemAlloc", (void *)fake_mem_alloc},
    {"cuMemFree", (void *)fake_mem_free},
    {"cuMemGetInfo", (void *)fake_mem_get_info},
    {"cuMemcpyHtoD", (void *)fake_htod},
    {"cuMemcpyDtoH", (void *)fake_dtoh},
    {"cuDeviceCanAccessPeer", (void *)fake_can_access},
    {"cuCtxEnablePeerAccess", (void *)fake_peer_enable},
    {"cuCtxDisablePeerAccess", (void *)fake_peer_disable},
};

static const struct { const char *name; void *fn; } fake_table[] = {
    {"cuCtxGetCurrent", (void *)fake_get_current},
    {"cuCtxSetCurrent", (void *)fake_set_current_counted},
    {"cuDevicePrimaryCtxRetain", (void *)fake_retain},
    {"cuInit", (void *)fake_init},
    {"cuDriverGetVersion", (void *)fake_driver_version},
    {"cuDeviceGetCount", (void *)fake_count},
    {"cuDeviceGet", (void *)fake_get},
    {"cuDeviceGetName", (void *)fake_name},
    {"cuDeviceGetUuid", (void *)fake_uuid},
    {"cuDeviceGetPCIBusId", (void *)fake_bus_id},
    {"cuDeviceTotalMem", (void *)fake_total_mem},
    {"cuDeviceGetAttribute", (void *)fake_attr},
    {"cuGetErrorName", (void *)fake_error_name},
    {"cuGetErrorString", (void *)fake_error_string},
};

static void *fake_mem_lookup(const char *symbol); /* at the end: memory of each kind */
void *fake_vmm_lookup(const char *symbol);        /* fake_vmm.c: VMM and IPC */
void *fake_graph_lookup(const char *symbol);      /* fake_graph.c: CUDA graphs, FAKE_CUDA_GRAPHS=1 */

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    (void)version;
    (void)flags;
    if ((strcmp(fake_mode(), "missing") == 0 && strcmp(symbol, "cuMemcpyAsync") == 0) ||
        (getenv("FAKE_CUDA_NO_STREAM_WRITES") && strcmp(symbol, "cuStreamWriteValue32") == 0)) {
        *pfn = NULL;
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = (void *)fake_unsupported;
    for (size_t i = 0; i < sizeof(fake_table) / sizeof(fake_table[0]); i++)
        if (strcmp(symbol, fake_table[i].name) == 0)
            *pfn = fake_table[i].fn;
    for (size_t i = 0; fake_ctx_mode() && i < sizeof(fake_ctx_table) / sizeof(fake_ctx_table[0]); i++)
        if (strcmp(symbol, fake_ctx_table[i].name) == 0)
            *pfn = fake_ctx_table[i].fn;
    if (fake_ctx_mode() && fake_mem_lookup(symbol))
        *pfn = fake_mem_lookup(symbol);
    if (fake_ctx_mode() && fake_vmm_lookup(symbol))
        *pfn = fake_vmm_lookup(symbol);
    if (fake_ctx_mode() && fake_graph_lookup(symbol))
        *pfn = fake_graph_lookup(symbol);
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

/* ---- contexts mode, memory of each kind (psc_mem_alloc): each allocation call's last flags and the context
 * current then, how many of each call's allocations are live (a free by the wrong call shows), and
 * allocations that fail with CUDA_ERROR_OUT_OF_MEMORY on request. */
enum { FAKE_MEM_HOST, FAKE_MEM_DEVICE, FAKE_MEM_REGISTERED, FAKE_MEM_N };
static int fake_mem_live[FAKE_MEM_N], fake_mem_oom;
static unsigned fake_mem_flags[FAKE_MEM_N];
static CUcontext fake_mem_ctx[FAKE_MEM_N];
int fake_cuda_mem_live(int which) { return which >= 0 && which < FAKE_MEM_N ? fake_mem_live[which] : -1; }
unsigned fake_cuda_mem_flags(int which) { return which >= 0 && which < FAKE_MEM_N ? fake_mem_flags[which] : 0; }
void *fake_cuda_mem_ctx(int which) { return which >= 0 && which < FAKE_MEM_N ? (void *)fake_mem_ctx[which] : NULL; }
void fake_cuda_mem_oom(int on) { fake_mem_oom = on; }
static CUresult fake_mem_note(int which, unsigned flags, CUresult rc)
{
    fake_mem_flags[which] = flags;
    fake_mem_ctx[which] = (CUcontext)fake_cuda_current();
    fake_mem_live[which] += rc == CUDA_SUCCESS;
    return rc;
}
static CUresult fake_mem_host_alloc(void **p, size_t n, unsigned flags)
{
    CUresult rc = fake_mem_oom ? CUDA_ERROR_OUT_OF_MEMORY : fake_host_alloc(p, n, flags);

    if (rc == CUDA_SUCCESS) /* the driver does not clear it: a caller that needs zeros writes them */
        memset(*p, 0xEE, n);
    return fake_mem_note(FAKE_MEM_HOST, flags, rc);
}
static CUresult fake_mem_free_host(void *p) { fake_mem_live[FAKE_MEM_HOST]--; return fake_free_host(p); }
static CUresult fake_mem_alloc_dev(CUdeviceptr *d, size_t n)
{
    return fake_mem_note(FAKE_MEM_DEVICE, 0, fake_mem_oom ? CUDA_ERROR_OUT_OF_MEMORY : fake_mem_alloc(d, n));
}
static CUresult fake_mem_free_dev(CUdeviceptr d) { fake_mem_live[FAKE_MEM_DEVICE]--; return fake_mem_free(d); }
static CUresult fake_mem_register(void *p, size_t n, unsigned flags)
{
    return fake_mem_note(FAKE_MEM_REGISTERED, flags,
                         fake_mem_oom ? CUDA_ERROR_OUT_OF_MEMORY : fake_host_register(p, n, flags));
}
static CUresult fake_mem_unregister(void *p)
{
    CUresult rc = fake_host_unregister(p);

    fake_mem_live[FAKE_MEM_REGISTERED] -= rc == CUDA_SUCCESS;
    return rc;
}
static void *fake_mem_lookup(const char *symbol)
{
    static const struct { const char *name; void *fn; } t[] = {
        {"cuMemHostAlloc", (void *)fake_mem_host_alloc}, {"cuMemFreeHost", (void *)fake_mem_free_host},
        {"cuMemAlloc", (void *)fake_mem_alloc_dev},      {"cuMemFree", (void *)fake_mem_free_dev},
        {"cuMemHostRegister", (void *)fake_mem_register}, {"cuMemHostUnregister", (void *)fake_mem_unregister},
    };

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (strcmp(symbol, t[i].name) == 0)
            return t[i].fn;
    return NULL;
}
