/*
 * GPU memory shared between two processes with libp2pscope: the child
 * exports 16 MiB on one GPU (a VMM allocation passed as a file descriptor,
 * or a legacy CUDA IPC handle where VMM is unsupported), fills it and sends
 * it over a socketpair (psc_share_send); the parent receives it
 * (psc_share_recv), imports it mapped for its own GPU only, checks every
 * byte, shows which GPUs may access it (psc_share_access) and frees its
 * mapping; then it tells the child, which frees the allocation.
 *   cc -std=c11 share_between_processes.c $(pkg-config --cflags --libs p2pscope) -I/usr/local/cuda/include \
 *      -ldl -o share_between_processes
 *   ./share_between_processes [EXPORT_GPU [IMPORT_GPU]]   (default: GPU 0, and GPU 1 where there is one)
 * The processes fork before either makes a CUDA call: a CUDA context does not
 * survive fork. Exit: 0 right bytes, 1 a wrong byte or a failed call, 2
 * usage, 77 no driver or no GPU (nothing to share).
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>
#include <p2pscope.h>

#define SIZE ((size_t)16 << 20)
#define TIMEOUT_MS 60000 /* the other process may still be starting its driver */
#define SKIP 77

static uint8_t pattern(size_t i)
{
    uint64_t x = (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull;
    return (uint8_t)(x >> 56);
}

/*
 * The few driver calls this program makes itself, taken from libcuda.so.1 at
 * the CUDA 12.0 ABI (dlopen, as libp2pscope does: the program starts, and
 * skips, where no driver is installed).
 */
static struct {
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*release)(CUdevice);
    CUresult (*get_current)(CUcontext *);
    CUresult (*set_current)(CUcontext);
    CUresult (*stream_create)(CUstream *, unsigned);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*stream_sync)(CUstream);
} cu;

static int load_driver(void)
{
    CUresult (*get_proc)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    static const struct { const char *name; void **fn; } want[] = {
        {"cuDeviceGet", (void **)&cu.device_get},
        {"cuDevicePrimaryCtxRetain", (void **)&cu.retain},
        {"cuDevicePrimaryCtxRelease", (void **)&cu.release},
        {"cuCtxGetCurrent", (void **)&cu.get_current},
        {"cuCtxSetCurrent", (void **)&cu.set_current},
        {"cuStreamCreate", (void **)&cu.stream_create},
        {"cuStreamDestroy", (void **)&cu.stream_destroy},
        {"cuStreamSynchronize", (void **)&cu.stream_sync},
    };
    CUdriverProcAddressQueryResult found;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

    if (!h || !(*(void **)&get_proc = dlsym(h, "cuGetProcAddress_v2")))
        return 0;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (get_proc(want[i].name, want[i].fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||
            found != CU_GET_PROC_ADDRESS_SUCCESS)
            return 0;
    return 1;
}

/* A stream in GPU gpu's primary context (the one libp2pscope and the runtime use), made current meanwhile. */
typedef struct {
    CUdevice dev;
    CUcontext pctx, was;
    CUstream stream;
} gpu_stream_t;

static int gpu_stream_open(const char *who, int gpu, gpu_stream_t *g)
{
    memset(g, 0, sizeof(*g));
    if (!load_driver() || cu.device_get(&g->dev, gpu) != CUDA_SUCCESS || cu.get_current(&g->was) != CUDA_SUCCESS ||
        cu.retain(&g->pctx, g->dev) != CUDA_SUCCESS) {
        g->pctx = NULL;
        fprintf(stderr, "%s: the CUDA driver (libcuda.so.1) does not start GPU %d\n", who, gpu);
        return 0;
    }
    if (cu.set_current(g->pctx) != CUDA_SUCCESS || cu.stream_create(&g->stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        fprintf(stderr, "%s: no stream on GPU %d\n", who, gpu);
        return 0;
    }
    return 1;
}

static void gpu_stream_close(gpu_stream_t *g)
{
    if (g->stream)
        cu.stream_destroy(g->stream);
    if (g->pctx) {
        cu.set_current(g->was);
        cu.release(g->dev);
    }
}

/* psc_copy of SIZE bytes, then wait for it. */
static int copy_and_wait(const char *who, psc_context_t *ctx, void *dst, const void *src, CUstream stream)
{
    psc_status_t st = psc_copy(ctx, dst, src, SIZE, stream);

    if (st != PSC_OK) {
        fprintf(stderr, "%s: psc_copy: %s: %s\n", who, psc_status_string(st), psc_context_last_error(ctx));
        return 0;
    }
    if (cu.stream_sync(stream) != CUDA_SUCCESS) {
        fprintf(stderr, "%s: cuStreamSynchronize failed\n", who);
        return 0;
    }
    return 1;
}

/* The child: export, fill, send; free once the parent says it is done. Returns the exit status. */
static int exporter(int sock, int gpu)
{
    const char *who = "exporter";
    psc_context_t *ctx = NULL;
    psc_share_t *share = NULL;
    psc_mem_t *host = NULL;
    psc_share_msg_t msg = {{0}, -1};
    gpu_stream_t g = {0};
    psc_status_t st;
    char err[512], done;
    int rc = 1;

    if (psc_context_create(&ctx, err, sizeof(err)) != PSC_OK)
        return SKIP; /* the parent says why: it cannot start either */
    st = psc_share_alloc(ctx, PSC_SHARE_VMM_FD, gpu, SIZE, &share);
    if (st == PSC_ERR_UNSUPPORTED) {
        printf("%s: VMM sharing is not supported here (%s): a legacy IPC handle instead\n", who,
               psc_context_last_error(ctx));
        st = psc_share_alloc(ctx, PSC_SHARE_LEGACY, gpu, SIZE, &share);
    }
    if (st != PSC_OK) {
        fprintf(stderr, "%s: psc_share_alloc: %s: %s\n", who, psc_status_string(st), psc_context_last_error(ctx));
        goto out;
    }
    if ((st = psc_mem_alloc(ctx, PSC_MEMKIND_PINNED, PSC_NUMA_ANY, SIZE, &host)) != PSC_OK) {
        fprintf(stderr, "%s: psc_mem_alloc: %s: %s\n", who, psc_status_string(st), psc_context_last_error(ctx));
        goto out;
    }
    for (size_t i = 0; i < SIZE; i++)
        ((uint8_t *)psc_mem_host(host))[i] = pattern(i);
    if (!gpu_stream_open(who, gpu, &g) || !copy_and_wait(who, ctx, psc_share_ptr(share), psc_mem_host(host), g.stream))
        goto out;
    if ((st = psc_share_export(ctx, share, &msg)) != PSC_OK ||
        (st = psc_share_send(ctx, sock, &msg, TIMEOUT_MS)) != PSC_OK) {
        fprintf(stderr, "%s: %s\n", who, psc_context_last_error(ctx));
        goto out;
    }
    printf("%s (pid %ld): %zu MiB on GPU %d filled and sent as %s\n", who, (long)getpid(), SIZE >> 20, gpu,
           psc_share_kind(share) == PSC_SHARE_VMM_FD ? "a VMM file descriptor" : "a legacy IPC handle");
    fflush(stdout);
    /* The allocation must outlive the importer's mapping: wait for the parent's byte (or its end). */
    if (read(sock, &done, 1) != 1)
        fprintf(stderr, "%s: the importer ended without saying it was done\n", who);
    else
        rc = 0;
out:
    if (msg.fd >= 0)
        close(msg.fd); /* psc_share_send sent a copy */
    gpu_stream_close(&g);
    psc_mem_free(host);
    if (share && psc_share_free(share) != PSC_OK) {
        fprintf(stderr, "%s: psc_share_free: %s\n", who, psc_context_last_error(ctx));
        rc = 1;
    }
    if (rc == 0)
        printf("%s: freed\n", who);
    psc_context_destroy(ctx);
    close(sock);
    return rc;
}

/* The parent: receive, import for its GPU only, check, show access, free. Returns the exit status. */
static int importer(int sock, int gpu_arg)
{
    const char *who = "importer";
    psc_context_t *ctx = NULL;
    psc_share_t *share = NULL;
    psc_mem_t *host = NULL;
    psc_share_msg_t msg = {{0}, -1};
    gpu_stream_t g = {0};
    psc_status_t st;
    char err[512];
    int rc = 1, ngpu, gpu = gpu_arg;
    size_t bad = 0, first = 0;

    if ((st = psc_context_create(&ctx, err, sizeof(err))) != PSC_OK) {
        printf("share_between_processes: %s: nothing to share, skipped\n", err);
        return SKIP;
    }
    ngpu = psc_device_count(ctx);
    if (gpu < 0)
        gpu = ngpu > 1 ? 1 : 0;
    if (gpu >= ngpu) {
        fprintf(stderr, "%s: GPU %d: accepted 0 to %d\n", who, gpu, ngpu - 1);
        rc = 2;
        goto out;
    }
    if ((st = psc_share_recv(ctx, sock, &msg, TIMEOUT_MS)) != PSC_OK) {
        fprintf(stderr, "%s: %s\n", who, psc_context_last_error(ctx));
        goto out;
    }
    st = psc_share_import(ctx, &msg, &gpu, 1, &share);
    if (msg.fd >= 0)
        close(msg.fd); /* the import holds its own */
    if (st != PSC_OK) {
        fprintf(stderr, "%s: psc_share_import: %s: %s\n", who, psc_status_string(st), psc_context_last_error(ctx));
        goto out;
    }
    printf("%s (pid %ld): %zu MiB of GPU %d imported, mapped for GPU %d only\n", who, (long)getpid(),
           psc_share_size(share) >> 20, psc_share_gpu(share), gpu);
    if ((st = psc_mem_alloc(ctx, PSC_MEMKIND_PINNED, PSC_NUMA_ANY, SIZE, &host)) != PSC_OK) {
        fprintf(stderr, "%s: psc_mem_alloc: %s: %s\n", who, psc_status_string(st), psc_context_last_error(ctx));
        goto out;
    }
    memset(psc_mem_host(host), 0x5a, SIZE); /* poison: the check proves the bytes came from the copy */
    if (!gpu_stream_open(who, gpu, &g) || !copy_and_wait(who, ctx, psc_mem_host(host), psc_share_ptr(share), g.stream))
        goto out;
    for (size_t i = 0; i < SIZE; i++)
        if (((const uint8_t *)psc_mem_host(host))[i] != pattern(i) && bad++ == 0)
            first = i;
    if (bad) {
        printf("%s: %zu wrong bytes; the first at offset %zu: expected 0x%02x, found 0x%02x\n", who, bad, first,
               pattern(first), ((const uint8_t *)psc_mem_host(host))[first]);
        goto out;
    }
    printf("%s: all %zu bytes right\n", who, SIZE);
    for (int i = 0; i < ngpu; i++) {
        unsigned access = 0;

        if ((st = psc_share_access(ctx, share, i, &access)) != PSC_OK) {
            fprintf(stderr, "%s: psc_share_access: %s\n", who, psc_context_last_error(ctx));
            goto out;
        }
        printf("%s: GPU %d may %s it\n", who, i, access == PSC_ACCESS_READWRITE ? "read and write"
                                                : access == PSC_ACCESS_READ ? "only read" : "not access");
    }
    rc = 0;
out:
    gpu_stream_close(&g);
    psc_mem_free(host);
    if (share && psc_share_free(share) != PSC_OK) {
        fprintf(stderr, "%s: psc_share_free: %s\n", who, psc_context_last_error(ctx));
        rc = 1;
    }
    if (rc != SKIP && write(sock, "d", 1) != 1) /* done with it: the exporter may free */
        fprintf(stderr, "%s: the exporter is gone\n", who);
    close(sock);
    psc_context_destroy(ctx);
    return rc;
}

static int parse_gpu(const char *text, int *out)
{
    char *end;
    long v = strtol(text, &end, 10);

    if (!*text || *end || v < 0 || v >= PSC_MAX_GPUS)
        return 0;
    *out = (int)v;
    return 1;
}

int main(int argc, char **argv)
{
    int export_gpu = 0, import_gpu = -1, sv[2], rc, status = 0;
    pid_t child;

    if (argc > 3 || (argc > 1 && !parse_gpu(argv[1], &export_gpu)) || (argc > 2 && !parse_gpu(argv[2], &import_gpu))) {
        fprintf(stderr, "usage: share_between_processes [EXPORT_GPU [IMPORT_GPU]]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN); /* a peer gone is an error to report, not a signal */
    setvbuf(stdout, NULL, _IOLBF, 0); /* the two processes' lines in the order they happen */
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("share_between_processes: socketpair");
        return 1;
    }
    fflush(stdout);
    child = fork(); /* before any CUDA call, in either process */
    if (child < 0) {
        perror("share_between_processes: fork");
        return 1;
    }
    if (child == 0) {
        close(sv[0]);
        exit(exporter(sv[1], export_gpu));
    }
    close(sv[1]);
    rc = importer(sv[0], import_gpu);
    if (waitpid(child, &status, 0) != child) {
        perror("share_between_processes: waitpid");
        return 1;
    }
    if (rc == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        fprintf(stderr, "share_between_processes: the exporter ended with %s %d\n",
                WIFEXITED(status) ? "status" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        rc = 1;
    }
    return rc;
}
