/*
 * GPU memory and events shared between processes: the exporter allocates
 * (cuMemAlloc for legacy IPC handles, cuMemCreate for VMM) and describes the
 * allocation in a psc_share_msg_t; the importer checks the message, opens or
 * imports the allocation and maps it for the GPUs it names, VMM access set
 * for exactly those. Every object is kept in its context's list so
 * psc_context_destroy releases what the application forgot.
 */
#include "share/share.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "share/share_msg.h"

struct psc_share {
    psc_context_t *ctx;
    struct psc_share *prev, *next;     /* ctx->shares */
    psc_share_kind_t kind;
    int gpu;                           /* where the memory or event is, as this process numbers GPUs */
    int imported;
    int opened_in;                     /* import: the GPU whose context opened the handle, and releases it */
    size_t size, alloc_size;
    CUdeviceptr ptr;
    CUmemGenericAllocationHandle vmm;  /* VMM: the allocation; 0 none */
    int reserved, mapped;              /* VMM: address range reserved, allocation mapped there */
    CUevent event;
    double import_ns, map_ns;          /* import: the driver's import or open, then the mapping (VMM) */
};

static const char *psc__share_kind_name(psc_share_kind_t k)
{
    return k == PSC_SHARE_LEGACY ? "legacy IPC" : k == PSC_SHARE_VMM_FD ? "VMM file descriptor"
         : k == PSC_SHARE_VMM_FABRIC ? "VMM fabric" : k == PSC_SHARE_EVENT ? "event" : "?";
}

static int psc__is_vmm(psc_share_kind_t k)
{
    return k == PSC_SHARE_VMM_FD || k == PSC_SHARE_VMM_FABRIC;
}

static CUmemAllocationHandleType psc__vmm_type(psc_share_kind_t k)
{
    return k == PSC_SHARE_VMM_FABRIC ? CU_MEM_HANDLE_TYPE_FABRIC : CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
}

static void psc__vmm_prop(const psc_context_t *ctx, int gpu, psc_share_kind_t k, CUmemAllocationProp *prop)
{
    memset(prop, 0, sizeof(*prop));
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = ctx->gpu[gpu].dev;
    prop->requestedHandleTypes = psc__vmm_type(k);
}

/* The driver has what the kind needs, and the GPU supports it: PSC_OK, or why not (recorded). */
static psc_status_t psc__share_supported(psc_context_t *ctx, psc_share_kind_t k, int gpu)
{
    int vmm = 0, handle = 0;

    if (k == PSC_SHARE_LEGACY || k == PSC_SHARE_EVENT) {
        if (!ctx->cu.p_cuIpcGetMemHandle || !ctx->cu.p_cuIpcOpenMemHandle || !ctx->cu.p_cuIpcCloseMemHandle ||
            !ctx->cu.p_cuIpcGetEventHandle || !ctx->cu.p_cuIpcOpenEventHandle)
            return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "%s sharing: the driver lacks the cuIpc* calls",
                             psc__share_kind_name(k));
        return PSC_OK;
    }
    if (!ctx->cu.p_cuMemCreate || !ctx->cu.p_cuMemMap || !ctx->cu.p_cuMemSetAccess || !ctx->cu.p_cuMemGetAccess ||
        !ctx->cu.p_cuMemExportToShareableHandle || !ctx->cu.p_cuMemImportFromShareableHandle ||
        !ctx->cu.p_cuMemAddressReserve || !ctx->cu.p_cuMemGetAllocationGranularity)
        return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "%s sharing: the driver lacks the VMM calls (accepted: CUDA 10.2 "
                         "or newer)", psc__share_kind_name(k));
    ctx->cu.p_cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, ctx->gpu[gpu].dev);
    ctx->cu.p_cuDeviceGetAttribute(&handle, k == PSC_SHARE_VMM_FABRIC ? CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED
                                                                        : CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                                   ctx->gpu[gpu].dev);
    if (!vmm)
        return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "%s sharing: GPU %d does not support virtual memory management",
                         psc__share_kind_name(k), gpu);
    if (!handle)
        return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "%s sharing: GPU %d cannot export %s (the device attribute says "
                         "no%s)", psc__share_kind_name(k), gpu,
                         k == PSC_SHARE_VMM_FABRIC ? "fabric handles" : "POSIX file descriptors",
                         k == PSC_SHARE_VMM_FABRIC ? "; fabric handles need an NVLink fabric or an IMEX channel" : "");
    return PSC_OK;
}

/* Reserve an address range for the VMM allocation, map it, and let exactly `gpus` read and write it. */
static psc_status_t psc__vmm_map(psc_context_t *ctx, struct psc_share *s, const int *gpus, int ngpu, size_t align)
{
    CUmemAccessDesc acc[PSC_MAX_GPUS];
    psc_status_t st;

    if ((st = PSC_CU(ctx, cuMemAddressReserve, (&s->ptr, s->alloc_size, align, 0, 0))) != PSC_OK)
        return st;
    s->reserved = 1;
    if ((st = PSC_CU(ctx, cuMemMap, (s->ptr, s->alloc_size, 0, s->vmm, 0))) != PSC_OK)
        return st;
    s->mapped = 1;
    for (int i = 0; i < ngpu; i++) {
        acc[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        acc[i].location.id = ctx->gpu[gpus[i]].dev;
        acc[i].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    }
    return PSC_CU(ctx, cuMemSetAccess, (s->ptr, s->alloc_size, acc, (size_t)ngpu));
}

/* Give back what the object holds, in reverse order (a GPU's context current). Keeps the first failure. */
static psc_status_t psc__share_release(psc_context_t *ctx, struct psc_share *s)
{
    /* An import is released where it was opened: the owner's GPU may have no context in this process yet, and
       making one (about 130 ms on H200) is no part of a release. */
    psc_status_t st = psc__gpu_use(ctx, s->imported ? s->opened_in : s->gpu), r;

    if (st != PSC_OK)
        return st;
    if (s->kind == PSC_SHARE_EVENT)
        return s->event ? PSC_CU(ctx, cuEventDestroy, (s->event)) : PSC_OK;
    if (s->kind == PSC_SHARE_LEGACY)
        return !s->ptr ? PSC_OK : s->imported ? PSC_CU(ctx, cuIpcCloseMemHandle, (s->ptr)) : PSC_CU(ctx, cuMemFree, (s->ptr));
    double t[4];

    t[0] = psc__now_ns();
    if (s->mapped && (r = PSC_CU(ctx, cuMemUnmap, (s->ptr, s->alloc_size))) != PSC_OK && st == PSC_OK)
        st = r;
    t[1] = psc__now_ns();
    if (s->reserved && (r = PSC_CU(ctx, cuMemAddressFree, (s->ptr, s->alloc_size))) != PSC_OK && st == PSC_OK)
        st = r;
    t[2] = psc__now_ns();
    if (s->vmm && (r = PSC_CU(ctx, cuMemRelease, (s->vmm))) != PSC_OK && st == PSC_OK)
        st = r;
    t[3] = psc__now_ns();
    psc__log(ctx, PSC_LOG_DEBUG, "share release (%s, %llu B): unmap %.1f us, address free %.1f us, release %.1f us",
             s->imported ? "imported" : "own", (unsigned long long)s->alloc_size, (t[1] - t[0]) / 1e3,
             (t[2] - t[1]) / 1e3, (t[3] - t[2]) / 1e3);
    return st;
}

static void psc__share_link(psc_context_t *ctx, struct psc_share *s)
{
    s->next = ctx->shares;
    if (ctx->shares)
        ctx->shares->prev = s;
    ctx->shares = s;
    psc__context_on_close(ctx, PSC__CLOSE_SHARES, psc__share_free_all);
}

/*
 * The end of a call that made s (inside the guard, entered by the caller):
 * on failure release what was made, keeping the first reason; on success
 * track it, and hand it over once the caller's context is back.
 */
static psc_status_t psc__share_hand_over(psc_context_t *ctx, struct psc_share *s, psc_status_t st, psc_share_t **out)
{
    if (st != PSC_OK) {
        char keep[sizeof(ctx->last_error)];

        memcpy(keep, ctx->last_error, sizeof(keep)); /* the cleanup's own failures must not hide why */
        psc__share_release(ctx, s);
        memcpy(ctx->last_error, keep, sizeof(keep));
        free(s);
        s = NULL;
    } else {
        psc__share_link(ctx, s);
    }
    st = psc__guard_leave(ctx, st);
    if (st != PSC_OK) {
        if (s)
            psc_share_free(s); /* made, but the caller's context could not be put back: not handed over */
        return st;
    }
    *out = s;
    return PSC_OK;
}

static psc_status_t psc__share_alloc(psc_context_t *ctx, struct psc_share *s)
{
    CUmemAllocationProp prop;
    size_t gran = 0;
    psc_status_t st;

    if ((st = psc__share_supported(ctx, s->kind, s->gpu)) != PSC_OK || (st = psc__gpu_use(ctx, s->gpu)) != PSC_OK)
        return st;
    if (s->kind == PSC_SHARE_EVENT)
        return PSC_CU(ctx, cuEventCreate, (&s->event, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    if (s->kind == PSC_SHARE_LEGACY)
        return PSC_CU(ctx, cuMemAlloc, (&s->ptr, s->size));
    psc__vmm_prop(ctx, s->gpu, s->kind, &prop);
    if ((st = PSC_CU(ctx, cuMemGetAllocationGranularity, (&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))) != PSC_OK)
        return st;
    if (gran == 0 || (gran & (gran - 1)))
        return psc__fail(ctx, PSC_ERR_DRIVER, "the driver gave an allocation granularity of %zu bytes", gran);
    s->alloc_size = (s->size + gran - 1) / gran * gran;
    {
        CUresult rc = ctx->cu.p_cuMemCreate(&s->vmm, s->alloc_size, &prop, 0);

        if (rc != CUDA_SUCCESS) {
            s->vmm = 0;
            if (s->kind == PSC_SHARE_VMM_FABRIC && (rc == CUDA_ERROR_NOT_PERMITTED || rc == CUDA_ERROR_NOT_SUPPORTED)) {
                char why[160];

                psc_cuda_error_text(&ctx->cu, rc, why, sizeof(why));
                return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "VMM fabric sharing is not supported here: cuMemCreate "
                                 "with a fabric handle: %s (fabric handles need an IMEX channel this process may "
                                 "open, /dev/nvidia-caps-imex-channels, or a multi-node NVLink fabric)", why);
            }
            return psc__cu_result(ctx, rc, "cuMemCreate");
        }
    }
    return psc__vmm_map(ctx, s, &s->gpu, 1, gran);
}

static psc_status_t psc__share_new(psc_context_t *ctx, psc_share_kind_t kind, int gpu, size_t size, psc_share_t **out)
{
    struct psc_share *s;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_share: no place for the result (accepted: a psc_share_t *)");
    if (!psc__valid_gpu(ctx, gpu))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_share: GPU %d does not exist (accepted: 0..%d)", gpu, ctx->ndev - 1);
    if (!(s = calloc(1, sizeof(*s))))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "psc_share: out of host memory");
    *s = (struct psc_share){.ctx = ctx, .kind = kind, .gpu = gpu, .size = size, .alloc_size = size, .opened_in = gpu};
    psc__guard_enter(ctx);
    return psc__share_hand_over(ctx, s, psc__share_alloc(ctx, s), out);
}

psc_status_t psc_share_alloc(psc_context_t *ctx, psc_share_kind_t kind, int gpu, size_t size, psc_share_t **out)
{
    if (!ctx)
        return PSC_ERR_INVALID;
    if (kind != PSC_SHARE_LEGACY && !psc__is_vmm(kind))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_share_alloc: kind %d (accepted: PSC_SHARE_LEGACY, "
                         "PSC_SHARE_VMM_FD, PSC_SHARE_VMM_FABRIC; events come from psc_share_event_create)", (int)kind);
    if (size == 0 || size > PSC_SHARE_MAX_BYTES)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_share_alloc: size %zu bytes out of range (accepted: 1 B to 1 TiB)",
                         size);
    return psc__share_new(ctx, kind, gpu, size, out);
}

psc_status_t psc_share_event_create(psc_context_t *ctx, int gpu, psc_share_t **out)
{
    return psc__share_new(ctx, PSC_SHARE_EVENT, gpu, 0, out);
}

/* ---------------------------------------------------------------- export */

static psc_status_t psc__share_export(psc_context_t *ctx, const struct psc_share *s, psc_share_hdr_t *h, int *fd)
{
    psc_status_t st;

    if ((st = psc__gpu_use(ctx, s->gpu)) != PSC_OK)
        return st;
    switch (s->kind) {
    case PSC_SHARE_LEGACY: {
        CUipcMemHandle mh;

        if ((st = PSC_CU(ctx, cuIpcGetMemHandle, (&mh, s->ptr))) == PSC_OK)
            memcpy(h->handle, &mh, sizeof(mh));
        return st;
    }
    case PSC_SHARE_EVENT: {
        CUipcEventHandle eh;

        if ((st = PSC_CU(ctx, cuIpcGetEventHandle, (&eh, s->event))) == PSC_OK)
            memcpy(h->handle, &eh, sizeof(eh));
        return st;
    }
    case PSC_SHARE_VMM_FABRIC: {
        CUmemFabricHandle fh;

        if ((st = PSC_CU(ctx, cuMemExportToShareableHandle, (&fh, s->vmm, CU_MEM_HANDLE_TYPE_FABRIC, 0))) == PSC_OK)
            memcpy(h->handle, &fh, sizeof(fh));
        return st;
    }
    default:
        if ((st = PSC_CU(ctx, cuMemExportToShareableHandle, (fd, s->vmm, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0))) ==
                PSC_OK &&
            *fd < 0)
            st = psc__fail(ctx, PSC_ERR_DRIVER, "cuMemExportToShareableHandle gave file descriptor %d", *fd);
        return st;
    }
}

psc_status_t psc_share_export(psc_context_t *ctx, const psc_share_t *s, psc_share_msg_t *msg)
{
    psc_share_hdr_t h;
    psc_status_t st;
    int fd = -1;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!s || !msg || s->ctx != ctx)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_share_export: %s (accepted: a psc_share_t of this context and a "
                         "psc_share_msg_t)", !s ? "no object" : !msg ? "no message" : "an object of another context");
    if (s->imported)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_share_export: this %s was imported; only the process that made "
                         "it exports it", psc__share_kind_name(s->kind));
    if (!ctx->info[s->gpu].uuid[0])
        return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "psc_share_export: the driver gives GPU %d no UUID (cuDeviceGetUuid), "
                         "which the importer needs to find it", s->gpu);
    memset(&h, 0, sizeof(h));
    h.kind = s->kind;
    h.size = s->size;
    h.alloc_size = s->alloc_size;
    h.pid = (uint32_t)getpid();
    snprintf(h.uuid, sizeof(h.uuid), "%s", ctx->info[s->gpu].uuid);
    psc__guard_enter(ctx);
    st = psc__guard_leave(ctx, psc__share_export(ctx, s, &h, &fd));
    if (st != PSC_OK) {
        if (fd >= 0)
            close(fd);
        return st;
    }
    psc__share_msg_encode(&h, msg->bytes);
    msg->fd = fd;
    return PSC_OK;
}

/* ---------------------------------------------------------------- import */

static int psc__gpu_by_uuid(const psc_context_t *ctx, const char *uuid)
{
    for (int i = 0; i < ctx->ndev; i++)
        if (ctx->info[i].uuid[0] && strcmp(ctx->info[i].uuid, uuid) == 0)
            return i;
    return -1;
}

static psc_status_t psc__share_import(psc_context_t *ctx, const psc_share_hdr_t *h, int fd, const int *gpus, int ngpu,
                                      struct psc_share *s)
{
    CUmemAllocationProp prop;
    size_t gran = 0;
    double t0;
    psc_status_t st;

    if ((st = psc__share_supported(ctx, h->kind, s->gpu)) != PSC_OK || (st = psc__gpu_use(ctx, gpus[0])) != PSC_OK)
        return st;
    if (h->kind == PSC_SHARE_EVENT) {
        CUipcEventHandle eh;

        memcpy(&eh, h->handle, sizeof(eh));
        return PSC_CU(ctx, cuIpcOpenEventHandle, (&s->event, eh));
    }
    t0 = psc__now_ns();
    if (h->kind == PSC_SHARE_LEGACY) {
        CUipcMemHandle mh;

        memcpy(&mh, h->handle, sizeof(mh));
        st = PSC_CU(ctx, cuIpcOpenMemHandle, (&s->ptr, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        s->import_ns = psc__now_ns() - t0;
        return st;
    }
    if (h->kind == PSC_SHARE_VMM_FABRIC) {
        CUmemFabricHandle fh;

        memcpy(&fh, h->handle, sizeof(fh));
        st = PSC_CU(ctx, cuMemImportFromShareableHandle, (&s->vmm, &fh, CU_MEM_HANDLE_TYPE_FABRIC));
    } else {
        st = PSC_CU(ctx, cuMemImportFromShareableHandle, (&s->vmm, (void *)(uintptr_t)fd,
                                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    }
    if (st != PSC_OK) {
        s->vmm = 0;
        return st;
    }
    s->import_ns = psc__now_ns() - t0;
    t0 = psc__now_ns();
    psc__vmm_prop(ctx, s->gpu, h->kind, &prop);
    if ((st = PSC_CU(ctx, cuMemGetAllocationGranularity, (&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM))) != PSC_OK)
        return st;
    if (gran == 0 || h->alloc_size % gran)
        return psc__fail(ctx, PSC_ERR_INVALID, "shared-memory message: %llu bytes allocated is not a multiple of the "
                         "allocation granularity (%zu B)", (unsigned long long)h->alloc_size, gran);
    st = psc__vmm_map(ctx, s, gpus, ngpu, gran);
    s->map_ns = psc__now_ns() - t0;
    return st;
}

/* The GPUs to map for: distinct GPUs of this context; legacy memory and events in one context only. */
static psc_status_t psc__import_gpus(psc_context_t *ctx, psc_share_kind_t kind, int owner, const int *gpus, int ngpu,
                                     int *out, int *n)
{
    if (!gpus || ngpu == 0) {
        out[0] = owner;
        *n = 1;
        return PSC_OK;
    }
    if (ngpu < 0 || ngpu > ctx->ndev)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_share_import: %d GPUs (accepted: 0 to %d)", ngpu, ctx->ndev);
    if (ngpu > 1 && !psc__is_vmm(kind))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_share_import: %s is opened in one GPU's context (accepted: 1 GPU, "
                         "or 0 for the exporting one)", psc__share_kind_name(kind));
    for (int i = 0; i < ngpu; i++) {
        if (!psc__valid_gpu(ctx, gpus[i]))
            return psc__fail(ctx, PSC_ERR_INVALID, "psc_share_import: GPU %d does not exist (accepted: 0..%d)", gpus[i],
                             ctx->ndev - 1);
        for (int j = 0; j < i; j++)
            if (gpus[j] == gpus[i])
                return psc__fail(ctx, PSC_ERR_INVALID, "psc_share_import: GPU %d is listed twice", gpus[i]);
        out[i] = gpus[i];
    }
    *n = ngpu;
    return PSC_OK;
}

psc_status_t psc_share_import(psc_context_t *ctx, const psc_share_msg_t *msg, const int *gpus, int ngpu,
                              psc_share_t **out)
{
    int list[PSC_MAX_GPUS], n = 0;
    struct psc_share *s;
    psc_share_hdr_t h;
    char why[256];
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!msg || !out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_share_import: no %s (accepted: a psc_share_msg_t and a place for "
                         "the psc_share_t)", !msg ? "message" : "place for the result");
    if (psc__share_msg_decode(msg->bytes, msg->fd, &h, why, sizeof(why)) != PSC_OK)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s", why);
    if (h.pid == (uint32_t)getpid() && (h.kind == PSC_SHARE_LEGACY || h.kind == PSC_SHARE_EVENT))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_share_import: the %s was exported by this process; the driver "
                         "opens %s handles of other processes only (use the memory itself here)",
                         psc__share_kind_name(h.kind), psc__share_kind_name(h.kind));
    {
        int owner = psc__gpu_by_uuid(ctx, h.uuid);

        if (owner < 0)
            return psc__fail(ctx, PSC_ERR_INVALID, "psc_share_import: the %s is on GPU %s, which this process does not "
                             "see (CUDA_VISIBLE_DEVICES?)", psc__share_kind_name(h.kind), h.uuid);
        if ((st = psc__import_gpus(ctx, h.kind, owner, gpus, ngpu, list, &n)) != PSC_OK)
            return st;
        if (!(s = calloc(1, sizeof(*s))))
            return psc__fail(ctx, PSC_ERR_NO_MEMORY, "psc_share_import: out of host memory");
        *s = (struct psc_share){.ctx = ctx, .kind = h.kind, .gpu = owner, .imported = 1, .opened_in = list[0],
                                .size = (size_t)h.size, .alloc_size = (size_t)h.alloc_size};
    }
    psc__guard_enter(ctx);
    return psc__share_hand_over(ctx, s, psc__share_import(ctx, &h, msg->fd, list, n, s), out);
}

/* ---------------------------------------------------------------- what it is, who may touch it */

void psc__share_times(const psc_share_t *s, double *import_us, double *map_us)
{
    *import_us = s ? s->import_ns / 1e3 : 0;
    *map_us = s ? s->map_ns / 1e3 : 0;
}

psc_share_kind_t psc_share_kind(const psc_share_t *s) { return s ? s->kind : (psc_share_kind_t)0; }
void *psc_share_ptr(const psc_share_t *s) { return s && s->kind != PSC_SHARE_EVENT ? (void *)(uintptr_t)s->ptr : NULL; }
size_t psc_share_size(const psc_share_t *s) { return s ? s->size : 0; }
int psc_share_gpu(const psc_share_t *s) { return s ? s->gpu : -1; }
struct CUevent_st *psc_share_event(const psc_share_t *s) { return s && s->kind == PSC_SHARE_EVENT ? s->event : NULL; }

static psc_status_t psc__share_access(psc_context_t *ctx, const struct psc_share *s, int gpu, unsigned *access)
{
    psc_status_t st;

    if (psc__is_vmm(s->kind)) {
        CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, ctx->gpu[gpu].dev};
        unsigned long long flags = 0;

        if ((st = PSC_CU(ctx, cuMemGetAccess, (&flags, &loc, s->ptr))) == PSC_OK)
            *access = flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? PSC_ACCESS_READWRITE
                    : flags == CU_MEM_ACCESS_FLAGS_PROT_READ      ? PSC_ACCESS_READ
                                                                  : PSC_ACCESS_NONE;
        return st;
    }
    if ((st = psc__gpu_use(ctx, gpu)) != PSC_OK)
        return st;
    {
        CUpointer_attribute at = CU_POINTER_ATTRIBUTE_ACCESS_FLAGS;
        uint64_t v = 0;
        void *data = &v;
        unsigned flags = 0;

        if (!ctx->cu.p_cuPointerGetAttributes)
            return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "psc_share_access: the driver lacks cuPointerGetAttributes");
        if ((st = PSC_CU(ctx, cuPointerGetAttributes, (1, &at, &data, s->ptr))) != PSC_OK)
            return st;
        memcpy(&flags, &v, sizeof(flags));
        *access = flags == CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE ? PSC_ACCESS_READWRITE
                : flags == CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ      ? PSC_ACCESS_READ
                                                                      : PSC_ACCESS_NONE;
        return PSC_OK;
    }
}

psc_status_t psc_share_access(psc_context_t *ctx, const psc_share_t *s, int gpu, unsigned *access)
{
    unsigned a = PSC_ACCESS_NONE;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!s || !access || s->ctx != ctx || s->kind == PSC_SHARE_EVENT)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_share_access: accepted shared memory of this context and a place "
                         "for the answer");
    if (!psc__valid_gpu(ctx, gpu))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_share_access: GPU %d does not exist (accepted: 0..%d)", gpu,
                         ctx->ndev - 1);
    psc__guard_enter(ctx);
    st = psc__guard_leave(ctx, psc__share_access(ctx, s, gpu, &a));
    if (st == PSC_OK)
        *access = a;
    return st;
}

/* ---------------------------------------------------------------- free */

static void psc__share_unlink(psc_context_t *ctx, struct psc_share *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else if (ctx->shares == s)
        ctx->shares = s->next;
    if (s->next)
        s->next->prev = s->prev;
}

psc_status_t psc_share_free(psc_share_t *s)
{
    psc_context_t *ctx;
    psc_status_t st;

    if (!s)
        return PSC_OK;
    ctx = s->ctx;
    psc__share_unlink(ctx, s);
    psc__guard_enter(ctx);
    st = psc__guard_leave(ctx, psc__share_release(ctx, s));
    free(s);
    return st;
}

void psc__share_free_all(psc_context_t *ctx)
{
    while (ctx->shares)
        psc_share_free(ctx->shares);
}
