/*
 * The dma-buf backend: the driver exports the range as a dma-buf
 * (cuMemGetHandleForAddressRange) and the CPU maps that file. Drivers before
 * CUDA 13.3 export it (for RDMA importers) but refuse the mmap, so the
 * version is checked first; the rest only an attempt tells.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpumap/gpumap.h"

#define PSC__DMABUF_MIN_DRIVER 13030 /* CUDA 13.3: the first driver that maps a dma-buf of GPU memory */

int psc__gpumap_dmabuf_ready(psc_context_t *ctx, int gpu, char *why, size_t len)
{
    int v = ctx->sys.cuda_driver_version, on = 0;

    if (!ctx->cu.p_cuMemGetHandleForAddressRange) {
        snprintf(why, len, "the driver lacks cuMemGetHandleForAddressRange (CUDA 11.7 or newer has it); install a "
                 "driver for CUDA 13.3 or newer");
        return 0;
    }
    if (v < PSC__DMABUF_MIN_DRIVER) {
        snprintf(why, len, "the driver (CUDA %d.%d) is too old to map a dma-buf of GPU memory for the CPU: CUDA 13.3 "
                 "or newer does; install a newer NVIDIA driver", v / 1000, v % 1000 / 10);
        return 0;
    }
    if (ctx->cu.p_cuDeviceGetAttribute(&on, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, ctx->gpu[gpu].dev) !=
            CUDA_SUCCESS || !on) {
        snprintf(why, len, "GPU %d does not export dma-bufs (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0): NVIDIA's "
                 "open kernel modules on Linux 5.12 or newer do", gpu);
        return 0;
    }
    return 1;
}

psc_status_t psc__gpumap_dmabuf_map(psc_context_t *ctx, struct psc_gpumap *m, char *why, size_t len)
{
    char e[160];
    int fd = -1, coherent = 0, err;
    void *p;
    CUresult rc;

    if (!psc__gpumap_dmabuf_ready(ctx, m->gpu, why, len))
        return PSC_ERR_UNSUPPORTED;
    { /* whole host pages suffice here (not whole 64 KiB GPU pages): none past the allocation's last host page */
        size_t host = (size_t)sysconf(_SC_PAGESIZE);
        CUdeviceptr end = m->alloc_end ? (m->alloc_end + host - 1) & ~(CUdeviceptr)(host - 1) : m->start + m->len;

        m->dmabuf_len = end > m->start && end - m->start < m->len ? (size_t)(end - m->start) : m->len;
    }
    rc = ctx->cu.p_cuMemGetHandleForAddressRange(&fd, m->start, m->dmabuf_len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                                                 0);
    if (rc != CUDA_SUCCESS) {
        snprintf(why, len, "cuMemGetHandleForAddressRange of %zu bytes at 0x%llx failed: %s", m->dmabuf_len,
                 (unsigned long long)m->start, psc_cuda_error_text(&ctx->cu, rc, e, sizeof(e)));
        return rc == CUDA_ERROR_OUT_OF_MEMORY ? PSC_ERR_NO_MEMORY : PSC_ERR_UNSUPPORTED;
    }
    /* The driver's descriptor may lack close-on-exec (the export takes no flag for it): set here, so no later
       exec inherits it; a fork and exec in another thread between the export and this call still could. */
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
        err = errno;
        close(fd);
        snprintf(why, len, "fcntl(F_SETFD) of the dma-buf failed: %s", strerror(err));
        return PSC_ERR_IO;
    }
    p = mmap(NULL, m->dmabuf_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        err = errno;
        close(fd);
        snprintf(why, len, "the driver exported a dma-buf of the memory but refused to map it for the CPU: mmap "
                 "failed with %s; a driver for CUDA 13.3 or newer maps it", psc__gdr_errno_text(err, e, sizeof(e)));
        return err == ENOMEM || err == ENOSPC ? PSC_ERR_NO_MEMORY : PSC_ERR_UNSUPPORTED;
    }
    /* Coherent platforms map it cached, the others through BAR1, write-combined. */
    if (ctx->cu.p_cuDeviceGetAttribute(&coherent, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
                                       ctx->gpu[m->gpu].dev) != CUDA_SUCCESS)
        coherent = 0;
    m->fd = fd;
    m->base = p;
    m->wc = !coherent;
    return PSC_OK;
}

psc_status_t psc__gpumap_dmabuf_unmap(struct psc_gpumap *m, char *why, size_t len)
{
    psc_status_t st = PSC_OK;

    if (m->base && munmap(m->base, m->dmabuf_len) != 0) {
        snprintf(why, len, "munmap of the dma-buf mapping failed: %s", strerror(errno));
        st = PSC_ERR_IO;
    }
    if (m->fd >= 0)
        close(m->fd);
    m->fd = -1;
    m->base = NULL;
    return st;
}
