/*
 * The coherent backend: where the GPU works in the host's page tables
 * (Grace Hopper's NVLink-C2C with ATS) and the CPU reaches memory resident
 * on the GPU without migrating it, the CPU loads and stores device memory at
 * its own address. Nothing is pinned or mapped, and no BAR1 is used. The
 * device attributes say the platform is coherent, not that this allocation
 * is in the CPU's page tables (cuMemAlloc memory may not be): so the caller's
 * first and last bytes are read through the kernel first (process_vm_readv
 * on this process), which answers EFAULT where a load would fault.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "gpumap/gpumap.h"

int psc__gpumap_coherent_ready(psc_context_t *ctx, int gpu, char *why, size_t len)
{
    int pt = 0, direct = 0;
    CUdevice dev = ctx->gpu[gpu].dev;

    if (ctx->cu.p_cuDeviceGetAttribute(&pt, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, dev) !=
            CUDA_SUCCESS)
        pt = 0;
    if (ctx->cu.p_cuDeviceGetAttribute(&direct, CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, dev) !=
            CUDA_SUCCESS)
        direct = 0;
    if (pt && direct)
        return 1;
    snprintf(why, len, "GPU %d is not on a coherent platform: the CPU cannot address its memory directly "
             "(PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES %d, DIRECT_MANAGED_MEM_ACCESS_FROM_HOST %d; "
             "Grace Hopper and Grace Blackwell have both)", gpu, pt, direct);
    return 0;
}

/* 1 when the CPU can read address a (the kernel reads it for us: no fault here), else 0 and why. */
static int psc__gpumap_cpu_reads(uintptr_t a, char *why, size_t len)
{
    unsigned char b;
    struct iovec local = {&b, 1}, remote = {(void *)a, 1};

    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1)
        return 1;
    snprintf(why, len, "the platform is coherent, but the CPU cannot read this allocation at its device address "
             "(%s: cuMemAlloc memory is not in the host's page tables here; the dma-buf backend maps it)",
             strerror(errno));
    return 0;
}

psc_status_t psc__gpumap_coherent_map(psc_context_t *ctx, struct psc_gpumap *m, char *why, size_t len)
{
    if (!psc__gpumap_coherent_ready(ctx, m->gpu, why, len))
        return PSC_ERR_UNSUPPORTED;
    if (!psc__gpumap_cpu_reads((uintptr_t)m->dptr, why, len) ||
        !psc__gpumap_cpu_reads((uintptr_t)m->dptr + m->size - 1, why, len))
        return PSC_ERR_UNSUPPORTED;
    m->base = (unsigned char *)(uintptr_t)m->start;
    m->wc = 0;
    return PSC_OK;
}
